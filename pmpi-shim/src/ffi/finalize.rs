//! The MPI side of the inter-node merge at `MPI_Finalize`: a [`Link`] over
//! `PMPI_Send` / `PMPI_Irecv` on a private duplicate of `MPI_COMM_WORLD`
//! (so no message can match one of the application's), and the writing of
//! the trace file on rank 0.

use std::ffi::{c_int, c_void};
use std::path::Path;
use std::time::{Duration, Instant};

use mpi_sys::*;
use trace::TraceFile;

use crate::reduce::{self, Link};
use crate::tracer::{self, Tracer};
use crate::warn::warn;

/// The tag of the merge messages (on the private communicator).
const TAG: c_int = 0x5253;
/// Largest single message: MPI counts are `int`s.
const CHUNK: usize = 1 << 30;
/// First sleep between two tests of a pending request: the merge must not
/// spin on an oversubscribed node (MPICH busy-polls inside blocking calls).
const NAP_US: u64 = 20;
/// Longest sleep between two tests. The sleep grows while a request stays
/// pending, to a tenth of the time waited so far: with 125 ranks on two
/// cores, every waiting rank testing each 20 us starved the few ranks that
/// were merging, and rank 0's merge outlived the 120 s deadline. Growing
/// with the wait, not with the number of tests, keeps short waits short
/// (doubling at each test took a 4-rank merge from 2 to 26 ms).
const MAX_NAP_US: u64 = 2_000;

/// The merge's messages over the private communicator. Every wait has the
/// merge's deadline: a partner that never sends or receives (it died, or
/// left after its own agreement timed out) must not hang `MPI_Finalize`.
/// A request still pending at the deadline stays pending inside MPI, so its
/// buffer is leaked rather than freed under it.
struct MpiLink {
    comm: MPI_Comm,
    limit: Duration,
    /// A request of this link was left pending (deadline or failed test):
    /// the communicator must then never be freed, since Open MPI 4.1
    /// crashes in `MPI_Finalize` progressing a request whose communicator
    /// is gone.
    abandoned: bool,
}

fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with MPI error {rc}"))
    }
}

impl MpiLink {
    /// Sends `buf`; `Ok(false)` if the deadline passed first (then `buf`
    /// must never be freed).
    fn send_raw(&mut self, buf: &[u8], to: i32) -> Result<bool, String> {
        // SAFETY: reading an initialised mpi-sys constant.
        let mut req = unsafe { RSMPI_REQUEST_NULL };
        // SAFETY: `buf` is a live byte slice of `buf.len() <= CHUNK` bytes
        // sent as MPI_UINT8_T, alive until the request completes (or leaked
        // by the caller when it does not); `self.comm` is the valid
        // duplicate made in `merge_and_write` and freed after the reduction.
        let rc = unsafe {
            PMPI_Isend(
                buf.as_ptr().cast::<c_void>(),
                buf.len() as c_int,
                RSMPI_UINT8_T,
                to,
                TAG,
                self.comm,
                &mut req,
            )
        };
        check(rc, "MPI_Isend")?;
        self.settle(&mut req)
    }

    /// Receives into `buf`; `Ok(false)` if the deadline passed first (then
    /// `buf` must never be freed).
    fn recv_raw(&mut self, buf: &mut [u8], from: i32) -> Result<bool, String> {
        // SAFETY: reading an initialised mpi-sys constant.
        let mut req = unsafe { RSMPI_REQUEST_NULL };
        // SAFETY: `buf` stays alive until the request completes (or is
        // leaked by the caller when it does not); the count is at most
        // CHUNK; the communicator is valid (see above).
        let rc = unsafe {
            PMPI_Irecv(
                buf.as_mut_ptr().cast::<c_void>(),
                buf.len() as c_int,
                RSMPI_UINT8_T,
                from,
                TAG,
                self.comm,
                &mut req,
            )
        };
        check(rc, "MPI_Irecv")?;
        self.settle(&mut req)
    }

    /// Completes a request of this link within the deadline, remembering
    /// one left pending.
    fn settle(&mut self, req: &mut MPI_Request) -> Result<bool, String> {
        let done = complete_within(req, Some(self.limit));
        if !matches!(done, Ok(true)) {
            self.abandoned = true;
        }
        done
    }

