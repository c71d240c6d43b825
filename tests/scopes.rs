//! Scopes (docs/reference.md, Rule 10): items of different
//! scopes never share a batch, a provider item (dedup) or a cache entry, in memory or in
//! the persistent store, even when every other compatibility field is equal; within a
//! scope the usual rules hold, and a fallback move keeps an item's scope.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::rc::Rc;

use batch_pacer::key::{item_key, to_hex};
use batch_pacer::{Call, Instant, Item, LookupResult, OptionValue, Quota};
use sim::*;

/// An item of `scope` with the harness's usual fields.
fn scoped<'a>(scope: &'a str, text: &'a str) -> Item<'a> {
    let mut it = item(text);
    it.compat.scope = scope;
    it
}

/// The scope and texts of every call the provider saw.
type Seen = Rc<RefCell<Vec<(String, Vec<String>)>>>;

/// An echoing provider that records each call's scope and texts.
fn recording_provider() -> (impl FnMut(&Call, Instant) -> Answer, Seen) {
    let seen = Seen::default();
    let record = Rc::clone(&seen);
    let provider = move |call: &Call, _: Instant| {
        let scope = call.compat.scope.clone();
        record.borrow_mut().push((scope, call.texts.clone()));
        Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)))
    };
    (provider, seen)
}

/// Texts are named after their scope ("A1" belongs to scope "A"): every call must carry
/// texts of its own scope only.
fn assert_each_call_holds_one_scope(seen: &Seen) {
    for (scope, texts) in seen.borrow().iter() {
        for text in texts {
            assert!(
                text.starts_with(scope.as_str()),
                "a call of scope {scope:?} carried {text:?}: {texts:?}"
            );
        }
    }
}

#[test]
fn two_scopes_with_equal_fields_never_share_a_call_and_each_still_batches() {
    let (provider, seen) = recording_provider();
    let mut sim = Sim::new(marker_options(&[]), provider);
    // Interleaved, as two tabs' paragraphs arrive.
    let texts = ["A1", "B1", "A2", "B2", "A3", "B3"];
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&scoped(&t[..1], t)))
        .collect();
    sim.drive();
    for (ticket, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    assert_each_call_holds_one_scope(&seen);
    let mut calls: Vec<_> = seen.borrow().clone();
    calls.sort();
    assert_eq!(
        calls,
        vec![
            ("A".to_string(), vec!["A1".into(), "A2".into(), "A3".into()]),
            ("B".to_string(), vec!["B1".into(), "B2".into(), "B3".into()]),
        ],
        "one batch per scope"
    );
}

#[test]
fn identical_text_in_two_scopes_is_two_provider_items_and_dedups_within_each() {
    let (provider, seen) = recording_provider();
    let mut sim = Sim::new(marker_options(&[]), provider);
    let a = sim.translate(&scoped("A", "A same"));
    let b = sim.translate(&scoped("B", "A same"));
    let a_twin = sim.translate(&scoped("A", "A same"));
    sim.drive();
    for ticket in [a, b, a_twin] {
        assert_eq!(sim.ok(ticket), echo("A same"));
    }
    let scopes: Vec<String> = seen.borrow().iter().map(|(s, _)| s.clone()).collect();
    assert_eq!(scopes.len(), 2, "one provider item per scope: {scopes:?}");
    assert!(scopes.contains(&"A".to_string()) && scopes.contains(&"B".to_string()));
    assert_eq!(sim.engine.stats().dedup_hits, 1, "only A's twin shares");
}

