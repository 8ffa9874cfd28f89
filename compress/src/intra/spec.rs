//! The speculative next iteration of the newest top-level loop.
//!
//! Once a loop `T` is the last item of the queue, the events that follow are
//! most often one more iteration of it. The folding rules of the parent
//! module find that iteration only after rebuilding it: every event becomes a
//! leaf, the inner loops are folded anew from their first two iterations,
//! and the whole iteration is then merged into `T` node by node, with its
//! timing statistics and reservoirs. For a loop nest whose inner loops run a
//! few times per entry (the exchange steps of NPB CG run once or twice per
//! entry), that rebuild is most of the cost of an event.
//!
//! Instead, a [`Spec`] walks `T`'s body as the events arrive, like a parser
//! that expects the structure already built: each event must be the leaf the
//! walk is at (same shape), and at the end of a loop body the event decides
//! whether the loop runs again or the walk moves on. The accepted events are
//! buffered, unboxed, with the leaf they belong to; when the iteration is
//! complete they are applied to `T` in place (parameters pushed, timing
//! added as first or later iteration of the innermost loop, inner loop
//! counts appended) and `T`'s count grows by one. Nothing is built and
//! nothing is merged.
//!
//! The speculation is undone, at no cost, by not applying it: when an event
//! does not fit (another call, a loop left early, an iteration that differs),
//! or when two continuations would fit it, the buffered events are handed
//! back and go through the folding rules one by one, exactly as if there had
//! been no speculation. It only accepts what the folding rules would merge
//! into `T` themselves: an inner loop with a body of several nodes must run
//! at least twice (once, its body does not match the loop node), and where
//! the first event could also extend one of the loops that end `T`'s body,
//! the rules decide.

use std::ops::Range;

use trace::codec::Shape;
use trace::timing::SlowInstance;
use trace::tree::{Loop, Node, Single};

/// Most events one speculative iteration buffers: beyond, the iteration is
/// handed back to the folding rules (which bound memory on their own).
const MAX_BUFFERED: usize = 1 << 14;

/// A node of `T` (index 0 is `T` itself).
struct Entry {
    /// Hash and shape of the first leaf the node runs (itself for a leaf).
    first: (u64, Shape),
    /// Indices of the body's entries in [`Spec::kids`]; empty for a leaf.
    kids: Range<usize>,
    /// Body positions from `T` down to this node, in [`Spec::paths`].
    path: Range<usize>,
    /// A loop whose body has several nodes.
    multi: bool,
}

impl Entry {
    fn is_loop(&self) -> bool {
        !self.kids.is_empty()
    }
}

/// Where the walk is inside one loop of the nest.
#[derive(Clone, Copy)]
struct Frame {
    entry: usize,
    /// Body position of the next node.
    next: usize,
    /// Iterations of the loop's current execution so far.
    iters: u64,
}

/// What a buffered step does when it is applied.
#[derive(Clone, Copy)]
enum Kind {
    /// An event in the first iteration of a new execution of its innermost
    /// loop.
    First,
    /// An event in a later iteration (or directly in `T`'s body).
    Next,
    /// An execution of an inner loop ended after this many iterations.
    Exec(u64),
}

/// One buffered step (the event's hash and shape are its entry's).
struct Op {
    entry: usize,
    kind: Kind,
    compute_ns: u64,
    mpi_ns: u64,
    pos: u64,
    params: Range<usize>,
}

/// A speculative iteration of the newest top-level loop (see the module
/// docs).
pub(super) struct Spec {
    entries: Vec<Entry>,
    kids: Vec<usize>,
    paths: Vec<u32>,
    frames: Vec<Frame>,
    ops: Vec<Op>,
    params: Vec<i64>,
    /// Buffered events (the ops that are not loop ends).
    events: u64,
    /// An iteration of `T` is under way (its ops are buffered).
    open: bool,
    /// The world rank and reservoir size of every event (the compressor's).
    rank: u32,
    keep: u16,
    /// Where the speculated loop is: 0 for `T`, the newest top-level loop
    /// itself; `d` for the loop `d` levels down its open path (each level
    /// the last node of the one above), whose current execution the
    /// speculation extends (see [`open_loop`]).
    depth: u32,
}

/// The loop `depth` levels down the open path of `t` (`t` itself for 0):
/// each level the last body node of the one above, which must be a loop.
pub(super) fn open_loop(t: &mut Loop, depth: u32) -> Option<&mut Loop> {
    let mut l = t;
    for _ in 0..depth {
        match l.body.last_mut() {
            Some(Node::Loop(inner)) => l = inner,
            _ => return None,
        }
    }
    Some(l)
}

/// Which loop of `t`'s open path (`t` at depth 0, then each loop that ends
/// the body of the one above) the event `s` begins an iteration of, if
/// exactly one does: the loop a speculation on `s` would extend. `None`
/// when none does, or when several do (the event could begin an iteration
/// of either: the folding rules decide).
pub(super) fn open_depth(t: &Loop, s: &Single) -> Option<u32> {
    let key = Some((s.hash, s.shape));
    let mut found = None;
    let mut l = t;
    for depth in 0u32.. {
        if l.body.first().and_then(first_leaf) == key {
            if found.is_some() {
                return None;
            }
            found = Some(depth);
        }
        match l.body.last() {
            Some(Node::Loop(inner)) => l = inner,
            _ => break,
        }
    }
    found
}

