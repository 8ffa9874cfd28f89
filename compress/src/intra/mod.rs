//! Intra-node compression, on the fly: each rank folds its event queue into
//! RSDs and PRSDs as the calls happen (Wu and Mueller 2012 §2, "SCALATRACE performs
//! intra-node compression, which captures the loop structure on-the-fly").
//!
//! # Algorithm
//!
//! The queue holds top-level nodes ([`Node`]). Every node has a *structural
//! hash* (its shape's hash for an event; a hash of its body for a loop, where
//! a one-node loop hashes like its node). After each new event is appended,
//! the tail is reduced by two rules, repeated until neither applies:
//!
//! * **(a) extend**: the last `m` items are one more iteration of a loop `T`
//!   whose body has `m` items, where `T` is a top-level loop at position
//!   `n - m` or any loop on its *open path* (its body's last node, if that is
//!   a loop, and so on down). The items are merged into `T`'s body and `T`'s
//!   current iteration count grows by one. Extending a loop on the open path
//!   is what lets an inner loop whose outer loop has already been folded keep
//!   growing (inner counts 3, 3, 4, 3: the fourth iteration of the third
//!   execution extends the inner loop inside the outer one).
//! * **(b) fold**: the last `k` items equal the `k` items before them →
//!   `Loop(first half, 2)`, the second half merged into the first.
//!
//! Repeated application gives nested loops (PRSDs) of any depth: the body of
//! a loop can hold loops, and after (b) the new loop is itself an item that
//! (a) and (b) see. Equality is structural ([`Node::same_structure`]):
//! parameters and iteration counts never break a loop.
//!
//! # Why it is amortised O(1) per event (PRIOR-ART.md: ScalaTrace scans back
//! a window of 5,000 events per event)
//!
//! * *Candidates come from indexes, not scans.* For (b), every top-level
//!   item links to the previous item with the same structural hash
//!   (`last_seen` gives the newest one), so the candidate starts `j` with
//!   `queue[j] ≅ queue[n]` are found by following links; for (a), every
//!   top-level loop registers each loop `T` of its open path under the hash of
//!   `T`'s last body node, with `T`'s body length (`heads`). "Index candidate
//!   loop heads by signature", as the issue asks.
//! * *Each candidate is checked in O(1)* by comparing polynomial hashes of
//!   the two blocks, computed from prefix hashes of the queue; a full
//!   structural comparison runs only when the hashes agree, which (up to
//!   64-bit hash collisions) means the fold succeeds.
//! * *Each reduction step looks at most `max_candidates` candidates per rule*
//!   ([`Config::max_candidates`], default 16). A step that folds removes at
//!   least one item, so the steps after an append are at most one more than
//!   the items removed; every item is appended once, hence removed at most
//!   once, so the number of steps, and of candidate checks, is O(1) amortised.
//! * *Merging is paid by the merged items*: the structural comparison and the
//!   merge of a folded item cost its size, and the item is consumed. Its
//!   parameter sequences are appended block by block
//!   ([`ValueSeq::append`]), and a value moves only when its node is merged
//!   into a node one level deeper, so at most (nesting depth) times.
//!
//! The price of bounding the candidates is that a loop whose body's last item
//! occurs more than `max_candidates` times at the top level of one iteration
//! is not found (it stays unrolled: lossless, just larger).
//!
//! # Speculative iterations
//!
//! The rules above rebuild every iteration of a loop before they merge it:
//! each event becomes a leaf, each inner loop is folded again from its first
//! two iterations, and the iteration is merged into the loop node by node,
//! timing and reservoirs included. Where inner loops run a few times per
//! entry (NPB CG's exchange steps run once or twice), that costs about a
//! microsecond per event. So once a loop is the last item and an event
//! begins its next iteration, the events are taken as that iteration while
//! they follow its body (module `spec`), and applied to the loop in place when
//! the iteration is complete; an event that does not fit hands them back to
//! the rules, which then do exactly what they would have done. A
//! speculation starts only where no other rule could take the event (an
//! enclosing loop not yet folded, a twin of the loop before it). The loop
//! extended is the one of the last item's open path (the item, the loop
//! ending its body, and so on down) whose iteration the event begins, if
//! exactly one's does: a long inner loop in the newest iteration of an
//! outer loop grows in place as well. So on
//! loop-structured streams it builds the same trace as the rules alone (a
//! property test compares the two). On NPB CG's events (class S, 16 ranks,
//! one rank's 8,837 events) compression drops from 1.16 to 0.46 µs per
//! event, and the stencil's from 1.1 to 0.33 µs.
//!
//! # What does not fold (lossless, but larger)
//!
//! Greedy on-line folding cannot see the future, so some loop-structured
//! streams compress less than they could:
//!
//! * an inner loop whose body has several calls and that runs **once** in
//!   some outer iteration appears there as its plain body, which does not
//!   match the loop node of the other iterations (a one-call inner loop is
//!   fine: a one-node loop matches its node); an inner loop that runs
//!   **zero** times changes the outer body's structure. ScalaTrace has the
//!   same limits. In an exploration over random loop nests whose inner
//!   counts were sometimes 1 (or 0), 29 of 400 (54 of 399) programs had more
//!   nodes after 40 repetitions than after 20; with counts of at least 2,
//!   none did;
//! * when a call appears both inside an inner loop and right after it, the
//!   first folds may cut the stream at the wrong phase; the structure then
//!   settles after a few periods of the stream (bounded, but not as small
//!   as the source's loop nest). The property test
//!   `size_does_not_grow_with_repetitions_of_loop_structured_programs` checks
//!   boundedness on random nests with varying (>= 2) inner counts.
//!
//! Events that are spilled keep their parameters but not their timing.
//!
//! # Bounded memory
//!
//! For a loop-structured code, every iteration after the second is merged by
//! (a), so the queue stays at the size of the loop structure, and the
//! parameter sequences stay constant-size when the parameters are constant,
//! strided, periodic or periodic with drift ([`trace::seq`]). For input that
//! does not repeat, the queue is capped ([`Config::queue_limit`]): when it
//! overflows, the oldest half is *spilled*: expanded and written either to a
//! caller-supplied writer as canonical raw text lines (memory stays bounded),
//! or, by default, to an in-memory buffer in a compact binary form (about 25
//! to 35 bytes per event instead of a few hundred for a node). Spilled items can no
//! longer be folded with later ones: a loop whose body is longer than half
//! the cap is not found.
//!
//! # Timing
//!
//! Every event's computation and MPI time go into its leaf's
//! [`trace::timing::PathTiming`], split by first iteration / steady state /
//! last iteration of its innermost loop (Wu and Mueller 2012 §2 "path sequence ...
//! within entry/exit paths of a loop").

