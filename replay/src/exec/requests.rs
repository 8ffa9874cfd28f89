//! The request table of a replay thread and the calls on its requests:
//! `Start`/`Startall`, `Request_free`, and the completion calls (the
//! `Wait*` and `Test*` families), with the checks of their racy outcomes
//! against the trace.

use std::ffi::{c_int, c_void};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use mpi_sys::*;
use trace::{Event, Op, ReqId};

use super::comm::world_to_local;
use super::{Replayer, blank_status, check, request_null};

/// A live request of the replay and the buffers it uses.
pub(super) struct Req {
    handle: MPI_Request,
    /// What MPI may read or write until the request completes: buffers,
    /// and the count, displacement and datatype arrays of a nonblocking
    /// v/w collective (a moved `Vec` keeps its heap block in place).
    _keep: Keep,
    persistent: bool,
    /// For a receive: its communicator, to check the source it matched
    /// against the trace's (a world rank) when it completes.
    pub(super) comm: Option<MPI_Comm>,
    /// For `MPI_Comm_idup`: the trace id of the communicator it makes and
    /// the cell MPI writes its handle to (by completion, on Open MPI),
    /// which enters the communicator table when the request completes.
    creates: Option<(u32, Box<MPI_Comm>)>,
}

/// The memory a nonblocking call hands to MPI, kept with its request in
/// the table until the request completes (MPI may use it until then).
#[derive(Default)]
pub(super) struct Keep {
    pub(super) bytes: Vec<super::Buf>,
    pub(super) ints: Vec<Vec<c_int>>,
    /// `MPI_Aint` displacements (Neighbor_alltoallw's).
    pub(super) aints: Vec<Vec<MPI_Aint>>,
    pub(super) types: Vec<Vec<MPI_Datatype>>,
}

impl Keep {
    /// What a point-to-point request keeps: its one buffer.
    pub(super) fn buffer(b: super::Buf) -> Keep {
        Keep {
            bytes: vec![b],
            ..Keep::default()
        }
    }
}