impl Spec {
    /// The depth of the speculated loop on the open path of `T` (see
    /// [`open_loop`]).
    pub(super) fn depth(&self) -> u32 {
        self.depth
    }

    /// Starts a speculation on `t` with `s` as the first event of its next
    /// iteration, if `s` is how that iteration begins and could not instead
    /// extend a loop that ends `t`'s body.
    pub(super) fn start(t: &mut Loop, s: &Single, depth: u32) -> Option<Spec> {
        if t.body.first().and_then(first_leaf) != Some((s.hash, s.shape)) {
            return None;
        }
        let mut open = t.body.last();
        while let Some(Node::Loop(l)) = open {
            if l.body.first().and_then(first_leaf) == Some((s.hash, s.shape)) {
                return None;
            }
            open = l.body.last();
        }
        let mut spec = Spec {
            entries: Vec::new(),
            kids: Vec::new(),
            paths: Vec::new(),
            frames: Vec::new(),
            ops: Vec::new(),
            params: Vec::new(),
            events: 0,
            open: false,
            rank: s.rank,
            keep: s.keep,
            depth,
        };
        spec.add_loop(t, &mut Vec::new())?;
        spec.frames.push(Frame {
            entry: 0,
            next: t.body.len(),
            iters: t.cur,
        });
        spec.step(t, s).then_some(spec)
    }

    /// Adds the entries of loop `l` (at `path`) and of its body; `None` if
    /// the body holds a single event, which a loop body never does (the
    /// folding rules make leaves of them) and an iteration could not be
    /// applied to.
    fn add_loop(&mut self, l: &Loop, path: &mut Vec<u32>) -> Option<usize> {
        let me = self.entries.len();
        let p = self.push_path(path);
        self.entries.push(Entry {
            first: (0, Shape::default()),
            kids: 0..0,
            path: p,
            multi: l.body.len() > 1,
        });
        let mut kids = Vec::with_capacity(l.body.len());
        for (i, n) in l.body.iter().enumerate() {
            path.push(i as u32);
            let k = match n {
                Node::Loop(inner) => self.add_loop(inner, path)?,
                Node::Leaf(leaf) => self.add_leaf((leaf.hash, leaf.shape), path),
                Node::Single(_) => return None,
                _ => return None,
            };
            path.pop();
            kids.push(k);
        }
        let start = self.kids.len();
        self.kids.extend(&kids);
        let first = kids
            .first()
            .map_or((0, Shape::default()), |&k| self.entries[k].first);
        let e = &mut self.entries[me];
        e.kids = start..self.kids.len();
        e.first = first;
        Some(me)
    }

    fn add_leaf(&mut self, first: (u64, Shape), path: &[u32]) -> usize {
        let p = self.push_path(path);
        self.entries.push(Entry {
            first,
            kids: 0..0,
            path: p,
            multi: false,
        });
        self.entries.len() - 1
    }

    fn push_path(&mut self, path: &[u32]) -> Range<usize> {
        let start = self.paths.len();
        self.paths.extend_from_slice(path);
        start..self.paths.len()
    }

    fn kid(&self, entry: usize, i: usize) -> usize {
        self.kids[self.entries[entry].kids.start + i]
    }

    fn fits(&self, entry: usize, s: &Single) -> bool {
        self.entries[entry].first == (s.hash, s.shape)
    }

    /// Events buffered and not yet applied.
    pub(super) fn buffered(&self) -> u64 {
        self.events
    }