    fn late(&self, rank: i32) -> String {
        format!(
            "rank {rank} took no part in the merge within {:.0} s",
            self.limit.as_secs_f64()
        )
    }
}

/// Waits for a request by test-and-sleep (a blocking wait would busy-poll
/// on MPICH and starve the other ranks of an oversubscribed node), until
/// `limit` (`None`: until it completes): `Ok(false)` if the request is
/// still pending then (it is left pending: MPI cannot cancel a collective).
fn complete_within(req: &mut MPI_Request, limit: Option<Duration>) -> Result<bool, String> {
    let start = Instant::now();
    loop {
        let mut flag: c_int = 0;
        // SAFETY: `req` is a live request of this module's calls;
        // MPI_STATUS_IGNORE is a valid status argument.
        let rc = unsafe { PMPI_Test(req, &mut flag, RSMPI_STATUS_IGNORE) };
        check(rc, "MPI_Test")?;
        if flag != 0 {
            return Ok(true);
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            return Ok(false);
        }
        let waited_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        super::nap((waited_us / 10).clamp(NAP_US, MAX_NAP_US));
    }
}

impl Link for MpiLink {
    fn send(&mut self, to: i32, bytes: &[u8]) -> Result<(), String> {
        // Owned copies, so that a send that misses the deadline can keep
        // its buffer for good.
        let head = (bytes.len() as u64).to_le_bytes().to_vec();
        let body = bytes.to_vec();
        let mut sent = self.send_raw(&head, to)?;
        for chunk in body.chunks(CHUNK) {
            if !sent {
                break;
            }
            sent = self.send_raw(chunk, to)?;
        }
        if sent {
            Ok(())
        } else {
            std::mem::forget(head);
            std::mem::forget(body);
            Err(self.late(to))
        }
    }

    fn recv(&mut self, from: i32) -> Result<Vec<u8>, String> {
        let mut head = vec![0u8; 8];
        if !self.recv_raw(&mut head, from)? {
            std::mem::forget(head);
            return Err(self.late(from));
        }
        let n = head
            .first_chunk::<8>()
            .map(|h| u64::from_le_bytes(*h))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("merge message from rank {from} is too large"))?;
        let mut buf = vec![0u8; n];
        for i in (0..n.max(1)).step_by(CHUNK) {
            let end = (i + CHUNK).min(n);
            if i < end && !self.recv_raw(&mut buf[i..end], from)? {
                std::mem::forget(buf);
                return Err(self.late(from));
            }
        }
        Ok(buf)
    }
}

