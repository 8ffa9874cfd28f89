//! The merged trace of all ranks: Wu and Mueller 2012 §2's inter-node compression.
//!
//! Every rank compresses its own calls into a [`Trace`] (the RSD/PRSD queue
//! of `compress::intra`). At `MPI_Finalize` the ranks combine their traces
//! pairwise in a reduction tree (`compress::merge::traces`); the result is one
//! loop structure whose nodes carry the [`RankList`] of the ranks that execute
//! them. This module is the merged trace as a type; `compress::merge` builds
//! it.
//!
//! # Model
//!
//! * An [`EventNode`] is one MPI call of the program (an RSD leaf) with the
//!   ranks that execute it. Each of its parameters is a [`Param`]: a few
//!   [`Variant`]s, each a [`ValueSeq`] over the executions plus the ranklist
//!   of the ranks that have exactly those values. SPMD ranks share one
//!   variant; a stencil's wrap-around ranks form a second one for the peer
//!   offsets they see, without splitting the event or the loop.
//! * A [`LoopNode`] is a loop with its ranks, its iteration counts (a
//!   [`Param`] too, so ranks that iterate differently still share the loop)
//!   and its body.
//! * Timing is merged across ranks into one [`PathTiming`] per event, so its
//!   size does not grow with the number of ranks.
//!
//! # Location-independent endpoints
//!
//! Peers are stored relative to the recording rank (see [`crate::codec`]):
//! a neighbour offset is the same number on every rank. When two ranks'
//! relative peers differ but the absolute ranks agree ("everyone sends to
//! rank 0"), the merge switches that variant to absolute values, so both
//! patterns merge. Roots of collectives are absolute from the start.
//!
//! The merge is lossless for every rank: [`MergedTrace::rank_trace`] gives
//! back exactly the events that rank recorded, whatever order the ranks were
//! merged in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codec::Shape;
use crate::depth::guarded;
use crate::ranklist::RankList;
use crate::seq::ValueSeq;
use crate::timing::PathTiming;
use crate::tree::{self, Leaf, Loop, Node, RaggedList, Trace};

/// One version of a parameter: its values and the ranks that have them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Variant {
    #[doc(hidden)]
    pub ranks: RankList,
    #[doc(hidden)]
    pub abs: bool,
    #[doc(hidden)]
    pub seq: ValueSeq,
}

impl Variant {
    /// The ranks that have these values.
    pub fn ranks(&self) -> &RankList {
        &self.ranks
    }
    /// Whether the values are absolute world ranks (otherwise a peer is an
    /// offset from the executing rank, and other parameters are plain
    /// values).
    pub fn is_absolute(&self) -> bool {
        self.abs
    }
    /// The values, one per execution on each of [`Variant::ranks`].
    pub fn values(&self) -> &ValueSeq {
        &self.seq
    }

    /// The values in the relative form that `rank` recorded.
    fn for_rank(&self, rank: u32) -> ValueSeq {
        if self.abs {
            self.seq.offset(-i64::from(rank))
        } else {
            self.seq.clone()
        }
    }
}

/// A parameter over all the ranks that execute its event: variants with
/// disjoint ranklists, and phase-split groups (see [`Phased`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Param {
    #[doc(hidden)]
    pub variants: Vec<Variant>,
    #[doc(hidden)]
    pub phased: Vec<Phased>,
}

/// The values of a group of ranks kept split by phase: phase `j` holds the
/// values at positions `j, j + k, j + 2k, ...` (`k` phases), each phase a
/// [`Param`] of its own that merges across ranks independently.
///
/// This is for peers that rotate over a fixed set of neighbours (a stencil's
/// loop over directions): on a torus, each direction has its own wrap-around
/// ranks, so whole sequences fall into as many classes as there are corner,
/// edge and interior positions (4 in a 2×2 grid, 9 from 3×3 up), while each
/// direction alone has two (wrapping or not) at every size. Splitting keeps
/// the trace the same size from 4 ranks to any number.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Phased {
    #[doc(hidden)]
    pub ranks: RankList,
    #[serde(deserialize_with = "guarded")]
    #[doc(hidden)]
    pub phases: Vec<Param>,
}

