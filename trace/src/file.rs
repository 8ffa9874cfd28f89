//! The trace file: one per run, written by rank 0 at `MPI_Finalize`.
//!
//! # Layout
//!
//! | bytes | content |
//! |-------|---------|
//! | 8     | magic `RANKSCAL` |
//! | 4     | format version, little-endian `u32` ([`VERSION`]) |
//! | 4     | reserved, zero |
//! | rest  | zlib stream (flate2) of the postcard (serde, varint) encoding of [`TraceFile`]'s wire type (`TraceFileV13`) |
//!
//! postcard writes integers as LEB128 varints and structs without field
//! names, so the payload is small before compression; zlib adds a checksum,
//! so a corrupted file is detected rather than misread.
//!
//! The timing distributions are the only lossy part. Their minimum, mean
//! and maximum per bin are quantised ([`crate::timing::Dist`]), and a
//! distribution that holds under a thousandth of the trace's time
//! (computation and MPI) is kept as one bin
//! ([`crate::timing::NEGLIGIBLE_SHARE`]).
//!
//! # Reading
//!
//! [`TraceFile::read`] (or [`TraceFile::from_bytes`]) checks everything it
//! reads: magic, version, checksum, nesting depth and the consistency of
//! every value sequence and parameter layout. Every failure is an
//! [`Error`] that says what is wrong; no input makes it
//! panic. A file from a newer rankscale is refused with both versions named.
//!
//! ```no_run
//! let f = trace::TraceFile::read(std::path::Path::new("run.trace"))?;
//! for rank in f.trace.ranks().iter() {
//!     let t = f.trace.rank_trace(rank).expect("consistent trace");
//!     for ev in t.expand() {
//!         println!("{}", trace::raw::event_line(&ev));
//!     }
//! }
//! # Ok::<(), trace::Error>(())
//! ```

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::merged::MergedTrace;
use crate::merged::old::MergedTraceOld;

/// The merged trace of format versions 1 and 2.
type MergedTraceV2 = MergedTraceOld<crate::timing::PathTimingV2>;
/// The merged trace of format versions 3 to 6 (no timing variants).
type MergedTraceV6 = MergedTraceOld<crate::timing::PathTiming>;
use crate::series::MpiSeries;
use crate::timeline::Timeline;

/// The file magic.
pub const MAGIC: [u8; 8] = *b"RANKSCAL";
/// The format version this build writes and the newest it reads. Version 2
/// added the timelines, version 3 the slow-instance reservoirs
/// ([`crate::timing::Reservoir`]) and the MPI time series
/// ([`crate::series::MpiSeries`]); files of versions 1 and 2 are still read
/// (without them). Version 4 added the fields an extrapolation left
/// unverified ([`Meta::unverified`]), version 5 the trace's
/// [`Meta::origin`], version 6 the ranks recovered from a job that did not
/// finish ([`Meta::partial`]), version 7 the timing of events whose ranks
/// compute differently ([`crate::EventNode::timing_variants`]), version 8
/// the operations after `Pcontrol` (`trace/mpi-functions.txt`: the
/// persistent buffered and ready sends and every call recorded without
/// detail) under the same layout, so that a reader of version 7 refuses
/// such a file by its version instead of failing on an operation code,
/// version 9 the MPI error class of calls that failed ([`crate::Event::error`]),
/// under the same layout (one more shape flag), version 10 what an
/// extrapolation assumes ([`Meta::assumptions`]), version 11 the details of
/// one-sided calls ([`crate::Rma`]: shape flags above the sixteenth bit, so
/// that a reader of version 10 refuses such a file by its version), version
/// 12 the details of MPI-IO calls ([`crate::Io`]: shape flags above the
/// twentieth bit, likewise), version 13 the paths of the files a run
/// opened, where it asked to keep them ([`Meta::paths`]).
pub const VERSION: u32 = 13;
/// The largest payload the reader inflates (a guard against decompression
/// bombs; real traces are far smaller).
const MAX_PAYLOAD: u64 = 16 << 30;

