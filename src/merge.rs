//! `rankscale merge DIR -o FILE`: one trace from the per-rank files a job
//! left in `TRACE.d` (the snapshots of a job that died, or the files of
//! ranks that could not merge at `MPI_Finalize`).

use std::path::Path;

use anyhow::{Context, Result, bail};
use trace::TraceFile;

/// Reads every `rank-N` file of `dir`, merges them and writes `output`,
/// then says which ranks it holds and up to which event. A rank file that
/// cannot be read is skipped with a warning: what the other ranks left is
/// still worth having. So are entries named `rank-...` that are no rank's
/// file (`rank--3`, `rank-007`, `rank-99999999999`), listed in one warning
/// line; only a directory without any rank file is an error.
pub fn merge(dir: &Path, output: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut names: Vec<(u32, std::path::PathBuf)> = Vec::new();
    let mut strays: Vec<String> = Vec::new();
    for e in entries {
        let e = e.with_context(|| format!("reading {}", dir.display()))?;
        let name = e.file_name();
        let text = name.to_string_lossy();
        let Some(number) = text.strip_prefix("rank-") else {
            continue;
        };
        match rank_of(number) {
            Some(rank) if name.to_str().is_some() => names.push((rank, e.path())),
            _ => strays.push(text.into_owned()),
        }
    }
    names.sort();
    strays.sort();
    if names.is_empty() {
        let also = if strays.is_empty() {
            String::new()
        } else {
            format!(" (not rank files: {})", listed(&strays))
        };
        bail!(
            "{} holds no rank files (rank-N): nothing to merge{also}",
            dir.display()
        );
    }
    if !strays.is_empty() {
        eprintln!(
            "rankscale: warning: {}: not rank files (rank-N, N a rank without leading zeros), \
             skipped: {}",
            dir.display(),
            listed(&strays)
        );
    }
    let read_paths: Vec<&Path> = names.iter().map(|(_, p)| p.as_path()).collect();
    let out = trace::output::Output::create(output, &read_paths)?;
    let spin = crate::progress::Progress::spinner(
        "merge",
        format!("{} rank files of {}", names.len(), dir.display()),
    );
    let mut parts = Vec::new();
    for (_, path) in &names {
        match TraceFile::read_limited(path, &crate::show::limits()) {
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
    let file = compress::merge::rank_files(parts)?;
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

/// The rank a rank file's name gives after `rank-`: a `u32` in decimal
/// without sign or leading zeros, as the tracer writes it (`rank-{rank}`),
/// so that no two names stand for one rank.
fn rank_of(number: &str) -> Option<u32> {
    let canonical =
        number.bytes().all(|b| b.is_ascii_digit()) && (number == "0" || !number.starts_with('0'));
    canonical.then(|| number.parse().ok()).flatten()
}

/// Names for a one-line warning (the files `merge` and `import` leave
/// out): the first ten, and how many more, so that a directory of
/// thousands of strays still gives one readable line.
pub(crate) fn listed(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_rank_numbers_name_rank_files() {
        assert_eq!(rank_of("0"), Some(0));
        assert_eq!(rank_of("17"), Some(17));
        assert_eq!(rank_of("4294967295"), Some(u32::MAX));
        for bad in [
            "",
            "-3",
            "+3",
            "007",
            "00",
            "99999999999",
            "4294967296",
            "3.tmp",
            "3 ",
        ] {
            assert_eq!(rank_of(bad), None, "{bad:?}");
        }
        let many: Vec<String> = (0..12).map(|i| format!("rank-x{i}")).collect();
        assert_eq!(
            listed(&many),
            "rank-x0, rank-x1, rank-x2, rank-x3, rank-x4, rank-x5, rank-x6, rank-x7, rank-x8, \
             rank-x9 and 2 more"
        );
    }
}
