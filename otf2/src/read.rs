//! An OTF2 archive as a rankscale trace file, built as the tracer builds
//! one: a [`RankRecorder`] per rank fed call by call, the ranks merged in
//! the tracer's order. Nothing downstream can tell it from a traced trace
//! but by its metadata (`origin` imported from `otf2`).
//!
//! - **Ranks and threads:** each location group (process) with CPU-thread
//!   locations is a rank, in the order of the groups' ids (Score-P numbers
//!   them by MPI rank); its locations are its threads, by id.
//! - **Calls:** a region named `MPI_<call>` that rankscale knows is one
//!   call, from its `Enter` to its `Leave`. Other regions (user functions,
//!   MPI calls nested in another MPI call) are skipped and counted; their
//!   time is computation.
//! - **Exactly, when the archive says so:** an `Enter` with the attribute
//!   [`crate::EVENT_ATTRIBUTE`] (rankscale wrote the archive) gives the
//!   call with every parameter; its MPI records are then not needed. The
//!   call sites' source locations come back from
//!   [`crate::SITE_ATTRIBUTE`].
//! - **From the MPI records otherwise:** `MpiSend`/`MpiRecv` give the
//!   peer, tag and bytes of a blocking call (count = bytes, datatype size
//!   1), `MpiIsend` a nonblocking send and its request, `MpiIrecvRequest`
//!   a nonblocking receive, whose peer, tag and bytes come from the
//!   `MpiIrecv` that completes it (the call is held until then);
//!   `MpiIsendComplete`/`MpiIrecv` are the requests a `Wait*`/`Test*`
//!   completed; `MpiCollectiveEnd` gives a collective's communicator,
//!   root and bytes, the totals Score-P records, which `scorep` turns
//!   back into the call's arguments (the per-rank counts of `Allgatherv`,
//!   `Gatherv`, `Scatterv` and `Reduce_scatter` from the other members'
//!   records of the call, gathered in a first pass over the archive).
//!   Ranks in records are turned into world ranks through the
//!   communicator's group.
//! - **Time:** ticks at the archive's resolution, in ns from the global
//!   offset, kept exactly in the timeline.
//! - **Order and memory:** the archive is read rank by rank, one location
//!   after another, and each rank's part of the trace is finished before
//!   the next is read. A rank's calls are ordered by their `seq`
//!   attribute when rankscale wrote the archive, else by when they
//!   returned (which interleaves a rank's threads as they ran).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use compress::{RankRecorder, Recording};

use trace::{CommId, Event, Meta, Op, Origin, Peer, ReqId, Tag, Timing, TraceFile, Transfer};

use crate::ffi::{self, AttrKind, Definitions, Handler, Record, UNDEFINED_U32, Values, Wanted};
use crate::scorep;
use crate::{EVENT_ATTRIBUTE, Error, OTF2, SEQ_ATTRIBUTE, SITE_ATTRIBUTE};

/// What an import read.
#[derive(Debug)]
pub struct Imported {
    /// The trace.
    pub file: TraceFile,
    /// MPI calls imported.
    pub calls: u64,
    /// Of those, calls restored exactly from their attribute.
    pub exact: u64,
    /// Regions skipped: not MPI, unknown to rankscale, or nested in a
    /// call.
    pub skipped: u64,
}

/// A communicator of the archive: rankscale's id and its members' world
/// ranks by their rank in it.
#[derive(Clone, Debug)]
struct Comm {
    id: CommId,
    members: Vec<i32>,
    /// A `COMM_SELF`-like communicator: each rank alone.
    self_like: bool,
}

/// A call between its `Enter` and its `Leave`.
struct Open {
    region: u32,
    enter: u64,
    ev: Event,
    exact: bool,
    /// Its position among the rank's calls, when the archive gives it.
    seq: Option<u64>,
    /// Requests of receives this call posted, to fill in at completion.
    irecvs: Vec<u64>,
}

#[derive(Default)]
struct Thread {
    open: Option<Open>,
    /// Depth of skipped regions entered and not left.
    skipped_depth: u32,
    prev_leave: Option<u64>,
}

