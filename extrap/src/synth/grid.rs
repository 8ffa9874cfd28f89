//! The target grid against the inputs' grids: the order `--dims` is
//! written in, whether it continues the way the inputs grow, and inputs
//! that grow together (every grid one shape scaled, such as n x n x n
//! cubes), which fewer traces pin down.
//!
//! rankscale's grids are row-major, the slowest dimension first, as
//! `MPI_Cart_create` numbers them. Many applications number their ranks
//! the other way, `rank = x + nx*(y + ny*z)`, and write their grid x first
//! (`MPI_Dims_create`'s result read as `nx, ny, nz`): the same grid, its
//! sizes in the other order. A grid given in the wrong order is no error
//! of syntax, so every grid given is held against the grids read from the
//! inputs, and every message that names a grid says in which order.

use super::{Input, Options, axis};
use crate::Error;
use crate::topology::Topology;

/// The order in which the sizes of a target grid (`--dims`) are written.
/// Applications write their grids both ways, and a grid read in the other
/// order sends every message to the wrong peer, so the order is part of
/// what the user says, not a convention to remember.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DimsOrder {
    /// rankscale's own order: the slowest-varying dimension first, the
    /// last one contiguous in rank order (`MPI_Cart_create`'s order; z, y,
    /// x for three dimensions).
    #[default]
    SlowestFirst,
    /// The fastest-varying dimension first (x, y, z): the order of an
    /// application that numbers its ranks `x + nx*(y + ny*z)` and takes
    /// `MPI_Dims_create`'s result as `nx, ny, nz`.
    XFastest,
}

impl DimsOrder {
    /// `sizes` as written in this order, in rankscale's (slowest first).
    pub fn slowest_first(self, sizes: &[u64]) -> Vec<u64> {
        let mut v = sizes.to_vec();
        if self == DimsOrder::XFastest {
            v.reverse();
        }
        v
    }

    /// The order in words, for messages.
    fn words(self) -> &'static str {
        match self {
            DimsOrder::SlowestFirst => "slowest dimension first",
            DimsOrder::XFastest => "x fastest",
        }
    }

    /// The other order.
    fn other(self) -> DimsOrder {
        match self {
            DimsOrder::SlowestFirst => DimsOrder::XFastest,
            DimsOrder::XFastest => DimsOrder::SlowestFirst,
        }
    }

    /// The option that selects this order.
    fn option(self) -> &'static str {
        match self {
            DimsOrder::SlowestFirst => "--dims-order slowest-first",
            DimsOrder::XFastest => "--dims-order x-fastest",
        }
    }
}

