//! Streamed replies on virtual time: items resolve as the reply proves them, never
//! wrongly; broken streams, timeouts between values, reasoning, the length cap, previews.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Failure, Reply, Report, Usage};
use proptest::prelude::*;
use sim::*;

/// Paragraphs of clearly unlike lengths: their lengths rule renumbering shifts out.
const UNLIKE: [&str; 4] = [
    "A short opening line.",
    "A much longer second paragraph, which goes on for quite a while with many more words than the others have.",
    "Brief third.",
    "And a fourth paragraph of a middling length, to close the batch.",
];

fn every(ms: f64) -> Duration {
    Duration::from_millis(ms)
}

/// One value per segment of the call's correct reply, `gap_ms` apart, then the end.
fn per_segment(call: &Call, gap_ms: f64) -> Vec<(Duration, Streamed)> {
    let mut values: Vec<(Duration, Streamed)> = call
        .texts
        .iter()
        .zip(call.markers())
        .map(|(text, (open, close))| {
            let segment = format!("{open}{}{close}\n", echo(text));
            (every(gap_ms), Streamed::Value(StreamValue::Text(segment)))
        })
        .collect();
    values.push((every(gap_ms), Streamed::Value(StreamValue::End)));
    values
}

/// Sends `texts`, drives the pacer until idle, and checks that each item settled once
/// with its own translation.
fn translate_all<S: AsRef<str>>(sim: &mut Sim, texts: &[S]) -> Vec<batch_pacer::Ticket> {
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&item(t.as_ref())))
        .collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text.as_ref()));
    }
    tickets
}

fn stream_options(patch: &[(&str, f64)]) -> batch_pacer::Options {
    let mut all = vec![("maxItemsPerBatch", 4.0)];
    all.extend_from_slice(patch);
    marker_options(&all)
}

#[test]
fn a_faithful_stream_resolves_each_paragraph_once_the_next_one_has_begun() {
    // Like lengths: the marker numbers, not the lengths, are the evidence.
    let texts = ["one cat", "two cats", "six cats", "ten cats"];
    let mut sim = Sim::new(stream_options(&[]), |call: &Call, _| {
        Answer::Stream(per_segment(call, 100.0))
    });
    let tickets = translate_all(&mut sim, &texts);
    assert_eq!(sim.calls.len(), 1, "one call, nothing sent again");
    // Segment k arrives at +100·(k + 1) ms, the end of the stream at +500 ms: each
    // resolves with the next one's text, the last one at the end (its pair is judged
    // only there).
    let start = sim.calls[0].at;
    let at: Vec<Duration> = tickets
        .iter()
        .map(|t| sim.settled_at[t].since(start))
        .collect();
    assert_eq!(at, [200.0, 300.0, 400.0, 500.0].map(every));
    let stats = sim.engine.stats();
    assert_eq!(stats.streamed_calls, 1);
    assert_eq!(stats.early_resolved, 3);
}

#[test]
fn a_model_counting_on_after_a_merge_stops_early_resolution_at_once() {
    let mut sim = Sim::new(
        stream_options(&[("baseRetryDelayMs", 10.0)]),
        |call: &Call, _| {
            if call.attempt > 0 {
                return Answer::After(every(5.0), Ok(echo_reply(call)));
            }
            let m = call.markers();
            let e: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
            // Segments 1 and 2 merged under the first pair, the rest numbered 2, 3 as a
            // count: no such numbers in the batch.
            let tag = m[0]
                .0
                .trim_matches(['<', '>'])
                .trim_end_matches(|c: char| c.is_ascii_digit());
            let reply = format!(
                "{}{} {}{}\n<{tag}2>{}</{tag}2>\n<{tag}3>{}</{tag}3>\n",
                m[0].0, e[0], e[1], m[0].1, e[2], e[3]
            );
            Answer::Stream(chunked(&reply, 5, every(10.0)))
        },
    );
    translate_all(&mut sim, &UNLIKE);
    assert_eq!(sim.engine.stats().early_resolved, 0);
    assert_eq!(sim.calls[1].texts.len(), 4, "nothing proven");
}

