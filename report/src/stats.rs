//! What `rankscale stats` prints: sizes, compression, communication matrix
//! and an mpiP-style per-call-site profile of a trace file (or of a raw log
//! directory, for comparison).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use trace::profile::Profile;
use trace::{MNode, Op, TraceFile};

use crate::Error;
use crate::sites::{site_labels, site_text};

/// Structure counts of a merged trace.
#[derive(Default)]
struct Shape {
    events: u64,
    rsds: u64,
    loops: u64,
    prsds: u64,
    depth: usize,
    variants: u64,
}

fn walk(n: &MNode, depth: usize, in_loop: bool, s: &mut Shape) {
    s.depth = s.depth.max(depth);
    match n {
        MNode::Event(e) => {
            s.events += 1;
            s.rsds += u64::from(in_loop);
            s.variants += e
                .params()
                .iter()
                .map(|p| p.variants().len() as u64)
                .sum::<u64>();
        }
        MNode::Loop(l) => {
            s.loops += 1;
            if l.body().iter().any(|b| matches!(b, MNode::Loop(_))) {
                s.prsds += 1;
            }
            for b in l.body() {
                walk(b, depth + 1, true, s);
            }
        }
        _ => {}
    }
}

/// Per (operation, site) time from the merged timing statistics.
fn site_times(nodes: &[MNode], out: &mut HashMap<(Op, u64), (f64, u64)>) {
    for n in nodes {
        match n {
            MNode::Event(e) => {
                let t = e.timing().total();
                let s = t.mpi().stats();
                let entry = out.entry((e.shape().op(), e.shape().site())).or_default();
                entry.0 += s.mean() * s.count() as f64;
                entry.1 = entry.1.max(s.max());
            }
            MNode::Loop(l) => site_times(l.body(), out),
            _ => {}
        }
    }
}

/// What one pass over every rank's expanded events gives: the profile of
/// all calls, the bytes each rank sent to each, and the size the raw logs
/// would have.
struct Expanded {
    total: Profile,
    /// Per (operation, call site): how many ranks made such calls.
    site_ranks: HashMap<(Op, u64), u32>,
    matrix: Vec<BTreeMap<i32, u64>>,
    raw_bytes: u64,
}

/// Expands every rank of `ranks` once (the costly part of the stats) and
/// collects everything the expansion gives; `p` is the size of the
/// communication matrix.
fn expand_ranks(t: &trace::MergedTrace, ranks: &[u32], p: usize) -> Result<Expanded, Error> {
    let mut total = Profile::new();
    let mut site_ranks = HashMap::new();
    let mut matrix = vec![BTreeMap::<i32, u64>::new(); p];
    let mut raw_bytes = 0u64;
    let mut line = String::new();
    for &r in ranks {
        let rt = t.rank_trace(r)?;
        let mut prof = Profile::new();
        let mut ex = rt.expand();
        for ev in &mut ex {
            line.clear();
            trace::raw::format_event(&ev, &mut line);
            raw_bytes += line.len() as u64 + 1;
            prof.add(&ev);
            total.add(&ev);
        }
        if ex.is_broken() {
            return Err(Error::Broken { rank: r });
        }
        matrix[r as usize] = prof.sent_to().clone();
        for (op, site, _) in prof.sites() {
            *site_ranks.entry((op, site)).or_default() += 1;
        }
    }
    Ok(Expanded {
        total,
        site_ranks,
        matrix,
        raw_bytes,
    })
}

/// Writes the statistics of `file`, read from `path`, a file of `size`
/// bytes (for the compression ratio against its raw logs).
pub fn write_trace_stats(
    file: &TraceFile,
    path: &Path,
    size: u64,
    out: &mut impl Write,
) -> Result<(), Error> {
    let t = &file.trace;
    let ranks: Vec<u32> = t.ranks().iter().collect();
    let p = file.meta.world_size.max(ranks.last().map_or(0, |r| r + 1)) as usize;
    let x = expand_ranks(t, &ranks, p)?;
    write_sizes(file, path, (size, x.raw_bytes), ranks.len(), out)?;
    write_recorded_extras(file, out)?;
    crate::structure::write_lost(t, out)?;
    write_site_profile(file, &x.total, ranks.len(), out)?;
    write_io_profile(file, &x, out)?;
    print_matrix(&x.matrix, out)?;
    Ok(())
}

