//! Never lose a file: every command that writes an output refuses one of
//! its own inputs, a device node or a directory, and a write that fails
//! (a full disk, a failed run) leaves the old output byte-identical and no
//! temporary file behind. Each case runs the real command line on real
//! traces of a real `mpirun`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// The implementation these tests trace with: Open MPI where built (fast
/// when oversubscribed), else MPICH.
fn imp() -> Option<&'static str> {
    let m = mpis();
    ["openmpi", "mpich"].into_iter().find(|i| m.contains(i))
}

/// `rankscale trace -o out -- mpirun -n np PROG ARGS`, returning the
/// command's output whatever its exit.
fn rankscale_trace(imp: &str, np: usize, out: &Path, prog: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
    cmd.args(["trace", "-o", &out.display().to_string(), "--"]);
    cmd.args(launcher(imp, np));
    cmd.arg(prog).args(args);
    openmpi_env(&mut cmd);
    cmd.env("RANKSCALE_SHIM", shim(imp));
    if imp == "mpich" {
        cmd.env("RANKSCALE_YIELD", "1");
    }
    cmd.output().expect("run rankscale trace")
}

/// A 1D stencil's trace at `np` ranks (weak scaling, so that traces at
/// several sizes extrapolate).
fn stencil_trace(imp: &str, np: usize, out: &Path) {
    let o = rankscale_trace(
        imp,
        np,
        out,
        &program(imp, "stencil"),
        &["-d", "1", "-i", "4", "-s", "weak", "-n", "8"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Asserts that a command failed with a clear error naming `path`, and
/// without a panic.
fn refused(o: &Output, path: &Path, what: &str) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{what} must fail: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(
        err.contains(&path.display().to_string()),
        "{what}: the message must name {}: {err}",
        path.display()
    );
    err
}

/// The temporary files left in `dir`.
fn partials(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial"))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Three stencil traces (2, 4 and 8 ranks) and a directory of rank files,
/// in a fresh directory.
struct Inputs {
    dir: PathBuf,
    traces: Vec<PathBuf>,
    rank_dir: PathBuf,
}

fn inputs(imp: &str, tag: &str) -> Inputs {
    let dir = scratch(tag);
    let traces: Vec<PathBuf> = [2, 4, 8]
        .iter()
        .map(|&np| {
            let f = dir.join(format!("st.{np}.trace"));
            stencil_trace(imp, np, &f);
            f
        })
        .collect();
    // A TRACE.d as a killed job leaves it: a rank file is a trace file
    // of the ranks it holds, so the 8-rank trace stands as `rank-0`.
    let rank_dir = dir.join("kept.trace.d");
    std::fs::create_dir_all(&rank_dir).unwrap();
    std::fs::copy(&traces[2], rank_dir.join("rank-0")).unwrap();
    Inputs {
        dir,
        traces,
        rank_dir,
    }
}

/// Every command whose output is one of its inputs: refused with a message
/// naming the path, exit 1, and the input byte-identical afterwards, also
/// when the output reaches the input through a symbolic or a hard link.
#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let Some(imp) = imp() else { return };
    let i = inputs(imp, "out-is-in");
    let (a, b, c) = (&i.traces[0], &i.traces[1], &i.traces[2]);
    let soft = i.dir.join("soft.trace");
    std::os::unix::fs::symlink(a, &soft).unwrap();
    let hard = i.dir.join("hard.trace");
    std::fs::hard_link(a, &hard).unwrap();
    let rank0 = i.rank_dir.join("rank-0");
    let pertext = root().join("tests/data/pertext/small");
    let copy = i.dir.join("pertext");
    std::fs::create_dir_all(&copy).unwrap();
    for r in 0..4 {
        let n = format!("Process{r}.txt");
        std::fs::copy(pertext.join(&n), copy.join(&n)).unwrap();
    }
    let process0 = copy.join("Process0.txt");
    let cases: Vec<(Vec<&str>, &Path, &Path)> = vec![
        (vec!["export", s(a), "--perfetto", "-o", s(a)], a, a),
        (vec!["export", s(a), "--otf2", "-o", s(a)], a, a),
        (vec!["codegen", s(a), "-o", s(a)], a, a),
        (vec!["report", s(a), "-o", s(a)], a, a),
        (vec!["report", s(a), "-o", s(&soft)], &soft, a),
        (vec!["codegen", s(a), "-o", s(&hard)], &hard, a),
        (
            vec!["extrap", "-o", s(c), "--ranks", "16", s(a), s(b), s(c)],
            c,
            c,
        ),
        (
            vec!["merge", s(&i.rank_dir), "-o", s(&rank0)],
            &rank0,
            &rank0,
        ),
        (
            vec![
                "import",
                "--format",
                "pertext",
                s(&copy),
                "-o",
                s(&process0),
            ],
            &process0,
            &process0,
        ),
    ];
    for (args, out, input) in cases {
        let before = std::fs::read(input).unwrap();
        let o = rankscale(&args);
        let err = refused(&o, out, &args.join(" "));
        assert!(
            err.contains("input") || err.contains("not a directory"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(input).unwrap(),
            before,
            "{args:?} changed its input"
        );
    }
    assert!(partials(&i.dir).is_empty(), "{:?}", partials(&i.dir));
    // The same commands to a new path work, so the refusals above are
    // about the path and nothing else.
    let fresh = i.dir.join("fresh.json");
    let o = rankscale(&["export", s(a), "--perfetto", "-o", s(&fresh)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = rankscale(&[
        "extrap",
        "-o",
        s(&i.dir.join("st.16.trace")),
        "--ranks",
        "16",
        s(a),
        s(b),
        s(c),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// `rankscale trace -o FILE` keeps the old FILE until the new trace is
/// complete: a launch that fails leaves it byte-identical, and an output
/// that names the traced program itself is refused before the launch.
#[test]
fn trace_keeps_the_old_trace_and_never_replaces_the_program() {
    let Some(imp) = imp() else { return };
    let dir = scratch("trace-keeps");
    let old = dir.join("app.trace");
    stencil_trace(imp, 2, &old);
    let before = std::fs::read(&old).unwrap();
    // The program exits with an error before MPI_Init (bad arguments).
    let o = rankscale_trace(imp, 2, &old, &program(imp, "stencil"), &["-d", "9"]);
    let err = refused(&o, &old, "a failing run");
    assert!(err.contains("earlier run"), "{err}");
    assert_eq!(
        std::fs::read(&old).unwrap(),
        before,
        "the old trace changed"
    );
    // The output is the program: refused, and the program is not run.
    let prog = dir.join("prog");
    std::fs::copy(program(imp, "stencil"), &prog).unwrap();
    let bin = std::fs::read(&prog).unwrap();
    let o = rankscale_trace(imp, 2, &prog, &prog, &["-d", "1", "-i", "2"]);
    let err = refused(&o, &prog, "-o naming the program");
    assert!(err.contains("input"), "{err}");
    assert_eq!(std::fs::read(&prog).unwrap(), bin, "the program changed");
    assert!(!dir.join("prog.d").exists(), "the job must not have run");
    // A good run replaces the old trace.
    let o = rankscale_trace(
        imp,
        4,
        &old,
        &program(imp, "stencil"),
        &["-d", "1", "-i", "2"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_ne!(std::fs::read(&old).unwrap(), before);
    assert!(partials(&dir).is_empty(), "{:?}", partials(&dir));
}

/// A character device made in a scratch directory (never one of /dev),
/// or `None` where this user may not make one.
fn device_node(dir: &Path) -> Option<PathBuf> {
    let node = dir.join("null-node");
    let ok = Command::new("mknod")
        .arg(&node)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("mknod is not permitted here: the device-node case cannot run");
        return None;
    }
    Some(node)
}

fn is_char_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

/// A device node (and a FIFO, and a directory) as output is refused by
/// every writer, the tracer's `RANKSCALE_TRACE` included, and stays what it
/// was; the traced application still runs correctly.
#[test]
fn a_device_node_or_fifo_as_output_is_refused() {
    let Some(imp) = imp() else { return };
    let i = inputs(imp, "device");
    let (a, b, c) = (&i.traces[0], &i.traces[1], &i.traces[2]);
    let fifo = i.dir.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let sub = i.dir.join("subdir");
    std::fs::create_dir_all(&sub).unwrap();
    let mut targets = vec![(fifo.clone(), "FIFO"), (sub.clone(), "directory")];
    let node = device_node(&i.dir);
    if let Some(n) = &node {
        targets.push((n.clone(), "character device"));
    }
    let pertext = root().join("tests/data/pertext/small");
    for (t, kind) in &targets {
        let cases: Vec<Vec<&str>> = vec![
            vec!["export", s(a), "--perfetto", "-o", s(t)],
            vec!["codegen", s(a), "-o", s(t)],
            vec!["report", s(a), "-o", s(t)],
            vec!["extrap", "-o", s(t), "--ranks", "16", s(a), s(b), s(c)],
            vec!["merge", s(&i.rank_dir), "-o", s(t)],
            vec!["import", "--format", "pertext", s(&pertext), "-o", s(t)],
        ];
        for args in cases {
            let o = rankscale(&args);
            let err = refused(&o, t, &args.join(" "));
            assert!(err.contains(kind), "{args:?}: {err}");
        }
        let o = rankscale_trace(imp, 2, t, &program(imp, "stencil"), &["-d", "1", "-i", "2"]);
        let err = refused(&o, t, "rankscale trace -o");
        assert!(err.contains(kind), "{err}");
    }
    {
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }
    assert!(std::fs::read_dir(&sub).unwrap().next().is_none());
    // The tracer itself, given the node as RANKSCALE_TRACE: one warning
    // per job, the application's output and exit unchanged, the node kept.
    if let Some(n) = &node {
        assert!(is_char_device(n));
        let a = ["-d".to_string(), "1".into(), "-i".into(), "3".into()];
        let bin = program(imp, "stencil");
        let plain = mpirun(imp, 2, &bin, &a, &untraced());
        let mut o = untraced();
        o.traced = true;
        o.env.push(("RANKSCALE_TRACE", n.display().to_string()));
        let traced = mpirun(imp, 2, &bin, &a, &o);
        assert_eq!(traced.code, Some(0), "{}", traced.stderr);
        assert_eq!(traced.stdout, plain.stdout);
        assert!(
            traced.stderr.contains("cannot write the trace file")
                && traced.stderr.contains("character device"),
            "{}",
            traced.stderr
        );
        assert!(is_char_device(n), "the tracer replaced the device node");
    }
}

/// Runs `rankscale ARGS` with a file-size limit of `kib` KiB (what a full
/// disk does to a writer: a write fails part-way, with SIGXFSZ ignored
/// so that the write returns an error instead of killing the process).
fn rankscale_limited(kib: u32, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {kib}; exec \"$@\""))
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_rankscale"))
        .args(args)
        .output()
        .expect("run bash")
}

/// A two-rank `pertext` trace of 4000 messages of scattered sizes, whose
/// imported trace is tens of KiB (the small hand-written one is too small
/// to cut with a file-size limit).
fn big_pertext(dir: &Path) -> PathBuf {
    let d = dir.join("pertext-big");
    std::fs::create_dir_all(&d).unwrap();
    let (mut send, mut recv) = (String::new(), String::new());
    for m in 0..4000u64 {
        let bytes = (m.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 65_536 + 1;
        let t = 1_000_000 + m * 10_000;
        send += &format!("Send 1 t1 {t} t2 {} t 1 l {bytes} m {m}\n", t + 2000);
        recv += &format!(
            "Recv 0 t1 {} t2 {} t 1 l {bytes} m {m}\n",
            t + 500,
            t + 4000
        );
    }
    std::fs::write(d.join("Process0.txt"), send).unwrap();
    std::fs::write(d.join("Process1.txt"), recv).unwrap();
    d
}

/// A write that fails part-way (the disk full): the command exits 1
/// naming the output, an old output is byte-identical, a new one is not
/// created, and no temporary file is left.
#[test]
fn a_full_disk_leaves_the_old_output_whole_and_no_partial_file() {
    let Some(imp) = imp() else { return };
    let i = inputs(imp, "full");
    let (a, b, c) = (&i.traces[0], &i.traces[1], &i.traces[2]);
    let out = i.dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let pertext = big_pertext(&i.dir);
    let html = out.join("r.html");
    let json = out.join("p.json");
    let bench = out.join("b.c");
    let x16 = out.join("x16.trace");
    let merged = out.join("m.trace");
    let imported = out.join("i.trace");
    let cases: Vec<Vec<&str>> = vec![
        vec!["report", s(c), "-o", s(&html)],
        vec!["export", s(c), "--perfetto", "-o", s(&json)],
        vec!["codegen", s(c), "-o", s(&bench)],
        vec!["extrap", "-o", s(&x16), "--ranks", "16", s(a), s(b), s(c)],
        vec!["merge", s(&i.rank_dir), "-o", s(&merged)],
        vec![
            "import",
            "--format",
            "pertext",
            s(&pertext),
            "-o",
            s(&imported),
        ],
    ];
    for args in &cases {
        let target = Path::new(args[args.iter().position(|x| *x == "-o").unwrap() + 1]);
        // Unlimited first: the output this command writes, and its size.
        let o = rankscale(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        let good = std::fs::read(target).unwrap();
        assert!(good.len() > 2, "{args:?}");
        // Half its size is allowed: the rewrite fails part-way.
        let kib = u32::try_from(good.len() / 2048).unwrap().max(1);
        if good.len() <= 1024 * kib as usize {
            eprintln!(
                "{args:?}: output of {} bytes is too small to cut",
                good.len()
            );
            continue;
        }
        let o = rankscale_limited(kib, args);
        let err = refused(&o, target, &format!("{args:?} on a full disk"));
        assert!(err.contains("cannot write"), "{args:?}: {err}");
        assert_eq!(std::fs::read(target).unwrap(), good, "{args:?}");
        assert!(partials(&out).is_empty(), "{args:?}: {:?}", partials(&out));
        // Without an old output, nothing is left at all.
        std::fs::remove_file(target).unwrap();
        let o = rankscale_limited(kib, args);
        refused(
            &o,
            target,
            &format!("{args:?} on a full disk, no old output"),
        );
        assert!(!target.exists(), "{args:?} left a file");
        assert!(partials(&out).is_empty(), "{args:?}: {:?}", partials(&out));
    }
}
