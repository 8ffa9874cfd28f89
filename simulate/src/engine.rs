//! The simulation proper: every rank's events in order, each call costed
//! in LogGOPS, ranks waiting on one another as MPI makes them wait.
//!
//! With every receive's source and tag known (a wildcard takes the source
//! and tag the trace recorded for it), MPI's matching is fixed by the
//! non-overtaking rule alone: the k-th send on a channel (communicator,
//! source, destination, tag) meets the k-th receive. So the simulation is a
//! dataflow evaluation: a rank runs until it needs something another rank
//! has not produced yet (a message, a collective's last member), waits, and
//! is woken when it arrives. No global clock orders the ranks; every time is
//! the maximum of the times it depends on plus its costs, which is what a
//! time-ordered discrete-event simulation of the same model computes. When
//! no rank can go on and some have not finished, the trace deadlocks under
//! the model, and the error names each rank's pending call.
//!
//! The critical path is carried along: each rank keeps how its current
//! time splits into computation and time in each call site, and a rank
//! whose call was held up by another takes that rank's split at the moment
//! it sent (or entered the collective), plus the transfer.

mod io;
mod rma;

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;

use compress::ComputeDraws;
use rustc_hash::FxHashMap;
use semantics::channel::{Read, Stream};
use semantics::comms::Comms;
use smallvec::SmallVec;
use trace::{Event, Expand, Family, Op, Peer, ReqId, Span, Trace};

use crate::coll::{self, Member};
use crate::params::Params;
use crate::{Blocked, Error, Options};

type Time = f64;
type CellId = u32;
/// A stream of messages: communicator, the sender (world rank; in class
/// mode the representative of the sender's class), destination minus
/// sender, tag. A receive names its sender's class's representative and
/// its own offset from the sender, so in class mode every receive of a
/// class reads the one stream its representative's neighbour writes.
type Key = (u32, u32, i64, i32);

/// How a rank's time splits, as it stood when a message or a collective
/// took it along: index 0 is computation, index `1 + s` the time in call
/// site `s` (by [`Sites`] index). Shared, never changed: a rank changes
/// its own split in place ([`RankState::add`]) and shares a copy only when
/// something takes it, one copy until its next change.
type Split = Rc<[f64]>;

/// A completion time, once known, and the critical path that led to it
/// when another rank's progress set it.
struct Cell {
    at: Option<Time>,
    owner: u32,
    /// The other rank's split and the time it stands for.
    via: Option<(Split, Time)>,
}

/// Call sites numbered densely as the simulation meets them.
#[derive(Default)]
pub(crate) struct Sites {
    index: FxHashMap<(u64, Op), usize>,
    cache: Vec<(u64, Op, usize)>,
    pub(crate) list: Vec<(u64, Op)>,
}

impl Sites {
    fn of(&mut self, site: u64, op: Op) -> usize {
        // Most events repeat a few sites: a direct-mapped cache in front
        // of the map.
        let slot = ((site ^ (site >> 17) ^ op as u64) & 255) as usize;
        if self.cache.is_empty() {
            self.cache = vec![(u64::MAX, Op::Init, usize::MAX); 256];
        }
        let c = self.cache[slot];
        if c.0 == site && c.1 == op && c.2 < self.list.len() {
            return c.2;
        }
        let i = *self.index.entry((site, op)).or_insert_with(|| {
            self.list.push((site, op));
            self.list.len() - 1
        });
        self.cache[slot] = (site, op, i);
        i
    }
}

#[derive(Clone)]
struct SendRec {
    /// When the sender's CPU started the send.
    post: Time,
    /// When an eager message arrives (rendezvous: unused).
    arrive: Time,
    bytes: f64,
    rendezvous: bool,
    /// The sender's completion (rendezvous only).
    cell: Option<CellId>,
    split: Split,
}

#[derive(Clone)]
struct RecvRec {
    post: Time,
    cell: CellId,
    split: Split,
}

/// One stream's sends and who reads them: MPI's non-overtaking rule
/// ([`semantics::channel::Stream`]). Rank by rank, a stream has one
/// reader, which takes its sends in order, and a send is dropped once
/// taken. In class mode, several classes' readers may read one stream,
/// each at its own position, and sends are kept ([`claim`]).
struct Chan {
    stream: Stream<SendRec, RecvRec>,
    /// Ranks blocked in a probe of this stream.
    probers: Vec<u32>,
}

/// What one reader gets of a send: the first reader also completes the
/// sender's side (rendezvous), so it alone takes the send's cell.
fn claim(s: &mut SendRec) -> SendRec {
    let mut rec = s.clone();
    rec.cell = s.cell.take();
    rec
}

/// A collective waiting for its members.
struct Instance {
    op: Op,
    /// Arrivals expected: the communicator's size, or in class mode the
    /// number of simulated ranks.
    size: usize,
    root: usize,
    /// By comm rank (rank by rank) or by simulated rank (class mode): the
    /// member's comm rank, its part, its cell and its critical path.
    members: Vec<Option<(usize, Member, CellId, Split)>>,
    arrived: usize,
}

/// A persistent request's template.
#[derive(Clone, Copy)]
struct Template {
    op: Op,
    comm: u32,
    peer: u32,
    tag: i32,
    bytes: f64,
}

/// What a deadlock report says of a call.
#[derive(Clone, Copy)]
struct Brief {
    op: Op,
    site: u64,
    comm: u32,
    send: Option<(i32, i32)>,
    recv: Option<(i32, i32)>,
    requests: usize,
}

impl Brief {
    fn of(e: &Event) -> Brief {
        let end = |t: Option<trace::Transfer>| {
            t.and_then(|t| Some((t.peer.world()?, t.tag.value().unwrap_or(-1))))
        };
        Brief {
            op: e.op,
            site: e.site,
            comm: e.comm.0,
            send: end(e.send),
            recv: end(e.recv),
            requests: e.done.len(),
        }
    }
}

/// The call a rank is in.
struct Current {
    brief: Brief,
    /// A probe waiting for its message, kept to be retried.
    probe: Option<Box<Event>>,
    site: usize,
    enter: Time,
    /// The earliest it can return, on its own account.
    floor: Time,
    cells: SmallVec<[CellId; 4]>,
    /// Set when the call is a probe that found no message yet.
    probing: bool,
}

/// Streams each rank remembers (see [`Engine::chan`]): a 3D stencil's
/// six neighbours, both ways, fit.
const CHAN_CACHE: usize = 12;

/// Events expanded at a time per rank (see [`Engine::next_event`]), at
/// most: 32 (a 4,096-rank stencil, ranks run last woken first: 7.4 s at 16
/// and at 32, 7.2 s at 64 for a quarter more memory), fewer when the
/// batches of every rank would hold more than [`BATCH_BYTES`].
const PULL_BATCH: usize = 32;

/// The memory all ranks' batches of expanded events may hold.
const BATCH_BYTES: usize = 256 << 20;

