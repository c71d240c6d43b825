//! A provider's answer as the core reads it: a reply (string, array, object by id, or
//! `{ translations, usage, limits }`), or a failure with its status, Retry-After, limits
//! and quota. What arrives here is plain data: call-host.js has read the provider's
//! values once (a getter or proxy runs there, where a throw fails the call), so nothing
//! read here runs the provider's code.

use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{describe, get};
use crate::{Duration, Failure, Quota, Reply, Report, ReportedLimits, Usage};

/// A provider's resolved value as a reply and what it reported beside it, or a
/// bad-reply failure. `{ translations, usage, limits, truncated }` carries any reply
/// form. Strings are read up to `cap` bytes in all: a longer reply is cut there and
/// reported truncated, so a reply of any length holds no more memory than the cap.
pub fn reply_from(value: JsValue, cap: usize) -> Result<(Reply, Report), Failure<JsValue>> {
    let translations = get_own(&value, "translations");
    if translations.is_undefined() {
        let (reply, cut) = translations_from(value, cap)?;
        let report = Report {
            truncated: cut,
            ..Report::default()
        };
        return Ok((reply, report));
    }
    let (reply, cut) = translations_from(translations, cap)?;
    let mut report = report_from(&value);
    report.truncated |= cut;
    Ok((reply, report))
}

/// A `{ usage, limits, truncated }` value of a streamed reply (or the fields beside a
/// whole reply's `translations`). A `truncated` that is not a boolean is ignored.
pub fn report_from(value: &JsValue) -> Report {
    Report {
        usage: usage_from(&get(value, "usage")),
        limits: limits_from(&get(value, "limits")),
        truncated: get(value, "truncated").as_bool() == Some(true),
    }
}

/// Reads strings up to a cap of bytes in all.
struct Capped {
    room: usize,
    cut: bool,
}

impl Capped {
    /// `value` as a string, cut to the room left; `None` for a non-string, and an empty
    /// string once the room is spent.
    fn read(&mut self, value: &JsValue) -> Option<String> {
        let js: &js_sys::JsString = value.dyn_ref()?;
        if self.room == 0 {
            self.cut |= js.length() > 0;
            return Some(String::new());
        }
        // UTF-16 units of at most 3 bytes each: a piece that fits whatever it holds.
        let units = js.length() as usize;
        let text = if units.saturating_mul(3) <= self.room {
            String::from(js)
        } else {
            let end = u32::try_from(self.room)
                .unwrap_or(u32::MAX)
                .min(js.length());
            let mut text = String::from(js.slice(0, end));
            self.cut |= end < js.length() || text.len() > self.room;
            let mut keep = text.len().min(self.room);
            while !text.is_char_boundary(keep) {
                keep -= 1;
            }
            text.truncate(keep);
            text
        };
        self.room -= text.len();
        Some(text)
    }
}

