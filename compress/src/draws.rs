//! The computation that replay, the simulator and codegen's benchmarks
//! emulate before each call of a compressed trace, drawn from the call's
//! timing statistics.
//!
//! A compressed trace keeps one distribution per event and path class, not
//! the computation of each execution. How the executions draw from it
//! decides more than the mean:
//!
//! * **Ranks at one step.** Drawn independently on every rank, two ranks
//!   that meet at every exchange wait for the larger of two draws. Where an
//!   event's computation depends on where the program is, that is the
//!   larger of two random *phases*: NPB MG calls the same exchange at every
//!   multigrid level, with 20 µs to 3 ms of computation before it, and
//!   independent draws predicted MG W at 2 ranks 34 to 50 % long (its
//!   timeline, which keeps the order, 6 % short). Ranks that compute alike
//!   at each step are the common case of SPMD codes.
//! * **The sum over a run.** `n` independent draws spread their sum by
//!   `σ√n`; where a few long computations in a wide bin carry most of a
//!   rank's time (MG again: 45 draws of rank 0 carried 60 of its 70 ms),
//!   the seed alone moved replay's time from 0.121 to 0.200 s.
//!
//! So the `k`-th execution of an event in a path class picks its
//! histogram bin at quantile `frac(s + k·φ)`, the golden-ratio Kronecker
//! sequence from a start `s` that the seed, the event's structure and the
//! path class fix; `k` counts that event's executions on the rank. Every
//! rank at the same execution picks the same bin, and any `n` consecutive
//! executions cover the bins in proportion to their counts (the sequence's
//! discrepancy is `O(log n / n)`), so the bins' shares of the sum hold for
//! every seed. Where a rank executes the event at most 64 times per round
//! of the recorded count, each point moves into its own stratum of the
//! round: a few points of the sequence can crowd (`quantile`).
//!
//! The place *within* the bin is stratified too, over the rank's own
//! executions in that bin, so that a bin's share of the run's time holds
//! whatever the seed. Its offset is each rank's own in a bin of one log2
//! class (a factor of two): variation within a factor of two is noise that
//! differs between ranks, and own places keep the waits it causes. A
//! histogram that coarsens to bins of several classes ([`MAX_BINS`]) holds
//! phases in one bin as well (MG's levels), and there the ranks at one step
//! share the place, each moved by its own offset by up to one class's share
//! of the bin. What is lost is variation by more than a factor of two that
//! differs between ranks at the same step and is not persistent (ranks
//! that compute differently throughout keep their own distributions:
//! timing variants).
//!
//! One exception keeps single accidents: a bin that holds, with the bins of
//! the neighbouring values, fewer samples than the ranks whose executions
//! the histogram holds cannot be a step every rank went through, so it is
//! one rank's, and its samples are *dealt*: the `k`-th execution of the
//! rank at place `slot` among the histogram's `share` ranks is place
//! `k·share + slot` of a permutation of the histogram's samples that the
//! seed chooses, and the places below the count of such samples take them.
//! Every run then has each accident exactly once, on one rank at one step.
//! Taken at the shared quantile instead, one rank's single 60 ms delay
//! among four ranks' 640 executions would strike every rank at once in a
//! quarter of the runs; drawn on each rank with its frequency, a run would
//! have it none to four times. The neighbours count because a step every
//! rank went through once can straddle a bin boundary (8.1 and 8.5 ms on
//! two ranks are two bins of one sample): without them NPB MG W at 2 ranks
//! is predicted +10 to +19 % instead of −7 to +7 %.
//!
//! What remains is the seed's own spread: over 6 traces × 8 seeds of NPB
//! MG W at 2 ranks the prediction is −14 to +15 % per seed, −1.3 % as the
//! mean (standard deviation 6.9); with independent places in each bin and
//! unstratified quantiles it was −13 to +22 %, +2.3 % (standard deviation
//! 9.4; docs/SIMULATE.md, docs/BENCHMARKS.md).

use trace::PathClass;
use trace::codec::{Shape, mix64};
use trace::seq::gcd;
use trace::timing::{Dist, MAX_BINS, PathTiming};
use trace::tree::{EventTiming, Expand};

