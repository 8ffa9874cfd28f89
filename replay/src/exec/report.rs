//! The replay's report: per-operation and per-call-site totals of each
//! replay thread, merged on the rank, reduced over the ranks (outside the
//! traced API) and printed by rank 0 as text or JSON.

use std::collections::HashMap;
use std::ffi::c_int;

use anyhow::Result;
use mpi_sys::*;
use trace::{Op, TraceFile};

use super::Replayer;
use crate::Opts;

/// A replay thread's part of the report.
pub(super) struct Summary {
    stats: Vec<OpStats>,
    sites: HashMap<(Op, u64), OpStats>,
    diverged: u64,
    latency: u64,
    early_partitions: u64,
    drawn_ns: f64,
    /// Bytes written and read by MPI-IO, and the accesses whose
    /// individual file pointer was moved (see `io`).
    io: [f64; 3],
}

/// The counts over all ranks that the report gives beside the operations.
pub(super) struct Counts {
    /// Racy outcomes that differed from the trace.
    diverged: f64,
    /// Latency races that could not be forced.
    given_up: f64,
    /// `Parrived` calls that found a partition the application's had not.
    early_partitions: f64,
    /// Computation drawn from the trace's histograms, ns (what a benchmark
    /// of `rankscale codegen` with the same seed draws too).
    drawn_ns: f64,
    /// Bytes MPI-IO was asked to write and to read.
    io_written: f64,
    io_read: f64,
    /// Accesses through an individual file pointer that was not where the
    /// application's was, moved there first.
    io_repositioned: f64,
}

/// Per-operation totals for the report: calls, bytes, seconds.
#[derive(Clone, Copy, Default)]
pub(super) struct OpStats {
    pub(super) calls: f64,
    pub(super) bytes: f64,
    pub(super) secs: f64,
}

impl Replayer<'_> {
    /// Frees the datatypes this replayer created and hands over its part
    /// of the report (which, unlike the MPI handles, may cross threads).
    pub(super) fn finish(mut self) -> Summary {
        self.free_types();
        Summary {
            stats: self.stats,
            sites: self.sites,
            diverged: self.diverged,
            latency: self.latency,
            early_partitions: self.early_partitions,
            drawn_ns: self.drawn_ns,
            io: [self.files.written, self.files.read, self.files.repositioned],
        }
    }

    /// Adds another thread's report to this one's.
    pub(super) fn absorb(&mut self, other: Summary) {
        for (a, b) in self.stats.iter_mut().zip(&other.stats) {
            a.calls += b.calls;
            a.bytes += b.bytes;
            a.secs += b.secs;
        }
        for (k, b) in &other.sites {
            let a = self.sites.entry(*k).or_default();
            a.calls += b.calls;
            a.bytes += b.bytes;
            a.secs += b.secs;
        }
        self.diverged += other.diverged;
        self.latency += other.latency;
        self.early_partitions += other.early_partitions;
        self.drawn_ns += other.drawn_ns;
        self.files.written += other.io[0];
        self.files.read += other.io[1];
        self.files.repositioned += other.io[2];
    }

    /// After the replay, on every rank (collective, outside the traced
    /// API): the end barrier, then on rank 0 the longest replay time
    /// (`mine` on this rank), the per-operation sums (calls, bytes,
    /// seconds of each) and the counts of divergences, of latency races
    /// (`given_up` on this rank) and of early partitions, the
    /// computation drawn, and the bytes of MPI-IO.
    pub(super) fn reduce_totals(
        &self,
        mine: f64,
        given_up: u64,
        world: MPI_Comm,
    ) -> (f64, Vec<f64>, Counts) {
        // SAFETY: a barrier on the world communicator, which every rank
        // reaches.
        unsafe { PMPI_Barrier(world) };
        let mut total = 0f64;
        // SAFETY: both buffers are single live doubles; every rank makes
        // this call.
        unsafe {
            PMPI_Reduce(
                (&raw const mine).cast(),
                (&raw mut total).cast(),
                1,
                RSMPI_DOUBLE,
                RSMPI_MAX,
                0,
                world,
            )
        };
        let flat: Vec<f64> = self
            .stats
            .iter()
            .flat_map(|s| [s.calls, s.bytes, s.secs])
            .chain([
                self.diverged as f64,
                given_up as f64,
                self.early_partitions as f64,
                self.drawn_ns,
                self.files.written,
                self.files.read,
                self.files.repositioned,
            ])
            .collect();
        let mut sums = vec![0f64; flat.len()];
        // SAFETY: `flat` and `sums` hold `flat.len()` doubles each and live
        // across the call; every rank passes the same length (one triple
        // per operation, then seven counts).
        unsafe {
            PMPI_Reduce(
                flat.as_ptr().cast(),
                sums.as_mut_ptr().cast(),
                flat.len() as c_int,
                RSMPI_DOUBLE,
                RSMPI_SUM,
                0,
                world,
            )
        };
        let io_repositioned = sums.pop().unwrap_or(0.0);
        let io_read = sums.pop().unwrap_or(0.0);
        let io_written = sums.pop().unwrap_or(0.0);
        let drawn_ns = sums.pop().unwrap_or(0.0);
        let early_partitions = sums.pop().unwrap_or(0.0);
        let given_up = sums.pop().unwrap_or(0.0);
        let diverged = sums.pop().unwrap_or(0.0);
        let counts = Counts {
            diverged,
            given_up,
            early_partitions,
            drawn_ns,
            io_written,
            io_read,
            io_repositioned,
        };
        (total, sums, counts)
    }
}

