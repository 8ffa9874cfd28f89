//! The options of every tool that emulates a trace's run (`replay`,
//! `rankscale simulate`, `rankscale codegen`'s benchmark), declared and
//! checked once, so that they mean the same everywhere. With the `clap`
//! feature they are also the command-line options, help text included.
//!
//! The scales are bounded: a million times the recorded computation or
//! message sizes is far beyond any what-if study and keeps every scaled
//! time finite (an infinite scale turns every time it multiplies into
//! infinity), and a scaled message count must still fit the C `int` MPI
//! passes it as.

use trace::{MNode, Param, TraceFile};

/// The largest `--compute-scale` and `--bytes-scale`.
pub const MAX_SCALE: f64 = 1e6;

/// The largest element count an emulated call can have: MPI's counts are C
/// `int`s, and the benchmark and replay pass them as such (a larger one
/// would be clamped, and every buffer would hold 2^31 - 1 elements).
pub const MAX_COUNT: i64 = i32::MAX as i64;

/// Computation and message-size options.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Emulation {
    /// Leave out the computation between calls (communication only).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_compute: bool,
    /// Multiply every computation time by F (0 to 1e6; what-if studies).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 1.0, value_name = "F", value_parser = parse_scale)
    )]
    pub compute_scale: f64,
    /// Multiply every message's size (its element count, rounded) by F (0
    /// to 1e6, and no scaled count beyond an MPI int count, 2^31 - 1).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 1.0, value_name = "F", value_parser = parse_scale)
    )]
    pub bytes_scale: f64,
    /// Seed of the computation draws.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub seed: u64,
}

impl Default for Emulation {
    fn default() -> Self {
        Emulation {
            no_compute: false,
            compute_scale: 1.0,
            bytes_scale: 1.0,
            seed: 1,
        }
    }
}

/// Why the options cannot emulate a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulationError {
    /// A scale out of `0..=`[`MAX_SCALE`], infinite or not a number.
    #[error("{name} must be a finite number from 0 to {MAX_SCALE:e}, not {value}")]
    Scale {
        /// The option.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// `--bytes-scale` makes a message count larger than an MPI count.
    #[error(
        "--bytes-scale {scale} makes the trace's largest message count, {largest} elements, \
         {scaled:.0}: more than an MPI count holds ({MAX_COUNT}); at most {most} for this trace"
    )]
    Count {
        /// The scale.
        scale: f64,
        /// The trace's largest element count.
        largest: i64,
        /// It scaled.
        scaled: f64,
        /// The largest scale this trace allows.
        most: f64,
    },
}

impl Emulation {
    /// Refuses a scale out of `0..=`[`MAX_SCALE`], infinite or not a
    /// number (the options' parser does so already; this keeps a value set
    /// any other way from reaching the emulation), and a `--bytes-scale`
    /// that makes a message count of `file` larger than an MPI count holds.
    pub fn check(&self, file: &TraceFile) -> Result<(), EmulationError> {
        for (name, value) in [
            ("--compute-scale", self.compute_scale),
            ("--bytes-scale", self.bytes_scale),
        ] {
            if !value.is_finite() || !(0.0..=MAX_SCALE).contains(&value) {
                return Err(EmulationError::Scale { name, value });
            }
        }
        // At any scale, 1 included: a large-count (`_c`) call records a
        // count beyond an `int`, which replay and the benchmark would
        // otherwise clamp in silence.
        let largest = largest_count(file.trace.nodes());
        let scaled = (largest as f64 * self.bytes_scale).round();
        if scaled > MAX_COUNT as f64 {
            let most = MAX_COUNT as f64 / largest as f64;
            return Err(EmulationError::Count {
                scale: self.bytes_scale,
                largest,
                scaled,
                // Whole scales where they reach 1; else six decimals.
                most: if most >= 1.0 {
                    most.floor()
                } else {
                    (most * 1e6).floor() / 1e6
                },
            });
        }
        Ok(())
    }
}

/// The value parser of `--compute-scale` and `--bytes-scale`.
pub fn parse_scale(s: &str) -> Result<f64, String> {
    parse_finite(s, 0.0, MAX_SCALE)
}

/// A finite number from `min` to `max` (`f64::MAX`: no upper bound), or
/// why not: the one check of every floating-point option of `rankscale`
/// and `replay`, so that each refuses text that is no number, NaN, the
/// infinities and values out of range in the same words. The message
/// leaves the value out: clap quotes it as given.
pub fn parse_finite(s: &str, min: f64, max: f64) -> Result<f64, String> {
    let want = if max == f64::MAX {
        format!("a finite number of at least {}", bound(min))
    } else {
        format!("a finite number from {} to {}", bound(min), bound(max))
    };
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number (expected {want})"))?;
    if !v.is_finite() {
        return Err(format!("not a finite number (expected {want})"));
    }
    if v < min || v > max {
        return Err(format!("out of range (expected {want})"));
    }
    Ok(v)
}

/// A range's bound as the options' help writes it: `1e6`, not `1000000`.
fn bound(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{v:e}")
    } else {
        format!("{v}")
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
    use crate as compress;

    /// A one-rank trace of one Send of `count` elements.
    fn trace_of_one_send(count: i64) -> TraceFile {
        let mut ev = trace::Event::new(trace::Op::Send);
        ev.comm = trace::CommId::WORLD;
        ev.send = Some(trace::Transfer {
            peer: trace::Peer::Rank { world: 0, local: 0 },
            tag: trace::Tag::Value(0),
            count,
            dsize: 8,
            dtype: trace::Datatype::UNKNOWN,
        });
        let mut rec = compress::RankRecorder::new(0, &compress::Recording::default());
        rec.push(&ev).unwrap();
        let part = rec.finish().unwrap();
        crate::merge::as_traced(vec![part]).unwrap().unwrap()
    }

    fn emulation(bytes_scale: f64) -> Emulation {
        Emulation {
            bytes_scale,
            ..Emulation::default()
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

    #[test]
    fn a_large_count_beyond_an_int_is_refused_at_scale_one() {
        // `MPI_Send_c` of 2^32 elements: replay and the benchmark issue
        // `int` counts, and would clamp it.
        let file = trace_of_one_send(1 << 32);
        let e = emulation(1.0).check(&file).unwrap_err().to_string();
        assert_eq!(
            e,
            "--bytes-scale 1 makes the trace's largest message count, 4294967296 elements, \
             4294967296: more than an MPI count holds (2147483647); at most 0.499999 for this \
             trace"
        );
        emulation(0.499_999).check(&file).unwrap();
    }
}
