//! `rankscale codegen` writes a trace as a C+MPI benchmark that issues the
//! application's calls: for every test program of the manifest, on both
//! MPI implementations, the original run is traced (with raw logs), its
//! trace becomes a C file, `mpicc -Wall -Werror` builds it, and the
//! benchmark's own raw logs, traced, must equal the original's, call sites
//! aside (they name the benchmark's code), and the path hashes of its files
//! (it makes its own in a scratch directory).
//!
//! Programs whose calls race (wildcard receives and probes, `Test*`,
//! `Waitany`, `Waitsome`, `Parrived`) may complete other requests than in the trace,
//! as the application itself may from run to run: there the benchmark
//! must issue the same calls, and only their outcomes (`reqs=`, `done=`,
//! `match=`, `flag=`, `msg=`) may differ. So may they, and the number of
//! `Win_test` calls in a row until one comes back true, where the
//! benchmark reports that completions came out otherwise than in the
//! trace: it forces `Win_test`'s outcomes by holding origins'
//! `Win_complete`, which a ring of exposure epochs that all had tests that
//! came back false cannot keep (each hold waits on the next). What codegen
//! cannot write yet
//! (calls from several threads) is refused with a clear message and no
//! file.
//!
//! NPB and extrapolated traces: `tests/npb.rs`.

mod common;

use common::*;

/// Programs with racy calls (see the module documentation).
const RACY: &[&str] = &[
    "wildcard",
    "p2p",
    "p2p_np3",
    "probes",
    "probewait_all",
    "probewait_all_np4",
    "coverage_f77",
    "coverage_usempi",
    "coverage_f08",
    "partitioned",
    "detail_f_mpi4",
    "detail_f08_mpi4",
];

/// Outcomes of racy calls, and the call site.
const OUTCOMES: &[&str] = &["site=", "reqs=", "done=", "match=", "flag=", "msg="];

