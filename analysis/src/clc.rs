//! Timestamp correction: the controlled logical clock with forward and
//! backward amortisation (Becker et al., as Haus 2024 §2.2.2 and §3.2
//! describe it for Scalasca), probes included.
//!
//! Clocks of different nodes disagree, so a message can appear to arrive
//! before it was sent. The **clock condition** says that an event cannot
//! end before what it synchronised with began, plus a minimum latency:
//!
//! * a receive (the call that completed it) leaves after the send
//!   entered; for a probed message the probe that found it does (the
//!   receive after it on the same rank is then covered);
//! * a member of a barrier or an N×N collective leaves after every member
//!   entered; a non-root of a one-to-all collective after the root; the
//!   root of an all-to-one collective after every non-root.
//!
//! **Forward amortisation** walks all ranks in happened-before order and
//! gives every enter and leave a corrected time
//! `C = max(T, C_prev + γ·(T − T_prev), constraint)`: an event that
//! violates its condition jumps forward, the events after it move with it,
//! and with γ < 1 the shift decays with elapsed time so that the run does
//! not grow without bound. **Backward amortisation** then spreads each jump
//! over the events since the rank's previous synchronisation point, as a
//! linear ramp, so that no local interval stretches abruptly; a send on the
//! ramp moves at most to its receive's corrected time minus the latency, so
//! the ramp creates no new violation. A rank's timestamps are walked and
//! kept in the order of their recorded times, so that records which
//! overlap on a rank (nonblocking calls recorded from post to completion,
//! as in the published pattern-detection traces) move together instead of
//! one after the other; timestamps never change order within a rank.

use rayon::prelude::*;
use serde::Serialize;

use crate::matching::{End, Matching};
use crate::run::Run;
use crate::waitstates::{Metric, collective_metric, is_root};

/// Settings of the correction.
#[derive(Clone, Copy, Debug)]
pub struct ClcOptions {
    /// The minimum latency of a message, ns.
    pub min_latency_ns: i64,
    /// How much of a local interval a shifted event keeps (0 < γ ≤ 1):
    /// 1 keeps every interval and every shift forever; below 1 a shift
    /// decays by (1 − γ) of the elapsed time.
    pub gamma: f64,
}

impl Default for ClcOptions {
    fn default() -> ClcOptions {
        ClcOptions {
            min_latency_ns: 0,
            gamma: 0.99,
        }
    }
}

/// What the correction found and did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClcReport {
    /// Clock conditions checked (one per receiving end).
    pub checked: usize,
    /// Violations before the correction.
    pub violations: usize,
    /// The largest violation before the correction: by how much a
    /// receiving end came before what it synchronised with, ns. A
    /// timestamp can move further than this only where violations chain
    /// (a rank moved for one message sends the next one later).
    pub largest_violation_ns: i64,
    /// Violations after it (zero unless the matching is inconsistent).
    pub remaining: usize,
    /// Events whose enter or leave moved.
    pub moved: usize,
    /// The largest shift of any timestamp, ns.
    pub max_shift_ns: i64,
    /// Why the largest shift may exceed the largest violation: the number
    /// of messages (or collectives) in the chain of jumps behind it, each
    /// of which moved its receiver by its own recorded violation plus its
    /// sender's shift. So `max_shift_ns ≤ max_shift_chain ×
    /// largest_violation_ns` (1 where no violation chains; at most
    /// 65,535).
    pub max_shift_chain: usize,
    /// Local intervals (between consecutive timestamps of a rank) whose
    /// length changed by more than 1 % (and 100 ns) beyond the (1 − γ)
    /// that forward amortisation takes from every interval after a jump
    /// by design: counted against 1 % alone, with γ = 0.99 every interval
    /// after a jump counted or not by rounding (half of them on a loaded
    /// run), which measured nothing.
    pub intervals_changed: usize,
    /// Local intervals in all.
    pub intervals: usize,
}

/// One clock condition: every target leave comes after every source enter
/// plus the latency.
struct Sync {
    sources: Points,
    targets: Points,
}

/// (rank, event) points of a condition: one each for a message (inline,
/// no allocation for each of millions), many for a collective.
type Points = smallvec::SmallVec<[(usize, usize); 1]>;

