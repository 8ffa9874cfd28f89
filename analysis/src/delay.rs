//! Root causes of wait states (delay costs, Böhme et al.) and the critical
//! path (Haus 2024 §2.2.2, §3.4, §3.5).
//!
//! **Regions.** A trace of MPI calls knows two kinds of activity per rank:
//! the computation between two calls, named after the call that ends it
//! ("computation before `Send` at site S"), and the time inside a call
//! that is not waiting. These play the role of Scalasca's call paths.
//!
//! **Delay costs.** For a wait state on rank B caused by rank A, both
//! ranks' activity since their previous synchronisation with each other (a
//! wait state between them, either way; else the start of the run) is
//! summed per region (waiting excluded): d(A) up to A's synchronising call,
//! d(B) up to B's waiting call. The delay δ = d(A) − d(B), positive parts
//! only, is what made A late. The wait's *short-term* cost is charged to
//! δ's regions in proportion (at most the wait). Whatever δ does not
//! explain was A's own waiting in that interval propagating on: it is
//! handed to A's wait states there, in proportion to their length, and
//! becomes *long-term* cost of the delays that caused them. Waits are
//! processed from the last to the first, so propagation is complete when a
//! wait is reached; this is the backward replay of Scalasca done on the
//! whole run in memory. As in Haus 2024, a call taking part in two
//! synchronisations (a send with a late receiver whose receive was probed
//! late) is charged for each.
//!
//! **Critical path.** From the rank that finishes last, backwards: on a
//! rank the path takes every activity until it reaches a call that waited;
//! there it moves to the rank that caused the wait, at the call it waited
//! for. The path thus never contains waiting, and its length is the run's
//! length minus nothing that could have been saved by waiting less.

use std::collections::{BTreeMap, HashMap};

use compress::Op;
use serde::Serialize;

use crate::run::Run;
use crate::waitstates::WaitState;

/// The most events of a synchronisation interval looked at (the most
/// recent ones), which bounds the cost of a wait with no recent
/// synchronisation.
const MAX_INTERVAL: usize = 4096;

/// An activity of a rank, in which time is spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Region {
    /// `true`: inside the call (waiting excluded); `false`: the computation
    /// before it.
    pub mpi: bool,
    /// The call.
    pub op: Op,
    /// Its call-site signature.
    pub site: u64,
}

impl Region {
    fn of(run: &Run, rank: usize, ev: usize, mpi: bool) -> Region {
        let e = &run.ranks[rank].events[ev];
        Region {
            mpi,
            op: e.op,
            site: e.site,
        }
    }
}

/// The delay costs charged to one region of one rank.
#[derive(Clone, Debug, Serialize)]
pub struct DelayCost {
    /// The world rank with the delay.
    pub rank: u32,
    /// Where.
    pub region: Region,
    /// Waiting it caused directly, ns.
    pub short_term_ns: i64,
    /// Waiting it caused through propagation, ns.
    pub long_term_ns: i64,
}

/// Time of one region on the critical path.
#[derive(Clone, Debug, Serialize)]
pub struct PathShare {
    /// Where.
    pub region: Region,
    /// Time on the path, ns.
    pub ns: i64,
}

/// One stretch of the critical path on one rank, in time order.
#[derive(Clone, Debug, Serialize)]
pub struct PathSegment {
    /// The world rank.
    pub rank: u32,
    /// First and last event index of the stretch.
    pub events: (usize, usize),
    /// When it begins and ends, ns.
    pub time_ns: (i64, i64),
}

/// Delay costs and the critical path of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DelayReport {
    /// Delay costs per rank and region, most costly first.
    pub costs: Vec<DelayCost>,
    /// Waiting no delay explained (a wait whose culprit was not slower in
    /// any region and had not waited itself), ns.
    pub unexplained_ns: i64,
    /// The critical path's length, ns.
    pub path_ns: i64,
    /// Its profile: time per region on the path, most first.
    pub path_profile: Vec<PathShare>,
    /// Time on the path per world rank.
    pub path_ranks: Vec<(u32, i64)>,
    /// The path, in time order.
    pub path: Vec<PathSegment>,
}

