//! Causal gates: how replay forces the outcomes of racy calls.
//!
//! Some calls observe the order in which messages arrive: a test or probe
//! that came back false, a `Waitany`/`Waitsome`/`Testany`/`Testsome` that
//! completed some of its requests and not the others, a wildcard receive
//! or probe that matched one sender among several. Replay first waits
//! (outside the traced API) until what the trace says was there is there.
//! That alone cannot stop a message that was *not* there in the
//! application from being there in the replay. A gate does: the sender
//! holds the message back until the receiver has issued the call that must
//! not see it, and the receiver then releases it with a token on a
//! communicator of replay's own.
//!
//! Messages are named without any global matching: by non-overtaking, the
//! `k`-th message a sender sends on a channel (communicator, sender,
//! receiver, tag) is the one the receiver's `k`-th receive on that channel
//! takes. The receiver counts its receives per channel, the sender its
//! sends, and both arrive at the same `k`. So each rank computes the gates
//! it must open from its own events alone ([`gates`], one streaming pass
//! that keeps only a few counters per channel), and an all-to-all tells
//! each sender which of its sends are held ([`SendCounter`] names them as
//! replay issues them).
//!
//! A hold on a message applies from the racy call onwards to the first
//! message of each channel the call could have seen, received after the
//! previous one on that channel: later messages of the channel cannot
//! arrive before it.
//!
//! Positions are finer than events, because one call can complete several
//! wildcard receives whose matches depend on arrival order: replay then
//! awaits them one by one in posting order (the order MPI matches them
//! in), and releases the next one's message only once the previous one
//! matched (a *stage* of the call, see [`stage`]).
//!
//! Holds can ask for more than causality allows: two ranks whose
//! `Waitsome` each missed the other's message, sent before it, in the
//! application (both messages were still in flight) would each wait for
//! the other. [`deadlocked`] finds such holds before the replay starts, and
//! the replay gives them up and counts them.

use std::collections::{HashMap, VecDeque};

use semantics::channel::Numbering;
use trace::{Event, Family, Op, Peer, ReqId, Tag};

/// A message channel as one side sees it: communicator id, the other
/// rank (world), tag.
pub type Chan = (u32, i32, i32);

/// Stages per event position (see [`stage`]).
const STAGES: u64 = 1 << 16;

/// The fine position of stage `j` of the event at (1-based) position `p`:
/// stage `j < STAGES - 1` is reached when, before the event, replay has
/// seen the `j`-th of the wildcard receives it completes matched; the last
/// stage is reached when the event has been issued.
pub fn stage(p: u64, j: u64) -> u64 {
    p * STAGES + j.min(STAGES - 1)
}

/// The fine position reached once the event at `p` has been issued.
pub fn issued(p: u64) -> u64 {
    stage(p, STAGES - 1)
}

/// The fine position at which a rank stands before issuing the event at
/// `p`: everything below it has happened.
pub fn before(p: u64) -> u64 {
    stage(p, 0)
}

/// One gate to open: once the receiving rank has reached fine position
/// `after` in its recorded order, it sends `sender` the token that
/// releases message `k` (0-based) of channel (`comm`, `sender` → this
/// rank, `tag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gate {
    /// The fine position after which the message may be sent.
    pub after: u64,
    /// For a stage before an event: the request whose completion reaches
    /// it (replay awaits it, outside the traced API).
    pub once: Option<ReqId>,
    /// World rank of the sender.
    pub sender: i32,
    /// Communicator id of the message.
    pub comm: u32,
    /// Tag of the message.
    pub tag: i32,
    /// Index of the message on its channel.
    pub k: u64,
}

/// Whether an event can observe arrival order, so that a trace without
/// any such event needs no gates (the check runs on the compressed
/// structure's event shapes, before any expansion).
pub fn is_racy(e: &Event) -> bool {
    let wildcard = e
        .recv
        .is_some_and(|t| t.peer == Peer::Any || t.tag == Tag::Any);
    matches!(
        e.op,
        Op::Waitany | Op::Waitsome | Op::Test | Op::Testall | Op::Testany | Op::Testsome
    ) || (e.op == Op::Iprobe || e.op == Op::Improbe) && e.flag == Some(false)
        || wildcard
}

