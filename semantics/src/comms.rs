//! Communicator lineage: which communicator a rank's communicator id
//! stands for.
//!
//! Communicator ids are per rank ([`trace::CommId`]), and the colours of
//! one `Comm_split` share an id. Every member of a communicator must still
//! agree on what it is, and every other communicator must differ, so that
//! only the members of one colour meet in a collective or on a channel.
//! The instance ([`View::inst`]) does that from the events alone: the
//! parent's instance, the position of the creating call among the parent's
//! collectives, and the colour (split), the group (create) or the grid
//! coordinates left out (`Cart_sub`). The groups of `Comm_split_type` (one
//! per node) are not in the trace: such instances are marked ambiguous.
//!
//! One rank's [`Comms`] follows that rank's events in order. The check, the
//! analysis' matching, the simulator and the OTF2 export all use it, so
//! that they agree on which calls form one collective.

// Lookups only, never iterated: one or two per event of every rank.
use rustc_hash::FxHashMap as HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use trace::{CommCreate, Event, Family, Op, TraceFile};

/// How a communicator's ranks map to world ranks, where the trace says.
#[derive(Clone, Debug)]
pub enum Map {
    /// Rank i is world rank i (the world, its dups, grids without reorder).
    Identity,
    /// The one member is this world rank (`MPI_COMM_SELF`).
    Single(i64),
    /// Rank i is `members[i]` (`Comm_create`).
    Members(Rc<[i32]>),
    /// Not recorded.
    Unknown,
}

/// A communicator as one rank knows it.
#[derive(Clone, Debug)]
struct Comm {
    /// `None` when the constructor recorded an impossible size.
    size: Option<i64>,
    inst: u64,
    map: Map,
    /// Cartesian dimensions, for `Cart_sub`.
    cart: Option<Rc<[i64]>>,
    ambiguous: bool,
    inter: bool,
    remote: Option<i64>,
    /// An inter-communicator's two groups together, as sorted world ranks,
    /// where recorded.
    both: Option<Rc<[i32]>>,
}

/// What an event needs to know of its communicator.
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// The rank's id of it.
    pub id: u32,
    /// Its size; `None` for an id no traced constructor made, or one made
    /// with an impossible size.
    pub size: Option<i64>,
    /// The instance: the same on every member, different for every other
    /// communicator.
    pub inst: u64,
    /// Whether `inst` may stand for several groups (`Comm_split_type`,
    /// untraced constructors): calls on it can be checked for agreement,
    /// not for completeness.
    pub ambiguous: bool,
    /// Whether it is an inter-communicator: its peers' ranks are ranks of
    /// its remote group, and its collectives span both groups.
    pub inter: bool,
    /// An inter-communicator's remote group size, where known.
    pub remote: Option<i64>,
}

/// The communicators one rank knows, followed through its events.
#[derive(Clone, Debug)]
pub struct Comms {
    rank: u32,
    world: i64,
    comms: HashMap<u32, Comm>,
    /// Calls counted per communicator id (see [`Comms::count`]).
    seqs: HashMap<u32, u64>,
    /// Communicators made of groups (inter-communicators, their merges,
    /// `Comm_create_group`), by the call's fingerprint: the k-th of every
    /// member is one communicator.
    pairs: HashMap<u64, u64>,
}

impl Comms {
    /// What world rank `rank` of a world of `world` ranks knows before its
    /// first call: `MPI_COMM_WORLD` (id 0) and `MPI_COMM_SELF` (id 1).
    pub fn new(rank: u32, world: i64) -> Comms {
        let comms = HashMap::from_iter([
            (
                0,
                Comm {
                    size: Some(world),
                    inst: 0,
                    map: Map::Identity,
                    cart: None,
                    ambiguous: false,
                    inter: false,
                    remote: None,
                    both: None,
                },
            ),
            (
                1,
                Comm {
                    size: Some(1),
                    inst: hash_of(("self", rank)),
                    map: Map::Single(i64::from(rank)),
                    cart: None,
                    ambiguous: false,
                    inter: false,
                    remote: None,
                    both: None,
                },
            ),
        ]);
        Comms {
            rank,
            world,
            comms,
            seqs: HashMap::default(),
            pairs: HashMap::default(),
        }
    }

    /// Communicator `id` as this rank knows it now.
    pub fn view(&self, id: u32) -> View {
        match self.comms.get(&id) {
            Some(c) => View {
                id,
                size: c.size,
                inst: c.inst,
                ambiguous: c.ambiguous || c.size.is_none(),
                inter: c.inter,
                remote: c.remote,
            },
            None => View {
                id,
                size: None,
                inst: hash_of(("untraced", id)),
                ambiguous: true,
                inter: false,
                remote: None,
            },
        }
    }

    /// The world rank of rank `local` of communicator `id`, where known.
    pub fn world_of(&self, id: u32, local: i64) -> Option<i64> {
        match &self.comms.get(&id)?.map {
            Map::Identity => Some(local),
            Map::Single(w) => (local == 0).then_some(*w),
            Map::Members(m) => usize::try_from(local)
                .ok()
                .and_then(|l| m.get(l))
                .map(|&w| i64::from(w)),
            Map::Unknown => None,
        }
    }

