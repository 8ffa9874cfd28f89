//! MPI-IO (issue 36): files, views, seeks, sizes and data access in every
//! form, re-issued on real files in a scratch directory.
//!
//! A file lives in the trace's communicator id space, as a window does:
//! `File_open`'s event names the opening communicator in `comm` and the
//! file in `create.new`; every later call names the file in `comm`. The
//! files of a replay thread are kept by that id, beside the communicator
//! table ([`Files`]).
//!
//! What is re-issued: `File_open` (collective over the recorded
//! communicator, with the recorded access mode), `File_close`,
//! `File_delete`, `File_set_size`, `File_preallocate`, `File_sync`,
//! `File_seek`, `File_seek_shared`, `File_set_view`, and every data access
//! with the recorded count and datatype (the application's predefined
//! type, or a stand-in of its size, as for messages): the explicit-offset
//! forms (`_at`) at the recorded offset; the individual file pointer's
//! forms as the same call, the pointer moving as the application's did
//! (the replay issues the same seeks and views); the shared file
//! pointer's forms (`_shared`, `_ordered`) as recorded, their position
//! decided by the other ranks' accesses as in the application. The
//! nonblocking forms' requests enter the request table with their buffer,
//! so that the trace's `Wait` and `Test` calls complete them; a split
//! collective's `_begin` keeps its buffer with the file until its `_end`,
//! which gets the same buffer. Payloads are the replay's random bytes.
//!
//! The scratch directory: `--iodir DIR` (or `RANKSCALE_REPLAY_IODIR`), a
//! directory that must exist and is never removed; by default, when the
//! trace has any MPI-IO call, rank 0 makes a fresh one in the temporary
//! directory (`$TMPDIR`, else `/tmp`), `rankscale-replay-io-XXXXXX`,
//! broadcasts its path to every rank (on a duplicate of the world
//! communicator, outside the traced API) and removes it, recursively,
//! once every rank has finished. (A temporary directory local to a node
//! serves a job on one node only: a job on several nodes needs `--iodir`
//! on a shared file system.) The replay opens, creates and deletes only
//! files named `rankscale-<16 hex digits of the recorded path hash>` in
//! it, and touches no other path: a file the application opened without
//! `MPI_MODE_CREATE` (an input it found) is made empty first if the
//! replay has not written it, so its reads find fewer bytes than the
//! application's; a file of an earlier replay in a given directory is
//! removed before an exclusive (`MPI_MODE_EXCL`) open of its name, and a
//! file the application deleted that the replay has not made is made
//! empty before its `MPI_File_delete`.
//!
//! What differs from the application:
//! - the files' names: the path hash a tracer preloaded into the replay
//!   records for its `File_open` (and `File_delete`) is that of the
//!   scratch file, not the application's;
//! - a view's datatypes are stand-ins with the recorded sizes and bounds:
//!   an etype of that many bytes, and a filetype of that many bytes of
//!   data at the end of the recorded bounds (the application's holes may
//!   lie elsewhere in them, so the bytes a strided view reaches differ;
//!   how many it moves, and how far into the file, do not), the data
//!   representation `native`, and no info hints;
//! - an individual file pointer that is not where the application's was
//!   before an access (a read that found fewer bytes than the
//!   application's moved it less) is moved to the recorded offset outside
//!   the traced API, and counted in the report.
//!
//! The report gives the bytes written and read (asked of MPI: count times
//! datatype size) over all ranks. An MPI-IO call recorded without detail
//! (from Fortran on Open MPI) is passed over, as calls without detail are.

