//! Fallback providers (docs/guides/fallbacks.md), on virtual time: each trigger (a
//! daily quota, a long 429 pause, billing and settings errors, retries spent), what
//! moves, chains, coming back, each provider's own pacing state, batching only with items
//! moved from the same provider, and a snapshot taken while a provider is blocked.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use batch_pacer::{Call, Event, Failure, Instant, OptionValue, Options, Quota};
use sim::*;

/// Options with `map` as `fallbackProviders` (and `patch` as numbers).
fn with_fallbacks(map: &[(&str, &str)], patch: &[(&str, f64)]) -> Options {
    let entries = map
        .iter()
        .map(|(from, to)| (from.to_string(), OptionValue::Text(to.to_string())))
        .collect();
    marker_options(patch)
        .patched(&[("fallbackProviders", OptionValue::Map(entries))])
        .expect("a valid mapping")
}

fn daily() -> Failure<String> {
    let mut f = http_error(429, Some(3_600_000.0));
    f.quota = Some(Quota::Daily);
    f
}

/// What a provider answers once its quota is spent.
type Spent = fn() -> Failure<String>;
/// Calls per provider id.
type CallCounts = Rc<RefCell<HashMap<String, u32>>>;

/// Providers by id: each answers its calls correctly until it has answered `quota`
/// calls, then with `spent()`; calls per provider are counted.
struct Providers {
    quotas: HashMap<&'static str, (u32, Spent)>,
    calls: CallCounts,
}

impl Providers {
    fn new(quotas: &[(&'static str, u32, Spent)]) -> Self {
        Providers {
            quotas: quotas.iter().map(|(id, q, f)| (*id, (*q, *f))).collect(),
            calls: Rc::default(),
        }
    }

    fn script(self) -> (impl FnMut(&Call, Instant) -> Answer, CallCounts) {
        let calls = self.calls.clone();
        let quotas = self.quotas;
        let script = move |call: &Call, _: Instant| {
            let id = call.compat.provider_id.clone();
            let mut calls = calls.borrow_mut();
            let n = calls.entry(id.clone()).or_default();
            *n += 1;
            let outcome = match quotas.get(id.as_str()) {
                Some((quota, spent)) if *n > *quota => Err(spent()),
                _ => Ok(echo_reply(call)),
            };
            Answer::After(Duration::from_millis(50.0), outcome)
        };
        (script, self.calls)
    }
}

fn fallback_events(sim: &Sim) -> Vec<(String, String, usize)> {
    sim.events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::ProviderFallback { from, to, items } => {
                Some((from.to_string(), to.to_string(), *items))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_spent_daily_quota_moves_the_page_to_the_fallback_with_nothing_failed() {
    let (script, calls) = Providers::new(&[("a", 20, daily)]).script();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[("rate", 4.0)]), script);
    let texts: Vec<String> = (0..300)
        .map(|i| format!("Paragraph {i} of the page."))
        .collect();
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&item_for("a", t)))
        .collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let stats = sim.engine.stats();
    assert_eq!(stats.failed, 0);
    assert!(stats.fallback_items > 0 && stats.fallback_items <= 300);
    // No call to a started once its daily 429 had come back.
    let blocked_at = sim
        .events
        .iter()
        .find(|(_, e)| matches!(e, Event::Blocked { .. }))
        .map(|(at, _)| *at)
        .expect("a was blocked");
    assert!(sim
        .calls
        .iter()
        .all(|c| c.provider_id != "a" || c.at < blocked_at));
    let a_calls = calls.borrow()["a"];
    // Every call to b carries the items' own provider; none to a does.
    for call in &sim.calls {
        let expected = (call.provider_id == "b").then(|| "a".to_string());
        assert_eq!(call.fallback_from, expected);
    }
    assert!(fallback_events(&sim)
        .iter()
        .all(|(f, t, _)| f == "a" && t == "b"));
    // Later items for a go to b at once, without a call to a, while the block holds.
    let later = sim.translate(&item_for("a", "a later paragraph"));
    sim.drive();
    assert_eq!(sim.ok(later), echo("a later paragraph"));
    assert_eq!(calls.borrow()["a"], a_calls);
    sim.assert_settled_once(&tickets);
}

#[test]
fn without_a_fallback_the_same_page_fails_after_the_daily_quota() {
    let (script, _) = Providers::new(&[("a", 20, daily)]).script();
    let mut sim = Sim::new(marker_options(&[("rate", 4.0)]), script);
    let texts: Vec<String> = (0..300)
        .map(|i| format!("Paragraph {i} of the page."))
        .collect();
    for t in &texts {
        sim.translate(&item_for("a", t));
    }
    sim.drive();
    assert!(sim.engine.stats().failed > 100);
}

