//! `rankscale import`: the command line of [`compress::import`], which
//! holds the parsers and the conversion.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use compress::import::{PERTEXT, import_pertext};

/// The trace formats `rankscale import` reads. A closed set, so that clap
/// lists the accepted names and refuses any other with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One `Process<r>.txt` per rank: Send/Recv, collective and `DEL<n>`
    /// lines with absolute ns timestamps.
    Pertext,
    /// An OTF2 archive (Score-P, or `rankscale export --otf2`): give its
    /// anchor file `traces.otf2` or the directory holding it.
    Otf2,
}

impl Format {
    /// The name as given to `--format`, recorded in the trace's metadata so
    /// that a reader knows where the trace came from.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pertext => PERTEXT,
            Format::Otf2 => otf2::OTF2,
        }
    }
}

/// Entry point of `rankscale import`: imports `dir`, writes `output` and
/// prints one summary line (after one warning line naming the files that
/// look like rank files but are not, if any).
pub fn import(format: Format, dir: &Path, output: &Path) -> Result<()> {
    // The files the import reads, so that the output is never one of them.
    let read_paths: Vec<PathBuf> = match format {
        Format::Pertext => {
            let found = compress::import::scan_rank_files(dir)?;
            if !found.not_rank_files.is_empty() {
                eprintln!(
                    "rankscale: warning: {}: not rank files (Process<r>.txt, r a rank without \
                     leading zeros), not read: {}",
                    dir.display(),
                    crate::merge::listed(&found.not_rank_files)
                );
            }
            found.files
        }
        Format::Otf2 => {
            let anchor = if dir.is_dir() {
                dir.join("traces.otf2")
            } else {
                dir.to_path_buf()
            };
            anyhow::ensure!(
                anchor.is_file(),
                "{}: no OTF2 anchor file (give the archive's traces.otf2 or its directory)",
                anchor.display()
            );
            vec![anchor.with_extension("def"), anchor]
        }
    };
    let out = compress::output::Output::create(
        output,
        &read_paths.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    let spin = crate::progress::Progress::spinner(
        "import",
        format!("reading {} ({})", dir.display(), format.name()),
    );
    let file = match format {
        Format::Pertext => import_pertext(dir)?,
        Format::Otf2 => {
            let anchor = read_paths.last().context("no anchor")?;
            let got = otf2::import(anchor)?;
            if got.skipped > 0 {
                spin.say(format!(
                    "{} regions that are not MPI calls rankscale knows were skipped",
                    got.skipped
                ));
            }
            got.file
        }
    };
    spin.say(format!("writing {}", output.display()));
    let bytes = file.write_output(out)?;
    drop(spin);
    println!(
        "rankscale: imported {} ranks, {} events from {} ({}) into {} ({bytes} bytes)",
        file.meta.world_size,
        file.trace.total_events(),
        dir.display(),
        format.name(),
        output.display(),
    );
    Ok(())
}