#[test]
fn a_translation_cached_in_one_scope_is_no_hit_in_another() {
    let (provider, seen) = recording_provider();
    let mut sim = Sim::new(marker_options(&[]), provider);
    sim.translate(&scoped("A", "Hello"));
    sim.drive();
    let again = sim.translate(&scoped("A", "Hello"));
    assert_eq!(sim.ok(again), echo("Hello"), "the same scope hits the LRU");
    assert_eq!(sim.engine.stats().cache_hits, 1);
    let other = sim.translate(&scoped("B", "Hello"));
    let unscoped = sim.translate(&item("Hello"));
    sim.drive();
    assert_eq!(sim.engine.stats().cache_hits, 1, "no hit across scopes");
    assert_eq!(sim.ok(other), echo("Hello"));
    assert_eq!(sim.ok(unscoped), echo("Hello"));
    let mut scopes: Vec<String> = seen.borrow().iter().map(|(s, _)| s.clone()).collect();
    scopes.sort();
    assert_eq!(scopes, ["", "A", "B"]);
}

#[test]
fn the_persistent_store_keys_each_scope_apart_and_keeps_the_unscoped_key() {
    let (provider, seen) = recording_provider();
    let key_of = |item: &Item<'_>| to_hex(&item_key(&item.compat, item.text));
    let stored_key = key_of(&scoped("A", "Hello"));
    let hit_for = stored_key.clone();
    let mut sim = Sim::new(marker_options(&[]), provider).with_store(Box::new(move |lookup| {
        let found = if lookup.key == hit_for {
            LookupResult::Hit("Hallo (A)".into())
        } else {
            LookupResult::Miss
        };
        Some((Duration::from_millis(1.0), found))
    }));
    let a = sim.translate(&scoped("A", "Hello"));
    let b = sim.translate(&scoped("B", "Hello"));
    let unscoped = sim.translate(&item("Hello"));
    sim.drive();
    assert_eq!(sim.ok(a), "Hallo (A)");
    assert_eq!(
        sim.ok(b),
        echo("Hello"),
        "B never gets A's stored translation"
    );
    assert_eq!(sim.ok(unscoped), echo("Hello"));
    let keys: Vec<&str> = sim.lookups.iter().map(|l| l.key.as_str()).collect();
    let b_key = key_of(&scoped("B", "Hello"));
    let plain_key = key_of(&item("Hello"));
    assert_eq!(keys, [stored_key.as_str(), &b_key, &plain_key]);
    // An empty scope is no scope: the key every version before scopes wrote.
    assert_eq!(plain_key, key_of(&scoped("", "Hello")));
    // Each success is written under its own scope's key.
    let mut written: Vec<&str> = sim.writes.iter().map(|w| w.key.as_str()).collect();
    written.sort();
    let mut expected = [b_key.as_str(), plain_key.as_str()];
    expected.sort();
    assert_eq!(written, expected);
    assert_eq!(seen.borrow().len(), 2);
}

#[test]
fn items_moved_to_a_fallback_keep_their_scope() {
    let seen = Seen::default();
    let record = Rc::clone(&seen);
    let provider = move |call: &Call, _: Instant| {
        record
            .borrow_mut()
            .push((call.compat.scope.clone(), call.texts.clone()));
        if call.compat.provider_id == "p" {
            // A spent daily quota: p's items move to q.
            let mut spent = http_error(429, Some(3_600_000.0));
            spent.quota = Some(Quota::Daily);
            return Answer::After(Duration::from_millis(10.0), Err(spent));
        }
        Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)))
    };
    let fallbacks = OptionValue::Map(vec![("p".into(), OptionValue::Text("q".into()))]);
    let options = marker_options(&[("rate", 1.0), ("capacity", 1.0)])
        .patched(&[("fallbackProviders", fallbacks)])
        .expect("a valid mapping");
    let mut sim = Sim::new(options, provider);
    let texts = ["A1", "B1", "A2", "B2"];
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&scoped(&t[..1], t)))
        .collect();
    sim.drive();
    for (ticket, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    assert_each_call_holds_one_scope(&seen);
    let moved = sim.calls.iter().filter(|c| c.provider_id == "q").count();
    assert_eq!(moved, 2, "the moved items keep one call per scope");
    assert!(sim.engine.stats().fallback_items >= 2);
}
