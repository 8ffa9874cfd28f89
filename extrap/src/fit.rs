//! Communication fields as functions of the topology's sizes (Wu and Mueller 2012
//! §3.3).
//!
//! Every integer field of an event (a peer offset, a count, a ranklist
//! bound) takes one value per input trace. The fit finds the simplest model
//! in the sizes of the detected topology that reproduces every input
//! exactly and predicts the value at the target sizes:
//!
//! 1. one unknown: a constant; a multiple of one size term; the integer
//!    forms `floor(K / t)`, `ceil(K / t)` and `floor(K / a) * floor(K / b)`
//!    (strong scaling that splits `K` points over a dimension, where the
//!    paper's linear fits err by 13 % on NPB BT);
//! 2. two unknowns: `c0 + c1 * t` for one size term `t`;
//! 3. `d + 1` unknowns: the paper's form `sum c_i * prod_{j < i} S_j`
//!    (a peer's rank distance in a row-major grid) and the form linear in
//!    every dimension size.
//!
//! Linear models are solved by least squares (nalgebra's SVD, which is
//! Gaussian elimination when the system is square) and accepted when the
//! residual is zero. A model with more inputs than unknowns is *verified*
//! by the spare inputs and wins over any exactly determined one. When two
//! models of the same size both fit but predict different values at the
//! target (square inputs cannot tell the width of a grid from its height),
//! the fit refuses to guess and says so.

use nalgebra::{DMatrix, DVector};

/// A term of a model: a function of the dimension sizes of a row-major
/// grid (`dims[0]` varies slowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    /// The constant 1.
    One,
    /// The size of dimension `i`.
    Dim(usize),
    /// The product of the sizes of dimensions `i..`: the rank stride of
    /// dimension `i - 1`; `Trail(0)` is the number of ranks.
    Trail(usize),
    /// The square of `Trail(i)`: a divisor of block sizes that shrink with
    /// the square of the rank count (NPB FT's all-to-all count
    /// `N / P^2`).
    TrailSq(usize),
    /// `floor(log2(size of dimension i))`: counts that grow by a constant
    /// per doubling (request ids after NPB CG's `log2(npcols)` exchanges).
    Log2Dim(usize),
}

impl Term {
    fn eval(self, dims: &[u64]) -> f64 {
        match self {
            Term::One => 1.0,
            Term::Dim(i) => dims.get(i).copied().unwrap_or(1) as f64,
            Term::Trail(i) => dims.iter().skip(i).product::<u64>() as f64,
            Term::TrailSq(i) => Term::Trail(i).eval(dims).powi(2),
            Term::Log2Dim(i) => Term::Dim(i).eval(dims).max(1.0).log2().floor(),
        }
    }

    fn name(self, d: usize) -> String {
        const AXES: [&str; 3] = ["z", "y", "x"];
        let axis = |i: usize| {
            if d <= 3 {
                AXES[3 - d + i].to_string()
            } else {
                format!("n{i}")
            }
        };
        match self {
            Term::One => "1".into(),
            Term::Dim(0) if d == 1 => "P".into(),
            Term::Dim(i) => axis(i),
            Term::Trail(0) => "P".into(),
            Term::Trail(i) => (i..d).map(axis).collect::<Vec<_>>().join("*"),
            Term::TrailSq(0) => "P^2".into(),
            Term::TrailSq(i) => format!("({})^2", Term::Trail(i).name(d)),
            Term::Log2Dim(i) => format!("log2({})", Term::Dim(i).name(d)),
        }
    }
}

/// A fitted model of one field.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// The same value at every size.
    Const(i64),
    /// `sum coef_i * term_i`.
    Linear(Vec<(Term, f64)>),
    /// `floor(k / t) + a` or, with `ceil`, `ceil(k / t) + a`: a block of a
    /// `k`-point problem, less the boundary points a rank at the edge of
    /// the grid does not send (NPB LU's `5*(ny-1)` at `K = 320`, `a = -5`).
    Div {
        /// The numerator (a global problem size).
        k: i64,
        /// The divisor term.
        t: Term,
        /// Rounding up instead of down.
        ceil: bool,
        /// The offset.
        a: i64,
    },
    /// `round(log2(t) / c) + a`, rounding up with `ceil`, down otherwise:
    /// the number of steps of a recursive-doubling or butterfly loop
    /// (NPB CG's `log2(npcols)` exchanges).
    Log {
        /// The size term.
        t: Term,
        /// The divisor.
        c: i64,
        /// Rounding up instead of down.
        ceil: bool,
        /// The offset.
        a: i64,
    },
    /// `(floor(k / a) + oa) * (floor(k / b) + ob)`: a face of a block of a
    /// `k`-sized problem split over two dimensions, with ghost or boundary
    /// planes (NPB MG's `(32/x + 2) * 32/z` on a class S grid).
    DivProduct {
        /// The numerator.
        k: i64,
        /// The two divisor terms.
        a: Term,
        /// See `a`.
        b: Term,
        /// The offset of the first factor.
        oa: i64,
        /// The offset of the second factor.
        ob: i64,
    },
    /// `c * (t + m) * (floor(k / t) + a)^e` (the factor `t + m` only with
    /// `m`): a buffer of `e`-dimensional blocks of a `k`-point problem cut
    /// `t` ways, over `t + m` of them. NPB BT's solve messages hold a block
    /// of its largest cell, `30 * (floor(64/p) + 1)^2`, and its face
    /// exchange the faces of all cells but one,
    /// `10 * (p - 1) * floor(60/p)^2`.
    Block {
        /// The factor.
        c: i64,
        /// The numerator (a global problem size).
        k: i64,
        /// The divisor term.
        t: Term,
        /// The offset of the block side.
        a: i64,
        /// The block's dimension.
        e: u32,
        /// The offset of the block count `t + m`, if there is one.
        m: Option<i64>,
    },
    /// A value that depends on one dimension size alone, taken from the
    /// inputs at the sizes they had: where no law is verified, inputs that
    /// agree in that size agree in the value whatever their other sizes,
    /// and two inputs or more had the target's size. NPB MG's receive
    /// buffer, compiled from the fastest dimension, where that dimension
    /// takes two sizes only.
    Table {
        /// The dimension.
        t: Term,
        /// Its sizes at the inputs and the value at each.
        entries: Vec<(u64, i64)>,
    },
}

