//! The analysis on traces built event by event, where every match, pattern
//! and wait is known by construction: wildcard receives resolved at their
//! completion, persistent requests, matched probes, collectives of
//! communicators that share an id, loops of exchanges, and the three kinds
//! of wait with hand-computed times. No MPI is involved: the trace goes
//! through the real compressor, merge and timeline.

use analysis::clc::{ClcOptions, correct};
use analysis::matching::match_run;
use analysis::patterns::find;
use analysis::run::Run;
use analysis::slow::{Cause, WaitIndex, blame};
use analysis::waitstates::{Metric, WaitState, summarize, wait_states};
use compress::{Compressor, Config};
use trace::{
    CommCreate, CommId, Event, Matched, MergedTrace, Meta, Op, Peer, ReqId, Tag, Timeline,
    TraceFile, Transfer,
};

/// One event with its enter and leave time (ns).
type Timed = (Event, u64, u64);

fn p2p(peer: Peer, tag: Tag, bytes: i64) -> Transfer {
    Transfer {
        peer,
        tag,
        count: bytes,
        dsize: 1,
        dtype: trace::Datatype::UNKNOWN,
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
        let t = compress::merge::from_rank(&c.into_trace().unwrap());
        merged = Some(match merged {
            Some(m) => compress::merge::traces(m, t),
            None => t,
        });
        timelines.push(tl);
    }
    let mut trace = merged.unwrap();
    trace.normalize();
    TraceFile {
        meta: Meta {
            world_size: trace.ranks().max().map_or(1, |m| m + 1),
            ..Meta::default()
        },
        trace,
        timelines,
        series: Vec::new(),
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
    let run = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    assert_eq!((m.unmatched_sends, m.unmatched_recvs), (0, 0));
    let mut got: Vec<(u32, u32, u32, u32, u32, u64, bool)> = m
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
    let run = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    let mut sizes: Vec<(Op, Vec<usize>)> = m
        .collectives
        .iter()
        .map(|c| (c.op, c.members.iter().map(|e| e.rank as usize).collect()))
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
    let run = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {}).unwrap();
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
    let run = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {}).unwrap();
    assert!(run.timed);
    let m = match_run(&run);
    let p = find(&run, &m);
    let states = wait_states(&run, &m);
    let wi = WaitIndex::new(&states);
    let mut all: Vec<(Cause, usize, usize, i64)> = p
        .instances
        .iter()
        .flat_map(|i| wi.waits(i))
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
    let every: Vec<_> = p.instances.iter().flat_map(|i| wi.waits(i)).collect();
    // Rank 1 caused 300 + 600 ns, rank 0 700 ns.
    assert_eq!(blame(&every), Some((1, Cause::LateCollective, 900)));
    // The report's totals per kind and culprit: the same three waits.
    let rep = analysis::analyze(&f, &analysis::Options::default(), &mut |_, _, _| {}).unwrap();
    let totals: Vec<(Cause, u32, i64, usize)> = rep
        .waits
        .iter()
        .map(|w| (w.cause, w.rank, w.ns, w.count))
        .collect();
    assert_eq!(
        totals,
        vec![
            (Cause::LateReceiver, 0, 700, 1),
            (Cause::LateCollective, 1, 600, 1),
            (Cause::LateSender, 1, 300, 1),
        ]
    );
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
    let e = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank 0"), "{e}");
}

/// A wait state as (metric, waiter, event, culprit, ns).
type StateRow = (Metric, usize, usize, usize, i64);

/// The wait states of a synthetic run, also as sorted rows.
fn states(ranks: Vec<Vec<Timed>>) -> (Run, Vec<WaitState>, Vec<StateRow>) {
    let f = file(ranks);
    let run = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    let ws = wait_states(&run, &m);
    let mut v: Vec<_> = ws
        .iter()
        .map(|w| {
            let ix = |v: u32| v as usize;
            (w.metric, ix(w.waiter), ix(w.event), ix(w.culprit), w.ns)
        })
        .collect();
    v.sort();
    (run, ws, v)
}

