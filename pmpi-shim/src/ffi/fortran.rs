//! Fortran entry points (`mpif.h`, `use mpi`, `use mpi_f08`).
//!
//! Every wrapped routine gets these symbols (see the `fortran!` macro):
//!
//! | interface | symbols | forwards to |
//! |---|---|---|
//! | `mpif.h`, `use mpi` | `mpi_x_`, `mpi_x__`, `mpi_x`, `MPI_X` | `pmpi_x_` |
//! | `use mpi_f08` | `mpi_x_f08_` | `pmpir_x_f08_` (MPICH) or `pmpi_x_f08_` (Open MPI) |
//! | `use mpi_f08`, MPICH buffer routines | `mpi_x_f08ts_` | `pmpir_x_f08ts_` |
//!
//! A wrapper only observes its arguments and forwards them, unchanged, to
//! the MPI library's own Fortran routine, found lazily with
//! `dlsym(RTLD_NEXT)`. It never re-implements MPI: `MPI_BOTTOM`,
//! `MPI_IN_PLACE`, non-contiguous array sections, status conversion and
//! 1-based indices stay MPI's job. The event is built by the same fill
//! functions as the C wrappers' ([`super::c`]), from handles converted with
//! `MPI_*_f2c`, so a Fortran call records exactly the line the equivalent C
//! call would (apart from the call site).
//!
//! In the yielding wait mode (`RANKSCALE_YIELD`), a blocking call is issued,
//! as in the C wrappers, as the library's own Fortran nonblocking form (or
//! Test/Iprobe/Improbe) polled with sleeps; the recorded event is the same.
//! Sendrecv_replace (no nonblocking form in MPI 3.1) and Alltoallw (see
//! there) block as they are.
//!
//! Each call is recorded once: the wrapper holds the tracer's re-entry guard
//! while it forwards, so the C `MPI_X` that MPICH's `mpif.h` and f08ts
//! bindings call passes straight through the C wrapper.
//!
//! ABI facts this relies on (measured for MPICH 4.0 and Open MPI 4.1):
//! - every argument is passed by reference, there are no hidden arguments
//!   (none of these routines has a CHARACTER argument), and `ierror` is
//!   last; in `use mpi_f08` it is OPTIONAL, so it may be NULL;
//! - handles (also `TYPE(MPI_Comm)` etc. of `mpi_f08`) are one INTEGER;
//! - a Fortran status has the layout of the C `MPI_Status`
//!   (`MPI_STATUS_SIZE` is `sizeof(MPI_Status) / 4`), but may be only
//!   4-byte aligned;
//! - a choice buffer of an MPICH f08ts routine is a pointer to a gfortran
//!   array descriptor whose first word is the base address;
//! - LOGICAL is a 4-byte integer, nonzero for true.
//!
//! Not wrapped: MPICH's large-count `mpi_x_f08ts_large_` / `mpi_x_f08_large_`
//! routines (`INTEGER(MPI_COUNT_KIND)` counts); they reach MPI directly.
#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use mpi_sys::*;
use trace::{Event, MpiLibrary, Op};

use super::c::{
    after_init, any_wildcard, before_abort, before_finalize, cartdim, comm_free_before, completion,
    fill_allgather, fill_allgatherv, fill_allreduce, fill_alltoallv, fill_alltoallw, fill_barrier,
    fill_bcast, fill_cart_create, fill_cart_sub, fill_comm_create, fill_comm_dup, fill_comm_free,
    fill_comm_split, fill_comm_split_type, fill_dist_graph_create, fill_dist_graph_create_adjacent,
    fill_gather, fill_gatherv, fill_graph_create, fill_imrecv, fill_intercomm_create,
    fill_intercomm_merge, fill_irecv, fill_isend, fill_mprobe, fill_mrecv, fill_probe, fill_recv,
    fill_reduce, fill_reduce_scatter, fill_reduce_scatter_block, fill_request_free, fill_scatter,
    fill_scatterv, fill_send, fill_sendrecv, fill_start, new_req,
};
use super::{Key, comm_size, consts, is_wildcard, nap};
use crate::tracer::{self, Scope, Tracer};

/// Every Fortran argument is a pointer.
type P = *mut c_void;

/// The Fortran interface a call came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Iface {
    /// `mpif.h` and `use mpi`.
    F77,
    /// `use mpi_f08` (all of Open MPI's, MPICH's non-buffer routines).
    F08,
    /// MPICH's `use mpi_f08` buffer routines: choice buffers are gfortran
    /// array descriptors.
    F08ts,
}

// ------------------------------------------------------ forward targets

/// One lazily resolved Fortran PMPI routine.
pub(crate) struct Target {
    /// Candidate symbol names, NUL-terminated, tried in order.
    names: &'static [&'static str],
    addr: AtomicPtr<c_void>,
}

impl Target {
    const fn new(names: &'static [&'static str]) -> Target {
        Target {
            names,
            addr: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The routine's address. The MPI library's Fortran layer is loaded
    /// whenever one of its entry points is called, so this cannot fail in
    /// practice; if it does, forwarding is impossible and the process
    /// aborts with a clear message.
    fn get(&self) -> P {
        let p = self.addr.load(Ordering::Relaxed);
        if !p.is_null() {
            return p;
        }
        for name in self.names {
            // SAFETY: `name` is a NUL-terminated string literal; dlsym only
            // reads it and the loader's tables.
            let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast::<c_char>()) };
            if !p.is_null() {
                self.addr.store(p, Ordering::Relaxed);
                return p;
            }
        }
        let names: Vec<&str> = self
            .names
            .iter()
            .map(|n| n.trim_end_matches('\0'))
            .collect();
        eprintln!(
            "rankscale: error: the MPI library has no Fortran routine {} to forward to; aborting",
            names.join(" or ")
        );
        std::process::abort();
    }
}

/// The forward targets of one routine, per interface.
pub(crate) struct Fwds {
    f77: Target,
    f08: Target,
    f08ts: Target,
}

impl Fwds {
    fn get(&self, iface: Iface) -> P {
        match iface {
            Iface::F77 => self.f77.get(),
            Iface::F08 => self.f08.get(),
            Iface::F08ts => self.f08ts.get(),
        }
    }
}

/// Calls a Fortran routine with these arguments.
///
/// # Safety
/// `f` must be a Fortran MPI routine taking exactly `a.len()` arguments by
/// reference, and `a` valid arguments for it.
unsafe fn call(f: P, a: &[P]) {
    macro_rules! arity {
        ($($x:ident),+) => {{
            // SAFETY: `f` is a subroutine of this arity whose arguments are
            // all pointers (guaranteed by the caller): calling it through a
            // function pointer of that exact C ABI type is calling it as a
            // Fortran program does.
            let g = unsafe {
                std::mem::transmute::<P, unsafe extern "C" fn($(arity!(@p $x)),+)>(f)
            };
            let &[$($x),+] = a else { unreachable!() };
            // SAFETY: valid arguments (guaranteed by the caller).
            unsafe { g($($x),+) }
        }};
        (@p $x:ident) => { P };
    }
    match a.len() {
        1 => arity!(a0),
        2 => arity!(a0, a1),
        3 => arity!(a0, a1, a2),
        4 => arity!(a0, a1, a2, a3),
        5 => arity!(a0, a1, a2, a3, a4),
        6 => arity!(a0, a1, a2, a3, a4, a5),
        7 => arity!(a0, a1, a2, a3, a4, a5, a6),
        8 => arity!(a0, a1, a2, a3, a4, a5, a6, a7),
        9 => arity!(a0, a1, a2, a3, a4, a5, a6, a7, a8),
        10 => arity!(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9),
        11 => arity!(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10),
        12 => arity!(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11),
        13 => arity!(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12),
        n => {
            eprintln!("rankscale: error: no Fortran MPI routine of the shim has {n} arguments");
            std::process::abort();
        }
    }
}

/// Calls a Fortran routine whose last argument is `ierror`, and returns
/// the error code. A NULL `ierror` (omitted in `use mpi_f08`) is replaced
/// by a local one.
///
/// # Safety
/// As for [`call`].
unsafe fn call_rc(f: P, a: &mut [P]) -> c_int {
    let mut local: c_int = 0;
    let Some(last) = a.last_mut() else {
        return 0;
    };
    if last.is_null() {
        *last = (&raw mut local).cast();
    }
    let ierr = *last;
    // SAFETY: guaranteed by the caller; `ierr` is a valid INTEGER.
    unsafe {
        call(f, a);
        *ierr.cast::<c_int>()
    }
}

