//! `RANKSCALE_TIMELINE=1` keeps every event's enter and leave time, keyed to
//! the rank's expansion. Checked on real runs of the sleep-law program,
//! whose computation between two MPI calls is a known `nanosleep`: the
//! timeline has one span per expanded event on every rank, its spans are
//! ordered, and the gap before every Allreduce is the program's sleep.

mod common;

use common::*;
use compress::{Op, TraceFile};

const SLEEP_US: u64 = 3000;
const ITERS: u64 = 40;

#[test]
fn the_timeline_holds_every_event_and_the_known_sleeps() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-timeline"));
        let path = dir.join("app.trace");
        let mut o = untraced();
        o.traced = true;
        o.env.push(("RANKSCALE_TRACE", path.display().to_string()));
        o.env.push(("RANKSCALE_TIMELINE", "1".into()));
        if imp == "mpich" {
            o.env.push(("RANKSCALE_YIELD", "1".into()));
        }
        let args: Vec<String> =
            ["const".to_string(), ITERS.to_string(), SLEEP_US.to_string()].into();
        let job = mpirun(imp, 4, &program(imp, "sleeplaw"), &args, &o);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
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
