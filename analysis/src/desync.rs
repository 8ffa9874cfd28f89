//! Desynchronization analytics on the MPI time per rank and time step
//! (Afzal et al., "Exploring Techniques for the Analysis of
//! Spontaneous Asynchronicity in MPI-Parallel Applications").
//!
//! The input is the matrix `t[rank][step]` of the time (ns) each rank spent
//! in MPI during each time step of a compute–communicate loop. Afzal et al.
//! argues that this matrix, far smaller than a trace, already shows whether
//! ranks run in lock step, desynchronize into computational wavefronts, or
//! carry travelling idle waves. [`analyze`] computes every view the paper
//! uses on it:
//!
//! * the overall and per-step means, and the deviation from the overall
//!   mean that the compact timeline colours on a diverging scale (mean
//!   white, red above, blue below: §3.2, Fig. 5);
//! * histograms of MPI time, overall and per rank (§3.1, Figs. 3–4);
//! * the rank × rank Pearson correlation of the timelines (§4.1, Fig. 6);
//! * the phase-space points `(t[r][n], t[r][n+1])` (§4.2, Figs. 7–8);
//! * a principal component analysis with the ranks as observations and the
//!   steps as variables (§5.1, Fig. 9);
//! * k-means++ clustering of the ranks on their first principal-component
//!   scores, with `k` chosen by the mean silhouette (§5.2, Fig. 9).
//!
//! Every number is computed in `f64` on finite input whose magnitude is at
//! most [`MAX_ABS_VALUE`], so that sums of squares over any realistic matrix
//! stay finite: the output never holds a NaN or an infinity. Everything is
//! deterministic: the clustering's random seeding uses a fixed-seed
//! SplitMix64 generator ([`Options::seed`]).

use nalgebra::DMatrix;
use serde::Serialize;
use trace::SplitMix64;

/// The largest magnitude accepted in the input matrix (ns, about 3·10⁸³
/// years). Beyond it sums of squares over a large matrix could overflow and
/// turn the statistics into infinities or NaNs.
pub const MAX_ABS_VALUE: f64 = 1e100;

/// Why a matrix could not be analysed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// There are no ranks (rows).
    #[error("the matrix has no ranks")]
    NoRanks,
    /// The ranks have no time steps (columns).
    #[error("the matrix has no time steps")]
    NoSteps,
    /// A rank's row differs in length from rank 0's: the steps would not
    /// line up, so no per-step statistic would mean anything.
    #[error("rank {rank} has {len} time steps, rank 0 has {expected}")]
    Ragged {
        /// The rank.
        rank: usize,
        /// Its number of steps.
        len: usize,
        /// Rank 0's number of steps.
        expected: usize,
    },
    /// A value is NaN or infinite.
    #[error("rank {rank}, step {step}: {value} is not a finite time")]
    NonFinite {
        /// The rank.
        rank: usize,
        /// The step.
        step: usize,
        /// The value.
        value: f64,
    },
    /// A value's magnitude exceeds [`MAX_ABS_VALUE`].
    #[error("rank {rank}, step {step}: {value:e} exceeds the largest accepted magnitude 1e100")]
    TooLarge {
        /// The rank.
        rank: usize,
        /// The step.
        step: usize,
        /// The value.
        value: f64,
    },
    /// An [`Options`] field is out of its range.
    #[error("option {name}: {reason}")]
    InvalidOption {
        /// The field.
        name: &'static str,
        /// What it must be.
        reason: &'static str,
    },
    /// The singular value decomposition of the PCA did not converge within
    /// its iteration bound (not seen on finite input; reported rather than
    /// looping forever).
    #[error("the singular value decomposition did not converge")]
    NoConvergence,
}

/// The most principal components [`Options::cluster_variance`] clusters on.
pub const MAX_CLUSTER_COMPONENTS: usize = 10;

/// Tuning of [`analyze`]. The defaults follow Afzal et al. where it states a
/// choice and are conservative elsewhere.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The most bins a histogram may have. Freedman–Diaconis asks for more
    /// bins as the sample grows (∝ n^⅓) and for very many when a few
    /// outliers (idle-wave spikes) stretch the range; the cap keeps plots
    /// readable. Afzal et al. use 35 bins (§3.1). Default 64; at least 1.
    pub max_bins: usize,
    /// How many principal-component scores and loadings are kept per rank
    /// (the explained-variance ratios are kept for all). Afzal et al. plot the
    /// first three (Fig. 9a, e). Default 3; at least 1.
    pub components: usize,
    /// How many leading principal-component scores the clustering uses.
    /// Afzal et al. cluster on the first two (§5). Default 2; at least 1.
    pub cluster_components: usize,
    /// Instead of [`Options::cluster_components`], cluster on as many
    /// leading components as explain this share of the variance (at most
    /// [`MAX_CLUSTER_COMPONENTS`]): Afzal et al.'s "essential number of PCs".
    /// An idle wave puts each front position on a component of its own, and
    /// two components would merge most of them with the undisturbed ranks.
    /// Default `None`; in `(0, 1]`.
    pub cluster_variance: Option<f64>,
    /// The largest `k` tried; `k` runs over `2..=min(max_k, ranks − 1)`
    /// (with `k = ranks` every rank would be its own cluster and the
    /// silhouette would say nothing). Default 6; at least 2.
    pub max_k: usize,
    /// k-means++ runs per `k`; the one with the least inertia is kept,
    /// since a single seeding can land in a poor local minimum. Default 10;
    /// at least 1.
    pub restarts: usize,
    /// Seed of the clustering's random number generator: the same input
    /// and seed give the same clusters.
    pub seed: u64,
    /// Which quantile of `|t − mean|` bounds the heatmap's symmetric colour
    /// range ([`Desync::colour_range`]). Below 1 a few extreme cells (one
    /// long delay) do not wash out the rest of the picture; cells beyond
    /// saturate. Not much below 1, so that the idle-wave spikes, which are
    /// one cell per rank, keep a colour of their own (Afzal et al. §3.2 reads
    /// idle waves as stripes of their own colour). Default 0.999; in
    /// `(0, 1]`.
    pub colour_quantile: f64,
}

