//! The bytes Score-P writes into a collective's `MpiCollectiveEnd`, both
//! ways: from a call's arguments (the export writes what Score-P would, so
//! that Vampir and Scalasca show rankscale's archives as they show
//! Score-P's), and back to the arguments (the import of an archive Score-P
//! wrote, whose records give only these totals).
//!
//! Score-P records the bytes that leave and reach the calling rank over all
//! its partners, itself included (Score-P's `scorep_mpi_coll_bytes_*`, the
//! rules behind its MPI adapter since 1.0; the published pattern traces
//! follow them too): an `Allreduce` of `b` bytes on `n` ranks is `n·b`
//! sent and `n·b` received; a `Bcast` root sends `n·b` and receives `b`,
//! every other rank receives `b`; a `Scan` on rank `k` sends `(n−k)·b` and
//! receives `(k+1)·b`; an `Allgatherv` sends `n` times its own share and
//! receives the sum of all shares. An in-place call leaves out the rank's
//! own block.
//!
//! Back from the totals, a call's own bytes follow from its record and its
//! communicator's size alone, except the per-rank counts of `Allgatherv`,
//! `Gatherv`, `Scatterv` and `Reduce_scatter`, which come from the other
//! members' records of the same call ([`V_OPS`]), and the per-peer counts
//! of `Alltoallv`/`Alltoallw`, which no record gives (the import keeps
//! their totals). Where both readings fit, the call is read as not in
//! place; an in-place `Gatherv`/`Scatterv` root reads as a root that
//! contributes no bytes of its own (the bytes moved are the same).

use trace::{Event, Op, Transfer};

/// The collectives whose per-rank counts come from the other members'
/// records of the same call.
pub(crate) const V_OPS: [Op; 4] = [Op::Allgatherv, Op::Gatherv, Op::Scatterv, Op::ReduceScatter];

/// Bytes of a transfer.
pub(crate) fn bytes(x: Option<Transfer>) -> u64 {
    x.map_or(0, |t| {
        (t.count.max(0) as u64).saturating_mul(t.dsize.max(0) as u64)
    })
}

/// The datatype size of a transfer (1 without one).
fn dsize(x: Option<Transfer>) -> u64 {
    x.map_or(1, |t| t.dsize.max(0) as u64)
}

/// Sum of per-rank counts times their datatype sizes (`sizes` empty: all
/// `d`).
fn weighted(counts: &[i64], sizes: &[i32], d: u64) -> u64 {
    counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let d = sizes.get(i).map_or(d, |&s| s.max(0) as u64);
            (c.max(0) as u64).saturating_mul(d)
        })
        .sum()
}

/// Entry `me` of per-rank counts times its datatype size.
fn own(counts: &[i64], sizes: &[i32], d: u64, me: i32) -> u64 {
    let Ok(i) = usize::try_from(me) else {
        return 0;
    };
    let d = sizes.get(i).map_or(d, |&s| s.max(0) as u64);
    counts
        .get(i)
        .map_or(0, |&c| (c.max(0) as u64).saturating_mul(d))
}

/// The bytes of all per-rank counts of one datatype size `d`, and of
/// entry `me`.
fn split(counts: &[i64], d: u64, me: i32) -> (u64, u64) {
    (weighted(counts, &[], d), own(counts, &[], d, me))
}

