//! Call-site signatures: the same source line gives the same signature on
//! every rank and in every run (ASLR and PIE move the program between runs),
//! and two different lines give different signatures.

mod common;

use std::collections::BTreeSet;

use common::*;
use trace::Op;

/// Signatures of the Barrier events of every rank, in order.
fn barrier_sites(imp: &str, depth: &str) -> Vec<Vec<u64>> {
    let bin = program(imp, "callsite");
    let dir = scratch(&format!("{imp}-callsite-{depth}"));
    let mut opt = traced_raw(imp, &dir);
    opt.env.push(("RANKSCALE_DEPTH", depth.to_string()));
    let job = mpirun(imp, 3, &bin, &["4".to_string()], &opt);
    assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
    raw_logs(&dir, 3)
        .iter()
        .map(|evs| {
            evs.iter()
                .filter(|e| e.op == Op::Barrier)
                .map(|e| e.site)
                .collect()
        })
        .collect()
}

#[test]
fn same_line_same_signature_on_every_rank_and_run_different_lines_differ() {
    for imp in mpis() {
        // callsite.c, per iteration: Barrier at line A, Barrier at line B,
        // then helper() called from two lines, each making one Barrier.
        let run1 = barrier_sites(imp, "1");
        let run2 = barrier_sites(imp, "1");
        assert_eq!(run1[0].len(), 16, "{imp}: 4 iterations x 4 barriers");
        for ranks in [&run1, &run2] {
            for r in ranks.iter() {
                assert_eq!(
                    r, &run1[0],
                    "{imp}: every rank and run has the same sequence of sites"
                );
            }
        }
        let per_iter: Vec<u64> = run1[0][..4].to_vec();
        for chunk in run1[0].chunks(4) {
            assert_eq!(
                chunk,
                &per_iter[..],
                "{imp}: each iteration repeats the same sites"
            );
        }
        // Lines A and B differ; with depth 1 the two helper() calls share the
        // helper's own Barrier line.
        assert_ne!(per_iter[0], per_iter[1], "{imp}: lines A and B must differ");
        assert_eq!(
            per_iter[2], per_iter[3],
            "{imp}: depth 1 sees only the helper's line"
        );
        assert!(!per_iter[..3].contains(&0));
        let distinct: BTreeSet<u64> = per_iter.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "{imp}");

        // Depth 2 tells the two callers of helper() apart, and is stable too.
        let deep1 = barrier_sites(imp, "2");
        let deep2 = barrier_sites(imp, "2");
        assert_eq!(
            deep1, deep2,
            "{imp}: depth-2 signatures are stable across runs"
        );
        let d = &deep1[0][..4];
        assert_ne!(
            d[2], d[3],
            "{imp}: depth 2 separates the two callers of helper()"
        );
        let distinct: BTreeSet<u64> = d.iter().copied().collect();
        assert_eq!(distinct.len(), 4, "{imp}");
    }
}

/// Compiles `tests/programs/rebuild/rebuild.c` with `imp`'s wrapper and
/// extra flags into `dir/name`.
fn build_rebuild(
    imp: &str,
    dir: &std::path::Path,
    name: &str,
    flags: &[&str],
) -> std::path::PathBuf {
    let src = root().join("tests/programs/rebuild/rebuild.c");
    let out = dir.join(name);
    let st = std::process::Command::new(format!("mpicc.{imp}"))
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run mpicc");
    assert!(st.success(), "{imp}: compiling {name} failed");
    out
}

/// The address and size of `main` in a binary, from `nm -S`.
fn main_symbol(bin: &std::path::Path) -> String {
    let out = std::process::Command::new("nm")
        .arg("-S")
        .arg(bin)
        .output()
        .expect("run nm");
    text(&out.stdout)
        .lines()
        .find(|l| l.ends_with(" T main"))
        .unwrap_or_default()
        .to_string()
}

/// Every rank's call sites of detailed events, in order, and the trace's
/// site labels.
fn traced_sites(imp: &str, bin: &std::path::Path, depth: &str) -> (Vec<Vec<u64>>, String) {
    let dir = scratch(&format!("{imp}-rebuild-run"));
    let mut opt = traced_raw(imp, &dir);
    opt.env.push(("RANKSCALE_DEPTH", depth.to_string()));
    let trace = dir.with_extension("trace");
    opt.env
        .push(("RANKSCALE_TRACE", trace.display().to_string()));
    let job = mpirun(imp, 2, bin, &["3".to_string()], &opt);
    assert_eq!(job.code, Some(0), "{imp}: {}", job.stderr);
    let sites = raw_logs(&dir, 2)
        .iter()
        .map(|evs| {
            evs.iter()
                .filter(|e| !e.op.is_generic())
                .map(|e| e.site)
                .collect()
        })
        .collect();
    let show = rankscale(&["show", trace.to_str().unwrap()]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    (sites, text(&show.stdout))
}

#[test]
fn source_lines_keep_their_signature_across_rebuilds() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-rebuild"));
        // As NPB does: one binary per rank count, each of its own name; and
        // one with more code before and inside main.
        let a = build_rebuild(imp, &dir, "rb.4", &["-O2", "-g", "-DNPROCS=4"]);
        let b = build_rebuild(imp, &dir, "rb.16", &["-O2", "-g", "-DNPROCS=16"]);
        let c = build_rebuild(imp, &dir, "other", &["-O2", "-g", "-DNPROCS=4", "-DPAD=9"]);
        let (ma, mc) = (main_symbol(&a), main_symbol(&c));
        assert!(
            !ma.is_empty() && ma != mc,
            "{imp}: the builds must move main ({ma} / {mc})"
        );
        for depth in ["1", "2"] {
            let (sa, show) = traced_sites(imp, &a, depth);
            let (sb, _) = traced_sites(imp, &b, depth);
            let (sc, _) = traced_sites(imp, &c, depth);
            assert_eq!(sa, sb, "{imp} depth {depth}: NPROCS=4 and 16 builds differ");
            assert_eq!(
                sa, sc,
                "{imp} depth {depth}: a build with other code differs"
            );
            // Init, then per iteration Allreduce, Sendrecv_replace, Barrier,
            // Allreduce, Sendrecv_replace; the two exchange() calls share
            // their lines at depth 1 and are told apart at depth 2, inlined
            // or not.
            let r0 = &sa[0];
            let (first, second) = (r0[1], r0[4]);
            if depth == "1" {
                assert_eq!(first, second, "{imp}: depth 1 names exchange()'s own line");
                assert!(show.contains("exchange rebuild.c:29"), "{imp}: {show}");
                assert!(show.contains("main rebuild.c:43"), "{imp}: {show}");
                assert!(!show.contains("rb.4+"), "{imp}: no module offsets: {show}");
            } else {
                assert_ne!(first, second, "{imp}: depth 2 tells the two callers apart");
            }
        }
        // Without debug information: symbol and offset, stable per binary.
        let n = build_rebuild(imp, &dir, "nodebug", &["-O2", "-g0", "-DNPROCS=4"]);
        let (s1, show) = traced_sites(imp, &n, "1");
        let (s2, _) = traced_sites(imp, &n, "1");
        assert_eq!(s1, s2, "{imp}: symbol+offset signatures are stable");
        assert!(show.contains("site=main+0x"), "{imp}: {show}");
    }
}
