//! The trace algorithms of rankscale.
//!
//! The model they work on (events, the loop tree, the merged trace, the
//! trace file) is the crate `trace`; this crate builds traces: the
//! on-the-fly intra-rank compressor ([`intra`]), the rank recorder that
//! feeds it with the timeline and MPI time series ([`recorder`]), the
//! inter-rank merge ([`merge`]), the importer of other tools' traces
//! ([`import`]), and what the tools that emulate a trace's run share: the
//! computation draws ([`draws`]) and the emulation options ([`emulation`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod draws;
pub mod emulation;
#[cfg(feature = "fixtures")]
pub mod fixtures;
#[cfg(feature = "fixtures")]
pub mod hostile;
pub mod import;
pub mod intra;
pub mod merge;
pub mod recorder;

pub use draws::{ComputeDraws, quantile_start};
pub use intra::{Compressor, Config};
pub use merge::from_rank_events;
pub use recorder::{RankRecorder, Recording};
