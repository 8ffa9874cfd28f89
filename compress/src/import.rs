//! Traces written by other tools turned into rankscale trace files (what
//! `rankscale import` runs), so that published traces go through the same
//! `show`, `stats` and analysis as the ones our tracer takes. A library
//! module, beside the trace model it builds, so that its parser can be
//! fuzzed and other tools can import without the command line.
//!
//! The importer builds the trace exactly as the tracer does: one
//! [`RankRecorder`] per rank (the compressor with a timeline) fed event by
//! event, its part of a [`TraceFile`] taken, and the parts merged in the
//! tracer's binomial order. Nothing downstream can tell an imported trace
//! from a traced one except by its [`Meta`] (`origin` is imported from
//! `pertext`).
//!
//! # The `pertext` format
//!
//! One text file per rank, `Process<r>.txt` for `r` in `0..P` (`P` is the
//! number of such files, every rank in `0..P` must have one, the number has
//! no leading zeros). Other files are left alone; those whose name starts
//! like a rank file's (`Process`, any case) but is not one (`Process-1.txt`,
//! `process1.txt`, `Process1.txt.bak`) are listed by [`scan_rank_files`],
//! so that the command line can warn that they were not read. One record per line, fields separated by any amount of
//! white space; blank lines and lines starting with `#` are skipped:
//!
//! ```text
//! Send <peer> t1 <start> t2 <end> t <tag> l <bytes> [m <id>]
//! Recv <peer> t1 <start> t2 <end> t <tag> l <bytes> [m <id>]
//! <NAME> <int> t1 <start> t2 <end> s <sendbytes> r <recvbytes> [m <id>]
//! DEL<n>
//! ```
//!
//! `peer` is a world rank (below the number of files); times are absolute
//! nanoseconds on a clock common to all ranks, at most 2^63 - 1
//! ([`MAX_TIME_NS`]); `tag` is at most 2^31 - 1; byte counts are at most
//! 2^53 ([`MAX_BYTES`]); `NAME` is a blocking MPI collective without `MPI_`, in any
//! case (`ALLREDUCE`, `REDUCE_SCATTER`); the integer after it (which may be
//! negative: the published files have `-1` on their last rank) is read and
//! checked but kept nowhere. `DEL<n>` delimits the contexts (user
//! functions, `MPI_Waitall` boundaries) in which the calls were made.
//!
//! This is the grammar of the files the authors of the pattern-detection
//! paper published (Alawneh et al.), read as they are:
//!
//! - **`m` is optional and pairs nothing.** Their last rank's collective
//!   lines have none, and on point-to-point lines it is not a message
//!   identity: rank 0's `Send 1 ... l 3200 m 4` is received by rank 1's
//!   `Recv 0 ... l 3200 m 7`. It is read and checked as a number, then
//!   dropped.
//! - **`n` in `DEL<n>` is a running count,** starting anywhere (`DEL39634`
//!   on rank 0, `DEL63896` on rank 1 of their 4-rank SMG2000 trace) and
//!   going up by one per delimiter. It names no context, so every delimiter
//!   is the same boundary ([`DELIMITER_LEVEL`]): repeated contexts then
//!   compress into loops instead of differing by their number.
//! - **Lines of one context may overlap in time** (nonblocking calls
//!   completed together): only starts must not decrease.
//!
//! Checked, each failure a typed error naming the file, the line and what
//! is wrong: the grammar (keywords, number of fields, every number in
//! range), `t2 >= t1`, starts that never decrease within a file, peers that
//! are ranks of the trace, that point-to-point messages pair up in MPI's
//! order: the k-th `Send` from `a` to `b` with tag `t` is received by the
//! k-th `Recv` on `b` from `a` with tag `t` (messages between two ranks
//! with one tag do not overtake each other), with the same byte count, and
//! that every rank calls the same collectives in the same order (all are on
//! `MPI_COMM_WORLD`, so the k-th collective of each rank is one call).
//!
//! # Mapping to the event model
//!
//! One [`Event`] per record, in file order; no event is invented (no
//! `Init`, no `Finalize`):
//!
//! - `Send`/`Recv`: [`Op::Send`]/[`Op::Recv`] on `MPI_COMM_WORLD`, the
//!   transfer's count the byte count with a datatype size of 1, the peer
//!   concrete (so a `Recv` has no `matched` outcome).
//! - Collectives: the operation on `MPI_COMM_WORLD` with both buffers as
//!   collective transfers ([`Transfer::collective`]) of the recorded bytes
//!   and datatype size 1, except `BARRIER`, which gets a buffer only where
//!   the file gives it a non-zero size (a traced `MPI_Barrier` has none).
//!   The published files give `s` and `r` as the bytes that leave and
//!   reach the rank over all its partners, not as the call's arguments;
//!   `meanings` turns them into the arguments where every rank's records
//!   of the call fit that reading (`ALLREDUCE`, `ALLGATHER`, `ALLGATHERV`
//!   with its receive counts from each rank's share, `BCAST` and `REDUCE`
//!   with their root, the one rank whose total is not its own, and
//!   `SCAN`), and keeps the bytes as recorded otherwise. The format does
//!   not record the root of the other rooted collectives (`GATHER[V]`,
//!   `SCATTER[V]`): they get root 0. Nor does it record the reduction
//!   operation (left unset, which replay treats as a sum) or the per-peer
//!   counts of the other `V`/`W` variants (left empty).
//! - `DEL<n>`: [`Op::Pcontrol`] with level [`DELIMITER_LEVEL`], the call
//!   rankscale takes as a context boundary, of zero duration at the end of the previous event
//!   (at the file's first start when it comes first).
//!
//! Timing: the time zero of every rank is the earliest start of all files,
//! so all ranks share one time base: an event's enter time is its start
//! minus that zero, its duration the part of `start..end` after the latest
//! end of the rank's earlier records (all of it unless records overlap),
//! its computation time its start minus that latest end (0 for the first
//! and for an overlapping record), so that a rank's durations and
//! computations add up to its run. The timelines keep every start and end
//! exactly, with the common zero as `epoch_ns`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::{RankRecorder, Recording};
use trace::file::PERTEXT;
use trace::{CommId, Event, Family, Meta, Op, Peer, Tag, Timing, TraceFile, Transfer};

/// The `MPI_Pcontrol` level that every `DEL<n>` line becomes. One level for
/// all, because `n` is a running count, not a context's name (see the
/// module documentation); 1 is `MPI_Pcontrol`'s "profiling on", so that a
/// replay of an imported trace asks no tool to change what it records.
pub const DELIMITER_LEVEL: i64 = 1;

/// A point-to-point line (`Send` or `Recv`), kept apart from its event so
/// that the pairing check can see the message id the event model has no
/// place for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct P2p {
    /// [`Op::Send`] or [`Op::Recv`].
    pub op: Op,
    /// The other side, a world rank.
    pub peer: i32,
    /// `t1`, ns.
    pub start: u64,
    /// `t2`, ns (`>= start`).
    pub end: u64,
    /// `t`.
    pub tag: i32,
    /// `l`, bytes.
    pub bytes: i64,
    /// `m`, when the line has it: kept for the record only (in the
    /// published files it does not pair a Send with its Recv).
    pub msgid: Option<u64>,
}

/// A collective line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collective {
    /// The operation, a blocking collective.
    pub op: Op,
    /// `t1`, ns.
    pub start: u64,
    /// `t2`, ns (`>= start`).
    pub end: u64,
    /// `s`, bytes.
    pub send_bytes: i64,
    /// `r`, bytes.
    pub recv_bytes: i64,
    /// `m`, when the line has it: read and checked; no event field holds
    /// it.
    pub id: Option<u64>,
}

/// One record of a `pertext` file: what a non-blank, non-comment line
/// says, before it becomes an [`Event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// `Send ...` or `Recv ...`.
    P2p(P2p),
    /// `<NAME> ...`.
    Collective(Collective),
    /// `DEL<n>`: a context boundary, `n` its running count in the file.
    Delimiter(u64),
}

impl Record {
    /// Start and end of a timed record; `None` for a delimiter, which has
    /// no time of its own (it is placed between its neighbours).
    pub fn span(&self) -> Option<(u64, u64)> {
        match self {
            Record::P2p(p) => Some((p.start, p.end)),
            Record::Collective(c) => Some((c.start, c.end)),
            Record::Delimiter(_) => None,
        }
    }
}

/// A record and its line number (1-based, blank and comment lines
/// counted), so that every later check can point at the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The line number in the file.
    pub line: usize,
    /// What the line says.
    pub record: Record,
}

/// What is wrong with one line. Typed, so that tests (and callers) check
/// the kind of fault, not the wording.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line is not UTF-8 text.
    #[error("the line is not UTF-8 text")]
    NotUtf8,
    /// The first word is none of the record kinds.
    #[error("`{0}` is neither Send, Recv, DEL<n> nor an MPI collective name")]
    UnknownRecord(String),
    /// The first word names an MPI call that is not a blocking collective.
    #[error("`{0}` is an MPI call but not a blocking collective")]
    NotCollective(String),
    /// A `DEL` word that is not `DEL` followed by digits.
    #[error("`{0}` is not a context delimiter DEL<n> (n a non-negative integer)")]
    BadDelimiter(String),
    /// The line ends before a field.
    #[error("the line ends where {0} was expected")]
    MissingField(&'static str),
    /// A field name other than the one the grammar has at this place.
    #[error("expected `{expected}`, found `{found}`")]
    WrongKey {
        /// The field name the grammar wants.
        expected: &'static str,
        /// The word found.
        found: String,
    },
    /// A value that is not an integer of the expected kind.
    #[error("{field}: `{value}` is not {kind}")]
    NotANumber {
        /// The field.
        field: &'static str,
        /// The word found.
        value: String,
        /// What it should be.
        kind: &'static str,
    },
    /// An integer beyond its field's range.
    #[error("{field}: {value} is too large (at most {max})")]
    TooLarge {
        /// The field.
        field: &'static str,
        /// The word found.
        value: String,
        /// The largest value allowed.
        max: u64,
    },
    /// More words after the last field.
    #[error("unexpected `{0}` after the last field")]
    Trailing(String),
    /// `t2 < t1`.
    #[error("t2 {end} is before t1 {start}")]
    EndBeforeStart {
        /// `t1`.
        start: u64,
        /// `t2`.
        end: u64,
    },
    /// An event starts before the previous event of the file.
    #[error(
        "t1 {start} is before t1 {previous} of the previous event (line {previous_line}); starts must not decrease within a file"
    )]
    StartGoesBack {
        /// This event's start.
        start: u64,
        /// The previous event's start.
        previous: u64,
        /// The previous event's line.
        previous_line: usize,
    },
    /// A peer that is not a rank of the trace.
    #[error("peer {peer} is not a rank of this trace (ranks 0 to {last}, one Process<r>.txt each)")]
    PeerOutOfRange {
        /// The peer.
        peer: i32,
        /// The highest rank.
        last: u32,
    },
}

