//! Ranklists (Wu and Mueller 2012 §2, Fig. 2; §3.3): the paper's examples, stencil
//! groups whose size does not depend on P, unions that never expand, and
//! properties: `from_ranks` / `iter` / `contains` / `len` agree with the set,
//! `union` is set union, every order and grouping of unions gives the
//! identical normal form, and the text form round-trips (bad text is an
//! error, never a panic).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use trace::RankList;
use trace::ranklist::{MAX_RANK, ParseRankListError};

// ---------------------------------------------------------------- helpers

fn rl(s: &str) -> RankList {
    s.parse().unwrap_or_else(|e| panic!("parse {s:?}: {e}"))
}

fn set(r: &RankList) -> BTreeSet<u32> {
    r.iter().collect()
}

/// Brute-force expansion of `start + Σ i_k s_k`.
fn expand(start: u32, dims: &[(u32, u32)]) -> BTreeSet<u32> {
    let mut out = BTreeSet::from([u64::from(start)]);
    for &(n, s) in dims {
        out = out
            .iter()
            .flat_map(|&b| (0..u64::from(n)).map(move |i| b + i * u64::from(s)))
            .collect();
    }
    out.into_iter().map(|r| r as u32).collect()
}

/// The invariants of the normal form that are visible through the API, and
/// the definition itself (the normal form is what `from_ranks` builds).
fn check_normal(r: &RankList) {
    let secs = r.sections();
    for w in secs.windows(2) {
        assert!(
            u64::from(w[0].last()) + 1 < u64::from(w[1].start()),
            "sections touch or overlap in {r}"
        );
    }
    for s in secs {
        let mut inner = 0u64;
        for &(n, st) in s.dims().iter().rev() {
            assert!(n >= 2 && st >= 1, "bad dimension in {r}");
            assert!(u64::from(st) > inner, "interleaving dimensions in {r}");
            inner += u64::from(n - 1) * u64::from(st);
        }
    }
    if r.len() <= 100_000 {
        assert_eq!(&RankList::from_ranks(r.iter()), r, "not the normal form");
    }
    let text = r.to_string();
    assert_eq!(&rl(&text), r, "text round trip of {text}");
}

/// Folds `lists` with `union` along a binary tree whose split points come
/// from `choices`.
fn tree_union(lists: &[RankList], choices: &[usize], depth: usize) -> RankList {
    match lists {
        [] => RankList::new(),
        [one] => one.clone(),
        _ => {
            let c = choices
                .get(depth % choices.len().max(1))
                .copied()
                .unwrap_or(0);
            let mid = 1 + (c + depth) % (lists.len() - 1);
            let a = tree_union(&lists[..mid], choices, depth + 1);
            let b = tree_union(&lists[mid..], choices, depth + 2);
            if c % 2 == 0 { a.union(&b) } else { b.union(&a) }
        }
    }
}

/// The log2(P) reduction tree of the inter-node merge: leaf i holds the
/// ranks of `group` in `[i·chunk, (i+1)·chunk)`.
fn reduction_tree(p: u32, chunk: u32, group: &dyn Fn(u32) -> bool) -> RankList {
    let mut level: Vec<RankList> = (0..p.div_ceil(chunk))
        .map(|i| RankList::from_ranks((i * chunk..((i + 1) * chunk).min(p)).filter(|&r| group(r))))
        .collect();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|c| match c {
                [a, b] => a.union(b),
                [a] => a.clone(),
                _ => unreachable!(),
            })
            .collect();
    }
    level.pop().unwrap_or_default()
}

// ---------------------------------------------------------------- the paper

#[test]
fn paper_example_fig2() {
    let r = rl("<2 6 3 5 3 1>");
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        [6, 7, 8, 11, 12, 13, 16, 17, 18]
    );
    assert_eq!(r.len(), 9);
    assert_eq!(r.sections().len(), 1);
    assert_eq!(r.sections()[0].start(), 6);
    assert_eq!(r.sections()[0].dims(), &[(3, 5), (3, 1)]);
    assert_eq!(
        RankList::from_ranks([6, 7, 8, 11, 12, 13, 16, 17, 18]).to_string(),
        "<2 6 3 5 3 1>"
    );
    assert_eq!(
        RankList::section(6, &[(3, 5), (3, 1)]).unwrap().to_string(),
        "<2 6 3 5 3 1>"
    );
    // Dimensions in another order are the same section.
    assert_eq!(rl("<2 6 3 1 3 5>"), r);
    for x in 0..30 {
        assert_eq!(
            r.contains(x),
            [6, 7, 8, 11, 12, 13, 16, 17, 18].contains(&x)
        );
    }
    check_normal(&r);
}

