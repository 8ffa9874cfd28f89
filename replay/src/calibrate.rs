//! `replay-calibrate OUT.json`: measures what `rankscale calibrate` turns
//! into LogGOPS parameters (see `simulate::calibrate` for what each
//! measurement stands for), between the two ranks of a real `mpirun -n 2`
//! job (any other rank count is refused). Rank 0 writes the samples as
//! JSON.

use std::ffi::c_int;
use std::process::ExitCode;

use mpi_sys::*;
use simulate::calibrate::Samples;

/// Message sizes measured: powers of two up to 4 MiB.
const SIZES: [u64; 23] = [
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072,
    262144, 524288, 1048576, 2097152, 4194304,
];
/// How late the receiver posts in the eager-limit test, s.
const LATE_S: f64 = 0.002;
/// Back-to-back sends per message-rate batch.
const STREAM: usize = 256;

fn now() -> f64 {
    // SAFETY: MPI_Wtime has no arguments and MPI is initialised.
    unsafe { MPI_Wtime() }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The two ranks' side of every measurement.
struct Pair {
    me: c_int,
    peer: c_int,
    buf: Vec<u8>,
    rbuf: Vec<u8>,
}

impl Pair {
    fn send(&mut self, n: u64) {
        // SAFETY: `buf` holds the largest size measured; byte datatype.
        unsafe {
            MPI_Send(
                self.buf.as_ptr().cast(),
                n as c_int,
                RSMPI_UINT8_T,
                self.peer,
                1,
                RSMPI_COMM_WORLD,
            )
        };
    }

    fn recv(&mut self, n: u64) {
        // SAFETY: as in `send`, into the receive buffer.
        unsafe {
            MPI_Recv(
                self.rbuf.as_mut_ptr().cast(),
                n as c_int,
                RSMPI_UINT8_T,
                self.peer,
                1,
                RSMPI_COMM_WORLD,
                RSMPI_STATUS_IGNORE,
            )
        };
    }

    fn irecv(&mut self, n: u64, at: usize) -> MPI_Request {
        // SAFETY: a request handle is a plain integer or pointer; MPI
        // overwrites it before it is read.
        let mut r: MPI_Request = unsafe { std::mem::zeroed() };
        // SAFETY: the receive buffer holds `at + n` bytes (callers keep
        // `at + n` within it) and `r` is an out-parameter; the caller
        // completes the request before the buffer is used again.
        unsafe {
            MPI_Irecv(
                self.rbuf.as_mut_ptr().add(at).cast(),
                n as c_int,
                RSMPI_UINT8_T,
                self.peer,
                1,
                RSMPI_COMM_WORLD,
                &mut r,
            )
        };
        r
    }

    fn wait(&mut self, r: &mut MPI_Request) {
        // SAFETY: `r` is a live request of this rank.
        unsafe { MPI_Wait(r, RSMPI_STATUS_IGNORE) };
    }

    /// Half the round trip of `n` bytes, median of batches.
    fn pingpong(&mut self, n: u64) -> f64 {
        let reps = (2.0e8 / (n as f64 + 2000.0)).clamp(4.0, 200.0) as usize;
        let mut out = Vec::new();
        for _ in 0..7 {
            let t0 = now();
            for _ in 0..reps {
                if self.me == 0 {
                    self.send(n);
                    self.recv(n);
                } else {
                    self.send_after_recv(n);
                }
            }
            out.push((now() - t0) * 1e9 / reps as f64 / 2.0);
        }
        median(out)
    }

    fn send_after_recv(&mut self, n: u64) {
        self.recv(n);
        self.send(n);
    }

    /// Rank 0 times a blocking send of `n` bytes once rank 1 has said,
    /// with an empty message, that it is ready: with `delay` 0 rank 1 has
    /// posted its receive by then; else it posts it `delay` seconds later.
    /// Returns rank 0's median.
    fn timed_send(&mut self, n: u64, delay: f64) -> f64 {
        let reps = if delay > 0.0 {
            5
        } else {
            (1.0e8 / (n as f64 + 2000.0)).clamp(4.0, 100.0) as usize
        };
        let mut out = Vec::new();
        for _ in 0..reps {
            if self.me == 0 {
                self.recv(0);
                let t0 = now();
                self.send(n);
                out.push((now() - t0) * 1e9);
            } else if delay > 0.0 {
                self.send(0);
                let until = now() + delay;
                while now() < until {}
                self.recv(n);
            } else {
                let mut r = self.irecv(n, 0);
                self.send(0);
                self.wait(&mut r);
            }
        }
        median(out)
    }

    /// Time per message of a stream of 8-byte sends into posted receives.
    fn rate(&mut self) -> f64 {
        let mut out = Vec::new();
        for _ in 0..9 {
            if self.me == 0 {
                self.recv(0);
                let mut reqs: Vec<MPI_Request> = Vec::with_capacity(STREAM);
                let t0 = now();
                for _ in 0..STREAM {
                    // SAFETY: a request handle is a plain integer or pointer; MPI
                    // overwrites it before it is read.
                    let mut r: MPI_Request = unsafe { std::mem::zeroed() };
                    // SAFETY: 8 bytes of `buf`, which outlives the requests
                    // (completed below).
                    unsafe {
                        MPI_Isend(
                            self.buf.as_ptr().cast(),
                            8,
                            RSMPI_UINT8_T,
                            self.peer,
                            1,
                            RSMPI_COMM_WORLD,
                            &mut r,
                        )
                    };
                    reqs.push(r);
                }
                // SAFETY: the requests are live and as many as given.
                unsafe { MPI_Waitall(STREAM as c_int, reqs.as_mut_ptr(), RSMPI_STATUSES_IGNORE) };
                out.push((now() - t0) * 1e9 / STREAM as f64);
            } else {
                let mut reqs: Vec<MPI_Request> =
                    (0..STREAM).map(|i| self.irecv(8, 8 * i)).collect();
                self.send(0);
                // SAFETY: as above.
                unsafe { MPI_Waitall(STREAM as c_int, reqs.as_mut_ptr(), RSMPI_STATUSES_IGNORE) };
            }
        }
        median(out)
    }
}

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: mpirun -n 2 replay-calibrate OUT.json");
        return ExitCode::from(2);
    };
    // SAFETY: MPI is initialised once, before any other MPI call, with no
    // arguments (allowed by the standard).
    unsafe { MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    let (mut me, mut size) = (0, 0);
    // SAFETY: out-parameters of the world communicator's rank and size.
    unsafe {
        PMPI_Comm_rank(RSMPI_COMM_WORLD, &mut me);
        PMPI_Comm_size(RSMPI_COMM_WORLD, &mut size);
    }
    // Exactly two: with more, the ranks past 1 wait in the final barrier
    // while 0 and 1 measure, and on an oversubscribed node their polling
    // takes the pair's cores (three ranks on this machine's two cores
    // gave L = 4.1 ms). Every rank leaves with an error status, so the launcher
    // and `rankscale calibrate` see the job fail; rank 0 alone says why.
    if size != 2 {
        if me == 0 {
            eprintln!(
                "replay-calibrate: error: measures between exactly 2 ranks (mpirun -n 2); this \
                 job has {size}"
            );
        }
        // SAFETY: MPI is initialised; every rank finalises once.
        unsafe { MPI_Finalize() };
        return ExitCode::from(2);
    }
    let big = *SIZES.last().unwrap_or(&1) as usize;
    let mut samples = Samples {
        mpi: mpi_helpers::library_version(),
        late_ns: LATE_S * 1e9,
        ..Samples::default()
    };
    let mut pair = Pair {
        me,
        peer: 1 - me,
        buf: vec![1u8; big],
        rbuf: vec![0u8; big.max(8 * STREAM)],
    };
    for &n in &SIZES {
        pair.pingpong(n);
    }
    for &n in &SIZES {
        samples.pingpong.push((n, pair.pingpong(n)));
    }
    for &n in &SIZES {
        samples.send.push((n, pair.timed_send(n, 0.0)));
    }
    samples.rate_ns = pair.rate();
    for &n in &SIZES {
        samples.late.push((n, pair.timed_send(n, LATE_S)));
    }
    // SAFETY: every rank reaches the barrier once.
    unsafe { MPI_Barrier(RSMPI_COMM_WORLD) };
    let mut code = ExitCode::SUCCESS;
    if me == 0 {
        let text = serde_json::to_string_pretty(&samples).unwrap_or_default();
        if let Err(e) = std::fs::write(&out, text) {
            eprintln!("replay-calibrate: error: cannot write {out}: {e}");
            code = ExitCode::from(1);
        }
    }
    // SAFETY: MPI is initialised and finalised once.
    unsafe { MPI_Finalize() };
    code
}
