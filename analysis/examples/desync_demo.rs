//! Renders every desynchronization plot for a synthetic idle wave, to look
//! at them: `cargo run -p analysis --example desync_demo [DIR]` writes one
//! `.svg` per plot and an `index.html` that inlines them all into `DIR`
//! (default `/tmp/desync-demo`).
//!
//! The matrix is the idle wave of `desync`'s tests: 16 ranks × 60 steps at
//! 1000 ns ± 30; rank 0 is delayed at step 10, the wave reaches rank `r` at
//! step `10 + r` (2000 ns more waiting) through rank 7, and every rank it
//! passed stays desynchronized (1000 ns more per step) while ranks 8..16
//! stay in lock step.

use std::fs;
use std::path::PathBuf;

use analysis::desync::{Options, analyze};
use analysis::phases::djs_curve;
use analysis::svg::{self, Labels, Series, escape};

/// SplitMix64, for reproducible noise.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn idle_wave() -> Vec<Vec<f64>> {
    let mut rng = Rng(2024);
    (0..16)
        .map(|r| {
            (0..60)
                .map(|s| {
                    let mut t = 1000.0 + (rng.unit() * 2.0 - 1.0) * 30.0;
                    if r < 8 && s == 10 + r {
                        t += 2000.0;
                    }
                    if r < 8 && s > 10 + r {
                        t += 1000.0;
                    }
                    t
                })
                .collect()
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "/tmp/desync-demo".into()),
    );
    fs::create_dir_all(&dir)?;
    let t = idle_wave();
    let d = analyze(&t, &Options::default())?;
    let clusters = d.clustering.as_ref().map(|c| c.labels.as_slice());

    let mut plots: Vec<(&str, String)> = vec![
        (
            "heatmap",
            svg::heatmap(
                &t,
                d.mean,
                d.colour_range,
                &Labels {
                    title: "MPI time per rank and step (white = mean)",
                    x: "time step",
                    y: "rank",
                },
                "MPI time [ns]",
            ),
        ),
        (
            "histogram",
            svg::histogram(
                &d.histogram,
                &Labels {
                    title: "MPI time, all ranks and steps",
                    x: "MPI time [ns]",
                    y: "(rank, step) cells",
                },
            ),
        ),
        (
            "histogram-rank3",
            svg::histogram(
                &d.rank_histograms[3],
                &Labels {
                    title: "MPI time of rank 3",
                    x: "MPI time [ns]",
                    y: "steps",
                },
            ),
        ),
        (
            "correlation",
            svg::correlation(
                &d.correlation,
                &Labels {
                    title: "Correlation of the ranks' timelines",
                    x: "rank",
                    y: "rank",
                },
            ),
        ),
    ];
    let phase = Labels {
        title: "Phase space: MPI time at step n and n+1",
        x: "MPI time at step n [ns]",
        y: "MPI time at step n+1 [ns]",
    };
    plots.push((
        "phase-space-clusters",
        svg::phase_space(&d.phase_space, clusters, &phase),
    ));
    plots.push((
        "phase-space-time",
        svg::phase_space(&d.phase_space, None, &phase),
    ));
    plots.push((
        "pca-variance",
        svg::explained_variance(
            &d.pca.explained_variance_ratio,
            &Labels {
                title: "Variance explained by the principal components",
                x: "principal component",
                y: "explained variance [%]",
            },
        ),
    ));
    let scores: Vec<(f64, f64)> = d
        .pca
        .scores
        .iter()
        .map(|s| (s[0], s.get(1).copied().unwrap_or(0.0)))
        .collect();
    plots.push((
        "pca-scores",
        svg::scatter(
            &scores,
            clusters,
            &Labels {
                title: "Ranks on the first two principal components",
                x: "PC1 score [ns]",
                y: "PC2 score [ns]",
            },
        ),
    ));
    let step_mean: Vec<(f64, f64)> = d
        .step_mean
        .iter()
        .enumerate()
        .map(|(s, m)| (s as f64, *m))
        .collect();
    let mut series_data: Vec<(String, Vec<(f64, f64)>)> = vec![("all ranks".into(), step_mean)];
    if let Some(c) = &d.clustering {
        for g in 0..c.k {
            let members: Vec<usize> = (0..d.ranks).filter(|&r| c.labels[r] == g).collect();
            let pts = (0..d.steps)
                .map(|s| {
                    let m = members.iter().map(|&r| t[r][s]).sum::<f64>() / members.len() as f64;
                    (s as f64, m)
                })
                .collect();
            series_data.push((format!("cluster {g}"), pts));
        }
    }
    let series: Vec<Series> = series_data
        .iter()
        .map(|(n, p)| Series { name: n, points: p })
        .collect();
    plots.push((
        "step-mean",
        svg::line_chart(
            &series,
            &Labels {
                title: "Mean MPI time per step",
                x: "time step",
                y: "MPI time [ns]",
            },
        ),
    ));
    let loadings: Vec<Vec<(f64, f64)>> = d
        .pca
        .loadings
        .iter()
        .map(|l| l.iter().enumerate().map(|(s, v)| (s as f64, *v)).collect())
        .collect();
    let names = ["PC1", "PC2", "PC3"];
    let series: Vec<Series> = loadings
        .iter()
        .zip(names)
        .map(|(p, n)| Series { name: n, points: p })
        .collect();
    plots.push((
        "pca-loadings",
        svg::line_chart(
            &series,
            &Labels {
                title: "Principal components over the steps (loadings)",
                x: "time step",
                y: "loading",
            },
        ),
    ));
    // A D_JS curve (seed 000) on the steps' cluster of "slow" (above the
    // mean) ranks count, to show the line chart's reuse.
    let symbols: Vec<usize> = (0..d.steps)
        .map(|s| (0..d.ranks).filter(|&r| t[r][s] > d.mean).count())
        .collect();
    let djs: Vec<(f64, f64)> = djs_curve(&symbols)
        .iter()
        .enumerate()
        .map(|(i, v)| ((i + 1) as f64, *v))
        .collect();
    plots.push((
        "djs",
        svg::line_chart(
            &[Series {
                name: "",
                points: &djs,
            }],
            &Labels {
                title: "Jensen–Shannon divergence of the ranks-above-mean count",
                x: "split point",
                y: "D_JS [nats]",
            },
        ),
    ));
    if let Some(c) = &d.clustering {
        let cats: Vec<String> = c.tried.iter().map(|k| format!("k = {}", k.k)).collect();
        let vals: Vec<f64> = c.tried.iter().map(|k| k.silhouette).collect();
        plots.push((
            "silhouette-per-k",
            svg::bar_chart(
                &cats,
                &vals,
                &Labels {
                    title: "Mean silhouette per number of clusters",
                    x: "number of clusters",
                    y: "mean silhouette",
                },
            ),
        ));
        let cats: Vec<String> = (0..d.ranks).map(|r| format!("rank {r}")).collect();
        plots.push((
            "silhouette-per-rank",
            svg::bar_chart(
                &cats,
                &c.rank_silhouettes,
                &Labels {
                    title: "Silhouette of each rank (chosen k)",
                    x: "rank",
                    y: "silhouette",
                },
            ),
        ));
    }

    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>rankscale: desynchronization demo</title>\
         <style>body{font-family:sans-serif;margin:1em 2em;background:#f4f4f4}\
         figure{display:inline-block;margin:8px;padding:8px;background:#fff;\
         border:1px solid #ddd;vertical-align:top}</style></head><body>\
         <h1>Desynchronization analytics (seed 004): synthetic idle wave</h1>",
    );
    html.push_str(&format!(
        "<p>{} ranks × {} steps, mean {:.1} ns; clusters: {}.</p>",
        d.ranks,
        d.steps,
        d.mean,
        escape(&d.clustering.as_ref().map_or("none".into(), |c| format!(
            "k = {}, silhouette {:.3}",
            c.k, c.silhouette
        )))
    ));
    for (name, svg) in &plots {
        fs::write(dir.join(format!("{name}.svg")), svg)?;
        html.push_str(&format!("<figure id=\"{name}\">{svg}</figure>\n"));
    }
    html.push_str("</body></html>\n");
    fs::write(dir.join("index.html"), html)?;
    println!("{} plots in {}", plots.len(), dir.display());
    Ok(())
}
