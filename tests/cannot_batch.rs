//! Models that cannot batch (docs/guides/cannot-batch.md), on virtual time: a
//! repeated reply ends a batch's retries, the learned batch size per provider goes down
//! and back up, probes at a limit of 1, the snapshot keeps it, every call's output bound,
//! truncated replies of singles and batches, and whole replies past the length cap.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Event, Instant, Options, Reply, Report};
use sim::*;

/// A model that never keeps the layout: every batch is answered with the same plain
/// text (it depends on nothing but the texts), every single correctly.
fn plain_text_model(call: &Call, _: Instant) -> Answer {
    let reply = if call.is_batch {
        Reply::Text(format!("Here is the translation: {}", call.texts.join(" ")))
    } else {
        echo_reply(call)
    };
    Answer::After(Duration::from_millis(50.0), Ok(reply))
}

fn batch_limits(sim: &Sim) -> Vec<u32> {
    sim.events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::BatchLimit { limit, .. } => Some(*limit),
            _ => None,
        })
        .collect()
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("Paragraph number {i}.")).collect()
}

#[test]
fn a_repeated_reply_ends_the_retries_at_once() {
    let opts = Options {
        adaptive_batching: false,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, plain_text_model);
    let texts = texts(4);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    let batches: Vec<_> = sim.calls.iter().filter(|c| c.is_batch).collect();
    // The first try and one retry, whose reply is the first one again: no third try.
    assert_eq!(batches.len(), 2);
    assert_eq!(sim.engine.stats().count_mismatches, 2);
    assert_eq!(sim.engine.stats().fallbacks, 1);
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    sim.assert_settled_once(&tickets);
}

#[test]
fn a_repeated_reply_without_the_fallback_rejects_count_mismatch() {
    let opts = Options {
        adaptive_batching: false,
        fallback_to_individual: false,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, plain_text_model);
    let texts = texts(3);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(sim.calls.len(), 2);
    for t in &tickets {
        assert_eq!(sim.code(*t), ErrorCode::CountMismatch);
        let message = &sim.result(*t).as_ref().unwrap_err().message;
        assert!(message.contains("the same as the one before"), "{message}");
    }
}

#[test]
fn different_replies_are_retried_up_to_max_batch_retries() {
    let opts = Options {
        adaptive_batching: false,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, |call: &Call, _| {
        let reply = if call.is_batch {
            Reply::Text(format!("attempt {} went wrong", call.attempt))
        } else {
            echo_reply(call)
        };
        Answer::After(Duration::from_millis(50.0), Ok(reply))
    });
    for text in texts(4) {
        sim.translate(&item(&text));
    }
    sim.drive();
    assert_eq!(sim.calls.iter().filter(|c| c.is_batch).count(), 4);
}

#[test]
fn two_batches_that_prove_nothing_halve_the_limit_down_to_one() {
    // One call at a time, as against a local server with one slot: each call is dealt
    // after the replies before it, under the limit they taught.
    let mut sim = Sim::new(marker_options(&[("maxInFlight", 1.0)]), plain_text_model);
    let texts = texts(40);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(batch_limits(&sim), vec![2, 1]);
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    // Calls dealt after a change carry no more than the new limit.
    let mut limit = 4;
    let mut seen = 0;
    let limits = batch_limits(&sim);
    for call in &sim.calls {
        let changes = sim
            .events
            .iter()
            .filter(|(at, e)| matches!(e, Event::BatchLimit { .. }) && *at <= call.at)
            .count();
        while seen < changes {
            limit = limits[seen];
            seen += 1;
        }
        assert!(
            call.texts.len() <= limit as usize || (limit == 1 && call.texts.len() == 2),
            "a call of {} at a limit of {limit}",
            call.texts.len()
        );
    }
    // Never worse than one call per paragraph by more than what it took to learn.
    assert!(sim.calls.len() <= 40 + 6, "{} calls", sim.calls.len());
    sim.assert_settled_once(&tickets);
}

