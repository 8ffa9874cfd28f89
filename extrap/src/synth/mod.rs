//! The extrapolation itself: position classes, alignment, fitting and the
//! synthetic trace (see the [crate documentation](crate)).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use compress::{Compressor, Config};

use trace::{
    Dist, Event, EventTiming, MergedTrace, Meta, Op, PathClass, PathTiming, Quantity, RankList,
    Shape, TimeStats, Timing, TraceFile, codec,
};

use crate::Error;
use crate::fit::{self, FitFailure};
use crate::lossy::{self, Snippet};
use crate::models::{self, Law, Method};
use crate::plugin::{Field, Plugin};
use crate::topology::{self, Layout, Pos, RankInfo, Topology, rank_at};

mod align;
mod assume;
mod grid;
mod symbolic;
mod timefit;

use align::{
    Fitter, Item, Target, first_difference, fit_items, fold_all, items_differ, synthesize,
};
use symbolic::{STEP_MASK, SYMBOL, extrapolate_with_plugin};
use timefit::{fit_fields, fit_timing};

pub use grid::DimsOrder;

/// One input trace and the name to report it by.
pub struct Input {
    /// The file name (for messages).
    pub name: String,
    /// The trace.
    pub file: TraceFile,
}

/// What to extrapolate to.
#[derive(Clone)]
pub struct Options {
    /// The target rank count.
    pub ranks: u64,
    /// The target grid (`--dims`), its sizes in the order `dims_order`
    /// says; by default derived from how the inputs' grids grow.
    pub dims: Option<Vec<u64>>,
    /// The order `dims` is written in: rankscale's own, slowest dimension
    /// first, or x fastest as applications that number their ranks
    /// `x + nx*(y + ny*z)` write it (`--dims-order`).
    pub dims_order: DimsOrder,
    /// How timing fields are fitted.
    pub timing: Method,
    /// Lossy mode (Wu and Mueller 2012 §3.4): keep what every rank of a class and
    /// every input share, drop the rest and report how much.
    pub lossy: bool,
    /// A snippet of the dominant pattern for the state-machine filter
    /// within each rank (implies lossy mode).
    pub snippet: Option<Snippet>,
    /// A plugin that names peers symbolically (NPB CG's pattern), for codes
    /// whose endpoints no grid position decides.
    pub plugin: Option<std::sync::Arc<dyn Plugin>>,
    /// Align the inputs on their structure alone, ignoring call sites (for
    /// builds whose sites cannot be matched, e.g. without debug
    /// information); the output then names no call sites.
    pub ignore_sites: bool,
    /// Write the trace even when a field could not be verified by a spare
    /// input (its model is only as good as an exactly determined fit); the
    /// output's metadata lists every such field
    /// ([`trace::Meta::unverified`]).
    pub allow_unverified: bool,
    /// In lossy mode, the largest share of any input's events that may be
    /// dropped (0.05 by default): beyond it the dominant pattern is not
    /// what the trace shows, and the tool refuses.
    pub max_drop: f64,
}

impl Options {
    /// The defaults for a target of `ranks` ranks: grid from the inputs,
    /// timing by [`Method::Auto`], lossless, no plugin, sites compared,
    /// every field verified, at most 5 % dropped in lossy mode.
    pub fn new(ranks: u64) -> Options {
        Options {
            ranks,
            dims: None,
            dims_order: DimsOrder::SlowestFirst,
            timing: Method::Auto,
            lossy: false,
            snippet: None,
            plugin: None,
            ignore_sites: false,
            allow_unverified: false,
            max_drop: 0.05,
        }
    }
}

/// What lossy mode dropped from one input.
#[derive(Clone, Debug)]
pub struct Dropped {
    /// The input's name.
    pub input: String,
    /// Events dropped.
    pub dropped: u64,
    /// Events in the input.
    pub events: u64,
}

/// Lossy mode's uniform all-to-all counts in one input: every rank's
/// `Alltoallv` send counts (data-dependent in NPB IS) replaced by their mean,
/// and its receive counts by the same (a uniform exchange matrix, so that
/// every send still meets its receive). Each rank's volume is kept up to the
/// rounding of the mean; the change is reported and bounded by
/// `--max-drop`.
#[derive(Clone, Debug, Default)]
pub struct Volume {
    /// The input's name.
    pub input: String,
    /// The calls made uniform, over all ranks.
    pub calls: u64,
    /// Elements they sent in the input.
    pub real: u64,
    /// Elements they send once uniform.
    pub uniform: u64,
}

impl Volume {
    /// The relative change of the volume sent.
    pub fn change(&self) -> f64 {
        (self.uniform as f64 - self.real as f64) / (self.real.max(1) as f64)
    }

    /// One line for reports and the trace's metadata.
    pub fn describe(&self) -> String {
        format!(
            "lossy: the all-to-all counts of {} calls in {} made uniform: {} elements sent instead \
             of {} ({:+.2} %)",
            self.calls,
            self.input,
            self.uniform,
            self.real,
            100.0 * self.change()
        )
    }
}

/// Lossy mode: replaces the per-peer counts of every `Alltoallv` (and
/// `Ialltoallv`) of a rank by their mean (see [`Volume`]).
fn uniform_counts(st: &mut Stream, vol: &mut Volume) {
    for e in &mut st.events {
        if !matches!(e.shape.op(), Op::Alltoallv | Op::Ialltoallv) {
            continue;
        }
        let (nfixed, widths) = e.shape.layout();
        // The send and receive counts are the first two lists, one item per
        // entry.
        let Some(&slen) = e.params.get(nfixed) else {
            continue;
        };
        let slen = slen.max(0) as usize;
        let rstart = nfixed + 1 + slen;
        let Some(&rlen) = e.params.get(rstart) else {
            continue;
        };
        let rlen = rlen.max(0) as usize;
        if widths.first() != Some(&1) || e.params.len() < rstart + 1 + rlen || slen == 0 {
            continue;
        }
        let sent: i64 = e.params[nfixed + 1..rstart].iter().sum();
        let mean = sent.div_euclid(slen as i64);
        e.params[nfixed + 1..rstart].fill(mean);
        e.params[rstart + 1..rstart + 1 + rlen].fill(mean);
        vol.calls += 1;
        vol.real += sent.max(0) as u64;
        vol.uniform += (mean * slen as i64).max(0) as u64;
    }
}

/// A communication field that changes with the size, and its model.
#[derive(Clone, Debug)]
pub struct FieldFit {
    /// Which ranks (position class).
    pub class: String,
    /// The call and field.
    pub field: String,
    /// The call's site in the largest input (`function file:line`).
    pub site: String,
    /// The inputs' values.
    pub values: Vec<i64>,
    /// The grid of each input the values come from.
    pub grids: Vec<Vec<u64>>,
    /// The model as a formula in the grid sizes (x fastest).
    pub model: String,
    /// The value at the target.
    pub target: i64,
    /// Whether spare inputs confirmed the model (leave-one-out: a model
    /// with fewer unknowns than inputs predicts every input from the
    /// others). A loop's step count that changes with the size needs
    /// three inputs.
    pub verified: bool,
}

impl FieldFit {
    /// One line naming the class, call, site, field, the values per input
    /// and the model.
    pub fn describe(&self) -> String {
        let values: Vec<String> = self
            .values
            .iter()
            .zip(&self.grids)
            .map(|(v, g)| {
                let g: Vec<String> = g.iter().map(u64::to_string).collect();
                format!("{v} at {}", g.join("x"))
            })
            .collect();
        format!(
            "{}: {} at {}: values {}: model {} (gives {} at the target)",
            self.class,
            self.field,
            self.site,
            values.join(", "),
            self.model,
            self.target
        )
    }
}

/// How one timing field was extrapolated.
#[derive(Clone, Debug)]
pub struct TimingChoice {
    /// The call (operation and site).
    pub event: String,
    /// The quantity and field (`compute mean`, `mpi max`, ...).
    pub field: String,
    /// The inputs' values, ns.
    pub inputs: Vec<f64>,
    /// The fitted law in P.
    pub law: String,
    /// Which method chose it (`paper`, `pmnf`).
    pub method: String,
    /// The value at the target, ns.
    pub target: f64,
}

