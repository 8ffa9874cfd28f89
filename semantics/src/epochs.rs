//! One-sided epochs (issue 36): the rules MPI puts on a window's
//! synchronisation, checked on one rank's events at a time, and the two
//! tables that tie ranks together (PSCW pairing and target bounds), checked
//! when every rank has been walked.
//!
//! Per rank and window ([`RankEpochs`]):
//! - a communication call (`Put`, `Get`, the accumulates, ...) lies in an
//!   access epoch on its target: a fence epoch (opened by a `Win_fence`
//!   without `MPI_MODE_NOSUCCEED`), a `Win_start` epoch whose group holds
//!   the target, a `Win_lock` of the target or a `Win_lock_all`;
//! - `Win_complete` follows a `Win_start`, `Win_wait` (or a `Win_test`
//!   that returned true) a `Win_post`, `Win_unlock` a `Win_lock` of the
//!   same target, `Win_unlock_all` a `Win_lock_all`; a flush lies in a
//!   passive-target epoch; no epoch of a kind opens while one of the same
//!   kind is open, and a fence does not come inside a PSCW or lock epoch;
//! - nothing is left open at `Win_free` or at the rank's end.
//!
//! Ranks are the window's own (its group's), as the calls name them: they
//! need no translation to world ranks, which the trace does not pin down
//! for every communicator (a `Comm_split`'s groups).
//!
//! Across ranks ([`Pairing`], [`Bounds`]), by window instance (the same on
//! every member; instances that may stand for several groups, such as a
//! `Comm_split_type`'s, are not compared across ranks):
//! - every `Win_start` epoch of an origin that names a target meets a
//!   `Win_post` epoch of that target that names the origin, as many times;
//! - every target displacement lies inside the target's window: its
//!   displacement times the target's displacement unit, plus the bytes
//!   the target datatype holds, is at most the memory the target exposed.
//!   (The bytes of a derived target datatype are its size; its extent,
//!   which the trace does not keep, may reach further: the check finds the
//!   accesses that surely overflow.) Dynamic windows record no
//!   displacement and are not bounded.

use std::collections::HashMap;

use trace::{Event, Op, Peer, Rma};

use crate::comms::Comms;

/// A broken epoch rule on one rank, at one event.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Broken {
    /// A communication call outside every access epoch on its target.
    Outside {
        /// The target (rank in the window).
        target: i64,
    },
    /// A synchronisation call out of place.
    Sync {
        /// Why.
        why: &'static str,
    },
    /// An epoch still open at `Win_free` or at the rank's end.
    LeftOpen {
        /// What is open ("a lock on rank 3", ...).
        what: String,
    },
}

/// One window's epochs on this rank.
#[derive(Debug, Default)]
struct Win {
    /// The window's instance (the same on every member).
    inst: u64,
    /// A fence epoch is open.
    fence: bool,
    /// Whether the instance may stand for several groups (then nothing is
    /// compared across ranks).
    ambiguous: bool,
    /// The targets of the open `Win_start` epoch (ranks in the window).
    start: Option<Vec<i64>>,
    /// The origins of the open `Win_post` epoch (ranks in the window).
    post: Option<Vec<i64>>,
    /// The targets this rank holds a `Win_lock` on (ranks in the window).
    locks: Vec<i64>,
    /// A `Win_lock_all` is open.
    lock_all: bool,
    /// Made by `Win_create_dynamic`.
    dynamic: bool,
}

impl Win {
    /// What is still open, for `Win_free` and the rank's end (a fence
    /// epoch may stay open: the last fence need not say `NOSUCCEED`).
    fn open(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.start.is_some() {
            out.push("an access epoch of Win_start without its Win_complete".to_string());
        }
        if self.post.is_some() {
            out.push("an exposure epoch of Win_post without its Win_wait".to_string());
        }
        for t in &self.locks {
            out.push(format!(
                "a Win_lock of window rank {t} without its Win_unlock"
            ));
        }
        if self.lock_all {
            out.push("a Win_lock_all without its Win_unlock_all".to_string());
        }
        out
    }
}

/// The access-epoch rules of one rank's windows.
#[derive(Debug, Default)]
pub(crate) struct RankEpochs {
    wins: HashMap<u32, Win>,
}

/// PSCW pairing across ranks: per (window instance, origin, target), the
/// `Win_start` epochs of the origin that name the target, less the
/// `Win_post` epochs of the target that name the origin.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    balance: HashMap<(u64, i64, i64), i64>,
}

/// One access at a target: displacement and bytes, and where it was made.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    /// The target displacement, in the target's displacement units.
    pub disp: i64,
    /// The bytes the target datatype holds.
    pub bytes: i64,
    /// The origin (world rank).
    pub origin: u32,
    /// The event index on the origin.
    pub event: u64,
    /// The call.
    pub op: Op,
}

