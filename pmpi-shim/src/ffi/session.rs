//! MPI 4 sessions: a program that never calls `MPI_Init` is traced from
//! its first `MPI_Session_init` to the `MPI_Session_finalize` that closes
//! its last session.
//!
//! Without `MPI_Init` there is no `MPI_COMM_WORLD`. At the first
//! `MPI_Session_init` the tracer opens a session of its own, makes a
//! communicator over its `mpi://WORLD` process set (untraced, with a
//! string tag of its own) and uses it as its world: world ranks are ranks
//! in it, and the merge at the end runs over it. The tracer's session is
//! not the application's, so the application's sessions, their process
//! sets and their finalization are its own. When the application closes
//! its last session the tracer merges and writes the trace, then frees its
//! communicator and closes its session, before the application's
//! `MPI_Session_finalize`.
//!
//! A program that called `MPI_Init` is traced from there as any other;
//! its sessions are calls like the others.

use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};

use mpi_sys::*;
use trace::Op;

use super::c::{after_init, before_finalize};
use crate::return_address;
use crate::tracer::{self, Scope};

/// A handle the tracer made for itself: an `int` (MPICH) or a pointer
/// (Open MPI) that every thread may read.
#[derive(Clone, Copy)]
struct Own<T>(T);

// SAFETY: MPI handles are process-wide values (integers or pointers to
// library objects), valid on any thread of a process whose MPI allows
// threads; the tracer only reads them after they are set once.
unsafe impl<T> Send for Own<T> {}
// SAFETY: as above; they are never written after being set.
unsafe impl<T> Sync for Own<T> {}

/// The tracer's session and its world communicator, when the tracer was
/// started by a session.
static OWN: OnceLock<(Own<MPI_Session>, Own<MPI_Comm>)> = OnceLock::new();

/// The application's sessions open now.
static OPEN: AtomicI64 = AtomicI64::new(0);

/// The tracer's world communicator of a sessions-only program.
pub(crate) fn world() -> Option<MPI_Comm> {
    OWN.get().map(|(_, w)| w.0)
}

/// The tracer's own session and its world over `mpi://WORLD`, made with
/// MPI's calls that the tracer does not record; the failing call's name
/// otherwise.
fn open_own() -> Result<(MPI_Session, MPI_Comm), String> {
    // SAFETY: the out-parameters are locals MPI writes on success; the
    // string arguments are NUL-terminated literals; the group is freed
    // once the communicator is made; the session and the communicator are
    // the tracer's own and live until `close_own`.
    unsafe {
        // An integer (MPICH) or a pointer: all-zero bits are valid, and
        // MPI writes it on success.
        let mut session: MPI_Session = std::mem::zeroed();
        if PMPI_Session_init(RSMPI_INFO_NULL, RSMPI_ERRORS_RETURN, &mut session) != 0 {
            return Err("MPI_Session_init".into());
        }
        let mut group = RSMPI_GROUP_NULL;
        let pset = c"mpi://WORLD";
        if PMPI_Group_from_session_pset(session, pset.as_ptr(), &mut group) != 0 {
            PMPI_Session_finalize(&mut session);
            return Err("MPI_Group_from_session_pset(mpi://WORLD)".into());
        }
        let mut comm = RSMPI_COMM_NULL;
        let tag = c"org.rankscale.tracer.world";
        let rc = PMPI_Comm_create_from_group(
            group,
            tag.as_ptr(),
            RSMPI_INFO_NULL,
            RSMPI_ERRORS_RETURN,
            &mut comm,
        );
        PMPI_Group_free(&mut group);
        if rc != 0 {
            PMPI_Session_finalize(&mut session);
            return Err("MPI_Comm_create_from_group".into());
        }
        Ok((session, comm))
    }
}

/// Frees the tracer's communicator and closes its session.
fn close_own() {
    if let Some((s, w)) = OWN.get() {
        let (mut s, mut w) = (s.0, w.0);
        // SAFETY: the tracer's own handles, made by `open_own` and used by
        // no one after the merge that precedes this call.
        unsafe {
            PMPI_Comm_free(&mut w);
            PMPI_Session_finalize(&mut s);
        }
    }
}

/// After the application's `MPI_Session_init` (from C or Fortran)
/// returned `rc`: the first of a program that has not called `MPI_Init`
/// starts the tracer (above); every one is recorded. Nested in another
/// wrapper (the C call that MPICH's Fortran binding makes) it does nothing:
/// the outer wrapper counts and records the call.
pub(crate) fn after_session_init(ret: usize, rc: c_int) {
    if tracer::nested() {
        return;
    }
    if rc != 0 {
        if let Some(s) = Scope::enter(ret) {
            s.record(Op::SessionInit, rc, |_, _| {});
        }
        return;
    }
    OPEN.fetch_add(1, Ordering::SeqCst);
    if tracer::get().is_none() && OWN.get().is_none() {
        match tracer::untraced(open_own) {
            Ok((s, w)) => {
                let _ = OWN.set((Own(s), Own(w)));
                after_init(ret, Op::SessionInit, None);
            }
            Err(call) => crate::warn::warn(
                None,
                &format!(
                    "a program without MPI_Init: the tracer could not make its world \
                     ({call} failed); the application continues untraced"
                ),
            ),
        }
    } else if let Some(s) = Scope::enter(ret) {
        s.record(Op::SessionInit, 0, |_, _| {});
    }
}

/// Runs the application's `MPI_Session_finalize` (`forward`, from C or
/// Fortran, untraced) and records it. The one that closes the last session
/// of a program the tracer followed from a session writes the trace first.
pub(crate) fn session_finalize(ret: usize, forward: impl FnOnce() -> c_int) -> c_int {
    if tracer::nested() {
        return forward();
    }
    // The application's last open session: an erroneous call (a null or
    // unknown session) while one is open is taken for its closing.
    let last = OPEN.fetch_sub(1, Ordering::SeqCst) == 1;
    if last && OWN.get().is_some() {
        // Recorded before the call, as MPI_Finalize is.
        before_finalize(ret, Op::SessionFinalize);
        tracer::untraced(close_own);
        return tracer::untraced(forward);
    }
    let rc = tracer::untraced(forward);
    if let Some(s) = Scope::enter(ret) {
        s.record(Op::SessionFinalize, rc, |_, _| {});
    }
    rc
}

/// Interposes `MPI_Session_init` ([`after_session_init`]).
///
/// # Safety
/// As for `MPI_Session_init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut MPI_Session,
) -> c_int {
    let ret = return_address!();
    // SAFETY: the application's arguments go unchanged to the library.
    let rc = tracer::untraced(|| unsafe { PMPI_Session_init(info, errhandler, session) });
    after_session_init(ret, rc);
    rc
}

/// Interposes `MPI_Session_finalize` ([`session_finalize`]).
///
/// # Safety
/// As for `MPI_Session_finalize`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    let ret = return_address!();
    // SAFETY: the application's argument goes unchanged to the library.
    session_finalize(ret, || unsafe { PMPI_Session_finalize(session) })
}
