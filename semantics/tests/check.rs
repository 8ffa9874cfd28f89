//! `semantics::check` on traces built in memory, no MPI: each rank's events
//! are written as raw-log lines (the grammar of `rankscale show --expand`),
//! go through the real compressor and merge, and are checked back. A
//! consistent exchange passes; each kind of defect is found and named.

use compress::merge::{self, merge_binomial};
use compress::{Compressor, Config};
use semantics::check::{CheckReport, Error, ProblemKind, check, check_ranks};
use trace::{Event, MergedTrace, Meta, Op, Peer, TraceFile};

/// One event from a raw-log line, plus `me=N`: the caller's rank in a
/// communicator other than the world (on the world it is the rank, and so
/// are peers' communicator ranks).
fn event(rank: i32, line: &str) -> Event {
    let me = line
        .split_whitespace()
        .find_map(|t| t.strip_prefix("me="))
        .map(|v| v.parse::<i32>().expect("me=N"));
    let text: Vec<&str> = line
        .split_whitespace()
        .filter(|t| !t.starts_with("me="))
        .collect();
    let mut e = trace::raw::parse_line(&text.join(" "), 1).expect("a raw-log line");
    if e.names_comm() {
        e.comm_rank = me.unwrap_or(match e.comm.0 {
            0 => rank,
            1 => 0,
            _ => -1,
        });
    }
    // Peers on the world, and on the windows of these tests (all over the
    // world), have their world rank as their rank there.
    if (e.comm.0 == 0 && !e.op.is_collective()) || e.rma.is_some() {
        for t in [&mut e.send, &mut e.recv].into_iter().flatten() {
            if let Peer::Rank { world, local } = &mut t.peer {
                *local = *world;
            }
        }
    }
    if let Some(trace::Rma::Lock {
        peer: Peer::Rank { world, local },
        ..
    }) = e.rma.as_deref_mut()
    {
        *local = *world;
    }
    e
}

/// A trace file of these ranks, each given as raw-log lines.
fn trace(ranks: &[String]) -> TraceFile {
    let parts: Vec<MergedTrace> = ranks
        .iter()
        .enumerate()
        .map(|(r, text)| {
            let mut c = Compressor::new(r as i32, Config::default());
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                c.push(&event(r as i32, line)).expect("push");
            }
            merge::from_rank(&c.into_trace().expect("trace"))
        })
        .collect();
    let mut trace = merge_binomial(parts, merge::traces).expect("ranks");
    trace.normalize();
    TraceFile {
        meta: Meta {
            world_size: ranks.len() as u32,
            ..Meta::default()
        },
        trace,
        timelines: Vec::new(),
        series: Vec::new(),
    }
}

/// P ranks, rank r's lines from `f(r)`.
fn ranks(p: usize, f: impl Fn(usize) -> String) -> Vec<String> {
    (0..p).map(f).collect()
}

/// Checks P ranks that run `common` and then `rest`, but rank `k` runs
/// `common` and then `odd`; asserts one problem, saying `text`.
fn odd_one(p: usize, k: usize, [common, odd, rest]: [&str; 3], text: &str) -> CheckReport {
    let f = trace(&ranks(p, |r| {
        format!("{common}{}", if r == k { odd } else { rest })
    }));
    check_finds(&f, 1, text)
}

/// Every problem's message (rank, event and what is wrong).
fn messages(r: &CheckReport) -> Vec<String> {
    r.problems.iter().map(ToString::to_string).collect()
}

/// Checks every rank of `f`, asserts that it finds exactly `n` problems
/// and that one of them says `text`, and returns the report.
fn check_finds(f: &TraceFile, n: u64, text: &str) -> CheckReport {
    let r = check(f).unwrap();
    finds(&r, n, text);
    r
}

/// Asserts that the report has exactly `n` problems and that one of them
/// says `text`.
fn finds(r: &CheckReport, n: u64, text: &str) {
    let all = messages(r);
    assert_eq!(r.problem_count, n, "{all:#?}");
    assert!(
        all.iter().any(|m| m.contains(text)),
        "no `{text}` in {all:#?}"
    );
}

