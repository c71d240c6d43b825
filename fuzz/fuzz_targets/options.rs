//! Option validation: any `(name, value)` patch, hostile values included.
//!
//! Properties: `Options::patched` never panics; it agrees with a reference model of the
//! documented rules (the README's options table) on whether the patch is valid and, if not, on which
//! entry is rejected (the message names that option and the value it got); a valid patch
//! yields values within the documented ranges; the engine's `set_options` agrees with
//! `patched`, changes nothing on error, and keeps running on the new values.
#![no_main]

mod common;

use batch_pacer::options::OPTION_NAMES;
use batch_pacer::{Engine, ErrorCode, Instant, OptionValue, Options};
use common::{item, Bytes};
use libfuzzer_sys::fuzz_target;

#[derive(Clone, Copy)]
enum Rule {
    FiniteAboveZero,
    FiniteAtLeastZero,
    IntegerAtLeast(u8),
    Boolean,
    OneOf(&'static [&'static str]),
    /// An object of non-empty providerId strings, none mapped to itself, no cycle.
    ProviderMap,
    /// `providers`: an object of settings objects, each field valid as its option.
    ProviderSettings,
}

fn rule(name: &str) -> Option<Rule> {
    Some(match name {
        "rate" => Rule::FiniteAboveZero,
        "capacity" | "maxCharactersPerBatch" | "maxItemsPerBatch" => Rule::IntegerAtLeast(1),
        "maxInFlight"
        | "maxBatchRetries"
        | "maxRetries"
        | "maxRateLimitRetries"
        | "cacheEntries"
        | "maxQueued" => Rule::IntegerAtLeast(0),
        "batchDelayMs"
        | "timeoutMs"
        | "timeoutPerCharacterMs"
        | "baseRetryDelayMs"
        | "tokensPerMinute"
        | "fallbackAfterMs" => Rule::FiniteAtLeastZero,
        "segmentFormat" => Rule::OneOf(&["markers", "separator"]),
        "fallbackToIndividual" | "adaptiveRate" | "adaptiveBatching" => Rule::Boolean,
        "fallbackProviders" => Rule::ProviderMap,
        "providers" => Rule::ProviderSettings,
        _ => return None,
    })
}

/// The reference: is this entry acceptable?
fn valid(name: &str, value: &OptionValue) -> bool {
    let Some(rule) = rule(name) else {
        return false;
    };
    match (rule, value) {
        (_, OptionValue::Undefined) => true,
        (Rule::FiniteAboveZero, OptionValue::Number(n)) => n.is_finite() && *n > 0.0,
        (Rule::FiniteAtLeastZero, OptionValue::Number(n)) => n.is_finite() && *n >= 0.0,
        (Rule::IntegerAtLeast(min), OptionValue::Number(n)) => {
            n.is_finite() && n.fract() == 0.0 && *n >= f64::from(min)
        }
        (Rule::Boolean, OptionValue::Bool(_)) => true,
        (Rule::OneOf(names), OptionValue::Text(text)) => names.contains(&text.as_str()),
        (Rule::ProviderMap, OptionValue::Map(entries)) => provider_map_valid(entries),
        (Rule::ProviderSettings, OptionValue::Map(entries)) => entries.iter().all(|(id, v)| {
            !id.is_empty()
                && match v {
                    OptionValue::Undefined => true,
                    OptionValue::Map(fields) => fields.iter().all(|(f, v)| setting_valid(f, v)),
                    _ => false,
                }
        }),
        _ => false,
    }
}

/// The reference for one field of a provider's settings (`providers.<id>.<field>`).
fn setting_valid(field: &str, value: &OptionValue) -> bool {
    match field {
        "charactersPerMinute" => {
            matches!(value, OptionValue::Undefined)
                || matches!(value, OptionValue::Number(n) if n.is_finite() && *n >= 0.0)
        }
        "batch" => {
            matches!(value, OptionValue::Undefined)
                || matches!(value, OptionValue::Text(t) if t == "array")
        }
        "rate"
        | "capacity"
        | "maxInFlight"
        | "tokensPerMinute"
        | "maxItemsPerBatch"
        | "maxCharactersPerBatch"
        | "batchDelayMs"
        | "timeoutMs"
        | "timeoutPerCharacterMs" => valid(field, value),
        _ => false,
    }
}

/// The reference for `fallbackProviders`: every key and value a non-empty providerId, no
/// provider mapped to itself, and following the map from any provider ends.
fn provider_map_valid(entries: &[(String, OptionValue)]) -> bool {
    let mut map = Vec::new();
    for (from, to) in entries {
        match to {
            OptionValue::Text(to) if !to.is_empty() && !from.is_empty() && from != to => {
                map.push((from.as_str(), to.as_str()))
            }
            _ => return false,
        }
    }
    map.iter().all(|(start, _)| {
        let mut at = *start;
        for _ in 0..=map.len() {
            match map.iter().find(|(from, _)| *from == at) {
                Some((_, next)) => at = next,
                None => return true,
            }
        }
        false
    })
}

fn check_ranges(o: &Options) {
    assert!(o.rate.is_finite() && o.rate > 0.0, "rate {}", o.rate);
    assert!(
        o.capacity.is_finite() && o.capacity >= 1.0 && o.capacity.fract() == 0.0,
        "capacity {}",
        o.capacity
    );
    assert!(o.max_characters_per_batch >= 1 && o.max_items_per_batch >= 1);
    for (name, ms) in [
        ("batchDelayMs", o.batch_delay_ms),
        ("timeoutMs", o.timeout_ms),
        ("timeoutPerCharacterMs", o.timeout_per_character_ms),
        ("baseRetryDelayMs", o.base_retry_delay_ms),
    ] {
        // -0 is folded into 0, so no later arithmetic sees a negative zero.
        assert!(
            ms.is_finite() && ms >= 0.0 && ms.is_sign_positive(),
            "{name} {ms}"
        );
    }
}

