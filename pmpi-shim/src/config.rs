//! Tracer settings, read once from `RANKSCALE_*` environment variables at
//! `MPI_Init`. A bad value is reported with a one-line warning and the
//! default is used: a typo in a variable must never stop the application,
//! nor silently change what is recorded.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::warn::warn;

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
    /// `RANKSCALE_TIMELINE=1` (a switch: `1`/`true`/`yes`/`on` or
    /// `0`/`false`/`no`/`off`/empty, any case): the trace file also keeps every event's
    /// enter and leave time per rank (for instance-level analysis).
    pub timeline: bool,
    /// `RANKSCALE_STEPS=1` (a switch): the trace file also keeps each rank's MPI time
    /// along its events in a bounded number of buckets (the compact input
    /// of the desynchronisation analytics when there is no timeline).
    pub steps: bool,
    /// `RANKSCALE_SLOW_K=K` (default 8, 0 to 65,535): how many of its
    /// slowest executions each call of the trace keeps (rank, position,
    /// time), for slow-instance analysis without a timeline.
    pub slow_k: usize,
    /// `RANKSCALE_DEPTH=N` (default 1): call-site frames in the signature.
    pub depth: usize,
    /// `RANKSCALE_YIELD=1` (a switch): blocking calls wait by test-and-sleep, so that
    /// oversubscribed busy-polling MPI libraries make progress. The recorded
    /// events are the same with and without it.
    pub yield_wait: bool,
    /// `RANKSCALE_IO_PATHS=1` (a switch): the trace file also keeps the
    /// path of every file the run opens or deletes through MPI-IO. Off by
    /// default, since a path can name a user, a project or a data set; the
    /// events record only a hash of it, which says which opens name one
    /// file.
    pub io_paths: bool,
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
    /// `RANKSCALE_FAULT=slow-write@S`: rank 0 waits S seconds before it
    /// writes the merged trace, as a loaded node or a slow file system
    /// makes it wait. It proves that ranks which give up waiting for rank 0
    /// at `MPI_Finalize` leave MPI in a state it can finalize.
    pub slow_write_s: f64,
}

/// A fault `RANKSCALE_FAULT` injects (see [`Config::panic_at`] and
/// [`Config::slow_write_s`]).
enum Fault {
    Panic(u64),
    SlowWrite(f64),
}

/// Where a setting's value comes from: the environment in the tracer, a
/// table in the tests. Parsing through it keeps the parsing pure, so that
/// every accepted and refused value is unit-tested without touching the
/// process's environment (which other threads may read).
trait Lookup: Fn(&str) -> Option<OsString> {}
impl<F: Fn(&str) -> Option<OsString>> Lookup for F {}

/// The values a switch (`RANKSCALE_TIMELINE`, `RANKSCALE_STEPS`,
/// `RANKSCALE_YIELD`, `RANKSCALE_IO_PATHS`) takes, in any case; an empty value is off too.
const ON: [&str; 4] = ["1", "true", "yes", "on"];
/// See [`ON`].
const OFF: [&str; 4] = ["0", "false", "no", "off"];

/// Settings read from a [`Lookup`], with the warning of every value that
/// was ignored (each one line, the setting's default used instead).
struct Reader<L> {
    get: L,
    warnings: Vec<String>,
}

impl<L: Lookup> Reader<L> {
    /// The value of `name` as text; `None` when unset. A value that is not
    /// UTF-8 is ignored with a warning.
    fn text(&mut self, name: &str) -> Option<String> {
        let v = (self.get)(name)?;
        match v.into_string() {
            Ok(v) => Some(v),
            Err(v) => {
                self.ignore(name, &v.to_string_lossy(), "not UTF-8 text");
                None
            }
        }
    }

    fn ignore(&mut self, name: &str, value: &str, why: &str) {
        self.warnings
            .push(format!("ignoring {name}={value:?}: {why}"));
    }

    /// A number in the range `ok` accepts, else `default` (with a warning
    /// when the variable is set).
    fn number<T: std::str::FromStr>(
        &mut self,
        name: &str,
        default: T,
        ok: impl Fn(&T) -> bool,
    ) -> T {
        let Some(v) = self.text(name) else {
            return default;
        };
        match v.trim().parse::<T>() {
            Ok(x) if ok(&x) => x,
            _ => {
                self.ignore(name, &v, "not a valid value");
                default
            }
        }
    }