/// Sizes joined by `x`, in the order given.
pub(super) fn sizes(dims: &[u64]) -> String {
    dims.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// Each axis named with its size, slowest first (`z=4, y=4, x=3`).
fn named(dims: &[u64]) -> String {
    dims.iter()
        .enumerate()
        .map(|(i, s)| format!("{}={s}", axis(i, dims.len())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One input's grid: its sizes slowest first and mesh or torus per
/// dimension (once where all agree).
fn grid_text(t: &Topology) -> String {
    let kind: Vec<&str> = t
        .wraps
        .iter()
        .map(|&w| if w { "torus" } else { "mesh" })
        .collect();
    let kind = if kind.windows(2).all(|w| w[0] == w[1]) {
        kind.first().copied().unwrap_or("mesh").to_string()
    } else {
        kind.join(" x ")
    };
    format!("{} {kind}", sizes(&t.dims))
}

/// The grids read from the inputs, by file, slowest dimension first and
/// then x fastest, for messages: what a user must see to tell whether
/// rankscale read the grid the application has.
pub(super) fn grids_read(inputs: &[Input], tops: &[Topology]) -> String {
    let each: Vec<String> = inputs
        .iter()
        .zip(tops)
        .map(|(i, t)| format!("{} {}", i.name, grid_text(t)))
        .collect();
    if tops.iter().all(|t| t.dims.len() < 2) {
        return each.join(", ");
    }
    let fast: Vec<String> = tops
        .iter()
        .map(|t| sizes(&DimsOrder::XFastest.slowest_first(&t.dims)))
        .collect();
    format!(
        "{} (slowest dimension first; x fastest: {})",
        each.join(", "),
        fast.join(", ")
    )
}

/// The one shape every input's grid is a multiple of (`[1, 1, 1]` for
/// n x n x n cubes, `[1, 2]` for 2x4, 3x6, 4x8), if there is one: such
/// inputs grow in one parameter, so every law of their sizes is a law of
/// that parameter, and three inputs pin down what `d + 1` pin down for
/// grids that grow one dimension at a time.
pub(super) fn common_shape(tops: &[Topology]) -> Option<Vec<u64>> {
    let shape = |dims: &[u64]| {
        let g = dims.iter().fold(0, |g, &s| gcd(g, s)).max(1);
        dims.iter().map(|&s| s / g).collect::<Vec<u64>>()
    };
    let first = shape(&tops.first()?.dims);
    tops.iter()
        .all(|t| shape(&t.dims) == first)
        .then_some(first)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The grid of `n` ranks that is `shape` scaled, if there is one.
pub(super) fn scaled(shape: &[u64], n: u64) -> Option<Vec<u64>> {
    let cells: u64 = shape.iter().product();
    if cells == 0 || !n.is_multiple_of(cells) {
        return None;
    }
    let d = shape.len() as u32;
    let root = ((n / cells) as f64).powf(1.0 / f64::from(d)).round() as u64;
    (root.saturating_sub(1)..=root + 1)
        .filter(|&k| k >= 1)
        .find(|k| k.checked_pow(d) == Some(n / cells))
        .map(|k| shape.iter().map(|&s| s * k).collect())
}

/// How many inputs a grid of `d` dimensions needs: `d + 1` (Wu and Mueller
/// 2012 §3.3: one more than the unknowns of the row-major stride form),
/// or 3 where every input is one shape scaled (two to fit a law of the
/// one parameter, one to verify it).
pub(super) fn inputs_needed(tops: &[Topology]) -> usize {
    let d = tops.first().map_or(1, |t| t.dims.len());
    if common_shape(tops).is_some() {
        (d + 1).min(3)
    } else {
        d + 1
    }
}

/// Why a grid of `d` dimensions needs `d + 1` inputs, for messages.
pub(super) const N_PLUS_ONE: &str = "n+1 traces for n dimensions, as in ScalaExtrap";

/// The refusal of too few inputs, naming the grids read, whether they
/// grow together and, where they do, the target they cannot reach.
pub(super) fn too_few(inputs: &[Input], tops: &[Topology], target: Option<&[u64]>) -> Error {
    let d = tops.first().map_or(1, |t| t.dims.len());
    let read = grids_read(inputs, tops);
    let (need, why) = match (common_shape(tops), target) {
        (Some(shape), Some(target)) => (
            d + 1,
            format!(
                "{N_PLUS_ONE}; the grids read grow together, one shape ({}) scaled, which 3 \
                 traces pin down, but the target grid {} (slowest dimension first) is not that \
                 shape: {read}",
                sizes(&shape),
                sizes(target)
            ),
        ),
        (Some(shape), None) => (
            inputs_needed(tops),
            format!(
                "grids that grow together, one shape ({}) scaled as these do, need two traces to \
                 fit a law of the one parameter and one to verify it: {read}",
                sizes(&shape)
            ),
        ),
        (None, _) => (
            d + 1,
            format!(
                "{N_PLUS_ONE}; 3 where every input's grid is one shape scaled, as n x n x n \
                 cubes, which the grids read are not: {read}"
            ),
        ),
    };
    Error::TooFewTraces {
        got: inputs.len(),
        need,
        dims: d,
        why,
    }
}

/// With fewer than `d + 1` inputs (inputs that grow together), the target
/// grid must be their shape too: their laws are laws of one parameter and
/// say nothing of a grid that grows its dimensions apart.
pub(super) fn enough_for(inputs: &[Input], tops: &[Topology], dims: &[u64]) -> Result<(), Error> {
    if inputs.len() > dims.len() {
        return Ok(());
    }
    match common_shape(tops) {
        Some(shape) if scaled(&shape, dims.iter().product()).as_deref() == Some(dims) => Ok(()),
        _ => Err(too_few(inputs, tops, Some(dims))),
    }
}

/// The target grid `--dims` gives, slowest dimension first, once it is
/// known to have the inputs' dimensions, to make `opts.ranks` ranks and to
/// continue the way the inputs' grids grow ([`against_growth`]).
pub(super) fn given_dims(
    opts: &Options,
    given: &[u64],
    inputs: &[Input],
    tops: &[Topology],
) -> Result<Vec<u64>, Error> {
    let d = tops.first().map_or(1, |t| t.dims.len());
    let n = opts.ranks;
    if given.len() != d {
        return Err(Error::BadDims(format!(
            "--dims has {} dimension(s) but the traces have a {d}D topology: {}",
            given.len(),
            grids_read(inputs, tops)
        )));
    }
    if given.iter().product::<u64>() != n {
        return Err(Error::BadDims(format!(
            "--dims {} makes {} ranks, not --ranks {n}",
            sizes(given),
            given.iter().product::<u64>()
        )));
    }
    let dims = opts.dims_order.slowest_first(given);
    match against_growth(&dims, tops) {
        None => Ok(dims),
        Some((i, j)) => Err(Error::BadDims(disagreement(
            opts,
            given,
            &dims,
            (i, j),
            inputs,
            tops,
        ))),
    }
}

/// The first pair of dimensions `(i, j)` whose order the target reverses:
/// no input has dimension `i` wider than `j`, some has it narrower, and the
/// target has it wider. Inputs keep the order of their dimensions as they
/// grow (`MPI_Dims_create`'s split, squares, a fixed aspect), so a target
/// that turns it round is a grid written in the other order.
fn against_growth(dims: &[u64], tops: &[Topology]) -> Option<(usize, usize)> {
    let d = dims.len();
    (0..d)
        .flat_map(|i| (0..d).map(move |j| (i, j)))
        .filter(|&(i, j)| i != j)
        .find(|&(i, j)| {
            tops.iter().all(|t| t.dims[i] <= t.dims[j])
                && tops.iter().any(|t| t.dims[i] < t.dims[j])
                && dims[i] > dims[j]
        })
}

/// The message for a `--dims` that turns round the order of dimensions
/// `(i, j)`: the grid as given and as understood, the grids read from the
/// inputs, and the other order where that one continues them.
fn disagreement(
    opts: &Options,
    given: &[u64],
    dims: &[u64],
    (i, j): (usize, usize),
    inputs: &[Input],
    tops: &[Topology],
) -> String {
    let d = dims.len();
    let (a, b) = (axis(i, d), axis(j, d));
    let order = opts.dims_order;
    let other = order.other().slowest_first(given);
    let hint = if against_growth(&other, tops).is_none() {
        format!(
            "; if the sizes are written {}, give {}: the target is then {} ({} slowest first)",
            order.other().words(),
            order.other().option(),
            named(&other),
            sizes(&other)
        )
    } else {
        String::new()
    };
    format!(
        "--dims {} ({}) is the grid {} ({} slowest first), which does not continue the \
         inputs' grids: in every input {a} <= {b}, and {a} < {b} in some, but here {a}={} > \
         {b}={}. The grids read from the inputs: {}{hint}",
        sizes(given),
        order.words(),
        named(dims),
        sizes(dims),
        dims[i],
        dims[j],
        grids_read(inputs, tops)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(dims: &[u64]) -> Topology {
        Topology {
            dims: dims.to_vec(),
            wraps: vec![false; dims.len()],
            reach: vec![1; dims.len()],
            groups: Vec::new(),
            critical: Vec::new(),
            cart: None,
        }
    }

    #[test]
    fn grids_that_grow_together() {
        let cubes = [top(&[2, 2, 2]), top(&[3, 3, 3]), top(&[4, 4, 4])];
        assert_eq!(common_shape(&cubes), Some(vec![1, 1, 1]));
        assert_eq!(inputs_needed(&cubes), 3);
        let wide = [top(&[2, 4]), top(&[3, 6]), top(&[5, 10])];
        assert_eq!(common_shape(&wide), Some(vec![1, 2]));
        let apart = [top(&[2, 2, 3]), top(&[2, 3, 3]), top(&[2, 3, 4])];
        assert_eq!(common_shape(&apart), None);
        assert_eq!(inputs_needed(&apart), 4);
    }

    /// A target that turns round the order the inputs keep is written in
    /// the other order; one that keeps it, or inputs that keep none
    /// (squares), pass.
    #[test]
    fn a_target_must_keep_the_inputs_order() {
        let xfast = [top(&[2, 2, 3]), top(&[2, 3, 3]), top(&[3, 3, 4])];
        assert_eq!(against_growth(&[3, 4, 4], &xfast), None);
        assert_eq!(against_growth(&[4, 4, 3], &xfast), Some((0, 2)));
        assert_eq!(against_growth(&[4, 3, 4], &xfast), Some((0, 1)));
        let squares = [top(&[3, 3]), top(&[4, 4])];
        assert_eq!(against_growth(&[24, 32], &squares), None);
        assert_eq!(against_growth(&[32, 24], &squares), None);
    }

    #[test]
    fn shapes_scale() {
        assert_eq!(scaled(&[1, 1, 1], 125), Some(vec![5, 5, 5]));
        assert_eq!(scaled(&[1, 2], 72), Some(vec![6, 12]));
        assert_eq!(scaled(&[1, 1, 1], 48), None);
        assert_eq!(scaled(&[1, 2], 36), None);
        assert_eq!(DimsOrder::XFastest.slowest_first(&[4, 4, 3]), vec![3, 4, 4]);
    }
}
