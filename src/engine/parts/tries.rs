//! The kinds of tries a batch or a run counts: a 429 counts against
//! `maxRateLimitRetries` alone, so a rate limit never uses up the retries of errors.

/// The tries a batch counts, each against its own budget.
#[derive(Copy, Clone, Debug)]
pub(in crate::engine) enum Try {
    /// A reply with the wrong count.
    Mismatch,
    /// A transient failure.
    Error,
    /// A 429 answer.
    RateLimit,
}
