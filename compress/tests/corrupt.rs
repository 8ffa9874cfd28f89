//! Bad trace files get clear errors, never a panic, an abort or a hang:
//! truncated and corrupted files, files from a newer format version, files
//! that are not traces, damaged payloads behind a valid header (which get
//! past the checksum to the decoder and the consistency checks), and
//! nesting deep enough to overflow the stack of a naive decoder.
//!
//! The cargo-fuzz target `compress/fuzz` explores the same inputs without
//! bounds; this test keeps a fixed, fast sample of them in every CI run.

mod synth;

use std::io::Write;

use compress::{Compressor, Config};

use proptest::prelude::*;
use trace::{Error, MergedTrace, TraceFile};

fn sample() -> TraceFile {
    let mut merged: Option<MergedTrace> = None;
    for rank in 0..4 {
        let mut c = Compressor::new(rank, Config::default());
        for e in synth::stencil(3000).chain(synth::distinct(40 + rank as u64)) {
            c.push(&e).unwrap();
        }
        let t = compress::merge::from_rank(&c.into_trace().unwrap());
        merged = Some(match merged {
            Some(m) => compress::merge::traces(m, t),
            None => t,
        });
    }
    // Timelines of two ranks, so that damage can hit them too.
    let timelines = (0..2)
        .map(|rank| {
            let mut t = trace::Timeline::new(rank, 1_700_000_000_000_000_000);
            for i in 0..3000u64 {
                t.push(i * 2_000 + rank as u64, i * 2_000 + 700);
            }
            t
        })
        .collect();
    let trace = merged.unwrap();
    TraceFile {
        meta: trace::Meta {
            world_size: trace.ranks().max().map_or(1, |m| m + 1),
            ..Default::default()
        },
        trace,
        timelines,
        series: Vec::new(),
    }
}

/// A file with a valid header and zlib stream around `payload`.
fn wrap(payload: &[u8]) -> Vec<u8> {
    let mut file = Vec::from(trace::file::MAGIC);
    file.extend_from_slice(&trace::file::VERSION.to_le_bytes());
    file.extend_from_slice(&0u32.to_le_bytes());
    let mut z = flate2::write::ZlibEncoder::new(file, flate2::Compression::fast());
    z.write_all(payload).unwrap();
    z.finish().unwrap()
}

/// Reads, and if that works, expands every rank a bounded amount.
fn exercise(bytes: &[u8]) -> Result<(), Error> {
    let f = TraceFile::from_bytes(bytes)?;
    for rank in f.trace.ranks().iter().take(16) {
        if let Ok(t) = f.trace.rank_trace(rank) {
            for ev in t.expand().take(20_000) {
                let _ = trace::raw::event_line(&ev);
            }
        }
    }
    Ok(())
}

#[test]
fn a_good_file_reads_back_and_expands() {
    let f = sample();
    let bytes = f.to_bytes().unwrap();
    let back = TraceFile::from_bytes(&bytes).unwrap();
    assert_eq!(back.trace.total_events(), f.trace.total_events());
    exercise(&bytes).unwrap();
}

#[test]
fn every_truncation_is_a_clear_error() {
    let bytes = sample().to_bytes().unwrap();
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        let e = exercise(&bytes[..len]).expect_err("a truncated file must not read");
        let msg = e.to_string();
        assert!(
            msg.contains("not a rankscale trace") || msg.contains("corrupted"),
            "{len}: {msg}"
        );
    }
}

#[test]
fn newer_versions_and_foreign_files_are_named_as_such() {
    let mut bytes = sample().to_bytes().unwrap();
    let newer = trace::file::VERSION + 1;
    bytes[8..12].copy_from_slice(&newer.to_le_bytes());
    let e = TraceFile::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NewerVersion {
                found,
                supported: trace::file::VERSION
            } if found == newer
        ),
        "{e}"
    );
    assert!(e.to_string().contains("upgrade rankscale"), "{e}");
    for foreign in [
        &b""[..],
        b"rank 0: Init\n",
        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\0\0",
    ] {
        assert!(matches!(
            TraceFile::from_bytes(foreign),
            Err(Error::NotATrace)
        ));
    }
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    // A TraceFile whose single top-level node is a loop nested 100000 deep:
    // empty metadata, an empty ranklist, then per level: variant 1 (Loop),
    // an empty ranklist, empty counts, and a body of one node.
    // meta: seven fields, the unverified list, the origin (0: traced), the
    // partial ranks, the assumptions and the paths.
    let mut p = vec![0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    p.extend([1, 0]); // trace.ranks: the empty ranklist (no sections)
    p.push(1); // one top-level node
    for _ in 0..100_000 {
        p.extend([1, 1, 0, 0, 0, 1]); // Loop, ranks, counts (no variants, no phases), body len 1
    }
    p.extend([0, 1, 0, 0, 0]); // innermost: an event (garbage), then ends
    p.extend([0, 0]); // spills, lost
    let e = exercise(&wrap(&p)).unwrap_err();
    assert!(e.to_string().contains("nested deeper than 256"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn flipped_bytes_in_the_file_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
    ) {
        let mut bytes = sample().to_bytes().unwrap();
        for (i, x) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x;
        }
        let _ = exercise(&bytes);
    }

    #[test]
    fn damaged_payloads_behind_a_valid_header_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut payload = sample().to_wire().unwrap();
        for (i, x, kind) in edits {
            let i = i.index(payload.len());
            match kind {
                0 => payload[i] = x,
                1 => { payload.insert(i, x); }
                _ => { payload.remove(i); }
            }
        }
        let _ = exercise(&wrap(&payload));
    }
}