/// What the extrapolation found and decided.
#[derive(Clone, Debug)]
pub struct Report {
    /// Each input's detected topology.
    pub topologies: Vec<Topology>,
    /// Each input's process grid as the extrapolation reads it, slowest
    /// dimension first: the detected topology's, or the plugin's grid
    /// (NPB BT's 3x3 where the ranks' peers alone show a 1D ring of 9).
    pub grids: Vec<Vec<u64>>,
    /// The target grid.
    pub dims: Vec<u64>,
    /// Whether each dimension wraps.
    pub wraps: Vec<bool>,
    /// The position classes with their ranks at the target.
    pub classes: Vec<(String, RankList)>,
    /// The communication fields that change with the size.
    pub fields: Vec<FieldFit>,
    /// The timing fits of the mean computation time of every call.
    pub timing: Vec<TimingChoice>,
    /// How often each timing method was chosen, over all fitted fields.
    pub methods: Vec<(String, usize)>,
    /// Events per rank class at the target and events in all.
    pub events: u64,
    /// Remarks (inputs left out of a class and why).
    pub notes: Vec<String>,
    /// In lossy mode, what was dropped from each input.
    pub dropped: Vec<Dropped>,
    /// In lossy mode, the inputs whose data-dependent all-to-all counts
    /// were made uniform, and the volume that changed.
    pub volumes: Vec<Volume>,
    /// The application's run time predicted at the target, where every
    /// input recorded one.
    pub wall: Option<WallPrediction>,
    /// What the extrapolation takes for granted, one sentence each: the
    /// same code paths and decomposition at the target, and any limit the
    /// inputs point at (see `synth/assume.rs`). No input can verify them,
    /// so they are printed with every result.
    pub assumptions: Vec<String>,
}

/// The application's run time at the target: rank 0's wall time in each
/// input, fitted like a timing field. A procurement decision rests on
/// this one number, so it comes with the range of the laws that explain
/// the inputs as well ([`models::prediction_range`]): a point where the
/// inputs fix the trend, orders of magnitude where noise decides it.
#[derive(Clone, Debug)]
pub struct WallPrediction {
    /// The inputs' wall times, ns.
    pub inputs: Vec<f64>,
    /// The fitted law in P.
    pub law: String,
    /// Which method chose it (`paper`, `pmnf`).
    pub method: String,
    /// The value at the target, ns.
    pub target: f64,
    /// The lowest and highest value at the target of the law fitted on
    /// all inputs and of those fitted with one input left out, ns; `None`
    /// below 3 inputs.
    pub range: Option<(f64, f64)>,
}

impl WallPrediction {
    /// The range's high end over its low end (infinite when the low end is
    /// 0): how many times the inputs leave the prediction open.
    pub fn spread(&self) -> Option<f64> {
        self.range.map(
            |(low, high)| {
                if low > 0.0 { high / low } else { f64::INFINITY }
            },
        )
    }
}

impl Report {
    fn new(topologies: Vec<Topology>, dims: Vec<u64>, wraps: Vec<bool>) -> Report {
        Report {
            grids: topologies.iter().map(|t| t.dims.clone()).collect(),
            topologies,
            dims,
            wraps,
            classes: Vec::new(),
            fields: Vec::new(),
            timing: Vec::new(),
            methods: Vec::new(),
            events: 0,
            notes: Vec::new(),
            dropped: Vec::new(),
            volumes: Vec::new(),
            wall: None,
            assumptions: Vec::new(),
        }
    }
}

/// The extrapolated trace and its report.
pub struct Extrapolated {
    /// The trace at the target size.
    pub file: TraceFile,
    /// How it was made.
    pub report: Report,
}

/// Where an event's timing comes from in one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TSrc {
    Exact(u64, u64),
    /// Index into the stream's timing table and the path class.
    Stats(usize, u8),
}

#[derive(Clone)]
struct Ev {
    shape: Shape,
    params: Vec<i64>,
    timing: TSrc,
}

/// One rank's events in location-independent form.
struct Stream {
    events: Vec<Ev>,
    timings: Vec<PathTiming>,
}

/// The sequences of one class that take part in its fit: each input's,
/// with the input's index, the largest input's last.
type ClassSequences = Vec<(usize, Stream)>;

/// One input's sequence of each class: lossy mode's common sequences.
type PerClass = HashMap<Vec<Pos>, Stream>;

/// How often each timing method was chosen, by the method's name.
type Tally = HashMap<String, usize>;

fn class_code(c: PathClass) -> u8 {
    match c {
        PathClass::First => 0,
        PathClass::Steady => 1,
        PathClass::Last => 2,
    }
}

/// One rank's events in location-independent form; with `ignore_sites`
/// every call site is 0, so that alignment sees the structure alone.
fn stream(file: &TraceFile, rank: u64, ignore_sites: bool) -> Result<Stream, Error> {
    let t = file
        .trace
        .rank_trace(rank as u32)
        .map_err(|e| Error::Trace(e.to_string()))?;
    let mut events = Vec::new();
    let mut timings = Vec::new();
    let mut seen: HashMap<usize, usize> = HashMap::new();
    let mut ex = t.expand();
    while let Some(mut ev) = ex.next() {
        if ignore_sites {
            ev.site = 0;
        }
        let mut params = Vec::new();
        let shape = codec::encode(&ev, rank as i32, &mut params);
        let timing = match ex.timing() {
            Some(EventTiming::Stats(pt, class)) => {
                let key = pt as *const PathTiming as usize;
                let i = *seen.entry(key).or_insert_with(|| {
                    timings.push(pt.clone());
                    timings.len() - 1
                });
                TSrc::Stats(i, class_code(class))
            }
            Some(EventTiming::Exact { compute_ns, mpi_ns }) => TSrc::Exact(compute_ns, mpi_ns),
            None => TSrc::Exact(0, 0),
        };
        events.push(Ev {
            shape,
            params,
            timing,
        });
    }
    if ex.is_broken() {
        return Err(Error::Trace(format!("rank {rank}'s events do not decode")));
    }
    Ok(Stream { events, timings })
}

/// Axis names, x fastest.
pub(super) fn axis(i: usize, d: usize) -> String {
    const AXES: [&str; 3] = ["z", "y", "x"];
    if d <= 3 {
        AXES[3 - d + i].into()
    } else {
        format!("n{i}")
    }
}

fn class_name(c: &[Pos], layout: &Layout) -> String {
    let d = c.len();
    let parts: Vec<String> = c
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let v = match p {
                Pos::Lo(0) => "first".to_string(),
                Pos::Lo(k) => format!("first+{k}"),
                Pos::Hi(0) => "last".to_string(),
                Pos::Hi(k) => format!("last-{k}"),
                Pos::Mid(_) if layout.period[i] <= 1 => "inner".to_string(),
                Pos::Mid(r) => format!("inner {r} mod {}", layout.period[i]),
            };
            format!("{}={v}", axis(i, d))
        })
        .collect();
    format!("ranks at {}", parts.join(", "))
}

fn describe_topology(t: &Topology) -> String {
    let dims: Vec<String> = t.dims.iter().map(u64::to_string).collect();
    let kind = if t.wraps.iter().any(|&w| w) {
        "torus"
    } else {
        "mesh"
    };
    format!("{}D {kind} {}", t.dims.len(), dims.join("x"))
}