impl Phased {
    /// The ranks whose values are split this way.
    pub fn ranks(&self) -> &RankList {
        &self.ranks
    }
    /// The phases, in position order.
    pub fn phases(&self) -> &[Param] {
        &self.phases
    }
}

/// The longest rotation that is split by phase.
#[doc(hidden)]
pub const MAX_PHASES: usize = 16;

impl Param {
    /// The variants (ranks whose values are kept whole), in order of their
    /// lowest rank once the trace is complete.
    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// The phase-split groups.
    pub fn phased(&self) -> &[Phased] {
        &self.phased
    }

    /// The variant that `rank` executes, if its values are kept whole.
    pub fn variant(&self, rank: u32) -> Option<&Variant> {
        self.variants.iter().find(|v| v.ranks.contains(rank))
    }

    /// `rank`'s values, in the form it recorded them.
    fn for_rank(&self, rank: u32) -> Option<ValueSeq> {
        if let Some(v) = self.variant(rank) {
            return Some(v.for_rank(rank));
        }
        let group = self.phased.iter().find(|g| g.ranks.contains(rank))?;
        let seqs = group
            .phases
            .iter()
            .map(|p| p.variant(rank).map(|v| v.for_rank(rank)))
            .collect::<Option<Vec<_>>>()?;
        let mut its: Vec<_> = seqs.iter().map(ValueSeq::iter).collect();
        let mut out = ValueSeq::new();
        'all: loop {
            for it in &mut its {
                match it.next() {
                    Some(v) => out.push(v),
                    None => break 'all,
                }
            }
        }
        Some(out)
    }

    /// Per-variant number of values: the executions of the owning node
    /// (for parameters that are never phase-split: the communicator and
    /// loop counts).
    #[doc(hidden)]
    pub fn lengths(&self) -> impl Iterator<Item = (&RankList, u64)> {
        self.variants.iter().map(|v| (&v.ranks, v.seq.len()))
    }

    fn normalize(&mut self) {
        self.variants.sort_by_key(|v| v.ranks.min());
        self.phased.sort_by_key(|g| g.ranks.min());
        for g in &mut self.phased {
            g.phases.iter_mut().for_each(Param::normalize);
        }
    }

    fn is_consistent(&self) -> bool {
        self.variants.iter().all(|v| v.seq.is_consistent())
            && self.phased.iter().all(|g| {
                (2..=MAX_PHASES).contains(&g.phases.len())
                    && g.phases
                        .iter()
                        .all(|p| p.phased.is_empty() && p.is_consistent())
            })
    }
}

/// A list parameter of an event over all ranks (see [`Leaf::list`]): the
/// list length per execution and one column per list position.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ListParam {
    #[doc(hidden)]
    pub width: u8,
    #[doc(hidden)]
    pub lens: Param,
    #[doc(hidden)]
    pub cols: Vec<Param>,
}

impl ListParam {
    /// Items per list entry (4 for matched wildcard outcomes, else 1).
    pub fn width(&self) -> u8 {
        self.width
    }
    /// The list length of each execution.
    pub fn lens(&self) -> &Param {
        &self.lens
    }
    /// Column `j` holds item `j` of every execution whose list is longer.
    pub fn columns(&self) -> &[Param] {
        &self.cols
    }
}

/// One MPI call of the program with all its executions on all its ranks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventNode {
    #[doc(hidden)]
    pub ranks: RankList,
    #[doc(hidden)]
    pub shape: Shape,
    #[doc(hidden)]
    pub fixed: Vec<Param>,
    #[doc(hidden)]
    pub lists: Vec<ListParam>,
    #[doc(hidden)]
    pub timing: PathTiming,
    #[doc(hidden)]
    pub variants: Vec<TimingVariant>,
}

/// The timing of an event on a group of its ranks whose computation before
/// the call differs from the other ranks' (see [`EventNode::timing_variants`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimingVariant {
    #[doc(hidden)]
    pub ranks: RankList,
    #[doc(hidden)]
    pub timing: PathTiming,
}

