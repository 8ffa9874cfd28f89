//! Which send each receive got, and which calls form one collective.
//!
//! MPI's non-overtaking rule makes point-to-point matching deterministic
//! once every receive's source and tag are known: between one sender and
//! one receiver, on one communicator and tag, the k-th send matches the
//! k-th receive. Wildcard receives carry their matched source and tag (on
//! the call itself, or on the completion call for a nonblocking receive),
//! and `Mrecv`/`Imrecv` take theirs from the `Mprobe`/`Improbe` that
//! produced the message. A request's two ends are kept apart: where it was
//! posted (`Isend`, `Irecv`, `Start`) and which call completed it (a
//! `Wait*` or successful `Test*`), because wait states happen in the
//! latter.
//!
//! The k-th collective a rank calls on a communicator matches the k-th of
//! every other member. Members of communicators that share an id (the
//! colours of one `Comm_split`) are told apart by the communicator's
//! lineage; `Cart_sub` and graph communicators are taken as one group per
//! id, which joins sub-grids that are really separate.

use std::collections::VecDeque;
use std::collections::hash_map::DefaultHasher;

// Lookups only, never iterated: the fast hasher leaves every result as it
// is (millions of messages went through SipHash).
use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};

use compress::{Event, Family, Op, Peer, ReqId};
use rayon::prelude::*;

use crate::run::{Events, Run};

/// One end of a message or one member of a collective: where it was
/// posted and which call completed it (the same event for blocking calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    /// Index of the rank in [`Run::ranks`].
    pub rank: u32,
    /// Event index of the call that started it.
    pub post: u32,
    /// Event index of the call that completed it.
    pub done: u32,
}

/// A matched point-to-point message.
#[derive(Clone, Copy, Debug)]
pub struct Message {
    /// The sending side.
    pub send: End,
    /// The receiving side.
    pub recv: End,
    /// Bytes sent.
    pub bytes: u64,
    /// A synchronous send (`Ssend`, `Issend`): it cannot complete before
    /// the receive is posted, whatever the message size.
    pub sync: bool,
    /// The probe on the receiving rank that synchronised with the send
    /// (event index): the first `Probe`, successful `Iprobe`, `Mprobe` or
    /// successful `Improbe` that found this message before it was
    /// received. Repeated probes of the same message do not synchronise.
    pub probe: Option<u32>,
}

/// One collective operation: the matching calls of every member.
#[derive(Clone, Debug)]
pub struct Collective {
    /// The operation (of the first member seen).
    pub op: Op,
    /// One end per member.
    pub members: Vec<End>,
}

/// The matching of a whole run.
#[derive(Debug, Default)]
pub struct Matching {
    /// Messages, in the order of their receives.
    pub messages: Vec<Message>,
    /// Collectives, in the order their first member was seen.
    pub collectives: Vec<Collective>,
    /// Sends no receive took.
    pub unmatched_sends: usize,
    /// Receives with no send (or whose source was never learnt).
    pub unmatched_recvs: usize,
}

impl Matching {
    /// Bytes sent from each rank (row) to each rank (column), by index into
    /// [`Run::ranks`]: the communication matrix.
    pub fn bytes_matrix(&self, ranks: usize) -> Vec<Vec<u64>> {
        let mut b = vec![vec![0u64; ranks]; ranks];
        for msg in &self.messages {
            if let Some(row) = b.get_mut(msg.send.rank as usize)
                && let Some(cell) = row.get_mut(msg.recv.rank as usize)
            {
                *cell += msg.bytes;
            }
        }
        b
    }
}

/// Channel of a message: (communicator, source world rank, destination
/// world rank, tag).
type Key = (u32, i32, i32, i32);

#[derive(Clone, Copy)]
enum Kind {
    Send {
        dst: i32,
        tag: i32,
        bytes: u64,
        sync: bool,
    },
    Recv {
        src: Option<i32>,
        tag: Option<i32>,
    },
    Coll,
}

#[derive(Clone, Copy)]
struct Pending {
    kind: Kind,
    comm: u32,
    post: usize,
    /// The probe that found the message (an `Imrecv` of an `Improbe`d one).
    probe: Option<usize>,
}

