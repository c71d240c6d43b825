//! The pacer's own token budget (`tokensPerMinute`), beside the request bucket. Apart
//! because it is this pacer's budget, whatever a provider reports of its quota.

use crate::bucket::TokenBucket;
use crate::time::Instant;

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
        // In debt, of one bucket at most: a full bucket again after two buckets' refill.
        assert_eq!(budget.ready_at(at(0.0), 600.0), at(120_000.0));
    }
}
