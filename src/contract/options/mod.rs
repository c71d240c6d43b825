//! Options, their defaults, and validation whose messages name the option and the value.
//!
//! Options arrive as `(name, value)` pairs so that the core, not the JS layer, decides
//! every rule: unknown names, wrong types and out-of-range values are all rejected here,
//! and a patch is validated as a whole before anything changes.
//!
//! Here: the values as they arrive, the options, their defaults and their entries as
//! `pacer.options` shows them. `patch` applies a patch by name, `value_checks` checks
//! one value, `fallback_map` checks `fallbackProviders`.

use core::fmt;

use crate::display::{js_number, js_string};
use crate::pools::Pools;
use crate::provider_settings::ProviderSettings;

mod fallback_map;
mod patch;
mod value_checks;

pub use patch::OPTION_NAMES;
pub(crate) use value_checks::{finite_above_zero, finite_at_least_zero, integer_at_least, reject};

/// A value as it arrived from the caller, kept loose so validation can describe it.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    /// JS `undefined`: the option is treated as not given.
    Undefined,
    /// JS `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number (JS numbers are doubles).
    Number(f64),
    /// A string.
    Text(String),
    /// Anything else, described by its type name (`object`, `function`, ...).
    Other(String),
    /// A plain object's own entries, for the options that take one
    /// (`fallbackProviders`); shown as `object` in messages, as any other object.
    Map(Vec<(String, OptionValue)>),
    /// An array's elements, where an option takes one (the members of a pool).
    List(Vec<OptionValue>),
}

impl fmt::Display for OptionValue {
    /// Shows the value as JavaScript would write it, so messages read naturally to JS users.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionValue::Undefined => f.write_str("undefined"),
            OptionValue::Null => f.write_str("null"),
            OptionValue::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            OptionValue::Number(n) => f.write_str(&js_number(*n)),
            OptionValue::Text(s) => f.write_str(&js_string(s)),
            OptionValue::Other(kind) => f.write_str(kind),
            OptionValue::Map(_) => f.write_str("object"),
            OptionValue::List(values) => {
                f.write_str("[")?;
                for (i, value) in values.iter().enumerate() {
                    f.write_str(if i == 0 { "" } else { ", " })?;
                    value.fmt(f)?;
                }
                f.write_str("]")
            }
        }
    }
}

/// A rejected option or patch; the message names the option and the value it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionsError {
    /// The option it is about (`restore` for every part of a snapshot).
    pub option: String,
    /// Human-readable reason, e.g. `rate must be a finite number > 0 (got -1)`.
    pub message: String,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The engine's settings. Field meanings are those of the public contract.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Provider calls started per second, on average.
    pub rate: f64,
    /// Token bucket size: the largest burst.
    pub capacity: f64,
    /// Most provider calls at once; 0 means no limit.
    pub max_in_flight: u64,
    /// Character limit of an LLM batch (UTF-16 code units, as JS `String.length`).
    pub max_characters_per_batch: u64,
    /// Item limit of an LLM batch.
    pub max_items_per_batch: u64,
    /// Collection window of a batch, from its first item, in milliseconds.
    pub batch_delay_ms: f64,
    /// Retries of a batch whose reply has the wrong item count.
    pub max_batch_retries: u64,
    /// After those retries, send the batch's items one by one.
    pub fallback_to_individual: bool,
    /// Per-call timeout in milliseconds; 0 means none (whatever the per-character part).
    pub timeout_ms: f64,
    /// Added to `timeout_ms` per character a call sends (UTF-16 code units), for a whole
    /// reply and a stream's first value (see `call_timeout`).
    pub timeout_per_character_ms: f64,
    /// Retries of a failed call (network error, timeout, 408, 409, 5xx, bad reply).
    pub max_retries: u64,
    /// Exponential backoff base in milliseconds.
    pub base_retry_delay_ms: f64,
    /// Retries of a call answered 429, counted apart from `max_retries`.
    pub max_rate_limit_retries: u64,
    /// After a 429, slow that provider down by itself.
    pub adaptive_rate: bool,
    /// In-memory LRU size; 0 turns the cache off.
    pub cache_entries: u64,
    /// How a batch is laid out for the model.
    pub segment_format: SegmentFormat,
    /// Learn per provider how many items its batch replies can carry.
    pub adaptive_batching: bool,
    /// Where a provider's items go when it cannot serve them: `(from, to)` provider ids,
    /// each `from` once, no cycle.
    pub fallback_providers: Vec<(String, String)>,
    /// A 429 pause longer than this (milliseconds) moves its provider's items to its
    /// fallback.
    pub fallback_after_ms: f64,
    /// Each listed provider's own settings (`providers`), in the order given.
    pub providers: Vec<(String, ProviderSettings)>,
    /// Token budget per minute of this pacer's calls; 0 means no token limit.
    pub tokens_per_minute: f64,
    /// Most provider items held (queued, looked up or running); 0 means no limit.
    /// An addition to the contract: new items beyond it reject with `queue_full`.
    pub max_queued: u64,
    /// Pools of providers used as one (`pools`).
    pub pools: Pools,
    /// Whether a provider's reports are read as the state of a quota that other clients
    /// may share (`sharedQuota`, an addition): reports outrank the adaptive rate, this
    /// pacer takes its share of the refill, waits for a Retry-After or a reset are
    /// lengthened at random, the adaptive rate's floor scales. `false`: every report's
    /// room is this pacer's own, and those waits end exactly.
    pub shared_quota: bool,
}