#![warn(missing_docs)]

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;

use trace::Error;
use trace::codec::{self, mix64};
use trace::event::{Event, EventSink};
use trace::seq::ValueSeq;
use trace::tree::{self, Expand, Leaf, Loop, Node, Single, Trace, TraceStats};

mod spec;

/// Base of the polynomial block hash (odd, so that multiplication by it is a
/// bijection on u64).
const B: u64 = 0x9e37_79b9_7f4a_7c15;
const NONE: u64 = u64::MAX;
const LOOP_SALT: u64 = 0x6c6f_6f70_5f72_7364;

/// Settings of the intra-node compressor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Most top-level nodes kept before the oldest half is spilled. Bounds
    /// memory for input that does not repeat; a loop whose body has more than
    /// half this many top-level items is not detected. Default 8,192 (at
    /// least 4 is used).
    pub queue_limit: usize,
    /// Candidates checked per rule and reduction step (see the module docs).
    /// Default 16 (at least 1 is used).
    pub max_candidates: usize,
    /// K of the slow-instance reservoir: how many of its slowest executions
    /// (by time inside MPI) each event keeps over all its ranks, with rank
    /// and position, for instance-level analysis without a timeline.
    /// Default 8; 0 keeps none; at most 65,535.
    pub slow_instances: usize,
    /// Take the events after a loop as its next iteration while they follow
    /// its body, applying them in place instead of rebuilding the iteration
    /// (see "Speculative iterations" in the module docs). Default on; off
    /// only to compare against.
    pub speculate: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            queue_limit: 8192,
            max_candidates: 16,
            slow_instances: 8,
            speculate: true,
        }
    }
}

/// A `Hasher` for keys that are already well-mixed 64-bit hashes.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

type IdMap = HashMap<u64, u64, BuildHasherDefault<IdHasher>>;

/// A top-level queue item.
struct Item {
    node: Node,
    /// Absolute position of the previous top-level item with the same
    /// structural hash, or `NONE`.
    prev_same: u64,
}

/// A loop of some top-level item's open path, registered for rule (a).
#[derive(Clone, Copy)]
struct Reg {
    /// Structural hash of the loop's last body node.
    key: u64,
    /// Absolute position of the top-level item.
    pos: u64,
    /// Body length of the loop.
    m: u64,
    /// Depth of the loop on the open path (0 = the top-level item itself).
    depth: u32,
    /// Polynomial hash of the loop's body.
    poly: u64,
    /// Previous registration id with the same key, or `NONE`.
    prev: u64,
}

enum Spill {
    Memory {
        buf: Vec<u8>,
        events: u64,
    },
    Writer {
        out: Box<dyn Write + Send>,
        events: u64,
    },
}

/// The on-the-fly RSD/PRSD compressor of one rank (see the module docs).
///
/// Push events in call order with [`Compressor::push`] (or through
/// [`EventSink`]), then take the [`Trace`] with [`Compressor::into_trace`].
/// Amortised O(1) per event; memory bounded by the loop structure for
/// loop-structured codes and by [`Config::queue_limit`] otherwise.
pub struct Compressor {
    rank: i32,
    cfg: Config,
    queue: VecDeque<Item>,
    /// Absolute position of `queue[0]`.
    base: u64,
    /// Prefix hashes: `prefix[i]` covers the items before `base + i`.
    prefix: VecDeque<u64>,
    pow: Vec<u64>,
    last_seen: IdMap,
    regs: VecDeque<Reg>,
    reg_base: u64,
    heads: IdMap,
    spill: Spill,
    lost: u64,
    /// Boxes of events merged into loops, reused for the next events so that
    /// the steady state of a loop allocates nothing per event. (Boxes, not
    /// values: they are the boxes of `Node::Single`.)
    #[allow(clippy::vec_box)]
    pool: Vec<Box<Single>>,
    /// Events pushed so far (the next event's position in the rank's
    /// sequence).
    pushed: u64,
    /// The rank and reservoir size as every event's reservoir entry needs
    /// them (converted once, not per event).
    world: u32,
    keep: u16,
    /// The speculative next iteration of the last item, a loop, if one is
    /// under way.
    spec: Option<spec::Spec>,
}

/// Most recycled event boxes kept.
const POOL: usize = 64;

impl Compressor {
    /// A compressor for world rank `rank` that spills overflow to memory in a
    /// compact binary form (so the [`Trace`] is complete, and memory for
    /// non-repeating input grows by about 25 to 35 bytes per event).
    pub fn new(rank: i32, config: Config) -> Compressor {
        Compressor::with_spill(
            rank,
            config,
            Spill::Memory {
                buf: Vec::new(),
                events: 0,
            },
        )
    }

    /// A compressor that writes overflow to `out` as canonical raw text
    /// lines ([`trace::raw`]), so memory stays bounded whatever the input.
    /// The full event sequence is then the lines written to `out` followed by
    /// [`Trace::expand`].
    pub fn with_spill_writer(rank: i32, config: Config, out: Box<dyn Write + Send>) -> Compressor {
        Compressor::with_spill(rank, config, Spill::Writer { out, events: 0 })
    }

