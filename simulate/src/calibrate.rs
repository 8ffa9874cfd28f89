//! From measurements on a real machine to LogGOPS parameters.
//!
//! `replay-calibrate` (run by `rankscale calibrate` under `mpirun` with two
//! ranks) measures, with the medians of many repetitions:
//! - the time a blocking send of `s` bytes takes when the receive is
//!   already posted: `o + (s-1)·O` while the message goes eagerly;
//! - half the round trip of a ping-pong of `s` bytes:
//!   `2o + L + (s-1)·(G+O)` eagerly (the model's one-way time, both CPUs'
//!   overheads included);
//! - the time per message of a stream of small nonblocking sends:
//!   `max(o, g)`;
//! - the time a blocking send of `s` bytes takes when the receiver posts
//!   its receive a known delay late: short for an eager message, at least
//!   the delay for a rendezvous one, which places `S`.
//!
//! This module turns those samples into [`Params`]; it is pure so that the
//! fit is tested against samples made from known parameters.

use serde::{Deserialize, Serialize};

use crate::{Error, Params};

/// What `replay-calibrate` measured (its JSON output).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Samples {
    /// The MPI library, as `MPI_Get_library_version` names it.
    pub mpi: String,
    /// Blocking send time to a receiver that has posted: (bytes, ns).
    pub send: Vec<(u64, f64)>,
    /// Half the ping-pong round trip: (bytes, ns).
    pub pingpong: Vec<(u64, f64)>,
    /// Time per message of back-to-back 8-byte nonblocking sends, ns.
    pub rate_ns: f64,
    /// Blocking send time when the receive is posted `late_ns` late:
    /// (bytes, ns).
    pub late: Vec<(u64, f64)>,
    /// How late the receiver posts in [`Samples::late`], ns.
    pub late_ns: f64,
}