/// Where each rank synchronised with whom: the calls of wait states and
/// the calls they waited for. Only there were two ranks aligned in time (a
/// message that arrived before its receive began did not align them), so
/// these bound the intervals whose activity is compared.
struct Syncs {
    /// (rank, peer) → events of `rank` that synchronised with `peer`,
    /// sorted.
    pairs: HashMap<(usize, usize), Vec<usize>>,
}

impl Syncs {
    fn new(waits: &[WaitState]) -> Syncs {
        let mut pairs: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for w in waits {
            pairs
                .entry((w.waiter, w.culprit))
                .or_default()
                .push(w.event);
            pairs.entry((w.culprit, w.waiter)).or_default().push(w.sync);
        }
        for v in pairs.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        Syncs { pairs }
    }

    /// The last event of `rank` before `ev` that synchronised with `peer`.
    fn before(&self, rank: usize, peer: usize, ev: usize) -> Option<usize> {
        let v = self.pairs.get(&(rank, peer))?;
        let i = v.partition_point(|&x| x < ev);
        i.checked_sub(1).map(|i| v[i])
    }
}

/// Activity per region of `rank` from the end of event `from` (exclusive;
/// the rank's start when `None`) to the entry of event `to`, waiting
/// excluded; and the indices of the wait states inside.
fn activity(
    run: &Run,
    rank: usize,
    from: Option<usize>,
    to: usize,
    waited: &HashMap<(usize, usize), Vec<usize>>,
    waits: &[WaitState],
) -> (HashMap<Region, i64>, Vec<usize>) {
    let spans = &run.ranks[rank].spans;
    let first = from
        .map_or(0, |f| f + 1)
        .max(to.saturating_sub(MAX_INTERVAL));
    let mut d: HashMap<Region, i64> = HashMap::new();
    let mut inside = Vec::new();
    for e in first..=to.min(spans.len().saturating_sub(1)) {
        if e > 0 && (e > first || from.is_some()) {
            let gap = spans[e].0 - spans[e - 1].1;
            if gap > 0 {
                *d.entry(Region::of(run, rank, e, false)).or_default() += gap;
            }
        }
        if e == to {
            break;
        }
        let mut t = spans[e].1 - spans[e].0;
        if let Some(ws) = waited.get(&(rank, e)) {
            for &w in ws {
                t -= waits[w].ns;
                inside.push(w);
            }
        }
        if t > 0 {
            *d.entry(Region::of(run, rank, e, true)).or_default() += t;
        }
    }
    (d, inside)
}

/// Delay costs and the critical path of `run` (which must have a timeline)
/// given its wait states.
pub fn analyse(run: &Run, waits: &[WaitState]) -> DelayReport {
    if !run.timed || run.ranks.is_empty() {
        return DelayReport::default();
    }
    let syncs = Syncs::new(waits);
    let mut waited: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (i, w) in waits.iter().enumerate() {
        waited.entry((w.waiter, w.event)).or_default().push(i);
    }
    let mut order: Vec<usize> = (0..waits.len()).collect();
    order.sort_by_key(|&i| {
        std::cmp::Reverse((waits[i].from + waits[i].ns, waits[i].waiter, waits[i].event))
    });
    let mut propagated = vec![0f64; waits.len()];
    let mut costs: HashMap<(usize, Region), (f64, f64)> = HashMap::new();
    let mut unexplained = 0f64;
    for &i in &order {
        let w = waits[i];
        let omega = w.ns as f64;
        if omega <= 0.0 {
            continue;
        }
        let (a, b) = (w.culprit, w.waiter);
        let (da, inside_a) = activity(run, a, syncs.before(a, b, w.sync), w.sync, &waited, waits);
        let (db, _) = activity(run, b, syncs.before(b, a, w.event), w.event, &waited, waits);
        let delta: Vec<(Region, f64)> = da
            .iter()
            .map(|(r, &t)| (*r, (t - db.get(r).copied().unwrap_or(0)) as f64))
            .filter(|x| x.1 > 0.0)
            .collect();
        let sum: f64 = delta.iter().map(|x| x.1).sum();
        let load = omega + propagated[i];
        let f = (sum / omega).min(1.0);
        for (r, dl) in &delta {
            let share = dl / sum;
            let c = costs.entry((a, *r)).or_default();
            c.0 += f * omega * share;
            c.1 += f * propagated[i] * share;
        }
        let rest = (1.0 - f) * load;
        let omega_a: f64 = inside_a.iter().map(|&j| waits[j].ns as f64).sum();
        if rest > 0.0 {
            if omega_a > 0.0 {
                for &j in &inside_a {
                    propagated[j] += rest * waits[j].ns as f64 / omega_a;
                }
            } else {
                unexplained += rest;
            }
        }
    }
    let mut costs: Vec<DelayCost> = costs
        .into_iter()
        .map(|((r, region), (s, l))| DelayCost {
            rank: run.ranks[r].rank,
            region,
            short_term_ns: s.round() as i64,
            long_term_ns: l.round() as i64,
        })
        .filter(|c| c.short_term_ns + c.long_term_ns > 0)
        .collect();
    costs.sort_by_key(|c| {
        (
            std::cmp::Reverse(c.short_term_ns + c.long_term_ns),
            c.rank,
            c.region,
        )
    });
    let mut rep = critical_path(run, &waited, waits);
    rep.costs = costs;
    rep.unexplained_ns = unexplained.round() as i64;
    rep
}

