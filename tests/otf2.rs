//! OTF2 in and out, on real traced runs and against OTF2's own tools:
//!
//! * `rankscale export --otf2` of real runs (Open MPI; and MPICH for two
//!   programs) gives archives that `otf2-print` (Score-P's OTF2 tools)
//!   reads without a warning, with one `ENTER` and one `LEAVE` per call and
//!   one MPI record per message end and collective;
//! * `rankscale import --format otf2` of those archives gives back the
//!   trace: the same compressed structure with every timing statistic
//!   (what `show` prints), every rank's calls, every call's enter and leave
//!   time to the nanosecond, and every call site's source location;
//! * the standard MPI records alone (what a Score-P archive has) give the
//!   same calls with their peers, tags and bytes, and the same message and
//!   collective matching in `rankscale analyze`;
//! * an archive written the way Score-P writes MPI, by OTF2's own Python
//!   bindings (not rankscale's writer), imports to the calls it holds;
//! * a missing, corrupt or truncated archive is a clear error, never a
//!   panic.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use trace::{Op, Peer, TraceFile};

/// The programs and arguments the round trip runs, 4 ranks each: blocking
/// and nonblocking point-to-point, collectives, wildcards, communicators,
/// persistent requests, probes and threads.
const PROGRAMS: &[(&str, &[&str])] = &[
    ("p2p", &[]),
    ("collectives", &["3"]),
    ("wildcard", &[]),
    ("subcomm", &[]),
    ("persistent", &["3"]),
    ("probes", &["3"]),
    ("threads", &["3"]),
];

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Traces `name args` on 4 ranks of `imp` with its timeline into `dir`.
fn traced(imp: &str, name: &str, args: &[&str], dir: &Path) -> PathBuf {
    let path = dir.join(format!("{name}.trace"));
    let mut o = untraced();
    o.traced = true;
    o.env.push(("RANKSCALE_TRACE", s(&path)));
    o.env.push(("RANKSCALE_TIMELINE", "1".into()));
    if imp == "mpich" {
        o.env.push(("RANKSCALE_YIELD", "1".into()));
    }
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let job = mpirun(imp, 4, &program(imp, name), &args, &o);
    assert_eq!(job.code, Some(0), "{imp} {name}: {}", job.stderr);
    path
}