impl Replayer<'_> {
    /// Enters a new request (of trace id `id`) in the table with the
    /// memory it uses, which then lives as long as the request.
    pub(super) fn new_req(
        &mut self,
        id: Option<ReqId>,
        handle: MPI_Request,
        keep: Keep,
        persistent: bool,
    ) {
        if let Some(id) = id {
            self.reqs.insert(
                id.0,
                Req {
                    handle,
                    _keep: keep,
                    persistent,
                    comm: None,
                    creates: None,
                },
            );
        }
    }

    /// Enters the request of a nonblocking communicator constructor: the
    /// communicator `new` (a trace id) is entered from `cell` when the
    /// request completes.
    pub(super) fn new_creating_req(
        &mut self,
        id: ReqId,
        handle: MPI_Request,
        new: u32,
        cell: Box<MPI_Comm>,
    ) {
        self.reqs.insert(
            id.0,
            Req {
                handle,
                _keep: Keep::default(),
                persistent: false,
                comm: None,
                creates: Some((new, cell)),
            },
        );
    }

    /// `Start` and `Startall` of persistent requests of the table.
    pub(super) fn start(&mut self, e: &Event) -> Result<f64> {
        let ids = self.issued(&e.reqs);
        if ids.is_empty() {
            return Ok(0.0);
        }
        let mut hs = self.handles(&ids)?;
        if e.op == Op::Start {
            let h = hs.first_mut().context("Start without a request")?;
            // SAFETY: `h` is a live persistent request of this replay's
            // table, which keeps its buffers.
            check(unsafe { MPI_Start(h) }, "MPI_Start")?;
        } else {
            // SAFETY: `hs` holds `hs.len()` live persistent requests of this
            // replay's table, which keeps their buffers.
            let rc = unsafe { MPI_Startall(hs.len() as c_int, hs.as_mut_ptr()) };
            check(rc, "MPI_Startall")?;
        }
        self.settle(&ids, &hs);
        Ok(0.0)
    }

    /// `MPI_Cancel` of a request of the table: recorded without detail, but
    /// its event names the request, and a cancelled receive that replay
    /// left posted would match a later message or never complete.
    pub(super) fn cancel(&mut self, e: &Event) -> Result<f64> {
        let ids = self.issued(&e.reqs);
        for (id, mut h) in ids.iter().zip(self.handles(&ids)?) {
            // SAFETY: `h` is a live request of this replay's table; MPI_Cancel
            // only marks it (the handle stays valid until it is completed).
            check(unsafe { MPI_Cancel(&mut h) }, "MPI_Cancel")?;
            if let Some(r) = self.reqs.get_mut(&id.0) {
                r.handle = h;
            }
        }
        Ok(0.0)
    }

    /// `MPI_Grequest_start`: a generalized request of replay's own, whose
    /// callbacks do nothing, so that the calls that test it find it
    /// pending until its `MPI_Grequest_complete`, as the application's
    /// did (the application's callbacks are its own code, not in the
    /// trace).
    pub(super) fn grequest_start(&mut self, e: &Event) -> Result<f64> {
        let mut h = request_null();
        check(
            // SAFETY: the callbacks are functions of this module with the
            // signatures MPI asks for; none reads the extra state (null).
            unsafe {
                MPI_Grequest_start(
                    Some(greq_query),
                    Some(greq_free),
                    Some(greq_cancel),
                    std::ptr::null_mut(),
                    &mut h,
                )
            },
            "MPI_Grequest_start",
        )?;
        self.new_req(e.req, h, Keep::default(), false);
        Ok(0.0)
    }

    /// `MPI_Grequest_complete` of the generalized request its event names.
    pub(super) fn grequest_complete(&mut self, e: &Event) -> Result<f64> {
        if e.reqs.is_empty() {
            bail!(
                "MPI_Grequest_complete does not name its request (a trace taken by an \
                 older rankscale): trace the program again"
            );
        }
        let ids = self.issued(&e.reqs);
        for h in self.handles(&ids)? {
            // SAFETY: `h` is a live generalized request of this replay's
            // table; completing it does not free it.
            check(unsafe { MPI_Grequest_complete(h) }, "MPI_Grequest_complete")?;
        }
        Ok(0.0)
    }

    /// `Request_free`: the request leaves the table (its buffers with it).
    pub(super) fn request_free(&mut self, e: &Event) -> Result<f64> {
        let ids = self.issued(&e.reqs);
        if ids.is_empty() {
            return Ok(0.0);
        }
        let mut hs = self.handles(&ids)?;
        let h = hs.first_mut().context("Request_free without a request")?;
        // SAFETY: `h` is a live request of this replay's table.
        check(unsafe { MPI_Request_free(h) }, "MPI_Request_free")?;
        if let Some(id) = e.reqs.first() {
            self.reqs.remove(&id.0);
        }
        Ok(0.0)
    }

    /// The completion calls, `Wait`, `Test` and their all/any/some forms:
    /// for the racy ones, first waits (untraced) until the requests the
    /// trace says completed are complete, then compares the outcome.
    pub(super) fn complete(&mut self, e: &Event) -> Result<f64> {
        let mut ids = self.live(&e.reqs);
        let racy = matches!(
            e.op,
            Op::Waitany | Op::Waitsome | Op::Testany | Op::Testsome
        );
        // A racy call that completed only requests replay passed over
        // would wait here for others the application did not complete.
        if racy && !e.done.is_empty() && self.issued(&e.done).is_empty() {
            return Ok(0.0);
        }
        // In yield mode a blocking wait is preceded by
        // test-and-sleep too: MPICH's MPI_Wait busy-polls (a
        // 64-rank NPB CG replay on 2 cores: 221 s, most of it
        // in MPI_Wait).
        let blocking = matches!(e.op, Op::Wait | Op::Waitall);
        if racy || e.flag == Some(true) || (blocking && self.opts.yield_wait) {
            self.await_done(&e.done)?;
        }
        self.recorded_first(e, &mut ids)?;
        let mut hs = self.handles(&ids)?;
        let outcome = Outcome::of(e.op, &mut hs)?;
        let completed = outcome.completed(e.op, &ids);
        self.check_outcome(e, &ids, &completed)?;
        self.settle(&ids, &hs);
        Ok(0.0)
    }

    /// Before a `Waitany` or `Testany`: MPI's Waitany and Testany return
    /// the first complete request in the array, so if one before the
    /// recorded outcome completed too, the recorded one goes first in
    /// `ids` (the call's request order then differs from the trace, which
    /// counts as a divergence).
    fn recorded_first(&mut self, e: &Event, ids: &mut Vec<ReqId>) -> Result<()> {
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
        Ok(())
    }

    /// The requests of a completion call that are still live. One that the
    /// replay already completed (an earlier racy call completed more than
    /// the application's did) is left out and counted as a divergence.
    fn live(&mut self, ids: &[ReqId]) -> Vec<ReqId> {
        let ids = self.issued(ids);
        let live: Vec<ReqId> = ids
            .iter()
            .copied()
            .filter(|id| self.reqs.contains_key(&id.0))
            .collect();
        self.diverged += (ids.len() - live.len()) as u64;
        live
    }

    /// `ids` without the requests of calls recorded without detail, which
    /// replay passed over.
    fn issued(&self, ids: &[ReqId]) -> Vec<ReqId> {
        ids.iter()
            .copied()
            .filter(|id| !self.passed.contains(&id.0))
            .collect()
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
            let src = world_to_local(c, &[m.source], true)?[0];
            if st.MPI_SOURCE != src || st.MPI_TAG != m.tag {
                self.diverged += 1;
            }
        }
        Ok(())
    }

    /// The MPI handles of live requests of the table, in the order of
    /// `ids`; an error names a request the trace uses but the replay does
    /// not hold.
    pub(super) fn handles(&self, ids: &[ReqId]) -> Result<Vec<MPI_Request>> {
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
        let null = request_null();
        for (id, &h) in ids.iter().zip(handles) {
            if let Some(r) = self.reqs.get_mut(&id.0) {
                if !r.persistent && h == null {
                    if let Some((new, cell)) = self.reqs.remove(&id.0).and_then(|r| r.creates) {
                        self.comms.insert_made(new, *cell);
                    }
                } else {
                    r.handle = h;
                }
            }
        }
    }

    /// Completes a request of replay's own (outside the traced API) by
    /// test-and-pause.
    pub(super) fn await_request(&self, r: &mut MPI_Request) -> Result<()> {
        self.await_until(r, None).map(|_| ())
    }

    /// Polls request `r` of replay's own (outside the traced API) until it
    /// completes (true) or `until` passes (false, the request still
    /// pending; never without a deadline).
    pub(super) fn await_until(&self, r: &mut MPI_Request, until: Option<Instant>) -> Result<bool> {
        let mut backoff = self.backoff();
        loop {
            if tested(r)? {
                return Ok(true);
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                return Ok(false);
            }
            backoff.pause();
        }
    }

    /// Polls (outside the traced API) until the requests the trace says
    /// completed are complete, so that the traced Test/any/some call that
    /// follows sees the same outcome as the application did.
    pub(super) fn await_done(&self, done: &[ReqId]) -> Result<()> {
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
}

