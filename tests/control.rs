//! Items and control: blank and invalid items, abort, dispose, setOptions, statistics, maxQueued.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, OptionValue};
use sim::*;

#[test]
fn blank_text_resolves_to_itself_without_a_call() {
    let mut sim = Sim::new(Default::default(), echo_provider(1.0));
    // White space as JS's trim() sees it: U+FEFF is blank there, U+0085 is not.
    for blank in ["  \n\t ", "\u{feff}", "\u{3000}\u{2028}"] {
        let t = sim.translate(&item(blank));
        assert_eq!(sim.ok(t), blank);
    }
    assert!(sim.calls.is_empty());
    sim.translate(&item("\u{85}"));
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
}

#[test]
fn invalid_items_are_rejected_with_a_message_naming_the_field() {
    let mut sim = Sim::new(Default::default(), echo_provider(1.0));
    let mut it = item("x");
    it.compat.source_lang = "";
    let err = sim.engine.handle_translate(sim.now, &it).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(
        err.message,
        "sourceLang must be a non-empty string (got \"\")"
    );
    let mut it = item("x");
    it.priority = f64::NAN;
    let err = sim.engine.handle_translate(sim.now, &it).unwrap_err();
    assert_eq!(err.message, "priority must be a finite number (got NaN)");
    assert_eq!(sim.engine.stats().items, 0);
}

#[test]
fn abort_removes_a_queued_item_and_rejects_only_that_item() {
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 1.0)]),
        echo_provider(1.0),
    );
    sim.translate(&single("first"));
    let gone = sim.translate(&item("gone"));
    let twin_a = sim.translate(&item("twin"));
    let twin_b = sim.translate(&item("twin"));
    sim.abort(gone);
    sim.abort(twin_a);
    assert_eq!(sim.code(gone), ErrorCode::Aborted);
    sim.drive();
    assert!(sim
        .calls
        .iter()
        .all(|c| !c.texts.contains(&"gone".to_string())));
    assert_eq!(sim.code(twin_a), ErrorCode::Aborted);
    assert_eq!(sim.ok(twin_b), echo("twin"));
    sim.assert_settled_once(&[gone, twin_a, twin_b]);
    let stats = sim.engine.stats();
    assert_eq!((stats.aborted, stats.queued, stats.pending), (2, 0, 0));
}

#[test]
fn an_item_aborted_before_it_arrives_is_never_sent() {
    let mut sim = Sim::new(Default::default(), echo_provider(1.0));
    let t = sim
        .engine
        .handle_translate_aborted(sim.now, &single("x"))
        .unwrap();
    sim.drive();
    assert_eq!(sim.code(t), ErrorCode::Aborted);
    assert!(sim.calls.is_empty());
    let s = sim.engine.stats();
    assert_eq!((s.items, s.aborted, s.pending), (1, 1, 0));
}

#[test]
fn dispose_rejects_everything_cancels_running_calls_and_later_items() {
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 1.0)]),
        echo_provider(5000.0),
    );
    let running = sim.translate(&single("running"));
    let queued = sim.translate(&single("queued"));
    sim.engine.handle_dispose();
    sim.drain();
    assert_eq!(sim.code(running), ErrorCode::Disposed);
    assert_eq!(sim.code(queued), ErrorCode::Disposed);
    assert_eq!(sim.cancelled, vec![sim.calls[0].id]);
    let later = sim.translate(&item("later"));
    assert_eq!(sim.code(later), ErrorCode::Disposed);
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    sim.assert_settled_once(&[running, queued, later]);
    assert_eq!(sim.engine.poll_timeout(), None);
}

#[test]
fn set_options_is_all_or_nothing_with_a_message_naming_option_and_value() {
    let mut sim = Sim::new(Default::default(), echo_provider(1.0));
    let err = sim
        .engine
        .set_options(
            sim.now,
            &[
                ("rate", OptionValue::Number(1.0)),
                ("capacity", OptionValue::Number(-3.0)),
            ],
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidOptions);
    assert_eq!(err.message, "capacity must be an integer >= 1 (got -3)");
    assert_eq!(sim.engine.options().rate, 8.0);
    let err = sim
        .engine
        .set_options(sim.now, &[("burst", OptionValue::Number(1.0))])
        .unwrap_err();
    assert_eq!(err.message, "unknown option \"burst\" (got 1)");
}

#[test]
fn stats_count_originals_apart_from_retries() {
    let mut n = 0;
    let mut sim = Sim::new(Default::default(), move |call: &Call, _| {
        n += 1;
        let outcome = if n <= 2 {
            Err(http_error(502, None))
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(1.0), outcome)
    });
    for t in ["a", "b", "c", "d"] {
        sim.translate(&item(t));
    }
    sim.drive();
    let s = sim.engine.stats();
    assert_eq!(
        (s.items, s.provider_calls, s.batch_calls, s.retries),
        (4, 3, 3, 2)
    );
    assert_eq!(
        (s.succeeded, s.failed, s.pending, s.queued, s.in_flight),
        (4, 0, 0, 0, 0)
    );
}

#[test]
fn max_queued_bounds_the_backlog_and_rejects_new_items_with_queue_full() {
    let mut sim = Sim::new(
        options(&[("rate", 0.001), ("capacity", 1.0), ("maxQueued", 3.0)]),
        echo_provider(1.0),
    );
    let kept: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|t| sim.translate(&single(t)))
        .collect();
    let err = sim
        .engine
        .handle_translate(sim.now, &single("d"))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::QueueFull);
    assert_eq!(
        err.message,
        "the queue is full: maxQueued is 3 provider items"
    );
    // Identical items share a held provider item, so they are still accepted.
    let twin = sim.translate(&single("b"));
    let s = sim.engine.stats();
    assert_eq!((s.items, s.dedup_hits, s.pending), (4, 1, 4));
    sim.engine.handle_dispose();
    sim.drain();
    sim.assert_settled_once(&kept);
    sim.assert_settled_once(&[twin]);
}
