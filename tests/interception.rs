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
use trace::{Family, Op};

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
    } else if binary.contains("usempi") || binary == "stencil2d" || binary == "detail_f" {
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
        for run in m.runs(imp) {
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
                // Calls recorded without detail (queries, datatypes, ...)
                // are held to the manifest only where it lists them.
                for (op, n) in &got {
                    if !op.is_generic() && !run.expect.contains_key(op.name()) {
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
        // Operations this MPI does not have (MPI 4's on Open MPI 4.1) are
        // not wrapped by its shim and cannot be called.
        let wrapped = exported_mpi_functions(&shim(imp));
        for op in Op::ALL.iter().filter(|o| {
            **o != Op::Abort && !o.is_generic() && wrapped.contains(&format!("MPI_{}", o.name()))
        }) {
            if !c_ops.contains(op) {
                failures.push(format!("{imp}: no C test program recorded {}", op.name()));
            }
        }
        // Families of the operations this MPI has. Persistent collectives
        // and partitioned communication (MPI 4, MPICH only) are called
        // from `use mpi` and `use mpi_f08` (detail_f), not from `mpif.h`
        // (whose MPICH entry points are `use mpi`'s).
        let families: BTreeSet<Family> = Op::ALL
            .iter()
            .filter(|o| wrapped.contains(&format!("MPI_{}", o.name())))
            .map(|o| o.family())
            .filter(|f| !f.is_generic())
            .collect();
        for lang in ["mpif.h", "use mpi", "use mpi_f08"] {
            let families = families.iter().filter(|f| {
                lang != "mpif.h" || !matches!(f, Family::PersistentCollective | Family::Partitioned)
            });
            let fams: BTreeSet<Family> = seen
                .get(lang)
                .into_iter()
                .flatten()
                .map(|o| o.family())
                .collect();
            for f in families {
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

/// Why an exported `MPI_` function may pass through the shim unrecorded,
/// or `None` when it must be wrapped.
///
/// Names are compared without case, so that the Fortran entry points'
/// lower-case names ([`allowed_unwrapped_fortran`]) meet the same rules.
fn allowed_unwrapped(name: &str) -> Option<&'static str> {
    let f = name.strip_prefix("MPI_")?.to_ascii_lowercase();
    let f = f.as_str();
    if matches!(f, "wtime" | "wtick") {
        Some("clock reads: no communication, and called in timing loops")
    } else if ["_c2f", "_f2c", "_f082c", "_c2f08", "_f082f", "_f2f08"]
        .iter()
        .any(|s| f.ends_with(s))
    {
        Some("handle conversion between the C and Fortran bindings")
    } else if f.starts_with("t_") {
        Some("the tools information interface (MPI_T), for tools, not communication")
    } else if f.ends_with("_fn") || f == "conversion_fn_null" {
        Some(
            "a predefined callback that MPI itself calls (attribute copy/delete, data representation)",
        )
    } else if f.ends_with("_f90") {
        Some("Open MPI's Fortran 90 entry points of Wtime, Wtick and address arithmetic")
    } else {
        None
    }
}

/// Function symbols (`T`, `W`, `i`) that a shared object exports and
/// `keep` accepts, by `nm -D --defined-only`.
fn exported_symbols(lib: &std::path::Path, keep: impl Fn(&str) -> bool) -> BTreeSet<String> {
    let out = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .unwrap_or_else(|e| panic!("nm {}: {e}", lib.display()));
    assert!(out.status.success(), "nm {} failed", lib.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().skip(1);
            let (kind, name) = (w.next()?, w.next()?);
            (matches!(kind, "T" | "W" | "i") && keep(name)).then(|| name.to_string())
        })
        .collect()
}

/// Function symbols with the `MPI_` prefix that a shared object exports.
fn exported_mpi_functions(lib: &std::path::Path) -> BTreeSet<String> {
    exported_symbols(lib, |n| n.starts_with("MPI_"))
}

/// The MPI library a test program of `imp` loads, by `ldd`.
fn mpi_library(imp: &str) -> std::path::PathBuf {
    let out = std::process::Command::new("ldd")
        .arg(program(imp, "ring"))
        .output()
        .expect("ldd");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            (name.starts_with("libmpi.so") || name.starts_with("libmpich.so"))
                .then(|| rest.split_whitespace().next().map(std::path::PathBuf::from))?
        })
        .unwrap_or_else(|| panic!("{imp}: no libmpi in ldd of ring"))
}

/// Every `MPI_` function the MPI library exports is wrapped by the shim, or
/// named with its reason by [`allowed_unwrapped`]; and every wrapped one
/// the library does not export is an operation of the trace format (the
/// shim defines no stray symbols).
#[test]
fn every_exported_mpi_function_is_wrapped_or_allow_listed() {
    for imp in mpis() {
        let lib = mpi_library(imp);
        let exported = exported_mpi_functions(&lib);
        let wrapped = exported_mpi_functions(&shim(imp));
        assert!(
            exported.len() > 400,
            "{imp}: only {} MPI_ functions in {}",
            exported.len(),
            lib.display()
        );
        let missing: Vec<&String> = exported
            .iter()
            .filter(|f| !wrapped.contains(*f) && allowed_unwrapped(f).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "{imp}: {} exported MPI functions are neither wrapped nor allow-listed: {missing:?}",
            missing.len()
        );
        // Families of the wrapped functions (C names with an operation).
        // A large-count (`_c`) function whose `int` twin is recorded in
        // detail records the twin's event (`large_count_calls_record_the_
        // events_of_their_int_twins` in tests/replay.rs): counted apart.
        let mut by_family: BTreeMap<Family, usize> = BTreeMap::new();
        let mut large_in_detail = 0;
        for f in &wrapped {
            let Some(name) = f.strip_prefix("MPI_") else {
                continue;
            };
            let twin = name.strip_suffix("_c").and_then(Op::from_name);
            if twin.is_some_and(|t| !t.family().is_generic()) {
                large_in_detail += 1;
            } else if let Some(op) = Op::from_name(name) {
                *by_family.entry(op.family()).or_default() += 1;
            }
        }
        let allowed = exported.iter().filter(|f| !wrapped.contains(*f)).count();
        let recorded: usize = by_family.values().sum::<usize>() + large_in_detail;
        eprintln!(
            "{imp}: {} MPI_ functions exported by {}; {recorded} wrapped with an event ({} in detail), {allowed} allow-listed",
            exported.len(),
            lib.display(),
            by_family
                .iter()
                .filter(|(f, _)| !f.is_generic())
                .map(|(_, n)| n)
                .sum::<usize>()
                + large_in_detail
        );
        for (f, n) in &by_family {
            eprintln!("  {:<24} {n}", f.slug());
        }
        eprintln!("  {:<24} {large_in_detail}", "large-count in detail");
    }
}

/// Why a Fortran entry point (`stem`: its name without `mpi_` and the
/// interface's suffix, in lower case) may pass through the shim
/// unrecorded, or `None` when it must be wrapped: the C rules
/// ([`allowed_unwrapped`]), then the calls only Fortran has.
fn allowed_unwrapped_fortran(stem: &str) -> Option<&'static str> {
    if let Some(why) = allowed_unwrapped(&format!("MPI_{stem}")) {
        return Some(why);
    }
    if stem.starts_with("sizeof_") {
        Some("MPI_SIZEOF: the size of a Fortran variable, answered without communication")
    } else if stem == "f_sync_reg" {
        Some("MPI_F_SYNC_REG: a no-op that keeps the compiler from moving a buffer's accesses")
    } else if matches!(stem, "aint_add" | "aint_diff") {
        Some("address arithmetic, a Fortran FUNCTION with no error code: no communication")
    } else if stem.starts_with("delete_error_") {
        Some("MPICH's `use mpi_f08` form of MPIX_Delete_error_*, an extension (MPIX_ in C)")
    } else {
        None
    }
}

/// The shared objects a program of `imp` loads whose names start with one
/// of `prefixes`, by `ldd`.
fn linked_libraries(imp: &str, binary: &str, prefixes: &[&str]) -> Vec<std::path::PathBuf> {
    let out = std::process::Command::new("ldd")
        .arg(program(imp, binary))
        .output()
        .expect("ldd");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            prefixes
                .iter()
                .any(|p| name.starts_with(p))
                .then(|| rest.split_whitespace().next().map(std::path::PathBuf::from))?
        })
        .collect()
}