/// Totals per (operation, call site) over all ranks, on rank 0: every
/// rank's table is gathered (outside the traced API) and summed.
pub(super) fn gather_sites(
    mine: &HashMap<(Op, u64), OpStats>,
    rank: i32,
    world: MPI_Comm,
) -> Result<Vec<((Op, u64), OpStats)>> {
    let flat: Vec<u64> = mine
        .iter()
        .flat_map(|(&(op, site), s)| {
            [
                op as u64,
                site,
                s.calls as u64,
                s.bytes as u64,
                (s.secs * 1e9) as u64,
            ]
        })
        .collect();
    let mut size: c_int = 0;
    // SAFETY: world is valid after MPI_Init.
    unsafe { PMPI_Comm_size(world, &mut size) };
    let all = crate::tokens::gather(&flat, world, size as usize, rank)?.concat();
    if rank != 0 {
        return Ok(Vec::new());
    }
    let mut sum: HashMap<(Op, u64), OpStats> = HashMap::new();
    for c in all.chunks_exact(5) {
        let Some(&op) = Op::ALL.get(c[0] as usize) else {
            continue;
        };
        let e = sum.entry((op, c[1])).or_default();
        e.calls += c[2] as f64;
        e.bytes += c[3] as f64;
        e.secs += c[4] as f64 / 1e9;
    }
    let mut v: Vec<_> = sum.into_iter().collect();
    v.sort_by(|a, b| {
        b.1.secs
            .total_cmp(&a.1.secs)
            .then(b.1.calls.total_cmp(&a.1.calls))
    });
    Ok(v)
}

