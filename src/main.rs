//! The `rankscale` command line: a thin layer over the library crates.

mod launch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use compress::profile::Profile;

#[derive(Parser)]
#[command(
    name = "rankscale",
    version,
    about = "Trace, inspect, extrapolate, replay and analyse MPI communication"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an MPI launch command with the tracer preloaded.
    ///
    /// Example: rankscale trace --raw out/raw -- mpirun.mpich -n 4 ./app
    Trace {
        /// Write the canonical per-rank raw logs into this directory.
        #[arg(long)]
        raw: Option<PathBuf>,
        /// Write one compressed trace file (not implemented yet).
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// MPI implementation of the command (default: guessed from the
        /// launcher's name, else the one rankscale was built for).
        #[arg(long, value_parser = ["mpich", "openmpi"])]
        mpi: Option<String>,
        /// Blocking MPI calls wait by test-and-sleep (for oversubscribed runs).
        #[arg(long)]
        yield_wait: bool,
        /// The launch command, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Summarise a raw log directory: events per operation, per rank, and
    /// the point-to-point communication matrix in bytes.
    Stats {
        /// A directory written by `RANKSCALE_RAW` / `trace --raw`.
        dir: PathBuf,
    },
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Trace {
            raw,
            output,
            mpi,
            yield_wait,
            command,
        } => {
            if output.is_some() {
                eprintln!(
                    "rankscale: error: compressed trace files (-o) are not implemented yet; use --raw DIR for per-rank raw logs"
                );
                std::process::exit(2);
            }
            if raw.is_none() {
                eprintln!("rankscale: error: say where the trace goes: --raw DIR");
                std::process::exit(2);
            }
            launch::trace(&command, raw.as_deref(), mpi.as_deref(), yield_wait)
        }
        Cmd::Stats { dir } => stats(&dir),
    };
    if let Err(e) = r {
        eprintln!("rankscale: error: {e:#}");
        std::process::exit(1);
    }
}

/// The raw logs of a directory, in rank order. Every rank from 0 to P-1
/// must be present, so that a partial directory is never taken for a
/// smaller run.
fn raw_logs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut ranks = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(r) = name
            .strip_prefix("rank-")
            .and_then(|s| s.strip_suffix(".txt"))
            .and_then(|s| s.parse::<usize>().ok())
        {
            ranks.insert(r, path);
        }
    }
    if ranks.is_empty() {
        bail!("{} holds no raw logs (rank-NNNNN.txt)", dir.display());
    }
    let n = ranks.len();
    if let Some((&last, _)) = ranks.last_key_value()
        && last + 1 != n
    {
        bail!(
            "{}: {n} raw logs but the highest rank is {last}; some ranks are missing",
            dir.display()
        );
    }
    Ok(ranks.into_values().collect())
}

fn stats(dir: &Path) -> Result<()> {
    let logs = raw_logs(dir)?;
    let p = logs.len();
    let mut total = Profile::new();
    let mut per_rank = Vec::with_capacity(p);
    for path in &logs {
        let events = compress::raw::read_log(path)?;
        let mut prof = Profile::new();
        for ev in &events {
            prof.add(ev);
            total.add(ev);
        }
        per_rank.push(prof);
    }
    println!("{}: {p} ranks, {} events", dir.display(), total.events());
    println!("\n{:<28} {:>10} {:>8}", "operation", "calls", "sites");
    let mut sites: BTreeMap<compress::Op, usize> = BTreeMap::new();
    for (op, _, _) in total.sites() {
        *sites.entry(op).or_default() += 1;
    }
    for (op, calls) in total.calls_by_op() {
        println!("{:<28} {:>10} {:>8}", op.name(), calls, sites[&op]);
    }
    println!(
        "\nevents per rank: {}",
        per_rank
            .iter()
            .map(|r| r.events().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    if p <= 32 {
        println!("\npoint-to-point bytes sent (row = sender, column = receiver):");
        print!("{:>6}", "");
        for c in 0..p {
            print!(" {c:>8}");
        }
        println!();
        for (r, prof) in per_rank.iter().enumerate() {
            print!("{r:>6}");
            for c in 0..p {
                let b = i32::try_from(c)
                    .ok()
                    .and_then(|c| prof.sent_to().get(&c))
                    .copied()
                    .unwrap_or(0);
                print!(" {b:>8}");
            }
            println!();
        }
    }
    Ok(())
}
