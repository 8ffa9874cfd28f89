//! The compressed trace of one rank: a queue of events and (nested) loops.
//!
//! This is the RSD/PRSD structure of Wu and Mueller 2012 §2. Its nodes are:
//!
//! * [`Single`]: one execution of one MPI call, at the top level, where it is
//!   not (yet) part of a loop.
//! * [`Leaf`]: one MPI call inside a loop nest, with *all* its executions: the
//!   parameters as [`ValueSeq`]s running over the executions in order, and
//!   path-sensitive [`PathTiming`]. This is the event part of an RSD.
//! * [`Loop`]: a body of nodes and the iteration count of each of its
//!   executions. A loop whose body holds loops is a PRSD.
//!
//! Iteration counts are a [`ValueSeq`] over the executions of the loop, so an
//! inner loop that runs 3, 3, 4, 3 times in successive outer iterations is one
//! loop node (its counts a short sequence), and the outer loop does not break.
//!
//! A loop whose body is a single node is equivalent, for matching, to that
//! node: `Loop([X])` with counts `1, 1, 1` expands exactly like three `X`.
//! This lets a polling loop that sometimes runs once (`Test` × 1) fold with
//! one that runs several times.
//!
//! Invariant: expansion ([`Trace::expand`]) gives back every event exactly
//! (every field but timing), in order.

#![warn(missing_docs)]

use crate::codec::{self, Shape};
use crate::event::Event;
use std::fmt;

use crate::seq::{SeqForm, SeqIter, ValueSeq};
use crate::timing::{PathClass, PathTiming, SlowInstance};

/// One execution of an MPI call that is not inside a loop.
#[derive(Clone, Debug)]
pub struct Single {
    #[doc(hidden)]
    pub shape: Shape,
    #[doc(hidden)]
    pub hash: u64,
    #[doc(hidden)]
    pub params: Vec<i64>,
    #[doc(hidden)]
    pub compute_ns: u64,
    #[doc(hidden)]
    pub mpi_ns: u64,
    /// The world rank and the index of the event in the rank's sequence
    /// (for the slow-instance reservoir).
    #[doc(hidden)]
    pub rank: u32,
    #[doc(hidden)]
    pub pos: u64,
    /// Size of the reservoir a leaf made from this event gets.
    #[doc(hidden)]
    pub keep: u16,
}

impl Single {
    /// The event's structure.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The event, as recorded (timing zero) on world rank `rank`.
    pub fn event(&self, rank: i32) -> Option<Event> {
        codec::decode(&self.shape, &self.params, rank)
    }
    /// Computation time before the call, ns.
    pub fn compute_ns(&self) -> u64 {
        self.compute_ns
    }
    /// Time inside MPI, ns.
    pub fn mpi_ns(&self) -> u64 {
        self.mpi_ns
    }
    /// This execution as the reservoir keeps it.
    pub(crate) fn slow_instance(&self) -> SlowInstance {
        SlowInstance {
            rank: self.rank,
            pos: self.pos,
            mpi_ns: self.mpi_ns,
        }
    }
}

/// One list parameter over all executions of a leaf, kept *ragged*: the
/// length of each execution's list is a sequence, and item `j` of the list is
/// column `j`, which holds the items at position `j` of those executions whose
/// list is long enough. A `Waitall` on the same requests every iteration thus
/// keeps one strided column per request, and a `Waitsome` whose list shrinks
/// still compresses per position.
#[derive(Clone, Debug, Default)]
#[doc(hidden)]
pub struct RaggedList {
    #[doc(hidden)]
    pub width: u8,
    #[doc(hidden)]
    pub lens: ValueSeq,
    #[doc(hidden)]
    pub cols: Vec<ValueSeq>,
}

