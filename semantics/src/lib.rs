//! What a trace means in MPI terms, once for every tool that reads one.
//!
//! * [`channel`]: MPI's non-overtaking rule, the one matching engine: the
//!   `k`-th send on a channel meets the `k`-th receive on it;
//! * [`comms`]: communicator lineage, which communicator a rank's id
//!   stands for, so that the members of one communicator (and only they)
//!   meet;
//! * [`walk`]: one rank's point-to-point calls as the sends and receives
//!   they put on their channels (wildcards resolved, persistent requests,
//!   matched probes, cancelled requests);
//! * [`check`]: `rankscale check`, which proves that a trace can run (with
//!   the one-sided epoch rules of a private module, `epochs`);
//! * [`timed`]: every event of a rank with its time on the trace's common
//!   time base, for the timeline exports.
//!
//! The check, the analysis' matching, the OTF2 export and replay's
//! pre-flight check all build on these, so that they agree on which calls
//! meet. Pure code: no MPI.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod channel;
pub mod check;
pub mod comms;
mod epochs;
pub mod timed;
pub mod walk;
