//! Each provider its own limits (`providers`), on virtual time: a provider's own bucket,
//! cap and budgets hold in addition to the pacer's, its batch limits and timeouts replace
//! the pacer's, `setOptions` keeps its tokens and `snapshot()` keeps its bucket.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::rc::Rc;

use batch_pacer::{Call, ErrorCode, Instant, OptionValue, Options};
use sim::*;

/// `base` with `providers` set to these settings (numbers, and `batch` as text).
fn with_providers(base: Options, providers: &[(&str, &[(&str, f64)])]) -> Options {
    base.patched(&[("providers", providers_value(providers))])
        .expect("valid providers")
}

fn providers_value(providers: &[(&str, &[(&str, f64)])]) -> OptionValue {
    let entry = |fields: &[(&str, f64)]| {
        let fields = fields.iter();
        OptionValue::Map(
            fields
                .map(|(k, v)| (k.to_string(), OptionValue::Number(*v)))
                .collect(),
        )
    };
    let map = providers
        .iter()
        .map(|(id, fields)| (id.to_string(), entry(fields)));
    OptionValue::Map(map.collect())
}

/// An `llm: false` item (one per call) for `provider`.
fn plain<'a>(provider: &'a str, text: &'a str) -> batch_pacer::Item<'a> {
    let mut it = item_for(provider, text);
    it.compat.llm = false;
    it
}

/// Rule 1 over the starts `at` (ms): for every window of length `w`, at most
/// `capacity + rate·w` of them.
fn assert_bucket_bound(starts: &[f64], rate: f64, capacity: f64, what: &str) {
    for i in 0..starts.len() {
        for j in i..starts.len() {
            let window = (starts[j] - starts[i]) / 1000.0;
            let count = (j - i + 1) as f64;
            assert!(
                count <= capacity + rate * window + 1e-6,
                "{what}: {count} calls in {window} s, more than {capacity} + {rate}·w"
            );
        }
    }
}

fn starts_of(sim: &Sim, provider: &str) -> Vec<f64> {
    let calls = sim.calls.iter().filter(|c| c.provider_id == provider);
    calls.map(|c| c.at.as_millis()).collect()
}

fn texts(n: usize, prefix: &str) -> Vec<String> {
    (0..n).map(|i| format!("{prefix} paragraph {i}")).collect()
}

#[test]
fn a_providers_own_bucket_bounds_its_calls_and_the_pacers_still_bounds_the_flow() {
    let options = with_providers(
        options(&[("rate", 10.0), ("capacity", 10.0)]),
        &[("slow", &[("rate", 1.0), ("capacity", 2.0)])],
    );
    let mut sim = Sim::new(options, echo_provider(10.0));
    let (slow, fast) = (texts(20, "slow"), texts(40, "fast"));
    let mut tickets = Vec::new();
    for t in &slow {
        tickets.push(sim.translate(&plain("slow", t)));
    }
    for t in &fast {
        tickets.push(sim.translate(&plain("fast", t)));
    }
    sim.drive();
    sim.assert_settled_once(&tickets);
    for (ticket, text) in tickets.iter().zip(slow.iter().chain(&fast)) {
        assert_eq!(sim.ok(*ticket), echo(text));
    }
    let slow_starts = starts_of(&sim, "slow");
    assert_eq!(slow_starts.len(), 20);
    assert_bucket_bound(&slow_starts, 1.0, 2.0, "the provider's own bucket");
    assert_bucket_bound(
        &sim.starts_ms(),
        10.0,
        10.0,
        "the pacer's bucket over the flow",
    );
    // Its backlog drains at its own rate, not slower: 18 calls after the burst of 2.
    let last = slow_starts[19];
    assert!(
        (17_000.0..=18_100.0).contains(&last),
        "last slow call at {last} ms"
    );
    // The other provider is held only by the pacer's bucket, never by the slow one's.
    let fast_last = *starts_of(&sim, "fast").last().unwrap();
    assert!(fast_last <= 5_000.0, "fast calls end at {fast_last} ms");
}

