//! Timing statistics of compressed events.
//!
//! Wu and Mueller 2012 §2 ("Besides communication tracing, SCALATRACE also preserves the
//! timing information ... in a scalable way"): delta times of one call across
//! loop iterations are not recorded one by one but as statistics with a fixed
//! number of histogram bins, and they are kept apart by *path*, because the
//! first iteration of a loop (entry), the steady state and the last iteration
//! (exit) differ. We keep, for each event of the compressed trace:
//!
//! * two quantities: the computation time before the call
//!   ([`crate::Timing::compute_ns`]) and the time inside MPI
//!   ([`crate::Timing::dur_ns`]);
//! * for each, a [`Dist`]: exact count/min/max/mean/variance ([`Stats`],
//!   Welford's update, Chan et al.'s parallel merge) and a log2-binned
//!   [`Histogram`] with count/min/avg/max per bin;
//! * per path class relative to the event's innermost enclosing loop
//!   ([`PathTiming`]): first iteration, steady state, last iteration.
//!
//! Everything is mergeable (so the inter-node merge can combine ranks) and of
//! a size that does not grow with the run: at most 65 bins per histogram.
//! Unlike ScalaTrace's 5 bins merged by closeness (PRIOR-ART.md), fixed log2
//! bins merge exactly and associatively.

#![warn(missing_docs)]

use serde::{Deserialize, Serialize};

/// Streaming summary of a set of durations, in nanoseconds.
///
/// Mergeable: `a.merge(&b)` equals the summary of the union, so statistics
/// of loop iterations, loop executions and ranks combine in any order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    count: u64,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
}

impl Stats {
    /// Adds one sample (Welford's online update).
    pub fn add(&mut self, x: u64) {
        if self.count == 0 {
            *self = Stats {
                count: 1,
                min: x,
                max: x,
                mean: x as f64,
                m2: 0.0,
            };
            return;
        }
        self.count += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let d = x as f64 - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (x as f64 - self.mean);
    }

    /// Merges another summary into this one (Chan, Golub and LeVeque's
    /// pairwise formula), exact up to floating-point rounding.
    pub fn merge(&mut self, o: &Stats) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        let n = self.count.saturating_add(o.count);
        let (na, nb) = (self.count as f64, o.count as f64);
        let d = o.mean - self.mean;
        self.mean += d * nb / n as f64;
        self.m2 += o.m2 + d * d * na * nb / n as f64;
        self.count = n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Smallest sample (0 when empty).
    pub fn min(&self) -> u64 {
        self.min
    }
    /// Largest sample (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }
    /// Arithmetic mean (0 when empty).
    pub fn mean(&self) -> f64 {
        self.mean
    }
    /// Population variance (0 for fewer than two samples).
    pub fn variance(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            self.m2 / self.count as f64
        }
    }
}

/// One histogram bin: the samples whose bit length is `index` or, in a
/// coarsened histogram, in `index .. index + width` (bit length `k` means
/// `[2^(k-1), 2^k)`; bit length 0 holds zeros).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bin {
    index: u8,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Bin {
    /// Bin number: the smallest bit length of its samples (0..=64).
    pub fn index(&self) -> u8 {
        self.index
    }
    /// Smallest value the bin can hold.
    pub fn lower(&self) -> u64 {
        if self.index == 0 {
            0
        } else {
            1u64 << (self.index - 1)
        }
    }
    /// Samples in the bin.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Smallest sample in the bin.
    pub fn min(&self) -> u64 {
        self.min
    }
    /// Largest sample in the bin.
    pub fn max(&self) -> u64 {
        self.max
    }
    /// Mean of the bin's samples; replay draws from bins with this value.
    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// The most bins a [`Histogram`] keeps: ScalaTrace's five, which keeps a
/// trace's timing, most of its bytes, nearly constant in size.
pub const MAX_BINS: usize = 5;

/// The share of a trace's time (computation and MPI, over all events and
/// ranks) under which a distribution's shape is not worth its bytes: a
/// trace file keeps such a distribution as one bin, with its count, its
/// minimum, mean and maximum (quantised on the wider bin: within 2.2 % for
/// samples that span up to 16 octaves, 4.4 % up to 32) and its variance.
///
/// Why: the shape of a histogram is most of a trace's bytes, and it is
/// where the trace grows with the ranks. Sixteen times the samples fill
/// more bins, mostly in calls that take no time: at 64 ranks on Open MPI,
/// `io_checkpoint`'s distributions held 129 bins against 104 at 4 ranks,
/// and of the 25 more, most were in calls such as `MPI_Get_count` and
/// `MPI_Comm_rank` whose time is a ten-thousandth of the run's or less
/// (kept as one bin, the file grew 1.8 % instead of 13 %). Below a
/// thousandth of the run's time, no replay, simulation or benchmark can
/// show a shape's effect; the mean, which decides the time, stays.
pub const NEGLIGIBLE_SHARE: f64 = 1e-3;

/// A histogram with log2-spaced bins over nanoseconds, stored sparsely (only
/// non-empty bins), each with count/min/avg/max, and never more than
/// [`MAX_BINS`] of them.
///
/// Bins start as single log2 classes (bit lengths). When more than
/// [`MAX_BINS`] would be non-empty, the histogram coarsens: at level `L` a bin
/// covers `2^L` consecutive bit lengths, aligned to multiples of `2^L`. The
/// level only grows, and the level of a merge is the smallest one that fits
/// the union of the samples, so merging stays exact and its result does not
/// depend on the order in which iterations or ranks merge; and the size of a
/// histogram does not grow with the run or the number of ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    level: u8,
    bins: Vec<Bin>,
}

impl Histogram {
    /// The bin number of a sample at level 0: its bit length.
    pub fn bin_of(x: u64) -> u8 {
        (64 - x.leading_zeros()) as u8
    }

    /// How many bit lengths one bin covers (a power of two).
    pub fn width(&self) -> u32 {
        1u32 << self.level.min(7)
    }

