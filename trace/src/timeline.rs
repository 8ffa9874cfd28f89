//! The optional lossless timeline of a rank: when each event entered and
//! left MPI.
//!
//! The compressed trace keeps timing only as statistics per event and loop
//! path, which is what keeps its size near constant. Instance-level analysis
//! (slow instances, late senders, wait states) needs every timestamp, so
//! `RANKSCALE_TIMELINE=1` adds them here. A timeline holds no structure of
//! its own: its `i`-th span belongs to the `i`-th event of the rank's
//! expansion ([`crate::Trace::expand`]), so the compressed structure stays
//! the single source of truth for what each event was.
//!
//! Encoding: per event, the zigzag varint of its enter time minus the
//! previous event's enter time (negative when threads interleave), then the
//! varint of its duration. A steady loop gives the same few bytes per
//! iteration, which the file's zlib stream then compresses further.

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::codec::{get_varint, put_varint, unzigzag, zigzag};

/// When one event entered and left MPI, in ns since the rank's time zero
/// ([`Timeline::epoch_ns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Entry into the MPI call.
    pub enter: u64,
    /// Return from the MPI call.
    pub leave: u64,
}

impl Span {
    /// The time inside the call.
    pub fn duration(&self) -> u64 {
        self.leave.saturating_sub(self.enter)
    }
}

/// One rank's timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// The rank (in `MPI_COMM_WORLD`).
    pub rank: u32,
    /// The wall clock at the rank's time zero, ns since the Unix epoch: spans
    /// of different ranks compare after adding it (exactly so on one node,
    /// up to the clocks' offsets across nodes).
    pub epoch_ns: u64,
    len: u64,
    last_enter: u64,
    bytes: Vec<u8>,
}

impl Timeline {
    /// An empty timeline of `rank`, whose time zero is `epoch_ns` on the
    /// wall clock.
    pub fn new(rank: u32, epoch_ns: u64) -> Timeline {
        Timeline {
            rank,
            epoch_ns,
            ..Timeline::default()
        }
    }

    /// Appends the next event's span (ns since time zero).
    pub fn push(&mut self, enter: u64, leave: u64) {
        let delta = enter.wrapping_sub(self.last_enter) as i64;
        put_varint(&mut self.bytes, zigzag(delta));
        put_varint(&mut self.bytes, leave.saturating_sub(enter));
        self.last_enter = enter;
        self.len += 1;
    }

    /// Number of events.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no event.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Encoded size in bytes (before the file's zlib stream).
    pub fn encoded_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Decodes every span, in the order of the rank's expansion.
    pub fn spans(&self) -> Result<Vec<Span>, Error> {
        let bad = || {
            Error::Corrupt(format!(
                "timeline of rank {}: the encoding does not hold its {} events",
                self.rank, self.len
            ))
        };
        let mut out = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0).min(1 << 24));
        let (mut at, mut enter) = (0usize, 0u64);
        while at < self.bytes.len() {
            let delta = unzigzag(get_varint(&self.bytes, &mut at).ok_or_else(bad)?);
            enter = enter.wrapping_add(delta as u64);
            let dur = get_varint(&self.bytes, &mut at).ok_or_else(bad)?;
            out.push(Span {
                enter,
                leave: enter.saturating_add(dur),
            });
        }
        if out.len() as u64 != self.len {
            return Err(bad());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_round_trip_including_interleaved_threads() {
        let mut t = Timeline::new(3, 1_700_000_000_000_000_000);
        let want = [
            Span {
                enter: 10,
                leave: 25,
            },
            Span {
                enter: 12,
                leave: 13,
            }, // another thread, entered earlier
            Span {
                enter: 1 << 40,
                leave: (1 << 40) + 7,
            },
            Span {
                enter: (1 << 40) + 9,
                leave: (1 << 40) + 9,
            },
        ];
        for s in want {
            t.push(s.enter, s.leave);
        }
        assert_eq!(t.len(), 4);
        assert_eq!(t.spans().unwrap(), want);
    }

    #[test]
    fn a_steady_loop_costs_a_few_bytes_per_event() {
        let mut t = Timeline::new(0, 0);
        let mut now = 0;
        for _ in 0..10_000 {
            t.push(now + 1_000, now + 1_500);
            now += 2_000;
        }
        // 2000 ns steps and 500 ns durations: 2 + 2 bytes.
        assert_eq!(t.encoded_bytes(), 40_000);
    }

    #[test]
    fn a_damaged_timeline_is_an_error() {
        let mut t = Timeline::new(1, 0);
        t.push(5, 9);
        t.push(7, 8);
        t.len = 3;
        assert!(t.spans().is_err());
        t.len = 2;
        t.bytes.push(0x80);
        assert!(t.spans().is_err());
    }
}
