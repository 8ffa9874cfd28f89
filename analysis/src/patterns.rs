//! Communication patterns (Alawneh and Hamou-Lhadj 2022 §4.1.1).
//!
//! Each rank's events are cut into contexts (see [`crate::run`]): the
//! repeats of one process. A message joins the context of its send with
//! the context of its receive, a request joins the context that posted it
//! with the one that completed it, and a collective joins the contexts of
//! all its members. The connected groups of contexts are the instances of
//! global communication patterns; two instances are of the same pattern
//! when every rank in them made the same calls with the same peers, which
//! is written per rank as an event string such as `iR1·iR3·Ss1·Ss3·Wa`.
//! Instances are put in temporal order (by start time with a timeline,
//! else by their position in the ranks' event sequences), which is the
//! sequence that phase detection segments.

use std::collections::HashMap;

use trace::{Event, Op, Peer};

use crate::matching::{End, Matching};
use crate::run::Run;
use rayon::prelude::*;

/// One instance of a communication pattern.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The pattern it is an instance of (index into [`Patterns::patterns`]).
    pub pattern: usize,
    /// Its contexts: (rank index, context index), sorted.
    pub contexts: Vec<(usize, u32)>,
    /// Its events: (rank index, event index), sorted.
    pub events: Vec<(usize, usize)>,
    /// Bytes moved: its messages' (counted once per message, whichever call
    /// carried them: a persistent send's `Start` too) and its collectives'
    /// send buffers.
    pub bytes: u64,
    /// Indices into [`Matching::messages`] of its messages.
    pub messages: Vec<usize>,
    /// Indices into [`Matching::collectives`] of its collectives.
    pub collectives: Vec<usize>,
    /// First enter and last leave over its events (with a timeline).
    pub span: Option<(i64, i64)>,
}

impl Instance {
    /// Ranks taking part (indices into [`Run::ranks`]), sorted.
    pub fn ranks(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.contexts.iter().map(|c| c.0).collect();
        v.dedup();
        v
    }
}

/// A communication pattern: what its instances have in common.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// Its symbol in the pattern sequence (`CP1`, `CP2`, ... by first
    /// appearance; the index is one less).
    pub id: usize,
    /// The per-rank event strings: (world rank, string), by rank.
    pub strings: Vec<(u32, String)>,
    /// Number of processes.
    pub np: usize,
    /// Number of events.
    pub ne: usize,
    /// Instances (indices into [`Patterns::instances`]), in temporal order.
    pub instances: Vec<usize>,
}

/// The patterns of a run and the sequence of their instances.
#[derive(Debug, Default)]
pub struct Patterns {
    /// The patterns, by first appearance.
    pub patterns: Vec<Pattern>,
    /// Every instance, in temporal order.
    pub instances: Vec<Instance>,
}

struct Dsu(Vec<u32>);

impl Dsu {
    fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let p = self.0[x as usize];
            self.0[x as usize] = self.0[p as usize];
            x = p;
        }
        x
    }
    fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            self.0[hi as usize] = lo;
        }
    }
}

/// A short token for an event in a per-rank string: the operation and,
/// for point-to-point calls, the peer's world rank (`*` for an unresolved
/// wildcard). Sends are `S`, receives `R`, with a prefix for the mode
/// (`i` nonblocking, `s` synchronous, `b` buffered, `r` ready); completion
/// calls are `W`, `Wa`, `Wy`, `Ws`, `T`, `Ta`, `Ty`, `Ts`; collectives and
/// communicator constructors are named in full.
pub fn token(e: &Event) -> String {
    let mut s = String::new();
    write_token(e, &mut s);
    s
}

