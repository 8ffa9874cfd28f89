//! Wait states with Scalasca's definitions (Haus 2024 §2.1.3, §2.2.2, §3.3),
//! probes included.
//!
//! Every wait is found where it happens (the waiting rank's call) and
//! charged to the rank that made it wait, with the culprit's call as the
//! synchronisation point (which the delay analysis and the critical path
//! follow):
//!
//! * **Late Sender**: a blocking receive, or the `Wait*`/`Test*` that
//!   completed a nonblocking one, entered before its send began: it waited
//!   `min(send enter, leave) − enter`. When a probe (`Probe`, a successful
//!   `Iprobe`, `Mprobe`, a successful `Improbe`) found the message first,
//!   the probe synchronised with the send and carries the wait; the
//!   receive after it cannot show one. Only the first probe of a message
//!   synchronises; repeated probes of it are ignored.
//! * **Late Sender / Wrong Order**: a Late Sender while a message sent
//!   earlier was waiting: a later receive (or probe) on the same rank got a
//!   message whose send began before this one's. Exclusive of Late Sender
//!   here (the two add up to Scalasca's Late Sender total).
//! * **Late Receiver**: a send's completing call entered before its
//!   receive was posted and still inside when it was (a synchronous send,
//!   or a standard send the library did not buffer): it waited
//!   `receive enter − enter`. The receive is the receive call, not a probe
//!   before it, so a synchronous send shows Late Receiver against the
//!   receive while the probe shows Late Sender. A call that also completes
//!   receives (`Waitall` of a halo exchange) counts only synchronous sends.
//! * **Wait at Barrier** and **Wait at N×N** (`Allreduce`, `Allgather(v)`,
//!   `Alltoall(v/w)`, `Reduce_scatter(_block)`): every member waits from its
//!   entry until the last member's entry.
//! * **Late Broadcast** (`Bcast`, `Scatter(v)`): the non-roots wait from
//!   their entry until the root's.
//! * **Early Reduce** (`Reduce`, `Gather(v)`): the root waits from its entry
//!   until the first non-root's, before which no data could be sent.
//!
//! Every wait is bounded by the waiting call's own return.
//!
//! **Records that overlap** on one thread of a rank are one call for the
//! waits (see `Calls`): the published pattern-detection traces record
//! each nonblocking send and receive from its post to its completion in
//! the `Waitall`, so the records of one exchange overlap. Taken one by
//! one, each was a blocking call that waited from its own post: 7,034 s of
//! waiting in smg128's 128 ranks × 12 s. Taken together they are the
//! `Waitall` that completed them, entered at their last post: one wait
//! per exchange, as for a traced `Waitall`, and never more waiting on a
//! rank than the run is long.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;
use trace::Op;

use crate::matching::{End, Matching};
use crate::run::Run;

/// The wait-state metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// A receive (or probe) waited for its send to begin.
    LateSender,
    /// A Late Sender while an earlier-sent message was ready.
    LateSenderWrongOrder,
    /// A send waited for its receive to be posted.
    LateReceiver,
    /// A barrier waited for the last member.
    WaitAtBarrier,
    /// An all-to-all collective waited for the last member.
    #[serde(rename = "wait_at_nxn")]
    WaitAtNxN,
    /// A one-to-all collective's non-root waited for the root.
    LateBroadcast,
    /// An all-to-one collective's root waited for the first sender.
    EarlyReduce,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 7] = [
        Metric::LateSender,
        Metric::LateSenderWrongOrder,
        Metric::LateReceiver,
        Metric::WaitAtBarrier,
        Metric::WaitAtNxN,
        Metric::LateBroadcast,
        Metric::EarlyReduce,
    ];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::LateSender => "Late Sender",
            Metric::LateSenderWrongOrder => "Late Sender / Wrong Order",
            Metric::LateReceiver => "Late Receiver",
            Metric::WaitAtBarrier => "Wait at Barrier",
            Metric::WaitAtNxN => "Wait at NxN",
            Metric::LateBroadcast => "Late Broadcast",
            Metric::EarlyReduce => "Early Reduce",
        }
    }
}

