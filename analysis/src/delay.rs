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
//! length minus nothing that could have been saved by waiting less. The
//! walk keeps the time up to which the path is laid, which only moves
//! back: a wait is followed only to a call that began before it, and every
//! stretch is cut off at it, so that calls whose spans overlap on one rank
//! (the published SMG2000 traces' exchanges) count once and the walk takes
//! at most one step per event whatever the timestamps.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;
use trace::Op;

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
///
/// For each wait state: the culprit's last event before its synchronising
/// call that synchronised with the waiter, and the waiter's last event
/// before its waiting call that synchronised with the culprit
/// (`u32::MAX`: none). Found by one sort of all synchronisation points
/// and a sweep, not by a search per wait (which at millions of waits was
/// mostly cache misses). Events and waits are numbered in 32 bits, as
/// everywhere in the analysis' per-event arrays: 2^31 wait states would
/// need over 100 GB of them in memory first.
fn previous_syncs(waits: &[WaitState]) -> Vec<[u32; 2]> {
    // (rank, peer), event, wait index × 2 + side (0: the culprit's
    // synchronising call, 1: the waiter's waiting call).
    let mut points: Vec<(u64, u32, u32)> = Vec::with_capacity(2 * waits.len());
    for (i, w) in waits.iter().enumerate() {
        let pair = |rank: u32, peer: u32| u64::from(rank) << 32 | u64::from(peer);
        points.push((pair(w.culprit, w.waiter), w.sync, 2 * i as u32));
        points.push((pair(w.waiter, w.culprit), w.event, 2 * i as u32 + 1));
    }
    points.par_sort_unstable();
    let mut out = vec![[u32::MAX; 2]; waits.len()];
    // Within one pair, ascending by event: the previous distinct event.
    let mut prev = u32::MAX;
    for (k, &(pair, ev, who)) in points.iter().enumerate() {
        if k == 0 || points[k - 1].0 != pair {
            prev = u32::MAX;
        } else if points[k - 1].1 != ev {
            prev = points[k - 1].1;
        }
        out[(who / 2) as usize][(who % 2) as usize] = prev;
    }
    out
}

/// One kind of a rank's activity (the computation before each call, or
/// the time inside each call) event by event, with running sums every
/// `stride` events, so that the activity per call kind between two events
/// is a difference of two checkpoints and a short scan at each end: time
/// in the number of kinds and the stride, not in the interval's length,
/// and a scan of adjacent memory instead of a search per region.
struct Activity {
    /// Per event: its time, ns (0 when none). The event's call kind is in
    /// [`RankIndex::kind`], shared by both activities.
    t: Vec<i64>,
    /// `cum[c * width + k]`: the time of call kind `k` in events
    /// `0..c * stride`.
    cum: Vec<i64>,
}

impl Activity {
    fn new(t: Vec<i64>, kind: &[u32], width: usize, stride: usize) -> Activity {
        let rows = t.len() / stride + 1;
        let mut cum = vec![0i64; rows * width];
        let mut run = vec![0i64; width];
        for c in 1..rows {
            let range = (c - 1) * stride..c * stride;
            for (&k, &x) in kind[range.clone()].iter().zip(&t[range]) {
                run[k as usize] += x;
            }
            cum[c * width..(c + 1) * width].copy_from_slice(&run);
        }
        Activity { t, cum }
    }

    /// Adds the time per call kind of events `lo..=hi` to `d`.
    fn add(&self, kind: &[u32], lo: usize, hi: usize, stride: usize, d: &mut [i64]) {
        if lo > hi || lo >= self.t.len() {
            return;
        }
        let hi = hi.min(self.t.len() - 1);
        let (a, b) = (lo.div_ceil(stride), (hi + 1) / stride);
        let scan = |range: std::ops::Range<usize>, d: &mut [i64]| {
            for (&k, &x) in kind[range.clone()].iter().zip(&self.t[range]) {
                d[k as usize] += x;
            }
        };
        if a < b {
            let w = d.len();
            for (k, x) in d.iter_mut().enumerate() {
                *x += self.cum[b * w + k] - self.cum[a * w + k];
            }
            scan(lo..a * stride, d);
            scan(b * stride..hi + 1, d);
        } else {
            scan(lo..hi + 1, d);
        }
    }
}