/// Merges every rank's trace into rank 0 and writes the file there.
/// Collective over `MPI_COMM_WORLD`: every rank calls it, with or without a
/// trace of its own.
///
/// It begins with an agreement: the private communicator is made with a
/// nonblocking `MPI_Comm_idup`, which completes only when every rank has
/// joined. A rank that runs without the tracer (a partial preload) never
/// joins, so after `timeout` the ranks that did give up: each writes its
/// own trace to `TRACE.d/rank-N` and warns, and the application finishes.
/// After a merge, rank 0 says whether the file was written, and on success
/// every rank removes its snapshot file.
pub(crate) fn merge_and_write(
    t: Option<&Tracer>,
    trace: Option<TraceFile>,
    path: &Path,
    timeout: Duration,
) {
    let start = Instant::now();
    let world = super::world();
    let mut world_size: c_int = 0;
    // SAFETY: the tracer's valid world; writes the int out-param only.
    unsafe { PMPI_Comm_size(world, &mut world_size) };
    if world_size == 1 {
        // One rank merges with no one: no communication at all. MPICH
        // 4.0.2 crashed progressing a request (in `ucp_worker_progress`)
        // in a one-process job started by a session.
        let mut link = MpiLink {
            comm: world,
            limit: timeout,
            abandoned: false,
        };
        let out = reduce::reduce(0, 1, with_sites(trace), &mut link);
        if written(t, out, path, 0, 1, start) {
            remove_snapshot(path, 0);
        }
        return;
    }
    // On the heap: if the agreement times out, MPI may still complete the
    // duplicate later and write both, so they are leaked then.
    // SAFETY: reading an initialised mpi-sys constant.
    let mut comm = Box::new(unsafe { RSMPI_COMM_NULL });
    // SAFETY: reading an initialised mpi-sys constant.
    let mut req = Box::new(unsafe { RSMPI_REQUEST_NULL });
    // SAFETY: duplicating MPI_COMM_WORLD before MPI_Finalize; every traced
    // rank makes this call. Nonblocking, so that the wait below can sleep
    // instead of busy-polling, and give up. Both out-parameters live at
    // least as long as the request (see above).
    let rc = unsafe { PMPI_Comm_idup(world, &mut *comm, &mut *req) };
    let joined = if rc == 0 {
        complete_within(&mut req, Some(timeout))
    } else {
        Err(format!("MPI_Comm_idup failed with MPI error {rc}"))
    };
    let rank = super::comm_rank(world);
    match joined {
        Ok(true) => {}
        Ok(false) => {
            Box::leak(comm);
            Box::leak(req);
            return write_alone(t, trace, path, rank, timeout);
        }
        Err(e) => {
            // The request may still be pending (a failed test): leaked too.
            Box::leak(comm);
            Box::leak(req);
            warn(
                Some(rank),
                &format!("cannot set up the trace merge ({e}); no trace file"),
            );
            return;
        }
    }
    let mut comm = *comm;
    let mut size: c_int = 0;
    // SAFETY: `comm` is the valid duplicate made above.
    unsafe { PMPI_Comm_size(comm, &mut size) };
    let mut link = MpiLink {
        comm,
        limit: timeout,
        abandoned: false,
    };
    let out = reduce::reduce(rank, size, with_sites(trace), &mut link);
    let written = written(t, out, path, rank, size, start);
    // Rank 0 tells every rank whether the file is there; only then do the
    // snapshots go. This wait has no deadline, and needs none: once the
    // agreement has completed every rank is in the merge, and each one
    // reaches this broadcast (every wait of the reduction has the
    // deadline), rank 0 last, once it has written the file. Only a rank 0
    // that died or hangs keeps the others here, and then the job is lost
    // anyway (the launcher ends a job whose rank died). A deadline here
    // was harmful: with 125 ranks on two cores rank 0 wrote after the
    // others had given up, and they left the broadcast pending at
    // MPI_Finalize (Open MPI 4.1 crashed progressing it; MPICH's UCX
    // printed warnings on the application's stdout).
    // On the heap, leaked if a failed test leaves the request pending.
    let mut ok = Box::new(u8::from(written));
    // SAFETY: reading an initialised mpi-sys constant.
    let mut req = Box::new(unsafe { RSMPI_REQUEST_NULL });
    // SAFETY: one byte on the heap, root 0, on the valid duplicate; both
    // out-parameters outlive the request (leaked below if it may be
    // pending).
    let rc = unsafe {
        PMPI_Ibcast(
            std::ptr::from_mut(&mut *ok).cast::<c_void>(),
            1,
            RSMPI_UINT8_T,
            0,
            comm,
            &mut *req,
        )
    };
    let told = check(rc, "MPI_Ibcast").and_then(|()| complete_within(&mut req, None));
    let (told, ok) = match told {
        Ok(done) => (done, *ok),
        Err(e) => {
            Box::leak(ok);
            Box::leak(req);
            warn(
                Some(rank),
                &format!(
                    "cannot learn whether rank 0 wrote the trace ({e}); this rank's snapshot (if any) is kept in {}",
                    crate::config::rank_dir(path).display()
                ),
            );
            (false, 0)
        }
    };
    if told && !link.abandoned {
        // SAFETY: `comm` is the duplicate made above; no request on it is
        // pending (every one completed), and it is no longer used.
        unsafe { PMPI_Comm_free(&mut comm) };
    }
    // Otherwise the communicator is left to MPI_Finalize: freeing it under
    // a pending request crashed Open MPI 4.1.
    if told && ok == 1 {
        remove_snapshot(path, rank);
    }
}