/// The least-squares line through `(x, y)`: (intercept, slope).
fn line(pts: &[(f64, f64)]) -> (f64, f64) {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return (pts.first().map_or(0.0, |p| p.1), 0.0);
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

/// Fits LogGOPS parameters to `s`. Returns them with a few lines saying
/// how each was obtained.
pub fn fit(s: &Samples) -> Result<(Params, String), Error> {
    if s.send.is_empty() || s.pingpong.is_empty() || s.late.is_empty() {
        return Err(Error::Params(
            "the calibration measured nothing (no send, ping-pong or late-receiver samples)".into(),
        ));
    }
    let mut notes = String::new();
    // S: the smallest size whose send waited for the late receiver.
    let mut late = s.late.clone();
    late.sort_by_key(|x| x.0);
    let waited = late.iter().find(|x| x.1 >= s.late_ns / 2.0).map(|x| x.0);
    let eager_limit = match waited {
        Some(b) => {
            // Between the last size that did not wait and this one.
            let below = late.iter().rev().find(|x| x.0 < b).map_or(b, |x| x.0 + 1);
            notes.push_str(&format!(
                "S: sends of {b} bytes waited for a receiver {:.0} us late, {} bytes did not\n",
                s.late_ns / 1e3,
                below.saturating_sub(1)
            ));
            below.max(1)
        }
        None => {
            let top = late.last().map_or(0, |x| x.0);
            notes.push_str(&format!(
                "S: no send up to {top} bytes waited for a late receiver; S is taken as twice that\n"
            ));
            top.saturating_mul(2).max(1)
        }
    };
    let eager = |b: u64| b < eager_limit;
    // o and O from the sends that went eagerly.
    let pts: Vec<(f64, f64)> = s
        .send
        .iter()
        .filter(|x| eager(x.0))
        .map(|x| ((x.0 as f64 - 1.0).max(0.0), x.1))
        .collect();
    let (o, big_o) = line(&pts);
    let (o, big_o) = (o.max(0.0), big_o.max(0.0));
    notes.push_str(&format!(
        "o, O: line through the send times of {} eager sizes\n",
        pts.len()
    ));
    // G from the slope of the one-way time over the largest sizes.
    let mut pp = s.pingpong.clone();
    pp.sort_by_key(|x| x.0);
    let big: Vec<(f64, f64)> = pp
        .iter()
        .rev()
        .take(4)
        .map(|x| ((x.0 as f64 - 1.0).max(0.0), x.1))
        .collect();
    let (_, slope) = line(&big);
    let slope = slope.max(0.0);
    // The model's one-way time grows by G + O per byte. A library that
    // copies eager messages twice but moves large ones in one copy (MPICH
    // on shared memory) shows a send-side O above half the large messages'
    // slope; O is then capped there, so that G keeps the other half.
    let big_o = if big_o > slope / 2.0 {
        notes.push_str(&format!(
            "O: {big_o:.4} ns/B on eager sends, capped at half the large messages' slope\n"
        ));
        slope / 2.0
    } else {
        big_o
    };
    let big_g = slope - big_o;
    notes.push_str(&format!(
        "G: slope of the ping-pong's one-way time over its {} largest sizes, less O\n",
        big.len()
    ));
    // L from the smallest message's one-way time.
    let (b0, t0) = pp[0];
    let latency = (t0 - 2.0 * o - (b0 as f64 - 1.0).max(0.0) * (big_g + big_o)).max(0.0);
    notes.push_str(&format!(
        "L: one-way time of {b0} bytes less both overheads\n"
    ));
    let gap = s.rate_ns.max(0.0);
    notes.push_str("g: time per message of a stream of 8-byte sends\n");
    // Tenths of a nanosecond and of a picosecond per byte are below any
    // machine's noise.
    let round = |x: f64, digits: usize| format!("{x:.digits$}").parse::<f64>().unwrap_or(x);
    let p = Params {
        latency: round(latency, 1),
        overhead: round(o, 1),
        gap: round(gap, 1),
        gap_per_byte: round(big_g, 4),
        overhead_per_byte: round(big_o, 4),
        eager_limit,
    };
    p.validate()?;
    Ok((p, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples as a machine with the given parameters would give them,
    /// written from the model's formulas (not through [`fit`]).
    fn samples(p: &Params) -> Samples {
        let sizes: Vec<u64> = (0..23).map(|k| 1u64 << k).collect();
        let x = |b: u64| (b as f64 - 1.0).max(0.0);
        let eager = |b: u64| b < p.eager_limit;
        Samples {
            mpi: "model".into(),
            send: sizes
                .iter()
                .map(|&b| {
                    let t = if eager(b) {
                        p.overhead + x(b) * p.overhead_per_byte
                    } else {
                        3.0 * p.overhead + 2.0 * p.latency + x(b) * p.gap_per_byte
                    };
                    (b, t)
                })
                .collect(),
            pingpong: sizes
                .iter()
                .map(|&b| {
                    let rest = x(b) * (p.gap_per_byte + p.overhead_per_byte);
                    let t = if eager(b) {
                        2.0 * p.overhead + p.latency + rest
                    } else {
                        4.0 * p.overhead + 3.0 * p.latency + rest
                    };
                    (b, t)
                })
                .collect(),
            rate_ns: p.gap.max(p.overhead),
            late: sizes
                .iter()
                .map(|&b| {
                    (
                        b,
                        if eager(b) {
                            p.overhead
                        } else {
                            1.0e6 + p.latency
                        },
                    )
                })
                .collect(),
            late_ns: 1.0e6,
        }
    }

    #[test]
    fn parameters_come_back_from_their_own_samples() {
        let want = Params {
            latency: 850.0,
            overhead: 240.0,
            gap: 310.0,
            gap_per_byte: 0.12,
            overhead_per_byte: 0.05,
            eager_limit: 8192,
        };
        let (got, notes) = fit(&samples(&want)).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * b.abs().max(1.0);
        assert!(close(got.latency, want.latency), "{got:?}");
        assert!(close(got.overhead, want.overhead), "{got:?}");
        assert!(close(got.gap, want.gap), "{got:?}");
        assert!(close(got.gap_per_byte, want.gap_per_byte), "{got:?}");
        assert!(
            close(got.overhead_per_byte, want.overhead_per_byte),
            "{got:?}"
        );
        // The late-receiver test brackets S between two powers of two.
        assert_eq!(got.eager_limit, 4097, "{notes}");
        assert!(notes.contains("8192 bytes waited"), "{notes}");
    }

    #[test]
    fn empty_measurements_are_refused() {
        let e = fit(&Samples::default()).unwrap_err().to_string();
        assert!(e.contains("measured nothing"), "{e}");
    }
}
