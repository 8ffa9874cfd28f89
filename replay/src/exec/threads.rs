//! The replay threads of a rank, one per application thread that called
//! MPI: the event loop each runs, the order between them (first MPI calls,
//! communicator management, causal gates), and what stops them (a failed
//! thread, the `--timeout` watchdog).

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use mpi_sys::*;
use trace::Event;

use super::Replayer;
use super::report::Summary;
use crate::tokens::Gates;

/// Where each replay thread of a rank is, as the position (in the rank's
/// recorded event order) of the next event it will issue; `u64::MAX` once
/// it is done. A communicator is created or freed only when every other
/// thread has issued all the events recorded before it, the order the
/// application's threads had (the joins and locks between them are not
/// MPI calls, so the trace knows them only through this order).
pub(super) struct Progress {
    next: Vec<AtomicU64>,
    /// Whether each thread has made its first MPI call. The tracer numbers
    /// a rank's threads in the order of their first MPI call, so thread
    /// `k` makes it (an `MPI_Query_thread`, which never blocks) only after
    /// thread `k - 1`, which keeps the numbers of the application.
    started: Vec<AtomicBool>,
}

impl Progress {
    /// No thread has issued anything; only the first has started.
    pub(super) fn new(threads: usize) -> Self {
        Progress {
            next: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            started: (0..threads).map(|i| AtomicBool::new(i == 0)).collect(),
        }
    }