#[test]
fn a_providers_own_cap_limits_its_calls_at_once() {
    let options = with_providers(options(&[]), &[("ollama", &[("maxInFlight", 1.0)])]);
    let mut sim = Sim::new(options, echo_provider(500.0));
    let local = texts(4, "local");
    let hosted = texts(4, "hosted");
    for t in &local {
        sim.translate(&plain("ollama", t));
    }
    for t in &hosted {
        sim.translate(&plain("hosted", t));
    }
    sim.drive();
    let starts = starts_of(&sim, "ollama");
    assert_eq!(
        starts,
        vec![0.0, 500.0, 1000.0, 1500.0],
        "one call at a time"
    );
    assert_eq!(starts_of(&sim, "hosted"), vec![0.0; 4], "no cap of its own");
}

#[test]
fn a_providers_own_token_budget_paces_its_calls() {
    let options = with_providers(options(&[]), &[("p", &[("tokensPerMinute", 1200.0)])]);
    let mut sim = Sim::new(options, echo_provider(10.0));
    let texts = texts(8, "budget");
    for t in &texts {
        let mut it = plain("p", t);
        it.tokens = Some(100.0);
        sim.translate(&it);
        let mut other = plain("q", t);
        other.tokens = Some(100.0);
        sim.translate(&other);
    }
    sim.drive();
    let starts = starts_of(&sim, "p");
    assert_eq!(starts.len(), 8);
    // A call costs its input and as much again for the output (200 tokens or more): the
    // full budget holds at most 6 at once, and 20 tokens a second bring the rest.
    let at_once = starts.iter().filter(|t| **t == 0.0).count();
    assert!((1..=6).contains(&at_once), "{at_once} calls at once");
    assert!(
        starts[7] >= 10_000.0,
        "the last call waits for its budget: {starts:?}"
    );
    assert_eq!(starts_of(&sim, "q"), vec![0.0; 8], "no budget of its own");
}

#[test]
fn a_character_budget_counts_the_texts_string_length() {
    let options = with_providers(options(&[]), &[("ms", &[("charactersPerMinute", 600.0)])]);
    let mut sim = Sim::new(options, echo_provider(10.0));
    // 100 characters each (UTF-16 code units: "é" is one, "😀" two).
    let text = |i: usize| format!("{i:02}{}😀{}", "é".repeat(48), "x".repeat(48));
    let texts: Vec<String> = (0..12).map(text).collect();
    assert!(texts.iter().all(|t| t.encode_utf16().count() == 100));
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&plain("ms", t)))
        .collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    let starts = starts_of(&sim, "ms");
    // Full at the start (600 characters: 6 calls), then 10 characters a second.
    let chars: Vec<f64> = starts.iter().map(|_| 100.0).collect();
    for i in 0..starts.len() {
        for j in i..starts.len() {
            let window = (starts[j] - starts[i]) / 1000.0;
            let sent: f64 = chars[i..=j].iter().sum();
            assert!(
                sent <= 600.0 + 10.0 * window + 1e-6,
                "{sent} characters in {window} s"
            );
        }
    }
    assert_eq!(starts.iter().filter(|t| **t == 0.0).count(), 6);
    assert!((60_000.0..=60_100.0).contains(&starts[11]), "{starts:?}");
}