/// An MPI library as its version string (`MPI_Get_library_version`, as
/// [`Meta::mpi`] keeps it) names it. The tracer and replay decide their
/// implementation workarounds from it, so they must read it the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpiLibrary {
    /// MPICH (or a derivative that says "MPICH Version:"), with its version.
    Mpich {
        /// Major version.
        major: u32,
        /// Minor version.
        minor: u32,
    },
    /// Open MPI.
    OpenMpi,
    /// Anything else, or an empty string.
    Other,
}

impl MpiLibrary {
    /// The library that `version` names.
    pub fn of(version: &str) -> MpiLibrary {
        let v = version.trim_start();
        if v.starts_with("Open MPI") {
            return MpiLibrary::OpenMpi;
        }
        let Some(rest) = v.split("MPICH Version:").nth(1) else {
            return MpiLibrary::Other;
        };
        let mut nums = rest
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .map(|x| x.parse::<u32>().unwrap_or(0));
        MpiLibrary::Mpich {
            major: nums.next().unwrap_or(0),
            minor: nums.next().unwrap_or(0),
        }
    }
}

/// What the trace was taken of and how: everything a reader needs besides
/// the events.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Meta {
    /// The rankscale version that wrote the file.
    pub tool: String,
    /// The MPI library (`MPI_Get_library_version`, first line).
    pub mpi: String,
    /// Number of ranks in `MPI_COMM_WORLD`.
    pub world_size: u32,
    /// The traced command line (rank 0's).
    pub command: Vec<String>,
    /// Wall time of rank 0 from `MPI_Init` to `MPI_Finalize`, ns.
    pub wall_ns: u64,
    /// Time of the inter-node merge at `MPI_Finalize`, ns (rank 0's view,
    /// from the start of the reduction to the merged trace in memory).
    pub merge_ns: u64,
    /// Call sites: signature → where the call is in the source, for
    /// reports: `function file:line` of the innermost frame (then `<` and
    /// the functions it was inlined into), or `symbol+0xoffset` without
    /// debug information.
    pub sites: Vec<(u64, String)>,
    /// For an extrapolated trace written with `--allow-unverified`: every
    /// field whose model no spare input confirmed, with its class, call,
    /// values and model. Empty for a trace a tool has fully verified, and
    /// for every traced run.
    pub unverified: Vec<String>,
    /// Where the trace came from, which decides what its times are: a
    /// measured run, a conversion, or a prediction.
    pub origin: Origin,
    /// Ranks whose part ends before their `MPI_Finalize`, by rank: a trace
    /// that `rankscale merge` recovered from the snapshots of a job that
    /// died, or that a rank wrote alone. Each says up to which event it
    /// holds the rank and why it ends there; a rank of `0..world_size` the
    /// trace does not hold at all left nothing. Empty for a finished run.
    pub partial: Vec<PartialRank>,
    /// For an extrapolated trace: what the extrapolation takes for granted
    /// and no input can verify (the same code paths and decomposition at
    /// the target, limits the inputs point at), one sentence each, as
    /// `extrap` printed them. A reader deciding on a machine from the file
    /// alone must see them. Empty for every other trace (format version
    /// 10 on).
    pub assumptions: Vec<String>,
    /// The paths of the files the run opened or deleted through MPI-IO,
    /// by the hash its events record ([`crate::Io::Open`]), kept only
    /// when the run set `RANKSCALE_IO_PATHS=1`: a path can name a user, a
    /// project or a data set that the trace's reader must not learn, so by
    /// default a trace says only which opens name one file. Sorted by
    /// hash; empty by default (format version 13 on).
    pub paths: Vec<(u64, String)>,
}

/// One rank's part of a trace that ends before the rank's `MPI_Finalize`
/// (see [`Meta::partial`]). Its events are exactly the first `events` the
/// rank made, so a reader can compare them with any other record of the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PartialRank {
    /// The world rank.
    pub rank: u32,
    /// Events held: the rank's first `events` calls.
    pub events: u64,
    /// What wrote this part: `periodic snapshot`, `SIGTERM`, `MPI_Abort`...
    pub cause: String,
    /// When it was written, ns since the rank's `MPI_Init`.
    pub at_ns: u64,
}

