//! The `rankscale` command line: a thin layer over the library crates.

/// mimalloc instead of glibc's malloc: imports, merges and analyses make
/// millions of small allocations (malloc and free were 30 % of importing
/// smg128). The tracer (`pmpi-shim`) keeps the application's allocator.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod analyze;
mod args;
mod check;
mod codegen;
mod export;
mod extrap;
mod import;
mod launch;
mod merge;
mod progress;
mod report;
mod show;
mod simulate;
mod stats;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "rankscale",
    version,
    about = "Trace, inspect, extrapolate, replay and analyse MPI communication"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// The memory a trace may claim (ranks, payload, per-event tables),
    /// e.g. 8G; a trace that declares more is refused before anything is
    /// allocated [env: RANKSCALE_MAX_MEMORY; default 8G].
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_budget)]
    max_memory: Option<u64>,
    /// The events a trace may expand to, over all ranks [env:
    /// RANKSCALE_EVENT_BUDGET; default 2^40]. (Not `--max-events`: that
    /// is `export`'s cut of a Perfetto timeline.)
    #[arg(long, global = true, value_name = "N", value_parser = parse_budget)]
    event_budget: Option<u64>,
}

/// A budget given on the command line: a positive size such as 8G.
fn parse_budget(text: &str) -> Result<u64, String> {
    trace::limits::parse_size(text).ok_or_else(|| {
        format!("`{text}` is not a positive size (a number, optionally with K, M, G or T)")
    })
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an MPI launch command with the tracer preloaded and write one
    /// compressed trace file.
    ///
    /// Example: rankscale trace -o app.64.trace -- mpirun.mpich -n 64 ./app
    Trace {
        /// The trace file (default: rankscale.trace, or none when only
        /// --raw is given).
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// Also write the canonical per-rank raw logs into this directory.
        #[arg(long)]
        raw: Option<PathBuf>,
        /// MPI implementation of the command (default: guessed from the
        /// launcher's name, else the one rankscale was built for).
        #[arg(long, value_parser = ["mpich", "openmpi"])]
        mpi: Option<String>,
        /// Blocking MPI calls wait by test-and-sleep (for oversubscribed runs).
        #[arg(long)]
        yield_wait: bool,
        /// Also keep every event's enter and leave time (RANKSCALE_TIMELINE=1),
        /// for wait states, delays, the critical path and the report's
        /// desynchronisation plots.
        #[arg(long)]
        timeline: bool,
        /// Also keep each rank's MPI time along its events in at most 4096
        /// buckets (RANKSCALE_STEPS=1): the report's desynchronisation
        /// plots without the timeline's size.
        #[arg(long)]
        steps: bool,
        /// Also keep the path of every file the run opens through MPI-IO
        /// (RANKSCALE_IO_PATHS=1), for `show` and `stats`; by default the
        /// trace holds only a hash of each, since paths can be private.
        #[arg(long)]
        io_paths: bool,
        /// The launch command, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Merge the per-rank files a job left in TRACE.d into one trace: the
    /// snapshots of a job that died without MPI_Finalize (killed, out of
    /// time, crashed), or the files of ranks that could not merge. It says
    /// which ranks the trace holds and up to which event each.
    ///
    /// Example: rankscale merge app.trace.d -o app.trace
    Merge {
        /// The directory of rank files (the trace file's name + `.d`).
        dir: PathBuf,
        /// The trace file to write.
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
    /// Print a trace's structure: loops with iteration counts, calls with
    /// parameters, ranklists and timing.
    Show {
        /// A trace file.
        file: PathBuf,
        /// Print everything as JSON.
        #[arg(long, conflicts_with = "expand")]
        json: bool,
        /// Print rank RANK's full event sequence in the raw-log grammar.
        #[arg(long, value_name = "RANK")]
        expand: Option<u32>,
    },
    /// Summarise a trace file (events, loops, size, compression ratio,
    /// point-to-point matrix by bytes, per-call-site profile) or a raw log
    /// directory.
    Stats {
        /// A trace file, or a directory written by `RANKSCALE_RAW`.
        path: PathBuf,
    },
    /// Prove a trace consistent: every peer, root and list in range, every
    /// send received and every receive sent (non-overtaking, wildcards as
    /// matched, nothing truncated), every collective complete, in order and
    /// agreed. Exits 1 and lists the problems when it is not.
    ///
    /// Example: rankscale check app.64.trace --ranks 0,5,7-9
    Check(check::Args),
    /// Write a trace as one self-contained C+MPI benchmark with the trace's
    /// loops, calls, communicators and computation (sleeps), to stand in
    /// for the application where its source cannot be shared.
    ///
    /// Example: rankscale codegen app.64.trace -o bench.c && mpicc.mpich -O2 -o bench bench.c -lm
    Codegen(codegen::Args),
    /// Predict the run a trace stands for, at the trace's rank count,
    /// without MPI: a LogGOPS simulation (eager and rendezvous messages,
    /// MPICH's collective algorithms, computation from the histograms)
    /// giving the time per rank, per call site and on the critical path.
    ///
    /// Example: rankscale simulate app.4096.trace --params loggops.toml --L 500
    Simulate(simulate::Args),
    /// Measure this machine's LogGOPS parameters (L, o, g, G, O, S) with a
    /// two-rank MPI run, and write them for `simulate --params`.
    ///
    /// Example: rankscale calibrate -o loggops.toml -- mpirun.openmpi -n 2
    Calibrate(simulate::CalibrateArgs),
    /// Find communication patterns, segment them into phases, flag slow
    /// instances with their cause, and rank slow patterns by Inspection
    /// Affinity. Instance timing needs a trace taken with
    /// RANKSCALE_TIMELINE=1.
    Analyze(analyze::Args),
    /// Write the whole analysis (topology, communication matrix, phases,
    /// slow patterns, wait states, delays and critical path,
    /// desynchronisation plots) as one self-contained HTML file.
    ///
    /// Example: rankscale report app.trace -o report.html
    Report {
        /// A trace file.
        file: PathBuf,
        /// The HTML file to write.
        #[arg(short = 'o', long, default_value = "report.html")]
        output: PathBuf,
    },
    /// Detect the communication topology of traces (as ScalaExtrap does,
    /// Wu and Mueller, ACM TOPLAS 2012): grid sizes, torus or mesh per
    /// dimension, the groups of ranks with the same endpoint pattern and the
    /// corner (critical) ranks.
    ///
    /// Example: rankscale topology app.16.trace app.25.trace
    Topology {
        /// Trace files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Extrapolate traces of the same program at a few small rank counts to
    /// a trace at any rank count (ScalaExtrap's method, Wu and Mueller, ACM
    /// TOPLAS 2012), in the same file format.
    ///
    /// Example: rankscale extrap -o app.1024.trace --ranks 1024 app.4.trace
    /// app.9.trace app.16.trace app.25.trace
    Extrap(extrap::Args),
    /// Write a trace in another tool's format: --perfetto gives the Chrome
    /// trace-event JSON that ui.perfetto.dev and chrome://tracing open, one
    /// track per rank and one slice per MPI call; --otf2 an OTF2 archive
    /// (Score-P's format, for otf2-print, Scalasca and Vampir).
    ///
    /// Example: rankscale export app.trace --perfetto -o app.json
    ///
    /// Example: rankscale export app.trace --otf2 -o app-otf2/
    Export(export::Args),
    /// Convert a trace written by another tool into a rankscale trace file,
    /// with a timeline, so that it can be shown and analysed like ours.
    ///
    /// Example: rankscale import --format pertext traces/smg2000.16 -o smg.trace
    ///
    /// Example: rankscale import --format otf2 scorep-run/traces.otf2 -o app.trace
    Import {
        /// The input format (pertext: one `Process<r>.txt` per rank; otf2:
        /// an OTF2 archive).
        #[arg(long, value_enum)]
        format: import::Format,
        /// The directory holding the input trace (for otf2 also the
        /// anchor file traces.otf2).
        dir: PathBuf,
        /// The trace file to write.
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
}

/// A closed pipe (`rankscale show FILE | head`) ends the tool quietly, as
/// it ends any Unix filter, instead of a panic inside `println!`.
fn quiet_on_closed_pipe() {
    // SAFETY: restores the default disposition of SIGPIPE, at startup,
    // before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

fn main() {
    quiet_on_closed_pipe();
    let cli = Cli::parse();
    if let Err(e) = show::set_limits(cli.max_memory, cli.event_budget) {
        eprintln!("rankscale: error: {e:#}");
        std::process::exit(1);
    }
    let r = match cli.cmd {
        Cmd::Trace {
            raw,
            output,
            mpi,
            yield_wait,
            timeline,
            steps,
            io_paths,
            command,
        } => {
            let output = match (output, &raw) {
                (Some(o), _) => Some(o),
                (None, Some(_)) => None,
                (None, None) => Some(PathBuf::from("rankscale.trace")),
            };
            launch::trace(
                &command,
                output.as_deref(),
                raw.as_deref(),
                mpi.as_deref(),
                launch::Switches {
                    yield_wait,
                    timeline,
                    steps,
                    io_paths,
                },
            )
        }
        Cmd::Merge { dir, output } => merge::merge(&dir, &output),
        Cmd::Show { file, json, expand } => show::show(&file, json, expand),
        Cmd::Stats { path } => stats::stats(&path),
        Cmd::Check(args) => check::run(&args),
        Cmd::Codegen(args) => codegen::run(&args),
        Cmd::Simulate(args) => simulate::run(&args),
        Cmd::Calibrate(args) => simulate::calibrate(&args),
        Cmd::Analyze(args) => analyze::run(&args),
        Cmd::Report { file, output } => report::report(&file, &output),
        Cmd::Topology { files } => extrap::topology(&files),
        Cmd::Extrap(args) => extrap::run(&args),
        Cmd::Export(args) => export::run(&args),
        Cmd::Import {
            format,
            dir,
            output,
        } => import::import(format, &dir, &output),
    };
    if let Err(e) = r {
        eprintln!("rankscale: error: {e:#}");
        std::process::exit(1);
    }
}
