//! Extrapolation of rankscale traces to larger rank counts (Wu and Mueller 2012 §3).
//!
//! ScalaExtrap's idea: in an SPMD stencil code, who communicates with whom
//! and how much follows from the shape of the process grid. Given traces of
//! the same program at a few small rank counts, we
//!
//! 1. detect each trace's communication topology ([`topology`]: grid sizes,
//!    torus or mesh, how far the stencil reaches, the groups of ranks with
//!    the same endpoint pattern and the corners);
//! 2. split the ranks into *position classes* (corner, edge, interior, per
//!    dimension as far as the stencil reaches): the communication groups of
//!    Wu and Mueller 2012 Fig. 8, which keep their place in the grid as it grows;
//! 3. align each class's event sequence across the inputs (one
//!    representative per class, checked against every other rank of the
//!    class) and fit every integer field (peer offsets, counts, tags,
//!    communicator sizes) as a function of the grid sizes ([`fit`]), and
//!    every timing field as a function of the rank count ([`models`]: the
//!    paper's four laws, the performance-model normal form, or the one that
//!    predicts held-out inputs better);
//! 4. compress each class's synthetic event sequence for the target size
//!    and combine the classes into one merged trace, the group ranklists
//!    computed from the target grid.
//!
//! The cost depends on the number of classes (9 for a 2D stencil) and the
//! length of one rank's event sequence, never on the target rank count: a
//! million ranks cost what 36 do.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod expr;
pub mod fit;
pub mod lossy;
pub mod models;
pub mod plugin;
mod synth;
pub mod topology;

pub use lossy::Snippet;
pub use models::Method;
pub use plugin::{Plugin, SpecPlugin};
pub use synth::{
    DimsOrder, Dropped, Extrapolated, FieldFit, Input, Options, Report, TimingChoice, Volume,
    WallPrediction, extrapolate,
};
pub use topology::{Group, Pos, Topology, detect};

