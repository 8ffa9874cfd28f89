//! `rankscale trace`: runs a launch command with the matching shim preloaded.
//!
//! A shim built for one MPI implementation crashes inside the other, so the
//! implementation is taken from the launcher's name (`mpirun.mpich`,
//! `mpiexec.hydra`, `mpirun.openmpi`, `orterun`, ...) or from `--mpi`, and
//! the shim of that build is used. The environment reaches the ranks through
//! the launcher's own flags (`-genv` for MPICH's Hydra, `-x` for Open MPI),
//! so the launcher process itself is never traced.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The build's own MPI implementation (see build.rs).
pub(crate) const BUILD_MPI: &str = env!("RANKSCALE_BUILD_MPI");

/// Which implementation a launcher belongs to, from its file name.
pub(crate) fn mpi_of_launcher(cmd: &str) -> Option<&'static str> {
    let name = Path::new(cmd).file_name()?.to_str()?;
    if name.ends_with(".mpich") || name.contains("hydra") {
        Some("mpich")
    } else if name.ends_with(".openmpi") || name == "orterun" || name == "prterun" {
        Some("openmpi")
    } else {
        None
    }
}

/// Finds `libpmpi_shim.so` for `imp`: `RANKSCALE_SHIM`, else the build
/// directory of that implementation next to this executable's
/// (`target/<imp>/<profile>/`).
fn find_shim(imp: &str) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("RANKSCALE_SHIM") {
        return Ok(PathBuf::from(p));
    }
    find_built(
        imp,
        "libpmpi_shim.so",
        "tracer library",
        " or set RANKSCALE_SHIM",
    )
}

/// Finds `name`, an artifact of this workspace built for MPI
/// implementation `imp`: beside this executable when it is this build's
/// implementation, else in `target/<imp>/<profile>/`. `what` names it in
/// the error, which says how to build it (and `hint`, another way to
/// name it) and where it looked.
pub(crate) fn find_built(imp: &str, name: &str, what: &str, hint: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the rankscale executable")?;
    let dir = exe.parent().context("executable has no directory")?;
    let mut candidates = vec![];
    if imp == BUILD_MPI {
        candidates.push(dir.join(name));
    }
    if let (Some(profile), Some(target)) = (dir.file_name(), dir.parent().and_then(Path::parent)) {
        candidates.push(target.join(imp).join(profile).join(name));
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "no {what} built for {imp}; build it with `scripts/with-mpi {imp} cargo build --release`{hint} (looked in {})",
                candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        })
}

/// A file's identity (device, inode, modification time): the tracer
/// replaces a trace by renaming a new file onto it, so an unchanged
/// identity after the run means the file is an earlier run's.
fn identity(path: &Path) -> Option<(u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.mtime(), m.mtime_nsec()))
}

/// The tracer's switches that `rankscale trace` passes on, each as its
/// `RANKSCALE_*` variable (docs/TRACING.md).
pub struct Switches {
    /// `RANKSCALE_YIELD`: blocking calls wait by test-and-sleep.
    pub yield_wait: bool,
    /// `RANKSCALE_TIMELINE`: every event's enter and leave time.
    pub timeline: bool,
    /// `RANKSCALE_STEPS`: each rank's MPI time along its events.
    pub steps: bool,
    /// `RANKSCALE_IO_PATHS`: the paths of the files the run opens.
    pub io_paths: bool,
}

/// Runs the traced command and reports where the output went.
pub fn trace(
    command: &[String],
    output: Option<&Path>,
    raw: Option<&Path>,
    mpi: Option<&str>,
    switches: Switches,
) -> Result<()> {
    let Some((launcher, args)) = command.split_first() else {
        bail!("no command given after `--`");
    };
    let guessed = mpi_of_launcher(launcher);
    let imp = match (mpi, guessed) {
        (Some(m), _) => m,
        (None, Some(g)) => g,
        (None, None) => {
            eprintln!(
                "rankscale: cannot tell which MPI `{launcher}` belongs to; assuming {BUILD_MPI} (use --mpi to say)"
            );
            BUILD_MPI
        }
    };
    let shim = find_shim(imp)?;
    let mut env: Vec<(String, String)> = vec![("LD_PRELOAD".into(), shim.display().to_string())];
    if let Some(dir) = raw {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let abs = dir.canonicalize()?;
        env.push(("RANKSCALE_RAW".into(), abs.display().to_string()));
    }
    let output = match output {
        Some(o) => {
            let abs = if o.is_absolute() {
                o.to_path_buf()
            } else {
                std::env::current_dir()?.join(o)
            };
            if let Some(d) = abs.parent() {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("cannot create {}", d.display()))?;
            }
            // Refused before the launch: a device or directory, or a file
            // the command names (`-o ./app -- mpirun ./app` would replace
            // the program with its trace).
            let named: Vec<&Path> = command
                .iter()
                .map(Path::new)
                .filter(|p| p.is_file())
                .collect();
            trace::output::check_target(o, &named)?;
            // The old trace stays until the tracer renames the new one
            // onto it; its identity tells a stale file from this run's.
            let before = identity(&abs);
            env.push(("RANKSCALE_TRACE".into(), abs.display().to_string()));
            Some((abs, before))
        }
        None => {
            env.push(("RANKSCALE_TRACE".into(), "0".into()));
            None
        }
    };
    for (on, name) in [
        (switches.yield_wait, "RANKSCALE_YIELD"),
        (switches.timeline, "RANKSCALE_TIMELINE"),
        (switches.steps, "RANKSCALE_STEPS"),
        (switches.io_paths, "RANKSCALE_IO_PATHS"),
    ] {
        if on {
            env.push((name.into(), "1".into()));
        }
    }
    let mut cmd = Command::new(launcher);
    match guessed {
        Some("mpich") => {
            for (k, v) in &env {
                cmd.args(["-genv", k, v]);
            }
        }
        Some(_) => {
            for (k, v) in &env {
                cmd.arg("-x").arg(format!("{k}={v}"));
            }
        }
        None => {
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
        }
    }
    cmd.args(args);
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{launcher}`"))?;
    if let Some(dir) = raw {
        let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
        eprintln!("rankscale: raw logs of {n} ranks in {}", dir.display());
    }
    if let Some((path, before)) = &output {
        if before.is_some() && identity(path) == *before {
            eprintln!(
                "rankscale: {} was not replaced: it still holds the trace of an earlier run",
                path.display()
            );
            if status.success() {
                bail!(
                    "the run succeeded but left no new trace in {} (did the tracer load?)",
                    path.display()
                );
            }
            bail!("the traced command failed ({status})");
        }
        match crate::show::read(path) {
            Ok(f) => {
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                let mut loops = 0u64;
                let mut calls = 0u64;
                fn count(n: &trace::MNode, loops: &mut u64, calls: &mut u64) {
                    match n {
                        trace::MNode::Loop(l) => {
                            *loops += 1;
                            l.body().iter().for_each(|b| count(b, loops, calls));
                        }
                        _ => *calls += 1,
                    }
                }
                f.trace
                    .nodes()
                    .iter()
                    .for_each(|n| count(n, &mut loops, &mut calls));
                eprintln!(
                    "rankscale: {}: {size} bytes; {} ranks, {} events in {calls} calls and {loops} loops",
                    path.display(),
                    f.trace.ranks().len(),
                    f.trace.total_events(),
                );
            }
            Err(e) if status.success() => {
                bail!("the run succeeded but left no readable trace: {e}")
            }
            Err(_) => {}
        }
    }
    if !status.success() {
        bail!("the traced command failed ({status})");
    }
    Ok(())
}