    /// This rank's own rank in communicator `id`, where known.
    pub fn local_of(&self, id: u32) -> Option<i64> {
        match &self.comms.get(&id)?.map {
            Map::Identity => Some(i64::from(self.rank)),
            Map::Single(_) => Some(0),
            Map::Members(m) => m
                .iter()
                .position(|&w| i64::from(w) == i64::from(self.rank))
                .map(|p| p as i64),
            Map::Unknown => None,
        }
    }

    /// How communicator `id`'s ranks map to world ranks.
    pub fn map(&self, id: u32) -> Option<&Map> {
        self.comms.get(&id).map(|c| &c.map)
    }

    /// Communicator `id`'s Cartesian dimensions, if it is a grid.
    pub fn cart(&self, id: u32) -> Option<Rc<[i64]>> {
        self.comms.get(&id).and_then(|c| c.cart.clone())
    }

    /// Both groups of inter-communicator `id` together, as sorted world
    /// ranks, where its constructor recorded them: its collectives gather
    /// every rank of both, each in its place in this list.
    pub fn both(&self, id: u32) -> Option<Rc<[i32]>> {
        self.comms.get(&id).and_then(|c| c.both.clone())
    }

    /// Counts `e` among the calls of its communicator that every member
    /// makes in the same order: its position (from 1), or `None` for a
    /// call that is not one (point-to-point, `Comm_create_group`, which is
    /// collective over its group only, a failed call).
    pub fn count(&mut self, e: &Event) -> Option<u64> {
        if e.failed() || !e.names_comm() || !counted(e.op) || e.op == Op::CommCreateGroup {
            return None;
        }
        let s = self.seqs.entry(e.comm.0).or_default();
        *s += 1;
        Some(*s)
    }

    /// Follows `e`, this rank's next event: counts it and gives a
    /// communicator it creates its instance. For users that need nothing
    /// else of the call ([`Comms::count`] and [`Comms::create`] for those
    /// that check it on the way).
    pub fn observe(&mut self, e: &Event) -> Option<u64> {
        let seq = self.count(e);
        let Some(c) = e.create.as_ref().filter(|_| !e.failed()) else {
            return seq;
        };
        if !e.op.has_comm() {
            // Made of groups alone (MPI 4): the world stands for the
            // parent whose ranks the groups name.
            self.create(e, self.view(0), 0, c);
        } else if counted(e.op) {
            self.create(e, self.view(e.comm.0), seq.unwrap_or(0), c);
        }
        seq
    }

    /// Records the communicator `c.new` that `e` made on `parent` as the
    /// `seq`-th call counted there (0 when not counted).
    pub fn create(&mut self, e: &Event, parent: View, seq: u64, c: &CommCreate) {
        let Some(new) = c.new else { return };
        let limit = match e.op {
            // A merge joins both groups of its inter-communicator.
            Op::IntercommMerge => self.world,
            _ => parent.size.unwrap_or(self.world),
        };
        let size = i64::from(c.size);
        let dims: Vec<i64> = c.dims.iter().map(|&d| i64::from(d)).collect();
        let parent_cart = self.cart(parent.id);
        let parent_map = self.map(parent.id).cloned().unwrap_or(Map::Unknown);
        let both = match e.op {
            op if op.makes_intercomm() => {
                let mut v: Vec<i32> = c.sources.iter().chain(&c.members).copied().collect();
                v.sort_unstable();
                (!v.is_empty()).then(|| v.into())
            }
            op if op.is_comm_dup() => self.both(parent.id),
            _ => None,
        };
        let (inst, ambiguous) = self.instance(e, parent, seq, c, parent_cart.as_deref(), &dims);
        let keeps_ranks = c.reorder == Some(false);
        let map = match e.op {
            // A window and a file have their communicator's group.
            op if op.is_comm_dup() || op.makes_window() || op.opens_file() => parent_map,
            // Made of an inter-communicator: one whose remote group the
            // lineage does not give.
            Op::CommCreate | Op::CommSplit | Op::CommSplitType if parent.inter => Map::Unknown,
            op if (op.makes_intercomm()
                || matches!(
                    op,
                    Op::CommCreate
                        | Op::CommCreateGroup
                        | Op::CommCreateFromGroup
                        | Op::IntercommMerge
                ))
                && !c.members.is_empty() =>
            {
                Map::Members(c.members.clone().into())
            }
            Op::CartCreate
            | Op::GraphCreate
            | Op::DistGraphCreate
            | Op::DistGraphCreateAdjacent
                if keeps_ranks =>
            {
                parent_map
            }
            _ => Map::Unknown,
        };
        let cart = match e.op {
            Op::CartCreate => Some(dims.clone().into()),
            op if op.is_comm_dup() => parent_cart.clone(),
            Op::CartSub => parent_cart.as_ref().map(|pd| {
                pd.iter()
                    .zip(&dims)
                    .filter(|(_, k)| **k != 0)
                    .map(|(d, _)| *d)
                    .collect::<Vec<i64>>()
                    .into()
            }),
            _ => None,
        };
        self.comms.insert(
            new.0,
            Comm {
                size: (0..=limit).contains(&size).then_some(size),
                inst,
                map,
                cart,
                // What a constructor makes of an inter-communicator is one
                // (but its merge); a dup keeps the remote group.
                inter: e.op.makes_intercomm() || (parent.inter && e.op != Op::IntercommMerge),
                remote: match e.op {
                    op if op.makes_intercomm() => {
                        Some(c.members.len() as i64).filter(|_| !c.members.is_empty())
                    }
                    op if op.is_comm_dup() => parent.remote,
                    _ => None,
                },
                ambiguous: ambiguous || parent.size.is_none(),
                both,
            },
        );
        // A new communicator's calls are counted from its creation (ids
        // are reused after Comm_free).
        self.seqs.remove(&new.0);
    }

