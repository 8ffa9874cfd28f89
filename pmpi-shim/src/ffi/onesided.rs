//! One-sided communication (issue 36): windows, their operations and their
//! synchronisation, as C entry points and as the fill functions the Fortran
//! entry points share.
//!
//! A window is registered like a communicator, in the same id space: its
//! constructor is recorded as a constructor over its communicator's group
//! ([`trace::Event::create`]), every later call names it in
//! [`trace::Event::comm`], and target ranks (ranks in the window's group)
//! become peers with world ranks, as point-to-point peers do. Each call
//! records its [`Rma`] detail.
//!
//! What the record leaves out:
//! - a dynamic window's target displacements are addresses in the target's
//!   memory, which differ from run to run and mean nothing to replay; they
//!   are recorded as 0 (the start of the target's attached memory);
//! - `assert` arguments are recorded in the trace's bits
//!   ([`Rma::MODES`]), not the library's.

// The entry points have the MPI bindings' names and argument lists.
#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use mpi_helpers::{LOCK_EXCLUSIVE, assert_to_trace};
use mpi_sys::*;
use trace::{Event, Op, Peer, Rma};

use super::{
    Count, Key, bind_made_over, consts, dsize, dtype, handle_info, ranks_in, redop, take_group_map,
    xfer,
};
use crate::return_address;
use crate::tracer::{CommInfo, Kind, Scope, Tracer};

/// An `MPI_Aint` in the event model's 64 bits (`ptrdiff_t` in Open MPI,
/// `long` in MPICH: the same width on the platforms the shim builds for).
#[allow(clippy::unnecessary_cast)]
fn wide(a: MPI_Aint) -> i64 {
    a as i64
}

/// The tracer's view of a window handle: registered at its constructor,
/// or on first use for a window made before tracing started (from its
/// group).
pub(crate) fn win(t: &Tracer, w: MPI_Win) -> Arc<CommInfo> {
    handle_info(t, w.key(), Kind::Window, || win_group(w))
}

/// A window's group as world ranks in rank order, and this process's rank
/// in it.
fn win_group(w: MPI_Win) -> (Box<[i32]>, i32) {
    let mut me: c_int = -1;
    // SAFETY: `w` is a window the application passed to an MPI call that
    // accepted it; the group MPI returns is freed by `take_group_map`.
    let group = unsafe {
        let mut group = RSMPI_GROUP_NULL;
        PMPI_Win_get_group(w, &mut group);
        PMPI_Group_rank(group, &mut me);
        group
    };
    (take_group_map(group), me)
}

/// Fills a window constructor (`Win_create`, `Win_allocate`,
/// `Win_allocate_shared`, `Win_create_dynamic`): the communicator, the new
/// window's id and size (`create`), and the memory this rank exposes.
/// `win` is the window MPI wrote.
pub(crate) fn fill_win_new(
    t: &Tracer,
    ev: &mut Event,
    comm_h: MPI_Comm,
    w: MPI_Win,
    size: impl Count,
    disp_unit: impl Count,
    dynamic: bool,
) {
    let kind = if dynamic {
        Kind::DynamicWindow
    } else {
        Kind::Window
    };
    bind_made_over(t, ev, comm_h, w.key(), kind);
    ev.rma = Some(Box::new(Rma::Window {
        size: size.wide(),
        disp_unit: i32::try_from(disp_unit.wide()).unwrap_or(i32::MAX),
    }));
}

/// Fills `Win_free` (the window's key read before the call, which nulls
/// the handle) and forgets the window.
pub(crate) fn fill_win_free(t: &Tracer, ev: &mut Event, key: usize) {
    if let Some(info) = t.comm(key) {
        ev.comm = info.id;
    }
    ev.rma = Some(Box::new(Rma::Sync {
        assert: 0,
        group: Vec::new(),
    }));
    t.remove_comm(key);
}

/// Fills `Win_attach` and `Win_detach`: the bytes attached (for a detach,
/// those its attach recorded).
pub(crate) fn fill_attach(t: &Tracer, ev: &mut Event, w: MPI_Win, base: usize, size: Option<i64>) {
    ev.comm = win(t, w).id;
    let size = match size {
        Some(n) => {
            t.attach(w.key(), base, n);
            n
        }
        None => t.detach(w.key(), base),
    };
    ev.rma = Some(Box::new(Rma::Window { size, disp_unit: 1 }));
}

