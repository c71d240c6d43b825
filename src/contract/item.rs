//! An item as the caller gives it, and the checks and errors every item may meet.

use crate::key::Compat;
use crate::options::OptionValue;
use crate::settle::{ErrorCode, PacerFailure};

/// One item to translate, borrowed from the caller.
#[derive(Copy, Clone, Debug)]
pub struct Item<'a> {
    /// The text.
    pub text: &'a str,
    /// Its compatibility fields.
    pub compat: Compat<'a>,
    /// Higher is dispatched first.
    pub priority: f64,
    /// Its input tokens by the user's `estimateTokens`; `None`: the built-in estimate.
    pub tokens: Option<f64>,
}

/// Rejects an item field, naming it and the value it got.
pub fn invalid_input<C>(field: &str, rule: &str, got: &OptionValue) -> PacerFailure<C> {
    PacerFailure::new(
        ErrorCode::InvalidInput,
        format!("{field} must be {rule} (got {got})"),
    )
}

/// Whether `text` is empty or only white space as JS's `trim()` defines it (which differs
/// from Rust's: U+FEFF is white space there, U+0085 is not). Such text resolves to itself.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| {
        matches!(
            c,
            '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    })
}

pub(crate) fn aborted_error<C>() -> PacerFailure<C> {
    PacerFailure::new(ErrorCode::Aborted, "the item was aborted")
}

/// The failure of every item after `dispose`.
pub fn disposed_error<C>() -> PacerFailure<C> {
    PacerFailure::new(ErrorCode::Disposed, "the pacer was disposed")
}

pub(crate) fn validate<C>(item: &Item<'_>) -> Result<(), PacerFailure<C>> {
    let names = [
        ("providerId", item.compat.provider_id),
        ("sourceLang", item.compat.source_lang),
        ("targetLang", item.compat.target_lang),
    ];
    for (field, value) in names {
        if value.is_empty() {
            return Err(invalid_input(
                field,
                "a non-empty string",
                &OptionValue::Text(value.to_owned()),
            ));
        }
    }
    if !item.priority.is_finite() {
        return Err(invalid_input(
            "priority",
            "a finite number",
            &OptionValue::Number(item.priority),
        ));
    }
    Ok(())
}
