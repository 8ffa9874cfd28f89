//! The tracer never hurts the application, stays correct under threads, and
//! records the same events whether blocking waits yield or not.

mod common;

use common::*;

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// An output directory that cannot be created: the shim must warn once per
/// rank and the application must run exactly as untraced.
#[test]
fn unwritable_raw_dir_warns_once_and_leaves_the_application_intact() {
    for imp in mpis() {
        let bin = program(imp, "stencil");
        let a = args(&["-d", "2", "-i", "5"]);
        let plain = mpirun(imp, 4, &bin, &a, &untraced());
        let mut opt = traced_raw(
            imp,
            std::path::Path::new("/proc/rankscale-cannot-write-here"),
        );
        opt.timeout_s = 120;
        let traced = mpirun(imp, 4, &bin, &a, &opt);
        assert_eq!(plain.code, Some(0), "{imp}: {}", plain.stderr);
        assert_eq!(traced.code, plain.code, "{imp}: {}", traced.stderr);
        assert_eq!(traced.stdout, plain.stdout, "{imp}");
        let warnings: Vec<&str> = traced
            .stderr
            .lines()
            .filter(|l| l.starts_with("rankscale: warning"))
            .collect();
        assert_eq!(
            warnings.len(),
            4,
            "{imp}: one warning per rank, got:\n{}",
            traced.stderr
        );
        assert!(
            warnings
                .iter()
                .all(|w| w.contains("cannot write the raw log")),
            "{warnings:?}"
        );
        assert!(
            !traced.stderr.contains("panicked"),
            "{imp}: {}",
            traced.stderr
        );
    }
}

/// A panic inside the tracer (injected with `RANKSCALE_FAULT=panic@N`) is
/// caught at the FFI boundary: one warning, tracing stops, and the
/// application's output and exit code are unchanged.
#[test]
fn a_panic_in_the_tracer_never_crosses_the_ffi_boundary() {
    for imp in mpis() {
        let bin = program(imp, "stencil");
        let a = args(&["-d", "2", "-i", "5"]);
        let plain = mpirun(imp, 4, &bin, &a, &untraced());
        let dir = scratch(&format!("{imp}-panic"));
        let mut opt = traced_raw(imp, &dir);
        opt.env.push(("RANKSCALE_FAULT", "panic@7".into()));
        // With a trace file asked for, the merge at MPI_Finalize still runs
        // on every rank and must not hang although no rank has a trace.
        let file = dir.join("run.trace");
        opt.env
            .push(("RANKSCALE_TRACE", file.display().to_string()));
        let traced = mpirun(imp, 4, &bin, &a, &opt);
        assert!(
            traced.stderr.contains("no rank has a trace; no trace file") && !file.exists(),
            "{imp}: a trace of failed ranks must not be written:\n{}",
            traced.stderr
        );
        assert_eq!(traced.code, plain.code, "{imp}: {}", traced.stderr);
        assert_eq!(traced.stdout, plain.stdout, "{imp}");
        let warnings = traced
            .stderr
            .lines()
            .filter(|l| l.starts_with("rankscale: warning") && l.contains("internal error"))
            .count();
        assert_eq!(
            warnings, 4,
            "{imp}: one warning per rank:\n{}",
            traced.stderr
        );
        assert!(
            !traced.stderr.contains("panicked at"),
            "{imp}: the panic message leaked:\n{}",
            traced.stderr
        );
    }
}

