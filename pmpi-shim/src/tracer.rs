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
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use smallvec::SmallVec;

use compress::{RankRecorder, Recording};
use trace::raw::RawLogWriter;
use trace::{CommId, Event, EventSink, Meta, Op, Packing, PartialRank, Peer, ReqId, TraceFile};

use crate::callsite;
use crate::config::Config;
use crate::handles::HandleMap;
use crate::warn::warn;

/// What a handle in the communicators' id space is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A communicator.
    Comm,
    /// A window.
    Window,
    /// A window made by `MPI_Win_create_dynamic`: its target displacements
    /// are addresses on the target, which the trace does not keep (see
    /// [`crate::ffi::onesided`]).
    DynamicWindow,
    /// A file: requests of its nonblocking accesses are ROMIO's or ompio's
    /// own, which yield mode waits for with the blocking call.
    File,
}

/// What the tracer knows about one communicator, window or file.
#[derive(Debug)]
pub(crate) struct CommInfo {
    /// Stable id (creation order on this rank).
    pub id: CommId,
    /// Local rank → world rank; `None` for `MPI_COMM_WORLD` itself.
    pub to_world: Option<Box<[i32]>>,
    /// What the handle is.
    pub kind: Kind,
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
    /// For `MPI_Comm_idup`: the communicator it makes, bound to its handle
    /// when the request completes (Open MPI writes the handle only then).
    pub creates: Option<Arc<PendingComm>>,
}

/// A communicator whose constructor has not completed: its id is taken at
/// the call (creation order), its handle is read at completion.
#[derive(Debug)]
pub(crate) struct PendingComm {
    /// The id the constructor's event recorded.
    pub id: CommId,
    /// Local rank → world rank, as the parent's.
    pub to_world: Option<Box<[i32]>>,
    /// This process's rank in it.
    pub me: i32,
    /// The address of the application's `newcomm` argument.
    pub slot: usize,
    /// Whether that argument is a Fortran INTEGER handle (a call from
    /// Fortran), converted by `MPI_Comm_f2c` when read.
    pub fortran: bool,
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

/// What the tracer learns of the job at `MPI_Init`, for the metadata of
/// the files it writes (asked once: the snapshot thread must not call MPI).
pub(crate) struct Job {
    /// The size of `MPI_COMM_WORLD`.
    pub world_size: u32,
    /// `MPI_Get_library_version`, first line.
    pub mpi: String,
}

/// Per-process tracer state, created at `MPI_Init` / `MPI_Init_thread`.
pub(crate) struct Tracer {
    /// This process's rank in `MPI_COMM_WORLD`.
    pub rank: i32,
    /// The job, as the metadata names it.
    pub job: Job,
    /// Settings from the environment.
    pub config: Config,
    comms: RwLock<HandleMap<usize, Arc<CommInfo>>>,
    /// This process's rank in each communicator ever registered, by id
    /// (kept after `MPI_Comm_free`: ids are never reused).
    comm_ranks: RwLock<HandleMap<CommId, i32>>,
    next_comm: AtomicU32,
    /// Live requests by (handle, creating thread). A handle can stand for
    /// several live requests at once: MPICH hands out one shared,
    /// already-complete request handle for sends that completed on the spot,
    /// and under `MPI_THREAD_MULTIPLE` another thread may get a freed handle
    /// back before this thread has recorded its completion. Keying by thread
    /// keeps each thread's requests its own; within a key, requests are kept
    /// and taken in creation order. A request completed by another thread
    /// than its creator is found by a scan.
    reqs: Mutex<ReqMap>,
    msgs: Mutex<HandleMap<usize, MsgInfo>>,
    /// Memory attached to dynamic windows: (window key, base address,
    /// bytes). Few entries, touched by `Win_attach` and `Win_detach` only.
    attached: Mutex<Vec<(usize, usize, i64)>>,
    next_thread: AtomicU32,
    events: AtomicU64,
    sinks: Mutex<Sinks>,
    enabled: AtomicBool,
    /// `CLOCK_MONOTONIC` at `MPI_Init`, ns: every time the tracer records
    /// counts from here.
    epoch: u64,
    /// When tracing ended (`MPI_Finalize`'s entry), ns since `epoch`; 0
    /// while it runs. The trace's wall time ends here, not after the merge
    /// that follows (26 ms of a 189 ms run at 4 ranks, once counted in it,
    /// and the simulator's predictions looked 15 to 25 % short).
    ended_ns: AtomicU64,
    /// The snapshot thread, while it runs.
    snapshots: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Events in the last snapshot written (none is written twice), and
    /// whether writing one failed already (warned once).
    snapshot_events: AtomicU64,
    snapshot_failed: AtomicBool,
    /// The MPI error class of a non-zero return code: a function of the
    /// MPI membrane ([`crate::ffi`]), handed in at [`install`] so that the
    /// tracer never calls into the membrane that calls it.
    error_class: fn(c_int) -> i32,
}

/// Where events go: the raw log (`RANKSCALE_RAW`) and the on-the-fly
/// compressor whose trace is merged at `MPI_Finalize`. Either may be off; a
/// sink that fails is dropped with a warning and the other one goes on.
#[derive(Default)]
struct Sinks {
    raw: Option<RawLogWriter>,
    /// The rank's trace: compressed events, with the timeline and MPI time
    /// series when asked for.
    rec: Option<RankRecorder>,
}

static TRACER: OnceLock<Tracer> = OnceLock::new();

thread_local! {
    /// Set while this thread is inside a wrapper: MPI calls made from there
    /// (by the MPI library's Fortran layer, by a helper) pass straight
    /// through, so no call is counted twice.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    static THREAD: RefCell<ThreadState> = const {
        RefCell::new(ThreadState {
            idx: None,
            last_leave: 0,
            next_req: 0,
            next_msg: 0,
        })
    };
    /// The event each call of this thread is recorded into, renewed per
    /// call ([`Event::renew`]) so that its lists allocate only while they
    /// grow. Borrowed for the call, in place (an event is some 360 bytes:
    /// moving it out and back cost two copies per call); a nested record,
    /// or one during the thread's exit, records into a new event instead.
    static SCRATCH: RefCell<Event> = RefCell::new(Event::new(Op::Init));
}

