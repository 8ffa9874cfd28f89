//! `rankscale merge DIR -o FILE`: one trace from the per-rank files a job
//! left in `TRACE.d` (the snapshots of a job that died, or the files of
//! ranks that could not merge at `MPI_Finalize`).

use std::path::Path;

use anyhow::{Context, Result, bail};
use compress::TraceFile;

/// Reads every `rank-N` file of `dir`, merges them and writes `output`,
/// then says which ranks it holds and up to which event. A rank file that
/// cannot be read is skipped with a warning: what the other ranks left is
/// still worth having.
pub fn merge(dir: &Path, output: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut names: Vec<(u32, std::path::PathBuf)> = Vec::new();
    for e in entries {
        let e = e.with_context(|| format!("reading {}", dir.display()))?;
        let name = e.file_name();
        let Some(rank) = name
            .to_str()
            .and_then(|n| n.strip_prefix("rank-"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        names.push((rank, e.path()));
    }
    names.sort();
    if names.is_empty() {
        bail!(
            "{} holds no rank files (rank-N): nothing to merge",
            dir.display()
        );
    }
    let read_paths: Vec<&Path> = names.iter().map(|(_, p)| p.as_path()).collect();
    let out = compress::output::Output::create(output, &read_paths)?;
    let spin = crate::progress::Progress::spinner(
        "merge",
        format!("{} rank files of {}", names.len(), dir.display()),
    );
    let mut parts = Vec::new();
    for (_, path) in &names {
        match TraceFile::read(path) {
            Ok(f) => parts.push(f),
            Err(e) => spin.warn(&format!(
                "rankscale: warning: skipping {}: {e}",
                path.display()
            )),
        }
    }
    if parts.is_empty() {
        bail!("no rank file of {} could be read", dir.display());
    }
    let file = TraceFile::merge_ranks(parts)?;
    let bytes = file
        .write_output(out)
        .with_context(|| format!("writing {}", output.display()))?;
    drop(spin);
    println!(
        "{}: {} of {} ranks, {} events ({bytes} bytes)",
        output.display(),
        file.trace.ranks().len(),
        file.meta.world_size,
        file.trace.total_events()
    );
    for line in report::structure::partial_lines(&file) {
        println!("{line}");
    }
    Ok(())
}
