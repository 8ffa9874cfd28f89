//! Shared harness of the MPI integration tests: where the built artifacts
//! are, how to launch real `mpirun` jobs on each implementation, and how to
//! read raw logs.
//!
//! The artifacts (both shims in release mode and the test programs built
//! with each implementation's wrappers) are made by `scripts/test.sh` before
//! `cargo test` runs. A missing artifact fails the test with the command to
//! run: a test that silently skips would hide a broken build.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use trace::{Event, Op};

/// `tests/programs/manifest.toml`: the program runs and, for each, the
/// hand-counted calls per operation and rank (see that file's header).
#[derive(serde::Deserialize)]
pub struct Manifest {
    pub run: Vec<Run>,
}

impl Manifest {
    /// The runs under implementation `imp`: a run that names one MPI (an
    /// MPI 4 program; Open MPI 4.1 lacks its calls) is left out under the
    /// other, and the test says so once.
    pub fn runs(&self, imp: &str) -> Vec<&Run> {
        self.run
            .iter()
            .filter(|r| match &r.mpi {
                Some(only) if only != imp => {
                    eprintln!("{imp}: {} skipped (its calls need {only})", r.name);
                    false
                }
                _ => true,
            })
            .collect()
    }
}

/// One program run of the manifest.
#[derive(serde::Deserialize)]
pub struct Run {
    pub name: String,
    pub binary: String,
    #[serde(default)]
    pub args: Vec<String>,
    pub np: usize,
    /// The one MPI the run is for (`"mpich"`: MPI 4 calls), if not both.
    #[serde(default)]
    pub mpi: Option<String>,
    pub expect: BTreeMap<String, toml::Value>,
}