struct Rank {
    rec: RankRecorder,
    threads: HashMap<u32, Thread>,
    /// The rank's calls, until its locations are all read: keyed by their
    /// position where the archive gives it (`(seq, 0)`), else by when
    /// they were left (`(leave ns, count)`), which orders a rank's
    /// threads as they ran.
    slots: BTreeMap<(u64, u64), Event>,
    /// Calls left so far.
    left: u64,
    /// Receives posted and not completed: request → the posting call.
    waiting: HashMap<u64, (u64, u64)>,
}

impl Rank {
    fn new(rank: u32, what: &Recording) -> Rank {
        Rank {
            rec: RankRecorder::new(rank, what),
            threads: HashMap::new(),
            slots: BTreeMap::new(),
            left: 0,
            waiting: HashMap::new(),
        }
    }

    /// Hands every call to the recorder, in order, and returns the rank's
    /// part of the trace.
    fn finish(mut self) -> Result<TraceFile, trace::Error> {
        for ev in std::mem::take(&mut self.slots).into_values() {
            self.rec.push(&ev)?;
        }
        self.rec.finish()
    }
}

/// How to import.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Ignore rankscale's own attributes and take every call from the
    /// standard MPI records, as for an archive Score-P wrote (what a test
    /// of that path runs on rankscale's own archives).
    pub records_only: bool,
}

struct State {
    opts: Options,
    /// The first pass's records of the `V` collectives (see [`Shares`]).
    shares: HashMap<(u32, i32), Vec<(u64, u64)>>,
    /// How many of them each (communicator, rank) has made so far.
    v_calls: HashMap<(u32, i32), usize>,
    defs: Definitions,
    /// Location → (rank, thread).
    locations: HashMap<u64, (u32, u32)>,
    /// Region → the call it is, when an MPI call rankscale knows.
    regions: HashMap<u32, Op>,
    comms: HashMap<u32, Comm>,
    /// The ranks being read (one at a time), by rank.
    ranks: HashMap<u32, Rank>,
    /// Each rank's part of the trace, once its locations are read.
    parts: Vec<Option<TraceFile>>,
    /// The recording settings of every rank (the timeline's zero).
    recording: Recording,
    /// The last leave of all, ns.
    last: u64,
    /// The rank of each group of locations, in the order they are read.
    group_rank: Vec<u32>,
    /// Call sites' source locations, from the `rankscale::site` attribute.
    sites: BTreeMap<u64, String>,
    /// The archive's timer resolution, ticks per second.
    res: u64,
    zero_ns: u64,
    calls: u64,
    exact: u64,
    skipped: u64,
}

impl State {
    fn ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * 1_000_000_000) / u128::from(self.res.max(1))) as u64
    }

    fn string(&self, id: u32) -> &str {
        self.defs
            .strings
            .get(id as usize)
            .map_or("", String::as_str)
    }
}

/// The call an [`EVENT_ATTRIBUTE`] holds: postcard bytes in hex.
fn decode(hex: &str) -> Option<Event> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    postcard::from_bytes(&bytes?).ok()
}

fn transfer(c: &Comm, me: i32, peer: u32, tag: u32, len: u64) -> Transfer {
    let world = if c.self_like {
        me
    } else {
        c.members.get(peer as usize).copied().unwrap_or(peer as i32)
    };
    Transfer {
        peer: Peer::Rank {
            world,
            local: peer as i32,
        },
        tag: if tag == UNDEFINED_U32 {
            Tag::Any
        } else {
            Tag::Value(tag as i32)
        },
        count: len as i64,
        dsize: 1,
        dtype: trace::Datatype::UNKNOWN,
    }
}

impl State {
    /// Rank `rank`'s state, created at its first call.
    fn rank(&mut self, rank: u32) -> &mut Rank {
        let recording = &self.recording;
        self.ranks
            .entry(rank)
            .or_insert_with(|| Rank::new(rank, recording))
    }