use std::collections::HashMap;
use std::ffi::{CString, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use mpi_helpers::{amode_from_trace, rs_type_of_code, whence_from_trace};
use mpi_sys::*;
use trace::merged::MNode;
use trace::{Datatype, Event, Family, Io, Op, TraceFile};

use super::requests::Keep;
use super::{Buf, Replayer, check, elements, request_null};
use crate::Opts;

/// The environment variable that names the scratch directory when
/// `--iodir` does not.
pub(super) const IODIR_ENV: &str = "RANKSCALE_REPLAY_IODIR";

/// One open file of the replay.
struct File {
    handle: MPI_File,
    /// The buffer of the split collective under way on the file (MPI
    /// allows one per file), from its `_begin` to its `_end`.
    split: Option<Buf>,
}

/// The files of a replay thread by trace id (files live in the
/// communicators' id space; this table stands beside
/// [`super::comm::Comms`]), the scratch directory they are made in, the
/// view datatypes made so far and the bytes moved.
#[derive(Default)]
pub(super) struct Files {
    open: HashMap<u32, File>,
    dir: Option<Arc<PathBuf>>,
    /// Etype and filetype stand-ins by (etype bytes, filetype bytes,
    /// lower bound, extent); freed with the replayer's other datatypes.
    views: HashMap<(i64, i64, i64, i64), (MPI_Datatype, MPI_Datatype)>,
    /// Bytes the data accesses asked MPI to write.
    pub(super) written: f64,
    /// Bytes the data accesses asked MPI to read.
    pub(super) read: f64,
    /// Accesses through the individual file pointer that found it
    /// elsewhere than the application's and moved it there.
    pub(super) repositioned: f64,
}

impl Files {
    /// The files of a new replay thread, made in `dir`.
    pub(super) fn new(dir: Option<Arc<PathBuf>>) -> Files {
        Files {
            dir,
            ..Files::default()
        }
    }

    /// The scratch file of path hash `hash`.
    fn path(&self, hash: u64) -> Result<PathBuf> {
        let dir = self
            .dir
            .as_ref()
            .context("an MPI-IO call, but no scratch directory was set up for it")?;
        Ok(dir.join(format!("rankscale-{hash:016x}")))
    }
}

/// The scratch directory of the replay's files: given (`--iodir`,
/// `RANKSCALE_REPLAY_IODIR`) or made by rank 0 for the replay and removed
/// after it (see the module documentation).
pub(super) struct Scratch {
    dir: Option<Arc<PathBuf>>,
    /// Of a directory made for the replay: the duplicate of the world
    /// communicator its path went out on, until [`Scratch::finish`].
    made: Option<MPI_Comm>,
    rank: c_int,
    /// Whether [`Scratch::finish`] ran (else, on an error, rank 0 removes
    /// the directory it made when this is dropped).
    finished: bool,
}

/// Whether the trace has an MPI-IO call the replay issues (one with its
/// detail, or `File_delete`), so needs a scratch directory. Every rank
/// reads the same file, so every rank gets the same answer without
/// communicating. Events spilled out of a rank's compression queue are
/// not in the loop structure: a trace with any is taken to have some.
fn has_io(file: &TraceFile) -> bool {
    fn walk(n: &MNode) -> bool {
        match n {
            MNode::Event(e) => {
                let s = e.shape();
                // A call on a file names it only with its detail;
                // `File_open` names its communicator either way, and has
                // its detail when it has the access mode.
                s.op().family() == Family::Io
                    && !s.failed()
                    && match s.op() {
                        Op::FileDelete => true,
                        Op::FileOpen => s.param_names().contains(&"file.amode"),
                        _ => s.names_comm(),
                    }
            }
            MNode::Loop(l) => l.body().iter().any(walk),
            // A node of a kind this replay does not know: maybe.
            _ => true,
        }
    }
    file.trace.spilled_events() > 0 || file.trace.nodes().iter().any(walk)
}

/// A new directory `rankscale-replay-io-XXXXXX` in the temporary
/// directory, readable by its owner alone.
fn make_temporary() -> Result<PathBuf> {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rng = replay::Rng::for_rank(nanos, std::process::id());
    for _ in 0..100 {
        let tail: String = (0..6)
            .map(|_| char::from(CHARS[(rng.next_u64() % CHARS.len() as u64) as usize]))
            .collect();
        let dir = base.join(format!("rankscale-replay-io-{tail}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("making the scratch directory {} for MPI-IO", dir.display())
                });
            }
        }
    }
    bail!(
        "could not make a scratch directory for MPI-IO in {} (100 names taken)",
        base.display()
    )
}