/// Target bounds across ranks: the memory each member exposed, and per
/// target the accesses that reach furthest (those no other access
/// dominates in both displacement and bytes, so that the table stays small
/// whatever the units turn out to be).
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    exposed: HashMap<(u64, i64), (i64, i64)>,
    reach: HashMap<(u64, i64), Vec<Access>>,
}

/// An access beyond its target's window.
#[derive(Clone, Debug)]
pub(crate) struct Overflow {
    /// The access.
    pub at: Access,
    /// The target (rank in the window).
    pub target: i64,
    /// The byte the access ends at.
    pub end: i64,
    /// The bytes the target exposed.
    pub size: i64,
}

impl Bounds {
    /// Notes the memory `rank` exposes in window instance `inst`.
    pub fn expose(&mut self, inst: u64, rank: i64, size: i64, disp_unit: i64) {
        self.exposed.insert((inst, rank), (size, disp_unit));
    }

    /// Notes an access of window instance `inst` at `target`.
    pub fn access(&mut self, inst: u64, target: i64, a: Access) {
        let v = self.reach.entry((inst, target)).or_default();
        // A negative displacement is out of any window: the first one is
        // kept apart from the ones that reach furthest.
        if a.disp < 0 {
            if !v.iter().any(|b| b.disp < 0) {
                v.push(a);
            }
            return;
        }
        if v.iter().any(|b| b.disp >= a.disp && b.bytes >= a.bytes) {
            return;
        }
        v.retain(|b| b.disp < 0 || !(a.disp >= b.disp && a.bytes >= b.bytes));
        v.push(a);
    }

    /// The accesses beyond their targets' windows (targets whose window
    /// was not seen are not judged).
    pub fn overflows(&self) -> Vec<Overflow> {
        let mut out = Vec::new();
        for (&(inst, target), v) in &self.reach {
            let Some(&(size, unit)) = self.exposed.get(&(inst, target)) else {
                continue;
            };
            for a in v {
                let end = a.disp.saturating_mul(unit).saturating_add(a.bytes);
                if a.disp < 0 || end > size {
                    out.push(Overflow {
                        at: *a,
                        target,
                        end,
                        size,
                    });
                }
            }
        }
        out.sort_by_key(|o| (o.at.origin, o.at.event));
        out
    }
}

impl Pairing {
    /// The pairs whose epochs do not meet: (window instance, origin,
    /// target, starts less posts), sorted.
    pub fn unpaired(&self) -> Vec<(u64, i64, i64, i64)> {
        let mut v: Vec<_> = self
            .balance
            .iter()
            .filter(|(_, n)| **n != 0)
            .map(|(&(w, o, t), &n)| (w, o, t, n))
            .collect();
        v.sort_unstable_by_key(|&(w, o, t, _)| (o, t, w));
        v
    }
}

