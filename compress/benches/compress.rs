//! Throughput of intra-node compression, in events per second, for a
//! stencil-like loop nest, NPB CG's loop nest and the ping-pong benchmark's
//! (long inner loops that extend the newest outer iteration) (the common case: almost
//! every event is merged into an existing loop), each also with the folding
//! rules alone (no speculative iterations), for random streams (little
//! structure; the candidate checks and, for distinct call sites, spilling
//! dominate), the cost of the slow-instance reservoirs on the stencil, and
//! the cost of one snapshot of a running recorder (what the tracer writes
//! periodically so that a dying job keeps its trace).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use compress::{Compressor, Config};

use trace::Event;

#[path = "../tests/synth/mod.rs"]
mod synth;

const N: usize = 200_000;

fn compress_all(events: &[Event], cfg: &Config) -> usize {
    let mut c = Compressor::new(synth::RANK, cfg.clone());
    for e in events {
        c.push(e).unwrap();
    }
    c.into_trace().unwrap().nodes().len()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("intra");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    let streams: [(&str, Vec<Event>); 5] = [
        ("stencil", synth::stencil(N as u64).collect()),
        ("npb_cg", synth::cg(N as u64).collect()),
        ("pingpong", synth::pingpong(5, N as u64 / 10).collect()),
        ("random16sites", synth::random(N as u64, 7).collect()),
        ("distinct_sites", synth::distinct(N as u64).collect()),
    ];
    let on = Config::default();
    for (name, events) in &streams {
        g.bench_function(*name, |b| {
            b.iter_batched(
                || (),
                |()| black_box(compress_all(events, &on)),
                BatchSize::SmallInput,
            )
        });
    }
    // The speculative iterations against the folding rules alone, on the
    // stencil and on CG's loops that run twice per entry.
    let rules_only = Config {
        speculate: false,
        ..Config::default()
    };
    for (name, events) in &streams[..2] {
        g.bench_function(format!("{name}_rules_only"), |b| {
            b.iter(|| black_box(compress_all(events, &rules_only)))
        });
    }
    // The cost of the slow-instance reservoirs: the stencil again without
    // them (K = 0), and with durations that grow, so that every event
    // enters its reservoir (the worst case; steady loops mostly reject).
    let off = Config {
        slow_instances: 0,
        ..Config::default()
    };
    g.bench_function("stencil_no_reservoir", |b| {
        b.iter(|| black_box(compress_all(&streams[0].1, &off)))
    });
    let growing: Vec<Event> = streams[0]
        .1
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut e = e.clone();
            e.time.dur_ns = i as u64;
            e
        })
        .collect();
    g.bench_function("stencil_growing_durations", |b| {
        b.iter(|| black_box(compress_all(&growing, &on)))
    });
    // Expansion back to events, for scale.
    let mut comp = Compressor::new(synth::RANK, Config::default());
    for e in &streams[0].1 {
        comp.push(e).unwrap();
    }
    let trace = comp.into_trace().unwrap();
    g.bench_function("expand_stencil", |b| {
        b.iter(|| black_box(trace.expand().count()))
    });
    g.finish();
    // What the tracer's snapshot thread does every RANKSCALE_FLUSH_S: a
    // snapshot of a running recorder (CG's nest, 200,000 events in), and
    // the file bytes it writes (one element = one snapshot).
    let mut g = c.benchmark_group("snapshot");
    g.throughput(Throughput::Elements(1));
    let mut rec = compress::RankRecorder::new(0, &compress::Recording::default());
    for e in &streams[1].1 {
        rec.push(e).unwrap();
    }
    g.bench_function("npb_cg_snapshot", |b| b.iter(|| black_box(rec.snapshot())));
    let snap = rec.snapshot();
    g.bench_function("npb_cg_snapshot_to_bytes", |b| {
        b.iter(|| black_box(snap.to_bytes().unwrap().len()))
    });
    // As the tracer packs its snapshots (zlib level 1).
    g.bench_function("npb_cg_snapshot_to_bytes_fast", |b| {
        b.iter(|| black_box(snap.to_bytes_with(trace::Packing::Fast).unwrap().len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
