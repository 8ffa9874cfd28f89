//! The MPI side of replay: one rank's events re-issued as MPI calls.
//!
//! Calls go to the `MPI_*` entry points, so that the tracer, preloaded into
//! `replay`, records the replay like any application (the fixed-point
//! check). Replay's own bookkeeping (the start and end barriers, the
//! report's reductions, polling a request until the trace says it is
//! complete) goes to `PMPI_*` and so stays out of such a trace.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use compress::{
    CommId, Datatype, Event, MpiLibrary, Op, Peer, ReduceOp, ReqId, Tag, TraceFile, Transfer,
};
use mpi_sys::*;
use replay::{Rng, compute_ns};

use crate::Opts;
use crate::tokens::Gates;

use mpi_helpers::{
    library_version, rs_in_place, rs_op_maxloc, rs_op_minloc, rs_type_2int, rs_type_double_int,
    rs_type_long_int, rs_type_of_code, rs_type_short_int,
};

/// The buffer attached for buffered sends (Bsend, Ibsend).
const BSEND_BYTES: usize = 64 << 20;

/// A live request of the replay and the buffers it uses.
struct Req {
    handle: MPI_Request,
    /// What MPI may read or write until the request completes: buffers,
    /// and the count, displacement and datatype arrays of a nonblocking
    /// v/w collective (a moved `Vec` keeps its heap block in place).
    _keep: Keep,
    persistent: bool,
    /// For a receive: its communicator, to check the source it matched
    /// against the trace's (a world rank) when it completes.
    comm: Option<MPI_Comm>,
}

#[derive(Default)]
struct Keep {
    bytes: Vec<Vec<u8>>,
    ints: Vec<Vec<c_int>>,
    types: Vec<Vec<MPI_Datatype>>,
}

/// A communicator handle that may cross threads: under
/// `MPI_THREAD_MULTIPLE` every thread of a process may use it.
#[derive(Clone, Copy)]
struct SharedComm(MPI_Comm);

// SAFETY: MPI handles are process-wide; the replay only starts threads
// after MPI granted MPI_THREAD_MULTIPLE, under which any thread may use a
// communicator. Creation and freeing are ordered by `Progress`.
unsafe impl Send for SharedComm {}

/// The communicators of a rank by trace id, shared by its replay threads.
#[derive(Clone)]
struct Comms(Arc<Mutex<HashMap<u32, SharedComm>>>);

impl Comms {
    fn new(world: MPI_Comm, selfc: MPI_Comm) -> Self {
        Comms(Arc::new(Mutex::new(HashMap::from([
            (CommId::WORLD.0, SharedComm(world)),
            (CommId::SELF.0, SharedComm(selfc)),
        ]))))
    }

    fn get(&self, id: u32) -> Option<MPI_Comm> {
        self.0.lock().ok()?.get(&id).map(|c| c.0)
    }

    fn insert(&self, id: u32, c: MPI_Comm) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, SharedComm(c));
        }
    }

    fn remove(&self, id: u32) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(&id);
        }
    }
}

/// Where each replay thread of a rank is, as the position (in the rank's
/// recorded event order) of the next event it will issue; `u64::MAX` once
/// it is done. A communicator is created or freed only when every other
/// thread has issued all the events recorded before it, the order the
/// application's threads had (the joins and locks between them are not
/// MPI calls, so the trace knows them only through this order).
struct Progress {
    next: Vec<std::sync::atomic::AtomicU64>,
    /// Whether each thread has made its first MPI call. The tracer numbers
    /// a rank's threads in the order of their first MPI call, so thread
    /// `k` makes it (an `MPI_Query_thread`, which never blocks) only after
    /// thread `k - 1`, which keeps the numbers of the application.
    started: Vec<AtomicBool>,
}

impl Progress {
    fn new(threads: usize) -> Self {
        Progress {
            next: (0..threads)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
            started: (0..threads).map(|i| AtomicBool::new(i == 0)).collect(),
        }
    }

    fn await_turn(&self, slot: usize) {
        while slot > 1 && !self.started[slot - 1].load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    fn has_started(&self, slot: usize) {
        self.started[slot].store(true, Ordering::SeqCst);
    }

    fn set(&self, slot: usize, pos: u64) {
        self.next[slot].store(pos, Ordering::SeqCst);
    }

    fn await_others(&self, slot: usize, pos: u64) {
        while self
            .next
            .iter()
            .enumerate()
            .any(|(i, p)| i != slot && p.load(Ordering::SeqCst) < pos)
        {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// A replay thread's part of the report.
struct Summary {
    stats: Vec<OpStats>,
    sites: HashMap<(Op, u64), OpStats>,
    diverged: u64,
    latency: u64,
}

/// Per-operation totals for the report: calls, bytes, seconds.
#[derive(Clone, Copy, Default)]
struct OpStats {
    calls: f64,
    bytes: f64,
    secs: f64,
}

/// Checks the trace before any of its calls is issued: this rank's events
/// and those of the ranks it exchanges messages with (peers and roots in
/// range, lists as long as their communicators, communicators that fit,
/// every message received and every receive sent, collectives that agree),
/// so that an inconsistent trace, extrapolated or corrupted, stops with a
/// clear message instead of undefined behaviour inside MPI. Every rank
/// learns every other's verdict, so all stop together.
fn validated(file: &TraceFile, rank: c_int) -> bool {
    let mine: c_int = match analysis::check::check_ranks(file, &[rank as u32]) {
        Ok(r) if r.is_consistent() => 1,
        Ok(r) => {
            for p in r.problems.iter().take(3) {
                eprintln!("replay: error: rank {rank}: inconsistent trace: {p}");
            }
            0
        }
        Err(e) => {
            eprintln!("replay: error: rank {rank}: {e}");
            0
        }
    };
    let mut all: c_int = 0;
    // PMPI: a tracer preloaded into the replay must not record this
    // reduction, which the application never made.
    // SAFETY: MPI is initialised; both buffers are valid single ints, and
    // every rank of the world makes this call.
    let rc = unsafe {
        PMPI_Allreduce(
            (&raw const mine).cast(),
            (&raw mut all).cast(),
            1,
            RSMPI_INT32_T,
            RSMPI_MIN,
            RSMPI_COMM_WORLD,
        )
    };
    if rc == 0 && all == 1 {
        return true;
    }
    if rank == 0 {
        eprintln!(
            "replay: error: the trace is inconsistent (see above; `rankscale check FILE` lists \
             every problem); nothing was replayed"
        );
    }
    false
}

/// The predefined MPI datatype the trace names for `t`, if it has the
/// recorded size in this MPI library.
fn predefined(t: &Transfer) -> Option<MPI_Datatype> {
    if !t.dtype.is_known() || t.dtype == Datatype::DERIVED {
        return None;
    }
    // SAFETY: rs_type_of_code returns a predefined handle of mpi.h or
    // MPI_DATATYPE_NULL; it calls no MPI function.
    let ty = unsafe { rs_type_of_code(c_int::from(t.dtype.0)) };
    // SAFETY: reading an initialised mpi-sys constant.
    if ty == unsafe { RSMPI_DATATYPE_NULL } {
        return None;
    }
    let mut size: c_int = 0;
    // SAFETY: `ty` is a predefined datatype; MPI_Type_size writes `size`.
    let rc = unsafe { MPI_Type_size(ty, &mut size) };
    (rc == 0 && i64::from(size) == t.dsize).then_some(ty)
}

/// The handle of a built-in reduction operation.
fn builtin_op(op: ReduceOp) -> Option<MPI_Op> {
    // SAFETY: reading initialised constants (mpi-sys statics and the C
    // helpers' macro values).
    unsafe {
        Some(match op {
            ReduceOp::Max => RSMPI_MAX,
            ReduceOp::Min => RSMPI_MIN,
            ReduceOp::Sum => RSMPI_SUM,
            ReduceOp::Prod => RSMPI_PROD,
            ReduceOp::Land => RSMPI_LAND,
            ReduceOp::Band => RSMPI_BAND,
            ReduceOp::Lor => RSMPI_LOR,
            ReduceOp::Bor => RSMPI_BOR,
            ReduceOp::Lxor => RSMPI_LXOR,
            ReduceOp::Bxor => RSMPI_BXOR,
            ReduceOp::Maxloc => rs_op_maxloc(),
            ReduceOp::Minloc => rs_op_minloc(),
            _ => return None,
        })
    }
}

/// Says once per process that something the application defined itself is
/// replayed by a stand-in of the same size.
fn stand_in_note(what: &str, dsize: i64) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "replay: note: {what} is replayed by a stand-in of the same size ({dsize} bytes per \
             element); the bytes moved are the application's, the computation on them is not"
        );
    }
}

struct Replayer<'o> {
    opts: &'o Opts,
    /// Whether `--yield` issues blocking collectives and sends in
    /// nonblocking form (not on Open MPI, see [`yield_collectives`]).
    yield_colls: bool,
    rng: Rng,
    comms: Comms,
    /// Whether other threads replay other parts of this rank: a
    /// communicator that is not there yet is then awaited (another thread
    /// creates it) instead of being an error.
    threaded: bool,
    types: HashMap<i64, MPI_Datatype>,
    /// The derived datatypes among `types`, freed at the end.
    owned_types: Vec<MPI_Datatype>,
    reqs: HashMap<u64, Req>,
    /// Matched messages of Mprobe/Improbe by the trace's message id.
    msgs: HashMap<u64, MPI_Message>,
    /// Messages that an Improbe matched in the replay but not in the
    /// application (a polling loop), with their communicator, source and
    /// tag: the Mrecv of the probe that matched them in the application
    /// receives them.
    stray: Vec<(MPI_Comm, c_int, c_int, MPI_Message)>,
    pattern: Vec<u8>,
    user_op: Option<MPI_Op>,
    stats: Vec<OpStats>,
    /// Per (operation, call site of the traced application).
    sites: HashMap<(Op, u64), OpStats>,
    /// Outcomes of racy calls that came out differently from the trace: a
    /// wildcard receive that matched another message, a Waitany, Waitsome
    /// or Test that completed other requests. The replay then keeps going
    /// with what MPI did (a later completion of a request that is already
    /// complete is left out), so it always finishes, and reports the count.
    diverged: u64,
    /// The causal gates that keep messages from arriving before a racy
    /// call that must not see them (the main thread of an unthreaded
    /// rank only).
    gates: Option<Gates>,
    /// Outcomes that depended on message latency in the application (a
    /// send request completing later than in the replay).
    latency: u64,
}

/// How long, once this rank has diverged from the trace, a probe waits for
/// a message the trace says is there: an earlier wildcard receive may have
/// taken it. Before any divergence the wait is unbounded (the message must
/// come; `--timeout` guards against traces that cannot complete).
const DIVERGED_WAIT: Duration = Duration::from_millis(200);

