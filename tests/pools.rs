//! Pools (docs/guides/providers.md, "Pools"), on virtual time: the load spread over the members, the member
//! chosen when a call starts, a paused or blocked member's share taken by the others, the
//! whole pool held → the pool's fallback, a member also submitted to directly, the pool
//! as the items' provider for dedup and the cache, and `stats().byProvider`.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use batch_pacer::{Call, ErrorCode, Event, Failure, Instant, OptionValue, Options, Quota, Reply};
use sim::*;

/// Options with `pools` (and `fallbackProviders` from `fallbacks`), `patch` as numbers.
fn pooled(pools: &[(&str, &[&str])], fallbacks: &[(&str, &str)], patch: &[(&str, f64)]) -> Options {
    let pools = pools.iter().map(|(pool, members)| {
        let members = members.iter().map(|m| OptionValue::Text(m.to_string()));
        (pool.to_string(), OptionValue::List(members.collect()))
    });
    let fallbacks = fallbacks
        .iter()
        .map(|(from, to)| (from.to_string(), OptionValue::Text(to.to_string())));
    marker_options(patch)
        .patched(&[
            ("pools", OptionValue::Map(pools.collect())),
            ("fallbackProviders", OptionValue::Map(fallbacks.collect())),
        ])
        .expect("valid pools")
}

/// What a provider does with its `n`-th call (from 1).
type Behaviour = fn(&str, u32) -> Result<Reply, Failure<String>>;
/// Calls per provider id.
type CallCounts = Rc<RefCell<HashMap<String, u32>>>;

/// A provider that answers after 50 ms as `behaviour` says for that provider and count.
fn members(behaviour: Behaviour) -> (impl FnMut(&Call, Instant) -> Answer, CallCounts) {
    let counts: CallCounts = Rc::default();
    let seen = counts.clone();
    let script = move |call: &Call, _: Instant| {
        let id = call.compat.provider_id.clone();
        let mut counts = seen.borrow_mut();
        let n = counts.entry(id.clone()).or_default();
        *n += 1;
        let outcome = behaviour(&id, *n).map(|_| echo_reply(call));
        Answer::After(Duration::from_millis(50.0), outcome)
    };
    (script, counts)
}

fn fine(_: &str, _: u32) -> Result<Reply, Failure<String>> {
    Ok(Reply::Text(String::new()))
}

fn daily() -> Failure<String> {
    let mut f = http_error(429, Some(3_600_000.0));
    f.quota = Some(Quota::Daily);
    f
}

fn page(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("Paragraph {i} of the page."))
        .collect()
}

/// Translates `texts` for `provider` (one call each: `llm: false`).
fn submit(sim: &mut Sim, provider: &str, texts: &[String]) -> Vec<batch_pacer::Ticket> {
    texts
        .iter()
        .map(|t| {
            let mut it = item_for(provider, t);
            it.compat.llm = false;
            sim.translate(&it)
        })
        .collect()
}

fn assert_translated(sim: &Sim, tickets: &[batch_pacer::Ticket], texts: &[String]) {
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    sim.assert_settled_once(tickets);
}

#[test]
fn a_steady_load_is_spread_over_the_members_within_ten_percent() {
    let (script, counts) = members(fine);
    let options = pooled(&[("gemini", &["k1", "k2", "k3"])], &[], &[("rate", 5.0)]);
    let mut sim = Sim::new(options, script);
    let texts = page(600);
    let tickets = submit(&mut sim, "gemini", &texts);
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    let counts = counts.borrow();
    let per_key: Vec<u32> = ["k1", "k2", "k3"].iter().map(|k| counts[*k]).collect();
    assert_eq!(per_key.iter().sum::<u32>(), 600, "one call per paragraph");
    let (min, max) = (per_key.iter().min().unwrap(), per_key.iter().max().unwrap());
    assert!(
        f64::from(*max) <= f64::from(*min) * 1.1,
        "calls per key within 10%: {per_key:?}"
    );
    // Each call names its member and its pool; no call goes to the pool's id.
    for call in &sim.calls {
        assert!(["k1", "k2", "k3"].contains(&call.provider_id.as_str()));
        assert_eq!(call.pool_id.as_deref(), Some("gemini"));
        assert_eq!(call.fallback_from, None);
    }
    // Stats per provider: each member's calls and items, none for the pool itself.
    let by_provider = sim.engine.stats_by_provider();
    let by: HashMap<&str, _> = by_provider.iter().map(|(id, s)| (&**id, *s)).collect();
    assert!(!by.contains_key("gemini"));
    for (key, n) in ["k1", "k2", "k3"].iter().zip(&per_key) {
        assert_eq!(
            (by[key].calls, by[key].items),
            (u64::from(*n), u64::from(*n))
        );
        assert_eq!(by[key].rate_limited, 0);
    }
}

