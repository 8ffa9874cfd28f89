//! The trace's structure made readable, as `rankscale show` prints it: the
//! loop tree with its ranklists, parameters and timing as text or JSON, or
//! one rank's expanded event sequence in the raw-log grammar (so that it
//! can be compared with the tracer's raw logs by `diff`).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};
use trace::codec::{PEER_ANY, PEER_NULL, RANK_SELF, TAG_ANY};
use trace::seq::SeqForm;
use trace::{MNode, Origin, Param, PathTiming, Shape, TimeStats, TraceFile, ValueSeq};

use crate::Error;
use crate::sites::{site_labels, site_text};

/// Prints rank `rank`'s events, one canonical raw-log line each.
pub fn expand(file: &TraceFile, rank: u32, out: &mut impl Write) -> Result<(), Error> {
    let t = file.trace.rank_trace(rank)?;
    let mut ex = t.expand();
    let mut line = String::with_capacity(128);
    for ev in &mut ex {
        line.clear();
        trace::raw::format_event(&ev, &mut line);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    if ex.is_broken() {
        return Err(Error::Broken { rank });
    }
    Ok(())
}

/// MPI's sentinel that value `v` of parameter `name` stands for, as `show`
/// names it: the encoding keeps `MPI_ANY_SOURCE`, `MPI_PROC_NULL`,
/// `MPI_ANY_TAG` and a split's colour or key equal to the caller's rank as
/// values no real one can take, which mean nothing to a reader as numbers.
fn sentinel(name: &str, v: i64) -> Option<&'static str> {
    if name.ends_with(".peer") || name.ends_with(".local") {
        match v {
            PEER_ANY => return Some("ANY"),
            PEER_NULL => return Some("NULL"),
            _ => {}
        }
    }
    if name.ends_with(".tag") && v == TAG_ANY {
        return Some("ANY");
    }
    if matches!(name, "color" | "key") && v == RANK_SELF {
        return Some("rank");
    }
    None
}