/// A message's condition. A probed receive follows its probe on the same
/// rank: the probe's condition covers it (Haus 2024 §3.2).
fn message_sync(msg: &crate::matching::Message) -> Sync {
    Sync {
        sources: smallvec::smallvec![(msg.send.rank as usize, msg.send.post as usize)],
        targets: smallvec::smallvec![(
            msg.recv.rank as usize,
            msg.probe.unwrap_or(msg.recv.done) as usize,
        )],
    }
}

/// The collectives' conditions (the messages' come from [`message_sync`]
/// as they are needed: millions of them, made only to be checked, were
/// a quarter of a GB on the 1,024-rank SMG2000-shaped trace).
fn collective_syncs(run: &Run, m: &Matching) -> Vec<Sync> {
    let mut out = Vec::new();
    for c in &m.collectives {
        let (roots, others): (Vec<&End>, Vec<&End>) =
            c.members.iter().partition(|e| is_root(run, e));
        // Where members enter (post) and where they leave (done).
        let at = |v: &[&End], leave: bool| -> Points {
            v.iter()
                .map(|e| {
                    (
                        e.rank as usize,
                        if leave { e.done } else { e.post } as usize,
                    )
                })
                .collect()
        };
        let all: Vec<&End> = c.members.iter().collect();
        let (sources, targets) = match collective_metric(c.op) {
            Some(Metric::WaitAtBarrier | Metric::WaitAtNxN) => (at(&all, false), at(&all, true)),
            Some(Metric::LateBroadcast) => (at(&roots, false), at(&others, true)),
            Some(Metric::EarlyReduce) => (at(&others, false), at(&roots, true)),
            _ => continue,
        };
        if !sources.is_empty() && !targets.is_empty() {
            out.push(Sync { sources, targets });
        }
    }
    out
}

/// What a check of the conditions found: receiving ends, those violated,
/// and the largest violation (ns).
type Found = (usize, usize, i64);

/// One condition's receiving ends, those violated under `spans`, and the
/// largest violation.
fn sync_counts(s: &Sync, spans: &[&[(i64, i64)]], lmin: i64) -> Found {
    // The latest source enter (plus the latency) and its rank, and the
    // latest of the other ranks' sources: each target checks against the
    // latest source on another rank in constant time (a search per target
    // was quadratic in a collective's members: 10^6 steps per collective
    // at 1,024 ranks).
    let mut first: Option<(i64, usize)> = None;
    let mut second: Option<i64> = None;
    for &(r, e) in &s.sources {
        let t = spans[r][e].0 + lmin;
        match first {
            Some((t1, r1)) if r == r1 => first = Some((t1.max(t), r1)),
            Some((t1, _)) if t <= t1 => second = second.max(Some(t)),
            // The old latest is on another rank than the new one, and no
            // earlier source is later than it.
            Some((t1, _)) => {
                second = Some(t1);
                first = Some((t, r));
            }
            None => first = Some((t, r)),
        }
    }
    let earliest = |tr: usize| match first {
        Some((t1, r1)) if r1 != tr => Some(t1),
        _ => second,
    };
    let (mut bad, mut largest) = (0, 0);
    for &(tr, te) in &s.targets {
        if let Some(t) = earliest(tr)
            && spans[tr][te].1 < t
        {
            bad += 1;
            largest = largest.max(t - spans[tr][te].1);
        }
    }
    (s.targets.len(), bad, largest)
}

/// Counts the conditions (per receiving end) and those violated under
/// `spans`: the messages' and the collectives'. On all cores: millions of
/// messages, each a look-up on two ranks.
fn count_violations(
    m: &Matching,
    collectives: &[Sync],
    spans: &[&[(i64, i64)]],
    lmin: i64,
) -> Found {
    let count = |s: &Sync| sync_counts(s, spans, lmin);
    let sum = |a: Found, b: Found| (a.0 + b.0, a.1 + b.1, a.2.max(b.2));
    let messages = m
        .messages
        .par_iter()
        .map(|msg| count(&message_sync(msg)))
        .reduce(|| (0, 0, 0), sum);
    collectives.iter().map(count).fold(messages, sum)
}

