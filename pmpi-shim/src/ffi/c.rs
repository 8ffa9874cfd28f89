//! C entry points (`MPI_*`), each forwarding to `PMPI_*`.
//!
//! Every wrapper has the same shape (see [`entry!`]): read the caller's return
//! address, enter a [`Scope`] (or pass straight through when tracing is off
//! or the call is nested in another wrapper), call PMPI with the
//! application's arguments unchanged, describe the call as an [`Event`], and
//! return MPI's own return code. Whatever happens in the tracer, the
//! application sees the same MPI results and return codes.
//!
//! Argument rules follow the standard: buffers, counts and datatypes that are
//! "significant only at root" are only read at the root, `MPI_IN_PLACE`
//! arguments are never read, and request handles are read before the call
//! (completion sets them to `MPI_REQUEST_NULL`).
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use mpi_sys::*;
use trace::{CommId, Event, Matched, Op, Peer, ReqId, Tag, Transfer};

use super::{
    Count, Key, c_array, coll, comm, comm_rank, comm_size, consts, counts, dsize, dtype,
    group_members, ints, is_inter, is_wildcard, nap, new_comm, redop, world_map, xfer,
};
use crate::return_address;
use crate::tracer::{self, CommInfo, Keys, Kind, PendingComm, ReqInfo, Scope, Tracer};

// ---------------------------------------------------------------- helpers

fn null_req() -> MPI_Request {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_REQUEST_NULL }
}

fn ignore() -> *mut MPI_Status {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_STATUS_IGNORE }
}

/// Waits for a request by test-and-sleep (the yielding mode).
///
/// # Safety
/// `req` must point to a valid request; `status` to a status or be
/// `MPI_STATUS_IGNORE`.
unsafe fn wait_yield(t: &Tracer, req: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    loop {
        let mut flag: c_int = 0;
        // SAFETY: guaranteed by the caller.
        let rc = unsafe { PMPI_Test(req, &mut flag, status) };
        if rc != 0 || flag != 0 {
            return rc;
        }
        nap(t.config.yield_us);
    }
}

/// A status the shim can read: the caller's, or `local` when the caller
/// passed `MPI_STATUS_IGNORE` but the outcome must be recorded.
fn status_for(user: *mut MPI_Status, need: bool, local: &mut MPI_Status) -> *mut MPI_Status {
    if need && user as usize == consts().status_ignore {
        local
    } else {
        user
    }
}

/// The array version of [`status_for`].
fn statuses_for(
    user: *mut MPI_Status,
    need: bool,
    n: usize,
    local: &mut Vec<MPI_Status>,
) -> *mut MPI_Status {
    if need && user as usize == consts().statuses_ignore {
        // SAFETY: MPI_Status is plain old data; zeroed is a valid value.
        local.resize(n, unsafe { std::mem::zeroed() });
        local.as_mut_ptr()
    } else {
        user
    }
}

fn zero_status() -> MPI_Status {
    // SAFETY: MPI_Status is plain old data; zeroed is a valid value.
    unsafe { std::mem::zeroed() }
}

/// The matched source (as a world rank) and tag of a completed receive or
/// a probe; `None` when nothing was matched: the operation's source was
/// `MPI_PROC_NULL` (its status says so, whatever tag was posted).
pub(crate) fn matched(info: &CommInfo, st: &MPI_Status, req: Option<ReqId>) -> Option<Matched> {
    let src = st.MPI_SOURCE;
    if src == consts().proc_null || src < 0 {
        return None;
    }
    Some(Matched {
        req,
        source: info.world(src),
        tag: st.MPI_TAG,
    })
}

/// Whether a request's completion status says it was cancelled. Only a
/// request's status can say so: a probe's or a blocking receive's leaves
/// the field as the caller's memory had it.
fn was_cancelled(st: &MPI_Status) -> bool {
    let mut cancelled: c_int = 0;
    // SAFETY: `st` is the status MPI filled when it completed a request;
    // MPI_Test_cancelled only reads it.
    unsafe { PMPI_Test_cancelled(st, &mut cancelled) };
    cancelled != 0
}

/// Registers the request a call created. `request` is what MPI wrote, or
/// `None` when the call failed (and so wrote nothing).
pub(crate) fn new_req(
    t: &Tracer,
    request: Option<MPI_Request>,
    persistent: bool,
    wildcard: bool,
    c: MPI_Comm,
) -> Option<ReqId> {
    let r = request?;
    if r.key() == consts().request_null {
        return None;
    }
    Some(t.add_req(r.key(), persistent, wildcard, comm(t, c)))
}

/// Handle keys of a request array, read before the call nulls them.
///
/// # Safety
/// `reqs` must point to `n` requests.
unsafe fn req_keys(reqs: *const MPI_Request, n: c_int) -> Keys {
    // SAFETY: guaranteed by the caller.
    unsafe { c_array(reqs, n) }
        .iter()
        .map(|r| r.key())
        .collect()
}

/// Fills a completion event: the requests handed in, the ones completed
/// (by index into `keys`), and the matched source/tag of completed wildcard
/// receives (`status_of(k)` is the status of the `k`-th completed request).
/// Retires completed non-persistent requests.
pub(crate) fn completion(
    t: &Tracer,
    ev: &mut Event,
    keys: &[usize],
    infos: &[Option<ReqInfo>],
    done: &[usize],
    status_of: impl Fn(usize) -> Option<MPI_Status>,
) {
    ev.reqs.extend(infos.iter().flatten().map(|r| r.id));
    let mut retired = Keys::new();
    for (k, &i) in done.iter().enumerate() {
        let Some(Some(info)) = infos.get(i) else {
            continue;
        };
        ev.done.push(info.id);
        retired.push(keys[i]);
        if let Some(p) = &info.creates {
            bind_pending(t, p);
        }
        if info.wildcard
            && let Some(st) = status_of(k)
            && !was_cancelled(&st)
        {
            ev.matched.extend(matched(&info.comm, &st, Some(info.id)));
        }
    }
    t.retire_reqs(&retired, false);
}

/// Registers the communicator of a completed `MPI_Comm_idup` under the
/// handle MPI wrote (`MPI_COMM_NULL`: nothing to register).
fn bind_pending(t: &Tracer, p: &PendingComm) {
    // SAFETY: `slot` is the `newcomm` argument of the application's
    // MPI_Comm_idup (a C handle, or a Fortran INTEGER one), which the
    // standard requires to stay valid until the request completes; it
    // completed in the call being recorded, so the handle MPI wrote is
    // there to read. MPI_Comm_f2c accepts any value.
    let handle = unsafe {
        if p.fortran {
            RSMPI_Comm_f2c(*(p.slot as *const c_int))
        } else {
            *(p.slot as *const MPI_Comm)
        }
    };
    if handle.key() != consts().comm_null {
        t.bind_comm(handle.key(), p.id, p.to_world.clone(), p.me);
    }
}

/// Whether any of these requests is a wildcard receive (whose completion
/// needs a readable status).
pub(crate) fn any_wildcard(infos: &[Option<ReqInfo>]) -> bool {
    infos.iter().flatten().any(|r| r.wildcard)
}

/// Whether yield mode may wait for these requests by test-and-sleep: not
/// when one of them is a nonblocking MPI-IO access's. MPICH's ROMIO
/// progresses its nonblocking collective file accesses in the blocking
/// wait; tested one at a time, `io/i_aggregation1` (four `iwrite_at_all`
/// in one `MPI_Waitall`) never completed. The file's own progress does not
/// busy-poll against the other ranks as message waits do.
pub(crate) fn may_yield(t: &Tracer, infos: &[Option<ReqInfo>]) -> bool {
    t.config.yield_wait && !infos.iter().flatten().any(|r| r.comm.kind == Kind::File)
}

// ------------------------------------------------------------ init / exit

/// Starts the tracer and records `Init`/`Init_thread`.
pub(crate) fn after_init(ret: usize, op: Op, value: Option<i64>) {
    let started = std::panic::catch_unwind(super::start_tracer);
    if started.is_err() {
        crate::warn::warn(
            None,
            "could not start the tracer; the application continues untraced",
        );
        return;
    }
    if let Some(s) = Scope::enter(ret) {
        // Called only after a successful initialisation.
        s.record(op, 0, |_, ev| ev.value = value);
    }
}

/// Interposes `MPI_Init`: initialises MPI, then the tracer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let ret = return_address!();
    let nested = tracer::nested();
    // SAFETY: the application's arguments go unchanged to the library.
    let rc = tracer::untraced(|| unsafe { PMPI_Init(argc, argv) });
    // Nested inside a Fortran MPI_INIT wrapper: that wrapper records Init.
    if rc == 0 && !nested && tracer::get().is_none() {
        after_init(ret, Op::Init, None);
    }
    rc
}

/// Interposes `MPI_Init_thread`: initialises MPI, then the tracer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let ret = return_address!();
    let nested = tracer::nested();
    // SAFETY: the application's arguments go unchanged to the library.
    let rc = tracer::untraced(|| unsafe { PMPI_Init_thread(argc, argv, required, provided) });
    if rc == 0 && !nested && tracer::get().is_none() {
        let p = if provided.is_null() {
            -1
        } else {
            // SAFETY: MPI wrote `*provided` on success.
            unsafe { *provided }
        };
        after_init(
            ret,
            Op::InitThread,
            Some(i64::from(required) * 16 + i64::from(p)),
        );
    }
    rc
}

/// Records `op` (`Finalize`, or the `Session_finalize` that ends a
/// sessions-only program) and flushes the trace while MPI is still usable.
pub(crate) fn before_finalize(ret: usize, op: Op) {
    // A Fortran MPI_FINALIZE may reach the C MPI_Finalize too: finish once.
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    if let Some(s) = Scope::enter(ret) {
        // Recorded before the call, which cannot return to report a failure
        // the trace could still hold.
        s.record(op, 0, |_, _| {});
    }
    let t = tracer::get();
    let trace = t.and_then(|t| std::panic::catch_unwind(|| t.finish()).ok().flatten());
    let path = match t {
        Some(t) => t.config.trace_file.clone(),
        None => crate::config::trace_file_from_env(),
    };
    if let Some(path) = path {
        let timeout = std::time::Duration::from_secs_f64(match t {
            Some(t) => t.config.merge_timeout_s,
            None => crate::config::Config::from_env().merge_timeout_s,
        });
        let merged = std::panic::catch_unwind(AssertUnwindSafe(|| {
            tracer::untraced(|| super::finalize::merge_and_write(t, trace, &path, timeout));
        }));
        if merged.is_err() {
            crate::warn::warn(
                None,
                "internal error while merging the trace; no trace file",
            );
        }
    }
}

