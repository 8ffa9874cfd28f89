//! `rankscale check`: proves a trace consistent (every message sent and
//! received, every collective complete and agreed, every peer and list in
//! range) or lists what is wrong; and the same check on every trace
//! `rankscale extrap` writes.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use semantics::check::{CheckReport, DETAIL, check, check_ranks};
use trace::TraceFile;

/// Up to this many events an extrapolated trace is checked whole (about
/// 1 µs per event); a larger one (a million ranks) is checked on a sample
/// that holds every position class.
pub const FULL_CHECK_EVENTS: u64 = 2_000_000;

/// Ranks spread over the world that a sample of an extrapolated trace
/// takes, besides rank 0 and the last rank.
pub const SAMPLE_RANKS: u64 = 64;

/// Arguments of `rankscale check`.
#[derive(clap::Args)]
pub struct Args {
    /// A trace file.
    file: PathBuf,
    /// Check only these ranks and the ranks they exchange messages with,
    /// e.g. 0,5,7-9 (for a trace too large to check whole).
    #[arg(long, value_name = "LIST")]
    ranks: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `rankscale check`: exits 0 when the trace is consistent, 1 when it is
/// not (or cannot be read).
pub fn run(args: &Args) -> Result<()> {
    let file = crate::show::read(&args.file)?;
    let report = match &args.ranks {
        Some(list) => check_ranks(&file, &parse_ranks(list, file.meta.world_size)?)?,
        None => check(&file)?,
    };
    let name = args.file.display().to_string();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &to_json(&name, &report)?)?;
        writeln!(out)?;
    } else {
        print(&name, &report, &mut out)?;
    }
    out.flush().context("writing to stdout")?;
    if !report.is_consistent() {
        std::process::exit(1);
    }
    Ok(())
}

/// Parses a rank list such as `0,5,7-9`.
/// Every rank must be below `world` (the trace's world size, itself within
/// the memory budget), so that a range such as `0-4294967295` is refused
/// before it is expanded.
pub(crate) fn parse_ranks(text: &str, world: u32) -> Result<Vec<u32>> {
    let mut ranks = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            let r = s
                .trim()
                .parse::<u32>()
                .with_context(|| format!("--ranks {text}: `{s}` is not a rank"))?;
            if r >= world {
                bail!(
                    "--ranks {text}: rank {r} is not in the trace's {world} ranks (0 to {})",
                    world.saturating_sub(1)
                );
            }
            Ok(r)
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a {
                    bail!("--ranks {text}: the range {part} runs backwards");
                }
                ranks.extend(a..=b);
            }
            None => ranks.push(num(part)?),
        }
    }
    if ranks.is_empty() {
        bail!("--ranks {text}: expected ranks such as 0,5,7-9");
    }
    Ok(ranks)
}

/// The report in text: the problems, or one line saying what was checked.
fn print(name: &str, report: &CheckReport, out: &mut impl Write) -> Result<()> {
    for p in &report.problems {
        writeln!(out, "{p}")?;
    }
    let more = report.problem_count - report.problems.len() as u64;
    if more > 0 {
        let kinds: Vec<String> = report
            .tally
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        writeln!(
            out,
            "... and {more} more problems (the first {DETAIL} are shown; all of them by kind: {})",
            kinds.join(", ")
        )?;
    }
    for n in &report.notes {
        writeln!(out, "note: {n}")?;
    }
    if report.is_consistent() {
        writeln!(out, "{name}: consistent: {}", report.summary())?;
    } else {
        let s = if report.problem_count == 1 { "" } else { "s" };
        writeln!(
            out,
            "{name}: inconsistent: {} problem{s} ({})",
            report.problem_count,
            report.summary()
        )?;
    }
    Ok(())
}

/// The report as JSON, each problem with its message.
fn to_json(name: &str, report: &CheckReport) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    if let Some(list) = v.get_mut("problems").and_then(|p| p.as_array_mut()) {
        for (j, p) in list.iter_mut().zip(&report.problems) {
            j["message"] = p.kind.to_string().into();
        }
    }
    v["file"] = name.into();
    v["consistent"] = report.is_consistent().into();
    Ok(v)
}

/// Ranks spread evenly over the trace's ranks, rank 0, the last rank and
/// `extra` among them: the sample an extrapolated trace too large to check
/// whole is checked on.
fn spread(file: &TraceFile, extra: &[u32]) -> Vec<u32> {
    let ranks = file.trace.ranks();
    let (Some(first), Some(last)) = (ranks.min(), ranks.max()) else {
        return Vec::new();
    };
    let span = u64::from(last - first);
    let mut picked: Vec<u32> = (0..SAMPLE_RANKS)
        .map(|k| first + (span * k / (SAMPLE_RANKS - 1).max(1)) as u32)
        .chain([first, last])
        .chain(extra.iter().copied())
        .filter(|&r| ranks.contains(r))
        .collect();
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// Checks the trace `rankscale extrap` is about to write: every rank up to
/// [`FULL_CHECK_EVENTS`] events, else a sample that holds `classes` (a rank
/// of every position class) and ranks spread over the world, with the ranks
/// they exchange messages with. Prints one line when it is consistent; else
/// prints the problems and fails, so that nothing is written.
pub fn verify_extrapolated(file: &TraceFile, classes: &[u32]) -> Result<()> {
    let events = file.trace.total_events();
    let report = if events <= FULL_CHECK_EVENTS {
        check(file)?
    } else {
        check_ranks(file, &spread(file, classes))?
    };
    if report.is_consistent() {
        println!("check: consistent ({})", report.summary());
        return Ok(());
    }
    let stderr = std::io::stderr();
    print("the extrapolated trace", &report, &mut stderr.lock())?;
    bail!(
        "the extrapolated trace is inconsistent ({} problems): this is a bug in rankscale extrap or a pattern it does not support; nothing was written",
        report.problem_count
    )
}