/// Every condition by index: the messages' first (made as they are asked
/// for, without allocating), then the collectives'. Held as a list they
/// were 0.18 GB on smg1024.
struct Syncs<'a> {
    m: &'a Matching,
    collectives: &'a [Sync],
}

impl Syncs<'_> {
    fn len(&self) -> usize {
        self.m.messages.len() + self.collectives.len()
    }

    fn get(&self, i: usize) -> Sync {
        match self.m.messages.get(i) {
            Some(msg) => message_sync(msg),
            None => {
                let c = &self.collectives[i - self.m.messages.len()];
                Sync {
                    sources: c.sources.clone(),
                    targets: c.targets.clone(),
                }
            }
        }
    }
}

/// The conditions each event of each rank feeds (as a source) or waits
/// for (as a target): per rank, offsets by event into one list. A map of
/// lists keyed by (rank, event) was 7 M small allocations each on smg1024.
struct ByEvent {
    off: Vec<Vec<u32>>,
    items: Vec<u32>,
}

impl ByEvent {
    fn new(lens: &[usize], syncs: &Syncs<'_>, points: impl Fn(&Sync) -> &Points) -> ByEvent {
        let mut off: Vec<Vec<u32>> = lens.iter().map(|&l| vec![0; l + 1]).collect();
        for i in 0..syncs.len() {
            for &(r, e) in points(&syncs.get(i)) {
                off[r][e + 1] += 1;
            }
        }
        let mut total = 0u32;
        for o in &mut off {
            for x in o.iter_mut() {
                total += *x;
                *x = total;
            }
        }
        // Each rank's offsets now end where the next rank's begin; shift
        // every slot's start to fill in order.
        let mut next: Vec<Vec<u32>> = off.iter().map(|o| o[..o.len() - 1].to_vec()).collect();
        let mut items = vec![0u32; total as usize];
        for i in 0..syncs.len() {
            for &(r, e) in points(&syncs.get(i)) {
                items[next[r][e] as usize] = i as u32;
                next[r][e] += 1;
            }
        }
        ByEvent { off, items }
    }

    fn get(&self, r: usize, e: usize) -> &[u32] {
        let o = &self.off[r];
        &self.items[o[e] as usize..o[e + 1] as usize]
    }
}

/// Corrects the timestamps of `run` in place and says what it did. A run
/// without a timeline is left alone.
pub fn correct(run: &mut Run, m: &Matching, opts: ClcOptions) -> ClcReport {
    if !run.timed {
        return ClcReport::default();
    }
    let lmin = opts.min_latency_ns.max(0);
    let gamma = if opts.gamma > 0.0 && opts.gamma <= 1.0 {
        opts.gamma
    } else {
        ClcOptions::default().gamma
    };
    let collectives = collective_syncs(run, m);
    let spans: Vec<&[(i64, i64)]> = run.ranks.iter().map(|r| r.spans.as_slice()).collect();
    let (checked, violations, largest_violation_ns) =
        count_violations(m, &collectives, &spans, lmin);
    let mut report = ClcReport {
        checked,
        violations,
        largest_violation_ns,
        intervals: spans.iter().map(|s| (2 * s.len()).saturating_sub(1)).sum(),
        ..ClcReport::default()
    };
    if violations == 0 {
        return report;
    }
    let syncs = Syncs {
        m,
        collectives: &collectives,
    };
    // The timestamps as recorded are read in place: the corrected ones are
    // written back at the end (a copy was 128 MB of smg1024's peak).
    let clc = Clc::new(&spans, &syncs, lmin, gamma);
    let mut fixed = clc.forward();
    clc.amortise(&mut fixed);
    clc.measure(&fixed, &mut report);
    // The recorded times are not needed past here: `run` takes the
    // corrected ones.
    let at = clc.at;
    report.moved = write_back(&at, &fixed, run, &mut report.max_shift_ns);
    let spans: Vec<&[(i64, i64)]> = run.ranks.iter().map(|r| r.spans.as_slice()).collect();
    report.remaining = count_violations(m, &collectives, &spans, lmin).1;
    report
}