    /// The instance of the communicator `e` makes, and whether it may
    /// stand for several groups.
    fn instance(
        &mut self,
        e: &Event,
        parent: View,
        seq: u64,
        c: &CommCreate,
        parent_cart: Option<&[i64]>,
        dims: &[i64],
    ) -> (u64, bool) {
        let me = i64::from(e.comm_rank);
        match e.op {
            Op::CommSplit => (hash_of((parent.inst, seq, c.color)), false),
            // Of an inter-communicator, each side names its own group
            // (the local one): the one new inter-communicator they make
            // together is the call's.
            Op::CommCreate if parent.inter => (hash_of((parent.inst, seq)), false),
            Op::CommCreate => (hash_of((parent.inst, seq, &c.members)), false),
            // Collective over its group alone: the same on every member
            // are the parent, the group, the tag and how many such
            // communicators came before.
            Op::CommCreateGroup | Op::CommCreateFromGroup => {
                let call = hash_of(("group", parent.inst, &c.members, c.key));
                let k = self.pairs.entry(call).or_default();
                *k += 1;
                (hash_of((call, *k)), parent.ambiguous)
            }
            // The same on both sides: the pair of groups (in either
            // order) and the tag, and how many such communicators came
            // before; the merge's members are one list on both sides.
            op if op.makes_intercomm() || op == Op::IntercommMerge => {
                let pair = if e.op == Op::IntercommMerge {
                    hash_of(("merge", &c.members))
                } else {
                    let (a, b) = (&c.sources, &c.members);
                    hash_of(("inter", a.min(b), a.max(b), c.key))
                };
                let k = self.pairs.entry(pair).or_default();
                *k += 1;
                (hash_of((pair, *k)), false)
            }
            Op::CommSplitType => (hash_of((parent.inst, seq, c.split_type)), true),
            Op::CartSub => match parent_cart.and_then(|d| coords(d, me)) {
                Some(at) => {
                    let left: Vec<i64> = at
                        .iter()
                        .zip(dims)
                        .filter(|(_, k)| **k == 0)
                        .map(|(x, _)| *x)
                        .collect();
                    (hash_of((parent.inst, seq, left)), parent.ambiguous)
                }
                None => (hash_of((parent.inst, seq)), true),
            },
            _ => (hash_of((parent.inst, seq)), parent.ambiguous),
        }
    }
}

/// The world size of `file`'s run: the recorded one, else the number of
/// ranks in the trace.
pub fn world_size(file: &TraceFile) -> i64 {
    match file.meta.world_size {
        0 => file.trace.ranks().len() as i64,
        n => i64::from(n),
    }
}

/// Calls every member of a communicator makes in the same order:
/// collectives of every kind, the communicator management calls, and the
/// collective calls of windows (their constructors on the communicator,
/// `Win_fence` and `Win_free` on the window) and of files (`File_open` on
/// the communicator, the others on the file: [`Op::is_file_collective`]).
pub(crate) fn counted(op: Op) -> bool {
    matches!(
        op.family(),
        Family::Collective
            | Family::NonblockingCollective
            | Family::Neighborhood
            | Family::PersistentCollective
            | Family::CommManagement
    ) || op.is_window_collective()
        || op.is_file_collective()
}

/// A stable hash of `parts` (instance ids and fingerprints; `DefaultHasher`
/// has fixed keys, so the same on every run and every rank).
pub fn hash_of(parts: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// The coordinates of rank `r` in a row-major grid.
pub fn coords(dims: &[i64], r: i64) -> Option<Vec<i64>> {
    let total = dims
        .iter()
        .try_fold(1i64, |a, &d| (d > 0).then(|| a.saturating_mul(d)))?;
    if !(0..total).contains(&r) {
        return None;
    }
    let mut rest = r;
    let mut at = vec![0; dims.len()];
    for (k, &d) in dims.iter().enumerate().rev() {
        at[k] = rest % d;
        rest /= d;
    }
    Some(at)
}
