//! Every input the pacer accepts can settle: a blank answer is no translation, a model
//! that thinks forever is cut, a restored snapshot is taken only as far as the pacer
//! could have written it, token debt is bounded, a store that never answers costs a
//! miss, and providers that nothing needs any more are forgotten.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{
    Call, Event, LookupResult, ProviderSnapshot, Reply, Report, SavedDailyBlock, Snapshot,
};
use sim::*;

const MINUTE: f64 = 60_000.0;

/// A stream that answers every call with `values`, then ends.
fn streaming(values: Vec<String>) -> impl FnMut(&Call, batch_pacer::Instant) -> Answer {
    move |_, _| {
        let mut stream: Vec<(Duration, Streamed)> = values
            .iter()
            .map(|v| {
                let value = Streamed::Value(StreamValue::Text(v.clone()));
                (Duration::from_millis(1.0), value)
            })
            .collect();
        stream.push((Duration::ZERO, Streamed::Value(StreamValue::End)));
        Answer::Stream(stream)
    }
}

/// One item answered by `provider`: it fails `provider_error` after its retries, with a
/// message that contains `says`.
fn fails_after_retries(
    provider: impl FnMut(&Call, batch_pacer::Instant) -> Answer + 'static,
    says: &str,
) {
    let mut sim = Sim::new(marker_options(&[("maxRetries", 2.0)]), provider);
    let ticket = sim.translate(&item("Good morning, everyone."));
    sim.drive();
    let Err(error) = sim.result(ticket) else {
        panic!(
            "a blank or endless answer resolved: {:?}",
            sim.result(ticket)
        );
    };
    assert_eq!(error.code, ErrorCode::ProviderError, "{error}");
    assert!(error.message.contains(says), "{error}");
    assert_eq!(sim.calls.len(), 3, "the first try and maxRetries retries");
    assert!(sim.calls.iter().all(|c| !c.is_batch));
    sim.assert_settled_once(&[ticket]);
}

#[test]
fn a_blank_single_reply_is_a_failed_call_retried_then_provider_error() {
    for blank in ["", "   \n", "\u{feff}\t\u{3000}"] {
        fails_after_retries(
            move |_, _| Answer::After(Duration::from_millis(5.0), Ok(Reply::Text(blank.into()))),
            "blank answer",
        );
    }
    // A one-element array or object of a blank string is the same blank answer.
    fails_after_retries(
        |_, _| {
            Answer::After(
                Duration::from_millis(5.0),
                Ok(Reply::Texts(vec![" ".into()])),
            )
        },
        "blank answer",
    );
    fails_after_retries(
        |_, _| {
            let keyed = Reply::Keyed(vec![("1".into(), String::new())]);
            Answer::After(Duration::from_millis(5.0), Ok(keyed))
        },
        "blank answer",
    );
}

#[test]
fn an_empty_stream_and_a_stream_of_blanks_are_blank_answers() {
    fails_after_retries(streaming(vec![]), "blank answer");
    fails_after_retries(
        streaming(vec![String::new(), " ".into(), "\n".into()]),
        "blank answer",
    );
}

#[test]
fn a_blank_answer_after_a_retry_does_not_stop_a_good_one() {
    let mut tries = 0;
    let mut sim = Sim::new(marker_options(&[]), move |call: &Call, _| {
        tries += 1;
        let text = if tries == 1 {
            String::new()
        } else {
            echo(&call.texts[0])
        };
        Answer::After(Duration::from_millis(5.0), Ok(Reply::Text(text)))
    });
    let ticket = sim.translate(&item("Hello"));
    sim.drive();
    assert_eq!(sim.ok(ticket), echo("Hello"));
    assert_eq!(sim.calls.len(), 2);
}

/// A stream that opens `<think>` and reasons on, value after value, far past any cap.
fn thinking_forever() -> Vec<String> {
    let mut values = vec!["<think>".to_owned()];
    values.extend((0..20_000).map(|i| format!("step {i}, ")));
    values.push("</think>never reached".to_owned());
    values
}

