//! The `Pacer` part: the request bucket, the token budget, the budget shared with other
//! pacers, and each provider's pacing state (its 429 pause and episode, adaptive rate,
//! reported limits, daily block).
//!
//! It keeps "a call starts only when every budget that applies holds it, and a call that
//! starts is charged to all of them": one gate, [`Pacer::ready_at`], which dispatch asks
//! before a call and `poll_timeout` asks for the next wake-up, and one charge,
//! [`Pacer::try_take`], which asks the gate itself: a charge without its check does not
//! compile outside this file. A provider's pacing state is behind an `Rc<RefCell<…>>` because the
//! pacers of a shared budget share it; no borrow of it leaves this file.

use core::cmp::Reverse;
use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::rc::Rc;

use super::provider_table::{Entry, ProviderTable};
use crate::adaptive::{AdaptiveRate, Growth, FLOOR};
use crate::batch_limit::{BatchLimit, Proved};
use crate::bucket::TokenBucket;
use crate::budget::SharedBudget;
use crate::call::{ReportedLimits, Usage};
use crate::length_ratio::LengthRatios;
use crate::options::Options;
use crate::provider::{DailyBlock, ProviderPacing, MAX_DAILY_BLOCK, UNKNOWN_DAILY_RESET};
use crate::provider_limits::ProviderLimits;
use crate::provider_settings::ProviderSettings;
use crate::quota::{Held, Reading, TokenBudget};
use crate::retry::MAX_RETRY_AFTER;
use crate::settle::{ErrorCode, PacerFailure};
use crate::snapshot::{ProviderSnapshot, SavedDailyBlock, Snapshot};
use crate::time::{Duration, Instant};

/// What a started call was charged, handed back when its answer reports what it cost.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Charge {
    /// Its estimated cost before and after the provider's scaling (0 without estimates).
    raw_cost: f64,
    cost: f64,
    /// Its place among the calls to its provider, for the limits the provider reports.
    quota_ticket: u64,
    /// The provider's 429 episode when the call started.
    episode: u32,
    /// When it started, and whether it was charged to its provider's own limits.
    pub(super) at: Instant,
    pub(super) own: bool,
}

/// What a 429 changed: the slowed rate if this 429 began a new episode.
#[derive(Copy, Clone, Debug)]
pub(super) struct Paused {
    pub(super) slowed_to: Option<f64>,
}

/// The budgets a call must fit, and the providers' pacing state by provider index.
#[derive(Debug)]
pub(super) struct Pacer {
    bucket: TokenBucket,
    /// The token budget (`tokensPerMinute`), when one is set.
    budget: Option<TokenBudget>,
    /// The budget this pacer shares with others, if any.
    shared: Option<SharedBudget>,
    /// Whether a provider has reported a token window: item token estimates are needed
    /// then, budget or not.
    token_windows: bool,
    /// Each provider's id and pacing state, which pacers that share a budget also share.
    providers: ProviderTable<Rc<RefCell<ProviderPacing>>>,
    /// The ends of the 429 pauses this pacer set or restored, soonest first; one that a
    /// longer pause replaced, or that passed, stays until it reaches the top, where
    /// `drop_stale` removes it.
    pauses: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Each provider's own limits (`providers`), by provider index. A provider that has
    /// them is never forgotten: its buckets must outlive its idle times.
    own: Vec<Option<Box<ProviderLimits>>>,
    /// Whether a provider's own limits count tokens.
    own_tokens: bool,
    /// Whether reports are read as a quota shared with other clients (`sharedQuota`).
    shared_quota: bool,
}

impl Pacer {
    /// Full buckets under these options at `now`; provider ids are hashed under a secret
    /// derived from `seed`.
    pub(super) fn new(options: &Options, now: Instant, seed: u64) -> Self {
        Pacer {
            bucket: TokenBucket::full(options.rate, options.capacity, now),
            budget: TokenBudget::new(options.tokens_per_minute, now),
            shared: None,
            token_windows: false,
            providers: ProviderTable::new(seed, now),
            pauses: BinaryHeap::new(),
            own: Vec::new(),
            own_tokens: false,
            shared_quota: options.shared_quota,
        }
    }

    /// Shares `budget` with the other pacers given it (providers met before keep their
    /// own pacing state).
    pub(super) fn share(&mut self, budget: SharedBudget) {
        self.shared = Some(budget);
    }

