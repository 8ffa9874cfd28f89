//! The MPI side of replay: one rank's events re-issued as MPI calls.
//!
//! Calls go to the `MPI_*` entry points, so that the tracer, preloaded into
//! `replay`, records the replay like any application (the fixed-point
//! check). Replay's own bookkeeping (the start and end barriers, the
//! report's reductions, polling a request until the trace says it is
//! complete) goes to `PMPI_*` and so stays out of such a trace.
//!
//! This module starts and ends MPI, holds the [`Replayer`] with its buffers
//! and datatypes, and hands each event to its concern: [`p2p`] (sends,
//! receives, probes), [`requests`] (the request table and the completion
//! calls), [`coll`] (collectives and reductions), [`comm`] (communicators),
//! [`rma`] (windows and one-sided communication), [`io`] (MPI-IO, in a
//! scratch directory),
//! [`threads`] (a rank's replay threads and their order) and [`report`]
//! (the totals and the printed profile).

/// Issues a collective (global or neighbourhood) in its mode
/// ([`coll::Issue`]): the traced blocking call, its traced nonblocking
/// form, for a blocking call in yield mode its nonblocking form outside
/// the traced API (completed by test-and-sleep after it), or its MPI 4
/// persistent form. Only one of them runs.
macro_rules! issue {
    ($mode:expr, $yield_colls:expr; $blocking:expr, $nb:expr, $yield:expr, $persistent:expr) => {
        match $mode {
            $crate::exec::coll::Issue::Nonblocking => $nb,
            $crate::exec::coll::Issue::Persistent => mpi4!($persistent),
            $crate::exec::coll::Issue::Blocking if $yield_colls => $yield,
            $crate::exec::coll::Issue::Blocking => $blocking,
        }
    };
}

/// An MPI 4 call, compiled only where the MPI has it (MPICH 4; not Open
/// MPI 4.1, whose `mpi.h` is MPI 3.1): elsewhere the replay stops with
/// an error that says so.
#[cfg(rankscale_mpi4)]
macro_rules! mpi4 {
    ($call:expr) => {
        $call
    };
}

/// See the MPI 4 version above.
#[cfg(not(rankscale_mpi4))]
macro_rules! mpi4 {
    ($call:expr) => {
        return Err(anyhow::anyhow!(
            "the trace holds MPI 4 calls (persistent collectives, partitioned \
             communication, Isendrecv, Comm_idup_with_info, constructors from groups), which \
             this MPI library lacks (Open MPI 4.1 has none of them): replay it with \
             an MPI 4 library (MPICH 4)"
        ))
    };
}

mod coll;
mod comm;
mod io;
mod neighbor;
mod p2p;
#[cfg(rankscale_mpi4)]
mod partitioned;
mod report;
mod requests;
mod rma;
#[cfg(rankscale_mpi4)]
mod session;
mod threads;

use std::collections::{HashMap, HashSet};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use mpi_helpers::{library_version, rs_type_of_code};
use mpi_sys::*;
use replay::Rng;
use replay::pace::Pacer;
use trace::{CommId, Datatype, Event, Family, MpiLibrary, Op, Peer, Tag, TraceFile, Transfer};

use self::comm::Comms;
use self::report::OpStats;
use self::requests::Req;
use self::threads::Progress;
use crate::Opts;
pub(crate) use crate::rc::check;
use crate::tokens::Gates;

