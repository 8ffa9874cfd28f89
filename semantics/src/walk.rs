//! One rank's point-to-point calls as the sends and receives they put on
//! their channels, in the order MPI matches them.
//!
//! What a receive takes depends on more than its own call: a wildcard
//! learns its source and tag at completion (from the `Wait*`/`Test*` that
//! completed it), a persistent request posts again at every `Start`, an
//! `Mrecv` takes the message its `Mprobe` removed, a cancelled request takes
//! none. And receives match in the order they were *posted*, not completed:
//! a receive posted after an unresolved wildcard cannot be placed on its
//! channel until the wildcard is. [`Walker`] keeps the receives in post
//! order until each is known, then hands them on as [`Step`]s; the caller
//! puts them on [`crate::channel::Channels`]. The check and the analysis'
//! matching both walk ranks with it, so they agree on every message.

use std::collections::VecDeque;

// Lookups only, never iterated: the fast hasher leaves every result as it
// is (a walk makes one or two per point-to-point call).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use trace::{Event, Family, Matched, Op, Peer, ReqId, Tag, Transfer};

use smallvec::SmallVec;

use crate::channel::{Channel, Numbering};
use crate::comms::{View, hash_of};

#[cfg(doc)]
use crate::comms::Comms;

/// A send as posted on its channel.
#[derive(Clone, Copy, Debug)]
pub struct SendEnd {
    /// Its channel.
    pub chan: Channel,
    /// The sender's id of the communicator.
    pub comm: u32,
    /// The number of this send among the rank's sends (from 0), which a
    /// later [`Step::SendDone`] names.
    pub id: u64,
    /// Event index of the call that posted it.
    pub post: u64,
    /// Bytes sent (saturating).
    pub bytes: i64,
    /// A synchronous send (`Ssend`, `Issend`, `Ssend_init`): it cannot
    /// complete before its receive is posted, whatever its size.
    pub sync: bool,
    /// Its number on its channel (from 0) in a [`Walker::numbered`] walk:
    /// by non-overtaking the `k`-th send of a channel meets the `k`-th
    /// receive, so one rank's walk names a message the way its peer's
    /// does (replay's gates, which see one rank only). `None` otherwise:
    /// the check and the analysis number on their [`crate::channel::Channels`].
    pub k: Option<u64>,
}

/// A receive placed on its channel.
#[derive(Clone, Copy, Debug)]
pub struct RecvEnd {
    /// Its channel.
    pub chan: Channel,
    /// The receiver's id of the communicator.
    pub comm: u32,
    /// Event index where a problem with it is reported: the posting call
    /// (for a matched probe's message, the probe that removed it).
    pub event: u64,
    /// Event index of the call that posted the receive.
    pub post: u64,
    /// Event index of the call that completed it (`post` for a blocking
    /// receive, or one that never completed).
    pub done: u64,
    /// Room posted in bytes; `None` when no `Mrecv` said.
    pub posted: Option<i64>,
    /// Whether it completed (else it was left pending, or freed).
    pub completed: bool,
    /// The probe that first found its message (event index): a successful
    /// `Probe`, `Iprobe`, `Mprobe` or `Improbe`.
    pub probe: Option<u64>,
    /// Its number on its channel, as [`SendEnd::k`].
    pub k: Option<u64>,
    /// The request that posted it, for a nonblocking or persistent
    /// receive (`Imrecv`: the `Imrecv`'s): what a caller awaits to see it
    /// matched.
    pub req: Option<ReqId>,
    /// How it was posted and resolved, if it was a wildcard receive or
    /// matched probe.
    pub wildcard: Option<Wildcard>,
    /// The latest completion call (event index) that named its request
    /// and returned without it (`Test*` that found it pending,
    /// `Waitany`/`Waitsome` that completed others): its message had not
    /// matched by then, which replay must not let happen earlier.
    pub missed: Option<u64>,
}