impl TimingVariant {
    /// The ranks this timing is of.
    pub fn ranks(&self) -> &RankList {
        &self.ranks
    }
    /// Their path-sensitive timing, merged over these ranks only (without
    /// slow instances: those stay in [`EventNode::timing`]).
    pub fn timing(&self) -> &PathTiming {
        &self.timing
    }
}

/// At most this many timing variants per event: the trace stays near
/// constant in size whatever the number of ranks.
pub const MAX_TIMING_VARIANTS: usize = 4;
/// Two groups of ranks keep separate timing when their mean computation
/// before an event (each plus [`VARIANT_FLOOR_NS`]) differs by more than this
/// factor, the difference adds up to [`VARIANT_MIN_NS`] per rank, and it is
/// [`VARIANT_MIN_T`] standard errors or more.
pub const VARIANT_RATIO: f64 = 2.0;
/// Added to a mean computation before comparing (ns): differences of a
/// few microseconds per call are noise, not a different program.
pub const VARIANT_FLOOR_NS: f64 = 2000.0;
/// The least difference in computation over the run, per rank, that keeps
/// two groups apart (ns): below it, no run's time would show the
/// difference.
pub const VARIANT_MIN_NS: f64 = 1e6;
/// The least Welch's t of two groups' mean computations that keeps them
/// apart: a difference that the spread of the samples explains is noise of
/// the run, not a rank that does other work.
pub const VARIANT_MIN_T: f64 = 4.0;

impl EventNode {
    /// The ranks that execute the call here.
    pub fn ranks(&self) -> &RankList {
        &self.ranks
    }
    /// Operation, call site, thread and which fields are present.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The fixed parameters in the order of [`crate::codec::encode`].
    pub fn params(&self) -> &[Param] {
        &self.fixed
    }
    /// The list parameters in the order of [`crate::codec::encode`].
    pub fn lists(&self) -> &[ListParam] {
        &self.lists
    }
    /// Path-sensitive timing, merged over all ranks.
    pub fn timing(&self) -> &PathTiming {
        &self.timing
    }
    /// The timing of groups of ranks that compute differently before this
    /// call, when some do: rank 0 alone verifying a result before
    /// `MPI_Finalize`, the ranks of one half of a pipeline. Merged into one
    /// distribution, a rank drawing its computation would draw another
    /// rank's (a one-in-four chance of rank 0's 20 ms at 4 ranks, and with
    /// that chance, none for rank 0 itself). Empty when all ranks are alike
    /// (means within [`VARIANT_RATIO`], a difference under
    /// [`VARIANT_MIN_NS`] per rank, or one their samples' spread explains,
    /// [`VARIANT_MIN_T`]); else disjoint groups covering
    /// [`EventNode::ranks`], at most [`MAX_TIMING_VARIANTS`].
    pub fn timing_variants(&self) -> &[TimingVariant] {
        &self.variants
    }
    /// The timing that `rank` computes by: its group's, or the merged one.
    pub fn timing_for(&self, rank: u32) -> &PathTiming {
        self.timing_group(rank).0
    }
    /// [`EventNode::timing_for`] with the ranks whose executions it holds.
    fn timing_group(&self, rank: u32) -> (&PathTiming, &RankList) {
        self.variants
            .iter()
            .find(|v| v.ranks.contains(rank))
            .map_or((&self.timing, &self.ranks), |v| (&v.timing, &v.ranks))
    }
    /// Whether the timing variants (if any) are disjoint and cover the
    /// node's ranks, as a file must have them.
    #[doc(hidden)]
    pub fn variants_cover_ranks(&self) -> bool {
        if self.variants.is_empty() {
            return true;
        }
        let n: u64 = self.variants.iter().map(|v| v.ranks.len()).sum();
        let all = self
            .variants
            .iter()
            .fold(RankList::default(), |a, v| a.union(&v.ranks));
        let within = self.ranks.union(&all).len() == self.ranks.len();
        // Inside the node's ranks, as many as it has, and no rank twice.
        self.variants.len() >= 2 && within && all.len() == n && n == self.ranks.len()
    }
    /// Executions on all ranks together.
    pub fn total_executions(&self) -> u64 {
        executions(&self.fixed[..self.fixed.len().min(1)])
    }
}