/// The balanced factorisation `MPI_Dims_create` gives (non-increasing).
pub(crate) fn dims_create(n: u64, d: usize) -> Vec<u64> {
    let mut dims = vec![1u64; d];
    let mut rest = n;
    let mut f = 2;
    let mut primes = Vec::new();
    while f * f <= rest {
        while rest.is_multiple_of(f) {
            primes.push(f);
            rest /= f;
        }
        f += 1;
    }
    if rest > 1 {
        primes.push(rest);
    }
    for p in primes.into_iter().rev() {
        let i = (0..d).min_by_key(|&i| dims[i]).unwrap_or(0);
        dims[i] *= p;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

/// `dims` in non-decreasing order.
fn ascending(mut dims: Vec<u64>) -> Vec<u64> {
    dims.sort_unstable();
    dims
}

/// The target grid, slowest dimension first: `--dims` (in the order it is
/// written in, and only where it continues the inputs' grids), or the grid
/// the inputs' growth implies; with fewer than `d + 1` inputs, one of their
/// shape. Every dimension must hold its boundary classes and an interior.
fn target_dims(
    opts: &Options,
    inputs: &[Input],
    tops: &[Topology],
    layout: &Layout,
) -> Result<Vec<u64>, Error> {
    let d = layout.lo.len();
    let dims = match &opts.dims {
        Some(given) => grid::given_dims(opts, given, inputs, tops)?,
        None => grown_dims(opts.ranks, d, inputs, tops)?,
    };
    grid::enough_for(inputs, tops, &dims)?;
    for (i, &s) in dims.iter().enumerate() {
        let need = u64::from(layout.lo[i]) + u64::from(layout.hi[i]) + 1;
        if s < need {
            return Err(Error::Unrealisable(format!(
                "dimension {} of the target grid has {s} ranks, fewer than the {need} its \
                 boundary classes and interior need",
                axis(i, d)
            )));
        }
    }
    Ok(dims)
}

/// The grid of `n` ranks that continues the inputs' growth: squares or
/// cubes, one shape scaled, or `MPI_Dims_create`'s balanced split in
/// either order.
fn grown_dims(n: u64, d: usize, inputs: &[Input], tops: &[Topology]) -> Result<Vec<u64>, Error> {
    if d == 1 {
        return Ok(vec![n]);
    }
    if tops.iter().all(Topology::is_hypercube) {
        return match grid::scaled(&vec![1; d], n) {
            Some(dims) => Ok(dims),
            None => {
                let lo = (n as f64).powf(1.0 / d as f64).floor() as u64;
                let shape = if d == 2 { "square" } else { "cube" };
                Err(Error::Unrealisable(format!(
                    "{n} ranks cannot be realised: every input is a {d}D {shape} grid, and {n} \
                     is not a {shape} number; the nearest valid sizes are {} and {} (or give \
                     --dims to choose another grid)",
                    lo.pow(d as u32),
                    (lo + 1).pow(d as u32)
                )))
            }
        };
    }
    if let Some(dims) = grid::common_shape(tops).and_then(|shape| grid::scaled(&shape, n)) {
        return Ok(dims);
    }
    if tops.iter().all(|t| dims_create(t.size(), d) == t.dims) {
        Ok(dims_create(n, d))
    } else if tops
        .iter()
        .all(|t| ascending(dims_create(t.size(), d)) == t.dims)
    {
        // The same balanced split with the larger sizes in the faster
        // dimensions, as NPB LU lays out its processor grid, and as an
        // application numbering its ranks x fastest over `MPI_Dims_create`'s
        // `nx, ny, nz` has it.
        Ok(ascending(dims_create(n, d)))
    } else {
        Err(Error::Unrealisable(format!(
            "the inputs' grids do not grow in a way rankscale can continue (neither square, \
             one shape scaled nor MPI_Dims_create's balanced split, in either order): give the \
             target grid with --dims. The grids read: {}",
            grid::grids_read(inputs, tops)
        )))
    }
}

/// The classes present in a grid.
fn classes(dims: &[u64], layout: &Layout) -> Vec<Vec<Pos>> {
    let mut out: Vec<Vec<Pos>> = vec![Vec::new()];
    for (i, &n) in dims.iter().enumerate() {
        let pos = layout.positions(i, n);
        out = out
            .into_iter()
            .flat_map(|c| {
                pos.iter().map(move |&p| {
                    let mut c = c.clone();
                    c.push(p);
                    c
                })
            })
            .collect();
    }
    out
}

/// The ranks of a class and its first rank, if it occurs in the grid.
fn class_ranks(class: &[Pos], dims: &[u64], layout: &Layout) -> Option<(u64, RankList)> {
    let mut first = Vec::with_capacity(dims.len());
    let mut secs = Vec::new();
    for (i, &p) in class.iter().enumerate() {
        let (f, count, step) = layout.span(i, p, dims[i])?;
        first.push(f);
        let stride: u64 = step * dims[i + 1..].iter().product::<u64>();
        if count > 1 {
            secs.push((u32::try_from(count).ok()?, u32::try_from(stride).ok()?));
        }
    }
    let start = rank_at(&first, dims);
    let ranks = RankList::section(u32::try_from(start).ok()?, &secs).ok()?;
    Some((start, ranks))
}

/// The first pair of ranks of an input that share a class but not their
/// calls.
fn inhomogeneous(
    infos: &[RankInfo],
    dims: &[u64],
    layout: &Layout,
) -> Option<(Vec<Pos>, u64, u64)> {
    let mut first: HashMap<Vec<Pos>, u64> = HashMap::new();
    for (r, info) in infos.iter().enumerate() {
        let c = layout.class_of(r as u64, dims);
        let f = *first.entry(c.clone()).or_insert(r as u64);
        if infos[f as usize].stream != info.stream {
            return Some((c, f, r as u64));
        }
    }
    None
}

/// The classes that make every input homogeneous: the stencil's own when
/// they do; otherwise, for a 1D layout (codes whose only structure is the
/// rank: collectives with rank-dependent counts or roots), the fewest
/// boundary ranks and shortest interior period that do, up to
/// [`MAX_EDGE`] boundary ranks at each end and a period of [`MAX_PERIOD`].
fn find_layout(infos: &[Vec<RankInfo>], tops: &[Topology], reach: &[u32]) -> Layout {
    let base = Layout::from_reach(reach);
    let ok = |l: &Layout| {
        infos
            .iter()
            .zip(tops)
            .all(|(inf, t)| inhomogeneous(inf, &t.dims, l).is_none())
    };
    if ok(&base) || reach.len() != 1 {
        return base;
    }

    let mut cands = Vec::new();
    for lo in reach[0]..=MAX_EDGE {
        for hi in reach[0]..=MAX_EDGE {
            for m in 1..=MAX_PERIOD {
                cands.push(Layout {
                    lo: vec![lo],
                    hi: vec![hi],
                    period: vec![m],
                });
            }
        }
    }
    // Fewest classes first: boundary ranks plus the period.
    cands.sort_by_key(|l| (l.lo[0] + l.hi[0] + l.period[0], l.period[0], l.hi[0]));
    cands.into_iter().find(ok).unwrap_or(base)
}

/// Most boundary ranks of a class of their own that [`find_layout`] tries.
const MAX_EDGE: u32 = 8;
/// Longest interior period [`find_layout`] tries.
const MAX_PERIOD: u32 = 24;

fn event_text(e: &Ev) -> String {
    e.shape.op().name().to_string()
}

/// A call site's label in `meta`, or its hash when it has none.
fn site_label(meta: &Meta, site: u64) -> String {
    meta.sites
        .iter()
        .find(|(h, _)| *h == site)
        .map_or(format!("{site:#x}"), |(_, n)| n.clone())
}

/// Where two ranks' event sequences first differ, in the raw-log grammar
/// with peers as offsets from the rank, so that a user sees which call and
/// which value make them differ (NPB BT's tags that number its cells).
pub(crate) fn first_divergence(file: &TraceFile, r1: u64, r2: u64) -> String {
    let rank = |r: u64| {
        file.trace
            .rank_trace(r as u32)
            .map(|t| t.expand().collect::<Vec<Event>>())
            .unwrap_or_default()
    };
    let (a, b) = (rank(r1), rank(r2));
    let encoded = |e: &Event, r: u64| {
        let mut p = Vec::new();
        let s = codec::encode(e, r as i32, &mut p);
        (s, p)
    };
    let n = a.len().min(b.len());
    match (0..n).find(|&i| encoded(&a[i], r1) != encoded(&b[i], r2)) {
        Some(i) => format!(
            "event {i} at {}: rank {r1} has `{}`, rank {r2} has `{}`",
            site_label(&file.meta, a[i].site),
            trace::raw::event_line(&a[i]).trim_end(),
            trace::raw::event_line(&b[i]).trim_end()
        ),
        None => format!(
            "rank {r1} has {} events, rank {r2} has {}",
            a.len(),
            b.len()
        ),
    }
}

/// Call-site labels of the largest input, for messages.
fn site_labels(inputs: &[Input]) -> HashMap<u64, String> {
    inputs
        .last()
        .map(|i| i.file.meta.sites.iter().cloned().collect())
        .unwrap_or_default()
}

/// Extrapolates `inputs` (the same program at increasing rank counts) to
/// `opts.ranks` ranks.
///
/// The stages, in order: the inputs' sizes are checked (`input_sizes`); a
/// plugin takes the symbolic path instead; every input's ranks are read
/// and its topology detected (`Observed`); the inputs must share one
/// stencil (`shared_stencil`), which with the target size decides the
/// target grid and its position classes; every class must be homogeneous
/// within each input (or, in lossy mode, is cut to what its ranks share);
/// each class is then aligned across the inputs, fitted and synthesized
/// (`ClassFitting`); last, lossy mode's losses are held against
/// `--max-drop` and unverified fields against `--allow-unverified`.
pub fn extrapolate(inputs: &[Input], opts: &Options) -> Result<Extrapolated, Error> {
    let sizes = input_sizes(inputs)?;
    if let Some(plugin) = &opts.plugin {
        return extrapolate_with_plugin(inputs, opts, plugin.as_ref(), &sizes);
    }
    let lossy = opts.lossy || opts.snippet.is_some();
    let observed = Observed::read(inputs, opts, lossy)?;
    let (reach, wraps) = shared_stencil(inputs, &observed.tops)?;
    let layout = if lossy {
        Layout::from_reach(&reach)
    } else {
        find_layout(&observed.infos, &observed.tops, &reach)
    };
    let dims = target_dims(opts, inputs, &observed.tops, &layout)?;
    let target_size: u64 = dims.iter().product();
    if target_size > u64::from(trace::ranklist::MAX_RANK) {
        return Err(Error::BadDims(format!(
            "{target_size} ranks exceed the largest rank a trace can hold"
        )));
    }
    // Every class must behave the same on every rank of an input (lossy
    // mode keeps what they share instead).
    let on_grids = |error| on_grids(error, inputs, &observed.tops);
    let (class_streams, dropped) = common_sequences(
        observed.rank_streams,
        &observed.rank_lens,
        &observed.tops,
        &layout,
    )
    .map_err(on_grids)?;
    if !lossy {
        refuse_inhomogeneous(inputs, &observed.infos, &observed.tops, &layout).map_err(on_grids)?;
    }
    let ps: Vec<f64> = sizes
        .iter()
        .map(|&s| s as f64)
        .chain([target_size as f64])
        .collect();
    let make = |pool: align::Pool, class_streams: Vec<PerClass>, dropped: Vec<u64>| ClassFitting {
        inputs,
        opts,
        lossy,
        tops: &observed.tops,
        layout: &layout,
        dims: &dims,
        reach: reach.iter().copied().max().unwrap_or(1),
        ps: ps.clone(),
        labels: site_labels(inputs),
        class_streams,
        dropped,
        report: Report::new(observed.tops.clone(), dims.clone(), wraps.clone()),
        tally: HashMap::new(),
        field_seen: BTreeSet::new(),
        laws: align::Laws::new(),
        one_input: BTreeMap::new(),
        share_constants: false,
        merged: None,
        pool,
    };
    let spare_dropped = dropped.clone();
    let mut fitting = make(align::Pool::default(), class_streams, dropped);
    let mut fitted = fitting.add_classes();
    // Fields that show too few sizes of their dimension: a pass that
    // collects them all, then one that fits each from the pool (lossy mode
    // consumes its per-class sequences, and does not pool).
    let unverified = fitting.report.fields.iter().any(|f| !f.verified);
    if (fitted.is_err() || unverified) && fitting.pool.short && !lossy {
        let collecting = align::Pool {
            collecting: true,
            ..align::Pool::default()
        };
        let mut collect = make(collecting, Vec::new(), spare_dropped.clone());
        if collect.add_classes().is_ok() {
            let pool = align::Pool {
                entries: std::mem::take(&mut collect.pool.entries),
                ..align::Pool::default()
            };
            fitting = make(pool, Vec::new(), spare_dropped);
            fitted = fitting.add_classes();
        }
    }
    fitted.map_err(on_grids)?;
    fitting.note_one_input_classes();
    let ClassFitting {
        mut report,
        tally,
        merged,
        dropped,
        ..
    } = fitting;
    let mut trace = merged.ok_or_else(|| Error::Internal("no classes".into()))?;
    trace.normalize();
    if lossy {
        report.dropped = dropped_per_input(inputs, &dropped, &observed.rank_lens);
    }
    refuse_excess_loss(&report.dropped, &observed.volumes, opts.max_drop)?;
    let mut unverified = unverified_fields(&report, opts).map_err(on_grids)?;
    unverified.extend(observed.volumes.iter().map(Volume::describe));
    report.volumes = observed.volumes;
    Ok(finish(
        inputs,
        &sizes,
        target_size,
        opts,
        report,
        tally,
        unverified,
        trace,
    ))
}

/// A refusal of the fitting stages with the grids the inputs were read
/// as ([`Error::OnGrids`]).
fn on_grids(error: Error, inputs: &[Input], tops: &[Topology]) -> Error {
    Error::OnGrids {
        error: Box::new(error),
        grids: grid::grids_read(inputs, tops),
    }
}

/// The inputs' rank counts, in their order, once the command line is
/// known to make sense: no input holds a job cut short, the sizes strictly
/// increase and there is at least one input. These are mistakes in what
/// was given, not in the traces' contents, so they are refused before any
/// rank is read, each naming the files (and the order to give them in).
fn input_sizes(inputs: &[Input]) -> Result<Vec<u64>, Error> {
    if let Some((i, p)) = inputs
        .iter()
        .find_map(|i| i.file.meta.partial.first().map(|p| (i, p)))
    {
        return Err(Error::Partial {
            name: i.name.clone(),
            rank: p.rank,
            events: p.events,
            cause: p.cause.clone(),
        });
    }
    // Sizes in increasing order, each once.
    let sizes: Vec<u64> = inputs
        .iter()
        .map(|i| u64::from(i.file.meta.world_size))
        .collect();
    for (w, s) in inputs.windows(2).zip(sizes.windows(2)) {
        if s[0] == s[1] {
            return Err(Error::SameSize {
                a: w[0].name.clone(),
                b: w[1].name.clone(),
                size: s[0],
            });
        }
        if s[0] > s[1] {
            let mut sorted: Vec<(u64, &str)> = sizes
                .iter()
                .copied()
                .zip(inputs.iter().map(|i| i.name.as_str()))
                .collect();
            sorted.sort();
            return Err(Error::Order {
                hint: sorted.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(" "),
                a: w[0].name.clone(),
                sa: s[0],
                b: w[1].name.clone(),
                sb: s[1],
            });
        }
    }
    if inputs.is_empty() {
        return Err(Error::TooFewTraces {
            got: 0,
            need: 2,
            dims: 1,
            why: grid::N_PLUS_ONE.into(),
        });
    }
    Ok(sizes)
}

/// What the inputs' ranks show before any class is fitted: the first
/// pass over every input, which the choice of grid and classes needs
/// before any class can be cut out.
struct Observed {
    /// Each input's detected topology.
    tops: Vec<Topology>,
    /// Each input's ranks, summarised for topology detection and the
    /// homogeneity of classes.
    infos: Vec<Vec<RankInfo>>,
    /// Lossy mode: every rank's events after the filters, per input
    /// (empty otherwise).
    rank_streams: Vec<Vec<Stream>>,
    /// Lossy mode: how many events each rank had before any filter, per
    /// input (empty otherwise).
    rank_lens: Vec<Vec<u64>>,
    /// Lossy mode: the all-to-all volumes made uniform, per input that
    /// had any.
    volumes: Vec<Volume>,
}

impl Observed {
    /// Reads every input in order, so that the first input that cannot be
    /// read or whose topology cannot be detected is the error.
    fn read(inputs: &[Input], opts: &Options, lossy: bool) -> Result<Observed, Error> {
        let mut seen = Observed {
            tops: Vec::with_capacity(inputs.len()),
            infos: Vec::with_capacity(inputs.len()),
            rank_streams: Vec::new(),
            rank_lens: Vec::new(),
            volumes: Vec::new(),
        };
        for i in inputs {
            if lossy {
                seen.add_filtered(i, opts)?;
            } else {
                seen.add(i)?;
            }
        }
        seen.lift_small_grids();
        Ok(seen)
    }

    /// Reads an input's grid of fewer dimensions than the others' as one
    /// of theirs with dimensions of size 1 ([`topology::lift`]), placed by
    /// the smallest input of the most dimensions: a 2-rank input of a 2D
    /// code is a 1x2 (or 2x1) grid, not another program.
    fn lift_small_grids(&mut self) {
        let d = self.tops.iter().map(|t| t.dims.len()).max().unwrap_or(0);
        let Some(like) = self.tops.iter().position(|t| t.dims.len() == d) else {
            return;
        };
        for k in 0..self.tops.len() {
            if self.tops[k].dims.len() < d
                && let Some(t) = topology::lift(
                    &self.tops[k],
                    &self.infos[k],
                    &self.tops[like],
                    &self.infos[like],
                )
            {
                self.tops[k] = t;
            }
        }
    }

    /// One input as traced: its ranks' summaries and topology. An input
    /// that lacks a rank of its world is refused, since every rank's
    /// position in the grid is read from its rank number.
    fn add(&mut self, i: &Input) -> Result<(), Error> {
        let (inf, cart) = topology::rank_infos(&i.file.trace)?;
        if inf.len() as u64 != u64::from(i.file.meta.world_size) {
            return Err(Error::MissingRank(inf.len() as u32));
        }
        self.tops
            .push(topology::detect_from(&inf, cart).map_err(|e| in_input(e, i))?);
        self.infos.push(inf);
        Ok(())
    }

    /// Lossy mode: one input with what lossy mode sets aside removed
    /// before the topology is detected (data-dependent all-to-all counts
    /// made uniform, calls outside the snippet's pattern, rare call
    /// sites), so that minor patterns do not shape the grid. The streams
    /// are kept, since lossy classes are cut from them rather than re-read.
    fn add_filtered(&mut self, i: &Input, opts: &Options) -> Result<(), Error> {
        let p = u64::from(i.file.meta.world_size);
        let mut streams = Vec::with_capacity(p as usize);
        let mut lens = Vec::with_capacity(p as usize);
        let mut vol = Volume {
            input: i.name.clone(),
            ..Volume::default()
        };
        for r in 0..p {
            let mut st = stream(&i.file, r, opts.ignore_sites)?;
            lens.push(st.events.len() as u64);
            uniform_counts(&mut st, &mut vol);
            if let Some(sn) = &opts.snippet {
                keep_snippet_calls(&mut st, sn);
            }
            streams.push(st);
        }
        if vol.calls > 0 {
            self.volumes.push(vol);
        }
        drop_rare_sites(&mut streams);
        let inf: Vec<RankInfo> = streams.iter().map(stream_info).collect();
        self.tops
            .push(topology::detect_with(&inf, None, LOSSY_MIN_SHARE).map_err(|e| in_input(e, i))?);
        self.infos.push(inf);
        self.rank_streams.push(streams);
        self.rank_lens.push(lens);
        Ok(())
    }
}

/// A topology refusal that names the input it was read in.
fn in_input(e: Error, i: &Input) -> Error {
    match e {
        Error::NoTopology { grid, reason } => Error::NoTopology {
            grid: format!("{grid} in {}", i.name),
            reason,
        },
        e => e,
    }
}

/// Lossy mode with a snippet: keeps only the calls of one rank that the
/// snippet's state machine accepts as the dominant pattern (Wu and Mueller
/// 2012 §3.4), so that what it rejects counts as dropped.
fn keep_snippet_calls(st: &mut Stream, sn: &Snippet) {
    let view: Vec<(Shape, &[i64])> = st
        .events
        .iter()
        .map(|e| (e.shape, e.params.as_slice()))
        .collect();
    let keep = sn.keep(&view);
    let mut k = keep.into_iter();
    st.events.retain(|_| k.next().unwrap_or(false));
}

/// The stencil the inputs share: per dimension the widest reach of any
/// input and whether any wraps. Classes are laid out by this one stencil,
/// so inputs of another dimensionality, or full-size inputs (large enough
/// to have every class) that disagree on it, are refused as different
/// programs; and a grid of `d` dimensions needs `d + 1` inputs to fit
/// laws in its sizes.
fn shared_stencil(inputs: &[Input], tops: &[Topology]) -> Result<(Vec<u32>, Vec<bool>), Error> {
    let d = tops[0].dims.len();
    let mut reach = vec![0u32; d];
    let mut wraps = vec![false; d];
    for (k, t) in tops.iter().enumerate() {
        if t.dims.len() != d {
            return Err(Error::TopologyMismatch {
                a: inputs[0].name.clone(),
                ta: describe_topology(&tops[0]),
                b: inputs[k].name.clone(),
                tb: describe_topology(t),
            });
        }
        for i in 0..d {
            reach[i] = reach[i].max(t.reach[i]);
            wraps[i] |= t.wraps[i];
        }
    }
    // Full-size inputs must agree on the stencil.
    let stencil = Layout::from_reach(&reach);
    let full: Vec<usize> = (0..tops.len())
        .filter(|&k| !stencil.degenerate(&tops[k].dims))
        .collect();
    for w in full.windows(2) {
        let (a, b) = (&tops[w[0]], &tops[w[1]]);
        if a.wraps != b.wraps || a.reach != b.reach {
            return Err(Error::TopologyMismatch {
                a: inputs[w[0]].name.clone(),
                ta: describe_topology(a),
                b: inputs[w[1]].name.clone(),
                tb: describe_topology(b),
            });
        }
    }
    if inputs.len() < grid::inputs_needed(tops) {
        return Err(grid::too_few(inputs, tops, None));
    }
    Ok((reach, wraps))
}

/// Lossy mode within each input: the sequence every class's ranks share
/// ([`common_per_class`]) and the events that drops, per input. Without
/// lossy mode there are no streams: no sequences, and nothing dropped.
fn common_sequences(
    rank_streams: Vec<Vec<Stream>>,
    rank_lens: &[Vec<u64>],
    tops: &[Topology],
    layout: &Layout,
) -> Result<(Vec<PerClass>, Vec<u64>), Error> {
    let mut dropped = vec![0u64; tops.len()];
    let mut class_streams: Vec<PerClass> = Vec::new();
    for (k, streams) in rank_streams.into_iter().enumerate() {
        let (map, d) = common_per_class(streams, &rank_lens[k], &tops[k].dims, layout)?;
        class_streams.push(map);
        dropped[k] += d;
    }
    Ok((class_streams, dropped))
}

/// Without lossy mode one rank stands for its whole class, so every rank
/// of a class must make the same calls: the first input with two ranks
/// that do not is refused, naming the class and the first event where
/// they part.
fn refuse_inhomogeneous(
    inputs: &[Input],
    infos: &[Vec<RankInfo>],
    tops: &[Topology],
    layout: &Layout,
) -> Result<(), Error> {
    for (k, inp) in inputs.iter().enumerate() {
        if let Some((c, r1, r2)) = inhomogeneous(&infos[k], &tops[k].dims, layout) {
            return Err(Error::Inhomogeneous {
                file: inp.name.clone(),
                class: class_name(&c, layout),
                r1,
                r2,
                first: first_divergence(&inp.file, r1, r2),
            });
        }
    }
    Ok(())
}

/// The target's position classes fitted one by one. Every class reads the
/// same context (the inputs, their grids, the layout) and adds to the
/// same results (the report, the timing tally, the laws classes lend each
/// other, the merged trace); the struct lets each stage of a class name
/// what it uses instead of passing it all along.
struct ClassFitting<'a> {
    inputs: &'a [Input],
    opts: &'a Options,
    lossy: bool,
    /// Each input's topology.
    tops: &'a [Topology],
    layout: &'a Layout,
    /// The target grid.
    dims: &'a [u64],
    /// The stencil's widest reach, which bounds the peer laws.
    reach: u32,
    /// Each input's rank count and the target's, for the timing laws.
    ps: Vec<f64>,
    /// The largest input's call-site labels, for the report.
    labels: HashMap<u64, String>,
    /// Lossy mode: each input's sequence per class (empty otherwise),
    /// taken as the class is fitted.
    class_streams: Vec<PerClass>,
    /// Lossy mode: the events dropped from each input so far.
    dropped: Vec<u64>,
    report: Report,
    /// How often each timing method was chosen.
    tally: Tally,
    /// The fields already reported, by class and field.
    field_seen: BTreeSet<(String, String)>,
    /// Laws verified in one class that others may borrow.
    laws: align::Laws,
    /// The classes that one input alone has, by input.
    one_input: BTreeMap<usize, Vec<String>>,
    /// Whether some class of the target is in one input alone, which then
    /// borrows constants too.
    share_constants: bool,
    /// The classes' traces merged so far.
    merged: Option<MergedTrace>,
    /// Fields of too few sizes, pooled across dimensions.
    pool: align::Pool,
}

impl ClassFitting<'_> {
    /// A note per input that alone has some classes: their fields rest
    /// on the laws other classes verified, which a user should know.
    fn note_one_input_classes(&mut self) {
        for (k, classes) in std::mem::take(&mut self.one_input) {
            self.report.notes.push(format!(
                "{} class(es) rest on {} alone ({}): each of their fields takes the law its \
                 call site verified in the classes that more inputs have, where that law \
                 reproduces its value",
                classes.len(),
                self.inputs[k].name,
                classes.join("; ")
            ));
        }
    }
}