/// An MPI call inside a loop nest, with all its executions (an RSD).
#[derive(Clone, Debug)]
pub struct Leaf {
    #[doc(hidden)]
    pub shape: Shape,
    #[doc(hidden)]
    pub hash: u64,
    pub(crate) execs: u64,
    #[doc(hidden)]
    pub fixed: Vec<ValueSeq>,
    #[doc(hidden)]
    pub lists: Vec<RaggedList>,
    #[doc(hidden)]
    pub timing: Box<PathTiming>,
    pub(crate) id: u32,
    /// How many ranks' executions the timing holds (1 before the merge):
    /// what tells one rank's accident from a step every rank goes through
    /// (`compress::ComputeDraws`).
    pub(crate) share: u64,
    /// The rank's place among those `share` ranks (0 before the merge),
    /// by which the accidents are dealt to one rank and step each.
    pub(crate) slot: u64,
}

/// What `compress::ComputeDraws` needs of the leaf of an event: its id (to
/// count its executions), its structural hash (to start its quantiles) and
/// the ranks its timing holds with the rank's place among them (to deal one
/// rank's accidents).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct LeafKey {
    #[doc(hidden)]
    pub id: u32,
    #[doc(hidden)]
    pub hash: u64,
    #[doc(hidden)]
    pub share: u64,
    #[doc(hidden)]
    pub slot: u64,
}

impl Leaf {
    /// The event's structure (what every execution shares).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// Number of executions.
    pub fn executions(&self) -> u64 {
        self.execs
    }
    /// The fixed (non-list) parameters, each over all executions, in the
    /// order of [`crate::codec::encode`].
    pub fn params(&self) -> &[ValueSeq] {
        &self.fixed
    }
    /// Path-sensitive timing.
    pub fn timing(&self) -> &PathTiming {
        &self.timing
    }

    /// List parameter `i` (in the order of [`crate::codec::encode`]:
    /// scounts, rcounts, sdsizes, rdsizes, reqs, done, match, then for
    /// communicator constructors dims, periods, edges, sources, members):
    /// the list length of each execution, and the columns, where column `j`
    /// holds item `j` of every execution whose list has more than `j` items
    /// (a `match` entry is four items: has-request, request, relative
    /// source, tag).
    pub fn list(&self, i: usize) -> Option<(&ValueSeq, &[ValueSeq])> {
        self.lists.get(i).map(|l| (&l.lens, l.cols.as_slice()))
    }

    #[doc(hidden)]
    pub fn from_single(s: Single) -> Leaf {
        let (nfixed, widths) = s.shape.layout();
        let mut leaf = Leaf {
            shape: s.shape,
            hash: s.hash,
            execs: 0,
            fixed: vec![ValueSeq::new(); nfixed],
            lists: widths
                .iter()
                .map(|&width| RaggedList {
                    width,
                    ..RaggedList::default()
                })
                .collect(),
            timing: Box::new(PathTiming::single(s.compute_ns, s.keep, s.slow_instance())),
            id: 0,
            share: 1,
            slot: 0,
        };
        leaf.push_params(&s.params);
        leaf
    }

    /// Appends one execution's parameters.
    fn push_params(&mut self, params: &[i64]) {
        self.execs += 1;
        let n = self.fixed.len().min(params.len());
        for (seq, &v) in self.fixed.iter_mut().zip(&params[..n]) {
            seq.push(v);
        }
        let mut rest = params.get(n..).unwrap_or(&[]);
        for list in &mut self.lists {
            let Some((&len, tail)) = rest.split_first() else {
                break;
            };
            list.lens.push(len);
            // Most lists of most calls are empty (a Send has no request
            // list, no per-peer counts, no wildcard outcomes).
            if len == 0 {
                rest = tail;
                continue;
            }
            let items = usize::try_from(len)
                .unwrap_or(0)
                .saturating_mul(usize::from(list.width))
                .min(tail.len());
            if list.cols.len() < items {
                list.cols.resize_with(items, ValueSeq::new);
            }
            for (col, &v) in list.cols.iter_mut().zip(&tail[..items]) {
                col.push(v);
            }
            rest = &tail[items..];
        }
    }

