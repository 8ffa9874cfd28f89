//! `rankscale import --format pertext` through the command line, as an
//! analyst meets it: the hand-written 4-rank dataset in
//! `tests/data/pertext/small` (see its README) becomes a trace file whose
//! every rank expands to exactly the events of its text file, with a
//! timeline; bad input ends with a clear error naming file and line, and no
//! panic. And a real traced run, rendered as pertext and imported, gives
//! back its own trace in everything the format carries.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{rankscale, text};
use trace::{Event, Op, Peer, Tag};

fn dataset() -> PathBuf {
    common::root().join("tests/data/pertext/small")
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// What one line of a pertext file must become, read by a parser of this
/// test's own (not the importer's): operation, then for point-to-point the
/// side, peer, tag and bytes; for collectives the bytes of the call's
/// buffers;
/// for `DEL<n>` a Pcontrol of level 1 (`n` is a running count).
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
        recv: Option<i64>,
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
            // The published sizes are to and from all 4 ranks; the
            // call's count is a quarter, and Allreduce records its send
            // buffer only, as the tracer does.
            "ALLREDUCE" => Want::Coll {
                op: Op::Allreduce,
                send: n(7) / 4,
                recv: None,
            },
            del => {
                let n: u64 = del.strip_prefix("DEL").unwrap().parse().unwrap();
                assert!(n > 0, "the dataset's counts start above 0: {n}");
                Want::Pcontrol(1)
            }
        });
    }
    out
}

/// The transfer of a `Send` or `Recv` with its peer's world rank and its
/// tag, which must both be concrete.
fn p2p_side(ev: &Event) -> (trace::Transfer, i32, i32) {
    let x = if ev.op == Op::Send { ev.send } else { ev.recv }.unwrap();
    let Peer::Rank { world, .. } = x.peer else {
        panic!("not a concrete peer: {ev:?}")
    };
    let Tag::Value(tag) = x.tag else {
        panic!("not a concrete tag: {ev:?}")
    };
    (x, world, tag)
}

fn observed(ev: &Event) -> Want {
    match ev.op {
        Op::Send | Op::Recv => {
            let (x, world, tag) = p2p_side(ev);
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
            let s = ev.send.unwrap();
            assert_eq!(s.dsize, 1);
            Want::Coll {
                op,
                send: s.count,
                recv: ev.recv.map(|r| r.count),
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
            .map(|(i, l)| observed(&trace::raw::parse_line(l, i + 1).unwrap()))
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
        Some(if ["pertext", "otf2"].contains(&format) {
            1
        } else {
            2
        }),
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
            "Send 0 t1 1053000 t2 1055000 t 1 l 1024 m 4",
            "Send 0 t1 1053000 t2 10550x0 t 1 l 1024 m 4",
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
            "Send 0 t1 1155000 t2 1159000 t 2 l 64 m 6",
            "Send 0 t1 1155000 t2 1159000 t 2 l 32 m 6",
        )
    });
    let err = failing_import(&input, "pertext");
    assert!(
        err.contains(
            "Process3.txt:12: Send of 32 bytes (tag 2, the 1st such message) is received at Process0.txt:12 as 64 bytes: the byte counts differ"
        ),
        "{err}"
    );

    let input = edited("import-missing", 9, |b| b.into());
    std::fs::remove_file(input.join("Process2.txt")).unwrap();
    let err = failing_import(&input, "pertext");
    assert!(err.contains("Process2.txt is missing"), "{err}");

    let err = failing_import(&dataset(), "vampir");
    assert!(
        err.contains("pertext") && err.contains("otf2"),
        "clap names the accepted formats: {err}"
    );
}