impl ClassFitting<'_> {
    /// The target's classes, those that more inputs have first: they
    /// verify the laws that classes seen in fewer inputs may borrow. Where
    /// one input alone has some class, constants are shared as laws too.
    fn order(&mut self) -> Vec<Vec<Pos>> {
        let inputs_with = |c: &Vec<Pos>| {
            self.tops
                .iter()
                .filter(|t| class_ranks(c, &t.dims, self.layout).is_some())
                .count()
        };
        let mut order = classes(self.dims, self.layout);
        order.sort_by_key(|c| std::cmp::Reverse(inputs_with(c)));
        self.share_constants = order.iter().any(|c| inputs_with(c) == 1);
        order
    }

    /// Every class of the target, in [`ClassFitting::order`].
    fn add_classes(&mut self) -> Result<(), Error> {
        for class in self.order() {
            self.add_class(&class)?;
        }
        Ok(())
    }

    /// Aligns, fits and synthesizes one class, and merges the trace of
    /// its ranks at the target into the result.
    fn add_class(&mut self, class: &[Pos]) -> Result<(), Error> {
        let cname = class_name(class, self.layout);
        let (rep, ranks) = class_ranks(class, self.dims, self.layout)
            .ok_or_else(|| Error::Internal(format!("{cname}: no ranks at the target")))?;
        let mut present = self.present(class, &cname)?;
        if self.lossy {
            self.keep_shared_calls(class, &mut present)?;
        }
        let (kept, folded) = self.align(&cname, present)?;
        if let [(k, _)] = kept.as_slice()
            && self.inputs.len() > 1
        {
            self.one_input.entry(*k).or_default().push(cname.clone());
        }
        let targets = self.fit(&cname, &kept, &folded)?;
        let (trace, events) = class_trace(rep, &targets)?;
        self.report.events += events * ranks.len();
        let group = compress::merge::from_group(&trace, ranks.clone())
            .ok_or_else(|| Error::Internal(format!("{cname}: the class trace spilled")))?;
        self.report.classes.push((cname, ranks));
        self.merged = Some(match self.merged.take() {
            None => group,
            Some(m) => compress::merge::traces(m, group),
        });
        Ok(())
    }

    /// The class's sequence in every input whose grid has it, with the
    /// input's index: in lossy mode the sequence its ranks share, else
    /// its first rank's events (the class is homogeneous).
    fn present(&mut self, class: &[Pos], cname: &str) -> Result<ClassSequences, Error> {
        let mut present: ClassSequences = Vec::new();
        for (k, inp) in self.inputs.iter().enumerate() {
            if let Some((r, _)) = class_ranks(class, &self.tops[k].dims, self.layout) {
                let s = match self.class_streams.get_mut(k) {
                    Some(m) => m
                        .remove(class)
                        .ok_or_else(|| Error::Internal(format!("{cname}: no common sequence")))?,
                    None => stream(&inp.file, r, self.opts.ignore_sites)?,
                };
                present.push((k, s));
            }
        }
        Ok(present)
    }

    /// Lossy mode across inputs: cuts the class's sequences to the calls
    /// every input has ([`align_lossy`]), and charges what that drops to
    /// every rank of the class in each input.
    fn keep_shared_calls(
        &mut self,
        class: &[Pos],
        present: &mut [(usize, Stream)],
    ) -> Result<(), Error> {
        let sizes: Vec<u64> = present
            .iter()
            .map(|(k, _)| {
                class_ranks(class, &self.tops[*k].dims, self.layout).map_or(0, |c| c.1.len())
            })
            .collect();
        let lost = align_lossy(present)?;
        for ((k, _), (l, n)) in present.iter().zip(lost.iter().zip(&sizes)) {
            self.dropped[*k] += l * n;
        }
        Ok(())
    }

    /// The class's sequences that take part in the fit, the largest
    /// input's last, each folded into items (calls, and loops whose step
    /// counts may change with the size). Sequences that differ call by
    /// call are folded and must then agree item by item; if they do not,
    /// the first difference found is the error.
    fn align(
        &mut self,
        cname: &str,
        present: ClassSequences,
    ) -> Result<(ClassSequences, Vec<Vec<Item>>), Error> {
        let (kept, mismatch) = self.compare_with_largest(cname, present)?;
        // Sequences of different lengths may still align as loops whose
        // step counts change with the size.
        let folded: Vec<Vec<Item>> = match mismatch {
            None => kept
                .iter()
                .map(|(_, s)| (0..s.events.len()).map(Item::One).collect())
                .collect(),
            Some(err) => {
                let f = fold_all(&kept);
                if items_differ(&f, &kept).is_some() {
                    return Err(err);
                }
                f
            }
        };
        Ok((kept, folded))
    }

    /// Compares each input's sequence of the class with the largest
    /// input's, call by call: an input whose grid is too small to have
    /// every class (a degenerate grid, whose ranks may play several
    /// roles) and differs is left out with a note; any other that differs
    /// is kept, and the first such difference is returned as the error
    /// to give if folding into loops does not reconcile them. Returns the
    /// sequences kept, the largest input's last.
    fn compare_with_largest(
        &mut self,
        cname: &str,
        present: ClassSequences,
    ) -> Result<(ClassSequences, Option<Error>), Error> {
        let Some((kref, _)) = present.last().map(|(k, s)| (*k, s)) else {
            return Err(Error::Unrealisable(format!(
                "no input trace has {cname}, which the target grid has: give larger inputs"
            )));
        };
        // Align on the largest input; a degenerate small grid may differ.
        let mut kept: ClassSequences = Vec::new();
        let mut mismatch: Option<Error> = None;
        let mut all = present;
        let reference = all.pop().expect("present is not empty");
        for (k, s) in all {
            match first_difference(&s, &reference.1) {
                None => kept.push((k, s)),
                Some(i) if self.layout.degenerate(&self.tops[k].dims) => {
                    self.report.notes.push(format!(
                        "{}: {cname} left out (its grid {} is too small to have every \
                         class; event {i} differs)",
                        self.inputs[k].name,
                        describe_topology(&self.tops[k])
                    ));
                }
                Some(i) => {
                    if mismatch.is_none() {
                        let (a, b) = ((k, &s), (kref, &reference.1));
                        mismatch = Some(self.mismatch(cname, i, a, b));
                    }
                    kept.push((k, s));
                }
            }
        }
        kept.push(reference);
        Ok((kept, mismatch))
    }

    /// The error for two inputs whose sequences of the class differ at
    /// event `i`, each given as (input index, sequence): the call each has
    /// there, with its site, so that a user sees where the runs part.
    fn mismatch(&self, cname: &str, i: usize, a: (usize, &Stream), b: (usize, &Stream)) -> Error {
        let text = |(k, s): (usize, &Stream)| {
            let meta = &self.inputs[k].file.meta;
            s.events
                .get(i)
                .map_or("the end of the sequence".into(), |e| {
                    format!("{} at {}", event_text(e), site_label(meta, e.shape.site()))
                })
        };
        Error::Mismatch(Box::new(crate::Mismatch {
            class: cname.to_string(),
            index: i,
            a: self.inputs[a.0].name.clone(),
            ea: text(a),
            b: self.inputs[b.0].name.clone(),
            eb: text(b),
        }))
    }

    /// The target's items of the class: every field fitted in the kept
    /// inputs' grids (peer laws bounded by the stencil's reach, laws lent
    /// between classes) and every timing field in the rank count.
    fn fit(
        &mut self,
        cname: &str,
        kept: &[(usize, Stream)],
        folded: &[Vec<Item>],
    ) -> Result<Vec<Target>, Error> {
        let grids: Vec<&[u64]> = kept
            .iter()
            .map(|(k, _)| self.tops[*k].dims.as_slice())
            .collect();
        let kps: Vec<f64> = kept
            .iter()
            .map(|(k, _)| self.ps[*k])
            .chain([self.ps[self.ps.len() - 1]])
            .collect();
        let mut fitter = Fitter::new(
            cname,
            &grids,
            self.dims,
            &mut self.report.fields,
            &mut self.field_seen,
            &self.labels,
        )
        .borrowing(&mut self.laws)
        .pooling(&mut self.pool)
        .sharing_constants(self.share_constants)
        .within(self.reach);
        fit_items(
            &mut fitter,
            kept,
            folded,
            &kps,
            self.opts.timing,
            &mut self.tally,
            &mut self.report.timing,
        )
    }
}

