//! The checks of one option value: its type and range, and the message that names the
//! option and the value when it is rejected. Apart because provider settings and pools
//! check their values with the same rules and words.

use super::{OptionValue, OptionsError, SegmentFormat};

pub(crate) fn reject(name: &str, rule: &str, got: &OptionValue) -> OptionsError {
    OptionsError {
        option: name.to_owned(),
        message: format!("{name} must be {rule} (got {got})"),
    }
}

pub(crate) fn finite_above_zero(name: &str, value: &OptionValue) -> Result<f64, OptionsError> {
    match value {
        OptionValue::Number(n) if n.is_finite() && *n > 0.0 => Ok(*n),
        _ => Err(reject(name, "a finite number > 0", value)),
    }
}

pub(crate) fn finite_at_least_zero(name: &str, value: &OptionValue) -> Result<f64, OptionsError> {
    match value {
        // `+ 0.0` turns -0 into 0 so later arithmetic never sees a negative zero.
        OptionValue::Number(n) if n.is_finite() && *n >= 0.0 => Ok(*n + 0.0),
        _ => Err(reject(name, "a finite number >= 0", value)),
    }
}

pub(crate) fn integer_at_least(
    name: &str,
    min: u64,
    value: &OptionValue,
) -> Result<u64, OptionsError> {
    match value {
        OptionValue::Number(n) if n.is_finite() && n.fract() == 0.0 && *n >= min as f64 => {
            // Values beyond u64 saturate, which is "unlimited" for every integer option.
            Ok(*n as u64)
        }
        _ => Err(reject(name, &format!("an integer >= {min}"), value)),
    }
}

pub(super) fn segment_format(
    name: &str,
    value: &OptionValue,
) -> Result<SegmentFormat, OptionsError> {
    match value {
        OptionValue::Text(t) if t == "markers" => Ok(SegmentFormat::Markers),
        OptionValue::Text(t) if t == "separator" => Ok(SegmentFormat::Separator),
        _ => Err(reject(name, "\"markers\" or \"separator\"", value)),
    }
}

pub(super) fn boolean(name: &str, value: &OptionValue) -> Result<bool, OptionsError> {
    match value {
        OptionValue::Bool(b) => Ok(*b),
        _ => Err(reject(name, "a boolean", value)),
    }
}
