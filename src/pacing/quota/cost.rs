//! A call's cost before it starts: its texts' input tokens, as much again for the output,
//! plus the prompt's share. Apart because the engine estimates costs without any
//! provider's quota, and the batch limits read the same figures.

use crate::estimate::estimate_tokens;

/// Tokens of the prompt around a batch's texts: the system prompt and the layout's
/// instructions (about 110 tokens in the markers layout).
const BATCH_PROMPT_TOKENS: f64 = 140.0;
/// Tokens of the prompt around a single text.
const SINGLE_PROMPT_TOKENS: f64 = 40.0;

/// The estimated input tokens of a text.
pub fn input_tokens(text: &str) -> f64 {
    estimate_tokens(text)
}

/// A call's cost before provider scaling: input, as much again for output, and the
/// prompt's share (`context_tokens` of the items' shared context included).
pub fn raw_cost(input: f64, context_tokens: f64, is_batch: bool) -> f64 {
    let prompt = if is_batch {
        BATCH_PROMPT_TOKENS
    } else {
        SINGLE_PROMPT_TOKENS
    };
    2.0 * input + context_tokens + prompt
}

/// A call's estimated input: its texts, the items' shared context and the prompt's
/// share, as the provider counts its input tokens.
pub fn prompt_input(input: f64, context_tokens: f64, is_batch: bool) -> f64 {
    let prompt = if is_batch {
        BATCH_PROMPT_TOKENS
    } else {
        SINGLE_PROMPT_TOKENS
    };
    input + context_tokens + prompt
}

/// The largest input a batch may carry so that its cost fits a budget of `capacity`
/// tokens (a batch never grows past what the token bucket can ever hold).
pub fn max_batch_input(capacity: f64) -> f64 {
    ((capacity - BATCH_PROMPT_TOKENS) / 2.0).max(0.0)
}