/// A 4-rank ring with every kind of matching the checker knows: a wildcard
/// receive resolved at its Waitall, persistent requests started twice, a
/// Sendrecv, an Mprobe/Mrecv, a send to MPI_PROC_NULL, world collectives
/// (a consistent Alltoallv and Gatherv among them) and a Comm_split with
/// collectives on its halves.
fn ring(r: usize) -> String {
    let p = 4;
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);
    let scounts: Vec<String> = (0..p).map(|j| (r + j + 1).to_string()).collect();
    let rcounts: Vec<String> = (0..p).map(|i| (i + r + 1).to_string()).collect();
    let gather = if r == 0 {
        " recv=0/4 rcounts=1,2,3,4"
    } else {
        ""
    };
    format!(
        "Init
        Irecv comm=0 recv=any/any/8/8 req=0
        Irecv comm=0 recv={left}/7/8/8 req=1
        Isend comm=0 send={right}/5/8/8 req=2
        Isend comm=0 send={right}/7/8/8 req=3
        Waitall reqs=0,1,2,3 done=0,1,2,3 match=0:{left}:5
        Send_init comm=0 send={right}/9/2/8 req=4
        Recv_init comm=0 recv={left}/9/2/8 req=5
        Startall reqs=4,5
        Waitall reqs=4,5 done=4,5
        Startall reqs=4,5
        Waitall reqs=4,5 done=4,5
        Request_free reqs=4
        Request_free reqs=5
        Sendrecv comm=0 send={right}/11/4/8 recv={left}/11/4/8
        Send comm=0 send=null/0/8/8
        Isend comm=0 send={right}/13/16/1 req=6
        Mprobe comm=0 recv=any/13/0/1 match=-:{left}:13 msg=1
        Mrecv comm=0 recv=any/13/16/1 msg=1
        Wait reqs=6 done=6
        Allreduce comm=0 send=1/8 redop=sum
        Bcast comm=0 send=4/8 root=0
        Alltoallv comm=0 send=0/8 recv=0/8 scounts={} rcounts={}
        Gatherv comm=0 send={}/4 root=0{gather}
        Comm_split comm=0 new=2 size=2 color={} key={r}
        Barrier comm=2 me={}
        Allreduce comm=2 send=2/4 redop=max me={}
        Finalize",
        scounts.join(","),
        rcounts.join(","),
        r + 1,
        r % 2,
        r / 2,
        r / 2,
    )
}

#[test]
fn a_consistent_ring_with_wildcards_persistent_requests_and_collectives_passes() {
    let f = trace(&ranks(4, ring));
    let r = check(&f).unwrap();
    assert!(r.is_consistent(), "{:#?}", messages(&r));
    assert!(r.complete);
    assert_eq!(r.ranks, 4);
    assert_eq!(r.events, 4 * 28);
    // Per rank: tags 5 and 7, the persistent one twice, the Sendrecv and
    // the Mprobe'd one.
    assert_eq!(r.messages, 4 * 6);
    // Allreduce, Bcast, Alltoallv, Gatherv and Comm_split on the world,
    // Barrier and Allreduce on each half.
    assert_eq!(r.collectives, 5 + 2 * 2);
    assert_eq!(
        r.summary(),
        "4 ranks, 112 events, 24 messages, 9 collectives checked"
    );
}

/// Calls that returned an error did nothing: among the ring's calls, a
/// failed free of the world, send, receive, collective (on some ranks
/// only) and Comm_dup leave it consistent, with the same messages and
/// collectives, and the notes count them by function.
#[test]
fn calls_that_failed_are_passed_over_and_counted() {
    let f = trace(&ranks(4, |r| {
        let failed = if r % 2 == 0 {
            "Allreduce error=13\n"
        } else {
            ""
        };
        ring(r).replacen(
            "Init",
            &format!(
                "Init\nComm_free error=5\nSend error=6\nIrecv error=6\n{failed}Comm_dup error=5"
            ),
            1,
        )
    }));
    let r = check(&f).unwrap();
    assert!(r.is_consistent(), "{:#?}", messages(&r));
    assert_eq!((r.messages, r.collectives), (4 * 6, 5 + 2 * 2));
    assert!(
        r.notes.iter().any(
            |n| n.starts_with("18 calls returned an MPI error and did nothing")
                && n.ends_with(": Send 4, Irecv 4, Comm_dup 4, Comm_free 4, Allreduce 2")
        ),
        "{:#?}",
        r.notes
    );
}

