//! MPI-IO (issue 36): files, views, seeks and data access in every form,
//! as C entry points.
//!
//! A file is registered like a communicator, in the same id space:
//! `File_open` is recorded as a constructor over its communicator's group
//! ([`trace::Event::create`], `new` the file), and every later call on the
//! file names it in [`trace::Event::comm`]. A data access records its data
//! as a transfer to no peer (`send` for a write, `recv` for a read) and
//! where it starts ([`Io::Access`]): the explicit offset of the `_at`
//! forms, the individual file pointer's position (asked of MPI before the
//! call) for the others, and [`Io::SHARED`] for the shared file pointer,
//! whose position other ranks' accesses decide.
//!
//! What the record leaves out:
//! - the path: `File_open` and `File_delete` keep a hash of it
//!   ([`Io::path_hash`]), which says which opens name one file, and the
//!   path itself only in the trace file's path table, where the run asks
//!   for it (`RANKSCALE_IO_PATHS=1`);
//! - the view's datatypes beyond their sizes and the filetype's extent;
//! - the data representation and the info hints.
//!
//! The Fortran entry points (`ffi/fortran/io.rs`) share the fill functions.

// The entry points have the MPI bindings' names and argument lists.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use mpi_helpers::{amode_to_trace, whence_to_trace};
use mpi_sys::*;
use trace::{Event, Io, Op, Transfer};

use super::{Count, Key, bind_made_over, consts, dsize, dtype, handle_info, take_group_map};
use crate::return_address;
use crate::tracer::{CommInfo, Kind, Scope, Tracer};

/// An `MPI_Aint` in the event model's 64 bits (see `onesided::wide`).
#[allow(clippy::unnecessary_cast)]
fn wide(a: MPI_Aint) -> i64 {
    a as i64
}

/// The tracer's view of a file handle: registered at `File_open`, or on
/// first use for a file opened before tracing started (from its group).
fn file(t: &Tracer, f: MPI_File) -> Arc<CommInfo> {
    handle_info(t, f.key(), Kind::File, || {
        let mut me: c_int = -1;
        // SAFETY: `f` is a file the application passed to an MPI call that
        // accepted it; the group MPI returns is freed by `take_group_map`.
        let group = unsafe {
            let mut group = RSMPI_GROUP_NULL;
            PMPI_File_get_group(f, &mut group);
            PMPI_Group_rank(group, &mut me);
            group
        };
        (take_group_map(group), me)
    })
}

/// The etype bytes of each open file's view, by file key: what a data
/// access records beside its offset ([`Io::Access`]). A file opened before
/// tracing, or with the default view, has 1.
fn etypes() -> &'static Mutex<HashMap<usize, i64>> {
    static ETYPES: OnceLock<Mutex<HashMap<usize, i64>>> = OnceLock::new();
    ETYPES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The etype bytes of the file `key`'s view.
fn etype_of(key: usize) -> i64 {
    etypes()
        .lock()
        .ok()
        .and_then(|m| m.get(&key).copied())
        .unwrap_or(1)
}

/// Sets (`Some`) or forgets (`None`) the etype bytes of the file `key`.
fn set_etype(key: usize, bytes: Option<i64>) {
    if let Ok(mut m) = etypes().lock() {
        match bytes {
            Some(b) => m.insert(key, b),
            None => m.remove(&key),
        };
    }
}

/// A path argument of `File_open` or `File_delete`, while the call lasts:
/// the hash the event records, and the bytes for the path table of a run
/// that keeps its paths (`RANKSCALE_IO_PATHS=1`).
pub(crate) struct PathArg<'a> {
    /// FNV-1a of the path ([`Io::path_hash`]); 0 for a null pointer
    /// (which MPI would refuse).
    hash: u64,
    /// The path, without a C terminator or Fortran's padding blanks.
    bytes: &'a [u8],
}

impl<'a> PathArg<'a> {
    /// The path `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> PathArg<'a> {
        PathArg {
            hash: Io::path_hash(bytes),
            bytes,
        }
    }

    /// A null path (which MPI would refuse): hash 0.
    pub(crate) const NULL: PathArg<'static> = PathArg {
        hash: 0,
        bytes: &[],
    };

    /// The hash to record, noting the path where the run keeps paths.
    pub(crate) fn recorded(&self, t: &Tracer) -> u64 {
        if t.config.io_paths && self.hash != 0 {
            crate::paths::note(self.hash, self.bytes);
        }
        self.hash
    }
}

