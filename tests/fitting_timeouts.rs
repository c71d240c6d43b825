//! Timeouts that fit the call (docs/guides/failures.md, "Timeouts that fit the call"): a call may take
//! `timeoutMs` plus `timeoutPerCharacterMs` per character it sends (a stream for its
//! first value, then `timeoutMs` between values), and a running call that no item needs
//! any more is cancelled, its reply neither used nor cached.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Event, Instant, Output, Reply};
use sim::*;

fn after(ms: f64) -> Duration {
    Duration::from_millis(ms)
}

/// When the engine reported a timeout, in ms.
fn timeouts_ms(sim: &Sim) -> Vec<f64> {
    let timeouts = sim
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Timeout { .. }));
    timeouts.map(|(at, _)| at.as_millis()).collect()
}

#[test]
fn a_whole_reply_may_take_timeout_ms_plus_the_per_character_part_of_the_texts_utf16_length() {
    // "a😀é" is 4 characters as JS counts them (the emoji is two UTF-16 units).
    let mut sim = Sim::new(
        options(&[
            ("timeoutMs", 1000.0),
            ("timeoutPerCharacterMs", 10.0),
            ("maxRetries", 0.0),
        ]),
        |_: &Call, _| Answer::Hang,
    );
    let t = sim.translate(&single("a😀é"));
    sim.drive();
    assert_eq!(timeouts_ms(&sim), [1040.0]);
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
    let Err(failure) = sim.result(t) else {
        panic!("a call that hangs times out");
    };
    assert_eq!(failure.code, ErrorCode::Timeout);
    assert!(
        failure.message.contains("after 1040 ms"),
        "{}",
        failure.message
    );
}

#[test]
fn a_batch_gets_the_per_character_part_of_all_its_texts() {
    let texts = ["x".repeat(100), "y".repeat(150)];
    let answer_after = |ms: f64| {
        move |call: &Call, _: Instant| {
            if call.attempt > 0 {
                return Answer::Hang;
            }
            Answer::After(after(ms), Ok(echo_reply(call)))
        }
    };
    let patch = [
        ("timeoutMs", 1000.0),
        ("timeoutPerCharacterMs", 4.0),
        ("maxRetries", 0.0),
    ];
    // 1000 + 4 × 250 = 2000 ms.
    let mut in_time = Sim::new(marker_options(&patch), answer_after(1999.0));
    let tickets: Vec<_> = texts.iter().map(|t| in_time.translate(&item(t))).collect();
    in_time.drive();
    assert_eq!(in_time.calls.len(), 1);
    assert!(in_time.calls[0].is_batch);
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(in_time.ok(*t), echo(text));
    }
    assert!(in_time.cancelled.is_empty());

    let mut late = Sim::new(marker_options(&patch), answer_after(2001.0));
    let tickets: Vec<_> = texts.iter().map(|t| late.translate(&item(t))).collect();
    late.drive();
    // The batch waited its 100 ms window, then its call ran out 2000 ms after it started.
    assert_eq!(timeouts_ms(&late), [late.calls[0].at.as_millis() + 2000.0]);
    for t in tickets {
        assert_eq!(late.code(t), ErrorCode::Timeout);
    }
}

#[test]
fn at_the_defaults_a_batch_of_1000_characters_may_take_30_seconds() {
    let texts: Vec<String> = "abcd".chars().map(|c| c.to_string().repeat(250)).collect();
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        Answer::After(after(30_000.0), Ok(echo_reply(call)))
    });
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(sim.calls.len(), 1, "one call, never timed out and retried");
    assert_eq!(sim.calls[0].texts.len(), 4);
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert!(sim.cancelled.is_empty());
}

#[test]
fn timeout_ms_0_is_no_timeout_whatever_the_per_character_part() {
    let mut sim = Sim::new(
        options(&[("timeoutMs", 0.0), ("timeoutPerCharacterMs", 15.0)]),
        |call: &Call, _| Answer::After(after(600_000.0), Ok(echo_reply(call))),
    );
    let t = sim.translate(&single("x"));
    sim.drive();
    assert_eq!(sim.ok(t), echo("x"));
    assert_eq!(sim.calls.len(), 1);
    assert!(sim.cancelled.is_empty());
}

/// A single text of 100 characters, streamed: its first value after `first_ms`, then
/// one value every `gap_ms` (the last after `last_gap_ms`), then the end.
fn stream_of_100(
    first_ms: f64,
    gap_ms: f64,
    last_gap_ms: f64,
) -> impl FnMut(&Call, Instant) -> Answer {
    move |call: &Call, _| {
        if call.attempt > 0 {
            return Answer::Hang;
        }
        let mut values = chunked(&echo(&call.texts[0]), 34, after(gap_ms));
        values[0].0 = after(first_ms);
        let last = values.len() - 2;
        values[last].0 = after(last_gap_ms);
        Answer::Stream(values)
    }
}