#[test]
fn a_peer_out_of_range_is_named() {
    let r = odd_one(
        4,
        1,
        ["", "Send comm=0 send=37/0/8/8", "Finalize"],
        "rank 1, event 0: Send to rank 37 but the trace has 4 ranks",
    );
    let p = &r.problems[0];
    assert_eq!(
        p.call.as_deref(),
        Some("Send site=none comm=0 send=37/0/8/8")
    );
    assert!(matches!(
        p.kind,
        ProblemKind::PeerOutOfWorld {
            op: Op::Send,
            peer: 37,
            world_size: 4,
            ..
        }
    ));
}

#[test]
fn a_send_without_a_receive_is_named_by_its_channel_position() {
    let f = trace(&[
        "Send comm=0 send=1/4/8/8\nSend comm=0 send=1/4/8/8".into(),
        "Recv comm=0 recv=0/4/8/8".into(),
    ]);
    let r = check_finds(
        &f,
        1,
        "rank 0, event 1: message from rank 0 to rank 1 (comm 0, tag 4), the 2nd on that channel, is never received (64 bytes)",
    );
    assert_eq!(r.messages, 1);
    // The call is read again for the report.
    assert_eq!(
        r.problems[0].call.as_deref(),
        Some("Send site=none comm=0 send=1/4/8/8")
    );
}

#[test]
fn a_receive_without_a_send_is_named() {
    let f = trace(&[
        "Finalize".into(),
        "Irecv comm=0 recv=0/3/1/8 req=0\nWait reqs=0 done=0".into(),
    ]);
    check_finds(
        &f,
        1,
        "rank 1, event 0: message from rank 0 to rank 1 (comm 0, tag 3), the 1st on that channel, is received but never sent",
    );
}

#[test]
fn a_receive_never_completed_and_never_sent_is_only_a_note() {
    let f = trace(&["Finalize".into(), "Irecv comm=0 recv=0/3/1/8 req=0".into()]);
    let r = check(&f).unwrap();
    assert!(r.is_consistent(), "{:#?}", messages(&r));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("1 receives were never completed"))
    );
}

#[test]
fn a_receive_too_small_for_its_message_is_named() {
    let f = trace(&[
        "Send comm=0 send=1/0/8/8\nSend comm=0 send=1/0/8/8".into(),
        "Recv comm=0 recv=0/0/8/8\nRecv comm=0 recv=any/any/4/8 match=-:0:0".into(),
    ]);
    check_finds(
        &f,
        1,
        "rank 1, event 1: message from rank 0 to rank 1 (comm 0, tag 0), the 2nd on that channel, has 64 bytes (rank 0, event 1) but the receive takes only 32",
    );
}

#[test]
fn a_collective_missing_on_one_rank_is_found_where_the_ranks_part() {
    let f = trace(&ranks(3, |r| {
        let barrier = if r == 2 { "" } else { "Barrier comm=0\n" };
        format!("{barrier}Allreduce comm=0 send=1/8 redop=sum")
    }));
    let r = check_finds(
        &f,
        2,
        "rank 2, event 0: collective #1 on comm 0: rank 2 calls Allreduce where rank 0 calls Barrier",
    );
    finds(
        &r,
        2,
        "rank 0, event 1: Allreduce #2 on comm 0 has 2 of 3 members: rank 2 never calls it",
    );
}

#[test]
fn disagreeing_roots_are_named() {
    odd_one(
        4,
        3,
        ["Bcast comm=0 send=4/8 root=", "1", "0"],
        "rank 3, event 0: Bcast #1 on comm 0: rank 3 names root 1, rank 0 names root 0",
    );
}

#[test]
fn disagreeing_allreduce_counts_are_named() {
    odd_one(
        3,
        2,
        [
            "Allreduce comm=0 send=1/8 redop=sum\nAllreduce comm=0 send=",
            "1/8 redop=sum",
            "2/8 redop=sum",
        ],
        "rank 2, event 1: Allreduce #2 on comm 0: rank 2 contributes 8 bytes, rank 0 contributes 16",
    );
}

