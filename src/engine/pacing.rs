//! Pacing: which due batch starts next (token bucket, `maxInFlight`, 429 pauses), and
//! each provider's own slowed-down rate after a 429 (rule 6) and its recovery.

use super::*;

/// A provider as this engine sees it: its id, and its pacing state, which pacers that
/// share a budget also share.
#[derive(Debug)]
pub(super) struct Provider {
    pub(super) id: Rc<str>,
    pub(super) pacing: Rc<RefCell<ProviderPacing>>,
}

impl<C: Clone> Engine<C> {
    pub(super) fn at_call_limit(&self) -> bool {
        self.options.max_in_flight > 0 && self.calls.len() as u64 >= self.options.max_in_flight
    }

    /// Whether a request token is there: the pacer's own, and its shared budget's.
    fn has_request_token(&self) -> bool {
        self.bucket.has_token(self.now)
            && self
                .shared
                .as_ref()
                .is_none_or(|b| b.has_request_token(self.now))
    }

    /// When a request token will be there.
    pub(super) fn request_token_at(&self) -> Instant {
        let own = self.bucket.ready_at(self.now);
        self.shared
            .as_ref()
            .map_or(own, |b| own.max(b.request_token_at(self.now)))
    }

    /// When `batch`, due for `provider`, may start (`self.now` if it may now): the one
    /// gate of a call, which `pump` asks before it starts one and `poll_timeout` asks for
    /// the next wake-up. A request token (the pacer's own and its shared budget's), no
    /// pause, the provider's adaptive rate, and room for the batch's cost in the token
    /// budgets and the windows the provider reported.
    pub(super) fn ready_at(&self, provider: &Provider, batch: Id<Batch>) -> Instant {
        let pacing = provider.pacing.borrow();
        // A pause another pacer of a shared budget set has no timer of this one's.
        let mut at = self.request_token_at().max(pacing.paused_until);
        if let Some(adaptive) = &pacing.adaptive {
            at = at.max(adaptive.ready_at(self.now));
        }
        drop(pacing);
        if let Some(quota_at) = self.quota_ready_at(provider, batch) {
            at = at.max(quota_at);
        }
        at
    }

    /// Starts as many calls as tokens, pauses and `maxInFlight` allow, best batch first.
    /// One gate for a call: the best due batch is dealt first (a call takes the best
    /// items of its group's due batches), and the call so made is the one whose cost is
    /// checked against every budget that applies; a call that does not fit goes back in
    /// line and its provider waits.
    pub(super) fn pump(&mut self) {
        let mut held: Vec<usize> = Vec::new();
        while !self.disposed && !self.at_call_limit() && self.has_request_token() {
            let now = self.now;
            let best = (0..self.providers.len())
                .filter(|i| !held.contains(i))
                .filter_map(|i| self.batches.first_ready(i as u32).map(|k| (k, i)))
                .filter(|(k, i)| self.ready_at(&self.providers[*i], k.2) <= now)
                .min();
            let Some((ready, index)) = best else {
                self.announce_holds();
                break;
            };
            // Items that reached a batch while the daily block held (after a store
            // lookup) reject without a call, like every other item for the provider.
            if let Some(error) = self.daily_blocked(index as u32) {
                self.fail(ready.2, error);
                continue;
            }
            // Dealt, the call's batch is due in its provider's ready set until it starts.
            let call = self.first_call(ready.2);
            if self.ready_at(&self.providers[index], call) > now {
                held.push(index);
                continue;
            }
            let capacity = self.options.capacity;
            let mut pacing = self.providers[index].pacing.borrow_mut();
            if pacing
                .adaptive
                .as_mut()
                .is_some_and(|a| a.take(now, capacity))
            {
                pacing.adaptive = None;
            }
            drop(pacing);
            self.bucket.try_take(now);
            if let Some(shared) = &self.shared {
                shared.take_request_token(now);
            }
            self.start(call);
        }
    }

    /// Rule 6: pause every call to the provider, and slow it down once per 429 episode.
    pub(super) fn pause_provider(
        &mut self,
        run: &Running,
        pause: Duration,
        retry_after: Option<Duration>,
    ) {
        let now = self.now;
        let adaptive_on = self.options.adaptive_rate;
        let (rate, capacity) = (self.options.rate, self.options.capacity);
        let Some(provider) = self.providers.get(run.provider as usize) else {
            return;
        };
        let mut pacing = provider.pacing.borrow_mut();
        let until = now + pause;
        if until > pacing.paused_until {
            pacing.paused_until = until;
            self.timers.push(until, Timer::PauseEnd(until));
        }
        self.out.events.push_back(Event::RateLimited {
            provider_id: provider.id.clone(),
            retry_after,
            paused_for: pause,
        });
        let paused_until = pacing.paused_until;
        if let Some(adaptive) = pacing.adaptive.as_mut() {
            adaptive.pause(now, capacity, paused_until);
        }
        if run.episode != pacing.episode {
            return;
        }
        pacing.episode = pacing.episode.wrapping_add(1);
        let accepted = std::mem::take(&mut pacing.accepted);
        if adaptive_on {
            let slowed = AdaptiveRate::after_429(
                pacing.adaptive.as_ref(),
                rate,
                accepted,
                now,
                paused_until,
            );
            self.out.events.push_back(Event::AdaptiveRate {
                provider_id: provider.id.clone(),
                rate: Some(slowed.rate()),
            });
            pacing.adaptive = Some(slowed);
        }
    }

    /// A call to the provider was accepted: its slowed rate grows back (see
    /// [`AdaptiveRate::grow`]). A call that started before the current 429 episode says
    /// nothing of the rate since: like its 429 would, its success belongs to the past.
    pub(super) fn grow_adaptive_rate(&mut self, run: &Running) {
        let (now, rate, capacity) = (self.now, self.options.rate, self.options.capacity);
        let Some(provider) = self.providers.get(run.provider as usize) else {
            return;
        };
        let mut pacing = provider.pacing.borrow_mut();
        if run.episode != pacing.episode {
            return;
        }
        let Some(adaptive) = pacing.adaptive.as_mut() else {
            pacing.accepted = pacing.accepted.saturating_add(1);
            return;
        };
        if adaptive.grow(now, rate, capacity) == Growth::Full {
            self.out.events.push_back(Event::AdaptiveRate {
                provider_id: provider.id.clone(),
                rate: None,
            });
        }
    }

    pub(super) fn provider_id(&self, index: u32) -> Rc<str> {
        self.providers
            .get(index as usize)
            .map_or_else(|| Rc::from(""), |p| p.id.clone())
    }
}
