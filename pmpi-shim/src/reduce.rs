//! The inter-node merge at `MPI_Finalize`: a binomial reduction tree over
//! the ranks of `MPI_COMM_WORLD`.
//!
//! The tree is [`compress::merge::binomial_step`]'s, the one every merge
//! of per-rank traces uses: in round `k` (`step = 2^k`) every rank `r` with
//! `r mod 2·step = step` sends what it holds to `r - step` and leaves; a
//! rank with `r mod 2·step = 0` receives from `r + step` (if that rank
//! exists) and merges. After `ceil(log2 P)` rounds rank 0 holds the trace
//! of all ranks.
//! Each merge is of two disjoint rank sets, so the work per round is
//! parallel and the merged trace stays compressed throughout (Wu and Mueller 2012 §2).
//!
//! The protocol is independent of MPI: it runs over a [`Link`], which the
//! FFI layer implements with `PMPI_Send`/`PMPI_Irecv` and the unit tests
//! implement with channels. Every rank sends exactly one message, whatever
//! happened to its own trace (an empty one when it has none), so a rank
//! whose tracing failed can never make its parent wait forever.

use compress::merge::{BinomialStep, binomial_rounds, binomial_step};
use trace::TraceFile;

/// A point-to-point byte channel between the ranks of the reduction.
pub(crate) trait Link {
    /// Sends one message to rank `to`.
    fn send(&mut self, to: i32, bytes: &[u8]) -> Result<(), String>;
    /// Receives one message from rank `from`.
    fn recv(&mut self, from: i32) -> Result<Vec<u8>, String>;
}

/// What rank 0 holds at the end.
pub(crate) struct Reduced {
    /// The merged trace of every rank that had one.
    pub file: Option<TraceFile>,
    /// Ranks whose trace is missing (tracing failed there).
    pub missing: u64,
    /// Problems met on the way (unreadable subtrees).
    pub problems: Vec<String>,
}

/// Runs the reduction on rank `rank` of `size`. Returns the result on rank
/// 0 and `None` elsewhere.
pub(crate) fn reduce(
    rank: i32,
    size: i32,
    mine: Option<TraceFile>,
    link: &mut impl Link,
) -> Result<Option<Reduced>, String> {
    let mut acc = Reduced {
        missing: u64::from(mine.is_none()),
        file: mine,
        problems: Vec::new(),
    };
    let (me, n) = (
        u64::try_from(rank).unwrap_or(0),
        u64::try_from(size).unwrap_or(0),
    );
    let peer = |r: u64| i32::try_from(r).unwrap_or(i32::MAX);
    for step in binomial_rounds(n) {
        match binomial_step(me, n, step) {
            BinomialStep::SendTo(to) => {
                let payload = acc
                    .file
                    .as_ref()
                    .map(TraceFile::to_wire)
                    .transpose()
                    .unwrap_or_default()
                    .unwrap_or_default();
                let missing = acc.missing + u64::from(acc.file.is_some() && payload.is_empty());
                let mut msg = Vec::with_capacity(8 + payload.len());
                msg.extend_from_slice(&missing.to_le_bytes());
                msg.extend_from_slice(&payload);
                link.send(peer(to), &msg)?;
                return Ok(None);
            }
            BinomialStep::ReceiveFrom(from) => {
                let from = peer(from);
                let msg = link.recv(from)?;
                let Some((head, payload)) = msg.split_first_chunk::<8>() else {
                    return Err(format!("short merge message from rank {from}"));
                };
                acc.missing += u64::from_le_bytes(*head);
                if !payload.is_empty() {
                    match TraceFile::from_wire(payload) {
                        Ok(f) => {
                            acc.file = Some(match acc.file.take() {
                                Some(a) => compress::merge::files(a, f),
                                None => f,
                            });
                        }
                        Err(e) => acc.problems.push(format!(
                            "the traces of rank {from}'s subtree are unreadable ({e})"
                        )),
                    }
                }
            }
            BinomialStep::Idle => {}
        }
    }
    Ok((rank == 0).then_some(acc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use compress::{RankRecorder, Recording};
    use std::sync::mpsc::{Receiver, Sender, channel};
    use trace::{Event, Op};

    struct Chan {
        me: i32,
        tx: Vec<Sender<(i32, Vec<u8>)>>,
        rx: Receiver<(i32, Vec<u8>)>,
        early: Vec<(i32, Vec<u8>)>,
        rounds: u32,
    }

    impl Link for Chan {
        fn send(&mut self, to: i32, bytes: &[u8]) -> Result<(), String> {
            self.rounds += 1;
            self.tx[to as usize]
                .send((self.me, bytes.to_vec()))
                .map_err(|e| e.to_string())
        }
        fn recv(&mut self, from: i32) -> Result<Vec<u8>, String> {
            self.rounds += 1;
            loop {
                if let Some(i) = self.early.iter().position(|m| m.0 == from) {
                    return Ok(self.early.swap_remove(i).1);
                }
                let m = self.rx.recv().map_err(|e| e.to_string())?;
                self.early.push(m);
            }
        }
    }

    fn file(rank: i32) -> TraceFile {
        let what = Recording {
            timeline_epoch: Some(0),
            ..Recording::default()
        };
        let mut c = RankRecorder::new(rank as u32, &what);
        for i in 0..50 {
            let mut e = Event::new(if i % 2 == 0 {
                Op::Barrier
            } else {
                Op::Allreduce
            });
            e.site = 7 + (i % 2) as u64;
            c.push(&e).unwrap();
        }
        c.finish().unwrap()
    }

    #[test]
    fn every_rank_ends_in_rank_0_within_log2_rounds() {
        for size in [1, 2, 3, 5, 8, 13] {
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..size).map(|_| channel()).unzip();
            let handles: Vec<_> = rxs
                .into_iter()
                .enumerate()
                .map(|(r, rx)| {
                    let mut link = Chan {
                        me: r as i32,
                        tx: txs.clone(),
                        rx,
                        early: Vec::new(),
                        rounds: 0,
                    };
                    std::thread::spawn(move || {
                        // Rank 3 lost its trace: it must still take part.
                        let mine = (r != 3).then(|| file(r as i32));
                        let out = reduce(r as i32, size, mine, &mut link).unwrap();
                        (out, link.rounds)
                    })
                })
                .collect();
            let mut root = None;
            for (r, h) in handles.into_iter().enumerate() {
                let (out, rounds) = h.join().unwrap();
                let log2 = (size as f64).log2().ceil() as u32;
                assert!(rounds <= log2, "rank {r} of {size}: {rounds} rounds");
                if r == 0 {
                    root = out;
                } else {
                    assert!(out.is_none());
                }
            }
            let root = root.unwrap();
            let want_missing = u64::from(size > 3);
            assert_eq!(root.missing, want_missing, "size {size}");
            let f = root.file.unwrap();
            let t = f.trace;
            assert_eq!(t.ranks().len(), size as u64 - want_missing);
            // Timelines travel with their ranks, sorted by rank.
            let tl: Vec<u32> = f.timelines.iter().map(|t| t.rank).collect();
            assert_eq!(tl, t.ranks().iter().collect::<Vec<_>>());
            assert_eq!(t.total_events(), 50 * (size as u64 - want_missing));
        }
    }
}
