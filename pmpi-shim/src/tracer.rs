//! The tracer's state: what the shim knows about communicators, requests and
//! messages, and where events go. Safe Rust; the FFI modules feed it.
//!
//! Handles are stored as opaque `usize` keys (MPICH's `int` handles and Open
//! MPI's pointers alike), so nothing here depends on the MPI implementation.
//!
//! Concurrency: under `MPI_THREAD_MULTIPLE` every thread records on its own;
//! the re-entry guard and the timing state are thread-local, the registries
//! are behind short locks, and the sink is one mutex per process.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use compress::profile::Profile;
use compress::raw::RawLogWriter;
use compress::{CommId, Event, EventSink, Op, Peer, ReqId};

use crate::callsite;
use crate::config::Config;

/// What the tracer knows about one communicator.
#[derive(Debug)]
pub(crate) struct CommInfo {
    /// Stable id (creation order on this rank).
    pub id: CommId,
    /// Local rank → world rank; `None` for `MPI_COMM_WORLD` itself.
    pub to_world: Option<Box<[i32]>>,
}

impl CommInfo {
    /// The world rank of `local`, or -1 when it is out of range (which MPI
    /// would reject anyway; the tracer must not panic on it).
    pub fn world(&self, local: i32) -> i32 {
        match &self.to_world {
            None => local,
            Some(map) => usize::try_from(local)
                .ok()
                .and_then(|i| map.get(i).copied())
                .unwrap_or(-1),
        }
    }

    /// A peer argument as the event model names it.
    pub fn peer(&self, local: i32, any_source: i32, proc_null: i32) -> Peer {
        if local == any_source {
            Peer::Any
        } else if local == proc_null {
            Peer::Null
        } else {
            Peer::Rank {
                world: self.world(local),
                local,
            }
        }
    }
}

/// What the tracer knows about one live request.
#[derive(Debug, Clone)]
pub(crate) struct ReqInfo {
    /// Stable id.
    pub id: ReqId,
    /// Persistent requests survive completion until `MPI_Request_free`.
    pub persistent: bool,
    /// A receive with `MPI_ANY_SOURCE` or `MPI_ANY_TAG`: its completion
    /// records the matched source and tag.
    pub wildcard: bool,
    /// The communicator, to translate a matched source to a world rank.
    pub comm: Arc<CommInfo>,
}

/// A matched message of `MPI_Mprobe` / `MPI_Improbe`.
#[derive(Debug, Clone)]
pub(crate) struct MsgInfo {
    /// Stable id.
    pub id: u64,
    /// The communicator of the probe.
    pub comm: Arc<CommInfo>,
    /// The matched source, as a rank in `comm`.
    pub source: i32,
    /// The matched tag.
    pub tag: i32,
}

/// Per-process tracer state, created at `MPI_Init` / `MPI_Init_thread`.
pub(crate) struct Tracer {
    /// This process's rank in `MPI_COMM_WORLD`.
    pub rank: i32,
    /// Settings from the environment.
    pub config: Config,
    comms: RwLock<HashMap<usize, Arc<CommInfo>>>,
    next_comm: AtomicU32,
    reqs: Mutex<HashMap<usize, ReqInfo>>,
    next_req: AtomicU64,
    msgs: Mutex<HashMap<usize, MsgInfo>>,
    next_msg: AtomicU64,
    next_thread: AtomicU32,
    events: AtomicU64,
    sink: Mutex<Option<Box<dyn EventSink>>>,
    enabled: AtomicBool,
    epoch: Instant,
}

static TRACER: OnceLock<Tracer> = OnceLock::new();

thread_local! {
    /// Set while this thread is inside a wrapper: MPI calls made from there
    /// (by the MPI library's Fortran layer, by a helper) pass straight
    /// through, so no call is counted twice.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    static THREAD: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

#[derive(Default)]
struct ThreadState {
    /// Index of this thread on this rank; assigned on its first event.
    idx: Option<u32>,
    /// When this thread last left an MPI call (ns since epoch).
    last_leave: u64,
}

/// Prints a warning on stderr, prefixed so that it is clearly the tracer's.
///
/// The line goes out in one `write` call: launchers such as Open MPI's
/// forward each rank's stderr in chunks, and a line written piecemeal could
/// be interleaved with another rank's.
pub(crate) fn warn(rank: Option<i32>, msg: &str) {
    use std::io::Write;
    let line = match rank {
        Some(r) => format!("rankscale: warning: rank {r}: {msg}\n"),
        None => format!("rankscale: warning: {msg}\n"),
    };
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The tracer, if `MPI_Init` has run and tracing is on.
pub(crate) fn active() -> Option<&'static Tracer> {
    TRACER.get().filter(|t| t.enabled.load(Ordering::Relaxed))
}

/// The tracer whatever its state (for the FFI layer's bookkeeping).
pub(crate) fn get() -> Option<&'static Tracer> {
    TRACER.get()
}