    /// The samples of bin `i` (in [`Histogram::bins`]' order) and of the
    /// bins of the bit lengths next to it: values within a few per cent of
    /// each other can fall on either side of a bin boundary, so a step that
    /// every rank went through once can leave two bins of fewer samples
    /// than ranks, but not a neighbourhood. 0 for a bin that is not there.
    pub fn neighbourhood(&self, i: usize) -> u64 {
        let Some(b) = self.bins.get(i) else {
            return 0;
        };
        let w = self.width();
        let mut n = b.count();
        if let Some(p) = i.checked_sub(1).and_then(|j| self.bins.get(j))
            && u32::from(p.index) + w == u32::from(b.index)
        {
            n += p.count();
        }
        if let Some(q) = self.bins.get(i + 1)
            && u32::from(b.index) + w == u32::from(q.index)
        {
            n += q.count();
        }
        n
    }

    fn coarse(&self, index: u8) -> u8 {
        let l = self.level.min(7);
        (index >> l) << l
    }

    fn put(&mut self, ob: Bin) {
        let index = self.coarse(ob.index);
        match self.bins.binary_search_by_key(&index, |b| b.index) {
            Ok(i) => {
                let b = &mut self.bins[i];
                b.count = b.count.saturating_add(ob.count);
                b.min = b.min.min(ob.min);
                b.max = b.max.max(ob.max);
                b.sum = b.sum.saturating_add(ob.sum);
            }
            Err(i) => self.bins.insert(i, Bin { index, ..ob }),
        }
    }

    fn coarsen_to(&mut self, level: u8) {
        if level <= self.level {
            return;
        }
        self.level = level.min(7);
        for b in std::mem::take(&mut self.bins) {
            self.put(b);
        }
    }

    fn fit(&mut self) {
        while self.bins.len() > MAX_BINS && self.level < 7 {
            self.coarsen_to(self.level + 1);
        }
    }

    /// Adds one sample. The bins are few (at most [`MAX_BINS`]) and a
    /// steady call's samples mostly fall into a bin that exists, so that
    /// bin is found by a scan and updated in place; only a new bin goes
    /// through `put` and may coarsen the histogram.
    pub fn add(&mut self, x: u64) {
        let index = self.coarse(Histogram::bin_of(x));
        for b in &mut self.bins {
            if b.index == index {
                b.count = b.count.saturating_add(1);
                b.min = b.min.min(x);
                b.max = b.max.max(x);
                b.sum = b.sum.saturating_add(u128::from(x));
                return;
            }
            if b.index > index {
                break;
            }
        }
        self.put(Bin {
            index,
            count: 1,
            min: x,
            max: x,
            sum: u128::from(x),
        });
        self.fit();
    }

    /// Coarsens to the lowest level at which every sample falls into one
    /// bin: the aligned block of bit lengths that holds the smallest and
    /// the largest. Still a histogram of the usual kind, so it merges
    /// exactly with any other.
    fn collapse(&mut self) {
        if let (Some(a), Some(b)) = (self.bins.first(), self.bins.last()) {
            let (a, b) = (a.index, b.index);
            let level = (self.level..7).find(|&l| a >> l == b >> l).unwrap_or(7);
            self.coarsen_to(level);
        }
    }

    /// Merges another histogram bin by bin.
    pub fn merge(&mut self, o: &Histogram) {
        self.coarsen_to(o.level);
        for ob in &o.bins {
            self.put(*ob);
        }
        self.fit();
    }

    /// The non-empty bins in increasing order. A bin holds the samples
    /// whose bit length is in `[index, index + width)`.
    pub fn bins(&self) -> &[Bin] {
        &self.bins
    }
}

/// The distribution of one quantity: summary statistics and histogram.
///
/// In memory everything is exact. In a trace file a distribution is stored
/// compactly (see [`DistWire`]): count, min, max and mean follow from the
/// histogram, and the per-bin min, max and average are kept to 1/255 of
/// the bin's log2 span (within 0.14% for a one-octave bin, 1.1% for a bin
/// coarsened to eight octaves), below the run-to-run jitter of MPI timings. That makes the timing
/// of a trace (most of its bytes) small and nearly constant in size.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "DistWire", try_from = "DistWire")]
pub struct Dist {
    stats: Stats,
    hist: Histogram,
}

impl Dist {
    /// The distribution as it reads back from a trace file: the stored
    /// form's quantisation applied in memory, without the bytes.
    fn quantise(&mut self) {
        if let Ok(d) = Dist::try_from(DistWire::from(self.clone())) {
            *self = d;
        }
    }

    /// The sum of the samples (count times mean), in nanoseconds.
    fn total(&self) -> f64 {
        self.stats.mean * self.stats.count as f64
    }

    /// Keeps one bin when the distribution's samples add up to less than
    /// `floor` ns (see [`NEGLIGIBLE_SHARE`]).
    fn condense(&mut self, floor: f64) {
        if self.hist.bins.len() > 1 && self.total() < floor {
            self.hist.collapse();
        }
    }

    /// Adds one sample.
    pub fn add(&mut self, x: u64) {
        self.stats.add(x);
        self.hist.add(x);
    }
    /// Merges another distribution.
    pub fn merge(&mut self, o: &Dist) {
        self.stats.merge(&o.stats);
        self.hist.merge(&o.hist);
    }
    /// Summary statistics.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
    /// Histogram.
    pub fn histogram(&self) -> &Histogram {
        &self.hist
    }

    /// Draws one value from the distribution, independently of any other
    /// draw: a bin with probability proportional to its count, then a
    /// value in `[min, max]`
    /// of the bin whose expectation is the bin's average
    /// (`min + (max - min) · U^k` with `k = (max - min) / (avg - min) - 1`),
    /// so that the per-bin frequencies, minima, maxima and means of the
    /// trace are honoured. An empty distribution draws 0. Replay, the
    /// simulator and codegen's benchmarks take the bin from a quantile
    /// that the ranks share instead (`compress::ComputeDraws`), with the
    /// same placement in it ([`Dist::value_at`]).
    pub fn draw(&self, rng: &mut crate::SplitMix64) -> u64 {
        let u = rng.unit();
        self.value_at(u, || rng.unit())
    }

    /// The value at quantile `u` in `[0, 1)`, placed in its bin by `v`: the
    /// bin that holds that share of the samples, as [`Dist::draw`] picks
    /// it, then a value in the bin's `[min, max]` at position `v()`
    /// (uniform in `[0, 1)`, called only when the bin holds two or more
    /// distinct values) whose expectation is the bin's average. This is how
    /// `compress::ComputeDraws` gives ranks at the same step the same bin
    /// and each its own place in it. An empty distribution gives 0.
    pub fn value_at(&self, u: f64, v: impl FnOnce() -> f64) -> u64 {
        match self.bin_at(u) {
            Some(bin) => within(bin, v),
            None => 0,
        }
    }

