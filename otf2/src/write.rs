//! A rankscale trace as an OTF2 archive, in the records Score-P writes for
//! MPI, so that OTF2's own tools (`otf2-print`), Scalasca and Vampir read
//! it:
//!
//! - each rank is a process (location group) with one location per thread
//!   it used; each call an `Enter`/`Leave` pair of the region `MPI_<call>`
//!   (paradigm MPI, with the role OTF2 gives that call);
//! - inside it the MPI records: `MpiSend` at entry and `MpiRecv` at exit
//!   for blocking point-to-point calls (both for `Sendrecv`);
//!   `MpiIsend`/`MpiIrecvRequest` when a nonblocking call posts, and
//!   `MpiIsendComplete`/`MpiIrecv` in the `Wait*`/`Test*` that completed
//!   it; `MpiCollectiveBegin`/`MpiCollectiveEnd` around blocking
//!   collectives;
//! - ranks in records are ranks in the record's communicator, and every
//!   communicator is defined with its members (as far as the trace's
//!   events name them: each caller's rank and each peer's).
//!
//! Every `Enter` also carries the attribute `rankscale::event`: the call
//! with every field of the event model (postcard, in hex), which `rankscale
//! import` reads back exactly; `rankscale::seq`, its position among its
//! rank's calls (threads record in an order that timestamps alone do not
//! give back); and, where the trace knows it, `rankscale::site`, the call
//! site's source location. Point-to-point byte counts are what the calls
//! name (count times datatype size): for a receive its buffer, which may be
//! larger than the message; a collective's are the bytes Score-P records,
//! which leave and reach the rank over all its partners (see
//! `scorep`). Persistent requests and nonblocking
//! collectives get `Enter`/`Leave` only.
//!
//! Times are the trace's timeline (nanosecond ticks, the common time zero
//! as the global offset), or, without one, the estimate of
//! [`semantics::timed`], from 0.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use semantics::comms::{Comms as Lineage, world_size};
use semantics::timed::{self, Clock, RankEvents};
use trace::{Event, Family, Op, Peer, ReqId, Tag, TraceFile};

use crate::ffi::{
    self, AttrKind, AttrValue, AttributeDef, CommDef, Definitions, GroupDef, LocationDef, Record,
    RegionDef, Role, UNDEFINED_U32, Writer,
};
use crate::scorep::{self, bytes};
use crate::{EVENT_ATTRIBUTE, Error, SEQ_ATTRIBUTE, SITE_ATTRIBUTE};

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// Ranks (processes) written.
    pub ranks: usize,
    /// Locations (a rank's threads) written.
    pub locations: usize,
    /// Calls written (`Enter`/`Leave` pairs).
    pub calls: u64,
    /// Event records written in all.
    pub records: u64,
    /// Whether the times came from the timeline (else estimated).
    pub timed: bool,
    /// Calls that lasted past the start of their location's next call
    /// (imported traces whose records overlap: the published SMG and AMG
    /// traces time a nonblocking message from its post to its completion)
    /// and end at that start in the archive, since OTF2 takes a location's
    /// records in time order, its regions nested.
    pub overlapping: u64,
    /// The most such a call was cut by, ns.
    pub max_cut_ns: u64,
}

/// The OTF2 collective operation of a blocking collective.
fn collective_op(op: Op) -> Option<u8> {
    use ffi::collective as c;
    Some(match op {
        Op::Barrier => c::BARRIER,
        Op::Bcast => c::BCAST,
        Op::Gather => c::GATHER,
        Op::Gatherv => c::GATHERV,
        Op::Scatter => c::SCATTER,
        Op::Scatterv => c::SCATTERV,
        Op::Allgather => c::ALLGATHER,
        Op::Allgatherv => c::ALLGATHERV,
        Op::Alltoall => c::ALLTOALL,
        Op::Alltoallv => c::ALLTOALLV,
        Op::Alltoallw => c::ALLTOALLW,
        Op::Allreduce => c::ALLREDUCE,
        Op::Reduce => c::REDUCE,
        Op::ReduceScatter => c::REDUCE_SCATTER,
        Op::ReduceScatterBlock => c::REDUCE_SCATTER_BLOCK,
        Op::Scan => c::SCAN,
        Op::Exscan => c::EXSCAN,
        _ => return None,
    })
}