/// Where an event line is: its rank (so its file) and line. Ordered by rank
/// then line, which is the order in which pairing problems are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    /// The rank, `Process<rank>.txt`.
    pub rank: u32,
    /// The line.
    pub line: usize,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Process{}.txt:{}", self.rank, self.line)
    }
}

/// A point-to-point message that does not pair up. Each names the line to
/// look at first and, where there is one, the other side's line. Messages
/// pair in MPI's order: the k-th Send from `a` to `b` with a tag meets the
/// k-th Recv on `b` from `a` with that tag; `nth` counts from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PairError {
    /// A Send whose receiver never receives it.
    NoRecv {
        /// The Send.
        send: At,
        /// The receiver.
        to: i32,
        /// Its tag.
        tag: i32,
        /// Its bytes.
        bytes: i64,
        /// Which such Send it is (from this rank to `to` with `tag`).
        nth: usize,
    },
    /// A Recv whose sender never sends it.
    NoSend {
        /// The Recv.
        recv: At,
        /// The sender.
        from: i32,
        /// Its tag.
        tag: i32,
        /// Its bytes.
        bytes: i64,
        /// Which such Recv it is (on this rank from `from` with `tag`).
        nth: usize,
    },
    /// A Send and the Recv it pairs with disagree on the byte count.
    Mismatch {
        /// The Send.
        send: At,
        /// The Recv.
        recv: At,
        /// The tag both have.
        tag: i32,
        /// Which such message it is.
        nth: usize,
        /// The Send's bytes.
        sent: i64,
        /// The Recv's bytes.
        received: i64,
    },
}

impl PairError {
    /// The line the problem is reported at.
    pub fn at(&self) -> At {
        match self {
            PairError::NoRecv { send, .. } | PairError::Mismatch { send, .. } => *send,
            PairError::NoSend { recv, .. } => *recv,
        }
    }
}

impl fmt::Display for PairError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PairError::NoRecv {
                send,
                to,
                tag,
                bytes,
                nth,
            } => write!(
                f,
                "{send}: Send to {to} (tag {tag}, {bytes} bytes), the {} such message, has no Recv: Process{to}.txt has only {} Recv from {} with tag {tag}",
                trace::ordinal(*nth as u64),
                nth - 1,
                send.rank
            ),
            PairError::NoSend {
                recv,
                from,
                tag,
                bytes,
                nth,
            } => write!(
                f,
                "{recv}: Recv from {from} (tag {tag}, {bytes} bytes), the {} such message, has no Send: Process{from}.txt has only {} Send to {} with tag {tag}",
                trace::ordinal(*nth as u64),
                nth - 1,
                recv.rank
            ),
            PairError::Mismatch {
                send,
                recv,
                tag,
                nth,
                sent,
                received,
            } => write!(
                f,
                "{send}: Send of {sent} bytes (tag {tag}, the {} such message) is received at {recv} as {received} bytes: the byte counts differ",
                trace::ordinal(*nth as u64)
            ),
        }
    }
}

impl std::error::Error for PairError {}

/// Ranks whose collectives disagree. Every collective of the format is on
/// `MPI_COMM_WORLD`, so the k-th collective of every rank is one call and
/// must be the same operation on all (MPI's rule; a job that broke it
/// would have hung or failed). Each names the line of a rank that has the
/// k-th collective and the line or file of the rank that disagrees; `nth`
/// counts from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CollectiveError {
    /// Two ranks' k-th collectives are different operations.
    Differ {
        /// Which collective of each rank, from 1.
        nth: usize,
        /// The first rank's line.
        first: At,
        /// Its operation.
        first_op: Op,
        /// The other rank's line.
        other: At,
        /// Its operation.
        other_op: Op,
    },
    /// A rank has fewer collectives than another.
    Missing {
        /// Which collective, from 1.
        nth: usize,
        /// The line of a rank that has it.
        at: At,
        /// Its operation.
        op: Op,
        /// The rank that has no such collective.
        rank: u32,
        /// How many collectives that rank has.
        count: usize,
    },
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveError::Differ {
                nth,
                first,
                first_op,
                other,
                other_op,
            } => write!(
                f,
                "{first}: the {nth} collective is {}, but {other}, the {nth} collective of rank {}, is {}: every rank must call the same collectives in the same order",
                first_op.name(),
                other.rank,
                other_op.name(),
                nth = trace::ordinal(*nth as u64),
            ),
            CollectiveError::Missing {
                nth,
                at,
                op,
                rank,
                count,
            } => write!(
                f,
                "{at}: the {} collective, {}, is not called by rank {rank}: Process{rank}.txt has only {count} collective{}",
                trace::ordinal(*nth as u64),
                op.name(),
                if *count == 1 { "" } else { "s" }
            ),
        }
    }
}

impl std::error::Error for CollectiveError {}

/// Why an import failed. Every variant names the directory or the file and
/// line, so that a user can find the bad input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// Reading the directory or a file failed.
    #[error("{path}: {error}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
    /// The directory holds no `Process<r>.txt`.
    #[error("{dir}: no Process<r>.txt files (a pertext trace has one per rank)")]
    NoRankFiles {
        /// The directory.
        dir: PathBuf,
    },
    /// A rank file name with a leading zero or a number too large to be a
    /// rank: it cannot be told from the canonical name of another rank.
    #[error(
        "{dir}: {name} is not a rank file name (ranks are numbered Process0.txt, Process1.txt, ... without leading zeros)"
    )]
    BadFileName {
        /// The directory.
        dir: PathBuf,
        /// The file name.
        name: String,
    },
    /// A rank in `0..P` has no file.
    #[error(
        "{dir}: Process{missing}.txt is missing: there are {found} Process<r>.txt files (the highest Process{highest}.txt), so ranks 0 to {} must all have one", found - 1
    )]
    MissingRank {
        /// The directory.
        dir: PathBuf,
        /// The lowest rank without a file.
        missing: u32,
        /// How many rank files there are.
        found: u32,
        /// The highest rank with a file.
        highest: u32,
    },
    /// A malformed line.
    #[error("{file}:{line}: {error}")]
    Line {
        /// The file.
        file: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong.
        error: LineError,
    },
    /// Point-to-point messages that do not pair up: the first (by rank
    /// and line) and how many more.
    #[error("{dir}: {first}{}", more_text(*more))]
    Pairing {
        /// The directory.
        dir: PathBuf,
        /// The first problem.
        first: PairError,
        /// How many others there are.
        more: usize,
    },
    /// The ranks' collectives disagree: the first disagreement, by
    /// collective and then rank.
    #[error("{dir}: {first}")]
    Collectives {
        /// The directory.
        dir: PathBuf,
        /// The first disagreement.
        first: CollectiveError,
    },
    /// Building the compressed trace failed.
    #[error("building the trace of rank {rank}: {error}")]
    Compress {
        /// The rank.
        rank: u32,
        /// The trace model's error.
        error: trace::Error,
    },
    /// Merging the ranks' traces failed (a part did not survive its wire
    /// form: a bug, since the recorder built it).
    #[error("merging the ranks' traces: {error}")]
    Merge {
        /// The trace model's error.
        error: trace::Error,
    },
}

fn more_text(more: usize) -> String {
    match more {
        0 => String::new(),
        1 => " (and 1 more unpaired or mismatched message)".into(),
        n => format!(" (and {n} more unpaired or mismatched messages)"),
    }
}

// ----- lines ---------------------------------------------------------------

/// The words of one line, consumed field by field.
struct Words<'a>(std::str::SplitWhitespace<'a>);

impl<'a> Words<'a> {
    fn next(&mut self, what: &'static str) -> Result<&'a str, LineError> {
        self.0.next().ok_or(LineError::MissingField(what))
    }

    /// The field name `key`, then its value, an integer in `0..=max`.
    fn field(&mut self, key: &'static str, max: u64) -> Result<u64, LineError> {
        let found = self.next(key_text(key))?;
        if found != key {
            return Err(LineError::WrongKey {
                expected: key,
                found: found.into(),
            });
        }
        self.unsigned(key, max)
    }

    /// A field that a line may leave out at its end: `None` when the line
    /// ends here, else as [`Words::field`].
    fn optional_field(&mut self, key: &'static str, max: u64) -> Result<Option<u64>, LineError> {
        if self.0.clone().next().is_none() {
            return Ok(None);
        }
        self.field(key, max).map(Some)
    }

    /// An integer in `0..=max`: digits only (no sign, no `_`).
    fn unsigned(&mut self, field: &'static str, max: u64) -> Result<u64, LineError> {
        let v = self.next(value_text(field))?;
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(LineError::NotANumber {
                field,
                value: v.into(),
                kind: "a non-negative integer",
            });
        }
        match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(LineError::TooLarge {
                field,
                value: v.into(),
                max,
            }),
        }
    }

    /// Any integer (an optional `-`, then digits).
    fn integer(&mut self, field: &'static str) -> Result<i64, LineError> {
        let v = self.next(value_text(field))?;
        let digits = v.strip_prefix('-').unwrap_or(v);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(LineError::NotANumber {
                field,
                value: v.into(),
                kind: "an integer",
            });
        }
        v.parse::<i64>().map_err(|_| LineError::TooLarge {
            field,
            value: v.into(),
            max: i64::MAX as u64,
        })
    }

    fn end(mut self) -> Result<(), LineError> {
        match self.0.next() {
            Some(w) => Err(LineError::Trailing(w.into())),
            None => Ok(()),
        }
    }
}

