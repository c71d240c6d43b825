//! Identical items share one provider item; successes are cached, failures are not.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::Call;
use sim::*;

#[test]
fn identical_items_share_one_provider_item_while_queued_or_running() {
    let mut sim = Sim::new(Default::default(), echo_provider(500.0));
    let a = sim.translate(&item("same"));
    let b = sim.translate(&item("same"));
    sim.drive_until(ms(200.0)); // the call is running now
    let c = sim.translate(&item("same"));
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    for t in [a, b, c] {
        assert_eq!(sim.ok(t), echo("same"));
    }
    let stats = sim.engine.stats();
    assert_eq!((stats.items, stats.dedup_hits, stats.cache_hits), (3, 2, 0));
}

#[test]
fn successes_are_cached_failures_are_not() {
    let mut fail = true;
    let mut sim = Sim::new(Default::default(), move |call: &Call, _| {
        if call.texts[0] == "bad" && fail {
            fail = false;
            return Answer::After(Duration::from_millis(1.0), Err(http_error(400, None)));
        }
        Answer::After(Duration::from_millis(1.0), Ok(echo_reply(call)))
    });
    sim.translate(&single("good"));
    let bad = sim.translate(&single("bad"));
    sim.drive();
    assert!(sim.result(bad).is_err());
    let good_again = sim.translate(&single("good"));
    let bad_again = sim.translate(&single("bad"));
    sim.drive();
    assert_eq!(sim.ok(good_again), echo("good"));
    assert_eq!(sim.ok(bad_again), echo("bad"));
    assert_eq!(sim.engine.stats().cache_hits, 1);
    assert!(
        sim.calls
            .iter()
            .filter(|c| c.texts.contains(&"good".to_string()))
            .count()
            == 1
    );
}

#[test]
fn cache_entries_zero_turns_the_cache_off_and_the_lru_evicts() {
    let mut sim = Sim::new(options(&[("cacheEntries", 0.0)]), echo_provider(1.0));
    sim.translate(&item("x"));
    sim.drive();
    sim.translate(&item("x"));
    sim.drive();
    assert_eq!(sim.calls.len(), 2);

    let mut sim = Sim::new(options(&[("cacheEntries", 1.0)]), echo_provider(1.0));
    for t in ["x", "y", "x"] {
        sim.translate(&item(t));
        sim.drive();
    }
    assert_eq!(sim.calls.len(), 3, "y evicted x");
}

#[test]
fn a_twin_raising_priority_during_a_store_lookup_counts() {
    // rate 1, capacity 1: "first" takes the token; then "low" (p0) and "x" (p0) arrive;
    // x's lookup is slow; a twin of x arrives with priority 5 while x is being looked up.
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 1.0), ("batchDelayMs", 0.0)]),
        echo_provider(1.0),
    )
    .with_store(Box::new(|_l: &batch_pacer::Lookup| {
        Some((Duration::from_millis(50.0), batch_pacer::LookupResult::Miss))
    }));
    let mut f = item("first");
    f.compat.llm = false;
    sim.translate(&f);
    sim.drive_until(ms(60.0));
    let mut a = item("a");
    a.compat.llm = false;
    sim.translate(&a);
    let mut x = item("x");
    x.compat.llm = false;
    sim.translate(&x);
    let mut x5 = item("x");
    x5.compat.llm = false;
    x5.priority = 5.0;
    sim.translate(&x5); // dedup: raises x's priority while its lookup is under way
    sim.drive();
    let order: Vec<&str> = sim.calls.iter().map(|c| c.texts[0].as_str()).collect();
    assert_eq!(
        order,
        vec!["first", "x", "a"],
        "priority 5 twin must overtake"
    );
}

#[test]
fn a_call_names_the_first_item_that_waits_for_each_text_once_asked() {
    let mut sim = Sim::new(marker_options(&[]), echo_provider(10.0));
    sim.translate(&item("before"));
    sim.drive();
    assert_eq!(sim.calls[0].items, [], "not asked: no item named");

    sim.engine.want_call_items();
    let first = sim.translate(&item("shared"));
    let twin = sim.translate(&item("shared"));
    let other = sim.translate(&item("other"));
    sim.drive();
    assert_eq!(sim.calls[1].texts, ["shared", "other"]);
    assert_eq!(sim.calls[1].items, [first, other]);
    assert_eq!(sim.ok(twin), echo("shared"));
}