pub(crate) fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        bail!("{what} failed with MPI error {rc}")
    }
}

/// The send and receive buffer arguments of a rooted or gathering
/// collective: `MPI_IN_PLACE` replaces the receive buffer of a scatter and
/// the send buffer of everything else.
fn places(
    in_place: bool,
    scatter: bool,
    marker: *mut c_void,
    sb: &[u8],
    rb: &mut [u8],
) -> (*const c_void, *mut c_void) {
    let sp = if in_place && !scatter {
        marker.cast_const()
    } else {
        sb.as_ptr().cast()
    };
    let rp = if in_place && scatter {
        marker
    } else {
        rb.as_mut_ptr().cast()
    };
    (sp, rp)
}

/// A user reduction that leaves the result as it is: replays a user-defined
/// (`other`) reduction without knowing its code.
unsafe extern "C" fn keep_op(
    _in: *mut c_void,
    _inout: *mut c_void,
    _len: *mut c_int,
    _ty: *mut MPI_Datatype,
) {
}

impl<'o> Replayer<'o> {
    /// The replayer of one thread (`slot`) of `rank`.
    fn new(opts: &'o Opts, rank: i32, slot: usize, comms: Comms, threaded: bool) -> Self {
        let mut pattern = vec![0u8; 4096];
        let mut rng = Rng::for_rank(opts.seed ^ ((slot as u64) << 48), rank as u32);
        for chunk in pattern.chunks_mut(8) {
            let x = rng.next_u64().to_ne_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
        Replayer {
            opts,
            yield_colls: yield_collectives(opts),
            rng,
            comms,
            threaded,
            types: HashMap::new(),
            owned_types: Vec::new(),
            reqs: HashMap::new(),
            msgs: HashMap::new(),
            stray: Vec::new(),
            pattern,
            user_op: None,
            stats: vec![OpStats::default(); Op::ALL.len()],
            sites: HashMap::new(),
            diverged: 0,
            gates: None,
            latency: 0,
        }
    }

    /// Issues the events of one application thread (`(slot, tid)`) of
    /// this rank, in place in the rank's compressed trace. Returns how
    /// many it issued.
    fn run_thread(
        &mut self,
        rt: &compress::Trace,
        rank: i32,
        (slot, tid): (usize, u32),
        progress: &Progress,
        current: &Mutex<String>,
    ) -> Result<u64> {
        let mut ex = rt.expand();
        let (mut pos, mut n) = (0u64, 0u64);
        while let Some(ev) = ex.next() {
            pos += 1;
            if ev.thread != tid {
                continue;
            }
            progress.set(slot, pos);
            if n == 0 && slot > 0 {
                progress.await_turn(slot);
                let mut level: c_int = 0;
                // SAFETY: a valid out-parameter; MPI is initialised.
                unsafe { MPI_Query_thread(&mut level) };
                progress.has_started(slot);
            }
            let c = compute_ns(ex.timing(), &mut self.rng);
            self.sleep(c);
            if self.threaded && ev.op.family() == compress::Family::CommManagement {
                progress.await_others(slot, pos);
            }
            if self.opts.timeout > 0.0
                && let Ok(mut cur) = current.lock()
            {
                *cur = format!("event {n}: {}", compress::raw::event_line(&ev));
            }
            if let Some(mut g) = self.gates.take() {
                let r = self.pass_gates(&mut g, &ev, pos);
                self.gates = Some(g);
                r?;
            }
            let t0 = Instant::now();
            let bytes = self.exec(&ev).with_context(|| {
                format!(
                    "rank {rank}, event {n} ({})",
                    compress::raw::event_line(&ev)
                )
            })?;
            let secs = t0.elapsed().as_secs_f64();
            if let Some(g) = &mut self.gates {
                g.after(pos)?;
            }
            for s in [
                &mut self.stats[ev.op as usize],
                self.sites.entry((ev.op, ev.site)).or_default(),
            ] {
                s.calls += 1.0;
                s.bytes += bytes;
                s.secs += secs;
            }
            n += 1;
        }
        progress.has_started(slot);
        progress.set(slot, u64::MAX);
        if ex.is_broken() {
            bail!("rank {rank}: the trace is inconsistent; its expansion stopped after {n} events");
        }
        Ok(n)
    }

    /// Frees the datatypes this replayer created and hands over its part
    /// of the report (which, unlike the MPI handles, may cross threads).
    fn finish(mut self) -> Summary {
        self.free_types();
        Summary {
            stats: self.stats,
            sites: self.sites,
            diverged: self.diverged,
            latency: self.latency,
        }
    }

    /// Frees the derived datatypes this replayer created.
    fn free_types(&mut self) {
        for mut t in self.owned_types.drain(..) {
            // SAFETY: freeing a datatype this replayer created; no request
            // uses it any more.
            unsafe { MPI_Type_free(&mut t) };
        }
    }

    /// Adds another thread's report to this one's.
    fn absorb(&mut self, other: Summary) {
        for (a, b) in self.stats.iter_mut().zip(&other.stats) {
            a.calls += b.calls;
            a.bytes += b.bytes;
            a.secs += b.secs;
        }
        for (k, b) in &other.sites {
            let a = self.sites.entry(*k).or_default();
            a.calls += b.calls;
            a.bytes += b.bytes;
            a.secs += b.secs;
        }
        self.diverged += other.diverged;
        self.latency += other.latency;
    }

    fn comm(&self, id: CommId) -> Result<MPI_Comm> {
        loop {
            if let Some(c) = self.comms.get(id.0) {
                return Ok(c);
            }
            if !self.threaded {
                bail!("communicator {} is not known at this point", id.0);
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    fn count(&self, c: i64) -> c_int {
        let scaled = (c as f64 * self.opts.bytes_scale).round();
        scaled.clamp(0.0, f64::from(c_int::MAX)) as c_int
    }

    /// A buffer of `n` random-looking bytes (a repeated random block).
    fn buf(&self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n.max(1));
        while v.len() < n {
            let k = (n - v.len()).min(self.pattern.len());
            v.extend_from_slice(&self.pattern[..k]);
        }
        if v.is_empty() {
            v.push(0);
        }
        v
    }

    /// A contiguous datatype of `dsize` bytes (what the trace knows of the
    /// application's datatype).
    fn dtype(&mut self, dsize: i64) -> Result<MPI_Datatype> {
        if let Some(&t) = self.types.get(&dsize) {
            return Ok(t);
        }
        let n = c_int::try_from(dsize.max(1)).context("datatype size")?;
        // SAFETY: reading initialised mpi-sys constants.
        let (byte, predefined) = unsafe {
            (
                RSMPI_UINT8_T,
                match n {
                    1 => Some(RSMPI_UINT8_T),
                    2 => Some(RSMPI_UINT16_T),
                    4 => Some(RSMPI_UINT32_T),
                    8 => Some(RSMPI_UINT64_T),
                    16 => Some(RSMPI_DOUBLE_COMPLEX),
                    _ => None,
                },
            )
        };
        // Predefined types of the common sizes take the libraries' fast
        // paths (a derived type, even a contiguous one, may be packed).
        let t = if let Some(t) = predefined {
            t
        } else {
            // SAFETY: reading an initialised mpi-sys constant.
            let mut t = unsafe { RSMPI_DATATYPE_NULL };
            check(
                // SAFETY: `t` is a valid out-parameter; `byte` a predefined type.
                unsafe { MPI_Type_contiguous(n, byte, &mut t) },
                "MPI_Type_contiguous",
            )?;
            // SAFETY: `t` was just created.
            check(unsafe { MPI_Type_commit(&mut t) }, "MPI_Type_commit")?;
            self.owned_types.push(t);
            t
        };
        self.types.insert(dsize, t);
        Ok(t)
    }

    /// The datatype of one side of a call: the application's own when the
    /// trace names a predefined type of the recorded size, else a stand-in
    /// of that size ([`Replayer::dtype`]).
    fn typed(&mut self, t: &Transfer) -> Result<MPI_Datatype> {
        match predefined(t) {
            Some(ty) => Ok(ty),
            None => {
                if t.dtype == Datatype::DERIVED {
                    stand_in_note("a derived datatype", t.dsize);
                }
                self.dtype(t.dsize)
            }
        }
    }

    /// The operation and datatype to reduce `t` with: the application's
    /// predefined operation on its predefined type when the trace names
    /// both; otherwise a predefined type of the same size the operation
    /// accepts, or, for a user-defined operation or a type no built-in
    /// operation takes, a stand-in operation over bytes of the same size.
    fn reduction(&mut self, op: Option<ReduceOp>, t: &Transfer) -> Result<(MPI_Op, MPI_Datatype)> {
        let dsize = t.dsize;
        let op = op.unwrap_or(ReduceOp::Sum);
        if op != ReduceOp::Other
            && let Some(ty) = predefined(t)
            && let Some(h) = builtin_op(op)
        {
            return Ok((h, ty));
        }
        if op == ReduceOp::Other {
            stand_in_note("a user-defined reduction", dsize);
        } else if t.dtype == Datatype::DERIVED {
            stand_in_note("a reduction over a derived datatype", dsize);
        }
        // SAFETY: reading initialised constants (mpi-sys statics and the C
        // helpers' macro values).
        unsafe {
            let pair = |d: i64| -> Result<MPI_Datatype> {
                Ok(match d {
                    6 => rs_type_short_int(),
                    8 => rs_type_2int(),
                    12 => rs_type_double_int(),
                    16 if std::mem::size_of::<std::ffi::c_long>() == 8 => rs_type_long_int(),
                    _ => bail!("no MPI pair type of {d} bytes for a MAXLOC/MINLOC replay"),
                })
            };
            let int = |d: i64| -> Result<MPI_Datatype> {
                Ok(match d {
                    1 => RSMPI_INT8_T,
                    2 => RSMPI_INT16_T,
                    4 => RSMPI_INT32_T,
                    8 => RSMPI_INT64_T,
                    _ => bail!("no predefined MPI type of {d} bytes to replay a reduction on"),
                })
            };
            Ok(match (op, builtin_op(op)) {
                (ReduceOp::Maxloc | ReduceOp::Minloc, Some(h)) => (h, pair(dsize)?),
                (_, Some(h)) => (h, int(dsize)?),
                (_, None) => {
                    let op = match self.user_op {
                        Some(op) => op,
                        None => {
                            let mut op = RSMPI_SUM;
                            check(MPI_Op_create(Some(keep_op), 1, &mut op), "MPI_Op_create")?;
                            self.user_op = Some(op);
                            op
                        }
                    };
                    (op, self.dtype(dsize)?)
                }
            })
        }
    }

    fn peer(p: Peer) -> c_int {
        // SAFETY: reading initialised mpi-sys constants.
        unsafe {
            match p {
                Peer::Rank { local, .. } => local,
                Peer::Any => RSMPI_ANY_SOURCE,
                Peer::Null => RSMPI_PROC_NULL,
            }
        }
    }

    fn tag(t: Tag) -> c_int {
        match t {
            Tag::Value(v) => v,
            // SAFETY: reading an initialised mpi-sys constant.
            Tag::Any => unsafe { RSMPI_ANY_TAG },
        }
    }

    /// Count, datatype and a buffer for one side of a call.
    fn side(&mut self, t: &Transfer) -> Result<(c_int, MPI_Datatype, Vec<u8>)> {
        let n = self.count(t.count);
        let ty = self.typed(t)?;
        let bytes = usize::try_from(i64::from(n) * t.dsize.max(1)).unwrap_or(0);
        Ok((n, ty, self.buf(bytes)))
    }

    fn new_req(&mut self, id: Option<ReqId>, handle: MPI_Request, keep: Keep, persistent: bool) {
        if let Some(id) = id {
            self.reqs.insert(
                id.0,
                Req {
                    handle,
                    _keep: keep,
                    persistent,
                    comm: None,
                },
            );
        }
    }

    /// The requests of a completion call that are still live. One that the
    /// replay already completed (an earlier racy call completed more than
    /// the application's did) is left out and counted as a divergence.
    fn live(&mut self, ids: &[ReqId]) -> Vec<ReqId> {
        let live: Vec<ReqId> = ids
            .iter()
            .copied()
            .filter(|id| self.reqs.contains_key(&id.0))
            .collect();
        self.diverged += (ids.len() - live.len()) as u64;
        live
    }

    /// Whether a live request has completed, without completing it.
    fn is_complete(&self, id: ReqId) -> Result<bool> {
        let Some(r) = self.reqs.get(&id.0) else {
            return Ok(true);
        };
        let mut flag: c_int = 0;
        check(
            // SAFETY: a live request of this replay; the status is ignored and
            // the request is not freed.
            unsafe { PMPI_Request_get_status(r.handle, &mut flag, RSMPI_STATUS_IGNORE) },
            "MPI_Request_get_status",
        )?;
        Ok(flag != 0)
    }

    /// Compares what a completion call completed with what the trace
    /// says: the set of requests (for the racy any/some/test calls) and
    /// the source and tag that wildcard receives matched. Each difference
    /// counts as a divergence.
    fn check_outcome(
        &mut self,
        e: &Event,
        live: &[ReqId],
        completed: &[(ReqId, MPI_Status)],
    ) -> Result<()> {
        if !matches!(e.op, Op::Wait | Op::Waitall) {
            let mut want: Vec<u64> = e
                .done
                .iter()
                .filter(|d| live.contains(d))
                .map(|d| d.0)
                .collect();
            let mut got: Vec<u64> = completed.iter().map(|(id, _)| id.0).collect();
            want.sort_unstable();
            got.sort_unstable();
            // A send that completed earlier than in the application: its
            // completion depends on the library's progress, which no order
            // of calls forces.
            let early_sends = got
                .iter()
                .all(|id| want.contains(id) || self.reqs.get(id).is_none_or(|r| r.comm.is_none()));
            if want != got && early_sends && want.iter().all(|id| got.contains(id)) {
                self.latency += 1;
            } else if want != got {
                self.diverged += 1;
            }
        }
        for m in &e.matched {
            let Some(id) = m.req else { continue };
            let (Some((_, st)), Some(c)) = (
                completed.iter().find(|(r, _)| *r == id),
                self.reqs.get(&id.0).and_then(|r| r.comm),
            ) else {
                continue;
            };
            let src = world_to_local(c, &[m.source])?[0];
            if st.MPI_SOURCE != src || st.MPI_TAG != m.tag {
                self.diverged += 1;
            }
        }
        Ok(())
    }

    fn handles(&self, ids: &[ReqId]) -> Result<Vec<MPI_Request>> {
        ids.iter()
            .map(|id| {
                self.reqs
                    .get(&id.0)
                    .map(|r| r.handle)
                    .ok_or_else(|| anyhow!("request {} is not live at this point", id.0))
            })
            .collect()
    }

    /// After a completion call: new handles back into the table; completed
    /// non-persistent requests leave it.
    fn settle(&mut self, ids: &[ReqId], handles: &[MPI_Request]) {
        // SAFETY: reading an initialised mpi-sys constant.
        let null = unsafe { RSMPI_REQUEST_NULL };
        for (id, &h) in ids.iter().zip(handles) {
            if let Some(r) = self.reqs.get_mut(&id.0) {
                if !r.persistent && h == null {
                    self.reqs.remove(&id.0);
                } else {
                    r.handle = h;
                }
            }
        }
    }

    /// Before issuing `ev` (at position `pos`): waits for the tokens of the
    /// messages it sends that are held, and releases the stages before it
    /// (each once its wildcard receive has matched).
    fn pass_gates(&mut self, g: &mut Gates, ev: &Event, pos: u64) -> Result<()> {
        let mut backoff = self.backoff();
        g.before(ev, || backoff.pause())?;
        while let Some(once) = g.pending_stage(pos) {
            if let Some(id) = once {
                self.await_done(&[id])?;
            }
            g.release_next()?;
        }
        Ok(())
    }

    /// The pauses of a new polling loop.
    fn backoff(&self) -> Backoff {
        Backoff::new(self.opts.yield_wait)
    }

    /// In yield mode, waits by test-and-sleep (outside the traced API)
    /// until a message from `src` with `tag` can be received, so that the
    /// blocking call that follows returns at once instead of busy-polling.
    fn yield_for_message(&self, src: c_int, tag: c_int, c: MPI_Comm) -> Result<()> {
        // SAFETY: reading an initialised constant.
        if !self.opts.yield_wait || src == unsafe { RSMPI_PROC_NULL } {
            return Ok(());
        }
        self.yield_for_message_always(src, tag, c).map(drop)
    }

    /// Waits (outside the traced API) until a message from `src` with
    /// `tag` is there, whatever the mode: before an Iprobe or Improbe that
    /// the trace says found one, and before a wildcard receive. False when
    /// it gave up after [`DIVERGED_WAIT`] on a rank that has diverged.
    fn yield_for_message_always(&self, src: c_int, tag: c_int, c: MPI_Comm) -> Result<bool> {
        let start = Instant::now();
        let mut backoff = self.backoff();
        loop {
            let mut f: c_int = 0;
            check(
                // SAFETY: `c` is a live communicator; the status is ignored.
                unsafe { PMPI_Iprobe(src, tag, c, &mut f, RSMPI_STATUS_IGNORE) },
                "MPI_Iprobe",
            )?;
            if f != 0 {
                return Ok(true);
            }
            if self.diverged > 0 && start.elapsed() > DIVERGED_WAIT {
                return Ok(false);
            }
            backoff.pause();
        }
    }

    /// Completes a request of replay's own (outside the traced API) by
    /// test-and-pause.
    fn await_request(&self, r: &mut MPI_Request) -> Result<()> {
        let mut backoff = self.backoff();
        loop {
            let mut f: c_int = 0;
            check(
                // SAFETY: `r` is a live request made by this replay.
                unsafe { PMPI_Test(r, &mut f, RSMPI_STATUS_IGNORE) },
                "MPI_Test",
            )?;
            if f != 0 {
                return Ok(());
            }
            backoff.pause();
        }
    }

    /// Polls (outside the traced API) until the requests the trace says
    /// completed are complete, so that the traced Test/any/some call that
    /// follows sees the same outcome as the application did.
    fn await_done(&self, done: &[ReqId]) -> Result<()> {
        let mut pending: Vec<MPI_Request> = done
            .iter()
            .filter_map(|id| self.reqs.get(&id.0).map(|r| r.handle))
            .collect();
        let mut backoff = self.backoff();
        while !pending.is_empty() {
            // Some libraries (MPICH) do not progress inside
            // MPI_Request_get_status; a probe, which consumes nothing, does.
            let mut f: c_int = 0;
            // SAFETY: world is valid; the status is ignored.
            unsafe {
                PMPI_Iprobe(
                    RSMPI_ANY_SOURCE,
                    RSMPI_ANY_TAG,
                    RSMPI_COMM_WORLD,
                    &mut f,
                    RSMPI_STATUS_IGNORE,
                )
            };
            let mut left = Vec::with_capacity(pending.len());
            for h in pending {
                let mut flag: c_int = 0;
                check(
                    // SAFETY: `h` is a live request of this replay;
                    // MPI_STATUS_IGNORE is a valid status argument. Does not
                    // free the request.
                    unsafe { PMPI_Request_get_status(h, &mut flag, RSMPI_STATUS_IGNORE) },
                    "MPI_Request_get_status",
                )?;
                if flag == 0 {
                    left.push(h);
                }
            }
            pending = left;
            if !pending.is_empty() {
                backoff.pause();
            }
        }
        Ok(())
    }

    /// The source (local rank in `c`) and tag that a wildcard receive or
    /// probe of the trace matched; `None` for a call without wildcards.
    fn expected_match(e: &Event, c: MPI_Comm) -> Result<Option<(c_int, c_int)>> {
        let (Some(m), Some(t)) = (e.matched.first(), e.recv) else {
            return Ok(None);
        };
        let (any_source, any_tag) = (t.peer == Peer::Any, t.tag == Tag::Any);
        if !any_source && !any_tag {
            return Ok(None);
        }
        let src = if any_source {
            world_to_local(c, &[m.source])?[0]
        } else {
            Self::peer(t.peer)
        };
        let tag = if any_tag { m.tag } else { Self::tag(t.tag) };
        Ok(Some((src, tag)))
    }

    /// For a wildcard receive or probe that the trace says matched a given
    /// message: waits (untraced) until that message has arrived, so that
    /// the traced wildcard call most likely matches the same one. (Another
    /// matching message may still come first; [`Self::check_match`] then
    /// counts the divergence.)
    fn await_match(&mut self, e: &Event, c: MPI_Comm) -> Result<()> {
        if let Some((src, tag)) = Self::expected_match(e, c)?
            && !self.yield_for_message_always(src, tag, c)?
        {
            self.diverged += 1;
        }
        Ok(())
    }

    /// Before a probe that the trace says found a message: waits (untraced)
    /// until the message it found is there, so that the traced probe finds
    /// it too (a blocking probe then returns at once, even in yield mode).
    fn await_probe(&mut self, e: &Event, c: MPI_Comm, src: c_int, tag: c_int) -> Result<()> {
        let (s, t) = Self::expected_match(e, c)?.unwrap_or((src, tag));
        if !self.yield_for_message_always(s, t, c)? {
            self.diverged += 1;
        }
        Ok(())
    }

    /// After a probe: counts a divergence if it found a message where the
    /// application's did not (a polling loop), or another one.
    fn check_probe(&mut self, e: &Event, c: MPI_Comm, found: c_int, st: &MPI_Status) -> Result<()> {
        if e.flag.is_some() && e.flag != Some(found != 0) {
            self.diverged += 1;
            return Ok(());
        }
        if found != 0 {
            self.check_match(e, c, st)?;
        }
        Ok(())
    }

    /// After a blocking wildcard receive or a probe that found a message:
    /// counts a divergence if it matched another source or tag than the
    /// trace's.
    fn check_match(&mut self, e: &Event, c: MPI_Comm, st: &MPI_Status) -> Result<()> {
        if let Some((src, tag)) = Self::expected_match(e, c)?
            && (st.MPI_SOURCE != src || st.MPI_TAG != tag)
        {
            self.diverged += 1;
        }
        Ok(())
    }

    fn sleep(&mut self, ns: u64) {
        if self.opts.no_compute || ns == 0 {
            return;
        }
        let d = Duration::from_nanos((ns as f64 * self.opts.compute_scale) as u64);
        if self.opts.yield_wait {
            // Oversubscribed: never spin, the other ranks need the core.
            std::thread::sleep(d);
            return;
        }
        let until = Instant::now() + d;
        if d > Duration::from_micros(200) {
            std::thread::sleep(d - Duration::from_micros(100));
        }
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    fn exec(&mut self, e: &Event) -> Result<f64> {
        // SAFETY: (for the whole match) every MPI call below receives
        // buffers that live until the call returns (blocking calls) or that
        // move into the request table with their request (nonblocking
        // calls), counts that match those buffers' lengths for the given
        // datatypes, communicators and requests from this replay's tables,
        // and mpi-sys constants read after MPI_Init.
        unsafe {
            let st = RSMPI_STATUS_IGNORE;
            let mut bytes = 0f64;
            match e.op {
                Op::Init | Op::InitThread | Op::Finalize => {}
                Op::Abort => bail!("the trace ends in MPI_Abort"),
                Op::Pcontrol => {
                    let level = e.value.unwrap_or(0) as c_int;
                    MPI_Pcontrol(level);
                }
                Op::Send | Op::Ssend | Op::Bsend | Op::Rsend => {
                    let t = e.send.context("send side missing")?;
                    let (n, ty, b) = self.side(&t)?;
                    bytes = b.len() as f64;
                    let c = self.comm(e.comm)?;
                    let (p, tag) = (Self::peer(t.peer), Self::tag(t.tag));
                    // Yielding on MPICH: a blocking send that waits for its
                    // receiver busy-polls; its nonblocking PMPI form
                    // completed by test-and-sleep does not (like the
                    // collectives, a tracer preloaded into the replay does
                    // not see it).
                    let nonblocking = match e.op {
                        Op::Send => Some(PMPI_Isend as SendFn),
                        Op::Ssend => Some(PMPI_Issend as SendFn),
                        Op::Rsend => Some(PMPI_Irsend as SendFn),
                        _ => None,
                    }
                    .filter(|_| self.yield_colls);
                    if let Some(f) = nonblocking {
                        let mut req: MPI_Request = std::mem::zeroed();
                        check(
                            f(b.as_ptr().cast(), n, ty, p, tag, c, &mut req),
                            e.op.name(),
                        )?;
                        self.await_request(&mut req)?;
                        return Ok(bytes);
                    }
                    let f = match e.op {
                        Op::Send => MPI_Send,
                        Op::Ssend => MPI_Ssend,
                        Op::Bsend => {
                            self.attach_bsend()?;
                            MPI_Bsend
                        }
                        _ => MPI_Rsend,
                    };
                    check(f(b.as_ptr().cast(), n, ty, p, tag, c), e.op.name())?;
                }
                Op::Recv => {
                    let t = e.recv.context("receive side missing")?;
                    let (n, ty, mut b) = self.side(&t)?;
                    let c = self.comm(e.comm)?;
                    self.await_match(e, c)?;
                    self.yield_for_message(Self::peer(t.peer), Self::tag(t.tag), c)?;
                    let mut ms: MPI_Status = std::mem::zeroed();
                    check(
                        MPI_Recv(
                            b.as_mut_ptr().cast(),
                            n,
                            ty,
                            Self::peer(t.peer),
                            Self::tag(t.tag),
                            c,
                            &mut ms,
                        ),
                        "MPI_Recv",
                    )?;
                    self.check_match(e, c, &ms)?;
                }
                Op::Sendrecv => {
                    let (s, r) = (
                        e.send.context("send side")?,
                        e.recv.context("receive side")?,
                    );
                    let (sn, sty, sb) = self.side(&s)?;
                    let (rn, rty, mut rb) = self.side(&r)?;
                    bytes = sb.len() as f64;
                    let c = self.comm(e.comm)?;
                    check(
                        MPI_Sendrecv(
                            sb.as_ptr().cast(),
                            sn,
                            sty,
                            Self::peer(s.peer),
                            Self::tag(s.tag),
                            rb.as_mut_ptr().cast(),
                            rn,
                            rty,
                            Self::peer(r.peer),
                            Self::tag(r.tag),
                            c,
                            st,
                        ),
                        "MPI_Sendrecv",
                    )?;
                }
                Op::SendrecvReplace => {
                    let (s, r) = (
                        e.send.context("send side")?,
                        e.recv.context("receive side")?,
                    );
                    let (n, ty, mut b) = self.side(&s)?;
                    bytes = b.len() as f64;
                    let c = self.comm(e.comm)?;
                    check(
                        MPI_Sendrecv_replace(
                            b.as_mut_ptr().cast(),
                            n,
                            ty,
                            Self::peer(s.peer),
                            Self::tag(s.tag),
                            Self::peer(r.peer),
                            Self::tag(r.tag),
                            c,
                            st,
                        ),
                        "MPI_Sendrecv_replace",
                    )?;
                }
                Op::Isend | Op::Issend | Op::Ibsend | Op::Irsend | Op::SendInit | Op::SsendInit => {
                    let t = e.send.context("send side missing")?;
                    let (n, ty, b) = self.side(&t)?;
                    bytes = b.len() as f64;
                    let c = self.comm(e.comm)?;
                    let (p, tag) = (Self::peer(t.peer), Self::tag(t.tag));
                    let mut h = RSMPI_REQUEST_NULL;
                    let f = match e.op {
                        Op::Isend => MPI_Isend,
                        Op::Issend => MPI_Issend,
                        Op::Ibsend => {
                            self.attach_bsend()?;
                            MPI_Ibsend
                        }
                        Op::Irsend => MPI_Irsend,
                        Op::SendInit => MPI_Send_init,
                        _ => MPI_Ssend_init,
                    };
                    check(f(b.as_ptr().cast(), n, ty, p, tag, c, &mut h), e.op.name())?;
                    let persistent = matches!(e.op, Op::SendInit | Op::SsendInit);
                    self.new_req(
                        e.req,
                        h,
                        Keep {
                            bytes: vec![b],
                            ..Keep::default()
                        },
                        persistent,
                    );
                }
                Op::Irecv | Op::RecvInit => {
                    let t = e.recv.context("receive side missing")?;
                    let (n, ty, mut b) = self.side(&t)?;
                    let c = self.comm(e.comm)?;
                    let mut h = RSMPI_REQUEST_NULL;
                    let f = if e.op == Op::Irecv {
                        MPI_Irecv
                    } else {
                        MPI_Recv_init
                    };
                    check(
                        f(
                            b.as_mut_ptr().cast(),
                            n,
                            ty,
                            Self::peer(t.peer),
                            Self::tag(t.tag),
                            c,
                            &mut h,
                        ),
                        e.op.name(),
                    )?;
                    self.new_req(
                        e.req,
                        h,
                        Keep {
                            bytes: vec![b],
                            ..Keep::default()
                        },
                        e.op == Op::RecvInit,
                    );
                    if let Some(r) = e.req.and_then(|id| self.reqs.get_mut(&id.0)) {
                        r.comm = Some(c);
                    }
                }
                Op::Start | Op::Startall => {
                    let mut hs = self.handles(&e.reqs)?;
                    if e.op == Op::Start {
                        let h = hs.first_mut().context("Start without a request")?;
                        check(MPI_Start(h), "MPI_Start")?;
                    } else {
                        check(
                            MPI_Startall(hs.len() as c_int, hs.as_mut_ptr()),
                            "MPI_Startall",
                        )?;
                    }
                    self.settle(&e.reqs, &hs);
                }
                Op::RequestFree => {
                    let mut hs = self.handles(&e.reqs)?;
                    let h = hs.first_mut().context("Request_free without a request")?;
                    check(MPI_Request_free(h), "MPI_Request_free")?;
                    if let Some(id) = e.reqs.first() {
                        self.reqs.remove(&id.0);
                    }
                }
                Op::Wait
                | Op::Waitall
                | Op::Waitany
                | Op::Waitsome
                | Op::Test
                | Op::Testall
                | Op::Testany
                | Op::Testsome => {
                    let mut ids = self.live(&e.reqs);
                    let racy = matches!(
                        e.op,
                        Op::Waitany | Op::Waitsome | Op::Testany | Op::Testsome
                    );
                    // In yield mode a blocking wait is preceded by
                    // test-and-sleep too: MPICH's MPI_Wait busy-polls (a
                    // 64-rank NPB CG replay on 2 cores: 221 s, most of it
                    // in MPI_Wait).
                    let blocking = matches!(e.op, Op::Wait | Op::Waitall);
                    if racy || e.flag == Some(true) || (blocking && self.opts.yield_wait) {
                        self.await_done(&e.done)?;
                    }
                    // MPI's Waitany and Testany return the first complete
                    // request in the array: if one before the recorded
                    // outcome completed too, the recorded one goes first
                    // (the call's request order then differs from the
                    // trace, which counts as a divergence).
                    if matches!(e.op, Op::Waitany | Op::Testany)
                        && let Some(&d) = e.done.first()
                        && let Some(pos) = ids.iter().position(|&i| i == d)
                    {
                        let mut earlier = false;
                        for &i in &ids[..pos] {
                            earlier |= self.is_complete(i)?;
                        }
                        if earlier {
                            ids.remove(pos);
                            ids.insert(0, d);
                            self.diverged += 1;
                        }
                    }
                    let mut hs = self.handles(&ids)?;
                    let n = hs.len() as c_int;
                    let mut flag: c_int = 0;
                    let mut idx: c_int = 0;
                    let mut out: c_int = 0;
                    let mut idxs = vec![0 as c_int; hs.len().max(1)];
                    // A plain-data array of statuses, filled by MPI.
                    let mut sts: Vec<MPI_Status> = vec![std::mem::zeroed(); hs.len().max(1)];
                    let (p, sp) = (hs.as_mut_ptr(), sts.as_mut_ptr());
                    let rc = match e.op {
                        Op::Wait if n > 0 => MPI_Wait(p, sp),
                        Op::Waitall => MPI_Waitall(n, p, sp),
                        Op::Waitany => MPI_Waitany(n, p, &mut idx, sp),
                        Op::Waitsome => MPI_Waitsome(n, p, &mut out, idxs.as_mut_ptr(), sp),
                        Op::Test if n > 0 => MPI_Test(p, &mut flag, sp),
                        Op::Testall => MPI_Testall(n, p, &mut flag, sp),
                        Op::Testany => MPI_Testany(n, p, &mut idx, &mut flag, sp),
                        Op::Testsome => MPI_Testsome(n, p, &mut out, idxs.as_mut_ptr(), sp),
                        _ => {
                            // A completion on MPI_REQUEST_NULL only.
                            let mut h = RSMPI_REQUEST_NULL;
                            if e.op == Op::Wait {
                                MPI_Wait(&mut h, st)
                            } else {
                                MPI_Test(&mut h, &mut flag, st)
                            }
                        }
                    };
                    check(rc, e.op.name())?;
                    let pick = |i: c_int| usize::try_from(i).ok().and_then(|i| ids.get(i).copied());
                    let completed: Vec<(ReqId, MPI_Status)> = match e.op {
                        Op::Wait | Op::Waitall => {
                            ids.iter().copied().zip(sts.iter().copied()).collect()
                        }
                        Op::Test | Op::Testall if flag != 0 => {
                            ids.iter().copied().zip(sts.iter().copied()).collect()
                        }
                        Op::Waitany => pick(idx).map(|id| (id, sts[0])).into_iter().collect(),
                        Op::Testany if flag != 0 => {
                            pick(idx).map(|id| (id, sts[0])).into_iter().collect()
                        }
                        Op::Waitsome | Op::Testsome if out > 0 => idxs[..out as usize]
                            .iter()
                            .zip(&sts)
                            .filter_map(|(&i, st)| pick(i).map(|id| (id, *st)))
                            .collect(),
                        _ => Vec::new(),
                    };
                    self.check_outcome(e, &ids, &completed)?;
                    self.settle(&ids, &hs);
                }
                Op::Probe | Op::Iprobe => {
                    let t = e.recv.context("probe without a source")?;
                    let c = self.comm(e.comm)?;
                    let (src, tag) = (Self::peer(t.peer), Self::tag(t.tag));
                    let mut ms: MPI_Status = std::mem::zeroed();
                    let mut f: c_int = 1;
                    if e.op == Op::Probe {
                        self.await_probe(e, c, src, tag)?;
                        check(MPI_Probe(src, tag, c, &mut ms), "MPI_Probe")?;
                    } else {
                        if e.flag == Some(true) {
                            self.await_probe(e, c, src, tag)?;
                        }
                        check(MPI_Iprobe(src, tag, c, &mut f, &mut ms), "MPI_Iprobe")?;
                    }
                    self.check_probe(e, c, f, &ms)?;
                }
                Op::Mprobe | Op::Improbe => {
                    let t = e.recv.context("probe without a source")?;
                    let c = self.comm(e.comm)?;
                    let (src, tag) = (Self::peer(t.peer), Self::tag(t.tag));
                    let mut msg = RSMPI_MESSAGE_NULL;
                    let mut ms: MPI_Status = std::mem::zeroed();
                    let mut f: c_int = 1;
                    if e.op == Op::Mprobe {
                        self.await_probe(e, c, src, tag)?;
                        check(MPI_Mprobe(src, tag, c, &mut msg, &mut ms), "MPI_Mprobe")?;
                    } else {
                        if e.flag == Some(true) {
                            self.await_probe(e, c, src, tag)?;
                        }
                        check(
                            MPI_Improbe(src, tag, c, &mut f, &mut msg, &mut ms),
                            "MPI_Improbe",
                        )?;
                    }
                    self.check_probe(e, c, f, &ms)?;
                    if msg != RSMPI_MESSAGE_NULL {
                        match e.message {
                            Some(id) => {
                                self.msgs.insert(id, msg);
                            }
                            None => self.stray.push((c, ms.MPI_SOURCE, ms.MPI_TAG, msg)),
                        }
                    }
                }
                Op::Mrecv | Op::Imrecv => {
                    let t = e.recv.context("receive side missing")?;
                    let (n, ty, mut b) = self.side(&t)?;
                    let mut msg = e
                        .message
                        .and_then(|id| self.msgs.remove(&id))
                        .unwrap_or(RSMPI_MESSAGE_NULL);
                    if msg == RSMPI_MESSAGE_NULL {
                        // The probe found nothing in the replay (a divergence
                        // already counted): an earlier polling probe may
                        // have matched the message.
                        let c = self.comm(e.comm)?;
                        let (src, tag) = (Self::peer(t.peer), Self::tag(t.tag));
                        let fits = |&(sc, s, g, _): &(MPI_Comm, c_int, c_int, MPI_Message)| {
                            sc == c
                                && (src == RSMPI_ANY_SOURCE || s == src)
                                && (tag == RSMPI_ANY_TAG || g == tag)
                        };
                        match self.stray.iter().position(fits) {
                            Some(i) => msg = self.stray.remove(i).3,
                            None => return Ok(bytes),
                        }
                    }
                    if e.op == Op::Mrecv {
                        check(
                            MPI_Mrecv(b.as_mut_ptr().cast(), n, ty, &mut msg, st),
                            "MPI_Mrecv",
                        )?;
                    } else {
                        let mut h = RSMPI_REQUEST_NULL;
                        check(
                            MPI_Imrecv(b.as_mut_ptr().cast(), n, ty, &mut msg, &mut h),
                            "MPI_Imrecv",
                        )?;
                        self.new_req(
                            e.req,
                            h,
                            Keep {
                                bytes: vec![b],
                                ..Keep::default()
                            },
                            false,
                        );
                    }
                }
                op if op.is_collective() => bytes = self.collective(e)?,
                Op::CommDup
                | Op::CommSplit
                | Op::CommSplitType
                | Op::CommCreate
                | Op::CartCreate
                | Op::CartSub
                | Op::GraphCreate
                | Op::DistGraphCreateAdjacent
                | Op::DistGraphCreate
                | Op::CommFree => self.comm_op(e)?,
                op => bail!("{} is not replayed yet", op.name()),
            }
            Ok(bytes)
        }
    }

    /// Attaches the buffer of buffered sends, once per process (the
    /// threads of a rank share it, as MPI wants).
    fn attach_bsend(&mut self) -> Result<()> {
        static ATTACHED: Mutex<bool> = Mutex::new(false);
        let mut attached = ATTACHED
            .lock()
            .map_err(|_| anyhow!("bsend lock poisoned"))?;
        if !*attached {
            // Lives until the process ends, past MPI_Finalize.
            let b: &'static mut [u8] = Box::leak(vec![0u8; BSEND_BYTES].into_boxed_slice());
            check(
                // SAFETY: the buffer is never freed and nothing else uses it.
                unsafe { MPI_Buffer_attach(b.as_mut_ptr().cast(), BSEND_BYTES as c_int) },
                "MPI_Buffer_attach",
            )?;
            *attached = true;
        }
        Ok(())
    }

    /// Blocking and nonblocking collectives. Returns the bytes sent.
    fn collective(&mut self, e: &Event) -> Result<f64> {
        let c = self.comm(e.comm)?;
        let mut size: c_int = 0;
        // SAFETY: `c` is a live communicator of this replay.
        check(unsafe { MPI_Comm_size(c, &mut size) }, "MPI_Comm_size")?;
        let np = usize::try_from(size).unwrap_or(0);
        let root = e.root.unwrap_or(0);
        // SAFETY: reading the value of MPI_IN_PLACE.
        let in_place = unsafe { rs_in_place() };
        let zero = Transfer::collective(0, 1);
        let send = e.send.unwrap_or(zero);
        let recv = e.recv.unwrap_or(zero);
        let base = match e.op {
            Op::Ibarrier => Op::Barrier,
            Op::Ibcast => Op::Bcast,
            Op::Ireduce => Op::Reduce,
            Op::Iallreduce => Op::Allreduce,
            Op::Igather => Op::Gather,
            Op::Igatherv => Op::Gatherv,
            Op::Iscatter => Op::Scatter,
            Op::Iscatterv => Op::Scatterv,
            Op::Iallgather => Op::Allgather,
            Op::Iallgatherv => Op::Allgatherv,
            Op::Ialltoall => Op::Alltoall,
            Op::Ialltoallv => Op::Alltoallv,
            Op::Ialltoallw => Op::Alltoallw,
            Op::IreduceScatter => Op::ReduceScatter,
            Op::IreduceScatterBlock => Op::ReduceScatterBlock,
            Op::Iscan => Op::Scan,
            Op::Iexscan => Op::Exscan,
            op => op,
        };
        let nonblocking = base != e.op;
        // SAFETY: reading an initialised constant.
        let mut req = unsafe { RSMPI_REQUEST_NULL };
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        let mut keep = Keep::default();
        // Displacements for v collectives, in elements.
        let displs = crate::tokens::displacements;
        let counts = |v: &[i32], s: &Self| -> Vec<c_int> {
            v.iter().map(|&x| s.count(i64::from(x))).collect()
        };
        let mut sent = 0f64;
        // SAFETY: (for the block) buffers are sized from the counts and
        // datatype sizes passed with them and outlive the call (or move
        // into the request table with a nonblocking call's request).
        let rc = unsafe {
            // The traced blocking call; its traced nonblocking form; and,
            // for a blocking call in yield mode, its nonblocking form
            // outside the traced API, completed by test-and-sleep below.
            macro_rules! go {
                ($blocking:expr, $nb:expr, $yield:expr) => {
                    if nonblocking {
                        $nb
                    } else if self.yield_colls {
                        $yield
                    } else {
                        $blocking
                    }
                };
            }
            match base {
                Op::Barrier => go!(
                    MPI_Barrier(c),
                    MPI_Ibarrier(c, &mut req),
                    PMPI_Ibarrier(c, &mut req)
                ),
                Op::Bcast => {
                    let (n, ty, mut b) = self.side(&send)?;
                    sent = b.len() as f64;
                    let p = b.as_mut_ptr().cast();
                    bufs.push(b);
                    go!(
                        MPI_Bcast(p, n, ty, root, c),
                        MPI_Ibcast(p, n, ty, root, c, &mut req),
                        PMPI_Ibcast(p, n, ty, root, c, &mut req)
                    )
                }
                Op::Reduce | Op::Allreduce | Op::Scan | Op::Exscan => {
                    let (op, ty) = self.reduction(e.redop, &send)?;
                    let n = self.count(send.count);
                    let bytes = usize::try_from(i64::from(n) * send.dsize.max(1)).unwrap_or(0);
                    let sb = self.buf(bytes);
                    let mut rb = self.buf(bytes);
                    sent = bytes as f64;
                    let sp = if e.in_place {
                        in_place.cast_const()
                    } else {
                        sb.as_ptr().cast()
                    };
                    let rp = rb.as_mut_ptr().cast();
                    bufs.push(sb);
                    bufs.push(rb);
                    match base {
                        Op::Reduce => go!(
                            MPI_Reduce(sp, rp, n, ty, op, root, c),
                            MPI_Ireduce(sp, rp, n, ty, op, root, c, &mut req),
                            PMPI_Ireduce(sp, rp, n, ty, op, root, c, &mut req)
                        ),
                        Op::Allreduce => go!(
                            MPI_Allreduce(sp, rp, n, ty, op, c),
                            MPI_Iallreduce(sp, rp, n, ty, op, c, &mut req),
                            PMPI_Iallreduce(sp, rp, n, ty, op, c, &mut req)
                        ),
                        Op::Scan => go!(
                            MPI_Scan(sp, rp, n, ty, op, c),
                            MPI_Iscan(sp, rp, n, ty, op, c, &mut req),
                            PMPI_Iscan(sp, rp, n, ty, op, c, &mut req)
                        ),
                        _ => go!(
                            MPI_Exscan(sp, rp, n, ty, op, c),
                            MPI_Iexscan(sp, rp, n, ty, op, c, &mut req),
                            PMPI_Iexscan(sp, rp, n, ty, op, c, &mut req)
                        ),
                    }
                }
                Op::Gather | Op::Scatter | Op::Allgather | Op::Alltoall => {
                    let (sn, sty, sb) = self.side(&send)?;
                    let (rn, rty, _) = self.side(&recv)?;
                    let per =
                        |n: c_int, d: i64| usize::try_from(i64::from(n) * d.max(1)).unwrap_or(0);
                    let (s_all, r_all) = match base {
                        Op::Scatter => (per(sn, send.dsize) * np, per(rn, recv.dsize)),
                        Op::Alltoall => (per(sn, send.dsize) * np, per(rn, recv.dsize) * np),
                        _ => (per(sn, send.dsize), per(rn, recv.dsize) * np),
                    };
                    let sb = if base == Op::Scatter || base == Op::Alltoall {
                        self.buf(s_all)
                    } else {
                        sb
                    };
                    let mut rb = self.buf(r_all.max(per(rn, recv.dsize)));
                    sent = s_all as f64;
                    let (sp, rp) = places(e.in_place, base == Op::Scatter, in_place, &sb, &mut rb);
                    bufs.push(sb);
                    bufs.push(rb);
                    match base {
                        Op::Gather => go!(
                            MPI_Gather(sp, sn, sty, rp, rn, rty, root, c),
                            MPI_Igather(sp, sn, sty, rp, rn, rty, root, c, &mut req),
                            PMPI_Igather(sp, sn, sty, rp, rn, rty, root, c, &mut req)
                        ),
                        Op::Scatter => go!(
                            MPI_Scatter(sp, sn, sty, rp, rn, rty, root, c),
                            MPI_Iscatter(sp, sn, sty, rp, rn, rty, root, c, &mut req),
                            PMPI_Iscatter(sp, sn, sty, rp, rn, rty, root, c, &mut req)
                        ),
                        Op::Allgather => go!(
                            MPI_Allgather(sp, sn, sty, rp, rn, rty, c),
                            MPI_Iallgather(sp, sn, sty, rp, rn, rty, c, &mut req),
                            PMPI_Iallgather(sp, sn, sty, rp, rn, rty, c, &mut req)
                        ),
                        _ => go!(
                            MPI_Alltoall(sp, sn, sty, rp, rn, rty, c),
                            MPI_Ialltoall(sp, sn, sty, rp, rn, rty, c, &mut req),
                            PMPI_Ialltoall(sp, sn, sty, rp, rn, rty, c, &mut req)
                        ),
                    }
                }
                Op::Gatherv | Op::Scatterv | Op::Allgatherv | Op::Alltoallv => {
                    let (sn, sty, _) = self.side(&send)?;
                    let (rn, rty, _) = self.side(&recv)?;
                    let scounts = if e.send_counts.is_empty() {
                        vec![sn; np]
                    } else {
                        counts(&e.send_counts, self)
                    };
                    let rcounts = if e.recv_counts.is_empty() {
                        vec![rn; np]
                    } else {
                        counts(&e.recv_counts, self)
                    };
                    let (sd, rd) = (displs(&scounts), displs(&rcounts));
                    let total = |v: &[c_int], d: i64| {
                        usize::try_from(v.iter().map(|&x| i64::from(x)).sum::<i64>() * d.max(1))
                            .unwrap_or(0)
                    };
                    let sbytes = match base {
                        Op::Gatherv | Op::Allgatherv => {
                            usize::try_from(i64::from(sn) * send.dsize.max(1)).unwrap_or(0)
                        }
                        _ => total(&scounts, send.dsize),
                    };
                    let rbytes = match base {
                        Op::Scatterv => {
                            usize::try_from(i64::from(rn) * recv.dsize.max(1)).unwrap_or(0)
                        }
                        _ => total(&rcounts, recv.dsize),
                    };
                    let sb = self.buf(sbytes);
                    let mut rb = self.buf(rbytes);
                    sent = sbytes as f64;
                    let (sp, rp) = places(e.in_place, base == Op::Scatterv, in_place, &sb, &mut rb);
                    let (scp, sdp, rcp, rdp) =
                        (scounts.as_ptr(), sd.as_ptr(), rcounts.as_ptr(), rd.as_ptr());
                    let rc = match base {
                        Op::Gatherv => go!(
                            MPI_Gatherv(sp, sn, sty, rp, rcp, rdp, rty, root, c),
                            MPI_Igatherv(sp, sn, sty, rp, rcp, rdp, rty, root, c, &mut req),
                            PMPI_Igatherv(sp, sn, sty, rp, rcp, rdp, rty, root, c, &mut req)
                        ),
                        Op::Scatterv => go!(
                            MPI_Scatterv(sp, scp, sdp, sty, rp, rn, rty, root, c),
                            MPI_Iscatterv(sp, scp, sdp, sty, rp, rn, rty, root, c, &mut req),
                            PMPI_Iscatterv(sp, scp, sdp, sty, rp, rn, rty, root, c, &mut req)
                        ),
                        Op::Allgatherv => go!(
                            MPI_Allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c),
                            MPI_Iallgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut req),
                            PMPI_Iallgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut req)
                        ),
                        _ => go!(
                            MPI_Alltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c),
                            MPI_Ialltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut req),
                            PMPI_Ialltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut req)
                        ),
                    };
                    bufs.push(sb);
                    bufs.push(rb);
                    keep.ints.extend([scounts, sd, rcounts, rd]);
                    rc
                }
                Op::Alltoallw => {
                    let sc = counts(&e.send_counts, self);
                    let rcn = counts(&e.recv_counts, self);
                    let mut stys = Vec::with_capacity(np);
                    let mut rtys = Vec::with_capacity(np);
                    for &d in &e.send_dsizes {
                        stys.push(self.dtype(i64::from(d))?);
                    }
                    for &d in &e.recv_dsizes {
                        rtys.push(self.dtype(i64::from(d))?);
                    }
                    let bdispl = |cnt: &[c_int], ds: &[i32]| -> (Vec<c_int>, usize) {
                        let mut off = 0usize;
                        let v = cnt
                            .iter()
                            .zip(ds)
                            .map(|(&n, &d)| {
                                let o = off;
                                off += usize::try_from(i64::from(n) * i64::from(d.max(1)))
                                    .unwrap_or(0);
                                o as c_int
                            })
                            .collect();
                        (v, off)
                    };
                    let (sd, sbytes) = bdispl(&sc, &e.send_dsizes);
                    let (rd, rbytes) = bdispl(&rcn, &e.recv_dsizes);
                    let sb = self.buf(sbytes);
                    let mut rb = self.buf(rbytes);
                    sent = sbytes as f64;
                    let sp = if e.in_place {
                        in_place.cast_const()
                    } else {
                        sb.as_ptr().cast()
                    };
                    let rp = rb.as_mut_ptr().cast();
                    let (scp, sdp, rcp, rdp) = (
                        if e.in_place {
                            std::ptr::null()
                        } else {
                            sc.as_ptr()
                        },
                        if e.in_place {
                            std::ptr::null()
                        } else {
                            sd.as_ptr()
                        },
                        rcn.as_ptr(),
                        rd.as_ptr(),
                    );
                    let (stp, rtp) = (
                        if e.in_place {
                            std::ptr::null()
                        } else {
                            stys.as_ptr()
                        },
                        rtys.as_ptr(),
                    );
                    let rc = go!(
                        MPI_Alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c),
                        MPI_Ialltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut req),
                        PMPI_Ialltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut req)
                    );
                    bufs.push(sb);
                    bufs.push(rb);
                    keep.ints.extend([sc, sd, rcn, rd]);
                    keep.types.extend([stys, rtys]);
                    rc
                }
                Op::ReduceScatter | Op::ReduceScatterBlock => {
                    let (op, ty) = self.reduction(e.redop, &recv)?;
                    let rcounts = if base == Op::ReduceScatter {
                        counts(&e.recv_counts, self)
                    } else {
                        vec![self.count(recv.count); np]
                    };
                    let total: i64 = rcounts.iter().map(|&x| i64::from(x)).sum();
                    let el = recv.dsize.max(1);
                    let sb = self.buf(usize::try_from(total * el).unwrap_or(0));
                    let mut rb = self.buf(usize::try_from(total * el).unwrap_or(0));
                    sent = sb.len() as f64;
                    let sp = if e.in_place {
                        in_place.cast_const()
                    } else {
                        sb.as_ptr().cast()
                    };
                    let rp = rb.as_mut_ptr().cast();
                    let rc = if base == Op::ReduceScatter {
                        go!(
                            MPI_Reduce_scatter(sp, rp, rcounts.as_ptr(), ty, op, c),
                            MPI_Ireduce_scatter(sp, rp, rcounts.as_ptr(), ty, op, c, &mut req),
                            PMPI_Ireduce_scatter(sp, rp, rcounts.as_ptr(), ty, op, c, &mut req)
                        )
                    } else {
                        let n = rcounts.first().copied().unwrap_or(0);
                        go!(
                            MPI_Reduce_scatter_block(sp, rp, n, ty, op, c),
                            MPI_Ireduce_scatter_block(sp, rp, n, ty, op, c, &mut req),
                            PMPI_Ireduce_scatter_block(sp, rp, n, ty, op, c, &mut req)
                        )
                    };
                    bufs.push(sb);
                    bufs.push(rb);
                    keep.ints.push(rcounts);
                    rc
                }
                op => bail!("{} is not replayed yet", op.name()),
            }
        };
        check(rc, e.op.name())?;
        if nonblocking {
            keep.bytes = bufs;
            self.new_req(e.req, req, keep, false);
        } else if self.yield_colls {
            // Issued as PMPI_I*: complete it here, sleeping between tests
            // (`bufs` and `keep` live until then).
            self.await_request(&mut req)?;
            drop((bufs, keep));
        }
        Ok(sent)
    }

    /// Communicator constructors and Comm_free, replayed from the lineage
    /// the trace recorded.
    fn comm_op(&mut self, e: &Event) -> Result<()> {
        let parent = self.comm(e.comm)?;
        if e.op == Op::CommFree {
            let mut c = parent;
            // SAFETY: `c` is a live communicator created by this replay.
            check(unsafe { MPI_Comm_free(&mut c) }, "MPI_Comm_free")?;
            self.comms.remove(e.comm.0);
            return Ok(());
        }
        let cr = e
            .create
            .as_ref()
            .context("communicator constructor without its lineage")?;
        // SAFETY: reading initialised mpi-sys constants.
        let (undefined, null, info) =
            unsafe { (RSMPI_UNDEFINED, RSMPI_COMM_NULL, RSMPI_INFO_NULL) };
        let mut new = null;
        let reorder = c_int::from(cr.reorder.unwrap_or(false));
        // SAFETY: (for the block) the arrays passed live across the call and
        // have the lengths passed with them; `parent` is live.
        let rc = unsafe {
            match e.op {
                Op::CommDup => MPI_Comm_dup(parent, &mut new),
                Op::CommSplit => MPI_Comm_split(
                    parent,
                    cr.color.unwrap_or(undefined),
                    cr.key.unwrap_or(0),
                    &mut new,
                ),
                Op::CommSplitType => MPI_Comm_split_type(
                    parent,
                    cr.split_type.unwrap_or(undefined),
                    cr.key.unwrap_or(0),
                    info,
                    &mut new,
                ),
                Op::CommCreate => {
                    // Members are world ranks: translate them into the parent.
                    let local = world_to_local(parent, &cr.members)?;
                    let mut pg = RSMPI_GROUP_NULL;
                    check(MPI_Comm_group(parent, &mut pg), "MPI_Comm_group")?;
                    let mut g = RSMPI_GROUP_NULL;
                    let rc = MPI_Group_incl(pg, local.len() as c_int, local.as_ptr(), &mut g);
                    MPI_Group_free(&mut pg);
                    check(rc, "MPI_Group_incl")?;
                    let rc = MPI_Comm_create(parent, g, &mut new);
                    MPI_Group_free(&mut g);
                    rc
                }
                Op::CartCreate => MPI_Cart_create(
                    parent,
                    cr.dims.len() as c_int,
                    cr.dims.as_ptr(),
                    cr.periods.as_ptr(),
                    reorder,
                    &mut new,
                ),
                Op::CartSub => MPI_Cart_sub(parent, cr.dims.as_ptr(), &mut new),
                Op::GraphCreate => MPI_Graph_create(
                    parent,
                    cr.dims.len() as c_int,
                    cr.dims.as_ptr(),
                    cr.edges.as_ptr(),
                    reorder,
                    &mut new,
                ),
                Op::DistGraphCreateAdjacent => MPI_Dist_graph_create_adjacent(
                    parent,
                    cr.sources.len() as c_int,
                    cr.sources.as_ptr(),
                    RSMPI_UNWEIGHTED(),
                    cr.edges.len() as c_int,
                    cr.edges.as_ptr(),
                    RSMPI_UNWEIGHTED(),
                    info,
                    reorder,
                    &mut new,
                ),
                Op::DistGraphCreate => MPI_Dist_graph_create(
                    parent,
                    cr.sources.len() as c_int,
                    cr.sources.as_ptr(),
                    cr.dims.as_ptr(),
                    cr.edges.as_ptr(),
                    RSMPI_UNWEIGHTED(),
                    info,
                    reorder,
                    &mut new,
                ),
                op => bail!("{} is not replayed yet", op.name()),
            }
        };
        check(rc, e.op.name())?;
        if let Some(id) = cr.new
            && new != null
        {
            self.comms.insert(id.0, new);
        }
        Ok(())
    }
}