/// The target side of a one-sided communication call.
pub(crate) struct TargetArgs<C> {
    /// The target rank, in the window's group.
    pub rank: c_int,
    /// The target displacement.
    pub disp: i64,
    /// The target count.
    pub count: C,
    /// The target datatype.
    pub datatype: MPI_Datatype,
}

/// Fills a one-sided communication call: the origin buffer (`send`, for
/// puts and accumulates), the result buffer (`recv`, for gets and the
/// fetching accumulates), the target, the reduction and the request of
/// the `R` forms (`request` is what MPI wrote).
pub(crate) fn fill_rma<C: Count>(
    t: &Tracer,
    ev: &mut Event,
    w: MPI_Win,
    origin: Option<(C, MPI_Datatype)>,
    result: Option<(C, MPI_Datatype)>,
    target: TargetArgs<C>,
    op: Option<MPI_Op>,
    request: Option<MPI_Request>,
) {
    let info = win(t, w);
    ev.comm = info.id;
    if let Some((n, dt)) = origin {
        ev.send = Some(xfer(&info, target.rank, 0, n, dt));
    }
    if let Some((n, dt)) = result {
        ev.recv = Some(xfer(&info, target.rank, 0, n, dt));
    }
    ev.redop = op.map(redop);
    ev.rma = Some(Box::new(Rma::Target {
        disp: if info.kind == Kind::DynamicWindow {
            0
        } else {
            target.disp
        },
        count: target.count.wide(),
        dsize: dsize(target.datatype),
        dtype: dtype(target.datatype),
    }));
    if let Some(r) = request.filter(|r| r.key() != consts().request_null) {
        ev.req = Some(t.add_req(r.key(), false, false, info));
    }
}

/// Fills a synchronisation of the whole window: the assert (library bits
/// turned into the trace's) and, for `Win_post` and `Win_start`, the group
/// as ranks in the window's group.
pub(crate) fn fill_sync(
    t: &Tracer,
    ev: &mut Event,
    w: MPI_Win,
    assert: c_int,
    group: Option<MPI_Group>,
) {
    ev.comm = win(t, w).id;
    ev.rma = Some(Box::new(Rma::Sync {
        assert: assert_to_trace(assert),
        group: group.map(|g| ranks_in_window(g, w)).unwrap_or_default(),
    }));
}

/// The ranks of `group`'s members in the window's group.
fn ranks_in_window(group: MPI_Group, w: MPI_Win) -> Vec<i32> {
    // SAFETY: `w` is the window the application passed to a call MPI
    // accepted; its group goes to `ranks_in`, which frees it.
    let wg = unsafe {
        let mut g = RSMPI_GROUP_NULL;
        PMPI_Win_get_group(w, &mut g);
        g
    };
    ranks_in(group, wg)
}

/// Fills a passive-target call on one target (`Win_lock`, `Win_unlock`,
/// `Win_flush`, `Win_flush_local`): the target, and for `Win_lock` its
/// lock type and assert.
pub(crate) fn fill_lock(
    t: &Tracer,
    ev: &mut Event,
    w: MPI_Win,
    rank: c_int,
    lock: Option<(c_int, c_int)>,
) {
    let info = win(t, w);
    ev.comm = info.id;
    let c = consts();
    let peer: Peer = info.peer(rank, c.any_source, c.proc_null);
    ev.rma = Some(Box::new(Rma::Lock {
        peer,
        exclusive: lock.map(|(kind, _)| kind == LOCK_EXCLUSIVE),
        assert: lock.map_or(0, |(_, a)| assert_to_trace(a)),
    }));
}

// ------------------------------------------------------------ C entries

/// The count type of the `int` bindings (see `with_large_twin!` in
/// `ffi/mod.rs`).
type Cnt = c_int;