/// Reads the manifest.
pub fn manifest() -> Manifest {
    let path = root().join("tests/programs/manifest.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The MPI implementations under test (`RANKSCALE_TEST_MPIS`, default both).
pub fn mpis() -> Vec<&'static str> {
    let want = std::env::var("RANKSCALE_TEST_MPIS").unwrap_or_else(|_| "mpich openmpi".into());
    ["mpich", "openmpi"]
        .into_iter()
        .filter(|m| want.split_whitespace().any(|w| w == *m))
        .collect()
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn must_exist(p: PathBuf) -> PathBuf {
    assert!(
        p.exists(),
        "{} is missing: run `scripts/test.sh` (it builds both shims and the MPI test programs)",
        p.display()
    );
    p
}

/// The release shim of one implementation.
pub fn shim(imp: &str) -> PathBuf {
    must_exist(
        root()
            .join("target")
            .join(imp)
            .join("release/libpmpi_shim.so"),
    )
}

/// A test program built with one implementation's wrappers.
pub fn program(imp: &str, name: &str) -> PathBuf {
    must_exist(root().join("target/programs").join(imp).join(name))
}

/// A scratch directory, fresh for each call.
pub fn scratch(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = root()
        .join("target/test-scratch")
        .join(format!("{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The result of one MPI job.
#[derive(Debug)]
pub struct Job {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Options of one launch.
#[derive(Default, Clone)]
pub struct Launch<'a> {
    pub env: Vec<(&'a str, String)>,
    /// Preload this implementation's shim.
    pub traced: bool,
    pub timeout_s: u64,
    /// The working directory (a program's input file beside it).
    pub cwd: Option<PathBuf>,
}

/// Runs `np` ranks of `bin` with real `mpirun` of `imp`.
pub fn mpirun(imp: &str, np: usize, bin: &Path, args: &[String], opt: &Launch) -> Job {
    run_with_timeout(
        mpirun_command(imp, np, bin, args, opt),
        opt.timeout_s.max(1),
    )
}

/// [`mpirun`] that returns `Err("timed out after N s")` instead of failing
/// the test when the job outlives `opt.timeout_s`.
pub fn try_mpirun(
    imp: &str,
    np: usize,
    bin: &Path,
    args: &[String],
    opt: &Launch,
) -> Result<Job, String> {
    try_run_with_timeout(
        mpirun_command(imp, np, bin, args, opt),
        opt.timeout_s.max(1),
    )
}

/// The launcher and its options for `np` ranks of `imp`, as every test
/// launches: MPICH without its network modules (shared memory only), Open
/// MPI oversubscribed, unbound, on shared memory, with yielding waits.
/// Open MPI also needs the environment of [`openmpi_env`].
pub fn launcher(imp: &str, np: usize) -> Vec<String> {
    let n = np.to_string();
    let v: Vec<&str> = match imp {
        "mpich" => vec![
            "mpirun.mpich",
            "-n",
            &n,
            "-genv",
            "MPIR_CVAR_NOLOCAL",
            "1",
            "-genv",
            "UCX_TLS",
            "self,sm",
        ],
        "openmpi" => vec![
            "mpirun.openmpi",
            "-n",
            &n,
            "--oversubscribe",
            "--bind-to",
            "none",
            "--mca",
            "pml",
            "ob1",
            "--mca",
            "btl",
            "self,vader",
            "--mca",
            "mpi_yield_when_idle",
            "1",
        ],
        other => panic!("unknown MPI {other}"),
    };
    v.into_iter().map(String::from).collect()
}

/// The environment Open MPI's launcher needs here: running as root, and
/// no PCI or Linux I/O topology probing (slow on this machine).
pub fn openmpi_env(cmd: &mut Command) {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("HWLOC_COMPONENTS", "-pci,-linuxio");
}

/// The `mpirun` command [`mpirun`] runs, for a test that launches it its
/// own way (under `timeout`, say).
pub fn mpirun_command(imp: &str, np: usize, bin: &Path, args: &[String], opt: &Launch) -> Command {
    let mut env = opt.env.clone();
    if opt.traced {
        env.push(("LD_PRELOAD", shim(imp).display().to_string()));
    }
    let l = launcher(imp, np);
    let mut cmd = Command::new(&l[0]);
    cmd.args(&l[1..]);
    for (k, v) in &env {
        if imp == "mpich" {
            cmd.args(["-genv", k, v]);
        } else {
            cmd.arg("-x").arg(format!("{k}={v}"));
        }
    }
    if imp == "openmpi" {
        openmpi_env(&mut cmd);
    }
    cmd.arg(bin).args(args);
    if let Some(dir) = &opt.cwd {
        cmd.current_dir(dir);
    }
    cmd
}

/// Runs a command, killing it (and failing the test) after `secs`.
pub fn run_with_timeout(cmd: Command, secs: u64) -> Job {
    let desc = format!("{cmd:?}");
    try_run_with_timeout(cmd, secs).unwrap_or_else(|e| panic!("{e}: {desc}"))
}

/// Runs a command; after `secs` kills it with every process it started
/// (the ranks of an `mpirun`, which would otherwise spin on) and returns
/// `Err("timed out after N s")`, for a harness that lists a hanging
/// program instead of stopping at it.
pub fn try_run_with_timeout(mut cmd: Command, secs: u64) -> Result<Job, String> {
    let start = Instant::now();
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {desc}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = start + Duration::from_secs(secs);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            kill_tree(child.id());
            let _ = child.wait();
            return Err(format!("timed out after {secs} s"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(Job {
        code: status.code(),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        elapsed: start.elapsed(),
    })
}

/// Kills process `pid` and all its descendants (found through `/proc`):
/// killing `mpirun` alone can leave its ranks running.
fn kill_tree(pid: u32) {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let p: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            // "pid (comm) state ppid ...": comm may hold spaces.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((p, ppid))
        })
        .collect();
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|&&(_, pp)| pp == p).map(|&(c, _)| c));
        i += 1;
    }
    let _ = Command::new("kill")
        .arg("-KILL")
        .args(tree.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

/// Reads every rank's raw log from a raw directory, which must hold
/// exactly `np` files named `rank-NNNNN.txt`.
pub fn try_raw_logs(dir: &Path, np: usize) -> Result<Vec<Vec<Event>>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let want: Vec<String> = (0..np as i32).map(trace::raw::rank_file_name).collect();
    if names != want {
        return Err(format!(
            "raw directory {} holds {names:?}, want one file per rank ({np})",
            dir.display()
        ));
    }
    want.iter()
        .map(|n| trace::raw::read_log(&dir.join(n)).map_err(|e| e.to_string()))
        .collect()
}

/// [`try_raw_logs`], failing the test on error.
pub fn raw_logs(dir: &Path, np: usize) -> Vec<Vec<Event>> {
    try_raw_logs(dir, np).unwrap_or_else(|e| panic!("{e}"))
}

/// Calls per operation in one rank's log.
pub fn counts(events: &[Event]) -> BTreeMap<Op, u64> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.op).or_default() += 1;
    }
    m
}

/// The text of one rank's raw log file.
pub fn raw_text(dir: &Path, rank: i32) -> String {
    std::fs::read_to_string(dir.join(trace::raw::rank_file_name(rank))).unwrap()
}

/// The bytes the writes of a run's raw logs (in `raw`, ranks `0..np`)
/// asked MPI to write: each `File_write*` or `File_iwrite*` event's count
/// times its datatype size. The truth replay's and a benchmark's MPI-IO
/// are held to.
pub fn bytes_written(raw: &Path, np: usize) -> i64 {
    let mut written = 0;
    for r in 0..np as i32 {
        for l in raw_text(raw, r).lines() {
            if l.starts_with("File_write") || l.starts_with("File_iwrite") {
                let send = l.split(' ').find_map(|f| f.strip_prefix("send=")).unwrap();
                let mut p = send.split(['/', ':']);
                let n: i64 = p.next().unwrap().parse().unwrap();
                let d: i64 = p.next().unwrap().parse().unwrap();
                written += n * d;
            }
        }
    }
    written
}

/// The names of the files in `dir`, sorted: what a scratch or application
/// directory holds after a run.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The launch options for a traced run writing raw logs into `dir`.
/// MPICH busy-polls, so its traced runs use the shim's yielding waits
/// (which record the same events, see `yield_mode.rs`).
pub fn traced_raw(imp: &str, dir: &Path) -> Launch<'static> {
    let mut env = vec![("RANKSCALE_RAW", dir.display().to_string())];
    if imp == "mpich" {
        env.push(("RANKSCALE_YIELD", "1".to_string()));
    }
    Launch {
        env,
        traced: true,
        timeout_s: 180,
        cwd: None,
    }
}