/// One rank's activity and wait states, indexed for interval queries.
struct RankIndex {
    /// The rank's events.
    events: usize,
    /// The rank's call kinds (operation and site): the region of the
    /// computation before such a call and of the time inside it (indices
    /// into [`Index::regions`]).
    kinds: Vec<[u32; 2]>,
    /// Each event's call kind (index into `kinds`).
    kind: Vec<u32>,
    /// The rank's regions ascending: (region, slot), where slot `k` is the
    /// computation before call kind `k` and `width + k` the time inside
    /// it, so that an interval's activity comes out in region order
    /// without a sort.
    by_region: Vec<(u32, u32)>,
    /// Events between two checkpoints of the running sums.
    stride: usize,
    /// The computation before each event.
    gaps: Activity,
    /// The time inside each call, its waiting excluded.
    calls: Activity,
    /// The rank's wait states, ordered by their event: (event, index into
    /// the wait states).
    waits: Vec<(usize, usize)>,
    /// `wait_cum[k]`: the length of `waits[..k]`, ns.
    wait_cum: Vec<f64>,
    /// The waiting handed on to each of `waits` so far, per ns of its
    /// length: a Fenwick tree over `waits` that adds a share to a range of
    /// them at once and reads one back (range update, point query).
    handed: Vec<f64>,
}

impl RankIndex {
    /// The range of `waits` whose events lie in `lo..=hi`.
    fn waits_in(&self, lo: usize, hi: usize) -> std::ops::Range<usize> {
        if lo > hi {
            return 0..0;
        }
        let a = self.waits.partition_point(|w| w.0 < lo);
        let b = self.waits.partition_point(|w| w.0 <= hi);
        a..b.max(a)
    }