#[test]
fn replies_that_prove_every_segment_raise_the_limit_by_one() {
    let broken = std::rc::Rc::new(std::cell::Cell::new(true));
    let model = broken.clone();
    let mut sim = Sim::new(marker_options(&[("maxInFlight", 1.0)]), move |call, now| {
        if model.get() {
            plain_text_model(call, now)
        } else {
            Answer::After(Duration::from_millis(50.0), Ok(echo_reply(call)))
        }
    });
    for text in texts(8) {
        sim.translate(&item(&text));
    }
    sim.drive();
    assert_eq!(batch_limits(&sim), vec![2, 1]);
    // Another model behind the same id: it can batch. A probe of two after 20 singles
    // proves both, and each reply that proves every segment raises the limit by one.
    broken.set(false);
    let later = texts(60);
    let tickets: Vec<_> = later
        .iter()
        .map(|t| sim.translate(&item(&format!("Later: {t}"))))
        .collect();
    sim.drive();
    assert_eq!(batch_limits(&sim), vec![2, 1, 2, 3, 4]);
    let first_probe = sim
        .calls
        .iter()
        .position(|c| c.texts.iter().any(|t| t.starts_with("Later")) && c.is_batch)
        .unwrap();
    let singles_before = sim.calls[..first_probe]
        .iter()
        .rev()
        .take_while(|c| !c.is_batch)
        .count();
    assert_eq!(singles_before, 20, "the probe comes after 20 single calls");
    assert_eq!(sim.calls[first_probe].texts.len(), 2);
    sim.assert_settled_once(&tickets);
}

#[test]
fn without_adaptive_batching_the_batch_size_stays() {
    let opts = Options {
        max_in_flight: 1,
        ..Options::default()
    };
    let opts = Options {
        adaptive_batching: false,
        ..opts
    };
    let mut sim = Sim::new(opts, plain_text_model);
    for text in texts(12) {
        sim.translate(&item(&text));
    }
    sim.drive();
    assert!(batch_limits(&sim).is_empty());
    assert!(sim
        .calls
        .iter()
        .filter(|c| c.is_batch)
        .all(|c| c.texts.len() == 4));
}

#[test]
fn against_a_model_that_never_proves_a_batch_pages_cost_at_most_115_percent_of_singles() {
    // 200 paragraphs in waves of 4, each wave once the calls before it have answered (a
    // page read as it scrolls).
    let mut sim = Sim::new(Options::default(), plain_text_model);
    let mut tickets = Vec::new();
    for wave in 0..50 {
        for i in 0..4 {
            let text = format!("Wave {wave}, paragraph {i}.");
            tickets.push(sim.translate(&item(&text)));
        }
        sim.drive();
    }
    let calls = sim.calls.len() as f64;
    assert!(calls <= 1.15 * 200.0, "{calls} calls for 200 paragraphs");
    assert_eq!(sim.engine.stats().succeeded, 200);
    sim.assert_settled_once(&tickets);
}