/// The region role OTF2 gives a call.
fn role(op: Op) -> Role {
    match op.family() {
        Family::BlockingP2p | Family::NonblockingP2p | Family::Persistent | Family::Probe => {
            Role::Point2Point
        }
        Family::Collective | Family::NonblockingCollective => match op {
            Op::Barrier | Op::Ibarrier => Role::Barrier,
            Op::Bcast | Op::Scatter | Op::Scatterv | Op::Ibcast | Op::Iscatter | Op::Iscatterv => {
                Role::One2All
            }
            Op::Reduce | Op::Gather | Op::Gatherv | Op::Ireduce | Op::Igather | Op::Igatherv => {
                Role::All2One
            }
            Op::Scan | Op::Exscan | Op::Iscan | Op::Iexscan => Role::Other,
            _ => Role::All2All,
        },
        _ => Role::Function,
    }
}

/// Interned strings: an id per distinct string, in first-use order.
#[derive(Default)]
struct Strings {
    ids: HashMap<String, u32>,
    all: Vec<String>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.all.len() as u32;
        self.ids.insert(s.to_string(), i);
        self.all.push(s.to_string());
        i
    }
}

/// A communicator as the export defines it: its id and its members by
/// their rank in it (world ranks).
struct Comm {
    id: u32,
    name: String,
    members: BTreeMap<i32, i32>,
}

/// A communicator as the lineage names it: (id, lineage group).
type Key = (u32, u64);

/// The communicators met. The lineage tells the colours of a `Comm_split`
/// and the rows of a `Cart_sub` of a known grid apart; the rows of a grid
/// it does not know (ambiguous instances) are told apart by who talks to
/// whom: ranks that name each other as peers on the communicator are in
/// one instance. A row used for collectives alone is then one instance per
/// rank, and its group lists only that rank.
#[derive(Default)]
struct Comms {
    by_key: HashMap<(Key, i32), usize>,
    all: Vec<Comm>,
    /// The lineages that several instances share, with a union-find of
    /// world ranks over their peers.
    shared: HashMap<Key, HashMap<i32, i32>>,
}

impl Comms {
    /// The instance of `key` that world rank `me` is in: its root in the
    /// union-find of a shared lineage, else 0 (one instance).
    fn instance(&mut self, key: Key, me: i32) -> i32 {
        let Some(uf) = self.shared.get_mut(&key) else {
            return 0;
        };
        let mut x = me;
        while let Some(&p) = uf.get(&x) {
            if p == x {
                break;
            }
            x = p;
        }
        x
    }

    fn union(&mut self, key: Key, a: i32, b: i32) {
        let (ra, rb) = (self.instance(key, a), self.instance(key, b));
        if let Some(uf) = self.shared.get_mut(&key) {
            uf.entry(ra).or_insert(ra);
            uf.insert(rb, ra);
        }
    }

    fn get(&mut self, key: Key, me: i32) -> &mut Comm {
        let inst = self.instance(key, me);
        let n = self.all.len();
        let i = *self.by_key.entry((key, inst)).or_insert(n);
        if i == n {
            let name = match key.0 {
                0 => "MPI_COMM_WORLD".to_string(),
                1 => format!("MPI_COMM_SELF of rank {me}"),
                c => format!("communicator {c}"),
            };
            self.all.push(Comm {
                id: n as u32,
                name,
                members: BTreeMap::new(),
            });
        }
        &mut self.all[i]
    }
}

/// A posted nonblocking point-to-point request, until its completion.
#[derive(Clone, Copy)]
enum Posted {
    Send,
    /// Communicator, source (rank in it, when concrete), tag, bytes.
    Recv(u32, Option<u32>, Option<u32>, u64),
}