/// Wu and Mueller 2012 §3.3: group E (the interior) at 16, 25, 36 ranks, and the
/// extrapolated `<2 x+1 x-2 x x-2 1>` at 10×10.
#[test]
fn paper_group_e_extrapolation() {
    for (q, text) in [
        (4, "<2 5 2 4 2 1>"),
        (5, "<2 6 3 5 3 1>"),
        (6, "<2 7 4 6 4 1>"),
        (10, "<2 11 8 10 8 1>"),
    ] {
        let interior = RankList::from_ranks(
            (0..q * q).filter(|r| (1..q - 1).contains(&(r / q)) && (1..q - 1).contains(&(r % q))),
        );
        assert_eq!(interior.to_string(), text);
        assert_eq!(
            RankList::section(q + 1, &[(q - 2, q), (q - 2, 1)]).unwrap(),
            interior
        );
    }
}

#[test]
fn unions_from_the_brief() {
    assert_eq!(
        rl("<1 0 4 1>").union(&rl("<1 4 4 1>")).to_string(),
        "<1 0 8 1>"
    );
    assert_eq!(
        rl("<2 0 3 4 2 1>").union(&rl("<2 12 1 4 2 1>")).to_string(),
        "<2 0 4 4 2 1>"
    );
    assert_eq!(
        rl("<1 0 3 5>").union(&RankList::single(15)).to_string(),
        "<1 0 4 5>"
    );
    assert_eq!(
        RankList::single(15).union(&rl("<1 0 3 5>")).to_string(),
        "<1 0 4 5>"
    );
    assert_eq!(
        rl("<1 0 4 1>").union(&rl("<1 100 3 1>")).to_string(),
        "<1 0 4 1> <1 100 3 1>"
    );
    // A row that touches the last row of a block: the block gives up its
    // last row, which joins the new atom.
    assert_eq!(
        rl("<2 0 3 10 2 1>").union(&rl("<1 22 3 1>")).to_string(),
        "<2 0 2 10 2 1> <1 20 5 1>"
    );
    // Single ranks: singles, pairs, pairs of pairs.
    assert_eq!(
        RankList::from_ranks([0, 3, 6, 8, 10]).to_string(),
        "<1 0 3 3> <1 8 2 2>"
    );
    assert_eq!(RankList::single(7).to_string(), "<1 7 1 1>");
    assert_eq!(RankList::new().to_string(), "<>");
}

// ---------------------------------------------------------------- stencils

