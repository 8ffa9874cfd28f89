//! Grids as applications lay them out, without MPI: a 3D 7-point stencil
//! built through the compressor at several sizes, its ranks numbered the
//! two ways applications number them (row-major as `MPI_Cart_create`, or
//! x fastest, `rank = x + nx*(y + ny*z)`, over `MPI_Dims_create`'s
//! `nx, ny, nz`), extrapolated and held against the same generator at the
//! target: grids read in the right order, `--dims` in either order, and
//! cubes from three inputs. (`tests/extrap.rs` does the same with real
//! MPI runs.)

mod common;

use common::events;
use compress::fixtures::transfer;
use extrap::{DimsOrder, Input, Options};
use trace::{Event, Op, TraceFile, Transfer};

/// How the stencil numbers its ranks.
#[derive(Clone, Copy)]
enum Numbering {
    /// Row-major over `(n0, n1, n2)`, `n2` fastest (`MPI_Cart_create`).
    RowMajor,
    /// x fastest over `(nx, ny, nz)`.
    XFastest,
}

/// `MPI_Dims_create(p, 3)` for the sizes these tests use.
fn dims_create(p: u32) -> [u32; 3] {
    match p {
        8 => [2, 2, 2],
        12 => [3, 2, 2],
        18 => [3, 3, 2],
        24 => [4, 3, 2],
        27 => [3, 3, 3],
        36 => [4, 3, 3],
        48 => [4, 4, 3],
        64 => [4, 4, 4],
        125 => [5, 5, 5],
        _ => panic!("no grid for {p}"),
    }
}

/// The rank at coordinates `c` (axis 0 first), or `None` past a mesh's
/// edge.
fn rank_at(c: [i64; 3], n: [u32; 3], torus: bool, how: Numbering) -> Option<u32> {
    let mut w = [0u32; 3];
    for a in 0..3 {
        let s = i64::from(n[a]);
        if !(0..s).contains(&c[a]) && !torus {
            return None;
        }
        w[a] = c[a].rem_euclid(s) as u32;
    }
    Some(match how {
        Numbering::RowMajor => (w[0] * n[1] + w[1]) * n[2] + w[2],
        Numbering::XFastest => w[0] + n[0] * (w[1] + n[1] * w[2]),
    })
}

/// The coordinates of rank `r` (axis 0 first).
fn coords(r: u32, n: [u32; 3], how: Numbering) -> [i64; 3] {
    let c = match how {
        Numbering::RowMajor => [r / (n[1] * n[2]), (r / n[2]) % n[1], r % n[2]],
        Numbering::XFastest => [r % n[0], (r / n[0]) % n[1], r / (n[0] * n[1])],
    };
    c.map(i64::from)
}

/// A 7-point stencil on `p` ranks over `MPI_Dims_create`'s grid: 3
/// iterations of a Send to every existing neighbour (tag: the direction,
/// `2*axis + 1` towards +) and a Recv from each, faces of 12, 8 and 6
/// doubles normal to axes 0, 1 and 2, then an Allreduce.
fn stencil(p: u32, how: Numbering, torus: bool) -> TraceFile {
    let n = dims_create(p);
    let face = [12, 8, 6];
    let ranks = (0..p)
        .map(|r| {
            let at = coords(r, n, how);
            let mut nb = Vec::new();
            for a in 0..3 {
                for s in [0, 1] {
                    let mut c = at;
                    c[a] += if s == 1 { 1 } else { -1 };
                    if let Some(q) = rank_at(c, n, torus, how) {
                        nb.push((a, s, q));
                    }
                }
            }
            let part = |q: u32, tag: usize, a: usize| Transfer {
                count: face[a],
                ..transfer(q, tag as i32)
            };
            let sends: Vec<_> = nb
                .iter()
                .map(|&(a, s, q)| (1, part(q, 2 * a + s, a)))
                .collect();
            let recvs: Vec<_> = nb
                .iter()
                .map(|&(a, s, q)| (2, part(q, 2 * a + 1 - s, a)))
                .collect();
            exchange(r, &sends, &recvs, 3)
        })
        .collect();
    compress::from_rank_events(ranks).expect("a stencil trace")
}