    /// The value for one execution of a distribution that `share` ranks'
    /// executions make up, as `compress::ComputeDraws` draws: a bin that
    /// holds, with the bins of the neighbouring values, fewer samples than
    /// `share` ([`Histogram::neighbourhood`]) is one rank's (not every rank
    /// can have been there), and its samples are dealt: `dealt(total)` gives
    /// the execution's place among the distribution's `total` samples in a
    /// permutation that every rank's executions together take once (`None`
    /// past them), and the places below the count of such samples take
    /// them, each its own, so that a run holds every accident exactly as
    /// often as the trace recorded it. The other bins are taken at the
    /// quantile `u` the ranks share, in proportion to their counts. The
    /// place in the bin is `v(i)`'s, as in [`Dist::value_at`], for the bin
    /// at position `i` of [`Histogram::bins`] (`v` is called once, for a
    /// bin of two or more distinct values): the caller can then spread the
    /// places of each bin's executions evenly, so that the bin's share of
    /// the run's time holds whatever the seed.
    pub fn value_shared(
        &self,
        u: f64,
        share: u64,
        dealt: impl FnOnce(u64) -> Option<u64>,
        v: impl FnOnce(usize) -> f64,
    ) -> u64 {
        let h = &self.hist;
        let total: u64 = h.bins.iter().map(|b| b.count()).sum();
        if total == 0 {
            return 0;
        }
        let own = |i: usize| h.neighbourhood(i) < share;
        let rare: u64 = (0..h.bins.len())
            .filter(|&i| own(i))
            .map(|i| h.bins[i].count())
            .sum();
        if rare > 0
            && let Some(place) = dealt(total)
            && place < rare
        {
            let (i, bin) = pick(&h.bins, place, own);
            return within(bin, || v(i));
        }
        let at = (u.clamp(0.0, 1.0) * (total - rare) as f64) as u64;
        let (i, bin) = pick(&h.bins, at, |i| !own(i));
        within(bin, || v(i))
    }

    /// The bin at quantile `u`, or `None` for an empty distribution.
    fn bin_at(&self, u: f64) -> Option<&Bin> {
        let bins = self.hist.bins();
        let total: u64 = bins.iter().map(|b| b.count()).sum();
        if total == 0 {
            return None;
        }
        let at = (u.clamp(0.0, 1.0) * total as f64) as u64;
        Some(pick(bins, at, |_| true).1)
    }
}

/// The bin that holds sample `at` (from 0) among the bins whose position
/// `keep` keeps, in order, with its position; the last of them past their
/// end. At least one bin is kept.
fn pick(bins: &[Bin], mut at: u64, keep: impl Fn(usize) -> bool) -> (usize, &Bin) {
    let mut last = (bins.len() - 1, &bins[bins.len() - 1]);
    for (i, b) in bins.iter().enumerate().filter(|&(i, _)| keep(i)) {
        if at < b.count() {
            return (i, b);
        }
        at -= b.count();
        last = (i, b);
    }
    last
}

/// A value in `bin`'s `[min, max]` at position `v()` (uniform in `[0, 1)`):
/// `min + (max - min) · v^k` with `k = (max - min) / (avg - min) - 1`, whose
/// expectation is the bin's average. `v` is called only when the bin holds
/// two or more distinct values, so a generator behind it advances as
/// replay's and the benchmarks' runtime expect.
fn within(bin: &Bin, v: impl FnOnce() -> f64) -> u64 {
    let (lo, hi, avg) = (bin.min() as f64, bin.max() as f64, bin.avg());
    if hi <= lo || avg <= lo {
        return bin.min();
    }
    let k = ((hi - lo) / (avg - lo) - 1.0).max(0.0);
    (lo + (hi - lo) * v().powf(k)).round() as u64
}

/// Which of the two timed quantities of an event a [`Dist`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Quantity {
    /// Computation before the call.
    Compute,
    /// Time inside MPI.
    Mpi,
}

impl Dist {
    /// This distribution moved to a new mean and spread, keeping its shape:
    /// every value `x` becomes `mean + (x - old mean) * s`, where `s` is the
    /// ratio of the new range `max - min` to the old one, and each bin goes
    /// where its average lands. The map is linear, so the mean is exact
    /// (also after the file's quantisation, which derives the mean from the
    /// bins); the new minimum and maximum follow from the shape. The count
    /// is kept. Values below zero are clamped to zero.
    ///
    /// This is how an extrapolated histogram is built (Wu and Mueller 2012 §3.5): the
    /// fields that scale with the rank count (min, mean, max) are fitted
    /// across the input traces, and the histogram of the largest input gives
    /// the shape around them, because bins of different inputs do not
    /// correspond once a trend moves values across log2 bins.
    pub fn remapped(&self, min: f64, mean: f64, max: f64) -> Dist {
        if self.stats.count == 0 {
            return self.clone();
        }
        // A fitted law can run away at a large target (a cubic term at a
        // million ranks); durations are kept below 2^52 ns (52 days), well
        // inside the range every stored field can hold.
        const LIMIT: f64 = (1u64 << 52) as f64;
        let mean = mean.clamp(0.0, LIMIT);
        let (min, max) = (min.clamp(0.0, LIMIT), max.clamp(0.0, LIMIT));
        let (smin, smean, smax) = (
            self.stats.min as f64,
            self.stats.mean,
            self.stats.max as f64,
        );
        let scale = if smax > smin && max > min {
            (max - min) / (smax - smin)
        } else {
            0.0
        };
        let map = |x: f64| (mean + (x - smean) * scale).clamp(0.0, LIMIT).round() as u64;
        let mut hist = Histogram::default();
        for b in &self.hist.bins {
            let avg = (mean + (b.avg() - smean) * scale).min(LIMIT);
            let avg_u = avg.max(0.0).round() as u64;
            let index = Histogram::bin_of(avg_u);
            let lower = if index == 0 { 0 } else { 1u64 << (index - 1) };
            let upper = if index >= 64 {
                u64::MAX
            } else {
                (1u64 << index) - 1
            };
            let (bmin, bmax) = (
                map(b.min as f64).clamp(lower, avg_u),
                map(b.max as f64).clamp(avg_u, upper),
            );
            hist.put(Bin {
                index,
                count: b.count,
                min: bmin,
                max: bmax,
                sum: u128::from(avg_u) * u128::from(b.count),
            });
        }
        hist.fit();
        let (count, sum) = hist.bins.iter().fold((0u64, 0u128), |(c, s), b| {
            (c.saturating_add(b.count), s.saturating_add(b.sum))
        });
        Dist {
            stats: Stats {
                count,
                min: hist.bins.first().map_or(0, |b| b.min),
                max: hist.bins.last().map_or(0, |b| b.max),
                mean: if count > 0 {
                    sum as f64 / count as f64
                } else {
                    0.0
                },
                m2: self.stats.m2 * scale * scale,
            },
            hist,
        }
    }
}