/// The name `show` gives parameter `name` of a call to `op`: `File_delete`
/// records its path's hash as its value.
fn shown_name(op: trace::Op, name: &'static str) -> &'static str {
    match (op, name) {
        (trace::Op::FileDelete, "value") => "file.path",
        (_, name) => name,
    }
}

/// A value of a parameter, with MPI's sentinels named.
fn value_text(name: &str, v: i64) -> String {
    if let Some(s) = sentinel(name, v) {
        return s.into();
    }
    if name.ends_with(".peer") && v > 0 {
        return format!("+{v}");
    }
    if name == "file.path" {
        // The hash in hex, as the path table and the expanded events
        // print it, so that a reader finds the one from the other.
        return format!("{:x}", v as u64);
    }
    v.to_string()
}

/// A value sequence in a few characters: `5`, `0,+2..(100)`, or its first
/// values and length.
fn seq_text(name: &str, s: &ValueSeq) -> String {
    match s.form() {
        SeqForm::Empty => "[]".into(),
        SeqForm::Const { value, .. } => value_text(name, value),
        SeqForm::Strided { start, stride, len } => {
            format!("{}{stride:+}i (i<{len})", value_text(name, start))
        }
        SeqForm::Blocks { len, .. } => {
            let head: Vec<String> = s.iter().take(6).map(|v| value_text(name, v)).collect();
            let more = if len > 6 { ",…" } else { "" };
            format!("[{}{more}] ({len} values)", head.join(","))
        }
    }
}

fn param_text(name: &str, p: &Param, node_ranks: &trace::RankList) -> String {
    let vs = p.variants();
    if vs.len() == 1 && p.phased().is_empty() && vs[0].ranks() == node_ranks {
        let v = &vs[0];
        let abs = if v.is_absolute() { " (abs)" } else { "" };
        return format!("{}{abs}", seq_text(name, v.values()));
    }
    let mut parts: Vec<String> = vs
        .iter()
        .map(|v| {
            let abs = if v.is_absolute() { " abs" } else { "" };
            format!("{}{abs} @{}", seq_text(name, v.values()), v.ranks())
        })
        .collect();
    // A rotating peer, split by phase: one entry per position of the
    // rotation, each with its own variants.
    for g in p.phased() {
        let phases: Vec<String> = g
            .phases()
            .iter()
            .map(|ph| param_text(name, ph, g.ranks()))
            .collect();
        let whole = parts.is_empty() && p.phased().len() == 1 && g.ranks() == node_ranks;
        let at = if whole {
            String::new()
        } else {
            format!(" @{}", g.ranks())
        };
        parts.push(format!("rotation<{}>{at}", phases.join(", ")));
    }
    if parts.len() == 1 && p.phased().len() == 1 && vs.is_empty() {
        return parts.remove(0);
    }
    format!("{{{}}}", parts.join(" | "))
}

/// Whether a parameter is an all-zero constant that says nothing (the
/// caller's rank offset in `MPI_COMM_WORLD`, a local peer that equals the
/// world peer).
fn is_quiet(op: trace::Op, name: &str, p: &Param) -> bool {
    // Calls without a communicator record none; a collective's transfer
    // has no peer and no tag.
    let absent = (!op.has_comm() && (name == "comm" || name == "comm_rank"))
        || (op.is_collective()
            && (name.ends_with(".peer") || name.ends_with(".local") || name.ends_with(".tag")));
    absent
        || (name == "comm_rank" || name.ends_with(".local"))
            && p.phased().is_empty()
            && p.variants().iter().all(|v| {
                !v.is_absolute() && matches!(v.values().form(), SeqForm::Const { value: 0, .. })
            })
}

fn same_param(a: &Param, b: &Param) -> bool {
    a.variants().len() == b.variants().len()
        && a.variants().iter().zip(b.variants()).all(|(x, y)| {
            x.ranks() == y.ranks()
                && x.is_absolute() == y.is_absolute()
                && x.values().same_form(y.values())
        })
        && a.phased().len() == b.phased().len()
        && a.phased().iter().zip(b.phased()).all(|(x, y)| {
            x.ranks() == y.ranks()
                && x.phases().len() == y.phases().len()
                && x.phases()
                    .iter()
                    .zip(y.phases())
                    .all(|(p, q)| same_param(p, q))
        })
}

fn ns(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}s", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}ms", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}us", x / 1e3)
    } else {
        format!("{x:.0}ns")
    }
}

fn timing_text(t: &PathTiming) -> String {
    let tot = t.total();
    if tot.count() == 0 {
        return String::new();
    }
    let slowest: Vec<String> = t
        .slow()
        .slowest()
        .iter()
        .take(3)
        .map(|s| format!("{} on r{}", ns(s.mpi_ns as f64), s.rank))
        .collect();
    format!(
        "  [n={} mpi {} (max {}) compute {}{}]",
        tot.count(),
        ns(tot.mpi().stats().mean()),
        // The reservoir's slowest is exact; the statistics' maximum is
        // stored quantised.
        ns(t.slow()
            .slowest()
            .first()
            .map_or(tot.mpi().stats().max(), |s| s.mpi_ns) as f64),
        ns(tot.compute().stats().mean()),
        if slowest.is_empty() {
            String::new()
        } else {
            format!(" slowest {}", slowest.join(", "))
        }
    )
}

/// The mean computation before the call of each group of ranks that
/// computes differently (`{<ranks> 13.4ms | <ranks> 0.2us}`), so that a
/// reader sees rank 0's verification apart from the others' nothing.
fn variants_text(vs: &[trace::TimingVariant]) -> String {
    if vs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = vs
        .iter()
        .map(|v| {
            format!(
                "{} {}",
                v.ranks(),
                ns(v.timing().total().compute().stats().mean())
            )
        })
        .collect();
    format!(" compute by ranks {{{}}}", parts.join(" | "))
}

