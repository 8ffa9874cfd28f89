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
//! `k`-th message a sender sends on a channel (communicator instance,
//! sender, receiver, tag) is the one the receiver's `k`-th receive on that
//! channel takes. Both sides walk their own events with the workspace's
//! one matching engine ([`semantics::walk::Walker`], numbered, over
//! [`semantics::comms::Comms`]): it places receives in the order MPI
//! matches them (posting order, wildcards once resolved) and names
//! communicators by their lineage, the same on every member. So each rank
//! computes the gates it must open from its own events alone ([`gates`],
//! one streaming pass), and an all-to-all tells each sender which of its
//! sends are held ([`SendCounter`] names them as replay issues them).
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

use semantics::comms::Comms;
use semantics::walk::{RecvEnd, Step, Walker};
use trace::{Event, Family, Op, Peer, ReqId, Tag};

/// A message channel as one side sees it: communicator instance (see
/// [`semantics::comms`]: the same on both sides, and distinct for every
/// other communicator, inter-communicators included), the other rank
/// (world), tag.
pub type Chan = (u64, i32, i32);

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
    /// Communicator instance of the message (both sides name it alike).
    pub comm: u64,
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

/// A receive pattern: communicator instance, source (`None` for any), tag
/// (`None` for any).
type Pattern = (u64, Option<i32>, Option<i32>);

/// The latest holds of one pattern, summarised. A hold at a wildcard
/// receive or a successful wildcard probe excepts the channel it matched;
/// for a channel `c`, the hold that applies is the latest one not
/// excepting `c`, which is either the latest hold or the latest one whose
/// exception differs from the latest's, so two are enough.
#[derive(Clone, Copy, Default)]
struct Latest {
    last: Option<(u64, Option<Chan>)>,
    other: Option<(u64, Option<Chan>)>,
}

impl Latest {
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

/// The holds of one pattern. The walk hands a receive on only once every
/// receive posted before it is placed, so a receive can be asked about
/// after later holds were made: holds from the oldest position still to
/// be asked about (`lo`, see [`Walker::pending`]) are kept one by one, in
/// position order, the older ones summarised ([`Latest`]).
#[derive(Default)]
struct Holds {
    old: Latest,
    recent: VecDeque<(u64, Option<Chan>)>,
}

impl Holds {
    /// Summarises the holds before `lo`.
    fn settle(&mut self, lo: u64) {
        while let Some(&(p, e)) = self.recent.front()
            && p < lo
        {
            self.old.add(p, e);
            self.recent.pop_front();
        }
    }

    fn add(&mut self, pos: u64, except: Option<Chan>, lo: u64) {
        self.settle(lo);
        let i = self.recent.partition_point(|h| h.0 <= pos);
        self.recent.insert(i, (pos, except));
    }

    /// The latest hold before `pos` that applies to channel `c` (0 for
    /// none).
    fn for_chan(&mut self, c: Chan, pos: u64, lo: u64) -> u64 {
        self.settle(lo);
        let below = self.recent.partition_point(|h| h.0 < pos);
        let recent = self
            .recent
            .range(..below)
            .rev()
            .find(|&&(_, e)| e != Some(c))
            .map(|&(p, _)| p);
        let old = self.old.for_chan(c);
        recent.unwrap_or(0).max(if old < pos { old } else { 0 })
    }
}

/// The receiver's side of one pass: the rank's walk, and the holds and
/// stages that its receives' messages must respect.
struct Receiver {
    comms: Comms,
    walk: Walker,
    steps: Vec<Step>,
    /// The position of each channel's latest message taken.
    last: HashMap<Chan, u64>,
    holds: HashMap<Pattern, Holds>,
    /// No hold will be asked about before this fine position any more.
    lo: u64,
    /// The request that reaches each stage before an event.
    stages: HashMap<u64, ReqId>,
    out: Vec<Gate>,
    /// Where replay waits for each message: channel, index, fine position.
    arrivals: Vec<(Chan, u64, u64)>,
    /// Blocking collectives: communicator instance, and the fine positions
    /// before and after the call.
    colls: Vec<(u64, u64, u64)>,
}

impl Receiver {
    /// The receiver side of world rank `rank` of `world` ranks.
    fn new(rank: u32, world: i64) -> Receiver {
        Receiver {
            comms: Comms::new(rank, world),
            walk: Walker::new(rank, world).numbered(),
            steps: Vec::new(),
            last: HashMap::new(),
            holds: HashMap::new(),
            lo: 0,
            stages: HashMap::new(),
            out: Vec::new(),
            arrivals: Vec::new(),
            colls: Vec::new(),
        }
    }

