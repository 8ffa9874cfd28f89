//! Why an output could not be written.

use std::path::PathBuf;

/// Why an output could not be written. A trace that fails here was read
/// and checked already, so most of these mean an inconsistent trace or a
/// closed output, and each names which.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rank's expansion stopped before its end: the trace's structure and
    /// its parameters disagree.
    #[error("the trace is inconsistent: rank {rank}'s expansion stopped early")]
    Broken {
        /// The rank.
        rank: u32,
    },
    /// A rank that the trace does not hold, or whose part cannot be taken
    /// out of the merged trace.
    #[error(transparent)]
    Project(#[from] trace::merged::ProjectError),
    /// Writing the output failed (a closed pipe, a full disk).
    #[error("writing the output: {0}")]
    Write(#[from] std::io::Error),
    /// A directory or file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The directory or file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A directory given as raw logs holds none.
    #[error("{dir} holds no raw logs (rank-NNNNN.txt)")]
    NoRawLogs {
        /// The directory.
        dir: PathBuf,
    },
    /// A raw log directory with ranks missing: it is never taken for a
    /// smaller run.
    #[error("{dir}: {logs} raw logs but the highest rank is {highest}; some ranks are missing")]
    MissingRawLogs {
        /// The directory.
        dir: PathBuf,
        /// How many logs it holds.
        logs: usize,
        /// The highest rank among them.
        highest: usize,
    },
    /// A raw log that does not parse.
    #[error("{path}: {source}")]
    RawLog {
        /// The log.
        path: PathBuf,
        /// What is wrong.
        source: trace::Error,
    },
}
