//! Call-site signatures: the same source line gives the same signature on
//! every rank and in every run (ASLR and PIE move the program between runs),
//! and two different lines give different signatures.

mod common;

use std::collections::BTreeSet;

use common::*;
use compress::Op;

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