#[test]
fn a_model_that_thinks_forever_is_cut_at_the_length_cap() {
    let mut sim = Sim::new(
        marker_options(&[("maxRetries", 1.0)]),
        streaming(thinking_forever()),
    );
    let ticket = sim.translate(&item("Good morning."));
    sim.drive();
    let Err(error) = sim.result(ticket) else {
        panic!("an endless reasoning resolved");
    };
    assert_eq!(error.code, ErrorCode::ProviderError);
    assert!(
        error.message.contains("did not end within its bound"),
        "{error}"
    );
    // Each try was cut (its signal aborted), long before the 20,000 values ran out.
    assert_eq!(sim.cancelled.len(), 2, "both tries were cut");
    let last = sim.settled_at[&ticket].as_millis();
    assert!(
        last < 2.0 * 20_000.0,
        "settled at {last} ms, before the stream's end"
    );
}

#[test]
fn a_stream_of_empty_values_is_cut_too() {
    let mut sim = Sim::new(
        marker_options(&[("maxRetries", 0.0)]),
        streaming(vec![String::new(); 100_000]),
    );
    let ticket = sim.translate(&item("Good morning."));
    sim.drive();
    assert_eq!(sim.code(ticket), ErrorCode::ProviderError);
    assert_eq!(sim.cancelled.len(), 1, "the stream was cut before its end");
}

#[test]
fn a_batch_that_thinks_forever_is_cut_and_its_items_settle() {
    let mut sim = Sim::new(
        marker_options(&[("maxBatchRetries", 1.0), ("maxRetries", 0.0)]),
        move |call: &Call, _| {
            if call.is_batch {
                return streaming(thinking_forever())(call, batch_pacer::Instant::ZERO);
            }
            Answer::After(Duration::from_millis(5.0), Ok(echo_reply(call)))
        },
    );
    let tickets: Vec<_> = ["One.", "Two.", "Three."]
        .map(|t| sim.translate(&item(t)))
        .into();
    sim.drive();
    for (ticket, text) in tickets.iter().zip(["One.", "Two.", "Three."]) {
        assert_eq!(
            sim.ok(*ticket),
            echo(text),
            "sent alone after the cut batches"
        );
    }
    assert!(sim.cancelled.len() >= 2, "the batches were cut");
}

fn provider_snapshot(id: &str) -> ProviderSnapshot {
    ProviderSnapshot {
        provider_id: id.into(),
        paused_for: Duration::ZERO,
        adaptive_rate: None,
        adaptive_ceiling: 0.0,
        daily_block: None,
        limits: None,
        batch_limit: None,
        length_ratios: vec![],
        tokens: None,
    }
}

fn restored(providers: Vec<ProviderSnapshot>) -> Sim {
    let snapshot = Snapshot {
        wall_time_ms: 1_000.0,
        tokens: 60.0,
        providers,
    };
    let mut sim = Sim::new(marker_options(&[]), echo_provider(1.0));
    let elapsed = snapshot.elapsed(1_000.0).expect("a valid snapshot");
    sim.engine.restore(&snapshot, elapsed);
    sim
}

#[test]
fn a_restored_pause_is_at_most_five_minutes() {
    let mut sim = restored(vec![ProviderSnapshot {
        paused_for: Duration::from_millis(1e12),
        ..provider_snapshot("p")
    }]);
    let ticket = sim.translate(&single("Hello"));
    sim.drive();
    assert_eq!(sim.ok(ticket), echo("Hello"));
    let start = sim.starts_ms()[0];
    assert!(
        (5.0 * MINUTE..=5.0 * MINUTE + 1_000.0).contains(&start),
        "started at {start} ms"
    );
}

#[test]
fn a_restored_adaptive_rate_is_at_least_its_floor_and_at_most_rate() {
    let mut sim = restored(vec![ProviderSnapshot {
        adaptive_rate: Some(1e-300),
        adaptive_ceiling: 1e300,
        ..provider_snapshot("p")
    }]);
    let texts: Vec<String> = (0..3).map(|i| format!("t{i}")).collect();
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&single(t))).collect();
    sim.drive();
    for (ticket, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    // One call a minute at most apart: the floor, however slow the stored rate.
    let starts = sim.starts_ms();
    assert!(
        starts.windows(2).all(|w| w[1] - w[0] <= MINUTE + 1.0),
        "{starts:?}"
    );
}