fn probe(op: Op, me: i32, from: i32, tag: i32) -> Event {
    let mut e = recv(op, me, rank(from), Tag::Value(tag), 0);
    e.recv = Some(p2p(rank(from), Tag::Value(tag), 0));
    e.matched = vec![Matched {
        req: None,
        source: from,
        tag,
    }];
    if op == Op::Iprobe {
        e.flag = Some(true);
    }
    e
}

#[test]
fn a_probe_carries_the_late_sender_and_the_receive_after_it_none() {
    // Haus 2024 Fig. 3a: rank 1 probes at 100 and finds the message when
    // rank 0's Send begins at 2100; its Recv after the probe does not wait.
    // Then an unsuccessful Iprobe (flag false) and a successful one, then
    // a second probe of the same message (repeated: no wait counted).
    let mut miss = recv(Op::Iprobe, 1, rank(0), Tag::Value(2), 0);
    miss.flag = Some(false);
    let r0 = vec![
        (send(Op::Send, 0, 1, 1, 8), 2100, 2150),
        (send(Op::Send, 0, 1, 2, 8), 5000, 5050),
    ];
    let r1 = vec![
        (probe(Op::Probe, 1, 0, 1), 100, 2200),
        (recv(Op::Recv, 1, rank(0), Tag::Value(1), 8), 2300, 2400),
        (miss, 3000, 3010),
        (probe(Op::Iprobe, 1, 0, 2), 5100, 5110),
        (probe(Op::Probe, 1, 0, 2), 5200, 5210),
        (recv(Op::Recv, 1, rank(0), Tag::Value(2), 8), 5300, 5400),
    ];
    let (_, _, v) = states(vec![r0, r1]);
    assert_eq!(v, vec![(Metric::LateSender, 1, 0, 0, 2000)]);
}

#[test]
fn a_late_sender_is_wrong_order_when_an_earlier_sent_message_waited() {
    // Rank 1 receives from 0 (sent at 5000) and then from 2 (sent at 200):
    // its first receive waits 4900 while rank 2's message was ready.
    let r0 = vec![(send(Op::Send, 0, 1, 1, 8), 5000, 5050)];
    let r1 = vec![
        (recv(Op::Recv, 1, rank(0), Tag::Value(1), 8), 100, 5100),
        (recv(Op::Recv, 1, rank(2), Tag::Value(2), 8), 5200, 5300),
    ];
    let r2 = vec![(send(Op::Send, 2, 1, 2, 8), 200, 250)];
    let (_, _, v) = states(vec![r0, r1, r2]);
    assert_eq!(v, vec![(Metric::LateSenderWrongOrder, 1, 0, 0, 4900)]);
}

#[test]
fn a_synchronous_send_shows_late_receiver_while_the_probe_shows_late_sender() {
    // Haus 2024 Fig. 3b: rank 0 enters Ssend at 1000 and returns at 3100;
    // rank 1 probes from 0 to 1050 (late sender 1000), sleeps, and enters
    // its Recv at 3000 (late receiver 2000 on rank 0).
    let r0 = vec![(send(Op::Ssend, 0, 1, 3, 8), 1000, 3100)];
    let r1 = vec![
        (probe(Op::Probe, 1, 0, 3), 0, 1050),
        (recv(Op::Recv, 1, rank(0), Tag::Value(3), 8), 3000, 3100),
    ];
    let (_, _, v) = states(vec![r0, r1]);
    assert_eq!(
        v,
        vec![
            (Metric::LateSender, 1, 0, 0, 1000),
            (Metric::LateReceiver, 0, 0, 1, 2000),
        ]
    );
}

