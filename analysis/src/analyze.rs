//! `rankscale analyze`: patterns, phases, slow instances and Inspection
//! Affinity of one trace, as one serialisable report.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use trace::TraceFile;

use crate::clc::{ClcOptions, ClcReport, correct};
use crate::delay::DelayReport;
use crate::matching::match_run;
use crate::patterns::{PatternKey, Patterns, find_keyed};
use crate::phases::{Criterion, Limits, Segment, djs_curve, segment};
use crate::run::{Run, StepMatrix};
use crate::slow::{Cause, WaitIndex, blame};
use crate::waitstates::{WaitState, WaitSummary, summarize, wait_states};
use crate::{Error, ahp, outliers};

/// What `analyze` is asked for.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The modified z-score above which an instance is slow.
    pub cutoff: f64,
    /// Phase segmentation limits and criterion.
    pub limits: Limits,
    /// Correct clock-condition violations before timing anything
    /// (`None`: leave the timestamps as recorded).
    pub clock: Option<ClcOptions>,
    /// How patterns are keyed (each rank's events in order, by default).
    pub pattern_key: PatternKey,
    /// The memory the per-event tables may take: a trace whose events
    /// would need more is refused before they are allocated.
    pub memory: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cutoff: outliers::DEFAULT_CUTOFF,
            limits: Limits {
                criterion: Criterion::Aic,
                max_depth: 8,
                min_len: 8,
            },
            clock: Some(ClcOptions::default()),
            pattern_key: PatternKey::Ordered,
            memory: trace::Limits::DEFAULT_MEMORY,
        }
    }
}

/// A per-rank event string shared by a set of ranks.
#[derive(Clone, Debug, Serialize)]
pub struct RankString {
    /// The ranks (`0-3,8`).
    pub ranks: String,
    /// Their events in the pattern, e.g. `iR1·iS1·Wa`.
    pub events: String,
}

/// One communication pattern.
#[derive(Clone, Debug, Serialize)]
pub struct PatternReport {
    /// Its symbol, `CP1`, `CP2`, ... in order of first appearance.
    pub id: String,
    /// Ranks involved (`0-3,8`).
    pub ranks: String,
    /// Number of processes.
    pub np: usize,
    /// Number of events per instance.
    pub ne: usize,
    /// Instances.
    pub instances: usize,
    /// Bytes per instance: the distinct values, smallest first.
    pub bytes: Vec<u64>,
    /// Median instance duration, ns (with a timeline).
    pub median_ns: Option<i64>,
    /// Total time of its instances, ns (with a timeline).
    pub total_ns: Option<i64>,
    /// The per-rank event strings, ranks with equal strings grouped.
    pub strings: Vec<RankString>,
}

/// One node of the phase segmentation tree.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseNode {
    /// First instance (index into the pattern sequence).
    pub start: usize,
    /// One past the last instance.
    pub end: usize,
    /// The best split point (instances in the left part), with `D̂` and the
    /// criterion's strength (the split is made when the strength is > 0).
    pub split: Option<(usize, f64, f64)>,
    /// The two parts, when split.
    pub children: Vec<PhaseNode>,
}

/// One phase: a leaf of the segmentation tree.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    /// Its number, from 1.
    pub index: usize,
    /// First instance (index into the pattern sequence).
    pub start: usize,
    /// One past the last instance.
    pub end: usize,
    /// Start and end time, ns (with a timeline).
    pub time_ns: Option<(i64, i64)>,
    /// Its patterns with their instance counts, most frequent first.
    pub patterns: Vec<(String, usize)>,
}

/// One party of a slow instance: a rank and when.
#[derive(Clone, Debug, Serialize)]
pub struct RankAt {
    /// World rank.
    pub rank: u32,
    /// Time, ns.
    pub ns: i64,
}

/// One event of a slow instance.
#[derive(Clone, Debug, Serialize)]
pub struct EventAt {
    /// World rank.
    pub rank: u32,
    /// The event's token (as in the pattern strings).
    pub event: String,
    /// Its duration, ns.
    pub ns: i64,
}