#[test]
fn an_alltoallv_list_of_the_wrong_length_is_named() {
    odd_one(
        4,
        3,
        [
            "Alltoallv comm=0 send=0/8 recv=0/8 rcounts=1,1,1,1 scounts=",
            "1,1,1",
            "1,1,1,1",
        ],
        "rank 3, event 0: Alltoallv has 3 send counts but its communicator (world) has 4 ranks",
    );
}

/// Alltoallv on 4 ranks where every rank sends one element to each, but
/// rank `bad` expects two from rank 1.
fn alltoallv(p: usize, bad: usize) -> Vec<String> {
    ranks(p, |r| {
        let s = vec!["1"; p].join(",");
        let rc: Vec<&str> = (0..p)
            .map(|i| if r == bad && i == 1 { "2" } else { "1" })
            .collect();
        format!(
            "Alltoallv comm=0 send=0/8 recv=0/8 scounts={s} rcounts={}",
            rc.join(",")
        )
    })
}

#[test]
fn alltoallv_counts_that_disagree_between_sender_and_receiver_are_named() {
    check_finds(
        &trace(&alltoallv(4, 2)),
        1,
        "rank 2, event 0: Alltoallv #1 on comm 0: rank 1 sends 8 bytes to rank 2, which expects 16",
    );
}

#[test]
fn a_comm_split_larger_than_the_world_is_named() {
    odd_one(
        4,
        0,
        ["Comm_split comm=0 new=2 color=0 key=0 size=", "6", "4"],
        "rank 0, event 0: Comm_split makes a communicator of 6 ranks but its parent (world) has 4",
    );
}

/// A 16-rank ring exchange; rank 9 sends one more message than rank 10
/// receives.
fn ring16() -> Vec<String> {
    ranks(16, |r| {
        let (left, right) = ((r + 15) % 16, (r + 1) % 16);
        let extra = if r == 9 {
            "\nSend comm=0 send=10/1/1/8"
        } else {
            ""
        };
        format!(
            "Sendrecv comm=0 send={right}/1/1/8 recv={left}/1/1/8{extra}\nAllreduce comm=0 send=1/8 redop=sum"
        )
    })
}

#[test]
fn a_sample_finds_the_defect_of_a_sampled_rank_and_checks_its_peers() {
    let f = trace(&ring16());
    let r = check_ranks(&f, &[9]).unwrap();
    assert!(!r.complete);
    assert_eq!(r.requested, vec![9]);
    assert_eq!(r.ranks, 3, "rank 9 and its neighbours 8 and 10");
    finds(
        &r,
        1,
        "rank 9, event 1: message from rank 9 to rank 10 (comm 0, tag 1), the 2nd on that channel, is never received",
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("as few as 3 of 16 members")),
        "{:#?}",
        r.notes
    );
    // Far from the defect, a sample is consistent; the whole trace is not.
    let r = check_ranks(&f, &[2]).unwrap();
    assert!(r.is_consistent(), "{:#?}", messages(&r));
    assert_eq!(r.messages, 2, "2's messages from 1 and to 3");
    assert_eq!(check(&f).unwrap().problem_count, 1);
}

#[test]
fn a_sample_checks_v_collective_counts_among_its_ranks() {
    let r = check_ranks(&trace(&alltoallv(8, 5)), &[1, 5]).unwrap();
    finds(
        &r,
        1,
        "Alltoallv #1 on comm 0: rank 1 sends 8 bytes to rank 5, which expects 16",
    );
    let r = check_ranks(&trace(&alltoallv(8, 5)), &[2, 6]).unwrap();
    assert!(r.is_consistent(), "{:#?}", messages(&r));
}

#[test]
fn a_sample_of_ranks_not_in_the_trace_is_an_error() {
    let f = trace(&ring16());
    assert!(matches!(check_ranks(&f, &[]), Err(Error::NoRanks)));
    let e = check_ranks(&f, &[3, 40]).unwrap_err();
    assert!(matches!(e, Error::NoSuchRank { rank: 40, .. }));
    assert!(e.to_string().contains("rank 40 is not in the trace"), "{e}");
}