/// The groups of a q×q row-major stencil (Wu and Mueller 2012 Fig. 8), as predicates,
/// with their expected normal form.
#[allow(clippy::type_complexity)]
fn stencil_groups(q: u32) -> Vec<(&'static str, Box<dyn Fn(u32) -> bool>, String)> {
    let (rw, cl) = (move |r: u32| r / q, move |r: u32| r % q);
    let inner = move |x: u32| (1..q - 1).contains(&x);
    vec![
        (
            "interior",
            Box::new(move |r| inner(rw(r)) && inner(cl(r))),
            format!("<2 {} {} {} {} 1>", q + 1, q - 2, q, q - 2),
        ),
        (
            "top",
            Box::new(move |r| rw(r) == 0 && inner(cl(r))),
            format!("<1 1 {} 1>", q - 2),
        ),
        (
            "bottom",
            Box::new(move |r| rw(r) == q - 1 && inner(cl(r))),
            format!("<1 {} {} 1>", q * (q - 1) + 1, q - 2),
        ),
        (
            "left",
            Box::new(move |r| cl(r) == 0 && inner(rw(r))),
            format!("<1 {} {} {}>", q, q - 2, q),
        ),
        (
            "right",
            Box::new(move |r| cl(r) == q - 1 && inner(rw(r))),
            format!("<1 {} {} {}>", 2 * q - 1, q - 2, q),
        ),
        (
            "corners",
            Box::new(move |r| !inner(rw(r)) && !inner(cl(r))),
            format!("<2 0 2 {} 2 {}>", q * (q - 1), q - 1),
        ),
        (
            "has east neighbour",
            Box::new(move |r| cl(r) < q - 1),
            format!("<2 0 {q} {q} {} 1>", q - 1),
        ),
        (
            "boundary",
            Box::new(move |r| !(inner(rw(r)) && inner(cl(r)))),
            // The top row and the first rank of row 1 touch, as do the last
            // rank of row q-2 and the bottom row: between them, q-3 pairs.
            format!(
                "<1 0 {} 1> {} <1 {} {} 1>",
                q + 1,
                if q == 4 {
                    "<1 7 2 1>".to_string()
                } else {
                    format!("<2 {} {} {q} 2 1>", 2 * q - 1, q - 3)
                },
                q * (q - 1) - 1,
                q + 1
            ),
        ),
    ]
}

/// For P = 16, 64, 1024 and 10^6, every group has the same number of
/// sections, whichever way it is built: from its ranks, by unions of rows
/// (forward and backward), and by the log2(P) reduction tree.
#[test]
fn stencil_groups_are_constant_size() {
    let mut sizes: Option<Vec<usize>> = None;
    for q in [4u32, 8, 32, 1000] {
        let p = q * q;
        let mut these = Vec::new();
        for (name, group, text) in stencil_groups(q) {
            let direct = RankList::from_ranks((0..p).filter(|&r| group(r)));
            assert_eq!(direct.to_string(), text, "{name}, q = {q}");
            assert_eq!(direct.len(), (0..p).filter(|&r| group(r)).count() as u64);
            // Rows (the part of the group in each grid row), unioned in
            // order and in reverse order.
            let rows: Vec<RankList> = (0..q)
                .map(|y| RankList::from_ranks((y * q..(y + 1) * q).filter(|&r| group(r))))
                .collect();
            let fwd = rows.iter().fold(RankList::new(), |acc, row| acc.union(row));
            let bwd = rows
                .iter()
                .rev()
                .fold(RankList::new(), |acc, row| row.union(&acc));
            assert_eq!(fwd, direct, "{name}, q = {q}, rows forward");
            assert_eq!(bwd, direct, "{name}, q = {q}, rows backward");
            let tree = reduction_tree(p, if q > 100 { 64 } else { 1 }, &group);
            assert_eq!(tree, direct, "{name}, q = {q}, reduction tree");
            these.push(direct.sections().len());
        }
        match &sizes {
            None => sizes = Some(these),
            Some(s) => assert_eq!(s, &these, "section counts change with P = {p}"),
        }
    }
}

/// The interior of a 1000×1000 grid (10^6 ranks) built by 998 unions of
/// rows: each union is a constant number of section operations, so it is
/// fast, and `len`, `contains`, `min` are arithmetic.
#[test]
fn million_rank_interior_by_rows_is_fast() {
    let q = 1000u32;
    let t = Instant::now();
    let mut acc = RankList::new();
    for y in 1..q - 1 {
        acc = acc.union(&RankList::range(y * q + 1, q - 2));
        assert_eq!(acc.sections().len(), 1);
    }
    let built = t.elapsed();
    assert_eq!(acc.to_string(), "<2 1001 998 1000 998 1>");
    let t = Instant::now();
    assert_eq!(acc.len(), 998 * 998);
    for _ in 0..1000 {
        assert_eq!(acc.len(), 998 * 998);
    }
    assert_eq!(acc.min(), Some(1001));
    assert_eq!(acc.max(), Some(998 * 1000 + 998));
    let mut x: u64 = 12345;
    for _ in 0..100_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = ((x >> 33) % 1_000_000) as u32;
        let expect = (1..q - 1).contains(&(r / q)) && (1..q - 1).contains(&(r % q));
        assert_eq!(acc.contains(r), expect, "rank {r}");
    }
    let queries = t.elapsed();
    // Expanding rows into ranks would be ~10^9 rank operations; the
    // section operations take microseconds. Generous bounds for slow CI.
    assert!(built < Duration::from_millis(500), "built in {built:?}");
    assert!(
        queries < Duration::from_millis(500),
        "queried in {queries:?}"
    );
    // The lazy iterator walks the same ranks.
    let mut n = 0u64;
    let mut prev = None;
    for r in &acc {
        assert!(prev < Some(r));
        prev = Some(r);
        n += 1;
    }
    assert_eq!(n, acc.len());
}