impl Scratch {
    /// Sets the scratch directory up on every rank (collective over the
    /// world, outside the traced API, when the trace has MPI-IO and no
    /// directory is given): a given one must be a directory on every rank;
    /// else rank 0 makes one and broadcasts its path. A trace without
    /// MPI-IO has none.
    pub(super) fn new(opts: &Opts, file: &TraceFile, rank: c_int) -> Result<Scratch> {
        let mut s = Scratch {
            dir: None,
            made: None,
            rank,
            finished: false,
        };
        if !has_io(file) {
            return Ok(s);
        }
        let given = opts.iodir.clone().or_else(|| {
            std::env::var_os(IODIR_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        if let Some(d) = given {
            let d = d.canonicalize().with_context(|| {
                format!(
                    "rank {rank}: the MPI-IO scratch directory {} (--iodir or {IODIR_ENV})",
                    d.display()
                )
            })?;
            if !d.is_dir() {
                bail!(
                    "rank {rank}: the MPI-IO scratch directory {} (--iodir or {IODIR_ENV}) is not a directory",
                    d.display()
                );
            }
            s.dir = Some(Arc::new(d));
            return Ok(s);
        }
        // SAFETY: reading initialised mpi-sys constants.
        let (world, mut dup) = unsafe { (RSMPI_COMM_WORLD, RSMPI_COMM_NULL) };
        check(
            // SAFETY: every rank makes this call (the trace, hence
            // `has_io`, is the same on every rank); `dup` is a valid
            // out-parameter.
            unsafe { PMPI_Comm_dup(world, &mut dup) },
            "MPI_Comm_dup (the scratch directory's)",
        )?;
        s.made = Some(dup);
        let made = if rank == 0 {
            make_temporary()
        } else {
            Ok(PathBuf::new())
        };
        let mut bytes = match &made {
            Ok(p) => p.as_os_str().as_bytes().to_vec(),
            Err(_) => Vec::new(),
        };
        // The path's length, or -1: rank 0 could not make it.
        let mut len: i64 = if made.is_ok() { bytes.len() as i64 } else { -1 };
        check(
            // SAFETY: one i64 on every rank of `dup`, replay's own.
            unsafe { PMPI_Bcast((&raw mut len).cast(), 1, RSMPI_INT64_T, 0, dup) },
            "MPI_Bcast (the scratch directory's)",
        )?;
        let made = made?;
        if len < 0 {
            bail!("rank {rank}: rank 0 could not make the scratch directory for MPI-IO");
        }
        bytes.resize(
            usize::try_from(len).context("the scratch directory's path")?,
            0,
        );
        let n = c_int::try_from(len).context("the scratch directory's path")?;
        check(
            // SAFETY: `bytes` holds `n` bytes on every rank (the length
            // was broadcast first); `dup` is replay's own.
            unsafe { PMPI_Bcast(bytes.as_mut_ptr().cast(), n, RSMPI_UINT8_T, 0, dup) },
            "MPI_Bcast (the scratch directory's)",
        )?;
        let dir = if rank == 0 {
            made
        } else {
            PathBuf::from(std::ffi::OsStr::from_bytes(&bytes))
        };
        if !dir.is_dir() {
            bail!(
                "rank {rank}: the scratch directory {} that rank 0 made for MPI-IO is not there on \
                 this rank's node (the temporary directory is local to a node): give --iodir (or \
                 {IODIR_ENV}) a directory on a file system every node shares",
                dir.display()
            );
        }
        s.dir = Some(Arc::new(dir));
        Ok(s)
    }

    /// The directory the replay's files are made in, if the trace has
    /// MPI-IO.
    pub(super) fn dir(&self) -> Option<Arc<PathBuf>> {
        self.dir.clone()
    }

    /// For the report: the directory, and whether it was made for the
    /// replay (and removed after it) rather than given.
    pub(super) fn describe(&self) -> Option<(String, bool)> {
        let d = self.dir.as_ref()?;
        Some((d.display().to_string(), self.made.is_some()))
    }

    /// After every rank's replay (collective over the world when the
    /// directory was made for the replay): a barrier on the duplicate, then
    /// rank 0 removes the directory with everything in it. A failure to
    /// remove it is said, not an error: the replay is done.
    pub(super) fn finish(&mut self) -> Result<()> {
        self.finished = true;
        let Some(mut dup) = self.made else {
            return Ok(());
        };
        check(
            // SAFETY: replay's own communicator; every rank gets here
            // after its replay.
            unsafe { PMPI_Barrier(dup) },
            "MPI_Barrier (the scratch directory's)",
        )?;
        if self.rank == 0
            && let Some(d) = &self.dir
            && let Err(e) = std::fs::remove_dir_all(d.as_path())
        {
            replay::say(&format!(
                "replay: warning: could not remove the MPI-IO scratch directory {}: {e}",
                d.display()
            ));
        }
        check(
            // SAFETY: replay's own communicator, used no more.
            unsafe { PMPI_Comm_free(&mut dup) },
            "MPI_Comm_free (the scratch directory's)",
        )?;
        Ok(())
    }
}

impl Drop for Scratch {
    /// On an error (the replay did not finish): rank 0 removes the
    /// directory it made before the job is aborted.
    fn drop(&mut self) {
        if !self.finished
            && self.rank == 0
            && self.made.is_some()
            && let Some(d) = &self.dir
        {
            let _ = std::fs::remove_dir_all(d.as_path());
        }
    }
}

/// `MPI_INFO_NULL`: the application's info hints are not recorded.
fn info_null() -> MPI_Info {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_INFO_NULL }
}

/// A path as the C string MPI takes.
fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .with_context(|| format!("the path {} holds a NUL byte", p.display()))
}

/// Makes the scratch file `p` empty if it is not there (not truncating
/// one that is).
fn ensure_exists(p: &Path) -> Result<()> {
    if p.exists() {
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(p)
        .with_context(|| format!("making the empty scratch file {}", p.display()))?;
    Ok(())
}

/// Whether a data access writes (else it reads).
fn writes(op: Op) -> bool {
    let n = op.name();
    n.starts_with("File_write") || n.starts_with("File_iwrite")
}

/// Whether a data access goes through the individual file pointer.
fn individual(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        FileRead
            | FileWrite
            | FileReadAll
            | FileWriteAll
            | FileReadAllBegin
            | FileWriteAllBegin
            | FileIread
            | FileIwrite
            | FileIreadAll
            | FileIwriteAll
    )
}

/// The code of `MPI_BYTE` in the trace's datatype table.
fn byte_type() -> Result<MPI_Datatype> {
    let code = Datatype::NAMES
        .iter()
        .position(|n| *n == "byte")
        .context("MPI_BYTE in the datatype table")?;
    // SAFETY: rs_type_of_code returns a predefined handle of mpi.h; it
    // calls no MPI function.
    Ok(unsafe { rs_type_of_code(code as c_int) })
}

impl Replayer<'_> {
    /// Issues an MPI-IO call. An event without its [`Io`] detail (from
    /// Fortran on Open MPI) is passed over, as calls without detail are,
    /// but for `File_delete`, which records its path's hash alone. Returns
    /// the bytes the call wrote.
    pub(super) fn io(&mut self, e: &Event) -> Result<f64> {
        let Some(io) = e.io.as_deref() else {
            if e.op == Op::FileDelete
                && let Some(hash) = e.value
            {
                self.file_delete(hash as u64)?;
                return Ok(0.0);
            }
            if let Some(r) = e.req {
                self.passed.insert(r.0);
            }
            return Ok(0.0);
        };
        match (e.op, io) {
            (Op::FileOpen, &Io::Open { amode, path }) => self.file_open(e, amode, path)?,
            (
                Op::FileSetView,
                &Io::View {
                    disp,
                    etype,
                    filetype,
                    lb,
                    extent,
                },
            ) => self.set_view(e, disp, (etype, filetype, lb, extent))?,
            (_, &Io::Access { offset, .. }) => return self.access(e, offset),
            (Op::FileClose, Io::Handle) => self.file_close(e)?,
            (Op::FileSync, Io::Handle) => {
                let fh = self.file(e)?.handle;
                // SAFETY: a file this replay opened and has not closed.
                check(unsafe { MPI_File_sync(fh) }, "MPI_File_sync")?;
            }
            (_, Io::Handle) => self.access_end(e)?,
            (_, &Io::Seek { offset, whence }) => self.seek(e, offset, whence)?,
            (op, io) => bail!("{} with the detail {io:?} is not replayed", op.name()),
        }
        Ok(0.0)
    }