// The metadata of each earlier format version, written out field by field
// rather than shared with the next version's: a version's wire type is
// frozen, and must not change when a later one gains a field (the
// golden-file tests hold every version's bytes). Each converts into the
// next, so a reader upgrades an old file one version at a time.

/// The metadata of format version 5 (no [`Meta::partial`]).
#[derive(Deserialize)]
struct MetaV5 {
    tool: String,
    mpi: String,
    world_size: u32,
    command: Vec<String>,
    wall_ns: u64,
    merge_ns: u64,
    sites: Vec<(u64, String)>,
    unverified: Vec<String>,
    origin: Origin,
}

impl From<MetaV5> for Meta {
    fn from(m: MetaV5) -> Meta {
        Meta {
            tool: m.tool,
            mpi: m.mpi,
            world_size: m.world_size,
            command: m.command,
            wall_ns: m.wall_ns,
            merge_ns: m.merge_ns,
            sites: m.sites,
            unverified: m.unverified,
            origin: m.origin,
            partial: Vec::new(),
            assumptions: Vec::new(),
            paths: Vec::new(),
        }
    }
}

/// The metadata of format versions 6 to 9 (no [`Meta::assumptions`]):
/// version 5's, then the partial ranks. Postcard encodes a struct as its
/// fields in order, so the nested struct reads the same bytes as the
/// fields written out.
#[derive(Deserialize)]
struct MetaV9 {
    v5: MetaV5,
    partial: Vec<PartialRank>,
}

impl From<MetaV9> for Meta {
    fn from(m: MetaV9) -> Meta {
        Meta {
            partial: m.partial,
            ..m.v5.into()
        }
    }
}

/// The metadata of format versions 10 to 12 (no [`Meta::paths`]):
/// version 9's, then the assumptions.
#[derive(Deserialize)]
struct MetaV12 {
    v9: MetaV9,
    assumptions: Vec<String>,
}

impl From<MetaV12> for Meta {
    fn from(m: MetaV12) -> Meta {
        Meta {
            assumptions: m.assumptions,
            ..m.v9.into()
        }
    }
}

/// Where a trace came from. Reports label an extrapolated trace's times as
/// predictions, and a tool can tell a conversion from a measured run,
/// without reading a free-text tool string.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum Origin {
    /// Recorded by the tracer in a real run.
    #[default]
    Traced,
    /// Converted from another tool's trace by `rankscale import`.
    Imported {
        /// The input format (`pertext`).
        format: String,
    },
    /// Predicted by `rankscale extrap` from traces of these rank counts.
    Extrapolated {
        /// The inputs' rank counts, in increasing order.
        inputs: Vec<u32>,
    },
}

/// The name of the `pertext` format, as `rankscale import --format` takes
/// it and as the metadata of an imported trace records it
/// ([`Origin::Imported`]).
pub const PERTEXT: &str = "pertext";