/// What a completion call returned besides its requests: the flag of a
/// test, the index of an any form, the count and indices of a some form,
/// and the statuses.
struct Outcome {
    flag: c_int,
    idx: c_int,
    out: c_int,
    idxs: Vec<c_int>,
    sts: Vec<MPI_Status>,
}

impl Outcome {
    /// Issues the completion call `op` on the live requests `hs`, which
    /// MPI updates in place (a `Wait` or `Test` on none is one on
    /// `MPI_REQUEST_NULL`).
    fn of(op: Op, hs: &mut [MPI_Request]) -> Result<Outcome> {
        let n = hs.len() as c_int;
        let mut o = Outcome {
            flag: 0,
            idx: 0,
            out: 0,
            idxs: vec![0 as c_int; hs.len().max(1)],
            // A plain-data array of statuses, filled by MPI.
            sts: vec![blank_status(); hs.len().max(1)],
        };
        // For every call below: `p` points at the `n` live requests of this
        // replay's table in `hs`, `sp` at `max(n, 1)` statuses and `idxs`
        // at as many indices (room for every request the call can
        // complete); all of them, like the out-parameters, outlive the call.
        let (p, sp, ip) = (hs.as_mut_ptr(), o.sts.as_mut_ptr(), o.idxs.as_mut_ptr());
        let (flag, idx, out) = (&mut o.flag, &mut o.idx, &mut o.out);
        let rc = match op {
            // SAFETY: `n > 0`, so `p` points at a live request; one status at `sp`.
            Op::Wait if n > 0 => unsafe { MPI_Wait(p, sp) },
            // SAFETY: `n` requests at `p`, `n` statuses at `sp`.
            Op::Waitall => unsafe { MPI_Waitall(n, p, sp) },
            // SAFETY: `n` requests at `p`; one status at `sp`.
            Op::Waitany => unsafe { MPI_Waitany(n, p, idx, sp) },
            // SAFETY: `n` requests at `p`, room for `n` indices and statuses.
            Op::Waitsome => unsafe { MPI_Waitsome(n, p, out, ip, sp) },
            // SAFETY: `n > 0`, so `p` points at a live request; one status at `sp`.
            Op::Test if n > 0 => unsafe { MPI_Test(p, flag, sp) },
            // SAFETY: `n` requests at `p`, `n` statuses at `sp`.
            Op::Testall => unsafe { MPI_Testall(n, p, flag, sp) },
            // SAFETY: `n` requests at `p`; one status at `sp`.
            Op::Testany => unsafe { MPI_Testany(n, p, idx, flag, sp) },
            // SAFETY: `n` requests at `p`, room for `n` indices and statuses.
            Op::Testsome => unsafe { MPI_Testsome(n, p, out, ip, sp) },
            _ => {
                // A completion on MPI_REQUEST_NULL only.
                let mut h = request_null();
                if op == Op::Wait {
                    // SAFETY: waiting on MPI_REQUEST_NULL returns at once;
                    // the status is ignored.
                    unsafe { MPI_Wait(&mut h, RSMPI_STATUS_IGNORE) }
                } else {
                    // SAFETY: testing MPI_REQUEST_NULL returns at once;
                    // `flag` is a valid out-parameter, the status ignored.
                    unsafe { MPI_Test(&mut h, flag, RSMPI_STATUS_IGNORE) }
                }
            }
        };
        check(rc, op.name())?;
        Ok(o)
    }

