//! Well-formed trace files with hostile sizes: the inputs of the
//! hostile-trace suite (`tests/hostile.rs`) and of the structure-aware fuzz
//! target (`compress/fuzz`). Each is a real trace (a loop of Barriers on a
//! few ranks, compressed as the tracer compresses it) rewritten so that a
//! declared size is huge: the world, a loop count (consistent with its
//! body or not), the nesting, a list length, or bytes after the data.
//! Byte-level damage is the other fuzz target's business; these files pass
//! the checksum and decode, so they reach the size checks and the tools.
//! Enabled by the `fixtures` feature.

use std::io::Write;

use crate::merge::{NodeRewrite, TraceRewrite};
use trace::{Event, Meta, Op, TraceFile};

/// The ranks of the base trace.
const RANKS: u32 = 4;

/// The base trace: on each of 4 ranks, Init, 3 Barriers (a loop), an
/// Allreduce and Finalize.
pub fn base() -> TraceFile {
    let ranks = (0..RANKS)
        .map(|r| {
            let mut v = vec![Event::new(Op::Init)];
            for _ in 0..3 {
                let mut e = Event::new(Op::Barrier);
                e.comm_rank = r as i32;
                e.site = 1;
                v.push(e);
            }
            let mut e = Event::new(Op::Allreduce);
            e.comm_rank = r as i32;
            e.send = Some(trace::Transfer::collective(1, 8));
            e.site = 2;
            v.push(e);
            v.push(Event::new(Op::Finalize));
            v
        })
        .collect();
    crate::from_rank_events(ranks).expect("the base trace builds")
}

/// One hostile change to [`base`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hostile {
    /// The metadata declares this many ranks.
    World(u32),
    /// The metadata declares fewer ranks than the ranklists hold.
    WorldBelowRanks,
    /// The Barrier loop runs `f` times as often, its body too: a trace
    /// that really expands to about `12 f` events.
    LoopCount(u64),
    /// The Barrier loop's counts are multiplied by `f`, its body not.
    LyingLoopCount(u64),
    /// The Barrier loop inside this many loops of `count` iterations each,
    /// the body executed accordingly.
    Nesting {
        /// Loops around the Barrier loop.
        depth: u32,
        /// Iterations of each.
        count: u64,
    },
    /// The command line is declared to hold this many words.
    DeclaredList(u64),
    /// This many bytes of zeros after the zlib stream.
    TrailingBytes(usize),
    /// A second zlib stream after the first.
    SecondStream,
    /// Bytes after the trace data inside the zlib stream.
    TrailingPayload(usize),
}

/// The cases of the hostile-trace suite, each with a name for messages.
pub fn catalogue() -> Vec<(String, Hostile)> {
    let mut v = vec![
        ("world 2^31".to_string(), Hostile::World(1 << 31)),
        ("world 2^32-1".into(), Hostile::World(u32::MAX)),
        ("world 0".into(), Hostile::World(0)),
        ("world below ranks".into(), Hostile::WorldBelowRanks),
        ("list of 10^9".into(), Hostile::DeclaredList(1_000_000_000)),
        ("list of 2^63".into(), Hostile::DeclaredList(1 << 63)),
        ("trailing bytes".into(), Hostile::TrailingBytes(7)),
        ("second stream".into(), Hostile::SecondStream),
        ("trailing payload".into(), Hostile::TrailingPayload(5)),
        (
            "nesting 60 x 2".into(),
            Hostile::Nesting {
                depth: 60,
                count: 2,
            },
        ),
    ];
    for k in [41u32, 48, 62, 63] {
        v.push((format!("loop count 2^{k}"), Hostile::LoopCount(1 << k)));
        v.push((
            format!("lying loop count 2^{k}"),
            Hostile::LyingLoopCount(1 << k),
        ));
    }
    v
}

/// The trace of a case, before it becomes bytes (the base trace for the
/// cases that only differ in their bytes).
pub fn trace(h: Hostile) -> TraceFile {
    let mut f = base();
    match h {
        Hostile::World(n) => f.meta.world_size = n,
        Hostile::WorldBelowRanks => f.meta.world_size = RANKS - 1,
        Hostile::LoopCount(k) | Hostile::LyingLoopCount(k) => {
            let consistent = matches!(h, Hostile::LoopCount(_));
            let nodes = f.trace.nodes_mut();
            let found = nodes.iter_mut().any(|n| n.stretch_loop(k, consistent));
            assert!(found, "the base trace has a loop");
        }
        Hostile::Nesting { depth, count } => {
            let nodes = f.trace.nodes_mut();
            let i = nodes
                .iter()
                .position(|n| matches!(n, trace::MNode::Loop(_)))
                .expect("the base trace has a loop");
            let mut n = nodes.remove(i);
            for _ in 0..depth {
                n = n.wrapped();
                n.stretch_loop(count, true);
            }
            nodes.insert(i, n);
        }
        Hostile::DeclaredList(_)
        | Hostile::TrailingBytes(_)
        | Hostile::SecondStream
        | Hostile::TrailingPayload(_) => {}
    }
    f
}