fn tag_of(t: Tag) -> u32 {
    match t {
        Tag::Value(v) => v as u32,
        Tag::Any => UNDEFINED_U32,
    }
}

/// Every communicator of the trace with its members as far as the events
/// name them (each caller's rank, each peer's): a pass over all ranks
/// before the records are written, because a record names a wildcard
/// receive's sender by its rank in the communicator, which only the other
/// ranks' calls may tell.
fn members(file: &TraceFile, ranks: &[u32]) -> Result<Comms, Error> {
    let mut comms = Comms::default();
    // What each rank says of each communicator: its own rank in it and its
    // peers' (local, world).
    let mut facts: Vec<(Key, i32, i32, i32)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &rank in ranks {
        let me = rank as i32;
        let t = timed::rank_trace(file, rank)?;
        let mut lineage = Lineage::new(rank, world_size(file));
        let mut ex = t.expand();
        for ev in ex.by_ref() {
            let key = (ev.comm.0, lineage.view(ev.comm.0).inst);
            if ev.comm_rank >= 0 && seen.insert((key, me, ev.comm_rank, me)) {
                facts.push((key, me, ev.comm_rank, me));
            }
            for x in [ev.send, ev.recv].into_iter().flatten() {
                if let Peer::Rank { world, local } = x.peer
                    && seen.insert((key, me, local, world))
                {
                    facts.push((key, me, local, world));
                }
            }
            if let Some(c) = ev.create.as_ref()
                && let Some(new) = c.new
                && ev.op == Op::CartSub
            {
                lineage.observe(&ev);
                let v = lineage.view(new.0);
                if v.ambiguous {
                    comms.shared.entry((new.0, v.inst)).or_default();
                }
                continue;
            }
            lineage.observe(&ev);
        }
        if ex.is_broken() {
            return Err(
                timed::Error::Trace(format!("rank {rank}'s expansion stopped early")).into(),
            );
        }
    }
    for &(key, me, _, world) in &facts {
        if world != me {
            comms.union(key, me, world);
        }
    }
    for (key, me, local, world) in facts {
        comms.get(key, me).members.insert(local, world);
    }
    Ok(comms)
}

/// The attribute that carries a call with every field of the event model
/// (see [`EVENT_ATTRIBUTE`]).
const EVENT_ATTR: u32 = 0;
/// The attribute that carries a call's position among its rank's calls.
const SEQ_ATTR: u32 = 1;
/// The attribute that carries a call's source location.
const SITE_ATTR: u32 = 2;

/// The location id of a rank's thread: rank << 16 | thread (Score-P
/// numbers a rank's threads the same way). One function, so that the
/// records, the closing and the definition of a location agree.
fn location(rank: u32, thread: u32) -> u64 {
    (u64::from(rank) << 16) | u64::from(thread)
}

/// The peer's rank in the communicator of a transfer that names one.
fn local_peer(x: Option<trace::Transfer>) -> Option<u32> {
    match x.map(|t| t.peer) {
        Some(Peer::Rank { local, .. }) => Some(local as u32),
        _ => None,
    }
}

impl Comm {
    /// The rank in this communicator of world rank `world`, as far as the
    /// events named it: a wildcard receive's sender is known by its world
    /// rank only.
    fn local_of(&self, world: i32) -> Option<u32> {
        self.members
            .iter()
            .find(|&(_, &w)| w == world)
            .map(|(&l, _)| l as u32)
    }
}

/// The records of one call, split by when they happen: at its entry
/// (its `Enter` first) and at its exit (its `Leave` last). Separate from
/// the writing so that each family of calls maps to records in a method
/// of its own.
struct CallRecords {
    start: Vec<Record>,
    end: Vec<Record>,
}

