//! Communicators: the table a rank's replay threads share, the
//! constructors and `Comm_free` replayed from the lineage the trace
//! recorded, and the translation of the trace's world ranks into a
//! communicator's ranks.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use mpi_sys::*;
use trace::{CommCreate, CommId, Event, Op};

use super::{Replayer, check};

/// A communicator handle that may cross threads: under
/// `MPI_THREAD_MULTIPLE` every thread of a process may use it.
#[derive(Clone, Copy)]
struct SharedComm(MPI_Comm);

// SAFETY: MPI handles are process-wide; the replay only starts threads
// after MPI granted MPI_THREAD_MULTIPLE, under which any thread may use a
// communicator. Creation and freeing are ordered by `Progress`.
unsafe impl Send for SharedComm {}

/// The communicators of a rank by trace id, shared by its replay threads.
#[derive(Clone)]
pub(super) struct Comms(Arc<Mutex<HashMap<u32, SharedComm>>>);

impl Comms {
    /// The table at the start: the world and self communicators.
    pub(super) fn new(world: MPI_Comm, selfc: MPI_Comm) -> Self {
        Comms(Arc::new(Mutex::new(HashMap::from([
            (CommId::WORLD.0, SharedComm(world)),
            (CommId::SELF.0, SharedComm(selfc)),
        ]))))
    }

    /// The communicator of trace id `id`, if it exists at this point.
    pub(super) fn get(&self, id: u32) -> Option<MPI_Comm> {
        self.0.lock().ok()?.get(&id).map(|c| c.0)
    }

    /// Enters a communicator the replay created.
    fn insert(&self, id: u32, c: MPI_Comm) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, SharedComm(c));
        }
    }

    /// Enters a communicator a nonblocking constructor made, once it
    /// completed (`MPI_COMM_NULL`: nothing).
    pub(super) fn insert_made(&self, id: u32, c: MPI_Comm) {
        // SAFETY: reading an initialised mpi-sys constant.
        if c != unsafe { RSMPI_COMM_NULL } {
            self.insert(id, c);
        }
    }

    /// Removes a communicator the replay freed.
    fn remove(&self, id: u32) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(&id);
        }
    }
}

/// `MPI_GROUP_NULL`: a group handle before MPI sets it.
fn group_null() -> MPI_Group {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_GROUP_NULL }
}

