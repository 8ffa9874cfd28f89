//! `rankscale import`: the command line of [`compress::import`], which
//! holds the parsers and the conversion.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use compress::import::import_pertext;
use trace::file::PERTEXT;

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
            Format::Otf2 => "otf2",
        }
    }
}

/// Whether this build reads and writes OTF2 archives: with the `otf2`
/// cargo feature (the default), which links the OTF2 library. A build
/// without it (a machine without libotf2) says how to get it.
pub fn otf2_available() -> Result<()> {
    if cfg!(feature = "otf2") {
        return Ok(());
    }
    anyhow::bail!(
        "this rankscale was built without OTF2 support (the `otf2` cargo feature is off): \
         install the OTF2 library (Debian/Ubuntu: apt-get install libotf2-trace-dev otf2-tools) \
         and rebuild with the default features (cargo build --release)"
    )
}

/// Reads an OTF2 archive (see [`otf2_available`]).
#[cfg(feature = "otf2")]
fn read_otf2(anchor: &Path) -> Result<(trace::TraceFile, u64)> {
    let got = otf2::import(anchor)?;
    Ok((got.file, got.skipped))
}

/// Never reached without the OTF2 library ([`otf2_available`] refused
/// first).
#[cfg(not(feature = "otf2"))]
fn read_otf2(_: &Path) -> Result<(trace::TraceFile, u64)> {
    otf2_available().map(|()| unreachable!())
}

/// Entry point of `rankscale import`: imports `dir`, writes `output` and
/// prints one summary line (after one warning line naming the files that
/// look like rank files but are not, if any).
pub fn import(format: Format, dir: &Path, output: &Path) -> Result<()> {
    if format == Format::Otf2 {
        otf2_available()?;
    }
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
    let out = trace::output::Output::create(
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
            let (file, skipped) = read_otf2(anchor)?;
            if skipped > 0 {
                spin.say(format!(
                    "{skipped} regions that are not MPI calls rankscale knows were skipped"
                ));
            }
            file
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