#[test]
fn a_stream_gets_the_per_character_part_for_its_first_value_only() {
    let text = "s".repeat(100);
    let patch = [
        ("timeoutMs", 1000.0),
        ("timeoutPerCharacterMs", 10.0),
        ("maxRetries", 0.0),
    ];
    // The first value may take 1000 + 10 × 100 ms; the values after it 1000 ms each.
    let mut alive = Sim::new(options(&patch), stream_of_100(1999.0, 999.0, 999.0));
    let t = alive.translate(&single(&text));
    alive.drive();
    assert_eq!(alive.ok(t), echo(&text));
    assert!(alive.cancelled.is_empty());

    let mut stalled = Sim::new(options(&patch), stream_of_100(1999.0, 999.0, 1001.0));
    let t = stalled.translate(&single(&text));
    stalled.drive();
    let Err(failure) = stalled.result(t) else {
        panic!("a stream silent for longer than timeoutMs times out");
    };
    assert_eq!(failure.code, ErrorCode::Timeout);
    assert!(
        failure.message.contains("no value for 1000 ms"),
        "{}",
        failure.message
    );
    // Its values came at 1999 and 2998 ms; the third was due by 3998 ms.
    assert_eq!(timeouts_ms(&stalled), [3998.0]);

    let mut slow_start = Sim::new(options(&patch), stream_of_100(2001.0, 10.0, 10.0));
    let t = slow_start.translate(&single(&text));
    slow_start.drive();
    assert_eq!(slow_start.code(t), ErrorCode::Timeout);
    assert_eq!(timeouts_ms(&slow_start), [2000.0]);
}

#[test]
fn a_running_call_whose_items_are_all_aborted_is_cancelled_and_its_reply_never_used_or_cached() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        Answer::After(after(5000.0), Ok(echo_reply(call)))
    });
    let first = sim.translate(&item("first"));
    let second = sim.translate(&item("second"));
    sim.drive_until(ms(1000.0));
    assert_eq!(sim.calls.len(), 1, "the batch is running");
    let call = sim.calls[0].id;
    sim.abort(first);
    assert!(
        sim.cancelled.is_empty(),
        "the second item still needs the call"
    );
    sim.abort(second);
    assert_eq!(sim.cancelled, [call]);
    assert_eq!(sim.code(first), ErrorCode::Aborted);
    assert_eq!(sim.code(second), ErrorCode::Aborted);
    let stats = sim.engine.stats();
    assert_eq!((stats.aborted, stats.in_flight, stats.pending), (2, 0, 0));

    // The reply comes at 5 s: nobody reads it, and nothing of it is cached.
    sim.drive();
    sim.assert_settled_once(&[first, second]);
    assert_eq!(sim.calls.len(), 1, "no retry");
    let again = sim.translate(&item("first"));
    sim.drive();
    assert_eq!(sim.ok(again), echo("first"));
    assert_eq!(sim.calls.len(), 2, "translated anew");
    assert_eq!(sim.engine.stats().cache_hits, 0);
}

#[test]
fn a_call_cancelled_by_aborts_is_not_retried_whatever_its_answer() {
    let mut sim = Sim::new(options(&[]), |_: &Call, _| {
        Answer::After(after(500.0), Err(http_error(503, None)))
    });
    let t = sim.translate(&single("x"));
    sim.drive_until(ms(100.0));
    sim.abort(t);
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
    sim.drive();
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.code(t), ErrorCode::Aborted);
    assert_eq!(sim.engine.stats().retries, 0);
}

#[test]
fn items_aborted_while_their_call_ran_are_not_sent_again_by_its_retries() {
    // Batches prove nothing (a retry, then the individual fallback); singles echo.
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let reply = match call.is_batch {
            true => Reply::Text("nothing under any marker".into()),
            false => echo_reply(call),
        };
        Answer::After(after(500.0), Ok(reply))
    });
    let kept = sim.translate(&item("alpha one"));
    let gone = [
        sim.translate(&item("beta two")),
        sim.translate(&item("gamma three")),
    ];
    sim.drive_until(ms(300.0));
    assert_eq!(sim.calls.len(), 1, "the batch is running");
    gone.iter().for_each(|t| sim.abort(*t));
    assert!(
        sim.cancelled.is_empty(),
        "the first item still needs the call"
    );
    sim.drive();
    assert_eq!(sim.ok(kept), echo("alpha one"));
    for call in &sim.calls[1..] {
        assert_eq!(call.texts, ["alpha one"], "no aborted text is sent again");
    }
    sim.assert_settled_once(&[kept, gone[0], gone[1]]);
    let stats = sim.engine.stats();
    assert_eq!((stats.aborted, stats.in_flight, stats.pending), (2, 0, 0));
}

