//! Replay of rankscale traces on a real MPI machine (seed 001 §2,
//! ScalaReplay).
//!
//! The `replay` binary (`mpirun -n P replay FILE`) walks each rank's part of
//! the compressed trace lazily and issues the same MPI calls with random
//! payloads, sleeping the recorded computation in between. This library
//! holds the parts that need no MPI, so that they are tested as pure code:
//! drawing computation times from the trace's timing statistics, and the
//! causal gates that force the outcomes of racy calls ([`gates`]).

#![warn(missing_docs)]

use compress::{EventTiming, PathClass, TimeStats};

pub mod gates;

/// Replay's generator: reproducible draws per rank from one seed
/// ([`compress::SplitMix64::for_rank`]), not cryptographic ones.
pub type Rng = compress::SplitMix64;

/// Draws one value from a histogram's distribution: a bin with probability
/// proportional to its count, then a value in `[min, max]` of the bin whose
/// expectation is the bin's average (`min + (max - min) · U^k` with
/// `k = (max - min) / (avg - min) - 1`), so that the per-bin frequencies,
/// minima, maxima and means of the trace are honoured.
pub fn draw(stats: &compress::Dist, rng: &mut Rng) -> u64 {
    let bins = stats.histogram().bins();
    let total: u64 = bins.iter().map(|b| b.count()).sum();
    if total == 0 {
        return 0;
    }
    let mut pick = (rng.unit() * total as f64) as u64;
    let bin = bins
        .iter()
        .find(|b| {
            if pick < b.count() {
                true
            } else {
                pick -= b.count();
                false
            }
        })
        .unwrap_or(&bins[bins.len() - 1]);
    let (lo, hi, avg) = (bin.min() as f64, bin.max() as f64, bin.avg());
    if hi <= lo || avg <= lo {
        return bin.min();
    }
    let k = ((hi - lo) / (avg - lo) - 1.0).max(0.0);
    (lo + (hi - lo) * rng.unit().powf(k)).round() as u64
}

/// The computation time to emulate before an event: the recorded value
/// for an exact event, else a draw from the statistics of its path class
/// (falling back to all executions when the class is empty).
pub fn compute_ns(timing: Option<EventTiming<'_>>, rng: &mut Rng) -> u64 {
    match timing {
        None => 0,
        Some(EventTiming::Exact { compute_ns, .. }) => compute_ns,
        Some(EventTiming::Stats(pt, class)) => {
            let ts: &TimeStats = match class {
                PathClass::First => pt.first(),
                PathClass::Steady => pt.steady(),
                PathClass::Last => pt.last(),
            };
            if ts.count() > 0 {
                draw(ts.compute(), rng)
            } else {
                draw(pt.total().compute(), rng)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_honour_bin_frequencies_bounds_and_means() {
        let mut d = compress::Dist::default();
        // Two clusters: 3/4 of the samples near 1000 ns, 1/4 near 100 us.
        for i in 0..3000u64 {
            d.add(900 + i % 200);
        }
        for i in 0..1000u64 {
            d.add(90_000 + (i * 37) % 20_000);
        }
        let mut rng = Rng::for_rank(42, 0);
        let n = 200_000;
        let xs: Vec<u64> = (0..n).map(|_| draw(&d, &mut rng)).collect();
        let small = xs.iter().filter(|&&x| x < 10_000).count() as f64 / n as f64;
        assert!((small - 0.75).abs() < 0.01, "{small}");
        assert!(xs.iter().all(|&x| (900..=109_999).contains(&x)));
        let mean = xs.iter().sum::<u64>() as f64 / n as f64;
        let want = d.stats().mean();
        assert!((mean - want).abs() < 0.01 * want, "{mean} vs {want}");
        // Reproducible for a seed.
        let mut a = Rng::for_rank(7, 3);
        let mut b = Rng::for_rank(7, 3);
        assert!((0..100).all(|_| draw(&d, &mut a) == draw(&d, &mut b)));
    }
}
