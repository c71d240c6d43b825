//! What the core hands JS as plain objects: statistics, snapshots and events.

use std::rc::Rc;

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::convert::{describe, get, set};
use crate::length_ratio::PairRatio;
use crate::quota::{SavedLimits, SavedWindow};
use crate::stats::ProviderStats;
use crate::{Duration, Event, ProviderSnapshot, SavedDailyBlock, Snapshot, Stats};

/// A plain object filled in field by field, its keys in the order they are set (the order
/// `Object.keys` and `JSON.stringify` show). Built by hand rather than derived through
/// serde: the derived serializers and serde-wasm-bindgen's took 9 KB of the module for
/// four shapes. Counts cross as f64 (exact to 2^53), never as BigInt.
struct View(Object);

impl View {
    fn new() -> Self {
        View(Object::new())
    }

    fn value(self, key: &str, value: &JsValue) -> Self {
        set(&self.0, key, value);
        self
    }

    fn number(self, key: &str, n: f64) -> Self {
        self.value(key, &JsValue::from_f64(n))
    }

    fn text(self, key: &str, text: &str) -> Self {
        self.value(key, &JsValue::from_str(text))
    }

    /// `null` for `None`: the key is always there.
    fn number_or_null(self, key: &str, n: Option<f64>) -> Self {
        self.value(key, &n.map_or(JsValue::NULL, JsValue::from_f64))
    }

    /// Left out for `None`.
    fn number_if_some(self, key: &str, n: Option<f64>) -> Self {
        match n {
            Some(n) => self.number(key, n),
            None => self,
        }
    }

    fn into_js(self) -> JsValue {
        self.0.into()
    }
}

/// A snapshot as JSON sees it (`pacer.snapshot()`, the `restore` option).
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn snapshot_object(snapshot: &Snapshot) -> JsValue {
    let providers: Array = snapshot.providers.iter().map(provider_view).collect();
    View::new()
        .number("version", 1.0)
        .number("wallTime", snapshot.wall_time_ms)
        .number("tokens", snapshot.tokens)
        .value("providers", &providers)
        .into_js()
}

fn provider_view(p: &ProviderSnapshot) -> JsValue {
    let mut view = View::new()
        .text("providerId", &p.provider_id)
        .number("pausedForMs", p.paused_for.as_millis())
        .number_or_null("adaptiveRate", p.adaptive_rate)
        .number("adaptiveCeiling", p.adaptive_ceiling);
    if let Some(b) = &p.daily_block {
        let block = View::new()
            .number("blockedForMs", b.blocked_for.as_millis())
            .value("resetKnown", &JsValue::from_bool(b.reset_known))
            .text("message", &b.message);
        view = view.value("dailyBlock", &block.into_js());
    }
    if let Some(l) = &p.limits {
        let mut limits = View::new();
        if let Some(w) = &l.requests {
            limits = limits.value("requests", &window_view(w));
        }
        if let Some(w) = &l.tokens {
            limits = limits.value("tokens", &window_view(w));
        }
        view = view.value("limits", &limits.into_js());
    }
    view = view.number_if_some("batchLimit", p.batch_limit.map(f64::from));
    view = view.number_if_some("tokens", p.tokens);
    if !p.length_ratios.is_empty() {
        let ratios: Array = (p.length_ratios.iter())
            .map(|r| {
                View::new()
                    .text("sourceLang", &r.source_lang)
                    .text("targetLang", &r.target_lang)
                    .number("ratio", r.ratio)
                    .into_js()
            })
            .collect();
        view = view.value("lengthRatios", &ratios);
    }
    view.into_js()
}

/// The limits a provider last reported, as a snapshot keeps them.
fn window_view(w: &SavedWindow) -> JsValue {
    View::new()
        .number("remaining", w.remaining)
        .number("whole", w.whole)
        .number("resetMs", w.reset_in.as_millis())
        .into_js()
}

