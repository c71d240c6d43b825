//! A quota shared with other clients (the reference's section of that name): several
//! pacers, each on its own engine, call one quota of requests and tokens a minute that
//! reports what is left, the resets and the whole windows on every reply and 429.
//! Reports outrank the adaptive rate's guesses, others are counted, waits for a
//! Retry-After or a reset are lengthened at random, and the adaptive floor scales.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::rc::Rc;

use batch_pacer::{
    Call, Engine, Instant, OptionValue, Options, Report, ReportedLimits, Ticket, Usage,
};
use sim::*;

/// A bucket holding a minute's worth, refilled continuously, full at start.
#[derive(Clone)]
struct Minute {
    level: f64,
    per_minute: f64,
    at: Instant,
}

impl Minute {
    fn new(per_minute: f64) -> Minute {
        Minute {
            level: per_minute,
            per_minute,
            at: Instant::ZERO,
        }
    }

    fn refill(&mut self, now: Instant) {
        if now > self.at {
            let gained = now.since(self.at).as_secs() * self.per_minute / 60.0;
            self.level = (self.level + gained).min(self.per_minute);
            self.at = now;
        }
    }

    /// Until the window is whole again, as OpenAI's and Groq's reset headers say.
    fn reset(&self) -> Duration {
        Duration::from_secs((self.per_minute - self.level) * 60.0 / self.per_minute)
    }

    /// Until it holds `amount`.
    fn wait_for(&self, amount: f64) -> Duration {
        Duration::from_secs(((amount - self.level) * 60.0 / self.per_minute).max(0.0))
    }
}

/// What the quota says of itself on every reply and 429.
#[derive(Copy, Clone, PartialEq)]
enum Says {
    Nothing,

    LeftAndWhole,
}

/// One quota of 60 requests and 30,000 tokens a minute that every pacer's calls meet,
/// and what it saw.
struct Quota {
    requests: Minute,
    tokens: Minute,
    says: Says,
    /// Another client takes everything the quota holds until then.
    other_until: Instant,
    /// Per pacer: accepted calls (instant, tokens), 429s, 429s after its first reply.
    accepted: Vec<Vec<(Instant, f64)>>,
    rate_limited: Vec<u32>,
    after_first_reply: Vec<u32>,
    first_reply: Vec<Option<Instant>>,
}

const LATENCY_MS: f64 = 1500.0;

impl Quota {
    fn new(pacers: usize, says: Says) -> Rc<RefCell<Quota>> {
        Rc::new(RefCell::new(Quota {
            requests: Minute::new(60.0),
            tokens: Minute::new(30_000.0),
            says,
            other_until: Instant::ZERO,
            accepted: vec![Vec::new(); pacers],
            rate_limited: vec![0; pacers],
            after_first_reply: vec![0; pacers],
            first_reply: vec![None; pacers],
        }))
    }

    fn limits(&self) -> ReportedLimits {
        if self.says == Says::Nothing {
            return ReportedLimits::default();
        }
        let whole = self.says == Says::LeftAndWhole;
        ReportedLimits {
            requests_remaining: Some(self.requests.level.floor()),
            requests_reset: Some(self.requests.reset()),
            tokens_remaining: Some(self.tokens.level.floor()),
            tokens_reset: Some(self.tokens.reset()),
            requests_limit: whole.then_some(60.0),
            tokens_limit: whole.then_some(30_000.0),
        }
    }

    /// Pacer `pacer`'s call at `now`, admitted or answered 429 with the exact wait.
    fn answer(&mut self, pacer: usize, call: &Call, now: Instant) -> Answer {
        self.requests.refill(now);
        self.tokens.refill(now);
        if now < self.other_until {
            self.requests.level = self.requests.level.fract();
            self.tokens.level = 0.0;
        }
        let tokens = |s: &str| (s.chars().count() as f64 / 4.0).ceil();
        let input = tokens(&call.instructions) + tokens(&call.text);
        let output: f64 = call.texts.iter().map(|t| tokens(t)).sum();
        let cost = input + output;
        if self.requests.level >= 1.0 && self.tokens.level >= cost {
            self.requests.level -= 1.0;
            self.tokens.level -= cost;
            self.accepted[pacer].push((now, cost));
            let first = &mut self.first_reply[pacer];
            first.get_or_insert(now + Duration::from_millis(LATENCY_MS));
            let report = Report {
                usage: Some(Usage {
                    input_tokens: input,
                    output_tokens: output,
                }),
                limits: self.limits(),
                truncated: false,
            };
            return Answer::Reported(
                Duration::from_millis(LATENCY_MS),
                Ok(echo_reply(call)),
                report,
            );
        }
        self.rate_limited[pacer] += 1;
        if self.first_reply[pacer].is_some_and(|f| now >= f) {
            self.after_first_reply[pacer] += 1;
            if std::env::var_os("BP_429").is_some() {
                eprintln!(
                    "429 pacer {pacer} at {:.1} s, requests {:.2}, tokens {:.0} of {cost}",
                    now.as_millis() / 1000.0,
                    self.requests.level,
                    self.tokens.level
                );
            }
        }
        let wait = self
            .requests
            .wait_for(1.0)
            .max(self.tokens.wait_for(cost))
            .as_millis();
        let mut failure = http_error(429, Some(wait.max(1.0)));
        failure.limits = Box::new(self.limits());
        Answer::Reported(
            Duration::from_millis(LATENCY_MS),
            Err(failure),
            Report::default(),
        )
    }
}

