//! Read Frog's known failures, each replayed against this engine.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::rc::Rc;

use batch_pacer::{Call, Instant, OptionValue, Reply};
use sim::*;

/// A provider quota of `per_minute` requests with no burst: one call per interval,
/// anything sooner is answered 429 with a Retry-After in whole seconds (as HTTP sends it).
struct StrictQuota {
    interval: Duration,
    next_free: Instant,
    rejected: u32,
}

impl StrictQuota {
    fn per_minute(per_minute: f64) -> Rc<RefCell<StrictQuota>> {
        Rc::new(RefCell::new(StrictQuota {
            interval: Duration::from_secs(60.0 / per_minute),
            next_free: Instant::ZERO,
            rejected: 0,
        }))
    }

    fn answer(&mut self, call: &Call, now: Instant) -> Answer {
        if now < self.next_free {
            self.rejected += 1;
            let wait_secs = (self.next_free.since(now).as_secs()).ceil();
            return Answer::After(
                Duration::from_millis(20.0),
                Err(http_error(429, Some(wait_secs * 1000.0))),
            );
        }
        self.next_free = now + self.interval;
        Answer::After(Duration::from_millis(300.0), Ok(echo_reply(call)))
    }
}

/// A quota of `per_window` requests per calendar minute (the counter resets on the
/// minute), the way many free tiers count: a request over it is answered 429 with a
/// Retry-After to the next minute, in whole seconds. Counts the 429s of each minute.
struct WindowQuota {
    per_window: u32,
    window: u64,
    used: u32,
    rejected: Vec<u32>,
}

impl WindowQuota {
    fn per_minute(per_window: u32) -> Rc<RefCell<WindowQuota>> {
        Rc::new(RefCell::new(WindowQuota {
            per_window,
            window: 0,
            used: 0,
            rejected: Vec::new(),
        }))
    }

    fn answer(&mut self, call: &Call, now: Instant) -> Answer {
        let window = (now.as_millis() / 60_000.0).floor() as u64;
        if window != self.window {
            (self.window, self.used) = (window, 0);
        }
        self.used += 1;
        if self.used > self.per_window {
            let index = window as usize;
            if self.rejected.len() <= index {
                self.rejected.resize(index + 1, 0);
            }
            self.rejected[index] += 1;
            let wait_ms = (window + 1) as f64 * 60_000.0 - now.as_millis();
            return Answer::After(
                Duration::from_millis(20.0),
                Err(http_error(429, Some((wait_ms / 1000.0).ceil() * 1000.0))),
            );
        }
        Answer::After(Duration::from_millis(300.0), Ok(echo_reply(call)))
    }
}

fn paragraphs(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("Paragraph {i}: some text to translate."))
        .collect()
}

#[test]
fn defaults_against_a_strict_quota_converge_and_lose_nothing() {
    let quota = StrictQuota::per_minute(60.0);
    let q = quota.clone();
    let mut sim = Sim::new(Default::default(), move |call: &Call, now| {
        q.borrow_mut().answer(call, now)
    });
    let texts = paragraphs(1000);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(
            sim.ok(*t),
            echo(text),
            "nothing rejected, nothing misplaced"
        );
    }
    let stats = sim.engine.stats();
    let useful_calls = 250;
    let lower_bound_s = (useful_calls - 1) as f64;
    let took_s = sim.now.as_millis() / 1000.0;
    let late_429s = sim
        .events
        .iter()
        .filter(|(at, e)| {
            matches!(e, batch_pacer::Event::RateLimited { .. }) && at.as_millis() > 60_000.0
        })
        .count();
    eprintln!(
        "strict quota, defaults: {took_s:.1} s for a lower bound of {lower_bound_s} s, {} 429s, {} late, {} calls",
        stats.rate_limited, late_429s, stats.provider_calls
    );
    // Read Frog rejects the whole backlog at the first 429. Here the first burst meets 429s,
    // the provider is slowed down by itself, and after the first minute 429s are rare.
    assert!(late_429s <= 10, "{late_429s} 429s after the first minute");
    assert!(
        took_s < lower_bound_s * 1.5,
        "took {took_s:.0} s for a lower bound of {lower_bound_s} s ({} 429s)",
        stats.rate_limited
    );
    assert_eq!(stats.failed, 0);
    assert_eq!(quota.borrow().rejected as u64, stats.rate_limited);
}

#[test]
fn the_strict_preset_meets_a_strict_quota_without_a_single_429() {
    let quota = StrictQuota::per_minute(60.0);
    let q = quota.clone();
    let opts = options(&[("rate", 1.0), ("capacity", 1.0)]);
    let mut sim = Sim::new(opts, move |call: &Call, now| {
        q.borrow_mut().answer(call, now)
    });
    let texts = paragraphs(200);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(quota.borrow().rejected, 0);
    assert!(tickets.iter().all(|t| sim.result(*t).is_ok()));
    assert_eq!(sim.calls.len(), 50);
    assert_eq!(
        sim.calls.last().unwrap().at,
        ms(49_000.0),
        "the backlog drains at exactly rate"
    );
}

