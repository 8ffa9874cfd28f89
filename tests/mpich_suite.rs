//! MPICH's own test suite (test/mpi of MPICH 4.0.2, the version of Debian
//! 12's MPICH: `../shared/third-party/mpich-test-4.0.2.tar.xz`) run
//! untraced and traced on both MPI implementations (issue 39). For every
//! program of the directories in [`DIRS`] that passes untraced (exit 0 and
//! a line " No Errors"), three things must hold:
//!
//! 1. it passes traced too (the tracer changes nothing it can see);
//! 2. `rankscale check` finds its trace consistent;
//! 3. the trace replays, and the replay's raw log equals the application's
//!    ([`common::stages`], as `tests/replay.rs` compares).
//!
//! The suite is not built with its autotools: each C program is compiled
//! with `mpicc.IMP` against MTest (`util/`) and DTPools, whose configure
//! headers are written here ([`MPITESTCONF`]). Binaries are cached under
//! `target/mpich-suite/IMP/bin`, with the command that built them.
//!
//! Which programs (`RANKSCALE_MPICH_SUITE`):
//! - unset: the fixed CI slice [`SLICE`], which must pass every stage but
//!   for the open gaps in [`KNOWN`] (and those must still fail: a KNOWN
//!   program that passes fails the test, so that the list stays true);
//! - `full`: every program of [`DIRS`]; `DIR,DIR` those directories;
//!   `DIR/NAME` one program (all its testlist lines). These are
//!   measurements: the table is printed and written to
//!   `target/mpich-suite/IMP/report.md`, and nothing is asserted.
//!   `scripts/bench.sh mpich-suite` runs the full suite on both MPIs.
//!
//! Lines of a testlist this harness does not run are counted as skipped,
//! with the reason: `xfail=` (MPICH's expected failures), `mem=` of 2 GB
//! or more, `resultTest=` (judged by an exit status, not " No Errors"),
//! configure-only lines (`@largetest@`) and programs without a C source.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

use common::*;

/// The directories of MPICH's test suite that issues 39 and 36 cover.
const DIRS: &[&str] = &[
    "pt2pt", "coll", "comm", "group", "topo", "datatype", "part", "init", "rma", "io",
];

/// The CI slice: testlist lines by label (`DIR/NAME NP` and the line's
/// arguments), spread over every directory, at most 8 ranks each, each
/// under 2 s on either MPI in the full run: the programs that pass every
/// stage, and one or two of each open gap in [`KNOWN`].
const SLICE: &[&str] = &[
    "pt2pt/sendrecv2 2",
    "pt2pt/anyall 2",
    "pt2pt/bsend2 1",
    "pt2pt/bsendfrag 2",
    "pt2pt/rcancel 2",
    "pt2pt/huge_ssend 2",
    "pt2pt/rqfreeb 4",
    "pt2pt/irecv_any 2",
    "pt2pt/precv_anysrc 2",
    "pt2pt/isendrecv 4",
    "pt2pt/greq1 1",
    "coll/bcasttest 4",
    "coll/coll2 5",
    "coll/redscat 4",
    "coll/exscan2 5",
    "coll/scatterv 4",
    "coll/nonblocking 4",
    "coll/nbredscat 4",
    "coll/neighb_alltoallw 4",
    "coll/scantst 4",
    "coll/icbcast 4",
    "coll/icbarrier 5",
    "coll/icgather 5",
    "coll/icscatterv 5",
    "coll/icalltoallw 5",
    "coll/p_allred 4",
    "coll/alltoallw_zeros 2",
    "comm/dup 2",
    "comm/cmsplit 4",
    "comm/commcreate1 8",
    "comm/comm_group_half 2",
    "comm/comm_idup 2",
    "comm/dupic 4",
    "comm/ic1 4",
    "comm/idup_with_info 2",
    "group/groupcreate 4",
    "group/gtranks 8",
    "topo/cartshift1 4",
    "topo/dgraph_unwgt 4",
    "datatype/contents 1",
    "datatype/lots_of_types 1",
    "datatype/subarray 2",
    "datatype/sendrecvt2 2",
    "datatype/tresized2 2",
    "part/parrived_wait 2 -spart=1 -rpart=16 -tot_count=64 -iteration=5",
    "part/start_pready_list 2 -spart=16 -rpart=32 -tot_count=512 -range=2 -iteration=5",
    "part/nonblocking_pready 2",
    "init/version 1",
    "init/finalized 1",
    "init/session 4",
    "init/session_self 1",
    "rma/accfence2 4",
    "rma/test2 2",
    "rma/wintest 2",
    "rma/transpose3 2",
    "rma/lockcontention 3",
    "rma/lockopts 2",
    "rma/fetchandadd 7",
    "rma/win_dynamic_acc 4",
    "rma/win_dynamic_rma_flush_get 2 -count=9216 -op=put",
    "rma/linked_list_fop 4",
    "rma/strided_getacc_indexed 4",
    "rma/win_shared 4",
    "rma/compare_and_swap 4",
    "io/rdwrord 4",
    "io/setviewcur 4",
    "io/async 4",
    "io/resized 1",
    "io/i_hindexed_io 1",
    "io/i_aggregation1 4",
    "io/i_noncontig_coll 2",
];

