//! A patch of options by name: the table of the names the core validates, and each
//! entry checked and set, the whole patch or nothing. Apart because it is the one way
//! options change, and its table is matched on rather than the names (less .wasm).

use super::fallback_map::fallback_map;
use super::value_checks::{
    boolean, finite_above_zero, finite_at_least_zero, integer_at_least, segment_format,
};
use super::{OptionValue, Options, OptionsError};
use crate::display::js_string;
use crate::pools::Pools;
use crate::provider_settings::providers_map;

/// Every option the core validates, with its name: the contract's, in its order, then
/// the package's additions (JS-only options such as `clock`, `onEvent` and `cache` are
/// handled by the binding layer). A patch entry's name is looked up here and handled by
/// a `match` on the option: a `match` on the names themselves compares strings arm after
/// arm, much more code in the .wasm.
const OPTIONS: [(&str, OptionName); 24] = {
    use OptionName::*;
    [
        ("rate", Rate),
        ("capacity", Capacity),
        ("maxInFlight", MaxInFlight),
        ("maxCharactersPerBatch", MaxCharactersPerBatch),
        ("maxItemsPerBatch", MaxItemsPerBatch),
        ("batchDelayMs", BatchDelayMs),
        ("maxBatchRetries", MaxBatchRetries),
        ("fallbackToIndividual", FallbackToIndividual),
        ("timeoutMs", TimeoutMs),
        ("timeoutPerCharacterMs", TimeoutPerCharacterMs),
        ("maxRetries", MaxRetries),
        ("baseRetryDelayMs", BaseRetryDelayMs),
        ("maxRateLimitRetries", MaxRateLimitRetries),
        ("adaptiveRate", AdaptiveRate),
        ("cacheEntries", CacheEntries),
        ("segmentFormat", SegmentFormatName),
        ("adaptiveBatching", AdaptiveBatching),
        ("fallbackProviders", FallbackProviders),
        ("fallbackAfterMs", FallbackAfterMs),
        ("providers", Providers),
        ("tokensPerMinute", TokensPerMinute),
        ("maxQueued", MaxQueued),
        ("pools", PoolsName),
        ("sharedQuota", SharedQuota),
    ]
};

/// The names of [`OPTIONS`], in order.
pub const OPTION_NAMES: [&str; 22] = {
    let mut names = [""; 22];
    let mut i = 0;
    while i < names.len() {
        names[i] = OPTIONS[i].0;
        i += 1;
    }
    names
};

#[derive(Clone, Copy)]
enum OptionName {
    Rate,
    Capacity,
    MaxInFlight,
    MaxCharactersPerBatch,
    MaxItemsPerBatch,
    BatchDelayMs,
    MaxBatchRetries,
    FallbackToIndividual,
    TimeoutMs,
    TimeoutPerCharacterMs,
    MaxRetries,
    BaseRetryDelayMs,
    MaxRateLimitRetries,
    AdaptiveRate,
    CacheEntries,
    SegmentFormatName,
    AdaptiveBatching,
    FallbackProviders,
    FallbackAfterMs,
    Providers,
    TokensPerMinute,
    MaxQueued,
    PoolsName,
    SharedQuota,
}

impl OptionName {
    fn find(name: &str) -> Option<OptionName> {
        OPTIONS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, option)| *option)
    }
}

impl Options {
    /// Returns these options with `patch` applied, or the first problem found.
    /// Nothing is applied unless every entry is valid; `undefined` values are skipped.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn patched<N: AsRef<str>>(
        &self,
        patch: &[(N, OptionValue)],
    ) -> Result<Options, OptionsError> {
        let mut next = self.clone();
        for (name, value) in patch {
            let name = name.as_ref();
            let Some(option) = OptionName::find(name) else {
                return Err(OptionsError {
                    option: name.to_owned(),
                    message: format!("unknown option {} (got {value})", js_string(name)),
                });
            };
            if *value == OptionValue::Undefined {
                continue;
            }
            use OptionName::*;
            match option {
                Rate => next.rate = finite_above_zero(name, value)?,
                Capacity => next.capacity = integer_at_least(name, 1, value)? as f64,
                MaxInFlight => next.max_in_flight = integer_at_least(name, 0, value)?,
                MaxCharactersPerBatch => {
                    next.max_characters_per_batch = integer_at_least(name, 1, value)?
                }
                MaxItemsPerBatch => next.max_items_per_batch = integer_at_least(name, 1, value)?,
                BatchDelayMs => next.batch_delay_ms = finite_at_least_zero(name, value)?,
                MaxBatchRetries => next.max_batch_retries = integer_at_least(name, 0, value)?,
                FallbackToIndividual => next.fallback_to_individual = boolean(name, value)?,
                TimeoutMs => next.timeout_ms = finite_at_least_zero(name, value)?,
                TimeoutPerCharacterMs => {
                    next.timeout_per_character_ms = finite_at_least_zero(name, value)?
                }
                MaxRetries => next.max_retries = integer_at_least(name, 0, value)?,
                BaseRetryDelayMs => next.base_retry_delay_ms = finite_at_least_zero(name, value)?,
                MaxRateLimitRetries => {
                    next.max_rate_limit_retries = integer_at_least(name, 0, value)?
                }
                AdaptiveRate => next.adaptive_rate = boolean(name, value)?,
                CacheEntries => next.cache_entries = integer_at_least(name, 0, value)?,
                SegmentFormatName => next.segment_format = segment_format(name, value)?,
                AdaptiveBatching => next.adaptive_batching = boolean(name, value)?,
                FallbackProviders => next.fallback_providers = fallback_map(name, value)?,
                FallbackAfterMs => next.fallback_after_ms = finite_at_least_zero(name, value)?,
                Providers => next.providers = providers_map(name, value)?,
                TokensPerMinute => next.tokens_per_minute = finite_at_least_zero(name, value)?,
                MaxQueued => next.max_queued = integer_at_least(name, 0, value)?,
                PoolsName => next.pools = Pools::parse(name, value)?,
                SharedQuota => next.shared_quota = boolean(name, value)?,
            }
        }
        Ok(next)
    }
}