/// A streamed value that is neither a string nor `{ usage, limits }`: a failed call
/// whose message names what it got.
pub fn bad_value(value: &JsValue) -> Failure<JsValue> {
    let mut failure = Failure::bad_reply("");
    failure.message = format!(
        "provider stream yielded {}, not a string or an object with usage or limits",
        describe(value)
    );
    failure
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

/// A string, an array of strings, or an object of strings keyed by id, read up to `cap`
/// bytes of text; whether it was cut there.
fn translations_from(value: JsValue, cap: usize) -> Result<(Reply, bool), Failure<JsValue>> {
    let mut capped = Capped {
        room: cap,
        cut: false,
    };
    if value.is_string() {
        let text = capped.read(&value).unwrap_or_default();
        return Ok((Reply::Text(text), capped.cut));
    }
    if Array::is_array(&value) {
        let array: Array = value.unchecked_into();
        let texts: Option<Vec<String>> = array.iter().map(|v| capped.read(&v)).collect();
        return texts
            .map(|texts| (Reply::Texts(texts), capped.cut))
            .ok_or_else(|| Failure::bad_reply("an array holding a non-string"));
    }
    if value.is_object() && !value.is_function() {
        let mut pairs = Vec::new();
        for entry in Object::entries(value.unchecked_ref()).iter() {
            let pair: Array = entry.unchecked_into();
            let (key, text) = (pair.get(0).as_string(), capped.read(&pair.get(1)));
            match (key, text) {
                (Some(key), Some(text)) => pairs.push((key, text)),
                _ => return Err(Failure::bad_reply("an object holding a non-string")),
            }
        }
        return Ok((Reply::Keyed(pairs), capped.cut));
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

/// `{ requestsRemaining, requestsResetMs, tokensRemaining, tokensResetMs, requestsLimit,
/// tokensLimit }`, any subset.
pub fn limits_from(value: &JsValue) -> ReportedLimits {
    if !value.is_object() {
        return ReportedLimits::default();
    }
    ReportedLimits {
        requests_remaining: count(value, "requestsRemaining"),
        requests_reset: count(value, "requestsResetMs").map(Duration::from_millis),
        tokens_remaining: count(value, "tokensRemaining"),
        tokens_reset: count(value, "tokensResetMs").map(Duration::from_millis),
        requests_limit: count(value, "requestsLimit"),
        tokens_limit: count(value, "tokensLimit"),
    }
}

/// A failed call as call-host.js read it: `{ cause, message, status, retryAfterMs,
/// retryAfter, waitMs, limits, quota, retryable }`, where `cause` is what the
/// provider threw and the other fields are read from it (none for a primitive), or a
/// message of call-host.js's own (a reply that could not be read).
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn failure_from(record: JsValue) -> Failure<JsValue> {
    let error = get(&record, "cause");
    let status = get(&record, "status")
        .as_f64()
        .filter(|s| (100.0..=599.0).contains(s) && s.fract() == 0.0)
        .map(|s| s as u16);
    // Not `error_message(&error)`: that would read the error's getters once more.
    let message = get(&record, "message")
        .as_string()
        .or_else(|| error.as_string())
        .unwrap_or_else(|| describe(&error).to_string());
    let mut failure = Failure::error(status, retry_after(&record), &message);
    failure.limits = Box::new(limits_from(&get(&record, "limits")));
    failure.quota = match get(&record, "quota").as_string().as_deref() {
        Some("rate") => Some(Quota::Rate),
        Some("daily") => Some(Quota::Daily),
        Some("billing") => Some(Quota::Billing),
        _ => None,
    };
    // Anything but a boolean is ignored.
    failure.retryable = get(&record, "retryable").as_bool();
    failure.with_cause(error)
}

/// `retryAfterMs` wins, then `retryAfter` (seconds or HTTP text), then `waitMs`, the
/// wait that call-host.js read from the error's headers or body.
fn retry_after(record: &JsValue) -> Option<Duration> {
    if let Some(ms) = get(record, "retryAfterMs").as_f64().filter(|v| *v >= 0.0) {
        return Some(Duration::from_millis(ms));
    }
    let value = get(record, "retryAfter");
    if let Some(s) = value.as_f64().filter(|v| *v >= 0.0) {
        return Some(Duration::from_secs(s));
    }
    if value.is_string() {
        if let Some(wait) = parse_retry_after(&value) {
            return Some(wait);
        }
    }
    get(record, "waitMs")
        .as_f64()
        .filter(|v| *v >= 0.0)
        .map(Duration::from_millis)
}

// The package's one Retry-After reading, shared with openAIProvider.
#[wasm_bindgen(module = "/src/js/retry-after.js")]
extern "C" {
    #[wasm_bindgen(js_name = parseRetryAfter)]
    fn retry_after_ms(text: &JsValue) -> JsValue;
}

/// Retry-After text in either HTTP form: delay-seconds or an HTTP-date.
fn parse_retry_after(text: &JsValue) -> Option<Duration> {
    retry_after_ms(text).as_f64().map(Duration::from_millis)
}