/// [`token`] appended to `out` (pattern keying writes one per event, so
/// without a string of its own for each).
pub fn write_token(e: &Event, out: &mut String) {
    use std::fmt::Write as _;
    let peer = |out: &mut String, p: Option<trace::Transfer>| {
        let _ = match p.map(|t| t.peer) {
            Some(Peer::Rank { world, .. }) => write!(out, "{world}"),
            Some(Peer::Any) => match e.matched.first() {
                Some(m) => write!(out, "{}", m.source),
                None => write!(out, "*"),
            },
            Some(Peer::Null) => write!(out, "-"),
            None => Ok(()),
        };
    };
    let mut p2p = |prefix: &str, t: Option<trace::Transfer>| {
        out.push_str(prefix);
        peer(out, t);
    };
    match e.op {
        Op::Send => p2p("S", e.send),
        Op::Ssend => p2p("sS", e.send),
        Op::Bsend => p2p("bS", e.send),
        Op::Rsend => p2p("rS", e.send),
        Op::Isend => p2p("iS", e.send),
        Op::Issend => p2p("isS", e.send),
        Op::Ibsend => p2p("ibS", e.send),
        Op::Irsend => p2p("irS", e.send),
        Op::SendInit => p2p("pS", e.send),
        Op::SsendInit => p2p("psS", e.send),
        Op::BsendInit => p2p("pbS", e.send),
        Op::RsendInit => p2p("prS", e.send),
        Op::Recv => p2p("R", e.recv),
        Op::Irecv => p2p("iR", e.recv),
        Op::RecvInit => p2p("pR", e.recv),
        Op::Sendrecv | Op::SendrecvReplace => {
            p2p("SR", e.send);
            p2p("/", e.recv);
        }
        Op::Probe => p2p("P", e.recv),
        Op::Iprobe => p2p("iP", e.recv),
        Op::Mprobe => p2p("mP", e.recv),
        Op::Improbe => p2p("imP", e.recv),
        Op::Mrecv => out.push_str("mR"),
        Op::Imrecv => out.push_str("imR"),
        Op::Wait => out.push('W'),
        Op::Waitall => out.push_str("Wa"),
        Op::Waitany => out.push_str("Wy"),
        Op::Waitsome => out.push_str("Ws"),
        Op::Test => out.push('T'),
        Op::Testall => out.push_str("Ta"),
        Op::Testany => out.push_str("Ty"),
        Op::Testsome => out.push_str("Ts"),
        Op::Start => out.push_str("St"),
        Op::Startall => out.push_str("Sta"),
        op => out.push_str(op.name()),
    }
}

/// Polling calls repeat a varying number of times; a run of the same
/// polling token counts once (written `T+`), so that instances that polled
/// more or less often are still one pattern.
fn polls(op: Op) -> bool {
    matches!(
        op,
        Op::Test | Op::Testall | Op::Testany | Op::Testsome | Op::Iprobe | Op::Improbe
    )
}

/// Bytes a collective call hands to MPI to send.
fn sent(e: &Event) -> u64 {
    e.bytes_sent().max(0) as u64
}

/// The per-rank strings of an instance's events (sorted by rank and
/// event): each rank's tokens joined by `·`, a run of one polling token
/// written once with a `+`.
fn strings_of(run: &Run, events: &[(usize, usize)]) -> Vec<(u32, String)> {
    let mut strings: Vec<(u32, String)> = Vec::new();
    let mut last_poll: Option<(usize, String)> = None;
    let mut t = String::new();
    for &(ri, ei) in events {
        let e = &run.ranks[ri].events[ei];
        let rank = run.ranks[ri].rank;
        if strings.last().map(|s| s.0) != Some(rank) {
            strings.push((rank, String::new()));
            last_poll = None;
        }
        t.clear();
        write_token(e, &mut t);
        if polls(e.op) {
            if last_poll.as_ref().is_some_and(|(r, p)| *r == ri && *p == t) {
                continue;
            }
            last_poll = Some((ri, t.clone()));
        } else {
            last_poll = None;
        }
        let s = &mut strings.last_mut().expect("pushed above").1;
        if !s.is_empty() {
            s.push('·');
        }
        s.push_str(&t);
        if polls(e.op) {
            s.push('+');
        }
    }
    strings
}

