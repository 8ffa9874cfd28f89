//! Throughput of intra-node compression, in events per second, for a
//! stencil-like loop nest (the common case: almost every event is merged into
//! an existing loop) and for random streams (little structure; the candidate
//! checks and, for distinct call sites, spilling dominate).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use compress::{Compressor, Config, Event};

#[path = "../tests/synth/mod.rs"]
mod synth;

const N: usize = 200_000;

fn compress_all(events: &[Event]) -> usize {
    let mut c = Compressor::new(synth::RANK, Config::default());
    for e in events {
        c.push(e).unwrap();
    }
    c.into_trace().unwrap().nodes().len()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("intra");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    let streams: [(&str, Vec<Event>); 3] = [
        ("stencil", synth::stencil(N as u64).collect()),
        ("random16sites", synth::random(N as u64, 7).collect()),
        ("distinct_sites", synth::distinct(N as u64).collect()),
    ];
    for (name, events) in &streams {
        g.bench_function(*name, |b| {
            b.iter_batched(
                || (),
                |()| black_box(compress_all(events)),
                BatchSize::SmallInput,
            )
        });
    }
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
