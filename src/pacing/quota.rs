//! Quotas as providers count them: a token budget beside the request bucket, call costs
//! estimated and corrected from reported usage, and the limits a provider reports about
//! itself, which hold its calls before any 429.
//!
//! A call's cost before it starts is an estimate: its texts' input tokens, as much again
//! for the output (a translation is about as long as its source), plus the prompt's
//! share (system prompt, instructions, context). When the reply reports `usage`, the
//! real figure replaces the estimate in the budget (a refund or an extra charge), and
//! that provider's estimates are scaled towards the figures it reports.

use crate::bucket::TokenBucket;
use crate::call::{ReportedLimits, Usage};
use crate::estimate::estimate_tokens;
use crate::time::{Duration, Instant};

/// Tokens of the prompt around a batch's texts: the system prompt and the layout's
/// instructions (about 110 tokens in the markers layout).
const BATCH_PROMPT_TOKENS: f64 = 140.0;
/// Tokens of the prompt around a single text.
const SINGLE_PROMPT_TOKENS: f64 = 40.0;
/// A provider that reports no room but not when its window resets is held this long:
/// then one call finds out, and if the window is still full, its 429's Retry-After
/// says how long to wait (a minute's hold would stall a quota that refills every
/// second).
const UNKNOWN_RESET: Duration = Duration::from_micros(1_000_000);
/// How far one reply moves a provider's cost ratio towards what it reported.
const LEARNING: f64 = 0.3;

/// The estimated input tokens of a text.
pub fn input_tokens(text: &str) -> f64 {
    estimate_tokens(text)
}

/// A call's cost before provider scaling: input, as much again for output, and the
/// prompt's share (`context_tokens` of the items' shared context included).
pub fn raw_cost(input: f64, context_tokens: f64, is_batch: bool) -> f64 {
    let prompt = if is_batch {
        BATCH_PROMPT_TOKENS
    } else {
        SINGLE_PROMPT_TOKENS
    };
    2.0 * input + context_tokens + prompt
}

/// The largest input a batch may carry so that its cost fits a budget of `capacity`
/// tokens (a batch never grows past what the token bucket can ever hold).
pub fn max_batch_input(capacity: f64) -> f64 {
    ((capacity - BATCH_PROMPT_TOKENS) / 2.0).max(0.0)
}

/// The pacer's token budget (`tokensPerMinute`): a bucket refilled at a minute's worth
/// per minute, holding at most a minute's worth, starting full.
#[derive(Clone, Debug)]
pub struct TokenBudget {
    bucket: TokenBucket,
}

impl TokenBudget {
    /// A full budget of `per_minute` tokens, or `None` for no token limit (0).
    pub fn new(per_minute: f64, now: Instant) -> Option<TokenBudget> {
        (per_minute > 0.0).then(|| TokenBudget {
            bucket: TokenBucket::full(per_minute / 60.0, per_minute, now),
        })
    }

    /// A new `tokensPerMinute`: like a larger `capacity`, it does not refill the budget.
    pub fn set_per_minute(&mut self, now: Instant, per_minute: f64) {
        self.bucket.set_rate(now, per_minute / 60.0);
        self.bucket.set_capacity(now, per_minute);
    }

    /// The most it ever holds.
    pub fn capacity(&self) -> f64 {
        self.bucket.rate() * 60.0
    }

    /// Whether a call of `cost` may start now.
    pub fn holds(&self, now: Instant, cost: f64) -> bool {
        self.bucket.holds(now, cost)
    }

    /// When a call of `cost` may start.
    pub fn ready_at(&self, now: Instant, cost: f64) -> Instant {
        self.bucket.ready_at_amount(now, cost)
    }

    /// A call of `cost` started.
    pub fn spend(&mut self, now: Instant, cost: f64) {
        self.bucket.take_amount(now, cost);
    }

    /// The call that was charged `estimated` really cost `actual`.
    pub fn correct(&mut self, now: Instant, estimated: f64, actual: f64) {
        self.bucket.give(now, estimated - actual);
    }
}

/// What is left in one of a provider's reported windows.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Window {
    remaining: f64,
    reset: Instant,
}

impl Window {
    fn from(now: Instant, remaining: Option<f64>, reset: Option<Duration>) -> Option<Window> {
        remaining.map(|remaining| Window {
            remaining,
            reset: now + reset.unwrap_or(UNKNOWN_RESET),
        })
    }

    /// Until when a call needing `need` must wait, if the window has no room for it.
    fn holds_until(&self, now: Instant, need: f64) -> Option<Instant> {
        (self.reset > now && self.remaining < need).then_some(self.reset)
    }
}

/// One provider's cost model and reported limits.
#[derive(Clone, Debug)]
pub struct ProviderQuota {
    /// Reported tokens over estimated tokens, learned from `usage`.
    ratio: f64,
    requests: Option<Window>,
    tokens: Option<Window>,
    /// The reset of the hold last announced as a `limited` event.
    announced: Option<Instant>,
}

