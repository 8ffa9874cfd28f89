//! The merge of the ranks' traces into one: Wu and Mueller 2012 §2's
//! inter-node compression.
//!
//! Every rank compresses its own calls into a [`Trace`] (the RSD/PRSD queue
//! of [`crate::intra`]) and makes it a one-rank [`MergedTrace`]
//! ([`from_rank`]). At `MPI_Finalize` the ranks combine their traces
//! pairwise in a reduction tree ([`traces`], in the order of
//! [`binomial_step`]); the result is one loop structure whose nodes carry
//! the ranklist of the ranks that execute them (the model:
//! [`trace::merged`]).
//!
//! # Alignment
//!
//! Two traces are aligned node by node on their *compressed* top-level
//! queues and, recursively, on the bodies of matched loops; never on
//! expanded events, which is ScalaTrace's O(m·n) weakness (PRIOR-ART.md).
//! Common prefixes and suffixes are matched in linear time, the rest by a
//! longest common subsequence on structural keys (dynamic programming up to
//! a size limit, patience anchors beyond it). Loops that are left unmatched
//! but share calls (the interior and the boundary ranks of a stencil, whose
//! loop bodies differ by one call) are paired in a second pass and merged
//! recursively. What still differs forms branches: nodes with disjoint
//! ranklists, placed side by side and ordered by the lowest rank of each
//! group (Wu and Mueller 2012, Algorithm 1), so that traces of different sizes align.
//!
//! The merge is lossless for every rank: [`MergedTrace::rank_trace`] gives
//! back exactly the events that rank recorded, whatever order the ranks were
//! merged in.
//!
//! The same merge joins whole trace files ([`files`]: the tracer's
//! reduction, [`as_traced`]: a run built outside one, [`rank_files`]: the
//! snapshots a job left), and [`from_rank_events`] builds a file from each
//! rank's events as the tracer would.
//!
//! The merged trace's types belong to the model (the crate `trace`); what
//! the merge does with them beyond reading them is in the private traits
//! below (`ParamMerge`, `MNodeMerge`, ...).

use std::collections::HashMap;

use trace::Error;
use trace::file::TraceFile;
use trace::merged::{
    EventNode, ListParam, LoopNode, MAX_PHASES, MAX_TIMING_VARIANTS, MNode, MergedTrace, Param,
    Phased, Spill, TimingVariant, VARIANT_FLOOR_NS, VARIANT_MIN_NS, VARIANT_MIN_T, VARIANT_RATIO,
    Variant,
};
use trace::ranklist::RankList;
use trace::seq::ValueSeq;
use trace::tree::{Leaf, Node, Trace};

/// What the merge does with a [`Variant`] beyond reading it.
trait VariantMerge {
    fn absolute(&self) -> Option<ValueSeq>;
}

impl VariantMerge for Variant {
    /// The values as absolute ranks, if they can be written so: a variant
    /// that is already absolute, or one that belongs to a single rank.
    fn absolute(&self) -> Option<ValueSeq> {
        if self.abs {
            return Some(self.seq.clone());
        }
        let r = self.ranks.min()?;
        (self.ranks.len() == 1).then(|| self.seq.offset(i64::from(r)))
    }
}

/// The period `k` (2..=16) of a sequence that repeats exactly every `k`
/// values at least twice, if it has one and is not constant.
fn period(seq: &ValueSeq) -> Option<usize> {
    let head: Vec<i64> = seq.iter().take(2 * MAX_PHASES).collect();
    let k = (1..=MAX_PHASES)
        .find(|&k| head.len() >= 2 * k && (k..head.len()).all(|i| head[i] == head[i - k]))?;
    if k == 1 {
        return None;
    }
    // Checked on the compressed form: a snapshot converts the trace of a
    // long run many times.
    seq.repeats(&head[..k]).then_some(k)
}

/// How the merge builds and unites [`Param`]s.
trait ParamMerge {
    fn single(ranks: &RankList, seq: ValueSeq) -> Param;
    fn single_peer(ranks: &RankList, seq: ValueSeq) -> Param;
    fn merge(&mut self, o: Param, peer: bool);
    fn add(&mut self, v: Variant, peer: bool);
}

impl ParamMerge for Param {
    /// One variant: `seq` on every rank of `ranks`.
    fn single(ranks: &RankList, seq: ValueSeq) -> Param {
        Param {
            variants: vec![Variant {
                ranks: ranks.clone(),
                abs: false,
                seq,
            }],
            phased: Vec::new(),
        }
    }

    /// A peer parameter of one rank: split by phase when it rotates.
    fn single_peer(ranks: &RankList, seq: ValueSeq) -> Param {
        let Some(k) = period(&seq) else {
            return Param::single(ranks, seq);
        };
        // Each phase of a k-periodic sequence is one value, repeated.
        let n = seq.len();
        let phases: Vec<ValueSeq> = seq
            .iter()
            .take(k)
            .enumerate()
            .map(|(j, v)| ValueSeq::constant(v, (n - j as u64).div_ceil(k as u64)))
            .collect();
        Param {
            variants: Vec::new(),
            phased: vec![Phased {
                ranks: ranks.clone(),
                phases: phases
                    .into_iter()
                    .map(|s| Param::single(ranks, s))
                    .collect(),
            }],
        }
    }

    fn merge(&mut self, o: Param, peer: bool) {
        for v in o.variants {
            self.add(v, peer);
        }
        for g in o.phased {
            match self
                .phased
                .iter_mut()
                .find(|h| h.phases.len() == g.phases.len())
            {
                Some(h) => {
                    h.ranks = h.ranks.union(&g.ranks);
                    for (a, b) in h.phases.iter_mut().zip(g.phases) {
                        a.merge(b, peer);
                    }
                }
                None => self.phased.push(g),
            }
        }
    }

    fn add(&mut self, v: Variant, peer: bool) {
        if let Some(w) = self
            .variants
            .iter_mut()
            .find(|w| w.abs == v.abs && w.seq.same_form(&v.seq))
        {
            w.ranks = w.ranks.union(&v.ranks);
            return;
        }
        if peer && let Some(va) = v.absolute() {
            for w in &mut self.variants {
                if let Some(wa) = w.absolute()
                    && wa.same_form(&va)
                {
                    w.ranks = w.ranks.union(&v.ranks);
                    w.abs = true;
                    w.seq = wa;
                    return;
                }
            }
        }
        self.variants.push(v);
    }
}

/// How the merge compares the timing of groups of ranks.
trait TimingVariantMerge {
    fn compute(&self) -> trace::timing::Stats;
    fn mean(&self) -> f64;
    fn per_rank(&self) -> f64;
    fn key(&self) -> f64;
    fn alike(&self, o: &TimingVariant) -> bool;
    fn welch_t(&self, o: &TimingVariant) -> f64;
}

