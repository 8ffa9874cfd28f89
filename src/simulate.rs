//! `rankscale simulate` and `rankscale calibrate`: a trace's run predicted
//! in the LogGOPS model (the `simulate` crate), and the model's parameters
//! measured on the machine at hand (`replay-calibrate` under `mpirun`).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use simulate::Params;
use simulate::calibrate::Samples;

/// `--mode`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    /// By class where that saves work, else rank by rank.
    Auto,
    /// By position class.
    Classes,
    /// Rank by rank.
    Ranks,
}

/// Arguments of `rankscale simulate`.
#[derive(clap::Args)]
pub struct Args {
    /// A trace file (traced, imported or extrapolated).
    file: PathBuf,
    /// LogGOPS parameters from `rankscale calibrate` (a TOML file); the
    /// options below override single values.
    #[arg(long, value_name = "FILE")]
    params: Option<PathBuf>,
    /// L: wire latency, ns (0 to 1e12).
    #[arg(long = "L", value_name = "NS",
          value_parser = crate::args::finite_in(0.0, crate::args::MAX_NS))]
    latency: Option<f64>,
    /// o: CPU overhead per message, ns (0 to 1e12).
    #[arg(long = "o", value_name = "NS",
          value_parser = crate::args::finite_in(0.0, crate::args::MAX_NS))]
    overhead: Option<f64>,
    /// g: gap between messages on one NIC, ns (0 to 1e12).
    #[arg(long = "g", value_name = "NS",
          value_parser = crate::args::finite_in(0.0, crate::args::MAX_NS))]
    gap: Option<f64>,
    /// G: gap per byte (inverse bandwidth), ns/byte (0 to 1e9).
    #[arg(long = "G", value_name = "NS",
          value_parser = crate::args::finite_in(0.0, crate::args::MAX_NS_PER_BYTE))]
    gap_per_byte: Option<f64>,
    /// O: CPU overhead per byte, ns/byte (0 to 1e9).
    #[arg(long = "O", value_name = "NS",
          value_parser = crate::args::finite_in(0.0, crate::args::MAX_NS_PER_BYTE))]
    overhead_per_byte: Option<f64>,
    /// S: smallest message sent by rendezvous, bytes.
    #[arg(long = "S", value_name = "BYTES")]
    eager_limit: Option<u64>,
    #[command(flatten)]
    emulation: compress::emulation::Emulation,
    /// Cores shared by all ranks, for runs with more ranks than cores (an
    /// oversubscribed node): the ranks that compute share them fairly. By
    /// default every rank has a core of its own.
    #[arg(long, value_name = "N")]
    cores: Option<u32>,
    /// The file system's aggregate bandwidth, GB/s, for MPI-IO calls:
    /// each file's collective calls move all their ranks' bytes at it,
    /// independent accesses an equal share of it (docs/SIMULATE.md). By
    /// default MPI-IO is free and the output counts the calls.
    #[arg(long, value_name = "GB_PER_S",
          value_parser = crate::args::finite_in(1e-6, 1e6))]
    io_bandwidth: Option<f64>,
    /// The file system's latency per MPI-IO call, ns (with
    /// --io-bandwidth; default 0).
    #[arg(long, value_name = "NS", requires = "io_bandwidth",
          value_parser = crate::args::finite_in(0.0, crate::args::MAX_NS))]
    io_latency: Option<f64>,
    /// Draw the computation from the histograms even where the trace has a
    /// recorded timeline.
    #[arg(long)]
    no_timeline: bool,
    /// How to simulate the ranks: by position class (each class once; the
    /// default for traces with far fewer classes than ranks), or rank by
    /// rank.
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    mode: ModeArg,
    /// Simulate with N seeds from --seed on and report the run whose rank
    /// 0 takes the median time, with the range over all: how much of the
    /// prediction is the draws' (computation drawn from histograms).
    #[arg(long, default_value_t = 1, value_name = "N")]
    seeds: u32,
    /// Print one line per rank (per class in class mode) as well.
    #[arg(long)]
    per_rank: bool,
    /// Call sites to list.
    #[arg(long, default_value_t = 12)]
    top: usize,
    /// Print everything as JSON.
    #[arg(long)]
    json: bool,
}