    fn with_spill(rank: i32, mut cfg: Config, spill: Spill) -> Compressor {
        cfg.queue_limit = cfg.queue_limit.max(4);
        cfg.max_candidates = cfg.max_candidates.max(1);
        let keep = u16::try_from(cfg.slow_instances).unwrap_or(u16::MAX);
        let mut prefix = VecDeque::new();
        prefix.push_back(0);
        Compressor {
            rank,
            cfg,
            queue: VecDeque::new(),
            base: 0,
            prefix,
            pow: vec![1],
            last_seen: IdMap::default(),
            regs: VecDeque::new(),
            reg_base: 0,
            heads: IdMap::default(),
            spill,
            lost: 0,
            pool: Vec::new(),
            pushed: 0,
            world: u32::try_from(rank).unwrap_or(0),
            keep,
            spec: None,
        }
    }

    /// Appends one event and folds the tail. Fails only if spilling to the
    /// caller's writer fails; the spilled events are then counted as lost
    /// ([`TraceStats::lost`]) and compression goes on.
    pub fn push(&mut self, ev: &Event) -> Result<(), Error> {
        let mut single = self.pool.pop().unwrap_or_else(|| {
            Box::new(Single {
                shape: codec::Shape::default(),
                hash: 0,
                params: Vec::new(),
                compute_ns: 0,
                mpi_ns: 0,
                rank: 0,
                pos: 0,
                keep: 0,
            })
        });
        single.shape = codec::encode(ev, self.rank, &mut single.params);
        single.hash = single.shape.hash64();
        single.compute_ns = ev.time.compute_ns;
        single.mpi_ns = ev.time.dur_ns;
        single.rank = self.world;
        single.pos = self.pushed;
        single.keep = self.keep;
        self.pushed += 1;
        if self.cfg.speculate {
            if let Some(sp) = &mut self.spec {
                if let Some(Item {
                    node: Node::Loop(t),
                    ..
                }) = self.queue.back_mut()
                    && let Some(t) = spec::open_loop(t, sp.depth())
                    && sp.step(t, &single)
                {
                    self.recycle(single);
                    return Ok(());
                }
                // The event is folded in even when handing back fails.
                let given_back = self.give_up_speculation();
                return self.speculate_or_fold_in(single).and(given_back);
            }
            return self.speculate_or_fold_in(single);
        }
        self.fold_in(single)
    }

    /// Appends one event to the queue and applies the folding rules.
    fn fold_in(&mut self, single: Box<Single>) -> Result<(), Error> {
        self.append(Node::Single(single));
        self.reduce_and_bound()
    }

    fn reduce_and_bound(&mut self) -> Result<(), Error> {
        self.reduce();
        if self.queue.len() > self.cfg.queue_limit {
            self.spill_front()?;
        }
        Ok(())
    }

    /// Starts a speculative iteration of the last item with `single` if the
    /// last item is a loop whose next iteration `single` begins, and no rule
    /// applies to `single` right away (extending a loop that encloses the
    /// last one, say: that is what the folding rules do, so they do it);
    /// else folds `single` in.
    fn speculate_or_fold_in(&mut self, single: Box<Single>) -> Result<(), Error> {
        if !matches!(self.queue.back().map(|i| &i.node), Some(Node::Loop(_))) {
            return self.fold_in(single);
        }
        self.append(Node::Single(single));
        if self.reduce_once() {
            return self.reduce_and_bound();
        }
        let Some(Node::Single(single)) = self.pop() else {
            debug_assert!(false, "the event just appended is not the last item");
            return Ok(());
        };
        if !self.another_loop_may_take(&single)
            && let Some(Item {
                node: Node::Loop(t),
                ..
            }) = self.queue.back_mut()
            && let Some(depth) = spec::open_depth(t, &single)
            && let Some(t) = spec::open_loop(t, depth)
            && let Some(sp) = spec::Spec::start(t, &single, depth)
        {
            self.spec = Some(sp);
            self.recycle(single);
            return Ok(());
        }
        // Nothing to reduce: the event stays a top-level item.
        self.append(Node::Single(single));
        self.reduce_and_bound()
    }

    /// Whether the events that begin with `s` after the last item, a loop
    /// `T`, may be taken by a rule other than one more iteration of `T`, so
    /// that a speculation could build another trace than the folding rules:
    /// a registered loop whose body holds `T` followed by a node that
    /// begins with `s` (the loop that encloses `T`, before its second
    /// iteration is complete), or an earlier top-level twin of `T` followed
    /// by such a node (rule (b) would fold the two). Scans a bounded number
    /// of candidates and says yes when it could not see them all.
    fn another_loop_may_take(&self, s: &Single) -> bool {
        let t = self.last_pos();
        let last = &self.item(t).node;
        let key = (s.hash, s.shape);
        let bound = self.cfg.max_candidates.saturating_mul(4);
        let mut seen = 0;
        for r in self.regs.iter().rev().filter(|r| r.pos < t) {
            seen += 1;
            if seen > bound {
                return true;
            }
            let Some(j) = (t - r.pos - 1)
                .try_into()
                .ok()
                .filter(|&j: &usize| (j as u64) < r.m)
            else {
                continue;
            };
            if let Some(l) = self.open_loop(r)
                && l.body.get(j + 1).and_then(spec::first_leaf) == Some(key)
                && l.body.get(j).is_some_and(|n| n.same_structure(last))
            {
                return true;
            }
        }
        let mut j = self.item(t).prev_same;
        for _ in 0..self.cfg.max_candidates {
            if j == NONE || j < self.base {
                return false;
            }
            if j + 1 < t
                && spec::first_leaf(&self.item(j + 1).node) == Some(key)
                && self.item(j).node.same_structure(last)
            {
                return true;
            }
            j = self.item(j).prev_same;
        }
        j != NONE && j >= self.base
    }