    /// The index of provider `id`, used at `now`: remembered on first use (again after
    /// it was forgotten, see [`Pacer::forget_idle`]), with its own limits if `options`
    /// give it some.
    pub(super) fn provider_for(&mut self, id: &str, now: Instant, options: &Options) -> u32 {
        if let Some(index) = self.providers.find(id) {
            self.providers.touch(index, now);
            return index;
        }
        let settings = options.provider_settings(id);
        let id: Rc<str> = id.into();
        let pacing = match &self.shared {
            Some(budget) => budget.provider(&id),
            None => Rc::default(),
        };
        let index = self.providers.insert(id, pacing, now);
        if settings.is_some() || self.own.len() > index as usize {
            self.set_own(index, settings, options, now);
        }
        index
    }

    /// Provider `index`'s own limits become `settings` at `now` (kept where they exist).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    fn set_own(
        &mut self,
        index: u32,
        settings: Option<&ProviderSettings>,
        options: &Options,
        now: Instant,
    ) {
        let index = index as usize;
        if self.own.len() <= index {
            self.own.resize_with(index + 1, || None);
        }
        self.own[index] = match (self.own[index].take(), settings) {
            (Some(mut own), Some(settings)) => {
                own.update(settings, options, now);
                Some(own)
            }
            (None, Some(settings)) => Some(Box::new(ProviderLimits::new(settings, options, now))),
            (_, None) => None,
        };
        self.own_tokens = self.own.iter().flatten().any(|o| o.counts_tokens());
    }

    /// Provider `index`'s own limits, if it has some.
    pub(super) fn own(&self, index: u32) -> Option<&ProviderLimits> {
        self.own.get(index as usize)?.as_deref()
    }

    /// Provider `index`'s own settings, if `providers` lists it.
    pub(super) fn own_settings(&self, index: u32) -> Option<&ProviderSettings> {
        self.own(index).map(ProviderLimits::settings)
    }

    /// The index of provider `id`, if it is remembered (nothing changes).
    pub(super) fn find_provider(&self, id: &str) -> Option<u32> {
        self.providers.find(id)
    }

    /// One more than the highest provider index given out.
    pub(super) fn provider_bound(&self) -> usize {
        self.providers.bound()
    }

    /// How many providers are remembered.
    pub(super) fn providers_remembered(&self) -> usize {
        self.providers.remembered()
    }

    /// The id of provider `index`.
    pub(super) fn provider_id(&self, index: u32) -> Rc<str> {
        self.providers
            .get(index)
            .map_or_else(|| Rc::from(""), |p| p.id.clone())
    }

    /// Whether providers are to be swept at `now` (see [`Pacer::forget_idle`]).
    pub(super) fn sweep_due(&self, now: Instant) -> bool {
        self.providers.sweep_due(now)
    }

    /// Forgets the providers that nothing uses (`in_use`, by index: no group, batch or
    /// call) and whose pacing state holds nothing back: no pause, daily block, adaptive
    /// rate, reported limits in force or learned batch size (`ProviderPacing::holds_nothing`).
    /// Their learned estimates (token scaling, length ratios) go with them. Their
    /// indexes, which the caller stops using.
    pub(super) fn forget_idle(&mut self, now: Instant, in_use: &[bool]) -> Vec<u32> {
        let mut kept = in_use.to_vec();
        for (index, own) in self.own.iter().enumerate() {
            if own.is_some() {
                if kept.len() <= index {
                    kept.resize(index + 1, false);
                }
                kept[index] = true;
            }
        }
        let forgotten = self
            .providers
            .sweep(now, &kept, |p| p.state.borrow().holds_nothing(now));
        let mut indexes = Vec::with_capacity(forgotten.len());
        for (index, provider) in forgotten {
            indexes.push(index);
            if let Some(budget) = &self.shared {
                let Entry { id, state, .. } = provider;
                drop(state);
                budget.release(&id);
            }
        }
        indexes
    }

    /// Whether items need token estimates (a token budget, a provider that reports its
    /// token window, or a shared budget that counts tokens).
    pub(super) fn wants_token_estimates(&self) -> bool {
        self.budget.is_some()
            || self.token_windows
            || self.own_tokens
            || self
                .shared
                .as_ref()
                .is_some_and(SharedBudget::counts_tokens)
    }

    /// A call's cost to `provider` for `raw` estimated tokens (its own scaling, learnt
    /// from the usage it reported).
    pub(super) fn cost(&self, provider: u32, raw: f64) -> f64 {
        self.providers
            .get(provider)
            .map_or(0.0, |p| p.state.borrow().quota.cost(raw))
    }

    /// Whether a request token is there: the pacer's own, and its shared budget's.
    pub(super) fn has_request_token(&self, now: Instant) -> bool {
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
    pub(super) fn ready_at(
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
    pub(super) fn try_take(
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

    /// A 429 pauses every call to the provider for `pause`, and slows it down
    /// once per 429 episode (the episode of the call it answered is `charge`'s).
    pub(super) fn pause(
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
    pub(super) fn grow(
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

    /// Takes in what the provider reported about a call charged `charge` (whose input was
    /// estimated at `estimated_input` tokens, and which it `admitted`, or answered 429):
    /// usage corrects the budgets and the provider's estimates, limits hold its later
    /// calls, and a wait for a reported reset is lengthened by the draw `lengthen`.
    /// `None` for an unknown provider; else whether token estimates just became needed
    /// (the first token window a provider reported).
    pub(super) fn take_report(
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
    pub(super) fn new_hold(
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

    /// The provider's daily quota is spent: its items reject until `block.until`.
    pub(super) fn block_daily(&mut self, provider: u32, block: DailyBlock) {
        if let Some(provider) = self.providers.get(provider) {
            provider.state.borrow_mut().daily_block = Some(block);
        }
    }

    /// The daily block's error for items of `provider`, while it holds.
    pub(super) fn daily_blocked<C>(&self, provider: u32, now: Instant) -> Option<PacerFailure<C>> {
        let pacing = self.providers.get(provider)?.state.borrow();
        let block = pacing.daily_block.as_ref().filter(|b| b.until > now)?;
        let mut error = PacerFailure::new(ErrorCode::ProviderError, block.message.clone());
        error.status = Some(429);
        error.retry_in = block.reset_known.then(|| block.until.since(now));
        Some(error)
    }

    /// Whether `provider` can serve items now: no daily block, and no 429 pause with more
    /// than `wait` left (`fallbackAfterMs`).
    pub(super) fn can_serve(&self, provider: u32, now: Instant, wait: Duration) -> bool {
        let Some(provider) = self.providers.get(provider) else {
            return true;
        };
        let pacing = provider.state.borrow();
        let blocked = pacing.daily_block.as_ref().is_some_and(|b| b.until > now);
        !blocked && pacing.paused_until <= now + wait
    }

    /// The soonest end of a 429 pause this pacer set after `now` (as of the last
    /// `drop_stale`): the engine wakes then, as the provider can serve again. A pause
    /// another pacer of a shared budget set wakes this one only for its due batches
    /// (`Engine::poll_timeout` asks the gate of each).
    pub(super) fn next_pause_end(&self, now: Instant) -> Option<Instant> {
        let Reverse((until, _)) = self.pauses.peek()?;
        (*until > now).then_some(*until)
    }

    /// Drops the pause ends at the top that passed by `now` or that a longer pause
    /// replaced.
    pub(super) fn drop_stale(&mut self, now: Instant) {
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

    /// New options at `now`: rates, burst, adaptive rates and the token budget. Whether
    /// token estimates just became needed (a budget was set).
    pub(super) fn set_options(&mut self, now: Instant, next: &Options) -> bool {
        let had_estimates = self.wants_token_estimates();
        let mut own = Vec::new();
        for (index, provider) in self.providers.iter() {
            if next.provider_settings(&provider.id).is_some() || self.own(index).is_some() {
                own.push((index, provider.id.clone()));
            }
        }
        for (index, id) in own {
            self.set_own(index, next.provider_settings(&id), next, now);
        }
        self.bucket.set_rate(now, next.rate);
        self.bucket.set_capacity(now, next.capacity);
        self.shared_quota = next.shared_quota;
        for (_, provider) in self.providers.iter() {
            let mut pacing = provider.state.borrow_mut();
            let paused_until = pacing.paused_until;
            if !next.adaptive_rate {
                pacing.adaptive = None;
            } else if let Some(adaptive) = &mut pacing.adaptive {
                // At the new rate already: its burst is still earned back, not given.
                adaptive.rate_changed(now, next.rate, next.capacity, now.max(paused_until));
            }
        }
        let per_minute = next.tokens_per_minute;
        match &mut self.budget {
            Some(budget) if per_minute > 0.0 => budget.set_per_minute(now, per_minute),
            _ => self.budget = TokenBudget::new(per_minute, now),
        }
        !had_estimates && self.wants_token_estimates()
    }

    /// Most items the next call to `provider` may carry under `max` (its learned batch
    /// size, a probe of two included; `max` itself without `adaptiveBatching`).
    pub(super) fn call_limit(&self, provider: u32, max: u32, options: &Options) -> u32 {
        if !options.adaptive_batching {
            return max;
        }
        self.providers
            .get(provider)
            .map_or(max, |p| p.state.borrow().batch_limit.next_call_limit(max))
    }

    /// The correction of `provider`'s token estimates for its output bound.
    pub(super) fn input_ratio(&self, provider: u32) -> f64 {
        self.providers
            .get(provider)
            .map_or(1.0, |p| p.state.borrow().input_ratio.get())
    }

    /// The length of `provider`'s translations from `source` to `target` against their
    /// sources, once its proven replies showed it.
    pub(super) fn length_ratio(&self, provider: u32, source: &str, target: &str) -> Option<f64> {
        let p = self.providers.get(provider)?;
        let ratio = p.state.borrow().length_ratios.trusted(source, target);
        ratio
    }

    /// A proven translation by `provider` of `translated` characters for a source of
    /// `source_len`, from `source` to `target`.
    pub(super) fn learn_length(
        &self,
        provider: u32,
        (source, target): (&str, &str),
        source_len: f64,
        translated: f64,
    ) {
        if let Some(p) = self.providers.get(provider) {
            let mut pacing = p.state.borrow_mut();
            pacing
                .length_ratios
                .learn(source, target, source_len, translated);
        }
    }

    /// A call of `items` items to `provider` started (a probe at a limit of 1 is taken).
    pub(super) fn note_call(&self, provider: u32, items: usize) {
        if let Some(p) = self.providers.get(provider) {
            let mut pacing = p.state.borrow_mut();
            if items > 1 {
                pacing.batch_limit.on_batch();
            } else {
                pacing.batch_limit.on_single();
            }
        }
    }

    /// A batch reply from `provider` proved `proved` of its segments: its learned batch
    /// size under `max`, when that changed.
    pub(super) fn note_batch_reply(
        &self,
        provider: u32,
        proved: Proved,
        max: u32,
        options: &Options,
    ) -> Option<u32> {
        if !options.adaptive_batching {
            return None;
        }
        let p = self.providers.get(provider)?;
        let changed = p.state.borrow_mut().batch_limit.on_batch_reply(proved, max);
        changed
    }

    /// What a restarted pacer resumes from (see [`Pacer::restore`]).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn snapshot(&self, now: Instant, wall_ms: f64) -> Snapshot {
        // Pushes rather than a filtered `collect` (as for the texts of a batch): the
        // collect of an iterator of unknown length is much more code in the .wasm.
        let mut providers = Vec::new();
        for (index, provider) in self.providers.iter() {
            let p = provider.state.borrow();
            // A recovering provider is saved too, at the full rate (see `restore`).
            let adaptive = p.adaptive.as_ref();
            let daily_block =
                p.daily_block
                    .as_ref()
                    .filter(|b| b.until > now)
                    .map(|b| SavedDailyBlock {
                        blocked_for: b.until.since(now),
                        reset_known: b.reset_known,
                        message: b.message.clone(),
                    });
            let limits = p.quota.saved(now);
            let batch_limit = p.batch_limit.learned();
            let length_ratios = p.length_ratios.saved();
            let tokens = self.own(index).and_then(|o| o.bucket_tokens(now));
            if p.paused_until > now
                || tokens.is_some()
                || adaptive.is_some()
                || daily_block.is_some()
                || limits.is_some()
                || batch_limit.is_some()
                || !length_ratios.is_empty()
            {
                providers.push(ProviderSnapshot {
                    provider_id: provider.id.to_string(),
                    paused_for: p.paused_until.since(now),
                    adaptive_rate: adaptive.map(AdaptiveRate::rate),
                    adaptive_ceiling: adaptive.map_or(0.0, AdaptiveRate::ceiling),
                    daily_block,
                    limits,
                    batch_limit,
                    length_ratios,
                    tokens,
                });
            }
        }
        Snapshot {
            wall_time_ms: wall_ms,
            tokens: self.bucket.tokens(now),
            providers,
        }
    }

    /// Resumes from a snapshot taken `elapsed` ago: tokens earned meanwhile are added (up
    /// to `capacity`), what is left of each pause still holds, adaptive rates return.
    /// What the snapshot says is taken only as far as this pacer could have written it
    /// (a snapshot is stored data, and storage can be edited): a pause of at most
    /// [`MAX_RETRY_AFTER`] from the snapshot's time, a daily block of at most
    /// [`MAX_DAILY_BLOCK`] ([`UNKNOWN_DAILY_RESET`] without a known reset), an adaptive
    /// rate within its floor and `rate`, a ceiling of at most `rate`.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn restore(
        &mut self,
        snapshot: &Snapshot,
        elapsed: Duration,
        now: Instant,
        options: &Options,
    ) {
        let (rate, capacity) = (options.rate, options.capacity);
        let earned = elapsed.as_secs() * rate;
        self.bucket = TokenBucket::with_tokens(rate, capacity, snapshot.tokens + earned, now);
        for saved in &snapshot.providers {
            let index = self.provider_for(&saved.provider_id, now, options);
            if let (Some(tokens), Some(Some(own))) =
                (saved.tokens, self.own.get_mut(index as usize))
            {
                own.restore_bucket(tokens, elapsed, now);
            }
            let Some(provider) = self.providers.get(index) else {
                continue;
            };
            let mut provider = provider.state.borrow_mut();
            if let Some(block) = &saved.daily_block {
                let longest = match block.reset_known {
                    true => MAX_DAILY_BLOCK,
                    false => UNKNOWN_DAILY_RESET,
                };
                let blocked_for = block.blocked_for.min(longest);
                if blocked_for > elapsed {
                    provider.daily_block = Some(DailyBlock {
                        until: now + left_after(blocked_for, elapsed),
                        reset_known: block.reset_known,
                        message: block.message.clone(),
                    });
                }
            }
            let paused_for = saved.paused_for.min(MAX_RETRY_AFTER);
            if paused_for > elapsed {
                let until = now + left_after(paused_for, elapsed);
                provider.paused_until = until;
                provider.episode = provider.episode.wrapping_add(1);
                self.pauses.push(Reverse((until, index)));
            }
            if let Some(limits) = &saved.limits {
                // A restarted worker's first burst respects what the provider reported.
                provider.quota.restore(now, limits, elapsed);
            }
            if let Some(limit) = saved.batch_limit {
                provider.batch_limit = BatchLimit::restored(limit);
            }
            if !saved.length_ratios.is_empty() {
                provider.length_ratios = LengthRatios::restored(&saved.length_ratios);
            }
            let Some(adaptive_rate) = saved.adaptive_rate else {
                continue;
            };
            let ceiling = saved.adaptive_ceiling.min(rate);
            provider.adaptive = Some(if adaptive_rate < rate {
                // Never below the floor the pacer slows a provider to.
                let adaptive_rate = adaptive_rate.max(FLOOR.min(rate));
                let tokens = (elapsed.as_secs() * adaptive_rate).min(1.0);
                AdaptiveRate::restored(
                    adaptive_rate,
                    tokens,
                    ceiling,
                    now,
                    now.max(provider.paused_until),
                )
            } else {
                // Back at the full rate: the burst it earned before the restart is not
                // known, so it counts from an empty bucket, earning nothing while paused.
                let earning = elapsed.as_micros().saturating_sub(paused_for.as_micros());
                let tokens = Duration::from_micros(earning).as_secs() * rate;
                AdaptiveRate::recovering(
                    rate,
                    capacity,
                    tokens,
                    ceiling,
                    now.max(provider.paused_until),
                )
            });
        }
    }
}

/// What is left of a saved `span` once `elapsed` has passed (`span` is the longer).
fn left_after(span: Duration, elapsed: Duration) -> Duration {
    Duration::from_micros(span.as_micros() - elapsed.as_micros())
}