/// Unions of large sections stay arithmetic: a 10^6-rank block plus a row,
/// plus a rank that extends a stride, plus a far away block.
#[test]
fn large_unions_do_not_expand() {
    let t = Instant::now();
    for _ in 0..1000 {
        let block = RankList::section(1001, &[(998, 1000), (998, 1)]).unwrap();
        let more = block.union(&RankList::range(999_001, 998));
        assert_eq!(more.to_string(), "<2 1001 999 1000 998 1>");
        let strided = RankList::section(0, &[(1_000_000, 7)]).unwrap();
        assert_eq!(
            strided.union(&RankList::single(7_000_000)).to_string(),
            "<1 0 1000001 7>"
        );
        let far = block.union(&RankList::section(5_000_000, &[(998, 1000), (998, 1)]).unwrap());
        assert_eq!(far.to_string(), "<3 1001 2 4998999 998 1000 998 1>");
        // Touching blocks: the boundary atoms are exchanged, nothing else.
        let left = RankList::section(0, &[(500, 1000), (999, 1)]).unwrap();
        let right = RankList::section(499_999, &[(500, 1000), (999, 1)]).unwrap();
        let both = left.union(&right);
        assert_eq!(both.len(), 1000 * 999);
        assert!(both.sections().len() <= 4, "{both}");
    }
    let spent = t.elapsed();
    assert!(spent < Duration::from_secs(2), "{spent:?}");
}

#[test]
fn min_orders_groups_like_algorithm_1() {
    let q = 6;
    let mut groups: Vec<(&str, RankList)> = stencil_groups(q)
        .into_iter()
        .map(|(name, g, _)| (name, RankList::from_ranks((0..q * q).filter(|&r| g(r)))))
        .collect();
    groups.sort_by_key(|(_, r)| r.min());
    let order: Vec<(&str, Option<u32>)> = groups.iter().map(|(n, r)| (*n, r.min())).collect();
    assert_eq!(
        order,
        [
            ("corners", Some(0)),
            ("has east neighbour", Some(0)),
            ("boundary", Some(0)),
            ("top", Some(1)),
            ("left", Some(6)),
            ("interior", Some(7)),
            ("right", Some(11)),
            ("bottom", Some(31)),
        ]
    );
    assert_eq!(RankList::new().min(), None);
    assert_eq!(rl("<1 9 3 1> <1 2 1 1>").min(), Some(2));
}

// ---------------------------------------------------------------- sections

#[test]
fn section_normalises_its_dimensions() {
    // Rows that touch across blocks: the atoms are not the rows.
    let r = RankList::section(0, &[(2, 13), (2, 10), (3, 1)]).unwrap();
    assert_eq!(set(&r), expand(0, &[(2, 13), (2, 10), (3, 1)]));
    check_normal(&r);
    // A dimension that continues another one.
    assert_eq!(
        RankList::section(0, &[(3, 20), (2, 10)])
            .unwrap()
            .to_string(),
        "<1 0 6 10>"
    );
    // Iteration counts of 1 and 0.
    assert_eq!(
        RankList::section(4, &[(1, 99), (3, 2)])
            .unwrap()
            .to_string(),
        "<1 4 3 2>"
    );
    assert!(RankList::section(4, &[(0, 99), (3, 2)]).unwrap().is_empty());
    assert_eq!(RankList::section(4, &[]).unwrap(), RankList::single(4));
    // Touching blocks at a large count: 3 sections, built from 10^5 blocks.
    let t = Instant::now();
    let r = RankList::section(0, &[(100_000, 3), (2, 2)]).unwrap();
    assert_eq!(r.to_string(), "<1 0 1 1> <2 2 99999 3 2 1> <1 299999 1 1>");
    assert!(t.elapsed() < Duration::from_secs(2));
    // Errors.
    assert!(matches!(
        RankList::section(0, &[(3, 0)]),
        Err(ParseRankListError::ZeroStride { .. })
    ));
    assert!(matches!(
        RankList::section(0, &[(3, 2), (3, 1)]),
        Err(ParseRankListError::Overlap { .. })
    ));
    assert!(matches!(
        RankList::section(MAX_RANK, &[(2, 1)]),
        Err(ParseRankListError::TooLarge { .. })
    ));
    assert!(matches!(
        RankList::section(u32::MAX, &[]),
        Err(ParseRankListError::TooLarge { .. })
    ));
}