/// What the line lacks when it ends before field name `key`.
fn key_text(key: &'static str) -> &'static str {
    match key {
        "t1" => "`t1`",
        "t2" => "`t2`",
        "t" => "`t`",
        "l" => "`l`",
        "s" => "`s`",
        "r" => "`r`",
        "m" => "`m`",
        _ => "a field name",
    }
}

/// What the line lacks when it ends before the value of `field`.
fn value_text(field: &'static str) -> &'static str {
    match field {
        "peer" => "the peer rank",
        "t1" => "the value of t1",
        "t2" => "the value of t2",
        "t" => "the value of t (tag)",
        "l" => "the value of l (bytes)",
        "s" => "the value of s (bytes sent)",
        "r" => "the value of r (bytes received)",
        "m" => "the value of m (message id)",
        _ => "the integer after the collective name",
    }
}

const I32_MAX: u64 = i32::MAX as u64;
const I64_MAX: u64 = i64::MAX as u64;

/// The latest time a line may give, ns: times are kept and computed with as
/// `i64` nanoseconds downstream (the analysis's clock condition, the
/// exports), so a `t1` or `t2` beyond that (`2^64 - 1` was accepted) is a
/// corrupt field, not a time.
pub const MAX_TIME_NS: u64 = I64_MAX;

/// The largest byte count a line may give (`l`, `s`, `r`): 2^53, the
/// largest integer an `f64` holds exactly (the simulator and the analysis
/// compute with bytes as `f64`), and 8 PiB, beyond the memory of any
/// machine: a larger count is a corrupt field.
pub const MAX_BYTES: u64 = 1 << 53;

/// `ALLREDUCE` → `Allreduce`, `REDUCE_SCATTER` → `Reduce_scatter`: the
/// spelling of [`Op::name`].
fn op_spelling(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(c) => c.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// Whether the word is `DEL...` (any case), without slicing inside a
/// multi-byte character.
fn is_delimiter_word(word: &str) -> bool {
    word.as_bytes()
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"DEL"))
}

/// Parses one line. `Ok(None)` for a blank or comment line. Checks
/// everything that one line alone can show wrong (grammar, ranges,
/// `t2 >= t1`); the checks across lines are [`parse_rank`]'s.
pub fn parse_line(text: &str) -> Result<Option<Record>, LineError> {
    let text = text.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let mut w = Words(text.split_whitespace());
    let head = w.next("a record")?;
    let span = |start: u64, end: u64| {
        if end < start {
            Err(LineError::EndBeforeStart { start, end })
        } else {
            Ok(())
        }
    };
    let p2p = if head.eq_ignore_ascii_case("send") {
        Some(Op::Send)
    } else if head.eq_ignore_ascii_case("recv") {
        Some(Op::Recv)
    } else {
        None
    };
    if let Some(op) = p2p {
        let peer = w.unsigned("peer", I32_MAX)? as i32;
        let start = w.field("t1", MAX_TIME_NS)?;
        let end = w.field("t2", MAX_TIME_NS)?;
        let tag = w.field("t", I32_MAX)? as i32;
        let bytes = w.field("l", MAX_BYTES)? as i64;
        let msgid = w.optional_field("m", u64::MAX)?;
        w.end()?;
        span(start, end)?;
        return Ok(Some(Record::P2p(P2p {
            op,
            peer,
            start,
            end,
            tag,
            bytes,
            msgid,
        })));
    }
    if is_delimiter_word(head) {
        let digits = &head[3..];
        let level = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            digits.parse::<u64>().ok()
        } else {
            None
        };
        let Some(level) = level else {
            return Err(LineError::BadDelimiter(head.into()));
        };
        w.end()?;
        return Ok(Some(Record::Delimiter(level)));
    }
    let op = match Op::from_name(&op_spelling(head)) {
        Some(op) if op.family() == Family::Collective => op,
        Some(_) => return Err(LineError::NotCollective(head.into())),
        None => return Err(LineError::UnknownRecord(head.into())),
    };
    w.integer("count")?;
    let start = w.field("t1", MAX_TIME_NS)?;
    let end = w.field("t2", MAX_TIME_NS)?;
    let send_bytes = w.field("s", MAX_BYTES)? as i64;
    let recv_bytes = w.field("r", MAX_BYTES)? as i64;
    let id = w.optional_field("m", u64::MAX)?;
    w.end()?;
    span(start, end)?;
    Ok(Some(Record::Collective(Collective {
        op,
        start,
        end,
        send_bytes,
        recv_bytes,
        id,
    })))
}

/// Parses one rank's file (`file` only names it in errors), with the
/// checks across its lines: starts never decrease, and peers are ranks of a
/// trace of `world` ranks.
pub fn parse_rank(file: &Path, bytes: &[u8], world: u32) -> Result<Vec<Entry>, ImportError> {
    let mut out = Vec::new();
    let mut previous: Option<(u64, usize)> = None;
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let err = |error| ImportError::Line {
            file: file.to_path_buf(),
            line,
            error,
        };
        let text = std::str::from_utf8(raw).map_err(|_| err(LineError::NotUtf8))?;
        let Some(record) = parse_line(text).map_err(err)? else {
            continue;
        };
        if let Record::P2p(p) = &record
            && u32::try_from(p.peer).map_or(true, |r| r >= world)
        {
            return Err(err(LineError::PeerOutOfRange {
                peer: p.peer,
                last: world.saturating_sub(1),
            }));
        }
        if let Some((start, _)) = record.span() {
            if let Some((prev, prev_line)) = previous
                && start < prev
            {
                return Err(err(LineError::StartGoesBack {
                    start,
                    previous: prev,
                    previous_line: prev_line,
                }));
            }
            previous = Some((start, line));
        }
        out.push(Entry { line, record });
    }
    Ok(out)
}

// ----- pairing -------------------------------------------------------------

#[derive(Clone, Copy)]
struct Side {
    at: At,
    bytes: i64,
}

/// Every point-to-point message that does not pair up, ordered by the rank
/// and line they are reported at; empty when all pair up. `ranks[r]` is
/// rank `r`'s records. Messages pair in MPI's order, per (sender, receiver,
/// tag): the k-th Send with the k-th Recv.
pub fn pairing_problems(ranks: &[Vec<Entry>]) -> Vec<PairError> {
    type Key = (i32, i32, i32);
    let mut sends: HashMap<Key, Vec<Side>> = HashMap::new();
    let mut recvs: HashMap<Key, Vec<Side>> = HashMap::new();
    for (r, entries) in ranks.iter().enumerate() {
        let rank = u32::try_from(r).unwrap_or(u32::MAX);
        let me = i32::try_from(r).unwrap_or(i32::MAX);
        for e in entries {
            let Record::P2p(p) = e.record else { continue };
            let side = Side {
                at: At { rank, line: e.line },
                bytes: p.bytes,
            };
            if p.op == Op::Send {
                sends.entry((me, p.peer, p.tag)).or_default().push(side);
            } else {
                recvs.entry((p.peer, me, p.tag)).or_default().push(side);
            }
        }
    }
    let mut problems = Vec::new();
    let none = Vec::new();
    let keys: std::collections::BTreeSet<Key> = sends.keys().chain(recvs.keys()).copied().collect();
    for key @ (from, to, tag) in keys {
        let s = sends.get(&key).unwrap_or(&none);
        let r = recvs.get(&key).unwrap_or(&none);
        for k in 0..s.len().max(r.len()) {
            let nth = k + 1;
            match (s.get(k), r.get(k)) {
                (Some(s), None) => problems.push(PairError::NoRecv {
                    send: s.at,
                    to,
                    tag,
                    bytes: s.bytes,
                    nth,
                }),
                (None, Some(r)) => problems.push(PairError::NoSend {
                    recv: r.at,
                    from,
                    tag,
                    bytes: r.bytes,
                    nth,
                }),
                (Some(s), Some(r)) if s.bytes != r.bytes => problems.push(PairError::Mismatch {
                    send: s.at,
                    recv: r.at,
                    tag,
                    nth,
                    sent: s.bytes,
                    received: r.bytes,
                }),
                _ => {}
            }
        }
    }
    problems.sort_by_key(PairError::at);
    problems
}

