//! Replay re-issues a trace faithfully: for every test program of the
//! manifest, on both MPI implementations, the original run (traced, with
//! raw logs and a trace file) is replayed with `mpirun -n P replay FILE`
//! under the tracer, and the replay's raw log of every rank must equal the
//! original's.
//!
//! Ignored in the comparison, and only this: the call-site signatures
//! (`site=`), which name replay's own code instead of the application's.

mod common;

use std::path::Path;

use common::*;

/// Programs whose outcomes depend on timing that replay does not force yet:
/// wildcard receives and probes whose match replay leaves to MPI, polling
/// loops (Test/Iprobe that came back false), Mprobe/Mrecv, and threads.
const NOT_YET: &[&str] = &[
    "wildcard",
    "probes",
    "p2p",
    "p2p_np3",
    "threads",
    "coverage_f77",
    "coverage_usempi",
    "coverage_f08",
];

fn without_sites(text: &str) -> String {
    text.lines()
        .map(|l| {
            l.split(' ')
                .filter(|f| !f.starts_with("site="))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn replay_bin(imp: &str) -> std::path::PathBuf {
    root().join(format!("target/{imp}/release/replay"))
}

fn check(imp: &str, name: &str, np: usize, bin: &Path, args: &[String]) -> Result<(), String> {
    let dir = scratch(&format!("{imp}-replay-{name}"));
    let trace = dir.join("app.trace");
    let mut orig = traced_raw(imp, &dir.join("orig"));
    orig.env
        .push(("RANKSCALE_TRACE", trace.display().to_string()));
    let job = mpirun(imp, np, bin, args, &orig);
    if job.code != Some(0) {
        return Err(format!(
            "{imp} {name}: the original run failed: {}",
            job.stderr
        ));
    }
    let mut rep = traced_raw(imp, &dir.join("replay"));
    rep.env.push(("RANKSCALE_TRACE", "0".into()));
    let rjob = mpirun(
        imp,
        np,
        &replay_bin(imp),
        &[trace.display().to_string()],
        &rep,
    );
    if rjob.code != Some(0) {
        return Err(format!(
            "{imp} {name}: replay failed ({:?}): {}",
            rjob.code, rjob.stderr
        ));
    }
    if !rjob.stdout.contains("replay of") {
        return Err(format!("{imp} {name}: no replay report: {}", rjob.stdout));
    }
    for rank in 0..np as i32 {
        let a = without_sites(&raw_text(&dir.join("orig"), rank));
        let b = without_sites(&raw_text(&dir.join("replay"), rank));
        if a != b {
            let first = a.lines().zip(b.lines()).position(|(x, y)| x != y);
            let line = first.and_then(|i| Some((a.lines().nth(i)?, b.lines().nth(i)?)));
            return Err(format!(
                "{imp} {name} rank {rank}: replay differs from the original ({} vs {} events; first difference: {line:?})",
                a.lines().count(),
                b.lines().count()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn replays_record_the_same_events_as_the_original_runs() {
    let m = manifest();
    let mut failures = Vec::new();
    let mut done = 0;
    for imp in mpis() {
        for run in &m.run {
            if NOT_YET.contains(&run.name.as_str()) {
                continue;
            }
            match check(
                imp,
                &run.name,
                run.np,
                &program(imp, &run.binary),
                &run.args,
            ) {
                Ok(()) => done += 1,
                Err(e) => failures.push(e),
            }
        }
    }
    eprintln!("{done} runs replayed identically");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_wrong_rank_count_is_a_clear_error() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-replay-np"));
        let trace = dir.join("app.trace");
        let mut orig = traced_raw(imp, &dir.join("orig"));
        orig.env
            .push(("RANKSCALE_TRACE", trace.display().to_string()));
        let a: Vec<String> = ["-d", "1", "-i", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let job = mpirun(imp, 4, &program(imp, "stencil"), &a, &orig);
        assert_eq!(job.code, Some(0), "{}", job.stderr);
        let rjob = mpirun(
            imp,
            3,
            &replay_bin(imp),
            &[trace.display().to_string()],
            &untraced(),
        );
        assert_ne!(
            rjob.code,
            Some(0),
            "{imp}: replay on the wrong rank count must fail"
        );
        assert!(
            rjob.stderr
                .contains("a trace of 4 ranks, but replay runs on 3"),
            "{imp}: {}",
            rjob.stderr
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
