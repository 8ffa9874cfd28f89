//! `rankscale calibrate` and `rankscale simulate` on real runs: the
//! parameters measured with real `mpirun`, every test program's trace
//! simulated to its end with as many messages as its raw logs send, the
//! prediction against the traced run's own time, and class mode against
//! rank-by-rank simulation of an extrapolated trace.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use trace::{Op, ReqId, TraceFile};

/// Held by every test here that runs MPI jobs, so that they run one at a
/// time: the prediction test measures wall time, and the manifest's MPICH
/// runs beside it (busy-polling on two cores) made the halo exchange with
/// sleeps 30 to 45 % slower than predicted in one run of two on a quiet
/// machine.
static MPI_JOBS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`MPI_JOBS`] (a test that failed while holding it leaves it
/// usable).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Traces `name args` (a test program) on `np` ranks of `imp` into
/// `trace`, with these tracer settings besides the file.
fn trace_program(
    imp: &str,
    np: usize,
    name: &str,
    args: &[&str],
    trace: &Path,
    env: &[(&'static str, &str)],
) {
    let mut o = untraced();
    o.traced = true;
    o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
    o.env.extend(env.iter().map(|&(k, v)| (k, v.to_string())));
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let job = mpirun(imp, np, &program(imp, name), &args, &o);
    assert_eq!(job.code, Some(0), "{imp} {name}: {}", job.stderr);
}

/// Measures `imp`'s parameters into `dir`.
fn calibrate(imp: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{imp}.toml"));
    let o = Command::new(env!("CARGO_BIN_EXE_rankscale"))
        .args(["calibrate", "-o"])
        .arg(&out)
        .arg("--")
        .args(launcher(imp, 2))
        .env("HWLOC_COMPONENTS", "-pci,-linuxio")
        .output()
        .expect("run rankscale calibrate");
    assert!(
        o.status.success(),
        "{imp}: calibrate failed: {}",
        text(&o.stderr)
    );
    out
}

#[test]
fn calibration_measures_this_machine() {
    let _jobs = one_at_a_time();
    let dir = scratch("calibrate");
    for imp in mpis() {
        let f = calibrate(imp, &dir);
        let p = simulate::Params::load(&f).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        eprintln!("{imp}: {p:?}");
        assert!(text.contains("measured by `rankscale calibrate`"), "{text}");
        // Shared memory on one node: latencies of a few hundred ns to a few
        // µs, a bandwidth between 0.5 and 200 GB/s, an eager limit between
        // a byte and the largest size measured.
        assert!(p.overhead > 0.0 && p.overhead < 50_000.0, "{p:?}");
        assert!(p.latency < 50_000.0, "{p:?}");
        assert!(p.gap > 0.0 && p.gap < 50_000.0, "{p:?}");
        assert!(p.gap_per_byte > 0.005 && p.gap_per_byte < 2.0, "{p:?}");
        assert!(p.eager_limit >= 1 && p.eager_limit <= 8 << 20, "{p:?}");
    }
    // Bad launches are reported, not hidden.
    let o = rankscale(&["calibrate", "--mpi", "lam"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("mpich or openmpi"),
        "{}",
        text(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Point-to-point messages the raw logs send (every send to a real peer,
/// and every start of a persistent send).
fn sends(events: &[trace::Event]) -> u64 {
    let mut templates: std::collections::HashSet<ReqId> = Default::default();
    let mut n = 0;
    for e in events {
        let real = e.send.is_some_and(|s| s.peer.world().is_some());
        match e.op {
            op if real && op.is_persistent_init() && op.is_send() => {
                templates.extend(e.req);
            }
            op if real
                && (op.is_send()
                    || matches!(
                        op,
                        Op::Sendrecv | Op::SendrecvReplace | Op::Isendrecv | Op::IsendrecvReplace
                    )) =>
            {
                n += 1;
            }
            Op::Start | Op::Startall => {
                n += e.reqs.iter().filter(|r| templates.contains(r)).count() as u64;
            }
            _ => {}
        }
    }
    n
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

#[test]
fn every_test_program_simulates_to_its_end() {
    let _jobs = one_at_a_time();
    let m = manifest();
    let mut failures = Vec::new();
    let mut done = 0;
    for imp in mpis() {
        for run in m.runs(imp) {
            let dir = scratch(&format!("{imp}-sim-{}", run.name));
            let trace = dir.join("app.trace");
            let mut o = traced_raw(imp, &dir.join("raw"));
            o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
            let job = mpirun(imp, run.np, &program(imp, &run.binary), &run.args, &o);
            assert_eq!(job.code, Some(0), "{imp} {}: {}", run.name, job.stderr);
            let out = rankscale(&[
                "simulate",
                trace.to_str().unwrap(),
                "--json",
                "--mode",
                "ranks",
            ]);
            if run.binary == "threads" {
                let err = text(&out.stderr);
                if out.status.success() || !err.contains("several threads") {
                    failures.push(format!("{imp} threads: not refused clearly: {err}"));
                }
                continue;
            }
            if !out.status.success() {
                failures.push(format!("{imp} {}: {}", run.name, text(&out.stderr)));
                continue;
            }
            let v = json(&out);
            let logs = raw_logs(&dir.join("raw"), run.np);
            let events: u64 = logs.iter().map(|l| l.len() as u64).sum();
            let messages: u64 = logs.iter().map(|l| sends(l)).sum();
            let got = (v["events"].as_u64(), v["messages"].as_u64());
            if got != (Some(events), Some(messages)) {
                failures.push(format!(
                    "{imp} {}: simulated {got:?} events and messages, the raw logs have \
                     {events} and {messages}",
                    run.name
                ));
            } else if v["time_ns"].as_f64().is_none_or(|t| t <= 0.0) {
                failures.push(format!("{imp} {}: no predicted time", run.name));
            } else {
                done += 1;
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    eprintln!("{done} traces simulated to their end");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn predictions_follow_the_traced_runs() {
    let _jobs = one_at_a_time();
    let imp = "openmpi";
    let dir = scratch("sim-accuracy");
    let params = calibrate(imp, &dir);
    let mut table = Vec::new();
    let mut bad = Vec::new();
    // A halo exchange with sleeps for computation (so that sharing two
    // cores does not change it), with one rank 60 ms late in iteration 10:
    // with the recorded timeline, and from the histograms alone. Within
    // 15 % of the range of up to three traced runs: here −1.7 to −7.5 %.
    // (A CI machine once saw −15.9 %: the traced run's wall time then
    // counted the tracer's merge at MPI_Finalize, 26 ms of a 189 ms run at
    // 4 ranks once the merge's waits slept longer.)
    let cases: [(&str, usize, &[&str], bool); 4] = [
        (
            "late sender",
            4,
            &["-i", "40", "-m", "sender", "-r", "3", "-t", "10"],
            true,
        ),
        (
            "late sender",
            9,
            &["-i", "40", "-m", "sender", "-r", "3", "-t", "10"],
            true,
        ),
        (
            "late receiver",
            9,
            &["-i", "40", "-m", "receiver", "-r", "4", "-t", "10"],
            true,
        ),
        ("no delay", 9, &["-i", "60", "-m", "none"], false),
    ];
    for (what, np, args, timeline) in cases {
        let trace = dir.join(format!("ls.{np}.trace"));
        let env: &[(&str, &str)] = if timeline {
            &[("RANKSCALE_TIMELINE", "1")]
        } else {
            &[]
        };
        trace_program(imp, np, "latestencil", args, &trace, env);
        let out = rankscale(&[
            "simulate",
            trace.to_str().unwrap(),
            "--params",
            params.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v = json(&out);
        let (pred, real) = (
            v["rank0_ns"].as_f64().unwrap(),
            v["traced_ns"].as_f64().unwrap(),
        );
        // Another traced run of the same program, when the first misses.
        let again = || {
            let t = dir.join(format!("ls.{np}.again.trace"));
            trace_program(imp, np, "latestencil", args, &t, env);
            TraceFile::read(&t).unwrap().meta.wall_ns as f64
        };
        let (close, runs) = within_real_runs(pred, 0.15, real, again);
        let runs: Vec<String> = runs.iter().map(|r| format!("{:.1}", r / 1e6)).collect();
        table.push(format!(
            "{what:<14} {np:>3} ranks  {:>8.1} ms predicted  {:>8.1} ms traced  {:+.1} %  ({}; traced runs: {} ms)",
            pred / 1e6,
            real / 1e6,
            100.0 * (pred - real) / real,
            v["computation"].as_str().unwrap_or(""),
            runs.join(", ")
        ));
        if !close {
            bad.push(table.last().unwrap().clone());
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        bad.is_empty(),
        "more than 15 % off every traced run:\n{}",
        bad.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rankscale simulate TRACE ARGS...`, which must succeed.
fn simulated(trace: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec!["simulate", trace.to_str().unwrap()];
    a.extend_from_slice(args);
    let out = rankscale(&a);
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

/// One rank's single accident, from the histograms alone: the halo
/// exchange with sleeps whose rank 1 is 60 ms late once in 60 iterations,
/// traced without the timeline, against the same exchange without the
/// delay. The delay is one sample among the four ranks' 240, dealt to one
/// rank and step, so every seed predicts the run about 60 ms longer: once,
/// as recorded. Drawn on each rank with its frequency (until 2026-12-02) the
/// seeds gave it none to four times (−3 to +238 ms for seeds 1 to 10).
#[test]
fn one_ranks_single_delay_is_simulated_once_for_every_seed() {
    let _jobs = one_at_a_time();
    let imp = "openmpi";
    let dir = scratch("sim-deal");
    let common = ["-i", "60", "-r", "1", "-t", "20", "-d", "60"];
    let mut traces = Vec::new();
    let mut wall = Vec::new();
    for mode in ["none", "sender"] {
        let trace = dir.join(format!("ls.{mode}.trace"));
        let args: Vec<&str> = common.iter().copied().chain(["-m", mode]).collect();
        trace_program(imp, 4, "latestencil", &args, &trace, &[]);
        wall.push(TraceFile::read(&trace).unwrap().meta.wall_ns as f64 / 1e6);
        traces.push(trace);
    }
    let predict = |trace: &Path, seed: u32| {
        let out = simulated(trace, &["--seed", &seed.to_string(), "--json"]);
        json(&out)["rank0_ns"].as_f64().unwrap() / 1e6
    };
    let longer: Vec<f64> = (1..=8)
        .map(|seed| predict(&traces[1], seed) - predict(&traces[0], seed))
        .collect();
    // The truth is what the delay did to the traced runs: about 60 ms, less
    // where the run without it was itself slowed (a loaded machine once
    // gave 26 to 40 ms for every seed, the same for all). Dealt zero or two
    // times, a seed would miss it by 60 ms.
    let real = wall[1] - wall[0];
    assert!(
        longer.iter().all(|ms| (ms - real).abs() < 30.0),
        "the 60 ms delay, as ms longer than the run without it, seeds 1 to 8: {longer:.1?}; \
         in the traced runs: {real:.1} ms"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--seeds N`: the run of the median seed, with every seed's times. From
/// its histograms alone the halo exchange with sleeps and one late rank
/// draws differently for every seed; the prediction shown must be the
/// median one, the same as that seed simulated alone, and the range must be
/// the seeds' own. With the timeline of every rank there is nothing to
/// draw: one run, and no seeds listed.
#[test]
fn seeds_give_the_median_run_and_the_spread() {
    let _jobs = one_at_a_time();
    let imp = "openmpi";
    let dir = scratch("sim-seeds");
    let args = [
        "-i", "40", "-m", "sender", "-r", "1", "-t", "10", "-d", "20",
    ];
    let drawn = dir.join("drawn.trace");
    trace_program(imp, 4, "latestencil", &args, &drawn, &[]);
    let v = json(&simulated(
        &drawn,
        &["--seeds", "5", "--seed", "3", "--json"],
    ));
    let runs = v["seeds"].as_array().expect("a seeds array");
    let seeds: Vec<u64> = runs.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [3, 4, 5, 6, 7]);
    let mut times: Vec<f64> = runs
        .iter()
        .map(|r| r["rank0_ns"].as_f64().unwrap())
        .collect();
    times.sort_by(f64::total_cmp);
    let shown = v["rank0_ns"].as_f64().unwrap();
    assert_eq!(shown, times[2], "the median of {times:?}");
    assert!(times[4] > times[0], "the seeds drew alike: {times:?}");
    let seed = v["seed"].as_u64().unwrap().to_string();
    let alone = json(&simulated(&drawn, &["--seed", &seed, "--json"]));
    assert_eq!(
        alone["rank0_ns"].as_f64().unwrap(),
        shown,
        "seed {seed} alone"
    );
    assert!(alone["seeds"].as_array().unwrap().is_empty());
    let out = simulated(&drawn, &["--seeds", "5", "--seed", "3"]);
    assert!(
        text(&out.stdout).contains("over 5 seeds (3 to 7): rank 0 from"),
        "{}",
        text(&out.stdout)
    );
    let bad = rankscale(&["simulate", drawn.to_str().unwrap(), "--seeds", "0"]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("--seeds must be at least 1"));
    // Recorded computation: nothing to draw.
    let timed = dir.join("timed.trace");
    trace_program(
        imp,
        4,
        "latestencil",
        &args,
        &timed,
        &[("RANKSCALE_TIMELINE", "1")],
    );
    let v = json(&simulated(&timed, &["--seeds", "5", "--json"]));
    assert_eq!(v["computation"], "recorded (timeline)");
    assert!(v["seeds"].as_array().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn classes_stand_for_their_ranks() {
    let _jobs = one_at_a_time();
    let imp = "openmpi";
    let dir = scratch("sim-classes");
    let mut inputs = Vec::new();
    for g in ["2x2", "3x3", "4x4", "5x5"] {
        let (a, b) = g.split_once('x').unwrap();
        let np: usize = a.parse::<usize>().unwrap() * b.parse::<usize>().unwrap();
        let f = dir.join(format!("st.{np}.trace"));
        let args = [
            "-d", "2", "-p", g, "-t", "mesh", "-i", "40", "-k", "3", "-s", "weak",
        ];
        trace_program(imp, np, "stencil", &args, &f, &[]);
        inputs.push(f.display().to_string());
    }
    let predict = |ranks: u32, mode: &str, extra: &[&str]| -> serde_json::Value {
        let out = dir.join(format!("st.x{ranks}.trace"));
        if !out.exists() {
            let mut a = vec!["extrap", "-o", out.to_str().unwrap()];
            let r = ranks.to_string();
            a.extend(["--ranks", &r]);
            a.extend(inputs.iter().map(String::as_str));
            let o = rankscale(&a);
            assert!(o.status.success(), "{}", text(&o.stderr));
        }
        let mut a = vec!["simulate", out.to_str().unwrap(), "--json", "--mode", mode];
        a.extend(extra);
        let o = rankscale(&a);
        assert!(o.status.success(), "{}", text(&o.stderr));
        json(&o)
    };
    // 64 x 64: every rank, and one per class; messages eager, and every
    // message by rendezvous (`--S 1`, where a class's stream can have no
    // reader among the representatives), with and without computation.
    for extra in [&[][..], &["--S", "1"], &["--S", "1", "--no-compute"]] {
        let all = predict(4096, "ranks", extra);
        let cls = predict(4096, "classes", extra);
        let (a, c) = (
            all["time_ns"].as_f64().unwrap(),
            cls["time_ns"].as_f64().unwrap(),
        );
        eprintln!(
            "4096 ranks {extra:?}: {:.3} ms rank by rank in {:.2} s, {:.3} ms by class ({}) in \
             {:.3} s",
            a / 1e6,
            all["elapsed_s"].as_f64().unwrap(),
            c / 1e6,
            cls["mode"],
            cls["elapsed_s"].as_f64().unwrap()
        );
        assert!(
            ((c - a) / a).abs() < 0.01,
            "{extra:?}: {c} by class against {a} rank by rank"
        );
        assert_eq!(all["events"], cls["events"]);
        assert_eq!(all["messages"], cls["messages"]);
    }
    // A million ranks by class, chosen on its own (`--mode auto`).
    let m = predict(1 << 20, "auto", &[]);
    eprintln!(
        "1048576 ranks: {:.3} s predicted in {:.2} s ({})",
        m["time_ns"].as_f64().unwrap() / 1e9,
        m["elapsed_s"].as_f64().unwrap(),
        m["mode"]
    );
    // The 9 classes of a 2D mesh's structure, split by their distance
    // from the edges.
    let mode = m["mode"].as_str().unwrap();
    assert!(
        mode.starts_with("by class:") && mode.contains("(9 by structure"),
        "{mode}"
    );
    let n = m["per_rank"].as_array().map_or(0, Vec::len);
    assert!((9..=1024).contains(&n), "{n} classes");
    // A trace whose sub-communicators break the symmetry is refused by
    // class (asked for) with the reason.
    let sub = dir.join("subcomm.trace");
    trace_program(imp, 6, "subcomm", &["2x3"], &sub, &[]);
    let o = rankscale(&["simulate", sub.to_str().unwrap(), "--mode", "classes"]);
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("cannot be simulated by class"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_traced_run_dense_in_calls_is_said_to_carry_the_tracers_cost() {
    let _jobs = one_at_a_time();
    // A ring of 2,000 laps makes tens of thousands of calls per rank and
    // second; the halo exchange with sleeps a few hundred. The note names
    // the rate, which is the trace's events per rank over rank 0's traced
    // time, and only for the dense run.
    let imp = mpis()[0];
    let dir = scratch(&format!("{imp}-sim-dense"));
    let cases: [(&str, usize, &[&str], bool); 2] = [
        ("ring", 2, &["2000"], true),
        ("latestencil", 4, &["-i", "20", "-m", "none"], false),
    ];
    for (name, np, args, dense) in cases {
        let trace = dir.join(format!("{name}.trace"));
        trace_program(imp, np, name, args, &trace, &[]);
        let v = json(&rankscale(&["simulate", trace.to_str().unwrap(), "--json"]));
        let rate =
            v["events"].as_f64().unwrap() / np as f64 / (v["traced_ns"].as_f64().unwrap() / 1e9);
        assert_eq!(
            rate >= 10_000.0,
            dense,
            "{imp} {name}: {rate} calls per rank-second"
        );
        let out = rankscale(&["simulate", trace.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let t = text(&out.stdout);
        let note = t.lines().find(|l| l.contains("calls per rank-second"));
        assert_eq!(note.is_some(), dense, "{imp} {name}:\n{t}");
        if let Some(note) = note {
            let said: f64 = note
                .split_whitespace()
                .find_map(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("no rate in {note}"));
            assert!((said - rate).abs() <= 1.0, "{note}: want {rate:.0}");
            assert!(note.contains("benches/walltime"), "{note}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = scratch("sim-bad");
    let f = dir.join("junk.trace");
    std::fs::write(&f, b"not a trace at all").unwrap();
    let o = rankscale(&["simulate", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
    let p = dir.join("p.toml");
    std::fs::write(&p, "L = 1\n").unwrap();
    let o = rankscale(&[
        "simulate",
        f.to_str().unwrap(),
        "--params",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("is not a parameter file"),
        "{}",
        text(&o.stderr)
    );
    let o = rankscale(&["simulate", f.to_str().unwrap(), "--L=-5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("invalid value '-5' for '--L <NS>': out of range"),
        "{}",
        text(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every floating-point option of the command line refuses what it cannot
/// mean, naming the option and the accepted range, before any file is
/// read: NaN (which compares false with every bound, so `--cutoff NaN` and
/// `--max-drop NaN` were taken), the infinities, and values out of range
/// (`--compute-scale 1e300` predicted `+inf %` of the traced run).
#[test]
fn every_floating_point_option_refuses_non_finite_and_out_of_range_values() {
    let dir = scratch("float-options");
    // Never read: the options are refused first.
    let t = dir.join("none.trace");
    let t = t.to_str().unwrap();
    let o = dir.join("out");
    let o = o.to_str().unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["analyze", t, "--cutoff", "NaN"],
            "'NaN' for '--cutoff <CUTOFF>'",
            "not a finite number (expected a finite number of at least 0)",
        ),
        (
            &["analyze", t, "--cutoff=-1"],
            "'-1' for '--cutoff <CUTOFF>'",
            "out of range",
        ),
        (
            &["extrap", "-o", o, "--ranks", "8", "--max-drop", "NaN", t],
            "'NaN' for '--max-drop <PERCENT>'",
            "not a finite number (expected a finite number from 0 to 100)",
        ),
        (
            &["extrap", "-o", o, "--ranks", "8", "--max-drop", "101", t],
            "'101' for '--max-drop <PERCENT>'",
            "out of range",
        ),
        (
            &["simulate", t, "--compute-scale", "1e300"],
            "'1e300' for '--compute-scale <F>'",
            "out of range (expected a finite number from 0 to 1e6)",
        ),
        (
            &["simulate", t, "--bytes-scale", "inf"],
            "'inf' for '--bytes-scale <F>'",
            "not a finite number",
        ),
        (
            &["codegen", t, "-o", o, "--bytes-scale", "1e300"],
            "'1e300' for '--bytes-scale <F>'",
            "out of range (expected a finite number from 0 to 1e6)",
        ),
        (
            &["codegen", t, "-o", o, "--compute-scale", "NaN"],
            "'NaN' for '--compute-scale <F>'",
            "not a finite number",
        ),
        (
            &["simulate", t, "--L", "NaN"],
            "'NaN' for '--L <NS>'",
            "not a finite number (expected a finite number from 0 to 1e12)",
        ),
        (
            &["simulate", t, "--o", "inf"],
            "'inf' for '--o <NS>'",
            "not a finite number",
        ),
        (
            &["simulate", t, "--g", "2e12"],
            "'2e12' for '--g <NS>'",
            "out of range",
        ),
        (
            &["simulate", t, "--G", "NaN"],
            "'NaN' for '--G <NS>'",
            "not a finite number (expected a finite number from 0 to 1e9)",
        ),
        (
            &["simulate", t, "--O", "1e10"],
            "'1e10' for '--O <NS>'",
            "out of range",
        ),
        (
            &["simulate", t, "--io-bandwidth", "0"],
            "'0' for '--io-bandwidth <GB_PER_S>'",
            "out of range (expected a finite number from 0.000001 to 1e6)",
        ),
        (
            &["simulate", t, "--io-bandwidth", "1", "--io-latency", "NaN"],
            "'NaN' for '--io-latency <NS>'",
            "not a finite number",
        ),
    ];
    for (args, option, message) in cases {
        let out = rankscale(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("invalid value {option}: {message}")),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// MPI-IO on a file system of a given bandwidth, against the value
/// computed by hand from the program's own description: io_checkpoint 20 5
/// 262144 on 4 ranks writes 4 checkpoints of 1 MiB per rank with
/// `File_write_at_all`, then rank 0 reads the 4 MiB file alone with
/// `File_read_at` (on `MPI_COMM_SELF`). At 0.01 GB/s (0.01 bytes per ns)
/// and 1 ms a call, rank 0's run must grow by 4 × 4 MiB / 0.01 (the
/// collectives move every member's bytes) + 4 MiB / 0.01 (its read, alone
/// on its file) + 16 ms (its 16 MPI-IO calls: 5 opens, 4 writes, 5 closes,
/// the read and the delete): 2,113.2 ms. Without the option MPI-IO is free,
/// and the output says so.
#[test]
fn mpi_io_costs_its_bytes_at_the_given_bandwidth() {
    let _jobs = one_at_a_time();
    for imp in mpis() {
        let dir = scratch(&format!("sim-io-{imp}"));
        let trace = dir.join("ck.trace");
        let ck = dir.join("ck.dat");
        let args = ["20", "5", "262144", ck.to_str().unwrap()];
        trace_program(imp, 4, "io_checkpoint", &args, &trace, &[]);
        let free = simulated(&trace, &["--json"]);
        let free_ns = json(&free)["rank0_ns"].as_f64().unwrap();
        assert!(json(&free)["io_model"].is_null());
        let text_free = text(&simulated(&trace, &[]).stdout);
        assert!(
            text_free.contains("MPI-IO: 52 calls taken as local calls of no cost"),
            "{imp}: {text_free}"
        );
        let io = ["--io-bandwidth", "0.01", "--io-latency", "1e6"];
        let fs = simulated(&trace, &[&io[..], &["--json"]].concat());
        let fs_ns = json(&fs)["rank0_ns"].as_f64().unwrap();
        let mib4 = 4.0 * 1048576.0;
        let expected_ms = (4.0 * mib4 / 0.01 + mib4 / 0.01 + 16.0 * 1e6) / 1e6;
        let grew_ms = (fs_ns - free_ns) / 1e6;
        assert!(
            (grew_ms - expected_ms).abs() < 0.005 * expected_ms,
            "{imp}: rank 0 grew by {grew_ms:.1} ms, by hand {expected_ms:.1} ms"
        );
        let text_fs = text(&simulated(&trace, &io).stdout);
        assert!(
            text_fs.contains("MPI-IO: 52 calls on a file system of 0.010 GB/s"),
            "{imp}: {text_fs}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A `--bytes-scale` within the bound that would still make one of the
/// trace's counts larger than an MPI count is refused for that trace,
/// with the largest scale it takes: the benchmark clamped such counts to
/// 2^31 - 1 and allocated that many elements for every buffer.
#[test]
fn a_bytes_scale_that_overflows_a_count_of_the_trace_is_refused() {
    let dir = scratch("bytes-scale-overflow");
    let input = dir.join("pertext");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("Process0.txt"),
        "Send 1 t1 1000 t2 2000 t 0 l 4194304\n",
    )
    .unwrap();
    std::fs::write(
        input.join("Process1.txt"),
        "Recv 0 t1 1000 t2 2000 t 0 l 4194304\n",
    )
    .unwrap();
    let t = dir.join("big.trace");
    let t = t.to_str().unwrap();
    let out = rankscale(&[
        "import",
        "--format",
        "pertext",
        input.to_str().unwrap(),
        "-o",
        t,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let c = dir.join("bench.c");
    let c = c.to_str().unwrap();
    let want = "rankscale: error: --bytes-scale 1000 makes the trace's largest message count, \
                4194304 elements, 4194304000: more than an MPI count holds (2147483647); at most \
                511 for this trace";
    for args in [
        &["codegen", t, "-o", c, "--bytes-scale", "1000"][..],
        &["simulate", t, "--bytes-scale", "1000"],
    ] {
        let out = rankscale(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!dir.join("bench.c").exists(), "no benchmark written");
    let out = rankscale(&["codegen", t, "-o", c, "--bytes-scale", "511"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rankscale calibrate` measures between exactly two ranks: a launch
/// command that asks for another count is refused before it runs, and
/// the measurement refuses any other world size itself (rank 0 says so,
/// the job fails) where the command does not say how many ranks it starts.
/// Three ranks gave L = 4.1 ms.
#[test]
fn calibration_refuses_any_rank_count_but_two() {
    let dir = scratch("calibrate-three");
    let out_file = dir.join("p.toml");
    for imp in mpis() {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankscale"));
        cmd.args(["calibrate", "-o"])
            .arg(&out_file)
            .arg("--")
            .args(launcher(imp, 3));
        let o = cmd.output().expect("run rankscale calibrate");
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{imp}: {err}");
        assert!(
            err.contains(
                "the launch command asks for 3 ranks (`-n 3`); calibrate measures between \
                 exactly 2: give `-n 2`"
            ),
            "{imp}: {err}"
        );
        assert!(
            !err.contains("measuring"),
            "{imp}: nothing was launched: {err}"
        );

        let _jobs = one_at_a_time();
        let tool = root().join(format!("target/{imp}/release/replay-calibrate"));
        let json = dir.join(format!("{imp}.json"));
        let job = mpirun(
            imp,
            3,
            &tool,
            &[json.display().to_string()],
            &Launch {
                timeout_s: 120,
                ..untraced()
            },
        );
        assert_ne!(job.code, Some(0), "{imp}: {}", job.stderr);
        let said: Vec<&str> = job
            .stderr
            .lines()
            .filter(|l| l.starts_with("replay-calibrate: error"))
            .collect();
        assert_eq!(
            said,
            [
                "replay-calibrate: error: measures between exactly 2 ranks (mpirun -n 2); this job \
              has 3"
            ],
            "{imp}: rank 0 alone says why: {}",
            job.stderr
        );
        assert!(!json.exists(), "{imp}: no samples");
    }
    assert!(!out_file.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