/// The first disagreement of the ranks' collectives, if any: for each k
/// from the first, the k-th collective of the lowest rank that has one
/// against that of every other rank in order. `ranks[r]` is rank `r`'s
/// records.
pub fn collective_problem(ranks: &[Vec<Entry>]) -> Option<CollectiveError> {
    let colls: Vec<Vec<(usize, Op)>> = ranks
        .iter()
        .map(|r| {
            r.iter()
                .filter_map(|e| match &e.record {
                    Record::Collective(c) => Some((e.line, c.op)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let at = |rank: usize, line: usize| At {
        rank: u32::try_from(rank).unwrap_or(u32::MAX),
        line,
    };
    let most = colls.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..most {
        let Some((r0, &(line0, op0))) = colls
            .iter()
            .enumerate()
            .find_map(|(r, c)| Some((r, c.get(k)?)))
        else {
            continue;
        };
        for (r, c) in colls.iter().enumerate() {
            match c.get(k) {
                None => {
                    return Some(CollectiveError::Missing {
                        nth: k + 1,
                        at: at(r0, line0),
                        op: op0,
                        rank: at(r, 0).rank,
                        count: c.len(),
                    });
                }
                Some(&(line, op)) if op != op0 => {
                    return Some(CollectiveError::Differ {
                        nth: k + 1,
                        first: at(r0, line0),
                        first_op: op0,
                        other: at(r, line),
                        other_op: op,
                    });
                }
                Some(_) => {}
            }
        }
    }
    None
}

// ----- events --------------------------------------------------------------

/// Whether the collective has a root argument (which the format does not
/// record: the import gives it root 0).
fn is_rooted(op: Op) -> bool {
    matches!(
        op,
        Op::Bcast | Op::Reduce | Op::Gather | Op::Gatherv | Op::Scatter | Op::Scatterv
    )
}

/// A collective record in the event model's meaning: its root and the
/// counts of its MPI arguments, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meaning {
    /// The root of a rooted collective (`None`: root 0 as before, unknown).
    root: Option<i32>,
    /// The send buffer's bytes (the call's own contribution).
    send: i64,
    /// The receive buffer's bytes, when the call has one.
    recv: Option<i64>,
    /// Allgatherv's receive counts, one per rank.
    recv_counts: Vec<i32>,
    /// Whether the published meaning was understood (else the record's
    /// `s` and `r` are kept as they are, and `check` says what disagrees).
    understood: bool,
}

/// What each rank's collectives mean as MPI arguments, per rank and
/// collective record in file order. The published files give `s` and `r`
/// as the bytes that leave and reach the rank over all its partners, not
/// the call's arguments: an `ALLREDUCE` of one double at 64 ranks has
/// `s 512 r 512`; `BCAST` has the root's `s` = ranks × the broadcast's
/// bytes and every rank's `r` = its bytes (the root, rank 63 of amg64, is
/// the one with `s > 0`); `REDUCE` the root's `r` = ranks × bytes; `SCAN`
/// on rank `i` of `p` has `s` = bytes × (p − i) and `r` = bytes × (i + 1);
/// `ALLGATHER(V)` the total gathered on every rank, and no per-rank
/// counts. The k-th collective of every rank is one call (they are all on
/// `MPI_COMM_WORLD`); where the ranks' records do not fit that reading
/// (other operations, ranks with different collectives, sizes that are
/// not multiples of the rank count) they are kept as recorded.
fn meanings(ranks: &[Vec<Entry>]) -> Vec<Vec<Meaning>> {
    let colls: Vec<Vec<&Collective>> = ranks
        .iter()
        .map(|r| {
            r.iter()
                .filter_map(|e| match &e.record {
                    Record::Collective(c) => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let np = i64::try_from(ranks.len()).unwrap_or(i64::MAX).max(1);
    let mut out: Vec<Vec<Meaning>> = colls
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|c| Meaning {
                    root: is_rooted(c.op).then_some(0),
                    send: c.send_bytes,
                    recv: Some(c.recv_bytes),
                    recv_counts: Vec::new(),
                    understood: false,
                })
                .collect()
        })
        .collect();
    let n = colls.iter().map(Vec::len).min().unwrap_or(0);
    for k in 0..n {
        let members: Vec<&Collective> = colls.iter().map(|cs| cs[k]).collect();
        let op = members[0].op;
        if members.iter().any(|c| c.op != op) {
            continue;
        }
        let share = |x: i64, parts: i64| (parts > 0 && x % parts == 0).then(|| x / parts);
        let every = |f: &dyn Fn(usize, &Collective) -> Option<Meaning>| -> Option<Vec<Meaning>> {
            members.iter().enumerate().map(|(r, c)| f(r, c)).collect()
        };
        let unique = |f: &dyn Fn(&Collective) -> bool| {
            let mut it = (0..members.len()).filter(|&r| f(members[r]));
            match (it.next(), it.next()) {
                (Some(r), None) => Some(r),
                _ => None,
            }
        };
        let found = match op {
            Op::Allreduce => every(&|_, c| {
                Some(Meaning {
                    send: share(c.send_bytes, np)?,
                    recv: None,
                    ..Meaning::default()
                })
                .filter(|_| c.recv_bytes == c.send_bytes)
            }),
            Op::Allgather => every(&|_, c| {
                Some(Meaning {
                    send: share(c.send_bytes, np)?,
                    recv: Some(share(c.recv_bytes, np)?),
                    ..Meaning::default()
                })
            }),
            Op::Allgatherv => {
                let counts: Option<Vec<i32>> = members
                    .iter()
                    .map(|c| i32::try_from(share(c.send_bytes, np)?).ok())
                    .collect();
                counts.and_then(|counts| {
                    every(&|r, c| {
                        (c.recv_bytes == c.send_bytes).then(|| Meaning {
                            send: i64::from(counts[r]),
                            recv: Some(0),
                            recv_counts: counts.clone(),
                            ..Meaning::default()
                        })
                    })
                })
            }
            // The root is the one rank whose `total` side is not zero: it
            // holds ranks × the bytes every rank has on its `own` side.
            Op::Bcast | Op::Reduce => {
                type Side = fn(&Collective) -> i64;
                let (total, own): (Side, Side) = if op == Op::Bcast {
                    (|c| c.send_bytes, |c| c.recv_bytes)
                } else {
                    (|c| c.recv_bytes, |c| c.send_bytes)
                };
                unique(&|c| total(c) > 0).and_then(|root| {
                    let bytes = own(members[root]);
                    every(&|_, c| {
                        (own(c) == bytes).then(|| Meaning {
                            root: i32::try_from(root).ok(),
                            send: bytes,
                            recv: None,
                            ..Meaning::default()
                        })
                    })
                    .filter(|_| bytes.checked_mul(np) == Some(total(members[root])))
                })
            }
            Op::Scan => every(&|r, c| {
                let r = i64::try_from(r).ok()?;
                let bytes = share(c.send_bytes, np - r)?;
                (bytes.checked_mul(r + 1) == Some(c.recv_bytes)).then_some(Meaning {
                    send: bytes,
                    recv: None,
                    ..Meaning::default()
                })
            }),
            _ => None,
        };
        if let Some(found) = found {
            for (r, mut m) in found.into_iter().enumerate() {
                m.understood = true;
                out[r][k] = m;
            }
        }
    }
    out
}

/// The event of one record on rank `rank`, without timing. A collective
/// takes its [`Meaning`] when it has one.
fn event_of(record: &Record, rank: i32, meaning: Option<&Meaning>) -> Event {
    match record {
        Record::P2p(p) => {
            let mut ev = Event::new(p.op);
            ev.comm = CommId::WORLD;
            ev.comm_rank = rank;
            let x = Transfer {
                peer: Peer::Rank {
                    world: p.peer,
                    local: p.peer,
                },
                tag: Tag::Value(p.tag),
                count: p.bytes,
                dsize: 1,
                dtype: trace::Datatype::UNKNOWN,
            };
            if p.op == Op::Send {
                ev.send = Some(x);
            } else {
                ev.recv = Some(x);
            }
            ev
        }
        Record::Collective(c) => {
            let mut ev = Event::new(c.op);
            ev.comm = CommId::WORLD;
            ev.comm_rank = rank;
            if let Some(m) = meaning.filter(|m| m.understood) {
                ev.send = Some(Transfer::collective(m.send, 1));
                ev.recv = m.recv.map(|b| Transfer::collective(b, 1));
                ev.recv_counts = m.recv_counts.iter().map(|&c| i64::from(c)).collect();
                ev.root = m.root;
                return ev;
            }
            let barrier = c.op == Op::Barrier;
            if !barrier || c.send_bytes != 0 {
                ev.send = Some(Transfer::collective(c.send_bytes, 1));
            }
            if !barrier || c.recv_bytes != 0 {
                ev.recv = Some(Transfer::collective(c.recv_bytes, 1));
            }
            ev.root = is_rooted(c.op).then_some(0);
            ev
        }
        Record::Delimiter(_) => {
            let mut ev = Event::new(Op::Pcontrol);
            ev.value = Some(DELIMITER_LEVEL);
            ev
        }
    }
}

/// Rank `rank`'s events, one per record in file order, with their timing
/// relative to `zero` (the earliest start of all ranks). A delimiter takes
/// no time and sits at the end of the previous event, or at the rank's
/// first start when it comes first (at `zero` when the rank has no timed
/// record at all).
pub fn rank_events<'a>(
    rank: u32,
    entries: &'a [Entry],
    meanings: &'a [Meaning],
    zero: u64,
) -> impl Iterator<Item = (Event, (u64, u64))> + 'a {
    let first_start = entries
        .iter()
        .find_map(|e| e.record.span())
        .map_or(zero, |s| s.0);
    let comm_rank = i32::try_from(rank).unwrap_or(i32::MAX);
    let mut prev_end: Option<u64> = None;
    // The latest end so far: records that overlap it share their time.
    let mut reach: Option<u64> = None;
    let mut meanings = meanings.iter();
    entries.iter().map(move |e| {
        let (start, end) = e.record.span().unwrap_or_else(|| {
            let at = prev_end.unwrap_or(first_start);
            (at, at)
        });
        let meaning = match e.record {
            Record::Collective(_) => meanings.next(),
            _ => None,
        };
        let mut ev = event_of(&e.record, comm_rank, meaning);
        let from = reach.map_or(start, |r| r.max(start));
        ev.time = Timing {
            enter_ns: start.saturating_sub(zero),
            dur_ns: end.saturating_sub(from),
            compute_ns: reach.map_or(0, |r| start.saturating_sub(r)),
        };
        prev_end = Some(end);
        reach = Some(reach.map_or(end, |r| r.max(end)));
        let span = (start.saturating_sub(zero), end.saturating_sub(zero));
        (ev, span)
    })
}

/// Builds the trace file of parsed ranks (`ranks[r]` is rank `r`'s
/// records) after checking that their messages pair up and their
/// collectives agree; `dir` names the
/// input in errors and in the metadata's command line.
pub fn convert(ranks: Vec<Vec<Entry>>, dir: &Path) -> Result<TraceFile, ImportError> {
    let mut problems = pairing_problems(&ranks).into_iter();
    if let Some(first) = problems.next() {
        return Err(ImportError::Pairing {
            dir: dir.to_path_buf(),
            first,
            more: problems.len(),
        });
    }
    if let Some(first) = collective_problem(&ranks) {
        return Err(ImportError::Collectives {
            dir: dir.to_path_buf(),
            first,
        });
    }
    let spans = || ranks.iter().flatten().filter_map(|e| e.record.span());
    let zero = spans().map(|s| s.0).min().unwrap_or(0);
    let last = spans().map(|s| s.1).max().unwrap_or(zero);
    let meanings = meanings(&ranks);
    let world_size = u32::try_from(ranks.len()).unwrap_or(u32::MAX);
    // Each rank's parsed lines are dropped once compressed, not held
    // until every rank is (half a GB of smg1024's import).
    let owned: Vec<_> = ranks.into_iter().zip(meanings).enumerate().collect();
    let parts = on_all_cores(owned, |(r, (entries, meanings))| {
        let rank = u32::try_from(r).unwrap_or(u32::MAX);
        let failed = |error| ImportError::Compress { rank, error };
        // A timeline with the common zero: the imported times are exact.
        let what = Recording {
            timeline_epoch: Some(zero),
            ..Recording::default()
        };
        let mut rec = RankRecorder::new(rank, &what);
        for (ev, span) in rank_events(rank, &entries, &meanings, zero) {
            rec.push_spanning(&ev, span).map_err(failed)?;
        }
        rec.finish().map_err(failed)
    })
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    // Merged as a traced run would be.
    let mut file = crate::merge::as_traced(parts)
        .map_err(|error| ImportError::Merge { error })?
        .unwrap_or_default();
    file.trace.normalize();
    file.meta = Meta {
        tool: format!("rankscale {}", env!("CARGO_PKG_VERSION")),
        mpi: format!("imported: {}", PERTEXT),
        world_size,
        command: vec![
            "import".into(),
            "--format".into(),
            PERTEXT.into(),
            dir.display().to_string(),
        ],
        wall_ns: last.saturating_sub(zero),
        merge_ns: 0,
        origin: trace::Origin::Imported {
            format: PERTEXT.into(),
        },
        ..Meta::default()
    };
    Ok(file)
}

/// The rank files of a `pertext` directory, and the files that look like
/// rank files but are not (see [`scan_rank_files`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankFiles {
    /// `Process<r>.txt` for every `r` in `0..P`, by rank.
    pub files: Vec<PathBuf>,
    /// The names, sorted, that start as a rank file's does (`Process`, in
    /// any case) but are not `Process<r>.txt` (`Process-1.txt`,
    /// `process1.txt`, `Process1.txt.bak`): the import does not read them,
    /// and a user who meant one as a rank's file must hear so.
    pub not_rank_files: Vec<String>,
}

/// The rank files of `dir`, by rank: `Process<r>.txt` for every `r` in
/// `0..P`. Other files are left alone (a dataset may carry its README);
/// see [`scan_rank_files`] for the names that look like rank files.
pub fn rank_files(dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    scan_rank_files(dir).map(|r| r.files)
}

/// [`rank_files`], with the names of the files that look like rank files
/// but are not, so that a caller can say they were left out. A name with a
/// leading zero or a number beyond a rank (`Process007.txt`) is an error,
/// as it cannot be told from another rank's file.
pub fn scan_rank_files(dir: &Path) -> Result<RankFiles, ImportError> {
    let io = |error| ImportError::Io {
        path: dir.to_path_buf(),
        error,
    };
    let mut found = BTreeMap::new();
    let mut not_rank_files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let os_name = entry.file_name();
        let lossy = os_name.to_string_lossy();
        let looks_like = lossy
            .as_bytes()
            .get(..7)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"Process"));
        let num = os_name
            .to_str()
            .and_then(|n| n.strip_prefix("Process"))
            .and_then(|s| s.strip_suffix(".txt"))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let Some(num) = num else {
            if looks_like {
                not_rank_files.push(lossy.into_owned());
            }
            continue;
        };
        let bad = || ImportError::BadFileName {
            dir: dir.to_path_buf(),
            name: lossy.to_string(),
        };
        if num.len() > 1 && num.starts_with('0') {
            return Err(bad());
        }
        let rank: u32 = num.parse().map_err(|_| bad())?;
        found.insert(rank, entry.path());
    }
    let Some(&highest) = found.keys().next_back() else {
        return Err(ImportError::NoRankFiles {
            dir: dir.to_path_buf(),
        });
    };
    let count = u32::try_from(found.len()).unwrap_or(u32::MAX);
    if let Some(missing) = (0..count).find(|r| !found.contains_key(r)) {
        return Err(ImportError::MissingRank {
            dir: dir.to_path_buf(),
            missing,
            found: count,
            highest,
        });
    }
    not_rank_files.sort();
    Ok(RankFiles {
        files: found.into_values().collect(),
        not_rank_files,
    })
}

