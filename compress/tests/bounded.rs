//! Bounded memory: a loop-structured run keeps the queue at constant size
//! however long it runs, and a run that never repeats degrades gracefully
//! (bounded queue, overflow spilled) instead of running out of memory.

mod synth;

use std::io::Write;
use std::time::Instant;

use compress::{Compressor, Config};
use trace::TraceStats;
use trace::raw::event_line;

/// Pushes `events` and samples the compressor's size every `every` events.
fn run(
    c: &mut Compressor,
    events: impl Iterator<Item = trace::Event>,
    every: u64,
) -> Vec<TraceStats> {
    let mut samples = Vec::new();
    for (i, e) in events.enumerate() {
        c.push(&e).unwrap();
        if (i as u64 + 1).is_multiple_of(every) {
            if std::env::var_os("OUTLINE").is_some() {
                println!("  {}", c.outline());
            }
            samples.push(c.stats());
        }
    }
    samples
}

fn stencil_stays_constant(n: u64) {
    let t0 = Instant::now();
    let mut c = Compressor::new(synth::RANK, Config::default());
    let samples = run(&mut c, synth::stencil(n), n / 10);
    let secs = t0.elapsed().as_secs_f64();
    let trace = c.into_trace().unwrap();
    let s = trace.stats();
    println!(
        "stencil {n} events: {secs:.2} s ({:.1} M events/s), final {s:?}",
        n as f64 / secs / 1e6
    );
    for x in &samples {
        println!("  sample: nodes {} heap {} B", x.nodes, x.heap_bytes);
    }
    assert_eq!(s.events, n);
    assert_eq!(s.spilled, 0);
    // Init, then the loop nest, then the unfinished current iteration (which
    // the next events would fold into the nest): small and independent of n.
    let outline = trace.to_string();
    assert!(
        outline.starts_with("Init (Barrier ((Irecv Isend)x4 Waitall (Allreduce)x3)x"),
        "{outline}"
    );
    const MAX_NODES: usize = 24;
    assert!(s.nodes <= MAX_NODES, "{s:?}");
    assert!(samples.iter().all(|x| x.nodes <= MAX_NODES), "{samples:?}");
    // Parameters and timing stay bounded too, not only the node count. The
    // trace itself holds 16 KB; the rest is the buffer of the speculative
    // iteration of the outer loop (121 events, about 64 bytes each and
    // their parameters, at twice that in capacity): one iteration, whatever
    // the run's length.
    assert!(
        samples.iter().all(|x| x.heap_bytes < 64 << 10),
        "{samples:?}"
    );
}

#[test]
fn stencil_run_of_a_million_events_keeps_a_constant_queue() {
    stencil_stays_constant(1_000_000);
}

/// The 10^7-event version of the test above (run it with `--ignored`; it
/// takes a few seconds in release mode).
#[test]
#[ignore]
fn stencil_run_of_ten_million_events_keeps_a_constant_queue() {
    stencil_stays_constant(10_000_000);
}

#[test]
fn stencil_expansion_equals_the_raw_log() {
    let n = 200_000;
    let mut c = Compressor::new(synth::RANK, Config::default());
    for e in synth::stencil(n) {
        c.push(&e).unwrap();
    }
    let trace = c.into_trace().unwrap();
    let mut count = 0;
    for (got, want) in trace.expand().zip(synth::stencil(n)) {
        assert_eq!(event_line(&got), event_line(&want));
        count += 1;
    }
    assert_eq!(count, n);
}