#[test]
fn many_problems_keep_twenty_in_full_and_count_the_rest() {
    let f = trace(&ranks(2, |r| {
        if r == 0 {
            "Send comm=0 send=1/0/1/8\n".repeat(50)
        } else {
            "Finalize".into()
        }
    }));
    let r = check(&f).unwrap();
    assert_eq!(r.problem_count, 50);
    assert_eq!(r.problems.len(), semantics::check::DETAIL);
    assert_eq!(r.tally.get("message never received"), Some(&50));
}

/// A tiny deterministic generator (xorshift), for garbage events.
struct Gen(u64);

impl Gen {
    fn next(&mut self, n: u64) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n) as i64
    }

    fn list(&mut self) -> Vec<i32> {
        (0..self.next(6))
            .map(|_| self.next(12) as i32 - 3)
            .collect()
    }
}

#[test]
fn garbage_events_never_panic_the_check() {
    let mut g = Gen(0x9e37_79b9);
    for round in 0..20 {
        let ranks: Vec<MergedTrace> = (0..5)
            .map(|r| {
                let mut c = Compressor::new(r, Config::default());
                for _ in 0..120 {
                    let op = Op::ALL[g.next(Op::ALL.len() as u64) as usize];
                    let mut e = Event::new(op);
                    e.comm = trace::CommId(g.next(6) as u32);
                    e.comm_rank = g.next(9) as i32 - 2;
                    let peer = match g.next(4) {
                        0 => Peer::Any,
                        1 => Peer::Null,
                        _ => Peer::Rank {
                            world: g.next(12) as i32 - 3,
                            local: g.next(12) as i32 - 3,
                        },
                    };
                    let mut t = trace::Transfer::collective(g.next(20) - 4, g.next(9) - 1);
                    t.peer = peer;
                    e.send = (g.next(2) == 0).then_some(t);
                    e.recv = (g.next(2) == 0).then_some(t);
                    e.root = (g.next(2) == 0).then(|| g.next(8) as i32 - 2);
                    e.in_place = g.next(4) == 0;
                    e.send_counts = g.list().into_iter().map(i64::from).collect();
                    e.recv_counts = g.list().into_iter().map(i64::from).collect();
                    e.send_dsizes = g.list();
                    e.recv_dsizes = g.list();
                    e.req = (g.next(2) == 0).then(|| trace::ReqId(g.next(6) as u64));
                    e.reqs = (0..g.next(3))
                        .map(|_| trace::ReqId(g.next(6) as u64))
                        .collect();
                    e.done = e.reqs.clone();
                    e.message = (g.next(3) == 0).then(|| g.next(3) as u64);
                    e.flag = (g.next(2) == 0).then(|| g.next(2) == 0);
                    if g.next(3) == 0 {
                        e.matched = vec![trace::Matched {
                            req: (g.next(2) == 0).then(|| trace::ReqId(g.next(6) as u64)),
                            source: g.next(12) as i32 - 3,
                            tag: g.next(5) as i32 - 1,
                        }];
                    }
                    if op.family() == trace::Family::CommManagement && g.next(2) == 0 {
                        let mut cc = trace::CommCreate::new(
                            (g.next(3) > 0).then(|| trace::CommId(g.next(6) as u32)),
                            g.next(12) as i32 - 3,
                        );
                        cc.dims = g.list();
                        cc.edges = g.list();
                        cc.sources = g.list();
                        cc.members = g.list();
                        cc.color = (g.next(2) == 0).then(|| g.next(3) as i32);
                        e.create = Some(Box::new(cc));
                    }
                    c.push(&e).expect("push");
                }
                merge::from_rank(&c.into_trace().expect("trace"))
            })
            .collect();
        let f = TraceFile {
            meta: Meta {
                world_size: 4 + round % 3,
                ..Meta::default()
            },
            trace: merge_binomial(ranks, merge::traces).expect("ranks"),
            timelines: Vec::new(),
            series: Vec::new(),
        };
        let r = check(&f).unwrap();
        assert!(r.problem_count > 0);
        for p in &r.problems {
            assert!(!p.to_string().is_empty());
        }
        check_ranks(&f, &[1, 3]).unwrap();
    }
}