impl Dist {
    /// This distribution with `n` samples instead of its count, every bin
    /// scaled in proportion (largest remainders first, so the counts add up
    /// to `n`), its values kept. An extrapolated event is executed by a
    /// different number of ranks than the input it was fitted from.
    pub fn with_count(&self, n: u64) -> Dist {
        let total = self.stats.count;
        if total == 0 || n == total {
            return self.clone();
        }
        let exact: Vec<f64> = self
            .hist
            .bins
            .iter()
            .map(|b| b.count as f64 * n as f64 / total as f64)
            .collect();
        let mut counts: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
        let mut left = n.saturating_sub(counts.iter().sum());
        let mut order: Vec<usize> = (0..counts.len()).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor()))
        });
        for i in order {
            if left == 0 {
                break;
            }
            counts[i] += 1;
            left -= 1;
        }
        let mut hist = Histogram {
            level: self.hist.level,
            bins: Vec::with_capacity(self.hist.bins.len()),
        };
        for (b, c) in self.hist.bins.iter().zip(counts) {
            if c > 0 {
                hist.bins.push(Bin {
                    count: c,
                    sum: (b.avg() * c as f64) as u128,
                    ..*b
                });
            }
        }
        Dist {
            stats: Stats {
                count: n,
                m2: self.stats.m2 * n as f64 / total as f64,
                ..self.stats
            },
            hist,
        }
    }
}

/// The stored form of a [`Dist`]: the histogram's level, the sum of squared
/// deviations for the variance, and exactly [`MAX_BINS`] bin slots (none
/// for an empty distribution), each `(bit length, count, min, max,
/// average)` with the last three quantised on the bin's log scale; unused
/// slots are zero. A fixed number of slots, as in ScalaTrace's fixed bins,
/// makes the stored size of a distribution independent of how many samples
/// it summarises, so the trace does not grow with ranks or iterations.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DistWire {
    level: u8,
    /// The sum of squared deviations as the upper half of an `f32`
    /// (bfloat16: 8 significant bits, within 0.4%).
    m2: u16,
    bins: Option<[Slot; MAX_BINS]>,
}

/// One stored bin: bit length, count, quantised min, max and average.
type Slot = (u8, u64, u8, u8, u8);

/// The log2 span `[log2(lo + 1), log2(hi)]` of the values a bin holds.
fn span(index: u8, width: u32) -> (f64, f64) {
    let lo = if index == 0 {
        0.0
    } else {
        (f64::from(index) - 1.0).exp2()
    };
    let top = (u32::from(index) + width).min(65);
    let hi = (f64::from(top) - 1.0).exp2().max(lo + 1.0);
    ((lo + 1.0).log2(), hi.log2())
}

/// `x` as bfloat16 (the upper half of its `f32`, rounded to nearest).
fn bf16(x: f64) -> u16 {
    // A sum of squares beyond f32's range (or not a number) is stored as
    // the largest finite value: the reader rejects infinities.
    let x = if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, f64::from(f32::MAX))
    };
    let bits = (x as f32).to_bits();
    let rounded = bits.saturating_add(0x7fff + ((bits >> 16) & 1));
    // Rounding must not carry a finite value into infinity or NaN.
    if (rounded >> 23) & 0xff == 0xff && (bits >> 23) & 0xff != 0xff {
        (bits >> 16) as u16
    } else {
        (rounded >> 16) as u16
    }
}

fn quantise(x: u64, index: u8, width: u32) -> u8 {
    let (a, b) = span(index, width);
    if b - a < 1e-12 {
        return 0;
    }
    let p = (((x as f64) + 1.0).log2() - a) / (b - a);
    (p.clamp(0.0, 1.0) * 255.0).round() as u8
}

fn dequantise(q: u8, index: u8, width: u32) -> u64 {
    let (a, b) = span(index, width);
    let v = (a + f64::from(q) / 255.0 * (b - a)).exp2() - 1.0;
    let lo = if index == 0 { 0 } else { 1u64 << (index - 1) };
    let top = u32::from(index) + width;
    let hi = if top >= 65 {
        u64::MAX
    } else {
        (1u64 << (top - 1)).saturating_sub(1)
    };
    (v.round() as u64).clamp(lo, hi.max(lo))
}

impl From<Dist> for DistWire {
    fn from(d: Dist) -> DistWire {
        let w = d.hist.width();
        let mut slots = [(0, 0, 0, 0, 0); MAX_BINS];
        for (slot, b) in slots.iter_mut().zip(&d.hist.bins) {
            let avg = (b.sum / u128::from(b.count.max(1))) as u64;
            *slot = (
                b.index,
                b.count,
                quantise(b.min, b.index, w),
                quantise(b.max, b.index, w),
                quantise(avg, b.index, w),
            );
        }
        DistWire {
            level: d.hist.level,
            m2: bf16(d.stats.m2),
            bins: (!d.hist.bins.is_empty()).then_some(slots),
        }
    }
}