#[test]
fn collective_wait_states_follow_their_roots() {
    // Three ranks. Barrier: rank 2 arrives last (at 900); Bcast root 2
    // late (root at 2500); Reduce root 0 early (root at 3000, first
    // non-root at 3400); Allgather: rank 1 last (at 4800).
    let mut bcast = |me| {
        let mut e = coll(Op::Bcast, me, 0);
        e.root = Some(2);
        e
    };
    let b: Vec<Event> = (0..3).map(&mut bcast).collect();
    let reduce = |me| {
        let mut e = coll(Op::Reduce, me, 0);
        e.root = Some(0);
        e
    };
    let r0 = vec![
        (coll(Op::Barrier, 0, 0), 100, 950),
        (b[0].clone(), 2000, 2600),
        (reduce(0), 3000, 3500),
        (coll(Op::Allgather, 0, 0), 4000, 4900),
    ];
    let r1 = vec![
        (coll(Op::Barrier, 1, 0), 300, 950),
        (b[1].clone(), 2200, 2600),
        (reduce(1), 3400, 3450),
        (coll(Op::Allgather, 1, 0), 4800, 4900),
    ];
    let r2 = vec![
        (coll(Op::Barrier, 2, 0), 900, 950),
        (b[2].clone(), 2500, 2550),
        (reduce(2), 3600, 3650),
        (coll(Op::Allgather, 2, 0), 4100, 4900),
    ];
    let (run, ws, v) = states(vec![r0, r1, r2]);
    assert_eq!(
        v,
        vec![
            (Metric::WaitAtBarrier, 0, 0, 2, 800),
            (Metric::WaitAtBarrier, 1, 0, 2, 600),
            (Metric::WaitAtNxN, 0, 3, 1, 800),
            (Metric::WaitAtNxN, 2, 3, 1, 700),
            (Metric::LateBroadcast, 0, 1, 2, 500),
            (Metric::LateBroadcast, 1, 1, 2, 300),
            (Metric::EarlyReduce, 0, 2, 1, 400),
        ]
    );
    let s = summarize(&run, &ws);
    let total = |m: Metric| s.metrics.iter().find(|t| t.metric == m).unwrap().ns;
    assert_eq!(total(Metric::WaitAtBarrier), 1400);
    assert_eq!(total(Metric::LateSender), 0);
    assert_eq!(s.ranks[0].ns, 800 + 800 + 500 + 400);
    assert_eq!(
        s.sites.iter().map(|x| x.ns).sum::<i64>(),
        1400 + 1500 + 800 + 400
    );
}

/// The run of `f` after the clock correction (latency 0, this `gamma`).
fn corrected(f: &TraceFile, gamma: f64) -> (Run, analysis::clc::ClcReport) {
    let mut run = Run::from_file(f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {}).unwrap();
    let m = match_run(&run);
    let opts = ClcOptions {
        min_latency_ns: 0,
        gamma,
    };
    let rep = correct(&mut run, &m, opts);
    (run, rep)
}

/// Checks that every rank's timestamps still go forward.
fn ordered(run: &Run) -> bool {
    run.ranks.iter().all(|r| {
        r.spans
            .iter()
            .flat_map(|s| [s.0, s.1])
            .collect::<Vec<_>>()
            .is_sorted()
    })
}

#[test]
fn a_probe_that_ends_before_its_send_begins_is_corrected() {
    // Haus 2024 §4.2.2: rank 1's probe returns at 4000 by its clock, before
    // rank 0's Send begins at 5000; its Recv follows, and much later it
    // sends back (received by rank 0 well after: no violation there).
    let r0 = vec![
        (send(Op::Send, 0, 1, 1, 8), 5000, 5100),
        (recv(Op::Recv, 0, rank(1), Tag::Value(9), 8), 20_000, 40_000),
    ];
    let r1 = vec![
        (probe(Op::Probe, 1, 0, 1), 1000, 4000),
        (recv(Op::Recv, 1, rank(0), Tag::Value(1), 8), 4200, 4300),
        (send(Op::Send, 1, 0, 9, 8), 30_000, 30_100),
    ];
    let (run, rep) = corrected(&file(vec![r0, r1]), ClcOptions::default().gamma);
    assert_eq!(
        (rep.checked, rep.violations, rep.remaining),
        (2, 1, 0),
        "{rep:?}"
    );
    assert!(ordered(&run));
    let r1 = &run.ranks[1].spans;
    // The probe now ends at the send's start; the following Recv moved
    // with it, keeping its 200 ns gap and 100 ns length times gamma (0.99),
    // and the shift decays by 1 % of the time elapsed until the Send:
    // 5297 + 0.99 * (30000 - 4300) = 30740.
    assert_eq!(r1[0].1, 5000);
    assert_eq!(r1[1], (5000 + 198, 5198 + 99));
    assert_eq!(r1[2], (30_740, 30_740 + 99));
    assert_eq!(
        run.ranks[0].spans[0],
        (5000, 5100),
        "the sender does not move"
    );
    // The rank's first timestamp anchors the backward ramp: the probe's
    // enter stays.
    assert_eq!(r1[0].0, 1000);
}