struct RankState<'a> {
    ex: Expand<'a>,
    /// The rank's recorded timeline, when the trace has it.
    spans: Option<Vec<Span>>,
    /// Events taken from `ex` so far.
    pulled: usize,
    ahead: VecDeque<(Event, f64)>,
    draws: ComputeDraws,
    cpu: Time,
    nic: Time,
    /// How the rank's time so far splits (see [`Split`]).
    split: Vec<f64>,
    /// `split` as shared since its last change.
    shared: Option<Split>,
    reqs: FxHashMap<ReqId, CellId>,
    /// The send half of an `Isendrecv` request (its receive half is in
    /// `reqs`): the request completes when both have.
    send_halves: FxHashMap<ReqId, CellId>,
    templates: FxHashMap<ReqId, Template>,
    /// Persistent collective requests (MPI 4 `X_init`): each `MPI_Start`
    /// of one arrives at a new instance of the collective it holds.
    coll_templates: FxHashMap<ReqId, Event>,
    /// When the one-sided operations this rank has issued since its last
    /// closing synchronisation have all completed (see `rma.rs`).
    rma_done: Time,
    /// When the rank's last independent file access ends (see `io.rs`).
    io_free: Time,
    /// Per file: the cell of the open split collective's `_begin`.
    split_io: FxHashMap<u32, CellId>,
    /// Per window: the targets of the open `Win_start` epoch and the
    /// origins of the open `Win_post` epoch (world ranks).
    accessing: FxHashMap<u32, Vec<u32>>,
    exposed: FxHashMap<u32, Vec<u32>>,
    /// The communicators the rank knows, as every tool names them.
    comms: Comms,
    mprobed: FxHashMap<u64, SendRec>,
    /// The streams the rank used last (see [`Engine::chan`]), and the
    /// next entry to replace.
    chan_cache: SmallVec<[(Key, u32); CHAN_CACHE]>,
    chan_next: usize,
    current: Option<Current>,
    /// A call waiting for the computation before it (shared cores): the
    /// event, the computation's cell, and when it began.
    deferred: Option<(Event, CellId, Time)>,
    finished: bool,
    queued: bool,
    first: bool,
    compute: f64,
    mpi: f64,
    end: Time,
    events: u64,
}

impl RankState<'_> {
    /// The rank's split, shared: one copy per change, however many
    /// messages take it (a copy per message, with its allocation and its
    /// free, was a fifth of the simulation's time).
    fn snapshot(&mut self) -> Split {
        self.shared
            .get_or_insert_with(|| Rc::from(self.split.as_slice()))
            .clone()
    }

    /// Adds `x` ns to part `i` of the rank's split.
    fn add(&mut self, i: usize, x: f64) {
        self.shared = None;
        grow(&mut self.split, i);
        self.split[i] += x;
    }

    /// Takes another rank's split as the rank's own.
    fn adopt(&mut self, s: &[f64]) {
        self.shared = None;
        self.split.clear();
        self.split.extend_from_slice(s);
    }

    /// The rank's next event from the trace and the computation before it:
    /// the recorded gap when the trace has the rank's timeline, else a draw
    /// from the event's histogram.
    fn pull(&mut self) -> Option<(Event, f64)> {
        let e = self.ex.next()?;
        let i = self.pulled;
        self.pulled += 1;
        let gap = match &self.spans {
            Some(s) => match (i.checked_sub(1).and_then(|j| s.get(j)), s.get(i)) {
                (Some(prev), Some(this)) => this.enter.saturating_sub(prev.leave),
                _ => 0,
            },
            None => self.draws.compute(&self.ex),
        };
        Some((e, gap as f64))
    }
}

/// What one rank did, in the simulation's time.
pub(crate) struct RankOut {
    pub compute: f64,
    pub mpi: f64,
    pub end: Time,
    pub events: u64,
}

/// What a simulation produced.
pub(crate) struct Outcome {
    pub ranks: Vec<RankOut>,
    pub sites: Sites,
    /// Per site: calls and summed time inside them, over every rank.
    pub site_time: Vec<(u64, f64)>,
    pub critical: Vec<f64>,
    pub messages: u64,
    pub collectives: u64,
    pub one_sided: u64,
    pub io: u64,
}

/// Which ranks the engine runs and how the others map onto them.
pub(crate) struct Layout {
    /// The world rank of each simulated rank.
    pub world: Vec<u32>,
    /// For every world rank, the simulated rank that stands for it (itself
    /// when simulating rank by rank).
    pub stand_in: Vec<u32>,
    /// Each simulated rank's draw seed rank: its class's representative, so
    /// that ranks of one class draw the same computation in either mode.
    pub seed_rank: Vec<u32>,
    /// How many world ranks each simulated rank stands for (counts and
    /// times per site are weighted by it).
    pub weight: Vec<u64>,
    /// One simulated rank per class (streams are read by several classes).
    pub classes: bool,
}

/// Collectives of more members than this are costed once with every
/// member entering together, and then shifted to the last entry (class
/// mode only).
const EXACT_MEMBERS: usize = 1 << 16;

/// A collective's shape: operation, root, members, send and receive
/// block bytes (as bits).
type UniformKey = (Op, usize, usize, u64, u64);

pub(crate) struct Engine<'a> {
    net: Params,
    opts: Options,
    p: u32,
    layout: Layout,
    /// Why class mode does not hold, once it is found not to.
    asymmetric: Option<String>,
    /// Class mode: rendezvous sends in posting order, until a reader
    /// claims them (see [`Engine::release_unread`]).
    unread: VecDeque<(Key, u64)>,
    /// Collective costs with every member entering at 0 (class mode, large
    /// communicators), by operation, root, size and block bytes.
    uniform: FxHashMap<UniformKey, Rc<Vec<f64>>>,
    ranks: Vec<RankState<'a>>,
    cells: Vec<Cell>,
    free: Vec<CellId>,
    /// The streams, by the index `chan_ids` gives them.
    chans: Vec<Chan>,
    chan_ids: FxHashMap<Key, u32>,
    colls: FxHashMap<(u64, u64), Instance>,
    /// Ranks that can go on.
    ready: Ready,
    /// The shared cores, when ranks share them (`--cores`).
    ps: Option<Sharing>,
    sites: Sites,
    site_time: Vec<(u64, f64)>,
    messages: u64,
    collectives: u64,
    /// One-sided calls modelled (weighted, as messages are).
    one_sided: u64,
    /// MPI-IO calls, taken as local calls of no cost (weighted).
    io: u64,
    lookahead: usize,
    /// Events expanded at a time per rank (see [`PULL_BATCH`]).
    pull_batch: usize,
}

/// A synchronous send completes only once its receive has matched, like a
/// rendezvous, whatever its size; a buffered one never waits.
fn protocol(op: Op, bytes: f64, net: &Params) -> bool {
    match op {
        Op::Ssend | Op::Issend | Op::SsendInit => true,
        Op::Bsend | Op::Ibsend => false,
        _ => bytes >= net.eager_limit as f64,
    }
}