#[test]
fn the_member_is_chosen_when_the_call_starts_and_a_paused_one_is_passed_over() {
    // k2 answers its first call 429 with a short Retry-After (under fallbackAfterMs).
    fn k2_limited(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match (id, n) {
            ("k2", 1) => Err(http_error(429, Some(5_000.0))),
            _ => fine(id, n),
        }
    }
    let (script, _) = members(k2_limited);
    let patch = [("rate", 0.5), ("capacity", 1.0)];
    let mut options = pooled(&[("pool", &["k1", "k2"])], &[], &patch);
    options.adaptive_rate = false;
    let mut sim = Sim::new(options, script);
    let first = sim.translate(&item_for("pool", "First paragraph."));
    let mut later = Vec::new();
    for (i, at) in [500.0, 1000.0, 1500.0].iter().enumerate() {
        sim.drive_until(ms(*at));
        later.push(format!("Later paragraph {i}."));
    }
    let tickets: Vec<_> = later
        .iter()
        .map(|t| sim.translate(&item_for("pool", t)))
        .collect();
    sim.drive();
    assert_eq!(sim.ok(first), echo("First paragraph."));
    assert_translated(&sim, &tickets, &later);
    let calls: Vec<(f64, &str, usize)> = sim
        .calls
        .iter()
        .map(|c| (c.at.as_millis(), c.provider_id.as_str(), c.texts.len()))
        .collect();
    // The first call goes to k1; the later items wait for the next token together and
    // go, as one batch, to k2 (idle longest); k2's 429 pauses it for 5 s, so the batch's
    // retry goes to k1 at the next token instead of waiting for k2.
    assert_eq!(calls[0], (100.0, "k1", 1));
    assert_eq!(calls[1], (2100.0, "k2", 3));
    assert_eq!(calls[2], (4100.0, "k1", 3));
    assert_eq!(calls.len(), 3);
    let by_provider = sim.engine.stats_by_provider();
    let k2 = by_provider.iter().find(|(id, _)| &**id == "k2").unwrap().1;
    assert_eq!((k2.calls, k2.items, k2.rate_limited), (1, 3, 1));
    // The 429 paused k2, not the pool.
    assert!(sim.events.iter().any(|(_, e)| matches!(
        e,
        Event::RateLimited { provider_id, .. } if &**provider_id == "k2"
    )));
}

#[test]
fn a_long_pause_of_one_member_leaves_the_page_to_the_others() {
    fn k1_paused(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match (id, n) {
            ("k1", 1) => Err(http_error(429, Some(60_000.0))),
            _ => fine(id, n),
        }
    }
    let (script, counts) = members(k1_paused);
    let patch = [("rate", 10.0), ("capacity", 1.0)];
    let options = pooled(&[("pool", &["k1", "k2", "k3"])], &[], &patch);
    let mut sim = Sim::new(options, script);
    let texts = page(60);
    let tickets = submit(&mut sim, "pool", &texts);
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    // Nothing waited for k1's minute: the others carried the page meanwhile.
    assert!(tickets.iter().all(|t| sim.settled_at[t] < ms(60_000.0)));
    assert_eq!(counts.borrow()["k1"], 1);
    assert!(sim
        .calls
        .iter()
        .all(|c| c.provider_id != "k1" || c.at == ms(0.0)));
    assert_eq!(sim.engine.stats().fallback_items, 0);
}

