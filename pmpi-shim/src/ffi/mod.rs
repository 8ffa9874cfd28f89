//! The FFI membrane: everything that knows the MPI ABI lives below this
//! module. It turns handles into stable ids, sentinels into flags and calls
//! into [`trace::Event`]s, then hands the event to the tracer.

// The entry-point macros of the C wrappers (`c`, `onesided`), defined
// before the modules that use them.

/// Defines one C entry point. `$body` runs only when the call is traced; it
/// must call PMPI with the same arguments and record the event.
macro_rules! entry {
    ($name:ident, $pmpi:ident, ($($a:ident : $t:ty),* $(,)?), |$s:ident| $body:block) => {
        #[doc = concat!("Interposes `", stringify!($name), "`: records the call, then forwards to `", stringify!($pmpi), "`.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            let ret = return_address!();
            let Some($s) = Scope::enter(ret) else {
                // SAFETY: the application's arguments go unchanged to the
                // library's own implementation, exactly as without the shim.
                return unsafe { $pmpi($($a),*) };
            };
            #[allow(unused_unsafe)]
            // SAFETY: the body forwards the application's arguments
            // unchanged to PMPI and reads only the arguments the standard
            // says are significant for this call, after or before the call
            // as MPI allows (see the module documentation).
            unsafe { $body }
        }
    };
}

/// Emits the entry points a `$forms` macro defines, and once more for
/// MPI 4's large-count bindings, where the MPI has them (MPICH 4; not Open MPI
/// 4.1): every name before the `;` gets `_c`, and `Cnt` and `Disp` in the
/// argument lists become `MPI_Count` and `MPI_Aint`. The other arguments
/// and the recorded operation stay those of the `int` twin: a `_c` call
/// records the same event, with its 64-bit counts kept whole.
macro_rules! with_large_twin {
    ($forms:ident! { $($name:ident),+ ; $($rest:tt)* }) => {
        $forms!($($name),+ ; $($rest)*);
        #[cfg(rankscale_mpi4)]
        const _: () = {
            // Each twin uses the aliases its argument list names.
            #[allow(dead_code)]
            type Cnt = MPI_Count;
            #[allow(dead_code)]
            type Disp = MPI_Aint;
            paste::paste! { $forms!($([<$name _c>]),+ ; $($rest)*); }
        };
    };
}

pub(crate) mod c;
pub(crate) mod finalize;
pub(crate) mod fortran;
pub(crate) mod generic;
pub(crate) mod io;
pub(crate) mod onesided;
#[cfg(rankscale_mpi4)]
pub(crate) mod session;

use std::ffi::c_int;
use std::sync::{Arc, OnceLock};

use mpi_sys::*;
use trace::{CommCreate, CommId, MpiLibrary, ReduceOp, Tag, Transfer};

use crate::tracer::{self, CommInfo, Kind, Tracer};

pub(crate) use mpi_helpers::{
    library_version, rs_bottom, rs_f_status_size, rs_in_place, rs_op_maxloc, rs_op_minloc,
    rs_op_no_op, rs_op_replace, rs_root, rs_type_code,
};

/// Whether yield mode issues a blocking collective in its nonblocking form.
/// Not on Open MPI: version 4.1 agrees on new communicators with nonblocking
/// allreduces whose libnbc tags run through the fixed tags of
/// `MPI_Dist_graph_create`, so nonblocking collectives the application did
/// not call can hang its later `MPI_Dist_graph_create` (seen with three
/// extra `MPI_Ibarrier` calls). Open MPI yields in blocking calls with its
/// own `mpi_yield_when_idle`.
pub(crate) fn yield_collectives(t: &Tracer) -> bool {
    t.config.yield_wait && library() != MpiLibrary::OpenMpi
}

/// The MPI library, asked once.
pub(crate) fn library() -> MpiLibrary {
    static LIB: OnceLock<MpiLibrary> = OnceLock::new();
    *LIB.get_or_init(|| MpiLibrary::of(&library_version()))
}