    /// One more iteration of the innermost enclosing loop's current execution.
    #[doc(hidden)]
    pub fn push_iteration(&mut self, s: &Single) {
        self.push_iteration_of(&s.params, s.compute_ns, s.slow_instance());
    }

    /// [`Leaf::push_iteration`] from an event's parts (the speculative
    /// iteration of `intra` keeps events unboxed).
    #[doc(hidden)]
    pub fn push_iteration_of(&mut self, params: &[i64], compute_ns: u64, at: SlowInstance) {
        self.push_params(params);
        self.timing.next_iteration(compute_ns, at);
    }

    /// The first iteration of a new execution of the innermost enclosing
    /// loop: the same as appending a leaf made of this one event.
    #[doc(hidden)]
    pub fn push_execution_of(&mut self, params: &[i64], compute_ns: u64, at: SlowInstance) {
        self.push_params(params);
        self.timing.start_execution(compute_ns, at);
    }

    /// Appends all executions of `o` (later executions of the enclosing loop).
    #[doc(hidden)]
    pub fn append(&mut self, o: &Leaf) {
        self.execs = self.execs.wrapping_add(o.execs);
        for (a, b) in self.fixed.iter_mut().zip(&o.fixed) {
            a.append(b);
        }
        for (a, b) in self.lists.iter_mut().zip(&o.lists) {
            a.lens.append(&b.lens);
            for (j, col) in b.cols.iter().enumerate() {
                match a.cols.get_mut(j) {
                    Some(c) => c.append(col),
                    None => a.cols.push(col.clone()),
                }
            }
        }
        self.timing.append_execution(&o.timing);
    }

    fn heap_bytes(&self) -> usize {
        let seqs = self.fixed.iter().map(ValueSeq::heap_bytes).sum::<usize>()
            + self
                .lists
                .iter()
                .map(|l| {
                    l.lens.heap_bytes()
                        + l.cols.iter().map(ValueSeq::heap_bytes).sum::<usize>()
                        + l.cols.capacity() * std::mem::size_of::<ValueSeq>()
                })
                .sum::<usize>();
        seqs + self.fixed.capacity() * std::mem::size_of::<ValueSeq>()
            + self.lists.capacity() * std::mem::size_of::<RaggedList>()
            + std::mem::size_of::<PathTiming>()
            + self.timing.heap_bytes()
            + std::mem::size_of::<Leaf>()
    }
}

/// A loop: a body and the iteration count of each execution (a PRSD when the
/// body holds loops).
#[derive(Clone, Debug)]
pub struct Loop {
    #[doc(hidden)]
    pub body: Vec<Node>,
    /// Iteration counts of all executions but the newest.
    #[doc(hidden)]
    pub done: ValueSeq,
    /// Iteration count of the newest execution (which may still grow while
    /// the trace is built).
    #[doc(hidden)]
    pub cur: u64,
    #[doc(hidden)]
    pub hash: u64,
    /// Polynomial hash of the body's item hashes (see `intra`).
    #[doc(hidden)]
    pub poly: u64,
    #[doc(hidden)]
    pub id: u32,
}

impl Loop {
    /// The body, in execution order.
    pub fn body(&self) -> &[Node] {
        &self.body
    }
    /// Number of executions of this loop.
    pub fn executions(&self) -> u64 {
        self.done.len() + 1
    }
    /// The iteration count of each execution, in order.
    pub fn iterations(&self) -> impl Iterator<Item = u64> + '_ {
        self.done
            .iter()
            .map(|x| x as u64)
            .chain(std::iter::once(self.cur))
    }
    /// Total iterations over all executions.
    pub fn total_iterations(&self) -> u64 {
        self.iterations().fold(0u64, u64::saturating_add)
    }
}