impl TryFrom<DistWire> for Dist {
    type Error = &'static str;
    fn try_from(w: DistWire) -> Result<Dist, &'static str> {
        let m2 = f32::from_bits(u32::from(w.m2) << 16);
        if w.level > 7 || !m2.is_finite() || m2 < 0.0 {
            return Err("invalid timing distribution");
        }
        let slots = w.bins.unwrap_or_default();
        let used = slots.iter().take_while(|s| s.1 > 0).count();
        if w.bins.is_some() && used == 0 || slots[used..].iter().any(|s| *s != (0, 0, 0, 0, 0)) {
            return Err("invalid timing histogram");
        }
        let width = 1u32 << w.level;
        let mut hist = Histogram {
            level: w.level,
            bins: Vec::with_capacity(used),
        };
        let mut stats = Stats::default();
        let mut sum = 0u128;
        for &(index, count, qmin, qmax, qavg) in &slots[..used] {
            let aligned = u32::from(index) % width == 0;
            let ascending = hist.bins.last().is_none_or(|b: &Bin| b.index < index);
            if index > 64 || count == 0 || !aligned || !ascending || qmin > qavg || qavg > qmax {
                return Err("invalid timing histogram");
            }
            let (min, max) = (
                dequantise(qmin, index, width),
                dequantise(qmax, index, width),
            );
            let avg = dequantise(qavg, index, width);
            let bsum = u128::from(avg) * u128::from(count);
            hist.bins.push(Bin {
                index,
                count,
                min,
                max,
                sum: bsum,
            });
            sum = sum.saturating_add(bsum);
            stats.count = stats.count.saturating_add(count);
        }
        if let (Some(first), Some(last)) = (hist.bins.first(), hist.bins.last()) {
            stats.min = first.min;
            stats.max = last.max;
            stats.mean = sum as f64 / stats.count as f64;
            stats.m2 = f64::from(m2);
        }
        Ok(Dist { stats, hist })
    }
}

/// Computation and MPI time of a set of executions of one event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeStats {
    compute: Dist,
    mpi: Dist,
}

impl TimeStats {
    fn quantise(&mut self) {
        self.compute.quantise();
        self.mpi.quantise();
    }

    /// The sum of the computation and MPI samples (ns).
    fn total_ns(&self) -> f64 {
        self.compute.total() + self.mpi.total()
    }

    fn condense(&mut self, floor: f64) {
        self.compute.condense(floor);
        self.mpi.condense(floor);
    }

    /// Adds one execution.
    pub fn add(&mut self, compute_ns: u64, mpi_ns: u64) {
        self.compute.add(compute_ns);
        self.mpi.add(mpi_ns);
    }
    /// Merges another set of executions.
    pub fn merge(&mut self, o: &TimeStats) {
        self.compute.merge(&o.compute);
        self.mpi.merge(&o.mpi);
    }
    /// Computation time before the call (the "delta time" of Wu and Mueller 2012 §2).
    pub fn compute(&self) -> &Dist {
        &self.compute
    }
    /// Time inside MPI.
    pub fn mpi(&self) -> &Dist {
        &self.mpi
    }
    /// Number of executions summarised.
    pub fn count(&self) -> u64 {
        self.compute.stats.count
    }
}

/// One slow execution of an event: who ran it, where, and how long it spent
/// inside MPI.
///
/// `pos` is the execution's index in its rank's event sequence (the rank's
/// [`crate::Trace::expand`], the same key the timeline uses), so the
/// compressed structure stays the single source of truth: expanding the
/// rank to `pos` gives the event and its loop iteration vector
/// ([`crate::Expand::loop_path`]) without storing either twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowInstance {
    /// World rank.
    pub rank: u32,
    /// Index of the execution in the rank's event sequence.
    pub pos: u64,
    /// Time inside the MPI call, ns.
    pub mpi_ns: u64,
}

impl SlowInstance {
    /// The reservoir's order: slowest first, then by rank and position, so
    /// that the K kept are the same whatever order ranks and loop executions
    /// are merged in.
    fn key(&self) -> (std::cmp::Reverse<u64>, u32, u64) {
        (std::cmp::Reverse(self.mpi_ns), self.rank, self.pos)
    }
}

/// The K slowest executions of one event over all its ranks (Alawneh and Hamou-Lhadj 2022 needs
/// instance-level timing; the statistics alone cannot say *which* execution
/// was slow).
///
/// Bounded by K whatever the run length, so the trace stays near constant in
/// size. An execution no slower than the K-th kept one is rejected with one
/// comparison, which keeps the steady state of a loop at O(1) per event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ReservoirWire")]
pub struct Reservoir {
    cap: u16,
    /// Slowest first (in [`SlowInstance::key`] order), at most `cap`.
    top: Vec<SlowInstance>,
}

/// The stored form of a [`Reservoir`], checked before it is trusted.
#[derive(Deserialize)]
struct ReservoirWire {
    cap: u16,
    top: Vec<SlowInstance>,
}

impl TryFrom<ReservoirWire> for Reservoir {
    type Error = String;
    fn try_from(w: ReservoirWire) -> Result<Reservoir, String> {
        if w.top.len() > usize::from(w.cap) {
            return Err(format!(
                "{} slow instances kept where at most {} are",
                w.top.len(),
                w.cap
            ));
        }
        if !w.top.is_sorted_by_key(SlowInstance::key) {
            return Err("slow instances out of order".into());
        }
        Ok(Reservoir {
            cap: w.cap,
            top: w.top,
        })
    }
}

impl Reservoir {
    /// An empty reservoir that keeps at most `cap` executions.
    pub fn new(cap: u16) -> Reservoir {
        Reservoir {
            cap,
            top: Vec::new(),
        }
    }
    /// The kept executions, slowest first.
    pub fn slowest(&self) -> &[SlowInstance] {
        &self.top
    }
    /// How many executions it keeps at most (the trace's K).
    pub fn capacity(&self) -> usize {
        usize::from(self.cap)
    }

    /// Offers one execution.
    #[inline]
    pub fn offer(&mut self, s: SlowInstance) {
        let cap = usize::from(self.cap);
        if self.top.len() >= cap && self.top.last().is_none_or(|l| s.key() >= l.key()) {
            return;
        }
        let at = self.top.partition_point(|x| x.key() < s.key());
        self.top.insert(at, s);
        self.top.truncate(cap);
    }

    /// Merges the executions of another reservoir (of the same event on
    /// other ranks, or of later executions of its loop).
    pub fn merge(&mut self, o: &Reservoir) {
        self.cap = self.cap.max(o.cap);
        if o.top.is_empty() {
            return;
        }
        let mut all = Vec::with_capacity(self.top.len() + o.top.len());
        let (mut a, mut b) = (self.top.iter().peekable(), o.top.iter().peekable());
        while all.len() < usize::from(self.cap) {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if y.key() < x.key() => b.next(),
                (Some(_), _) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(&s) => all.push(s),
                None => break,
            }
        }
        self.top = all;
    }

    fn heap_bytes(&self) -> usize {
        self.top.capacity() * std::mem::size_of::<SlowInstance>()
    }
}