impl CallRecords {
    /// The MPI records of `ev`, on the export's communicator `c`, between
    /// the region's `Enter` and `Leave`; `posted` holds the rank's pending
    /// nonblocking requests, which their completions complete.
    fn mpi(&mut self, ev: &Event, c: u32, comms: &Comms, posted: &mut HashMap<ReqId, Posted>) {
        match ev.op {
            // A call that returned an error did nothing: its region
            // only (the event attribute keeps its error class).
            _ if ev.failed() => {}
            Op::Send | Op::Ssend | Op::Bsend | Op::Rsend => self.send(ev, c),
            Op::Recv | Op::Sendrecv | Op::SendrecvReplace => {
                if ev.op != Op::Recv {
                    self.send(ev, c);
                }
                self.recv(ev, c, comms);
            }
            Op::Isend | Op::Issend | Op::Ibsend | Op::Irsend => self.isend(ev, c, posted),
            Op::Irecv => self.irecv(ev, c, posted),
            _ if ev.op.family() == Family::Completion => self.completions(ev, comms, posted),
            op => self.collective(ev, op, c, comms),
        }
    }

    /// A blocking send's `MpiSend`, at entry.
    fn send(&mut self, ev: &Event, c: u32) {
        if let (Some(to), Some(x)) = (local_peer(ev.send), ev.send) {
            self.start
                .push(Record::MpiSend(to, c, tag_of(x.tag), bytes(ev.send)));
        }
    }

    /// A blocking receive's `MpiRecv`, at exit: a wildcard's source and
    /// tag are the ones it matched.
    fn recv(&mut self, ev: &Event, c: u32, comms: &Comms) {
        // A blocking receive's matched source (a world rank) and tag.
        let matched = ev.matched.iter().find(|m| m.req.is_none());
        if let Some(x) = ev.recv {
            let from = local_peer(ev.recv)
                .or_else(|| matched.and_then(|m| comms.all[c as usize].local_of(m.source)));
            let tag = match x.tag {
                Tag::Value(v) => v as u32,
                Tag::Any => matched.map_or(UNDEFINED_U32, |m| m.tag as u32),
            };
            if let Some(from) = from {
                self.end.push(Record::MpiRecv(from, c, tag, bytes(ev.recv)));
            }
        }
    }

    /// A nonblocking send's `MpiIsend`, at entry; its request is then
    /// pending.
    fn isend(&mut self, ev: &Event, c: u32, posted: &mut HashMap<ReqId, Posted>) {
        if let (Some(to), Some(x), Some(req)) = (local_peer(ev.send), ev.send, ev.req) {
            self.start.push(Record::MpiIsend(
                to,
                c,
                tag_of(x.tag),
                bytes(ev.send),
                req.0,
            ));
            posted.insert(req, Posted::Send);
        }
    }

    /// A nonblocking receive's `MpiIrecvRequest`, at entry; its source,
    /// tag and bytes wait in `posted` for the `MpiIrecv` of its
    /// completion.
    fn irecv(&mut self, ev: &Event, c: u32, posted: &mut HashMap<ReqId, Posted>) {
        if let (Some(x), Some(req)) = (ev.recv, ev.req) {
            self.start.push(Record::MpiIrecvRequest(req.0));
            let tag = match x.tag {
                Tag::Value(v) => Some(v as u32),
                Tag::Any => None,
            };
            posted.insert(
                req,
                Posted::Recv(c, local_peer(ev.recv), tag, bytes(ev.recv)),
            );
        }
    }

    /// A `Wait*`/`Test*`'s completions of pending requests, at exit:
    /// `MpiIsendComplete` for a send, `MpiIrecv` for a receive (with the
    /// source and tag it matched where it was posted as a wildcard).
    fn completions(&mut self, ev: &Event, comms: &Comms, posted: &mut HashMap<ReqId, Posted>) {
        for r in &ev.done {
            match posted.remove(r) {
                Some(Posted::Send) => self.end.push(Record::MpiIsendComplete(r.0)),
                Some(Posted::Recv(rc, from, tag, len)) => {
                    let m = ev.matched.iter().find(|m| m.req == Some(*r));
                    let from =
                        from.or_else(|| m.and_then(|m| comms.all[rc as usize].local_of(m.source)));
                    let tag = tag.or(m.map(|m| m.tag as u32)).unwrap_or(UNDEFINED_U32);
                    if let Some(from) = from {
                        self.end.push(Record::MpiIrecv(from, rc, tag, len, r.0));
                    }
                }
                None => {}
            }
        }
    }

