//! Extrapolation of synthetic traces built through the compressor (no MPI),
//! against the trace the same generator makes at the target size: loops
//! whose step count changes with the rank count, and errors.

use compress::{Compressor, Config, Event, MergedTrace, Op, Peer, Tag, TraceFile, Transfer};
use extrap::{Input, Method, Options};

fn transfer(world: u32, tag: i32) -> Transfer {
    Transfer {
        peer: Peer::Rank {
            world: world as i32,
            local: world as i32,
        },
        tag: Tag::Value(tag),
        count: 4,
        dsize: 8,
    }
}

/// A ring where each rank, per iteration, passes `P / 2` messages to its
/// right neighbour (a loop whose length grows with P) and then takes part
/// in an Allreduce.
fn ring(p: u32) -> TraceFile {
    let mut merged: Option<MergedTrace> = None;
    for r in 0..p {
        let mut c = Compressor::new(r as i32, Config::default());
        // As the tracer records them: calls on a communicator carry the
        // caller's rank in it, Init and Finalize none.
        let mut push = |mut e: Event| {
            if e.op.has_comm() {
                e.comm_rank = r as i32;
            }
            c.push(&e).unwrap();
        };
        push(Event::new(Op::Init));
        for _ in 0..3 {
            for _ in 0..p / 2 {
                let mut e = Event::new(Op::Sendrecv);
                e.site = 1;
                e.send = Some(transfer((r + 1) % p, 7));
                e.recv = Some(transfer((r + p - 1) % p, 7));
                push(e);
            }
            let mut e = Event::new(Op::Allreduce);
            e.site = 2;
            e.send = Some(Transfer::collective(1, 8));
            push(e);
        }
        push(Event::new(Op::Finalize));
        let t = MergedTrace::from_rank(&c.into_trace().unwrap());
        merged = Some(match merged {
            None => t,
            Some(m) => m.merge(t),
        });
    }
    let mut trace = merged.unwrap();
    trace.normalize();
    let mut f = TraceFile {
        trace,
        ..TraceFile::default()
    };
    f.meta.world_size = p;
    f
}

fn events(f: &TraceFile, r: u32) -> Vec<String> {
    f.trace
        .rank_trace(r)
        .unwrap()
        .expand()
        .map(|e| compress::raw::event_line(&e))
        .collect()
}

fn opts(ranks: u64) -> Options {
    Options {
        ranks,
        dims: None,
        timing: Method::Auto,
        lossy: false,
        snippet: None,
        plugin: None,
    }
}

#[test]
fn a_loop_that_grows_with_the_rank_count() {
    let inputs: Vec<Input> = [4, 6, 8]
        .iter()
        .map(|&p| Input {
            name: format!("ring.{p}"),
            file: ring(p),
        })
        .collect();
    let x = extrap::extrapolate(&inputs, &opts(14)).unwrap();
    let truth = ring(14);
    for r in 0..14 {
        assert_eq!(events(&x.file, r), events(&truth, r), "rank {r}");
    }
    assert!(
        x.report
            .fields
            .iter()
            .any(|f| f.field.contains("loop steps") && f.target == 7),
        "{:?}",
        x.report.fields
    );
}

#[test]
fn two_sizes_are_too_few_for_nothing_but_the_same_size_is_refused() {
    let a = Input {
        name: "a".into(),
        file: ring(6),
    };
    let b = Input {
        name: "b".into(),
        file: ring(6),
    };
    let e = extrap::extrapolate(&[a, b], &opts(12))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("both have 6 ranks"), "{e}");
    let e = extrap::extrapolate(&[], &opts(12))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("0 trace(s)"), "{e}");
}
