//! The trace file through the command line, as a user meets it:
//! `rankscale trace -o` around a real `mpirun`, the size of a stencil's
//! trace as ranks and iterations grow, `show` / `--json` / `stats` on a real
//! trace checked against values computed from the program, and clear errors
//! (never panics) for files that are not, or no longer, good traces.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// `rankscale trace -o OUT -- mpirun.openmpi -n NP ... stencil ARGS`.
fn trace_stencil(np: usize, args: &str, out: &Path) -> Output {
    trace_stencil_k(np, args, out, None)
}

/// [`trace_stencil`] with `RANKSCALE_SLOW_K` set to `k` when given.
fn trace_stencil_k(np: usize, args: &str, out: &Path, k: Option<usize>) -> Output {
    trace_program_k(np, "stencil", args, out, k)
}

/// `rankscale trace` of the test program `name` on Open MPI, with
/// `RANKSCALE_SLOW_K` set to `k` when given.
fn trace_program_k(np: usize, name: &str, args: &str, out: &Path, k: Option<usize>) -> Output {
    let k = k.map(|k| k.to_string());
    let env: Vec<(&str, &str)> = k.iter().map(|k| ("RANKSCALE_SLOW_K", k.as_str())).collect();
    trace_program_env(np, name, args, out, &env)
}