    /// Ends the speculation: its buffered events go through the folding
    /// rules, as if it had never been. Every event is folded in even when
    /// spilling fails (the first failure is returned; spilled events that
    /// could not be written are counted as lost).
    fn give_up_speculation(&mut self) -> Result<(), Error> {
        let mut result = Ok(());
        if let Some(sp) = self.spec.take() {
            for s in sp.into_singles() {
                let done = self.fold_in(Box::new(s));
                if result.is_ok() {
                    result = done;
                }
            }
        }
        result
    }

    /// Keeps an event box whose contents were taken, for the next event.
    fn recycle(&mut self, single: Box<Single>) {
        if self.pool.len() < POOL {
            self.pool.push(single);
        }
    }

    /// Sizes of the queue now (the same numbers a [`Trace`] reports). Walks
    /// the whole queue: for tests and diagnostics, not for every event.
    pub fn stats(&self) -> TraceStats {
        let mut s = TraceStats::default();
        for it in &self.queue {
            let one = tree::stats_of(std::slice::from_ref(&it.node));
            s.nodes += one.nodes;
            s.leaves += one.leaves;
            s.loops += one.loops;
            s.max_depth = s.max_depth.max(one.max_depth);
            s.events = s.events.saturating_add(one.events);
            s.heap_bytes += one.heap_bytes;
        }
        s.top_level = self.queue.len();
        let (spilled, mem) = match &self.spill {
            Spill::Memory { buf, events } => (*events, buf.capacity()),
            Spill::Writer { events, .. } => (*events, 0),
        };
        s.spilled = spilled;
        s.lost = self.lost;
        s.heap_bytes += mem
            + self.queue.capacity() * std::mem::size_of::<Item>()
            + self.regs.capacity() * std::mem::size_of::<Reg>()
            + (self.last_seen.capacity() + self.heads.capacity()) * 16
            + self.pow.capacity() * 8
            + self.prefix.capacity() * 8;
        if let Spill::Memory { events, .. } = &self.spill {
            s.events = s.events.saturating_add(*events);
        }
        if let Some(sp) = &self.spec {
            s.events = s.events.saturating_add(sp.buffered());
            s.heap_bytes += sp.heap_bytes();
        }
        s
    }