/// A raw log without the outcomes of racy calls: [`OUTCOMES`] (with them
/// [`without`] leaves out the size of the message a probe found), what a
/// matched-message receive took (the message its racy probe found), and
/// request ids (an `Imrecv` whose probe found nothing creates none, which
/// renumbers the requests after it).
fn racy(log: &str) -> Vec<String> {
    let mut ignored = OUTCOMES.to_vec();
    ignored.push("req=");
    without(log, &ignored)
        .lines()
        .map(|l| {
            let took = l.starts_with("Mrecv ") || l.starts_with("Imrecv ");
            l.split(' ')
                .filter(|f| !(took && f.starts_with("recv=")))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn check(imp: &str, run: &Run) -> Result<(u64, u64), String> {
    let dir = scratch(&format!("{imp}-codegen-{}", run.name));
    let trace = dir.join("app.trace");
    let mut orig = traced_raw(imp, &dir.join("orig"));
    orig.env
        .push(("RANKSCALE_TRACE", trace.display().to_string()));
    let job = mpirun(imp, run.np, &program(imp, &run.binary), &run.args, &orig);
    if job.code != Some(0) {
        return Err(format!("the original run failed: {}", job.stderr));
    }
    let bench = codegen_run(imp, &trace, run.np, &dir, &[])?;
    let raw = bench.raw;
    // The benchmark makes its files in a scratch directory under names of
    // its own: the path hashes its tracer records are not the
    // application's.
    let issued = |text: &str| unnamed(&detailed(text));
    if RACY.contains(&run.name.as_str()) || bench.drifted {
        // A benchmark that reported drift may also have seen an exposure
        // epoch end at an earlier `Win_test` than the application did, and
        // cannot issue the tests after it.
        let squeeze = |mut l: Vec<String>| {
            if bench.drifted {
                l.dedup_by(|x, y| x.starts_with("Win_test ") && x == y);
            }
            l
        };
        for rank in 0..run.np as i32 {
            let (a, b) = (
                squeeze(racy(&issued(&raw_text(&dir.join("orig"), rank)))),
                squeeze(racy(&issued(&raw_text(&raw, rank)))),
            );
            if a != b {
                let at = a.iter().zip(&b).position(|(x, y)| x != y);
                return Err(format!(
                    "rank {rank}: the benchmark's calls differ beyond racy outcomes ({} vs {} \
                     events, first difference {:?})",
                    a.len(),
                    b.len(),
                    at.map(|i| (&a[i], &b[i]))
                ));
            }
        }
    } else if let Some(d) = first_raw_difference(&dir.join("orig"), &raw, run.np, &["site="]) {
        return Err(format!("the benchmark's calls differ: {d}"));
    }
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let sizes = (size(&dir.join("bench.c")), size(&trace));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(sizes)
}

#[test]
fn generated_benchmarks_issue_the_applications_calls() {
    let m = manifest();
    let mut failures = Vec::new();
    let mut done = 0;
    let mut largest = (0, 0, String::new());
    for imp in mpis() {
        for run in m.runs(imp) {
            if run.binary == "threads" {
                continue; // refused, see below
            }
            match check(imp, run) {
                Ok((c, t)) => {
                    done += 1;
                    if c > largest.0 {
                        largest = (c, t, format!("{imp} {}", run.name));
                    }
                }
                Err(e) => failures.push(format!("{imp} {}: {e}", run.name)),
            }
        }
    }
    eprintln!(
        "{done} benchmarks issue their application's calls; the largest C file: {} bytes for a \
         {}-byte trace ({})",
        largest.0, largest.1, largest.2
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn codegen_refuses_what_it_cannot_write_with_a_clear_message() {
    let imp = "openmpi";
    let dir = scratch("codegen-refusals");
    let trace = dir.join("threads.trace");
    let mut o = traced_raw(imp, &dir.join("raw"));
    o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
    let run = manifest()
        .run
        .into_iter()
        .find(|r| r.binary == "threads")
        .expect("the threads program is in the manifest");
    let job = mpirun(imp, run.np, &program(imp, "threads"), &run.args, &o);
    assert_eq!(job.code, Some(0), "{}", job.stderr);
    let c = dir.join("threads.c");
    let cases = [
        (trace.clone(), "several threads"),
        (root().join("README.md"), "README.md"),
        (dir.join("missing.trace"), "missing.trace"),
    ];
    for (input, says) in cases {
        let out = rankscale(&[
            "codegen",
            &input.display().to_string(),
            "-o",
            &c.display().to_string(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", input.display());
        assert!(err.contains(says), "{}: {err}", input.display());
        assert!(!err.contains("panicked"), "{err}");
        assert!(!c.exists(), "no file is written for a refused trace");
    }
}

/// The benchmark sleeps what `replay` sleeps: with the same seed, each
/// draws the same computation times from the trace's histograms, so that
/// the two differ only in how they issue the calls (the benchmark's time
/// is compared with replay's in `scripts/bench.sh codegen`). The times of
/// a halo exchange with one late rank spread over several bins, and a
/// stream shifted by one draw (the benchmark once left out `MPI_Init`'s,
/// and replay drew its payload bytes from the same stream) gives another
/// total on every rank. The sums are over all ranks, from the benchmark's
/// `--report-compute` and replay's JSON report.
#[test]
fn a_benchmark_draws_the_computation_that_replay_draws() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-codegen-draws"));
        let trace = dir.join("app.trace");
        let mut o = traced_raw(imp, &dir.join("raw"));
        o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
        let args: Vec<String> = ["-i", "30", "-m", "sender", "-r", "1", "-t", "3", "-d", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let job = mpirun(imp, 4, &program(imp, "latestencil"), &args, &o);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        let bin = codegen_build_with(imp, &trace, &dir, &["--seed", "7"])
            .unwrap_or_else(|e| panic!("{imp}: {e}"));
        let flags = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let bench = mpirun(imp, 4, &bin, &flags(&["--report-compute"]), &untraced());
        assert_eq!(bench.code, Some(0), "{imp}: {}", bench.stderr);
        let drew: Vec<f64> = bench
            .stdout
            .lines()
            .filter(|l| l.contains(" drew "))
            .map(|l| l.split_whitespace().nth(4).unwrap().parse().unwrap())
            .collect();
        assert_eq!(drew.len(), 4, "{imp}: {}", bench.stdout);
        let replay = mpirun(
            imp,
            4,
            &root().join(format!("target/{imp}/release/replay")),
            &flags(&[
                "--json",
                "--yield",
                "--seed",
                "7",
                &trace.display().to_string(),
            ]),
            &untraced(),
        );
        assert_eq!(replay.code, Some(0), "{imp}: {}", replay.stderr);
        let json = &replay.stdout[replay.stdout.find('{').unwrap()..];
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let replayed = v["computation_drawn_ns"]
            .as_f64()
            .unwrap_or_else(|| panic!("{imp}: no computation_drawn_ns in {json}"));
        let benched: f64 = drew.iter().sum();
        // The iterations' work and the late rank's 2 ms: a quarter of a
        // second in all, equal to the nanosecond.
        assert!(benched > 1e8, "{imp}: {benched} ns drawn");
        assert_eq!(benched, replayed, "{imp}: benchmark against replay");
    }
}

/// The benchmark's holds on `Win_complete` form a cycle in every iteration
/// of a ring of PSCW epochs whose every `Win_test` loop missed its origin's
/// `Win_complete` once (`pscw_ring`, 3 ranks, 20 iterations, rewritten so by
/// `every_test_missed_once`): probes find each cycle and its lowest rank
/// gives up at once, so the benchmark runs in about the application's time
/// and reports the drift. Before, every hold waited 1 s plus twice the
/// application's time per iteration: over 20 s.
#[test]
fn a_benchmark_breaks_a_cycle_of_win_test_holds_without_waiting() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-codegen-hold-cycle"));
        let traced = dir.join("ring.trace");
        let mut o = untraced();
        o.traced = true;
        o.env
            .push(("RANKSCALE_TRACE", traced.display().to_string()));
        let args = ["20", "1000"].map(String::from);
        let job = mpirun(imp, 3, &program(imp, "pscw_ring"), &args, &o);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        let forced = dir.join("forced.trace");
        every_test_missed_once(&traced, &forced);
        let app = trace::TraceFile::read(&forced).unwrap().meta.wall_ns as f64 / 1e9;
        let bin = codegen_build(imp, &forced, &dir).unwrap_or_else(|e| panic!("{imp}: {e}"));
        let mut l = untraced();
        l.timeout_s = 120;
        let bench = mpirun(imp, 3, &bin, &[], &l);
        assert_eq!(bench.code, Some(0), "{imp}: {}", bench.stderr);
        let secs = bench.elapsed.as_secs_f64();
        eprintln!("{imp}: benchmark {secs:.2} s (launch included), application {app:.3} s");
        assert!(
            bench
                .stderr
                .contains("completed otherwise than in the trace"),
            "{imp}: no drift reported: {}",
            bench.stderr
        );
        assert!(secs < app + 5.0, "{imp}: {secs} s: the holds waited");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The benchmark's MPI-IO writes what the application wrote, into files
/// of its own in a scratch directory and nowhere else: a checkpoint
/// writer's benchmark (two checkpoints of 4 blocks of 256 ints, the file
/// kept by the application) writes the same bytes as the application
/// (from both runs' raw logs, and as the benchmark reports them), leaves
/// the application's file byte for byte as it was, removes the temporary
/// directory it made by default, and keeps a given directory with its one
/// `rankscale-<hash>` file in it.
#[test]
fn checkpoint_benchmark_writes_the_same_bytes_in_its_scratch_directory_only() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-codegen-io"));
        let trace = dir.join("ck.trace");
        let data = dir.join("ck.dat");
        let mut o = traced_raw(imp, &dir.join("orig"));
        o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
        let args: Vec<String> = ["10", "5", "256", &data.display().to_string(), "keep"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let job = mpirun(imp, 4, &program(imp, "io_checkpoint"), &args, &o);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        let before = std::fs::read(&data).unwrap();
        assert_eq!(before.len(), 4 * 256 * 4, "{imp}: the application's file");
        let written = bytes_written(&dir.join("orig"), 4);
        assert_eq!(
            written,
            2 * 4 * 256 * 4,
            "{imp}: two checkpoints of 4 blocks"
        );
        let bin = codegen_build(imp, &trace, &dir).unwrap_or_else(|e| panic!("{imp}: {e}"));
        // The default: a temporary directory in TMPDIR, removed after.
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut l = traced_raw(imp, &dir.join("bench-raw"));
        l.env.push(("RANKSCALE_TRACE", "0".into()));
        l.env.push(("TMPDIR", tmp.display().to_string()));
        let job = mpirun(imp, 4, &bin, &[], &l);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        assert_eq!(
            bytes_written(&dir.join("bench-raw"), 4),
            written,
            "{imp}: the benchmark's writes"
        );
        assert!(
            job.stdout
                .contains(&format!("bench: MPI-IO: {written} bytes written")),
            "{imp}: {}",
            job.stdout
        );
        assert_eq!(
            std::fs::read(&data).unwrap(),
            before,
            "{imp}: the application's file"
        );
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(
            left.is_empty(),
            "{imp}: the benchmark left {left:?} in TMPDIR"
        );
        // A given directory (the option, or the environment variable replay
        // reads too): kept, with the benchmark's file alone in it.
        for (k, given) in ["option", "environment"].iter().enumerate() {
            let io = dir.join(format!("io{k}"));
            std::fs::create_dir_all(&io).unwrap();
            let mut l = untraced();
            let a = if k == 0 {
                vec!["--iodir".to_string(), io.display().to_string()]
            } else {
                l.env
                    .push(("RANKSCALE_REPLAY_IODIR", io.display().to_string()));
                Vec::new()
            };
            let job = mpirun(imp, 4, &bin, &a, &l);
            assert_eq!(job.code, Some(0), "{imp} ({given}): {}", job.stderr);
            let names = file_names(&io);
            // Rank 0's read-back deletes the file in the application only
            // when it is not kept: here it is, so the benchmark's stays too.
            assert!(
                names.len() == 1 && names[0].starts_with("rankscale-"),
                "{imp} ({given}): {names:?}"
            );
            assert_eq!(
                std::fs::metadata(io.join(&names[0])).unwrap().len(),
                before.len() as u64,
                "{imp} ({given}): the benchmark's file"
            );
        }
        assert_eq!(
            std::fs::read(&data).unwrap(),
            before,
            "{imp}: the application's file"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The MPI-IO cases a benchmark handles apart, as replay does
/// (`tests/programs/c/io_inputs.c`): an input the application found is
/// made empty in the scratch directory (its reads find nothing, and the
/// individual file pointer is moved to where the application's was), an
/// exclusive open's leftover from an earlier run in the same directory is
/// removed first, and a file the application deleted without opening it
/// is made empty before its `MPI_File_delete`. Run twice in one given
/// directory from the application's own directory, the benchmark issues
/// the application's calls each time (its raw logs against the
/// application's, path hashes aside), keeps only its two `rankscale-`
/// files there, and leaves the application's files as they were.
#[test]
fn a_benchmark_makes_the_files_the_application_found_and_removes_leftovers() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-codegen-io-inputs"));
        let app = dir.join("app");
        std::fs::create_dir_all(&app).unwrap();
        let input: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(app.join("io_inputs.in"), &input).unwrap();
        std::fs::write(app.join("io_inputs.gone"), b"x").unwrap();
        let trace = dir.join("in.trace");
        let mut o = traced_raw(imp, &dir.join("orig"));
        o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
        o.cwd = Some(app.clone());
        let job = mpirun(imp, 4, &program(imp, "io_inputs"), &[], &o);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        let output = std::fs::read(app.join("io_inputs.out")).unwrap();
        assert_eq!(output.len(), 4 * 16 * 4, "{imp}: the application's output");
        let bin = codegen_build(imp, &trace, &dir).unwrap_or_else(|e| panic!("{imp}: {e}"));
        let io = dir.join("io");
        std::fs::create_dir_all(&io).unwrap();
        for run in 0..2 {
            let raw = dir.join(format!("bench-raw-{run}"));
            let mut l = traced_raw(imp, &raw);
            l.env.push(("RANKSCALE_TRACE", "0".into()));
            l.cwd = Some(app.clone());
            let a = vec!["--iodir".to_string(), io.display().to_string()];
            let job = mpirun(imp, 4, &bin, &a, &l);
            assert_eq!(job.code, Some(0), "{imp} (run {run}): {}", job.stderr);
            if let Some(d) = first_raw_difference(&dir.join("orig"), &raw, 4, &["site="]) {
                panic!("{imp} (run {run}): the benchmark's calls differ: {d}");
            }
            // The input, made empty, and the output; the deleted file is
            // gone.
            let mut sizes: Vec<(String, u64)> = std::fs::read_dir(&io)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, e.metadata().unwrap().len())
                })
                .collect();
            sizes.sort_by_key(|(_, len)| *len);
            assert!(
                sizes.len() == 2
                    && sizes.iter().all(|(n, _)| n.starts_with("rankscale-"))
                    && sizes[0].1 == 0
                    && sizes[1].1 == output.len() as u64,
                "{imp} (run {run}): {sizes:?}"
            );
        }
        assert_eq!(file_names(&app), ["io_inputs.in", "io_inputs.out"], "{imp}");
        assert_eq!(std::fs::read(app.join("io_inputs.in")).unwrap(), input);
        assert_eq!(std::fs::read(app.join("io_inputs.out")).unwrap(), output);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A benchmark of an extrapolated trace writes where the real run at that
/// size writes: the checkpoint writer traced at 4, 8 and 16 ranks and
/// extrapolated to 32 keeps each access's offset relative to the caller's
/// block, and the 32-rank benchmark makes it absolute again, so that its
/// raw logs equal a real 32-rank run's on every rank (call sites and path
/// hashes aside): rank 31 writes its 1 KiB at byte 31,744.
#[test]
fn an_extrapolated_checkpoint_benchmark_writes_where_the_real_run_writes() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-codegen-io-extrap"));
        let data = dir.join("ck.dat");
        let args: Vec<String> = ["12", "4", "256", &data.display().to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut inputs = Vec::new();
        for np in [4, 8, 16, 32] {
            let trace = dir.join(format!("ck{np}.trace"));
            let mut o = traced_raw(imp, &dir.join(format!("raw{np}")));
            o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
            let job = mpirun(imp, np, &program(imp, "io_checkpoint"), &args, &o);
            assert_eq!(job.code, Some(0), "{imp} at {np}: {}", job.stderr);
            inputs.push(trace.display().to_string());
        }
        let out = dir.join("ck.x32.trace").display().to_string();
        let mut a = vec!["extrap", "-o", &out, "--ranks", "32"];
        a.extend(inputs[..3].iter().map(String::as_str));
        let o = rankscale(&a);
        assert!(o.status.success(), "{imp}: {}", text(&o.stderr));
        let raw = codegen_run(imp, std::path::Path::new(&out), 32, &dir, &["--no-compute"])
            .unwrap_or_else(|e| panic!("{imp}: {e}"))
            .raw;
        if let Some(d) = first_raw_difference(&dir.join("raw32"), &raw, 32, &["site="]) {
            panic!("{imp}: the extrapolated benchmark's calls differ from the real run's: {d}");
        }
        assert!(
            raw_text(&raw, 31).contains(" send=256/4:int offset=31744/1"),
            "{imp}: rank 31's writes"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