/// Rank `r`'s events of a halo exchange: 3 iterations of a Send per
/// `sends` entry (call site, transfer), a Recv per `recvs` entry, then an
/// Allreduce from site `reduce`.
fn exchange(
    r: u32,
    sends: &[(u64, Transfer)],
    recvs: &[(u64, Transfer)],
    reduce: u64,
) -> Vec<Event> {
    let with = |op: Op, site: u64| {
        let mut e = Event::new(op);
        e.site = site;
        e.comm_rank = r as i32;
        e
    };
    let mut events = vec![Event::new(Op::Init)];
    for _ in 0..3 {
        for &(site, t) in sends {
            let mut e = with(Op::Send, site);
            e.send = Some(t);
            events.push(e);
        }
        for &(site, t) in recvs {
            let mut e = with(Op::Recv, site);
            e.recv = Some(t);
            events.push(e);
        }
        let mut e = with(Op::Allreduce, reduce);
        e.send = Some(Transfer::collective(1, 8));
        events.push(e);
    }
    events.push(Event::new(Op::Finalize));
    events
}

fn inputs(sizes: &[u32], how: Numbering, torus: bool) -> Vec<Input> {
    sizes
        .iter()
        .map(|&p| Input {
            name: format!("st.{p}"),
            file: stencil(p, how, torus),
        })
        .collect()
}

/// Every rank of `x` equals the generator's at its size.
fn same_as(x: &TraceFile, truth: &TraceFile) {
    assert_eq!(x.meta.world_size, truth.meta.world_size);
    for r in 0..truth.meta.world_size {
        assert_eq!(events(x, r), events(truth, r), "rank {r}");
    }
}

/// 12, 18, 24 and 36 ranks numbered x fastest over `MPI_Dims_create`'s
/// grid are the row-major grids 2x2x3 to 3x3x4: read so (the 12- and
/// 18-rank grids have one rank per position class, where any order
/// explains the peers), continued to 3x4x4 at 48 ranks, and equal there
/// to the generator, with `--dims 4x4x3` written x fastest too; written
/// slowest first it is refused, naming the grids read and the order that
/// fits.
#[test]
fn x_fastest_grids_extrapolate_in_their_order() {
    let ins = inputs(&[12, 18, 24, 36], Numbering::XFastest, false);
    for (i, want) in [[2, 2, 3], [2, 3, 3], [2, 3, 4], [3, 3, 4]]
        .iter()
        .enumerate()
    {
        assert_eq!(extrap::detect(&ins[i].file.trace).unwrap().dims, want);
    }
    let truth = stencil(48, Numbering::XFastest, false);
    let x = extrap::extrapolate(&ins, &Options::new(48)).unwrap();
    assert_eq!(x.report.dims, vec![3, 4, 4]);
    same_as(&x.file, &truth);
    // The inner planes of z exist at 36 ranks alone.
    assert!(
        x.report.notes.iter().any(|n| n.contains("rest on st.36")),
        "{:?}",
        x.report.notes
    );
    let given = Options {
        dims: Some(vec![4, 4, 3]),
        dims_order: DimsOrder::XFastest,
        ..Options::new(48)
    };
    same_as(&extrap::extrapolate(&ins, &given).unwrap().file, &truth);
    let wrong = Options {
        dims: Some(vec![4, 4, 3]),
        ..Options::new(48)
    };
    let e = extrap::extrapolate(&ins, &wrong).err().unwrap().to_string();
    for part in [
        "--dims 4x4x3 (slowest dimension first) is the grid z=4, y=4, x=3",
        "in every input z <= x",
        "st.12 2x2x3 mesh, st.18 2x3x3 mesh, st.24 2x3x4 mesh, st.36 3x3x4 mesh",
        "x fastest: 3x2x2, 3x3x2, 4x3x2, 4x3x3",
        "give --dims-order x-fastest: the target is then z=3, y=4, x=4",
    ] {
        assert!(e.contains(part), "{part:?} not in: {e}");
    }
}

/// Cubes grow in one parameter: 8, 27 and 64 ranks (mesh and torus) give
/// 125 equal to the generator, where a grid that grows its dimensions
/// apart needs four inputs; a non-cube target from them is refused, and
/// so are three inputs that do not grow together, each naming the grids.
#[test]
fn cubes_extrapolate_from_three_inputs() {
    for torus in [false, true] {
        let ins = inputs(&[8, 27, 64], Numbering::RowMajor, torus);
        let x = extrap::extrapolate(&ins, &Options::new(125)).unwrap();
        assert_eq!(x.report.dims, vec![5, 5, 5]);
        same_as(&x.file, &stencil(125, Numbering::RowMajor, torus));
    }
    let ins = inputs(&[8, 27, 64], Numbering::RowMajor, false);
    let o = Options {
        dims: Some(vec![5, 5, 6]),
        ..Options::new(150)
    };
    let e = extrap::extrapolate(&ins, &o).err().unwrap().to_string();
    assert!(e.contains("needs at least 4"), "{e}");
    assert!(e.contains("one shape (1x1x1) scaled"), "{e}");
    assert!(e.contains("5x5x6"), "{e}");
    let ins = inputs(&[18, 24, 36], Numbering::XFastest, false);
    let e = extrap::extrapolate(&ins, &Options::new(48))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("3 trace(s) given"), "{e}");
    assert!(e.contains("needs at least 4"), "{e}");
    assert!(
        e.contains("st.18 2x3x3 mesh, st.24 2x3x4 mesh, st.36 3x3x4 mesh"),
        "{e}"
    );
}