struct RankOut {
    sends: Vec<(Key, End, u64, bool)>,
    recvs: Vec<(Key, End, Option<usize>)>,
    colls: Vec<((u32, u64, u64), Op, End)>,
    unresolved: usize,
}

/// Matches the messages and collectives of `run`.
pub fn match_run(run: &Run) -> Matching {
    let mut outs: Vec<RankOut> = run
        .ranks
        .par_iter()
        .enumerate()
        .map(|(ri, r)| scan(ri, r.rank as i32, &r.events))
        .collect();
    let mut m = Matching::default();
    let mut queues: HashMap<Key, VecDeque<(End, u64, bool)>> = HashMap::default();
    // Each rank's lists are freed as they are consumed, so that they and
    // what they become are not all held at once.
    for o in &mut outs {
        for (k, e, b, s) in std::mem::take(&mut o.sends) {
            queues.entry(k).or_default().push_back((e, b, s));
        }
        m.unmatched_recvs += o.unresolved;
    }
    // At most one message per receive: no doubling slack (a tenth of the
    // analysis' memory at millions of messages).
    m.messages
        .reserve_exact(outs.iter().map(|o| o.recvs.len()).sum());
    for o in &mut outs {
        for (k, recv, probe) in std::mem::take(&mut o.recvs) {
            match queues.get_mut(&k).and_then(VecDeque::pop_front) {
                Some((send, bytes, sync)) => m.messages.push(Message {
                    send,
                    recv,
                    bytes,
                    sync,
                    probe: probe.map(|p| p as u32),
                }),
                None => m.unmatched_recvs += 1,
            }
        }
    }
    m.unmatched_sends = queues.values().map(VecDeque::len).sum();
    drop(queues);
    let mut index: HashMap<(u32, u64, u64), usize> = HashMap::default();
    for o in &outs {
        for &(k, op, e) in &o.colls {
            let i = *index.entry(k).or_insert_with(|| {
                m.collectives.push(Collective {
                    op,
                    members: Vec::new(),
                });
                m.collectives.len() - 1
            });
            m.collectives[i].members.push(e);
        }
    }
    m
}

/// Which communicator a rank's communicator id stands for: communicators
/// that share an id (the colours of one `Comm_split`) get different groups
/// from their lineage (parent group, colour, split type, members), so that
/// only the members of one colour meet. Fed a rank's events in order, it
/// follows the communicators that rank creates. `MPI_COMM_WORLD` is group 0
/// on every rank; `MPI_COMM_SELF` is a group of its own per rank.
#[derive(Clone, Debug)]
pub struct Lineage {
    groups: HashMap<u32, u64>,
    /// The inter-communicators among them.
    inter: rustc_hash::FxHashSet<u32>,
}

impl Lineage {
    /// The lineage of world rank `me` before its first call.
    pub fn new(me: i32) -> Lineage {
        Lineage {
            groups: HashMap::from_iter([(0, 0), (1, u64::MAX - me as u64)]),
            inter: Default::default(),
        }
    }

    /// The group of communicator id `comm` on this rank now.
    pub fn group(&self, comm: u32) -> u64 {
        self.groups.get(&comm).copied().unwrap_or(u64::from(comm))
    }

    /// Follows `e`, the rank's next event: a call that creates a
    /// communicator gives the new one its group.
    pub fn observe(&mut self, e: &Event) {
        if let Some(new) = e.create.as_ref().and_then(|c| c.new) {
            let g = self.group(e.comm.0);
            let inter = e.op.makes_intercomm()
                || (self.inter.contains(&e.comm.0) && e.op != Op::IntercommMerge);
            self.groups.insert(new.0, group_of(g, e, new.0, inter));
            if inter {
                self.inter.insert(new.0);
            } else {
                self.inter.remove(&new.0);
            }
        }
    }
}