/// The trace's size against its raw logs' (`sizes`: file bytes, raw
/// bytes) and the shape of its loop structure.
fn write_sizes(
    file: &TraceFile,
    path: &Path,
    (size, raw_bytes): (u64, u64),
    ranks: usize,
    out: &mut impl Write,
) -> Result<(), Error> {
    let t = &file.trace;
    let mut s = Shape::default();
    for n in t.nodes() {
        walk(n, 0, false, &mut s);
    }
    writeln!(
        out,
        "{}: {} ranks, {} events",
        path.display(),
        ranks,
        t.total_events()
    )?;
    writeln!(
        out,
        "size {size} bytes; raw logs {raw_bytes} bytes; compression ratio {:.1}x",
        raw_bytes as f64 / size.max(1) as f64
    )?;
    writeln!(
        out,
        "structure: {} call nodes ({} RSDs inside loops), {} loops ({} PRSDs), depth {}, {} parameter variants",
        s.events, s.rsds, s.loops, s.prsds, s.depth, s.variants
    )?;
    Ok(())
}

/// What the trace recorded beyond its events: the timeline (or how to get
/// one) and the MPI time series.
fn write_recorded_extras(file: &TraceFile, out: &mut impl Write) -> Result<(), Error> {
    if file.timelines.is_empty() {
        writeln!(
            out,
            "timeline: none (trace with RANKSCALE_TIMELINE=1 for per-event timestamps)"
        )?;
    } else {
        let events: u64 = file.timelines.iter().map(|t| t.len()).sum();
        let bytes: usize = file.timelines.iter().map(|t| t.encoded_bytes()).sum();
        writeln!(
            out,
            "timeline: {} ranks, {events} events, {bytes} bytes encoded ({:.2} bytes per event before the file's zlib)",
            file.timelines.len(),
            bytes as f64 / events.max(1) as f64
        )?;
    }
    if !file.series.is_empty() {
        let buckets: usize = file.series.iter().map(|s| s.sums().len()).sum();
        let width = file.series.iter().map(|s| s.width()).max().unwrap_or(1);
        writeln!(
            out,
            "MPI time series: {} ranks, {buckets} buckets of up to {width} events",
            file.series.len()
        )?;
    }
    Ok(())
}

/// mpiP-style profile: time from the merged timing, calls and bytes from
/// the expansion (`total`, over `ranks` ranks), the costliest site first.
fn write_site_profile(
    file: &TraceFile,
    total: &Profile,
    ranks: usize,
    out: &mut impl Write,
) -> Result<(), Error> {
    let mut times = HashMap::new();
    site_times(file.trace.nodes(), &mut times);
    let total_mpi: f64 = times.values().map(|v| v.0).sum();
    let app_ns = file.meta.wall_ns as f64 * ranks as f64;
    let labels = site_labels(file);
    let mut rows: Vec<_> = total
        .sites()
        .map(|(op, site, st)| {
            let (time, max) = times.get(&(op, site)).copied().unwrap_or_default();
            (op, site, st.calls, st.bytes_sent, time, max)
        })
        .collect();
    rows.sort_by(|a, b| b.4.total_cmp(&a.4).then(b.2.cmp(&a.2)));
    writeln!(out, "\nper call site (all ranks; time is time inside MPI):")?;
    // As wide as the longest name (MPI-IO's run to 25).
    let w = rows
        .iter()
        .map(|r| r.0.name().len())
        .max()
        .unwrap_or(0)
        .max(16);
    writeln!(
        out,
        "{:<w$} {:<32} {:>10} {:>12} {:>10} {:>10} {:>6} {:>6} {:>14}",
        "call", "site", "count", "time ms", "mean us", "max us", "app%", "mpi%", "bytes sent"
    )?;
    for (op, site, calls, bytes, time, max) in rows {
        let label = site_text(&labels, site);
        writeln!(
            out,
            "{:<w$} {:<32} {:>10} {:>12.3} {:>10.2} {:>10.2} {:>6.2} {:>6.2} {:>14}",
            op.name(),
            label,
            calls,
            time / 1e6,
            time / 1e3 / calls.max(1) as f64,
            max as f64 / 1e3,
            if app_ns > 0.0 {
                100.0 * time / app_ns
            } else {
                0.0
            },
            if total_mpi > 0.0 {
                100.0 * time / total_mpi
            } else {
                0.0
            },
            bytes
        )?;
    }
    Ok(())
}

