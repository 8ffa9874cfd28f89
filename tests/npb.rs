//! Extrapolation on the NAS Parallel Benchmarks 3.3-MPI, built as NPB is
//! meant to be built: one binary per rank count (`scripts/npb.sh`), so the
//! inputs come from different executables and align only by their call
//! sites' source locations.
//!
//! Each exact case traces the benchmark at small sizes and at a larger size
//! that is not an input, extrapolates the small traces to that size, and
//! compares every rank's events with the real run's, every field, call
//! sites included (compared by source location). Each code that rankscale
//! cannot extrapolate yet must be refused with a clear message, a non-zero
//! exit and no output file: never a silently wrong trace.
//!
//! Open MPI (yielding when idle, oversubscribed on the two cores). The
//! tests skip, saying so, when the NPB source is not beside the project.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use common::*;
use trace::TraceFile;

/// The implementation of the NPB runs (MPICH runs at 4 ranks only: it
/// busy-polls on the two cores).
const IMP: &str = "openmpi";

/// Builds the benchmark's binaries for `sizes`; `None` (the test skips)
/// when the NPB source is missing.
fn build(imp: &str, bench: &str, class: &str, sizes: &[usize]) -> Option<Vec<PathBuf>> {
    let mut cmd = Command::new(root().join("scripts/npb.sh"));
    cmd.args([imp, bench, class]);
    cmd.args(sizes.iter().map(usize::to_string));
    let out = cmd.output().expect("run scripts/npb.sh");
    match out.status.code() {
        Some(0) => Some(
            sizes
                .iter()
                .map(|n| root().join(format!("target/npb/{imp}/bin/{bench}.{class}.{n}")))
                .collect(),
        ),
        Some(3) => {
            eprintln!("skipped: {}", text(&out.stderr).trim());
            None
        }
        _ => panic!(
            "scripts/npb.sh {bench} {class} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        ),
    }
}

/// Runs `bin` on `n` ranks with the tracer, writing `trace` (and raw logs
/// into `raw` when given); the benchmark must verify.
fn trace(imp: &str, bin: &Path, n: usize, trace: &Path, raw: Option<&Path>) {
    trace_in(imp, bin, n, trace, raw, None);
}

/// The trace of the NPB binary `bin` (the benchmark's own input) on `n`
/// ranks, taken once per test process: several tests extrapolate from the
/// same small runs (CG S at 4, 8 and 16 ranks, say), and the run is the
/// same whichever test asks. A trace is only ever read, so sharing it
/// changes no test's inputs; the real runs the extrapolations are compared
/// with are never shared.
fn shared_trace(imp: &str, bin: &Path, n: usize) -> PathBuf {
    // By binary (one per implementation and size) and size.
    static TRACES: Mutex<BTreeMap<(PathBuf, usize), PathBuf>> = Mutex::new(BTreeMap::new());
    let key = (bin.to_path_buf(), n);
    let mut traces = TRACES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = traces.get(&key) {
        return f.clone();
    }
    let name = bin.file_name().unwrap().to_string_lossy().to_string();
    let f = scratch(&format!("npb-shared-{imp}-{name}")).join(format!("{name}.{n}.trace"));
    trace(imp, bin, n, &f, None);
    traces.insert(key, f.clone());
    f
}

/// [`trace`] in the directory `cwd` that holds the benchmark's input file
/// when given: a run of a custom size (fewer iterations) that NPB cannot
/// verify, so only its exit status is checked.
fn trace_in(imp: &str, bin: &Path, n: usize, trace: &Path, raw: Option<&Path>, cwd: Option<&Path>) {
    let mut o = untraced();
    o.cwd = cwd.map(Path::to_path_buf);
    o.traced = true;
    o.timeout_s = 300;
    o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
    if let Some(raw) = raw {
        o.env.push(("RANKSCALE_RAW", raw.display().to_string()));
    }
    if imp == "mpich" {
        o.env.push(("RANKSCALE_YIELD", "1".into()));
    }
    let job = mpirun(imp, n, bin, &[], &o);
    assert_eq!(job.code, Some(0), "{}: {}", bin.display(), job.stderr);
    assert!(
        cwd.is_some()
            || job
                .stdout
                .contains("Verification    =               SUCCESSFUL"),
        "{} on {n} ranks did not verify: {}",
        bin.display(),
        job.stdout
    );
}

/// Bytes sent per call and call site, over all ranks.
fn bytes_per_call(file: &TraceFile) -> BTreeMap<(String, u64), i64> {
    let mut out = BTreeMap::new();
    for r in file.trace.ranks().iter() {
        for e in file.trace.rank_trace(r).unwrap().expand() {
            *out.entry((e.op.name().to_string(), e.site)).or_insert(0) += e.bytes_sent();
        }
    }
    out
}

/// Runs `rankscale extrap`; `Ok(stdout)` or `Err(stderr)` with the exit
/// code checked (1) and no output file left behind.
fn extrap(out: &Path, ranks: usize, inputs: &[PathBuf], extra: &[&str]) -> Result<String, String> {
    let _ = std::fs::remove_file(out);
    let mut a: Vec<String> = vec!["extrap".into(), "-o".into(), out.display().to_string()];
    a.extend(["--ranks".into(), ranks.to_string()]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a.extend(inputs.iter().map(|f| f.display().to_string()));
    let o = rankscale(&a.iter().map(String::as_str).collect::<Vec<_>>());
    if o.status.success() {
        return Ok(text(&o.stdout));
    }
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "no output file on a refusal: {err}");
    Err(err)
}

/// A benchmark's input file: its name and its text for a rank count.
type InputFile<'a> = (&'a str, &'a dyn Fn(usize) -> String);

/// Traces `bench` at `inputs` and at `target`, every run reading the
/// input file `input` (its name, and its text for the run's size) when
/// given, extrapolates and compares. Returns the scratch directory, the
/// extrapolated and the real trace.
fn exact(
    imp: &str,
    bench: &str,
    class: &str,
    inputs: &[usize],
    target: usize,
    extra: &[&str],
    input: Option<InputFile>,
) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let mut sizes = inputs.to_vec();
    sizes.push(target);
    let bins = build(imp, bench, class, &sizes)?;
    let dir = scratch(&format!("npb-{imp}-{bench}"));
    // Each size runs in a directory of its own that holds its input file.
    let cwd = |n: usize| {
        input.map(|(name, text)| {
            let d = dir.join(format!("run-{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(name), text(n)).unwrap();
            d
        })
    };
    let mut files = Vec::new();
    for (bin, &n) in bins.iter().zip(inputs) {
        if input.is_none() {
            files.push(shared_trace(imp, bin, n));
            continue;
        }
        let f = dir.join(format!("{bench}.{class}.{n}.trace"));
        trace_in(imp, bin, n, &f, None, cwd(n).as_deref());
        files.push(f);
    }
    let real = dir.join(format!("{bench}.{class}.{target}.real.trace"));
    trace_in(
        imp,
        &bins[inputs.len()],
        target,
        &real,
        Some(&dir.join("real-raw")),
        cwd(target).as_deref(),
    );
    let out = dir.join(format!("{bench}.{class}.{target}.extrap.trace"));
    let t0 = Instant::now();
    let report = extrap(&out, target, &files, extra).unwrap_or_else(|e| panic!("{bench}: {e}"));
    eprintln!(
        "{bench}.{class} {inputs:?} -> {target}: extrapolated in {:.3} s\n{report}",
        t0.elapsed().as_secs_f64()
    );
    assert_same_run(bench, class, &out, &real, target);
    Some((dir, out, real))
}

/// Every rank of the extrapolated trace `out` equals the real run's at
/// `target` ranks, every field and call site, and the bytes per call agree.
fn assert_same_run(bench: &str, class: &str, out: &Path, real: &Path, target: usize) {
    let x = TraceFile::read(out).unwrap();
    let truth = TraceFile::read(real).unwrap();
    assert_eq!(x.meta.world_size as usize, target);
    for r in 0..target as u32 {
        assert_eq!(
            expansion(&x, r),
            expansion(&truth, r),
            "{bench}.{class}: rank {r} of the extrapolated trace differs from the real run"
        );
    }
    assert_eq!(
        bytes_per_call(&x),
        bytes_per_call(&truth),
        "{bench}: bytes per call"
    );
    // The same source lines, named the same way, in both.
    let labels =
        |f: &TraceFile| -> Vec<String> { f.meta.sites.iter().map(|s| s.1.clone()).collect() };
    for l in labels(&x) {
        assert!(
            labels(&truth).contains(&l),
            "{bench}: site {l} is not in the real run"
        );
    }
    eprintln!("{bench}.{class}: {target} of {target} ranks identical to the real run");
}

/// [`replay_equals`] on MPICH too (yielding waits, in a directory of its
/// own): a trace extrapolated from Open MPI runs replays on either library.
fn replay_equals_on_both(trace: &Path, n: usize, dir: &Path, real_raw: &Path) {
    replay_equals_on_both_but(trace, n, dir, real_raw, None);
}

/// [`replay_equals_on_both`], lines compared up to `cut` as in
/// [`replay_equals_but`].
fn replay_equals_on_both_but(
    trace: &Path,
    n: usize,
    dir: &Path,
    real_raw: &Path,
    cut: Option<&str>,
) {
    replay_equals_but(IMP, trace, n, dir, real_raw, cut);
    let other = dir.join("mpich");
    std::fs::create_dir_all(&other).unwrap();
    replay_equals_but("mpich", trace, n, &other, real_raw, cut);
}

/// Replays `trace` on `n` ranks with the tracer's raw logs and compares
/// them, call sites aside, with the real run's raw logs in `real_raw`.
fn replay_equals(imp: &str, trace: &Path, n: usize, dir: &Path, real_raw: &Path) {
    replay_equals_but(imp, trace, n, dir, real_raw, None);
}

/// [`replay_equals`], each line compared only up to `cut` where it has it
/// (the all-to-all counts that lossy mode made uniform).
fn replay_equals_but(
    imp: &str,
    trace: &Path,
    n: usize,
    dir: &Path,
    real_raw: &Path,
    cut: Option<&str>,
) {
    let raw = dir.join("replay-raw");
    let mut o = traced_raw(imp, &raw);
    o.env.push(("RANKSCALE_TRACE", "0".into()));
    // 256 MPICH ranks take a minute on two cores, more beside other work.
    o.timeout_s = o.timeout_s.max(600);
    let bin = root().join(format!("target/{imp}/release/replay"));
    // On MPICH the tracer's yielding waits (RANKSCALE_YIELD, set by
    // traced_raw) keep the replay from busy-polling, and see every call.
    let args = [trace.display().to_string(), "--no-compute".to_string()];
    let job = mpirun(imp, n, &bin, &args, &o);
    assert_eq!(
        job.code,
        Some(0),
        "replay of {}: {}",
        trace.display(),
        job.stderr
    );
    let no_site = |s: String| -> Vec<String> {
        s.lines()
            .map(|l| match l.find(" site=") {
                Some(i) => format!("{}{}", &l[..i], &l[i + 22..]),
                None => l.to_string(),
            })
            .map(|l| match cut.and_then(|c| l.find(c)) {
                Some(i) => l[..i].to_string(),
                None => l,
            })
            .collect()
    };
    // The real run's calls without detail are passed over by replay.
    for r in 0..n as i32 {
        assert_eq!(
            no_site(detailed(&raw_text(&raw, r))),
            no_site(detailed(&raw_text(real_raw, r))),
            "rank {r}: the replay of {} differs from the real run",
            trace.display()
        );
    }
}

/// The benchmark `rankscale codegen` writes of `trace` (built with
/// `mpicc -Wall -Werror`, run on `n` ranks without its computation) issues
/// the real run's calls: its raw logs equal `real_raw`, call sites aside.
fn codegen_equals(trace: &Path, n: usize, dir: &Path, real_raw: &Path) {
    let d = dir.join("codegen");
    std::fs::create_dir_all(&d).unwrap();
    let raw = codegen_run(IMP, trace, n, &d, &["--no-compute"])
        .unwrap_or_else(|e| panic!("{}: {e}", trace.display()))
        .raw;
    if let Some(diff) = first_raw_difference(real_raw, &raw, n, &["site="]) {
        panic!("the benchmark of {}: {diff}", trace.display());
    }
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    eprintln!(
        "codegen of {}: {} bytes of C for a {}-byte trace; its {n} ranks issue the real run's calls",
        trace.display(),
        size(&d.join("bench.c")),
        size(trace)
    );
}

/// `rankscale codegen` on NPB's traces: BT, LU, CG, FT, MG and IS class S
/// at 4 ranks each become a C benchmark whose calls, traced, equal the
/// real run's raw logs (call sites aside). An extrapolated trace's
/// benchmark: [`ft_is_exact_and_replays`].
#[test]
fn npb_traces_become_benchmarks_that_issue_the_same_calls() {
    for bench in ["bt", "lu", "cg", "ft", "mg", "is"] {
        let Some(bins) = build(IMP, bench, "S", &[4]) else {
            return;
        };
        let dir = scratch(&format!("npb-codegen-{bench}"));
        let file = dir.join(format!("{bench}.S.4.trace"));
        trace(IMP, &bins[0], 4, &file, Some(&dir.join("real-raw")));
        codegen_equals(&file, 4, &dir, &dir.join("real-raw"));
    }
}

#[test]
fn ep_is_exact_replays_and_scales_to_a_million_ranks() {
    let Some((dir, out, _)) = exact(IMP, "ep", "S", &[4, 8, 16], 32, &[], None) else {
        return;
    };
    replay_equals_on_both(&out, 32, &dir, &dir.join("real-raw"));
    // Every EP rank makes the same calls: a million ranks' sampled ranks
    // equal the real 32-rank run's rank 0 (and its last rank).
    let real = TraceFile::read(&dir.join("ep.S.32.real.trace")).unwrap();
    let sizes = [4, 8, 16];
    let inputs: Vec<PathBuf> = build(IMP, "ep", "S", &sizes)
        .unwrap()
        .iter()
        .zip(sizes)
        .map(|(bin, n)| shared_trace(IMP, bin, n))
        .collect();
    for n in [4096usize, 1 << 20] {
        let big = dir.join(format!("ep.{n}.trace"));
        let t0 = Instant::now();
        extrap(&big, n, &inputs, &[]).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let x = TraceFile::read(&big).unwrap();
        assert_eq!(x.meta.world_size as usize, n);
        for r in [0, 1, n as u32 / 2, n as u32 - 1] {
            assert_eq!(
                expansion(&x, r),
                expansion(&real, r.min(1)),
                "rank {r} of {n}"
            );
        }
        eprintln!("ep.S -> {n} ranks in {secs:.3} s");
    }
}

/// FT also reduces MPI_DOUBLE_COMPLEX: the replay must issue that type
/// (16 bytes, one element), which it knows from the trace.
/// MPICH, at 4 ranks (it busy-polls on the two cores): EP from 1, 2 and 3
/// ranks, exact and replayed.
#[test]
fn ep_is_exact_on_mpich() {
    let Some((dir, out, _)) = exact("mpich", "ep", "S", &[1, 2, 3], 4, &[], None) else {
        return;
    };
    replay_equals("mpich", &out, 4, &dir, &dir.join("real-raw"));
}

#[test]
fn ft_is_exact_and_replays() {
    let Some((dir, out, _)) = exact(IMP, "ft", "S", &[4, 8, 16], 32, &[], None) else {
        return;
    };
    let real = TraceFile::read(&dir.join("ft.S.32.real.trace")).unwrap();
    assert!(
        expansion(&real, 0)
            .iter()
            .any(|l| l.starts_with("Reduce ") && l.contains(":double_complex")),
        "FT's checksum reduction is recorded as double complex"
    );
    replay_equals_on_both(&out, 32, &dir, &dir.join("real-raw"));
    codegen_equals(&out, 32, &dir, &dir.join("real-raw"));
}

/// NPB FT class W from 4, 8 and 16 ranks to 64: the extrapolation rests on
/// the inputs' 1D layout continuing, which the real run at 64 breaks (FT
/// moves to a 2D layout once its ranks outnumber the grid's 32 planes, with
/// calls from sites no input has). No input can show that, so the result
/// must say what it assumes.
#[test]
fn ft_w_beyond_its_planes_states_what_it_assumes() {
    let Some(bins) = build(IMP, "ft", "W", &[4, 8, 16, 64]) else {
        return;
    };
    let dir = scratch("npb-ft-w-64");
    let mut files = Vec::new();
    for (bin, n) in bins.iter().zip([4, 8, 16]) {
        files.push(shared_trace(IMP, bin, n));
    }
    let out = dir.join("ft.W.64.extrap.trace");
    let report = extrap(&out, 64, &files, &[]).unwrap_or_else(|e| panic!("ft W: {e}"));
    for said in [
        "assumes: the code takes the same paths at 64 ranks as at 4, 8, 16 ranks",
        "assumes: it keeps the decomposition of the inputs",
        "a code that changes its layout beyond them",
    ] {
        assert!(
            report.contains(said),
            "ft W -> 64 must say {said:?}:\n{report}"
        );
    }
    // The file says so too, for a reader who has only the file.
    let shown = rankscale(&["show", &out.display().to_string()]);
    assert!(
        text(&shown.stdout).contains("assumes: it keeps the decomposition of the inputs"),
        "{}",
        text(&shown.stdout)
    );
    // And the assumption is the one that fails here: the real run calls
    // from sites no input has.
    let real = dir.join("ft.W.64.real.trace");
    trace(IMP, &bins[3], 64, &real, None);
    let sites = |f: &Path| -> std::collections::BTreeSet<String> {
        TraceFile::read(f)
            .unwrap()
            .meta
            .sites
            .into_iter()
            .map(|(_, s)| s)
            .collect()
    };
    let known: std::collections::BTreeSet<String> = files.iter().flat_map(|f| sites(f)).collect();
    let new: Vec<String> = sites(&real).difference(&known).cloned().collect();
    eprintln!(
        "ft W at 64 ranks: {} call sites no input has: {new:?}",
        new.len()
    );
    assert!(
        !new.is_empty(),
        "FT W at 64 ranks uses the inputs' call sites only"
    );
}

/// NPB BT's and SP's input files: class A's own 64^3 grid, with 5 time
/// steps instead of 200 and 400 (the same communication per step, a run of
/// seconds at 100 ranks on two cores). NPB cannot verify a custom run.
const BT_INPUT: &str = "5\n0.0008\n64 64 64\n";
const SP_INPUT: &str = "5\n0.0015\n64 64 64\n";

/// NPB BT through its plugin (`extrap/specs/npb-bt.toml`, given the grid
/// size): BT's multi-partition numbers each solve message's tag by the cell
/// it belongs to, a different number on every rank at every stage; the
/// plugin names those tags and the wrapping neighbours by stage. 64 points
/// do not split evenly over 3, 5, 6, 7 or 10 cells, so the cells have two
/// sizes and copy_faces' buffers (a face per cell) differ from rank to
/// rank; the plugin names them by side, and the solve buffers by the
/// largest cell (`30*(64/p + 1)^2`). Exact at 49 ranks from 9, 25 and 36,
/// replayed to the real run on Open MPI and MPICH, and exact at 100 from
/// the four. An input of 16 ranks (equal cells: all six buffers the same on
/// every rank) leaves the sides open, and is refused with no file.
#[test]
fn bt_is_exact_through_the_plugin_and_replays() {
    let plugin = plugin_arg("npb-bt.toml");
    let extra = [plugin.as_str(), "--plugin-param", "n=64"];
    let Some((dir, real, mut files)) = multipartition("bt", BT_INPUT, &extra) else {
        return;
    };
    let input = |d: &Path| {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("inputbt.data"), BT_INPUT).unwrap();
    };
    let bins = build(IMP, "bt", "A", &[16, 100]).unwrap();
    let even = dir.join("bt.A.16.trace");
    input(&dir.join("run-16"));
    trace_in(IMP, &bins[0], 16, &even, None, Some(&dir.join("run-16")));
    let refused = dir.join("bt.even.trace");
    let with_even = [files[0].clone(), even, files[1].clone()];
    let err = extrap(&refused, 36, &with_even, &extra).unwrap_err();
    assert!(err.contains("copy_faces"), "{err}");
    assert!(!refused.exists(), "a refused extrapolation writes no file");
    files.push(real);
    let real100 = dir.join("bt.A.100.real.trace");
    input(&dir.join("run-100"));
    trace_in(
        IMP,
        &bins[1],
        100,
        &real100,
        None,
        Some(&dir.join("run-100")),
    );
    let out = dir.join("bt.A.100.extrap.trace");
    extrap(&out, 100, &files, &extra).unwrap_or_else(|e| panic!("bt to 100: {e}"));
    assert_same_run("bt", "A", &out, &real100, 100);
}

/// A class A NPB BT binary run on a 56-point grid (`inputbt.data`): BT sizes
/// its solve buffers from the compiled class, `30*(64/p + 1)^2`, and its
/// faces from the grid it runs. Given both (`n=64`, `grid_n=56`), 9, 25 and
/// 36 ranks extrapolate to 64 equal to the real run on every rank. Given
/// the run's grid as `n`, the solve buffers fit no pattern and two block
/// laws fit their values, `30*floor(66/y)^2` and `30*(floor(64/y) + 1)^2`,
/// which part at 8 (1,920 against the binary's 2,430): refused, no file.
/// (Until 2026-12-07 the simpler law was taken as verified: every rank
/// wrong, unmarked.)
#[test]
fn bt_class_a_on_another_grid_is_exact_or_refused() {
    let plugin = plugin_arg("npb-bt.toml");
    let both = [
        plugin.as_str(),
        "--plugin-param",
        "n=64",
        "--plugin-param",
        "grid_n=56",
    ];
    let grid = |_| "5\n0.0008\n56 56 56\n".to_string();
    let Some((dir, _, _)) = exact(
        IMP,
        "bt",
        "A",
        &[9, 25, 36],
        64,
        &both,
        Some(("inputbt.data", &grid)),
    ) else {
        return;
    };
    let files: Vec<PathBuf> = [9, 25, 36]
        .iter()
        .map(|n| dir.join(format!("bt.A.{n}.trace")))
        .collect();
    let wrong = [plugin.as_str(), "--plugin-param", "n=56"];
    let err = extrap(&dir.join("bt.n56.trace"), 64, &files, &wrong).unwrap_err();
    assert!(
        err.contains(
            "ambiguous: 30*floor(66/y)^2 gives 1920 and 30*(floor(64/y) + 1)^2 gives 2430"
        ),
        "{err}"
    );
}

/// `--plugin=` the shipped spec `file`.
fn plugin_arg(file: &str) -> String {
    format!(
        "--plugin={}",
        root().join("extrap/specs").join(file).display()
    )
}

/// BT or SP class A through its plugin (`extra`), reading `input`: inputs
/// 9, 25 and 36 ranks, exact at 49 and replayed on both libraries. Returns
/// the scratch directory, the real 49-rank trace and the input traces.
fn multipartition(
    bench: &str,
    input: &str,
    extra: &[&str],
) -> Option<(PathBuf, PathBuf, Vec<PathBuf>)> {
    let name = format!("input{bench}.data");
    let (dir, out, real) = exact(
        IMP,
        bench,
        "A",
        &[9, 25, 36],
        49,
        extra,
        Some((&name, &|_| input.to_string())),
    )?;
    replay_equals_on_both(&out, 49, &dir, &dir.join("real-raw"));
    let files = [9, 25, 36]
        .iter()
        .map(|n| dir.join(format!("{bench}.A.{n}.trace")))
        .collect();
    Some((dir, real, files))
}

/// NPB SP through its plugin (`extrap/specs/npb-sp.toml`, given the grid
/// size): SP's solve messages carry 22 (forward) or 10 (backward) values per
/// point of the face of the stage's cell, less its outermost planes where
/// the cell touches the grid boundary, so the counts differ from rank to
/// rank and stage to stage, and copy_faces' buffers by rank where the
/// cells differ in size (as BT's); each occurrence takes the stage or side
/// that explains every rank's count. Exact at 49 ranks from 9, 25 and 36,
/// and it replays to the real run on Open MPI and MPICH. Without the grid
/// size the spec is refused, saying what it needs.
#[test]
fn sp_is_exact_through_the_plugin_and_replays() {
    let plugin = plugin_arg("npb-sp.toml");
    let extra = [plugin.as_str(), "--plugin-param", "n=64"];
    let Some((dir, _, files)) = multipartition("sp", SP_INPUT, &extra) else {
        return;
    };
    let err = extrap(&dir.join("sp.x.trace"), 49, &files, &[&plugin]).unwrap_err();
    assert!(err.contains("--plugin-param n=VALUE"), "{err}");
}

/// NPB LU's input file for class A's 64^3 grid with two SSOR iterations
/// instead of 250: the same communication per iteration, a run of seconds
/// at 128 ranks on two cores. NPB cannot verify a custom run.
/// Two comment lines precede each value, as in NPB's sample file.
const LU_INPUT: &str = "c\nc ipr inorm\n1 2\nc\nc itmax\n2\nc\nc dt\n2.0e+00\nc\nc omega\n1.2\n\
c\nc tolrsd\n1.0e-08 1.0e-08 1.0e-08 1.0e-08 1.0e-08\nc\nc nx ny nz\n64 64 64\n";

/// LU's 2D grid grows non-square, the wider side fastest: 2x2, 2x4, 4x4,
/// 4x8 and 8x8 to 8x16. Its pipelined sweeps send `5*(n-1)` values along
/// an edge and `5*n` inside (n = 64/width), laws of the form
/// `floor(K/t) + a` that three widths verify. The inner rows exist at two
/// grid heights only and take the law their call site follows in the
/// classes that verified it. Every rank of the extrapolated 128-rank trace
/// equals the real run's, and it replays to the real run's raw logs.
#[test]
fn lu_is_exact_on_non_square_grids_and_replays() {
    let Some((dir, out, _)) = exact(
        IMP,
        "lu",
        "A",
        &[4, 8, 16, 32, 64],
        128,
        &[],
        Some(("inputlu.data", &|_| LU_INPUT.to_string())),
    ) else {
        return;
    };
    replay_equals_on_both(&out, 128, &dir, &dir.join("real-raw"));
}

/// NPB MG's input file for weak scaling (as Wu and Mueller 2012 evaluate MG): a
/// 32^3 block per rank on MG's own `pi1 x pi2 x pi3` process grid (x
/// fastest, `pi1 = 2^floor(log2(P)/3)`), five levels, four V-cycles. Every
/// rank then holds two points of the coarsest level, so none idles there
/// and no distance-2 exchange happens; class S or W at a growing P (strong
/// scaling) has both, and is refused (see the refusals).
fn mg_weak_input(p: usize) -> String {
    let m = p.trailing_zeros();
    let (dx, dy) = (m / 3, (m - m / 3) / 2);
    let (x, y) = (1usize << dx, 1usize << dy);
    let z = p / (x * y);
    format!(
        " 5\n {} {} {}\n 4\n 0 0 0 0 0 0 0 0\n",
        32 * x,
        32 * y,
        32 * z
    )
}

/// MG under weak scaling, a 3D torus that grows 4x2x2, 4x4x2, 4x4x4, 8x4x4
/// to 8x8x4 (slowest first). The fastest dimension takes two sizes only,
/// so its inner ranks exist at two inputs: their peers take the laws
/// their call site verified in the classes all inputs have, and the
/// receive buffer that MG compiles from that dimension (`2*(256/x+2)^2`)
/// is read at x = 4, a size two inputs had. Every rank of the 256-rank
/// extrapolated trace equals the real run's, and it replays on Open MPI and
/// on MPICH (256 yielding ranks on two cores: about a minute) to the real
/// raw logs.
#[test]
fn mg_weak_scaling_is_exact_and_replays() {
    let Some((dir, out, _)) = exact(
        IMP,
        "mg",
        "A",
        &[16, 32, 64, 128],
        256,
        &[],
        Some(("mg.input", &mg_weak_input)),
    ) else {
        return;
    };
    replay_equals_on_both(&out, 256, &dir, &dir.join("real-raw"));
}

/// CG through the shipped plugin spec (`extrap/specs/npb-cg.toml`): its
/// Irecv/Send/Wait exchanges along the processor row (farthest partner
/// first for the dot products, nearest first for the matrix-vector
/// reduction) and with the transpose partner, fitted in the nprows x npcols
/// grid. Four inputs, since 4, 8 and 16 ranks show only two row lengths
/// (2 and 4), which cannot tell `log2(npcols)` from a line: that case is
/// refused (see the refusals). The extrapolated trace replays to the real
/// run's raw logs.
#[test]
fn cg_is_exact_through_the_plugin() {
    let plugin = plugin_arg("npb-cg.toml");
    let Some((dir, out, _)) = exact(IMP, "cg", "S", &[4, 8, 16, 32], 64, &[&plugin], None) else {
        return;
    };
    replay_equals_on_both(&out, 64, &dir, &dir.join("real-raw"));
}

/// IS exchanges data-dependent `Alltoallv` counts: refused without lossy
/// mode (see the refusals), and with it every event equals the real run's
/// but for those counts, made uniform, whose volume per rank is the real
/// one within 5 %; the trace's metadata says what was approximated. It
/// replays to the real run's raw logs, those counts aside.
#[test]
fn is_extrapolates_in_lossy_mode() {
    let (inputs, target) = ([4, 8, 16], 32);
    let mut sizes = inputs.to_vec();
    sizes.push(target);
    let Some(bins) = build(IMP, "is", "S", &sizes) else {
        return;
    };
    let dir = scratch("npb-is");
    let files: Vec<PathBuf> = bins
        .iter()
        .zip(&inputs)
        .map(|(bin, &n)| shared_trace(IMP, bin, n))
        .collect();
    let real = dir.join("is.S.32.real.trace");
    trace(IMP, &bins[3], target, &real, Some(&dir.join("real-raw")));
    let out = dir.join("is.x.trace");
    let report = extrap(&out, target, &files, &["--lossy"]).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{report}");
    assert_lossy_same_run(&out, &real, target, &report);
    let real_raw = dir.join("real-raw");
    replay_equals_on_both_but(&out, target, &dir, &real_raw, Some(" scounts="));
}

/// IS's lossy extrapolation `out` against the real run `real` at `target`
/// ranks: every event equals the real run's but for the all-to-all counts,
/// whose volume per rank is within 5 %; `report` (the command's output) and
/// the trace's metadata say what was made uniform.
fn assert_lossy_same_run(out: &Path, real: &Path, target: usize, report: &str) {
    let x = TraceFile::read(out).unwrap();
    let truth = TraceFile::read(real).unwrap();
    let cut = |l: &String| match l.find(" scounts=") {
        Some(i) => l[..i].to_string(),
        None => l.clone(),
    };
    let volume = |lines: &[String]| -> i64 {
        lines
            .iter()
            .filter_map(|l| l.split(" scounts=").nth(1))
            .flat_map(|v| v.split(' ').next().unwrap_or("").split(','))
            .map(|c| c.parse::<i64>().unwrap())
            .sum()
    };
    for r in 0..target as u32 {
        let (a, b) = (expansion(&x, r), expansion(&truth, r));
        assert_eq!(
            a.iter().map(cut).collect::<Vec<_>>(),
            b.iter().map(cut).collect::<Vec<_>>(),
            "rank {r}: the events but the all-to-all counts equal the real run's"
        );
        let (va, vb) = (volume(&a), volume(&b));
        assert!(
            ((va - vb) as f64).abs() <= 0.05 * vb as f64,
            "rank {r}: {va} elements sent against {vb}"
        );
    }
    for line in report.lines().filter(|l| l.contains("made uniform")) {
        let pct: f64 = line
            .rsplit('(')
            .next()
            .unwrap()
            .trim_end_matches(" %)")
            .parse()
            .unwrap();
        assert!(pct.abs() < 5.0, "{line}");
    }
    assert!(
        x.meta.unverified.iter().any(|l| l.contains("made uniform")),
        "the trace says what it approximated: {:?}",
        x.meta.unverified
    );
}

/// The extrapolations issue 37 found exact when it tried rankscale as a
/// user would, at sizes the other tests do not use, rechecked rank by rank
/// against real runs at the target: EP W to 64 and 40, FT W to 32 and S to
/// 64, CG W from 4 to 32 to 64 with the plugin, IS W with `--lossy` to 32
/// and 64, BT A (64³) 9, 25, 36 to 64, SP A on 64³ and on 50³ to 64. About
/// 12 minutes on two cores (749 s, 2026-12-07), so it runs on request
/// (`RANKSCALE_NPB_CASES=1`), not in CI; the tests above cover each code.
#[test]
fn the_cases_users_ran_stay_exact() {
    if std::env::var("RANKSCALE_NPB_CASES").as_deref() != Ok("1") {
        eprintln!("skipped: RANKSCALE_NPB_CASES=1 runs the issue 37 cases");
        return;
    }
    let cg = plugin_arg("npb-cg.toml");
    // CG through its plugin, the others as they are.
    let cases: [(&str, &str, &[usize], usize); 5] = [
        ("ep", "W", &[4, 8, 16], 64),
        ("ep", "W", &[4, 8, 16], 40),
        ("ft", "W", &[4, 8, 16], 32),
        ("ft", "S", &[4, 8, 16], 64),
        ("cg", "W", &[4, 8, 16, 32], 64),
    ];
    for (bench, class, inputs, target) in cases {
        let extra: &[&str] = if bench == "cg" { &[&cg] } else { &[] };
        exact(IMP, bench, class, inputs, target, extra, None).unwrap();
    }
    // BT and SP, the class A binaries with fewer iterations (NPB cannot
    // verify those), through their plugins: on the 64³ grid from 9, 25 and
    // 36 ranks, and SP on a 50³ grid from 9, 16, 36 and 49 (from 9, 25 and
    // 36 its 50 points fall equally on 5 cells, and it is refused).
    let (bt, sp) = (plugin_arg("npb-bt.toml"), plugin_arg("npb-sp.toml"));
    let sp50 = "5\n0.0015\n50 50 50\n";
    let grids: [(&str, &str, &str, &str, &[usize]); 3] = [
        ("bt", &bt, "n=64", BT_INPUT, &[9, 25, 36]),
        ("sp", &sp, "n=64", SP_INPUT, &[9, 25, 36]),
        ("sp", &sp, "n=50", sp50, &[9, 16, 36, 49]),
    ];
    for (bench, plugin, n, text, inputs) in grids {
        let name = format!("input{bench}.data");
        let extra = [plugin, "--plugin-param", n];
        let input: InputFile = (&name, &|_| text.to_string());
        exact(IMP, bench, "A", inputs, 64, &extra, Some(input)).unwrap();
    }
    // IS W, lossy, to 32 and to 64.
    let bins = build(IMP, "is", "W", &[4, 8, 16, 32, 64]).unwrap();
    let files: Vec<PathBuf> = bins[..3]
        .iter()
        .zip([4, 8, 16])
        .map(|(bin, n)| shared_trace(IMP, bin, n))
        .collect();
    let dir = scratch("npb-is-w");
    for (bin, target) in bins[3..].iter().zip([32, 64]) {
        let real = dir.join(format!("is.W.{target}.real.trace"));
        trace(IMP, bin, target, &real, None);
        let out = dir.join(format!("is.W.{target}.extrap.trace"));
        let report = extrap(&out, target, &files, &["--lossy"]).unwrap_or_else(|e| panic!("{e}"));
        assert_lossy_same_run(&out, &real, target, &report);
        eprintln!("is.W: {target} of {target} ranks the real run's, counts aside");
    }
}

/// The shipped CG plugin, relative to the project root (the tests run there).
const CG_PLUGIN: &str = "--plugin=extrap/specs/npb-cg.toml";
const BT_PLUGIN: &str = "--plugin=extrap/specs/npb-bt.toml";
const SP_PLUGIN: &str = "--plugin=extrap/specs/npb-sp.toml";

/// One refusal case: benchmark, class, input sizes, target, extra options
/// and a word the message must contain.
type Refusal = (
    &'static str,
    &'static str,
    &'static [usize],
    usize,
    &'static [&'static str],
    &'static str,
);