    fn hold(&mut self, p: Pattern, pos: u64, except: Option<Chan>) {
        let lo = self.lo;
        self.holds.entry(p).or_default().add(pos, except, lo);
    }

    /// The latest hold that applies to the message of channel `c` taken
    /// at `pos`: made after the channel's previous message was taken, and
    /// before `pos`.
    fn applies(&mut self, c: Chan, pos: u64) -> u64 {
        let last = self.last.get(&c).copied().unwrap_or(0);
        self.last.insert(c, last.max(pos));
        let (comm, src, t) = c;
        let lo = self.lo;
        let mut hold = 0;
        for p in [
            (comm, Some(src), Some(t)),
            (comm, None, Some(t)),
            (comm, Some(src), None),
            (comm, None, None),
        ] {
            if let Some(h) = self.holds.get_mut(&p) {
                hold = hold.max(h.for_chan(c, pos, lo));
            }
        }
        if hold > last { hold } else { 0 }
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

    /// The event at position `p`: walked, and its probes' holds made.
    fn event(&mut self, e: &Event, p: u64) {
        let view = self.comms.view(e.comm.0);
        let steps = &mut self.steps;
        self.walk
            .event(p - 1, e, e.op.has_comm().then_some(view), &mut |s| {
                steps.push(s)
            });
        if !e.failed() {
            match e.op.family() {
                Family::Probe => self.probe(e, view.inst, issued(p)),
                Family::Collective => self.colls.push((view.inst, before(p), issued(p))),
                _ => {}
            }
        }
        self.received();
        self.comms.observe(e);
        self.lo = before(self.walk.pending().unwrap_or(p) + 1);
    }

    /// The end of the rank's events: the receives still held back by the
    /// walk take their messages.
    fn finish(&mut self) {
        let steps = &mut self.steps;
        self.walk.finish(&mut |s| steps.push(s));
        self.received();
    }

    /// The receives the walk handed on, in the order they take their
    /// channels' messages. A wildcard's hold on the other channels (and its
    /// stage) is made before any of them asks which holds apply, since the
    /// walk may hand on a receive after a later-posted one completed.
    fn received(&mut self) {
        let steps = std::mem::take(&mut self.steps);
        let recvs = || {
            steps.iter().filter_map(|s| match s {
                Step::Recv(x) => Some(x),
                _ => None,
            })
        };
        for x in recvs() {
            if let Some(w) = x.wildcard {
                let (c, pos) = (chan(x), taken(x));
                let pattern = (
                    c.0,
                    (!w.any_source).then_some(c.1),
                    (!w.any_tag).then_some(c.2),
                );
                self.hold(pattern, pos, Some(c));
                if let Some(r) = x.req.filter(|_| staged(x)) {
                    self.stages.insert(pos, r);
                }
            }
        }
        for x in recvs() {
            let Some(k) = x.k else { continue };
            let (c, pos) = (chan(x), taken(x));
            let hold = self.applies(c, pos);
            let matched_probe = x.probe == Some(x.event);
            if x.completed || matched_probe {
                let missed = match x.missed {
                    Some(m) if !matched_probe => issued(m + 1),
                    _ => 0,
                };
                self.emit(c, k, hold.max(missed));
                self.arrivals.push((c, k, arrived(x)));
            }
            // A probe before the receive found its message there.
            if let Some(q) = x.probe.filter(|_| !matched_probe) {
                self.arrivals.push((c, k, issued(q + 1)));
            }
        }
        self.steps = steps;
        self.steps.clear();
    }

    /// A probe (on communicator instance `inst`) at `pos`: a successful
    /// wildcard one holds the other channels, a failed poll its whole
    /// pattern. (A matched probe's message is the walk's: it takes it.)
    fn probe(&mut self, e: &Event, inst: u64, pos: u64) {
        let Some(t) = e.recv else { return };
        let p = (inst, t.peer.world(), t.tag.value());
        let wild = p.1.is_none() || p.2.is_none();
        let found = e
            .matched
            .iter()
            .find(|m| m.req.is_none())
            .map(|m| (inst, m.source, m.tag));
        match e.op {
            Op::Probe | Op::Iprobe if e.flag != Some(false) => {
                if let Some(c) = found
                    && wild
                {
                    self.hold(p, pos, Some(c));
                }
            }
            Op::Iprobe | Op::Improbe if e.flag == Some(false) => self.hold(p, pos, None),
            _ => {}
        }
    }
}

/// The channel of a receive, as the receiver names it (peer = sender).
fn chan(x: &RecvEnd) -> Chan {
    (x.chan.comm, x.chan.from as i32, x.chan.tag)
}

/// Whether a receive is one stage of the call that completed it: one of
/// several wildcard receives it resolved.
fn staged(x: &RecvEnd) -> bool {
    x.probe != Some(x.event) && x.wildcard.is_some_and(|w| w.of > 1)
}

/// The fine position at which a receive takes its message: a matched
/// probe at the probe; a wildcard receive once it matched (its stage of
/// the call that completed it, or that call); any other at its posting,
/// where MPI matches it to its channel's next message.
fn taken(x: &RecvEnd) -> u64 {
    match x.wildcard {
        _ if x.probe == Some(x.event) => issued(x.event + 1),
        Some(w) if w.of > 1 => stage(x.done + 1, u64::from(w.nth)),
        Some(_) => issued(x.done + 1),
        None => issued(x.event + 1),
    }
}

/// The fine position by which a completed receive's message has arrived:
/// where replay waits for it (a matched probe's at the probe, a wildcard's
/// at its stage).
fn arrived(x: &RecvEnd) -> u64 {
    match x.wildcard {
        _ if x.probe == Some(x.event) => issued(x.event + 1),
        Some(w) if w.of > 1 => stage(x.done + 1, u64::from(w.nth)),
        _ => issued(x.done + 1),
    }
}

/// The gates world rank `rank` (of `world` ranks) opens, from its own
/// events in recorded order: for each message it receives that a racy
/// call before must not have seen, the fine position of the latest such
/// call. Sorted by position.
pub fn gates(rank: u32, world: i64, events: impl Iterator<Item = Event>) -> Vec<Gate> {
    let mut r = Receiver::new(rank, world);
    for (i, e) in events.enumerate() {
        r.event(&e, i as u64 + 1);
    }
    r.finish();
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
    colls: Vec<(u64, u64, u64)>,
}

impl Flow {
    /// The flow of world rank `rank`'s (of `world` ranks) events in
    /// recorded order.
    pub fn of(rank: u32, world: i64, events: impl Iterator<Item = Event>) -> Flow {
        let mut r = Receiver::new(rank, world);
        let mut c = SendCounter::new(rank, world);
        let mut sends = Vec::new();
        for (i, e) in events.enumerate() {
            let p = i as u64 + 1;
            r.event(&e, p);
            sends.extend(c.sends(&e).into_iter().map(|(ch, k)| (ch, k, before(p))));
        }
        r.finish();
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
    let mut sent: HashMap<(u64, i32, i32, i32, u64), u64> = HashMap::new();
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
    // The k-th collective of each communicator instance joins every rank
    // that makes one (the groups of an ambiguous instance, such as those
    // of `Comm_split_type`, are joined: more order than MPI promises,
    // which can only give up more holds).
    let mut instance: HashMap<(u64, usize), usize> = HashMap::new();
    for (r, f) in flows.iter().enumerate() {
        let mut seq: HashMap<u64, usize> = HashMap::new();
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
/// index, from the same numbered walk over the same communicator lineage
/// as [`gates`] names the receives.
pub struct SendCounter {
    comms: Comms,
    walk: Walker,
    /// Events seen (the walk's event index).
    seen: u64,
}

impl SendCounter {
    /// The sends of world rank `rank` of `world` ranks, none counted yet.
    pub fn new(rank: u32, world: i64) -> SendCounter {
        SendCounter {
            comms: Comms::new(rank, world),
            walk: Walker::new(rank, world).numbered(),
            seen: 0,
        }
    }

    /// The messages `e`, the rank's next event, sends, as (communicator
    /// instance, destination world rank, tag, index on that channel), and
    /// counts them.
    pub fn sends(&mut self, e: &Event) -> Vec<(Chan, u64)> {
        let view = self.comms.view(e.comm.0);
        let mut sent = Vec::new();
        self.walk
            .event(self.seen, e, e.op.has_comm().then_some(view), &mut |s| {
                if let Step::Send(x) = s
                    && let Some(k) = x.k
                {
                    sent.push(((x.chan.comm, x.chan.to as i32, x.chan.tag), k));
                }
            });
        self.comms.observe(e);
        self.seen += 1;
        sent
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
        let g = gates(0, 4, evs.into_iter());
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
        let g = gates(0, 4, evs.into_iter());
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
        let g = gates(0, 4, vec![irecv, isend.clone(), w1, w2].into_iter());
        assert_eq!(g, vec![gate(3, 2, 9, 0)]);
        // The sender (rank 2) names the same message.
        let mut s = SendCounter::new(2, 4);
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
        let g = gates(0, 4, evs.into_iter());
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
        let g = gates(0, 4, evs.into_iter());
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
    fn a_wildcard_posted_first_takes_the_first_message_of_its_channel() {
        // Rank 0 posts an ANY_SOURCE receive (event 1), then one from 2
        // (event 2); a Testany (event 3) finds neither; a Waitall (event 4)
        // completes both, the wildcard with 2's message. MPI matched the
        // wildcard first: it took 2's message 0, which the Testany must
        // not have seen, and the other receive message 1.
        let mut any = ev(Op::Irecv);
        any.recv = Some(to(Peer::Any, Tag::Value(7)));
        any.req = Some(ReqId(0));
        let mut two = ev(Op::Irecv);
        two.recv = Some(to(rank(2), Tag::Value(7)));
        two.req = Some(ReqId(1));
        let mut test = ev(Op::Testany);
        test.reqs = vec![ReqId(0)];
        let mut all = ev(Op::Waitall);
        all.reqs = vec![ReqId(0), ReqId(1)];
        all.done = all.reqs.clone();
        all.matched = vec![Matched {
            req: Some(ReqId(0)),
            source: 2,
            tag: 7,
        }];
        let g = gates(0, 4, vec![any, two, test, all].into_iter());
        assert_eq!(g, vec![gate(3, 2, 7, 0)]);
    }

    #[test]
    fn channels_are_named_by_communicator_instance_on_both_sides() {
        // Ranks 0, 1 (colour 0) and 2, 3 (colour 1) split the world: every
        // rank calls its half id 2. Rank 0 polls rank 1 in vain, then
        // receives from it; ranks 1 and 2 each send on their half.
        let split = |colour| {
            let mut e = ev(Op::CommSplit);
            let mut c = trace::CommCreate::new(Some(trace::CommId(2)), 2);
            c.color = Some(colour);
            c.key = Some(0);
            e.create = Some(Box::new(c));
            e
        };
        let on_half = |mut e: Event| {
            e.comm = trace::CommId(2);
            e
        };
        let mut poll = ev(Op::Iprobe);
        poll.recv = Some(to(rank(1), Tag::Value(5)));
        poll.flag = Some(false);
        let receiver = vec![
            split(0),
            on_half(poll),
            on_half(recv(rank(1), Tag::Value(5), None)),
        ];
        let g = gates(0, 4, receiver.into_iter());
        assert_eq!(g.len(), 1);
        let sent = |me: u32, colour, dest| {
            let mut s = SendCounter::new(me, 4);
            let mut send = ev(Op::Send);
            send.send = Some(to(rank(dest), Tag::Value(5)));
            assert!(s.sends(&split(colour)).is_empty());
            s.sends(&on_half(send))
        };
        // Rank 1 names the held message as rank 0 does; rank 2's message
        // on its own half (id 2 as well) is another channel.
        let one = sent(1, 0, 0);
        assert_eq!(one, vec![((g[0].comm, 0, 5), g[0].k)]);
        assert_ne!(g[0].comm, 2);
        let two = sent(2, 1, 3);
        assert_ne!(two[0].0.0, g[0].comm);
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
            Flow::of(0, 2, rank_events(0, 1).into_iter()),
            Flow::of(1, 2, rank_events(1, 0).into_iter()),
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