/// A page of 100 for a pool of two whose k1 fails after 5 calls (`behaviour`): every
/// paragraph is translated, k1 gets no call after its failure, and the failed call's
/// item went back to the pool.
fn blocked_member_leaves_the_page_to_the_other(k1_fails: Behaviour) -> Sim {
    let (script, counts) = members(k1_fails);
    let patch = [("rate", 10.0), ("capacity", 1.0)];
    let options = pooled(&[("pool", &["k1", "k2"])], &[], &patch);
    let mut sim = Sim::new(options, script);
    let texts = page(100);
    let tickets = submit(&mut sim, "pool", &texts);
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    assert_eq!(counts.borrow()["k1"], 6, "no call to k1 after its failure");
    assert_eq!(
        counts.borrow()["k2"],
        95,
        "k2 took the rest, the failed call's item too"
    );
    let stats = sim.engine.stats();
    assert_eq!((stats.failed, stats.fallback_items), (0, 0));
    sim
}

/// k1 answers 5 calls, then fails with `failure()`; k2 answers every call.
macro_rules! k1_fails_after_five {
    ($failure:expr) => {{
        fn behaviour(id: &str, n: u32) -> Result<Reply, Failure<String>> {
            match id {
                "k1" if n > 5 => Err($failure),
                _ => fine(id, n),
            }
        }
        behaviour
    }};
}

#[test]
fn a_daily_block_of_one_member_leaves_the_page_to_the_other() {
    let mut sim = blocked_member_leaves_the_page_to_the_other(k1_fails_after_five!(daily()));
    // Later items do not go to k1 while its block holds.
    let later = submit(&mut sim, "pool", &["A later paragraph.".to_string()]);
    sim.drive();
    assert_eq!(sim.ok(later[0]), echo("A later paragraph."));
    assert_eq!(sim.calls.last().unwrap().provider_id, "k2");
}

#[test]
fn a_billing_or_settings_error_of_one_member_leaves_the_page_to_the_other() {
    fn billing() -> Failure<String> {
        let mut f = http_error(402, None);
        f.quota = Some(Quota::Billing);
        f
    }
    let behaviours: [Behaviour; 2] = [
        k1_fails_after_five!(billing()),
        k1_fails_after_five!(http_error(401, None)),
    ];
    for behaviour in behaviours {
        let mut sim = blocked_member_leaves_the_page_to_the_other(behaviour);
        // An item that arrives later tries k1 again (the user may have acted: it is the
        // member idle longest); k1 still fails, and k2 serves it.
        let later = submit(&mut sim, "pool", &["A later paragraph.".to_string()]);
        sim.drive();
        assert_eq!(sim.ok(later[0]), echo("A later paragraph."));
        let tried: Vec<&str> = (sim.calls.iter().rev().take(2))
            .map(|c| c.provider_id.as_str())
            .collect();
        assert_eq!(tried, ["k2", "k1"]);
    }
}

#[test]
fn retries_spent_at_one_member_go_on_with_another() {
    // k1 is down; k2's first answer is a short 429 pause, so k1 takes the retry too.
    fn k1_down(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match (id, n) {
            ("k1", _) => Err(http_error(503, None)),
            ("k2", 1) => Err(http_error(429, Some(5_000.0))),
            _ => fine(id, n),
        }
    }
    let (script, counts) = members(k1_down);
    let mut options = pooled(&[("pool", &["k1", "k2"])], &[], &[("maxRetries", 1.0)]);
    options.adaptive_rate = false;
    let mut sim = Sim::new(options, script);
    let texts = page(2);
    let tickets = submit(&mut sim, "pool", &texts);
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    assert_eq!(sim.engine.stats().failed, 0);
    // Each paragraph spent its tries at k1 (the second one after k2's 429), then k2
    // translated it once its pause was over.
    assert_eq!(counts.borrow()["k1"], 4);
    let tried = |text: &String| -> Vec<&str> {
        (sim.calls.iter())
            .filter(|c| c.texts[0] == *text)
            .map(|c| c.provider_id.as_str())
            .collect()
    };
    assert_eq!(tried(&texts[0]), ["k1", "k1", "k2"]);
    assert_eq!(tried(&texts[1]), ["k2", "k1", "k1", "k2"]);
}