/// A receive pattern: communicator, source (`None` for any), tag (`None`
/// for any).
type Pattern = (u32, Option<i32>, Option<i32>);

/// The latest holds of one pattern. A hold at a wildcard receive or a
/// successful wildcard probe excepts the channel it matched; for a channel
/// `c`, the hold that applies is the latest one not excepting `c`, which
/// is either the latest hold or the latest one whose exception differs
/// from the latest's, so two are enough.
#[derive(Clone, Copy, Default)]
struct Holds {
    last: Option<(u64, Option<Chan>)>,
    other: Option<(u64, Option<Chan>)>,
}

impl Holds {
    fn add(&mut self, pos: u64, except: Option<Chan>) {
        match self.last {
            Some((_, e)) if e == except => self.last = Some((pos, except)),
            prev => {
                self.other = prev;
                self.last = Some((pos, except));
            }
        }
    }

    fn for_chan(&self, c: Chan) -> u64 {
        [self.last, self.other]
            .into_iter()
            .flatten()
            .filter(|&(_, e)| e != Some(c))
            .map(|(p, _)| p)
            .max()
            .unwrap_or(0)
    }
}

/// A receive request between its posting and its completion.
#[derive(Clone, Copy)]
struct RecvReq {
    comm: u32,
    src: Option<i32>,
    tag: Option<i32>,
    /// The message, once its channel is known: channel, index, and the
    /// hold that applied at assignment.
    msg: Option<(Chan, u64, u64)>,
    /// The latest racy completion call that must not have completed it.
    held: u64,
    /// Where it was posted (it is matched in posting order).
    posted: u64,
    active: bool,
    persistent: bool,
}

/// The receiver's side of one pass.
#[derive(Default)]
struct Receiver {
    /// Messages assigned per channel (the receiver's side of the numbering
    /// the sender's [`SendCounter`] keeps).
    assigned: Numbering<Chan>,
    /// The position of each channel's last assigned message.
    last: HashMap<Chan, u64>,
    holds: HashMap<Pattern, Holds>,
    reqs: HashMap<ReqId, RecvReq>,
    /// The request that reaches each stage before an event.
    stages: HashMap<u64, ReqId>,
    out: Vec<Gate>,
    /// Where replay waits for each message: channel, index, fine position.
    arrivals: Vec<(Chan, u64, u64)>,
    /// Blocking collectives: communicator, and the fine positions before
    /// and after the call.
    colls: Vec<(u32, u64, u64)>,
}

impl Receiver {
    /// The next message of channel `c`, assigned at `pos`: its index and
    /// the latest hold that applies to it.
    fn assign(&mut self, c: Chan, pos: u64) -> (u64, u64) {
        let n = self.assigned.take(c);
        let last = self.last.insert(c, pos).unwrap_or(0);
        let (comm, src, t) = c;
        let hold = [
            (comm, Some(src), Some(t)),
            (comm, None, Some(t)),
            (comm, Some(src), None),
            (comm, None, None),
        ]
        .iter()
        .filter_map(|p| self.holds.get(p))
        .map(|h| h.for_chan(c))
        .filter(|&p| p > last && p < pos)
        .max()
        .unwrap_or(0);
        (n, hold)
    }

    fn hold(&mut self, p: Pattern, pos: u64, except: Option<Chan>) {
        self.holds.entry(p).or_default().add(pos, except);
    }

    fn emit(&mut self, c: Chan, k: u64, after: u64) {
        if after > 0 {
            self.out.push(Gate {
                after,
                once: self.stages.get(&after).copied(),
                sender: c.1,
                comm: c.0,
                tag: c.2,
                k,
            });
        }
    }

    /// A receive whose channel is known now (`c`), completing at `pos`.
    fn received(&mut self, c: Chan, pos: u64, wildcard: Option<Pattern>) {
        let (k, hold) = self.assign(c, pos);
        self.emit(c, k, hold);
        self.arrivals.push((c, k, pos));
        if let Some(p) = wildcard {
            self.hold(p, pos, Some(c));
        }
    }

