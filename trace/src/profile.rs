//! Aggregate profiles of an event stream, in the style of mpiP: calls, bytes
//! and time per operation and call site, and a communication matrix.
//!
//! A profile has a size bounded by the number of distinct (operation, call
//! site) pairs and peers, never by the run length, so the shim can keep one
//! per rank at a constant cost per event.

use std::collections::BTreeMap;

use crate::Error;
use crate::event::{Event, EventSink, Op, Peer};

/// Counters for one (operation, call site) pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteStats {
    /// Number of calls.
    pub calls: u64,
    /// Bytes handed to MPI to send (for MPI-IO: to write).
    pub bytes_sent: u64,
    /// Bytes of the receive buffers handed to MPI (for MPI-IO: the bytes
    /// asked to be read).
    pub bytes_received: u64,
    /// Total time inside MPI, ns.
    pub time_ns: u64,
    /// Longest single call, ns.
    pub max_ns: u64,
}

/// A per-rank profile: calls per operation and call site, and bytes sent to
/// each world rank by point-to-point calls.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    sites: BTreeMap<(Op, u64), SiteStats>,
    sent_to: BTreeMap<i32, u64>,
}

impl Profile {
    /// An empty profile.
    pub fn new() -> Profile {
        Profile::default()
    }

    /// Accounts one event.
    pub fn add(&mut self, ev: &Event) {
        let s = self.sites.entry((ev.op, ev.site)).or_default();
        let bytes = u64::try_from(ev.bytes_sent()).unwrap_or(0);
        s.calls += 1;
        s.bytes_sent += bytes;
        s.bytes_received += u64::try_from(ev.recv.map_or(0, |t| t.bytes())).unwrap_or(0);
        s.time_ns += ev.time.dur_ns;
        s.max_ns = s.max_ns.max(ev.time.dur_ns);
        if !ev.op.is_collective()
            && let Some(t) = ev.send
            && let Peer::Rank { world, .. } = t.peer
        {
            *self.sent_to.entry(world).or_default() += bytes;
        }
    }

    /// Calls per operation, summed over call sites.
    pub fn calls_by_op(&self) -> BTreeMap<Op, u64> {
        let mut m = BTreeMap::new();
        for ((op, _), s) in &self.sites {
            *m.entry(*op).or_default() += s.calls;
        }
        m
    }

    /// Counters per (operation, call site).
    pub fn sites(&self) -> impl Iterator<Item = (Op, u64, &SiteStats)> {
        self.sites.iter().map(|((op, site), s)| (*op, *site, s))
    }

    /// Point-to-point bytes sent to each world rank.
    pub fn sent_to(&self) -> &BTreeMap<i32, u64> {
        &self.sent_to
    }

    /// Total number of events accounted.
    pub fn events(&self) -> u64 {
        self.sites.values().map(|s| s.calls).sum()
    }
}

impl EventSink for Profile {
    fn push(&mut self, event: &Event) -> Result<(), Error> {
        self.add(event);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}
