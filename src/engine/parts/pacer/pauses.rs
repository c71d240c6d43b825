//! Whether a provider can serve: a 429's pause and its episode, which slows the
//! adaptive rate once, an accepted call's growth back, the pause ends the engine wakes
//! for, and the daily block. Apart because these are the holds a provider's answers
//! set, as against the budgets of the gate.

use core::cmp::Reverse;

use super::{Charge, Pacer, Paused};
use crate::adaptive::{AdaptiveRate, Growth, FLOOR};
use crate::options::Options;
use crate::provider::DailyBlock;
use crate::settle::{ErrorCode, PacerFailure};
use crate::time::{Duration, Instant};

impl Pacer {
    /// A 429 pauses every call to the provider for `pause`, and slows it down
    /// once per 429 episode (the episode of the call it answered is `charge`'s).
    pub(in crate::engine) fn pause(
        &mut self,
        provider: u32,
        charge: &Charge,
        pause: Duration,
        now: Instant,
        options: &Options,
    ) -> Option<Paused> {
        let index = provider;
        let provider = self.providers.get(provider)?;
        let mut pacing = provider.state.borrow_mut();
        let until = now + pause;
        let mut paused = Paused { slowed_to: None };
        if until > pacing.paused_until {
            pacing.paused_until = until;
            self.pauses.push(Reverse((until, index)));
        }
        let paused_until = pacing.paused_until;
        if let Some(adaptive) = pacing.adaptive.as_mut() {
            adaptive.pause(now, options.capacity, paused_until);
        }
        if charge.episode != pacing.episode {
            return Some(paused);
        }
        pacing.episode = pacing.episode.wrapping_add(1);
        let accepted = std::mem::take(&mut pacing.accepted);
        if options.adaptive_rate {
            // The floor scales down to the rate this pacer has been taking of a quota
            // that others share: a hundred clients at one call a minute each would
            // overrun a quota of fifty a minute for ever.
            let floor = match pacing.quota.taking_rate(now) {
                Some(taking) if self.shared_quota => taking.clamp(FLOOR / 10.0, FLOOR),
                _ => FLOOR,
            };
            let slowed = AdaptiveRate::after_429(
                pacing.adaptive.as_ref(),
                (options.rate, floor),
                accepted,
                now,
                paused_until,
            );
            paused.slowed_to = Some(slowed.rate());
            pacing.adaptive = Some(slowed);
        }
        Some(paused)
    }

    /// A call to the provider was accepted: its slowed rate grows back (see
    /// [`AdaptiveRate::grow`]); whether it is back at the full rate. A call that started
    /// before the current 429 episode says nothing of the rate since: like its 429
    /// would, its success belongs to the past.
    pub(in crate::engine) fn grow(
        &mut self,
        provider: u32,
        charge: &Charge,
        now: Instant,
        options: &Options,
    ) -> bool {
        let Some(provider) = self.providers.get(provider) else {
            return false;
        };
        let mut pacing = provider.state.borrow_mut();
        if charge.episode != pacing.episode {
            return false;
        }
        let Some(adaptive) = pacing.adaptive.as_mut() else {
            pacing.accepted = pacing.accepted.saturating_add(1);
            return false;
        };
        adaptive.grow(now, options.rate, options.capacity) == Growth::Full
    }

    /// The soonest end of a 429 pause this pacer set after `now` (as of the last
    /// `drop_stale`): the engine wakes then, as the provider can serve again. A pause
    /// another pacer of a shared budget set wakes this one only for its due batches
    /// (`Engine::poll_timeout` asks the gate of each).
    pub(in crate::engine) fn next_pause_end(&self, now: Instant) -> Option<Instant> {
        let Reverse((until, _)) = self.pauses.peek()?;
        (*until > now).then_some(*until)
    }

    /// Drops the pause ends at the top that passed by `now` or that a longer pause
    /// replaced.
    pub(in crate::engine) fn drop_stale(&mut self, now: Instant) {
        while let Some(&Reverse((until, index))) = self.pauses.peek() {
            let current = self
                .providers
                .get(index)
                .is_some_and(|p| p.state.borrow().paused_until == until);
            if current && until > now {
                break;
            }
            self.pauses.pop();
        }
    }

    /// The provider's daily quota is spent: its items reject until `block.until`.
    pub(in crate::engine) fn block_daily(&mut self, provider: u32, block: DailyBlock) {
        if let Some(provider) = self.providers.get(provider) {
            provider.state.borrow_mut().daily_block = Some(block);
        }
    }

    /// The daily block's error for items of `provider`, while it holds.
    pub(in crate::engine) fn daily_blocked<C>(
        &self,
        provider: u32,
        now: Instant,
    ) -> Option<PacerFailure<C>> {
        let pacing = self.providers.get(provider)?.state.borrow();
        let block = pacing.daily_block.as_ref().filter(|b| b.until > now)?;
        let mut error = PacerFailure::new(ErrorCode::ProviderError, block.message.clone());
        error.status = Some(429);
        error.retry_in = block.reset_known.then(|| block.until.since(now));
        Some(error)
    }

    /// Whether `provider` can serve items now: no daily block, and no 429 pause with more
    /// than `wait` left (`fallbackAfterMs`).
    pub(in crate::engine) fn can_serve(&self, provider: u32, now: Instant, wait: Duration) -> bool {
        let Some(provider) = self.providers.get(provider) else {
            return true;
        };
        let pacing = provider.state.borrow();
        let blocked = pacing.daily_block.as_ref().is_some_and(|b| b.until > now);
        !blocked && pacing.paused_until <= now + wait
    }
}
