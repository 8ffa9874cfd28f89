//! A trace file unfolded for analysis: every rank's events in order, each
//! with its context (the loop iteration it ran in) and, when the trace has
//! a timeline, its enter and leave times on one time base.
//!
//! The compressed structure stays the source of truth: events come from
//! expanding each rank's projection of the merged trace, and a context is
//! the event's loop iteration vector without the loops over a single call
//! ([`trace::Expand::context_path`]). So
//! one iteration of the innermost loop around a group of calls is one
//! context, which is how the analysis finds the per-rank repeats that seed
//! 000 delimits with user-function and `MPI_Waitall` boundaries. An
//! `MPI_Pcontrol` call also ends a context.
//!
//! A trace imported from the published `pertext` files says where its
//! contexts are: its `DEL` lines (imported as `Pcontrol`) are the
//! paper's own context boundaries. There, those alone cut contexts (and
//! [`MAX_CONTEXT`]); the loop structure does not, so that a context whose
//! calls compressed into loops (six receives and sends to three peers)
//! stays one context, as the paper's pattern definition has it.

use std::collections::HashMap;

use rayon::prelude::*;
use trace::{Event, MNode, MpiSeries, Op, TraceFile};

use semantics::timed::time_zero;

use crate::Error;

/// The most events one context holds before it is cut: a bound on one
/// pattern instance for a rank whose events never form a loop.
pub const MAX_CONTEXT: usize = 4096;

/// One rank unfolded: its events, the iteration vectors of its reservoir
/// entries (index into [`Run::slow_calls`]), and its event count with the
/// markers.
type Unfolded = (RankRun, Vec<(usize, Vec<u64>)>, u64);

/// Ranks unfolded together on all cores between two progress reports.
const UNFOLD_BATCH: usize = 32;

/// A rank's events in call order, each distinct event stored once.
///
/// An SPMD rank repeats a few distinct calls (same operation, site, peer,
/// count) millions of times: the 1,024-rank SMG2000-shaped benchmark
/// has 8 M events and a few hundred distinct ones per rank. Held as
/// [`Event`]s (360 bytes each) they were most of the analysis' memory;
/// held as a 4-byte index into the distinct ones they cost no more than
/// the time stamps beside them. The per-execution [`Event::time`] is not
/// kept (the spans hold the times), so that executions of one call are
/// alike.
#[derive(Debug, Default)]
pub struct Events {
    distinct: Vec<Event>,
    seq: Vec<u32>,
}

impl Events {
    /// How many events.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    /// How many of them are distinct.
    pub fn distinct(&self) -> usize {
        self.distinct.len()
    }

    /// The events in call order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Event> + Clone + '_ {
        self.seq.iter().map(|&i| &self.distinct[i as usize])
    }
}

impl std::ops::Index<usize> for Events {
    type Output = Event;

    fn index(&self, i: usize) -> &Event {
        &self.distinct[self.seq[i] as usize]
    }
}

impl FromIterator<Event> for Events {
    fn from_iter<I: IntoIterator<Item = Event>>(iter: I) -> Events {
        let mut b = EventsBuilder::default();
        for e in iter {
            b.push(e);
        }
        b.finish()
    }
}

/// Builds [`Events`], finding each event's earlier equal through its
/// hash: the map holds hashes, not events, so that a rank whose events
/// are all distinct (a request id is its creation order, so every
/// nonblocking call and its completion differ) costs no more than the
/// events themselves. Of two distinct events with one hash the later one
/// keeps the slot; the earlier one may then be stored twice, never
/// confused. The Fx hash: the keys are the trace's own events, not
/// adversarial input, and SipHash over a 360-byte event was a tenth of
/// the whole analysis.
#[derive(Default)]
struct EventsBuilder {
    ids: rustc_hash::FxHashMap<u64, u32>,
    events: Events,
}

impl EventsBuilder {
    /// A builder for up to `n` events without regrowing.
    fn with_capacity(n: usize) -> EventsBuilder {
        let mut b = EventsBuilder::default();
        b.events.seq.reserve_exact(n);
        b
    }

    fn push(&mut self, mut e: Event) {
        use std::hash::BuildHasher;
        e.time = trace::Timing::default();
        let h = rustc_hash::FxBuildHasher.hash_one(&e);
        let id = match self.ids.get(&h) {
            Some(&id) if self.events.distinct[id as usize] == e => id,
            _ => {
                let id = self.events.distinct.len() as u32;
                self.events.distinct.push(e);
                self.ids.insert(h, id);
                id
            }
        };
        self.events.seq.push(id);
    }

    fn finish(mut self) -> Events {
        self.events.seq.shrink_to_fit();
        self.events.distinct.shrink_to_fit();
        self.events
    }
}