impl TimingVariantMerge for TimingVariant {
    /// The computation before the call over every path class (a variant
    /// holds no pending iteration), without cloning the histograms.
    fn compute(&self) -> trace::timing::Stats {
        let t = &self.timing;
        let mut s = *t.first().compute().stats();
        s.merge(t.steady().compute().stats());
        s.merge(t.last().compute().stats());
        s
    }
    /// The mean computation before the call (ns).
    fn mean(&self) -> f64 {
        self.compute().mean()
    }
    /// The computation before the call that one rank of the group spends
    /// over the run (ns): the mean times the executions per rank.
    fn per_rank(&self) -> f64 {
        let s = self.compute();
        s.mean() * s.count() as f64 / self.ranks.len().max(1) as f64
    }
    /// Where the group sits in the order of computation: its mean on a log
    /// scale with [`VARIANT_FLOOR_NS`] added (so that 0.1 and 0.3 µs are
    /// alike while 20 ms and 0.1 µs are not).
    fn key(&self) -> f64 {
        (self.mean() + VARIANT_FLOOR_NS).ln()
    }
    /// Whether two groups compute alike: means within [`VARIANT_RATIO`] (each
    /// plus the floor), or a difference over the whole run of less than
    /// [`VARIANT_MIN_NS`] per rank. The latter keeps the noise of a call made
    /// once (20 against 45 µs before `MPI_Finalize` on an oversubscribed
    /// node) out of the trace, while 5 µs more in each of 10,000 iterations
    /// is kept.
    fn alike(&self, o: &TimingVariant) -> bool {
        (self.key() - o.key()).abs() <= VARIANT_RATIO.ln()
            || (self.per_rank() - o.per_rank()).abs() < VARIANT_MIN_NS
            || self.welch_t(o) < VARIANT_MIN_T
    }
    /// Welch's t of the two groups' mean computations: the difference of
    /// the means in standard errors. On an oversubscribed node a rank that
    /// lost its core now and then has a mean twice another's over a few
    /// calls, but its samples spread as widely (NPB FT at 64 ranks on 2
    /// cores: seven transposes per rank, t near 2); rank 0's verification
    /// against ranks that all compute nearly nothing is far beyond it.
    fn welch_t(&self, o: &TimingVariant) -> f64 {
        let (a, b) = (self.compute(), o.compute());
        let se2 = a.variance() / a.count().max(1) as f64 + b.variance() / b.count().max(1) as f64;
        let d = (a.mean() - b.mean()).abs();
        if se2 > 0.0 {
            d / se2.sqrt()
        } else {
            f64::INFINITY
        }
    }
}

/// Groups timings of disjoint rank sets into at most
/// [`MAX_TIMING_VARIANTS`]: the closest two neighbours (in the order of their
/// keys) that compute alike merge first, and while there are too many, the
/// closest two. One group left means no variants.
fn cluster_variants(vs: Vec<TimingVariant>) -> Vec<TimingVariant> {
    let mut keyed: Vec<(f64, TimingVariant)> = vs.into_iter().map(|v| (v.key(), v)).collect();
    while keyed.len() > 1 {
        // (A merged group's key moves between its parts': sort again.)
        keyed.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.ranks.min().cmp(&b.1.ranks.min()))
        });
        let gap = |i: usize| keyed[i + 1].0 - keyed[i].0;
        let closest = |ok: &dyn Fn(usize) -> bool| {
            (0..keyed.len() - 1)
                .filter(|&i| ok(i))
                .min_by(|&a, &b| gap(a).total_cmp(&gap(b)))
        };
        let pick = closest(&|i| keyed[i].1.alike(&keyed[i + 1].1)).or_else(|| {
            (keyed.len() > MAX_TIMING_VARIANTS)
                .then(|| closest(&|_| true))
                .flatten()
        });
        let Some(i) = pick else { break };
        let (_, b) = keyed.remove(i + 1);
        let a = &mut keyed[i].1;
        a.ranks = a.ranks.union(&b.ranks);
        a.timing.merge(&b.timing);
        keyed[i].0 = keyed[i].1.key();
    }
    if keyed.len() <= 1 {
        return Vec::new();
    }
    keyed.into_iter().map(|(_, v)| v).collect()
}

/// How the merge builds and unites [`EventNode`]s.
trait EventNodeMerge {
    fn timing_groups(&mut self) -> Vec<TimingVariant>;
    fn from_parts(ranks: &RankList, leaf: &Leaf) -> EventNode;
    fn merge(&mut self, o: EventNode);
}

impl EventNodeMerge for EventNode {
    /// This node's timing as groups of ranks (one group when all are
    /// alike), to be clustered with another node's in a merge.
    fn timing_groups(&mut self) -> Vec<TimingVariant> {
        if self.variants.is_empty() {
            vec![TimingVariant {
                ranks: self.ranks.clone(),
                timing: self.timing.map_dists(|_, _, d| d.clone()),
            }]
        } else {
            std::mem::take(&mut self.variants)
        }
    }

    fn from_parts(ranks: &RankList, leaf: &Leaf) -> EventNode {
        EventNode {
            ranks: ranks.clone(),
            shape: leaf.shape,
            fixed: leaf
                .fixed
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    if leaf.shape.is_peer_or_local(i) {
                        Param::single_peer(ranks, s.clone())
                    } else {
                        Param::single(ranks, s.clone())
                    }
                })
                .collect(),
            lists: leaf
                .lists
                .iter()
                .map(|l| ListParam {
                    width: l.width,
                    lens: Param::single(ranks, l.lens.clone()),
                    cols: l
                        .cols
                        .iter()
                        .map(|c| Param::single(ranks, c.clone()))
                        .collect(),
                })
                .collect(),
            timing: (*leaf.timing).clone(),
            variants: Vec::new(),
        }
    }

    fn merge(&mut self, mut o: EventNode) {
        let mut groups = self.timing_groups();
        groups.extend(o.timing_groups());
        self.variants = cluster_variants(groups);
        self.ranks = self.ranks.union(&o.ranks);
        for (i, (a, b)) in self.fixed.iter_mut().zip(o.fixed).enumerate() {
            a.merge(b, self.shape.is_peer_param(i));
        }
        for (li, (a, b)) in self.lists.iter_mut().zip(o.lists).enumerate() {
            a.lens.merge(b.lens, false);
            for (j, col) in b.cols.into_iter().enumerate() {
                match a.cols.get_mut(j) {
                    Some(c) => c.merge(col, self.shape.is_peer_item(li, j)),
                    None => a.cols.push(col),
                }
            }
        }
        self.timing.merge(&o.timing);
    }
}

/// How the merge builds, wraps and aligns [`MNode`]s.
trait MNodeMerge {
    fn from_node(ranks: &RankList, n: &Node) -> MNode;
    fn wrap_depth(&self) -> usize;
    fn key(&self) -> u64;
    fn wrap(self) -> MNode;
    fn exec_lengths(&self) -> Vec<(RankList, u64)>;
    fn shapes(&self, out: &mut Vec<u64>);
}

impl MNodeMerge for MNode {
    fn from_node(ranks: &RankList, n: &Node) -> MNode {
        match n {
            Node::Single(s) => MNode::Event(Box::new(EventNode::from_parts(
                ranks,
                &Leaf::from_single(s.as_ref().clone()),
            ))),
            Node::Leaf(l) => MNode::Event(Box::new(EventNode::from_parts(ranks, l))),
            Node::Loop(l) => {
                let mut counts = l.done.clone();
                counts.push(l.cur as i64);
                MNode::Loop(Box::new(LoopNode {
                    ranks: ranks.clone(),
                    counts: Param::single(ranks, counts),
                    body: l.body.iter().map(|b| MNode::from_node(ranks, b)).collect(),
                }))
            }
            _ => unreachable!("a node kind the merge does not know"),
        }
    }

