//! One budget for several pacers that send to the same account: a page pacer and a
//! subtitle pacer must not add up to twice the account's quota.
//!
//! Pacers that share a budget keep their own settings (each its own `rate`, `capacity`,
//! `tokensPerMinute`, batching and retries: a per-flow cap), and every call also takes
//! from the budget's request bucket and token budget (the account's quota). They share
//! each provider's pacing state too: a 429 met by one pauses the provider for both, its
//! adaptive rate, the limits it reported and a spent daily quota hold for both.
//!
//! Pacers sharing a budget must run on one clock (the default one, or the same `clock`
//! option): the budget's buckets are read at the time each pacer gives.

use std::cell::RefCell;
use std::rc::Rc;

use crate::bucket::TokenBucket;
use crate::provider::ProviderPacing;
use crate::quota::TokenBudget;
use crate::time::Instant;

/// A budget shared by pacers; cloning it gives another handle to the same budget.
#[derive(Clone, Debug)]
pub struct SharedBudget {
    state: Rc<RefCell<State>>,
}

#[derive(Debug)]
struct State {
    requests: TokenBucket,
    tokens: Option<TokenBudget>,
    /// Each provider's pacing state, by provider id.
    providers: Vec<(Rc<str>, Rc<RefCell<ProviderPacing>>)>,
}

impl SharedBudget {
    /// A budget of `rate` requests a second with bursts up to `capacity`, and
    /// `tokens_per_minute` tokens (0: no token limit); both start full.
    pub fn new(rate: f64, capacity: f64, tokens_per_minute: f64) -> SharedBudget {
        // Started full at the earliest instant, so it is full at whatever time the first
        // pacer reads it.
        let start = Instant::ZERO;
        SharedBudget {
            state: Rc::new(RefCell::new(State {
                requests: TokenBucket::full(rate, capacity, start),
                tokens: TokenBudget::new(tokens_per_minute, start),
                providers: Vec::new(),
            })),
        }
    }

    /// The pacing state of provider `id`, made on first use.
    pub(crate) fn provider(&self, id: &Rc<str>) -> Rc<RefCell<ProviderPacing>> {
        let mut state = self.state.borrow_mut();
        if let Some((_, pacing)) = state.providers.iter().find(|(known, _)| known == id) {
            return pacing.clone();
        }
        let pacing = Rc::<RefCell<ProviderPacing>>::default();
        state.providers.push((id.clone(), pacing.clone()));
        pacing
    }

    /// A pacer forgot provider `id`: its state goes too once no pacer holds it (the
    /// pacer found it holds nothing).
    pub(crate) fn release(&self, id: &str) {
        let mut state = self.state.borrow_mut();
        state
            .providers
            .retain(|(known, pacing)| &**known != id || Rc::strong_count(pacing) > 1);
    }

    /// Whether a request token is there.
    pub(crate) fn has_request_token(&self, now: Instant) -> bool {
        self.state.borrow().requests.has_token(now)
    }

    /// When a request token will be there.
    pub(crate) fn request_token_at(&self, now: Instant) -> Instant {
        self.state.borrow().requests.ready_at(now)
    }

    /// A call started: one request token.
    pub(crate) fn take_request_token(&self, now: Instant) {
        self.state.borrow_mut().requests.try_take(now);
    }

    /// When a call of `cost` tokens may start, if not now.
    pub(crate) fn tokens_ready_at(&self, now: Instant, cost: f64) -> Option<Instant> {
        let state = self.state.borrow();
        let budget = state.tokens.as_ref()?;
        Some(budget.ready_at(now, cost)).filter(|at| *at > now)
    }

    /// A call of `cost` tokens started.
    pub(crate) fn spend_tokens(&self, now: Instant, cost: f64) {
        if let Some(budget) = &mut self.state.borrow_mut().tokens {
            budget.spend(now, cost);
        }
    }

    /// The call charged `estimated` tokens really cost `actual`.
    pub(crate) fn correct_tokens(&self, now: Instant, estimated: f64, actual: f64) {
        if let Some(budget) = &mut self.state.borrow_mut().tokens {
            budget.correct(now, estimated, actual);
        }
    }

    /// Whether the budget counts tokens.
    pub(crate) fn counts_tokens(&self) -> bool {
        self.state.borrow().tokens.is_some()
    }
}