/// MPI-IO per call site: the bytes written and read, the time inside the
/// calls (summed over the ranks, from the merged timing) and the bandwidth
/// the calling ranks saw together (their bytes over their mean time in the
/// calls, as Darshan estimates a job's), the busiest site first. Nothing is
/// printed for a trace without MPI-IO data.
fn write_io_profile(file: &TraceFile, x: &Expanded, out: &mut impl Write) -> Result<(), Error> {
    let mut times = HashMap::new();
    site_times(file.trace.nodes(), &mut times);
    let labels = site_labels(file);
    let mut rows: Vec<_> = x
        .total
        .sites()
        .filter(|(op, _, st)| {
            op.family() == trace::Family::Io && st.bytes_sent + st.bytes_received > 0
        })
        .map(|(op, site, st)| {
            let time = times.get(&(op, site)).map_or(0.0, |t| t.0);
            let ranks = x.site_ranks.get(&(op, site)).copied().unwrap_or(1);
            (op, site, st, time, ranks)
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    rows.sort_by(|a, b| {
        let bytes = |r: &(Op, u64, &trace::profile::SiteStats, f64, u32)| {
            r.2.bytes_sent + r.2.bytes_received
        };
        bytes(b).cmp(&bytes(a)).then(b.3.total_cmp(&a.3))
    });
    // Bytes per ns are GB/s; MB/s as I/O tools print it.
    let mbps = |bytes: u64, time: f64, ranks: u32| {
        if time > 0.0 {
            format!("{:.1}", bytes as f64 * f64::from(ranks) / time * 1e3)
        } else {
            "-".to_string()
        }
    };
    writeln!(
        out,
        "
MPI-IO per call site (all ranks; MB/s: the calling ranks' bytes over their mean time \
         in the calls; a nonblocking or split call's time is its start's only):"
    )?;
    writeln!(
        out,
        "{:<24} {:<32} {:>8} {:>6} {:>12} {:>14} {:>14} {:>10}",
        "call", "site", "count", "ranks", "time ms", "bytes written", "bytes read", "MB/s"
    )?;
    let (mut written, mut read, mut time_all) = (0u64, 0u64, 0f64);
    for (op, site, st, time, ranks) in rows {
        written += st.bytes_sent;
        read += st.bytes_received;
        time_all += time;
        writeln!(
            out,
            "{:<24} {:<32} {:>8} {:>6} {:>12.3} {:>14} {:>14} {:>10}",
            format!("MPI_{}", op.name()),
            site_text(&labels, site),
            st.calls,
            ranks,
            time / 1e6,
            st.bytes_sent,
            st.bytes_received,
            mbps(st.bytes_sent + st.bytes_received, time, ranks)
        )?;
    }
    writeln!(
        out,
        "MPI-IO in all: {written} bytes written, {read} bytes read, {:.3} ms inside the data \
         accesses (all ranks)",
        time_all / 1e6
    )?;
    if file.meta.paths.is_empty() {
        writeln!(
            out,
            "files: their paths were not kept (a run with RANKSCALE_IO_PATHS=1 keeps them)"
        )?;
    }
    crate::structure::write_paths(&file.meta, out)
}

/// The point-to-point matrix in bytes: in full up to 32 ranks, else the
/// heaviest pairs.
fn print_matrix(matrix: &[BTreeMap<i32, u64>], out: &mut impl Write) -> Result<(), Error> {
    let p = matrix.len();
    let total: u64 = matrix.iter().flat_map(|m| m.values()).sum();
    writeln!(
        out,
        "\npoint-to-point bytes sent (row = sender, column = receiver), {total} bytes in all:"
    )?;
    if p <= 32 {
        write!(out, "{:>6}", "")?;
        for c in 0..p {
            write!(out, " {c:>9}")?;
        }
        writeln!(out)?;
        for (r, row) in matrix.iter().enumerate() {
            write!(out, "{r:>6}")?;
            for c in 0..p {
                let b = i32::try_from(c)
                    .ok()
                    .and_then(|c| row.get(&c))
                    .copied()
                    .unwrap_or(0);
                write!(out, " {b:>9}")?;
            }
            writeln!(out)?;
        }
    } else {
        let mut pairs: Vec<(u64, usize, i32)> = matrix
            .iter()
            .enumerate()
            .flat_map(|(r, row)| row.iter().map(move |(c, b)| (*b, r, *c)))
            .collect();
        pairs.sort_unstable_by(|a, b| b.cmp(a));
        writeln!(
            out,
            "{} sender/receiver pairs; the 20 heaviest:",
            pairs.len()
        )?;
        for (b, r, c) in pairs.into_iter().take(20) {
            writeln!(out, "  {r:>6} -> {c:<6} {b:>14}")?;
        }
    }
    Ok(())
}

/// The raw logs of a directory, in rank order. Every rank from 0 to P-1
/// must be present, so that a partial directory is never taken for a
/// smaller run.
fn raw_logs(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |source| Error::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut ranks = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(r) = name
            .strip_prefix("rank-")
            .and_then(|s| s.strip_suffix(".txt"))
            .and_then(|s| s.parse::<usize>().ok())
        {
            ranks.insert(r, path);
        }
    }
    if ranks.is_empty() {
        return Err(Error::NoRawLogs {
            dir: dir.to_path_buf(),
        });
    }
    let n = ranks.len();
    if let Some((&last, _)) = ranks.last_key_value()
        && last + 1 != n
    {
        return Err(Error::MissingRawLogs {
            dir: dir.to_path_buf(),
            logs: n,
            highest: last,
        });
    }
    Ok(ranks.into_values().collect())
}

/// Writes the statistics of a raw log directory: events per operation and
/// the matrix.
pub fn write_raw_stats(dir: &Path, out: &mut impl Write) -> Result<(), Error> {
    let logs = raw_logs(dir)?;
    let p = logs.len();
    let mut total = Profile::new();
    let mut matrix = Vec::with_capacity(p);
    let mut per_rank = Vec::with_capacity(p);
    for path in &logs {
        let mut prof = Profile::new();
        for ev in &trace::raw::read_log(path).map_err(|e| Error::RawLog {
            path: path.clone(),
            source: e,
        })? {
            prof.add(ev);
            total.add(ev);
        }
        per_rank.push(prof.events());
        matrix.push(prof.sent_to().clone());
    }
    writeln!(
        out,
        "{}: {p} ranks, {} events",
        dir.display(),
        total.events()
    )?;
    writeln!(out, "\n{:<28} {:>10} {:>8}", "operation", "calls", "sites")?;
    let mut sites: BTreeMap<Op, usize> = BTreeMap::new();
    for (op, _, _) in total.sites() {
        *sites.entry(op).or_default() += 1;
    }
    for (op, calls) in total.calls_by_op() {
        writeln!(out, "{:<28} {:>10} {:>8}", op.name(), calls, sites[&op])?;
    }
    writeln!(
        out,
        "\nevents per rank: {}",
        per_rank
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    print_matrix(&matrix, out)?;
    Ok(())
}
