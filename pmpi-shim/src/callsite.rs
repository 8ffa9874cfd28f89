//! Call-site signatures that are the same on every rank and in every run.
//!
//! A signature hashes, for each of the first `depth` application frames, the
//! file name of the module that contains it and the offset inside that
//! module. ASLR and PIE move modules, never offsets, so the signature is
//! stable; two different call instructions have different offsets, so two
//! source lines get different signatures.
//!
//! At the default depth of 1 the caller's return address is enough (read from
//! the frame, about 2 ns) and its signature is cached per thread. Frames in
//! the MPI library itself (a Fortran binding calling the C entry point) and
//! in this shim are skipped by a real unwind; so are deeper signatures.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use crate::ffi::sys::{Module, module_of};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// Whether frames in this module belong to MPI or to the tracer, and so are
/// not the application's call site.
fn is_library(m: &Module) -> bool {
    // `libmpi` also covers `libmpich`, `libmpichfort` and Open MPI's
    // `libmpi_mpifh` / `libmpi_usempif08`.
    const PREFIXES: [&str; 6] = [
        "libmpi",
        "libpmpi",
        "libopen-pal",
        "libopen-rte",
        "libucp",
        "libucs",
    ];
    m.is_self || PREFIXES.iter().any(|p| m.name.starts_with(p))
}

fn frame_hash(h: u64, m: &Module, offset: usize) -> u64 {
    let h = fnv(h, m.name.as_bytes());
    fnv(h, &(offset as u64).to_le_bytes())
}

thread_local! {
    static CACHE: RefCell<HashMap<usize, Option<u64>>> = RefCell::new(HashMap::new());
    /// Signatures this thread has already put into [`SITES`].
    static KNOWN: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Signature → `module+0xoffset` of the innermost application frame, for
/// reports (the trace file's call-site table).
static SITES: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

fn label(m: &Module, offset: usize) -> String {
    format!("{}+{offset:#x}", m.name)
}

/// Remembers the label of a signature, once per thread and signature.
fn note(sig: u64, label: impl FnOnce() -> String) {
    if KNOWN.with(|k| k.borrow_mut().insert(sig))
        && let Ok(mut m) = SITES.lock()
    {
        m.entry(sig).or_insert_with(label);
    }
}

/// The call sites seen so far with their labels.
pub(crate) fn sites() -> Vec<(u64, String)> {
    SITES
        .lock()
        .map(|m| m.iter().map(|(k, v)| (*k, v.clone())).collect())
        .unwrap_or_default()
}

/// The signature of the call whose wrapper was entered from return address
/// `ret`, with `depth` application frames.
pub(crate) fn signature(ret: usize, depth: usize) -> u64 {
    if depth == 1 && ret != 0 {
        // `Some(sig)`: an application frame; `None`: a library frame that
        // needs the slow path.
        let cached = CACHE.with(|c| c.borrow().get(&ret).copied());
        let hit = match cached {
            Some(v) => v,
            None => {
                let v = match module_of(ret) {
                    Some(m) if is_library(&m) => None,
                    Some(m) => {
                        let sig = frame_hash(FNV_OFFSET, &m, ret - m.base);
                        note(sig, || label(&m, ret - m.base));
                        Some(sig)
                    }
                    // A return address outside any known module still gets
                    // a signature of its own, so that nothing is merged
                    // wrongly.
                    None => Some(fnv(FNV_OFFSET, &ret.to_le_bytes())),
                };
                CACHE.with(|c| c.borrow_mut().insert(ret, v));
                v
            }
        };
        if let Some(sig) = hit {
            return sig;
        }
    }
    unwound(depth)
}

/// Walks the stack, skips tracer and MPI frames, and hashes `depth`
/// application frames.
fn unwound(depth: usize) -> u64 {
    let mut h = FNV_OFFSET;
    let mut taken = 0;
    let mut first = None;
    backtrace::trace(|frame| {
        let ip = frame.ip() as usize;
        if let Some(m) = module_of(ip) {
            if is_library(&m) {
                return true;
            }
            h = frame_hash(h, &m, ip - m.base);
            if taken == 0 {
                first = Some((m, ip));
            }
            taken += 1;
        }
        taken < depth
    });
    if let Some((m, ip)) = first {
        note(h, || label(&m, ip - m.base));
    }
    h
}