/// Prints the report on rank 0: replay and application times, the racy
/// outcomes that differed or could not be forced, the totals per
/// operation (`sums`, three per operation of `Op::ALL`) and the 20 call
/// sites with the most time in MPI, and for a trace with MPI-IO the
/// scratch directory (`iodir`, with whether it was made for the replay and
/// removed) and the bytes written and read;
/// with `--json`, all of it as one JSON object.
pub(super) fn report(
    opts: &Opts,
    file: &TraceFile,
    total: f64,
    sums: &[f64],
    counts: Counts,
    sites: &[((Op, u64), OpStats)],
    iodir: Option<(String, bool)>,
) {
    let Counts {
        diverged,
        given_up,
        early_partitions,
        drawn_ns,
        io_written,
        io_read,
        io_repositioned,
    } = counts;
    let labels = file.meta.site_labels();
    let label = |site: u64| trace::file::site_text(&labels, site);
    let rows: Vec<(Op, f64, f64, f64)> = Op::ALL
        .iter()
        .enumerate()
        .map(|(i, &op)| (op, sums[3 * i], sums[3 * i + 1], sums[3 * i + 2]))
        .filter(|r| r.1 > 0.0)
        .collect();
    if opts.json {
        let v = serde_json::json!({
            "file": opts.file.display().to_string(),
            "ranks": file.trace.ranks().len(),
            "replay_seconds": total,
            "application_seconds": file.meta.wall_ns as f64 / 1e9,
            "application_extrapolated": file.meta.is_extrapolated(),
            "outcome_divergences": diverged,
            "latency_races": given_up,
            "early_partitions": early_partitions,
            "computation_drawn_ns": drawn_ns,
            "io_dir": iodir.as_ref().map(|d| &d.0),
            "io_dir_removed": iodir.as_ref().is_some_and(|d| d.1),
            "io_bytes_written": io_written,
            "io_bytes_read": io_read,
            "io_repositioned_accesses": io_repositioned,
            "operations": rows.iter().map(|(op, calls, bytes, secs)| serde_json::json!({
                "op": op.name(), "calls": calls, "bytes_sent": bytes, "seconds_in_mpi": secs,
            })).collect::<Vec<_>>(),
            "call_sites": sites.iter().map(|((op, site), s)| serde_json::json!({
                "op": op.name(), "site": format!("{site:016x}"), "site_label": label(*site),
                "calls": s.calls, "bytes_sent": s.bytes, "seconds_in_mpi": s.secs,
            })).collect::<Vec<_>>(),
        });
        println!("{v:#}");
        return;
    }
    println!(
        "replay of {}: {} ranks, {:.3} s (application{}: {:.3} s)",
        opts.file.display(),
        file.trace.ranks().len(),
        total,
        if file.meta.is_extrapolated() {
            ", extrapolated"
        } else {
            ""
        },
        file.meta.wall_ns as f64 / 1e9
    );
    if let Some((d, made)) = &iodir {
        let what = if *made {
            "made for the replay, removed"
        } else {
            "given, kept"
        };
        println!(
            "MPI-IO in {d} ({what}): {io_written} bytes written, {io_read} bytes read (as asked of MPI)"
        );
    }
    if io_repositioned > 0.0 {
        println!(
            "{io_repositioned} accesses through an individual file pointer found it elsewhere than the application's (a read found fewer bytes: the replay's file was shorter) and moved it to the recorded offset first"
        );
    }
    if given_up > 0.0 {
        println!(
            "{given_up} latency races not forced: in the application a message was still in flight when a racy call missed it, although its send came first (a hold would deadlock the replay), or a send request completed later than in the replay; no order of calls reproduces these"
        );
    }
    if early_partitions > 0.0 {
        println!(
            "{early_partitions} Parrived latency races not forced: the partition had arrived where in the application it had not yet (replay marks partitions ready as early as the trace allows and holds no MPI_Pready back)"
        );
    }
    if diverged > 0.0 {
        println!(
            "{diverged} outcomes of racy calls differed from the trace (wildcard receives that matched another message, Waitany/Waitsome/Test calls that completed other requests); the replay followed MPI and left out completions of requests already complete"
        );
    }
    println!(
        "{:<24} {:>12} {:>16} {:>14}",
        "operation", "calls", "bytes sent", "time in MPI s"
    );
    for (op, calls, bytes, secs) in rows {
        println!("{:<24} {calls:>12} {bytes:>16} {secs:>14.6}", op.name());
    }
    println!(
        "\nper call site of the application (the 20 with the most time in MPI):\n{:<16} {:<32} {:>12} {:>16} {:>14}",
        "operation", "site", "calls", "bytes sent", "time in MPI s"
    );
    for ((op, site), s) in sites.iter().take(20) {
        println!(
            "{:<16} {:<32} {:>12} {:>16} {:>14.6}",
            op.name(),
            label(*site),
            s.calls,
            s.bytes,
            s.secs
        );
    }
}
