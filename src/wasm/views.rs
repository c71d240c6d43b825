//! What the core hands JS as plain objects: statistics, snapshots and events.

use js_sys::Array;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::convert::{describe, get};
use crate::length_ratio::PairRatio;
use crate::quota::{SavedLimits, SavedWindow};
use crate::{Duration, Event, ProviderSnapshot, SavedDailyBlock, Snapshot, Stats};

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
    duplicate_settlements: f64,
    pending: f64,
    queued: f64,
    in_flight: f64,
    input_tokens: f64,
    output_tokens: f64,
    streamed_calls: f64,
    early_resolved: f64,
    fallback_items: f64,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<LimitsView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_limit: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    length_ratios: Vec<RatioView>,
}

/// A language pair's length ratio as a snapshot keeps it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RatioView {
    source_lang: String,
    target_lang: String,
    ratio: f64,
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
        let lang = |field: &str| {
            get(&entry, field).as_string().ok_or_else(|| {
                format!(
                    "restore.providers[].lengthRatios[].{field} must be a string (got {})",
                    describe(&get(&entry, field))
                )
            })
        };
        let ratio = snapshot_number(&entry, "ratio")?;
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

/// The limits a provider last reported, as a snapshot keeps them.
#[derive(Serialize)]
struct LimitsView {
    #[serde(skip_serializing_if = "Option::is_none")]
    requests: Option<WindowView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<WindowView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WindowView {
    remaining: f64,
    whole: f64,
    reset_ms: f64,
}

fn window_view(w: &SavedWindow) -> WindowView {
    WindowView {
        remaining: w.remaining,
        whole: w.whole,
        reset_ms: w.reset_in.as_millis(),
    }
}

/// A saved window read back; `None` when absent.
fn window_from(limits: &JsValue, field: &str) -> Result<Option<SavedWindow>, String> {
    let value = get(limits, field);
    if !value.is_object() {
        return Ok(None);
    }
    Ok(Some(SavedWindow {
        remaining: snapshot_number(&value, "remaining")?,
        whole: snapshot_number(&value, "whole")?,
        reset_in: Duration::from_millis(snapshot_number(&value, "resetMs")?.max(0.0)),
    }))
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
                limits: p.limits.as_ref().map(|l| LimitsView {
                    requests: l.requests.as_ref().map(window_view),
                    tokens: l.tokens.as_ref().map(window_view),
                }),
                batch_limit: p.batch_limit,
                length_ratios: p
                    .length_ratios
                    .iter()
                    .map(|r| RatioView {
                        source_lang: r.source_lang.clone(),
                        target_lang: r.target_lang.clone(),
                        ratio: r.ratio,
                    })
                    .collect(),
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
        let saved = get(&entry, "limits");
        let limits = if saved.is_object() {
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
        providers.push(ProviderSnapshot {
            limits,
            batch_limit,
            length_ratios: ratios_from(&get(&entry, "lengthRatios"))?,
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
        duplicate_settlements: s.duplicate_settlements as f64,
        pending: s.pending as f64,
        queued: s.queued as f64,
        in_flight: s.in_flight as f64,
        input_tokens: s.input_tokens as f64,
        output_tokens: s.output_tokens as f64,
        streamed_calls: s.streamed_calls as f64,
        early_resolved: s.early_resolved as f64,
        fallback_items: s.fallback_items as f64,
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
    BatchLimit {
        provider_id: &'a str,
        limit: u32,
    },
    ProviderFallback {
        from: &'a str,
        to: &'a str,
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
        Event::ProviderFallback { from, to, items } => EventView::ProviderFallback {
            from,
            to,
            items: *items as f64,
        },
        Event::BatchLimit { provider_id, limit } => EventView::BatchLimit {
            provider_id,
            limit: *limit,
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