#[test]
fn a_long_429_pause_moves_the_queue_a_short_one_waits() {
    for (retry_after_ms, moves) in [(120_000.0, true), (5_000.0, false)] {
        let hit = Rc::new(RefCell::new(false));
        let first = hit.clone();
        let mut sim = Sim::new(
            with_fallbacks(&[("a", "b")], &[("maxInFlight", 1.0)]),
            move |call: &Call, _| {
                let outcome = if call.compat.provider_id == "a" && !*first.borrow() {
                    *first.borrow_mut() = true;
                    Err(http_error(429, Some(retry_after_ms)))
                } else {
                    Ok(echo_reply(call))
                };
                Answer::After(Duration::from_millis(50.0), outcome)
            },
        );
        let tickets: Vec<_> = (0..12)
            .map(|i| sim.translate(&item_for("a", &format!("Paragraph {i}."))))
            .collect();
        sim.drive();
        let on_b = sim.calls.iter().filter(|c| c.provider_id == "b").count();
        assert_eq!(on_b > 0, moves, "Retry-After {retry_after_ms} ms");
        let done = tickets.iter().map(|t| sim.settled_at[t]).max().unwrap();
        if moves {
            assert!(done.as_millis() < 60_000.0, "finished at {done:?}");
        } else {
            assert!(done.as_millis() >= 5_000.0);
        }
        sim.assert_settled_once(&tickets);
    }
}

#[test]
fn a_settings_error_moves_the_queue_but_later_items_try_the_provider_again() {
    let (script, calls) = Providers::new(&[("a", 0, || http_error(401, None))]).script();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[]), script);
    let first: Vec<_> = (0..8)
        .map(|i| sim.translate(&item_for("a", &format!("First {i}."))))
        .collect();
    sim.drive();
    for t in &first {
        assert!(sim.result(*t).is_ok());
    }
    let a_calls = calls.borrow()["a"];
    let later = sim.translate(&item_for("a", "Later."));
    sim.drive();
    assert!(sim.result(later).is_ok());
    assert_eq!(
        calls.borrow()["a"],
        a_calls + 1,
        "the later item tried a again"
    );
}

#[test]
fn retries_spent_move_only_that_calls_items() {
    let mut sim = Sim::new(
        with_fallbacks(&[("a", "b")], &[("maxRetries", 1.0)]),
        |call: &Call, _| {
            let down = call.compat.provider_id == "a" && call.texts.iter().any(|t| t == "broken");
            let outcome = if down {
                Err(http_error(503, None))
            } else {
                Ok(echo_reply(call))
            };
            Answer::After(Duration::from_millis(50.0), outcome)
        },
    );
    let broken = sim.translate(&single_for("a", "broken"));
    let fine = sim.translate(&single_for("a", "fine"));
    sim.drive();
    assert_eq!(sim.ok(broken), echo("broken"));
    assert_eq!(sim.ok(fine), echo("fine"));
    let on_b: Vec<_> = sim.calls.iter().filter(|c| c.provider_id == "b").collect();
    assert_eq!(on_b.len(), 1);
    assert_eq!(on_b[0].texts, vec!["broken".to_string()]);
    assert_eq!(sim.engine.stats().fallback_items, 1);
}

fn single_for<'a>(provider: &'a str, text: &'a str) -> batch_pacer::Item<'a> {
    let mut it = item_for(provider, text);
    it.compat.llm = false;
    it
}

#[test]
fn a_chain_goes_on_to_the_fallbacks_fallback() {
    let (script, calls) = Providers::new(&[("a", 0, daily), ("b", 0, daily)]).script();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b"), ("b", "c")], &[]), script);
    let tickets: Vec<_> = (0..6)
        .map(|i| sim.translate(&item_for("a", &format!("Paragraph {i}."))))
        .collect();
    sim.drive();
    for t in &tickets {
        assert!(sim.result(*t).is_ok());
    }
    assert!(calls.borrow()["c"] > 0);
    // Counted once each, however far along the chain.
    assert_eq!(sim.engine.stats().fallback_items, 6);
    for call in sim.calls.iter().filter(|c| c.provider_id == "c") {
        assert_eq!(call.fallback_from.as_deref(), Some("a"));
    }
    // Both blocked now: a new item for a skips b and goes to c at once.
    let before_b = calls.borrow()["b"];
    let later = sim.translate(&item_for("a", "Later."));
    sim.drive();
    assert!(sim.result(later).is_ok());
    assert_eq!(calls.borrow()["b"], before_b);
}

#[test]
fn at_the_end_of_the_chain_the_quota_rules_apply() {
    let (script, _) = Providers::new(&[("a", 0, daily), ("b", 0, daily)]).script();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[]), script);
    let tickets: Vec<_> = (0..4)
        .map(|i| sim.translate(&item_for("a", &format!("Paragraph {i}."))))
        .collect();
    sim.drive();
    for t in &tickets {
        let error = sim.result(*t).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(429))
        );
    }
}