#[test]
fn a_rank_with_a_shifted_clock_is_corrected_with_its_intervals_kept() {
    // A ping-pong of 20 rounds; rank 1's clock runs 3 us behind, so every
    // message from rank 0 seems to arrive before it was sent.
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    let skew = 3000;
    for i in 0..20u64 {
        let t = 10_000 + i * 10_000;
        r0.push((send(Op::Send, 0, 1, 0, 8), t, t + 200));
        r1.push((
            recv(Op::Recv, 1, rank(0), Tag::Value(0), 8),
            t - skew,
            t + 500 - skew,
        ));
        r1.push((send(Op::Send, 1, 0, 1, 8), t + 1000 - skew, t + 1200 - skew));
        r0.push((
            recv(Op::Recv, 0, rank(1), Tag::Value(1), 8),
            t + 300,
            t + 1300,
        ));
    }
    let f = file(vec![r0, r1]);
    let before = Run::from_file(&f, trace::Limits::DEFAULT_MEMORY, &mut |_, _| {})
        .unwrap()
        .ranks[1]
        .spans
        .clone();
    let (run, rep) = corrected(&f, 1.0);
    assert_eq!(rep.checked, 40);
    assert_eq!(rep.violations, 20, "{rep:?}");
    assert_eq!(rep.remaining, 0, "{rep:?}");
    assert!(ordered(&run));
    // With gamma = 1 the shift stays once made: after the first jump
    // rank 1 runs 2500 ns later than recorded (its receive now ends at
    // the send's start), every later interval unchanged.
    let after = &run.ranks[1].spans;
    for k in 1..after.len() {
        assert_eq!(after[k].0 - before[k].0, 2500, "event {k}: {after:?}");
    }
    assert!(rep.intervals_changed <= 2, "{rep:?}");
    // The default gamma decays the shift, so later receives jump again,
    // but every violation is still gone.
    let (run, rep) = corrected(&f, ClcOptions::default().gamma);
    assert_eq!((rep.violations, rep.remaining), (20, 0), "{rep:?}");
    assert!(ordered(&run));
}

#[test]
fn backward_amortisation_ramps_earlier_events_without_new_violations() {
    // Rank 1 receives from 0 at 0-100 (fine), sends to 2 at 1000-1100
    // (rank 2 receives until 1200), then its receive from 0 ends at 2100,
    // before rank 0's Send begins at 4000: a jump of 1900 at 2100. The ramp
    // from 100 (the previous receive's end) to 2100 (the jump) would move
    // the Send's enter by 1900 * 900 / 2000 = 855, but its receive ends at
    // 1200: the ramp is scaled to 200 / 0.45 = 444 so that the Send moves
    // exactly 200.
    let r0 = vec![
        (send(Op::Send, 0, 1, 1, 8), 0, 10),
        (send(Op::Send, 0, 1, 2, 8), 4000, 4100),
    ];
    let r1 = vec![
        (recv(Op::Recv, 1, rank(0), Tag::Value(1), 8), 0, 100),
        (send(Op::Send, 1, 2, 5, 8), 1000, 1100),
        (recv(Op::Recv, 1, rank(0), Tag::Value(2), 8), 2000, 2100),
    ];
    let r2 = vec![(recv(Op::Recv, 2, rank(1), Tag::Value(5), 8), 500, 1200)];
    let (run, rep) = corrected(&file(vec![r0, r1, r2]), 1.0);
    assert_eq!((rep.violations, rep.remaining), (1, 0), "{rep:?}");
    assert!(ordered(&run));
    let r1 = &run.ranks[1].spans;
    // Everything between is on the same ramp: the Send's leave at half
    // of it, the late receive's enter at 0.95.
    let ramp = 200.0 / 0.45;
    assert_eq!(r1[1].0, 1200, "{r1:?}");
    assert_eq!(r1[1].1, 1100 + (0.5 * ramp) as i64);
    assert_eq!(r1[2], (2000 + (0.95 * ramp) as i64, 4000));
    assert_eq!(r1[0], (0, 100));
}