/// A wildcard receive (or matched probe): which wildcards it was posted
/// with, and its place among the wildcard receives its completing call
/// resolved. MPI matches those in posting order, so a caller that must
/// reproduce which message each took (replay's gates) awaits them one by
/// one in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wildcard {
    /// Posted with `MPI_ANY_SOURCE`.
    pub any_source: bool,
    /// Posted with `MPI_ANY_TAG`.
    pub any_tag: bool,
    /// Its place (from 0), in posting order, among the wildcard receives
    /// the call that completed it resolved (0 for a blocking receive or a
    /// probe).
    pub nth: u32,
    /// How many wildcard receives that call resolved (1 for a blocking
    /// receive or a probe).
    pub of: u32,
}

/// What the walk hands on, in order.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// A send, at its posting call.
    Send(SendEnd),
    /// A nonblocking send completed: send `id` was completed at event
    /// `done`.
    SendDone {
        /// [`SendEnd::id`].
        id: u64,
        /// Event index of the completing call.
        done: u64,
    },
    /// A receive, once its channel is known and every receive posted
    /// before it is placed.
    Recv(RecvEnd),
    /// A wildcard receive completed (or blocking) without a recorded
    /// match: it takes no message the walk can name.
    UnresolvedWildcard {
        /// The receive's operation.
        op: Op,
        /// Event index of the receive.
        event: u64,
    },
    /// An `Mrecv`/`Imrecv` whose message no `Mprobe` produced.
    UnknownMessage {
        /// `Mrecv` or `Imrecv`.
        op: Op,
        /// The message handle.
        message: u64,
        /// Event index of the call.
        event: u64,
    },
    /// A wildcard receive that never completed: what it would match is
    /// unknown.
    Unknown {
        /// Event index of the receive.
        event: u64,
    },
}

/// A posted receive, kept in post order until it can take its place on
/// its channel (source and tag known, and completed or never to be).
#[derive(Clone, Copy, Debug)]
struct Slot {
    op: Op,
    event: u64,
    post: u64,
    done: u64,
    comm: u32,
    inst: u64,
    src: Option<u32>,
    tag: Option<i32>,
    posted: Option<i64>,
    probe: Option<u64>,
    req: Option<ReqId>,
    /// Posted with `MPI_ANY_SOURCE`, `MPI_ANY_TAG`.
    any: (bool, bool),
    /// [`Wildcard::nth`] and [`Wildcard::of`].
    stage: (u32, u32),
    missed: Option<u64>,
    completed: bool,
    /// Nothing more will be learnt about it.
    settled: bool,
    /// It takes no message.
    dead: bool,
}

/// A persistent request's arguments, posted again at each `Start`.
#[derive(Clone, Copy, Debug)]
struct Template {
    op: Op,
    view: View,
    send: Option<Transfer>,
    recv: Option<Transfer>,
}

/// Bytes of `count` elements of `dsize` bytes, without overflow (a
/// corrupt count must not wrap into a small or negative size).
pub(crate) fn bytes(count: i64, dsize: i64) -> i64 {
    count.saturating_mul(dsize)
}

/// One rank's walk (see the module documentation).
#[derive(Debug)]
pub struct Walker {
    rank: u32,
    world: i64,
    slots: VecDeque<Slot>,
    /// Slot id of `slots[0]`.
    base: u64,
    /// Receive requests not completed yet: their slot.
    waiting: HashMap<ReqId, u64>,
    /// Send requests not completed yet: their send's id.
    sending: HashMap<ReqId, u64>,
    sends: u64,
    templates: HashMap<ReqId, Template>,
    /// `Mprobe`d messages by handle: their slot.
    probed: HashMap<u64, u64>,
    /// Successful probes whose message was not received yet, by channel.
    probes: HashMap<Channel, u64>,
    /// Requests an `MPI_Cancel` named: completed without a match, they
    /// were cancelled and take no message.
    cancelled: HashSet<ReqId>,
    /// Sends and receives numbered per channel ([`Walker::numbered`]).
    numbers: Option<Box<(Numbering<Channel>, Numbering<Channel>)>>,
}