    /// A blocking collective's `MpiCollectiveBegin` at entry and
    /// `MpiCollectiveEnd` at exit, with the bytes Score-P records.
    fn collective(&mut self, ev: &Event, op: Op, c: u32, comms: &Comms) {
        if let Some(code) = collective_op(op) {
            self.start.push(Record::CollectiveBegin);
            let root = ev.root.map_or(UNDEFINED_U32, |r| r as u32);
            let n = comms.all[c as usize]
                .members
                .len()
                .max(ev.recv_counts.len())
                .max(ev.send_counts.len());
            let (sent, recvd) = scorep::transferred(ev, n as u64);
            self.end
                .push(Record::CollectiveEnd(code, c, root, sent, recvd));
        }
    }
}

/// What the export tracks of the rank being written: its communicators'
/// lineage (which instance of a communicator a call is on), its pending
/// nonblocking requests and its records per thread (a location's event
/// count in the definitions).
struct RankCalls {
    rank: u32,
    lineage: Lineage,
    posted: HashMap<ReqId, Posted>,
    /// Records per thread of this rank.
    counts: BTreeMap<u32, u64>,
    /// The end of the last call written per thread of this rank.
    ends: HashMap<u32, u64>,
}

/// An export under way: the archive being written and what its
/// definitions will list once every rank's records are written (OTF2
/// writes definitions last, when a location's event count is known).
struct Export<'a> {
    file: &'a TraceFile,
    clock: Clock,
    /// The archive's global offset: the timeline's common zero, or 0.
    offset: u64,
    w: Writer,
    strings: Strings,
    /// Call sites' source locations.
    labels: HashMap<u64, &'a str>,
    /// The region of each call met, numbered in first-use order.
    regions: BTreeMap<Op, u32>,
    locations: Vec<LocationDef>,
    comms: Comms,
    /// The latest time written.
    last: u64,
    done: Exported,
    /// The hex of the call being encoded (reused from call to call).
    line: String,
}

/// Writes `file` as the OTF2 archive `dir/traces.otf2` (with `dir/traces/`
/// and `dir/traces.def`). `dir` must not exist yet or be empty: OTF2 does
/// not overwrite an archive.
pub fn export(file: &TraceFile, dir: &Path) -> Result<Exported, Error> {
    if dir.join("traces.otf2").exists() || dir.join("traces").exists() {
        return Err(Error::Exists(dir.to_path_buf()));
    }
    let clock = Clock::of(file);
    let w = Writer::create(dir, "traces")?;
    let ranks: Vec<u32> = file.trace.ranks().iter().collect();
    let mut ex = Export {
        file,
        clock,
        offset: if clock.timed { clock.zero } else { 0 },
        w,
        strings: Strings::default(),
        labels: file.meta.site_labels(),
        regions: BTreeMap::new(),
        locations: Vec::new(),
        comms: members(file, &ranks)?,
        last: 0,
        done: Exported {
            ranks: 0,
            locations: 0,
            calls: 0,
            records: 0,
            timed: clock.timed,
            overlapping: 0,
            max_cut_ns: 0,
        },
        line: String::with_capacity(128),
    };
    for &rank in &ranks {
        ex.rank(rank)?;
    }
    ex.finish(&ranks)
}