    /// Waits until the thread before `slot` has made its first MPI call.
    fn await_turn(&self, slot: usize) {
        while slot > 1 && !self.started[slot - 1].load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    /// Says that thread `slot` has made its first MPI call.
    fn has_started(&self, slot: usize) {
        self.started[slot].store(true, Ordering::SeqCst);
    }

    /// Says that thread `slot` is at position `pos`.
    fn set(&self, slot: usize, pos: u64) {
        self.next[slot].store(pos, Ordering::SeqCst);
    }

    /// Waits until every other thread is at position `pos` or beyond.
    fn await_others(&self, slot: usize, pos: u64) {
        while self
            .next
            .iter()
            .enumerate()
            .any(|(i, p)| i != slot && p.load(Ordering::SeqCst) < pos)
        {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

impl Replayer<'_> {
    /// Issues the events of one application thread (`(slot, tid)`) of
    /// this rank, in place in the rank's compressed trace. Returns how
    /// many it issued.
    fn run_thread(
        &mut self,
        rt: &trace::Trace,
        rank: i32,
        (slot, tid): (usize, u32),
        progress: &Progress,
        current: &Mutex<String>,
    ) -> Result<u64> {
        let mut ex = rt.expand();
        let (mut pos, mut n) = (0u64, 0u64);
        while let Some(ev) = ex.next() {
            pos += 1;
            if ev.thread != tid {
                continue;
            }
            progress.set(slot, pos);
            if n == 0 && slot > 0 {
                progress.await_turn(slot);
                let mut level: c_int = 0;
                // SAFETY: a valid out-parameter; MPI is initialised.
                unsafe { MPI_Query_thread(&mut level) };
                progress.has_started(slot);
            }
            let c = self.draws.compute(&ex);
            self.drawn_ns += c as f64;
            self.sleep(c);
            if self.threaded && ev.op.family() == trace::Family::CommManagement {
                progress.await_others(slot, pos);
            }
            if self.opts.timeout > 0.0
                && let Ok(mut cur) = current.lock()
            {
                *cur = format!("event {n}: {}", trace::raw::event_line(&ev));
            }
            if let Some(mut g) = self.gates.take() {
                let r = self.pass_gates(&mut g, &ev, pos);
                self.gates = Some(g);
                r?;
            }
            let t0 = Instant::now();
            let bytes = self.exec(&ev).with_context(|| {
                format!("rank {rank}, event {n} ({})", trace::raw::event_line(&ev))
            })?;
            let secs = t0.elapsed().as_secs_f64();
            if let Some(g) = &mut self.gates {
                g.after(pos)?;
            }
            for s in [
                &mut self.stats[ev.op as usize],
                self.sites.entry((ev.op, ev.site)).or_default(),
            ] {
                s.calls += 1.0;
                s.bytes += bytes;
                s.secs += secs;
            }
            n += 1;
        }
        progress.has_started(slot);
        progress.set(slot, u64::MAX);
        if ex.is_broken() {
            bail!("rank {rank}: the trace is inconsistent; its expansion stopped after {n} events");
        }
        Ok(n)
    }

    /// Before issuing `ev` (at position `pos`): waits for the tokens of the
    /// messages it sends that are held, and releases the stages before it
    /// (each once its wildcard receive has matched).
    fn pass_gates(&mut self, g: &mut Gates, ev: &Event, pos: u64) -> Result<()> {
        let mut backoff = self.backoff();
        g.before(ev, || backoff.pause())?;
        while let Some(once) = g.pending_stage(pos) {
            if let Some(id) = once {
                self.await_done(&[id])?;
            }
            g.release_next()?;
        }
        Ok(())
    }
}

/// Replays every application thread of this rank (`threads`, by id): the
/// first with `r` on the calling thread, each other one with a replayer of
/// its own (`new_replayer` of its slot) on a thread of its own, whose
/// report then goes into `r`'s. Returns the number of events issued.
pub(super) fn run_all<'o>(
    r: &mut Replayer<'o>,
    new_replayer: &(dyn Fn(usize) -> Replayer<'o> + Sync),
    rt: &trace::Trace,
    rank: i32,
    threads: &[u32],
    progress: &Progress,
    current: &Mutex<String>,
) -> Result<u64> {
    std::thread::scope(|s| -> Result<u64> {
        let helpers: Vec<_> = threads
            .iter()
            .enumerate()
            .skip(1)
            .map(|(slot, &tid)| {
                s.spawn(move || -> Result<(Summary, u64)> {
                    let mut r = new_replayer(slot);
                    let n = fail_fast(r.run_thread(rt, rank, (slot, tid), progress, current))?;
                    Ok((r.finish(), n))
                })
            })
            .collect();
        let mut n = fail_fast(r.run_thread(
            rt,
            rank,
            (0, threads.first().copied().unwrap_or(0)),
            progress,
            current,
        ))?;
        for h in helpers {
            let (other, k) = h
                .join()
                .map_err(|_| anyhow!("rank {rank}: a replay thread panicked"))??;
            r.absorb(other);
            n += k;
        }
        Ok(n)
    })
}

/// The threads whose calls the compressed structure holds (a walk over its
/// nodes, not its expansion: start-up stays proportional to trace size).
pub(super) fn threads_of(nodes: &[trace::Node], out: &mut Vec<u32>) {
    for n in nodes {
        match n.as_loop() {
            Some(l) => threads_of(l.body(), out),
            None => out.extend(n.shape().map(trace::Shape::thread)),
        }
    }
}

/// Ends the job at once when a replay thread fails: the rank's other
/// threads may be blocked in MPI calls that will never complete, so
/// waiting to join them would hang instead of reporting the error.
fn fail_fast<T>(r: Result<T>) -> Result<T> {
    if let Err(e) = &r {
        replay::say(&format!("replay: error: {e:#}"));
        // SAFETY: aborting the job after an unrecoverable error; allowed
        // from any thread.
        unsafe { MPI_Abort(RSMPI_COMM_WORLD, 1) };
    }
    r
}

/// After `secs` seconds, unless the replay has finished, says what this
/// rank waits on and ends the process (the launcher then ends the job). A
/// thread of its own that never calls MPI, so it works whatever thread
/// level MPI was started with.
pub(super) fn watchdog(
    rank: i32,
    secs: f64,
    current: Arc<Mutex<String>>,
    finished: Arc<AtomicBool>,
) {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < deadline {
            if finished.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let what = current.lock().map(|c| c.clone()).unwrap_or_default();
        replay::say(&format!(
            "replay: error: timeout after {secs} s: rank {rank} waits in {what}"
        ));
        // Every rank reaches its deadline at about the same time; the first
        // to exit makes the launcher end the others, so let them all speak.
        std::thread::sleep(Duration::from_millis(500));
        std::process::exit(3);
    });
}
