//! Neighbourhood collectives, blocking, nonblocking and persistent: issued on the
//! replay's communicator of the same virtual topology (replayed from the
//! lineage), with buffers of one block per neighbour. The plain forms'
//! degrees come from the topology, the v and w forms' from their recorded
//! lists.

use std::ffi::c_int;

use anyhow::{Result, bail};
use compress::{Event, Op, Transfer};
use mpi_sys::*;

use super::coll::Issue;
#[cfg(rankscale_mpi4)]
use super::coll::info_null;
use super::requests::Keep;
use super::{Replayer, check, elements, request_null, span};

/// Element displacements of consecutive blocks of `counts`, as MPI's
/// `int` (Neighbor_allgatherv, Neighbor_alltoallv).
fn int_displs(counts: &[c_int]) -> Vec<c_int> {
    crate::tokens::displacements(counts)
}

/// Byte displacements of consecutive blocks of `counts` elements of
/// `sizes` bytes each, as `MPI_Aint` (Neighbor_alltoallw), and their total.
fn byte_displs(counts: &[c_int], sizes: &[i32]) -> (Vec<MPI_Aint>, usize) {
    let mut off = 0usize;
    let v = counts
        .iter()
        .zip(sizes)
        .map(|(&n, &d)| {
            let at = off;
            off += usize::try_from(i64::from(n) * i64::from(d.max(1))).unwrap_or(0);
            at as MPI_Aint
        })
        .collect();
    (v, off)
}

