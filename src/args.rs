//! Value parsers shared by the command line's floating-point options, so
//! that every one of them refuses what it cannot mean in the same words:
//! text that is no number, NaN, the infinities and values outside the
//! option's range. A NaN compares false with everything, so a check
//! written as `v < 0.0` lets it through, and an infinite scale turns every
//! time it multiplies into infinity; they are refused where the option is
//! read, before any file is opened. clap names the option in front of the
//! message (`invalid value 'NaN' for '--cutoff <CUTOFF>': ...`) and exits
//! with its usage status, 2.

use compress::emulation::parse_finite;

#[cfg(test)]
use compress::emulation::MAX_SCALE;

/// The largest time per message (`simulate --L`, `--o`, `--g`), ns: a
/// thousand seconds, far beyond any network, and small enough that the
/// simulated sums stay finite.
pub const MAX_NS: f64 = 1e12;

/// The largest time per byte (`simulate --G`, `--O`), ns/byte: a second per
/// byte, a link of one byte per second.
pub const MAX_NS_PER_BYTE: f64 = 1e9;

/// A clap value parser of a finite number from `min` to `max`, both
/// included. One parser for every floating-point option, so that each
/// refuses NaN, the infinities and out-of-range values with the same
/// message, which names the accepted range.
pub fn finite_in(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| parse_finite(s, min, max)
}

/// A clap value parser of a finite number of at least `min` (options with
/// no natural upper bound, such as a z-score cut-off).
pub fn finite_at_least(
    min: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| parse_finite(s, min, f64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_and_out_of_range_values_are_refused_with_the_range() {
        let p = finite_in(0.0, 100.0);
        assert_eq!(p("5"), Ok(5.0));
        assert_eq!(p(" 0 "), Ok(0.0));
        assert_eq!(p("100"), Ok(100.0));
        assert_eq!(p("1e2"), Ok(100.0));
        for bad in ["NaN", "nan", "inf", "-inf", "infinity", "+Infinity"] {
            let e = p(bad).unwrap_err();
            assert!(e.starts_with("not a finite number"), "{bad}: {e}");
            assert!(e.contains("from 0 to 100"), "{bad}: {e}");
        }
        assert_eq!(
            p("100.5").unwrap_err(),
            "out of range (expected a finite number from 0 to 100)"
        );
        assert!(p("-0.1").unwrap_err().contains("out of range"));
        assert_eq!(
            p("five").unwrap_err(),
            "not a number (expected a finite number from 0 to 100)"
        );
        let q = finite_at_least(0.0);
        assert_eq!(q("1e300"), Ok(1e300));
        assert_eq!(
            q("NaN").unwrap_err(),
            "not a finite number (expected a finite number of at least 0)"
        );
        assert!(q("-1").unwrap_err().contains("out of range"));
        // The scales' bound is written as the options' help says.
        assert!(
            finite_in(0.0, MAX_SCALE)("1e300")
                .unwrap_err()
                .contains("from 0 to 1e6)")
        );
    }
}