/// The pauses of one polling loop. In yield mode a sleep of 20 µs that
/// doubles after every [`BACKOFF_POLLS`] polls, up to 1 ms: on an
/// oversubscribed node the ranks that wait long (64 MPICH ranks on 2
/// cores, most of them waiting at any time) then leave the cores to the
/// ones that can progress, while a short wait still costs 20 µs a poll.
/// Without yield mode, a yield of the time slice.
struct Backoff {
    yield_wait: bool,
    polls: u32,
}

/// `MPI_Isend` and its synchronous and ready forms.
type SendFn = unsafe extern "C" fn(
    *const c_void,
    c_int,
    MPI_Datatype,
    c_int,
    c_int,
    MPI_Comm,
    *mut MPI_Request,
) -> c_int;

/// Polls at each sleep length before it doubles.
const BACKOFF_POLLS: u32 = 32;

impl Backoff {
    fn new(yield_wait: bool) -> Backoff {
        Backoff {
            yield_wait,
            polls: 0,
        }
    }

    fn pause(&mut self) {
        if !self.yield_wait {
            std::thread::yield_now();
            return;
        }
        let us = (20u64 << (self.polls / BACKOFF_POLLS).min(6)).min(1000);
        self.polls = self.polls.saturating_add(1);
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// The ranks in `comm` of the given world ranks (the trace records peers
/// and group members as world ranks).
fn world_to_local(comm: MPI_Comm, world: &[c_int]) -> Result<Vec<c_int>> {
    let mut local = vec![0 as c_int; world.len()];
    // SAFETY: `comm` is a live communicator; both groups are freed before
    // returning; the rank arrays have `world.len()` entries.
    unsafe {
        let (mut wg, mut cg) = (RSMPI_GROUP_NULL, RSMPI_GROUP_NULL);
        check(MPI_Comm_group(RSMPI_COMM_WORLD, &mut wg), "MPI_Comm_group")?;
        let rc = MPI_Comm_group(comm, &mut cg);
        let rc = if rc == 0 {
            let rc = MPI_Group_translate_ranks(
                wg,
                world.len() as c_int,
                world.as_ptr(),
                cg,
                local.as_mut_ptr(),
            );
            MPI_Group_free(&mut cg);
            rc
        } else {
            rc
        };
        MPI_Group_free(&mut wg);
        check(rc, "MPI_Group_translate_ranks")?;
    }
    Ok(local)
}

/// Runs the replay on this rank and returns the process exit code.
pub fn run(opts: &Opts, file: &TraceFile) -> i32 {
    match run_inner(opts, file) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("replay: error: {e:#}");
            // SAFETY: aborting the job after an unrecoverable error on this
            // rank; the other ranks may be blocked on it.
            unsafe { MPI_Abort(RSMPI_COMM_WORLD, 1) };
            1
        }
    }
}