impl<'a> Engine<'a> {
    /// An engine over every rank's trace, with the recorded timeline of the
    /// ranks that have one (`spans[r]`).
    pub(crate) fn new(
        traces: &'a [Trace],
        layout: Layout,
        mut spans: Vec<Option<Vec<Span>>>,
        net: Params,
        opts: Options,
    ) -> Engine<'a> {
        let p = layout.stand_in.len() as u32;
        let n = traces.len() as u32;
        spans.resize(traces.len(), None);
        let ranks = traces
            .iter()
            .zip(spans)
            .enumerate()
            .map(|(r, (t, spans))| RankState {
                ex: t.expand(),
                spans,
                pulled: 0,
                ahead: VecDeque::new(),
                draws: ComputeDraws::new(opts.seed, layout.seed_rank[r]),
                cpu: 0.0,
                nic: 0.0,
                split: vec![0.0],
                shared: None,
                reqs: FxHashMap::default(),
                send_halves: FxHashMap::default(),
                templates: FxHashMap::default(),
                coll_templates: FxHashMap::default(),
                rma_done: 0.0,
                io_free: 0.0,
                split_io: FxHashMap::default(),
                accessing: FxHashMap::default(),
                exposed: FxHashMap::default(),
                comms: Comms::new(layout.world[r], i64::from(p)),
                mprobed: FxHashMap::default(),
                chan_cache: SmallVec::new(),
                chan_next: 0,
                current: None,
                deferred: None,
                finished: false,
                queued: true,
                first: true,
                compute: 0.0,
                mpi: 0.0,
                end: 0.0,
                events: 0,
            })
            .collect();
        let ps = opts.cores.filter(|&c| c < p).map(|c| Sharing {
            cores: f64::from(c.max(1)),
            now: 0.0,
            jobs: Vec::new(),
            computing: 0.0,
        });
        Engine {
            net,
            opts,
            p,
            layout,
            asymmetric: None,
            unread: VecDeque::new(),
            uniform: FxHashMap::default(),
            ranks,
            cells: Vec::new(),
            free: Vec::new(),
            chans: Vec::new(),
            chan_ids: FxHashMap::default(),
            colls: FxHashMap::default(),
            ready: Ready::new(n, ps.is_some()),
            ps,
            sites: Sites::default(),
            site_time: Vec::new(),
            messages: 0,
            collectives: 0,
            one_sided: 0,
            io: 0,
            lookahead: 1 << 20,
            pull_batch: (BATCH_BYTES / (traces.len().max(1) * size_of::<(Event, f64)>()))
                .clamp(1, PULL_BATCH),
        }
    }

    pub(crate) fn run(mut self) -> Result<Outcome, Error> {
        loop {
            loop {
                // The shared cores' next completion goes first when it is
                // earlier than the next rank's time.
                let next = self.ps.as_ref().and_then(Sharing::next);
                let rank = self.ready.first_time();
                if let Some(tp) = next
                    && rank.is_none_or(|tr| tp <= tr)
                {
                    self.ps_advance(tp);
                    continue;
                }
                let Some(r) = self.ready.pop() else {
                    break;
                };
                self.ranks[r as usize].queued = false;
                self.advance(r)?;
                if let Some(why) = self.asymmetric.take() {
                    return Err(Error::Asymmetric(why));
                }
            }
            if !self.release_unread() {
                break;
            }
        }
        let blocked: Vec<Blocked> = (0..self.ranks.len() as u32)
            .filter(|&r| !self.ranks[r as usize].finished)
            .map(|r| self.describe_block(r))
            .collect();
        if !blocked.is_empty() {
            return Err(Error::Deadlock(blocked));
        }
        let ranks = self
            .ranks
            .iter()
            .map(|r| RankOut {
                compute: r.compute,
                mpi: r.mpi,
                end: r.end,
                events: r.events,
            })
            .collect();
        let last = self
            .ranks
            .iter()
            .max_by(|a, b| a.end.total_cmp(&b.end))
            .map(|r| r.split.clone())
            .unwrap_or_default();
        Ok(Outcome {
            ranks,
            sites: self.sites,
            site_time: self.site_time,
            critical: last,
            messages: self.messages,
            collectives: self.collectives,
            one_sided: self.one_sided,
            io: self.io,
        })
    }

    /// Completes the shared cores' computations that end by `to`.
    fn ps_advance(&mut self, to: Time) {
        let done = match self.ps.as_mut() {
            Some(ps) => ps.advance(to),
            None => return,
        };
        for (cell, at) in done {
            self.resolve(cell, at, None);
        }
    }

    /// Starts `work` ns of computation at `t` on the shared cores, to
    /// complete `cell`.
    fn ps_add(&mut self, r: u32, t: Time, work: f64, cell: CellId) {
        self.ps_advance(t);
        let w = self.layout.weight[r as usize] as f64;
        if let Some(ps) = self.ps.as_mut() {
            ps.jobs.push((work, cell, w));
            ps.computing += w;
        }
    }

    /// Class mode, when no rank can go on: completes the oldest rendezvous
    /// send that no reader has claimed, as if its receive had been posted
    /// when the request to send arrived. With classes refined a few hops
    /// only, a representative's stream in some direction may have no
    /// reader among the representatives; its sender would otherwise wait
    /// forever. Returns whether one was released.
    fn release_unread(&mut self) -> bool {
        let net = self.net;
        while let Some((key, idx)) = self.unread.pop_front() {
            let Some(ch) = self
                .chan_ids
                .get(&key)
                .map(|&i| &mut self.chans[i as usize])
            else {
                continue;
            };
            let Some(s) = ch.stream.get_mut(idx) else {
                continue;
            };
            let Some(cell) = s.cell.take() else {
                continue;
            };
            let cts = s.post + 2.0 * (net.overhead + net.latency);
            let done = cts + net.overhead + net.wire(s.bytes);
            self.resolve(cell, done, None);
            return true;
        }
        false
    }

    fn describe_block(&self, r: u32) -> Blocked {
        let st = &self.ranks[r as usize];
        let (op, site, what) = match &st.current {
            Some(c) => {
                let e = &c.brief;
                let mut what = Vec::new();
                if let Some((w, tag)) = e.send {
                    what.push(format!("send to {w} tag {tag}"));
                }
                if let Some((w, tag)) = e.recv {
                    what.push(format!("receive from {w} tag {tag}"));
                }
                if e.op.is_collective() || e.op.family() == Family::CommManagement {
                    what.push(format!("communicator {} not complete", e.comm));
                }
                if c.probing {
                    what.push("a probed message that is never sent".into());
                }
                if e.requests > 0 {
                    what.push(format!("{} request(s)", e.requests));
                }
                (e.op.name(), e.site, what.join(", "))
            }
            None => ("?", 0, String::new()),
        };
        Blocked {
            rank: self.layout.world[r as usize],
            op,
            site,
            event: st.events,
            waits_for: what,
        }
    }

    /// The index in `chans` of the stream `key`, which rank `r` writes or
    /// reads, made when new.
    /// Each rank remembers the few streams it used last: a rank of a
    /// stencil uses the same handful over and over, and a look-up in the
    /// map of every stream (tens of thousands at 4,096 ranks) was mostly
    /// cache misses.
    fn chan(&mut self, r: u32, key: Key) -> usize {
        let st = &mut self.ranks[r as usize];
        let id = match st.chan_cache.iter().find(|c| c.0 == key) {
            Some(&(_, id)) => id,
            None => {
                let next = self.chans.len() as u32;
                let id = *self.chan_ids.entry(key).or_insert(next);
                if id == next {
                    self.chans.push(Chan {
                        stream: Stream::new(self.layout.classes),
                        probers: Vec::new(),
                    });
                }
                let slot = st.chan_next % CHAN_CACHE;
                st.chan_next = st.chan_next.wrapping_add(1);
                if slot < st.chan_cache.len() {
                    st.chan_cache[slot] = (key, id);
                } else {
                    st.chan_cache.push((key, id));
                }
                id
            }
        };
        id as usize
    }

    fn cell(&mut self, owner: u32) -> CellId {
        let c = Cell {
            at: None,
            owner,
            via: None,
        };
        match self.free.pop() {
            Some(id) => {
                self.cells[id as usize] = c;
                id
            }
            None => {
                self.cells.push(c);
                (self.cells.len() - 1) as CellId
            }
        }
    }

    fn resolve(&mut self, id: CellId, at: Time, via: Option<(Split, Time)>) {
        let c = &mut self.cells[id as usize];
        c.at = Some(at);
        c.via = via;
        let owner = c.owner;
        self.wake(owner, at);
    }

    fn wake(&mut self, r: u32, at: Time) {
        let st = &mut self.ranks[r as usize];
        if !st.queued && !st.finished {
            st.queued = true;
            self.ready.push(at.max(st.cpu), r);
        }
    }

    /// The next event of rank `r` and its computation gap. Events are
    /// expanded a batch at a time: a rank's expansion state (its
    /// loop and parameter cursors) is cold by the time the simulation
    /// comes back to it among thousands of ranks, and a batch pays for
    /// that once.
    fn next_event(&mut self, r: u32) -> Option<(Event, f64)> {
        let st = &mut self.ranks[r as usize];
        if st.ahead.is_empty() {
            while st.ahead.len() < self.pull_batch {
                let Some(x) = st.pull() else { break };
                st.ahead.push_back(x);
            }
        }
        st.ahead.pop_front()
    }

    /// The source and tag a wildcard receive by request `req` matched,
    /// from the completion call the trace recorded them on.
    fn look_ahead(&mut self, r: u32, req: ReqId) -> Option<(i32, i32)> {
        let st = &mut self.ranks[r as usize];
        let mut i = 0;
        loop {
            if i == st.ahead.len() {
                if st.ahead.len() >= self.lookahead {
                    return None;
                }
                let x = st.pull()?;
                st.ahead.push_back(x);
            }
            let e = &st.ahead[i].0;
            if let Some(m) = e.matched.iter().find(|m| m.req == Some(req)) {
                return Some((m.source, m.tag));
            }
            i += 1;
        }
    }

    /// Runs rank `r` until it blocks or ends.
    fn advance(&mut self, r: u32) -> Result<(), Error> {
        loop {
            if let Some((_, cell, _)) = &self.ranks[r as usize].deferred {
                // Computing on the shared cores: the call starts when the
                // computation has had its share of them.
                let Some(t) = self.cells[*cell as usize].at else {
                    return Ok(());
                };
                let (ev, cell, t0) = self.ranks[r as usize].deferred.take().expect("deferred");
                self.free.push(cell);
                let st = &mut self.ranks[r as usize];
                let took = (t - t0).max(0.0);
                st.cpu = t0 + took;
                st.compute += took;
                st.add(0, took);
                self.start(r, ev, 0.0);
                continue;
            }
            if self.ranks[r as usize].current.is_some() {
                if !self.try_finish(r) || self.ranks[r as usize].finished {
                    return Ok(());
                }
                continue;
            }
            // With shared cores, a rank that is behind goes first, so that
            // the cores see computations in time order. Without them, every
            // time is a pure max-plus dataflow and the order does not
            // matter: a rank runs until it blocks.
            let cpu = self.ranks[r as usize].cpu;
            if self.ps.is_some()
                && let Some(t) = self.ready.first_time()
                && t < cpu
            {
                self.ranks[r as usize].queued = true;
                self.ready.push(cpu, r);
                return Ok(());
            }
            let Some((ev, gap)) = self.next_event(r) else {
                let st = &mut self.ranks[r as usize];
                if st.ex.is_broken() {
                    return Err(Error::Broken(r));
                }
                st.finished = true;
                st.end = st.cpu;
                return Ok(());
            };
            if ev.thread != 0 {
                return Err(Error::Threads(r));
            }
            let gap = self.effective_gap(r, gap);
            if gap > 0.0 && self.ps.is_some() {
                let cell = self.cell(r);
                let t0 = self.ranks[r as usize].cpu;
                self.ps_add(r, t0, gap, cell);
                self.ranks[r as usize].deferred = Some((ev, cell, t0));
                continue;
            }
            self.start(r, ev, gap);
        }
    }

    /// Completes rank `r`'s current call if everything it waits on is
    /// known; false when it must wait longer.
    fn try_finish(&mut self, r: u32) -> bool {
        let cur = self.ranks[r as usize]
            .current
            .take()
            .expect("a current call");
        if cur.probing {
            // Retried: it goes on (to be completed on the next call) once
            // the message is there.
            let mut cur = cur;
            let ev = *cur.probe.take().expect("a waiting probe keeps its event");
            self.start_probe(r, cur, ev);
            return !self.ranks[r as usize]
                .current
                .as_ref()
                .is_some_and(|c| c.probing);
        }
        let mut done = cur.floor;
        let mut via: Option<(Split, Time)> = None;
        for &c in &cur.cells {
            match self.cells[c as usize].at {
                None => {
                    self.ranks[r as usize].current = Some(cur);
                    return false;
                }
                Some(t) => {
                    if t > done {
                        done = t;
                        via = self.cells[c as usize].via.clone();
                    }
                }
            }
        }
        for &c in &cur.cells {
            self.cells[c as usize].via = None;
            self.free.push(c);
        }
        let site = cur.site;
        let st = &mut self.ranks[r as usize];
        match via {
            Some((s, basis)) if done > cur.enter && done >= basis => {
                st.adopt(&s);
                st.add(site + 1, done - basis);
            }
            _ => st.add(site + 1, done - cur.enter),
        }
        st.mpi += done - cur.enter;
        st.cpu = done;
        let w = self.layout.weight[r as usize];
        let slot = &mut self.site_time[site];
        slot.0 += w;
        slot.1 += (done - cur.enter) * w as f64;
        if matches!(cur.brief.op, Op::Finalize | Op::Abort) {
            let st = &mut self.ranks[r as usize];
            st.finished = true;
            st.end = cur.enter;
        }
        true
    }

    /// The computation before rank `r`'s next call as simulated: none
    /// before the first call (`MPI_Init`: the time before it is the
    /// launch, not the application's) or with `--no-compute`, else scaled.
    fn effective_gap(&mut self, r: u32, gap: f64) -> f64 {
        let st = &mut self.ranks[r as usize];
        if std::mem::take(&mut st.first) || self.opts.no_compute {
            0.0
        } else {
            gap * self.opts.compute_scale
        }
    }

    /// Starts rank `r`'s call `ev` after `gap` of computation on a core of
    /// its own.
    fn start(&mut self, r: u32, ev: Event, gap: f64) {
        let site = self.sites.of(ev.site, ev.op);
        if site >= self.site_time.len() {
            self.site_time.resize(site + 1, (0, 0.0));
        }
        let net = self.net;
        let st = &mut self.ranks[r as usize];
        st.events += 1;
        st.cpu += gap;
        st.compute += gap;
        if gap > 0.0 {
            st.add(0, gap);
        }
        let enter = st.cpu;
        let mut cur = Current {
            brief: Brief::of(&ev),
            probe: None,
            site,
            enter,
            floor: enter,
            cells: SmallVec::new(),
            probing: false,
        };
        let comm = ev.comm.0;
        match ev.op.family() {
            // A call that returned an error did nothing: no modelled cost.
            _ if ev.failed() => {}
            // Calls recorded without detail (Family::is_generic) are local
            // calls of no modelled cost; the command line says how many
            // the trace holds.
            Family::InitExit | Family::Profiling => {}
            Family::BlockingP2p => {
                if let Some(s) = ev.send
                    && let Some(dst) = s.peer.world()
                    && let Some(tag) = s.tag.value()
                {
                    let bytes = self.bytes(s.bytes());
                    let (floor, cell) =
                        self.post_send(r, ev.op, comm, dst as u32, tag, bytes, enter);
                    cur.floor = cur.floor.max(floor);
                    cur.cells.extend(cell);
                }
                if let Some(x) = ev.recv
                    && !matches!(x.peer, Peer::Null)
                {
                    let m = ev.matched.iter().find(|m| m.req.is_none());
                    let src = x.peer.world().or(m.map(|m| m.source));
                    let tag = x.tag.value().or(m.map(|m| m.tag));
                    if let (Some(src), Some(tag)) = (src, tag) {
                        let c = self.post_recv(r, comm, src as u32, tag, enter);
                        cur.cells.push(c);
                    }
                }
            }
            Family::NonblockingP2p => {
                let cost = self.post_nonblocking(r, ev.op, comm, &ev, enter);
                cur.floor += cost;
            }
            Family::Persistent | Family::Partitioned => match ev.op {
                op if op.is_persistent_init() => {
                    if let Some(req) = ev.req {
                        let send = ev.op.is_send();
                        let side = if send { ev.send } else { ev.recv };
                        // Partitioned sends match partitioned receives
                        // only: a channel space of their own. The model
                        // moves the whole buffer at the Start (it does not
                        // wait for the last Pready).
                        let comm = ev.op.channel_comm(comm);
                        let t = side.and_then(|x| {
                            Some(Template {
                                op: ev.op,
                                comm,
                                peer: x.peer.world()? as u32,
                                tag: x.tag.value()?,
                                bytes: if send { self.bytes(x.bytes()) } else { 0.0 },
                            })
                        });
                        if let Some(t) = t {
                            self.ranks[r as usize].templates.insert(req, t);
                        }
                    }
                }
                Op::Start | Op::Startall => {
                    let mut t = enter;
                    for &req in &ev.reqs {
                        // Taken out while it arrives (which needs the whole
                        // engine), and put back: it runs again at the next Start.
                        if let Some(coll) = self.ranks[r as usize].coll_templates.remove(&req) {
                            let cell = self.arrive(r, &coll, t);
                            t += net.overhead;
                            let st = &mut self.ranks[r as usize];
                            st.coll_templates.insert(req, coll);
                            st.reqs.insert(req, cell);
                            continue;
                        }
                        let Some(tp) = self.ranks[r as usize].templates.get(&req).copied() else {
                            continue;
                        };
                        let cell = if matches!(tp.op, Op::RecvInit | Op::PrecvInit) {
                            self.post_recv(r, tp.comm, tp.peer, tp.tag, t)
                        } else {
                            let op = if tp.op == Op::SsendInit {
                                Op::Issend
                            } else {
                                Op::Isend
                            };
                            let (floor, cell) =
                                self.post_send(r, op, tp.comm, tp.peer, tp.tag, tp.bytes, t);
                            t = floor;
                            match cell {
                                Some(c) => c,
                                None => self.done_cell(r, floor),
                            }
                        };
                        self.ranks[r as usize].reqs.insert(req, cell);
                    }
                    cur.floor = t;
                }
                // Local calls on a started partitioned request.
                op if op.is_partition_call() => {}
                _ => {
                    for req in &ev.reqs {
                        let st = &mut self.ranks[r as usize];
                        st.templates.remove(req);
                        st.coll_templates.remove(req);
                        st.reqs.remove(req);
                        st.send_halves.remove(req);
                    }
                }
            },
            // A persistent collective's init: the collective it holds
            // runs at each Start (above).
            Family::PersistentCollective => {
                if let Some(req) = ev.req {
                    self.ranks[r as usize]
                        .coll_templates
                        .insert(req, ev.clone());
                }
                cur.floor += net.overhead;
            }
            Family::Completion => {
                let st = &mut self.ranks[r as usize];
                for req in &ev.done {
                    if let Some(c) = st.reqs.remove(req) {
                        cur.cells.push(c);
                    }
                    if let Some(c) = st.send_halves.remove(req) {
                        cur.cells.push(c);
                    }
                }
                if matches!(ev.op, Op::Test | Op::Testall | Op::Testany | Op::Testsome) {
                    cur.floor += net.overhead;
                }
            }
            Family::Probe => {
                self.start_probe(r, cur, ev);
                return;
            }
            Family::OneSided => self.one_sided(r, &ev, enter, &mut cur),
            Family::Io => self.file_call(r, &ev, enter, &mut cur),
            Family::Collective
            | Family::NonblockingCollective
            | Family::Neighborhood
            | Family::CommManagement
                if ev.op != Op::CommFree =>
            {
                let cell = self.arrive(r, &ev, enter);
                if let Some(req) = ev.req {
                    self.ranks[r as usize].reqs.insert(req, cell);
                    cur.floor += net.overhead;
                } else {
                    cur.cells.push(cell);
                }
            }
            // Calls recorded without detail (Family::is_generic): local
            // calls of no modelled cost; the command line says how many
            // the trace holds. And `Comm_free`: collective, but it
            // synchronises nothing, and the lineage counts a constructor's
            // communicator afresh.
            _ => {}
        }
        self.ranks[r as usize].current = Some(cur);
    }

    fn bytes(&self, b: i64) -> f64 {
        b.max(0) as f64 * self.opts.bytes_scale
    }

    /// A cell already known to complete at `at`.
    fn done_cell(&mut self, r: u32, at: Time) -> CellId {
        let c = self.cell(r);
        self.cells[c as usize].at = Some(at);
        c
    }

    /// Posts a send from rank `r` to world rank `dst`; returns when the
    /// sender's CPU is free again and, for a rendezvous, the cell of its
    /// completion.
    #[allow(clippy::too_many_arguments)]
    fn post_send(
        &mut self,
        r: u32,
        op: Op,
        comm: u32,
        dst: u32,
        tag: i32,
        bytes: f64,
        t: Time,
    ) -> (Time, Option<CellId>) {
        let net = self.net;
        let rendezvous = protocol(op, bytes, &net);
        let me = self.layout.world[r as usize];
        let st = &mut self.ranks[r as usize];
        let split = st.snapshot();
        let (free, arrive, cell) = if rendezvous {
            (t + net.overhead, 0.0, Some(self.cell(r)))
        } else {
            let leave = (t + net.overhead).max(st.nic);
            st.nic = leave + net.nic(bytes);
            (
                t + net.cpu(bytes),
                net.arrival(leave - net.overhead, bytes),
                None,
            )
        };
        let rec = SendRec {
            post: t,
            arrive,
            bytes,
            rendezvous,
            cell,
            split,
        };
        self.messages += self.layout.weight[r as usize];
        let key = (comm, me, i64::from(dst) - i64::from(me), tag);
        let keep = self.layout.classes;
        let id = self.chan(r, key);
        let ch = &mut self.chans[id];
        let (idx, met) = ch.stream.send_with(rec, claim);
        if rendezvous && keep {
            self.unread.push_back((key, idx));
        }
        let ready: SmallVec<[(SendRec, RecvRec); 1]> = met
            .into_iter()
            .map(|(_, send, recv)| (send, recv))
            .collect();
        let probers = std::mem::take(&mut ch.probers);
        for p in probers {
            self.wake(p, t);
        }
        for (send, recv) in ready {
            self.matched(send, recv);
        }
        (free, cell)
    }

    /// The stream a receive by rank `r` from world rank `src` reads.
    fn recv_key(&self, r: u32, comm: u32, src: u32, tag: i32) -> Key {
        let me = self.layout.world[r as usize];
        let stand_in = self
            .layout
            .stand_in
            .get(src as usize)
            .map_or(src, |&i| self.layout.world[i as usize]);
        (comm, stand_in, i64::from(me) - i64::from(src), tag)
    }

    /// Posts a receive by rank `r` from world rank `src` at `t`; returns
    /// its completion cell.
    fn post_recv(&mut self, r: u32, comm: u32, src: u32, tag: i32, t: Time) -> CellId {
        let key = self.recv_key(r, comm, src, tag);
        let cell = self.cell(r);
        let rec = RecvRec {
            post: t,
            cell,
            split: self.ranks[r as usize].snapshot(),
        };
        let id = self.chan(r, key);
        if let Read::Now(_, send, rec) = self.chans[id].stream.recv_with(r, rec, claim) {
            self.matched(send, rec);
        }
        cell
    }

    /// Costs a matched message on both sides.
    fn matched(&mut self, s: SendRec, r: RecvRec) {
        let net = self.net;
        if !s.rendezvous {
            let done = r.post.max(s.arrive) + net.cpu(s.bytes);
            let via = (s.arrive > r.post).then_some((s.split, s.post));
            self.resolve(r.cell, done, via);
            return;
        }
        // Request to send, clear to send, then the data.
        let rts = s.post + net.overhead + net.latency;
        let ready = r.post.max(rts);
        let cts = ready + net.overhead + net.latency;
        let send_done = cts + net.overhead + net.wire(s.bytes);
        let arrive = net.arrival(cts, s.bytes);
        let recv_done = arrive + net.cpu(s.bytes);
        if let Some(c) = s.cell {
            let via = (r.post > rts).then(|| (r.split.clone(), r.post));
            self.resolve(c, send_done, via);
        }
        let via = (rts >= r.post).then_some((s.split, s.post));
        self.resolve(r.cell, recv_done, via);
    }

    /// Posts a nonblocking send or receive; returns its CPU cost.
    fn post_nonblocking(&mut self, r: u32, op: Op, comm: u32, ev: &Event, t: Time) -> f64 {
        let Some(req) = ev.req else { return 0.0 };
        if matches!(op, Op::Isendrecv | Op::IsendrecvReplace) {
            // Both halves under one request: the send's cell apart, the
            // receive's where a receive's goes.
            let Some(s) = ev.send else { return 0.0 };
            // The receive branch reads only `ev.req` and `ev.recv`.
            let (cost, cell) = self.post_isend_half(r, Op::Isend, comm, s, t);
            self.ranks[r as usize].send_halves.insert(req, cell);
            return cost + self.post_nonblocking(r, Op::Irecv, comm, ev, t);
        }
        if op.is_send() {
            let Some(s) = ev.send else { return 0.0 };
            let (cost, cell) = self.post_isend_half(r, op, comm, s, t);
            self.ranks[r as usize].reqs.insert(req, cell);
            cost
        } else {
            let Some(x) = ev.recv else { return 0.0 };
            if matches!(x.peer, Peer::Null) {
                let c = self.done_cell(r, t);
                self.ranks[r as usize].reqs.insert(req, c);
                return 0.0;
            }
            let known = x.peer.world().zip(x.tag.value());
            let found = match known {
                Some(k) => Some(k),
                None => self
                    .look_ahead(r, req)
                    .map(|(s, g)| (x.peer.world().unwrap_or(s), x.tag.value().unwrap_or(g))),
            };
            // A wildcard receive never completed in the trace never matches
            // here either.
            if let Some((src, tag)) = found {
                let c = self.post_recv(r, comm, src as u32, tag, t);
                self.ranks[r as usize].reqs.insert(req, c);
            }
            0.0
        }
    }

    /// A nonblocking send `s` of rank `r` posted at `t`: its cost to the
    /// caller and the cell its request completes with (at once to
    /// `MPI_PROC_NULL`).
    fn post_isend_half(
        &mut self,
        r: u32,
        op: Op,
        comm: u32,
        s: trace::Transfer,
        t: Time,
    ) -> (f64, CellId) {
        let (Some(dst), Some(tag)) = (s.peer.world(), s.tag.value()) else {
            return (0.0, self.done_cell(r, t));
        };
        let bytes = self.bytes(s.bytes());
        let (free, cell) = self.post_send(r, op, comm, dst as u32, tag, bytes, t);
        let cell = match cell {
            Some(c) => c,
            None => self.done_cell(r, free),
        };
        (free - t, cell)
    }

    /// Probes (and matched probes, and their receives). A probe that finds
    /// no message yet waits in the channel and is retried when a send
    /// arrives there.
    fn start_probe(&mut self, r: u32, mut cur: Current, ev: Event) {
        let net = self.net;
        let m = ev.matched.iter().find(|m| m.req.is_none());
        match ev.op {
            Op::Mrecv | Op::Imrecv => {
                let got = ev
                    .message
                    .and_then(|id| self.ranks[r as usize].mprobed.remove(&id));
                if let Some(send) = got {
                    let cell = self.cell(r);
                    let rec = RecvRec {
                        post: cur.enter,
                        cell,
                        split: self.ranks[r as usize].snapshot(),
                    };
                    self.matched(send, rec);
                    match ev.req {
                        Some(req) if ev.op == Op::Imrecv => {
                            self.ranks[r as usize].reqs.insert(req, cell);
                        }
                        _ => cur.cells.push(cell),
                    }
                }
            }
            Op::Iprobe | Op::Improbe if ev.flag != Some(true) => {
                cur.floor = cur.enter + net.overhead;
            }
            _ => {
                let Some(m) = m else {
                    self.ranks[r as usize].current = Some(cur);
                    return;
                };
                let key = self.recv_key(r, ev.comm.0, m.source as u32, m.tag);
                let take = matches!(ev.op, Op::Mprobe | Op::Improbe);
                let id = self.chan(r, key);
                let ch = &mut self.chans[id];
                let Some(head) = ch.stream.peek(r) else {
                    ch.probers.push(r);
                    cur.probing = true;
                    cur.probe = Some(Box::new(ev));
                    self.ranks[r as usize].current = Some(cur);
                    return;
                };
                let seen = if head.rendezvous {
                    head.post + net.overhead + net.latency
                } else {
                    head.arrive
                };
                cur.probing = false;
                cur.floor = cur.floor.max(seen) + net.overhead;
                if take {
                    let send = ch.stream.take_next_with(r, claim);
                    if let (Some(id), Some(send)) = (ev.message, send) {
                        self.ranks[r as usize].mprobed.insert(id, send);
                    }
                }
            }
        }
        self.ranks[r as usize].current = Some(cur);
    }

    /// Rank `r` enters a collective (or a communicator constructor);
    /// returns the cell of its completion.
    fn arrive(&mut self, r: u32, ev: &Event, t: Time) -> CellId {
        let comms = &mut self.ranks[r as usize].comms;
        let view = comms.view(ev.comm.0);
        let both = comms.both(ev.comm.0);
        let seq = comms.observe(ev);
        // `Comm_create_group` and the constructors from groups (MPI 4)
        // synchronise their groups' members only (both groups', as sorted
        // world ranks): the instance is the communicator they make, which
        // the lineage names alike on every member.
        let group: Option<Vec<i32>> = ev.create.as_deref().and_then(|c| {
            let g = match ev.op {
                Op::CommCreateGroup | Op::CommCreateFromGroup => c.members.clone(),
                Op::IntercommCreateFromGroups => c
                    .new
                    .and_then(|n| comms.both(n.0))
                    .map(|b| b.to_vec())
                    .unwrap_or_default(),
                _ => return None,
            };
            (!g.is_empty()).then_some(g)
        });
        let k = match (&group, ev.create.as_deref().and_then(|c| c.new)) {
            (Some(_), Some(new)) => (comms.view(new.0).inst, 0),
            _ => (view.inst, seq.unwrap_or(0)),
        };
        let me = ev.comm_rank.max(0) as usize;
        let w = self.layout.world[r as usize] as i32;
        let (mut size, mut slot) = if let Some(members) = &group {
            let at = members.iter().position(|&m| m == w).unwrap_or(0);
            (members.len(), at)
        } else if let Some(both) = &both {
            (both.len(), both.binary_search(&w).unwrap_or(0))
        } else {
            let size = view.size.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
            (size.max(me + 1), me)
        };
        if self.layout.classes {
            if size != self.p as usize && self.asymmetric.is_none() {
                self.asymmetric = Some(format!(
                    "MPI_{} on a communicator of {size} of the {} ranks",
                    ev.op.name(),
                    self.p
                ));
            }
            size = self.ranks.len();
            slot = r as usize;
        }
        let lists = |counts: &[i64], dsizes: &[i32], d: i64| -> Vec<f64> {
            counts
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let d = dsizes.get(i).map_or(d, |&x| i64::from(x));
                    self.bytes(c.saturating_mul(d))
                })
                .collect()
        };
        let member = Member {
            at: t,
            send: self.bytes(ev.send.map_or(0, |s| s.bytes())),
            recv: self.bytes(ev.recv.map_or(0, |s| s.bytes())),
            sends: lists(
                &ev.send_counts,
                &ev.send_dsizes,
                ev.send.map_or(0, |s| s.dsize),
            ),
            recvs: lists(
                &ev.recv_counts,
                &ev.recv_dsizes,
                ev.recv.map_or(0, |s| s.dsize),
            ),
        };
        let cell = self.cell(r);
        let split = self.ranks[r as usize].snapshot();
        let op = ev.op;
        let root = ev.root.unwrap_or(0).max(0) as usize;
        let inst = self.colls.entry(k).or_insert_with(|| Instance {
            op,
            size,
            root,
            members: Vec::new(),
            arrived: 0,
        });
        if inst.members.len() < size.max(inst.size) {
            inst.members.resize_with(size.max(inst.size), || None);
        }
        if inst.members[slot].is_some() {
            // Two ranks claim one comm rank: sub-grids the lineage cannot
            // tell apart. Give this one a slot of its own.
            inst.members.push(Some((me, member, cell, split)));
        } else {
            inst.members[slot] = Some((me, member, cell, split));
        }
        inst.arrived += 1;
        if inst.arrived >= inst.size {
            let inst = self.colls.remove(&k).expect("the instance");
            self.complete(inst);
        }
        cell
    }

    fn complete(&mut self, inst: Instance) {
        self.collectives += 1;
        let present: Vec<(usize, Member, CellId, Split)> =
            inst.members.into_iter().flatten().collect();
        let (last, last_at) = present
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.1.at.total_cmp(&b.1.1.at))
            .map(|(i, m)| (i, m.1.at))
            .unwrap_or((0, 0.0));
        let last_split = present.get(last).map(|m| m.3.clone());
        let mut times = if self.layout.classes {
            self.complete_classes(inst.op, inst.root, &present, last_at)
        } else {
            let members: Vec<Member> = present.iter().map(|m| m.1.clone()).collect();
            coll::complete(inst.op, inst.root, &members, &self.net)
        };
        if inst.op.family() == Family::Io {
            let bytes = present.iter().map(|m| (m.2, m.1.send + m.1.recv));
            self.file_collective_times(bytes, &mut times);
        }
        for (i, (_, m, cell, _)) in present.into_iter().enumerate() {
            let done = times.get(i).copied().unwrap_or(m.at);
            let via = (last_at > m.at && done >= last_at)
                .then(|| last_split.clone().map(|s| (s, last_at)))
                .flatten();
            self.resolve(cell, done, via);
        }
    }

    /// Class mode: the collective over every world rank, each taking its
    /// class's part and entry time; returns the times of `present` (one
    /// per simulated rank). Beyond [`EXACT_MEMBERS`] members, it is costed
    /// once with all entering together (and kept for the next such call),
    /// then shifted to the last entry.
    fn complete_classes(
        &mut self,
        op: Op,
        root: usize,
        present: &[(usize, Member, CellId, Split)],
        last_at: Time,
    ) -> Vec<Time> {
        let p = self.p as usize;
        // The position in `present` of each simulated rank.
        let mut of_rank = vec![usize::MAX; self.ranks.len()];
        for (i, m) in present.iter().enumerate() {
            let w = m.0 as u32;
            if let Some(&s) = self.layout.stand_in.get(w as usize) {
                of_rank[s as usize] = i;
            }
        }
        let member = |w: usize, at0: bool| -> Member {
            let s = self.layout.stand_in.get(w).copied().unwrap_or(0) as usize;
            let m = &present[of_rank
                .get(s)
                .copied()
                .filter(|&i| i < present.len())
                .unwrap_or(0)]
            .1;
            Member {
                at: if at0 { 0.0 } else { m.at },
                ..m.clone()
            }
        };
        let take = |t: &[f64], shift: f64| -> Vec<Time> {
            present
                .iter()
                .map(|m| t.get(m.0).map_or(m.1.at, |x| x + shift))
                .collect()
        };
        if p <= EXACT_MEMBERS {
            let all: Vec<Member> = (0..p).map(|w| member(w, false)).collect();
            return take(&coll::complete(op, root, &all, &self.net), 0.0);
        }
        let r = &present[0].1;
        let key = (op, root, p, r.send.to_bits(), r.recv.to_bits());
        let t0 = match self.uniform.get(&key) {
            Some(t) => t.clone(),
            None => {
                let all: Vec<Member> = (0..p).map(|w| member(w, true)).collect();
                let t = Rc::new(coll::complete(op, root, &all, &self.net));
                self.uniform.insert(key, t.clone());
                t
            }
        };
        take(&t0, last_at)
    }
}

