//! The older separator layout: replies split on the separator, count mismatches retried with backoff, then one by one.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Instant, Options, Reply};
use sim::*;

#[test]
fn a_paragraph_containing_the_default_separator_keeps_its_own_translation() {
    let mut sim = Sim::new(options(&[]), echo_provider(10.0));
    let texts = ["before\n\n%%\n\nafter", "plain", "100%% sure", "%%"];
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(sim.calls.len(), 1, "no mismatch, no retry");
    assert_eq!(sim.calls[0].separator, "\n\n%%%\n\n");
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
}

#[test]
fn array_replies_map_one_to_one() {
    let mut sim = Sim::new(Default::default(), |call: &Call, _| {
        let out = call.texts.iter().map(|t| echo(t)).collect();
        Answer::After(Duration::from_millis(5.0), Ok(Reply::Texts(out)))
    });
    let ts: Vec<_> = ["x", "y", "z"]
        .iter()
        .map(|t| sim.translate(&item(t)))
        .collect();
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.ok(ts[2]), echo("z"));
}

/// A wrong count on every batch, a different reply on each try (so that every retry
/// could have helped: a repeated reply would end the retries).
fn always_wrong_count(call: &Call, _: Instant) -> Answer {
    if call.is_batch {
        Answer::After(
            Duration::from_millis(10.0),
            Ok(Reply::Text(format!("one blob, try {}", call.attempt))),
        )
    } else {
        Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)))
    }
}

#[test]
fn count_mismatch_retries_with_backoff_then_falls_back_to_single_items() {
    // The batch size stays: this is about the retries of one batch.
    let opts = Options {
        adaptive_batching: false,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, always_wrong_count);
    let texts = ["a", "b", "c"];
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    let batch_calls: Vec<_> = sim.calls.iter().filter(|c| c.is_batch).collect();
    assert_eq!(batch_calls.len(), 4, "first try + maxBatchRetries (3)");
    assert_eq!(
        batch_calls.iter().map(|c| c.attempt).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    for (i, pair) in batch_calls.windows(2).enumerate() {
        let gap = pair[1].at.as_millis() - pair[0].at.as_millis() - 10.0;
        let full = 1000.0 * 2f64.powi(i as i32);
        assert!(gap >= full / 2.0 && gap <= full, "backoff {i}: {gap} ms");
    }
    let singles: Vec<_> = sim.calls.iter().filter(|c| !c.is_batch).collect();
    assert_eq!(singles.len(), 3);
    assert!(singles.iter().all(|c| c.attempt == 0));
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let stats = sim.engine.stats();
    assert_eq!(
        (stats.count_mismatches, stats.fallbacks, stats.retries),
        (4, 1, 3)
    );
    assert_eq!(
        (stats.provider_calls, stats.batch_calls, stats.items),
        (7, 4, 3)
    );
}

#[test]
fn without_fallback_a_persistent_mismatch_rejects_count_mismatch() {
    let mut opts = options(&[("maxBatchRetries", 1.0)]);
    opts.fallback_to_individual = false;
    let mut sim = Sim::new(opts, always_wrong_count);
    let a = sim.translate(&item("a"));
    let b = sim.translate(&item("b"));
    sim.drive();
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(sim.code(a), ErrorCode::CountMismatch);
    assert_eq!(sim.code(b), ErrorCode::CountMismatch);
    assert_eq!(sim.engine.stats().failed, 2);
}

#[test]
fn an_empty_segment_is_a_mismatch_not_a_translation() {
    let mut first = true;
    let mut sim = Sim::new(Default::default(), move |call: &Call, _| {
        let reply = if first {
            first = false;
            Reply::Text(format!("«a»{}{}", call.separator(), call.separator()))
        } else {
            echo_reply(call)
        };
        Answer::After(Duration::from_millis(1.0), Ok(reply))
    });
    let a = sim.translate(&item("a"));
    let b = sim.translate(&item("b"));
    sim.drive();
    assert_eq!(sim.engine.stats().count_mismatches, 1);
    assert_eq!(
        (sim.ok(a), sim.ok(b)),
        (echo("a").as_str(), echo("b").as_str())
    );
}
