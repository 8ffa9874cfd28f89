//! Every function family is intercepted on both implementations, from C and
//! from Fortran, and every call is counted exactly once.
//!
//! The independent truth is `tests/programs/manifest.toml`: for each program
//! run, the number of calls of each operation that each rank makes, worked
//! out by hand from the program's source. Each run is made twice with real
//! `mpirun`, untraced and traced; the two must print the same output and
//! exit with the same code, and the traced run's raw logs must hold exactly
//! the expected number of events of each operation on each rank.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use compress::{Family, Op};

/// What the manifest says of one operation on one rank.
#[derive(Debug, PartialEq)]
enum Want {
    Exactly(u64),
    AtLeast(u64),
}

fn want(v: &toml::Value, rank: usize, np: usize, what: &str) -> Want {
    match v {
        toml::Value::Integer(n) => Want::Exactly(*n as u64),
        toml::Value::Array(a) => {
            assert_eq!(a.len(), np, "{what}: per-rank array must have np entries");
            want(&a[rank], rank, np, what)
        }
        toml::Value::String(s) => {
            let n = s
                .strip_prefix(">=")
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or_else(|| panic!("{what}: bad expectation {s:?}"));
            Want::AtLeast(n)
        }
        other => panic!("{what}: bad expectation {other:?}"),
    }
}

/// The programs written in Fortran, by the interface they use.
fn fortran_interface(binary: &str) -> Option<&'static str> {
    if binary.contains("f77") {
        Some("mpif.h")
    } else if binary.contains("f08") {
        Some("use mpi_f08")
    } else if binary.contains("usempi") || binary == "stencil2d" {
        Some("use mpi")
    } else {
        None
    }
}

#[test]
fn every_family_is_intercepted_once_per_call_from_c_and_fortran() {
    let m = manifest();
    let mut failures = Vec::new();
    for imp in mpis() {
        // Operations seen per language/interface, for the coverage check.
        let mut seen: BTreeMap<&str, BTreeSet<Op>> = BTreeMap::new();
        for run in &m.run {
            let bin = program(imp, &run.binary);
            let plain = mpirun(imp, run.np, &bin, &run.args, &untraced());
            let dir = scratch(&format!("{imp}-{}", run.name));
            let traced = mpirun(imp, run.np, &bin, &run.args, &traced_raw(imp, &dir));
            let what = format!("{imp} {} (np {})", run.name, run.np);
            eprintln!(
                "{what}: untraced {:.2}s, traced {:.2}s",
                plain.elapsed.as_secs_f64(),
                traced.elapsed.as_secs_f64()
            );
            if plain.code != Some(0) {
                failures.push(format!(
                    "{what}: untraced run failed: {:?}\n{}",
                    plain.code, plain.stderr
                ));
                continue;
            }
            if traced.code != plain.code || traced.stdout != plain.stdout {
                failures.push(format!(
                    "{what}: traced run differs\n--- untraced ({:?})\n{}\n--- traced ({:?})\n{}\n{}",
                    plain.code, plain.stdout, traced.code, traced.stdout, traced.stderr
                ));
                continue;
            }
            if traced.stderr.contains("rankscale: warning") {
                failures.push(format!("{what}: tracer warned:\n{}", traced.stderr));
            }
            let logs = match try_raw_logs(&dir, run.np) {
                Ok(l) => l,
                Err(e) => {
                    failures.push(format!("{what}: {e}"));
                    continue;
                }
            };
            let lang = fortran_interface(&run.binary).unwrap_or("C");
            for (rank, events) in logs.iter().enumerate() {
                if let Err(e) = requests_are_consistent(events) {
                    failures.push(format!("{what} rank {rank}: {e}"));
                }
                let got = counts(events);
                seen.entry(lang).or_default().extend(got.keys().copied());
                for (name, v) in &run.expect {
                    let op = Op::from_name(name)
                        .unwrap_or_else(|| panic!("manifest {}: unknown op {name}", run.name));
                    let n = got.get(&op).copied().unwrap_or(0);
                    let ok = match want(v, rank, run.np, &run.name) {
                        Want::Exactly(w) => n == w,
                        Want::AtLeast(w) => n >= w,
                    };
                    if !ok {
                        failures.push(format!(
                            "{what} rank {rank}: {name} recorded {n} times, expected {v}"
                        ));
                    }
                }
                for (op, n) in &got {
                    if !run.expect.contains_key(op.name()) {
                        failures.push(format!(
                            "{what} rank {rank}: {} recorded {n} times, expected none",
                            op.name()
                        ));
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        // Coverage: C programs call every operation of the contract, and each
        // Fortran interface reaches every function family.
        // (Abort ends the job, so it has its own test in robustness.rs.)
        let c_ops = seen.get("C").cloned().unwrap_or_default();
        for op in Op::ALL.iter().filter(|o| **o != Op::Abort) {
            if !c_ops.contains(op) {
                failures.push(format!("{imp}: no C test program recorded {}", op.name()));
            }
        }
        let families: BTreeSet<Family> = Op::ALL.iter().map(|o| o.family()).collect();
        for lang in ["mpif.h", "use mpi", "use mpi_f08"] {
            let fams: BTreeSet<Family> = seen
                .get(lang)
                .into_iter()
                .flatten()
                .map(|o| o.family())
                .collect();
            for f in &families {
                if !fams.contains(f) {
                    failures.push(format!(
                        "{imp}: Fortran `{lang}` recorded no call of family {f:?}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
