//! One-sided communication (issue 36): windows, their operations and their
//! synchronisation, re-issued on real windows of the recorded sizes.
//!
//! A window lives in the trace's communicator id space: its constructor's
//! event names the parent communicator in `comm` and the window in
//! `create.new`; every later call names the window in `comm`. The windows
//! of a replay thread are kept by that id, beside the communicator table
//! ([`Windows`]), with the memory the replay exposes through them.
//!
//! Origin buffers of the operations without a request stay alive until a
//! synchronisation completes them (MPI may read or write them until then);
//! those of the request forms live with their request in the request table,
//! so that `Wait`, `Waitall` and `Test` on them work as on any request.
//!
//! `Win_test` is forced as far as it safely can be, with messages outside
//! the traced API on a duplicate of the window's communicator (the window's
//! ranks). A `Win_test` that returns true ends the exposure epoch, so no
//! later call may be issued on it: the tests the trace says came back
//! false must stay false, which only holding the origins' `Win_complete`
//! back ensures. At its `Win_post` a target tells each origin of its
//! exposure group whether its epoch has tests that came back false (from a
//! pass over the rank's events before the replay, [`exposures`]); an
//! origin told so waits before its `Win_complete` until the target has
//! issued the last of them and releases it. Such holds can form a cycle
//! (a ring of ranks that each expose to one neighbour and access the
//! other, every one of whose tests missed its origin at first in the
//! application: every `Win_complete` would then wait for a test that
//! comes after its own rank's `Win_complete`), which no order of calls
//! resolves. An origin that waits on a hold sends its target a probe
//! (Chandy, Misra and Haas's edge-chasing deadlock detection: initiator,
//! its wait's ordinal, the lowest rank on the path so far); an origin that
//! waits on a hold passes every probe it receives on to its own target, and
//! an origin whose own probe comes back has found the cycle. The lowest
//! rank on it gives its hold up at once and counts a latency race; its
//! `Win_complete` then goes ahead, its tests release its origin, whose tests
//! release the next: the cycle unwinds with one epoch drifted, nobody
//! waiting. (Before, every hold of a cycle waited for its timeout: 1 s plus
//! twice the application's time, for each occurrence.) A hold still gives
//! up after the causal gates' timeout, for a wait no probe sees (a cycle
//! through another window). Once its `Win_complete` returned, an
//! origin sends each target of its access epoch a token, and a target
//! awaits the tokens of its exposure group before the `Win_test` the trace
//! says returned true: every origin has then completed, and that test
//! comes back true unless the library's completion message is still in
//! flight, in which case replay ends the epoch with an untraced `Win_wait`
//! and counts a latency race (the raw log then differs in `flag=` only). A
//! `Win_test` the trace says returned false but that returns true in the
//! replay (a hold given up) is a latency race too; the tests the trace has
//! after it in the same epoch cannot be issued (the epoch is over) and are
//! left out, counted as well.

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use mpi_helpers::{LOCK_EXCLUSIVE, LOCK_SHARED, assert_from_trace, rs_op_no_op, rs_op_replace};
use mpi_sys::*;
use trace::{Datatype, Event, Op, Peer, ReduceOp, Rma, Tag, Transfer};

use super::coll::{builtin_op, pair_type};
use super::requests::{Keep, tested};
use super::{Buf, Replayer, blank_status, check, elements, request_null, span};

/// The tag of the tokens that say an origin's `Win_complete` returned.
const TOKEN_TAG: c_int = 36;
/// The tag of a target's notice at `Win_post`: one `int`, 1 if the origin
/// must wait for [`RELEASE_TAG`] before its `Win_complete`.
const NOTICE_TAG: c_int = 37;
/// The tag of a target's release of a held `Win_complete`.
const RELEASE_TAG: c_int = 38;
/// The tag of the probes along the holds: three `int`s, the initiator, the
/// ordinal of its wait, the lowest rank on the path (see [`Probes`]).
const PROBE_TAG: c_int = 39;
/// The payloads of the notices (statics: MPI reads them after the
/// nonblocking send returned).
static HOLD: c_int = 1;
/// See [`HOLD`].
static FREE: c_int = 0;

/// The exposure epochs of a rank's windows, by window id, in `Win_post`
/// order: how many `Win_test` calls of each came back false.
pub(super) type Exposures = HashMap<u32, VecDeque<u32>>;

/// Whether `op` combines its data with the target's (the accumulates and
/// the atomics): both sides must then be made of one predefined datatype.
fn accumulates(op: Op) -> bool {
    matches!(
        op,
        Op::Accumulate
            | Op::Raccumulate
            | Op::GetAccumulate
            | Op::RgetAccumulate
            | Op::FetchAndOp
            | Op::CompareAndSwap
    )
}

/// The stand-in code of derived datatypes made of (value, int) pairs.
const PAIR_CODE: u8 = 254;

/// For a `MAXLOC` or `MINLOC` accumulate over a derived datatype of
/// `dsize` bytes: the predefined pair type its stand-in is made of (the
/// first of `MPI_DOUBLE_INT`, `MPI_2INT`, `MPI_SHORT_INT` whose size
/// divides it) and its size. The trace keeps the derived type's size, not
/// its pair type (MPICH's `acc_pairtype` accumulates vectors of
/// `MPI_LONG_DOUBLE_INT`).
fn pairs_of(e: &Event, dsize: i64) -> Option<(MPI_Datatype, i64)> {
    if !matches!(e.redop, Some(ReduceOp::Maxloc | ReduceOp::Minloc)) {
        return None;
    }
    [12, 8, 6]
        .into_iter()
        .filter(|d| dsize > 0 && dsize % d == 0)
        .find_map(|d| pair_type(d).ok().map(|t| (t, d)))
}

/// Whether the compressed structure `nodes` holds a `Win_post`: only then
/// are a rank's events expanded for [`exposures`].
fn has_post(nodes: &[trace::Node]) -> bool {
    nodes.iter().any(|n| match n.as_loop() {
        Some(l) => has_post(l.body()),
        None => n.shape().is_some_and(|s| s.op() == Op::WinPost),
    })
}

/// [`Exposures`] of a rank's trace (one pass over its events, in recorded
/// order, when it has `Win_post` calls at all).
pub(super) fn exposures(rt: &trace::Trace) -> Exposures {
    let mut out = Exposures::new();
    if !has_post(rt.nodes()) {
        return out;
    }
    let events = rt.expand();
    for e in events {
        if e.rma.is_none() || e.failed() {
            continue;
        }
        match (e.op, e.flag) {
            (Op::WinPost, _) => out.entry(e.comm.0).or_default().push_back(0),
            (Op::WinTest, Some(false)) => {
                if let Some(n) = out.get_mut(&e.comm.0).and_then(|v| v.back_mut()) {
                    *n += 1;
                }
            }
            _ => {}
        }
    }
    out
}