/// Installs the tracer after `PMPI_Init` succeeded. Called once; a second
/// call (MPI forbids a second Init) is ignored.
pub(crate) fn install(
    rank: i32,
    config: Config,
    world: CommInfo,
    self_: CommInfo,
    keys: [usize; 2],
) {
    let sink: Option<Box<dyn EventSink>> = match &config.raw_dir {
        Some(dir) => match RawLogWriter::create(dir, rank) {
            Ok(w) => Some(Box::new(w)),
            Err(e) => {
                warn(
                    Some(rank),
                    &format!(
                        "cannot write the raw log ({e}); tracing is off for this rank, the application continues"
                    ),
                );
                None
            }
        },
        None => Some(Box::new(Profile::new())),
    };
    let enabled = sink.is_some();
    let mut comms = HashMap::new();
    comms.insert(keys[0], Arc::new(world));
    comms.insert(keys[1], Arc::new(self_));
    let t = Tracer {
        rank,
        config,
        comms: RwLock::new(comms),
        next_comm: AtomicU32::new(CommId::FIRST_CREATED),
        reqs: Mutex::new(HashMap::new()),
        next_req: AtomicU64::new(0),
        msgs: Mutex::new(HashMap::new()),
        next_msg: AtomicU64::new(0),
        next_thread: AtomicU32::new(0),
        events: AtomicU64::new(0),
        sink: Mutex::new(sink),
        enabled: AtomicBool::new(enabled),
        epoch: Instant::now(),
    };
    let _ = TRACER.set(t);
    install_panic_hook();
}

fn install_panic_hook() {
    // The shim's Rust runtime is its own (a cdylib links its own std), so this
    // hook only sees the tracer's panics, never the application's. It keeps
    // the message for the one warning printed by `Tracer::fail`.
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{payload}{place}")));
    }));
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

impl Tracer {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Turns tracing off for good and says why, once.
    pub fn fail(&self, why: &str) {
        if self.enabled.swap(false, Ordering::SeqCst) {
            warn(
                Some(self.rank),
                &format!("{why}; tracing is off for this rank, the application continues"),
            );
        }
    }

    /// Looks a communicator up by handle key.
    pub fn comm(&self, key: usize) -> Option<Arc<CommInfo>> {
        self.comms.read().ok()?.get(&key).cloned()
    }

    /// Registers a communicator under a fresh id. `to_world` is `None` only
    /// when the handle cannot be inspected (`MPI_COMM_NULL`).
    pub fn add_comm(&self, key: Option<usize>, to_world: Option<Box<[i32]>>) -> CommId {
        let id = CommId(self.next_comm.fetch_add(1, Ordering::Relaxed));
        if let Some(key) = key
            && let Ok(mut m) = self.comms.write()
        {
            m.insert(key, Arc::new(CommInfo { id, to_world }));
        }
        id
    }

    /// Forgets a freed communicator.
    pub fn remove_comm(&self, key: usize) {
        if let Ok(mut m) = self.comms.write() {
            m.remove(&key);
        }
    }

    /// Registers a new request and returns its id.
    pub fn add_req(
        &self,
        key: usize,
        persistent: bool,
        wildcard: bool,
        comm: Arc<CommInfo>,
    ) -> ReqId {
        let id = ReqId(self.next_req.fetch_add(1, Ordering::Relaxed));
        if let Ok(mut m) = self.reqs.lock() {
            m.insert(
                key,
                ReqInfo {
                    id,
                    persistent,
                    wildcard,
                    comm,
                },
            );
        }
        id
    }

    /// Looks requests up by handle key (before a completion call nulls them).
    pub fn reqs(&self, keys: &[usize]) -> Vec<Option<ReqInfo>> {
        match self.reqs.lock() {
            Ok(m) => keys.iter().map(|k| m.get(k).cloned()).collect(),
            Err(_) => vec![None; keys.len()],
        }
    }

    /// Forgets completed non-persistent requests (and freed ones when
    /// `free_persistent`).
    pub fn retire_reqs(&self, keys: &[usize], free_persistent: bool) {
        if let Ok(mut m) = self.reqs.lock() {
            for k in keys {
                if let Some(r) = m.get(k)
                    && (free_persistent || !r.persistent)
                {
                    m.remove(k);
                }
            }
        }
    }

