//! `RANKSCALE_TIMELINE=1` keeps every event's enter and leave time, keyed to
//! the rank's expansion. Checked on real runs of the sleep-law program,
//! whose computation between two MPI calls is a known `nanosleep`: the
//! timeline has one span per expanded event on every rank, its spans are
//! ordered, and the gap before every Allreduce is the program's sleep.

mod common;

use common::*;
use std::collections::BTreeMap;

use trace::{Op, TraceFile};

/// A slice of a Perfetto export: start and duration in microseconds, name.
type Slice = (f64, f64, String);

const SLEEP_US: u64 = 3000;
const ITERS: u64 = 40;

/// Traces the sleep-law program on 4 ranks with its timeline, `iters`
/// Allreduces each after a sleep of `law` around `sleep_us`; returns the
/// trace file.
fn sleeplaw_with_timeline(
    imp: &str,
    dir: &std::path::Path,
    law: &str,
    iters: u64,
    sleep_us: u64,
) -> std::path::PathBuf {
    let path = dir.join("app.trace");
    let mut o = untraced();
    o.traced = true;
    o.env.push(("RANKSCALE_TRACE", path.display().to_string()));
    o.env.push(("RANKSCALE_TIMELINE", "1".into()));
    if imp == "mpich" {
        o.env.push(("RANKSCALE_YIELD", "1".into()));
    }
    let args: Vec<String> = [law.to_string(), iters.to_string(), sleep_us.to_string()].into();
    let job = mpirun(imp, 4, &program(imp, "sleeplaw"), &args, &o);
    assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
    path
}