/// Why a set of traces cannot be extrapolated. Every message names the
/// problem in the user's terms: the files, the sizes, the first event that
/// differs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A trace lacks a rank below its size.
    #[error("rank {0} is missing from the trace (a partial trace cannot be extrapolated)")]
    MissingRank(u32),
    /// An input holds a rank only up to some event: the snapshot of a job
    /// that died (`rankscale merge`), not a whole run.
    #[error(
        "{name}: rank {rank} holds only its first {events} events ({cause}): a trace of a job \
         that did not finish cannot be extrapolated"
    )]
    Partial {
        /// The input.
        name: String,
        /// The first rank that ends early.
        rank: u32,
        /// Its events.
        events: u64,
        /// What wrote its part.
        cause: String,
    },
    /// The trace could not be cut into ranks.
    #[error("the trace is inconsistent: {0}")]
    Trace(String),
    /// No grid explains the communication.
    #[error(
        "no row-major grid of 1 to 3 dimensions explains the communication: ranks in the same \
         position of a candidate grid talk to different peers; on {grid} (the most balanced \
         grid, or the Cartesian communicator's): {reason} (extrapolation handles SPMD stencil \
         and collective codes, as ScalaExtrap; use a plugin for other patterns, or --lossy to \
         leave out what few ranks do)"
    )]
    NoTopology {
        /// The grid the reason is given for, slowest dimension first.
        grid: String,
        /// Why that grid does not explain the peers.
        reason: String,
    },
    /// Fewer input traces than the topology needs.
    #[error(
        "{got} trace(s) given, but a {dims}D topology needs at least {need} at different sizes \
         ({why})"
    )]
    TooFewTraces {
        /// Traces given.
        got: usize,
        /// Traces needed.
        need: usize,
        /// Dimensions detected.
        dims: usize,
        /// Why that many: n+1 for n dimensions (Wu and Mueller 2012), 3
        /// where the grids read grow together, and those grids.
        why: String,
    },
    /// Two inputs have the same size.
    #[error("{a} and {b} both have {size} ranks: give each size once")]
    SameSize {
        /// First file.
        a: String,
        /// Second file.
        b: String,
        /// Their size.
        size: u64,
    },
    /// Inputs are not in increasing size.
    #[error(
        "traces must be given in increasing rank count: {a} ({sa} ranks) comes before {b} \
         ({sb} ranks); in order: {hint}"
    )]
    Order {
        /// The files in increasing rank count.
        hint: String,
        /// Earlier file.
        a: String,
        /// Its size.
        sa: u64,
        /// Later file.
        b: String,
        /// Its size.
        sb: u64,
    },
    /// Inputs have different topologies.
    #[error(
        "{a} is a {ta} but {b} is a {tb}: are these traces of the same program with the same \
         options?"
    )]
    TopologyMismatch {
        /// First file.
        a: String,
        /// Its topology.
        ta: String,
        /// Second file.
        b: String,
        /// Its topology.
        tb: String,
    },
    /// The target cannot be realised with the topology.
    #[error("{0}")]
    Unrealisable(String),
    /// Two inputs record different calls for the same class of ranks.
    #[error("{0}")]
    Mismatch(Box<Mismatch>),
    /// Ranks in the same position class behave differently.
    #[error(
        "{file}: ranks {r1} and {r2} are in the same position of the detected grid ({class}) but \
         record different calls or values, so the grid does not decide their behaviour (a \
         rank-dependent pattern: a --plugin spec names such peers, tags and counts, as \
         extrap/specs/npb-bt.toml does for NPB BT, or --lossy drops them); \
         {first}"
    )]
    Inhomogeneous {
        /// The file.
        file: String,
        /// The class.
        class: String,
        /// A rank.
        r1: u64,
        /// Another rank of the same class that differs.
        r2: u64,
        /// Their first differing event, in words.
        first: String,
    },
    /// A field cannot be fitted.
    #[error("{0}")]
    Field(Box<FieldError>),
    /// Fields whose model no spare input confirms: each line names the
    /// class, call, site, field, values per input and model.
    #[error(
        "{} field(s) fit the inputs but cannot be verified (no spare input confirms the model, \
         so the value at the target is a guess; laws tried: {}):\n  {}\ngive more input sizes, \
         or --allow-unverified to write the trace anyway (its metadata then lists these fields)",
        .0.len(),
        fit::LAWS,
        .0.join("\n  ")
    )]
    Unverified(Vec<String>),
    /// Lossy mode would drop more of an input than allowed.
    #[error(
        "lossy mode would drop {dropped} of {events} events ({share:.1} %) of {input}, more than \
         --max-drop {max} %: the pattern that would be kept is not what this program does"
    )]
    TooMuchDropped {
        /// The input.
        input: String,
        /// Events dropped.
        dropped: u64,
        /// Events in the input.
        events: u64,
        /// Percent dropped.
        share: f64,
        /// The limit, percent.
        max: f64,
    },
    /// A refusal once the inputs' grids are read, with those grids: a grid
    /// read other than the application has it (ranks numbered x fastest
    /// read in the other order) shows as a class or field that does not
    /// fit, and only the grids tell the user so.
    #[error("{error}\n(the grids read from the inputs: {grids})")]
    OnGrids {
        /// The refusal.
        error: Box<Error>,
        /// The grids read, by input, slowest dimension first and x fastest.
        grids: String,
    },
    /// The target sizes given by `--dims` are not usable.
    #[error("{0}")]
    BadDims(String),
    /// Building the output failed (a bug).
    #[error("internal error: {0}")]
    Internal(String),
}

/// The first event where two inputs' sequences for one class differ.
#[derive(Debug, thiserror::Error)]
#[error(
    "the traces differ structurally ({class}): event {index} is {ea} in {a} but {eb} in {b}; \
     are these traces of the same program with the same options?"
)]
pub struct Mismatch {
    /// The position class (which ranks).
    pub class: String,
    /// Index of the first differing event in the class's sequence.
    pub index: usize,
    /// First file.
    pub a: String,
    /// Its event.
    pub ea: String,
    /// Second file.
    pub b: String,
    /// Its event.
    pub eb: String,
}

/// A field no model fits, or more than one model fits differently.
#[derive(Debug, thiserror::Error)]
#[error("{class}, event {index} ({op}), field {field}: values {values}: {why}")]
pub struct FieldError {
    /// The class.
    pub class: String,
    /// Event index in the class's sequence.
    pub index: usize,
    /// The call.
    pub op: String,
    /// The field.
    pub field: String,
    /// The inputs' values with their grids.
    pub values: String,
    /// What went wrong.
    pub why: String,
}