/// The trace of a class's representative rank `rep` at the target, and
/// how many events it has. [`synthesize`] gives the fitted timing event by
/// event, but the compressed trace keeps timing per leaf: each leaf takes
/// the timing of the first event that landed in it.
fn class_trace(rep: u64, targets: &[Target]) -> Result<(trace::Trace, u64), Error> {
    let (mut trace, leaf_timing) = synthesize(rep, targets, |_, _| Ok(()))?;
    // Give each leaf the timing fitted for its events.
    let mut by_leaf: HashMap<usize, PathTiming> = HashMap::new();
    {
        let mut ex = trace.expand();
        let mut i = 0;
        while ex.next().is_some() {
            if let Some(EventTiming::Stats(pt, _)) = ex.timing()
                && let Some(Some(t)) = leaf_timing.get(i)
            {
                by_leaf
                    .entry(pt as *const PathTiming as usize)
                    .or_insert_with(|| t.clone());
            }
            i += 1;
        }
    }
    // Per rank, a leaf runs `executions()` times: the fitted timing gets
    // that count, and the group trace multiplies it by the class's size.
    trace.map_leaf_timings(|leaf| {
        let key = leaf.timing() as *const PathTiming as usize;
        by_leaf.get(&key).map(|t| t.with_count(leaf.executions()))
    });
    Ok((trace, leaf_timing.len() as u64))
}

