//! Reported limits bound every later call: a provider with a quota of requests and of
//! tokens a minute that reports what is left on every reply and 429 is met with (almost)
//! no 429 once it has spoken, on the pacer's defaults; with the preset, never.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::RefCell;
use std::rc::Rc;

use batch_pacer::{Call, Instant, Report, ReportedLimits, Usage};
use sim::*;

/// A bucket holding a minute's worth, refilled continuously, full at start.
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
        let gained = now.since(self.at).as_secs() * self.per_minute / 60.0;
        self.level = (self.level + gained).min(self.per_minute);
        self.at = now;
    }

    /// Until the window is whole again, as OpenAI's and Groq's reset headers say.
    fn reset(&self) -> Duration {
        Duration::from_secs((self.per_minute - self.level) * 60.0 / self.per_minute)
    }
}

/// What the provider counts for a call: a system prompt, the instructions and the text
/// (a token per 4 characters, rounded up), and the answer (as long as the text).
fn counted(call: &Call) -> (f64, f64) {
    let tokens = |s: &str| (s.chars().count() as f64 / 4.0).ceil();
    (
        30.0 + tokens(&call.instructions) + tokens(&call.text),
        tokens(&call.text),
    )
}

/// Calls, 429s and the 429s of calls that arrived after the first reply was back.
#[derive(Clone, Default)]
struct Tally {
    calls: u32,
    rate_limited: u32,
    after_first_reply: u32,
    first_reply: Option<Instant>,
}

/// What the provider says of its quota on every reply and 429.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Says {
    Nothing,
    /// What is left and the reset.
    Left,
    /// That, and the whole window (`x-ratelimit-limit-*`).
    LeftAndWhole,
}

/// A Groq-like quota of 30 requests and 6,000 tokens a minute, charged on arrival,
/// saying `says` of it.
fn groq_like(says: Says, tally: Rc<RefCell<Tally>>) -> impl FnMut(&Call, Instant) -> Answer {
    let latency = Duration::from_millis(300.0);
    let (mut requests, mut tokens) = (Minute::new(30.0), Minute::new(6000.0));
    move |call: &Call, now: Instant| {
        requests.refill(now);
        tokens.refill(now);
        let (input, output) = counted(call);
        let mut t = tally.borrow_mut();
        t.calls += 1;
        let admitted = requests.level >= 1.0 && tokens.level >= input + output;
        if admitted {
            requests.level -= 1.0;
            tokens.level -= input + output;
            if t.first_reply.is_none() {
                t.first_reply = Some(now + latency);
            }
        } else {
            t.rate_limited += 1;
            if t.first_reply.is_some_and(|f| now >= f) {
                t.after_first_reply += 1;
            }
        }
        let whole = says == Says::LeftAndWhole;
        let limits = if says != Says::Nothing {
            ReportedLimits {
                requests_remaining: Some(requests.level.floor()),
                requests_reset: Some(requests.reset()),
                tokens_remaining: Some(tokens.level.floor()),
                tokens_reset: Some(tokens.reset()),
                requests_limit: whole.then_some(30.0),
                tokens_limit: whole.then_some(6000.0),
            }
        } else {
            ReportedLimits::default()
        };
        if admitted {
            let usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
            });
            Answer::Reported(
                latency,
                Ok(echo_reply(call)),
                Report {
                    usage,
                    limits,
                    truncated: false,
                },
            )
        } else {
            let mut failure = http_error(429, Some(1000.0));
            failure.limits = Box::new(limits);
            Answer::Reported(latency, Err(failure), Report::default())
        }
    }
}

fn paragraphs(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut text = format!("Paragraph {i} of the article. ");
            while text.len() < 200 {
                text.push_str("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ");
            }
            text.truncate(200);
            text
        })
        .collect()
}

/// Runs `n` paragraphs through a pacer with `patch` against the quota.
fn run(patch: &[(&str, f64)], says: Says, n: usize) -> (Tally, Sim) {
    let tally = Rc::new(RefCell::new(Tally::default()));
    let mut sim = Sim::new(marker_options(patch), groq_like(says, tally.clone()));
    let texts = paragraphs(n);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    for (t, text) in tickets.iter().zip(&texts) {
        assert_eq!(sim.ok(*t), echo(text), "nothing lost");
    }
    let tally = tally.borrow().clone();
    (tally, sim)
}

#[test]
fn on_the_defaults_reported_limits_bound_the_calls_after_the_first_reply() {
    // The first burst (up to `capacity` calls before any reply) is the contract; after
    // the provider has spoken, what it reports bounds every call, with or without the
    // whole window.
    for says in [Says::Left, Says::LeftAndWhole] {
        let (tally, _) = run(&[], says, 400);
        assert!(
            tally.after_first_reply <= 3,
            "{says:?}: {} × 429 after the first reply ({} in all, {} calls)",
            tally.after_first_reply,
            tally.rate_limited,
            tally.calls
        );
    }
}

#[test]
fn the_preset_with_tokens_per_minute_meets_no_429_with_or_without_reported_limits() {
    let preset = [
        ("rate", 0.5),
        ("capacity", 1.0),
        ("tokensPerMinute", 6000.0),
    ];
    for says in [Says::Nothing, Says::Left, Says::LeftAndWhole] {
        let (tally, _) = run(&preset, says, 400);
        assert_eq!(tally.rate_limited, 0, "{says:?}, {} calls", tally.calls);
    }
}
