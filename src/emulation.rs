//! The options of every command that emulates a trace's run (`codegen`'s
//! benchmark, `simulate`), declared and checked once, so that they mean
//! the same everywhere (and the same as `replay`'s).

use anyhow::{Result, bail};
use compress::{MNode, Param, TraceFile};

use crate::args::{MAX_SCALE, finite_in};

/// Computation and message-size options.
#[derive(clap::Args)]
pub struct Emulation {
    /// Leave out the computation between calls.
    #[arg(long)]
    pub no_compute: bool,
    /// Multiply every computation time by this (0 to 1e6).
    #[arg(long, default_value_t = 1.0, value_parser = finite_in(0.0, MAX_SCALE))]
    pub compute_scale: f64,
    /// Multiply every message's size (its element count) by this (0 to
    /// 1e6, and no scaled count beyond an MPI int count, 2^31 - 1).
    #[arg(long, default_value_t = 1.0, value_parser = finite_in(0.0, MAX_SCALE))]
    pub bytes_scale: f64,
    /// Seed of the computation draws (replay's default is 1).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The largest element count an emulated call can have: MPI's counts are C
/// `int`s, and the benchmark and replay pass them as such (a larger one
/// was clamped to this, so every buffer of the benchmark held 2^31 - 1
/// elements).
const MAX_COUNT: i64 = i32::MAX as i64;

impl Emulation {
    /// Refuses a scale out of `0..=`[`MAX_SCALE`], infinite or not a
    /// number (the option's parser does so already; this keeps a value set
    /// any other way from reaching the emulation), and a `--bytes-scale`
    /// that makes a message count of `file` larger than an MPI count holds.
    pub fn check(&self, file: &TraceFile) -> Result<()> {
        for (name, v) in [
            ("--compute-scale", self.compute_scale),
            ("--bytes-scale", self.bytes_scale),
        ] {
            if !v.is_finite() || !(0.0..=MAX_SCALE).contains(&v) {
                bail!("{name} must be a finite number from 0 to {MAX_SCALE:e}, not {v}");
            }
        }
        if self.bytes_scale > 1.0 {
            let largest = largest_count(file.trace.nodes());
            let scaled = (largest as f64 * self.bytes_scale).round();
            if scaled > MAX_COUNT as f64 {
                let most = (MAX_COUNT as f64 / largest as f64).floor();
                bail!(
                    "--bytes-scale {} makes the trace's largest message count, {largest} \
                     elements, {scaled:.0}: more than an MPI count holds ({MAX_COUNT}); at most \
                     {most} for this trace",
                    self.bytes_scale
                );
            }
        }
        Ok(())
    }
}

/// The largest element count of any call of the trace: the send and
/// receive counts and the per-peer count lists of the `v` collectives,
/// which `--bytes-scale` multiplies.
fn largest_count(nodes: &[MNode]) -> i64 {
    let mut most = 0;
    for n in nodes {
        match n {
            MNode::Event(e) => {
                let shape = e.shape();
                for (name, p) in shape.param_names().iter().zip(e.params()) {
                    if matches!(*name, "send.count" | "recv.count") {
                        most = most.max(largest_value(p));
                    }
                }
                for (name, l) in shape.list_names().iter().zip(e.lists()) {
                    if matches!(*name, "send_counts" | "recv_counts") {
                        for c in l.columns() {
                            most = most.max(largest_value(c));
                        }
                    }
                }
            }
            MNode::Loop(l) => most = most.max(largest_count(l.body())),
            _ => {}
        }
    }
    most
}

/// The largest value of a parameter over all its ranks and executions.
fn largest_value(p: &Param) -> i64 {
    let whole = p
        .variants()
        .iter()
        .filter_map(|v| v.values().iter().max())
        .max();
    let phased = p
        .phased()
        .iter()
        .flat_map(|ph| ph.phases())
        .map(largest_value)
        .max();
    whole.into_iter().chain(phased).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-rank trace of one Send of `count` elements.
    fn trace_of_one_send(count: i64) -> TraceFile {
        let mut ev = compress::Event::new(compress::Op::Send);
        ev.comm = compress::CommId::WORLD;
        ev.send = Some(compress::Transfer {
            peer: compress::Peer::Rank { world: 0, local: 0 },
            tag: compress::Tag::Value(0),
            count,
            dsize: 8,
            dtype: compress::Datatype::UNKNOWN,
        });
        let mut rec = compress::RankRecorder::new(0, &compress::Recording::default());
        rec.push(&ev).unwrap();
        let part = rec.finish().unwrap();
        TraceFile::merge_as_traced(vec![part]).unwrap().unwrap()
    }

    fn emulation(bytes_scale: f64) -> Emulation {
        Emulation {
            no_compute: false,
            compute_scale: 1.0,
            bytes_scale,
            seed: 1,
        }
    }

    #[test]
    fn a_bytes_scale_that_overflows_an_mpi_count_is_refused() {
        let file = trace_of_one_send(4096);
        assert_eq!(largest_count(file.trace.nodes()), 4096);
        emulation(1.0).check(&file).unwrap();
        // 4096 × 524287 = 2^31 - 4096 fits; 4096 × 1e6 does not.
        emulation(524_287.0).check(&file).unwrap();
        let e = emulation(1e6).check(&file).unwrap_err().to_string();
        assert_eq!(
            e,
            "--bytes-scale 1000000 makes the trace's largest message count, 4096 elements, \
             4096000000: more than an MPI count holds (2147483647); at most 524287 for this \
             trace"
        );
        // Shrinking never overflows, and the bound holds whatever the trace.
        emulation(0.5).check(&file).unwrap();
        assert!(emulation(f64::NAN).check(&file).is_err());
        assert!(emulation(f64::INFINITY).check(&file).is_err());
        assert!(emulation(2e6).check(&trace_of_one_send(1)).is_err());
    }
}