/// About 300 characters, distinct per pacer and paragraph.
fn paragraph(pacer: usize, i: usize) -> String {
    let mut text = format!("Page {pacer}, paragraph {i}: ");
    let words = [
        "the quota",
        "of a shared key",
        "translated",
        "in a browser",
        "tab",
    ];
    let mut w = pacer + i;
    while text.len() < 300 {
        text.push_str(words[w % words.len()]);
        text.push(' ');
        w = w.wrapping_mul(7).wrapping_add(3);
    }
    text.truncate(299);
    text.push('.');
    text
}

/// N pacers on one clock, each with its own engine (and jitter seed) and a page.
struct Clients {
    sims: Vec<Sim>,
    tickets: Vec<Vec<Ticket>>,
    quota: Rc<RefCell<Quota>>,
    arrivals: Vec<Instant>,
}

impl Clients {
    fn new(options: &Options, arrivals: &[f64], says: Says) -> Clients {
        let quota = Quota::new(arrivals.len(), says);
        let sims = (0..arrivals.len())
            .map(|pacer| {
                let quota = quota.clone();
                let mut sim = Sim::new(options.clone(), move |call: &Call, now| {
                    quota.borrow_mut().answer(pacer, call, now)
                });
                sim.engine = Engine::new(options.clone(), Instant::ZERO, 1000 + pacer as u64);
                sim
            })
            .collect();
        Clients {
            sims,
            tickets: vec![Vec::new(); arrivals.len()],
            quota,
            arrivals: arrivals.iter().map(|s| ms(s * 1000.0)).collect(),
        }
    }

    /// Runs every pacer in steps of 100 ms until all settled (or `limit`), each page
    /// translated at its arrival. The instant the last item settled.
    fn run(&mut self, paragraphs: usize, limit: f64) -> f64 {
        // One pacer needs no lockstep: it runs to the end at once.
        let step = if self.sims.len() == 1 { limit * 1000.0 } else { 100.0 };
        let mut now = 0.0;
        loop {
            for (pacer, sim) in self.sims.iter_mut().enumerate() {
                if self.tickets[pacer].is_empty() && self.arrivals[pacer] <= ms(now) {
                    sim.drive_until(self.arrivals[pacer]);
                    for i in 0..paragraphs {
                        let text = paragraph(pacer, i);
                        self.tickets[pacer].push(sim.translate(&item(&text)));
                    }
                }
                sim.drive_until(ms(now));
            }
            let settled = self
                .sims
                .iter()
                .zip(&self.tickets)
                .all(|(sim, t)| !t.is_empty() && t.iter().all(|t| sim.results.contains_key(t)));
            if settled || now > limit * 1000.0 {
                break;
            }
            now += step;
        }
        self.sims
            .iter()
            .flat_map(|sim| sim.settled_at.values())
            .map(|at| at.as_millis() / 1000.0)
            .fold(0.0, f64::max)
    }

    fn failed(&self) -> usize {
        let failed = |(sim, tickets): (&Sim, &Vec<Ticket>)| {
            let failed = |t: &&Ticket| sim.results.get(t).is_none_or(Result::is_err);
            tickets.iter().filter(failed).count()
        };
        self.sims.iter().zip(&self.tickets).map(failed).sum()
    }

    /// The latest of the last arrival and the time the quota needs for what it accepted
    /// beyond its first full window, plus one call's latency, in seconds.
    fn bound(&self) -> f64 {
        let quota = self.quota.borrow();
        let calls: usize = quota.accepted.iter().map(Vec::len).sum();
        let tokens: f64 = quota.accepted.iter().flatten().map(|(_, c)| c).sum();
        let admit = ((calls as f64 - 60.0) / 1.0).max((tokens - 30_000.0) / 500.0);
        let last = self.arrivals.iter().map(|a| a.as_millis() / 1000.0);
        last.fold(0.0, f64::max).max(admit) + LATENCY_MS / 1000.0
    }
}