// ---------------------------------------------------------- sentinels

/// Addresses of one kind of Fortran sentinel (one per MPI implementation;
/// 0 when the symbol is absent).
struct Addrs([usize; 2]);

impl Addrs {
    fn hit(&self, p: usize) -> bool {
        p != 0 && self.0.contains(&p)
    }
}

/// The Fortran sentinels of one interface.
struct Sentinels {
    bottom: Addrs,
    in_place: Addrs,
    status_ignore: Addrs,
    statuses_ignore: Addrs,
}

/// `dlsym(RTLD_DEFAULT, name) + off`, or 0 when the symbol is absent.
///
/// The object that wins symbol resolution (often the executable's COMMON
/// block or copy-relocated variable) is the one both the program and MPI
/// use; `RTLD_NEXT` would find a library's unused private copy.
fn sym(name: &str, off: usize) -> usize {
    // SAFETY: `name` is a NUL-terminated string literal; dlsym only reads it
    // and the loader's tables.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast::<c_char>()) };
    if p.is_null() { 0 } else { p as usize + off }
}

/// The sentinels of the `mpif.h`/`use mpi` interface and of `mpi_f08`.
fn sentinels(iface: Iface) -> &'static Sentinels {
    static S: OnceLock<[Sentinels; 2]> = OnceLock::new();
    let s = S.get_or_init(|| {
        let ompi = |name: &str| sym(name, 0);
        [
            Sentinels {
                // MPICH: COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE,
                // MPI_STATUS_IGNORE and /MPIPRIV2/ MPI_STATUSES_IGNORE.
                bottom: Addrs([sym("mpipriv1_\0", 0), ompi("mpi_fortran_bottom_\0")]),
                in_place: Addrs([sym("mpipriv1_\0", 4), ompi("mpi_fortran_in_place_\0")]),
                status_ignore: Addrs([sym("mpipriv1_\0", 8), ompi("mpi_fortran_status_ignore_\0")]),
                statuses_ignore: Addrs([
                    sym("mpipriv2_\0", 0),
                    ompi("mpi_fortran_statuses_ignore_\0"),
                ]),
            },
            Sentinels {
                bottom: Addrs([
                    sym("MPIR_F08_MPI_BOTTOM\0", 0),
                    ompi("mpi_fortran_bottom_\0"),
                ]),
                in_place: Addrs([
                    sym("MPIR_F08_MPI_IN_PLACE\0", 0),
                    ompi("mpi_fortran_in_place_\0"),
                ]),
                status_ignore: Addrs([
                    sym("MPIR_F08_MPI_STATUS_IGNORE_OBJ\0", 0),
                    ompi("mpi_fortran_status_ignore_\0"),
                ]),
                statuses_ignore: Addrs([
                    sym("MPIR_F08_MPI_STATUSES_IGNORE_OBJ\0", 0),
                    ompi("mpi_fortran_statuses_ignore_\0"),
                ]),
            },
        ]
    });
    &s[usize::from(iface != Iface::F77)]
}

impl Iface {
    /// The interface of the non-buffer routines used along with this one
    /// (MPICH's f08ts buffer routines pair with f08 Test, Iprobe, ...).
    fn plain(self) -> Iface {
        match self {
            Iface::F08ts => Iface::F08,
            i => i,
        }
    }

    /// The C view of a choice buffer argument: its address, with the
    /// Fortran `MPI_IN_PLACE` and `MPI_BOTTOM` turned into C's. Only used
    /// to recognise `MPI_IN_PLACE`: the fill functions never dereference
    /// buffers.
    ///
    /// # Safety
    /// For [`Iface::F08ts`], `p` must point to a gfortran array descriptor.
    unsafe fn buf(self, p: P) -> *mut c_void {
        let addr = if self == Iface::F08ts {
            // SAFETY: guaranteed by the caller; base_addr is the
            // descriptor's first word.
            unsafe { *p.cast::<P>() }
        } else {
            p
        };
        let s = sentinels(self);
        let c = consts();
        if s.in_place.hit(addr as usize) {
            c.in_place as P
        } else if s.bottom.hit(addr as usize) {
            c.bottom as P
        } else {
            addr
        }
    }

    fn status_ignored(self, p: P) -> bool {
        sentinels(self).status_ignore.hit(p as usize)
    }

    fn statuses_ignored(self, p: P) -> bool {
        sentinels(self).statuses_ignore.hit(p as usize)
    }
}

// ------------------------------------------------------------ handles

/// An INTEGER argument.
///
/// # Safety
/// `p` must point to an INTEGER.
unsafe fn int(p: P) -> c_int {
    // SAFETY: guaranteed by the caller.
    unsafe { *p.cast::<c_int>() }
}

/// An INTEGER array argument, as the C pointer the fill functions read.
fn ints_arg(p: P) -> *const c_int {
    p.cast::<c_int>().cast_const()
}

/// Copies `n` INTEGERs (empty for NULL or n <= 0).
///
/// # Safety
/// `p` must be NULL or point to `n` INTEGERs.
unsafe fn fints(p: P, n: c_int) -> Vec<c_int> {
    // SAFETY: guaranteed by the caller.
    unsafe { super::ints(p.cast::<c_int>(), n) }
}

macro_rules! f2c {
    ($($name:ident: $t:ty = $f:ident;)*) => {$(
        /// Converts a Fortran handle argument (`MPI_*_f2c`).
        ///
        /// # Safety
        /// `p` must point to an INTEGER handle.
        unsafe fn $name(p: P) -> $t {
            // SAFETY: guaranteed by the caller; the f2c functions accept any
            // value (an unknown one gives the null handle or an invalid
            // handle that is only used as a key).
            unsafe { $f(int(p)) }
        }
    )*};
}
f2c! {
    f_comm: MPI_Comm = RSMPI_Comm_f2c;
    f_dt: MPI_Datatype = RSMPI_Type_f2c;
    f_op: MPI_Op = RSMPI_Op_f2c;
    f_group: MPI_Group = RSMPI_Group_f2c;
    f_req: MPI_Request = RSMPI_Request_f2c;
    f_msg: MPI_Message = RSMPI_Message_f2c;
}

/// The registry key of a Fortran request handle.
fn req_key(f: c_int) -> usize {
    // SAFETY: MPI_Request_f2c accepts any value.
    unsafe { RSMPI_Request_f2c(f) }.key()
}

/// Fortran's `MPI_REQUEST_NULL`.
fn f_request_null() -> c_int {
    static N: OnceLock<c_int> = OnceLock::new();
    // SAFETY: converting the initialised mpi-sys constant.
    *N.get_or_init(|| unsafe { RSMPI_Request_c2f(RSMPI_REQUEST_NULL) })
}

/// The C `MPI_COMM_NULL`.
fn comm_null() -> MPI_Comm {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_COMM_NULL }
}

/// The communicator a Fortran constructor wrote, or `MPI_COMM_NULL` when it
/// failed.
///
/// # Safety
/// When `rc == 0`, `p` must point to the handle MPI wrote.
unsafe fn f_created(rc: c_int, p: P) -> MPI_Comm {
    if rc == 0 {
        // SAFETY: guaranteed by the caller.
        unsafe { f_comm(p) }
    } else {
        comm_null()
    }
}

// ----------------------------------------------------------- statuses

fn zero_status() -> MPI_Status {
    // SAFETY: MPI_Status is plain old data; zeroed is a valid value.
    unsafe { std::mem::zeroed() }
}

/// A status argument the wrapper can read after the call: the caller's, or
/// `local` when the caller passed `MPI_STATUS_IGNORE` but the outcome must
/// be recorded. A Fortran status has the C layout, so `local` serves.
fn status_arg(iface: Iface, user: P, need: bool, local: &mut MPI_Status) -> P {
    if need && iface.status_ignored(user) {
        (local as *mut MPI_Status).cast()
    } else {
        user
    }
}

/// The array version of [`status_arg`].
fn statuses_arg(iface: Iface, user: P, need: bool, n: usize, local: &mut Vec<MPI_Status>) -> P {
    if need && iface.statuses_ignored(user) {
        local.resize(n, zero_status());
        local.as_mut_ptr().cast()
    } else {
        user
    }
}