    fn post(&mut self, id: ReqId, pos: u64) {
        let Some(r) = self.reqs.get(&id).copied() else {
            return;
        };
        let mut r = RecvReq {
            active: true,
            held: 0,
            posted: pos,
            msg: None,
            ..r
        };
        if let (Some(s), Some(t)) = (r.src, r.tag) {
            let c = (r.comm, s, t);
            let (k, hold) = self.assign(c, pos);
            r.msg = Some((c, k, hold));
        }
        self.reqs.insert(id, r);
    }

    /// Completes request `id` at fine position `pos`; `staged` says that
    /// `pos` is a stage reached by this request's completion.
    fn complete(&mut self, id: ReqId, e: &Event, pos: u64, staged: bool) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if !r.active {
            return;
        }
        if staged {
            self.stages.insert(pos, id);
        }
        r.active = false;
        let r = *r;
        if !r.persistent {
            self.reqs.remove(&id);
        }
        let m = e.matched.iter().find(|m| m.req == Some(id));
        let (c, k, hold) = match r.msg {
            Some(msg) => msg,
            None => {
                let (Some(s), Some(t)) =
                    (r.src.or(m.map(|m| m.source)), r.tag.or(m.map(|m| m.tag)))
                else {
                    return;
                };
                let c = (r.comm, s, t);
                let (k, hold) = self.assign(c, pos);
                self.hold((r.comm, r.src, r.tag), pos, Some(c));
                (c, k, hold)
            }
        };
        self.emit(c, k, hold.max(r.held));
        self.arrivals.push((c, k, pos));
    }

    /// The event at position `p`, handed to the stage of its family.
    fn event(&mut self, e: &Event, p: u64) {
        if e.failed() {
            return;
        }
        let pos = issued(p);
        match e.op.family() {
            Family::BlockingP2p => self.blocking_receive(e, pos),
            Family::NonblockingP2p | Family::Persistent => self.receive_request(e, pos),
            Family::Completion => self.completion(e, p),
            Family::Probe => self.probe(e, pos),
            Family::Collective => self.colls.push((e.comm.0, before(p), pos)),
            _ => {}
        }
    }

    /// A blocking call that receives (`Recv`, `Sendrecv`...), issued at
    /// `pos`: its message is known once its source and tag are, recorded
    /// or (for a wildcard) matched.
    fn blocking_receive(&mut self, e: &Event, pos: u64) {
        if let Some(t) = e.recv
            && t.peer != Peer::Null
        {
            let p = pattern(e, t);
            let blocking = blocking_match(e);
            let src = p.1.or(blocking.map(|m| m.source));
            let tg = p.2.or(blocking.map(|m| m.tag));
            if let (Some(s), Some(tg)) = (src, tg) {
                let wild = (p.1.is_none() || p.2.is_none()).then_some(p);
                self.received((e.comm.0, s, tg), pos, wild);
            }
        }
    }

    /// A nonblocking or persistent point-to-point call at `pos`: a receive
    /// request is entered (and posted, unless persistent), started,
    /// or freed.
    fn receive_request(&mut self, e: &Event, pos: u64) {
        match e.op {
            Op::Irecv | Op::RecvInit => {
                let (Some(id), Some(t)) = (e.req, e.recv) else {
                    return;
                };
                if t.peer == Peer::Null {
                    return;
                }
                let p = pattern(e, t);
                self.reqs.insert(
                    id,
                    RecvReq {
                        comm: e.comm.0,
                        src: p.1,
                        tag: p.2,
                        msg: None,
                        held: 0,
                        posted: 0,
                        active: false,
                        persistent: e.op == Op::RecvInit,
                    },
                );
                if e.op == Op::Irecv {
                    self.post(id, pos);
                }
            }
            Op::Start | Op::Startall => {
                for &id in &e.reqs {
                    self.post(id, pos);
                }
            }
            Op::RequestFree => {
                for id in &e.reqs {
                    self.reqs.remove(id);
                }
            }
            _ => {}
        }
    }

    /// A completion call at position `p`: a racy one holds the receives it
    /// did not complete; the receives it completed take their messages,
    /// wildcard ones stage by stage.
    fn completion(&mut self, e: &Event, p: u64) {
        let pos = issued(p);
        if is_racy(e) {
            for id in e.reqs.iter().filter(|id| !e.done.contains(id)) {
                if let Some(r) = self.reqs.get_mut(id)
                    && r.active
                {
                    r.held = pos;
                }
            }
        }
        // Wildcard receives match in posting order: each is a stage of the
        // call, the rest complete once it is issued.
        let mut wild: Vec<(u64, ReqId)> = e
            .done
            .iter()
            .filter_map(|id| {
                let r = self.reqs.get(id)?;
                (r.active && r.msg.is_none()).then_some((r.posted, *id))
            })
            .collect();
        wild.sort_unstable();
        let staged = wild.len() > 1;
        for (j, &(_, id)) in wild.iter().enumerate() {
            let at = if staged { stage(p, j as u64) } else { pos };
            self.complete(id, e, at, staged);
        }
        for &id in &e.done {
            self.complete(id, e, pos, false);
        }
    }

    /// A probe at `pos`: a successful one waits for its message (and a
    /// matched probe takes it); a wildcard one holds the other channels,
    /// a failed poll its whole pattern.
    fn probe(&mut self, e: &Event, pos: u64) {
        let Some(t) = e.recv else { return };
        let p = pattern(e, t);
        let wild = p.1.is_none() || p.2.is_none();
        let found = blocking_match(e).map(|m| (e.comm.0, m.source, m.tag));
        match e.op {
            Op::Probe | Op::Iprobe if e.flag != Some(false) => {
                if let Some(c) = found {
                    let k = self.assigned.peek(&c);
                    self.arrivals.push((c, k, pos));
                    if wild {
                        self.hold(p, pos, Some(c));
                    }
                }
            }
            Op::Mprobe | Op::Improbe if e.flag != Some(false) => {
                if let Some(c) = found {
                    self.received(c, pos, wild.then_some(p));
                }
            }
            Op::Iprobe | Op::Improbe => self.hold(p, pos, None),
            _ => {}
        }
    }
}

