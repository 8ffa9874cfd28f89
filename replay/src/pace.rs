//! The emulated computation's clock: waits that keep the replay on the
//! recorded schedule although each sleep of the operating system ends late.
//!
//! The recorded computation between two calls already holds the lateness
//! of the application's own waits (a `usleep(4000)` that took 4.14 ms is
//! recorded as 4.14 ms). A replay that sleeps 4.14 ms adds its own
//! lateness on top, once per emulated computation, where a wake-up comes
//! later than the spin that ends each wait can absorb: a 150-step loop of
//! 4 ms sleeps on 2 ranks replayed 0.6 to 1.6 % long on a quiet machine
//! (up to 60 µs a step), 0.0 to 1.0 % paced. So the pacer keeps what its waits
//! overran and takes it off the next computations: the replay's
//! computation then adds up to the drawn one, give or take the last
//! wait's overrun. Only its own waits count: time spent in MPI (waiting
//! for a peer) is the replay's behaviour, not a debt. (In a tightly
//! coupled step, a rank that pays back arrives early and waits for the
//! others: the lateness of a loaded machine is only partly recovered.)
//!
//! `rankscale codegen`'s runtime (`rs_compute`) paces the same way, so
//! that the benchmark and the replay sleep the same times.

use std::time::{Duration, Instant};

/// The last stretch of a wait that is spun rather than slept: a sleep
/// wakes up late, the spin ends on time.
const SPIN: Duration = Duration::from_micros(100);

/// The computation emulator of one replay thread.
#[derive(Debug, Default)]
pub struct Pacer {
    /// What the waits so far overran, still to be taken off later ones.
    late: Duration,
}

impl Pacer {
    /// A pacer that owes nothing.
    pub fn new() -> Pacer {
        Pacer::default()
    }

    /// Emulates `d` of computation: a sleep, then a spin for its last
    /// 100 µs so that the next call starts on time; only the sleep when
    /// `spin` is false (oversubscribed cores: another rank needs the
    /// core). Less what earlier waits overran, and what this one overruns
    /// is kept for the next.
    pub fn wait(&mut self, d: Duration, spin: bool) {
        self.wait_with(d, spin, std::thread::sleep);
    }

    /// [`Pacer::wait`] with the sleep it calls: the tests give a sleep
    /// that oversleeps by a known amount.
    fn wait_with(&mut self, d: Duration, spin: bool, sleep: impl Fn(Duration)) {
        let paid = d.min(self.late);
        self.late -= paid;
        let d = d - paid;
        if d.is_zero() {
            return;
        }
        let until = Instant::now() + d;
        if !spin {
            sleep(d);
        } else {
            if d > 2 * SPIN {
                sleep(d - SPIN);
            }
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        self.late += Instant::now().saturating_duration_since(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleep that overruns by `extra`, as a loaded machine's does.
    fn late_sleep(extra: Duration) -> impl Fn(Duration) {
        move |d| std::thread::sleep(d + extra)
    }

    #[test]
    fn overruns_are_taken_off_the_next_waits() {
        // 20 waits of 3 ms whose sleeps each overrun by 1 ms: 80 ms
        // without the pacer's debt, 60 ms plus the last overrun with it.
        for spin in [false, true] {
            let mut p = Pacer::new();
            let t0 = Instant::now();
            for _ in 0..20 {
                p.wait_with(
                    Duration::from_millis(3),
                    spin,
                    late_sleep(Duration::from_millis(1)),
                );
            }
            let took = t0.elapsed();
            assert!(took >= Duration::from_millis(60), "spin {spin}: {took:?}");
            // The pacer pays back each overrun: what stays is its last
            // (1 ms and the scheduler's lateness), far below the 20 ms of
            // the overruns that were paid.
            assert!(took < Duration::from_millis(72), "spin {spin}: {took:?}");
        }
    }

    #[test]
    fn a_debt_larger_than_a_wait_skips_it_and_carries_on() {
        let mut p = Pacer::new();
        // One wait that overruns by 10 ms: the next three waits of 2 ms
        // are skipped, and the fourth is paid in part.
        p.wait_with(
            Duration::from_millis(1),
            false,
            late_sleep(Duration::from_millis(10)),
        );
        let t0 = Instant::now();
        for _ in 0..3 {
            p.wait_with(Duration::from_millis(2), false, std::thread::sleep);
        }
        assert!(
            t0.elapsed() < Duration::from_millis(2),
            "{:?}",
            t0.elapsed()
        );
        assert!(p.late >= Duration::from_millis(4), "{:?}", p.late);
    }

    #[test]
    fn a_spun_wait_ends_on_time() {
        let mut p = Pacer::new();
        let t0 = Instant::now();
        p.wait(Duration::from_micros(500), true);
        let took = t0.elapsed();
        assert!(took >= Duration::from_micros(500), "{took:?}");
    }
}