/// Lossy mode: what was dropped from each input, against the events it
/// had, for the report and the `--max-drop` check.
fn dropped_per_input(inputs: &[Input], dropped: &[u64], rank_lens: &[Vec<u64>]) -> Vec<Dropped> {
    inputs
        .iter()
        .zip(dropped)
        .zip(rank_lens)
        .map(|((i, &d), lens)| Dropped {
            input: i.name.clone(),
            dropped: d,
            events: lens.iter().sum(),
        })
        .collect()
}

/// Lossy mode keeps the dominant pattern only while it is what the trace
/// shows: refuses when any input lost more than `max_drop` of its events,
/// or had its all-to-all volume changed by more than that share.
fn refuse_excess_loss(dropped: &[Dropped], volumes: &[Volume], max_drop: f64) -> Result<(), Error> {
    for d in dropped {
        let share = d.dropped as f64 / d.events.max(1) as f64;
        if share > max_drop {
            return Err(Error::TooMuchDropped {
                input: d.input.clone(),
                dropped: d.dropped,
                events: d.events,
                share: 100.0 * share,
                max: 100.0 * max_drop,
            });
        }
    }
    for v in volumes {
        if v.change().abs() > max_drop {
            return Err(Error::TooMuchDropped {
                input: v.input.clone(),
                dropped: v.real.abs_diff(v.uniform),
                events: v.real,
                share: 100.0 * v.change().abs(),
                max: 100.0 * max_drop,
            });
        }
    }
    Ok(())
}