#[test]
fn overlapping_unions() {
    let even = RankList::section(0, &[(50, 2)]).unwrap();
    let odd = RankList::section(1, &[(50, 2)]).unwrap();
    assert_eq!(even.union(&odd).to_string(), "<1 0 100 1>");
    assert_eq!(even.union(&even), even);
    let block = rl("<2 6 3 5 3 1>");
    assert_eq!(block.union(&RankList::single(12)), block);
    assert_eq!(block.union(&rl("<1 11 3 1>")), block);
    let mut b = block.clone();
    b.insert(9);
    assert_eq!(b.to_string(), "<1 6 4 1> <2 11 2 5 3 1>");
    b.insert(9);
    assert_eq!(b.len(), 10);
}

// ---------------------------------------------------------------- text form

#[test]
fn text_form() {
    assert_eq!(rl("<>"), RankList::new());
    assert_eq!(rl("  <>  "), RankList::new());
    assert_eq!(rl("<0 5>"), RankList::single(5));
    assert_eq!(rl("<1 5 1 1>"), RankList::single(5));
    assert_eq!(rl("<1 5 0 1>"), RankList::new());
    assert_eq!(rl("<1 4 4 1> <1 0 4 1>").to_string(), "<1 0 8 1>");
    assert_eq!(rl("<1 0 4 1>\n\t<1 2 4 1>").to_string(), "<1 0 6 1>");
    let r = rl("<2 6 3 5 3 1> <1 30 1 1> <1 40 3 1>");
    assert_eq!(r.to_string(), "<2 6 3 5 3 1> <1 30 1 1> <1 40 3 1>");
    // The normal form is greedy: singles 30 and 40 pair up first.
    assert_eq!(
        rl("<1 30 1 1> <1 40 3 2>").to_string(),
        "<1 30 2 10> <1 42 2 2>"
    );
    assert_eq!(String::from(r.clone()), r.to_string());
    assert_eq!(RankList::try_from(r.to_string()).unwrap(), r);
}

#[test]
fn bad_text_is_an_error() {
    for bad in [
        "",
        "   ",
        "<",
        ">",
        "<1 0 4 1",
        "<1 0 4 1>>",
        "<<1 0 4 1>",
        "<1 0 4>",
        "<2 6 3 5 3>",
        "<1>",
        "<3 0 1 1>",
        "<4294967295 0>",
        "<1 0 3 0>",
        "<2 0 3 1 3 1>",
        "<1 2147483647 2 1>",
        "<1 4294967295 1 1>",
        "<1 0 99999999999999999999 1>",
        "<1 -1 2 1>",
        "<1 0x10 2 1>",
        "<a>",
        "<1 0 2 1> x",
        "<1 0 2 1>,<1 9 1 1>",
        "<1 0 2 1.5>",
        "<1 0 2 １>",
        "1 0 2 1",
    ] {
        assert!(bad.parse::<RankList>().is_err(), "{bad:?} parsed");
    }
    let e = "<2 6 3 5 3>".parse::<RankList>().unwrap_err();
    assert_eq!(
        e,
        ParseRankListError::Arity {
            dim: 2,
            expected: 6,
            found: 5
        }
    );
    assert!(!e.to_string().is_empty());
}