/// The launch options for an untraced run.
pub fn untraced() -> Launch<'static> {
    Launch {
        env: vec![],
        traced: false,
        timeout_s: 180,
        cwd: None,
    }
}

/// Request bookkeeping is sound: every request a completion, Start or
/// Request_free names was created before and is still live; a completion
/// lists each request once; a completed non-persistent request is gone.
pub fn requests_are_consistent(events: &[Event]) -> Result<(), String> {
    let mut live: HashMap<u64, bool> = HashMap::new(); // id -> persistent
    for (i, e) in events.iter().enumerate() {
        let line = i + 1;
        for r in e.reqs.iter().chain(&e.done) {
            if !live.contains_key(&r.0) {
                return Err(format!(
                    "line {line} ({}): request {} is not live",
                    e.op.name(),
                    r.0
                ));
            }
        }
        let mut once = std::collections::BTreeSet::new();
        if let Some(r) = e.done.iter().find(|r| !once.insert(r.0)) {
            return Err(format!(
                "line {line} ({}): request {} completed twice",
                e.op.name(),
                r.0
            ));
        }
        for r in &e.done {
            if live.get(&r.0) == Some(&false) {
                live.remove(&r.0);
            }
        }
        if e.op == Op::RequestFree {
            for r in &e.reqs {
                live.remove(&r.0);
            }
        }
        if let Some(r) = e.req {
            // Every `_init` call makes a persistent request (point-to-point,
            // collective or partitioned), as the shim records them.
            let persistent = e.op.name().ends_with("_init");
            if live.insert(r.0, persistent).is_some() {
                return Err(format!("line {line}: request id {} reused", r.0));
            }
        }
    }
    Ok(())
}

