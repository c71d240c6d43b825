//! Segment identity (the markers layout): proven segments resolve at once, missing ones
//! go out again as a smaller batch, and no item ever receives another item's text.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Layout, Reply};
use proptest::prelude::*;
use sim::*;

const FOUR: [&str; 4] = ["alpha one", "beta two", "gamma three", "delta four"];

fn marked(call: &Call, segments: &[(usize, String)]) -> String {
    let mut reply = String::new();
    for (id, text) in segments {
        let (open, close) = &call.markers()[*id];
        reply.push_str(&format!("{open}{text}{close}\n"));
    }
    reply
}

fn echoes(call: &Call) -> Vec<(usize, String)> {
    call.texts.iter().map(|t| echo(t)).enumerate().collect()
}

#[test]
fn a_batch_carries_ids_markers_and_instructions() {
    let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = calls.clone();
    let mut sim = Sim::new(marker_options(&[]), move |call: &Call, _| {
        seen.borrow_mut().push((
            call.ids.clone(),
            call.layout.clone(),
            call.text.clone(),
            call.instructions.clone(),
        ));
        Answer::After(Duration::from_millis(5.0), Ok(echo_reply(call)))
    });
    let texts = ["plain", "has <s1> inside", "x"];
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let calls = calls.borrow();
    let (ids, layout, text, instructions) = &calls[0];
    assert_eq!(ids[..], ["1", "2", "3"]);
    let Layout::Markers(pairs) = layout else {
        panic!("a batch in the markers layout: {layout:?}");
    };
    // A text holds `<s1>`: the batch takes another tag.
    // Marker numbers are labels in no counting order (markers::number).
    assert_eq!(pairs[0], ("<t21>".to_owned(), "</t21>".to_owned()));
    assert_eq!(
        text,
        "<t21>plain</t21>\n<t58>has <s1> inside</t58>\n<t95>x</t95>"
    );
    assert!(instructions.contains("<t21>") && instructions.contains("3 segments"));
}

#[test]
fn a_single_item_is_sent_as_it_is() {
    let mut sim = Sim::new(marker_options(&[]), echo_provider(5.0));
    let t = sim.translate(&item("alone"));
    sim.drive();
    assert_eq!(sim.ok(t), echo("alone"));
    assert!(!sim.calls[0].is_batch);
}

#[test]
fn proven_segments_resolve_at_once_and_the_missing_ones_go_out_as_a_smaller_batch() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let mut segments = echoes(call);
        if call.attempt == 0 {
            // The second segment is dropped: it and its neighbours are missing.
            segments.remove(1);
        }
        Answer::After(
            Duration::from_millis(10.0),
            Ok(Reply::Text(marked(call, &segments))),
        )
    });
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(FOUR) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(sim.calls[1].texts, ["alpha one", "beta two", "gamma three"]);
    assert_eq!(sim.calls[1].attempt, 1);
    let stats = sim.engine.stats();
    assert_eq!((stats.count_mismatches, stats.retries), (1, 1));
}

#[test]
fn a_reply_that_proves_nothing_is_a_count_mismatch_then_items_go_one_by_one() {
    let mut sim = Sim::new(
        marker_options(&[("maxBatchRetries", 1.0)]),
        |call: &Call, _| {
            let reply = if call.is_batch {
                Reply::Text("I cannot do that.".into())
            } else {
                echo_reply(call)
            };
            Answer::After(Duration::from_millis(10.0), Ok(reply))
        },
    );
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(FOUR) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let stats = sim.engine.stats();
    assert_eq!((stats.count_mismatches, stats.fallbacks), (2, 1));
    assert_eq!(sim.calls.len(), 2 + 4);
}

#[test]
fn without_fallback_missing_items_reject_count_mismatch() {
    let mut sim = Sim::new(
        marker_options(&[("maxBatchRetries", 0.0)]),
        |call: &Call, _| {
            let mut segments = echoes(call);
            segments.remove(2);
            Answer::After(
                Duration::from_millis(10.0),
                Ok(Reply::Text(marked(call, &segments))),
            )
        },
    );
    sim.engine
        .set_options(
            ms(0.0),
            &[(
                "fallbackToIndividual",
                batch_pacer::OptionValue::Bool(false),
            )],
        )
        .unwrap();
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    // The third pair is missing, and the ones beside it too.
    assert_eq!(sim.ok(tickets[0]), echo(FOUR[0]));
    for t in &tickets[1..] {
        assert_eq!(sim.code(*t), ErrorCode::CountMismatch);
    }
}

