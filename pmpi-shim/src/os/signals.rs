//! The operating-system side of the snapshot thread: a self-pipe that wakes
//! it, and handlers for the signals that end a job (SIGTERM from a batch
//! system's time limit or a launcher killing the job, SIGINT, SIGXCPU).
//!
//! A signal handler may only do async-signal-safe work, so it writes the
//! signal's number into the pipe and returns; the snapshot thread wakes,
//! writes the rank's file, then ends the process the way the signal would
//! have ([`die_of`]). A handler the application or the MPI library
//! installed before is chained to, and then decides alone.
//!
//! A second signal while the first is being handled ends the process at
//! once, unless it comes within [`REPEAT_NS`] of the first: launchers pass
//! one signal on more than once. `timeout -s TERM` signals `mpirun` and
//! then its process group, which holds `mpirun` again, and Hydra forwards
//! both to every rank, half a millisecond apart. Taken for a user's second
//! Ctrl-C, the copy ended each rank before its snapshot was written, and
//! the first rank to die made Hydra kill the rest with SIGKILL.

use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

/// The signals after which a snapshot is written.
pub(crate) const SIGNALS: [c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGXCPU];

/// The byte that tells the thread to stop (no signal number is 0).
const STOP: u8 = 0;

/// Why the snapshot thread woke.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The interval passed.
    Timeout,
    /// This signal arrived.
    Signal(c_int),
    /// The tracer is finishing.
    Stop,
    /// Interrupted, or nothing to read after all: wait again.
    Again,
}

/// The pipe's ends, -1 until [`install`].
static READ_FD: AtomicI32 = AtomicI32::new(-1);
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// The actions in place before ours, per signal of [`SIGNALS`].
static OLD: OnceLock<[Option<libc::sigaction>; 3]> = OnceLock::new();
/// Set while ours are installed; cleared by [`uninstall`].
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// When the fatal signal being handled arrived (`CLOCK_MONOTONIC`, ns,
/// at least 1); 0 while none is.
static DYING_SINCE: AtomicU64 = AtomicU64::new(0);
/// A further signal this soon after the first (ns) is taken for a copy of
/// it, passed on again by a launcher, rather than for a user's insistence.
/// Half a second is well above the copies' spacing (under a millisecond,
/// seen with Hydra) and below a user's second Ctrl-C after a wait.
const REPEAT_NS: u64 = 500_000_000;
/// The process that installed the handlers: a child forked without exec
/// inherits them (and the pipe), and must not wake its parent's thread.
static OWNER: AtomicI32 = AtomicI32::new(0);

/// The conventional name of a signal, for the file's record.
pub(crate) fn name(sig: c_int) -> String {
    match sig {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGXCPU => "SIGXCPU".into(),
        n => format!("signal {n}"),
    }
}

fn index(sig: c_int) -> Option<usize> {
    SIGNALS.iter().position(|&s| s == sig)
}

/// Whether an action is the default one (terminate, or core dump).
fn is_default(a: &libc::sigaction) -> bool {
    a.sa_sigaction == libc::SIG_DFL
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let old = OLD.get().and_then(|o| index(sig).and_then(|i| o[i]));
    let byte = u8::try_from(sig).unwrap_or(u8::MAX);
    let fd = WRITE_FD.load(Ordering::Relaxed);
    // SAFETY: getpid(2) is async-signal-safe and cannot fail.
    let me = unsafe { libc::getpid() };
    if !ACTIVE.load(Ordering::Relaxed) || fd < 0 || me != OWNER.load(Ordering::Relaxed) {
        // SAFETY: sigaction and raise are async-signal-safe; `sig` is the
        // signal being handled.
        unsafe { restore_and_raise(sig, old) };
        return;
    }
    match old {
        Some(a) if !is_default(&a) && a.sa_sigaction != libc::SIG_IGN => {
            // SAFETY: write(2) is async-signal-safe; the byte lives on this
            // stack frame. A full pipe drops the byte (nothing to do then).
            unsafe { libc::write(fd, std::ptr::from_ref(&byte).cast(), 1) };
            // The handler installed before ours decides what happens next.
            // SAFETY: `a` is the action the kernel gave us for `sig`, a
            // valid handler of the kind its flags say, called with the
            // arguments the kernel passed us.
            unsafe {
                if a.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(a.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(c_int) = std::mem::transmute(a.sa_sigaction);
                    f(sig);
                }
            }
        }
        _ => {
            // clock_gettime(2) is async-signal-safe.
            let now = super::sys::monotonic_ns().max(1);
            if let Err(first) =
                DYING_SINCE.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst)
            {
                if now.saturating_sub(first) < REPEAT_NS {
                    // The same signal passed on again: the snapshot thread
                    // already has it and will end the process.
                    return;
                }
                // A second signal: the user wants the process gone now.
                // SAFETY: as above.
                unsafe { restore_and_raise(sig, old) };
                return;
            }
            // SAFETY: write(2) is async-signal-safe (see above).
            unsafe { libc::write(fd, std::ptr::from_ref(&byte).cast(), 1) };
        }
    }
}