/// One rank's events.
#[derive(Debug)]
pub struct RankRun {
    /// The world rank.
    pub rank: u32,
    /// The events, in call order, without the markers (`Init`, `Finalize`,
    /// `Pcontrol`), which carry no communication.
    pub events: Events,
    /// The context of each event: an index into `contexts`, growing along
    /// the rank's events and changing exactly where a context ends.
    pub context: Vec<u32>,
    /// The loop iteration numbers of each context, outermost first.
    pub contexts: Vec<Vec<u64>>,
    /// Enter and leave of each event, in ns since the earliest rank's time
    /// zero (so that times compare across ranks); empty without a timeline.
    pub spans: Vec<(i64, i64)>,
    /// The position of each event in the rank's full event sequence (the
    /// markers included), which keys the timeline and the MPI time series.
    /// 32 bits, like every per-event index here: a rank held in memory
    /// has far fewer than 2^32 events, and at millions of events per
    /// rank the width is memory.
    pub pos: Vec<u32>,
    /// The outermost loop around each event and its iteration there
    /// (`None` outside loops): the time steps of the desynchronisation
    /// analysis.
    pub outer: Vec<Option<(u32, u32)>>,
}

/// MPI time per rank and time step (see [`Run::mpi_time_per_step`]).
#[derive(Clone, Debug)]
pub struct StepMatrix {
    /// The world rank of each row.
    pub ranks: Vec<u32>,
    /// `t[row][step]`: time inside MPI, ns.
    pub t: Vec<Vec<f64>>,
    /// `None` when the times come from the timeline (exact); else the
    /// widest bucket of the MPI time series they come from, in events (a
    /// bucket that straddles two iterations is split in proportion to its
    /// events, exact when the width is 1).
    pub bucket: Option<u64>,
}

/// One execution from a call's slow-instance reservoir
/// ([`trace::Reservoir`]), located in its rank's events: what the compact
/// trace says about single slow executions when it has no timeline.
#[derive(Clone, Debug)]
pub struct SlowCall {
    /// The MPI call.
    pub op: Op,
    /// Its call-site signature.
    pub site: u64,
    /// The world rank that ran this execution.
    pub rank: u32,
    /// Its index in the rank's event sequence.
    pub pos: u64,
    /// Its time inside MPI, ns.
    pub mpi_ns: u64,
    /// The call's mean time inside MPI over all its executions, ns.
    pub mean_ns: f64,
    /// The call's executions on all ranks.
    pub executions: u64,
    /// The loop iteration vector of this execution, outermost loop first.
    pub iterations: Vec<u64>,
}

/// Every rank's events.
#[derive(Debug)]
pub struct Run {
    /// The ranks, in rank order.
    pub ranks: Vec<RankRun>,
    /// Whether every rank has a timeline (instance timing needs one).
    pub timed: bool,
    /// Every call's reservoir entries, located (in the trace's order of
    /// calls, slowest first within a call).
    pub slow_calls: Vec<SlowCall>,
    /// The trace's reservoir size K (0 when it keeps none, as files of
    /// format version 2 and older).
    pub reservoir_k: usize,
    /// Each rank's MPI time series, when the trace has them
    /// (`RANKSCALE_STEPS=1`).
    pub series: Vec<Option<MpiSeries>>,
}

/// Every call's reservoir entries, without their iteration vectors yet.
fn reservoir(nodes: &[MNode], k: &mut usize, out: &mut Vec<SlowCall>) {
    for n in nodes {
        match n {
            MNode::Event(e) => {
                let t = e.timing();
                *k = (*k).max(t.slow().capacity());
                let total = t.total();
                for s in t.slow().slowest() {
                    out.push(SlowCall {
                        op: e.shape().op(),
                        site: e.shape().site(),
                        rank: s.rank,
                        pos: s.pos,
                        mpi_ns: s.mpi_ns,
                        mean_ns: total.mpi().stats().mean(),
                        executions: total.count(),
                        iterations: Vec::new(),
                    });
                }
            }
            MNode::Loop(l) => reservoir(l.body(), k, out),
            _ => {}
        }
    }
}

/// What the unfolded run keeps per event (the event, its context, outer
/// loop, position and span), rounded up.
const BYTES_PER_EVENT: u64 = 64;

