//! The paths of the files a run opens or deletes through MPI-IO, kept
//! only where the run asks for them (`RANKSCALE_IO_PATHS=1`): the events
//! record a hash of each path, and this table gives the trace file's
//! [`trace::Meta::paths`], so that a report can name the files.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Path hash → path, in the order the trace file keeps them.
static PATHS: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

/// Remembers the path `bytes` under its `hash` (bytes that are not UTF-8
/// are kept with replacement characters: a report names the file, nothing
/// opens it again).
pub(crate) fn note(hash: u64, bytes: &[u8]) {
    if let Ok(mut m) = PATHS.lock() {
        m.entry(hash)
            .or_insert_with(|| String::from_utf8_lossy(bytes).into_owned());
    }
}

/// The paths noted so far, sorted by hash.
pub(crate) fn all() -> Vec<(u64, String)> {
    PATHS
        .lock()
        .map(|m| m.iter().map(|(k, v)| (*k, v.clone())).collect())
        .unwrap_or_default()
}
