//! One small seedable generator for every crate that draws: replay's
//! compute times, the analysis's k-means seeding, tests' random inputs.
//!
//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014): a Weyl sequence through the splitmix64
//! finaliser. The draws need to be reproducible from one `u64` and well
//! mixed, not cryptographic.

use crate::codec::mix64;

/// The Weyl increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// A generator for `seed` on `rank`: every rank of a replay draws its
    /// own stream from one user-given seed.
    pub fn for_rank(seed: u64, rank: u32) -> SplitMix64 {
        SplitMix64(seed ^ (u64::from(rank) + 1).wrapping_mul(GAMMA))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix64(self.0)
    }

    /// A uniform draw from `[0, 1)` (53 random bits).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform draw from `0..n`; `n` must be positive.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs of SplitMix64 seeded with 0, as in the
        // reference implementation (Vigna's splitmix64.c).
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(g.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(g.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn draws_stay_in_range_and_ranks_differ() {
        let mut g = SplitMix64::for_rank(7, 3);
        for _ in 0..1000 {
            let u = g.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(g.below(5) < 5);
        }
        let a = SplitMix64::for_rank(7, 0).next_u64();
        let b = SplitMix64::for_rank(7, 1).next_u64();
        assert_ne!(a, b);
    }
}