    /// The communicator `c` and the caller's rank in it.
    fn comm(&self, c: u32, me: i32) -> Result<(Comm, i32), String> {
        let comm = self.comms.get(&c).cloned().ok_or_else(|| {
            format!("a record names communicator {c}, which the archive does not define")
        })?;
        let local = if comm.self_like {
            0
        } else {
            comm.members
                .iter()
                .position(|&w| w == me)
                .map_or(-1, |p| p as i32)
        };
        Ok((comm, local))
    }

    fn set_comm(&self, ev: &mut Event, c: u32, me: i32) -> Result<Comm, String> {
        let (comm, local) = self.comm(c, me)?;
        ev.comm = comm.id;
        ev.comm_rank = local;
        Ok(comm)
    }

    /// Every member's `(sent, received)` of the call of [`scorep::V_OPS`]
    /// that rank `me` makes next on the archive's communicator `c`: the
    /// k-th such call of every member is one call. Empty when a member's
    /// record is missing.
    fn v_members(&mut self, c: u32, me: i32, comm: &Comm, mine: (u64, u64)) -> Vec<(u64, u64)> {
        if comm.self_like {
            return vec![mine];
        }
        let k = self.v_calls.entry((c, me)).or_default();
        let nth = *k;
        *k += 1;
        comm.members
            .iter()
            .map(|&w| self.shares.get(&(c, w)).and_then(|v| v.get(nth)).copied())
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default()
    }
}

/// The ranks of an archive: its location groups that have CPU threads, by
/// group id, each with its locations by id.
fn rank_groups(defs: &Definitions) -> Result<BTreeMap<u32, Vec<u64>>, String> {
    let mut groups: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for l in defs.locations.iter().filter(|l| l.thread) {
        groups.entry(l.group).or_default().push(l.id);
    }
    if groups.is_empty() {
        return Err("the archive has no CPU-thread locations (no processes to import)".into());
    }
    for locs in groups.values_mut() {
        locs.sort_unstable();
    }
    Ok(groups)
}

/// The first pass over an archive whose calls come from its MPI records
/// and that has calls of [`scorep::V_OPS`]: each rank's `(sent,
/// received)` of every such call, per archive communicator in call order,
/// which give the per-rank counts of each member's call. Reads nothing of
/// an archive without such calls or with rankscale's own attributes.
#[derive(Default)]
struct Shares {
    records_only: bool,
    regions: std::collections::HashSet<u32>,
    rank_of: HashMap<u64, i32>,
    /// Locations inside such a call.
    open: std::collections::HashSet<u64>,
    by: HashMap<(u32, i32), Vec<(u64, u64)>>,
}

impl Handler for Shares {
    fn definitions(&mut self, defs: Definitions) -> Result<(Wanted, Vec<Vec<u64>>), String> {
        let name = |id: u32| defs.strings.get(id as usize).map_or("", String::as_str);
        let exact = defs
            .attributes
            .iter()
            .any(|a| name(a.name) == EVENT_ATTRIBUTE);
        if exact && !self.records_only {
            return Ok((Wanted::default(), Vec::new()));
        }
        for r in &defs.regions {
            if let Some(op) = name(r.name).strip_prefix("MPI_").and_then(Op::from_name)
                && scorep::V_OPS.contains(&op)
            {
                self.regions.insert(r.id);
            }
        }
        if self.regions.is_empty() {
            return Ok((Wanted::default(), Vec::new()));
        }
        let groups: Vec<Vec<u64>> = rank_groups(&defs)?.into_values().collect();
        for (rank, locs) in groups.iter().enumerate() {
            for &l in locs {
                self.rank_of.insert(l, rank as i32);
            }
        }
        Ok((Wanted::default(), groups))
    }

    fn group_done(&mut self, _group: usize) -> Result<(), String> {
        Ok(())
    }

