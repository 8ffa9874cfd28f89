//! Helpers the extrapolation tests share.

use trace::TraceFile;

/// Rank `r`'s events of `f`, expanded, one raw-log line each: what two
/// traces are compared by, rank by rank.
pub fn events(f: &TraceFile, r: u32) -> Vec<String> {
    f.trace
        .rank_trace(r)
        .unwrap()
        .expand()
        .map(|e| trace::raw::event_line(&e))
        .collect()
}