/// `rankscale simulate`.
pub fn run(args: &Args) -> Result<()> {
    if args.cores == Some(0) {
        bail!("--cores must be at least 1");
    }
    if args.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let mut p = match &args.params {
        Some(f) => Params::load(f)?,
        None => {
            eprintln!(
                "rankscale: no --params: simulating a generic cluster (L=1 us, 10 GB/s); \
                 `rankscale calibrate` measures this machine"
            );
            Params::default()
        }
    };
    let set = |x: &mut f64, v: Option<f64>| {
        if let Some(v) = v {
            *x = v;
        }
    };
    set(&mut p.latency, args.latency);
    set(&mut p.overhead, args.overhead);
    set(&mut p.gap, args.gap);
    set(&mut p.gap_per_byte, args.gap_per_byte);
    set(&mut p.overhead_per_byte, args.overhead_per_byte);
    if let Some(s) = args.eager_limit {
        p.eager_limit = s;
    }
    p.validate()?;
    let file = crate::show::read(&args.file)?;
    args.emulation.check(&file)?;
    let opts = simulate::Options {
        compute_scale: args.emulation.compute_scale,
        bytes_scale: args.emulation.bytes_scale,
        no_compute: args.emulation.no_compute,
        seed: args.emulation.seed,
        cores: args.cores,
        timeline: !args.no_timeline,
        mode: match args.mode {
            ModeArg::Auto => simulate::Mode::Auto,
            ModeArg::Classes => simulate::Mode::Classes,
            ModeArg::Ranks => simulate::Mode::Ranks,
        },
        io: args.io_bandwidth.map(|bandwidth| simulate::IoModel {
            bandwidth,
            latency: args.io_latency.unwrap_or(0.0),
        }),
    };
    let pred = simulate::simulate_seeds(&file, &p, &opts, args.seeds)
        .with_context(|| format!("cannot simulate {}", args.file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&pred)?);
    } else {
        print!("{}", pred.to_text(args.per_rank, args.top));
    }
    Ok(())
}

/// Arguments of `rankscale calibrate`.
#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// Where to write the parameters.
    #[arg(short = 'o', long, default_value = "loggops.toml")]
    output: PathBuf,
    /// The MPI implementation to measure (mpich or openmpi); by default the
    /// launcher's, else this build's.
    #[arg(long)]
    mpi: Option<String>,
    /// Keep the raw measurements (JSON) here too.
    #[arg(long, value_name = "FILE")]
    samples: Option<PathBuf>,
    /// The launch command for two ranks, e.g. `mpirun.openmpi -n 2
    /// --bind-to core`; by default `mpirun.<mpi> -n 2`. Any other rank
    /// count is refused.
    #[arg(last = true)]
    command: Vec<String>,
}

/// The rank counts a launch command asks for: each `-n N`, `-np N`,
/// `--n N`, `--np N` or `-c N` (Open MPI's and MPICH's spellings, also with
/// `=`), as the flag and the value. The measurement refuses any other
/// count than 2 itself, but only once the job runs; a count it can read
/// here is refused before anything starts.
fn launch_ranks(command: &[String]) -> impl Iterator<Item = (&str, &str)> {
    const FLAGS: [&str; 5] = ["-n", "-np", "--n", "--np", "-c"];
    let args = command.get(1..).unwrap_or_default();
    args.iter().enumerate().filter_map(|(i, a)| {
        if let Some((flag, n)) = a.split_once('=')
            && FLAGS.contains(&flag)
        {
            return Some((flag, n));
        }
        FLAGS
            .contains(&a.as_str())
            .then(|| Some((a.as_str(), args.get(i + 1)?.as_str())))
            .flatten()
    })
}