    /// Moves a request to a new handle (Open MPI may swap it at `MPI_Start`).
    pub fn rekey_req(&self, old: usize, new: usize) {
        if old != new
            && let Ok(mut m) = self.reqs.lock()
            && let Some(r) = m.remove(&old)
        {
            m.insert(new, r);
        }
    }

    /// Registers a matched message and returns its id.
    pub fn add_msg(&self, key: usize, comm: Arc<CommInfo>, source: i32, tag: i32) -> u64 {
        let id = self.next_msg.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut m) = self.msgs.lock() {
            m.insert(
                key,
                MsgInfo {
                    id,
                    comm,
                    source,
                    tag,
                },
            );
        }
        id
    }

    /// Takes a matched message out of the registry (Mrecv/Imrecv use it up).
    pub fn take_msg(&self, key: usize) -> Option<MsgInfo> {
        self.msgs.lock().ok()?.remove(&key)
    }

    fn push(&self, ev: &Event) {
        let r = match self.sink.lock() {
            Ok(mut s) => match s.as_mut() {
                Some(sink) => sink.push(ev),
                None => Ok(()),
            },
            Err(_) => return self.fail("the event sink was poisoned"),
        };
        if let Err(e) = r {
            self.fail(&format!("cannot record events ({e})"));
        }
    }

    /// Flushes the sink; called at `MPI_Finalize` and `MPI_Abort`. Tracing
    /// stops afterwards.
    pub fn finish(&self) {
        let r = match self.sink.lock() {
            Ok(mut s) => s.take().map(|mut sink| sink.finish()),
            Err(_) => None,
        };
        if let Some(Err(e)) = r {
            self.fail(&format!("cannot write the trace ({e})"));
        }
        self.enabled.store(false, Ordering::SeqCst);
    }
}

/// One wrapper invocation between entering the wrapper and recording its
/// event. Holding a `Scope` means this thread is inside a wrapper: nested MPI
/// calls pass through. Dropping it (also on unwinding) clears that state.
pub(crate) struct Scope {
    tracer: &'static Tracer,
    ret: usize,
    enter: u64,
}

impl Scope {
    /// Enters a wrapper called from return address `ret`. `None` means "do
    /// not trace this call": tracing is off, or the call is nested inside
    /// another wrapper.
    #[inline]
    pub fn enter(ret: usize) -> Option<Scope> {
        let tracer = active()?;
        if BUSY.with(|b| b.replace(true)) {
            return None;
        }
        Some(Scope {
            tracer,
            ret,
            enter: tracer.now(),
        })
    }

    /// The tracer (for registry look-ups in the wrapper).
    #[inline]
    pub fn tracer(&self) -> &'static Tracer {
        self.tracer
    }

    /// Records the event: `fill` sets the operation's parameters. Panics in
    /// `fill` or in the sink are caught here: they turn tracing off with one
    /// warning and never reach the application.
    #[inline]
    pub fn record(self, op: Op, fill: impl FnOnce(&'static Tracer, &mut Event)) {
        let tracer = self.tracer;
        let leave = tracer.now();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let n = tracer.events.fetch_add(1, Ordering::Relaxed) + 1;
            if tracer.config.panic_at == Some(n) {
                panic!("fault injected by RANKSCALE_FAULT at event {n}");
            }
            let mut ev = Event::new(op);
            fill(tracer, &mut ev);
            ev.site = callsite::signature(self.ret, tracer.config.depth);
            THREAD.with(|ts| {
                let mut ts = ts.borrow_mut();
                let idx = *ts
                    .idx
                    .get_or_insert_with(|| tracer.next_thread.fetch_add(1, Ordering::Relaxed));
                ev.thread = idx;
                ev.time.enter_ns = self.enter;
                ev.time.dur_ns = leave.saturating_sub(self.enter);
                ev.time.compute_ns = if ts.last_leave == 0 {
                    0
                } else {
                    self.enter.saturating_sub(ts.last_leave)
                };
                ts.last_leave = leave;
            });
            tracer.push(&ev);
        }));
        if r.is_err() {
            let msg = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "unknown".into());
            tracer.fail(&format!("internal error in the tracer ({msg})"));
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        BUSY.with(|b| b.set(false));
    }
}

/// Whether this thread is inside a wrapper (a Fortran wrapper that forwards
/// to a Fortran binding which calls the C entry point, for instance).
pub(crate) fn nested() -> bool {
    BUSY.with(Cell::get)
}

/// Runs `f` with the re-entry guard set, without recording (for calls the
/// shim makes on its own behalf through `MPI_` entry points of the library).
pub(crate) fn untraced<R>(f: impl FnOnce() -> R) -> R {
    let prev = BUSY.with(|b| b.replace(true));
    let r = f();
    BUSY.with(|b| b.set(prev));
    r
}