impl Origin {
    /// The origin of a file of format version 4 or older, which had no
    /// field for it: extrapolation named its inputs in the tool string.
    fn legacy(tool: &str) -> Origin {
        let Some(rest) = tool.split(" extrap from ").nth(1) else {
            return Origin::Traced;
        };
        let inputs = rest
            .split_once('(')
            .and_then(|(_, r)| r.split_once(" ranks)"))
            .map(|(list, _)| list.split(", ").filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default();
        Origin::Extrapolated { inputs }
    }
}

/// The metadata of format version 4 (no [`Meta::origin`]).
#[derive(Deserialize)]
struct MetaV4 {
    tool: String,
    mpi: String,
    world_size: u32,
    command: Vec<String>,
    wall_ns: u64,
    merge_ns: u64,
    sites: Vec<(u64, String)>,
    unverified: Vec<String>,
}

impl From<MetaV4> for Meta {
    fn from(m: MetaV4) -> Meta {
        MetaV5 {
            origin: Origin::legacy(&m.tool),
            tool: m.tool,
            mpi: m.mpi,
            world_size: m.world_size,
            command: m.command,
            wall_ns: m.wall_ns,
            merge_ns: m.merge_ns,
            sites: m.sites,
            unverified: m.unverified,
        }
        .into()
    }
}

/// The metadata of format versions 1 to 3 (no [`Meta::unverified`]).
#[derive(Deserialize)]
struct MetaV3 {
    tool: String,
    mpi: String,
    world_size: u32,
    command: Vec<String>,
    wall_ns: u64,
    merge_ns: u64,
    sites: Vec<(u64, String)>,
}

impl From<MetaV3> for Meta {
    fn from(m: MetaV3) -> Meta {
        MetaV4 {
            tool: m.tool,
            mpi: m.mpi,
            world_size: m.world_size,
            command: m.command,
            wall_ns: m.wall_ns,
            merge_ns: m.merge_ns,
            sites: m.sites,
            unverified: Vec::new(),
        }
        .into()
    }
}

impl Meta {
    /// The label of each call site (`function file:line`, or
    /// `symbol+0xoffset` without debug information), by signature: every
    /// output names a call by it ([`site_text`]).
    pub fn site_labels(&self) -> std::collections::HashMap<u64, &str> {
        self.sites.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    /// Whether `rankscale extrap` wrote the file, so that its wall time is a
    /// prediction and not a measured run: reports label it as such.
    pub fn is_extrapolated(&self) -> bool {
        matches!(self.origin, Origin::Extrapolated { .. })
    }
}

/// A call site's label from [`Meta::site_labels`], or its signature in hex
/// when the trace has none. Signature 0 without a label is a trace that
/// knows no call sites (one imported from a format without them); it reads
/// as such rather than as a signature of zeros.
pub fn site_text(labels: &std::collections::HashMap<u64, &str>, site: u64) -> String {
    match labels.get(&site) {
        Some(l) => (*l).to_string(),
        None if site == 0 => NO_SITE.to_string(),
        None => format!("{site:016x}"),
    }
}

/// Adds `more` to a table of labels by hash ([`Meta::sites`],
/// [`Meta::paths`]), keeping it sorted with one label per hash: merging
/// ranks and extrapolating from inputs unite their tables alike. A hash
/// names one label in every run of a program (a call site's signature, a
/// path's FNV-1a hash), so the first entry of a hash stands for all.
pub fn unite_labels(table: &mut Vec<(u64, String)>, more: impl IntoIterator<Item = (u64, String)>) {
    table.extend(more);
    table.sort_unstable();
    table.dedup_by_key(|s| s.0);
}

/// What [`site_text`] says for a call whose trace has no call site.
pub const NO_SITE: &str = "(no call site in the trace)";

/// How hard the zlib stream of a file is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packing {
    /// As small as zlib makes it (level 9): the file a run leaves, with
    /// the distributions of negligible time kept as one bin each
    /// ([`crate::timing::NEGLIGIBLE_SHARE`]).
    Smallest,
    /// Quickly (level 1), every distribution whole: snapshots a rank
    /// writes while the application runs, or when it is being killed,
    /// where time matters more than size, and which `rankscale merge`
    /// merges later.
    Fast,
    /// Level 9, every distribution whole: a rank's part of a job that
    /// could not merge, which `rankscale merge` merges later. What is
    /// negligible is only known of the whole job.
    Part,
}

/// A trace file: metadata, the merged trace, and the optional timelines.
///
/// Not serialized itself: a file is written and read through the wire type
/// of its format version (`TraceFileV13` for the current one), so that a
/// change to this type cannot change the format unnoticed.
#[derive(Clone, Debug, Default)]
pub struct TraceFile {
    /// How the trace was taken.
    pub meta: Meta,
    /// The events of all ranks.
    pub trace: MergedTrace,
    /// Per-rank timestamps of every event (`RANKSCALE_TIMELINE=1`), by
    /// rank; empty when the run did not ask for them.
    pub timelines: Vec<Timeline>,
    /// Per-rank MPI time along the event sequence in bounded buckets
    /// (`RANKSCALE_STEPS=1`), by rank; empty when not asked for.
    pub series: Vec<MpiSeries>,
}

/// A version 1 file: no timelines.
#[derive(Deserialize)]
struct TraceFileV1 {
    meta: MetaV3,
    trace: MergedTraceV2,
}

/// A version 2 file: no MPI time series.
#[derive(Deserialize)]
struct TraceFileV2 {
    meta: MetaV3,
    trace: MergedTraceV2,
    timelines: Vec<Timeline>,
}

/// A version 3 file: no unverified fields in the metadata.
#[derive(Deserialize)]
struct TraceFileV3 {
    meta: MetaV3,
    trace: MergedTraceV6,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// A version 4 file: no origin in the metadata.
#[derive(Deserialize)]
struct TraceFileV4 {
    meta: MetaV4,
    trace: MergedTraceV6,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// A version 5 file: no partial ranks in the metadata.
#[derive(Deserialize)]
struct TraceFileV5 {
    meta: MetaV5,
    trace: MergedTraceV6,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// A version 6 file: no timing variants at the events.
#[derive(Deserialize)]
struct TraceFileV6 {
    meta: MetaV9,
    trace: MergedTraceV6,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// A file of versions 7 to 9: no assumptions in the metadata.
#[derive(Deserialize)]
struct TraceFileV9 {
    meta: MetaV9,
    trace: MergedTrace,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// A file of versions 10 to 12: no paths in the metadata (versions 11 and
/// 12 only let shapes carry the one-sided and MPI-IO flags).
#[derive(Deserialize)]
struct TraceFileV12 {
    meta: MetaV12,
    trace: MergedTrace,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// A file of version 13, the current layout ([`VERSION`]), as read. The
/// current version's wire type is written out like the older ones', so
/// that the format changes only where this type (or one of the types it
/// holds) does, never because [`TraceFile`] gained a field.
#[derive(Deserialize)]
struct TraceFileV13 {
    meta: Meta,
    trace: MergedTrace,
    timelines: Vec<Timeline>,
    series: Vec<MpiSeries>,
}

/// [`TraceFileV13`] as written: the same fields in the same order,
/// borrowed from the file in memory (postcard encodes a slice as it does a
/// `Vec`).
#[derive(Serialize)]
struct TraceFileV13Ref<'a> {
    meta: &'a Meta,
    trace: &'a MergedTrace,
    timelines: &'a [Timeline],
    series: &'a [MpiSeries],
}

impl From<TraceFileV13> for TraceFile {
    fn from(v: TraceFileV13) -> TraceFile {
        TraceFile {
            meta: v.meta,
            trace: v.trace,
            timelines: v.timelines,
            series: v.series,
        }
    }
}

impl<'a> From<&'a TraceFile> for TraceFileV13Ref<'a> {
    fn from(f: &'a TraceFile) -> TraceFileV13Ref<'a> {
        TraceFileV13Ref {
            meta: &f.meta,
            trace: &f.trace,
            timelines: &f.timelines,
            series: &f.series,
        }
    }
}

/// Why a payload is not exactly one value of its type.
enum Whole {
    /// The bytes do not decode.
    Decode(postcard::Error),
    /// The value ends before the bytes do, by this many.
    Trailing(usize),
}

/// Decodes a `T` that fills `bytes` exactly: bytes after a whole value
/// are damage (or something appended), never to be ignored.
fn whole<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, Whole> {
    match postcard::take_from_bytes::<T>(bytes) {
        Ok((v, [])) => Ok(v),
        Ok((_, rest)) => Err(Whole::Trailing(rest.len())),
        Err(e) => Err(Whole::Decode(e)),
    }
}

impl TraceFile {
    /// The file's bytes, as small as zlib makes them.
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        self.to_bytes_with(Packing::Smallest)
    }

