//! Hostile traces: well-formed files that declare huge sizes (world sizes
//! to 2^32, loop counts to 2^63, lists of 10^9 and 2^63 entries, nesting
//! that multiplies out past 2^64, bytes after the data). Every subcommand
//! and replay must exit 1 with a clear error within 10 s and 1 GB each,
//! never panic, abort, hang or fill the disk. Then the structure-aware
//! generator of the fuzz target runs for a fixed time in process.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compress::hostile::{self, Hostile};

/// Seconds a command may take on a hostile trace.
const SECONDS: u64 = 10;
/// Resident bytes a command may reach.
const MAX_RSS: u64 = 1 << 30;

/// The largest resident set of any child this process has waited for.
fn children_max_rss() -> u64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the buffer it is given,
    // which lives for the call.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, u.as_mut_ptr()) } == 0;
    assert!(ok, "getrusage");
    // SAFETY: getrusage succeeded, so the struct is initialised.
    let u = unsafe { u.assume_init() };
    u64::try_from(u.ru_maxrss).unwrap_or(0) * 1024
}

/// Runs `cmd` and checks what every command must do with a hostile
/// trace: exit 1 (not a signal) with `rankscale: error` or the tracer's
/// error line, no panic, within [`SECONDS`].
fn refuses(mut cmd: Command, what: &str) -> String {
    let t0 = Instant::now();
    cmd.stdout(std::process::Stdio::null());
    let job = run_with_timeout(cmd, SECONDS + 20);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(SECONDS),
        "{what}: took {took:?}: {}",
        job.stderr
    );
    assert!(!job.stderr.contains("panicked"), "{what}: {}", job.stderr);
    assert!(
        job.code.is_some_and(|c| c != 0),
        "{what}: must exit non-zero, got {:?}: {}",
        job.code,
        job.stderr
    );
    assert!(job.stderr.contains("error"), "{what}: {}", job.stderr);
    job.stderr
}

/// Every subcommand that reads a trace, with its arguments around `t`
/// (outputs go to `out`).
fn commands(t: &str, out: &Path) -> Vec<Vec<String>> {
    let o = |n: &str| out.join(n).display().to_string();
    let v: Vec<Vec<&str>> = vec![
        vec!["show", t],
        vec!["show", "--json", t],
        vec!["show", "--expand", "0", t],
        vec!["stats", t],
        vec!["check", t],
        vec!["check", "--ranks", "0-3", t],
        vec!["simulate", t],
        vec!["analyze", t],
        vec!["topology", t],
    ];
    let mut v: Vec<Vec<String>> = v
        .into_iter()
        .map(|a| a.into_iter().map(String::from).collect())
        .collect();
    for a in [
        vec!["codegen".into(), t.into(), "-o".into(), o("b.c")],
        vec!["report".into(), t.into(), "-o".into(), o("r.html")],
        vec![
            "export".into(),
            t.into(),
            "--perfetto".into(),
            "-o".into(),
            o("p.json"),
        ],
        vec![
            "export".into(),
            t.into(),
            "--otf2".into(),
            "-o".into(),
            o("otf2"),
        ],
        vec![
            "extrap".into(),
            "-o".into(),
            o("x.trace"),
            "--ranks".into(),
            "16".into(),
            t.into(),
            t.into(),
        ],
    ] {
        v.push(a);
    }
    v
}

#[test]
fn every_tool_refuses_a_hostile_trace_quickly_and_within_a_gigabyte() {
    let dir = scratch("hostile");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let cases = hostile::catalogue();
    assert!(cases.len() >= 18, "{cases:?}");
    for (name, h) in &cases {
        let path = dir.join(format!("{}.trace", name.replace([' ', '^'], "_")));
        std::fs::write(&path, hostile::bytes(*h)).unwrap();
        let t = path.display().to_string();
        for args in commands(&t, &out) {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
            cmd.args(&args);
            refuses(cmd, &format!("{name}: rankscale {}", args.join(" ")));
        }
        // Replay, under a real mpirun, with every MPI built here.
        for imp in mpis() {
            let cmd = mpirun_command(
                imp,
                2,
                &replay_bin(imp),
                std::slice::from_ref(&t),
                &untraced(),
            );
            refuses(cmd, &format!("{name}: {imp} replay"));
        }
        // Nothing was written for a refused trace.
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(left.is_empty(), "{name}: outputs left: {left:?}");
    }
    let rss = children_max_rss();
    eprintln!(
        "{} hostile traces, every command: largest resident set {:.1} MB",
        cases.len(),
        rss as f64 / 1e6
    );
    assert!(rss < MAX_RSS, "a command reached {rss} resident bytes");
}

