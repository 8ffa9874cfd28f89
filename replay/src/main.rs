//! `replay`: re-issues a rankscale trace on a real MPI machine.
//!
//! ```text
//! mpirun -n P replay FILE [--no-compute] [--compute-scale F] [--bytes-scale F] [--seed N] [--json] [--iodir DIR]
//! ```
//!
//! Every rank reads the file, checks that `P` is the trace's rank count,
//! walks its own part of the compressed trace lazily (never expanding the
//! whole trace into per-rank lists) and issues the same MPI calls: same
//! operations, peers, tags, counts and datatype sizes, communicators
//! re-created by replaying their constructors, requests completed by the
//! same completion calls. Payloads are random. Between calls it sleeps the
//! computation time drawn from the trace's timing statistics.

mod exec;
mod rc;
mod tokens;

use std::path::PathBuf;

use clap::Parser;

/// Command-line options.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "replay",
    version,
    about = "Replay a rankscale trace: mpirun -n P replay FILE"
)]
pub struct Opts {
    /// The trace file.
    pub file: PathBuf,
    /// Computation and message sizes, as `rankscale simulate` and
    /// `codegen` take them.
    #[command(flatten)]
    pub emulation: compress::emulation::Emulation,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// For oversubscribed nodes and busy-polling MPI libraries (MPICH):
    /// wait by test-and-sleep (20 µs, backing off to 1 ms) before blocking
    /// receives, probes, waits and request completions, and (except on
    /// Open MPI, whose blocking calls yield with `--mca
    /// mpi_yield_when_idle 1`) issue blocking collectives and sends through
    /// their nonblocking PMPI form (so a tracer preloaded into the replay
    /// does not see them; use its RANKSCALE_YIELD=1 to trace a replay
    /// instead).
    #[arg(long = "yield")]
    pub yield_wait: bool,
    /// Give up after S seconds: every rank that has not finished says which
    /// event it waits on, and the job ends (for traces that cannot
    /// complete). 0 waits forever.
    #[arg(long, default_value_t = 0.0, value_name = "S", value_parser = parse_timeout)]
    pub timeout: f64,
    /// The directory MPI-IO is replayed in (else RANKSCALE_REPLAY_IODIR):
    /// it must exist, and replay creates and deletes only files named
    /// `rankscale-<hash of the application's path>` in it and never
    /// removes it. Without either, rank 0 makes a fresh directory in
    /// $TMPDIR (else /tmp) for a trace with MPI-IO and removes it after
    /// the replay; a job on several nodes needs a directory on a shared
    /// file system.
    #[arg(long, value_name = "DIR")]
    pub iodir: Option<PathBuf>,
}

/// `--timeout`: a finite number of seconds of at least 0.
fn parse_timeout(s: &str) -> Result<f64, String> {
    compress::emulation::parse_finite(s, 0.0, f64::MAX)
}

fn main() {
    // NaN, the infinities and out-of-range values are refused by the
    // options' parsers (usage status 2), in the words `rankscale` uses.
    let opts = Opts::parse();
    // The trace is read before MPI starts, so that a bad file is reported
    // the same way on every rank without any MPI call.
    let file = match trace::TraceFile::read(&opts.file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("replay: error: {e}");
            std::process::exit(1);
        }
    };
    // A message count scaled beyond an MPI int count would be clamped.
    if let Err(e) = opts.emulation.check(&file) {
        eprintln!("replay: error: {e}");
        std::process::exit(2);
    }
    // A trace of a job that died holds ranks only up to their last
    // snapshot: its sends would wait for receives that are not there.
    if let Some(p) = file.meta.partial.first() {
        eprintln!(
            "replay: error: rank {} of this trace holds only its first {} events ({}): a trace of a job that did not finish cannot be replayed",
            p.rank, p.events, p.cause
        );
        std::process::exit(1);
    }
    std::process::exit(exec::run(&opts, &file));
}