/// A node of the compressed trace.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Node {
    /// One execution of a call outside any loop.
    Single(Box<Single>),
    /// A call inside a loop nest, with all its executions.
    Leaf(Box<Leaf>),
    /// A loop.
    Loop(Box<Loop>),
}

impl Node {
    /// The structural hash: equal for nodes that [`Node::same_structure`]
    /// calls equal (a loop with a one-node body hashes like that node).
    #[doc(hidden)]
    pub fn hash(&self) -> u64 {
        match self {
            Node::Single(s) => s.hash,
            Node::Leaf(l) => l.hash,
            Node::Loop(l) => l.hash,
        }
    }

    /// The shape of an event node.
    pub fn shape(&self) -> Option<&Shape> {
        match self {
            Node::Single(s) => Some(&s.shape),
            Node::Leaf(l) => Some(&l.shape),
            Node::Loop(_) => None,
        }
    }

    /// The loop, if this node is one.
    pub fn as_loop(&self) -> Option<&Loop> {
        match self {
            Node::Loop(l) => Some(l),
            _ => None,
        }
    }

    /// Number of times this node is executed.
    pub fn executions(&self) -> u64 {
        match self {
            Node::Single(_) => 1,
            Node::Leaf(l) => l.execs,
            Node::Loop(l) => l.executions(),
        }
    }

    /// Strips one-node loops: the node that decides the structure.
    pub(crate) fn core(&self) -> &Node {
        let mut n = self;
        while let Node::Loop(l) = n
            && l.body.len() == 1
        {
            n = &l.body[0];
        }
        n
    }

    /// Number of one-node loops around the core.
    #[doc(hidden)]
    pub fn wrap_depth(&self) -> usize {
        let mut n = self;
        let mut d = 0;
        while let Node::Loop(l) = n
            && l.body.len() == 1
        {
            n = &l.body[0];
            d += 1;
        }
        d
    }

    /// Structural equality: same shapes in the same loop structure, ignoring
    /// parameters, iteration counts and one-node loop wrappers.
    pub fn same_structure(&self, other: &Node) -> bool {
        if self.hash() != other.hash() {
            return false;
        }
        match (self.core(), other.core()) {
            (Node::Loop(a), Node::Loop(b)) => {
                a.body.len() == b.body.len()
                    && a.body.iter().zip(&b.body).all(|(x, y)| x.same_structure(y))
            }
            (Node::Loop(_), _) | (_, Node::Loop(_)) => false,
            (a, b) => a.shape() == b.shape(),
        }
    }

    /// Calls `f` on every node of the subtree, parents first.
    pub(crate) fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Node, usize), depth: usize) {
        f(self, depth);
        if let Node::Loop(l) = self {
            for n in &l.body {
                n.visit(f, depth + 1);
            }
        }
    }

    fn visit_mut(&mut self, f: &mut impl FnMut(&mut Node)) {
        f(self);
        if let Node::Loop(l) = self {
            for n in &mut l.body {
                n.visit_mut(f);
            }
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Node::Single(s) => {
                std::mem::size_of::<Single>() + s.params.capacity() * std::mem::size_of::<i64>()
            }
            Node::Leaf(l) => l.heap_bytes(),
            Node::Loop(l) => {
                std::mem::size_of::<Loop>()
                    + l.done.heap_bytes()
                    + l.body.capacity() * std::mem::size_of::<Node>()
                    + l.body.iter().map(Node::heap_bytes).sum::<usize>()
            }
        }
    }
}

