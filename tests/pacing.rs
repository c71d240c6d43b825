//! Rule 1 of docs/reference.md (the token bucket) and priorities (Rule 8): the token bucket, maxInFlight, first come first served, and dealing by priority.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::OptionValue;
use sim::*;

#[test]
fn bucket_starts_full_then_drains_at_rate() {
    let mut sim = Sim::new(
        options(&[("rate", 2.0), ("capacity", 5.0)]),
        echo_provider(10.0),
    );
    let texts: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
    for t in &texts {
        sim.translate(&single(t));
    }
    sim.drive();
    let starts = sim.starts_ms();
    assert_eq!(&starts[..5], &[0.0; 5]);
    let later: Vec<f64> = starts[5..].to_vec();
    assert_eq!(
        later,
        vec![500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0, 3500.0]
    );
}

#[test]
fn decimal_rates_work() {
    let mut sim = Sim::new(
        options(&[("rate", 0.25), ("capacity", 1.0)]),
        echo_provider(10.0),
    );
    for t in ["a", "b", "c"] {
        sim.translate(&single(t));
    }
    sim.drive();
    assert_eq!(sim.starts_ms(), vec![0.0, 4000.0, 8000.0]);
}

#[test]
fn max_in_flight_caps_concurrency_and_zero_means_none() {
    let texts: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
    for (limit, expected) in [(3.0, 3), (0.0, 20)] {
        let mut sim = Sim::new(options(&[("maxInFlight", limit)]), echo_provider(1000.0));
        for t in &texts {
            sim.translate(&single(t));
        }
        sim.drive();
        assert_eq!(sim.max_running, expected);
        assert_eq!(sim.calls.len(), 20);
    }
}

#[test]
fn equal_priorities_go_first_come_first_served_and_higher_priority_first() {
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 1.0)]),
        echo_provider(1.0),
    );
    let texts: Vec<String> = (0..12).map(|i| format!("item {i:02}")).collect();
    for t in &texts {
        sim.translate(&single(t));
    }
    let mut urgent = single("urgent");
    urgent.priority = 5.0;
    sim.translate(&urgent);
    sim.drive();
    let order: Vec<&str> = sim.calls.iter().map(|c| c.texts[0].as_str()).collect();
    let mut expected: Vec<&str> = vec!["item 00", "urgent"];
    expected.extend(texts[1..].iter().map(String::as_str));
    assert_eq!(order, expected);
}

/// A pacer with one call a second and no burst, an echo provider, and `extra` options.
fn one_call_a_second(extra: &[(&str, f64)]) -> Sim {
    let mut pairs = vec![("rate", 1.0), ("capacity", 1.0)];
    pairs.extend_from_slice(extra);
    Sim::new(options(&pairs), echo_provider(1.0))
}

/// The texts of each call in order, for items sent once a first call took the token.
fn calls_after_a_first(sim: &mut Sim, items: &[(&str, f64)]) -> Vec<Vec<String>> {
    sim.translate(&item("first"));
    sim.drive_until(ms(150.0));
    for (text, priority) in items {
        let mut it = item(text);
        it.priority = *priority;
        sim.translate(&it);
    }
    sim.drive();
    sim.calls[1..].iter().map(|c| c.texts.clone()).collect()
}

#[test]
fn batched_items_go_by_priority_then_arrival_whichever_batch_collected_them() {
    // Collected as [A B C D] and [E], both due when the next token comes: the call takes
    // the two priority-1 items first, then the earliest priority-0 ones.
    let mut sim = one_call_a_second(&[]);
    let calls = calls_after_a_first(
        &mut sim,
        &[("A", 0.0), ("B", 1.0), ("C", 0.0), ("D", 0.0), ("E", 1.0)],
    );
    assert_eq!(calls, vec![vec!["B", "E", "A", "C"], vec!["D"]]);

    // FIFO among equals: [A B] then [C D], where D's priority 1 must not take C ahead of
    // A and B.
    let mut sim = one_call_a_second(&[("maxItemsPerBatch", 2.0)]);
    let calls = calls_after_a_first(&mut sim, &[("A", 0.0), ("B", 0.0), ("C", 0.0), ("D", 1.0)]);
    assert_eq!(calls, vec![vec!["D", "A"], vec!["B", "C"]]);
}

