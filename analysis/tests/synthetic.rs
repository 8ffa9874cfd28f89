//! The analysis on traces built event by event, where every match, pattern
//! and wait is known by construction: wildcard receives resolved at their
//! completion, persistent requests, matched probes, collectives of
//! communicators that share an id, loops of exchanges, and the three kinds
//! of wait with hand-computed times. No MPI is involved: the trace goes
//! through the real compressor, merge and timeline.

use analysis::matching::match_run;
use analysis::patterns::find;
use analysis::run::Run;
use analysis::slow::{Cause, blame, waits};
use compress::{
    CommCreate, CommId, Compressor, Config, Event, Matched, MergedTrace, Meta, Op, Peer, ReqId,
    Tag, Timeline, TraceFile, Transfer,
};

/// One event with its enter and leave time (ns).
type Timed = (Event, u64, u64);

fn p2p(peer: Peer, tag: Tag, bytes: i64) -> Transfer {
    Transfer {
        peer,
        tag,
        count: bytes,
        dsize: 1,
    }
}

fn rank(r: i32) -> Peer {
    Peer::Rank { world: r, local: r }
}

fn ev(op: Op, me: i32) -> Event {
    let mut e = Event::new(op);
    if op.has_comm() {
        e.comm_rank = me;
    }
    e
}

fn send(op: Op, me: i32, to: i32, tag: i32, bytes: i64) -> Event {
    let mut e = ev(op, me);
    e.send = Some(p2p(rank(to), Tag::Value(tag), bytes));
    e
}

fn recv(op: Op, me: i32, from: Peer, tag: Tag, bytes: i64) -> Event {
    let mut e = ev(op, me);
    e.recv = Some(p2p(from, tag, bytes));
    e
}

fn with_req(mut e: Event, r: u64) -> Event {
    e.req = Some(ReqId(r));
    e
}

fn wait(op: Op, reqs: &[u64]) -> Event {
    let mut e = Event::new(op);
    e.reqs = reqs.iter().map(|&r| ReqId(r)).collect();
    e.done = e.reqs.clone();
    e
}

fn coll(op: Op, me: i32, comm: u32) -> Event {
    let mut e = ev(op, me);
    e.comm = CommId(comm);
    e.send = Some(Transfer::collective(1, 8));
    e
}

/// Builds a trace file of these ranks' timed events (times must not go
/// backwards within a rank).
fn file(ranks: Vec<Vec<Timed>>) -> TraceFile {
    let mut merged: Option<MergedTrace> = None;
    let mut timelines = Vec::new();
    for (r, evs) in ranks.into_iter().enumerate() {
        let mut c = Compressor::new(r as i32, Config::default());
        let mut tl = Timeline::new(r as u32, 1_000_000_000);
        let mut last = 0;
        for (mut e, a, b) in evs {
            e.time.enter_ns = a;
            e.time.dur_ns = b - a;
            e.time.compute_ns = a - last;
            last = b;
            c.push(&e).unwrap();
            tl.push(a, b);
        }
        let t = MergedTrace::from_rank(&c.into_trace().unwrap());
        merged = Some(match merged {
            Some(m) => m.merge(t),
            None => t,
        });
        timelines.push(tl);
    }
    let mut trace = merged.unwrap();
    trace.normalize();
    TraceFile {
        meta: Meta::default(),
        trace,
        timelines,
    }
}

/// Events at 1 us steps, each lasting 0.5 us.
fn untimed(evs: Vec<Event>) -> Vec<Timed> {
    evs.into_iter()
        .enumerate()
        .map(|(i, e)| (e, i as u64 * 1000, i as u64 * 1000 + 500))
        .collect()
}