/// Rank 0 takes longer to write the merged trace than the merge's deadline
/// (injected with `RANKSCALE_FAULT=slow-write@S`, as a loaded node made it:
/// 125 ranks on two cores). The other ranks wait for its word at
/// `MPI_Finalize` however long it takes: they gave up once, left the
/// broadcast pending, and Open MPI 4.1 crashed in `MPI_Finalize` (16 ranks
/// here) while MPICH's UCX printed warnings on the application's stdout.
/// The application's output and exit code are unchanged, no rank warns, the
/// trace is written and the ranks' snapshots are gone.
#[test]
fn a_rank_0_slower_than_the_deadline_leaves_the_job_intact() {
    for imp in mpis() {
        // 16 ranks: with 4 the broadcast's tree had no inner rank to
        // forward it, and the crash did not show.
        let bin = program(imp, "grid3d");
        let a = args(&["-i", "4", "-k", "2"]);
        let plain = mpirun(imp, 16, &bin, &a, &untraced());
        let dir = scratch(&format!("{imp}-slowwrite"));
        let mut opt = traced_raw(imp, &dir);
        let file = dir.join("run.trace");
        opt.env
            .push(("RANKSCALE_TRACE", file.display().to_string()));
        opt.env.push(("RANKSCALE_MERGE_TIMEOUT_S", "1".into()));
        opt.env.push(("RANKSCALE_FLUSH_S", "0.5".into()));
        opt.env.push(("RANKSCALE_FAULT", "slow-write@4".into()));
        let traced = mpirun(imp, 16, &bin, &a, &opt);
        assert_eq!(traced.code, plain.code, "{imp}: {}", traced.stderr);
        assert_eq!(traced.stdout, plain.stdout, "{imp}");
        assert!(
            !traced.stderr.contains("rankscale: warning"),
            "{imp}: no rank warns:\n{}",
            traced.stderr
        );
        let t = trace::TraceFile::read(&file)
            .unwrap_or_else(|e| panic!("{imp}: the trace is written: {e}"));
        assert_eq!(t.trace.ranks().len(), 16, "{imp}");
        let snapshots = dir.join("run.trace.d");
        assert!(
            !snapshots.exists(),
            "{imp}: the snapshots in {} are removed",
            snapshots.display()
        );
    }
}