/// Saved length ratios read back (`[]` when absent).
fn ratios_from(value: &JsValue) -> Result<Vec<PairRatio>, String> {
    if value.is_undefined() || value.is_null() {
        return Ok(Vec::new());
    }
    if !Array::is_array(value) {
        return Err(format!(
            "restore.providers[].lengthRatios must be an array (got {})",
            describe(value)
        ));
    }
    let mut ratios = Vec::new();
    for entry in Array::from(value).iter() {
        only_fields(&entry, "restore.providers[].lengthRatios[]", RATIO_FIELDS)?;
        let lang = |field: &str| {
            get(&entry, field).as_string().ok_or_else(|| {
                format!(
                    "restore.providers[].lengthRatios[].{field} must be a string (got {})",
                    describe(&get(&entry, field))
                )
            })
        };
        let ratio = snapshot_number(&entry, "restore.providers[].lengthRatios[]", "ratio")?;
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(format!(
                "restore.providers[].lengthRatios[].ratio must be a finite number > 0 (got {})",
                describe(&get(&entry, "ratio"))
            ));
        }
        ratios.push(PairRatio {
            source_lang: lang("sourceLang")?,
            target_lang: lang("targetLang")?,
            ratio,
            seen: 0,
        });
    }
    Ok(ratios)
}

/// A saved window read back; `None` when absent.
fn window_from(limits: &JsValue, field: &str) -> Result<Option<SavedWindow>, String> {
    let value = get(limits, field);
    if !value.is_object() {
        return Ok(None);
    }
    let path = format!("restore.providers[].limits.{field}");
    only_fields(&value, &path, WINDOW_FIELDS)?;
    Ok(Some(SavedWindow {
        remaining: snapshot_number(&value, &path, "remaining")?,
        whole: snapshot_number(&value, &path, "whole")?,
        reset_in: snapshot_ms(&value, &path, "resetMs")?,
    }))
}

/// The number `field` of the object at `path`: `snapshot()` writes only finite ones, so
/// NaN and the infinities are refused with the rest.
fn snapshot_number(value: &JsValue, path: &str, field: &str) -> Result<f64, String> {
    let got = get(value, field);
    got.as_f64().filter(|n| n.is_finite()).ok_or_else(|| {
        format!(
            "{path}.{field} must be a finite number (got {})",
            describe(&got)
        )
    })
}

/// A time span of a snapshot, in ms: a finite number >= 0 (a pause of NaN or -1 ms is no
/// pause the pacer wrote).
fn snapshot_ms(value: &JsValue, path: &str, field: &str) -> Result<Duration, String> {
    let got = get(value, field);
    match got.as_f64() {
        Some(ms) if ms.is_finite() && ms >= 0.0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "{path}.{field} must be a finite number >= 0 (got {})",
            describe(&got)
        )),
    }
}

/// Refuses a field that `snapshot()` never writes in the object at `path` (`restore`,
/// `restore.providers[]` …), naming it: a field the pacer does not know would be
/// silently dropped, so a typo or a foreign format must not pass for a snapshot.
fn only_fields(value: &JsValue, path: &str, known: &[&str]) -> Result<(), String> {
    let keys = Reflect::own_keys(value).map_err(|_| format!("{path} could not be read"))?;
    for key in keys.iter() {
        // Symbol keys are no JSON field.
        let Some(key) = key.as_string() else {
            continue;
        };
        if !known.contains(&key.as_str()) {
            return Err(format!(
                "{path}.{key} is not a field of a snapshot (got {})",
                describe(&get(value, &key))
            ));
        }
    }
    Ok(())
}

/// The fields `snapshot()` writes, per object.
const SNAPSHOT_FIELDS: &[&str] = &["version", "wallTime", "tokens", "providers"];
const PROVIDER_FIELDS: &[&str] = &[
    "providerId",
    "pausedForMs",
    "adaptiveRate",
    "adaptiveCeiling",
    "dailyBlock",
    "limits",
    "batchLimit",
    "lengthRatios",
    "tokens",
];
const BLOCK_FIELDS: &[&str] = &["blockedForMs", "resetKnown", "message"];
const LIMITS_FIELDS: &[&str] = &["requests", "tokens"];
const WINDOW_FIELDS: &[&str] = &["remaining", "whole", "resetMs"];
const RATIO_FIELDS: &[&str] = &["sourceLang", "targetLang", "ratio"];

