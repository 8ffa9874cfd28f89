//! Offline simulation of a trace at its own scale (Wu and Mueller 2012,
//! §6; see docs/REFERENCES.md): the run a trace stands for, predicted in
//! the LogGOPS model (Hoefler, Schneider and Lumsdaine 2010) without MPI
//! and without the machine, so that a trace extrapolated to more ranks than
//! any machine at hand has can still be costed, and a future network can be
//! tried by changing its parameters.
//!
//! Every rank's events are walked in order. Computation between calls comes
//! from the rank's recorded timeline, or is drawn from the trace's timing
//! histograms with `replay`'s generator, seeded per position class.
//! Point-to-point messages are matched as MPI matches them and costed eager
//! or rendezvous by the `S` threshold; collectives run the algorithms MPICH
//! picks by size (Thakur, Rabenseifner and Gropp 2005). Ranks that run the
//! same program with neighbours of the same kind are simulated once (class
//! mode). The result is the predicted time per rank, per call site and
//! along the critical path.
//!
//! The crate is pure: it reads a [`TraceFile`] and calls no MPI.
//! `rankscale calibrate` (which runs `replay-calibrate` under `mpirun`)
//! measures the parameters of the machine at hand.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calibrate;
mod classes;
mod coll;
mod engine;
pub mod params;

use std::fmt::Write;
use std::time::Instant;

use serde::Serialize;
use trace::TraceFile;

pub use params::Params;

/// What keeps a trace from being simulated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter file or value that cannot be used.
    #[error("{0}")]
    Params(String),
    /// The trace cannot be split into ranks.
    #[error("cannot take rank {rank}'s part of the trace: {why}")]
    Project {
        /// The rank.
        rank: u32,
        /// Why.
        why: String,
    },
    /// A trace whose expansion stops early.
    #[error("rank {0}'s part of the trace is inconsistent (its expansion stops early)")]
    Broken(u32),
    /// Calls from several threads of a rank.
    #[error(
        "the trace has MPI calls from several threads of a rank (rank {0}); the simulator runs \
         one thread per rank"
    )]
    Threads(u32),
    /// A trace with no ranks.
    #[error("the trace has no ranks")]
    Empty,
    /// Class mode was asked for and the trace's ranks are not symmetric.
    #[error("the ranks cannot be simulated by class: {0}")]
    Asymmetric(String),
    /// No rank can go on and some have not finished.
    #[error("{}", deadlock_text(.0))]
    Deadlock(Vec<Blocked>),
    /// The trace of a job that died: some ranks' events end early, and
    /// others wait for them.
    #[error(
        "the trace is of a job that ended early ({ends_early} rank(s) stop before MPI_Finalize; \
         `rankscale show` lists them), so the rest cannot finish: {}",
        deadlock_text(.blocked)
    )]
    Partial {
        /// Ranks whose part ends early.
        ends_early: usize,
        /// Ranks left waiting.
        blocked: Vec<Blocked>,
    },
}

fn deadlock_text(b: &[Blocked]) -> String {
    let mut s = format!(
        "the trace deadlocks under the model: {} rank(s) wait forever",
        b.len()
    );
    for x in b.iter().take(16) {
        let _ = write!(
            s,
            "\n  rank {} in MPI_{} (event {}, site {:016x}): waits for {}",
            x.rank,
            x.op,
            x.event,
            x.site,
            if x.waits_for.is_empty() {
                "?"
            } else {
                &x.waits_for
            }
        );
    }
    if b.len() > 16 {
        let _ = write!(s, "\n  … and {} more", b.len() - 16);
    }
    s
}

/// A rank that cannot go on, and what it waits for.
#[derive(Clone, Debug, Serialize)]
pub struct Blocked {
    /// The rank.
    pub rank: u32,
    /// The call it is in (without `MPI_`).
    pub op: &'static str,
    /// Its call site.
    pub site: u64,
    /// The call's index in the rank's events, from 1.
    pub event: u64,
    /// The messages, requests or collective it waits on.
    pub waits_for: String,
}

/// How ranks are simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// By class where the trace has far fewer classes than ranks and no
    /// recorded timeline, else rank by rank.
    Auto,
    /// One representative per position class: ranks whose parts of the
    /// trace are the same (relative peers, same statistics) are simulated
    /// once, and their neighbours' classes feed them.
    Classes,
    /// Every rank.
    Ranks,
}

