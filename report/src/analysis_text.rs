//! The text summary of an analysis, as `rankscale analyze` prints it:
//! patterns, phases, slow instances and their causes, wait states, delay
//! costs and the critical path. The helpers that name regions, metrics and
//! the clock check are shared with the HTML report.

use std::collections::HashMap;
use std::path::Path;

use analysis::Report;

use crate::sites::site_text;

fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// What the text summary lists, as `rankscale analyze` was asked.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions<'a> {
    /// How many patterns, slow instances, sites and ranks each list shows.
    pub top: usize,
    /// The phase segmentation's stopping rule, named in the phase section.
    pub criterion: &'a str,
}

/// The readable summary of `r`, the analysis of `file` that took `secs`;
/// `labels` name the call sites.
pub fn text(
    file: &Path,
    r: &Report,
    a: &TextOptions<'_>,
    secs: f64,
    labels: &HashMap<u64, &str>,
) -> String {
    let mut o = String::new();
    let w = &mut o;
    use std::fmt::Write as _;
    header_text(w, file, r, secs);
    patterns_text(w, r, a);
    phases_text(w, r, a);
    slow_calls_text(w, r, a, labels);
    if r.timeline {
        slow_instances_text(w, r, a);
        late_ranks_text(w, r, a);
        affinity_text(w, r);
        wait_text(w, r, a, labels);
    }
    for n in &r.notes {
        let _ = writeln!(w, "\nnote: {n}");
    }
    o
}

/// What was analysed and what matched: the two lines every summary
/// starts with.
fn header_text(w: &mut String, file: &Path, r: &Report, secs: f64) {
    use std::fmt::Write as _;
    let _ = writeln!(
        w,
        "analysis of {}: {} ranks, {} events, {} (analysed in {secs:.2} s)",
        file.display(),
        r.ranks,
        r.events,
        if r.timeline {
            format!("timeline of {:.3} s", r.run_ns as f64 / 1e9)
        } else {
            "no timeline".to_string()
        }
    );
    let _ = writeln!(
        w,
        "{} messages and {} collectives matched; unmatched: {} sends, {} receives",
        r.messages, r.collectives, r.unmatched.0, r.unmatched.1
    );
}

/// The communication patterns, the costliest first (by total time, else
/// by instances), each with its first rank groups' event strings.
fn patterns_text(w: &mut String, r: &Report, a: &TextOptions<'_>) {
    use std::fmt::Write as _;
    let _ = writeln!(
        w,
        "\ncommunication patterns: {} ({} instances)",
        r.patterns.len(),
        r.sequence.iter().map(|s| s.1).sum::<usize>()
    );
    let _ = writeln!(
        w,
        "  {:<6} {:>5} {:>6} {:>9} {:>12} {:>12}  ranks",
        "id", "np", "ne", "instances", "bytes", "median"
    );
    let mut order: Vec<&analysis::PatternReport> = r.patterns.iter().collect();
    order.sort_by_key(|p| std::cmp::Reverse(p.total_ns.unwrap_or(p.instances as i64)));
    for p in order.iter().take(a.top) {
        let bytes = match p.bytes.as_slice() {
            [b] => b.to_string(),
            [lo, .., hi] => format!("{lo}-{hi}"),
            [] => "0".into(),
        };
        let _ = writeln!(
            w,
            "  {:<6} {:>5} {:>6} {:>9} {:>12} {:>12}  {}",
            p.id,
            p.np,
            p.ne,
            p.instances,
            bytes,
            p.median_ns.map_or_else(|| "-".into(), ms),
            p.ranks
        );
        for s in p.strings.iter().take(4) {
            let _ = writeln!(w, "         {}: {}", s.ranks, s.events);
        }
        if p.strings.len() > 4 {
            let _ = writeln!(w, "         ... {} more rank groups", p.strings.len() - 4);
        }
    }
    if r.patterns.len() > a.top {
        let _ = writeln!(
            w,
            "  ... {} more patterns (--top N, or --json)",
            r.patterns.len() - a.top
        );
    }
}

/// The phases: the segmentation's splits as a tree, then each phase with
/// its instances, times and most frequent patterns.
fn phases_text(w: &mut String, r: &Report, a: &TextOptions<'_>) {
    use std::fmt::Write as _;
    let _ = writeln!(
        w,
        "\nphases: {} (criterion {}; splits at the maximum of D_JS while the strength is > 0)",
        r.phases.len(),
        a.criterion
    );
    splits_text(&r.tree, 0, w);
    for ph in &r.phases {
        let when = ph.time_ns.map_or(String::new(), |(s, e)| {
            format!(" ({:.3}-{:.3} s)", s as f64 / 1e9, e as f64 / 1e9)
        });
        let pats: Vec<String> = ph
            .patterns
            .iter()
            .take(6)
            .map(|(p, n)| format!("{p} x{n}"))
            .collect();
        let _ = writeln!(
            w,
            "  phase {}: instances {}-{}{when}: {}{}",
            ph.index,
            ph.start,
            ph.end.saturating_sub(1),
            pats.join(", "),
            if ph.patterns.len() > 6 { ", ..." } else { "" }
        );
    }
}