/// Reads the `k`-th status of a Fortran status array (`MPI_STATUS_SIZE`
/// INTEGERs each, laid out as `MPI_Status`, maybe only 4-byte aligned).
///
/// # Safety
/// `p` must point to at least `k + 1` statuses MPI filled.
unsafe fn read_status(p: P, k: usize) -> MPI_Status {
    // SAFETY: guaranteed by the caller; MPI_STATUS_SIZE INTEGERs are
    // exactly an MPI_Status, read unaligned.
    unsafe {
        let at = p.cast::<c_int>().add(k * consts().f_status_size);
        std::ptr::read_unaligned(at.cast::<MPI_Status>())
    }
}

// -------------------------------------------------- completed requests

/// Whether this MPI's `mpi_f08` Waitany/Testany/Waitsome/Testsome return
/// 0-based indices (MPICH before 4.1, pmodels/mpich#6270).
fn f08_zero_based() -> bool {
    matches!(super::library(), MpiLibrary::Mpich { major, minor } if (major, minor) < (4, 1))
}

/// The positions of the requests a Waitany/Testany/Waitsome/Testsome
/// completed, in MPI's order. `raw` are the indices MPI returned.
///
/// The request array says which non-persistent requests completed (their
/// entries became `MPI_REQUEST_NULL`); those decide whether `raw` is 1-based
/// (the standard) or 0-based (MPICH 4.0 `mpi_f08`). Only when nothing was
/// nulled (persistent requests only) is the base taken from the version.
fn completed(iface: Iface, before: &[c_int], after: &[c_int], raw: &[c_int]) -> Vec<usize> {
    let null = f_request_null();
    let nulled: Vec<usize> = (0..before.len())
        .filter(|&p| before[p] != null && after.get(p) == Some(&null))
        .collect();
    let at = |base: c_int| -> Option<Vec<usize>> {
        let ps: Option<Vec<usize>> = raw
            .iter()
            .map(|&i| {
                usize::try_from(i.checked_sub(base)?)
                    .ok()
                    .filter(|&p| p < before.len())
            })
            .collect();
        ps.filter(|ps| nulled.iter().all(|p| ps.contains(p)))
    };
    let default = if iface != Iface::F77 && f08_zero_based() {
        0
    } else {
        1
    };
    at(default).or_else(|| at(1 - default)).unwrap_or(nulled)
}

// --------------------------------------------------------------- calls

/// One traced Fortran call: its arguments, interface and forward target,
/// and the tracer scope whose event it records.
pub(crate) struct FCall<const N: usize> {
    /// The arguments, forwarded as they are here (a wrapper may replace a
    /// `STATUS_IGNORE` by a local status it can read).
    args: [P; N],
    iface: Iface,
    target: P,
    tracer: &'static Tracer,
    scope: Option<Scope>,
}

impl<const N: usize> FCall<N> {
    /// Forwards the call; returns MPI's error code.
    ///
    /// # Safety
    /// `self.args` must be valid arguments of the target.
    unsafe fn forward(&mut self) -> c_int {
        let mut a = self.args;
        // SAFETY: guaranteed by the caller.
        unsafe { call_rc(self.target, &mut a) }
    }