#[test]
fn the_timeout_runs_between_values_not_over_the_whole_stream() {
    let mut sim = Sim::new(
        stream_options(&[("timeoutMs", 1000.0)]),
        |call: &Call, _| Answer::Stream(per_segment(call, 900.0)),
    );
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(UNLIKE) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(
        sim.calls.len(),
        1,
        "4.5 s of stream, never 1 s without a value"
    );
    assert!(sim.cancelled.is_empty());
}

#[test]
fn a_stalled_stream_times_out_and_keeps_what_it_proved() {
    let mut sim = Sim::new(
        stream_options(&[("timeoutMs", 1000.0), ("baseRetryDelayMs", 10.0)]),
        |call: &Call, _| {
            if call.attempt > 0 {
                return Answer::After(every(5.0), Ok(echo_reply(call)));
            }
            let mut values = per_segment(call, 100.0);
            // Three segments, then silence: no value, no end.
            values.truncate(3);
            Answer::Stream(values)
        },
    );
    translate_all(&mut sim, &UNLIKE);
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
    // Timed out 1 s after the third value; the retry carries only the open items.
    let early = sim.engine.stats().early_resolved as usize;
    assert!(early >= 1);
    assert_eq!(sim.calls[1].texts.len(), 4 - early);
    assert!(sim.calls[1].texts.iter().all(|t| t != UNLIKE[0]));
}

#[test]
fn a_broken_stream_fails_the_open_items_as_a_smaller_batch() {
    let mut sim = Sim::new(stream_options(&[("maxRetries", 0.0)]), |call: &Call, _| {
        let mut values = per_segment(call, 100.0);
        values.truncate(3);
        values.push((every(10.0), Streamed::Fail(http_error(503, None))));
        Answer::Stream(values)
    });
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    assert_eq!(sim.ok(tickets[0]), echo(UNLIKE[0]));
    assert_eq!(sim.code(tickets[3]), ErrorCode::ProviderError);
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.engine.stats().streamed_calls, 1);
}

#[test]
fn a_stream_that_resolved_everything_early_and_then_broke_sends_nothing_again() {
    // Eight paragraphs of unlike lengths: all but the last two resolve early; the end
    // of the stream never comes and the next value is an error.
    let texts: Vec<String> = (0..6)
        .map(|i| format!("p{i} {}", "word ".repeat([1, 9, 2, 14, 3, 20][i])))
        .collect();
    let mut sim = Sim::new(marker_options(&[("maxItemsPerBatch", 6.0)]), |call, _| {
        if call.attempt > 0 {
            return Answer::After(every(5.0), Ok(echo_reply(call)));
        }
        let mut values = per_segment(call, 10.0);
        values.pop();
        values.push((every(10.0), Streamed::Fail(http_error(500, None))));
        Answer::Stream(values)
    });
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let early = sim.engine.stats().early_resolved as usize;
    assert!(early >= 2, "early: {early}");
    assert_eq!(sim.calls[1].texts.len(), 6 - early);
}

#[test]
fn the_separator_layout_resolves_nothing_before_the_end() {
    let mut sim = Sim::new(options(&[("maxItemsPerBatch", 4.0)]), |call: &Call, _| {
        let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        Answer::Stream(chunked(&layout_reply(call, &echoes), 7, every(10.0)))
    });
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    let end = sim.settled_at[&tickets[0]];
    for (t, text) in tickets.iter().zip(UNLIKE) {
        assert_eq!(sim.ok(*t), echo(text));
        assert_eq!(sim.settled_at[t], end);
    }
    assert_eq!(sim.engine.stats().early_resolved, 0);
}

#[test]
fn a_single_request_streams_to_the_joined_text() {
    let mut sim = Sim::new(marker_options(&[]), |_: &Call, _| {
        Answer::Stream(chunked("Hallo, schöne Welt!", 3, every(10.0)))
    });
    let t = sim.translate(&single("Hello, beautiful world!"));
    sim.drive();
    assert_eq!(sim.ok(t), "Hallo, schöne Welt!");
}

