//! Collectives as the algorithms MPI libraries run them (MPICH's default
//! choices by message size and communicator size, after Thakur,
//! Rabenseifner and Gropp 2005), evaluated on LogGOPS costs.
//!
//! Each algorithm is a fixed schedule of messages between the members.
//! Given when each member entered the call, the schedule is evaluated
//! once, in dependency order, giving when each member leaves it: a member
//! that the schedule lets go early (a leaf of a reduction tree) leaves
//! early, and the root of a gather waits for the slowest subtree. Traffic
//! of other calls does not slow a collective down (no contention between
//! concurrent operations).

use trace::Op;

use crate::params::Params;

/// One member's part in a collective, by its rank in the communicator.
#[derive(Clone, Debug, Default)]
pub(crate) struct Member {
    /// When the member entered the call, ns.
    pub at: f64,
    /// The bytes of its block on the send side (`count · size`).
    pub send: f64,
    /// The bytes of its block on the receive side.
    pub recv: f64,
    /// Bytes per peer on the send side (v and w variants), by comm rank.
    pub sends: Vec<f64>,
    /// Bytes per peer on the receive side.
    pub recvs: Vec<f64>,
}

/// The bytes each member of a new window contributes: its base address,
/// size and displacement unit.
const WINDOW_RECORD: f64 = 24.0;

/// MPICH's thresholds (its CVAR defaults).
const BCAST_SHORT: f64 = 12288.0;
const BCAST_LONG: f64 = 524_288.0;
const BCAST_MIN_PROCS: usize = 8;
const ALLREDUCE_SHORT: f64 = 2048.0;
const REDUCE_SHORT: f64 = 2048.0;
const ALLGATHER_LONG: f64 = 524_288.0;
const ALLGATHER_SHORT: f64 = 81_920.0;
const ALLTOALL_SHORT: f64 = 256.0;
const ALLTOALL_MEDIUM: f64 = 32_768.0;
/// Communicator constructors agree on a context id (an allreduce of a
/// 128-byte mask in MPICH); `Comm_split` first gathers every member's
/// colour and key.
const CONTEXT_MASK: f64 = 128.0;
const SPLIT_PAIR: f64 = 8.0;

/// The per-member times of one schedule being evaluated.
struct Sched<'a> {
    net: &'a Params,
    t: Vec<f64>,
}

