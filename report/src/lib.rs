//! rankscale's output: every text, JSON, SVG and HTML form in which the
//! command line shows a trace or its analysis.
//!
//! The command line only parses arguments, reads files and picks where the
//! output goes; what the output says is decided here, as pure code over the
//! trace model ([`trace`]) and the analysis' report ([`analysis`]), so
//! that it can be tested, and reused by another front end, without the
//! binary. ripgrep's `grep-printer` is the model: one library that owns the
//! printing, separate from the search and from the command line.
//!
//! * [`structure`]: `rankscale show`, the loop tree as text or JSON, and one
//!   rank's events in the raw-log grammar;
//! * [`stats`]: `rankscale stats`, sizes, compression, an mpiP-style profile
//!   per call site and the communication matrix;
//! * [`analysis_text`]: `rankscale analyze`'s text summary;
//! * [`html`]: `rankscale report`, one self-contained page with inline SVG
//!   drawn by [`svg`];
//! * [`sites`]: the call-site labels they all use.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis_text;
mod error;
pub mod html;
pub mod sites;
pub mod stats;
pub mod structure;
pub mod svg;

pub use error::Error;