#[test]
fn wildcards_persistent_requests_and_probes_are_matched() {
    // Rank 0: Irecv(ANY) resolved at its Waitany; a persistent receive
    // started twice; an Mprobe + Mrecv. Rank 1 and 2 send.
    let mut wr = wait(Op::Waitany, &[1]);
    wr.matched = vec![Matched {
        req: Some(ReqId(1)),
        source: 2,
        tag: 7,
    }];
    let mut mp = recv(Op::Mprobe, 0, Peer::Any, Tag::Any, 0);
    mp.message = Some(9);
    mp.matched = vec![Matched {
        req: None,
        source: 1,
        tag: 5,
    }];
    let mut mr = recv(Op::Mrecv, 0, Peer::Any, Tag::Any, 16);
    mr.message = Some(9);
    let r0 = vec![
        with_req(recv(Op::Irecv, 0, Peer::Any, Tag::Any, 8), 1),
        wr,
        with_req(recv(Op::RecvInit, 0, rank(1), Tag::Value(3), 4), 2),
        {
            let mut s = Event::new(Op::Start);
            s.reqs = vec![ReqId(2)];
            s
        },
        wait(Op::Wait, &[2]),
        {
            let mut s = Event::new(Op::Start);
            s.reqs = vec![ReqId(2)];
            s
        },
        wait(Op::Wait, &[2]),
        mp,
        mr,
    ];
    let r1 = vec![
        send(Op::Send, 1, 0, 3, 4),
        send(Op::Send, 1, 0, 3, 4),
        send(Op::Ssend, 1, 0, 5, 16),
    ];
    let r2 = vec![send(Op::Send, 2, 0, 7, 8)];
    let f = file(vec![untimed(r0), untimed(r1), untimed(r2)]);
    let run = Run::from_file(&f, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    assert_eq!((m.unmatched_sends, m.unmatched_recvs), (0, 0));
    let mut got: Vec<(usize, usize, usize, usize, usize, u64, bool)> = m
        .messages
        .iter()
        .map(|x| {
            (
                x.send.rank,
                x.send.post,
                x.recv.rank,
                x.recv.post,
                x.recv.done,
                x.bytes,
                x.sync,
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            // Rank 1's two sends match the two activations of the
            // persistent receive (posted by Start, completed by Wait).
            (1, 0, 0, 3, 4, 4, false),
            (1, 1, 0, 5, 6, 4, false),
            // The Ssend matches the Mrecv of the probed message.
            (1, 2, 0, 8, 8, 16, true),
            // Rank 2's send matches the wildcard Irecv, done at Waitany.
            (2, 0, 0, 0, 1, 8, false),
        ]
    );
}

#[test]
fn collectives_of_split_communicators_stay_apart() {
    // 4 ranks split into even and odd (both call the new communicator 2),
    // then each half calls a Barrier on it, and all call one on WORLD.
    let ranks: Vec<Vec<Timed>> = (0..4)
        .map(|r| {
            let mut split = coll(Op::CommSplit, r, 0);
            split.send = None;
            let mut cc = CommCreate::new(Some(CommId(2)), 2);
            cc.color = Some(r % 2);
            cc.key = Some(r);
            split.create = Some(Box::new(cc));
            let mut b = coll(Op::Barrier, r / 2, 2);
            b.send = None;
            let mut w = coll(Op::Barrier, r, 0);
            w.send = None;
            untimed(vec![split, b, w])
        })
        .collect();
    let f = file(ranks);
    let run = Run::from_file(&f, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    let mut sizes: Vec<(Op, Vec<usize>)> = m
        .collectives
        .iter()
        .map(|c| (c.op, c.members.iter().map(|e| e.rank).collect()))
        .collect();
    sizes.sort();
    assert_eq!(
        sizes,
        vec![
            (Op::Barrier, vec![0, 1, 2, 3]),
            (Op::Barrier, vec![0, 2]),
            (Op::Barrier, vec![1, 3]),
            (Op::CommSplit, vec![0, 1, 2, 3]),
        ]
    );
}

#[test]
fn a_loop_of_exchanges_is_one_pattern_with_one_instance_per_iteration() {
    // Two ranks, 5 iterations of Irecv, Isend, Waitall; then an Allreduce.
    let ranks: Vec<Vec<Timed>> = (0..2)
        .map(|r| {
            let peer = 1 - r;
            let mut evs = Vec::new();
            for it in 0..5u64 {
                evs.push(with_req(
                    recv(Op::Irecv, r, rank(peer), Tag::Value(0), 64),
                    2 * it,
                ));
                evs.push(with_req(send(Op::Isend, r, peer, 0, 64), 2 * it + 1));
                evs.push(wait(Op::Waitall, &[2 * it, 2 * it + 1]));
            }
            evs.push(coll(Op::Allreduce, r, 0));
            untimed(evs)
        })
        .collect();
    let f = file(ranks);
    let run = Run::from_file(&f, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    let p = find(&run, &m);
    assert_eq!(p.patterns.len(), 2);
    let ex = &p.patterns[0];
    assert_eq!(ex.instances.len(), 5);
    assert_eq!((ex.np, ex.ne), (2, 6));
    assert_eq!(
        ex.strings,
        vec![(0, "iR1·iS1·Wa".to_string()), (1, "iR0·iS0·Wa".to_string())]
    );
    assert_eq!(
        p.patterns[1].strings,
        vec![(0, "Allreduce".into()), (1, "Allreduce".into())]
    );
    assert!(
        p.instances
            .iter()
            .all(|i| i.bytes == if i.pattern == 0 { 128 } else { 16 })
    );
}

#[test]
fn waits_are_measured_as_defined() {
    // Late sender: rank 0's Recv enters at 100, rank 1's Send at 400.
    // Late receiver: rank 1's Ssend enters at 1000, rank 0's Recv at 1700
    // and the Ssend returns at 1800.
    // Collective: arrivals 2000 (rank 0), 2600 (rank 1), all leave at 2700.
    let r0 = vec![
        (recv(Op::Recv, 0, rank(1), Tag::Value(0), 8), 100, 450),
        (recv(Op::Recv, 0, rank(1), Tag::Value(1), 8), 1700, 1800),
        (coll(Op::Allreduce, 0, 0), 2000, 2700),
    ];
    let r1 = vec![
        (send(Op::Send, 1, 0, 0, 8), 400, 420),
        (send(Op::Ssend, 1, 0, 1, 8), 1000, 1800),
        (coll(Op::Allreduce, 1, 0), 2600, 2700),
    ];
    let f = file(vec![r0, r1]);
    let run = Run::from_file(&f, &mut |_, _| {}).unwrap();
    assert!(run.timed);
    let m = match_run(&run);
    let p = find(&run, &m);
    let mut all: Vec<(Cause, usize, usize, i64)> = p
        .instances
        .iter()
        .flat_map(|i| waits(&run, &m, i))
        .map(|w| (w.cause, w.waiter, w.culprit, w.ns))
        .collect();
    all.sort();
    assert_eq!(
        all,
        vec![
            (Cause::LateSender, 0, 1, 300),
            (Cause::LateReceiver, 1, 0, 700),
            (Cause::LateCollective, 0, 1, 600),
        ]
    );
    let every: Vec<_> = p
        .instances
        .iter()
        .flat_map(|i| waits(&run, &m, i))
        .collect();
    // Rank 1 caused 300 + 600 ns, rank 0 700 ns.
    assert_eq!(blame(&every), Some((1, Cause::LateCollective, 900)));
}

#[test]
fn a_timeline_that_does_not_fit_the_events_is_an_error() {
    let mut f = file(vec![untimed(vec![
        send(Op::Send, 0, 0, 0, 1),
        recv(Op::Recv, 0, rank(0), Tag::Value(0), 1),
    ])]);
    let mut short = Timeline::new(0, 0);
    short.push(0, 1);
    f.timelines = vec![short];
    let e = Run::from_file(&f, &mut |_, _| {}).unwrap_err().to_string();
    assert!(e.contains("rank 0"), "{e}");
}
