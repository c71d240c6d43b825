//! Token bucket: continuous refill at `rate` per second up to `capacity`.
//!
//! Decisions never sleep: `try_take` says yes or no now, and `ready_at` says
//! "not until T" so the driver can wake exactly then.

use crate::time::{Duration, Instant};

/// Floating-point slack when comparing token counts, so that waking at `ready_at`
/// always finds the token that was promised there (rounding must never stall the queue).
const SLACK: f64 = 1e-9;

/// A continuously refilled token bucket.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    capacity: f64,
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    /// A bucket that starts full, as the contract requires.
    pub fn full(rate: f64, capacity: f64, now: Instant) -> TokenBucket {
        TokenBucket {
            rate,
            capacity,
            tokens: capacity,
            updated: now,
        }
    }

    /// A bucket holding `tokens` (capped at `capacity`), e.g. restored from a snapshot.
    pub fn with_tokens(rate: f64, capacity: f64, tokens: f64, now: Instant) -> TokenBucket {
        TokenBucket {
            rate,
            capacity,
            // Not `clamp`: its min <= max assertion formats floats with Debug, which
            // brings ~23 KB of float formatting into the wasm binary.
            tokens: tokens.max(0.0).min(capacity),
            updated: now,
        }
    }

    /// A bucket that starts empty (used after a 429, when bursting again would be wrong).
    pub fn empty(rate: f64, capacity: f64, now: Instant) -> TokenBucket {
        TokenBucket {
            rate,
            capacity,
            tokens: 0.0,
            updated: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        if now > self.updated {
            self.tokens = self.tokens(now);
            self.updated = now;
        }
    }

    /// Tokens available at `now`.
    pub fn tokens(&self, now: Instant) -> f64 {
        let gained = now.since(self.updated).as_secs() * self.rate;
        (self.tokens + gained).min(self.capacity)
    }

    /// Whether a token is available at `now`, without taking it.
    pub fn has_token(&self, now: Instant) -> bool {
        self.tokens(now) + SLACK >= 1.0
    }

    /// Takes one token if one is available at `now`.
    pub fn try_take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens + SLACK >= 1.0 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// The earliest instant at which a token is available (`now` if one already is).
    pub fn ready_at(&self, now: Instant) -> Instant {
        let tokens = self.tokens(now);
        if tokens + SLACK >= 1.0 {
            return now;
        }
        let missing_secs = (1.0 - tokens) / self.rate;
        // Round up to the next microsecond so the token is really there on waking.
        now + Duration::from_micros((missing_secs * 1e6).ceil() as u64)
    }

    /// The refill rate, in tokens per second.
    /// Whether `amount` tokens are there now. An amount above the capacity is there once
    /// the bucket is full: a call that costs more than the bucket can hold still starts,
    /// and leaves the bucket in debt.
    pub fn holds(&self, now: Instant, amount: f64) -> bool {
        self.tokens(now) + SLACK >= amount.min(self.capacity)
    }

    /// When `amount` tokens (at most the capacity) will be there.
    pub fn ready_at_amount(&self, now: Instant, amount: f64) -> Instant {
        let missing = amount.min(self.capacity) - self.tokens(now);
        if missing <= SLACK {
            return now;
        }
        now + Duration::from_micros((missing / self.rate * 1e6).ceil() as u64)
    }

    /// Takes `amount` tokens; the bucket may go into debt (a call that cost more than
    /// estimated, or more than the bucket holds), of one bucket at most: a cost of any
    /// size (an `estimateTokens` that answers 1e12) then delays later calls by at most
    /// two buckets' refill, never for ever.
    pub fn take_amount(&mut self, now: Instant, amount: f64) {
        self.refill(now);
        self.tokens = self.within_debt(self.tokens - amount);
    }

    /// Gives `amount` tokens back (a call that cost less than estimated), up to the
    /// capacity; a negative amount is an extra charge, into one bucket of debt at most.
    pub fn give(&mut self, now: Instant, amount: f64) {
        self.refill(now);
        self.tokens = self.within_debt(self.tokens + amount).min(self.capacity);
    }

    /// `tokens`, with a debt of one bucket at most (and NaN, from a NaN amount, as that).
    fn within_debt(&self, tokens: f64) -> f64 {
        // `max` maps NaN to the floor: a NaN never reaches the bucket.
        tokens.max(-self.capacity)
    }

    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Refill rate per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Changes the rate from `now` on; tokens earned so far at the old rate are kept.
    pub fn set_rate(&mut self, now: Instant, rate: f64) {
        self.refill(now);
        self.rate = rate;
    }

    /// Changes the capacity from `now` on. A larger capacity does not add tokens
    /// (no burst from a settings change); a smaller one drops the excess.
    pub fn set_capacity(&mut self, now: Instant, capacity: f64) {
        self.refill(now);
        self.capacity = capacity;
        self.tokens = self.tokens.min(capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn starts_full_and_refills_continuously() {
        let mut b = TokenBucket::full(0.25, 2.0, at(0.0));
        assert!(b.try_take(at(0.0)) && b.try_take(at(0.0)));
        assert!(!b.try_take(at(0.0)));
        assert_eq!(b.ready_at(at(0.0)), at(4000.0));
        assert!(!b.try_take(at(3999.0)));
        assert!(b.try_take(at(4000.0)));
    }

    #[test]
    fn never_exceeds_capacity() {
        let b = TokenBucket::full(10.0, 3.0, at(0.0));
        assert_eq!(b.tokens(at(1e9)), 3.0);
    }

    #[test]
    fn larger_capacity_does_not_refill() {
        let mut b = TokenBucket::full(1.0, 1.0, at(0.0));
        assert!(b.try_take(at(0.0)));
        b.set_capacity(at(0.0), 60.0);
        assert!(!b.has_token(at(0.0)));
        assert_eq!(b.ready_at(at(0.0)), at(1000.0));
    }

    #[test]
    fn debt_is_one_bucket_at_most() {
        let mut b = TokenBucket::full(100.0, 6000.0, at(0.0));
        b.take_amount(at(0.0), 1e12);
        assert_eq!(b.tokens(at(0.0)), -6000.0);
        // Two buckets' refill, 120 s at 100 a second, then the whole bucket again.
        assert_eq!(b.ready_at_amount(at(0.0), 6000.0), at(120_000.0));
        b.give(at(0.0), -1e12);
        assert_eq!(b.tokens(at(0.0)), -6000.0);
        b.take_amount(at(0.0), f64::NAN);
        assert_eq!(b.tokens(at(0.0)), -6000.0);
    }

    #[test]
    fn waking_at_ready_at_always_finds_a_token() {
        for rate in [0.1, 0.3, 1.0 / 3.0, 7.0, 8.0, 1e6] {
            let mut b = TokenBucket::full(rate, 1.0, at(0.0));
            let mut now = at(0.0);
            for _ in 0..1000 {
                now = b.ready_at(now);
                assert!(b.try_take(now), "rate {rate} stalled at {now:?}");
            }
        }
    }
}
