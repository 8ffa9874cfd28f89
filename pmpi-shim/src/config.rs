//! Tracer settings, read once from `RANKSCALE_*` environment variables at
//! `MPI_Init`. A bad value is reported with a warning and the default is used:
//! a typo in a variable must never stop the application.

use std::path::PathBuf;

use crate::tracer::warn;

/// The tracer's settings.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// `RANKSCALE_RAW=DIR`: write one canonical raw log per rank into DIR.
    pub raw_dir: Option<PathBuf>,
    /// Where rank 0 writes the merged trace: `RANKSCALE_TRACE=FILE`; without
    /// it `rankscale.trace` in the working directory, unless only
    /// `RANKSCALE_RAW` is set (raw logs alone); `RANKSCALE_TRACE=0` turns
    /// the trace file off.
    pub trace_file: Option<PathBuf>,
    /// `RANKSCALE_TIMELINE=1`: the trace file also keeps every event's
    /// enter and leave time per rank (for instance-level analysis).
    pub timeline: bool,
    /// `RANKSCALE_STEPS=1`: the trace file also keeps each rank's MPI time
    /// along its events in a bounded number of buckets (the compact input
    /// of the desynchronisation analytics when there is no timeline).
    pub steps: bool,
    /// `RANKSCALE_SLOW_K=K` (default 8, 0 to 65,535): how many of its
    /// slowest executions each call of the trace keeps (rank, position,
    /// time), for slow-instance analysis without a timeline.
    pub slow_k: usize,
    /// `RANKSCALE_DEPTH=N` (default 1): call-site frames in the signature.
    pub depth: usize,
    /// `RANKSCALE_YIELD=1`: blocking calls wait by test-and-sleep, so that
    /// oversubscribed busy-polling MPI libraries make progress. The recorded
    /// events are the same with and without it.
    pub yield_wait: bool,
    /// `RANKSCALE_YIELD_US` (default 20): the sleep between two tests.
    pub yield_us: u64,
    /// `RANKSCALE_FLUSH_S` (default 60, 0 = never): seconds between two
    /// snapshots of this rank's trace in `TRACE.d/rank-N`, so that a job
    /// that dies without `MPI_Finalize` keeps its trace up to the last one.
    /// Fatal signals (SIGTERM, SIGINT, SIGXCPU) and `MPI_Abort` write one
    /// whatever this says.
    pub flush_s: f64,
    /// `RANKSCALE_MERGE_TIMEOUT_S` (default 120): how long a rank waits at
    /// `MPI_Finalize` for every rank to join the trace merge. Ranks without
    /// the tracer (a partial preload) never join; the traced ones then give
    /// up, write their own file into `TRACE.d` and finish.
    pub merge_timeout_s: f64,
    /// `RANKSCALE_FAULT=panic@N`: fault injection for the robustness tests;
    /// the tracer panics while recording its N-th event. It proves that a
    /// tracer bug cannot cross the FFI boundary into the application.
    pub panic_at: Option<u64>,
}

fn parse<T: std::str::FromStr>(name: &str, default: T, ok: impl Fn(&T) -> bool) -> T {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => match v.trim().parse::<T>() {
            Ok(x) if ok(&x) => x,
            _ => {
                warn(None, &format!("ignoring {name}={v:?}: not a valid value"));
                default
            }
        },
    }
}

/// `RANKSCALE_TRACE` and `RANKSCALE_RAW` as [`Config::trace_file`] reads
/// them. Every rank must agree on whether the merge runs (it is
/// collective), so `MPI_Finalize` asks this even where the tracer never
/// started.
pub(crate) fn trace_file_from_env() -> Option<PathBuf> {
    match std::env::var_os("RANKSCALE_TRACE") {
        Some(v) if v == "0" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ if std::env::var_os("RANKSCALE_RAW").is_some_and(|v| !v.is_empty()) => None,
        _ => Some(PathBuf::from("rankscale.trace")),
    }
}

/// The directory of the per-rank files of a trace file (`TRACE.d`):
/// periodic snapshots, and the files ranks write when they cannot merge.
pub(crate) fn rank_dir(trace_file: &std::path::Path) -> PathBuf {
    let mut d = trace_file.as_os_str().to_owned();
    d.push(".d");
    PathBuf::from(d)
}

impl Config {
    /// Reads the environment.
    pub fn from_env() -> Config {
        let raw_dir = std::env::var_os("RANKSCALE_RAW")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let flag = |name: &str| {
            std::env::var(name).is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false" | "no"))
        };
        let trace_file = trace_file_from_env();
        Config {
            raw_dir,
            timeline: flag("RANKSCALE_TIMELINE"),
            steps: flag("RANKSCALE_STEPS"),
            trace_file,
            slow_k: parse(
                "RANKSCALE_SLOW_K",
                compress::Config::default().slow_instances,
                |k| *k <= usize::from(u16::MAX),
            ),
            depth: parse("RANKSCALE_DEPTH", 1usize, |d| (1..=64).contains(d)),
            yield_wait: flag("RANKSCALE_YIELD"),
            yield_us: parse("RANKSCALE_YIELD_US", 20u64, |d| *d <= 1_000_000),
            flush_s: parse("RANKSCALE_FLUSH_S", 60.0f64, |s| (0.0..=1e9).contains(s)),
            merge_timeout_s: parse("RANKSCALE_MERGE_TIMEOUT_S", 120.0f64, |s| {
                (0.0..=1e9).contains(s)
            }),
            panic_at: std::env::var("RANKSCALE_FAULT")
                .ok()
                .and_then(|v| v.strip_prefix("panic@").and_then(|n| n.parse().ok())),
        }
    }
}