#[test]
fn serde_uses_the_text_form() {
    use serde::Deserialize;
    use serde::de::IntoDeserializer;
    use serde::de::value::{Error, StringDeserializer};
    let de: StringDeserializer<Error> = "<1 4 4 1> <1 0 4 1>".to_string().into_deserializer();
    let r = RankList::deserialize(de).unwrap();
    assert_eq!(r.to_string(), "<1 0 8 1>");
    let de: StringDeserializer<Error> = "<1 0 3 0>".to_string().into_deserializer();
    assert!(RankList::deserialize(de).is_err());
}

// ---------------------------------------------------------------- properties

/// A random row-major section: dimensions built inside out, each stride
/// beyond the extent inside it by 1..=4 (0..=3 gaps: touching blocks,
/// continued dimensions and gaps all occur), then shuffled.
fn section_strategy() -> impl Strategy<Value = (u32, Vec<(u32, u32)>)> {
    (
        0u32..300,
        prop::collection::vec((1u32..=5, 0u32..=4), 0..=3),
        1u32..=3,
    )
        .prop_flat_map(|(start, raw, first_stride)| {
            let mut dims = Vec::new();
            let mut span = 0u32;
            for (k, &(n, gap)) in raw.iter().enumerate() {
                let s = if k == 0 { first_stride } else { span + 1 + gap };
                dims.push((n, s));
                span += (n - 1) * s;
            }
            (Just(start), Just(dims).prop_shuffle())
        })
}