/// Times beyond `i64` nanoseconds (a `t2` of 2^64 - 1 was accepted) and
/// collectives that differ between ranks (rank 2 broadcasting while the
/// others reduce was imported without a word) fail with the files and
/// lines; files named almost like rank files are named in one warning
/// and the import goes on with the real ones.
#[test]
fn out_of_range_times_disagreeing_collectives_and_stray_names_are_reported() {
    let input = edited("import-t2-max", 1, |body| {
        body.replace("t2 1055000", "t2 18446744073709551615")
    });
    let err = failing_import(&input, "pertext");
    assert!(
        err.contains(
            "Process1.txt:7: t2: 18446744073709551615 is too large (at most 9223372036854775807)"
        ),
        "{err}"
    );

    let input = edited("import-collectives", 2, |body| {
        body.replace(
            "ALLREDUCE 1 t1 1100500 t2 1130000 s 32 r 32 m 5",
            "BCAST 1 t1 1100500 t2 1130000 s 32 r 8 m 5",
        )
    });
    let err = failing_import(&input, "pertext");
    assert!(
        err.contains(
            "Process0.txt:9: the 1st collective is Allreduce, but Process2.txt:9, the 1st \
             collective of rank 2, is Bcast: every rank must call the same collectives in the \
             same order"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let input = edited("import-strays", 9, |b| b.into());
    for stray in ["Process-1.txt", "process4.txt", "Process1.txt.bak"] {
        std::fs::write(input.join(stray), "Send 0 t1 1 t2 2 t 0 l 8\n").unwrap();
    }
    let trace = input.with_file_name("strays.trace");
    let out = rankscale(&[
        "import",
        "--format",
        "pertext",
        &path_str(&input),
        "-o",
        &path_str(&trace),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warnings,
        [format!(
            "rankscale: warning: {}: not rank files (Process<r>.txt, r a rank without leading \
             zeros), not read: Process-1.txt, Process1.txt.bak, process4.txt",
            input.display()
        )],
        "{err}"
    );
    assert!(text(&out.stdout).contains("imported 4 ranks, 44 events"));
}

/// The pertext rendering of one traced rank: every event but `Init` and
/// `Finalize` (the format has no record for them) as its line, at its
/// absolute times (`epoch + span`), with message ids that pair the k-th
/// message from a rank to another on both sides.
fn render_pertext(
    file: &trace::TraceFile,
    rank: u32,
    ids: &mut HashMap<(i32, i32), u64>,
) -> String {
    let t = file.trace.rank_trace(rank).unwrap();
    let tl = file.timeline(rank).expect("a timeline");
    let spans = tl.spans().unwrap();
    let mut out = String::new();
    for (ev, s) in t.expand().zip(&spans) {
        let (a, b) = (tl.epoch_ns + s.enter, tl.epoch_ns + s.leave);
        let me = rank as i32;
        let line = match ev.op {
            // The format has no records of calls without detail.
            op if op.is_generic() => continue,
            Op::Init | Op::Finalize => continue,
            Op::Pcontrol => format!("DEL{}", ev.value.unwrap()),
            Op::Send | Op::Recv => {
                let (x, world, tag) = p2p_side(&ev);
                let pair = if ev.op == Op::Send {
                    (me, world)
                } else {
                    (world, me)
                };
                let id = ids
                    .entry((pair.0, pair.1 * 2 + i32::from(ev.op == Op::Recv)))
                    .or_default();
                *id += 1;
                format!(
                    "{} {world} t1 {a} t2 {b} t {tag} l {} m {id}",
                    ev.op.name(),
                    x.count * x.dsize
                )
            }
            op => panic!("{} has no pertext record in this test", op.name()),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The loop structure of a rank's trace without `Init`, `Finalize` and the
/// calls recorded without detail (which the format has no records of):
/// loops with their iteration counts, calls with their operation and
/// executions, in order; what an importer must rebuild from the events
/// alone.
fn skeleton(nodes: &[trace::Node], out: &mut Vec<String>) {
    for n in nodes {
        if let Some(l) = n.as_loop() {
            out.push(format!("loop {:?} {{", l.iterations().collect::<Vec<_>>()));
            skeleton(l.body(), out);
            out.push("}".into());
            continue;
        }
        let op = n.shape().unwrap().op();
        if !matches!(op, Op::Init | Op::Finalize) && !op.is_generic() {
            out.push(format!("{} x{}", op.name(), n.executions()));
        }
    }
}

/// One call of a merged trace on one path (its first, steady or last
/// iterations): its ranks, operation, MPI time statistics (count, sum,
/// min, max), and how its histogram was stored (bins and bin width).
#[derive(Debug)]
struct CallStats {
    ranks: String,
    op: &'static str,
    path: &'static str,
    mpi: (u64, u64, u64, u64),
    bins: usize,
    width: u32,
}

/// The MPI time statistics of every call of the merged trace but
/// `Pcontrol` and the calls recorded without detail, by its ranks,
/// operation and path. The merge joins ranks' calls by call site, which
/// the format does not carry, so only calls that join the same ranks on
/// both sides compare. Also returns the trace's time (computation and
/// MPI over every call), which decides what a file keeps as one bin.
fn mpi_stats(nodes: &[trace::MNode], out: &mut Vec<CallStats>) -> f64 {
    let sum = |d: &trace::timing::Dist| d.stats().mean() * d.stats().count() as f64;
    let mut total = 0.0;
    for n in nodes {
        match n {
            trace::MNode::Loop(l) => total += mpi_stats(l.body(), out),
            trace::MNode::Event(e) => {
                let t = e.timing();
                let op = e.shape().op();
                for (path, s) in [
                    ("first", t.first()),
                    ("steady", t.steady()),
                    ("last", t.last()),
                ] {
                    total += sum(s.compute()) + sum(s.mpi());
                    if op == Op::Pcontrol || op.is_generic() || s.mpi().stats().count() == 0 {
                        continue;
                    }
                    let d = s.mpi();
                    out.push(CallStats {
                        ranks: e.ranks().to_string(),
                        op: op.name(),
                        path,
                        mpi: (
                            d.stats().count(),
                            sum(d).round() as u64,
                            d.stats().min(),
                            d.stats().max(),
                        ),
                        bins: d.histogram().bins().len(),
                        width: d.histogram().width(),
                    });
                }
            }
            _ => {}
        }
    }
    total
}

/// Compares the MPI time of the calls that join the same ranks in two
/// files of one run, path by path, and returns how many compared. The
/// statistics must be equal, except where one file kept a distribution
/// as one bin and the other did not: a file keeps as one bin each
/// distribution under [`trace::timing::NEGLIGIBLE_SHARE`] of its own time,
/// and the two files' times differ by what only one carries (`Init`,
/// `Finalize`). Such a difference must be explained: the distribution is
/// negligible in the file that collapsed it, the counts are equal, and
/// the sum, minimum and maximum agree within the two files' quantisation
/// (8 bits on the log scale of each bin's span).
fn assert_same_mpi_time(a: &[CallStats], a_total: f64, b: &[CallStats], b_total: f64) -> usize {
    let mut compared = 0;
    for c in a {
        let Some(w) = b
            .iter()
            .find(|w| (&w.ranks, w.op, w.path) == (&c.ranks, c.op, c.path))
        else {
            continue;
        };
        compared += 1;
        if (c.bins == 1) == (w.bins == 1) {
            assert_eq!(c.mpi, w.mpi, "MPI time statistics of {c:?} against {w:?}");
            continue;
        }
        let (one, total) = if c.bins == 1 {
            (c, a_total)
        } else {
            (w, b_total)
        };
        // Both sides read back quantised: the widest bin's quantum bounds
        // the error of a sum, and of the file's time (1 % more).
        let tol = (f64::from(c.width + w.width) / 510.0).exp2() - 1.0;
        let floor = total * trace::timing::NEGLIGIBLE_SHARE;
        assert!(
            one.mpi.1 as f64 <= floor * (1.0 + tol) * 1.01,
            "{one:?} is one bin but not negligible in its file (under {floor} ns)"
        );
        assert_eq!(c.mpi.0, w.mpi.0, "the counts of {c:?} and {w:?}");
        for (x, y) in [(c.mpi.1, w.mpi.1), (c.mpi.2, w.mpi.2), (c.mpi.3, w.mpi.3)] {
            let (x, y) = (x as f64, y as f64);
            assert!(
                (x - y).abs() <= tol * x.max(y) + c.mpi.0 as f64,
                "{c:?} against {w:?}: beyond the quantisation ({tol})"
            );
        }
    }
    compared
}

/// The importer against the tracer: a real traced run (Open MPI, the ring
/// program, 4 ranks, 40 laps, each marked by `MPI_Pcontrol`), rendered as
/// pertext from its trace and timeline, imported through the command line.
/// The imported trace must equal the traced one in everything the format
/// can carry: every rank's events (sites aside, counts in bytes), every
/// event's enter and leave time to the nanosecond, every rank's loop
/// structure with its iteration counts, the MPI time statistics of each
/// call that joins the same ranks (path by path; see
/// [`assert_same_mpi_time`] for the one-bin rule), and the world size.
/// What the format cannot carry is left out and
/// named: `Init`/`Finalize`, call sites, datatypes (bytes only), and the
/// time and level of a `MPI_Pcontrol` (a `DEL<n>` takes no time, and its
/// `n` is a running count).
#[test]
fn an_imported_rendering_of_a_traced_run_equals_the_trace() {
    let imp = "openmpi";
    if !common::mpis().contains(&imp) {
        eprintln!("skipped: no {imp}");
        return;
    }
    let dir = common::scratch("import-traced");
    let traced_path = dir.join("ring.trace");
    let mut o = common::untraced();
    o.traced = true;
    o.env.push(("RANKSCALE_TRACE", path_str(&traced_path)));
    o.env.push(("RANKSCALE_TIMELINE", "1".into()));
    let job = common::mpirun(imp, 4, &common::program(imp, "ring"), &["40".into()], &o);
    assert_eq!(job.code, Some(0), "{}", job.stderr);
    let traced = trace::TraceFile::read(&traced_path).unwrap();

    let pertext = dir.join("pertext");
    std::fs::create_dir_all(&pertext).unwrap();
    let mut ids = HashMap::new();
    for r in 0..4 {
        let body = render_pertext(&traced, r, &mut ids);
        std::fs::write(pertext.join(format!("Process{r}.txt")), body).unwrap();
    }
    let imported_path = dir.join("imported.trace");
    let out = rankscale(&[
        "import",
        "--format",
        "pertext",
        &path_str(&pertext),
        "-o",
        &path_str(&imported_path),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let imported = trace::TraceFile::read(&imported_path).unwrap();
    assert_eq!(imported.meta.world_size, traced.meta.world_size);
    assert_eq!(imported.trace.ranks(), traced.trace.ranks());
    let zero = imported.timeline(0).unwrap().epoch_ns;

    for r in 0..4u32 {
        // The events, as the format carries them.
        let t = traced.trace.rank_trace(r).unwrap();
        let mut want = Vec::new();
        let mut want_spans = Vec::new();
        let tl = traced.timeline(r).unwrap();
        for (mut ev, s) in t.expand().zip(tl.spans().unwrap()) {
            if matches!(ev.op, Op::Init | Op::Finalize) || ev.op.is_generic() {
                continue;
            }
            ev.site = 0;
            if ev.op == Op::Pcontrol {
                // The ring's levels are its lap numbers, a running count
                // as the published files' DEL numbers are: every imported
                // delimiter is the same boundary, Pcontrol(1).
                ev.value = Some(compress::import::DELIMITER_LEVEL);
            }
            for x in [&mut ev.send, &mut ev.recv].into_iter().flatten() {
                x.count *= x.dsize;
                x.dsize = 1;
                x.dtype = trace::Datatype::UNKNOWN;
            }
            if ev.op != Op::Pcontrol {
                want_spans.push((tl.epoch_ns + s.enter - zero, tl.epoch_ns + s.leave - zero));
            }
            ev.time = Default::default();
            want.push(trace::raw::event_line(&ev));
        }
        let it = imported.trace.rank_trace(r).unwrap();
        let itl = imported.timeline(r).unwrap();
        assert_eq!(itl.epoch_ns, zero, "one time base");
        let mut got = Vec::new();
        let mut got_spans = Vec::new();
        for (mut ev, s) in it.expand().zip(itl.spans().unwrap()) {
            if ev.op != Op::Pcontrol {
                got_spans.push((s.enter, s.leave));
            }
            ev.time = Default::default();
            got.push(trace::raw::event_line(&ev));
        }
        assert_eq!(got, want, "rank {r}: the events");
        assert_eq!(got_spans, want_spans, "rank {r}: the enter and leave times");
        // The structure.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        skeleton(it.nodes(), &mut a);
        skeleton(t.nodes(), &mut b);
        assert_eq!(a, b, "rank {r}: the loop structure");
        assert!(
            a.iter().any(|l| l.starts_with("loop [40]")),
            "rank {r}: {a:?}"
        );
    }
    // The merged timing statistics of the calls that join the same ranks.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let a_total = mpi_stats(imported.trace.nodes(), &mut a);
    let b_total = mpi_stats(traced.trace.nodes(), &mut b);
    let compared = assert_same_mpi_time(&a, a_total, &b, b_total);
    assert!(
        compared >= 1,
        "no call joins the same ranks: {a:?} against {b:?}"
    );
}

/// The published 4-rank SMG2000 trace of the pattern-detection papers
/// (`../shared/third-party/hpc-mpi-traces/smg4.10.tar.xz`), as an analyst
/// takes it: imported, checked and analysed with the default settings.
/// The oracles are the authors' own results (42,222 pattern instances, in
/// their `results/smg4.10/`) and the bounds any analysis of a run must
/// keep: no clock violation left, no shift beyond the largest violation,
/// a critical path and each rank's waiting within the run's length.
/// Skipped, with a message, where the shared copy is missing.
#[test]
fn the_published_smg_trace_imports_checks_and_analyses_within_its_run() {
    let tarball = common::root().join("../shared/third-party/hpc-mpi-traces/smg4.10.tar.xz");
    if !tarball.exists() {
        eprintln!("skipped: {} not found", tarball.display());
        return;
    }
    let dir = common::scratch("published-smg4");
    let untar = std::process::Command::new("tar")
        .arg("xf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .status()
        .unwrap();
    assert!(untar.success());
    let trace = dir.join("smg4.trace");
    let t = path_str(&trace);
    let out = rankscale(&[
        "import",
        "--format",
        "pertext",
        &path_str(&dir.join("traces/smg4.10")),
        "-o",
        &t,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = rankscale(&["check", &t]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = rankscale(&["analyze", &t, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let r: serde_json::Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let instances: u64 = r["sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[1].as_u64().unwrap())
        .sum();
    assert_eq!(instances, 42_222, "the authors' instance count");
    let c = &r["clock"];
    assert_eq!(c["remaining"], 0, "{c}");
    assert!(
        c["max_shift_ns"].as_i64() <= c["largest_violation_ns"].as_i64(),
        "{c}"
    );
    assert!(c["max_shift_chain"].as_u64() <= Some(1), "{c}");
    let run = r["run_ns"].as_i64().unwrap();
    assert!(run > 2_000_000_000, "the run is 2.57 s long: {run}");
    let path = r["delays"]["path_ns"].as_i64().unwrap();
    assert!(path <= run, "critical path {path} ns in a run of {run} ns");
    for rank in r["wait_states"]["ranks"].as_array().unwrap() {
        let ns = rank["ns"].as_i64().unwrap();
        assert!(
            ns <= run,
            "rank {} waited {ns} ns in a run of {run} ns",
            rank["rank"]
        );
    }
    // Keyed as the authors key patterns (each rank's events as a set),
    // every pattern's instance count, events and processes equal those of
    // their results file.
    let out = rankscale(&["analyze", &t, "--json", "--pattern-key", "unordered"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let r: serde_json::Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let mut ours: Vec<(u64, u64, u64)> = r["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let n = |k: &str| p[k].as_u64().unwrap();
            (n("instances"), n("ne"), n("np"))
        })
        .collect();
    let results =
        std::fs::read_to_string(dir.join("results/smg4.10/orderedcommunications.txt")).unwrap();
    let mut theirs: Vec<(u64, u64, u64)> = results
        .lines()
        .filter_map(|l| {
            // "CP3: (3) Events: 8, Processes: 4"
            let (_, rest) = l.split_once(": (")?;
            let (count, rest) = rest.split_once(") Events: ")?;
            let (events, procs) = rest.split_once(", Processes: ")?;
            Some((
                count.parse().ok()?,
                events.parse().ok()?,
                procs.trim().parse().ok()?,
            ))
        })
        .collect();
    assert_eq!(theirs.len(), 25, "the authors' file lists 25 patterns");
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs);
    // Out to OTF2 and back. Its records overlap (a nonblocking message is
    // timed from its post to its completion), which OTF2 cannot hold: the
    // export failed on them ("timestamp is smaller than last written one").
    // Each such call now ends at the next call's start, said in a note, and
    // the calls come back as they went out.
    let archive = dir.join("otf2");
    let out = rankscale(&["export", &t, "--otf2", "-o", &path_str(&archive)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("lasted past the start of their rank's next call"),
        "{}",
        text(&out.stderr)
    );
    let back = dir.join("back.trace");
    let out = rankscale(&[
        "import",
        "--format",
        "otf2",
        &path_str(&archive.join("traces.otf2")),
        "-o",
        &path_str(&back),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (a, b) = (
        trace::TraceFile::read(&trace).unwrap(),
        trace::TraceFile::read(&back).unwrap(),
    );
    for rank in 0..4 {
        assert!(
            common::expansion(&a, rank) == common::expansion(&b, rank),
            "rank {rank}'s calls changed through OTF2"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Unpacks a published tarball into `dir`, or says why not (the shared
/// copy is missing).
fn unpack_published(name: &str, dir: &Path) -> bool {
    let tarball = common::root()
        .join("../shared/third-party/hpc-mpi-traces")
        .join(name);
    if !tarball.exists() {
        eprintln!("skipped: {} not found", tarball.display());
        return false;
    }
    let untar = std::process::Command::new("tar")
        .arg("xf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(untar.success(), "tar xf {}", tarball.display());
    true
}

/// A collective as [`collectives`] compares it.
type Coll = (Op, Option<i32>, i64, i64, Vec<i64>);

/// Every rank's collectives of a trace but barriers (which move no
/// bytes): call, root, and bytes of both buffers and of each per-rank
/// count.
fn collectives(file: &trace::TraceFile) -> Vec<Vec<Coll>> {
    let b = |t: Option<trace::Transfer>| t.map_or(0, |t| t.count * t.dsize);
    file.trace
        .ranks()
        .iter()
        .map(|r| {
            file.trace
                .rank_trace(r)
                .unwrap()
                .expand()
                .filter(|e| e.op.family() == trace::Family::Collective && e.op != Op::Barrier)
                .map(|e| {
                    let d = e.recv.map_or(1, |t| t.dsize);
                    let counts = e.recv_counts.iter().map(|&c| c * d).collect();
                    (e.op, e.root, b(e.send), b(e.recv), counts)
                })
                .collect()
        })
        .collect()
}

/// The published SMG2000 run at 128 ranks exists twice: as the Score-P
/// OTF2 archive (`otf2-smg2000-128.tar.xz`) and as the authors' text
/// files made from it (`smg128.tar.xz`). The two imports read the
/// collectives' arguments by different rules (the archive's totals with
/// Score-P's byte rules per record; the text files' totals by fitting
/// every rank's record of a call), so each is the other's oracle: every
/// rank's collectives, roots and bytes must be the same, and the
/// archive's import must pass `check` (before the byte rules, its
/// Allgatherv had no per-rank counts and its Allreduce 128 times its
/// bytes).
#[test]
fn the_published_otf2_archive_reads_as_its_text_files() {
    let dir = common::scratch("published-smg128");
    if !unpack_published("otf2-smg2000-128.tar.xz", &dir)
        || !unpack_published("smg128.tar.xz", &dir)
    {
        return;
    }
    let archive = dir.join("otf2 files/smg2000-128-processes/traces.otf2");
    let (a, b) = (dir.join("otf2.trace"), dir.join("text.trace"));
    for (format, input, out) in [
        ("otf2", archive, &a),
        ("pertext", dir.join("traces/smg128"), &b),
    ] {
        let o = rankscale(&[
            "import",
            "--format",
            format,
            &path_str(&input),
            "-o",
            &path_str(out),
        ]);
        assert!(o.status.success(), "{format}: {}", text(&o.stderr));
    }
    let o = rankscale(&["check", &path_str(&a)]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let (from_otf2, from_text) = (
        collectives(&trace::TraceFile::read(&a).unwrap()),
        collectives(&trace::TraceFile::read(&b).unwrap()),
    );
    assert_eq!(from_otf2.len(), 128);
    assert_eq!(from_otf2.len(), from_text.len());
    for (r, (x, y)) in from_otf2.iter().zip(&from_text).enumerate() {
        assert_eq!(x, y, "rank {r}'s collectives");
    }
    // The one Allgatherv: 7 ints from each rank.
    let gv: Vec<_> = from_otf2[0]
        .iter()
        .filter(|c| c.0 == Op::Allgatherv)
        .collect();
    assert_eq!(gv.len(), 1);
    assert_eq!((gv[0].2, &gv[0].4), (28, &vec![28i64; 128]));
    same_run_same_waits(&a, &b);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The timing side of the same comparison: the archive and the text files
/// are one run, so `analyze` finds the same wait states in both. Each
/// metric of the text files (which record no barrier, so Wait at Barrier
/// is left out) and the critical path agree within 5 % (measured: Late
/// Sender 318.5 against 318.4 s, Late Sender / Wrong Order 635.6 against
/// 635.0 s, Wait at N×N 244.8 s both, critical path 11.63 against
/// 12.11 s; docs/ANALYSIS.md gives the reasons for what is left), and
/// both are real amounts, not an agreement of zeros.
fn same_run_same_waits(archive: &Path, texts: &Path) {
    let analyse = |t: &Path| -> serde_json::Value {
        let o = rankscale(&["analyze", "--json", &path_str(t)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("analyze --json prints JSON")
    };
    let (x, y) = (analyse(archive), analyse(texts));
    let metric = |r: &serde_json::Value, name: &str| -> f64 {
        let m = r["wait_states"]["metrics"].as_array().unwrap();
        let m = m.iter().find(|m| m["metric"] == name).unwrap();
        m["ns"].as_f64().unwrap() / 1e9
    };
    let close = |what: &str, a: f64, b: f64, at_least: f64| {
        assert!(a >= at_least && b >= at_least, "{what}: {a} s and {b} s");
        assert!(
            (a - b).abs() <= 0.05 * a.max(b),
            "{what}: archive {a} s, text files {b} s"
        );
    };
    for (name, at_least) in [
        ("late_sender", 100.0),
        ("late_sender_wrong_order", 100.0),
        ("wait_at_nxn", 100.0),
    ] {
        close(name, metric(&x, name), metric(&y, name), at_least);
    }
    let path = |r: &serde_json::Value| r["delays"]["path_ns"].as_f64().unwrap() / 1e9;
    close("critical path", path(&x), path(&y), 10.0);
    // Neither path is longer than its run.
    for r in [&x, &y] {
        assert!(r["delays"]["path_ns"].as_i64() <= r["run_ns"].as_i64());
    }
}
