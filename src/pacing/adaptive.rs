//! A provider's own rate after 429s (`adaptiveRate`): halved at each 429 episode, raised again
//! after successes, never above the pacer's rate.
//!
//! Two things are remembered of what the provider accepted, so that a 429 that comes at
//! random (an overloaded service) does not lower the rate for good:
//! - the *ceiling*, the rate that met a 429 which the provider had not accepted before:
//!   growth slows down near it, so a strict quota is approached gently;
//! - the *proven* rate, the highest rate at which the provider accepted
//!   [`PROVEN_STREAK`] calls in a row (the rate of the first of them: the rate only
//!   grows along a streak; with burst 1, calls accepted in a row at a rate mean the
//!   provider took calls that far apart; at the full rate, where bursts are allowed,
//!   [`FULL_RATE_STREAK`] calls in a row prove it). A 429 at or below it is *sporadic*:
//!   the rate is still halved, but the ceiling is not lowered, and growth is quick up
//!   to near the proven rate again. A quota never accepts a streak above itself, so its
//!   429s are never sporadic; 429s that come at random do, at rates it accepted before.
//!
//! Growth is also bounded in time: the slow zone holds for [`CEILING_HOLD`] after the
//! last 429, and below it each success raises the rate by at least [`TIME_DOUBLING`]'s
//! doubling for the time since the previous raise, so without 429s the rate is back at
//! the pacer's rate within `CEILING_HOLD + TIME_DOUBLING × log2(rate / FLOOR)`.

use crate::bucket::TokenBucket;
use crate::time::{Duration, Instant};

/// Growth per success below the slow zone (and below the proven rate).
const FAST_GROWTH: f64 = 1.15;
/// Growth per success in the slow zone.
const SLOW_GROWTH: f64 = 1.005;
/// The slow zone starts at this share of the ceiling.
const SLOW_ZONE: f64 = 0.75;
/// The lowest adaptive rate, in calls per second: 429s that come whatever the rate (a
/// flaky gateway) must not halve it towards zero; Retry-After pauses cover the rest.
pub const FLOOR: f64 = 1.0 / 60.0;
/// Below the slow zone, the rate at least doubles per this much time (counted at
/// successes).
pub const TIME_DOUBLING: Duration = Duration::from_micros(60 * 1_000_000);
/// How long after a 429 growth slows down near the ceiling; then it is quick up to the
/// pacer's rate.
pub const CEILING_HOLD: Duration = Duration::from_micros(5 * 60 * 1_000_000);
/// Calls accepted in a row at a slowed rate (burst 1) that prove the first one's rate.
const PROVEN_STREAK: u32 = 4;
/// Calls accepted in a row at the full rate (bursts allowed) that prove it.
const FULL_RATE_STREAK: u32 = 20;
/// Growth is quick up to this share of the proven rate: a quota just above it is then
/// approached slowly.
const PROVEN_ZONE: f64 = 0.8;

/// A provider slowed down after a 429, or back at the full rate and earning its burst.
#[derive(Clone, Debug)]
pub struct AdaptiveRate {
    bucket: TokenBucket,
    /// The rate that met the last 429 the provider had not accepted before.
    ceiling: f64,
    /// The highest rate at which the provider accepted `PROVEN_STREAK` calls in a row.
    proven: f64,
    /// Calls accepted since the last 429 episode.
    streak: u32,
    /// The rates of the last `PROVEN_STREAK` accepted calls, by `streak` modulo.
    recent: [f64; PROVEN_STREAK as usize],
    /// When the rate was last raised (or the pause of the last episode ends).
    raised_at: Instant,
    /// When the pause of the last episode ends.
    slowed_at: Instant,
    /// Whether growth slows near the ceiling (for [`CEILING_HOLD`] after `slowed_at`,
    /// unless a report showed room again).
    slow_zone: bool,
    /// Back at the full rate, with the burst still to earn back: the bucket has the
    /// pacer's rate and capacity, started from the tokens it held. It is lifted once
    /// full, when it can no longer hold the provider back more than the pacer's bucket.
    recovering: bool,
}