/// Random rank sets: small universes, unions of random sections, and
/// stencil-like boxes of 2D/3D grids.
fn set_strategy() -> impl Strategy<Value = BTreeSet<u32>> {
    prop_oneof![
        prop::collection::btree_set(0u32..200, 0..120),
        prop::collection::vec(section_strategy(), 1..4)
            .prop_map(|secs| { secs.iter().flat_map(|(s, d)| expand(*s, d)).collect() }),
        (
            2u32..8,
            2u32..8,
            1u32..5,
            0u32..8,
            0u32..8,
            0u32..5,
            1u32..8,
            1u32..8,
            1u32..5
        )
            .prop_map(|(qx, qy, qz, x0, y0, z0, w, h, dz)| {
                // Box [x0, x0+w) × [y0, y0+h) × [z0, z0+dz) of a qx×qy×qz grid.
                let mut out = BTreeSet::new();
                for z in z0..(z0 + dz).min(qz) {
                    for y in y0..(y0 + h).min(qy) {
                        for x in x0..(x0 + w).min(qx) {
                            out.insert(z * qx * qy + y * qx + x);
                        }
                    }
                }
                out
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn from_ranks_iter_contains_len(s in set_strategy()) {
        let r = RankList::from_ranks(s.iter().copied());
        prop_assert_eq!(set(&r), s.clone());
        prop_assert_eq!(r.len(), s.len() as u64);
        prop_assert_eq!(r.min(), s.first().copied());
        prop_assert_eq!(r.max(), s.last().copied());
        let top = s.last().copied().unwrap_or(0) + 10;
        for x in 0..top {
            prop_assert_eq!(r.contains(x), s.contains(&x), "rank {}", x);
            // A member's place is its position in ascending order.
            let place = s.iter().position(|&m| m == x).map(|i| i as u64);
            prop_assert_eq!(r.index_of(x), place, "place of rank {}", x);
        }
        check_normal(&r);
        // Unsorted input with duplicates gives the same normal form.
        let mut v: Vec<u32> = s.iter().rev().copied().collect();
        v.extend(s.iter().copied());
        prop_assert_eq!(RankList::from_ranks(v), r);
    }

    #[test]
    fn section_is_its_expansion((start, dims) in section_strategy()) {
        let r = RankList::section(start, &dims).unwrap();
        prop_assert_eq!(set(&r), expand(start, &dims));
        check_normal(&r);
        prop_assert_eq!(r.len(), expand(start, &dims).len() as u64);
        for (i, x) in expand(start, &dims).into_iter().enumerate() {
            prop_assert_eq!(r.index_of(x), Some(i as u64), "place of rank {}", x);
        }
    }

    #[test]
    fn union_is_set_union(a in set_strategy(), b in set_strategy()) {
        let (ra, rb) = (RankList::from_ranks(a.iter().copied()), RankList::from_ranks(b.iter().copied()));
        let u = ra.union(&rb);
        let expect: BTreeSet<u32> = a.union(&b).copied().collect();
        prop_assert_eq!(set(&u), expect.clone());
        prop_assert_eq!(&u, &RankList::from_ranks(expect));
        prop_assert_eq!(&u, &rb.union(&ra));
        check_normal(&u);
    }

    /// Any order and any grouping of unions gives the identical normal form.
    #[test]
    fn union_order_and_grouping(
        parts in prop::collection::vec(set_strategy(), 1..8),
        order in any::<u64>(),
        choices in prop::collection::vec(0usize..64, 1..16),
    ) {
        let all: BTreeSet<u32> = parts.iter().flatten().copied().collect();
        let expect = RankList::from_ranks(all);
        let mut lists: Vec<RankList> = parts.iter().map(|p| RankList::from_ranks(p.iter().copied())).collect();
        // A permutation from the random seed.
        let mut x = order;
        for i in (1..lists.len()).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lists.swap(i, ((x >> 33) % (i as u64 + 1)) as usize);
        }
        let left = lists.iter().fold(RankList::new(), |acc, l| acc.union(l));
        prop_assert_eq!(&left, &expect);
        let tree = tree_union(&lists, &choices, 0);
        prop_assert_eq!(&tree, &expect);
    }

    /// The inter-node merge: leaves are contiguous rank ranges of one set,
    /// merged along a random tree.
    #[test]
    fn contiguous_reduction_tree(
        s in set_strategy(),
        cuts in prop::collection::btree_set(1u32..300, 0..12),
        choices in prop::collection::vec(0usize..64, 1..16),
    ) {
        let mut bounds: Vec<u32> = vec![0];
        bounds.extend(cuts);
        bounds.push(u32::MAX);
        let leaves: Vec<RankList> = bounds
            .windows(2)
            .map(|w| RankList::from_ranks(s.range(w[0]..w[1]).copied()))
            .collect();
        let expect = RankList::from_ranks(s.iter().copied());
        prop_assert_eq!(tree_union(&leaves, &choices, 0), expect.clone());
        let pairwise = leaves.iter().fold(RankList::new(), |acc, l| acc.union(l));
        prop_assert_eq!(pairwise, expect);
    }

    /// Section texts with random, possibly invalid, numbers: an error or the
    /// right set, never a panic.
    #[test]
    fn random_section_text(
        start in 0u32..100,
        dims in prop::collection::vec((0u32..5, 0u32..12), 0..4),
        extra in 0u32..3,
    ) {
        let mut text = format!("<{} {}", dims.len() as u32 + extra % 2, start);
        for (n, s) in &dims {
            text += &format!(" {n} {s}");
        }
        text += ">";
        if let Ok(r) = text.parse::<RankList>() {
            prop_assert_eq!(extra % 2, 0);
            prop_assert_eq!(set(&r), expand(start, &dims));
            check_normal(&r);
        }
    }

    #[test]
    fn random_text_never_panics(text in "[<> 0-9a\\-]{0,40}") {
        let _ = text.parse::<RankList>();
    }

    #[test]
    fn random_unicode_never_panics(text in "\\PC{0,30}") {
        let _ = text.parse::<RankList>();
    }
}

/// The one formatter of rank and index sets: runs of consecutive values
/// joined, input order and repeats ignored, and no overflow at the top of
/// the type.
#[test]
fn ranges_text_joins_runs_whatever_the_order() {
    use trace::ranklist::ranges_text;
    assert_eq!(
        ranges_text([5u32, 0, 2, 1, 1, 7, 8], ", ", "-"),
        "0-2, 5, 7-8"
    );
    assert_eq!(ranges_text([3usize], ",", "–"), "3");
    assert_eq!(ranges_text(Vec::<u32>::new(), ",", "-"), "");
    assert_eq!(
        ranges_text([u32::MAX - 1, u32::MAX, 0], ",", "-"),
        "0,4294967294-4294967295"
    );
}
