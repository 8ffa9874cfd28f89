//! Collectives, blocking, nonblocking and persistent, and the reductions they replay:
//! which operation and datatype stand for the application's.

use std::ffi::{c_int, c_void};

use anyhow::{Result, bail};
use mpi_helpers::{
    rs_in_place, rs_op_maxloc, rs_op_minloc, rs_type_2int, rs_type_double_int, rs_type_long_int,
    rs_type_short_int,
};
use mpi_sys::*;
use trace::{Event, Op, ReduceOp, Transfer};

use super::requests::Keep;
use super::{
    Buf, Replayer, byte_displs, check, elements, predefined, request_null, span, stand_in_note,
    total,
};
use crate::tokens::displacements;

/// How a collective event is issued: its blocking call, its nonblocking
/// `I` form, or its persistent `_init` form (whose request each traced
/// `MPI_Start` runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Issue {
    /// The blocking call (in yield mode its untraced `PMPI_I*` form).
    Blocking,
    /// The `I` form, whose request enters the table.
    Nonblocking,
    /// The MPI 4 `_init` form, whose persistent request enters the table.
    Persistent,
}

impl Issue {
    /// The mode of a collective operation.
    pub(super) fn of(op: Op) -> Issue {
        if op.is_persistent_collective() {
            Issue::Persistent
        } else if op.blocking_form() != op {
            Issue::Nonblocking
        } else {
            Issue::Blocking
        }
    }
}

/// `MPI_INFO_NULL`, the info a persistent collective is initialised with
/// (the application's info is not recorded).
#[cfg(rankscale_mpi4)]
pub(super) fn info_null() -> MPI_Info {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_INFO_NULL }
}

/// The handle of a built-in reduction operation.
pub(super) fn builtin_op(op: ReduceOp) -> Option<MPI_Op> {
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

/// The predefined (value, int) pair type of `d` bytes that MAXLOC and
/// MINLOC take.
pub(super) fn pair_type(d: i64) -> Result<MPI_Datatype> {
    let f: unsafe extern "C" fn() -> MPI_Datatype = match d {
        6 => rs_type_short_int,
        8 => rs_type_2int,
        12 => rs_type_double_int,
        16 if std::mem::size_of::<std::ffi::c_long>() == 8 => rs_type_long_int,
        _ => bail!("no MPI pair type of {d} bytes for a MAXLOC/MINLOC replay"),
    };
    // SAFETY: the C helper returns a predefined handle of mpi.h; it calls
    // no MPI function.
    Ok(unsafe { f() })
}

/// The predefined integer type of `d` bytes, which every built-in
/// reduction other than MAXLOC and MINLOC takes.
fn int_type(d: i64) -> Result<MPI_Datatype> {
    // SAFETY: reading initialised mpi-sys constants.
    let (i8t, i16t, i32t, i64t) =
        unsafe { (RSMPI_INT8_T, RSMPI_INT16_T, RSMPI_INT32_T, RSMPI_INT64_T) };
    Ok(match d {
        1 => i8t,
        2 => i16t,
        4 => i32t,
        8 => i64t,
        _ => bail!("no predefined MPI type of {d} bytes to replay a reduction on"),
    })
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

/// A global collective on its way to MPI: what the calls of its family
/// take from the event and the communicator (`c`, from this replay's
/// table), fixed before any buffer is made.
#[derive(Clone, Copy)]
struct Coll<'e> {
    e: &'e Event,
    c: MPI_Comm,
    /// The ranks a gathering or scattering buffer holds a block for
    /// ([`group_size`]).
    np: usize,
    root: c_int,
    /// The value of `MPI_IN_PLACE`.
    in_place: *mut c_void,
    send: Transfer,
    recv: Transfer,
    /// The blocking form of the operation, which names its family.
    base: Op,
}

impl Coll<'_> {
    /// The send and receive buffer arguments of the call: `MPI_IN_PLACE`
    /// replaces the receive buffer of an in-place scatter and the send
    /// buffer of every other in-place call.
    fn places(&self, scatter: bool, sb: &[u8], rb: &mut [u8]) -> (*const c_void, *mut c_void) {
        let in_place = self.e.in_place;
        let sp = if in_place && !scatter {
            self.in_place.cast_const()
        } else {
            sb.as_ptr().cast()
        };
        let rp = if in_place && scatter {
            self.in_place
        } else {
            rb.as_mut_ptr().cast()
        };
        (sp, rp)
    }
}