/// A C path argument.
///
/// # Safety
/// `path` must be null or a NUL-terminated string, as `File_open` and
/// `File_delete` require, that outlives the returned value (the call).
unsafe fn path_arg<'a>(path: *const c_char) -> PathArg<'a> {
    if path.is_null() {
        return PathArg::NULL;
    }
    // SAFETY: guaranteed by the caller.
    PathArg::new(unsafe { CStr::from_ptr(path) }.to_bytes())
}

/// Fills `File_open`: the communicator, the new file's id and size
/// (`create`), the access mode and the path's hash. `f` is the handle MPI
/// wrote.
pub(crate) fn fill_open(
    t: &Tracer,
    ev: &mut Event,
    comm_h: MPI_Comm,
    amode: c_int,
    path: &PathArg,
    f: MPI_File,
) {
    bind_made_over(t, ev, comm_h, f.key(), Kind::File);
    set_etype(f.key(), None);
    ev.io = Some(Box::new(Io::Open {
        amode: amode_to_trace(amode),
        path: path.recorded(t),
    }));
}

/// Fills `File_close` (the file's key read before the call, which nulls
/// the handle) and forgets the file.
pub(crate) fn fill_close(t: &Tracer, ev: &mut Event, key: usize) {
    if let Some(info) = t.comm(key) {
        ev.comm = info.id;
    }
    ev.io = Some(Box::new(Io::Handle));
    t.remove_comm(key);
    set_etype(key, None);
}

/// Fills a call on the file with nothing more to record (`File_sync`, a
/// split collective's `_end`).
pub(crate) fn fill_handle(t: &Tracer, ev: &mut Event, f: MPI_File) {
    ev.comm = file(t, f).id;
    ev.io = Some(Box::new(Io::Handle));
}

/// Fills `File_set_view`: the displacement, the etype's size and the
/// filetype's size, lower bound and extent.
pub(crate) fn fill_view(
    t: &Tracer,
    ev: &mut Event,
    f: MPI_File,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
) {
    ev.comm = file(t, f).id;
    let (mut lb, mut extent): (MPI_Aint, MPI_Aint) = (0, 0);
    // SAFETY: `filetype` is the datatype MPI accepted for the view; the
    // call writes only its two out-parameters.
    unsafe { PMPI_Type_get_extent(filetype, &mut lb, &mut extent) };
    let bytes = dsize(etype);
    set_etype(f.key(), Some(bytes));
    ev.io = Some(Box::new(Io::View {
        disp,
        etype: bytes,
        filetype: dsize(filetype),
        lb: wide(lb),
        extent: wide(extent),
    }));
}

/// Fills `File_seek` and `File_seek_shared` (an offset and whence), and
/// `File_set_size` and `File_preallocate` (a size, whence 0).
pub(crate) fn fill_seek(t: &Tracer, ev: &mut Event, f: MPI_File, offset: MPI_Offset, whence: i32) {
    ev.comm = file(t, f).id;
    ev.io = Some(Box::new(Io::Seek { offset, whence }));
}

/// The individual file pointer's position, in etypes, before a data
/// access through it; 0 where MPI refuses to say (a file it would refuse
/// the access on too) or says less than 0: MPICH 4.0.2 reports -1 at the
/// start of a view whose filetype has a positive lower bound
/// (`io/resized`), where the access goes to the view's first byte.
///
/// # Safety
/// `f` must be the file handle the application passes to the access.
pub(crate) unsafe fn position(f: MPI_File) -> i64 {
    let mut off: MPI_Offset = 0;
    // SAFETY: guaranteed by the caller; writes only the out-parameter.
    if unsafe { PMPI_File_get_position(f, &mut off) } != 0 {
        return 0;
    }
    off.max(0)
}