/// The splits of the phase tree below `n`, indented by depth: a function
/// of its own because the tree is walked recursively.
fn splits_text(n: &analysis::PhaseNode, depth: usize, w: &mut String) {
    use std::fmt::Write as _;
    if let Some((at, d, st)) = n.split
        && !n.children.is_empty()
    {
        let _ = writeln!(
            w,
            "  {:indent$}split {}-{} at {at}: D_JS {d:.3}, strength {st:.2}",
            "",
            n.start,
            n.end.saturating_sub(1),
            indent = depth * 2
        );
        for c in &n.children {
            splits_text(c, depth + 1, w);
        }
    }
}

/// The slowest executions of calls that the trace kept, by time above the
/// call's mean.
fn slow_calls_text(w: &mut String, r: &Report, a: &TextOptions<'_>, labels: &HashMap<u64, &str>) {
    use std::fmt::Write as _;
    if r.slow_calls.is_empty() {
        return;
    }
    let _ = writeln!(
        w,
        "\nslowest calls (the trace keeps the {} slowest executions of every call), by time above the call's mean:",
        r.reservoir_k
    );
    for c in r.slow_calls.iter().take(a.top) {
        let _ = writeln!(
            w,
            "  {:<14} rank {:<5} iteration {:<14} {:>12}  mean {:>12} of {} at {}",
            c.call,
            c.rank,
            format!("{:?}", c.iterations),
            ms(c.mpi_ns as i64),
            ms(c.mean_ns as i64),
            c.executions,
            site_text(labels, c.site)
        );
    }
}

/// The slow pattern instances (needs the timeline), each with where it
/// started and finished, its extreme events and its cause.
fn slow_instances_text(w: &mut String, r: &Report, a: &TextOptions<'_>) {
    use std::fmt::Write as _;
    let _ = writeln!(
        w,
        "\nslow instances (modified z-score > {}): {}",
        r.cutoff,
        r.slow.len()
    );
    for s in r.slow.iter().take(a.top) {
        let _ = writeln!(
            w,
            "  {} #{} (iteration {:?}, phase {}): {} vs median {} of {} (M = {:.1})",
            s.pattern,
            s.occurrence,
            s.iterations,
            s.phase,
            ms(s.duration_ns),
            ms(s.median_ns),
            s.compared,
            s.z
        );
        let _ = writeln!(
            w,
            "      start: first rank {}, last rank {} (+{}); finish: first rank {}, last rank {}",
            s.first_start.rank,
            s.last_start.rank,
            ms(s.last_start.ns - s.first_start.ns),
            s.first_finish.rank,
            s.last_finish.rank
        );
        let _ = writeln!(
            w,
            "      shortest event: {} on rank {} ({}); longest: {} on rank {} ({})",
            s.shortest.event,
            s.shortest.rank,
            ms(s.shortest.ns),
            s.longest.event,
            s.longest.rank,
            ms(s.longest.ns)
        );
        if s.warm_up {
            let _ = writeln!(
                w,
                "      the first instance of its pattern: warm-up (connection set-up, first touch)"
            );
        }
        cause_text(w, s);
    }
}

/// Why a slow instance was slow: the wait that caused most of it and on
/// which rank, and whether that rank's delay came from the instance
/// before.
fn cause_text(w: &mut String, s: &analysis::SlowReport) {
    use std::fmt::Write as _;
    match (s.cause, s.culprit) {
        (Some(c), Some(rank)) => {
            let excess = s.duration_ns - s.median_ns;
            if excess > 0 && s.culprit_waited_before_ns * 2 >= excess {
                let _ = writeln!(
                    w,
                    "      propagated: rank {rank} waited {} in the previous instance (an earlier delay travelling on)",
                    ms(s.culprit_waited_before_ns)
                );
            }
            let all: Vec<String> = s
                .waits_ns
                .iter()
                .map(|(k, v)| format!("{} {}", k.name(), ms(*v)))
                .collect();
            let _ = writeln!(
                w,
                "      cause: {} on rank {} ({} of waiting caused; all waits: {})",
                c.name(),
                rank,
                ms(s.caused_ns),
                all.join(", ")
            );
        }
        _ => {
            let _ = writeln!(w, "      cause: no wait inside the instance");
        }
    }
}

/// The waiting caused over the whole trace, by kind and late rank.
fn late_ranks_text(w: &mut String, r: &Report, a: &TextOptions<'_>) {
    use std::fmt::Write as _;
    if r.waits.is_empty() {
        return;
    }
    let _ = writeln!(w, "\nwaiting caused, by kind and late rank (whole trace):");
    for x in r.waits.iter().take(a.top) {
        let _ = writeln!(
            w,
            "  {:<26} rank {:<6} {:>12} in {} waits",
            x.cause.name(),
            x.rank,
            ms(x.ns),
            x.count
        );
    }
}