/// The controlled logical clock over one run: the recorded points in time
/// order per rank, and which conditions each event feeds or waits for.
struct Clc<'a> {
    orig: &'a [&'a [(i64, i64)]],
    syncs: &'a Syncs<'a>,
    feeds: ByEvent,
    waits: ByEvent,
    /// Points: 2i = enter of event i, 2i + 1 = its leave, per rank in the
    /// order of their recorded times (an enter before its own leave on a
    /// tie). For events that follow each other this is the events' order;
    /// records that overlap on a rank (the published traces' nonblocking
    /// sends and receives, each from its post to its completion) are
    /// interleaved as they happened. Walked one record after the other,
    /// every enter that lies before the previous leave was pushed to it,
    /// and the exchange's records were serialised: shifts of up to 2,554 s
    /// on the published traces, with more violations after than before.
    order: Vec<Vec<u32>>,
    /// Where each point is in its rank's order.
    at: Vec<Vec<u32>>,
    lmin: i64,
    gamma: f64,
}

/// The corrected times, by rank and position in [`Clc::order`].
struct Corrected {
    c: Vec<Vec<i64>>,
    /// The chain behind each point's time: how many jumps (each at most the
    /// largest violation plus its source's shift) add up to its shift
    /// (saturating: 2 bytes a point).
    ch: Vec<Vec<u16>>,
    /// Per rank, the positions where a condition made the clock jump, and
    /// by how much.
    jumps: Vec<Vec<(usize, i64)>>,
}