/// Imports a `pertext` directory into a trace file in memory, without
/// writing it, so that a caller can inspect or extend the trace (tests do)
/// before it goes to disk.
pub fn import_pertext(dir: &Path) -> Result<TraceFile, ImportError> {
    let files = rank_files(dir)?;
    let world = u32::try_from(files.len()).unwrap_or(u32::MAX);
    let ranks = on_all_cores(files.iter().collect(), |path: &PathBuf| {
        let bytes = std::fs::read(path).map_err(|error| ImportError::Io {
            path: path.clone(),
            error,
        })?;
        parse_rank(path, &bytes, world)
    })
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    convert(ranks, dir)
}

/// `f` of each item, in order, computed on all cores: the ranks of an
/// import are independent (a rank's file, a rank's compression). With
/// scoped threads over contiguous slices, so that this crate, which the
/// tracer links, needs no thread pool. The first error in rank order is
/// the same as a loop's.
fn on_all_cores<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = items.len().div_ceil(threads.max(1)).max(1);
    let mut chunks: Vec<Vec<T>> = Vec::new();
    let mut it = items.into_iter().peekable();
    while it.peek().is_some() {
        chunks.push(it.by_ref().take(per).collect());
    }
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| scope.spawn(move || chunk.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Record {
        parse_line(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .unwrap_or_else(|| panic!("{text}: skipped"))
    }

    fn bad(text: &str) -> LineError {
        match parse_line(text) {
            Err(e) => e,
            Ok(r) => panic!("{text}: accepted as {r:?}"),
        }
    }

    /// Parses rank files given as text, `Process<r>.txt` each.
    fn ranks(texts: &[&str]) -> Result<Vec<Vec<Entry>>, ImportError> {
        let world = texts.len() as u32;
        texts
            .iter()
            .enumerate()
            .map(|(r, t)| parse_rank(Path::new(&format!("Process{r}.txt")), t.as_bytes(), world))
            .collect()
    }

    #[test]
    fn send_and_recv_lines_keep_every_field() {
        assert_eq!(
            line("Send 3 t1 100 t2 250 t 7 l 64 m 17"),
            Record::P2p(P2p {
                op: Op::Send,
                peer: 3,
                start: 100,
                end: 250,
                tag: 7,
                bytes: 64,
                msgid: Some(17)
            })
        );
        assert_eq!(
            line("  Recv\t0   t1 5 t2 5 t 0 l 0 m 0 \r"),
            Record::P2p(P2p {
                op: Op::Recv,
                peer: 0,
                start: 5,
                end: 5,
                tag: 0,
                bytes: 0,
                msgid: Some(0)
            })
        );
        // `m` may be left out (the published files do on collectives).
        assert_eq!(
            line("Recv 2 t1 5 t2 9 t 1 l 4"),
            Record::P2p(P2p {
                op: Op::Recv,
                peer: 2,
                start: 5,
                end: 9,
                tag: 1,
                bytes: 4,
                msgid: None
            })
        );
    }

    #[test]
    fn collective_names_map_case_insensitively_to_blocking_collectives() {
        assert_eq!(
            line("ALLREDUCE 1 t1 100 t2 250 s 8 r 8 m 17"),
            Record::Collective(Collective {
                op: Op::Allreduce,
                start: 100,
                end: 250,
                send_bytes: 8,
                recv_bytes: 8,
                id: Some(17)
            })
        );
        // As the published files' last rank writes them: -1, no `m`.
        assert_eq!(
            line("ALLGATHERV -1 t1 5 t2 7 s 112 r 112"),
            Record::Collective(Collective {
                op: Op::Allgatherv,
                start: 5,
                end: 7,
                send_bytes: 112,
                recv_bytes: 112,
                id: None
            })
        );
        for (name, op) in [
            ("BARRIER", Op::Barrier),
            ("BCAST", Op::Bcast),
            ("REDUCE", Op::Reduce),
            ("ALLGATHER", Op::Allgather),
            ("ALLTOALL", Op::Alltoall),
            ("GATHER", Op::Gather),
            ("SCATTER", Op::Scatter),
            ("ALLGATHERV", Op::Allgatherv),
            ("ALLTOALLV", Op::Alltoallv),
            ("GATHERV", Op::Gatherv),
            ("SCATTERV", Op::Scatterv),
            ("REDUCE_SCATTER", Op::ReduceScatter),
            ("REDUCE_SCATTER_BLOCK", Op::ReduceScatterBlock),
            ("SCAN", Op::Scan),
            ("EXSCAN", Op::Exscan),
            ("allreduce", Op::Allreduce),
            ("Reduce_Scatter", Op::ReduceScatter),
        ] {
            let Record::Collective(c) = line(&format!("{name} -1 t1 1 t2 2 s 3 r 4 m 5")) else {
                panic!("{name}: not a collective");
            };
            assert_eq!(c.op, op, "{name}");
        }
    }

    #[test]
    fn delimiters_blank_lines_and_comments() {
        assert_eq!(line("DEL3"), Record::Delimiter(3));
        assert_eq!(line("  DEL0  "), Record::Delimiter(0));
        assert_eq!(line("del12"), Record::Delimiter(12));
        assert_eq!(parse_line(""), Ok(None));
        assert_eq!(parse_line("   \t \r"), Ok(None));
        assert_eq!(parse_line("# Send 1 garbage"), Ok(None));
        assert_eq!(parse_line("  # indented comment"), Ok(None));
    }

    #[test]
    fn each_malformed_line_says_what_is_wrong() {
        let cases: &[(&str, LineError, &str)] = &[
            (
                "Sned 1 t1 1 t2 2 t 0 l 8 m 1",
                LineError::UnknownRecord("Sned".into()),
                "`Sned` is neither Send, Recv, DEL<n> nor an MPI collective name",
            ),
            (
                "WAITALL 1 t1 1 t2 2 s 0 r 0 m 1",
                LineError::NotCollective("WAITALL".into()),
                "`WAITALL` is an MPI call but not a blocking collective",
            ),
            (
                "IALLREDUCE 1 t1 1 t2 2 s 8 r 8 m 1",
                LineError::NotCollective("IALLREDUCE".into()),
                "`IALLREDUCE` is an MPI call but not a blocking collective",
            ),
            (
                "DEL",
                LineError::BadDelimiter("DEL".into()),
                "`DEL` is not a context delimiter DEL<n> (n a non-negative integer)",
            ),
            ("DEL-1", LineError::BadDelimiter("DEL-1".into()), "DEL<n>"),
            ("DELx", LineError::BadDelimiter("DELx".into()), "DEL<n>"),
            (
                "DEL99999999999999999999",
                LineError::BadDelimiter("DEL99999999999999999999".into()),
                "DEL<n>",
            ),
            (
                "DEL3 4",
                LineError::Trailing("4".into()),
                "unexpected `4` after the last field",
            ),
            (
                "Send 1 t1 1 t2 2 t 0 l 8 x 3",
                LineError::WrongKey {
                    expected: "m",
                    found: "x".into(),
                },
                "expected `m`, found `x`",
            ),
            (
                "Send 1 t1 1 t2 2 t 0 l 8 m",
                LineError::MissingField("the value of m (message id)"),
                "the line ends where the value of m (message id) was expected",
            ),
            (
                "Send",
                LineError::MissingField("the peer rank"),
                "the peer rank",
            ),
            (
                "ALLREDUCE",
                LineError::MissingField("the integer after the collective name"),
                "the integer after the collective name",
            ),
            (
                "Send 1 t2 1 t1 2 t 0 l 8 m 1",
                LineError::WrongKey {
                    expected: "t1",
                    found: "t2".into(),
                },
                "expected `t1`, found `t2`",
            ),
            (
                "ALLREDUCE 1 t1 1 t2 2 r 8 s 8 m 1",
                LineError::WrongKey {
                    expected: "s",
                    found: "r".into(),
                },
                "expected `s`, found `r`",
            ),
            (
                "Send x t1 1 t2 2 t 0 l 8 m 1",
                LineError::NotANumber {
                    field: "peer",
                    value: "x".into(),
                    kind: "a non-negative integer",
                },
                "peer: `x` is not a non-negative integer",
            ),
            (
                "Send 1 t1 1 t2 2 t -1 l 8 m 1",
                LineError::NotANumber {
                    field: "t",
                    value: "-1".into(),
                    kind: "a non-negative integer",
                },
                "t: `-1` is not a non-negative integer",
            ),
            (
                "Send 1 t1 +1 t2 2 t 0 l 8 m 1",
                LineError::NotANumber {
                    field: "t1",
                    value: "+1".into(),
                    kind: "a non-negative integer",
                },
                "t1: `+1`",
            ),
            (
                "ALLREDUCE one t1 1 t2 2 s 8 r 8 m 1",
                LineError::NotANumber {
                    field: "count",
                    value: "one".into(),
                    kind: "an integer",
                },
                "count: `one` is not an integer",
            ),
            (
                "Send 1 t1 1 t2 2 t 2147483648 l 8 m 1",
                LineError::TooLarge {
                    field: "t",
                    value: "2147483648".into(),
                    max: 2147483647,
                },
                "t: 2147483648 is too large (at most 2147483647)",
            ),
            (
                "Send 1 t1 1 t2 99999999999999999999 t 0 l 8 m 1",
                LineError::TooLarge {
                    field: "t2",
                    value: "99999999999999999999".into(),
                    max: MAX_TIME_NS,
                },
                "t2: 99999999999999999999 is too large",
            ),
            // Times are i64 nanoseconds downstream: 2^64 - 1 and 2^63 are
            // not times.
            (
                "Send 1 t1 1 t2 18446744073709551615 t 0 l 8 m 1",
                LineError::TooLarge {
                    field: "t2",
                    value: "18446744073709551615".into(),
                    max: MAX_TIME_NS,
                },
                "t2: 18446744073709551615 is too large (at most 9223372036854775807)",
            ),
            (
                "BARRIER 1 t1 9223372036854775808 t2 9223372036854775808 s 0 r 0",
                LineError::TooLarge {
                    field: "t1",
                    value: "9223372036854775808".into(),
                    max: MAX_TIME_NS,
                },
                "t1: 9223372036854775808 is too large",
            ),
            (
                "Recv 1 t1 1 t2 2 t 0 l 9007199254740993",
                LineError::TooLarge {
                    field: "l",
                    value: "9007199254740993".into(),
                    max: MAX_BYTES,
                },
                "l: 9007199254740993 is too large (at most 9007199254740992)",
            ),
            (
                "ALLREDUCE 1 t1 1 t2 2 s 8 r 9223372036854775807",
                LineError::TooLarge {
                    field: "r",
                    value: "9223372036854775807".into(),
                    max: MAX_BYTES,
                },
                "r: 9223372036854775807 is too large",
            ),
            (
                "Recv 1 t1 1 t2 2 t 0 l 8 m 1 extra",
                LineError::Trailing("extra".into()),
                "unexpected `extra` after the last field",
            ),
            (
                "Recv 1 t1 300 t2 200 t 0 l 8 m 1",
                LineError::EndBeforeStart {
                    start: 300,
                    end: 200,
                },
                "t2 200 is before t1 300",
            ),
            (
                "BCAST 1 t1 300 t2 299 s 8 r 8 m 1",
                LineError::EndBeforeStart {
                    start: 300,
                    end: 299,
                },
                "t2 299 is before t1 300",
            ),
        ];
        for (text, want, msg) in cases {
            let got = bad(text);
            assert_eq!(&got, want, "{text}");
            assert!(
                got.to_string().contains(msg),
                "{text}: message `{got}` lacks `{msg}`"
            );
        }
    }

    #[test]
    fn file_errors_name_the_file_and_line() {
        let e =
            ranks(&["# header\n\nDEL1\nSend 0 t1 1 t2 2 t 0 l 8 m 1\nSend 0 t1 x"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Process0.txt:5: t1: `x` is not a non-negative integer"
        );
        let e = parse_rank(
            Path::new("Process0.txt"),
            b"Send 0 t1 1 t2 2 t 0 l 8 m 1\n\xff\n",
            1,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "Process0.txt:2: the line is not UTF-8 text");
        let e = ranks(&["Send 2 t1 1 t2 2 t 0 l 8 m 1\n", ""]).unwrap_err();
        assert!(matches!(
            e,
            ImportError::Line {
                line: 1,
                error: LineError::PeerOutOfRange { peer: 2, last: 1 },
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "Process0.txt:1: peer 2 is not a rank of this trace (ranks 0 to 1, one Process<r>.txt each)"
        );
    }

    #[test]
    fn starts_must_not_decrease_within_a_file() {
        let ok = "Send 0 t1 10 t2 50 t 0 l 8 m 1\nRecv 0 t1 10 t2 60 t 0 l 8 m 1\nDEL1\nRecv 0 t1 20 t2 30 t 0 l 8 m 2\n";
        let parsed = ranks(&[ok]).unwrap();
        assert_eq!(parsed[0].len(), 4);
        // A start before the previous event's end is allowed (overlap), one
        // before its start is not.
        let e = ranks(&[
            "Send 0 t1 10 t2 50 t 0 l 8 m 1\nDEL2\n# late\nRecv 0 t1 9 t2 60 t 0 l 8 m 1\n",
        ])
        .unwrap_err();
        assert!(matches!(
            e,
            ImportError::Line {
                line: 4,
                error: LineError::StartGoesBack {
                    start: 9,
                    previous: 10,
                    previous_line: 1
                },
                ..
            }
        ));
        assert!(
            e.to_string()
                .starts_with("Process0.txt:4: t1 9 is before t1 10 of the previous event (line 1)")
        );
    }

    #[test]
    fn messages_pair_up_in_mpi_order_not_by_id() {
        // As in the published files: `m` differs on the two sides.
        let good = ranks(&[
            "Send 1 t1 1 t2 2 t 5 l 8 m 4\nRecv 1 t1 3 t2 4 t 5 l 8 m 7\n",
            "Recv 0 t1 1 t2 2 t 5 l 8 m 7\nSend 0 t1 3 t2 4 t 5 l 8\n",
        ])
        .unwrap();
        assert_eq!(pairing_problems(&good), []);

        let p = pairing_problems(&ranks(&["Send 1 t1 1 t2 2 t 5 l 8 m 1\n", "DEL1\n"]).unwrap());
        assert_eq!(
            p,
            [PairError::NoRecv {
                send: At { rank: 0, line: 1 },
                to: 1,
                tag: 5,
                bytes: 8,
                nth: 1
            }]
        );
        assert_eq!(
            p[0].to_string(),
            "Process0.txt:1: Send to 1 (tag 5, 8 bytes), the 1st such message, has no Recv: Process1.txt has only 0 Recv from 0 with tag 5"
        );

        let p =
            pairing_problems(&ranks(&["DEL1\n", "DEL1\nRecv 0 t1 1 t2 2 t 5 l 8 m 9\n"]).unwrap());
        assert_eq!(
            p[0].to_string(),
            "Process1.txt:2: Recv from 0 (tag 5, 8 bytes), the 1st such message, has no Send: Process0.txt has only 0 Send to 1 with tag 5"
        );

        // Another tag is another message stream: both sides are unpaired.
        let p = pairing_problems(
            &ranks(&["Send 1 t1 1 t2 2 t 5 l 8\n", "Recv 0 t1 1 t2 2 t 6 l 8\n"]).unwrap(),
        );
        assert_eq!(p.len(), 2, "{p:?}");
        let p = pairing_problems(
            &ranks(&[
                "Send 1 t1 1 t2 2 t 5 l 8 m 1\n",
                "Recv 0 t1 1 t2 2 t 5 l 16 m 1\n",
            ])
            .unwrap(),
        );
        assert_eq!(
            p[0].to_string(),
            "Process0.txt:1: Send of 8 bytes (tag 5, the 1st such message) is received at Process1.txt:1 as 16 bytes: the byte counts differ"
        );

        // The k-th with the k-th: the second Send of 16 bytes meets the
        // second Recv, which says 8.
        let p = pairing_problems(
            &ranks(&[
                "Send 1 t1 1 t2 2 t 5 l 8\nSend 1 t1 3 t2 4 t 5 l 16\nSend 1 t1 5 t2 6 t 5 l 8\n",
                "Recv 0 t1 1 t2 2 t 5 l 8\nRecv 0 t1 5 t2 6 t 5 l 8\n",
            ])
            .unwrap(),
        );
        assert_eq!(
            p.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "Process0.txt:2: Send of 16 bytes (tag 5, the 2nd such message) is received at Process1.txt:2 as 8 bytes: the byte counts differ",
                "Process0.txt:3: Send to 1 (tag 5, 8 bytes), the 3rd such message, has no Recv: Process1.txt has only 2 Recv from 0 with tag 5",
            ]
        );

        // Messages between other ranks are other streams.
        let ok = ranks(&[
            "Send 1 t1 1 t2 2 t 5 l 8 m 1\nRecv 2 t1 3 t2 4 t 5 l 8 m 1\n",
            "Recv 0 t1 1 t2 2 t 5 l 8 m 1\n",
            "Send 0 t1 1 t2 2 t 5 l 8 m 1\n",
        ])
        .unwrap();
        assert_eq!(pairing_problems(&ok), []);
    }

    #[test]
    fn the_first_pairing_problem_is_reported_with_a_count_of_the_rest() {
        let parsed = ranks(&[
            "Send 1 t1 1 t2 2 t 5 l 8 m 3\nSend 1 t1 3 t2 4 t 5 l 8 m 4\n",
            "Recv 0 t1 1 t2 2 t 5 l 8 m 4\nSend 0 t1 3 t2 4 t 5 l 8 m 9\n",
        ])
        .unwrap();
        let e = convert(parsed, Path::new("data")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "data: Process0.txt:2: Send to 1 (tag 5, 8 bytes), the 2nd such message, has no Recv: Process1.txt has only 1 Recv from 0 with tag 5 (and 1 more unpaired or mismatched message)"
        );
    }

    #[test]
    fn events_mirror_the_lines_in_order() {
        let parsed = ranks(&[
            "DEL1\nSend 1 t1 1000 t2 1200 t 3 l 64 m 1\nBCAST 1 t1 1500 t2 1900 s 8 r 0 m 2\nBARRIER 1 t1 2000 t2 2100 s 0 r 0 m 3\nALLREDUCE 1 t1 2200 t2 2300 s 8 r 8 m 4\n",
            "Recv 0 t1 1100 t2 1250 t 3 l 64 m 1\nBCAST 1 t1 1600 t2 1900 s 0 r 8 m 2\nBARRIER 1 t1 2050 t2 2100 s 0 r 0 m 3\nALLREDUCE 1 t1 2250 t2 2300 s 8 r 8 m 4\n",
        ])
        .unwrap();
        let ev: Vec<Event> = rank_events(0, &parsed[0], &meanings(&parsed)[0], 1000)
            .map(|(e, _)| e)
            .collect();
        let lines: Vec<String> = ev.iter().map(trace::raw::event_line).collect();
        assert_eq!(
            lines,
            [
                "Pcontrol site=none value=1",
                "Send site=none comm=0 send=1/3/64/1",
                "Bcast site=none comm=0 send=8/1 recv=0/1 root=0",
                "Barrier site=none comm=0",
                "Allreduce site=none comm=0 send=4/1",
            ]
        );
        assert!(ev[1..].iter().all(|e| e.comm_rank == 0));
        assert_eq!(ev[0].comm_rank, -1, "Pcontrol has no communicator");
        let ev: Vec<Event> = rank_events(1, &parsed[1], &meanings(&parsed)[1], 1000)
            .map(|(e, _)| e)
            .collect();
        assert_eq!(
            ev[0].recv,
            Some(Transfer {
                peer: Peer::Rank { world: 0, local: 0 },
                tag: Tag::Value(3),
                count: 64,
                dsize: 1,
                dtype: trace::Datatype::UNKNOWN,
            })
        );
        assert!(ev[0].matched.is_empty() && ev[0].send.is_none());
        assert_eq!(ev[0].comm_rank, 1);
        assert_eq!(ev[0].comm, CommId::WORLD);
    }

    #[test]
    fn timing_is_relative_to_the_common_zero_with_compute_since_the_previous_end() {
        let parsed = ranks(&[
            "DEL1\nSend 0 t1 1000 t2 1200 t 0 l 8 m 1\nDEL2\nDEL3\nRecv 0 t1 1500 t2 1900 t 0 l 8 m 1\nRecv 0 t1 1800 t2 2000 t 0 l 8 m 2\nSend 0 t1 2000 t2 2000 t 0 l 8 m 2\nDEL4\n",
        ])
        .unwrap();
        let times: Vec<(u64, u64, u64)> = rank_events(0, &parsed[0], &meanings(&parsed)[0], 400)
            .map(|(e, _)| (e.time.enter_ns, e.time.dur_ns, e.time.compute_ns))
            .collect();
        assert_eq!(
            times,
            [
                (600, 0, 0),      // DEL1 first: at the first start, 1000
                (600, 200, 0),    // Send 1000..1200
                (800, 0, 0),      // DEL2 at the Send's end
                (800, 0, 0),      // DEL3 likewise
                (1100, 400, 300), // Recv 1500..1900: 300 after 1200
                (1400, 100, 0),   // 1800..2000 overlaps it: no compute, 1900..2000 its own
                (1600, 0, 0),     // zero-length Send at 2000
                (1600, 0, 0),     // DEL4 at 2000
            ]
        );
        // A rank with only delimiters sits at the common zero.
        let only = ranks(&["DEL1\nDEL2\n"]).unwrap();
        let times: Vec<u64> = rank_events(0, &only[0], &meanings(&only)[0], 77)
            .map(|(e, _)| e.time.enter_ns)
            .collect();
        assert_eq!(times, [0, 0]);
    }

    #[test]
    fn converted_trace_expands_to_the_lines_with_one_time_base() {
        let texts = [
            "DEL1\nSend 1 t1 1000 t2 1200 t 3 l 64 m 1\nALLREDUCE 1 t1 1500 t2 1900 s 8 r 8 m 2\n",
            "DEL1\nRecv 0 t1 1100 t2 1250 t 3 l 64 m 1\nALLREDUCE 1 t1 1600 t2 1900 s 8 r 8 m 2\n",
            "DEL1\nALLREDUCE 1 t1 700 t2 1900 s 8 r 8 m 2\n",
        ];
        let parsed = ranks(&texts).unwrap();
        let file = convert(parsed.clone(), Path::new("d")).unwrap();
        let file = TraceFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
        assert_eq!(file.meta.world_size, 3);
        assert_eq!(file.meta.mpi, "imported: pertext");
        assert_eq!(file.meta.command, ["import", "--format", "pertext", "d"]);
        assert_eq!(file.meta.wall_ns, 1200);
        assert_eq!(file.trace.total_events(), 8);
        for (r, entries) in parsed.iter().enumerate() {
            let want: Vec<String> = rank_events(r as u32, entries, &meanings(&parsed)[r], 700)
                .map(|(e, _)| trace::raw::event_line(&e))
                .collect();
            let t = file.trace.rank_trace(r as u32).unwrap();
            let got: Vec<String> = t.expand().map(|e| trace::raw::event_line(&e)).collect();
            assert_eq!(got, want, "rank {r}");
            let tl = file.timeline(r as u32).unwrap();
            assert_eq!(tl.epoch_ns, 700);
            let spans: Vec<(u64, u64)> = tl
                .spans()
                .unwrap()
                .iter()
                .map(|s| (s.enter, s.leave))
                .collect();
            let want: Vec<(u64, u64)> = rank_events(r as u32, entries, &meanings(&parsed)[r], 700)
                .map(|(_, span)| span)
                .collect();
            assert_eq!(spans, want, "rank {r}");
        }
        assert_eq!(file.timeline(2).unwrap().spans().unwrap()[1].enter, 0);
    }

    /// The published meanings, on lines shaped as amg64's, bt100A's and
    /// smg4.10's at 4 ranks (their sizes divided by the rank counts): a
    /// `BCAST` whose root (rank 3) has `s` = 4 × 8; a `REDUCE` whose root
    /// (rank 0) has `r` = 4 × 8; a `SCAN` of 8 bytes, cumulative; an
    /// `ALLREDUCE` of one double as 4 × 8; an `ALLGATHERV` of 28 bytes per
    /// rank as the 112 gathered. Each becomes the MPI call's arguments.
    #[test]
    fn published_collectives_become_their_mpi_arguments() {
        let texts: Vec<String> = (0..4)
            .map(|r| {
                let bcast_s = if r == 3 { 32 } else { 0 };
                let reduce_r = if r == 0 { 32 } else { 0 };
                format!(
                    "BCAST 1 t1 10 t2 20 s {bcast_s} r 8\n\
                     REDUCE 1 t1 30 t2 40 s 8 r {reduce_r}\n\
                     SCAN 1 t1 50 t2 60 s {} r {}\n\
                     ALLREDUCE 1 t1 70 t2 80 s 32 r 32\n\
                     ALLGATHERV 1 t1 90 t2 99 s 112 r 112\n",
                    8 * (4 - r),
                    8 * (r + 1)
                )
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let parsed = ranks(&texts).unwrap();
        let m = meanings(&parsed);
        let lines = |r: usize| -> Vec<String> {
            rank_events(r as u32, &parsed[r], &m[r], 0)
                .map(|(e, _)| trace::raw::event_line(&e))
                .collect()
        };
        assert_eq!(
            lines(1),
            [
                "Bcast site=none comm=0 send=8/1 root=3",
                "Reduce site=none comm=0 send=8/1 root=0",
                "Scan site=none comm=0 send=8/1",
                "Allreduce site=none comm=0 send=8/1",
                "Allgatherv site=none comm=0 send=28/1 recv=0/1 rcounts=28,28,28,28",
            ]
        );
        // A rank whose records do not fit the reading keeps them as they
        // are, and so does the rest of that call.
        let mut odd: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        odd[2] = odd[2].replace(
            "SCAN 1 t1 50 t2 60 s 16 r 24",
            "SCAN 1 t1 50 t2 60 s 16 r 20",
        );
        let odd: Vec<&str> = odd.iter().map(String::as_str).collect();
        let parsed = ranks(&odd).unwrap();
        let m = meanings(&parsed);
        let scan: Vec<String> = (0..4)
            .map(|r| {
                trace::raw::event_line(
                    &rank_events(r, &parsed[r as usize], &m[r as usize], 0)
                        .nth(2)
                        .unwrap()
                        .0,
                )
            })
            .collect();
        assert_eq!(scan[0], "Scan site=none comm=0 send=32/1 recv=8/1");
        assert_eq!(scan[2], "Scan site=none comm=0 send=16/1 recv=20/1");
    }

    #[test]
    fn the_largest_times_and_byte_counts_are_accepted() {
        assert_eq!(
            line("Send 0 t1 9223372036854775806 t2 9223372036854775807 t 0 l 9007199254740992"),
            Record::P2p(P2p {
                op: Op::Send,
                peer: 0,
                start: 9_223_372_036_854_775_806,
                end: i64::MAX as u64,
                tag: 0,
                bytes: 1 << 53,
                msgid: None
            })
        );
        // A root's total of the largest counts on every rank does not
        // overflow the reading of the published meanings.
        let big = "BCAST 1 t1 1 t2 2 s 9007199254740992 r 9007199254740992\n";
        let parsed = ranks(&[big, big, big]).unwrap();
        let file = convert(parsed, Path::new("d")).unwrap();
        assert_eq!(file.trace.total_events(), 3);
    }

    #[test]
    fn every_rank_must_call_the_same_collectives_in_order() {
        let e = convert(
            ranks(&[
                "DEL1\nALLREDUCE 1 t1 1 t2 2 s 16 r 16\nBARRIER 1 t1 3 t2 4 s 0 r 0\n",
                "ALLREDUCE 1 t1 1 t2 2 s 16 r 16\n# the odd one\nBCAST 1 t1 3 t2 4 s 0 r 8\n",
            ])
            .unwrap(),
            Path::new("data"),
        )
        .unwrap_err();
        assert!(matches!(
            e,
            ImportError::Collectives {
                first: CollectiveError::Differ {
                    nth: 2,
                    first: At { rank: 0, line: 3 },
                    first_op: Op::Barrier,
                    other: At { rank: 1, line: 3 },
                    other_op: Op::Bcast,
                },
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "data: Process0.txt:3: the 2nd collective is Barrier, but Process1.txt:3, the 2nd \
             collective of rank 1, is Bcast: every rank must call the same collectives in the \
             same order"
        );
        // A rank that stops short, and one that has none at all.
        let e = convert(
            ranks(&[
                "ALLREDUCE 1 t1 1 t2 2 s 16 r 16\nBARRIER 1 t1 3 t2 4 s 0 r 0\n",
                "ALLREDUCE 1 t1 1 t2 2 s 16 r 16\n",
            ])
            .unwrap(),
            Path::new("data"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "data: Process0.txt:2: the 2nd collective, Barrier, is not called by rank 1: \
             Process1.txt has only 1 collective"
        );
        let e = convert(
            ranks(&["DEL1\n", "DEL1\nBARRIER 1 t1 3 t2 4 s 0 r 0\n"]).unwrap(),
            Path::new("data"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "data: Process1.txt:2: the 1st collective, Barrier, is not called by rank 0: \
             Process0.txt has only 0 collectives"
        );
        let same = ranks(&[
            "BARRIER 1 t1 3 t2 4 s 0 r 0\n",
            "BARRIER 1 t1 3 t2 5 s 0 r 0\n",
        ]);
        assert_eq!(collective_problem(&same.unwrap()), None);
    }

    #[test]
    fn names_that_look_like_rank_files_are_listed_not_read() {
        let dir =
            std::env::temp_dir().join(format!("rankscale-import-names-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in [
            "Process0.txt",
            "Process1.txt",
            "Process-1.txt",
            "process2.txt",
            "Process1.txt.bak",
            "PROCESS3.TXT",
            "Process.txt",
            "README.md",
            "test1.txt",
        ] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let found = scan_rank_files(&dir).unwrap();
        assert_eq!(
            found.files,
            [dir.join("Process0.txt"), dir.join("Process1.txt")]
        );
        assert_eq!(
            found.not_rank_files,
            [
                "PROCESS3.TXT",
                "Process-1.txt",
                "Process.txt",
                "Process1.txt.bak",
                "process2.txt"
            ]
        );
        assert_eq!(rank_files(&dir).unwrap(), found.files);
        // A leading zero stays an error: it could be another rank's file.
        std::fs::write(dir.join("Process01.txt"), "").unwrap();
        assert!(matches!(
            scan_rank_files(&dir),
            Err(ImportError::BadFileName { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn garbled_and_truncated_input_gives_errors_not_panics() {
        let good = [
            "Send 1 t1 100 t2 250 t 7 l 64 m 17",
            "Recv 0 t1 100 t2 250 t 7 l 64 m 17",
            "ALLREDUCE 1 t1 300 t2 400 s 8 r 8 m 2",
            "REDUCE_SCATTER 1 t1 500 t2 600 s 18446744073709551615 r 9223372036854775807 m 3",
            "DEL3",
            "BARRIER 1 t1 9223372036854775806 t2 9223372036854775807 s 0 r 0 m 4",
            "# comment",
            "",
        ];
        // xorshift64*: deterministic, no dependency.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut rnd = move |n: usize| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
        };
        let junk: &[u8] = b" \t0123456789-+#DELSendRecvtlmsr12\xff\xc3\r\n";
        let (mut errors, mut accepted) = (0, 0);
        for _ in 0..3000 {
            let mut files: Vec<Vec<u8>> = Vec::new();
            for _ in 0..1 + rnd(3) {
                let mut f = Vec::new();
                for _ in 0..rnd(6) {
                    let mut l = good[rnd(good.len())].as_bytes().to_vec();
                    match rnd(5) {
                        0 => l.truncate(rnd(l.len() + 1)),
                        1 if !l.is_empty() => {
                            let i = rnd(l.len());
                            l[i] = junk[rnd(junk.len())];
                        }
                        2 => {
                            let i = rnd(l.len() + 1);
                            l.insert(i, junk[rnd(junk.len())]);
                        }
                        3 => {
                            let words: Vec<&[u8]> = l.split(|&b| b == b' ').collect();
                            let (a, b) = (rnd(words.len()), rnd(words.len()));
                            let mut w = words.clone();
                            w.swap(a, b);
                            l = w.join(&b' ');
                        }
                        _ => {}
                    }
                    f.extend_from_slice(&l);
                    f.push(b'\n');
                }
                if rnd(4) == 0 {
                    f.truncate(rnd(f.len() + 1));
                }
                files.push(f);
            }
            let world = files.len() as u32;
            let parsed: Result<Vec<_>, _> = files
                .iter()
                .enumerate()
                .map(|(r, f)| parse_rank(Path::new(&format!("Process{r}.txt")), f, world))
                .collect();
            let result = parsed.and_then(|p| convert(p, Path::new("fuzz")));
            match result {
                Err(e) => {
                    errors += 1;
                    let msg = e.to_string();
                    assert!(
                        msg.contains("Process") && msg.contains(':'),
                        "error without a location: {msg}"
                    );
                }
                Ok(f) => {
                    accepted += 1;
                    // Whatever was accepted is a readable trace.
                    TraceFile::from_bytes(&f.to_bytes().unwrap()).unwrap();
                }
            }
        }
        assert!(errors > 100, "the garbling should break many inputs");
        assert!(accepted > 100, "and leave some whole");
    }
}
