//! Failed calls: which are retried, backoff and Retry-After, timeouts, and Rule 5 of docs/reference.md (a retry waits for its backoff and a token).
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Failure, OptionValue, Options, Reply};
use sim::*;

#[test]
fn transient_failures_are_retried_then_reject_provider_error_with_status_and_cause() {
    let mut sim = Sim::new(Default::default(), |_: &Call, _| {
        Answer::After(Duration::from_millis(5.0), Err(http_error(503, None)))
    });
    let t = sim.translate(&single("x"));
    sim.drive();
    assert_eq!(sim.calls.len(), 3, "first try + maxRetries (2)");
    let err = sim.result(t).as_ref().unwrap_err();
    assert_eq!(err.code, ErrorCode::ProviderError);
    assert_eq!(err.status, Some(503));
    assert_eq!(err.cause.as_deref(), Some("cause 503"));
    assert!(err.message.contains("503"), "{}", err.message);
}

#[test]
fn network_errors_408_409_and_bad_replies_are_retried_other_statuses_are_not() {
    for (failure, calls) in [
        (Failure::error(None, None, "fetch failed"), 3),
        (http_error(408, None), 3),
        (http_error(409, None), 3),
        (Failure::bad_reply("a number"), 3),
        (http_error(400, None), 1),
        (http_error(401, None), 1),
        (http_error(404, None), 1),
    ] {
        let f = failure.clone();
        let mut sim = Sim::new(Default::default(), move |_: &Call, _| {
            Answer::After(Duration::from_millis(5.0), Err(f.clone()))
        });
        let t = sim.translate(&single("x"));
        sim.drive();
        assert_eq!(sim.calls.len(), calls, "{failure:?}");
        assert_eq!(sim.code(t), ErrorCode::ProviderError);
    }
}

#[test]
fn a_retry_after_wins_over_backoff() {
    let mut n = 0;
    let mut sim = Sim::new(Default::default(), move |call: &Call, _| {
        n += 1;
        if n == 1 {
            Answer::After(
                Duration::from_millis(5.0),
                Err(http_error(503, Some(7000.0))),
            )
        } else {
            Answer::After(Duration::from_millis(5.0), Ok(echo_reply(call)))
        }
    });
    let t = sim.translate(&single("x"));
    sim.drive();
    // The Retry-After, lengthened by 0–10% so that clients that met it together do not
    // call again together; never the backoff's 1 s.
    let starts = sim.starts_ms();
    assert_eq!(starts.len(), 2);
    assert!((7005.0..=7005.0 + 700.0).contains(&starts[1]), "{starts:?}");
    assert_eq!(sim.ok(t), echo("x"));
}

#[test]
fn a_call_that_hangs_times_out_is_cancelled_retried_and_rejects_timeout() {
    let mut sim = Sim::new(options(&[("timeoutMs", 1000.0)]), |_: &Call, _| {
        Answer::Hang
    });
    let t = sim.translate(&single("x"));
    sim.drive();
    assert_eq!(sim.calls.len(), 3);
    assert_eq!(sim.cancelled.len(), 3);
    assert_eq!(sim.code(t), ErrorCode::Timeout);
    assert_eq!(sim.engine.stats().in_flight, 0);
}

#[test]
fn a_timeout_names_the_calls_own_limit_after_set_options_changes_it() {
    let mut sim = Sim::new(
        options(&[("timeoutMs", 1000.0), ("maxRetries", 0.0)]),
        |_: &Call, _| Answer::Hang,
    );
    let t = sim.translate(&single("x"));
    sim.drive_until(ms(500.0));
    sim.engine
        .set_options(sim.now, &[("timeoutMs", OptionValue::Number(0.0))])
        .unwrap();
    sim.drive();
    let Err(failure) = sim.result(t) else {
        panic!("the call hangs: it must time out");
    };
    assert_eq!(failure.code, ErrorCode::Timeout);
    // 1000 ms, and the default 15 ms for the one character it sent.
    assert!(
        failure.message.contains("after 1015 ms"),
        "{}",
        failure.message
    );
}

