//! One test per rule of the public contract, on virtual time.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Failure, Instant, Item, OptionValue, Reply};
use sim::*;

fn single(text: &str) -> Item<'_> {
    let mut it = item(text);
    it.compat.llm = false;
    it
}

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

fn always_wrong_count(call: &Call, _: Instant) -> Answer {
    if call.is_batch {
        Answer::After(
            Duration::from_millis(10.0),
            Ok(Reply::Text("one blob".into())),
        )
    } else {
        Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)))
    }
}

#[test]
fn count_mismatch_retries_with_backoff_then_falls_back_to_single_items() {
    let mut sim = Sim::new(Default::default(), always_wrong_count);
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
    assert_eq!(sim.starts_ms(), vec![0.0, 7005.0]);
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
    assert!(
        failure.message.contains("after 1000 ms"),
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
fn a_429_pauses_only_that_provider_and_keeps_the_queue() {
    let mut first = true;
    let mut sim = Sim::new(
        options(&[("rate", 100.0), ("capacity", 100.0)]),
        move |call: &Call, _| {
            if call.compat.provider_id == "a" && first {
                first = false;
                return Answer::After(
                    Duration::from_millis(10.0),
                    Err(http_error(429, Some(2000.0))),
                );
            }
            Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)))
        },
    );
    let single_for = |p: &'static str, t: &'static str| {
        let mut it = item_for(p, t);
        it.compat.llm = false;
        it
    };
    let a1 = sim.translate(&single_for("a", "a1"));
    sim.drive_until(ms(50.0));
    let a2 = sim.translate(&single_for("a", "a2"));
    let b1 = sim.translate(&single_for("b", "b1"));
    sim.drive();
    let starts: Vec<(String, f64)> = sim
        .calls
        .iter()
        .map(|c| (c.texts[0].clone(), c.at.as_millis()))
        .collect();
    assert_eq!(starts[0], ("a1".into(), 0.0));
    assert_eq!(
        starts[1],
        ("b1".into(), 50.0),
        "other providers are not paused"
    );
    let later: Vec<_> = starts[2..]
        .iter()
        .map(|(t, at)| (t.as_str(), *at >= 2010.0))
        .collect();
    assert_eq!(
        later,
        vec![("a1", true), ("a2", true)],
        "a1 retried first after the pause"
    );
    for t in [a1, a2, b1] {
        assert!(sim.result(t).is_ok());
    }
    assert_eq!(sim.engine.stats().rate_limited, 1);
}

#[test]
fn a_burst_of_429s_is_one_episode_and_halves_the_rate_once() {
    let opts = options(&[
        ("rate", 8.0),
        ("capacity", 8.0),
        ("maxRateLimitRetries", 0.0),
    ]);
    let mut sim = Sim::new(opts, |_: &Call, _| {
        Answer::After(Duration::ZERO, Err(http_error(429, Some(1000.0))))
    });
    for t in ["a", "b", "c", "d", "e"] {
        sim.translate(&single(t));
    }
    sim.drive();
    let rates: Vec<Option<f64>> = sim
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            batch_pacer::Event::AdaptiveRate { rate, .. } => Some(*rate),
            _ => None,
        })
        .collect();
    assert_eq!(rates, vec![Some(4.0)]);
}

#[test]
fn rate_limit_retries_have_their_own_budget() {
    let mut sim = Sim::new(
        options(&[("maxRateLimitRetries", 2.0), ("maxRetries", 0.0)]),
        |_: &Call, _| {
            Answer::After(
                Duration::from_millis(1.0),
                Err(http_error(429, Some(100.0))),
            )
        },
    );
    let t = sim.translate(&single("x"));
    sim.drive();
    assert_eq!(sim.calls.len(), 3);
    let err = sim.result(t).as_ref().unwrap_err();
    assert_eq!(
        (err.code, err.status),
        (ErrorCode::ProviderError, Some(429))
    );
}

#[test]
fn a_retry_after_over_five_minutes_fails_at_once() {
    let mut sim = Sim::new(Default::default(), |_: &Call, _| {
        Answer::After(
            Duration::from_millis(1.0),
            Err(http_error(429, Some(86_400_000.0))),
        )
    });
    let t = sim.translate(&single("x"));
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    let err = sim.result(t).as_ref().unwrap_err();
    assert_eq!(
        (err.code, err.status),
        (ErrorCode::ProviderError, Some(429))
    );
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
fn the_adaptive_rate_has_a_floor_and_turning_it_off_lifts_it() {
    // 429s that come whatever the rate: each episode halves, but never below 1/min.
    let opts = options(&[("maxRateLimitRetries", 40.0), ("baseRetryDelayMs", 1.0)]);
    let mut sim = Sim::new(opts, |_: &Call, _| {
        Answer::After(Duration::from_millis(1.0), Err(http_error(429, Some(0.0))))
    });
    sim.translate(&single("x"));
    sim.drive();
    let rates: Vec<f64> = sim
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            batch_pacer::Event::AdaptiveRate { rate: Some(r), .. } => Some(*r),
            _ => None,
        })
        .collect();
    assert!(rates.len() > 10);
    assert!(rates.iter().all(|r| *r >= 1.0 / 60.0 - 1e-12), "{rates:?}");
    assert!(sim.engine.snapshot(0.0).providers[0]
        .adaptive_rate
        .is_some());
    sim.engine
        .set_options(sim.now, &[("adaptiveRate", OptionValue::Bool(false))])
        .unwrap();
    assert_eq!(
        sim.engine
            .snapshot(0.0)
            .providers
            .iter()
            .filter(|p| p.adaptive_rate.is_some())
            .count(),
        0
    );
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