/// The file bytes of a case.
pub fn bytes(h: Hostile) -> Vec<u8> {
    let f = trace(h);
    match h {
        Hostile::DeclaredList(n) => {
            // The command is `[MARKER]`: its length prefix (1) sits right
            // before the marker's own length byte; it becomes `n`.
            let marker = "rankscale-hostile-marker";
            let mut g = f;
            g.meta.command = vec![marker.into()];
            let mut payload = g.to_wire().expect("encodes");
            let at = find(&payload, marker.as_bytes()).expect("marker in payload");
            assert_eq!(payload[at - 2], 1, "the command's length prefix");
            payload.splice(at - 2..at - 1, varint(n));
            file_of(&payload)
        }
        Hostile::TrailingBytes(n) => {
            let mut b = f.to_bytes().expect("encodes");
            b.extend(std::iter::repeat_n(0u8, n));
            b
        }
        Hostile::SecondStream => {
            let mut b = f.to_bytes().expect("encodes");
            let again = f.to_bytes().expect("encodes");
            b.extend_from_slice(&again[16..]);
            b
        }
        Hostile::TrailingPayload(n) => {
            let mut payload = f.to_wire().expect("encodes");
            payload.extend(std::iter::repeat_n(0u8, n));
            file_of(&payload)
        }
        _ => f.to_bytes().expect("encodes"),
    }
}

/// A file with a valid header and zlib stream around `payload`.
pub fn file_of(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::from(trace::file::MAGIC);
    out.extend_from_slice(&trace::file::VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::fast());
    z.write_all(payload).expect("in memory");
    z.finish().expect("in memory")
}

/// A structure-aware hostile trace from fuzz input: the bytes choose the
/// world size, the loop counts (honest or lying), the nesting and the
/// ranks, each across its whole range, so that the fuzzer explores sizes
/// a byte-level mutation of a real file would almost never produce.
pub fn from_fuzz(data: &[u8]) -> Vec<u8> {
    let mut it = data.iter().copied();
    let mut next = |n: usize| -> u64 {
        (0..n).fold(0u64, |v, _| (v << 8) | u64::from(it.next().unwrap_or(0)))
    };
    let kind = next(1) % 8;
    let h = match kind {
        0 => Hostile::World(next(4) as u32),
        1 => Hostile::LoopCount(next(8)),
        2 => Hostile::LyingLoopCount(next(8)),
        3 => Hostile::Nesting {
            depth: (next(1) % 250) as u32,
            count: next(8) % 16,
        },
        4 => Hostile::DeclaredList(next(8)),
        5 => Hostile::TrailingBytes((next(1) % 64) as usize),
        6 => Hostile::TrailingPayload((next(1) % 64) as usize),
        _ => Hostile::WorldBelowRanks,
    };
    let mut b = bytes(h);
    // A second change on top: the world size, read from the next bytes.
    if let Some(&w) = data.get(12)
        && w & 1 == 1
        && let Ok(mut f) = TraceFile::from_bytes(&b)
    {
        f.meta = Meta {
            world_size: next(4) as u32,
            ..f.meta
        };
        b = f.to_bytes().unwrap_or(b);
    }
    b
}

/// What the fuzz targets do with a file: read it under the default
/// budgets and, when it reads, expand every rank (at most 64 ranks and
/// 10,000 events each). Returns whether it read. A panic here is a
/// finding.
pub fn exercise(bytes: &[u8]) -> bool {
    let Ok(f) = TraceFile::from_bytes(bytes) else {
        return false;
    };
    let _ = f.trace.total_events();
    for rank in f.trace.ranks().iter().take(64) {
        if let Ok(t) = f.trace.rank_trace(rank) {
            for ev in t.expand().take(10_000) {
                let _ = trace::raw::event_line(&ev);
            }
        }
    }
    true
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `v` as a postcard varint.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_refused_with_a_clear_message() {
        for (name, h) in catalogue() {
            let e = TraceFile::from_bytes(&bytes(h)).unwrap_err().to_string();
            assert!(!e.is_empty(), "{name}");
            eprintln!("{name}: {e}");
        }
        assert!(TraceFile::from_bytes(&bytes(Hostile::LoopCount(1000))).is_ok());
    }
}