/// 2^64 / φ: the Weyl step of the golden-ratio sequence in 64 bits (the same
/// constant as SplitMix64's increment).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// One rank's (or one replay thread's) computation draws; see the module
/// documentation for why bins are common to the ranks and places in them
/// are not.
#[derive(Clone, Debug)]
pub struct ComputeDraws {
    seed: u64,
    /// The rank whose places within the bins these draws take.
    rank: u32,
    /// Per leaf id and path class, the executions drawn so far and, after
    /// it, how many of them each bin of the class's histogram took.
    next: Vec<[Steps; 3]>,
}

impl ComputeDraws {
    /// The draws of `rank` for `seed`: every rank of one run takes the same
    /// seed, and `rank` only chooses the places within the bins (its
    /// offset within each bin; see the module documentation).
    pub fn new(seed: u64, rank: u32) -> ComputeDraws {
        ComputeDraws {
            seed,
            rank,
            next: Vec::new(),
        }
    }

    /// The computation before the event `ex` returned last: the recorded
    /// value for an exact event, else a value of its path class's
    /// distribution (all executions' when the class has none) in the bin
    /// of the class's next quantile; 0 for an event without timing.
    pub fn compute(&mut self, ex: &Expand<'_>) -> u64 {
        match (ex.timing(), ex.leaf_key()) {
            (Some(EventTiming::Exact { compute_ns, .. }), _) => compute_ns,
            (Some(EventTiming::Stats(pt, class)), Some(key)) => {
                let id = key.id as usize;
                if self.next.len() <= id {
                    self.next.resize(id + 1, [[0; 1 + MAX_BINS]; 3]);
                }
                let steps = &mut self.next[id][class as usize];
                let s = start(self.seed, key.hash, class);
                let rank = self.rank;
                class_dist(pt, class, |d| draw(d, s, rank, key.share, key.slot, steps))
            }
            _ => 0,
        }
    }
}

/// The next execution of `rank`, at place `slot` among the `share` ranks
/// whose executions `d` holds, of the event and path class whose quantiles
/// start at `s`, with its draws so far in `steps`.
fn draw(d: &Dist, s: u64, rank: u32, share: u64, slot: u64, steps: &mut Steps) -> u64 {
    let step = steps[0];
    steps[0] += 1;
    let place = step.checked_mul(share).and_then(|p| p.checked_add(slot));
    let bins = d.histogram().bins();
    let total = bins.iter().map(|b| b.count()).sum();
    let u = quantile(s, step, per_rank(total, share));
    let width = d.histogram().width();
    d.value_shared(
        u,
        share,
        |total| dealt(s, place?, total),
        |bin| {
            let j = steps.get_mut(1 + bin).map_or(step, |j| {
                *j += 1;
                *j - 1
            });
            let m = bins.get(bin).map_or(1, |b| per_rank(b.count(), share));
            within_place(s, rank, j, m, width)
        },
    )
}

/// Where the quantiles of an event's path class start, for `seed`: codegen
/// writes it into its benchmark, whose runtime steps it as
/// [`ComputeDraws`] does.
pub fn quantile_start(seed: u64, shape: &Shape, class: PathClass) -> u64 {
    start(seed, shape.hash64(), class)
}

fn start(seed: u64, hash: u64, class: PathClass) -> u64 {
    mix64(seed ^ hash ^ (class as u64).wrapping_mul(GOLDEN))
}

/// The executions per rank of a distribution of `total` samples that
/// `share` ranks' executions make up, rounded, at least 1.
fn per_rank(total: u64, share: u64) -> u64 {
    let share = share.max(1);
    ((total + share / 2) / share).max(1)
}

/// The `k`-th quantile from `start` of a rank that executes the event `m`
/// times in a round, as the ranks share it.
///
/// The golden-ratio sequence `frac(start / 2^64 + k·φ)` covers `[0, 1)`
/// evenly in every prefix, but `m` of its points do not cover `m` equal
/// strata once each: at 2 executions per rank the two can fall in one half
/// in a quarter of the seeds, and a histogram of 2 ms and 20 µs halves then
/// gives the run both long computations or neither. For `m` up to
/// [`STRATIFY`] the point is therefore moved into its stratum: the `i`-th
/// smallest of the round's `m` points takes `(i + o) / m`, at one offset
/// `o` of the round, so any round takes every stratum once (each bin gets
/// its count's share to one execution, whatever the seed) and its prefixes
/// keep the sequence's order. Beyond [`STRATIFY`] executions the sequence's
/// discrepancy, `O(log m / m)`, is below a stratum's width anyway.
fn quantile(start: u64, k: u64, m: u64) -> f64 {
    let point = |j: u64| start.wrapping_add(j.wrapping_mul(GOLDEN));
    let unit = |x: u64| (x >> 11) as f64 / (1u64 << 53) as f64;
    if m > STRATIFY || m <= 1 {
        return unit(point(k));
    }
    let round = k - k % m;
    let x = point(k);
    let below = (round..round + m).filter(|&j| point(j) < x).count();
    let offset = unit(point(round) ^ STRATA);
    (below as f64 + offset) / m as f64
}

