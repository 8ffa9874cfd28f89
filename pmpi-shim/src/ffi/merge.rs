//! The MPI side of the inter-node merge at `MPI_Finalize`: a [`Link`] over
//! `PMPI_Send` / `PMPI_Irecv` on a private duplicate of `MPI_COMM_WORLD`
//! (so no message can match one of the application's), and the writing of
//! the trace file on rank 0.

use std::ffi::{c_int, c_void};
use std::path::Path;
use std::time::Instant;

use compress::TraceFile;
use mpi_sys::*;

use crate::reduce::{self, Link};
use crate::tracer::{Tracer, warn};

/// The tag of the merge messages (on the private communicator).
const TAG: c_int = 0x5253;
/// Largest single message: MPI counts are `int`s.
const CHUNK: usize = 1 << 30;
/// Sleep between two tests of a pending receive: the merge must not spin on
/// an oversubscribed node (MPICH busy-polls inside blocking calls).
const NAP_US: u64 = 20;

struct MpiLink {
    comm: MPI_Comm,
}

fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with MPI error {rc}"))
    }
}

impl MpiLink {
    fn send_raw(&self, buf: &[u8], to: i32) -> Result<(), String> {
        // SAFETY: reading an initialised mpi-sys constant.
        let mut req = unsafe { RSMPI_REQUEST_NULL };
        // SAFETY: `buf` is a live byte slice of `buf.len() <= CHUNK` bytes
        // sent as MPI_UINT8_T, borrowed until the request completes in
        // `complete`; `self.comm` is the valid duplicate made in
        // `merge_and_write` and freed only after the reduction.
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
        complete(&mut req)
    }

    fn recv_raw(&self, buf: &mut [u8], from: i32) -> Result<(), String> {
        // SAFETY: reading an initialised mpi-sys constant.
        let mut req = unsafe { RSMPI_REQUEST_NULL };
        // SAFETY: `buf` stays borrowed until the request completes below;
        // the count is at most CHUNK; the communicator is valid (see above).
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
        complete(&mut req)
    }
}

/// Waits for a request by test-and-sleep: a blocking wait would busy-poll
/// (MPICH) and starve the other ranks of an oversubscribed node.
fn complete(req: &mut MPI_Request) -> Result<(), String> {
    loop {
        let mut flag: c_int = 0;
        // SAFETY: `req` is a live request of this module's Isend/Irecv;
        // MPI_STATUS_IGNORE is a valid status argument.
        let rc = unsafe { PMPI_Test(req, &mut flag, RSMPI_STATUS_IGNORE) };
        check(rc, "MPI_Test")?;
        if flag != 0 {
            return Ok(());
        }
        super::nap(NAP_US);
    }
}

impl Link for MpiLink {
    fn send(&mut self, to: i32, bytes: &[u8]) -> Result<(), String> {
        self.send_raw(&(bytes.len() as u64).to_le_bytes(), to)?;
        for chunk in bytes.chunks(CHUNK) {
            self.send_raw(chunk, to)?;
        }
        Ok(())
    }

    fn recv(&mut self, from: i32) -> Result<Vec<u8>, String> {
        let mut head = [0u8; 8];
        self.recv_raw(&mut head, from)?;
        let n = usize::try_from(u64::from_le_bytes(head))
            .map_err(|_| format!("merge message from rank {from} is too large"))?;
        let mut buf = vec![0u8; n];
        for chunk in buf.chunks_mut(CHUNK) {
            self.recv_raw(chunk, from)?;
        }
        Ok(buf)
    }
}

fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Merges every rank's trace into rank 0 and writes the file there.
/// Collective over `MPI_COMM_WORLD`: every rank calls it, with or without a
/// trace of its own.
pub(crate) fn merge_and_write(t: Option<&Tracer>, trace: Option<TraceFile>, path: &Path) {
    let start = Instant::now();
    // SAFETY: reading an initialised mpi-sys constant.
    let world = unsafe { RSMPI_COMM_WORLD };
    // SAFETY: reading an initialised mpi-sys constant.
    let mut comm = unsafe { RSMPI_COMM_NULL };
    // SAFETY: reading an initialised mpi-sys constant.
    let mut req = unsafe { RSMPI_REQUEST_NULL };
    // SAFETY: duplicating MPI_COMM_WORLD before MPI_Finalize; every rank
    // makes this call (the merge is collective). Nonblocking, so that the
    // wait below can sleep instead of busy-polling.
    let rc = unsafe { PMPI_Comm_idup(world, &mut comm, &mut req) };
    let rc = if rc == 0 {
        complete(&mut req).map_or(1, |()| 0)
    } else {
        rc
    };
    let rank = super::comm_rank(world);
    if rc != 0 {
        warn(
            Some(rank),
            "cannot set up the trace merge (MPI_Comm_dup failed); no trace file",
        );
        return;
    }
    let mut size: c_int = 0;
    // SAFETY: `comm` is the valid duplicate made above.
    unsafe { PMPI_Comm_size(comm, &mut size) };
    let mine = trace.map(|mut part| {
        part.meta.sites = crate::callsite::sites();
        part
    });
    let mut link = MpiLink { comm };
    let out = reduce::reduce(rank, size, mine, &mut link);
    let merge_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: `comm` is the duplicate made above, no longer used.
    unsafe { PMPI_Comm_free(&mut comm) };
    let reduced = match out {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(e) => {
            warn(
                Some(rank),
                &format!("the trace merge failed ({e}); no trace file"),
            );
            return;
        }
    };
    for p in &reduced.problems {
        warn(Some(rank), p);
    }
    let Some(mut file) = reduced.file else {
        warn(Some(rank), "no rank has a trace; no trace file");
        return;
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
    file.meta.tool = format!("rankscale {}", env!("CARGO_PKG_VERSION"));
    file.meta.mpi = super::library_version();
    file.meta.world_size = u32::try_from(size).unwrap_or(0);
    file.meta.command = command_line();
    file.meta.wall_ns = t.map_or(0, Tracer::elapsed_ns);
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
        }
        Err(e) => warn(Some(rank), &format!("cannot write the trace file ({e})")),
    }
}