impl Walker {
    /// The walk of world rank `rank` in a world of `world` ranks.
    pub fn new(rank: u32, world: i64) -> Walker {
        Walker {
            rank,
            world,
            slots: VecDeque::new(),
            base: 0,
            waiting: HashMap::default(),
            sending: HashMap::default(),
            sends: 0,
            templates: HashMap::default(),
            probed: HashMap::default(),
            probes: HashMap::default(),
            cancelled: HashSet::default(),
            numbers: None,
        }
    }

    /// This walk with every send and receive numbered on its channel
    /// ([`SendEnd::k`], [`RecvEnd::k`]), for a caller that sees one rank
    /// and must name its messages as their other end does.
    pub fn numbered(mut self) -> Walker {
        self.numbers = Some(Box::default());
        self
    }

    /// The event index of the earliest receive not handed on yet (waiting
    /// for its completion or for a receive posted before it), if any:
    /// every [`Step::Recv`] still to come was posted at or after it, so a
    /// caller that keeps state by position can forget what lies before.
    pub fn pending(&self) -> Option<u64> {
        self.slots.front().map(|s| s.event)
    }

    /// Follows event `i`, `e`; `view` is its communicator as the rank's
    /// [`Comms`] knows it before the call (`None` for a call without one).
    /// Failed calls did nothing and are passed over.
    pub fn event(&mut self, i: u64, e: &Event, view: Option<View>, out: &mut impl FnMut(Step)) {
        if e.failed() {
            return;
        }
        match (e.op.family(), view) {
            (Family::BlockingP2p, Some(v)) => {
                self.post_send(i, e.op, v, e.send, None, out);
                let blocking = e.matched.iter().find(|m| m.req.is_none());
                self.post_recv(i, e.op, v, e.recv, None, blocking, out);
            }
            (Family::NonblockingP2p, Some(v)) => {
                self.post_send(i, e.op, v, e.send, e.req, out);
                self.post_recv(i, e.op, v, e.recv, e.req, None, out);
            }
            (Family::Persistent | Family::Partitioned, Some(v)) => {
                if let Some(r) = e.req {
                    // Partitioned sends match partitioned receives only:
                    // their channels are those of an instance of their own.
                    let view = if e.op.is_partitioned_init() {
                        View {
                            inst: hash_of(("partitioned", v.inst)),
                            ..v
                        }
                    } else {
                        v
                    };
                    let t = Template {
                        op: e.op,
                        view,
                        send: e.send,
                        recv: e.recv,
                    };
                    self.templates.insert(r, t);
                }
            }
            (Family::Persistent, None) => self.persistent(i, e, out),
            (Family::Completion, _) => self.complete(i, e, out),
            _ if e.op == Op::Cancel => self.cancelled.extend(e.reqs.iter().copied()),
            (Family::Probe, Some(v)) => self.probe(i, e, v, out),
            _ => {}
        }
    }

    /// The end of the rank: nothing more will be learnt, every receive
    /// left takes its place (or is reported unknown).
    pub fn finish(&mut self, out: &mut impl FnMut(Step)) {
        for s in &mut self.slots {
            s.settled = true;
        }
        self.flush(out);
    }

    fn post_send(
        &mut self,
        i: u64,
        op: Op,
        v: View,
        t: Option<Transfer>,
        req: Option<ReqId>,
        out: &mut impl FnMut(Step),
    ) {
        let Some(t) = t else { return };
        let (Some(to), Tag::Value(tag)) = (t.peer.world(), t.tag) else {
            return;
        };
        if !(0..self.world).contains(&i64::from(to)) {
            return;
        }
        let id = self.sends;
        self.sends += 1;
        if let Some(r) = req {
            self.sending.insert(r, id);
        }
        let chan = Channel {
            from: self.rank,
            to: to as u32,
            tag,
            comm: v.inst,
        };
        out(Step::Send(SendEnd {
            chan,
            k: self.numbers.as_mut().map(|n| n.0.take(chan)),
            comm: v.id,
            id,
            post: i,
            bytes: bytes(t.count, t.dsize),
            sync: matches!(op, Op::Ssend | Op::Issend | Op::SsendInit),
        }));
    }