/// A slow pattern instance (Alawneh and Hamou-Lhadj 2022 §4.2).
#[derive(Clone, Debug, Serialize)]
pub struct SlowReport {
    /// The pattern.
    pub pattern: String,
    /// Position in the pattern sequence.
    pub instance: usize,
    /// Which instance of its pattern it is (from 0).
    pub occurrence: usize,
    /// The first instance of its pattern: it pays for connection set-up
    /// and the first touch of buffers, so a slow one is expected.
    pub warm_up: bool,
    /// The phase it is in (from 1).
    pub phase: usize,
    /// The loop iteration vector of the first member's context.
    pub iterations: Vec<u64>,
    /// Bytes moved.
    pub bytes: u64,
    /// Duration, ns.
    pub duration_ns: i64,
    /// Median duration of the instances it was compared with, ns.
    pub median_ns: i64,
    /// Its modified z-score.
    pub z: f64,
    /// Instances it was compared with (same pattern, same bytes).
    pub compared: usize,
    /// First rank to start (a waiting process).
    pub first_start: RankAt,
    /// Last rank to start (a late process).
    pub last_start: RankAt,
    /// First rank to finish.
    pub first_finish: RankAt,
    /// Last rank to finish.
    pub last_finish: RankAt,
    /// The shortest event.
    pub shortest: EventAt,
    /// The longest event.
    pub longest: EventAt,
    /// The cause: the kind of wait the culprit caused most.
    pub cause: Option<Cause>,
    /// The rank that caused the most waiting.
    pub culprit: Option<u32>,
    /// How long the culprit itself waited in the previous instance of the
    /// pattern, ns: when that is a large part of this instance's excess
    /// over the median, the culprit was late because an earlier delay
    /// reached it (an idle wave), not through a delay of its own.
    pub culprit_waited_before_ns: i64,
    /// Waiting it caused, ns.
    pub caused_ns: i64,
    /// All waiting in the instance by kind, ns.
    pub waits_ns: BTreeMap<Cause, i64>,
}

/// The Inspection Affinity of a slow pattern within a phase (Alawneh and Hamou-Lhadj 2022 §4.3).
#[derive(Clone, Debug, Serialize)]
pub struct AffinityReport {
    /// The phase (from 1).
    pub phase: usize,
    /// The pattern.
    pub pattern: String,
    /// Severity: duration per byte of its slowest instance in the phase.
    pub severity: f64,
    /// Complexity: processes × events.
    pub complexity: f64,
    /// AHP weight of severity among the phase's slow patterns.
    pub severity_weight: f64,
    /// AHP weight of complexity.
    pub complexity_weight: f64,
    /// Angle of (complexity weight, severity weight), degrees.
    pub angle: f64,
    /// High, Medium or Low.
    pub level: String,
}

/// Waiting of one kind caused by one rank, over the whole trace.
#[derive(Clone, Debug, Serialize)]
pub struct WaitTotal {
    /// The kind of wait.
    pub cause: Cause,
    /// The rank that caused it (the late one).
    pub rank: u32,
    /// Total waiting time it caused, ns.
    pub ns: i64,
    /// Number of waits.
    pub count: usize,
}

/// One execution from a call's slow-instance reservoir (see
/// [`crate::run::SlowCall`]): available with or without a timeline.
#[derive(Clone, Debug, Serialize)]
pub struct SlowCallReport {
    /// The MPI call's name.
    pub call: String,
    /// Its call-site signature.
    pub site: u64,
    /// The world rank that ran this execution.
    pub rank: u32,
    /// The loop iteration vector of the execution, outermost loop first.
    pub iterations: Vec<u64>,
    /// Its time inside MPI, ns.
    pub mpi_ns: u64,
    /// The call's mean time inside MPI over all its executions, ns.
    pub mean_ns: f64,
    /// The call's executions on all ranks.
    pub executions: u64,
}