    /// The file's bytes, packed as `packing` says (the format is the same:
    /// a reader cannot tell them apart). [`Packing::Smallest`] keeps the
    /// timing distributions of negligible time as one bin each (see
    /// [`crate::timing::NEGLIGIBLE_SHARE`]); the other packings and the
    /// merge's [`TraceFile::to_wire`] keep them whole.
    pub fn to_bytes_with(&self, packing: Packing) -> Result<Vec<u8>, Error> {
        let payload = if packing == Packing::Smallest {
            self.encode(&self.trace.condensed())?
        } else {
            self.to_wire()?
        };
        let mut out = Vec::with_capacity(16 + payload.len() / 4);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        let level = match packing {
            Packing::Smallest => flate2::Compression::best(),
            Packing::Fast => flate2::Compression::fast(),
            Packing::Part => flate2::Compression::best(),
        };
        let mut z = flate2::write::ZlibEncoder::new(out, level);
        z.write_all(&payload)
            .map_err(|e| Error::Corrupt(e.to_string()))?;
        z.finish().map_err(|e| Error::Corrupt(e.to_string()))
    }

    /// The uncompressed encoding used between ranks during the merge (the
    /// payload of the file without header and zlib: cheaper to produce, and
    /// the network does not need the checksum).
    pub fn to_wire(&self) -> Result<Vec<u8>, Error> {
        self.encode(&self.trace)
    }