    /// Posts a receive: blocking (`req` is `None`, resolved by `blocking`)
    /// or nonblocking (resolved at its completion).
    #[allow(clippy::too_many_arguments)]
    fn post_recv(
        &mut self,
        i: u64,
        op: Op,
        v: View,
        t: Option<Transfer>,
        req: Option<ReqId>,
        blocking: Option<&Matched>,
        out: &mut impl FnMut(Step),
    ) {
        if let Some(s) = self.recv_slot(i, op, v, t, req.is_some(), blocking, out) {
            self.push_slot(s, req, out);
        }
    }

    /// The slot of a receive (or matching probe), unless it takes no
    /// message (`MPI_PROC_NULL`, a peer outside the world) or is a blocking
    /// wildcard whose match is not recorded.
    #[allow(clippy::too_many_arguments)]
    fn recv_slot(
        &mut self,
        i: u64,
        op: Op,
        v: View,
        t: Option<Transfer>,
        nonblocking: bool,
        blocking: Option<&Matched>,
        out: &mut impl FnMut(Step),
    ) -> Option<Slot> {
        let t = t?;
        let src = match t.peer {
            Peer::Null => return None,
            Peer::Rank { world, .. } if (0..self.world).contains(&i64::from(world)) => {
                Some(world as u32)
            }
            Peer::Rank { .. } => return None,
            Peer::Any => blocking.and_then(|m| self.source(m)),
        };
        let tag = t.tag.value().or(blocking.map(|m| m.tag));
        if !nonblocking && (src.is_none() || tag.is_none()) {
            if blocking.is_none() {
                out(Step::UnresolvedWildcard { op, event: i });
            }
            return None;
        }
        Some(Slot {
            op,
            event: i,
            post: i,
            done: i,
            comm: v.id,
            inst: v.inst,
            src,
            tag,
            posted: Some(bytes(t.count, t.dsize)),
            probe: None,
            req: None,
            any: (t.peer == Peer::Any, t.tag == Tag::Any),
            stage: (0, 1),
            missed: None,
            completed: !nonblocking,
            settled: false,
            dead: false,
        })
    }

    /// Queues a receive in the rank's post order.
    fn push_slot(&mut self, s: Slot, req: Option<ReqId>, out: &mut impl FnMut(Step)) {
        let id = self.base + self.slots.len() as u64;
        self.slots.push_back(Slot { req, ..s });
        if let Some(r) = req {
            self.waiting.insert(r, id);
        }
        self.flush(out);
    }

    fn slot(&mut self, id: u64) -> Option<&mut Slot> {
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        self.slots.get_mut(i)
    }

    /// A matched source, if it is a rank.
    fn source(&self, m: &Matched) -> Option<u32> {
        (0..self.world)
            .contains(&i64::from(m.source))
            .then_some(m.source as u32)
    }

    /// `Start`, `Startall`, `Request_free`.
    fn persistent(&mut self, i: u64, e: &Event, out: &mut impl FnMut(Step)) {
        for r in &e.reqs {
            if e.op == Op::RequestFree {
                self.templates.remove(r);
                self.sending.remove(r);
                if let Some(id) = self.waiting.remove(r)
                    && let Some(s) = self.slot(id)
                {
                    s.settled = true;
                }
                continue;
            }
            if let Some(t) = self.templates.get(r).copied() {
                self.post_send(i, t.op, t.view, t.send, Some(*r), out);
                self.post_recv(i, t.op, t.view, t.recv, Some(*r), None, out);
            }
        }
        self.flush(out);
    }