    /// The open file the event names (its `comm`).
    fn file(&mut self, e: &Event) -> Result<&mut File> {
        self.files
            .open
            .get_mut(&e.comm.0)
            .ok_or_else(|| anyhow!("file {} is not open at this point", e.comm.0))
    }

    /// `File_open` of the scratch file of the recorded path hash, over the
    /// recorded communicator, with the recorded access mode.
    fn file_open(&mut self, e: &Event, amode: i32, hash: u64) -> Result<()> {
        let id = e
            .create
            .as_ref()
            .and_then(|c| c.new)
            .context("File_open without its file id")?;
        let parent = self.comm(e.comm)?;
        let path = self.files.path(hash)?;
        if amode & Io::MODE_EXCL != 0 {
            // The application's exclusive open found no file: one of an
            // earlier replay (or one the application removed outside MPI)
            // goes first, on the communicator's rank 0, before any rank
            // opens (the amode is the same on every rank of the open).
            let mut me: c_int = 0;
            check(
                // SAFETY: `parent` comes from the replay's table; `me` is
                // a valid out-parameter.
                unsafe { PMPI_Comm_rank(parent, &mut me) },
                "MPI_Comm_rank",
            )?;
            if me == 0 && path.exists() {
                std::fs::remove_file(&path).with_context(|| {
                    format!("removing {} before an exclusive open", path.display())
                })?;
            }
            check(
                // SAFETY: collective over `parent`, as the open after it.
                unsafe { PMPI_Barrier(parent) },
                "MPI_Barrier (before an exclusive File_open)",
            )?;
        } else if amode & Io::MODE_CREATE == 0 {
            // The application found the file: the replay's may not be
            // there yet.
            ensure_exists(&path)?;
        }
        let c = c_path(&path)?;
        // SAFETY: reading an initialised mpi-sys constant.
        let mut fh = unsafe { RSMPI_FILE_NULL };
        check(
            // SAFETY: `c` is a NUL-terminated path that lives across the
            // call; `parent` comes from the replay's table; `fh` is a
            // valid out-parameter.
            unsafe {
                MPI_File_open(
                    parent,
                    c.as_ptr(),
                    amode_from_trace(amode),
                    info_null(),
                    &mut fh,
                )
            },
            "MPI_File_open",
        )
        .with_context(|| format!("opening {}", path.display()))?;
        self.files.open.insert(
            id.0,
            File {
                handle: fh,
                split: None,
            },
        );
        Ok(())
    }