impl Sched<'_> {
    /// A message from `i` to `j` of `s` bytes, in dependency order: `j`
    /// takes it when it has arrived and `j` is free.
    fn send(&mut self, i: usize, j: usize, s: f64) {
        let arr = self.net.arrival(self.t[i], s);
        self.t[i] += self.net.cpu(s).max(self.net.nic(s));
        self.t[j] = self.t[j].max(arr) + self.net.cpu(s);
    }

    /// One round in which every member `i` sends `size(i)` bytes to
    /// `to(i)` and receives from `from(i)`, all at once (`None`: it sits
    /// the round out on that side).
    fn round(
        &mut self,
        to: impl Fn(usize) -> Option<usize>,
        from: impl Fn(usize) -> Option<usize>,
        size: impl Fn(usize) -> f64,
    ) {
        let old = self.t.clone();
        for i in 0..old.len() {
            let mut ti = old[i];
            if to(i).is_some() {
                let s = size(i);
                ti += self.net.cpu(s).max(self.net.nic(s));
            }
            if let Some(k) = from(i) {
                let s = size(k);
                ti = ti.max(self.net.arrival(old[k], s)) + self.net.cpu(s);
            }
            self.t[i] = ti;
        }
    }

    fn p(&self) -> usize {
        self.t.len()
    }

    /// Binomial tree from `root`, parent before children, each edge
    /// carrying `size(subtree ranks)` bytes (a broadcast or a scatter).
    fn tree_down(&mut self, root: usize, size: impl Fn(usize) -> f64) {
        let p = self.p();
        for vr in 0..p {
            let low = if vr == 0 {
                p.next_power_of_two()
            } else {
                vr & vr.wrapping_neg()
            };
            let mut mask = low >> 1;
            while mask > 0 {
                let c = vr + mask;
                if c < p {
                    let sub = mask.min(p - c);
                    self.send((vr + root) % p, (c + root) % p, size(sub));
                }
                mask >>= 1;
            }
        }
    }

    /// Binomial tree to `root`, children before parents (a reduction or
    /// a gather).
    fn tree_up(&mut self, root: usize, size: impl Fn(usize) -> f64) {
        let p = self.p();
        for vr in (1..p).rev() {
            let low = vr & vr.wrapping_neg();
            let sub = low.min(p - vr);
            self.send((vr + root) % p, (vr - low + root) % p, size(sub));
        }
    }

    /// Recursive doubling among all members, with MPICH's fold of the
    /// members beyond the largest power of two: the even ones below
    /// `2·rem` hand their data to their odd neighbour first and get the
    /// result back at the end. Round `k` moves `size(k)` bytes.
    fn doubling(&mut self, size: impl Fn(u32) -> f64, back: f64) {
        let p = self.p();
        let pof2 = if p.is_power_of_two() {
            p
        } else {
            p.next_power_of_two() / 2
        };
        let rem = p - pof2;
        let first = size(0);
        for i in (0..2 * rem).step_by(2) {
            self.send(i, i + 1, first);
        }
        // The members that take part, by their new rank.
        let part: Vec<usize> = (0..p).filter(|&i| i >= 2 * rem || i % 2 == 1).collect();
        let new_of = |i: usize| if i < 2 * rem { i / 2 } else { i - rem };
        let mut k = 0;
        let mut mask = 1;
        while mask < pof2 {
            let partner = |i: usize| -> Option<usize> {
                if i < 2 * rem && i.is_multiple_of(2) {
                    return None;
                }
                part.get(new_of(i) ^ mask).copied()
            };
            let s = size(k);
            self.round(partner, partner, |_| s);
            mask <<= 1;
            k += 1;
        }
        for i in (0..2 * rem).step_by(2) {
            self.send(i + 1, i, back);
        }
    }

    /// A ring: `p - 1` rounds, each member sending to the next and
    /// receiving from the previous; in round `k` member `i` passes the
    /// block that started at `i - k`.
    fn ring(&mut self, block: impl Fn(usize) -> f64) {
        let p = self.p();
        for k in 0..p.saturating_sub(1) {
            self.round(
                |i| Some((i + 1) % p),
                |i| Some((i + p - 1) % p),
                |i| block((i + p - k) % p),
            );
        }
    }

    /// Bruck's algorithm: `⌈log2 p⌉` rounds, in round `k` each member
    /// sending to `i - 2^k` and receiving from `i + 2^k`.
    fn bruck(&mut self, size: impl Fn(usize) -> f64) {
        let p = self.p();
        let mut d = 1;
        while d < p {
            let s = size(d);
            self.round(|i| Some((i + p - d) % p), |i| Some((i + d) % p), |_| s);
            d <<= 1;
        }
    }

    /// Every member sends to every other at once (`bytes(i, j)` from `i`
    /// to `j`, in the order `i+1, i+2, …`) and takes what it receives as
    /// it arrives.
    fn scattered(&mut self, bytes: impl Fn(usize, usize) -> f64) {
        let p = self.p();
        let old = self.t.clone();
        let mut last = old.clone();
        let mut arrive = vec![0.0f64; p];
        let mut take = vec![0.0f64; p];
        for i in 0..p {
            let mut ti = old[i];
            for k in 1..p {
                let j = (i + k) % p;
                let s = bytes(i, j);
                arrive[j] = arrive[j].max(self.net.arrival(ti, s));
                take[j] += self.net.cpu(s);
                ti += self.net.cpu(s).max(self.net.nic(s));
            }
            last[i] = ti;
        }
        for i in 0..p {
            self.t[i] = last[i].max(arrive[i]).max(old[i] + take[i]) + self.net.overhead;
        }
    }

    /// Pairwise exchange: `p - 1` rounds, in round `k` member `i` sending
    /// to `i + k` and receiving from `i - k`.
    fn pairwise(&mut self, bytes: impl Fn(usize, usize) -> f64) {
        let p = self.p();
        for k in 1..p {
            self.round(
                |i| Some((i + k) % p),
                |i| Some((i + p - k) % p),
                |i| bytes(i, (i + k) % p),
            );
        }
    }
}