impl Options {
    /// The settings of `rankscale report`: the defaults, but clustering on
    /// the components that explain 90 % of the variance.
    pub fn for_reports() -> Options {
        Options {
            cluster_variance: Some(0.9),
            ..Options::default()
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_bins: 64,
            components: 3,
            cluster_components: 2,
            cluster_variance: None,
            max_k: 6,
            restarts: 10,
            seed: 0x5eed_0004,
            colour_quantile: 0.999,
        }
    }
}

impl Options {
    fn check(&self) -> Result<(), Error> {
        let bad = |name, reason| Err(Error::InvalidOption { name, reason });
        if self.max_bins == 0 {
            return bad("max_bins", "must be at least 1");
        }
        if self.components == 0 {
            return bad("components", "must be at least 1");
        }
        if self
            .cluster_variance
            .is_some_and(|v| !(v > 0.0 && v <= 1.0))
        {
            return bad("cluster_variance", "must be in (0, 1]");
        }
        if self.cluster_components == 0 {
            return bad("cluster_components", "must be at least 1");
        }
        if self.max_k < 2 {
            return bad("max_k", "must be at least 2");
        }
        if self.restarts == 0 {
            return bad("restarts", "must be at least 1");
        }
        if !(self.colour_quantile > 0.0 && self.colour_quantile <= 1.0) {
            return bad("colour_quantile", "must be in (0, 1]");
        }
        Ok(())
    }
}

/// A histogram with equal-width bins over `[min, max]`: bin `i` covers
/// `[min + i·bin_width, min + (i+1)·bin_width)`, the last bin also holds
/// `max`. Storing the origin and width rather than the edges keeps it
/// small and makes the edges exact multiples.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram {
    /// The smallest sample (the left edge of bin 0).
    pub min: f64,
    /// The largest sample (the right edge of the last bin).
    pub max: f64,
    /// The width of every bin; 0 when all samples are equal (one bin).
    pub bin_width: f64,
    /// Samples per bin.
    pub counts: Vec<u64>,
}

impl Histogram {
    /// Bins `values` into as many bins as the Freedman–Diaconis rule or
    /// Sturges' rule asks for, whichever is more (NumPy's `"auto"`), at
    /// most `max_bins` (taken as 1 if 0). Freedman–Diaconis sets the width
    /// from the interquartile range, `2·IQR·n^(−1/3)`, so outliers such as
    /// idle-wave spikes do not widen the bins as they would with a rule on
    /// the standard deviation; it asks for few bins on small or bimodal
    /// samples (synchronized and desynchronized ranks make the IQR wide),
    /// where Sturges' `⌈log₂ n⌉ + 1` bins take over, and for none when more
    /// than half the samples are equal (IQR 0).
    ///
    /// Non-finite values are skipped (they have no bin); no values give a
    /// histogram with no bins and `min = max = 0`.
    pub fn of(values: &[f64], max_bins: usize) -> Histogram {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Histogram {
                min: 0.0,
                max: 0.0,
                bin_width: 0.0,
                counts: Vec::new(),
            };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let (min, max) = (v[0], v[n - 1]);
        let range = max - min;
        if range <= 0.0 || !range.is_finite() {
            return Histogram {
                min,
                max,
                bin_width: 0.0,
                counts: vec![n as u64],
            };
        }
        let iqr = quantile_sorted(&v, 0.75) - quantile_sorted(&v, 0.25);
        let fd = 2.0 * iqr / (n as f64).cbrt();
        let sturges = (n as f64).log2().ceil() + 1.0;
        let wanted = if fd > 0.0 {
            (range / fd).ceil().max(sturges)
        } else {
            sturges
        };
        let bins = (wanted.min(max_bins.max(1) as f64) as usize).max(1);
        let bin_width = range / bins as f64;
        let mut counts = vec![0u64; bins];
        for x in &v {
            counts[bin_index(*x, min, bin_width, bins)] += 1;
        }
        Histogram {
            min,
            max,
            bin_width,
            counts,
        }
    }

    /// The bin edges, `counts.len() + 1` of them (`[min, max]` for a single
    /// bin, none for an empty histogram).
    pub fn edges(&self) -> Vec<f64> {
        if self.counts.is_empty() {
            return Vec::new();
        }
        let n = self.counts.len();
        (0..=n)
            .map(|i| {
                if i == n {
                    self.max
                } else {
                    self.min + i as f64 * self.bin_width
                }
            })
            .collect()
    }

    /// The number of samples binned.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

fn bin_index(x: f64, min: f64, width: f64, bins: usize) -> usize {
    let i = ((x - min) / width).floor();
    if i <= 0.0 {
        0
    } else {
        (i as usize).min(bins - 1)
    }
}

/// The `q`-quantile of sorted values by linear interpolation between order
/// statistics (Hyndman and Fan's type 7, the default of R and NumPy).
fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let h = (v.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// The principal component analysis of the ranks (Afzal et al. §5.1).
///
/// As in the paper, each rank is an observation and each time step a
/// variable: a rank is a point whose coordinates are its MPI times, step by
/// step. The paper first subtracts the overall mean; PCA then centres every
/// step (column) on its mean across ranks, which makes that first
/// subtraction immaterial: the columns are centred here directly. The
/// centred matrix `X = U Σ Vᵀ` is decomposed by nalgebra's SVD; the scores
/// are `U Σ` and the loadings (the paper's eigenvectors, Fig. 9c, d) the
/// columns of `V`.
///
/// Each component's sign is fixed so that its loading of largest magnitude
/// is positive (an SVD determines it only up to sign); with that, repeated
/// runs and plots agree.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pca {
    /// The share of the total variance explained by each component, in
    /// decreasing order, `min(ranks, steps)` of them; all 0 when the ranks
    /// do not vary.
    pub explained_variance_ratio: Vec<f64>,
    /// The variance along each component, `σ²/(ranks − 1)` (ns²; all 0 for
    /// a single rank).
    pub explained_variance: Vec<f64>,
    /// Per rank, its scores on the first [`Options::components`] components
    /// (fewer if there are fewer components), ns.
    pub scores: Vec<Vec<f64>>,
    /// Per kept component, its loading on every step (unit length): which
    /// timeline shape the component stands for.
    pub loadings: Vec<Vec<f64>>,
}

/// The score of one `k` tried by the clustering.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KScore {
    /// The number of clusters.
    pub k: usize,
    /// The mean silhouette over all ranks, in `[−1, 1]`.
    pub silhouette: f64,
    /// The sum of squared distances of the ranks to their centroids (ns²).
    pub inertia: f64,
}