    /// `File_close`; the file leaves the table.
    fn file_close(&mut self, e: &Event) -> Result<()> {
        let mut f = self
            .files
            .open
            .remove(&e.comm.0)
            .ok_or_else(|| anyhow!("file {} is not open at this point", e.comm.0))?;
        // SAFETY: a file this replay opened; its nonblocking accesses and
        // split collective completed, as the application's had.
        check(unsafe { MPI_File_close(&mut f.handle) }, "MPI_File_close")
    }

    /// `File_delete` of the scratch file of path hash `hash` (made empty
    /// first if the replay has not made it: the application's was there).
    fn file_delete(&mut self, hash: u64) -> Result<()> {
        let path = self.files.path(hash)?;
        ensure_exists(&path)?;
        let c = c_path(&path)?;
        check(
            // SAFETY: `c` is a NUL-terminated path that lives across the
            // call.
            unsafe { MPI_File_delete(c.as_ptr(), info_null()) },
            "MPI_File_delete",
        )
        .with_context(|| format!("deleting {}", path.display()))
    }

    /// `File_seek`, `File_seek_shared`, `File_set_size` and
    /// `File_preallocate`.
    fn seek(&mut self, e: &Event, offset: i64, whence: i32) -> Result<()> {
        let fh = self.file(e)?.handle;
        let off: MPI_Offset = offset;
        let w = whence_from_trace(whence);
        let name = e.op.name();
        // SAFETY (each call below): `fh` is a file this replay opened and
        // has not closed; the offset or size and whence are the recorded
        // ones.
        let rc = match e.op {
            // SAFETY: see the comment before the match.
            Op::FileSeek => unsafe { MPI_File_seek(fh, off, w) },
            // SAFETY: see the comment before the match.
            Op::FileSeekShared => unsafe { MPI_File_seek_shared(fh, off, w) },
            // SAFETY: see the comment before the match.
            Op::FileSetSize => unsafe { MPI_File_set_size(fh, off) },
            // SAFETY: see the comment before the match.
            Op::FilePreallocate => unsafe { MPI_File_preallocate(fh, off) },
            op => bail!("{} with a seek's detail is not replayed", op.name()),
        };
        check(rc, name)
    }

