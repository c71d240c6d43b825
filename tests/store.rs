//! The persistent store behind the LRU: lookups before queueing, writes after success.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::key::{item_key, to_hex};
use batch_pacer::{Event, LookupResult};
use sim::*;

fn store_sim(patch: &[(&str, f64)]) -> Sim {
    let mut sim = Sim::new(options(patch), echo_provider(10.0));
    sim.engine.enable_store();
    sim
}

fn single(text: &str) -> batch_pacer::Item<'_> {
    let mut it = item(text);
    it.compat.llm = false;
    it
}

#[test]
fn a_hit_resolves_without_a_call_or_a_token_and_fills_the_lru() {
    let mut sim = store_sim(&[("rate", 0.001), ("capacity", 1.0)]);
    sim.translate(&single("spend the only token"));
    let t = sim.translate(&single("stored"));
    assert_eq!(sim.lookups.len(), 2);
    let lookup = sim.lookups[1].clone();
    assert_eq!(
        lookup.key,
        to_hex(&item_key(&single("stored").compat, "stored"))
    );
    sim.engine
        .handle_lookup(sim.now, lookup.id, LookupResult::Hit("gespeichert".into()));
    sim.drain();
    assert_eq!(sim.ok(t), "gespeichert");
    assert_eq!(
        sim.calls.len(),
        0,
        "the first item still waits for its own lookup"
    );
    let again = sim.translate(&single("stored"));
    assert_eq!(
        sim.ok(again),
        "gespeichert",
        "the LRU answers without a lookup"
    );
    assert_eq!(sim.lookups.len(), 2);
    assert_eq!(sim.engine.stats().cache_hits, 2);
}

#[test]
fn a_miss_is_queued_and_its_success_is_written_under_the_cache_key() {
    let mut sim = store_sim(&[]);
    let t = sim.translate(&single("fresh"));
    let id = sim.lookups[0].id;
    assert!(
        sim.calls.is_empty(),
        "nothing is sent before the lookup answers"
    );
    sim.engine.handle_lookup(sim.now, id, LookupResult::Miss);
    sim.drive();
    assert_eq!(sim.ok(t), echo("fresh"));
    assert_eq!(sim.writes.len(), 1);
    assert_eq!(sim.writes[0].key, sim.lookups[0].key);
    assert_eq!(sim.writes[0].value, echo("fresh"));
    assert_eq!(sim.engine.stats().cache_hits, 0);
}

#[test]
fn a_failing_or_hanging_store_is_a_miss_reported_as_an_event() {
    let mut sim = store_sim(&[("timeoutMs", 500.0)]);
    let failing = sim.translate(&single("a"));
    let hanging = sim.translate(&single("b"));
    let first = sim.lookups[0].id;
    sim.engine
        .handle_lookup(sim.now, first, LookupResult::Failed("store threw".into()));
    sim.drive();
    assert_eq!(sim.ok(failing), echo("a"));
    assert_eq!(sim.ok(hanging), echo("b"));
    assert_eq!(
        sim.calls[1].at,
        ms(500.0),
        "the hanging lookup gave up after timeoutMs"
    );
    let errors: Vec<_> = sim
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::CacheError { operation, message } => Some((*operation, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0], ("get", "store threw".to_string()));
    // A late answer from the hanging store changes nothing.
    let late = sim.lookups[1].id;
    sim.engine
        .handle_lookup(sim.now, late, LookupResult::Hit("late".into()));
    sim.drain();
    assert_eq!(sim.ok(hanging), echo("b"));
    sim.assert_settled_once(&[failing, hanging]);
}

#[test]
fn identical_items_share_one_lookup() {
    let mut sim = store_sim(&[]);
    let a = sim.translate(&item("same"));
    let b = sim.translate(&item("same"));
    assert_eq!(sim.lookups.len(), 1);
    let id = sim.lookups[0].id;
    sim.engine
        .handle_lookup(sim.now, id, LookupResult::Hit("gleich".into()));
    sim.drain();
    assert_eq!((sim.ok(a), sim.ok(b)), ("gleich", "gleich"));
    let s = sim.engine.stats();
    assert_eq!((s.cache_hits, s.dedup_hits, s.provider_calls), (1, 1, 0));
}

#[test]
fn an_abort_during_the_lookup_settles_once_and_sends_nothing() {
    let mut sim = store_sim(&[]);
    let t = sim.translate(&single("gone"));
    sim.abort(t);
    let id = sim.lookups[0].id;
    sim.engine.handle_lookup(sim.now, id, LookupResult::Miss);
    sim.drive();
    assert_eq!(sim.code(t), ErrorCode::Aborted);
    assert!(sim.calls.is_empty());
    sim.assert_settled_once(&[t]);
    let s = sim.engine.stats();
    assert_eq!((s.queued, s.pending, s.aborted), (0, 0, 1));
}

#[test]
fn failures_are_not_written_and_dispose_settles_items_waiting_for_their_lookup() {
    let mut sim = Sim::new(
        options(&[("maxRetries", 0.0)]),
        |_: &batch_pacer::Call, _| {
            Answer::After(Duration::from_millis(1.0), Err(http_error(400, None)))
        },
    );
    sim.engine.enable_store();
    let failed = sim.translate(&single("x"));
    let id = sim.lookups[0].id;
    sim.engine.handle_lookup(sim.now, id, LookupResult::Miss);
    sim.drive();
    assert_eq!(sim.code(failed), ErrorCode::ProviderError);
    assert!(sim.writes.is_empty());
    let waiting = sim.translate(&single("y"));
    sim.engine.handle_dispose();
    sim.drain();
    assert_eq!(sim.code(waiting), ErrorCode::Disposed);
}