/// The Inspection Affinity of the slow patterns, per phase: which to
/// look at first.
fn affinity_text(w: &mut String, r: &Report) {
    use std::fmt::Write as _;
    if r.affinity.is_empty() {
        return;
    }
    let _ = writeln!(w, "\nInspection Affinity of slow patterns, per phase:");
    for x in &r.affinity {
        let _ = writeln!(
            w,
            "  phase {}: {} {} (severity weight {:.2}, complexity weight {:.2}, {:.0} deg)",
            x.phase, x.pattern, x.level, x.severity_weight, x.complexity_weight, x.angle
        );
    }
}

/// Waiting per metric, "Late Sender 1.000 ms, Wait at Barrier 2.000 ms".
pub fn by_metric(m: &[analysis::waitstates::MetricTotal]) -> String {
    m.iter()
        .map(|m| format!("{} {}", m.metric.name(), ms(m.ns)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A region of the delay analysis as a reader names it, with `site`
/// naming call sites.
pub fn region_text(g: &analysis::delay::Region, site: &dyn Fn(u64) -> String) -> String {
    if g.mpi {
        format!("{} at {}", g.op.name(), site(g.site))
    } else {
        format!("computation before {} at {}", g.op.name(), site(g.site))
    }
}

/// What the clock check found and did, for text and HTML (`None` when it
/// did not run).
pub fn clock_text(c: &analysis::clc::ClcReport) -> Option<String> {
    if c.checked == 0 {
        return None;
    }
    let mut t = format!(
        "clock condition: {} of {} receiving ends violated it",
        c.violations, c.checked
    );
    if c.violations > 0 {
        t += &format!(
            "; corrected (controlled logical clock): {} remain, {} events moved by up to {} (largest violation {}), {} of {} local intervals changed by more than 1 % beyond the decay",
            c.remaining,
            c.moved,
            ms(c.max_shift_ns),
            ms(c.largest_violation_ns),
            c.intervals_changed,
            c.intervals
        );
        if c.max_shift_ns > c.largest_violation_ns {
            t += &format!(
                "; the largest shift adds up a chain of {} late messages, each moving its receiver by its own violation plus its sender's shift",
                c.max_shift_chain
            );
        }
    }
    Some(t)
}

/// The clock check, the wait states, the delay costs and the critical
/// path.
fn wait_text(w: &mut String, r: &Report, a: &TextOptions<'_>, labels: &HashMap<u64, &str>) {
    use std::fmt::Write as _;
    if let Some(t) = clock_text(&r.clock) {
        let _ = writeln!(w, "\n{t}");
    }
    let ws = &r.wait_states;
    let _ = writeln!(w, "\nwait states (Scalasca's metrics):");
    for m in &ws.metrics {
        let _ = writeln!(
            w,
            "  {:<28} {:>12} in {} waits",
            m.metric.name(),
            ms(m.ns),
            m.count
        );
    }
    let sites: Vec<_> = ws.sites.iter().filter(|s| s.ns > 0).take(a.top).collect();
    if !sites.is_empty() {
        let _ = writeln!(w, "  by call site:");
        for s in sites {
            let _ = writeln!(
                w,
                "    {} at {}: {}",
                s.call,
                site_text(labels, s.site),
                by_metric(&s.metrics)
            );
        }
        let mut ranks: Vec<_> = ws.ranks.iter().filter(|x| x.ns > 0).collect();
        ranks.sort_by_key(|x| std::cmp::Reverse(x.ns));
        let _ = writeln!(w, "  by rank (most waiting first):");
        for x in ranks.into_iter().take(a.top) {
            let _ = writeln!(w, "    rank {:<6} {}", x.rank, by_metric(&x.metrics));
        }
    }
    let d = &r.delays;
    if !d.costs.is_empty() {
        let _ = writeln!(
            w,
            "\ndelays (root causes of waiting: short-term = direct, long-term = propagated):"
        );
        for c in d.costs.iter().take(a.top) {
            let _ = writeln!(
                w,
                "  rank {:<5} {:<52} short-term {:>12}  long-term {:>12}",
                c.rank,
                region_text(&c.region, &|x| site_text(labels, x)),
                ms(c.short_term_ns),
                ms(c.long_term_ns)
            );
        }
    }
    if d.path_ns > 0 {
        let ranks: Vec<String> = d
            .path_ranks
            .iter()
            .map(|(r, ns)| format!("{r}: {}", ms(*ns)))
            .collect();
        let _ = writeln!(
            w,
            "\ncritical path: {} in {} stretches (time per rank: {})",
            ms(d.path_ns),
            d.path.len(),
            ranks.join(", ")
        );
        for p in d.path_profile.iter().take(a.top) {
            let _ = writeln!(
                w,
                "  {:<60} {:>12}",
                region_text(&p.region, &|x| site_text(labels, x)),
                ms(p.ns)
            );
        }
    }
}