/// What a trace of a job that did not finish holds: each rank that ends
/// early (up to which event, and what wrote it) and the ranks that left
/// nothing. Empty for a finished run.
pub fn partial_lines(file: &TraceFile) -> Vec<String> {
    let m = &file.meta;
    let mut out: Vec<String> = m
        .partial
        .iter()
        .map(|p| {
            format!(
                "partial: rank {} holds its first {} events ({} at {:.3} s), not its whole run",
                p.rank,
                p.events,
                p.cause,
                p.at_ns as f64 / 1e9
            )
        })
        .collect();
    let held = file.trace.ranks();
    let missing: Vec<u32> = (0..m.world_size).filter(|r| !held.contains(*r)).collect();
    if !missing.is_empty() {
        out.push(format!(
            "partial: {} of {} ranks left nothing: {}",
            missing.len(),
            m.world_size,
            ranges(&missing)
        ));
    }
    out
}

/// `0-3, 5, 7-8` for sorted ranks.
fn ranges(v: &[u32]) -> String {
    trace::ranklist::ranges_text(v.iter().copied(), ", ", "-")
}

/// Writes the warning that a trace lost events while it was taken (its
/// queue was full and the spill failed), if it did, and the note of the
/// calls recorded without detail: `show` and `stats` both say so before
/// anything else about the events.
pub(crate) fn write_lost(t: &trace::MergedTrace, out: &mut impl Write) -> Result<(), Error> {
    if t.lost_events() > 0 {
        writeln!(
            out,
            "warning: {} events were lost while tracing",
            t.lost_events()
        )?;
    }
    for note in t.passed_over() {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}

/// Writes the file paths a run kept (`RANKSCALE_IO_PATHS=1`), one line
/// each, under the hash the MPI-IO events print (`file=MODE/HASH`):
/// `show` and `stats` name the files alike.
pub(crate) fn write_paths(m: &trace::Meta, out: &mut impl Write) -> Result<(), Error> {
    for (hash, path) in &m.paths {
        writeln!(out, "file {hash:x}: {path}")?;
    }
    Ok(())
}

/// Writes the text form: the file's metadata, then the loop tree, one node
/// per line with its ranks, parameters and timing.
pub fn write_text(file: &TraceFile, path: &Path, out: &mut impl Write) -> Result<(), Error> {
    let m = &file.meta;
    let t = &file.trace;
    writeln!(
        out,
        "{}: {} ranks {}, {} events, written by {}",
        path.display(),
        t.ranks().len(),
        t.ranks(),
        t.total_events(),
        if m.tool.is_empty() { "?" } else { &m.tool }
    )?;
    if !m.mpi.is_empty() {
        writeln!(out, "mpi: {}", m.mpi)?;
    }
    if !m.command.is_empty() {
        writeln!(out, "command: {}", m.command.join(" "))?;
    }
    let origin = match &m.origin {
        Origin::Traced => "a traced run".to_string(),
        Origin::Imported { format } => format!("imported from {format}"),
        Origin::Extrapolated { inputs } => format!(
            "extrapolated from traces of {} ranks: its times are predictions",
            inputs
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    writeln!(out, "origin: {origin}")?;
    for a in &m.assumptions {
        writeln!(out, "assumes: {a}")?;
    }
    write_paths(m, out)?;
    writeln!(
        out,
        "wall {:.3} s (rank 0), merge {:.1} ms",
        m.wall_ns as f64 / 1e9,
        m.merge_ns as f64 / 1e6
    )?;
    write_lost(t, out)?;
    for line in partial_lines(file) {
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    let labels = site_labels(file);
    for n in t.nodes() {
        node_text(n, 0, &labels, out)?;
    }
    Ok(())
}

fn node_text(
    n: &MNode,
    depth: usize,
    labels: &HashMap<u64, &str>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let pad = "  ".repeat(depth);
    match n {
        MNode::Loop(l) => {
            writeln!(
                out,
                "{pad}loop x{}  ranks {}",
                param_text("iterations", l.counts(), l.ranks()),
                l.ranks()
            )?;
            for b in l.body() {
                node_text(b, depth + 1, labels, out)?;
            }
        }
        MNode::Event(e) => {
            let s = e.shape();
            let mut parts = Vec::new();
            let names = s.param_names();
            for (i, (name, p)) in names.iter().zip(e.params()).enumerate() {
                // A local peer equal to the world peer (MPI_COMM_WORLD).
                let same_as_peer =
                    name.ends_with(".local") && i > 0 && same_param(p, &e.params()[i - 1]);
                let name = shown_name(s.op(), name);
                if !is_quiet(s.op(), name, p) && !same_as_peer {
                    parts.push(format!("{name}={}", param_text(name, p, e.ranks())));
                }
            }
            if let Some(op) = s.redop() {
                parts.push(format!("op={}", op.name()));
            }
            if s.in_place() {
                parts.push("in_place".into());
            }
            for (name, l) in s.list_names().iter().zip(e.lists()) {
                let empty = l
                    .lens()
                    .variants()
                    .iter()
                    .all(|v| matches!(v.values().form(), SeqForm::Const { value: 0, .. }));
                if !empty {
                    parts.push(format!(
                        "{name}[{}]",
                        param_text("len", l.lens(), e.ranks())
                    ));
                }
            }
            let thread = if s.thread() > 0 {
                format!(" thread={}", s.thread())
            } else {
                String::new()
            };
            writeln!(
                out,
                "{pad}{} ranks {} site={}{thread}{}{}{}",
                s.op().name(),
                e.ranks(),
                site_text(labels, s.site()),
                parts.iter().map(|p| format!(" {p}")).collect::<String>(),
                timing_text(e.timing()),
                variants_text(e.timing_variants())
            )?;
        }
        _ => {}
    }
    Ok(())
}

// ----- JSON ----------------------------------------------------------------

/// The largest magnitude a JSON number keeps exactly in every reader:
/// JavaScript and many others hold numbers as doubles, which round integers
/// beyond 2^53 (the three sentinels of [`sentinel`] would all read as
/// -9223372036854775808).
const JSON_EXACT: i64 = 1 << 53;

/// How many values of a sequence without a short form `show --json` lists
/// (`values`; its `len` says how many there are).
const JSON_VALUES: usize = 1000;

/// A value of parameter `name` as JSON: MPI's sentinels by name ("ANY",
/// "NULL", "rank"), a file's path hash in hex as the text output and the
/// path table write it, and any other value beyond 2^53 in magnitude as a
/// decimal string, so that every reader reads it exactly; else a number.
fn value_json(name: &str, v: i64) -> Value {
    if let Some(s) = sentinel(name, v) {
        return s.into();
    }
    if name == "file.path" {
        return format!("{:x}", v as u64).into();
    }
    if v.unsigned_abs() > JSON_EXACT as u64 {
        return v.to_string().into();
    }
    v.into()
}

/// A value sequence of parameter `name` as JSON: its short form (a
/// constant, or a start and a stride), else its first [`JSON_VALUES`]
/// values, with its exact encoding beside them for readers that decode the
/// whole sequence (docs/FORMAT.md).
fn seq_json(name: &str, s: &ValueSeq) -> Value {
    match s.form() {
        SeqForm::Empty => json!({"form": "empty"}),
        SeqForm::Const { value, len } => {
            json!({"form": "const", "value": value_json(name, value), "len": len})
        }
        SeqForm::Strided { start, stride, len } => json!({
            "form": "strided",
            "start": value_json(name, start),
            "stride": value_json("", stride),
            "len": len,
        }),
        SeqForm::Blocks { blocks, len } => json!({
            "form": "blocks",
            "blocks": blocks,
            "len": len,
            "values": s.iter().take(JSON_VALUES).map(|v| value_json(name, v)).collect::<Vec<_>>(),
            "encoded": s,
        }),
    }
}

/// Parameter `name` as JSON: each variant with its ranks and values, and
/// each rotation with its phases.
fn param_json(name: &str, p: &Param) -> Value {
    let mut out: Vec<Value> = p
        .variants()
        .iter()
        .map(|v| {
            json!({
                "ranks": v.ranks().to_string(),
                "absolute": v.is_absolute(),
                "values": seq_json(name, v.values()),
            })
        })
        .collect();
    out.extend(p.phased().iter().map(|g| {
        json!({
            "ranks": g.ranks().to_string(),
            "phases": g.phases().iter().map(|ph| param_json(name, ph)).collect::<Vec<_>>(),
        })
    }));
    Value::Array(out)
}

fn stats_json(t: &TimeStats) -> Value {
    let dist = |d: &trace::Dist| {
        let s = d.stats();
        json!({
            "count": s.count(), "min": s.min(), "max": s.max(),
            "mean": s.mean(), "variance": s.variance(),
            "histogram": d.histogram().bins().iter().map(|b| json!({
                "lower": b.lower(), "count": b.count(), "min": b.min(),
                "avg": b.avg(), "max": b.max(),
            })).collect::<Vec<_>>(),
        })
    };
    json!({"mpi_ns": dist(t.mpi()), "compute_ns": dist(t.compute())})
}

fn shape_json(s: &Shape, labels: &HashMap<u64, &str>) -> Value {
    json!({
        "op": s.op().name(),
        "site": format!("{:016x}", s.site()),
        "site_label": labels.get(&s.site()),
        "thread": s.thread(),
        "reduce_op": s.redop().map(|o| o.name()),
        "in_place": s.in_place(),
    })
}

fn node_json(n: &MNode, labels: &HashMap<u64, &str>) -> Value {
    match n {
        MNode::Loop(l) => json!({
            "kind": "loop",
            "ranks": l.ranks().to_string(),
            "iterations": param_json("iterations", l.counts()),
            "body": l.body().iter().map(|b| node_json(b, labels)).collect::<Vec<_>>(),
        }),
        MNode::Event(e) => {
            let s = e.shape();
            let params: serde_json::Map<String, Value> = s
                .param_names()
                .into_iter()
                .zip(e.params())
                .map(|(k, p)| {
                    let k = shown_name(s.op(), k);
                    (k.to_string(), param_json(k, p))
                })
                .collect();
            let lists: serde_json::Map<String, Value> = s
                .list_names()
                .iter()
                .zip(e.lists())
                .map(|(k, l)| {
                    (
                        k.to_string(),
                        json!({
                            "width": l.width(),
                            "lengths": param_json("len", l.lens()),
                            "columns": l.columns().iter().map(|c| param_json("", c)).collect::<Vec<_>>(),
                        }),
                    )
                })
                .collect();
            let t = e.timing();
            json!({
                "kind": "event",
                "ranks": e.ranks().to_string(),
                "call": shape_json(s, labels),
                "params": params,
                "lists": lists,
                "timing": {
                    "first": stats_json(t.first()),
                    "steady": stats_json(t.steady()),
                    "last": stats_json(t.last()),
                    "slowest": t.slow().slowest(),
                },
            })
        }
        _ => Value::Null,
    }
}

/// The whole trace as JSON: metadata, and every node with its ranks,
/// parameters (every variant, with its values in compressed form) and
/// timing statistics and histograms.
pub fn to_json(file: &TraceFile) -> Value {
    let labels = site_labels(file);
    json!({
        "format_version": trace::file::VERSION,
        "meta": file.meta,
        "ranks": file.trace.ranks().to_string(),
        "events": file.trace.total_events(),
        "lost_events": file.trace.lost_events(),
        "generic_calls": file
            .trace
            .calls_by_op()
            .into_iter()
            .filter(|(op, _)| op.is_generic())
            .map(|(op, n)| (op.name().to_string(), n))
            .collect::<std::collections::BTreeMap<_, _>>(),
        "nodes": file.trace.nodes().iter().map(|n| node_json(n, &labels)).collect::<Vec<_>>(),
    })
}