/// Programs of the slice that fail a stage today, by MPI (`*`: both),
/// label and reason: open tracer gaps, or a library's own failure of a
/// program the slice keeps for the other library. Each must still fail.
/// (On Open MPI 4.1 the MPI-4 programs do not build and are not run.)
const KNOWN: &[(&str, &str, &str)] = &[(
    "openmpi",
    "rma/win_dynamic_rma_flush_get 2 -count=9216 -op=put",
    "Open MPI 4.1 refuses, untraced, a put across two adjacent attached regions; MPICH \
     takes it, and replay must too (it once overran a heap block here)",
)];

/// Seconds a run may take unless its testlist line says `timeLimit=`:
/// runtests' own default (`$defaultTimeLimit`). A replay of a program
/// that polls a lock with one-sided operations is slower than the program
/// on busy-polling MPICH (each poll waits for the target's progress, and
/// replay reproduces the computation between polls): MPICH's
/// `linked_list_bench_lock_all` runs in 15.6 s traced and replays in 62 s
/// on 2 cores.
const TIMEOUT_S: u64 = 180;

/// `include/mpitestconf.h`, which the suite's configure would write: what
/// a Debian 12 (glibc, gcc) machine has. `MPI_INTEGER16` is left out (an
/// optional Fortran type not every MPI has).
const MPITESTCONF: &str = "/* Written by tests/mpich_suite.rs for a Linux glibc gcc machine. */
#define HAVE_STRING_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_TYPE_CREATE_STRUCT 1
#define HAVE_MPI2_COMBINERS 1
#define HAVE_PTHREAD_H 1
#define POINTERINT_t long
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
";

/// `include/mtest_mpix.h`, generated by MPICH's own build to declare MPIX
/// extensions for other MPIs: empty, each implementation's `mpi.h` says
/// what it has.
const MTEST_MPIX: &str = "/* Written by tests/mpich_suite.rs: no MPIX declarations. */\n";

/// `dtpools/dtpoolsconf.h`, which DTPools' configure would write: DTPools
/// needs none of its checks on Linux.
const DTPOOLSCONF: &str = "/* Written by tests/mpich_suite.rs: nothing to configure. */\n";

/// One line of a testlist.
#[derive(Debug, Clone)]
struct Entry {
    dir: String,
    name: String,
    np: usize,
    args: Vec<String>,
    env: Vec<(String, String)>,
    timeout_s: u64,
    /// Why the harness does not run it.
    skip: Option<String>,
}

impl Entry {
    /// `DIR/NAME NP ARGS...`, with the line's environment if any: the name
    /// of a line in the slice, the tables and the failure list.
    fn label(&self) -> String {
        let mut s = format!("{}/{} {}", self.dir, self.name, self.np);
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        for (k, v) in &self.env {
            let _ = write!(s, " env={k}={v}");
        }
        s
    }

    /// The label as a file name.
    fn tag(&self) -> String {
        let mut t: String = self
            .label()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        t.truncate(100);
        t
    }
}

/// Where a program ended up.
#[derive(Debug, Clone)]
enum Status {
    /// Not run by this harness (see the module's documentation).
    Skipped(String),
    /// Does not build: `lacks` when the implementation does not have an
    /// MPI name the program uses (Open MPI 4.1 has no MPI-4 functions and
    /// none of the names MPI-3 removed), which is no failure.
    NotBuilt {
        lacks: bool,
        reason: String,
    },
    /// Fails without the tracer: MPICH's test, or this MPI, not ours.
    FailsUntraced(String),
    /// Passes untraced but fails this stage.
    Failed(Stage, String),
    Passed(Outcome),
}