fn run_inner(opts: &Opts, file: &TraceFile) -> Result<i32> {
    let trace = &file.trace;
    // Start MPI the way the application did (rank 0's first event).
    let first = trace.rank_trace(0).ok().and_then(|t| t.expand().next());
    let mut provided: c_int = 0;
    // SAFETY: MPI is initialised once, with no arguments.
    let rc = unsafe {
        match first {
            Some(ev) if ev.op == Op::InitThread => {
                let required = ev.value.unwrap_or(0) / 16;
                MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    required as c_int,
                    &mut provided,
                )
            }
            _ => MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()),
        }
    };
    check(rc, "MPI_Init")?;
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialised; out-parameters are valid.
    unsafe {
        MPI_Comm_rank(RSMPI_COMM_WORLD, &mut rank);
        MPI_Comm_size(RSMPI_COMM_WORLD, &mut size);
    }
    let want = trace.ranks().len();
    if u64::try_from(size).unwrap_or(0) != want {
        if rank == 0 {
            eprintln!(
                "replay: error: {} holds a trace of {want} ranks, but replay runs on {size}; run it as `mpirun -n {want} replay {}`",
                opts.file.display(),
                opts.file.display()
            );
        }
        // SAFETY: every rank gets here; no communication is pending.
        unsafe { MPI_Finalize() };
        return Ok(1);
    }
    if !validated(file, rank) {
        // SAFETY: every rank gets here after the same verdict; no
        // communication is pending.
        unsafe { MPI_Finalize() };
        return Ok(1);
    }
    // SAFETY: reading initialised mpi-sys constants.
    let (world, selfc) = unsafe { (RSMPI_COMM_WORLD, RSMPI_COMM_SELF) };
    let comms = Comms::new(world, selfc);
    let rt = trace
        .rank_trace(rank as u32)
        .map_err(|e| anyhow!("rank {rank}: {e}"))?;
    // The application threads that called MPI on this rank: one replay
    // thread each.
    let mut threads = Vec::new();
    threads_of(rt.nodes(), &mut threads);
    threads.sort_unstable();
    threads.dedup();
    if threads.len() > 1 && provided != 3 {
        bail!(
            "rank {rank}: the trace has {} threads calling MPI, which needs MPI_THREAD_MULTIPLE; MPI provided level {provided}",
            threads.len()
        );
    }
    let progress = Progress::new(threads.len());
    let current = Arc::new(Mutex::new(String::from("the start barrier")));
    let finished = Arc::new(AtomicBool::new(false));
    if opts.timeout > 0.0 {
        watchdog(rank, opts.timeout, current.clone(), finished.clone());
    }
    let new_replayer =
        |slot: usize| Replayer::new(opts, rank, slot, comms.clone(), threads.len() > 1);
    // Causal gates, set up on every rank (collective); a rank with
    // several threads neither holds nor releases messages.
    let mine = if threads.len() > 1 {
        Vec::new()
    } else {
        replay::gates::gates(rt.expand())
    };
    let app = if opts.no_compute {
        0.0
    } else {
        file.meta.wall_ns as f64 * 1e-9 * opts.compute_scale
    };
    // A threaded rank's sends are not placed: it never waits.
    let placed: Box<dyn Iterator<Item = Event>> = if threads.len() > 1 {
        Box::new(std::iter::empty())
    } else {
        Box::new(rt.expand())
    };
    let gates = Gates::new(
        mine,
        placed,
        trace,
        world,
        Duration::from_secs_f64(1.0 + 2.0 * app),
    )?;
    let mut r = new_replayer(0);
    if threads.len() > 1 {
        gates.finish()?;
    } else {
        r.gates = Some(gates);
    }
    // SAFETY: a barrier on the world communicator, outside the traced API.
    unsafe { PMPI_Barrier(world) };
    let start = Instant::now();
    let n_events = std::thread::scope(|s| -> Result<u64> {
        let helpers: Vec<_> = threads
            .iter()
            .enumerate()
            .skip(1)
            .map(|(slot, &tid)| {
                let (rt, progress, current) = (&rt, &progress, &current);
                s.spawn(move || -> Result<(Summary, u64)> {
                    let mut r = new_replayer(slot);
                    let n = fail_fast(r.run_thread(rt, rank, (slot, tid), progress, current))?;
                    Ok((r.finish(), n))
                })
            })
            .collect();
        let mut n = fail_fast(r.run_thread(
            &rt,
            rank,
            (0, threads.first().copied().unwrap_or(0)),
            &progress,
            &current,
        ))?;
        for h in helpers {
            let (other, k) = h
                .join()
                .map_err(|_| anyhow!("rank {rank}: a replay thread panicked"))??;
            r.absorb(other);
            n += k;
        }
        Ok(n)
    })?;
    let mine = start.elapsed().as_secs_f64();
    if let Ok(mut cur) = current.lock() {
        *cur = format!("the end barrier, after all its {n_events} events");
    }
    let mut gates = r.gates.take();
    let mut given_up = r.latency;
    if let Some(g) = gates.as_mut() {
        given_up += g.given_up;
        g.complete()?;
    }
    // SAFETY: collective bookkeeping outside the traced API; buffers are
    // live locals of the right lengths.
    let (total, sums, outcomes) = unsafe {
        PMPI_Barrier(world);
        let mut total = 0f64;
        PMPI_Reduce(
            (&raw const mine).cast(),
            (&raw mut total).cast(),
            1,
            RSMPI_DOUBLE,
            RSMPI_MAX,
            0,
            world,
        );
        let flat: Vec<f64> = r
            .stats
            .iter()
            .flat_map(|s| [s.calls, s.bytes, s.secs])
            .chain([r.diverged as f64, given_up as f64])
            .collect();
        let mut sums = vec![0f64; flat.len()];
        PMPI_Reduce(
            flat.as_ptr().cast(),
            sums.as_mut_ptr().cast(),
            flat.len() as c_int,
            RSMPI_DOUBLE,
            RSMPI_SUM,
            0,
            world,
        );
        let given_up = sums.pop().unwrap_or(0.0);
        let diverged = sums.pop().unwrap_or(0.0);
        (total, sums, (diverged, given_up))
    };
    if let Some(g) = gates {
        g.finish()?;
    }
    finished.store(true, Ordering::SeqCst);
    let sites = gather_sites(&r.sites, rank, world)?;
    if rank == 0 {
        report(opts, file, total, &sums, outcomes, &sites);
    }
    r.free_types();
    // SAFETY: every request of the trace has completed; MPI ends once.
    check(unsafe { MPI_Finalize() }, "MPI_Finalize")?;
    Ok(0)
}

