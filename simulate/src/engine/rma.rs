//! One-sided calls in the simulation (issue 36). What the model does, and
//! what it approximates (the prediction says so when a trace has them):
//!
//! - a put or accumulate is a message that needs no receive: the origin
//!   pays the CPU overhead and the NIC time of its bytes, and the data
//!   arrives at the target a latency later; a get is a request there and
//!   its bytes back; the fetching atomics carry bytes both ways;
//! - the operations of an epoch complete at its closing synchronisation:
//!   `Win_fence` is the window's barrier, entered once the rank's own
//!   operations have arrived; `Win_complete`, `Win_unlock`, the flushes
//!   wait for them too;
//! - PSCW: `Win_post` sends each origin of its group a notice and
//!   `Win_start` waits for the notice of each target; `Win_complete` sends
//!   each target a notice that `Win_wait` (or a `Win_test` that returned
//!   true) waits for. The notices are zero-byte messages on channels of
//!   their own, not counted with the application's messages;
//! - `Win_lock` and `Win_unlock` cost a round trip to the target; locks
//!   never contend (an exclusive lock does not wait for another holder);
//! - the window constructors are an allreduce of a context id and an
//!   allgather of each member's base and size; `Win_free` a barrier;
//! - the target's CPU takes no part (no progress thread or interrupt is
//!   modelled: data lands whenever it arrives).

use trace::{CommId, Event, Op, Rma};

use super::{Current, Engine, Time};

/// Tags of the PSCW notices: negative, so that no application message
/// shares their channel.
const TAG_POSTED: i32 = -101;
const TAG_COMPLETED: i32 = -102;

/// The channel space of a window's PSCW notices.
const NOTICES: u32 = 1 << 29;

impl Engine<'_> {
    /// Models one detailed one-sided call of rank `r` entered at `enter`.
    pub(super) fn one_sided(&mut self, r: u32, ev: &Event, enter: Time, cur: &mut Current) {
        let net = self.net;
        let Some(rma) = ev.rma.as_deref() else {
            return;
        };
        self.one_sided += self.layout.weight[r as usize];
        let win = ev.comm.0;
        let chan = (win | NOTICES) & !CommId::PARTITIONED_CHANNELS;
        let done = self.ranks[r as usize].rma_done;
        match ev.op {
            op if op.is_window_collective() => {
                // A fence or free closes the rank's epoch: its own
                // operations arrive first.
                let at = if op.makes_window() {
                    enter
                } else {
                    enter.max(done)
                };
                let cell = self.arrive(r, ev, at);
                cur.cells.push(cell);
            }
            _ if matches!(rma, Rma::Target { .. }) => {
                let out = self.bytes(ev.send.map_or(0, |s| s.bytes()));
                let back = self.bytes(ev.recv.map_or(0, |s| s.bytes()));
                let st = &mut self.ranks[r as usize];
                let leave = (enter + net.overhead).max(st.nic);
                st.nic = leave + net.nic(out);
                let there = net.arrival(leave - net.overhead, out);
                let finished = if ev.recv.is_some() {
                    net.arrival(there + net.overhead, back)
                } else {
                    there
                };
                st.rma_done = st.rma_done.max(finished);
                cur.floor = cur.floor.max(enter + net.cpu(out));
                if let Some(req) = ev.req {
                    let c = self.done_cell(r, finished);
                    self.ranks[r as usize].reqs.insert(req, c);
                }
            }
            Op::WinPost => {
                let mut t = enter;
                let group = self.group(r, win, rma);
                for &o in &group {
                    t = self.notice(r, chan, o, TAG_POSTED, t);
                }
                self.ranks[r as usize].exposed.insert(win, group);
                cur.floor = cur.floor.max(t);
            }
            Op::WinStart => {
                let group = self.group(r, win, rma);
                for &t in &group {
                    let c = self.post_recv(r, chan, t, TAG_POSTED, enter);
                    cur.cells.push(c);
                }
                self.ranks[r as usize].accessing.insert(win, group);
            }
            Op::WinComplete => {
                let mut t = enter.max(done);
                let group = self.ranks[r as usize]
                    .accessing
                    .remove(&win)
                    .unwrap_or_default();
                for target in group {
                    t = self.notice(r, chan, target, TAG_COMPLETED, t);
                }
                cur.floor = cur.floor.max(t);
            }
            Op::WinWait | Op::WinTest if ev.flag != Some(false) => {
                let group = self.ranks[r as usize]
                    .exposed
                    .remove(&win)
                    .unwrap_or_default();
                for o in group {
                    let c = self.post_recv(r, chan, o, TAG_COMPLETED, enter);
                    cur.cells.push(c);
                }
            }
            Op::WinLock => {
                cur.floor = cur.floor.max(enter + 2.0 * (net.overhead + net.latency));
            }
            Op::WinUnlock
            | Op::WinUnlockAll
            | Op::WinFlush
            | Op::WinFlushAll
            | Op::WinFlushLocal
            | Op::WinFlushLocalAll => {
                // The operations arrive, then their acknowledgement.
                let acked = if done > 0.0 {
                    done + net.overhead + net.latency
                } else {
                    enter + net.overhead
                };
                cur.floor = cur.floor.max(enter.max(acked));
                self.ranks[r as usize].rma_done = 0.0;
            }
            // Local: attach, detach, Win_sync, Win_lock_all (which MPI
            // libraries take lazily), a Win_test that found the epoch open.
            _ => cur.floor += net.overhead,
        }
    }

    /// Sends a PSCW notice from rank `r` to world rank `to` at `t`; returns
    /// when the CPU is free again. Notices are not the application's
    /// messages: they are not counted with them.
    fn notice(&mut self, r: u32, chan: u32, to: u32, tag: i32, t: Time) -> Time {
        let counted = self.messages;
        let (free, _) = self.post_send(r, Op::Send, chan, to, tag, 0.0, t);
        self.messages = counted;
        free
    }

    /// The world ranks of a `Win_post`/`Win_start` group (recorded as
    /// ranks in window `win`).
    fn group(&self, r: u32, win: u32, rma: &Rma) -> Vec<u32> {
        let Rma::Sync { group, .. } = rma else {
            return Vec::new();
        };
        let comms = &self.ranks[r as usize].comms;
        group
            .iter()
            .filter_map(|&l| comms.world_of(win, i64::from(l)))
            .filter_map(|w| u32::try_from(w).ok())
            .collect()
    }
}