/// The `(sent, received)` bytes Score-P records for the blocking
/// collective `ev` on a communicator of `n` ranks, the caller being rank
/// `ev.comm_rank` of it; `(0, 0)` for a call that is not one.
pub(crate) fn transferred(ev: &Event, n: u64) -> (u64, u64) {
    let n = n.max(1);
    let me = ev.comm_rank;
    let k = u64::try_from(me).unwrap_or(0).min(n - 1);
    let root = ev.root.is_some() && ev.root == Some(me);
    let (s, r, ip) = (bytes(ev.send), bytes(ev.recv), ev.in_place);
    let m = |x: u64, f: u64| x.saturating_mul(f);
    match ev.op {
        Op::Bcast if root => (m(s, n), s),
        Op::Bcast => (0, s),
        Op::Reduce if root && ip => (0, m(s, n - 1)),
        Op::Reduce if root => (s, m(s, n)),
        Op::Gather if root && ip => (0, m(r, n - 1)),
        Op::Gather if root => (r, m(r, n)),
        Op::Gatherv if root => {
            let d = dsize(ev.recv);
            let (all, mine) = split(&ev.recv_counts, d, me);
            if ip { (0, all - mine) } else { (mine, all) }
        }
        Op::Scatterv if root => {
            let d = dsize(ev.send);
            let (all, mine) = split(&ev.send_counts, d, me);
            if ip { (all - mine, 0) } else { (all, mine) }
        }
        Op::Reduce | Op::Gather | Op::Gatherv => (s, 0),
        Op::Scatter if root && ip => (m(s, n - 1), 0),
        Op::Scatter if root => (m(s, n), s),
        Op::Scatter | Op::Scatterv => (0, r),
        Op::Allgather | Op::Alltoall if ip => (m(r, n - 1), m(r, n - 1)),
        Op::Allgather | Op::Alltoall => (m(s, n), m(r, n)),
        Op::Allreduce if ip => (m(s, n - 1), m(s, n - 1)),
        Op::Allreduce => (m(s, n), m(s, n)),
        Op::ReduceScatterBlock if ip => (m(r, n - 1), m(r, n - 1)),
        Op::ReduceScatterBlock => (m(r, n), m(r, n)),
        Op::Allgatherv => {
            let d = dsize(ev.recv);
            let (all, mine) = split(&ev.recv_counts, d, me);
            if ip {
                (m(mine, n - 1), all - mine)
            } else {
                (m(s, n), all)
            }
        }
        Op::Alltoallv | Op::Alltoallw => {
            let (rd, sd) = (dsize(ev.recv), dsize(ev.send));
            let all = weighted(&ev.recv_counts, &ev.recv_dsizes, rd);
            if ip {
                let x = all - own(&ev.recv_counts, &ev.recv_dsizes, rd, me);
                (x, x)
            } else {
                (weighted(&ev.send_counts, &ev.send_dsizes, sd), all)
            }
        }
        Op::ReduceScatter => {
            let d = dsize(ev.recv);
            let (all, mine) = split(&ev.recv_counts, d, me);
            if ip {
                (all - mine, m(mine, n - 1))
            } else {
                (all, m(mine, n))
            }
        }
        Op::Scan if ip => (m(s, n - k - 1), m(s, k)),
        Op::Scan => (m(s, n - k), m(s, k + 1)),
        Op::Exscan => (m(s, n - k - 1), m(s, k)),
        _ => (0, 0),
    }
}

/// A collective's arguments in bytes (datatype size 1), as the tracer
/// records them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Args {
    /// The send buffer's count.
    pub send: Option<i64>,
    /// The receive buffer's count (per rank for `Gather`/`Allgather`/
    /// `Alltoall`/`Scatter`, 0 where the per-rank counts say it).
    pub recv: Option<i64>,
    /// Whether the call is read as in place.
    pub in_place: bool,
    /// Per-rank send counts (`Scatterv` at its root).
    pub send_counts: Vec<i64>,
    /// Per-rank receive counts (`Allgatherv`, `Gatherv` at its root,
    /// `Reduce_scatter`).
    pub recv_counts: Vec<i64>,
}

/// `x / by` when it divides exactly.
fn div(x: u64, by: u64) -> Option<u64> {
    (by > 0 && x.is_multiple_of(by)).then(|| x / by)
}

fn count(x: u64) -> Option<i64> {
    i64::try_from(x).ok()
}

fn counts(v: &[u64]) -> Option<Vec<i64>> {
    v.iter().map(|&c| i64::try_from(c).ok()).collect()
}