/// The receive pattern of `e`'s side `t`: its communicator, and the
/// source and tag, `None` where a wildcard.
fn pattern(e: &Event, t: trace::Transfer) -> Pattern {
    (e.comm.0, t.peer.world(), t.tag.value())
}

/// The match of a blocking receive or probe (the one without a request).
fn blocking_match(e: &Event) -> Option<&trace::Matched> {
    e.matched.iter().find(|m| m.req.is_none())
}

/// The gates a rank opens, from its own events in recorded order: for
/// each message it receives that a racy call before must not have seen,
/// the fine position of the latest such call. Sorted by position.
pub fn gates(events: impl Iterator<Item = Event>) -> Vec<Gate> {
    let mut r = Receiver::default();
    for (i, e) in events.enumerate() {
        r.event(&e, i as u64 + 1);
    }
    r.out.sort_by_key(|g| g.after);
    r.out
}

/// What one rank's events say about the order replay must keep: where it
/// sends and where it waits for each message, and its collectives. Rank 0
/// builds it for every rank to check holds against causality
/// ([`inconsistent`]).
#[derive(Default)]
pub struct Flow {
    /// Sends: channel (peer = receiver), index, fine position.
    sends: Vec<(Chan, u64, u64)>,
    /// Waits for messages: channel (peer = sender), index, fine position.
    arrivals: Vec<(Chan, u64, u64)>,
    colls: Vec<(u32, u64, u64)>,
}

impl Flow {
    /// The flow of one rank's events in recorded order.
    pub fn of(events: impl Iterator<Item = Event>) -> Flow {
        let mut r = Receiver::default();
        let mut c = SendCounter::default();
        let mut sends = Vec::new();
        for (i, e) in events.enumerate() {
            let p = i as u64 + 1;
            r.event(&e, p);
            sends.extend(c.sends(&e).into_iter().map(|(ch, k)| (ch, k, before(p))));
        }
        Flow {
            sends,
            arrivals: r.arrivals,
            colls: r.colls,
        }
    }

