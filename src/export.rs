//! `rankscale export`: a trace in another tool's format. `--perfetto`
//! writes the Chrome trace-event JSON that the Perfetto UI and
//! `chrome://tracing` open, one track per rank and one slice per MPI call
//! ([`analysis::perfetto`]); `--otf2` an OTF2 archive, the format of
//! Score-P, Scalasca and Vampir ([`otf2::export`]).

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
    #[arg(long, required_unless_present = "otf2", conflicts_with = "otf2")]
    perfetto: bool,
    /// Write an OTF2 archive into the directory given by -o (its anchor
    /// file is DIR/traces.otf2), in the records Score-P writes for MPI:
    /// otf2-print, Scalasca and Vampir read it, and `rankscale import
    /// --format otf2` reads it back call by call. Times as for --perfetto.
    #[arg(long)]
    otf2: bool,
    /// The file to write (a directory with --otf2).
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
    if args.otf2 {
        crate::import::otf2_available()?;
    }
    let file = crate::show::read(&args.file)?;
    if args.otf2 {
        anyhow::ensure!(
            args.ranks.is_none() && args.max_events.is_none(),
            "--ranks and --max-events select part of a Perfetto timeline; an OTF2 archive holds every rank and event"
        );
        return otf2_archive(&file, &args.output);
    }
    let opts = analysis::perfetto::Options {
        ranks: args
            .ranks
            .as_deref()
            .map(|r| crate::check::parse_ranks(r, file.meta.world_size))
            .transpose()?,
        max_events: args.max_events,
    };
    let mut out = trace::output::Output::create(&args.output, &[&args.file])?;
    let done = analysis::perfetto::write(&file, &opts, &mut out)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    out.commit()?;
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

/// `rankscale export --otf2` without the OTF2 library: never reached
/// ([`crate::import::otf2_available`] refused first).
#[cfg(not(feature = "otf2"))]
fn otf2_archive(_: &trace::TraceFile, _: &std::path::Path) -> Result<()> {
    crate::import::otf2_available()
}

/// `rankscale export --otf2`: the archive in `dir`, removed again when the
/// export fails half-way.
#[cfg(feature = "otf2")]
fn otf2_archive(file: &trace::TraceFile, dir: &std::path::Path) -> Result<()> {
    // The archive is a directory: an existing file (the input trace
    // itself, say) is never replaced by one.
    if let Ok(m) = std::fs::metadata(dir) {
        anyhow::ensure!(
            m.is_dir(),
            "{} exists and is not a directory: an OTF2 archive is written into a new or empty directory",
            dir.display()
        );
    }
    let spin = crate::progress::Progress::spinner("export", format!("writing {}", dir.display()));
    let existed = dir.exists();
    let done = match otf2::export(file, dir) {
        Ok(d) => d,
        Err(e) => {
            if !existed && !matches!(e, otf2::Error::Exists(_)) {
                let _ = std::fs::remove_dir_all(dir);
            }
            return Err(e.into());
        }
    };
    drop(spin);
    let timing = if done.timed {
        "times from the timeline"
    } else {
        "times estimated from the timing statistics (trace with --timeline for real ones)"
    };
    eprintln!(
        "rankscale: wrote an OTF2 archive of {} rank(s), {} calls, {} event records to {} ({timing})",
        done.ranks,
        done.calls,
        done.records,
        dir.join("traces.otf2").display()
    );
    if done.overlapping > 0 {
        eprintln!(
            "rankscale: note: {} call(s) lasted past the start of their rank's next call (the trace's records overlap); each ends at that start in the archive, cut by {:.3} ms at most, since OTF2 takes a location's records in time order",
            done.overlapping,
            done.max_cut_ns as f64 / 1e6
        );
    }
    Ok(())
}