#[test]
fn usage_reported_in_a_stream_counts() {
    let mut sim = Sim::new(marker_options(&[]), |_: &Call, _| {
        let mut values = chunked("Hallo", 2, every(10.0));
        let report = Report {
            usage: Some(Usage {
                input_tokens: 12.0,
                output_tokens: 3.0,
            }),
            ..Report::default()
        };
        values.insert(
            values.len() - 1,
            (every(1.0), Streamed::Value(StreamValue::Report(report))),
        );
        Answer::Stream(values)
    });
    let t = sim.translate(&single("Hello"));
    sim.drive();
    assert_eq!(sim.ok(t), "Hallo");
    let stats = sim.engine.stats();
    assert_eq!((stats.input_tokens, stats.output_tokens), (12, 3));
}

#[test]
fn reasoning_is_ignored_in_streams_and_string_replies() {
    let mut sim = Sim::new(stream_options(&[]), |call: &Call, _| {
        let wrong: Vec<String> = call.texts.iter().map(|_| "draft".to_owned()).collect();
        let right: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        let reply = format!(
            "<THINK>Let me see: {}</think>{}",
            layout_reply(call, &wrong),
            layout_reply(call, &right)
        );
        if call.attempt == 0 {
            Answer::Stream(chunked(&reply, 5, every(10.0)))
        } else {
            Answer::After(every(5.0), Ok(Reply::Text(reply)))
        }
    });
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(UNLIKE) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let mut sim = Sim::new(marker_options(&[]), |_: &Call, _| {
        Answer::After(
            every(5.0),
            Ok(Reply::Text("<think>hmm</think>Hallo".into())),
        )
    });
    let t = sim.translate(&single("Hello"));
    sim.drive();
    assert_eq!(sim.ok(t), "Hallo");
}

#[test]
fn a_single_reply_left_empty_by_reasoning_is_a_failed_call() {
    let mut sim = Sim::new(
        marker_options(&[("baseRetryDelayMs", 10.0)]),
        |call: &Call, _| {
            let reply = if call.attempt == 0 {
                "<think>the user wants German, I suppose, so".to_owned()
            } else {
                "Hallo".to_owned()
            };
            Answer::Stream(chunked(&reply, 4, every(10.0)))
        },
    );
    let t = sim.translate(&single("Hello"));
    sim.drive();
    assert_eq!(sim.ok(t), "Hallo");
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(sim.engine.stats().retries, 1);
}

#[test]
fn a_looping_model_is_cut_at_the_cap_and_read_as_truncated() {
    let mut sim = Sim::new(
        stream_options(&[("baseRetryDelayMs", 10.0)]),
        |call: &Call, _| {
            if call.attempt > 0 {
                return Answer::After(every(5.0), Ok(echo_reply(call)));
            }
            let (open, close) = &call.markers()[0];
            let (loop_open, _) = &call.markers()[1];
            let mut values = vec![(
                every(1.0),
                Streamed::Value(StreamValue::Text(format!(
                    "{open}{}{close}{loop_open}",
                    echo(&call.texts[0])
                ))),
            )];
            for _ in 0..5_000 {
                values.push((
                    every(1.0),
                    Streamed::Value(StreamValue::Text("la la la ".into())),
                ));
            }
            values.push((every(1.0), Streamed::Value(StreamValue::End)));
            Answer::Stream(values)
        },
    );
    translate_all(&mut sim, &UNLIKE);
    // Cut long before its 45,000 characters: cancelled, and the call sent again.
    assert_eq!(sim.cancelled, [sim.calls[0].id]);
    assert!(sim.calls.len() >= 2);
    // The cap: 20 × (the texts' bytes + 16 per text) + 4096 bytes, at 9 bytes a ms.
    let sent: usize = UNLIKE.iter().map(|t| t.len() + 16).sum();
    let cut_by_ms = (20 * sent + 4096) as f64 / 9.0;
    let retried_at = sim.calls[1].at.as_millis();
    assert!(retried_at < cut_by_ms + 100.0, "retried at {retried_at} ms");
}