    /// The requests of `ids` (in the order the call was given them) that
    /// the call `op` completed, with their statuses.
    fn completed(&self, op: Op, ids: &[ReqId]) -> Vec<(ReqId, MPI_Status)> {
        let Outcome {
            flag,
            idx,
            out,
            ref idxs,
            ref sts,
        } = *self;
        let pick = |i: c_int| usize::try_from(i).ok().and_then(|i| ids.get(i).copied());
        match op {
            Op::Wait | Op::Waitall => ids.iter().copied().zip(sts.iter().copied()).collect(),
            Op::Test | Op::Testall if flag != 0 => {
                ids.iter().copied().zip(sts.iter().copied()).collect()
            }
            Op::Waitany => pick(idx).map(|id| (id, sts[0])).into_iter().collect(),
            Op::Testany if flag != 0 => pick(idx).map(|id| (id, sts[0])).into_iter().collect(),
            Op::Waitsome | Op::Testsome if out > 0 => idxs[..out as usize]
                .iter()
                .zip(sts)
                .filter_map(|(&i, st)| pick(i).map(|id| (id, *st)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The status a replayed generalized request completes with: nothing
/// received, not cancelled.
unsafe extern "C" fn greq_query(_extra: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI passes the status it is completing; both calls only
    // write its fields.
    unsafe {
        MPI_Status_set_elements(status, RSMPI_UINT8_T, 0);
        MPI_Status_set_cancelled(status, 0);
    }
    0
}

/// Nothing to free: a replayed generalized request has no state.
unsafe extern "C" fn greq_free(_extra: *mut c_void) -> c_int {
    0
}

/// Nothing to cancel: a replayed generalized request has no work.
unsafe extern "C" fn greq_cancel(_extra: *mut c_void, _complete: c_int) -> c_int {
    0
}

/// Whether request `r` of replay's own (outside the traced API) has
/// completed: one `MPI_Test`.
pub(super) fn tested(r: &mut MPI_Request) -> Result<bool> {
    let mut f: c_int = 0;
    check(
        // SAFETY: `r` is a live request made by this replay.
        unsafe { PMPI_Test(r, &mut f, RSMPI_STATUS_IGNORE) },
        "MPI_Test",
    )?;
    Ok(f != 0)
}