/// NPB LU's grid as `(y, x)` for its rank counts: x doubles first.
fn lu_dims(p: u32) -> [u32; 2] {
    match p {
        4 => [2, 2],
        8 => [2, 4],
        16 => [4, 4],
        32 => [4, 8],
        64 => [8, 8],
        _ => panic!("no grid for {p}"),
    }
}

/// A 2D exchange shaped as NPB LU's on a 33 x 33 problem (row-major, x
/// fastest, a mesh): 3 iterations of a Send to every existing neighbour
/// and a Recv from each, whose count across an edge normal to an axis of
/// `n` ranks is `5 * (floor(33 / n) - 1)` (LU W's measured 75, 35 and 15
/// at 2, 4 and 8 ranks), then an Allreduce.
fn lu_like(p: u32) -> TraceFile {
    let n = lu_dims(p);
    let count = |a: usize| 5 * (33 / i64::from(n[a]) - 1);
    let ranks = (0..p)
        .map(|r| {
            let at = [i64::from(r / n[1]), i64::from(r % n[1])];
            let mut nb = Vec::new();
            for a in 0..2 {
                for s in [-1i64, 1] {
                    let mut c = at;
                    c[a] += s;
                    if (0..i64::from(n[a])).contains(&c[a]) {
                        nb.push((a, s, (c[0] * i64::from(n[1]) + c[1]) as u32));
                    }
                }
            }
            let part = |q: u32, a: usize, tag: i32| Transfer {
                count: count(a),
                ..transfer(q, tag)
            };
            let sends: Vec<_> = nb
                .iter()
                .map(|&(a, s, q)| (1 + a as u64, part(q, a, (2 * a) as i32 + i32::from(s > 0))))
                .collect();
            let recvs: Vec<_> = nb
                .iter()
                .map(|&(a, s, q)| (3 + a as u64, part(q, a, (2 * a) as i32 + i32::from(s < 0))))
                .collect();
            exchange(r, &sends, &recvs, 5)
        })
        .collect();
    compress::from_rank_events(ranks).expect("an LU-like trace")
}

/// From 8, 16 and 32 ranks (2x4, 4x4, 4x8) the edge counts normal to y
/// show two sizes of y (75 at 2, 35 at 4), and those normal to x two of x
/// (35 at 4, 15 at 8): alone, neither verifies a law with an offset, and
/// the y counts are refused, naming the reason. Pooled, the two agree at
/// 4 and verify `floor(160/t) - 5` on 2, 4 and 8, which gives 64 ranks
/// (8x8) equal to the generator there. From 4, 8 and 16 ranks to 32 the x
/// counts show 2 and 4 only, as do the y counts: refused, with the reason.
#[test]
fn counts_of_one_dimension_verify_with_anothers_sizes() {
    let ins = |sizes: &[u32]| -> Vec<Input> {
        sizes
            .iter()
            .map(|&p| Input {
                name: format!("lu.{p}"),
                file: lu_like(p),
            })
            .collect()
    };
    let x = extrap::extrapolate(&ins(&[8, 16, 32]), &Options::new(64)).unwrap();
    assert_eq!(x.report.dims, vec![8, 8]);
    same_as(&x.file, &lu_like(64));
    let pooled: Vec<&extrap::FieldFit> = x
        .report
        .fields
        .iter()
        .filter(|f| f.model.contains("verified on the sizes of"))
        .collect();
    assert!(
        !pooled.is_empty() && pooled.iter().all(|f| f.verified && f.target == 15),
        "{:#?}",
        x.report.fields
    );
    let e = extrap::extrapolate(&ins(&[4, 8, 16]), &Options::new(32))
        .err()
        .unwrap()
        .to_string();
    for part in [
        "the values follow the grid's x size alone (75 at x=2, 35 at x=4)",
        "the inputs show 2 sizes of it",
        "none has the target's x=8",
    ] {
        assert!(e.contains(part), "{part:?} not in: {e}");
    }
}