/// Which part of its innermost loop an event execution belongs to (the path
/// classes of [`PathTiming`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathClass {
    /// The first iteration (or an event outside any loop).
    First,
    /// Neither the first nor the last iteration.
    Steady,
    /// The last iteration of a loop execution of two or more iterations.
    Last,
}

/// Path-sensitive timing of one event in the compressed trace.
///
/// Classes are relative to the event's *innermost enclosing loop*, per
/// execution of that loop: the event's executions in the loop's first
/// iteration go to [`first`](PathTiming::first), those in its last iteration
/// (when it ran at least twice) to [`last`](PathTiming::last), and all others
/// to [`steady`](PathTiming::steady). An event outside any loop has only
/// `first`. This separates the entry path (computation before the loop is
/// entered lands in the first iteration's first event) and the exit path
/// (the last iteration) from the steady state, as Wu and Mueller 2012 §2 asks, in three
/// fixed-size summaries. Beside them, a [`Reservoir`] keeps the slowest
/// executions themselves.
///
/// While the trace is being built the newest iteration is held back in
/// `pending` until it is known whether another iteration follows (it then
/// becomes steady) or not (it is the last). `compress::Compressor::into_trace`
/// settles it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathTiming {
    first: TimeStats,
    steady: TimeStats,
    last: TimeStats,
    /// The newest iteration's (compute, mpi) sample: a direct member of a
    /// loop runs once per iteration, so this is never more than one sample,
    /// and keeping it as a pair makes the per-iteration update allocation-free.
    pending: Option<(u64, u64)>,
    slow: Reservoir,
}

/// [`PathTiming`] as format versions 1 and 2 stored it, before the
/// reservoir of slow instances: a frozen wire type, read only.
#[derive(Deserialize)]
pub(crate) struct PathTimingV2 {
    first: TimeStats,
    steady: TimeStats,
    last: TimeStats,
    pending: Option<(u64, u64)>,
}

impl From<PathTimingV2> for PathTiming {
    fn from(v: PathTimingV2) -> PathTiming {
        PathTiming {
            first: v.first,
            steady: v.steady,
            last: v.last,
            pending: v.pending,
            slow: Reservoir::default(),
        }
    }
}

impl PathTiming {
    /// The timing as it reads back from a trace file (see
    /// [`crate::TraceFile::quantised`]).
    pub(crate) fn quantise(&mut self) {
        self.first.quantise();
        self.steady.quantise();
        self.last.quantise();
    }

    /// The computation and MPI time of every path class together (ns).
    pub(crate) fn total_ns(&self) -> f64 {
        [&self.first, &self.steady, &self.last]
            .map(TimeStats::total_ns)
            .iter()
            .sum()
    }

    /// Collapses to one bin each distribution whose samples add up to
    /// less than `floor` ns: see [`NEGLIGIBLE_SHARE`].
    pub(crate) fn condense(&mut self, floor: f64) {
        self.first.condense(floor);
        self.steady.condense(floor);
        self.last.condense(floor);
    }

    /// The timing of one execution, `at` (which a reservoir of `keep`
    /// entries holds).
    pub(crate) fn single(compute_ns: u64, keep: u16, at: SlowInstance) -> PathTiming {
        let mut t = PathTiming {
            slow: Reservoir::new(keep),
            ..PathTiming::default()
        };
        t.first.add(compute_ns, at.mpi_ns);
        t.slow.offer(at);
        t
    }

    /// Executions in the first iteration of the innermost enclosing loop.
    pub fn first(&self) -> &TimeStats {
        &self.first
    }
    /// Executions in neither the first nor the last iteration.
    pub fn steady(&self) -> &TimeStats {
        &self.steady
    }
    /// Executions in the last iteration (of loop executions that had at least
    /// two iterations).
    pub fn last(&self) -> &TimeStats {
        &self.last
    }
    /// The slowest executions (by time inside MPI) over all paths and ranks.
    pub fn slow(&self) -> &Reservoir {
        &self.slow
    }
    /// All executions, whatever the path.
    pub fn total(&self) -> TimeStats {
        let mut t = self.first.clone();
        t.merge(&self.steady);
        t.merge(&self.last);
        if let Some((c, m)) = self.pending {
            t.add(c, m);
        }
        t
    }

    /// A new iteration of the innermost loop's current execution: the
    /// previous newest iteration was not the last one after all.
    pub(crate) fn next_iteration(&mut self, compute_ns: u64, at: SlowInstance) {
        if let Some((c, m)) = self.pending.replace((compute_ns, at.mpi_ns)) {
            self.steady.add(c, m);
        }
        self.slow.offer(at);
    }

    /// A new execution of the innermost loop begins with `at`: the same as
    /// [`PathTiming::append_execution`] of [`PathTiming::single`], without
    /// building that one-event timing.
    pub(crate) fn start_execution(&mut self, compute_ns: u64, at: SlowInstance) {
        self.settle();
        self.first.add(compute_ns, at.mpi_ns);
        self.slow.offer(at);
    }

    /// Appends the executions of `o` (a later execution of the enclosing
    /// loop): our current execution is over, so its newest iteration was the
    /// last one.
    pub(crate) fn append_execution(&mut self, o: &PathTiming) {
        self.settle();
        self.first.merge(&o.first);
        self.steady.merge(&o.steady);
        self.last.merge(&o.last);
        self.pending = o.pending;
        self.slow.merge(&o.slow);
    }

    /// Merges the timing of the same event on another rank (the inter-node
    /// merge): every path class merges with its own class.
    pub fn merge(&mut self, o: &PathTiming) {
        self.settle();
        let mut o = o.clone();
        o.settle();
        self.first.merge(&o.first);
        self.steady.merge(&o.steady);
        self.last.merge(&o.last);
        self.slow.merge(&o.slow);
    }

    /// This timing with every distribution replaced by `f(path class,
    /// quantity, distribution)`, and without the slow-instance reservoir,
    /// whose ranks and positions belong to the run it was recorded in. This
    /// is how an extrapolated trace gets the timing fitted for its target
    /// size.
    pub fn map_dists(&self, mut f: impl FnMut(PathClass, Quantity, &Dist) -> Dist) -> PathTiming {
        let mut src = self.clone();
        src.settle();
        let mut map = |class: PathClass, t: &TimeStats| TimeStats {
            compute: f(class, Quantity::Compute, &t.compute),
            mpi: f(class, Quantity::Mpi, &t.mpi),
        };
        PathTiming {
            first: map(PathClass::First, &src.first),
            steady: map(PathClass::Steady, &src.steady),
            last: map(PathClass::Last, &src.last),
            pending: None,
            slow: Reservoir::default(),
        }
    }