/// An MPI handle as an opaque map key. MPICH handles are `int`s and Open MPI
/// handles are pointers; both fit in a `usize`.
pub(crate) trait Key: Copy {
    /// The key.
    fn key(self) -> usize;
}

macro_rules! impl_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            #[inline]
            fn key(self) -> usize {
                const N: usize = std::mem::size_of::<$t>();
                // SAFETY: MPI handle types are plain integers (MPICH) or raw
                // pointers (Open MPI) wrapped in a newtype: exactly N bytes
                // without padding or invalid bit patterns, so reading them
                // as an unsigned integer of the same size is sound.
                unsafe {
                    match N {
                        4 => std::mem::transmute_copy::<$t, u32>(&self) as usize,
                        8 => std::mem::transmute_copy::<$t, u64>(&self) as usize,
                        _ => unreachable!("MPI handles are 4 or 8 bytes"),
                    }
                }
            }
        }
    )*};
}
impl_key!(
    MPI_Comm,
    MPI_Win,
    MPI_File,
    MPI_Request,
    MPI_Message,
    MPI_Datatype,
    MPI_Op,
    MPI_Group
);

/// Values of MPI constants, read once (some are link-time symbols in Open
/// MPI and macros in MPICH, so they are not Rust constants).
pub(crate) struct Consts {
    pub in_place: usize,
    pub bottom: usize,
    pub any_source: c_int,
    pub any_tag: c_int,
    pub proc_null: c_int,
    /// `MPI_ROOT`.
    pub root: c_int,
    pub undefined: c_int,
    pub comm_null: usize,
    pub comm_self: usize,
    pub request_null: usize,
    pub message_null: usize,
    pub message_no_proc: usize,
    pub datatype_null: usize,
    pub status_ignore: usize,
    pub statuses_ignore: usize,
    /// `MPI_STATUS_SIZE`: the INTEGERs of a Fortran status, which has the
    /// layout of `MPI_Status` on both implementations.
    pub f_status_size: usize,
    ops: [(usize, ReduceOp); 14],
}

/// The MPI constants.
pub(crate) fn consts() -> &'static Consts {
    static C: OnceLock<Consts> = OnceLock::new();
    C.get_or_init(|| {
        // SAFETY: the RSMPI_* statics are initialised constants of mpi-sys's
        // C shim and the rs_* helpers only return MPI constants; none of
        // them has preconditions.
        unsafe {
            Consts {
                in_place: rs_in_place() as usize,
                bottom: rs_bottom() as usize,
                any_source: RSMPI_ANY_SOURCE,
                any_tag: RSMPI_ANY_TAG,
                proc_null: RSMPI_PROC_NULL,
                root: rs_root(),
                undefined: RSMPI_UNDEFINED,
                comm_null: RSMPI_COMM_NULL.key(),
                comm_self: RSMPI_COMM_SELF.key(),
                request_null: RSMPI_REQUEST_NULL.key(),
                message_null: RSMPI_MESSAGE_NULL.key(),
                message_no_proc: RSMPI_MESSAGE_NO_PROC.key(),
                datatype_null: RSMPI_DATATYPE_NULL.key(),
                status_ignore: RSMPI_STATUS_IGNORE as usize,
                statuses_ignore: RSMPI_STATUSES_IGNORE as usize,
                f_status_size: usize::try_from(rs_f_status_size()).unwrap_or(6),
                ops: [
                    (RSMPI_MAX.key(), ReduceOp::Max),
                    (RSMPI_MIN.key(), ReduceOp::Min),
                    (RSMPI_SUM.key(), ReduceOp::Sum),
                    (RSMPI_PROD.key(), ReduceOp::Prod),
                    (RSMPI_LAND.key(), ReduceOp::Land),
                    (RSMPI_BAND.key(), ReduceOp::Band),
                    (RSMPI_LOR.key(), ReduceOp::Lor),
                    (RSMPI_BOR.key(), ReduceOp::Bor),
                    (RSMPI_LXOR.key(), ReduceOp::Lxor),
                    (RSMPI_BXOR.key(), ReduceOp::Bxor),
                    (rs_op_maxloc().key(), ReduceOp::Maxloc),
                    (rs_op_minloc().key(), ReduceOp::Minloc),
                    (rs_op_replace().key(), ReduceOp::Replace),
                    (rs_op_no_op().key(), ReduceOp::NoOp),
                ],
            }
        }
    })
}

