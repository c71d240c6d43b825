//! Options, their defaults, and validation whose messages name the option and the value.
//!
//! Options arrive as `(name, value)` pairs so that the core, not the JS layer, decides
//! every rule: unknown names, wrong types and out-of-range values are all rejected here,
//! and a patch is validated as a whole before anything changes.

use core::fmt;

use crate::display::{js_number, js_string};
use crate::hash::{look_up, IdMap};
use crate::key::Keyer;
use crate::pools::Pools;
use crate::provider_settings::{providers_map, ProviderSettings};

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

fn segment_format(name: &str, value: &OptionValue) -> Result<SegmentFormat, OptionsError> {
    match value {
        OptionValue::Text(t) if t == "markers" => Ok(SegmentFormat::Markers),
        OptionValue::Text(t) if t == "separator" => Ok(SegmentFormat::Separator),
        _ => Err(reject(name, "\"markers\" or \"separator\"", value)),
    }
}

/// `fallbackProviders`: an object of non-empty providerId strings, none mapped to
/// itself, without a cycle.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn fallback_map(name: &str, value: &OptionValue) -> Result<Vec<(String, String)>, OptionsError> {
    let OptionValue::Map(entries) = value else {
        return Err(reject(
            name,
            "an object mapping a providerId to another providerId",
            value,
        ));
    };
    let fail = |message: String| OptionsError {
        option: name.to_owned(),
        message,
    };
    let mut map: Vec<(String, String)> = Vec::with_capacity(entries.len());
    for (from, to) in entries {
        let to = match to {
            OptionValue::Text(to) if !to.is_empty() => to,
            other => {
                return Err(fail(format!(
                    "{name} must map each providerId to a non-empty providerId string (got {}: {other})",
                    js_string(from)
                )))
            }
        };
        if from.is_empty() {
            return Err(fail(format!(
                "{name} must map non-empty providerIds (got \"\": {})",
                js_string(to)
            )));
        }
        if from == to {
            return Err(fail(format!(
                "{name} must not map a provider to itself (got {} -> {})",
                js_string(from),
                js_string(to)
            )));
        }
        map.push((from.clone(), to.clone()));
    }
    if let Some(chain) = first_cycle(&map) {
        return Err(fail(format!(
            "{name} must not have a cycle (got {})",
            shown_chain(&chain)
        )));
    }
    Ok(map)
}

/// The chain of the first provider (in `map`'s order) whose fallbacks loop, up to the
/// first id it repeats: `a -> b -> a`. Each provider is walked through once in all: a
/// walk that reaches a provider an earlier walk went through stops there, as that
/// provider's chain is known to end. Each step looks its provider up by a digest of its
/// id, so a chain of 100,000 providers is checked in milliseconds (a search along the
/// map at each step took seconds for 2,000).
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn first_cycle(map: &[(String, String)]) -> Option<Vec<&str>> {
    // SipHash, whose words spread well in the table (the fold of `FoldHasher` leaves the
    // low bits of ids like "p1", "p2", ... alike); no secret key: a crafted collision
    // only slows the check of the options of whoever crafted it.
    let digest = |id: &str| Keyer::new(0).fields_word(id.as_bytes());
    let mut index = IdMap::default();
    for (i, (from, _)) in map.iter().enumerate() {
        // Of two entries for one id (possible only from Rust), the first one counts.
        let key = digest(from);
        if look_up(&index, key).is_none() {
            index.insert(key, i as u64);
        }
    }
    let entry = |id: &str| match look_up(&index, digest(id)) {
        Some(i) if map[i as usize].0 == id => Some(i as usize),
        // Two ids with one digest: rare, and only slower.
        Some(_) => map.iter().position(|(from, _)| from == id),
        None => None,
    };
    // The walk (its start, plus one) that first went through each entry; 0: none yet.
    let mut walked = vec![0; map.len()];
    for start in 0..map.len() {
        if walked[start] != 0 {
            continue;
        }
        let mut chain = Vec::new();
        let mut at = start;
        loop {
            walked[at] = start + 1;
            chain.push(map[at].0.as_str());
            let Some(next) = entry(&map[at].1) else { break };
            if walked[next] == start + 1 {
                chain.push(map[next].0.as_str());
                return Some(chain);
            }
            if walked[next] != 0 {
                break;
            }
            at = next;
        }
    }
    None
}

/// A chain of ids for a message: a long one shows its first and last few ids.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn shown_chain(chain: &[&str]) -> String {
    const ENDS: usize = 4;
    let long = chain.len() > 3 * ENDS;
    let mut shown = String::new();
    for (i, id) in chain.iter().enumerate() {
        if long && i == ENDS {
            shown.push_str(" -> …");
        }
        if long && (ENDS..chain.len() - ENDS).contains(&i) {
            continue;
        }
        if i > 0 {
            shown.push_str(" -> ");
        }
        shown.push_str(&js_string(id));
    }
    if long {
        shown.push_str(&format!(" ({} ids)", chain.len()));
    }
    shown
}