/// When each member leaves collective `op` (rooted at `root`, a comm
/// rank), given when each entered it and what it moves.
pub(crate) fn complete(op: Op, root: usize, m: &[Member], net: &Params) -> Vec<f64> {
    let p = m.len();
    let mut s = Sched {
        net,
        t: m.iter().map(|x| x.at).collect(),
    };
    if p <= 1 {
        return s.t.iter().map(|t| t + net.overhead).collect();
    }
    let root = root.min(p - 1);
    let block = |f: fn(&Member) -> f64| m.iter().map(f).fold(0.0f64, f64::max);
    let at_root = |f: fn(&Member) -> f64| f(&m[root]);
    use Op::*;
    // Nonblocking and persistent forms move what their blocking form does.
    match op.blocking_form() {
        Barrier => s.bruck(|_| 0.0),
        Bcast => bcast(&mut s, root, at_root(|x| x.send)),
        Reduce => {
            let n = at_root(|x| x.send).max(block(|x| x.send));
            if n <= REDUCE_SHORT {
                s.tree_up(root, |_| n);
            } else {
                halving(&mut s, n);
                s.tree_up(root, |sub| n * sub as f64 / p as f64);
            }
        }
        Allreduce => allreduce(&mut s, block(|x| x.send)),
        Scan | Exscan => {
            let n = block(|x| x.send);
            let mut d = 1;
            while d < p {
                s.round(
                    |i| (i + d < p).then_some(i + d),
                    |i| i.checked_sub(d),
                    |_| n,
                );
                d <<= 1;
            }
        }
        Gather => {
            let n = block(|x| x.send).max(at_root(|x| x.recv));
            s.tree_up(root, |sub| n * sub as f64);
        }
        Scatter => {
            let n = at_root(|x| x.send).max(block(|x| x.recv));
            s.tree_down(root, |sub| n * sub as f64);
        }
        Gatherv => {
            // Linear: the root takes each member's block in rank order.
            for (i, x) in m.iter().enumerate() {
                if i != root {
                    let n = m[root].recvs.get(i).copied().unwrap_or(x.send);
                    s.send(i, root, n);
                }
            }
        }
        Scatterv => {
            for (i, x) in m.iter().enumerate() {
                if i != root {
                    let n = m[root].sends.get(i).copied().unwrap_or(x.recv);
                    s.send(root, i, n);
                }
            }
        }
        Allgather => allgather(&mut s, block(|x| x.send.max(x.recv))),
        Allgatherv => {
            let sizes: Vec<f64> = (0..p)
                .map(|i| {
                    m.iter()
                        .filter_map(|x| x.recvs.get(i))
                        .fold(0.0f64, |a, &b| a.max(b))
                })
                .collect();
            s.ring(|i| sizes[i]);
        }
        Alltoall => {
            let n = block(|x| x.send.max(x.recv));
            if n <= ALLTOALL_SHORT && p >= 8 {
                s.bruck(|_| n * (p / 2) as f64);
            } else if n <= ALLTOALL_MEDIUM {
                s.scattered(|_, _| n);
            } else {
                s.pairwise(|_, _| n);
            }
        }
        Alltoallv | Alltoallw => {
            s.scattered(|i, j| m[i].sends.get(j).copied().unwrap_or(0.0));
        }
        // Neighbourhood collectives: the instance knows its members by
        // communicator rank, not their topology, so each is modelled as
        // exchanges with the ranks before and after it, one round per
        // neighbour (two when the lists do not give the degree), each
        // member's largest block a round: a stencil's local dependencies,
        // not a global synchronisation.
        NeighborAllgather | NeighborAllgatherv | NeighborAlltoall | NeighborAlltoallv
        | NeighborAlltoallw => {
            let largest = |x: &Member| {
                x.sends
                    .iter()
                    .chain(&x.recvs)
                    .fold(x.send.max(x.recv), |a, &b| a.max(b))
            };
            let degree = m
                .iter()
                .map(|x| x.sends.len().max(x.recvs.len()))
                .max()
                .filter(|&d| d > 0)
                .unwrap_or(2);
            for k in 0..degree {
                let d = 1 + k / 2 % (p - 1);
                if k % 2 == 0 {
                    s.round(
                        |i| Some((i + d) % p),
                        |i| Some((i + p - d) % p),
                        |i| largest(&m[i]),
                    );
                } else {
                    s.round(
                        |i| Some((i + p - d) % p),
                        |i| Some((i + d) % p),
                        |i| largest(&m[i]),
                    );
                }
            }
        }
        ReduceScatter | IreduceScatter | ReduceScatterBlock | IreduceScatterBlock => {
            let total: f64 = if matches!(op, ReduceScatterBlock | IreduceScatterBlock) {
                block(|x| x.recv) * p as f64
            } else {
                m.iter()
                    .map(|x| x.recvs.iter().sum::<f64>())
                    .fold(0.0, f64::max)
            };
            if p.is_power_of_two() && total <= ALLGATHER_LONG {
                halving(&mut s, total);
            } else {
                s.pairwise(|_, _| total / p as f64);
            }
        }
        CommSplit | CommSplitType | CartSub => {
            allgather(&mut s, SPLIT_PAIR);
            allreduce(&mut s, CONTEXT_MASK);
        }
        // Every other constructor agrees on a context id; Comm_free is local.
        CommDup
        | CommDupWithInfo
        | CommIdup
        | CommIdupWithInfo
        | CommCreate
        | CommCreateGroup
        | CartCreate
        | GraphCreate
        | DistGraphCreate
        | DistGraphCreateAdjacent => allreduce(&mut s, CONTEXT_MASK),
        // A window: a context id, then every member's base, size and
        // displacement unit.
        WinCreate | WinAllocate | WinAllocateShared | WinCreateDynamic => {
            allreduce(&mut s, CONTEXT_MASK);
            allgather(&mut s, WINDOW_RECORD);
        }
        // The window's barrier (its operations arrived before it).
        WinFence | WinFree => s.bruck(|_| 0.0),
        // A file's collectives meet as a barrier; the engine adds the file
        // system's part (`engine::io`).
        op if op.is_file_collective() => s.bruck(|_| 0.0),
        _ => {}
    }
    s.t
}