macro_rules! win_create {
    ($name:ident, $pmpi:ident ;) => {
        entry!($name, $pmpi, (base: *mut c_void, size: MPI_Aint, disp_unit: Cnt, info: MPI_Info, comm_h: MPI_Comm, w: *mut MPI_Win), |s| {
            let rc = $pmpi(base, size, disp_unit, info, comm_h, w);
            s.record(Op::WinCreate, rc, |t, ev| fill_win_new(t, ev, comm_h, *w, wide(size), disp_unit, false));
            rc
        });
    };
}
with_large_twin!(win_create! { MPI_Win_create, PMPI_Win_create ; });

macro_rules! win_allocate {
    ($name:ident, $pmpi:ident ; $op:expr) => {
        entry!($name, $pmpi, (size: MPI_Aint, disp_unit: Cnt, info: MPI_Info, comm_h: MPI_Comm, baseptr: *mut c_void, w: *mut MPI_Win), |s| {
            let rc = $pmpi(size, disp_unit, info, comm_h, baseptr, w);
            s.record($op, rc, |t, ev| fill_win_new(t, ev, comm_h, *w, wide(size), disp_unit, false));
            rc
        });
    };
}
with_large_twin!(win_allocate! { MPI_Win_allocate, PMPI_Win_allocate ; Op::WinAllocate });
with_large_twin!(
    win_allocate! { MPI_Win_allocate_shared, PMPI_Win_allocate_shared ; Op::WinAllocateShared }
);

entry!(MPI_Win_create_dynamic, PMPI_Win_create_dynamic, (info: MPI_Info, comm_h: MPI_Comm, w: *mut MPI_Win), |s| {
    let rc = PMPI_Win_create_dynamic(info, comm_h, w);
    s.record(Op::WinCreateDynamic, rc, |t, ev| fill_win_new(t, ev, comm_h, *w, 0i64, 1i64, true));
    rc
});

entry!(MPI_Win_free, PMPI_Win_free, (w: *mut MPI_Win), |s| {
    let key = (*w).key();
    let rc = PMPI_Win_free(w);
    s.record(Op::WinFree, rc, |t, ev| fill_win_free(t, ev, key));
    rc
});

entry!(MPI_Win_attach, PMPI_Win_attach, (w: MPI_Win, base: *mut c_void, size: MPI_Aint), |s| {
    let rc = PMPI_Win_attach(w, base, size);
    s.record(Op::WinAttach, rc, |t, ev| fill_attach(t, ev, w, base as usize, Some(wide(size))));
    rc
});

entry!(MPI_Win_detach, PMPI_Win_detach, (w: MPI_Win, base: *const c_void), |s| {
    let rc = PMPI_Win_detach(w, base);
    s.record(Op::WinDetach, rc, |t, ev| fill_attach(t, ev, w, base as usize, None));
    rc
});