    /// Number of one-node loops around the node that decides the structure.
    fn wrap_depth(&self) -> usize {
        let mut n = self;
        let mut d = 0;
        while let MNode::Loop(l) = n
            && l.body.len() == 1
        {
            n = &l.body[0];
            d += 1;
        }
        d
    }

    /// The structural key: equal for nodes with the same calls in the same
    /// loop structure (iteration counts, parameters and one-node loop
    /// wrappers aside), so that alignment can match them.
    fn key(&self) -> u64 {
        match self {
            MNode::Event(e) => e.shape.hash64(),
            MNode::Loop(l) if l.body.len() == 1 => l.body[0].key(),
            MNode::Loop(l) => {
                let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ l.body.len() as u64;
                for b in &l.body {
                    h = trace::codec::mix64(h.rotate_left(5) ^ b.key());
                }
                h
            }
            _ => unreachable!("a node kind the merge does not know"),
        }
    }

    /// Wraps the node in a loop that runs it once per execution, which
    /// changes nothing in any rank's expansion but lets it merge with a loop
    /// of one node (a rank whose inner loop ran once per outer iteration).
    fn wrap(self) -> MNode {
        let counts = Param {
            phased: Vec::new(),
            variants: self
                .exec_lengths()
                .into_iter()
                .map(|(ranks, n)| Variant {
                    ranks,
                    abs: false,
                    seq: ValueSeq::constant(1, n),
                })
                .collect(),
        };
        MNode::Loop(Box::new(LoopNode {
            ranks: self.ranks().clone(),
            counts,
            body: vec![self],
        }))
    }

    /// Executions of the node per group of ranks.
    fn exec_lengths(&self) -> Vec<(RankList, u64)> {
        let p = match self {
            MNode::Event(e) => e.fixed.first(),
            MNode::Loop(l) => Some(&l.counts),
            _ => None,
        };
        p.map(|p| p.lengths().map(|(r, n)| (r.clone(), n)).collect())
            .unwrap_or_default()
    }

    /// Call shapes anywhere inside the node (for pairing loops).
    fn shapes(&self, out: &mut Vec<u64>) {
        match self {
            MNode::Event(e) => out.push(e.shape.hash64()),
            MNode::Loop(l) => l.body.iter().for_each(|b| b.shapes(out)),
            _ => {}
        }
    }
}

/// The one-rank merged trace of `t` (the leaf of the reduction tree).
pub fn from_rank(t: &Trace) -> MergedTrace {
    let rank = t.rank.max(0) as u32;
    MergedTrace {
        ranks: RankList::single(rank),
        nodes: t
            .nodes
            .iter()
            .map(|n| MNode::from_node(&RankList::single(rank), n))
            .collect(),
        spills: if t.spilled_mem > 0 {
            vec![Spill {
                rank,
                events: t.spilled_mem,
                bytes: t.spill_mem.clone(),
            }]
        } else {
            Vec::new()
        },
        lost: t.lost + t.spilled_out,
    }
}

/// The merged trace of a group of ranks that all recorded `t`'s events
/// in its location-independent form (peers relative to the executing
/// rank), with `t`'s timing taken as one rank's (its sample counts are
/// multiplied by the group's size): the building block of an extrapolated trace, where one
/// synthetic trace stands for every rank of a communication group
/// (Wu and Mueller 2012 §3.3), so that building the trace of a million ranks costs
/// as much as building the trace of one group.
///
/// Events the compressor spilled from its queue are not carried over: a
/// group trace is synthesised, never spilled. `None` if the trace has
/// spilled events or the group is empty.
pub fn from_group(t: &Trace, ranks: RankList) -> Option<MergedTrace> {
    if ranks.is_empty() || t.spilled_mem > 0 || t.spilled_out > 0 {
        return None;
    }
    let mut nodes: Vec<MNode> = t
        .nodes
        .iter()
        .map(|n| MNode::from_node(&ranks, n))
        .collect();
    // The trace's timing describes one rank: the group has `len` of them.
    fn weigh(n: &mut MNode, k: u64) {
        match n {
            MNode::Event(e) => {
                let total = e.timing.total().count();
                e.timing = e.timing.with_count(total.saturating_mul(k));
            }
            MNode::Loop(l) => l.body.iter_mut().for_each(|b| weigh(b, k)),
            _ => {}
        }
    }
    nodes.iter_mut().for_each(|n| weigh(n, ranks.len()));
    Some(MergedTrace {
        nodes,
        ranks,
        spills: Vec::new(),
        lost: 0,
    })
}

/// Merges the traces of two disjoint sets of ranks into one. The result
/// expands, for every rank of either side, to exactly that rank's events,
/// whatever the order of merges.
pub fn traces(one: MergedTrace, other: MergedTrace) -> MergedTrace {
    let (a, b) = if one.ranks.min() <= other.ranks.min() {
        (one, other)
    } else {
        (other, one)
    };
    let mut spills = a.spills;
    spills.extend(b.spills);
    spills.sort_by_key(|s| s.rank);
    MergedTrace {
        ranks: a.ranks.union(&b.ranks),
        nodes: merge_seq(a.nodes, b.nodes),
        spills,
        lost: a.lost.saturating_add(b.lost),
    }
}

/// Merges the trace files of two disjoint sets of ranks (see [`traces`]);
/// call sites, file paths and partial ranks are united, the rest of the
/// metadata is `one`'s.
pub fn files(one: TraceFile, other: TraceFile) -> TraceFile {
    let mut meta = one.meta;
    trace::file::unite_labels(&mut meta.sites, other.meta.sites);
    trace::file::unite_labels(&mut meta.paths, other.meta.paths);
    meta.partial.extend(other.meta.partial);
    meta.partial.sort_by_key(|p| p.rank);
    let mut timelines = one.timelines;
    timelines.extend(other.timelines);
    timelines.sort_by_key(|t| t.rank);
    let mut series = one.series;
    series.extend(other.series);
    series.sort_by_key(|s| s.rank);
    TraceFile {
        meta,
        trace: traces(one.trace, other.trace),
        timelines,
        series,
    }
}

/// Merges the per-rank parts of a whole run (part `r` is rank `r`'s) as
/// the tracer's reduction at `MPI_Finalize` does: in its binomial order,
/// each sender's part passing through its wire form, so that its timing
/// is quantised exactly as it is on the network (the receiver's own part
/// is not). A trace built outside a run (imported) thus equals a traced
/// run's of the same events to the last bit. `None` for no parts.
pub fn as_traced(parts: Vec<TraceFile>) -> Result<Option<TraceFile>, Error> {
    let parts = parts.into_iter().map(Ok).collect();
    merge_binomial(parts, |a: Result<TraceFile, Error>, b| {
        Ok(files(a?, b?.quantised()))
    })
    .transpose()
}

/// The trace file of a job whose rank `r` called `ranks[r]`, built as
/// the tracer builds it (each rank compressed on its own with the
/// default configuration, then merged): how tests and tools make
/// traces of known content without MPI. The caller sets each event as
/// the tracer would record it (its `comm_rank` on a communicator call,
/// say). Fails on the first event a rank's compressor rejects.
pub fn from_rank_events(ranks: Vec<Vec<trace::Event>>) -> Result<TraceFile, Error> {
    let p = ranks.len() as u32;
    let mut merged: Option<MergedTrace> = None;
    for (r, events) in ranks.into_iter().enumerate() {
        let mut c = crate::Compressor::new(r as i32, crate::Config::default());
        for e in &events {
            c.push(e)?;
        }
        let t = from_rank(&c.into_trace()?);
        merged = Some(match merged {
            None => t,
            Some(m) => traces(m, t),
        });
    }
    let mut trace = merged.unwrap_or_default();
    trace.normalize();
    let mut f = TraceFile {
        trace,
        ..TraceFile::default()
    };
    f.meta.world_size = p;
    Ok(f)
}