    /// Heap memory held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.kids.capacity() * std::mem::size_of::<usize>()
            + self.paths.capacity() * 4
            + self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.ops.capacity() * std::mem::size_of::<Op>()
            + self.params.capacity() * 8
    }

    /// Takes `s` as the next event of the speculative iteration of `t`, or
    /// returns false (and changes nothing) when it does not fit or fits two
    /// ways; the buffered events must then be taken back with
    /// [`Spec::into_singles`].
    pub(super) fn step(&mut self, t: &mut Loop, s: &Single) -> bool {
        if self.ops.len() >= MAX_BUFFERED {
            return false;
        }
        // The continuations: from the deepest frame up, while a frame is at
        // the end of its body, the loop may run again or be left.
        let mut found = None;
        let mut fits = 0;
        for k in (0..self.frames.len()).rev() {
            let f = self.frames[k];
            let len = self.entries[f.entry].kids.len();
            if f.next < len {
                if self.fits(self.kid(f.entry, f.next), s) {
                    fits += 1;
                    found = Some((k, false));
                }
                break;
            }
            if self.fits(self.kid(f.entry, 0), s) {
                fits += 1;
                found = Some((k, true));
            }
        }
        let Some((k, again)) = found else {
            return false;
        };
        // Loops left on the way must have run as the folding rules need.
        if fits != 1
            || self.frames[k + 1..]
                .iter()
                .any(|f| self.entries[f.entry].multi && f.iters < 2)
        {
            return false;
        }
        while self.frames.len() > k + 1 {
            if let Some(f) = self.frames.pop() {
                self.push_op(f.entry, Kind::Exec(f.iters), s, 0..0);
            }
        }
        let f = &mut self.frames[k];
        if again {
            f.next = 0;
            f.iters += 1;
            if k == 0 && std::mem::replace(&mut self.open, true) {
                self.commit(t);
            }
        }
        // Down to the leaf.
        let top = self.frames.len() - 1;
        let mut entry = self.kid(self.frames[top].entry, self.frames[top].next);
        self.frames[top].next += 1;
        while self.entries[entry].is_loop() {
            self.frames.push(Frame {
                entry,
                next: 1,
                iters: 1,
            });
            entry = self.kid(entry, 0);
        }
        let inner = self.frames[self.frames.len() - 1];
        let kind = if self.frames.len() > 1 && inner.iters == 1 {
            Kind::First
        } else {
            Kind::Next
        };
        let start = self.params.len();
        self.params.extend_from_slice(&s.params);
        self.push_op(entry, kind, s, start..self.params.len());
        self.events += 1;
        // An iteration that ends with a leaf is complete now.
        if self.frames.len() == 1 && self.frames[0].next == self.entries[0].kids.len() {
            self.commit(t);
            self.open = false;
        }
        true
    }

    fn push_op(&mut self, entry: usize, kind: Kind, s: &Single, params: Range<usize>) {
        self.ops.push(Op {
            entry,
            kind,
            compute_ns: s.compute_ns,
            mpi_ns: s.mpi_ns,
            pos: s.pos,
            params,
        });
    }

    /// Applies the buffered iteration to `t`.
    fn commit(&mut self, t: &mut Loop) {
        for op in &self.ops {
            let path = &self.paths[self.entries[op.entry].path.clone()];
            let Some(node) = node_at(t, path) else {
                debug_assert!(false, "a speculative path that is not in the loop");
                continue;
            };
            let at = SlowInstance {
                rank: self.rank,
                pos: op.pos,
                mpi_ns: op.mpi_ns,
            };
            let params = &self.params[op.params.clone()];
            match (node, op.kind) {
                (Node::Leaf(l), Kind::First) => l.push_execution_of(params, op.compute_ns, at),
                (Node::Leaf(l), Kind::Next) => l.push_iteration_of(params, op.compute_ns, at),
                (Node::Loop(l), Kind::Exec(n)) => {
                    l.done.push(l.cur as i64);
                    l.cur = n;
                }
                _ => debug_assert!(false, "a speculative step of the wrong kind"),
            }
        }
        t.cur = t.cur.saturating_add(1);
        self.ops.clear();
        self.params.clear();
        self.events = 0;
    }

    /// The buffered events, in order, to go through the folding rules.
    pub(super) fn into_singles(self) -> impl Iterator<Item = Single> {
        let Spec {
            entries,
            ops,
            params,
            rank,
            keep,
            ..
        } = self;
        ops.into_iter()
            .filter_map(move |op| single_of(&entries, &params, rank, keep, &op))
    }

    /// The buffered events, in order, left in place (for a snapshot of the
    /// compressor, which must not change what it snapshots).
    pub(super) fn singles(&self) -> impl Iterator<Item = Single> + '_ {
        self.ops
            .iter()
            .filter_map(|op| single_of(&self.entries, &self.params, self.rank, self.keep, op))
    }
}

/// The event a buffered step stands for; `None` for the end of an inner
/// loop's execution, which is no event.
fn single_of(entries: &[Entry], params: &[i64], rank: u32, keep: u16, op: &Op) -> Option<Single> {
    if let Kind::Exec(_) = op.kind {
        return None;
    }
    let (hash, shape) = entries[op.entry].first;
    Some(Single {
        shape,
        hash,
        params: params[op.params.clone()].to_vec(),
        compute_ns: op.compute_ns,
        mpi_ns: op.mpi_ns,
        rank,
        pos: op.pos,
        keep,
    })
}

/// Hash and shape of the first event `n` runs.
pub(super) fn first_leaf(n: &Node) -> Option<(u64, Shape)> {
    match n {
        Node::Single(s) => Some((s.hash, s.shape)),
        Node::Leaf(l) => Some((l.hash, l.shape)),
        Node::Loop(l) => l.body.first().and_then(first_leaf),
        _ => None,
    }
}

/// The node at body positions `path` below `t`.
fn node_at<'a>(t: &'a mut Loop, path: &[u32]) -> Option<&'a mut Node> {
    let (&i, rest) = path.split_first()?;
    let mut node = t.body.get_mut(i as usize)?;
    for &i in rest {
        let Node::Loop(l) = node else { return None };
        node = l.body.get_mut(i as usize)?;
    }
    Some(node)
}