struct ThreadState {
    /// Index of this thread on this rank; assigned on its first event.
    idx: Option<u32>,
    /// When this thread last left an MPI call (ns since epoch).
    last_leave: u64,
    /// How many requests and matched messages this thread has registered.
    next_req: u64,
    next_msg: u64,
}

impl ThreadState {
    /// This thread's index, taken from `next` (the rank's count of
    /// threads) on first use.
    fn index(&mut self, next: &AtomicU32) -> u32 {
        *self
            .idx
            .get_or_insert_with(|| next.fetch_add(1, Ordering::Relaxed))
    }
}

/// The tracer whatever its state (for the FFI layer's bookkeeping).
pub(crate) fn get() -> Option<&'static Tracer> {
    TRACER.get()
}

/// Installs the tracer after `PMPI_Init` succeeded and returns it. Called
/// once; a second call (MPI forbids a second Init) is ignored. The caller
/// starts the snapshot thread ([`Tracer::set_snapshots`]), which reads the
/// tracer, so that the two modules do not call each other.
pub(crate) fn install(
    rank: i32,
    job: Job,
    config: Config,
    world: CommInfo,
    self_: CommInfo,
    keys: [usize; 2],
    error_class: fn(c_int) -> i32,
) -> Option<&'static Tracer> {
    // Time zero (`now()` counts from here) and the wall clock then, the
    // timeline's epoch, read together.
    let (mono_epoch, wall_epoch) = crate::os::sys::clock_pair();
    let rec = config.trace_file.as_ref().map(|_| {
        let what = Recording {
            config: compress::Config {
                slow_instances: config.slow_k,
                ..compress::Config::default()
            },
            timeline_epoch: config.timeline.then_some(wall_epoch),
            series_buckets: config.steps.then_some(trace::series::DEFAULT_BUCKETS),
        };
        RankRecorder::new(u32::try_from(rank).unwrap_or(0), &what)
    });
    let raw = config
        .raw_dir
        .as_ref()
        .and_then(|dir| match RawLogWriter::create(dir, rank) {
            Ok(w) => Some(w),
            Err(e) => {
                let what = if rec.is_some() {
                    "no raw log for this rank; the trace file is still written"
                } else {
                    "tracing is off for this rank, the application continues"
                };
                warn(
                    Some(rank),
                    &format!("cannot write the raw log ({e}); {what}"),
                );
                None
            }
        });
    let sinks = Sinks { raw, rec };
    // Off when nothing was asked for (RANKSCALE_TRACE=0 without
    // RANKSCALE_RAW) or the raw log was all that was asked for and failed.
    let enabled = sinks.raw.is_some() || sinks.rec.is_some();
    let mut comm_ranks = HandleMap::default();
    comm_ranks.insert(world.id, rank);
    comm_ranks.insert(self_.id, 0);
    let mut comms = HandleMap::default();
    comms.insert(keys[0], Arc::new(world));
    comms.insert(keys[1], Arc::new(self_));
    if let Some(file) = &config.trace_file {
        // A file an earlier run of this rank left must not be taken for one
        // of this run.
        let _ = std::fs::remove_file(rank_file(file, rank));
    }
    let t = Tracer {
        rank,
        job,
        config,
        comms: RwLock::new(comms),
        comm_ranks: RwLock::new(comm_ranks),
        next_comm: AtomicU32::new(CommId::FIRST_CREATED),
        reqs: Mutex::new(ReqMap::default()),
        msgs: Mutex::new(HandleMap::default()),
        attached: Mutex::new(Vec::new()),
        next_thread: AtomicU32::new(0),
        events: AtomicU64::new(0),
        sinks: Mutex::new(sinks),
        enabled: AtomicBool::new(enabled),
        epoch: mono_epoch,
        ended_ns: AtomicU64::new(0),
        snapshots: Mutex::new(None),
        snapshot_events: AtomicU64::new(0),
        snapshot_failed: AtomicBool::new(false),
        error_class,
    };
    let _ = TRACER.set(t);
    install_panic_hook();
    TRACER.get()
}