/// The k-means++ clustering of the ranks on their leading principal
/// component scores (Afzal et al. §5.2).
///
/// Distances are Euclidean, as in the paper's Fig. 9b. `k` is the one of
/// best mean silhouette (Rousseeuw's `s = (b − a)/max(a, b)`, 0 for a rank
/// alone in its cluster), the smaller `k` on a tie, since Afzal et al. picks
/// `k` by hand and a rule is needed for unknown codes. Cluster numbers are
/// in order of their lowest rank: rank 0 is always in cluster 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Clustering {
    /// The chosen number of clusters.
    pub k: usize,
    /// How many leading components the ranks were clustered on.
    pub dims: usize,
    /// Per rank, its cluster in `0..k`.
    pub labels: Vec<usize>,
    /// The mean silhouette of the chosen clustering.
    pub silhouette: f64,
    /// Per rank, its silhouette in the chosen clustering (Fig. 9g, i).
    pub rank_silhouettes: Vec<f64>,
    /// Per cluster, its centroid in score space (ns).
    pub centroids: Vec<Vec<f64>>,
    /// Every `k` tried, in increasing order (a `k` is skipped when fewer
    /// than `k` ranks have distinct scores).
    pub tried: Vec<KScore>,
}

/// Every view of Afzal et al. on one `t[rank][step]` matrix; see the module
/// documentation. Serializable so that reports can carry it as JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Desync {
    /// Number of ranks (rows).
    pub ranks: usize,
    /// Number of time steps (columns).
    pub steps: usize,
    /// The mean over all ranks and steps (ns): the white of the heatmap.
    pub mean: f64,
    /// Per step, the mean over ranks (ns): the loop's pace step by step.
    pub step_mean: Vec<f64>,
    /// Per rank, the mean over steps (ns): who waits most overall.
    pub rank_mean: Vec<f64>,
    /// `t[r][n] − mean` per rank and step (ns): the compact timeline of
    /// §3.2, to be coloured on a diverging scale centred on 0.
    pub deviation: Vec<Vec<f64>>,
    /// The largest `|t[r][n] − mean|` (ns).
    pub max_abs_deviation: f64,
    /// The symmetric colour range for [`Desync::deviation`]: the
    /// [`Options::colour_quantile`] quantile of `|t − mean|`, or the largest
    /// deviation if that quantile is 0 (ns; 0 only for a constant matrix).
    pub colour_range: f64,
    /// The histogram of all MPI times.
    pub histogram: Histogram,
    /// Per rank, the histogram of its MPI times, with its own bins (a
    /// synchronized rank's narrow peak would vanish in shared bins).
    pub rank_histograms: Vec<Histogram>,
    /// The Pearson correlation of the ranks' timelines over the steps,
    /// `ranks × ranks`, symmetric, 1 on the diagonal. A rank whose MPI time
    /// is the same at every step has no defined correlation; it is given 0
    /// with every other rank (it shares no fluctuation) and 1 with itself.
    pub correlation: Vec<Vec<f64>>,
    /// Per rank, the phase-space points `(t[r][n], t[r][n+1])` for
    /// `n = 0 .. steps − 1` (ns): a rank at a fixed waiting time stays on
    /// the diagonal, a desynchronizing one climbs along it, an idle wave
    /// passing by leaves one point far off it on each axis (§4.2).
    pub phase_space: Vec<Vec<(f64, f64)>>,
    /// The principal component analysis.
    pub pca: Pca,
    /// The clustering of the ranks; `None` with fewer than 3 ranks (no `k`
    /// in `2..ranks` to choose) or when the ranks do not differ.
    pub clustering: Option<Clustering>,
}

/// The validated matrix, row-major.
struct Matrix {
    ranks: usize,
    steps: usize,
    v: Vec<f64>,
}

impl Matrix {
    fn new<R: AsRef<[f64]>>(t: &[R]) -> Result<Matrix, Error> {
        let ranks = t.len();
        if ranks == 0 {
            return Err(Error::NoRanks);
        }
        let steps = t[0].as_ref().len();
        if steps == 0 {
            return Err(Error::NoSteps);
        }
        let mut v = Vec::with_capacity(ranks * steps);
        for (rank, row) in t.iter().enumerate() {
            let row = row.as_ref();
            if row.len() != steps {
                return Err(Error::Ragged {
                    rank,
                    len: row.len(),
                    expected: steps,
                });
            }
            for (step, &value) in row.iter().enumerate() {
                if !value.is_finite() {
                    return Err(Error::NonFinite { rank, step, value });
                }
                if value.abs() > MAX_ABS_VALUE {
                    return Err(Error::TooLarge { rank, step, value });
                }
            }
            v.extend_from_slice(row);
        }
        Ok(Matrix { ranks, steps, v })
    }

    fn row(&self, r: usize) -> &[f64] {
        &self.v[r * self.steps..(r + 1) * self.steps]
    }
}