/// A loop over all the ranks that run it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoopNode {
    #[doc(hidden)]
    pub ranks: RankList,
    #[doc(hidden)]
    pub counts: Param,
    #[serde(deserialize_with = "guarded")]
    #[doc(hidden)]
    pub body: Vec<MNode>,
}

impl LoopNode {
    /// The ranks that run the loop.
    pub fn ranks(&self) -> &RankList {
        &self.ranks
    }
    /// The iteration count of each execution of the loop, per variant.
    pub fn counts(&self) -> &Param {
        &self.counts
    }
    /// The body in execution order (each node with its own ranks).
    pub fn body(&self) -> &[MNode] {
        &self.body
    }
}

/// A node of the merged trace.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub enum MNode {
    /// An MPI call.
    Event(Box<EventNode>),
    /// A loop.
    Loop(Box<LoopNode>),
}

impl MNode {
    /// The ranks that execute the node.
    pub fn ranks(&self) -> &RankList {
        match self {
            MNode::Event(e) => &e.ranks,
            MNode::Loop(l) => &l.ranks,
        }
    }

    fn quantise(&mut self) {
        match self {
            MNode::Event(e) => {
                e.timing.quantise();
                e.variants.iter_mut().for_each(|v| v.timing.quantise());
            }
            MNode::Loop(l) => l.body.iter_mut().for_each(MNode::quantise),
        }
    }

    /// The computation and MPI time of the node's events, in ns (the
    /// variants' executions are among their node's).
    fn total_ns(&self) -> f64 {
        match self {
            MNode::Event(e) => e.timing.total_ns(),
            MNode::Loop(l) => l.body.iter().map(MNode::total_ns).sum(),
        }
    }

    fn condense(&mut self, floor: f64) {
        match self {
            MNode::Event(e) => {
                e.timing.condense(floor);
                e.variants.iter_mut().for_each(|v| v.timing.condense(floor));
            }
            MNode::Loop(l) => l.body.iter_mut().for_each(|n| n.condense(floor)),
        }
    }

    fn normalize(&mut self) {
        match self {
            MNode::Event(e) => {
                e.variants.sort_by_key(|v| v.ranks.min());
                e.fixed.iter_mut().for_each(Param::normalize);
                for l in &mut e.lists {
                    l.lens.normalize();
                    l.cols.iter_mut().for_each(Param::normalize);
                }
            }
            MNode::Loop(l) => {
                l.counts.normalize();
                l.body.iter_mut().for_each(MNode::normalize);
            }
        }
    }

    fn is_consistent(&self) -> bool {
        match self {
            MNode::Event(e) => {
                let (nfixed, widths) = e.shape.layout();
                e.fixed.len() == nfixed
                    && e.lists.len() == widths.len()
                    && e.lists.iter().zip(widths).all(|(l, &w)| l.width == w)
                    && e.fixed.iter().all(Param::is_consistent)
                    && e.lists
                        .iter()
                        .all(|l| l.lens.is_consistent() && l.cols.iter().all(Param::is_consistent))
                    && e.variants_cover_ranks()
            }
            MNode::Loop(l) => l.counts.is_consistent() && l.body.iter().all(MNode::is_consistent),
        }
    }

