//! `rankscale export`: a trace in another tool's format. `--perfetto`
//! writes the Chrome trace-event JSON that the Perfetto UI and
//! `chrome://tracing` open, one track per rank and one slice per MPI call
//! ([`analysis::perfetto`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

/// Arguments of `rankscale export`.
#[derive(clap::Args)]
pub struct Args {
    /// A trace file.
    file: PathBuf,
    /// Write Chrome trace-event JSON (open it at ui.perfetto.dev or in
    /// chrome://tracing). Times come from the trace's timeline
    /// (`rankscale trace --timeline`), else they are estimated from each
    /// event's timing statistics, and the file says so.
    #[arg(long, required = true)]
    perfetto: bool,
    /// The file to write.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// Export only these ranks, e.g. 0,5,7-9 (default: every rank).
    #[arg(long, value_name = "LIST")]
    ranks: Option<String>,
    /// Export at most this many events per rank, the first ones (a
    /// browser opens a few million slices comfortably).
    #[arg(long, value_name = "N")]
    max_events: Option<u64>,
}

/// `rankscale export`.
pub fn run(args: &Args) -> Result<()> {
    debug_assert!(args.perfetto, "the only format, required by clap");
    let file = crate::show::read(&args.file)?;
    let opts = analysis::perfetto::Options {
        ranks: args
            .ranks
            .as_deref()
            .map(crate::check::parse_ranks)
            .transpose()?,
        max_events: args.max_events,
    };
    let out = File::create(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut out = BufWriter::new(out);
    let written = analysis::perfetto::write(&file, &opts, &mut out);
    let done = match written.and_then(|d| Ok(out.flush().map(|()| d)?)) {
        Ok(d) => d,
        Err(e) => {
            // No half-written file is left behind.
            let _ = std::fs::remove_file(&args.output);
            return Err(e.into());
        }
    };
    let timing = if done.timed {
        "times from the timeline"
    } else {
        "times estimated from the timing statistics (trace with --timeline for real ones)"
    };
    eprintln!(
        "rankscale: wrote {} slices of {} rank(s) to {} ({timing})",
        done.slices,
        done.ranks,
        args.output.display()
    );
    if !done.truncated.is_empty() {
        eprintln!(
            "rankscale: {} rank(s) cut at --max-events {}",
            done.truncated.len(),
            args.max_events.unwrap_or(0)
        );
    }
    Ok(())
}