/// This rank's file in the directory of `trace_file`'s per-rank files.
pub(crate) fn rank_file(trace_file: &std::path::Path, rank: i32) -> std::path::PathBuf {
    crate::config::rank_dir(trace_file).join(format!("rank-{rank}"))
}

/// The traced command line (this process's).
fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Fills the metadata every file the tracer writes carries: tool, MPI
/// library, job size, command line and wall time.
pub(crate) fn describe(meta: &mut Meta, mpi: String, world_size: u32, wall_ns: u64) {
    meta.tool = format!("rankscale {}", env!("CARGO_PKG_VERSION"));
    meta.mpi = mpi;
    meta.world_size = world_size;
    meta.command = command_line();
    meta.wall_ns = wall_ns;
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
        crate::os::sys::monotonic_ns().saturating_sub(self.epoch)
    }

    /// Turns tracing off for good and says why, once.
    pub fn fail(&self, why: &str) {
        // A trace that stops in the middle would expand to a wrong event
        // sequence: this rank leaves the merged trace instead.
        let mut s = self.sinks.lock().unwrap_or_else(|p| p.into_inner());
        s.rec = None;
        drop(s);
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

    /// Registers a communicator under a fresh id; `key` is `None` for
    /// `MPI_COMM_NULL` (the id is consumed all the same, see [`CommId`]).
    pub fn add_comm(&self, key: Option<usize>, to_world: Option<Box<[i32]>>, me: i32) -> CommId {
        let id = self.reserve_comm();
        if let Some(key) = key {
            self.bind_comm(key, id, to_world, me);
        }
        id
    }

    /// Takes the next communicator id for a constructor whose handle comes
    /// later ([`PendingComm`]).
    pub fn reserve_comm(&self) -> CommId {
        CommId(self.next_comm.fetch_add(1, Ordering::Relaxed))
    }

    /// Registers communicator `id` under handle key `key`.
    pub fn bind_comm(&self, key: usize, id: CommId, to_world: Option<Box<[i32]>>, me: i32) {
        self.bind(
            key,
            me,
            CommInfo {
                id,
                to_world,
                kind: Kind::Comm,
            },
        );
    }

    /// Registers a communicator or window under handle key `key`, with
    /// this process's rank in it.
    pub fn bind(&self, key: usize, me: i32, info: CommInfo) {
        let id = info.id;
        if let Ok(mut m) = self.comms.write() {
            m.insert(key, Arc::new(info));
        }
        if let Ok(mut r) = self.comm_ranks.write() {
            r.insert(id, me);
        }
    }

    /// This process's rank in communicator `id` (-1 if unknown).
    pub fn comm_rank(&self, id: CommId) -> i32 {
        self.comm_ranks
            .read()
            .ok()
            .and_then(|r| r.get(&id).copied())
            .unwrap_or(-1)
    }

    /// Forgets a freed communicator (or window, with what it had
    /// attached).
    pub fn remove_comm(&self, key: usize) {
        if let Ok(mut m) = self.comms.write() {
            m.remove(&key);
        }
        if let Ok(mut a) = self.attached.lock() {
            a.retain(|(w, _, _)| *w != key);
        }
    }

    /// Notes the memory `Win_attach` attached to a dynamic window, so
    /// that its `Win_detach` can record the same size.
    pub fn attach(&self, win: usize, base: usize, size: i64) {
        if let Ok(mut a) = self.attached.lock() {
            a.push((win, base, size));
        }
    }

    /// The size of the memory attached at `base`, forgotten now (0 when
    /// none was).
    pub fn detach(&self, win: usize, base: usize) -> i64 {
        let Ok(mut a) = self.attached.lock() else {
            return 0;
        };
        match a.iter().position(|&(w, b, _)| w == win && b == base) {
            Some(i) => a.swap_remove(i).2,
            None => 0,
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
        self.add_req_info(key, |id| ReqInfo {
            id,
            persistent,
            wildcard,
            comm,
            creates: None,
        })
    }

    /// Registers the request of a nonblocking communicator constructor.
    pub fn add_creating_req(&self, key: usize, comm: Arc<CommInfo>, creates: PendingComm) -> ReqId {
        self.add_req_info(key, |id| ReqInfo {
            id,
            persistent: false,
            wildcard: false,
            comm,
            creates: Some(Arc::new(creates)),
        })
    }

    fn add_req_info(&self, key: usize, info: impl FnOnce(ReqId) -> ReqInfo) -> ReqId {
        let me = self.thread_index();
        let id = ReqId(Self::next_id(me, |ts| &mut ts.next_req));
        if let Ok(mut m) = self.reqs.lock() {
            m.entry((key, me)).or_default().push(info(id));
        }
        id
    }

    /// Looks requests up by handle key (before a completion call nulls
    /// them). The k-th occurrence of a handle in `keys` names the k-th live
    /// request behind it, so an array holding one shared handle several
    /// times maps to distinct requests.
    pub fn reqs(&self, keys: &[usize]) -> Reqs {
        let me = self.thread_index();
        let Ok(m) = self.reqs.lock() else {
            return smallvec::smallvec![None; keys.len()];
        };
        // Occurrence counting: quadratic scans for the usual short arrays,
        // a map for long ones.
        let mut seen: HashMap<usize, usize> = HashMap::new();
        keys.iter()
            .enumerate()
            .map(|(i, k)| {
                let nth = if keys.len() <= 16 {
                    keys[..i].iter().filter(|x| *x == k).count()
                } else {
                    let n = seen.entry(*k).or_default();
                    *n += 1;
                    *n - 1
                };
                req_queue(&m, *k, me).and_then(|q| q.get(nth)).cloned()
            })
            .collect()
    }

    /// Forgets completed non-persistent requests (and freed ones when
    /// `free_persistent`): one live request per occurrence of its handle,
    /// oldest first.
    pub fn retire_reqs(&self, keys: &[usize], free_persistent: bool) {
        let me = self.thread_index();
        if let Ok(mut m) = self.reqs.lock() {
            for &k in keys {
                let Some(owner) = req_owner(&m, k, me) else {
                    continue;
                };
                if let Some(q) = m.get_mut(&(k, owner)) {
                    if let Some(pos) = q.iter().position(|r| free_persistent || !r.persistent) {
                        q.remove(pos);
                    }
                    if q.is_empty() {
                        m.remove(&(k, owner));
                    }
                }
            }
        }
    }

    /// Moves a request to a new handle (Open MPI may swap it at `MPI_Start`).
    pub fn rekey_req(&self, old: usize, new: usize) {
        if old == new {
            return;
        }
        let me = self.thread_index();
        if let Ok(mut m) = self.reqs.lock()
            && let Some(owner) = req_owner(&m, old, me)
            && let Some(q) = m.get_mut(&(old, owner))
        {
            let r = q.remove(0);
            if q.is_empty() {
                m.remove(&(old, owner));
            }
            m.entry((new, owner)).or_default().push(r);
        }
    }

    /// The next request or message id of thread `me`: its own counter
    /// in the low 40 bits, the thread index above. Ids then depend only on
    /// each thread's own sequence of calls, not on how the threads
    /// interleave, so a replay (one thread per recorded thread) reproduces
    /// them; on the main thread they are plain counts.
    fn next_id(me: u32, counter: impl FnOnce(&mut ThreadState) -> &mut u64) -> u64 {
        THREAD.with(|ts| {
            let mut ts = ts.borrow_mut();
            let c = counter(&mut ts);
            let id = (u64::from(me) << 40) | *c;
            *c += 1;
            id
        })
    }

    /// This thread's index on this rank, assigned on first use.
    pub fn thread_index(&self) -> u32 {
        THREAD.with(|ts| ts.borrow_mut().index(&self.next_thread))
    }

    /// Registers a matched message and returns its id.
    pub fn add_msg(&self, key: usize, comm: Arc<CommInfo>, source: i32, tag: i32) -> u64 {
        let id = Self::next_id(self.thread_index(), |ts| &mut ts.next_msg);
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
        let Ok(mut s) = self.sinks.lock() else {
            return self.fail("the event sink was poisoned");
        };
        if let Some(raw) = &mut s.raw
            && let Err(e) = raw.push(ev)
        {
            s.raw = None;
            warn(
                Some(self.rank),
                &format!("cannot write the raw log ({e}); the raw log stops here"),
            );
        }
        if let Some(r) = &mut s.rec
            && let Err(e) = r.push(ev)
        {
            s.rec = None;
            warn(
                Some(self.rank),
                &format!("cannot compress events ({e}); this rank will be missing from the trace"),
            );
        }
        if s.raw.is_none() && s.rec.is_none() {
            drop(s);
            self.fail("no sink left");
        }
    }

    /// Flushes the raw log and ends the recording; called at `MPI_Finalize`
    /// and `MPI_Abort`. Tracing stops afterwards. Returns this rank's part
    /// of the trace file (its compressed trace, with its timeline and
    /// series when asked for), if it has one.
    pub fn finish(&self) -> Option<TraceFile> {
        self.ended_ns.store(self.now().max(1), Ordering::SeqCst);
        self.stop_snapshots();
        self.enabled.store(false, Ordering::SeqCst);
        let (raw, rec) = match self.sinks.lock() {
            Ok(mut s) => (s.raw.take(), s.rec.take()),
            Err(_) => (None, None),
        };
        if let Some(mut raw) = raw
            && let Err(e) = raw.finish()
        {
            warn(Some(self.rank), &format!("cannot write the raw log ({e})"));
        }
        match rec.map(RankRecorder::finish) {
            Some(Ok(part)) => Some(part),
            Some(Err(e)) => {
                warn(Some(self.rank), &format!("cannot end compression ({e})"));
                None
            }
            None => None,
        }
    }

    /// Keeps the snapshot thread's handle, so that [`Tracer::finish`] can
    /// end it.
    pub(crate) fn set_snapshots(&self, h: Option<std::thread::JoinHandle<()>>) {
        if let Ok(mut slot) = self.snapshots.lock() {
            *slot = h;
        }
    }

    /// Time from `MPI_Init` to the end of tracing (`MPI_Finalize`'s
    /// entry), or to now while tracing runs, ns: the run's wall time as
    /// the trace reports it.
    pub fn elapsed_ns(&self) -> u64 {
        match self.ended_ns.load(Ordering::SeqCst) {
            0 => self.now(),
            ended => ended,
        }
    }

    /// Ends the snapshot thread (and puts the signal actions back), so
    /// that no snapshot is written after the trace is finished.
    fn stop_snapshots(&self) {
        crate::os::signals::uninstall();
        let h = self.snapshots.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = h {
            crate::os::signals::stop();
            let _ = h.join();
        }
    }

    /// Writes this rank's trace so far to `TRACE.d/rank-N`, saying that it
    /// ends here because of `cause`. The raw log is flushed up to the same
    /// event. A periodic snapshot with no new event is not written again.
    /// Called by the snapshot thread; never calls MPI.
    pub fn snapshot(&self, cause: &str, periodic: bool) {
        let part = {
            let Ok(mut s) = self.sinks.lock() else { return };
            if let Some(raw) = &mut s.raw {
                let _ = raw.finish();
            }
            let Some(rec) = &s.rec else { return };
            if periodic && rec.events() == self.snapshot_events.load(Ordering::Relaxed) {
                return;
            }
            rec.snapshot()
        };
        let events = part.trace.total_events();
        match self.write_rank_file(part, Some(cause)) {
            Ok(_) => self.snapshot_events.store(events, Ordering::Relaxed),
            Err(e) => {
                if !self.snapshot_failed.swap(true, Ordering::Relaxed) {
                    warn(
                        Some(self.rank),
                        &format!("cannot write a snapshot of the trace ({e}); tracing goes on"),
                    );
                }
            }
        }
    }

    /// Writes `part`, this rank's trace, to its file in `TRACE.d`: complete
    /// (`cause` is `None`), or ending before `MPI_Finalize` for `cause`.
    /// The file is a trace file of one rank, written atomically (temporary
    /// name, then rename), so that a reader never sees half of one.
    pub fn write_rank_file(
        &self,
        mut part: TraceFile,
        cause: Option<&str>,
    ) -> Result<std::path::PathBuf, String> {
        let Some(trace_file) = &self.config.trace_file else {
            return Err("no trace file was asked for".into());
        };
        let path = rank_file(trace_file, self.rank);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let at_ns = self.elapsed_ns();
        describe(
            &mut part.meta,
            self.job.mpi.clone(),
            self.job.world_size,
            at_ns,
        );
        part.meta.sites = crate::callsite::sites();
        part.meta.paths = crate::paths::all();
        if let Some(cause) = cause {
            part.meta.partial = vec![PartialRank {
                rank: u32::try_from(self.rank).unwrap_or(0),
                events: part.trace.total_events(),
                cause: cause.to_string(),
                at_ns,
            }];
        }
        part.trace.normalize();
        // A snapshot is written while the application runs (or is being
        // killed): packed quickly, not as small as zlib can. Either kind of
        // part keeps its timing whole for the merge that follows.
        let packing = if cause.is_some() {
            Packing::Fast
        } else {
            Packing::Part
        };
        part.write_with(&path, packing).map_err(|e| e.to_string())?;
        Ok(path)
    }
}

/// The live requests behind one handle of one thread, oldest first: nearly
/// always one, kept inline so that registering a request allocates nothing.
type ReqQueue = SmallVec<[ReqInfo; 1]>;

type ReqMap = HandleMap<(usize, u32), ReqQueue>;

/// What a completion call's requests are, one entry per handle (`None` for
/// a handle the tracer does not know); inline for up to 8 handles.
pub(crate) type Reqs = SmallVec<[Option<ReqInfo>; 8]>;

/// Handle keys of a request array; inline for up to 8 handles.
pub(crate) type Keys = SmallVec<[usize; 8]>;

/// The thread whose live requests include handle `key`: this thread if it
/// has one, else any other (a request completed by another thread).
fn req_owner(m: &ReqMap, key: usize, me: u32) -> Option<u32> {
    if m.get(&(key, me)).is_some_and(|q| !q.is_empty()) {
        return Some(me);
    }
    m.keys().find(|(k, _)| *k == key).map(|(_, t)| *t)
}

fn req_queue(m: &ReqMap, key: usize, me: u32) -> Option<&ReqQueue> {
    m.get(&(key, req_owner(m, key, me)?))
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
        let tracer = TRACER.get()?;
        // With tracing off (it failed, or nothing was asked for), a wrapper
        // still runs in yield mode, recording nothing: yielding waits turn
        // blocking collectives into nonblocking ones, and a nonblocking
        // collective must never meet a blocking one on another rank (MPI
        // does not match them; mixing them gave wrong results on MPICH).
        if !tracer.enabled.load(Ordering::Relaxed) && !tracer.config.yield_wait {
            return None;
        }
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

    /// Records the event of a call that returned `rc`: `fill` sets the
    /// operation's parameters. A call that failed (`rc` not
    /// `MPI_SUCCESS`, under `MPI_ERRORS_RETURN`) did nothing and its
    /// arguments may be invalid, so `fill` is not run: the event holds the
    /// error class and its time ([`Event::error`]). Panics in `fill` or in
    /// the sink are caught here: they turn tracing off with one warning and
    /// never reach the application.
    #[inline]
    pub fn record(self, op: Op, rc: c_int, fill: impl FnOnce(&'static Tracer, &mut Event)) {
        let tracer = self.tracer;
        if !tracer.enabled.load(Ordering::Relaxed) {
            return;
        }
        let error = (rc != 0).then(|| (tracer.error_class)(rc));
        let leave = tracer.now();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let n = tracer.events.fetch_add(1, Ordering::Relaxed) + 1;
            if tracer.config.panic_at == Some(n) {
                panic!("fault injected by RANKSCALE_FAULT at event {n}");
            }
            let mut write = Some(|ev: &mut Event| {
                ev.renew(op);
                match error {
                    None => fill(tracer, ev),
                    Some(class) => ev.error = Some(class),
                }
                ev.site = callsite::signature(self.ret, tracer.config.depth);
                if ev.names_comm() {
                    ev.comm_rank = tracer.comm_rank(ev.comm);
                }
                THREAD.with(|ts| {
                    let mut ts = ts.borrow_mut();
                    ev.thread = ts.index(&tracer.next_thread);
                    ev.time.enter_ns = self.enter;
                    ev.time.dur_ns = leave.saturating_sub(self.enter);
                    ev.time.compute_ns = if ts.last_leave == 0 {
                        0
                    } else {
                        self.enter.saturating_sub(ts.last_leave)
                    };
                    ts.last_leave = leave;
                });
                tracer.push(ev);
            });
            let _ = SCRATCH.try_with(|e| {
                if let Ok(mut e) = e.try_borrow_mut()
                    && let Some(w) = write.take()
                {
                    w(&mut e);
                }
            });
            // A call during the thread's exit (its thread-locals gone) or a
            // nested one.
            if let Some(w) = write.take() {
                w(&mut Event::new(op));
            }
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
/// Gives the calling thread its index on this rank now, if it has none:
/// the index is the order of each thread's first call into MPI, and
/// `MPI_Query_thread` counts as one without being recorded.
pub(crate) fn claim_thread_index() {
    if let Some(t) = get() {
        let _ = catch_unwind(AssertUnwindSafe(|| t.thread_index()));
    }
}

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

/// Runs `f` (a wrapper's call into the library) with the re-entry guard
/// lifted, so that the application's own callbacks which the library
/// invokes during it are recorded: an attribute delete function that frees
/// another communicator inside `MPI_Comm_free` is a call of the program,
/// and left out it kept the freed handle registered for the next
/// communicator MPI gave the same handle (issue 39, cause 4).
pub(crate) fn with_callbacks<R>(f: impl FnOnce() -> R) -> R {
    let prev = BUSY.with(|b| b.replace(false));
    let r = f();
    BUSY.with(|b| b.set(prev));
    r
}
