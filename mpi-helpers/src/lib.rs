//! The C helpers' Rust face: MPI values that are macros or link-time
//! objects in `mpi.h` (`MPI_IN_PLACE`, `MPI_MAXLOC`, the pair types) and
//! the table of predefined datatypes by code (the codes of
//! `trace::Datatype`, `RS_TYPES` in `rankscale_helpers.c`). mpi-sys's bindings cannot
//! name them portably across MPICH (integer handles) and Open MPI
//! (pointers to globals), so a few lines of C compiled against the same
//! `mpi.h` return them. Declared once here for the shim and replay, the two
//! crates that call MPI, with the one reading of the library's version
//! string that both decide the library by.

#![warn(missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use mpi_sys::{
    MPI_Comm, MPI_Datatype, MPI_MAX_LIBRARY_VERSION_STRING, MPI_Op, PMPI_Get_library_version,
};

/// The MPI library's version string, first line, or empty when the call
/// fails. The tracer records it in every trace, and the shim and replay
/// tell Open MPI from MPICH by it (`trace::MpiLibrary::of`), so both
/// read it the same way. `MPI_Get_library_version` may be called before
/// `MPI_Init`.
pub fn library_version() -> String {
    let mut buf = vec![0 as c_char; MPI_MAX_LIBRARY_VERSION_STRING as usize];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING characters,
    // the most the call writes (this implementation's own constant: 8192
    // in MPICH, 256 in Open MPI); `len` is an out-parameter.
    let rc = unsafe { PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    if rc != 0 {
        return String::new();
    }
    // Open MPI counts the terminating NUL in `len`; stop at the first one.
    let bytes: Vec<u8> = buf[..usize::try_from(len).unwrap_or(0).min(buf.len())]
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    text.lines().next().unwrap_or("").trim().to_string()
}

/// The in- and out-degree of `comm`'s virtual topology, `(0, 0)` without
/// one (see [`rs_neighbor_degrees`]).
pub fn neighbor_degrees(comm: MPI_Comm) -> (c_int, c_int) {
    let (mut indegree, mut outdegree): (c_int, c_int) = (0, 0);
    // SAFETY: both out-parameters are valid ints; the helper only asks
    // MPI (through PMPI_) about `comm`, a communicator the caller's MPI
    // call accepted, and writes 0 where MPI refuses.
    unsafe { rs_neighbor_degrees(comm, &mut indegree, &mut outdegree) };
    (indegree, outdegree)
}

/// This library's `MPI_MODE_*` assert bits of one-sided synchronisation,
/// beside the trace's ([`trace::Rma::MODES`]): MPICH and Open MPI number
/// them differently, so the tracer records the trace's bits and replay
/// passes the replaying library's.
const MODES: [(u32, i32); 5] = [
    (mpi_sys::MPI_MODE_NOCHECK, trace::Rma::MODE_NOCHECK),
    (mpi_sys::MPI_MODE_NOPRECEDE, trace::Rma::MODE_NOPRECEDE),
    (mpi_sys::MPI_MODE_NOPUT, trace::Rma::MODE_NOPUT),
    (mpi_sys::MPI_MODE_NOSTORE, trace::Rma::MODE_NOSTORE),
    (mpi_sys::MPI_MODE_NOSUCCEED, trace::Rma::MODE_NOSUCCEED),
];

/// This library's file access-mode bits beside the trace's
/// ([`trace::Io::MODES`]), for the same reason as [`MODES`].
const AMODES: [(u32, i32); 9] = [
    (mpi_sys::MPI_MODE_RDONLY, trace::Io::MODE_RDONLY),
    (mpi_sys::MPI_MODE_WRONLY, trace::Io::MODE_WRONLY),
    (mpi_sys::MPI_MODE_RDWR, trace::Io::MODE_RDWR),
    (mpi_sys::MPI_MODE_CREATE, trace::Io::MODE_CREATE),
    (mpi_sys::MPI_MODE_EXCL, trace::Io::MODE_EXCL),
    (
        mpi_sys::MPI_MODE_DELETE_ON_CLOSE,
        trace::Io::MODE_DELETE_ON_CLOSE,
    ),
    (mpi_sys::MPI_MODE_UNIQUE_OPEN, trace::Io::MODE_UNIQUE_OPEN),
    (mpi_sys::MPI_MODE_SEQUENTIAL, trace::Io::MODE_SEQUENTIAL),
    (mpi_sys::MPI_MODE_APPEND, trace::Io::MODE_APPEND),
];

/// Library bits as the trace's, from a `(library, trace)` table; bits
/// that are no known mode are dropped (MPI would reject them).
fn bits_to_trace(table: &[(u32, i32)], bits: c_int) -> i32 {
    table
        .iter()
        .filter(|(lib, _)| bits as u32 & lib != 0)
        .fold(0, |acc, (_, bit)| acc | bit)
}

/// The inverse of [`bits_to_trace`].
fn bits_from_trace(table: &[(u32, i32)], bits: i32) -> c_int {
    table
        .iter()
        .filter(|(_, bit)| bits & bit != 0)
        .fold(0, |acc, (lib, _)| acc | *lib as c_int)
}

/// An `assert` argument as the trace records it: each of this library's
/// `MPI_MODE_*` bits as the trace's. Bits that are no known mode are
/// dropped (MPI would reject them).
pub fn assert_to_trace(assert: c_int) -> i32 {
    bits_to_trace(&MODES, assert)
}

/// The inverse of [`assert_to_trace`]: the trace's bits as this library's.
pub fn assert_from_trace(bits: i32) -> c_int {
    bits_from_trace(&MODES, bits)
}

/// A file's access mode (`File_open`'s `amode`) as the trace records it.
pub fn amode_to_trace(amode: c_int) -> i32 {
    bits_to_trace(&AMODES, amode)
}

/// The inverse of [`amode_to_trace`]: the trace's bits as this library's.
pub fn amode_from_trace(bits: i32) -> c_int {
    bits_from_trace(&AMODES, bits)
}

/// `File_seek`'s `whence` as the trace records it ([`trace::Io::SEEK_SET`]
/// and the others); an unknown value is recorded as it is.
pub fn whence_to_trace(whence: c_int) -> i32 {
    match whence as u32 {
        mpi_sys::MPI_SEEK_SET => trace::Io::SEEK_SET,
        mpi_sys::MPI_SEEK_CUR => trace::Io::SEEK_CUR,
        mpi_sys::MPI_SEEK_END => trace::Io::SEEK_END,
        _ => whence,
    }
}

/// The inverse of [`whence_to_trace`].
pub fn whence_from_trace(whence: i32) -> c_int {
    match whence {
        trace::Io::SEEK_SET => mpi_sys::MPI_SEEK_SET as c_int,
        trace::Io::SEEK_CUR => mpi_sys::MPI_SEEK_CUR as c_int,
        trace::Io::SEEK_END => mpi_sys::MPI_SEEK_END as c_int,
        w => w,
    }
}

/// `MPI_LOCK_EXCLUSIVE` and `MPI_LOCK_SHARED` of this library, for
/// `Win_lock`'s lock type.
pub const LOCK_EXCLUSIVE: c_int = mpi_sys::MPI_LOCK_EXCLUSIVE as c_int;
/// See [`LOCK_EXCLUSIVE`].
pub const LOCK_SHARED: c_int = mpi_sys::MPI_LOCK_SHARED as c_int;

unsafe extern "C" {
    /// `MPI_IN_PLACE`.
    pub fn rs_in_place() -> *mut c_void;
    /// `MPI_BOTTOM`.
    pub fn rs_bottom() -> *mut c_void;
    /// `MPI_MAXLOC`.
    pub fn rs_op_maxloc() -> MPI_Op;
    /// `MPI_MINLOC`.
    pub fn rs_op_minloc() -> MPI_Op;
    /// `MPI_REPLACE` (one-sided accumulates).
    pub fn rs_op_replace() -> MPI_Op;
    /// `MPI_NO_OP` (one-sided accumulates).
    pub fn rs_op_no_op() -> MPI_Op;
    /// The size of an `MPI_Status` in Fortran integers.
    pub fn rs_f_status_size() -> c_int;
    /// `MPI_ROOT`: the root argument of an inter-communicator collective
    /// on the root itself.
    pub fn rs_root() -> c_int;
    /// The code of a predefined datatype: 0 for `MPI_DATATYPE_NULL`, 255
    /// for a type that is not predefined (derived or unknown).
    pub fn rs_type_code(t: MPI_Datatype) -> c_int;
    /// The predefined datatype of a code (`MPI_DATATYPE_NULL` for none).
    pub fn rs_type_of_code(code: c_int) -> MPI_Datatype;
    /// `MPI_2INT`.
    pub fn rs_type_2int() -> MPI_Datatype;
    /// `MPI_DOUBLE_INT`.
    pub fn rs_type_double_int() -> MPI_Datatype;
    /// `MPI_LONG_INT`.
    pub fn rs_type_long_int() -> MPI_Datatype;
    /// `MPI_SHORT_INT`.
    pub fn rs_type_short_int() -> MPI_Datatype;
    /// The in- and out-degree of `comm`'s virtual topology (0 and 0
    /// without one): the lengths of a neighbourhood collective's count
    /// lists, which the shim records and replay passes. Asked through
    /// `PMPI_` calls, so that the question is not traced.
    pub fn rs_neighbor_degrees(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int);
}