/// One window of the replay.
pub(super) struct Window {
    handle: MPI_Win,
    /// The memory of a `Win_create` window (a moved `Vec` keeps its heap
    /// block in place), kept until `Win_free`.
    _mem: Vec<u8>,
    /// The memory attached to a dynamic window, by attach order: address
    /// and bytes, carved from `arena`.
    attached: Vec<(usize, i64)>,
    /// The blocks the attached memory comes from (see
    /// [`Replayer::attach_memory`]), and the bytes used of the last one.
    arena: Vec<Vec<u8>>,
    arena_used: usize,
    /// Of a dynamic window: where operations on each rank's memory land.
    board: Option<Board>,
    /// A duplicate of the parent communicator for the `Win_complete`
    /// tokens (see the module documentation); same ranks as the window.
    tokens: MPI_Comm,
    /// The targets of the open access epoch (`Win_start`'s group).
    access: Vec<c_int>,
    /// The origins of the open exposure epoch (`Win_post`'s group);
    /// `None` once the epoch ended (a `Win_test` came back true).
    exposure: Option<Vec<c_int>>,
    /// The tests of the open exposure epoch still to come back false
    /// before the origins are released (see the module documentation).
    false_tests: u32,
    /// Releases of given-up holds still to arrive, by target.
    owed: HashMap<c_int, u32>,
    /// The cycle detection along the holds on `tokens`.
    probes: Probes,
    /// Origin buffers of operations without a request, by target, until
    /// a synchronisation completes them.
    pending: Vec<(c_int, Buf)>,
}

/// The windows of a replay thread by trace id (windows live in the
/// communicators' id space; this table stands beside [`super::comm::Comms`]).
#[derive(Default)]
pub(super) struct Windows(HashMap<u32, Window>);

/// Where operations on the ranks' memory of a dynamic window land: in the
/// rank's landing region when the operation fits there (see [`LANDING`]),
/// else at the start of the attached memory that the rank's last region
/// continues.
struct Board {
    /// This rank's landing region (see [`LANDING`]), held only so that its
    /// memory lives, attached, until after the window's `Win_free` (the
    /// board is dropped after it); the ranks reach it through
    /// [`Board::landings`].
    #[expect(dead_code, reason = "owns attached memory; MPI reaches it")]
    region: Vec<u8>,
    /// A window of one `MPI_Aint` per rank, outside the traced API,
    /// through which each rank publishes the address of the attached
    /// memory that its last region continues (at first its landing
    /// region).
    win: MPI_Win,
    /// This rank's slot in `win`.
    slot: Box<MPI_Aint>,
    /// Every rank's landing region, by rank in the window: gathered once
    /// when the window is made, since the region stays attached until
    /// `Win_free`.
    landings: Vec<MPI_Aint>,
}

/// `MPI_INFO_NULL`: the application's info is not recorded.
fn info_null() -> MPI_Info {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_INFO_NULL }
}

/// `MPI_WIN_NULL`: a window handle before MPI sets it.
fn win_null() -> MPI_Win {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_WIN_NULL }
}

/// An `MPI_Aint` from a recorded 64-bit value (`long` in MPICH's
/// bindings, `isize` in Open MPI's).
fn aint(v: i64) -> Result<MPI_Aint> {
    MPI_Aint::try_from(v).map_err(|_| anyhow!("{v} does not fit an MPI_Aint"))
}

/// The reduction of a one-sided accumulate: a built-in operation,
/// `MPI_REPLACE` or `MPI_NO_OP` (MPI allows no user-defined one).
fn rma_op(op: Option<ReduceOp>) -> Result<MPI_Op> {
    match op.unwrap_or(ReduceOp::Sum) {
        // SAFETY: the C helpers return predefined handles; they call no
        // MPI function.
        ReduceOp::Replace => Ok(unsafe { rs_op_replace() }),
        // SAFETY: as above.
        ReduceOp::NoOp => Ok(unsafe { rs_op_no_op() }),
        op => builtin_op(op)
            .ok_or_else(|| anyhow!("a one-sided accumulate with the operation {op:?}")),
    }
}