    /// The payload of this file with `trace` as its merged trace.
    fn encode(&self, trace: &MergedTrace) -> Result<Vec<u8>, Error> {
        postcard::to_stdvec(&TraceFileV13Ref {
            trace,
            ..TraceFileV13Ref::from(self)
        })
        .map_err(|e| Error::Corrupt(e.to_string()))
    }

    /// Inverse of [`TraceFile::to_wire`], checked like a file.
    pub fn from_wire(bytes: &[u8]) -> Result<TraceFile, Error> {
        Self::decode(bytes, VERSION)
    }

    /// Decodes a payload of format `version` and checks it.
    fn decode(bytes: &[u8], version: u32) -> Result<TraceFile, Error> {
        crate::depth::take_exceeded();
        let decoded = match version {
            1 => whole::<TraceFileV1>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace.into(),
                timelines: Vec::new(),
                series: Vec::new(),
            }),
            2 => whole::<TraceFileV2>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace.into(),
                timelines: v.timelines,
                series: Vec::new(),
            }),
            3 => whole::<TraceFileV3>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace.into(),
                timelines: v.timelines,
                series: v.series,
            }),
            4 => whole::<TraceFileV4>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace.into(),
                timelines: v.timelines,
                series: v.series,
            }),
            5 => whole::<TraceFileV5>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace.into(),
                timelines: v.timelines,
                series: v.series,
            }),
            6 => whole::<TraceFileV6>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace.into(),
                timelines: v.timelines,
                series: v.series,
            }),
            7..=9 => whole::<TraceFileV9>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace,
                timelines: v.timelines,
                series: v.series,
            }),
            10..=12 => whole::<TraceFileV12>(bytes).map(|v| TraceFile {
                meta: v.meta.into(),
                trace: v.trace,
                timelines: v.timelines,
                series: v.series,
            }),
            _ => whole::<TraceFileV13>(bytes).map(TraceFile::from),
        };
        let f: TraceFile = decoded.map_err(|e| {
            Error::Corrupt(match e {
                _ if crate::depth::take_exceeded() => format!(
                    "trace data: loops nested deeper than {} levels",
                    crate::depth::MAX_DEPTH
                ),
                Whole::Decode(e) => format!("trace data does not decode ({e})"),
                Whole::Trailing(n) => {
                    format!("{n} bytes after the trace data inside the compressed stream")
                }
            })
        })?;
        if !f.trace.is_consistent() {
            return Err(Error::Corrupt(
                "trace data: parameters do not fit their events".into(),
            ));
        }
        f.trace
            .check_loops()
            .map_err(|e| Error::Corrupt(format!("trace data: {e}")))?;
        for t in &f.timelines {
            t.spans()?;
        }
        let ranks = f.timelines.iter().map(|t| ("timeline", t.rank));
        for (what, rank) in ranks.chain(f.series.iter().map(|s| ("MPI time series", s.rank))) {
            if !f.trace.ranks().contains(rank) {
                return Err(Error::Corrupt(format!(
                    "{what} of rank {rank}, which the trace does not hold"
                )));
            }
        }
        Ok(f)
    }

    /// The file as it reads back from its wire form
    /// (`from_wire(&to_wire())`): the only lossy part of the encoding,
    /// the timing distributions' quantisation, applied in memory. Five
    /// times cheaper than the round trip a binomial merge of 1,024 ranks
    /// would make through the bytes (every part travels ten times).
    pub fn quantised(mut self) -> TraceFile {
        self.trace.quantise();
        self
    }

    /// Writes the file all or nothing (see [`crate::output`]): to a
    /// temporary file beside `path`, then renamed, so that a reader never
    /// sees half a file and a failed write leaves the old file whole.
    pub fn write(&self, path: &Path) -> Result<u64, Error> {
        self.write_with(path, Packing::Smallest)
    }

    /// [`TraceFile::write`], packed as `packing` says.
    pub fn write_with(&self, path: &Path, packing: Packing) -> Result<u64, Error> {
        let bytes = self.to_bytes_with(packing)?;
        Ok(crate::output::write_file(path, &bytes, &[])?)
    }

    /// Writes the file into `out`, an output a command opened (and
    /// checked against its inputs) before its work, and commits it.
    pub fn write_output(&self, mut out: crate::output::Output) -> Result<u64, Error> {
        let bytes = self.to_bytes()?;
        std::io::Write::write_all(&mut out, &bytes).map_err(|error| Error::Io {
            path: out.path().to_path_buf(),
            error,
        })?;
        Ok(out.commit()?)
    }

    /// Reads and checks a file under the budgets of
    /// [`Limits::from_env`](crate::Limits::from_env).
    pub fn read(path: &Path) -> Result<TraceFile, Error> {
        let limits = crate::Limits::from_env().map_err(|e| Error::from(e).in_file(path))?;
        Self::read_limited(path, &limits)
    }

    /// Reads and checks a file under `limits` (see [`crate::limits`]).
    pub fn read_limited(path: &Path, limits: &crate::Limits) -> Result<TraceFile, Error> {
        let bytes = std::fs::read(path).map_err(|error| Error::Io {
            path: path.to_path_buf(),
            error,
        })?;
        TraceFile::from_bytes_limited(&bytes, limits).map_err(|e| e.in_file(path))
    }

    /// Parses and checks a file's bytes under the default budgets.
    pub fn from_bytes(bytes: &[u8]) -> Result<TraceFile, Error> {
        Self::from_bytes_limited(bytes, &crate::Limits::default())
    }

    /// Parses and checks a file's bytes: the header, exactly one zlib
    /// stream and nothing after it, a payload within the memory budget that
    /// decodes whole, and declared sizes within `limits`.
    pub fn from_bytes_limited(bytes: &[u8], limits: &crate::Limits) -> Result<TraceFile, Error> {
        if bytes.len() < 16 || bytes[..8] != MAGIC {
            return Err(Error::NotATrace);
        }
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let version = word(8);
        if version > VERSION {
            return Err(Error::NewerVersion {
                found: version,
                supported: VERSION,
            });
        }
        if version == 0 || word(12) != 0 {
            return Err(Error::Corrupt(format!(
                "bad header (version {version}, reserved word {})",
                word(12)
            )));
        }
        let cap = limits.max_payload().min(MAX_PAYLOAD);
        let mut payload = Vec::new();
        let mut z = flate2::bufread::ZlibDecoder::new(&bytes[16..]);
        (&mut z)
            .take(cap + 1)
            .read_to_end(&mut payload)
            .map_err(|e| Error::Corrupt(format!("compressed data: {e} (truncated file?)")))?;
        if payload.len() as u64 > cap {
            return Err(Error::Corrupt(format!(
                "the compressed data inflates to more than {cap} bytes, over the memory budget of {} bytes (raise it with --max-memory or RANKSCALE_MAX_MEMORY)",
                limits.memory
            )));
        }
        let after = z.get_ref().len();
        if after > 0 {
            return Err(Error::Corrupt(format!(
                "{after} bytes after the compressed trace data (a second stream, or bytes appended to the file)"
            )));
        }
        let f = TraceFile::decode(&payload, version)?;
        limits.check(
            f.meta.world_size,
            f.trace.ranks().max(),
            f.trace.total_events(),
        )?;
        Ok(f)
    }

    /// The MPI time series of `rank`, if the trace has one.
    pub fn series_of(&self, rank: u32) -> Option<&MpiSeries> {
        self.series
            .binary_search_by_key(&rank, |s| s.rank)
            .ok()
            .map(|i| &self.series[i])
    }

    /// The timeline of `rank`, if the trace has one.
    pub fn timeline(&self, rank: u32) -> Option<&Timeline> {
        self.timelines
            .binary_search_by_key(&rank, |t| t.rank)
            .ok()
            .map(|i| &self.timelines[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_text_names_labels_signatures_and_missing_sites() {
        let labels = std::collections::HashMap::from([(7u64, "main stencil.c:42")]);
        assert_eq!(site_text(&labels, 7), "main stencil.c:42");
        assert_eq!(site_text(&labels, 0xab), "00000000000000ab");
        assert_eq!(site_text(&labels, 0), NO_SITE);
        // A label for 0 (a trace that names it) wins.
        let zero = std::collections::HashMap::from([(0u64, "f a.c:1")]);
        assert_eq!(site_text(&zero, 0), "f a.c:1");
    }

    #[test]
    fn mpi_libraries_by_their_version_strings() {
        // The first lines these machines' libraries give.
        assert_eq!(
            MpiLibrary::of("MPICH Version:      4.0.2"),
            MpiLibrary::Mpich { major: 4, minor: 0 }
        );
        assert_eq!(
            MpiLibrary::of("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"),
            MpiLibrary::OpenMpi
        );
        assert_eq!(MpiLibrary::of(""), MpiLibrary::Other);
        assert_eq!(
            MpiLibrary::of("Intel(R) MPI Library 2021"),
            MpiLibrary::Other
        );
    }

    #[test]
    fn older_files_take_their_origin_from_the_tool_string() {
        // What `rankscale extrap` wrote before version 5.
        assert_eq!(
            Origin::legacy("rankscale 0.1.0 extrap from 3 traces (4, 8, 16 ranks)"),
            Origin::Extrapolated {
                inputs: vec![4, 8, 16]
            }
        );
        assert_eq!(Origin::legacy("rankscale 0.1.0"), Origin::Traced);
    }

    #[test]
    fn a_timeline_of_a_rank_without_events_is_refused() {
        let f = TraceFile {
            timelines: vec![Timeline::new(5, 0)],
            ..TraceFile::default()
        };
        let e = TraceFile::from_bytes(&f.to_bytes().unwrap()).unwrap_err();
        assert!(e.to_string().contains("rank 5"), "{e}");
    }

    #[test]
    fn header_errors_are_clear() {
        let mut one = TraceFile::default();
        one.meta.world_size = 1;
        let good = one.to_bytes().unwrap();
        assert!(matches!(
            TraceFile::from_bytes(b"hello world, not a trace"),
            Err(Error::NotATrace)
        ));
        let mut newer = good.clone();
        newer[8] = VERSION as u8 + 1;
        let e = TraceFile::from_bytes(&newer).unwrap_err();
        assert!(
            e.to_string().contains(&format!("version {}", VERSION + 1)),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains(&format!("rankscale reads version {VERSION}")),
            "{e}"
        );
        let cut = &good[..good.len() - 3];
        let e = TraceFile::from_bytes(cut).unwrap_err();
        assert!(matches!(e, Error::Corrupt(_)), "{e}");
        assert!(TraceFile::from_bytes(&good).is_ok());
    }
}