fn shared(on: bool) -> Options {
    Options::default()
        .patched(&[("sharedQuota", OptionValue::Bool(on))])
        .unwrap()
}

/// Each minute's share of the quota's refill that pacer 0 used, from `from` until its
/// last accepted call: max(calls / 60, tokens / 30,000).
fn shares_per_minute(clients: &Clients, from: f64) -> Vec<f64> {
    let quota = clients.quota.borrow();
    let accepted = &quota.accepted[0];
    let last = accepted
        .last()
        .map_or(0.0, |(at, _)| at.as_millis() / 1000.0);
    let mut shares = Vec::new();
    let mut minute = from;
    while minute + 60.0 <= last {
        let inside: Vec<f64> = accepted
            .iter()
            .filter(|(at, _)| (minute..minute + 60.0).contains(&(at.as_millis() / 1000.0)))
            .map(|(_, tokens)| *tokens)
            .collect();
        let tokens: f64 = inside.iter().sum();
        shares.push((inside.len() as f64 / 60.0).max(tokens / 30_000.0));
        minute += 60.0;
    }
    shares
}

/// One pacer (at `options`) after another client took the whole quota for two minutes:
/// its share of the refill in each minute from a minute after the other client left.
fn after_another_client(options: &Options) -> Vec<f64> {
    let mut clients = Clients::new(options, &[0.0], Says::LeftAndWhole);
    clients.quota.borrow_mut().other_until = ms(120_000.0);
    clients.run(1500, 3600.0);
    assert_eq!(clients.failed(), 0);
    shares_per_minute(&clients, 180.0)
}

#[test]
fn reports_with_room_outrank_the_adaptive_rate_after_another_client_leaves() {
    // Another client takes every request and token for two minutes: the pacer meets
    // 429s, its adaptive rate is halved and slowed near the rate that met them. The
    // reports then show the room coming back, and they decide.
    let shares = after_another_client(&shared(true));
    assert!(shares.len() >= 5, "{shares:?}");
    assert!(shares.iter().all(|s| *s >= 0.9), "{shares:?}");
    // Without the rules the guess held it back below the reported refill.
    let before = after_another_client(&shared(false));
    assert!(before.iter().any(|s| *s < 0.9), "{before:?}");
}

/// N pacers on one quota that reports its whole window, pages arriving together:
/// (failed, done ÷ bound, 429s after each pacer's first reply).
fn together(n: usize, options: &Options) -> (usize, f64, u32) {
    let mut clients = Clients::new(options, &vec![0.0; n], Says::LeftAndWhole);
    let done = clients.run(200, 20_000.0);
    let after: u32 = clients.quota.borrow().after_first_reply.iter().sum();
    (clients.failed(), done / clients.bound(), after)
}

#[test]
fn others_are_counted_five_pacers_converge_on_the_quota_together() {
    let (failed, over_bound, after_first_reply) = together(5, &shared(true));
    assert_eq!(failed, 0);
    assert!(over_bound <= 1.2, "{over_bound}");
    // Each counting only its share of the refill, they meet fewer 429s than when each
    // took the whole refill as its own.
    let (_, _, before) = together(5, &shared(false));
    assert!(
        after_first_reply < before,
        "{after_first_reply} vs {before}"
    );
}

/// `n` pacers (each its own jitter seed) whose first call meets a 429 that asks to wait
/// 10 s: when each calls again.
fn retries_after_one_429(n: usize, options: &Options) -> Vec<f64> {
    (0..n)
        .map(|pacer| {
            let mut first = true;
            let mut sim = Sim::new(options.clone(), move |call: &Call, _| {
                let answer = if std::mem::take(&mut first) {
                    Err(http_error(429, Some(10_000.0)))
                } else {
                    Ok(echo_reply(call))
                };
                Answer::After(Duration::from_millis(0.0), answer)
            });
            sim.engine = Engine::new(options.clone(), Instant::ZERO, 7 + pacer as u64);
            sim.translate(&single("the same paragraph"));
            sim.drive();
            sim.starts_ms()[1]
        })
        .collect()
}