impl Replayer<'_> {
    /// Issues a one-sided call. An event without its [`Rma`] detail was
    /// written by an older tracer: passed over, as calls without detail
    /// are. Returns the bytes the call moved from this rank.
    pub(super) fn one_sided(&mut self, e: &Event) -> Result<f64> {
        let Some(rma) = e.rma.as_deref() else {
            if let Some(r) = e.req {
                self.passed.insert(r.0);
            }
            return Ok(0.0);
        };
        match e.op {
            Op::WinCreate | Op::WinAllocate | Op::WinAllocateShared | Op::WinCreateDynamic => {
                self.win_create(e, rma).map(|()| 0.0)
            }
            Op::Put | Op::Rput | Op::Accumulate | Op::Raccumulate => self.put(e, rma),
            Op::Get | Op::Rget => self.get(e, rma),
            Op::GetAccumulate | Op::RgetAccumulate | Op::FetchAndOp | Op::CompareAndSwap => {
                self.fetch(e, rma)
            }
            _ => self.win_sync(e, rma).map(|()| 0.0),
        }
    }

    /// The window of trace id `id`.
    fn win(&mut self, e: &Event) -> Result<&mut Window> {
        self.wins
            .0
            .get_mut(&e.comm.0)
            .ok_or_else(|| anyhow!("window {} is not known at this point", e.comm.0))
    }

    /// The window constructors: memory of the recorded size (scaled up
    /// with `--bytes-scale`, so that scaled operations stay inside it).
    fn win_create(&mut self, e: &Event, rma: &Rma) -> Result<()> {
        let Rma::Window { size, disp_unit } = *rma else {
            bail!("{} without its window detail", e.op.name());
        };
        let id = e
            .create
            .as_ref()
            .and_then(|c| c.new)
            .context("window constructor without its window id")?;
        let parent = self.comm(e.comm)?;
        let size = if self.opts.emulation.bytes_scale > 1.0 {
            (size as f64 * self.opts.emulation.bytes_scale).ceil() as i64
        } else {
            size
        };
        let bytes = aint(size.max(0))?;
        let mut handle = win_null();
        let mut mem = Vec::new();
        let name = e.op.name();
        match e.op {
            Op::WinCreate => {
                mem = vec![0u8; usize::try_from(size.max(1)).context("window size")?];
                // SAFETY: `mem` holds at least `bytes` bytes and lives in
                // the window table until Win_free; `parent` comes from the
                // replay's table; `handle` is a valid out-parameter.
                let rc = unsafe {
                    MPI_Win_create(
                        mem.as_mut_ptr().cast(),
                        bytes,
                        disp_unit,
                        info_null(),
                        parent,
                        &mut handle,
                    )
                };
                check(rc, name)?;
            }
            Op::WinAllocate | Op::WinAllocateShared => {
                let mut base: *mut c_void = std::ptr::null_mut();
                let f = if e.op == Op::WinAllocate {
                    MPI_Win_allocate
                } else {
                    MPI_Win_allocate_shared
                };
                // SAFETY: MPI allocates the memory and writes its address
                // to `base` (a valid out-parameter, passed as the pointer
                // to a pointer the standard asks for); `parent` as above.
                let rc = unsafe {
                    f(
                        bytes,
                        disp_unit,
                        info_null(),
                        parent,
                        (&raw mut base).cast(),
                        &mut handle,
                    )
                };
                check(rc, name)?;
            }
            _ => {
                // SAFETY: `parent` comes from the replay's table; `handle`
                // is a valid out-parameter.
                let rc = unsafe { MPI_Win_create_dynamic(info_null(), parent, &mut handle) };
                check(rc, name)?;
            }
        }
        let board = if e.op == Op::WinCreateDynamic {
            // The landing region: replay's own memory, attached outside
            // the traced API before anything else, where operations on this
            // rank's memory land until it attaches memory of its own (see
            // [`LANDING`]).
            let mut region = vec![0u8; LANDING];
            check(
                // SAFETY: `region` moves into the window's board (its heap
                // block in place), which lives until after the window's
                // Win_free; `handle` is the dynamic window just made.
                unsafe { PMPI_Win_attach(handle, region.as_mut_ptr().cast(), LANDING as MPI_Aint) },
                "MPI_Win_attach (replay's landing region)",
            )?;
            let mut slot = Box::new(region.as_ptr() as MPI_Aint);
            let mut b = win_null();
            let unit = std::mem::size_of::<MPI_Aint>();
            // SAFETY: `slot` is one MPI_Aint that lives in the window table
            // until Win_free (boxed: it stays in place); collective over
            // `parent`, as the dynamic window's constructor just was.
            let rc = unsafe {
                PMPI_Win_create(
                    (&raw mut *slot).cast(),
                    unit as MPI_Aint,
                    unit as c_int,
                    info_null(),
                    parent,
                    &mut b,
                )
            };
            check(rc, "MPI_Win_create (replay's address board)")?;
            let mut ranks: c_int = 0;
            check(
                // SAFETY: `parent` comes from the replay's table; `ranks`
                // is a valid out-parameter.
                unsafe { PMPI_Comm_size(parent, &mut ranks) },
                "MPI_Comm_size",
            )?;
            let mut landings: Vec<MPI_Aint> = vec![0; usize::try_from(ranks).unwrap_or(0)];
            let mine: MPI_Aint = *slot;
            check(
                // SAFETY: collective over `parent` like the constructor
                // before it; `landings` holds one MPI_Aint per rank of it.
                unsafe {
                    PMPI_Allgather(
                        (&raw const mine).cast(),
                        1,
                        RSMPI_INT64_T,
                        landings.as_mut_ptr().cast(),
                        1,
                        RSMPI_INT64_T,
                        parent,
                    )
                },
                "MPI_Allgather (replay's landing regions)",
            )?;
            Some(Board {
                region,
                win: b,
                slot,
                landings,
            })
        } else {
            None
        };
        // SAFETY: reading an initialised mpi-sys constant.
        let mut tokens = unsafe { RSMPI_COMM_NULL };
        check(
            // SAFETY: collective over `parent` like the constructor before it; `tokens` is a valid out-parameter.
            unsafe { PMPI_Comm_dup(parent, &mut tokens) },
            "MPI_Comm_dup",
        )?;
        self.wins.0.insert(
            id.0,
            Window {
                handle,
                _mem: mem,
                attached: Vec::new(),
                arena: Vec::new(),
                arena_used: 0,
                board,
                tokens,
                access: Vec::new(),
                exposure: None,
                false_tests: 0,
                owed: HashMap::new(),
                probes: Probes::new(tokens)?,
                pending: Vec::new(),
            },
        );
        Ok(())
    }

    /// The target rank, displacement, count and datatype of an operation
    /// whose origin transfer is `t`: a dynamic window's displacement is
    /// the recorded one (0) plus the start of the target's landing region
    /// when the operation fits there ([`LANDING`]), else the start of the
    /// attached memory that the target's last region continues.
    fn target(
        &mut self,
        e: &Event,
        t: &Transfer,
        rma: &Rma,
    ) -> Result<(c_int, MPI_Aint, c_int, MPI_Datatype)> {
        let Rma::Target {
            disp,
            count,
            dsize,
            dtype,
        } = *rma
        else {
            bail!("{} without its target detail", e.op.name());
        };
        let rank = Self::peer(t.peer);
        let tt = Transfer {
            peer: t.peer,
            tag: Tag::Value(0),
            count,
            dsize,
            dtype,
        };
        let ty = if accumulates(e.op) && dtype == Datatype::DERIVED {
            match pairs_of(e, dsize) {
                Some((pair, size)) => self.contiguous_of(dsize, pair, size, PAIR_CODE)?,
                None => self.derived_of(dsize, t)?,
            }
        } else {
            self.typed(&tt)?
        };
        let n = self.count(count);
        let mut at = aint(disp)?;
        let w = self.win(e)?;
        if let (Some(b), Peer::Rank { local, .. }) = (&w.board, t.peer) {
            let reach = disp.saturating_add(i64::from(n).saturating_mul(dsize));
            let base = match usize::try_from(local).ok().and_then(|r| b.landings.get(r)) {
                Some(&landing) if reach <= LANDING as i64 => landing,
                _ => board_address(b.win, local)?,
            };
            at = at.wrapping_add(base);
        }
        Ok((rank, at, n, ty))
    }

    /// The origin (or result) side of an operation, as `side` makes it,
    /// but for the accumulates a derived datatype made of the target's
    /// predefined type (MPI wants both sides of an accumulate made of the
    /// same predefined type; MPICH's `lockopts` accumulates a vector of
    /// ints into `MPI_INT`s).
    fn origin(&mut self, e: &Event, t: &Transfer, rma: &Rma) -> Result<(c_int, MPI_Datatype, Buf)> {
        let target = match *rma {
            Rma::Target { dsize, dtype, .. }
                if accumulates(e.op) && t.dtype == Datatype::DERIVED =>
            {
                Transfer { dsize, dtype, ..*t }
            }
            _ => return self.side(t),
        };
        let n = self.count(t.count);
        let ty = match pairs_of(e, t.dsize) {
            Some((pair, size)) => self.contiguous_of(t.dsize, pair, size, PAIR_CODE)?,
            None => self.derived_of(t.dsize, &target)?,
        };
        Ok((n, ty, self.buf(elements(n, span(ty, t.dsize)))))
    }

    /// `Put`, `Accumulate` and their request forms.
    fn put(&mut self, e: &Event, rma: &Rma) -> Result<f64> {
        let t = e.send.context("origin side missing")?;
        let (n, ty, b) = self.origin(e, &t, rma)?;
        let bytes = elements(n, t.dsize) as f64;
        let (rank, disp, tn, tty) = self.target(e, &t, rma)?;
        let win = self.win(e)?.handle;
        let mut h = request_null();
        let name = e.op.name();
        let p: *const c_void = b.as_ptr().cast();
        // SAFETY (each call below): `b` holds `n` elements of `ty` and moves
        // into the window's pending list or the request table, where it
        // stays until a synchronisation or completion call completes the
        // operation; `win` is a live window of this replay; the target
        // displacement and datatype are the application's (inside the
        // target's window of the recorded size); `h` is a valid
        // out-parameter.
        let rc = match e.op {
            // SAFETY: see the comment before the match.
            Op::Put => unsafe { MPI_Put(p, n, ty, rank, disp, tn, tty, win) },
            // SAFETY: see the comment before the match.
            Op::Rput => unsafe { MPI_Rput(p, n, ty, rank, disp, tn, tty, win, &mut h) },
            Op::Accumulate => {
                let op = rma_op(e.redop)?;
                // SAFETY: see the comment before the match.
                unsafe { MPI_Accumulate(p, n, ty, rank, disp, tn, tty, op, win) }
            }
            _ => {
                let op = rma_op(e.redop)?;
                // SAFETY: see the comment before the match.
                unsafe { MPI_Raccumulate(p, n, ty, rank, disp, tn, tty, op, win, &mut h) }
            }
        };
        check(rc, name)?;
        self.keep(e, rank, vec![b], h)?;
        Ok(bytes)
    }

    /// `Get` and `Rget`.
    fn get(&mut self, e: &Event, rma: &Rma) -> Result<f64> {
        let t = e.recv.context("origin side missing")?;
        let (n, ty, mut b) = self.side(&t)?;
        let (rank, disp, tn, tty) = self.target(e, &t, rma)?;
        let win = self.win(e)?.handle;
        let mut h = request_null();
        let p: *mut c_void = b.as_mut_ptr().cast();
        // SAFETY: as in `put`, with `b` the origin buffer MPI writes.
        let rc = if e.op == Op::Get {
            // SAFETY: as in `put`, with `b` the origin buffer MPI writes.
            unsafe { MPI_Get(p, n, ty, rank, disp, tn, tty, win) }
        } else {
            // SAFETY: as in `put`, with `b` the origin buffer MPI writes.
            unsafe { MPI_Rget(p, n, ty, rank, disp, tn, tty, win, &mut h) }
        };
        check(rc, e.op.name())?;
        self.keep(e, rank, vec![b], h)?;
        Ok(0.0)
    }

    /// `Get_accumulate`, `Rget_accumulate`, `Fetch_and_op` and
    /// `Compare_and_swap`: an origin buffer (the compare buffer too, for
    /// `Compare_and_swap`) and a result buffer.
    fn fetch(&mut self, e: &Event, rma: &Rma) -> Result<f64> {
        let s = e.send.context("origin side missing")?;
        let r = e.recv.context("result side missing")?;
        let (n, ty, b) = self.origin(e, &s, rma)?;
        let (rn, rty, mut rb) = self.origin(e, &r, rma)?;
        let bytes = elements(n, s.dsize) as f64;
        let (rank, disp, tn, tty) = self.target(e, &r, rma)?;
        let win = self.win(e)?.handle;
        let mut h = request_null();
        let (p, rp): (*const c_void, *mut c_void) = (b.as_ptr().cast(), rb.as_mut_ptr().cast());
        let mut bufs = vec![b];
        // SAFETY (each call below): `b` holds `n` elements of `ty`, `rb`
        // room for `rn` of `rty` (the single-element calls: one element
        // of the one datatype, which `side` sized), the compare buffer one
        // element; all move into the window's pending list or the request
        // table until the operation completes; `win`, the target and `h`
        // as in `put`.
        let rc = match e.op {
            Op::GetAccumulate => {
                let op = rma_op(e.redop)?;
                // SAFETY: see the comment before the match.
                unsafe { MPI_Get_accumulate(p, n, ty, rp, rn, rty, rank, disp, tn, tty, op, win) }
            }
            Op::RgetAccumulate => {
                let op = rma_op(e.redop)?;
                // SAFETY: see the comment before the match.
                unsafe {
                    MPI_Rget_accumulate(p, n, ty, rp, rn, rty, rank, disp, tn, tty, op, win, &mut h)
                }
            }
            Op::FetchAndOp => {
                let op = rma_op(e.redop)?;
                // SAFETY: see the comment before the match.
                unsafe { MPI_Fetch_and_op(p, rp, ty, rank, disp, op, win) }
            }
            _ => {
                let cmp = self.buf(elements(1, span(ty, s.dsize)));
                let cp: *const c_void = cmp.as_ptr().cast();
                bufs.push(cmp);
                // SAFETY: see the comment before the match.
                unsafe { MPI_Compare_and_swap(p, cp, rp, ty, rank, disp, win) }
            }
        };
        check(rc, e.op.name())?;
        bufs.push(rb);
        self.keep(e, rank, bufs, h)?;
        Ok(bytes)
    }

    /// Keeps the buffers of an operation alive until it completes: with
    /// its request (`h`, for the request forms) in the request table, else
    /// in the window's pending list until a synchronisation.
    fn keep(&mut self, e: &Event, rank: c_int, bufs: Vec<Buf>, h: MPI_Request) -> Result<()> {
        if e.req.is_some() {
            let keep = Keep {
                bytes: bufs,
                ..Keep::default()
            };
            self.new_req(e.req, h, keep, false);
        } else {
            let w = self.win(e)?;
            w.pending.extend(bufs.into_iter().map(|b| (rank, b)));
        }
        Ok(())
    }

    /// Synchronisation, locks, attach/detach and `Win_free`.
    fn win_sync(&mut self, e: &Event, rma: &Rma) -> Result<()> {
        let name = e.op.name();
        let (assert, group) = match rma {
            Rma::Sync { assert, group } => (assert_from_trace(*assert), group.as_slice()),
            _ => (0, &[][..]),
        };
        let lock = match *rma {
            Rma::Lock {
                peer,
                exclusive,
                assert,
            } => Some((Self::peer(peer), exclusive, assert_from_trace(assert))),
            _ => None,
        };
        let target = || {
            lock.map(|l| l.0)
                .context("a passive-target call without its target")
        };
        let win = self.win(e)?.handle;
        // SAFETY (every call below): `win` is a live window of this
        // replay; the arguments are the recorded ones, converted to this
        // library's constants.
        match e.op {
            Op::WinFence => {
                // SAFETY: a live window of this replay, the recorded arguments.
                check(unsafe { MPI_Win_fence(assert, win) }, name)?;
                self.win(e)?.pending.clear();
            }
            Op::WinPost | Op::WinStart => {
                let g = window_group(win, group)?;
                let rc = if e.op == Op::WinPost {
                    // SAFETY: a live window of this replay, the recorded arguments.
                    unsafe { MPI_Win_post(g, assert, win) }
                } else {
                    // SAFETY: a live window of this replay, the recorded arguments.
                    unsafe { MPI_Win_start(g, assert, win) }
                };
                let mut g = g;
                // SAFETY: `g` is a group this replay made; MPI keeps its
                // own reference for the epoch.
                unsafe { PMPI_Group_free(&mut g) };
                check(rc, name)?;
                if e.op == Op::WinPost {
                    let n = self
                        .exposures
                        .get_mut(&e.comm.0)
                        .and_then(|v| v.pop_front())
                        .unwrap_or(0);
                    let w = self.win(e)?;
                    w.exposure = Some(group.to_vec());
                    w.false_tests = n;
                    for &o in group {
                        notify(w.tokens, o, if n > 0 { &HOLD } else { &FREE })?;
                    }
                } else {
                    self.win(e)?.access = group.to_vec();
                }
            }
            Op::WinComplete => {
                self.await_release(e)?;
                // SAFETY: a live window of this replay, the recorded arguments.
                check(unsafe { MPI_Win_complete(win) }, name)?;
                let w = self.win(e)?;
                w.pending.clear();
                for &t in &std::mem::take(&mut w.access) {
                    send_token(w.tokens, t)?;
                }
            }
            Op::WinWait => {
                // SAFETY: a live window of this replay, the recorded arguments.
                check(unsafe { MPI_Win_wait(win) }, name)?;
                self.end_exposure(e)?;
            }
            Op::WinTest => self.win_test(e, win)?,
            Op::WinLock => {
                let (rank, exclusive, assert) = lock.context("Win_lock without its target")?;
                let kind = if exclusive == Some(true) {
                    LOCK_EXCLUSIVE
                } else {
                    LOCK_SHARED
                };
                // SAFETY: a live window of this replay, the recorded arguments.
                check(unsafe { MPI_Win_lock(kind, rank, assert, win) }, name)?;
            }
            Op::WinUnlock | Op::WinFlush | Op::WinFlushLocal => {
                let rank = target()?;
                let rc = match e.op {
                    // SAFETY: a live window of this replay, the recorded arguments.
                    Op::WinUnlock => unsafe { MPI_Win_unlock(rank, win) },
                    // SAFETY: a live window of this replay, the recorded arguments.
                    Op::WinFlush => unsafe { MPI_Win_flush(rank, win) },
                    // SAFETY: a live window of this replay, the recorded arguments.
                    _ => unsafe { MPI_Win_flush_local(rank, win) },
                };
                check(rc, name)?;
                self.win(e)?.pending.retain(|(t, _)| *t != rank);
            }
            // SAFETY: a live window of this replay, the recorded arguments.
            Op::WinLockAll => check(unsafe { MPI_Win_lock_all(assert, win) }, name)?,
            Op::WinUnlockAll | Op::WinFlushAll | Op::WinFlushLocalAll => {
                let rc = match e.op {
                    // SAFETY: a live window of this replay, the recorded arguments.
                    Op::WinUnlockAll => unsafe { MPI_Win_unlock_all(win) },
                    // SAFETY: a live window of this replay, the recorded arguments.
                    Op::WinFlushAll => unsafe { MPI_Win_flush_all(win) },
                    // SAFETY: a live window of this replay.
                    _ => unsafe { MPI_Win_flush_local_all(win) },
                };
                check(rc, name)?;
                self.win(e)?.pending.clear();
            }
            // SAFETY: a live window of this replay, the recorded arguments.
            Op::WinSync => check(unsafe { MPI_Win_sync(win) }, name)?,
            Op::WinAttach => self.win_attach(e, rma)?,
            Op::WinDetach => self.win_detach(e, rma)?,
            Op::WinFree => self.win_free(e)?,
            op => bail!("{} is not replayed yet", op.name()),
        }
        Ok(())
    }

    /// Before `Win_complete`: the notice of each target of the access
    /// epoch, and the release of those that hold it (each given up after
    /// the gates' timeout, see the module documentation).
    fn await_release(&mut self, e: &Event) -> Result<()> {
        let timeout = self.hold_timeout;
        let (tokens, targets) = {
            let w = self.win(e)?;
            (w.tokens, w.access.clone())
        };
        for t in targets {
            let mut hold: c_int = 0;
            let mut r = receive(tokens, t, NOTICE_TAG, (&raw mut hold).cast(), 1)?;
            self.await_request(&mut r)?;
            if hold == 0 {
                continue;
            }
            let owed = self.win(e)?.owed.remove(&t).unwrap_or(0);
            for _ in 0..=owed {
                let mut r = receive(tokens, t, RELEASE_TAG, std::ptr::null_mut(), 0)?;
                if !self.await_hold(e, t, &mut r, Instant::now() + timeout)? {
                    // SAFETY: `r` is the pending receive just made; it is
                    // cancelled and completed before this scope ends.
                    unsafe {
                        PMPI_Cancel(&mut r);
                        PMPI_Wait(&mut r, RSMPI_STATUS_IGNORE);
                    }
                    self.latency += 1;
                    *self.win(e)?.owed.entry(t).or_default() += 1;
                    break;
                }
            }
        }
        Ok(())
    }

    /// Polls the release `r` of a hold by target `t`, serving the probes
    /// along the holds meanwhile (see [`Probes`]): true once released,
    /// false if the hold is to be given up, because `until` passed or
    /// because this rank is the lowest on a cycle of holds.
    fn await_hold(
        &mut self,
        e: &Event,
        t: c_int,
        r: &mut MPI_Request,
        until: Instant,
    ) -> Result<bool> {
        let mut backoff = self.backoff();
        let w = self.win(e)?;
        let wait = w.probes.start(w.tokens, t)?;
        loop {
            if tested(r)? {
                return Ok(true);
            }
            let w = self.win(e)?;
            if w.probes.serve(w.tokens, t, wait)? || Instant::now() >= until {
                return Ok(false);
            }
            backoff.pause();
        }
    }

    /// After a `Win_test` the trace says came back false: once the
    /// epoch's last one, the origins' release.
    fn count_false_test(&mut self, e: &Event) -> Result<()> {
        let w = self.win(e)?;
        if w.false_tests == 0 {
            return Ok(());
        }
        w.false_tests -= 1;
        if w.false_tests == 0 {
            for &o in w.exposure.as_deref().unwrap_or(&[]) {
                release(w.tokens, o)?;
            }
        }
        Ok(())
    }

    /// An exposure epoch that ended before its last false test: its
    /// origins' releases go out now, so that those who gave their holds
    /// up and count the release as owed receive it. `origins` is the
    /// epoch's exposure group.
    fn released_anyway(&mut self, e: &Event, origins: &[c_int]) -> Result<()> {
        let w = self.win(e)?;
        if w.false_tests > 0 {
            w.false_tests = 0;
            for &o in origins {
                release(w.tokens, o)?;
            }
        }
        Ok(())
    }

    /// `Win_test`: see the module documentation for what can be forced.
    fn win_test(&mut self, e: &Event, win: MPI_Win) -> Result<()> {
        let Some(origins) = self.win(e)?.exposure.clone() else {
            // The epoch ended at an earlier test that the trace says came
            // back false: this one cannot be issued.
            self.latency += 1;
            return Ok(());
        };
        if e.flag == Some(true) {
            self.await_tokens(e, &origins)?;
        }
        let mut flag: c_int = 0;
        // SAFETY: `win` is a live window of this replay with an exposure
        // epoch open; `flag` is a valid out-parameter.
        check(unsafe { MPI_Win_test(win, &mut flag) }, e.op.name())?;
        match (flag != 0, e.flag == Some(true)) {
            (true, true) => self.win(e)?.exposure = None,
            (true, false) => {
                self.latency += 1;
                self.released_anyway(e, &origins)?;
                self.end_exposure(e)?;
            }
            (false, true) => {
                // The completion is still in flight: end the epoch
                // outside the traced API.
                self.latency += 1;
                // SAFETY: as above.
                check(unsafe { PMPI_Win_wait(win) }, "MPI_Win_wait")?;
                self.win(e)?.exposure = None;
            }
            (false, false) => self.count_false_test(e)?,
        }
        Ok(())
    }

    /// After an exposure epoch ended: the tokens of its origins, which
    /// sent them once their `Win_complete` returned (so they are coming).
    fn end_exposure(&mut self, e: &Event) -> Result<()> {
        if let Some(origins) = self.win(e)?.exposure.take() {
            self.await_tokens(e, &origins)?;
        }
        Ok(())
    }

    /// Receives the `Win_complete` tokens of `origins` (ranks in the
    /// window), polling with the replay's pauses.
    fn await_tokens(&mut self, e: &Event, origins: &[c_int]) -> Result<()> {
        let tokens = self.win(e)?.tokens;
        for &o in origins {
            let mut r = request_null();
            let mut byte = 0u8;
            check(
                // SAFETY: `byte` outlives the request, which
                // `await_request` completes before it goes out of scope;
                // `tokens` is the replay's own communicator.
                unsafe {
                    PMPI_Irecv(
                        (&raw mut byte).cast(),
                        0,
                        RSMPI_UINT8_T,
                        o,
                        TOKEN_TAG,
                        tokens,
                        &mut r,
                    )
                },
                "MPI_Irecv",
            )?;
            self.await_request(&mut r)?;
        }
        Ok(())
    }

    /// `Win_attach` of memory of the recorded size, whose address the
    /// rank publishes on the window's board for the origins.
    fn win_attach(&mut self, e: &Event, rma: &Rma) -> Result<()> {
        let Rma::Window { size, .. } = *rma else {
            bail!("Win_attach without its size");
        };
        let scaled = if self.opts.emulation.bytes_scale > 1.0 {
            (size as f64 * self.opts.emulation.bytes_scale).ceil() as i64
        } else {
            size
        };
        let bytes = usize::try_from(scaled.max(1)).context("attached size")?;
        let w = self.win(e)?;
        let mem = attach_memory(w, bytes);
        // The origins aim at the start of the attached memory that this
        // region continues: an access that spans adjacent regions (one
        // array attached in halves) then stays inside attached memory.
        // One map of the regions by where their carving ends, so that the
        // walk back costs one lookup per region, not a scan of all of them
        // (a linked list attaches thousands of 16-byte elements).
        let by_end: HashMap<usize, usize> = w
            .attached
            .iter()
            .map(|&(a, n)| (a + carved(n.max(1) as usize), a))
            .collect();
        let mut start = mem as usize;
        while let Some(&a) = by_end.get(&start) {
            start = a;
        }
        check(
            // SAFETY: `mem` points to `bytes` bytes of the window's arena,
            // which stays in the window's table (its heap blocks in place)
            // until the window's Win_free.
            unsafe { MPI_Win_attach(w.handle, mem.cast(), aint(scaled.max(0))?) },
            "MPI_Win_attach",
        )?;
        if let Some(Board {
            win: board, slot, ..
        }) = w.board.as_mut()
        {
            let mut me: c_int = 0;
            check(
                // SAFETY: `tokens` has the window's ranks; `me` is a valid out-parameter.
                unsafe { PMPI_Comm_rank(w.tokens, &mut me) },
                "MPI_Comm_rank",
            )?;
            // SAFETY: a lock of this rank's own slot on the board, a
            // window of replay's own; the store happens inside it.
            unsafe {
                check(PMPI_Win_lock(LOCK_EXCLUSIVE, me, 0, *board), "MPI_Win_lock")?;
                **slot = start as MPI_Aint;
                check(PMPI_Win_unlock(me, *board), "MPI_Win_unlock")?;
            }
        }
        w.attached.push((mem as usize, scaled));
        Ok(())
    }

    /// `Win_detach` of the attached memory of the recorded size (the
    /// earliest such), else of the earliest attached.
    fn win_detach(&mut self, e: &Event, rma: &Rma) -> Result<()> {
        let size = match *rma {
            Rma::Window { size, .. } => size,
            _ => -1,
        };
        let w = self.win(e)?;
        let i = w.attached.iter().position(|m| m.1 == size).unwrap_or(0);
        if i >= w.attached.len() {
            bail!("Win_detach on a window with no memory attached");
        }
        let at = w.attached[i].0 as *const c_void;
        check(
            // SAFETY: the memory was attached to this live window.
            unsafe { MPI_Win_detach(w.handle, at) },
            "MPI_Win_detach",
        )?;
        w.attached.remove(i);
        Ok(())
    }

    /// `Win_free`, then the window's memory and replay's own companions.
    fn win_free(&mut self, e: &Event) -> Result<()> {
        let mut w = self
            .wins
            .0
            .remove(&e.comm.0)
            .ok_or_else(|| anyhow!("window {} is not known at this point", e.comm.0))?;
        // The landing region stays attached through `MPI_Win_free`, and is
        // dropped with the board after it. Detached before it, as replay once
        // did, it raced with origins still reading it: the ranks of MPICH's
        // `rma/linked_list` that reached `Win_free` detached their regions
        // while rank 0 still walked the list through them, and Open MPI
        // answered `MPI_ERR_RMA_RANGE`. `Win_free` is collective, so every
        // access has completed when it returns; applications free dynamic
        // windows with memory attached too (`linked_list` never detaches).
        // SAFETY: a live window of this replay; every epoch on it ended,
        // as the application's had (Win_free is collective).
        check(unsafe { MPI_Win_free(&mut w.handle) }, "MPI_Win_free")?;
        if let Some(Board { win: mut b, .. }) = w.board.take() {
            // SAFETY: the board is replay's own window, used only inside
            // the locks of `board_address` and `win_attach`.
            check(unsafe { PMPI_Win_free(&mut b) }, "MPI_Win_free")?;
        }
        w.probes.settle(w.tokens)?;
        // The releases of holds given up: every target sent them before
        // the collective `settle` (at its epoch's last false test, or when
        // the epoch ended), so they are here or on their way.
        for (&t, &n) in &w.owed {
            for _ in 0..n {
                let mut r = receive(w.tokens, t, RELEASE_TAG, std::ptr::null_mut(), 0)?;
                check(
                    // SAFETY: `r` is the pending receive just made.
                    unsafe { PMPI_Wait(&mut r, RSMPI_STATUS_IGNORE) },
                    "MPI_Wait",
                )?;
            }
        }
        // SAFETY: replay's own communicator; every token sent on it was
        // received (each exposure epoch awaited its origins'), every probe
        // (`settle`) and every release.
        check(unsafe { PMPI_Comm_free(&mut w.tokens) }, "MPI_Comm_free")?;
        Ok(())
    }
}

