//! Dispatch: which due batch starts next (the `Pacer` part's gate, `maxInFlight`), and
//! what a 429 or an accepted call tells the `Pacer` of a provider's rate (the contract's
//! 429 pause, and the adaptive rate after it).

use super::batches::Batch;
use super::calls::Running;
use super::pools::Serving;
use super::runs::RunKey;
use super::Engine;
use crate::quota;
use crate::slab::Id;
use crate::stats::Event;
use crate::time::{Duration, Instant};

impl<C: Clone> Engine<C> {
    pub(super) fn at_call_limit(&self) -> bool {
        self.options.max_in_flight > 0 && self.calls.len() as u64 >= self.options.max_in_flight
    }

    /// Whether `provider`'s own `maxInFlight` calls are running: its calls wait for one
    /// to end (a call's end is an input, so no wake-up is needed).
    pub(super) fn provider_at_cap(&self, provider: u32) -> bool {
        let cap = self.pacer.own(provider).map_or(0, |o| o.max_in_flight());
        cap > 0 && self.calls.running_for(provider) >= cap
    }

    /// The raw estimate and the provider's cost of sending `batch` (0 when no estimates
    /// are needed), and its characters (for a character budget).
    pub(super) fn call_cost(&self, provider: u32, batch: Id<Batch>) -> (f64, f64, u64) {
        let Some(batch) = self.batches.get(batch) else {
            return (0.0, 0.0, 0);
        };
        if !self.pacer.wants_token_estimates() {
            return (0.0, 0.0, batch.chars());
        }
        let context = self
            .groups
            .get(batch.compat())
            .map_or(0.0, |g| quota::input_tokens(&g.info().context));
        let raw = quota::raw_cost(batch.tokens(), context, batch.jobs().len() > 1);
        (raw, self.pacer.cost(provider, raw), batch.chars())
    }

    /// When `batch`, due for `provider`, may start (`self.now` if it may now): the
    /// `Pacer`'s one gate for its cost, which `pump` asks before it starts a call and
    /// `poll_timeout` asks for the next wake-up.
    pub(super) fn ready_at(&self, provider: u32, batch: Id<Batch>) -> Instant {
        // A pool's batch: when its member can start it (`pools`).
        if let Some(at) = self.pool_ready_at(provider, batch) {
            return at;
        }
        let (_, cost, characters) = self.call_cost(provider, batch);
        self.pacer.ready_at(provider, (cost, characters), self.now)
    }

    /// Starts as many calls as tokens, pauses and `maxInFlight` allow, best batch first.
    /// One gate for a call: the best due batch is dealt first (a call takes the best
    /// items of its group's due batches), and the call so made is the one whose cost is
    /// checked against every budget that applies; a call that does not fit goes back in
    /// line and its provider waits.
    pub(super) fn pump(&mut self) {
        let mut held: Vec<u32> = Vec::new();
        while !self.disposed && !self.at_call_limit() && self.pacer.has_request_token(self.now) {
            let now = self.now;
            let best = (self.batches.due_providers())
                .filter(|(i, _)| !held.contains(i) && !self.provider_at_cap(*i))
                .filter(|(i, k)| self.ready_at(*i, k.batch) <= now)
                .map(|(i, k)| (k, i))
                .min();
            // A `pacer.run` ahead of every due batch in line (priority, then arrival).
            let ahead = |(run, _): &(RunKey, u32)| {
                best.is_none_or(|(b, _)| (run.priority, run.arrival) < (b.priority, b.arrival))
            };
            if let Some((RunKey { run, .. }, index)) = self.best_ready_run(&held).filter(ahead) {
                if !self.start_run(run, index) {
                    held.push(index);
                }
                continue;
            }
            let Some((ready, index)) = best else {
                self.announce_holds();
                break;
            };
            // Items that reached a batch while the daily block held (after a store
            // lookup) reject without a call, like every other item for the provider.
            if let Some(error) = self.pacer.daily_blocked(index, now) {
                if !self.move_to_fallback(ready.batch) {
                    self.fail(ready.batch, error);
                }
                continue;
            }
            // A pool's call goes to the member chosen now (`pools`).
            let Serving::Provider(serving) = self.serving(index, ready.batch) else {
                continue;
            };
            // Dealt, the call's batch is due in its provider's ready set until it starts.
            let call = self.deal(ready.batch);
            let call = self.within_batch_limit(serving, call);
            let cost = self.call_cost(serving, call);
            match self.pacer.try_take(serving, cost, now, &self.options) {
                Ok(charge) => self.send(call, serving, charge),
                Err(at) => {
                    // The dealt call may cost more than the batch first in line, and
                    // another batch may be first in line now: `poll_timeout`, which reads
                    // the first batch's cost, would not wake the engine for this one.
                    self.batches.hold(call, at);
                    held.push(index);
                }
            }
        }
    }

    /// The call's batch cut to what the provider's replies have shown it can carry
    /// (`adaptiveBatching`): the rest waits behind it, in its place in line.
    fn within_batch_limit(&mut self, provider: u32, call: Id<Batch>) -> Id<Batch> {
        let max = u32::try_from(self.batches.limits_for(provider).max_items).unwrap_or(u32::MAX);
        let limit = self.pacer.call_limit(provider, max, &self.options);
        let over = self
            .batches
            .get(call)
            .is_some_and(|b| b.jobs().len() > limit as usize);
        if !over {
            return call;
        }
        self.batches.split_off(call, limit as usize, &self.jobs)
    }

    /// A 429: pause every call to the provider, and slow it down once per 429 episode.
    pub(super) fn pause_provider(
        &mut self,
        run: &Running,
        pause: Duration,
        retry_after: Option<Duration>,
    ) {
        let Some(paused) =
            self.pacer
                .pause(run.provider(), run.charge(), pause, self.now, &self.options)
        else {
            return;
        };
        let provider_id = self.pacer.provider_id(run.provider());
        self.out.event(Event::RateLimited {
            provider_id: provider_id.clone(),
            retry_after,
            paused_for: pause,
        });
        if let Some(rate) = paused.slowed_to {
            self.out.event(Event::AdaptiveRate {
                provider_id,
                rate: Some(rate),
            });
        }
    }

    /// A call to the provider was accepted: its slowed rate grows back (see
    /// [`Pacer::grow`](super::pacer::Pacer::grow)).
    pub(super) fn grow_adaptive_rate(&mut self, run: &Running) {
        if self
            .pacer
            .grow(run.provider(), run.charge(), self.now, &self.options)
        {
            self.out.event(Event::AdaptiveRate {
                provider_id: self.pacer.provider_id(run.provider()),
                rate: None,
            });
        }
    }
}