#[test]
fn a_late_or_second_answer_is_ignored() {
    let mut sim = Sim::new(
        options(&[("timeoutMs", 100.0), ("maxRetries", 0.0)]),
        |call: &Call, _| Answer::After(Duration::from_millis(500.0), Ok(echo_reply(call))),
    );
    let t = sim.translate(&single("x"));
    sim.drive();
    assert_eq!(sim.code(t), ErrorCode::Timeout);
    let id = sim.calls[0].id;
    sim.engine
        .handle_response(sim.now, id, Ok(Reply::Text("again".into())));
    sim.drain();
    sim.assert_settled_once(&[t]);
}

#[test]
fn a_retry_waits_for_its_backoff_and_a_token() {
    let mut n = 0;
    let mut sim = Sim::new(
        options(&[("rate", 0.1), ("capacity", 1.0), ("baseRetryDelayMs", 10.0)]),
        move |call: &Call, _| {
            n += 1;
            let outcome = if n == 1 {
                Err(http_error(500, None))
            } else {
                Ok(echo_reply(call))
            };
            Answer::After(Duration::from_millis(1.0), outcome)
        },
    );
    sim.translate(&single("x"));
    sim.drive();
    assert_eq!(
        sim.starts_ms(),
        vec![0.0, 10_000.0],
        "backoff is 10 ms but the next token is at 10 s"
    );
}

/// A failure the provider marks `retryable: false`.
fn final_by_provider(status: Option<u16>) -> Failure<String> {
    let mut failure = Failure::error(status, None, "refused by content policy");
    failure.retryable = Some(false);
    failure
}

#[test]
fn an_error_marked_not_retryable_is_never_retried_whatever_its_status() {
    for status in [None, Some(500), Some(503), Some(408), Some(413)] {
        let mut sim = Sim::new(Default::default(), move |_: &Call, _| {
            Answer::After(Duration::from_millis(5.0), Err(final_by_provider(status)))
        });
        let t = sim.translate(&single("x"));
        sim.drive();
        assert_eq!(sim.calls.len(), 1, "status {status:?}: one call");
        let err = sim.result(t).as_ref().unwrap_err();
        assert_eq!((err.code, err.status), (ErrorCode::ProviderError, status));
    }
    // `retryable: true` changes nothing: a 400 still fails at once, a 503 is retried.
    for (status, calls) in [(400, 1), (503, 3)] {
        let mut sim = Sim::new(Default::default(), move |_: &Call, _| {
            let mut failure = http_error(status, None);
            failure.retryable = Some(true);
            Answer::After(Duration::from_millis(5.0), Err(failure))
        });
        sim.translate(&single("x"));
        sim.drive();
        assert_eq!(sim.calls.len(), calls, "status {status}");
    }
}

#[test]
fn a_batch_refused_for_good_sends_each_item_once_alone() {
    // The provider refuses any call holding "bad": the batch, then that item alone; the
    // others succeed alone.
    let mut sim = Sim::new(Default::default(), |call: &Call, _| {
        let outcome = if call.texts.iter().any(|t| t == "bad") {
            Err(final_by_provider(Some(500)))
        } else {
            Ok(echo_reply(call))
        };
        Answer::After(Duration::from_millis(5.0), outcome)
    });
    let texts = ["one", "bad", "three"];
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    let sizes: Vec<usize> = sim.calls.iter().map(|c| c.texts.len()).collect();
    assert_eq!(sizes, [3, 1, 1, 1], "the batch, then each item once");
    assert_eq!(sim.ok(tickets[0]), echo("one"));
    assert_eq!(sim.code(tickets[1]), ErrorCode::ProviderError);
    assert_eq!(sim.ok(tickets[2]), echo("three"));
    assert_eq!(sim.engine.stats().fallbacks, 1);
    // Without the fallback, the batch's items reject with the call.
    let opts = Options {
        fallback_to_individual: false,
        ..Default::default()
    };
    let mut sim = Sim::new(opts, |_: &Call, _| {
        Answer::After(
            Duration::from_millis(5.0),
            Err(final_by_provider(Some(503))),
        )
    });
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    for t in tickets {
        assert_eq!(sim.code(t), ErrorCode::ProviderError);
    }
}