#[test]
fn previews_show_the_segment_being_written_while_everything_before_is_in_order() {
    let mut sim = Sim::new(stream_options(&[]), |call: &Call, _| {
        let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        Answer::Stream(chunked(&layout_reply(call, &echoes), 6, every(10.0)))
    });
    sim.engine.want_previews();
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(UNLIKE) {
        let shown: Vec<&str> = sim
            .previews
            .iter()
            .filter(|(_, p)| p.ticket == *t)
            .map(|(_, p)| p.text.as_str())
            .collect();
        assert!(shown.len() >= 2, "previews of {text}: {shown:?}");
        for preview in &shown {
            assert!(echo(text).starts_with(preview), "{preview:?}");
            assert!(!preview.contains('<') && *preview == preview.trim());
        }
        // At most one per value: they grow.
        assert!(shown.windows(2).all(|w| w[0].len() < w[1].len()));
    }
}

#[test]
fn no_previews_after_damage_in_the_reply() {
    let mut sim = Sim::new(stream_options(&[]), |call: &Call, _| {
        if call.attempt > 0 {
            return Answer::After(every(5.0), Ok(echo_reply(call)));
        }
        let m = call.markers();
        // The second pair comes first: nothing after it is in order.
        let reply = format!(
            "{}{}{} {}{}{}",
            m[1].0,
            echo(&call.texts[1]),
            m[1].1,
            m[0].0,
            echo(&call.texts[0]),
            m[0].1
        );
        Answer::Stream(chunked(&reply, 4, every(10.0)))
    });
    sim.engine.want_previews();
    let tickets: Vec<_> = UNLIKE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert!(sim.previews.is_empty(), "{:?}", sim.previews);
    for (t, text) in tickets.iter().zip(UNLIKE) {
        assert_eq!(sim.ok(*t), echo(text));
    }
}

// ----- damage at the last position, after a merge and renumbering -----

/// A merge of segments 1 and 2, renumbered, with the freed last id filled by `last`.
fn merged_and_filled(call: &Call, last: &str) -> Vec<String> {
    let e: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
    vec![
        e[0].clone(),
        format!("{} {}", e[1], e[2]),
        e[3].clone(),
        last.to_owned(),
    ]
}

fn no_misplaced_paragraph(
    reply: impl Fn(&Call, Vec<String>) -> Reply + 'static,
    last: &'static str,
) {
    let texts = [
        "First paragraph of medium size here.",
        "Second paragraph, also of a medium size.",
        "Third paragraph of similar length too.",
        "Fourth paragraph with the same size.",
    ];
    let mut sim = Sim::new(
        stream_options(&[("baseRetryDelayMs", 10.0)]),
        move |call, _| {
            let segments = if call.attempt == 0 && call.is_batch {
                merged_and_filled(call, last)
            } else {
                call.texts.iter().map(|t| echo(t)).collect()
            };
            Answer::After(every(5.0), Ok(reply(call, segments)))
        },
    );
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
}

#[test]
fn a_model_that_blends_the_last_two_paragraphs_into_both_segments_misplaces_nothing() {
    // As a 135M model behind llama-server answered a streamed batch: every pair in place,
    // but the last two segments each hold both paragraphs' numbers, their own included.
    let texts = [
        "The museum opened in 1874 and keeps its first guest book.",
        "Our bakery sells 2360 loaves of bread every single week.",
        "The ferry carries 6293 passengers a day to the island.",
        "The garden has 7546 roses, planted by a team of volunteers.",
    ];
    let mut sim = Sim::new(
        stream_options(&[("baseRetryDelayMs", 10.0)]),
        |call: &Call, _| {
            if call.attempt > 0 || !call.is_batch || call.texts.len() < 4 {
                return Answer::Stream(per_segment(call, 100.0));
            }
            let mut segments: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
            segments[2] =
                "«The island has 6293 visitors and a team of 7546 volunteers.»".to_owned();
            segments[3] = "«The island has 7546 roses and 6293 passengers a day.»".to_owned();
            Answer::Stream(chunked(&layout_reply(call, &segments), 7, every(10.0)))
        },
    );
    translate_all(&mut sim, &texts);
    assert!(sim.calls.len() > 1, "the blended pair was sent again");
}