    /// The outline of the queue now (see [`Node`]'s `Display`).
    pub fn outline(&self) -> String {
        let mut s = String::new();
        for (i, it) in self.queue.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&it.node.to_string());
        }
        s
    }

    /// Ends the run: flushes the spill writer, settles path timing and
    /// returns the trace.
    pub fn into_trace(mut self) -> Result<Trace, Error> {
        let given_back = self.give_up_speculation();
        let flushed = match &mut self.spill {
            Spill::Writer { out, .. } => out.flush().map_err(Error::Spill),
            Spill::Memory { .. } => Ok(()),
        };
        let nodes: Vec<Node> = self.queue.drain(..).map(|it| it.node).collect();
        let spill = match std::mem::replace(
            &mut self.spill,
            Spill::Memory {
                buf: Vec::new(),
                events: 0,
            },
        ) {
            Spill::Memory { buf, events } => (buf, events, 0),
            Spill::Writer { events, .. } => (Vec::new(), 0, events),
        };
        given_back?;
        flushed?;
        Ok(self.assemble(nodes, spill))
    }

    /// The trace of every event pushed so far, leaving the compressor as it
    /// is: what a rank writes periodically so that a job that dies keeps
    /// its trace up to then. Costs a copy of the compressed state (the
    /// queue, and the spill buffer when spilling to memory); events spilled
    /// to a writer are in the writer, as with [`Compressor::into_trace`].
    /// Events of a speculative iteration under way are included as they
    /// are, unfolded: the snapshot is exact, not the most compact.
    pub fn snapshot(&self) -> Trace {
        let mut nodes: Vec<Node> = self.queue.iter().map(|it| it.node.clone()).collect();
        if let Some(sp) = &self.spec {
            nodes.extend(sp.singles().map(|s| Node::Single(Box::new(s))));
        }
        let spill = match &self.spill {
            Spill::Memory { buf, events } => (buf.clone(), *events, 0),
            Spill::Writer { events, .. } => (Vec::new(), 0, *events),
        };
        self.assemble(nodes, spill)
    }

    /// A trace of `nodes`, settled and numbered here, with this
    /// compressor's rank and losses and the spill `(in-memory bytes, their
    /// events, events written out)`.
    fn assemble(&self, mut nodes: Vec<Node>, spill: (Vec<u8>, u64, u64)) -> Trace {
        tree::settle(&mut nodes);
        let (leaf_ids, loop_ids) = tree::number(&mut nodes);
        let (spill_mem, spilled_mem, spilled_out) = spill;
        Trace {
            rank: self.rank,
            nodes,
            leaf_ids,
            loop_ids,
            spill_mem,
            spilled_mem,
            spilled_out,
            lost: self.lost,
        }
    }

    /// Events pushed so far.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    // ----- the queue and its indexes -------------------------------------

    fn last_pos(&self) -> u64 {
        self.base + self.queue.len() as u64 - 1
    }

    fn item(&self, pos: u64) -> &Item {
        &self.queue[(pos - self.base) as usize]
    }

    fn pow(&mut self, k: usize) -> u64 {
        while self.pow.len() <= k {
            let last = *self.pow.last().unwrap_or(&1);
            self.pow.push(last.wrapping_mul(B));
        }
        self.pow[k]
    }

    /// Polynomial hash of the items at absolute positions `[a, b)`.
    fn block_hash(&mut self, a: u64, b: u64) -> u64 {
        let p = self.pow((b - a) as usize);
        let ha = self.prefix[(a - self.base) as usize];
        let hb = self.prefix[(b - self.base) as usize];
        hb.wrapping_sub(ha.wrapping_mul(p))
    }

    fn append(&mut self, node: Node) {
        let h = node.hash();
        let pos = self.base + self.queue.len() as u64;
        let prev_same = self.last_seen.insert(h, pos).unwrap_or(NONE);
        let last = *self.prefix.back().unwrap_or(&0);
        self.prefix.push_back(last.wrapping_mul(B).wrapping_add(h));
        register(&mut self.regs, self.reg_base, &mut self.heads, pos, &node);
        self.queue.push_back(Item { node, prev_same });
    }

    /// Removes the last item, undoing its index entries.
    fn pop(&mut self) -> Option<Node> {
        if self.queue.is_empty() {
            return None;
        }
        let pos = self.last_pos();
        unregister_from(&mut self.regs, self.reg_base, &mut self.heads, pos);
        let it = self.queue.pop_back()?;
        self.prefix.pop_back();
        let h = it.node.hash();
        if self.last_seen.get(&h) == Some(&pos) {
            if it.prev_same == NONE {
                self.last_seen.remove(&h);
            } else {
                self.last_seen.insert(h, it.prev_same);
            }
        }
        Some(it.node)
    }

    /// Removes the last `k` items, in queue order.
    fn pop_block(&mut self, k: u64) -> Vec<Node> {
        let mut v: Vec<Node> = (0..k).filter_map(|_| self.pop()).collect();
        v.reverse();
        v
    }

    // ----- folding ---------------------------------------------------------

    /// Applies rule (a), else rule (b), until neither applies.
    fn reduce(&mut self) {
        while self.reduce_once() {}
    }

    /// Applies rule (a), else rule (b), once; false if neither applies.
    fn reduce_once(&mut self) -> bool {
        if self.queue.is_empty() {
            return false;
        }
        if let Some(r) = self.extension() {
            self.extend(r);
        } else if let Some(k) = self.folding() {
            self.fold(k);
        } else {
            return false;
        }
        true
    }

    /// Rule (a): the registered loop that the tail is one more iteration of.
    fn extension(&mut self) -> Option<Reg> {
        let n = self.last_pos();
        let x = self.item(n).node.hash();
        let mut id = self.heads.get(&x).copied().unwrap_or(NONE);
        for _ in 0..self.cfg.max_candidates {
            if id == NONE || id < self.reg_base {
                return None;
            }
            let &r = self.regs.get((id - self.reg_base) as usize)?;
            if r.pos.checked_add(r.m) == Some(n)
                && self.block_hash(r.pos + 1, n + 1) == r.poly
                && self.tail_matches(&r)
            {
                return Some(r);
            }
            id = r.prev;
        }
        None
    }

    /// The loop registered by `r`.
    fn open_loop(&self, r: &Reg) -> Option<&Loop> {
        let mut node = &self.item(r.pos).node;
        for _ in 0..r.depth {
            node = node.as_loop()?.body.last()?;
        }
        node.as_loop()
    }

    fn tail_matches(&self, r: &Reg) -> bool {
        let Some(l) = self.open_loop(r) else {
            return false;
        };
        l.body.len() as u64 == r.m
            && l.body
                .iter()
                .enumerate()
                .all(|(i, b)| b.same_structure(&self.item(r.pos + 1 + i as u64).node))
    }

    fn extend(&mut self, r: Reg) {
        let tail = self.pop_block(r.m);
        let idx = (r.pos - self.base) as usize;
        let path = open_path_len(&self.queue[idx].node);
        if let Some(l) = open_loop_mut(&mut self.queue[idx].node, r.depth) {
            l.cur = l.cur.saturating_add(1);
            for (b, t) in l.body.iter_mut().zip(tail) {
                if let Some(spent) = absorb_iteration(b, t)
                    && self.pool.len() < POOL
                {
                    self.pool.push(spent);
                }
            }
        }
        // Merging can only lengthen the open path (by wrapping its last node
        // into a one-node loop); only then do the registrations change.
        let node = &self.queue[idx].node;
        if open_path_len(node) != path {
            unregister_from(&mut self.regs, self.reg_base, &mut self.heads, r.pos);
            register(&mut self.regs, self.reg_base, &mut self.heads, r.pos, node);
        }
    }

    /// Rule (b): the `k` for which the last `k` items repeat the `k` before
    /// them, if there is one.
    fn folding(&mut self) -> Option<u64> {
        let n = self.last_pos();
        let mut j = self.item(n).prev_same;
        for _ in 0..self.cfg.max_candidates {
            if j == NONE || j < self.base {
                return None;
            }
            let k = n - j;
            // The first half [j+1-k, j] must be in the queue.
            if j + 1 < self.base + k {
                return None;
            }
            let s = j + 1 - k;
            if self.block_hash(s, j + 1) == self.block_hash(j + 1, n + 1)
                && (0..k).all(|i| {
                    self.item(s + i)
                        .node
                        .same_structure(&self.item(j + 1 + i).node)
                })
            {
                return Some(k);
            }
            j = self.item(j).prev_same;
        }
        None
    }

    fn fold(&mut self, k: u64) {
        let second = self.pop_block(k);
        let first = self.pop_block(k);
        let mut body: Vec<Node> = first.into_iter().map(into_inner).collect();
        for (b, t) in body.iter_mut().zip(second) {
            if let Some(spent) = absorb_iteration(b, t)
                && self.pool.len() < POOL
            {
                self.pool.push(spent);
            }
        }
        let node = new_loop(body, ValueSeq::new(), 2);
        self.append(node);
    }

    // ----- spilling --------------------------------------------------------

    fn spill_front(&mut self) -> Result<(), Error> {
        let keep = self.cfg.queue_limit / 2;
        let mut out = Vec::new();
        while self.queue.len() > keep {
            let Some(it) = self.queue.pop_front() else {
                break;
            };
            let pos = self.base;
            self.base += 1;
            self.prefix.pop_front();
            let h = it.node.hash();
            if self.last_seen.get(&h) == Some(&pos) {
                self.last_seen.remove(&h);
            }
            while let Some(r) = self.regs.front() {
                if r.pos != pos {
                    break;
                }
                if self.heads.get(&r.key) == Some(&self.reg_base) {
                    self.heads.remove(&r.key);
                }
                self.regs.pop_front();
                self.reg_base += 1;
            }
            out.push(it.node);
        }
        let (leaves, loops) = tree::number(&mut out);
        let mut ex = Expand::new(&out, leaves, loops, self.rank);
        match &mut self.spill {
            Spill::Memory { buf, events } => {
                while let Some(shape) = ex.next_raw() {
                    codec::write_binary(&shape, ex.params(), buf);
                    *events += 1;
                }
                Ok(())
            }
            Spill::Writer { out, events } => {
                let mut line = String::new();
                let mut failed = None;
                for ev in ex {
                    if failed.is_some() {
                        self.lost += 1;
                        continue;
                    }
                    line.clear();
                    trace::raw::format_event(&ev, &mut line);
                    line.push('\n');
                    match out.write_all(line.as_bytes()) {
                        Ok(()) => *events += 1,
                        Err(e) => {
                            self.lost += 1;
                            failed = Some(e);
                        }
                    }
                }
                failed.map_or(Ok(()), |e| Err(Error::Spill(e)))
            }
        }
    }
}