impl Model {
    /// This law of a one-dimensional grid's size as the same law of
    /// dimension `dim` of a larger grid: how a law verified on one
    /// dimension's sizes pooled with another's ([`one_size_short`]) joins
    /// the laws of the grid. `None` for a term with no such counterpart
    /// (the square of the rank count).
    pub fn on_dim(&self, dim: usize) -> Option<Model> {
        let t = |t: Term| match t {
            Term::One => Some(Term::One),
            Term::Dim(0) | Term::Trail(0) => Some(Term::Dim(dim)),
            Term::Log2Dim(0) => Some(Term::Log2Dim(dim)),
            _ => None,
        };
        Some(match self {
            Model::Const(c) => Model::Const(*c),
            Model::Linear(terms) => Model::Linear(
                terms
                    .iter()
                    .map(|&(x, c)| Some((t(x)?, c)))
                    .collect::<Option<Vec<_>>>()?,
            ),
            Model::Div { k, t: x, ceil, a } => Model::Div {
                k: *k,
                t: t(*x)?,
                ceil: *ceil,
                a: *a,
            },
            Model::Log { t: x, c, ceil, a } => Model::Log {
                t: t(*x)?,
                c: *c,
                ceil: *ceil,
                a: *a,
            },
            Model::DivProduct { k, a, b, oa, ob } => Model::DivProduct {
                k: *k,
                a: t(*a)?,
                b: t(*b)?,
                oa: *oa,
                ob: *ob,
            },
            Model::Block {
                c,
                k,
                t: x,
                a,
                e,
                m,
            } => Model::Block {
                c: *c,
                k: *k,
                t: t(*x)?,
                a: *a,
                e: *e,
                m: *m,
            },
            Model::Table { t: x, entries } => Model::Table {
                t: t(*x)?,
                entries: entries.clone(),
            },
        })
    }

    /// The model's value at `dims`.
    pub fn eval(&self, dims: &[u64]) -> f64 {
        match self {
            Model::Const(c) => *c as f64,
            Model::Linear(terms) => terms.iter().map(|(t, c)| c * t.eval(dims)).sum(),
            Model::Div { k, t, ceil, a } => {
                let (k, t) = (*k as f64, t.eval(dims));
                let q = if *ceil {
                    (k / t).ceil()
                } else {
                    (k / t).floor()
                };
                q + *a as f64
            }
            Model::DivProduct { k, a, b, oa, ob } => {
                let k = *k as f64;
                ((k / a.eval(dims)).floor() + *oa as f64)
                    * ((k / b.eval(dims)).floor() + *ob as f64)
            }
            Model::Log { t, c, ceil, a } => log_steps(t.eval(dims), *c, *ceil) as f64 + *a as f64,
            Model::Block { c, k, t, a, e, m } => {
                let t = t.eval(dims);
                let side = (*k as f64 / t).floor() + *a as f64;
                let count = m.map_or(1.0, |m| t + m as f64);
                *c as f64 * count * side.powi(*e as i32)
            }
            Model::Table { t, entries } => {
                let size = t.eval(dims).round() as u64;
                entries
                    .iter()
                    .find(|(s, _)| *s == size)
                    .map_or(f64::NAN, |(_, v)| *v as f64)
            }
        }
    }

    /// Whether every coefficient of a linear model is a whole number (other
    /// models have integer parameters by construction).
    fn has_integer_coefficients(&self) -> bool {
        match self {
            Model::Linear(terms) => terms.iter().all(|(_, c)| (c - c.round()).abs() < 1e-6),
            _ => true,
        }
    }

    /// The largest coefficient, in size, of a linear model's size terms
    /// (its constant aside); 0 for other models.
    fn largest_stride_coefficient(&self) -> f64 {
        match self {
            Model::Linear(terms) => terms
                .iter()
                .filter(|(t, _)| *t != Term::One)
                .map(|(_, c)| c.abs())
                .fold(0.0, f64::max),
            _ => 0.0,
        }
    }

    /// Number of unknowns: what decides how many inputs verify it.
    fn unknowns(&self) -> usize {
        match self {
            Model::Linear(t) => t.len(),
            // The offset and the choice of divisor and rounding: a log
            // form must not win over a size itself (a Cartesian
            // communicator's dims) on equal terms.
            Model::Log { .. } => 2,
            Model::Div { a, .. } if *a != 0 => 2,
            // The factor and the numerator, and the side's offset as for
            // `Div`; the count's offset and the dimension are a choice like
            // a log form's divisor.
            Model::Block { a, .. } => 2 + usize::from(*a != 0),
            Model::DivProduct { oa, ob, .. } => 1 + usize::from(*oa != 0) + usize::from(*ob != 0),
            Model::Table { entries, .. } => entries.len(),
            _ => 1,
        }
    }

    /// The terms the model depends on.
    fn terms(&self) -> Vec<Term> {
        match self {
            Model::Const(_) => Vec::new(),
            Model::Linear(t) => t.iter().map(|(t, _)| *t).collect(),
            Model::Div { t, .. }
            | Model::Log { t, .. }
            | Model::Block { t, .. }
            | Model::Table { t, .. } => vec![*t],
            Model::DivProduct { a, b, .. } => vec![*a, *b],
        }
    }

    /// How many of the points the model tells apart: the distinct values
    /// of its terms. Leave-one-out verifies a model only when this exceeds
    /// its unknowns; inputs of 8, 16 and 32 ranks have two row lengths (4
    /// and 8) and verify no law in the row length with two unknowns.
    fn support(&self, points: &[(&[u64], i64)]) -> usize {
        distinct(&self.terms(), points)
    }

    /// The model as a formula in the axis names (x fastest), for reports.
    pub fn describe(&self, d: usize) -> String {
        let num = |c: f64| {
            let r = c.round();
            if (c - r).abs() < 1e-9 {
                format!("{r}")
            } else {
                format!("{c:.4}")
            }
        };
        match self {
            Model::Const(c) => c.to_string(),
            Model::Linear(terms) => {
                let parts: Vec<String> = terms
                    .iter()
                    .filter(|(_, c)| c.abs() > 1e-9)
                    .map(|(t, c)| match t {
                        Term::One => num(*c),
                        t if (c - 1.0).abs() < 1e-9 => t.name(d),
                        t => format!("{}*{}", num(*c), t.name(d)),
                    })
                    .collect();
                if parts.is_empty() {
                    "0".into()
                } else {
                    parts.join(" + ").replace("+ -", "- ")
                }
            }
            Model::Div { k, t, ceil, a } => {
                let f = if *ceil { "ceil" } else { "floor" };
                format!("{f}({k}/{}){}", t.name(d), signed(*a))
            }
            Model::DivProduct { k, a, b, oa, ob } => {
                let factor = |t: &Term, o: i64| match o {
                    0 => format!("floor({k}/{})", t.name(d)),
                    o => format!("(floor({k}/{}){})", t.name(d), signed(o)),
                };
                format!("{}*{}", factor(a, *oa), factor(b, *ob))
            }
            Model::Block { c, k, t, a, e, m } => {
                let n = t.name(d);
                let side = if *a == 0 {
                    format!("floor({k}/{n})")
                } else {
                    format!("(floor({k}/{n}){})", signed(*a))
                };
                let power = if *e == 1 {
                    String::new()
                } else {
                    format!("^{e}")
                };
                let count = m.map_or(String::new(), |m| format!("({n}{})*", signed(m)));
                format!("{c}*{count}{side}{power}")
            }
            Model::Table { t, entries } => {
                let n = t.name(d);
                let at: Vec<String> = entries
                    .iter()
                    .map(|(s, v)| format!("{v} at {n}={s}"))
                    .collect();
                format!("by {n} alone ({})", at.join(", "))
            }
            Model::Log { t, c, ceil, a } => {
                let f = if *ceil { "ceil" } else { "floor" };
                let div = if *c == 1 {
                    String::new()
                } else {
                    format!("/{c}")
                };
                format!("{f}(log2({}){div}){}", t.name(d), signed(*a))
            }
        }
    }
}