impl Replayer<'_> {
    /// Communicator constructors and Comm_free, replayed from the lineage
    /// the trace recorded: the constructor's family makes the new
    /// communicator, which enters the table under its trace id.
    pub(super) fn comm_op(&mut self, e: &Event) -> Result<()> {
        let parent = self.comm(e.comm)?;
        if e.op == Op::CommFree {
            let mut c = parent;
            // SAFETY: `c` is a live communicator created by this replay.
            check(unsafe { MPI_Comm_free(&mut c) }, "MPI_Comm_free")?;
            self.comms.remove(e.comm.0);
            return Ok(());
        }
        let cr = e
            .create
            .as_ref()
            .context("communicator constructor without its lineage")?;
        if matches!(e.op, Op::CommIdup | Op::CommIdupWithInfo) {
            return self.comm_idup(e, parent, cr.new);
        }
        // In every family below `parent` comes from this replay's table;
        // the arrays passed are the lists of the recorded lineage, which
        // live across the call and have the lengths the application passed
        // (the tracer records them whole).
        let new = match e.op {
            Op::CommDup | Op::CommDupWithInfo | Op::CommSplit | Op::CommSplitType => {
                dup_or_split(e.op, parent, cr)?
            }
            Op::CommCreate | Op::CommCreateGroup => of_members(e.op, parent, cr)?,
            Op::CartCreate
            | Op::CartSub
            | Op::GraphCreate
            | Op::DistGraphCreateAdjacent
            | Op::DistGraphCreate => with_topology(e.op, parent, cr)?,
            Op::IntercommCreate | Op::IntercommMerge => self.intercomm(e.op, parent, cr)?,
            Op::CommCreateFromGroup | Op::IntercommCreateFromGroups => {
                mpi4!(from_groups(e.op, cr)?)
            }
            op => bail!("{} is not replayed yet", op.name()),
        };
        // SAFETY: reading an initialised mpi-sys constant.
        let null = unsafe { RSMPI_COMM_NULL };
        if let Some(id) = cr.new
            && new != null
        {
            self.comms.insert(id.0, new);
        }
        Ok(())
    }

    /// `Intercomm_create` and `Intercomm_merge`: the inter-communicator
    /// constructors of the lineage, a method because the peer
    /// communicator of `Intercomm_create` comes from the table.
    fn intercomm(&self, op: Op, parent: MPI_Comm, cr: &CommCreate) -> Result<MPI_Comm> {
        // SAFETY: reading an initialised mpi-sys constant.
        let mut new = unsafe { RSMPI_COMM_NULL };
        let rc = if op == Op::IntercommCreate {
            // Local leader, remote leader; the peer communicator is
            // significant at the local leader only (recorded there).
            let (&[local_leader, remote_leader], tag) = (cr.dims.as_slice(), cr.key) else {
                bail!("Intercomm_create without its leaders");
            };
            let peer = match cr.edges.first() {
                Some(&id) => self.comm(CommId(id as u32))?,
                None => parent,
            };
            // SAFETY: `parent` and `peer` are live communicators of this
            // replay; `new` is a valid out-parameter.
            unsafe {
                MPI_Intercomm_create(
                    parent,
                    local_leader,
                    peer,
                    remote_leader,
                    tag.unwrap_or(0),
                    &mut new,
                )
            }
        } else {
            // SAFETY: `parent` is a live inter-communicator; `new` is a
            // valid out-parameter.
            unsafe { MPI_Intercomm_merge(parent, cr.key.unwrap_or(0), &mut new) }
        };
        check(rc, op.name())?;
        Ok(new)
    }

    /// `MPI_Comm_idup`: issued with a request; the communicator enters the
    /// table when a completion call completes it, as in the application
    /// (which may use it only then).
    fn comm_idup(&mut self, e: &Event, parent: MPI_Comm, new: Option<CommId>) -> Result<()> {
        let id = e
            .req
            .with_context(|| format!("{} without its request", e.op.name()))?;
        // SAFETY: reading an initialised mpi-sys constant.
        let mut cell = Box::new(unsafe { RSMPI_COMM_NULL });
        let mut req = super::request_null();
        // In both calls `parent` is live; `cell` is a heap cell that the
        // request table keeps until the request completes (MPI may write
        // it until then); `req` is a valid out-parameter.
        let rc = if e.op == Op::CommIdupWithInfo {
            // SAFETY: as above; the info is MPI_INFO_NULL (the trace keeps
            // no info keys).
            mpi4!(unsafe { MPI_Comm_idup_with_info(parent, RSMPI_INFO_NULL, &mut *cell, &mut req) })
        } else {
            // SAFETY: as above.
            unsafe { MPI_Comm_idup(parent, &mut *cell, &mut req) }
        };
        check(rc, e.op.name())?;
        match new {
            Some(new) => self.new_creating_req(id, req, new.0, cell),
            // The application's idup made nothing the trace names; its
            // request still completes.
            None => self.new_req(Some(id), req, Default::default(), false),
        }
        Ok(())
    }
}

/// `Comm_dup`, `Comm_dup_with_info`, `Comm_split` and
/// `Comm_split_type`: the constructors that copy or partition `parent`'s
/// group by the recorded color, key and split type.
fn dup_or_split(op: Op, parent: MPI_Comm, cr: &CommCreate) -> Result<MPI_Comm> {
    // SAFETY: reading initialised mpi-sys constants.
    let (undefined, mut new, info) = unsafe { (RSMPI_UNDEFINED, RSMPI_COMM_NULL, RSMPI_INFO_NULL) };
    let rc = match op {
        // SAFETY: `parent` is live; `new` is a valid out-parameter.
        Op::CommDup => unsafe { MPI_Comm_dup(parent, &mut new) },
        // SAFETY: `parent` is live; `info` is MPI_INFO_NULL (the trace
        // keeps no info keys); `new` is a valid out-parameter.
        Op::CommDupWithInfo => unsafe { MPI_Comm_dup_with_info(parent, info, &mut new) },
        // SAFETY: `parent` is live; `new` is a valid out-parameter.
        Op::CommSplit => unsafe {
            MPI_Comm_split(
                parent,
                cr.color.unwrap_or(undefined),
                cr.key.unwrap_or(0),
                &mut new,
            )
        },
        // Comm_split_type.
        // SAFETY: `parent` is live; `info` is MPI_INFO_NULL; `new` is a
        // valid out-parameter.
        _ => unsafe {
            MPI_Comm_split_type(
                parent,
                cr.split_type.unwrap_or(undefined),
                cr.key.unwrap_or(0),
                info,
                &mut new,
            )
        },
    };
    check(rc, op.name())?;
    Ok(new)
}

