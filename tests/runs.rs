//! `pacer.run`: a provider call that is not a translation, paced under the rules of its
//! provider's translation calls (docs/guides/ai-sdk.md, "Calls that are not translations"), on virtual time.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Reply};
use sim::*;

/// The reply a run's function resolves with: the engine never reads it.
fn done() -> Result<Reply, batch_pacer::Failure<String>> {
    Ok(Reply::Text(String::new()))
}

/// A provider whose run calls answer `run` and whose translation calls echo, after 10 ms.
fn provider_with(
    mut run: impl FnMut(&Call) -> Answer + 'static,
) -> impl FnMut(&Call, batch_pacer::Instant) -> Answer {
    move |call, _| match call.run {
        Some(_) => run(call),
        None => Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call))),
    }
}

fn after(ms: f64) -> Duration {
    Duration::from_millis(ms)
}

#[test]
fn runs_and_translation_calls_share_the_request_bucket() {
    let (rate, capacity) = (2.0, 2.0);
    let opts = options(&[
        ("rate", rate),
        ("capacity", capacity),
        ("batchDelayMs", 0.0),
    ]);
    let mut sim = Sim::new(opts, provider_with(|_| Answer::After(after(10.0), done())));
    let mut items = Vec::new();
    let mut runs = Vec::new();
    let texts = ["a", "b", "c", "d", "e", "f"];
    for text in texts {
        items.push(sim.translate(&single(text)));
        runs.push(sim.run("p", 0.0));
    }
    sim.drive();
    let starts = sim.starts_ms();
    assert_eq!(starts.len(), 12, "six translation calls and six runs");
    assert_eq!(sim.calls.iter().filter(|c| c.run.is_some()).count(), 6);
    // Rule 1 over both kinds: for every window [starts[i], starts[j]], the calls started
    // in it are at most capacity + rate * w.
    for i in 0..starts.len() {
        for j in i..starts.len() {
            let w = (starts[j] - starts[i]) / 1000.0;
            let started = (j - i + 1) as f64;
            assert!(
                started <= capacity + rate * w + 1e-9,
                "{started} calls in {w} s: more than capacity + rate * w"
            );
        }
    }
    for ticket in runs {
        assert_eq!(sim.ok(ticket), "", "a run ends with success");
    }
    for (ticket, text) in items.iter().zip(texts) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    let stats = sim.engine.stats();
    assert_eq!(stats.provider_calls, 12, "runs count in providerCalls");
    assert_eq!(stats.items, 6, "a run is not an item");
}

#[test]
fn a_run_waits_out_a_429_pause_that_a_translation_call_met() {
    let mut first = true;
    let opts = options(&[("rate", 100.0), ("capacity", 100.0)]);
    let mut sim = Sim::new(opts, move |call: &Call, _| {
        if call.run.is_some() {
            return Answer::After(after(10.0), done());
        }
        if first {
            first = false;
            return Answer::After(after(10.0), Err(http_error(429, Some(2000.0))));
        }
        Answer::After(after(10.0), Ok(echo_reply(call)))
    });
    let item = sim.translate(&single("a"));
    sim.drive_until(ms(50.0));
    let run = sim.run("p", 0.0);
    let other = sim.run("q", 0.0);
    sim.drive();
    let started = |ticket| sim.calls.iter().find(|c| c.run == Some(ticket)).unwrap().at;
    assert!(
        started(run).as_millis() >= 2010.0,
        "the run started at {:?}, inside the provider's pause",
        started(run)
    );
    assert_eq!(started(other), ms(50.0), "another provider is not paused");
    assert_eq!(sim.ok(run), "");
    assert_eq!(sim.ok(item), echo("a"));
}

#[test]
fn a_429_in_a_run_pauses_that_providers_translation_calls_and_the_run_is_retried() {
    let mut first = true;
    let opts = options(&[("rate", 100.0), ("capacity", 100.0), ("batchDelayMs", 0.0)]);
    let mut sim = Sim::new(
        opts,
        provider_with(move |_| {
            if first {
                first = false;
                return Answer::After(after(10.0), Err(http_error(429, Some(3000.0))));
            }
            Answer::After(after(10.0), done())
        }),
    );
    let run = sim.run("p", 0.0);
    sim.drive_until(ms(50.0));
    let item = sim.translate(&single("a"));
    let elsewhere = sim.translate(&single_for_provider("q", "b"));
    sim.drive();
    let item_start = sim.calls.iter().find(|c| c.texts == ["a"]).unwrap().at;
    assert!(
        item_start.as_millis() >= 3010.0,
        "the translation call started at {item_start:?}, inside the pause a run met"
    );
    let other_start = sim.calls.iter().find(|c| c.texts == ["b"]).unwrap().at;
    assert_eq!(other_start, ms(50.0), "another provider is not paused");
    let run_calls: Vec<_> = sim.calls.iter().filter(|c| c.run == Some(run)).collect();
    assert_eq!(run_calls.len(), 2, "the run is retried after its 429");
    assert!(run_calls[1].at.as_millis() >= 3010.0);
    assert_eq!(run_calls[1].attempt, 1);
    assert_eq!(sim.ok(run), "");
    assert_eq!(sim.ok(item), echo("a"));
    assert_eq!(sim.ok(elsewhere), echo("b"));
    let stats = sim.engine.stats();
    assert_eq!(stats.rate_limited, 1);
    assert_eq!(stats.retries, 1);
}