/// Chandy, Misra and Haas's edge-chasing deadlock detection along the
/// holds of one window (see the module documentation). A rank that waits
/// on a hold sends its target a probe: itself, the ordinal of this wait,
/// and itself as the lowest rank on the path. A rank that waits on a hold
/// passes each probe it receives on to its own target, with the lowest rank
/// updated. A probe that comes back to its initiator during the wait it was
/// sent for has gone round a cycle of waits. (A wait ends only when its
/// target releases it, so the cycle stands, unless a wait on the probe's
/// path ended while the probe was on its way: then a hold is given up that
/// would have been released, one latency race counted, as a timeout would.)
/// The ordinal tells a probe of an earlier wait apart. Probes that arrive
/// while a rank does not wait are passed on at its next wait.
struct Probes {
    /// This rank in the window's group.
    me: c_int,
    /// Waits begun so far (the ordinal of the current one).
    waits: c_int,
    /// Probes sent to each rank, and received from each.
    sent: Vec<c_int>,
    got: Vec<c_int>,
    /// The probes sent, with their buffers (boxed: they stay in place),
    /// until the window is freed ([`Probes::settle`]).
    out: Vec<(Box<[c_int; 3]>, MPI_Request)>,
}

impl Probes {
    /// No probes yet, on `comm` (the window's token communicator).
    fn new(comm: MPI_Comm) -> Result<Probes> {
        let (mut me, mut n): (c_int, c_int) = (0, 0);
        check(
            // SAFETY: `comm` is replay's own communicator; `me` and `n`
            // are valid out-parameters.
            unsafe { PMPI_Comm_rank(comm, &mut me) },
            "MPI_Comm_rank",
        )?;
        // SAFETY: as above.
        check(unsafe { PMPI_Comm_size(comm, &mut n) }, "MPI_Comm_size")?;
        let n = usize::try_from(n).unwrap_or(0);
        Ok(Probes {
            me,
            waits: 0,
            sent: vec![0; n],
            got: vec![0; n],
            out: Vec::new(),
        })
    }