fn export(trace: &Path, dir: &Path) {
    let out = rankscale(&["export", &s(trace), "--otf2", "-o", &s(dir)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.join("traces.otf2").is_file());
}

/// `otf2-print`'s listing of an archive; it must read it without a
/// warning or an error.
fn otf2_print(dir: &Path) -> String {
    let out = Command::new("otf2-print")
        .arg(dir.join("traces.otf2"))
        .output()
        .expect("otf2-print (Debian: otf2-tools) runs");
    assert!(out.status.success(), "otf2-print: {}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "otf2-print warns");
    text(&out.stdout)
}

/// How many event lines of `listing` are records of `kind`.
fn records(listing: &str, kind: &str) -> usize {
    listing
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(kind))
        .count()
}

/// Every call's absolute enter and leave time, per rank.
fn times(file: &TraceFile, rank: u32) -> Vec<(u64, u64)> {
    let tl = file.timeline(rank).expect("a timeline");
    tl.spans()
        .unwrap()
        .iter()
        .map(|sp| (tl.epoch_ns + sp.enter, tl.epoch_ns + sp.leave))
        .collect()
}

fn check_round_trip(imp: &str, name: &str, args: &[&str]) {
    let dir = scratch(&format!("otf2-{imp}-{name}"));
    let trace = traced(imp, name, args, &dir);
    let archive = dir.join("archive");
    export(&trace, &archive);
    let original = TraceFile::read(&trace).unwrap();
    let listing = otf2_print(&archive);
    let calls = original.trace.total_events() as usize;
    assert_eq!(records(&listing, "ENTER"), calls, "{imp} {name}: ENTER");
    assert_eq!(records(&listing, "LEAVE"), calls, "{imp} {name}: LEAVE");
    // One MPI record per send, per receive that completed in the call,
    // and per blocking collective.
    let mut sends = 0;
    let mut colls = 0;
    for r in original.trace.ranks().iter() {
        for e in expansion(&original, r) {
            let op = Op::from_name(e.split_whitespace().next().unwrap()).unwrap();
            match op {
                Op::Send
                | Op::Ssend
                | Op::Bsend
                | Op::Rsend
                | Op::Sendrecv
                | Op::SendrecvReplace => sends += 1,
                Op::Isend | Op::Issend | Op::Ibsend | Op::Irsend => sends += 1,
                op if op.family() == trace::Family::Collective => colls += 1,
                _ => {}
            }
        }
    }
    assert_eq!(
        records(&listing, "MPI_SEND") + records(&listing, "MPI_ISEND"),
        sends,
        "{imp} {name}: send records"
    );
    assert_eq!(
        records(&listing, "MPI_COLLECTIVE_END"),
        colls,
        "{imp} {name}"
    );
    assert_eq!(
        records(&listing, "MPI_COLLECTIVE_BEGIN"),
        colls,
        "{imp} {name}"
    );

    let back = dir.join("back.trace");
    let out = rankscale(&["import", "--format", "otf2", &s(&archive), "-o", &s(&back)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let back = TraceFile::read(&back).unwrap();
    assert_eq!(back.meta.world_size, original.meta.world_size);
    // Every call site's source location comes back (those the calls use).
    let used: std::collections::BTreeSet<u64> = original
        .trace
        .ranks()
        .iter()
        .flat_map(|r| {
            original
                .trace
                .rank_trace(r)
                .unwrap()
                .expand()
                .map(|e| e.site)
                .collect::<Vec<_>>()
        })
        .collect();
    let labels = |f: &TraceFile| -> std::collections::BTreeMap<u64, String> {
        f.meta
            .sites
            .iter()
            .filter(|(k, _)| used.contains(k))
            .cloned()
            .collect()
    };
    assert!(
        !labels(&original).is_empty(),
        "{imp} {name}: the trace names its sites"
    );
    assert_eq!(labels(&back), labels(&original), "{imp} {name}: call sites");
    // The compressed structure itself, with every timing statistic: what
    // `show` prints after the header.
    let structure = |p: &Path| -> String {
        let out = rankscale(&["show", &s(p)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let t = text(&out.stdout);
        t.lines()
            .skip_while(|l| !l.starts_with("wall "))
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let want = structure(&trace);
    assert!(
        want.contains("ranks <"),
        "{imp} {name}: no structure in {want}"
    );
    assert_eq!(
        structure(&dir.join("back.trace")),
        want,
        "{imp} {name}: the structure"
    );
    for r in original.trace.ranks().iter() {
        assert_eq!(
            expansion(&back, r),
            expansion(&original, r),
            "{imp} {name}: rank {r}'s calls"
        );
        assert_eq!(
            times(&back, r),
            times(&original, r),
            "{imp} {name}: rank {r}'s times"
        );
    }
}

#[test]
fn real_runs_round_trip_through_otf2_exactly_and_otf2_print_reads_them() {
    for imp in mpis() {
        for &(name, args) in PROGRAMS {
            if imp == "mpich" && !matches!(name, "p2p" | "collectives") {
                continue;
            }
            check_round_trip(imp, name, args);
        }
    }
}

/// The analysis summary line of `trace`: messages and collectives
/// matched, sends and receives unmatched.
fn matching(trace: &Path) -> (u64, u64, u64, u64) {
    let out = rankscale(&["analyze", &s(trace), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    (
        n("messages"),
        n("collectives"),
        v["unmatched"][0].as_u64().unwrap(),
        v["unmatched"][1].as_u64().unwrap(),
    )
}

#[test]
fn the_standard_mpi_records_alone_give_the_calls_and_their_matching() {
    let imp = "openmpi";
    if !mpis().contains(&imp) {
        eprintln!("skipped: no {imp}");
        return;
    }
    for &(name, args) in &PROGRAMS[..4] {
        let dir = scratch(&format!("otf2-records-{name}"));
        let trace = traced(imp, name, args, &dir);
        let archive = dir.join("archive");
        export(&trace, &archive);
        let got = otf2::import_with(
            &archive.join("traces.otf2"),
            otf2::Options { records_only: true },
        )
        .unwrap();
        assert_eq!(got.exact, 0, "{name}: no call taken from the attribute");
        let original = TraceFile::read(&trace).unwrap();
        assert_eq!(got.calls, original.trace.total_events(), "{name}");
        for r in original.trace.ranks().iter() {
            let a = original.trace.rank_trace(r).unwrap();
            let b = got.file.trace.rank_trace(r).unwrap();
            let (a, b): (Vec<_>, Vec<_>) = (a.expand().collect(), b.expand().collect());
            assert_eq!(a.len(), b.len(), "{name} rank {r}");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.op, y.op, "{name} rank {r}");
                // What a send record carries: peer, tag and bytes.
                if let (Some(sx), Some(sy)) = (x.send, y.send)
                    && matches!(sx.peer, Peer::Rank { .. })
                {
                    assert_eq!(sx.peer.world(), sy.peer.world(), "{name} rank {r}: {x:?}");
                    assert_eq!(sx.tag, sy.tag, "{name} rank {r}: {x:?}");
                    assert_eq!(sx.count * sx.dsize, sy.count * sy.dsize, "{name} rank {r}");
                }
                // Blocking collectives' records carry the root
                // (nonblocking ones have Enter/Leave only).
                if x.op.family() == trace::Family::Collective {
                    assert_eq!(x.root, y.root, "{name} rank {r}: {x:?}");
                    // Their bytes, turned back from the totals Score-P
                    // records into the call's arguments; not the
                    // per-peer counts of Alltoallv/w (no record gives
                    // them), nor an in-place call (read as the call
                    // its totals fit).
                    if !x.in_place && !matches!(x.op, Op::Alltoallv | Op::Alltoallw) {
                        let b = |t: Option<trace::Transfer>| t.map(|t| t.count * t.dsize);
                        let scaled = |c: &[i64], t: Option<trace::Transfer>| {
                            let d = t.map_or(1, |t| t.dsize);
                            c.iter().map(|&c| c * d).collect::<Vec<_>>()
                        };
                        assert_eq!(b(x.send), b(y.send), "{name} rank {r}: {x:?} {y:?}");
                        assert_eq!(b(x.recv), b(y.recv), "{name} rank {r}: {x:?} {y:?}");
                        assert_eq!(
                            scaled(&x.recv_counts, x.recv),
                            y.recv_counts,
                            "{name} rank {r}: {x:?}"
                        );
                        assert_eq!(
                            scaled(&x.send_counts, x.send),
                            y.send_counts,
                            "{name} rank {r}: {x:?}"
                        );
                    }
                }
            }
        }
        let records = dir.join("records.trace");
        got.file.write(&records).unwrap();
        let (m, want) = (matching(&records), matching(&trace));
        assert_eq!(
            m.0, want.0,
            "{name}: the analysis matches the same messages"
        );
        assert_eq!((m.2, m.3), (0, 0), "{name}: nothing unmatched");
        // Communicator constructors are Enter/Leave only in OTF2 (their
        // results are definitions), so where a program builds
        // communicators the analysis groups collective calls from other
        // facts; elsewhere the collectives are the same.
        if name != "subcomm" {
            assert_eq!(m.1, want.1, "{name}: the same collectives");
        }
    }
}

#[test]
fn an_archive_written_as_score_p_writes_mpi_imports_to_its_calls() {
    let dir = scratch("otf2-scorep-like");
    let archive = dir.join("archive");
    let out = Command::new("/usr/bin/python3")
        .arg(root().join("tests/data/otf2/scorep_like.py"))
        .arg(&archive)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the OTF2 Python bindings (Debian: python3-otf2) write the archive: {}",
        text(&out.stderr)
    );
    otf2_print(&archive);
    let t = dir.join("app.trace");
    let out = rankscale(&[
        "import",
        "--format",
        "otf2",
        &s(&archive.join("traces.otf2")),
        "-o",
        &s(&t),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = TraceFile::read(&t).unwrap();
    assert_eq!(file.meta.world_size, 2);
    // The calls the script writes (see its docstring), world ranks and
    // bytes from the records (the collectives' arguments from the totals
    // Score-P records); the receive posted by MPI_Irecv gets its
    // peer, tag and bytes from the MPI_Wait that completed it.
    assert_eq!(
        expansion(&file, 0),
        [
            "Send site=none comm=0 send=1/5/64/1",
            "Irecv site=none comm=0 recv=1/6/32/1 req=7",
            "Wait site=none reqs=7 done=7",
            "Allreduce site=none comm=0 send=8/1",
            "Bcast site=none comm=0 send=16/1 root=1",
        ]
    );
    assert_eq!(
        expansion(&file, 1),
        [
            "Recv site=none comm=0 recv=0/5/64/1",
            "Isend site=none comm=0 send=0/6/32/1 req=3",
            "Wait site=none reqs=3 done=3",
            "Allreduce site=none comm=0 send=8/1",
            "Bcast site=none comm=0 send=16/1 root=1",
        ]
    );
    // Times: the script's, in ns from 1,000,000 (user function `main`
    // around them skipped).
    let t0 = 1_000_000;
    let rel = |r| -> Vec<(u64, u64)> {
        times(&file, r)
            .into_iter()
            .map(|(a, b)| (a - t0, b - t0))
            .collect()
    };
    assert_eq!(
        rel(0),
        [
            (100, 200),
            (300, 310),
            (400, 900),
            (1000, 1500),
            (1600, 1700)
        ]
    );
    assert_eq!(
        rel(1),
        [
            (150, 250),
            (600, 650),
            (700, 800),
            (1400, 1500),
            (1550, 1650)
        ]
    );
    assert_eq!(matching(&t), (2, 2, 0, 0));
}

#[test]
fn bad_archives_and_bad_requests_are_clear_errors() {
    let dir = scratch("otf2-bad");
    let fail = |args: &[&str], want: &str| {
        let out = rankscale(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(want), "{args:?}: `{want}` not in {err}");
    };
    let out_trace = s(&dir.join("x.trace"));
    // No archive.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    fail(
        &["import", "--format", "otf2", &s(&empty), "-o", &out_trace],
        "no OTF2 anchor file",
    );
    // Not an anchor file.
    let garbage = dir.join("garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::write(garbage.join("traces.otf2"), "not an archive\n").unwrap();
    fail(
        &["import", "--format", "otf2", &s(&garbage), "-o", &out_trace],
        "OTF2_Reader_Open",
    );
    // A real archive, then damaged: its event and definition files cut.
    let trace = dir.join("t.trace");
    let events = (0..40)
        .map(|i| {
            let mut e = trace::Event::new(if i % 2 == 0 {
                Op::Barrier
            } else {
                Op::Allreduce
            });
            e.comm_rank = 0;
            e.time.enter_ns = i * 1000;
            e.time.dur_ns = 500;
            e
        })
        .collect::<Vec<_>>();
    compress::from_rank_events(vec![events])
        .unwrap()
        .write(&trace)
        .unwrap();
    let good = dir.join("good");
    export(&trace, &good);
    for (name, file) in [("cut-events", "traces/0.evt"), ("cut-defs", "traces.def")] {
        let bad = dir.join(name);
        copy_dir(&good, &bad);
        let f = bad.join(file);
        let len = std::fs::metadata(&f).unwrap().len();
        let h = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
        h.set_len(len / 2).unwrap();
        fail(
            &["import", "--format", "otf2", &s(&bad), "-o", &out_trace],
            "Invalid or inconsistent record data",
        );
    }
    assert!(
        !dir.join("x.trace").exists(),
        "no trace after a failed import"
    );
    // Exporting over an archive.
    fail(
        &["export", &s(&trace), "--otf2", "-o", &s(&good)],
        "already holds an OTF2 archive",
    );
    // Options of the Perfetto export.
    fail(
        &[
            "export",
            &s(&trace),
            "--otf2",
            "--ranks",
            "0",
            "-o",
            &s(&dir.join("new")),
        ],
        "--ranks and --max-events",
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &p);
        } else {
            std::fs::copy(e.path(), p).unwrap();
        }
    }
}