    /// The etype and filetype stand-ins of a view: `etype` bytes, and
    /// `filetype` bytes of data at the end of the bounds `lb` to `lb +
    /// extent` (so that the data reaches as far into the file as the
    /// application's did: a read of the file's whole length then finds it
    /// all, and Open MPI 4.1's nonblocking read past the end of a file,
    /// which never completes, is not made where the application made
    /// none).
    fn view_types(
        &mut self,
        (etype, filetype, lb, extent): (i64, i64, i64, i64),
    ) -> Result<(MPI_Datatype, MPI_Datatype)> {
        let key = (etype, filetype, lb, extent);
        if let Some(&t) = self.files.views.get(&key) {
            return Ok(t);
        }
        let byte = byte_type()?;
        let contiguous = |bytes: i64| -> Result<MPI_Datatype> {
            let n = c_int::try_from(bytes).context("a view's datatype size")?;
            // SAFETY: reading an initialised mpi-sys constant.
            let mut t = unsafe { RSMPI_DATATYPE_NULL };
            check(
                // SAFETY: `byte` is a predefined type; `t` is a valid
                // out-parameter.
                unsafe { PMPI_Type_contiguous(n, byte, &mut t) },
                "MPI_Type_contiguous",
            )?;
            Ok(t)
        };
        let mut et = contiguous(etype)?;
        // SAFETY: `et` was just made.
        check(unsafe { PMPI_Type_commit(&mut et) }, "MPI_Type_commit")?;
        self.owned_types.push(et);
        let n = c_int::try_from(filetype).context("a view's filetype size")?;
        let ext = MPI_Aint::try_from(extent).context("a view's filetype extent")?;
        let low = MPI_Aint::try_from(lb).context("a view's filetype lower bound")?;
        let at: MPI_Aint = low + (ext - filetype as MPI_Aint).max(0);
        // SAFETY: reading an initialised mpi-sys constant.
        let mut data = unsafe { RSMPI_DATATYPE_NULL };
        check(
            // SAFETY: one block of `n` bytes at `at`; `data` is a valid
            // out-parameter.
            unsafe { PMPI_Type_create_hindexed_block(1, n, &at, byte, &mut data) },
            "MPI_Type_create_hindexed_block",
        )?;
        // SAFETY: reading an initialised mpi-sys constant.
        let mut ft = unsafe { RSMPI_DATATYPE_NULL };
        let rc = {
            // SAFETY: `data` was just made; `ft` is a valid out-parameter.
            unsafe { PMPI_Type_create_resized(data, low, ext, &mut ft) }
        };
        // SAFETY: `data` was made above; `ft` (if made) keeps what it
        // needs of it.
        unsafe { PMPI_Type_free(&mut data) };
        check(rc, "MPI_Type_create_resized")?;
        // SAFETY: `ft` was just made.
        check(unsafe { PMPI_Type_commit(&mut ft) }, "MPI_Type_commit")?;
        self.owned_types.push(ft);
        self.files.views.insert(key, (et, ft));
        Ok((et, ft))
    }

    /// `File_set_view` with stand-ins of the recorded sizes and extent.
    fn set_view(&mut self, e: &Event, disp: i64, sizes: (i64, i64, i64, i64)) -> Result<()> {
        let fh = self.file(e)?.handle;
        let (et, ft) = self.view_types(sizes)?;
        let off: MPI_Offset = disp;
        check(
            // SAFETY: `fh` is a file this replay opened and has not
            // closed; `et` and `ft` are committed datatypes of this
            // replay, freed only at its end; the data representation is a
            // static C string.
            unsafe { MPI_File_set_view(fh, off, et, ft, c"native".as_ptr(), info_null()) },
            "MPI_File_set_view",
        )
    }