impl Default for ProviderQuota {
    fn default() -> Self {
        ProviderQuota {
            ratio: 1.0,
            requests: None,
            tokens: None,
            announced: None,
        }
    }
}

/// Why a provider's calls are held.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// It reported no requests left.
    Requests,
    /// It reported fewer tokens left than the next call costs.
    Tokens,
}

impl Held {
    /// Name for JS.
    pub fn as_str(self) -> &'static str {
        match self {
            Held::Requests => "requests",
            Held::Tokens => "tokens",
        }
    }
}

impl ProviderQuota {
    /// A call's cost for this provider, from its raw estimate.
    pub fn cost(&self, raw: f64) -> f64 {
        raw * self.ratio
    }

    /// Takes in what a reply or an error reported.
    pub fn report(&mut self, now: Instant, limits: &ReportedLimits) {
        if let Some(w) = Window::from(now, limits.requests_remaining, limits.requests_reset) {
            self.requests = Some(w);
        }
        if let Some(w) = Window::from(now, limits.tokens_remaining, limits.tokens_reset) {
            self.tokens = Some(w);
        }
    }

    /// Scales later estimates towards what the provider reported for a call whose raw
    /// estimate was `raw`.
    pub fn learn(&mut self, raw: f64, usage: &Usage) {
        let actual = usage.input_tokens + usage.output_tokens;
        if raw > 0.0 && actual > 0.0 {
            let seen = (actual / raw).clamp(0.25, 4.0);
            self.ratio += (seen - self.ratio) * LEARNING;
        }
    }

    /// Until when, and why, a call of `cost` must wait for the provider's own windows.
    pub fn held(&self, now: Instant, cost: f64) -> Option<(Instant, Held)> {
        let requests = self
            .requests
            .and_then(|w| w.holds_until(now, 1.0))
            .map(|at| (at, Held::Requests));
        let tokens = self
            .tokens
            .and_then(|w| w.holds_until(now, cost))
            .map(|at| (at, Held::Tokens));
        match (requests, tokens) {
            (Some(r), Some(t)) => Some(if r.0 >= t.0 { r } else { t }),
            (r, t) => r.or(t),
        }
    }

    /// Whether a hold until `until` is new (to be announced once).
    pub fn announce(&mut self, until: Instant) -> bool {
        let new = self.announced != Some(until);
        self.announced = Some(until);
        new
    }

    /// A call of `cost` started: it uses one request and `cost` tokens of the windows.
    pub fn spend(&mut self, now: Instant, cost: f64) {
        for (window, used) in [(&mut self.requests, 1.0), (&mut self.tokens, cost)] {
            if let Some(w) = window {
                if w.reset > now {
                    w.remaining -= used;
                } else {
                    *window = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn a_budget_starts_full_and_refills_a_minutes_worth_per_minute() {
        let mut budget = TokenBudget::new(6000.0, at(0.0)).unwrap();
        assert!(budget.holds(at(0.0), 6000.0));
        budget.spend(at(0.0), 6000.0);
        assert!(!budget.holds(at(0.0), 100.0));
        assert_eq!(budget.ready_at(at(0.0), 100.0), at(1000.0));
        // Reported usage below the estimate is given back.
        budget.correct(at(0.0), 6000.0, 3000.0);
        assert!(budget.holds(at(0.0), 3000.0));
        assert!(TokenBudget::new(0.0, at(0.0)).is_none());
    }

    #[test]
    fn a_call_larger_than_the_budget_waits_for_a_full_bucket() {
        let mut budget = TokenBudget::new(600.0, at(0.0)).unwrap();
        assert!(budget.holds(at(0.0), 5000.0));
        budget.spend(at(0.0), 5000.0);
        // In debt: a full bucket again only after the debt is paid.
        assert_eq!(budget.ready_at(at(0.0), 600.0), at(500_000.0));
    }

    #[test]
    fn reported_limits_hold_calls_until_the_reset() {
        let mut quota = ProviderQuota::default();
        let limits = ReportedLimits {
            requests_remaining: Some(1.0),
            requests_reset: Some(Duration::from_millis(2000.0)),
            tokens_remaining: Some(500.0),
            tokens_reset: Some(Duration::from_millis(1000.0)),
        };
        quota.report(at(0.0), &limits);
        assert_eq!(quota.held(at(0.0), 400.0), None);
        assert_eq!(quota.held(at(0.0), 600.0), Some((at(1000.0), Held::Tokens)));
        quota.spend(at(0.0), 400.0);
        assert_eq!(
            quota.held(at(10.0), 10.0),
            Some((at(2000.0), Held::Requests))
        );
        assert_eq!(quota.held(at(2000.0), 10.0), None);
    }

    #[test]
    fn usage_scales_the_estimates() {
        let mut quota = ProviderQuota::default();
        for _ in 0..20 {
            quota.learn(
                100.0,
                &Usage {
                    input_tokens: 150.0,
                    output_tokens: 50.0,
                },
            );
        }
        assert!((quota.cost(100.0) - 200.0).abs() < 1.0);
    }
}