impl EventSink for Compressor {
    fn push(&mut self, event: &Event) -> Result<(), Error> {
        Compressor::push(self, event)
    }

    /// Flushes the spill writer; the trace itself is taken with
    /// [`Compressor::into_trace`].
    fn finish(&mut self) -> Result<(), Error> {
        match &mut self.spill {
            Spill::Writer { out, .. } => out.flush().map_err(Error::Spill),
            Spill::Memory { .. } => Ok(()),
        }
    }
}

/// The loop `depth` steps down the open path of `node`.
fn open_loop_mut(node: &mut Node, depth: u32) -> Option<&mut Loop> {
    let Node::Loop(l) = node else { return None };
    if depth == 0 {
        Some(l)
    } else {
        open_loop_mut(l.body.last_mut()?, depth - 1)
    }
}

/// Registers every loop on the open path of the top-level item at `pos`.
fn register(regs: &mut VecDeque<Reg>, reg_base: u64, heads: &mut IdMap, pos: u64, node: &Node) {
    let mut node = node;
    let mut depth = 0;
    while let Node::Loop(l) = node {
        let Some(last) = l.body.last() else { break };
        let key = last.hash();
        let id = reg_base + regs.len() as u64;
        let prev = heads.insert(key, id).unwrap_or(NONE);
        regs.push_back(Reg {
            key,
            pos,
            m: l.body.len() as u64,
            depth,
            poly: l.poly,
            prev,
        });
        node = last;
        depth += 1;
    }
}

/// Removes the registrations of the items at positions `>= pos` (the newest
/// ones), restoring the heads they shadowed.
fn unregister_from(regs: &mut VecDeque<Reg>, reg_base: u64, heads: &mut IdMap, pos: u64) {
    while let Some(r) = regs.back().copied() {
        if r.pos < pos {
            break;
        }
        let id = reg_base + regs.len() as u64 - 1;
        regs.pop_back();
        if heads.get(&r.key) == Some(&id) {
            if r.prev == NONE || r.prev < reg_base {
                heads.remove(&r.key);
            } else {
                heads.insert(r.key, r.prev);
            }
        }
    }
}

/// Polynomial hash of a body's item hashes, as the prefix hashes compute it.
fn poly_of(body: &[Node]) -> u64 {
    body.iter()
        .fold(0u64, |acc, n| acc.wrapping_mul(B).wrapping_add(n.hash()))
}

fn new_loop(body: Vec<Node>, done: ValueSeq, cur: u64) -> Node {
    let poly = poly_of(&body);
    let hash = if body.len() == 1 {
        body[0].hash()
    } else {
        mix64(poly ^ mix64(body.len() as u64 ^ LOOP_SALT))
    };
    Node::Loop(Box::new(Loop {
        body,
        done,
        cur,
        hash,
        poly,
        id: 0,
    }))
}

/// A top-level node becomes a body node: a single event becomes a leaf.
fn into_inner(n: Node) -> Node {
    match n {
        Node::Single(s) => Node::Leaf(Box::new(Leaf::from_single(*s))),
        other => other,
    }
}

/// Wraps `n` into a loop of one iteration per execution. Its leaf, if it is
/// one, gets the wrapper as its innermost loop, so its timing is
/// reclassified as first iterations.
fn wrap(n: Node) -> Node {
    let mut n = into_inner(n);
    let execs = n.executions();
    if let Node::Leaf(l) = &mut n {
        l.timing.reclassify_as_first();
    }
    new_loop(vec![n], ValueSeq::constant(1, execs.saturating_sub(1)), 1)
}

/// Wraps `kept` in place until it is as deeply wrapped as `depth`.
fn wrap_in_place(kept: &mut Node, depth: usize) {
    while kept.wrap_depth() < depth {
        let old = std::mem::replace(kept, new_loop(Vec::new(), ValueSeq::new(), 0));
        *kept = wrap(old);
    }
}

/// Brings two structurally equal nodes to the same number of one-node loop
/// wrappers, wrapping the shallower one.
fn align(kept: &mut Node, mut other: Node) -> Node {
    let (dk, dot) = (kept.wrap_depth(), other.wrap_depth());
    if dk < dot {
        wrap_in_place(kept, dot);
    }
    while other.wrap_depth() < dk {
        other = wrap(other);
    }
    other
}

/// Merges `other` into `kept` as the next iteration of the loop whose body
/// `kept` is a direct member of. Returns the box of a merged single event,
/// for reuse.
fn absorb_iteration(kept: &mut Node, other: Node) -> Option<Box<Single>> {
    let other = align(kept, other);
    if let (Node::Leaf(k), Node::Single(o)) = (&mut *kept, &other) {
        k.push_iteration(o);
        if let Node::Single(o) = other {
            return Some(o);
        }
        return None;
    }
    absorb_execution(kept, other);
    None
}