#[test]
fn a_restored_daily_block_lasts_at_most_a_day() {
    let block = |reset_known| SavedDailyBlock {
        blocked_for: Duration::from_millis(1e15),
        reset_known,
        message: "the daily quota is spent".into(),
    };
    let mut sim = restored(vec![
        ProviderSnapshot {
            daily_block: Some(block(true)),
            ..provider_snapshot("known")
        },
        ProviderSnapshot {
            daily_block: Some(block(false)),
            ..provider_snapshot("unknown")
        },
    ]);
    let during = sim.translate(&single_for("known", "blocked"));
    sim.drive();
    assert_eq!(sim.code(during), ErrorCode::ProviderError);
    // An hour without a known reset, as the pacer itself blocks; a day with one.
    sim.drive_until(ms(60.0 * MINUTE + 1.0));
    let unknown = sim.translate(&single_for("unknown", "after an hour"));
    let known = sim.translate(&single_for("known", "after an hour"));
    sim.drive();
    assert_eq!(sim.ok(unknown), echo("after an hour"));
    assert_eq!(sim.code(known), ErrorCode::ProviderError);
    sim.drive_until(ms(24.0 * 60.0 * MINUTE + 1.0));
    let next_day = sim.translate(&single_for("known", "the next day"));
    sim.drive();
    assert_eq!(sim.ok(next_day), echo("the next day"));
}

#[test]
fn a_restored_reset_far_away_holds_no_longer_than_a_report_can() {
    use batch_pacer::quota::{SavedLimits, SavedWindow};
    let mut sim = restored(vec![ProviderSnapshot {
        limits: Some(SavedLimits {
            requests: Some(SavedWindow {
                remaining: 0.0,
                whole: 0.0,
                reset_in: Duration::from_millis(1e15),
            }),
            tokens: None,
        }),
        ..provider_snapshot("p")
    }]);
    let ticket = sim.translate(&single("Hello"));
    sim.drive();
    assert_eq!(sim.ok(ticket), echo("Hello"));
    let start = sim.starts_ms()[0];
    assert!(start <= 10.0 * MINUTE + 1_000.0, "started at {start} ms");
}

fn single_for<'a>(provider: &'a str, text: &'a str) -> batch_pacer::Item<'a> {
    let mut it = item_for(provider, text);
    it.compat.llm = false;
    it
}

#[test]
fn an_estimate_far_beyond_the_token_budget_leaves_one_bucket_of_debt() {
    let mut sim = Sim::new(
        marker_options(&[("tokensPerMinute", 6_000.0)]),
        echo_provider(1.0),
    );
    let texts: Vec<String> = (0..4).map(|i| format!("t{i}")).collect();
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| {
            let mut it = single(t);
            it.tokens = Some(1e12);
            sim.translate(&it)
        })
        .collect();
    sim.drive();
    for (ticket, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    // Each call goes once the bucket is full again: two minutes of refill (one bucket of
    // debt, then the bucket), never the 1e12 tokens' worth.
    let starts = sim.starts_ms();
    assert_eq!(starts[0], 0.0);
    for pair in starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            (2.0 * MINUTE - 1.0..=2.0 * MINUTE + 10.0).contains(&gap),
            "{starts:?}"
        );
    }
}

#[test]
fn reported_usage_far_beyond_the_budget_leaves_one_bucket_of_debt() {
    let usage = |call: &Call, _| {
        let report = Report {
            usage: Some(batch_pacer::Usage {
                input_tokens: 1e12,
                output_tokens: 0.0,
            }),
            ..Default::default()
        };
        Answer::Reported(Duration::from_millis(1.0), Ok(echo_reply(call)), report)
    };
    let mut sim = Sim::new(marker_options(&[("tokensPerMinute", 6_000.0)]), usage);
    let first = sim.translate(&single("first"));
    sim.drive();
    let second = sim.translate(&single("second"));
    sim.drive();
    assert_eq!(
        (sim.ok(first), sim.ok(second)),
        (&*echo("first"), &*echo("second"))
    );
    let gap = sim.starts_ms()[1] - sim.starts_ms()[0];
    assert!(gap <= 2.0 * MINUTE + 10.0, "waited {gap} ms");
}

#[test]
fn a_store_that_never_answers_is_a_miss_after_five_seconds_without_timeout() {
    let mut sim = Sim::new(marker_options(&[("timeoutMs", 0.0)]), echo_provider(1.0))
        .with_store(Box::new(|_| None));
    let ticket = sim.translate(&item("Hello"));
    sim.drive();
    assert_eq!(sim.ok(ticket), echo("Hello"));
    let start = sim.starts_ms()[0];
    assert!((5_000.0..5_200.0).contains(&start), "started at {start} ms");
    let reported = sim.events.iter().any(|(_, e)| {
        matches!(e, Event::CacheError { operation: "get", message }
            if message.contains("5000 ms"))
    });
    assert!(reported, "the miss is reported: {:?}", sim.events);
}