#[test]
fn an_empty_last_pair_after_a_merge_misplaces_nothing() {
    no_misplaced_paragraph(|call, s| Reply::Text(layout_reply(call, &s)), "");
}

#[test]
fn a_closing_remark_in_the_last_pair_misplaces_nothing() {
    no_misplaced_paragraph(
        |call, s| Reply::Text(layout_reply(call, &s)),
        "I hope this helps!",
    );
}

#[test]
fn an_array_whose_last_element_is_a_remark_misplaces_nothing() {
    no_misplaced_paragraph(|_, s| Reply::Texts(s), "Let me know if you need more.");
}

// ----- the property -----

/// What a misbehaving model does to a batch.
#[derive(Clone, Debug)]
enum Damage {
    None,
    Swap(usize),
    MergeRenumber(usize),
    MergeRenumberFilled(usize, &'static str),
    Drop(usize),
    DropRenumber(usize),
    SplitRenumber(usize),
    Empty(usize),
    Break(usize),
    Think,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        Just(Damage::None),
        (0..6usize).prop_map(Damage::Swap),
        (0..6usize).prop_map(Damage::MergeRenumber),
        (
            0..6usize,
            prop_oneof![Just(""), Just("Hope this helps!"), Just("Done.")]
        )
            .prop_map(|(i, s)| Damage::MergeRenumberFilled(i, s)),
        (0..6usize).prop_map(Damage::Drop),
        (0..6usize).prop_map(Damage::DropRenumber),
        (0..6usize).prop_map(Damage::SplitRenumber),
        (0..6usize).prop_map(Damage::Empty),
        (0..200usize).prop_map(Damage::Break),
        Just(Damage::Think),
    ]
}

/// The first try's reply text (numbered by position, as a renumbering model does), and
/// whether the stream breaks after some characters.
fn damaged_reply(call: &Call, damage: &Damage) -> (String, Option<usize>) {
    let n = call.texts.len();
    let mut segments: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
    // The batch's tag: its first open marker without brackets and number.
    let t = call.markers()[0]
        .0
        .trim_matches(['<', '>'])
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned();
    let numbered = |segments: &[String]| -> String {
        segments
            .iter()
            .enumerate()
            .map(|(k, s)| format!("<{t}{id}>{s}</{t}{id}>\n", id = k + 1))
            .collect()
    };
    match *damage {
        Damage::None => (numbered(&segments), None),
        Damage::Swap(i) => {
            // Two segments in each other's place, each with its own markers.
            let mut order: Vec<usize> = (0..n).collect();
            order.swap(i % n, (i + 1) % n);
            let reply = order
                .iter()
                .map(|&k| {
                    let (open, close) = &call.markers()[k];
                    format!("{open}{}{close}\n", segments[k])
                })
                .collect();
            (reply, None)
        }
        Damage::MergeRenumber(i) | Damage::MergeRenumberFilled(i, _) => {
            let i = i % (n - 1);
            let merged = format!("{} {}", segments[i], segments[i + 1]);
            segments[i] = merged;
            segments.remove(i + 1);
            if let Damage::MergeRenumberFilled(_, fill) = damage {
                segments.push((*fill).to_owned());
            }
            (numbered(&segments), None)
        }
        Damage::Drop(i) => {
            let i = i % n;
            let mut reply = String::new();
            for (k, s) in segments.iter().enumerate().filter(|(k, _)| *k != i) {
                let (open, close) = &call.markers()[k];
                reply.push_str(&format!("{open}{s}{close}\n"));
            }
            (reply, None)
        }
        Damage::DropRenumber(i) => {
            segments.remove(i % n);
            (numbered(&segments), None)
        }
        Damage::SplitRenumber(i) => {
            let i = i % n;
            segments.insert(i + 1, "part".into());
            (numbered(&segments), None)
        }
        Damage::Empty(i) => {
            segments[i % n] = String::new();
            (numbered(&segments), None)
        }
        Damage::Break(at) => (numbered(&segments), Some(at)),
        Damage::Think => (
            format!(
                "<think>{}</think>{}",
                numbered(&segments[1..]),
                numbered(&segments)
            ),
            None,
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Whatever the model does to a streamed batch, cut into whatever pieces, every item
    /// ends with its own translation, and nothing resolved early is wrong.
    #[test]
    fn streamed_damage_never_misplaces_a_paragraph(
        damage in damage(),
        lengths in proptest::collection::vec(1usize..60, 2..7),
        piece in 1usize..40,
    ) {
        let texts: Vec<String> = lengths
            .iter()
            .enumerate()
            .map(|(i, len)| format!("p{i} {}", "w".repeat(*len)))
            .collect();
        let n = texts.len() as f64;
        let mut sim = Sim::new(
            marker_options(&[("maxItemsPerBatch", n), ("baseRetryDelayMs", 10.0)]),
            move |call: &Call, _| {
                if call.attempt > 0 || !call.is_batch {
                    return Answer::After(every(3.0), Ok(echo_reply(call)));
                }
                let (reply, break_at) = damaged_reply(call, &damage);
                let mut values = chunked(&reply, piece, every(7.0));
                if let Some(at) = break_at {
                    let keep = (at / piece).min(values.len() - 1);
                    values.truncate(keep);
                    values.push((every(1.0), Streamed::Fail(Failure::error(None, None, "reset"))));
                }
                Answer::Stream(values)
            },
        );
        let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
        sim.drive();
        sim.assert_settled_once(&tickets);
        for (t, text) in tickets.iter().zip(&texts) {
            prop_assert_eq!(sim.ok(*t), echo(text));
        }
    }
}

/// The time from its call's start to the first item's resolution, for a batch of `texts`
/// streamed four characters every 20 ms, after `warm_up` such batches of other texts.
fn first_item_after(warm_up: usize, texts: &[&str]) -> f64 {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let reply = layout_reply(
            call,
            &call.texts.iter().map(|t| echo(t)).collect::<Vec<_>>(),
        );
        Answer::Stream(chunked(&reply, 4, every(20.0)))
    });
    for round in 0..warm_up {
        for text in texts {
            sim.translate(&item(&format!("{round}: {text}")));
        }
        sim.drive();
    }
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let start = sim.calls.last().unwrap().at;
    sim.settled_at[&tickets[0]].as_millis() - start.as_millis()
}