#[test]
fn batch_limits_and_delay_replace_the_pacers_for_that_provider() {
    let options = with_providers(
        options(&[("maxItemsPerBatch", 4.0), ("batchDelayMs", 100.0)]),
        &[
            ("big", &[("maxItemsPerBatch", 10.0), ("batchDelayMs", 5.0)]),
            ("narrow", &[("maxCharactersPerBatch", 40.0)]),
        ],
    );
    let mut sim = Sim::new(options, echo_provider(10.0));
    let texts = texts(10, "batch");
    for provider in ["big", "p", "narrow"] {
        for t in &texts {
            sim.translate(&item_for(provider, t));
        }
    }
    sim.drive();
    let sizes = |provider: &str| -> Vec<usize> {
        let calls = sim.calls.iter().filter(|c| c.provider_id == provider);
        calls.map(|c| c.texts.len()).collect()
    };
    assert_eq!(sizes("big"), vec![10], "its own maxItemsPerBatch");
    assert_eq!(sizes("p"), vec![4, 4, 2], "the pacer's");
    // "batch paragraph n" is 17 characters: two fit in 40.
    assert_eq!(sizes("narrow"), vec![2; 5], "its own maxCharactersPerBatch");
    let first = |provider: &str| {
        sim.calls
            .iter()
            .find(|c| c.provider_id == provider)
            .unwrap()
            .at
    };
    assert_eq!(first("big"), ms(0.0), "full at once");
    let mut sim = Sim::new(
        with_providers(sim::options(&[]), &[("quick", &[("batchDelayMs", 5.0)])]),
        echo_provider(10.0),
    );
    sim.translate(&item_for("quick", "one"));
    sim.translate(&item_for("p", "one"));
    sim.drive();
    let at = |provider: &str| {
        sim.calls
            .iter()
            .find(|c| c.provider_id == provider)
            .unwrap()
            .at
    };
    assert_eq!(
        (at("quick"), at("p")),
        (ms(5.0), ms(100.0)),
        "its own batchDelayMs"
    );
}

#[test]
fn a_learned_batch_size_stays_within_the_providers_own_limit() {
    let options = with_providers(
        marker_options(&[]),
        &[("small", &[("maxItemsPerBatch", 2.0)])],
    );
    let mut sim = Sim::new(options, echo_provider(10.0));
    let texts = texts(30, "learn");
    for t in &texts {
        sim.translate(&item_for("small", t));
    }
    sim.drive();
    assert!(sim.calls.iter().all(|c| c.texts.len() <= 2));
    assert_eq!(sim.calls.len(), 15);
}

#[test]
fn a_providers_own_timeouts_replace_the_pacers() {
    let options = with_providers(
        options(&[("timeoutMs", 1000.0), ("timeoutPerCharacterMs", 10.0)]),
        &[(
            "local",
            &[("timeoutMs", 120_000.0), ("timeoutPerCharacterMs", 0.0)],
        )],
    );
    type Seen = Vec<(String, Option<f64>)>;
    let seen: Rc<RefCell<Seen>> = Rc::default();
    let record = seen.clone();
    let mut sim = Sim::new(options, move |call: &Call, _: Instant| {
        let timeout = call.timeout.map(|t| t.as_millis());
        record
            .borrow_mut()
            .push((call.compat.provider_id.clone(), timeout));
        Answer::After(Duration::from_millis(10.0), Ok(echo_reply(call)))
    });
    let text = "x".repeat(100);
    sim.translate(&plain("local", &text));
    sim.translate(&plain("p", &text));
    sim.drive();
    let seen = seen.borrow();
    assert!(
        seen.contains(&("local".into(), Some(120_000.0))),
        "{seen:?}"
    );
    assert!(seen.contains(&("p".into(), Some(2_000.0))), "{seen:?}");
}

