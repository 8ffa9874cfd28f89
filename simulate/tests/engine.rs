//! The simulator on small traces built through the compressor (no MPI),
//! against times computed by hand from the LogGOPS formulas.

use simulate::{Error, Mode, Options, Params, simulate};
use trace::{Event, Matched, Op, Peer, ReqId, Tag, TraceFile, Transfer};

fn net() -> Params {
    Params {
        latency: 1000.0,
        overhead: 100.0,
        gap: 50.0,
        gap_per_byte: 0.5,
        overhead_per_byte: 0.25,
        eager_limit: 1024,
    }
}

fn to(rank: i32, tag: i32, bytes: i64) -> Transfer {
    Transfer {
        peer: Peer::Rank {
            world: rank,
            local: rank,
        },
        tag: Tag::Value(tag),
        count: bytes,
        dsize: 1,
        dtype: trace::Datatype::UNKNOWN,
    }
}

fn any(bytes: i64) -> Transfer {
    Transfer {
        peer: Peer::Any,
        tag: Tag::Any,
        ..to(0, 0, bytes)
    }
}

fn ev(op: Op, site: u64) -> Event {
    let mut e = Event::new(op);
    e.site = site;
    e
}

fn send(peer: i32, bytes: i64, site: u64) -> Event {
    let mut e = ev(Op::Send, site);
    e.send = Some(to(peer, 3, bytes));
    e
}

fn recv(peer: i32, bytes: i64, site: u64) -> Event {
    let mut e = ev(Op::Recv, site);
    e.recv = Some(to(peer, 3, bytes));
    e
}

/// One trace file from each rank's events (Init and Finalize added).
fn file(ranks: Vec<Vec<Event>>) -> TraceFile {
    let ranks = ranks
        .into_iter()
        .enumerate()
        .map(|(r, events)| {
            let mut all = vec![Event::new(Op::Init)];
            all.extend(events);
            all.push(Event::new(Op::Finalize));
            for e in &mut all {
                if e.op.has_comm() {
                    e.comm_rank = r as i32;
                }
            }
            all
        })
        .collect();
    compress::from_rank_events(ranks).unwrap()
}