    /// This timing with `n` executions in all, shared among the path
    /// classes as before (see [`Dist::with_count`]).
    pub fn with_count(&self, n: u64) -> PathTiming {
        let mut t = self.clone();
        t.settle();
        let c = [t.first.count(), t.steady.count(), t.last.count()];
        let total: u64 = c.iter().sum();
        if total == 0 {
            return t;
        }
        let share = |i: usize| (c[i] as f64 * n as f64 / total as f64).round() as u64;
        let (f, s) = (share(0), share(1));
        let l = n.saturating_sub(f + s);
        let scale = |ts: &TimeStats, k: u64| TimeStats {
            compute: ts.compute.with_count(k),
            mpi: ts.mpi.with_count(k),
        };
        PathTiming {
            first: scale(&t.first, f),
            steady: scale(&t.steady, s),
            last: scale(&t.last, l),
            pending: None,
            slow: t.slow,
        }
    }

    /// This timing with the slow instances of `o` (a timing variant's
    /// distributions beside its event's reservoir over all ranks).
    pub(crate) fn with_slow_of(mut self, o: &PathTiming) -> PathTiming {
        self.slow = o.slow.clone();
        self
    }
    /// The innermost loop is over: the held-back iteration was the last.
    pub(crate) fn settle(&mut self) {
        if let Some((c, m)) = self.pending.take() {
            self.last.add(c, m);
        }
    }

    /// The event got a new innermost loop (it was wrapped into a loop of one
    /// iteration per execution): every execution is a first iteration now.
    #[doc(hidden)]
    pub fn reclassify_as_first(&mut self) {
        let mut all = self.total();
        std::mem::swap(&mut self.first, &mut all);
        self.steady = TimeStats::default();
        self.last = TimeStats::default();
        self.pending = None;
    }