#[test]
fn the_whole_pool_held_moves_its_items_to_the_pools_fallback() {
    fn all_spent(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match id {
            "k1" | "k2" if n > 3 => Err(daily()),
            _ => fine(id, n),
        }
    }
    let (script, counts) = members(all_spent);
    let options = pooled(
        &[("gemini", &["k1", "k2"])],
        &[("gemini", "groq")],
        &[("rate", 10.0), ("capacity", 1.0)],
    );
    let mut sim = Sim::new(options, script);
    let texts = page(100);
    let tickets = submit(&mut sim, "gemini", &texts);
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    assert_eq!((counts.borrow()["k1"], counts.borrow()["k2"]), (4, 4));
    let stats = sim.engine.stats();
    assert_eq!(stats.failed, 0);
    assert_eq!(stats.fallback_items, 100 - 6);
    for call in sim.calls.iter().filter(|c| c.provider_id == "groq") {
        assert_eq!(call.fallback_from.as_deref(), Some("gemini"));
        assert_eq!(call.pool_id, None);
    }
    // The move is reported from the pool, the items' own provider.
    assert!(sim.events.iter().any(|(_, e)| matches!(
        e,
        Event::ProviderFallback { from, to, .. } if &**from == "gemini" && &**to == "groq"
    )));
}

#[test]
fn every_member_paused_long_moves_the_pools_queue_to_its_fallback_at_once() {
    fn all_paused(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match id {
            "k1" | "k2" => Err(http_error(429, Some(60_000.0))),
            _ => fine(id, n),
        }
    }
    let (script, counts) = members(all_paused);
    let options = pooled(&[("gemini", &["k1", "k2"])], &[("gemini", "groq")], &[]);
    let mut sim = Sim::new(options, script);
    let texts = page(40);
    let tickets = submit(&mut sim, "gemini", &texts[..2]);
    sim.drive_until(ms(1_000.0));
    // Both keys paused for a minute: the page does not wait for them.
    let rest = submit(&mut sim, "gemini", &texts[2..]);
    sim.drive_until(ms(5_000.0));
    let all: Vec<_> = tickets.iter().chain(&rest).copied().collect();
    assert_translated(&sim, &all, &texts);
    // No call to either key after their pauses began (the first 429s).
    assert!(sim
        .calls
        .iter()
        .all(|c| c.provider_id == "groq" || c.at < ms(1_000.0)));
    assert_eq!(counts.borrow()["groq"], 40);
    assert_eq!(sim.engine.stats().fallback_items, 40);
}

#[test]
fn without_a_fallback_a_pool_whose_members_are_all_blocked_rejects_with_their_error() {
    fn all_spent(_: &str, n: u32) -> Result<Reply, Failure<String>> {
        if n > 1 {
            Err(daily())
        } else {
            fine("", n)
        }
    }
    let (script, _) = members(all_spent);
    let options = pooled(&[("pool", &["k1", "k2"])], &[], &[("rate", 10.0)]);
    let mut sim = Sim::new(options, script);
    let tickets = submit(&mut sim, "pool", &page(20));
    sim.drive();
    let failed: Vec<_> = tickets
        .iter()
        .filter(|t| sim.result(**t).is_err())
        .collect();
    assert_eq!(failed.len(), 18);
    for t in failed {
        let error = sim.result(*t).as_ref().unwrap_err();
        assert_eq!(
            (error.code, error.status),
            (ErrorCode::ProviderError, Some(429))
        );
    }
    sim.assert_settled_once(&tickets);
}