    /// Records the event (once) of the call that returned `rc` (see
    /// [`Scope::record`]: a failed call keeps only its error class).
    fn record(&mut self, op: Op, rc: c_int, fill: impl FnOnce(&'static Tracer, &mut Event)) {
        if let Some(s) = self.scope.take() {
            s.record(op, rc, fill);
        }
    }

    /// Whether blocking calls wait by test-and-sleep (`RANKSCALE_YIELD`).
    fn yielding(&self) -> bool {
        self.tracer.config.yield_wait
    }

    /// Calls another routine of this interface family with a local
    /// `ierror` (the last element of `a` is replaced).
    ///
    /// # Safety
    /// `a` must be valid arguments of `fwds`'s routine.
    unsafe fn other(&self, fwds: &'static Fwds, iface: Iface, a: &mut [P]) -> c_int {
        if let Some(last) = a.last_mut() {
            *last = std::ptr::null_mut();
        }
        // SAFETY: guaranteed by the caller.
        unsafe { call_rc(fwds.get(iface), a) }
    }

    /// Calls a test-like routine until it fails or `*flag` becomes nonzero,
    /// sleeping between calls.
    ///
    /// # Safety
    /// As for [`FCall::other`]; `flag` must point to the INTEGER/LOGICAL the
    /// routine sets.
    unsafe fn poll(&self, fwds: &'static Fwds, a: &mut [P], flag: *const c_int) -> c_int {
        loop {
            // SAFETY: guaranteed by the caller.
            let rc = unsafe { self.other(fwds, self.iface.plain(), a) };
            // SAFETY: guaranteed by the caller.
            if rc != 0 || unsafe { *flag } != 0 {
                return rc;
            }
            nap(self.tracer.config.yield_us);
        }
    }

    /// Waits for a Fortran request by test-and-sleep.
    ///
    /// # Safety
    /// `req` must be a valid request; `status` a status argument (or NULL
    /// for none).
    unsafe fn wait_req(&self, req: &mut c_int, status: P) -> c_int {
        let mut flag: c_int = 0;
        let mut local = zero_status();
        let st = if status.is_null() {
            (&raw mut local).cast()
        } else {
            status
        };
        let mut a = [
            (req as *mut c_int).cast(),
            (&raw mut flag).cast(),
            st,
            std::ptr::null_mut(),
        ];
        // SAFETY: the arguments of MPI_TEST; `flag` outlives the loop.
        unsafe { self.poll(&test::FWD, &mut a, &raw const flag) }
    }

    /// Writes the error code of a call the wrapper made in the
    /// application's place into its `ierror`.
    ///
    /// # Safety
    /// `ierror` must be NULL or point to an INTEGER.
    unsafe fn set_ierror(&self, rc: c_int) -> c_int {
        let ierr = self.args[N - 1];
        if !ierr.is_null() {
            // SAFETY: guaranteed by the caller.
            unsafe { *ierr.cast::<c_int>() = rc };
        }
        rc
    }

    /// Forwards the call; where waits yield, calls its testing form
    /// `fwds` instead, with the arguments `args` builds around the flag it
    /// is handed, until that flag is set or the call fails (see
    /// [`FCall::poll`]).
    ///
    /// # Safety
    /// `self.args` must be valid arguments of the target, and `args` must
    /// build valid arguments of `fwds`'s routine with the flag where that
    /// routine sets it.
    unsafe fn forward_or_poll<const M: usize>(
        &mut self,
        fwds: &'static Fwds,
        args: impl FnOnce(P) -> [P; M],
    ) -> c_int {
        if !self.yielding() {
            // SAFETY: guaranteed by the caller.
            return unsafe { self.forward() };
        }
        let mut flag: c_int = 0;
        let mut a = args((&raw mut flag).cast());
        // SAFETY: guaranteed by the caller; `flag` lives until the polling
        // ends.
        let r = unsafe { self.poll(fwds, &mut a, &raw const flag) };
        // SAFETY: `self.args`' last element is the caller's `ierror`.
        unsafe { self.set_ierror(r) }
    }

    /// The yielding form of a blocking call: its nonblocking form (the
    /// first `keep` arguments, then a request), then test-and-sleep, with
    /// `status` (or NULL) as the status of the test.
    ///
    /// # Safety
    /// The first `keep` arguments must be those of `ifwds`'s routine.
    unsafe fn yield_via(&self, ifwds: &'static Fwds, keep: usize, status: P) -> c_int {
        let mut req: c_int = f_request_null();
        let mut a: Vec<P> = self.args[..keep].to_vec();
        a.push((&raw mut req).cast());
        a.push(std::ptr::null_mut());
        // SAFETY: guaranteed by the caller.
        let mut rc = unsafe { self.other(ifwds, self.iface, &mut a) };
        if rc == 0 {
            // SAFETY: `req` is the request MPI just started.
            rc = unsafe { self.wait_req(&mut req, status) };
        }
        // SAFETY: the application's ierror argument.
        unsafe { self.set_ierror(rc) }
    }
}

/// Runs a traced wrapper: passes the call straight through when tracing is
/// off or it is nested in another wrapper, else runs `body`.
///
/// # Safety
/// `args` must be the application's arguments of the routine `fwds` names.
unsafe fn run<const N: usize>(
    ret: usize,
    iface: Iface,
    fwds: &'static Fwds,
    args: [P; N],
    body: unsafe fn(&mut FCall<N>),
) {
    let target = fwds.get(iface);
    let Some(scope) = Scope::enter(ret) else {
        // SAFETY: the application's arguments go unchanged to MPI's own
        // routine, exactly as without the shim.
        unsafe { call(target, &args) };
        return;
    };
    let mut c = FCall {
        args,
        iface,
        target,
        tracer: scope.tracer(),
        scope: Some(scope),
    };
    // SAFETY: guaranteed by the caller.
    unsafe { body(&mut c) }
}

/// The call of a wrapper that runs whether tracing is on or not (Init,
/// Finalize, Abort): its body decides itself what to record.
pub(crate) struct FRaw<const N: usize> {
    args: [P; N],
    target: P,
}

impl<const N: usize> FRaw<N> {
    /// Forwards the call with the re-entry guard set; returns MPI's error
    /// code.
    ///
    /// # Safety
    /// `self.args` must be valid arguments of the target.
    unsafe fn forward(&self) -> c_int {
        let mut a = self.args;
        // SAFETY: guaranteed by the caller.
        tracer::untraced(|| unsafe { call_rc(self.target, &mut a) })
    }
}

/// Defines the Fortran entry points of one MPI routine.
///
/// `fortran!(name, "MPI_NAME", ts|plain, (arg, ..., ierror), |c| body)`
/// defines, in a module `name`, the forward targets `FWD`, a `body` that
/// sees the arguments by name and the [`FCall`] as `c`, and the exported
/// symbols of every interface (`ts`: also MPICH's `mpi_name_f08ts_`). Each
/// exported function reads its own return address for the call site.
///
/// `fortran!(raw name, ...)` is the same for Init/Finalize/Abort, whose body
/// gets an [`FRaw`] and the return address `ret` and runs even untraced.
macro_rules! fortran {
    ($name:ident, $upper:literal, $ts:ident, ($($a:ident),+ $(,)?), |$c:ident| $body:block) => {
        pub(crate) mod $name {
            #[allow(unused_imports)]
            use super::*;
            fortran!(@fwd $name);
            const N: usize = [$(stringify!($a)),+].len();
            #[allow(unused_variables)]
            unsafe fn body($c: &mut FCall<N>) {
                let [$($a),+] = $c.args;
                #[allow(unused_unsafe)]
                // SAFETY: the arguments are the application's, by
                // reference, in the order of the MPI binding; the body reads
                // only those the standard makes significant, before or
                // after the call as MPI allows, and forwards them unchanged
                // (apart from a local status in place of STATUS_IGNORE).
                unsafe { $body }
            }
            #[inline(always)]
            unsafe fn enter(ret: usize, iface: Iface, args: [P; N]) {
                // SAFETY: the application's arguments of this routine.
                unsafe { run(ret, iface, &FWD, args, body) }
            }
            fortran!(@exports $name, $upper, $ts, ($($a),+));
        }
    };
    (raw $name:ident, $upper:literal, ($($a:ident),+ $(,)?), |$ret:ident, $c:ident| $body:block) => {
        pub(crate) mod $name {
            #[allow(unused_imports)]
            use super::*;
            fortran!(@fwd $name);
            const N: usize = [$(stringify!($a)),+].len();
            #[inline(always)]
            #[allow(unused_variables)]
            unsafe fn enter($ret: usize, iface: Iface, args: [P; N]) {
                let $c = FRaw { args, target: FWD.get(iface) };
                let [$($a),+] = args;
                #[allow(unused_unsafe)]
                // SAFETY: as for the traced wrappers.
                unsafe { $body }
            }
            fortran!(@exports $name, $upper, plain, ($($a),+));
        }
    };
    (@fwd $name:ident) => {
        pub(crate) static FWD: Fwds = Fwds {
            f77: Target::new(&[concat!("pmpi_", stringify!($name), "_\0")]),
            f08: Target::new(&[
                concat!("pmpir_", stringify!($name), "_f08_\0"),
                concat!("pmpi_", stringify!($name), "_f08_\0"),
            ]),
            f08ts: Target::new(&[concat!("pmpir_", stringify!($name), "_f08ts_\0")]),
        };
    };
    (@exports $name:ident, $upper:literal, $ts:ident, ($($a:ident),+)) => {
        fortran!(@export concat!("mpi_", stringify!($name), "_"), f77_, F77, ($($a),+));
        fortran!(@export concat!("mpi_", stringify!($name), "__"), f77__, F77, ($($a),+));
        fortran!(@export concat!("mpi_", stringify!($name)), f77, F77, ($($a),+));
        fortran!(@export $upper, f77_upper, F77, ($($a),+));
        fortran!(@export concat!("mpi_", stringify!($name), "_f08_"), f08_, F08, ($($a),+));
        fortran!(@ts $ts, $name, ($($a),+));
    };
    (@ts ts, $name:ident, ($($a:ident),+)) => {
        fortran!(@export concat!("mpi_", stringify!($name), "_f08ts_"), f08ts_, F08ts, ($($a),+));
    };
    (@ts plain, $name:ident, ($($a:ident),+)) => {};
    (@export $sym:expr, $f:ident, $iface:ident, ($($a:ident),+)) => {
        #[doc = concat!("Interposes the Fortran `", $sym, "`.")]
        #[unsafe(export_name = $sym)]
        pub unsafe extern "C" fn $f($($a: P),+) {
            let ret = $crate::return_address!();
            // SAFETY: the application's arguments, passed on unchanged.
            unsafe { enter(ret, Iface::$iface, [$($a),+]) }
        }
    };
}

// ------------------------------------------------------------ init / exit

fortran!(raw init, "MPI_INIT", (ierror), |ret, c| {
    let rc = c.forward();
    // The C MPI_Init that MPICH's binding calls is nested, so it recorded
    // nothing; Open MPI's and MPICH's f08 call PMPI_Init.
    if rc == 0 && tracer::get().is_none() {
        after_init(ret, Op::Init, None);
    }
});

fortran!(raw init_thread, "MPI_INIT_THREAD", (required, provided, ierror), |ret, c| {
    let rc = c.forward();
    if rc == 0 && tracer::get().is_none() {
        let p = if provided.is_null() { -1 } else { int(provided) };
        after_init(
            ret,
            Op::InitThread,
            Some(i64::from(int(required)) * 16 + i64::from(p)),
        );
    }
});

fortran!(raw finalize, "MPI_FINALIZE", (ierror), |ret, c| {
    before_finalize(ret, Op::Finalize);
    c.forward();
});

fortran!(raw abort, "MPI_ABORT", (comm, errorcode, ierror), |ret, c| {
    if tracer::get().is_some() {
        before_abort(ret, f_comm(comm), int(errorcode));
    }
    c.forward();
});

// MPI_PCONTROL(LEVEL) has no IERROR: the raw form forwards the one
// argument (reading it back as the "error code", which is harmless) with
// the re-entry guard set, so MPICH's binding, which calls the C
// MPI_Pcontrol, records nothing twice.
fortran!(raw pcontrol, "MPI_PCONTROL", (level), |ret, c| {
    match Scope::enter(ret) {
        Some(s) => {
            // The forwarded "error code" is the level read back: not one.
            c.forward();
            s.record(Op::Pcontrol, 0, |_, ev| ev.value = Some(i64::from(int(level))));
        }
        None => {
            c.forward();
        }
    }
});

// ------------------------------------------------------ point-to-point

macro_rules! blocking_send {
    ($name:ident, $upper:literal, $iname:ident, $op:expr) => {
        fortran!(
            $name,
            $upper,
            ts,
            (buf, count, datatype, dest, tag, comm, ierror),
            |c| {
                let rc = if c.yielding() {
                    c.yield_via(&$iname::FWD, 6, std::ptr::null_mut())
                } else {
                    c.forward()
                };
                let _ = rc;
                let (n, dt, d, tg, cm) = (
                    int(count),
                    f_dt(datatype),
                    int(dest),
                    int(tag),
                    f_comm(comm),
                );
                c.record($op, rc, |t, ev| fill_send(t, ev, n, dt, d, tg, cm));
            }
        );
    };
}
blocking_send!(send, "MPI_SEND", isend, Op::Send);
blocking_send!(ssend, "MPI_SSEND", issend, Op::Ssend);
blocking_send!(rsend, "MPI_RSEND", irsend, Op::Rsend);
blocking_send!(bsend, "MPI_BSEND", ibsend, Op::Bsend);

macro_rules! nonblocking {
    ($name:ident, $upper:literal, $fill:ident, $op:expr, $persistent:expr) => {
        fortran!(
            $name,
            $upper,
            ts,
            (buf, count, datatype, peer, tag, comm, request, ierror),
            |c| {
                let rc = c.forward();
                let (n, dt, p, tg, cm) = (
                    int(count),
                    f_dt(datatype),
                    int(peer),
                    int(tag),
                    f_comm(comm),
                );
                let req = (rc == 0).then(|| f_req(request));
                c.record($op, rc, |t, ev| {
                    $fill(t, ev, n, dt, p, tg, cm, req, $persistent)
                });
            }
        );
    };
}
nonblocking!(isend, "MPI_ISEND", fill_isend, Op::Isend, false);
nonblocking!(issend, "MPI_ISSEND", fill_isend, Op::Issend, false);
nonblocking!(ibsend, "MPI_IBSEND", fill_isend, Op::Ibsend, false);
nonblocking!(irsend, "MPI_IRSEND", fill_isend, Op::Irsend, false);
nonblocking!(irecv, "MPI_IRECV", fill_irecv, Op::Irecv, false);
nonblocking!(send_init, "MPI_SEND_INIT", fill_isend, Op::SendInit, true);
nonblocking!(
    ssend_init,
    "MPI_SSEND_INIT",
    fill_isend,
    Op::SsendInit,
    true
);
nonblocking!(
    bsend_init,
    "MPI_BSEND_INIT",
    fill_isend,
    Op::BsendInit,
    true
);
nonblocking!(
    rsend_init,
    "MPI_RSEND_INIT",
    fill_isend,
    Op::RsendInit,
    true
);
nonblocking!(recv_init, "MPI_RECV_INIT", fill_irecv, Op::RecvInit, true);

fortran!(
    recv,
    "MPI_RECV",
    ts,
    (buf, count, datatype, source, tag, comm, status, ierror),
    |c| {
        let (n, dt, src, tg, cm) = (
            int(count),
            f_dt(datatype),
            int(source),
            int(tag),
            f_comm(comm),
        );
        let wild = is_wildcard(src, tg);
        let mut local = zero_status();
        let st = status_arg(c.iface, status, wild, &mut local);
        c.args[6] = st;
        let rc = if c.yielding() {
            c.yield_via(&irecv::FWD, 6, st)
        } else {
            c.forward()
        };
        let found = (wild && rc == 0).then(|| read_status(st, 0));
        c.record(Op::Recv, rc, |t, ev| {
            fill_recv(t, ev, n, dt, src, tg, cm, found.as_ref())
        });
    }
);

fortran!(
    sendrecv,
    "MPI_SENDRECV",
    ts,
    (
        sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
        comm, status, ierror
    ),
    |c| {
        let (sn, sdt, d, stg) = (int(sendcount), f_dt(sendtype), int(dest), int(sendtag));
        let (rn, rdt, src, rtg) = (int(recvcount), f_dt(recvtype), int(source), int(recvtag));
        let cm = f_comm(comm);
        let wild = is_wildcard(src, rtg);
        let mut local = zero_status();
        let st = status_arg(c.iface, status, wild, &mut local);
        c.args[11] = st;
        let rc = if c.yielding() {
            // Irecv + Isend + Testall by test-and-sleep, as the C wrapper does.
            let null = std::ptr::null_mut();
            let mut r = [f_request_null(); 2];
            let mut rc = c.other(
                &irecv::FWD,
                c.iface,
                &mut [
                    recvbuf,
                    recvcount,
                    recvtype,
                    source,
                    recvtag,
                    comm,
                    (&raw mut r[0]).cast(),
                    null,
                ],
            );
            if rc == 0 {
                rc = c.other(
                    &isend::FWD,
                    c.iface,
                    &mut [
                        sendbuf,
                        sendcount,
                        sendtype,
                        dest,
                        sendtag,
                        comm,
                        (&raw mut r[1]).cast(),
                        null,
                    ],
                );
            }
            if rc == 0 {
                let mut two: c_int = 2;
                let mut flag: c_int = 0;
                let mut sts = [zero_status(), zero_status()];
                rc = c.poll(
                    &testall::FWD,
                    &mut [
                        (&raw mut two).cast(),
                        r.as_mut_ptr().cast(),
                        (&raw mut flag).cast(),
                        sts.as_mut_ptr().cast(),
                        null,
                    ],
                    &raw const flag,
                );
                if rc == 0 && !c.iface.status_ignored(st) {
                    std::ptr::write_unaligned(st.cast::<MPI_Status>(), sts[0]);
                }
            }
            c.set_ierror(rc)
        } else {
            c.forward()
        };
        let found = (wild && rc == 0).then(|| read_status(st, 0));
        c.record(Op::Sendrecv, rc, |t, ev| {
            fill_sendrecv(
                t,
                ev,
                sn,
                sdt,
                d,
                stg,
                rn,
                rdt,
                src,
                rtg,
                cm,
                found.as_ref(),
            )
        });
    }
);

fortran!(
    sendrecv_replace,
    "MPI_SENDRECV_REPLACE",
    ts,
    (
        buf, count, datatype, dest, sendtag, source, recvtag, comm, status, ierror
    ),
    |c| {
        let (n, dt, d, stg, src, rtg) = (
            int(count),
            f_dt(datatype),
            int(dest),
            int(sendtag),
            int(source),
            int(recvtag),
        );
        let cm = f_comm(comm);
        let wild = is_wildcard(src, rtg);
        let mut local = zero_status();
        let st = status_arg(c.iface, status, wild, &mut local);
        c.args[8] = st;
        let rc = c.forward();
        let found = (wild && rc == 0).then(|| read_status(st, 0));
        c.record(Op::SendrecvReplace, rc, |t, ev| {
            fill_sendrecv(t, ev, n, dt, d, stg, n, dt, src, rtg, cm, found.as_ref())
        });
    }
);

// ------------------------------------------------------------ persistent

fortran!(start, "MPI_START", plain, (request, ierror), |c| {
    let before = req_key(int(request));
    let rc = c.forward();
    let after = req_key(int(request));
    c.record(Op::Start, rc, |t, ev| {
        fill_start(t, ev, &[before], &[after])
    });
});

fortran!(
    startall,
    "MPI_STARTALL",
    plain,
    (count, requests, ierror),
    |c| {
        let n = int(count);
        let before: Vec<usize> = fints(requests, n).into_iter().map(req_key).collect();
        let rc = c.forward();
        let after: Vec<usize> = fints(requests, n).into_iter().map(req_key).collect();
        c.record(Op::Startall, rc, |t, ev| fill_start(t, ev, &before, &after));
    }
);

fortran!(
    request_free,
    "MPI_REQUEST_FREE",
    plain,
    (request, ierror),
    |c| {
        let key = req_key(int(request));
        let rc = c.forward();
        c.record(Op::RequestFree, rc, |t, ev| fill_request_free(t, ev, key));
    }
);

// ------------------------------------------------------------ completion

fortran!(wait, "MPI_WAIT", plain, (request, status, ierror), |c| {
    let keys = [req_key(int(request))];
    let infos = c.tracer.reqs(&keys);
    let mut local = zero_status();
    let st = status_arg(c.iface, status, any_wildcard(&infos), &mut local);
    c.args[1] = st;
    let rc = if c.yielding() {
        let r = c.wait_req(&mut *request.cast::<c_int>(), st);
        c.set_ierror(r)
    } else {
        c.forward()
    };
    let done: &[usize] = if rc == 0 { &[0] } else { &[] };
    c.record(Op::Wait, rc, |t, ev| {
        completion(t, ev, &keys, &infos, done, |_| Some(read_status(st, 0)))
    });
});

fortran!(
    test,
    "MPI_TEST",
    plain,
    (request, flag, status, ierror),
    |c| {
        let keys = [req_key(int(request))];
        let infos = c.tracer.reqs(&keys);
        let mut local = zero_status();
        let st = status_arg(c.iface, status, any_wildcard(&infos), &mut local);
        c.args[2] = st;
        let rc = c.forward();
        let f = rc == 0 && int(flag) != 0;
        let done: &[usize] = if f { &[0] } else { &[] };
        c.record(Op::Test, rc, |t, ev| {
            ev.flag = Some(f);
            completion(t, ev, &keys, &infos, done, |_| Some(read_status(st, 0)));
        });
    }
);

fortran!(
    waitall,
    "MPI_WAITALL",
    plain,
    (count, requests, statuses, ierror),
    |c| {
        let n = int(count);
        let keys: Vec<usize> = fints(requests, n).into_iter().map(req_key).collect();
        let infos = c.tracer.reqs(&keys);
        let mut local = Vec::new();
        let sts = statuses_arg(
            c.iface,
            statuses,
            any_wildcard(&infos),
            keys.len(),
            &mut local,
        );
        c.args[2] = sts;
        let rc = c.forward_or_poll(&testall::FWD, |flag| {
            [count, requests, flag, sts, std::ptr::null_mut()]
        });
        let all: Vec<usize> = if rc == 0 {
            (0..keys.len()).collect()
        } else {
            Vec::new()
        };
        c.record(Op::Waitall, rc, |t, ev| {
            completion(t, ev, &keys, &infos, &all, |k| {
                Some(read_status(sts, all[k]))
            })
        });
    }
);

fortran!(
    testall,
    "MPI_TESTALL",
    plain,
    (count, requests, flag, statuses, ierror),
    |c| {
        let n = int(count);
        let keys: Vec<usize> = fints(requests, n).into_iter().map(req_key).collect();
        let infos = c.tracer.reqs(&keys);
        let mut local = Vec::new();
        let sts = statuses_arg(
            c.iface,
            statuses,
            any_wildcard(&infos),
            keys.len(),
            &mut local,
        );
        c.args[3] = sts;
        let rc = c.forward();
        let f = rc == 0 && int(flag) != 0;
        let all: Vec<usize> = if f {
            (0..keys.len()).collect()
        } else {
            Vec::new()
        };
        c.record(Op::Testall, rc, |t, ev| {
            ev.flag = Some(f);
            completion(t, ev, &keys, &infos, &all, |k| {
                Some(read_status(sts, all[k]))
            });
        });
    }
);

fortran!(
    waitany,
    "MPI_WAITANY",
    plain,
    (count, requests, index, status, ierror),
    |c| {
        let n = int(count);
        let before = fints(requests, n);
        let keys: Vec<usize> = before.iter().copied().map(req_key).collect();
        let infos = c.tracer.reqs(&keys);
        let mut local = zero_status();
        let st = status_arg(c.iface, status, any_wildcard(&infos), &mut local);
        c.args[3] = st;
        let rc = c.forward_or_poll(&testany::FWD, |flag| {
            [count, requests, index, flag, st, std::ptr::null_mut()]
        });
        let done = if rc == 0 {
            completed(c.iface, &before, &fints(requests, n), &[int(index)])
        } else {
            Vec::new()
        };
        c.record(Op::Waitany, rc, |t, ev| {
            completion(t, ev, &keys, &infos, &done, |_| Some(read_status(st, 0)))
        });
    }
);

fortran!(
    testany,
    "MPI_TESTANY",
    plain,
    (count, requests, index, flag, status, ierror),
    |c| {
        let n = int(count);
        let before = fints(requests, n);
        let keys: Vec<usize> = before.iter().copied().map(req_key).collect();
        let infos = c.tracer.reqs(&keys);
        let mut local = zero_status();
        let st = status_arg(c.iface, status, any_wildcard(&infos), &mut local);
        c.args[4] = st;
        let rc = c.forward();
        let f = rc == 0 && int(flag) != 0;
        let done = if f {
            completed(c.iface, &before, &fints(requests, n), &[int(index)])
        } else {
            Vec::new()
        };
        c.record(Op::Testany, rc, |t, ev| {
            ev.flag = Some(f);
            completion(t, ev, &keys, &infos, &done, |_| Some(read_status(st, 0)));
        });
    }
);

macro_rules! some_completion {
    ($name:ident, $upper:literal, $op:expr, $yield:expr) => {
        fortran!(
            $name,
            $upper,
            plain,
            (incount, requests, outcount, indices, statuses, ierror),
            |c| {
                let n = int(incount);
                let before = fints(requests, n);
                let keys: Vec<usize> = before.iter().copied().map(req_key).collect();
                let infos = c.tracer.reqs(&keys);
                let mut local = Vec::new();
                let sts = statuses_arg(
                    c.iface,
                    statuses,
                    any_wildcard(&infos),
                    keys.len(),
                    &mut local,
                );
                c.args[4] = sts;
                let rc = if $yield && c.yielding() {
                    let r = c.poll(
                        &testsome::FWD,
                        &mut [
                            incount,
                            requests,
                            outcount,
                            indices,
                            sts,
                            std::ptr::null_mut(),
                        ],
                        outcount.cast::<c_int>().cast_const(),
                    );
                    c.set_ierror(r)
                } else {
                    c.forward()
                };
                let nout = if rc == 0 && int(outcount) > 0 {
                    int(outcount)
                } else {
                    0
                };
                let done = completed(c.iface, &before, &fints(requests, n), &fints(indices, nout));
                c.record($op, rc, |t, ev| {
                    completion(t, ev, &keys, &infos, &done, |k| Some(read_status(sts, k)))
                });
            }
        );
    };
}
some_completion!(waitsome, "MPI_WAITSOME", Op::Waitsome, true);
some_completion!(testsome, "MPI_TESTSOME", Op::Testsome, false);

// ----------------------------------------------------------------- probes

fortran!(
    probe,
    "MPI_PROBE",
    plain,
    (source, tag, comm, status, ierror),
    |c| {
        let (src, tg, cm) = (int(source), int(tag), f_comm(comm));
        let mut local = zero_status();
        let st = status_arg(c.iface, status, true, &mut local);
        c.args[3] = st;
        let rc = c.forward_or_poll(&iprobe::FWD, |flag| {
            [source, tag, comm, flag, st, std::ptr::null_mut()]
        });
        let found = (rc == 0).then(|| read_status(st, 0));
        c.record(Op::Probe, rc, |t, ev| {
            fill_probe(t, ev, src, tg, cm, found.as_ref());
        });
    }
);

fortran!(
    iprobe,
    "MPI_IPROBE",
    plain,
    (source, tag, comm, flag, status, ierror),
    |c| {
        let (src, tg, cm) = (int(source), int(tag), f_comm(comm));
        let mut local = zero_status();
        let st = status_arg(c.iface, status, true, &mut local);
        c.args[4] = st;
        let rc = c.forward();
        let f = rc == 0 && int(flag) != 0;
        let found = f.then(|| read_status(st, 0));
        c.record(Op::Iprobe, rc, |t, ev| {
            ev.flag = Some(f);
            fill_probe(t, ev, src, tg, cm, found.as_ref());
        });
    }
);

fortran!(
    mprobe,
    "MPI_MPROBE",
    plain,
    (source, tag, comm, message, status, ierror),
    |c| {
        let (src, tg, cm) = (int(source), int(tag), f_comm(comm));
        let mut local = zero_status();
        let st = status_arg(c.iface, status, true, &mut local);
        c.args[4] = st;
        let rc = c.forward_or_poll(&improbe::FWD, |flag| {
            [source, tag, comm, flag, message, st, std::ptr::null_mut()]
        });
        let found = (rc == 0).then(|| (read_status(st, 0), f_msg(message)));
        c.record(Op::Mprobe, rc, |t, ev| {
            fill_mprobe(t, ev, src, tg, cm, found.as_ref().map(|(s, m)| (s, *m)));
        });
    }
);

fortran!(
    improbe,
    "MPI_IMPROBE",
    plain,
    (source, tag, comm, flag, message, status, ierror),
    |c| {
        let (src, tg, cm) = (int(source), int(tag), f_comm(comm));
        let mut local = zero_status();
        let st = status_arg(c.iface, status, true, &mut local);
        c.args[5] = st;
        let rc = c.forward();
        let f = rc == 0 && int(flag) != 0;
        let found = f.then(|| (read_status(st, 0), f_msg(message)));
        c.record(Op::Improbe, rc, |t, ev| {
            ev.flag = Some(f);
            fill_mprobe(t, ev, src, tg, cm, found.as_ref().map(|(s, m)| (s, *m)));
        });
    }
);

fortran!(
    mrecv,
    "MPI_MRECV",
    ts,
    (buf, count, datatype, message, status, ierror),
    |c| {
        // Read before the call: receiving frees the message.
        let key = f_msg(message).key();
        let (n, dt) = (int(count), f_dt(datatype));
        let rc = if c.yielding() {
            c.yield_via(&imrecv::FWD, 4, status)
        } else {
            c.forward()
        };
        c.record(Op::Mrecv, rc, |t, ev| {
            fill_mrecv(t, ev, key, n, dt);
        });
    }
);

fortran!(
    imrecv,
    "MPI_IMRECV",
    ts,
    (buf, count, datatype, message, request, ierror),
    |c| {
        let key = f_msg(message).key();
        let (n, dt) = (int(count), f_dt(datatype));
        let rc = c.forward();
        let req = (rc == 0).then(|| f_req(request));
        c.record(Op::Imrecv, rc, |t, ev| fill_imrecv(t, ev, key, n, dt, req));
    }
);

// ------------------------------------------------------------ collectives

/// Converts a Fortran collective argument to what the C fill function
/// takes: `Buf` a choice buffer, `Int` an INTEGER, `Ints` an INTEGER
/// array, `Dt`/`Op`/`Comm` handles.
macro_rules! conv {
    (Buf, $i:expr, $a:expr) => {
        $i.buf($a)
    };
    (Int, $i:expr, $a:expr) => {
        int($a)
    };
    (Ints, $i:expr, $a:expr) => {
        ints_arg($a)
    };
    (Dt, $i:expr, $a:expr) => {
        f_dt($a)
    };
    (Op, $i:expr, $a:expr) => {
        f_op($a)
    };
    (Comm, $i:expr, $a:expr) => {
        f_comm($a)
    };
}

/// A blocking collective and its `I` form from one argument list (`kind`
/// per argument, see [`conv!`]) and the C wrappers' fill function; `comm`
/// names the communicator argument.
macro_rules! collective {
    ($fill:ident: $name:ident $upper:literal $op:expr; $iname:ident $iupper:literal $iop:expr; $ts:ident; $comm:ident; ($($a:ident: $k:ident),+)) => {
        fortran!($name, $upper, $ts, ($($a,)+ ierror), |c| {
            let iface = c.iface;
            $(let $a = conv!($k, iface, $a);)+
            let rc = if crate::ffi::yield_collectives(c.tracer) {
                c.yield_via(&$iname::FWD, N - 1, std::ptr::null_mut())
            } else {
                c.forward()
            };
            c.record($op, rc, |t, ev| $fill(t, ev, $($a),+));
        });
        fortran!($iname, $iupper, $ts, ($($a,)+ request, ierror), |c| {
            let iface = c.iface;
            $(let $a = conv!($k, iface, $a);)+
            let rc = c.forward();
            let req = (rc == 0).then(|| f_req(request));
            c.record($iop, rc, |t, ev| {
                $fill(t, ev, $($a),+);
                ev.req = new_req(t, req, false, false, $comm);
            });
        });
    };
}

collective!(fill_barrier: barrier "MPI_BARRIER" Op::Barrier; ibarrier "MPI_IBARRIER" Op::Ibarrier; plain; comm;
    (comm: Comm));
collective!(fill_bcast: bcast "MPI_BCAST" Op::Bcast; ibcast "MPI_IBCAST" Op::Ibcast; ts; comm;
    (buffer: Buf, count: Int, datatype: Dt, root: Int, comm: Comm));
collective!(fill_reduce: reduce "MPI_REDUCE" Op::Reduce; ireduce "MPI_IREDUCE" Op::Ireduce; ts; comm;
    (sendbuf: Buf, recvbuf: Buf, count: Int, datatype: Dt, op: Op, root: Int, comm: Comm));
collective!(fill_allreduce: allreduce "MPI_ALLREDUCE" Op::Allreduce; iallreduce "MPI_IALLREDUCE" Op::Iallreduce; ts; comm;
    (sendbuf: Buf, recvbuf: Buf, count: Int, datatype: Dt, op: Op, comm: Comm));
collective!(fill_allreduce: scan "MPI_SCAN" Op::Scan; iscan "MPI_ISCAN" Op::Iscan; ts; comm;
    (sendbuf: Buf, recvbuf: Buf, count: Int, datatype: Dt, op: Op, comm: Comm));
collective!(fill_allreduce: exscan "MPI_EXSCAN" Op::Exscan; iexscan "MPI_IEXSCAN" Op::Iexscan; ts; comm;
    (sendbuf: Buf, recvbuf: Buf, count: Int, datatype: Dt, op: Op, comm: Comm));
collective!(fill_gather: gather "MPI_GATHER" Op::Gather; igather "MPI_IGATHER" Op::Igather; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, root: Int, comm: Comm));
collective!(fill_scatter: scatter "MPI_SCATTER" Op::Scatter; iscatter "MPI_ISCATTER" Op::Iscatter; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, root: Int, comm: Comm));
collective!(fill_allgather: allgather "MPI_ALLGATHER" Op::Allgather; iallgather "MPI_IALLGATHER" Op::Iallgather; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, comm: Comm));
collective!(fill_allgather: alltoall "MPI_ALLTOALL" Op::Alltoall; ialltoall "MPI_IALLTOALL" Op::Ialltoall; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, comm: Comm));
collective!(fill_gatherv: gatherv "MPI_GATHERV" Op::Gatherv; igatherv "MPI_IGATHERV" Op::Igatherv; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcounts: Ints, displs: Ints, recvtype: Dt, root: Int, comm: Comm));
collective!(fill_scatterv: scatterv "MPI_SCATTERV" Op::Scatterv; iscatterv "MPI_ISCATTERV" Op::Iscatterv; ts; comm;
    (sendbuf: Buf, sendcounts: Ints, displs: Ints, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, root: Int, comm: Comm));