/// What to simulate beyond the trace and the machine.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Multiply every computation time by this (what if computation were
    /// faster or slower).
    pub compute_scale: f64,
    /// Multiply every message's size by this.
    pub bytes_scale: f64,
    /// Leave computation out: the communication alone.
    pub no_compute: bool,
    /// Seed of the computation draws (`replay`'s default is 1).
    pub seed: u64,
    /// Cores shared by all ranks, for a run with more ranks than cores
    /// (an oversubscribed node): the ranks that compute share them fairly,
    /// as the operating system shares them. `None`: one core per rank.
    pub cores: Option<u32>,
    /// Take each rank's computation from its recorded timeline when the
    /// trace has one (`RANKSCALE_TIMELINE=1`), event by event, instead of
    /// drawing it from the histograms (rank by rank only).
    pub timeline: bool,
    /// By class or rank by rank.
    pub mode: Mode,
    /// The file system, for MPI-IO calls; `None`: no file system is
    /// modelled and the calls are free (the prediction says so).
    pub io: Option<IoModel>,
}

/// The file system MPI-IO calls meet (`simulate --io-bandwidth`,
/// `--io-latency`). A deliberately small model, because a trace records
/// what the application asked of the file system and nothing of how the
/// file system served it: one aggregate bandwidth that every rank of a
/// file shares, and one latency per call. What it takes and leaves out is
/// in the module `engine::io` and docs/SIMULATE.md.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct IoModel {
    /// The file system's aggregate bandwidth, bytes per ns (= GB/s).
    pub bandwidth: f64,
    /// The time of one call at the file system before any byte moves, ns.
    pub latency: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            compute_scale: 1.0,
            bytes_scale: 1.0,
            no_compute: false,
            seed: 1,
            cores: None,
            timeline: true,
            mode: Mode::Auto,
            io: None,
        }
    }
}

/// One rank's predicted run.
#[derive(Clone, Debug, Serialize)]
pub struct RankTime {
    /// The rank.
    pub rank: u32,
    /// From `MPI_Init` to `MPI_Finalize`, ns.
    pub time_ns: f64,
    /// Of which computation, ns.
    pub compute_ns: f64,
    /// Of which inside MPI (overheads, transfers and waiting), ns.
    pub mpi_ns: f64,
    /// Its events.
    pub events: u64,
    /// The ranks it stands for (its class's size in class mode, else 1).
    pub ranks: u64,
}

/// One call site's predicted cost.
#[derive(Clone, Debug, Serialize)]
pub struct SiteTime {
    /// The operation (without `MPI_`).
    pub op: &'static str,
    /// The site's signature.
    pub site: u64,
    /// `function file:line` where the trace knows it.
    pub location: String,
    /// Calls, over every rank.
    pub calls: u64,
    /// Time inside these calls summed over every rank, ns.
    pub time_ns: f64,
    /// Its part of the critical path, ns.
    pub critical_ns: f64,
}

/// The longest chain of dependencies through the run: what the run's
/// length is made of.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalPath {
    /// Its length (the predicted time), ns.
    pub length_ns: f64,
    /// Computation on it, ns.
    pub compute_ns: f64,
    /// Time in MPI calls on it (overheads, transfers, waiting), ns.
    pub mpi_ns: f64,
}

/// One seed's run of [`simulate_seeds`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SeedRun {
    /// The seed of the computation draws.
    pub seed: u64,
    /// The predicted time of the run (the last rank's), ns.
    pub time_ns: f64,
    /// Rank 0's predicted time, ns.
    pub rank0_ns: f64,
}

