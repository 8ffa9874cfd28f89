//! Call-site signatures that name source lines, not code addresses.
//!
//! A signature hashes the first `depth` *logical* frames of the call: the
//! function, source file (without directories), line and column of each,
//! with functions the compiler inlined counted as frames of their own. The
//! frames come from the module's DWARF line and inline information
//! (`addr2line`), looked up once per return address. So the signature
//! survives what moves code without changing its source: ASLR and PIE, a
//! rebuild for another rank count (NPB compiles the rank count into the
//! binary), an executable of another name, different neighbouring code, or
//! an inlining decision that changes with it. Extrapolation aligns traces
//! of such rebuilds by these signatures.
//!
//! Without debug information a frame falls back to the enclosing symbol and
//! the offset in it, and without a symbol to the module's file name and the
//! offset in it (the identity of one build only).
//!
//! At the default depth of 1 the caller's return address is enough (read from
//! the frame, about 2 ns) and its signature is cached per thread. Frames in
//! the MPI library itself (a Fortran binding calling the C entry point) and
//! in this shim are skipped by a real unwind; so are deeper signatures.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::handles::HandleMap;
use crate::os::sys::{Module, module_of, object_file};

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

/// One logical frame: its identity and how reports show it.
#[derive(Clone, Debug)]
struct Frame {
    /// Hash of what names the frame (source location, or symbol and offset,
    /// or module and offset).
    id: u64,
    /// `function file:line`, `symbol+0xoff` or `module+0xoff`.
    label: String,
}

/// Debug information of the modules seen so far, and every return address
/// already resolved into logical frames (innermost first).
#[derive(Default)]
struct Resolver {
    /// `None` when the module has no readable object file.
    loaders: HashMap<PathBuf, Option<addr2line::Loader>>,
    frames: HashMap<usize, Arc<[Frame]>>,
}

static RESOLVER: Mutex<Option<Resolver>> = Mutex::new(None);

/// The identity of a source location: function, file name without
/// directories, line and column.
fn source_id(function: &str, file: &str, line: u32, column: u32) -> u64 {
    let h = fnv(FNV_OFFSET, b"src\0");
    let h = fnv(h, function.as_bytes());
    let h = fnv(h, b"\0");
    let h = fnv(h, file.as_bytes());
    let h = fnv(h, &line.to_le_bytes());
    fnv(h, &column.to_le_bytes())
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The logical frames of the call whose return address is `ret`, in module
/// `m`.
fn logical_frames(m: &Module, ret: usize) -> Arc<[Frame]> {
    let Ok(mut guard) = RESOLVER.lock() else {
        return Arc::from(vec![module_frame(m, ret)]);
    };
    let r = guard.get_or_insert_with(Resolver::default);
    if let Some(f) = r.frames.get(&ret) {
        return Arc::clone(f);
    }
    let frames: Arc<[Frame]> = Arc::from(resolve(r, m, ret));
    r.frames.insert(ret, Arc::clone(&frames));
    frames
}

/// The module file name and offset: the identity of one build.
fn module_frame(m: &Module, ret: usize) -> Frame {
    let offset = ret.wrapping_sub(m.base);
    let h = fnv(FNV_OFFSET, m.name.as_bytes());
    Frame {
        id: fnv(h, &(offset as u64).to_le_bytes()),
        label: format!("{}+{offset:#x}", m.name),
    }
}

fn resolve(r: &mut Resolver, m: &Module, ret: usize) -> Vec<Frame> {
    let Some((path, bias)) = object_file(ret) else {
        return vec![module_frame(m, ret)];
    };
    let loader = r
        .loaders
        .entry(path)
        .or_insert_with_key(|p| addr2line::Loader::new(p).ok());
    let Some(loader) = loader.as_ref() else {
        return vec![module_frame(m, ret)];
    };
    // The return address follows the call instruction; the byte before it
    // is inside the call, on the call's line even when the next
    // instruction starts another one.
    let probe = (ret.wrapping_sub(bias) as u64).saturating_sub(1);
    let mut out = Vec::new();
    if let Ok(mut it) = loader.find_frames(probe) {
        while let Ok(Some(f)) = it.next() {
            let function = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok())
                .map(|n| n.into_owned());
            let Some(loc) = f.location else { continue };
            let (Some(file), Some(line)) = (loc.file, loc.line) else {
                continue;
            };
            let file = base_name(file);
            let function = function.unwrap_or_else(|| "?".to_string());
            out.push(Frame {
                id: source_id(&function, file, line, loc.column.unwrap_or(0)),
                label: format!("{function} {file}:{line}"),
            });
        }
    }
    if !out.is_empty() {
        return out;
    }
    if let Some(sym) = loader.find_symbol_info(probe) {
        let offset = probe + 1 - sym.address();
        let h = fnv(fnv(FNV_OFFSET, b"sym\0"), sym.name().as_bytes());
        return vec![Frame {
            id: fnv(h, &offset.to_le_bytes()),
            label: format!("{}+{offset:#x}", sym.name()),
        }];
    }
    vec![module_frame(m, ret)]
}