fn single_for_provider<'a>(provider: &'a str, text: &'a str) -> batch_pacer::Item<'a> {
    let mut it = item_for(provider, text);
    it.compat.llm = false;
    it
}

#[test]
fn network_errors_are_retried_under_max_retries_then_reject_with_the_status() {
    let opts = options(&[("maxRetries", 2.0), ("baseRetryDelayMs", 100.0)]);
    let mut sim = Sim::new(
        opts,
        provider_with(|_| Answer::After(after(10.0), Err(http_error(503, None)))),
    );
    let run = sim.run("p", 0.0);
    sim.drive();
    assert_eq!(sim.calls.len(), 3, "a first try and maxRetries retries");
    let error = sim.result(run).as_ref().unwrap_err();
    assert_eq!(error.code, ErrorCode::ProviderError);
    assert_eq!(error.status, Some(503));
    assert_eq!(error.cause.as_deref(), Some("cause 503"));
    // Backoff with equal jitter: the first retry waits half to all of the base.
    assert!(
        sim.calls[1].at.as_millis() >= 60.0,
        "the retry waited for its backoff"
    );
}

#[test]
fn a_final_error_rejects_at_once_with_its_status() {
    let mut sim = Sim::new(
        options(&[]),
        provider_with(|_| Answer::After(after(10.0), Err(http_error(400, None)))),
    );
    let run = sim.run("p", 0.0);
    sim.drive();
    assert_eq!(sim.calls.len(), 1, "a 400 is not retried");
    let error = sim.result(run).as_ref().unwrap_err();
    assert_eq!(
        (error.code, error.status),
        (ErrorCode::ProviderError, Some(400))
    );
}

#[test]
fn rate_limited_tries_are_retried_under_max_rate_limit_retries() {
    let opts = options(&[("maxRateLimitRetries", 2.0), ("maxRetries", 0.0)]);
    let mut sim = Sim::new(
        opts,
        provider_with(|_| Answer::After(after(10.0), Err(http_error(429, Some(500.0))))),
    );
    let run = sim.run("p", 0.0);
    sim.drive();
    assert_eq!(
        sim.calls.len(),
        3,
        "429s have their own budget, not maxRetries"
    );
    let error = sim.result(run).as_ref().unwrap_err();
    assert_eq!(
        (error.code, error.status),
        (ErrorCode::ProviderError, Some(429))
    );
    assert_eq!(sim.engine.stats().rate_limited, 3);
}

#[test]
fn a_run_that_times_out_is_cancelled_retried_and_rejects_timeout() {
    let opts = options(&[("timeoutMs", 1000.0), ("maxRetries", 1.0)]);
    let mut sim = Sim::new(opts, provider_with(|_| Answer::Hang));
    let run = sim.run("p", 0.0);
    sim.drive();
    assert_eq!(sim.calls.len(), 2);
    let ids: Vec<_> = sim.calls.iter().map(|c| c.id).collect();
    assert_eq!(sim.cancelled, ids, "each timed-out try's signal is aborted");
    assert_eq!(sim.code(run), ErrorCode::Timeout);
}

#[test]
fn priority_orders_a_run_among_its_providers_queued_work() {
    let opts = options(&[("rate", 1.0), ("capacity", 1.0), ("batchDelayMs", 0.0)]);
    let mut sim = Sim::new(opts, provider_with(|_| Answer::After(after(10.0), done())));
    // Takes the one token: everything below queues.
    sim.translate(&single("first"));
    let mut high = single("high item");
    high.priority = 5.0;
    let low_item = sim.translate(&single("low item"));
    let low_run = sim.run("p", 0.0);
    let high_run = sim.run("p", 5.0);
    let high_item = sim.translate(&high);
    sim.drive();
    let order: Vec<String> = sim.calls[1..]
        .iter()
        .map(|c| match c.run {
            Some(t) if t == low_run => "low run".to_owned(),
            Some(t) if t == high_run => "high run".to_owned(),
            Some(_) => unreachable!(),
            None => c.texts[0].clone(),
        })
        .collect();
    assert_eq!(
        order,
        ["high run", "high item", "low item", "low run"],
        "higher first, first come first served among equals"
    );
    for ticket in [low_item, high_item] {
        assert!(sim.result(ticket).is_ok());
    }
}

