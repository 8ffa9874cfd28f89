//! The trace model of rankscale.
//!
//! This crate owns the contract between all rankscale tools: the [`Event`]
//! model that the tracer records, the canonical raw text form of events
//! ([`raw`]) and, built on them, the compressed trace: a rank's loop tree
//! ([`tree`]), the merged trace of all ranks ([`merged`]) and the trace file
//! ([`file`](mod@file)) with its reader. Every other crate uses these types through
//! this API and never depends on how the shim built them. The algorithms
//! that build traces (the compressor, the merge, the importers) are the
//! crate `compress`.
//!
//! Items hidden from this documentation (`#[doc(hidden)]`: the fields of
//! the loop tree and of the merged trace, a few helpers) are public only
//! because `compress` builds those types; they are not part of the model's
//! API, and no other crate uses them.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codec;
mod depth;
mod dtype;
pub mod event;
pub mod file;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod limits;
pub mod merged;
pub mod output;
pub mod profile;
pub mod ranklist;
pub mod raw;
pub mod rng;
pub mod seq;
pub mod series;
pub mod timeline;
pub mod timing;
pub mod tree;

pub use event::{
    CommCreate, CommId, Event, EventSink, Family, Io, Matched, Op, Peer, ReduceOp, ReqId, Rma, Tag,
    Timing, Transfer,
};

pub use codec::Shape;
pub use dtype::Datatype;
pub use file::{Meta, MpiLibrary, Origin, Packing, PartialRank, TraceFile};
pub use limits::{LimitError, Limits};
pub use merged::{
    EventNode, ListParam, LoopNode, MNode, MergedTrace, Param, Phased, ProjectError, TimingVariant,
    Variant,
};
pub use ranklist::RankList;
pub use rng::SplitMix64;
pub use seq::ValueSeq;
pub use series::MpiSeries;
pub use timeline::{Span, Timeline};
pub use timing::{
    Dist, Histogram, PathClass, PathTiming, Quantity, Reservoir, SlowInstance, Stats, TimeStats,
};
pub use tree::{EventTiming, Expand, Leaf, Loop, Node, Single, Trace, TraceStats};

use std::path::{Path, PathBuf};

/// Errors of the trace model. Every reader error names the file and, where
/// it applies, the line, so that a user can find the bad input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error (in the message, not a separate `source`,
        /// so that a chain of causes does not print it twice).
        error: std::io::Error,
    },
    /// A raw log line does not follow the grammar.
    #[error("line {line}: {msg}")]
    RawSyntax {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Writing spilled events to the caller's writer failed (see
    /// `compress::Compressor::with_spill_writer`); those events are lost.
    #[error("writing the spilled trace prefix: {0}")]
    Spill(std::io::Error),
    /// The file is not a rankscale trace (wrong magic).
    #[error("not a rankscale trace file (no RANKSCAL header)")]
    NotATrace,
    /// The file was written by a newer rankscale.
    #[error(
        "trace format version {found} is newer than this rankscale reads version {supported}; upgrade rankscale"
    )]
    NewerVersion {
        /// The file's version.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The file is damaged or truncated.
    #[error("corrupted trace file: {0}")]
    Corrupt(String),
    /// A declared size exceeds its budget (see [`limits`]).
    #[error(transparent)]
    Limit(#[from] limits::LimitError),
    /// An output could not be written (see [`output`]).
    #[error(transparent)]
    Output(#[from] output::OutputError),
    /// An error located in a file.
    #[error("{path}: {inner}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error inside it.
        inner: Box<Error>,
    },
}

impl Error {
    /// Wraps the error with the file it came from.
    pub fn in_file(self, path: &Path) -> Error {
        match self {
            e @ (Error::Io { .. } | Error::InFile { .. } | Error::Output(_)) => e,
            e => Error::InFile {
                path: path.to_path_buf(),
                inner: Box::new(e),
            },
        }
    }
}

/// `1st`, `2nd`, `3rd`, `11th`, `22nd`: how error messages name the k-th of
/// something (the k-th message between two ranks, the k-th call of a rank).
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
