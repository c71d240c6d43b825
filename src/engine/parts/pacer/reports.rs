//! What a provider reports about a call: the usage that corrects the budgets and its
//! estimates, and the limits that hold its later calls (a quota shared with other
//! clients included). Apart because reports are read once per answer, whatever it was.

use super::{Charge, Pacer};
#[cfg(any(test, feature = "check"))]
use crate::adaptive::FLOOR;
use crate::call::{ReportedLimits, Usage};
#[cfg(any(test, feature = "check"))]
use crate::options::Options;
use crate::quota::{Held, Reading};
use crate::time::Instant;

impl Pacer {
    /// Takes in what the provider reported about a call charged `charge` (whose input was
    /// estimated at `estimated_input` tokens, and which it `admitted`, or answered 429):
    /// usage corrects the budgets and the provider's estimates, limits hold its later
    /// calls, and a wait for a reported reset is lengthened by the draw `lengthen`.
    /// `None` for an unknown provider; else whether token estimates just became needed
    /// (the first token window a provider reported).
    pub(in crate::engine) fn take_report(
        &mut self,
        provider: u32,
        charge: &Charge,
        (usage, estimated_input, admitted): (Option<&Usage>, f64, bool),
        (limits, lengthen): (&ReportedLimits, f64),
        now: Instant,
    ) -> Option<bool> {
        self.providers.touch(provider, now);
        if let (Some(usage), true) = (usage, charge.own) {
            if let Some(Some(own)) = self.own.get_mut(provider as usize) {
                own.correct_tokens(now, charge.cost, usage.input_tokens + usage.output_tokens);
            }
        }
        let provider = self.providers.get(provider)?;
        let mut pacing = provider.state.borrow_mut();
        if let Some(usage) = usage {
            pacing
                .input_ratio
                .learn(estimated_input, usage.input_tokens);
            let actual = usage.input_tokens + usage.output_tokens;
            if let Some(budget) = &mut self.budget {
                budget.correct(now, charge.cost, actual);
            }
            if let Some(shared) = &self.shared {
                shared.correct_tokens(now, charge.cost, actual);
            }
            pacing.quota.learn(charge.raw_cost, usage);
        }
        let reading = Reading {
            started: charge.at,
            admitted,
            tokens: usage.map_or(charge.cost, |u| u.input_tokens + u.output_tokens),
            shared: self.shared_quota,
            lengthen,
        };
        let ticket = (charge.quota_ticket, charge.cost);
        pacing.quota.report(now, ticket, limits, &reading);
        // A report with room after a 429 episode: the quota has room again, whatever
        // the adaptive rate guessed.
        let room = self.shared_quota && pacing.quota.shows_room(now, charge.cost);
        if let Some(adaptive) = pacing.adaptive.as_mut().filter(|_| room) {
            adaptive.end_slow_zone();
        }
        drop(pacing);
        let first_window = limits.tokens_remaining.is_some() && !self.token_windows;
        self.token_windows |= first_window;
        Some(first_window)
    }

    /// Whether the provider's reported limits hold a call of `cost`, and until when and
    /// why, the first time this hold is asked about (a `limited` event is due then).
    pub(in crate::engine) fn new_hold(
        &mut self,
        provider: u32,
        cost: f64,
        now: Instant,
    ) -> Option<(Instant, Held)> {
        let provider = self.providers.get(provider)?;
        let mut pacing = provider.state.borrow_mut();
        let (until, why) = pacing.quota.held(now, cost)?;
        pacing.quota.announce(until).then_some((until, why))
    }

    /// Panics, naming the rule, if a provider's pacing state breaks a rule of a quota
    /// shared with other clients (see `Engine::check`).
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn check_shared_quota(&self, options: &Options) {
        use crate::quota_share::MIN_SHARE;
        for (_, provider) in self.providers.iter() {
            let pacing = provider.state.borrow();
            let share = pacing.quota.share();
            assert!(
                (MIN_SHARE..=1.0).contains(&share),
                "provider {}: its share {share} of the quota is within {MIN_SHARE} and 1",
                provider.id
            );
            if let Some(adaptive) = &pacing.adaptive {
                // The floor scales down to a tenth of one call a minute, no further.
                let lowest = (FLOOR / 10.0).min(options.rate);
                assert!(
                    adaptive.rate() >= lowest * (1.0 - 1e-9),
                    "provider {}: its adaptive rate {} is not below {lowest}",
                    provider.id,
                    adaptive.rate()
                );
            }
        }
    }
}