impl Replayer<'_> {
    /// A neighbourhood collective. Returns the bytes sent.
    pub(super) fn neighbor(&mut self, e: &Event) -> Result<f64> {
        let c = self.comm(e.comm)?;
        let (indegree, outdegree) = mpi_helpers::neighbor_degrees(c);
        let (ins, outs) = (
            usize::try_from(indegree).unwrap_or(0),
            usize::try_from(outdegree).unwrap_or(0),
        );
        let zero = Transfer::collective(0, 1);
        let (send, recv) = (e.send.unwrap_or(zero), e.recv.unwrap_or(zero));
        let base = e.op.blocking_form();
        let mode = Issue::of(e.op);
        let mut req = request_null();
        // Every buffer and array passed below is held by `bufs` or `keep`
        // until the blocking call returns, the untraced request of yield
        // mode completes, or the traced request enters the request table
        // with them.
        let mut bufs: Vec<super::Buf> = Vec::new();
        let mut keep = Keep::default();
        let counts = |v: &[i32], s: &Self| -> Vec<c_int> {
            v.iter().map(|&x| s.count(i64::from(x))).collect()
        };
        let sent;
        let rc = match base {
            Op::NeighborAllgather | Op::NeighborAlltoall => {
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
                sent = (elements(sn, send.dsize) * outs) as f64;
                let (sp, rp) = (sb.as_ptr().cast(), rb.as_mut_ptr().cast());
                bufs.push(sb);
                bufs.push(rb);
                if base == Op::NeighborAllgather {
                    // SAFETY: `sp` holds `sn` elements of `sty`, `rp` room
                    // for a block of `rn` elements of `rty` per
                    // in-neighbour of `c`, both held by `bufs`.
                    unsafe {
                        issue!(
                            mode, self.yield_colls;
                            MPI_Neighbor_allgather(sp, sn, sty, rp, rn, rty, c),
                            MPI_Ineighbor_allgather(sp, sn, sty, rp, rn, rty, c, &mut req),
                            PMPI_Ineighbor_allgather(sp, sn, sty, rp, rn, rty, c, &mut req),
                            MPI_Neighbor_allgather_init(sp, sn, sty, rp, rn, rty, c, info_null(), &mut req)
                        )
                    }
                } else {
                    // SAFETY: `sp` holds a block of `sn` elements of `sty`
                    // per out-neighbour, `rp` room for one of `rn` elements
                    // of `rty` per in-neighbour, both held by `bufs`.
                    unsafe {
                        issue!(
                            mode, self.yield_colls;
                            MPI_Neighbor_alltoall(sp, sn, sty, rp, rn, rty, c),
                            MPI_Ineighbor_alltoall(sp, sn, sty, rp, rn, rty, c, &mut req),
                            PMPI_Ineighbor_alltoall(sp, sn, sty, rp, rn, rty, c, &mut req),
                            MPI_Neighbor_alltoall_init(sp, sn, sty, rp, rn, rty, c, info_null(), &mut req)
                        )
                    }
                }
            }
            Op::NeighborAllgatherv | Op::NeighborAlltoallv => {
                let (sn, sty, _) = self.side(&send)?;
                let (_, rty, _) = self.side(&recv)?;
                let scounts = if base == Op::NeighborAlltoallv {
                    counts(&e.send_counts, self)
                } else {
                    vec![sn]
                };
                let rcounts = counts(&e.recv_counts, self);
                if rcounts.len() != ins || (base == Op::NeighborAlltoallv && scounts.len() != outs)
                {
                    bail!(
                        "{}: lists of {} and {} entries on a topology of {ins} in- and {outs} \
                         out-neighbours",
                        e.op.name(),
                        scounts.len(),
                        rcounts.len()
                    );
                }
                let (sd, rd) = (int_displs(&scounts), int_displs(&rcounts));
                let sum = |v: &[c_int]| v.iter().map(|&x| i64::from(x)).sum::<i64>();
                let sb = self.buf(elements(sum(&scounts), span(sty, send.dsize)));
                let mut rb = self.buf(elements(sum(&rcounts), span(rty, recv.dsize)));
                sent = if base == Op::NeighborAlltoallv {
                    elements(sum(&scounts), send.dsize) as f64
                } else {
                    (elements(sn, send.dsize) * outs) as f64
                };
                let (sp, rp) = (sb.as_ptr().cast(), rb.as_mut_ptr().cast());
                let (scp, sdp, rcp, rdp) =
                    (scounts.as_ptr(), sd.as_ptr(), rcounts.as_ptr(), rd.as_ptr());
                let rc = if base == Op::NeighborAllgatherv {
                    // SAFETY: `sp` holds `sn` elements of `sty`; `rcp` and
                    // `rdp` have an entry per in-neighbour (checked above)
                    // whose blocks lie within `rp`; buffers and arrays are
                    // kept below until the call is complete.
                    unsafe {
                        issue!(
                            mode, self.yield_colls;
                            MPI_Neighbor_allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c),
                            MPI_Ineighbor_allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut req),
                            PMPI_Ineighbor_allgatherv(sp, sn, sty, rp, rcp, rdp, rty, c, &mut req),
                            MPI_Neighbor_allgatherv_init(sp, sn, sty, rp, rcp, rdp, rty, c, info_null(), &mut req)
                        )
                    }
                } else {
                    // SAFETY: the count and displacement arrays have an
                    // entry per out- and in-neighbour (checked above) whose
                    // blocks lie within `sp` and `rp`; buffers and arrays
                    // are kept below until the call is complete.
                    unsafe {
                        issue!(
                            mode, self.yield_colls;
                            MPI_Neighbor_alltoallv(sp, scp, sdp, sty, rp, rcp, rdp, rty, c),
                            MPI_Ineighbor_alltoallv(
                                sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut req
                            ),
                            PMPI_Ineighbor_alltoallv(
                                sp, scp, sdp, sty, rp, rcp, rdp, rty, c, &mut req
                            ),
                            MPI_Neighbor_alltoallv_init(
                                sp, scp, sdp, sty, rp, rcp, rdp, rty, c, info_null(), &mut req
                            )
                        )
                    }
                };
                bufs.push(sb);
                bufs.push(rb);
                keep.ints.extend([scounts, sd, rcounts, rd]);
                rc
            }
            Op::NeighborAlltoallw => {
                let (sc, rcn) = (counts(&e.send_counts, self), counts(&e.recv_counts, self));
                if sc.len() != outs
                    || rcn.len() != ins
                    || e.send_dsizes.len() != outs
                    || e.recv_dsizes.len() != ins
                {
                    bail!(
                        "{}: lists of {} and {} entries on a topology of {ins} in- and {outs} \
                         out-neighbours",
                        e.op.name(),
                        sc.len(),
                        rcn.len()
                    );
                }
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
                let (sd, sbytes) = byte_displs(&sc, &e.send_dsizes);
                let (rd, rbytes) = byte_displs(&rcn, &e.recv_dsizes);
                let sb = self.buf(sbytes);
                let mut rb = self.buf(rbytes);
                sent = sbytes as f64;
                let (sp, rp) = (sb.as_ptr().cast(), rb.as_mut_ptr().cast());
                let (scp, sdp, stp) = (sc.as_ptr(), sd.as_ptr(), stys.as_ptr());
                let (rcp, rdp, rtp) = (rcn.as_ptr(), rd.as_ptr(), rtys.as_ptr());
                // SAFETY: count, byte-displacement and datatype arrays have
                // an entry per out- and in-neighbour (checked above); `sb`
                // and `rb` hold the sums of count times datatype size the
                // displacements add up to; buffers and arrays are kept below
                // until the call is complete.
                let rc = unsafe {
                    issue!(
                        mode, self.yield_colls;
                        MPI_Neighbor_alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c),
                        MPI_Ineighbor_alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut req),
                        PMPI_Ineighbor_alltoallw(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, &mut req),
                        MPI_Neighbor_alltoallw_init(sp, scp, sdp, stp, rp, rcp, rdp, rtp, c, info_null(), &mut req)
                    )
                };
                bufs.push(sb);
                bufs.push(rb);
                keep.ints.extend([sc, rcn]);
                keep.aints.extend([sd, rd]);
                keep.types.extend([stys, rtys]);
                rc
            }
            op => bail!("{} is not replayed yet", op.name()),
        };
        check(rc, e.op.name())?;
        self.settle_collective(e, mode, req, bufs, keep)?;
        Ok(sent)
    }
}