#[test]
fn a_member_also_submitted_to_directly_is_one_provider() {
    fn k1_paused(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match (id, n) {
            ("k1", 1) => Err(http_error(429, Some(3_000.0))),
            _ => fine(id, n),
        }
    }
    let (script, _) = members(k1_paused);
    let patch = [("rate", 10.0), ("capacity", 1.0)];
    let mut options = pooled(&[("pool", &["k1", "k2"])], &[], &patch);
    options.adaptive_rate = false;
    let mut sim = Sim::new(options, script);
    let pooled_texts = page(10);
    let pool_tickets = submit(&mut sim, "pool", &pooled_texts);
    let direct_texts: Vec<String> = (0..3).map(|i| format!("Direct {i}.")).collect();
    let direct = submit(&mut sim, "k1", &direct_texts);
    sim.drive();
    assert_translated(&sim, &pool_tickets, &pooled_texts);
    assert_translated(&sim, &direct, &direct_texts);
    // k1's pause holds its direct items and the pool's calls alike: no call to k1 until
    // it ends; the pool's items went on with k2 meanwhile.
    let paused_at = sim.calls[0].at;
    assert_eq!(sim.calls[0].provider_id, "k1");
    for call in sim.calls.iter().skip(1).filter(|c| c.provider_id == "k1") {
        assert!(call.at >= paused_at + Duration::from_millis(3_000.0));
    }
    for call in &sim.calls {
        let direct = direct_texts.contains(&call.texts[0]);
        assert_eq!(call.provider_id == "k1", direct || call.at == paused_at);
        let expected = (!direct).then(|| "pool".to_string());
        assert_eq!(call.pool_id, expected);
    }
}

#[test]
fn the_pool_is_the_items_provider_for_dedup_and_the_cache() {
    let (script, _) = members(fine);
    let options = pooled(&[("pool", &["k1", "k2"])], &[], &[]);
    let mut sim = Sim::new(options, script);
    let a = sim.translate(&item_for("pool", "Hello."));
    let b = sim.translate(&item_for("pool", "Hello."));
    sim.drive();
    let c = sim.translate(&item_for("pool", "Hello."));
    sim.drive();
    for t in [a, b, c] {
        assert_eq!(sim.ok(t), echo("Hello."));
    }
    let stats = sim.engine.stats();
    assert_eq!(
        (stats.provider_calls, stats.dedup_hits, stats.cache_hits),
        (1, 1, 1)
    );
    // The same text for a member directly is another item.
    let d = sim.translate(&item_for("k2", "Hello."));
    sim.drive();
    assert_eq!(sim.ok(d), echo("Hello."));
    assert_eq!(sim.engine.stats().provider_calls, 2);
}

#[test]
fn a_snapshot_keeps_a_members_block_so_a_restarted_pool_serves_with_the_others() {
    fn k1_spent(id: &str, n: u32) -> Result<Reply, Failure<String>> {
        match id {
            "k1" => Err(daily()),
            _ => fine(id, n),
        }
    }
    let options = pooled(&[("pool", &["k1", "k2"])], &[], &[]);
    let (script, _) = members(k1_spent);
    let mut sim = Sim::new(options.clone(), script);
    let first = submit(&mut sim, "pool", &["Spends k1.".to_string()]);
    sim.drive();
    assert_eq!(sim.ok(first[0]), echo("Spends k1."), "k2 took it over");
    let snapshot = sim.engine.snapshot(0.0);
    let (script, counts) = members(fine);
    let mut restarted = Sim::new(options, script);
    restarted
        .engine
        .restore(&snapshot, Duration::from_millis(1_000.0));
    let texts = page(4);
    let tickets = submit(&mut restarted, "pool", &texts);
    restarted.drive();
    assert_translated(&restarted, &tickets, &texts);
    assert_eq!(
        counts.borrow().get("k1"),
        None,
        "k1's block came back with it"
    );
    assert_eq!(counts.borrow()["k2"], 4);
}