/// `Put`, `Get`, `Accumulate` and their request forms: one origin buffer.
macro_rules! rma_op {
    ($name:ident, $pmpi:ident ; $op:expr, put) => {
        entry!($name, $pmpi, (origin: *const c_void, ocount: Cnt, odt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, w: MPI_Win), |s| {
            let rc = $pmpi(origin, ocount, odt, rank, disp, tcount, tdt, w);
            s.record($op, rc, |t, ev| fill_rma(t, ev, w, Some((ocount, odt)), None, TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, None, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, get) => {
        entry!($name, $pmpi, (origin: *mut c_void, ocount: Cnt, odt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, w: MPI_Win), |s| {
            let rc = $pmpi(origin, ocount, odt, rank, disp, tcount, tdt, w);
            s.record($op, rc, |t, ev| fill_rma(t, ev, w, None, Some((ocount, odt)), TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, None, None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, acc) => {
        entry!($name, $pmpi, (origin: *const c_void, ocount: Cnt, odt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, rop: MPI_Op, w: MPI_Win), |s| {
            let rc = $pmpi(origin, ocount, odt, rank, disp, tcount, tdt, rop, w);
            s.record($op, rc, |t, ev| fill_rma(t, ev, w, Some((ocount, odt)), None, TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, Some(rop), None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, rput) => {
        entry!($name, $pmpi, (origin: *const c_void, ocount: Cnt, odt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, w: MPI_Win, request: *mut MPI_Request), |s| {
            let rc = $pmpi(origin, ocount, odt, rank, disp, tcount, tdt, w, request);
            s.record($op, rc, |t, ev| fill_rma(t, ev, w, Some((ocount, odt)), None, TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, None, Some(*request)));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, rget) => {
        entry!($name, $pmpi, (origin: *mut c_void, ocount: Cnt, odt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, w: MPI_Win, request: *mut MPI_Request), |s| {
            let rc = $pmpi(origin, ocount, odt, rank, disp, tcount, tdt, w, request);
            s.record($op, rc, |t, ev| fill_rma(t, ev, w, None, Some((ocount, odt)), TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, None, Some(*request)));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; $op:expr, racc) => {
        entry!($name, $pmpi, (origin: *const c_void, ocount: Cnt, odt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, rop: MPI_Op, w: MPI_Win, request: *mut MPI_Request), |s| {
            let rc = $pmpi(origin, ocount, odt, rank, disp, tcount, tdt, rop, w, request);
            s.record($op, rc, |t, ev| fill_rma(t, ev, w, Some((ocount, odt)), None, TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, Some(rop), Some(*request)));
            rc
        });
    };
}
with_large_twin!(rma_op! { MPI_Put, PMPI_Put ; Op::Put, put });
with_large_twin!(rma_op! { MPI_Get, PMPI_Get ; Op::Get, get });
with_large_twin!(rma_op! { MPI_Accumulate, PMPI_Accumulate ; Op::Accumulate, acc });
with_large_twin!(rma_op! { MPI_Rput, PMPI_Rput ; Op::Rput, rput });
with_large_twin!(rma_op! { MPI_Rget, PMPI_Rget ; Op::Rget, rget });
with_large_twin!(rma_op! { MPI_Raccumulate, PMPI_Raccumulate ; Op::Raccumulate, racc });

/// `Get_accumulate` and `Rget_accumulate`: an origin and a result buffer.
macro_rules! get_accumulate {
    ($name:ident, $pmpi:ident ;) => {
        entry!($name, $pmpi, (origin: *const c_void, ocount: Cnt, odt: MPI_Datatype, result: *mut c_void, rcount: Cnt, rdt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, rop: MPI_Op, w: MPI_Win), |s| {
            let rc = $pmpi(origin, ocount, odt, result, rcount, rdt, rank, disp, tcount, tdt, rop, w);
            s.record(Op::GetAccumulate, rc, |t, ev| fill_rma(t, ev, w, Some((ocount, odt)), Some((rcount, rdt)), TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, Some(rop), None));
            rc
        });
    };
    ($name:ident, $pmpi:ident ; request) => {
        entry!($name, $pmpi, (origin: *const c_void, ocount: Cnt, odt: MPI_Datatype, result: *mut c_void, rcount: Cnt, rdt: MPI_Datatype, rank: c_int, disp: MPI_Aint, tcount: Cnt, tdt: MPI_Datatype, rop: MPI_Op, w: MPI_Win, request: *mut MPI_Request), |s| {
            let rc = $pmpi(origin, ocount, odt, result, rcount, rdt, rank, disp, tcount, tdt, rop, w, request);
            s.record(Op::RgetAccumulate, rc, |t, ev| fill_rma(t, ev, w, Some((ocount, odt)), Some((rcount, rdt)), TargetArgs { rank, disp: wide(disp), count: tcount, datatype: tdt }, Some(rop), Some(*request)));
            rc
        });
    };
}
with_large_twin!(get_accumulate! { MPI_Get_accumulate, PMPI_Get_accumulate ; });
with_large_twin!(get_accumulate! { MPI_Rget_accumulate, PMPI_Rget_accumulate ; request });

entry!(MPI_Fetch_and_op, PMPI_Fetch_and_op, (origin: *const c_void, result: *mut c_void, dt: MPI_Datatype, rank: c_int, disp: MPI_Aint, rop: MPI_Op, w: MPI_Win), |s| {
    let rc = PMPI_Fetch_and_op(origin, result, dt, rank, disp, rop, w);
    s.record(Op::FetchAndOp, rc, |t, ev| fill_rma(t, ev, w, Some((1, dt)), Some((1, dt)), TargetArgs { rank, disp: wide(disp), count: 1, datatype: dt }, Some(rop), None));
    rc
});

entry!(MPI_Compare_and_swap, PMPI_Compare_and_swap, (origin: *const c_void, compare: *const c_void, result: *mut c_void, dt: MPI_Datatype, rank: c_int, disp: MPI_Aint, w: MPI_Win), |s| {
    let rc = PMPI_Compare_and_swap(origin, compare, result, dt, rank, disp, w);
    s.record(Op::CompareAndSwap, rc, |t, ev| fill_rma(t, ev, w, Some((1, dt)), Some((1, dt)), TargetArgs { rank, disp: wide(disp), count: 1, datatype: dt }, None, None));
    rc
});

/// Synchronisation with an assert: `Win_fence`, `Win_lock_all`.
macro_rules! sync_assert {
    ($name:ident, $pmpi:ident, $op:expr) => {
        entry!($name, $pmpi, (assert: c_int, w: MPI_Win), |s| {
            let rc = $pmpi(assert, w);
            s.record($op, rc, |t, ev| fill_sync(t, ev, w, assert, None));
            rc
        });
    };
}
sync_assert!(MPI_Win_fence, PMPI_Win_fence, Op::WinFence);
sync_assert!(MPI_Win_lock_all, PMPI_Win_lock_all, Op::WinLockAll);

/// `Win_post` and `Win_start`: a group and an assert.
macro_rules! sync_group {
    ($name:ident, $pmpi:ident, $op:expr) => {
        entry!($name, $pmpi, (group: MPI_Group, assert: c_int, w: MPI_Win), |s| {
            let rc = $pmpi(group, assert, w);
            s.record($op, rc, |t, ev| fill_sync(t, ev, w, assert, Some(group)));
            rc
        });
    };
}
sync_group!(MPI_Win_post, PMPI_Win_post, Op::WinPost);
sync_group!(MPI_Win_start, PMPI_Win_start, Op::WinStart);

/// Calls on the whole window with nothing else to record.
macro_rules! sync_plain {
    ($name:ident, $pmpi:ident, $op:expr) => {
        entry!($name, $pmpi, (w: MPI_Win), |s| {
            let rc = $pmpi(w);
            s.record($op, rc, |t, ev| fill_sync(t, ev, w, 0, None));
            rc
        });
    };
}
sync_plain!(MPI_Win_complete, PMPI_Win_complete, Op::WinComplete);
sync_plain!(MPI_Win_wait, PMPI_Win_wait, Op::WinWait);
sync_plain!(MPI_Win_unlock_all, PMPI_Win_unlock_all, Op::WinUnlockAll);
sync_plain!(MPI_Win_flush_all, PMPI_Win_flush_all, Op::WinFlushAll);
sync_plain!(
    MPI_Win_flush_local_all,
    PMPI_Win_flush_local_all,
    Op::WinFlushLocalAll
);
sync_plain!(MPI_Win_sync, PMPI_Win_sync, Op::WinSync);

entry!(MPI_Win_test, PMPI_Win_test, (w: MPI_Win, flag: *mut c_int), |s| {
    let rc = PMPI_Win_test(w, flag);
    s.record(Op::WinTest, rc, |t, ev| {
        fill_sync(t, ev, w, 0, None);
        ev.flag = Some(*flag != 0);
    });
    rc
});

entry!(MPI_Win_lock, PMPI_Win_lock, (kind: c_int, rank: c_int, assert: c_int, w: MPI_Win), |s| {
    let rc = PMPI_Win_lock(kind, rank, assert, w);
    s.record(Op::WinLock, rc, |t, ev| fill_lock(t, ev, w, rank, Some((kind, assert))));
    rc
});

/// Passive-target calls on one target without a lock type.
macro_rules! lock_target {
    ($name:ident, $pmpi:ident, $op:expr) => {
        entry!($name, $pmpi, (rank: c_int, w: MPI_Win), |s| {
            let rc = $pmpi(rank, w);
            s.record($op, rc, |t, ev| fill_lock(t, ev, w, rank, None));
            rc
        });
    };
}
lock_target!(MPI_Win_unlock, PMPI_Win_unlock, Op::WinUnlock);
lock_target!(MPI_Win_flush, PMPI_Win_flush, Op::WinFlush);
lock_target!(MPI_Win_flush_local, PMPI_Win_flush_local, Op::WinFlushLocal);