/// This rank's trace with the call sites and file paths it knows, for
/// the merge.
fn with_sites(trace: Option<TraceFile>) -> Option<TraceFile> {
    trace.map(|mut part| {
        part.meta.sites = crate::callsite::sites();
        part.meta.paths = crate::paths::all();
        part
    })
}

/// Writes the merged trace on rank 0 (`out` is its reduction); whether the
/// file was written. A failed reduction is said on the rank that saw it.
fn written(
    t: Option<&Tracer>,
    out: Result<Option<reduce::Reduced>, String>,
    path: &Path,
    rank: c_int,
    size: c_int,
    start: Instant,
) -> bool {
    let merge_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    match out {
        Ok(Some(r)) => write_merged(t, r, path, rank, size, merge_ns),
        Ok(None) => false,
        Err(e) => {
            warn(
                Some(rank),
                &format!("the trace merge failed ({e}); no trace file"),
            );
            false
        }
    }
}

/// Removes this rank's snapshot file (and their directory, after the
/// last one) once the merged trace is written.
fn remove_snapshot(path: &Path, rank: c_int) {
    let file = tracer::rank_file(path, rank);
    let _ = std::fs::remove_file(&file);
    if let Some(dir) = file.parent() {
        // Succeeds for whichever rank removes the last file.
        let _ = std::fs::remove_dir(dir);
    }
}

/// The agreement timed out: this rank's trace goes to its own file.
fn write_alone(
    t: Option<&Tracer>,
    trace: Option<TraceFile>,
    path: &Path,
    rank: i32,
    timeout: Duration,
) {
    let dir = crate::config::rank_dir(path);
    let why = format!(
        "not every rank joined the trace merge within {:.0} s (ranks running without the tracer, or a rank that died?)",
        timeout.as_secs_f64()
    );
    let written = match (t, trace) {
        (Some(t), Some(part)) => Some(t.write_rank_file(part, None)),
        _ => None,
    };
    let msg = match written {
        Some(Ok(file)) => format!(
            "{why}; this rank's trace is in {}: `rankscale merge {} -o FILE` merges what the ranks wrote",
            file.display(),
            dir.display()
        ),
        Some(Err(e)) => format!("{why}; cannot write this rank's trace either ({e})"),
        None => format!("{why}; this rank has no trace"),
    };
    warn(Some(rank), &msg);
}

/// Rank 0's part after the reduction: writes the merged trace. Returns
/// whether the file was written.
fn write_merged(
    t: Option<&Tracer>,
    reduced: reduce::Reduced,
    path: &Path,
    rank: i32,
    size: c_int,
    merge_ns: u64,
) -> bool {
    if let Some(s) = t.map(|t| t.config.slow_write_s).filter(|s| *s > 0.0) {
        // The injected fault (RANKSCALE_FAULT=slow-write@S).
        std::thread::sleep(Duration::from_secs_f64(s));
    }
    for p in &reduced.problems {
        warn(Some(rank), p);
    }
    let Some(mut file) = reduced.file else {
        warn(Some(rank), "no rank has a trace; no trace file");
        return false;
    };
    if reduced.missing > 0 {
        warn(
            Some(rank),
            &format!(
                "{} rank(s) are missing from the trace (their tracing failed; see their warnings)",
                reduced.missing
            ),
        );
    }
    file.trace.normalize();
    tracer::describe(
        &mut file.meta,
        t.map_or_else(super::library_version, |t| t.job.mpi.clone()),
        u32::try_from(size).unwrap_or(0),
        t.map_or(0, Tracer::elapsed_ns),
    );
    file.meta.merge_ns = merge_ns;
    match file.write(path) {
        Ok(bytes) => {
            let line = format!(
                "rankscale: trace of {} events from {} ranks written to {} ({bytes} bytes, merged in {:.1} ms)\n",
                file.trace.total_events(),
                file.trace.ranks().len(),
                path.display(),
                merge_ns as f64 / 1e6,
            );
            use std::io::Write;
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            true
        }
        Err(e) => {
            warn(Some(rank), &format!("cannot write the trace file ({e})"));
            false
        }
    }
}
