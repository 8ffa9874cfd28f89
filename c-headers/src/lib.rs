//! The C helpers' Rust face: MPI values that are macros or link-time
//! objects in `mpi.h` (`MPI_IN_PLACE`, `MPI_MAXLOC`, the pair types) and
//! the table of predefined datatypes by code (the codes of
//! `compress::Datatype`, `RS_TYPES` in `rankscale_helpers.c`). mpi-sys's bindings cannot
//! name them portably across MPICH (integer handles) and Open MPI
//! (pointers to globals), so a few lines of C compiled against the same
//! `mpi.h` return them. Declared once here for the shim and replay, the two
//! crates that call MPI.

#![warn(missing_docs)]

use std::ffi::{c_int, c_void};

use mpi_sys::{MPI_Datatype, MPI_Op};

unsafe extern "C" {
    /// `MPI_IN_PLACE`.
    pub fn rs_in_place() -> *mut c_void;
    /// `MPI_BOTTOM`.
    pub fn rs_bottom() -> *mut c_void;
    /// `MPI_MAXLOC`.
    pub fn rs_op_maxloc() -> MPI_Op;
    /// `MPI_MINLOC`.
    pub fn rs_op_minloc() -> MPI_Op;
    /// The size of an `MPI_Status` in Fortran integers.
    pub fn rs_f_status_size() -> c_int;
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
}
