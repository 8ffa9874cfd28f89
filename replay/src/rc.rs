//! MPI return codes as errors: shared by the replayer ([`crate::exec`])
//! and the causal gates' tokens ([`crate::tokens`]), below both.

use std::ffi::c_int;

use anyhow::{Result, bail};

/// Turns an MPI return code into an error naming the call, so that a
/// failed call stops the replay with a message instead of going on from a
/// state the trace does not describe.
pub(crate) fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        bail!("{what} failed with MPI error {rc}")
    }
}