#[test]
fn delay_costs_and_critical_path_of_seed_002_figure_10() {
    // Haus 2024 Fig. 10 (times in us): after a barrier at 0, A computes 6
    // and sends to B; B computes 2.5, receives from A (waiting 3.5, then
    // 2 inside the call) and sends to C at 8; C computes 2.5 and waits 5.5
    // for B's send.
    let us = 1000;
    let a = vec![
        (coll(Op::Barrier, 0, 0), 0, 0),
        (send(Op::Send, 0, 1, 1, 8), 6 * us, 6 * us + 100),
    ];
    let b = vec![
        (coll(Op::Barrier, 1, 0), 0, 0),
        (recv(Op::Recv, 1, rank(0), Tag::Value(1), 8), 2500, 8 * us),
        (send(Op::Send, 1, 2, 2, 8), 8 * us, 8 * us + 100),
    ];
    let c = vec![
        (coll(Op::Barrier, 2, 0), 0, 0),
        (recv(Op::Recv, 2, rank(1), Tag::Value(2), 8), 2500, 8200),
    ];
    let (run, ws, v) = states(vec![a, b, c]);
    assert_eq!(
        v,
        vec![
            (Metric::LateSender, 1, 1, 0, 3500),
            (Metric::LateSender, 2, 1, 1, 5500),
        ]
    );
    let d = analysis::delay::analyse(&run, &ws);
    let cost = |rank: u32, mpi: bool, op: Op| {
        d.costs
            .iter()
            .find(|c| c.rank == rank && c.region.mpi == mpi && c.region.op == op)
            .map(|c| (c.short_term_ns, c.long_term_ns))
    };
    // A's computation (before its Send): 3.5 short-term (B's wait) and
    // 3.5 long-term (the part of C's wait that B's wait passed on); B's
    // 2 us inside Recv1: 2 short-term of C's wait.
    assert_eq!(cost(0, false, Op::Send), Some((3500, 3500)));
    assert_eq!(cost(1, true, Op::Recv), Some((2000, 0)));
    assert_eq!(d.costs.len(), 2, "{:?}", d.costs);
    assert_eq!(d.unexplained_ns, 0);
    // The critical path: A's 6 us of computation, B's 2 us in Recv1, C's
    // last 0.2 us: the whole run, without any waiting.
    assert_eq!(d.path_ns, 8200);
    assert_eq!(d.path_ranks, vec![(0, 6000), (1, 2000), (2, 200)]);
    let ranks: Vec<u32> = d.path.iter().map(|s| s.rank).collect();
    assert_eq!(ranks, [0, 1, 2]);
    assert_eq!(d.path_profile[0].ns, 6000);
    assert!(!d.path_profile[0].region.mpi);
}

/// The published SMG2000 traces' records (issue 40): each `Recv` and
/// `Send` runs from its nonblocking post to its completion in the
/// `Waitall`, so the records of one exchange overlap on a rank. Two ranks
/// exchange two messages each way, 2,000 times, 100 µs apart; in true time
/// both post their receives at T and T+0.2 µs and their sends at T+3 and
/// T+3.1 µs, and each receive completes 0.5 µs after its send was posted.
/// Rank 1's clock reads 30 µs early, so each of its receives seems to end
/// 29.5 µs before its send began. The correction must shift rank 1 by
/// 29.5 µs and no more (taken one record after the other, the overlapping
/// records had been serialised: 36 ms of drift on a similar run), and
/// leave no violation.
#[test]
fn overlapping_records_of_nonblocking_exchanges_shift_by_the_skew() {
    let skew = 30_000;
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for i in 0..2000u64 {
        let t = 100_000 + i * 100_000;
        for (me, out, c) in [(0, &mut r0, 0), (1, &mut r1, skew)] {
            let peer = 1 - me;
            out.push((
                recv(Op::Recv, me, rank(peer), Tag::Value(1), 8),
                t - c,
                t + 3_500 - c,
            ));
            out.push((
                recv(Op::Recv, me, rank(peer), Tag::Value(2), 8),
                t + 200 - c,
                t + 3_600 - c,
            ));
            out.push((send(Op::Send, me, peer, 1, 8), t + 3_000 - c, t + 4_000 - c));
            out.push((send(Op::Send, me, peer, 2, 8), t + 3_100 - c, t + 4_200 - c));
        }
    }
    let f = file(vec![r0, r1]);
    let (_, rep) = corrected(&f, ClcOptions::default().gamma);
    assert_eq!(rep.checked, 8000, "{rep:?}");
    assert_eq!(rep.violations, 4000, "{rep:?}");
    assert_eq!(rep.remaining, 0, "{rep:?}");
    assert!(
        (rep.max_shift_ns - 29_500).abs() <= 1_000,
        "shifted by {} ns: {rep:?}",
        rep.max_shift_ns
    );
}

