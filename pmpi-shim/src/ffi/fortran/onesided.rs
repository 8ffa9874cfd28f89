//! Fortran entry points of the one-sided calls (issue 36). They share the
//! C wrappers' fill functions ([`crate::ffi::onesided`]); handles are
//! converted with `MPI_*_f2c` and `INTEGER(KIND=MPI_ADDRESS_KIND)`
//! arguments read as 64-bit integers.

use super::*;
use crate::ffi::onesided::{
    TargetArgs, fill_attach, fill_lock, fill_rma, fill_sync, fill_win_free, fill_win_new,
};

/// An `INTEGER(KIND=MPI_ADDRESS_KIND)` argument.
///
/// # Safety
/// `p` must point to a 64-bit INTEGER.
unsafe fn aint(p: P) -> i64 {
    // SAFETY: guaranteed by the caller.
    unsafe { *p.cast::<i64>() }
}

/// A Fortran window handle argument (`MPI_Win_f2c`).
///
/// # Safety
/// `p` must point to an INTEGER handle.
unsafe fn f_win(p: P) -> MPI_Win {
    // SAFETY: guaranteed by the caller; MPI_Win_f2c accepts any value.
    unsafe { RSMPI_Win_f2c(int(p)) }
}

/// The target of an operation: rank, displacement, count and datatype.
///
/// # Safety
/// The pointers must be the routine's INTEGER arguments (the displacement
/// of kind `MPI_ADDRESS_KIND`).
unsafe fn target(rank: P, disp: P, count: P, dt: P) -> TargetArgs<c_int> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        TargetArgs {
            rank: int(rank),
            disp: aint(disp),
            count: int(count),
            datatype: f_dt(dt),
        }
    }
}

fortran!(
    win_create,
    "MPI_WIN_CREATE",
    ts,
    (base, size, disp_unit, info, comm, win, ierror),
    |c| {
        let (n, du, cm) = (aint(size), int(disp_unit), f_comm(comm));
        let rc = c.forward();
        let w = f_win(win);
        c.record(Op::WinCreate, rc, |t, ev| {
            fill_win_new(t, ev, cm, w, n, du, false)
        });
    }
);

macro_rules! win_allocate {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!(
            $name,
            $upper,
            plain,
            (size, disp_unit, info, comm, baseptr, win, ierror),
            |c| {
                let (n, du, cm) = (aint(size), int(disp_unit), f_comm(comm));
                let rc = c.forward();
                let w = f_win(win);
                c.record($op, rc, |t, ev| fill_win_new(t, ev, cm, w, n, du, false));
            }
        );
    };
}
win_allocate!(win_allocate, "MPI_WIN_ALLOCATE", Op::WinAllocate);
win_allocate!(
    win_allocate_shared,
    "MPI_WIN_ALLOCATE_SHARED",
    Op::WinAllocateShared
);
// Open MPI's `TYPE(C_PTR)` forms in `mpif.h` and `use mpi`: the same
// arguments, the same record.
win_allocate!(win_allocate_cptr, "MPI_WIN_ALLOCATE_CPTR", Op::WinAllocate);
win_allocate!(
    win_allocate_shared_cptr,
    "MPI_WIN_ALLOCATE_SHARED_CPTR",
    Op::WinAllocateShared
);

fortran!(
    win_create_dynamic,
    "MPI_WIN_CREATE_DYNAMIC",
    plain,
    (info, comm, win, ierror),
    |c| {
        let cm = f_comm(comm);
        let rc = c.forward();
        let w = f_win(win);
        c.record(Op::WinCreateDynamic, rc, |t, ev| {
            fill_win_new(t, ev, cm, w, 0i64, 1i64, true)
        });
    }
);

fortran!(win_free, "MPI_WIN_FREE", plain, (win, ierror), |c| {
    let key = f_win(win).key();
    let rc = c.forward();
    c.record(Op::WinFree, rc, |t, ev| fill_win_free(t, ev, key));
});

fortran!(
    win_attach,
    "MPI_WIN_ATTACH",
    ts,
    (win, base, size, ierror),
    |c| {
        let (w, b, n) = (f_win(win), c.iface.buf(base) as usize, aint(size));
        let rc = c.forward();
        c.record(Op::WinAttach, rc, |t, ev| fill_attach(t, ev, w, b, Some(n)));
    }
);

fortran!(win_detach, "MPI_WIN_DETACH", ts, (win, base, ierror), |c| {
    let (w, b) = (f_win(win), c.iface.buf(base) as usize);
    let rc = c.forward();
    c.record(Op::WinDetach, rc, |t, ev| fill_attach(t, ev, w, b, None));
});