/// The threads whose calls the compressed structure holds (a walk over its
/// nodes, not its expansion: start-up stays proportional to trace size).
fn threads_of(nodes: &[compress::Node], out: &mut Vec<u32>) {
    for n in nodes {
        match n.as_loop() {
            Some(l) => threads_of(l.body(), out),
            None => out.extend(n.shape().map(compress::Shape::thread)),
        }
    }
}

/// Whether `--yield` issues a blocking collective in its nonblocking form.
/// Not on Open MPI: version 4.1 agrees on new communicators with nonblocking
/// allreduces whose libnbc tags run through the fixed tags of
/// `MPI_Dist_graph_create`, so nonblocking collectives the application did
/// not call can hang a later `MPI_Dist_graph_create`. Open MPI yields in
/// blocking calls with its own `mpi_yield_when_idle`.
fn yield_collectives(opts: &Opts) -> bool {
    opts.yield_wait && !is_open_mpi()
}

/// Whether the MPI library is Open MPI (from its version string, read as
/// the tracer reads it).
fn is_open_mpi() -> bool {
    MpiLibrary::of(&library_version()) == MpiLibrary::OpenMpi
}

/// Ends the job at once when a replay thread fails: the rank's other
/// threads may be blocked in MPI calls that will never complete, so
/// waiting to join them would hang instead of reporting the error.
fn fail_fast<T>(r: Result<T>) -> Result<T> {
    if let Err(e) = &r {
        eprintln!("replay: error: {e:#}");
        // SAFETY: aborting the job after an unrecoverable error; allowed
        // from any thread.
        unsafe { MPI_Abort(RSMPI_COMM_WORLD, 1) };
    }
    r
}

