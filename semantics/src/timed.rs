//! Every event of one rank with its entry time and duration on the trace's
//! common time base: what a timeline export (Perfetto, OTF2) writes. One
//! place decides where the times come from, so that every export of a
//! trace shows the same times.
//!
//! Times come from the trace's timeline when every rank has one, on one
//! time base for all ranks (the earliest rank's time zero, [`time_zero`]).
//! Without a timeline they are estimated: each event's computation before
//! the call and its time inside MPI are the means of its loop path's
//! statistics, laid end to end from 0. Events are produced one at a time
//! from the compressed trace, never all at once.

use trace::{Event, EventTiming, Expand, PathClass, Trace, TraceFile};

/// What stops the walk over a rank's events.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rank asked for is not in the trace.
    #[error("rank {0} is not in the trace")]
    NoSuchRank(u32),
    /// The trace cannot be cut into ranks, or a rank's events end early.
    #[error("the trace is inconsistent: {0}")]
    Trace(String),
    /// A rank's timeline does not decode or is shorter than its events.
    #[error("rank {0}'s timeline: {1}")]
    Timeline(u32, String),
}

/// Where a trace's times come from, decided once per trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Whether the times come from the timeline (else they are estimated).
    pub timed: bool,
    /// The common time zero, wall-clock ns (0 when estimated).
    pub zero: u64,
}

impl Clock {
    /// The clock of `file`: its timeline when every rank has one.
    pub fn of(file: &TraceFile) -> Clock {
        let z = time_zero(file);
        Clock {
            timed: z.is_some(),
            zero: z.unwrap_or(0),
        }
    }
}

/// One rank's events with their times; see the module documentation.
pub struct RankEvents<'a> {
    rank: u32,
    ex: Expand<'a>,
    /// The rank's timeline offset from the common zero and its spans.
    spans: Option<(u64, Vec<trace::Span>)>,
    /// The estimated clock, ns.
    now: f64,
    i: usize,
}

/// The projection of `rank` that [`RankEvents`] walks; kept apart so that
/// the borrowed expansion can live beside it.
pub fn rank_trace(file: &TraceFile, rank: u32) -> Result<Trace, Error> {
    if !file.trace.ranks().contains(rank) {
        return Err(Error::NoSuchRank(rank));
    }
    file.trace
        .rank_trace(rank)
        .map_err(|e| Error::Trace(e.to_string()))
}

impl<'a> RankEvents<'a> {
    /// The events of `rank` (whose projection is `t`, from [`rank_trace`])
    /// on `clock`.
    pub fn new(
        file: &TraceFile,
        t: &'a Trace,
        rank: u32,
        clock: Clock,
    ) -> Result<RankEvents<'a>, Error> {
        let spans = match (clock.timed, file.timeline(rank)) {
            (true, Some(tl)) => {
                let spans = tl
                    .spans()
                    .map_err(|e| Error::Timeline(rank, e.to_string()))?;
                Some((tl.epoch_ns.saturating_sub(clock.zero), spans))
            }
            _ => None,
        };
        Ok(RankEvents {
            rank,
            ex: t.expand(),
            spans,
            now: 0.0,
            i: 0,
        })
    }

    /// The next event, its entry time (ns since the clock's zero) and its
    /// time inside MPI (ns); `None` at the end. An error when the
    /// timeline is shorter than the events or the expansion breaks.
    pub fn next_event(&mut self) -> Option<Result<(Event, f64, f64), Error>> {
        let Some(ev) = self.ex.next() else {
            if self.ex.is_broken() {
                return Some(Err(Error::Trace(format!(
                    "rank {}'s expansion stopped early",
                    self.rank
                ))));
            }
            return None;
        };
        let (start, dur) = match &self.spans {
            Some((off, spans)) => {
                let Some(s) = spans.get(self.i) else {
                    return Some(Err(Error::Timeline(
                        self.rank,
                        format!("it has {} spans, the rank more events", spans.len()),
                    )));
                };
                ((off + s.enter) as f64, s.duration() as f64)
            }
            None => {
                let (compute, mpi) = match self.ex.timing() {
                    Some(EventTiming::Exact { compute_ns, mpi_ns }) => {
                        (compute_ns as f64, mpi_ns as f64)
                    }
                    Some(EventTiming::Stats(pt, class)) => {
                        let s = match class {
                            PathClass::First => pt.first(),
                            PathClass::Steady => pt.steady(),
                            PathClass::Last => pt.last(),
                        };
                        (s.compute().stats().mean(), s.mpi().stats().mean())
                    }
                    None => (0.0, 0.0),
                };
                self.now += compute;
                let at = self.now;
                self.now += mpi;
                (at, mpi)
            }
        };
        self.i += 1;
        Some(Ok((ev, start, dur)))
    }
}

/// The common time base of a trace's timelines: the earliest rank's time
/// zero (wall-clock ns), so that times compare across ranks; `None` unless
/// every rank has a timeline.
pub fn time_zero(file: &TraceFile) -> Option<u64> {
    let ranks = file.trace.ranks();
    let zeros: Option<Vec<u64>> = ranks
        .iter()
        .map(|r| file.timeline(r).map(|t| t.epoch_ns))
        .collect();
    zeros?.into_iter().min()
}