/// `Put`, `Get` and their request forms: one origin buffer, which is the
/// origin (`send`) or the destination (`get`) of the data.
macro_rules! put_get {
    ($name:ident, $upper:literal, $op:expr, $side:ident) => {
        fortran!(
            $name,
            $upper,
            ts,
            (origin, ocount, odt, rank, disp, tcount, tdt, win, ierror),
            |c| {
                let (o, w, tg) = (
                    (int(ocount), f_dt(odt)),
                    f_win(win),
                    target(rank, disp, tcount, tdt),
                );
                let rc = c.forward();
                c.record($op, rc, |t, ev| put_get!(@fill $side, t, ev, w, o, tg, None));
            }
        );
    };
    ($name:ident, $upper:literal, $op:expr, $side:ident, request) => {
        fortran!(
            $name,
            $upper,
            ts,
            (origin, ocount, odt, rank, disp, tcount, tdt, win, request, ierror),
            |c| {
                let (o, w, tg) = (
                    (int(ocount), f_dt(odt)),
                    f_win(win),
                    target(rank, disp, tcount, tdt),
                );
                let rc = c.forward();
                let req = (rc == 0).then(|| f_req(request));
                c.record($op, rc, |t, ev| put_get!(@fill $side, t, ev, w, o, tg, req));
            }
        );
    };
    (@fill send, $t:ident, $ev:ident, $w:ident, $o:ident, $tg:ident, $req:expr) => {
        fill_rma($t, $ev, $w, Some($o), None, $tg, None, $req)
    };
    (@fill recv, $t:ident, $ev:ident, $w:ident, $o:ident, $tg:ident, $req:expr) => {
        fill_rma($t, $ev, $w, None, Some($o), $tg, None, $req)
    };
}
put_get!(put, "MPI_PUT", Op::Put, send);
put_get!(get, "MPI_GET", Op::Get, recv);
put_get!(rput, "MPI_RPUT", Op::Rput, send, request);
put_get!(rget, "MPI_RGET", Op::Rget, recv, request);

fortran!(
    accumulate,
    "MPI_ACCUMULATE",
    ts,
    (
        origin, ocount, odt, rank, disp, tcount, tdt, op, win, ierror
    ),
    |c| {
        let (o, w, tg, rop) = (
            (int(ocount), f_dt(odt)),
            f_win(win),
            target(rank, disp, tcount, tdt),
            f_op(op),
        );
        let rc = c.forward();
        c.record(Op::Accumulate, rc, |t, ev| {
            fill_rma(t, ev, w, Some(o), None, tg, Some(rop), None)
        });
    }
);

fortran!(
    raccumulate,
    "MPI_RACCUMULATE",
    ts,
    (
        origin, ocount, odt, rank, disp, tcount, tdt, op, win, request, ierror
    ),
    |c| {
        let (o, w, tg, rop) = (
            (int(ocount), f_dt(odt)),
            f_win(win),
            target(rank, disp, tcount, tdt),
            f_op(op),
        );
        let rc = c.forward();
        let req = (rc == 0).then(|| f_req(request));
        c.record(Op::Raccumulate, rc, |t, ev| {
            fill_rma(t, ev, w, Some(o), None, tg, Some(rop), req)
        });
    }
);

fortran!(
    get_accumulate,
    "MPI_GET_ACCUMULATE",
    ts,
    (
        origin, ocount, odt, result, rcount, rdt, rank, disp, tcount, tdt, op, win, ierror
    ),
    |c| {
        let (o, r, w, tg, rop) = (
            (int(ocount), f_dt(odt)),
            (int(rcount), f_dt(rdt)),
            f_win(win),
            target(rank, disp, tcount, tdt),
            f_op(op),
        );
        let rc = c.forward();
        c.record(Op::GetAccumulate, rc, |t, ev| {
            fill_rma(t, ev, w, Some(o), Some(r), tg, Some(rop), None)
        });
    }
);

fortran!(
    rget_accumulate,
    "MPI_RGET_ACCUMULATE",
    ts,
    (
        origin, ocount, odt, result, rcount, rdt, rank, disp, tcount, tdt, op, win, request, ierror
    ),
    |c| {
        let (o, r, w, tg, rop) = (
            (int(ocount), f_dt(odt)),
            (int(rcount), f_dt(rdt)),
            f_win(win),
            target(rank, disp, tcount, tdt),
            f_op(op),
        );
        let rc = c.forward();
        let req = (rc == 0).then(|| f_req(request));
        c.record(Op::RgetAccumulate, rc, |t, ev| {
            fill_rma(t, ev, w, Some(o), Some(r), tg, Some(rop), req)
        });
    }
);

