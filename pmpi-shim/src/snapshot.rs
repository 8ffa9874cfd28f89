//! Traces that survive a dying job. A thread per traced rank writes the
//! rank's trace so far to `TRACE.d/rank-N` every `RANKSCALE_FLUSH_S`
//! seconds, and at once when a signal that ends jobs arrives (SIGTERM from
//! a batch system's time limit or from a launcher tearing the job down
//! after another rank died, SIGINT, SIGXCPU). `rankscale merge TRACE.d`
//! then merges whatever the ranks left.
//!
//! The thread never calls MPI and holds the tracer's lock only while the
//! compressed state is copied, so the application's calls wait at most that
//! long, once per interval. A run that reaches `MPI_Finalize` merges as
//! usual and removes the files.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::os::signals::{self, Wake};
use crate::tracer::Tracer;
use crate::warn::warn;

/// Installs the signal handlers and starts the thread. `None` (with a
/// warning) if either cannot be done: tracing goes on without snapshots.
pub(crate) fn start(t: &'static Tracer) -> Option<JoinHandle<()>> {
    if let Err(e) = signals::install() {
        warn(
            Some(t.rank),
            &format!("{e}; no snapshots of the trace will be written"),
        );
        return None;
    }
    let every = (t.config.flush_s > 0.0).then(|| Duration::from_secs_f64(t.config.flush_s));
    match std::thread::Builder::new()
        .name("rankscale-snapshots".into())
        .spawn(move || run(t, every))
    {
        Ok(h) => Some(h),
        Err(e) => {
            signals::uninstall();
            warn(
                Some(t.rank),
                &format!(
                    "cannot start the snapshot thread ({e}); no snapshots of the trace will be written"
                ),
            );
            None
        }
    }
}

fn run(t: &'static Tracer, every: Option<Duration>) {
    let mut next = every.map(|d| Instant::now() + d);
    loop {
        let wait = next.map(|n| n.saturating_duration_since(Instant::now()));
        match signals::wait(wait) {
            Wake::Again => {}
            Wake::Stop => return,
            Wake::Timeout => {
                if let (Some(n), Some(d)) = (next, every)
                    && Instant::now() >= n
                {
                    write(t, "periodic snapshot", true);
                    next = Some(Instant::now() + d);
                }
            }
            Wake::Signal(sig) => {
                write(t, &signals::name(sig), false);
                // Whatever became of the snapshot, the signal must still
                // end the process.
                if signals::is_fatal(sig) {
                    signals::die_of(sig);
                    return;
                }
            }
        }
    }
}

/// Takes a snapshot; a panic in the tracer stays in this thread (the
/// tracer's lock may then be poisoned, which turns tracing off with one
/// warning at the next call).
fn write(t: &Tracer, cause: &str, periodic: bool) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.snapshot(cause, periodic)));
}
