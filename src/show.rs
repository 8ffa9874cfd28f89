//! `rankscale show`: reads the file and prints it through
//! [`report::structure`].

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use compress::TraceFile;
use report::structure::{expand, to_json, write_text};

/// Reads a trace file with the file named in every error.
pub fn read(path: &Path) -> Result<TraceFile> {
    Ok(TraceFile::read(path)?)
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