/// What a success did to a slowed provider's rate.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Growth {
    /// Raised, still below the pacer's rate.
    Raised,
    /// Back at the pacer's rate (its burst still to earn).
    Full,
    /// Nothing to raise (recovering already).
    None,
}

impl AdaptiveRate {
    /// The state after a 429 episode that met the provider at `current` (its adaptive
    /// rate, or the pacer's `rate` when it had none, after `accepted` calls in a row at
    /// that rate): half the rate but not below `floor` (at most [`FLOOR`]), burst 1, an
    /// empty bucket, growth counted from `resume` (the end of the pause).
    pub fn after_429(
        previous: Option<&AdaptiveRate>,
        (rate, floor): (f64, f64),
        accepted: u32,
        now: Instant,
        resume: Instant,
    ) -> AdaptiveRate {
        let current = previous.map_or(rate, AdaptiveRate::rate);
        let proven = match previous {
            Some(p) => p.proven,
            None if accepted >= FULL_RATE_STREAK => rate,
            None => 0.0,
        };
        let sporadic = current <= proven;
        let proven = proven.min(rate);
        let ceiling = match previous {
            Some(p) if sporadic => p.ceiling.max(current),
            _ => current,
        };
        AdaptiveRate {
            bucket: TokenBucket::empty((current / 2.0).max(floor.min(rate)), 1.0, now),
            ceiling,
            proven,
            streak: 0,
            recent: [0.0; PROVEN_STREAK as usize],
            raised_at: resume,
            slowed_at: resume,
            slow_zone: true,
            recovering: false,
        }
    }

    /// A slowed rate restored from a snapshot, with `tokens` (at most 1) earned, growth
    /// counted from `resume` (the end of a pause that still holds).
    pub fn restored(
        rate: f64,
        tokens: f64,
        ceiling: f64,
        now: Instant,
        resume: Instant,
    ) -> AdaptiveRate {
        AdaptiveRate {
            bucket: TokenBucket::with_tokens(rate, 1.0, tokens, now),
            ceiling,
            proven: 0.0,
            streak: 0,
            recent: [0.0; PROVEN_STREAK as usize],
            raised_at: resume,
            slowed_at: resume,
            slow_zone: true,
            recovering: false,
        }
    }

    /// Back at `rate`, with the burst up to `capacity` still to earn back from `tokens`,
    /// earning from `from` on: a paused provider earns nothing until its pause ends.
    pub fn recovering(
        rate: f64,
        capacity: f64,
        tokens: f64,
        ceiling: f64,
        from: Instant,
    ) -> AdaptiveRate {
        AdaptiveRate {
            bucket: TokenBucket::with_tokens(rate, capacity, tokens, from),
            ceiling,
            proven: 0.0,
            streak: 0,
            recent: [0.0; PROVEN_STREAK as usize],
            raised_at: from,
            slowed_at: from,
            slow_zone: true,
            recovering: true,
        }
    }

    /// Its rate now.
    pub fn rate(&self) -> f64 {
        self.bucket.rate()
    }

    /// The rate that met the last 429 the provider had not accepted before.
    pub fn ceiling(&self) -> f64 {
        self.ceiling
    }

    /// Whether it is back at the full rate, earning its burst.
    pub fn is_recovering(&self) -> bool {
        self.recovering
    }

    /// Whether a call may start now.
    pub fn has_token(&self, now: Instant) -> bool {
        self.bucket.has_token(now)
    }

    /// When a call may start.
    pub fn ready_at(&self, now: Instant) -> Instant {
        self.bucket.ready_at(now)
    }

    /// Tokens held now.
    pub fn tokens(&self, now: Instant) -> f64 {
        self.bucket.tokens(now)
    }