    /// Appends `rank`'s part of the node to `out`, dealing its draws as
    /// `like`'s ([`MergedTrace::rank_trace_drawing_as`]); `None` if the
    /// node says the rank executes it but lacks its values (a corrupted
    /// trace).
    fn project(&self, rank: u32, like: u32, out: &mut Vec<Node>) -> Option<()> {
        if !self.ranks().contains(rank) {
            return Some(());
        }
        match self {
            MNode::Event(e) => {
                let fixed = e
                    .fixed
                    .iter()
                    .map(|p| p.for_rank(rank))
                    .collect::<Option<Vec<_>>>()?;
                let mut lists = Vec::with_capacity(e.lists.len());
                for l in &e.lists {
                    let cols = l.cols.iter().map_while(|c| c.for_rank(rank)).collect();
                    lists.push(RaggedList {
                        width: l.width,
                        lens: l.lens.for_rank(rank)?,
                        cols,
                    });
                }
                let execs = fixed.first().map_or(0, ValueSeq::len);
                let (timing, group) = e.timing_group(rank);
                let share = group.len().max(1);
                // The place that deals the accidents: `like`'s among the
                // ranks of the timing (the same for every rank of a position
                // class), or among the node's, folded into `share`, when
                // `like` computes by another timing group.
                let place = group
                    .index_of(like)
                    .or_else(|| e.ranks.index_of(like))
                    .or_else(|| group.index_of(rank))
                    .unwrap_or(0);
                out.push(Node::Leaf(Box::new(Leaf {
                    shape: e.shape,
                    hash: e.shape.hash64(),
                    execs,
                    fixed,
                    lists,
                    timing: Box::new(if e.variants.is_empty() {
                        e.timing.clone()
                    } else {
                        timing.clone().with_slow_of(&e.timing)
                    }),
                    id: 0,
                    share,
                    slot: place % share,
                })));
            }
            MNode::Loop(l) => {
                let (done, cur) = l.counts.for_rank(rank)?.split_last()?;
                let cur = u64::try_from(cur).ok()?;
                let mut body = Vec::new();
                for b in &l.body {
                    b.project(rank, like, &mut body)?;
                }
                out.push(Node::Loop(Box::new(Loop {
                    body,
                    done,
                    cur,
                    hash: 0,
                    poly: 0,
                    id: 0,
                })));
            }
        }
        Some(())
    }
}

/// Total number of values of the first parameter: the executions.
fn executions(p: &[Param]) -> u64 {
    p.iter()
        .flat_map(Param::lengths)
        .map(|(r, n)| n.saturating_mul(r.len()))
        .fold(0, u64::saturating_add)
}

/// Events of one rank that were spilled out of its compression queue (see
/// `compress::Config::queue_limit`), kept verbatim.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spill {
    #[doc(hidden)]
    pub rank: u32,
    #[doc(hidden)]
    pub events: u64,
    #[doc(hidden)]
    pub bytes: Vec<u8>,
}

/// The trace of a whole run: every rank's events in one loop structure with
/// ranklists (see the [module documentation](self)).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MergedTrace {
    #[doc(hidden)]
    pub ranks: RankList,
    #[serde(deserialize_with = "guarded")]
    #[doc(hidden)]
    pub nodes: Vec<MNode>,
    #[doc(hidden)]
    pub spills: Vec<Spill>,
    #[doc(hidden)]
    pub lost: u64,
}

/// The merged trace as format versions 1 to 6 stored it: the same tree,
/// without [`EventNode::timing_variants`], and with `T` as every event's
/// timing ([`PathTimingV2`](crate::timing::PathTimingV2) in versions 1 and
/// 2, [`PathTiming`] from version 3). Frozen wire types, read only, so that
/// reading an old file needs no state beside the bytes.
pub(crate) mod old {
    use serde::Deserialize;

    use super::{EventNode, ListParam, LoopNode, MNode, MergedTrace, Param, Spill, guarded};
    use crate::codec::Shape;
    use crate::ranklist::RankList;
    use crate::timing::PathTiming;

    /// [`EventNode`] of versions 1 to 6.
    #[derive(Deserialize)]
    struct EventNodeOld<T> {
        ranks: RankList,
        shape: Shape,
        fixed: Vec<Param>,
        lists: Vec<ListParam>,
        timing: T,
    }

    /// [`LoopNode`] of versions 1 to 6.
    #[derive(Deserialize)]
    #[serde(bound(deserialize = "T: Deserialize<'de>"))]
    struct LoopNodeOld<T> {
        ranks: RankList,
        counts: Param,
        #[serde(deserialize_with = "guarded")]
        body: Vec<MNodeOld<T>>,
    }