/// A collective (global or neighbourhood) from its issue to its settling
/// ([`Replayer::settle_collective`]): how it is issued, the request MPI
/// gives it, and the memory MPI may use until it is complete.
pub(super) struct InFlight {
    pub(super) mode: Issue,
    pub(super) req: MPI_Request,
    /// Every buffer passed to the call, held here or in `keep` with the
    /// arrays (a moved `Vec` keeps its heap block in place) until the
    /// blocking call returns, the untraced request of yield mode
    /// completes, or the traced request enters the request table with
    /// them.
    pub(super) bufs: Vec<Buf>,
    pub(super) keep: Keep,
}

impl InFlight {
    /// Before the call of `op` is issued: no request, nothing held yet.
    pub(super) fn new(op: Op) -> InFlight {
        InFlight {
            mode: Issue::of(op),
            req: request_null(),
            bufs: Vec::new(),
            keep: Keep::default(),
        }
    }
}

/// The ranks a collective on `c` has a block for in its buffers: its
/// size, or an inter-communicator's remote size (its buffers hold a block
/// per rank of the remote group).
fn group_size(c: MPI_Comm) -> Result<usize> {
    let (mut size, mut inter): (c_int, c_int) = (0, 0);
    // SAFETY: `c` is a live communicator of this replay; the call writes
    // its int out-parameter.
    let rc = unsafe { PMPI_Comm_test_inter(c, &mut inter) };
    check(rc, "MPI_Comm_test_inter")?;
    let rc = if inter != 0 {
        // SAFETY: as above.
        unsafe { PMPI_Comm_remote_size(c, &mut size) }
    } else {
        // SAFETY: as above.
        unsafe { PMPI_Comm_size(c, &mut size) }
    };
    check(rc, "MPI_Comm_size")?;
    Ok(usize::try_from(size).unwrap_or(0))
}

