//! `rankscale topology` and `rankscale extrap`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use extrap::{Input, Method, Options};
use trace::TraceFile;

/// How timing fields are fitted.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Timing {
    /// ScalaExtrap's four laws (constant, linear, inverse, inverse + constant)
    /// with its outlier exclusion and selection rule.
    Paper,
    /// A search over the performance-model normal form c0 + c1*P^i*log2(P)^j.
    Pmnf,
    /// Per field, whichever predicts held-out input sizes better.
    Auto,
}

/// The order the sizes of `--dims` are written in.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DimsOrder {
    /// rankscale's order: the slowest-varying dimension first, the last
    /// size contiguous in rank order (as MPI_Cart_create numbers ranks).
    SlowestFirst,
    /// The fastest-varying dimension first: x, y, z of an application that
    /// numbers its ranks x + nx*(y + ny*z), as MPI_Dims_create's result is
    /// often read (nx, ny, nz).
    XFastest,
}

impl DimsOrder {
    /// The extrap crate's order for this command-line choice.
    fn order(self) -> extrap::DimsOrder {
        match self {
            DimsOrder::SlowestFirst => extrap::DimsOrder::SlowestFirst,
            DimsOrder::XFastest => extrap::DimsOrder::XFastest,
        }
    }
}

/// Arguments of `rankscale extrap`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace file to write.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// The target rank count.
    #[arg(long)]
    ranks: u64,
    /// The target grid, e.g. 32x32 or 8x8x16, in the order --dims-order
    /// says (default: what the inputs' growth implies). It must continue
    /// the grids read from the inputs: a grid written in the other order is
    /// refused, naming them.
    #[arg(long)]
    dims: Option<String>,
    /// The order of the sizes of --dims: slowest-first (rankscale's, the
    /// last size contiguous in rank order, as MPI_Cart_create numbers
    /// ranks) or x-fastest (the first size varies fastest, as in
    /// rank = x + nx*(y + ny*z)).
    #[arg(long, value_enum, default_value = "slowest-first", requires = "dims")]
    dims_order: DimsOrder,
    /// How timing is extrapolated.
    #[arg(long, value_enum, default_value = "auto")]
    timing: Timing,
    /// Print every fitted field and timing law.
    #[arg(short, long)]
    verbose: bool,
    /// Lossy mode (ScalaExtrap's, Wu and Mueller, ACM TOPLAS 2012): keep the
    /// calls every rank of a class and every input share, drop minor
    /// rank-dependent patterns, report the share dropped.
    #[arg(long)]
    lossy: bool,
    /// A snippet of the dominant pattern (one call per line, `Op
    /// field=value ...`) for the state-machine filter within each rank;
    /// implies --lossy.
    #[arg(long, value_name = "FILE")]
    snippet: Option<PathBuf>,
    /// A plugin spec naming peers, tags and counts that no grid position
    /// decides (extrap/specs/npb-cg.toml for NPB CG's pattern,
    /// npb-bt.toml and npb-sp.toml for NPB BT's and SP's multi-partition).
    #[arg(long, value_name = "SPEC")]
    plugin: Option<PathBuf>,
    /// A value the plugin spec asks for (a `[[param]]` of the spec), e.g.
    /// `n=60` for the grid points per dimension that NPB SP's message sizes
    /// follow; repeat for several.
    #[arg(long, value_name = "NAME=VALUE", requires = "plugin")]
    plugin_param: Vec<String>,
    /// Align the inputs on their structure alone, ignoring call sites
    /// (for builds without debug information, whose sites are symbol
    /// offsets that a rebuild moves); the output names no call sites.
    #[arg(long)]
    ignore_sites: bool,
    /// Write the trace even when some field's model is not confirmed by a
    /// spare input; the trace's metadata lists those fields.
    #[arg(long)]
    allow_unverified: bool,
    /// In lossy mode, refuse when more than this percentage of any input's
    /// events would be dropped (0 to 100).
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0,
          value_parser = crate::args::finite_in(0.0, 100.0))]
    max_drop: f64,
    /// Input traces of the same program, in increasing rank count.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Reads a trace (its errors name the file).
fn read(path: &Path) -> Result<TraceFile> {
    crate::show::read(path)
}

/// `rankscale topology FILES`.
pub fn topology(files: &[PathBuf]) -> Result<()> {
    for f in files {
        let file = read(f)?;
        let t = extrap::detect(&file.trace).with_context(|| format!("{}", f.display()))?;
        println!("{}: {t}", f.display());
    }
    Ok(())
}

fn parse_dims(s: &str) -> Result<Vec<u64>> {
    let dims: Vec<u64> = s
        .split(['x', 'X', '*', ','])
        .map(|p| p.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("--dims {s}: expected sizes like 32x32 or 8x8x16"))?;
    if dims.is_empty() || dims.len() > 3 || dims.contains(&0) {
        bail!("--dims {s}: expected 1 to 3 positive sizes like 32x32");
    }
    Ok(dims)
}

