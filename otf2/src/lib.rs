//! rankscale traces to and from OTF2 archives, the Open Trace Format 2 of
//! Score-P, Scalasca and Vampir (Eschweiler et al. 2011), through the OTF2
//! library itself (so that what it writes, OTF2's own tools read).
//!
//! - [`export`] writes a trace as an archive in the records Score-P
//!   writes for MPI; every call also carries its full parameters as the
//!   attribute [`EVENT_ATTRIBUTE`].
//! - [`import`] reads an archive back into a trace file: exactly, call by
//!   call, when the calls carry that attribute (an archive rankscale
//!   wrote); from the standard MPI records otherwise (an archive Score-P
//!   wrote).
//!
//! The calls into the C library are all in [`ffi`]; the mappings are safe
//! code.

pub mod ffi;
mod read;
mod scorep;
mod write;

use std::path::PathBuf;

pub use read::{Imported, Options, import, import_with};
pub use write::{Exported, export};

/// The name of the string attribute on every `Enter` that rankscale
/// writes: the call with every field of rankscale's event model (the
/// peers' ranks in the communicator and the caller's included, which the
/// raw-log grammar leaves out), postcard-encoded, in hex.
pub const EVENT_ATTRIBUTE: &str = "rankscale::event";

/// The name of the unsigned attribute on every `Enter` that rankscale
/// writes: the call's position among its rank's calls.
pub const SEQ_ATTRIBUTE: &str = "rankscale::seq";

/// The name of the string attribute on an `Enter` whose call site has a
/// source location in the trace (`function file:line`): what `show` and the
/// reports print for the site, kept through a round trip.
pub const SITE_ATTRIBUTE: &str = "rankscale::site";

/// The name of this format, as `rankscale import --format` takes it and as
/// an imported trace's metadata records it.
pub const OTF2: &str = "otf2";

/// Why an export or an import failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The OTF2 library reported an error.
    #[error(transparent)]
    Otf2(#[from] ffi::Error),
    /// Reading the trace's events or times failed.
    #[error(transparent)]
    Events(#[from] semantics::timed::Error),
    /// The output directory already holds an archive.
    #[error(
        "{0} already holds an OTF2 archive (traces.otf2 or traces/): OTF2 does not overwrite one; remove it or choose another directory"
    )]
    Exists(PathBuf),
    /// The archive holds something the import cannot take.
    #[error("{0}")]
    Archive(String),
    /// Building the trace failed.
    #[error("building the trace: {0}")]
    Trace(#[from] trace::Error),
}