/// The codes rankscale cannot yet extrapolate exactly: each is refused with
/// a message that names what does not fit, exit code 1, and no file.
#[test]
fn npb_codes_not_yet_extrapolated_are_refused_clearly() {
    let cases: [Refusal; 13] = [
        // Data-dependent Alltoallv counts, without --lossy.
        ("is", "S", &[4, 8, 16], 32, &[], "Alltoallv"),
        // Row and transpose partners that no grid position decides.
        ("cg", "S", &[4, 8, 16], 32, &[], "no row-major grid"),
        // With the plugin, but two row lengths only (2, 4): laws in P that
        // fit the first row partner's step disagree at 32.
        (
            "cg",
            "S",
            &[4, 8, 16],
            32,
            &[CG_PLUGIN],
            "cannot tell them apart",
        ),
        // Class W at every size up to 64 (strong scaling): the coarse
        // levels of the 16-rank run exchange two planes away in its 4-wide
        // dimension, and the refusal says so, on which grid and input.
        (
            "mg",
            "W",
            &[8, 16, 32, 64],
            128,
            &[],
            "peers 2 positions away along a dimension 4 ranks wide",
        ),
        // BT and SP class W at their own sizes through their plugins: the
        // grid's 24 (BT) and 36 (SP) points divide evenly over 2, 3 and 4
        // cells, so every face buffer is equal there and no input but the
        // 25-rank one decides which side a buffer is.
        (
            "bt",
            "W",
            &[4, 9, 16, 25],
            36,
            &[BT_PLUGIN, "--plugin-param", "n=24"],
            "its pattern's step",
        ),
        (
            "sp",
            "W",
            &[4, 9, 16, 25],
            36,
            &[SP_PLUGIN, "--plugin-param", "n=36"],
            "its pattern's step",
        ),
        // Its coarse levels exchange two planes away on some ranks.
        ("mg", "S", &[4, 8, 16], 32, &[], "no row-major grid"),
        // In lossy mode those are dropped and the grids (2x2x2 .. 4x4x4,
        // MPI_Dims_create's) found, but the coarsest levels' counts
        // saturate: 4, 2, 1, 1 fit laws that give 1 and 0 at 8x4x4 (the
        // real run there leaves that level out on rank 0 altogether).
        (
            "mg",
            "S",
            &[8, 16, 32, 64],
            128,
            &["--lossy"],
            "cannot tell them apart",
        ),
        // The multi-partition's diagonal neighbours differ within a class.
        ("bt", "S", &[4, 9, 16], 25, &[], "same position"),
        ("sp", "S", &[4, 9, 16], 25, &[], "same position"),
        // Two grid widths only (2 and 4): an edge's count, 5*(floor(33/x)
        // - 1), follows a law with an offset that needs three widths, and
        // the lines through 75 and 35 go negative at x = 8. The heights
        // (y) show 2 and 4 too, so no other dimension lends a third size.
        (
            "lu",
            "W",
            &[4, 8, 16],
            32,
            &["--dims", "4x8"],
            "the values follow the grid's x size alone (75 at x=2, 35 at x=4), and the \
             inputs show 2 sizes of it",
        ),
        // A 2-rank run of a 2D code is a 1x2 grid (its x exchange's call
        // sites say which dimension it has), not another program; its
        // ranks lack the y neighbours, so its classes are left out, and
        // two shapes (2x2, 2x4) cannot tell a law in x from one in P.
        ("lu", "S", &[2, 4, 8], 16, &[], "1x2 mesh"),
        // Pooled with the heights, the widths' edge counts verify (75, 35
        // and 15 at 2, 4 and 8), but exchange_3's 330*(floor(32/t) + 1)
        // has three unknowns over those three sizes, and exchange_4's
        // widths (18, 10) and heights (22, 20) differ: refused as
        // unverified, each field named.
        (
            "lu",
            "W",
            &[8, 16, 32],
            64,
            &[],
            "fit the inputs but cannot be verified",
        ),
    ];
    for (bench, class, inputs, target, extra, why) in cases {
        let Some(bins) = build(IMP, bench, class, inputs) else {
            return;
        };
        let dir = scratch(&format!("npb-refuse-{bench}"));
        let files: Vec<PathBuf> = bins
            .iter()
            .zip(inputs)
            .map(|(bin, &n)| shared_trace(IMP, bin, n))
            .collect();
        let out = dir.join("x.trace");
        match extrap(&out, target, &files, extra) {
            Ok(report) => panic!("{bench}.{class} -> {target} was not refused:\n{report}"),
            Err(err) => {
                assert!(err.contains(why), "{bench}: {err}");
                eprintln!(
                    "{bench}.{class} {inputs:?} -> {target}: refused: {}",
                    err.trim()
                );
            }
        }
    }
}