#[test]
fn ranks_missing_from_the_world_are_named() {
    let mut f = trace(&ranks(2, |_| "Finalize".into()));
    f.meta.world_size = 5;
    check_finds(
        &f,
        1,
        "3 of the world's 5 ranks have no events in the trace (2, 3, 4)",
    );
    f.meta.world_size = 1;
    finds(
        &check(&f).unwrap(),
        1,
        "rank 1: this rank has events but the trace's world has 1 ranks",
    );
}

/// `Comm_split_type` groups ranks by node, which the trace does not say:
/// with one rank per node (MPICH with `MPIR_CVAR_NOLOCAL`) every rank is
/// rank 0 of a communicator of one, and that is no duplicate.
#[test]
fn split_type_groups_of_one_rank_each_are_consistent() {
    let f = trace(&ranks(4, |r| {
        format!(
            "Init site=0000000000000001\n\
             Comm_split_type site=0000000000000002 comm=0 new=2 size=1 key={r} stype=1\n\
             Allreduce site=0000000000000003 comm=2 send=1/4 redop=sum me=0\n\
             Comm_free site=0000000000000004 comm=2 me=0\n\
             Finalize site=0000000000000005\n"
        )
    }));
    for report in [check(&f).unwrap(), check_ranks(&f, &[0]).unwrap()] {
        assert!(report.is_consistent(), "{:?}", messages(&report));
    }
}

#[test]
fn constructor_lists_their_other_arguments_contradict_are_named() {
    // Periods for one dimension of a 2x2 grid.
    odd_one(
        4,
        1,
        [
            "Cart_create comm=0 new=2 size=4 dims=2,2 periods=",
            "1",
            "1,1",
        ],
        "rank 1, event 0: Cart_create has 1 periods but its number of dimensions gives 2",
    );
    // A ring graph of 4 nodes (index 2,4,6,8) with one edge missing.
    let ring = "Graph_create comm=0 new=2 size=4 dims=2,4,6,8 edges=";
    odd_one(
        4,
        2,
        [ring, "1,3,0,2,1,3,2", "1,3,0,2,1,3,2,0"],
        "rank 2, event 0: Graph_create has 7 edges but its index gives 8",
    );
    // An index that goes back: a node with -1 edges.
    odd_one(
        4,
        0,
        [
            "Graph_create comm=0 new=2 size=4 ",
            "dims=2,4,3,8 edges=1,3,0,2,1,3,2,0",
            "dims=2,4,6,8 edges=1,3,0,2,1,3,2,0",
        ],
        "rank 0, event 0: Graph_create has a negative node's edge count in its index (-1)",
    );
    // Each rank one source of degree 2, with one destination.
    odd_one(
        4,
        3,
        [
            "Dist_graph_create comm=0 new=2 size=4 dims=2 sources=0 edges=",
            "1",
            "1,2",
        ],
        "rank 3, event 0: Dist_graph_create has 1 destinations but the sum of its degrees gives 2",
    );
}

/// Rank r of 4 on two windows over the world (ids 2 and 3): a fence epoch
/// with puts to both neighbours inside a window of 100 doubles, two PSCW
/// rounds with the right neighbour (each rank exposes to its left one), a
/// passive-target epoch with a lock, a flush and a get, then both windows
/// freed. `edit` rewrites the text (to break one rule).
fn epochs(r: usize, edit: impl Fn(String) -> String) -> String {
    let p = 4;
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);
    edit(format!(
        "Init
        Win_create comm=0 new=2 size=4 win=800/8
        Win_fence comm=2 assert=0 me={r}
        Put comm=2 send={right}/0/8/8:double target=91/8/8:double me={r}
        Put comm=2 send={left}/0/8/8:double target=1/8/8:double me={r}
        Win_fence comm=2 assert=16 me={r}
        Win_post comm=2 assert=0 group={left} me={r}
        Win_start comm=2 assert=0 group={right} me={r}
        Get comm=2 recv={right}/0/1/8:double target=3/1/8:double me={r}
        Win_complete comm=2 assert=0 me={r}
        Win_wait comm=2 assert=0 me={r}
        Win_post comm=2 assert=0 group={left} me={r}
        Win_start comm=2 assert=0 group={right} me={r}
        Accumulate comm=2 send={right}/0/1/8:double redop=sum target=4/1/8:double me={r}
        Win_complete comm=2 assert=0 me={r}
        Win_test comm=2 flag=0 assert=0 me={r}
        Win_test comm=2 flag=1 assert=0 me={r}
        Win_allocate comm=0 new=3 size=4 win=64/8
        Win_lock comm=3 lock={right}/exclusive/0 me={r}
        Get comm=3 recv={right}/0/1/8:double target=7/1/8:double me={r}
        Win_flush comm=3 lock={right}/none/0 me={r}
        Win_unlock comm=3 lock={right}/none/0 me={r}
        Win_free comm=3 assert=0 me={r}
        Win_free comm=2 assert=0 me={r}
        Finalize"
    ))
}

