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
//! colours of one `Comm_split`, the sub-grids of one `Cart_sub`) are told
//! apart by the communicator's lineage.
//!
//! The rules themselves live in the `semantics` crate, shared with the
//! consistency check and the exports: [`semantics::walk`] puts each rank's
//! sends and receives on their channels in post order,
//! [`semantics::channel`] matches them, [`semantics::comms`] names the
//! communicators.

// Lookups only, never iterated: the fast hasher leaves every result as it
// is (millions of messages went through SipHash).
use rustc_hash::FxHashMap as HashMap;

use rayon::prelude::*;
use semantics::channel::{Channel, Channels, Read};
use semantics::comms::Comms;
use semantics::walk::{Step, Walker};
use trace::{Family, Op, ReqId};

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

struct RankOut {
    sends: Vec<(Channel, End, u64, bool)>,
    recvs: Vec<(Channel, End, Option<u32>)>,
    /// (communicator instance, position on it), operation, member.
    colls: Vec<((u64, u64), Op, End)>,
    unresolved: usize,
}

/// Matches the messages and collectives of `run`.
pub fn match_run(run: &Run) -> Matching {
    let world = run
        .ranks
        .iter()
        .map(|r| i64::from(r.rank) + 1)
        .max()
        .unwrap_or(0);
    let mut outs: Vec<RankOut> = run
        .ranks
        .par_iter()
        .enumerate()
        .map(|(ri, r)| scan(ri, r.rank, world, &r.events))
        .collect();
    let mut m = Matching::default();
    let mut chans: Channels<Channel, (End, u64, bool), ()> = Channels::default();
    // Each rank's lists are freed as they are consumed, so that they and
    // what they become are not all held at once.
    for o in &mut outs {
        for (k, e, b, s) in std::mem::take(&mut o.sends) {
            chans.send(k, (e, b, s));
        }
        m.unmatched_recvs += o.unresolved;
    }
    // At most one message per receive: no doubling slack (a tenth of the
    // analysis' memory at millions of messages).
    m.messages
        .reserve_exact(outs.iter().map(|o| o.recvs.len()).sum());
    for o in &mut outs {
        for (k, recv, probe) in std::mem::take(&mut o.recvs) {
            match chans.recv(k, ()) {
                Read::Now(_, (send, bytes, sync), ()) => m.messages.push(Message {
                    send,
                    recv,
                    bytes,
                    sync,
                    probe,
                }),
                Read::Waits(_) => m.unmatched_recvs += 1,
            }
        }
    }
    m.unmatched_sends = chans.unread();
    drop(chans);
    let mut index: HashMap<(u64, u64), usize> = HashMap::default();
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

/// One rank's sends, receives (in the order MPI matches them, see
/// [`semantics::walk`]) and collective calls.
fn scan(ri: usize, me: u32, world: i64, events: &Events) -> RankOut {
    let mut out = RankOut {
        sends: Vec::new(),
        recvs: Vec::new(),
        colls: Vec::new(),
        unresolved: 0,
    };
    let mut comms = Comms::new(me, world);
    let mut walk = Walker::new(me, world);
    let mut steps: Vec<Step> = Vec::new();
    // Nonblocking collectives not completed yet: their index in `colls`.
    let mut active: HashMap<ReqId, usize> = HashMap::default();
    // Event indices fit in u32 (the run's own positions are u32).
    let end = |post: u64, done: u64| End {
        rank: ri as u32,
        post: post as u32,
        done: done as u32,
    };
    let take = |steps: &mut Vec<Step>, out: &mut RankOut| {
        for s in steps.drain(..) {
            match s {
                Step::Send(x) => {
                    let sync = x.sync;
                    out.sends
                        .push((x.chan, end(x.post, x.post), x.bytes.max(0) as u64, sync));
                }
                Step::SendDone { id, done } => {
                    if let Some(s) = out.sends.get_mut(id as usize) {
                        s.1.done = done as u32;
                    }
                }
                Step::Recv(x) => {
                    out.recvs
                        .push((x.chan, end(x.post, x.done), x.probe.map(|p| p as u32)))
                }
                Step::UnresolvedWildcard { .. }
                | Step::UnknownMessage { .. }
                | Step::Unknown { .. } => out.unresolved += 1,
            }
        }
    };
    for (i, e) in events.iter().enumerate() {
        let i = i as u64;
        let view = comms.view(e.comm.0);
        walk.event(i, e, e.op.has_comm().then_some(view), &mut |s| {
            steps.push(s)
        });
        take(&mut steps, &mut out);
        if e.op.family() == Family::Completion {
            for r in &e.done {
                if let Some(c) = active.remove(r) {
                    out.colls[c].2.done = i as u32;
                }
            }
        }
        let seq = comms.observe(e);
        // Persistent collectives meet at their starts, which the trace
        // does not tie to the init: not taken as synchronising.
        if let Some(seq) = seq
            && e.op.family() != Family::PersistentCollective
        {
            out.colls.push(((view.inst, seq), e.op, end(i, i)));
            if let Some(req) = e.req {
                active.insert(req, out.colls.len() - 1);
            }
        }
    }
    walk.finish(&mut |s| steps.push(s));
    take(&mut steps, &mut out);
    out
}