/// The group of a new communicator `new` made by `e` on a communicator of
/// group `parent`; `inter` when the new one is an inter-communicator,
/// whose sides name different (local) members.
fn group_of(parent: u64, e: &Event, new: u32, inter: bool) -> u64 {
    let mut h = DefaultHasher::new();
    match (e.op, &e.create) {
        // One communicator on both sides, whose parents differ: the pair
        // of groups (either order) and the tag; the merge's members.
        (op, Some(c)) if op.makes_intercomm() => {
            let (a, b) = (&c.sources, &c.members);
            ("inter", a.min(b), a.max(b), c.key).hash(&mut h);
        }
        (Op::IntercommMerge, Some(c)) => ("merge", &c.members).hash(&mut h),
        _ => parent.hash(&mut h),
    }
    new.hash(&mut h);
    if let Some(c) = &e.create {
        c.color.hash(&mut h);
        c.split_type.hash(&mut h);
        if !inter {
            // (Of an inter-communicator each side names its own group.)
            c.members.hash(&mut h);
        }
    }
    h.finish()
}

fn scan(ri: usize, me: i32, events: &Events) -> RankOut {
    let mut out = RankOut {
        sends: Vec::new(),
        recvs: Vec::new(),
        colls: Vec::new(),
        unresolved: 0,
    };
    let mut lineage = Lineage::new(me);
    let mut seqs: HashMap<u32, u64> = HashMap::default();
    let mut active: HashMap<ReqId, Pending> = HashMap::default();
    let mut persistent: HashMap<ReqId, Pending> = HashMap::default();
    // Mprobe'd messages by handle: channel and the probe.
    let mut messages: HashMap<u64, (u32, i32, i32, usize)> = HashMap::default();
    // Regular probes whose message was not received yet, by channel: the
    // first one synchronised with the send.
    let mut probed: HashMap<Key, usize> = HashMap::default();
    // Event indices fit in u32 (the run's own positions are u32).
    let end = |post: usize, done: usize| End {
        rank: ri as u32,
        post: post as u32,
        done: done as u32,
    };
    for (i, e) in events.iter().enumerate() {
        let comm = e.comm.0;
        let blocking_match = e.matched.iter().find(|m| m.req.is_none());
        let finish = |p: Pending,
                      done: usize,
                      e: &Event,
                      req: ReqId,
                      out: &mut RankOut,
                      probed: &mut HashMap<Key, usize>| match p.kind {
            Kind::Send {
                dst,
                tag,
                bytes,
                sync,
            } => out
                .sends
                .push(((p.comm, me, dst, tag), end(p.post, done), bytes, sync)),
            Kind::Recv { src, tag } => {
                let m = e.matched.iter().find(|m| m.req == Some(req));
                let src = src.or(m.map(|m| m.source));
                let tag = tag.or(m.map(|m| m.tag));
                match (src, tag) {
                    (Some(s), Some(t)) => {
                        let k = (p.comm, s, me, t);
                        let probe = p.probe.or_else(|| probed.remove(&k));
                        out.recvs.push((k, end(p.post, done), probe));
                    }
                    _ => out.unresolved += 1,
                }
            }
            Kind::Coll => {}
        };
        match e.op.family() {
            Family::BlockingP2p => {
                if let Some(s) = e.send
                    && let (Some(dst), Some(t)) = (s.peer.world(), s.tag.value())
                {
                    let sync = e.op == Op::Ssend;
                    out.sends
                        .push(((comm, me, dst, t), end(i, i), s.bytes().max(0) as u64, sync));
                }
                if let Some(r) = e.recv
                    && !matches!(r.peer, Peer::Null)
                {
                    let src = r.peer.world().or(blocking_match.map(|m| m.source));
                    let t = r.tag.value().or(blocking_match.map(|m| m.tag));
                    match (src, t) {
                        (Some(s), Some(t)) => {
                            let k = (comm, s, me, t);
                            let probe = probed.remove(&k);
                            out.recvs.push((k, end(i, i), probe));
                        }
                        _ => out.unresolved += 1,
                    }
                }
            }
            Family::NonblockingP2p | Family::Persistent | Family::Partitioned
                if e.op.is_persistent_init()
                    || matches!(
                        e.op,
                        Op::Isend | Op::Issend | Op::Ibsend | Op::Irsend | Op::Irecv
                    ) =>
            {
                let Some(req) = e.req else { continue };
                let kind = if e.op.is_send() {
                    match e
                        .send
                        .and_then(|s| Some((s.peer.world()?, s.tag.value()?, s.bytes())))
                    {
                        Some((dst, t, b)) => Kind::Send {
                            dst,
                            tag: t,
                            bytes: b.max(0) as u64,
                            sync: matches!(e.op, Op::Issend | Op::SsendInit),
                        },
                        None => continue,
                    }
                } else {
                    match e.recv {
                        Some(r) if !matches!(r.peer, Peer::Null) => Kind::Recv {
                            src: r.peer.world(),
                            tag: r.tag.value(),
                        },
                        _ => continue,
                    }
                };
                let p = Pending {
                    kind,
                    comm: e.op.channel_comm(comm),
                    post: i,
                    probe: None,
                };
                if e.op.is_persistent_init() {
                    persistent.insert(req, p);
                } else {
                    active.insert(req, p);
                }
            }
            Family::Persistent => match e.op {
                Op::Start | Op::Startall => {
                    for r in &e.reqs {
                        if let Some(p) = persistent.get(r) {
                            active.insert(*r, Pending { post: i, ..*p });
                        }
                    }
                }
                Op::RequestFree => {
                    for r in &e.reqs {
                        persistent.remove(r);
                        if let Some(p) = active.remove(r) {
                            finish(p, p.post, e, *r, &mut out, &mut probed);
                        }
                    }
                }
                _ => {}
            },
            Family::Completion => {
                for r in &e.done {
                    if let Some(p) = active.remove(r) {
                        if matches!(p.kind, Kind::Coll) {
                            if let Some(c) = out
                                .colls
                                .iter_mut()
                                .rev()
                                .find(|c| c.2.post as usize == p.post)
                            {
                                c.2.done = i as u32;
                            }
                        } else {
                            finish(p, i, e, *r, &mut out, &mut probed);
                        }
                    }
                }
            }
            Family::Probe => match e.op {
                Op::Mprobe | Op::Improbe => {
                    if let (Some(id), Some(m)) = (e.message, blocking_match) {
                        messages.insert(id, (comm, m.source, m.tag, i));
                    }
                }
                Op::Probe | Op::Iprobe if e.flag != Some(false) => {
                    if let Some(m) = blocking_match {
                        probed.entry((comm, m.source, me, m.tag)).or_insert(i);
                    }
                }
                Op::Mrecv | Op::Imrecv => {
                    let Some(&(c, s, t, probe)) = e.message.and_then(|id| messages.get(&id)) else {
                        out.unresolved += 1;
                        continue;
                    };
                    if e.op == Op::Mrecv {
                        out.recvs.push(((c, s, me, t), end(i, i), Some(probe)));
                    } else if let Some(req) = e.req {
                        active.insert(
                            req,
                            Pending {
                                kind: Kind::Recv {
                                    src: Some(s),
                                    tag: Some(t),
                                },
                                comm: c,
                                post: i,
                                probe: Some(probe),
                            },
                        );
                    }
                }
                _ => {}
            },
            // Collective over its group only, not over the parent: no
            // synchronisation the parent's members share.
            Family::CommManagement if e.op == Op::CommCreateGroup => lineage.observe(e),
            Family::Collective
            | Family::NonblockingCollective
            | Family::Neighborhood
            | Family::CommManagement => {
                let g = lineage.group(comm);
                let seq = seqs.entry(comm).or_default();
                out.colls.push(((comm, g, *seq), e.op, end(i, i)));
                *seq += 1;
                if let Some(req) = e.req {
                    active.insert(
                        req,
                        Pending {
                            kind: Kind::Coll,
                            comm,
                            post: i,
                            probe: None,
                        },
                    );
                }
                lineage.observe(e);
                if let Some(new) = e.create.as_ref().and_then(|c| c.new) {
                    seqs.remove(&new.0);
                }
            }
            _ => {}
        }
    }
    out
}