#[test]
fn set_options_replaces_the_map_and_an_existing_bucket_keeps_its_tokens() {
    let slow = with_providers(
        options(&[]),
        &[("slow", &[("rate", 0.1), ("capacity", 2.0)])],
    );
    let mut sim = Sim::new(slow, echo_provider(10.0));
    sim.translate(&plain("slow", "a"));
    sim.translate(&plain("slow", "b"));
    sim.drive();
    assert_eq!(starts_of(&sim, "slow"), vec![0.0, 0.0]);
    // A larger capacity does not refill the bucket: the next call waits for a token.
    let larger = providers_value(&[("slow", &[("rate", 0.1), ("capacity", 10.0)])]);
    let now = sim.now;
    sim.engine
        .set_options(now, &[("providers", larger)])
        .unwrap();
    sim.translate(&plain("slow", "c"));
    sim.drive();
    let starts = starts_of(&sim, "slow");
    assert!(starts[2] >= 10_000.0 - 20.0, "{starts:?}");
    // An invalid map changes nothing, and names the path.
    let bad = providers_value(&[("slow", &[("rate", 0.0)])]);
    let error = sim
        .engine
        .set_options(sim.now, &[("providers", bad)])
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidOptions);
    assert_eq!(error.option.as_deref(), Some("providers.slow.rate"));
    assert_eq!(
        sim.engine
            .options()
            .provider_settings("slow")
            .unwrap()
            .capacity,
        Some(10.0)
    );
    // The map replaced by an empty one: the provider has no bucket of its own any more.
    let now = sim.now;
    let empty = OptionValue::Map(Vec::new());
    sim.engine
        .set_options(now, &[("providers", empty)])
        .unwrap();
    let before = sim.calls.len();
    for t in ["d", "e", "f", "g"] {
        sim.translate(&plain("slow", t));
    }
    sim.drive();
    let after: Vec<f64> = sim.calls[before..]
        .iter()
        .map(|c| c.at.as_millis())
        .collect();
    assert!(after.iter().all(|t| *t == now.as_millis()), "{after:?}");
}

#[test]
fn a_snapshot_keeps_each_providers_own_bucket() {
    let opts = with_providers(
        options(&[]),
        &[("slow", &[("rate", 0.1), ("capacity", 3.0)])],
    );
    let mut sim = Sim::new(opts.clone(), echo_provider(10.0));
    for t in ["a", "b", "c"] {
        sim.translate(&plain("slow", t));
    }
    sim.drive();
    let snapshot = sim.engine.snapshot(0.0);
    let saved = snapshot
        .providers
        .iter()
        .find(|p| p.provider_id == "slow")
        .unwrap();
    let tokens = saved.tokens.expect("its own bucket is kept");
    assert!(tokens < 0.01, "{tokens} tokens left");
    // A restarted pacer resumes from it: no new burst of 3.
    let mut restarted = Sim::new(opts.clone(), echo_provider(10.0));
    restarted
        .engine
        .restore(&snapshot, Duration::from_millis(0.0));
    for t in ["d", "e"] {
        restarted.translate(&plain("slow", t));
    }
    restarted.drive();
    let starts = starts_of(&restarted, "slow");
    assert!(starts[0] >= 9_900.0 && starts[1] >= 19_900.0, "{starts:?}");
    // Time passed since the snapshot earns tokens at its own rate.
    let mut later = Sim::new(opts, echo_provider(10.0));
    later
        .engine
        .restore(&snapshot, Duration::from_millis(10_000.0));
    later.translate(&plain("slow", "d"));
    later.drive();
    assert_eq!(starts_of(&later, "slow"), vec![0.0]);
}

#[test]
fn a_run_goes_through_a_providers_own_bucket() {
    let options = with_providers(options(&[]), &[("p", &[("rate", 1.0), ("capacity", 1.0)])]);
    let mut sim = Sim::new(options, echo_provider(10.0));
    let runs: Vec<_> = (0..3).map(|_| sim.run("p", 0.0)).collect();
    sim.drive();
    sim.assert_settled_once(&runs);
    let starts: Vec<f64> = sim.calls.iter().map(|c| c.at.as_millis()).collect();
    assert_eq!(starts, vec![0.0, 1000.0, 2000.0]);
}

#[test]
fn a_pacer_without_providers_shows_none_and_one_with_them_shows_them() {
    let plain_options = Options::default();
    assert!(plain_options
        .entries()
        .iter()
        .all(|(name, _)| *name != "providers"));
    let set = with_providers(Options::default(), &[("g", &[("rate", 2.0)])]);
    let shown = set
        .entries()
        .into_iter()
        .find(|(name, _)| *name == "providers");
    assert_eq!(
        shown.map(|e| e.1),
        Some(providers_value(&[("g", &[("rate", 2.0)])]))
    );
}