/// Records Abort and flushes what can be flushed.
pub(crate) fn before_abort(ret: usize, comm_h: MPI_Comm, code: c_int) {
    if let Some(s) = Scope::enter(ret) {
        // Recorded before the call, which does not return.
        s.record(Op::Abort, 0, |t, ev| {
            ev.comm = comm(t, comm_h).id;
            ev.value = Some(i64::from(code));
        });
    }
    if let Some(t) = tracer::get() {
        // No merge: the other ranks may be gone. The raw log is flushed and
        // the trace goes to this rank's file, for `rankscale merge`.
        let _ = std::panic::catch_unwind(|| {
            if let Some(part) = t.finish()
                && t.config.trace_file.is_some()
                && let Err(e) = t.write_rank_file(part, Some("MPI_Abort"))
            {
                crate::warn::warn(
                    Some(t.rank),
                    &format!("cannot write this rank's trace ({e})"),
                );
            }
        });
    }
}

/// Interposes `MPI_Finalize`: records it, writes the trace, finalises MPI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let ret = return_address!();
    before_finalize(ret, Op::Finalize);
    // SAFETY: no arguments; the library's own Finalize.
    tracer::untraced(|| unsafe { PMPI_Finalize() })
}

/// Interposes `MPI_Abort`: records it and flushes before aborting.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Abort(comm_h: MPI_Comm, code: c_int) -> c_int {
    let ret = return_address!();
    before_abort(ret, comm_h, code);
    // SAFETY: the application's arguments go unchanged to the library.
    unsafe { PMPI_Abort(comm_h, code) }
}

// ------------------------------------------------------ point-to-point

/// Fills a blocking send (Send, Ssend, Bsend, Rsend).
pub(crate) fn fill_send(
    t: &Tracer,
    ev: &mut Event,
    count: impl Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm_h: MPI_Comm,
) {
    let ci = comm(t, comm_h);
    ev.comm = ci.id;
    ev.send = Some(xfer(&ci, dest, tag, count, datatype));
}

/// Fills a nonblocking or persistent send. `request` is the request MPI
/// wrote, `None` when the call failed.
pub(crate) fn fill_isend(
    t: &Tracer,
    ev: &mut Event,
    count: impl Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm_h: MPI_Comm,
    request: Option<MPI_Request>,
    persistent: bool,
) {
    fill_send(t, ev, count, datatype, dest, tag, comm_h);
    ev.req = new_req(t, request, persistent, false, comm_h);
}

/// Fills a nonblocking or persistent receive. `request` is the request MPI
/// wrote, `None` when the call failed.
pub(crate) fn fill_irecv(
    t: &Tracer,
    ev: &mut Event,
    count: impl Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm_h: MPI_Comm,
    request: Option<MPI_Request>,
    persistent: bool,
) {
    let ci = comm(t, comm_h);
    ev.comm = ci.id;
    ev.recv = Some(xfer(&ci, source, tag, count, datatype));
    ev.req = new_req(t, request, persistent, is_wildcard(source, tag), comm_h);
}

/// Fills a blocking receive. `status` is the status MPI filled for a
/// successful wildcard receive (`None` otherwise): its source and tag are
/// the recorded match.
pub(crate) fn fill_recv(
    t: &Tracer,
    ev: &mut Event,
    count: impl Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm_h: MPI_Comm,
    status: Option<&MPI_Status>,
) {
    let ci = comm(t, comm_h);
    ev.comm = ci.id;
    ev.recv = Some(xfer(&ci, source, tag, count, datatype));
    if let Some(st) = status {
        ev.matched.extend(matched(&ci, st, None));
    }
}

/// Fills Sendrecv; `status` as for [`fill_recv`].
pub(crate) fn fill_sendrecv(
    t: &Tracer,
    ev: &mut Event,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm_h: MPI_Comm,
    status: Option<&MPI_Status>,
) {
    let ci = comm(t, comm_h);
    ev.comm = ci.id;
    ev.send = Some(xfer(&ci, dest, sendtag, sendcount, sendtype));
    ev.recv = Some(xfer(&ci, source, recvtag, recvcount, recvtype));
    if let Some(st) = status {
        ev.matched.extend(matched(&ci, st, None));
    }
}

/// The status to record for a receive: the one MPI filled when the call
/// succeeded and the receive is a wildcard, else `None`.
///
/// # Safety
/// When `wild && rc == 0`, `st` must point to a status MPI just filled.
unsafe fn wild_status<'a>(wild: bool, rc: c_int, st: *const MPI_Status) -> Option<&'a MPI_Status> {
    // SAFETY: guaranteed by the caller.
    (wild && rc == 0).then(|| unsafe { &*st })
}

/// The count type of the `int` bindings. Argument lists written with it
/// are emitted a second time by `with_large_twin!` with MPI 4's types.
type Cnt = c_int;
/// Displacements of v-collectives in the `int` bindings.
type Disp = c_int;

macro_rules! blocking_send {
    ($name:ident, $pmpi:ident, $ipmpi:ident; $op:expr) => {
        entry!($name, $pmpi, (buf: *const c_void, count: Cnt, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm_h: MPI_Comm), |s| {
            let rc = if s.tracer().config.yield_wait {
                let mut r = null_req();
                let rc = $ipmpi(buf, count, datatype, dest, tag, comm_h, &mut r);
                if rc == 0 { wait_yield(s.tracer(), &mut r, ignore()) } else { rc }
            } else {
                $pmpi(buf, count, datatype, dest, tag, comm_h)
            };
            s.record($op, rc, |t, ev| fill_send(t, ev, count, datatype, dest, tag, comm_h));
            rc
        });
    };
}
with_large_twin!(blocking_send! { MPI_Send, PMPI_Send, PMPI_Isend; Op::Send });
with_large_twin!(blocking_send! { MPI_Ssend, PMPI_Ssend, PMPI_Issend; Op::Ssend });
with_large_twin!(blocking_send! { MPI_Rsend, PMPI_Rsend, PMPI_Irsend; Op::Rsend });
// Bsend is local: it never waits for the receiver, so it needs no yielding.
with_large_twin!(blocking_send! { MPI_Bsend, PMPI_Bsend, PMPI_Ibsend; Op::Bsend });

// MPI_Pcontrol is variadic in C (`int MPI_Pcontrol(const int level, ...)`).
// Only `level` is read: on the C ABIs MPI runs on, a callee that ignores the
// variadic tail receives the named argument exactly as declared here.
entry!(MPI_Pcontrol, PMPI_Pcontrol, (level: c_int), |s| {
    let rc = PMPI_Pcontrol(level);
    s.record(Op::Pcontrol, rc, |_, ev| ev.value = Some(i64::from(level)));
    rc
});

macro_rules! nonblocking_send {
    ($name:ident, $pmpi:ident; $op:expr, $persistent:expr) => {
        entry!($name, $pmpi, (buf: *const c_void, count: Cnt, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm_h: MPI_Comm, request: *mut MPI_Request), |s| {
            let rc = $pmpi(buf, count, datatype, dest, tag, comm_h, request);
            s.record($op, rc, |t, ev| {
                fill_isend(t, ev, count, datatype, dest, tag, comm_h, (rc == 0).then(|| *request), $persistent);
            });
            rc
        });
    };
}
with_large_twin!(nonblocking_send! { MPI_Isend, PMPI_Isend; Op::Isend, false });
with_large_twin!(nonblocking_send! { MPI_Issend, PMPI_Issend; Op::Issend, false });
with_large_twin!(nonblocking_send! { MPI_Ibsend, PMPI_Ibsend; Op::Ibsend, false });
with_large_twin!(nonblocking_send! { MPI_Irsend, PMPI_Irsend; Op::Irsend, false });
with_large_twin!(nonblocking_send! { MPI_Send_init, PMPI_Send_init; Op::SendInit, true });
with_large_twin!(nonblocking_send! { MPI_Ssend_init, PMPI_Ssend_init; Op::SsendInit, true });
with_large_twin!(nonblocking_send! { MPI_Bsend_init, PMPI_Bsend_init; Op::BsendInit, true });
with_large_twin!(nonblocking_send! { MPI_Rsend_init, PMPI_Rsend_init; Op::RsendInit, true });

macro_rules! nonblocking_recv {
    ($name:ident, $pmpi:ident; $op:expr, $persistent:expr) => {
        entry!($name, $pmpi, (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, source: c_int, tag: c_int, comm_h: MPI_Comm, request: *mut MPI_Request), |s| {
            let rc = $pmpi(buf, count, datatype, source, tag, comm_h, request);
            s.record($op, rc, |t, ev| {
                fill_irecv(t, ev, count, datatype, source, tag, comm_h, (rc == 0).then(|| *request), $persistent);
            });
            rc
        });
    };
}
with_large_twin!(nonblocking_recv! { MPI_Irecv, PMPI_Irecv; Op::Irecv, false });
with_large_twin!(nonblocking_recv! { MPI_Recv_init, PMPI_Recv_init; Op::RecvInit, true });

/// Defines `MPI_Recv` (and its large-count twin, by `with_large_twin!`).
macro_rules! recv_entry {
    ($name:ident, $pmpi:ident, $ipmpi:ident $(;)?) => {
        entry!($name, $pmpi, (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, source: c_int, tag: c_int, comm_h: MPI_Comm, status: *mut MPI_Status), |s| {
            let wild = is_wildcard(source, tag);
            let mut local = zero_status();
            let st = status_for(status, wild, &mut local);
            // From MPI_PROC_NULL the blocking call returns at once; through
            // Irecv and Test, MPICH would leave the status without the
            // MPI_PROC_NULL source and MPI_ANY_TAG the application must see.
            let rc = if s.tracer().config.yield_wait && source != consts().proc_null {
                let mut r = null_req();
                let rc = $ipmpi(buf, count, datatype, source, tag, comm_h, &mut r);
                if rc == 0 { wait_yield(s.tracer(), &mut r, st) } else { rc }
            } else {
                $pmpi(buf, count, datatype, source, tag, comm_h, st)
            };
            s.record(Op::Recv, rc, |t, ev| {
                fill_recv(t, ev, count, datatype, source, tag, comm_h, wild_status(wild, rc, st));
            });
            rc
        });
    };
}
with_large_twin!(recv_entry! { MPI_Recv, PMPI_Recv, PMPI_Irecv; });