/// A one-line outline of the loop structure: events by operation name,
/// loops as `(body)xN`, where `N` is the iteration count when every
/// execution ran the same number of times and `{a,b,...}` otherwise.
///
/// For humans and tests; the format is not a contract.
impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Loop(l) => {
                f.write_str("(")?;
                outline(f, &l.body)?;
                let same = match l.done.form() {
                    SeqForm::Empty => true,
                    SeqForm::Const { value, .. } => value as u64 == l.cur,
                    _ => false,
                };
                if same {
                    write!(f, ")x{}", l.cur)
                } else {
                    let n = l.executions();
                    let mut counts: Vec<String> =
                        l.iterations().take(7).map(|c| c.to_string()).collect();
                    if n > 8 {
                        counts.push("...".into());
                    }
                    if n > 7 {
                        counts.push(l.cur.to_string());
                    }
                    write!(f, ")x{{{}}}", counts.join(","))
                }
            }
            other => match other.shape() {
                Some(s) => f.write_str(s.op().name()),
                None => Ok(()),
            },
        }
    }
}

fn outline(f: &mut fmt::Formatter<'_>, nodes: &[Node]) -> fmt::Result {
    for (i, n) in nodes.iter().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        write!(f, "{n}")?;
    }
    Ok(())
}

/// Gives every leaf and loop of `nodes` a dense id (their index into the
/// expander's cursor tables) and returns (leaves, loops).
#[doc(hidden)]
pub fn number(nodes: &mut [Node]) -> (u32, u32) {
    let (mut leaves, mut loops) = (0u32, 0u32);
    for n in nodes {
        n.visit_mut(&mut |n| match n {
            Node::Leaf(l) => {
                l.id = leaves;
                leaves += 1;
            }
            Node::Loop(l) => {
                l.id = loops;
                loops += 1;
            }
            Node::Single(_) => {}
        });
    }
    (leaves, loops)
}

/// Settles path timing at the end of the run: every loop is over.
#[doc(hidden)]
pub fn settle(nodes: &mut [Node]) {
    for n in nodes {
        n.visit_mut(&mut |n| {
            if let Node::Leaf(l) = n {
                l.timing.settle();
            }
        });
    }
}

/// Sizes of a trace, for tests, `rankscale show` and memory accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Nodes at the top level of the queue.
    pub top_level: usize,
    /// All nodes: singles, leaves and loops, at every depth.
    pub nodes: usize,
    /// Event nodes (singles and leaves).
    pub leaves: usize,
    /// Loop nodes.
    pub loops: usize,
    /// Deepest loop nesting.
    pub max_depth: usize,
    /// Events represented by the nodes (not counting spilled ones).
    pub events: u64,
    /// Events spilled out of the queue (see `compress::Config::queue_limit`).
    pub spilled: u64,
    /// Events lost because the spill writer failed.
    pub lost: u64,
    /// Approximate heap bytes of the nodes and their parameter sequences.
    pub heap_bytes: usize,
}

#[doc(hidden)]
pub fn stats_of(nodes: &[Node]) -> TraceStats {
    let mut s = TraceStats {
        top_level: nodes.len(),
        ..TraceStats::default()
    };
    for n in nodes {
        n.visit(
            &mut |n, d| {
                s.nodes += 1;
                s.max_depth = s.max_depth.max(d);
                match n {
                    Node::Loop(_) => s.loops += 1,
                    _ => s.leaves += 1,
                }
            },
            0,
        );
        s.events = s.events.saturating_add(events_of(n));
        s.heap_bytes += n.heap_bytes();
    }
    s
}

/// Number of events a node stands for.
pub(crate) fn events_of(n: &Node) -> u64 {
    match n {
        Node::Loop(l) => l.body.iter().map(events_of).fold(0u64, u64::saturating_add),
        other => other.executions(),
    }
}