/// Every Fortran entry point that reaches MPI without passing through the
/// C `MPI_*` symbols is wrapped by the shim, or named with its reason by
/// [`allowed_unwrapped_fortran`]. Those are, for Open MPI, every routine of
/// `mpif.h` and `use mpi` (`libmpi_mpifh`: `mpi_x_`; the shim's wrappers
/// export the other manglings with it) and of `use mpi_f08`
/// (`libmpi_usempif08`: `mpi_x_f08_`), which call `PMPI_*`; for MPICH,
/// the `use mpi_f08` routines without a choice buffer (`libmpichfort`:
/// `mpi_x_f08_`). MPICH's `mpif.h`, `use mpi` and buffer (`_f08ts_`)
/// routines call the C `MPI_*`, which the C symbol test covers.
#[test]
fn every_fortran_entry_point_is_wrapped_or_allow_listed() {
    for imp in mpis() {
        let shim_syms = exported_symbols(&shim(imp), |_| true);
        let libs = if imp == "openmpi" {
            linked_libraries(imp, "coverage_f08", &["libmpi_mpifh", "libmpi_usempif08"])
        } else {
            linked_libraries(imp, "coverage_f08", &["libmpichfort"])
        };
        assert!(
            !libs.is_empty(),
            "{imp}: no Fortran MPI library in ldd of coverage_f08"
        );
        let mut checked = 0;
        let mut missing = Vec::new();
        for lib in &libs {
            let syms = exported_symbols(lib, |n| n.starts_with("mpi_"));
            for sym in &syms {
                let stem = if let Some(s) = sym.strip_suffix("_f08_") {
                    s
                } else if imp == "openmpi" && !sym.ends_with("__") && !sym.contains("_f08") {
                    match sym.strip_suffix('_') {
                        Some(s) => s,
                        None => continue,
                    }
                } else {
                    continue;
                };
                let stem = &stem["mpi_".len()..];
                checked += 1;
                if !shim_syms.contains(sym) && allowed_unwrapped_fortran(stem).is_none() {
                    missing.push(sym.clone());
                }
            }
        }
        eprintln!(
            "{imp}: {checked} Fortran entry points that bypass the C symbols, in {}",
            libs.iter()
                .map(|l| l.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(
            checked > 200,
            "{imp}: only {checked} Fortran entry points found"
        );
        assert!(
            missing.is_empty(),
            "{imp}: {} Fortran entry points are neither wrapped nor allow-listed: {missing:?}",
            missing.len()
        );
    }
}

/// Calls without detail made from Fortran are recorded as the same calls
/// made from C are (issue 39), and so are the one-sided calls, which are
/// detailed (issue 36). On Open MPI, whose Fortran bindings call
/// `PMPI_*` directly, and for MPICH's `use mpi_f08` routines, which reach
/// MPI without the C `MPI_*` symbols, the shim has Fortran entry points
/// (generated from `mpi.h` for the calls without detail); MPICH's `mpif.h`
/// and `use mpi` reach the C wrappers. The truth: the calls
/// `tests/programs/fortran/generic_f.F90` makes, read off its source: its
/// window of 16 doubles, its `MPI_Put` of 8 doubles to the right
/// neighbour at displacement 0 and `MPI_Rput` at 8, its file and
/// `MPI_File_write_at_all` of 8 integers at byte `32 * rank` (MPI-IO is
/// detailed too, issue 36), the requests its `MPI_Rput` makes
/// and its `MPI_Cancel` names. Built with `use mpi` (`generic_f`) and
/// `use mpi_f08` (`generic_f08`), it must record the same raw log through
/// either interface, on either MPI (call sites aside).
#[test]
fn fortran_calls_without_detail_are_recorded_as_c_calls_are() {
    const CALLS: &[&str] = &[
        "Init",
        "Comm_rank",
        "Comm_size",
        "Comm_set_name",
        "Comm_get_name",
        "Type_vector",
        "Type_commit",
        "Type_size",
        "Type_free",
        "Comm_group",
        "Group_size",
        "Group_free",
        "Info_create",
        "Info_set",
        "Info_free",
        "Win_create",
        "Win_fence",
        "Put",
        "Win_fence",
        "Win_lock_all",
        "Rput",
        "Wait",
        "Win_unlock_all",
        "Barrier",
        "Win_free",
        "File_open",
        "File_write_at_all",
        "File_close",
        "Barrier",
        "Irecv",
        "Cancel",
        "Wait",
        "Test_cancelled",
        "Barrier",
        "Finalize",
    ];
    let mut logs: Vec<(String, Vec<String>)> = Vec::new();
    for imp in mpis() {
        for bin in ["generic_f", "generic_f08"] {
            let path = root().join("target/programs").join(imp).join(bin);
            if !path.exists() {
                // build.sh skips mpi_f08 programs where the module is missing.
                eprintln!("{imp} {bin}: not built here, skipped");
                continue;
            }
            let dir = scratch(&format!("{imp}-{bin}"));
            let mut l = traced_raw(imp, &dir.join("raw"));
            l.env.push(("RANKSCALE_TRACE", "0".to_string()));
            l.cwd = Some(dir.clone());
            let job = mpirun(imp, 4, &path, &[], &l);
            assert_eq!(job.code, Some(0), "{imp} {bin}: {}", job.stderr);
            let ranks: Vec<String> = (0..4)
                .map(|r| without(&raw_text(&dir.join("raw"), r), &["site="]))
                .collect();
            for (rank, text) in ranks.iter().enumerate() {
                let ops: Vec<&str> = text.lines().filter_map(|l| l.split(' ').next()).collect();
                assert_eq!(ops, CALLS, "{imp} {bin} rank {rank}:\n{text}");
                let line = |op: &str| text.lines().find(|l| l.split(' ').next() == Some(op));
                let right = (rank + 1) % 4;
                let dp = "8/8:double_precision";
                assert_eq!(
                    line("Win_create"),
                    Some("Win_create comm=0 new=2 size=4 win=128/8"),
                    "{imp} {bin}"
                );
                assert_eq!(
                    line("Put"),
                    Some(format!("Put comm=2 send={right}/0/{dp} target=0/{dp}").as_str()),
                    "{imp} {bin}"
                );
                assert_eq!(
                    line("Rput"),
                    Some(format!("Rput comm=2 send={right}/0/{dp} req=0 target=8/{dp}").as_str()),
                    "{imp} {bin}"
                );
                assert_eq!(line("Wait"), Some("Wait reqs=0 done=0"), "{imp} {bin}");
                assert_eq!(line("Cancel"), Some("Cancel reqs=1"), "{imp} {bin}");
                // CREATE | WRONLY | DELETE_ON_CLOSE in the trace's bits.
                let open = format!(
                    "File_open comm=0 new=3 size=4 file=42/{:x}",
                    trace::Io::path_hash(b"generic_f.tmp")
                );
                assert_eq!(line("File_open"), Some(open.as_str()), "{imp} {bin}");
                assert_eq!(
                    line("File_write_at_all"),
                    Some(
                        format!(
                            "File_write_at_all comm=3 send=8/4:integer offset={}/1",
                            32 * rank
                        )
                        .as_str()
                    ),
                    "{imp} {bin}"
                );
                assert_eq!(
                    line("File_close"),
                    Some("File_close comm=3 file"),
                    "{imp} {bin}"
                );
            }
            logs.push((format!("{imp} {bin}"), ranks));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    for (name, ranks) in &logs[1.min(logs.len())..] {
        assert_eq!(ranks, &logs[0].1, "{name} differs from {}", logs[0].0);
    }
}

/// The calls recorded without detail carry what they can: the communicator,
/// the bytes of their first count and datatype, the request they made
/// (which the completion call then names), and `show` and `check` count
/// them. The truth is `tests/programs/c/generic.c`: its `MPI_Put` of 8
/// doubles and `MPI_File_write_at_all` of 8 ints at byte `32 * rank` are
/// recorded in detail since issue 36; beside them the
/// neighbourhood collectives, recorded in detail: `MPI_Neighbor_alltoall`
/// of one int per neighbour on the Cartesian communicator (id 2).
#[test]
fn calls_without_detail_carry_communicator_bytes_and_requests() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-generic"));
        let trace = dir.join("g.trace");
        let mut l = traced_raw(imp, &dir.join("raw"));
        l.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
        let job = mpirun(imp, 4, &program(imp, "generic"), &["3".to_string()], &l);
        assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
        for rank in 0..4 {
            let text = raw_text(&dir.join("raw"), rank);
            let line = |op: &str| {
                text.lines()
                    .find(|l| l.split(' ').next() == Some(op))
                    .unwrap_or_else(|| panic!("{imp} rank {rank}: no {op} in\n{text}"))
                    .to_string()
            };
            let field = |l: &str, k: &str| {
                l.split(' ')
                    .find_map(|f| f.strip_prefix(k).map(str::to_string))
                    .unwrap_or_else(|| panic!("{imp} rank {rank}: no {k} in {l}"))
            };
            let put = line("Put");
            assert_eq!(
                field(&put, "send="),
                format!("{}/0/8/8:double", (rank + 1) % 4)
            );
            assert!(!put.contains("value="), "{imp}: in detail: {put}");
            // MPI-IO is recorded in detail since issue 36: 8 ints at the
            // rank's own byte offset (etypes of the default byte view).
            let w = line("File_write_at_all");
            assert_eq!(field(&w, "send="), "8/4:int", "{imp}: {w}");
            // In etypes of the default view (bytes): offset/etype bytes.
            assert_eq!(
                field(&w, "offset="),
                format!("{}/1", 32 * rank),
                "{imp}: {w}"
            );
            assert!(!w.contains("value="), "{imp}: in detail: {w}");
            let n = line("Neighbor_alltoall");
            assert_eq!(field(&n, "comm="), "2", "{imp}: {n}");
            assert_eq!(field(&n, "send="), "1/4:int", "{imp}: {n}");
            assert!(!n.contains("value="), "{imp}: in detail: {n}");
            let req = field(&line("Ineighbor_allgather"), "req=");
            let wait = line("Wait");
            assert_eq!(field(&wait, "reqs="), req, "{imp}: {wait}");
            assert_eq!(field(&wait, "done="), req, "{imp}: {wait}");
            assert!(!text.contains("Wtime"), "{imp}: Wtime is allow-listed");
        }
        let t = trace.display().to_string();
        let check = rankscale(&["check", &t]);
        let out = text(&check.stdout);
        assert!(
            check.status.success(),
            "{imp}: {out}{}",
            text(&check.stderr)
        );
        // 15 functions, 15 calls per rank (the window's 5 calls and the
        // file's 3 are in detail).
        assert!(
            out.contains("60 calls of 15 MPI functions recorded without detail"),
            "{imp}: {out}"
        );
        let show = rankscale(&["show", &t]);
        assert!(
            text(&show.stdout).contains("60 calls of 15 MPI functions recorded without detail"),
            "{imp}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
