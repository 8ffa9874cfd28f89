//! `rankscale import --format pertext` through the command line, as an
//! analyst meets it: the hand-written 4-rank dataset in
//! `tests/data/pertext/small` (see its README) becomes a trace file whose
//! every rank expands to exactly the events of its text file, with a
//! timeline; bad input ends with a clear error naming file and line, and no
//! panic. No MPI is needed.

mod common;

use std::path::{Path, PathBuf};

use common::{rankscale, text};
use compress::{Event, Op, Peer, Tag};

fn dataset() -> PathBuf {
    common::root().join("tests/data/pertext/small")
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// What one line of a pertext file must become, read by a parser of this
/// test's own (not the importer's): operation, then for point-to-point the
/// side, peer, tag and bytes; for collectives the bytes of both buffers;
/// for `DEL<n>` the Pcontrol level.
#[derive(Debug, PartialEq)]
enum Want {
    P2p {
        op: Op,
        peer: i32,
        tag: i32,
        bytes: i64,
    },
    Coll {
        op: Op,
        send: i64,
        recv: i64,
    },
    Pcontrol(i64),
}

fn expected(file: &Path) -> Vec<Want> {
    let body = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    for line in body.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0].starts_with('#') {
            continue;
        }
        let n = |i: usize| w[i].parse::<i64>().unwrap();
        out.push(match w[0] {
            "Send" | "Recv" => Want::P2p {
                op: if w[0] == "Send" { Op::Send } else { Op::Recv },
                peer: n(1) as i32,
                tag: n(7) as i32,
                bytes: n(9),
            },
            "ALLREDUCE" => Want::Coll {
                op: Op::Allreduce,
                send: n(7),
                recv: n(9),
            },
            del => Want::Pcontrol(del.strip_prefix("DEL").unwrap().parse().unwrap()),
        });
    }
    out
}

fn observed(ev: &Event) -> Want {
    match ev.op {
        Op::Send | Op::Recv => {
            let x = if ev.op == Op::Send { ev.send } else { ev.recv }.unwrap();
            let Peer::Rank { world, .. } = x.peer else {
                panic!("not a concrete peer: {ev:?}")
            };
            let Tag::Value(tag) = x.tag else {
                panic!("not a concrete tag: {ev:?}")
            };
            assert_eq!(x.dsize, 1, "byte counts have datatype size 1");
            assert_eq!(ev.comm.0, 0, "on MPI_COMM_WORLD");
            Want::P2p {
                op: ev.op,
                peer: world,
                tag,
                bytes: x.count,
            }
        }
        Op::Pcontrol => Want::Pcontrol(ev.value.unwrap()),
        op => {
            let (s, r) = (ev.send.unwrap(), ev.recv.unwrap());
            assert_eq!((s.dsize, r.dsize), (1, 1));
            Want::Coll {
                op,
                send: s.count,
                recv: r.count,
            }
        }
    }
}

#[test]
fn imported_ranks_expand_to_their_text_files() {
    let dir = common::scratch("import");
    let trace = dir.join("small.trace");
    let out = rankscale(&[
        "import",
        "--format",
        "pertext",
        &path_str(&dataset()),
        "-o",
        &path_str(&trace),
    ]);
    assert!(out.status.success(), "import failed: {}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert_eq!(summary.lines().count(), 1, "one summary line: {summary}");
    let bytes = std::fs::metadata(&trace).unwrap().len();
    for part in ["4 ranks", "44 events", &format!("({bytes} bytes)")] {
        assert!(summary.contains(part), "summary lacks `{part}`: {summary}");
    }

    for rank in 0..4 {
        let out = rankscale(&["show", &path_str(&trace), "--expand", &rank.to_string()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let got: Vec<Want> = text(&out.stdout)
            .lines()
            .enumerate()
            .map(|(i, l)| observed(&compress::raw::parse_line(l, i + 1).unwrap()))
            .collect();
        let want = expected(&dataset().join(format!("Process{rank}.txt")));
        assert_eq!(want.len(), 11, "the dataset has 11 records per rank");
        assert_eq!(got, want, "rank {rank}");
    }

    let out = rankscale(&["stats", &path_str(&trace)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stats = text(&out.stdout);
    assert!(
        stats.contains("timeline: 4 ranks, 44 events"),
        "no timeline in stats: {stats}"
    );
    // The point-to-point matrix of the README: 2112 bytes from 0 to 1.
    assert!(stats.contains("8448 bytes in all"), "{stats}");

    let out = rankscale(&["show", &path_str(&trace)]);
    let show = text(&out.stdout);
    assert!(show.contains("mpi: imported: pertext"), "{show}");
    assert!(show.contains("loop x2"), "the two iterations fold: {show}");
}

/// The dataset copied into a scratch directory, with `edit` applied to
/// rank `rank`'s text.
fn edited(tag: &str, rank: u32, edit: impl Fn(&str) -> String) -> PathBuf {
    let dir = common::scratch(tag).join("in");
    std::fs::create_dir_all(&dir).unwrap();
    for r in 0..4 {
        let name = format!("Process{r}.txt");
        let body = std::fs::read_to_string(dataset().join(&name)).unwrap();
        let body = if r == rank { edit(&body) } else { body };
        std::fs::write(dir.join(name), body).unwrap();
    }
    dir
}

/// Runs an import that must fail; returns its stderr.
fn failing_import(input: &Path, format: &str) -> String {
    let trace = common::scratch("import-fail").join("out.trace");
    let out = rankscale(&[
        "import",
        "--format",
        format,
        &path_str(input),
        "-o",
        &path_str(&trace),
    ]);
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(if format == "pertext" { 1 } else { 2 }),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!trace.exists(), "no trace file after a failed import");
    err
}

#[test]
fn a_garbled_line_fails_with_its_file_and_line() {
    let input = edited("import-garbled", 1, |body| {
        body.replace(
            "Send 0 t1 1053000 t2 1055000 t 1 l 1024 m 6",
            "Send 0 t1 1053000 t2 10550x0 t 1 l 1024 m 6",
        )
    });
    let err = failing_import(&input, "pertext");
    assert!(err.starts_with("rankscale: error: "), "{err}");
    assert!(err.contains("Process1.txt:7: t2: `10550x0`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn unpaired_messages_and_missing_ranks_are_named() {
    let input = edited("import-unpaired", 3, |body| {
        body.replace(
            "Send 0 t1 1155000 t2 1159000 t 2 l 64 m 12",
            "Send 0 t1 1155000 t2 1159000 t 2 l 32 m 12",
        )
    });
    let err = failing_import(&input, "pertext");
    assert!(
        err.contains(
            "Process3.txt:12: Send with msgid 12 (tag 2, 32 bytes) and its Recv at Process0.txt:12 (tag 2, 64 bytes) do not match: the byte counts differ"
        ),
        "{err}"
    );

    let input = edited("import-missing", 9, |b| b.into());
    std::fs::remove_file(input.join("Process2.txt")).unwrap();
    let err = failing_import(&input, "pertext");
    assert!(err.contains("Process2.txt is missing"), "{err}");

    let err = failing_import(&dataset(), "otf2");
    assert!(
        err.contains("pertext"),
        "clap names the accepted formats: {err}"
    );
}
