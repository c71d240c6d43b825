//! Conversions between JS values and the core's types. Type checks live here (a JS value
//! has a type the core cannot see); every other rule is the core's.

use js_sys::{Array, Function, Object, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::{
    invalid_input, Compat, Duration, Event, Failure, Item, LookupResult, OptionValue, Options,
    PacerFailure, ProviderSnapshot, Quota, Reply, Report, ReportedLimits, SavedDailyBlock,
    Snapshot, Stats, Usage,
};

/// Reads a property; a throwing getter reads as `undefined`.
pub fn get(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

#[wasm_bindgen]
extern "C" {
    /// An object the binding has just made: it has no setter that could throw.
    type FreshObject;
    /// `target[key] = value`. Not `Reflect.set`, whose import catches (no need here), and
    /// this import has the signature of one serde-wasm-bindgen uses: one wrapper fewer
    /// for V8 to compile at start-up.
    #[wasm_bindgen(method, structural, indexing_setter)]
    fn set_field(this: &FreshObject, key: &JsValue, value: &JsValue);
}

/// Sets a data property on a fresh object the binding made.
pub fn set(target: &Object, key: &str, value: &JsValue) {
    let target: &FreshObject = target.unchecked_ref();
    target.set_field(&JsValue::from_str(key), value);
}

/// A JS value as the core describes values in messages.
pub fn describe(value: &JsValue) -> OptionValue {
    if value.is_undefined() {
        OptionValue::Undefined
    } else if value.is_null() {
        OptionValue::Null
    } else if let Some(b) = value.as_bool() {
        OptionValue::Bool(b)
    } else if let Some(n) = value.as_f64() {
        OptionValue::Number(n)
    } else if let Some(s) = value.as_string() {
        OptionValue::Text(s)
    } else if Array::is_array(value) {
        OptionValue::Other("an array".into())
    } else {
        OptionValue::Other(value.js_typeof().as_string().unwrap_or_default())
    }
}

/// An item's fields, owned, read from a JS object.
pub struct ItemFields {
    pub text: String,
    pub source_lang: String,
    pub target_lang: String,
    pub provider_id: String,
    pub context: String,
    pub llm: bool,
    pub priority: f64,
    pub aborted: bool,
}

impl ItemFields {
    /// The core's view of these fields.
    pub fn item(&self) -> Item<'_> {
        Item {
            text: &self.text,
            compat: Compat {
                provider_id: &self.provider_id,
                source_lang: &self.source_lang,
                target_lang: &self.target_lang,
                context: &self.context,
                llm: self.llm,
            },
            priority: self.priority,
            tokens: None,
        }
    }
}

type InputResult<T> = Result<T, PacerFailure<JsValue>>;

// Direct property access from the generated JS glue: no key strings cross the
// boundary, which matters on the per-item and per-call paths.
#[wasm_bindgen]
extern "C" {
    /// A `translate` item as JS passed it.
    pub type ItemJs;
    #[wasm_bindgen(method, getter, structural)]
    fn text(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = sourceLang)]
    fn source_lang(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = targetLang)]
    fn target_lang(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = providerId)]
    fn provider_id(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn context(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn llm(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn priority(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn signal(this: &ItemJs) -> JsValue;
}

fn string_field(
    value: JsValue,
    field: &str,
    rule: &str,
    default: Option<&str>,
) -> InputResult<String> {
    match (value.as_string(), default) {
        (Some(s), _) => Ok(s),
        (None, Some(d)) if value.is_undefined() => Ok(d.to_owned()),
        _ => Err(invalid_input(field, rule, &describe(&value))),
    }
}

/// Reads and type-checks an item.
pub fn item_fields(value: &JsValue) -> InputResult<ItemFields> {
    if !value.is_object() {
        return Err(invalid_input("item", "an object", &describe(value)));
    }
    let item: &ItemJs = value.unchecked_ref();
    let name = "a non-empty string";
    let text = string_field(item.text(), "text", "a string", None)?;
    let source_lang = string_field(item.source_lang(), "sourceLang", name, None)?;
    let target_lang = string_field(item.target_lang(), "targetLang", name, None)?;
    let provider_id = string_field(item.provider_id(), "providerId", name, None)?;
    let context = string_field(item.context(), "context", "a string", Some(""))?;
    let llm = match item.llm() {
        v if v.is_undefined() => true,
        v => v
            .as_bool()
            .ok_or_else(|| invalid_input("llm", "a boolean", &describe(&v)))?,
    };
    let priority = match item.priority() {
        v if v.is_undefined() => 0.0,
        v => v
            .as_f64()
            .ok_or_else(|| invalid_input("priority", "a finite number", &describe(&v)))?,
    };
    let signal = item.signal();
    let aborted = if signal.is_undefined() || signal.is_null() {
        false
    } else {
        let aborted = get(&signal, "aborted").as_bool();
        match aborted {
            Some(a) if get(&signal, "addEventListener").is_function() => a,
            _ => {
                return Err(invalid_input(
                    "signal",
                    "an AbortSignal",
                    &describe(&signal),
                ))
            }
        }
    };
    Ok(ItemFields {
        text,
        source_lang,
        target_lang,
        provider_id,
        context,
        llm,
        priority,
        aborted,
    })
}

/// The `(name, value)` pairs of an options object, with the binding's own options
/// (`clock`, `onEvent`, `cache`) split off.
pub struct OptionsInput {
    pub core: Vec<(String, OptionValue)>,
    pub clock: Option<JsValue>,
    pub on_event: Option<JsValue>,
    pub cache: Option<JsValue>,
    pub restore: Option<JsValue>,
    pub estimate_tokens: Option<JsValue>,
}

/// Reads an options object; `undefined` and `null` mean no options.
pub fn options_input(value: &JsValue, what: &str) -> Result<OptionsInput, String> {
    let mut input = OptionsInput {
        core: Vec::new(),
        clock: None,
        on_event: None,
        cache: None,
        restore: None,
        estimate_tokens: None,
    };
    if value.is_undefined() || value.is_null() {
        return Ok(input);
    }
    if !value.is_object() || Array::is_array(value) || value.is_function() {
        return Err(format!(
            "{what} must be an object (got {})",
            describe(value)
        ));
    }
    let entries = Object::entries(value.unchecked_ref());
    for entry in entries.iter() {
        let pair: Array = entry.unchecked_into();
        let name = pair.get(0).as_string().unwrap_or_default();
        let v = pair.get(1);
        let present = !v.is_undefined();
        match name.as_str() {
            "clock" => input.clock = present.then_some(v),
            "onEvent" => input.on_event = present.then_some(v),
            "cache" => input.cache = present.then_some(v),
            // Settings storage yields null for "nothing saved": no restore, like undefined.
            "restore" => input.restore = (present && !v.is_null()).then_some(v),
            "estimateTokens" => input.estimate_tokens = present.then_some(v),
            _ => input.core.push((name, describe(&v))),
        }
    }
    Ok(input)
}

/// Options as a plain object (for `pacer.options` and `DEFAULTS`).
pub fn options_object(options: &Options) -> JsValue {
    let object = Object::new();
    for (name, value) in options.entries() {
        let v = match value {
            OptionValue::Bool(b) => JsValue::from_bool(b),
            OptionValue::Number(n) => JsValue::from_f64(n),
            OptionValue::Text(t) => JsValue::from_str(&t),
            _ => JsValue::UNDEFINED,
        };
        set(&object, name, &v);
    }
    object.into()
}

/// A provider's resolved value as a reply and what it reported beside it, or a
/// bad-reply failure. `{ translations, usage, limits }` carries any reply form.
pub fn reply_from(value: JsValue) -> Result<(Reply, Report), Failure<JsValue>> {
    let translations = get_own(&value, "translations");
    if translations.is_undefined() {
        return translations_from(value).map(|reply| (reply, Report::default()));
    }
    let reply = translations_from(translations)?;
    let report = Report {
        usage: usage_from(&get(&value, "usage")),
        limits: limits_from(&get(&value, "limits")),
    };
    Ok((reply, report))
}

/// `target[key]` when `target` is an object holding it as an own property.
fn get_own(target: &JsValue, key: &str) -> JsValue {
    let own = target.is_object()
        && !Array::is_array(target)
        && Object::has_own(target.unchecked_ref::<Object>(), &JsValue::from_str(key));
    if own {
        get(target, key)
    } else {
        JsValue::UNDEFINED
    }
}

/// A string, an array of strings, or an object of strings keyed by id.
fn translations_from(value: JsValue) -> Result<Reply, Failure<JsValue>> {
    if let Some(text) = value.as_string() {
        return Ok(Reply::Text(text));
    }
    if Array::is_array(&value) {
        let array: Array = value.unchecked_into();
        let texts: Option<Vec<String>> = array.iter().map(|v| v.as_string()).collect();
        return texts
            .map(Reply::Texts)
            .ok_or_else(|| Failure::bad_reply("an array holding a non-string"));
    }
    if value.is_object() && !value.is_function() {
        let mut pairs = Vec::new();
        for entry in Object::entries(value.unchecked_ref()).iter() {
            let pair: Array = entry.unchecked_into();
            let (key, text) = (pair.get(0).as_string(), pair.get(1).as_string());
            match (key, text) {
                (Some(key), Some(text)) => pairs.push((key, text)),
                _ => return Err(Failure::bad_reply("an object holding a non-string")),
            }
        }
        return Ok(Reply::Keyed(pairs));
    }
    Err(Failure::bad_reply(&describe(&value).to_string()))
}

/// A count reported by the provider: a finite number >= 0.
fn count(value: &JsValue, key: &str) -> Option<f64> {
    get(value, key)
        .as_f64()
        .filter(|n| n.is_finite() && *n >= 0.0)
}

/// `{ inputTokens, outputTokens }`, either may be missing.
fn usage_from(value: &JsValue) -> Option<Usage> {
    if !value.is_object() {
        return None;
    }
    let (input, output) = (count(value, "inputTokens"), count(value, "outputTokens"));
    (input.is_some() || output.is_some()).then(|| Usage {
        input_tokens: input.unwrap_or(0.0),
        output_tokens: output.unwrap_or(0.0),
    })
}

/// `{ requestsRemaining, requestsResetMs, tokensRemaining, tokensResetMs }`, any subset.
pub fn limits_from(value: &JsValue) -> ReportedLimits {
    if !value.is_object() {
        return ReportedLimits::default();
    }
    ReportedLimits {
        requests_remaining: count(value, "requestsRemaining"),
        requests_reset: count(value, "requestsResetMs").map(Duration::from_millis),
        tokens_remaining: count(value, "tokensRemaining"),
        tokens_reset: count(value, "tokensResetMs").map(Duration::from_millis),
    }
}

/// Checks the `cache` option's shape: `{ get(key), set(key, value) }`.
pub fn store(value: &JsValue) -> Result<JsValue, String> {
    if value.is_object() && get(value, "get").is_function() && get(value, "set").is_function() {
        Ok(value.clone())
    } else {
        Err(format!(
            "cache must be an object with get(key) and set(key, value) (got {})",
            describe(value)
        ))
    }
}

/// Calls `target[name](first)`, or `target[name](first, second)`; a throw is returned as
/// the error. (Not `apply` with an array: the two calls' imports are there already.)
pub fn call_method(
    target: &JsValue,
    name: &str,
    first: &JsValue,
    second: Option<&JsValue>,
) -> Result<JsValue, JsValue> {
    let method: Function = get(target, name).dyn_into()?;
    match second {
        None => method.call1(target, first),
        Some(second) => method.call2(target, first, second),
    }
}

/// A store's answer: a string is a hit, `undefined` or `null` a miss, anything else a
/// failure (a store must never put garbage under a paragraph).
pub fn lookup_result(value: &JsValue) -> LookupResult {
    match value.as_string() {
        Some(text) => LookupResult::Hit(text),
        None if value.is_undefined() || value.is_null() => LookupResult::Miss,
        None => LookupResult::Failed(format!(
            "the store returned {}, not a string",
            describe(value)
        )),
    }
}

/// An error's message, or the thrown value described.
pub fn error_message(error: &JsValue) -> String {
    get(error, "message")
        .as_string()
        .or_else(|| error.as_string())
        .unwrap_or_else(|| describe(error).to_string())
}

/// A thrown or rejected provider error as a failure: status, Retry-After, message.
pub fn failure_from(error: JsValue) -> Failure<JsValue> {
    let status = get(&error, "status")
        .as_f64()
        .filter(|s| (100.0..=599.0).contains(s) && s.fract() == 0.0)
        .map(|s| s as u16);
    let message = error_message(&error);
    let mut failure = Failure::error(status, retry_after(&error), &message);
    failure.limits = limits_from(&get(&error, "limits"));
    failure.quota = match get(&error, "quota").as_string().as_deref() {
        Some("rate") => Some(Quota::Rate),
        Some("daily") => Some(Quota::Daily),
        Some("billing") => Some(Quota::Billing),
        _ => None,
    };
    failure.with_cause(error)
}

fn retry_after(error: &JsValue) -> Option<Duration> {
    if let Some(ms) = get(error, "retryAfterMs").as_f64().filter(|v| *v >= 0.0) {
        return Some(Duration::from_millis(ms));
    }
    let seconds = get(error, "retryAfter");
    if let Some(s) = seconds.as_f64().filter(|v| *v >= 0.0) {
        return Some(Duration::from_secs(s));
    }
    if seconds.is_string() {
        return parse_retry_after(&seconds);
    }
    let headers = get(error, "headers");
    if !headers.is_object() {
        return None;
    }
    let value = match get(&headers, "get").dyn_into::<Function>() {
        Ok(get_header) => get_header
            .call1(&headers, &JsValue::from_str("retry-after"))
            .unwrap_or(JsValue::UNDEFINED),
        Err(_) => {
            let lower = get(&headers, "retry-after");
            if lower.is_undefined() {
                get(&headers, "Retry-After")
            } else {
                lower
            }
        }
    };
    match value.as_f64() {
        Some(s) if s >= 0.0 => Some(Duration::from_secs(s)),
        _ if value.is_string() => parse_retry_after(&value),
        _ => None,
    }
}

// The package's one Retry-After reading, shared with openAIProvider.
#[wasm_bindgen(module = "/js/retry-after.js")]
extern "C" {
    #[wasm_bindgen(js_name = parseRetryAfter)]
    fn retry_after_ms(text: &JsValue) -> JsValue;
}

/// Retry-After text in either HTTP form: delay-seconds or an HTTP-date.
fn parse_retry_after(text: &JsValue) -> Option<Duration> {
    retry_after_ms(text).as_f64().map(Duration::from_millis)
}

// Counts cross as f64 (exact to 2^53): serde-wasm-bindgen writes a u64 through its own
// BigInt import, one more signature for V8 to compile a wrapper for at start-up.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatsView {
    items: f64,
    cache_hits: f64,
    dedup_hits: f64,
    provider_calls: f64,
    batch_calls: f64,
    retries: f64,
    count_mismatches: f64,
    fallbacks: f64,
    rate_limited: f64,
    failed: f64,
    aborted: f64,
    succeeded: f64,
    disposed: f64,
    pending: f64,
    queued: f64,
    in_flight: f64,
    input_tokens: f64,
    output_tokens: f64,
}

fn to_js<T: Serialize>(value: &T) -> JsValue {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    value.serialize(&serializer).unwrap_or(JsValue::UNDEFINED)
}

/// A snapshot as JSON sees it (`pacer.snapshot()`, the `restore` option).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotView {
    version: u32,
    wall_time: f64,
    tokens: f64,
    providers: Vec<ProviderView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProviderView {
    provider_id: String,
    paused_for_ms: f64,
    adaptive_rate: Option<f64>,
    adaptive_ceiling: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    daily_block: Option<DailyBlockView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DailyBlockView {
    blocked_for_ms: f64,
    reset_known: bool,
    message: String,
}

/// A snapshot as plain JSON.
pub fn snapshot_object(snapshot: &Snapshot) -> JsValue {
    to_js(&SnapshotView {
        version: 1,
        wall_time: snapshot.wall_time_ms,
        tokens: snapshot.tokens,
        providers: snapshot
            .providers
            .iter()
            .map(|p| ProviderView {
                provider_id: p.provider_id.clone(),
                paused_for_ms: p.paused_for.as_millis(),
                adaptive_rate: p.adaptive_rate,
                adaptive_ceiling: p.adaptive_ceiling,
                daily_block: p.daily_block.as_ref().map(|b| DailyBlockView {
                    blocked_for_ms: b.blocked_for.as_millis(),
                    reset_known: b.reset_known,
                    message: b.message.clone(),
                }),
            })
            .collect(),
    })
}

fn snapshot_number(value: &JsValue, field: &str) -> Result<f64, String> {
    get(value, field).as_f64().ok_or_else(|| {
        format!(
            "restore.{field} must be a number (got {})",
            describe(&get(value, field))
        )
    })
}

/// Reads a `restore` value (read by hand: a serde deserializer would pull float
/// formatting into the binary); the core checks what the numbers mean.
pub fn snapshot_from(value: &JsValue) -> Result<Snapshot, String> {
    if !value.is_object() || Array::is_array(value) {
        return Err(format!(
            "restore must be a value returned by snapshot() (got {})",
            describe(value)
        ));
    }
    if get(value, "version").as_f64() != Some(1.0) {
        return Err(format!(
            "restore.version must be 1 (got {})",
            describe(&get(value, "version"))
        ));
    }
    let providers_value = get(value, "providers");
    if !Array::is_array(&providers_value) {
        return Err(format!(
            "restore.providers must be an array (got {})",
            describe(&providers_value)
        ));
    }
    let mut providers = Vec::new();
    for entry in Array::from(&providers_value).iter() {
        let provider_id = get(&entry, "providerId").as_string().ok_or_else(|| {
            format!(
                "restore.providers[].providerId must be a string (got {})",
                describe(&get(&entry, "providerId"))
            )
        })?;
        let adaptive = get(&entry, "adaptiveRate");
        let adaptive_rate = if adaptive.is_null() || adaptive.is_undefined() {
            None
        } else {
            Some(snapshot_number(&entry, "adaptiveRate")?)
        };
        let block = get(&entry, "dailyBlock");
        let daily_block = if block.is_object() {
            Some(SavedDailyBlock {
                blocked_for: Duration::from_millis(
                    snapshot_number(&block, "blockedForMs")?.max(0.0),
                ),
                reset_known: get(&block, "resetKnown").as_bool().unwrap_or(false),
                message: get(&block, "message").as_string().unwrap_or_default(),
            })
        } else {
            None
        };
        providers.push(ProviderSnapshot {
            provider_id,
            paused_for: Duration::from_millis(snapshot_number(&entry, "pausedForMs")?),
            adaptive_rate,
            adaptive_ceiling: snapshot_number(&entry, "adaptiveCeiling")?,
            daily_block,
        });
    }
    Ok(Snapshot {
        wall_time_ms: snapshot_number(value, "wallTime")?,
        tokens: snapshot_number(value, "tokens")?,
        providers,
    })
}

/// Stats as a plain object.
pub fn stats_object(s: &Stats) -> JsValue {
    to_js(&StatsView {
        items: s.items as f64,
        cache_hits: s.cache_hits as f64,
        dedup_hits: s.dedup_hits as f64,
        provider_calls: s.provider_calls as f64,
        batch_calls: s.batch_calls as f64,
        retries: s.retries as f64,
        count_mismatches: s.count_mismatches as f64,
        fallbacks: s.fallbacks as f64,
        rate_limited: s.rate_limited as f64,
        failed: s.failed as f64,
        aborted: s.aborted as f64,
        succeeded: s.succeeded as f64,
        disposed: s.disposed as f64,
        pending: s.pending as f64,
        queued: s.queued as f64,
        in_flight: s.in_flight as f64,
        input_tokens: s.input_tokens as f64,
        output_tokens: s.output_tokens as f64,
    })
}

#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum EventView<'a> {
    RateLimited {
        provider_id: &'a str,
        retry_after_ms: Option<f64>,
        paused_for_ms: f64,
    },
    AdaptiveRate {
        provider_id: &'a str,
        rate: Option<f64>,
    },
    Retry {
        provider_id: &'a str,
        reason: &'static str,
        attempt: u32,
        delay_ms: f64,
    },
    CountMismatch {
        provider_id: &'a str,
        expected: f64,
        got: f64,
    },
    Fallback {
        provider_id: &'a str,
        items: f64,
    },
    Timeout {
        provider_id: &'a str,
    },
    CacheError {
        operation: &'static str,
        message: &'a str,
    },
    Limited {
        provider_id: &'a str,
        reason: &'static str,
        reset_ms: f64,
        retry_at: f64,
    },
    Blocked {
        provider_id: &'a str,
        reason: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_at: Option<f64>,
    },
}

/// Epoch milliseconds `after` from now.
pub fn wall_time_in(after: Duration) -> f64 {
    (js_sys::Date::now() + after.as_millis()).round()
}

/// An event as a plain `{ type, ... }` object.
pub fn event_object(event: &Event) -> JsValue {
    let view = match event {
        Event::RateLimited {
            provider_id,
            retry_after,
            paused_for,
        } => EventView::RateLimited {
            provider_id,
            retry_after_ms: retry_after.map(Duration::as_millis),
            paused_for_ms: paused_for.as_millis(),
        },
        Event::AdaptiveRate { provider_id, rate } => EventView::AdaptiveRate {
            provider_id,
            rate: *rate,
        },
        Event::Retry {
            provider_id,
            reason,
            attempt,
            delay,
        } => EventView::Retry {
            provider_id,
            reason: reason.as_str(),
            attempt: *attempt,
            delay_ms: delay.as_millis(),
        },
        Event::CountMismatch {
            provider_id,
            expected,
            got,
        } => EventView::CountMismatch {
            provider_id,
            expected: *expected as f64,
            got: *got as f64,
        },
        Event::Fallback { provider_id, items } => EventView::Fallback {
            provider_id,
            items: *items as f64,
        },
        Event::Timeout { provider_id } => EventView::Timeout { provider_id },
        Event::CacheError { operation, message } => EventView::CacheError { operation, message },
        Event::Limited {
            provider_id,
            reason,
            wait,
        } => EventView::Limited {
            provider_id,
            reason: reason.as_str(),
            reset_ms: wait.as_millis(),
            retry_at: wall_time_in(*wait),
        },
        Event::Blocked {
            provider_id,
            reason,
            status,
            message,
            until,
        } => EventView::Blocked {
            provider_id,
            reason: reason.as_str(),
            status: *status,
            message,
            retry_at: until.map(wall_time_in),
        },
    };
    to_js(&view)
}
