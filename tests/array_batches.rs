//! Array batches (`providers: { id: { batch: "array" } }`), on virtual time: a provider's
//! `llm: false` items share calls as arrays under its batch limits, the reply is read by
//! position, and what it does not give goes out again as a count mismatch.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use batch_pacer::{Call, Event, Instant, Item, Layout, OptionValue, Options, Reply};
use sim::*;

/// Options whose provider "api" batches arrays, with `fields` beside `batch: "array"`.
fn array_options(base: Options, fields: &[(&str, f64)]) -> Options {
    let mut settings: Vec<(String, OptionValue)> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), OptionValue::Number(*v)))
        .collect();
    settings.push(("batch".into(), OptionValue::Text("array".into())));
    let providers = OptionValue::Map(vec![("api".into(), OptionValue::Map(settings))]);
    base.patched(&[("providers", providers)]).expect("valid")
}

fn plain<'a>(provider: &'a str, text: &'a str) -> Item<'a> {
    let mut it = item_for(provider, text);
    it.compat.llm = false;
    it
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("paragraph {i}")).collect()
}

fn echoes(call: &Call) -> Vec<String> {
    call.texts.iter().map(|t| echo(t)).collect()
}

/// A provider that answers a batch's first try with `first(call)` and every other call
/// correctly.
fn first_try(first: impl Fn(&Call) -> Reply + 'static) -> impl FnMut(&Call, Instant) -> Answer {
    move |call: &Call, _| {
        let reply = if call.is_batch && call.attempt == 0 {
            first(call)
        } else {
            Reply::Texts(echoes(call))
        };
        Answer::After(Duration::from_millis(10.0), Ok(reply))
    }
}

#[test]
fn llm_false_items_share_array_batches_under_the_providers_limits() {
    let options = array_options(options(&[]), &[("maxItemsPerBatch", 50.0)]);
    let mut sim = Sim::new(options, echo_provider(10.0));
    let texts = texts(200);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(sim.calls.len(), 4, "200 paragraphs in calls of 50");
    for call in &sim.calls {
        assert!(call.is_batch && call.texts.len() == 50 && call.separator.is_empty());
    }
    assert_eq!(sim.engine.stats().batch_calls, 4);
}

#[test]
fn the_array_calls_layout_is_the_texts_alone() {
    let options = array_options(options(&[]), &[]);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let record = seen.clone();
    let mut sim = Sim::new(options, move |call: &Call, _: Instant| {
        record.borrow_mut().push((
            call.layout.clone(),
            call.text.clone(),
            call.instructions.to_string(),
            call.ids.to_vec(),
        ));
        Answer::After(Duration::from_millis(1.0), Ok(Reply::Texts(echoes(call))))
    });
    for t in ["one", "two", "three"] {
        sim.translate(&plain("api", t));
    }
    sim.drive();
    let seen = seen.borrow();
    let (layout, text, instructions, ids) = &seen[0];
    assert_eq!(*layout, Layout::Array);
    assert_eq!(text, "one\ntwo\nthree");
    assert_eq!(instructions, "");
    assert_eq!(ids, &["1", "2", "3"]);
}

#[test]
fn without_batch_array_llm_false_items_go_one_to_a_call() {
    let mut sim = Sim::new(options(&[]), echo_provider(10.0));
    for t in &texts(5) {
        sim.translate(&plain("api", t));
    }
    sim.drive();
    assert_eq!(sim.calls.len(), 5);
    assert!(sim.calls.iter().all(|c| !c.is_batch));
}

#[test]
fn array_batches_keep_the_character_limit_and_llm_items_apart() {
    // "paragraph n" is 11 characters: two fit in 25.
    let options = array_options(options(&[]), &[("maxCharactersPerBatch", 25.0)]);
    let mut sim = Sim::new(options, echo_provider(10.0));
    let texts = texts(6);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    let llm: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&item_for("api", t)))
        .collect();
    sim.drive();
    for (t, text) in tickets.iter().chain(&llm).zip(texts.iter().chain(&texts)) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert!(
        sim.calls.iter().all(|c| c.texts.len() == 2),
        "{:?}",
        sim.calls
    );
    assert_eq!(sim.calls.len(), 6, "arrays and LLM batches never mix");
}