/// The event model's name for a reduction operation handle.
pub(crate) fn redop(op: MPI_Op) -> ReduceOp {
    let k = op.key();
    consts()
        .ops
        .iter()
        .find(|(h, _)| *h == k)
        .map_or(ReduceOp::Other, |(_, o)| *o)
}

/// `MPI_Type_size` of a datatype; 0 for `MPI_DATATYPE_NULL` or on error.
pub(crate) fn dsize(dt: MPI_Datatype) -> i64 {
    if dt.key() == consts().datatype_null {
        return 0;
    }
    let mut s: c_int = 0;
    // SAFETY: `dt` is a datatype handle the application passed to MPI for a
    // significant argument; PMPI_Type_size only writes the int out-param.
    let rc = unsafe { PMPI_Type_size(dt, &mut s) };
    if rc == 0 { i64::from(s) } else { 0 }
}

/// Which datatype `dt` is (see [`trace::Datatype`]): compared against
/// every predefined handle once per handle and thread, then remembered,
/// since a call site nearly always passes the same type.
pub(crate) fn dtype(dt: MPI_Datatype) -> trace::Datatype {
    thread_local! {
        static LAST: std::cell::Cell<(usize, u8)> = const { std::cell::Cell::new((usize::MAX, 0)) };
    }
    let k = dt.key();
    let (last, code) = LAST.with(std::cell::Cell::get);
    if last == k {
        return trace::Datatype(code);
    }
    // SAFETY: rs_type_code only compares `dt` with the predefined handles
    // of mpi.h; it calls no MPI function.
    let code = u8::try_from(unsafe { rs_type_code(dt) }).unwrap_or(255);
    LAST.with(|c| c.set((k, code)));
    trace::Datatype(code)
}

/// The rank → world-rank table of a communicator (`None` for the world
/// itself). For an inter-communicator, peers are ranks of the remote group.
fn world_map(comm: MPI_Comm) -> Option<Box<[i32]>> {
    if comm.key() == world().key() {
        return None;
    }
    // SAFETY: `comm` is a valid communicator (just created by MPI or given
    // by the application to an MPI call that accepted it); the group it
    // returns is freed by `take_group_map`.
    let group = unsafe {
        let mut inter: c_int = 0;
        PMPI_Comm_test_inter(comm, &mut inter);
        let mut group = RSMPI_GROUP_NULL;
        if inter != 0 {
            PMPI_Comm_remote_group(comm, &mut group);
        } else {
            PMPI_Comm_group(comm, &mut group);
        }
        group
    };
    Some(take_group_map(group))
}

/// The world ranks of a group's members in rank order, and frees the
/// group (a window's, or a communicator's).
pub(crate) fn take_group_map(mut group: MPI_Group) -> Box<[i32]> {
    let out = group_members(group);
    // SAFETY: a group MPI just returned to the shim, freed once.
    unsafe { PMPI_Group_free(&mut group) };
    out.into_boxed_slice()
}

