//! The LogGOPS parameters of a machine (Hoefler, Schneider and Lumsdaine,
//! "LogGOPSim", HPDC 2010): what one message costs, split into the parts
//! that overlap differently.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The machine as the LogGOPS model sees it. Times are in nanoseconds,
/// per-byte costs in nanoseconds per byte.
///
/// A message of `s` bytes sent at time `t` leaves the sender's CPU at
/// `t + o + (s-1)·O`, is on the wire from `t + o` for `(s-1)·G`, and
/// arrives at `t + o + (s-1)·G + L`; the receiver spends `o + (s-1)·O`
/// taking it. Two messages leave one NIC at least `g + (s-1)·G` apart.
/// Below `eager_limit` bytes a send completes locally (eager); from it on,
/// the data moves only once the receive is posted (rendezvous), which
/// costs a round trip of control messages first.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// `L`: the latency of the wire, ns.
    #[serde(rename = "L")]
    pub latency: f64,
    /// `o`: the CPU overhead of a send or a receive, ns.
    #[serde(rename = "o")]
    pub overhead: f64,
    /// `g`: the gap between two messages leaving one NIC, ns.
    #[serde(rename = "g")]
    pub gap: f64,
    /// `G`: the gap per byte (the inverse bandwidth), ns/byte.
    #[serde(rename = "G")]
    pub gap_per_byte: f64,
    /// `O`: the CPU overhead per byte, ns/byte.
    #[serde(rename = "O")]
    pub overhead_per_byte: f64,
    /// `S`: the smallest message that goes by rendezvous, bytes.
    #[serde(rename = "S")]
    pub eager_limit: u64,
}

impl Default for Params {
    /// A generic cluster of today (about 1 µs latency, 10 GB/s, a 64 KiB
    /// eager limit): what `simulate` takes when it is given no
    /// measurement. `rankscale calibrate` measures the machine at hand.
    fn default() -> Params {
        Params {
            latency: 1000.0,
            overhead: 300.0,
            gap: 100.0,
            gap_per_byte: 0.1,
            overhead_per_byte: 0.0,
            eager_limit: 65536,
        }
    }
}

/// The header every parameter file starts with, saying what it is.
const HEADER: &str =
    "# LogGOPS parameters for `rankscale simulate --params` (ns, ns/byte, bytes)\n";

impl Params {
    /// Checks that every parameter is a finite number of at least zero, so
    /// that a simulation never runs on a negative cost or a NaN.
    pub fn validate(&self) -> Result<(), Error> {
        for (name, v) in [
            ("L", self.latency),
            ("o", self.overhead),
            ("g", self.gap),
            ("G", self.gap_per_byte),
            ("O", self.overhead_per_byte),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(Error::Params(format!(
                    "{name} must be a finite number of at least 0, not {v}"
                )));
            }
        }
        Ok(())
    }

    /// Reads a parameter file written by [`Params::save`] (or by hand).
    pub fn load(path: &Path) -> Result<Params, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Params(format!("cannot read {}: {e}", path.display())))?;
        let p: Params = toml::from_str(&text).map_err(|e| {
            Error::Params(format!("{} is not a parameter file: {e}", path.display()))
        })?;
        p.validate()?;
        Ok(p)
    }

    /// The parameters as a small TOML file, with a comment saying where
    /// they came from.
    pub fn to_toml(&self, comment: &str) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        let mut out = String::from(HEADER);
        for line in comment.lines() {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&body);
        out
    }

    /// Writes [`Params::to_toml`] to `path`.
    pub fn save(&self, path: &Path, comment: &str) -> Result<(), Error> {
        trace::output::write_file(path, self.to_toml(comment).as_bytes(), &[])
            .map(|_| ())
            .map_err(|e| Error::Params(e.to_string()))
    }

    /// The wire time of the bytes after the first: `(s-1)·G`.
    pub(crate) fn wire(&self, bytes: f64) -> f64 {
        (bytes - 1.0).max(0.0) * self.gap_per_byte
    }

    /// The CPU time of a send or a receive of `bytes`: `o + (s-1)·O`.
    pub(crate) fn cpu(&self, bytes: f64) -> f64 {
        self.overhead + (bytes - 1.0).max(0.0) * self.overhead_per_byte
    }

    /// When a message of `bytes` that leaves the CPU at `t` arrives.
    pub(crate) fn arrival(&self, t: f64, bytes: f64) -> f64 {
        t + self.overhead + self.wire(bytes) + self.latency
    }

    /// How long a NIC is busy with one message: `g + (s-1)·G`.
    pub(crate) fn nic(&self, bytes: f64) -> f64 {
        self.gap + self.wire(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_file_loads_back_and_bad_values_are_refused() {
        let dir = std::env::temp_dir().join(format!("rs-params-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = Params {
            latency: 1234.5,
            overhead: 210.0,
            gap: 95.0,
            gap_per_byte: 0.08,
            overhead_per_byte: 0.01,
            eager_limit: 4096,
        };
        let f = dir.join("p.toml");
        p.save(&f, "measured by a test").unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.contains("# measured by a test"), "{text}");
        assert!(text.contains("L = 1234.5"), "{text}");
        assert_eq!(Params::load(&f).unwrap(), p);
        std::fs::write(&f, "L = -1.0\no = 1.0\ng = 1.0\nG = 0.1\nO = 0.0\nS = 10\n").unwrap();
        let e = Params::load(&f).unwrap_err().to_string();
        assert!(e.contains("L must be"), "{e}");
        std::fs::write(&f, "latency = 3\n").unwrap();
        let e = Params::load(&f).unwrap_err().to_string();
        assert!(e.contains("is not a parameter file"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