/// Merges the one-rank files a job's ranks wrote into `TRACE.d` (the
/// snapshots of a job that died, or the files of ranks that could not
/// merge at `MPI_Finalize`) into one trace, in the order the tracer's
/// own merge would use. The files must come from one run: the same
/// command line and job size, each rank once and inside the job. The
/// result's [`Meta::partial`](trace::Meta::partial) lists every rank that
/// ends early; its wall time is the latest part's.
pub fn rank_files(parts: Vec<TraceFile>) -> Result<TraceFile, Error> {
    let Some(first) = parts.first() else {
        return Err(Error::Corrupt("no rank files to merge".into()));
    };
    let (size, command) = (first.meta.world_size, first.meta.command.clone());
    let mut seen = std::collections::BTreeSet::new();
    for p in &parts {
        if p.meta.world_size != size || p.meta.command != command {
            return Err(Error::Corrupt(format!(
                "rank files of different runs: {} ranks running `{}`, and {} ranks running `{}`",
                size,
                command.join(" "),
                p.meta.world_size,
                p.meta.command.join(" ")
            )));
        }
        for r in p.trace.ranks().iter() {
            if r >= size {
                return Err(Error::Corrupt(format!(
                    "a rank file holds rank {r}, outside the job's {size} ranks"
                )));
            }
            if !seen.insert(r) {
                return Err(Error::Corrupt(format!("rank {r} is in two rank files")));
            }
        }
    }
    let wall_ns = parts.iter().map(|p| p.meta.wall_ns).max().unwrap_or(0);
    let mut parts = parts;
    parts.sort_by_key(|p| p.trace.ranks().min());
    let mut out = merge_binomial(parts, files)
        .ok_or_else(|| Error::Corrupt("no rank files to merge".into()))?;
    out.trace.normalize();
    out.meta.wall_ns = wall_ns;
    Ok(out)
}

/// Mutators for [`crate::hostile`]: well-formed traces with hostile sizes
/// are built by rewriting a real one, which needs the private fields.
#[cfg(feature = "fixtures")]
pub(crate) trait TraceRewrite {
    fn nodes_mut(&mut self) -> &mut Vec<MNode>;
}

#[cfg(feature = "fixtures")]
impl TraceRewrite for MergedTrace {
    fn nodes_mut(&mut self) -> &mut Vec<MNode> {
        &mut self.nodes
    }
}

/// The node rewrites of [`crate::hostile`].
#[cfg(feature = "fixtures")]
pub(crate) trait NodeRewrite {
    fn wrapped(self) -> MNode;
    fn scale_executions(&mut self, f: u64);
    fn stretch_loop(&mut self, f: u64, consistent: bool) -> bool;
}

#[cfg(feature = "fixtures")]
impl NodeRewrite for MNode {
    /// The node inside a loop of one iteration per execution.
    fn wrapped(self) -> MNode {
        self.wrap()
    }

    /// Every execution of the node, and of everything inside it, happens
    /// `f` times as often (each sequence becomes a constant one of its
    /// first value: the values do not matter, the sizes do).
    fn scale_executions(&mut self, f: u64) {
        fn scale(p: &mut Param, f: u64) {
            for v in &mut p.variants {
                let first = v.seq.get(0).unwrap_or(0);
                v.seq = ValueSeq::constant(first, v.seq.len().saturating_mul(f));
            }
            for g in &mut p.phased {
                g.phases.iter_mut().for_each(|ph| scale(ph, f));
            }
        }
        match self {
            MNode::Event(e) => e.fixed.iter_mut().for_each(|p| scale(p, f)),
            MNode::Loop(l) => {
                scale(&mut l.counts, f);
                l.body.iter_mut().for_each(|b| b.scale_executions(f));
            }
            _ => {}
        }
    }

    /// A loop's counts multiplied by `f`: with `consistent`, its body
    /// executes `f` times as often too; without, the counts lie.
    fn stretch_loop(&mut self, f: u64, consistent: bool) -> bool {
        let MNode::Loop(l) = self else { return false };
        for v in &mut l.counts.variants {
            let first = v.seq.get(0).unwrap_or(0);
            let c = i64::try_from(f).unwrap_or(i64::MAX).saturating_mul(first);
            v.seq = ValueSeq::constant(c, v.seq.len());
        }
        if consistent {
            l.body.iter_mut().for_each(|b| b.scale_executions(f));
        }
        true
    }
}

// ----- alignment ----------------------------------------------------------

/// Above this many cells (`m·n`) the exact LCS gives way to patience anchors.
const DP_LIMIT: usize = 1 << 22;
/// Recursion limit of the patience alignment.
const PATIENCE_DEPTH: u32 = 64;

/// Merges two node sequences of disjoint rank sets.
fn merge_seq(a: Vec<MNode>, b: Vec<MNode>) -> Vec<MNode> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let ka: Vec<u64> = a.iter().map(MNode::key).collect();
    let kb: Vec<u64> = b.iter().map(MNode::key).collect();
    let mut pairs = Vec::new();
    align(&ka, 0, &kb, 0, &mut pairs, 0);
    let mut a: Vec<Option<MNode>> = a.into_iter().map(Some).collect();
    let mut b: Vec<Option<MNode>> = b.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    let ends = (a.len(), b.len());
    for (pi, pj) in pairs.into_iter().chain(std::iter::once(ends)) {
        gap(&mut out, &mut a[i..pi], &mut b[j..pj]);
        if pi < ends.0 {
            let (Some(x), Some(y)) = (a[pi].take(), b[pj].take()) else {
                continue;
            };
            merge_pair(&mut out, x, y);
        }
        i = pi + 1;
        j = pj + 1;
    }
    out
}

/// Merges two nodes that alignment matched; nodes whose keys collided
/// without being the same call stay apart.
fn merge_pair(out: &mut Vec<MNode>, mut x: MNode, mut y: MNode) {
    while x.wrap_depth() < y.wrap_depth() {
        x = x.wrap();
    }
    while y.wrap_depth() < x.wrap_depth() {
        y = y.wrap();
    }
    match (x, y) {
        (MNode::Event(mut e), MNode::Event(f)) if e.shape == f.shape => {
            e.merge(*f);
            out.push(MNode::Event(e));
        }
        (MNode::Loop(mut l), MNode::Loop(m)) => {
            let m = *m;
            l.ranks = l.ranks.union(&m.ranks);
            l.counts.merge(m.counts, false);
            let body = std::mem::take(&mut l.body);
            l.body = merge_seq(body, m.body);
            out.push(MNode::Loop(l));
        }
        (x, y) => branches(out, vec![x], vec![y]),
    }
}