/// Runs the `rankscale` command line built with these tests.
pub fn rankscale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rankscale"))
        .args(args)
        .output()
        .expect("run rankscale")
}

/// A command's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every event of `rank` in a trace file, one raw-log line each (what
/// `rankscale show FILE --expand RANK` prints), for comparing traces.
pub fn expansion(file: &trace::TraceFile, rank: u32) -> Vec<String> {
    let t = file.trace.rank_trace(rank).unwrap();
    let mut ex = t.expand();
    let lines: Vec<String> = ex.by_ref().map(|e| trace::raw::event_line(&e)).collect();
    assert!(!ex.is_broken(), "rank {rank}'s expansion broke");
    lines
}

/// A raw log without its calls recorded without detail
/// ([`trace::Event::without_detail`]), as replay issues it: replay passes
/// over those calls and leaves the requests they made out of the completion
/// calls (its own housekeeping calls go through PMPI and are not
/// recorded). The other requests are numbered again in creation order,
/// since a passed-over call took an id in the application's run. Calls
/// that returned an error (`error=`) are left out too: replay passes over
/// them (they made no request).
pub fn detailed(text: &str) -> String {
    let generic = |l: &str| {
        trace::raw::parse_line(l, 1).is_ok_and(|e| e.without_detail())
            || l.split(' ').any(|f| f.starts_with("error="))
    };
    // Ids the passed-over calls took; every other id moves down by the
    // number of those below it (whatever order threads recorded in).
    let mut passed: Vec<u64> = text
        .lines()
        .filter(|l| generic(l))
        .filter_map(|l| {
            l.split(' ')
                .find_map(|f| f.strip_prefix("req=")?.parse().ok())
        })
        .collect();
    passed.sort_unstable();
    let renumber = |id: u64| -> Option<u64> {
        match passed.binary_search(&id) {
            Ok(_) => None,
            Err(below) => Some(id - below as u64),
        }
    };
    let ids = |v: &str| -> Vec<String> {
        v.split(',')
            .filter_map(|r| renumber(r.parse().ok()?).map(|n| n.to_string()))
            .collect()
    };
    let mut out = Vec::new();
    for l in text.lines().filter(|l| !generic(l)) {
        let mut fields = Vec::new();
        for f in l.split(' ') {
            let (key, v) = f.split_once('=').unwrap_or((f, ""));
            let list = match key {
                "req" | "reqs" | "done" => ids(v),
                "match" => v
                    .split(',')
                    .filter_map(|m| match m.split_once(':') {
                        Some((r, rest)) if r != "-" => {
                            Some(format!("{}:{rest}", renumber(r.parse().ok()?)?))
                        }
                        _ => Some(m.to_string()),
                    })
                    .collect(),
                _ => {
                    fields.push(f.to_string());
                    continue;
                }
            };
            if !list.is_empty() {
                fields.push(format!("{key}={}", list.join(",")));
            }
        }
        out.push(fields.join(" "));
    }
    out.join("\n")
}

/// A raw log without the path hashes of its files (`File_open`'s
/// `file=AMODE/HASH` keeps its access mode; `File_delete`'s `value=` goes):
/// replay makes its files in a scratch directory under names of its own
/// (`replay/src/exec/io.rs`), so the paths a tracer sees in a replay are
/// not the application's.
pub fn unnamed(text: &str) -> String {
    text.lines()
        .map(|l| {
            let delete = l.starts_with("File_delete ");
            l.split(' ')
                .filter(|f| !(delete && f.starts_with("value=")))
                .map(
                    |f| match f.strip_prefix("file=").and_then(|v| v.split_once('/')) {
                        Some((amode, _)) => format!("file={amode}/-"),
                        None => f.to_string(),
                    },
                )
                .collect::<Vec<_>>()
                .join(" ")
        })
        .map(|l| l + "\n")
        .collect()
}