impl Export<'_> {
    /// Writes rank `rank`'s calls in order, then closes and defines its
    /// locations: the export holds one rank's buffers at a time.
    fn rank(&mut self, rank: u32) -> Result<(), Error> {
        let t = timed::rank_trace(self.file, rank)?;
        let mut events = RankEvents::new(self.file, &t, rank, self.clock)?;
        let mut r = RankCalls {
            rank,
            lineage: Lineage::new(rank, world_size(self.file)),
            posted: HashMap::new(),
            counts: BTreeMap::new(),
            ends: HashMap::new(),
        };
        let group_name = self.strings.id(&format!("rank {rank}"));
        let mut seq = 0u64;
        // Each call is written once the next is known, so that one lasting
        // past the next call's start on its thread ends there.
        let mut pending: Option<(Event, f64, f64)> = None;
        while let Some(next) = events.next_event() {
            let (ev, start, dur) = next?;
            if let Some((p, p_start, mut p_dur)) = pending.take() {
                if p.thread == ev.thread && p_start + p_dur > start {
                    let cut = p_dur - (start - p_start).max(0.0);
                    self.done.overlapping += 1;
                    self.done.max_cut_ns = self.done.max_cut_ns.max(cut.round() as u64);
                    p_dur -= cut;
                }
                self.call(&mut r, &p, (p_start, p_dur), seq)?;
                seq += 1;
            }
            pending = Some((ev, start, dur));
        }
        if let Some((p, p_start, p_dur)) = pending {
            self.call(&mut r, &p, (p_start, p_dur), seq)?;
        }
        self.close_locations(rank, r.counts, group_name)?;
        self.done.ranks += 1;
        Ok(())
    }

    /// Writes one call, `seq`-th of its rank, that starts and lasts
    /// `(start, dur)` ns: its `Enter` with the attributes and the MPI
    /// records at its start, the others and its `Leave` at its end.
    fn call(
        &mut self,
        r: &mut RankCalls,
        ev: &Event,
        (start, dur): (f64, f64),
        seq: u64,
    ) -> Result<(), Error> {
        // Never before the end of the thread's last call (rounding, or the
        // calls of other threads in between).
        let prev = r.ends.get(&ev.thread).copied().unwrap_or(0);
        let t0 = (self.offset + start.max(0.0).round() as u64).max(prev);
        let t1 = t0 + dur.max(0.0).round() as u64;
        r.ends.insert(ev.thread, t1);
        self.last = self.last.max(t1);
        let loc = location(r.rank, ev.thread);
        let n = self.regions.len() as u32;
        let region = *self.regions.entry(ev.op).or_insert(n);
        let value = self.encoded(ev)?;
        let mut records = CallRecords {
            start: vec![Record::Enter(region)],
            end: Vec::new(),
        };
        let me = r.rank as i32;
        let c = self
            .comms
            .get((ev.comm.0, r.lineage.view(ev.comm.0).inst), me)
            .id;
        records.mpi(ev, c, &self.comms, &mut r.posted);
        records.end.push(Record::Leave(region));
        let n_rec = (records.start.len() + records.end.len()) as u64;
        let mut attrs = vec![
            (EVENT_ATTR, AttrValue::String(value)),
            (SEQ_ATTR, AttrValue::U64(seq)),
        ];
        if let Some(label) = self.labels.get(&ev.site) {
            attrs.push((SITE_ATTR, AttrValue::String(self.strings.id(label))));
        }
        for (i, rec) in records.start.into_iter().enumerate() {
            self.w
                .event(loc, t0, rec, if i == 0 { &attrs[..] } else { &[] })?;
        }
        for rec in records.end {
            self.w.event(loc, t1, rec, &[])?;
        }
        *r.counts.entry(ev.thread).or_default() += n_rec;
        self.done.records += n_rec;
        self.done.calls += 1;
        r.lineage.observe(ev);
        Ok(())
    }

    /// The string that the event attribute of `ev` holds: the call with
    /// every field but its times (the records carry those), postcard
    /// bytes in hex, which `rankscale import` decodes.
    fn encoded(&mut self, ev: &Event) -> Result<u32, Error> {
        let mut raw = ev.clone();
        raw.time = Default::default();
        self.line.clear();
        let encoded = postcard::to_allocvec(&raw).map_err(|e| Error::Archive(e.to_string()))?;
        for b in encoded {
            let _ = write!(self.line, "{b:02x}");
        }
        Ok(self.strings.id(&self.line))
    }

    /// Closes rank `rank`'s locations, one per thread with calls (which
    /// frees their buffers), and defines each with its record count.
    fn close_locations(
        &mut self,
        rank: u32,
        counts: BTreeMap<u32, u64>,
        group_name: u32,
    ) -> Result<(), Error> {
        for (thread, n) in counts {
            self.w.close_location(location(rank, thread))?;
            let name = self.strings.id(&format!("rank {rank} thread {thread}"));
            self.locations.push(LocationDef {
                id: location(rank, thread),
                name,
                group: rank,
                group_name,
                events: n,
                thread: true,
            });
        }
        Ok(())
    }

    /// Writes the definitions of everything the records named and closes
    /// the archive.
    fn finish(mut self, ranks: &[u32]) -> Result<Exported, Error> {
        self.done.locations = self.locations.len();
        let mut defs = Definitions {
            clock: (
                1_000_000_000,
                self.offset,
                self.last.saturating_sub(self.offset),
            ),
            machine: (self.strings.id("machine"), self.strings.id("machine")),
            ..Definitions::default()
        };
        self.define_groups(&mut defs, ranks);
        self.define_regions(&mut defs);
        self.define_attributes(&mut defs);
        defs.locations = std::mem::take(&mut self.locations);
        defs.strings = std::mem::take(&mut self.strings.all);
        self.w.finish(&defs)?;
        Ok(self.done)
    }

    /// The groups and the communicators. Group 0 lists every location
    /// that is a rank's first thread, by rank: the "locations" of MPI
    /// communicators; each communicator's group lists its members by
    /// their index in it.
    fn define_groups(&mut self, defs: &mut Definitions, ranks: &[u32]) {
        let ranks_group: Vec<u64> = ranks.iter().map(|&r| location(r, 0)).collect();
        let rank_index: HashMap<i32, u64> = ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| (r as i32, i as u64))
            .collect();
        defs.groups.push(GroupDef {
            id: 0,
            name: self.strings.id("MPI ranks"),
            locations: true,
            comm_self: false,
            members: ranks_group,
        });
        for (i, c) in self.comms.all.iter().enumerate() {
            let group = i as u32 + 1;
            defs.groups.push(GroupDef {
                id: group,
                name: self.strings.id(&c.name),
                locations: false,
                comm_self: false,
                members: c
                    .members
                    .values()
                    .filter_map(|w| rank_index.get(w).copied())
                    .collect(),
            });
            defs.comms.push(CommDef {
                id: c.id,
                name: self.strings.id(&c.name),
                group,
                parent: UNDEFINED_U32,
            });
        }
    }

    /// A region per call met, `MPI_<call>` with OTF2's role for it, in
    /// the order of their ids.
    fn define_regions(&mut self, defs: &mut Definitions) {
        let mut by_id: Vec<(u32, Op)> = self.regions.iter().map(|(&op, &id)| (id, op)).collect();
        by_id.sort_unstable();
        for (id, op) in by_id {
            defs.regions.push(RegionDef {
                id,
                name: self.strings.id(&format!("MPI_{}", op.name())),
                description: self.strings.id(""),
                role: role(op),
                mpi: true,
            });
        }
    }

    /// rankscale's own attributes, which `rankscale import` reads back.
    fn define_attributes(&mut self, defs: &mut Definitions) {
        defs.attributes.push(AttributeDef {
            id: EVENT_ATTR,
            name: self.strings.id(EVENT_ATTRIBUTE),
            description: self.strings.id(
                "the call with every field of rankscale's event model, postcard-encoded in hex (rankscale import reads it back)",
            ),
            kind: AttrKind::String,
        });
        defs.attributes.push(AttributeDef {
            id: SEQ_ATTR,
            name: self.strings.id(SEQ_ATTRIBUTE),
            description: self.strings.id(
                "the call's position among its rank's calls, all threads together (the order rankscale recorded them in)",
            ),
            kind: AttrKind::U64,
        });
        defs.attributes.push(AttributeDef {
            id: SITE_ATTR,
            name: self.strings.id(SITE_ATTRIBUTE),
            description: self
                .strings
                .id("where the call is in the source: function file:line"),
            kind: AttrKind::String,
        });
        defs.attributes.sort_by_key(|a| a.id);
    }
}