/// An offset appended to a formula: nothing for 0, else ` + a` or ` - a`.
fn signed(a: i64) -> String {
    match a {
        0 => String::new(),
        a if a > 0 => format!(" + {a}"),
        a => format!(" - {}", -a),
    }
}

/// The laws [`fit`] tries, in words, for messages that say why nothing
/// fitted or what a fit rests on.
pub const LAWS: &str = "constant; c*t and c0 + c1*t for t a dimension size, a product of \
                        trailing sizes or P; c0 + c1*floor(log2(t)) for t a dimension size; \
                        the row-major stride form; linear in every size; \
                        floor(K/t) and ceil(K/t), also for t the square of P or of a \
                        trailing product, plus a where three sizes verify it; floor or ceil of log2(t)/c, plus a; \
                        (floor(K/a)+oa)*(floor(K/b)+ob); c*(t+m)*(floor(K/t)+a)^e for blocks of a \
                        problem, where three sizes verify it";

/// Why a field could not be fitted.
#[derive(Clone, Debug, PartialEq)]
pub enum FitFailure {
    /// No model reproduces the inputs.
    NoModel,
    /// Models that reproduce the inputs disagree at the target: the two
    /// formulas and their predictions.
    Ambiguous(String, i64, String, i64),
    /// The best model predicts a value that is not an integer.
    NotInteger(String, f64),
    /// The values follow one dimension's size alone, and the inputs show
    /// too few sizes of it to verify a law there: the dimension, its
    /// sizes with their values, and the target's size.
    TooFewSizes {
        /// The dimension (slowest first).
        dim: usize,
        /// Its sizes in the inputs, with the field's value at each.
        seen: SizeValues,
        /// Its size at the target.
        target: u64,
    },
}

/// A field fitted over the inputs and its value at the target.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The model.
    pub model: Model,
    /// Its value at the target sizes.
    pub value: i64,
    /// Whether spare inputs confirmed the model (more inputs than unknowns).
    pub verified: bool,
}

/// What a field is, which decides the models it may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A peer as a rank distance: in a row-major grid a sum of the rank
    /// strides `prod_{j > i} n_j` (Wu and Mueller 2012 §3.3), so only those terms.
    Peer,
    /// The length of a list that may have one entry per rank or per rank
    /// of a dimension: a size term that reproduces every input is taken
    /// first, even from a single input.
    Length,
    /// An element count or a loop's step count: as [`Kind::Other`], but
    /// never negative, so a law that the inputs allow but that predicts a
    /// negative value at the target is no candidate (NPB MG's buffer
    /// length `2*(256/x + 2)^2` also fits `58888 - 784*P` at its inputs,
    /// which is negative at 128 ranks).
    Count,
    /// Anything else (sizes, tags, list entries).
    Other,
}

/// The candidate models for `d` dimensions, smallest first.
fn linear_candidates(d: usize, kind: Kind) -> Vec<Vec<Term>> {
    // Products of trailing dimensions and P (`Trail(d-1)` is `Dim(d-1)`).
    let strides = (0..d).rev().map(Term::Trail);
    let mut terms: Vec<Term> = match kind {
        Kind::Peer => strides.collect(),
        Kind::Other | Kind::Count | Kind::Length => (0..d)
            .map(Term::Dim)
            .chain((0..d.saturating_sub(1)).map(Term::Trail))
            .collect(),
    };
    terms.dedup();
    let mut out: Vec<Vec<Term>> = Vec::new();
    let push = |v: Vec<Term>, out: &mut Vec<Vec<Term>>| {
        if !out.contains(&v) {
            out.push(v);
        }
    };
    for &t in &terms {
        push(vec![t], &mut out);
    }
    for &t in &terms {
        push(vec![Term::One, t], &mut out);
    }
    if kind != Kind::Peer {
        for i in 0..d {
            push(vec![Term::One, Term::Log2Dim(i)], &mut out);
        }
    }
    // Peers: every subset of the constant and the rank strides, smallest
    // first, so that a wrap-around distance such as `P - x` (two strides,
    // no constant) is a model of two unknowns that a third input verifies,
    // not the full form that d + 1 inputs only determine.
    let mut basis = vec![Term::One];
    basis.extend((0..d).rev().map(Term::Trail));
    basis.dedup();
    let mut subsets: Vec<Vec<Term>> = (1..1u32 << basis.len())
        .map(|m| {
            (0..basis.len())
                .filter(|&i| m & (1 << i) != 0)
                .map(|i| basis[i])
                .collect()
        })
        .collect();
    subsets.sort_by_key(Vec::len);
    for v in subsets {
        if kind == Kind::Peer || v.len() == basis.len() {
            push(v, &mut out);
        }
    }
    if kind != Kind::Peer {
        let mut lin = vec![Term::One];
        lin.extend((0..d).map(Term::Dim));
        push(lin, &mut out);
    }
    out
}

/// Least-squares coefficients of `terms` over the points, if they
/// reproduce every value and determine the prediction at `target`.
fn solve(terms: &[Term], points: &[(&[u64], i64)], target: &[u64]) -> Option<Model> {
    let (m, k) = (points.len(), terms.len());
    if m < k {
        return None;
    }
    let a = DMatrix::from_fn(m, k, |r, c| terms[c].eval(points[r].0));
    let b = DVector::from_fn(m, |r, _| points[r].1 as f64);
    let svd = a.clone().svd(true, true);
    let x = svd.solve(&b, 1e-9).ok()?;
    let fitted = &a * &x;
    let scale = b.amax().max(1.0);
    if (fitted - &b).amax() > 1e-6 * scale {
        return None;
    }
    // The prediction is determined only if the target's row lies in the
    // row space of the inputs' rows.
    let row = DVector::from_fn(k, |c, _| terms[c].eval(target));
    let v_t = svd.v_t.as_ref()?;
    let rank = svd
        .singular_values
        .iter()
        .filter(|&&s| s > 1e-9 * svd.singular_values.max())
        .count();
    let basis = v_t.rows(0, rank);
    let proj = basis.transpose() * (basis * &row);
    if (proj - &row).amax() > 1e-6 * row.amax().max(1.0) {
        return None;
    }
    Some(Model::Linear(
        terms.iter().copied().zip(x.iter().copied()).collect(),
    ))
}

/// The `K` of `floor(K/t) + a` (or `ceil`) that reproduces every point.
fn solve_div(t: Term, ceil: bool, a: i64, points: &[(&[u64], i64)]) -> Vec<Model> {
    solve_div_range(t, ceil, a, points).unwrap_or_default()
}