impl RankEpochs {
    /// Follows one detailed one-sided event of rank `me` (world rank), at
    /// index `i`, after `comms` has followed it (so that a new window is
    /// known). Problems go to `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn event(
        &mut self,
        me: u32,
        i: u64,
        e: &Event,
        comms: &Comms,
        pairing: &mut Pairing,
        bounds: &mut Bounds,
        out: &mut Vec<Broken>,
    ) {
        let Some(rma) = e.rma.as_deref() else {
            return;
        };
        // This rank's rank in the window (a constructor's caller has the
        // same rank in the window as in its communicator).
        let mine = i64::from(e.comm_rank);
        if e.op.makes_window() {
            let Some(new) = e.create.as_ref().and_then(|c| c.new) else {
                return;
            };
            let view = comms.view(new.0);
            if let Rma::Window { size, disp_unit } = *rma
                && e.op != Op::WinCreateDynamic
                && !view.ambiguous
            {
                bounds.expose(view.inst, mine, size, i64::from(disp_unit));
            }
            self.wins.insert(
                new.0,
                Win {
                    inst: view.inst,
                    ambiguous: view.ambiguous,
                    dynamic: e.op == Op::WinCreateDynamic,
                    ..Win::default()
                },
            );
            return;
        }
        let id = e.comm.0;
        let view = comms.view(id);
        let w = self.wins.entry(id).or_insert_with(|| Win {
            inst: view.inst,
            ambiguous: true,
            ..Win::default()
        });
        let across = !w.ambiguous;
        let mut sync = |why: &'static str| out.push(Broken::Sync { why });
        let local = |p: &Peer| match p {
            Peer::Rank { local, .. } if *local >= 0 => Some(i64::from(*local)),
            _ => None,
        };
        let group = |g: &[i32]| g.iter().map(|&l| i64::from(l)).collect::<Vec<i64>>();
        match (e.op, rma) {
            (
                _,
                Rma::Target {
                    disp, count, dsize, ..
                },
            ) => {
                let target = [e.send, e.recv]
                    .into_iter()
                    .flatten()
                    .find_map(|t| local(&t.peer));
                let Some(target) = target else {
                    return; // MPI_PROC_NULL, or a rank the trace does not give
                };
                let open = w.fence
                    || w.lock_all
                    || w.locks.contains(&target)
                    || w.start.as_ref().is_some_and(|g| g.contains(&target));
                if !open {
                    out.push(Broken::Outside { target });
                }
                if !w.dynamic && across {
                    let a = Access {
                        disp: *disp,
                        bytes: count.saturating_mul(*dsize),
                        origin: me,
                        event: i,
                        op: e.op,
                    };
                    bounds.access(w.inst, target, a);
                }
            }
            (Op::WinFence, Rma::Sync { assert, .. }) => {
                if w.start.is_some() || w.post.is_some() || w.lock_all || !w.locks.is_empty() {
                    sync("Win_fence inside a Win_start, Win_post or lock epoch");
                }
                w.fence = assert & Rma::MODE_NOSUCCEED == 0;
            }
            (Op::WinStart, Rma::Sync { group: g, .. }) => {
                if w.start.is_some() {
                    sync("Win_start while an access epoch of Win_start is open");
                }
                let g = group(g);
                if across {
                    for &t in &g {
                        *pairing.balance.entry((w.inst, mine, t)).or_default() += 1;
                    }
                }
                w.start = Some(g);
                w.fence = false;
            }
            // The guards close the epoch they find open (`take`).
            (Op::WinComplete, _) if w.start.take().is_none() => {
                sync("Win_complete without a Win_start");
            }
            (Op::WinPost, Rma::Sync { group: g, .. }) => {
                if w.post.is_some() {
                    sync("Win_post while an exposure epoch of Win_post is open");
                }
                let g = group(g);
                if across {
                    for &o in &g {
                        *pairing.balance.entry((w.inst, o, mine)).or_default() -= 1;
                    }
                }
                w.post = Some(g);
                w.fence = false;
            }
            (Op::WinWait, _) if w.post.take().is_none() => {
                sync("Win_wait without a Win_post");
            }
            (Op::WinTest, _) => {
                if w.post.is_none() {
                    sync("Win_test without a Win_post");
                } else if e.flag == Some(true) {
                    w.post = None;
                }
            }
            (Op::WinLock, Rma::Lock { peer, .. }) => {
                if let Some(t) = local(peer) {
                    if w.lock_all || w.locks.contains(&t) {
                        sync("Win_lock of a target this rank holds a lock on already");
                    } else {
                        w.locks.push(t);
                    }
                }
            }
            (Op::WinUnlock, Rma::Lock { peer, .. }) => {
                if let Some(t) = local(peer) {
                    match w.locks.iter().position(|&x| x == t) {
                        Some(k) => {
                            w.locks.swap_remove(k);
                        }
                        None => sync("Win_unlock of a target this rank holds no Win_lock on"),
                    }
                }
            }
            (Op::WinFlush | Op::WinFlushLocal, Rma::Lock { peer, .. }) => {
                if let Some(t) = local(peer)
                    && !(w.lock_all || w.locks.contains(&t))
                {
                    sync("a flush of a target outside a passive-target epoch on it");
                }
            }
            (Op::WinLockAll, _) => {
                if w.lock_all || !w.locks.is_empty() {
                    sync("Win_lock_all while this rank holds a lock");
                }
                w.lock_all = true;
            }
            (Op::WinUnlockAll, _) => {
                if !w.lock_all {
                    sync("Win_unlock_all without a Win_lock_all");
                }
                w.lock_all = false;
            }
            (Op::WinFlushAll | Op::WinFlushLocalAll, _) if !w.lock_all && w.locks.is_empty() => {
                sync("a flush outside every passive-target epoch");
            }
            (Op::WinFree, _) => {
                let open = w.open();
                self.wins.remove(&id);
                out.extend(open.into_iter().map(|what| Broken::LeftOpen { what }));
            }
            _ => {}
        }
    }

    /// What the rank left open on windows it did not free.
    pub fn finish(&mut self) -> Vec<Broken> {
        let mut ids: Vec<u32> = self.wins.keys().copied().collect();
        ids.sort_unstable();
        ids.iter()
            .flat_map(|id| self.wins[id].open())
            .map(|what| Broken::LeftOpen { what })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_furthest_accesses_are_kept_and_judged_with_the_targets_unit() {
        let mut b = Bounds::default();
        b.expose(1, 0, 800, 8);
        let at = |disp, bytes, event| Access {
            disp,
            bytes,
            origin: 1,
            event,
            op: Op::Put,
        };
        b.access(1, 0, at(10, 64, 0)); // ends at 144
        b.access(1, 0, at(5, 32, 1)); // dominated
        b.access(1, 0, at(99, 8, 2)); // ends at 800: fits
        assert_eq!(b.reach[&(1, 0)].len(), 2);
        assert!(b.overflows().is_empty());
        b.access(1, 0, at(99, 16, 3)); // ends at 808
        let o = b.overflows();
        assert_eq!(o.len(), 1);
        assert_eq!((o[0].end, o[0].size, o[0].at.event), (808, 800, 3));
        b.access(1, 0, at(-1, 8, 4));
        assert_eq!(b.overflows().len(), 2);
    }
}