#[test]
fn a_call_that_a_dedup_twin_still_waits_for_keeps_running() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        Answer::After(after(5000.0), Ok(echo_reply(call)))
    });
    let first = sim.translate(&item("shared"));
    let twin = sim.translate(&item("shared"));
    let other = sim.translate(&item("other"));
    sim.drive_until(ms(1000.0));
    assert_eq!(sim.calls.len(), 1);
    sim.abort(first);
    sim.abort(other);
    sim.drive();
    assert!(sim.cancelled.is_empty());
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.ok(twin), echo("shared"));
    assert_eq!(sim.code(first), ErrorCode::Aborted);
    assert_eq!(sim.code(other), ErrorCode::Aborted);
    sim.assert_settled_once(&[first, twin, other]);
}

#[test]
fn a_stream_whose_items_are_all_aborted_is_cancelled_and_its_later_values_ignored() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        Answer::Stream(chunked(&layout_reply(call, &echoes), 3, after(100.0)))
    });
    let a = sim.translate(&item("alpha beta"));
    let b = sim.translate(&item("gamma delta"));
    sim.drive_until(ms(400.0));
    assert_eq!(sim.calls.len(), 1);
    sim.abort(a);
    sim.abort(b);
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
    sim.drive();
    sim.assert_settled_once(&[a, b]);
    assert_eq!(sim.code(a), ErrorCode::Aborted);
    assert_eq!(sim.code(b), ErrorCode::Aborted);
    assert_eq!(sim.engine.stats().in_flight, 0);
}

#[test]
fn a_call_the_driver_has_not_started_yet_is_taken_back_when_its_items_are_aborted() {
    let mut sim = Sim::new(options(&[]), echo_provider(10.0));
    // Straight to the engine, outputs not taken: the call waits for the driver.
    let t = sim.engine.handle_translate(sim.now, &single("x")).unwrap();
    assert_eq!(sim.engine.stats().in_flight, 1, "its call was made");
    sim.engine.handle_abort(sim.now, t);
    let outputs: Vec<_> = std::iter::from_fn(|| sim.engine.poll_output()).collect();
    assert!(
        !outputs.iter().any(|o| matches!(o, Output::Call(_))),
        "nothing to start"
    );
    assert!(
        !outputs.iter().any(|o| matches!(o, Output::Cancel(_))),
        "nothing was started"
    );
    assert!(
        outputs.iter().any(|o| matches!(o, Output::Settled(s)
            if s.ticket == t && matches!(&s.result, Err(e) if e.code == ErrorCode::Aborted))),
        "it rejects aborted"
    );
    assert_eq!(sim.engine.stats().in_flight, 0);
}

#[test]
fn items_a_stream_resolved_early_no_longer_need_the_call() {
    // Unlike lengths, so that a closed segment is proven once the next one has begun.
    const UNLIKE: [&str; 4] = [
        "A short opening line.",
        "A much longer second paragraph, which goes on for quite a while with many more words than the others have.",
        "Brief third.",
        "And a fourth paragraph of a middling length, to close the batch.",
    ];
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let mut values: Vec<(Duration, Streamed)> = call
            .texts
            .iter()
            .zip(call.markers())
            .map(|(text, (open, close))| {
                let segment = format!("{open}{}{close}\n", echo(text));
                (after(100.0), Streamed::Value(StreamValue::Text(segment)))
            })
            .collect();
        values.push((after(100.0), Streamed::Value(StreamValue::End)));
        Answer::Stream(values)
    });
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    // The window ends at 100 ms; the first two segments come at 200 and 300 ms.
    sim.drive_until(ms(350.0));
    let (early, open): (Vec<_>, Vec<_>) =
        (0..4).partition(|i| sim.results.contains_key(&tickets[*i]));
    assert!(
        !early.is_empty() && open.len() >= 2,
        "resolved early: {early:?}"
    );
    for i in &open[..open.len() - 1] {
        sim.abort(tickets[*i]);
    }
    assert!(sim.cancelled.is_empty(), "the last open item still waits");
    sim.abort(tickets[*open.last().unwrap()]);
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
    sim.drive();
    sim.assert_settled_once(&tickets);
    for i in early {
        assert_eq!(sim.ok(tickets[i]), echo(UNLIKE[i]));
    }
    for i in open {
        assert_eq!(sim.code(tickets[i]), ErrorCode::Aborted);
    }
    assert_eq!(sim.calls.len(), 1);
}
