//! MPI time along a rank's event sequence, in a bounded number of buckets:
//! the small observable of desynchronisation analytics (Afzal et al.) for
//! traces without a timeline (`RANKSCALE_STEPS=1`).
//!
//! Bucket `i` holds the time inside MPI of the events at positions
//! `i·w .. (i+1)·w` of the rank's expansion ([`crate::Trace::expand`]),
//! where the width `w` starts at 1 and doubles (adjacent buckets summed)
//! whenever the buckets would exceed their bound. Like the timeline, it is
//! keyed to positions, so the compressed structure says which loop
//! iteration a bucket belongs to; unlike the timeline, its size does not
//! grow with the run: a few kilobytes per rank.

use serde::{Deserialize, Serialize};

/// The default bound on a series' buckets.
pub const DEFAULT_BUCKETS: u32 = 4096;

/// One rank's MPI time per bucket of events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SeriesWire")]
pub struct MpiSeries {
    /// The rank (in `MPI_COMM_WORLD`).
    pub rank: u32,
    max_buckets: u32,
    width: u64,
    len: u64,
    sums: Vec<u64>,
}

/// The stored form of an [`MpiSeries`], checked before it is trusted.
#[derive(Deserialize)]
struct SeriesWire {
    rank: u32,
    max_buckets: u32,
    width: u64,
    len: u64,
    sums: Vec<u64>,
}

impl TryFrom<SeriesWire> for MpiSeries {
    type Error = String;
    fn try_from(w: SeriesWire) -> Result<MpiSeries, String> {
        let want = w.len.div_ceil(w.width.max(1));
        if w.max_buckets < 2
            || !w.width.is_power_of_two()
            || w.sums.len() as u64 != want
            || w.sums.len() > w.max_buckets as usize
        {
            return Err(format!(
                "MPI time series of rank {}: {} buckets of {} events for {} events (at most {})",
                w.rank,
                w.sums.len(),
                w.width,
                w.len,
                w.max_buckets
            ));
        }
        Ok(MpiSeries {
            rank: w.rank,
            max_buckets: w.max_buckets,
            width: w.width,
            len: w.len,
            sums: w.sums,
        })
    }
}

impl MpiSeries {
    /// An empty series of `rank` with at most `max_buckets` buckets (at
    /// least 2 are used).
    pub fn new(rank: u32, max_buckets: u32) -> MpiSeries {
        MpiSeries {
            rank,
            max_buckets: max_buckets.max(2),
            width: 1,
            len: 0,
            sums: Vec::new(),
        }
    }

    /// Adds the next event's time inside MPI.
    pub fn push(&mut self, mpi_ns: u64) {
        if self.len / self.width >= u64::from(self.max_buckets) {
            let sums = std::mem::take(&mut self.sums);
            self.sums = sums.chunks(2).map(|c| c.iter().sum()).collect();
            self.width *= 2;
        }
        let i = (self.len / self.width) as usize;
        if i == self.sums.len() {
            self.sums.push(0);
        }
        self.sums[i] = self.sums[i].saturating_add(mpi_ns);
        self.len += 1;
    }

    /// Events per bucket.
    pub fn width(&self) -> u64 {
        self.width
    }
    /// Events recorded.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether no event was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// MPI time per bucket, ns.
    pub fn sums(&self) -> &[u64] {
        &self.sums
    }

    /// MPI time of the events at positions `a..b`, as far as the buckets
    /// tell: whole buckets inside the range count fully, a bucket cut by
    /// an end counts in proportion to its events inside (exact when `w` is
    /// 1 or the ends fall on bucket boundaries).
    pub fn between(&self, a: u64, b: u64) -> f64 {
        let b = b.min(self.len);
        if a >= b {
            return 0.0;
        }
        let (first, last) = (a / self.width, (b - 1) / self.width);
        let mut t = 0.0;
        for i in first..=last {
            let lo = (i * self.width).max(a);
            let hi = ((i + 1) * self.width).min(b).min(self.len);
            let in_bucket = ((i + 1) * self.width).min(self.len) - i * self.width;
            let sum = self.sums[i as usize] as f64;
            t += sum * (hi - lo) as f64 / in_bucket as f64;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_double_and_ranges_add_up() {
        let mut s = MpiSeries::new(3, 4);
        for i in 0..10u64 {
            s.push(i);
        }
        // 10 events in at most 4 buckets: width 4.
        assert_eq!(s.width(), 4);
        assert_eq!(s.sums(), &[1 + 2 + 3, 4 + 5 + 6 + 7, 8 + 9]);
        assert_eq!(s.between(0, 10), 45.0);
        assert_eq!(s.between(4, 8), 22.0);
        // A cut bucket counts in proportion: half of bucket 0.
        assert_eq!(s.between(2, 4), 3.0);
        // The last bucket holds 2 events.
        assert_eq!(s.between(8, 9), 8.5);
        assert_eq!(s.between(9, 3), 0.0);
        let mut exact = MpiSeries::new(0, 64);
        (0..10u64).for_each(|i| exact.push(i));
        assert_eq!((exact.width(), exact.between(2, 4)), (1, 5.0));
    }

    #[test]
    fn a_stored_series_is_checked() {
        let mut s = MpiSeries::new(1, 8);
        (0..20).for_each(|_| s.push(5));
        let bytes = postcard::to_stdvec(&s).unwrap();
        assert_eq!(postcard::from_bytes::<MpiSeries>(&bytes).unwrap(), s);
        let mut bad = s.clone();
        bad.len = 1000;
        let bytes = postcard::to_stdvec(&bad).unwrap();
        assert!(postcard::from_bytes::<MpiSeries>(&bytes).is_err());
    }
}