#[test]
fn set_options_replaces_the_pools() {
    let (script, counts) = members(fine);
    let mut sim = Sim::new(pooled(&[("pool", &["k1"])], &[], &[]), script);
    let t = sim.translate(&item_for("pool", "One."));
    sim.drive();
    assert_eq!(sim.ok(t), echo("One."));
    let pools = vec![(
        "pool".to_string(),
        OptionValue::List(vec![OptionValue::Text("k9".into())]),
    )];
    sim.engine
        .set_options(sim.now, &[("pools", OptionValue::Map(pools))])
        .unwrap();
    let t = sim.translate(&item_for("pool", "Two."));
    sim.drive();
    assert_eq!(sim.ok(t), echo("Two."));
    assert_eq!((counts.borrow()["k1"], counts.borrow()["k9"]), (1, 1));
    // A bad map changes nothing.
    let bad = vec![("pool".to_string(), OptionValue::List(vec![]))];
    let error = sim
        .engine
        .set_options(sim.now, &[("pools", OptionValue::Map(bad))])
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidOptions);
    assert_eq!(sim.engine.options().pools.members("pool").unwrap(), ["k9"]);
}

#[test]
fn a_streamed_reply_to_a_members_call_resolves_the_pools_item() {
    let options = pooled(&[("pool", &["k1", "k2"])], &[], &[]);
    let mut sim = Sim::new(options, |call: &Call, _| {
        let reply = match echo_reply(call) {
            Reply::Text(text) => text,
            other => panic!("a text reply: {other:?}"),
        };
        Answer::Stream(chunked(&reply, 3, Duration::from_millis(10.0)))
    });
    let texts = page(3);
    let tickets: Vec<_> = texts
        .iter()
        .map(|t| sim.translate(&item_for("pool", t)))
        .collect();
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    assert_eq!(sim.engine.stats().streamed_calls, sim.calls.len() as u64);
    assert!(sim
        .calls
        .iter()
        .all(|c| c.pool_id.as_deref() == Some("pool") && c.provider_id.starts_with('k')));
}

#[test]
fn a_member_at_its_own_max_in_flight_is_passed_over_until_a_call_of_its_own_ends() {
    // Each key may run one call at a time (its own `maxInFlight`); calls take 50 ms.
    let own_cap = OptionValue::Map(vec![("maxInFlight".to_string(), OptionValue::Number(1.0))]);
    let providers = OptionValue::Map(vec![
        ("k1".to_string(), own_cap.clone()),
        ("k2".to_string(), own_cap),
    ]);
    let options = pooled(&[("pool", &["k1", "k2"])], &[], &[])
        .patched(&[("providers", providers)])
        .expect("valid providers");
    let (script, counts) = members(fine);
    let mut sim = Sim::new(options, script);
    let texts = page(8);
    let tickets = submit(&mut sim, "pool", &texts);
    sim.drive();
    assert_translated(&sim, &tickets, &texts);
    for key in ["k1", "k2"] {
        let starts: Vec<f64> = (sim.calls.iter().filter(|c| c.provider_id == key))
            .map(|c| c.at.as_millis())
            .collect();
        assert_eq!(
            starts,
            vec![0.0, 50.0, 100.0, 150.0],
            "{key}: one call at a time"
        );
    }
    assert_eq!(counts.borrow().values().sum::<u32>(), 8);
}

#[test]
fn a_run_names_a_member_not_a_pool() {
    let (script, _) = members(fine);
    let mut sim = Sim::new(pooled(&[("pool", &["k1", "k2"])], &[], &[]), script);
    let now = sim.now;
    let error = sim.engine.handle_run(now, "pool", 0.0).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidInput);
    assert!(
        error
            .message
            .starts_with("providerId must be a provider, not a pool"),
        "{}",
        error.message
    );
    // A member is an ordinary provider to a run.
    let run = sim.run("k1", 0.0);
    sim.drive();
    assert!(sim.result(run).is_ok());
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.calls[0].provider_id, "k1");
}