    /// Begins a wait on a hold by `t`: its probe goes to `t`. Returns the
    /// wait's ordinal.
    fn start(&mut self, comm: MPI_Comm, t: c_int) -> Result<c_int> {
        self.reap()?;
        self.waits = self.waits.wrapping_add(1);
        self.send(comm, t, [self.me, self.waits, self.me])?;
        Ok(self.waits)
    }

    /// Forgets the probes whose sends completed, so that a window alive
    /// for a long run holds only those in flight.
    fn reap(&mut self) -> Result<()> {
        let mut left = Vec::with_capacity(self.out.len());
        for (buf, mut r) in self.out.drain(..) {
            if !tested(&mut r)? {
                left.push((buf, r));
            }
        }
        self.out = left;
        Ok(())
    }

    /// Sends probe `p` to `t`.
    fn send(&mut self, comm: MPI_Comm, t: c_int, p: [c_int; 3]) -> Result<()> {
        let buf = Box::new(p);
        let mut r = request_null();
        check(
            // SAFETY: `buf` moves into `self.out` (its heap block in
            // place) and lives there until the request completed (`reap`,
            // `settle`); `comm` is replay's own.
            unsafe {
                PMPI_Isend(
                    buf.as_ptr().cast(),
                    3,
                    RSMPI_INT32_T,
                    t,
                    PROBE_TAG,
                    comm,
                    &mut r,
                )
            },
            "MPI_Isend",
        )?;
        if let Some(n) = usize::try_from(t).ok().and_then(|t| self.sent.get_mut(t)) {
            *n += 1;
        }
        self.out.push((buf, r));
        Ok(())
    }