    /// [`MNode`] of versions 1 to 6.
    #[derive(Deserialize)]
    enum MNodeOld<T> {
        Event(Box<EventNodeOld<T>>),
        Loop(Box<LoopNodeOld<T>>),
    }

    /// [`MergedTrace`] of versions 1 to 6.
    #[derive(Deserialize)]
    #[serde(bound(deserialize = "T: Deserialize<'de>"))]
    pub(crate) struct MergedTraceOld<T> {
        ranks: RankList,
        #[serde(deserialize_with = "guarded")]
        nodes: Vec<MNodeOld<T>>,
        spills: Vec<Spill>,
        lost: u64,
    }

    impl<T: Into<PathTiming>> From<MNodeOld<T>> for MNode {
        fn from(n: MNodeOld<T>) -> MNode {
            match n {
                MNodeOld::Event(e) => {
                    let e = *e;
                    MNode::Event(Box::new(EventNode {
                        ranks: e.ranks,
                        shape: e.shape,
                        fixed: e.fixed,
                        lists: e.lists,
                        timing: e.timing.into(),
                        variants: Vec::new(),
                    }))
                }
                MNodeOld::Loop(l) => {
                    let l = *l;
                    MNode::Loop(Box::new(LoopNode {
                        ranks: l.ranks,
                        counts: l.counts,
                        body: l.body.into_iter().map(MNode::from).collect(),
                    }))
                }
            }
        }
    }

    impl<T: Into<PathTiming>> From<MergedTraceOld<T>> for MergedTrace {
        fn from(t: MergedTraceOld<T>) -> MergedTrace {
            MergedTrace {
                ranks: t.ranks,
                nodes: t.nodes.into_iter().map(MNode::from).collect(),
                spills: t.spills,
                lost: t.lost,
            }
        }
    }
}

/// Why a merged trace cannot give a rank's events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectError {
    /// The rank is not part of the trace.
    #[error("rank {rank} is not in this trace (ranks {ranks})")]
    NoSuchRank {
        /// The rank asked for.
        rank: u32,
        /// The ranks the trace has.
        ranks: String,
    },
    /// The trace is inconsistent for this rank.
    #[error("the trace is inconsistent: rank {0}'s values are missing")]
    Inconsistent(u32),
}

impl MergedTrace {
    /// Puts every parameter's variants in order of their lowest rank, so that
    /// the file does not depend on the merge order. Call once, before
    /// writing.
    pub fn normalize(&mut self) {
        self.nodes.iter_mut().for_each(MNode::normalize);
    }

    /// Applies the trace file's quantisation of timing in memory (see
    /// [`crate::TraceFile::quantised`]).
    pub(crate) fn quantise(&mut self) {
        self.nodes.iter_mut().for_each(MNode::quantise);
    }

    /// The trace with the timing a file keeps: each distribution whose
    /// time is under [`crate::timing::NEGLIGIBLE_SHARE`] of the trace's
    /// time (computation and MPI, over all events and ranks) reduced to one
    /// bin. The trace itself is unchanged; only a file written from it is
    /// condensed, so that a merge between ranks still works on the full
    /// histograms.
    pub(crate) fn condensed(&self) -> MergedTrace {
        let total: f64 = self.nodes.iter().map(MNode::total_ns).sum();
        let floor = total * crate::timing::NEGLIGIBLE_SHARE;
        let mut out = self.clone();
        out.nodes.iter_mut().for_each(|n| n.condense(floor));
        out
    }

    /// Whether every node has the parameter layout of its shape and every
    /// value sequence is well formed. A trace read from a file is checked
    /// with this before it is used.
    pub fn is_consistent(&self) -> bool {
        self.nodes.iter().all(MNode::is_consistent)
            && self.spills.iter().all(|s| self.ranks.contains(s.rank))
    }