    /// How many edges it adds to the order (a size check before
    /// [`inconsistent`]).
    pub fn len(&self) -> usize {
        self.sends.len() + self.arrivals.len() + self.colls.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The holds (indices into `waits`) that would contradict causality, from
/// every rank's [`Flow`] (index = world rank): a hold makes a racy call
/// come before a send; if that send already comes before the call (the
/// application's messages, collectives and the holds kept so far lead
/// from one to the other), the replay would wait forever, so the hold is
/// given up. Such a hold records a latency race: the message was sent
/// first and was still in flight. Holds are taken in the order of their
/// sends.
pub fn inconsistent(flows: &[Flow], waits: &[Wait]) -> Vec<usize> {
    let n = flows.len();
    // Out-edges per node (ranks, then one virtual node per collective
    // instance), by source position.
    let mut out: Vec<std::collections::BTreeMap<u64, Vec<(usize, u64)>>> =
        vec![Default::default(); n];
    let mut sent: HashMap<(u32, i32, i32, i32, u64), u64> = HashMap::new();
    for (s, f) in flows.iter().enumerate() {
        for &((comm, dst, tag), k, at) in &f.sends {
            sent.insert((comm, s as i32, dst, tag, k), at);
        }
    }
    for (r, f) in flows.iter().enumerate() {
        for &((comm, src, tag), k, at) in &f.arrivals {
            if let Some(&from) = sent.get(&(comm, src, r as i32, tag, k))
                && let Some(o) = usize::try_from(src).ok().and_then(|s| out.get_mut(s))
            {
                o.entry(from).or_default().push((r, at));
            }
        }
    }
    // The k-th collective of each communicator id joins every rank that
    // makes one (communicators that share an id are joined: more order
    // than MPI promises, which can only give up more holds).
    let mut instance: HashMap<(u32, usize), usize> = HashMap::new();
    for (r, f) in flows.iter().enumerate() {
        let mut seq: HashMap<u32, usize> = HashMap::new();
        for &(comm, pre, post) in &f.colls {
            let k = seq.entry(comm).or_insert(0);
            let v = *instance.entry((comm, *k)).or_insert_with(|| {
                out.push(Default::default());
                out.len() - 1
            });
            *k += 1;
            out[r].entry(pre).or_default().push((v, 0));
            out[v].entry(0).or_default().push((r, post));
        }
    }
    let mut order: Vec<usize> = (0..waits.len()).collect();
    order.sort_by_key(|&i| (waits[i].at, waits[i].sender));
    let mut dropped = Vec::new();
    for i in order {
        let w = waits[i];
        let (Ok(s), Ok(r)) = (usize::try_from(w.sender), usize::try_from(w.receiver)) else {
            continue;
        };
        if s >= n || r >= n {
            continue;
        }
        if reaches(&out, (s, before(w.at)), (r, w.after)) {
            dropped.push(i);
        } else {
            out[r].entry(w.after).or_default().push((s, before(w.at)));
        }
    }
    dropped.sort_unstable();
    dropped
}

/// Whether node position `from` leads to `to` (a position on a node
/// leads to every later one on it, and along the edges).
fn reaches(
    out: &[std::collections::BTreeMap<u64, Vec<(usize, u64)>>],
    from: (usize, u64),
    to: (usize, u64),
) -> bool {
    let mut reach: HashMap<usize, u64> = HashMap::from([(from.0, from.1)]);
    let mut work = vec![(from.0, from.1, u64::MAX)];
    while let Some((node, lo, hi)) = work.pop() {
        if node == to.0 && lo <= to.1 {
            return true;
        }
        for (_, targets) in out[node].range(lo..hi) {
            for &(m, at) in targets {
                let old = reach.get(&m).copied().unwrap_or(u64::MAX);
                if at < old {
                    reach.insert(m, at);
                    work.push((m, at, old));
                }
            }
        }
    }
    false
}

/// A held send: rank `sender`, before issuing its event at position `at`,
/// waits until `receiver` has reached fine position `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// World rank that waits.
    pub sender: i32,
    /// Position of the send event it waits before.
    pub at: u64,
    /// World rank that releases it.
    pub receiver: i32,
    /// Fine position the receiver must reach.
    pub after: u64,
}

/// The waits (indices into `waits`) that would never end: replay is
/// simulated with every rank running as far as its waits allow, and when
/// all remaining ones wait on each other, the one asking for the latest
/// position is given up, until every rank gets through. Waits on messages
/// (a blocking receive of a held message) are not modelled; replay bounds
/// such waits in time.
pub fn deadlocked(waits: &[Wait]) -> Vec<usize> {
    let mut lists: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, w) in waits.iter().enumerate() {
        lists.entry(w.sender).or_default().push(i);
    }
    for l in lists.values_mut() {
        l.sort_by_key(|&i| waits[i].at);
    }
    let mut next: HashMap<i32, usize> = lists.keys().map(|&r| (r, 0)).collect();
    let frontier = |next: &HashMap<i32, usize>, r: i32| -> u64 {
        match (lists.get(&r), next.get(&r)) {
            (Some(l), Some(&n)) if n < l.len() => before(waits[l[n]].at),
            _ => u64::MAX,
        }
    };
    let mut waiting_on: HashMap<i32, Vec<i32>> = HashMap::new();
    let mut queue: VecDeque<i32> = lists.keys().copied().collect();
    let mut dropped = Vec::new();
    loop {
        while let Some(x) = queue.pop_front() {
            let l = &lists[&x];
            while next[&x] < l.len() {
                let w = waits[l[next[&x]]];
                if frontier(&next, w.receiver) > w.after {
                    *next.get_mut(&x).unwrap_or(&mut 0) += 1;
                    queue.extend(waiting_on.remove(&x).unwrap_or_default());
                } else {
                    waiting_on.entry(w.receiver).or_default().push(x);
                    break;
                }
            }
        }
        // Every rank left waits on one that waits too: follow those
        // edges to a cycle, and give up its wait that asks the most.
        let current = |r: i32| lists.get(&r).and_then(|l| l.get(next[&r]).copied());
        let Some(mut x) = lists
            .keys()
            .copied()
            .filter(|&r| current(r).is_some())
            .min()
        else {
            break;
        };
        let mut seen = std::collections::HashSet::new();
        while seen.insert(x) {
            match current(x) {
                Some(i) => x = waits[i].receiver,
                None => break,
            }
        }
        let mut cycle = vec![x];
        while let Some(i) = current(*cycle.last().unwrap_or(&x)) {
            let r = waits[i].receiver;
            if r == x {
                break;
            }
            cycle.push(r);
        }
        let Some((i, x)) = cycle
            .iter()
            .filter_map(|&r| Some((current(r)?, r)))
            .max_by_key(|&(i, r)| (waits[i].after, std::cmp::Reverse(r)))
        else {
            break;
        };
        dropped.push(i);
        *next.get_mut(&x).unwrap_or(&mut 0) += 1;
        for v in waiting_on.values_mut() {
            v.retain(|&y| y != x);
        }
        queue.push_back(x);
        queue.extend(waiting_on.remove(&x).unwrap_or_default());
    }
    dropped.sort_unstable();
    dropped
}

