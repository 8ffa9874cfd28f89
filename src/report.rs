//! `rankscale report FILE -o report.html`: analyses the trace and writes
//! the page that [`report::html`] builds.

use std::io::Write;
use std::path::Path;

use analysis::{Options, analyze_with_data};
use anyhow::{Context, Result};

use crate::show::read;

/// Writes the report of `file` to `out`.
pub fn report(file: &Path, out: &Path) -> Result<()> {
    let mut output = trace::output::Output::create(out, &[file])?;
    let f = read(file)?;
    let (r, data) = {
        let bar = crate::progress::Progress::bar("report");
        let opts = Options {
            memory: crate::show::limits().memory,
            ..Options::default()
        };
        analyze_with_data(&f, &opts, &mut |stage, done, total| {
            bar.update(stage, done, total)
        })
        .with_context(|| format!("cannot analyse {}", file.display()))?
    };
    let html = report::html::page(file, &f, &r, &data);
    output
        .write_all(html.as_bytes())
        .with_context(|| format!("cannot write {}", out.display()))?;
    output.commit()?;
    println!("report: {}", out.display());
    Ok(())
}