#[test]
fn after_dealing_by_priority_a_due_batch_still_takes_late_items() {
    // As above, [B E A C] leaves D in a due batch; F, arriving before the next token,
    // joins it (rule 3) instead of opening a batch of its own.
    let mut sim = one_call_a_second(&[]);
    sim.translate(&item("first"));
    sim.drive_until(ms(150.0));
    for (text, priority) in [("A", 0.0), ("B", 1.0), ("C", 0.0), ("D", 0.0), ("E", 1.0)] {
        let mut it = item(text);
        it.priority = priority;
        sim.translate(&it);
    }
    sim.drive_until(ms(1_500.0));
    sim.translate(&item("F"));
    sim.drive();
    let calls: Vec<Vec<String>> = sim.calls[1..].iter().map(|c| c.texts.clone()).collect();
    assert_eq!(calls, vec![vec!["B", "E", "A", "C"], vec!["D", "F"]]);
}

#[test]
fn dealing_by_priority_keeps_the_character_limit_and_lone_long_items() {
    // A 10-character limit. Collected as [aaaa bbbb] (8) and [cccccc dd] (8), with
    // "long item 1" alone. By priority the call takes bbbb and cccccc (10 characters);
    // aaaa would break the limit, so it starts the next batch, with dd.
    let mut sim = one_call_a_second(&[("maxCharactersPerBatch", 10.0)]);
    let calls = calls_after_a_first(
        &mut sim,
        &[
            ("aaaa", 0.0),
            ("bbbb", 1.0),
            ("cccccc", 1.0),
            ("dd", 0.0),
            ("long item 1", 2.0),
        ],
    );
    assert_eq!(
        calls,
        vec![
            vec!["long item 1"],
            vec!["bbbb", "cccccc"],
            vec!["aaaa", "dd"]
        ]
    );
}

#[test]
fn a_lower_priority_item_never_fills_a_call_ahead_of_better_due_items() {
    let mut sim = one_call_a_second(&[("maxCharactersPerBatch", 10.0)]);
    // Collected as [aaaa(1) bbbb(0)] (closed by eeeee), [eeeee f gggg] (0, full) and
    // [i(1) j(-1)]: j must not go before the priority-0 items.
    let calls = calls_after_a_first(
        &mut sim,
        &[
            ("aaaa", 1.0),
            ("bbbb", 0.0),
            ("eeeee", 0.0),
            ("f", 0.0),
            ("gggg", 0.0),
            ("i", 1.0),
            ("j", -1.0),
        ],
    );
    assert!(!calls[0].contains(&"j".to_string()), "{calls:?}");
    assert_eq!(calls.last(), Some(&vec!["j".to_string()]), "{calls:?}");
}

#[test]
fn a_larger_capacity_does_not_refill_a_drained_bucket() {
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 1.0)]),
        echo_provider(1.0),
    );
    let texts: Vec<String> = (0..5).map(|i| format!("t{i}")).collect();
    for t in &texts {
        sim.translate(&single(t));
    }
    sim.engine
        .set_options(sim.now, &[("capacity", OptionValue::Number(60.0))])
        .unwrap();
    sim.drive();
    assert_eq!(sim.starts_ms(), vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0]);
}

#[test]
fn a_new_rate_applies_to_queued_work_at_once() {
    let mut sim = Sim::new(
        options(&[("rate", 0.1), ("capacity", 1.0)]),
        echo_provider(1.0),
    );
    for t in ["a", "b", "c"] {
        sim.translate(&single(t));
    }
    sim.drive_until(ms(1000.0));
    sim.engine
        .set_options(sim.now, &[("rate", OptionValue::Number(1.0))])
        .unwrap();
    sim.drive();
    // 0.1 token earned in the first second, then 1/s: the next token at 1.9 s.
    assert_eq!(sim.starts_ms(), vec![0.0, 1900.0, 2900.0]);
}