/// Handles nodes that alignment left unmatched between two matches: loops
/// that share calls are paired and merged (in order), the rest become
/// branches.
fn gap(out: &mut Vec<MNode>, a: &mut [Option<MNode>], b: &mut [Option<MNode>]) {
    let shapes = |n: &Option<MNode>| -> Option<Vec<u64>> {
        match n {
            Some(n @ MNode::Loop(_)) => {
                let mut v = Vec::new();
                n.shapes(&mut v);
                v.sort_unstable();
                v.dedup();
                Some(v)
            }
            _ => None,
        }
    };
    let sa: Vec<Option<Vec<u64>>> = a.iter().map(shapes).collect();
    let sb: Vec<Option<Vec<u64>>> = b.iter().map(shapes).collect();
    let mut pairs = Vec::new();
    let mut j0 = 0;
    for (i, x) in sa.iter().enumerate() {
        let Some(x) = x else { continue };
        if let Some(j) = (j0..sb.len()).find(|&j| {
            sb[j]
                .as_ref()
                .is_some_and(|y| y.iter().any(|h| x.binary_search(h).is_ok()))
        }) {
            pairs.push((i, j));
            j0 = j + 1;
        }
    }
    let (mut i, mut j) = (0, 0);
    for (pi, pj) in pairs.into_iter().chain(std::iter::once((a.len(), b.len()))) {
        let xa: Vec<MNode> = a[i..pi].iter_mut().filter_map(Option::take).collect();
        let xb: Vec<MNode> = b[j..pj].iter_mut().filter_map(Option::take).collect();
        branches(out, xa, xb);
        if pi < a.len()
            && let (Some(x), Some(y)) = (a[pi].take(), b[pj].take())
        {
            merge_pair(out, x, y);
        }
        i = pi + 1;
        j = pj + 1;
    }
}

/// Places two runs of nodes with disjoint ranks side by side: the run whose
/// lowest rank is lower comes first (Wu and Mueller 2012, Algorithm 1).
fn branches(out: &mut Vec<MNode>, a: Vec<MNode>, b: Vec<MNode>) {
    let low = |v: &[MNode]| v.iter().filter_map(|n| n.ranks().min()).min();
    let (first, second) = match (low(&a), low(&b)) {
        (Some(x), Some(y)) if y < x => (b, a),
        _ => (a, b),
    };
    out.extend(first);
    out.extend(second);
}

/// What one rank does in one round of the binomial reduction tree that
/// merges per-rank traces: the tracer's merge at `MPI_Finalize` (over
/// messages) and [`merge_binomial`] (in memory) follow the same tree, so a
/// trace built outside a run merges exactly as a traced one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinomialStep {
    /// Send what it holds to this rank, and leave the reduction.
    SendTo(u64),
    /// Receive this rank's part and merge it after its own.
    ReceiveFrom(u64),
    /// Nothing this round (no partner, or it has left).
    Idle,
}

/// Rank `rank`'s part in the round of distance `step` (1, 2, 4, ... below
/// `size`) of the binomial tree over `size` ranks: a rank with `rank mod
/// 2·step = step` sends to `rank - step` and leaves; one with `rank mod
/// 2·step = 0` receives from `rank + step` if that rank exists. After
/// `ceil(log2 size)` rounds rank 0 holds everything.
pub fn binomial_step(rank: u64, size: u64, step: u64) -> BinomialStep {
    if step == 0 {
        return BinomialStep::Idle;
    }
    let twice = step.saturating_mul(2);
    if rank % twice == step {
        BinomialStep::SendTo(rank - step)
    } else if rank.is_multiple_of(twice) && rank + step < size {
        BinomialStep::ReceiveFrom(rank + step)
    } else {
        BinomialStep::Idle
    }
}

/// The round distances of the binomial tree over `size` ranks: 1, 2, 4, ...
/// below `size`.
pub fn binomial_rounds(size: u64) -> impl Iterator<Item = u64> {
    std::iter::successors(Some(1u64), |s| s.checked_mul(2)).take_while(move |s| *s < size)
}