/// Number of loops on the open path of `node` (see `register`).
fn open_path_len(node: &Node) -> usize {
    let mut node = node;
    let mut n = 0;
    while let Node::Loop(l) = node
        && let Some(last) = l.body.last()
    {
        n += 1;
        node = last;
    }
    n
}

/// Appends the executions of `other` after those of `kept` (the same node in
/// a later execution of the enclosing context).
fn absorb_execution(kept: &mut Node, other: Node) {
    let other = into_inner(align(kept, other));
    if let Node::Single(_) = kept {
        let old = std::mem::replace(kept, new_loop(Vec::new(), ValueSeq::new(), 0));
        *kept = into_inner(old);
    }
    match (kept, other) {
        (Node::Leaf(k), Node::Leaf(o)) => k.append(&o),
        (Node::Loop(k), Node::Loop(o)) => {
            let o = *o;
            k.done.push(k.cur as i64);
            k.done.append(&o.done);
            k.cur = o.cur;
            for (kb, ob) in k.body.iter_mut().zip(o.body) {
                absorb_execution(kb, ob);
            }
        }
        // Unreachable: callers merge only nodes that `same_structure`
        // accepted, and `align` gave them the same wrapping.
        _ => debug_assert!(false, "merging nodes of different structure"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::event::{Op, Peer, ReqId, Tag, Timing, Transfer};
    use trace::raw::event_line;

    /// An `Isend` from call site `site` ('A' = 0), with a tag, a peer and a
    /// request id that the tests vary.
    fn ev(site: u8, tag: i32, peer: i32, req: u64) -> Event {
        let mut e = Event::new(Op::Isend);
        e.site = u64::from(site - b'A');
        e.send = Some(Transfer {
            peer: Peer::Rank {
                world: peer,
                local: peer,
            },
            tag: Tag::Value(tag),
            count: 8,
            dsize: 4,
            dtype: trace::Datatype::UNKNOWN,
        });
        e.req = Some(ReqId(req));
        e.time = Timing {
            enter_ns: 0,
            dur_ns: 10,
            compute_ns: 100 + u64::from(site),
        };
        e
    }

    /// Events named by the letters of `prog`, with a request id counting up.
    fn letters(prog: &str) -> Vec<Event> {
        prog.bytes()
            .enumerate()
            .map(|(i, c)| ev(c, 0, 1, i as u64))
            .collect()
    }

    fn compress(events: &[Event]) -> Trace {
        compress_with(events, Config::default())
    }

    fn compress_with(events: &[Event], cfg: Config) -> Trace {
        let mut c = Compressor::new(3, cfg);
        for e in events {
            c.push(e).unwrap();
        }
        let t = c.into_trace().unwrap();
        assert_expands_to(&t, events);
        t
    }

    fn assert_expands_to(t: &Trace, events: &[Event]) {
        let mut n = 0;
        let mut ex = t.expand();
        for (i, (got, want)) in (&mut ex).zip(events).enumerate() {
            assert_eq!(event_line(&got), event_line(want), "event {i}");
            let mut want = want.clone();
            want.time = Timing::default();
            assert_eq!(got, want, "event {i}");
            n += 1;
        }
        assert!(!ex.is_broken());
        assert_eq!(n, events.len(), "expansion length");
        assert_eq!(ex.next(), None, "expansion too long");
        assert_eq!(t.stats().events, events.len() as u64);
    }

    /// The loop structure as text: events by site letter, loops as
    /// `(body)xN` with the iteration count of each execution.
    fn structure(nodes: &[Node]) -> String {
        let mut s = String::new();
        for (i, n) in nodes.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            match n {
                Node::Loop(l) => {
                    let counts: Vec<String> = l.iterations().map(|c| c.to_string()).collect();
                    s.push_str(&format!("({})x{}", structure(&l.body), counts.join(",")));
                }
                other => s.push(char::from(
                    b'A' + other.shape().map_or(0, |s| s.site()) as u8,
                )),
            }
        }
        s
    }

    #[test]
    fn repeated_pair_folds_then_extends() {
        // (b) on the second iteration, (a) on every later one.
        let t = compress(&letters("ABABABAB"));
        assert_eq!(structure(t.nodes()), "(A B)x4");
    }

    #[test]
    fn block_repeated_twice_folds() {
        let t = compress(&letters("XABCABC"));
        assert_eq!(structure(t.nodes()), "X (A B C)x2");
        let t = compress(&letters("AAAA"));
        assert_eq!(structure(t.nodes()), "(A)x4");
    }

    #[test]
    fn nested_loops_form_prsds() {
        // for i in 0..5 { for j in 0..4 { A B } C }
        let prog = "ABABABABC".repeat(5);
        let t = compress(&letters(&prog));
        assert_eq!(structure(t.nodes()), "((A B)x4,4,4,4,4 C)x5");
        assert_eq!(t.stats().nodes, 5);
    }

    #[test]
    fn three_deep_nest_is_constant_size() {
        // for i { X; for j { Y; for k { A B } } Z }
        let inner = "AB".repeat(3);
        let mid = format!("Y{inner}").repeat(4);
        let body = format!("X{mid}Z");
        let small = compress(&letters(&body.repeat(5)));
        let big = compress(&letters(&body.repeat(200)));
        assert_eq!(small.stats().nodes, big.stats().nodes);
        assert_eq!(big.stats().top_level, 1, "{}", structure(big.nodes()));
        assert_eq!(big.stats().max_depth, 3);
    }

    #[test]
    fn varying_inner_counts_become_a_count_sequence() {
        // for i { A; for j in 0..c[i] { B } }, c = 3, 3, 4, 3
        let prog: String = [3, 3, 4, 3]
            .iter()
            .map(|&c| format!("A{}", "B".repeat(c)))
            .collect();
        let t = compress(&letters(&prog));
        assert_eq!(structure(t.nodes()), "(A (B)x3,3,4,3)x4");
        // A multi-item inner body: for i { for j in 0..c[i] { A B } C }
        let prog: String = [3, 2, 4, 2, 2]
            .iter()
            .map(|&c| format!("{}C", "AB".repeat(c)))
            .collect();
        let t = compress(&letters(&prog));
        assert_eq!(structure(t.nodes()), "((A B)x3,2,4,2,2 C)x5");
    }

    #[test]
    fn an_inner_loop_that_runs_once_still_folds() {
        // A one-node loop matches its node: Test polled once or many times.
        let prog: String = [2, 1, 3, 1, 1, 5]
            .iter()
            .map(|&c| format!("A{}", "B".repeat(c)))
            .collect();
        let t = compress(&letters(&prog));
        assert_eq!(structure(t.nodes()), "(A (B)x2,1,3,1,1,5)x6");
    }

    #[test]
    fn changing_parameters_do_not_break_the_loop() {
        // Tags count up, peers rotate over 4 neighbours, requests grow.
        let mut events = Vec::new();
        let mut req = 0;
        for it in 0..1000 {
            for d in 0..4 {
                events.push(ev(b'A', it, [1, 7, 2, 6][d], req));
                req += 1;
            }
            events.push(ev(b'B', 0, 0, req));
            req += 1;
        }
        let t = compress(&events);
        assert_eq!(
            structure(t.nodes()),
            format!("((A)x{} B)x1000", vec!["4"; 1000].join(","))
        );
        // Parameter sequences stay small: a rotating peer and a strided request.
        assert!(t.stats().heap_bytes < 16 << 10, "{:?}", t.stats());
    }

    #[test]
    fn timing_is_split_by_loop_path() {
        let mut events = letters("XAAAAAY");
        for (i, e) in events.iter_mut().enumerate() {
            e.time.compute_ns = 1000 + i as u64;
        }
        let t = compress(&events);
        let Node::Loop(l) = &t.nodes()[1] else {
            panic!("{}", structure(t.nodes()))
        };
        let Node::Leaf(a) = &l.body()[0] else {
            panic!()
        };
        let tm = a.timing();
        assert_eq!(
            (tm.first().count(), tm.steady().count(), tm.last().count()),
            (1, 3, 1)
        );
        assert_eq!(tm.first().compute().stats().min(), 1001);
        assert_eq!(tm.last().compute().stats().min(), 1005);
        assert_eq!(tm.steady().compute().stats().mean(), 1003.0);
        assert_eq!(tm.total().mpi().stats().count(), 5);
    }

    #[test]
    fn nested_timing_keeps_classes_per_inner_execution() {
        // for i in 0..3 { for j in 0..4 { A } B }: A's first class has one
        // sample per outer iteration, last one per outer iteration.
        let t = compress(&letters(&"AAAAB".repeat(3)));
        assert_eq!(structure(t.nodes()), "((A)x4,4,4 B)x3");
        let outer = t.nodes()[0].as_loop().unwrap();
        let inner = outer.body()[0].as_loop().unwrap();
        let Node::Leaf(a) = &inner.body()[0] else {
            panic!()
        };
        let tm = a.timing();
        assert_eq!(
            (tm.first().count(), tm.steady().count(), tm.last().count()),
            (3, 6, 3)
        );
        let Node::Leaf(b) = &outer.body()[1] else {
            panic!()
        };
        let tb = b.timing();
        assert_eq!(
            (tb.first().count(), tb.steady().count(), tb.last().count()),
            (1, 1, 1)
        );
    }

    #[test]
    fn non_repeating_input_spills_and_still_expands() {
        let events: Vec<Event> = (0..1000u32)
            .map(|i| {
                let mut e = ev(b'A', 0, 1, u64::from(i));
                e.site = 1000 + u64::from(i);
                e
            })
            .collect();
        let t = compress_with(
            &events,
            Config {
                queue_limit: 64,
                ..Config::default()
            },
        );
        let s = t.stats();
        assert!(s.top_level <= 64, "{s:?}");
        assert!(s.spilled >= 900, "{s:?}");
    }

    #[test]
    fn spill_writer_gets_the_raw_lines() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Shared::default();
        let events: Vec<Event> = (0..500u32)
            .map(|i| {
                let mut e = ev(b'A', 0, 1, u64::from(i));
                e.site = 1000 + u64::from(i % 300);
                e
            })
            .collect();
        let cfg = Config {
            queue_limit: 32,
            ..Config::default()
        };
        let mut c = Compressor::with_spill_writer(0, cfg, Box::new(out.clone()));
        for e in &events {
            c.push(e).unwrap();
        }
        let t = c.into_trace().unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(lines.len() as u64, t.spilled_to_writer());
        lines.extend(t.expand().map(|e| event_line(&e)));
        let want: Vec<String> = events.iter().map(event_line).collect();
        assert_eq!(lines, want);
    }

    #[test]
    fn a_failing_spill_writer_is_an_error_and_counts_lost_events() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let cfg = Config {
            queue_limit: 8,
            ..Config::default()
        };
        let mut c = Compressor::with_spill_writer(0, cfg, Box::new(Broken));
        let mut errors = 0;
        for i in 0..100u32 {
            let mut e = ev(b'A', 0, 1, 0);
            e.site = u64::from(i) + 100;
            if c.push(&e).is_err() {
                errors += 1;
            }
        }
        assert!(errors > 0);
        let s = c.stats();
        assert_eq!(s.lost + s.events - s.spilled, 100, "{s:?}");
    }

    #[test]
    fn every_op_survives_compression() {
        let ops = trace::fixtures::every_op();
        let mut events = Vec::new();
        for _ in 0..3 {
            events.extend(ops.iter().cloned());
        }
        let t = compress(&events);
        assert_eq!(t.stats().top_level, 1, "{}", structure(t.nodes()));
    }
}