/// After `secs` seconds, unless the replay has finished, says what this
/// rank waits on and ends the process (the launcher then ends the job). A
/// thread of its own that never calls MPI, so it works whatever thread
/// level MPI was started with.
fn watchdog(rank: i32, secs: f64, current: Arc<Mutex<String>>, finished: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < deadline {
            if finished.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let what = current.lock().map(|c| c.clone()).unwrap_or_default();
        eprintln!("replay: error: timeout after {secs} s: rank {rank} waits in {what}");
        // Every rank reaches its deadline at about the same time; the first
        // to exit makes the launcher end the others, so let them all speak.
        std::thread::sleep(Duration::from_millis(500));
        std::process::exit(3);
    });
}

/// Totals per (operation, call site) over all ranks, on rank 0: every
/// rank's table is gathered (outside the traced API) and summed.
fn gather_sites(
    mine: &HashMap<(Op, u64), OpStats>,
    rank: i32,
    world: MPI_Comm,
) -> Result<Vec<((Op, u64), OpStats)>> {
    let flat: Vec<u64> = mine
        .iter()
        .flat_map(|(&(op, site), s)| {
            [
                op as u64,
                site,
                s.calls as u64,
                s.bytes as u64,
                (s.secs * 1e9) as u64,
            ]
        })
        .collect();
    let mut size: c_int = 0;
    // SAFETY: world is valid after MPI_Init.
    unsafe { MPI_Comm_size(world, &mut size) };
    let all = crate::tokens::gather(&flat, world, size as usize, rank)?.concat();
    if rank != 0 {
        return Ok(Vec::new());
    }
    let mut sum: HashMap<(Op, u64), OpStats> = HashMap::new();
    for c in all.chunks_exact(5) {
        let Some(&op) = Op::ALL.get(c[0] as usize) else {
            continue;
        };
        let e = sum.entry((op, c[1])).or_default();
        e.calls += c[2] as f64;
        e.bytes += c[3] as f64;
        e.secs += c[4] as f64 / 1e9;
    }
    let mut v: Vec<_> = sum.into_iter().collect();
    v.sort_by(|a, b| {
        b.1.secs
            .total_cmp(&a.1.secs)
            .then(b.1.calls.total_cmp(&a.1.calls))
    });
    Ok(v)
}