    /// A switch, off by default: on for `1`, `true`, `yes` or `on`, off for
    /// `0`, `false`, `no`, `off` or nothing (any case). Any other value
    /// leaves it off with a warning: `RANKSCALE_TIMELINE=2` or `=abc`
    /// turned it on before, and `RANKSCALE_YIELD=abc` was not said to be
    /// ignored.
    fn switch(&mut self, name: &str) -> bool {
        let Some(v) = self.text(name) else {
            return false;
        };
        let t = v.trim();
        if ON.iter().any(|w| t.eq_ignore_ascii_case(w)) {
            true
        } else if t.is_empty() || OFF.iter().any(|w| t.eq_ignore_ascii_case(w)) {
            false
        } else {
            self.ignore(
                name,
                &v,
                "expected 1, true, yes or on, or 0, false, no, off or nothing; left off",
            );
            false
        }
    }

    /// `RANKSCALE_FAULT`: `panic@N` (N at least 1), `slow-write@S` (S
    /// seconds, at most an hour) or nothing; anything else is ignored with
    /// a warning, so that a misspelt fault test does not pass for want of a
    /// fault.
    fn fault(&mut self) -> Option<Fault> {
        const NAME: &str = "RANKSCALE_FAULT";
        let v = self.text(NAME)?;
        let t = v.trim();
        if t.is_empty() {
            return None;
        }
        let panic = t
            .strip_prefix("panic@")
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| *n >= 1)
            .map(Fault::Panic);
        let slow = || {
            t.strip_prefix("slow-write@")
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|s| (0.0..=3600.0).contains(s))
                .map(Fault::SlowWrite)
        };
        let f = panic.or_else(slow);
        if f.is_none() {
            self.ignore(
                NAME,
                &v,
                "expected panic@N (N >= 1, the event to panic at) or slow-write@S (0 to 3600 \
                 seconds); no fault injected",
            );
        }
        f
    }
}

/// `RANKSCALE_TRACE` and `RANKSCALE_RAW` as [`Config::trace_file`] reads
/// them. Every rank must agree on whether the merge runs (it is
/// collective), so `MPI_Finalize` asks this even where the tracer never
/// started.
pub(crate) fn trace_file_from_env() -> Option<PathBuf> {
    trace_file_from(&|name: &str| std::env::var_os(name))
}