    /// A call starts: takes its token. `true` when the limit is to be lifted instead
    /// (back at the full rate with the burst earned: no more hold than the pacer's).
    pub fn take(&mut self, now: Instant, capacity: f64) -> bool {
        if self.recovering && self.bucket.tokens(now) >= capacity {
            return true;
        }
        self.bucket.try_take(now);
        false
    }

    /// The provider is paused until `until`: a burst being earned back is not earned
    /// while paused.
    pub fn pause(&mut self, now: Instant, capacity: f64, until: Instant) {
        if self.recovering {
            let tokens = self.bucket.tokens(now);
            let proven = self.proven;
            *self = AdaptiveRate::recovering(self.rate(), capacity, tokens, self.ceiling, until);
            self.proven = proven;
        }
    }

    /// A call was accepted: raise the rate, quickly up to near the proven rate or 3/4
    /// of the ceiling, slowly above, and by at least the time-based doubling; never
    /// above `rate`.
    pub fn grow(&mut self, now: Instant, rate: f64, capacity: f64) -> Growth {
        let current = self.rate();
        if self.recovering {
            return Growth::None;
        }
        let slot = |streak: u32| (streak % PROVEN_STREAK) as usize;
        self.recent[slot(self.streak)] = current;
        self.streak = self.streak.saturating_add(1);
        if self.streak >= PROVEN_STREAK {
            // The oldest of the last PROVEN_STREAK rates: all accepted since, at it or above.
            self.proven = self.proven.max(self.recent[slot(self.streak)]);
        }
        // The slow zone near the ceiling holds for CEILING_HOLD after the last 429.
        let quick_until = if self.slow_zone && now < self.slowed_at + CEILING_HOLD {
            (self.proven * PROVEN_ZONE).max(self.ceiling * SLOW_ZONE)
        } else {
            f64::INFINITY
        };
        let next = if current < quick_until {
            let elapsed = now.since(self.raised_at).as_secs();
            // 2^(elapsed / TIME_DOUBLING) as e^(… × ln 2): wasm has no exp2, and the
            // library's carries a 4 KB table into the module; exp has none.
            let doublings = elapsed / TIME_DOUBLING.as_secs();
            current * FAST_GROWTH.max((doublings * core::f64::consts::LN_2).exp())
        } else {
            current * SLOW_GROWTH
        };
        if now > self.raised_at {
            self.raised_at = now;
        }
        if next >= rate {
            // The full rate again, but not the full burst at once: the pacer's bucket
            // refills during a pause, and `capacity` calls started at one instant would
            // all meet a quota that counts per minute (a 429 for all but the first).
            let (tokens, proven) = (self.bucket.tokens(now), self.proven);
            *self = AdaptiveRate::recovering(rate, capacity, tokens, self.ceiling, now);
            self.proven = proven;
            return Growth::Full;
        }
        self.bucket.set_rate(now, next);
        Growth::Raised
    }

    /// The provider reported room again: the ceiling its last 429 met says nothing more
    /// of a quota that others share and have left, so growth is quick from now on.
    pub fn end_slow_zone(&mut self) {
        self.slow_zone = false;
    }