/// Reads a `restore` value (read by hand: a derived deserializer would pull serde and
/// float formatting into the binary); the core checks what the numbers mean.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn snapshot_from(value: &JsValue) -> Result<Snapshot, String> {
    if !value.is_object() || Array::is_array(value) {
        return Err(format!(
            "restore must be a value returned by snapshot() (got {})",
            describe(value)
        ));
    }
    only_fields(value, "restore", SNAPSHOT_FIELDS)?;
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
        if !entry.is_object() {
            return Err(format!(
                "restore.providers[] must be an object (got {})",
                describe(&entry)
            ));
        }
        only_fields(&entry, "restore.providers[]", PROVIDER_FIELDS)?;
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
            Some(snapshot_number(
                &entry,
                "restore.providers[]",
                "adaptiveRate",
            )?)
        };
        let block = get(&entry, "dailyBlock");
        let daily_block = if block.is_object() {
            only_fields(&block, "restore.providers[].dailyBlock", BLOCK_FIELDS)?;
            let field = |name: &str| (get(&block, name), format!("dailyBlock.{name}"));
            let (reset_known, path) = field("resetKnown");
            let reset_known = reset_known.as_bool().ok_or_else(|| {
                let got = describe(&reset_known);
                format!("restore.providers[].{path} must be a boolean (got {got})")
            })?;
            let (message, path) = field("message");
            let message = message.as_string().ok_or_else(|| {
                let got = describe(&message);
                format!("restore.providers[].{path} must be a string (got {got})")
            })?;
            Some(SavedDailyBlock {
                blocked_for: snapshot_ms(&block, "restore.providers[].dailyBlock", "blockedForMs")?,
                reset_known,
                message,
            })
        } else {
            None
        };
        let saved = get(&entry, "limits");
        let limits = if saved.is_object() {
            only_fields(&saved, "restore.providers[].limits", LIMITS_FIELDS)?;
            Some(SavedLimits {
                requests: window_from(&saved, "requests")?,
                tokens: window_from(&saved, "tokens")?,
            })
        } else {
            None
        };
        let limit = get(&entry, "batchLimit");
        let batch_limit = if limit.is_undefined() || limit.is_null() {
            None
        } else {
            match limit.as_f64() {
                Some(n) if n.fract() == 0.0 && n >= 1.0 => Some(n.min(f64::from(u32::MAX)) as u32),
                _ => {
                    return Err(format!(
                        "restore.providers[].batchLimit must be an integer >= 1 (got {})",
                        describe(&limit)
                    ))
                }
            }
        };
        let tokens = get(&entry, "tokens");
        let tokens = if tokens.is_undefined() || tokens.is_null() {
            None
        } else {
            Some(tokens.as_f64().ok_or_else(|| {
                let got = describe(&tokens);
                format!("restore.providers[].tokens must be a finite number >= 0 (got {got})")
            })?)
        };
        providers.push(ProviderSnapshot {
            tokens,
            limits,
            batch_limit,
            length_ratios: ratios_from(&get(&entry, "lengthRatios"))?,
            provider_id,
            paused_for: snapshot_ms(&entry, "restore.providers[]", "pausedForMs")?,
            adaptive_rate,
            adaptive_ceiling: snapshot_number(&entry, "restore.providers[]", "adaptiveCeiling")?,
            daily_block,
        });
    }
    Ok(Snapshot {
        wall_time_ms: snapshot_number(value, "restore", "wallTime")?,
        tokens: snapshot_number(value, "restore", "tokens")?,
        providers,
    })
}

