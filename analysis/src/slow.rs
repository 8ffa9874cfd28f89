//! Why a pattern instance was slow: who waited for whom inside it.
//!
//! Alawneh and Hamou-Lhadj 2022 name the cause from the event of the last process to start.
//! That cannot tell a late sender from a late receiver in codes that post
//! their receives first and send later (a halo exchange: the late rank
//! starts on time and sends late), so the cause is derived here from the
//! wait states inside the instance ([`crate::waitstates`], Scalasca's
//! definitions), grouped into three kinds: late sender (with wrong order),
//! late receiver, and a late rank in a collective (every collective
//! metric). The instance's cause is the rank that caused the most waiting,
//! and the kind of wait it caused most.

use rayon::prelude::*;
use serde::Serialize;

use crate::patterns::Instance;
use crate::waitstates::{Metric, WaitState};

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

impl From<Metric> for Cause {
    fn from(m: Metric) -> Cause {
        match m {
            Metric::LateSender | Metric::LateSenderWrongOrder => Cause::LateSender,
            Metric::LateReceiver => Cause::LateReceiver,
            Metric::WaitAtBarrier
            | Metric::WaitAtNxN
            | Metric::LateBroadcast
            | Metric::EarlyReduce => Cause::LateCollective,
        }
    }
}

/// One wait, as the instance analysis sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Its kind.
    pub cause: Cause,
    /// The rank that waited (index into [`crate::run::Run::ranks`]).
    pub waiter: usize,
    /// The event it waited in.
    pub event: usize,
    /// The rank it waited for.
    pub culprit: usize,
    /// How long, ns.
    pub ns: i64,
}

/// The wait states of a run, by the call that waited, so that each
/// instance finds its own: one array ordered by (rank, event), searched,
/// rather than a map of small vectors (which cost more than the waits
/// themselves at millions of waits).
#[derive(Debug, Default)]
pub struct WaitIndex<'a> {
    all: &'a [WaitState],
    /// (event, index into `all`) of every wait, ordered by (waiter,
    /// event, index): a search reads this array alone.
    by_call: Vec<(u32, u32)>,
    /// Where each rank's waits begin in `by_call` (one more entry than
    /// ranks), so that a search stays within one rank's waits.
    rank_start: Vec<usize>,
}

impl<'a> WaitIndex<'a> {
    /// Indexes `all`.
    pub fn new(all: &'a [WaitState]) -> WaitIndex<'a> {
        let mut order: Vec<(usize, u32, u32)> = all
            .iter()
            .enumerate()
            .map(|(i, w)| (w.waiter as usize, w.event, i as u32))
            .collect();
        // The waits of one call keep their order.
        order.par_sort_unstable();
        let ranks = order.last().map_or(0, |w| w.0 + 1);
        let rank_start = (0..=ranks)
            .map(|r| order.partition_point(|w| w.0 < r))
            .collect();
        WaitIndex {
            all,
            by_call: order.into_iter().map(|(_, e, i)| (e, i)).collect(),
            rank_start,
        }
    }

    /// The waits of one call: (event, index into the wait states).
    fn at(&self, rank: usize, event: usize) -> &[(u32, u32)] {
        let (Some(&lo), Some(&hi)) = (self.rank_start.get(rank), self.rank_start.get(rank + 1))
        else {
            return &[];
        };
        let mine = &self.by_call[lo..hi];
        let a = mine.partition_point(|w| (w.0 as usize) < event);
        let n = mine[a..]
            .iter()
            .take_while(|w| w.0 as usize == event)
            .count();
        &mine[a..a + n]
    }

    /// The waits inside `inst` (in the order of its events).
    pub fn waits(&self, inst: &Instance) -> Vec<Wait> {
        inst.events
            .iter()
            .flat_map(|&(r, e)| self.at(r, e))
            .map(|&(_, i)| {
                let w = &self.all[i as usize];
                Wait {
                    cause: w.metric.into(),
                    waiter: w.waiter as usize,
                    event: w.event as usize,
                    culprit: w.culprit as usize,
                    ns: w.ns,
                }
            })
            .collect()
    }
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
