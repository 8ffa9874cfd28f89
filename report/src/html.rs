//! The HTML report (`rankscale report FILE -o report.html`): the whole
//! analysis as one self-contained page (inline CSS and SVG, no script, no
//! network), so that it can be mailed, archived next to the trace and
//! opened anywhere.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use analysis::desync;
use analysis::run::StepMatrix;
use analysis::{Report, RunData};
use trace::TraceFile;

use crate::analysis_text::region_text;
use crate::sites::{site_labels, site_text};
use crate::svg::{self, Labels, Series, escape};

/// Rows listed in the report's tables.
const ROWS: usize = 20;

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

/// A table: a header row and body rows of already escaped cells.
fn table(head: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut t = String::from("<table><thead><tr>");
    for h in head {
        let _ = write!(t, "<th>{}</th>", escape(h));
    }
    t.push_str("</tr></thead><tbody>");
    for row in rows {
        t.push_str("<tr>");
        for c in row {
            let _ = write!(t, "<td>{c}</td>");
        }
        t.push_str("</tr>");
    }
    t.push_str("</tbody></table>");
    t
}

/// A figure: an inline SVG with a caption.
fn figure(svg: String, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        escape(caption)
    )
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;\
color:#222;line-height:1.4}h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;\
padding-bottom:.2em;margin-top:2em}table{border-collapse:collapse;margin:.8em 0;\
font-size:.9em}th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;\
vertical-align:top}th{background:#f3f3f3}td.n{text-align:right}figure{margin:1em 0}\
figcaption{font-size:.85em;color:#555}nav a{margin-right:1em}.note{color:#8a4b00}\
code{background:#f3f3f3;padding:0 .2em}";

/// The page of the analysis `r` (with the unfolded run `data`) of the
/// trace `f`, read from `path`.
pub fn page(path: &Path, f: &TraceFile, r: &Report, data: &RunData) -> String {
    let labels = site_labels(f);
    let site = |s: u64| escape(&site_text(&labels, s));
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>rankscale report: {}</title><style>{STYLE}</style></head><body>",
        escape(&path.display().to_string())
    );
    let _ = write!(
        h,
        "<h1>rankscale report</h1><p><b>{}</b>: {} ranks, {} events analysed, timeline: {}. \
         MPI: {}. Command: <code>{}</code>. Wall time {}.</p>",
        escape(&path.display().to_string()),
        r.ranks,
        r.events,
        if r.timeline { "yes" } else { "no" },
        escape(f.meta.mpi.trim_matches(char::is_control)),
        escape(&f.meta.command.join(" ")),
        ms(f.meta.wall_ns as f64)
    );
    h.push_str(
        "<nav><a href=\"#topology\">topology</a><a href=\"#matrix\">communication matrix</a>\
         <a href=\"#phases\">phases</a><a href=\"#slow\">slow patterns</a>\
         <a href=\"#waits\">wait states</a><a href=\"#path\">delays and critical path</a>\
         <a href=\"#desync\">desynchronisation</a></nav>",
    );
    for n in &r.notes {
        let _ = write!(h, "<p class=\"note\">{}</p>", escape(n));
    }
    topology(&mut h, r, data);
    matrix(&mut h, data);
    phases(&mut h, r);
    slow(&mut h, r);
    waits(&mut h, r, &site);
    critical_path(&mut h, r, &site);
    desync_section(&mut h, r, data);
    h.push_str("</body></html>\n");
    h
}

/// The communication topology as the messages show it: who talks to how
/// many peers, and at which rank offsets.
fn topology(h: &mut String, r: &Report, data: &RunData) {
    h.push_str("<h2 id=\"topology\">Topology</h2>");
    let n = data.ranks.len();
    let degrees: Vec<usize> = data
        .bytes
        .iter()
        .enumerate()
        .map(|(i, row)| {
            (0..n)
                .filter(|&j| j != i && (row[j] > 0 || data.bytes[j][i] > 0))
                .count()
        })
        .collect();
    let mut offsets: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, row) in data.bytes.iter().enumerate() {
        for (j, &b) in row.iter().enumerate() {
            if b > 0 && i != j {
                *offsets
                    .entry(i64::from(data.ranks[j]) - i64::from(data.ranks[i]))
                    .or_default() += 1;
            }
        }
    }
    let mut offs: Vec<(i64, usize)> = offsets.into_iter().collect();
    offs.sort_by_key(|&(o, c)| (std::cmp::Reverse(c), o.abs(), o));
    let _ = write!(
        h,
        "<p>{} ranks; point-to-point peers per rank: min {}, max {}; {} matched messages and {} \
         collective operations (each counted once for all its members). Rank offsets of the point-to-point partners (receiver − sender), \
         most common first (a stencil shows ±1 and ±row length; a torus adds the wrap-around \
         offsets):</p>",
        r.ranks,
        degrees.iter().min().unwrap_or(&0),
        degrees.iter().max().unwrap_or(&0),
        r.messages,
        r.collectives
    );
    h.push_str(&table(
        &["offset", "sending ranks"],
        offs.iter()
            .take(ROWS)
            .map(|(o, c)| vec![format!("{o:+}"), c.to_string()]),
    ));
}

fn matrix(h: &mut String, data: &RunData) {
    h.push_str("<h2 id=\"matrix\">Communication matrix</h2>");
    let rows: Vec<Vec<f64>> = data
        .bytes
        .iter()
        .map(|r| r.iter().map(|&b| b as f64).collect())
        .collect();
    h.push_str(&figure(
        svg::intensity(
            &rows,
            &Labels {
                title: "Bytes sent point-to-point",
                x: "receiver rank",
                y: "sender rank",
            },
            "bytes",
        ),
        "Bytes sent from each rank (row) to each rank (column); white is none.",
    ));
}

fn phases(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"phases\">Patterns and phases</h2>");
    h.push_str(&table(
        &[
            "pattern",
            "ranks",
            "np",
            "ne",
            "instances",
            "bytes",
            "median",
        ],
        r.patterns.iter().take(ROWS).map(|p| {
            vec![
                escape(&p.id),
                escape(&p.ranks),
                p.np.to_string(),
                p.ne.to_string(),
                p.instances.to_string(),
                escape(
                    &p.bytes
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                p.median_ns.map_or("-".into(), |m| ms(m as f64)),
            ]
        }),
    ));
    if r.djs.len() > 1 {
        let pts: Vec<(f64, f64)> = r
            .djs
            .iter()
            .enumerate()
            .map(|(i, &d)| (i as f64 + 1.0, d))
            .collect();
        h.push_str(&figure(
            svg::line_chart(
                &[Series {
                    name: "D_JS",
                    points: &pts,
                }],
                &Labels {
                    title: "Jensen-Shannon divergence at each split point",
                    x: "split point (pattern instance)",
                    y: "D_JS",
                },
            ),
            "The phase boundary is where the divergence of the pattern distributions before and \
             after is largest (Alawneh and Hamou-Lhadj 2022, section 2.2).",
        ));
    }
    h.push_str(&table(
        &["phase", "instances", "time", "patterns"],
        r.phases.iter().map(|p| {
            vec![
                p.index.to_string(),
                format!("{}-{}", p.start, p.end.saturating_sub(1)),
                p.time_ns.map_or("-".into(), |(a, b)| {
                    format!("{} - {}", ms(a as f64), ms(b as f64))
                }),
                escape(
                    &p.patterns
                        .iter()
                        .take(6)
                        .map(|(x, n)| format!("{x} x{n}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ]
        }),
    ));
}

fn slow(h: &mut String, r: &Report) {
    h.push_str("<h2 id=\"slow\">Slow patterns and Inspection Affinity</h2>");
    if !r.timeline {
        h.push_str("<p>Needs a trace taken with RANKSCALE_TIMELINE=1.</p>");
    }
    h.push_str(&table(
        &[
            "phase",
            "pattern",
            "Inspection Affinity",
            "severity weight",
            "complexity weight",
        ],
        r.affinity.iter().map(|a| {
            vec![
                a.phase.to_string(),
                escape(&a.pattern),
                a.level.to_string(),
                format!("{:.2}", a.severity_weight),
                format!("{:.2}", a.complexity_weight),
            ]
        }),
    ));
    let _ = write!(
        h,
        "<p>{} slow instances (modified z-score above {}):</p>",
        r.slow.len(),
        r.cutoff
    );
    h.push_str(&table(
        &[
            "pattern",
            "#",
            "iteration",
            "duration",
            "median",
            "M",
            "cause",
            "culprit",
        ],
        r.slow.iter().take(ROWS).map(|s| {
            vec![
                escape(&s.pattern),
                s.occurrence.to_string(),
                escape(&format!("{:?}", s.iterations)),
                ms(s.duration_ns as f64),
                ms(s.median_ns as f64),
                format!("{:.1}", s.z),
                s.cause.map_or("-".into(), |c| c.name().to_string()),
                s.culprit.map_or("-".into(), |c| c.to_string()),
            ]
        }),
    ));
}

/// Waiting per metric as one escaped cell.
fn by_metric(m: &[analysis::waitstates::MetricTotal]) -> String {
    escape(&crate::analysis_text::by_metric(m))
}

fn waits(h: &mut String, r: &Report, site: &dyn Fn(u64) -> String) {
    h.push_str("<h2 id=\"waits\">Wait states</h2>");
    if let Some(t) = crate::analysis_text::clock_text(&r.clock) {
        let _ = write!(h, "<p>{}.</p>", escape(&t));
    }
    let ws = &r.wait_states;
    let names: Vec<&str> = ws.metrics.iter().map(|m| m.metric.name()).collect();
    let vals: Vec<f64> = ws.metrics.iter().map(|m| m.ns as f64 / 1e6).collect();
    h.push_str(&figure(
        svg::bar_chart(
            &names,
            &vals,
            &Labels {
                title: "Waiting time per metric",
                x: "metric",
                y: "ms",
            },
        ),
        "Scalasca's wait-state metrics summed over all ranks.",
    ));
    h.push_str(&table(
        &["call", "site", "waiting", "by metric"],
        ws.sites.iter().take(ROWS).map(|s| {
            vec![
                escape(&s.call),
                site(s.site),
                ms(s.ns as f64),
                by_metric(&s.metrics),
            ]
        }),
    ));
    let mut ranks: Vec<_> = ws.ranks.iter().filter(|x| x.ns > 0).collect();
    ranks.sort_by_key(|x| std::cmp::Reverse(x.ns));
    h.push_str(&table(
        &["rank", "waiting", "by metric"],
        ranks
            .into_iter()
            .take(ROWS)
            .map(|x| vec![x.rank.to_string(), ms(x.ns as f64), by_metric(&x.metrics)]),
    ));
    h.push_str("<p>The longest waits:</p>");
    h.push_str(&table(
        &["metric", "rank", "call", "site", "waited", "for rank", "in"],
        ws.longest.iter().take(ROWS).map(|w| {
            vec![
                w.metric.name().to_string(),
                w.rank.to_string(),
                escape(&w.call),
                site(w.site),
                ms(w.ns as f64),
                w.culprit.to_string(),
                escape(&w.culprit_call),
            ]
        }),
    ));
}

fn critical_path(h: &mut String, r: &Report, site: &dyn Fn(u64) -> String) {
    h.push_str("<h2 id=\"path\">Delays and the critical path</h2>");
    let d = &r.delays;
    h.push_str(
        "<p>Root causes of the waiting (Böhme et al.): short-term costs are waits a delay caused \
         directly, long-term costs are waits it caused through propagation.</p>",
    );
    h.push_str(&table(
        &["rank", "region", "short-term", "long-term"],
        d.costs.iter().take(ROWS).map(|c| {
            vec![
                c.rank.to_string(),
                region_text(&c.region, site),
                ms(c.short_term_ns as f64),
                ms(c.long_term_ns as f64),
            ]
        }),
    ));
    if d.path_ns > 0 {
        let _ = write!(
            h,
            "<p>Critical path: {} in {} stretches over ranks {}.</p>",
            ms(d.path_ns as f64),
            d.path.len(),
            escape(
                &d.path_ranks
                    .iter()
                    .map(|(r, ns)| format!("{r} ({})", ms(*ns as f64)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        let top: Vec<_> = d.path_profile.iter().take(10).collect();
        let names: Vec<String> = top
            .iter()
            .map(|p| {
                let s = region_text(&p.region, &|x| site_short(site(x)));
                s.replace("computation before", "comp. before")
            })
            .collect();
        let vals: Vec<f64> = top.iter().map(|p| p.ns as f64 / 1e6).collect();
        h.push_str(&figure(
            svg::bar_chart(
                &names,
                &vals,
                &Labels {
                    title: "Time on the critical path per region",
                    x: "region",
                    y: "ms",
                },
            ),
            "The activities that determine the run time: shortening them shortens the run.",
        ));
    }
}

/// A call-site label without its module, for narrow chart labels.
fn site_short(s: String) -> String {
    match s.rsplit_once('+') {
        Some((_, off)) => off.to_string(),
        None => s,
    }
}

/// The desynchronisation section: the MPI time per rank and iteration of
/// the dominant loop, its figures and the clusters of ranks, or why the
/// trace has none.
fn desync_section(h: &mut String, r: &Report, data: &RunData) {
    h.push_str("<h2 id=\"desync\">Desynchronisation</h2>");
    let Some(steps) = &data.steps else {
        let _ = write!(
            h,
            "<p>{}</p>",
            if r.timeline {
                "No loop ran four or more iterations: there are no time steps to compare."
            } else {
                "Needs the MPI time per rank and time step: a trace taken with \
                 RANKSCALE_TIMELINE=1, or, much smaller, with RANKSCALE_STEPS=1."
            }
        );
        return;
    };
    let d = match desync::analyze(&steps.t, &desync::Options::for_reports()) {
        Ok(d) => d,
        Err(e) => {
            let _ = write!(h, "<p class=\"note\">{}</p>", escape(&e.to_string()));
            return;
        }
    };
    let _ = write!(
        h,
        "<p>MPI time per rank and iteration of the dominant loop ({} ranks × {} iterations, {}), \
         as Afzal, Hager, Wellein and Markidis analyse it. Mean {} per rank and iteration.</p>",
        d.ranks,
        d.steps,
        escape(&steps_source(steps.bucket)),
        ms(d.mean)
    );
    desync_cell_figures(h, steps, &d);
    desync_rank_figures(h, &d);
    desync_clusters(h, steps, &d);
}

/// Where the step matrix's times come from, for the section's
/// introduction: the timeline, or the MPI time series in buckets of at
/// most `bucket` events.
fn steps_source(bucket: Option<u64>) -> String {
    match bucket {
        None => "from the timeline".to_string(),
        Some(1) => "from the MPI time series (RANKSCALE_STEPS=1), exact".to_string(),
        Some(w) => format!(
            "from the MPI time series (RANKSCALE_STEPS=1), in buckets of {w} events split in \
             proportion where they straddle two iterations"
        ),
    }
}

/// The figures of the (rank, iteration) cells themselves: the heat map,
/// their histogram and the ranks' correlation over the iterations.
fn desync_cell_figures(h: &mut String, steps: &StepMatrix, d: &desync::Desync) {
    h.push_str(&figure(
        svg::heatmap(
            &steps.t,
            d.mean,
            d.colour_range,
            &Labels {
                title: "MPI time per rank and iteration",
                x: "iteration",
                y: "rank",
            },
            "ns (white = mean)",
        ),
        "Red: more MPI time than the mean (waiting), blue: less. A delay travelling from rank to \
         rank (an idle wave) shows as a diagonal front.",
    ));
    h.push_str(&figure(
        svg::histogram(
            &d.histogram,
            &Labels {
                title: "MPI time per rank and iteration",
                x: "ns",
                y: "(rank, iteration) cells",
            },
        ),
        "Histogram of all cells.",
    ));
    h.push_str(&figure(
        svg::correlation(
            &d.correlation,
            &Labels {
                title: "Correlation of the ranks' MPI time",
                x: "rank",
                y: "rank",
            },
        ),
        "Pearson correlation over the iterations: ranks that wait together are red.",
    ));
}

/// The figures that tell ranks apart, coloured by cluster: the phase
/// space, the principal components' explained variance and the ranks on
/// the first two components.
fn desync_rank_figures(h: &mut String, d: &desync::Desync) {
    let labels = d.clustering.as_ref().map(|c| c.labels.as_slice());
    h.push_str(&figure(
        svg::phase_space(
            &d.phase_space,
            labels,
            &Labels {
                title: "Phase space: MPI time at iteration n and n+1",
                x: "ns at n",
                y: "ns at n+1",
            },
        ),
        "One colour per cluster; points far off the diagonal are one-off delays.",
    ));
    h.push_str(&figure(
        svg::explained_variance(
            &d.pca.explained_variance_ratio,
            &Labels {
                title: "Principal components: explained variance",
                x: "component",
                y: "share",
            },
        ),
        "PCA of the ranks (observations) over the iterations (variables).",
    ));
    let pts: Vec<(f64, f64)> = d
        .pca
        .scores
        .iter()
        .map(|s| {
            (
                s.first().copied().unwrap_or(0.0),
                s.get(1).copied().unwrap_or(0.0),
            )
        })
        .collect();
    h.push_str(&figure(
        svg::scatter(
            &pts,
            labels,
            &Labels {
                title: "Ranks on the first two principal components",
                x: "PC1",
                y: "PC2",
            },
        ),
        "k-means++ clusters of the ranks on the leading components.",
    ));
}

/// The clusters of ranks as a table (world ranks, from the step matrix's
/// rows), or why there are none.
fn desync_clusters(h: &mut String, steps: &StepMatrix, d: &desync::Desync) {
    match &d.clustering {
        Some(c) => {
            let mut groups: HashMap<usize, Vec<u32>> = HashMap::new();
            for (i, &l) in c.labels.iter().enumerate() {
                groups.entry(l).or_default().push(steps.ranks[i]);
            }
            let mut g: Vec<(usize, Vec<u32>)> = groups.into_iter().collect();
            g.sort();
            let _ = write!(
                h,
                "<p>{} clusters (mean silhouette {:.2}):</p>",
                c.k, c.silhouette
            );
            h.push_str(&table(
                &["cluster", "ranks"],
                g.into_iter()
                    .map(|(l, rs)| vec![l.to_string(), escape(&analysis::ranks_text(rs))]),
            ));
        }
        None => h.push_str("<p>The ranks do not differ enough to cluster.</p>"),
    }
}