/// The cores shared by every rank (`--cores`), as the operating system
/// shares them: every computing rank progresses at once, each at
/// `cores / computing` of a core when more ranks compute than there are
/// cores (processor sharing). A computation's end thus depends on who
/// else computes meanwhile, and is known only once the simulation has
/// reached it.
struct Sharing {
    cores: f64,
    /// The time the jobs' remaining work is counted from.
    now: Time,
    /// Remaining work (ns on a core of its own), the cell to complete, and
    /// how many world ranks compute it (a class's size in class mode).
    jobs: Vec<(f64, CellId, f64)>,
    /// The world ranks computing: the jobs' weights summed.
    computing: f64,
}

impl Sharing {
    fn rate(&self) -> f64 {
        let n = self.computing;
        if n <= self.cores { 1.0 } else { self.cores / n }
    }

    /// When the next computation ends, at the current rate.
    fn next(&self) -> Option<Time> {
        let least = self.jobs.iter().map(|j| j.0).min_by(f64::total_cmp)?;
        Some(self.now + least.max(0.0) / self.rate())
    }

    /// Moves the clock to `to`; returns the computations that ended by
    /// then and when.
    fn advance(&mut self, to: Time) -> Vec<(CellId, Time)> {
        let mut ended = Vec::new();
        loop {
            let Some(least) = self.jobs.iter().map(|j| j.0).min_by(f64::total_cmp) else {
                self.now = self.now.max(to);
                return ended;
            };
            let rate = self.rate();
            let tc = self.now + least / rate;
            if tc > to {
                let worked = (to - self.now).max(0.0) * rate;
                for j in &mut self.jobs {
                    j.0 -= worked;
                }
                self.now = self.now.max(to);
                return ended;
            }
            // The least job ends exactly: subtracting its own remaining
            // work leaves it at zero.
            for j in &mut self.jobs {
                j.0 -= least;
            }
            self.now = tc;
            let computing = &mut self.computing;
            self.jobs.retain(|&(left, cell, w)| {
                if left <= 1e-9 {
                    ended.push((cell, tc));
                    *computing -= w;
                    false
                } else {
                    true
                }
            });
        }
    }
}