collective!(fill_allgatherv: allgatherv "MPI_ALLGATHERV" Op::Allgatherv; iallgatherv "MPI_IALLGATHERV" Op::Iallgatherv; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcounts: Ints, displs: Ints, recvtype: Dt, comm: Comm));
collective!(fill_alltoallv: alltoallv "MPI_ALLTOALLV" Op::Alltoallv; ialltoallv "MPI_IALLTOALLV" Op::Ialltoallv; ts; comm;
    (sendbuf: Buf, sendcounts: Ints, sdispls: Ints, sendtype: Dt, recvbuf: Buf, recvcounts: Ints, rdispls: Ints, recvtype: Dt, comm: Comm));
// Neighbourhood collectives (their count lists sized by the topology's
// degrees, as in C). `Neighbor_alltoallw`'s `MPI_ADDRESS_KIND`
// displacements are left to the C entry point (MPICH's Fortran binding
// reaches it; Open MPI's does not).
collective!(fill_allgather: neighbor_allgather "MPI_NEIGHBOR_ALLGATHER" Op::NeighborAllgather; ineighbor_allgather "MPI_INEIGHBOR_ALLGATHER" Op::IneighborAllgather; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, comm: Comm));
collective!(fill_allgather: neighbor_alltoall "MPI_NEIGHBOR_ALLTOALL" Op::NeighborAlltoall; ineighbor_alltoall "MPI_INEIGHBOR_ALLTOALL" Op::IneighborAlltoall; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcount: Int, recvtype: Dt, comm: Comm));
collective!(fill_allgatherv: neighbor_allgatherv "MPI_NEIGHBOR_ALLGATHERV" Op::NeighborAllgatherv; ineighbor_allgatherv "MPI_INEIGHBOR_ALLGATHERV" Op::IneighborAllgatherv; ts; comm;
    (sendbuf: Buf, sendcount: Int, sendtype: Dt, recvbuf: Buf, recvcounts: Ints, displs: Ints, recvtype: Dt, comm: Comm));