/// Names the messages a rank sends as replay issues them: channel and
/// index, counted like [`gates`] counts receives.
#[derive(Default)]
pub struct SendCounter {
    sent: Numbering<Chan>,
    persistent: HashMap<ReqId, Chan>,
}

impl SendCounter {
    /// The messages `e` sends, as (communicator, destination world rank,
    /// tag, index on that channel), and counts them.
    pub fn sends(&mut self, e: &Event) -> Vec<(Chan, u64)> {
        let comm = e.comm.0;
        let chan = |e: &Event| {
            let t = e.send?;
            Some((comm, t.peer.world()?, t.tag.value()?))
        };
        let chans: Vec<Chan> = match e.op {
            Op::SendInit | Op::SsendInit | Op::BsendInit | Op::RsendInit => {
                if let (Some(id), Some(c)) = (e.req, chan(e)) {
                    self.persistent.insert(id, c);
                }
                Vec::new()
            }
            Op::Start | Op::Startall => e
                .reqs
                .iter()
                .filter_map(|id| self.persistent.get(id).copied())
                .collect(),
            Op::RequestFree => {
                for id in &e.reqs {
                    self.persistent.remove(id);
                }
                Vec::new()
            }
            _ if matches!(e.op.family(), Family::BlockingP2p | Family::NonblockingP2p) => {
                chan(e).into_iter().collect()
            }
            _ => Vec::new(),
        };
        chans.into_iter().map(|c| (c, self.sent.take(c))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Matched, Transfer};

    fn ev(op: Op) -> Event {
        Event::new(op)
    }

    fn to(peer: Peer, tag: Tag) -> Transfer {
        Transfer {
            peer,
            tag,
            count: 1,
            dsize: 4,
            dtype: trace::Datatype::UNKNOWN,
        }
    }

    fn rank(w: i32) -> Peer {
        Peer::Rank { world: w, local: w }
    }

    fn recv(src: Peer, t: Tag, matched: Option<(i32, i32)>) -> Event {
        let mut e = ev(Op::Recv);
        e.recv = Some(to(src, t));
        if let Some((s, t)) = matched {
            e.matched = vec![Matched {
                req: None,
                source: s,
                tag: t,
            }];
        }
        e
    }

    fn gate(p: u64, sender: i32, tag: i32, k: u64) -> Gate {
        Gate {
            after: issued(p),
            once: None,
            sender,
            comm: 0,
            tag,
            k,
        }
    }

    #[test]
    fn a_wildcard_receive_holds_the_other_senders_until_it_matched() {
        // Rank 0 receives from 2, then 1, then 3, all with ANY_SOURCE.
        let evs = vec![
            recv(Peer::Any, Tag::Value(5), Some((2, 5))),
            recv(Peer::Any, Tag::Value(5), Some((1, 5))),
            recv(Peer::Any, Tag::Value(5), Some((3, 5))),
        ];
        let g = gates(evs.into_iter());
        // 1's first message waits for event 1; 3's for event 2 (the
        // latest wildcard receive before it that did not take it).
        assert_eq!(g, vec![gate(1, 1, 5, 0), gate(2, 3, 5, 0)]);
    }

    #[test]
    fn a_failed_poll_holds_the_next_message_of_its_channel_only() {
        let mut ip = ev(Op::Iprobe);
        ip.recv = Some(to(rank(3), Tag::Value(12)));
        ip.flag = Some(false);
        let evs = vec![
            ip.clone(),
            ip.clone(),
            ip,
            recv(rank(3), Tag::Value(12), None),
            recv(rank(3), Tag::Value(12), None),
            recv(rank(1), Tag::Value(12), None),
        ];
        let g = gates(evs.into_iter());
        // The first message from 3 waits for the third failed Iprobe; the
        // second does not (the first is in the way), nor does rank 1's.
        assert_eq!(g, vec![gate(3, 3, 12, 0)]);
    }

    #[test]
    fn waitany_holds_the_requests_it_did_not_complete() {
        let mut irecv = ev(Op::Irecv);
        irecv.recv = Some(to(rank(2), Tag::Value(9)));
        irecv.req = Some(ReqId(5));
        let mut isend = ev(Op::Isend);
        isend.send = Some(to(rank(1), Tag::Value(9)));
        isend.req = Some(ReqId(6));
        let mut w1 = ev(Op::Waitany);
        w1.reqs = vec![ReqId(5), ReqId(6)];
        w1.done = vec![ReqId(6)];
        let mut w2 = ev(Op::Waitany);
        w2.reqs = vec![ReqId(5)];
        w2.done = vec![ReqId(5)];
        let g = gates(vec![irecv, isend.clone(), w1, w2].into_iter());
        assert_eq!(g, vec![gate(3, 2, 9, 0)]);
        // The sender names the same message.
        let mut s = SendCounter::default();
        let mut to2 = isend;
        to2.send = Some(to(rank(0), Tag::Value(9)));
        assert_eq!(s.sends(&to2), vec![((0, 0, 9), 0)]);
        assert_eq!(s.sends(&to2), vec![((0, 0, 9), 1)]);
    }

    #[test]
    fn a_successful_wildcard_probe_holds_the_others_not_its_own() {
        let mut p = ev(Op::Probe);
        p.recv = Some(to(Peer::Any, Tag::Any));
        p.matched = vec![Matched {
            req: None,
            source: 1,
            tag: 7,
        }];
        let evs = vec![
            p,
            recv(rank(1), Tag::Value(7), None),
            recv(rank(2), Tag::Value(8), None),
        ];
        let g = gates(evs.into_iter());
        assert_eq!(g, vec![gate(1, 2, 8, 0)]);
    }

    #[test]
    fn wildcard_receives_completed_together_are_matched_stage_by_stage() {
        // Rank 0 posts three ANY_SOURCE receives (events 1-3); one Waitall
        // (event 4) completes them with 2, 3 and 1 in posting order.
        let mut evs = Vec::new();
        for id in 0..3 {
            let mut e = ev(Op::Irecv);
            e.recv = Some(to(Peer::Any, Tag::Value(7)));
            e.req = Some(ReqId(id));
            evs.push(e);
        }
        let mut w = ev(Op::Waitall);
        w.reqs = vec![ReqId(0), ReqId(1), ReqId(2)];
        w.done = w.reqs.clone();
        w.matched = [(0, 2), (1, 3), (2, 1)]
            .iter()
            .map(|&(r, s)| Matched {
                req: Some(ReqId(r)),
                source: s,
                tag: 7,
            })
            .collect();
        evs.push(w);
        let g = gates(evs.into_iter());
        let staged = |j, once, sender| Gate {
            after: stage(4, j),
            once: Some(ReqId(once)),
            sender,
            comm: 0,
            tag: 7,
            k: 0,
        };
        // 3's message waits until request 0 took 2's; 1's until request 1
        // took 3's.
        assert_eq!(g, vec![staged(0, 0, 3), staged(1, 1, 1)]);
    }

    #[test]
    fn holds_that_wait_on_each_other_are_given_up_one_at_a_time() {
        let w = |sender, at, receiver, after_event| Wait {
            sender,
            at,
            receiver,
            after: issued(after_event),
        };
        // Rank 1 sends at 8 after rank 0's event 18; rank 0 sends at 15
        // after rank 1's event 11: a cycle. Rank 2 waits on rank 0's 20.
        let waits = [w(1, 8, 0, 18), w(0, 15, 1, 11), w(2, 3, 0, 20)];
        assert_eq!(deadlocked(&waits), vec![0]);
        // Without the cycle nothing is given up, whatever the order.
        let ok = [
            w(1, 8, 0, 10),
            w(0, 15, 1, 11),
            w(2, 3, 0, 20),
            w(0, 30, 2, 5),
        ];
        assert!(deadlocked(&ok).is_empty());
        // A rank's wait that comes after its release point is no cycle;
        // one before it is.
        assert!(deadlocked(&[w(0, 5, 1, 3), w(1, 4, 0, 4)]).is_empty());
        assert_eq!(deadlocked(&[w(0, 5, 1, 4), w(1, 4, 0, 5)]).len(), 1);
    }

    #[test]
    fn a_hold_against_causality_is_given_up_and_one_along_it_is_kept() {
        // Ranks 0 and 1 each post a receive from the other (event 1), send
        // to it (event 2) and Waitany (event 3) over both, completing only
        // the send; each receive completes at event 4.
        let rank_events = |me: i32, other: i32| {
            let mut irecv = ev(Op::Irecv);
            irecv.recv = Some(to(rank(other), Tag::Value(1)));
            irecv.req = Some(ReqId(0));
            let mut isend = ev(Op::Isend);
            isend.send = Some(to(rank(other), Tag::Value(1)));
            isend.req = Some(ReqId(1));
            let mut any = ev(Op::Waitany);
            any.reqs = vec![ReqId(0), ReqId(1)];
            any.done = vec![ReqId(1)];
            let mut wait = ev(Op::Wait);
            wait.reqs = vec![ReqId(0)];
            wait.done = vec![ReqId(0)];
            let _ = me;
            vec![irecv, isend, any, wait]
        };
        let flows = [
            Flow::of(rank_events(0, 1).into_iter()),
            Flow::of(rank_events(1, 0).into_iter()),
        ];
        for (me, f) in flows.iter().enumerate() {
            assert_eq!(f.sends.len(), 1, "rank {me}");
        }
        // Both hold the other's send until after their Waitany: rank 0's
        // send comes first (same position, lower rank) and keeps its hold;
        // rank 1's would close a cycle.
        let waits = [
            Wait {
                sender: 1,
                at: 2,
                receiver: 0,
                after: issued(3),
            },
            Wait {
                sender: 0,
                at: 2,
                receiver: 1,
                after: issued(3),
            },
        ];
        assert_eq!(inconsistent(&flows, &waits), vec![0]);
        // A hold that asks rank 0's send to wait for rank 1's event 4,
        // where rank 1 waits for that very message, is given up alone.
        let chain = [Wait {
            sender: 0,
            at: 2,
            receiver: 1,
            after: issued(4),
        }];
        assert_eq!(inconsistent(&flows, &chain), vec![0]);
    }
}