/// `rankscale calibrate`.
pub fn calibrate(args: &CalibrateArgs) -> Result<()> {
    let imp = match (&args.mpi, args.command.first()) {
        (Some(m), _) => m.clone(),
        (None, Some(c)) => crate::launch::mpi_of_launcher(c)
            .unwrap_or(crate::launch::BUILD_MPI)
            .to_string(),
        (None, None) => crate::launch::BUILD_MPI.to_string(),
    };
    if imp != "mpich" && imp != "openmpi" {
        bail!("--mpi must be mpich or openmpi, not {imp}");
    }
    if let Some((flag, n)) = launch_ranks(&args.command).find(|(_, n)| n.parse() != Ok(2u32)) {
        bail!(
            "the launch command asks for {n} ranks (`{flag} {n}`); calibrate measures between \
             exactly 2: give `{flag} 2`"
        );
    }
    // Both outputs are checked before the measurement: a device or a
    // directory is refused, and --samples must not overwrite -o.
    trace::output::check_target(&args.output, &[])?;
    if let Some(s) = &args.samples {
        trace::output::check_target(s, &[&args.output])?;
    }
    let tool = crate::launch::find_built(&imp, "replay-calibrate", "replay-calibrate", "")?;
    let mut command = args.command.clone();
    if command.is_empty() {
        command = vec![format!("mpirun.{imp}"), "-n".into(), "2".into()];
    }
    let out = std::env::temp_dir().join(format!("rankscale-calibrate-{}.json", std::process::id()));
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]).arg(&tool).arg(&out);
    if imp == "openmpi" {
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    eprintln!(
        "rankscale: measuring with {} {}",
        command.join(" "),
        tool.display()
    );
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", command[0]))?;
    if !status.success() {
        bail!("the measurement run failed ({status})");
    }
    let text = std::fs::read_to_string(&out)
        .with_context(|| format!("the measurement left no result in {}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    let samples: Samples =
        serde_json::from_str(&text).context("the measurement's result is not readable")?;
    if let Some(f) = &args.samples {
        trace::output::write_file(f, text.as_bytes(), &[])?;
    }
    let (p, notes) = simulate::calibrate::fit(&samples)?;
    let comment = format!(
        "measured by `rankscale calibrate` with `{}` on {}\n{}\n{}",
        command.join(" "),
        samples.mpi.lines().next().unwrap_or(""),
        notes.trim_end(),
        "the simulator's default eager/rendezvous switch and costs follow these values"
    );
    p.save(&args.output, &comment)?;
    println!(
        "L = {:.0} ns, o = {:.0} ns, g = {:.0} ns, G = {:.4} ns/B ({:.2} GB/s), O = {:.4} ns/B, \
         S = {} B\nwritten to {}",
        p.latency,
        p.overhead,
        p.gap,
        p.gap_per_byte,
        if p.gap_per_byte > 0.0 {
            1.0 / p.gap_per_byte
        } else {
            f64::INFINITY
        },
        p.overhead_per_byte,
        p.eager_limit,
        args.output.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(command: &str) -> Vec<(&str, &str)> {
        let v: Vec<String> = command.split_whitespace().map(String::from).collect();
        // Leaked so that the borrowed pairs outlive the vector (a test).
        launch_ranks(Vec::leak(v)).collect()
    }

    #[test]
    fn the_launch_commands_rank_counts_are_read_in_every_spelling() {
        assert_eq!(ranks("mpirun.openmpi -n 3 --oversubscribe"), [("-n", "3")]);
        assert_eq!(ranks("mpirun.mpich -np 2"), [("-np", "2")]);
        assert_eq!(ranks("mpirun --np=4 --mca pml ob1"), [("--np", "4")]);
        assert_eq!(ranks("mpirun -c 2"), [("-c", "2")]);
        assert!(ranks("mpirun.openmpi --bind-to core").is_empty());
        // The launcher's own name is not an option, and a flag at the end
        // has no value to read.
        assert!(ranks("-n 5").is_empty());
        assert!(ranks("mpirun -n").is_empty());
    }
}
