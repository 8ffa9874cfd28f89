//! MPI-IO calls in the simulation (issue 36), when the command is given a
//! file system ([`IoModel`]: `--io-bandwidth`, `--io-latency`). What the
//! model does, and what it leaves out (the prediction says so):
//!
//! - a file's collective calls (`File_open`, `File_close`, `File_set_view`,
//!   `File_sync`, the `_all`, `_at_all` and `_ordered` accesses, their
//!   split `_begin` and nonblocking forms) meet as a barrier over the
//!   file's ranks; then every member's bytes move together at the
//!   aggregate bandwidth, after one latency: all leave at the last arrival
//!   plus `latency + Σ bytes / bandwidth`. That is two-phase I/O with
//!   perfect aggregation;
//! - an independent access moves its bytes at an equal share of the
//!   bandwidth among the file's ranks (as if all of them accessed at once,
//!   the usual "each rank writes its block"), after one latency; a rank's
//!   own accesses queue one after the other;
//! - a nonblocking access (`I` forms) completes its request at that time,
//!   and a split collective's `_end` waits for its `_begin`;
//! - other calls (seeks, `File_delete`) cost one latency;
//! - no cache, striping, locking or contention between files is modelled:
//!   the trace records what the application asked of the file system and
//!   nothing of how it was served.
//!
//! Without a file system every MPI-IO call is free, and the prediction
//! counts them.

use trace::Event;

use super::{CellId, Current, Engine, Time};

impl Engine<'_> {
    /// Models one MPI-IO call of rank `r` entered at `enter`.
    pub(super) fn file_call(&mut self, r: u32, ev: &Event, enter: Time, cur: &mut Current) {
        self.io += self.layout.weight[r as usize];
        // A call recorded without its detail names no file to meet on.
        let Some(model) = self.opts.io.filter(|_| !ev.without_detail()) else {
            return;
        };
        let net = self.net;
        let file = ev.comm.0;
        if ev.op.is_file_collective() {
            let cell = self.arrive(r, ev, enter);
            let st = &mut self.ranks[r as usize];
            if let Some(req) = ev.req {
                st.reqs.insert(req, cell);
                cur.floor += net.overhead;
            } else if ev.op.is_split_begin() {
                st.split_io.insert(file, cell);
                cur.floor += net.overhead;
            } else {
                cur.cells.push(cell);
            }
            return;
        }
        if ev.op.is_split_end() {
            if let Some(cell) = self.ranks[r as usize].split_io.remove(&file) {
                cur.cells.push(cell);
            }
            return;
        }
        let bytes = self.bytes(ev.send.map_or(0, |s| s.bytes()))
            + self.bytes(ev.recv.map_or(0, |s| s.bytes()));
        let st = &mut self.ranks[r as usize];
        let sharers = st.comms.view(file).size.unwrap_or(1).max(1) as f64;
        let start = enter.max(st.io_free);
        let done = start + model.latency + bytes * sharers / model.bandwidth;
        st.io_free = done;
        if let Some(req) = ev.req {
            let c = self.done_cell(r, done);
            self.ranks[r as usize].reqs.insert(req, c);
            cur.floor += net.overhead;
        } else {
            cur.floor = cur.floor.max(done);
        }
    }

    /// The file system's part of a file collective that `present` (cells
    /// with their members' bytes) completed at `times`: every member
    /// leaves at the last time plus the latency and all members' bytes at
    /// the aggregate bandwidth (each simulated rank's bytes counted for
    /// every rank it stands for).
    pub(super) fn file_collective_times(
        &self,
        present: impl Iterator<Item = (CellId, f64)>,
        times: &mut [Time],
    ) {
        let Some(model) = self.opts.io else {
            return;
        };
        let bytes: f64 = present
            .map(|(cell, b)| {
                let owner = self.cells[cell as usize].owner as usize;
                b * self.layout.weight.get(owner).copied().unwrap_or(1) as f64
            })
            .sum();
        let last = times.iter().copied().fold(0.0, f64::max);
        let end = last + model.latency + bytes / model.bandwidth;
        times.iter_mut().for_each(|t| *t = end);
    }
}
