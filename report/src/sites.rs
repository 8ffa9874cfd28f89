//! Call-site labels: every output names a call by `function file:line` (or
//! `symbol+0xoffset` without debug information), from the table the trace
//! carries, and falls back to the signature where it has none.

use std::collections::HashMap;

use trace::TraceFile;

/// Labels of call sites (`function file:line`, or `symbol+0xoffset` without
/// debug information), by signature.
pub fn site_labels(file: &TraceFile) -> HashMap<u64, &str> {
    file.meta.site_labels()
}

/// A call site's label, or its signature in hex when the trace has none.
pub fn site_text(labels: &HashMap<u64, &str>, site: u64) -> String {
    trace::file::site_text(labels, site)
}
