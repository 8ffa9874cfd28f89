//! Fortran entry points of the MPI-IO calls (issue 36). They share the C
//! wrappers' fill functions ([`crate::ffi::io`]); file handles are
//! converted with `MPI_File_f2c`, `INTEGER(KIND=MPI_OFFSET_KIND)` arguments
//! read as 64-bit integers, and a path (`CHARACTER(LEN=*)`, with its hidden
//! length) hashed without its trailing blanks, as Fortran pads it.

use super::*;
use crate::ffi::io::{
    PathArg, fill_access, fill_close, fill_handle, fill_open, fill_seek, fill_view, position,
};
use mpi_helpers::whence_to_trace;
use trace::Io;

/// A Fortran file handle argument (`MPI_File_f2c`).
///
/// # Safety
/// `p` must point to an INTEGER handle.
unsafe fn f_file(p: P) -> MPI_File {
    // SAFETY: guaranteed by the caller; MPI_File_f2c accepts any value.
    unsafe { RSMPI_File_f2c(int(p)) }
}

/// An `INTEGER(KIND=MPI_OFFSET_KIND)` argument.
///
/// # Safety
/// `p` must point to a 64-bit INTEGER.
unsafe fn offset(p: P) -> i64 {
    // SAFETY: guaranteed by the caller.
    unsafe { *p.cast::<i64>() }
}

/// A Fortran path argument of hidden length `len`, without the blanks
/// Fortran pads it with.
///
/// # Safety
/// `p` must be NULL or point to `len` bytes that outlive the returned
/// value (the call).
unsafe fn f_path<'a>(p: P, len: P) -> PathArg<'a> {
    if p.is_null() {
        return PathArg::NULL;
    }
    // SAFETY: guaranteed by the caller.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>().cast_const(), len as usize) };
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    PathArg::new(&bytes[..end])
}

fortran!(
    file_open,
    "MPI_FILE_OPEN",
    plain,
    (comm, filename, amode, info, fh, ierror),
    hidden(namelen),
    |c| {
        let (cm, path, mode) = (f_comm(comm), f_path(filename, namelen), int(amode));
        let rc = c.forward();
        let f = f_file(fh);
        c.record(Op::FileOpen, rc, |t, ev| {
            fill_open(t, ev, cm, mode, &path, f)
        });
    }
);

fortran!(file_close, "MPI_FILE_CLOSE", plain, (fh, ierror), |c| {
    let key = f_file(fh).key();
    let rc = c.forward();
    c.record(Op::FileClose, rc, |t, ev| fill_close(t, ev, key));
});

fortran!(
    file_delete,
    "MPI_FILE_DELETE",
    plain,
    (filename, info, ierror),
    hidden(namelen),
    |c| {
        let path = f_path(filename, namelen);
        let rc = c.forward();
        c.record(Op::FileDelete, rc, |t, ev| {
            ev.value = Some(path.recorded(t) as i64)
        });
    }
);

fortran!(file_sync, "MPI_FILE_SYNC", plain, (fh, ierror), |c| {
    let f = f_file(fh);
    let rc = c.forward();
    c.record(Op::FileSync, rc, |t, ev| fill_handle(t, ev, f));
});

fortran!(
    file_set_view,
    "MPI_FILE_SET_VIEW",
    plain,
    (fh, disp, etype, filetype, datarep, info, ierror),
    hidden(replen),
    |c| {
        let (f, d, et, ft) = (f_file(fh), offset(disp), f_dt(etype), f_dt(filetype));
        let rc = c.forward();
        c.record(Op::FileSetView, rc, |t, ev| fill_view(t, ev, f, d, et, ft));
    }
);

/// `File_set_size` and `File_preallocate`: a size.
macro_rules! file_size {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, plain, (fh, size, ierror), |c| {
            let (f, n) = (f_file(fh), offset(size));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_seek(t, ev, f, n, Io::SEEK_SET));
        });
    };
}
file_size!(file_set_size, "MPI_FILE_SET_SIZE", Op::FileSetSize);
file_size!(
    file_preallocate,
    "MPI_FILE_PREALLOCATE",
    Op::FilePreallocate
);

