//! Neighbourhood collectives, blocking, nonblocking and persistent: issued on the
//! replay's communicator of the same virtual topology (replayed from the
//! lineage), with buffers of one block per neighbour. The plain forms'
//! degrees come from the topology, the v and w forms' from their recorded
//! lists.

use std::ffi::c_int;

use anyhow::{Result, bail};
use mpi_sys::*;
use trace::{Event, Op, Transfer};

use super::coll::InFlight;
#[cfg(rankscale_mpi4)]
use super::coll::info_null;
use super::{Replayer, byte_displs, check, elements, span, total};

/// Element displacements of consecutive blocks of `counts`, as MPI's
/// `int` (Neighbor_allgatherv, Neighbor_alltoallv).
fn int_displs(counts: &[c_int]) -> Vec<c_int> {
    crate::tokens::displacements(counts)
}

/// A neighbourhood collective on its way to MPI: what the calls of its
/// family take from the event and the communicator (`c`, from this
/// replay's table, with a virtual topology), fixed before any buffer is
/// made.
#[derive(Clone, Copy)]
struct Hood<'e> {
    e: &'e Event,
    c: MPI_Comm,
    /// The in- and out-degrees of `c`'s topology.
    ins: usize,
    outs: usize,
    send: Transfer,
    recv: Transfer,
    /// The blocking form of the operation, which names its family.
    base: Op,
}

impl Hood<'_> {
    /// Stops unless `fit` (the recorded lists, of `sends` and `recvs`
    /// entries, have one per neighbour of the topology): MPI would read
    /// past a shorter list.
    fn lists_fit(&self, fit: bool, sends: usize, recvs: usize) -> Result<()> {
        let (ins, outs) = (self.ins, self.outs);
        if !fit {
            bail!(
                "{}: lists of {sends} and {recvs} entries on a topology of {ins} in- and {outs} \
                 out-neighbours",
                self.e.op.name(),
            );
        }
        Ok(())
    }
}