fn report(
    opts: &Opts,
    file: &TraceFile,
    total: f64,
    sums: &[f64],
    (diverged, given_up): (f64, f64),
    sites: &[((Op, u64), OpStats)],
) {
    let labels: HashMap<u64, &str> = file
        .meta
        .sites
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .collect();
    let label = |site: u64| {
        labels
            .get(&site)
            .map_or_else(|| format!("{site:016x}"), |l| (*l).to_string())
    };
    let rows: Vec<(Op, f64, f64, f64)> = Op::ALL
        .iter()
        .enumerate()
        .map(|(i, &op)| (op, sums[3 * i], sums[3 * i + 1], sums[3 * i + 2]))
        .filter(|r| r.1 > 0.0)
        .collect();
    if opts.json {
        let v = serde_json::json!({
            "file": opts.file.display().to_string(),
            "ranks": file.trace.ranks().len(),
            "replay_seconds": total,
            "application_seconds": file.meta.wall_ns as f64 / 1e9,
            "application_extrapolated": file.meta.is_extrapolated(),
            "outcome_divergences": diverged,
            "latency_races": given_up,
            "operations": rows.iter().map(|(op, calls, bytes, secs)| serde_json::json!({
                "op": op.name(), "calls": calls, "bytes_sent": bytes, "seconds_in_mpi": secs,
            })).collect::<Vec<_>>(),
            "call_sites": sites.iter().map(|((op, site), s)| serde_json::json!({
                "op": op.name(), "site": format!("{site:016x}"), "site_label": label(*site),
                "calls": s.calls, "bytes_sent": s.bytes, "seconds_in_mpi": s.secs,
            })).collect::<Vec<_>>(),
        });
        println!("{v:#}");
        return;
    }
    println!(
        "replay of {}: {} ranks, {:.3} s (application{}: {:.3} s)",
        opts.file.display(),
        file.trace.ranks().len(),
        total,
        if file.meta.is_extrapolated() {
            ", extrapolated"
        } else {
            ""
        },
        file.meta.wall_ns as f64 / 1e9
    );
    if given_up > 0.0 {
        println!(
            "{given_up} latency races not forced: in the application a message was still in flight when a racy call missed it, although its send came first (a hold would deadlock the replay), or a send request completed later than in the replay; no order of calls reproduces these"
        );
    }
    if diverged > 0.0 {
        println!(
            "{diverged} outcomes of racy calls differed from the trace (wildcard receives that matched another message, Waitany/Waitsome/Test calls that completed other requests); the replay followed MPI and left out completions of requests already complete"
        );
    }
    println!(
        "{:<24} {:>12} {:>16} {:>14}",
        "operation", "calls", "bytes sent", "time in MPI s"
    );
    for (op, calls, bytes, secs) in rows {
        println!("{:<24} {calls:>12} {bytes:>16} {secs:>14.6}", op.name());
    }
    println!(
        "\nper call site of the application (the 20 with the most time in MPI):\n{:<16} {:<32} {:>12} {:>16} {:>14}",
        "operation", "site", "calls", "bytes sent", "time in MPI s"
    );
    for ((op, site), s) in sites.iter().take(20) {
        println!(
            "{:<16} {:<32} {:>12} {:>16} {:>14.6}",
            op.name(),
            label(*site),
            s.calls,
            s.bytes,
            s.secs
        );
    }
}
