//! Rules 2 to 4 of docs/reference.md: when a batch is due, what shares a batch, late binding, a batch of one.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::OptionValue;
use sim::*;

#[test]
fn batch_is_due_on_item_count_at_once() {
    let mut sim = Sim::new(Default::default(), echo_provider(10.0));
    let texts: Vec<String> = (0..8).map(|i| format!("p{i}")).collect();
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    assert_eq!(sim.calls.len(), 2, "two full batches start without waiting");
    assert!(sim.calls.iter().all(|c| c.is_batch && c.texts.len() == 4));
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
}

#[test]
fn batch_is_due_on_characters_and_an_item_that_would_overflow_starts_the_next() {
    let mut sim = Sim::new(
        options(&[("maxCharactersPerBatch", 10.0)]),
        echo_provider(10.0),
    );
    sim.translate(&item("aaaa"));
    sim.translate(&item("bbbb"));
    assert!(sim.calls.is_empty());
    sim.translate(&item("cccc")); // 12 > 10: the first batch is due now
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.calls[0].texts, vec!["aaaa", "bbbb"]);
    sim.translate(&item("dddddd")); // 4 + 6 = 10 reaches the limit: due now
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(sim.calls[1].texts, vec!["cccc", "dddddd"]);
}

#[test]
fn characters_are_counted_as_js_string_length() {
    let mut sim = Sim::new(
        options(&[("maxCharactersPerBatch", 4.0)]),
        echo_provider(10.0),
    );
    sim.translate(&item("😀")); // 2 UTF-16 units, 4 UTF-8 bytes
    sim.translate(&item("é"));
    assert!(
        sim.calls.is_empty(),
        "3 characters are under the limit of 4"
    );
    sim.translate(&item("x")); // reaches 4
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.calls[0].texts.len(), 3);
}

#[test]
fn batch_is_due_after_the_delay_from_its_first_item() {
    let mut sim = Sim::new(options(&[("batchDelayMs", 250.0)]), echo_provider(10.0));
    sim.translate(&item("a"));
    sim.drive_until(ms(100.0));
    sim.translate(&item("b"));
    sim.drive();
    assert_eq!(sim.starts_ms(), vec![250.0]);
    assert_eq!(sim.calls[0].texts, vec!["a", "b"]);
}

#[test]
fn an_over_long_item_travels_alone_as_a_single_request() {
    let mut sim = Sim::new(
        options(&[("maxCharactersPerBatch", 5.0)]),
        echo_provider(10.0),
    );
    sim.translate(&item("ab"));
    let long = sim.translate(&item("much too long"));
    sim.translate(&item("cd"));
    sim.drive();
    let long_call = sim
        .calls
        .iter()
        .find(|c| c.texts == ["much too long"])
        .unwrap();
    assert!(!long_call.is_batch);
    assert_eq!(long_call.at, ms(0.0));
    assert_eq!(sim.ok(long), echo("much too long"));
    // Rule 2: the long item made the open batch due at once, and it went first.
    let texts: Vec<&[String]> = sim.calls.iter().map(|c| &c.texts[..]).collect();
    assert_eq!(texts, [&["ab"][..], &["much too long"], &["cd"]]);
    assert_eq!(sim.calls[0].at, ms(0.0));
}

#[test]
fn an_over_long_item_sends_the_open_batch_first_even_when_tokens_are_short() {
    // One call a second: the open batch, due at once, holds the first token.
    let mut sim = Sim::new(
        options(&[
            ("maxCharactersPerBatch", 5.0),
            ("rate", 1.0),
            ("capacity", 1.0),
        ]),
        echo_provider(10.0),
    );
    sim.translate(&item("ab"));
    sim.drive_until(ms(50.0));
    sim.translate(&item("much too long"));
    sim.translate(&item("cd"));
    sim.drive();
    let texts: Vec<&[String]> = sim.calls.iter().map(|c| &c.texts[..]).collect();
    assert_eq!(texts[0], ["ab"]);
    assert_eq!(
        sim.calls[0].at,
        ms(50.0),
        "due at once, not after batchDelayMs"
    );
    assert_eq!(texts[1], ["much too long"]);
}

