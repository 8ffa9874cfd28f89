//! Partitioned point-to-point of MPI 4: `Psend_init` and `Precv_init`
//! make persistent requests over the whole buffer, cut into the
//! application's partitions; the sender's `Pready*` calls release
//! partitions and the receiver's `Parrived` polls one.
//!
//! A `Parrived` that found its partition in the application waits here
//! (outside the traced API) until it has arrived, then asks. One that
//! did not find it is asked at once: if the partition is there already,
//! the sender marked it ready sooner in the replay than in the
//! application, which no order of calls forces (replay holds no `Pready`
//! back), and it is counted and reported as a latency race of its own
//! kind.

use std::ffi::c_int;

use anyhow::{Context, Result};
use mpi_sys::*;
use trace::{Event, Op, Transfer};

use super::coll::info_null;
use super::requests::Keep;
use super::{Replayer, check, elements, request_null, span};

impl Replayer<'_> {
    /// Issues a call of the partitioned family.
    pub(super) fn partitioned(&mut self, e: &Event) -> Result<f64> {
        match e.op {
            Op::PsendInit | Op::PrecvInit => self.partitioned_init(e),
            Op::Parrived => self.parrived(e),
            _ => self.pready(e),
        }
    }

    /// `Psend_init` and `Precv_init`: the whole buffer moves into the
    /// request table with the request. Returns the bytes one start sends.
    fn partitioned_init(&mut self, e: &Event) -> Result<f64> {
        let send = e.op == Op::PsendInit;
        let t =
            if send { e.send } else { e.recv }.context("partitioned request without its buffer")?;
        let parts = e
            .value
            .and_then(|v| c_int::try_from(v).ok())
            .filter(|&p| p > 0)
            .context("partitioned request without its partitions")?;
        let one = Transfer {
            count: t.count / i64::from(parts),
            ..t
        };
        let n = self.count(one.count);
        let ty = self.typed(&one)?;
        let mut b = self.buf(elements(n, span(ty, one.dsize)).saturating_mul(parts as usize));
        let c = self.comm(e.comm)?;
        let (p, tag) = (Self::peer(t.peer), Self::tag(t.tag));
        let mut h = request_null();
        // The two calls differ only in the constness of the buffer.
        macro_rules! init {
            ($f:ident) => {
                // SAFETY: `b` holds (or has room for) `parts` partitions of
                // `n` elements of `ty`; it moves into the request table
                // with the request `h` (its heap block stays in place), so
                // it outlives every use MPI makes of it; `c` comes from
                // this replay's table; MPI_INFO_NULL is a valid info.
                unsafe {
                    $f(
                        b.as_mut_ptr().cast(),
                        parts,
                        n.into(),
                        ty,
                        p,
                        tag,
                        c,
                        info_null(),
                        &mut h,
                    )
                }
            };
        }
        let rc = if send {
            init!(MPI_Psend_init)
        } else {
            init!(MPI_Precv_init)
        };
        check(rc, e.op.name())?;
        // A partitioned receive keeps no communicator: its completion is
        // paced by the sender's `Pready`, which no gate holds, so a test
        // that finds it complete sooner than the application did is a
        // latency race, not a divergence.
        self.new_req(e.req, h, Keep::buffer(b), true);
        Ok(if send {
            elements(n, t.dsize).saturating_mul(parts as usize) as f64
        } else {
            0.0
        })
    }

    /// `Pready`, `Pready_range` and `Pready_list`, on the partitions the
    /// application named.
    fn pready(&mut self, e: &Event) -> Result<f64> {
        let Some(h) = self.partitioned_handle(e)? else {
            return Ok(0.0);
        };
        {
            let rc = match e.op {
                // SAFETY: `h` is a live, started partitioned send request
                // of this replay.
                Op::Pready => unsafe { MPI_Pready(partition(e)?, h) },
                Op::PreadyRange => {
                    let (lo, hi) = match e.send_counts[..] {
                        [lo, hi] => (c_int::try_from(lo)?, c_int::try_from(hi)?),
                        _ => anyhow::bail!("Pready_range without its two partitions"),
                    };
                    // SAFETY: as for Pready.
                    unsafe { MPI_Pready_range(lo, hi, h) }
                }
                _ => {
                    let mut list = e
                        .send_counts
                        .iter()
                        .map(|&p| c_int::try_from(p))
                        .collect::<Result<Vec<c_int>, _>>()
                        .context("Pready_list partition beyond int")?;
                    let n = c_int::try_from(list.len()).context("Pready_list too long")?;
                    // SAFETY: `list` holds `n` partitions and outlives the
                    // call; `h` as for Pready.
                    unsafe { MPI_Pready_list(n, list.as_mut_ptr(), h) }
                }
            };
            check(rc, e.op.name())?;
        }
        Ok(0.0)
    }

    /// `Parrived`: waits for a partition the application found, then asks
    /// (see the module documentation).
    fn parrived(&mut self, e: &Event) -> Result<f64> {
        let Some(h) = self.partitioned_handle(e)? else {
            return Ok(0.0);
        };
        let part = partition(e)?;
        let mut flag: c_int = 0;
        {
            if e.flag == Some(true) {
                let mut backoff = self.backoff();
                loop {
                    let mut f: c_int = 0;
                    // SAFETY: `h` is a live, started partitioned receive
                    // request of this replay; `f` a valid out-parameter.
                    check(unsafe { PMPI_Parrived(h, part, &mut f) }, "MPI_Parrived")?;
                    if f != 0 {
                        break;
                    }
                    backoff.pause();
                }
            }
            // SAFETY: as above.
            check(unsafe { MPI_Parrived(h, part, &mut flag) }, "MPI_Parrived")?;
        }
        if e.flag == Some(false) && flag != 0 {
            self.early_partitions += 1;
        }
        Ok(0.0)
    }

    /// The handle of the partitioned request a partition call names;
    /// `None` when replay passed over the call that made it.
    fn partitioned_handle(&self, e: &Event) -> Result<Option<MPI_Request>> {
        let id = *e
            .reqs
            .first()
            .with_context(|| format!("{} without its request", e.op.name()))?;
        if self.passed.contains(&id.0) {
            return Ok(None);
        }
        Ok(self.handles(&[id])?.first().copied())
    }
}

/// The one partition of a `Pready` or `Parrived`.
fn partition(e: &Event) -> Result<c_int> {
    e.value
        .and_then(|v| c_int::try_from(v).ok())
        .with_context(|| format!("{} without its partition", e.op.name()))
}
