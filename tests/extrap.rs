//! `rankscale extrap` against real traces at the target size.
//!
//! Each case traces a real MPI program at 3 or 4 small sizes and at a
//! larger target size that is not an input, extrapolates the small traces to
//! the target, and compares every rank's expanded event sequence of the
//! extrapolated trace with that of the real one, line by line in the raw-log
//! grammar (`rankscale show --expand`). Nothing is ignored: operations,
//! peers, tags, counts, datatype sizes, communicators, request ids and
//! completion lists must all be equal. Timing is compared separately, on
//! `sleeplaw`, whose computation follows known laws of P.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use extrap::{Input, Method, Options};
use trace::{MNode, Op, TraceFile};

/// Ranks in a grid written like `4x4`.
fn ranks_of(grid: &str) -> usize {
    grid.split('x')
        .map(|s| s.parse::<usize>().unwrap())
        .product()
}

/// Traces `program args` on `np` ranks into `out`.
fn trace(imp: &str, np: usize, program_name: &str, args: &[String], out: &Path) {
    let mut o = untraced();
    o.traced = true;
    o.timeout_s = 300;
    o.env.push(("RANKSCALE_TRACE", out.display().to_string()));
    if imp == "mpich" {
        o.env.push(("RANKSCALE_YIELD", "1".into()));
    }
    let job = mpirun(imp, np, &program(imp, program_name), args, &o);
    assert_eq!(
        job.code,
        Some(0),
        "{imp} {program_name} {args:?}: {}",
        job.stderr
    );
}