fn boolean(name: &str, value: &OptionValue) -> Result<bool, OptionsError> {
    match value {
        OptionValue::Bool(b) => Ok(*b),
        _ => Err(reject(name, "a boolean", value)),
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
mod tests {
    use super::OptionValue::*;
    use super::*;

    fn err(patch: &[(&str, OptionValue)]) -> String {
        Options::default().patched(patch).unwrap_err().message
    }

    #[test]
    fn defaults_are_the_contract() {
        let names: Vec<_> = Options::default().entries().iter().map(|e| e.0).collect();
        assert_eq!(
            names,
            [
                &OPTION_NAMES[..17],
                &OPTION_NAMES[18..19],
                &OPTION_NAMES[20..21]
            ]
            .concat()
        );
        let o = Options::default();
        assert_eq!((o.rate, o.capacity, o.max_in_flight), (8.0, 60.0, 0));
        assert_eq!(
            (o.max_characters_per_batch, o.max_items_per_batch),
            (1000, 4)
        );
        assert_eq!((o.batch_delay_ms, o.max_batch_retries), (100.0, 3));
        assert!(o.fallback_to_individual && o.adaptive_rate);
        assert_eq!(
            (o.timeout_ms, o.max_retries, o.base_retry_delay_ms),
            (20_000.0, 2, 1000.0)
        );
        assert_eq!(o.timeout_per_character_ms, 15.0);
        assert_eq!((o.max_rate_limit_retries, o.cache_entries), (10, 1000));
        assert_eq!(o.segment_format, SegmentFormat::Markers);
        assert_eq!(o.tokens_per_minute, 0.0);
        assert!(o.adaptive_batching);
    }

    #[test]
    fn segment_format_takes_its_two_names() {
        let separator = Options::default()
            .patched(&[("segmentFormat", Text("separator".into()))])
            .unwrap();
        assert_eq!(separator.segment_format, SegmentFormat::Separator);
        assert_eq!(
            err(&[("segmentFormat", Text("json".into()))]),
            r#"segmentFormat must be "markers" or "separator" (got "json")"#
        );
        assert_eq!(
            err(&[("tokensPerMinute", Number(-1.0))]),
            "tokensPerMinute must be a finite number >= 0 (got -1)"
        );
    }

    #[test]
    fn every_name_sets_its_own_option() {
        let defaults = Options::default();
        for (name, value) in defaults.entries() {
            let changed = match value {
                Number(n) => Number(n + 1.0),
                Bool(b) => Bool(!b),
                Text(t) if t == "markers" => Text("separator".into()),
                other => panic!("{name} has the default {other}"),
            };
            let patched = defaults.patched(&[(name, changed.clone())]).unwrap();
            for ((n, before), (m, after)) in defaults.entries().into_iter().zip(patched.entries()) {
                assert_eq!(n, m);
                let want = if n == name { &changed } else { &before };
                assert_eq!(&after, want, "patching {name} left {n} at {after}");
            }
        }
        let queued = defaults.patched(&[("maxQueued", Number(5.0))]).unwrap();
        assert_eq!(queued.entries().last(), Some(&("maxQueued", Number(5.0))));
    }

    #[test]
    fn messages_name_option_and_value() {
        assert_eq!(
            err(&[("rate", Number(-1.0))]),
            "rate must be a finite number > 0 (got -1)"
        );
        assert_eq!(
            err(&[("rate", Number(f64::NAN))]),
            "rate must be a finite number > 0 (got NaN)"
        );
        assert_eq!(
            err(&[("capacity", Number(1.5))]),
            "capacity must be an integer >= 1 (got 1.5)"
        );
        assert_eq!(
            err(&[("maxInFlight", Text("2".into()))]),
            "maxInFlight must be an integer >= 0 (got \"2\")"
        );
        assert_eq!(
            err(&[("timeoutMs", Number(f64::INFINITY))]),
            "timeoutMs must be a finite number >= 0 (got Infinity)"
        );
        assert_eq!(
            err(&[("timeoutPerCharacterMs", Number(-0.5))]),
            "timeoutPerCharacterMs must be a finite number >= 0 (got -0.5)"
        );
        assert_eq!(
            err(&[("timeoutPerCharacterMs", Text("15".into()))]),
            "timeoutPerCharacterMs must be a finite number >= 0 (got \"15\")"
        );
        assert_eq!(
            err(&[("adaptiveRate", Null)]),
            "adaptiveRate must be a boolean (got null)"
        );
        assert_eq!(
            err(&[("ratee", Number(5.0))]),
            "unknown option \"ratee\" (got 5)"
        );
        assert_eq!(
            err(&[("cacheEntries", Other("object".into()))]),
            "cacheEntries must be an integer >= 0 (got object)"
        );
    }

    #[test]
    fn patch_is_all_or_nothing_and_undefined_means_unchanged() {
        let base = Options::default();
        assert!(base
            .patched(&[("rate", Number(2.0)), ("capacity", Number(0.0))])
            .is_err());
        let next = base
            .patched(&[("rate", Number(0.25)), ("capacity", Undefined)])
            .unwrap();
        assert_eq!((next.rate, next.capacity), (0.25, 60.0));
        assert!(base.patched(&[("nope", Undefined)]).is_err());
    }

    fn map(entries: &[(&str, OptionValue)]) -> OptionValue {
        Map(entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect())
    }

    #[test]
    fn fallback_providers_take_a_map_without_self_maps_or_cycles() {
        let chain = map(&[("a", Text("b".into())), ("b", Text("c".into()))]);
        let o = Options::default()
            .patched(&[("fallbackProviders", chain)])
            .unwrap();
        assert_eq!(o.fallback_of("a"), Some("b"));
        assert_eq!(o.fallback_of("c"), None);
        assert_eq!(
            err(&[("fallbackProviders", map(&[("a", Text("a".into()))]))]),
            r#"fallbackProviders must not map a provider to itself (got "a" -> "a")"#
        );
        let cycle = map(&[("a", Text("b".into())), ("b", Text("a".into()))]);
        assert_eq!(
            err(&[("fallbackProviders", cycle)]),
            r#"fallbackProviders must not have a cycle (got "a" -> "b" -> "a")"#
        );
        assert_eq!(
            err(&[("fallbackProviders", map(&[("a", Number(1.0))]))]),
            r#"fallbackProviders must map each providerId to a non-empty providerId string (got "a": 1)"#
        );
        assert_eq!(
            err(&[("fallbackProviders", map(&[("a", Text(String::new()))]))]),
            r#"fallbackProviders must map each providerId to a non-empty providerId string (got "a": "")"#
        );
        assert_eq!(
            err(&[("fallbackProviders", Text("b".into()))]),
            r#"fallbackProviders must be an object mapping a providerId to another providerId (got "b")"#
        );
        assert_eq!(
            err(&[("fallbackAfterMs", Number(-1.0))]),
            "fallbackAfterMs must be a finite number >= 0 (got -1)"
        );
        assert_eq!(Options::default().fallback_after_ms, 10_000.0);
    }

    /// `p0 -> p1 -> ... -> p{len}`, listed from its end so that each walk meets the
    /// providers an earlier walk went through.
    fn chain(len: usize) -> Vec<(String, OptionValue)> {
        (0..len)
            .rev()
            .map(|i| (format!("p{i}"), Text(format!("p{}", i + 1))))
            .collect()
    }

    #[test]
    fn a_fallback_chain_of_100000_providers_is_checked_in_one_pass() {
        let o = Options::default()
            .patched(&[("fallbackProviders", Map(chain(100_000)))])
            .unwrap();
        assert_eq!(o.fallback_providers.len(), 100_000);
        assert_eq!(o.fallback_of("p0"), Some("p1"));
        assert_eq!(o.fallback_of("p99999"), Some("p100000"));

        // The same chain closed into a loop: found, and shown by its ends.
        let mut looped = chain(100_000);
        looped[0].1 = Text("p0".into());
        assert_eq!(
            err(&[("fallbackProviders", Map(looped))]),
            r#"fallbackProviders must not have a cycle (got "p99999" -> "p0" -> "p1" -> "p2" -> … -> "p99996" -> "p99997" -> "p99998" -> "p99999" (100001 ids))"#
        );
    }

    #[test]
    fn the_cycle_shown_is_the_first_providers_whatever_the_walks_before() {
        // "a" ends ("a" -> "b" -> "c"), then "x" loops back into itself through "y".
        let mixed = map(&[
            ("a", Text("b".into())),
            ("b", Text("c".into())),
            ("x", Text("y".into())),
            ("y", Text("b".into())),
            ("z", Text("z2".into())),
            ("z2", Text("z".into())),
        ]);
        assert_eq!(
            err(&[("fallbackProviders", mixed)]),
            r#"fallbackProviders must not have a cycle (got "z" -> "z2" -> "z")"#
        );
        let tail = map(&[
            ("q", Text("r".into())),
            ("r", Text("s".into())),
            ("s", Text("r".into())),
        ]);
        assert_eq!(
            err(&[("fallbackProviders", tail)]),
            r#"fallbackProviders must not have a cycle (got "q" -> "r" -> "s" -> "r")"#
        );
    }

    #[test]
    fn a_long_value_is_cut_in_its_message() {
        let long = "a".repeat(1 << 20);
        let message = err(&[("segmentFormat", Text(long.clone()))]);
        assert_eq!(
            message,
            format!(
                "segmentFormat must be \"markers\" or \"separator\" (got \"{}…\" (1048576 characters))",
                "a".repeat(100)
            )
        );
        assert!(
            err(&[(long.as_str(), Number(1.0))]).len() < 200,
            "an unknown name is cut too"
        );
    }
}