/// One wait state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitState {
    /// Its metric.
    pub metric: Metric,
    /// The rank that waited (index into [`Run::ranks`]).
    pub waiter: u32,
    /// The call it waited in (event index on the waiter).
    pub event: u32,
    /// The rank it waited for.
    pub culprit: u32,
    /// The culprit's call it synchronised with (event index on the
    /// culprit): the send, the receive, or the late member's collective.
    pub sync: u32,
    /// When the waiting began (the waiting call's entry), ns.
    pub from: i64,
    /// How long it waited, ns.
    pub ns: i64,
}

fn span(run: &Run, rank: u32, ev: u32) -> (i64, i64) {
    run.ranks[rank as usize].spans[ev as usize]
}

/// Whether this member of a rooted collective is its root.
pub(crate) fn is_root(run: &Run, e: &End) -> bool {
    let ev = &run.ranks[e.rank as usize].events[e.post as usize];
    ev.root == Some(ev.comm_rank)
}

/// The op's collective wait metric, if it has one.
pub(crate) fn collective_metric(op: Op) -> Option<Metric> {
    Some(match op {
        Op::Barrier => Metric::WaitAtBarrier,
        Op::Allreduce
        | Op::Allgather
        | Op::Allgatherv
        | Op::Alltoall
        | Op::Alltoallv
        | Op::Alltoallw
        | Op::ReduceScatter
        | Op::ReduceScatterBlock => Metric::WaitAtNxN,
        Op::Bcast | Op::Scatter | Op::Scatterv => Metric::LateBroadcast,
        Op::Reduce | Op::Gather | Op::Gatherv => Metric::EarlyReduce,
        _ => return None,
    })
}

/// The calls the point-to-point waits are measured in: each event on its
/// own, except that point-to-point records which overlap in time on one
/// thread of a rank (a record that begins before an earlier one of the same
/// thread has ended) form one call, the `Waitall` that completed them. Its
/// span runs from the last of their posts (where the rank entered the
/// completion) to the last completion. Our own traces have no such records
/// (a call returns before the thread's next one begins), so for them every
/// call is its event.
pub(crate) struct Calls {
    /// Per rank, `None` when no records overlap; else each event's first
    /// record of its call and, per call (by that first record, ascending),
    /// the call's span.
    ranks: Vec<Option<RankCalls>>,
}

struct RankCalls {
    head: Vec<u32>,
    spans: Vec<(u32, i64, i64)>,
}

impl Calls {
    /// The calls of every rank of `run`.
    pub(crate) fn new(run: &Run) -> Calls {
        let p2p = |op: Op| {
            use trace::Family::*;
            matches!(
                op.family(),
                BlockingP2p | NonblockingP2p | Persistent | Completion | Probe
            )
        };
        let ranks = run
            .ranks
            .par_iter()
            .map(|r| {
                // Whether event i joins the call of event i - 1, whose
                // call so far ends at `end`.
                let joins = |i: usize, end: i64| {
                    let (a, b) = (&r.events[i - 1], &r.events[i]);
                    r.spans[i].0 < end && a.thread == b.thread && p2p(a.op) && p2p(b.op)
                };
                if !(1..r.spans.len()).any(|i| joins(i, r.spans[i - 1].1)) {
                    return None;
                }
                let mut head = Vec::with_capacity(r.spans.len());
                let mut spans: Vec<(u32, i64, i64)> = Vec::new();
                for (i, &(enter, leave)) in r.spans.iter().enumerate() {
                    let joins = i > 0 && spans.last().is_some_and(|c| joins(i, c.2));
                    match spans.last_mut() {
                        Some(c) if joins => {
                            c.1 = c.1.max(enter);
                            c.2 = c.2.max(leave);
                        }
                        _ => spans.push((i as u32, enter, leave)),
                    }
                    head.push(spans.last().map_or(i as u32, |c| c.0));
                }
                Some(RankCalls { head, spans })
            })
            .collect();
        Calls { ranks }
    }

    /// The call that event `ev` of `rank` belongs to: its first record and
    /// its span.
    pub(crate) fn of(&self, run: &Run, rank: u32, ev: u32) -> (u32, (i64, i64)) {
        match &self.ranks[rank as usize] {
            None => (ev, span(run, rank, ev)),
            Some(c) => {
                let h = c.head[ev as usize];
                let i = c.spans.partition_point(|x| x.0 < h);
                let (_, enter, leave) = c.spans[i];
                (h, (enter, leave))
            }
        }
    }
}