/// Runs `rankscale extrap` and returns its stdout, failing on error.
fn extrap(out: &Path, ranks: usize, inputs: &[PathBuf], extra: &[&str]) -> String {
    let mut args: Vec<String> = vec![
        "extrap".into(),
        "-o".into(),
        out.display().to_string(),
        "--ranks".into(),
        ranks.to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rankscale(&a);
    assert!(
        o.status.success(),
        "rankscale {}: {}",
        args.join(" "),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// Traces `program` at every input grid and at `target`, extrapolates the
/// inputs to the target and checks that every rank's expansion is the
/// real one's. `args` makes the program's arguments for a grid.
fn exact(
    imp: &str,
    tag: &str,
    program_name: &str,
    args: &dyn Fn(&str) -> Vec<String>,
    inputs: &[&str],
    target: &str,
) {
    let (files, real) = trace_all(imp, tag, program_name, args, inputs, target);
    let out = real.with_file_name(format!("{tag}.extrap.trace"));
    let report = extrap(&out, ranks_of(target), &files, &[]);
    same_ranks(imp, tag, &out, &real, &report);
}

/// Traces `program` at every input grid and at `target` (`args` makes its
/// arguments for a grid): the inputs' files and the real one's.
fn trace_all(
    imp: &str,
    tag: &str,
    program_name: &str,
    args: &dyn Fn(&str) -> Vec<String>,
    inputs: &[&str],
    target: &str,
) -> (Vec<PathBuf>, PathBuf) {
    let dir = scratch(tag);
    let mut files = Vec::new();
    for g in inputs.iter().chain([&target]) {
        let f = dir.join(format!("{tag}.{g}.trace"));
        trace(imp, ranks_of(g), program_name, &args(g), &f);
        files.push(f);
    }
    let real = files.pop().unwrap();
    (files, real)
}

/// Every rank's expansion of the extrapolated trace `out` is the real
/// trace's, every field; `report` is extrap's output, shown on failure.
fn same_ranks(imp: &str, tag: &str, out: &Path, real: &Path, report: &str) {
    let (x, r) = (
        TraceFile::read(out).unwrap(),
        TraceFile::read(real).unwrap(),
    );
    let n = r.meta.world_size as usize;
    assert_eq!(x.meta.world_size as usize, n);
    for rank in 0..n as u32 {
        let (a, b) = (expansion(&x, rank), expansion(&r, rank));
        if a != b {
            let i = a
                .iter()
                .zip(&b)
                .position(|(p, q)| p != q)
                .unwrap_or(a.len().min(b.len()));
            panic!(
                "{imp} {tag}: rank {rank} of the extrapolated {n}-rank trace differs from the \
                 real one at event {i} ({} vs {} events):\n  extrapolated: {}\n  real:         \
                 {}\n{report}",
                a.len(),
                b.len(),
                a.get(i).map_or("<end>", String::as_str),
                b.get(i).map_or("<end>", String::as_str),
            );
        }
    }
    eprintln!("{imp} {tag}: {n} ranks identical to the real trace");
}

/// The stencil's arguments for a grid: `dims`-D, mesh or torus, strong or
/// weak scaling.
fn stencil_args(d: usize, topo: &str, weak: bool, n: u32) -> impl Fn(&str) -> Vec<String> {
    let topo = topo.to_string();
    move |g: &str| {
        let mut a: Vec<String> = [
            "-d",
            &d.to_string(),
            "-p",
            g,
            "-t",
            &topo,
            "-i",
            "6",
            "-k",
            "3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(["-n".into(), n.to_string()]);
        if weak {
            a.extend(["-s".into(), "weak".into()]);
        }
        a
    }
}

#[test]
fn stencils_1d_extrapolate_exactly() {
    for imp in mpis() {
        for topo in ["mesh", "torus"] {
            // Strong: 840 points split over 3, 4, 5 and 8 ranks, evenly.
            let a = stencil_args(1, topo, false, 840);
            exact(
                imp,
                &format!("s1{topo}"),
                "stencil",
                &a,
                &["3", "4", "5"],
                "8",
            );
            let a = stencil_args(1, topo, true, 16);
            exact(
                imp,
                &format!("w1{topo}"),
                "stencil",
                &a,
                &["3", "4", "5"],
                "8",
            );
        }
    }
}

#[test]
fn stencils_2d_extrapolate_exactly() {
    for imp in mpis() {
        for topo in ["mesh", "torus"] {
            // Strong: 120 points per dimension, even over 2 to 6 ranks.
            let a = stencil_args(2, topo, false, 120);
            let inputs = ["2x2", "3x3", "4x4", "5x5"];
            exact(imp, &format!("s2{topo}"), "stencil", &a, &inputs, "6x6");
            let a = stencil_args(2, topo, true, 8);
            exact(imp, &format!("w2{topo}"), "stencil", &a, &inputs, "6x6");
        }
        // With a Cartesian communicator, on grids that are not square.
        let cart = |g: &str| {
            let mut a = stencil_args(2, "torus", true, 8)(g);
            a.push("-c".into());
            a
        };
        exact(
            imp,
            "c2torus",
            "stencil",
            &cart,
            &["3x3", "4x3", "4x4"],
            "5x4",
        );
    }
}

#[test]
fn stencils_3d_extrapolate_exactly() {
    // A 3D topology needs four inputs, and the interior class needs every
    // dimension >= 3 in at least two of them.
    let inputs = ["3x3x3", "4x3x3", "4x4x3", "4x4x4"];
    for imp in mpis() {
        for topo in ["mesh", "torus"] {
            let a = stencil_args(3, topo, false, 60);
            exact(imp, &format!("s3{topo}"), "stencil", &a, &inputs, "5x4x4");
            let a = stencil_args(3, topo, true, 4);
            exact(imp, &format!("w3{topo}"), "stencil", &a, &inputs, "5x4x4");
        }
    }
}

/// Stencils whose faces travel by one neighbourhood collective on their
/// Cartesian communicator (issue 39): `MPI_Neighbor_alltoall` in 2D and
/// 3D tori, traced at 3 and 4 grids, extrapolated to a larger one and
/// equal rank by rank to a real trace there, as the point-to-point
/// stencils are.
#[test]
fn neighbourhood_stencils_extrapolate_exactly() {
    let with = |d: usize, n: u32, mode: &'static str| {
        move |g: &str| {
            let mut a = stencil_args(d, "torus", true, n)(g);
            a.extend(["-x".to_string(), mode.to_string()]);
            a
        }
    };
    for imp in mpis() {
        exact(
            imp,
            "n2alltoall",
            "stencil",
            &with(2, 8, "alltoall"),
            &["3x3", "4x3", "4x4"],
            "5x4",
        );
        exact(
            imp,
            "n3alltoall",
            "stencil",
            &with(3, 4, "alltoall"),
            &["3x3x3", "4x3x3", "4x4x3", "4x4x4"],
            "5x4x4",
        );
    }
}

/// `grid3d`'s arguments (the grid is `MPI_Dims_create`'s at any size):
/// 4 iterations, an Allreduce every second, and `extra`.
fn grid3d_args(extra: &'static [&'static str]) -> impl Fn(&str) -> Vec<String> {
    move |_: &str| {
        ["-i", "4", "-k", "2"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    }
}

/// A code that runs on cubes only (`grid3d -c`: `MPI_Dims_create`,
/// `MPI_Cart_create`, `MPI_Cart_shift`), as a mesh and as a torus, traced
/// at 8, 27 and 64 ranks: every dimension grows with the others, so one
/// parameter decides the grid and three inputs fit and verify its laws.
/// Extrapolated to 125 ranks, each rank equal to a real 125-rank run.
#[test]
fn cubes_extrapolate_from_three_inputs() {
    for imp in mpis() {
        for (tag, extra) in [
            ("cube-mesh", &["-c", "-t", "mesh"][..]),
            ("cube-torus", &["-c", "-t", "torus"][..]),
        ] {
            let cubes = ["2x2x2", "3x3x3", "4x4x4"];
            exact(imp, tag, "grid3d", &grid3d_args(extra), &cubes, "5x5x5");
        }
    }
}

/// A 3D stencil whose ranks are numbered x fastest over
/// `MPI_Dims_create`'s `nx, ny, nz` (`grid3d -o xfast`, with the Cartesian
/// communicator `MPI_Cart_create` makes of those sizes, which does not
/// describe the numbering), traced at 12, 18, 24 and 36 ranks: read as the
/// row-major 2x2x3 to 3x3x4, extrapolated to 48 ranks (3x4x4) without
/// `--dims` and with the application's own `--dims 4x4x3 --dims-order
/// x-fastest`, each rank equal to a real 48-rank run. The same `--dims` in
/// rankscale's order is refused, naming the grids read and the target
/// understood, and so are three inputs that do not grow together.
#[test]
fn x_fastest_grids_extrapolate_in_their_order() {
    for imp in mpis() {
        let tag = "xfast";
        let args = grid3d_args(&["-o", "xfast", "-g"]);
        let sizes = ["12", "18", "24", "36"];
        let (files, real) = trace_all(imp, tag, "grid3d", &args, &sizes, "48");
        for (i, want) in ["2x2x3", "2x3x3", "2x3x4", "3x3x4"].iter().enumerate() {
            let o = rankscale(&["topology", files[i].to_str().unwrap()]);
            let first = text(&o.stdout);
            assert!(first.contains(&format!("3D grid {want} ")), "{first}");
        }
        let out = real.with_file_name("xfast.extrap.trace");
        for extra in [&[][..], &["--dims", "4x4x3", "--dims-order", "x-fastest"]] {
            let report = extrap(&out, 48, &files, extra);
            assert!(report.contains("as 3x4x4 (slowest dimension first; x fastest 4x4x3)"));
            same_ranks(imp, &format!("{tag} {extra:?}"), &out, &real, &report);
        }
        let _ = std::fs::remove_file(&out);
        let o = out.to_str().unwrap();
        let f: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
        let mut a = vec!["-o", o, "--ranks", "48", "--dims", "4x4x3"];
        a.extend(&f);
        let wrong = extrap_fails(&a);
        for part in [
            "--dims 4x4x3 (slowest dimension first) is the grid z=4, y=4, x=3",
            "2x2x3 mesh",
            "3x3x4 mesh (slowest dimension first; x fastest: 3x2x2, 3x3x2, 4x3x2, 4x3x3)",
            "give --dims-order x-fastest: the target is then z=3, y=4, x=4",
        ] {
            assert!(wrong.contains(part), "{part:?} not in: {wrong}");
        }
        let few = extrap_fails(&["-o", o, "--ranks", "48", f[1], f[2], f[3]]);
        assert!(few.contains("needs at least 4"), "{few}");
        assert!(few.contains("2x3x3 mesh"), "{few}");
        assert!(!out.exists(), "no output on refusal");
        eprintln!("{imp} {tag}: --dims 4x4x3 slowest first: {}", wrong.trim());
        eprintln!("{imp} {tag}: 18, 24, 36 ranks alone: {}", few.trim());
    }
}

#[test]
fn wavefront_extrapolates_exactly() {
    for imp in mpis() {
        let a = |g: &str| vec!["-p".to_string(), g.to_string(), "-i".into(), "3".into()];
        exact(
            imp,
            "wavefront",
            "wavefront",
            &a,
            &["2x2", "3x3", "4x4", "5x5"],
            "6x6",
        );
    }
}

/// `rma_halo`: a 2D periodic halo exchange written with `MPI_Put` in
/// `MPI_Win_fence` epochs (issue 36), its targets and displacements
/// continued like point-to-point peers: traced at 2x2, 3x3 and 4x4,
/// extrapolated to 5x5 and compared with a real 25-rank run, rank by rank.
#[test]
fn one_sided_halo_extrapolates_exactly() {
    for imp in mpis() {
        let a = |_: &str| vec!["10".to_string(), "8".to_string()];
        exact(imp, "rma_halo", "rma_halo", &a, &["4", "9", "16"], "25");
    }
}

/// `io_checkpoint`: a checkpoint writer with MPI-IO (issue 36). Every 4th
/// of 12 iterations each rank writes its block of 256 ints with
/// `MPI_File_write_at_all` at byte `rank * 1024` of one file; at the end
/// rank 0 reads the whole file back (`P * 256` ints) and deletes it. The
/// offsets continue as "rank r writes block r" (stored relative to the
/// rank's block), the read's count as a law of P; traced at 4, 8 and 16
/// ranks, extrapolated to 32 and compared with a real 32-rank run, rank by
/// rank. The file lives in the test's scratch directory, under one path
/// for every size (its hash is part of each `File_open`).
#[test]
fn checkpoint_writer_extrapolates_exactly() {
    for imp in mpis() {
        let file = scratch(&format!("{imp}-io_checkpoint-file")).join("ckpt.dat");
        let a = |_: &str| {
            ["12", "4", "256", &file.display().to_string()]
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        exact(
            imp,
            "io_checkpoint",
            "io_checkpoint",
            &a,
            &["4", "8", "16"],
            "32",
        );
        assert!(!file.exists(), "{imp}: the program deletes its file");
    }
}

/// The collectives program: every blocking and nonblocking collective,
/// roots that rotate (rank `it` is the root in iteration `it`, with
/// `MPI_IN_PLACE` there), counts of `rank % 2`, `rank % 3` and `rank % 4`
/// plus one, and per-peer lists of P entries with periodic counts and
/// datatype sizes. Its ranks split into the two root ranks and twelve
/// residue classes of the rest (lcm of 2, 3 and 4), and its lists are
/// continued by their period; traced at 8 to 24 ranks, extrapolated to 32.
#[test]
fn collectives_extrapolate_exactly() {
    for imp in mpis() {
        let a = |_: &str| vec!["2".to_string()];
        exact(
            imp,
            "collectives",
            "collectives",
            &a,
            &["8", "12", "16", "20", "24"],
            "32",
        );
    }
}

/// `mglike`: a 3D torus halo exchange (the dominant pattern) plus a minor,
/// rank-dependent one, as in NPB MG: every 4th iteration the ranks at
/// y = z = 0 with x % 4 == 0 send to the rank two cells further in x. No
/// grid position decides it, so plain extrapolation refuses; lossy mode,
/// with or without a snippet of the dominant iteration, must drop exactly
/// the minor calls (2 iterations x one send and one receive = 4 events per
/// input here), report that share, and produce, for every rank, exactly the
/// real trace of the program run without the minor pattern (`-x 0`).
#[test]
fn lossy_mode_keeps_the_dominant_pattern() {
    let inputs = ["3x3x3", "4x3x3", "4x4x3", "4x4x4"];
    let target = "5x4x4";
    for imp in mpis() {
        let dir = scratch("mglike");
        let args = |g: &str, x: &str| -> Vec<String> {
            ["-p", g, "-i", "8", "-x", x]
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        let mut files = Vec::new();
        for g in inputs {
            let f = dir.join(format!("mg.{g}.trace"));
            trace(imp, ranks_of(g), "mglike", &args(g, "1"), &f);
            files.push(f);
        }
        let truth = dir.join("mg0.trace");
        trace(imp, ranks_of(target), "mglike", &args(target, "0"), &truth);
        let truth = TraceFile::read(&truth).unwrap();
        let out = dir.join("x.trace");
        let n = ranks_of(target);
        // Without lossy mode: a clear refusal.
        let mut a: Vec<String> = vec!["extrap".into(), "-o".into(), out.display().to_string()];
        a.extend(["--ranks".into(), n.to_string()]);
        a.extend(files.iter().map(|f| f.display().to_string()));
        let o = rankscale(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
        assert!(
            text(&o.stderr).contains("explains the communication"),
            "{}",
            text(&o.stderr)
        );
        let snippet = dir.join("halo.snippet");
        let mut sn = String::from("# one iteration of the halo exchange\n");
        sn.push_str(&"Irecv\n".repeat(6));
        sn.push_str(&"Isend\n".repeat(6));
        sn.push_str("Waitall\n");
        std::fs::write(&snippet, sn).unwrap();
        let snippet_arg = format!("--snippet={}", snippet.display());
        for mode in ["--lossy", snippet_arg.as_str()] {
            let report = extrap(&out, n, &files, &[mode]);
            let shares: Vec<(u64, u64)> = report
                .lines()
                .filter_map(|l| l.strip_prefix("lossy: dropped "))
                .map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w[0].parse().unwrap(), w[2].parse().unwrap())
                })
                .collect();
            assert_eq!(shares.len(), inputs.len(), "{report}");
            for (d, e) in &shares {
                assert_eq!(*d, 4, "{imp} {mode}: {report}");
                assert!((*d as f64) <= 0.05 * *e as f64);
            }
            let x = TraceFile::read(&out).unwrap();
            for rank in 0..n as u32 {
                assert_eq!(
                    expansion(&x, rank),
                    expansion(&truth, rank),
                    "{imp} {mode}: rank {rank} differs from the run without the minor pattern"
                );
            }
            eprintln!("{imp} {mode}: {n} ranks equal the dominant pattern; dropped {shares:?}");
        }
        // A limit below what the minor pattern costs (4 events of about
        // 3,000 to 14,000): refused, and nothing written.
        let _ = std::fs::remove_file(&out);
        let mut a: Vec<String> = vec!["-o".into(), out.display().to_string()];
        a.extend(["--ranks".into(), n.to_string(), "--lossy".into()]);
        a.extend(["--max-drop".into(), "0.01".into()]);
        a.extend(files.iter().map(|f| f.display().to_string()));
        let err = extrap_fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(err.contains("more than --max-drop 0.01 %"), "{err}");
        assert!(err.contains("would drop 4 of"), "{err}");
        assert!(!out.exists(), "no output on refusal");
    }
}

/// `cglike`: NPB CG's pattern (row partners at distance 2^k, k <
/// log2(npcols), and the transpose partner), which no grid position
/// decides. Through the shipped spec `extrap/specs/npb-cg.toml` the peers
/// become symbols, the loop over k grows from 2 to 3 steps (fitted as
/// ceil(log2(P)/2)), and the 64-rank result must equal a real 64-rank run
/// for every rank. Without the plugin the tool refuses clearly.
#[test]
fn cg_like_extrapolates_through_the_plugin_spec() {
    let spec = root().join("extrap/specs/npb-cg.toml");
    let spec_arg = format!("--plugin={}", spec.display());
    for imp in mpis() {
        let dir = scratch("cglike");
        let args = vec!["-i".to_string(), "4".to_string()];
        let mut files = Vec::new();
        for np in [8, 16, 32] {
            let f = dir.join(format!("cg.{np}.trace"));
            trace(imp, np, "cglike", &args, &f);
            files.push(f);
        }
        let real = dir.join("cg.64.trace");
        trace(imp, 64, "cglike", &args, &real);
        let out = dir.join("x.trace");
        let mut a: Vec<String> = vec!["extrap".into(), "-o".into(), out.display().to_string()];
        a.extend(["--ranks".into(), "64".into()]);
        a.extend(files.iter().map(|f| f.display().to_string()));
        let o = rankscale(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
        let report = extrap(&out, 64, &files, &[&spec_arg]);
        assert!(report.contains("ceil(log2(P)/2) = 3"), "{report}");
        let (x, r) = (
            TraceFile::read(&out).unwrap(),
            TraceFile::read(&real).unwrap(),
        );
        for rank in 0..64 {
            assert_eq!(
                expansion(&x, rank),
                expansion(&r, rank),
                "{imp}: rank {rank}"
            );
        }
        eprintln!("{imp} cglike: 64 ranks identical to the real trace through the plugin");
    }
}

/// The mean steady-state computation time before `op`, over all its nodes.
fn mean_compute_before(file: &TraceFile, op: Op) -> f64 {
    fn walk(nodes: &[MNode], op: Op, acc: &mut (f64, f64)) {
        for n in nodes {
            match n {
                MNode::Event(e) if e.shape().op() == op => {
                    let s = e.timing().steady().compute().stats();
                    acc.0 += s.mean() * s.count() as f64;
                    acc.1 += s.count() as f64;
                }
                MNode::Loop(l) => walk(l.body(), op, acc),
                _ => {}
            }
        }
    }
    let mut acc = (0.0, 0.0);
    walk(file.trace.nodes(), op, &mut acc);
    assert!(acc.1 > 0.0, "no steady {op:?} in the trace");
    acc.0 / acc.1
}

/// `sleeplaw` sleeps t(P) before every Allreduce: constant, linear, 1/P,
/// 1/P + c and log2 P. Traced at 3, 6, 12 and 24 ranks and extrapolated to 48,
/// the mean computation time before the Allreduce must be within 10 % of a
/// real run at 48 ranks with `--timing auto` (see the bound's comment). The table of every method's
/// law and error is printed (it is the table of docs/EXTRAPOLATION.md).
#[test]
fn extrapolated_timing_follows_the_law() {
    let sizes = [3usize, 6, 12, 24];
    let target = 48usize;
    for imp in mpis() {
        let dir = scratch("sleeplaw");
        let mut table = Vec::new();
        for law in ["const", "linear", "inverse", "inverse_const", "logp"] {
            let args: Vec<String> = [law, "8", "16000"].iter().map(|s| s.to_string()).collect();
            let mut inputs = Vec::new();
            for &np in &sizes {
                let f = dir.join(format!("{law}.{np}.trace"));
                trace(imp, np, "sleeplaw", &args, &f);
                inputs.push(Input {
                    name: f.display().to_string(),
                    file: TraceFile::read(&f).unwrap(),
                });
            }
            let real = dir.join(format!("{law}.{target}.trace"));
            trace(imp, target, "sleeplaw", &args, &real);
            let truth = mean_compute_before(&TraceFile::read(&real).unwrap(), Op::Allreduce);
            let mut auto = None;
            for (name, method) in [
                ("paper", Method::Paper),
                ("pmnf", Method::Pmnf),
                ("auto", Method::Auto),
            ] {
                let opts = Options {
                    timing: method,
                    ..Options::new(target as u64)
                };
                let x = extrap::extrapolate(&inputs, &opts).unwrap();
                let got = mean_compute_before(&x.file, Op::Allreduce);
                let err = (got - truth).abs() / truth;
                let fit = x
                    .report
                    .timing
                    .iter()
                    .find(|t| t.event.starts_with("Allreduce"))
                    .map_or("?".to_string(), |t| format!("{} ({})", t.law, t.method));
                table.push(format!(
                    "| {law} | {name} | {fit} | {:.0} us | {:.0} us | {:.1} % |",
                    got / 1e3,
                    truth / 1e3,
                    err * 100.0
                ));
                if method == Method::Auto {
                    auto = Some((got, fit));
                }
            }
            // Sleeps can only grow (a descheduled rank wakes late), in the
            // real run and in the inputs alike: the law may fall short of
            // the real run (seen: 5.0 % on MPICH's inverse law in one CI
            // run; 10.2 % on MPICH's constant law, whose real run overslept)
            // or exceed it (seen: 5.3 % on Open MPI's, whose inputs at 24
            // ranks on two cores overslept). Within 10 % of the real runs
            // (one more when the first misses: the machine's spread is not
            // the law's error); a wrong law misses by tens of percent (the
            // paper's logp fit: 43 %).
            let (got, fit) = auto.expect("the auto method ran");
            let again = || {
                let f = dir.join(format!("{law}.{target}.again.trace"));
                trace(imp, target, "sleeplaw", &args, &f);
                mean_compute_before(&TraceFile::read(&f).unwrap(), Op::Allreduce)
            };
            let (close, runs) = within_real_runs(got, 0.10, truth, again);
            assert!(
                close,
                "{imp} {law}: extrapolated {got:.0} ns, real runs {runs:.0?} ns ({fit})"
            );
        }
        eprintln!("{imp}: sleeplaw {sizes:?} -> {target} ranks, mean compute before Allreduce");
        eprintln!("| law | method | fitted law (chosen by) | extrapolated | real | error |");
        eprintln!("|---|---|---|---|---|---|");
        for row in &table {
            eprintln!("{row}");
        }
    }
}

/// Runs `rankscale extrap` expecting failure; returns stderr.
fn extrap_fails(args: &[&str]) -> String {
    let mut a = vec!["extrap"];
    a.extend(args);
    let o = rankscale(&a);
    let err = text(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(1),
        "rankscale {a:?} should fail: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("error:"), "{err}");
    err
}

#[test]
fn bad_input_gives_clear_errors() {
    let imp = "openmpi";
    let dir = scratch("extrap-bad");
    let mut st = Vec::new();
    let args = stencil_args(2, "mesh", true, 8);
    for g in ["2x2", "3x3", "4x4"] {
        let f = dir.join(format!("st.{}.trace", ranks_of(g)));
        trace(imp, ranks_of(g), "stencil", &args(g), &f);
        st.push(f.display().to_string());
    }
    let wf = dir.join("wf.16.trace");
    trace(
        imp,
        16,
        "wavefront",
        &["-p".into(), "4x4".into(), "-i".into(), "2".into()],
        &wf,
    );
    let wf = wf.display().to_string();
    let out = dir.join("out.trace").display().to_string();
    let o = out.as_str();

    // A non-square target for square inputs names the nearest valid sizes.
    let e = extrap_fails(&["-o", o, "--ranks", "40", &st[0], &st[1], &st[2]]);
    assert!(e.contains("36") && e.contains("49"), "{e}");
    // --dims overrides, but must multiply to --ranks.
    let e = extrap_fails(&[
        "-o", o, "--ranks", "40", "--dims", "5x9", &st[0], &st[1], &st[2],
    ]);
    assert!(e.contains("45") && e.contains("40"), "{e}");
    // Wrong order and the same size twice.
    let e = extrap_fails(&["-o", o, "--ranks", "36", &st[1], &st[0], &st[2]]);
    assert!(e.contains("increasing"), "{e}");
    let e = extrap_fails(&["-o", o, "--ranks", "36", &st[0], &st[1], &st[1]]);
    assert!(e.contains("both have 9 ranks"), "{e}");
    // Too few traces for a 2D topology.
    let e = extrap_fails(&["-o", o, "--ranks", "36", &st[1], &st[2]]);
    assert!(e.contains("needs at least 3"), "{e}");
    // Traces of different programs: the first event that differs.
    let e = extrap_fails(&["-o", o, "--ranks", "36", &st[0], &st[1], &wf]);
    assert!(e.contains("differ") && e.contains("event"), "{e}");
    // A file that is not a trace, and one that is cut short.
    let junk = dir.join("junk.trace");
    std::fs::write(&junk, b"not a trace at all").unwrap();
    let bytes = std::fs::read(&st[2]).unwrap();
    let cut = dir.join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    for bad in [&junk, &cut] {
        let name = bad.to_str().unwrap();
        let e = extrap_fails(&["-o", o, "--ranks", "36", &st[0], &st[1], name]);
        assert!(e.contains(name), "{e}");
    }
    assert!(!Path::new(o).exists(), "no output on error");
}

/// A million ranks: the 2D weak-scaling stencil extrapolated to 1024x1024.
/// Every rank cannot be compared with a real run, so sample ranks of each
/// class are checked against what the grid says: peers at +-1 and +-1024
/// where they exist, the same counts as at 16 ranks; and the file stays
/// about the size of the inputs. (The time this takes is a benchmark:
/// `scripts/bench.sh`.)
#[test]
fn a_million_ranks() {
    let imp = "openmpi";
    let dir = scratch("extrap-million");
    let args = stencil_args(2, "mesh", true, 8);
    let mut files = Vec::new();
    for g in ["2x2", "3x3", "4x4", "5x5"] {
        let f = dir.join(format!("st.{}.trace", ranks_of(g)));
        trace(imp, ranks_of(g), "stencil", &args(g), &f);
        files.push(f);
    }
    let out = dir.join("million.trace");
    extrap(&out, 1 << 20, &files, &[]);
    let x_file = TraceFile::read(&out).unwrap();
    assert_eq!(x_file.meta.world_size, 1 << 20);
    let size = std::fs::metadata(&out).unwrap().len();
    let largest = std::fs::metadata(&files[3]).unwrap().len();
    assert!(
        size < 2 * largest,
        "{size} bytes against {largest} for 25 ranks"
    );
    let small = TraceFile::read(&files[2]).unwrap(); // 4x4
    let n = 1024i64;
    let events = |f: &TraceFile, r: u32| -> Vec<trace::Event> {
        f.trace.rank_trace(r).unwrap().expand().collect()
    };
    // (rank at 1024x1024, the rank in the same position at 4x4)
    let samples = [
        (0, 0),
        (1, 1),
        (1023, 3),
        (1024, 4),
        (1025, 5),
        (524_801, 5),
        (2047, 7),
        (1_047_552, 12),
        (1_048_575, 15),
    ];
    for (rank, small_rank) in samples {
        let (x, y) = (rank % n, rank / n);
        let mut want: Vec<i64> = Vec::new();
        if x > 0 {
            want.push(-1);
        }
        if x < n - 1 {
            want.push(1);
        }
        if y > 0 {
            want.push(-n);
        }
        if y < n - 1 {
            want.push(n);
        }
        want.sort();
        let (big, little) = (events(&x_file, rank as u32), events(&small, small_rank));
        let mut got: Vec<i64> = big
            .iter()
            .filter_map(|e| e.send.map(|t| t.peer))
            .filter_map(|p| match p {
                trace::Peer::Rank { world, .. } => Some(i64::from(world) - rank),
                _ => None,
            })
            .collect();
        got.sort();
        got.dedup();
        assert_eq!(got, want, "rank {rank}'s peers");
        let shape = |v: &[trace::Event]| -> Vec<(Op, Option<i64>)> {
            v.iter().map(|e| (e.op, e.send.map(|t| t.count))).collect()
        };
        assert_eq!(
            shape(&big),
            shape(&little),
            "rank {rank} against rank {small_rank} at 4x4"
        );
    }
    // Its benchmark: a C file about the size of the 25-rank one's (the
    // program follows the trace, not the rank count), which mpicc builds
    // under -Wall -Werror.
    let c_of = |trace: &Path, name: &str| -> u64 {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        codegen_build(imp, trace, &d).unwrap_or_else(|e| panic!("{e}"));
        std::fs::metadata(d.join("bench.c")).unwrap().len()
    };
    let (million, small) = (c_of(&out, "million"), c_of(&files[3], "25"));
    assert!(
        million < small + small / 4,
        "{million} bytes of C for a million ranks against {small} for 25"
    );
}