    /// Checks the loops' arithmetic, over all ranks, on the compressed
    /// form: no count is negative, no body is empty, and a loop's
    /// iterations (the sum of its counts) lie between the most executions
    /// of one node of its body (each execution is inside an iteration) and
    /// the executions of its whole body (each iteration of a rank runs at
    /// least one of its body's nodes; a node may run on fewer ranks than
    /// its loop). Expanding a trace trusts the loop counts, so this is
    /// what makes [`MergedTrace::total_events`] (which counts the events'
    /// own executions) a bound on what an expansion does: a loop that
    /// declares 2^62 iterations of a body executed a few times is refused
    /// here instead of being iterated.
    pub fn check_loops(&self) -> Result<(), String> {
        fn sum(p: &Param) -> Option<i128> {
            let mut t = 0i128;
            for v in &p.variants {
                let s = v.seq.sum()?;
                if v.seq.min().is_some_and(|m| m < 0) {
                    return None;
                }
                t = t.checked_add(s.checked_mul(i128::from(v.ranks.len()))?)?;
            }
            for g in &p.phased {
                for ph in &g.phases {
                    t = t.checked_add(sum(ph)?)?;
                }
            }
            Some(t)
        }
        fn execs(n: &MNode) -> i128 {
            match n {
                MNode::Event(e) => i128::from(e.total_executions()),
                MNode::Loop(l) => i128::from(executions(std::slice::from_ref(&l.counts))),
            }
        }
        fn walk(n: &MNode, depth: usize) -> Result<(), String> {
            let MNode::Loop(l) = n else { return Ok(()) };
            let iterations = sum(&l.counts).ok_or_else(|| {
                format!("a loop at depth {depth} has negative or overflowing iteration counts")
            })?;
            if l.body.is_empty() {
                return Err(format!("a loop at depth {depth} has an empty body"));
            }
            let most = l.body.iter().map(execs).max().unwrap_or(0);
            let all = l.body.iter().map(execs).sum::<i128>();
            if iterations < most || iterations > all {
                return Err(format!(
                    "a loop at depth {depth} declares {iterations} iterations over its ranks, but its body executes {all} times in all ({most} at most for one node)"
                ));
            }
            l.body.iter().try_for_each(|b| walk(b, depth + 1))
        }
        self.nodes.iter().try_for_each(|n| walk(n, 0))
    }

    /// The ranks in the trace.
    pub fn ranks(&self) -> &RankList {
        &self.ranks
    }

    /// The top-level nodes.
    pub fn nodes(&self) -> &[MNode] {
        &self.nodes
    }

    /// Events that were lost because a rank's spill writer failed.
    pub fn lost_events(&self) -> u64 {
        self.lost
    }

    /// Events kept verbatim before the loop structure (spilled out of a
    /// rank's compression queue, see [`Spill`]), all ranks together.
    pub fn spilled_events(&self) -> u64 {
        self.spills
            .iter()
            .map(|s| s.events)
            .fold(0, u64::saturating_add)
    }

    /// Calls per operation, all ranks together, counted from the loop
    /// structure without expanding it (events spilled out of a rank's
    /// queue, kept verbatim, are not included: see
    /// [`MergedTrace::spilled_events`]).
    pub fn calls_by_op(&self) -> BTreeMap<crate::Op, u64> {
        self.count_by_op(false)
    }

    /// [`MergedTrace::calls_by_op`] of every call, or of the failed ones
    /// only ([`crate::Event::error`]).
    fn count_by_op(&self, failed_only: bool) -> BTreeMap<crate::Op, u64> {
        fn walk(n: &MNode, failed_only: bool, out: &mut BTreeMap<crate::Op, u64>) {
            match n {
                MNode::Event(e) if !failed_only || e.shape().failed() => {
                    let c = out.entry(e.shape().op()).or_default();
                    *c = c.saturating_add(e.total_executions());
                }
                MNode::Event(_) => {}
                MNode::Loop(l) => l.body.iter().for_each(|n| walk(n, failed_only, out)),
            }
        }
        let mut out = BTreeMap::new();
        self.nodes
            .iter()
            .for_each(|n| walk(n, failed_only, &mut out));
        out
    }

