//! The unit tests of the options: defaults, each name, messages, patches, fallback maps.

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