/// Ranks that can go on.
enum Ready {
    /// With shared cores: by the time they can (the earliest first), so
    /// that the shared cores see computations start in time order.
    ByTime(BinaryHeap<Reverse<(At, u32)>>),
    /// Without: the last woken first. The order does not change any time
    /// (see [`Engine::advance`]), and the rank just woken is the one whose
    /// stream was just written, still in the cache (a 4,096-rank stencil:
    /// 7.0 to 7.4 s against 8.6 to 9.3 s in time order).
    LastFirst(Vec<u32>),
}

impl Ready {
    /// Ranks `0..n`, all able to go on at time 0.
    fn new(n: u32, by_time: bool) -> Ready {
        if by_time {
            Ready::ByTime((0..n).map(|r| Reverse((At(0.0), r))).collect())
        } else {
            Ready::LastFirst((0..n).rev().collect())
        }
    }

    /// Rank `r` can go on at `at`.
    fn push(&mut self, at: Time, r: u32) {
        match self {
            Ready::ByTime(h) => h.push(Reverse((At(at), r))),
            Ready::LastFirst(v) => v.push(r),
        }
    }

    /// The next rank to run.
    fn pop(&mut self) -> Option<u32> {
        match self {
            Ready::ByTime(h) => h.pop().map(|Reverse((_, r))| r),
            Ready::LastFirst(v) => v.pop(),
        }
    }

    /// When the earliest rank can go on (in time order only).
    fn first_time(&self) -> Option<Time> {
        match self {
            Ready::ByTime(h) => h.peek().map(|Reverse((At(t), _))| *t),
            Ready::LastFirst(_) => None,
        }
    }
}

/// A time with a total order, for the heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct At(Time);

impl Eq for At {}

impl PartialOrd for At {
    fn partial_cmp(&self, o: &At) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for At {
    fn cmp(&self, o: &At) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

fn grow(v: &mut Vec<f64>, i: usize) {
    if v.len() <= i {
        v.resize(i + 1, 0.0);
    }
}