/// NPB MG calls one exchange at every multigrid level, with 20 µs to 3 ms
/// of computation before it by level, alike on all ranks. Simulated from
/// the histograms with a core per rank (2 ranks, the machine's 2 cores), it
/// must predict the traced run within 15 % on average over eight seeds, and
/// within 25 % for every seed: ranks that drew their levels independently
/// waited at every exchange for the larger of two, +34 to +47 % on this
/// machine. With the bins common to the ranks at one step, 8 traces × 8
/// seeds (2026-12-05) gave −7 to +19 % per seed and +1 to +11 % as the
/// eight seeds' mean, and CI once +27 % for one seed. With the bins' places
/// stratified and shared in coarsened bins (2026-12-06), 6 traces × 8 seeds
/// gave −14 to +15 % per seed and −9 to +8 % as a trace's mean; the trace
/// (its run's own noise) now decides most of the spread. The traced run is
/// the truth here (rank 0's `MPI_Init` to `MPI_Finalize`).
#[test]
fn npb_mg_simulates_within_15_percent_with_a_core_per_rank() {
    let Some(bins) = build(IMP, "mg", "W", &[2]) else {
        return;
    };
    let f = scratch("npb-mg-simulate").join("mg.W.2.trace");
    trace(IMP, &bins[0], 2, &f, None);
    let (mut bad, mut sum) = (Vec::new(), 0.0);
    let seeds = ["1", "2", "3", "4", "5", "6", "7", "8"];
    for seed in seeds {
        let out = rankscale(&[
            "simulate",
            f.to_str().unwrap(),
            "--cores",
            "2",
            "--seed",
            seed,
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let v: serde_json::Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..])
            .unwrap_or_else(|e| panic!("{e}: {stdout}"));
        let (pred, real) = (
            v["rank0_ns"].as_f64().unwrap(),
            v["traced_ns"].as_f64().unwrap(),
        );
        let err = pred / real - 1.0;
        eprintln!(
            "MG W 2, seed {seed}: {:.1} ms predicted, {:.1} ms traced ({:+.1} %)",
            pred / 1e6,
            real / 1e6,
            100.0 * err
        );
        sum += err;
        if err.abs() > 0.25 {
            bad.push(format!("seed {seed}: {:+.1} %", 100.0 * err));
        }
    }
    assert!(bad.is_empty(), "more than 25 % off: {}", bad.join(", "));
    let mean = sum / seeds.len() as f64;
    assert!(
        mean.abs() <= 0.15,
        "more than 15 % off on average over {} seeds: {:+.1} %",
        seeds.len(),
        100.0 * mean
    );
}