    /// Heap memory held (for [`crate::TraceStats::heap_bytes`]).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slow.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(samples: &[u64]) -> Dist {
        let mut d = Dist::default();
        samples.iter().for_each(|&x| d.add(x));
        d
    }

    #[test]
    fn draws_honour_bin_frequencies_bounds_and_means() {
        let mut d = Dist::default();
        // Two clusters: 3/4 of the samples near 1000 ns, 1/4 near 100 us.
        for i in 0..3000u64 {
            d.add(900 + i % 200);
        }
        for i in 0..1000u64 {
            d.add(90_000 + (i * 37) % 20_000);
        }
        let mut rng = crate::SplitMix64::for_rank(42, 0);
        let n = 200_000;
        let xs: Vec<u64> = (0..n).map(|_| d.draw(&mut rng)).collect();
        let small = xs.iter().filter(|&&x| x < 10_000).count() as f64 / n as f64;
        assert!((small - 0.75).abs() < 0.01, "{small}");
        assert!(xs.iter().all(|&x| (900..=109_999).contains(&x)));
        let mean = xs.iter().sum::<u64>() as f64 / n as f64;
        let want = d.stats().mean();
        assert!((mean - want).abs() < 0.01 * want, "{mean} vs {want}");
        // Reproducible for a seed.
        let mut a = crate::SplitMix64::for_rank(7, 3);
        let mut b = crate::SplitMix64::for_rank(7, 3);
        assert!((0..100).all(|_| d.draw(&mut a) == d.draw(&mut b)));
    }

    #[test]
    fn remapped_moves_the_mean_exactly_through_the_file_form() {
        let d = dist(&[900, 1000, 1100, 5000, 1000, 950]);
        let r = d.remapped(1800.0, 4000.0, 10_000.0);
        let back = Dist::try_from(DistWire::from(r.clone())).unwrap();
        assert_eq!(back.stats().count(), 6);
        let m = back.stats().mean();
        assert!((m - 4000.0).abs() / 4000.0 < 0.02, "mean {m}");
        assert!(back.stats().min() <= 4000 && back.stats().max() >= 4000);
        // A runaway law is held inside what the file can store.
        let huge = dist(&[10, 20, 30]).remapped(1e30, 1e31, 1e32);
        let back = Dist::try_from(DistWire::from(huge)).unwrap();
        assert!(back.stats().max() <= 1 << 52);
        // A constant source stays a point at the new mean.
        let c = dist(&[7, 7, 7]).remapped(0.0, 70.0, 0.0);
        assert_eq!((c.stats().min(), c.stats().max()), (70, 70));
    }

    #[test]
    fn with_count_scales_bins_and_keeps_values() {
        let d = dist(&[10, 10, 10, 1000]);
        let s = d.with_count(1_000_000);
        assert_eq!(s.stats().count(), 1_000_000);
        let bins: u64 = s.histogram().bins().iter().map(Bin::count).sum();
        assert_eq!(bins, 1_000_000);
        assert!((s.stats().mean() - d.stats().mean()).abs() < 1e-9);
        let back = Dist::try_from(DistWire::from(s)).unwrap();
        assert!((back.stats().mean() - d.stats().mean()).abs() / d.stats().mean() < 0.02);
    }

    #[test]
    fn merged_stats_equal_stats_of_the_union() {
        let xs: Vec<u64> = (0..1000).map(|i| (i * 7919) % 1013 + 5).collect();
        let mut all = Stats::default();
        xs.iter().for_each(|&x| all.add(x));
        let mut a = Stats::default();
        let mut b = Stats::default();
        xs[..300].iter().for_each(|&x| a.add(x));
        xs[300..].iter().for_each(|&x| b.add(x));
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!((a.min(), a.max()), (all.min(), all.max()));
        assert!((a.mean() - all.mean()).abs() < 1e-9);
        assert!((a.variance() - all.variance()).abs() < 1e-6 * all.variance());
        let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((all.variance() - var).abs() < 1e-6 * var);
    }

    #[test]
    fn histogram_bins_are_log2_and_merge_exactly() {
        let mut h = Histogram::default();
        for x in [0, 1, 2, 3, 1000, 1023, 1024] {
            h.add(x);
        }
        let idx: Vec<u8> = h.bins().iter().map(|b| b.index()).collect();
        assert_eq!(idx, [0, 1, 2, 10, 11]);
        assert_eq!(h.width(), 1);
        let b10 = h.bins()[3];
        assert_eq!(
            (b10.count(), b10.min(), b10.max(), b10.lower()),
            (2, 1000, 1023, 512)
        );
        assert_eq!(b10.avg(), 1011.5);
        let mut a = Histogram::default();
        let mut b = Histogram::default();
        for x in [0, 1, 2] {
            a.add(x);
        }
        for x in [3, 1000, 1023, 1024] {
            b.add(x);
        }
        a.merge(&b);
        assert_eq!(a, h);
    }

    #[test]
    fn histograms_coarsen_to_at_most_max_bins_in_any_merge_order() {
        let xs: Vec<u64> = (0..2000u64)
            .map(|i| (i * 2_654_435_761) % (1 << (i % 40)))
            .collect();
        let mut all = Histogram::default();
        xs.iter().for_each(|&x| all.add(x));
        assert!(all.bins().len() <= MAX_BINS, "{:?}", all.bins());
        assert!(all.width() > 1);
        let total: u64 = all.bins().iter().map(Bin::count).sum();
        assert_eq!(total, xs.len() as u64);
        for b in all.bins() {
            let w = all.width() as u8;
            assert_eq!(b.index() % w, 0);
            let (lo, hi) = (Histogram::bin_of(b.min()), Histogram::bin_of(b.max()));
            assert!(lo >= b.index() && hi < b.index() + w, "{b:?}");
        }
        // Any split and merge order gives the same histogram.
        for cut in [1, 37, 999, 1500] {
            let (mut a, mut b) = (Histogram::default(), Histogram::default());
            xs[..cut].iter().for_each(|&x| a.add(x));
            xs[cut..].iter().for_each(|&x| b.add(x));
            let mut ab = a.clone();
            ab.merge(&b);
            b.merge(&a);
            assert_eq!(ab, all);
            assert_eq!(b, all);
        }
    }

    /// A collapsed histogram is one aligned bin, the lowest level that
    /// holds every sample, with the count, extremes and sum of all; it
    /// merges with a full histogram as the union would.
    #[test]
    fn a_collapsed_histogram_is_one_aligned_bin_that_merges_exactly() {
        let xs = [40u64, 600, 9_000, 5_000, 70];
        let mut h = Histogram::default();
        xs.iter().for_each(|&x| h.add(x));
        assert_eq!(h.bins().len(), 5);
        let mut one = h.clone();
        one.collapse();
        // Bit lengths 6 to 14: the block [0, 16) at level 4.
        assert_eq!((one.width(), one.bins().len()), (16, 1));
        let b = one.bins()[0];
        assert_eq!((b.index(), b.count(), b.min(), b.max()), (0, 5, 40, 9_000));
        assert_eq!(b.avg(), xs.iter().sum::<u64>() as f64 / 5.0);
        // Samples within one octave need no coarsening at all.
        let mut narrow = Histogram::default();
        [600u64, 700, 1000].iter().for_each(|&x| narrow.add(x));
        let before = narrow.clone();
        narrow.collapse();
        assert_eq!(narrow, before);
        // Merging: collapsed with a full histogram, in either order.
        let more = [3u64, 2_000_000, 17];
        let mut other = Histogram::default();
        more.iter().for_each(|&x| other.add(x));
        let mut union = Histogram::default();
        xs.iter().chain(&more).for_each(|&x| union.add(x));
        let mut a = one.clone();
        a.merge(&other);
        let mut b = other.clone();
        b.merge(&one);
        assert_eq!(a, b);
        let mut u = union.clone();
        u.coarsen_to(a.level);
        assert_eq!(a, u);
    }

    #[test]
    fn stored_distributions_keep_counts_exact_and_values_within_half_a_step() {
        let xs: Vec<u64> = (0..5000u64)
            .map(|i| 300 + (i * 7919) % 90_000 + if i % 97 == 0 { 5_000_000 } else { 0 })
            .chain([0, 1, 2, u64::MAX / 3])
            .collect();
        let mut d = Dist::default();
        xs.iter().for_each(|&x| d.add(x));
        let back = Dist::try_from(DistWire::from(d.clone())).unwrap();
        // Half a quantisation step of a bin `width` octaves wide.
        let tol = (f64::from(d.histogram().width()) / 510.0).exp2() - 1.0 + 1e-3;
        assert!(d.histogram().width() > 1, "the sample should coarsen");
        let close = |a: f64, b: f64| (a - b).abs() <= tol * b.abs().max(1.0);
        assert_eq!(back.stats().count(), d.stats().count());
        assert_eq!(back.stats().min(), d.stats().min());
        assert!(close(back.stats().max() as f64, d.stats().max() as f64));
        assert!(close(back.stats().mean(), d.stats().mean()));
        assert!(close(back.stats().variance(), d.stats().variance()));
        assert_eq!(back.histogram().bins().len(), d.histogram().bins().len());
        for (a, b) in back.histogram().bins().iter().zip(d.histogram().bins()) {
            assert_eq!((a.index(), a.count()), (b.index(), b.count()));
            assert!(close(a.min() as f64, b.min() as f64), "{a:?} {b:?}");
            assert!(close(a.max() as f64, b.max() as f64), "{a:?} {b:?}");
            assert!(close(a.avg(), b.avg()), "{a:?} {b:?}");
        }
        // Invalid stored forms are refused, not trusted.
        let mut bad = DistWire::from(d);
        if let Some(b) = &mut bad.bins {
            b.swap(0, 1);
        }
        assert!(Dist::try_from(bad).is_err());
        let empty = Dist::try_from(DistWire::from(Dist::default())).unwrap();
        assert_eq!(empty, Dist::default());
    }

    #[test]
    fn path_classes_follow_iterations() {
        let at = |pos, mpi_ns| SlowInstance {
            rank: 0,
            pos,
            mpi_ns,
        };
        let mut t = PathTiming::single(100, 8, at(0, 1));
        t.next_iteration(10, at(1, 1));
        t.next_iteration(11, at(2, 1));
        t.next_iteration(12, at(3, 1));
        t.settle();
        assert_eq!(t.first().count(), 1);
        assert_eq!(t.steady().count(), 2);
        assert_eq!(t.last().count(), 1);
        assert_eq!(t.last().compute().stats().max(), 12);
        assert_eq!(t.first().compute().stats().max(), 100);
        assert_eq!(t.total().count(), 4);
    }
}