#[test]
fn max_in_flight_covers_runs() {
    let opts = options(&[("maxInFlight", 1.0), ("batchDelayMs", 0.0)]);
    let mut sim = Sim::new(
        opts,
        provider_with(|_| Answer::After(after(1000.0), done())),
    );
    let run = sim.run("p", 0.0);
    let item = sim.translate(&single("a"));
    sim.drive();
    assert_eq!(sim.max_running, 1);
    let item_start = sim.calls.iter().find(|c| c.run.is_none()).unwrap().at;
    assert_eq!(
        item_start,
        ms(1000.0),
        "the item waited for the running run"
    );
    assert!(sim.result(run).is_ok() && sim.result(item).is_ok());
}

#[test]
fn a_queued_run_aborted_is_removed_and_rejects_aborted() {
    let opts = options(&[("rate", 1.0), ("capacity", 1.0)]);
    let mut sim = Sim::new(opts, provider_with(|_| Answer::After(after(10.0), done())));
    let first = sim.run("p", 0.0);
    let second = sim.run("p", 0.0);
    sim.abort_run(second);
    assert_eq!(sim.code(second), ErrorCode::Aborted);
    sim.drive();
    assert_eq!(sim.calls.len(), 1, "the aborted run never started");
    assert_eq!(sim.ok(first), "");
    sim.assert_settled_once(&[first, second]);
}

#[test]
fn a_running_run_aborted_rejects_at_once_and_its_call_is_cancelled() {
    let mut sim = Sim::new(
        options(&[]),
        provider_with(|_| Answer::After(after(5000.0), done())),
    );
    let run = sim.run("p", 0.0);
    sim.drive_until(ms(100.0));
    let id = sim.calls[0].id;
    sim.abort_run(run);
    assert_eq!(sim.code(run), ErrorCode::Aborted);
    assert_eq!(sim.cancelled, [id], "the function's signal is aborted");
    assert_eq!(sim.engine.stats().in_flight, 0);
    sim.drive();
    sim.assert_settled_once(&[run]);
    assert_eq!(sim.calls.len(), 1);
}

#[test]
fn dispose_rejects_pending_runs_and_later_runs_disposed() {
    let opts = options(&[("rate", 1.0), ("capacity", 1.0)]);
    let mut sim = Sim::new(opts, provider_with(|_| Answer::Hang));
    let running = sim.run("p", 0.0);
    let queued = sim.run("p", 0.0);
    sim.engine.handle_dispose();
    sim.drain();
    let later = sim.run("p", 0.0);
    for ticket in [running, queued, later] {
        assert_eq!(sim.code(ticket), ErrorCode::Disposed);
    }
    sim.assert_settled_once(&[running, queued, later]);
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
}

#[test]
fn bad_input_is_invalid_input_naming_the_field() {
    let mut sim = Sim::new(options(&[]), provider_with(|_| Answer::Hang));
    let now = sim.now;
    let empty = sim.engine.handle_run(now, "", 0.0).unwrap_err();
    assert_eq!(empty.code, ErrorCode::InvalidInput);
    assert!(empty.message.starts_with("providerId"), "{}", empty.message);
    let priority = sim.engine.handle_run(now, "p", f64::NAN).unwrap_err();
    assert_eq!(priority.code, ErrorCode::InvalidInput);
    assert!(
        priority.message.starts_with("priority"),
        "{}",
        priority.message
    );
    sim.drain();
    assert!(sim.calls.is_empty());
}

#[test]
fn a_settings_error_in_a_run_rejects_the_providers_queued_items_and_runs() {
    let opts = options(&[("rate", 1.0), ("capacity", 1.0), ("batchDelayMs", 0.0)]);
    let mut sim = Sim::new(
        opts,
        provider_with(|_| Answer::After(after(10.0), Err(http_error(401, None)))),
    );
    let run = sim.run("p", 0.0);
    let item = sim.translate(&single("a"));
    let queued_run = sim.run("p", 0.0);
    sim.drive();
    assert_eq!(sim.calls.len(), 1, "no call after the key was refused");
    for ticket in [run, item, queued_run] {
        let error = sim.result(ticket).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(401))
        );
    }
}

#[test]
fn a_daily_block_rejects_new_runs_without_a_call() {
    let opts = options(&[("batchDelayMs", 0.0)]);
    let mut sim = Sim::new(opts, move |call: &Call, _| {
        if call.run.is_some() {
            return Answer::After(after(10.0), done());
        }
        Answer::After(after(10.0), Err(http_error(429, Some(3_600_000.0))))
    });
    let item = sim.translate(&single("a"));
    sim.drive_until(ms(100.0));
    assert_eq!(sim.code(item), ErrorCode::ProviderError);
    let run = sim.run("p", 0.0);
    let error = sim.result(run).as_ref().unwrap_err();
    assert_eq!(
        (error.code, error.status),
        (ErrorCode::ProviderError, Some(429))
    );
    assert_eq!(sim.calls.len(), 1, "the run made no call");
}
