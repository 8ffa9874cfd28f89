//! End-to-end losslessness: the trace file the shim writes at
//! `MPI_Finalize` (per-rank compression, inter-node merge over PMPI, the
//! binary file) expands, through `rankscale show FILE --expand R`, to
//! exactly the raw log that the same run wrote for rank R, byte for byte,
//! for every rank of every program of the manifest, on both MPI
//! implementations, and for the stencils and the wavefront at larger rank
//! counts.
//!
//! The raw log is the independent truth: it is written event by event by a
//! separate sink of the tracer, before any compression.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Runs one traced job with raw logs and a trace file, then compares every
/// rank's expansion with its raw log. Returns (events, trace bytes).
fn check(
    imp: &str,
    name: &str,
    np: usize,
    bin: &str,
    args: &[String],
) -> Result<(u64, u64), String> {
    let dir = scratch(&format!("{imp}-lossless-{name}"));
    let trace = dir.join("run.trace");
    let mut launch = traced_raw(imp, &dir.join("raw"));
    launch
        .env
        .push(("RANKSCALE_TRACE", trace.display().to_string()));
    let job = mpirun(imp, np, &program(imp, bin), args, &launch);
    if job.code != Some(0) {
        return Err(format!("{imp} {name}: exit {:?}: {}", job.code, job.stderr));
    }
    if !job.stderr.contains("rankscale: trace of") {
        return Err(format!(
            "{imp} {name}: no trace summary on stderr: {}",
            job.stderr
        ));
    }
    let mut events = 0;
    for rank in 0..np {
        let want = std::fs::read(
            dir.join("raw")
                .join(trace::raw::rank_file_name(rank as i32)),
        )
        .map_err(|e| format!("{imp} {name}: raw log of rank {rank}: {e}"))?;
        let got = expand(&trace, rank)?;
        events += want.iter().filter(|&&b| b == b'\n').count() as u64;
        if got != want {
            let (g, w) = (
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
            );
            let first = g.lines().zip(w.lines()).position(|(a, b)| a != b);
            return Err(format!(
                "{imp} {name} rank {rank}: expansion differs from the raw log ({} vs {} lines, first difference at line {:?})",
                g.lines().count(),
                w.lines().count(),
                first.map(|i| i + 1)
            ));
        }
    }
    let size = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((events, size))
}

/// `rankscale show FILE --expand RANK`, as a user runs it.
fn expand(trace: &Path, rank: usize) -> Result<Vec<u8>, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_rankscale"))
        .args([
            "show",
            &trace.display().to_string(),
            "--expand",
            &rank.to_string(),
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "rankscale show --expand {rank} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}

#[test]
fn every_rank_of_every_manifest_program_expands_to_its_raw_log() {
    let m = manifest();
    let mut failures = Vec::new();
    for imp in mpis() {
        for run in m.runs(imp) {
            match check(imp, &run.name, run.np, &run.binary, &run.args) {
                Ok((events, size)) => eprintln!(
                    "{imp} {:<28} np={:<2} {events:>7} events -> {size:>6} bytes",
                    run.name, run.np
                ),
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn larger_runs_expand_to_their_raw_logs() {
    let args = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    // Open MPI takes many ranks well on two cores; MPICH gets a smaller set.
    let runs: Vec<(&str, &str, usize, &str, Vec<String>)> = vec![
        (
            "openmpi",
            "stencil2d_torus_16",
            16,
            "stencil",
            args("-d 2 -i 20 -s weak -n 8"),
        ),
        (
            "openmpi",
            "stencil2d_mesh_25",
            25,
            "stencil",
            args("-d 2 -t mesh -i 20 -s weak -n 8"),
        ),
        (
            "openmpi",
            "stencil3d_torus_27",
            27,
            "stencil",
            args("-d 3 -i 10 -s weak -n 4 -c"),
        ),
        (
            "openmpi",
            "stencil2d_torus_64",
            64,
            "stencil",
            args("-d 2 -i 20 -s weak -n 4"),
        ),
        (
            "openmpi",
            "wavefront_4x4",
            16,
            "wavefront",
            args("-p 4x4 -i 3"),
        ),
        (
            "mpich",
            "stencil2d_mesh_12",
            12,
            "stencil",
            args("-d 2 -t mesh -i 10 -s weak -n 8"),
        ),
    ];
    let mut failures = Vec::new();
    for (imp, name, np, bin, a) in runs {
        if !mpis().contains(&imp) {
            continue;
        }
        match check(imp, name, np, bin, &a) {
            Ok((events, size)) => {
                eprintln!("{imp} {name:<28} np={np:<2} {events:>7} events -> {size:>6} bytes")
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