/// Defines `MPI_Sendrecv` (and its large-count twin).
macro_rules! sendrecv_entry {
    ($name:ident, $pmpi:ident, $ipmpi:ident, $ispmpi:ident $(;)?) => {
        entry!($name, $pmpi, (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm_h: MPI_Comm, status: *mut MPI_Status), |s| {
            let wild = is_wildcard(source, recvtag);
            let mut local = zero_status();
            let st = status_for(status, wild, &mut local);
            // As in MPI_Recv: a receive from MPI_PROC_NULL keeps its status.
            let rc = if s.tracer().config.yield_wait && source != consts().proc_null {
                let mut r = [null_req(), null_req()];
                let mut sts = [zero_status(), zero_status()];
                let mut rc = $ipmpi(recvbuf, recvcount, recvtype, source, recvtag, comm_h, &mut r[0]);
                if rc == 0 {
                    rc = $ispmpi(sendbuf, sendcount, sendtype, dest, sendtag, comm_h, &mut r[1]);
                }
                if rc == 0 {
                    rc = yield_all(s.tracer(), 2, r.as_mut_ptr(), sts.as_mut_ptr());
                    if st as usize != consts().status_ignore {
                        *st = sts[0];
                    }
                }
                rc
            } else {
                $pmpi(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm_h, st)
            };
            s.record(Op::Sendrecv, rc, |t, ev| {
                fill_sendrecv(t, ev, sendcount, sendtype, dest, sendtag, recvcount, recvtype, source, recvtag, comm_h, wild_status(wild, rc, st));
            });
            rc
        });
    };
}
with_large_twin!(sendrecv_entry! { MPI_Sendrecv, PMPI_Sendrecv, PMPI_Irecv, PMPI_Isend; });

/// Defines `MPI_Sendrecv_replace` (and its large-count twin).
macro_rules! sendrecv_replace_entry {
    ($name:ident, $pmpi:ident $(;)?) => {
        entry!($name, $pmpi, (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm_h: MPI_Comm, status: *mut MPI_Status), |s| {
            let wild = is_wildcard(source, recvtag);
            let mut local = zero_status();
            let st = status_for(status, wild, &mut local);
            let rc = $pmpi(buf, count, datatype, dest, sendtag, source, recvtag, comm_h, st);
            s.record(Op::SendrecvReplace, rc, |t, ev| {
                fill_sendrecv(t, ev, count, datatype, dest, sendtag, count, datatype, source, recvtag, comm_h, wild_status(wild, rc, st));
            });
            rc
        });
    };
}
with_large_twin!(sendrecv_replace_entry! { MPI_Sendrecv_replace, PMPI_Sendrecv_replace; });

/// MPI 4's nonblocking `Isendrecv` and `Isendrecv_replace`, where the MPI
/// has them (MPICH 4; not Open MPI 4.1): the event of `Sendrecv` with the
/// request that completes both halves. A wildcard receive's match is not
/// recorded: MPICH 4.0.2 leaves the status of such a request unset (source
/// 0 and tag 0 whatever the message, measured), and a wrong match would
/// mislead `check` and replay where a missing one is only unresolved.
#[cfg(rankscale_mpi4)]
mod isendrecv {
    use super::*;

    macro_rules! isendrecv_entry {
        ($name:ident, $pmpi:ident $(;)?) => {
            entry!($name, $pmpi, (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm_h: MPI_Comm, request: *mut MPI_Request), |s| {
                let rc = $pmpi(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm_h, request);
                s.record(Op::Isendrecv, rc, |t, ev| {
                    fill_sendrecv(t, ev, sendcount, sendtype, dest, sendtag, recvcount, recvtype, source, recvtag, comm_h, None);
                    ev.req = new_req(t, (rc == 0).then(|| *request), false, false, comm_h);
                });
                rc
            });
        };
    }
    with_large_twin!(isendrecv_entry! { MPI_Isendrecv, PMPI_Isendrecv; });

    macro_rules! isendrecv_replace_entry {
        ($name:ident, $pmpi:ident $(;)?) => {
            entry!($name, $pmpi, (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm_h: MPI_Comm, request: *mut MPI_Request), |s| {
                let rc = $pmpi(buf, count, datatype, dest, sendtag, source, recvtag, comm_h, request);
                s.record(Op::IsendrecvReplace, rc, |t, ev| {
                    fill_sendrecv(t, ev, count, datatype, dest, sendtag, count, datatype, source, recvtag, comm_h, None);
                    ev.req = new_req(t, (rc == 0).then(|| *request), false, false, comm_h);
                });
                rc
            });
        };
    }
    with_large_twin!(isendrecv_replace_entry! { MPI_Isendrecv_replace, PMPI_Isendrecv_replace; });
}

// ------------------------------------------------------------ persistent

/// Fills Start/Startall: follows requests whose handle MPI changed (Open
/// MPI may swap it) and lists the requests started. `before`/`after` are
/// the handle keys before and after the call.
pub(crate) fn fill_start(t: &Tracer, ev: &mut Event, before: &[usize], after: &[usize]) {
    for (b, a) in before.iter().zip(after) {
        t.rekey_req(*b, *a);
    }
    name_reqs(t, ev, after);
}

/// Adds the ids of the live requests with these handle keys to the
/// requests the call names (`reqs=`); unknown handles are left out.
pub(crate) fn name_reqs(t: &Tracer, ev: &mut Event, keys: &[usize]) {
    ev.reqs
        .extend(t.reqs(keys).into_iter().flatten().map(|r| r.id));
}

/// Fills Request_free and forgets the request (`key`: its handle key,
/// read before the call).
pub(crate) fn fill_request_free(t: &Tracer, ev: &mut Event, key: usize) {
    name_reqs(t, ev, &[key]);
    t.retire_reqs(&[key], true);
}

entry!(MPI_Start, PMPI_Start, (request: *mut MPI_Request), |s| {
    let before = (*request).key();
    let rc = PMPI_Start(request);
    let after = (*request).key();
    s.record(Op::Start, rc, |t, ev| fill_start(t, ev, &[before], &[after]));
    rc
});

entry!(MPI_Startall, PMPI_Startall, (count: c_int, requests: *mut MPI_Request), |s| {
    let before = req_keys(requests, count);
    let rc = PMPI_Startall(count, requests);
    let after = req_keys(requests, count);
    s.record(Op::Startall, rc, |t, ev| fill_start(t, ev, &before, &after));
    rc
});

entry!(MPI_Request_free, PMPI_Request_free, (request: *mut MPI_Request), |s| {
    let key = (*request).key();
    let rc = PMPI_Request_free(request);
    s.record(Op::RequestFree, rc, |t, ev| fill_request_free(t, ev, key));
    rc
});

// ------------------------------------------------------------ completion

/// A yielding Waitall: each request tested in turn, with sleeps, until all
/// are complete. Not `MPI_Testall`: MPICH 4.0.2's fails on the request of a
/// persistent neighbourhood collective (an abort in `internal_Testall`)
/// where `MPI_Test` on it works. A request that completes with an error
/// ends the wait with that error.
///
/// # Safety
/// As for `MPI_Waitall`.
pub(crate) unsafe fn yield_all(
    t: &Tracer,
    n: c_int,
    reqs: *mut MPI_Request,
    sts: *mut MPI_Status,
) -> c_int {
    let n = usize::try_from(n).unwrap_or(0);
    let ignore_all = sts as usize == consts().statuses_ignore;
    let mut done = vec![false; n];
    loop {
        let mut all = true;
        for (i, d) in done.iter_mut().enumerate().filter(|(_, d)| !**d) {
            let mut flag: c_int = 0;
            // SAFETY: guaranteed by the caller: `reqs` holds `n` requests and
            // `sts` room for `n` statuses unless it is MPI_STATUSES_IGNORE.
            let rc = unsafe {
                let st = if ignore_all { ignore() } else { sts.add(i) };
                let rc = PMPI_Test(reqs.add(i), &mut flag, st);
                // Waitall sets each status's error field (MPI_Test leaves
                // it), and programs read it (MPICH's part/multipart).
                if rc == 0 && flag != 0 && !ignore_all {
                    (*st).MPI_ERROR = 0;
                }
                rc
            };
            if rc != 0 {
                return rc;
            }
            *d = flag != 0;
            all &= *d;
        }
        if all {
            return 0;
        }
        nap(t.config.yield_us);
    }
}

entry!(MPI_Wait, PMPI_Wait, (request: *mut MPI_Request, status: *mut MPI_Status), |s| {
    let t = s.tracer();
    let keys = [(*request).key()];
    let infos = t.reqs(&keys);
    let mut local = zero_status();
    let st = status_for(status, any_wildcard(&infos), &mut local);
    let rc = if may_yield(t, &infos) { wait_yield(t, request, st) } else { PMPI_Wait(request, st) };
    s.record(Op::Wait, rc, |t, ev| {
        if rc == 0 {
            completion(t, ev, &keys, &infos, &[0], |_| Some(*st));
        } else {
            ev.reqs = infos.iter().flatten().map(|r| r.id).collect();
        }
    });
    rc
});

entry!(MPI_Test, PMPI_Test, (request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status), |s| {
    let t = s.tracer();
    let keys = [(*request).key()];
    let infos = t.reqs(&keys);
    let mut local = zero_status();
    let st = status_for(status, any_wildcard(&infos), &mut local);
    let rc = PMPI_Test(request, flag, st);
    s.record(Op::Test, rc, |t, ev| {
        let f = rc == 0 && *flag != 0;
        ev.flag = Some(f);
        let done: &[usize] = if f { &[0] } else { &[] };
        completion(t, ev, &keys, &infos, done, |_| Some(*st));
    });
    rc
});

entry!(MPI_Waitall, PMPI_Waitall, (count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status), |s| {
    let t = s.tracer();
    let keys = req_keys(requests, count);
    let infos = t.reqs(&keys);
    let mut local = Vec::new();
    let sts = statuses_for(statuses, any_wildcard(&infos), keys.len(), &mut local);
    let rc = if may_yield(t, &infos) { yield_all(t, count, requests, sts) } else { PMPI_Waitall(count, requests, sts) };
    s.record(Op::Waitall, rc, |t, ev| {
        let all: Vec<usize> = if rc == 0 { (0..keys.len()).collect() } else { Vec::new() };
        completion(t, ev, &keys, &infos, &all, |k| Some(*sts.add(all[k])));
    });
    rc
});

entry!(MPI_Testall, PMPI_Testall, (count: c_int, requests: *mut MPI_Request, flag: *mut c_int, statuses: *mut MPI_Status), |s| {
    let t = s.tracer();
    let keys = req_keys(requests, count);
    let infos = t.reqs(&keys);
    let mut local = Vec::new();
    let sts = statuses_for(statuses, any_wildcard(&infos), keys.len(), &mut local);
    let rc = PMPI_Testall(count, requests, flag, sts);
    s.record(Op::Testall, rc, |t, ev| {
        let f = rc == 0 && *flag != 0;
        ev.flag = Some(f);
        let all: Vec<usize> = if f { (0..keys.len()).collect() } else { Vec::new() };
        completion(t, ev, &keys, &infos, &all, |k| Some(*sts.add(all[k])));
    });
    rc
});

