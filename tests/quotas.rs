//! Quotas as providers count them: settings and billing errors reject a provider's queue
//! in one step, a spent daily quota blocks it until the reset, reported limits hold
//! calls before any 429, a token budget paces by tokens, a 413 splits the batch.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{BlockReason, Call, Event, Failure, Instant, Quota, Reply};
use sim::*;

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("paragraph {i}")).collect()
}

/// A provider failing every call to `bad` with `failure`, answering others correctly.
fn failing_for(
    bad: &'static str,
    failure: impl Fn() -> Failure<String> + 'static,
) -> impl FnMut(&Call, Instant) -> Answer {
    move |call: &Call, _| {
        let outcome = if call.compat.provider_id == bad {
            Err(failure())
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(20.0), outcome)
    }
}

#[test]
fn a_settings_error_rejects_the_providers_queue_in_one_step() {
    for status in [401, 403, 404] {
        let mut sim = Sim::new(
            marker_options(&[("rate", 1.0), ("capacity", 1.0)]),
            failing_for("bad", move || http_error(status, None)),
        );
        let texts = texts(12);
        let bad: Vec<_> = texts
            .iter()
            .map(|t| sim.translate(&item_for("bad", t)))
            .collect();
        let good: Vec<_> = texts[..4]
            .iter()
            .map(|t| sim.translate(&item_for("good", t)))
            .collect();
        sim.drive();
        for t in &bad {
            assert_eq!(sim.code(*t), ErrorCode::ProviderError);
            let error = sim.result(*t).as_ref().unwrap_err();
            assert_eq!(error.status, Some(status));
            assert!(error.message.contains("check"), "{}", error.message);
        }
        for (t, text) in good.iter().zip(&texts) {
            assert_eq!(sim.ok(*t), echo(text));
        }
        let bad_calls = sim.calls.iter().filter(|c| c.provider_id == "bad").count();
        assert_eq!(bad_calls, 1, "status {status}: one call, not one per batch");
        assert!(sim.events.iter().any(|(_, e)| matches!(
            e,
            Event::Blocked { reason: BlockReason::Settings, status: Some(s), .. } if *s == status
        )));
        // The user may have fixed the key: a later item is sent again.
        let later = sim.translate(&item_for("bad", "again"));
        sim.drive();
        assert_eq!(sim.code(later), ErrorCode::ProviderError);
        assert_eq!(
            sim.calls.iter().filter(|c| c.provider_id == "bad").count(),
            2
        );
    }
}

#[test]
fn a_billing_error_rejects_the_queue_without_retries() {
    let billing = || {
        let mut f = http_error(429, None);
        f.quota = Some(Quota::Billing);
        f
    };
    let mut sim = Sim::new(
        marker_options(&[("rate", 1.0), ("capacity", 1.0)]),
        failing_for("p", billing),
    );
    let tickets: Vec<_> = texts(9).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &tickets {
        let error = sim.result(*t).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(429))
        );
        assert!(error.message.contains("out of credit"), "{}", error.message);
    }
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.engine.stats().retries, 0);
}

#[test]
fn a_daily_quota_blocks_the_provider_until_its_reset() {
    let daily = || {
        let mut f = http_error(429, Some(3_600_000.0));
        f.quota = Some(Quota::Daily);
        f
    };
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let count = calls.clone();
    let mut sim = Sim::new(marker_options(&[]), move |call: &Call, _| {
        count.set(count.get() + 1);
        let outcome = if count.get() == 1 {
            Err(daily())
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(20.0), outcome)
    });
    let first: Vec<_> = texts(6).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &first {
        let error = sim.result(*t).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(429))
        );
        let retry_in = error.retry_in.expect("the reset is known");
        assert!(retry_in.as_millis() > 3_500_000.0, "{retry_in:?}");
    }
    // Until the reset, items reject without a call, whatever their group.
    sim.drive_until(ms(1_800_000.0));
    let blocked = sim.translate(&item("during the block"));
    sim.drive_until(ms(1_800_100.0));
    assert_eq!(sim.code(blocked), ErrorCode::ProviderError);
    assert_eq!(calls.get(), 1);
    // A snapshot keeps it.
    let snapshot = sim.engine.snapshot(0.0);
    let saved = snapshot.providers[0].daily_block.as_ref().expect("saved");
    assert!(saved.reset_known && saved.blocked_for.as_millis() > 1_700_000.0);
    // After the reset, calls go out again.
    sim.drive_until(ms(3_700_000.0));
    let after = sim.translate(&item("after the reset"));
    sim.drive();
    assert_eq!(sim.ok(after), echo("after the reset"));
}