/// Fills a data access: the data as a transfer to no peer (`send` for a
/// write, `recv` for a read), where the access starts (an offset in etypes
/// or [`Io::SHARED`]) and the request of the nonblocking forms (`request`
/// is what MPI wrote).
pub(crate) fn fill_access<C: Count>(
    t: &Tracer,
    ev: &mut Event,
    f: MPI_File,
    offset: i64,
    data: (C, MPI_Datatype),
    write: bool,
    request: Option<MPI_Request>,
) {
    let info = file(t, f);
    ev.comm = info.id;
    let x = Transfer::collective(data.0.wide(), dsize(data.1)).typed(dtype(data.1));
    if write {
        ev.send = Some(x);
    } else {
        ev.recv = Some(x);
    }
    ev.io = Some(Box::new(Io::Access {
        offset,
        etype: etype_of(f.key()),
    }));
    if let Some(r) = request.filter(|r| r.key() != consts().request_null) {
        ev.req = Some(t.add_req(r.key(), false, false, info));
    }
}

// ------------------------------------------------------------ C entries

/// The count type of the `int` bindings (see `with_large_twin!` in
/// `ffi/mod.rs`).
type Cnt = c_int;

entry!(MPI_File_open, PMPI_File_open, (comm_h: MPI_Comm, filename: *const c_char, amode: c_int, info: MPI_Info, fh: *mut MPI_File), |s| {
    let path = path_arg(filename);
    let rc = PMPI_File_open(comm_h, filename, amode, info, fh);
    s.record(Op::FileOpen, rc, |t, ev| fill_open(t, ev, comm_h, amode, &path, *fh));
    rc
});

entry!(MPI_File_close, PMPI_File_close, (fh: *mut MPI_File), |s| {
    let key = (*fh).key();
    let rc = PMPI_File_close(fh);
    s.record(Op::FileClose, rc, |t, ev| fill_close(t, ev, key));
    rc
});

entry!(MPI_File_delete, PMPI_File_delete, (filename: *const c_char, info: MPI_Info), |s| {
    let path = path_arg(filename);
    let rc = PMPI_File_delete(filename, info);
    // The path's hash as the call's value: the call names no open file.
    s.record(Op::FileDelete, rc, |t, ev| ev.value = Some(path.recorded(t) as i64));
    rc
});

entry!(MPI_File_sync, PMPI_File_sync, (fh: MPI_File), |s| {
    let rc = PMPI_File_sync(fh);
    s.record(Op::FileSync, rc, |t, ev| fill_handle(t, ev, fh));
    rc
});

entry!(MPI_File_set_view, PMPI_File_set_view, (fh: MPI_File, disp: MPI_Offset, etype: MPI_Datatype, filetype: MPI_Datatype, datarep: *const c_char, info: MPI_Info), |s| {
    let rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    s.record(Op::FileSetView, rc, |t, ev| fill_view(t, ev, fh, disp, etype, filetype));
    rc
});

/// `File_set_size` and `File_preallocate`: a size.
macro_rules! file_size {
    ($name:ident, $pmpi:ident, $op:expr) => {
        entry!($name, $pmpi, (fh: MPI_File, size: MPI_Offset), |s| {
            let rc = $pmpi(fh, size);
            s.record($op, rc, |t, ev| fill_seek(t, ev, fh, size, Io::SEEK_SET));
            rc
        });
    };
}
file_size!(MPI_File_set_size, PMPI_File_set_size, Op::FileSetSize);
file_size!(
    MPI_File_preallocate,
    PMPI_File_preallocate,
    Op::FilePreallocate
);

/// `File_seek` and `File_seek_shared`: an offset and whence.
macro_rules! file_seek {
    ($name:ident, $pmpi:ident, $op:expr) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, whence: c_int), |s| {
            let rc = $pmpi(fh, offset, whence);
            s.record($op, rc, |t, ev| fill_seek(t, ev, fh, offset, whence_to_trace(whence)));
            rc
        });
    };
}
file_seek!(MPI_File_seek, PMPI_File_seek, Op::FileSeek);
file_seek!(
    MPI_File_seek_shared,
    PMPI_File_seek_shared,
    Op::FileSeekShared
);

