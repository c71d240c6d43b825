//! The batch limits in force (`maxItemsPerBatch`, `maxCharactersPerBatch`,
//! `batchDelayMs`, and what the token budget can hold), which items can never share a
//! call, and the kinds of tries a batch counts against their own limits.

use crate::options::Options;
use crate::quota;
use crate::time::Duration;

/// The batch limits in force.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) struct Limits {
    /// Most items in one LLM batch.
    pub(super) max_items: usize,
    /// Most characters in one LLM batch.
    pub(super) max_chars: u64,
    /// Collection window from a batch's first item.
    pub(super) delay: Duration,
    /// Most estimated input tokens in one LLM batch (what the token budget can hold);
    /// infinite without a token budget.
    pub(super) max_tokens: f64,
}

impl Limits {
    /// Whether `count` items of `chars` characters and `tokens` tokens leave room for
    /// one more of `more` characters and tokens.
    pub(super) fn room_for(&self, count: usize, chars: u64, tokens: f64, more: (u64, f32)) -> bool {
        count < self.max_items
            && chars.saturating_add(more.0) <= self.max_chars
            && tokens + f64::from(more.1) <= self.max_tokens
    }
}

/// The batch limits the options set.
pub(super) fn limits_of(options: &Options) -> Limits {
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
    }
}

/// Whether an item must travel alone: non-LLM items never batch, and an item longer than
/// the character limit, or costing more than the token budget can hold, cannot share.
pub(super) fn travels_alone(llm: bool, chars: u64, tokens: f32, limits: &Limits) -> bool {
    !llm || chars > limits.max_chars || f64::from(tokens) > limits.max_tokens
}

/// The tries a batch counts, each against its own budget.
#[derive(Copy, Clone, Debug)]
pub(super) enum Try {
    /// A reply with the wrong count.
    Mismatch,
    /// A transient failure.
    Error,
    /// A 429 answer.
    RateLimit,
}
