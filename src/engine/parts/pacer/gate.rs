//! The one gate of a call and its one charge: [`Pacer::ready_at`] says when every
//! budget that applies holds a call, and [`Pacer::try_take`] charges all of them only
//! through that gate. Apart so that the charge itself (`take`) is private to this file:
//! a charge without its check does not compile anywhere else.

use super::{Charge, Pacer};
use crate::options::Options;
use crate::time::Instant;

impl Pacer {
    /// A call's cost to `provider` for `raw` estimated tokens (its own scaling, learnt
    /// from the usage it reported).
    pub(in crate::engine) fn cost(&self, provider: u32, raw: f64) -> f64 {
        self.providers
            .get(provider)
            .map_or(0.0, |p| p.state.borrow().quota.cost(raw))
    }

    /// Whether a request token is there: the pacer's own, and its shared budget's.
    pub(in crate::engine) fn has_request_token(&self, now: Instant) -> bool {
        self.bucket.has_token(now)
            && self
                .shared
                .as_ref()
                .is_none_or(|b| b.has_request_token(now))
    }

    /// When a request token will be there.
    fn request_token_at(&self, now: Instant) -> Instant {
        let own = self.bucket.ready_at(now);
        self.shared
            .as_ref()
            .map_or(own, |b| own.max(b.request_token_at(now)))
    }

    /// When a call of `cost` tokens and `characters` to `provider` may start (`now` if
    /// it may now): the one gate of a call. A request token (the pacer's own, its shared
    /// budget's and the provider's own), no pause, the provider's adaptive rate, and
    /// room for the cost in the token budgets (the provider's own too), its character
    /// budget and the windows the provider reported.
    pub(in crate::engine) fn ready_at(
        &self,
        provider: u32,
        (cost, characters): (f64, u64),
        now: Instant,
    ) -> Instant {
        let mut at = self.request_token_at(now);
        if let Some(own) = self.own(provider) {
            at = at.max(own.ready_at(now, cost, characters));
        }
        let Some(provider) = self.providers.get(provider) else {
            return at;
        };
        let pacing = provider.state.borrow();
        // A pause another pacer of a shared budget set has no timer of this one's.
        at = at.max(pacing.paused_until);
        // Reports of the whole window outrank the adaptive rate's guess: their room
        // (this pacer's share of it) decides, below.
        let reports_decide = self.shared_quota && pacing.quota.reports_whole(now);
        if let Some(adaptive) = pacing.adaptive.as_ref().filter(|_| !reports_decide) {
            at = at.max(adaptive.ready_at(now));
        }
        if !self.wants_token_estimates() && pacing.quota.held(now, 0.0).is_none() {
            return at;
        }
        let held = pacing.quota.held(now, cost).map(|(until, _)| until);
        let own = self
            .budget
            .as_ref()
            .map(|b| b.ready_at(now, cost))
            .filter(|until| *until > now);
        let shared = self
            .shared
            .as_ref()
            .and_then(|b| b.tokens_ready_at(now, cost));
        [held, own, shared]
            .into_iter()
            .flatten()
            .fold(at, Instant::max)
    }

    /// The one way a call is charged: when every budget that applies holds a call of
    /// `raw_cost` (`cost` after the provider's scaling) now (see [`Pacer::ready_at`]),
    /// its charge, taken from all of them; else when it could start.
    pub(in crate::engine) fn try_take(
        &mut self,
        provider: u32,
        (raw_cost, cost, characters): (f64, f64, u64),
        now: Instant,
        options: &Options,
    ) -> Result<Charge, Instant> {
        let at = self.ready_at(provider, (cost, characters), now);
        if at > now {
            return Err(at);
        }
        Ok(self.take(provider, (raw_cost, cost, characters), now, options))
    }

    /// Charges a call of `raw_cost` (`cost` after the provider's scaling) that starts
    /// now: a request token (the adaptive rate's too), the token budgets, and the
    /// provider's reported windows.
    fn take(
        &mut self,
        provider: u32,
        (raw_cost, cost, characters): (f64, f64, u64),
        now: Instant,
        options: &Options,
    ) -> Charge {
        self.bucket.try_take(now);
        let own = self
            .own
            .get_mut(provider as usize)
            .and_then(Option::as_deref_mut);
        let charged_own = own.is_some();
        if let Some(own) = own {
            own.take(now, cost, characters);
        }
        if let Some(budget) = &mut self.budget {
            budget.spend(now, cost);
        }
        if let Some(shared) = &self.shared {
            shared.take_request_token(now);
            shared.spend_tokens(now, cost);
        }
        let mut charge = Charge {
            raw_cost,
            cost,
            at: now,
            own: charged_own,
            ..Charge::default()
        };
        self.providers.touch(provider, now);
        if let Some(provider) = self.providers.get(provider) {
            let mut pacing = provider.state.borrow_mut();
            if pacing
                .adaptive
                .as_mut()
                .is_some_and(|a| a.take(now, options.capacity))
            {
                pacing.adaptive = None;
            }
            charge.quota_ticket = pacing.quota.spend(now, cost);
            charge.episode = pacing.episode;
        }
        charge
    }
}