/// [`solve_div`]'s laws: the numerator that divides exactly where the
/// inputs allow it (the smallest for floor, the largest for ceil) and, where
/// other numerators reproduce the inputs too, the other end of their
/// range, so that a target where the two part is refused, not guessed.
fn solve_div_range(t: Term, ceil: bool, a: i64, points: &[(&[u64], i64)]) -> Option<Vec<Model>> {
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    for &(dims, v) in points {
        let v = v.checked_sub(a)?;
        let t = t.eval(dims) as i64;
        if t <= 0 || v <= 0 {
            return None;
        }
        let (a, b) = if ceil {
            ((v - 1).checked_mul(t)? + 1, v.checked_mul(t)?)
        } else {
            (v.checked_mul(t)?, v.checked_mul(t)? + t - 1)
        };
        lo = lo.max(a);
        hi = hi.min(b);
    }
    if lo > hi {
        return None;
    }
    let (k, other) = if ceil { (hi, lo) } else { (lo, hi) };
    let mut out = vec![Model::Div { k, t, ceil, a }];
    if other != k {
        out.push(Model::Div {
            k: other,
            t,
            ceil,
            a,
        });
    }
    Some(out)
}

/// `floor` or `ceil` of `log2(x) / c` for a size `x >= 1` (`floor(log2)`
/// of a non-power of two counts its whole bits).
fn log_steps(x: f64, c: i64, ceil: bool) -> i64 {
    let x = x.max(1.0) as u64;
    let l = 63 - i64::from(x.leading_zeros());
    let l = if ceil && !x.is_power_of_two() {
        l + 1
    } else {
        l
    };
    if ceil {
        (l + c - 1).div_euclid(c)
    } else {
        l.div_euclid(c)
    }
}

/// The offset `a` of `round(log2(t)/c) + a` that reproduces every point.
fn solve_log(t: Term, c: i64, ceil: bool, points: &[(&[u64], i64)]) -> Option<Model> {
    let &(d0, v0) = points.first()?;
    let a = v0 - log_steps(t.eval(d0), c, ceil);
    let m = Model::Log { t, c, ceil, a };
    points
        .iter()
        .all(|&(d, v)| m.eval(d) == v as f64)
        .then_some(m)
}