fn bcast(s: &mut Sched, root: usize, n: f64) {
    let p = s.p();
    if n < BCAST_SHORT || p < BCAST_MIN_PROCS {
        s.tree_down(root, |_| n);
        return;
    }
    // Van de Geijn: scatter the message, then allgather its pieces.
    let piece = n / p as f64;
    s.tree_down(root, |sub| piece * sub as f64);
    if n < BCAST_LONG && p.is_power_of_two() {
        s.doubling(|r| piece * f64::from(1u32 << r.min(30)), 0.0);
    } else {
        s.ring(|_| piece);
    }
}

/// Recursive halving (the reduce-scatter half of Rabenseifner's
/// algorithm): round `k` exchanges `n / 2^(k+1)` bytes.
fn halving(s: &mut Sched, n: f64) {
    s.doubling(|k| n / f64::from(2u32 << k.min(30)), 0.0);
}

fn allreduce(s: &mut Sched, n: f64) {
    let p = s.p();
    let pof2 = if p.is_power_of_two() {
        p
    } else {
        p.next_power_of_two() / 2
    };
    if n <= ALLREDUCE_SHORT || (n as usize) < pof2 {
        s.doubling(|_| n, n);
    } else {
        // Rabenseifner: reduce-scatter by halving, allgather by doubling.
        halving(s, n);
        let rounds = pof2.trailing_zeros();
        s.doubling(|k| n / f64::from(1u32 << (rounds - k.min(rounds))), n);
    }
}