/// A writer that only counts, standing in for the spill file.
#[derive(Default)]
struct Counter(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_million_distinct_events_spill_to_a_writer_with_bounded_memory() {
    let n = 1_000_000;
    let cfg = Config::default();
    let limit = cfg.queue_limit;
    let bytes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let t0 = Instant::now();
    let mut c = Compressor::with_spill_writer(0, cfg, Box::new(Counter(bytes.clone())));
    let samples = run(&mut c, synth::distinct(n), n / 10);
    let trace = c.into_trace().unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let s = trace.stats();
    println!(
        "distinct {n} events -> writer: {secs:.2} s, {} spilled bytes, final {s:?}",
        bytes.load(std::sync::atomic::Ordering::Relaxed)
    );
    for x in &samples {
        println!("  sample: nodes {} heap {} B", x.nodes, x.heap_bytes);
    }
    assert_eq!(s.spilled + s.events, n);
    assert_eq!(trace.spilled_to_writer(), s.spilled);
    assert!(samples.iter().all(|x| x.nodes <= limit + 1), "{samples:?}");
    let max_heap = samples.iter().map(|x| x.heap_bytes).max().unwrap();
    assert!(max_heap < 16 << 20, "{samples:?}");
    // Memory does not grow with the run: the last sample is no larger than
    // the early ones (allow for allocator slack in hash tables).
    assert!(
        samples[9].heap_bytes <= samples[1].heap_bytes * 2,
        "{samples:?}"
    );
}

#[test]
fn a_million_distinct_events_spill_compactly_to_memory() {
    let n = 1_000_000;
    let mut c = Compressor::new(0, Config::default());
    let samples = run(&mut c, synth::distinct(n), n / 10);
    let trace = c.into_trace().unwrap();
    let s = trace.stats();
    println!("distinct {n} events -> memory: final {s:?}");
    assert_eq!(s.events, n);
    assert!(samples.iter().all(|x| x.top_level <= 8193), "{samples:?}");
    // Around 20 bytes per spilled event rather than hundreds per node.
    assert!(s.heap_bytes < 48 * n as usize, "{s:?}");
    let mut count = 0u64;
    for (got, want) in trace.expand().zip(synth::distinct(n)) {
        assert_eq!(event_line(&got), event_line(&want));
        count += 1;
    }
    assert_eq!(count, n);
}

/// Compresses `events` with and without speculative iterations and checks
/// that both build the same trace, which expands to `events`; returns the
/// speculative one. `what` names the stream in failures.
fn same_trace_with_speculation(events: &[trace::Event], what: &str) -> trace::Trace {
    let build = |speculate: bool| {
        let mut c = Compressor::new(
            synth::RANK,
            Config {
                speculate,
                ..Config::default()
            },
        );
        for e in events {
            c.push(e).unwrap();
        }
        c.into_trace().unwrap()
    };
    let (on, off) = (build(true), build(false));
    assert_eq!(on.to_string(), off.to_string(), "{what}");
    let lines = |t: &trace::Trace| t.expand().map(|e| event_line(&e)).collect::<Vec<_>>();
    assert_eq!(
        lines(&on),
        events.iter().map(event_line).collect::<Vec<_>>(),
        "{what}"
    );
    assert_eq!(lines(&on), lines(&off), "{what}");
    on
}

/// NPB CG's loop nest, whose inner loops run twice per entry: speculation
/// takes nearly every event (the run is 3 times faster in the benchmark) and
/// builds the very trace the folding rules build, which stays small.
#[test]
fn cg_loops_that_run_twice_per_entry_give_the_same_small_trace_with_speculation() {
    let events: Vec<trace::Event> = synth::cg(200_000).collect();
    let on = same_trace_with_speculation(&events, "NPB CG");
    let s = on.stats();
    assert!(s.nodes <= 48 && s.spilled == 0, "{s:?}\n{on}");
}

/// The ping-pong benchmark's nest: a Barrier and a long inner loop of
/// round trips, repeated. Once the outer loop has formed, the round trips
/// extend the inner loop of its newest iteration, which the speculation
/// now does in place (the loop at the end of the newest top-level loop's
/// open path); it must build the very trace the folding rules build, for
/// inner loops shorter and longer than a speculative iteration may buffer.
#[test]
fn long_inner_loops_give_the_same_trace_with_speculation() {
    for (reps, iters) in [(3, 20_000), (5, 3), (40, 100), (2, 9_000)] {
        let events: Vec<trace::Event> = synth::pingpong(reps, iters).collect();
        let on = same_trace_with_speculation(&events, &format!("{reps} x {iters}"));
        assert!(on.stats().nodes <= 6, "{reps} x {iters}: {on}");
    }
}
