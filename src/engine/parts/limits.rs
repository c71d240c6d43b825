//! The batch limits in force (`maxItemsPerBatch`, `maxCharactersPerBatch`,
//! `batchDelayMs`, and what the token budget can hold), a provider's own in place of the
//! pacer's (`providers`), and which items can never share a call.

use crate::options::Options;
use crate::provider_settings::ProviderSettings;
use crate::quota;
use crate::time::Duration;

/// The batch limits in force.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(in crate::engine) struct Limits {
    /// Most items in one LLM batch.
    pub(in crate::engine) max_items: usize,
    /// Most characters in one LLM batch.
    pub(in crate::engine) max_chars: u64,
    /// Collection window from a batch's first item.
    pub(in crate::engine) delay: Duration,
    /// Most estimated input tokens in one LLM batch (what the token budget can hold);
    /// infinite without a token budget.
    pub(in crate::engine) max_tokens: f64,
    /// Whether `llm: false` items share calls, as arrays (`batch: "array"`).
    pub(in crate::engine) array: bool,
}

impl Limits {
    /// Whether `count` items of `chars` characters and `tokens` tokens leave room for
    /// one more of `more` characters and tokens.
    pub(in crate::engine) fn room_for(
        &self,
        count: usize,
        chars: u64,
        tokens: f64,
        more: (u64, f32),
    ) -> bool {
        count < self.max_items
            && chars.saturating_add(more.0) <= self.max_chars
            && tokens + f64::from(more.1) <= self.max_tokens
    }
}

/// The batch limits the options set.
pub(in crate::engine) fn limits_of(options: &Options) -> Limits {
    let max_tokens = if options.tokens_per_minute > 0.0 {
        quota::max_batch_input(options.tokens_per_minute)
    } else {
        f64::INFINITY
    };
    Limits {
        max_items: usize::try_from(options.max_items_per_batch).unwrap_or(usize::MAX),
        max_chars: options.max_characters_per_batch,
        delay: Duration::from_millis(options.batch_delay_ms),
        max_tokens,
        array: false,
    }
}

/// The batch limits of a provider with its own `settings`: each it sets replaces the
/// pacer's, and a batch never grows past what its own budgets can ever hold.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub(in crate::engine) fn own_limits_of(options: &Options, settings: &ProviderSettings) -> Limits {
    let mut limits = limits_of(options);
    if let Some(items) = settings.max_items_per_batch {
        limits.max_items = usize::try_from(items).unwrap_or(usize::MAX);
    }
    if let Some(chars) = settings.max_characters_per_batch {
        limits.max_chars = chars;
    }
    if let Some(delay) = settings.batch_delay_ms {
        limits.delay = Duration::from_millis(delay);
    }
    if let Some(tokens) = settings.tokens_per_minute.filter(|t| *t > 0.0) {
        limits.max_tokens = limits.max_tokens.min(quota::max_batch_input(tokens));
    }
    if let Some(chars) = settings.characters_per_minute.filter(|c| *c > 0.0) {
        limits.max_chars = limits.max_chars.min((chars.floor() as u64).max(1));
    }
    limits.array = settings.array;
    limits
}

/// Whether an item must travel alone: non-LLM items batch only as arrays (`batch:
/// "array"`), and an item longer than the character limit, or costing more than the token
/// budget can hold, cannot share.
pub(in crate::engine) fn travels_alone(
    llm: bool,
    chars: u64,
    tokens: f32,
    limits: &Limits,
) -> bool {
    (!llm && !limits.array) || chars > limits.max_chars || f64::from(tokens) > limits.max_tokens
}
