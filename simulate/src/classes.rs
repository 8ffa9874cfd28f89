//! Position classes: the ranks whose parts of a trace are the same.
//!
//! A merged trace says which ranks execute each node and which ranks share
//! each parameter variant (peers relative to the rank, so a stencil's
//! interior ranks share theirs). Two ranks that are in exactly the same
//! ranklists execute the same events with the same relative peers and the
//! same timing statistics: the same program, shifted. The simulator runs
//! one representative per class, so that an extrapolated trace of a
//! million ranks costs as many rank simulations as it has classes (9 for a
//! 2D mesh, 27 for a 3D one).

use trace::{MNode, MergedTrace, Param, RankList};

/// The classes of a trace's ranks.
pub(crate) struct Classes {
    /// The class of each rank, by world rank.
    pub of: Vec<u32>,
    /// Each class's representative (its lowest rank).
    pub reps: Vec<u32>,
    /// Each class's number of ranks.
    pub sizes: Vec<u64>,
}

/// A 64-bit mix (splitmix64's finaliser): membership of ranklist `k` is
/// folded into a rank's signature.
fn mix(h: u64, k: u64) -> u64 {
    let mut z = h ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Walk {
    /// Per rank, the lists of the structure it is in.
    sig: Vec<u64>,
    /// Per rank, the timing variants' groups it is in (empty until one is
    /// met).
    tsig: Vec<u64>,
    k: u64,
    p: u64,
}

impl Walk {
    fn list(&mut self, l: &RankList) {
        self.k += 1;
        Self::fold(&mut self.sig, self.k, self.p, l);
    }

    fn timing_list(&mut self, l: &RankList) {
        self.k += 1;
        if self.tsig.is_empty() {
            self.tsig = vec![0; self.sig.len()];
        }
        Self::fold(&mut self.tsig, self.k, self.p, l);
    }

    fn fold(sig: &mut [u64], k: u64, p: u64, l: &RankList) {
        // A list of every rank tells no rank apart.
        if l.len() >= p {
            return;
        }
        for r in l.iter() {
            if let Some(s) = sig.get_mut(r as usize) {
                *s = mix(*s, k);
            }
        }
    }

    fn param(&mut self, p: &Param) {
        for v in p.variants() {
            self.list(v.ranks());
        }
        for ph in p.phased() {
            self.list(ph.ranks());
            for q in ph.phases() {
                self.param(q);
            }
        }
    }

    fn nodes(&mut self, nodes: &[MNode]) {
        for n in nodes {
            self.list(n.ranks());
            match n {
                MNode::Event(e) => {
                    // Ranks that compute differently are told apart too.
                    for v in e.timing_variants() {
                        self.timing_list(v.ranks());
                    }
                    for p in e.params() {
                        self.param(p);
                    }
                    for l in e.lists() {
                        self.param(l.lens());
                        for c in l.columns() {
                            self.param(c);
                        }
                    }
                }
                MNode::Loop(l) => {
                    self.param(l.counts());
                    self.nodes(l.body());
                }
                // A node kind added later: its ranklist, walked above, at
                // least keeps its ranks apart.
                _ => {}
            }
        }
    }
}

/// The position classes of the `p` ranks of `trace`, ranks in different
/// groups of an event's timing variants told apart (they compute
/// differently); and, when the trace has timing variants, the classes of
/// its structure alone: the ranks that draw their computation from one
/// stream, so that a slow draw falls on all of them at once, each from its
/// own group's distribution, as a bulk-synchronous step's slow phase does.
pub(crate) fn classes(trace: &MergedTrace, p: u32) -> (Classes, Option<Classes>) {
    let mut w = Walk {
        sig: vec![0; p as usize],
        tsig: Vec::new(),
        k: 0,
        p: u64::from(p),
    };
    w.nodes(trace.nodes());
    if w.tsig.is_empty() {
        return (group(w.sig.iter().copied()), None);
    }
    let timed = group(w.sig.iter().zip(&w.tsig).map(|(&s, &t)| mix(s, t)));
    (timed, Some(group(w.sig.iter().copied())))
}

/// Ranks with equal signatures, as classes.
fn group(sigs: impl Iterator<Item = u64>) -> Classes {
    let mut index = rustc_hash::FxHashMap::default();
    let mut c = Classes {
        of: Vec::new(),
        reps: Vec::new(),
        sizes: Vec::new(),
    };
    for (r, s) in sigs.enumerate() {
        let id = *index.entry(s).or_insert_with(|| {
            c.reps.push(r as u32);
            c.sizes.push(0);
            c.reps.len() as u32 - 1
        });
        c.sizes[id as usize] += 1;
        c.of.push(id);
    }
    c
}

impl Classes {
    /// Splits classes until every member of a class also has neighbours of
    /// the same classes, `rounds` hops out at most, keeping the number of
    /// classes within `budget` (a round that would exceed it is not
    /// taken). `offsets[c]` are the peers of the members of initial class
    /// `c`, relative to the member (the same for all of them).
    ///
    /// Ranks of one class run the same program, but what they wait for
    /// depends on their neighbours: an interior rank next to a slow edge
    /// waits where one in the middle does not. A representative stands for
    /// its class only as far as its neighbourhood is its class's, so the
    /// classes are refined by the classes of the neighbours (as colour
    /// refinement does on a graph), which in a stencil separates the ranks
    /// one, two, three hops from each edge.
    pub(crate) fn refine(&mut self, offsets: &[Vec<i64>], rounds: usize, budget: usize) {
        let initial = self.of.clone();
        let p = self.of.len() as i64;
        for _ in 0..rounds {
            let mut index = rustc_hash::FxHashMap::default();
            let mut of = Vec::with_capacity(self.of.len());
            let mut reps = Vec::new();
            for r in 0..self.of.len() {
                let mut h = mix(0x5bd1_e995, u64::from(self.of[r]));
                for (i, off) in offsets[initial[r] as usize].iter().enumerate() {
                    let s = r as i64 + off;
                    let c = if (0..p).contains(&s) {
                        u64::from(self.of[s as usize])
                    } else {
                        u64::MAX
                    };
                    h = mix(h, (i as u64) << 32 ^ c);
                }
                let id = *index.entry(h).or_insert_with(|| {
                    reps.push(r as u32);
                    reps.len() as u32 - 1
                });
                of.push(id);
            }
            if reps.len() == self.reps.len() || reps.len() > budget {
                break;
            }
            let mut sizes = vec![0u64; reps.len()];
            for &c in &of {
                sizes[c as usize] += 1;
            }
            self.of = of;
            self.reps = reps;
            self.sizes = sizes;
        }
    }
}