entry!(MPI_Waitany, PMPI_Waitany, (count: c_int, requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status), |s| {
    let t = s.tracer();
    let keys = req_keys(requests, count);
    let infos = t.reqs(&keys);
    let mut local = zero_status();
    let st = status_for(status, any_wildcard(&infos), &mut local);
    let rc = if may_yield(t, &infos) {
        loop {
            let mut flag: c_int = 0;
            let rc = PMPI_Testany(count, requests, index, &mut flag, st);
            if rc != 0 || flag != 0 {
                break rc;
            }
            nap(t.config.yield_us);
        }
    } else {
        PMPI_Waitany(count, requests, index, st)
    };
    s.record(Op::Waitany, rc, |t, ev| {
        let done: Vec<usize> = if rc == 0 { usize::try_from(*index).into_iter().collect() } else { Vec::new() };
        completion(t, ev, &keys, &infos, &done, |_| Some(*st));
    });
    rc
});

entry!(MPI_Testany, PMPI_Testany, (count: c_int, requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status), |s| {
    let t = s.tracer();
    let keys = req_keys(requests, count);
    let infos = t.reqs(&keys);
    let mut local = zero_status();
    let st = status_for(status, any_wildcard(&infos), &mut local);
    let rc = PMPI_Testany(count, requests, index, flag, st);
    s.record(Op::Testany, rc, |t, ev| {
        let f = rc == 0 && *flag != 0;
        ev.flag = Some(f);
        let done: Vec<usize> = if f { usize::try_from(*index).into_iter().collect() } else { Vec::new() };
        completion(t, ev, &keys, &infos, &done, |_| Some(*st));
    });
    rc
});

macro_rules! some_completion {
    ($name:ident, $pmpi:ident, $op:expr, $yield:expr) => {
        entry!($name, $pmpi, (incount: c_int, requests: *mut MPI_Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status), |s| {
            let t = s.tracer();
            let keys = req_keys(requests, incount);
            let infos = t.reqs(&keys);
            let mut local = Vec::new();
            let sts = statuses_for(statuses, any_wildcard(&infos), keys.len(), &mut local);
            let rc = if $yield && may_yield(t, &infos) {
                loop {
                    let rc = PMPI_Testsome(incount, requests, outcount, indices, sts);
                    if rc != 0 || *outcount != 0 {
                        break rc;
                    }
                    nap(t.config.yield_us);
                }
            } else {
                $pmpi(incount, requests, outcount, indices, sts)
            };
            s.record($op, rc, |t, ev| {
                let n = if rc == 0 && *outcount > 0 { *outcount } else { 0 };
                let done: Vec<usize> = ints(indices, n).into_iter().filter_map(|i| usize::try_from(i).ok()).collect();
                completion(t, ev, &keys, &infos, &done, |k| Some(*sts.add(k)));
            });
            rc
        });
    };
}
some_completion!(MPI_Waitsome, PMPI_Waitsome, Op::Waitsome, true);
some_completion!(MPI_Testsome, PMPI_Testsome, Op::Testsome, false);

/// Interposes `MPI_Query_thread` without recording it. A thread's first
/// call into MPI fixes its index on the rank, and this query counts: replay
/// issues it on its threads one after the other, in the recorded order, so
/// that they get the application's thread numbers (and request ids) even
/// when their first recorded calls block.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    tracer::claim_thread_index();
    // SAFETY: the application's argument goes unchanged to the library.
    unsafe { PMPI_Query_thread(provided) }
}

// ----------------------------------------------------------------- probes

/// A probe's receive side: the posted source/tag and the probed size.
fn probe_xfer(ci: &CommInfo, source: c_int, tag: c_int, st: Option<&MPI_Status>) -> Transfer {
    let mut bytes: c_int = 0;
    if let Some(st) = st {
        // SAFETY: `st` is a status MPI just filled for a matched message;
        // MPI_Get_count only reads it. RSMPI_UINT8_T is a byte-sized type.
        unsafe { PMPI_Get_count(st, RSMPI_UINT8_T, &mut bytes) };
    }
    let mut x = xfer(ci, source, tag, 0, unsafe_byte());
    x.count = i64::from(bytes.max(0));
    x
}

fn unsafe_byte() -> MPI_Datatype {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_UINT8_T }
}

/// Fills Probe/Iprobe: the posted source and tag, and, when a message was
/// found (`found`: the status MPI filled), its size and its source and tag.
/// The caller sets `ev.flag` for Iprobe.
pub(crate) fn fill_probe(
    t: &Tracer,
    ev: &mut Event,
    source: c_int,
    tag: c_int,
    comm_h: MPI_Comm,
    found: Option<&MPI_Status>,
) -> Arc<CommInfo> {
    let ci = comm(t, comm_h);
    ev.comm = ci.id;
    ev.recv = Some(probe_xfer(&ci, source, tag, found));
    if let Some(st) = found {
        ev.matched.extend(matched(&ci, st, None));
    }
    ci
}

/// Fills Mprobe/Improbe: [`fill_probe`], plus the matched message (the
/// handle MPI wrote) registered for the Mrecv/Imrecv that will use it.
pub(crate) fn fill_mprobe(
    t: &Tracer,
    ev: &mut Event,
    source: c_int,
    tag: c_int,
    comm_h: MPI_Comm,
    found: Option<(&MPI_Status, MPI_Message)>,
) {
    let ci = fill_probe(t, ev, source, tag, comm_h, found.map(|f| f.0));
    if let Some((st, message)) = found {
        let m = message.key();
        let c = consts();
        if m != c.message_null && m != c.message_no_proc {
            ev.message = Some(t.add_msg(m, ci, st.MPI_SOURCE, st.MPI_TAG));
        }
    }
}

entry!(MPI_Probe, PMPI_Probe, (source: c_int, tag: c_int, comm_h: MPI_Comm, status: *mut MPI_Status), |s| {
    let t = s.tracer();
    let mut local = zero_status();
    let st = status_for(status, true, &mut local);
    let rc = if t.config.yield_wait {
        loop {
            let mut flag: c_int = 0;
            let rc = PMPI_Iprobe(source, tag, comm_h, &mut flag, st);
            if rc != 0 || flag != 0 {
                break rc;
            }
            nap(t.config.yield_us);
        }
    } else {
        PMPI_Probe(source, tag, comm_h, st)
    };
    s.record(Op::Probe, rc, |t, ev| {
        fill_probe(t, ev, source, tag, comm_h, (rc == 0).then(|| &*st));
    });
    rc
});

entry!(MPI_Iprobe, PMPI_Iprobe, (source: c_int, tag: c_int, comm_h: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status), |s| {
    let mut local = zero_status();
    let st = status_for(status, true, &mut local);
    let rc = PMPI_Iprobe(source, tag, comm_h, flag, st);
    s.record(Op::Iprobe, rc, |t, ev| {
        let f = rc == 0 && *flag != 0;
        ev.flag = Some(f);
        fill_probe(t, ev, source, tag, comm_h, f.then(|| &*st));
    });
    rc
});

entry!(MPI_Mprobe, PMPI_Mprobe, (source: c_int, tag: c_int, comm_h: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status), |s| {
    let t = s.tracer();
    let mut local = zero_status();
    let st = status_for(status, true, &mut local);
    let rc = if t.config.yield_wait {
        loop {
            let mut flag: c_int = 0;
            let rc = PMPI_Improbe(source, tag, comm_h, &mut flag, message, st);
            if rc != 0 || flag != 0 {
                break rc;
            }
            nap(t.config.yield_us);
        }
    } else {
        PMPI_Mprobe(source, tag, comm_h, message, st)
    };
    s.record(Op::Mprobe, rc, |t, ev| {
        fill_mprobe(t, ev, source, tag, comm_h, (rc == 0).then(|| (&*st, *message)));
    });
    rc
});

entry!(MPI_Improbe, PMPI_Improbe, (source: c_int, tag: c_int, comm_h: MPI_Comm, flag: *mut c_int, message: *mut MPI_Message, status: *mut MPI_Status), |s| {
    let mut local = zero_status();
    let st = status_for(status, true, &mut local);
    let rc = PMPI_Improbe(source, tag, comm_h, flag, message, st);
    s.record(Op::Improbe, rc, |t, ev| {
        let f = rc == 0 && *flag != 0;
        ev.flag = Some(f);
        fill_mprobe(t, ev, source, tag, comm_h, f.then(|| (&*st, *message)));
    });
    rc
});

/// Fills Mrecv/Imrecv: the message id (which names the probe that matched
/// it), the matched source and tag, and the receive buffer's count and
/// datatype size. `key` is the message handle's key, read before the call.
/// Returns the communicator of the message, if known (a message of
/// `MPI_PROC_NULL` has none).
pub(crate) fn fill_mrecv(
    t: &Tracer,
    ev: &mut Event,
    key: usize,
    count: impl Count,
    datatype: MPI_Datatype,
) -> Option<Arc<CommInfo>> {
    let msg = t.take_msg(key);
    let (peer, tag) = match &msg {
        Some(m) => {
            ev.comm = m.comm.id;
            ev.message = Some(m.id);
            (
                Peer::Rank {
                    world: m.comm.world(m.source),
                    local: m.source,
                },
                Tag::Value(m.tag),
            )
        }
        None => (Peer::Null, Tag::Any),
    };
    ev.recv = Some(Transfer {
        peer,
        tag,
        count: count.wide(),
        dsize: dsize(datatype),
        dtype: dtype(datatype),
    });
    msg.map(|m| m.comm)
}

/// Fills Imrecv: [`fill_mrecv`] plus the request MPI wrote (`None` when
/// the call failed).
pub(crate) fn fill_imrecv(
    t: &Tracer,
    ev: &mut Event,
    key: usize,
    count: impl Count,
    datatype: MPI_Datatype,
    request: Option<MPI_Request>,
) {
    let ci = fill_mrecv(t, ev, key, count, datatype);
    if let Some(r) = request
        && r.key() != consts().request_null
        && let Some(ci) = ci
    {
        ev.req = Some(t.add_req(r.key(), false, false, ci));
    }
}

/// Defines `MPI_Mrecv` (and its large-count twin).
macro_rules! mrecv_entry {
    ($name:ident, $pmpi:ident, $ipmpi:ident $(;)?) => {
        entry!($name, $pmpi, (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status), |s| {
            let key = (*message).key();
            let t = s.tracer();
            let rc = if t.config.yield_wait {
                let mut r = null_req();
                let rc = $ipmpi(buf, count, datatype, message, &mut r);
                if rc == 0 { wait_yield(t, &mut r, status) } else { rc }
            } else {
                $pmpi(buf, count, datatype, message, status)
            };
            s.record(Op::Mrecv, rc, |t, ev| {
                fill_mrecv(t, ev, key, count, datatype);
            });
            rc
        });
    };
}
with_large_twin!(mrecv_entry! { MPI_Mrecv, PMPI_Mrecv, PMPI_Imrecv; });

