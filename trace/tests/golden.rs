//! Trace files of every format version, each written once by the build
//! that introduced it (`tests/golden/README.md`), read by today's reader:
//! every event, the metadata and the timing totals must be what the writer
//! put there. This is the format's compatibility contract; a test that
//! wrote an "old" file from today's types could not catch a break.

use std::path::PathBuf;

use trace::{MNode, TraceFile};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Every rank's events in the raw-log grammar, `rank line` per event.
fn expansion(f: &TraceFile) -> String {
    let mut out = String::new();
    for r in 0..f.meta.world_size {
        for e in f.trace.rank_trace(r).unwrap().expand() {
            out.push_str(&format!("{r} {}\n", trace::raw::event_line(&e)));
        }
    }
    out
}

/// Computation and MPI time summed over every event of every rank, and the
/// number of timed executions, from the merged timing statistics.
fn timing_totals(f: &TraceFile) -> (f64, f64, u64) {
    fn walk(n: &MNode, acc: &mut (f64, f64, u64)) {
        match n {
            MNode::Event(e) => {
                let t = e.timing().total();
                let n = t.count();
                acc.0 += t.compute().stats().mean() * n as f64;
                acc.1 += t.mpi().stats().mean() * n as f64;
                acc.2 += n;
            }
            MNode::Loop(l) => l.body().iter().for_each(|b| walk(b, acc)),
            _ => panic!("a node kind this test does not know"),
        }
    }
    let mut acc = (0.0, 0.0, 0);
    f.trace.nodes().iter().for_each(|n| walk(n, &mut acc));
    acc
}

/// The timing the writer gave each event (see the README), summed.
fn timing_truth() -> (f64, f64, u64) {
    let mut acc = (0.0, 0.0, 0);
    for r in 0..3u64 {
        let log = std::fs::read_to_string(dir().join(format!("input/rank{r}.log"))).unwrap();
        for i in 0..log.lines().count() as u64 {
            acc.0 += (1_000 + (i % 7) * 100 + r) as f64;
            acc.1 += (200 + (i % 3) * 10) as f64;
            acc.2 += 1;
        }
    }
    acc
}

#[test]
fn every_format_version_reads_as_its_writer_wrote_it() {
    let want = std::fs::read_to_string(dir().join("expand.txt")).unwrap();
    let (compute, mpi, count) = timing_truth();
    for v in 1..=trace::file::VERSION {
        let path = dir().join(format!("v{v}.trace"));
        let f = TraceFile::read(&path).unwrap_or_else(|e| {
            panic!("version {v}: {e} (a new VERSION needs its golden file, see the README)")
        });
        assert_eq!(expansion(&f), want, "version {v}: the events");
        assert_eq!(f.meta.world_size, 3, "version {v}");
        assert_eq!(f.meta.tool, "rankscale golden", "version {v}");
        assert_eq!(f.meta.mpi, "MPICH Version:      4.0.2", "version {v}");
        assert_eq!(f.meta.command, ["golden", "-n", "6"], "version {v}");
        assert_eq!((f.meta.wall_ns, f.meta.merge_ns), (123_456_789, 4_321));
        assert_eq!(
            f.meta.sites,
            [
                (0xb1, "exchange golden.c:21".to_string()),
                (0xc1, "main golden.c:30".to_string())
            ],
            "version {v}"
        );
        assert!(f.meta.unverified.is_empty(), "version {v}");
        assert_eq!(f.meta.origin, trace::Origin::Traced, "version {v}");
        assert!(f.meta.partial.is_empty(), "version {v}: a finished run");
        assert!(
            f.meta.assumptions.is_empty(),
            "version {v}: not extrapolated"
        );
        let paths: &[(u64, &str)] = if v >= 13 {
            &[(0x5eed, "/scratch/golden/checkpoint.dat")]
        } else {
            &[]
        };
        assert_eq!(
            f.meta
                .paths
                .iter()
                .map(|(h, p)| (*h, p.as_str()))
                .collect::<Vec<_>>(),
            paths,
            "version {v}: paths"
        );
        let (c, m, n) = timing_totals(&f);
        assert_eq!(n, count, "version {v}: timed executions");
        // The file keeps each bin's average on an 8-bit log scale: within
        // half a step, 2^(1/510) - 1 = 0.14 % for these one-octave bins.
        let close = |got: f64, want: f64| (got - want).abs() <= 0.0014 * want;
        assert!(
            close(c, compute),
            "version {v}: compute {c} against {compute}"
        );
        assert!(close(m, mpi), "version {v}: MPI time {m} against {mpi}");
    }
}

#[test]
fn a_version_newer_than_the_reader_is_refused() {
    let mut bytes = std::fs::read(dir().join("v1.trace")).unwrap();
    bytes[8..12].copy_from_slice(&(trace::file::VERSION + 1).to_le_bytes());
    let err = TraceFile::from_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("newer"), "{err}");
}