#[test]
fn a_429_in_the_middle_of_a_200_paragraph_backlog_rejects_nothing_and_honours_retry_after() {
    let mut calls = 0;
    let opts = options(&[("rate", 2.0), ("capacity", 2.0)]);
    let mut sim = Sim::new(opts, move |call: &Call, _| {
        calls += 1;
        if calls == 20 {
            return Answer::After(
                Duration::from_millis(50.0),
                Err(http_error(429, Some(30_000.0))),
            );
        }
        Answer::After(Duration::from_millis(50.0), Ok(echo_reply(call)))
    });
    let texts = paragraphs(200);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
    let rejected_at = sim.calls[19].at;
    let resumed_at = sim.calls[20].at;
    assert!(
        resumed_at.as_millis() >= rejected_at.as_millis() + 50.0 + 30_000.0,
        "no call before the Retry-After passed"
    );
    assert_eq!(
        sim.calls[20].texts, sim.calls[19].texts,
        "the rejected batch goes first"
    );
    assert_eq!(sim.engine.stats().rate_limited, 1);
}

#[test]
fn twelve_items_at_the_same_time_are_dispatched_first_come_first_served() {
    let opts = options(&[("rate", 1.0), ("capacity", 1.0), ("maxItemsPerBatch", 1.0)]);
    let mut sim = Sim::new(opts, echo_provider(1.0));
    let texts: Vec<String> = (0..12).map(|i| format!("cue {i}")).collect();
    for t in &texts {
        sim.translate(&item(t));
    }
    sim.drive();
    let order: Vec<String> = sim.calls.iter().map(|c| c.texts[0].clone()).collect();
    assert_eq!(order, texts);
}

#[test]
fn a_paragraph_with_a_separator_line_costs_no_retry() {
    let mut sim = Sim::new(Default::default(), echo_provider(10.0));
    let texts = ["Intro", "Totals\n%%\nend of table", "Outro"];
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    assert_eq!(sim.engine.stats().count_mismatches, 0);
    assert_eq!(sim.calls.len(), 1);
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
}

#[test]
fn raising_capacity_on_a_drained_bucket_causes_no_burst() {
    let mut sim = Sim::new(
        options(&[("rate", 1.0), ("capacity", 1.0)]),
        echo_provider(1.0),
    );
    let texts = paragraphs(40);
    let mut singles = Vec::new();
    for t in &texts {
        let mut it = item(t);
        it.compat.llm = false;
        singles.push(sim.translate(&it));
    }
    sim.drive_until(ms(2500.0));
    sim.engine
        .set_options(sim.now, &[("capacity", OptionValue::Number(60.0))])
        .unwrap();
    sim.drive_until(ms(2600.0));
    assert_eq!(
        sim.calls.len(),
        3,
        "calls at 0, 1 and 2 s, nothing more at 2.6 s"
    );
    sim.drive();
    let starts = sim.starts_ms();
    assert!(
        starts.windows(2).all(|w| w[1] - w[0] >= 999.0),
        "{starts:?}"
    );
}

#[test]
fn read_frog_seals_batches_early_we_do_not() {
    // One paragraph every 300 ms at 0.25 requests/s: batches sealed when due would carry
    // about one paragraph each; late binding fills them.
    let opts = options(&[("rate", 0.25), ("capacity", 1.0)]);
    let mut sim = Sim::new(opts, echo_provider(100.0));
    let texts = paragraphs(40);
    for (i, t) in texts.iter().enumerate() {
        sim.drive_until(ms(300.0 * i as f64));
        sim.translate(&item(t));
    }
    sim.drive();
    assert!(
        sim.calls.len() <= 11,
        "{} calls for 40 paragraphs",
        sim.calls.len()
    );
    assert!(sim.calls.iter().all(|c| c.texts.len() <= 4));
}

#[test]
fn an_array_with_the_wrong_count_is_never_shifted_onto_other_paragraphs() {
    let mut first = true;
    let mut sim = Sim::new(Default::default(), move |call: &Call, _| {
        let mut out: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        if first && call.is_batch {
            first = false;
            out.remove(0);
        }
        Answer::After(Duration::from_millis(1.0), Ok(Reply::Texts(out)))
    });
    let texts = ["a", "b", "c"];
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(texts) {
        assert_eq!(sim.ok(*t), echo(text));
    }
}

#[test]
fn defaults_against_a_quota_counted_per_minute_meet_at_most_one_429_a_minute() {
    // Back at the full rate after a 429, a provider does not get the whole refilled
    // burst at once: with 60 calls a minute that burst met 59 429s every minute.
    for llm in [false, true] {
        for per_minute in [15, 30, 45, 60, 100, 200] {
            let quota = WindowQuota::per_minute(per_minute);
            let q = quota.clone();
            let mut sim = Sim::new(Default::default(), move |call: &Call, now| {
                q.borrow_mut().answer(call, now)
            });
            // Eight minutes of work: 4 paragraphs per call in batches.
            let per_call = if llm { 4 } else { 1 };
            let texts = paragraphs(8 * per_minute as usize * per_call);
            let tickets: Vec<_> = texts
                .iter()
                .map(|t| {
                    let mut item = item(t);
                    item.compat.llm = llm;
                    sim.translate(&item)
                })
                .collect();
            sim.drive();
            for (t, text) in tickets.iter().zip(&texts) {
                assert_eq!(sim.ok(*t), echo(text), "nothing lost, nothing misplaced");
            }
            let rejected = quota.borrow().rejected.clone();
            assert!(
                rejected.len() > 5,
                "llm {llm}, {per_minute}/min: the backlog spans minutes ({rejected:?})"
            );
            // The first minute meets the first burst; later ones at most one 429 each.
            assert!(
                rejected.iter().skip(1).all(|&n| n <= 1),
                "llm {llm}, {per_minute}/min: 429s per minute {rejected:?}"
            );
        }
    }
}
