//! How results are shown: fractions rounded to 15 significant digits (so
//! `0.1 + 0.2` is `0.3`), and whole numbers up to 2^53 without a fraction.

use serde_json::{Number, Value};

/// The largest magnitude below which every whole `f64` is exact.
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

/// Rounds to 15 significant digits, the precision an `f64` always keeps,
/// hiding binary noise such as `0.30000000000000004`. Negative zero becomes
/// zero.
pub fn tidy(value: f64) -> f64 {
    if !value.is_finite() || value == 0.0 {
        return if value == 0.0 { 0.0 } else { value };
    }
    let rounded = format!("{value:.14e}").parse().unwrap_or(value);
    if rounded == 0.0 { 0.0 } else { rounded }
}

/// The value as a JSON number: an integer when it is whole and within
/// ±2^53 (after rounding fractions with [`tidy`]), otherwise a float.
/// `None` for NaN and infinities.
pub fn to_json(value: f64) -> Option<Value> {
    let exact_integer = |x: f64| x.fract() == 0.0 && x.abs() <= EXACT_INTEGER_LIMIT;
    if exact_integer(value) {
        return Some(Value::from(value as i64));
    }
    // Whole numbers beyond 2^53 keep their shortest exact form; only
    // fractions carry binary noise worth rounding away.
    let shown = if value.fract() == 0.0 { value } else { tidy(value) };
    if exact_integer(shown) {
        return Some(Value::from(shown as i64));
    }
    Number::from_f64(shown).map(Value::Number)
}

/// The value as text, as in [`to_json`]: `7006652`, `0.5`, `1e+300`.
pub fn format_number(value: f64) -> String {
    match to_json(value) {
        Some(json) => json.to_string(),
        None if value.is_nan() => "NaN".to_owned(),
        None if value > 0.0 => "infinity".to_owned(),
        None => "-infinity".to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn whole_numbers_have_no_fraction() {
        assert_eq!(to_json(7_006_652.0), Some(json!(7_006_652)));
        assert_eq!(to_json(-4.0), Some(json!(-4)));
        assert_eq!(to_json(-0.0), Some(json!(0)));
        assert_eq!(format_number(2.0_f64.powi(53)), "9007199254740992");
    }

    #[test]
    fn large_and_fractional_numbers_stay_floats() {
        assert_eq!(to_json(2.0_f64.powi(60)), Some(json!(1.152_921_504_606_847e18)));
        assert_eq!(to_json(0.5), Some(json!(0.5)));
        assert_eq!(format_number(1e300), "1e+300");
    }

    #[test]
    fn binary_noise_is_rounded_away() {
        assert_eq!(to_json(0.1 + 0.2), Some(json!(0.3)));
        assert_eq!(to_json(2.0_f64.sqrt().powi(2)), Some(json!(2)));
        assert_eq!(tidy(1.0 / 3.0), 0.333_333_333_333_333);
    }

    #[test]
    fn non_finite_values_are_not_json() {
        assert_eq!(to_json(f64::NAN), None);
        assert_eq!(format_number(f64::NEG_INFINITY), "-infinity");
    }
}