/// Checks the trace before any of its calls is issued: this rank's events
/// and those of the ranks it exchanges messages with (peers and roots in
/// range, lists as long as their communicators, communicators that fit,
/// every message received and every receive sent, collectives that agree),
/// so that an inconsistent trace, extrapolated or corrupted, stops with a
/// clear message instead of undefined behaviour inside MPI. Every rank
/// learns every other's verdict, so all stop together.
fn validated(file: &TraceFile, rank: c_int) -> bool {
    let mine: c_int = match semantics::check::check_ranks(file, &[rank as u32]) {
        Ok(r) if r.is_consistent() => 1,
        Ok(r) => {
            for p in r.problems.iter().take(3) {
                replay::say(&format!(
                    "replay: error: rank {rank}: inconsistent trace: {p}"
                ));
            }
            0
        }
        Err(e) => {
            replay::say(&format!("replay: error: rank {rank}: {e}"));
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
        if rank == 0 {
            for note in file.trace.passed_over() {
                replay::say(&format!("replay: note: {note}"));
            }
        }
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
    let rc = unsafe { PMPI_Type_size(ty, &mut size) };
    (rc == 0 && i64::from(size) == t.dsize).then_some(ty)
}

/// The bytes one element of `ty` takes in a buffer of several: its upper
/// bound (lower bound plus extent), at least `dsize` and at least 1. This
/// is more than the recorded size for the MAXLOC/MINLOC pair types with
/// padding (`MPI_DOUBLE_INT` is 12 bytes of data in 16 of extent on
/// x86-64), so a buffer sized by the size alone would be overrun.
/// `MPI_DATATYPE_NULL` (a count of 0) has no extent to ask for.
pub(super) fn span(ty: MPI_Datatype, dsize: i64) -> i64 {
    // SAFETY: reading an initialised mpi-sys constant.
    if ty == unsafe { RSMPI_DATATYPE_NULL } {
        return dsize.max(1);
    }
    let (mut lb, mut extent): (MPI_Aint, MPI_Aint) = (0, 0);
    // SAFETY: `ty` is a predefined datatype or one this replay committed;
    // `lb` and `extent` are valid out-parameters.
    let rc = unsafe { PMPI_Type_get_extent(ty, &mut lb, &mut extent) };
    // MPI_Aint is `long` (i64) in MPICH's bindings and `isize` in Open
    // MPI's: the conversion is a no-op on one of them.
    #[allow(clippy::useless_conversion)]
    let ub = if rc == 0 {
        i64::try_from(lb.saturating_add(extent)).unwrap_or(0)
    } else {
        0
    };
    ub.max(dsize).max(1)
}

/// The length of a buffer of `n` elements of `span` bytes each (0 for a
/// negative or overflowing product, which the trace check rules out).
pub(super) fn elements(n: impl Into<i64>, span: i64) -> usize {
    usize::try_from(n.into().saturating_mul(span)).unwrap_or(0)
}

/// The elements of all blocks of `counts` together.
pub(super) fn total(counts: &[c_int]) -> i64 {
    counts.iter().map(|&x| i64::from(x)).sum()
}

/// Byte displacements of consecutive blocks of `counts` elements of
/// `sizes` bytes each (a size below 1 taken as 1), in the integer type the
/// call takes them in (`to`: `int` for Alltoallw, `MPI_Aint` for
/// Neighbor_alltoallw), and the bytes of all blocks together.
pub(super) fn byte_displs<T>(
    counts: &[c_int],
    sizes: &[i32],
    to: impl Fn(usize) -> T,
) -> (Vec<T>, usize) {
    let mut off = 0usize;
    let v = counts
        .iter()
        .zip(sizes)
        .map(|(&n, &d)| {
            let at = off;
            off += usize::try_from(i64::from(n) * i64::from(d.max(1))).unwrap_or(0);
            to(at)
        })
        .collect();
    (v, off)
}

thread_local! {
    /// Payload blocks given back by dropped [`Buf`]s, for the next calls.
    static POOL: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Blocks the pool keeps at most (the largest number of buffers that calls
/// in flight at once usually hold).
const POOL_BLOCKS: usize = 64;

/// A payload buffer from the replay thread's pool. Dropping it gives its
/// block back, so consecutive calls reuse blocks instead of allocating: a
/// fresh block of more than 128 KiB is a fresh `mmap`, paid in page faults
/// and zeroing on every call, which was most of replay's time on NPB MG
/// (0.2 s against 0.015 s for the same calls from a generated benchmark).
/// A moved `Buf` keeps its block in place, as MPI needs while it uses it.
pub(super) struct Buf(Vec<u8>);

impl std::ops::Deref for Buf {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        // A thread's pool may already be gone when its last buffers drop.
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut()
                && p.len() < POOL_BLOCKS
            {
                p.push(v);
            }
        });
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

/// The replay of one application thread of a rank: its MPI handles by
/// trace id (datatypes, requests, matched messages; the communicators are
/// shared with the rank's other replay threads), the payload pattern, and
/// its part of the report. Each replay thread has its own, since MPI
/// handles other than communicators stay on the thread that made them.
struct Replayer<'o> {
    opts: &'o Opts,
    /// Whether `--yield` issues blocking collectives and sends in
    /// nonblocking form (not on Open MPI, see [`yield_collectives`]).
    yield_colls: bool,
    /// The computation draws (see [`compress::ComputeDraws`]).
    draws: compress::ComputeDraws,
    comms: Comms,
    /// The windows this thread made, by trace id (windows live in the
    /// communicators' id space).
    wins: rma::Windows,
    /// The exposure epochs of this rank's windows ([`rma::exposures`];
    /// the main thread of an unthreaded rank only).
    exposures: rma::Exposures,
    /// The files this thread opened, by trace id (files live in the
    /// communicators' id space), and the bytes its I/O moved.
    files: io::Files,
    /// How long an origin's `Win_complete` is held for a target's tests
    /// at most (the causal gates' timeout).
    hold_timeout: Duration,
    /// Whether other threads replay other parts of this rank: a
    /// communicator that is not there yet is then awaited (another thread
    /// creates it) instead of being an error.
    threaded: bool,
    types: HashMap<(i64, bool), MPI_Datatype>,
    /// Stand-ins of derived datatypes made of one predefined type (the
    /// accumulates need both sides made of the same one), by size and the
    /// predefined type's code.
    elem_types: HashMap<(i64, u8), MPI_Datatype>,
    /// The derived datatypes among `types` and `elem_types`, freed at the
    /// end.
    owned_types: Vec<MPI_Datatype>,
    reqs: HashMap<u64, Req>,
    /// Requests of calls recorded without detail, which replay does not
    /// issue: completion calls leave them out.
    passed: HashSet<u64>,
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
    /// `Parrived` calls that found their partition where the
    /// application's had not (see `partitioned`).
    early_partitions: u64,
    /// The computation drawn so far, ns (before `--compute-scale`).
    drawn_ns: f64,
    /// The emulated computation's clock.
    pacer: Pacer,
}

/// `MPI_REQUEST_NULL`: what a request handle holds before MPI sets it, and
/// after a completion call freed it.
fn request_null() -> MPI_Request {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_REQUEST_NULL }
}

/// A status for MPI to fill, all zero until then.
fn blank_status() -> MPI_Status {
    // SAFETY: MPI_Status is a C struct of integers (MPICH and Open MPI), for
    // which all-zero bits are a valid value.
    unsafe { std::mem::zeroed() }
}

impl<'o> Replayer<'o> {
    /// The replayer of one thread (`slot`) of `rank`.
    fn new(
        opts: &'o Opts,
        rank: i32,
        slot: usize,
        comms: Comms,
        threaded: bool,
        iodir: Option<Arc<std::path::PathBuf>>,
    ) -> Self {
        // The payload pattern has a generator of its own, so that the
        // computation draws are the stream `rankscale codegen`'s benchmark
        // draws (seed and rank alone): the two then sleep the same times.
        // Drawn from one stream after the pattern, they differed, and on
        // NPB MG that alone moved the run time by a sixth.
        let mut pattern = vec![0u8; 4096];
        let mut bytes = Rng::for_rank(!opts.emulation.seed, rank as u32);
        for chunk in pattern.chunks_mut(8) {
            let x = bytes.next_u64().to_ne_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
        let draws =
            compress::ComputeDraws::new(opts.emulation.seed ^ ((slot as u64) << 48), rank as u32);
        Replayer {
            opts,
            yield_colls: yield_collectives(opts),
            draws,
            comms,
            wins: rma::Windows::default(),
            exposures: rma::Exposures::new(),
            files: io::Files::new(iodir),
            hold_timeout: Duration::from_secs(1),
            threaded,
            types: HashMap::new(),
            elem_types: HashMap::new(),
            owned_types: Vec::new(),
            reqs: HashMap::new(),
            passed: HashSet::new(),
            msgs: HashMap::new(),
            stray: Vec::new(),
            pattern,
            user_op: None,
            stats: vec![OpStats::default(); Op::ALL.len()],
            sites: HashMap::new(),
            diverged: 0,
            gates: None,
            latency: 0,
            early_partitions: 0,
            drawn_ns: 0.0,
            pacer: Pacer::new(),
        }
    }

    /// Frees the derived datatypes this replayer created.
    fn free_types(&mut self) {
        for mut t in self.owned_types.drain(..) {
            // SAFETY: freeing a datatype this replayer created; no request
            // uses it any more.
            unsafe { PMPI_Type_free(&mut t) };
        }
    }

    /// The communicator of trace id `id`; on a threaded rank, one that
    /// another thread has yet to create is awaited.
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

    /// A recorded element count scaled by `--bytes-scale`, rounded and
    /// kept within what MPI's `int` counts hold.
    fn count(&self, c: i64) -> c_int {
        let scaled = (c as f64 * self.opts.emulation.bytes_scale).round();
        scaled.clamp(0.0, f64::from(c_int::MAX)) as c_int
    }

    /// Recorded per-rank (or per-neighbour) element counts, each scaled
    /// as [`Replayer::count`] scales one.
    fn counts(&self, v: &[i64]) -> Vec<c_int> {
        v.iter().map(|&x| self.count(x)).collect()
    }

    /// A buffer of `n` random-looking bytes (a repeated random block; at
    /// least one byte), from the thread's pool ([`Buf`]).
    fn buf(&self, n: usize) -> Buf {
        let n = n.max(1);
        let mut v = POOL.with(|p| {
            let mut p = p.borrow_mut();
            // The smallest pooled block that holds n bytes, else the
            // largest (grown below), else a new one.
            let fit = (0..p.len())
                .filter(|&i| p[i].capacity() >= n)
                .min_by_key(|&i| p[i].capacity());
            let pick = fit.or_else(|| (0..p.len()).max_by_key(|&i| p[i].capacity()));
            pick.map(|i| p.swap_remove(i)).unwrap_or_default()
        });
        // A block keeps its earlier bytes (payloads are not compared, and
        // were random-looking when written); only new bytes are filled.
        v.truncate(n);
        while v.len() < n {
            let k = (n - v.len()).min(self.pattern.len());
            v.extend_from_slice(&self.pattern[..k]);
        }
        Buf(v)
    }

    /// A contiguous datatype of `dsize` bytes (what the trace knows of the
    /// application's datatype; a derived one of no bytes for 0).
    fn dtype(&mut self, dsize: i64) -> Result<MPI_Datatype> {
        self.dtype_as(dsize, false)
    }

    /// [`Replayer::dtype`], as a derived type when `derived` (the
    /// application's was one: a contiguous type of its size, so that the
    /// replay, like the application, hands MPI a derived type and its
    /// raw log names one), else a predefined type of the size where one
    /// exists.
    fn dtype_as(&mut self, dsize: i64, derived: bool) -> Result<MPI_Datatype> {
        if let Some(&t) = self.types.get(&(dsize, derived)) {
            return Ok(t);
        }
        // A type of size 0 (an empty indexed type, say) is a
        // contiguous type of no bytes: its messages are empty, as the
        // application's.
        let n = c_int::try_from(dsize.max(0)).context("datatype size")?;
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
        let t = if let Some(t) = predefined.filter(|_| !derived) {
            t
        } else {
            // SAFETY: reading an initialised mpi-sys constant.
            let mut t = unsafe { RSMPI_DATATYPE_NULL };
            check(
                // SAFETY: `t` is a valid out-parameter; `byte` a predefined type.
                unsafe { PMPI_Type_contiguous(n, byte, &mut t) },
                "MPI_Type_contiguous",
            )?;
            // SAFETY: `t` was just created.
            check(unsafe { PMPI_Type_commit(&mut t) }, "MPI_Type_commit")?;
            self.owned_types.push(t);
            t
        };
        self.types.insert((dsize, derived), t);
        Ok(t)
    }

    /// A stand-in of `dsize` bytes for a derived datatype made of the
    /// predefined datatype `of` (an accumulate's other side): a contiguous
    /// type of that element, so that both sides of the accumulate are made
    /// of one predefined type as MPI requires; the usual stand-in when the
    /// size is not a whole number of elements.
    fn derived_of(&mut self, dsize: i64, of: &Transfer) -> Result<MPI_Datatype> {
        match predefined(of).filter(|_| of.dsize > 0 && dsize % of.dsize == 0) {
            Some(elem) => self.contiguous_of(dsize, elem, of.dsize, of.dtype.0),
            None => self.dtype_as(dsize, true),
        }
    }

    /// A contiguous stand-in of `dsize` bytes made of the predefined
    /// datatype `elem` of `esize` bytes (`code` tells stand-ins of one size
    /// apart: the element's trace code).
    fn contiguous_of(
        &mut self,
        dsize: i64,
        elem: MPI_Datatype,
        esize: i64,
        code: u8,
    ) -> Result<MPI_Datatype> {
        if let Some(&t) = self.elem_types.get(&(dsize, code)) {
            return Ok(t);
        }
        stand_in_note("a derived datatype", dsize);
        let n = c_int::try_from(dsize / esize.max(1)).context("datatype size")?;
        // SAFETY: reading an initialised mpi-sys constant.
        let mut t = unsafe { RSMPI_DATATYPE_NULL };
        check(
            // SAFETY: `t` is a valid out-parameter; `elem` a predefined type.
            unsafe { PMPI_Type_contiguous(n, elem, &mut t) },
            "MPI_Type_contiguous",
        )?;
        // SAFETY: `t` was just created.
        check(unsafe { PMPI_Type_commit(&mut t) }, "MPI_Type_commit")?;
        self.owned_types.push(t);
        self.elem_types.insert((dsize, code), t);
        Ok(t)
    }

    /// The datatype of one side of a call: the application's own when the
    /// trace names a predefined type of the recorded size, else a stand-in
    /// of that size ([`Replayer::dtype`]).
    fn typed(&mut self, t: &Transfer) -> Result<MPI_Datatype> {
        match predefined(t) {
            Some(ty) => Ok(ty),
            // Of size 0 and neither derived nor a known predefined type:
            // MPI_DATATYPE_NULL, which MPI accepts with a count of 0
            // (MPICH's part/nonblocking_pready sends so), replayed as it
            // was. (The per-peer types of Alltoallw, sizes alone, are
            // never null: MPI wants valid types there, so a size of 0
            // stays a derived type of no bytes.)
            None if t.dsize == 0 && t.dtype == Datatype::UNKNOWN => {
                // SAFETY: reading an initialised mpi-sys constant.
                Ok(unsafe { RSMPI_DATATYPE_NULL })
            }
            None => {
                let derived = t.dtype == Datatype::DERIVED;
                if derived {
                    stand_in_note("a derived datatype", t.dsize);
                }
                self.dtype_as(t.dsize, derived)
            }
        }
    }

    /// The MPI rank argument of a recorded peer (its rank in the call's
    /// communicator, or a wildcard or `MPI_PROC_NULL`).
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

    /// The MPI tag argument of a recorded tag.
    fn tag(t: Tag) -> c_int {
        match t {
            Tag::Value(v) => v,
            // SAFETY: reading an initialised mpi-sys constant.
            Tag::Any => unsafe { RSMPI_ANY_TAG },
        }
    }

    /// Count, datatype and a buffer for one side of a call: the buffer
    /// spans `count` elements of the datatype ([`span`]), so every call
    /// may pass the three together.
    fn side(&mut self, t: &Transfer) -> Result<(c_int, MPI_Datatype, Buf)> {
        let n = self.count(t.count);
        let ty = self.typed(t)?;
        Ok((n, ty, self.buf(elements(n, span(ty, t.dsize)))))
    }

    /// The pauses of a new polling loop.
    fn backoff(&self) -> Backoff {
        Backoff::new(self.opts.yield_wait)
    }

    /// Emulates `ns` nanoseconds of the application's computation (scaled
    /// by `--compute-scale`) on the thread's [`Pacer`]: a sleep and a spin
    /// for its last 100 µs, or only a sleep in yield mode, less what the
    /// earlier waits overran.
    fn sleep(&mut self, ns: u64) {
        if self.opts.emulation.no_compute || ns == 0 {
            return;
        }
        let d = Duration::from_nanos((ns as f64 * self.opts.emulation.compute_scale) as u64);
        // Oversubscribed (yield mode): never spin, the other ranks need
        // the core.
        self.pacer.wait(d, !self.opts.yield_wait);
    }

    /// Issues one event as its MPI call(s), handing it to its concern.
    /// Returns the bytes it sent (for the report).
    fn exec(&mut self, e: &Event) -> Result<f64> {
        // A call that returned an error did nothing: passed over (the note
        // at the start counts them).
        if e.failed() {
            return Ok(0.0);
        }
        match e.op {
            Op::Init | Op::InitThread | Op::Finalize => Ok(0.0),
            Op::Abort => bail!("the trace ends in MPI_Abort"),
            Op::Pcontrol => {
                let level = e.value.unwrap_or(0) as c_int;
                // SAFETY: MPI_Pcontrol takes its level and nothing after it.
                unsafe { MPI_Pcontrol(level) };
                Ok(0.0)
            }
            op if op.family() == Family::OneSided => self.one_sided(e),
            op if op.family() == Family::Io => self.io(e),
            Op::Send | Op::Ssend | Op::Bsend | Op::Rsend => self.send(e),
            Op::Recv => self.recv(e),
            Op::Sendrecv => self.sendrecv(e),
            Op::SendrecvReplace => self.sendrecv_replace(e),
            Op::Isendrecv | Op::IsendrecvReplace => mpi4!(self.isendrecv(e)),
            op if op.family() == Family::Partitioned => mpi4!(self.partitioned(e)),
            // The other sends: nonblocking and persistent, in any mode.
            op if op.is_send() => self.isend(e),
            Op::Irecv | Op::RecvInit => self.irecv(e),
            Op::Start | Op::Startall => self.start(e),
            Op::RequestFree => self.request_free(e),
            op if op.family() == Family::Completion => self.complete(e),
            Op::Probe | Op::Iprobe => self.probe(e),
            Op::Mprobe | Op::Improbe => self.mprobe(e),
            Op::Mrecv | Op::Imrecv => self.mrecv(e),
            op if op.is_neighborhood() => self.neighbor(e),
            op if op.is_collective() => self.collective(e),
            Op::CommDup
            | Op::CommDupWithInfo
            | Op::CommSplit
            | Op::CommSplitType
            | Op::CommCreate
            | Op::CartCreate
            | Op::CartSub
            | Op::GraphCreate
            | Op::DistGraphCreateAdjacent
            | Op::DistGraphCreate
            | Op::IntercommCreate
            | Op::IntercommMerge
            | Op::CommIdup
            | Op::CommIdupWithInfo
            | Op::CommCreateGroup
            | Op::CommCreateFromGroup
            | Op::IntercommCreateFromGroups
            | Op::CommFree => self.comm_op(e).map(|()| 0.0),
            Op::Cancel => self.cancel(e),
            Op::GrequestStart => self.grequest_start(e),
            Op::GrequestComplete => self.grequest_complete(e),
            // The sessions the application opened: a program without
            // MPI_Init is traced from its first (see `init_as_application`).
            Op::SessionInit => mpi4!(session::open()),
            Op::SessionFinalize => mpi4!(session::close()),
            // Recorded without detail: passed over (the note at the start
            // lists them); a request it made is left out of the completion
            // calls that name it.
            op if op.is_generic() => {
                if let Some(r) = e.req {
                    self.passed.insert(r.0);
                }
                Ok(0.0)
            }
            op => bail!("{} is not replayed yet", op.name()),
        }
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

/// Polls at each sleep length before it doubles.
const BACKOFF_POLLS: u32 = 32;

impl Backoff {
    /// A loop that has not polled yet (its first pause is the shortest).
    fn new(yield_wait: bool) -> Backoff {
        Backoff {
            yield_wait,
            polls: 0,
        }
    }

    /// One pause between two polls.
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

/// Runs the replay on this rank and returns the process exit code.
pub fn run(opts: &Opts, file: &TraceFile) -> i32 {
    match run_inner(opts, file) {
        Ok(code) => code,
        Err(e) => {
            replay::say(&format!("replay: error: {e:#}"));
            // SAFETY: aborting the job after an unrecoverable error on this
            // rank; the other ranks may be blocked on it.
            unsafe { MPI_Abort(RSMPI_COMM_WORLD, 1) };
            1
        }
    }
}

/// [`run`], with its errors returned: starts MPI as the application did,
/// checks the trace, replays this rank's threads between two barriers,
/// reports and ends MPI.
fn run_inner(opts: &Opts, file: &TraceFile) -> Result<i32> {
    let trace = &file.trace;
    let provided = init_as_application(trace)?;
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialised; `rank` is a valid out-parameter.
    unsafe { PMPI_Comm_rank(RSMPI_COMM_WORLD, &mut rank) };
    // SAFETY: MPI is initialised; `size` is a valid out-parameter.
    unsafe { PMPI_Comm_size(RSMPI_COMM_WORLD, &mut size) };
    if wrong_rank_count(opts, trace.ranks().len(), rank, size) || !validated(file, rank) {
        // SAFETY: every rank gets here (the rank count is the same on all
        // of them, and after it every rank learns the same verdict of the
        // trace check); no communication is pending.
        unsafe { MPI_Finalize() };
        return Ok(1);
    }
    // SAFETY: reading initialised mpi-sys constants.
    let (world, selfc) = unsafe { (RSMPI_COMM_WORLD, RSMPI_COMM_SELF) };
    let comms = Comms::new(world, selfc);
    let mut scratch = io::Scratch::new(opts, file, rank)?;
    let rt = trace
        .rank_trace(rank as u32)
        .map_err(|e| anyhow!("rank {rank}: {e}"))?;
    let threads = mpi_threads(&rt, rank, provided)?;
    let threaded = threads.len() > 1;
    let progress = Progress::new(threads.len());
    let current = Arc::new(Mutex::new(String::from("the start barrier")));
    let finished = Arc::new(AtomicBool::new(false));
    if opts.timeout > 0.0 {
        threads::watchdog(rank, opts.timeout, current.clone(), finished.clone());
    }
    let iodir = scratch.dir();
    let new_replayer =
        |slot: usize| Replayer::new(opts, rank, slot, comms.clone(), threaded, iodir.clone());
    let gates = causal_gates(opts, file, &rt, (world, rank), threaded)?;
    let mut r = new_replayer(0);
    if threaded {
        gates.finish()?;
    } else {
        r.gates = Some(gates);
        r.exposures = rma::exposures(&rt);
        r.hold_timeout = hold_timeout(opts, file);
    }
    // SAFETY: a barrier on the world communicator, outside the traced API.
    unsafe { PMPI_Barrier(world) };
    let start = Instant::now();
    let n_events = threads::run_all(
        &mut r,
        &new_replayer,
        &rt,
        rank,
        &threads,
        &progress,
        &current,
    )?;
    let mine = start.elapsed().as_secs_f64();
    if let Ok(mut cur) = current.lock() {
        *cur = format!("the end barrier, after all its {n_events} events");
    }
    r.conclude(file, rank, world, mine, &finished, &mut scratch)?;
    Ok(0)
}

/// Starts MPI the way the application did (rank 0's first event:
/// `MPI_Init_thread` with its required level, else `MPI_Init`). Returns
/// the thread level MPI provided (0 after `MPI_Init`). A program that
/// never called `MPI_Init` (MPI 4 sessions: its first event is
/// `MPI_Session_init`) is replayed on an MPI started through `PMPI_Init`,
/// which a tracer preloaded into the replay does not see: it follows the
/// replay from its `MPI_Session_init`, as it followed the application.
fn init_as_application(trace: &trace::MergedTrace) -> Result<c_int> {
    let first = trace.rank_trace(0).ok().and_then(|t| t.expand().next());
    let mut provided: c_int = 0;
    let rc = match first {
        // SAFETY: MPI is initialised once, with no arguments.
        Some(ev) if ev.op == Op::SessionInit => unsafe {
            PMPI_Init(std::ptr::null_mut(), std::ptr::null_mut())
        },
        Some(ev) if ev.op == Op::InitThread => {
            let required = ev.value.unwrap_or(0) / 16;
            // SAFETY: MPI is initialised once, with no arguments;
            // `provided` is a valid out-parameter.
            unsafe {
                MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    required as c_int,
                    &mut provided,
                )
            }
        }
        // SAFETY: MPI is initialised once, with no arguments.
        _ => unsafe { MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) },
    };
    check(rc, "MPI_Init")?;
    Ok(provided)
}

/// Whether the job runs on another number of ranks (`size`) than the
/// trace's (`want`), which rank 0 then says with the command to run.
fn wrong_rank_count(opts: &Opts, want: u64, rank: c_int, size: c_int) -> bool {
    if u64::try_from(size).unwrap_or(0) == want {
        return false;
    }
    if rank == 0 {
        eprintln!(
            "replay: error: {} holds a trace of {want} ranks, but replay runs on {size}; run it as `mpirun -n {want} replay {}`",
            opts.file.display(),
            opts.file.display()
        );
    }
    true
}

/// The application threads that called MPI on this rank, by id (one
/// replay thread each); several need `MPI_THREAD_MULTIPLE` (`provided`).
fn mpi_threads(rt: &trace::Trace, rank: c_int, provided: c_int) -> Result<Vec<u32>> {
    let mut threads = Vec::new();
    threads::threads_of(rt.nodes(), &mut threads);
    threads.sort_unstable();
    threads.dedup();
    if threads.len() > 1 && provided != 3 {
        bail!(
            "rank {rank}: the trace has {} threads calling MPI, which needs MPI_THREAD_MULTIPLE; MPI provided level {provided}",
            threads.len()
        );
    }
    Ok(threads)
}

/// Sets up the causal gates of this rank (`rank` of `world`; collective:
/// every rank does, a `threaded` one with no gates of its own, since it
/// neither holds nor releases messages and its sends are not placed: it
/// never waits). A
/// held message waits for its token at most one second plus twice the
/// application's run time.
fn causal_gates(
    opts: &Opts,
    file: &TraceFile,
    rt: &trace::Trace,
    (world, rank): (MPI_Comm, c_int),
    threaded: bool,
) -> Result<Gates> {
    let mine = if threaded {
        Vec::new()
    } else {
        // The world is as large as the trace has ranks (checked before).
        let size = file.trace.ranks().len() as i64;
        replay::gates::gates(rank as u32, size, rt.expand())
    };
    let placed: Box<dyn Iterator<Item = Event>> = if threaded {
        Box::new(std::iter::empty())
    } else {
        Box::new(rt.expand())
    };
    Gates::new(mine, placed, &file.trace, world, hold_timeout(opts, file))
}

/// How long a held message or `Win_complete` waits for its release at
/// most: one second plus twice the application's run time (as emulated).
fn hold_timeout(opts: &Opts, file: &TraceFile) -> Duration {
    let app = if opts.emulation.no_compute {
        0.0
    } else {
        file.meta.wall_ns as f64 * 1e-9 * opts.emulation.compute_scale
    };
    Duration::from_secs_f64(1.0 + 2.0 * app)
}

impl Replayer<'_> {
    /// After this rank's replay (`mine` seconds): completes the causal
    /// gates' tokens, sums the report's totals on rank 0 over the end
    /// barrier, removes the MPI-IO scratch directory made for the replay
    /// (`scratch`), stops the watchdog (`finished`), prints the report on
    /// rank 0, frees the replay's datatypes and ends MPI.
    fn conclude(
        &mut self,
        file: &TraceFile,
        rank: c_int,
        world: MPI_Comm,
        mine: f64,
        finished: &AtomicBool,
        scratch: &mut io::Scratch,
    ) -> Result<()> {
        let mut gates = self.gates.take();
        let mut given_up = self.latency;
        if let Some(g) = gates.as_mut() {
            given_up += g.given_up;
            g.complete()?;
        }
        let (total, sums, counts) = self.reduce_totals(mine, given_up, world);
        if let Some(g) = gates {
            g.finish()?;
        }
        scratch.finish()?;
        finished.store(true, Ordering::SeqCst);
        let sites = report::gather_sites(&self.sites, rank, world)?;
        if rank == 0 {
            let io = scratch.describe();
            report::report(self.opts, file, total, &sums, counts, &sites, io);
        }
        self.free_types();
        // SAFETY: every request of the trace has completed; MPI ends once.
        check(unsafe { MPI_Finalize() }, "MPI_Finalize")
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