    /// During wait `wait` on a hold by `t`, receives the probes that have
    /// arrived: passes the others' on to `t`, and returns true if this
    /// wait's own probe came back with this rank the lowest on its cycle
    /// (its hold is the one to give up).
    fn serve(&mut self, comm: MPI_Comm, t: c_int, wait: c_int) -> Result<bool> {
        let mut give_up = false;
        loop {
            let mut flag: c_int = 0;
            let mut st = blank_status();
            check(
                // SAFETY: `comm` is replay's own; `flag` and `st` are
                // valid out-parameters.
                unsafe { PMPI_Iprobe(RSMPI_ANY_SOURCE, PROBE_TAG, comm, &mut flag, &mut st) },
                "MPI_Iprobe",
            )?;
            if flag == 0 {
                return Ok(give_up);
            }
            let src = st.MPI_SOURCE;
            let p = receive_probe(comm, src)?;
            if let Some(n) = usize::try_from(src).ok().and_then(|s| self.got.get_mut(s)) {
                *n += 1;
            }
            let [from, ordinal, lowest] = p;
            if from == self.me {
                give_up |= ordinal == wait && lowest == self.me;
            } else {
                self.send(comm, t, [from, ordinal, lowest.min(self.me)])?;
            }
        }
    }

    /// At `Win_free` (collective over the window's group): every rank
    /// receives the probes still addressed to it, which the others' counts
    /// say, and its own sends complete, so that the token communicator is
    /// freed with nothing in flight.
    fn settle(&mut self, comm: MPI_Comm) -> Result<()> {
        let mut due = vec![0 as c_int; self.sent.len()];
        check(
            // SAFETY: collective over replay's own communicator, of which
            // `sent` and `due` hold one int per rank.
            unsafe {
                PMPI_Alltoall(
                    self.sent.as_ptr().cast(),
                    1,
                    RSMPI_INT32_T,
                    due.as_mut_ptr().cast(),
                    1,
                    RSMPI_INT32_T,
                    comm,
                )
            },
            "MPI_Alltoall",
        )?;
        for (src, (&due, &got)) in (0..).zip(due.iter().zip(&self.got)) {
            for _ in got..due {
                receive_probe(comm, src)?;
            }
        }
        for (buf, mut r) in self.out.drain(..) {
            check(
                // SAFETY: a send of this window's probes; its receiver has
                // received it or will in its own `settle`.
                unsafe { PMPI_Wait(&mut r, RSMPI_STATUS_IGNORE) },
                "MPI_Wait",
            )?;
            drop(buf);
        }
        Ok(())
    }
}