#[test]
fn a_batch_of_one_is_a_single_request() {
    let mut sim = Sim::new(Default::default(), echo_provider(10.0));
    let t = sim.translate(&item("alone"));
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    assert!(!sim.calls[0].is_batch);
    assert_eq!(sim.ok(t), echo("alone"));
    assert_eq!(sim.engine.stats().batch_calls, 0);
}

#[test]
fn non_llm_items_are_never_batched_but_are_paced() {
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 2.0)]),
        echo_provider(10.0),
    );
    for t in ["a", "b", "c", "d"] {
        sim.translate(&single(t));
    }
    sim.drive();
    assert!(sim.calls.iter().all(|c| !c.is_batch));
    assert_eq!(sim.starts_ms(), vec![0.0, 0.0, 1000.0, 2000.0]);
}

#[test]
fn only_compatible_items_share_a_batch() {
    let mut sim = Sim::new(Default::default(), echo_provider(10.0));
    let a = item("one");
    let mut b = item("two");
    b.compat.target_lang = "fr";
    let mut c = item("three");
    c.compat.context = "title";
    let mut d = item("four");
    d.compat.provider_id = "q";
    for it in [a, b, c, d] {
        sim.translate(&it);
    }
    sim.drive();
    assert_eq!(sim.calls.len(), 4);
    assert!(sim.calls.iter().all(|c| c.texts.len() == 1));
}

#[test]
fn late_binding_fills_a_batch_that_waits_for_a_token() {
    let mut sim = Sim::new(
        options(&[("rate", 0.25), ("capacity", 1.0)]),
        echo_provider(10.0),
    );
    sim.translate(&single("spend the only token"));
    let texts: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
    for (i, t) in texts.iter().enumerate() {
        sim.drive_until(ms(300.0 * (i as f64 + 1.0)));
        sim.translate(&item(t));
    }
    sim.drive();
    // The first batch became due at 400 ms but kept taking items until its call at 4 s.
    assert_eq!(sim.calls[1].at, ms(4000.0));
    assert_eq!(sim.calls[1].texts, vec!["p0", "p1", "p2", "p3"]);
    assert_eq!(sim.calls[2].texts, vec!["p4", "p5"]);
    assert_eq!(sim.calls.len(), 3);
}

#[test]
fn an_item_arriving_after_the_window_closed_still_joins_the_batch_before_it_starts() {
    let mut sim = Sim::new(options(&[("batchDelayMs", 5.0)]), echo_provider(1.0));
    sim.translate(&item("one"));
    sim.translate(&item("two"));
    // The next item arrives late (a slow first call, a busy page): the batch's window
    // closed meanwhile, but its call has not started, so the item still joins it.
    sim.now = ms(7.0);
    sim.translate(&item("three"));
    sim.drive();
    assert_eq!(sim.calls[0].texts, vec!["one", "two", "three"]);
}

#[test]
fn smaller_batch_limits_apply_to_queued_batches_at_once() {
    let mut sim = Sim::new(
        options(&[("rate", 0.5), ("capacity", 1.0)]),
        echo_provider(1.0),
    );
    sim.translate(&single("spend the token"));
    for t in ["a", "b", "c", "d"] {
        sim.translate(&item(t));
    }
    sim.engine
        .set_options(sim.now, &[("maxItemsPerBatch", OptionValue::Number(2.0))])
        .unwrap();
    sim.drive();
    let batches: Vec<Vec<String>> = sim.calls[1..].iter().map(|c| c.texts.clone()).collect();
    assert_eq!(batches, vec![vec!["a", "b"], vec!["c", "d"]]);
}