impl Patterns {
    /// Sets every instance's span from `run`'s times again: after the
    /// clock correction, for patterns found on the recorded times (so that
    /// their ids and order do not depend on the correction).
    pub fn respan(&mut self, run: &Run) {
        if !run.timed {
            return;
        }
        self.instances.par_iter_mut().for_each(|i| {
            i.span = i
                .events
                .iter()
                .map(|&(r, e)| run.ranks[r].spans[e])
                .reduce(|(a, b), (x, y)| (a.min(x), b.max(y)));
        });
    }
}

/// How an instance's per-rank events make its pattern's key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PatternKey {
    /// Each rank's events in the order it called them: `R1·S1` and
    /// `S1·R1` are two patterns (a rank that receives before it sends
    /// waits differently from one that sends first). The default.
    #[default]
    Ordered,
    /// Each rank's events as a set (sorted): Alawneh and Hamou-Lhadj's
    /// key, under which their published results count patterns.
    Unordered,
}

/// Finds the patterns of `run` from its `matching`, each rank's events
/// in call order ([`PatternKey::Ordered`]).
pub fn find(run: &Run, matching: &Matching) -> Patterns {
    find_keyed(run, matching, PatternKey::Ordered)
}

/// Finds the patterns of `run` from its `matching`, keyed by `key`.
pub fn find_keyed(run: &Run, matching: &Matching, key: PatternKey) -> Patterns {
    // Global context numbering.
    let mut base = Vec::with_capacity(run.ranks.len());
    let mut n = 0u32;
    for r in &run.ranks {
        base.push(n);
        n += r.contexts.len() as u32;
    }
    let ctx = |end_rank: u32, ev: u32| {
        let r = end_rank as usize;
        base[r] + run.ranks[r].context[ev as usize]
    };
    let mut dsu = Dsu((0..n).collect());
    let join_end = |dsu: &mut Dsu, e: &End| dsu.union(ctx(e.rank, e.post), ctx(e.rank, e.done));
    for m in &matching.messages {
        join_end(&mut dsu, &m.send);
        join_end(&mut dsu, &m.recv);
        dsu.union(ctx(m.send.rank, m.send.post), ctx(m.recv.rank, m.recv.post));
    }
    for c in &matching.collectives {
        if let Some(first) = c.members.first() {
            for e in &c.members {
                join_end(&mut dsu, e);
                dsu.union(ctx(first.rank, first.post), ctx(e.rank, e.post));
            }
        }
    }
    // Instances: one per component, keyed by its root.
    // Looked up once per event: the fast hasher (the map is never iterated).
    let mut of_root: rustc_hash::FxHashMap<u32, usize> = Default::default();
    let mut inst: Vec<Instance> = Vec::new();
    let mut order: Vec<(i64, usize)> = Vec::new();
    for (ri, r) in run.ranks.iter().enumerate() {
        for (ei, e) in r.events.iter().enumerate() {
            let c = r.context[ei];
            let root = dsu.find(base[ri] + c);
            let k = *of_root.entry(root).or_insert_with(|| {
                inst.push(Instance {
                    pattern: 0,
                    contexts: Vec::new(),
                    events: Vec::new(),
                    bytes: 0,
                    messages: Vec::new(),
                    collectives: Vec::new(),
                    span: None,
                });
                order.push((i64::MAX, inst.len() - 1));
                inst.len() - 1
            });
            let i = &mut inst[k];
            if i.contexts.last() != Some(&(ri, c)) {
                i.contexts.push((ri, c));
            }
            i.events.push((ri, ei));
            if e.op.is_collective() {
                i.bytes += sent(e);
            }
            let key = if run.timed {
                r.spans[ei].0
            } else {
                // Without times: the position in the rank's sequence,
                // scaled so that ranks of different lengths interleave.
                ((ei as f64 / r.events.len().max(1) as f64) * 1e15) as i64
            };
            order[k].0 = order[k].0.min(key);
            if run.timed {
                let (a, b) = r.spans[ei];
                i.span = Some(i.span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
        }
    }
    let root_of = |dsu: &mut Dsu, e: &End| dsu.find(ctx(e.rank, e.post));
    for (mi, m) in matching.messages.iter().enumerate() {
        let k = of_root[&root_of(&mut dsu, &m.send)];
        inst[k].messages.push(mi);
        inst[k].bytes += m.bytes;
    }
    for (ci, c) in matching.collectives.iter().enumerate() {
        if let Some(first) = c.members.first() {
            let k = of_root[&root_of(&mut dsu, first)];
            inst[k].collectives.push(ci);
        }
    }
    // Temporal order.
    order.sort();
    let mut slots: Vec<Option<Instance>> = inst.into_iter().map(Some).collect();
    let mut instances: Vec<Instance> = order.iter().filter_map(|&(_, k)| slots[k].take()).collect();
    // Each instance's per-rank strings, on all cores (instances are
    // independent), then the patterns by those strings in temporal order.
    let keys: Vec<Vec<(u32, String)>> = instances
        .par_iter_mut()
        .map(|i| {
            i.contexts.sort_unstable();
            i.events.sort_unstable();
            let mut strings = strings_of(run, &i.events);
            if key == PatternKey::Unordered {
                for (_, s) in &mut strings {
                    let mut tokens: Vec<&str> = s.split('·').collect();
                    tokens.sort_unstable();
                    *s = tokens.join("·");
                }
            }
            strings
        })
        .collect();
    let mut by_key: HashMap<Vec<(u32, String)>, usize> = HashMap::new();
    let mut patterns: Vec<Pattern> = Vec::new();
    for (ii, (i, strings)) in instances.iter_mut().zip(keys).enumerate() {
        let p = match by_key.get(&strings) {
            Some(&p) => p,
            None => {
                let p = patterns.len();
                patterns.push(Pattern {
                    id: p,
                    np: strings.len(),
                    ne: i.events.len(),
                    strings: strings.clone(),
                    instances: Vec::new(),
                });
                by_key.insert(strings, p);
                p
            }
        };
        // The event count of a pattern is that of its first instance (a
        // polling run may differ in length between instances).
        patterns[p].instances.push(ii);
        i.pattern = p;
    }
    Patterns {
        patterns,
        instances,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Datatype, Matched, Tag, Transfer};

    fn xfer(peer: Peer) -> Option<Transfer> {
        Some(Transfer {
            peer,
            tag: Tag::Value(1),
            count: 1,
            dsize: 8,
            dtype: Datatype::UNKNOWN,
        })
    }

    /// The tokens of the forms the module documentation names, as the
    /// pattern strings write them.
    #[test]
    fn tokens_name_calls_and_their_peers() {
        let rank = |world| Peer::Rank {
            local: world,
            world,
        };
        let mut send = Event::new(Op::Send);
        send.send = xfer(rank(3));
        assert_eq!(token(&send), "S3");
        let mut any = Event::new(Op::Irecv);
        any.recv = xfer(Peer::Any);
        assert_eq!(token(&any), "iR*");
        any.matched.push(Matched {
            req: None,
            source: 5,
            tag: 1,
        });
        assert_eq!(token(&any), "iR5");
        let mut sr = Event::new(Op::Sendrecv);
        sr.send = xfer(rank(1));
        sr.recv = xfer(Peer::Null);
        assert_eq!(token(&sr), "SR1/-");
        assert_eq!(token(&Event::new(Op::Wait)), "W");
        assert_eq!(token(&Event::new(Op::Testsome)), "Ts");
        assert_eq!(token(&Event::new(Op::Allreduce)), "Allreduce");
        // Appending writes after what is there.
        let mut out = String::from("x·");
        write_token(&send, &mut out);
        assert_eq!(out, "x·S3");
    }
}