/// Receives a probe (three ints) from `src` on `comm`.
fn receive_probe(comm: MPI_Comm, src: c_int) -> Result<[c_int; 3]> {
    let mut p: [c_int; 3] = [0; 3];
    check(
        // SAFETY: every message with the probe tag is three ints, for which
        // `p` has room; `comm` is replay's own.
        unsafe {
            PMPI_Recv(
                p.as_mut_ptr().cast(),
                3,
                RSMPI_INT32_T,
                src,
                PROBE_TAG,
                comm,
                RSMPI_STATUS_IGNORE,
            )
        },
        "MPI_Recv",
    )?;
    Ok(p)
}

/// The group of `ranks` of window `win`'s group, for `Win_post` and
/// `Win_start`.
fn window_group(win: MPI_Win, ranks: &[c_int]) -> Result<MPI_Group> {
    // SAFETY: reading an initialised mpi-sys constant.
    let (mut all, mut g) = unsafe { (RSMPI_GROUP_NULL, RSMPI_GROUP_NULL) };
    check(
        // SAFETY: `win` is live; `all` is a valid out-parameter.
        unsafe { PMPI_Win_get_group(win, &mut all) },
        "MPI_Win_get_group",
    )?;
    let n = c_int::try_from(ranks.len()).context("group size")?;
    // SAFETY: `ranks` holds `n` ranks of the window's group (the trace
    // check keeps them in range); `g` is a valid out-parameter.
    let rc = unsafe { PMPI_Group_incl(all, n, ranks.as_ptr(), &mut g) };
    // SAFETY: `all` was made above and is no longer needed.
    unsafe { PMPI_Group_free(&mut all) };
    check(rc, "MPI_Group_incl")?;
    Ok(g)
}