/// Puts back the action that was there before ours and raises `sig` again.
///
/// # Safety
/// Async-signal-safe; callable from a handler.
unsafe fn restore_and_raise(sig: c_int, old: Option<libc::sigaction>) {
    // SAFETY: a zeroed sigaction with SIG_DFL is a valid action; `old` is
    // one the kernel returned.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        let a = old.unwrap_or(dfl);
        libc::sigaction(sig, &a, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// Creates the pipe and installs the handlers (signals the process
/// ignores stay ignored). Returns an error text if the pipe cannot be made;
/// a signal whose handler cannot be installed is skipped.
pub(crate) fn install() -> Result<(), String> {
    let mut fds = [-1 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if rc != 0 {
        return Err(format!(
            "cannot create a pipe ({})",
            std::io::Error::last_os_error()
        ));
    }
    READ_FD.store(fds[0], Ordering::SeqCst);
    WRITE_FD.store(fds[1], Ordering::SeqCst);
    // SAFETY: getpid(2) cannot fail.
    OWNER.store(unsafe { libc::getpid() }, Ordering::SeqCst);
    let mut old = [None; 3];
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: querying the current action into a zeroed struct.
        let cur = unsafe {
            let mut cur: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(sig, std::ptr::null(), &mut cur) == 0).then_some(cur)
        };
        if cur.is_some_and(|c| c.sa_sigaction != libc::SIG_IGN) {
            old[i] = cur;
        }
    }
    if OLD.set(old).is_err() {
        return Err("signal handlers were installed twice".into());
    }
    ACTIVE.store(true, Ordering::SeqCst);
    for (i, &sig) in SIGNALS.iter().enumerate() {
        if old[i].is_none() {
            continue;
        }
        // SAFETY: `on_signal` has the SA_SIGINFO signature; the mask is
        // initialised by sigemptyset. SA_RESTART keeps the application's
        // interrupted system calls going as if nothing had happened.
        unsafe {
            let mut a: libc::sigaction = std::mem::zeroed();
            a.sa_sigaction = on_signal as *const () as usize;
            a.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut a.sa_mask);
            libc::sigaction(sig, &a, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// Puts back the actions that were there before [`install`] (where ours are
/// still in place), so that a signal after the tracer finished acts as it
/// would have without it.
pub(crate) fn uninstall() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let Some(old) = OLD.get() else { return };
    for (i, &sig) in SIGNALS.iter().enumerate() {
        let Some(a) = old[i] else { continue };
        // SAFETY: querying, then putting back an action the kernel gave us.
        unsafe {
            let mut cur: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut cur) == 0
                && cur.sa_sigaction == on_signal as *const () as usize
            {
                libc::sigaction(sig, &a, std::ptr::null_mut());
            }
        }
    }
}

/// Waits for a signal, a stop or the end of `timeout` (`None`: no end).
pub(crate) fn wait(timeout: Option<Duration>) -> Wake {
    let fd = READ_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return Wake::Stop;
    }
    let ms = timeout.map_or(-1, |t| c_int::try_from(t.as_millis()).unwrap_or(c_int::MAX));
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n == 0 {
        return Wake::Timeout;
    }
    if n < 0 {
        return Wake::Again;
    }
    let mut byte = [0u8; 1];
    // SAFETY: reading one byte into a one-byte buffer from our pipe.
    let got = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
    match (got, byte[0]) {
        (1, STOP) => Wake::Stop,
        (1, b) => Wake::Signal(c_int::from(b)),
        _ => Wake::Again,
    }
}

/// Wakes the thread with [`Wake::Stop`].
pub(crate) fn stop() {
    let fd = WRITE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: writing one byte from a live stack value to our pipe.
        unsafe { libc::write(fd, std::ptr::from_ref(&STOP).cast(), 1) };
    }
}

/// Whether `sig` ends the process (its action before ours was the
/// default), so that the snapshot thread must end it after writing. Where
/// a handler was installed before ours, that handler decides instead.
pub(crate) fn is_fatal(sig: c_int) -> bool {
    OLD.get()
        .and_then(|o| index(sig).and_then(|i| o[i]))
        .is_some_and(|a| is_default(&a))
}

/// Ends the process as `sig` would have without the tracer: the action
/// before ours is put back and the signal sent to the process again.
pub(crate) fn die_of(sig: c_int) {
    let old = OLD.get().and_then(|o| index(sig).and_then(|i| o[i]));
    ACTIVE.store(false, Ordering::SeqCst);
    // SAFETY: as in the handler; from a normal thread it is safe too.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &old.unwrap_or(dfl), std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
    }
}