#[test]
fn no_herds_a_wait_for_a_retry_after_is_lengthened_never_shortened() {
    let retries = retries_after_one_429(40, &shared(true));
    // 0–10% of the wait (at least 0–250 ms): between 10 and 11 s, never before.
    assert!(
        retries.iter().all(|r| (10_000.0..=11_000.0).contains(r)),
        "{retries:?}"
    );
    let (first, last) = retries
        .iter()
        .fold((f64::MAX, 0.0_f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    assert!(last - first >= 500.0, "spread over {} ms", last - first);
    let mut windows = std::collections::HashMap::new();
    for r in &retries {
        *windows.entry((r / 100.0) as u64).or_insert(0) += 1;
    }
    let herd = windows.values().max().copied().unwrap_or(0);
    assert!(herd <= 10, "{herd} of 40 retries in one 100 ms");
    // Without the rules, all forty call again at the same instant.
    let before = retries_after_one_429(40, &shared(false));
    assert!(before.iter().all(|r| *r == 10_000.0), "{before:?}");
}

#[test]
fn no_herds_a_wait_for_a_reported_reset_is_lengthened_never_shortened() {
    // Nothing left until the reset in 5 s, the whole window not given: the next call
    // waits for the reset, and up to 10% more (at least up to 250 ms).
    let starts: Vec<f64> = (0..20)
        .map(|pacer| {
            let mut n = 0;
            let mut sim = Sim::new(shared(true), move |call: &Call, _| {
                n += 1;
                let limits = ReportedLimits {
                    requests_remaining: Some(if n == 1 { 0.0 } else { 10.0 }),
                    requests_reset: Some(Duration::from_millis(5000.0)),
                    ..ReportedLimits::default()
                };
                let report = Report {
                    limits,
                    ..Report::default()
                };
                Answer::Reported(Duration::from_millis(0.0), Ok(echo_reply(call)), report)
            });
            sim.engine = Engine::new(shared(true), Instant::ZERO, 100 + pacer);
            sim.translate(&single("first"));
            sim.drive_until(ms(1.0));
            sim.translate(&single("second"));
            sim.drive();
            sim.starts_ms()[1]
        })
        .collect();
    assert!(
        starts.iter().all(|s| (5000.0..=5500.0).contains(s)),
        "{starts:?}"
    );
    let spread = starts.iter().cloned().fold(0.0, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread >= 200.0, "{starts:?}");
}

/// The adaptive rates a pacer was slowed to, against a quota of one call every two
/// minutes that answers 429 with a short Retry-After, while it reports room in a window
/// of requests a minute (which is not the one that holds it back).
fn slowed_rates(options: &Options) -> Vec<f64> {
    let mut next_room = 0.0;
    let mut sim = Sim::new(options.clone(), move |call: &Call, now: Instant| {
        let now = now.as_millis();
        let admitted = now >= next_room;
        if admitted {
            next_room = now + 120_000.0;
        }
        let limits = ReportedLimits {
            requests_remaining: Some(50.0),
            requests_reset: Some(Duration::from_millis(10_000.0)),
            ..ReportedLimits::default()
        };
        if admitted {
            let report = Report {
                limits,
                ..Report::default()
            };
            return Answer::Reported(Duration::from_millis(100.0), Ok(echo_reply(call)), report);
        }
        let mut failure = http_error(429, Some(1000.0));
        failure.limits = Box::new(limits);
        Answer::Reported(
            Duration::from_millis(100.0),
            Err(failure),
            Report::default(),
        )
    });
    for i in 0..40 {
        sim.translate(&single(&format!("paragraph {i}")));
    }
    sim.drive_until(ms(3_600_000.0));
    sim.events
        .iter()
        .filter_map(|(_, e)| match e {
            batch_pacer::Event::AdaptiveRate { rate, .. } => *rate,
            _ => None,
        })
        .collect()
}

#[test]
fn the_floor_scales_with_the_rate_this_pacer_has_been_taking() {
    use batch_pacer::adaptive::FLOOR;
    // It takes one call every two minutes: its floor is that rate, not one a minute.
    let rates = slowed_rates(&shared(true));
    let lowest = rates.iter().cloned().fold(f64::MAX, f64::min);
    assert!(lowest < FLOOR, "{rates:?}");
    assert!(lowest >= FLOOR / 10.0 - 1e-12, "{rates:?}");
    // Without the rules, one call a minute is as low as it goes.
    let rates = slowed_rates(&shared(false));
    let lowest = rates.iter().cloned().fold(f64::MAX, f64::min);
    assert!((lowest - FLOOR).abs() < 1e-12, "{rates:?}");
}

#[test]
fn a_pacer_whose_provider_reports_nothing_behaves_as_before() {
    // 429s without a Retry-After or limits, then replies: the rules change nothing.
    let starts = |on: bool| {
        let mut n = 0;
        let mut sim = Sim::new(shared(on), move |call: &Call, _| {
            n += 1;
            let answer = if n % 7 < 3 {
                Err(http_error(429, None))
            } else {
                Ok(echo_reply(call))
            };
            Answer::After(Duration::from_millis(200.0), answer)
        });
        for i in 0..60 {
            sim.translate(&item(&format!("paragraph {i}")));
        }
        sim.drive();
        assert_eq!(sim.results.values().filter(|r| r.is_err()).count(), 0);
        sim.starts_ms()
    };
    assert_eq!(starts(true), starts(false));
}
