//! `rankscale stats`: reads a trace file (or a raw log directory) and prints
//! its statistics through [`report::stats`].

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use report::stats::{write_raw_stats, write_trace_stats};

use crate::show::read;

/// Entry point of `rankscale stats`.
pub fn stats(path: &Path) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if path.is_dir() {
        write_raw_stats(path, &mut out)?;
    } else {
        let file = read(path)?;
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        write_trace_stats(&file, path, size, &mut out)?;
    }
    out.flush().context("writing to stdout")?;
    Ok(())
}
