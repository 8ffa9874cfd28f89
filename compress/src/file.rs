//! The trace file: one per run, written by rank 0 at `MPI_Finalize`.
//!
//! # Layout
//!
//! | bytes | content |
//! |-------|---------|
//! | 8     | magic `RANKSCAL` |
//! | 4     | format version, little-endian `u32` ([`VERSION`]) |
//! | 4     | reserved, zero |
//! | rest  | zlib stream (flate2) of the postcard (serde, varint) encoding of [`TraceFile`] |
//!
//! postcard writes integers as LEB128 varints and structs without field
//! names, so the payload is small before compression; zlib adds a checksum,
//! so a corrupted file is detected rather than misread.
//!
//! # Reading
//!
//! [`TraceFile::read`] (or [`TraceFile::from_bytes`]) checks everything it
//! reads: magic, version, checksum, nesting depth and the consistency of
//! every value sequence and parameter layout. Every failure is an
//! [`Error`](crate::Error) that says what is wrong; no input makes it
//! panic. A file from a newer rankscale is refused with both versions named.
//!
//! ```no_run
//! let f = compress::TraceFile::read(std::path::Path::new("run.trace"))?;
//! for rank in f.trace.ranks().iter() {
//!     let t = f.trace.rank_trace(rank).expect("consistent trace");
//!     for ev in t.expand() {
//!         println!("{}", compress::raw::event_line(&ev));
//!     }
//! }
//! # Ok::<(), compress::Error>(())
//! ```

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::merge::MergedTrace;

/// The file magic.
pub const MAGIC: [u8; 8] = *b"RANKSCAL";
/// The format version this build writes and the newest it reads.
pub const VERSION: u32 = 1;
/// The largest payload the reader inflates (a guard against decompression
/// bombs; real traces are far smaller).
const MAX_PAYLOAD: u64 = 16 << 30;

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
    /// Call sites: signature → `module+0xoffset` of the innermost frame,
    /// for reports.
    pub sites: Vec<(u64, String)>,
}

/// A trace file: metadata and the merged trace.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraceFile {
    /// How the trace was taken.
    pub meta: Meta,
    /// The events of all ranks.
    pub trace: MergedTrace,
}

impl TraceFile {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        let payload = self.to_wire()?;
        let mut out = Vec::with_capacity(16 + payload.len() / 4);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::best());
        z.write_all(&payload)
            .map_err(|e| Error::Corrupt(e.to_string()))?;
        z.finish().map_err(|e| Error::Corrupt(e.to_string()))
    }

    /// The uncompressed encoding used between ranks during the merge (the
    /// payload of the file without header and zlib: cheaper to produce, and
    /// the network does not need the checksum).
    pub fn to_wire(&self) -> Result<Vec<u8>, Error> {
        postcard::to_stdvec(self).map_err(|e| Error::Corrupt(e.to_string()))
    }

    /// Inverse of [`TraceFile::to_wire`], checked like a file.
    pub fn from_wire(bytes: &[u8]) -> Result<TraceFile, Error> {
        crate::depth::take_exceeded();
        let f: TraceFile = postcard::from_bytes(bytes).map_err(|e| {
            Error::Corrupt(if crate::depth::take_exceeded() {
                format!(
                    "trace data: loops nested deeper than {} levels",
                    crate::depth::MAX_DEPTH
                )
            } else {
                format!("trace data does not decode ({e})")
            })
        })?;
        if !f.trace.is_consistent() {
            return Err(Error::Corrupt(
                "trace data: parameters do not fit their events".into(),
            ));
        }
        Ok(f)
    }

    /// Merges the trace of another, disjoint, set of ranks (see
    /// [`MergedTrace::merge`]); call sites are united, the rest of the
    /// metadata is `self`'s.
    pub fn merge(self, other: TraceFile) -> TraceFile {
        let mut meta = self.meta;
        meta.sites.extend(other.meta.sites);
        meta.sites.sort_unstable();
        meta.sites.dedup_by_key(|s| s.0);
        TraceFile {
            meta,
            trace: self.trace.merge(other.trace),
        }
    }

    /// Writes the file (to a temporary name first, then renamed, so that a
    /// reader never sees half a file).
    pub fn write(&self, path: &Path) -> Result<u64, Error> {
        let bytes = self.to_bytes()?;
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        std::fs::write(&tmp, &bytes).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(bytes.len() as u64)
    }

    /// Reads and checks a file.
    pub fn read(path: &Path) -> Result<TraceFile, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        TraceFile::from_bytes(&bytes).map_err(|e| e.in_file(path))
    }

    /// Parses and checks a file's bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<TraceFile, Error> {
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
        let mut payload = Vec::new();
        flate2::read::ZlibDecoder::new(&bytes[16..])
            .take(MAX_PAYLOAD + 1)
            .read_to_end(&mut payload)
            .map_err(|e| Error::Corrupt(format!("compressed data: {e} (truncated file?)")))?;
        if payload.len() as u64 > MAX_PAYLOAD {
            return Err(Error::Corrupt("payload larger than 16 GiB".into()));
        }
        TraceFile::from_wire(&payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_errors_are_clear() {
        let good = TraceFile::default().to_bytes().unwrap();
        assert!(matches!(
            TraceFile::from_bytes(b"hello world, not a trace"),
            Err(Error::NotATrace)
        ));
        let mut newer = good.clone();
        newer[8] = 2;
        let e = TraceFile::from_bytes(&newer).unwrap_err();
        assert!(e.to_string().contains("version 2"), "{e}");
        assert!(e.to_string().contains("rankscale reads version 1"), "{e}");
        let cut = &good[..good.len() - 3];
        let e = TraceFile::from_bytes(cut).unwrap_err();
        assert!(matches!(e, Error::Corrupt(_)), "{e}");
        assert!(TraceFile::from_bytes(&good).is_ok());
    }
}
