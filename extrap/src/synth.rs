//! The extrapolation itself: position classes, alignment, fitting and the
//! synthetic trace (see the [crate documentation](crate)).

use std::collections::{BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use compress::{
    Compressor, Config, Dist, Event, EventTiming, MergedTrace, Meta, Op, PathClass, PathTiming,
    Quantity, RankList, Shape, TimeStats, Timing, TraceFile, codec,
};

use crate::Error;
use crate::fit::{self, FitFailure};
use crate::lossy::{self, Snippet};
use crate::models::{self, Law, Method};
use crate::plugin::Plugin;
use crate::topology::{self, Layout, Pos, RankInfo, Topology, rank_at};

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
    /// The target grid, slowest dimension first (`--dims`); by default
    /// derived from how the inputs' grids grow.
    pub dims: Option<Vec<u64>>,
    /// How timing fields are fitted.
    pub timing: Method,
    /// Lossy mode (seed 001 §3.4): keep what every rank of a class and
    /// every input share, drop the rest and report how much.
    pub lossy: bool,
    /// A snippet of the dominant pattern for the state-machine filter
    /// within each rank (implies lossy mode).
    pub snippet: Option<Snippet>,
    /// A plugin that names peers symbolically (NPB CG's pattern), for codes
    /// whose endpoints no grid position decides.
    pub plugin: Option<std::sync::Arc<dyn Plugin>>,
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

/// A communication field that changes with the size, and its model.
#[derive(Clone, Debug)]
pub struct FieldFit {
    /// Which ranks (position class).
    pub class: String,
    /// The call and field.
    pub field: String,
    /// The inputs' values.
    pub values: Vec<i64>,
    /// The model as a formula in the grid sizes (x fastest).
    pub model: String,
    /// The value at the target.
    pub target: i64,
    /// Whether spare inputs confirmed the model.
    pub verified: bool,
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
}

impl Report {
    fn new(topologies: Vec<Topology>, dims: Vec<u64>, wraps: Vec<bool>) -> Report {
        Report {
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

fn class_code(c: PathClass) -> u8 {
    match c {
        PathClass::First => 0,
        PathClass::Steady => 1,
        PathClass::Last => 2,
    }
}

fn stream(file: &TraceFile, rank: u64) -> Result<Stream, Error> {
    let t = file
        .trace
        .rank_trace(rank as u32)
        .map_err(|e| Error::Trace(e.to_string()))?;
    let mut events = Vec::new();
    let mut timings = Vec::new();
    let mut seen: HashMap<usize, usize> = HashMap::new();
    let mut ex = t.expand();
    while let Some(ev) = ex.next() {
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
fn axis(i: usize, d: usize) -> String {
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

/// The target grid: `--dims`, or the grid the inputs' growth implies.
fn target_dims(opts: &Options, tops: &[Topology], layout: &Layout) -> Result<Vec<u64>, Error> {
    let d = layout.lo.len();
    let n = opts.ranks;
    let dims = if let Some(dims) = &opts.dims {
        if dims.len() != d {
            return Err(Error::BadDims(format!(
                "--dims has {} dimension(s) but the traces have a {d}D topology",
                dims.len()
            )));
        }
        if dims.iter().product::<u64>() != n {
            return Err(Error::BadDims(format!(
                "--dims {} makes {} ranks, not --ranks {n}",
                dims.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("x"),
                dims.iter().product::<u64>()
            )));
        }
        dims.clone()
    } else if d == 1 {
        vec![n]
    } else if tops.iter().all(Topology::is_hypercube) {
        let root = (n as f64).powf(1.0 / d as f64).round() as u64;
        let side = (root.saturating_sub(1)..=root + 1).find(|s| s.pow(d as u32) == n);
        match side {
            Some(s) => vec![s; d],
            None => {
                let lo = (n as f64).powf(1.0 / d as f64).floor() as u64;
                let shape = if d == 2 { "square" } else { "cube" };
                return Err(Error::Unrealisable(format!(
                    "{n} ranks cannot be realised: every input is a {d}D {shape} grid, and {n} \
                     is not a {shape} number; the nearest valid sizes are {} and {} (or give \
                     --dims to choose another grid)",
                    lo.pow(d as u32),
                    (lo + 1).pow(d as u32)
                )));
            }
        }
    } else if tops.iter().all(|t| dims_create(t.size(), d) == t.dims) {
        dims_create(n, d)
    } else {
        return Err(Error::Unrealisable(format!(
            "the inputs' grids ({}) do not grow in a way rankscale can continue (neither \
             square nor MPI_Dims_create's balanced split): give the target grid with --dims",
            tops.iter()
                .map(describe_topology)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
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

/// Fits every timing field of one distribution across the inputs.
fn fit_dist(
    method: Method,
    ps: &[f64],
    dists: &[&Dist],
    base: &Dist,
    tally: &mut HashMap<String, usize>,
) -> (Dist, Option<(Law, String)>) {
    let mut n = Vec::new();
    let mut fields: [Vec<f64>; 3] = Default::default();
    for (&p, d) in ps.iter().zip(dists) {
        let s = d.stats();
        if s.count() == 0 {
            continue;
        }
        n.push(p);
        fields[0].push(s.mean());
        fields[1].push(s.min() as f64);
        fields[2].push(s.max() as f64);
    }
    if n.is_empty() || base.stats().count() == 0 {
        return (base.clone(), None);
    }
    let target = ps.last().copied().unwrap_or(1.0);
    let laws = fit_fields(method, &n, &fields, tally);
    let v: Vec<f64> = laws
        .iter()
        .zip(&fields)
        .map(|(l, f)| match l {
            Some((law, _)) => law.eval(target),
            None => f.last().copied().unwrap_or(0.0),
        })
        .collect();
    let (mean, min, max) = (v[0], v[1].min(v[0]), v[2].max(v[0]));
    (
        base.remapped(min, mean, max),
        laws.into_iter().next().flatten(),
    )
}

/// The laws of a histogram's fields (mean, min, max), each with the method
/// that chose it; `None` where nothing could be fitted.
fn fit_fields(
    method: Method,
    n: &[f64],
    fields: &[Vec<f64>; 3],
    tally: &mut HashMap<String, usize>,
) -> Vec<Option<(Law, String)>> {
    let mut out = Vec::with_capacity(3);
    match method {
        Method::Paper => {
            let fits: Vec<_> = fields.iter().map(|f| models::fit_paper(n, f)).collect();
            if fits.iter().all(Result::is_ok) {
                let ok: Vec<_> = fits.into_iter().map(|f| f.expect("checked")).collect();
                for law in models::settle(&ok) {
                    out.push(Some((law, "paper".to_string())));
                }
            } else {
                out.extend(fits.into_iter().map(|f| {
                    f.ok().map(|f| {
                        (
                            models::settle(std::slice::from_ref(&f)).remove(0),
                            "paper".into(),
                        )
                    })
                }));
            }
        }
        Method::Pmnf => {
            for f in fields {
                out.push(models::fit_pmnf(n, f).ok().map(|l| (l, "pmnf".to_string())));
            }
        }
        Method::Auto => {
            for f in fields {
                out.push(
                    models::fit_auto(n, f)
                        .ok()
                        .map(|a| (a.law, a.method_name().to_string())),
                );
            }
        }
    }
    for (_, m) in out.iter().flatten() {
        *tally.entry(m.clone()).or_default() += 1;
    }
    out
}

/// Extrapolates `inputs` (the same program at increasing rank counts) to
/// `opts.ranks` ranks.
pub fn extrapolate(inputs: &[Input], opts: &Options) -> Result<Extrapolated, Error> {
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
        });
    }
    // Topologies.
    if let Some(plugin) = &opts.plugin {
        return extrapolate_with_plugin(inputs, opts, plugin.as_ref(), &sizes);
    }
    let lossy = opts.lossy || opts.snippet.is_some();
    let mut tops = Vec::with_capacity(inputs.len());
    let mut infos: Vec<Vec<RankInfo>> = Vec::with_capacity(inputs.len());
    // Lossy mode: every rank's events (after the snippet's filter) and how
    // many each rank had.
    let mut rank_streams: Vec<Vec<Stream>> = Vec::new();
    let mut rank_lens: Vec<Vec<u64>> = Vec::new();
    for i in inputs {
        if lossy {
            let p = u64::from(i.file.meta.world_size);
            let mut streams = Vec::with_capacity(p as usize);
            let mut lens = Vec::with_capacity(p as usize);
            for r in 0..p {
                let mut st = stream(&i.file, r)?;
                lens.push(st.events.len() as u64);
                if let Some(sn) = &opts.snippet {
                    let view: Vec<(Shape, &[i64])> = st
                        .events
                        .iter()
                        .map(|e| (e.shape, e.params.as_slice()))
                        .collect();
                    let keep = sn.keep(&view);
                    let mut k = keep.into_iter();
                    st.events.retain(|_| k.next().unwrap_or(false));
                }
                streams.push(st);
            }
            drop_rare_sites(&mut streams);
            let inf: Vec<RankInfo> = streams.iter().map(stream_info).collect();
            tops.push(topology::detect_with(&inf, None, LOSSY_MIN_SHARE)?);
            infos.push(inf);
            rank_streams.push(streams);
            rank_lens.push(lens);
            continue;
        }
        let (inf, cart) = topology::rank_infos(&i.file.trace)?;
        if inf.len() as u64 != u64::from(i.file.meta.world_size) {
            return Err(Error::MissingRank(inf.len() as u32));
        }
        tops.push(topology::detect_from(&inf, cart)?);
        infos.push(inf);
    }
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
    if inputs.len() < d + 1 {
        return Err(Error::TooFewTraces {
            got: inputs.len(),
            need: d + 1,
            dims: d,
        });
    }
    let layout = if lossy {
        Layout::from_reach(&reach)
    } else {
        find_layout(&infos, &tops, &reach)
    };
    let dims = target_dims(opts, &tops, &layout)?;
    let target_size: u64 = dims.iter().product();
    if target_size > u64::from(compress::ranklist::MAX_RANK) {
        return Err(Error::BadDims(format!(
            "{target_size} ranks exceed the largest rank a trace can hold"
        )));
    }
    // Every class must behave the same on every rank of an input (lossy
    // mode keeps what they share instead).
    let mut dropped = vec![0u64; inputs.len()];
    let mut class_streams: Vec<HashMap<Vec<Pos>, Stream>> = Vec::new();
    for (k, streams) in rank_streams.into_iter().enumerate() {
        let (map, d) = common_per_class(streams, &rank_lens[k], &tops[k].dims, &layout)?;
        class_streams.push(map);
        dropped[k] += d;
    }
    for (k, inp) in inputs.iter().enumerate().filter(|_| !lossy) {
        if let Some((c, r1, r2)) = inhomogeneous(&infos[k], &tops[k].dims, &layout) {
            return Err(Error::Inhomogeneous {
                file: inp.name.clone(),
                class: class_name(&c, &layout),
                r1,
                r2,
            });
        }
    }
    let ps: Vec<f64> = sizes
        .iter()
        .map(|&s| s as f64)
        .chain([target_size as f64])
        .collect();
    let mut report = Report::new(tops.clone(), dims.clone(), wraps.clone());
    let mut tally: HashMap<String, usize> = HashMap::new();
    let mut merged: Option<MergedTrace> = None;
    let mut field_seen: BTreeSet<(String, String)> = BTreeSet::new();
    for class in classes(&dims, &layout) {
        let cname = class_name(&class, &layout);
        let (rep, ranks) = class_ranks(&class, &dims, &layout)
            .ok_or_else(|| Error::Internal(format!("{cname}: no ranks at the target")))?;
        // The class's stream in every input that has it.
        let mut present: Vec<(usize, Stream)> = Vec::new();
        for (k, inp) in inputs.iter().enumerate() {
            if let Some((r, _)) = class_ranks(&class, &tops[k].dims, &layout) {
                let s = match class_streams.get_mut(k) {
                    Some(m) => m
                        .remove(&class)
                        .ok_or_else(|| Error::Internal(format!("{cname}: no common sequence")))?,
                    None => stream(&inp.file, r)?,
                };
                present.push((k, s));
            }
        }
        if lossy {
            let sizes: Vec<u64> = present
                .iter()
                .map(|(k, _)| class_ranks(&class, &tops[*k].dims, &layout).map_or(0, |c| c.1.len()))
                .collect();
            let lost = align_lossy(&mut present)?;
            for ((k, _), (l, n)) in present.iter().zip(lost.iter().zip(&sizes)) {
                dropped[*k] += l * n;
            }
        }
        let Some((kref, _)) = present.last().map(|(k, s)| (*k, s)) else {
            return Err(Error::Unrealisable(format!(
                "no input trace has {cname}, which the target grid has: give larger inputs"
            )));
        };
        // Align on the largest input; a degenerate small grid may differ.
        let reference_len = present.last().map_or(0, |(_, s)| s.events.len());
        let mut kept: Vec<(usize, Stream)> = Vec::new();
        let mut mismatch: Option<Error> = None;
        let mut all = present;
        let reference = all.pop().expect("present is not empty");
        for (k, s) in all {
            match first_difference(&s, &reference.1) {
                None => kept.push((k, s)),
                Some(i) if layout.degenerate(&tops[k].dims) => {
                    report.notes.push(format!(
                        "{}: {cname} left out (its grid {} is too small to have every \
                         class; event {i} differs)",
                        inputs[k].name,
                        describe_topology(&tops[k])
                    ));
                }
                Some(i) => {
                    if mismatch.is_some() {
                        kept.push((k, s));
                        continue;
                    }
                    let text = |s: &Stream, meta: &Meta| {
                        s.events
                            .get(i)
                            .map_or("the end of the sequence".into(), |e| {
                                let site = meta
                                    .sites
                                    .iter()
                                    .find(|(h, _)| *h == e.shape.site())
                                    .map_or(format!("{:#x}", e.shape.site()), |(_, n)| n.clone());
                                format!("{} at {site}", event_text(e))
                            })
                    };
                    mismatch = Some(Error::Mismatch(Box::new(crate::Mismatch {
                        class: cname.clone(),
                        index: i,
                        a: inputs[k].name.clone(),
                        ea: text(&s, &inputs[k].file.meta),
                        b: inputs[kref].name.clone(),
                        eb: text(&reference.1, &inputs[kref].file.meta),
                    })));
                    kept.push((k, s));
                }
            }
        }
        kept.push(reference);
        // Sequences of different lengths may still align as loops whose
        // step counts change with the size.
        let folded: Vec<Vec<Item>> = match mismatch {
            None => kept
                .iter()
                .map(|(_, s)| (0..s.events.len()).map(Item::One).collect())
                .collect(),
            Some(err) => {
                let f: Vec<Vec<Item>> = kept.iter().map(|(_, s)| fold_runs(&s.events)).collect();
                if items_differ(&f, &kept).is_some() {
                    return Err(err);
                }
                f
            }
        };
        let grids: Vec<&[u64]> = kept.iter().map(|(k, _)| tops[*k].dims.as_slice()).collect();
        let kps: Vec<f64> = kept
            .iter()
            .map(|(k, _)| ps[*k])
            .chain([ps[ps.len() - 1]])
            .collect();
        let mut fitter = Fitter {
            class: &cname,
            grids: &grids,
            dims: &dims,
            cache: HashMap::new(),
            fields: &mut report.fields,
            seen: &mut field_seen,
        };
        let targets = fit_items(
            &mut fitter,
            &kept,
            &folded,
            &kps,
            opts.timing,
            &mut tally,
            &mut report.timing,
        )?;
        let mut comp = Compressor::new(
            rep as i32,
            Config {
                slow_instances: 0,
                queue_limit: usize::MAX / 4,
                ..Config::default()
            },
        );
        let mut leaf_timing: Vec<Option<PathTiming>> = Vec::with_capacity(reference_len);
        for t in &targets {
            for step in 0..t.count {
                let params = t.params(step);
                let mut event: Event = codec::decode(&t.shape, &params, rep as i32)
                    .ok_or_else(|| Error::Internal(format!("{cname}: an event does not decode")))?;
                event.time = t.time();
                comp.push(&event)
                    .map_err(|e| Error::Internal(format!("{cname}: {e}")))?;
                leaf_timing.push(t.timing.clone());
            }
        }
        let mut trace = comp
            .into_trace()
            .map_err(|e| Error::Internal(format!("{cname}: {e}")))?;
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
        report.events += leaf_timing.len() as u64 * ranks.len();
        let group = MergedTrace::from_group(&trace, ranks.clone())
            .ok_or_else(|| Error::Internal(format!("{cname}: the class trace spilled")))?;
        report.classes.push((cname, ranks));
        merged = Some(match merged {
            None => group,
            Some(m) => m.merge(group),
        });
    }
    let mut trace = merged.ok_or_else(|| Error::Internal("no classes".into()))?;
    trace.normalize();
    if lossy {
        report.dropped = inputs
            .iter()
            .zip(&dropped)
            .zip(&rank_lens)
            .map(|((i, &d), lens)| Dropped {
                input: i.name.clone(),
                dropped: d,
                events: lens.iter().sum(),
            })
            .collect();
    }
    let mut methods: Vec<(String, usize)> = tally.into_iter().collect();
    methods.sort();
    report.methods = methods;
    let file = TraceFile {
        meta: target_meta(inputs, &sizes, target_size, opts.timing),
        trace,
        timelines: Vec::new(),
        series: Vec::new(),
    };
    Ok(Extrapolated { file, report })
}

/// The metadata of an extrapolated trace: the largest input's, with the
/// target size and the wall time fitted like any timing field (a
/// prediction of the application's time, which replay prints beside its
/// own).
fn target_meta(inputs: &[Input], sizes: &[u64], target: u64, method: Method) -> Meta {
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
    let wall_ns = if walls.iter().all(|&w| w > 0.0) {
        let fields = [walls.clone(), walls.clone(), walls];
        let ps: Vec<f64> = sizes.iter().map(|&s| s as f64).collect();
        let mut unused = HashMap::new();
        fit_fields(method, &ps, &fields, &mut unused)[0]
            .as_ref()
            .map_or(0.0, |(law, _)| law.eval(target as f64))
            .clamp(0.0, 1e18) as u64
    } else {
        0
    };
    Meta {
        tool,
        mpi: largest.mpi.clone(),
        world_size: target as u32,
        command: largest.command.clone(),
        wall_ns,
        merge_ns: 0,
        sites: largest.sites.clone(),
    }
}

/// Symbolic peers are stored at and above this value (real peer offsets
/// are below 2^31): pattern `p` at step `k` is `SYMBOL + (p << 20) + k`.
const SYMBOL: i64 = 1 << 40;

/// The positions of the peers a plugin may name in an event's encoded
/// parameters: the `*.peer` fields (and the `*.local` ones on
/// `MPI_COMM_WORLD`, where they are the same offsets), and the relative
/// source of every matched-message entry.
fn peer_positions(shape: &Shape, params: &[i64]) -> Vec<usize> {
    let (nfixed, widths) = shape.layout();
    let world = params.first() == Some(&0);
    let real = |j: usize| {
        params
            .get(j)
            .is_some_and(|&v| v != codec::PEER_ANY && v != codec::PEER_NULL)
    };
    let names = shape.param_names();
    // A collective's transfers have no peer (`*.peer` is the null sentinel
    // and `*.local` a plain 0); a `*.local` follows its `*.peer`.
    let mut out: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|&(j, n)| {
            (n.ends_with(".peer") && real(j))
                || (world && n.ends_with(".local") && j > 0 && real(j - 1))
        })
        .map(|(j, _)| j)
        .collect();
    let mut cur = nfixed;
    for (name, &w) in shape.list_names().iter().zip(widths) {
        let len = params.get(cur).copied().unwrap_or(0).max(0) as usize;
        let w = usize::from(w.max(1));
        if *name == "matched" && w == 4 {
            out.extend((0..len).map(|e| cur + 1 + e * 4 + 2));
        }
        cur += 1 + len * w;
    }
    out
}

/// Replaces every peer the plugin can name by its symbol.
fn symbolize(st: &mut Stream, rank: u64, size: u64, plugin: &dyn Plugin) {
    for e in &mut st.events {
        for j in peer_positions(&e.shape, &e.params) {
            let Some(v) = e.params.get_mut(j) else {
                continue;
            };
            if *v == codec::PEER_ANY || *v == codec::PEER_NULL {
                continue;
            }
            let peer = rank as i64 + *v;
            if let Some((p, k)) = u64::try_from(peer)
                .ok()
                .and_then(|q| plugin.symbolic(rank, size, q))
                && (0..1 << 20).contains(&k)
            {
                *v = SYMBOL + (i64::from(p) << 20) + k;
            }
        }
    }
}

/// Turns symbols back into peer offsets for `rank` of `size` ranks.
fn concretize(
    params: &mut [i64],
    shape: &Shape,
    rank: u64,
    size: u64,
    plugin: &dyn Plugin,
) -> Result<(), Error> {
    for j in peer_positions(shape, params) {
        let Some(v) = params.get_mut(j) else { continue };
        if *v < SYMBOL {
            continue;
        }
        let (p, k) = (
            ((*v - SYMBOL) >> 20) as u32,
            (*v - SYMBOL) & ((1 << 20) - 1),
        );
        let peer = plugin.concrete(rank, size, p, k).ok_or_else(|| {
            Error::Unrealisable(format!(
                "plugin {:?}: pattern {} at step {k} gives rank {rank} of {size} no peer (is \
                 {size} a size the pattern allows?)",
                plugin.name(),
                p + 1
            ))
        })?;
        *v = peer as i64 - rank as i64;
    }
    Ok(())
}

/// A rank's events with runs folded: consecutive executions of one call
/// whose parameters step by a constant, zero included (a loop over
/// partners at 2^k, or over as many calls as there are ranks).
enum Item {
    One(usize),
    Run {
        start: usize,
        count: usize,
        delta: Vec<i64>,
    },
}

fn fold_runs(events: &[Ev]) -> Vec<Item> {
    let step = |a: &Ev, b: &Ev| -> Option<Vec<i64>> {
        (a.shape == b.shape && a.params.len() == b.params.len())
            .then(|| b.params.iter().zip(&a.params).map(|(y, x)| y - x).collect())
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let delta = events.get(i + 1).and_then(|b| step(&events[i], b));
        match delta {
            Some(d) => {
                let mut j = i + 1;
                while j + 1 < events.len() && step(&events[j], &events[j + 1]).as_ref() == Some(&d)
                {
                    j += 1;
                }
                out.push(Item::Run {
                    start: i,
                    count: j - i + 1,
                    delta: d,
                });
                i = j + 1;
            }
            _ => {
                out.push(Item::One(i));
                i += 1;
            }
        }
    }
    out
}

/// Where the folded sequences of the inputs first differ in call or kind
/// (the input and the item), if they do.
fn items_differ(folded: &[Vec<Item>], kept: &[(usize, Stream)]) -> Option<(usize, usize)> {
    let last = folded.len().checked_sub(1)?;
    let kind = |it: &Item, s: &Stream| match it {
        Item::One(i) => (s.events[*i].shape, false),
        Item::Run { start, .. } => (s.events[*start].shape, true),
    };
    let reference = &folded[last];
    folded.iter().enumerate().find_map(|(k, f)| {
        (0..f.len().min(reference.len()))
            .find(|&i| kind(&f[i], &kept[k].1) != kind(&reference[i], &kept[last].1))
            .or((f.len() != reference.len()).then_some(f.len().min(reference.len())))
            .map(|i| (k, i))
    })
}

/// One item of the target's sequence: a call `count` times, its
/// parameters stepping by `delta` (empty for a single call), with the
/// timing fitted for it.
struct Target {
    shape: Shape,
    first: Vec<i64>,
    count: usize,
    delta: Vec<i64>,
    timing: Option<PathTiming>,
    means: [f64; 2],
}

impl Target {
    /// The parameters of step `step`.
    fn params(&self, step: usize) -> Vec<i64> {
        if self.delta.is_empty() {
            return self.first.clone();
        }
        self.first
            .iter()
            .zip(&self.delta)
            .map(|(a, d)| a + d * step as i64)
            .collect()
    }

    /// The time an event of this item carries into the compressor (the
    /// means of its path class; leaves get their whole fitted timing
    /// afterwards).
    fn time(&self) -> Timing {
        Timing {
            enter_ns: 0,
            dur_ns: self.means[1].max(0.0).round() as u64,
            compute_ns: self.means[0].max(0.0).round() as u64,
        }
    }
}

/// Fits the aligned items of the inputs (`folded[k]` over `kept[k]`):
/// every field of the first call, and for a loop its step count and the
/// step of every field; and its timing.
fn fit_items(
    fitter: &mut Fitter<'_>,
    kept: &[(usize, Stream)],
    folded: &[Vec<Item>],
    kps: &[f64],
    method: Method,
    tally: &mut HashMap<String, usize>,
    choices: &mut Vec<TimingChoice>,
) -> Result<Vec<Target>, Error> {
    let last = kept.len() - 1;
    let mut tcache: HashMap<Vec<TSrc>, (PathTiming, [f64; 2])> = HashMap::new();
    let mut out = Vec::with_capacity(folded[last].len());
    for (i, it) in folded[last].iter().enumerate() {
        let at = |f: &Vec<Item>| match &f[i] {
            Item::One(j) => (*j, 1usize, Vec::new()),
            Item::Run {
                start,
                count,
                delta,
            } => (*start, *count, delta.clone()),
        };
        let per: Vec<(usize, usize, Vec<i64>)> = folded.iter().map(at).collect();
        let ev = &kept[last].1.events[per[last].0];
        let params: Vec<&[i64]> = kept
            .iter()
            .zip(&per)
            .map(|((_, s), (j, _, _))| s.events[*j].params.as_slice())
            .collect();
        let first = fitter.event(i, ev, &params)?;
        let (count, delta) = match it {
            Item::One(_) => (1, Vec::new()),
            Item::Run { .. } => {
                let counts: Vec<i64> = per.iter().map(|(_, c, _)| *c as i64).collect();
                let count = fitter.value(i, ev, "loop steps", fit::Kind::Other, &counts)?;
                let mut delta = Vec::with_capacity(first.len());
                for j in 0..first.len() {
                    let d: Vec<i64> = per
                        .iter()
                        .map(|(_, _, d)| d.get(j).copied().unwrap_or(0))
                        .collect();
                    delta.push(fitter.value(i, ev, "step of a field", fit::Kind::Other, &d)?);
                }
                (count.max(0) as usize, delta)
            }
        };
        let key: Vec<TSrc> = kept
            .iter()
            .zip(&per)
            .map(|((_, s), (j, _, _))| s.events[*j].timing)
            .collect();
        let (pt, means) = match tcache.get(&key) {
            Some(v) => v.clone(),
            None => {
                let v = fit_timing(method, kept, &key, kps, tally, ev, choices);
                tcache.insert(key, v.clone());
                v
            }
        };
        out.push(Target {
            shape: ev.shape,
            first,
            count,
            delta,
            timing: matches!(ev.timing, TSrc::Stats(..)).then_some(pt),
            means,
        });
    }
    Ok(out)
}

/// Extrapolation through a plugin: every rank's peers become symbols, which
/// must make all ranks of an input record the same; loops over symbolic
/// steps may change their length with the size (fitted like any field);
/// the target's ranks are then generated one by one and merged, so this
/// path costs time in proportion to the target size.
fn extrapolate_with_plugin(
    inputs: &[Input],
    opts: &Options,
    plugin: &dyn Plugin,
    sizes: &[u64],
) -> Result<Extrapolated, Error> {
    let n = opts.ranks;
    if n > 1 << 16 {
        return Err(Error::BadDims(format!(
            "with a plugin the target's ranks are generated one by one; {n} ranks is more than \
             this path handles (65,536)"
        )));
    }
    if inputs.len() < 2 {
        return Err(Error::TooFewTraces {
            got: inputs.len(),
            need: 2,
            dims: 1,
        });
    }
    let mut streams: Vec<Stream> = Vec::with_capacity(inputs.len());
    let mut tops = Vec::with_capacity(inputs.len());
    for (inp, &p) in inputs.iter().zip(sizes) {
        let mut first: Option<(u64, Stream)> = None;
        let mut infos = Vec::with_capacity(p as usize);
        for r in 0..p {
            let mut st = stream(&inp.file, r)?;
            symbolize(&mut st, r, p, plugin);
            let info = stream_info(&st);
            if let Some((h, _)) = &first
                && *h != info.stream
            {
                return Err(Error::Inhomogeneous {
                    file: inp.name.clone(),
                    class: format!("all ranks, with plugin {:?}", plugin.name()),
                    r1: 0,
                    r2: r,
                });
            }
            if first.is_none() {
                first = Some((info.stream, st));
            }
            infos.push(info);
        }
        tops.push(topology::detect_from(&infos, None)?);
        streams.push(first.map(|(_, s)| s).ok_or(Error::MissingRank(0))?);
    }
    let folded: Vec<Vec<Item>> = streams.iter().map(|s| fold_runs(&s.events)).collect();
    let kept: Vec<(usize, Stream)> = streams.into_iter().enumerate().collect();
    let last = inputs.len() - 1;
    if let Some((k, i)) = items_differ(&folded, &kept) {
        let text = |it: Option<&Item>, s: &Stream| match it {
            Some(Item::One(i)) => event_text(&s.events[*i]),
            Some(Item::Run { start, count, .. }) => {
                format!("a loop of {count} {}", event_text(&s.events[*start]))
            }
            None => "the end of the sequence".into(),
        };
        return Err(Error::Mismatch(Box::new(crate::Mismatch {
            class: format!("all ranks, with plugin {:?}", plugin.name()),
            index: i,
            a: inputs[k].name.clone(),
            ea: text(folded[k].get(i), &kept[k].1),
            b: inputs[last].name.clone(),
            eb: text(folded[last].get(i), &kept[last].1),
        })));
    }
    let grids: Vec<Vec<u64>> = sizes.iter().map(|&p| vec![p]).collect();
    let grid_refs: Vec<&[u64]> = grids.iter().map(Vec::as_slice).collect();
    let dims = vec![n];
    let mut report = Report::new(tops, dims.clone(), vec![false]);
    report.classes.push((
        format!("all ranks, with plugin {:?}", plugin.name()),
        RankList::range(0, n as u32),
    ));
    let mut seen = BTreeSet::new();
    let cname = report.classes[0].0.clone();
    let mut fitter = Fitter {
        class: &cname,
        grids: &grid_refs,
        dims: &dims,
        cache: HashMap::new(),
        fields: &mut report.fields,
        seen: &mut seen,
    };
    let ps: Vec<f64> = sizes.iter().map(|&s| s as f64).chain([n as f64]).collect();
    let mut tally = HashMap::new();
    let items = fit_items(
        &mut fitter,
        &kept,
        &folded,
        &ps,
        opts.timing,
        &mut tally,
        &mut report.timing,
    )?;
    // Every rank of the target, one by one, merged pairwise.
    let mut traces: Vec<MergedTrace> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let mut comp = Compressor::new(
            r as i32,
            Config {
                slow_instances: 0,
                queue_limit: usize::MAX / 4,
                ..Config::default()
            },
        );
        for t in &items {
            for step in 0..t.count {
                let mut params = t.params(step);
                concretize(&mut params, &t.shape, r, n, plugin)?;
                let mut e = codec::decode(&t.shape, &params, r as i32).ok_or_else(|| {
                    Error::Internal(format!("rank {r}: a synthetic event does not decode"))
                })?;
                e.time = t.time();
                comp.push(&e).map_err(|e| Error::Internal(e.to_string()))?;
                report.events += 1;
            }
        }
        let t = comp
            .into_trace()
            .map_err(|e| Error::Internal(e.to_string()))?;
        traces.push(MergedTrace::from_rank(&t));
    }
    while traces.len() > 1 {
        let mut next = Vec::with_capacity(traces.len().div_ceil(2));
        let mut it = traces.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => a.merge(b),
                None => a,
            });
        }
        traces = next;
    }
    let mut trace = traces
        .pop()
        .ok_or_else(|| Error::Internal("no ranks".into()))?;
    trace.normalize();
    let mut methods: Vec<(String, usize)> = tally.into_iter().collect();
    methods.sort();
    report.methods = methods;
    let file = TraceFile {
        meta: target_meta(inputs, sizes, n, opts.timing),
        trace,
        timelines: Vec::new(),
        series: Vec::new(),
    };
    Ok(Extrapolated { file, report })
}

/// Fits the fields of one class's events across the inputs.
struct Fitter<'a> {
    class: &'a str,
    grids: &'a [&'a [u64]],
    dims: &'a [u64],
    /// Fitted values by (kind, the inputs' values).
    cache: HashMap<(fit::Kind, Vec<i64>), i64>,
    fields: &'a mut Vec<FieldFit>,
    seen: &'a mut BTreeSet<(String, String)>,
}

/// Longest period of a list's items that [`Fitter::list`] tries.
const MAX_LIST_PERIOD: usize = 24;

impl Fitter<'_> {
    /// The target's parameters of event `i` from the inputs' encoded
    /// parameters: the fixed ones field by field, then each list.
    fn event(&mut self, i: usize, ev: &Ev, inputs: &[&[i64]]) -> Result<Vec<i64>, Error> {
        let (nfixed, widths) = ev.shape.layout();
        let names = ev.shape.param_names();
        let lists = ev.shape.list_names();
        let mut out = Vec::with_capacity(ev.params.len());
        let mut vals = Vec::with_capacity(inputs.len());
        for j in 0..nfixed {
            vals.clear();
            vals.extend(inputs.iter().map(|p| p.get(j).copied().unwrap_or(0)));
            let field = names.get(j).copied().unwrap_or("?");
            let kind = if field.ends_with(".peer") || field.ends_with(".local") {
                fit::Kind::Peer
            } else {
                fit::Kind::Other
            };
            out.push(self.value(i, ev, field, kind, &vals)?);
        }
        let mut cur = vec![nfixed; inputs.len()];
        for (li, &w) in widths.iter().enumerate() {
            let name = lists.get(li).copied().unwrap_or("list");
            let w = usize::from(w.max(1));
            let mut items: Vec<&[i64]> = Vec::with_capacity(inputs.len());
            let mut lens = Vec::with_capacity(inputs.len());
            for (p, c) in inputs.iter().zip(cur.iter_mut()) {
                let len = p.get(*c).copied().unwrap_or(0).max(0) as usize;
                let body = p.get(*c + 1..*c + 1 + len * w).unwrap_or(&[]);
                *c += 1 + len * w;
                lens.push(len as i64);
                items.push(body);
            }
            self.list(i, ev, name, w, &lens, &items, &mut out)?;
        }
        Ok(out)
    }

    /// One list: item by item when every input has the same length;
    /// otherwise its length is fitted (a list per peer has P entries) and
    /// its items must repeat with a period that every input shows, whose
    /// values are fitted one by one.
    #[allow(clippy::too_many_arguments)]
    fn list(
        &mut self,
        i: usize,
        ev: &Ev,
        name: &str,
        w: usize,
        lens: &[i64],
        items: &[&[i64]],
        out: &mut Vec<i64>,
    ) -> Result<(), Error> {
        let mut vals = Vec::with_capacity(items.len());
        if lens.iter().all(|&l| l == lens[0]) {
            out.push(lens[0]);
            for j in 0..lens[0] as usize * w {
                vals.clear();
                vals.extend(items.iter().map(|it| it[j]));
                let field = format!("{name}[{}]", j / w);
                out.push(self.value(i, ev, &field, fit::Kind::Other, &vals)?);
            }
            return Ok(());
        }
        let len = self.value(i, ev, &format!("{name} length"), fit::Kind::Length, lens)?;
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        let period = (1..=MAX_LIST_PERIOD.min(longest)).find(|&q| {
            2 * q <= longest
                && items
                    .iter()
                    .all(|it| (q * w..it.len()).all(|k| it[k] == it[k - q * w]))
        });
        let Some(q) = period else {
            return Err(self.failure(
                i,
                ev,
                &format!("{name} items"),
                lens,
                "the list's length changes with the size and its items do not repeat with a \
                 period of at most 24 entries, so they cannot be continued"
                    .into(),
            ));
        };
        let mut base = Vec::with_capacity(q * w);
        for k in 0..q * w {
            let (mut pts, mut grids) = (Vec::new(), Vec::new());
            for (it, g) in items.iter().zip(self.grids) {
                if let Some(&v) = it.get(k) {
                    pts.push(v);
                    grids.push(*g);
                }
            }
            let field = format!("{name}[j mod {q} = {}]", k / w);
            base.push(self.value_on(i, ev, &field, fit::Kind::Other, &pts, &grids)?);
        }
        out.push(len);
        out.extend((0..len.max(0) as usize * w).map(|k| base[k % (q * w)]));
        Ok(())
    }

    /// One field's value at the target, fitted over every input.
    fn value(
        &mut self,
        i: usize,
        ev: &Ev,
        field: &str,
        kind: fit::Kind,
        vals: &[i64],
    ) -> Result<i64, Error> {
        let grids = self.grids;
        self.value_on(i, ev, field, kind, vals, grids)
    }

    /// One field's value at the target, fitted over the inputs whose grids
    /// are given.
    fn value_on(
        &mut self,
        i: usize,
        ev: &Ev,
        field: &str,
        kind: fit::Kind,
        vals: &[i64],
        grids: &[&[u64]],
    ) -> Result<i64, Error> {
        if let Some(&v) = vals.first()
            && vals.iter().all(|&x| x == v)
            && kind != fit::Kind::Length
        {
            return Ok(v);
        }
        let key = (kind, vals.to_vec());
        if let Some(&v) = self.cache.get(&key) {
            return Ok(v);
        }
        let points: Vec<(&[u64], i64)> = grids.iter().copied().zip(vals.iter().copied()).collect();
        let f = fit::fit(&points, self.dims, kind).map_err(|why| {
            let why = match why {
                FitFailure::NoModel => "no model in the grid sizes reproduces them".into(),
                FitFailure::Ambiguous(a, va, b, vb) => format!(
                    "ambiguous: {a} gives {va} and {b} gives {vb} at the target (the inputs \
                     cannot tell them apart; add an input of another shape or give --dims)"
                ),
                FitFailure::NotInteger(m, v) => format!("{m} predicts {v}, not an integer"),
            };
            self.failure_on(i, ev, field, vals, grids, why)
        })?;
        let op = event_text(ev);
        if !matches!(f.model, fit::Model::Const(_))
            && self
                .seen
                .insert((self.class.to_string(), format!("{op} {field}")))
        {
            self.fields.push(FieldFit {
                class: self.class.to_string(),
                field: format!("{op} {field}"),
                values: vals.to_vec(),
                model: f.model.describe(self.dims.len()),
                target: f.value,
                verified: f.verified,
            });
        }
        self.cache.insert(key, f.value);
        Ok(f.value)
    }

    fn failure(&self, i: usize, ev: &Ev, field: &str, vals: &[i64], why: String) -> Error {
        self.failure_on(i, ev, field, vals, self.grids, why)
    }

    fn failure_on(
        &self,
        i: usize,
        ev: &Ev,
        field: &str,
        vals: &[i64],
        grids: &[&[u64]],
        why: String,
    ) -> Error {
        let values = grids
            .iter()
            .zip(vals)
            .map(|(g, v)| {
                let g: Vec<String> = g.iter().map(u64::to_string).collect();
                format!("{v} at {}", g.join("x"))
            })
            .collect::<Vec<_>>()
            .join(", ");
        Error::Field(Box::new(crate::FieldError {
            class: self.class.to_string(),
            index: i,
            op: event_text(ev),
            field: field.to_string(),
            values,
            why,
        }))
    }
}

/// In lossy mode, a peer displacement fewer than this share of the ranks
/// have is a minor pattern and does not shape the topology.
const LOSSY_MIN_SHARE: f64 = 0.25;

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

/// Index of the first event where two streams differ in call (the lists'
/// lengths may differ: they are fitted).
fn first_difference(a: &Stream, b: &Stream) -> Option<usize> {
    let n = a.events.len().min(b.events.len());
    (0..n)
        .find(|&i| {
            let (x, y) = (&a.events[i], &b.events[i]);
            x.shape != y.shape
        })
        .or((a.events.len() != b.events.len()).then_some(n))
}

/// The fitted timing of one event at the target: its path timing and the
/// means (compute, mpi) of its path class.
fn fit_timing(
    method: Method,
    kept: &[(usize, Stream)],
    key: &[TSrc],
    kps: &[f64],
    tally: &mut HashMap<String, usize>,
    ev: &Ev,
    choices: &mut Vec<TimingChoice>,
) -> (PathTiming, [f64; 2]) {
    let ps = &kps[..kps.len() - 1];
    let target = kps[kps.len() - 1];
    let stats: Vec<Option<(&PathTiming, u8)>> = kept
        .iter()
        .zip(key)
        .map(|((_, s), t)| match t {
            TSrc::Stats(i, c) => s.timings.get(*i).map(|p| (p, *c)),
            TSrc::Exact(..) => None,
        })
        .collect();
    if stats.iter().all(Option::is_some) {
        let pts: Vec<&PathTiming> = stats.iter().flatten().map(|(p, _)| *p).collect();
        let class = stats.last().and_then(|s| s.map(|(_, c)| c)).unwrap_or(0);
        let base = pts[pts.len() - 1];
        // The report shows the law of the path class with most executions.
        let counts = [
            base.first().count(),
            base.steady().count(),
            base.last().count(),
        ];
        let main = (0..3).max_by_key(|&i| counts[i]).unwrap_or(0) as u8;
        let mut mean_law = None;
        let fitted = base.map_dists(|pc, q, dist| {
            let dists: Vec<&Dist> = pts.iter().map(|p| dist_of(p, pc, q)).collect();
            let mut extended = ps.to_vec();
            extended.push(target);
            let (out, law) = fit_dist(method, &extended, &dists, dist, tally);
            if q == Quantity::Compute && class_code(pc) == main {
                mean_law = law.map(|l| {
                    (
                        l,
                        dists.iter().map(|d| d.stats().mean()).collect::<Vec<_>>(),
                    )
                });
            }
            out
        });
        let pc = match class {
            0 => PathClass::First,
            1 => PathClass::Steady,
            _ => PathClass::Last,
        };
        let means = [
            dist_of(&fitted, pc, Quantity::Compute).stats().mean(),
            dist_of(&fitted, pc, Quantity::Mpi).stats().mean(),
        ];
        if let Some(((law, m), inputs)) = mean_law {
            let choice = TimingChoice {
                event: format!("{} @{:#x}", event_text(ev), ev.shape.site()),
                field: "compute mean".into(),
                inputs,
                law: law.describe(),
                method: m,
                target: law.eval(target),
            };
            let same = |t: &TimingChoice| t.event == choice.event && t.inputs == choice.inputs;
            if !choices.iter().any(same) {
                choices.push(choice);
            }
        }
        (fitted, means)
    } else {
        // Exact times (events outside any loop that were never merged):
        // fit the two values directly.
        let mut vals = [Vec::new(), Vec::new()];
        for t in key {
            let (c, m) = match t {
                TSrc::Exact(c, m) => (*c as f64, *m as f64),
                TSrc::Stats(..) => (0.0, 0.0),
            };
            vals[0].push(c);
            vals[1].push(m);
        }
        let mut means = [0.0; 2];
        for (q, v) in vals.iter().enumerate() {
            let f = [v.clone(), v.clone(), v.clone()];
            means[q] = fit_fields(method, ps, &f, tally)[0]
                .as_ref()
                .map_or(v.last().copied().unwrap_or(0.0), |(l, _)| l.eval(target));
        }
        (PathTiming::default(), means)
    }
}

fn dist_of(p: &PathTiming, class: PathClass, q: Quantity) -> &Dist {
    let t: &TimeStats = match class {
        PathClass::First => p.first(),
        PathClass::Steady => p.steady(),
        PathClass::Last => p.last(),
    };
    match q {
        Quantity::Compute => t.compute(),
        Quantity::Mpi => t.mpi(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