#[test]
fn object_replies_keyed_by_id_and_wrapped_arrays_resolve() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let pairs = call
            .ids
            .iter()
            .zip(&call.texts)
            .rev()
            .map(|(id, t)| (id.clone(), echo(t)))
            .collect();
        Answer::After(Duration::from_millis(1.0), Ok(Reply::Keyed(pairs)))
    });
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(FOUR) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(sim.calls.len(), 1);
}

#[test]
fn a_fenced_json_answer_with_its_own_markers_in_the_values_resolves_clean() {
    // The model's text as it came: a JSON object in a fence, each value still wrapped in
    // its segment's markers, one with an escaped quote.
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let mut json = String::from("```json\n{");
        for (i, (id, text)) in call.ids.iter().zip(&call.texts).enumerate() {
            let (open, close) = &call.markers()[i];
            let comma = if i == 0 { "" } else { ", " };
            json.push_str(&format!(
                "{comma}\"{id}\": \"{open}{} \\\"ok\\\"{close}\"",
                echo(text)
            ));
        }
        json.push_str("}\n```");
        Answer::After(Duration::from_millis(1.0), Ok(Reply::Text(json)))
    });
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(FOUR) {
        assert_eq!(sim.ok(*t), format!("{} \"ok\"", echo(text)));
    }
    assert_eq!(sim.calls.len(), 1);
}

#[test]
fn array_values_lose_only_the_markers_of_their_own_position() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        // On the first try the first two values carry each other's pairs.
        let texts = (0..call.texts.len())
            .map(|i| match (call.attempt, i) {
                (0, 0) => 1,
                (0, 1) => 0,
                _ => i,
            })
            .map(|j| {
                let (open, close) = &call.markers()[j];
                format!("{open}{}{close}", echo(&call.texts[j]))
            })
            .collect();
        Answer::After(Duration::from_millis(1.0), Ok(Reply::Texts(texts)))
    });
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    // No item ever takes the other's translation; after the retry each has its own.
    for (t, text) in tickets.iter().zip(FOUR) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert!(sim.calls.len() > 1, "the crossed values were not accepted");
}

#[test]
fn an_array_of_the_wrong_length_is_a_count_mismatch_for_the_whole_batch() {
    let mut sim = Sim::new(marker_options(&[]), |call: &Call, _| {
        let mut texts: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        if call.attempt == 0 {
            texts.pop();
        }
        Answer::After(Duration::from_millis(1.0), Ok(Reply::Texts(texts)))
    });
    let tickets: Vec<_> = FOUR.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(FOUR) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(
        sim.calls[1].texts.len(),
        4,
        "nothing proven by a short array"
    );
}

/// What a misbehaving model does to a batch on its first try.
#[derive(Clone, Debug)]
enum Damage {
    Swap(usize),
    MergeRenumber(usize),
    Drop(usize),
    Duplicate(usize),
    OtherSource(usize),
    Empty(usize),
    SplitRenumber(usize),
    Preamble,
}