/// `File_seek` and `File_seek_shared`: an offset and whence.
macro_rules! file_seek {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, plain, (fh, off, whence, ierror), |c| {
            let (f, o, w) = (f_file(fh), offset(off), whence_to_trace(int(whence)));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_seek(t, ev, f, o, w));
        });
    };
}
file_seek!(file_seek, "MPI_FILE_SEEK", Op::FileSeek);
file_seek!(file_seek_shared, "MPI_FILE_SEEK_SHARED", Op::FileSeekShared);

/// The data accesses, as in the C wrappers' `access!`: after the file
/// (and the explicit offset, `$pos`), the data and a status (`status`:
/// blocking), nothing more (`begin`: a split collective's first half) or a
/// request (`request`: nonblocking); `$off` is where the access starts
/// (`offset(off)`, the individual pointer's `position`, or
/// [`Io::SHARED`]), `$write` whether it writes.
macro_rules! access {
    ($name:ident, $upper:literal, $op:expr, $write:expr, status, ($fh:ident $(, $pos:ident)*), $off:expr) => {
        fortran!($name, $upper, ts, ($fh, $($pos,)* buf, count, datatype, status, ierror), |c| {
            let (f, o, data) = (f_file($fh), $off, (int(count), f_dt(datatype)));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_access(t, ev, f, o, data, $write, None));
        });
    };
    ($name:ident, $upper:literal, $op:expr, $write:expr, begin, ($fh:ident $(, $pos:ident)*), $off:expr) => {
        fortran!($name, $upper, ts, ($fh, $($pos,)* buf, count, datatype, ierror), |c| {
            let (f, o, data) = (f_file($fh), $off, (int(count), f_dt(datatype)));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_access(t, ev, f, o, data, $write, None));
        });
    };
    ($name:ident, $upper:literal, $op:expr, $write:expr, request, ($fh:ident $(, $pos:ident)*), $off:expr) => {
        fortran!($name, $upper, ts, ($fh, $($pos,)* buf, count, datatype, request, ierror), |c| {
            let (f, o, data) = (f_file($fh), $off, (int(count), f_dt(datatype)));
            let rc = c.forward();
            let req = (rc == 0).then(|| f_req(request));
            c.record($op, rc, |t, ev| fill_access(t, ev, f, o, data, $write, req));
        });
    };
}

/// Explicit offsets, the individual file pointer and the shared one.
macro_rules! accesses {
    ($($name:ident, $upper:literal, $op:expr, $at:ident, $write:expr, $form:ident;)*) => {$(
        accesses!(@one $name, $upper, $op, $at, $write, $form);
    )*};
    (@one $name:ident, $upper:literal, $op:expr, at, $write:expr, $form:ident) => {
        access!($name, $upper, $op, $write, $form, (fh, off), offset(off));
    };
    (@one $name:ident, $upper:literal, $op:expr, ptr, $write:expr, $form:ident) => {
        access!($name, $upper, $op, $write, $form, (fh), position(f_file(fh)));
    };
    (@one $name:ident, $upper:literal, $op:expr, shared, $write:expr, $form:ident) => {
        access!($name, $upper, $op, $write, $form, (fh), Io::SHARED);
    };
}