/// Everything `rankscale analyze` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Ranks in the trace.
    pub ranks: usize,
    /// Events analysed (without Init, Finalize and Pcontrol markers).
    pub events: usize,
    /// Whether the trace has a timeline.
    pub timeline: bool,
    /// The run's length on the timeline after the clock correction: from
    /// the first call's entry to the last call's return on any rank, ns (0
    /// without a timeline). The critical path and each rank's waiting fit
    /// in it, so a reader can judge them against it.
    pub run_ns: i64,
    /// Matched messages.
    pub messages: usize,
    /// Collective operations (each counted once for all members).
    pub collectives: usize,
    /// Sends without a receive and receives without a send.
    pub unmatched: (usize, usize),
    /// The patterns.
    pub patterns: Vec<PatternReport>,
    /// The pattern sequence, run-length encoded: (pattern, repeats).
    pub sequence: Vec<(String, usize)>,
    /// `D_JS` at every split point of the whole sequence.
    pub djs: Vec<f64>,
    /// The segmentation tree.
    pub tree: PhaseNode,
    /// The phases.
    pub phases: Vec<PhaseReport>,
    /// The modified z-score cut-off used.
    pub cutoff: f64,
    /// Slow instances, slowest (highest z) first.
    pub slow: Vec<SlowReport>,
    /// Inspection Affinity of the slow patterns, per phase.
    pub affinity: Vec<AffinityReport>,
    /// Waiting over all instances by kind and late rank, most first.
    pub waits: Vec<WaitTotal>,
    /// The trace's reservoir size K: how many slowest executions every call
    /// keeps (0 when the trace has no reservoirs).
    pub reservoir_k: usize,
    /// Every call's reservoir entries, by time above their call's mean,
    /// most first.
    pub slow_calls: Vec<SlowCallReport>,
    /// The clock-condition check and correction (all zero without a
    /// timeline, or when correction was turned off: then `checked` is 0).
    pub clock: ClcReport,
    /// Scalasca's wait states: per metric, call site and rank.
    pub wait_states: WaitSummary,
    /// Delay costs and the critical path.
    pub delays: DelayReport,
    /// What this trace could not support, and why.
    pub notes: Vec<String>,
}

/// Ranks as a reader writes them: `0-8`, `0,2,4-6`.
pub fn ranks_text(ranks: impl IntoIterator<Item = u32>) -> String {
    trace::ranklist::ranges_text(ranks, ",", "-")
}

fn cp(i: usize) -> String {
    format!("CP{}", i + 1)
}

fn tree(s: &Segment) -> PhaseNode {
    PhaseNode {
        start: s.start,
        end: s.end,
        split: s.best.map(|(i, d, st)| (s.start + i, d, st)),
        children: s
            .children
            .as_ref()
            .map(|c| vec![tree(&c.0), tree(&c.1)])
            .unwrap_or_default(),
    }
}

/// Per-rank data behind a report, for plots: too large for the JSON
/// report of a big run, small enough to draw.
#[derive(Clone, Debug)]
pub struct RunData {
    /// The world rank of each row and column below.
    pub ranks: Vec<u32>,
    /// Bytes sent from row to column.
    pub bytes: Vec<Vec<u64>>,
    /// MPI time per rank and time step of the dominant loop, when the trace
    /// has a timeline and such a loop.
    pub steps: Option<StepMatrix>,
}