    fn event(&mut self, loc: u64, _time: u64, rec: Record, _values: Values) -> Result<(), String> {
        match rec {
            Record::Enter(r) if self.regions.contains(&r) => {
                self.open.insert(loc);
            }
            Record::Leave(r) if self.regions.contains(&r) => {
                self.open.remove(&loc);
            }
            Record::CollectiveEnd(_, c, _, sent, recvd) if self.open.contains(&loc) => {
                if let Some(&rank) = self.rank_of.get(&loc) {
                    self.by.entry((c, rank)).or_default().push((sent, recvd));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl Handler for State {
    fn definitions(&mut self, defs: Definitions) -> Result<(Wanted, Vec<Vec<u64>>), String> {
        self.defs = defs;
        self.res = self.defs.clock.0;
        if self.res == 0 {
            return Err("the archive's clock has a resolution of 0 ticks per second".into());
        }
        self.zero_ns = self.ns(self.defs.clock.1);
        let groups = rank_groups(&self.defs)?;
        let rank_of_location = self.number_locations(&groups);
        self.recording = Recording {
            timeline_epoch: Some(self.zero_ns),
            ..Recording::default()
        };
        self.parts = (0..groups.len()).map(|_| None).collect();
        self.group_rank = (0..groups.len() as u32).collect();
        let read_groups: Vec<Vec<u64>> = groups.values().cloned().collect();
        for r in &self.defs.regions {
            let name = self.string(r.name);
            if let Some(op) = name.strip_prefix("MPI_").and_then(Op::from_name) {
                self.regions.insert(r.id, op);
            }
        }
        self.map_comms(&rank_of_location, groups.len());
        let wanted = if self.opts.records_only {
            Wanted::default()
        } else {
            self.wanted()
        };
        Ok((wanted, read_groups))
    }

    fn group_done(&mut self, group: usize) -> Result<(), String> {
        let rank = self.group_rank[group];
        let r = match self.ranks.remove(&rank) {
            Some(r) => r,
            None => Rank::new(rank, &self.recording),
        };
        let part = r.finish().map_err(|e| format!("rank {rank}: {e}"))?;
        self.parts[rank as usize] = Some(part);
        Ok(())
    }

    fn event(&mut self, loc: u64, time: u64, rec: Record, values: Values) -> Result<(), String> {
        let Some(&(rank, thread)) = self.locations.get(&loc) else {
            return Ok(());
        };
        let at = At { loc, rank, thread };
        let t = self.ns(time);
        // The rank and the thread exist from their first record on.
        self.thread(at);
        match rec {
            Record::Enter(region) => self.enter(at, region, t, values),
            Record::Leave(region) => self.leave(at, region, t),
            rec => self.inside(at, rec),
        }
    }
}

/// Where a record is: its location and the rank and thread that is.
#[derive(Clone, Copy)]
struct At {
    loc: u64,
    rank: u32,
    thread: u32,
}

/// The members of a communicator whose group is `g`, as world ranks, and
/// whether it is `COMM_SELF`-like (each rank alone). A group of
/// locations names them by location; a group of ranks by their index in
/// the paradigm's locations group (`paradigm`).
fn comm_members(
    g: Option<&ffi::GroupDef>,
    paradigm: Option<&ffi::GroupDef>,
    rank_of_location: &HashMap<u64, i32>,
) -> (Vec<i32>, bool) {
    match g {
        Some(g) if g.comm_self => (Vec::new(), true),
        Some(g) if g.locations => (
            g.members
                .iter()
                .map(|l| rank_of_location.get(l).copied().unwrap_or(-1))
                .collect(),
            false,
        ),
        Some(g) => (
            g.members
                .iter()
                .map(|&i| {
                    paradigm
                        .and_then(|p| p.members.get(i as usize))
                        .and_then(|l| rank_of_location.get(l).copied())
                        .unwrap_or(i as i32)
                })
                .collect(),
            false,
        ),
        None => (Vec::new(), false),
    }
}

/// The definitions, mapped to rankscale's ranks, threads and
/// communicators: the stages of [`Handler::definitions`].
impl State {
    /// Numbers the locations of `groups` (rank, then thread, both in id
    /// order) and returns each location's rank.
    fn number_locations(&mut self, groups: &BTreeMap<u32, Vec<u64>>) -> HashMap<u64, i32> {
        let mut rank_of_location: HashMap<u64, i32> = HashMap::new();
        for (rank, locs) in groups.values().enumerate() {
            for (thread, &l) in locs.iter().enumerate() {
                self.locations.insert(l, (rank as u32, thread as u32));
                rank_of_location.insert(l, rank as i32);
            }
        }
        rank_of_location
    }

    /// Communicators: members as world ranks, and rankscale's ids (1 for
    /// `MPI_COMM_SELF`, 0 for the world, the others from 2 in the order of
    /// the archive's ids).
    fn map_comms(&mut self, rank_of_location: &HashMap<u64, i32>, world_size: usize) {
        let groups_by_id: HashMap<u32, &ffi::GroupDef> =
            self.defs.groups.iter().map(|g| (g.id, g)).collect();
        let paradigm_locations: Option<&ffi::GroupDef> =
            self.defs.groups.iter().find(|g| g.locations);
        let mut next = 2u32;
        let mut comm_defs = self.defs.comms.clone();
        comm_defs.sort_by_key(|c| c.id);
        for c in &comm_defs {
            let g = groups_by_id.get(&c.group).copied();
            let (members, self_like) = comm_members(g, paradigm_locations, rank_of_location);
            let name = self.string(c.name);
            let id = if self_like || name == "MPI_COMM_SELF" {
                CommId(1)
            } else if name == "MPI_COMM_WORLD"
                || (c.parent == UNDEFINED_U32
                    && members.len() == world_size
                    && members.iter().enumerate().all(|(i, &w)| w == i as i32))
            {
                CommId::WORLD
            } else {
                next += 1;
                CommId(next - 1)
            };
            self.comms.insert(
                c.id,
                Comm {
                    id,
                    members,
                    self_like,
                },
            );
        }
    }

    /// rankscale's own attributes, where the archive defines them: the
    /// call, its position and its call site, delivered with each record.
    fn wanted(&self) -> Wanted {
        let find = |name: &str, kind: AttrKind| {
            self.defs
                .attributes
                .iter()
                .find(|a| a.kind == kind && self.string(a.name) == name)
                .map(|a| a.id)
        };
        Wanted {
            string: find(EVENT_ATTRIBUTE, AttrKind::String),
            number: find(SEQ_ATTRIBUTE, AttrKind::U64),
            label: find(SITE_ATTRIBUTE, AttrKind::String),
        }
    }
}

/// The records of a location, by kind: the stages of
/// [`Handler::event`].
impl State {
    /// The state of the thread a record is on, made at its first record.
    fn thread(&mut self, at: At) -> &mut Thread {
        self.rank(at.rank).threads.entry(at.thread).or_default()
    }

    /// An `Enter`: opens a call, exact from its attribute where the
    /// archive has one, else to be filled in from its MPI records; a
    /// region nested in a call or that is no MPI call is skipped.
    fn enter(&mut self, at: At, region: u32, t: u64, values: Values) -> Result<(), String> {
        let th = self.thread(at);
        if th.open.is_some() || th.skipped_depth > 0 {
            // Nested in a call: skipped with everything inside.
            th.skipped_depth += 1;
            self.skipped += 1;
            return Ok(());
        }
        let Some(op) = self.regions.get(&region).copied() else {
            // A user function around calls: its time is computation, the
            // calls inside count.
            self.skipped += 1;
            return Ok(());
        };
        let (ev, exact) = match values.string {
            Some(a) => {
                let line = self.string(a);
                let ev = decode(line).ok_or_else(|| {
                    format!(
                        "location {}: the {EVENT_ATTRIBUTE} attribute is not a call rankscale wrote",
                        at.loc
                    )
                })?;
                if let Some(l) = values.label {
                    let label = self.string(l).to_string();
                    self.sites.entry(ev.site).or_insert(label);
                }
                (ev, true)
            }
            None => {
                let mut ev = Event::new(op);
                ev.comm_rank = at.rank as i32;
                (ev, false)
            }
        };
        self.thread(at).open = Some(Open {
            region,
            enter: t,
            ev,
            exact,
            seq: values.number,
            irecvs: Vec::new(),
        });
        Ok(())
    }

    /// A `Leave`: closes the thread's open call (or a skipped region) with
    /// its times and files it.
    fn leave(&mut self, at: At, region: u32, t: u64) -> Result<(), String> {
        let zero_ns = self.zero_ns;
        let th = self.thread(at);
        if th.skipped_depth > 0 {
            th.skipped_depth -= 1;
            return Ok(());
        }
        let Some(mut open) = th.open.take() else {
            // Leaving a user function.
            return Ok(());
        };
        if open.region != region {
            return Err(format!(
                "location {}: leaves region {region} while in region {}",
                at.loc, open.region
            ));
        }
        if !open.exact {
            // An exact call keeps the thread it names; a rank's
            // locations are numbered by id, which skips no thread
            // only when every thread made calls.
            open.ev.thread = at.thread;
        }
        open.ev.time = Timing {
            enter_ns: open.enter.saturating_sub(zero_ns),
            dur_ns: t.saturating_sub(open.enter),
            compute_ns: th.prev_leave.map_or(0, |p| open.enter.saturating_sub(p)),
        };
        th.prev_leave = Some(t);
        self.last = self.last.max(t);
        self.file(at.rank, open, t)
    }

    /// Files the call `open` of rank `rank`, left at `t`, among the rank's
    /// calls: at its position where the archive gives it, else in the
    /// order calls were left.
    fn file(&mut self, rank: u32, open: Open, t: u64) -> Result<(), String> {
        let r = self.rank(rank);
        let key = match open.seq {
            Some(seq) => (seq, 0),
            None => (t, r.left),
        };
        r.left += 1;
        for req in open.irecvs {
            r.waiting.insert(req, key);
        }
        if r.slots.insert(key, open.ev).is_some() {
            return Err(format!("rank {rank}: two calls at position {}", key.0));
        }
        self.calls += 1;
        if open.exact {
            self.exact += 1;
        }
        Ok(())
    }

    /// An MPI record inside a call: fills in the open call unless it is
    /// exact (its attribute gave every field).
    fn inside(&mut self, at: At, rec: Record) -> Result<(), String> {
        let th = self.thread(at);
        if th.skipped_depth > 0 {
            return Ok(());
        }
        let Some(mut open) = th.open.take() else {
            return Ok(());
        };
        if !open.exact {
            self.record(&mut open, at.rank as i32, rec)?;
        }
        self.thread(at).open = Some(open);
        Ok(())
    }
}

impl State {
    /// Fills the open call `open` of rank `me` from one MPI record.
    fn record(&mut self, open: &mut Open, me: i32, rec: Record) -> Result<(), String> {
        let ev = &mut open.ev;
        match rec {
            Record::MpiSend(to, c, tag, len) | Record::MpiIsend(to, c, tag, len, _) => {
                let comm = self.set_comm(ev, c, me)?;
                ev.send = Some(transfer(&comm, me, to, tag, len));
                if let Record::MpiIsend(.., req) = rec {
                    ev.req = Some(ReqId(req));
                }
            }
            Record::MpiRecv(from, c, tag, len) => {
                let comm = self.set_comm(ev, c, me)?;
                ev.recv = Some(transfer(&comm, me, from, tag, len));
            }
            Record::MpiIrecvRequest(req) => {
                ev.req = Some(ReqId(req));
                ev.recv = Some(Transfer {
                    peer: Peer::Any,
                    tag: Tag::Any,
                    count: 0,
                    dsize: 1,
                    dtype: trace::Datatype::UNKNOWN,
                });
                open.irecvs.push(req);
            }
            Record::MpiIsendComplete(req) => {
                ev.reqs.push(ReqId(req));
                ev.done.push(ReqId(req));
            }
            Record::MpiIrecv(from, c, tag, len, req) => {
                ev.reqs.push(ReqId(req));
                ev.done.push(ReqId(req));
                let (comm, local) = self.comm(c, me)?;
                let x = transfer(&comm, me, from, tag, len);
                // The posting call, held until now, gets its peer, tag
                // and bytes (it may be this very call: Irecv + Wait in
                // one region does not happen, but be safe).
                let r = self.rank(me as u32);
                if let Some(i) = r.waiting.remove(&req) {
                    if let Some(post) = r.slots.get_mut(&i) {
                        post.comm = comm.id;
                        post.comm_rank = local;
                        post.recv = Some(x);
                    }
                } else if open.irecvs.contains(&req) {
                    ev.recv = Some(x);
                }
            }
            Record::CollectiveBegin => {}
            Record::CollectiveEnd(_, c, root, sent, recvd) => {
                let comm = self.set_comm(ev, c, me)?;
                let root = (root != UNDEFINED_U32).then_some(root as i32);
                ev.root = root;
                let n = if comm.self_like {
                    1
                } else {
                    comm.members.len() as u64
                };
                let members = if scorep::V_OPS.contains(&ev.op) {
                    self.v_members(c, me, &comm, (sent, recvd))
                } else {
                    Vec::new()
                };
                let bytes = |b: i64| Transfer::collective(b, 1);
                match scorep::arguments(ev.op, n, ev.comm_rank, root, (sent, recvd), &members) {
                    Some(a) => {
                        ev.send = a.send.map(bytes);
                        ev.recv = a.recv.map(bytes);
                        ev.in_place = a.in_place;
                        ev.send_counts = a.send_counts;
                        ev.recv_counts = a.recv_counts;
                    }
                    // Not as Score-P counts: the totals as they are.
                    None => {
                        ev.send = Some(bytes(sent as i64));
                        ev.recv = Some(bytes(recvd as i64));
                    }
                }
            }
            Record::Enter(_) | Record::Leave(_) => {}
        }
        Ok(())
    }
}

/// Reads the OTF2 archive whose anchor file is `anchor` (`traces.otf2`)
/// into a trace file; see the module documentation for the mapping.
pub fn import(anchor: &Path) -> Result<Imported, Error> {
    import_with(anchor, Options::default())
}

/// [`import`] with options.
pub fn import_with(anchor: &Path, opts: Options) -> Result<Imported, Error> {
    let mut shares = Shares {
        records_only: opts.records_only,
        ..Shares::default()
    };
    ffi::read(anchor, &mut shares)?;
    let mut st = State {
        opts,
        shares: shares.by,
        v_calls: HashMap::new(),
        defs: Definitions::default(),
        locations: HashMap::new(),
        regions: HashMap::new(),
        comms: HashMap::new(),
        ranks: HashMap::new(),
        parts: Vec::new(),
        recording: Recording::default(),
        last: 0,
        group_rank: Vec::new(),
        sites: BTreeMap::new(),
        res: 1,
        zero_ns: 0,
        calls: 0,
        exact: 0,
        skipped: 0,
    };
    ffi::read(anchor, &mut st)?;
    let world_size = st.parts.len() as u32;
    let parts = st
        .parts
        .into_iter()
        .enumerate()
        .map(|(r, p)| {
            p.ok_or_else(|| Error::Archive(format!("rank {r}'s locations were not read")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut file = compress::merge::as_traced(parts)?.unwrap_or_default();
    file.trace.normalize();
    file.meta = Meta {
        tool: format!("rankscale {}", env!("CARGO_PKG_VERSION")),
        mpi: format!("imported: {OTF2}"),
        world_size,
        command: vec![
            "import".into(),
            "--format".into(),
            OTF2.into(),
            anchor.display().to_string(),
        ],
        wall_ns: st.last.saturating_sub(st.zero_ns),
        merge_ns: 0,
        origin: Origin::Imported {
            format: OTF2.into(),
        },
        sites: st.sites.into_iter().collect(),
        ..Meta::default()
    };
    Ok(Imported {
        file,
        calls: st.calls,
        exact: st.exact,
        skipped: st.skipped,
    })
}
