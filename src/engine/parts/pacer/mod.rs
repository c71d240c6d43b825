//! The `Pacer` part: the request bucket, the token budget, the budget shared with other
//! pacers, and each provider's pacing state (its 429 pause and episode, adaptive rate,
//! reported limits, daily block).
//!
//! It keeps "a call starts only when every budget that applies holds it, and a call that
//! starts is charged to all of them": one gate, [`Pacer::ready_at`], which dispatch asks
//! before a call and `poll_timeout` asks for the next wake-up, and one charge,
//! [`Pacer::try_take`], which asks the gate itself: a charge without its check does not
//! compile outside `gate.rs`. A provider's pacing state is behind an `Rc<RefCell<…>>`
//! because the pacers of a shared budget share it; no borrow of it leaves this module.
//!
//! Here: the part's state, its options and whether items need token estimates.
//! `providers` is the index of providers and their own limits, `gate` the gate and the
//! charge, `pauses` a provider's 429 pauses and daily block, `reports` the usage and
//! limits a provider reports, `learned` what the pacer learns of a provider's replies,
//! `snapshot` the save and the restore.

use core::cmp::Reverse;
use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::rc::Rc;

use super::provider_table::ProviderTable;
use crate::bucket::TokenBucket;
use crate::budget::SharedBudget;
use crate::options::Options;
use crate::provider::ProviderPacing;
use crate::provider_limits::ProviderLimits;
use crate::quota::TokenBudget;
use crate::time::Instant;

mod gate;
mod learned;
mod pauses;
mod providers;
mod reports;
mod snapshot;

/// What a started call was charged, handed back when its answer reports what it cost.
#[derive(Copy, Clone, Debug, Default)]
pub(in crate::engine) struct Charge {
    /// Its estimated cost before and after the provider's scaling (0 without estimates).
    raw_cost: f64,
    cost: f64,
    /// Its place among the calls to its provider, for the limits the provider reports.
    quota_ticket: u64,
    /// The provider's 429 episode when the call started.
    episode: u32,
    /// When it started, and whether it was charged to its provider's own limits.
    pub(in crate::engine) at: Instant,
    pub(in crate::engine) own: bool,
}

/// What a 429 changed: the slowed rate if this 429 began a new episode.
#[derive(Copy, Clone, Debug)]
pub(in crate::engine) struct Paused {
    pub(in crate::engine) slowed_to: Option<f64>,
}

/// The budgets a call must fit, and the providers' pacing state by provider index.
#[derive(Debug)]
pub(in crate::engine) struct Pacer {
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
    pub(in crate::engine) fn new(options: &Options, now: Instant, seed: u64) -> Self {
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
    pub(in crate::engine) fn share(&mut self, budget: SharedBudget) {
        self.shared = Some(budget);
    }

    /// Whether items need token estimates (a token budget, a provider that reports its
    /// token window, or a shared budget that counts tokens).
    pub(in crate::engine) fn wants_token_estimates(&self) -> bool {
        self.budget.is_some()
            || self.token_windows
            || self.own_tokens
            || self
                .shared
                .as_ref()
                .is_some_and(SharedBudget::counts_tokens)
    }

    /// New options at `now`: rates, burst, adaptive rates and the token budget. Whether
    /// token estimates just became needed (a budget was set).
    pub(in crate::engine) fn set_options(&mut self, now: Instant, next: &Options) -> bool {
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
}