/// The extrapolated file and its report once the target's trace is
/// built: the timing methods' tally, the metadata with what is
/// unverified, and the predicted run time.
#[allow(clippy::too_many_arguments)]
fn finish(
    inputs: &[Input],
    sizes: &[u64],
    target: u64,
    opts: &Options,
    mut report: Report,
    tally: Tally,
    unverified: Vec<String>,
    trace: MergedTrace,
) -> Extrapolated {
    let mut methods: Vec<(String, usize)> = tally.into_iter().collect();
    methods.sort();
    report.methods = methods;
    let (mut meta, wall) = target_meta(inputs, sizes, target, opts.timing);
    report.wall = wall;
    report.assumptions = assume::assumptions(&report, sizes, target);
    meta.assumptions = report.assumptions.clone();
    meta.unverified = unverified;
    if opts.ignore_sites {
        meta.sites.clear();
    }
    let file = TraceFile {
        meta,
        trace,
        timelines: Vec::new(),
        series: Vec::new(),
    };
    Extrapolated { file, report }
}

/// The fields no spare input confirmed, one line each: an error unless
/// `--allow-unverified`, then the list for the output's metadata.
fn unverified_fields(report: &Report, opts: &Options) -> Result<Vec<String>, Error> {
    let lines: Vec<String> = report
        .fields
        .iter()
        .filter(|f| !f.verified)
        .map(FieldFit::describe)
        .collect();
    if lines.is_empty() || opts.allow_unverified {
        Ok(lines)
    } else {
        Err(Error::Unverified(lines))
    }
}

