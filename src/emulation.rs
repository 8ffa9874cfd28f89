//! The options of every command that emulates a trace's run (`codegen`'s
//! benchmark, `simulate`), declared and checked once, so that they mean
//! the same everywhere (and the same as `replay`'s).

use anyhow::{Result, bail};

/// Computation and message-size options.
#[derive(clap::Args)]
pub struct Emulation {
    /// Leave out the computation between calls.
    #[arg(long)]
    pub no_compute: bool,
    /// Multiply every computation time by this.
    #[arg(long, default_value_t = 1.0)]
    pub compute_scale: f64,
    /// Multiply every message's size (its element count) by this.
    #[arg(long, default_value_t = 1.0)]
    pub bytes_scale: f64,
    /// Seed of the computation draws (replay's default is 1).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl Emulation {
    /// Refuses a scale that is negative, infinite or not a number.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("--compute-scale", self.compute_scale),
            ("--bytes-scale", self.bytes_scale),
        ] {
            if !v.is_finite() || v < 0.0 {
                bail!("{name} must be a finite number of at least 0, not {v}");
            }
        }
        Ok(())
    }
}