/// `rankscale extrap`.
pub fn run(args: &Args) -> Result<()> {
    if args.ranks == 0 {
        bail!("--ranks must be at least 1");
    }
    let dims = args.dims.as_deref().map(parse_dims).transpose()?;
    let read_paths: Vec<&Path> = args
        .files
        .iter()
        .chain(&args.snippet)
        .chain(&args.plugin)
        .map(PathBuf::as_path)
        .collect();
    // Refused now, not after the extrapolation: an output that is one of
    // the inputs, or a device.
    let output = trace::output::Output::create(&args.output, &read_paths)?;
    let snippet = args.snippet.as_deref().map(read_snippet).transpose()?;
    let plugin = match &args.plugin {
        Some(p) => Some(load_plugin(p, &args.plugin_param, args.ranks)?),
        None => None,
    };
    let inputs = args
        .files
        .iter()
        .map(|f| {
            Ok(Input {
                name: f.display().to_string(),
                file: read(f)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = Options {
        ranks: args.ranks,
        dims,
        dims_order: args.dims_order.order(),
        timing: args.timing.method(),
        lossy: args.lossy,
        snippet,
        plugin,
        ignore_sites: args.ignore_sites,
        allow_unverified: args.allow_unverified,
        max_drop: args.max_drop / 100.0,
    };
    let (out, bytes, secs) = extrapolate_and_write(args, &inputs, &opts, output)?;
    print_report(args, &out.report, &inputs)?;
    println!(
        "wrote {} ({bytes} bytes) in {:.3} s",
        args.output.display(),
        secs
    );
    Ok(())
}

impl Timing {
    /// The extrap crate's method for this command-line choice (the crate
    /// knows nothing of clap).
    fn method(self) -> Method {
        match self {
            Timing::Paper => Method::Paper,
            Timing::Pmnf => Method::Pmnf,
            Timing::Auto => Method::Auto,
        }
    }
}

/// Reads `--snippet`: a file that cannot be read or parsed is an error
/// naming it, before any trace is read.
fn read_snippet(path: &Path) -> Result<extrap::Snippet> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    text.parse::<extrap::Snippet>()
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Reads the `--plugin` spec at `path`, sets its `--plugin-param` values
/// (`params`, `NAME=INTEGER` each) and checks that it can name the peers
/// of `ranks` ranks: a spec that cannot is refused before any trace is
/// read, naming the spec and what it lacks.
fn load_plugin(
    path: &Path,
    params: &[String],
    ranks: u64,
) -> Result<std::sync::Arc<dyn extrap::Plugin>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let mut spec: extrap::SpecPlugin = text
        .parse()
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    for kv in params {
        let (name, value) = kv
            .split_once('=')
            .and_then(|(n, v)| Some((n.trim(), v.trim().parse::<i64>().ok()?)))
            .ok_or_else(|| {
                anyhow::anyhow!("--plugin-param {kv:?}: expected NAME=INTEGER, e.g. n=60")
            })?;
        spec.set_param(name, value)
            .map_err(|e| anyhow::anyhow!("{}: --plugin-param {kv}: {e}", path.display()))?;
    }
    spec.check(ranks)
        .map_err(|e| anyhow::anyhow!("{} at {ranks} ranks: {e}", path.display()))?;
    Ok(std::sync::Arc::new(spec))
}

/// Extrapolates, proves the result consistent and writes it to `output`,
/// under a spinner that says which of these it is at: a trace that fails
/// the check is never written. Returns the result, the bytes written and
/// the seconds the extrapolation itself took.
fn extrapolate_and_write(
    args: &Args,
    inputs: &[Input],
    opts: &Options,
    output: trace::output::Output,
) -> Result<(extrap::Extrapolated, u64, f64)> {
    let t0 = Instant::now();
    let spin = crate::progress::Progress::spinner(
        "extrap",
        format!("{} input(s) to {} ranks", inputs.len(), args.ranks),
    );
    let out = extrap::extrapolate(inputs, opts)?;
    let secs = t0.elapsed().as_secs_f64();
    spin.say("checking the extrapolated trace");
    let classes: Vec<u32> = out
        .report
        .classes
        .iter()
        .filter_map(|(_, r)| r.min())
        .collect();
    crate::check::verify_extrapolated(&out.file, &classes)?;
    spin.say(format!("writing {}", args.output.display()));
    let bytes = out
        .file
        .write_output(output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    drop(spin);
    Ok((out, bytes, secs))
}

/// What the extrapolation found and decided, on stdout: the target grid,
/// the fields and timing laws (a sample, or all with `--verbose`), the
/// predicted run time and lossy mode's losses. The report is how a user
/// judges whether to trust the trace, so it comes before the file's name.
fn print_report(args: &Args, r: &extrap::Report, inputs: &[Input]) -> Result<()> {
    let last = r.topologies.last().context("no topology")?;
    println!("topology of the inputs: {last}");
    let mut dims: Vec<String> = r.dims.iter().map(u64::to_string).collect();
    let slowest_first = dims.join("x");
    dims.reverse();
    let order = if dims.len() > 1 {
        format!(" (slowest dimension first; x fastest {})", dims.join("x"))
    } else {
        String::new()
    };
    println!(
        "target: {} ranks as {slowest_first}{order} ({} position classes, {} events)",
        args.ranks,
        r.classes.len(),
        r.events
    );
    if args.verbose {
        for (c, ranks) in &r.classes {
            println!("  {c:<40} {ranks}");
        }
    }
    print_fields(r, args.verbose);
    print_timing(r, args.verbose);
    if let Some(w) = &r.wall {
        print_wall(w, inputs, args.ranks);
    }
    print_remarks(r);
    Ok(())
}

/// The communication fields that change with the size, each with its
/// inputs' values, model and target value, and a mark on any that no
/// spare input confirmed; the first 12 unless `verbose`.
fn print_fields(r: &extrap::Report, verbose: bool) {
    println!("fields that change with the size: {}", r.fields.len());
    let shown = if verbose { r.fields.len() } else { 12 };
    for f in r.fields.iter().take(shown) {
        let vals: Vec<String> = f.values.iter().map(i64::to_string).collect();
        println!(
            "  {:<36} {:<28} [{}] -> {} = {}{}",
            f.class,
            f.field,
            vals.join(", "),
            f.model,
            f.target,
            if f.verified {
                ""
            } else {
                " (NOT VERIFIED: no spare input confirms it)"
            }
        );
    }
    if r.fields.len() > shown {
        println!("  ... {} more (--verbose)", r.fields.len() - shown);
    }
}

/// How often each timing method was chosen, and the timing laws that
/// predict the most time at the target (those that matter most), the
/// first 8 unless `verbose`.
fn print_timing(r: &extrap::Report, verbose: bool) {
    let tally: Vec<String> = r.methods.iter().map(|(m, n)| format!("{m} {n}")).collect();
    println!("timing fields fitted: {}", tally.join(", "));
    let shown = if verbose { r.timing.len() } else { 8 };
    let mut timing: Vec<_> = r.timing.iter().collect();
    timing.sort_by(|a, b| b.target.total_cmp(&a.target));
    for t in timing.iter().take(shown) {
        let vals: Vec<String> = t.inputs.iter().map(|v| format!("{:.0}", v)).collect();
        println!(
            "  {:<28} {} [{}] ns -> {} ({}) = {:.0} ns",
            t.event,
            t.field,
            vals.join(", "),
            t.law,
            t.method,
            t.target
        );
    }
}

/// The remarks a user must see to know what the trace leaves out: inputs
/// left out of a class, and in lossy mode the events dropped and the
/// all-to-all volumes made uniform.
fn print_remarks(r: &extrap::Report) {
    for a in &r.assumptions {
        println!("assumes: {a}");
    }
    for n in &r.notes {
        println!("note: {n}");
    }
    for d in &r.dropped {
        println!(
            "lossy: dropped {} of {} events ({:.2} %) from {}",
            d.dropped,
            d.events,
            100.0 * d.dropped as f64 / d.events.max(1) as f64,
            d.input
        );
    }
    for v in &r.volumes {
        println!("{}", v.describe());
    }
}

/// The predicted run time, how far the inputs pin it down, and a warning on
/// stderr when they leave it open by more than twice: a user who sizes a
/// machine by this number must know when it is a guess.
fn print_wall(w: &extrap::WallPrediction, inputs: &[extrap::Input], ranks: u64) {
    let s = |ns: f64| format!("{:.3}", ns / 1e9);
    let walls: Vec<String> = w.inputs.iter().map(|&v| s(v)).collect();
    let sizes: Vec<String> = inputs
        .iter()
        .map(|i| i.file.meta.world_size.to_string())
        .collect();
    println!(
        "predicted run time at {ranks} ranks: {} s (rank 0's wall time [{}] s at [{}] ranks -> {} ns ({}))",
        s(w.target),
        walls.join(", "),
        sizes.join(", "),
        w.law,
        w.method
    );
    let (Some((low, high)), Some(spread)) = (w.range, w.spread()) else {
        return;
    };
    println!(
        "  the laws fitted with one input left out give {} to {} s",
        s(low),
        s(high)
    );
    if spread > 2.0 {
        eprintln!(
            "rankscale extrap: warning: the inputs do not fix how the run time grows: laws that \
             explain them predict {} to {} s at {ranks} ranks. Treat the time as a guess; inputs \
             at more sizes, closer to the target, from longer runs or with a core per rank pin \
             it down",
            s(low),
            s(high)
        );
    }
}