/// Analyses `t[rank][step]` (ns of MPI time); see the module documentation
/// for what is computed and why.
///
/// Errors: no ranks, no steps, rows of different lengths, a non-finite or
/// overly large value, an option out of range. Rows may be any slice-like
/// type (`Vec<f64>`, `[f64; N]`, `&[f64]`).
///
/// Cost: `O(ranks² · steps)` for the correlation and
/// `O(ranks · steps · min(ranks, steps))` for the SVD, the dominant terms.
pub fn analyze<R: AsRef<[f64]>>(t: &[R], options: &Options) -> Result<Desync, Error> {
    options.check()?;
    let m = Matrix::new(t)?;
    let (ranks, steps) = (m.ranks, m.steps);
    let mean = mean_of(m.v.iter().copied());
    let step_mean: Vec<f64> = (0..steps)
        .map(|s| mean_of((0..ranks).map(|r| m.v[r * steps + s])))
        .collect();
    let rank_mean: Vec<f64> = (0..ranks)
        .map(|r| mean_of(m.row(r).iter().copied()))
        .collect();
    let deviation: Vec<Vec<f64>> = (0..ranks)
        .map(|r| m.row(r).iter().map(|x| x - mean).collect())
        .collect();
    let mut abs_dev: Vec<f64> = deviation.iter().flatten().map(|d| d.abs()).collect();
    abs_dev.sort_by(f64::total_cmp);
    let max_abs_deviation = abs_dev.last().copied().unwrap_or(0.0);
    let q = quantile_sorted(&abs_dev, options.colour_quantile);
    let colour_range = if q > 0.0 { q } else { max_abs_deviation };
    let histogram = Histogram::of(&m.v, options.max_bins);
    let rank_histograms = (0..ranks)
        .map(|r| Histogram::of(m.row(r), options.max_bins))
        .collect();
    let phase_space = (0..ranks)
        .map(|r| m.row(r).windows(2).map(|w| (w[0], w[1])).collect())
        .collect();
    let correlation = correlation(&m);
    let keep = if options.cluster_variance.is_some() {
        options.components.max(MAX_CLUSTER_COMPONENTS)
    } else {
        options.components
    };
    let mut pca = pca(&m, keep)?;
    let dims = match options.cluster_variance {
        Some(share) => {
            let mut sum = 0.0;
            pca.explained_variance_ratio
                .iter()
                .position(|r| {
                    sum += r;
                    sum >= share - 1e-12
                })
                .map_or(MAX_CLUSTER_COMPONENTS, |i| i + 1)
                .min(MAX_CLUSTER_COMPONENTS)
        }
        None => options.cluster_components,
    };
    let clustering = cluster(&pca, ranks, dims, options);
    let shown = options.components.max(dims);
    for s in &mut pca.scores {
        s.truncate(shown);
    }
    pca.loadings.truncate(shown);
    Ok(Desync {
        ranks,
        steps,
        mean,
        step_mean,
        rank_mean,
        deviation,
        max_abs_deviation,
        colour_range,
        histogram,
        rank_histograms,
        correlation,
        phase_space,
        pca,
        clustering,
    })
}

/// The mean of `xs` (0 for none), shifted by the first value: `x₀ +
/// Σ(x − x₀)/n`. The shift makes the mean of equal values exactly that
/// value (a plain `Σx/n` of ten 0.1s is not 0.1), so a constant matrix has
/// deviations of exactly 0, and it loses less to rounding when the values
/// are large and close together, as MPI times in ns are.
fn mean_of(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let mut it = xs.clone();
    let Some(x0) = it.next() else { return 0.0 };
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + (x - x0), n + 1));
    x0 + sum / n as f64
}

/// The rank × rank Pearson correlation (see [`Desync::correlation`]): each
/// row is centred and scaled to unit length, and the Gram matrix of those
/// rows is the correlation matrix. A row is constant only if all its values
/// are equal; it is then set to exactly 0, since a computed mean can differ
/// from the values by rounding and the leftovers would correlate at random.
fn correlation(m: &Matrix) -> Vec<Vec<f64>> {
    let (ranks, steps) = (m.ranks, m.steps);
    let mut z = DMatrix::<f64>::zeros(ranks, steps);
    for r in 0..ranks {
        let row = m.row(r);
        let first = row[0];
        if row.iter().all(|&x| x == first) {
            continue;
        }
        let mu = mean_of(row.iter().copied());
        let norm = row.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>().sqrt();
        if norm > 0.0 {
            for (s, x) in row.iter().enumerate() {
                z[(r, s)] = (x - mu) / norm;
            }
        }
    }
    let c = &z * z.transpose();
    (0..ranks)
        .map(|i| {
            (0..ranks)
                .map(|j| {
                    if i == j {
                        1.0
                    } else {
                        c[(i, j)].clamp(-1.0, 1.0)
                    }
                })
                .collect()
        })
        .collect()
}