impl Replayer<'_> {
    /// A neighbourhood collective: the call of the event's family is
    /// issued, then settled. Returns the bytes sent.
    pub(super) fn neighbor(&mut self, e: &Event) -> Result<f64> {
        let c = self.comm(e.comm)?;
        let (indegree, outdegree) = mpi_helpers::neighbor_degrees(c);
        let zero = Transfer::collective(0, 1);
        let k = Hood {
            e,
            c,
            ins: usize::try_from(indegree).unwrap_or(0),
            outs: usize::try_from(outdegree).unwrap_or(0),
            send: e.send.unwrap_or(zero),
            recv: e.recv.unwrap_or(zero),
            base: e.op.blocking_form(),
        };
        let mut f = InFlight::new(e.op);
        let (rc, sent) = match k.base {
            Op::NeighborAllgather | Op::NeighborAlltoall => self.neighbor_blocks(&k, &mut f)?,
            Op::NeighborAllgatherv | Op::NeighborAlltoallv => {
                self.neighbor_counted_blocks(&k, &mut f)?
            }
            Op::NeighborAlltoallw => self.neighbor_alltoallw(&k, &mut f)?,
            op => bail!("{} is not replayed yet", op.name()),
        };
        check(rc, e.op.name())?;
        self.settle_collective(e, f)?;
        Ok(sent)
    }

    /// `Neighbor_allgather` and `Neighbor_alltoall`: a block of the
    /// recorded count per in-neighbour received, one block sent to all
    /// out-neighbours or one each. Returns the MPI return code and the
    /// bytes sent.
    fn neighbor_blocks(&mut self, k: &Hood, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Hood {
            c,
            ins,
            outs,
            send,
            recv,
            base,
            ..
        } = *k;
        let (sn, sty, _) = self.side(&send)?;
        let (rn, rty, _) = self.side(&recv)?;
        let s_one = elements(sn, span(sty, send.dsize));
        let r_one = elements(rn, span(rty, recv.dsize));
        let s_fan = if base == Op::NeighborAlltoall {
            outs
        } else {
            1
        };
        let sb = self.buf(s_one * s_fan);
        let mut rb = self.buf(r_one * ins);
        let sent = (elements(sn, send.dsize) * outs) as f64;
        let (sp, rp) = (sb.as_ptr().cast(), rb.as_mut_ptr().cast());
        f.bufs.push(sb);
        f.bufs.push(rb);
        let rc = if base == Op::NeighborAllgather {
            // SAFETY: `sp` holds `sn` elements of `sty`, `rp` room for a
            // block of `rn` elements of `rty` per in-neighbour of `c`, both
            // held by `f.bufs`.
            unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Neighbor_allgather(sp, sn, sty, rp, rn, rty, c),
                    MPI_Ineighbor_allgather(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    PMPI_Ineighbor_allgather(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    MPI_Neighbor_allgather_init(sp, sn, sty, rp, rn, rty, c, info_null(), &mut f.req)
                )
            }
        } else {
            // SAFETY: `sp` holds a block of `sn` elements of `sty` per
            // out-neighbour, `rp` room for one of `rn` elements of `rty` per
            // in-neighbour, both held by `f.bufs`.
            unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Neighbor_alltoall(sp, sn, sty, rp, rn, rty, c),
                    MPI_Ineighbor_alltoall(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    PMPI_Ineighbor_alltoall(sp, sn, sty, rp, rn, rty, c, &mut f.req),
                    MPI_Neighbor_alltoall_init(sp, sn, sty, rp, rn, rty, c, info_null(), &mut f.req)
                )
            }
        };
        Ok((rc, sent))
    }

    /// `Neighbor_allgatherv` and `Neighbor_alltoallv`: blocks of the
    /// recorded per-neighbour counts one after the other (one block sent
    /// to all out-neighbours by the allgather). Returns the MPI return
    /// code and the bytes sent.
    fn neighbor_counted_blocks(&mut self, k: &Hood, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Hood {
            e,
            c,
            ins,
            outs,
            send,
            recv,
            base,
        } = *k;
        let (sn, sty, _) = self.side(&send)?;
        let (_, rty, _) = self.side(&recv)?;
        let scounts = if base == Op::NeighborAlltoallv {
            self.counts(&e.send_counts)
        } else {
            vec![sn]
        };
        let rcounts = self.counts(&e.recv_counts);
        k.lists_fit(
            rcounts.len() == ins && (base != Op::NeighborAlltoallv || scounts.len() == outs),
            scounts.len(),
            rcounts.len(),
        )?;
        let (sd, rd) = (int_displs(&scounts), int_displs(&rcounts));
        let sb = self.buf(elements(total(&scounts), span(sty, send.dsize)));
        let mut rb = self.buf(elements(total(&rcounts), span(rty, recv.dsize)));
        let sent = if base == Op::NeighborAlltoallv {
            elements(total(&scounts), send.dsize) as f64
        } else {
            (elements(sn, send.dsize) * outs) as f64
        };
        let (sp, rp) = (sb.as_ptr().cast(), rb.as_mut_ptr().cast());
        let (scp, sdp, rcp, rdp) = (scounts.as_ptr(), sd.as_ptr(), rcounts.as_ptr(), rd.as_ptr());
        let rc = if base == Op::NeighborAllgatherv {
            // SAFETY: `sp` holds `sn` elements of `sty`; `rcp` and `rdp`
            // have an entry per in-neighbour (checked above) whose blocks
            // lie within `rp`; buffers and arrays are kept below until the
            // call is complete.
            unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Neighbor_allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c),
                    MPI_Ineighbor_allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut f.req),
                    PMPI_Ineighbor_allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut f.req),
                    MPI_Neighbor_allgatherv_init(sp, sn, sty, rp, rcp, rdp, rty, c, info_null(), &mut f.req)
                )
            }
        } else {
            // SAFETY: the count and displacement arrays have an entry per
            // out- and in-neighbour (checked above) whose blocks lie within
            // `sp` and `rp`; buffers and arrays are kept below until the
            // call is complete.
            unsafe {
                issue!(
                    f.mode, self.yield_colls;
                    MPI_Neighbor_alltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c),
                    MPI_Ineighbor_alltoallv(
                        sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut f.req
                    ),
                    PMPI_Ineighbor_alltoallv(
                        sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut f.req
                    ),
                    MPI_Neighbor_alltoallv_init(
                        sp, scp, sdp, sty, rp, rcp, rdp, rty, c, info_null(), &mut f.req
                    )
                )
            }
        };
        f.bufs.push(sb);
        f.bufs.push(rb);
        f.keep.ints.extend([scounts, sd, rcounts, rd]);
        Ok((rc, sent))
    }

    /// `Neighbor_alltoallw`: a block per neighbour of the recorded count
    /// and datatype size, at byte displacements. Returns the MPI return
    /// code and the bytes sent.
    fn neighbor_alltoallw(&mut self, k: &Hood, f: &mut InFlight) -> Result<(c_int, f64)> {
        let Hood {
            e, c, ins, outs, ..
        } = *k;
        let (sc, rcn) = (self.counts(&e.send_counts), self.counts(&e.recv_counts));
        k.lists_fit(
            sc.len() == outs
                && rcn.len() == ins
                && e.send_dsizes.len() == outs
                && e.recv_dsizes.len() == ins,
            sc.len(),
            rcn.len(),
        )?;
        let stys = e
            .send_dsizes
            .iter()
            .map(|&d| self.dtype(i64::from(d)))
            .collect::<Result<Vec<_>>>()?;
        let rtys = e
            .recv_dsizes
            .iter()
            .map(|&d| self.dtype(i64::from(d)))
            .collect::<Result<Vec<_>>>()?;
        let (sd, sbytes) = byte_displs(&sc, &e.send_dsizes, |at| at as MPI_Aint);
        let (rd, rbytes) = byte_displs(&rcn, &e.recv_dsizes, |at| at as MPI_Aint);
        let sb = self.buf(sbytes);
        let mut rb = self.buf(rbytes);
        let sent = sbytes as f64;
        let (sp, rp) = (sb.as_ptr().cast(), rb.as_mut_ptr().cast());
        let (scp, sdp, stp) = (sc.as_ptr(), sd.as_ptr(), stys.as_ptr());
        let (rcp, rdp, rtp) = (rcn.as_ptr(), rd.as_ptr(), rtys.as_ptr());
        // SAFETY: count, byte-displacement and datatype arrays have an
        // entry per out- and in-neighbour (checked above); `sb` and `rb`
        // hold the sums of count times datatype size the displacements add
        // up to; buffers and arrays are kept below until the call is
        // complete.
        let rc = unsafe {
            issue!(
                f.mode, self.yield_colls;
                MPI_Neighbor_alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c),
                MPI_Ineighbor_alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut f.req),
                PMPI_Ineighbor_alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut f.req),
                MPI_Neighbor_alltoallw_init(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, info_null(), &mut f.req)
            )
        };
        f.bufs.push(sb);
        f.bufs.push(rb);
        f.keep.ints.extend([sc, rcn]);
        f.keep.aints.extend([sd, rd]);
        f.keep.types.extend([stys, rtys]);
        Ok((rc, sent))
    }
}
