//! The operating-system membrane: the clocks, the loaded modules and the
//! signal handlers, through libc. Below the tracer and the MPI membrane
//! ([`crate::ffi`]), which both use it; it knows nothing of MPI.

pub(crate) mod signals;
pub(crate) mod sys;