#[test]
fn an_array_of_another_length_is_a_count_mismatch_for_the_whole_batch() {
    let options = array_options(options(&[]), &[]);
    let mut sim = Sim::new(
        options,
        first_try(|call| {
            // The first n - 1 translations: right ones, but no position can be trusted.
            let mut short = echoes(call);
            short.pop();
            Reply::Texts(short)
        }),
    );
    let texts = texts(4);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(sim.engine.stats().count_mismatches, 1);
    assert!(sim.events.iter().any(|(_, e)| matches!(
        e,
        Event::CountMismatch {
            expected: 4,
            got: 3,
            ..
        }
    )));
    // Nothing was resolved from the short reply: the retry carries all four.
    assert_eq!(sim.calls[1].texts.len(), 4);
    assert_eq!(sim.calls[1].attempt, 1);
}

#[test]
fn an_array_holding_a_non_string_is_a_count_mismatch_not_a_failed_call() {
    let options = array_options(options(&[]), &[]);
    let mut sim = Sim::new(options, first_try(|call| Reply::Mixed(call.texts.len())));
    let texts = texts(3);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    assert_eq!(sim.engine.stats().count_mismatches, 1);
    assert_eq!(sim.calls[1].texts.len(), 3);
}

#[test]
fn an_llm_batch_answered_with_a_non_string_element_is_still_a_failed_call() {
    let mut sim = Sim::new(
        options(&[("maxRetries", 1.0)]),
        |call: &Call, _: Instant| {
            let reply = Reply::Mixed(call.texts.len());
            Answer::After(Duration::from_millis(10.0), Ok(reply))
        },
    );
    let tickets: Vec<_> = texts(2).iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for t in &tickets {
        assert_eq!(sim.code(*t), ErrorCode::ProviderError);
        let message = &sim.result(*t).as_ref().unwrap_err().message;
        assert!(
            message.contains("an array holding a non-string"),
            "{message}"
        );
    }
    assert_eq!(sim.engine.stats().count_mismatches, 0);
}

#[test]
fn an_empty_string_for_a_text_leaves_that_item_alone_missing() {
    let options = array_options(options(&[]), &[]);
    let mut sim = Sim::new(
        options,
        first_try(|call| {
            let mut reply = echoes(call);
            reply[1] = String::new();
            Reply::Texts(reply)
        }),
    );
    let texts = texts(3);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    // The others resolved from the first reply; only the missing one went out again.
    assert_eq!(sim.calls.len(), 2);
    assert_eq!(sim.calls[1].texts, vec![texts[1].clone()]);
    assert!(sim.settled_at[&tickets[0]] < sim.settled_at[&tickets[1]]);
    assert!(sim.events.iter().any(|(_, e)| matches!(
        e,
        Event::CountMismatch {
            expected: 3,
            got: 2,
            ..
        }
    )));
}

#[test]
fn wrong_arrays_are_retried_then_sent_one_by_one_or_rejected() {
    let always_short = |call: &Call, _: Instant| {
        let mut reply = echoes(call);
        if call.is_batch {
            reply.pop();
        }
        Answer::After(Duration::from_millis(10.0), Ok(Reply::Texts(reply)))
    };
    let base = options(&[("maxBatchRetries", 2.0), ("baseRetryDelayMs", 10.0)]);
    let mut sim = Sim::new(array_options(base.clone(), &[]), always_short);
    let texts = texts(3);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    // The same short array twice: a repeated reply ends the retries (as for any batch).
    let batches = sim.calls.iter().filter(|c| c.is_batch).count();
    assert_eq!(batches, 2, "the first try and one retry");
    assert_eq!(
        sim.calls.iter().filter(|c| !c.is_batch).count(),
        3,
        "one by one"
    );

    let no_fallback = Options {
        fallback_to_individual: false,
        ..base
    };
    let mut sim = Sim::new(array_options(no_fallback, &[]), always_short);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("api", t)))
        .collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    for t in &tickets {
        assert_eq!(sim.code(*t), ErrorCode::CountMismatch);
    }
}