/// Up to how many executions per rank a round's quantiles are stratified.
const STRATIFY: u64 = 64;

/// The place within its bin of `rank`'s `j`-th execution in that bin,
/// for the event and path class whose quantiles start at `start`, in a
/// histogram whose bins span `width` log2 classes.
///
/// The places of one rank's `m` executions in a bin (its share of the
/// bin's count) are stratified as the bins are ([`quantile`]), from a start
/// `o`, so that they spread over it evenly and the bin's share of the
/// run's time holds whatever the seed: independent places spread the sum (NPB MG W's
/// histograms coarsen to a bin from 0.57 to 7.1 ms, mean 2.8 ms, and rank
/// 0's 16 executions in it summed to 35 to 63 ms over eight seeds).
///
/// Within a factor of two (a bin of one log2 class) a place is noise that
/// differs between ranks: each rank has its own offset `o`. A coarsened bin
/// of `width` classes holds phases as well (MG's levels, 0.6 and 3 ms):
/// there the ranks at one step share the place, which puts them in one
/// class, and each rank's own offset moves it by up to `1 / width` either
/// way, one class's share of the bin. Own places across a wide bin made two
/// ranks that compute alike wait for each other by milliseconds at every
/// exchange (MG W at 2 ranks: +7 % on average over 6 traces × 8 seeds, up
/// to +28.5 % for one seed); moves of half these, −4.7 %; these, −1.3 %.
fn within_place(start: u64, rank: u32, j: u64, m: u64, width: u32) -> f64 {
    let own = quantile(
        mix64(start ^ OWN ^ u64::from(rank).wrapping_add(1).wrapping_mul(GOLDEN)),
        j,
        m,
    );
    if width <= 1 {
        return own;
    }
    let shared = quantile(mix64(start ^ OWN), j, m);
    let v = shared + 2.0 * (own - 0.5) / f64::from(width);
    // Reflected at the bin's ends, which keeps the places uniform.
    if v < 0.0 {
        -v
    } else if v >= 1.0 {
        (2.0 - v).min(1.0 - f64::EPSILON)
    } else {
        v
    }
}

/// A rank's draws of one event in one path class: the executions so far,
/// then each histogram bin's.
type Steps = [u64; 1 + MAX_BINS];

/// What sets a rank's place offset apart from the quantiles' start.
const OWN: u64 = 0xbf58_476d_1ce4_e5b9;

/// What sets a round's stratum offset apart from its points.
const STRATA: u64 = 0x94d0_49bb_1331_11eb;

/// Place `p` of `0..total` in the permutation `(a·p + b) mod total` that
/// `key` chooses (`a` prime to `total`).
fn permute(key: u64, p: u64, total: u64) -> u64 {
    let b = mix64(key) % total;
    let mut a = (key % total).max(1);
    while gcd(a, total) != 1 {
        a = a % (total - 1) + 1;
    }
    ((u128::from(a) * u128::from(p) + u128::from(b)) % u128::from(total)) as u64
}

/// The place of execution `p` among `total` in the deal of the event and
/// path class whose quantiles start at `start`: `(a·p + b) mod total` with
/// `a` prime to `total`, a permutation of `0..total` that the seed chooses,
/// so that each of the `total` places is one execution's when the ranks
/// number their executions `p = k·share + slot` (`k`-th execution of the
/// rank at place `slot` among the `share` ranks of the timing). `None` past
/// the end: a rank that executes more often than the histogram's ranks on
/// average takes no accident in its extra executions. Codegen's runtime
/// deals alike (`rs_dealt`).
fn dealt(start: u64, p: u64, total: u64) -> Option<u64> {
    if p >= total {
        return None;
    }
    Some(permute(mix64(start ^ DEAL), p, total))
}

/// What sets the deal's key apart from the quantiles' start.
const DEAL: u64 = 0xd1b5_4a32_d192_ed03;