/// The data accesses. `at`: an explicit offset; `ptr`: the individual
/// file pointer (its position asked before the call); `shared`: the shared
/// file pointer. `read`/`write` with a status, `begin` without (a split
/// collective's first half), `iread`/`iwrite` with a request.
macro_rules! access {
    ($name:ident, $pmpi:ident ; $op:expr, at, read) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Cnt, dt: MPI_Datatype, status: *mut MPI_Status), |s| {
            let rc = $pmpi(fh, offset, buf, count, dt, status);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), false, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, at, write) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Cnt, dt: MPI_Datatype, status: *mut MPI_Status), |s| {
            let rc = $pmpi(fh, offset, buf, count, dt, status);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), true, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, at, begin_read) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Cnt, dt: MPI_Datatype), |s| {
            let rc = $pmpi(fh, offset, buf, count, dt);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), false, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, at, begin_write) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Cnt, dt: MPI_Datatype), |s| {
            let rc = $pmpi(fh, offset, buf, count, dt);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), true, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, at, iread) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Cnt, dt: MPI_Datatype, request: *mut MPI_Request), |s| {
            let rc = $pmpi(fh, offset, buf, count, dt, request);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), false, Some(*request)));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, at, iwrite) => {
        entry!($name, $pmpi, (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Cnt, dt: MPI_Datatype, request: *mut MPI_Request), |s| {
            let rc = $pmpi(fh, offset, buf, count, dt, request);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), true, Some(*request)));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, $at:ident, read) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: *mut c_void, count: Cnt, dt: MPI_Datatype, status: *mut MPI_Status), |s| {
            let offset = access!(@offset $at, fh);
            let rc = $pmpi(fh, buf, count, dt, status);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), false, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, $at:ident, write) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: *const c_void, count: Cnt, dt: MPI_Datatype, status: *mut MPI_Status), |s| {
            let offset = access!(@offset $at, fh);
            let rc = $pmpi(fh, buf, count, dt, status);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), true, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, $at:ident, begin_read) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: *mut c_void, count: Cnt, dt: MPI_Datatype), |s| {
            let offset = access!(@offset $at, fh);
            let rc = $pmpi(fh, buf, count, dt);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), false, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, $at:ident, begin_write) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: *const c_void, count: Cnt, dt: MPI_Datatype), |s| {
            let offset = access!(@offset $at, fh);
            let rc = $pmpi(fh, buf, count, dt);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), true, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, $at:ident, iread) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: *mut c_void, count: Cnt, dt: MPI_Datatype, request: *mut MPI_Request), |s| {
            let offset = access!(@offset $at, fh);
            let rc = $pmpi(fh, buf, count, dt, request);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), false, Some(*request)));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, $at:ident, iwrite) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: *const c_void, count: Cnt, dt: MPI_Datatype, request: *mut MPI_Request), |s| {
            let offset = access!(@offset $at, fh);
            let rc = $pmpi(fh, buf, count, dt, request);
            s.record($op, rc, |t, ev| fill_access(t, ev, fh, offset, (count, dt), true, Some(*request)));
            rc
        });
    };
    (@offset ptr, $fh:ident) => { position($fh) };
    (@offset shared, $fh:ident) => { Io::SHARED };
}

with_large_twin!(access! { MPI_File_read_at, PMPI_File_read_at ; Op::FileReadAt, at, read });
with_large_twin!(access! { MPI_File_write_at, PMPI_File_write_at ; Op::FileWriteAt, at, write });
with_large_twin!(
    access! { MPI_File_read_at_all, PMPI_File_read_at_all ; Op::FileReadAtAll, at, read }
);
with_large_twin!(
    access! { MPI_File_write_at_all, PMPI_File_write_at_all ; Op::FileWriteAtAll, at, write }
);
with_large_twin!(
    access! { MPI_File_read_at_all_begin, PMPI_File_read_at_all_begin ; Op::FileReadAtAllBegin, at, begin_read }
);
with_large_twin!(
    access! { MPI_File_write_at_all_begin, PMPI_File_write_at_all_begin ; Op::FileWriteAtAllBegin, at, begin_write }
);
with_large_twin!(access! { MPI_File_iread_at, PMPI_File_iread_at ; Op::FileIreadAt, at, iread });
with_large_twin!(
    access! { MPI_File_iwrite_at, PMPI_File_iwrite_at ; Op::FileIwriteAt, at, iwrite }
);
with_large_twin!(
    access! { MPI_File_iread_at_all, PMPI_File_iread_at_all ; Op::FileIreadAtAll, at, iread }
);
with_large_twin!(
    access! { MPI_File_iwrite_at_all, PMPI_File_iwrite_at_all ; Op::FileIwriteAtAll, at, iwrite }
);