/// Two receive records that overlap on rank 0, as the published traces
/// record an `Irecv`, `Irecv`, `Waitall`: posted at 0 and 100 ns, both
/// complete at 10 µs; ranks 1 and 2 begin their sends at 8 and 9 µs.
/// Rank 0 waited in one call, its `Waitall`, from its last post (100) to
/// the later send (9,000): one Late Sender of 8,900 ns. Taken one record
/// at a time it waited 8,000 + 8,900 ns in a span of 10 µs.
#[test]
fn overlapping_receive_records_wait_once_from_their_last_post() {
    let r0 = vec![
        (recv(Op::Recv, 0, rank(1), Tag::Value(0), 8), 0, 10_000),
        (recv(Op::Recv, 0, rank(2), Tag::Value(0), 8), 100, 10_000),
    ];
    let r1 = vec![(send(Op::Send, 1, 0, 0, 8), 8_000, 8_100)];
    let r2 = vec![(send(Op::Send, 2, 0, 0, 8), 9_000, 9_100)];
    let run = Run::from_file(
        &file(vec![r0, r1, r2]),
        trace::Limits::DEFAULT_MEMORY,
        &mut |_, _| {},
    )
    .unwrap();
    let m = match_run(&run);
    let ws = wait_states(&run, &m);
    let got: Vec<(Metric, u32, u32, i64, i64)> = ws
        .iter()
        .map(|w| (w.metric, w.waiter, w.culprit, w.from, w.ns))
        .collect();
    assert_eq!(got, vec![(Metric::LateSender, 0, 2, 100, 8_900)], "{ws:?}");
}

/// A shift larger than the largest violation comes from a chain, and the
/// report says how long: ranks 1, 2 and 3 each read 5 µs earlier than the
/// rank before, and each receives from it and then sends on 100 ns later.
/// Every message seems to arrive 4.8 µs before it was sent (the largest
/// violation); rank 1 moves 4.8 µs, which makes rank 2's receive 9.6 µs
/// early, and rank 3's 14.4 µs: three jumps in a chain.
#[test]
fn a_shift_beyond_the_largest_violation_names_its_chain() {
    let (t, v) = (100_000u64, 5_000u64);
    let ranks: Vec<_> = (0..4u64)
        .map(|i| {
            let mut evs = Vec::new();
            let me = i as i32;
            let at = t + i * 300 - i * v;
            if i > 0 {
                evs.push((
                    recv(Op::Recv, me, rank(me - 1), Tag::Value(0), 8),
                    at - 50,
                    at + 200,
                ));
            }
            if i < 3 {
                evs.push((send(Op::Send, me, me + 1, 0, 8), at + 300, at + 400));
            }
            evs
        })
        .collect();
    let (run, rep) = corrected(&file(ranks), 1.0);
    assert_eq!((rep.violations, rep.remaining), (3, 0), "{rep:?}");
    assert!(ordered(&run));
    assert_eq!(rep.largest_violation_ns, 4_800, "{rep:?}");
    assert_eq!(rep.max_shift_ns, 3 * 4_800, "{rep:?}");
    assert_eq!(rep.max_shift_chain, 3, "{rep:?}");
}