/// `f` of the computation distribution of `class` in `pt`, or of all
/// executions' when the class has none.
fn class_dist<R>(pt: &PathTiming, class: PathClass, f: impl FnOnce(&Dist) -> R) -> R {
    let ts = match class {
        PathClass::First => pt.first(),
        PathClass::Steady => pt.steady(),
        PathClass::Last => pt.last(),
    };
    if ts.count() > 0 {
        f(ts.compute())
    } else {
        f(pt.total().compute())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::rng::SplitMix64;

    /// A distribution of `n` samples at each of `levels`, a factor of ten
    /// apart, each level spread by ±10 %.
    fn levels(levels: &[u64], n: u64) -> Dist {
        let mut d = Dist::default();
        for &l in levels {
            for i in 0..n {
                d.add(l - l / 10 + (l / 5) * i / n.max(2));
            }
        }
        d
    }

    fn bin_of(x: u64) -> u32 {
        64 - x.leading_zeros()
    }

    /// The next execution of the rank at place `slot` among `share`, as
    /// [`ComputeDraws::compute`] draws it from the quantiles at `s`, with
    /// the rank's draws so far in `steps`.
    fn draw_at(d: &Dist, s: u64, share: u64, slot: u64, steps: &mut Steps) -> u64 {
        draw(d, s, slot as u32, share, slot, steps)
    }

    const NONE: Steps = [0; 1 + MAX_BINS];

    #[test]
    fn ranks_at_one_step_share_the_bin_and_not_the_place_in_it() {
        let d = levels(&[1_000, 10_000, 100_000], 50);
        let s = start(7, 0xabcd, PathClass::Steady);
        let mut differ = 0;
        let (mut a, mut b) = (NONE, NONE);
        for k in 0..300 {
            let (x, y) = (draw_at(&d, s, 2, 0, &mut a), draw_at(&d, s, 2, 1, &mut b));
            assert_eq!(bin_of(x), bin_of(y), "step {k}: {x} and {y}");
            differ += usize::from(x != y);
        }
        assert!(differ > 250, "only {differ} of 300 places differ");
    }

    #[test]
    fn the_sum_over_a_run_holds_for_every_seed_where_independent_draws_spread() {
        // Three levels of equal counts: the mean is 37,000.
        let d = levels(&[1_000, 10_000, 100_000], 50);
        let mean = d.stats().mean();
        let n = 90u64;
        let (mut worst_q, mut worst_i) = (0f64, 0f64);
        for seed in 0..200u64 {
            let s = start(seed, 0x1234, PathClass::Steady);
            let mut steps = NONE;
            let q: u64 = (0..n).map(|_| draw_at(&d, s, 1, 0, &mut steps)).sum();
            let mut rng = SplitMix64::for_rank(seed, 0);
            let i: u64 = (0..n).map(|_| d.draw(&mut rng)).sum();
            let err = |sum: u64| (sum as f64 / (n as f64 * mean) - 1.0).abs();
            worst_q = worst_q.max(err(q));
            worst_i = worst_i.max(err(i));
        }
        // The sequence's discrepancy: 90 draws land within a draw or two of
        // each level's 30, so the sum is within a few per cent; independent
        // draws miss by a third for some seeds.
        assert!(worst_q < 0.06, "quantile draws: worst {worst_q:.3}");
        assert!(worst_i > 0.2, "independent draws: worst {worst_i:.3}");
    }

    /// Four ranks' 160 executions with one 60 ms sample among 20 µs ones
    /// (one rank once late, as `latestencil -m sender`): the sample is one
    /// rank's, and dealt to one rank and step, so every run has it exactly
    /// once, on a rank and at a step the seed chooses. Drawn on each rank
    /// with its frequency, a run would have it a Poisson number
    /// of times, none at all in about e^-1 = 37 % of the runs; taken at the
    /// quantile the ranks share, every rank would take it at once, in a
    /// quarter of them.
    #[test]
    fn a_bin_with_fewer_samples_than_ranks_is_dealt_to_one_rank_and_step() {
        let mut d = Dist::default();
        for i in 0..639u64 {
            d.add(20_000 + i % 7);
        }
        d.add(60_000_000);
        let mut by_rank = [0u32; 4];
        let mut steps = std::collections::BTreeSet::new();
        for seed in 0..400u64 {
            let s = start(seed, 0x99, PathClass::Steady);
            let mut hits = Vec::new();
            for r in 0..4u64 {
                let mut steps = NONE;
                for k in 0..160 {
                    if draw_at(&d, s, 4, r, &mut steps) > 1_000_000 {
                        hits.push((r, k));
                    }
                }
            }
            assert_eq!(hits.len(), 1, "seed {seed}: the 60 ms sample at {hits:?}");
            by_rank[hits[0].0 as usize] += 1;
            steps.insert(hits[0].1);
        }
        // Each rank about a quarter of the runs, at many steps.
        assert!(
            by_rank.iter().all(|&n| (60..140).contains(&n)),
            "{by_rank:?}"
        );
        assert!(steps.len() > 100, "{} distinct steps", steps.len());
        // One sample per rank: a step every rank goes through, taken at the
        // shared quantile by all at once, in a quarter of the runs.
        let shared = (0..400u64)
            .filter(|&seed| {
                let s = start(seed, 0x99, PathClass::Steady);
                let mut steps = NONE;
                (0..160).any(|_| draw_at(&d, s, 1, 0, &mut steps) > 1_000_000)
            })
            .count();
        assert!((60..160).contains(&shared), "{shared} of 400 runs");
    }

    /// Three ranks' 50 executions with five accidents of two sizes: every
    /// run deals each of them once, whatever the seed.
    #[test]
    fn every_accident_is_dealt_once() {
        let mut d = Dist::default();
        for i in 0..145u64 {
            d.add(5_000 + i % 11);
        }
        for x in [
            2_000_000,
            40_000_000,
            41_000_000,
            900_000_000,
            8_000_000_000,
        ] {
            d.add(x);
        }
        for seed in 0..200u64 {
            let s = start(seed, 0x42, PathClass::First);
            let mut got: Vec<u64> = (0..3u64)
                .flat_map(|r| {
                    let mut steps = NONE;
                    (0..50)
                        .map(|_| draw_at(&d, s, 3, r, &mut steps))
                        .collect::<Vec<_>>()
                })
                .filter(|&x| x > 1_000_000)
                .map(bin_of_u64)
                .collect();
            got.sort_unstable();
            // Bins by bit length, none next to another: 21, 26 twice, 30, 33.
            assert_eq!(got, [21, 26, 26, 30, 33], "seed {seed}");
        }
    }

    fn bin_of_u64(x: u64) -> u64 {
        u64::from(bin_of(x))
    }

    #[test]
    fn the_deal_is_a_permutation() {
        for total in [1u64, 2, 3, 12, 97, 640, 1024, 3 * 5 * 7 * 11] {
            for seed in 0..20 {
                let mut seen = vec![false; total as usize];
                for p in 0..total {
                    let t = dealt(mix64(seed), p, total).unwrap();
                    assert!(!seen[t as usize], "total {total}: place {t} twice");
                    seen[t as usize] = true;
                }
                assert_eq!(dealt(mix64(seed), total, total), None);
            }
        }
    }

    /// Two ranks' one execution each at 8.1 and 8.5 ms, either side of the
    /// 2^23 ns bin boundary, among 20 µs ones: two bins of one sample, but
    /// one neighbourhood of two, a step both ranks went through, so both
    /// take it at the same step.
    #[test]
    fn a_step_that_straddles_a_bin_boundary_stays_common() {
        let mut d = Dist::default();
        for i in 0..38u64 {
            d.add(20_000 + i);
        }
        d.add(8_100_000);
        d.add(8_500_000);
        assert_eq!(d.histogram().bins().len(), 3);
        let s = start(5, 0x77, PathClass::Steady);
        let mut long = 0;
        let (mut a, mut b) = (NONE, NONE);
        for k in 0..400 {
            let (x, y) = (draw_at(&d, s, 2, 0, &mut a), draw_at(&d, s, 2, 1, &mut b));
            assert_eq!(x > 1_000_000, y > 1_000_000, "step {k}: {x} and {y}");
            long += usize::from(x > 1_000_000);
        }
        assert!((15..25).contains(&long), "{long} long steps of 400");
    }

    #[test]
    fn classes_and_events_start_apart() {
        let a = start(1, 10, PathClass::First);
        assert_ne!(a, start(1, 10, PathClass::Steady));
        assert_ne!(a, start(1, 11, PathClass::First));
        assert_ne!(a, start(2, 10, PathClass::First));
        assert!((0..1000).all(|k| (0.0..1.0).contains(&quantile(a, k, 7))));
    }
}