/// A range of ranks to 2^32 on the command line is refused before it is
/// expanded; a legal trace nested as deep as the reader allows is read by
/// every tool without a crash.
#[test]
fn rank_ranges_and_deep_nesting_never_crash() {
    let dir = scratch("hostile-ranges");
    let base = dir.join("base.trace");
    hostile::base().write(&base).unwrap();
    let b = base.display().to_string();
    for list in ["0-4294967295", "4294967295", "0,4"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
        cmd.args(["check", "--ranks", list, &b]);
        let err = refuses(cmd, &format!("check --ranks {list}"));
        assert!(err.contains("not in the trace's 4 ranks"), "{err}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
        let p = dir.join("p.json").display().to_string();
        cmd.args(["export", &b, "--perfetto", "--ranks", list, "-o", &p]);
        refuses(cmd, &format!("export --ranks {list}"));
    }
    // The budgets, from the command line and the environment: the base
    // trace expands to 24 events on 4 ranks.
    let run = |args: &[&str], env: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
        cmd.args(args).arg(&b);
        if let Some(v) = env {
            cmd.env("RANKSCALE_EVENT_BUDGET", v);
        }
        cmd.output().unwrap()
    };
    let o = run(&["show", "--event-budget", "10"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("expand to 24 events"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        run(&["show", "--event-budget", "24"], None)
            .status
            .success()
    );
    assert_eq!(run(&["stats"], Some("23")).status.code(), Some(1));
    assert!(run(&["stats"], Some("1K")).status.success());
    let o = run(&["show"], Some("lots"));
    assert!(
        text(&o.stderr).contains("RANKSCALE_EVENT_BUDGET=\"lots\""),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["show", "--max-memory", "255"], None);
    assert!(
        text(&o.stderr).contains("world_size 4 needs about 256"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        run(&["show", "--max-memory", "NaN"], None).status.code(),
        Some(2)
    );
    // The deepest nesting the reader takes, one iteration per loop: a
    // small legal trace that recursive walks must survive.
    let mut depth = 255;
    let deep = loop {
        let h = Hostile::Nesting { depth, count: 1 };
        let bytes = hostile::bytes(h);
        if trace::TraceFile::from_bytes(&bytes).is_ok() {
            break bytes;
        }
        depth -= 1;
        assert!(depth > 100, "no deep nesting reads back");
    };
    eprintln!("deepest readable nesting: {depth} loops around the Barrier loop");
    let path = dir.join("deep.trace");
    std::fs::write(&path, deep).unwrap();
    let t = path.display().to_string();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    for args in commands(&t, &out) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
        cmd.args(&args).stdout(std::process::Stdio::null());
        let job = run_with_timeout(cmd, 60);
        let what = format!("deep nesting: rankscale {}", args.join(" "));
        assert!(
            job.code.is_some(),
            "{what}: killed by a signal: {}",
            job.stderr
        );
        assert!(!job.stderr.contains("panicked"), "{what}: {}", job.stderr);
        assert!(
            job.code == Some(0) || job.stderr.contains("error"),
            "{what}: {:?} {}",
            job.code,
            job.stderr
        );
    }
}

/// The structure-aware fuzz target's generator (`compress/fuzz`,
/// `hostile_trace`) for a fixed time in process, under a seeded PRNG: any
/// trace it builds is refused with an error or read and expanded within
/// its budgets, never a panic. (The coverage-guided run of the same
/// generator is `cargo +nightly fuzz run hostile_trace`.)
#[test]
fn the_structure_aware_generator_finds_nothing_in_a_fixed_time() {
    let secs: u64 = std::env::var("RANKSCALE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut rng = trace::SplitMix64::new(0x5eed_0f40_5711_e5aa);
    let t0 = Instant::now();
    let (mut runs, mut accepted) = (0u64, 0u64);
    while t0.elapsed() < Duration::from_secs(secs) {
        let data: Vec<u8> = (0..24).map(|_| rng.next_u64() as u8).collect();
        let bytes = hostile::from_fuzz(&data);
        let read = std::panic::catch_unwind(|| hostile::exercise(&bytes));
        assert!(read.is_ok(), "input {data:02x?} panicked");
        accepted += u64::from(read.unwrap());
        runs += 1;
    }
    eprintln!("{runs} structure-aware traces in {secs} s, {accepted} read and expanded");
    assert!(runs > 100, "{runs}");
}
