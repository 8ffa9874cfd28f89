//! Replay of rankscale traces on a real MPI machine (Wu and Mueller 2012, §2,
//! ScalaReplay).
//!
//! The `replay` binary (`mpirun -n P replay FILE`) walks each rank's part of
//! the compressed trace lazily and issues the same MPI calls with random
//! payloads, sleeping the recorded computation in between (drawn as the
//! simulator and codegen's benchmarks draw it: [`compress::ComputeDraws`]).
//! This library holds the parts that need no MPI, so that they are tested
//! as pure code: the causal gates that force the outcomes of racy calls
//! ([`gates`]) and the emulated computation's clock ([`pace`]).

#![warn(missing_docs)]

pub mod gates;
pub mod pace;

/// Replay's generator: reproducible draws per rank from one seed
/// ([`trace::SplitMix64::for_rank`]), not cryptographic ones.
pub type Rng = trace::SplitMix64;

/// Writes one line to standard error in a single write. The ranks of a job
/// share the launcher's stream and often report at the same moment (a
/// timeout reaches every rank at once); `eprintln!` writes piecewise, so
/// their lines would interleave mid-line ("rank rank 1 waits ... 0
/// waits").
pub fn say(line: &str) {
    use std::io::Write;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}