    /// `Wait*`, `Test*`: completed sends and receives, wildcards resolved
    /// (and numbered in posting order among themselves); the receives it
    /// named and did not complete missed it.
    fn complete(&mut self, i: u64, e: &Event, out: &mut impl FnMut(Step)) {
        if e.reqs.len() != e.done.len() {
            for r in e.reqs.iter().filter(|r| !e.done.contains(r)) {
                if let Some(&id) = self.waiting.get(r)
                    && let Some(s) = self.slot(id)
                {
                    s.missed = Some(i);
                }
            }
        }
        let mut resolved: SmallVec<[u64; 4]> = SmallVec::new();
        for r in &e.done {
            if let Some(id) = self.sending.remove(r) {
                out(Step::SendDone { id, done: i });
            }
            let Some(id) = self.waiting.remove(r) else {
                continue;
            };
            let m = e.matched.iter().find(|m| m.req == Some(*r));
            let cancelled = self.cancelled.remove(r) && m.is_none();
            let src = m.and_then(|m| self.source(m));
            let Some(s) = self.slot(id) else { continue };
            s.completed = true;
            s.done = i;
            if cancelled {
                s.dead = true;
                continue;
            }
            let wild = s.src.is_none() || s.tag.is_none();
            s.src = s.src.or(src);
            s.tag = s.tag.or(m.map(|m| m.tag));
            if s.src.is_none() || s.tag.is_none() {
                s.dead = true;
                if m.is_none() {
                    let (op, event) = (s.op, s.event);
                    out(Step::UnresolvedWildcard { op, event });
                }
            } else if wild {
                resolved.push(id);
            }
        }
        resolved.sort_unstable();
        let of = resolved.len() as u32;
        for (nth, &id) in resolved.iter().enumerate() {
            if let Some(s) = self.slot(id) {
                s.stage = (nth as u32, of);
            }
        }
        self.flush(out);
    }

    /// Probes: a matched probe takes its message off its channel (`Mrecv`
    /// and `Imrecv` say how much room it gets); a successful regular probe
    /// is remembered as the first to find its channel's next message.
    fn probe(&mut self, i: u64, e: &Event, v: View, out: &mut impl FnMut(Step)) {
        let blocking = e.matched.iter().find(|m| m.req.is_none());
        match e.op {
            Op::Mprobe | Op::Improbe if e.flag != Some(false) => {
                if let Some(mut s) = self.recv_slot(i, e.op, v, e.recv, false, blocking, out) {
                    // The message leaves its channel here; the Mrecv says
                    // how much room it gets.
                    s.posted = None;
                    s.completed = false;
                    s.probe = Some(i);
                    s.settled = e.message.is_none();
                    if let Some(m) = e.message {
                        self.probed.insert(m, self.base + self.slots.len() as u64);
                    }
                    self.push_slot(s, None, out);
                }
            }
            Op::Probe | Op::Iprobe if e.flag != Some(false) => {
                if let Some(m) = blocking
                    && let Some(from) = self.source(m)
                {
                    let chan = Channel {
                        from,
                        to: self.rank,
                        tag: m.tag,
                        comm: v.inst,
                    };
                    self.probes.entry(chan).or_insert(i);
                }
            }
            Op::Mrecv | Op::Imrecv => {
                let Some(m) = e.message else { return };
                let Some(id) = self.probed.remove(&m) else {
                    out(Step::UnknownMessage {
                        op: e.op,
                        message: m,
                        event: i,
                    });
                    return;
                };
                let req = e.req.filter(|_| e.op == Op::Imrecv);
                if let Some(s) = self.slot(id) {
                    s.posted = e.recv.map(|t| bytes(t.count, t.dsize));
                    s.post = i;
                    s.done = i;
                    s.req = req;
                    // An Imrecv completes at its Wait/Test.
                    s.completed = req.is_none();
                    s.settled = req.is_none();
                }
                if let Some(r) = req {
                    self.waiting.insert(r, id);
                }
                self.flush(out);
            }
            _ => {}
        }
    }