/// The token that tells target `t` (a rank of `comm`) this rank's
/// `Win_complete` returned: zero bytes, sent outside the traced API.
fn send_token(comm: MPI_Comm, t: c_int) -> Result<()> {
    let mut r = request_null();
    check(
        // SAFETY: a zero-byte send on the replay's own communicator; the
        // request is freed at once and completes by itself.
        unsafe {
            PMPI_Isend(
                std::ptr::null(),
                0,
                RSMPI_UINT8_T,
                t,
                TOKEN_TAG,
                comm,
                &mut r,
            )
        },
        "MPI_Isend",
    )?;
    // SAFETY: `r` is the request just made; freeing it lets the send
    // complete on its own.
    check(unsafe { PMPI_Request_free(&mut r) }, "MPI_Request_free")
}

/// A receive of replay's own from `src` on `comm` with `tag`, into `n`
/// `int`s at `buf` (which must outlive the returned request).
fn receive(
    comm: MPI_Comm,
    src: c_int,
    tag: c_int,
    buf: *mut c_void,
    n: c_int,
) -> Result<MPI_Request> {
    let mut r = request_null();
    check(
        // SAFETY: the caller keeps `buf` (room for `n` ints) alive until
        // the request completes; `comm` is replay's own.
        unsafe { PMPI_Irecv(buf, n, RSMPI_INT32_T, src, tag, comm, &mut r) },
        "MPI_Irecv",
    )?;
    Ok(r)
}

/// The notice of a `Win_post` to origin `o` (see [`NOTICE_TAG`]).
fn notify(comm: MPI_Comm, o: c_int, what: &'static c_int) -> Result<()> {
    let mut r = request_null();
    check(
        // SAFETY: `what` is a static, alive for as long as MPI reads it;
        // `comm` is replay's own; the request is freed at once and
        // completes by itself.
        unsafe {
            PMPI_Isend(
                std::ptr::from_ref(what).cast(),
                1,
                RSMPI_INT32_T,
                o,
                NOTICE_TAG,
                comm,
                &mut r,
            )
        },
        "MPI_Isend",
    )?;
    // SAFETY: `r` is the request just made.
    check(unsafe { PMPI_Request_free(&mut r) }, "MPI_Request_free")
}

/// The release of origin `o`'s held `Win_complete`: zero bytes.
fn release(comm: MPI_Comm, o: c_int) -> Result<()> {
    let mut r = request_null();
    check(
        // SAFETY: a zero-byte send on replay's own communicator; the
        // request is freed at once and completes by itself.
        unsafe {
            PMPI_Isend(
                std::ptr::null(),
                0,
                RSMPI_INT32_T,
                o,
                RELEASE_TAG,
                comm,
                &mut r,
            )
        },
        "MPI_Isend",
    )?;
    // SAFETY: `r` is the request just made.
    check(unsafe { PMPI_Request_free(&mut r) }, "MPI_Request_free")
}

/// Bytes of a dynamic window's landing region. The trace does not keep a
/// dynamic window's target addresses (they differ in every run), so an
/// operation on a rank's memory lands in a region replay attached there
/// when the window was made (outside the traced API), whose address every
/// rank learns then: the application's origins learnt their targets'
/// addresses from data, which replay does not carry, so an origin can
/// reach a rank before that rank has attached anything. An operation
/// larger than the region lands at the start of the memory the rank
/// attached, which it publishes on the window's board and the origin
/// reads there: a lock, a get and an unlock of the target, which on
/// busy-polling MPICH each wait for the target's progress. Reading the
/// board for every operation made the replay of MPICH's
/// `rma/linked_list_bench_lock_all` (1.1 million polling operations) take
/// 127 s against the application's 15.6 s.
const LANDING: usize = 1 << 16;

/// Bytes of the blocks small attached regions are carved from.
const ARENA_BLOCK: usize = 1 << 16;

/// Memory of `bytes` bytes to attach to dynamic window `w`: carved, 16-byte
/// aligned, from the window's current block, so that regions attached one
/// after the other lie one after the other, as an application's adjacent
/// regions do. Applications rely on that: MPICH's
/// `rma/win_dynamic_rma_flush_get` attaches the two halves of one array
/// and puts 9,216 ints across both, which in regions of their own ran past
/// the first one's heap block and corrupted replay's heap. Open MPI merges
/// attached regions that share a page and allows 64 regions; a linked list
/// of 16-byte elements, each in a heap block of its own, failed in
/// `MPI_Win_attach` (rma/linked_list_bench_lock_all). A new block holds
/// [`ARENA_BLOCK`] bytes or twice the region, whichever is more: room for
/// the next region of the same size beside it.
fn attach_memory(w: &mut Window, bytes: usize) -> *mut u8 {
    let need = carved(bytes);
    let room = w.arena.last().map_or(0, Vec::len);
    if w.arena.is_empty() || w.arena_used + need > room {
        w.arena.push(vec![0u8; ARENA_BLOCK.max(2 * need)]);
        w.arena_used = 0;
    }
    let last = w.arena.len() - 1;
    let at = w.arena_used;
    w.arena_used += need;
    w.arena[last][at..].as_mut_ptr()
}

/// The bytes [`attach_memory`] carves for a region of `bytes` bytes: the
/// next region starts this far after it.
fn carved(bytes: usize) -> usize {
    bytes.div_ceil(16) * 16
}

/// The address of the memory rank `t` attached to a dynamic window, from
/// its slot on the window's board.
fn board_address(board: MPI_Win, t: c_int) -> Result<MPI_Aint> {
    let mut a: MPI_Aint = 0;
    // SAFETY: `board` is replay's own window of one MPI_Aint per rank
    // (unit of its size); `a` outlives the epoch, which the unlock ends.
    unsafe {
        check(PMPI_Win_lock(LOCK_SHARED, t, 0, board), "MPI_Win_lock")?;
        let ty = RSMPI_INT64_T;
        check(
            PMPI_Get((&raw mut a).cast(), 1, ty, t, 0, 1, ty, board),
            "MPI_Get",
        )?;
        check(PMPI_Win_unlock(t, board), "MPI_Win_unlock")?;
    }
    Ok(a)
}