impl<'a> Clc<'a> {
    fn new(orig: &'a [&'a [(i64, i64)]], syncs: &'a Syncs<'a>, lmin: i64, gamma: f64) -> Clc<'a> {
        let lens: Vec<usize> = orig.iter().map(|s| s.len()).collect();
        let point = |r: usize, p: usize| {
            let s = orig[r][p / 2];
            if p.is_multiple_of(2) { s.0 } else { s.1 }
        };
        let order: Vec<Vec<u32>> = (0..orig.len())
            .into_par_iter()
            .map(|r| {
                let mut o: Vec<u32> = (0..2 * orig[r].len() as u32).collect();
                o.sort_by_key(|&p| point(r, p as usize));
                o
            })
            .collect();
        let mut at: Vec<Vec<u32>> = order.iter().map(|o| vec![0; o.len()]).collect();
        for (r, o) in order.iter().enumerate() {
            for (k, &p) in o.iter().enumerate() {
                at[r][p as usize] = k as u32;
            }
        }
        Clc {
            orig,
            syncs,
            feeds: ByEvent::new(&lens, syncs, |s| &s.sources),
            waits: ByEvent::new(&lens, syncs, |s| &s.targets),
            order,
            at,
            lmin,
            gamma,
        }
    }

    /// The point at position `k` of rank `r`'s order.
    fn order_at(&self, r: usize, k: usize) -> usize {
        self.order[r][k] as usize
    }

    /// The recorded time at position `k` of rank `r`'s order.
    fn t(&self, r: usize, k: usize) -> i64 {
        let p = self.order_at(r, k);
        let s = self.orig[r][p / 2];
        if p.is_multiple_of(2) { s.0 } else { s.1 }
    }

    /// The forward pass: every point is at least its recorded time, its
    /// rank's previous point plus the elapsed time (damped by `gamma`), and
    /// the value of every condition it waits for. A point waits until all
    /// the sources of its conditions are placed.
    fn forward(&self) -> Corrected {
        let n = self.order.len();
        let syncs = self.syncs;
        let mut remaining: Vec<usize> = (0..syncs.len())
            .map(|i| syncs.get(i).sources.len())
            .collect();
        let mut value: Vec<i64> = vec![i64::MIN; syncs.len()];
        let mut value_chain: Vec<u16> = vec![0; syncs.len()];
        let mut fixed = Corrected {
            c: self.order.iter().map(|o| vec![0; o.len()]).collect(),
            ch: self.order.iter().map(|o| vec![0; o.len()]).collect(),
            jumps: vec![Vec::new(); n],
        };
        let (c, ch) = (&mut fixed.c, &mut fixed.ch);
        let mut cursor = vec![0usize; n];
        let mut done_ranks = 0;
        let mut force = false;
        while done_ranks < n {
            let mut progressed = false;
            for r in 0..n {
                let len = c[r].len();
                while cursor[r] < len {
                    let k = cursor[r];
                    let p = self.order_at(r, k);
                    let ev = p / 2;
                    let leave = p % 2 == 1;
                    let conds = if leave { self.waits.get(r, ev) } else { &[] };
                    if !force && conds.iter().any(|&i| remaining[i as usize] > 0) {
                        break;
                    }
                    let tp = self.t(r, k);
                    let carried = if k == 0 {
                        tp
                    } else {
                        let dt = (tp - self.t(r, k - 1)).max(0);
                        c[r][k - 1] + (self.gamma * dt as f64) as i64
                    };
                    let base = tp.max(carried);
                    let (need, need_chain) = conds
                        .iter()
                        .map(|&i| (value[i as usize], value_chain[i as usize]))
                        .max_by_key(|x| x.0)
                        .unwrap_or((i64::MIN, 0));
                    let cp = base.max(need);
                    ch[r][k] = if cp > base {
                        fixed.jumps[r].push((k, cp - base));
                        need_chain.saturating_add(1)
                    } else if base > tp && k > 0 {
                        // Carried from the rank's previous point (a shift
                        // that only decays from there).
                        ch[r][k - 1]
                    } else {
                        0
                    };
                    c[r][k] = cp;
                    if !leave {
                        for &i in self.feeds.get(r, ev) {
                            let i = i as usize;
                            if cp + self.lmin > value[i] {
                                value[i] = cp + self.lmin;
                                value_chain[i] = ch[r][k];
                            }
                            remaining[i] = remaining[i].saturating_sub(1);
                        }
                    }
                    cursor[r] += 1;
                    progressed = true;
                    force = false;
                    if cursor[r] == len {
                        done_ranks += 1;
                    }
                }
            }
            // A cycle (an inconsistent matching): let the first blocked
            // point go with what its conditions know so far.
            if !progressed {
                force = true;
            }
        }
        fixed
    }

    /// The latest time event `ev` of rank `r` may have so that every
    /// condition it feeds still holds at its other ranks' targets.
    fn limit(&self, r: usize, ev: usize, c: &[Vec<i64>]) -> i64 {
        self.feeds
            .get(r, ev)
            .iter()
            .flat_map(|&i| self.syncs.get(i as usize).targets)
            .filter(|&(tr, _)| tr != r)
            .map(|(tr, te)| c[tr][self.at[tr][2 * te + 1] as usize] - self.lmin)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// Backward amortisation: spreads each jump over the points since the
    /// previous synchronisation point of the rank, so that the intervals
    /// before a jump keep their proportions.
    fn amortise(&self, fixed: &mut Corrected) {
        for r in 0..self.order.len() {
            for &(j, jump) in &fixed.jumps[r] {
                // The ramp starts at the previous point with a condition
                // (or the rank's start).
                let start = (0..j)
                    .rev()
                    .find(|&q| {
                        let p = self.order_at(r, q);
                        p % 2 == 1 && !self.waits.get(r, p / 2).is_empty()
                    })
                    .unwrap_or(0);
                let c = &fixed.c;
                let (c0, cj) = (c[r][start], c[r][j] - jump);
                if j <= start + 1 || cj <= c0 {
                    continue;
                }
                let frac = |x: i64| (x - c0) as f64 / (cj - c0) as f64;
                let mut eff = jump as f64;
                for q in (start + 1..j).filter(|&q| self.order_at(r, q).is_multiple_of(2)) {
                    let f = frac(c[r][q]);
                    if f > 0.0 {
                        let room = (self.limit(r, self.order_at(r, q) / 2, c) - c[r][q]).max(0);
                        eff = eff.min(room as f64 / f);
                    }
                }
                let chain_j = fixed.ch[r][j];
                let (cr, chr) = (&mut fixed.c[r], &mut fixed.ch[r]);
                for (x, chain) in cr[start + 1..j].iter_mut().zip(&mut chr[start + 1..j]) {
                    let up = ((eff * frac(*x)) as i64).max(0);
                    *x += up;
                    if up > 0 {
                        // Its own shift plus at most the jump's.
                        *chain = chain.saturating_add(chain_j);
                    }
                }
            }
        }
    }

    /// The longest chain behind a shift, and how many intervals between a
    /// rank's consecutive points (in time order) changed by more than the
    /// damping explains.
    fn measure(&self, fixed: &Corrected, report: &mut ClcReport) {
        let c = &fixed.c;
        report.max_shift_chain = (0..c.len())
            .flat_map(|r| (0..c[r].len()).map(move |k| (r, k)))
            .max_by_key(|&(r, k)| c[r][k] - self.t(r, k))
            .map_or(0, |(r, k)| fixed.ch[r][k] as usize);
        let mut changed = 0;
        for (r, cr) in c.iter().enumerate() {
            for k in 1..cr.len() {
                let (da, db) = (self.t(r, k) - self.t(r, k - 1), cr[k] - cr[k - 1]);
                let diff = (db - da).abs();
                if diff > 100 && diff as f64 > (1.01 - self.gamma) * da.abs() as f64 {
                    changed += 1;
                }
            }
        }
        report.intervals_changed = changed;
    }
}