/// Every wait state of the run (empty without a timeline), in no
/// particular order.
pub fn wait_states(run: &Run, m: &Matching) -> Vec<WaitState> {
    if !run.timed {
        return Vec::new();
    }
    let calls = Calls::new(run);
    // The three kinds on all cores, each into its own list, joined in
    // their order.
    let of = |f: fn(&Run, &Matching, &Calls, &mut Vec<WaitState>)| {
        let mut v = Vec::new();
        f(run, m, &calls, &mut v);
        v
    };
    let ((mut out, mut receivers), mut colls) = rayon::join(
        || rayon::join(|| of(late_senders), || of(late_receivers)),
        || of(collectives),
    );
    out.reserve_exact(receivers.len() + colls.len());
    out.append(&mut receivers);
    out.append(&mut colls);
    // The analysis holds these to its end: without the growth's slack.
    out.shrink_to_fit();
    out
}

/// Groups `items` (call rank, call event, time, message index) by call,
/// in call order, and yields each call's first item after sorting by
/// time, latest first, then by message: the message that made the call
/// wait longest, the earliest of equals. One sort instead of an ordered
/// map, which at millions of messages was most of this analysis' time.
fn latest_per_call(mut items: Vec<(u32, u32, i64, usize)>) -> Vec<(u32, u32, i64, usize)> {
    items.par_sort_unstable_by_key(|&(r, c, t, i)| (r, c, std::cmp::Reverse(t), i));
    items.dedup_by_key(|x| (x.0, x.1));
    items
}

fn late_senders(run: &Run, m: &Matching, calls: &Calls, out: &mut Vec<WaitState>) {
    // Per receiving call (the probe when there is one): the latest send
    // start among its messages, and every message's send start for the
    // wrong-order test.
    let mut starts: Vec<Vec<(u32, i64)>> = vec![Vec::new(); run.ranks.len()];
    let items: Vec<(u32, u32, i64, usize)> = m
        .messages
        .iter()
        .enumerate()
        .map(|(i, msg)| {
            let call = calls
                .of(run, msg.recv.rank, msg.probe.unwrap_or(msg.recv.done))
                .0;
            let start = span(run, msg.send.rank, msg.send.post).0;
            starts[msg.recv.rank as usize].push((call, start));
            (msg.recv.rank, call, start, i)
        })
        .collect();
    // The earliest send start of the messages a rank gets after each call.
    let later_min: Vec<Vec<(u32, i64)>> = starts
        .into_par_iter()
        .map(|mut s| {
            s.sort_unstable();
            let mut min = i64::MAX;
            let mut v: Vec<(u32, i64)> = Vec::with_capacity(s.len());
            for g in s.chunk_by(|a, b| a.0 == b.0).rev() {
                v.push((g[0].0, min));
                min = min.min(g.iter().map(|x| x.1).min().unwrap_or(i64::MAX));
            }
            v.reverse();
            v
        })
        .collect();
    for (rank, call, start, i) in latest_per_call(items) {
        let msg = &m.messages[i];
        let send = msg.send;
        let (_, (enter, leave)) = calls.of(run, rank, call);
        if start <= enter {
            continue;
        }
        let lm = &later_min[rank as usize];
        let wrong = lm
            .binary_search_by_key(&call, |x| x.0)
            .is_ok_and(|i| lm[i].1 < start);
        out.push(WaitState {
            metric: if wrong {
                Metric::LateSenderWrongOrder
            } else {
                Metric::LateSender
            },
            waiter: rank,
            event: msg.probe.unwrap_or(msg.recv.done),
            culprit: send.rank,
            sync: send.post,
            from: enter,
            ns: start.min(leave) - enter,
        });
    }
}

