//! The shim's one voice: a warning line on stderr.

/// Prints a warning on stderr, prefixed so that it is clearly the tracer's.
///
/// The line goes out in one `write` call: launchers such as Open MPI's
/// forward each rank's stderr in chunks, and a line written piecemeal could
/// be interleaved with another rank's.
pub(crate) fn warn(rank: Option<i32>, msg: &str) {
    use std::io::Write;
    let line = match rank {
        Some(r) => format!("rankscale: warning: rank {r}: {msg}\n"),
        None => format!("rankscale: warning: {msg}\n"),
    };
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