fn critical_path(
    run: &Run,
    waited: &HashMap<(usize, usize), Vec<usize>>,
    waits: &[WaitState],
) -> DelayReport {
    let last = |r: usize| run.ranks[r].spans.last().map_or(i64::MIN, |s| s.1);
    let Some(mut rank) = (0..run.ranks.len())
        .filter(|&r| !run.ranks[r].spans.is_empty())
        .max_by_key(|&r| (last(r), std::cmp::Reverse(r)))
    else {
        return DelayReport::default();
    };
    let mut ev = run.ranks[rank].spans.len() - 1;
    let mut profile: BTreeMap<Region, i64> = BTreeMap::new();
    let mut per_rank: BTreeMap<usize, i64> = BTreeMap::new();
    let mut path: Vec<PathSegment> = Vec::new();
    let mut seg_end = ev;
    let mut on_path = |rank: usize, region: Region, t: i64| {
        if t > 0 {
            *profile.entry(region).or_default() += t;
            *per_rank.entry(rank).or_default() += t;
        }
    };
    // Every step moves to an earlier event or to an event that began
    // earlier on another rank, so the walk ends; the bound guards against
    // inconsistent timestamps.
    let mut steps = run.events() * 2 + 16;
    let seg = |rank: usize, from: usize, to: usize| {
        let spans = &run.ranks[rank].spans;
        PathSegment {
            rank: run.ranks[rank].rank,
            events: (from, to),
            time_ns: (spans[from].0, spans[to].1),
        }
    };
    loop {
        steps = steps.saturating_sub(1);
        let (enter, leave) = run.ranks[rank].spans[ev];
        let worst = waited
            .get(&(rank, ev))
            .and_then(|v| v.iter().copied().max_by_key(|&i| waits[i].ns));
        match worst {
            Some(i) if steps > 0 => {
                // After the wait the path is on this call; before it, on
                // the call of the culprit that it waited for.
                let w = waits[i];
                let until = w.from + w.ns;
                on_path(rank, Region::of(run, rank, ev, true), leave - until);
                path.push(seg(rank, ev, seg_end));
                rank = w.culprit;
                ev = w.sync;
                seg_end = ev;
                let (ce, cl) = run.ranks[rank].spans[ev];
                on_path(rank, Region::of(run, rank, ev, true), cl.min(until) - ce);
            }
            _ => on_path(rank, Region::of(run, rank, ev, true), leave - enter),
        }
        if ev == 0 || steps == 0 {
            path.push(seg(rank, ev, seg_end));
            break;
        }
        let gap = run.ranks[rank].spans[ev].0 - run.ranks[rank].spans[ev - 1].1;
        on_path(rank, Region::of(run, rank, ev, false), gap);
        ev -= 1;
    }
    path.reverse();
    let mut profile: Vec<PathShare> = profile
        .into_iter()
        .map(|(region, ns)| PathShare { region, ns })
        .collect();
    profile.sort_by_key(|p| (std::cmp::Reverse(p.ns), p.region));
    DelayReport {
        path_ns: per_rank.values().sum(),
        path_ranks: per_rank
            .into_iter()
            .map(|(r, ns)| (run.ranks[r].rank, ns))
            .collect(),
        path_profile: profile,
        path,
        ..DelayReport::default()
    }
}