/// `rankscale trace` of the test program `name` on Open MPI, with the
/// tracer's variables `env`.
fn trace_program_env(
    np: usize,
    name: &str,
    args: &str,
    out: &Path,
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
    cmd.envs(env.iter().copied());
    cmd.args(["trace", "-o", &out.display().to_string(), "--"]);
    cmd.args(launcher("openmpi", np));
    cmd.arg(program("openmpi", name));
    cmd.args(args.split_whitespace());
    openmpi_env(&mut cmd);
    // The shim is found next to the rankscale binary of the same build
    // directory layout; tests run the MPICH build, so name Open MPI's.
    cmd.env("RANKSCALE_SHIM", shim("openmpi"));
    let out = cmd.output().expect("run rankscale trace");
    assert!(
        out.status.success(),
        "rankscale trace failed: {}",
        text(&out.stderr)
    );
    out
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// The checkpoint writer's trace (issue 36: every rank writes its block
/// of a file with `MPI_File_write_at_all` every 5th iteration) keeps one
/// structure whatever the ranks and iterations: the same call nodes, loops
/// and parameter variants at 4 and 64 ranks and at 100 and 1,000
/// iterations, since a block's offset is stored relative to the rank's
/// block; and its size (the median of three runs) grows at most 5 % from
/// 100 to 1,000 iterations and 10 % from 4 to 64 ranks (issue 36's
/// bounds). What grows is timing: the
/// start-up gap before the first calls, which differs by rank on a shared
/// machine (timing by ranks, as for the stencil below), and the bins of
/// the distributions that hold the run's time (the others are one bin in
/// a file, `trace::timing::NEGLIGIBLE_SHARE`). Measured (2026-12-07, Open
/// MPI, reservoirs off, six runs at each size): 1,405 to 1,458 bytes at 4
/// ranks, 1,460 to 1,558 at 64 (+0.1 to +7.7 % run by run); 1,431 and
/// 1,466 at 1,000 iterations. The structure must not move at all.
#[test]
fn checkpoint_trace_structure_is_flat_in_ranks_and_iterations() {
    if !mpis().contains(&"openmpi") {
        return;
    }
    let dir = scratch("io-size");
    let data = dir.join("ckpt.dat").display().to_string();
    let file = |np: usize, it: u32, run: u32| -> PathBuf {
        let f = dir.join(format!("ckpt.{np}.{it}.{run}.trace"));
        trace_program_k(
            np,
            "io_checkpoint",
            &format!("{it} 5 256 {data}"),
            &f,
            Some(0),
        );
        f
    };
    // Three runs of each: a size is a sample of the timing's noise, and
    // the bounds are on the median run.
    let median = |np: usize, it: u32| -> (PathBuf, f64) {
        let mut runs: Vec<(u64, PathBuf)> = (0..3)
            .map(|run| {
                let f = file(np, it, run);
                (size(&f), f)
            })
            .collect();
        runs.sort();
        let (bytes, f) = runs.swap_remove(1);
        (f, bytes as f64)
    };
    let ((a, sa), (b, sb), (c, sc)) = (median(4, 100), median(4, 1000), median(64, 100));
    let structure = |p: &Path| {
        let out = rankscale(&["stats", &p.display().to_string()]);
        let t = text(&out.stdout);
        t.lines()
            .find(|l| l.starts_with("structure:"))
            .unwrap_or_else(|| panic!("no structure line: {t}"))
            .to_string()
    };
    // `stats`' MPI-IO section against the program's own description: 20
    // checkpoints of 256 ints by each of 4 ranks, then rank 0 reads the
    // 4 KiB file once; the bandwidth is the bytes over the ranks' mean
    // time in the calls, whose sum is the section's time.
    let st = text(&rankscale(&["stats", &a.display().to_string()]).stdout);
    let row = |call: &str| -> Vec<String> {
        st.lines()
            .skip_while(|l| !l.starts_with("MPI-IO per call site"))
            .find(|l| l.starts_with(call))
            .unwrap_or_else(|| panic!("no {call} row: {st}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let w = row("MPI_File_write_at_all ");
    assert_eq!(&w[3..5], ["80", "4"], "{w:?}");
    assert_eq!(&w[6..8], ["81920", "0"], "{w:?}");
    let (ms, mbps): (f64, f64) = (w[5].parse().unwrap(), w[8].parse().unwrap());
    let want = 81920.0 * 4.0 / (ms * 1e6) * 1e3;
    assert!((mbps - want).abs() <= 0.05 + 1e-3 * want, "{w:?}: {want}");
    let r = row("MPI_File_read_at ");
    assert_eq!(&r[3..5], ["1", "1"], "{r:?}");
    assert_eq!(&r[6..8], ["0", "4096"], "{r:?}");
    assert!(
        st.contains("MPI-IO in all: 81920 bytes written, 4096 bytes read"),
        "{st}"
    );
    assert_eq!(structure(&a), structure(&b), "100 vs 1000 iterations");
    assert_eq!(structure(&a), structure(&c), "4 vs 64 ranks");
    eprintln!(
        "checkpoint writer, median of 3: 4 ranks 100 iterations {sa} B, 1000 iterations {sb} B, 64 ranks {sc} B"
    );
    assert!(sb <= 1.05 * sa, "iterations: {sb} vs {sa}");
    assert!(sc <= 1.10 * sa, "ranks: {sc} vs {sa}");
    assert!(
        !dir.join("ckpt.dat").exists(),
        "the program deletes its file"
    );
}

/// A file's path is private unless the run says otherwise: without
/// `RANKSCALE_IO_PATHS` neither `show` nor `stats` can name it, and with
/// `RANKSCALE_IO_PATHS=1` (`rankscale trace --io-paths`) both do, under the hash the events record, which
/// the test computes itself (FNV-1a, 64 bits) from the path it gave.
#[test]
fn file_paths_are_kept_only_when_the_run_asks() {
    if !mpis().contains(&"openmpi") {
        return;
    }
    let dir = scratch("io-paths");
    let data = dir.join("private-ckpt.dat").display().to_string();
    let fnv = data.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let (plain, kept) = (dir.join("plain.trace"), dir.join("kept.trace"));
    let args = format!("10 5 64 {data}");
    trace_program_env(4, "io_checkpoint", &args, &plain, &[]);
    trace_program_env(
        4,
        "io_checkpoint",
        &args,
        &kept,
        &[("RANKSCALE_IO_PATHS", "1")],
    );
    // The command line names the file too here, as the user typed it; the
    // question is whether the trace adds it anywhere else.
    let out = |cmd: &str, p: &Path| {
        text(&rankscale(&[cmd, &p.display().to_string()]).stdout)
            .lines()
            .filter(|l| !l.starts_with("command:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let line = format!("file {fnv:x}: {data}");
    for cmd in ["show", "stats"] {
        let (without, with) = (out(cmd, &plain), out(cmd, &kept));
        assert!(
            !without.contains("private-ckpt"),
            "{cmd} without: {without}"
        );
        assert!(with.contains(&line), "{cmd} with: no {line:?} in {with}");
    }
    assert!(out("stats", &plain).contains("their paths were not kept"));
    // The events name the file by the same hash in both runs.
    let expand =
        |p: &Path| text(&rankscale(&["show", "--expand", "3", &p.display().to_string()]).stdout);
    let open = format!("/{fnv:x}");
    let param = format!("file.path={fnv:x}");
    for p in [&plain, &kept] {
        let x = expand(p);
        assert!(
            x.lines()
                .any(|l| l.contains("File_open") && l.contains(&open)),
            "{x}"
        );
        // `show` names it in the same hex, in the opens and the delete.
        let shown = out("show", p);
        for op in ["File_open", "File_delete"] {
            assert!(
                shown
                    .lines()
                    .any(|l| l.trim_start().starts_with(op) && l.contains(&param)),
                "no {op} with {param} in {shown}"
            );
        }
    }
}

#[test]
fn stencil_trace_size_is_flat_in_ranks_and_iterations() {
    if !mpis().contains(&"openmpi") {
        return;
    }
    let dir = scratch("size");
    // The structure's size, without the slow-instance reservoirs (K = 0);
    // they are bounded separately below.
    let file_k = |np: usize, it: u32, k: usize| -> PathBuf {
        let f = dir.join(format!("stencil.{np}.{it}.{k}.trace"));
        let out = trace_stencil_k(np, &format!("-d 2 -i {it} -s weak -n 8"), &f, Some(k));
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("bytes; {np} ranks")),
            "no summary line: {err}"
        );
        f
    };
    let file = |np: usize, it: u32| file_k(np, it, 0);
    let (a4, a16, a64) = (file(4, 10_000), file(16, 10_000), file(64, 10_000));
    let (b4, b64) = (file(4, 100), file(64, 100));
    let s = |p: &PathBuf| size(p) as f64;
    eprintln!(
        "stencil 2D, 10000 iterations: 4 ranks {} B, 16 ranks {} B, 64 ranks {} B; \
         100 iterations: 4 ranks {} B, 64 ranks {} B",
        s(&a4),
        s(&a16),
        s(&a64),
        s(&b4),
        s(&b64)
    );
    // Measured: +20% from 4 to 64 ranks (1,836 against 2,235 bytes), within
    // 6% from 100 to 10000 iterations. Most of the growth is the first call
    // after MPI_Init (MPI_Comm_rank, recorded without detail), whose
    // computation is the start-up gap, which differs by rank: its timing
    // by ranks takes about 300 bytes at 64 ranks. The bounds leave room
    // for timing noise.
    for (what, big, small) in [("16 vs 4 ranks", &a16, &a4), ("64 vs 4 ranks", &a64, &a4)] {
        assert!(
            s(big) <= 1.3 * s(small),
            "{what}: {} vs {} bytes",
            s(big),
            s(small)
        );
    }
    for (what, x, y) in [("4 ranks", &a4, &b4), ("64 ranks", &a64, &b64)] {
        let r = s(x) / s(y);
        assert!(
            (0.85..=1.15).contains(&r),
            "{what}: 10000 vs 100 iterations: {} vs {} bytes",
            s(x),
            s(y)
        );
    }
    // The reservoirs (K = 8 slowest executions per call, each a rank, a
    // position and a time) add at most K entries of a few varints per call
    // node, whatever the ranks and iterations.
    let calls = |p: &PathBuf| {
        let f = trace::TraceFile::read(p).unwrap();
        let mut n = 0u64;
        let mut stack: Vec<&trace::MNode> = f.trace.nodes().iter().collect();
        while let Some(node) = stack.pop() {
            match node {
                trace::MNode::Event(_) => n += 1,
                trace::MNode::Loop(l) => stack.extend(l.body()),
                _ => {}
            }
        }
        n
    };
    for (np, without) in [(4, &a4), (64, &a64)] {
        let with = file_k(np, 10_000, 8);
        let extra = s(&with) - s(without);
        let bound = (calls(without) * 8 * 16) as f64;
        eprintln!("reservoirs at {np} ranks: {extra} bytes (bound {bound})");
        assert!(extra <= bound, "{np} ranks: reservoirs add {extra} bytes");
    }
    // And the 10000-iteration, 64-rank trace is still exact: spot-check the
    // event count against the program's formula (Init, Comm_rank,
    // Comm_size, Dims_create, 4 Irecv + 4 Isend + Waitall per iteration, an
    // Allreduce every 10, Reduce, Finalize).
    let json = rankscale(&["show", "--json", &a64.display().to_string()]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["events"], 64 * (3 + 3 + 10_000 * 9 + 1_000));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn show_json_and_stats_describe_a_real_trace() {
    if !mpis().contains(&"openmpi") {
        return;
    }
    let dir = scratch("cli-show");
    let f = dir.join("stencil.trace");
    trace_stencil(9, "-d 2 -i 20 -s weak -n 8", &f);
    let path = f.display().to_string();

    let show = rankscale(&["show", &path]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    let out = text(&show.stdout);
    assert!(out.contains("9 ranks <1 0 9 1>"), "{out}");
    assert!(out.contains("loop x"), "{out}");
    assert!(out.contains("Isend ranks <1 0 9 1>"), "{out}");
    assert!(out.contains("Open MPI"), "{out}");

    let json = rankscale(&["show", "--json", &path]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("valid JSON");
    // Init, Comm_rank, Comm_size, Dims_create (the three recorded without
    // detail), 20 × (4 Irecv, 4 Isend, Waitall), 2 Allreduce, Reduce,
    // Finalize.
    assert_eq!(v["events"], 9 * (3 + 3 + 20 * 9 + 2));
    assert_eq!(v["ranks"], "<1 0 9 1>");
    assert_eq!(v["meta"]["world_size"], 9);
    assert!(!v["nodes"].as_array().unwrap().is_empty());

    let stats = rankscale(&["stats", &path]);
    assert!(stats.status.success(), "{}", text(&stats.stderr));
    let out = text(&stats.stdout);
    // Every rank sends 4 faces of 8 doubles per iteration.
    let bytes = 9 * 20 * 4 * 8 * 8;
    assert!(out.contains(&format!("{bytes} bytes in all")), "{out}");
    assert!(out.contains("compression ratio"), "{out}");
    assert!(out.contains("Waitall"), "{out}");
    // Call sites are named by function and source line (the Waitall's,
    // read from the source).
    let src = std::fs::read_to_string(common::root().join("tests/programs/c/stencil.c")).unwrap();
    let line = 1 + src
        .lines()
        .position(|l| l.contains("MPI_Waitall(nreq, reqs"))
        .expect("the stencil's Waitall");
    let site = format!("main stencil.c:{line} ");
    assert!(out.contains(&site), "the Waitall's site {site:?}: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_files_get_clear_errors() {
    use compress::{Compressor, Config};
    use trace::{Event, Op, TraceFile};
    let dir = scratch("cli-bad");
    let mut c = Compressor::new(0, Config::default());
    for i in 0..100 {
        let mut e = Event::new(if i % 3 == 0 {
            Op::Barrier
        } else {
            Op::Allreduce
        });
        e.site = 1 + i % 3;
        c.push(&e).unwrap();
    }
    let good = TraceFile {
        meta: trace::Meta {
            world_size: 1,
            ..Default::default()
        },
        trace: compress::merge::from_rank(&c.into_trace().unwrap()),
        timelines: Vec::new(),
        series: Vec::new(),
    }
    .to_bytes()
    .unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let mut newer = good.clone();
    let next = trace::file::VERSION + 1;
    newer[8..12].copy_from_slice(&next.to_le_bytes());
    let newer_msg = format!("version {next} is newer");
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    let cases = [
        (
            write("text.trace", b"Init site=0\n"),
            "not a rankscale trace",
        ),
        (
            write("short.trace", &good[..good.len() / 2]),
            "corrupted trace file",
        ),
        (write("flipped.trace", &flipped), "corrupted trace file"),
        (write("newer.trace", &newer), newer_msg.as_str()),
        (
            dir.join("missing.trace").display().to_string(),
            "No such file",
        ),
    ];
    for (path, want) in &cases {
        for args in [
            vec!["show", path],
            vec!["stats", path],
            vec!["show", "--expand", "0", path],
        ] {
            let out = rankscale(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(
                err.contains(want) && err.contains("rankscale: error"),
                "{args:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{args:?}: {err}");
        }
    }
    let p = write("good.trace", &good);
    let out = rankscale(&["show", "--expand", "5", &p]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("rank 5 is not in this trace"),
        "{}",
        text(&out.stderr)
    );
    let out = rankscale(&["show", "--expand", "0", &p]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).lines().count(), 100);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `show --json` names MPI's sentinels as `show` does ("ANY", "NULL"),
/// writes a file's path hash in hex, lists the values of a sequence that has
/// no short form, and writes no number that a reader holding numbers as
/// doubles (JavaScript) would round: the encoding's sentinels sit at
/// -2^63, where all three would read as one. The truth is the events the
/// trace was made of.
#[test]
fn show_json_is_exact_for_every_reader() {
    use trace::{CommId, Event, Op, Peer, Tag, Transfer};
    let dir = scratch("cli-json");
    let file = dir.join("sentinels.trace");
    let path_hash = 0x9abc_def0_1234_5678_u64 as i64;
    // Allreduce counts without a short form: a hash of the iteration.
    let counts: Vec<i64> = (0..50u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as i64 + 1)
        .collect();
    let xfer = |peer: Peer, tag: Tag, count: i64| {
        Some(Transfer {
            peer,
            tag,
            count,
            dsize: 8,
            dtype: trace::Datatype::UNKNOWN,
        })
    };
    two_rank_trace(&file, |rank| {
        let mut out = Vec::new();
        for &c in &counts {
            let mut e = Event::new(Op::Allreduce);
            e.comm = CommId::WORLD;
            e.comm_rank = rank;
            e.send = xfer(Peer::Null, Tag::Value(0), c);
            e.recv = xfer(Peer::Null, Tag::Value(0), c);
            out.push(e);
        }
        let mut recv = Event::new(Op::Recv);
        recv.comm = CommId::WORLD;
        recv.comm_rank = rank;
        recv.recv = xfer(Peer::Any, Tag::Any, 1);
        out.push(recv);
        let mut send = Event::new(Op::Send);
        send.comm = CommId::WORLD;
        send.comm_rank = rank;
        send.send = xfer(Peer::Null, Tag::Value(3), 1);
        out.push(send);
        let mut delete = Event::new(Op::FileDelete);
        delete.value = Some(path_hash);
        out.push(delete);
        out
    });
    let out = rankscale(&["show", "--json", &file.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");

    // No number beyond 2^53 in magnitude outside the exact encodings.
    fn walk(v: &serde_json::Value, at: &str, bad: &mut Vec<String>) {
        match v {
            serde_json::Value::Number(n) => {
                let big = n.as_i64().map(|i| i.unsigned_abs() > 1 << 53);
                if big.unwrap_or_else(|| n.as_u64().is_some_and(|u| u > 1 << 53)) {
                    bad.push(format!("{at} = {n}"));
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{at}[{i}]"), bad);
                }
            }
            serde_json::Value::Object(o) => {
                for (k, x) in o.iter().filter(|(k, _)| k.as_str() != "encoded") {
                    walk(x, &format!("{at}.{k}"), bad);
                }
            }
            _ => {}
        }
    }
    let mut bad = Vec::new();
    walk(&v, "", &mut bad);
    assert!(bad.is_empty(), "numbers a double rounds: {bad:?}");

    // Each call's parameters, by its operation.
    let nodes = v["nodes"].as_array().unwrap();
    let mut calls: Vec<&serde_json::Value> = Vec::new();
    fn events<'a>(n: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
        if n["kind"] == "loop" {
            for b in n["body"].as_array().unwrap() {
                events(b, out);
            }
        } else {
            out.push(n);
        }
    }
    for n in nodes {
        events(n, &mut calls);
    }
    let param = |op: &str, name: &str| -> serde_json::Value {
        let e = calls
            .iter()
            .find(|e| e["call"]["op"] == op)
            .unwrap_or_else(|| panic!("no {op} in {v}"));
        let p = e["params"][name].as_array().expect(name);
        assert_eq!(p.len(), 1, "{op} {name}: one variant for both ranks: {p:?}");
        p[0]["values"].clone()
    };
    assert_eq!(param("Recv", "recv.peer")["value"], "ANY");
    assert_eq!(param("Recv", "recv.tag")["value"], "ANY");
    assert_eq!(param("Send", "send.peer")["value"], "NULL");
    assert_eq!(
        param("File_delete", "file.path")["value"],
        format!("{path_hash:x}")
    );
    let c = param("Allreduce", "send.count");
    assert_eq!(c["form"], "blocks", "{c}");
    assert_eq!(c["len"], counts.len());
    assert_eq!(c["values"], serde_json::json!(counts));
    let _ = std::fs::remove_dir_all(&dir);
}