/// A simulation's result.
#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    /// Ranks simulated.
    pub ranks: u32,
    /// The predicted time of the run (the last rank's), ns.
    pub time_ns: f64,
    /// Rank 0's predicted time, ns: what the trace's recorded wall time
    /// (rank 0's) compares to.
    pub rank0_ns: f64,
    /// The traced run's wall time on rank 0, ns, when the trace comes from
    /// a traced run.
    pub traced_ns: Option<u64>,
    /// How ranks were simulated.
    pub mode: String,
    /// Where the computation between calls came from.
    pub computation: &'static str,
    /// The machine.
    pub params: Params,
    /// The shared cores, when `--cores` was given.
    pub cores: Option<u32>,
    /// With `cores`, when the traced run's recorded computation over all
    /// ranks was more than its cores could do in its time: the factor every
    /// computation was scaled by (see [`contended_share`]).
    pub contended: Option<f64>,
    /// The run's events (every rank's).
    pub events: u64,
    /// Events the simulation went through (fewer than `events` in class
    /// mode).
    pub simulated_events: u64,
    /// Point-to-point messages.
    pub messages: u64,
    /// Collective operations (each counted once, not per member).
    pub collectives: u64,
    /// One-sided calls modelled (see the approximations in
    /// [`Prediction::to_text`] and docs/SIMULATE.md).
    pub one_sided: u64,
    /// MPI-IO calls: modelled with [`Prediction::io_model`], else taken as
    /// local calls of no cost.
    pub io: u64,
    /// The file system the MPI-IO calls met, when one was given.
    pub io_model: Option<IoModel>,
    /// The simulation's own wall time, s.
    pub elapsed_s: f64,
    /// Per rank.
    pub per_rank: Vec<RankTime>,
    /// Per call site, most time first.
    pub sites: Vec<SiteTime>,
    /// The critical path.
    pub critical: CriticalPath,
    /// The seed of the computation draws of this run.
    pub seed: u64,
    /// With [`simulate_seeds`] and more than one seed: every seed's run, in
    /// the order of the seeds (this prediction is the median one's).
    pub seeds: Vec<SeedRun>,
}

/// Rounds of neighbourhood refinement of the classes at most: ranks up to
/// this many hops from a class boundary are told apart (on a 64 x 64
/// stencil one round already brings class mode within 0.001 % of rank by
/// rank; three give 81 classes in 2D and 729 in 3D).
const REFINE_ROUNDS: usize = 3;
/// The most classes refinement makes.
const CLASS_BUDGET: usize = 1024;

/// The distinct peers of `rank`'s events, relative to it, in order of
/// first use.
fn peer_offsets(t: &trace::Trace, rank: u32) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    for e in t.expand() {
        let matched = e.matched.iter().map(|m| m.source);
        let peers = [e.send, e.recv]
            .into_iter()
            .flatten()
            .filter_map(|x| x.peer.world())
            .chain(matched);
        for w in peers {
            let off = i64::from(w) - i64::from(rank);
            if !out.contains(&off) {
                out.push(off);
            }
        }
    }
    out
}

/// A deadlock of a trace whose job died is that job's early end.
fn partial(file: &TraceFile, e: Error) -> Error {
    match e {
        Error::Deadlock(blocked) if !file.meta.partial.is_empty() => Error::Partial {
            ends_early: file.meta.partial.len(),
            blocked,
        },
        e => e,
    }
}

/// The share of a core the traced run's computation had, when its ranks
/// recorded more computation than `cores` cores could do in its time.
///
/// The trace records the time between calls on the wall clock. On a node
/// with fewer cores than ranks, a computation longer than the scheduler's
/// time slice is preempted, and its wall time holds the waits for a core
/// (NPB FT A at 16 ranks on 2 cores: 19.4 s of computation in a 1.63 s run,
/// six times what 2 cores can do). `--cores` would then share the cores a
/// second time. The recorded computation cannot have needed more than
/// `cores` × the run's time of CPU, so it is scaled down to that; `None`
/// when it fits (every computation was at most briefly preempted), for
/// extrapolated traces (their times are predictions), and without `cores`
/// or with as many as there are ranks.
pub fn contended_share(file: &TraceFile, cores: Option<u32>) -> Option<f64> {
    fn walk(n: &trace::MNode, acc: &mut f64) {
        match n {
            // The time before MPI_Init is the launch, not the application's
            // (the simulation leaves it out too).
            trace::MNode::Event(e)
                if !matches!(e.shape().op(), trace::Op::Init | trace::Op::InitThread) =>
            {
                let t = e.timing().total();
                *acc += t.compute().stats().mean() * t.count() as f64;
            }
            trace::MNode::Loop(l) => l.body().iter().for_each(|b| walk(b, acc)),
            _ => {}
        }
    }
    let cores = cores?;
    let wall = file.meta.wall_ns as f64;
    let ranks = file
        .trace
        .ranks()
        .len()
        .max(u64::from(file.meta.world_size));
    // With a core per rank nothing is shared: more computation than the
    // cores' time is then sleeping, not waiting for a core.
    if file.meta.is_extrapolated() || wall <= 0.0 || ranks <= u64::from(cores) {
        return None;
    }
    let cores = f64::from(cores);
    let mut total = 0.0;
    file.trace.nodes().iter().for_each(|n| walk(n, &mut total));
    let capacity = cores * wall;
    (total > capacity).then(|| capacity / total)
}