#[test]
fn a_retry_after_over_five_minutes_is_a_daily_block_too() {
    let mut sim = Sim::new(
        marker_options(&[]),
        failing_for("p", || http_error(429, Some(600_000.0))),
    );
    let t = sim.translate(&item("x"));
    sim.drive_until(ms(1000.0));
    assert_eq!(sim.code(t), ErrorCode::ProviderError);
    let again = sim.translate(&item("y"));
    sim.drive_until(ms(2000.0));
    assert_eq!(sim.code(again), ErrorCode::ProviderError);
    assert_eq!(sim.calls.len(), 1, "no call during the block");
}

#[test]
fn usage_is_counted_in_the_statistics() {
    let mut sim = Sim::new(marker_options(&[]), echo_provider(5.0));
    let t = sim.translate(&item("x"));
    sim.drive_until(ms(100.0));
    let id = sim.calls[0].id;
    let report = batch_pacer::Report {
        usage: Some(batch_pacer::Usage {
            input_tokens: 120.0,
            output_tokens: 30.0,
        }),
        ..Default::default()
    };
    sim.engine
        .handle_response_reported(ms(101.0), id, Ok(Reply::Text("X".into())), report);
    sim.drain();
    assert_eq!(sim.ok(t), "X");
    let stats = sim.engine.stats();
    assert_eq!((stats.input_tokens, stats.output_tokens), (120, 30));
}

#[test]
fn a_token_budget_paces_calls_by_their_estimated_cost() {
    // About 6 tokens a text (built-in estimate of "paragraph N" doubled for output, plus
    // the prompt): a 1,200 tokens-a-minute budget takes a few calls, then 20 tokens a
    // second refill it.
    let mut sim = Sim::new(
        marker_options(&[("tokensPerMinute", 1200.0), ("maxItemsPerBatch", 1.0)]),
        echo_provider(10.0),
    );
    let tickets: Vec<_> = texts(40).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &tickets {
        sim.ok(*t);
    }
    let starts = sim.starts_ms();
    // The request bucket alone (rate 8, capacity 60) would start all 40 at once.
    let at_once = starts.iter().filter(|s| **s <= 100.0).count();
    assert!(at_once < 40, "{at_once} calls at once");
    // Never more than a minute's worth of tokens spent plus what refilled.
    let per_call =
        batch_pacer::quota::raw_cost(batch_pacer::quota::input_tokens("paragraph 10"), 0.0, false);
    let last = *starts.last().unwrap();
    let spent = per_call * starts.len() as f64;
    assert!(
        spent <= 1200.0 + 20.0 * last / 1000.0 + per_call,
        "{spent} tokens by {last} ms"
    );
}

#[test]
fn a_batch_never_grows_past_what_the_budget_can_hold() {
    let long = "word ".repeat(150);
    let mut sim = Sim::new(
        marker_options(&[
            ("tokensPerMinute", 600.0),
            ("maxCharactersPerBatch", 100000.0),
        ]),
        echo_provider(10.0),
    );
    let texts: Vec<String> = (0..4).map(|i| format!("{i} {long}")).collect();
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let limit = batch_pacer::quota::max_batch_input(600.0);
    for call in &sim.calls {
        let input: f64 = call
            .texts
            .iter()
            .map(|t| batch_pacer::quota::input_tokens(t))
            .sum();
        assert!(call.texts.len() == 1 || input <= limit, "{input} > {limit}");
    }
    assert!(sim.calls.len() >= 2, "the four do not fit one batch");
}