/// The PCA of [`Pca`], keeping `keep` components' scores and loadings.
fn pca(m: &Matrix, keep: usize) -> Result<Pca, Error> {
    let (ranks, steps) = (m.ranks, m.steps);
    let mut x = DMatrix::<f64>::zeros(ranks, steps);
    for s in 0..steps {
        let first = m.v[s];
        if (0..ranks).all(|r| m.v[r * steps + s] == first) {
            continue; // exactly 0, not the rounding of a computed mean
        }
        let mu = mean_of((0..ranks).map(|r| m.v[r * steps + s]));
        for r in 0..ranks {
            x[(r, s)] = m.v[r * steps + s] - mu;
        }
    }
    let ncomp = ranks.min(steps);
    let keep = keep.min(ncomp);
    let total: f64 = x.iter().map(|v| v * v).sum();
    if total <= 0.0 {
        return Ok(Pca {
            explained_variance_ratio: vec![0.0; ncomp],
            explained_variance: vec![0.0; ncomp],
            scores: vec![vec![0.0; keep]; ranks],
            loadings: (0..keep)
                .map(|c| (0..steps).map(|s| if s == c { 1.0 } else { 0.0 }).collect())
                .collect(),
        });
    }
    let max_iter = 1000 + 100 * ncomp;
    let svd = nalgebra::linalg::SVD::try_new(x, true, true, 4.0 * f64::EPSILON, max_iter)
        .ok_or(Error::NoConvergence)?;
    let (Some(u), Some(vt)) = (svd.u.as_ref(), svd.v_t.as_ref()) else {
        return Err(Error::NoConvergence);
    };
    let sigma = &svd.singular_values;
    let sq: Vec<f64> = sigma.iter().map(|s| s * s).collect();
    let sq_sum: f64 = sq.iter().sum();
    let dof = ranks.saturating_sub(1);
    let explained_variance_ratio = sq
        .iter()
        .map(|v| if sq_sum > 0.0 { v / sq_sum } else { 0.0 })
        .collect();
    let explained_variance = sq
        .iter()
        .map(|v| if dof > 0 { v / dof as f64 } else { 0.0 })
        .collect();
    let mut scores = vec![vec![0.0; keep]; ranks];
    let mut loadings = Vec::with_capacity(keep);
    for c in 0..keep {
        let mut load: Vec<f64> = (0..steps).map(|s| vt[(c, s)]).collect();
        // The sign: the loading of largest magnitude (first on a tie) is
        // positive.
        let big = load
            .iter()
            .enumerate()
            .fold(
                (0, 0.0f64),
                |b, (i, v)| if v.abs() > b.1 { (i, v.abs()) } else { b },
            )
            .0;
        let sign = if load[big] < 0.0 { -1.0 } else { 1.0 };
        for v in &mut load {
            *v *= sign;
        }
        for (r, row) in scores.iter_mut().enumerate() {
            row[c] = sign * u[(r, c)] * sigma[c];
        }
        loadings.push(load);
    }
    Ok(Pca {
        explained_variance_ratio,
        explained_variance,
        scores,
        loadings,
    })
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// One k-means result: labels (in `0..k`), centroids, inertia.
struct KMeans {
    labels: Vec<usize>,
    centroids: Vec<Vec<f64>>,
    inertia: f64,
}

/// k-means++ seeding (Arthur and Vassilvitskii; Afzal et al. ref. 12): the
/// first centre uniformly, each next one with probability proportional to
/// the squared distance to the nearest centre so far. `None` when fewer
/// than `k` points are distinct (every remaining distance is 0).
fn seed_centres(points: &[Vec<f64>], k: usize, rng: &mut SplitMix64) -> Option<Vec<Vec<f64>>> {
    let n = points.len();
    let mut centres = vec![points[rng.below(n)].clone()];
    let mut d2: Vec<f64> = points.iter().map(|p| dist2(p, &centres[0])).collect();
    while centres.len() < k {
        let total: f64 = d2.iter().sum();
        if total <= 0.0 {
            return None;
        }
        let target = rng.unit() * total;
        let mut acc = 0.0;
        let mut pick = None;
        for (i, d) in d2.iter().enumerate() {
            if *d > 0.0 {
                pick = Some(i);
                acc += d;
                if acc > target {
                    break;
                }
            }
        }
        let c = points[pick?].clone();
        for (d, p) in d2.iter_mut().zip(points) {
            *d = d.min(dist2(p, &c));
        }
        centres.push(c);
    }
    Some(centres)
}

/// Lloyd's iterations from `centres`. An emptied cluster takes the point
/// farthest from its centroid among clusters with more than one point, so
/// the result always has `k` non-empty clusters.
fn lloyd(points: &[Vec<f64>], mut centres: Vec<Vec<f64>>) -> KMeans {
    const MAX_ITER: usize = 300;
    let (n, k, dims) = (points.len(), centres.len(), points[0].len());
    let mut labels = vec![usize::MAX; n];
    for _ in 0..MAX_ITER {
        let mut changed = false;
        for (p, l) in points.iter().zip(labels.iter_mut()) {
            let best = nearest(p, &centres);
            if *l != best {
                *l = best;
                changed = true;
            }
        }
        let mut counts = vec![0usize; k];
        for &l in &labels {
            counts[l] += 1;
        }
        while let Some(empty) = counts.iter().position(|&c| c == 0) {
            let far = (0..n)
                .filter(|&i| counts[labels[i]] > 1)
                .map(|i| (i, dist2(&points[i], &centres[labels[i]])))
                .fold(None, |b: Option<(usize, f64)>, (i, d)| match b {
                    Some((_, bd)) if bd >= d => b,
                    _ => Some((i, d)),
                });
            let Some((i, _)) = far else { break };
            counts[labels[i]] -= 1;
            labels[i] = empty;
            counts[empty] = 1;
            changed = true;
        }
        let mut sums = vec![vec![0.0; dims]; k];
        for (p, &l) in points.iter().zip(&labels) {
            for (s, x) in sums[l].iter_mut().zip(p) {
                *s += x;
            }
        }
        for ((c, s), &cnt) in centres.iter_mut().zip(sums).zip(&counts) {
            if cnt > 0 {
                *c = s.into_iter().map(|v| v / cnt as f64).collect();
            }
        }
        if !changed {
            break;
        }
    }
    let inertia = points
        .iter()
        .zip(&labels)
        .map(|(p, &l)| dist2(p, &centres[l]))
        .sum();
    KMeans {
        labels,
        centroids: centres,
        inertia,
    }
}

/// The index of the nearest centre, the first on a tie.
fn nearest(p: &[f64], centres: &[Vec<f64>]) -> usize {
    let mut best = (0, f64::INFINITY);
    for (j, c) in centres.iter().enumerate() {
        let d = dist2(p, c);
        if d < best.1 {
            best = (j, d);
        }
    }
    best.0
}

/// Per point, its silhouette (Rousseeuw 1987; Afzal et al. ref. 8) from the
/// pairwise distances `dist` (row-major `n × n`): `a` is the mean distance
/// to the rest of its cluster, `b` the least mean distance to another
/// cluster, `s = (b − a)/max(a, b)`; 0 for a point alone in its cluster.
fn silhouettes(dist: &[f64], labels: &[usize], k: usize) -> Vec<f64> {
    let n = labels.len();
    let mut counts = vec![0usize; k];
    for &l in labels {
        counts[l] += 1;
    }
    (0..n)
        .map(|i| {
            let own = labels[i];
            if counts[own] <= 1 {
                return 0.0;
            }
            let mut sums = vec![0.0; k];
            for j in 0..n {
                if j != i {
                    sums[labels[j]] += dist[i * n + j];
                }
            }
            let a = sums[own] / (counts[own] - 1) as f64;
            let b = (0..k)
                .filter(|&c| c != own && counts[c] > 0)
                .map(|c| sums[c] / counts[c] as f64)
                .fold(f64::INFINITY, f64::min);
            let m = a.max(b);
            if b.is_finite() && m > 0.0 {
                (b - a) / m
            } else {
                0.0
            }
        })
        .collect()
}

/// Renumbers clusters by their lowest member, so that equal partitions
/// read alike whatever the seeding.
fn canonical(labels: &[usize], centroids: Vec<Vec<f64>>) -> (Vec<usize>, Vec<Vec<f64>>) {
    let k = centroids.len();
    let mut map = vec![usize::MAX; k];
    let mut next = 0;
    for &l in labels {
        if map[l] == usize::MAX {
            map[l] = next;
            next += 1;
        }
    }
    let mut out = vec![Vec::new(); next];
    for (old, c) in centroids.into_iter().enumerate() {
        if map[old] != usize::MAX {
            out[map[old]] = c;
        }
    }
    (labels.iter().map(|&l| map[l]).collect(), out)
}

/// The clustering of [`Clustering`]; `None` with fewer than 3 ranks, no
/// variance, or no `k` for which `k` ranks have distinct scores.
fn cluster(pca: &Pca, ranks: usize, dims: usize, o: &Options) -> Option<Clustering> {
    if ranks < 3 || pca.explained_variance_ratio.iter().all(|&v| v <= 0.0) {
        return None;
    }
    let dims = dims.min(pca.scores.first().map_or(0, Vec::len));
    if dims == 0 {
        return None;
    }
    let points: Vec<Vec<f64>> = pca.scores.iter().map(|s| s[..dims].to_vec()).collect();
    let dist: Vec<f64> = points
        .iter()
        .flat_map(|p| points.iter().map(move |q| dist2(p, q).sqrt()))
        .collect();
    let mut best: Option<(KMeans, f64, Vec<f64>)> = None;
    let mut tried = Vec::new();
    for k in 2..=o.max_k.min(ranks - 1) {
        let mut rng = SplitMix64::new(o.seed ^ (k as u64).wrapping_mul(0xd1b5_4a32_d192_ed03));
        let mut run: Option<KMeans> = None;
        for _ in 0..o.restarts {
            let Some(centres) = seed_centres(&points, k, &mut rng) else {
                continue;
            };
            let km = lloyd(&points, centres);
            if run.as_ref().is_none_or(|r| km.inertia < r.inertia) {
                run = Some(km);
            }
        }
        let Some(km) = run else { continue };
        let s = silhouettes(&dist, &km.labels, k);
        let mean = s.iter().sum::<f64>() / ranks as f64;
        tried.push(KScore {
            k,
            silhouette: mean,
            inertia: km.inertia,
        });
        if best.as_ref().is_none_or(|b| mean > b.1 + 1e-12) {
            best = Some((km, mean, s));
        }
    }
    let (km, silhouette, rank_silhouettes) = best?;
    let (labels, centroids) = canonical(&km.labels, km.centroids);
    Some(Clustering {
        k: centroids.len(),
        dims,
        labels,
        silhouette,
        rank_silhouettes,
        centroids,
        tried,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Deterministic noise in `[−amp, amp)`.
    fn noise(rng: &mut SplitMix64, amp: f64) -> f64 {
        (rng.unit() * 2.0 - 1.0) * amp
    }

    #[test]
    fn bad_input_is_refused_with_its_place() {
        let o = Options::default();
        let empty: [Vec<f64>; 0] = [];
        assert_eq!(analyze(&empty, &o).unwrap_err(), Error::NoRanks);
        assert_eq!(
            analyze(&[Vec::<f64>::new()], &o).unwrap_err(),
            Error::NoSteps
        );
        assert_eq!(
            analyze(&[vec![1.0, 2.0], vec![1.0]], &o).unwrap_err(),
            Error::Ragged {
                rank: 1,
                len: 1,
                expected: 2
            }
        );
        let e = analyze(&[vec![1.0, 2.0], vec![1.0, f64::NAN]], &o).unwrap_err();
        assert!(
            matches!(
                e,
                Error::NonFinite {
                    rank: 1,
                    step: 1,
                    ..
                }
            ),
            "{e}"
        );
        let e = analyze(&[[f64::INFINITY]], &o).unwrap_err();
        assert!(matches!(
            e,
            Error::NonFinite {
                rank: 0,
                step: 0,
                ..
            }
        ));
        let e = analyze(&[[1e101]], &o).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let bad = Options {
            max_k: 1,
            ..Options::default()
        };
        assert!(matches!(
            analyze(&[[1.0]], &bad).unwrap_err(),
            Error::InvalidOption { name: "max_k", .. }
        ));
        let bad = Options {
            colour_quantile: f64::NAN,
            ..Options::default()
        };
        assert!(analyze(&[[1.0]], &bad).is_err());
    }

    #[test]
    fn means_and_deviation_are_hand_computed() {
        // mean = (1+2+3+4+5+9)/6 = 4
        let t = [[1.0, 2.0, 3.0], [4.0, 5.0, 9.0]];
        let d = analyze(&t, &Options::default()).unwrap();
        assert_eq!((d.ranks, d.steps), (2, 3));
        assert_eq!(d.mean, 4.0);
        assert_eq!(d.step_mean, [2.5, 3.5, 6.0]);
        assert_eq!(d.rank_mean, [2.0, 6.0]);
        assert_eq!(d.deviation, [[-3.0, -2.0, -1.0], [0.0, 1.0, 5.0]]);
        assert_eq!(d.max_abs_deviation, 5.0);
        assert_eq!(d.phase_space[1], [(4.0, 5.0), (5.0, 9.0)]);
        // Two ranks: no k in 2..2.
        assert!(d.clustering.is_none());
    }

    /// Pearson by hand: x = (1, 2, 3) against y = (2, 4, 7): centred
    /// (−1, 0, 1) and (−7/3, −1/3, 8/3); cross sum 5, norms √2 and
    /// √(114/9) = √(38/3), r = 5/√(76/3) = 0.993399. Against z = (3, 2, 1):
    /// exactly −1. y against z: −0.993399.
    #[test]
    fn correlation_matches_hand_computed_pearson() {
        let t = [[1.0, 2.0, 3.0], [2.0, 4.0, 7.0], [3.0, 2.0, 1.0]];
        let d = analyze(&t, &Options::default()).unwrap();
        let r = 5.0 / (76.0f64 / 3.0).sqrt();
        assert!(close(r, 0.993399, 1e-6));
        let c = &d.correlation;
        for (i, row) in c.iter().enumerate() {
            assert_eq!(row[i], 1.0);
            for (j, v) in row.iter().enumerate() {
                assert_eq!(*v, c[j][i]);
            }
        }
        assert!(close(c[0][1], r, 1e-12), "{c:?}");
        assert!(close(c[0][2], -1.0, 1e-12), "{c:?}");
        assert!(close(c[1][2], -r, 1e-12), "{c:?}");
    }

    #[test]
    fn a_constant_rank_correlates_zero_with_others_and_one_with_itself() {
        let t = [
            [0.1, 0.1, 0.1, 0.1],
            [1.0, 3.0, 2.0, 5.0],
            [0.1, 0.1, 0.1, 0.1],
        ];
        let d = analyze(&t, &Options::default()).unwrap();
        assert_eq!(d.correlation[0], [1.0, 0.0, 0.0]);
        assert_eq!(d.correlation[2], [0.0, 0.0, 1.0]);
        assert_eq!(d.correlation[1][1], 1.0);
        // One step: every rank is constant.
        let d = analyze(&[[1.0], [2.0], [3.0]], &Options::default()).unwrap();
        assert_eq!(
            d.correlation,
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        );
        assert!(d.phase_space.iter().all(Vec::is_empty));
    }

    /// Rows `a_r · v` (plus the same offset for every rank) span one
    /// direction after centring: the first component explains everything,
    /// its loading is `±v/|v|`, and the scores are `(a_r − ā)·|v|`.
    #[test]
    fn a_rank_one_matrix_is_explained_by_its_first_component() {
        let v = [1.0, -2.0, 0.5, 3.0, 0.0];
        let a = [1.0, 2.0, 4.0, -1.0];
        let t: Vec<Vec<f64>> = a
            .iter()
            .map(|ar| v.iter().map(|vs| 100.0 + ar * vs).collect())
            .collect();
        let d = analyze(&t, &Options::default()).unwrap();
        let p = &d.pca;
        assert_eq!(p.explained_variance_ratio.len(), 4);
        assert!(close(p.explained_variance_ratio[0], 1.0, 1e-12), "{p:?}");
        assert!(p.explained_variance_ratio[1..].iter().all(|&x| x < 1e-12));
        let vn = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        // The largest |v| is 3.0 (positive): the loading is +v/|v|.
        for (l, vs) in p.loadings[0].iter().zip(v) {
            assert!(close(*l, vs / vn, 1e-12), "{:?}", p.loadings[0]);
        }
        let abar = a.iter().sum::<f64>() / 4.0;
        for (r, ar) in a.iter().enumerate() {
            assert!(
                close(p.scores[r][0], (ar - abar) * vn, 1e-9),
                "{:?}",
                p.scores
            );
        }
        // Sample variance of the scores: Σ((a−ā)²)|v|²/(n−1).
        let var = a.iter().map(|x| (x - abar).powi(2)).sum::<f64>() * vn * vn / 3.0;
        assert!(close(p.explained_variance[0], var, 1e-9 * var));
    }

    #[test]
    fn a_constant_matrix_has_no_variance_and_no_clustering() {
        let t = vec![vec![0.1; 7]; 5];
        let d = analyze(&t, &Options::default()).unwrap();
        assert!(d.pca.explained_variance_ratio.iter().all(|&v| v == 0.0));
        assert!(d.pca.scores.iter().flatten().all(|&v| v == 0.0));
        assert!(d.clustering.is_none());
        assert_eq!(d.colour_range, 0.0);
        assert_eq!(d.histogram.counts, [35]);
        // Every rank the same timeline, steps varying: still no variance
        // between ranks.
        let row: Vec<f64> = (0..9).map(|s| s as f64 * 0.3).collect();
        let d = analyze(&vec![row; 4], &Options::default()).unwrap();
        assert!(d.clustering.is_none());
    }

    #[test]
    fn histogram_counts_sum_to_the_samples() {
        let mut rng = SplitMix64::new(7);
        let v: Vec<f64> = (0..1000).map(|_| rng.unit().powi(3) * 1e6).collect();
        let h = Histogram::of(&v, 64);
        assert_eq!(h.total(), 1000);
        assert!(h.counts.len() <= 64 && h.counts.len() > 1);
        assert_eq!(h.edges().len(), h.counts.len() + 1);
        assert_eq!(*h.edges().last().unwrap(), h.max);
        // Hand-computed, Sturges: 0..=9, n = 10, IQR = 6.75 − 2.25 = 4.5
        // (type 7), Freedman–Diaconis width 2·4.5/10^⅓ = 4.18 asks for
        // ⌈9/4.18⌉ = 3 bins, Sturges for ⌈log₂ 10⌉ + 1 = 5: 5 bins of 1.8,
        // [0,1.8) [1.8,3.6) [3.6,5.4) [5.4,7.2) [7.2,9], two values each.
        let h = Histogram::of(&(0..10).map(f64::from).collect::<Vec<_>>(), 64);
        assert_eq!((h.bin_width, h.counts.clone()), (1.8, vec![2; 5]));
        // Freedman–Diaconis: 0..10000, IQR 4999.5, width 9999/10000^⅓ =
        // 464.2, ⌈21.54⌉ = 22 bins (Sturges: 15), 454 or 455 values each.
        let h = Histogram::of(&(0..10000).map(f64::from).collect::<Vec<_>>(), 64);
        assert_eq!(h.counts.len(), 22);
        assert!(h.counts.iter().all(|&c| c == 454 || c == 455), "{h:?}");
        assert_eq!(h.total(), 10000);
        // IQR 0 (a lone spike): Sturges, ⌈log₂ 8⌉ + 1 = 4 bins.
        let h = Histogram::of(&[1., 1., 1., 1., 1., 1., 1., 9.], 64);
        assert_eq!(h.counts, [7, 0, 0, 1]);
        // The cap, empty and non-finite input.
        assert_eq!(Histogram::of(&v, 5).counts.len(), 5);
        assert_eq!(Histogram::of(&v, 0).counts, [1000]);
        assert!(Histogram::of(&[], 8).counts.is_empty());
        assert_eq!(Histogram::of(&[f64::NAN, 2.0], 8).counts, [1]);
        // Per rank, in analyze.
        let t = [[1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 6.0]];
        let d = analyze(&t, &Options::default()).unwrap();
        assert_eq!(d.histogram.total(), 8);
        assert!(d.rank_histograms.iter().all(|h| h.total() == 4));
    }

    /// 16 ranks, 40 steps, 1000 ns ± 20 of noise; ranks 0..8 also wait
    /// 600 ns every fourth step (a delay pattern), ranks 8..16 do not.
    fn two_groups() -> Vec<Vec<f64>> {
        let mut rng = SplitMix64::new(42);
        (0..16)
            .map(|r| {
                (0..40)
                    .map(|s| {
                        let delay = if r < 8 && s % 4 == 1 { 600.0 } else { 0.0 };
                        1000.0 + delay + noise(&mut rng, 20.0)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn kmeans_separates_two_well_separated_groups() {
        let d = analyze(&two_groups(), &Options::default()).unwrap();
        let c = d.clustering.expect("clustered");
        assert_eq!(c.k, 2, "{:?}", c.tried);
        let want: Vec<usize> = (0..16).map(|r| usize::from(r >= 8)).collect();
        assert_eq!(c.labels, want);
        assert!(c.silhouette > 0.8, "{}", c.silhouette);
        assert_eq!(c.rank_silhouettes.len(), 16);
        assert_eq!(c.dims, 2);
        assert_eq!(
            c.tried.iter().map(|t| t.k).collect::<Vec<_>>(),
            [2, 3, 4, 5, 6]
        );
        let best = c
            .tried
            .iter()
            .map(|t| t.silhouette)
            .fold(f64::MIN, f64::max);
        assert_eq!(best, c.silhouette);
        // Deterministic: the same input and seed give the same answer.
        let again = analyze(&two_groups(), &Options::default()).unwrap();
        assert_eq!(again.clustering.unwrap(), c);
        // The delayed ranks correlate strongly with each other, not with
        // the others.
        assert!(d.correlation[0][7] > 0.9);
        assert!(d.correlation[0][8].abs() < 0.5);
    }

    /// A synthetic idle wave (Afzal et al. §1, Fig. 5): 16 ranks
    /// × 60 steps at 1000 ns ± 30 of noise. At step 10 rank 0 is delayed;
    /// its neighbours wait for it one rank per step, so rank `r` waits
    /// 2000 ns extra at step `10 + r`, through rank 7 (a socket of 8 ranks:
    /// the wave dies at the socket boundary). Each rank the wave passed
    /// stays desynchronized afterwards and waits 1000 ns more per step;
    /// ranks 8..16 stay in lock step.
    fn idle_wave() -> Vec<Vec<f64>> {
        let mut rng = SplitMix64::new(2024);
        (0..16)
            .map(|r| {
                (0..60)
                    .map(|s| {
                        let mut t = 1000.0 + noise(&mut rng, 30.0);
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

    #[test]
    fn an_idle_wave_separates_the_ranks_it_passed() {
        let t = idle_wave();
        let d = analyze(&t, &Options::default()).unwrap();
        // The delayed group moves together: its members correlate strongly
        // with each other (mean over pairs), the lock-step group hardly with
        // anyone.
        let mean_corr = |a: std::ops::Range<usize>, b: std::ops::Range<usize>| {
            let mut s = 0.0;
            let mut n = 0.0;
            for i in a {
                for j in b.clone() {
                    if i != j {
                        s += d.correlation[i][j];
                        n += 1.0;
                    }
                }
            }
            s / n
        };
        let within = mean_corr(0..8, 0..8);
        let across = mean_corr(0..8, 8..16);
        let quiet = mean_corr(8..16, 8..16);
        assert!(within > 0.6, "{within}");
        assert!(across.abs() < 0.1, "{across}");
        assert!(quiet.abs() < 0.1, "{quiet}");
        // PC1 is the desynchronization and explains most of the variance.
        assert!(d.pca.explained_variance_ratio[0] > 0.5, "{:?}", d.pca);
        // The clustering puts exactly the ranks the wave passed together.
        let c = d.clustering.expect("clustered");
        let want: Vec<usize> = (0..16).map(|r| usize::from(r >= 8)).collect();
        assert_eq!(c.labels, want, "{:?}", c.tried);
        // Each passed rank waits more on average than every lock-step one.
        let slowest_quiet = d.rank_mean[8..].iter().copied().fold(f64::MIN, f64::max);
        assert!(d.rank_mean[..8].iter().all(|&m| m > slowest_quiet));
        // In phase space the wave leaves, per passed rank, one point far
        // above the diagonal, (normal, spike): +2000, and one below it,
        // (spike, desynchronized): −1000; every other point lies near it.
        let ps = &d.phase_space[3];
        assert_eq!(ps.iter().filter(|(a, b)| b - a > 1500.0).count(), 1);
        assert_eq!(ps.iter().filter(|(a, b)| a - b > 500.0).count(), 1);
        assert_eq!(ps.iter().filter(|(a, b)| (a - b).abs() > 200.0).count(), 2);
        // The spikes (8 of 960 cells, above the 99.9 % quantile of
        // |t − mean|) keep the colour range wider than the desynchronized
        // level, which is thus not saturated; a 99 % quantile would clip
        // them.
        let dev_desync = 2000.0 - d.mean;
        assert!(d.colour_range > 1.5 * dev_desync, "{}", d.colour_range);
        let o99 = Options {
            colour_quantile: 0.99,
            ..Options::default()
        };
        let d99 = analyze(&t, &o99).unwrap();
        assert!(d99.colour_range < 0.5 * d.max_abs_deviation);
    }

    #[test]
    fn fewer_than_three_ranks_or_few_distinct_ones_give_no_clustering() {
        let d = analyze(&[[1.0, 2.0], [3.0, 1.0]], &Options::default()).unwrap();
        assert!(d.clustering.is_none());
        // Three ranks, two identical: only k = 2 is possible and works.
        let d = analyze(&[[1.0, 2.0], [1.0, 2.0], [5.0, 1.0]], &Options::default()).unwrap();
        let c = d.clustering.unwrap();
        assert_eq!((c.k, c.labels.clone()), (2, vec![0, 0, 1]));
        assert_eq!(c.silhouette, 2.0 / 3.0);
    }

    #[test]
    fn the_result_serializes_without_nan() {
        let d = analyze(&idle_wave(), &Options::default()).unwrap();
        let json = serde_json::to_string(&d).unwrap();
        assert!(!json.contains("null") && !json.contains("NaN"));
        assert!(json.contains("\"clustering\":{\"k\":2"));
    }
}