/// Simulates `file` on the machine `net`.
pub fn simulate(file: &TraceFile, net: &Params, opts: &Options) -> Result<Prediction, Error> {
    net.validate()?;
    let contended = contended_share(file, opts.cores);
    let scaled = Options {
        compute_scale: opts.compute_scale * contended.unwrap_or(1.0),
        ..*opts
    };
    let opts = &scaled;
    let start = Instant::now();
    let p = file
        .trace
        .ranks()
        .len()
        .max(u64::from(file.meta.world_size)) as u32;
    if p == 0 {
        return Err(Error::Empty);
    }
    // The draws' streams: one per class of the structure. Timing variants
    // split the simulated classes but not the streams: ranks whose
    // computation differs (noise of an oversubscribed node, mostly) would
    // otherwise draw independently, and each bulk-synchronous step would
    // wait for the slowest of their draws (NPB FT at 64 ranks on 2 cores:
    // predicted 3.5 times its run).
    let (cls, streams) = classes::classes(&file.trace, p);
    let streams = streams.as_ref().unwrap_or(&cls);
    let seed_of: Vec<u32> = streams
        .of
        .iter()
        .map(|&c| streams.reps[c as usize])
        .collect();
    let n_classes = cls.reps.len();
    let timed_any = opts.timeline && (0..p).any(|r| file.timeline(r).is_some());
    let by_class = match opts.mode {
        Mode::Ranks => false,
        Mode::Classes => true,
        Mode::Auto => 2 * n_classes <= p as usize && !timed_any && file.trace.spilled_events() == 0,
    };
    // Each rank deals its draws as the rank of its stream does, as it draws.
    let project = |ranks: &[u32]| {
        ranks
            .iter()
            .map(|&r| {
                file.trace
                    .rank_trace_drawing_as(r, seed_of[r as usize])
                    .map_err(|e| Error::Project {
                        rank: r,
                        why: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let mut timed = 0;
    let mut mode = String::new();
    let mut run = None;
    if by_class {
        // The draws follow the classes of the trace's structure (above);
        // the simulated classes are those refined by their neighbourhoods.
        let offsets: Vec<Vec<i64>> = project(&cls.reps)?
            .iter()
            .zip(&cls.reps)
            .map(|(t, &r)| peer_offsets(t, r))
            .collect();
        let mut fine = classes::Classes {
            of: cls.of.clone(),
            reps: cls.reps.clone(),
            sizes: cls.sizes.clone(),
        };
        fine.refine(&offsets, REFINE_ROUNDS, CLASS_BUDGET.max(n_classes));
        let traces = project(&fine.reps)?;
        let layout = engine::Layout {
            world: fine.reps.clone(),
            stand_in: fine.of.clone(),
            seed_rank: fine.reps.iter().map(|&r| seed_of[r as usize]).collect(),
            weight: fine.sizes.clone(),
            classes: true,
        };
        match engine::Engine::new(&traces, layout, Vec::new(), *net, *opts)
            .run()
            .map_err(|e| partial(file, e))
        {
            Ok(out) => {
                mode = format!(
                    "by class: {} classes ({n_classes} by structure, split by neighbourhood) for \
                     {p} ranks",
                    fine.reps.len()
                );
                run = Some((out, fine.reps, fine.sizes));
            }
            Err(Error::Asymmetric(why)) if opts.mode == Mode::Auto => {
                mode = format!("rank by rank ({why}: the classes do not hold)");
            }
            Err(e) => return Err(e),
        }
    }
    let (out, world, weight) = match run {
        Some(x) => x,
        None => {
            let all: Vec<u32> = (0..p).collect();
            let traces = project(&all)?;
            // Recorded computation where the trace has each rank's timeline
            // (and it covers every event), else draws from the histograms.
            let spans: Vec<Option<Vec<trace::Span>>> = (0..p)
                .map(|r| {
                    let t = file.timeline(r).filter(|_| opts.timeline)?;
                    let s = t.spans().ok()?;
                    (s.len() as u64 == traces[r as usize].stats().events).then(|| {
                        timed += 1;
                        s
                    })
                })
                .collect();
            let layout = engine::Layout {
                world: all.clone(),
                stand_in: all.clone(),
                seed_rank: seed_of.clone(),
                weight: vec![1; p as usize],
                classes: false,
            };
            if mode.is_empty() {
                mode = "rank by rank".to_string();
            }
            let out = engine::Engine::new(&traces, layout, spans, *net, *opts)
                .run()
                .map_err(|e| partial(file, e))?;
            (out, all, vec![1; p as usize])
        }
    };
    let elapsed_s = start.elapsed().as_secs_f64();
    let labels = file.meta.site_labels();
    let per_rank: Vec<RankTime> = out
        .ranks
        .iter()
        .enumerate()
        .map(|(i, x)| RankTime {
            rank: world[i],
            time_ns: x.end,
            compute_ns: x.compute,
            mpi_ns: x.mpi,
            events: x.events,
            ranks: weight[i],
        })
        .collect();
    let mut sites: Vec<SiteTime> = out
        .sites
        .list
        .iter()
        .enumerate()
        .map(|(i, &(site, op))| SiteTime {
            op: op.name(),
            site,
            location: trace::file::site_text(&labels, site),
            calls: out.site_time.get(i).map_or(0, |x| x.0),
            time_ns: out.site_time.get(i).map_or(0.0, |x| x.1),
            critical_ns: out.critical.get(i + 1).copied().unwrap_or(0.0),
        })
        .collect();
    sites.sort_by(|a, b| b.time_ns.total_cmp(&a.time_ns));
    let time_ns = per_rank.iter().map(|r| r.time_ns).fold(0.0, f64::max);
    let compute = out.critical.first().copied().unwrap_or(0.0);
    let on_path: f64 = out.critical.iter().sum();
    Ok(Prediction {
        ranks: p,
        time_ns,
        rank0_ns: per_rank.first().map_or(0.0, |r| r.time_ns),
        traced_ns: (!file.meta.is_extrapolated() && file.meta.wall_ns > 0)
            .then_some(file.meta.wall_ns),
        mode,
        computation: if timed == p {
            RECORDED
        } else if timed > 0 {
            "recorded for some ranks, drawn for the others"
        } else {
            "drawn from the histograms"
        },
        params: *net,
        cores: opts.cores,
        contended,
        events: per_rank.iter().map(|r| r.events * r.ranks).sum(),
        simulated_events: per_rank.iter().map(|r| r.events).sum(),
        messages: out.messages,
        collectives: out.collectives,
        one_sided: out.one_sided,
        io: out.io,
        io_model: opts.io,
        elapsed_s,
        per_rank,
        sites,
        critical: CriticalPath {
            length_ns: on_path,
            compute_ns: compute,
            mpi_ns: on_path - compute,
        },
        seed: opts.seed,
        seeds: Vec::new(),
    })
}

/// What [`Prediction::computation`] says when every rank's computation
/// came from its timeline: the seed then draws nothing.
const RECORDED: &str = "recorded (timeline)";

/// [`simulate`] with `n` seeds from `opts.seed` on (`seed`, `seed + 1`,
/// ...): the prediction of the run whose rank 0 takes the median time
/// (the lower of the two middle ones for an even `n`), with every run's
/// times in [`Prediction::seeds`]. Where the computation is drawn from
/// histograms, the seed decides which bins and which one-rank accidents
/// fall where, and a few long computations can move a short run by tens
/// of per cent (NPB MG W at 2 ranks: +1 to +28 % over three traces and
/// three seeds each); the spread says how much of a prediction is the
/// seed's. With every rank's timeline recorded there is nothing to draw,
/// and one run is made. [`Prediction::elapsed_s`] stays the shown run's own
/// (the simulator's speed), so the runs together took about `n` times it.
pub fn simulate_seeds(
    file: &TraceFile,
    net: &Params,
    opts: &Options,
    n: u32,
) -> Result<Prediction, Error> {
    let first = simulate(file, net, opts)?;
    if n <= 1 || first.computation == RECORDED {
        return Ok(first);
    }
    let mut runs = vec![first];
    for i in 1..n {
        let seed = opts.seed.wrapping_add(u64::from(i));
        runs.push(simulate(file, net, &Options { seed, ..*opts })?);
    }
    let seeds: Vec<SeedRun> = runs
        .iter()
        .map(|p| SeedRun {
            seed: p.seed,
            time_ns: p.time_ns,
            rank0_ns: p.rank0_ns,
        })
        .collect();
    runs.sort_by(|a, b| a.rank0_ns.total_cmp(&b.rank0_ns));
    let mut pred = runs.swap_remove((runs.len() - 1) / 2);
    pred.seeds = seeds;
    Ok(pred)
}

/// A parameter's value with at most four decimals and no trailing zeros.
fn num(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn secs(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.1} us", ns / 1e3)
    }
}

/// Calls per rank and second of the traced run above which the tracer's
/// own cost is a visible part of it (1 % at 1 µs a call).
const DENSE_CALLS_PER_RANK_S: f64 = 10_000.0;

impl Prediction {
    /// The traced run's MPI calls per rank and second of rank 0's time, when
    /// the trace comes from a run: what decides how much the tracer
    /// lengthened that run.
    pub fn traced_call_rate(&self) -> Option<f64> {
        let t = self.traced_ns.filter(|&t| t > 0)? as f64 / 1e9;
        Some(self.events as f64 / f64::from(self.ranks.max(1)) / t)
    }

    /// The prediction as text: the headline, the critical path, the top
    /// call sites and (with `ranks`) one line per rank.
    pub fn to_text(&self, ranks: bool, top: usize) -> String {
        let mut s = String::new();
        let p = &self.params;
        let _ = writeln!(
            s,
            "predicted time: {} over {} ranks ({}, computation {}; L={} ns, o={} ns, g={} ns, G={} ns/B, O={} \
             ns/B, S={} B)",
            secs(self.time_ns),
            self.ranks,
            self.mode,
            self.computation,
            num(p.latency),
            num(p.overhead),
            num(p.gap),
            num(p.gap_per_byte),
            num(p.overhead_per_byte),
            p.eager_limit
        );
        if let (Some(lo), Some(hi)) = (
            self.seeds.iter().map(|r| r.rank0_ns).min_by(f64::total_cmp),
            self.seeds.iter().map(|r| r.rank0_ns).max_by(f64::total_cmp),
        ) {
            let _ = writeln!(
                s,
                "over {} seeds ({} to {}): rank 0 from {} to {} ({:+.1} to {:+.1} % of the \
                 median); this is the median run, seed {}'s",
                self.seeds.len(),
                self.seeds[0].seed,
                self.seeds[self.seeds.len() - 1].seed,
                secs(lo),
                secs(hi),
                100.0 * (lo - self.rank0_ns) / self.rank0_ns,
                100.0 * (hi - self.rank0_ns) / self.rank0_ns,
                self.seed
            );
        }
        match self.traced_ns {
            Some(t) => {
                let _ = writeln!(
                    s,
                    "rank 0: {} predicted, {} in the traced run ({:+.1} %)",
                    secs(self.rank0_ns),
                    secs(t as f64),
                    100.0 * (self.rank0_ns - t as f64) / t as f64
                );
                if (t as f64) > 1.5 * self.rank0_ns && self.cores.is_none() {
                    let _ = writeln!(
                        s,
                        "note: the traced run took {:.1} times the prediction; if it ran more \
                         ranks than its node had cores, --cores N shares N cores among them",
                        t as f64 / self.rank0_ns.max(1.0)
                    );
                }
                if let (Some(f), Some(c)) = (self.contended, self.cores) {
                    let _ = writeln!(
                        s,
                        "note: the trace records more computation than {c} cores could do in the \
                         traced run's time: its ranks waited for a core inside it; every \
                         computation is scaled by {f:.3} before the cores are shared"
                    );
                }
                let rate = self.traced_call_rate().unwrap_or(0.0);
                if rate >= DENSE_CALLS_PER_RANK_S {
                    let _ = writeln!(
                        s,
                        "note: the traced run made {rate:.0} calls per rank-second, and each cost \
                         it the tracer's 0.1 to 3 us (more with many ranks per core): to hold the \
                         prediction against the application alone, time an untraced run with \
                         benches/walltime (see the README)"
                    );
                }
            }
            None => {
                let _ = writeln!(s, "rank 0: {} predicted", secs(self.rank0_ns));
            }
        }
        if let Some(c) = self.cores.filter(|&c| c < self.ranks) {
            let _ = writeln!(
                s,
                "note: {} ranks share {c} cores; the model shares them among computing ranks \
                 only, without the scheduling of ranks that poll and yield in MPI: on a 2-core \
                 test machine it predicted NPB LU and BT 16 to 40 % short at 2 to 32 ranks per \
                 core (docs/SIMULATE.md)",
                self.ranks
            );
        }
        let _ = writeln!(
            s,
            "simulated {} events ({} in the run), {} messages, {} collectives in {:.3} s ({:.2} M \
             events/s)",
            self.simulated_events,
            self.events,
            self.messages,
            self.collectives,
            self.elapsed_s,
            self.simulated_events as f64 / self.elapsed_s.max(1e-9) / 1e6
        );
        if self.one_sided > 0 {
            let _ = writeln!(
                s,
                "one-sided: {} calls modelled as messages that need no receive, completed at their \
                 epoch's closing call (fences as the window's barrier, PSCW as notices, locks as \
                 round trips that never contend; the target's CPU takes no part)",
                self.one_sided
            );
        }
        match (self.io, self.io_model) {
            (0, _) => {}
            (n, Some(m)) => {
                let _ = writeln!(
                    s,
                    "MPI-IO: {n} calls on a file system of {:.3} GB/s shared by each file's ranks \
                     and {} per call (collective calls meet as a barrier, then move all \
                     members' bytes; independent accesses get an equal share of the bandwidth; \
                     no caching, striping or contention between files is modelled)",
                    m.bandwidth,
                    secs(m.latency)
                );
            }
            (n, None) => {
                let _ = writeln!(
                    s,
                    "MPI-IO: {n} calls taken as local calls of no cost (no file system is \
                     modelled: their time is not in the prediction; give --io-bandwidth)"
                );
            }
        }
        let c = &self.critical;
        let share = |x: f64| 100.0 * x / c.length_ns.max(1e-9);
        let _ = writeln!(
            s,
            "critical path: {}: computation {} ({:.1} %), MPI {} ({:.1} %)",
            secs(c.length_ns),
            secs(c.compute_ns),
            share(c.compute_ns),
            secs(c.mpi_ns),
            share(c.mpi_ns)
        );
        // As wide as the longest name listed (MPI-IO's run to 29).
        let w = self
            .sites
            .iter()
            .take(top)
            .map(|x| x.op.len() + 4)
            .max()
            .unwrap_or(0)
            .max(16);
        let _ = writeln!(
            s,
            "\n{:<w$} {:>10} {:>12} {:>12} {:>8}  location",
            "call", "calls", "time/rank", "on path", "path %"
        );
        for x in self.sites.iter().take(top) {
            let _ = writeln!(
                s,
                "{:<w$} {:>10} {:>12} {:>12} {:>7.1}%  {}",
                format!("MPI_{}", x.op),
                x.calls,
                secs(x.time_ns / f64::from(self.ranks)),
                secs(x.critical_ns),
                share(x.critical_ns),
                x.location
            );
        }
        if ranks {
            let _ = writeln!(
                s,
                "\n{:>8} {:>12} {:>12} {:>12} {:>10} {:>9}",
                "rank", "time", "computation", "MPI", "events", "ranks"
            );
            for r in &self.per_rank {
                let _ = writeln!(
                    s,
                    "{:>8} {:>12} {:>12} {:>12} {:>10} {:>9}",
                    r.rank,
                    secs(r.time_ns),
                    secs(r.compute_ns),
                    secs(r.mpi_ns),
                    r.events,
                    r.ranks
                );
            }
        }
        s
    }
}
