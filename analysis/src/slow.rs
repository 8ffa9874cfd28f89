//! Why a pattern instance was slow: who waited for whom inside it.
//!
//! Seed 000 names the cause from the event of the last process to start.
//! That cannot tell a late sender from a late receiver in codes that post
//! their receives first and send later (a halo exchange: the late rank
//! starts on time and sends late), so the cause is derived here from the
//! waits themselves, with Scalasca's definitions:
//!
//! * **late sender**: a call completing receives (a blocking receive, or
//!   the `Wait*`/`Test*` that completed a nonblocking one) was entered
//!   before the latest of their sends began; it waited
//!   `min(send start, call leave) − call enter`, caused by that sender;
//! * **late receiver**: a call completing sends was entered before the
//!   receive was posted and did not return before it was: it waited
//!   `receive post − call enter`, caused by the receiver. A send that
//!   returned before the receive existed was buffered (eager) and did not
//!   wait; a call that also completes receives counts only its synchronous
//!   sends, since it may be waiting for the receives;
//! * **late rank in a collective**: every member waited from its arrival
//!   until the last member's arrival (bounded by its own return), caused
//!   by the last member.
//!
//! The instance's cause is the rank that caused the most waiting, and the
//! kind of wait it caused most.

use serde::Serialize;

use crate::matching::{End, Matching, Message};
use crate::patterns::Instance;
use crate::run::Run;

/// Kinds of wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A receive waited for its send to begin.
    LateSender,
    /// A send waited for its receive to be posted.
    LateReceiver,
    /// Members of a collective waited for the last one to arrive.
    LateCollective,
}

impl Cause {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Cause::LateSender => "late sender",
            Cause::LateReceiver => "late receiver",
            Cause::LateCollective => "late rank in a collective",
        }
    }
}

/// One wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Its kind.
    pub cause: Cause,
    /// The rank that waited (index into [`Run::ranks`]).
    pub waiter: usize,
    /// The event it waited in.
    pub event: usize,
    /// The rank it waited for.
    pub culprit: usize,
    /// How long, ns.
    pub ns: i64,
}

fn span(run: &Run, rank: usize, ev: usize) -> (i64, i64) {
    run.ranks[rank].spans[ev]
}

/// The waits inside `inst` (empty without a timeline).
pub fn waits(run: &Run, m: &Matching, inst: &Instance) -> Vec<Wait> {
    if !run.timed {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Per message: the completing call on one side, (rank, event), and
    // the post time and rank of the other side.
    let ends = |mine: fn(&Message) -> End, theirs: fn(&Message) -> End| {
        inst.messages
            .iter()
            .map(|&i| {
                let (a, b) = (mine(&m.messages[i]), theirs(&m.messages[i]));
                ((a.rank, a.done), span(run, b.rank, b.post).0, b.rank)
            })
            .collect::<Vec<_>>()
    };
    // Late sender: per call completing receives, the latest send start.
    let mut by_recv = ends(|x| x.recv, |x| x.send);
    by_recv.sort_unstable();
    for g in by_recv.chunk_by(|a, b| a.0 == b.0) {
        let ((rank, ev), _, _) = g[0];
        let &(_, start, culprit) = g.iter().max_by_key(|x| x.1).expect("non-empty chunk");
        let (enter, leave) = span(run, rank, ev);
        if start > enter {
            out.push(Wait {
                cause: Cause::LateSender,
                waiter: rank,
                event: ev,
                culprit,
                ns: start.min(leave) - enter,
            });
        }
    }
    // Late receiver: per call completing sends, the latest receive post.
    // A call that also completes receives (a Waitall of a halo exchange)
    // may wait for those instead: only a synchronous send, which cannot
    // complete before its receive exists, shows a late receiver there.
    let completes_recvs: std::collections::HashSet<(usize, usize)> =
        by_recv.iter().map(|x| x.0).collect();
    let mut by_send: Vec<_> = ends(|x| x.send, |x| x.recv)
        .into_iter()
        .zip(&inst.messages)
        .filter(|(e, i)| m.messages[**i].sync || !completes_recvs.contains(&e.0))
        .map(|(e, _)| e)
        .collect();
    by_send.sort_unstable();
    for g in by_send.chunk_by(|a, b| a.0 == b.0) {
        let ((rank, ev), _, _) = g[0];
        let &(_, post, culprit) = g.iter().max_by_key(|x| x.1).expect("non-empty chunk");
        let (enter, leave) = span(run, rank, ev);
        if post > enter && leave >= post {
            out.push(Wait {
                cause: Cause::LateReceiver,
                waiter: rank,
                event: ev,
                culprit,
                ns: post - enter,
            });
        }
    }
    // Collectives: everybody waits for the last arrival.
    for &ci in &inst.collectives {
        let c = &m.collectives[ci];
        let arrivals: Vec<i64> = c
            .members
            .iter()
            .map(|e| span(run, e.rank, e.post).0)
            .collect();
        let Some((last_i, &last)) = arrivals.iter().enumerate().max_by_key(|x| *x.1) else {
            continue;
        };
        let culprit = c.members[last_i].rank;
        for (e, &arr) in c.members.iter().zip(&arrivals) {
            let (enter, leave) = span(run, e.rank, e.done);
            let from = enter.max(arr);
            let w = last.min(leave) - from;
            if e.rank != culprit && w > 0 {
                out.push(Wait {
                    cause: Cause::LateCollective,
                    waiter: e.rank,
                    event: e.done,
                    culprit,
                    ns: w,
                });
            }
        }
    }
    out
}

/// The rank that caused the most waiting in `waits`, the kind of wait it
/// caused most, and how much it caused in all (ns).
pub fn blame(waits: &[Wait]) -> Option<(usize, Cause, i64)> {
    let mut per: std::collections::BTreeMap<usize, [i64; 3]> = Default::default();
    for w in waits {
        per.entry(w.culprit).or_default()[w.cause as usize] += w.ns;
    }
    let (&rank, sums) = per
        .iter()
        .max_by_key(|(r, s)| (s.iter().sum::<i64>(), std::cmp::Reverse(**r)))?;
    let kinds = [
        Cause::LateSender,
        Cause::LateReceiver,
        Cause::LateCollective,
    ];
    let k = (0..3).max_by_key(|&k| (sums[k], std::cmp::Reverse(k)))?;
    Some((rank, kinds[k], sums.iter().sum()))
}