impl Replayer<'_> {
    /// The operation and datatype to reduce `t` with: the application's
    /// predefined operation on its predefined type when the trace names
    /// both; otherwise a predefined type of the same size the operation
    /// accepts, or, for a user-defined operation or a type no built-in
    /// operation takes, a stand-in operation (over the application's
    /// predefined type, or bytes of the same size).
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
        } else if t.dtype == trace::Datatype::DERIVED {
            stand_in_note("a reduction over a derived datatype", dsize);
        }
        Ok(match (op, builtin_op(op)) {
            (ReduceOp::Maxloc | ReduceOp::Minloc, Some(h)) => (h, pair_type(dsize)?),
            (_, Some(h)) => (h, int_type(dsize)?),
            (_, None) => {
                let op = match self.user_op {
                    Some(op) => op,
                    None => {
                        // SAFETY: reading an initialised mpi-sys constant.
                        let mut op = unsafe { RSMPI_SUM };
                        // SAFETY: `keep_op` has the signature of an
                        // MPI_User_function and touches nothing; `op` is a
                        // valid out-parameter.
                        let rc = unsafe { PMPI_Op_create(Some(keep_op), 1, &mut op) };
                        check(rc, "MPI_Op_create")?;
                        self.user_op = Some(op);
                        op
                    }
                };
                // The stand-in operation takes any type: the application's
                // where the trace names a predefined one (its raw log then
                // says `int` as the application's did), else one of its
                // size, derived where the application's was (its raw log
                // then says `derived`).
                let ty = match predefined(t) {
                    Some(ty) => ty,
                    None => self.dtype_as(dsize, t.dtype == trace::Datatype::DERIVED)?,
                };
                (op, ty)
            }
        })
    }

    /// Blocking, nonblocking and persistent collectives: the call of the
    /// event's family is issued, then settled. Returns the bytes sent.
    pub(super) fn collective(&mut self, e: &Event) -> Result<f64> {
        let c = self.comm(e.comm)?;
        let np = group_size(c)?;
        let zero = Transfer::collective(0, 1);
        let k = Coll {
            e,
            c,
            np,
            root: e.root.unwrap_or(0),
            // SAFETY: reading the value of MPI_IN_PLACE.
            in_place: unsafe { rs_in_place() },
            send: e.send.unwrap_or(zero),
            recv: e.recv.unwrap_or(zero),
            base: e.op.blocking_form(),
        };
        let mut f = InFlight::new(e.op);
        let (rc, sent) = match k.base {
            Op::Barrier => self.barrier(&k, &mut f)?,
            Op::Bcast => self.bcast(&k, &mut f)?,
            Op::Reduce | Op::Allreduce | Op::Scan | Op::Exscan => self.reduce(&k, &mut f)?,
            Op::Gather | Op::Scatter | Op::Allgather | Op::Alltoall => {
                self.block_per_rank(&k, &mut f)?
            }
            Op::Gatherv | Op::Scatterv | Op::Allgatherv | Op::Alltoallv => {
                self.counted_blocks(&k, &mut f)?
            }
            Op::Alltoallw => self.alltoallw(&k, &mut f)?,
            Op::ReduceScatter | Op::ReduceScatterBlock => self.reduce_scatter(&k, &mut f)?,
            op => bail!("{} is not replayed yet", op.name()),
        };
        check(rc, e.op.name())?;
        self.settle_collective(e, f)?;
        Ok(sent)
    }

    /// `Barrier`, which moves no data. Returns the MPI return code and
    /// the bytes sent (none), as every family's issue does.
    fn barrier(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let c = k.c;
        // SAFETY: no buffers; `f.req` is a valid out-parameter.
        let rc = unsafe {
            issue!(
                f.mode, self.yield_colls;
                MPI_Barrier(c),
                MPI_Ibarrier(c, &mut f.req),
                PMPI_Ibarrier(c, &mut f.req),
                MPI_Barrier_init(c, info_null(), &mut f.req)
            )
        };
        Ok((rc, 0.0))
    }

    /// `Bcast`: one buffer of the recorded count, the root's sent to all.
    /// Returns the MPI return code and the bytes sent.
    fn bcast(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Coll { c, root, send, .. } = *k;
        let (n, ty, mut b) = self.side(&send)?;
        let sent = elements(n, send.dsize) as f64;
        let p = b.as_mut_ptr().cast();
        f.bufs.push(b);
        // SAFETY: `p` points at `n` elements of `ty`, held by `f.bufs`;
        // `root` is a rank of `c` (the trace check made sure).
        let rc = unsafe {
            issue!(
                f.mode, self.yield_colls;
                MPI_Bcast(p, n, ty, root, c),
                MPI_Ibcast(p, n, ty, root, c, &mut f.req),
                PMPI_Ibcast(p, n, ty, root, c, &mut f.req),
                MPI_Bcast_init(p, n, ty, root, c, info_null(), &mut f.req)
            )
        };
        Ok((rc, sent))
    }

    /// `Reduce`, `Allreduce`, `Scan` and `Exscan`: a send and a receive
    /// buffer of the recorded count, reduced with the operation and type
    /// of [`Replayer::reduction`]. Returns the MPI return code and the
    /// bytes sent.
    fn reduce(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Coll {
            e,
            c,
            root,
            send,
            base,
            ..
        } = *k;
        let (op, ty) = self.reduction(e.redop, &send)?;
        let n = self.count(send.count);
        let bytes = elements(n, span(ty, send.dsize));
        let sb = self.buf(bytes);
        let mut rb = self.buf(bytes);
        let sent = elements(n, send.dsize) as f64;
        let (sp, rp) = k.places(false, &sb, &mut rb);
        f.bufs.push(sb);
        f.bufs.push(rb);
        // `op` is a built-in operation or this replay's own.
        let rc = match base {
            // SAFETY: `sp` (unless in place) and `rp` hold `n` elements of
            // `ty` in `f.bufs`; `root` is a rank of `c` (the trace check
            // made sure).
            Op::Reduce => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Reduce(sp, rp, n, ty, op, root, c),
                    MPI_Ireduce(sp, rp, n, ty, op, root, c, &mut f.req),
                    PMPI_Ireduce(sp, rp, n, ty, op, root, c, &mut f.req),
                    MPI_Reduce_init(sp, rp, n, ty, op, root, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` (unless in place) and `rp` hold `n` elements of
            // `ty` in `f.bufs`.
            Op::Allreduce => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Allreduce(sp, rp, n, ty, op, c),
                    MPI_Iallreduce(sp, rp, n, ty, op, c, &mut f.req),
                    PMPI_Iallreduce(sp, rp, n, ty, op, c, &mut f.req),
                    MPI_Allreduce_init(sp, rp, n, ty, op, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` (unless in place) and `rp` hold `n` elements of
            // `ty` in `f.bufs`.
            Op::Scan => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Scan(sp, rp, n, ty, op, c),
                    MPI_Iscan(sp, rp, n, ty, op, c, &mut f.req),
                    PMPI_Iscan(sp, rp, n, ty, op, c, &mut f.req),
                    MPI_Scan_init(sp, rp, n, ty, op, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` (unless in place) and `rp` hold `n` elements of
            // `ty` in `f.bufs`.
            _ => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Exscan(sp, rp, n, ty, op, c),
                    MPI_Iexscan(sp, rp, n, ty, op, c, &mut f.req),
                    PMPI_Iexscan(sp, rp, n, ty, op, c, &mut f.req),
                    MPI_Exscan_init(sp, rp, n, ty, op, c, info_null(), &mut f.req)
                )
            },
        };
        Ok((rc, sent))
    }

    /// `Gather`, `Scatter`, `Allgather` and `Alltoall`: one block of the
    /// recorded count per rank on the side that gathers or scatters (both
    /// for `Alltoall`), one block on the other. Returns the MPI return
    /// code and the bytes sent.
    fn block_per_rank(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Coll {
            c,
            np,
            root,
            send,
            recv,
            base,
            ..
        } = *k;
        let (sn, sty, sb) = self.side(&send)?;
        let (rn, rty, _) = self.side(&recv)?;
        let (s_one, r_one) = (
            elements(sn, span(sty, send.dsize)),
            elements(rn, span(rty, recv.dsize)),
        );
        // How many blocks of one rank's count each side holds.
        let (s_fan, r_fan) = match base {
            Op::Scatter => (np, 1),
            Op::Alltoall => (np, np),
            _ => (1, np),
        };
        let (s_all, r_all) = (s_one * s_fan, r_one * r_fan);
        let sb = if base == Op::Scatter || base == Op::Alltoall {
            self.buf(s_all)
        } else {
            sb
        };
        let mut rb = self.buf(r_all.max(r_one));
        let sent = (elements(sn, send.dsize) * s_fan) as f64;
        let (sp, rp) = k.places(base == Op::Scatter, &sb, &mut rb);
        f.bufs.push(sb);
        f.bufs.push(rb);
        // `sp` and `rp` (either may be MPI_IN_PLACE) point into `sb` and
        // `rb`, held by `f.bufs`, and a rooted call's `root` is a rank of
        // `c` (the trace check made sure).
        let rc = match base {
            // SAFETY: `sp` holds `sn` elements of `sty`, `rp` room for `np`
            // times `rn` elements of `rty`.
            Op::Gather => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Gather(sp, sn, sty, rp, rn, rty, root, c),
                    MPI_Igather(sp, sn, sty, rp, rn, rty, root, c, &mut f.req),
                    PMPI_Igather(sp, sn, sty, rp, rn, rty, root, c, &mut f.req),
                    MPI_Gather_init(sp, sn, sty, rp, rn, rty, root, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` holds `np` times `sn` elements of `sty`, `rp`
            // room for `rn` elements of `rty`.
            Op::Scatter => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Scatter(sp, sn, sty, rp, rn, rty, root, c),
                    MPI_Iscatter(sp, sn, sty, rp, rn, rty, root, c, &mut f.req),
                    PMPI_Iscatter(sp, sn, sty, rp, rn, rty, root, c, &mut f.req),
                    MPI_Scatter_init(sp, sn, sty, rp, rn, rty, root, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` holds `sn` elements of `sty`, `rp` room for `np`
            // times `rn` elements of `rty`.
            Op::Allgather => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Allgather(sp, sn, sty, rp, rn, rty, c),
                    MPI_Iallgather(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    PMPI_Iallgather(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    MPI_Allgather_init(sp, sn, sty, rp, rn, rty, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` holds `np` times `sn` elements of `sty`, `rp`
            // room for `np` times `rn` elements of `rty`.
            _ => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Alltoall(sp, sn, sty, rp, rn, rty, c),
                    MPI_Ialltoall(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    PMPI_Ialltoall(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    MPI_Alltoall_init(sp, sn, sty, rp, rn, rty, c, info_null(), &mut f.req)
                )
            },
        };
        Ok((rc, sent))
    }

    /// The per-rank element counts of a v collective's send and receive
    /// sides: the recorded lists, or for a side without a list (the
    /// root's single block, say) its one count (`sn`, `rn`) for every rank.
    fn per_rank_counts(&self, k: &Coll, sn: c_int, rn: c_int) -> (Vec<c_int>, Vec<c_int>) {
        let (e, np) = (k.e, k.np);
        let scounts = if e.send_counts.is_empty() {
            vec![sn; np]
        } else {
            self.counts(&e.send_counts)
        };
        let rcounts = if e.recv_counts.is_empty() {
            vec![rn; np]
        } else {
            self.counts(&e.recv_counts)
        };
        (scounts, rcounts)
    }

    /// `Gatherv`, `Scatterv`, `Allgatherv` and `Alltoallv`: blocks of the
    /// recorded per-rank counts ([`Replayer::per_rank_counts`]) one after
    /// the other. Returns the MPI return code and the bytes sent.
    fn counted_blocks(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Coll {
            c,
            root,
            send,
            recv,
            base,
            ..
        } = *k;
        let (sn, sty, _) = self.side(&send)?;
        let (rn, rty, _) = self.side(&recv)?;
        let (scounts, rcounts) = self.per_rank_counts(k, sn, rn);
        let (sd, rd) = (displacements(&scounts), displacements(&rcounts));
        let selems = match base {
            Op::Gatherv | Op::Allgatherv => i64::from(sn),
            _ => total(&scounts),
        };
        let relems = match base {
            Op::Scatterv => i64::from(rn),
            _ => total(&rcounts),
        };
        let sb = self.buf(elements(selems, span(sty, send.dsize)));
        let mut rb = self.buf(elements(relems, span(rty, recv.dsize)));
        let sent = elements(selems, send.dsize) as f64;
        let (sp, rp) = k.places(base == Op::Scatterv, &sb, &mut rb);
        let (scp, sdp, rcp, rdp) = (scounts.as_ptr(), sd.as_ptr(), rcounts.as_ptr(), rd.as_ptr());
        // The count and displacement arrays have one entry per rank of `c`
        // (the trace check made sure of the recorded lists) and the
        // displacements are the prefix sums of the counts; `sp` and `rp`
        // (either may be MPI_IN_PLACE) point into `sb` and `rb`, sized for
        // the sum of the counts on a side with a list, for `sn` or `rn`
        // elements on the other; the buffers go into `f.bufs` and the
        // arrays into `f.keep` right after the call; a rooted call's `root`
        // is a rank of `c`.
        let rc = match base {
            // SAFETY: `sp` holds `sn` elements of `sty`; the blocks of `rcp`
            // and `rdp` lie within `rp`.
            Op::Gatherv => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Gatherv(sp, sn, sty, rp, rcp, rdp, rty, root, c),
                    MPI_Igatherv(sp, sn, sty, rp, rcp, rdp, rty, root, c, &mut f.req),
                    PMPI_Igatherv(sp, sn, sty, rp, rcp, rdp, rty, root, c, &mut f.req),
                    MPI_Gatherv_init(sp, sn, sty, rp, rcp, rdp, rty, root, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: the blocks of `scp` and `sdp` lie within `sp`; `rp`
            // has room for `rn` elements of `rty`.
            Op::Scatterv => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Scatterv(sp, scp, sdp, sty, rp, rn, rty, root, c),
                    MPI_Iscatterv(sp, scp, sdp, sty, rp, rn, rty, root, c, &mut f.req),
                    PMPI_Iscatterv(sp, scp, sdp, sty, rp, rn, rty, root, c, &mut f.req),
                    MPI_Scatterv_init(sp, scp, sdp, sty, rp, rn, rty, root, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: `sp` holds `sn` elements of `sty`; the blocks of `rcp`
            // and `rdp` lie within `rp`.
            Op::Allgatherv => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c),
                    MPI_Iallgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut f.req),
                    PMPI_Iallgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut f.req),
                    MPI_Allgatherv_init(sp, sn, sty, rp, rcp, rdp, rty, c, info_null(), &mut f.req)
                )
            },
            // SAFETY: the blocks of `scp` and `sdp` lie within `sp`, those
            // of `rcp` and `rdp` within `rp`.
            _ => unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Alltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c),
                    MPI_Ialltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut f.req),
                    PMPI_Ialltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut f.req),
                    MPI_Alltoallv_init(sp, scp, sdp, sty, rp, rcp, rdp, rty, c, info_null(), &mut f.req)
                )
            },
        };
        f.bufs.push(sb);
        f.bufs.push(rb);
        f.keep.ints.extend([scounts, sd, rcounts, rd]);
        Ok((rc, sent))
    }

    /// `Alltoallw`: a block per rank of the recorded count and datatype
    /// size, at byte displacements. Returns the MPI return code and the
    /// bytes sent.
    fn alltoallw(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Coll { e, c, np, .. } = *k;
        let sc = self.counts(&e.send_counts);
        let rcn = self.counts(&e.recv_counts);
        let mut stys = Vec::with_capacity(np);
        let mut rtys = Vec::with_capacity(np);
        for &d in &e.send_dsizes {
            stys.push(self.dtype(i64::from(d))?);
        }
        for &d in &e.recv_dsizes {
            rtys.push(self.dtype(i64::from(d))?);
        }
        let (sd, sbytes) = byte_displs(&sc, &e.send_dsizes, |at| at as c_int);
        let (rd, rbytes) = byte_displs(&rcn, &e.recv_dsizes, |at| at as c_int);
        let sb = self.buf(sbytes);
        let mut rb = self.buf(rbytes);
        let sent = sbytes as f64;
        let (sp, rp) = k.places(false, &sb, &mut rb);
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
        // SAFETY: count, byte-displacement and datatype arrays have one
        // entry per rank of `c` (the trace check made sure of the recorded
        // lists); `sb` and `rb` hold the sums of count times datatype size
        // the displacements add up to (the send side is ignored in place);
        // the buffers go into `f.bufs` and the arrays into `f.keep` right
        // after the call.
        let rc = unsafe {
            issue!(
                f.mode, self.yield_colls;
                MPI_Alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c),
                MPI_Ialltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut f.req),
                PMPI_Ialltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut f.req),
                MPI_Alltoallw_init(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, info_null(), &mut f.req)
            )
        };
        f.bufs.push(sb);
        f.bufs.push(rb);
        f.keep.ints.extend([sc, sd, rcn, rd]);
        f.keep.types.extend([stys, rtys]);
        Ok((rc, sent))
    }

    /// `Reduce_scatter` and `Reduce_scatter_block`: the reduction of a
    /// buffer of all ranks' counts (the recorded list, or the one count
    /// for every rank), each rank's block scattered to it. Returns the MPI
    /// return code and the bytes sent.
    fn reduce_scatter(&mut self, k: &Coll, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Coll {
            e,
            c,
            np,
            recv,
            base,
            ..
        } = *k;
        let (op, ty) = self.reduction(e.redop, &recv)?;
        let rcounts = if base == Op::ReduceScatter {
            self.counts(&e.recv_counts)
        } else {
            vec![self.count(recv.count); np]
        };
        let elems = total(&rcounts);
        let sb = self.buf(elements(elems, span(ty, recv.dsize)));
        let mut rb = self.buf(elements(elems, span(ty, recv.dsize)));
        let sent = elements(elems, recv.dsize) as f64;
        let (sp, rp) = k.places(false, &sb, &mut rb);
        // `sp` (unless MPI_IN_PLACE) and `rp` point into `sb` and `rb`,
        // which go into `f.bufs` right after the call, as `rcounts` goes
        // into `f.keep`.
        let rc = if base == Op::ReduceScatter {
            // SAFETY: `rcounts` has one entry per rank of `c` (the trace
            // check made sure of the recorded list); `sp` and `rp` hold
            // their sum in elements of `ty`.
            unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Reduce_scatter(sp, rp, rcounts.as_ptr(), ty, op, c),
                    MPI_Ireduce_scatter(sp, rp, rcounts.as_ptr(), ty, op, c, &mut f.req),
                    PMPI_Ireduce_scatter(sp, rp, rcounts.as_ptr(), ty, op, c, &mut f.req),
                    MPI_Reduce_scatter_init(sp, rp, rcounts.as_ptr(), ty, op, c, info_null(), &mut f.req)
                )
            }
        } else {
            let n = rcounts.first().copied().unwrap_or(0);
            // SAFETY: `sp` and `rp` hold `np` times `n` elements of `ty`.
            unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Reduce_scatter_block(sp, rp, n, ty, op, c),
                    MPI_Ireduce_scatter_block(sp, rp, n, ty, op, c, &mut f.req),
                    PMPI_Ireduce_scatter_block(sp, rp, n, ty, op, c, &mut f.req),
                    MPI_Reduce_scatter_block_init(sp, rp, n, ty, op, c, info_null(), &mut f.req)
                )
            }
        };
        f.bufs.push(sb);
        f.bufs.push(rb);
        f.keep.ints.push(rcounts);
        Ok((rc, sent))
    }

    /// After a collective (global or neighbourhood) was issued: a traced
    /// nonblocking call's request enters the table with the memory it
    /// uses; a blocking call issued in yield mode as its `PMPI_I*` form is
    /// completed here, sleeping between tests (`f.bufs` and `f.keep` live
    /// until then).
    pub(super) fn settle_collective(&mut self, e: &Event, f: InFlight) -> Result<()> {
        let InFlight {
            mode,
            mut req,
            bufs,
            mut keep,
        } = f;
        if mode != Issue::Blocking {
            keep.bytes = bufs;
            self.new_req(e.req, req, keep, mode == Issue::Persistent);
        } else if self.yield_colls {
            self.await_request(&mut req)?;
            drop((bufs, keep));
        }
        Ok(())
    }
}