/// A raw log without the fields named in `ignored`. When `flag=` is
/// ignored, so is the size a probe found (the count in `recv=` of a Probe,
/// Iprobe, Mprobe or Improbe: which message it found is an outcome, and a
/// test probe that found nothing has zero).
pub fn without(text: &str, ignored: &[&str]) -> String {
    let outcomes = ignored.contains(&"flag=");
    text.lines()
        .map(|l| {
            let probe = outcomes
                && matches!(
                    l.split(' ').next(),
                    Some("Probe" | "Iprobe" | "Mprobe" | "Improbe")
                );
            l.split(' ')
                .filter(|f| !ignored.iter().any(|i| f.starts_with(i)))
                .map(|f| match f.strip_prefix("recv=") {
                    Some(v) if probe => {
                        let mut p: Vec<&str> = v.split('/').collect();
                        if p.len() > 2 {
                            p[2] = "?";
                        }
                        format!("recv={}", p.join("/"))
                    }
                    _ => f.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of a raw log grouped by thread (`thread=N`, absent for the
/// main thread), each thread's in its order.
pub fn by_thread(text: &str) -> String {
    let mut lines: Vec<(u32, &str)> = text
        .lines()
        .map(|l| {
            let t = l
                .split(' ')
                .find_map(|f| f.strip_prefix("thread="))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            (t, l)
        })
        .collect();
    lines.sort_by_key(|&(t, _)| t);
    lines.iter().map(|&(_, l)| l).collect::<Vec<_>>().join("\n")
}

/// The first rank whose raw log in `b` differs from its raw log in `a`,
/// beyond the fields in `ignored` (threads compared each in its order).
pub fn first_raw_difference(a: &Path, b: &Path, np: usize, ignored: &[&str]) -> Option<String> {
    (0..np as i32).find_map(|rank| {
        let x = by_thread(&without(&unnamed(&detailed(&raw_text(a, rank))), ignored));
        let y = by_thread(&without(&unnamed(&detailed(&raw_text(b, rank))), ignored));
        (x != y).then(|| {
            let first = x.lines().zip(y.lines()).position(|(p, q)| p != q);
            let line = first.and_then(|i| Some((x.lines().nth(i)?, y.lines().nth(i)?)));
            format!(
                "rank {rank}: differs from the original ({} vs {} events; first difference: {line:?})",
                x.lines().count(),
                y.lines().count()
            )
        })
    })
}

/// Writes `trace` as a C benchmark (`rankscale codegen`) into `dir/bench.c`
/// and builds it with `mpicc.IMP -O2 -Wall -Werror` into `dir/bench`.
/// Returns the binary, or what failed.
pub fn codegen_build(imp: &str, trace: &Path, dir: &Path) -> Result<PathBuf, String> {
    codegen_build_with(imp, trace, dir, &[])
}

/// [`codegen_build`] with more options for `rankscale codegen` (`--seed`).
pub fn codegen_build_with(
    imp: &str,
    trace: &Path,
    dir: &Path,
    options: &[&str],
) -> Result<PathBuf, String> {
    let c = dir.join("bench.c");
    let (t, o) = (trace.display().to_string(), c.display().to_string());
    let mut args = vec!["codegen", t.as_str(), "-o", o.as_str()];
    args.extend_from_slice(options);
    let out = rankscale(&args);
    if !out.status.success() {
        return Err(format!("codegen failed: {}", text(&out.stderr)));
    }
    let bin = dir.join("bench");
    let cc = Command::new(format!("mpicc.{imp}"))
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&bin)
        .arg(&c)
        .arg("-lm")
        .output()
        .map_err(|e| format!("mpicc.{imp}: {e}"))?;
    if !cc.status.success() {
        return Err(format!(
            "mpicc.{imp} -Wall -Werror refused {}: {}",
            c.display(),
            text(&cc.stderr)
        ));
    }
    Ok(bin)
}

/// A generated benchmark's traced run.
pub struct BenchRun {
    /// The directory of its raw logs.
    pub raw: PathBuf,
    /// Whether it reported calls with racy outcomes (`Waitany`, `Test*`,
    /// `Win_test`) that completed otherwise than in the trace, as replay
    /// reports latency races.
    pub drifted: bool,
}

/// [`codegen_build`], then the benchmark run traced on `np` ranks with
/// `args`, writing its raw logs into `dir/bench-raw`. Returns that run, or
/// what failed.
pub fn codegen_run(
    imp: &str,
    trace: &Path,
    np: usize,
    dir: &Path,
    args: &[&str],
) -> Result<BenchRun, String> {
    let bin = codegen_build(imp, trace, dir)?;
    let raw = dir.join("bench-raw");
    let mut o = traced_raw(imp, &raw);
    o.env.push(("RANKSCALE_TRACE", "0".into()));
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let job = mpirun(imp, np, &bin, &args, &o);
    if job.code != Some(0) {
        return Err(format!(
            "the benchmark failed ({:?}): {}",
            job.code, job.stderr
        ));
    }
    let drifted = job.stderr.contains("completed otherwise than in the trace");
    Ok(BenchRun { raw, drifted })
}

/// What the raw-log comparison of a replay with its application ignores:
/// the call site (`site=` names replay's own code), and for a replay that
/// reported latency races also the outcomes of racy calls.
pub fn ignored(latency: bool) -> &'static [&'static str] {
    if latency {
        &["site=", "reqs=", "done=", "match=", "flag=", "msg="]
    } else {
        &["site="]
    }
}

/// The first rank whose raw log differs between the original run
/// (`dir/orig`) and its replay (`dir/replay`), beyond `ignored`.
pub fn first_difference(dir: &Path, np: usize, ignored: &[&str]) -> Option<String> {
    first_raw_difference(&dir.join("orig"), &dir.join("replay"), np, ignored)
}

/// How a replay compared with its application run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Identical,
    /// Identical but for outcomes the replay reported as latency races.
    LatencyRaces,
}

/// The `replay` binary built for `imp` (release), which replays a trace
/// under the same implementation as the application ran.
pub fn replay_bin(imp: &str) -> PathBuf {
    root().join(format!("target/{imp}/release/replay"))
}

/// The stages of [`stages`], in the order they run: a harness reports the
/// first one a program fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// The application under the tracer, writing raw logs and a trace.
    Traced,
    /// `rankscale check` of that trace.
    Check,
    /// The trace replayed under the tracer, its raw logs against the
    /// application's.
    Replay,
}

/// The stage of [`stages`] that failed first, and the whole story.
#[derive(Debug, Clone)]
pub struct Failed {
    pub stage: Stage,
    pub detail: String,
}

/// Options of [`stages`]; the default is what `tests/replay.rs` checks of
/// its programs (no `rankscale check`, exit status 0 only).
#[derive(Default, Clone)]
pub struct Stages<'a> {
    /// Also prove the trace consistent with `rankscale check`.
    pub check: bool,
    /// The traced run passes only if this accepts its standard output
    /// too (MPICH's test programs print " No Errors").
    pub verdict: Option<fn(&str) -> bool>,
    /// Seconds each run may take (0: the default of [`traced_raw`]).
    pub timeout_s: u64,
    /// More environment for both runs.
    pub env: Vec<(&'a str, String)>,
    /// Run both jobs in the scratch directory (for programs that write
    /// files), not in the project root.
    pub in_scratch: bool,
}

/// The traced life of one program: run `np` ranks of `bin args` under the
/// tracer with raw logs and a trace file, optionally `rankscale check` the
/// trace, replay it under the tracer with `mpirun -n NP replay FILE`, and
/// compare the replay's raw log of every rank with the application's
/// (see `tests/replay.rs` for what is ignored and why). Returns how the
/// replay compared, or the first stage that failed. The scratch directory
/// of a failed program stays, for a look at its raw logs.
pub fn stages(
    imp: &str,
    name: &str,
    np: usize,
    bin: &Path,
    args: &[String],
    opt: &Stages,
) -> Result<Outcome, Failed> {
    let fail = |stage, detail: String| Failed { stage, detail };
    let dir = scratch(&format!("{imp}-replay-{name}"));
    let launch = |raw: &str, trace: String| {
        let mut l = traced_raw(imp, &dir.join(raw));
        l.env.push(("RANKSCALE_TRACE", trace));
        l.env.extend(opt.env.iter().cloned());
        if opt.timeout_s > 0 {
            l.timeout_s = opt.timeout_s;
        }
        if opt.in_scratch {
            l.cwd = Some(dir.clone());
        }
        l
    };
    let trace = dir.join("app.trace");
    let orig = launch("orig", trace.display().to_string());
    let job = try_mpirun(imp, np, bin, args, &orig)
        .map_err(|e| fail(Stage::Traced, format!("the original run {e}")))?;
    if job.code != Some(0) {
        return Err(fail(
            Stage::Traced,
            format!(
                "the original run failed ({:?}): {}{}",
                job.code, job.stderr, job.stdout
            ),
        ));
    }
    if opt.verdict.is_some_and(|passed| !passed(&job.stdout)) {
        return Err(fail(
            Stage::Traced,
            format!(
                "the original run exited 0 but its output says it failed: {}{}",
                job.stdout, job.stderr
            ),
        ));
    }
    let raw = |d: &str| {
        let p = dir.join(d);
        if p.exists() {
            try_raw_logs(&p, np).map(|_| ())
        } else {
            Err(format!(
                "the tracer wrote no raw logs ({} missing)",
                p.display()
            ))
        }
    };
    raw("orig").map_err(|e| fail(Stage::Traced, e))?;
    if opt.check {
        let out = rankscale(&["check", &trace.display().to_string()]);
        if !out.status.success() {
            return Err(fail(
                Stage::Check,
                format!("{}{}", text(&out.stdout), text(&out.stderr)),
            ));
        }
    }
    let rep = launch("replay", "0".into());
    let rjob = try_mpirun(
        imp,
        np,
        &replay_bin(imp),
        &[trace.display().to_string()],
        &rep,
    )
    .map_err(|e| fail(Stage::Replay, format!("replay {e}")))?;
    if rjob.code != Some(0) {
        return Err(fail(
            Stage::Replay,
            format!(
                "replay failed ({:?}): {}{}",
                rjob.code, rjob.stderr, rjob.stdout
            ),
        ));
    }
    if !rjob.stdout.contains("replay of") {
        return Err(fail(
            Stage::Replay,
            format!("no replay report: {}", rjob.stdout),
        ));
    }
    raw("replay").map_err(|e| fail(Stage::Replay, e))?;
    let outcome = match first_difference(&dir, np, ignored(false)) {
        None => Outcome::Identical,
        Some(d) if !rjob.stdout.contains("latency races not forced") => {
            return Err(fail(Stage::Replay, d));
        }
        Some(d) => match first_difference(&dir, np, ignored(true)) {
            None => {
                eprintln!("{imp} {name}: latency races ({d})");
                Outcome::LatencyRaces
            }
            Some(d) => {
                return Err(fail(
                    Stage::Replay,
                    format!("(beyond its latency races) {d}"),
                ));
            }
        },
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok(outcome)
}

/// [`stages`] as `tests/replay.rs` runs its programs: the traced run, its
/// replay and the comparison, the error naming the implementation and the
/// program.
pub fn check(
    imp: &str,
    name: &str,
    np: usize,
    bin: &Path,
    args: &[String],
) -> Result<Outcome, String> {
    stages(imp, name, np, bin, args, &Stages::default())
        .map_err(|f| format!("{imp} {name}: {}", f.detail))
}

/// Whether a predicted figure is within `tol` (a fraction) of a real run's,
/// on a machine that cannot repeat a run's time: two shared cores, where
/// sleeps overshoot and ranks are descheduled (a traced run of the same
/// 9-rank exchange measured 178 ms once and 196 ms on another machine).
/// `first` is the real run the prediction came from; when it misses, `again`
/// runs the program once or twice more, and the prediction passes if it is
/// within `tol` of the range the real runs span: the machine's own spread is
/// not the predictor's error. Returns the verdict and the real figures.
pub fn within_real_runs(
    pred: f64,
    tol: f64,
    first: f64,
    mut again: impl FnMut() -> f64,
) -> (bool, Vec<f64>) {
    let mut real = vec![first];
    loop {
        let lo = real.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = real.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if pred >= lo * (1.0 - tol) && pred <= hi * (1.0 + tol) {
            return (true, real);
        }
        if real.len() == 3 {
            return (false, real);
        }
        real.push(again());
    }
}

/// A trace of `ranks` (each rank with its events), compressed and merged
/// as the tracer does, written to `file` with `meta`.
pub fn write_trace(
    file: &Path,
    meta: trace::Meta,
    ranks: impl IntoIterator<Item = (i32, Vec<Event>)>,
) {
    use compress::{Compressor, Config};
    let mut merged: Option<trace::MergedTrace> = None;
    for (rank, events) in ranks {
        let mut c = Compressor::new(rank, Config::default());
        for e in &events {
            c.push(e).unwrap();
        }
        let t = compress::merge::from_rank(&c.into_trace().unwrap());
        merged = Some(match merged {
            Some(m) => compress::merge::traces(m, t),
            None => t,
        });
    }
    trace::TraceFile {
        meta,
        trace: merged.expect("ranks"),
        timelines: Vec::new(),
        series: Vec::new(),
    }
    .write(file)
    .unwrap();
}

/// A two-rank trace of `calls(rank)` after Init, written to `file`.
pub fn two_rank_trace(file: &Path, calls: impl Fn(i32) -> Vec<Event>) {
    let meta = trace::Meta {
        world_size: 2,
        ..trace::Meta::default()
    };
    write_trace(
        file,
        meta,
        (0..2).map(|rank| {
            let mut events = vec![Event::new(Op::Init)];
            events.extend(calls(rank));
            events.push(Event::new(Op::Finalize));
            (rank, events)
        }),
    );
}

/// Rewrites the trace `src` of a ring of PSCW epochs (`pscw_ring`) into
/// `dst` as if every exposure epoch's `Win_test` loop had come back false
/// once, then true: each rank's tests then come after its own
/// `Win_complete` and miss its origin's, in every iteration, which the
/// application's latency allows (rarely) and no order of calls reproduces
/// (replay's and codegen's holds form a cycle). Everything else is the
/// traced run's.
pub fn every_test_missed_once(src: &Path, dst: &Path) {
    let file = trace::TraceFile::read(src).expect("a trace");
    let ranks = file.trace.ranks().iter().map(|rank| {
        let mut events = Vec::new();
        let mut in_tests = false;
        for e in file.trace.rank_trace(rank).expect("a rank").expand() {
            if e.op != Op::WinTest {
                in_tests = false;
                events.push(e);
                continue;
            }
            if std::mem::replace(&mut in_tests, true) {
                continue;
            }
            for flag in [false, true] {
                let mut t = e.clone();
                t.flag = Some(flag);
                events.push(t);
            }
        }
        (rank as i32, events)
    });
    write_trace(dst, file.meta.clone(), ranks);
}