/// The metadata of an extrapolated trace: the largest input's, with the
/// target size and the wall time fitted like any timing field (a
/// prediction of the application's time, which replay prints beside its
/// own), and that prediction with how far the inputs pin it down.
fn target_meta(
    inputs: &[Input],
    sizes: &[u64],
    target: u64,
    method: Method,
) -> (Meta, Option<WallPrediction>) {
    let largest = &inputs[inputs.len() - 1].file.meta;
    let tool = format!(
        "rankscale {} extrap from {} traces ({} ranks)",
        env!("CARGO_PKG_VERSION"),
        inputs.len(),
        sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let walls: Vec<f64> = inputs.iter().map(|i| i.file.meta.wall_ns as f64).collect();
    let wall = if walls.iter().all(|&w| w > 0.0) {
        let fields = [walls.clone(), walls.clone(), walls.clone()];
        let ps: Vec<f64> = sizes.iter().map(|&s| s as f64).collect();
        let mut unused = HashMap::new();
        let fitted = fit_fields(method, &ps, &fields, &mut unused).swap_remove(0);
        fitted.map(|(law, chosen_by)| {
            let value = law.eval(target as f64).clamp(0.0, 1e18);
            // The paper's settling may choose another law than a lone fit:
            // the range holds the prediction itself too.
            let range = models::prediction_range(method, &ps, &walls, target as f64)
                .map(|(low, high)| (low.min(value), high.max(value)));
            WallPrediction {
                target: value,
                range,
                inputs: walls,
                law: law.describe(),
                method: chosen_by,
            }
        })
    } else {
        None
    };
    let meta = Meta {
        tool,
        mpi: largest.mpi.clone(),
        world_size: target as u32,
        command: largest.command.clone(),
        wall_ns: wall.as_ref().map_or(0, |w| w.target as u64),
        merge_ns: 0,
        sites: largest.sites.clone(),
        unverified: Vec::new(),
        origin: trace::Origin::Extrapolated {
            inputs: sizes.iter().map(|&s| s as u32).collect(),
        },
        partial: Vec::new(),
        assumptions: Vec::new(),
        // Every input's: a file the target opens is one some input opened
        // too, or its path was never seen.
        paths: {
            let mut p = Vec::new();
            let all = inputs
                .iter()
                .flat_map(|i| i.file.meta.paths.iter().cloned());
            trace::file::unite_labels(&mut p, all);
            p
        },
    };
    (meta, wall)
}

/// In lossy mode, a peer displacement fewer than this share of the ranks
/// have is a minor pattern and does not shape the topology. A stencil's
/// displacement is had by half the ranks along a dimension of 2 and by
/// `(n-1)/n` of them along wider ones; NPB MG's coarse-level exchanges two
/// planes away by a quarter (4 of 16 ranks at 4x2x2, 8 of 32 at 4x4x2).
const LOSSY_MIN_SHARE: f64 = 0.3;

/// Lossy mode: drops the calls of every call site that fewer than
/// [`LOSSY_MIN_SHARE`] of the ranks execute. A minor pattern is rare by
/// nature; a position class may hold a single rank (a corner), so the
/// class-level common subsequence alone cannot tell its extra calls from
/// its own.
fn drop_rare_sites(streams: &mut [Stream]) {
    let mut ranks_at: HashMap<(Op, u64), usize> = HashMap::new();
    for st in streams.iter() {
        let sites: BTreeSet<(Op, u64)> = st
            .events
            .iter()
            .map(|e| (e.shape.op(), e.shape.site()))
            .collect();
        for k in sites {
            *ranks_at.entry(k).or_default() += 1;
        }
    }
    let least = LOSSY_MIN_SHARE * streams.len() as f64;
    for st in streams.iter_mut() {
        st.events
            .retain(|e| ranks_at[&(e.shape.op(), e.shape.site())] as f64 >= least);
    }
}

/// What one rank's (filtered) events say about it.
fn stream_info(st: &Stream) -> RankInfo {
    let mut info = RankInfo::default();
    let mut h = DefaultHasher::new();
    for e in &st.events {
        e.shape.hash(&mut h);
        e.params.hash(&mut h);
        for (j, name) in e.shape.param_names().iter().enumerate() {
            if matches!(*name, "send.peer" | "recv.peer")
                && let Some(&v) = e.params.get(j)
                && v != codec::PEER_ANY
                && v != codec::PEER_NULL
                && v < SYMBOL
            {
                info.peers.insert(v);
                info.site_peers.insert((e.shape.site(), v));
            }
        }
    }
    info.stream = h.finish();
    info
}

/// Lossy mode within one input: for each class, the longest sequence of
/// events that every rank of the class shares (their longest common
/// subsequence, computed once per distinct sequence), and how many events
/// that drops over all the class's ranks (`lens`: each rank's events before
/// any filter).
fn common_per_class(
    streams: Vec<Stream>,
    lens: &[u64],
    dims: &[u64],
    layout: &Layout,
) -> Result<(HashMap<Vec<Pos>, Stream>, u64), Error> {
    let infos: Vec<RankInfo> = streams.iter().map(stream_info).collect();
    let mut members: HashMap<Vec<Pos>, Vec<usize>> = HashMap::new();
    for r in 0..streams.len() {
        members
            .entry(layout.class_of(r as u64, dims))
            .or_default()
            .push(r);
    }
    let mut out = HashMap::new();
    let mut dropped = 0u64;
    for (class, ranks) in members {
        let rep = &streams[ranks[0]];
        let mut common: Vec<usize> = (0..rep.events.len()).collect();
        let mut seen = BTreeSet::new();
        for &r in &ranks {
            if !seen.insert(infos[r].stream) || r == ranks[0] {
                continue;
            }
            let a: Vec<&Ev> = common.iter().map(|&i| &rep.events[i]).collect();
            let b: Vec<&Ev> = streams[r].events.iter().collect();
            let pairs = lossy::lcs(&a, &b, |x| (x.shape, x.params.clone()));
            common = pairs.iter().map(|&(x, _)| common[x]).collect();
        }
        dropped += ranks
            .iter()
            .map(|&r| lens[r].saturating_sub(common.len() as u64))
            .sum::<u64>();
        let events = common.iter().map(|&i| rep.events[i].clone()).collect();
        out.insert(
            class,
            Stream {
                events,
                timings: rep.timings.clone(),
            },
        );
    }
    Ok((out, dropped))
}

/// Lossy mode across inputs: keeps the calls of one class that every
/// input has (a longest common subsequence by call, since values change
/// with the size), aligned on the largest input. Returns, per input, the
/// events dropped from one rank of the class.
fn align_lossy(present: &mut [(usize, Stream)]) -> Result<Vec<u64>, Error> {
    let Some(((_, reference), others)) = present.split_last_mut() else {
        return Ok(Vec::new());
    };
    let mut kept: Vec<usize> = (0..reference.events.len()).collect();
    let mut maps: Vec<HashMap<usize, usize>> = Vec::with_capacity(others.len());
    for (_, s) in others.iter() {
        let a: Vec<&Ev> = kept.iter().map(|&i| &reference.events[i]).collect();
        let b: Vec<&Ev> = s.events.iter().collect();
        let pairs = lossy::lcs(&a, &b, |x| x.shape);
        maps.push(pairs.iter().map(|&(x, y)| (kept[x], y)).collect());
        kept = pairs.iter().map(|&(x, _)| kept[x]).collect();
    }
    let mut lost = Vec::with_capacity(present.len());
    let (others, last) = present.split_at_mut(present.len() - 1);
    for ((_, s), map) in others.iter_mut().zip(&maps) {
        let before = s.events.len();
        s.events = kept.iter().map(|ri| s.events[map[ri]].clone()).collect();
        lost.push((before - s.events.len()) as u64);
    }
    let reference = &mut last[0].1;
    let before = reference.events.len();
    reference.events = kept.iter().map(|&i| reference.events[i].clone()).collect();
    lost.push((before - kept.len()) as u64);
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_meta_is_marked_extrapolated_and_fits_the_wall_time() {
        let input = |n: u32, wall_ns: u64| Input {
            name: format!("t{n}"),
            file: TraceFile {
                meta: Meta {
                    tool: "rankscale 0.1.0".into(),
                    world_size: n,
                    wall_ns,
                    ..Meta::default()
                },
                ..TraceFile::default()
            },
        };
        let inputs = [input(4, 1_000), input(9, 1_000), input(16, 1_000)];
        assert!(inputs.iter().all(|i| !i.file.meta.is_extrapolated()));
        let (m, wall) = target_meta(&inputs, &[4, 9, 16], 64, Method::Paper);
        assert!(m.is_extrapolated(), "{}", m.tool);
        assert_eq!(m.world_size, 64);
        // A constant wall time extrapolates to itself.
        assert_eq!(m.wall_ns, 1_000);
        let wall = wall.unwrap();
        assert_eq!(
            (wall.target, wall.range),
            (1_000.0, Some((1_000.0, 1_000.0)))
        );
        assert_eq!(wall.spread(), Some(1.0));
    }

    /// A trace that `rankscale merge` recovered from a dying job holds
    /// some ranks only in part: extrapolating from it would fit laws to a
    /// run cut short, so it is refused by name.
    #[test]
    fn a_partial_input_is_refused() {
        let input = |n: u32| Input {
            name: format!("t{n}"),
            file: TraceFile {
                meta: Meta {
                    world_size: n,
                    ..Meta::default()
                },
                ..TraceFile::default()
            },
        };
        let mut inputs = [input(4), input(9), input(16)];
        inputs[1].file.meta.partial = vec![trace::PartialRank {
            rank: 2,
            events: 77,
            cause: "SIGTERM".into(),
            at_ns: 1,
        }];
        let e = extrapolate(&inputs, &Options::new(64))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "t9: rank 2 holds only its first 77 events (SIGTERM): a trace of a job that did \
                 not finish cannot be extrapolated"
            )
        );
    }

    #[test]
    fn dims_create_is_balanced() {
        assert_eq!(dims_create(36, 2), vec![6, 6]);
        assert_eq!(dims_create(24, 2), vec![6, 4]);
        assert_eq!(dims_create(64, 3), vec![4, 4, 4]);
        assert_eq!(dims_create(12, 3), vec![3, 2, 2]);
        assert_eq!(dims_create(7, 2), vec![7, 1]);
    }

    #[test]
    fn classes_of_a_grid() {
        let l = Layout::from_reach(&[1, 1]);
        assert_eq!(classes(&[6, 6], &l).len(), 9);
        assert_eq!(classes(&[2, 2], &l).len(), 4);
        let mid = Pos::Mid(0);
        let (first, ranks) = class_ranks(&[mid, mid], &[10, 10], &l).unwrap();
        assert_eq!(first, 11);
        assert_eq!(ranks.to_string(), "<2 11 8 10 8 1>");
        let (first, ranks) = class_ranks(&[Pos::Lo(0), mid], &[4, 5], &l).unwrap();
        assert_eq!((first, ranks.to_string()), (1, "<1 1 3 1>".to_string()));
        assert!(class_ranks(&[mid, mid], &[2, 5], &l).is_none());
        // A period of 12 after two boundary ranks, 100 ranks: 2, 14, ... 98.
        let p = Layout {
            lo: vec![2],
            hi: vec![0],
            period: vec![12],
        };
        let (first, ranks) = class_ranks(&[Pos::Mid(2)], &[100], &p).unwrap();
        assert_eq!((first, ranks.to_string()), (2, "<1 2 9 12>".to_string()));
        assert_eq!(classes(&[100], &p).len(), 14);
    }
}