with_large_twin!(access! { MPI_File_read, PMPI_File_read ; Op::FileRead, ptr, read });
with_large_twin!(access! { MPI_File_write, PMPI_File_write ; Op::FileWrite, ptr, write });
with_large_twin!(access! { MPI_File_read_all, PMPI_File_read_all ; Op::FileReadAll, ptr, read });
with_large_twin!(
    access! { MPI_File_write_all, PMPI_File_write_all ; Op::FileWriteAll, ptr, write }
);
with_large_twin!(
    access! { MPI_File_read_all_begin, PMPI_File_read_all_begin ; Op::FileReadAllBegin, ptr, begin_read }
);
with_large_twin!(
    access! { MPI_File_write_all_begin, PMPI_File_write_all_begin ; Op::FileWriteAllBegin, ptr, begin_write }
);
with_large_twin!(access! { MPI_File_iread, PMPI_File_iread ; Op::FileIread, ptr, iread });
with_large_twin!(access! { MPI_File_iwrite, PMPI_File_iwrite ; Op::FileIwrite, ptr, iwrite });
with_large_twin!(
    access! { MPI_File_iread_all, PMPI_File_iread_all ; Op::FileIreadAll, ptr, iread }
);
with_large_twin!(
    access! { MPI_File_iwrite_all, PMPI_File_iwrite_all ; Op::FileIwriteAll, ptr, iwrite }
);

with_large_twin!(
    access! { MPI_File_read_shared, PMPI_File_read_shared ; Op::FileReadShared, shared, read }
);
with_large_twin!(
    access! { MPI_File_write_shared, PMPI_File_write_shared ; Op::FileWriteShared, shared, write }
);
with_large_twin!(
    access! { MPI_File_read_ordered, PMPI_File_read_ordered ; Op::FileReadOrdered, shared, read }
);
with_large_twin!(
    access! { MPI_File_write_ordered, PMPI_File_write_ordered ; Op::FileWriteOrdered, shared, write }
);
with_large_twin!(
    access! { MPI_File_read_ordered_begin, PMPI_File_read_ordered_begin ; Op::FileReadOrderedBegin, shared, begin_read }
);
with_large_twin!(
    access! { MPI_File_write_ordered_begin, PMPI_File_write_ordered_begin ; Op::FileWriteOrderedBegin, shared, begin_write }
);
with_large_twin!(
    access! { MPI_File_iread_shared, PMPI_File_iread_shared ; Op::FileIreadShared, shared, iread }
);
with_large_twin!(
    access! { MPI_File_iwrite_shared, PMPI_File_iwrite_shared ; Op::FileIwriteShared, shared, iwrite }
);

/// A split collective's `_end`: the buffer and a status; the data was
/// recorded at its `_begin`.
macro_rules! access_end {
    ($name:ident, $pmpi:ident, $op:expr, $buf:ty) => {
        entry!($name, $pmpi, (fh: MPI_File, buf: $buf, status: *mut MPI_Status), |s| {
            let rc = $pmpi(fh, buf, status);
            s.record($op, rc, |t, ev| fill_handle(t, ev, fh));
            rc
        });
    };
}
access_end!(
    MPI_File_read_all_end,
    PMPI_File_read_all_end,
    Op::FileReadAllEnd,
    *mut c_void
);
access_end!(
    MPI_File_write_all_end,
    PMPI_File_write_all_end,
    Op::FileWriteAllEnd,
    *const c_void
);
access_end!(
    MPI_File_read_at_all_end,
    PMPI_File_read_at_all_end,
    Op::FileReadAtAllEnd,
    *mut c_void
);
access_end!(
    MPI_File_write_at_all_end,
    PMPI_File_write_at_all_end,
    Op::FileWriteAtAllEnd,
    *const c_void
);
access_end!(
    MPI_File_read_ordered_end,
    PMPI_File_read_ordered_end,
    Op::FileReadOrderedEnd,
    *mut c_void
);
access_end!(
    MPI_File_write_ordered_end,
    PMPI_File_write_ordered_end,
    Op::FileWriteOrderedEnd,
    *const c_void
);
