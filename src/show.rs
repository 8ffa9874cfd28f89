//! `rankscale show`: reads the file and prints it through
//! [`report::structure`].

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use report::structure::{expand, to_json, write_text};
use trace::{Limits, TraceFile};

/// The budgets every trace is read under (see [`trace::limits`]).
static LIMITS: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();

/// Sets the budgets from the command line's `--max-memory` and
/// `--event-budget` over the environment's and the defaults.
pub fn set_limits(memory: Option<u64>, events: Option<u64>) -> Result<()> {
    let mut l = Limits::from_env()?;
    if let Some(m) = memory {
        l.memory = m;
    }
    if let Some(e) = events {
        l.events = e;
    }
    let _ = LIMITS.set(l);
    Ok(())
}

/// The budgets in force.
pub fn limits() -> Limits {
    LIMITS.get().copied().unwrap_or_default()
}

/// Reads a trace file with the file named in every error, under the
/// budgets in force.
pub fn read(path: &Path) -> Result<TraceFile> {
    Ok(TraceFile::read_limited(path, &limits())?)
}

/// Entry point of `rankscale show`.
pub fn show(path: &Path, json: bool, expand_rank: Option<u32>) -> Result<()> {
    let file = read(path)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if let Some(r) = expand_rank {
        expand(&file, r, &mut out)?;
    } else if json {
        serde_json::to_writer_pretty(&mut out, &to_json(&file))?;
        writeln!(out)?;
    } else {
        write_text(&file, path, &mut out)?;
    }
    out.flush().context("writing to stdout")?;
    Ok(())
}
