//! What an extrapolation takes for granted, said with its result.
//!
//! The inputs show how a code behaves at a few sizes; they cannot show
//! what it does where it behaves otherwise. Two assumptions underlie every
//! extrapolated trace, and a reader deciding on a machine from it must see
//! them: the code takes the same paths at the target (its ranks make the
//! calls their position classes made, from the same sites, in the same
//! loops), and it keeps the decomposition the inputs show. NPB FT breaks
//! the second beyond its inputs: above 32 ranks, more than its class W
//! grid's 32 planes, it moves from a 1D to a 2D layout, with calls from
//! sites no input has.
//!
//! Where the inputs themselves point at such a limit, it is said too: a
//! count that shrinks with the rank count and reaches one or two elements
//! at the target means the ranks approach a dimension of the data, where
//! codes change their decomposition.

use super::{FieldFit, Report};

/// The assumptions of an extrapolation from inputs of `sizes` ranks to
/// `target`, one sentence each: the code paths, the decomposition, and
/// any count whose shrinking reaches a dimension of the data.
pub(super) fn assumptions(r: &Report, sizes: &[u64], target: u64) -> Vec<String> {
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let mut out = vec![format!(
        "the code takes the same paths at {target} ranks as at {} ranks: every rank makes \
         the calls its position class made in the inputs, from the same call sites, in \
         the same loops",
        list(sizes)
    )];
    let grid = |d: &[u64]| d.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
    let grids: Vec<String> = r.grids.iter().map(|d| grid(d)).collect();
    out.push(if r.dims.len() > 1 {
        format!(
            "it keeps the decomposition of the inputs: their grids {} (slowest dimension \
             first) continued to {}",
            grids.join(", "),
            grid(&r.dims)
        )
    } else {
        format!(
            "it keeps the decomposition of the inputs: one dimension of {} ranks continued \
             to {target}",
            list(sizes)
        )
    });
    out.extend(regime_limits(&r.fields, sizes));
    out.push(
        "the inputs cannot show either: a code that changes its layout beyond them (as NPB \
         FT does once its ranks outnumber its grid's planes) is extrapolated as if it did \
         not"
        .to_string(),
    );
    out
}

/// The counts that shrink across the inputs to one or two elements at the
/// target, one sentence per call and field (the first class that shows
/// it): the ranks approach a dimension of the data there.
fn regime_limits(fields: &[FieldFit], sizes: &[u64]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for f in fields {
        let shrinking = f.values.len() >= 2
            && f.values.windows(2).all(|w| w[1] < w[0])
            && f.values.last().is_some_and(|&v| v > 0);
        if !f.field.ends_with("count") || !shrinking || !(1..=2).contains(&f.target) {
            continue;
        }
        if !seen.insert(f.field.clone()) {
            continue;
        }
        let last = f.values.last().copied().unwrap_or(0);
        let at = sizes.last().copied().unwrap_or(0);
        let values: Vec<String> = f.values.iter().map(i64::to_string).collect();
        out.push(format!(
            "{} (ranks at {}) falls from {} across the inputs to {} at the target: the \
             ranks approach a dimension of the data (about {} elements at {at} ranks, if \
             the count is that dimension over the ranks), where codes change their \
             decomposition",
            f.field,
            f.class,
            values.join(", "),
            f.target,
            i128::from(last) * i128::from(at),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(field: &str, values: &[i64], target: i64) -> FieldFit {
        FieldFit {
            class: "z=first".into(),
            field: field.into(),
            site: String::new(),
            values: values.to_vec(),
            grids: Vec::new(),
            model: String::new(),
            target,
            verified: true,
        }
    }

    /// A count of 64 elements split over the ranks, 16 at 4 ranks to 1 at
    /// 64, is named once; a count that shrinks less, one that grows and a
    /// field that is not a count are not.
    #[test]
    fn a_count_that_shrinks_to_one_element_is_a_regime_limit() {
        let fields = [
            fit("Send send.count", &[16, 8, 4], 1),
            fit("Send send.count", &[16, 8, 4], 1),
            fit("Recv recv.count", &[160, 80, 40], 10),
            fit("Bcast send.count", &[1, 2, 4], 16),
            fit("Send send.peer", &[8, 4, 2], 1),
        ];
        let found = regime_limits(&fields, &[4, 8, 16]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("Send send.count (ranks at z=first) falls from 16, 8, 4")
                && found[0].contains("to 1 at the target")
                && found[0].contains("about 64 elements at 16 ranks"),
            "{}",
            found[0]
        );
    }
}
