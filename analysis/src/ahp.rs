//! Inspection Affinity of slow patterns by the Analytic Hierarchy Process
//! (Alawneh and Hamou-Lhadj 2022 §4.3).
//!
//! Within one phase, slow patterns are compared on two criteria:
//! *severity*, duration per byte (a pattern that is slow for the data it
//! moves), and *complexity*, processes × events (how hard it is to
//! inspect). For each criterion, AHP builds the pairwise comparison matrix
//! `a_ij = v_i / v_j`, normalises every column by its sum and averages the
//! rows: the relative weights. A pattern's point (complexity weight,
//! severity weight) then falls in one of three equal angular sectors:
//! above 60° it is severe for its complexity (High affinity: inspect it
//! first), below 30° Low, in between Medium.

/// The comparison matrix of `values` (`a_ij = v_i / v_j`), row by row.
pub fn comparison_matrix(values: &[f64]) -> Vec<Vec<f64>> {
    values
        .iter()
        .map(|vi| values.iter().map(|vj| vi / vj).collect())
        .collect()
}

/// The column sums of a comparison matrix (the Σ row of Tables 8a, 9a).
pub fn column_sums(m: &[Vec<f64>]) -> Vec<f64> {
    let n = m.first().map_or(0, Vec::len);
    (0..n).map(|j| m.iter().map(|row| row[j]).sum()).collect()
}

/// The relative weights (the eigenvector of Tables 8b, 9b): the row means
/// of the column-normalised comparison matrix. For the consistent matrices
/// built from values they equal `v_i / Σ v`. Empty for no values;
/// non-positive or non-finite values have no weight (the ratio is
/// undefined), so they are refused with `None`.
pub fn weights(values: &[f64]) -> Option<Vec<f64>> {
    if values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let m = comparison_matrix(values);
    let sums = column_sums(&m);
    let n = values.len() as f64;
    Some(
        m.iter()
            .map(|row| row.iter().zip(&sums).map(|(a, s)| a / s).sum::<f64>() / n)
            .collect(),
    )
}

/// The Inspection Affinity level of a slow pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Affinity {
    /// Severe for its complexity: inspect first.
    High,
    /// In between.
    Medium,
    /// Complex for its severity: inspect last.
    Low,
}

/// The level of the point (complexity weight, severity weight): its angle
/// from the complexity axis, above 60° High, below 30° Low (Fig. 8). The
/// boundaries themselves are Medium.
pub fn affinity(complexity_weight: f64, severity_weight: f64) -> Affinity {
    let deg = severity_weight.atan2(complexity_weight).to_degrees();
    if deg > 60.0 {
        Affinity::High
    } else if deg < 30.0 {
        Affinity::Low
    } else {
        Affinity::Medium
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
    }

    /// Alawneh and Hamou-Lhadj 2022, Tables 8 and 9 and Fig. 8: the phase-6 instances of
    /// patterns A, B and C. Severity = duration / data: 8/2, 12/9, 9/3 (the
    /// paper rounds 12/9 to 1.33 in Table 8a; we use the exact value and get
    /// the same two-decimal weights). Complexity = np × ne: 2×4, 10×18, 4×6.
    #[test]
    fn tables_8_and_9_and_figure_8_are_reproduced() {
        let severity = [8.0 / 2.0, 12.0 / 9.0, 9.0 / 3.0];
        let complexity = [2.0 * 4.0, 10.0 * 18.0, 4.0 * 6.0];
        // Table 8a's Σ row: 2.08, 6.25, 2.78.
        let s = column_sums(&comparison_matrix(&severity));
        assert!(close(&s, &[2.08, 6.25, 2.78], 0.005), "{s:?}");
        let ws = weights(&severity).unwrap();
        let round = |v: &[f64]| {
            v.iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(round(&ws), [0.48, 0.16, 0.36]);
        // Table 9a's Σ row: 26.50, 1.18, 8.83.
        let c = column_sums(&comparison_matrix(&complexity));
        assert!(close(&c, &[26.50, 1.18, 8.83], 0.005), "{c:?}");
        let wc = weights(&complexity).unwrap();
        assert_eq!(round(&wc), [0.04, 0.85, 0.11]);
        // Fig. 8: A-6 and C-6 High, B-6 Low.
        let levels: Vec<Affinity> = wc.iter().zip(&ws).map(|(c, s)| affinity(*c, *s)).collect();
        assert_eq!(levels, [Affinity::High, Affinity::Low, Affinity::High]);
    }

    #[test]
    fn weights_sum_to_one_and_refuse_undefined_ratios() {
        let w = weights(&[3.0, 1.0, 7.5, 0.25]).unwrap();
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(weights(&[1.0, 0.0]), None);
        assert_eq!(weights(&[]), Some(vec![]));
        assert_eq!(affinity(1.0, 1.0), Affinity::Medium);
    }
}