/// `Comm_create` and `Comm_create_group`: the communicator of the
/// recorded members, a subgroup of `parent`'s ([`members_group`]).
fn of_members(op: Op, parent: MPI_Comm, cr: &CommCreate) -> Result<MPI_Comm> {
    // SAFETY: reading an initialised mpi-sys constant.
    let mut new = unsafe { RSMPI_COMM_NULL };
    let mut g = members_group(parent, &cr.members)?;
    // SAFETY: `g` is a group of `parent`'s processes; `new` is a valid
    // out-parameter.
    let rc = unsafe {
        if op == Op::CommCreateGroup {
            MPI_Comm_create_group(parent, g, cr.key.unwrap_or(0), &mut new)
        } else {
            MPI_Comm_create(parent, g, &mut new)
        }
    };
    // SAFETY: `g` is this replay's and no longer used.
    unsafe { PMPI_Group_free(&mut g) };
    check(rc, op.name())?;
    Ok(new)
}

/// `Cart_create`, `Cart_sub`, `Graph_create` and the two
/// `Dist_graph_create` forms: the communicators with a virtual topology,
/// built from the recorded dimensions, periods, index, sources and edges
/// (`dims` holds a Cartesian grid's dimensions, a graph's index or a
/// distributed graph's degrees).
fn with_topology(op: Op, parent: MPI_Comm, cr: &CommCreate) -> Result<MPI_Comm> {
    // SAFETY: reading initialised mpi-sys constants.
    let (mut new, info) = unsafe { (RSMPI_COMM_NULL, RSMPI_INFO_NULL) };
    let reorder = c_int::from(cr.reorder.unwrap_or(false));
    let rc = match op {
        // SAFETY: `parent` is live; `dims` has the `dims.len()` entries
        // passed, `periods` one per dimension as recorded; `new` is a
        // valid out-parameter.
        Op::CartCreate => unsafe {
            MPI_Cart_create(
                parent,
                cr.dims.len() as c_int,
                cr.dims.as_ptr(),
                cr.periods.as_ptr(),
                reorder,
                &mut new,
            )
        },
        // SAFETY: `parent` is live; `dims` has an entry per dimension of
        // the parent's grid (the trace check made sure); `new` is a valid
        // out-parameter.
        Op::CartSub => unsafe { MPI_Cart_sub(parent, cr.dims.as_ptr(), &mut new) },
        // SAFETY: `parent` is live; `dims` (the index) has the `dims.len()`
        // entries passed, `edges` as many as its last one as recorded;
        // `new` is a valid out-parameter.
        Op::GraphCreate => unsafe {
            MPI_Graph_create(
                parent,
                cr.dims.len() as c_int,
                cr.dims.as_ptr(),
                cr.edges.as_ptr(),
                reorder,
                &mut new,
            )
        },
        // SAFETY: `parent` is live; `sources` and `edges` have the lengths
        // passed; MPI_UNWEIGHTED stands for both weight arrays; `info` is
        // MPI_INFO_NULL; `new` is a valid out-parameter.
        Op::DistGraphCreateAdjacent => unsafe {
            MPI_Dist_graph_create_adjacent(
                parent,
                cr.sources.len() as c_int,
                cr.sources.as_ptr(),
                RSMPI_UNWEIGHTED(),
                cr.edges.len() as c_int,
                cr.edges.as_ptr(),
                RSMPI_UNWEIGHTED(),
                info,
                reorder,
                &mut new,
            )
        },
        // Dist_graph_create.
        // SAFETY: `parent` is live; `sources` has the length passed, `dims`
        // (the degrees) one entry per source and `edges` their sum as
        // recorded; MPI_UNWEIGHTED stands for the weights; `info` is
        // MPI_INFO_NULL; `new` is a valid out-parameter.
        _ => unsafe {
            MPI_Dist_graph_create(
                parent,
                cr.sources.len() as c_int,
                cr.sources.as_ptr(),
                cr.dims.as_ptr(),
                cr.edges.as_ptr(),
                RSMPI_UNWEIGHTED(),
                info,
                reorder,
                &mut new,
            )
        },
    };
    check(rc, op.name())?;
    Ok(new)
}