#[test]
fn consistent_fence_pscw_and_lock_epochs_pass() {
    let f = trace(&ranks(4, |r| epochs(r, |s| s)));
    let r = check(&f).unwrap();
    assert!(r.is_consistent(), "{:#?}", messages(&r));
    // The two constructors and frees, and window 2's two fences.
    assert_eq!(r.collectives, 6, "{r:?}");
}

#[test]
fn a_put_after_the_closing_fence_is_outside_every_epoch() {
    let f = trace(&ranks(4, |r| {
        epochs(r, |s| {
            if r != 2 {
                return s;
            }
            s.replace(
                "Win_fence comm=2 assert=16 me=2",
                "Win_fence comm=2 assert=16 me=2\nPut comm=2 send=3/0/1/8:double target=0/1/8:double me=2",
            )
        })
    }));
    let rep = check_finds(
        &f,
        1,
        "Put to window rank 3 on window 2 outside every access epoch",
    );
    assert_eq!(rep.problems[0].rank, Some(2));
}

#[test]
fn a_lock_never_released_is_named_at_win_free() {
    let f = trace(&ranks(4, |r| {
        epochs(r, |s| {
            if r != 1 {
                return s;
            }
            s.replace("Win_unlock comm=3 lock=2/none/0 me=1", "")
        })
    }));
    check_finds(
        &f,
        1,
        "Win_free of window 3 leaves a Win_lock of window rank 2 without its Win_unlock",
    );
}

#[test]
fn a_missing_win_post_leaves_its_win_start_unpaired() {
    // Rank 3 exposes to rank 2 once only: rank 2 starts on it twice.
    let f = trace(&ranks(4, |r| {
        epochs(r, |s| {
            if r != 3 {
                return s;
            }
            s.replacen("Win_post comm=2 assert=0 group=2 me=3", "", 1)
                .replacen("Win_wait comm=2 assert=0 me=3", "", 1)
        })
    }));
    check_finds(
        &f,
        1,
        "window rank 2's Win_start epochs naming window rank 3 outnumber window rank 3's Win_post epochs naming window rank 2 by 1",
    );
}

#[test]
fn an_access_beyond_the_targets_window_is_named_with_its_bytes() {
    // 8 doubles from displacement 93 reach byte 808 of 800.
    let f = trace(&ranks(4, |r| {
        epochs(r, |s| {
            s.replace(
                "target=91/8/8:double",
                if r == 0 {
                    "target=93/8/8:double"
                } else {
                    "target=91/8/8:double"
                },
            )
        })
    }));
    let rep = check_finds(
        &f,
        1,
        "Put reaches byte 808 of window rank 1's memory, which exposes 800 bytes",
    );
    assert_eq!(
        (rep.problems[0].rank, rep.problems[0].event),
        (Some(0), Some(3))
    );
}

#[test]
fn a_fence_missing_on_one_rank_leaves_its_collective_incomplete() {
    let f = trace(&ranks(4, |r| {
        epochs(r, |s| {
            if r != 0 {
                return s;
            }
            s.replace("Win_fence comm=2 assert=16 me=0", "")
        })
    }));
    check_finds(&f, 4, "rank 1 calls Win_fence where rank 0 calls Win_free");
}