/// The compressed trace of one rank, as produced by
/// `compress::Compressor::into_trace`.
///
/// Read it with [`Trace::expand`] (the exact event sequence) or walk
/// [`Trace::nodes`] (the loop structure, parameters and timing). It is
/// immutable: nothing can break the expansion invariant after the fact.
///
/// Its fields are public but hidden from the documentation: they are for
/// the compressor in crate `compress`, which builds the tree and lives in
/// another crate since the split (the model here, the algorithms there).
/// Any other crate reads a `Trace` through its methods.
#[derive(Clone, Debug)]
pub struct Trace {
    #[doc(hidden)]
    pub rank: i32,
    #[doc(hidden)]
    pub nodes: Vec<Node>,
    #[doc(hidden)]
    pub leaf_ids: u32,
    #[doc(hidden)]
    pub loop_ids: u32,
    /// Events spilled to memory, in the binary form of `codec::write_binary`.
    #[doc(hidden)]
    pub spill_mem: Vec<u8>,
    #[doc(hidden)]
    pub spilled_mem: u64,
    /// Events spilled to the caller's writer (not in this trace).
    #[doc(hidden)]
    pub spilled_out: u64,
    #[doc(hidden)]
    pub lost: u64,
}

/// The outline of the top-level queue (see [`Node`]'s `Display`).
impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        outline(f, &self.nodes)
    }
}

impl Trace {
    /// The world rank that recorded the trace (peers are stored relative to it).
    pub fn rank(&self) -> i32 {
        self.rank
    }

    /// The top-level queue.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Events that were written to the spill writer and are therefore not
    /// part of this trace: the full event sequence is the spill file followed
    /// by [`Trace::expand`].
    pub fn spilled_to_writer(&self) -> u64 {
        self.spilled_out
    }

    /// Sizes.
    pub fn stats(&self) -> TraceStats {
        let mut s = stats_of(&self.nodes);
        s.events = s.events.saturating_add(self.spilled_mem);
        s.spilled = self.spilled_mem + self.spilled_out;
        s.lost = self.lost;
        s.heap_bytes += self.spill_mem.capacity();
        s
    }

    /// Replaces the timing of every leaf for which `f` returns one
    /// (depth-first, in execution order). A leaf's timing is boxed, so its
    /// address, which [`Expand::timing`] hands out, identifies the leaf: an
    /// extrapolated trace is built by compressing synthetic events and then
    /// giving each leaf the timing fitted for it.
    pub fn map_leaf_timings(&mut self, mut f: impl FnMut(&Leaf) -> Option<PathTiming>) {
        fn walk(nodes: &mut [Node], f: &mut dyn FnMut(&Leaf) -> Option<PathTiming>) {
            for n in nodes {
                match n {
                    Node::Leaf(l) => {
                        if let Some(t) = f(l) {
                            *l.timing = t;
                        }
                    }
                    Node::Loop(l) => walk(&mut l.body, f),
                    Node::Single(_) => {}
                }
            }
        }
        walk(&mut self.nodes, &mut f);
    }

    /// The events, in order, with every field but timing as recorded: first
    /// those spilled to memory, then the expansion of the queue. Lazy: it
    /// holds one cursor per parameter sequence and never materialises more
    /// than one event at a time.
    pub fn expand(&self) -> Expand<'_> {
        let mut e = Expand::new(&self.nodes, self.leaf_ids, self.loop_ids, self.rank);
        e.spill = &self.spill_mem;
        e
    }
}

/// Whether the iterations of a loop with this body are contexts (see
/// [`Expand::context_path`]), given whether an enclosing loop's are.
fn is_context(body: &[Node], inside_context: bool) -> bool {
    fn waits(body: &[Node]) -> bool {
        body.iter().any(|n| match n {
            Node::Loop(l) => waits(&l.body),
            n => n.shape().is_some_and(|s| s.op().can_wait()),
        })
    }
    let one_call = matches!(body, [Node::Leaf(_) | Node::Single(_)]);
    waits(body) && !(one_call && inside_context)
}

struct Frame<'a> {
    /// The loop this frame iterates (`u32::MAX` for the top level).
    id: u32,
    /// Whether an iteration of this loop is a context (see
    /// [`Expand::context_path`]).
    context: bool,
    body: &'a [Node],
    idx: usize,
    left: u64,
    count: u64,
}

