//! `rankscale codegen`: writes a trace as a self-contained C+MPI benchmark
//! (the generator is the `codegen` crate).

use std::path::PathBuf;

use std::io::Write;

use anyhow::{Context, Result};

/// Arguments of `rankscale codegen`.
#[derive(clap::Args)]
pub struct Args {
    /// A trace file (traced, imported or extrapolated).
    file: PathBuf,
    /// The C file to write.
    #[arg(short = 'o', long)]
    output: PathBuf,
    #[command(flatten)]
    emulation: compress::emulation::Emulation,
}

/// `rankscale codegen`.
pub fn run(args: &Args) -> Result<()> {
    let output = trace::output::Output::create(&args.output, &[&args.file])?;
    let file = crate::show::read(&args.file)?;
    args.emulation.check(&file)?;
    let e = &args.emulation;
    let opts = codegen::Options {
        no_compute: e.no_compute,
        compute_scale: e.compute_scale,
        bytes_scale: e.bytes_scale,
        seed: e.seed,
    };
    let name = args.file.display().to_string();
    let bench = codegen::generate(&file, &name, &opts)
        .with_context(|| format!("cannot write a benchmark of {name}"))?;
    let mut output = output;
    output
        .write_all(bench.source.as_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    output.commit()?;
    let trace_bytes = std::fs::metadata(&args.file).map_or(0, |m| m.len());
    eprintln!(
        "rankscale: {} written: {} bytes, {} calls, {} table words (trace {} bytes); build with \
         mpicc -O2 -o bench {} -lm",
        args.output.display(),
        bench.source.len(),
        bench.calls,
        bench.table_words,
        trace_bytes,
        args.output.display()
    );
    Ok(())
}