#[test]
fn against_a_faithful_model_calls_are_what_they_are_without_the_option() {
    let run = |adaptive: bool| {
        let opts = Options {
            adaptive_batching: adaptive,
            ..Options::default()
        };
        let mut sim = Sim::new(opts, echo_provider(50.0));
        for text in texts(37) {
            sim.translate(&item(&text));
        }
        sim.drive();
        sim.calls.len()
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn the_snapshot_keeps_the_learned_limit() {
    let mut sim = Sim::new(marker_options(&[("maxInFlight", 1.0)]), plain_text_model);
    for text in texts(8) {
        sim.translate(&item(&text));
    }
    sim.drive();
    let snapshot = sim.engine.snapshot(1_000.0);
    let saved: Vec<_> = snapshot.providers.iter().map(|p| p.batch_limit).collect();
    assert_eq!(saved, vec![Some(1)]);
    let mut restored = Sim::new(marker_options(&[("maxInFlight", 1.0)]), plain_text_model);
    restored
        .engine
        .restore(&snapshot, Duration::from_millis(1_000.0));
    for text in texts(4) {
        restored.translate(&item(&text));
    }
    restored.drive();
    // Its first calls already go one item at a time.
    assert!(restored.calls.iter().all(|c| !c.is_batch));
    assert_eq!(restored.calls.len(), 4);
}

#[test]
fn every_call_carries_an_output_bound_of_two_to_four_times_its_texts() {
    let mut sim = Sim::new(Options::default(), echo_provider(10.0));
    let long = "word ".repeat(200);
    sim.translate(&item(&long));
    for text in texts(4) {
        sim.translate(&item(&text));
    }
    sim.drive();
    for call in &sim.calls {
        let tokens: f64 = call
            .texts
            .iter()
            .map(|t| batch_pacer::estimate::estimate_tokens(t))
            .sum();
        let room = f64::from(16 * call.texts.len() as u32 + 256);
        let bound = f64::from(call.max_output_tokens);
        assert!(bound >= 2.0 * tokens, "{bound} < 2 x {tokens}");
        assert!(
            bound <= 4.0 * tokens + room,
            "{bound} > 4 x {tokens} + {room}"
        );
    }
}

/// A model that stops at its token limit on the first `cut` tries of any call.
fn truncating_model(cut: u32) -> impl FnMut(&Call, Instant) -> Answer {
    move |call: &Call, _| {
        let report = Report {
            truncated: call.attempt < cut,
            ..Report::default()
        };
        let reply = if call.attempt < cut && call.is_batch {
            // Every segment but the last finished, the last cut short.
            let last = call.texts.len() - 1;
            let mut reply: String = call.markers()[..last]
                .iter()
                .zip(&call.texts)
                .map(|((open, close), text)| format!("{open}{}{close}\n", echo(text)))
                .collect();
            reply.push_str(&format!(
                "{}{} and on",
                call.markers()[last].0,
                echo(&call.texts[last])
            ));
            Reply::Text(reply)
        } else if call.attempt < cut {
            // Still writing new text when it was cut (no loop: the bound was too tight).
            let more: Vec<String> = (0..50).map(|k| format!("w{k}")).collect();
            Reply::Text(format!("{} {}", echo(&call.texts[0]), more.join(" ")))
        } else {
            echo_reply(call)
        };
        Answer::Reported(Duration::from_millis(20.0), Ok(reply), report)
    }
}

#[test]
fn a_truncated_single_is_retried_with_twice_the_bound_then_fails() {
    let mut sim = Sim::new(Options::default(), truncating_model(1));
    let ok = sim.translate(&single("Hello there."));
    sim.drive();
    assert_eq!(sim.ok(ok), echo("Hello there."));
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(
        sim.calls[1].max_output_tokens,
        2 * sim.calls[0].max_output_tokens
    );

    let mut sim = Sim::new(Options::default(), truncating_model(u32::MAX));
    let fails = sim.translate(&single("Hello there."));
    sim.drive();
    // maxRetries (2) retries, each with twice the bound of the one before.
    assert_eq!(sim.calls.len(), 3);
    let bounds: Vec<_> = sim.calls.iter().map(|c| c.max_output_tokens).collect();
    assert_eq!(bounds, vec![bounds[0], 2 * bounds[0], 4 * bounds[0]]);
    assert_eq!(sim.code(fails), ErrorCode::ProviderError);
    let message = &sim.result(fails).as_ref().unwrap_err().message;
    assert!(
        message.contains("did not end within its bound"),
        "{message}"
    );
}

#[test]
fn a_looping_single_is_retried_at_the_same_bound() {
    // Cut at its bound while it repeated one phrase: more room only buys more of it.
    let mut sim = Sim::new(Options::default(), |call: &Call, _| {
        let text = if call.attempt == 0 {
            format!(
                "{} {}",
                echo(&call.texts[0]),
                "encore une fois, ".repeat(30)
            )
        } else {
            echo(&call.texts[0])
        };
        let report = Report {
            truncated: call.attempt == 0,
            ..Report::default()
        };
        Answer::Reported(Duration::from_millis(20.0), Ok(Reply::Text(text)), report)
    });
    let ok = sim.translate(&single("Hello there."));
    sim.drive();
    assert_eq!(sim.ok(ok), echo("Hello there."));
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(
        sim.calls[1].max_output_tokens,
        sim.calls[0].max_output_tokens
    );
}

#[test]
fn a_truncated_batch_keeps_what_it_proved_and_sends_the_rest_with_twice_the_bound() {
    let mut sim = Sim::new(Options::default(), truncating_model(1));
    // Unlike lengths: the evidence that the segments before a missing last pair did not
    // shift.
    let texts: Vec<String> = [
        "A short opening line.",
        "A much longer second paragraph, which goes on for quite a while with many more words.",
        "Brief third.",
        "And a fourth paragraph of a middling length, to close the batch.",
    ]
    .map(String::from)
    .to_vec();
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    // What the truncated reply proved resolved; the rest went out again, alone here,
    // with twice the bound it had.
    assert_eq!(sim.calls.len(), 2);
    assert!(sim.calls[1].texts.len() < 4, "{:?}", sim.calls[1].texts);
    let resent = &sim.calls[1];
    let first_bound = |texts: &[String]| {
        let tokens: f64 = texts
            .iter()
            .map(|t| batch_pacer::estimate::estimate_tokens(t))
            .sum();
        batch_pacer::output_bound::output_bound(tokens, texts.len(), 1.0, 1)
    };
    assert_eq!(resent.max_output_tokens, 2 * first_bound(&resent.texts));
}

#[test]
fn the_bound_doubles_at_most_to_eight_times_the_first() {
    let opts = Options {
        max_retries: 10,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, truncating_model(u32::MAX));
    sim.translate(&single("Hello there."));
    sim.drive();
    let first = sim.calls[0].max_output_tokens;
    let most = sim.calls.iter().map(|c| c.max_output_tokens).max().unwrap();
    assert_eq!(most, 8 * first);
}

#[test]
fn a_whole_reply_past_the_length_cap_is_cut_and_read_as_truncated() {
    let mut sim = Sim::new(Options::default(), |call: &Call, _| {
        let reply = if call.attempt == 0 {
            // A model that loops: far longer than the cap of "Hi." (a few kilobytes).
            echo(&call.texts[0]) + &" and again".repeat(100_000)
        } else {
            echo(&call.texts[0])
        };
        Answer::After(Duration::from_millis(20.0), Ok(Reply::Text(reply)))
    });
    let t = sim.translate(&single("Hi."));
    sim.drive();
    assert_eq!(sim.calls.len(), 2, "the cut reply failed its call");
    assert_eq!(sim.ok(t), echo("Hi."));
}

#[test]
fn a_stream_that_says_it_was_truncated_is_read_as_a_truncated_reply() {
    let mut sim = Sim::new(Options::default(), |call: &Call, _| {
        if call.attempt > 0 {
            return Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)));
        }
        let text = echo(&call.texts[0]) + " and on and on";
        Answer::Stream(vec![
            (
                Duration::from_millis(10.0),
                Streamed::Value(StreamValue::Text(text)),
            ),
            (
                Duration::ZERO,
                Streamed::Value(StreamValue::Report(Report::cut())),
            ),
            (Duration::ZERO, Streamed::Value(StreamValue::End)),
        ])
    });
    let t = sim.translate(&single("Hello there."));
    sim.drive();
    // The single's truncated stream failed its call; the retry had twice the bound.
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(
        sim.calls[1].max_output_tokens,
        2 * sim.calls[0].max_output_tokens
    );
    assert_eq!(sim.ok(t), echo("Hello there."));
}