/// Defines `MPI_Imrecv` (and its large-count twin).
macro_rules! imrecv_entry {
    ($name:ident, $pmpi:ident $(;)?) => {
        entry!($name, $pmpi, (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request), |s| {
            let key = (*message).key();
            let rc = $pmpi(buf, count, datatype, message, request);
            s.record(Op::Imrecv, rc, |t, ev| fill_imrecv(t, ev, key, count, datatype, (rc == 0).then(|| *request)));
            rc
        });
    };
}
with_large_twin!(imrecv_entry! { MPI_Imrecv, PMPI_Imrecv; });

// ------------------------------------------------------------ collectives

fn in_place(p: *const c_void) -> bool {
    p as usize == consts().in_place
}

/// Common part of every collective: the communicator, and whether this rank
/// is the root of a rooted one.
fn coll_comm(
    t: &Tracer,
    ev: &mut Event,
    comm_h: MPI_Comm,
    root: Option<c_int>,
) -> (Arc<CommInfo>, bool) {
    let ci = comm(t, comm_h);
    ev.comm = ci.id;
    ev.root = root;
    // On an inter-communicator the root passes MPI_ROOT, the rest of its
    // group MPI_PROC_NULL, and the other group the root's rank (which
    // may equal their own).
    let is_root = root.is_some_and(|r| {
        r == consts().root || (r >= 0 && r == comm_rank(comm_h) && !is_inter(comm_h))
    });
    (ci, is_root)
}

pub(crate) unsafe fn fill_barrier(t: &Tracer, ev: &mut Event, comm_h: MPI_Comm) {
    coll_comm(t, ev, comm_h, None);
}

pub(crate) unsafe fn fill_bcast(
    t: &Tracer,
    ev: &mut Event,
    _buf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    root: c_int,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, Some(root));
    ev.send = Some(coll(count, datatype));
}

pub(crate) unsafe fn fill_reduce(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    _recvbuf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, Some(root));
    ev.send = Some(coll(count, datatype));
    ev.redop = Some(redop(op));
    ev.in_place = in_place(sendbuf);
}

/// Allreduce, Scan and Exscan.
pub(crate) unsafe fn fill_allreduce(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    _recvbuf: *mut c_void,
    count: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    ev.send = Some(coll(count, datatype));
    ev.redop = Some(redop(op));
    ev.in_place = in_place(sendbuf);
}

pub(crate) unsafe fn fill_gather(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    _recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm_h: MPI_Comm,
) {
    let (_, is_root) = coll_comm(t, ev, comm_h, Some(root));
    ev.in_place = is_root && in_place(sendbuf);
    if !ev.in_place {
        ev.send = Some(coll(sendcount, sendtype));
    }
    if is_root {
        ev.recv = Some(coll(recvcount, recvtype));
    }
}

pub(crate) unsafe fn fill_scatter(
    t: &Tracer,
    ev: &mut Event,
    _sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm_h: MPI_Comm,
) {
    let (_, is_root) = coll_comm(t, ev, comm_h, Some(root));
    if is_root {
        ev.send = Some(coll(sendcount, sendtype));
    }
    ev.in_place = is_root && in_place(recvbuf);
    if !ev.in_place {
        ev.recv = Some(coll(recvcount, recvtype));
    }
}

/// Allgather and Alltoall.
pub(crate) unsafe fn fill_allgather(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    _recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    ev.in_place = in_place(sendbuf);
    if !ev.in_place {
        ev.send = Some(coll(sendcount, sendtype));
    }
    ev.recv = Some(coll(recvcount, recvtype));
}

pub(crate) unsafe fn fill_gatherv<C: Count, D>(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    _recvbuf: *mut c_void,
    recvcounts: *const C,
    _displs: *const D,
    recvtype: MPI_Datatype,
    root: c_int,
    comm_h: MPI_Comm,
) {
    let (_, is_root) = coll_comm(t, ev, comm_h, Some(root));
    ev.in_place = is_root && in_place(sendbuf);
    if !ev.in_place {
        ev.send = Some(coll(sendcount, sendtype));
    }
    if is_root {
        ev.recv = Some(coll(0, recvtype));
        // SAFETY: at the root, recvcounts has one entry per rank.
        ev.recv_counts = unsafe { counts(recvcounts, comm_size(comm_h)) };
    }
}

pub(crate) unsafe fn fill_scatterv<C: Count, D>(
    t: &Tracer,
    ev: &mut Event,
    _sendbuf: *const c_void,
    sendcounts: *const C,
    _displs: *const D,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: impl Count,
    recvtype: MPI_Datatype,
    root: c_int,
    comm_h: MPI_Comm,
) {
    let (_, is_root) = coll_comm(t, ev, comm_h, Some(root));
    if is_root {
        ev.send = Some(coll(0, sendtype));
        // SAFETY: at the root, sendcounts has one entry per rank.
        ev.send_counts = unsafe { counts(sendcounts, comm_size(comm_h)) };
    }
    ev.in_place = is_root && in_place(recvbuf);
    if !ev.in_place {
        ev.recv = Some(coll(recvcount, recvtype));
    }
}

pub(crate) unsafe fn fill_allgatherv<C: Count, D>(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    sendcount: impl Count,
    sendtype: MPI_Datatype,
    _recvbuf: *mut c_void,
    recvcounts: *const C,
    _displs: *const D,
    recvtype: MPI_Datatype,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    ev.in_place = in_place(sendbuf);
    if !ev.in_place {
        ev.send = Some(coll(sendcount, sendtype));
    }
    ev.recv = Some(coll(0, recvtype));
    // SAFETY: recvcounts has one entry per rank (per in-neighbour).
    ev.recv_counts = unsafe { counts(recvcounts, list_lens(ev.op, comm_h).1) };
}

/// The lengths of a v/w collective's send and receive lists: one entry per
/// rank of the communicator (of its remote group, for an
/// inter-communicator), or for a neighbourhood collective one per out- and
/// per in-neighbour of its virtual topology.
pub(crate) fn list_lens(op: Op, comm_h: MPI_Comm) -> (c_int, c_int) {
    if op.is_neighborhood() {
        let (indegree, outdegree) = mpi_helpers::neighbor_degrees(comm_h);
        (outdegree, indegree)
    } else {
        let n = comm_size(comm_h);
        (n, n)
    }
}

pub(crate) unsafe fn fill_alltoallv<C: Count, D>(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    sendcounts: *const C,
    _sdispls: *const D,
    sendtype: MPI_Datatype,
    _recvbuf: *mut c_void,
    recvcounts: *const C,
    _rdispls: *const D,
    recvtype: MPI_Datatype,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    let (ns, nr) = list_lens(ev.op, comm_h);
    ev.in_place = in_place(sendbuf);
    if !ev.in_place {
        ev.send = Some(coll(0, sendtype));
        // SAFETY: sendcounts has one entry per rank (per out-neighbour)
        // when not in place.
        ev.send_counts = unsafe { counts(sendcounts, ns) };
    }
    ev.recv = Some(coll(0, recvtype));
    // SAFETY: recvcounts has one entry per rank (per in-neighbour).
    ev.recv_counts = unsafe { counts(recvcounts, nr) };
}

/// Datatype sizes of an Alltoallw type array.
///
/// # Safety
/// `types` must point to `n` datatypes.
unsafe fn type_sizes(types: *const MPI_Datatype, n: c_int) -> Vec<i32> {
    // SAFETY: guaranteed by the caller.
    unsafe { c_array(types, n) }
        .iter()
        .map(|&d| i32::try_from(dsize(d)).unwrap_or(i32::MAX))
        .collect()
}

/// Fills Alltoallw and Neighbor_alltoallw, whose displacements are `int`
/// and `MPI_Aint` (`D`): they are not recorded.
pub(crate) unsafe fn fill_alltoallw<C: Count, D>(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    sendcounts: *const C,
    _sdispls: *const D,
    sendtypes: *const MPI_Datatype,
    _recvbuf: *mut c_void,
    recvcounts: *const C,
    _rdispls: *const D,
    recvtypes: *const MPI_Datatype,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    let (ns, nr) = list_lens(ev.op, comm_h);
    ev.in_place = in_place(sendbuf);
    // SAFETY: the arrays have one entry per rank, or per out- and
    // in-neighbour (send side when not in place).
    unsafe {
        if !ev.in_place {
            ev.send_counts = counts(sendcounts, ns);
            ev.send_dsizes = type_sizes(sendtypes, ns);
        }
        ev.recv_counts = counts(recvcounts, nr);
        ev.recv_dsizes = type_sizes(recvtypes, nr);
    }
}

pub(crate) unsafe fn fill_reduce_scatter<C: Count>(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    _recvbuf: *mut c_void,
    recvcounts: *const C,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    ev.in_place = in_place(sendbuf);
    ev.recv = Some(coll(0, datatype));
    ev.redop = Some(redop(op));
    // One entry per rank of the local group, on an inter-communicator too
    // (each group's result is scattered over the other by the counts of
    // the group that receives it): not `comm_size`, which is the remote
    // group's there.
    let mut n: c_int = 0;
    // SAFETY: `comm_h` is the communicator MPI just accepted; the call
    // only writes its int out-parameter.
    unsafe { PMPI_Comm_size(comm_h, &mut n) };
    // SAFETY: recvcounts has one entry per rank of the local group.
    ev.recv_counts = unsafe { counts(recvcounts, n) };
}

pub(crate) unsafe fn fill_reduce_scatter_block(
    t: &Tracer,
    ev: &mut Event,
    sendbuf: *const c_void,
    _recvbuf: *mut c_void,
    recvcount: impl Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm_h: MPI_Comm,
) {
    coll_comm(t, ev, comm_h, None);
    ev.in_place = in_place(sendbuf);
    ev.recv = Some(coll(recvcount, datatype));
    ev.redop = Some(redop(op));
}

/// Defines a blocking collective and its nonblocking `I` form from one
/// argument list and one fill function. In yielding mode the blocking form
/// is issued as the `I` form plus a test-and-sleep wait (not on Open MPI,
/// see [`super::yield_collectives`]).
macro_rules! collective {
    ($name:ident, $pmpi:ident, $iname:ident, $ipmpi:ident; $fill:ident, $op:expr, $iop:expr, $c:ident, ($($a:ident : $t:ty),* $(,)?)) => {
        entry!($name, $pmpi, ($($a: $t),*), |s| {
            let rc = if crate::ffi::yield_collectives(s.tracer()) {
                let mut r = null_req();
                let rc = $ipmpi($($a,)* &mut r);
                if rc == 0 { wait_yield(s.tracer(), &mut r, ignore()) } else { rc }
            } else {
                $pmpi($($a),*)
            };
            s.record($op, rc, |t, ev| $fill(t, ev, $($a),*));
            rc
        });
        entry!($iname, $ipmpi, ($($a: $t,)* request: *mut MPI_Request), |s| {
            let rc = $ipmpi($($a,)* request);
            s.record($iop, rc, |t, ev| {
                $fill(t, ev, $($a),*);
                ev.req = new_req(t, (rc == 0).then(|| *request), false, false, $c);
            });
            rc
        });
    };
}