fortran!(
    fetch_and_op,
    "MPI_FETCH_AND_OP",
    ts,
    (origin, result, dt, rank, disp, op, win, ierror),
    |c| {
        let (d, w, rk, dp, rop) = (f_dt(dt), f_win(win), int(rank), aint(disp), f_op(op));
        let rc = c.forward();
        c.record(Op::FetchAndOp, rc, |t, ev| {
            let tg = TargetArgs {
                rank: rk,
                disp: dp,
                count: 1,
                datatype: d,
            };
            fill_rma(t, ev, w, Some((1, d)), Some((1, d)), tg, Some(rop), None)
        });
    }
);

fortran!(
    compare_and_swap,
    "MPI_COMPARE_AND_SWAP",
    ts,
    (origin, compare, result, dt, rank, disp, win, ierror),
    |c| {
        let (d, w, rk, dp) = (f_dt(dt), f_win(win), int(rank), aint(disp));
        let rc = c.forward();
        c.record(Op::CompareAndSwap, rc, |t, ev| {
            let tg = TargetArgs {
                rank: rk,
                disp: dp,
                count: 1,
                datatype: d,
            };
            fill_rma(t, ev, w, Some((1, d)), Some((1, d)), tg, None, None)
        });
    }
);

/// Synchronisation with an assert: `Win_fence`, `Win_lock_all`.
macro_rules! sync_assert {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, plain, (assert, win, ierror), |c| {
            let (a, w) = (int(assert), f_win(win));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_sync(t, ev, w, a, None));
        });
    };
}
sync_assert!(win_fence, "MPI_WIN_FENCE", Op::WinFence);
sync_assert!(win_lock_all, "MPI_WIN_LOCK_ALL", Op::WinLockAll);

/// `Win_post` and `Win_start`: a group and an assert.
macro_rules! sync_group {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, plain, (group, assert, win, ierror), |c| {
            let (g, a, w) = (f_group(group), int(assert), f_win(win));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_sync(t, ev, w, a, Some(g)));
        });
    };
}
sync_group!(win_post, "MPI_WIN_POST", Op::WinPost);
sync_group!(win_start, "MPI_WIN_START", Op::WinStart);

/// Calls on the whole window with nothing else to record.
macro_rules! sync_plain {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, plain, (win, ierror), |c| {
            let w = f_win(win);
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_sync(t, ev, w, 0, None));
        });
    };
}
sync_plain!(win_complete, "MPI_WIN_COMPLETE", Op::WinComplete);
sync_plain!(win_wait, "MPI_WIN_WAIT", Op::WinWait);
sync_plain!(win_unlock_all, "MPI_WIN_UNLOCK_ALL", Op::WinUnlockAll);
sync_plain!(win_flush_all, "MPI_WIN_FLUSH_ALL", Op::WinFlushAll);
sync_plain!(
    win_flush_local_all,
    "MPI_WIN_FLUSH_LOCAL_ALL",
    Op::WinFlushLocalAll
);
sync_plain!(win_sync, "MPI_WIN_SYNC", Op::WinSync);

fortran!(win_test, "MPI_WIN_TEST", plain, (win, flag, ierror), |c| {
    let w = f_win(win);
    let rc = c.forward();
    let done = rc == 0 && int(flag) != 0;
    c.record(Op::WinTest, rc, |t, ev| {
        fill_sync(t, ev, w, 0, None);
        ev.flag = Some(done);
    });
});

fortran!(
    win_lock,
    "MPI_WIN_LOCK",
    plain,
    (lock_type, rank, assert, win, ierror),
    |c| {
        let (k, r, a, w) = (int(lock_type), int(rank), int(assert), f_win(win));
        let rc = c.forward();
        c.record(Op::WinLock, rc, |t, ev| {
            fill_lock(t, ev, w, r, Some((k, a)))
        });
    }
);

/// Passive-target calls on one target without a lock type.
macro_rules! lock_target {
    ($name:ident, $upper:literal, $op:expr) => {
        fortran!($name, $upper, plain, (rank, win, ierror), |c| {
            let (r, w) = (int(rank), f_win(win));
            let rc = c.forward();
            c.record($op, rc, |t, ev| fill_lock(t, ev, w, r, None));
        });
    };
}
lock_target!(win_unlock, "MPI_WIN_UNLOCK", Op::WinUnlock);
lock_target!(win_flush, "MPI_WIN_FLUSH", Op::WinFlush);
lock_target!(win_flush_local, "MPI_WIN_FLUSH_LOCAL", Op::WinFlushLocal);