/// The `K` of `(floor(K/a) + oa) * (floor(K/b) + ob)` that reproduces
/// every point.
fn solve_div_product(
    a: Term,
    b: Term,
    oa: i64,
    ob: i64,
    points: &[(&[u64], i64)],
) -> Option<Vec<Model>> {
    let &(dims, v) = points.first()?;
    let (ta, tb) = (a.eval(dims) as i64, b.eval(dims) as i64);
    if v <= 0 || ta <= 0 || tb <= 0 || v > 1 << 24 {
        return None;
    }
    // With both factors at least 1 the product grows with K: the K that
    // give `v` at the first point are one run, found by bisection, no
    // longer than the shorter divisor.
    let at = |k: i64| (k / ta + oa) * (k / tb + ob);
    let mut lo = (ta * (1 - oa)).max(tb * (1 - ob)).max(1);
    let mut hi = (v + 1 + oa.abs() + ob.abs()).checked_mul(ta.max(tb))?;
    if at(hi) < v {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at(mid) < v {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    // The first and the last numerator that reproduce every point: where
    // they part at the target, the fit is refused.
    let fits: Vec<Model> = (lo..)
        .take_while(|&k| at(k) == v)
        .map(|k| Model::DivProduct { k, a, b, oa, ob })
        .filter(|m| points.iter().all(|&(d, v)| m.eval(d) == v as f64))
        .collect();
    let mut ends: Vec<Model> = fits
        .first()
        .into_iter()
        .chain(fits.last())
        .cloned()
        .collect();
    ends.dedup();
    (!ends.is_empty()).then_some(ends)
}

/// The largest offset of a factor of `(floor(K/a) + oa) * (floor(K/b) + ob)`
/// tried: ghost and boundary planes.
const PRODUCT_OFFSET: i64 = 2;

/// The exact integer `e`-th root of `q`, if it has one.
fn exact_root(q: i64, e: u32) -> Option<i64> {
    let r = (q as f64).powf(1.0 / f64::from(e)).round() as i64;
    (r.saturating_sub(1)..=r.saturating_add(1)).find(|&x| x >= 0 && x.checked_pow(e) == Some(q))
}

/// The most divisors of the values' common factor that [`solve_block`]
/// tries as the factor `c`.
const BLOCK_FACTORS: usize = 4096;

/// Every `c * (t + m) * (floor(K/t) + a)^e` with the given `t`, `e`, `m`
/// and `a` that reproduces every point, smallest factor first.
fn solve_block(t: Term, e: u32, m: Option<i64>, a: i64, points: &[(&[u64], i64)]) -> Vec<Model> {
    let mut w = Vec::with_capacity(points.len());
    for &(dims, v) in points {
        let tv = t.eval(dims) as i64;
        let count = m.map_or(1, |m| tv + m);
        // Counts, not a plugin's symbols (2^40 and up), whose common
        // factor would take long to split.
        if v <= 0 || v > 1 << 40 || tv <= 0 || count <= 0 || v % count != 0 {
            return Vec::new();
        }
        w.push((tv, v / count));
    }
    let g = w.iter().fold(0i64, |g, &(_, x)| gcd(g, x));
    let mut out = Vec::new();
    for c in divisors(g).into_iter().take(BLOCK_FACTORS) {
        let (mut lo, mut hi) = (i64::MIN, i64::MAX);
        for &(tv, x) in &w {
            let Some(side) = exact_root(x / c, e).map(|r| r - a).filter(|&s| s >= 1) else {
                lo = 1;
                hi = 0;
                break;
            };
            lo = lo.max(side * tv);
            hi = hi.min(side * tv + tv - 1);
        }
        // Every problem size from `lo` to `hi` reproduces the inputs; the
        // two ends stand for it, so that where they part at the target the
        // laws disagree and the fit is refused.
        if lo <= hi {
            out.push(Model::Block {
                c,
                k: lo,
                t,
                a,
                e,
                m,
            });
        }
        if lo < hi {
            out.push(Model::Block {
                c,
                k: hi,
                t,
                a,
                e,
                m,
            });
        }
    }
    out
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// The divisors of `g > 0`, in increasing order.
fn divisors(g: i64) -> Vec<i64> {
    let (mut small, mut large) = (Vec::new(), Vec::new());
    let mut i = 1;
    while i * i <= g {
        if g % i == 0 {
            small.push(i);
            if i * i != g {
                large.push(g / i);
            }
        }
        i += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// The largest offset `a` of `floor(K/t) + a` tried: boundary points of a
/// stencil (a few planes of a few variables), not arbitrary constants.
const DIV_OFFSET: i64 = 64;

/// How many distinct tuples of values `terms` take over the points.
fn distinct(terms: &[Term], points: &[(&[u64], i64)]) -> usize {
    let mut seen: Vec<Vec<u64>> = points
        .iter()
        .map(|(d, _)| terms.iter().map(|t| t.eval(d).to_bits()).collect())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Fits one field: `points` are the (sizes, value) pairs of the inputs,
/// `target` the sizes to predict for.
pub fn fit(points: &[(&[u64], i64)], target: &[u64], kind: Kind) -> Result<Fit, FitFailure> {
    fit_within(points, target, kind, None)
}

/// [`fit`] for a stencil whose peers lie at most `reach` positions away in
/// each dimension: a peer's coefficient on a rank stride is then at most
/// `reach + 1` in size (`reach` steps in its own dimension, plus one for a
/// wrap-around of the next faster one). A larger one fits the inputs only
/// because a size never changed among them (`4*x` for the stride `y*x`
/// where every input that has the class is 4 wide in y).
///
/// A loop length that is a size itself and a constant are taken at once;
/// otherwise every candidate law that reproduces the inputs is collected
/// (the linear forms, and for fields other than peers the integer forms
/// of `integer_laws`) and `choose_law` decides among them.
pub fn fit_within(
    points: &[(&[u64], i64)],
    target: &[u64],
    kind: Kind,
    reach: Option<u32>,
) -> Result<Fit, FitFailure> {
    let Some(&(_, first)) = points.first() else {
        return Err(FitFailure::NoModel);
    };
    if kind == Kind::Length
        && let Some(fit) = length_of_a_size(points, target)
    {
        return Ok(fit);
    }
    if points.iter().all(|&(_, v)| v == first) {
        return Ok(Fit {
            model: Model::Const(first),
            value: first,
            verified: points.len() > 1,
        });
    }
    let d = target.len();
    let mut cands = linear_laws(points, target, kind, reach);
    if kind != Kind::Peer {
        cands.extend(integer_laws(points, d));
    }
    if matches!(kind, Kind::Count | Kind::Length) {
        cands.retain(|m| m.eval(target) > -0.5);
    }
    choose_law(&cands, points, target, kind)
}

/// A loop length that equals the rank count or one dimension size at
/// every input: the loop runs over the ranks or a dimension, whatever
/// other law its values would also fit, so that is its law.
fn length_of_a_size(points: &[(&[u64], i64)], target: &[u64]) -> Option<Fit> {
    let d = target.len();
    let terms = std::iter::once(Term::Trail(0)).chain((0..d).map(Term::Dim));
    for t in terms {
        if points.iter().all(|&(g, v)| t.eval(g) == v as f64) {
            let model = Model::Linear(vec![(t, 1.0)]);
            return Some(Fit {
                value: model.eval(target).round() as i64,
                verified: model.support(points) > 1,
                model,
            });
        }
    }
    None
}

/// The linear laws ([`linear_candidates`]) that reproduce every point. A
/// peer's law must also be one a row-major grid allows (whole multiples
/// of the rank strides, within the stencil's `reach`), since any other
/// fits the inputs by a coincidence of their sizes.
fn linear_laws(
    points: &[(&[u64], i64)],
    target: &[u64],
    kind: Kind,
    reach: Option<u32>,
) -> Vec<Model> {
    let mut cands: Vec<Model> = Vec::new();
    for terms in linear_candidates(target.len(), kind) {
        if let Some(m) = solve(&terms, points, target) {
            // A peer is a displacement in a row-major grid: a whole number
            // of each rank stride. A fractional coefficient fits the
            // inputs by a coincidence of their sizes (`P/4 - x` for
            // `y*x - x` while z is 4 in every input) and is no law.
            if kind == Kind::Peer
                && (!m.has_integer_coefficients()
                    || reach.is_some_and(|r| m.largest_stride_coefficient() > f64::from(r) + 1.0))
            {
                continue;
            }
            cands.push(m);
        }
    }
    cands
}

/// The integer laws of counts and lengths that reproduce every point:
/// strong scaling that splits `K` points over a size (`floor(K/t) + a`,
/// its ceiling, its logarithm, blocks of a problem, the square of the
/// rank count's share), and products of two such shares. Laws with more
/// unknowns are tried only where the inputs have enough distinct sizes
/// to verify them.
fn integer_laws(points: &[(&[u64], i64)], d: usize) -> Vec<Model> {
    let mut cands: Vec<Model> = Vec::new();
    let mut div_terms: Vec<Term> = (0..d).map(Term::Dim).collect();
    div_terms.push(Term::Trail(0));
    div_terms.dedup();
    let squares: Vec<Term> = (0..d).map(Term::TrailSq).collect();
    for &t in &div_terms {
        // Laws of two unknowns only where three sizes of the term can
        // verify them.
        let verifiable = distinct(&[t], points) > 2;
        for ceil in [false, true] {
            cands.extend(solve_div(t, ceil, 0, points));
            // With an offset only where the inputs can verify it.
            if verifiable {
                cands.extend(
                    (-DIV_OFFSET..=DIV_OFFSET)
                        .filter(|&a| a != 0)
                        .flat_map(|a| solve_div(t, ceil, a, points)),
                );
            }
            for c in 1..=3 {
                cands.extend(solve_log(t, c, ceil, points));
            }
        }
        // Blocks of a problem: two unknowns.
        if verifiable {
            for e in 1..=3 {
                for m in [None, Some(-1), Some(0), Some(1)] {
                    for a in -1..=2 {
                        cands.extend(solve_block(t, e, m, a, points));
                    }
                }
            }
        }
    }
    for &t in &squares {
        for ceil in [false, true] {
            cands.extend(solve_div(t, ceil, 0, points));
        }
    }
    for i in 0..d {
        for j in i..d {
            if d > 1 {
                let (a, b) = (Term::Dim(i), Term::Dim(j));
                let support = distinct(&[a, b], points);
                for oa in -PRODUCT_OFFSET..=PRODUCT_OFFSET {
                    for ob in -PRODUCT_OFFSET..=PRODUCT_OFFSET {
                        // Offsets only where the inputs can verify them
                        // (the unknowns of `Model::DivProduct`).
                        let unknowns = 1 + usize::from(oa != 0) + usize::from(ob != 0);
                        if unknowns == 1 || support > unknowns {
                            cands.extend(
                                solve_div_product(a, b, oa, ob, points)
                                    .into_iter()
                                    .flatten(),
                            );
                        }
                    }
                }
            }
        }
    }
    cands
}

/// Decides among the candidate laws, all of which reproduce the inputs.
/// Verified models first, then by size; the first group decides. Block
/// laws come after every other law of their standing and are searched
/// over many shapes, so every verified one must agree at the target:
/// two blocks that explain the inputs alike but part beyond them (NPB
/// BT's `30*floor(68/p)^2` and `30*(floor(64/p) + 1)^2` from p = 3 to 6)
/// are a refusal, never a guess. Before any unverified law, a value the
/// inputs tabulate ([`tabulated`]) is read instead.
fn choose_law(
    cands: &[Model],
    points: &[(&[u64], i64)],
    target: &[u64],
    kind: Kind,
) -> Result<Fit, FitFailure> {
    for verified in [true, false] {
        if !verified
            && kind != Kind::Peer
            && let Some(model) = tabulated(points, target)
        {
            let value = model.eval(target) as i64;
            return Ok(Fit {
                model,
                value,
                verified: true,
            });
        }
        for blocks in [false, true] {
            if let Some(mut group) = simplest_laws(cands, points, target, verified, blocks) {
                // Block laws of more unknowns that reproduce the inputs as
                // well must agree too: the shapes are searched, so a law
                // the inputs verify may be one of many (a class A NPB BT
                // binary run on 56 points: `30*floor(66/y)^2` verifies on
                // 3, 5 and 6 cells, but `30*(floor(64/y) + 1)^2`, its
                // compiled buffers, fits them too and parts at 8).
                if blocks && verified {
                    group.extend(
                        simplest_laws(cands, points, target, false, true)
                            .into_iter()
                            .flatten(),
                    );
                }
                return agreed_value(&group, verified, target.len());
            }
        }
    }
    Err(too_few_sizes(points, target).unwrap_or(FitFailure::NoModel))
}

/// The candidates of one standing (`verified` or not, block laws or not)
/// with the fewest unknowns (every block law counts alike), each with its
/// value at the target, the simplest first; `None` when the standing has
/// none. Their values must then agree ([`agreed_value`]).
fn simplest_laws<'m>(
    cands: &'m [Model],
    points: &[(&[u64], i64)],
    target: &[u64],
    verified: bool,
    blocks: bool,
) -> Option<Vec<(&'m Model, f64)>> {
    let mut best: Option<(usize, Vec<(&Model, f64)>)> = None;
    for m in cands {
        if (m.support(points) > m.unknowns()) != verified
            || matches!(m, Model::Block { .. }) != blocks
        {
            continue;
        }
        let u = if blocks { 0 } else { m.unknowns() };
        match &mut best {
            Some((bu, v)) if *bu == u => v.push((m, m.eval(target))),
            Some((bu, _)) if *bu < u => {}
            _ => best = Some((u, vec![(m, m.eval(target))])),
        }
    }
    let (_, mut group) = best?;
    // The simplest block names the law.
    group.sort_by_key(|(m, _)| m.unknowns());
    Some(group)
}

/// The fit that a group of equally simple laws gives, if they agree: the
/// first (simplest) names the law, and its value must be a whole number
/// that no other law of the group contradicts, or the fit refuses rather
/// than guess. `d` is the grid's dimension count, for the laws' names.
fn agreed_value(group: &[(&Model, f64)], verified: bool, d: usize) -> Result<Fit, FitFailure> {
    let (m0, v0) = group[0];
    let r0 = v0.round();
    if (v0 - r0).abs() > 1e-6 * r0.abs().max(1.0) {
        return Err(FitFailure::NotInteger(m0.describe(d), v0));
    }
    if let Some(&(m1, v1)) = group.iter().find(|(_, v)| (v - v0).abs() > 0.5) {
        return Err(FitFailure::Ambiguous(
            m0.describe(d),
            r0 as i64,
            m1.describe(d),
            v1.round() as i64,
        ));
    }
    Ok(Fit {
        model: m0.clone(),
        value: r0 as i64,
        verified,
    })
}

/// A dimension's sizes at the inputs, ascending, with a field's value at
/// each.
pub type SizeValues = Vec<(u64, i64)>;

/// A dimension whose size alone decides a field's values.
struct OneSize {
    /// The dimension (slowest first).
    dim: usize,
    /// Its sizes with the values.
    seen: SizeValues,
    /// How many inputs have the target's size.
    at_target: usize,
}

/// The dimensions whose size alone decides the values: inputs that agree in
/// that size agree in the value, whatever their other sizes. A grid of one
/// dimension has no other size to rule out, so none.
fn one_size_laws(points: &[(&[u64], i64)], target: &[u64]) -> Vec<OneSize> {
    let d = target.len();
    if d < 2 {
        return Vec::new();
    }
    (0..d)
        .filter_map(|dim| {
            let mut seen: SizeValues = Vec::new();
            let mut at_target = 0;
            let consistent = points.iter().all(|&(g, v)| {
                let size = g[dim];
                at_target += usize::from(size == target[dim]);
                match seen.iter().find(|(s, _)| *s == size) {
                    Some(&(_, w)) => w == v,
                    None => {
                        seen.push((size, v));
                        true
                    }
                }
            });
            seen.sort_unstable();
            (consistent && seen.len() >= 2).then_some(OneSize {
                dim,
                seen,
                at_target,
            })
        })
        .collect()
}

/// A field that no law verifies but that the inputs show to depend on one
/// dimension size alone ([`one_size_laws`]), where the target's size is
/// one the inputs had, at two inputs or more. The value there is then
/// read, not extrapolated; the repeated sizes are the spare inputs that
/// verify it. `None` when no dimension qualifies or two qualify and
/// disagree at the target.
fn tabulated(points: &[(&[u64], i64)], target: &[u64]) -> Option<Model> {
    let mut found: Option<Model> = None;
    for o in one_size_laws(points, target) {
        if o.at_target < 2 {
            continue;
        }
        let model = Model::Table {
            t: Term::Dim(o.dim),
            entries: o.seen,
        };
        match &found {
            Some(m) if m.eval(target) != model.eval(target) => return None,
            Some(_) => {}
            None => found = Some(model),
        }
    }
    found
}

/// Why no law fits values that one dimension's size alone decides, when
/// that is the reason: the inputs show too few sizes of it to verify any
/// law that reaches the target's size (a count of blocks of a problem,
/// `c*floor(K/t) + a`, has three unknowns), and the target's size is not
/// one that two inputs had (else [`tabulated`] reads it).
fn too_few_sizes(points: &[(&[u64], i64)], target: &[u64]) -> Option<FitFailure> {
    let (dim, seen) = one_size_short(points, target)?;
    Some(FitFailure::TooFewSizes {
        dim,
        seen,
        target: target[dim],
    })
}

/// The dimension whose size alone decides the values, and its values by
/// size, where the inputs show fewer than three sizes of it and fewer than
/// two inputs have the target's: what [`FitFailure::TooFewSizes`] names,
/// and what an unverified fit may rest on too.
pub fn one_size_short(points: &[(&[u64], i64)], target: &[u64]) -> Option<(usize, SizeValues)> {
    one_size_laws(points, target)
        .into_iter()
        .filter(|o| o.seen.len() < 3 && o.at_target < 2)
        .min_by_key(|o| o.seen.len())
        .map(|o| (o.dim, o.seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts<'a>(dims: &'a [Vec<u64>], vals: &[i64]) -> Vec<(&'a [u64], i64)> {
        dims.iter()
            .map(|d| d.as_slice())
            .zip(vals.iter().copied())
            .collect()
    }

    #[test]
    fn npb_mg_faces_have_ghost_planes() {
        // NPB MG class S (32^3) on z x y x x ranks: a face of the local
        // block with its two ghost planes in x, (32/x + 2) * 32/z, from
        // 2x2x2, 4x2x2, 4x4x2 and 4x4x4 (traced: 288, 144, 144, 80) to 8x4x4.
        let dims = vec![vec![2, 2, 2], vec![4, 2, 2], vec![4, 4, 2], vec![4, 4, 4]];
        let f = fit(&pts(&dims, &[288, 144, 144, 80]), &[8, 4, 4], Kind::Other).unwrap();
        assert_eq!(f.value, 40, "{}", f.model.describe(3));
        assert!(f.verified);
    }

    #[test]
    fn npb_bt_buffers_are_blocks_of_its_cells() {
        // NPB BT class A (64 points compiled, 60 run) on p x p ranks: the
        // solve messages hold 30 * MAX_CELL_DIM^2 = 30 * (64/p + 1)^2
        // values, the face exchange 10 * (p - 1) * (60/p)^2. Values worked
        // out from make_set.f and x_solve.f, checked against traces of
        // 9, 16 and 25 ranks; 36 ranks (p = 6) gives 30 * 11^2 and
        // 10 * 5 * 10^2. Three sizes verify laws of two unknowns: the
        // offset 1 is a third, but 30 * floor(68/p)^2 is the same at these
        // sizes and at 6.
        let dims = vec![vec![3, 3], vec![4, 4], vec![5, 5]];
        let solve = fit(&pts(&dims, &[14520, 8670, 5070]), &[6, 6], Kind::Other).unwrap();
        assert_eq!(solve.value, 3630, "{}", solve.model.describe(2));
        assert!(solve.verified);
        // The faces: 10*(p - 1)*floor(60/p)^2 verifies, but the block of
        // one more unknown 10*(p - 1)*(floor(65/p) - 1)^2 reproduces the
        // same three sizes and gives 4,050 at 6: refused, never a guess
        // (a class A binary on 56 points chose the simpler of two such
        // laws for its solve buffers and was wrong on every rank at 64).
        let faces = fit(&pts(&dims, &[8000, 6750, 5760]), &[6, 6], Kind::Other);
        assert!(
            matches!(&faces, Err(FitFailure::Ambiguous(_, 5000, _, 4050))),
            "{faces:?}"
        );
        // That case: 30*(floor(64/p) + 1)^2 at p = 3, 5, 6 (14,520, 5,070,
        // 3,630); 30*floor(66/p)^2 verifies on them and gives 1,920 at 8,
        // where the binary sends 2,430.
        let bt56 = vec![vec![3, 3], vec![5, 5], vec![6, 6]];
        let solve56 = fit(&pts(&bt56, &[14520, 5070, 3630]), &[8, 8], Kind::Other);
        assert!(
            matches!(&solve56, Err(FitFailure::Ambiguous(..))),
            "{solve56:?}"
        );
        // Two sizes cannot verify a block law.
        let two = fit(&pts(&dims[..2], &[14520, 8670]), &[6, 6], Kind::Other);
        assert!(!matches!(two, Ok(Fit { verified: true, .. })), "{two:?}");
        // At p = 10 the two blocks part (7^2 against 6^2); with p = 3..6
        // both are verified, so that target is refused.
        let dims4 = vec![vec![3, 3], vec![4, 4], vec![5, 5], vec![6, 6]];
        let far = fit(
            &pts(&dims4, &[14520, 8670, 5070, 3630]),
            &[10, 10],
            Kind::Other,
        );
        assert!(matches!(far, Err(FitFailure::Ambiguous(..))), "{far:?}");
    }

    #[test]
    fn papers_wraparound_endpoint() {
        // Wu and Mueller 2012 Fig. 7: 4x4, 5x5, 6x6 give 13, 21, 31; 10x10 gives 91.
        let dims = vec![vec![4, 4], vec![5, 5], vec![6, 6]];
        let f = fit(&pts(&dims, &[13, 21, 31]), &[10, 10], Kind::Peer).unwrap();
        assert_eq!(f.value, 91);
    }

    #[test]
    fn papers_ranklist_fields() {
        // Wu and Mueller 2012 §3.3, group E: <2 x+1 x-2 x x-2 1> at 4x4, 5x5, 6x6.
        let dims = vec![vec![4, 4], vec![5, 5], vec![6, 6]];
        let start = fit(&pts(&dims, &[5, 6, 7]), &[10, 10], Kind::Peer).unwrap();
        let len = fit(&pts(&dims, &[2, 3, 4]), &[10, 10], Kind::Peer).unwrap();
        let stride = fit(&pts(&dims, &[4, 5, 6]), &[10, 10], Kind::Peer).unwrap();
        assert_eq!((start.value, len.value, stride.value), (11, 8, 10));
        assert!(start.verified && len.verified && stride.verified);
    }

    #[test]
    fn torus_wrap_offsets_on_a_non_square_grid() {
        // North wrap of a row-major torus: (ny-1)*nx = P - nx.
        let dims = vec![vec![2, 3], vec![3, 4], vec![4, 4], vec![4, 6]];
        let vals: Vec<i64> = dims.iter().map(|d| ((d[0] - 1) * d[1]) as i64).collect();
        let f = fit(&pts(&dims, &vals), &[8, 16], Kind::Peer).unwrap();
        assert_eq!(f.value, 7 * 16);
    }

    #[test]
    fn strong_scaling_integer_division_is_exact() {
        // 100 points over x ranks: floor(100/x) at 3, 4, 6 -> at 7: 14.
        let dims = vec![vec![3], vec![4], vec![6]];
        let f = fit(&pts(&dims, &[33, 25, 16]), &[7], Kind::Other).unwrap();
        assert_eq!(f.value, 14, "{:?}", f.model);
        // A face of a 3D block: floor(60/y)*floor(60/x).
        let dims = vec![vec![2, 2, 2], vec![3, 3, 3], vec![4, 4, 4]];
        let f = fit(&pts(&dims, &[900, 400, 225]), &[5, 5, 5], Kind::Other).unwrap();
        assert_eq!(f.value, 144);
    }

    #[test]
    fn edge_blocks_are_an_offset_division() {
        // NPB LU class A at an edge: 5*(64/t - 1) values, t = 2, 4, 8.
        let dims = vec![vec![2], vec![4], vec![8]];
        let f = fit(&pts(&dims, &[155, 75, 35]), &[16], Kind::Other).unwrap();
        assert_eq!(f.value, 15, "{:?}", f.model);
        assert!(f.verified);
        assert_eq!(f.model.describe(1), "floor(320/P) - 5");
        // Two widths cannot verify an offset: no law is taken.
        let dims = vec![vec![4], vec![8]];
        assert!(fit(&pts(&dims, &[75, 35]), &[16], Kind::Other).is_err());
    }

    #[test]
    fn square_inputs_cannot_tell_width_from_height() {
        let dims = vec![vec![3, 3], vec![4, 4], vec![5, 5]];
        // The north offset -nx is -3, -4, -5: fine for a square target.
        assert_eq!(
            fit(&pts(&dims, &[-3, -4, -5]), &[6, 6], Kind::Peer)
                .unwrap()
                .value,
            -6
        );
        // For a 4x8 target it could be -4 or -8.
        assert!(matches!(
            fit(&pts(&dims, &[-3, -4, -5]), &[4, 8], Kind::Other),
            Err(FitFailure::Ambiguous(..))
        ));
    }

    #[test]
    fn peers_take_the_row_major_form() {
        // Z wrap of a 3D torus, (nz-1)*ny*nx: four inputs also fit a form
        // linear in every size, which predicts 57 instead of 64 at 5x4x4.
        let dims = vec![vec![3, 3, 3], vec![4, 3, 3], vec![4, 4, 3], vec![4, 4, 4]];
        let vals = [18, 27, 36, 48];
        assert!(matches!(
            fit(&pts(&dims, &vals), &[5, 4, 4], Kind::Other),
            Err(FitFailure::Ambiguous(..))
        ));
        assert_eq!(
            fit(&pts(&dims, &vals), &[5, 4, 4], Kind::Peer)
                .unwrap()
                .value,
            64
        );
    }

    #[test]
    fn a_size_wins_over_a_log_form() {
        // 3, 4, 4 at 3x3, 4x3, 4x4 is y (and also floor(log2(y)) + 2).
        let dims = vec![vec![3, 3], vec![4, 3], vec![4, 4]];
        assert_eq!(
            fit(&pts(&dims, &[3, 4, 4]), &[5, 4], Kind::Other)
                .unwrap()
                .value,
            5
        );
    }

    #[test]
    fn butterfly_steps_follow_log2() {
        // NPB CG's row exchanges: log2(npcols) = ceil(log2(P)/2).
        let dims = vec![vec![8], vec![16], vec![32]];
        let f = fit(&pts(&dims, &[2, 2, 3]), &[64], Kind::Other).unwrap();
        assert_eq!(f.value, 3, "{:?}", f.model);
        assert_eq!(
            fit(&pts(&dims, &[2, 2, 3]), &[1024], Kind::Other)
                .unwrap()
                .value,
            5
        );
        let f = fit(&pts(&dims, &[3, 4, 5]), &[1024], Kind::Other).unwrap();
        assert_eq!(f.value, 10, "{:?}", f.model);
    }

    #[test]
    fn no_model_for_noise() {
        let dims = vec![vec![2], vec![3], vec![4], vec![5]];
        assert_eq!(
            fit(&pts(&dims, &[7, -3, 11, 2]), &[8], Kind::Other).unwrap_err(),
            FitFailure::NoModel
        );
    }

    #[test]
    fn blocks_that_shrink_with_the_square_of_p() {
        // NPB FT class S: 64^3 points, the all-to-all count is N / P^2
        // complex numbers per peer (16384, 4096, 1024 at 4, 8, 16 ranks).
        let dims = vec![vec![4], vec![8], vec![16]];
        let f = fit(&pts(&dims, &[16384, 4096, 1024]), &[32], Kind::Other).unwrap();
        assert_eq!(f.value, 256, "{:?}", f.model);
        assert!(f.verified);
        assert_eq!(f.model.describe(1), "floor(262144/P^2)");
    }

    #[test]
    fn peers_are_whole_multiples_of_the_strides() {
        // NPB MG's wrap-around neighbour in y from y = 0, (y - 1) * x, at
        // 4x2x2, 4x4x2 and 4x4x4 (z is 4 in each): P/4 - x fits as well,
        // with a coefficient no grid displacement has, and gives 28
        // instead of 12 at 8x4x4.
        let dims = vec![vec![4, 2, 2], vec![4, 4, 2], vec![4, 4, 4]];
        let f = fit(&pts(&dims, &[2, 6, 12]), &[8, 4, 4], Kind::Peer).unwrap();
        assert_eq!(f.value, 12, "{:?}", f.model);
    }

    #[test]
    fn counts_are_never_negative() {
        // NPB MG's receive buffer, 2*(256/x + 2)^2 at 2x2x2 .. 4x4x4: as a
        // count, no law that goes negative at 8x4x4 competes with it.
        let dims = vec![vec![2, 2, 2], vec![4, 2, 2], vec![4, 4, 2], vec![4, 4, 4]];
        let vals = [33800, 33800, 33800, 8712];
        assert!(matches!(
            fit(&pts(&dims[2..], &vals[2..]), &[8, 4, 4], Kind::Other),
            Err(FitFailure::Ambiguous(..))
        ));
        let f = fit(&pts(&dims[2..], &vals[2..]), &[8, 4, 4], Kind::Count).unwrap();
        assert_eq!(f.value, 8712, "{:?}", f.model);
        let f = fit(&pts(&dims, &vals), &[8, 4, 4], Kind::Count).unwrap();
        assert_eq!(f.value, 8712, "{:?}", f.model);
    }

    #[test]
    fn peer_coefficients_stay_within_the_reach() {
        // NPB MG's z neighbour from an inner y row, the stride y*x, at
        // 4x4x2, 4x4x4 and 8x4x4: y is 4 wherever y has inner rows, so
        // 4*x fits too and gives 16 instead of 32 at 8x8x4; a stencil of
        // reach 1 has no such coefficient.
        let dims = vec![vec![4, 4, 2], vec![4, 4, 4], vec![8, 4, 4]];
        let p = pts(&dims, &[8, 16, 16]);
        assert!(matches!(
            fit(&p, &[8, 8, 4], Kind::Peer),
            Err(FitFailure::Ambiguous(..))
        ));
        let f = fit_within(&p, &[8, 8, 4], Kind::Peer, Some(1)).unwrap();
        assert_eq!(f.value, 32, "{:?}", f.model);
    }

    #[test]
    fn a_value_of_one_dimension_is_read_where_inputs_repeat_its_size() {
        // NPB MG's receive buffer 2*(256/x + 2)^2 where x is 2, 2, 4, 4:
        // no law of x is verified with two sizes, but x = 4 at the target
        // 8x8x4 is a size two inputs of different y and z had.
        let dims = vec![vec![4, 2, 2], vec![4, 4, 2], vec![4, 4, 4], vec![8, 4, 4]];
        let vals = [33800, 33800, 8712, 8712];
        let f = fit(&pts(&dims, &vals), &[8, 8, 4], Kind::Count).unwrap();
        assert_eq!((f.value, f.verified), (8712, true), "{:?}", f.model);
        // At x = 8 nothing is known.
        let f = fit(&pts(&dims, &vals), &[8, 8, 8], Kind::Count);
        assert!(!matches!(f, Ok(Fit { verified: true, .. })), "{f:?}");
        // One input at the target's size is no evidence that y and z do
        // not matter.
        let f = fit(&pts(&dims[..3], &vals[..3]), &[8, 4, 4], Kind::Count);
        assert!(!matches!(f, Ok(Fit { verified: true, .. })), "{f:?}");
    }

    #[test]
    fn the_smallest_peer_model_is_verified_by_a_third_grid() {
        // The wrap-around peer of a 2D torus's first row, P - x: two of the
        // row-major strides, no constant, so three square grids verify it.
        let dims = vec![vec![3, 3], vec![4, 4], vec![5, 5]];
        let f = fit(&pts(&dims, &[6, 12, 20]), &[6, 6], Kind::Peer).unwrap();
        assert_eq!((f.value, f.verified), (30, true), "{:?}", f.model);
    }
}