/// A call's arguments from its record: `sent` and `recvd` bytes on a
/// communicator of `n` ranks, the caller rank `me` of it, its root (rooted
/// collectives), and for [`V_OPS`] every member's `(sent, received)` of
/// the same call by rank. `None` where the record does not fit Score-P's
/// rules (the caller keeps the totals as they are).
pub(crate) fn arguments(
    op: Op,
    n: u64,
    me: i32,
    root: Option<i32>,
    (sent, recvd): (u64, u64),
    members: &[(u64, u64)],
) -> Option<Args> {
    let n = n.max(1);
    let k = u64::try_from(me).ok()?.min(n - 1);
    let is_root = root == Some(me);
    let args = |send: Option<u64>, recv: Option<u64>, in_place: bool| {
        Some(Args {
            send: send.and_then(count),
            recv: recv.and_then(count),
            in_place,
            ..Args::default()
        })
    };
    let fits = |ok: bool| ok.then_some(());
    // The non-in-place reading first, then the in-place one.
    let block = |total: u64| div(total, n);
    match op {
        Op::Barrier => {
            fits(sent == 0 && recvd == 0)?;
            args(None, None, false)
        }
        Op::Bcast if is_root => {
            fits(sent == recvd.saturating_mul(n))?;
            args(Some(recvd), None, false)
        }
        Op::Bcast => {
            fits(sent == 0)?;
            args(Some(recvd), None, false)
        }
        Op::Reduce | Op::Gather if is_root => {
            let recv = op == Op::Gather;
            if sent == 0 && recvd > 0 {
                let b = div(recvd, n - 1)?;
                args(Some(b).filter(|_| !recv), recv.then_some(b), true)
            } else {
                fits(recvd == sent.saturating_mul(n))?;
                args(Some(sent), recv.then_some(sent), false)
            }
        }
        Op::Reduce | Op::Gather => {
            fits(recvd == 0)?;
            args(Some(sent), None, false)
        }
        Op::Scatter if is_root => {
            if recvd == 0 && sent > 0 {
                args(Some(div(sent, n - 1)?), None, true)
            } else {
                fits(sent == recvd.saturating_mul(n))?;
                args(Some(recvd), Some(recvd), false)
            }
        }
        Op::Scatter => {
            fits(sent == 0)?;
            args(None, Some(recvd), false)
        }
        Op::Allgather | Op::Alltoall => match (block(sent), block(recvd)) {
            (Some(s), Some(r)) => args(Some(s), Some(r), false),
            _ => {
                fits(sent == recvd)?;
                args(None, Some(div(recvd, n - 1)?), true)
            }
        },
        Op::Allreduce | Op::ReduceScatterBlock => {
            fits(sent == recvd)?;
            let (b, ip) = match block(sent) {
                Some(b) => (b, false),
                None => (div(sent, n - 1)?, true),
            };
            if op == Op::Allreduce {
                args(Some(b), None, ip)
            } else {
                args(None, Some(b), ip)
            }
        }
        Op::Scan | Op::Exscan => {
            // Scan: (n-k)·b sent and (k+1)·b received; in place, and
            // always for Exscan, one block less of each.
            let whole = op == Op::Scan;
            let read = |less: u64| {
                let (ks, kr) = ((n - k).checked_sub(less)?, (k + 1).checked_sub(less)?);
                let b = div(recvd, kr).or_else(|| div(sent, ks))?;
                (sent == b.saturating_mul(ks) && recvd == b.saturating_mul(kr)).then_some(b)
            };
            match read(u64::from(!whole)) {
                Some(b) => args(Some(b), None, false),
                None if whole => args(Some(read(1)?), None, true),
                None => None,
            }
        }
        Op::Allgatherv | Op::Gatherv | Op::Scatterv | Op::ReduceScatter => {
            v_arguments(op, n, me, is_root, (sent, recvd), members)
        }
        _ => None,
    }
}