/// The timing an expanded event carries: exact for an event outside any
/// loop that was never merged, else the statistics of its path class.
#[derive(Clone, Copy, Debug)]
pub enum EventTiming<'a> {
    /// The recorded times.
    Exact {
        /// Computation before the call, ns.
        compute_ns: u64,
        /// Time inside MPI, ns.
        mpi_ns: u64,
    },
    /// The statistics of the event's path class.
    Stats(&'a PathTiming, PathClass),
}

struct LeafCursor<'a> {
    fixed: Vec<SeqIter<'a>>,
    lists: Vec<(SeqIter<'a>, Vec<SeqIter<'a>>)>,
}

/// The lazy expansion of a trace (see [`Trace::expand`]).
pub struct Expand<'a> {
    rank: i32,
    spill: &'a [u8],
    spill_pos: usize,
    stack: Vec<Frame<'a>>,
    leaves: Vec<Option<LeafCursor<'a>>>,
    loops: Vec<Option<SeqIter<'a>>>,
    params: Vec<i64>,
    broken: bool,
    timing: Option<EventTiming<'a>>,
    /// The key of the leaf of the event last returned.
    leaf: Option<LeafKey>,
}

impl<'a> Expand<'a> {
    #[doc(hidden)]
    pub fn new(nodes: &'a [Node], leaves: u32, loops: u32, rank: i32) -> Expand<'a> {
        let mut leaf_tab = Vec::new();
        leaf_tab.resize_with(leaves as usize, || None);
        let mut loop_tab = Vec::new();
        loop_tab.resize_with(loops as usize, || None);
        Expand {
            rank,
            spill: &[],
            spill_pos: 0,
            stack: vec![Frame {
                id: u32::MAX,
                context: false,
                body: nodes,
                idx: 0,
                left: 1,
                count: 1,
            }],
            timing: None,
            leaf: None,
            leaves: leaf_tab,
            loops: loop_tab,
            params: Vec::new(),
            broken: false,
        }
    }

    /// Whether expansion stopped early on an inconsistent trace (which the
    /// compressor never produces).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The timing of the event last returned: what replay samples its
    /// computation and what analysis attributes time from.
    pub fn timing(&self) -> Option<EventTiming<'a>> {
        self.timing
    }

    /// The [`LeafKey`] of the leaf of the event last returned (none for an
    /// exact event or a spilled one): what `compress::ComputeDraws` counts
    /// executions by and deals accidents with.
    #[doc(hidden)]
    pub fn leaf_key(&self) -> Option<LeafKey> {
        self.leaf
    }

    /// Where the event last returned sits in the loop nest: one
    /// `(loop id, iteration)` per enclosing loop execution, outermost first,
    /// iterations counted from 0. Loop ids are unique within the rank's
    /// trace. This is the event's loop iteration vector, which is how the
    /// analysis delimits one iteration's communication (a context) and how
    /// reports name an instance without storing per-event positions.
    pub fn loop_path(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let spilled = self.spill_pos < self.spill.len() || self.stack.len() <= 1;
        self.stack
            .iter()
            .skip(1)
            .filter(move |_| !spilled)
            .map(|f| (f.id, f.count - f.left))
    }

    /// [`Expand::loop_path`] with only the loops whose iterations are
    /// contexts. A loop of calls that never wait (posting `Irecv`s, polling
    /// with `Test`) is part of the iteration around it, and so is a loop
    /// over a single call inside a loop whose iterations are contexts (one
    /// `Ssend` per neighbour within a time step): neither is an iteration
    /// of the algorithm. A loop of one blocking call on its own (a ring of
    /// `Sendrecv`s) is. What is left is the iteration the event's group of
    /// calls belongs to: the context the analysis delimits pattern
    /// instances by.
    pub fn context_path(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let spilled = self.spill_pos < self.spill.len() || self.stack.len() <= 1;
        self.stack
            .iter()
            .skip(1)
            .filter(move |f| !spilled && f.context)
            .map(|f| (f.id, f.count - f.left))
    }