fn pingpong(k: usize, bytes: i64) -> TraceFile {
    let r0 = (0..k)
        .flat_map(|_| [send(1, bytes, 1), recv(1, bytes, 2)])
        .collect();
    let r1 = (0..k)
        .flat_map(|_| [recv(0, bytes, 3), send(0, bytes, 4)])
        .collect();
    file(vec![r0, r1])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

fn no_compute() -> Options {
    Options {
        no_compute: true,
        ..Options::default()
    }
}

#[test]
fn an_eager_ping_pong_costs_two_overheads_and_a_latency_per_hop() {
    let n = net();
    let s = 100.0;
    // Leaves after o, on the wire (s-1)·G, arrives after L, taken in
    // o + (s-1)·O.
    let hop = 2.0 * n.overhead + n.latency + (s - 1.0) * (n.gap_per_byte + n.overhead_per_byte);
    let p = simulate(&pingpong(10, 100), &n, &no_compute()).unwrap();
    assert!(
        close(p.time_ns, 20.0 * hop),
        "{} vs {}",
        p.time_ns,
        20.0 * hop
    );
    assert!(close(p.rank0_ns, 20.0 * hop));
    assert_eq!(p.messages, 20);
    assert_eq!(p.events, 2 * (20 + 2));
    // The whole run is one chain of messages: all of it is on the
    // critical path, and none of it is computation.
    assert!(close(p.critical.length_ns, p.time_ns), "{:?}", p.critical);
    assert_eq!(p.critical.compute_ns, 0.0);
}

#[test]
fn a_rendezvous_ping_pong_adds_the_handshake() {
    let n = net();
    let s = 4096.0;
    // Request to send (o + L), clear to send (o + L), then the data as an
    // eager message would go.
    let hop =
        4.0 * n.overhead + 3.0 * n.latency + (s - 1.0) * (n.gap_per_byte + n.overhead_per_byte);
    let p = simulate(&pingpong(4, 4096), &n, &no_compute()).unwrap();
    assert!(
        close(p.time_ns, 8.0 * hop),
        "{} vs {}",
        p.time_ns,
        8.0 * hop
    );
    // With the eager limit above the size, the same trace is faster.
    let eager = Params {
        eager_limit: 1 << 20,
        ..n
    };
    let q = simulate(&pingpong(4, 4096), &eager, &no_compute()).unwrap();
    assert!(q.time_ns < p.time_ns);
}

#[test]
fn ranks_that_receive_first_deadlock_with_a_clear_message() {
    let f = file(vec![
        vec![recv(1, 8, 1), send(1, 8, 2)],
        vec![recv(0, 8, 3), send(0, 8, 4)],
    ]);
    match simulate(&f, &net(), &no_compute()) {
        Err(Error::Deadlock(b)) => {
            assert_eq!(b.len(), 2);
            assert_eq!((b[0].rank, b[0].op), (0, "Recv"));
            assert!(b[0].waits_for.contains("receive from 1"), "{b:?}");
            assert!(b[1].waits_for.contains("receive from 0"), "{b:?}");
            let text = Error::Deadlock(b).to_string();
            assert!(
                text.contains("deadlocks") && text.contains("rank 1 in MPI_Recv"),
                "{text}"
            );
        }
        other => panic!("{:?}", other.map(|p| p.time_ns)),
    }
    // Large messages both ways before the receives: rendezvous sends
    // deadlock too, eager ones do not.
    let f = file(vec![
        vec![send(1, 8192, 1), recv(1, 8192, 2)],
        vec![send(0, 8192, 3), recv(0, 8192, 4)],
    ]);
    assert!(matches!(
        simulate(&f, &net(), &no_compute()),
        Err(Error::Deadlock(_))
    ));
    let eager = Params {
        eager_limit: 1 << 20,
        ..net()
    };
    assert!(simulate(&f, &eager, &no_compute()).is_ok());
}

#[test]
fn wildcard_receives_take_the_sources_the_trace_recorded() {
    let mut r0 = Vec::new();
    for (i, site) in [(0u64, 1u64), (1, 2)] {
        let mut e = ev(Op::Irecv, site);
        e.recv = Some(any(8));
        e.req = Some(ReqId(i));
        r0.push(e);
    }
    let mut w = ev(Op::Waitall, 3);
    w.reqs = vec![ReqId(0), ReqId(1)];
    w.done = w.reqs.clone();
    // Rank 2's message was taken first.
    w.matched = vec![
        Matched {
            req: Some(ReqId(0)),
            source: 2,
            tag: 3,
        },
        Matched {
            req: Some(ReqId(1)),
            source: 1,
            tag: 3,
        },
    ];
    r0.push(w);
    // Rank 1 computes 1 ms first, so its message is the late one.
    let mut late = send(0, 8, 4);
    late.time.compute_ns = 1_000_000;
    let f = file(vec![r0, vec![late], vec![send(0, 8, 5)]]);
    let p = simulate(&f, &net(), &Options::default()).unwrap();
    assert_eq!(p.messages, 2);
    let n = net();
    let hop = 2.0 * n.overhead + n.latency + 7.0 * (n.gap_per_byte + n.overhead_per_byte);
    assert!(close(p.rank0_ns, 1.0e6 + hop), "{}", p.rank0_ns);
    // Rank 0 waited on rank 1's computation: it is on the critical path.
    assert!(close(p.critical.compute_ns, 1.0e6), "{:?}", p.critical);
}

#[test]
fn a_late_member_holds_a_collective_up_and_the_path_shows_it() {
    let ranks = (0..4)
        .map(|r| {
            let mut e = ev(Op::Allreduce, if r == 2 { 9 } else { 8 });
            e.send = Some(Transfer::collective(1, 8));
            if r == 2 {
                e.time.compute_ns = 2_000_000;
            }
            vec![e]
        })
        .collect();
    let f = file(ranks);
    let p = simulate(&f, &net(), &Options::default()).unwrap();
    assert_eq!(p.collectives, 1);
    // Two rounds of recursive doubling after the late member entered.
    let n = net();
    let round =
        n.overhead + 7.0 * n.gap_per_byte + n.latency + n.overhead + 7.0 * n.overhead_per_byte;
    for r in &p.per_rank {
        assert!(
            r.time_ns > 2.0e6 && r.time_ns < 2.0e6 + 2.0 * round + 1.0,
            "{r:?}"
        );
    }
    assert!(close(p.critical.compute_ns, 2.0e6), "{:?}", p.critical);
    // Computation scaled by half moves the whole run.
    let half = Options {
        compute_scale: 0.5,
        ..Options::default()
    };
    let q = simulate(&f, &net(), &half).unwrap();
    assert!(
        close(q.time_ns - 1.0e6, p.time_ns - 2.0e6),
        "{} {}",
        q.time_ns,
        p.time_ns
    );
}

#[test]
fn threads_are_refused() {
    let mut e = send(1, 8, 1);
    e.thread = 1;
    let f = file(vec![vec![e], vec![recv(0, 8, 2)]]);
    let err = simulate(&f, &net(), &no_compute()).unwrap_err().to_string();
    assert!(err.contains("several threads"), "{err}");
}

#[test]
fn a_job_that_died_is_named_as_such() {
    // Rank 1 stopped before it sent: its part has no Send and no Finalize.
    let mut f = file(vec![vec![recv(1, 8, 1)], vec![]]);
    let p = simulate(&f, &net(), &no_compute());
    assert!(matches!(p, Err(Error::Deadlock(_))));
    f.meta.partial.push(trace::PartialRank {
        rank: 1,
        events: 1,
        cause: "killed".into(),
        at_ns: 0,
    });
    let err = simulate(&f, &net(), &no_compute()).unwrap_err();
    assert!(matches!(err, Error::Partial { ends_early: 1, .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("ended early") && text.contains("rank 0 in MPI_Recv"),
        "{text}"
    );
}

/// `n` ranks that each compute 1 ms and enter a Barrier at `site(rank)`
/// (distinct sites make each rank a class of its own).
fn computing(n: usize, site: impl Fn(usize) -> u64) -> TraceFile {
    file(
        (0..n)
            .map(|r| {
                let mut e = ev(Op::Barrier, site(r));
                e.time.compute_ns = 1_000_000;
                vec![e]
            })
            .collect(),
    )
}

/// Four ranks computing 1 ms each on two shared cores each get half a core
/// (processor sharing): all four finish their computation at 2 ms, where
/// with a core each they finish at 1 ms. A rank that computes alone gets a
/// whole core.
#[test]
fn computation_shares_the_cores() {
    let f = computing(4, |r| 10 + r as u64);
    let own = simulate(&f, &net(), &Options::default()).unwrap();
    let shared = simulate(
        &f,
        &net(),
        &Options {
            cores: Some(2),
            ..Options::default()
        },
    )
    .unwrap();
    let barrier = own.time_ns - 1.0e6;
    assert!(barrier > 0.0 && barrier < 10_000.0, "{}", own.time_ns);
    assert!(
        close(shared.time_ns, 2.0e6 + barrier),
        "{} vs {}",
        shared.time_ns,
        2.0e6 + barrier
    );
    for r in &shared.per_rank {
        assert!(close(r.compute_ns, 2.0e6), "{r:?}");
    }
    // Two ranks on two cores do not share.
    let two = computing(2, |r| 10 + r as u64);
    let p = simulate(
        &two,
        &net(),
        &Options {
            cores: Some(2),
            ..Options::default()
        },
    )
    .unwrap();
    assert!(p.time_ns < 1.0e6 + 10_000.0, "{}", p.time_ns);
}

/// Eight ranks of one class compute 1 ms each on two shared cores: by
/// class, the one representative stands for eight computing ranks, and
/// the cores are shared eight ways as rank by rank (4 ms), not one way.
#[test]
fn shared_cores_count_every_member_of_a_class() {
    let f = computing(8, |_| 10);
    let run = |mode| {
        simulate(
            &f,
            &net(),
            &Options {
                cores: Some(2),
                mode,
                ..Options::default()
            },
        )
        .unwrap()
    };
    let (by_class, by_rank) = (run(Mode::Classes), run(Mode::Ranks));
    assert!(by_class.mode.starts_with("by class"), "{}", by_class.mode);
    assert!(
        close(by_class.time_ns, by_rank.time_ns),
        "{} vs {}",
        by_class.time_ns,
        by_rank.time_ns
    );
    assert!(
        by_rank.time_ns > 4.0e6 && by_rank.time_ns < 4.0e6 + 10_000.0,
        "{}",
        by_rank.time_ns
    );
    // Ranks sharing cores is where the model is known to fall short: the
    // text says so, and says nothing when every rank has a core.
    let shared = "8 ranks share 2 cores";
    assert!(by_rank.to_text(false, 5).contains(shared));
    let own = simulate(
        &f,
        &net(),
        &Options {
            cores: Some(8),
            ..Options::default()
        },
    )
    .unwrap();
    assert!(!own.to_text(false, 5).contains("cores;"));
}

/// A traced run whose ranks recorded more computation than its cores could
/// do in its time (four ranks, 1 ms each, in a 2 ms run on one core) waited
/// for the core inside those times: `--cores 1` scales them to the core's
/// capacity (by 0.5) before sharing it, so the prediction is the run's
/// 2 ms, not the 4 ms of sharing it twice. Computation that fits (two
/// cores) and an extrapolated trace are left alone.
#[test]
fn computation_recorded_on_a_shared_core_is_not_shared_twice() {
    let mut f = computing(4, |r| 10 + r as u64);
    f.meta.wall_ns = 2_000_000;
    let on = |cores| Options {
        cores: Some(cores),
        ..Options::default()
    };
    let p = simulate(&f, &net(), &on(1)).unwrap();
    assert_eq!(p.contended, Some(0.5));
    assert!(
        p.time_ns > 2.0e6 && p.time_ns < 2.0e6 + 10_000.0,
        "{}",
        p.time_ns
    );
    assert!(p.to_text(false, 5).contains("scaled by 0.500"));
    assert_eq!(simulate::contended_share(&f, Some(2)), None);
    // A core per rank: nothing is shared, and more computation than the
    // cores' time would be sleeping.
    f.meta.wall_ns = 500_000;
    assert_eq!(simulate::contended_share(&f, Some(4)), None);
    assert_eq!(simulate::contended_share(&f, Some(2)), Some(0.25));
    f.meta.wall_ns = 2_000_000;
    assert_eq!(simulate::contended_share(&f, None), None);
    f.meta.origin = trace::Origin::Extrapolated { inputs: vec![2, 3] };
    assert_eq!(simulate::contended_share(&f, Some(1)), None);
}

/// Two ranks whose computation before the same exchange depends on the
/// step, as NPB MG's depends on the multigrid level: 20 µs, 300 µs and
/// 3 ms in turn, alike on both ranks (rank 1 1 % slower). The run is then
/// the sum of the steps' larger computation plus the messages. Draws of
/// the same bin at the same step keep it within 5 %; independent draws on
/// each rank wait at every step for the larger of two random levels,
/// 1.77 ms against 1.11 ms per step on average (+60 %).
#[test]
fn ranks_that_compute_alike_at_each_step_do_not_wait_for_random_levels() {
    let levels = [20_000u64, 300_000, 3_000_000];
    let steps = 90;
    let rank = |r: i32| -> Vec<Event> {
        (0..steps)
            .flat_map(|k| {
                let mut s = send(1 - r, 64, 1);
                s.time.compute_ns = levels[k % 3] * (100 + r as u64) / 100;
                [s, recv(1 - r, 64, 2)]
            })
            .collect()
    };
    let f = file(vec![rank(0), rank(1)]);
    let messages = simulate(&f, &net(), &no_compute()).unwrap().time_ns;
    let larger: u64 = (0..steps).map(|k| levels[k % 3] * 101 / 100).sum();
    let truth = messages + larger as f64;
    for seed in 1..=5 {
        let p = simulate(
            &f,
            &net(),
            &Options {
                seed,
                ..Options::default()
            },
        )
        .unwrap();
        let err = p.time_ns / truth - 1.0;
        assert!(
            err.abs() < 0.05,
            "seed {seed}: {} ns predicted, {truth} ns by hand ({:+.1} %)",
            p.time_ns,
            100.0 * err
        );
    }
}