/// Stats as a plain object.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn stats_object(s: &Stats, by_provider: &[(Rc<str>, ProviderStats)]) -> JsValue {
    let counts = [
        ("items", s.items),
        ("cacheHits", s.cache_hits),
        ("dedupHits", s.dedup_hits),
        ("providerCalls", s.provider_calls),
        ("batchCalls", s.batch_calls),
        ("retries", s.retries),
        ("countMismatches", s.count_mismatches),
        ("fallbacks", s.fallbacks),
        ("rateLimited", s.rate_limited),
        ("failed", s.failed),
        ("aborted", s.aborted),
        ("succeeded", s.succeeded),
        ("disposed", s.disposed),
        ("duplicateSettlements", s.duplicate_settlements),
        ("pending", s.pending),
        ("queued", s.queued),
        ("inFlight", s.in_flight),
        ("inputTokens", s.input_tokens),
        ("outputTokens", s.output_tokens),
        ("streamedCalls", s.streamed_calls),
        ("earlyResolved", s.early_resolved),
        ("fallbackItems", s.fallback_items),
    ];
    let stats = (counts.into_iter())
        .fold(View::new(), |view, (key, n)| view.number(key, n as f64))
        .into_js();
    let by_provider_object = Object::new();
    for (id, own) in by_provider {
        let counts = View::new()
            .number("calls", own.calls as f64)
            .number("items", own.items as f64)
            .number("rateLimited", own.rate_limited as f64);
        let _ = Reflect::set(
            &by_provider_object,
            &JsValue::from_str(id),
            &counts.into_js(),
        );
    }
    let _ = Reflect::set(
        &stats,
        &JsValue::from_str("byProvider"),
        &by_provider_object,
    );
    stats
}

/// Epoch milliseconds `after` from now.
pub fn wall_time_in(after: Duration) -> f64 {
    (js_sys::Date::now() + after.as_millis()).round()
}

/// An event as a plain `{ type, ... }` object.
pub fn event_object(event: &Event) -> JsValue {
    let view = |kind: &str| View::new().text("type", kind);
    match event {
        Event::RateLimited {
            provider_id,
            retry_after,
            paused_for,
        } => view("rateLimited")
            .text("providerId", provider_id)
            .number_or_null("retryAfterMs", retry_after.map(Duration::as_millis))
            .number("pausedForMs", paused_for.as_millis()),
        Event::AdaptiveRate { provider_id, rate } => view("adaptiveRate")
            .text("providerId", provider_id)
            .number_or_null("rate", *rate),
        Event::Retry {
            provider_id,
            reason,
            attempt,
            delay,
        } => view("retry")
            .text("providerId", provider_id)
            .text("reason", reason.as_str())
            .number("attempt", f64::from(*attempt))
            .number("delayMs", delay.as_millis()),
        Event::CountMismatch {
            provider_id,
            expected,
            got,
        } => view("countMismatch")
            .text("providerId", provider_id)
            .number("expected", *expected as f64)
            .number("got", *got as f64),
        Event::Fallback { provider_id, items } => view("fallback")
            .text("providerId", provider_id)
            .number("items", *items as f64),
        Event::BatchLimit { provider_id, limit } => view("batchLimit")
            .text("providerId", provider_id)
            .number("limit", f64::from(*limit)),
        Event::ProviderFallback { from, to, items } => view("providerFallback")
            .text("from", from)
            .text("to", to)
            .number("items", *items as f64),
        Event::Timeout { provider_id } => view("timeout").text("providerId", provider_id),
        Event::CacheError { operation, message } => view("cacheError")
            .text("operation", operation)
            .text("message", message),
        Event::Limited {
            provider_id,
            reason,
            wait,
        } => view("limited")
            .text("providerId", provider_id)
            .text("reason", reason.as_str())
            .number("resetMs", wait.as_millis())
            .number("retryAt", wall_time_in(*wait)),
        Event::Blocked {
            provider_id,
            reason,
            status,
            message,
            until,
        } => view("blocked")
            .text("providerId", provider_id)
            .text("reason", reason.as_str())
            .number_if_some("status", status.map(f64::from))
            .text("message", message)
            .number_if_some("retryAt", until.map(wall_time_in)),
    }
    .into_js()
}