fn allgather(s: &mut Sched, n: f64) {
    let p = s.p();
    let total = n * p as f64;
    if p.is_power_of_two() && total < ALLGATHER_LONG {
        s.doubling(|k| n * f64::from(1u32 << k.min(30)), 0.0);
    } else if total < ALLGATHER_SHORT {
        s.bruck(|d| n * d.min(p - d) as f64);
    } else {
        s.ring(|_| n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> Params {
        Params {
            latency: 1000.0,
            overhead: 100.0,
            gap: 50.0,
            gap_per_byte: 1.0,
            overhead_per_byte: 0.0,
            eager_limit: 1 << 20,
        }
    }

    fn members(p: usize, bytes: f64) -> Vec<Member> {
        (0..p)
            .map(|_| Member {
                send: bytes,
                recv: bytes,
                ..Member::default()
            })
            .collect()
    }

    /// Hand-computed: a binomial broadcast of 8 bytes over 4 ranks, all
    /// entering at 0. One hop costs o + (s-1)·G + L = 100 + 7 + 1000, the
    /// receiver adds o; the root's second send leaves max(o, g + 7·G) =
    /// 100 after its first.
    #[test]
    fn binomial_broadcast_by_hand() {
        let t = complete(Op::Bcast, 0, &members(4, 8.0), &net());
        let hop = 100.0 + 7.0 + 1000.0;
        // Root: two sends (to 2, then to 1).
        assert_eq!(t[0], 200.0);
        // Rank 2 receives at hop + o, then sends to 3.
        assert_eq!(t[2], hop + 100.0 + 100.0);
        assert_eq!(t[3], (hop + 100.0) + hop + 100.0);
        // Rank 1: the root's second send left at 100.
        assert_eq!(t[1], 100.0 + hop + 100.0);
    }

    /// A barrier lets no one out before the last member entered, and with
    /// 2^k members takes at most k rounds of latency after it.
    #[test]
    fn a_barrier_waits_for_the_last_member() {
        let mut m = members(8, 0.0);
        m[5].at = 50_000.0;
        let t = complete(Op::Barrier, 0, &m, &net());
        let round = 100.0 + 1000.0 + 100.0;
        for (i, &x) in t.iter().enumerate() {
            // The others hear of the last member's entry by a message at
            // the earliest; it leaves after its own three rounds' overheads.
            let least = if i == 5 {
                50_000.0 + 3.0 * 200.0
            } else {
                50_000.0 + round
            };
            assert!(x >= least, "{i}: {t:?}");
            assert!(x <= 50_000.0 + 3.0 * round + 1.0, "{t:?}");
        }
    }

    /// Reductions and allreduces of any size and member count finish after
    /// every member entered, and an allreduce of a large vector costs about
    /// twice its wire time (Rabenseifner), not log2(p) times.
    #[test]
    fn allreduce_costs_follow_the_algorithm() {
        for p in [2, 3, 5, 8, 12, 16] {
            for n in [8.0, 4096.0, 1.0e6] {
                let t = complete(Op::Allreduce, 0, &members(p, n), &net());
                assert!(t.iter().all(|&x| x > 0.0), "{p} {n} {t:?}");
            }
        }
        let t = complete(Op::Allreduce, 0, &members(16, 1.0e6), &net());
        let max = t.iter().cloned().fold(0.0, f64::max);
        assert!(max > 1.0e6 && max < 2.5e6, "{max}");
    }
}