/// Folds logical frames into a signature.
fn fold(h: u64, f: &Frame) -> u64 {
    fnv(h, &f.id.to_le_bytes())
}

/// The label of a signature: its innermost frame, and the functions it
/// was inlined into.
fn label_of(frames: &[Frame]) -> String {
    let mut s = frames.first().map(|f| f.label.clone()).unwrap_or_default();
    for f in frames.iter().skip(1) {
        s.push_str(" < ");
        s.push_str(&f.label);
    }
    s
}

/// Entries of the per-thread direct-mapped cache in front of [`CACHE`].
const FAST_SLOTS: usize = 64;

thread_local! {
    /// The latest application return addresses and their signatures,
    /// direct-mapped by address: a loop's few call sites each keep a slot,
    /// and a hit costs one probe of a constant-initialised array instead of
    /// a hash-map look-up (the tracer asks on every call).
    static FAST: RefCell<[(usize, u64); FAST_SLOTS]> =
        const { RefCell::new([(0, 0); FAST_SLOTS]) };
    /// Signature by return address (`None`: a library frame, unwound).
    /// Looked up on every call, so with the shim's cheap hasher.
    static CACHE: RefCell<HandleMap<usize, Option<u64>>> = RefCell::new(HandleMap::default());
    /// Signatures this thread has already put into [`SITES`].
    static KNOWN: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Signature → label of the innermost application frame, for reports (the
/// trace file's call-site table).
static SITES: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

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
/// `ret`, with `depth` logical application frames.
pub(crate) fn signature(ret: usize, depth: usize) -> u64 {
    if depth == 1 && ret != 0 {
        let slot = (ret ^ (ret >> 6) ^ (ret >> 12)) % FAST_SLOTS;
        if let Ok(Some(sig)) = FAST.try_with(|f| {
            let (addr, sig) = f.borrow()[slot];
            (addr == ret).then_some(sig)
        }) {
            return sig;
        }
        // `Some(sig)`: an application frame; `None`: a library frame that
        // needs the slow path.
        let cached = CACHE.with(|c| c.borrow().get(&ret).copied());
        let hit = match cached {
            Some(v) => v,
            None => {
                let v = match module_of(ret) {
                    Some(m) if is_library(&m) => None,
                    Some(m) => {
                        let frames = logical_frames(&m, ret);
                        let sig = frames.first().map_or(FNV_OFFSET, |f| fold(FNV_OFFSET, f));
                        note(sig, || label_of(&frames));
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
            let _ = FAST.try_with(|f| f.borrow_mut()[slot] = (ret, sig));
            return sig;
        }
    }
    unwound(depth)
}

/// Walks the stack, skips tracer and MPI frames, and hashes `depth`
/// logical application frames.
fn unwound(depth: usize) -> u64 {
    let mut h = FNV_OFFSET;
    let mut taken = 0;
    let mut label = None;
    backtrace::trace(|frame| {
        let ip = frame.ip() as usize;
        if let Some(m) = module_of(ip) {
            if is_library(&m) {
                return true;
            }
            let frames = logical_frames(&m, ip);
            if label.is_none() {
                label = Some(label_of(&frames));
            }
            for f in frames.iter().take(depth - taken) {
                h = fold(h, f);
                taken += 1;
            }
        }
        taken < depth
    });
    if let Some(label) = label {
        note(h, || label);
    }
    h
}