impl Run {
    /// Unfolds `file`, calling `progress(done, total)` with event counts as
    /// it goes (total is the trace's event count). Its per-event tables
    /// must fit `memory` bytes, checked before any is allocated.
    pub fn from_file(
        file: &TraceFile,
        memory: u64,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Run, Error> {
        let total = file.trace.total_events();
        trace::Limits {
            memory,
            events: u64::MAX,
        }
        .check_materialised("the analysis's event tables", total, BYTES_PER_EVENT)
        .map_err(trace::Error::from)?;
        let ranks: Vec<u32> = file.trace.ranks().iter().collect();
        let time_zero = time_zero(file);
        let (timed, zero) = (time_zero.is_some(), time_zero.unwrap_or(0));
        let mut slow_calls = Vec::new();
        let mut reservoir_k = 0;
        reservoir(file.trace.nodes(), &mut reservoir_k, &mut slow_calls);
        // The reservoir entries' positions, rank by rank in order: a rank
        // checks each event against its next one, not a map per event.
        let mut wanted: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (i, s) in slow_calls.iter().enumerate() {
            wanted.entry(s.rank).or_default().push((s.pos, i));
        }
        for v in wanted.values_mut() {
            v.sort_unstable();
        }
        let delimited = matches!(
            &file.meta.origin,
            trace::Origin::Imported { format } if format == trace::file::PERTEXT
        );
        let unfold = |rank: u32| -> Result<Unfolded, Error> {
            let t = file
                .trace
                .rank_trace(rank)
                .map_err(|e| Error::Project(rank, e.to_string()))?;
            let spans: Vec<(i64, i64)> = match (timed, file.timeline(rank)) {
                (true, Some(tl)) => {
                    let off = i64::try_from(tl.epoch_ns - zero).unwrap_or(i64::MAX / 2);
                    tl.spans()?
                        .iter()
                        .map(|s| (off + s.enter as i64, off + s.leave as i64))
                        .collect()
                }
                _ => Vec::new(),
            };
            let mut found = Vec::new();
            let mut wanted = wanted.get(&rank).map_or(&[][..], Vec::as_slice);
            // The per-event vectors at their size from the start: grown by
            // doubling they were copied and faulted in again as they grew.
            let n = usize::try_from(t.stats().events).unwrap_or(0);
            let mut events = EventsBuilder::with_capacity(n);
            let mut rr = RankRun {
                rank,
                events: Events::default(),
                context: Vec::with_capacity(n),
                contexts: Vec::new(),
                spans: Vec::with_capacity(if timed { n } else { 0 }),
                outer: Vec::with_capacity(n),
                pos: Vec::with_capacity(n),
            };
            let mut cut = true;
            let mut in_ctx = 0usize;
            let mut prev: Vec<(u32, u64)> = Vec::new();
            let mut path: Vec<(u32, u64)> = Vec::new();
            let mut ex = t.expand();
            let mut pos = 0usize;
            // Time of skipped calls, added to the next event's computation.
            let mut carried = 0u64;
            while let Some(ev) = ex.next() {
                let at = pos;
                pos += 1;
                while let Some((&(p, i), rest)) = wanted.split_first()
                    && p <= at as u64
                {
                    if p == at as u64 {
                        found.push((i, ex.loop_path().map(|p| p.1).collect()));
                    }
                    wanted = rest;
                }
                if matches!(ev.op, Op::Pcontrol) {
                    cut = true;
                    continue;
                }
                // Calls recorded without detail (queries, datatypes, ...)
                // and calls that failed are not communication: the
                // analysis sees them as part of the computation around
                // them, as before they were recorded. `MPI_Cancel` is kept:
                // a cancelled receive takes no message, which matching
                // must know.
                if (ev.op.is_generic() && ev.op != Op::Cancel) || ev.failed() {
                    carried = carried
                        .saturating_add(ev.time.compute_ns)
                        .saturating_add(ev.time.dur_ns);
                    continue;
                }
                if matches!(ev.op, Op::Init | Op::InitThread | Op::Finalize | Op::Abort) {
                    continue;
                }
                let mut ev = ev;
                ev.time.compute_ns = ev
                    .time
                    .compute_ns
                    .saturating_add(std::mem::take(&mut carried));
                path.clear();
                path.extend(ex.context_path());
                if cut || (!delimited && path != prev) || in_ctx >= MAX_CONTEXT {
                    rr.contexts.push(path.iter().map(|p| p.1).collect());
                    cut = false;
                    in_ctx = 0;
                }
                std::mem::swap(&mut prev, &mut path);
                in_ctx += 1;
                if timed {
                    let s = spans
                        .get(at)
                        .copied()
                        .ok_or(Error::TimelineShort { rank, events: at })?;
                    rr.spans.push(s);
                }
                rr.context.push((rr.contexts.len() - 1) as u32);
                rr.outer
                    .push(ex.loop_path().next().map(|(l, it)| (l, it as u32)));
                rr.pos.push(at as u32);
                events.push(ev);
            }
            rr.events = events.finish();
            if ex.is_broken() {
                return Err(Error::Project(rank, "the trace is inconsistent".into()));
            }
            if timed && spans.len() != pos {
                return Err(Error::TimelineLength {
                    rank,
                    events: pos,
                    spans: spans.len(),
                });
            }
            Ok((rr, found, pos as u64))
        };
        // Ranks are independent: they unfold on all cores, a batch at a
        // time so that progress is reported as they go.
        let mut done = 0u64;
        let mut out = Vec::with_capacity(ranks.len());
        for batch in ranks.chunks(UNFOLD_BATCH) {
            let unfolded: Vec<_> = batch.par_iter().map(|&r| unfold(r)).collect();
            for u in unfolded {
                let (rr, found, events) = u?;
                for (i, it) in found {
                    slow_calls[i].iterations = it;
                }
                done += events;
                out.push(rr);
            }
            progress(done, total);
        }
        progress(done, total);
        Ok(Run {
            series: ranks.iter().map(|&r| file.series_of(r).cloned()).collect(),
            ranks: out,
            timed,
            slow_calls,
            reservoir_k,
        })
    }

    /// MPI time per rank (rows, in rank order) and time step (columns, ns)
    /// of the dominant loop: the outermost loop, run at least 4 times, in
    /// whose iterations the ranks spent the most time (with a timeline:
    /// inside MPI and between calls) or made the most calls (without). It
    /// comes from the timeline, else from the MPI time series
    /// (`RANKSCALE_STEPS=1`); `None` without either or without such a loop.
    /// This is the observable of Afzal et al.'s desynchronisation analytics.
    pub fn mpi_time_per_step(&self) -> Option<StepMatrix> {
        let series: Vec<&MpiSeries> = self.series.iter().flatten().collect();
        let from_series = !self.timed && !series.is_empty() && series.len() == self.ranks.len();
        if !self.timed && !from_series {
            return None;
        }
        let mut weight: HashMap<u32, (i64, u64)> = HashMap::new();
        for r in &self.ranks {
            for (k, o) in r.outer.iter().enumerate() {
                if let Some((id, it)) = *o {
                    let w = weight.entry(id).or_default();
                    w.0 += if self.timed {
                        let gap = k.checked_sub(1).map_or(0, |p| r.spans[k].0 - r.spans[p].1);
                        r.spans[k].1 - r.spans[k].0 + gap.max(0)
                    } else {
                        1
                    };
                    w.1 = w.1.max(u64::from(it) + 1);
                }
            }
        }
        let (&id, &(_, steps)) = weight
            .iter()
            .filter(|(_, v)| v.1 >= 4)
            .max_by_key(|(id, v)| (v.0, std::cmp::Reverse(**id)))?;
        let mut t = vec![vec![0f64; steps as usize]; self.ranks.len()];
        for (ri, (row, r)) in t.iter_mut().zip(&self.ranks).enumerate() {
            // Runs of consecutive positions in one iteration.
            let mut run: Option<(u64, u64, u64)> = None;
            let flush = |run: Option<(u64, u64, u64)>, row: &mut Vec<f64>| {
                if let Some((it, a, b)) = run {
                    row[it as usize] += series[ri].between(a, b);
                }
            };
            for (k, o) in r.outer.iter().enumerate() {
                let Some((l, it)) = *o else { continue };
                if l != id {
                    continue;
                }
                let it = u64::from(it);
                if self.timed {
                    row[it as usize] += (r.spans[k].1 - r.spans[k].0) as f64;
                    continue;
                }
                let p = u64::from(r.pos[k]);
                run = match run {
                    Some((i, a, b)) if i == it && b == p => Some((i, a, p + 1)),
                    other => {
                        flush(other, row);
                        Some((it, p, p + 1))
                    }
                };
            }
            if !self.timed {
                flush(run, row);
            }
        }
        Some(StepMatrix {
            ranks: self.ranks.iter().map(|r| r.rank).collect(),
            t,
            bucket: (!self.timed).then(|| series.iter().map(|s| s.width()).max().unwrap_or(1)),
        })
    }

    /// Total events kept for analysis.
    pub fn events(&self) -> usize {
        self.ranks.iter().map(|r| r.events.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::ReqId;

    #[test]
    fn events_keep_their_order_and_store_each_distinct_one_once() {
        let ev = |op: Op, site: u64, req: Option<u64>, t: u64| {
            let mut e = Event::new(op);
            e.site = site;
            e.req = req.map(ReqId);
            e.time.enter_ns = t;
            e
        };
        // A loop of the same two calls (their times differ), then calls
        // that are all distinct (request ids in creation order).
        let mut input: Vec<Event> = (0..100)
            .flat_map(|i| [ev(Op::Send, 1, None, i), ev(Op::Recv, 2, None, i)])
            .collect();
        input.extend((0..50).map(|i| ev(Op::Isend, 3, Some(i), i)));
        let events: Events = input.iter().cloned().collect();
        assert_eq!(events.len(), 250);
        assert_eq!(events.distinct(), 2 + 50);
        for (i, (got, want)) in events.iter().zip(&input).enumerate() {
            let mut want = want.clone();
            want.time = trace::Timing::default();
            assert_eq!(*got, want, "event {i}");
            assert_eq!(events[i], want, "event {i}");
        }
    }
}