#[test]
fn a_first_segment_that_keeps_its_words_resolves_at_its_close() {
    // Three long paragraphs whose translations keep every word: the first closed segment
    // holds all of its paragraph's words and none of the second's own, so no drop, merge
    // or split can have put it there, cold or warm (a ratio learned from earlier replies
    // adds nothing here).
    let long = "A long first paragraph that goes on and on, with many words in it, far more than the next one has, and then some more words to make it long.";
    let texts = [
        long,
        "A second paragraph just as long as the first one, with many words in it, and more of them, and then some more words to make it as long.",
        "A third paragraph that is as long as the first one, with many words in it, and more words, and then some more words.",
        "The fourth and last one.",
    ];
    let cold = first_item_after(0, &texts);
    let warm = first_item_after(3, &texts);
    let first_closes = (long.len() as f64 / 4.0) * 20.0;
    assert!(warm <= cold, "warm {warm} ms, cold {cold} ms");
    assert!(
        cold <= first_closes + 200.0,
        "cold {cold} ms, the first closes at about {first_closes} ms"
    );
}

#[test]
fn the_snapshot_keeps_a_providers_length_ratios() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let reply = layout_reply(
            call,
            &call.texts.iter().map(|t| echo(t)).collect::<Vec<_>>(),
        );
        Answer::Stream(chunked(&reply, 4, every(20.0)))
    });
    for text in UNLIKE {
        sim.translate(&item(text));
    }
    sim.drive();
    let snapshot = sim.engine.snapshot(0.0);
    let ratios = &snapshot.providers[0].length_ratios;
    assert_eq!(ratios.len(), 1);
    assert_eq!(
        (
            ratios[0].source_lang.as_str(),
            ratios[0].target_lang.as_str()
        ),
        ("en", "de")
    );
    assert!(
        ratios[0].ratio > 1.0 && ratios[0].ratio < 1.2,
        "{}",
        ratios[0].ratio
    );
}
