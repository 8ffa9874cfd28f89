//! Extrapolation of synthetic traces built through the compressor (no MPI),
//! against the trace the same generator makes at the target size: loops
//! whose step count changes with the rank count, and errors.

mod common;

use common::events;
use extrap::{Input, Options};
use trace::TraceFile;

/// A ring where each rank, per iteration, passes `P / 2` messages to its
/// right neighbour (a loop whose length grows with P) and then takes part
/// in an Allreduce.
fn ring(p: u32) -> TraceFile {
    ring_at(p, 0)
}

/// [`ring`] with its two call sites at `base + 1` and `base + 2`, as a
/// rebuild without debug information would move them.
fn ring_at(p: u32, base: u64) -> TraceFile {
    compress::fixtures::ring(p, base, 0)
}

fn opts(ranks: u64) -> Options {
    Options::new(ranks)
}

#[test]
fn a_loop_that_grows_with_the_rank_count() {
    let inputs: Vec<Input> = [4, 6, 8]
        .iter()
        .map(|&p| Input {
            name: format!("ring.{p}"),
            file: ring(p),
        })
        .collect();
    let x = extrap::extrapolate(&inputs, &opts(14)).unwrap();
    let truth = ring(14);
    for r in 0..14 {
        assert_eq!(events(&x.file, r), events(&truth, r), "rank {r}");
    }
    assert!(
        x.report
            .fields
            .iter()
            .any(|f| f.field.contains("loop steps") && f.target == 7),
        "{:?}",
        x.report.fields
    );
}

#[test]
fn two_sizes_are_too_few_for_nothing_but_the_same_size_is_refused() {
    let a = Input {
        name: "a".into(),
        file: ring(6),
    };
    let b = Input {
        name: "b".into(),
        file: ring(6),
    };
    let e = extrap::extrapolate(&[a, b], &opts(12))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("both have 6 ranks"), "{e}");
    let e = extrap::extrapolate(&[], &opts(12))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("0 trace(s)"), "{e}");
}

#[test]
fn a_loop_count_fitted_from_two_sizes_is_refused_unless_allowed() {
    let inputs: Vec<Input> = [4, 6]
        .into_iter()
        .map(|p| Input {
            name: format!("ring.{p}"),
            file: ring(p),
        })
        .collect();
    // Two sizes fit P/2 but also any other one-term law through them.
    let e = extrap::extrapolate(&inputs, &opts(14))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("cannot be verified"), "{e}");
    assert!(e.contains("Sendrecv loop steps"), "{e}");
    assert!(e.contains("values 2 at 4, 3 at 6"), "{e}");
    assert!(e.contains("--allow-unverified"), "{e}");
    let allowed = Options {
        allow_unverified: true,
        ..opts(14)
    };
    let x = extrap::extrapolate(&inputs, &allowed).unwrap();
    let back = TraceFile::from_bytes(&x.file.to_bytes().unwrap()).unwrap();
    assert!(
        back.meta
            .unverified
            .iter()
            .any(|l| l.contains("loop steps") && l.contains("gives 7")),
        "{:?}",
        back.meta.unverified
    );
    // Three sizes verify it, and nothing is listed.
    let three: Vec<Input> = [4, 6, 8]
        .into_iter()
        .map(|p| Input {
            name: format!("ring.{p}"),
            file: ring(p),
        })
        .collect();
    let x = extrap::extrapolate(&three, &opts(14)).unwrap();
    assert!(x.file.meta.unverified.is_empty());
}

#[test]
fn ignore_sites_aligns_builds_whose_sites_differ() {
    let inputs: Vec<Input> = [(4, 0), (6, 10), (8, 20)]
        .into_iter()
        .map(|(p, base)| Input {
            name: format!("ring.{p}"),
            file: ring_at(p, base),
        })
        .collect();
    let e = extrap::extrapolate(&inputs, &opts(14))
        .err()
        .expect("sites differ")
        .to_string();
    assert!(e.contains("differ structurally"), "{e}");
    let o = Options {
        ignore_sites: true,
        ..opts(14)
    };
    let x = extrap::extrapolate(&inputs, &o).unwrap();
    let truth = ring_at(14, 0);
    let no_site = |l: String| {
        l.split(' ')
            .filter(|f| !f.starts_with("site="))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for r in 0..14 {
        let got: Vec<String> = events(&x.file, r).into_iter().map(no_site).collect();
        let want: Vec<String> = events(&truth, r).into_iter().map(no_site).collect();
        assert_eq!(got, want, "rank {r}");
    }
    assert!(x.file.meta.sites.is_empty());
}