collective!(MPI_Barrier, PMPI_Barrier, MPI_Ibarrier, PMPI_Ibarrier; fill_barrier, Op::Barrier, Op::Ibarrier, comm_h, (comm_h: MPI_Comm));
with_large_twin!(
    collective! { MPI_Bcast, PMPI_Bcast, MPI_Ibcast, PMPI_Ibcast; fill_bcast, Op::Bcast, Op::Ibcast, comm_h,
    (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Reduce, PMPI_Reduce, MPI_Ireduce, PMPI_Ireduce; fill_reduce, Op::Reduce, Op::Ireduce, comm_h,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Allreduce, PMPI_Allreduce, MPI_Iallreduce, PMPI_Iallreduce; fill_allreduce, Op::Allreduce, Op::Iallreduce, comm_h,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Scan, PMPI_Scan, MPI_Iscan, PMPI_Iscan; fill_allreduce, Op::Scan, Op::Iscan, comm_h,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Exscan, PMPI_Exscan, MPI_Iexscan, PMPI_Iexscan; fill_allreduce, Op::Exscan, Op::Iexscan, comm_h,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Gather, PMPI_Gather, MPI_Igather, PMPI_Igather; fill_gather, Op::Gather, Op::Igather, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Scatter, PMPI_Scatter, MPI_Iscatter, PMPI_Iscatter; fill_scatter, Op::Scatter, Op::Iscatter, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Allgather, PMPI_Allgather, MPI_Iallgather, PMPI_Iallgather; fill_allgather, Op::Allgather, Op::Iallgather, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Alltoall, PMPI_Alltoall, MPI_Ialltoall, PMPI_Ialltoall; fill_allgather, Op::Alltoall, Op::Ialltoall, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Gatherv, PMPI_Gatherv, MPI_Igatherv, PMPI_Igatherv; fill_gatherv, Op::Gatherv, Op::Igatherv, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Scatterv, PMPI_Scatterv, MPI_Iscatterv, PMPI_Iscatterv; fill_scatterv, Op::Scatterv, Op::Iscatterv, comm_h,
    (sendbuf: *const c_void, sendcounts: *const Cnt, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Allgatherv, PMPI_Allgatherv, MPI_Iallgatherv, PMPI_Iallgatherv; fill_allgatherv, Op::Allgatherv, Op::Iallgatherv, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, displs: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Alltoallv, PMPI_Alltoallv, MPI_Ialltoallv, PMPI_Ialltoallv; fill_alltoallv, Op::Alltoallv, Op::Ialltoallv, comm_h,
    (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Alltoallw, PMPI_Alltoallw, MPI_Ialltoallw, PMPI_Ialltoallw; fill_alltoallw, Op::Alltoallw, Op::Ialltoallw, comm_h,
    (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Reduce_scatter, PMPI_Reduce_scatter, MPI_Ireduce_scatter, PMPI_Ireduce_scatter; fill_reduce_scatter, Op::ReduceScatter, Op::IreduceScatter, comm_h,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, PMPI_Ireduce_scatter_block; fill_reduce_scatter_block, Op::ReduceScatterBlock, Op::IreduceScatterBlock, comm_h,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
);

// Neighbourhood collectives: the same events as their global twins, with
// lists of one entry per neighbour.
with_large_twin!(
    collective! { MPI_Neighbor_allgather, PMPI_Neighbor_allgather, MPI_Ineighbor_allgather, PMPI_Ineighbor_allgather; fill_allgather, Op::NeighborAllgather, Op::IneighborAllgather, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Neighbor_alltoall, PMPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, PMPI_Ineighbor_alltoall; fill_allgather, Op::NeighborAlltoall, Op::IneighborAlltoall, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Neighbor_allgatherv, PMPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, PMPI_Ineighbor_allgatherv; fill_allgatherv, Op::NeighborAllgatherv, Op::IneighborAllgatherv, comm_h,
    (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, displs: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Neighbor_alltoallv, PMPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, PMPI_Ineighbor_alltoallv; fill_alltoallv, Op::NeighborAlltoallv, Op::IneighborAlltoallv, comm_h,
    (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
);
with_large_twin!(
    collective! { MPI_Neighbor_alltoallw, PMPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, PMPI_Ineighbor_alltoallw; fill_alltoallw, Op::NeighborAlltoallw, Op::IneighborAlltoallw, comm_h,
    (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm_h: MPI_Comm) }
);

/// Defines an MPI 4 persistent collective (`X_init`) from the argument list
/// and fill function of its blocking form: the event of its `I` form, with
/// a persistent request that each `MPI_Start` runs.
#[cfg(rankscale_mpi4)]
macro_rules! persistent_collective {
    ($name:ident, $pmpi:ident; $fill:ident, $op:expr, $c:ident, ($($a:ident : $t:ty),* $(,)?)) => {
        entry!($name, $pmpi, ($($a: $t,)* info: MPI_Info, request: *mut MPI_Request), |s| {
            let rc = $pmpi($($a,)* info, request);
            s.record($op, rc, |t, ev| {
                $fill(t, ev, $($a),*);
                ev.req = new_req(t, (rc == 0).then(|| *request), true, false, $c);
            });
            rc
        });
    };
}

/// The persistent collectives of MPI 4, where the MPI has them (MPICH 4;
/// not Open MPI 4.1).
#[cfg(rankscale_mpi4)]
mod persistent_collectives {
    use super::*;

    persistent_collective!(MPI_Barrier_init, PMPI_Barrier_init; fill_barrier, Op::BarrierInit, comm_h,
        (comm_h: MPI_Comm));
    with_large_twin!(
        persistent_collective! { MPI_Bcast_init, PMPI_Bcast_init; fill_bcast, Op::BcastInit, comm_h,
        (buf: *mut c_void, count: Cnt, datatype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Reduce_init, PMPI_Reduce_init; fill_reduce, Op::ReduceInit, comm_h,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Allreduce_init, PMPI_Allreduce_init; fill_allreduce, Op::AllreduceInit, comm_h,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Scan_init, PMPI_Scan_init; fill_allreduce, Op::ScanInit, comm_h,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Exscan_init, PMPI_Exscan_init; fill_allreduce, Op::ExscanInit, comm_h,
        (sendbuf: *const c_void, recvbuf: *mut c_void, count: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Gather_init, PMPI_Gather_init; fill_gather, Op::GatherInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Scatter_init, PMPI_Scatter_init; fill_scatter, Op::ScatterInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Allgather_init, PMPI_Allgather_init; fill_allgather, Op::AllgatherInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Alltoall_init, PMPI_Alltoall_init; fill_allgather, Op::AlltoallInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Gatherv_init, PMPI_Gatherv_init; fill_gatherv, Op::GathervInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Scatterv_init, PMPI_Scatterv_init; fill_scatterv, Op::ScattervInit, comm_h,
        (sendbuf: *const c_void, sendcounts: *const Cnt, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, root: c_int, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Allgatherv_init, PMPI_Allgatherv_init; fill_allgatherv, Op::AllgathervInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, displs: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Alltoallv_init, PMPI_Alltoallv_init; fill_alltoallv, Op::AlltoallvInit, comm_h,
        (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Alltoallw_init, PMPI_Alltoallw_init; fill_alltoallw, Op::AlltoallwInit, comm_h,
        (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Reduce_scatter_init, PMPI_Reduce_scatter_init; fill_reduce_scatter, Op::ReduceScatterInit, comm_h,
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Reduce_scatter_block_init, PMPI_Reduce_scatter_block_init; fill_reduce_scatter_block, Op::ReduceScatterBlockInit, comm_h,
        (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Cnt, datatype: MPI_Datatype, op: MPI_Op, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Neighbor_allgather_init, PMPI_Neighbor_allgather_init; fill_allgather, Op::NeighborAllgatherInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Neighbor_alltoall_init, PMPI_Neighbor_alltoall_init; fill_allgather, Op::NeighborAlltoallInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Cnt, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Neighbor_allgatherv_init, PMPI_Neighbor_allgatherv_init; fill_allgatherv, Op::NeighborAllgathervInit, comm_h,
        (sendbuf: *const c_void, sendcount: Cnt, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, displs: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Neighbor_alltoallv_init, PMPI_Neighbor_alltoallv_init; fill_alltoallv, Op::NeighborAlltoallvInit, comm_h,
        (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const Disp, recvtype: MPI_Datatype, comm_h: MPI_Comm) }
    );
    with_large_twin!(
        persistent_collective! { MPI_Neighbor_alltoallw_init, PMPI_Neighbor_alltoallw_init; fill_alltoallw, Op::NeighborAlltoallwInit, comm_h,
        (sendbuf: *const c_void, sendcounts: *const Cnt, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Cnt, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm_h: MPI_Comm) }
    );
}

/// MPI 4 partitioned point-to-point, where the MPI has it (MPICH 4; not
/// Open MPI 4.1). `Psend_init` and `Precv_init` are persistent requests
/// whose transfer is the whole buffer (partitions times the count of one,
/// the partitions in [`Event::value`]); `Pready*` and `Parrived` name the
/// request and the partitions they act on.
#[cfg(rankscale_mpi4)]
pub(crate) mod partitioned {
    use super::*;

    /// Fills `Psend_init` (`send`) or `Precv_init`. MPICH 4.0 declares
    /// the count of one partition an `MPI_Count`.
    #[allow(clippy::too_many_arguments)]
    fn fill_partitioned(
        t: &Tracer,
        ev: &mut Event,
        send: bool,
        partitions: c_int,
        count: MPI_Count,
        datatype: MPI_Datatype,
        peer: c_int,
        tag: c_int,
        comm_h: MPI_Comm,
        request: Option<MPI_Request>,
    ) {
        let ci = comm(t, comm_h);
        ev.comm = ci.id;
        let mut x = xfer(&ci, peer, tag, 0, datatype);
        x.count = i64::from(partitions).saturating_mul(count);
        if send {
            ev.send = Some(x);
        } else {
            ev.recv = Some(x);
        }
        ev.value = Some(i64::from(partitions));
        ev.req = new_req(t, request, true, false, comm_h);
    }

    entry!(MPI_Psend_init, PMPI_Psend_init, (buf: *const c_void, partitions: c_int, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm_h: MPI_Comm, info: MPI_Info, request: *mut MPI_Request), |s| {
        let rc = PMPI_Psend_init(buf, partitions, count, datatype, dest, tag, comm_h, info, request);
        s.record(Op::PsendInit, rc, |t, ev| {
            fill_partitioned(t, ev, true, partitions, count, datatype, dest, tag, comm_h, (rc == 0).then(|| *request));
        });
        rc
    });

    entry!(MPI_Precv_init, PMPI_Precv_init, (buf: *mut c_void, partitions: c_int, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm_h: MPI_Comm, info: MPI_Info, request: *mut MPI_Request), |s| {
        let rc = PMPI_Precv_init(buf, partitions, count, datatype, source, tag, comm_h, info, request);
        s.record(Op::PrecvInit, rc, |t, ev| {
            fill_partitioned(t, ev, false, partitions, count, datatype, source, tag, comm_h, (rc == 0).then(|| *request));
        });
        rc
    });

    /// Fills `Pready`, `Pready_range` (`partitions`: low and high) and
    /// `Pready_list` (the list) of the request with handle key `key`.
    pub(crate) fn fill_pready(t: &Tracer, ev: &mut Event, key: usize, partitions: Vec<i64>) {
        name_reqs(t, ev, &[key]);
        if ev.op == Op::Pready {
            ev.value = partitions.first().copied();
        } else {
            ev.send_counts = partitions;
        }
    }

    /// Fills `Parrived` of the request with handle key `key`.
    pub(crate) fn fill_parrived(
        t: &Tracer,
        ev: &mut Event,
        key: usize,
        partition: c_int,
        flag: bool,
    ) {
        name_reqs(t, ev, &[key]);
        ev.value = Some(i64::from(partition));
        ev.flag = Some(flag);
    }

    entry!(MPI_Pready, PMPI_Pready, (partition: c_int, request: MPI_Request), |s| {
        let rc = PMPI_Pready(partition, request);
        s.record(Op::Pready, rc, |t, ev| fill_pready(t, ev, request.key(), vec![i64::from(partition)]));
        rc
    });

    entry!(MPI_Pready_range, PMPI_Pready_range, (low: c_int, high: c_int, request: MPI_Request), |s| {
        let rc = PMPI_Pready_range(low, high, request);
        s.record(Op::PreadyRange, rc, |t, ev| {
            fill_pready(t, ev, request.key(), vec![i64::from(low), i64::from(high)])
        });
        rc
    });

    entry!(MPI_Pready_list, PMPI_Pready_list, (length: c_int, partitions: *mut c_int, request: MPI_Request), |s| {
        let rc = PMPI_Pready_list(length, partitions, request);
        s.record(Op::PreadyList, rc, |t, ev| {
            // SAFETY: MPI read `length` partitions from this array (or it
            // is null).
            fill_pready(t, ev, request.key(), unsafe { counts(partitions.cast_const(), length) })
        });
        rc
    });

    entry!(MPI_Parrived, PMPI_Parrived, (request: MPI_Request, partition: c_int, flag: *mut c_int), |s| {
        let rc = PMPI_Parrived(request, partition, flag);
        s.record(Op::Parrived, rc, |t, ev| fill_parrived(t, ev, request.key(), partition, *flag != 0));
        rc
    });
}

// ------------------------------------------- communicators and topologies

/// Records a constructor: the parent communicator and the new one's
/// lineage. `newcomm` is the communicator MPI returned (`MPI_COMM_NULL` when
/// the call failed).
pub(crate) fn fill_create(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    newcomm: MPI_Comm,
    extra: impl FnOnce(&mut trace::CommCreate),
) {
    ev.comm = comm(t, parent).id;
    let mut c = new_comm(t, newcomm);
    extra(&mut c);
    ev.create = Some(Box::new(c));
}

/// The communicator a constructor wrote, or `MPI_COMM_NULL` when it failed.
///
/// # Safety
/// When `rc == 0`, `newcomm` must point to the communicator MPI just wrote.
unsafe fn created(rc: c_int, newcomm: *const MPI_Comm) -> MPI_Comm {
    if rc == 0 {
        // SAFETY: guaranteed by the caller.
        unsafe { *newcomm }
    } else {
        // SAFETY: reading an initialised mpi-sys constant.
        unsafe { RSMPI_COMM_NULL }
    }
}

/// Fills Comm_dup.
pub(crate) fn fill_comm_dup(t: &Tracer, ev: &mut Event, parent: MPI_Comm, newcomm: MPI_Comm) {
    fill_create(t, ev, parent, newcomm, |_| {});
}

/// Fills Comm_idup: the new communicator's id is taken now (creation
/// order), its handle registered when the request completes. It has the
/// parent's group, so the parent's rank table and size. `newcomm` is the
/// address of the application's handle: a C `MPI_Comm`, or a Fortran
/// INTEGER when `fortran`.
pub(crate) fn fill_comm_idup(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    newcomm: usize,
    fortran: bool,
    request: Option<MPI_Request>,
) {
    let info = comm(t, parent);
    ev.comm = info.id;
    // Taken even when the call failed, as `new_comm` takes it for
    // `MPI_COMM_NULL`.
    let id = t.reserve_comm();
    let Some(r) = request.filter(|r| r.key() != consts().request_null) else {
        ev.create = Some(Box::new(trace::CommCreate::new(None, 0)));
        return;
    };
    let mut size: c_int = 0;
    // SAFETY: `parent` is the communicator MPI just accepted; the call only
    // writes its int out-parameter.
    unsafe { PMPI_Comm_size(parent, &mut size) };
    ev.create = Some(Box::new(trace::CommCreate::new(Some(id), size)));
    let pending = PendingComm {
        id,
        to_world: info.to_world.clone(),
        me: t.comm_rank(info.id),
        slot: newcomm,
        fortran,
    };
    ev.req = Some(t.add_creating_req(r.key(), info, pending));
}

/// Fills Comm_split.
pub(crate) fn fill_comm_split(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    color: c_int,
    key: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        c.color = (color != consts().undefined).then_some(color);
        c.key = Some(key);
    });
}

/// Fills Comm_split_type.
pub(crate) fn fill_comm_split_type(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    split_type: c_int,
    key: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        c.split_type = Some(split_type);
        c.key = Some(key);
    });
}

/// Fills Comm_create.
pub(crate) fn fill_comm_create(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    group: MPI_Group,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| c.members = group_members(group));
}

/// The world ranks of a communicator's (local) group in rank order.
fn members_of(t: &Tracer, comm: MPI_Comm) -> Vec<i32> {
    match world_map(comm) {
        Some(m) => m.into_vec(),
        None => (0..i32::try_from(t.job.world_size).unwrap_or(0)).collect(),
    }
}

/// Fills Intercomm_create: the local leader and the remote leader (its
/// rank in the peer communicator) in `dims`, the tag as `key`, the peer
/// communicator in `edges` (at the local leader, the one rank where it is
/// significant), the local group's world ranks in `sources` and the remote
/// group's in `members`: what replay passes back, and what makes the two
/// sides of one inter-communicator one instance for `check`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fill_intercomm_create(
    t: &Tracer,
    ev: &mut Event,
    local: MPI_Comm,
    local_leader: c_int,
    peer: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newcomm: MPI_Comm,
) {
    let leader = comm_rank(local) == local_leader;
    let peer_id = (leader && peer.key() != consts().comm_null).then(|| comm(t, peer).id.0);
    let local_members = members_of(t, local);
    let null = newcomm.key() == consts().comm_null;
    fill_create(t, ev, local, newcomm, |c| {
        c.dims = vec![local_leader, remote_leader];
        c.key = Some(tag);
        c.edges = peer_id
            .and_then(|id| i32::try_from(id).ok())
            .into_iter()
            .collect();
        c.sources = local_members;
        if !null {
            // An inter-communicator's map is its remote group.
            c.members = world_map(newcomm)
                .map(<[i32]>::into_vec)
                .unwrap_or_default();
        }
    });
}

/// Fills Intercomm_merge: `high` as `key`, the new communicator's world
/// ranks in rank order as `members` (the same list on both sides).
pub(crate) fn fill_intercomm_merge(
    t: &Tracer,
    ev: &mut Event,
    inter: MPI_Comm,
    high: c_int,
    newcomm: MPI_Comm,
) {
    let null = newcomm.key() == consts().comm_null;
    fill_create(t, ev, inter, newcomm, |c| {
        c.key = Some(high);
        if !null {
            c.members = members_of(t, newcomm);
        }
    });
}

/// Fills Cart_create. `periods` are C ints or Fortran LOGICALs (nonzero is
/// true), as is `reorder`.
///
/// # Safety
/// `dims` and `periods` must point to `ndims` ints.
pub(crate) unsafe fn fill_cart_create(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            c.dims = ints(dims, ndims);
            c.periods = ints(periods, ndims)
                .into_iter()
                .map(|p| i32::from(p != 0))
                .collect();
        }
        c.reorder = Some(reorder != 0);
    });
}

/// The number of dimensions of a Cartesian communicator (read before
/// Cart_sub, for the length of `remain_dims`).
pub(crate) fn cartdim(comm_h: MPI_Comm) -> c_int {
    let mut ndims: c_int = 0;
    // SAFETY: a communicator the application passed to MPI_Cart_sub; the
    // call only writes the int out-param.
    unsafe { PMPI_Cartdim_get(comm_h, &mut ndims) };
    ndims
}

/// Fills Cart_sub (`ndims` from [`cartdim`]).
///
/// # Safety
/// `remain_dims` must point to `ndims` ints (C ints or Fortran LOGICALs).
pub(crate) unsafe fn fill_cart_sub(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    ndims: c_int,
    remain_dims: *const c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        // SAFETY: guaranteed by the caller.
        c.dims = unsafe { ints(remain_dims, ndims) }
            .into_iter()
            .map(|p| i32::from(p != 0))
            .collect();
    });
}

/// Fills Graph_create.
///
/// # Safety
/// `index` must point to `nnodes` ints and `edges` to `index[nnodes-1]`.
pub(crate) unsafe fn fill_graph_create(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    reorder: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            c.dims = ints(index, nnodes);
            let nedges = c.dims.last().copied().unwrap_or(0);
            c.edges = ints(edges, nedges);
        }
        c.reorder = Some(reorder != 0);
    });
}

/// Fills Dist_graph_create.
///
/// # Safety
/// `sources` and `degrees` must point to `n` ints and `destinations` to
/// the sum of the degrees.
pub(crate) unsafe fn fill_dist_graph_create(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    reorder: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            c.sources = ints(sources, n);
            c.dims = ints(degrees, n);
            let nedges: c_int = c.dims.iter().sum();
            c.edges = ints(destinations, nedges);
        }
        c.reorder = Some(reorder != 0);
    });
}