#[test]
fn the_timeline_holds_every_event_and_the_known_sleeps() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-timeline"));
        let path = sleeplaw_with_timeline(imp, &dir, "const", ITERS, SLEEP_US);
        let f = TraceFile::read(&path).unwrap();
        assert_eq!(f.timelines.len(), 4, "{imp}: one timeline per rank");
        let mut gaps = Vec::new();
        let mut epochs = Vec::new();
        for rank in 0..4u32 {
            let events: Vec<_> = f.trace.rank_trace(rank).unwrap().expand().collect();
            let tl = f.timeline(rank).expect("timeline of every rank");
            let spans = tl.spans().unwrap();
            assert_eq!(spans.len(), events.len(), "{imp} rank {rank}");
            for w in spans.windows(2) {
                assert!(w[0].leave <= w[1].enter, "{imp} rank {rank}: {w:?}");
            }
            for (i, e) in events.iter().enumerate().skip(1) {
                if e.op == Op::Allreduce {
                    gaps.push(spans[i].enter - spans[i - 1].leave);
                }
            }
            epochs.push(tl.epoch_ns);
        }
        assert_eq!(gaps.len() as u64, 4 * ITERS);
        gaps.sort_unstable();
        let median = gaps[gaps.len() / 2] as f64 / 1e3;
        // nanosleep never returns early; a loaded 2-core machine may add
        // a little.
        assert!(
            gaps[0] >= SLEEP_US * 1000 && median < SLEEP_US as f64 * 1.10,
            "{imp}: gaps before Allreduce: min {} us, median {median} us, want {SLEEP_US} us",
            gaps[0] / 1000
        );
        // The ranks started within a second of each other on the wall clock.
        let spread = epochs.iter().max().unwrap() - epochs.iter().min().unwrap();
        assert!(spread < 1_000_000_000, "{imp}: epochs {epochs:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `rankscale export --perfetto` against the trace it came from: valid
/// trace-event JSON, one process track per rank, one complete slice per
/// expanded event with the call's name in order, every slice at its
/// timeline span on the common time base (the earliest rank's zero), and
/// the slices of a thread in sequence, never overlapping. Without a
/// timeline the same holds with estimated times, and the file says so. A
/// rank that is not in the trace is an error that leaves no file.
#[test]
fn the_perfetto_export_has_one_slice_per_call_at_its_timeline_span() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-perfetto"));
        let path = sleeplaw_with_timeline(imp, &dir, "linear", 12, 500);
        let f = TraceFile::read(&path).unwrap();
        let zero = f.timelines.iter().map(|t| t.epoch_ns).min().unwrap();

        let export = |trace: &std::path::Path, extra: &[&str]| -> serde_json::Value {
            let json = dir.join("app.json");
            let mut a = vec!["export", trace.to_str().unwrap(), "--perfetto", "-o"];
            a.push(json.to_str().unwrap());
            a.extend(extra);
            let out = rankscale(&a);
            assert!(out.status.success(), "{imp}: {}", text(&out.stderr));
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
        };
        // Slices per (rank, thread), checked for order, and their names.
        let slices = |v: &serde_json::Value| {
            let mut by: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
            for e in v["traceEvents"].as_array().unwrap() {
                if e["ph"] == "X" {
                    let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
                    assert!(ts >= 0.0 && dur >= 0.0, "{imp}: {e}");
                    let name = e["name"].as_str().unwrap().to_string();
                    let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                    by.entry(key).or_default().push((ts, dur, name));
                }
            }
            for (key, s) in &by {
                for w in s.windows(2) {
                    // To the nanosecond the format keeps.
                    assert!(
                        w[0].0 + w[0].1 <= w[1].0 + 0.0015,
                        "{imp} {key:?}: {:?} overlaps {:?}",
                        w[0],
                        w[1]
                    );
                }
            }
            by
        };

        let v = export(&path, &[]);
        assert_eq!(v["otherData"]["timing"], "timeline", "{imp}");
        assert_eq!(v["otherData"]["ranks"], 4, "{imp}");
        let by = slices(&v);
        let names: Vec<_> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["rank 0", "rank 1", "rank 2", "rank 3"], "{imp}");
        for rank in 0..4u32 {
            let events: Vec<_> = f.trace.rank_trace(rank).unwrap().expand().collect();
            let tl = f.timeline(rank).unwrap();
            let spans = tl.spans().unwrap();
            let s = &by[&(u64::from(rank), 0)];
            assert_eq!(
                s.len(),
                events.len(),
                "{imp} rank {rank}: one slice per event"
            );
            for ((ev, sp), (ts, dur, name)) in events.iter().zip(&spans).zip(s) {
                assert_eq!(*name, format!("MPI_{}", ev.op.name()), "{imp} rank {rank}");
                let enter = (tl.epoch_ns - zero + sp.enter) as f64 / 1e3;
                assert!(
                    (ts - enter).abs() < 0.0015,
                    "{imp} rank {rank}: {ts} us, span at {enter} us"
                );
                assert!(
                    (dur - sp.duration() as f64 / 1e3).abs() < 0.0015,
                    "{imp} rank {rank}"
                );
            }
        }

        // Without the timeline: estimated times, the same slices.
        let mut bare = TraceFile::read(&path).unwrap();
        bare.timelines.clear();
        let bare_path = dir.join("bare.trace");
        bare.write(&bare_path).unwrap();
        let v = export(&bare_path, &["--ranks", "1-2", "--max-events", "10"]);
        assert!(
            v["otherData"]["timing"]
                .as_str()
                .unwrap()
                .starts_with("estimated"),
            "{imp}: {}",
            v["otherData"]
        );
        let by = slices(&v);
        assert_eq!(by.keys().map(|k| k.0).collect::<Vec<_>>(), [1, 2], "{imp}");
        assert!(by.values().all(|s| s.len() == 10), "{imp}: --max-events 10");

        // A rank the trace does not have: exit 1, no file.
        let json = dir.join("none.json");
        let out = rankscale(&[
            "export",
            path.to_str().unwrap(),
            "--perfetto",
            "--ranks",
            "7",
            "-o",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{imp}");
        assert!(
            text(&out.stderr).contains("rank 7 is not in the trace"),
            "{imp}"
        );
        assert!(!json.exists(), "{imp}: no file on an error");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