collective!(fill_alltoallv: neighbor_alltoallv "MPI_NEIGHBOR_ALLTOALLV" Op::NeighborAlltoallv; ineighbor_alltoallv "MPI_INEIGHBOR_ALLTOALLV" Op::IneighborAlltoallv; ts; comm;
    (sendbuf: Buf, sendcounts: Ints, sdispls: Ints, sendtype: Dt, recvbuf: Buf, recvcounts: Ints, rdispls: Ints, recvtype: Dt, comm: Comm));
collective!(fill_reduce_scatter: reduce_scatter "MPI_REDUCE_SCATTER" Op::ReduceScatter; ireduce_scatter "MPI_IREDUCE_SCATTER" Op::IreduceScatter; ts; comm;
    (sendbuf: Buf, recvbuf: Buf, recvcounts: Ints, datatype: Dt, op: Op, comm: Comm));
collective!(fill_reduce_scatter_block: reduce_scatter_block "MPI_REDUCE_SCATTER_BLOCK" Op::ReduceScatterBlock; ireduce_scatter_block "MPI_IREDUCE_SCATTER_BLOCK" Op::IreduceScatterBlock; ts; comm;
    (sendbuf: Buf, recvbuf: Buf, recvcount: Int, datatype: Dt, op: Op, comm: Comm));