/// Fills Dist_graph_create_adjacent.
///
/// # Safety
/// `sources` must point to `indegree` ints, `destinations` to `outdegree`.
pub(crate) unsafe fn fill_dist_graph_create_adjacent(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    reorder: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            c.sources = ints(sources, indegree);
            c.edges = ints(destinations, outdegree);
        }
        c.reorder = Some(reorder != 0);
    });
}

/// What Comm_free must know before the call frees the handle: its key and
/// its id.
pub(crate) fn comm_free_before(t: &Tracer, comm_h: MPI_Comm) -> (usize, CommId) {
    (comm_h.key(), comm(t, comm_h).id)
}

/// Fills Comm_free and forgets the communicator if the call succeeded.
pub(crate) fn fill_comm_free(t: &Tracer, ev: &mut Event, rc: c_int, (key, id): (usize, CommId)) {
    ev.comm = id;
    if rc == 0 {
        t.remove_comm(key);
    }
}

entry!(MPI_Comm_dup, PMPI_Comm_dup, (comm_h: MPI_Comm, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Comm_dup(comm_h, newcomm);
    s.record(Op::CommDup, rc, |t, ev| fill_comm_dup(t, ev, comm_h, created(rc, newcomm)));
    rc
});

entry!(MPI_Comm_idup, PMPI_Comm_idup, (comm_h: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request), |s| {
    let rc = PMPI_Comm_idup(comm_h, newcomm, request);
    s.record(Op::CommIdup, rc, |t, ev| {
        fill_comm_idup(t, ev, comm_h, newcomm as usize, false, (rc == 0).then(|| *request))
    });
    rc
});