    /// The parameters of the event last returned by `next_raw`.
    #[doc(hidden)]
    pub fn params(&self) -> &[i64] {
        &self.params
    }

    /// The next event as shape and parameters (in `self.params`).
    #[doc(hidden)]
    pub fn next_raw(&mut self) -> Option<Shape> {
        if self.broken {
            return None;
        }
        self.leaf = None;
        if self.spill_pos < self.spill.len() {
            self.timing = None;
            let s = codec::read_binary(self.spill, &mut self.spill_pos, &mut self.params);
            if s.is_none() {
                self.broken = true;
            }
            return s;
        }
        loop {
            let f = self.stack.last_mut()?;
            let body = f.body;
            if f.idx >= body.len() {
                f.left -= 1;
                if f.left > 0 {
                    f.idx = 0;
                } else {
                    self.stack.pop();
                    if let Some(p) = self.stack.last_mut() {
                        p.idx += 1;
                    }
                }
                continue;
            }
            let node = &body[f.idx];
            match node {
                Node::Single(s) => {
                    f.idx += 1;
                    self.params.clear();
                    self.params.extend_from_slice(&s.params);
                    self.timing = Some(EventTiming::Exact {
                        compute_ns: s.compute_ns,
                        mpi_ns: s.mpi_ns,
                    });
                    return Some(s.shape);
                }
                Node::Leaf(l) => {
                    f.idx += 1;
                    let class = if f.left == f.count {
                        PathClass::First
                    } else if f.left == 1 {
                        PathClass::Last
                    } else {
                        PathClass::Steady
                    };
                    if self.leaf_params(l).is_none() {
                        self.broken = true;
                        return None;
                    }
                    self.timing = Some(EventTiming::Stats(&l.timing, class));
                    self.leaf = Some(LeafKey {
                        id: l.id,
                        hash: l.hash,
                        share: l.share,
                        slot: l.slot,
                    });
                    return Some(l.shape);
                }
                Node::Loop(l) => {
                    let Some(slot) = self.loops.get_mut(l.id as usize) else {
                        self.broken = true;
                        return None;
                    };
                    let it = slot.get_or_insert_with(|| l.done.iter());
                    let count = match it.next() {
                        Some(c) => u64::try_from(c).unwrap_or(0),
                        None => l.cur,
                    };
                    if count == 0 || l.body.is_empty() {
                        if let Some(f) = self.stack.last_mut() {
                            f.idx += 1;
                        }
                        continue;
                    }
                    self.stack.push(Frame {
                        id: l.id,
                        context: is_context(&l.body, self.stack.iter().any(|f| f.context)),
                        body: &l.body,
                        idx: 0,
                        left: count,
                        count,
                    });
                }
            }
        }
    }

    fn leaf_params(&mut self, l: &'a Leaf) -> Option<()> {
        let cur = self
            .leaves
            .get_mut(l.id as usize)?
            .get_or_insert_with(|| LeafCursor {
                fixed: l.fixed.iter().map(ValueSeq::iter).collect(),
                lists: l
                    .lists
                    .iter()
                    .map(|r| (r.lens.iter(), r.cols.iter().map(ValueSeq::iter).collect()))
                    .collect(),
            });
        self.params.clear();
        for it in &mut cur.fixed {
            self.params.push(it.next()?);
        }
        for ((lens, cols), list) in cur.lists.iter_mut().zip(&l.lists) {
            let len = lens.next()?;
            self.params.push(len);
            let items = usize::try_from(len)
                .ok()?
                .checked_mul(usize::from(list.width))?;
            for col in cols.get_mut(..items)? {
                self.params.push(col.next()?);
            }
        }
        Some(())
    }
}

impl Iterator for Expand<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let shape = self.next_raw()?;
        let ev = codec::decode(&shape, &self.params, self.rank);
        if ev.is_none() {
            self.broken = true;
        }
        ev
    }
}
