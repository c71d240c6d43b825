//! Counters and gauges for `pacer.stats()`, and the events for `onEvent`.

use std::rc::Rc;

use crate::time::Duration;

/// Counters since construction, and current gauges.
///
/// Invariant: `items == succeeded + failed + aborted + disposed + pending`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Accepted `translate` calls.
    pub items: u64,
    /// Items answered from the cache.
    pub cache_hits: u64,
    /// Items that shared an identical queued or running item.
    pub dedup_hits: u64,
    /// Provider calls started, retries included.
    pub provider_calls: u64,
    /// Provider calls that carried more than one text.
    pub batch_calls: u64,
    /// Provider calls that repeated an earlier call of the same texts.
    pub retries: u64,
    /// Replies whose segment count (or an empty segment) did not fit the batch.
    pub count_mismatches: u64,
    /// Batches sent again one item at a time.
    pub fallbacks: u64,
    /// 429 answers seen.
    pub rate_limited: u64,
    /// Items rejected with `provider_error`, `timeout` or `count_mismatch`.
    pub failed: u64,
    /// Items rejected with `aborted`.
    pub aborted: u64,
    /// Items resolved with a translation.
    pub succeeded: u64,
    /// Items rejected with `disposed`.
    pub disposed: u64,
    /// Settlements of an item that was settled already, dropped by the driver. Always 0:
    /// a count that tests read, because a promise shows only its first settlement.
    pub duplicate_settlements: u64,
    /// Gauge: accepted items not settled yet.
    pub pending: u64,
    /// Gauge: provider items waiting to be sent (dedup-shared items count once).
    pub queued: u64,
    /// Gauge: provider calls running.
    pub in_flight: u64,
    /// Prompt tokens the provider reported (`usage`), summed.
    pub input_tokens: u64,
    /// Completion tokens the provider reported (`usage`), summed.
    pub output_tokens: u64,
    /// Calls answered with a stream, broken ones too.
    pub streamed_calls: u64,
    /// Accepted items resolved before their call's stream ended.
    pub early_resolved: u64,
    /// Items moved to a fallback provider (each once, however far along the chain).
    pub fallback_items: u64,
}

/// One provider's share of the calls (`stats().byProvider`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderStats {
    /// Calls started, retries and `pacer.run` calls included.
    pub calls: u64,
    /// Texts those calls carried.
    pub items: u64,
    /// 429 answers among them.
    pub rate_limited: u64,
}

/// Why a call is tried again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RetryReason {
    /// The reply did not map onto the texts.
    CountMismatch,
    /// Network error, timeout, bad reply, 408, 409 or 5xx.
    Error,
    /// 429.
    RateLimited,
}

impl RetryReason {
    /// Name for JS.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryReason::CountMismatch => "count_mismatch",
            RetryReason::Error => "error",
            RetryReason::RateLimited => "rate_limited",
        }
    }
}

/// Why a provider's queue was rejected at once.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlockReason {
    /// 401, 403 or 404: a wrong or revoked key, a wrong model or base URL.
    Settings,
    /// Out of credit or at a spending cap.
    Billing,
    /// A per-day quota is spent.
    Daily,
}

impl BlockReason {
    /// Name for JS.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockReason::Settings => "settings",
            BlockReason::Billing => "billing",
            BlockReason::Daily => "daily",
        }
    }
}

/// A notable event, for `onEvent`.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A call was answered 429; calls to the provider pause for `paused_for`.
    RateLimited {
        /// The provider.
        provider_id: Rc<str>,
        /// Its Retry-After, when given.
        retry_after: Option<Duration>,
        /// How long its calls are paused.
        paused_for: Duration,
    },
    /// The provider's own rate changed (adaptive rate); `None` when it is back to `rate`.
    AdaptiveRate {
        /// The provider.
        provider_id: Rc<str>,
        /// Its new rate, calls per second.
        rate: Option<f64>,
    },
    /// A call will be tried again after `delay`.
    Retry {
        /// The provider.
        provider_id: Rc<str>,
        /// Why.
        reason: RetryReason,
        /// The attempt number the retry will carry.
        attempt: u32,
        /// Backoff before it may start (it also needs a token).
        delay: Duration,
    },
    /// A reply had the wrong count.
    CountMismatch {
        /// The provider.
        provider_id: Rc<str>,
        /// Texts sent.
        expected: usize,
        /// Segments found (`expected` when the count was right but a segment was empty).
        got: usize,
    },
    /// Items moved from a provider that cannot serve them to its fallback.
    ProviderFallback {
        /// The provider that could not serve them.
        from: Rc<str>,
        /// The provider that takes them.
        to: Rc<str>,
        /// How many items moved.
        items: usize,
    },
    /// A provider's learned batch size changed (`adaptiveBatching`).
    BatchLimit {
        /// The provider.
        provider_id: Rc<str>,
        /// Most items in its batches from now on.
        limit: u32,
    },
    /// A batch is sent again one item at a time.
    Fallback {
        /// The provider.
        provider_id: Rc<str>,
        /// Items in the batch.
        items: usize,
    },
    /// Every item queued for a provider was rejected at once, because no call can succeed
    /// until the user acts (settings, billing) or until a daily quota resets.
    Blocked {
        /// The provider.
        provider_id: Rc<str>,
        /// Why.
        reason: BlockReason,
        /// The HTTP status of the failure.
        status: Option<u16>,
        /// What the items were rejected with.
        message: String,
        /// For a daily quota: until its reset, when known (items reject until then).
        until: Option<Duration>,
    },
    /// A provider's due calls wait because it reported no room for them (`limits`).
    Limited {
        /// The provider.
        provider_id: Rc<str>,
        /// Which of its windows is spent.
        reason: crate::quota::Held,
        /// Until the window resets.
        wait: Duration,
    },
    /// A call took longer than its timeout (`call_timeout`) and was cancelled.
    Timeout {
        /// The provider.
        provider_id: Rc<str>,
    },
    /// The persistent store failed; a failed lookup counts as a miss.
    CacheError {
        /// `get` or `set`.
        operation: &'static str,
        /// What went wrong.
        message: String,
    },
}