/// MPI 4's constructors from groups, where the MPI has them (MPICH 4; not
/// Open MPI 4.1): no parent communicator (the event names the world, whose
/// ranks the groups are given in), the groups as world ranks and the
/// string tag as its hash in `key`.
#[cfg(rankscale_mpi4)]
pub(crate) mod from_groups {
    use super::*;

    /// The key of a string tag: a 32-bit FNV-1a hash of it, what every
    /// member of the call agrees on. Replay and codegen issue the tag
    /// `rankscale-KEY` for a recorded key, which is read back as KEY, so
    /// that a replay's trace names the application's keys. From Fortran
    /// the tag is the CHARACTER argument without its trailing blanks, as
    /// MPI reads it.
    pub(crate) fn tag_key(bytes: &[u8]) -> i32 {
        if let Some(k) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.strip_prefix("rankscale-"))
            .and_then(|k| k.parse().ok())
        {
            return k;
        }
        let h = bytes.iter().fold(0x811c_9dc5_u32, |h, &b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        h as i32
    }

    /// The key of a C string tag (none: 0).
    fn c_tag_key(tag: *const c_char) -> i32 {
        if tag.is_null() {
            return 0;
        }
        // SAFETY: MPI just accepted `tag` as a NUL-terminated string.
        tag_key(unsafe { std::ffi::CStr::from_ptr(tag) }.to_bytes())
    }

    use crate::ffi::world;

    /// Fills `Comm_create_from_group` (`key`: the string tag's).
    pub(crate) fn fill_comm_create_from_group(
        t: &Tracer,
        ev: &mut Event,
        group: MPI_Group,
        key: i32,
        newcomm: MPI_Comm,
    ) {
        fill_create(t, ev, world(), newcomm, |c| {
            c.members = group_members(group);
            c.key = Some(key);
        })
    }

    /// Fills `Intercomm_create_from_groups` (`key`: the string tag's).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill_intercomm_create_from_groups(
        t: &Tracer,
        ev: &mut Event,
        local_group: MPI_Group,
        local_leader: c_int,
        remote_group: MPI_Group,
        remote_leader: c_int,
        key: i32,
        newintercomm: MPI_Comm,
    ) {
        fill_create(t, ev, world(), newintercomm, |c| {
            c.dims = vec![local_leader, remote_leader];
            c.key = Some(key);
            c.sources = group_members(local_group);
            c.members = group_members(remote_group);
        })
    }

    entry!(MPI_Comm_create_from_group, PMPI_Comm_create_from_group, (group: MPI_Group, stringtag: *const c_char, info: MPI_Info, errhandler: MPI_Errhandler, newcomm: *mut MPI_Comm), |s| {
        let rc = PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm);
        s.record(Op::CommCreateFromGroup, rc, |t, ev| {
            fill_comm_create_from_group(t, ev, group, c_tag_key(stringtag), created(rc, newcomm))
        });
        rc
    });

    entry!(MPI_Intercomm_create_from_groups, PMPI_Intercomm_create_from_groups, (local_group: MPI_Group, local_leader: c_int, remote_group: MPI_Group, remote_leader: c_int, stringtag: *const c_char, info: MPI_Info, errhandler: MPI_Errhandler, newintercomm: *mut MPI_Comm), |s| {
        let rc = PMPI_Intercomm_create_from_groups(local_group, local_leader, remote_group, remote_leader, stringtag, info, errhandler, newintercomm);
        s.record(Op::IntercommCreateFromGroups, rc, |t, ev| {
            fill_intercomm_create_from_groups(t, ev, local_group, local_leader, remote_group, remote_leader, c_tag_key(stringtag), created(rc, newintercomm))
        });
        rc
    });
}

/// `MPI_Comm_idup_with_info`, where the MPI has it (MPI 4: MPICH 4, not
/// Open MPI 4.1): `MPI_Comm_idup`'s event (the info is not recorded).
#[cfg(rankscale_mpi4)]
mod comm_idup_with_info {
    use super::*;

    entry!(MPI_Comm_idup_with_info, PMPI_Comm_idup_with_info, (comm_h: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request), |s| {
        let rc = PMPI_Comm_idup_with_info(comm_h, info, newcomm, request);
        s.record(Op::CommIdupWithInfo, rc, |t, ev| {
            fill_comm_idup(t, ev, comm_h, newcomm as usize, false, (rc == 0).then(|| *request))
        });
        rc
    });
}

entry!(MPI_Comm_dup_with_info, PMPI_Comm_dup_with_info, (comm_h: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Comm_dup_with_info(comm_h, info, newcomm);
    s.record(Op::CommDupWithInfo, rc, |t, ev| fill_comm_dup(t, ev, comm_h, created(rc, newcomm)));
    rc
});

entry!(MPI_Comm_split, PMPI_Comm_split, (comm_h: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Comm_split(comm_h, color, key, newcomm);
    s.record(Op::CommSplit, rc, |t, ev| fill_comm_split(t, ev, comm_h, color, key, created(rc, newcomm)));
    rc
});

entry!(MPI_Comm_split_type, PMPI_Comm_split_type, (comm_h: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Comm_split_type(comm_h, split_type, key, info, newcomm);
    s.record(Op::CommSplitType, rc, |t, ev| fill_comm_split_type(t, ev, comm_h, split_type, key, created(rc, newcomm)));
    rc
});

entry!(MPI_Comm_create, PMPI_Comm_create, (comm_h: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Comm_create(comm_h, group, newcomm);
    s.record(Op::CommCreate, rc, |t, ev| fill_comm_create(t, ev, comm_h, group, created(rc, newcomm)));
    rc
});

/// Fills Comm_create_group: the group's members and the tag.
pub(crate) fn fill_comm_create_group(
    t: &Tracer,
    ev: &mut Event,
    parent: MPI_Comm,
    group: MPI_Group,
    tag: c_int,
    newcomm: MPI_Comm,
) {
    fill_create(t, ev, parent, newcomm, |c| {
        c.members = group_members(group);
        c.key = Some(tag);
    })
}

entry!(MPI_Comm_create_group, PMPI_Comm_create_group, (comm_h: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Comm_create_group(comm_h, group, tag, newcomm);
    s.record(Op::CommCreateGroup, rc, |t, ev| fill_comm_create_group(t, ev, comm_h, group, tag, created(rc, newcomm)));
    rc
});

entry!(MPI_Intercomm_create, PMPI_Intercomm_create, (local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int, newintercomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm);
    s.record(Op::IntercommCreate, rc, |t, ev| {
        fill_intercomm_create(t, ev, local_comm, local_leader, peer_comm, remote_leader, tag, created(rc, newintercomm))
    });
    rc
});

entry!(MPI_Intercomm_merge, PMPI_Intercomm_merge, (intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Intercomm_merge(intercomm, high, newintracomm);
    s.record(Op::IntercommMerge, rc, |t, ev| fill_intercomm_merge(t, ev, intercomm, high, created(rc, newintracomm)));
    rc
});

entry!(MPI_Comm_free, PMPI_Comm_free, (comm_h: *mut MPI_Comm), |s| {
    let before = comm_free_before(s.tracer(), *comm_h);
    // Attribute delete functions run inside: their MPI calls are the
    // application's.
    let rc = tracer::with_callbacks(|| PMPI_Comm_free(comm_h));
    s.record(Op::CommFree, rc, |t, ev| fill_comm_free(t, ev, rc, before));
    rc
});

entry!(MPI_Cart_create, PMPI_Cart_create, (comm_h: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Cart_create(comm_h, ndims, dims, periods, reorder, newcomm);
    s.record(Op::CartCreate, rc, |t, ev| fill_cart_create(t, ev, comm_h, ndims, dims, periods, reorder, created(rc, newcomm)));
    rc
});

entry!(MPI_Cart_sub, PMPI_Cart_sub, (comm_h: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm), |s| {
    let ndims = cartdim(comm_h);
    let rc = PMPI_Cart_sub(comm_h, remain_dims, newcomm);
    s.record(Op::CartSub, rc, |t, ev| fill_cart_sub(t, ev, comm_h, ndims, remain_dims, created(rc, newcomm)));
    rc
});

entry!(MPI_Graph_create, PMPI_Graph_create, (comm_h: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Graph_create(comm_h, nnodes, index, edges, reorder, newcomm);
    s.record(Op::GraphCreate, rc, |t, ev| fill_graph_create(t, ev, comm_h, nnodes, index, edges, reorder, created(rc, newcomm)));
    rc
});

entry!(MPI_Dist_graph_create, PMPI_Dist_graph_create, (comm_h: MPI_Comm, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights: *const c_int, info: MPI_Info, reorder: c_int, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Dist_graph_create(comm_h, n, sources, degrees, destinations, weights, info, reorder, newcomm);
    s.record(Op::DistGraphCreate, rc, |t, ev| fill_dist_graph_create(t, ev, comm_h, n, sources, degrees, destinations, reorder, created(rc, newcomm)));
    rc
});

entry!(MPI_Dist_graph_create_adjacent, PMPI_Dist_graph_create_adjacent, (comm_h: MPI_Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, info: MPI_Info, reorder: c_int, newcomm: *mut MPI_Comm), |s| {
    let rc = PMPI_Dist_graph_create_adjacent(comm_h, indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder, newcomm);
    s.record(Op::DistGraphCreateAdjacent, rc, |t, ev| fill_dist_graph_create_adjacent(t, ev, comm_h, indegree, sources, outdegree, destinations, reorder, created(rc, newcomm)));
    rc
});