/// The C datatypes of an Alltoallw type array (`n` entries; none when the
/// array is not significant).
///
/// # Safety
/// When `significant`, `p` must point to `n` datatype handles.
unsafe fn f_types(p: P, n: c_int, significant: bool) -> Vec<MPI_Datatype> {
    if !significant {
        return Vec::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { fints(p, n) }
        .into_iter()
        // SAFETY: MPI_Type_f2c accepts any value.
        .map(|h| unsafe { RSMPI_Type_f2c(h) })
        .collect()
}

/// Alltoallw and Ialltoallw: the fill reads the datatype arrays, so they
/// are converted (the send side only when it is significant, i.e. not
/// `MPI_IN_PLACE`).
///
/// Alltoallw has no yielding form: Open MPI 4.1's Fortran MPI_IALLTOALLW
/// frees its converted datatype arrays before the operation completes,
/// which crashes the test loop when the types are derived ones.
macro_rules! alltoallw {
    ($name:ident, $upper:literal, $op:expr, ($($request:ident)?)) => {
        fortran!($name, $upper, ts, (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, $($request,)? ierror), |c| {
            let iface = c.iface;
            let (sb, rb, cm) = (iface.buf(sendbuf), iface.buf(recvbuf), f_comm(comm));
            let n = comm_size(cm);
            let sts = f_types(sendtypes, n, sb as usize != consts().in_place);
            let rts = f_types(recvtypes, n, true);
            let rc = c.forward();
            let req: Option<Option<MPI_Request>> = None $(.or(Some((rc == 0).then(|| f_req($request)))))?;
            c.record($op, rc, |t, ev| {
                fill_alltoallw(t, ev, sb, ints_arg(sendcounts), ints_arg(sdispls), sts.as_ptr(), rb, ints_arg(recvcounts), ints_arg(rdispls), rts.as_ptr(), cm);
                if let Some(req) = req {
                    ev.req = new_req(t, req, false, false, cm);
                }
            });
        });
    };
}
alltoallw!(alltoallw, "MPI_ALLTOALLW", Op::Alltoallw, ());
alltoallw!(ialltoallw, "MPI_IALLTOALLW", Op::Ialltoallw, (request));

// ------------------------------------------- communicators and topologies

fortran!(
    comm_dup,
    "MPI_COMM_DUP",
    plain,
    (comm, newcomm, ierror),
    |c| {
        let cm = f_comm(comm);
        let rc = c.forward();
        let nc = f_created(rc, newcomm);
        c.record(Op::CommDup, rc, |t, ev| fill_comm_dup(t, ev, cm, nc));
    }
);

fortran!(
    comm_split,
    "MPI_COMM_SPLIT",
    plain,
    (comm, color, key, newcomm, ierror),
    |c| {
        let (cm, col, k) = (f_comm(comm), int(color), int(key));
        let rc = c.forward();
        let nc = f_created(rc, newcomm);
        c.record(Op::CommSplit, rc, |t, ev| {
            fill_comm_split(t, ev, cm, col, k, nc)
        });
    }
);

fortran!(
    comm_split_type,
    "MPI_COMM_SPLIT_TYPE",
    plain,
    (comm, split_type, key, info, newcomm, ierror),
    |c| {
        let (cm, st, k) = (f_comm(comm), int(split_type), int(key));
        let rc = c.forward();
        let nc = f_created(rc, newcomm);
        c.record(Op::CommSplitType, rc, |t, ev| {
            fill_comm_split_type(t, ev, cm, st, k, nc)
        });
    }
);

fortran!(
    comm_create,
    "MPI_COMM_CREATE",
    plain,
    (comm, group, newcomm, ierror),
    |c| {
        let (cm, g) = (f_comm(comm), f_group(group));
        let rc = c.forward();
        let nc = f_created(rc, newcomm);
        c.record(Op::CommCreate, rc, |t, ev| {
            fill_comm_create(t, ev, cm, g, nc)
        });
    }
);

fortran!(
    intercomm_create,
    "MPI_INTERCOMM_CREATE",
    plain,
    (
        local_comm,
        local_leader,
        peer_comm,
        remote_leader,
        tag,
        newintercomm,
        ierror
    ),
    |c| {
        let (lc, ll, rl, tg) = (
            f_comm(local_comm),
            int(local_leader),
            int(remote_leader),
            int(tag),
        );
        let pc = f_comm(peer_comm);
        let rc = c.forward();
        let nc = f_created(rc, newintercomm);
        c.record(Op::IntercommCreate, rc, |t, ev| {
            fill_intercomm_create(t, ev, lc, ll, pc, rl, tg, nc)
        });
    }
);

fortran!(
    intercomm_merge,
    "MPI_INTERCOMM_MERGE",
    plain,
    (intercomm, high, newintracomm, ierror),
    |c| {
        let (ic, hi) = (f_comm(intercomm), int(high));
        let rc = c.forward();
        let nc = f_created(rc, newintracomm);
        c.record(Op::IntercommMerge, rc, |t, ev| {
            fill_intercomm_merge(t, ev, ic, hi, nc)
        });
    }
);

fortran!(comm_free, "MPI_COMM_FREE", plain, (comm, ierror), |c| {
    // Read before the call: it frees the handle.
    let before = comm_free_before(c.tracer, f_comm(comm));
    let rc = c.forward();
    c.record(Op::CommFree, rc, |t, ev| fill_comm_free(t, ev, rc, before));
});

fortran!(
    cart_create,
    "MPI_CART_CREATE",
    plain,
    (comm_old, ndims, dims, periods, reorder, comm_cart, ierror),
    |c| {
        let (cm, nd, re) = (f_comm(comm_old), int(ndims), int(reorder));
        let rc = c.forward();
        let nc = f_created(rc, comm_cart);
        c.record(Op::CartCreate, rc, |t, ev| {
            fill_cart_create(t, ev, cm, nd, ints_arg(dims), ints_arg(periods), re, nc)
        });
    }
);

fortran!(
    cart_sub,
    "MPI_CART_SUB",
    plain,
    (comm, remain_dims, newcomm, ierror),
    |c| {
        let cm = f_comm(comm);
        let nd = cartdim(cm);
        let rc = c.forward();
        let nc = f_created(rc, newcomm);
        c.record(Op::CartSub, rc, |t, ev| {
            fill_cart_sub(t, ev, cm, nd, ints_arg(remain_dims), nc)
        });
    }
);

fortran!(
    graph_create,
    "MPI_GRAPH_CREATE",
    plain,
    (comm_old, nnodes, index, edges, reorder, comm_graph, ierror),
    |c| {
        let (cm, nn, re) = (f_comm(comm_old), int(nnodes), int(reorder));
        let rc = c.forward();
        let nc = f_created(rc, comm_graph);
        c.record(Op::GraphCreate, rc, |t, ev| {
            fill_graph_create(t, ev, cm, nn, ints_arg(index), ints_arg(edges), re, nc)
        });
    }
);

fortran!(
    dist_graph_create,
    "MPI_DIST_GRAPH_CREATE",
    plain,
    (
        comm_old,
        n,
        sources,
        degrees,
        destinations,
        weights,
        info,
        reorder,
        comm_dist_graph,
        ierror
    ),
    |c| {
        let (cm, nn, re) = (f_comm(comm_old), int(n), int(reorder));
        let rc = c.forward();
        let nc = f_created(rc, comm_dist_graph);
        c.record(Op::DistGraphCreate, rc, |t, ev| {
            fill_dist_graph_create(
                t,
                ev,
                cm,
                nn,
                ints_arg(sources),
                ints_arg(degrees),
                ints_arg(destinations),
                re,
                nc,
            );
        });
    }
);

fortran!(
    dist_graph_create_adjacent,
    "MPI_DIST_GRAPH_CREATE_ADJACENT",
    plain,
    (
        comm_old,
        indegree,
        sources,
        sourceweights,
        outdegree,
        destinations,
        destweights,
        info,
        reorder,
        comm_dist_graph,
        ierror
    ),
    |c| {
        let (cm, ind, outd, re) = (
            f_comm(comm_old),
            int(indegree),
            int(outdegree),
            int(reorder),
        );
        let rc = c.forward();
        let nc = f_created(rc, comm_dist_graph);
        c.record(Op::DistGraphCreateAdjacent, rc, |t, ev| {
            fill_dist_graph_create_adjacent(
                t,
                ev,
                cm,
                ind,
                ints_arg(sources),
                outd,
                ints_arg(destinations),
                re,
                nc,
            );
        });
    }
);