    /// The pacer's rate became `rate` (`setOptions`): a provider at or above it is back
    /// at it, still earning its burst; a slower one keeps its rate, under a ceiling no
    /// higher than the new rate.
    pub fn rate_changed(&mut self, now: Instant, rate: f64, capacity: f64, earn_from: Instant) {
        if self.recovering || self.rate() >= rate {
            let tokens = self.bucket.tokens(now);
            *self = AdaptiveRate::recovering(rate, capacity, tokens, self.ceiling, earn_from);
        } else {
            self.ceiling = self.ceiling.min(rate);
            self.proven = self.proven.min(rate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: f64) -> Instant {
        Instant::from_millis(s * 1000.0)
    }

    /// Accepts calls at the slowed rate, one per token, until `until`; the count.
    fn accept_until(a: &mut AdaptiveRate, from: f64, until: f64) -> (f64, u32) {
        let mut now = at(from);
        let mut calls = 0;
        while now < at(until) && !a.is_recovering() {
            now = a.ready_at(now).max(now);
            a.take(now, 8.0);
            a.grow(now, 2.0, 8.0);
            calls += 1;
        }
        (now.as_millis() / 1000.0, calls)
    }

    #[test]
    fn a_429_at_a_rate_the_provider_accepted_does_not_lower_the_ceiling() {
        let mut a = AdaptiveRate::after_429(None, (8.0, FLOOR), 0, at(0.0), at(1.0));
        assert_eq!((a.rate(), a.ceiling(), a.proven), (4.0, 8.0, 0.0));
        let (mut now, mut rates) = (1.0, Vec::new());
        for _ in 0..10 {
            now += 1.0 / a.rate();
            rates.push(a.rate());
            a.grow(at(now), 8.0, 8.0);
        }
        // Accepted 4 in a row from rates[6] on: proven at that rate.
        let peak = rates[rates.len() - PROVEN_STREAK as usize];
        // A 429 at a rate never accepted before sets the ceiling there.
        let slowed = AdaptiveRate::after_429(Some(&a), (8.0, FLOOR), 0, at(now), at(now + 1.0));
        assert_eq!(slowed.ceiling(), a.rate());
        assert!(
            (slowed.proven - peak).abs() < 1e-9,
            "accepted in a row before the 429"
        );
        assert!(slowed.rate() <= peak);
        // Then one at a rate the provider had accepted (a 429 at random): still halved,
        // but the ceiling is kept.
        let mut b = AdaptiveRate::after_429(Some(&slowed), (8.0, FLOOR), 0, at(now), at(now + 1.0));
        assert_eq!(b.rate(), slowed.rate() / 2.0);
        assert_eq!(
            b.ceiling(),
            slowed.ceiling(),
            "a sporadic 429 keeps the ceiling"
        );
        // Quick growth up to near the proven rate again.
        let before = b.rate();
        b.grow(at(now + 1.5), 8.0, 8.0);
        assert!((b.rate() / before - FAST_GROWTH).abs() < 1e-9);
    }

    #[test]
    fn a_429_above_what_was_accepted_sets_the_ceiling() {
        let a = AdaptiveRate::after_429(None, (8.0, FLOOR), 0, at(0.0), at(1.0));
        let b = AdaptiveRate::after_429(Some(&a), (8.0, FLOOR), 0, at(1.0), at(2.0));
        assert_eq!((b.rate(), b.ceiling()), (2.0, 4.0));
        // At the full rate, 20 calls accepted in a row before the first 429 prove it.
        let c = AdaptiveRate::after_429(None, (8.0, FLOOR), 20, at(0.0), at(1.0));
        let d = AdaptiveRate::after_429(Some(&c), (8.0, FLOOR), 0, at(1.0), at(2.0));
        assert_eq!((d.rate(), d.ceiling()), (2.0, 8.0));
    }

    #[test]
    fn without_429s_the_rate_is_back_within_the_time_bound() {
        // From the floor: one call a minute, each raising by at least the doubling.
        let mut a = AdaptiveRate::after_429(None, (2.0 * FLOOR, FLOOR), 0, at(0.0), at(0.0));
        a.ceiling = 2.0 * FLOOR;
        // The bound, plus the wait for the call that crosses it (at most one gap at
        // half the rate).
        let bound = CEILING_HOLD.as_secs() + TIME_DOUBLING.as_secs() * (2.0 / FLOOR).log2() + 1.0;
        let (back, _) = accept_until(&mut a, 0.0, 10_000.0);
        assert!(a.is_recovering(), "back at the full rate");
        assert!(back <= bound, "back after {back} s, bound {bound} s");
    }
}