/// `MPI_THREAD_MULTIPLE`: four threads per rank each make point-to-point and
/// collective calls on their own communicator. Repeated runs must all finish
/// (no deadlock) with every event recorded (no loss, no race).
#[test]
fn multithreaded_program_records_every_event_without_races() {
    let runs: usize = std::env::var("RANKSCALE_THREAD_REPEATS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    for imp in mpis() {
        let bin = program(imp, "threads");
        let iters = 20;
        let a = args(&[&iters.to_string()]);
        for k in 0..runs {
            let dir = scratch(&format!("{imp}-threads-{k}"));
            let mut opt = traced_raw(imp, &dir);
            opt.timeout_s = 120;
            let job = mpirun(imp, 2, &bin, &a, &opt);
            assert_eq!(job.code, Some(0), "{imp} run {k}: {}", job.stderr);
            for (rank, events) in raw_logs(&dir, 2).iter().enumerate() {
                if let Err(e) = requests_are_consistent(events) {
                    panic!("{imp} run {k} rank {rank}: {e}");
                }
                // Per thread: iters × (Sendrecv + Allreduce + Isend + Irecv
                // + Waitall) on its own communicator.
                for thread in 0..4u32 {
                    let mine: Vec<_> = events.iter().filter(|e| e.thread == thread).collect();
                    let n = |op| mine.iter().filter(|e| e.op == op).count();
                    use trace::Op::*;
                    if thread == 0 {
                        assert_eq!(n(InitThread), 1, "{imp} run {k} rank {rank}");
                    }
                    let workers: Vec<u32> = events.iter().map(|e| e.thread).collect();
                    assert!(
                        workers.iter().all(|&t| t <= 4),
                        "{imp}: unexpected thread index"
                    );
                    let _ = (Sendrecv, Allreduce);
                }
                let per_op = counts(events);
                use trace::Op::*;
                for (op, want) in [
                    (Sendrecv, 4 * iters),
                    (Allreduce, 4 * iters),
                    (Isend, 4 * iters),
                    (Irecv, 4 * iters),
                    (Waitall, 4 * iters),
                    (CommDup, 4),
                    (CommFree, 4),
                    (InitThread, 1),
                    (Finalize, 1),
                ] {
                    assert_eq!(
                        per_op.get(&op).copied().unwrap_or(0),
                        want as u64,
                        "{imp} run {k} rank {rank}: {}",
                        op.name()
                    );
                }
                // Each worker thread's events are on one communicator.
                let mut by_thread: std::collections::BTreeMap<
                    u32,
                    std::collections::BTreeSet<u32>,
                > = Default::default();
                for e in events
                    .iter()
                    .filter(|e| matches!(e.op, Sendrecv | Allreduce | Isend | Irecv))
                {
                    by_thread.entry(e.thread).or_default().insert(e.comm.0);
                }
                assert_eq!(
                    by_thread.len(),
                    4,
                    "{imp} run {k} rank {rank}: four worker threads"
                );
                assert!(
                    by_thread.values().all(|c| c.len() == 1),
                    "{imp}: a thread used two communicators: {by_thread:?}"
                );
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// The yielding wait mode changes how the shim waits, never what it records.
#[test]
fn yielding_waits_record_the_same_events() {
    for imp in ["openmpi"].into_iter().filter(|i| mpis().contains(i)) {
        for (bin, a, np) in [
            ("stencil", args(&["-d", "2", "-i", "6", "-k", "2"]), 4),
            ("collectives", args(&["2"]), 4),
            ("persistent", args(&["4"]), 4),
            ("ring", args(&["3"]), 3),
        ] {
            let prog = program(imp, bin);
            let d1 = scratch(&format!("{imp}-{bin}-busy"));
            let d2 = scratch(&format!("{imp}-{bin}-yield"));
            let mut busy = traced_raw(imp, &d1);
            busy.env.retain(|(k, _)| *k != "RANKSCALE_YIELD");
            let mut yielding = traced_raw(imp, &d2);
            yielding.env.push(("RANKSCALE_YIELD", "1".into()));
            let j1 = mpirun(imp, np, &prog, &a, &busy);
            let j2 = mpirun(imp, np, &prog, &a, &yielding);
            assert_eq!(j1.code, Some(0), "{}", j1.stderr);
            assert_eq!(j2.code, Some(0), "{}", j2.stderr);
            assert_eq!(j1.stdout, j2.stdout);
            for r in 0..np as i32 {
                assert_eq!(raw_text(&d1, r), raw_text(&d2, r), "{imp} {bin} rank {r}");
            }
        }
    }
}

/// `MPI_Abort` is recorded and the raw log flushed before MPI kills the
/// job, and the job's exit code is the same traced and untraced.
#[test]
fn abort_is_recorded_and_flushed_before_the_job_dies() {
    for imp in mpis() {
        let bin = program(imp, "abort");
        let a = args(&["3"]);
        let plain = mpirun(imp, 2, &bin, &a, &untraced());
        let dir = scratch(&format!("{imp}-abort"));
        let traced = mpirun(imp, 2, &bin, &a, &traced_raw(imp, &dir));
        assert_ne!(plain.code, Some(0), "{imp}: an aborted job fails");
        assert_eq!(traced.code, plain.code, "{imp}: {}", traced.stderr);
        // (stdout is not compared: whether the launcher forwards rank 0's
        // last line before it kills the job is a race, traced or not.)
        let rank0 = trace::raw::read_log(&dir.join(trace::raw::rank_file_name(0))).unwrap();
        let ops: Vec<&str> = rank0.iter().map(|e| e.op.name()).collect();
        // MPI_Comm_rank is recorded without detail.
        assert_eq!(ops, ["Init", "Comm_rank", "Barrier", "Abort"], "{imp}");
        assert_eq!(rank0[3].value, Some(3), "{imp}: the error code is recorded");
    }
}

/// Tracing fails on some ranks only (ranks 2 and 3 of 4, by an MPMD launch
/// that injects the fault there). The application's results stay right:
/// in yield mode the failed ranks keep the same waiting discipline (a
/// nonblocking collective must not meet a blocking one; before this was
/// kept, MPICH gave a wrong stencil result here). The merge at
/// `MPI_Finalize` neither hangs nor loses the healthy ranks: rank 0 warns
/// how many are missing, and ranks 0 and 1 expand to their raw logs.
#[test]
fn a_trace_survives_ranks_whose_tracing_failed() {
    for imp in mpis() {
        let bin = program(imp, "stencil");
        let dir = scratch(&format!("{imp}-partial"));
        let file = dir.join("run.trace");
        let mut opt = traced_raw(imp, &dir.join("raw"));
        opt.env
            .push(("RANKSCALE_TRACE", file.display().to_string()));
        let prog = ["-d", "1", "-i", "6"];
        let mut a: Vec<String> = prog.iter().map(|s| s.to_string()).collect();
        // A second application context: 2 more ranks with the fault.
        a.push(":".into());
        a.extend(["-n", "2"].map(String::from));
        match imp {
            "mpich" => a.extend(["-env", "RANKSCALE_FAULT", "panic@5"].map(String::from)),
            _ => {
                // Open MPI's -x options belong to one application context:
                // give the second one the whole environment too.
                a.extend(["-x", "RANKSCALE_FAULT=panic@5"].map(String::from));
                a.extend(["-x".into(), format!("LD_PRELOAD={}", shim(imp).display())]);
                for (k, v) in &opt.env {
                    a.extend(["-x".into(), format!("{k}={v}")]);
                }
            }
        }
        a.push(bin.display().to_string());
        a.extend(prog.iter().map(|s| s.to_string()));
        let job = mpirun(imp, 2, &bin, &a, &opt);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        assert!(job.stdout.contains("verify=ok"), "{imp}: {}", job.stdout);
        assert!(
            job.stderr.contains("2 rank(s) are missing from the trace"),
            "{imp}: {}",
            job.stderr
        );
        let f = trace::TraceFile::read(&file).unwrap();
        assert_eq!(f.trace.ranks().to_string(), "<1 0 2 1>", "{imp}");
        for rank in 0..2u32 {
            let mut got = String::new();
            for ev in f.trace.rank_trace(rank).unwrap().expand() {
                got.push_str(&trace::raw::event_line(&ev));
                got.push('\n');
            }
            assert_eq!(
                got,
                raw_text(&dir.join("raw"), rank as i32),
                "{imp} rank {rank}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Tracer settings the tracer cannot read: each rank says so in one
/// warning line per variable, and the setting keeps its default (off).
/// `RANKSCALE_TIMELINE=2` and `RANKSCALE_STEPS=-1` used to switch their
/// feature on, `RANKSCALE_YIELD=abc` and `RANKSCALE_FAULT=garbage` were
/// dropped without a word.
#[test]
fn unreadable_settings_warn_and_keep_their_defaults() {
    for imp in mpis() {
        let bin = program(imp, "stencil");
        let a = args(&["-d", "2", "-i", "5"]);
        let plain = mpirun(imp, 4, &bin, &a, &untraced());
        let dir = scratch(&format!("{imp}-bad-settings"));
        let file = dir.join("run.trace");
        let mut opt = untraced();
        opt.traced = true;
        opt.env
            .push(("RANKSCALE_TRACE", file.display().to_string()));
        let bad = [
            ("RANKSCALE_TIMELINE", "2"),
            ("RANKSCALE_STEPS", "-1"),
            ("RANKSCALE_YIELD", "abc"),
            ("RANKSCALE_FAULT", "garbage"),
        ];
        // The harness sets RANKSCALE_YIELD itself on some launches.
        opt.env.retain(|(k, _)| !bad.iter().any(|(b, _)| b == k));
        opt.env.extend(bad.iter().map(|&(k, v)| (k, v.to_string())));
        let traced = mpirun(imp, 4, &bin, &a, &opt);
        assert_eq!(traced.code, plain.code, "{imp}: {}", traced.stderr);
        assert_eq!(traced.stdout, plain.stdout, "{imp}");
        for (name, value) in bad {
            let warned = traced
                .stderr
                .lines()
                .filter(|l| {
                    l.starts_with("rankscale: warning: ignoring")
                        && l.contains(&format!("{name}=\"{value}\""))
                })
                .count();
            assert_eq!(
                warned, 4,
                "{imp}: {name}, one line per rank:\n{}",
                traced.stderr
            );
        }
        let f = trace::TraceFile::read(&file).unwrap();
        assert!(f.timelines.is_empty(), "{imp}: no timeline");
        assert!(f.series.is_empty(), "{imp}: no MPI time series");
        assert!(f.meta.partial.is_empty(), "{imp}: no fault injected");
    }
}