fn damaged(call: &Call, damage: &Damage) -> String {
    let n = call.texts.len();
    let mut segments: Vec<(usize, String)> = echoes(call);
    match *damage {
        Damage::Swap(i) => segments.swap(i % n, (i + 1) % n),
        Damage::MergeRenumber(i) if i + 1 < n => {
            let merged = format!("{} {}", segments[i].1, segments[i + 1].1);
            segments[i].1 = merged;
            segments.remove(i + 1);
            for (k, s) in segments.iter_mut().enumerate() {
                s.0 = k;
            }
        }
        Damage::Drop(i) => {
            segments.remove(i % n);
        }
        Damage::Duplicate(i) => {
            let copy = segments[i % n].clone();
            segments.insert(i % n, copy);
        }
        Damage::OtherSource(i) => segments[i % n].1 = call.texts[(i + 1) % n].clone(),
        Damage::Empty(i) => segments[i % n].1 = String::new(),
        Damage::SplitRenumber(i) => {
            // One segment in two, the rest numbered anew: the last id is unknown.
            let i = i % n;
            segments.insert(i + 1, (i + 1, "part".into()));
            let mut reply = String::new();
            for (k, (_, text)) in segments.iter().enumerate() {
                reply.push_str(&format!("<s{id}>{text}</s{id}>\n", id = k + 1));
            }
            return reply;
        }
        Damage::MergeRenumber(_) => {}
        Damage::Preamble => {
            return format!(
                "Sure! Here you go:\n```\n{}```\nHope it helps.",
                marked(call, &segments)
            );
        }
    }
    marked(call, &segments)
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0..6usize).prop_map(Damage::Swap),
        (0..6usize).prop_map(Damage::MergeRenumber),
        (0..6usize).prop_map(Damage::Drop),
        (0..6usize).prop_map(Damage::Duplicate),
        (0..6usize).prop_map(Damage::OtherSource),
        (0..6usize).prop_map(Damage::Empty),
        (0..6usize).prop_map(Damage::SplitRenumber),
        Just(Damage::Preamble),
    ]
}

proptest! {
    /// Whatever the model does on its first try, every item ends with its own
    /// translation: a damaged reply costs calls, never a wrong paragraph.
    #[test]
    fn no_item_ever_receives_another_items_text(
        damage in damage(),
        lengths in proptest::collection::vec(1usize..40, 2..6),
    ) {
        let texts: Vec<String> = lengths
            .iter()
            .enumerate()
            .map(|(i, len)| format!("p{i} {}", "w".repeat(*len)))
            .collect();
        let n = texts.len() as f64;
        let mut sim = Sim::new(marker_options(&[("maxItemsPerBatch", n)]), move |call: &Call, _| {
            let reply = if call.attempt == 0 && call.is_batch {
                damaged(call, &damage)
            } else {
                layout_reply(call, &call.texts.iter().map(|t| echo(t)).collect::<Vec<_>>())
            };
            Answer::After(Duration::from_millis(3.0), Ok(Reply::Text(reply)))
        });
        let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
        sim.drive();
        sim.assert_settled_once(&tickets);
        for (t, text) in tickets.iter().zip(&texts) {
            prop_assert_eq!(sim.ok(*t), echo(text));
        }
    }
}

#[test]
fn text_spans_cut_each_text_out_of_the_call_text_in_utf16_units() {
    for format in ["markers", "separator"] {
        let options = batch_pacer::Options::default()
            .patched(&[
                (
                    "segmentFormat",
                    batch_pacer::OptionValue::Text(format.into()),
                ),
                ("batchDelayMs", batch_pacer::OptionValue::Number(100.0)),
            ])
            .unwrap();
        let mut engine: batch_pacer::Engine<String> =
            batch_pacer::Engine::new(options, batch_pacer::Instant::ZERO, 1);
        let texts = ["emoji 😀 here", "日本語", "<s1> tag", "plain", "a\r\nb"];
        for t in &texts[..4] {
            engine.handle_translate(ms(0.0), &item(t)).unwrap();
        }
        engine.handle_timeout(ms(1.0));
        let call = std::iter::from_fn(|| engine.poll_output())
            .find_map(|output| match output {
                batch_pacer::Output::Call(call) => Some(call),
                _ => None,
            })
            .expect("a batch");
        assert!(call.is_batch, "{format}");
        let units: Vec<u16> = call.text.encode_utf16().collect();
        let spans = call.text_spans();
        assert_eq!(spans.len(), 2 * call.texts.len());
        for (i, text) in call.texts.iter().enumerate() {
            let (start, end) = (spans[2 * i] as usize, spans[2 * i + 1] as usize);
            let cut = String::from_utf16(&units[start..end]).unwrap();
            assert_eq!(&cut, text, "{format}: text {i}");
        }
    }
}