accesses! {
    file_read_at, "MPI_FILE_READ_AT", Op::FileReadAt, at, false, status;
    file_write_at, "MPI_FILE_WRITE_AT", Op::FileWriteAt, at, true, status;
    file_read_at_all, "MPI_FILE_READ_AT_ALL", Op::FileReadAtAll, at, false, status;
    file_write_at_all, "MPI_FILE_WRITE_AT_ALL", Op::FileWriteAtAll, at, true, status;
    file_read_at_all_begin, "MPI_FILE_READ_AT_ALL_BEGIN", Op::FileReadAtAllBegin, at, false, begin;
    file_write_at_all_begin, "MPI_FILE_WRITE_AT_ALL_BEGIN", Op::FileWriteAtAllBegin, at, true, begin;
    file_iread_at, "MPI_FILE_IREAD_AT", Op::FileIreadAt, at, false, request;
    file_iwrite_at, "MPI_FILE_IWRITE_AT", Op::FileIwriteAt, at, true, request;
    file_iread_at_all, "MPI_FILE_IREAD_AT_ALL", Op::FileIreadAtAll, at, false, request;
    file_iwrite_at_all, "MPI_FILE_IWRITE_AT_ALL", Op::FileIwriteAtAll, at, true, request;
    file_read, "MPI_FILE_READ", Op::FileRead, ptr, false, status;
    file_write, "MPI_FILE_WRITE", Op::FileWrite, ptr, true, status;
    file_read_all, "MPI_FILE_READ_ALL", Op::FileReadAll, ptr, false, status;
    file_write_all, "MPI_FILE_WRITE_ALL", Op::FileWriteAll, ptr, true, status;
    file_read_all_begin, "MPI_FILE_READ_ALL_BEGIN", Op::FileReadAllBegin, ptr, false, begin;
    file_write_all_begin, "MPI_FILE_WRITE_ALL_BEGIN", Op::FileWriteAllBegin, ptr, true, begin;
    file_iread, "MPI_FILE_IREAD", Op::FileIread, ptr, false, request;
    file_iwrite, "MPI_FILE_IWRITE", Op::FileIwrite, ptr, true, request;
    file_iread_all, "MPI_FILE_IREAD_ALL", Op::FileIreadAll, ptr, false, request;
    file_iwrite_all, "MPI_FILE_IWRITE_ALL", Op::FileIwriteAll, ptr, true, request;
    file_read_shared, "MPI_FILE_READ_SHARED", Op::FileReadShared, shared, false, status;
    file_write_shared, "MPI_FILE_WRITE_SHARED", Op::FileWriteShared, shared, true, status;
    file_read_ordered, "MPI_FILE_READ_ORDERED", Op::FileReadOrdered, shared, false, status;
    file_write_ordered, "MPI_FILE_WRITE_ORDERED", Op::FileWriteOrdered, shared, true, status;
    file_read_ordered_begin, "MPI_FILE_READ_ORDERED_BEGIN", Op::FileReadOrderedBegin, shared, false, begin;
    file_write_ordered_begin, "MPI_FILE_WRITE_ORDERED_BEGIN", Op::FileWriteOrderedBegin, shared, true, begin;
    file_iread_shared, "MPI_FILE_IREAD_SHARED", Op::FileIreadShared, shared, false, request;
    file_iwrite_shared, "MPI_FILE_IWRITE_SHARED", Op::FileIwriteShared, shared, true, request;
}

/// A split collective's `_end`: the data was recorded at its `_begin`.
macro_rules! access_end {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, ts, (fh, buf, status, ierror), |c| {
            let f = f_file(fh);
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_handle(t, ev, f));
        });
    };
}
access_end!(
    file_read_all_end,
    "MPI_FILE_READ_ALL_END",
    Op::FileReadAllEnd
);
access_end!(
    file_write_all_end,
    "MPI_FILE_WRITE_ALL_END",
    Op::FileWriteAllEnd
);
access_end!(
    file_read_at_all_end,
    "MPI_FILE_READ_AT_ALL_END",
    Op::FileReadAtAllEnd
);
access_end!(
    file_write_at_all_end,
    "MPI_FILE_WRITE_AT_ALL_END",
    Op::FileWriteAtAllEnd
);
access_end!(
    file_read_ordered_end,
    "MPI_FILE_READ_ORDERED_END",
    Op::FileReadOrderedEnd
);
access_end!(
    file_write_ordered_end,
    "MPI_FILE_WRITE_ORDERED_END",
    Op::FileWriteOrderedEnd
);