    /// Moves the receives at the front of the post order onto their
    /// channels, as far as they are known.
    fn flush(&mut self, out: &mut impl FnMut(Step)) {
        while let Some(s) = self.slots.front().copied() {
            if !(s.dead || s.completed || s.settled) {
                break;
            }
            self.slots.pop_front();
            self.base += 1;
            if s.dead {
                continue;
            }
            let (Some(from), Some(tag)) = (s.src, s.tag) else {
                out(Step::Unknown { event: s.event });
                continue;
            };
            let chan = Channel {
                from,
                to: self.rank,
                tag,
                comm: s.inst,
            };
            // (Most programs never probe: no lookup per receive then.)
            let probe = s.probe.or_else(|| {
                (!self.probes.is_empty())
                    .then(|| self.probes.remove(&chan))
                    .flatten()
            });
            let (any_source, any_tag) = s.any;
            out(Step::Recv(RecvEnd {
                chan,
                comm: s.comm,
                event: s.event,
                post: s.post,
                done: s.done,
                posted: s.posted,
                completed: s.completed,
                probe,
                k: self.numbers.as_mut().map(|n| n.1.take(chan)),
                req: s.req,
                wildcard: (any_source || any_tag).then_some(Wildcard {
                    any_source,
                    any_tag,
                    nth: s.stage.0,
                    of: s.stage.1,
                }),
                missed: s.missed,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comms::Comms;

    fn recv(op: Op, peer: Peer, req: u64) -> Event {
        let mut e = Event::new(op);
        e.recv = Some(Transfer {
            peer,
            tag: Tag::Value(7),
            count: 1,
            dsize: 4,
            dtype: trace::Datatype::UNKNOWN,
        });
        e.req = Some(ReqId(req));
        e
    }

    /// A completion call `op` that completed `reqs`, the wildcards among
    /// them with a tag-7 message of the given (request, source).
    fn completed(op: Op, reqs: &[u64], matched: &[(u64, i32)]) -> Event {
        let mut e = Event::new(op);
        e.reqs = reqs.iter().map(|&r| ReqId(r)).collect();
        e.done = e.reqs.clone();
        for &(r, source) in matched {
            e.matched.push(Matched {
                req: Some(ReqId(r)),
                source,
                tag: 7,
            });
        }
        e
    }

    /// Rank 0's receives of `events`, as handed on by a numbered walk.
    fn recvs(events: &[Event]) -> Vec<RecvEnd> {
        let comms = Comms::new(0, 4);
        let mut walk = Walker::new(0, 4).numbered();
        let mut out = Vec::new();
        let mut keep = |s| {
            if let Step::Recv(x) = s {
                out.push(x);
            }
        };
        for (i, e) in events.iter().enumerate() {
            let view = e.op.has_comm().then(|| comms.view(e.comm.0));
            walk.event(i as u64, e, view, &mut keep);
        }
        walk.finish(&mut keep);
        out
    }

    #[test]
    fn a_numbered_walk_numbers_receives_in_posting_order() {
        // An ANY_SOURCE receive, then one from 2; a Testany misses the
        // first, a Waitall completes both (the wildcard with 2's message,
        // so it takes message 0 of the channel: it was posted first).
        let rank2 = Peer::Rank { world: 2, local: 2 };
        let mut test = completed(Op::Testany, &[0], &[]);
        test.done.clear();
        let events = [
            recv(Op::Irecv, Peer::Any, 0),
            recv(Op::Irecv, rank2, 1),
            test,
            completed(Op::Waitall, &[0, 1], &[(0, 2)]),
        ];
        let r = recvs(&events);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].k, r[0].req, r[0].missed),
            (Some(0), Some(ReqId(0)), Some(2))
        );
        assert_eq!(
            r[0].wildcard,
            Some(Wildcard {
                any_source: true,
                any_tag: false,
                nth: 0,
                of: 1
            })
        );
        assert_eq!(
            (r[1].k, r[1].req, r[1].missed),
            (Some(1), Some(ReqId(1)), None)
        );
        assert_eq!(r[1].wildcard, None);
        assert_eq!(r[0].chan, r[1].chan);
    }

    #[test]
    fn wildcards_completed_together_are_placed_in_posting_order() {
        // Completed in the other order than posted.
        let events = [
            recv(Op::Irecv, Peer::Any, 0),
            recv(Op::Irecv, Peer::Any, 1),
            completed(Op::Waitall, &[1, 0], &[(0, 3), (1, 1)]),
        ];
        let r = recvs(&events);
        let stages: Vec<_> = r
            .iter()
            .map(|x| (x.chan.from, x.wildcard.map(|w| (w.nth, w.of))))
            .collect();
        assert_eq!(stages, vec![(3, Some((0, 2))), (1, Some((1, 2)))]);
    }
}