/// The unpacked suite (`target/mpich-suite/src/mpi`), or `None` when the
/// tarball is missing (the test says so and skips). Unpacked once, into a
/// directory renamed into place, so that concurrent runs do not race.
fn suite_source() -> Option<PathBuf> {
    let tarball = root().join("../shared/third-party/mpich-test-4.0.2.tar.xz");
    if !tarball.exists() {
        eprintln!(
            "skipped: {} not found (MPICH's test suite; see ../shared/third-party/README.md)",
            tarball.display()
        );
        return None;
    }
    let base = root().join("target/mpich-suite");
    let src = base.join("src");
    let marker = src.join(".unpacked");
    let fresh = mtime(&marker).is_some_and(|m| Some(m) >= mtime(&tarball));
    if !fresh {
        let tmp = base.join(format!("src.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let out = Command::new("tar")
            .arg("xJf")
            .arg(&tarball)
            .arg("-C")
            .arg(&tmp)
            .arg("--strip-components=1")
            .output()
            .expect("run tar");
        assert!(
            out.status.success(),
            "unpacking {}: {}",
            tarball.display(),
            text(&out.stderr)
        );
        std::fs::write(tmp.join(".unpacked"), "").unwrap();
        let _ = std::fs::remove_dir_all(&src);
        if std::fs::rename(&tmp, &src).is_err() {
            // Another run put its copy in place first.
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }
    let mpi = src.join("mpi");
    for (p, content) in generated(&mpi)
        .iter()
        .zip([MPITESTCONF, MTEST_MPIX, DTPOOLSCONF])
    {
        if std::fs::read_to_string(p).ok().as_deref() != Some(content) {
            std::fs::write(p, content).unwrap();
        }
    }
    Some(mpi)
}

/// The configure headers this harness writes into the suite: a change
/// to one rebuilds the library and every program.
fn generated(mpi: &Path) -> [PathBuf; 3] {
    [
        mpi.join("include/mpitestconf.h"),
        mpi.join("include/mtest_mpix.h"),
        mpi.join("dtpools/dtpoolsconf.h"),
    ]
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The lines of `dir`'s testlist (`testlist`, else `testlist.in`), with
/// the subdirectories it names.
fn testlist(mpi: &Path, dir: &str) -> Vec<Entry> {
    let d = mpi.join(dir);
    let file = ["testlist", "testlist.in"]
        .iter()
        .map(|f| d.join(f))
        .find(|f| f.exists())
        .unwrap_or_else(|| panic!("{}: no testlist", d.display()));
    let listing = std::fs::read_to_string(&file).unwrap();
    let mut out = Vec::new();
    for line in listing.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // A configure substitution: `@largetest@` comments the line out
        // unless the suite is configured with --enable-large-tests.
        let (line, configured) = match line.strip_prefix('@').and_then(|l| l.split_once('@')) {
            Some((var, rest)) => (rest, Some(var)),
            None => (line, None),
        };
        let mut words = line.split_whitespace();
        let name = words.next().unwrap().to_string();
        if configured.is_none() && d.join(&name).is_dir() {
            out.extend(testlist(mpi, &format!("{dir}/{name}")));
            continue;
        }
        let mut e = Entry {
            dir: dir.to_string(),
            name,
            np: 2, // runtests' default
            args: Vec::new(),
            env: Vec::new(),
            timeout_s: TIMEOUT_S,
            skip: configured.map(|v| format!("configure-only line (@{v}@)")),
        };
        for (i, w) in words.enumerate() {
            let Some((key, value)) = w.split_once('=') else {
                if i == 0 {
                    e.np = w.parse().unwrap_or_else(|_| {
                        panic!("{}: bad rank count in {line:?}", file.display())
                    });
                }
                continue;
            };
            let skip = match key {
                "arg" => {
                    e.args.push(value.to_string());
                    None
                }
                "env" => {
                    let (k, v) = value.split_once('=').unwrap_or((value, ""));
                    e.env.push((k.to_string(), v.to_string()));
                    None
                }
                "timeLimit" => {
                    e.timeout_s = e.timeout_s.max(value.parse().unwrap_or(TIMEOUT_S));
                    None
                }
                "xfail" => Some(format!("xfail={value} (MPICH expects it to fail)")),
                "mem" if value.parse::<f64>().unwrap_or(f64::MAX) >= 2.0 => {
                    Some(format!("mem={value} (GB)"))
                }
                "resultTest" => Some(format!(
                    "resultTest={value} (judged by exit status, not \"No Errors\")"
                )),
                // strict=false: MPICH-only behaviour; run, the MPI decides.
                _ => None,
            };
            if e.skip.is_none() {
                e.skip = skip;
            }
        }
        out.push(e);
    }
    out
}

/// How `Makefile.am` builds one program: its sources and `-D` flags.
fn recipe(mpi: &Path, e: &Entry) -> (Vec<PathBuf>, Vec<String>) {
    let d = mpi.join(&e.dir);
    let am = std::fs::read_to_string(d.join("Makefile.am"))
        .unwrap_or_default()
        .replace("\\\n", " ");
    let var = |suffix: &str| {
        am.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == format!("{}_{suffix}", e.name)).then(|| v.to_string())
        })
    };
    let sources = match var("SOURCES") {
        Some(v) => v.split_whitespace().map(|s| d.join(s)).collect(),
        None => vec![d.join(format!("{}.c", e.name))],
    };
    let defines = var("CPPFLAGS")
        .unwrap_or_default()
        .split_whitespace()
        .filter(|f| f.starts_with("-D"))
        .map(String::from)
        .collect();
    (sources, defines)
}

