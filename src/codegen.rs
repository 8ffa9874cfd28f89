//! `rankscale codegen`: writes a trace as a self-contained C+MPI benchmark
//! (the generator is the `codegen` crate).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

/// Arguments of `rankscale codegen`.
#[derive(clap::Args)]
pub struct Args {
    /// A trace file (traced, imported or extrapolated).
    file: PathBuf,
    /// The C file to write.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// Leave out the computation between calls.
    #[arg(long)]
    no_compute: bool,
    /// Multiply every computation time by this.
    #[arg(long, default_value_t = 1.0)]
    compute_scale: f64,
    /// Multiply every message's element count by this.
    #[arg(long, default_value_t = 1.0)]
    bytes_scale: f64,
    /// Seed of the computation draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// `rankscale codegen`.
pub fn run(args: &Args) -> Result<()> {
    for (name, v) in [
        ("--compute-scale", args.compute_scale),
        ("--bytes-scale", args.bytes_scale),
    ] {
        if !v.is_finite() || v < 0.0 {
            bail!("{name} must be a finite number of at least 0, not {v}");
        }
    }
    let file = crate::show::read(&args.file)?;
    let opts = codegen::Options {
        no_compute: args.no_compute,
        compute_scale: args.compute_scale,
        bytes_scale: args.bytes_scale,
        seed: args.seed,
    };
    let name = args.file.display().to_string();
    let bench = codegen::generate(&file, &name, &opts)
        .with_context(|| format!("cannot write a benchmark of {name}"))?;
    std::fs::write(&args.output, &bench.source)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
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