    /// The wait states of event `ev` (indices into the wait states), in
    /// order.
    fn waits_at(&self, ev: usize) -> impl Iterator<Item = usize> + '_ {
        self.waits[self.waits_in(ev, ev)].iter().map(|w| w.1)
    }

    /// Adds `x` per ns to the waits of `range`.
    fn hand_on(&mut self, range: std::ops::Range<usize>, x: f64) {
        let n = self.handed.len();
        let mut add = |mut i: usize, x: f64| {
            i += 1;
            while i <= n {
                self.handed[i - 1] += x;
                i += i & i.wrapping_neg();
            }
        };
        add(range.start, x);
        if range.end < n {
            add(range.end, -x);
        }
    }

    /// What has been handed on to the `k`-th wait, per ns of its length.
    fn handed_to(&self, k: usize) -> f64 {
        let mut i = k + 1;
        let mut s = 0.0;
        while i > 0 {
            s += self.handed[i - 1];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// Every rank's activity per region as running sums, and its wait
/// states in order: what the delay costs query, so that a wait's cost
/// takes time in the number of regions, not in the length of its
/// synchronisation interval.
struct Index {
    /// The regions, each once.
    regions: Vec<Region>,
    /// Per rank (as in [`Run::ranks`]).
    ranks: Vec<RankIndex>,
}

impl Index {
    fn new(run: &Run, waits: &[WaitState]) -> Index {
        let mut per_rank: Vec<Vec<(usize, usize)>> = vec![Vec::new(); run.ranks.len()];
        for (i, w) in waits.iter().enumerate() {
            per_rank[w.waiter as usize].push((w.event as usize, i));
        }
        // Rank by rank on all cores: the call kinds (operation and site) in
        // order of first appearance, and the activity per event.
        let mut ranks: Vec<(Vec<(Op, u64)>, RankIndex)> = run
            .ranks
            .par_iter()
            .zip(per_rank)
            .map(|(rr, mut mine)| {
                mine.sort_unstable();
                let spans = &rr.spans;
                let mut local: Vec<(Op, u64)> = Vec::new();
                let mut slot: HashMap<(Op, u64), u32> = HashMap::new();
                let mut kind = Vec::with_capacity(spans.len());
                let mut gaps = Vec::with_capacity(spans.len());
                let mut calls = Vec::with_capacity(spans.len());
                let mut next = 0;
                for (e, span) in spans.iter().enumerate() {
                    let ev = &rr.events[e];
                    let k = *slot.entry((ev.op, ev.site)).or_insert_with(|| {
                        local.push((ev.op, ev.site));
                        (local.len() - 1) as u32
                    });
                    kind.push(k);
                    let gap = e.checked_sub(1).map_or(0, |p| span.0 - spans[p].1);
                    gaps.push(gap.max(0));
                    let mut t = span.1 - span.0;
                    while next < mine.len() && mine[next].0 == e {
                        t -= waits[mine[next].1].ns;
                        next += 1;
                    }
                    calls.push(t.max(0));
                }
                // A checkpoint row costs `width` sums: one every 2 × width
                // events keeps them under 8 bytes per event.
                let width = local.len();
                let stride = (2 * width).max(16);
                let mut wait_cum = Vec::with_capacity(mine.len() + 1);
                wait_cum.push(0.0);
                for &(_, i) in &mine {
                    let s = wait_cum.last().copied().unwrap_or(0.0);
                    wait_cum.push(s + waits[i].ns as f64);
                }
                let index = RankIndex {
                    events: spans.len(),
                    gaps: Activity::new(gaps, &kind, width, stride),
                    calls: Activity::new(calls, &kind, width, stride),
                    kinds: Vec::new(),
                    kind,
                    by_region: Vec::new(),
                    stride,
                    handed: vec![0.0; mine.len()],
                    waits: mine,
                    wait_cum,
                };
                (local, index)
            })
            .collect();
        // The regions' ids in order of first appearance, rank by rank (the
        // order the sums of a wait's δ are added in).
        let mut ids: HashMap<Region, u32> = HashMap::new();
        let mut regions = Vec::new();
        for (local, ri) in &mut ranks {
            let mut global = |region: Region| {
                *ids.entry(region).or_insert_with(|| {
                    regions.push(region);
                    (regions.len() - 1) as u32
                })
            };
            ri.kinds = local
                .iter()
                .map(|&(op, site)| {
                    let region = |mpi| Region { mpi, op, site };
                    [global(region(false)), global(region(true))]
                })
                .collect();
            let width = ri.kinds.len();
            ri.by_region = ri
                .kinds
                .iter()
                .enumerate()
                .flat_map(|(k, r)| [(r[0], k as u32), (r[1], (width + k) as u32)])
                .collect();
            ri.by_region.sort_unstable();
        }
        Index {
            regions,
            ranks: ranks.into_iter().map(|(_, ri)| ri).collect(),
        }
    }

    /// The wait states of `rank`'s event `ev`.
    fn waits_at(&self, rank: usize, ev: usize) -> impl Iterator<Item = usize> + '_ {
        self.ranks[rank].waits_at(ev)
    }

    /// Activity per region of `rank` from the end of event `from`
    /// (exclusive; the rank's start when `None`) to the entry of event
    /// `to`, waiting excluded, as (region, ns) pairs ascending by region,
    /// only those above 0; and the range of the rank's wait states inside
    /// (into [`RankIndex::waits`]). At most the last [`MAX_INTERVAL`]
    /// events before `to` are looked at.
    fn activity(
        &self,
        rank: usize,
        from: Option<usize>,
        to: usize,
        sums: &mut Vec<i64>,
    ) -> (Pairs<i64>, std::ops::Range<usize>) {
        let ri = &self.ranks[rank];
        if ri.events == 0 {
            return (Pairs::new(), 0..0);
        }
        let first = from
            .map_or(0, |f| f + 1)
            .max(to.saturating_sub(MAX_INTERVAL));
        let last = to.min(ri.events - 1);
        // The computation before each event from the first on (before the
        // first only when it follows a synchronisation), up to `to`; the
        // time inside each call before `to`.
        let gaps = (
            if from.is_some() {
                first.max(1)
            } else {
                first + 1
            },
            last,
        );
        let calls = match (last == to, last.checked_sub(1)) {
            (false, _) => Some((first, last)),
            (true, Some(l)) => Some((first, l)),
            (true, None) => None,
        };
        // The sums per slot (see `by_region`), in a buffer the caller
        // keeps: a query is made twice per wait state, millions of times.
        let width = ri.kinds.len();
        sums.clear();
        sums.resize(2 * width, 0);
        let (gap_sums, call_sums) = sums.split_at_mut(width);
        ri.gaps.add(&ri.kind, gaps.0, gaps.1, ri.stride, gap_sums);
        if let Some((lo, hi)) = calls {
            ri.calls.add(&ri.kind, lo, hi, ri.stride, call_sums);
        }
        let d: Pairs<i64> = ri
            .by_region
            .iter()
            .map(|&(region, slot)| (region, sums[slot as usize]))
            .filter(|x| x.1 > 0)
            .collect();
        let inside = calls.map_or(0..0, |(lo, hi)| ri.waits_in(lo, hi));
        (d, inside)
    }
}

/// (region, ns) pairs ascending by region: an interval's activity, or a
/// wait's δ. Millions are made, most with a few regions: inline up to 5,
/// which spares an allocation and a free for each. Not more: every query
/// writes its whole inline array, and on the 1,024-rank SMG2000-shaped
/// trace (1 to 5 regions per interval) 8 instead of 5 cost a tenth of the
/// delay analysis in memory traffic alone.
type Pairs<T> = smallvec::SmallVec<[(u32, T); 5]>;

/// Waits whose shares are found together on all cores before they are
/// handed on in order: enough to keep the cores busy, few enough that
/// their shares take little memory.
const CHUNK: usize = 1 << 17;

/// What a wait state's delay was made of: the culprit's activity beyond
/// the waiter's per region since they last synchronised (δ, positive
/// parts only), its sum, and the culprit's own wait states in that
/// interval, which what δ does not explain is handed on to.
struct Share {
    /// (region, ns), ascending by region.
    delta: Pairs<f64>,
    /// The sum of `delta`.
    sum: f64,
    /// The culprit's wait states inside (into its [`RankIndex::waits`]).
    inside: std::ops::Range<usize>,
}

/// One side's activities (a wait's culprit's or its waiter's): the
/// (region, ns) pairs and the range of that rank's wait states inside.
type Side = (Pairs<i64>, std::ops::Range<usize>);

/// The buffers of one chunk's shares, kept from chunk to chunk: a chunk's
/// results are tens of MB, and allocated afresh for every chunk they were
/// returned to the system and faulted in again each time (a quarter of
/// the delay costs' time on the 1,024-rank SMG2000-shaped trace).
#[derive(Default)]
struct Scratch {
    /// (rank, event, the previous synchronisation's event or `u32::MAX`,
    /// position in the chunk) of one side's waits of some length, sorted.
    keyed: Vec<(u32, u32, u32, u32)>,
    /// The culprits' and the waiters' activities, in `keyed`'s order.
    found: [Vec<Side>; 2],
    /// Where each wait of the chunk found its own, per side (`u32::MAX`:
    /// a wait of no length, which has no share).
    at: [Vec<u32>; 2],
    /// The chunk's shares, in the chunk's order.
    shares: Vec<Share>,
}

impl Share {
    /// The shares of the waits `chunk` (indices into `waits`), found on
    /// all cores into `scratch.shares`. Each side's activity is queried
    /// rank by rank (the culprits' in the culprits' order, then the
    /// waiters'), so that one rank's running sums stay in the cache.
    fn of_chunk(
        index: &Index,
        previous: &[[u32; 2]],
        waits: &[WaitState],
        chunk: &[usize],
        scratch: &mut Scratch,
    ) {
        let Scratch {
            keyed,
            found,
            at,
            shares,
        } = scratch;
        // One side's activities in (rank, event) order, and where each
        // wait of the chunk found its own (the results stay where they
        // were made: moving them back into the chunk's order copied some
        // 150 bytes per wait and side).
        for side in 0..2 {
            // What a query needs is read here, in the chunk's order, so
            // that the queries (in the ranks' order) read no wait state at
            // random. Waits of no length have no share.
            keyed.clear();
            keyed.par_extend(chunk.par_iter().enumerate().filter_map(|(k, &i)| {
                let w = &waits[i];
                let (rank, ev) = match side {
                    0 => (w.culprit, w.sync),
                    _ => (w.waiter, w.event),
                };
                (w.ns > 0).then_some((rank, ev, previous[i][side], k as u32))
            }));
            keyed.par_sort_unstable();
            keyed
                .par_iter()
                .map_init(Vec::new, |sums, &(rank, ev, from, _)| {
                    let from = (from != u32::MAX).then_some(from as usize);
                    index.activity(rank as usize, from, ev as usize, sums)
                })
                .collect_into_vec(&mut found[side]);
            let at = &mut at[side];
            at.clear();
            at.resize(chunk.len(), u32::MAX);
            for (pos, &(.., k)) in keyed.iter().enumerate() {
                at[k as usize] = pos as u32;
            }
        }
        let [culprits, waiters] = &*found;
        let [at_c, at_w] = &*at;
        (0..chunk.len())
            .into_par_iter()
            .map(|k| {
                if at_c[k] == u32::MAX {
                    return Share {
                        delta: Pairs::new(),
                        sum: 0.0,
                        inside: 0..0,
                    };
                }
                let (da, inside) = &culprits[at_c[k] as usize];
                let db = &waiters[at_w[k] as usize].0;
                let inside = inside.clone();
                // δ = d(A) − d(B), positive parts only (both ascending by
                // region).
                let mut delta: Pairs<f64> = Pairs::new();
                let mut j = 0;
                for &(r, t) in da {
                    while j < db.len() && db[j].0 < r {
                        j += 1;
                    }
                    let tb = if j < db.len() && db[j].0 == r {
                        db[j].1
                    } else {
                        0
                    };
                    if t > tb {
                        delta.push((r, (t - tb) as f64));
                    }
                }
                Share {
                    sum: delta.iter().map(|x| x.1).sum(),
                    delta,
                    inside,
                }
            })
            .collect_into_vec(shares);
    }
}

/// Delay costs and the critical path of `run` (which must have a timeline)
/// given its wait states.
pub fn analyse(run: &Run, waits: &[WaitState]) -> DelayReport {
    if !run.timed || run.ranks.is_empty() {
        return DelayReport::default();
    }
    let previous = previous_syncs(waits);
    let mut index = Index::new(run, waits);
    // Where each wait state sits in its waiter's ordered list.
    let mut slot = vec![0usize; waits.len()];
    for ri in &index.ranks {
        for (k, &(_, i)) in ri.waits.iter().enumerate() {
            slot[i] = k;
        }
    }
    // Latest end first; the waits of one call in their order. The keys
    // are taken out first: a comparison that read two wait states at
    // random places was mostly cache misses.
    type Keyed = (std::cmp::Reverse<(i64, u32, u32)>, u32);
    let mut keyed: Vec<Keyed> = waits
        .par_iter()
        .enumerate()
        .map(|(i, w)| {
            (
                std::cmp::Reverse((w.from + w.ns, w.waiter, w.event)),
                i as u32,
            )
        })
        .collect();
    keyed.par_sort_unstable();
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i as usize).collect();
    let mut costs: rustc_hash::FxHashMap<(usize, u32), (f64, f64)> = Default::default();
    let mut unexplained = 0f64;
    // What makes up a wait's cost but the waiting handed on to it does
    // not change as waits are processed, so it is found for many waits at
    // once on all cores; the handing on is then done in order.
    let mut scratch = Scratch::default();
    for chunk in order.chunks(CHUNK) {
        Share::of_chunk(&index, &previous, waits, chunk, &mut scratch);
        for (&i, share) in chunk.iter().zip(&scratch.shares) {
            let w = waits[i];
            let omega = w.ns as f64;
            if omega <= 0.0 {
                continue;
            }
            let propagated = omega * index.ranks[w.waiter as usize].handed_to(slot[i]);
            let Share { delta, sum, inside } = share;
            let (sum, inside) = (*sum, inside.clone());
            let load = omega + propagated;
            let f = (sum / omega).min(1.0);
            for (r, dl) in delta {
                let share = dl / sum;
                let c = costs.entry((w.culprit as usize, *r)).or_default();
                c.0 += f * omega * share;
                c.1 += f * propagated * share;
            }
            let rest = (1.0 - f) * load;
            let ra = &mut index.ranks[w.culprit as usize];
            let omega_a = ra.wait_cum[inside.end] - ra.wait_cum[inside.start];
            if rest > 0.0 {
                if omega_a > 0.0 {
                    ra.hand_on(inside, rest / omega_a);
                } else {
                    unexplained += rest;
                }
            }
        }
    }
    let mut costs: Vec<DelayCost> = costs
        .into_iter()
        .map(|((r, region), (s, l))| DelayCost {
            rank: run.ranks[r].rank,
            region: index.regions[region as usize],
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
    let mut rep = critical_path(run, &index, waits);
    rep.costs = costs;
    rep.unexplained_ns = unexplained.round() as i64;
    rep
}

/// The critical path as it is laid, from the end backwards: time per
/// region and per rank, and the position up to which it is laid.
struct Laid {
    profile: rustc_hash::FxHashMap<Region, i64>,
    per_rank: Vec<i64>,
    /// Only moves back: every stretch is cut off at it, so that calls
    /// whose spans overlap (the published SMG2000 traces' receives and
    /// sends all complete together) count once.
    pos: i64,
}

impl Laid {
    /// Lays `rank`'s stretch `lo..hi` of `region`, the part before the
    /// position.
    fn lay(&mut self, rank: usize, region: Region, lo: i64, hi: i64) {
        let t = hi.min(self.pos) - lo;
        if t > 0 {
            *self.profile.entry(region).or_default() += t;
            self.per_rank[rank] += t;
        }
        self.pos = self.pos.min(lo);
    }
}

fn critical_path(run: &Run, index: &Index, waits: &[WaitState]) -> DelayReport {
    let last = |r: usize| run.ranks[r].spans.last().map_or(i64::MIN, |s| s.1);
    let Some(mut rank) = (0..run.ranks.len())
        .filter(|&r| !run.ranks[r].spans.is_empty())
        .max_by_key(|&r| (last(r), std::cmp::Reverse(r)))
    else {
        return DelayReport::default();
    };
    let mut ev = run.ranks[rank].spans.len() - 1;
    let mut laid = Laid {
        profile: Default::default(),
        per_rank: vec![0; run.ranks.len()],
        pos: i64::MAX,
    };
    let mut path: Vec<PathSegment> = Vec::new();
    let mut seg_end = ev;
    let seg = |rank: usize, from: usize, to: usize| {
        let spans = &run.ranks[rank].spans;
        PathSegment {
            rank: run.ranks[rank].rank,
            events: (from, to),
            time_ns: (spans[from].0, spans[to].1),
        }
    };
    loop {
        let (enter, leave) = run.ranks[rank].spans[ev];
        let call = Region::of(run, rank, ev, true);
        // A wait is followed to its culprit only if the culprit's call
        // began strictly before the path's position, so that the walk ends
        // after at most one step per event. Consistent timestamps always
        // allow it (the culprit's call began no later than the wait ended,
        // within the waiting call); calls that meet at the same
        // nanosecond, or clocks that disagree, once made the walk go round
        // between two ranks until a step bound cut it.
        let worst = index
            .waits_at(rank, ev)
            .max_by_key(|&i| waits[i].ns)
            .filter(|&i| {
                let w = waits[i];
                run.ranks[w.culprit as usize].spans[w.sync as usize].0 < laid.pos
            });
        match worst {
            Some(i) => {
                // After the wait the path is on this call; before it, on
                // the call of the culprit that it waited for.
                let w = waits[i];
                let until = w.from + w.ns;
                laid.lay(rank, call, until, leave);
                path.push(seg(rank, ev, seg_end));
                rank = w.culprit as usize;
                ev = w.sync as usize;
                seg_end = ev;
                let (ce, cl) = run.ranks[rank].spans[ev];
                laid.lay(rank, Region::of(run, rank, ev, true), ce, cl.min(until));
            }
            None => laid.lay(rank, call, enter, leave),
        }
        if ev == 0 {
            path.push(seg(rank, ev, seg_end));
            break;
        }
        let spans = &run.ranks[rank].spans;
        laid.lay(
            rank,
            Region::of(run, rank, ev, false),
            spans[ev - 1].1,
            spans[ev].0,
        );
        ev -= 1;
    }
    let Laid {
        profile, per_rank, ..
    } = laid;
    path.reverse();
    let mut profile: Vec<PathShare> = profile
        .into_iter()
        .map(|(region, ns)| PathShare { region, ns })
        .collect();
    profile.sort_by_key(|p| (std::cmp::Reverse(p.ns), p.region));
    DelayReport {
        path_ns: per_rank.iter().sum(),
        path_ranks: per_rank
            .iter()
            .enumerate()
            .filter(|&(_, &ns)| ns > 0)
            .map(|(r, &ns)| (run.ranks[r].rank, ns))
            .collect(),
        path_profile: profile,
        path,
        ..DelayReport::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RankRun;
    use crate::waitstates::Metric;
    use trace::{Event, SplitMix64};

    /// Where each rank synchronised with whom: the calls of wait states and
    /// the calls they waited for. Only there were two ranks aligned in time (a
    /// message that arrived before its receive began did not align them), so
    /// these bound the intervals whose activity is compared.
    struct Syncs {
        /// Per rank: (peer, event of the rank that synchronised with the
        /// peer), sorted.
        ranks: Vec<Vec<(u32, u32)>>,
    }

    impl Syncs {
        fn new(ranks: usize, waits: &[WaitState]) -> Syncs {
            let mut out: Vec<Vec<(u32, u32)>> = vec![Vec::new(); ranks];
            for w in waits {
                out[w.waiter as usize].push((w.culprit, w.event));
                out[w.culprit as usize].push((w.waiter, w.sync));
            }
            for v in &mut out {
                v.sort_unstable();
                v.dedup();
            }
            Syncs { ranks: out }
        }

        /// The last event of `rank` before `ev` that synchronised with `peer`.
        fn before(&self, rank: usize, peer: usize, ev: usize) -> Option<usize> {
            let v = &self.ranks[rank];
            let i = v.partition_point(|&(p, e)| (p as usize, e as usize) < (peer, ev));
            let (p, e) = *v.get(i.checked_sub(1)?)?;
            (p as usize == peer).then_some(e as usize)
        }
    }

    /// The delay costs by their definition, each interval's activity
    /// summed event by event: the independent truth for [`analyse`]'s
    /// running sums. Its last steps (handing on what δ does not explain,
    /// rounding the costs) repeat `analyse`'s on purpose: an oracle that
    /// shared them would not test them.
    fn reference(run: &Run, waits: &[WaitState]) -> (Vec<DelayCost>, i64) {
        let mut waited: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for (i, w) in waits.iter().enumerate() {
            waited
                .entry((w.waiter as usize, w.event as usize))
                .or_default()
                .push(i);
        }
        let activity = |rank: usize, from: Option<usize>, to: usize| {
            let spans = &run.ranks[rank].spans;
            let first = from
                .map_or(0, |f| f + 1)
                .max(to.saturating_sub(MAX_INTERVAL));
            let mut d: HashMap<Region, i64> = HashMap::new();
            let mut inside = Vec::new();
            for e in first..=to.min(spans.len() - 1) {
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
                for &w in waited.get(&(rank, e)).into_iter().flatten() {
                    t -= waits[w].ns;
                    inside.push(w);
                }
                if t > 0 {
                    *d.entry(Region::of(run, rank, e, true)).or_default() += t;
                }
            }
            (d, inside)
        };
        let syncs = Syncs::new(run.ranks.len(), waits);
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
            let (a, b) = (w.culprit as usize, w.waiter as usize);
            let (sync, event) = (w.sync as usize, w.event as usize);
            let (da, inside_a) = activity(a, syncs.before(a, b, sync), sync);
            let (db, _) = activity(b, syncs.before(b, a, event), event);
            let delta: Vec<(Region, f64)> = da
                .iter()
                .map(|(r, &t)| (*r, (t - db.get(r).copied().unwrap_or(0)) as f64))
                .filter(|x| x.1 > 0.0)
                .collect();
            let sum: f64 = delta.iter().map(|x| x.1).sum();
            let load = omega + propagated[i];
            let f = (sum / omega).min(1.0);
            for (r, dl) in &delta {
                let c = costs.entry((a, *r)).or_default();
                c.0 += f * omega * dl / sum;
                c.1 += f * propagated[i] * dl / sum;
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
        costs.sort_by_key(|c| (c.rank, c.region));
        (costs, unexplained.round() as i64)
    }

    /// `ranks` ranks of `events` calls each (three ops, two sites), with
    /// random computation and call times, and random wait states between
    /// them, some on one call.
    fn random_run(seed: u64, ranks: usize, events: usize, waits: usize) -> (Run, Vec<WaitState>) {
        let mut rng = SplitMix64::new(seed);
        let ops = [Op::Send, Op::Recv, Op::Allreduce];
        let run = timed_run((0..ranks).map(|_| {
            let mut t = rng.below(1000) as i64;
            let mut spans = Vec::new();
            let mut evs = Vec::new();
            for _ in 0..events {
                t += rng.below(3) as i64 * rng.below(500) as i64;
                let len = rng.below(2000) as i64;
                spans.push((t, t + len));
                t += len;
                let mut e = Event::new(ops[rng.below(3)]);
                e.site = rng.below(2) as u64;
                evs.push(e);
            }
            (evs, spans)
        }));
        let waits = (0..waits)
            .map(|_| {
                let waiter = rng.below(ranks);
                let culprit = (waiter + 1 + rng.below(ranks - 1)) % ranks;
                let event = rng.below(events);
                let (from, leave) = run.ranks[waiter].spans[event];
                WaitState {
                    metric: Metric::LateSender,
                    waiter: waiter as u32,
                    event: event as u32,
                    culprit: culprit as u32,
                    sync: rng.below(events) as u32,
                    from,
                    ns: rng.below((leave - from) as usize / 2 + 1) as i64,
                }
            })
            .collect();
        (run, waits)
    }

    /// A run with a timeline of these ranks' events and spans.
    fn timed_run(ranks: impl Iterator<Item = (Vec<Event>, Vec<(i64, i64)>)>) -> Run {
        let ranks: Vec<RankRun> = ranks
            .enumerate()
            .map(|(r, (events, spans))| RankRun {
                rank: r as u32,
                events: events.into_iter().collect(),
                context: Vec::new(),
                contexts: Vec::new(),
                spans,
                pos: Vec::new(),
                outer: Vec::new(),
            })
            .collect();
        let n = ranks.len();
        Run {
            ranks,
            timed: true,
            slow_calls: Vec::new(),
            reservoir_k: 0,
            series: vec![None; n],
        }
    }

    /// A run of ranks with these spans, every call a receive.
    fn run_of(spans: &[&[(i64, i64)]]) -> Run {
        timed_run(
            spans
                .iter()
                .map(|s| (s.iter().map(|_| Event::new(Op::Recv)).collect(), s.to_vec())),
        )
    }

    fn makespan(run: &Run) -> i64 {
        let first = run
            .ranks
            .iter()
            .filter_map(|r| r.spans.first())
            .map(|s| s.0);
        let last = run.ranks.iter().filter_map(|r| r.spans.last()).map(|s| s.1);
        last.max().unwrap_or(0) - first.min().unwrap_or(0)
    }

    #[test]
    fn the_critical_path_ends_and_fits_in_the_run() {
        // Two ranks whose calls overlap (as the published SMG2000 traces'
        // receives and sends do) and wait for each other's second call,
        // which both begin at the same nanosecond: the walk once went
        // round between them until its step bound, and counted the
        // overlapping calls' time again on every round.
        let run = run_of(&[&[(0, 10), (5, 10)], &[(0, 10), (5, 10)]]);
        let wait = |waiter: u32, culprit: u32| WaitState {
            metric: Metric::LateSender,
            waiter,
            event: 0,
            culprit,
            sync: 1,
            from: 0,
            ns: 5,
        };
        let waits = [wait(0, 1), wait(1, 0)];
        let rep = critical_path(&run, &Index::new(&run, &waits), &waits);
        assert_eq!(rep.path_ns, 10, "{rep:?}");
        assert!(rep.path.len() <= 3, "{:?}", rep.path);
        // Random culprits (calls that began after the wait ended among
        // them): the path never holds more time than the run, nor more
        // stretches than events.
        for seed in 0..20 {
            let (run, waits) = random_run(seed, 4, 300, 400);
            let rep = critical_path(&run, &Index::new(&run, &waits), &waits);
            assert!(
                rep.path_ns <= makespan(&run),
                "seed {seed}: {} > {}",
                rep.path_ns,
                makespan(&run)
            );
            assert!(rep.path.len() <= run.events() + 1, "seed {seed}");
        }
    }

    #[test]
    fn running_sums_give_the_costs_of_the_definition() {
        for seed in 0..41 {
            // Short runs (every interval whole), long ones (intervals cut
            // at MAX_INTERVAL events), and more waits than one CHUNK.
            let (ranks, events, waits) = if seed == 40 {
                (3, 200, CHUNK + 5000)
            } else if seed % 4 == 3 {
                (3, 3 * MAX_INTERVAL, 300)
            } else {
                (
                    2 + seed as usize % 4,
                    1 + seed as usize * 7,
                    seed as usize * 5,
                )
            };
            let (run, waits) = random_run(seed, ranks, events, waits);
            let got = analyse(&run, &waits);
            let (want, unexplained) = reference(&run, &waits);
            let mut costs = got.costs.clone();
            costs.sort_by_key(|c| (c.rank, c.region));
            assert_eq!(costs.len(), want.len(), "seed {seed}");
            for (g, w) in costs.iter().zip(&want) {
                assert_eq!((g.rank, g.region), (w.rank, w.region), "seed {seed}");
                // The running sums add the same terms in another order.
                assert!(
                    (g.short_term_ns - w.short_term_ns).abs() <= 1,
                    "seed {seed}: {g:?} {w:?}"
                );
                assert!(
                    (g.long_term_ns - w.long_term_ns).abs() <= 1,
                    "seed {seed}: {g:?} {w:?}"
                );
            }
            assert!((got.unexplained_ns - unexplained).abs() <= 1, "seed {seed}");
            if seed > 4 {
                assert!(!want.is_empty(), "seed {seed}: a test with no costs");
            }
        }
    }
}