/// MTest and DTPools as a static library for `imp`:
/// `target/mpich-suite/IMP/lib/libmtest.a`, rebuilt when its command or
/// the configure headers change.
fn mtest_library(imp: &str, mpi: &Path) -> PathBuf {
    let dir = root().join(format!("target/mpich-suite/{imp}/lib"));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libmtest.a");
    let mut sources: Vec<PathBuf> = ["mtest.c", "mtest_common.c", "mtest_single.c", "dtypes.c"]
        .iter()
        .map(|f| mpi.join("util").join(f))
        .collect();
    let mut dtp: Vec<PathBuf> = std::fs::read_dir(mpi.join("dtpools/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    dtp.sort();
    sources.extend(dtp);
    let cmd = format!("{:?} {sources:?}", cflags(imp, mpi));
    let headers = generated(mpi);
    let headers: Vec<&Path> = headers.iter().map(PathBuf::as_path).collect();
    if up_to_date(&lib, &cmd, &sources, &headers) {
        return lib;
    }
    let mut objs = Vec::new();
    for s in &sources {
        let o = dir.join(s.file_name().unwrap()).with_extension("o");
        let out = Command::new(format!("mpicc.{imp}"))
            .args(cflags(imp, mpi))
            .arg("-c")
            .arg(s)
            .arg("-o")
            .arg(&o)
            .output()
            .unwrap_or_else(|e| panic!("mpicc.{imp}: {e}"));
        assert!(
            out.status.success(),
            "mpicc.{imp} cannot build MPICH's test library ({}): {}",
            s.display(),
            text(&out.stderr)
        );
        objs.push(o);
    }
    let _ = std::fs::remove_file(&lib);
    let out = Command::new("ar")
        .arg("rcs")
        .arg(&lib)
        .args(&objs)
        .output()
        .expect("run ar");
    assert!(out.status.success(), "ar: {}", text(&out.stderr));
    std::fs::write(lib.with_extension("cmd"), &cmd).unwrap();
    lib
}

/// The compiler options of every object: the suite's and DTPools'
/// headers, no warnings (the suite has many), and for Open MPI the MPI-1
/// names that MPI-3 removed but its library still has
/// (`MPI_Type_hvector`, used by DTPools and the `_oldapi` tests).
fn cflags(imp: &str, mpi: &Path) -> Vec<String> {
    let mut f = vec![
        "-O2".to_string(),
        "-g".to_string(),
        "-w".to_string(),
        format!("-I{}", mpi.join("include").display()),
        format!("-I{}", mpi.join("dtpools/include").display()),
    ];
    if imp == "openmpi" {
        f.push("-DOMPI_OMIT_MPI1_COMPAT_DECLS=0".to_string());
    }
    f
}

/// `out` was built by `cmd` (recorded beside it as `.cmd`) after every
/// input last changed. (A program depends on the configure headers
/// through the library, which is rebuilt when they change.)
fn up_to_date(out: &Path, cmd: &str, inputs: &[PathBuf], more: &[&Path]) -> bool {
    let Some(built) = mtime(out) else {
        return false;
    };
    let stamp = std::fs::read_to_string(out.with_extension("cmd")).ok();
    stamp.as_deref() == Some(cmd)
        && inputs
            .iter()
            .map(PathBuf::as_path)
            .chain(more.iter().copied())
            .all(|i| mtime(i).is_some_and(|m| m <= built))
}

/// Builds one program (cached): the binary, or why it does not build.
fn build(imp: &str, mpi: &Path, lib: &Path, e: &Entry) -> Result<PathBuf, Status> {
    let (sources, defines) = recipe(mpi, e);
    if let Some(s) = sources.iter().find(|s| !s.exists()) {
        return Err(Status::Skipped(format!(
            "no C source {} (C++ or Fortran)",
            s.file_name().unwrap().to_string_lossy()
        )));
    }
    let bin = root().join(format!("target/mpich-suite/{imp}/bin/{}/{}", e.dir, e.name));
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    let mut args = cflags(imp, mpi);
    args.extend(defines);
    args.extend(sources.iter().map(|s| s.display().to_string()));
    args.extend([lib.display().to_string(), "-lm".into(), "-o".into()]);
    let cmd = format!("{args:?}");
    let failed = bin.with_extension("failed");
    if up_to_date(&bin, &cmd, &sources, &[lib]) {
        return Ok(bin);
    }
    if let Ok(log) = std::fs::read_to_string(&failed)
        && log.lines().next() == Some(cmd.as_str())
        && mtime(&failed) >= mtime(lib)
    {
        return Err(build_failure(imp, &log));
    }
    let out = Command::new(format!("mpicc.{imp}"))
        .args(&args)
        .arg(&bin)
        .current_dir(mpi.join(&e.dir))
        .output()
        .unwrap_or_else(|e| panic!("mpicc.{imp}: {e}"));
    if out.status.success() {
        std::fs::write(bin.with_extension("cmd"), &cmd).unwrap();
        let _ = std::fs::remove_file(&failed);
        Ok(bin)
    } else {
        let log = format!("{cmd}\n{}", text(&out.stderr));
        std::fs::write(&failed, &log).unwrap();
        let _ = std::fs::remove_file(&bin);
        Err(build_failure(imp, &log))
    }
}

/// Why a build failed: on Open MPI 4.1 an MPI name it does not have
/// (MPI-4: partitioned communication, sessions, `MPI_Isendrecv`, ...;
/// names MPI-3 removed) is no failure of the suite.
fn build_failure(imp: &str, log: &str) -> Status {
    let missing = log.lines().find_map(|l| {
        if !(l.contains("undefined reference")
            || l.contains("undeclared")
            || l.contains("implicit declaration")
            || l.contains("unknown type name"))
        {
            return None;
        }
        let i = l.find("MPI_").or_else(|| l.find("MPIX_"))?;
        let name: String = l[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        Some(name)
    });
    // MPICH's handles are integers; a program that switches on one does
    // not compile where they are pointers.
    let int_handles = log.contains("switch quantity not an integer");
    match missing {
        Some(name) if imp == "openmpi" => Status::NotBuilt {
            lacks: true,
            reason: format!("does not build on Open MPI 4.1 (no {name})"),
        },
        None if imp == "openmpi" && int_handles => Status::NotBuilt {
            lacks: true,
            reason: "does not build on Open MPI 4.1 (switches on an MPI handle, an \
                     integer in MPICH and a pointer here)"
                .to_string(),
        },
        _ => Status::NotBuilt {
            lacks: false,
            reason: format!(
                "build failed: {}",
                log.lines()
                    .find(|l| l.contains("error"))
                    .unwrap_or("(no error line)")
                    .trim()
            ),
        },
    }
}

/// MPICH's verdict on a test's output: a line " No Errors" (runtests
/// also accepts "No errors").
fn no_errors(stdout: &str) -> bool {
    stdout
        .lines()
        .any(|l| l.trim().eq_ignore_ascii_case("no errors"))
}

/// The one line of a failure's story worth a table: its first line's
/// head (up to the first `: `) and the first `error:` of the whole, from
/// where it starts (ranks' lines may interleave), else the first line that
/// names an error some other way, else the first line that is not one of
/// the tracer's notes.
fn gist(detail: &str) -> String {
    let first = detail.lines().next().unwrap_or("");
    let (head, rest) = first.split_once(": ").unwrap_or((first, ""));
    let lines: Vec<&str> = std::iter::once(rest)
        .chain(detail.lines().skip(1))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    const KEYS: &[&str] = &[
        "error",
        "abort",
        "fatal",
        "signal",
        "assert",
        "panicked",
        "differs",
        "found ",
        "timed out",
    ];
    let keyed = lines
        .iter()
        .find_map(|l| l.to_ascii_lowercase().find("error:").map(|i| &l[i..]))
        .or_else(|| {
            lines.iter().copied().find(|l| {
                let low = l.to_ascii_lowercase();
                KEYS.iter().any(|k| low.contains(k))
            })
        });
    let other = lines
        .iter()
        .find(|l| !l.contains("note: ") && !l.starts_with("rankscale: trace of"));
    let s = match (keyed, other) {
        (Some(p), _) if head.is_empty() => p.to_string(),
        (Some(p), _) => format!("{head}: {p}"),
        (None, _) if lines.is_empty() => head.to_string(),
        (None, Some(o)) => format!("{head}: no error message; the output has {o}"),
        (None, None) => format!("{head}: no error message, only the tracer's notes"),
    };
    shorten(s)
}

/// A `rankscale check` report in a line: the first problem, and the
/// count of all of them by kind when it gives one.
fn check_gist(report: &str) -> String {
    let first = report.lines().next().unwrap_or("").trim();
    let kinds = report
        .lines()
        .find_map(|l| l.split_once("by kind: "))
        .map(|(_, k)| k.trim().trim_end_matches(')'));
    shorten(match kinds {
        Some(k) => format!("{first} (all problems: {k})"),
        None => first.to_string(),
    })
}

/// `s` cut to 300 bytes.
fn shorten(mut s: String) -> String {
    if s.len() > 300 {
        let mut cut = 300;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(" ...");
    }
    s
}

/// Runs one built program untraced, then through [`stages`].
fn run(imp: &str, e: &Entry, bin: &Path) -> Status {
    let env: Vec<(&str, String)> = e.env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let dir = scratch(&format!("{imp}-suite-{}", e.tag()));
    let plain = Launch {
        env: env.clone(),
        traced: false,
        timeout_s: e.timeout_s,
        cwd: Some(dir.clone()),
    };
    let status = match try_mpirun(imp, e.np, bin, &e.args, &plain) {
        Err(t) => Status::FailsUntraced(t),
        Ok(job) if job.code != Some(0) || !no_errors(&job.stdout) => Status::FailsUntraced(gist(
            &format!("exit {:?}: {}\n{}", job.code, job.stdout, job.stderr),
        )),
        Ok(_) => {
            let opt = Stages {
                check: true,
                verdict: Some(no_errors),
                timeout_s: e.timeout_s,
                env,
                in_scratch: true,
            };
            match stages(imp, &e.tag(), e.np, bin, &e.args, &opt) {
                Ok(o) => Status::Passed(o),
                Err(f) if f.stage == Stage::Check => Status::Failed(f.stage, check_gist(&f.detail)),
                Err(f) => Status::Failed(f.stage, gist(&f.detail)),
            }
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    status
}

/// The programs `RANKSCALE_MPICH_SUITE` selects (see the module's
/// documentation), and whether they are the CI slice.
fn selection(mpi: &Path) -> (Vec<Entry>, bool) {
    let want = std::env::var("RANKSCALE_MPICH_SUITE").unwrap_or_default();
    let all =
        |dirs: &[&str]| -> Vec<Entry> { dirs.iter().flat_map(|d| testlist(mpi, d)).collect() };
    match want.as_str() {
        "" => {
            let entries = all(DIRS);
            let picked: Vec<Entry> = SLICE
                .iter()
                .map(|label| {
                    let e = entries
                        .iter()
                        .find(|e| e.label() == *label)
                        .unwrap_or_else(|| {
                            panic!("SLICE names {label:?}, which no testlist line is")
                        });
                    assert!(
                        e.skip.is_none() && e.np <= 8,
                        "SLICE: {label:?} cannot be in the slice"
                    );
                    e.clone()
                })
                .collect();
            (picked, true)
        }
        "full" => (all(DIRS), false),
        list => {
            let mut out = Vec::new();
            for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let (dir, name) = item
                    .rsplit_once('/')
                    .map_or((item, None), |(d, n)| (d, Some(n)));
                let lines = testlist(mpi, dir);
                let before = out.len();
                out.extend(
                    lines
                        .into_iter()
                        .filter(|e| name.is_none_or(|n| e.name == n)),
                );
                assert!(
                    out.len() > before,
                    "RANKSCALE_MPICH_SUITE: no testlist line for {item:?}"
                );
            }
            (out, false)
        }
    }
}

/// The report of one MPI: a table by directory, then every failure, the
/// reports of latency races and the skipped lines by reason.
fn report(imp: &str, what: &str, secs: f64, results: &[(Entry, Status)]) -> String {
    let mut by_dir: BTreeMap<&str, [usize; 7]> = BTreeMap::new();
    let order: Vec<&str> =
        results
            .iter()
            .map(|(e, _)| e.dir.as_str())
            .fold(Vec::new(), |mut v, d| {
                if !v.contains(&d) {
                    v.push(d);
                }
                v
            });
    for (e, s) in results {
        let c = by_dir.entry(e.dir.as_str()).or_default();
        c[0] += 1;
        let level = match s {
            Status::Skipped(_) => {
                c[1] += 1;
                0
            }
            Status::NotBuilt { .. } => 0,
            Status::FailsUntraced(_) => 1,
            Status::Failed(Stage::Traced, _) => 2,
            Status::Failed(Stage::Check, _) => 3,
            Status::Failed(Stage::Replay, _) => 4,
            Status::Passed(_) => 5,
        };
        for (i, n) in c.iter_mut().skip(2).enumerate() {
            if level > i {
                *n += 1;
            }
        }
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{imp}: MPICH test suite 4.0.2, {what}, {} lines, {secs:.0} s\n",
        results.len()
    );
    let head = [
        "directory",
        "testlist lines",
        "skipped",
        "built",
        "pass untraced",
        "pass traced",
        "check clean",
        "replay identical",
    ];
    let _ = writeln!(t, "| {} |", head.join(" | "));
    let _ = writeln!(t, "|{}", "---|".repeat(head.len()));
    let mut total = [0usize; 7];
    let row = |t: &mut String, name: &str, c: &[usize; 7]| {
        let cells: Vec<String> = c.iter().map(usize::to_string).collect();
        let _ = writeln!(t, "| {name} | {} |", cells.join(" | "));
    };
    for d in &order {
        let c = by_dir[d];
        row(&mut t, d, &c);
        for (a, b) in total.iter_mut().zip(c) {
            *a += b;
        }
    }
    row(&mut t, "total", &total);
    let _ = writeln!(t, "\nFailures (first failing stage):");
    for (e, s) in results {
        let line = match s {
            Status::NotBuilt { reason, .. } => format!("build: {reason}"),
            Status::FailsUntraced(r) => format!("untraced: {r}"),
            Status::Failed(stage, r) => format!("{}: {r}", stage_name(*stage)),
            _ => continue,
        };
        let _ = writeln!(t, "- {}: {line}", e.label());
    }
    let raced: Vec<String> = results
        .iter()
        .filter(|(_, s)| matches!(s, Status::Passed(Outcome::LatencyRaces)))
        .map(|(e, _)| e.label())
        .collect();
    if !raced.is_empty() {
        let _ = writeln!(
            t,
            "\nReplayed identically but for reported latency races: {}",
            raced.join(", ")
        );
    }
    let mut skipped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (e, s) in results {
        if let Status::Skipped(r) = s {
            // One group per kind of reason (xfail tickets, sizes differ).
            let kind = r.split(['=', ' ']).next().unwrap_or(r).to_string();
            skipped
                .entry(kind)
                .or_default()
                .push(format!("{} ({r})", e.label()));
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(t, "\nSkipped:");
        for (kind, v) in &skipped {
            let _ = writeln!(t, "- {kind}: {} lines: {}", v.len(), v.join(", "));
        }
    }
    t
}

fn stage_name(s: Stage) -> &'static str {
    match s {
        Stage::Traced => "traced",
        Stage::Check => "check",
        Stage::Replay => "replay",
    }
}

/// Builds every selected program, in parallel on the machine's cores,
/// each once (several testlist lines may run one program).
fn build_all(imp: &str, mpi: &Path, lib: &Path, entries: &[Entry]) -> Vec<Result<PathBuf, Status>> {
    let same = |a: &Entry, b: &Entry| a.dir == b.dir && a.name == b.name;
    let mut programs: Vec<&Entry> = Vec::new();
    for e in entries.iter().filter(|e| e.skip.is_none()) {
        if !programs.iter().any(|p| same(p, e)) {
            programs.push(e);
        }
    }
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let built = std::sync::Mutex::new(vec![None; programs.len()]);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(e) = programs.get(i) else { break };
                    let r = build(imp, mpi, lib, e);
                    built.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    let built = built.into_inner().unwrap();
    entries
        .iter()
        .map(|e| match &e.skip {
            Some(why) => Err(Status::Skipped(why.clone())),
            None => {
                let i = programs.iter().position(|p| same(p, e)).unwrap();
                built[i].clone().unwrap()
            }
        })
        .collect()
}

#[test]
fn mpich_test_suite_passes_traced_checks_and_replays() {
    let Some(mpi) = suite_source() else { return };
    let (entries, is_slice) = selection(&mpi);
    let what = match std::env::var("RANKSCALE_MPICH_SUITE") {
        Ok(w) if !w.is_empty() => format!("RANKSCALE_MPICH_SUITE={w}"),
        _ => "the CI slice".to_string(),
    };
    let mut problems = Vec::new();
    for imp in mpis() {
        let start = Instant::now();
        let lib = mtest_library(imp, &mpi);
        let built = build_all(imp, &mpi, &lib, &entries);
        eprintln!(
            "{imp}: built {} of {} lines' programs in {:.0} s",
            built.iter().filter(|b| b.is_ok()).count(),
            entries.len(),
            start.elapsed().as_secs_f64()
        );
        let mut results = Vec::new();
        for (i, (e, b)) in entries.iter().zip(built).enumerate() {
            let t = Instant::now();
            let status = match b {
                Ok(bin) => run(imp, e, &bin),
                Err(s) => s,
            };
            eprintln!(
                "[{}/{}] {imp} {}: {status:?} ({:.1} s)",
                i + 1,
                entries.len(),
                e.label(),
                t.elapsed().as_secs_f64()
            );
            results.push((e.clone(), status));
        }
        let secs = start.elapsed().as_secs_f64();
        let text = report(imp, &what, secs, &results);
        eprintln!("\n{text}");
        let file = root().join(format!("target/mpich-suite/{imp}/report.md"));
        std::fs::write(&file, &text).unwrap();
        eprintln!("{imp}: written to {}", file.display());
        if is_slice {
            problems.extend(slice_problems(imp, &results));
        }
    }
    assert!(
        problems.is_empty(),
        "the CI slice of MPICH's test suite:\n{}",
        problems.join("\n")
    );
}

/// What is wrong with the slice's results on `imp`: a program that fails
/// and is not [`KNOWN`], or a KNOWN one that passes.
fn slice_problems(imp: &str, results: &[(Entry, Status)]) -> Vec<String> {
    let known = |label: &str| {
        KNOWN
            .iter()
            .find(|(m, l, _)| (*m == "*" || *m == imp) && *l == label)
            .map(|k| k.2)
    };
    for (_, label, _) in KNOWN {
        assert!(
            SLICE.contains(label),
            "KNOWN names {label:?}, which is not in SLICE"
        );
    }
    let mut problems = Vec::new();
    for (e, s) in results {
        let label = e.label();
        let failure = match s {
            Status::Passed(_) => None,
            Status::NotBuilt { lacks: true, .. } => continue,
            Status::Skipped(r) => Some(format!("skipped: {r}")),
            Status::FailsUntraced(r) => Some(format!("untraced: {r}")),
            Status::NotBuilt { reason, .. } => Some(format!("build: {reason}")),
            Status::Failed(stage, r) => Some(format!("{}: {r}", stage_name(*stage))),
        };
        match (failure, known(&label)) {
            (Some(f), None) => problems.push(format!("{imp} {label}: {f}")),
            (None, Some(why)) => problems.push(format!(
                "{imp} {label}: passes every stage now; remove it from KNOWN (was: {why})"
            )),
            _ => {}
        }
    }
    problems
}
