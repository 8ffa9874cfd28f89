//! MPI 4 sessions, re-opened and closed where the application opened and
//! closed its own: the replay's sessions are stacked, and each
//! `MPI_Session_finalize` closes the last one opened.

use std::cell::RefCell;

use anyhow::Result;
use mpi_sys::*;

use super::check;

thread_local! {
    /// The sessions this thread opened and has not closed.
    static OPEN: RefCell<Vec<MPI_Session>> = const { RefCell::new(Vec::new()) };
}

/// `MPI_Session_init`, with no info and errors returned.
pub(super) fn open() -> Result<f64> {
    // SAFETY: an integer (MPICH) or a pointer: all-zero bits are valid,
    // and MPI writes the handle on success.
    let mut s: MPI_Session = unsafe { std::mem::zeroed() };
    // SAFETY: predefined arguments and a valid out-parameter.
    let rc = unsafe { MPI_Session_init(RSMPI_INFO_NULL, RSMPI_ERRORS_RETURN, &mut s) };
    check(rc, "MPI_Session_init")?;
    OPEN.with(|o| o.borrow_mut().push(s));
    Ok(0.0)
}

/// `MPI_Session_finalize` of the last session opened.
pub(super) fn close() -> Result<f64> {
    let Some(mut s) = OPEN.with(|o| o.borrow_mut().pop()) else {
        anyhow::bail!("MPI_Session_finalize without an open session");
    };
    // SAFETY: a session this replay opened and has not closed.
    let rc = unsafe { MPI_Session_finalize(&mut s) };
    check(rc, "MPI_Session_finalize")?;
    Ok(0.0)
}