#[test]
fn a_store_lookup_keeps_the_call_timeout_as_its_bound_when_there_is_one() {
    let mut sim = Sim::new(marker_options(&[("timeoutMs", 800.0)]), echo_provider(1.0))
        .with_store(Box::new(|_| None));
    let ticket = sim.translate(&item("Hello"));
    sim.drive();
    assert_eq!(sim.ok(ticket), echo("Hello"));
    let start = sim.starts_ms()[0];
    assert!((800.0..1_000.0).contains(&start), "started at {start} ms");
    // A store that answers a hit in time is still read.
    let mut hit = Sim::new(marker_options(&[("timeoutMs", 0.0)]), echo_provider(1.0)).with_store(
        Box::new(|_| {
            Some((
                Duration::from_millis(4_000.0),
                LookupResult::Hit("Hallo".into()),
            ))
        }),
    );
    let ticket = hit.translate(&item("Hello"));
    hit.drive();
    assert_eq!(hit.ok(ticket), "Hallo");
    assert!(hit.calls.is_empty());
}

#[test]
fn fifty_thousand_providers_each_with_one_item_are_forgotten_once_settled() {
    let mut sim = Sim::new(
        marker_options(&[("rate", 1e6), ("capacity", 1e6), ("batchDelayMs", 0.0)]),
        echo_provider(1.0),
    );
    let mut most = 0;
    for i in 0..50_000 {
        let id = format!("provider-{i}");
        let text = format!("text {i}");
        let ticket = sim.translate(&single_for(&id, &text));
        sim.drive();
        assert_eq!(sim.ok(ticket), echo(&text));
        most = most.max(sim.engine.providers_remembered());
    }
    assert!(most <= 2_048, "at most {most} providers remembered at once");
    // Ten minutes later, the next input forgets the rest.
    sim.drive_until(ms(sim.now.as_millis() + 10.0 * MINUTE + 1.0));
    let ticket = sim.translate(&single_for("another", "x"));
    sim.drive();
    assert_eq!(sim.ok(ticket), echo("x"));
    assert!(
        sim.engine.providers_remembered() <= 1,
        "{} providers remembered",
        sim.engine.providers_remembered()
    );
}

#[test]
fn a_provider_with_a_live_pause_or_a_slowed_rate_is_kept() {
    let mut first = true;
    let mut sim = Sim::new(
        marker_options(&[("rate", 1e6), ("capacity", 1e6), ("batchDelayMs", 0.0)]),
        move |call: &Call, _| {
            if call.compat.provider_id == "paused" && std::mem::take(&mut first) {
                let error = http_error(429, Some(4.0 * MINUTE));
                return Answer::After(Duration::from_millis(1.0), Err(error));
            }
            Answer::After(Duration::from_millis(1.0), Ok(echo_reply(call)))
        },
    );
    let paused = sim.translate(&single_for("paused", "first"));
    sim.drive_until(ms(10.0));
    // Thousands of providers come and go while the pause lasts: sweeps forget them.
    for i in 0..5_000 {
        let id = format!("provider-{i}");
        let ticket = sim.translate(&single_for(&id, "x"));
        sim.drive_until(ms(sim.now.as_millis() + 2.0));
        assert_eq!(sim.ok(ticket), echo("x"));
    }
    assert!(sim.engine.providers_remembered() < 2_048);
    // Its pause and its slowed rate hold it back: it was kept through the sweeps.
    let snapshot = sim.engine.snapshot(0.0);
    let kept = snapshot
        .providers
        .iter()
        .find(|p| p.provider_id == "paused");
    assert!(
        kept.is_some_and(|p| p.paused_for > Duration::ZERO && p.adaptive_rate.is_some()),
        "the pause and the adaptive rate were kept: {kept:?}"
    );
    let later = sim.translate(&single_for("paused", "second"));
    sim.drive();
    assert_eq!(
        (sim.ok(paused), sim.ok(later)),
        (&*echo("first"), &*echo("second"))
    );
    let paused_starts: Vec<f64> = sim
        .calls
        .iter()
        .filter(|c| c.provider_id == "paused")
        .map(|c| c.at.as_millis())
        .collect();
    assert!(
        paused_starts[1..].iter().all(|at| *at >= 4.0 * MINUTE),
        "the pause held: {paused_starts:?}"
    );
}