/// Writes the corrected times into `run`'s spans (`at`: where each point
/// is in its rank's time order); returns how many events moved, and raises
/// `max_shift` to the largest shift.
fn write_back(at: &[Vec<u32>], fixed: &Corrected, run: &mut Run, max_shift: &mut i64) -> usize {
    let c = &fixed.c;
    let mut moved = 0;
    for (r, rank) in run.ranks.iter_mut().enumerate() {
        let at = &at[r];
        for (e, span) in rank.spans.iter_mut().enumerate() {
            let (enter, leave) = (c[r][at[2 * e] as usize], c[r][at[2 * e + 1] as usize]);
            let new = (enter, leave.max(enter));
            if new != *span {
                moved += 1;
            }
            *max_shift = (*max_shift).max(new.0 - span.0).max(new.1 - span.1);
            *span = new;
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: each target against the latest source on another
    /// rank, found by a search.
    fn by_search(s: &Sync, spans: &[&[(i64, i64)]], lmin: i64) -> Found {
        let late: Vec<i64> = s
            .targets
            .iter()
            .filter_map(|&(tr, te)| {
                let t = s
                    .sources
                    .iter()
                    .filter(|&&(r, _)| r != tr)
                    .map(|&(r, e)| spans[r][e].0 + lmin)
                    .max()?;
                (spans[tr][te].1 < t).then(|| t - spans[tr][te].1)
            })
            .collect();
        (
            s.targets.len(),
            late.len(),
            late.into_iter().max().unwrap_or(0),
        )
    }

    #[test]
    fn the_constant_time_check_counts_what_the_search_counts() {
        // A small generator (xorshift), so that the test needs no crate.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as usize
        };
        let (ranks, events) = (5, 6);
        let mut checked = 0;
        for _ in 0..2000 {
            let owned: Vec<Vec<(i64, i64)>> = (0..ranks)
                .map(|_| {
                    (0..events)
                        .map(|_| {
                            let a = next(100) as i64;
                            (a, a + next(50) as i64)
                        })
                        .collect()
                })
                .collect();
            let spans: Vec<&[(i64, i64)]> = owned.iter().map(|v| v.as_slice()).collect();
            // Sources may repeat a rank, and share ranks with targets.
            let point =
                |next: &mut dyn FnMut(u64) -> usize| (next(ranks as u64), next(events as u64));
            let sync = Sync {
                sources: (0..1 + next(6)).map(|_| point(&mut next)).collect(),
                targets: (0..1 + next(6)).map(|_| point(&mut next)).collect(),
            };
            let lmin = next(20) as i64;
            let got = sync_counts(&sync, &spans, lmin);
            assert_eq!(got, by_search(&sync, &spans, lmin));
            checked += got.1;
        }
        // The cases include violations, not only clean conditions.
        assert!(checked > 100, "{checked}");
    }
}