/// A number in a message reads back as the number the caller gave (JS's `String(n)`),
/// or says plainly that it is a number of some magnitude.
fn check_number_display(value: &OptionValue) {
    let OptionValue::Number(n) = value else {
        return;
    };
    let shown = value.to_string();
    if shown.contains("a number of magnitude") || !n.is_finite() {
        return;
    }
    let back: f64 = shown.parse().unwrap_or(f64::NAN);
    assert!(
        back == *n,
        "the message shows {shown:?} for {n:e} ({:#x})",
        n.to_bits()
    );
}

fuzz_target!(|data: &[u8]| {
    for name in OPTION_NAMES {
        assert!(rule(name).is_some(), "the reference has no rule for {name}");
    }
    let mut bytes = Bytes::new(data);
    let base = if bytes.bool() {
        Options::default()
    } else {
        // Start from non-default options, reached by a valid patch.
        let start = bytes.patch(6);
        if !start.iter().all(|(n, v)| valid(n, v)) {
            return;
        }
        Options::default().patched(&start).expect("a valid patch")
    };
    let patch = bytes.patch(8);
    let first_invalid = patch.iter().find(|(n, v)| !valid(n, v));

    match (base.patched(&patch), first_invalid) {
        (Ok(next), None) => {
            check_ranges(&next);
            // Entries not in the patch (or undefined) keep their value.
            for (name, value) in next.entries() {
                let last = patch
                    .iter()
                    .rev()
                    .find(|(n, v)| n == name && *v != OptionValue::Undefined);
                match last {
                    None => {
                        let old = base.entries().into_iter().find(|e| e.0 == name);
                        assert_eq!(Some((name, value)), old, "{name} changed");
                    }
                    Some((_, OptionValue::Number(n))) if n.abs() < 1e15 => {
                        assert_eq!(value, OptionValue::Number(*n + 0.0), "{name}");
                    }
                    Some(_) => {}
                }
            }
        }
        (Err(error), Some((name, value))) => {
            let message = &error.message;
            // An object is shown by what in it was wrong (the entry, the cycle).
            let got = match value {
                OptionValue::Map(_) => String::from(")"),
                _ => format!("(got {value})"),
            };
            assert!(
                message.ends_with(&got),
                "{message:?} does not end in {got:?}"
            );
            check_number_display(value);
            if OPTION_NAMES.contains(&name.as_str()) {
                // A mapping is refused by what in it was wrong ("must map each providerId
                // to ...", "must not have a cycle"), any other value by the rule.
                let names = match value {
                    OptionValue::Map(_) => format!("{name} must "),
                    _ => format!("{name} must be "),
                };
                // A provider's settings are refused by their path: `providers.<id>...`.
                let path = matches!(value, OptionValue::Map(_))
                    && name == "providers"
                    && (message.starts_with("providers.")
                        || message.starts_with("unknown provider setting \"providers."));
                assert!(
                    path || message.starts_with(&names),
                    "{message:?} does not name {name:?}"
                );
            } else {
                assert!(message.starts_with("unknown option \""), "{message:?}");
            }
        }
        (Ok(_), Some((name, value))) => panic!("accepted {name} = {value:?}"),
        (Err(error), None) => panic!("rejected a valid patch: {}", error.message),
    }

    // The engine agrees, and keeps working with whatever it accepted.
    let mut engine: Engine<()> = Engine::new(base.clone(), Instant::ZERO, 7);
    let texts = ["one", "two", "three", "four", "five"];
    for (i, text) in texts.iter().enumerate() {
        // A valid item is accepted unless `maxQueued` holds it back.
        if let Err(error) =
            engine.handle_translate(Instant::from_millis(i as f64), &item(text, 0.0))
        {
            assert_eq!(error.code, ErrorCode::QueueFull, "{error}");
            assert!(base.max_queued > 0 && i as u64 >= base.max_queued);
        }
    }
    let before = engine.options().clone();
    let now = Instant::from_millis(10.0);
    match engine.set_options(now, &patch) {
        Ok(()) => assert_eq!(engine.options(), &base.patched(&patch).expect("agrees")),
        Err(error) => {
            assert_eq!(error.code, ErrorCode::InvalidOptions);
            assert_eq!(engine.options(), &before);
        }
    }
    // A few steps of a provider that answers at once. The steps and answers are bounded,
    // not run to idle: a timeout that rounds to 0 µs (or virtual time pushed to its
    // saturated end by hostile delays) makes every call time out the instant it starts,
    // and every input then restarts every running call, as configured.
    let mut now = now;
    let mut answers = 0;
    for _ in 0..8 {
        // Settlements and events are taken and dropped; the calls are answered.
        let calls: Vec<_> = std::iter::from_fn(|| engine.poll_output())
            .filter_map(|output| match output {
                batch_pacer::Output::Call(call) => Some(call),
                _ => None,
            })
            .collect();
        for call in calls {
            answers += 1;
            if answers > 64 {
                break;
            }
            let reply = batch_pacer::Reply::Texts(call.texts.clone());
            engine.handle_response(now, call.id, Ok(reply));
        }
        match engine.poll_timeout() {
            Some(at) => now = now.max(at),
            None => break,
        }
        engine.handle_timeout(now);
    }
    let stats = engine.stats();
    assert_eq!(
        stats.items,
        stats.succeeded + stats.failed + stats.aborted + stats.disposed + stats.pending
    );
});