fn late_receivers(run: &Run, m: &Matching, calls: &Calls, out: &mut Vec<WaitState>) {
    // Which calls complete receives: one bit per event.
    let mut completes_recvs: Vec<Vec<u64>> = run
        .ranks
        .iter()
        .map(|r| vec![0u64; r.events.len().div_ceil(64)])
        .collect();
    for x in &m.messages {
        let done = calls.of(run, x.recv.rank, x.recv.done).0;
        completes_recvs[x.recv.rank as usize][done as usize / 64] |= 1 << (done % 64);
    }
    let completes =
        |rank: u32, ev: u32| completes_recvs[rank as usize][ev as usize / 64] >> (ev % 64) & 1 == 1;
    // Per sending call: the latest receive entry among its messages.
    let items: Vec<(u32, u32, i64, usize)> = m
        .messages
        .iter()
        .enumerate()
        .map(|(i, msg)| (i, msg, calls.of(run, msg.send.rank, msg.send.done).0))
        .filter(|&(_, msg, call)| msg.sync || !completes(msg.send.rank, call))
        .map(|(i, msg, call)| {
            let post = span(run, msg.recv.rank, msg.recv.post).0;
            (msg.send.rank, call, post, i)
        })
        .collect();
    for (rank, call, post, i) in latest_per_call(items) {
        let msg = &m.messages[i];
        let recv = msg.recv;
        let (_, (enter, leave)) = calls.of(run, rank, call);
        if post > enter && leave >= post {
            out.push(WaitState {
                metric: Metric::LateReceiver,
                waiter: rank,
                event: msg.send.done,
                culprit: recv.rank,
                sync: recv.post,
                from: enter,
                ns: post - enter,
            });
        }
    }
}

fn collectives(run: &Run, m: &Matching, _: &Calls, out: &mut Vec<WaitState>) {
    for c in &m.collectives {
        let Some(metric) = collective_metric(c.op) else {
            continue;
        };
        if c.members.len() < 2 {
            continue;
        }
        let enter = |e: &End| span(run, e.rank, e.post).0;
        let is_root = |e: &End| is_root(run, e);
        // Who everybody (or the root) waits for, and until when.
        let (late, until): (Option<&End>, i64) = match metric {
            Metric::LateBroadcast => {
                let root = c.members.iter().find(|e| is_root(e));
                (root, root.map_or(i64::MIN, enter))
            }
            Metric::EarlyReduce => {
                let first = c
                    .members
                    .iter()
                    .filter(|e| !is_root(e))
                    .min_by_key(|e| enter(e));
                (first, first.map_or(i64::MIN, enter))
            }
            _ => {
                let last = c.members.iter().max_by_key(|e| enter(e));
                (last, last.map_or(i64::MIN, enter))
            }
        };
        let Some(late) = late else { continue };
        for e in &c.members {
            if e.rank == late.rank || (metric == Metric::EarlyReduce && !is_root(e)) {
                continue;
            }
            if metric == Metric::LateBroadcast && is_root(e) {
                continue;
            }
            let (en, leave) = span(run, e.rank, e.done);
            let from = en.max(enter(e));
            let ns = until.min(leave) - from;
            if ns > 0 {
                out.push(WaitState {
                    metric,
                    waiter: e.rank,
                    event: e.done,
                    culprit: late.rank,
                    sync: late.post,
                    from,
                    ns,
                });
            }
        }
    }
}

/// Waiting time of one metric at one call site, or of one rank.
#[derive(Clone, Debug, Serialize)]
pub struct MetricTotal {
    /// The metric.
    pub metric: Metric,
    /// Total waiting, ns.
    pub ns: i64,
    /// Number of waits.
    pub count: usize,
}

/// Waiting per metric at one call site.
#[derive(Clone, Debug, Serialize)]
pub struct SiteWaits {
    /// The waiting call.
    pub call: String,
    /// Its call-site signature.
    pub site: u64,
    /// Per metric.
    pub metrics: Vec<MetricTotal>,
    /// Total over the metrics, ns.
    pub ns: i64,
}

/// Waiting per metric on one rank.
#[derive(Clone, Debug, Serialize)]
pub struct RankWaits {
    /// The world rank that waited.
    pub rank: u32,
    /// Per metric.
    pub metrics: Vec<MetricTotal>,
    /// Total over the metrics, ns.
    pub ns: i64,
}

