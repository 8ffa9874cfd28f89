//! One rank's trace, recorded in one place.
//!
//! A rank's part of a trace file is more than its compressed events: the
//! optional timeline (every enter and leave time) and MPI time series are
//! keyed to the positions of the compressed trace's expansion, so they must
//! see exactly the events the compressor sees, in the same order. The
//! tracer, `rankscale import` and anything else that turns an event stream
//! into a trace feed a [`RankRecorder`] and take its [`TraceFile`] part, so
//! a trace built from a foreign format is built as a traced one is, by
//! construction.

use crate::intra::{Compressor, Config};
use trace::Error;
use trace::event::{Event, EventSink};
use trace::file::{Meta, TraceFile};
use trace::series::MpiSeries;
use trace::timeline::Timeline;

/// What a [`RankRecorder`] keeps besides the compressed trace.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// The compressor's settings.
    pub config: Config,
    /// Keep the timeline, with this wall-clock time (ns since the Unix
    /// epoch, or any common zero) as its epoch (`RANKSCALE_TIMELINE=1`).
    pub timeline_epoch: Option<u64>,
    /// Keep the MPI time series in at most this many buckets
    /// (`RANKSCALE_STEPS=1`).
    pub series_buckets: Option<u32>,
}

/// Records one rank's events: the compressor, the timeline and the MPI time
/// series, fed together.
pub struct RankRecorder {
    comp: Compressor,
    timeline: Option<Timeline>,
    series: Option<MpiSeries>,
}

impl RankRecorder {
    /// A recorder for world rank `rank`.
    pub fn new(rank: u32, what: &Recording) -> RankRecorder {
        RankRecorder {
            comp: Compressor::new(i32::try_from(rank).unwrap_or(i32::MAX), what.config.clone()),
            timeline: what.timeline_epoch.map(|epoch| Timeline::new(rank, epoch)),
            series: what.series_buckets.map(|b| MpiSeries::new(rank, b)),
        }
    }

    /// Records one event (times relative to the timeline's epoch). On an
    /// error the recording is incomplete and must be dropped: a trace that
    /// stops in the middle would expand to a wrong event sequence.
    pub fn push(&mut self, ev: &Event) -> Result<(), Error> {
        let enter = ev.time.enter_ns;
        self.push_spanning(ev, (enter, enter + ev.time.dur_ns))
    }

    /// Adds an event whose timeline span is `span` (enter, leave; ns from
    /// time zero) rather than its [`Timing`](trace::Timing)'s: an imported
    /// call that overlaps earlier ones on its rank keeps its whole span on
    /// the timeline, while its timing holds only the time no earlier call
    /// covered, so that a rank's times inside and between calls add up to
    /// its run (the published traces' overlapping records had added up to
    /// ten times it in `stats`).
    pub fn push_spanning(&mut self, ev: &Event, span: (u64, u64)) -> Result<(), Error> {
        if let Some(t) = &mut self.timeline {
            t.push(span.0, span.1);
        }
        if let Some(s) = &mut self.series {
            s.push(ev.time.dur_ns);
        }
        self.comp.push(ev)
    }

    /// Ends the recording: the rank's part of a trace file, with empty
    /// metadata (the merge fills it), ready for [`crate::merge::files`].
    pub fn finish(self) -> Result<TraceFile, Error> {
        let trace = self.comp.into_trace()?;
        Ok(TraceFile {
            meta: Meta::default(),
            trace: crate::merge::from_rank(&trace),
            timelines: self.timeline.into_iter().collect(),
            series: self.series.into_iter().collect(),
        })
    }

    /// The rank's part as [`RankRecorder::finish`] would give it if the
    /// recording ended now, while it goes on: the tracer writes this
    /// periodically and on a fatal signal, so that a job that dies without
    /// `MPI_Finalize` keeps each rank's trace up to then.
    pub fn snapshot(&self) -> TraceFile {
        TraceFile {
            meta: Meta::default(),
            trace: crate::merge::from_rank(&self.comp.snapshot()),
            timelines: self.timeline.iter().cloned().collect(),
            series: self.series.iter().cloned().collect(),
        }
    }

    /// Events recorded so far.
    pub fn events(&self) -> u64 {
        self.comp.pushed()
    }
}

impl EventSink for RankRecorder {
    fn push(&mut self, event: &Event) -> Result<(), Error> {
        RankRecorder::push(self, event)
    }

    /// Nothing to flush: the recording stays in memory until
    /// [`RankRecorder::finish`].
    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::event::Op;

    #[test]
    fn the_timeline_and_series_follow_the_compressed_events() {
        let what = Recording {
            timeline_epoch: Some(1_000),
            series_buckets: Some(64),
            ..Recording::default()
        };
        let mut rec = RankRecorder::new(3, &what);
        for i in 0..10u64 {
            let mut e = Event::new(if i % 2 == 0 {
                Op::Barrier
            } else {
                Op::Ibarrier
            });
            e.time.enter_ns = 100 * i;
            e.time.dur_ns = 10 + i;
            rec.push(&e).unwrap();
        }
        let part = rec.finish().unwrap();
        assert_eq!(part.trace.total_events(), 10);
        assert_eq!(part.timelines.len(), 1);
        assert_eq!(part.timelines[0].rank, 3);
        assert_eq!(part.timelines[0].epoch_ns, 1_000);
        assert_eq!(part.timelines[0].len(), 10);
        assert_eq!(part.series.len(), 1);
        // Without them, only the trace.
        let mut rec = RankRecorder::new(0, &Recording::default());
        rec.push(&Event::new(Op::Barrier)).unwrap();
        let part = rec.finish().unwrap();
        assert!(part.timelines.is_empty() && part.series.is_empty());
    }

    /// A snapshot holds exactly the events so far, with their timeline,
    /// and leaves the recording as it was: the final part is the same as
    /// without the snapshot.
    #[test]
    fn a_snapshot_is_the_part_so_far_and_changes_nothing() {
        let what = Recording {
            timeline_epoch: Some(0),
            ..Recording::default()
        };
        let ops = [Op::Barrier, Op::Ibarrier, Op::Barrier, Op::Wait];
        let ev = |i: usize| {
            let mut e = Event::new(ops[i % 4]);
            e.time.enter_ns = 10 * i as u64;
            e
        };
        let (mut a, mut b) = (RankRecorder::new(1, &what), RankRecorder::new(1, &what));
        for i in 0..403 {
            a.push(&ev(i)).unwrap();
            b.push(&ev(i)).unwrap();
            if i == 201 || i == 402 {
                let snap = a.snapshot();
                assert_eq!(a.events(), i as u64 + 1);
                let got: Vec<Op> = snap
                    .trace
                    .rank_trace(1)
                    .unwrap()
                    .expand()
                    .map(|e| e.op)
                    .collect();
                let want: Vec<Op> = (0..=i).map(|j| ops[j % 4]).collect();
                assert_eq!(got, want, "snapshot after event {i}");
                assert_eq!(snap.timelines[0].len(), i as u64 + 1);
            }
        }
        let (fa, fb) = (a.finish().unwrap(), b.finish().unwrap());
        assert_eq!(fa.to_wire().unwrap(), fb.to_wire().unwrap());
    }
}
