//! `rankscale analyze`: communication patterns, phases, slow instances and
//! Inspection Affinity of a trace, as text (through
//! [`report::analysis_text`]) or JSON.

use std::path::PathBuf;
use std::time::Instant;

use analysis::phases::{Criterion, Limits};
use analysis::{Options, analyze_owned};
use anyhow::{Context, Result};

use report::analysis_text::{TextOptions, text};

use crate::show::read;

/// `rankscale analyze`: find communication patterns, segment them into
/// phases, flag slow instances with their cause, and rank slow patterns by
/// Inspection Affinity. Instance timing needs a trace taken with
/// RANKSCALE_TIMELINE=1.
#[derive(clap::Args)]
pub struct Args {
    /// A trace file.
    pub file: PathBuf,
    /// Print the whole report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Modified z-score above which an instance is slow (a finite number
    /// of at least 0).
    #[arg(long, default_value_t = analysis::outliers::DEFAULT_CUTOFF,
          value_parser = crate::args::finite_at_least(0.0))]
    pub cutoff: f64,
    /// Stopping rule of the phase segmentation.
    #[arg(long, default_value = "aic", value_parser = ["aic", "bic"])]
    pub criterion: String,
    /// Deepest level of the segmentation tree.
    #[arg(long, default_value_t = 8)]
    pub max_depth: usize,
    /// Shortest run of pattern instances that is still split.
    #[arg(long, default_value_t = 8)]
    pub min_len: usize,
    /// Leave the timestamps as recorded: no clock-condition correction.
    #[arg(long)]
    pub no_clock_correction: bool,
    /// How an instance's events make its pattern: `ordered` (each rank's
    /// events in call order; R1·S1 and S1·R1 are two patterns, since a
    /// rank that receives first waits differently) or `unordered` (each
    /// rank's events as a set, as Alawneh and Hamou-Lhadj count patterns
    /// in their published results).
    #[arg(long, default_value = "ordered", value_parser = ["ordered", "unordered"])]
    pub pattern_key: String,
    /// Minimum message latency for the clock condition, ns.
    #[arg(long, default_value_t = 0)]
    pub min_latency: i64,
    /// Patterns and slow instances listed in the text report.
    #[arg(long, default_value_t = 12)]
    pub top: usize,
    /// Print the wall time of each stage (loading, matching, patterns,
    /// wait states, delay costs, ...) on stderr: where a long analysis
    /// spends its time.
    #[arg(long)]
    pub timings: bool,
}

/// Runs `rankscale analyze FILE`.
pub fn run(a: &Args) -> Result<()> {
    let file = a.file.as_path();
    let loading = Instant::now();
    let f = read(file)?;
    // The call sites' names are all the text needs of the file once the
    // analysis has read it (and dropped it).
    let meta = trace::Meta {
        sites: f.meta.sites.clone(),
        ..trace::Meta::default()
    };
    let mut stages: Vec<(String, f64, Option<u64>)> = vec![(
        "loading".into(),
        loading.elapsed().as_secs_f64(),
        peak_rss_mb(),
    )];
    let opts = Options {
        cutoff: a.cutoff,
        limits: Limits {
            criterion: if a.criterion == "bic" {
                Criterion::Bic
            } else {
                Criterion::Aic
            },
            max_depth: a.max_depth,
            min_len: a.min_len,
        },
        clock: (!a.no_clock_correction).then_some(analysis::clc::ClcOptions {
            min_latency_ns: a.min_latency,
            ..Default::default()
        }),
        pattern_key: if a.pattern_key == "unordered" {
            analysis::patterns::PatternKey::Unordered
        } else {
            analysis::patterns::PatternKey::Ordered
        },
        memory: crate::show::limits().memory,
    };
    let t0 = Instant::now();
    let r = {
        let bar = crate::progress::Progress::bar("analyze");
        let mut current = (String::new(), Instant::now());
        let r = analyze_owned(f, &opts, &mut |stage, done, total| {
            if stage != current.0 {
                let (name, start) =
                    std::mem::replace(&mut current, (stage.to_string(), Instant::now()));
                if !name.is_empty() {
                    stages.push((name, start.elapsed().as_secs_f64(), peak_rss_mb()));
                }
            }
            bar.update(stage, done, total)
        });
        stages.push((current.0, current.1.elapsed().as_secs_f64(), peak_rss_mb()));
        r.with_context(|| format!("cannot analyse {}", file.display()))?
    };
    let secs = t0.elapsed().as_secs_f64();
    if a.timings {
        let parts: Vec<String> = stages
            .iter()
            .map(|(n, t, peak)| match peak {
                Some(mb) => format!("{n} {t:.2} s (peak {mb} MB)"),
                None => format!("{n} {t:.2} s"),
            })
            .collect();
        eprintln!("timings: {}; analysis {secs:.2} s", parts.join(", "));
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        let labels = meta.site_labels();
        let opts = TextOptions {
            top: a.top,
            criterion: &a.criterion,
        };
        print!("{}", text(file, &r, &opts, secs, &labels));
    }
    Ok(())
}

/// The process's peak resident memory so far, MB (10^6 bytes; `VmHWM` of
/// `/proc/self/status`, Linux only): read after each stage, it shows which
/// stage sets the peak of a large analysis.
fn peak_rss_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024 / 1_000_000)
}