    /// Before an access through the individual file pointer: if the
    /// pointer is not where the application's was (`offset`), it moves
    /// there, outside the traced API, and counts (see the module
    /// documentation).
    fn reposition(&mut self, fh: MPI_File, offset: i64) -> Result<()> {
        let mut at: MPI_Offset = 0;
        // SAFETY: `fh` is a file this replay opened and has not closed;
        // `at` is a valid out-parameter.
        if unsafe { PMPI_File_get_position(fh, &mut at) } != 0 || at == offset {
            return Ok(());
        }
        let to: MPI_Offset = offset;
        check(
            // SAFETY: as above; a local seek of the individual pointer.
            unsafe { PMPI_File_seek(fh, to, whence_from_trace(Io::SEEK_SET)) },
            "MPI_File_seek (to the application's position)",
        )?;
        self.files.repositioned += 1.0;
        Ok(())
    }

    /// A data access in any form: the recorded count and datatype, at the
    /// recorded offset (explicit-offset forms) or the file pointer's.
    /// Returns the bytes it wrote.
    fn access(&mut self, e: &Event, offset: i64) -> Result<f64> {
        let write = writes(e.op);
        let t = if write { e.send } else { e.recv }
            .with_context(|| format!("{} without its data", e.op.name()))?;
        let (n, ty, mut b) = self.side(&t)?;
        let bytes = elements(n, t.dsize) as f64;
        let fh = self.file(e)?.handle;
        if individual(e.op) {
            self.reposition(fh, offset)?;
        }
        let off: MPI_Offset = offset;
        let mut h = request_null();
        let hp: *mut MPI_Request = &mut h;
        // SAFETY: reading an initialised mpi-sys constant.
        let st = unsafe { RSMPI_STATUS_IGNORE };
        let p: *mut c_void = b.as_mut_ptr().cast();
        let cp: *const c_void = p.cast_const();
        // SAFETY (each call below): `fh` is a file this replay opened and
        // has not closed; `b` holds `n` elements of `ty` (`side` sized it
        // by the datatype's extent) and lives until the call returns
        // (blocking forms), with the request in the request table
        // (nonblocking forms) or with the file until the `_end` (split
        // collectives' `_begin`); `h` is a valid out-parameter; the status
        // is MPI_STATUS_IGNORE.
        let rc = match e.op {
            // SAFETY: see the comment before the match.
            Op::FileReadAt => unsafe { MPI_File_read_at(fh, off, p, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteAt => unsafe { MPI_File_write_at(fh, off, cp, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadAtAll => unsafe { MPI_File_read_at_all(fh, off, p, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteAtAll => unsafe { MPI_File_write_at_all(fh, off, cp, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadAtAllBegin => unsafe { MPI_File_read_at_all_begin(fh, off, p, n, ty) },
            Op::FileWriteAtAllBegin => {
                // SAFETY: see the comment before the match.
                unsafe { MPI_File_write_at_all_begin(fh, off, cp, n, ty) }
            }
            // SAFETY: see the comment before the match.
            Op::FileIreadAt => unsafe { MPI_File_iread_at(fh, off, p, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIwriteAt => unsafe { MPI_File_iwrite_at(fh, off, cp, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIreadAtAll => unsafe { MPI_File_iread_at_all(fh, off, p, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIwriteAtAll => unsafe { MPI_File_iwrite_at_all(fh, off, cp, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileRead => unsafe { MPI_File_read(fh, p, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileWrite => unsafe { MPI_File_write(fh, cp, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadAll => unsafe { MPI_File_read_all(fh, p, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteAll => unsafe { MPI_File_write_all(fh, cp, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadAllBegin => unsafe { MPI_File_read_all_begin(fh, p, n, ty) },
            // SAFETY: see the comment before the match.
            Op::FileWriteAllBegin => unsafe { MPI_File_write_all_begin(fh, cp, n, ty) },
            // SAFETY: see the comment before the match.
            Op::FileIread => unsafe { MPI_File_iread(fh, p, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIwrite => unsafe { MPI_File_iwrite(fh, cp, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIreadAll => unsafe { MPI_File_iread_all(fh, p, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIwriteAll => unsafe { MPI_File_iwrite_all(fh, cp, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileReadShared => unsafe { MPI_File_read_shared(fh, p, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteShared => unsafe { MPI_File_write_shared(fh, cp, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadOrdered => unsafe { MPI_File_read_ordered(fh, p, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteOrdered => unsafe { MPI_File_write_ordered(fh, cp, n, ty, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadOrderedBegin => unsafe { MPI_File_read_ordered_begin(fh, p, n, ty) },
            // SAFETY: see the comment before the match.
            Op::FileWriteOrderedBegin => unsafe { MPI_File_write_ordered_begin(fh, cp, n, ty) },
            // SAFETY: see the comment before the match.
            Op::FileIreadShared => unsafe { MPI_File_iread_shared(fh, p, n, ty, hp) },
            // SAFETY: see the comment before the match.
            Op::FileIwriteShared => unsafe { MPI_File_iwrite_shared(fh, cp, n, ty, hp) },
            op => bail!("{} with an access's detail is not replayed", op.name()),
        };
        check(rc, e.op.name())?;
        if write {
            self.files.written += bytes;
        } else {
            self.files.read += bytes;
        }
        if e.op.is_split_begin() {
            let f = self.file(e)?;
            if f.split.is_some() {
                bail!(
                    "{} while another split collective is under way on the file",
                    e.op.name()
                );
            }
            f.split = Some(b);
        } else if h != request_null() {
            self.keep_access(e, h, b)?;
        }
        Ok(if write { bytes } else { 0.0 })
    }

    /// Keeps the buffer of a nonblocking access with its request in the
    /// table, for the trace's completion calls; one the trace does not
    /// name (it has no request id) is completed at once.
    fn keep_access(&mut self, e: &Event, mut h: MPI_Request, b: Buf) -> Result<()> {
        if e.req.is_some() {
            self.new_req(e.req, h, Keep::buffer(b), false);
            return Ok(());
        }
        check(
            // SAFETY: `h` is the request just made; `b` lives until it
            // completes here.
            unsafe { PMPI_Wait(&mut h, RSMPI_STATUS_IGNORE) },
            "MPI_Wait",
        )?;
        drop(b);
        Ok(())
    }

    /// A split collective's `_end`, with its `_begin`'s buffer.
    fn access_end(&mut self, e: &Event) -> Result<()> {
        let f = self.file(e)?;
        let fh = f.handle;
        let mut b = f
            .split
            .take()
            .with_context(|| format!("{} without its _begin", e.op.name()))?;
        let p: *mut c_void = b.as_mut_ptr().cast();
        let cp: *const c_void = p.cast_const();
        // SAFETY: reading an initialised mpi-sys constant.
        let st = unsafe { RSMPI_STATUS_IGNORE };
        // SAFETY (each call below): `fh` is a file this replay opened and
        // has not closed, with a split collective under way whose buffer
        // is `b`, the one its `_begin` got, alive until the call returns.
        let rc = match e.op {
            // SAFETY: see the comment before the match.
            Op::FileReadAllEnd => unsafe { MPI_File_read_all_end(fh, p, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteAllEnd => unsafe { MPI_File_write_all_end(fh, cp, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadAtAllEnd => unsafe { MPI_File_read_at_all_end(fh, p, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteAtAllEnd => unsafe { MPI_File_write_at_all_end(fh, cp, st) },
            // SAFETY: see the comment before the match.
            Op::FileReadOrderedEnd => unsafe { MPI_File_read_ordered_end(fh, p, st) },
            // SAFETY: see the comment before the match.
            Op::FileWriteOrderedEnd => unsafe { MPI_File_write_ordered_end(fh, cp, st) },
            op => bail!("{} with a handle's detail is not replayed", op.name()),
        };
        check(rc, e.op.name())
    }
}