/// Merges per-rank parts (part `r` is rank `r`'s) in the tracer's binomial
/// reduction order ([`binomial_step`]), so that traces built outside a run
/// (imported, extrapolated, recovered) merge exactly as a traced one would.
/// The merges of one round are independent, as they are on the ranks of a
/// job, and run on all cores (each the same merge of the same two parts,
/// so the result does not depend on the threads): one after the other,
/// merging smg1024's 1,024 imported ranks was half of its import. `None`
/// for no parts.
pub fn merge_binomial<T: Send>(parts: Vec<T>, merge: impl Fn(T, T) -> T + Sync) -> Option<T> {
    let n = parts.len() as u64;
    let mut parts: Vec<Option<T>> = parts.into_iter().map(Some).collect();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    for step in binomial_rounds(n) {
        let mut pairs: Vec<(usize, T, T)> = Vec::new();
        for r in (0..n).step_by((2 * step) as usize) {
            if let BinomialStep::ReceiveFrom(from) = binomial_step(r, n, step)
                && let (Some(a), Some(b)) = (parts[r as usize].take(), parts[from as usize].take())
            {
                pairs.push((r as usize, a, b));
            }
        }
        let per = pairs.len().div_ceil(threads).max(1);
        let merge = &merge;
        let merged: Vec<(usize, T)> = if threads <= 1 || pairs.len() <= 1 {
            pairs
                .into_iter()
                .map(|(r, a, b)| (r, merge(a, b)))
                .collect()
        } else {
            let mut chunks: Vec<Vec<(usize, T, T)>> = Vec::new();
            let mut it = pairs.into_iter().peekable();
            while it.peek().is_some() {
                chunks.push(it.by_ref().take(per).collect());
            }
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunks
                    .into_iter()
                    .map(|chunk| {
                        scope.spawn(move || {
                            chunk
                                .into_iter()
                                .map(|(r, a, b)| (r, merge(a, b)))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
        };
        for (r, m) in merged {
            parts[r] = Some(m);
        }
    }
    parts.into_iter().next().flatten()
}

/// The matched index pairs of a common subsequence of two key sequences,
/// in increasing order: the longest one where the table stays within
/// `DP_LIMIT` (4,194,304) cells, patience anchors beyond (common prefix and suffix
/// first, in linear time). The alignment the merge uses, for other tools
/// that align sequences (lossy extrapolation).
pub fn common_subsequence(a: &[u64], b: &[u64]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    align(a, 0, b, 0, &mut out, 0);
    out
}

/// Appends to `out` the matched index pairs (offset by `ao`, `bo`) of a
/// common subsequence of `a` and `b`, in increasing order.
fn align(a: &[u64], ao: usize, b: &[u64], bo: usize, out: &mut Vec<(usize, usize)>, depth: u32) {
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    out.extend((0..p).map(|k| (ao + k, bo + k)));
    let (a, b) = (&a[p..], &b[p..]);
    let s = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[..a.len() - s], &b[..b.len() - s]);
    let (ao, bo) = (ao + p, bo + p);
    if !am.is_empty() && !bm.is_empty() {
        if am.len().saturating_mul(bm.len()) <= DP_LIMIT {
            lcs(am, ao, bm, bo, out);
        } else if depth < PATIENCE_DEPTH {
            patience(am, ao, bm, bo, out, depth);
        }
    }
    out.extend((0..s).map(|k| (ao + am.len() + k, bo + bm.len() + k)));
}

/// Exact longest common subsequence by dynamic programming (`O(m·n)` over
/// compressed nodes, bounded by [`DP_LIMIT`]).
fn lcs(a: &[u64], ao: usize, b: &[u64], bo: usize, out: &mut Vec<(usize, usize)>) {
    let (m, n) = (a.len(), b.len());
    let w = n + 1;
    // t[i*w + j] = LCS length of a[i..] and b[j..].
    let mut t = vec![0u32; (m + 1) * w];
    for i in (0..m).rev() {
        for j in (0..n).rev() {
            t[i * w + j] = if a[i] == b[j] {
                t[(i + 1) * w + j + 1] + 1
            } else {
                t[(i + 1) * w + j].max(t[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < m && j < n {
        if a[i] == b[j] {
            out.push((ao + i, bo + j));
            i += 1;
            j += 1;
        } else if t[(i + 1) * w + j] >= t[i * w + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
}

/// Patience alignment for long sequences: keys that occur exactly once on
/// each side anchor the alignment (longest increasing subsequence of their
/// positions), and the stretches between anchors are aligned recursively.
fn patience(a: &[u64], ao: usize, b: &[u64], bo: usize, out: &mut Vec<(usize, usize)>, depth: u32) {
    let mut count: HashMap<u64, (u32, u32, usize, usize)> = HashMap::new();
    for (i, k) in a.iter().enumerate() {
        let e = count.entry(*k).or_insert((0, 0, i, 0));
        e.0 += 1;
    }
    for (j, k) in b.iter().enumerate() {
        if let Some(e) = count.get_mut(k) {
            e.1 += 1;
            e.3 = j;
        }
    }
    let mut uniq: Vec<(usize, usize)> = count
        .values()
        .filter(|e| e.0 == 1 && e.1 == 1)
        .map(|e| (e.2, e.3))
        .collect();
    uniq.sort_unstable();
    let anchors = longest_increasing(&uniq);
    if anchors.is_empty() {
        return;
    }
    let (mut i, mut j) = (0, 0);
    for (pi, pj) in anchors {
        align(&a[i..pi], ao + i, &b[j..pj], bo + j, out, depth + 1);
        out.push((ao + pi, bo + pj));
        i = pi + 1;
        j = pj + 1;
    }
    align(&a[i..], ao + i, &b[j..], bo + j, out, depth + 1);
}

/// The longest subsequence of `v` (sorted by `.0`) increasing in `.1`.
fn longest_increasing(v: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut tails: Vec<usize> = Vec::new(); // index into v of the tail of each length
    let mut prev = vec![usize::MAX; v.len()];
    for (k, &(_, y)) in v.iter().enumerate() {
        let pos = tails.partition_point(|&t| v[t].1 < y);
        if pos > 0 {
            prev[k] = tails[pos - 1];
        }
        if pos == tails.len() {
            tails.push(k);
        } else {
            tails[pos] = k;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut k = tails.last().copied().unwrap_or(usize::MAX);
    while k != usize::MAX {
        out.push(v[k]);
        k = prev[k];
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compressor, Config};
    use trace::PathClass;
    use trace::tree::EventTiming;
    use trace::{Event, Op};

    /// The binomial tree, by hand: each rank but 0 sends once, to a rank
    /// that receives from it in the same round, and rank 0 ends with every
    /// rank after ceil(log2 P) rounds, merged in rank order.
    #[test]
    fn the_binomial_tree_gathers_every_rank_into_rank_0() {
        assert_eq!(binomial_rounds(1).count(), 0);
        assert_eq!(binomial_rounds(5).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(binomial_step(6, 7, 2), BinomialStep::SendTo(4));
        assert_eq!(binomial_step(4, 7, 2), BinomialStep::ReceiveFrom(6));
        assert_eq!(binomial_step(4, 6, 2), BinomialStep::Idle);
        for n in 1..40u64 {
            let mut held: Vec<Vec<u64>> = (0..n).map(|r| vec![r]).collect();
            let mut sent = vec![0; n as usize];
            for step in binomial_rounds(n) {
                for r in 0..n {
                    match binomial_step(r, n, step) {
                        BinomialStep::SendTo(to) => {
                            assert_eq!(binomial_step(to, n, step), BinomialStep::ReceiveFrom(r));
                            sent[r as usize] += 1;
                        }
                        BinomialStep::ReceiveFrom(from) => {
                            let got = std::mem::take(&mut held[from as usize]);
                            held[r as usize].extend(got);
                        }
                        BinomialStep::Idle => {}
                    }
                }
            }
            assert_eq!(held[0], (0..n).collect::<Vec<_>>(), "{n} ranks");
            assert!(
                sent[1..].iter().all(|&s| s == 1) && sent[0] == 0,
                "{n}: {sent:?}"
            );
            let by_fold = merge_binomial((0..n).map(|r| vec![r]).collect(), |mut a, b| {
                a.extend(b);
                a
            });
            assert_eq!(by_fold.unwrap_or_default(), held[0]);
        }
    }

    #[test]
    fn expanded_events_know_their_loop_iteration_vector() {
        // Init, 3 x (2 x Barrier, Bcast), Finalize.
        let mut c = Compressor::new(0, Config::default());
        let push = |c: &mut Compressor, op: Op| c.push(&Event::new(op)).unwrap();
        push(&mut c, Op::Init);
        for _ in 0..3 {
            push(&mut c, Op::Barrier);
            push(&mut c, Op::Barrier);
            push(&mut c, Op::Bcast);
        }
        push(&mut c, Op::Finalize);
        let t = c.into_trace().unwrap();
        let mut ex = t.expand();
        let mut got = Vec::new();
        while ex.next().is_some() {
            got.push(ex.loop_path().collect::<Vec<_>>());
        }
        let iters = |p: &Vec<(u32, u64)>| p.iter().map(|x| x.1).collect::<Vec<_>>();
        let want: Vec<Vec<u64>> = vec![
            vec![],
            vec![0, 0],
            vec![0, 1],
            vec![0],
            vec![1, 0],
            vec![1, 1],
            vec![1],
            vec![2, 0],
            vec![2, 1],
            vec![2],
            vec![],
        ];
        assert_eq!(got.iter().map(iters).collect::<Vec<_>>(), want);
        // The outer loop is the same loop throughout, the inner one too.
        assert_eq!(got[1][0].0, got[9][0].0);
        assert_eq!(got[1][1].0, got[8][1].0);
        assert_ne!(got[1][0].0, got[1][1].0);
    }

    #[test]
    fn expanded_events_carry_their_path_class_and_merged_timing() {
        let mut merged: Option<MergedTrace> = None;
        for rank in 0..2 {
            let mut c = Compressor::new(rank, Config::default());
            let mut init = Event::new(Op::Init);
            init.time.compute_ns = 7;
            c.push(&init).unwrap();
            for i in 0..4u64 {
                let mut e = Event::new(Op::Barrier);
                e.site = 1;
                e.time.compute_ns = 1000 * (i + 1);
                e.time.dur_ns = 10;
                c.push(&e).unwrap();
            }
            let t = from_rank(&c.into_trace().unwrap());
            merged = Some(match merged {
                Some(m) => traces(m, t),
                None => t,
            });
        }
        let m = merged.unwrap();
        let t = m.rank_trace(1).unwrap();
        let mut ex = t.expand();
        let mut classes = Vec::new();
        while let Some(ev) = ex.next() {
            match ex.timing().unwrap() {
                EventTiming::Stats(pt, class) => {
                    classes.push(class);
                    // Merged over both ranks: the loop's first iteration
                    // took 1000 ns, its last 4000 ns, on each of them.
                    if ev.op == Op::Barrier {
                        assert_eq!(pt.first().compute().stats().mean(), 1000.0);
                        assert_eq!(pt.first().count(), 2);
                        assert_eq!(pt.last().compute().stats().mean(), 4000.0);
                    }
                }
                EventTiming::Exact { .. } => panic!("merged events carry statistics"),
            }
        }
        use PathClass::*;
        assert_eq!(classes, [First, First, Steady, Steady, Last]);
    }

    /// A trace of `n` ranks: a loop of 50 Barriers with `loop_ns(rank)` of
    /// computation before each, then Finalize after `final_ns(rank)`.
    fn timed_ranks(
        n: i32,
        order: &[i32],
        loop_ns: impl Fn(i32) -> u64,
        final_ns: impl Fn(i32) -> u64,
    ) -> MergedTrace {
        let mut parts: Vec<MergedTrace> = Vec::new();
        for &rank in order.iter().filter(|&&r| r < n) {
            let mut c = Compressor::new(rank, Config::default());
            c.push(&Event::new(Op::Init)).unwrap();
            for _ in 0..50 {
                let mut e = Event::new(Op::Barrier);
                e.time.compute_ns = loop_ns(rank);
                c.push(&e).unwrap();
            }
            let mut f = Event::new(Op::Finalize);
            f.time.compute_ns = final_ns(rank);
            c.push(&f).unwrap();
            parts.push(from_rank(&c.into_trace().unwrap()));
        }
        let mut m = merge_binomial(parts, traces).unwrap();
        m.normalize();
        m
    }

    /// `m` as the file of a run of `world` ranks.
    fn file_of(m: &MergedTrace, world: u32) -> TraceFile {
        TraceFile {
            meta: trace::Meta {
                world_size: world,
                ..trace::Meta::default()
            },
            trace: m.clone(),
            timelines: Vec::new(),
            series: Vec::new(),
        }
    }

    /// The mean computation before each of `rank`'s events, as its
    /// projection gives them (what replay and the simulator draw from).
    fn rank_means(m: &MergedTrace, rank: u32) -> Vec<f64> {
        let t = m.rank_trace(rank).unwrap();
        let mut ex = t.expand();
        let mut out = Vec::new();
        while ex.next().is_some() {
            if let Some(EventTiming::Stats(pt, _)) = ex.timing() {
                out.push(pt.total().compute().stats().mean());
            }
        }
        out
    }

    fn finalize_node(m: &MergedTrace) -> &EventNode {
        event_node(m.nodes(), Op::Finalize).unwrap()
    }

    /// The first event node of `op` among `nodes`, loops' bodies included.
    fn event_node(nodes: &[MNode], op: Op) -> Option<&EventNode> {
        nodes.iter().find_map(|n| match n {
            MNode::Event(e) if e.shape().op() == op => Some(&**e),
            MNode::Loop(l) => event_node(l.body(), op),
            _ => None,
        })
    }

    /// Rank 0 verifying a result for 20 ms before Finalize while the others
    /// compute 100 ns: merged into one distribution, each rank would draw
    /// 20 ms with probability 1/4. With variants, each rank's projection
    /// carries its own group's timing; the node's merged timing and its
    /// slow instances are as before, and the result does not depend on
    /// the order of the merge.
    #[test]
    fn ranks_that_compute_differently_keep_their_own_timing() {
        let fin = |r: i32| if r == 0 { 20_000_000 } else { 100 };
        let m = timed_ranks(4, &[0, 1, 2, 3], |_| 5_000, fin);
        let node = finalize_node(&m);
        let vs = node.timing_variants();
        assert_eq!(vs.len(), 2, "{vs:?}");
        assert_eq!(vs[0].ranks().iter().collect::<Vec<_>>(), [0]);
        assert_eq!(vs[1].ranks().iter().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(vs[0].timing().total().compute().stats().mean(), 20e6);
        assert_eq!(vs[1].timing().total().compute().stats().mean(), 100.0);
        // The merged view is the mixture, as without variants.
        let all = node.timing().total();
        assert_eq!(all.count(), 4);
        assert_eq!(all.compute().stats().mean(), (20e6 + 300.0) / 4.0);
        // Each rank's projection: its own computation before Finalize
        // (the last event); the loop's Barrier is alike on every rank.
        for r in 0..4u32 {
            let means = rank_means(&m, r);
            assert_eq!(*means.last().unwrap(), fin(r as i32) as f64, "rank {r}");
            assert_eq!(means[1], 5_000.0, "rank {r}");
        }
        // The Barrier node has no variants: every rank computes alike.
        let barrier_variants = m.nodes().iter().any(|n| match n {
            MNode::Loop(l) => l.body().iter().any(|b| match b {
                MNode::Event(e) => !e.timing_variants().is_empty(),
                _ => false,
            }),
            _ => false,
        });
        assert!(!barrier_variants);
        // Another merge order gives the same groups.
        let other = timed_ranks(4, &[3, 1, 0, 2], |_| 5_000, fin);
        let groups = |m: &MergedTrace| -> Vec<Vec<u32>> {
            finalize_node(m)
                .timing_variants()
                .iter()
                .map(|v| v.ranks().iter().collect())
                .collect()
        };
        assert_eq!(groups(&m), groups(&other));
        // The file keeps them.
        let file = file_of(&m, 4);
        let back = trace::TraceFile::from_bytes(&file.to_bytes().unwrap()).unwrap();
        assert_eq!(groups(&back.trace), groups(&m));
        // (The file stores statistics quantised, to 0.1 % here.)
        for r in 0..4u32 {
            for (a, b) in rank_means(&back.trace, r).iter().zip(rank_means(&m, r)) {
                assert!((a - b).abs() <= 0.002 * b, "rank {r}: {a} against {b}");
            }
        }
    }

    /// A trace file keeps a distribution of negligible time as one bin and
    /// the ones that hold the run's time whole: twelve ranks spend 0.1 to
    /// 3.2 us before each of 50 Barriers (four bins in memory, under a
    /// thousandth of the run) and 1 to 1.55 s before Finalize.
    #[test]
    fn a_file_keeps_negligible_timing_as_one_bin_and_the_rest_whole() {
        let all: Vec<i32> = (0..12).collect();
        let m = timed_ranks(
            12,
            &all,
            |r| 100 << (r % 6),
            |r| 1_000_000_000 + 50_000_000 * r as u64,
        );
        let tf = file_of(&m, 12);
        let back = trace::TraceFile::from_bytes(&tf.to_bytes().unwrap()).unwrap();
        let wire = trace::TraceFile::from_wire(&tf.to_wire().unwrap()).unwrap();
        let node = |t: &MergedTrace, op: Op| -> trace::PathTiming {
            let e = event_node(t.nodes(), op).expect("the event is in the trace");
            e.timing().clone()
        };
        let (mem, file) = (node(&m, Op::Barrier), node(&back.trace, Op::Barrier));
        let (mem, file) = (mem.steady().compute(), file.steady().compute());
        assert_eq!(mem.histogram().bins().len(), 4, "{:?}", mem.histogram());
        // The merge between ranks keeps every bin, and so does a rank's
        // part of a job that `rankscale merge` merges later.
        let part =
            trace::TraceFile::from_bytes(&tf.to_bytes_with(trace::Packing::Part).unwrap()).unwrap();
        for t in [&wire.trace, &part.trace] {
            let kept = node(t, Op::Barrier);
            assert_eq!(kept.steady().compute().histogram().bins().len(), 4);
        }
        assert_eq!(file.histogram().bins().len(), 1, "{:?}", file.histogram());
        assert_eq!(file.stats().count(), mem.stats().count());
        for (a, b) in [
            (file.stats().mean(), mem.stats().mean()),
            (file.stats().min() as f64, mem.stats().min() as f64),
            (file.stats().max() as f64, mem.stats().max() as f64),
        ] {
            assert!((a - b).abs() <= 0.03 * b, "{a} against {b}");
        }
        let (mem, file) = (node(&m, Op::Finalize), node(&back.trace, Op::Finalize));
        let (mem, file) = (mem.first().compute(), file.first().compute());
        assert_eq!(mem.histogram().bins().len(), 2);
        assert_eq!(file.histogram().bins().len(), 2);
    }

    /// Within a factor of two (after the floor) ranks are alike and the
    /// event has no variants; twelve distinct levels are held to the
    /// maximum, as disjoint groups that cover every rank, neighbours in
    /// computation grouped together.
    #[test]
    fn variants_are_few_disjoint_and_cover_the_ranks() {
        let all: Vec<i32> = (0..12).collect();
        let m = timed_ranks(12, &all, |_| 1, |r| 4_000 + 500 * r as u64);
        assert!(finalize_node(&m).timing_variants().is_empty());
        // A call made once, 20 against 45 us: more than twice, but 25 us
        // over the whole run is noise.
        let m = timed_ranks(
            12,
            &all,
            |_| 1,
            |r| if r % 2 == 0 { 20_000 } else { 45_000 },
        );
        assert!(finalize_node(&m).timing_variants().is_empty());
        // Twice the computation, but the samples spread as widely (ranks
        // that lost their core now and then): noise, not other work.
        let m = timed_ranks(
            12,
            &all,
            |_| 1,
            |r| [1e6, 9e6, 2e6, 18e6][r as usize % 4] as u64,
        );
        assert!(finalize_node(&m).timing_variants().is_empty());
        // 1 against 30 us in each of 50 iterations (1.45 ms per rank) is not.
        let m = timed_ranks(12, &all, |r| if r < 6 { 1_000 } else { 30_000 }, |_| 1);
        let MNode::Loop(l) = &m.nodes()[1] else {
            panic!("the loop of Barriers")
        };
        let MNode::Event(b) = &l.body()[0] else {
            panic!("a Barrier")
        };
        let groups: Vec<Vec<u32>> = b
            .timing_variants()
            .iter()
            .map(|v| v.ranks().iter().collect())
            .collect();
        assert_eq!(groups, [(0..6).collect::<Vec<_>>(), (6..12).collect()]);
        // Six tight levels, two ranks each (1 ms, 4 ms, ... 1 s, one ns
        // apart within a pair): six groups, held to at most four.
        let level = |r: i32| (1_000_000u64 << (2 * (r / 2))) + (r % 2) as u64;
        let m = timed_ranks(12, &all, |_| 1, level);
        let node = finalize_node(&m);
        let vs = node.timing_variants();
        // (Groups the cap merged spread widely, and may then be alike to
        // a neighbour by Welch's t: four or fewer.)
        assert!(
            (2..=MAX_TIMING_VARIANTS).contains(&vs.len()),
            "{}",
            vs.len()
        );
        assert!(node.variants_cover_ranks());
        let mut seen: Vec<u32> = vs.iter().flat_map(|v| v.ranks().iter()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..12).collect::<Vec<_>>());
        // Groups are runs of neighbouring levels: rank 11 (1 s) is never
        // grouped with rank 0 (1 ms).
        for v in vs {
            let r: Vec<u32> = v.ranks().iter().collect();
            assert!(r.windows(2).all(|w| w[1] == w[0] + 1), "{r:?}");
        }
        // Each rank draws within its group's range.
        for r in 0..12u32 {
            let t = node.timing_for(r).total();
            let own = level(r as i32) as f64;
            let (lo, hi) = (
                t.compute().stats().min() as f64,
                t.compute().stats().max() as f64,
            );
            assert!(lo <= own && own <= hi, "rank {r}: {own} outside {lo}..{hi}");
        }
        // A file whose groups overlap or miss a rank is refused.
        let mut bad = node.clone();
        bad.variants[1].ranks = bad.variants[0].ranks.clone();
        assert!(!bad.variants_cover_ranks());
        let mut bad = node.clone();
        bad.variants.pop();
        assert!(!bad.variants_cover_ranks());
    }

    /// One rank's file of a loop of Allreduces with timings that vary
    /// from call to call (as a run's do), recorded as the tracer does.
    fn timed_rank(rank: u32) -> TraceFile {
        let what = crate::Recording {
            timeline_epoch: Some(0),
            ..crate::Recording::default()
        };
        let mut rec = crate::RankRecorder::new(rank, &what);
        let mut at = 0u64;
        for i in 0..500u64 {
            let mut e = trace::Event::new(trace::Op::Allreduce);
            e.comm_rank = rank as i32;
            e.send = Some(trace::Transfer::collective(1, 8));
            let x = (i * 7919 + u64::from(rank) * 104_729) % 1000;
            e.time = trace::Timing {
                enter_ns: at + 1000 + x * 37,
                dur_ns: 500 + x * x,
                compute_ns: 1000 + x * 37,
            };
            rec.push_spanning(&e, (e.time.enter_ns, e.time.enter_ns + e.time.dur_ns))
                .unwrap();
            at = e.time.enter_ns + e.time.dur_ns;
        }
        rec.finish().unwrap()
    }

    #[test]
    fn quantising_in_memory_is_the_wire_round_trip() {
        let (a, b) = (timed_rank(0), timed_rank(1));
        let through_wire = files(
            a.clone(),
            TraceFile::from_wire(&b.to_wire().unwrap()).unwrap(),
        );
        let in_memory = files(a.clone(), b.clone().quantised());
        assert_eq!(
            through_wire.to_wire().unwrap(),
            in_memory.to_wire().unwrap()
        );
        // The quantisation matters: merged exact, the file differs.
        assert_ne!(files(a, b).to_wire().unwrap(), in_memory.to_wire().unwrap());
    }

    #[test]
    fn lcs_and_patience_find_common_subsequences() {
        let a = [1, 2, 3, 4, 5, 6];
        let b = [1, 9, 3, 4, 7, 6];
        let mut out = Vec::new();
        align(&a, 0, &b, 0, &mut out, 0);
        assert_eq!(out, [(0, 0), (2, 2), (3, 3), (5, 5)]);
        let mut out = Vec::new();
        patience(&a, 0, &b, 0, &mut out, 0);
        assert_eq!(out, [(0, 0), (2, 2), (3, 3), (5, 5)]);
        assert_eq!(
            longest_increasing(&[(0, 3), (1, 1), (2, 2), (3, 0), (4, 5)]),
            [(1, 1), (2, 2), (4, 5)]
        );
    }
}
