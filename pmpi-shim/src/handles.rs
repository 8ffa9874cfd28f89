//! The hash maps the shim keys by MPI handles, ids and code addresses.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map keyed by MPI handles, small ids and code addresses, hashed
/// by [`HandleHasher`]. Every intercepted call looks up its communicator,
/// its requests and its call site in one, and SipHash (the standard map's
/// hasher) showed as the shim's costliest own function in a profile of the
/// traced stencil.
pub(crate) type HandleMap<K, V> = HashMap<K, V, BuildHasherDefault<HandleHasher>>;

/// A fast hasher for MPI handles (`int`s on MPICH, pointers on Open MPI)
/// and ids: each word is folded in with a multiply, and `finish` mixes the
/// state (the splitmix64 finaliser), so that aligned pointers and MPICH's
/// patterned handles spread over the table's buckets and control bytes.
/// The keys come from the MPI library, not from an adversary, so there is
/// no need for SipHash's resistance to chosen collisions.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(23) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Open MPI's handles are 16-byte aligned pointers and MPICH's are
    /// patterned ints; both must spread over a table's buckets (low bits)
    /// and over hashbrown's control bytes (top 7 bits), or every lookup
    /// probes a long chain.
    #[test]
    fn handle_hashes_spread_over_buckets_and_control_bytes() {
        let b = BuildHasherDefault::<HandleHasher>::default();
        for keys in [
            (0..1024usize)
                .map(|i| 0x5555_0000_1000 + 16 * i)
                .collect::<Vec<_>>(),
            (0..1024usize).map(|i| 0xac00_0000 + i).collect(),
        ] {
            let hashes: Vec<u64> = keys.iter().map(|k| b.hash_one(k)).collect();
            let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
            let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
            // 1024 random draws from 1024 buckets fill about 647 of them.
            assert!(low.len() > 560, "{} buckets", low.len());
            assert_eq!(top.len(), 128, "control bytes");
        }
    }
}