/// [`trace_file_from_env`] from any [`Lookup`].
fn trace_file_from(get: &impl Lookup) -> Option<PathBuf> {
    match get("RANKSCALE_TRACE") {
        Some(v) if v == "0" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ if get("RANKSCALE_RAW").is_some_and(|v| !v.is_empty()) => None,
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
    /// Reads the environment, printing one warning line for each value
    /// that is ignored.
    pub fn from_env() -> Config {
        let (config, warnings) = Config::from_lookup(|name: &str| std::env::var_os(name));
        for w in &warnings {
            warn(None, w);
        }
        config
    }

    /// The settings `get` gives, and the warning of each value ignored
    /// (its default used instead). Pure: [`Config::from_env`] passes the
    /// environment and prints the warnings.
    fn from_lookup(get: impl Lookup) -> (Config, Vec<String>) {
        let raw_dir = get("RANKSCALE_RAW")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let trace_file = trace_file_from(&get);
        let mut r = Reader {
            get,
            warnings: Vec::new(),
        };
        let config = Config {
            raw_dir,
            timeline: r.switch("RANKSCALE_TIMELINE"),
            steps: r.switch("RANKSCALE_STEPS"),
            trace_file,
            slow_k: r.number(
                "RANKSCALE_SLOW_K",
                compress::Config::default().slow_instances,
                |k| *k <= usize::from(u16::MAX),
            ),
            depth: r.number("RANKSCALE_DEPTH", 1usize, |d| (1..=64).contains(d)),
            yield_wait: r.switch("RANKSCALE_YIELD"),
            io_paths: r.switch("RANKSCALE_IO_PATHS"),
            yield_us: r.number("RANKSCALE_YIELD_US", 20u64, |d| *d <= 1_000_000),
            flush_s: r.number("RANKSCALE_FLUSH_S", 60.0f64, |s| (0.0..=1e9).contains(s)),
            merge_timeout_s: r.number("RANKSCALE_MERGE_TIMEOUT_S", 120.0f64, |s| {
                (0.0..=1e9).contains(s)
            }),
            panic_at: None,
            slow_write_s: 0.0,
        };
        let config = match r.fault() {
            Some(Fault::Panic(n)) => Config {
                panic_at: Some(n),
                ..config
            },
            Some(Fault::SlowWrite(s)) => Config {
                slow_write_s: s,
                ..config
            },
            None => config,
        };
        (config, r.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings and warnings of an environment given as pairs.
    fn read(env: &[(&str, &str)]) -> (Config, Vec<String>) {
        let env: Vec<(String, OsString)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_lookup(move |name: &str| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn switches_take_exactly_the_documented_words_and_warn_otherwise() {
        for name in [
            "RANKSCALE_TIMELINE",
            "RANKSCALE_STEPS",
            "RANKSCALE_YIELD",
            "RANKSCALE_IO_PATHS",
        ] {
            let get = |c: &Config| match name {
                "RANKSCALE_TIMELINE" => c.timeline,
                "RANKSCALE_STEPS" => c.steps,
                "RANKSCALE_IO_PATHS" => c.io_paths,
                _ => c.yield_wait,
            };
            let (c, w) = read(&[]);
            assert!(!get(&c) && w.is_empty(), "{name} unset");
            for on in ["1", "true", "TRUE", "Yes", "on", " on "] {
                let (c, w) = read(&[(name, on)]);
                assert!(get(&c) && w.is_empty(), "{name}={on:?}: {w:?}");
            }
            for off in ["", "0", "false", "No", "OFF"] {
                let (c, w) = read(&[(name, off)]);
                assert!(!get(&c) && w.is_empty(), "{name}={off:?}: {w:?}");
            }
            // Values that switched the feature on, or were dropped,
            // without a word.
            for bad in ["abc", "2", "-1", "y", "enable"] {
                let (c, w) = read(&[(name, bad)]);
                assert!(!get(&c), "{name}={bad:?} stays off");
                assert_eq!(
                    w,
                    [format!(
                        "ignoring {name}={bad:?}: expected 1, true, yes or on, or 0, false, no, \
                         off or nothing; left off"
                    )],
                );
            }
        }
    }

    #[test]
    fn a_fault_is_panic_at_a_positive_event_or_a_warning() {
        assert_eq!(read(&[("RANKSCALE_FAULT", "panic@7")]).0.panic_at, Some(7));
        let (c, w) = read(&[("RANKSCALE_FAULT", "slow-write@2.5")]);
        assert_eq!((c.panic_at, c.slow_write_s, w.len()), (None, 2.5, 0));
        let (c, w) = read(&[("RANKSCALE_FAULT", "")]);
        assert_eq!((c.panic_at, w.len()), (None, 0));
        for bad in [
            "garbage",
            "panic@",
            "panic@0",
            "panic@-3",
            "panic@x",
            "PANIC@5",
            "slow-write@",
            "slow-write@-1",
            "slow-write@3601",
            "slow-write@NaN",
        ] {
            let (c, w) = read(&[("RANKSCALE_FAULT", bad)]);
            assert_eq!((c.panic_at, c.slow_write_s), (None, 0.0), "{bad}");
            assert_eq!(
                w,
                [format!(
                    "ignoring RANKSCALE_FAULT={bad:?}: expected panic@N (N >= 1, the event to \
                     panic at) or slow-write@S (0 to 3600 seconds); no fault injected"
                )]
            );
        }
    }

    #[test]
    fn numbers_out_of_range_warn_and_keep_their_default() {
        let (c, w) = read(&[]);
        assert_eq!((c.depth, c.yield_us, c.flush_s), (1, 20, 60.0));
        assert!(w.is_empty());
        let (c, w) = read(&[("RANKSCALE_DEPTH", "65"), ("RANKSCALE_FLUSH_S", "NaN")]);
        assert_eq!((c.depth, c.flush_s), (1, 60.0));
        assert_eq!(
            w,
            [
                "ignoring RANKSCALE_DEPTH=\"65\": not a valid value",
                "ignoring RANKSCALE_FLUSH_S=\"NaN\": not a valid value",
            ]
        );
        let (c, w) = read(&[("RANKSCALE_DEPTH", " 3 "), ("RANKSCALE_SLOW_K", "0")]);
        assert_eq!((c.depth, c.slow_k), (3, 0));
        assert!(w.is_empty());
    }

    #[test]
    fn the_trace_file_follows_trace_and_raw() {
        let file = |env: &[(&str, &str)]| read(env).0.trace_file;
        assert_eq!(file(&[]), Some(PathBuf::from("rankscale.trace")));
        assert_eq!(file(&[("RANKSCALE_TRACE", "0")]), None);
        assert_eq!(
            file(&[("RANKSCALE_TRACE", "a.trace"), ("RANKSCALE_RAW", "raw")]),
            Some(PathBuf::from("a.trace"))
        );
        assert_eq!(file(&[("RANKSCALE_RAW", "raw")]), None);
        assert_eq!(
            read(&[("RANKSCALE_RAW", "raw")]).0.raw_dir,
            Some("raw".into())
        );
    }
}