/// One wait state as reported.
#[derive(Clone, Debug, Serialize)]
pub struct WaitReport {
    /// Its metric.
    pub metric: Metric,
    /// The world rank that waited.
    pub rank: u32,
    /// The call it waited in.
    pub call: String,
    /// That call's site signature.
    pub site: u64,
    /// When the waiting began, ns on the trace's common time base.
    pub from_ns: i64,
    /// How long it waited, ns.
    pub ns: i64,
    /// The world rank it waited for.
    pub culprit: u32,
    /// The culprit's call it waited for.
    pub culprit_call: String,
}

/// How many of the longest wait states a summary lists one by one.
pub const LONGEST: usize = 200;

/// The wait-state breakdown of a run: per metric, per call site, per rank.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WaitSummary {
    /// Per metric over the whole run (every metric, zeros included).
    pub metrics: Vec<MetricTotal>,
    /// Per call site, most waiting first.
    pub sites: Vec<SiteWaits>,
    /// Per rank, in rank order.
    pub ranks: Vec<RankWaits>,
    /// The longest wait states one by one (at most [`LONGEST`]), longest
    /// first.
    pub longest: Vec<WaitReport>,
}

fn totals(map: &BTreeMap<Metric, (i64, usize)>) -> Vec<MetricTotal> {
    map.iter()
        .map(|(&metric, &(ns, count))| MetricTotal { metric, ns, count })
        .collect()
}

/// Sums `waits` per metric, per call site and per rank.
pub fn summarize(run: &Run, waits: &[WaitState]) -> WaitSummary {
    let mut metrics: BTreeMap<Metric, (i64, usize)> =
        Metric::ALL.iter().map(|&k| (k, (0, 0))).collect();
    let mut sites: BTreeMap<(Op, u64), BTreeMap<Metric, (i64, usize)>> = BTreeMap::new();
    let mut ranks: Vec<BTreeMap<Metric, (i64, usize)>> = vec![BTreeMap::new(); run.ranks.len()];
    for w in waits {
        let add = |m: &mut BTreeMap<Metric, (i64, usize)>| {
            let t = m.entry(w.metric).or_default();
            t.0 += w.ns;
            t.1 += 1;
        };
        add(&mut metrics);
        let ev = &run.ranks[w.waiter as usize].events[w.event as usize];
        add(sites.entry((ev.op, ev.site)).or_default());
        add(&mut ranks[w.waiter as usize]);
    }
    let mut sites: Vec<SiteWaits> = sites
        .into_iter()
        .map(|((op, site), m)| SiteWaits {
            call: op.name().to_string(),
            site,
            ns: m.values().map(|t| t.0).sum(),
            metrics: totals(&m),
        })
        .collect();
    sites.sort_by_key(|s| std::cmp::Reverse(s.ns));
    // The LONGEST longest (ties: earliest, lowest rank, first found),
    // selected before they are sorted: a sort of millions of waits was a
    // tenth of the analysis.
    let key = |i: usize| {
        let w = &waits[i];
        (std::cmp::Reverse(w.ns), w.from, w.waiter, i)
    };
    let mut order: Vec<usize> = (0..waits.len()).collect();
    if order.len() > LONGEST {
        order.select_nth_unstable_by_key(LONGEST, |&i| key(i));
        order.truncate(LONGEST);
    }
    order.sort_unstable_by_key(|&i| key(i));
    let longest = order
        .into_iter()
        .map(|i| &waits[i])
        .map(|w| {
            let ev = &run.ranks[w.waiter as usize].events[w.event as usize];
            let culprit = &run.ranks[w.culprit as usize];
            WaitReport {
                metric: w.metric,
                rank: run.ranks[w.waiter as usize].rank,
                call: ev.op.name().to_string(),
                site: ev.site,
                from_ns: w.from,
                ns: w.ns,
                culprit: culprit.rank,
                culprit_call: culprit.events[w.sync as usize].op.name().to_string(),
            }
        })
        .collect();
    WaitSummary {
        longest,
        metrics: totals(&metrics),
        sites,
        ranks: ranks
            .iter()
            .enumerate()
            .map(|(i, m)| RankWaits {
                rank: run.ranks[i].rank,
                ns: m.values().map(|t| t.0).sum(),
                metrics: totals(m),
            })
            .collect(),
    }
}