/// MPI 4's constructors from groups: the groups made of the world's by
/// the world ranks recorded, and a string tag of replay's own made of the
/// recorded tag's hash (the same on every member, as the application's).
#[cfg(rankscale_mpi4)]
fn from_groups(op: Op, cr: &CommCreate) -> Result<MPI_Comm> {
    let tag = std::ffi::CString::new(format!("rankscale-{}", cr.key.unwrap_or(0)))?;
    // SAFETY: reading initialised mpi-sys constants.
    let (mut new, info, fatal) =
        unsafe { (RSMPI_COMM_NULL, RSMPI_INFO_NULL, RSMPI_ERRORS_ARE_FATAL) };
    let rc = if op == Op::CommCreateFromGroup {
        let mut g = world_group(&cr.members)?;
        // SAFETY: `g` is a group of world processes just made; `tag` is a
        // NUL-terminated string that outlives the call; `new` is a valid
        // out-parameter.
        let rc = unsafe { MPI_Comm_create_from_group(g, tag.as_ptr(), info, fatal, &mut new) };
        // SAFETY: `g` is this replay's and no longer used.
        unsafe { PMPI_Group_free(&mut g) };
        rc
    } else {
        let &[local_leader, remote_leader] = cr.dims.as_slice() else {
            bail!("Intercomm_create_from_groups without its leaders");
        };
        let (mut lg, mut rg) = (world_group(&cr.sources)?, world_group(&cr.members)?);
        // SAFETY: as above, with both groups just made.
        let rc = unsafe {
            MPI_Intercomm_create_from_groups(
                lg,
                local_leader,
                rg,
                remote_leader,
                tag.as_ptr(),
                info,
                fatal,
                &mut new,
            )
        };
        // SAFETY: both groups are this replay's and no longer used.
        unsafe {
            PMPI_Group_free(&mut lg);
            PMPI_Group_free(&mut rg);
        }
        rc
    };
    check(rc, op.name())?;
    Ok(new)
}

/// The group of these world ranks, in this order.
#[cfg(rankscale_mpi4)]
fn world_group(ranks: &[c_int]) -> Result<MPI_Group> {
    // SAFETY: reading an initialised mpi-sys constant.
    members_group(unsafe { RSMPI_COMM_WORLD }, ranks)
}

/// The group of these world ranks (the trace records group members so),
/// in this order, as a subgroup of `comm`'s (local) group.
fn members_group(comm: MPI_Comm, members: &[c_int]) -> Result<MPI_Group> {
    let local = world_to_local(comm, members, false)?;
    let (mut pg, mut g) = (group_null(), group_null());
    // SAFETY: `comm` is a live communicator of this replay; `pg` is a
    // valid out-parameter.
    let rc = unsafe { PMPI_Comm_group(comm, &mut pg) };
    check(rc, "MPI_Comm_group")?;
    // SAFETY: `pg` is the group just made; `local` holds `local.len()`
    // ranks of it; `g` is a valid out-parameter.
    let rc = unsafe { PMPI_Group_incl(pg, local.len() as c_int, local.as_ptr(), &mut g) };
    // SAFETY: `pg` is this replay's and no longer used.
    unsafe { PMPI_Group_free(&mut pg) };
    check(rc, "MPI_Group_incl")?;
    Ok(g)
}

/// The ranks in `comm` of the given world ranks (the trace records peers
/// and group members as world ranks): of its own group, or with `peers`,
/// of the group its peers are in (an inter-communicator's remote group).
pub(super) fn world_to_local(comm: MPI_Comm, world: &[c_int], peers: bool) -> Result<Vec<c_int>> {
    let mut local = vec![0 as c_int; world.len()];
    let (mut wg, mut cg) = (group_null(), group_null());
    // SAFETY: the world communicator is valid after MPI_Init; `wg` is a
    // valid out-parameter.
    let rc = unsafe { PMPI_Comm_group(RSMPI_COMM_WORLD, &mut wg) };
    check(rc, "MPI_Comm_group")?;
    let mut inter: c_int = 0;
    if peers {
        // SAFETY: `comm` is a live communicator; `inter` is a valid
        // out-parameter.
        unsafe { PMPI_Comm_test_inter(comm, &mut inter) };
    }
    // SAFETY: `comm` is a live communicator; `cg` is a valid out-parameter.
    let rc = unsafe {
        if inter != 0 {
            PMPI_Comm_remote_group(comm, &mut cg)
        } else {
            PMPI_Comm_group(comm, &mut cg)
        }
    };
    let rc = if rc == 0 {
        // SAFETY: both groups were just made; `world` and `local` have
        // `world.len()` entries.
        let rc = unsafe {
            PMPI_Group_translate_ranks(
                wg,
                world.len() as c_int,
                world.as_ptr(),
                cg,
                local.as_mut_ptr(),
            )
        };
        // SAFETY: `cg` is this function's and no longer used.
        unsafe { PMPI_Group_free(&mut cg) };
        rc
    } else {
        rc
    };
    // SAFETY: `wg` is this function's and no longer used.
    unsafe { PMPI_Group_free(&mut wg) };
    check(rc, "MPI_Group_translate_ranks")?;
    Ok(local)
}