/// The tracer's view of a window or file handle `key`: registered at its
/// constructor, or on first use for one made before tracing started, from
/// `group` (its group as world ranks in rank order, and this process's
/// rank in it).
pub(crate) fn handle_info(
    t: &Tracer,
    key: usize,
    kind: Kind,
    group: impl FnOnce() -> (Box<[i32]>, i32),
) -> Arc<CommInfo> {
    if let Some(info) = t.comm(key) {
        return info;
    }
    let (map, me) = group();
    let id = t.reserve_comm();
    t.bind(
        key,
        me,
        CommInfo {
            id,
            to_world: Some(map),
            kind,
        },
    );
    t.comm(key).unwrap_or_else(|| {
        Arc::new(CommInfo {
            id: CommId(u32::MAX),
            to_world: None,
            kind,
        })
    })
}

/// Registers the window or file `key` a constructor made over `comm_h`
/// (its group is the communicator's): the constructor's event names the
/// communicator and creates the new id, of the communicator's size.
pub(crate) fn bind_made_over(
    t: &Tracer,
    ev: &mut trace::Event,
    comm_h: MPI_Comm,
    key: usize,
    kind: Kind,
) {
    let info = comm(t, comm_h);
    ev.comm = info.id;
    let me = t.comm_rank(info.id);
    let id = t.reserve_comm();
    let n = comm_size(comm_h);
    t.bind(
        key,
        me,
        CommInfo {
            id,
            to_world: info.to_world.clone(),
            kind,
        },
    );
    ev.create = Some(Box::new(CommCreate::new(Some(id), n)));
}

/// The tracer's view of a communicator handle. A communicator created by a
/// call the shim does not wrap (e.g. `MPI_Intercomm_create`) is registered
/// on first use, so its events are still recorded with world peers.
pub(crate) fn comm(t: &Tracer, comm: MPI_Comm) -> Arc<CommInfo> {
    let k = comm.key();
    if let Some(info) = t.comm(k) {
        return info;
    }
    t.add_comm(Some(k), world_map(comm), comm_rank(comm));
    t.comm(k).unwrap_or_else(|| {
        Arc::new(CommInfo {
            id: CommId(u32::MAX),
            to_world: None,
            kind: Kind::Comm,
        })
    })
}

/// Registers a communicator returned by a constructor and fills in the
/// common part of its lineage record.
pub(crate) fn new_comm(t: &Tracer, newcomm: MPI_Comm) -> CommCreate {
    let c = consts();
    let (key, map, size, me) = if newcomm.key() == c.comm_null {
        (None, None, 0, -1)
    } else {
        let mut size: c_int = 0;
        // SAFETY: a non-null communicator just returned by MPI.
        unsafe { PMPI_Comm_size(newcomm, &mut size) };
        (
            Some(newcomm.key()),
            world_map(newcomm),
            size,
            comm_rank(newcomm),
        )
    };
    let id = t.add_comm(key, map, me);
    CommCreate::new(key.map(|_| id), size)
}

/// World ranks of a group's members (for `MPI_Comm_create`).
pub(crate) fn group_members(group: MPI_Group) -> Vec<i32> {
    // SAFETY: the world's group, handed to `ranks_in`, which frees it.
    let world_group = unsafe {
        let mut g = RSMPI_GROUP_NULL;
        PMPI_Comm_group(world(), &mut g);
        g
    };
    ranks_in(group, world_group)
}

/// The ranks in `into` of `group`'s members, in `group`'s rank order
/// (empty for an empty or invalid group); frees `into`, a group the shim
/// made for the question (the world's, a window's).
pub(crate) fn ranks_in(group: MPI_Group, mut into: MPI_Group) -> Vec<i32> {
    // SAFETY: `group` is a group the application passed to a call MPI
    // accepted and `into` a valid group of the shim's own, freed once;
    // arrays are sized by `group`'s size.
    unsafe {
        let mut n: c_int = 0;
        let out = if PMPI_Group_size(group, &mut n) != 0 || n <= 0 {
            Vec::new()
        } else {
            let ranks: Vec<c_int> = (0..n).collect();
            let mut out = vec![0 as c_int; ranks.len()];
            PMPI_Group_translate_ranks(group, n, ranks.as_ptr(), into, out.as_mut_ptr());
            out
        };
        PMPI_Group_free(&mut into);
        out
    }
}