/// Analyses `file`. `progress(stage, done, total)` is called as it goes.
pub fn analyze(
    file: &TraceFile,
    opts: &Options,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Report, Error> {
    analyze_with_data(file, opts, progress).map(|x| x.0)
}

/// [`analyze`] of a trace file the caller no longer needs: the file is
/// dropped once the run is read from it, so that the decoded trace (0.4 GB
/// of smg1024's 2.4 GB peak) is not held through the analysis.
pub fn analyze_owned(
    file: TraceFile,
    opts: &Options,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Report, Error> {
    let run = Run::from_file(&file, opts.memory, &mut |d, t| progress("reading", d, t))?;
    drop(file);
    analyze_run(run, opts, progress).map(|x| x.0)
}

/// [`analyze`], also returning the per-rank data for plots.
pub fn analyze_with_data(
    file: &TraceFile,
    opts: &Options,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<(Report, RunData), Error> {
    let run = Run::from_file(file, opts.memory, &mut |d, t| progress("reading", d, t))?;
    analyze_run(run, opts, progress)
}

/// The analysis of a run read from a trace file.
fn analyze_run(
    mut run: Run,
    opts: &Options,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<(Report, RunData), Error> {
    progress("matching", 0, 1);
    let m = match_run(&run);
    // Patterns are found, named and ordered on the recorded times, so that
    // their ids do not change with the clock correction; their instances'
    // spans are the corrected ones.
    progress("patterns", 0, 1);
    let mut p = find_keyed(&run, &m, opts.pattern_key);
    progress("clocks", 0, 1);
    let clock = match opts.clock {
        Some(o) => correct(&mut run, &m, o),
        None => ClcReport::default(),
    };
    if opts.clock.is_some() {
        p.respan(&run);
    }
    progress("phases", 0, 1);
    let seq: Vec<usize> = p.instances.iter().map(|i| i.pattern).collect();
    let seg = segment(&seq, opts.limits);
    let leaves = seg.phases();
    let phase_of = |i: usize| {
        leaves
            .iter()
            .position(|&(a, b)| a <= i && i < b)
            .unwrap_or(0)
    };
    progress("wait states", 0, 1);
    let all_waits = wait_states(&run, &m);
    let wi = WaitIndex::new(&all_waits);
    progress("delays", 0, 1);
    let delays = crate::delay::analyse(&run, &all_waits);
    progress("slow instances", 0, 1);
    let slow = slow_instances(&run, &wi, &p, opts.cutoff, &phase_of);
    let affinity = affinities(&p, &slow, leaves.len());
    let mut wait_totals: Vec<WaitTotal> = waits_in_instances(&run, &p, &all_waits)
        .into_iter()
        .map(|((cause, r), (ns, count))| WaitTotal {
            cause,
            rank: run.ranks[r].rank,
            ns,
            count,
        })
        .collect();
    wait_totals.sort_by_key(|w| (std::cmp::Reverse(w.ns), w.cause, w.rank));
    let mut notes = Vec::new();
    if !run.timed {
        notes.push(format!(
            "no timeline: patterns and phases are complete{}; pattern instance durations, slow \
             pattern instances with their causes, Inspection Affinity, the clock check, wait \
             states, delay costs and the critical path need a trace taken with \
             RANKSCALE_TIMELINE=1 (the report's desynchronisation views also work from \
             RANKSCALE_STEPS=1)",
            if run.reservoir_k > 0 {
                ", and the slowest calls come from the trace's reservoirs"
            } else {
                ""
            }
        ));
    }
    if run.reservoir_k == 0 {
        notes.push(
            "the trace keeps no slow-instance reservoirs (written by rankscale before format \
             version 3, or with RANKSCALE_SLOW_K=0)"
                .to_string(),
        );
    }
    let excess = |c: &crate::run::SlowCall| c.mpi_ns as f64 - c.mean_ns;
    let mut calls: Vec<&crate::run::SlowCall> = run.slow_calls.iter().collect();
    calls.sort_by(|a, b| excess(b).total_cmp(&excess(a)));
    let slow_calls = calls
        .into_iter()
        .map(|c| SlowCallReport {
            call: c.op.name().to_string(),
            site: c.site,
            rank: c.rank,
            iterations: c.iterations.clone(),
            mpi_ns: c.mpi_ns,
            mean_ns: c.mean_ns,
            executions: c.executions,
        })
        .collect();
    if m.unmatched_sends + m.unmatched_recvs > 0 {
        notes.push(format!(
            "{} sends and {} receives found no partner (a truncated trace, or \
             receives whose source was never learnt); their contexts stay separate",
            m.unmatched_sends, m.unmatched_recvs
        ));
    }
    let patterns = p
        .patterns
        .iter()
        .map(|pt| pattern_report(&run, &p, pt))
        .collect();
    let mut sequence: Vec<(String, usize)> = Vec::new();
    for &s in &seq {
        match sequence.last_mut() {
            Some((id, n)) if *id == cp(s) => *n += 1,
            _ => sequence.push((cp(s), 1)),
        }
    }
    let phases = leaves
        .iter()
        .enumerate()
        .map(|(k, &(a, b))| {
            let mut counts: HashMap<usize, usize> = HashMap::new();
            for &s in &seq[a..b] {
                *counts.entry(s).or_default() += 1;
            }
            let mut pats: Vec<(usize, usize)> = counts.into_iter().collect();
            pats.sort_by_key(|&(s, n)| (std::cmp::Reverse(n), s));
            let spans: Vec<(i64, i64)> = p.instances[a..b].iter().filter_map(|i| i.span).collect();
            PhaseReport {
                index: k + 1,
                start: a,
                end: b,
                time_ns: (!spans.is_empty()).then(|| {
                    (
                        spans.iter().map(|s| s.0).min().unwrap_or(0),
                        spans.iter().map(|s| s.1).max().unwrap_or(0),
                    )
                }),
                patterns: pats.into_iter().map(|(s, n)| (cp(s), n)).collect(),
            }
        })
        .collect();
    let data = RunData {
        ranks: run.ranks.iter().map(|r| r.rank).collect(),
        bytes: m.bytes_matrix(run.ranks.len()),
        steps: run.mpi_time_per_step(),
    };
    let report = Report {
        ranks: run.ranks.len(),
        events: run.events(),
        timeline: run.timed,
        run_ns: run_length(&run),
        messages: m.messages.len(),
        collectives: m.collectives.len(),
        unmatched: (m.unmatched_sends, m.unmatched_recvs),
        patterns,
        sequence,
        djs: djs_curve(&seq),
        tree: tree(&seg),
        phases,
        cutoff: opts.cutoff,
        slow,
        affinity,
        waits: wait_totals,
        reservoir_k: run.reservoir_k,
        slow_calls,
        clock,
        wait_states: summarize(&run, &all_waits),
        delays,
        notes,
    };
    Ok((report, data))
}

/// From the first entry to the last return of any rank, ns (0 without a
/// timeline).
fn run_length(run: &Run) -> i64 {
    if !run.timed {
        return 0;
    }
    let first = run
        .ranks
        .iter()
        .filter_map(|r| r.spans.first())
        .map(|s| s.0)
        .min();
    let last = run
        .ranks
        .iter()
        .flat_map(|r| r.spans.iter().map(|s| s.1))
        .max();
    match (first, last) {
        (Some(a), Some(b)) => (b - a).max(0),
        _ => 0,
    }
}

fn duration(i: &crate::patterns::Instance) -> Option<i64> {
    i.span.map(|(a, b)| b - a)
}

fn pattern_report(run: &Run, p: &Patterns, pt: &crate::patterns::Pattern) -> PatternReport {
    let mut bytes: Vec<u64> = pt.instances.iter().map(|&i| p.instances[i].bytes).collect();
    bytes.sort_unstable();
    bytes.dedup();
    let durs: Vec<f64> = pt
        .instances
        .iter()
        .filter_map(|&i| duration(&p.instances[i]))
        .map(|d| d as f64)
        .collect();
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for (rank, s) in &pt.strings {
        match groups.iter_mut().find(|g| g.0 == *s) {
            Some(g) => g.1.push(*rank),
            None => groups.push((s.clone(), vec![*rank])),
        }
    }
    let _ = run;
    PatternReport {
        id: cp(pt.id),
        ranks: ranks_text(pt.strings.iter().map(|s| s.0)),
        np: pt.np,
        ne: pt.ne,
        instances: pt.instances.len(),
        bytes,
        median_ns: outliers::median(&durs).map(|d| d as i64),
        total_ns: (!durs.is_empty()).then(|| durs.iter().sum::<f64>() as i64),
        strings: groups
            .into_iter()
            .map(|(events, ranks)| RankString {
                ranks: ranks_text(ranks),
                events,
            })
            .collect(),
    }
}

/// The waiting inside pattern instances per (cause, culprit): ns and
/// count, each wait counted once for every instance that holds its call.
/// One pass over the events and one over the waits, rather than a search
/// per event of every instance (8 M of them on the 1,024-rank
/// SMG2000-shaped trace, a tenth of its analysis).
fn waits_in_instances(
    run: &Run,
    p: &Patterns,
    waits: &[WaitState],
) -> BTreeMap<(Cause, usize), (i64, usize)> {
    // How many instances hold each event.
    let mut held: Vec<Vec<u32>> = run.ranks.iter().map(|r| vec![0; r.events.len()]).collect();
    for inst in &p.instances {
        for &(r, e) in &inst.events {
            held[r][e] += 1;
        }
    }
    let mut totals: BTreeMap<(Cause, usize), (i64, usize)> = BTreeMap::new();
    for w in waits {
        let n = held[w.waiter as usize][w.event as usize];
        if n > 0 {
            let t = totals
                .entry((w.metric.into(), w.culprit as usize))
                .or_default();
            t.0 += n as i64 * w.ns;
            t.1 += n as usize;
        }
    }
    totals
}

fn slow_instances(
    run: &Run,
    wi: &WaitIndex<'_>,
    p: &Patterns,
    cutoff: f64,
    phase_of: &dyn Fn(usize) -> usize,
) -> Vec<SlowReport> {
    if !run.timed {
        return Vec::new();
    }
    let mut out = Vec::new();
    for pt in &p.patterns {
        // Compare instances that move the same number of bytes.
        let mut by_bytes: BTreeMap<u64, Vec<(usize, usize)>> = BTreeMap::new();
        for (occ, &i) in pt.instances.iter().enumerate() {
            by_bytes
                .entry(p.instances[i].bytes)
                .or_default()
                .push((i, occ));
        }
        for group in by_bytes.values() {
            let durs: Vec<f64> = group
                .iter()
                .map(|&(i, _)| duration(&p.instances[i]).unwrap_or(0) as f64)
                .collect();
            let z = outliers::modified_z(&durs);
            let median = outliers::median(&durs).unwrap_or(0.0) as i64;
            for (k, &(ii, occ)) in group.iter().enumerate() {
                if z[k] <= cutoff {
                    continue;
                }
                out.push(slow_report(
                    run,
                    wi,
                    p,
                    ii,
                    occ,
                    occ.checked_sub(1).map(|o| pt.instances[o]),
                    z[k],
                    median,
                    group.len(),
                    phase_of(ii) + 1,
                ));
            }
        }
    }
    out.sort_by(|a, b| b.z.total_cmp(&a.z).then(a.instance.cmp(&b.instance)));
    out
}

#[allow(clippy::too_many_arguments)]
fn slow_report(
    run: &Run,
    wi: &WaitIndex<'_>,
    p: &Patterns,
    ii: usize,
    occurrence: usize,
    previous: Option<usize>,
    z: f64,
    median_ns: i64,
    compared: usize,
    phase: usize,
) -> SlowReport {
    let inst = &p.instances[ii];
    let world = |ri: usize| run.ranks[ri].rank;
    // Per rank: first enter and last leave.
    let mut per: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
    let mut shortest = (i64::MAX, 0usize, 0usize);
    let mut longest = (i64::MIN, 0usize, 0usize);
    for &(ri, ei) in &inst.events {
        let (a, b) = run.ranks[ri].spans[ei];
        let e = per.entry(ri).or_insert((a, b));
        e.0 = e.0.min(a);
        e.1 = e.1.max(b);
        if b - a < shortest.0 {
            shortest = (b - a, ri, ei);
        }
        if b - a > longest.0 {
            longest = (b - a, ri, ei);
        }
    }
    let pick = |f: &dyn Fn(&(i64, i64)) -> i64, max: bool| {
        let it = per.iter().map(|(&r, s)| (f(s), r));
        let (ns, r) = if max {
            it.max_by_key(|&(t, r)| (t, std::cmp::Reverse(r)))
        } else {
            it.min_by_key(|&(t, r)| (t, r))
        }
        .unwrap_or((0, 0));
        RankAt { rank: world(r), ns }
    };
    let ev = |(ns, ri, ei): (i64, usize, usize)| EventAt {
        rank: world(ri),
        event: crate::patterns::token(&run.ranks[ri].events[ei]),
        ns,
    };
    let ws = wi.waits(inst);
    let mut waits_ns: BTreeMap<Cause, i64> = BTreeMap::new();
    for w in &ws {
        *waits_ns.entry(w.cause).or_default() += w.ns;
    }
    let b = blame(&ws);
    let culprit_waited_before_ns = match (b, previous) {
        (Some((culprit, _, _)), Some(prev)) => wi
            .waits(&p.instances[prev])
            .iter()
            .filter(|w| w.waiter == culprit)
            .map(|w| w.ns)
            .sum(),
        _ => 0,
    };
    let (r0, c0) = inst.contexts[0];
    SlowReport {
        pattern: cp(inst.pattern),
        instance: ii,
        occurrence,
        warm_up: occurrence == 0,
        phase,
        iterations: run.ranks[r0].contexts[c0 as usize].clone(),
        bytes: inst.bytes,
        duration_ns: duration(inst).unwrap_or(0),
        median_ns,
        z,
        compared,
        first_start: pick(&|s| s.0, false),
        last_start: pick(&|s| s.0, true),
        first_finish: pick(&|s| s.1, false),
        last_finish: pick(&|s| s.1, true),
        shortest: ev(shortest),
        longest: ev(longest),
        cause: b.map(|x| x.1),
        culprit: b.map(|x| world(x.0)),
        culprit_waited_before_ns,
        caused_ns: b.map_or(0, |x| x.2),
        waits_ns,
    }
}

fn affinities(p: &Patterns, slow: &[SlowReport], phases: usize) -> Vec<AffinityReport> {
    let mut out = Vec::new();
    for phase in 1..=phases {
        // The slowest instance of each slow pattern in the phase.
        let mut worst: BTreeMap<&str, &SlowReport> = BTreeMap::new();
        for s in slow.iter().filter(|s| s.phase == phase) {
            let w = worst.entry(&s.pattern).or_insert(s);
            if s.duration_ns > w.duration_ns {
                *w = s;
            }
        }
        if worst.is_empty() {
            continue;
        }
        let rows: Vec<(&str, f64, f64)> = worst
            .iter()
            .map(|(id, s)| {
                let pt = &p.patterns[p.instances[s.instance].pattern];
                (
                    *id,
                    s.duration_ns.max(1) as f64 / s.bytes.max(1) as f64,
                    (pt.np * pt.ne).max(1) as f64,
                )
            })
            .collect();
        let sev: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let cx: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let (Some(sw), Some(cw)) = (ahp::weights(&sev), ahp::weights(&cx)) else {
            continue;
        };
        for (k, r) in rows.iter().enumerate() {
            let level = ahp::affinity(cw[k], sw[k]);
            out.push(AffinityReport {
                phase,
                pattern: r.0.to_string(),
                severity: r.1,
                complexity: r.2,
                severity_weight: sw[k],
                complexity_weight: cw[k],
                angle: sw[k].atan2(cw[k]).to_degrees(),
                level: format!("{level:?}"),
            });
        }
    }
    out
}