/// [`arguments`] of the [`V_OPS`], from every member's record of the call.
fn v_arguments(
    op: Op,
    n: u64,
    me: i32,
    is_root: bool,
    (sent, recvd): (u64, u64),
    members: &[(u64, u64)],
) -> Option<Args> {
    let me = usize::try_from(me).ok()?;
    if members.len() as u64 != n || members.get(me) != Some(&(sent, recvd)) {
        return None;
    }
    let fits = |ok: bool| ok.then_some(());
    match op {
        Op::Allgatherv => {
            // Each member sent n times its share (n−1 times in place).
            let shares: Vec<u64> = members
                .iter()
                .map(|&(s, _)| div(s, n).or_else(|| div(s, n - 1)))
                .collect::<Option<_>>()?;
            let all: u64 = shares.iter().sum();
            let ip = all != recvd;
            fits(!ip || all - shares[me] == recvd)?;
            Some(Args {
                send: (!ip).then(|| count(shares[me])).flatten(),
                recv: Some(0),
                in_place: ip,
                recv_counts: counts(&shares)?,
                ..Args::default()
            })
        }
        Op::Gatherv | Op::Scatterv if !is_root => {
            if op == Op::Gatherv {
                fits(recvd == 0)?;
                Some(Args {
                    send: count(sent),
                    ..Args::default()
                })
            } else {
                fits(sent == 0)?;
                Some(Args {
                    recv: count(recvd),
                    ..Args::default()
                })
            }
        }
        Op::Gatherv | Op::Scatterv => {
            // The root's count of each other member is what that member
            // sent (Gatherv) or received (Scatterv); its own is its own
            // other side, none when in place.
            let gather = op == Op::Gatherv;
            let side = |&(s, r): &(u64, u64)| if gather { s } else { r };
            let (total, mine) = if gather { (recvd, sent) } else { (sent, recvd) };
            let mut shares: Vec<u64> = members.iter().map(side).collect();
            shares[me] = mine;
            fits(shares.iter().sum::<u64>() == total)?;
            let per_rank = counts(&shares)?;
            let own = count(mine);
            Some(if gather {
                Args {
                    send: own,
                    recv: Some(0),
                    recv_counts: per_rank,
                    ..Args::default()
                }
            } else {
                Args {
                    send: Some(0),
                    recv: own,
                    send_counts: per_rank,
                    ..Args::default()
                }
            })
        }
        Op::ReduceScatter => {
            // Each member received n times its block; the send side is
            // the sum of the blocks.
            let shares: Vec<u64> = members
                .iter()
                .map(|&(_, r)| div(r, n))
                .collect::<Option<_>>()?;
            fits(shares.iter().sum::<u64>() == sent)?;
            Some(Args {
                recv: Some(0),
                recv_counts: counts(&shares)?,
                ..Args::default()
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coll(op: Op, me: i32, root: Option<i32>) -> Event {
        let mut ev = Event::new(op);
        ev.comm_rank = me;
        ev.root = root;
        ev
    }

    fn x(count: i64, dsize: i64) -> Option<Transfer> {
        Some(Transfer::collective(count, dsize))
    }

    /// Values worked out by hand from Score-P's rules, and the totals the
    /// published files hold (amg64: an Allreduce of one double on 64 ranks
    /// is `s 512 r 512`; smg128's OTF2 archive: an Allgatherv of 7 ints
    /// from each of 128 ranks is 3584 sent and 3584 received).
    #[test]
    fn totals_are_score_p_s() {
        let mut ev = coll(Op::Allreduce, 5, None);
        ev.send = x(1, 8);
        assert_eq!(transferred(&ev, 64), (512, 512));
        let mut ev = coll(Op::Allgatherv, 3, None);
        ev.send = x(7, 4);
        ev.recv = x(0, 4);
        ev.recv_counts = vec![7; 128];
        assert_eq!(transferred(&ev, 128), (3584, 3584));
        // A Bcast of 10 doubles from rank 2 of 4.
        let mut ev = coll(Op::Bcast, 2, Some(2));
        ev.send = x(10, 8);
        assert_eq!(transferred(&ev, 4), (320, 80));
        ev.comm_rank = 0;
        assert_eq!(transferred(&ev, 4), (0, 80));
        // Scan of 3 ints on rank 1 of 4: to ranks 1..3, from ranks 0..1.
        let mut ev = coll(Op::Scan, 1, None);
        ev.send = x(3, 4);
        assert_eq!(transferred(&ev, 4), (36, 24));
        ev.op = Op::Exscan;
        assert_eq!(transferred(&ev, 4), (24, 12));
        // An in-place Gatherv root 0 of 3 with counts 1, 2, 3 of 8 bytes.
        let mut ev = coll(Op::Gatherv, 0, Some(0));
        ev.recv = x(0, 8);
        ev.recv_counts = vec![1, 2, 3];
        ev.in_place = true;
        assert_eq!(transferred(&ev, 3), (0, 40));
    }

    /// What the import reads back is the call: every collective of a
    /// 4-rank communicator, each rank's record turned back with the other
    /// members' records at hand.
    #[test]
    fn arguments_invert_the_totals() {
        let n = 4u64;
        let calls: Vec<Box<dyn Fn(i32) -> Event>> = vec![
            Box::new(|me| {
                let mut ev = coll(Op::Bcast, me, Some(1));
                ev.send = x(24, 1);
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Reduce, me, Some(3));
                ev.send = x(16, 1);
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Gather, me, Some(0));
                ev.send = x(12, 1);
                if me == 0 {
                    ev.recv = x(12, 1);
                }
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Scatter, me, Some(2));
                ev.recv = x(5, 1);
                if me == 2 {
                    ev.send = x(5, 1);
                }
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Allgather, me, None);
                (ev.send, ev.recv) = (x(6, 1), x(6, 1));
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Allreduce, me, None);
                ev.send = x(8, 1);
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Scan, me, None);
                ev.send = x(8, 1);
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Exscan, me, None);
                ev.send = x(8, 1);
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Allgatherv, me, None);
                (ev.send, ev.recv) = (x(i64::from(me) + 1, 1), x(0, 1));
                ev.recv_counts = vec![1, 2, 3, 4];
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Gatherv, me, Some(1));
                ev.send = x(i64::from(me) * 2, 1);
                if me == 1 {
                    ev.recv = x(0, 1);
                    ev.recv_counts = vec![0, 2, 4, 6];
                }
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Scatterv, me, Some(3));
                ev.recv = x(i64::from(me) + 3, 1);
                if me == 3 {
                    ev.send = x(0, 1);
                    ev.send_counts = vec![3, 4, 5, 6];
                }
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::ReduceScatter, me, None);
                ev.recv = x(0, 1);
                ev.recv_counts = vec![2, 0, 1, 5];
                ev
            }),
            Box::new(|me| {
                let mut ev = coll(Op::Allreduce, me, None);
                ev.send = x(3, 1);
                ev.in_place = true;
                ev
            }),
        ];
        for call in &calls {
            let evs: Vec<Event> = (0..4).map(call).collect();
            let totals: Vec<(u64, u64)> = evs.iter().map(|e| transferred(e, n)).collect();
            for ev in &evs {
                let got = arguments(
                    ev.op,
                    n,
                    ev.comm_rank,
                    ev.root,
                    totals[ev.comm_rank as usize],
                    &totals,
                );
                let want = Args {
                    send: ev.send.map(|t| t.count),
                    recv: ev.recv.map(|t| t.count),
                    in_place: ev.in_place,
                    send_counts: ev.send_counts.clone(),
                    recv_counts: ev.recv_counts.clone(),
                };
                assert_eq!(got, Some(want), "{ev:?} from {totals:?}");
            }
        }
    }

    /// Totals that no call gives are not read as one.
    #[test]
    fn totals_that_do_not_fit_are_left_alone() {
        // An Allreduce that sent and received different amounts.
        assert_eq!(arguments(Op::Allreduce, 4, 0, None, (32, 16), &[]), None);
        // A Bcast non-root that sent.
        assert_eq!(arguments(Op::Bcast, 4, 0, Some(1), (8, 8), &[]), None);
        // An Allgatherv without the other members' records.
        assert_eq!(arguments(Op::Allgatherv, 4, 0, None, (16, 16), &[]), None);
        // Alltoallv's per-peer counts are in no record.
        assert_eq!(
            arguments(Op::Alltoallv, 2, 0, None, (8, 8), &[(8, 8); 2]),
            None
        );
    }
}