    /// What the tools pass over, one line each, per function: the calls
    /// recorded without detail ([`crate::Family::is_generic`]) and the calls
    /// that returned an error ([`crate::Event::error`]). `show`, `stats`,
    /// `check` and replay print these lines, so that a call the tools cannot
    /// reproduce is never passed over in silence.
    pub fn passed_over(&self) -> Vec<String> {
        let generic: Vec<(crate::Op, u64)> = self
            .calls_by_op()
            .into_iter()
            .filter(|(op, n)| op.is_generic() && *n > 0)
            .collect();
        let failed: Vec<(crate::Op, u64)> = self.count_by_op(true).into_iter().collect();
        let mut notes = Vec::new();
        if let Some((total, list)) = per_function(generic.clone()) {
            notes.push(format!(
                "{total} calls of {} MPI functions recorded without detail (name, communicator, bytes, request, time; replay, simulate and codegen do not issue them, MPI_Cancel aside): {list}",
                generic.len(),
            ));
        }
        if let Some((total, list)) = per_function(failed) {
            notes.push(format!(
                "{total} calls returned an MPI error and did nothing (recorded with their error class; check, replay, simulate and codegen pass over them): {list}"
            ));
        }
        notes
    }

    /// Events of all ranks together (spilled ones included).
    pub fn total_events(&self) -> u64 {
        fn walk(n: &MNode) -> u64 {
            match n {
                MNode::Event(e) => e.total_executions(),
                MNode::Loop(l) => l.body.iter().map(walk).fold(0, u64::saturating_add),
            }
        }
        self.nodes
            .iter()
            .map(walk)
            .chain(self.spills.iter().map(|s| s.events))
            .fold(0, u64::saturating_add)
    }

    /// Rank `rank`'s own compressed trace, cut out of the merged one: its
    /// [`Trace::expand`] gives exactly the events that rank recorded. Each
    /// event carries the timing statistics of its node, merged over all
    /// ranks (see [`EventNode::timing`] and [`crate::Expand::timing`]).
    pub fn rank_trace(&self, rank: u32) -> Result<Trace, ProjectError> {
        self.rank_trace_drawing_as(rank, rank)
    }

    /// [`MergedTrace::rank_trace`], whose computation draws are dealt one
    /// rank's accidents as `like`'s would be (`compress::ComputeDraws`): the
    /// simulator's ranks of one position class draw from one stream, so
    /// that the class's representative stands for each of them, and they
    /// deal alike too. `like` should execute what `rank` does; where it
    /// does not, `rank`'s own place deals.
    pub fn rank_trace_drawing_as(&self, rank: u32, like: u32) -> Result<Trace, ProjectError> {
        if !self.ranks.contains(rank) {
            return Err(ProjectError::NoSuchRank {
                rank,
                ranks: self.ranks.to_string(),
            });
        }
        let mut nodes = Vec::new();
        for n in &self.nodes {
            n.project(rank, like, &mut nodes)
                .ok_or(ProjectError::Inconsistent(rank))?;
        }
        let (leaf_ids, loop_ids) = tree::number(&mut nodes);
        let spill = self.spills.iter().find(|s| s.rank == rank);
        Ok(Trace {
            rank: rank as i32,
            nodes,
            leaf_ids,
            loop_ids,
            spill_mem: spill.map(|s| s.bytes.clone()).unwrap_or_default(),
            spilled_mem: spill.map_or(0, |s| s.events),
            spilled_out: 0,
            lost: 0,
        })
    }
}

/// The total of `counts` and their list, most calls first ("Send 4,
/// Recv 2", at most 12 functions named), or `None` when there are none.
fn per_function(mut counts: Vec<(crate::Op, u64)>) -> Option<(u64, String)> {
    counts.retain(|c| c.1 > 0);
    if counts.is_empty() {
        return None;
    }
    let total = counts.iter().map(|c| c.1).fold(0, u64::saturating_add);
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let list: Vec<String> = counts
        .iter()
        .take(12)
        .map(|(op, n)| format!("{} {n}", op.name()))
        .collect();
    let more = if counts.len() > 12 {
        format!(", and {} more functions", counts.len() - 12)
    } else {
        String::new()
    };
    Some((total, format!("{}{more}", list.join(", "))))
}