#[test]
fn a_call_dealt_by_priority_that_the_token_budget_holds_back_still_starts() {
    // 600 tokens a minute (10 a second), batches of 4, no learned batch size. Token counts
    // are given, so every cost below is exact: a batch costs twice its input plus 140.
    let options = marker_options(&[("tokensPerMinute", 600.0), ("maxItemsPerBatch", 4.0)])
        .patched(&[("adaptiveBatching", batch_pacer::OptionValue::Bool(false))])
        .expect("valid options");
    let mut sim = Sim::new(options, echo_provider(10.0));
    let with = |text: &'static str, priority: f64, tokens: f64| {
        let mut it = item(text);
        it.priority = priority;
        it.tokens = Some(tokens);
        it
    };
    // A single request of 2 x 200 + 40 = 440 leaves 160 in the budget.
    let mut first = single("a long page");
    first.tokens = Some(200.0);
    let mut tickets = vec![sim.translate(&first)];
    // A batch due at once: a low-priority item first, then three of priority 1 (40
    // tokens, cost 220, which the budget holds at 6 s). Two more of priority 1 collect
    // in a second batch, due at 100 ms.
    let texts = [
        ("low", 0.0, 10.0),
        ("high 1", 1.0, 10.0),
        ("high 2", 1.0, 10.0),
        ("high 3", 1.0, 10.0),
        ("high 4", 1.0, 30.0),
        ("high 5", 1.0, 5.0),
    ];
    for (text, priority, tokens) in texts {
        tickets.push(sim.translate(&with(text, priority, tokens)));
    }
    // At 6 s the call is dealt by priority: the four best items (60 tokens, cost 260,
    // held until 10 s), while the two others (cost 170, which the budget holds) are
    // now first in line. The dealt call must still start once the budget holds it.
    sim.drive();
    let s = sim.engine.stats();
    assert_eq!(
        (s.pending, s.queued),
        (0, 0),
        "idle with items waiting: {s:?}"
    );
    for (ticket, (text, ..)) in tickets[1..].iter().zip(texts) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    sim.assert_settled_once(&tickets);
    let batches: Vec<(f64, Vec<String>)> = sim
        .calls
        .iter()
        .skip(1)
        .map(|c| (c.at.as_millis().round(), c.texts.clone()))
        .collect();
    let high: Vec<String> = (1..=4).map(|i| format!("high {i}")).collect();
    let rest = vec!["low".to_owned(), "high 5".to_owned()];
    // 260 tokens are there at 10 s; then the 170 of the rest at 27 s.
    assert_eq!(batches, [(10_000.0, high), (27_000.0, rest)]);
}

#[test]
fn reported_limits_hold_calls_before_any_429() {
    // The first call is answered by hand below, with the limits.
    let mut sim = Sim::new(
        marker_options(&[("maxItemsPerBatch", 1.0)]),
        |call: &Call, _| match call.texts[0].as_str() {
            "first" => Answer::Hang,
            _ => Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call))),
        },
    );
    let first = sim.translate(&item("first"));
    sim.drive_until(ms(100.0));
    let id = sim.calls[0].id;
    let report = batch_pacer::Report {
        limits: batch_pacer::ReportedLimits {
            requests_remaining: Some(0.0),
            requests_reset: Some(Duration::from_millis(5000.0)),
            ..Default::default()
        },
        ..Default::default()
    };
    sim.engine
        .handle_response_reported(ms(101.0), id, Ok(Reply::Text("F".into())), report);
    sim.drain();
    assert_eq!(sim.ok(first), "F");
    let later: Vec<_> = texts(3).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &later {
        sim.ok(*t);
    }
    let starts = sim.starts_ms();
    assert!(starts[1..].iter().all(|s| *s >= 5101.0), "{starts:?}");
    assert!(sim.events.iter().any(|(_, e)| matches!(
        e,
        Event::Limited {
            reason: batch_pacer::quota::Held::Requests,
            ..
        }
    )));
}

#[test]
fn a_413_splits_the_batch_in_halves_down_to_single_items() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let outcome = if call.texts.len() > 1 {
            Err(http_error(413, None))
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(10.0), outcome)
    });
    let texts = texts(4);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let sizes: Vec<usize> = sim.calls.iter().map(|c| c.texts.len()).collect();
    assert_eq!(sizes, [4, 2, 2, 1, 1, 1, 1]);
    // A single item that is too large fails for good.
    let mut sim = Sim::new(marker_options(&[]), |_: &Call, _| {
        Answer::After(Duration::from_millis(10.0), Err(http_error(413, None)))
    });
    let t = sim.translate(&item("x"));
    sim.drive();
    assert_eq!(sim.code(t), ErrorCode::ProviderError);
    assert_eq!(sim.calls.len(), 1);
}

#[test]
fn limits_without_a_reset_time_hold_the_provider_one_second() {
    let mut sim = Sim::new(
        marker_options(&[("maxItemsPerBatch", 1.0)]),
        |call: &Call, _| match call.texts[0].as_str() {
            "first" => Answer::Hang,
            _ => Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call))),
        },
    );
    sim.translate(&item("first"));
    sim.drive_until(ms(100.0));
    let id = sim.calls[0].id;
    let report = batch_pacer::Report {
        limits: batch_pacer::ReportedLimits {
            requests_remaining: Some(0.0),
            ..Default::default()
        },
        ..Default::default()
    };
    sim.engine
        .handle_response_reported(ms(100.0), id, Ok(Reply::Text("F".into())), report);
    sim.drain();
    let next = sim.translate(&item("second"));
    sim.drive();
    sim.ok(next);
    let start = sim.starts_ms()[1];
    assert!((1100.0..1200.0).contains(&start), "held until {start} ms");
}
