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
    Left,
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
    let words = ["the quota", "of a shared key", "translated", "in a browser", "tab"];
    let mut w = pacer + i;
    while text.len() < 300 {
        text.push_str(words[w % words.len()]);
        text.push(' ');
        w = w * 7 + 3;
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

    /// Runs every pacer in steps of 50 ms until all settled (or `limit`), each page
    /// translated at its arrival. The instant the last item settled.
    fn run(&mut self, paragraphs: usize, limit: f64) -> f64 {
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
            now += 50.0;
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

    /// 429s after each pacer's first reply, per pacer per 10 minutes of its time from
    /// its first reply to its last settlement.
    fn rate_limited_per_ten_minutes(&self) -> f64 {
        let quota = self.quota.borrow();
        let after: u32 = quota.after_first_reply.iter().sum();
        let span: f64 = self
            .sims
            .iter()
            .zip(&quota.first_reply)
            .filter_map(|(sim, first)| {
                let last = sim.settled_at.values().max()?;
                Some(last.since((*first)?).as_secs())
            })
            .sum();
        f64::from(after) / (span / 600.0)
    }
}

fn shared(on: bool) -> Options {
    Options::default()
        .patched(&[("sharedQuota", OptionValue::Bool(on))])
        .unwrap()
}

#[test]
fn five_pacers_together_share_the_quota() {
    let mut clients = Clients::new(&shared(true), &[0.0; 5], Says::LeftAndWhole);
    let done = clients.run(200, 7200.0);
    let per_pacer: Vec<usize> = clients
        .quota
        .borrow()
        .accepted
        .iter()
        .map(Vec::len)
        .collect();
    eprintln!(
        "done {done:.0} s, bound {:.0} s, failed {}, 429s {:?} ({:.2} per 10 min), calls {per_pacer:?}",
        clients.bound(),
        clients.failed(),
        clients.quota.borrow().rate_limited,
        clients.rate_limited_per_ten_minutes()
    );
    for (pacer, accepted) in clients.quota.borrow().accepted.iter().enumerate() {
        let mut minutes = vec![0; (done / 60.0).ceil() as usize + 1];
        for (at, _) in accepted {
            minutes[(at.as_millis() / 60_000.0) as usize] += 1;
        }
        eprintln!("pacer {pacer}: {minutes:?}");
    }
    assert_eq!(clients.failed(), 0);
}