/// How a batch travels in one LLM call (`segmentFormat`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SegmentFormat {
    /// Each text between its own markers, `<s1>` … `</s1>` (segment identity).
    Markers,
    /// The texts joined with an anonymous separator line (the older layout).
    Separator,
}

impl SegmentFormat {
    /// The name as JS writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SegmentFormat::Markers => "markers",
            SegmentFormat::Separator => "separator",
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rate: 8.0,
            capacity: 60.0,
            max_in_flight: 0,
            max_characters_per_batch: 1000,
            max_items_per_batch: 4,
            batch_delay_ms: 100.0,
            max_batch_retries: 3,
            fallback_to_individual: true,
            timeout_ms: 20_000.0,
            timeout_per_character_ms: 15.0,
            max_retries: 2,
            base_retry_delay_ms: 1000.0,
            max_rate_limit_retries: 10,
            adaptive_rate: true,
            cache_entries: 1000,
            segment_format: SegmentFormat::Markers,
            adaptive_batching: true,
            fallback_providers: Vec::new(),
            fallback_after_ms: 10_000.0,
            providers: Vec::new(),
            tokens_per_minute: 0.0,
            max_queued: 0,
            pools: Pools::default(),
            shared_quota: true,
        }
    }
}

impl Options {
    /// The provider that takes over `provider_id`'s items when it cannot serve them.
    pub fn fallback_of(&self, provider_id: &str) -> Option<&str> {
        self.fallback_providers
            .iter()
            .find(|(from, _)| from == provider_id)
            .map(|(_, to)| to.as_str())
    }

    /// Provider `id`'s own settings, if `providers` lists it.
    pub fn provider_settings(&self, id: &str) -> Option<&ProviderSettings> {
        let mut listed = self.providers.iter();
        listed.find(|(known, _)| known == id).map(|(_, s)| s)
    }

    /// The options as `(name, value)` pairs in contract order, for `pacer.options`.
    /// `fallbackProviders` (no default value) and `maxQueued` (an addition) appear only
    /// once set.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn entries(&self) -> Vec<(&'static str, OptionValue)> {
        use OptionValue::{Bool, Number};
        let mut entries = vec![
            ("rate", Number(self.rate)),
            ("capacity", Number(self.capacity)),
            ("maxInFlight", Number(self.max_in_flight as f64)),
            (
                "maxCharactersPerBatch",
                Number(self.max_characters_per_batch as f64),
            ),
            ("maxItemsPerBatch", Number(self.max_items_per_batch as f64)),
            ("batchDelayMs", Number(self.batch_delay_ms)),
            ("maxBatchRetries", Number(self.max_batch_retries as f64)),
            ("fallbackToIndividual", Bool(self.fallback_to_individual)),
            ("timeoutMs", Number(self.timeout_ms)),
            (
                "timeoutPerCharacterMs",
                Number(self.timeout_per_character_ms),
            ),
            ("maxRetries", Number(self.max_retries as f64)),
            ("baseRetryDelayMs", Number(self.base_retry_delay_ms)),
            (
                "maxRateLimitRetries",
                Number(self.max_rate_limit_retries as f64),
            ),
            ("adaptiveRate", Bool(self.adaptive_rate)),
            ("cacheEntries", Number(self.cache_entries as f64)),
            (
                "segmentFormat",
                OptionValue::Text(self.segment_format.as_str().to_owned()),
            ),
            ("adaptiveBatching", Bool(self.adaptive_batching)),
            ("fallbackAfterMs", Number(self.fallback_after_ms)),
            ("tokensPerMinute", Number(self.tokens_per_minute)),
        ];
        if !self.fallback_providers.is_empty() {
            let map = self.fallback_providers.iter();
            let map = map.map(|(from, to)| (from.clone(), OptionValue::Text(to.clone())));
            entries.push(("fallbackProviders", OptionValue::Map(map.collect())));
        }
        if !self.providers.is_empty() {
            let map = self.providers.iter();
            let map = map.map(|(id, s)| (id.clone(), OptionValue::Map(s.entries())));
            entries.push(("providers", OptionValue::Map(map.collect())));
        }
        if self.max_queued != 0 {
            entries.push(("maxQueued", Number(self.max_queued as f64)));
        }
        if !self.pools.is_empty() {
            entries.push(("pools", self.pools.to_value()));
        }
        if !self.shared_quota {
            entries.push(("sharedQuota", Bool(false)));
        }
        entries
    }
}

#[cfg(test)]
mod tests;