/// A count as an MPI binding passes it: `int` in the classic bindings,
/// `MPI_Count` in MPI 4's large-count (`_c`) ones. One trait, so that a
/// `_c` function is filled by the same code as its `int` twin and records
/// the same event, with its 64-bit counts kept whole.
pub(crate) trait Count: Copy {
    /// The count, widened to the event model's 64 bits.
    fn wide(self) -> i64;
}

impl Count for c_int {
    fn wide(self) -> i64 {
        i64::from(self)
    }
}

/// `MPI_Count` (and `MPI_Aint`), `long long` and `long` in C: both `i64`
/// on the 64-bit platforms the shim builds for.
impl Count for i64 {
    fn wide(self) -> i64 {
        self
    }
}

/// A transfer descriptor for a point-to-point argument list.
pub(crate) fn xfer(
    info: &CommInfo,
    peer: c_int,
    tag: c_int,
    count: impl Count,
    dt: MPI_Datatype,
) -> Transfer {
    let c = consts();
    Transfer {
        peer: info.peer(peer, c.any_source, c.proc_null),
        tag: if tag == c.any_tag {
            Tag::Any
        } else {
            Tag::Value(tag)
        },
        count: count.wide(),
        dsize: dsize(dt),
        dtype: dtype(dt),
    }
}

/// A transfer descriptor for a collective buffer (no peer, no tag).
pub(crate) fn coll(count: impl Count, dt: MPI_Datatype) -> Transfer {
    Transfer::collective(count.wide(), dsize(dt)).typed(dtype(dt))
}

/// Whether a receive posted with these arguments is a wildcard whose
/// outcome must be recorded.
pub(crate) fn is_wildcard(source: c_int, tag: c_int) -> bool {
    let c = consts();
    // A receive from MPI_PROC_NULL matches nothing, whatever its tag.
    source != c.proc_null && (source == c.any_source || tag == c.any_tag)
}

/// A C array argument as a slice: empty for a null pointer or a count
/// that is not positive (MPI ignores the array then).
///
/// # Safety
/// `p` must be null or point to at least `n` readable elements that stay
/// valid and unchanged while the slice lives.
pub(crate) unsafe fn c_array<'a, T>(p: *const T, n: c_int) -> &'a [T] {
    let n = usize::try_from(n).unwrap_or(0);
    if p.is_null() || n == 0 {
        return &[];
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(p, n) }
}

/// Copies `n` ints from a C array; empty for a null pointer or a negative n.
///
/// # Safety
/// `p` must be null or point to at least `n` readable ints.
pub(crate) unsafe fn ints(p: *const c_int, n: c_int) -> Vec<i32> {
    // SAFETY: guaranteed by the caller.
    unsafe { c_array(p, n) }.to_vec()
}

/// Copies `n` counts (`int` or `MPI_Count`) from a C array, widened;
/// empty for a null pointer or a negative n.
///
/// # Safety
/// `p` must be null or point to at least `n` readable counts.
pub(crate) unsafe fn counts<C: Count>(p: *const C, n: c_int) -> Vec<i64> {
    // SAFETY: guaranteed by the caller.
    unsafe { c_array(p, n) }.iter().map(|c| c.wide()).collect()
}

/// The size of a communicator (the length of v-collective count arrays).
/// For an inter-communicator it is the remote group's size.
pub(crate) fn comm_size(comm: MPI_Comm) -> c_int {
    let mut n: c_int = 0;
    let inter = is_inter(comm);
    // SAFETY: `comm` is a communicator the application passed to a
    // collective; both calls only write their int out-param.
    unsafe {
        if inter {
            PMPI_Comm_remote_size(comm, &mut n);
        } else {
            PMPI_Comm_size(comm, &mut n);
        }
    }
    n
}