#[test]
fn new_items_go_back_to_their_provider_once_its_pause_is_over() {
    let hit = Rc::new(RefCell::new(false));
    let first = hit.clone();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[]), move |call: &Call, _| {
        let outcome = if call.compat.provider_id == "a" && !*first.borrow() {
            *first.borrow_mut() = true;
            Err(http_error(429, Some(60_000.0)))
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(50.0), outcome)
    });
    sim.translate(&item_for("a", "First."));
    sim.drive_until(ms(1_000.0));
    let during = sim.translate(&item_for("a", "During the pause."));
    sim.drive_until(ms(10_000.0));
    assert_eq!(sim.ok(during), echo("During the pause."));
    sim.drive_until(ms(61_000.0));
    let after = sim.translate(&item_for("a", "After the pause."));
    sim.drive();
    assert_eq!(sim.ok(after), echo("After the pause."));
    let last = sim.calls.last().unwrap();
    assert_eq!(
        (last.provider_id.as_str(), last.fallback_from.as_deref()),
        ("a", None)
    );
}

#[test]
fn moved_items_are_batched_only_with_items_moved_from_the_same_provider() {
    let (script, _) = Providers::new(&[("a", 0, daily)]).script();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[]), script);
    sim.translate(&item_for("a", "spend a"));
    sim.drive();
    for i in 0..3 {
        sim.translate(&item_for("a", &format!("a's {i}")));
        sim.translate(&item_for("b", &format!("b's {i}")));
    }
    sim.drive();
    for call in sim.calls.iter().filter(|c| c.provider_id == "b") {
        let moved = call.texts.iter().filter(|t| !t.starts_with("b's")).count();
        assert!(moved == 0 || moved == call.texts.len(), "{:?}", call.texts);
        assert_eq!(call.fallback_from.is_some(), moved > 0);
    }
}

#[test]
fn each_provider_keeps_its_own_pause() {
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[]), |call: &Call, _| {
        // b is paused briefly once; a never.
        let outcome = if call.compat.provider_id == "b" && call.attempt == 0 {
            Err(http_error(429, Some(2_000.0)))
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(50.0), outcome)
    });
    let on_b = sim.translate(&item_for("b", "for b"));
    sim.drive_until(ms(500.0));
    let on_a = sim.translate(&item_for("a", "for a"));
    sim.drive_until(ms(1_000.0));
    // a's item went to a at once: b's pause is b's.
    assert_eq!(sim.ok(on_a), echo("for a"));
    sim.drive();
    assert_eq!(sim.ok(on_b), echo("for b"));
}

#[test]
fn a_snapshot_taken_while_blocked_still_sends_items_to_the_fallback_after_a_restart() {
    let (script, _) = Providers::new(&[("a", 0, daily)]).script();
    let opts = with_fallbacks(&[("a", "b")], &[]);
    let mut sim = Sim::new(opts.clone(), script);
    sim.translate(&item_for("a", "spend a"));
    sim.drive();
    let snapshot = sim.engine.snapshot(0.0);
    let (script, calls) = Providers::new(&[]).script();
    let mut restarted = Sim::new(opts, script);
    restarted
        .engine
        .restore(&snapshot, Duration::from_millis(1_000.0));
    let t = restarted.translate(&item_for("a", "after the restart"));
    restarted.drive();
    assert_eq!(restarted.ok(t), echo("after the restart"));
    assert_eq!(calls.borrow().get("a"), None);
    assert_eq!(calls.borrow()["b"], 1);
}

#[test]
fn set_options_may_change_the_mapping() {
    let (script, calls) = Providers::new(&[("a", 0, daily)]).script();
    let mut sim = Sim::new(with_fallbacks(&[("a", "b")], &[]), script);
    sim.translate(&item_for("a", "spend a"));
    sim.drive();
    let map = vec![("a".to_string(), OptionValue::Text("c".into()))];
    sim.engine
        .set_options(sim.now, &[("fallbackProviders", OptionValue::Map(map))])
        .unwrap();
    let t = sim.translate(&item_for("a", "now to c"));
    sim.drive();
    assert_eq!(sim.ok(t), echo("now to c"));
    assert_eq!(calls.borrow()["c"], 1);
    // Without a mapping, a's items reject again while the block holds.
    sim.engine
        .set_options(sim.now, &[("fallbackProviders", OptionValue::Map(vec![]))])
        .unwrap();
    let t = sim.translate(&item_for("a", "nowhere"));
    sim.drive();
    assert_eq!(sim.code(t), ErrorCode::ProviderError);
}