/// Whether a communicator is an inter-communicator.
pub(crate) fn is_inter(comm: MPI_Comm) -> bool {
    let mut inter: c_int = 0;
    // SAFETY: `comm` is a communicator the application passed to MPI;
    // the call only writes its int out-param.
    unsafe { PMPI_Comm_test_inter(comm, &mut inter) };
    inter != 0
}

/// The error class of a call's non-zero return code, which the trace keeps
/// ([`trace::Event::error`]): codes are the implementation's own, classes
/// are the standard's. A code MPI cannot classify stays as it is.
pub(crate) fn error_class(rc: c_int) -> i32 {
    let mut class: c_int = rc;
    // SAFETY: `MPI_Error_class` is local and only writes its int out-param;
    // it may be called after an error, and on failure `class` keeps `rc`.
    if unsafe { PMPI_Error_class(rc, &mut class) } != 0 {
        return rc;
    }
    class
}

/// This process's rank in a communicator.
pub(crate) fn comm_rank(comm: MPI_Comm) -> c_int {
    let mut r: c_int = 0;
    // SAFETY: valid communicator; writes the int out-param only.
    unsafe { PMPI_Comm_rank(comm, &mut r) };
    r
}

/// The tracer's world: `MPI_COMM_WORLD`, or in a program that never calls
/// `MPI_Init` (MPI 4 sessions) the tracer's own communicator over the
/// `mpi://WORLD` process set ([`session`]). World ranks are ranks in it.
pub(crate) fn world() -> MPI_Comm {
    #[cfg(rankscale_mpi4)]
    if let Some(w) = session::world() {
        return w;
    }
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_COMM_WORLD }
}

/// Installs the tracer after a successful `PMPI_Init`/`PMPI_Init_thread`
/// (or the first `MPI_Session_init` of a program without it).
pub(crate) fn start_tracer() {
    let c = consts();
    let rank = comm_rank(world());
    // `MPI_COMM_SELF` exists only after `MPI_Init`: a sessions-only
    // program's rank is alone in it all the same.
    #[cfg(rankscale_mpi4)]
    let self_map = if session::world().is_some() {
        Some(vec![rank].into_boxed_slice())
    } else {
        // SAFETY: reading an initialised mpi-sys constant.
        world_map(unsafe { RSMPI_COMM_SELF })
    };
    // SAFETY: reading an initialised mpi-sys constant.
    #[cfg(not(rankscale_mpi4))]
    let self_map = world_map(unsafe { RSMPI_COMM_SELF });
    let mut size: c_int = 0;
    // SAFETY: a valid communicator; writes the int out-param only.
    unsafe { PMPI_Comm_size(world(), &mut size) };
    let job = tracer::Job {
        world_size: u32::try_from(size).unwrap_or(0),
        mpi: library_version(),
    };
    let mut config = crate::config::Config::from_env();
    // Yielding keeps ranks that share cores from busy-polling against one
    // another: a job of one rank has no other. (And MPICH 4.0.2 crashes in
    // `MPI_Test` in a one-process job that a session started, where
    // blocking calls do not.)
    config.yield_wait &= size > 1;
    let t = tracer::install(
        rank,
        job,
        config,
        CommInfo {
            id: CommId::WORLD,
            to_world: None,
            kind: Kind::Comm,
        },
        CommInfo {
            id: CommId::SELF,
            to_world: self_map,
            kind: Kind::Comm,
        },
        [world().key(), c.comm_self],
        error_class,
    );
    // Snapshots of the compressed trace, when there is one.
    if let Some(t) = t.filter(|t| t.config.trace_file.is_some()) {
        t.set_snapshots(crate::snapshot::start(t));
    }
}

/// Sleeps between two tests of the yielding wait mode.
pub(crate) fn nap(us: u64) {
    std::thread::sleep(std::time::Duration::from_micros(us));
}
