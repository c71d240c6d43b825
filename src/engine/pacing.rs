//! Pacing: which due batch starts next (token bucket, `maxInFlight`, 429 pauses), and
//! each provider's own slowed-down rate after a 429 (rule 6) and its recovery.

use super::*;

/// Slowing a provider down after a 429 (rule 6).
#[derive(Debug)]
pub(crate) struct Adaptive {
    pub(super) bucket: TokenBucket,
    /// The rate that met the 429: growth slows down near it.
    pub(super) ceiling: f64,
    /// Back at the full rate, with the burst still to earn back: the bucket has the
    /// pacer's rate and capacity, started from the tokens it held. It is lifted once
    /// full, when it can no longer hold the provider back more than the pacer's bucket.
    pub(super) recovering: bool,
}

impl Adaptive {
    /// Back at `rate`, with the burst up to `capacity` still to earn back from `tokens`,
    /// earning from `from` on: a paused provider earns nothing until its pause ends.
    pub(super) fn recovering(
        rate: f64,
        capacity: f64,
        tokens: f64,
        ceiling: f64,
        from: Instant,
    ) -> Adaptive {
        Adaptive {
            bucket: TokenBucket::with_tokens(rate, capacity, tokens, from),
            ceiling,
            recovering: true,
        }
    }
}

/// A provider as this engine sees it: its due batches, and its pacing state, which
/// pacers that share a budget also share.
#[derive(Debug)]
pub(super) struct Provider {
    pub(super) id: Rc<str>,
    pub(super) ready: ReadySet<ReadyKey>,
    pub(super) pacing: Rc<RefCell<ProviderPacing>>,
}

/// What holds a provider back: its 429 pause, its adaptive rate, its spent daily quota
/// and the limits it reported. One per provider and budget: pacers that share a budget
/// (see [`crate::budget::SharedBudget`]) share this too.
#[derive(Debug, Default)]
pub struct ProviderPacing {
    pub(super) paused_until: Instant,
    pub(super) adaptive: Option<Adaptive>,
    /// Counts 429 episodes. A call remembers the count at its start; a 429 for a call
    /// that started before the current episode began belongs to that episode and does
    /// not slow the provider down again (a burst of 429s is one episode).
    pub(super) episode: u32,
    /// A spent daily quota: until `until`, every item for the provider rejects without
    /// a call.
    pub(super) daily_block: Option<DailyBlock>,
    /// Its cost model and the limits it reported.
    pub(super) quota: ProviderQuota,
}

/// Growth of an adaptive rate per success: quick back to 3/4 of the rate that met the
/// 429, then slow, so the provider converges just under its quota.
pub(super) const ADAPTIVE_FAST_GROWTH: f64 = 1.05;

pub(super) const ADAPTIVE_SLOW_GROWTH: f64 = 1.005;

pub(super) const ADAPTIVE_SLOW_ZONE: f64 = 0.75;

/// The lowest adaptive rate, in calls per second.
pub(super) const ADAPTIVE_FLOOR: f64 = 1.0 / 60.0;

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

    /// Starts as many calls as tokens, pauses and `maxInFlight` allow, best batch first.
    pub(super) fn pump(&mut self) {
        while !self.disposed && !self.at_call_limit() && self.has_request_token() {
            let now = self.now;
            let best = self
                .providers
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    let pacing = p.pacing.borrow();
                    pacing.paused_until <= now
                        && pacing
                            .adaptive
                            .as_ref()
                            .is_none_or(|a| a.bucket.has_token(now))
                })
                .filter_map(|(i, p)| p.ready.first().map(|k| (*k, i)))
                .filter(|(k, i)| {
                    self.quota_ready_at(&self.providers[*i], k.2)
                        .is_none_or(|at| at <= now)
                })
                .min();
            let Some((ready, index)) = best else {
                self.announce_holds();
                break;
            };
            // Items that reached a batch while the daily block held (after a store
            // lookup) reject without a call, like every other item for the provider.
            if let Some(error) = self.daily_blocked(index as u32) {
                self.fail_queued(ready.2, error);
                continue;
            }
            let capacity = self.options.capacity;
            let provider = &mut self.providers[index];
            provider.ready.remove(&ready);
            let mut pacing = provider.pacing.borrow_mut();
            if let Some(adaptive) = &mut pacing.adaptive {
                if adaptive.recovering && adaptive.bucket.tokens(now) >= capacity {
                    pacing.adaptive = None;
                } else {
                    adaptive.bucket.try_take(now);
                }
            }
            drop(pacing);
            self.bucket.try_take(now);
            if let Some(shared) = &self.shared {
                shared.take_request_token(now);
            }
            self.start(ready.2);
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
        if let Some(adaptive) = pacing.adaptive.as_mut().filter(|a| a.recovering) {
            // A burst is not earned while the provider is paused.
            let tokens = adaptive.bucket.tokens(now);
            let rate = adaptive.bucket.rate();
            *adaptive =
                Adaptive::recovering(rate, capacity, tokens, adaptive.ceiling, paused_until);
        }
        if run.episode != pacing.episode {
            return;
        }
        pacing.episode = pacing.episode.wrapping_add(1);
        if adaptive_on {
            let current = pacing.adaptive.as_ref().map_or(rate, |a| a.bucket.rate());
            // A floor of one call a minute: 429s that come whatever the rate (a flaky
            // gateway) must not halve it towards zero; Retry-After pauses cover the rest.
            let slower = (current / 2.0).max(ADAPTIVE_FLOOR.min(rate));
            pacing.adaptive = Some(Adaptive {
                bucket: TokenBucket::empty(slower, 1.0, now),
                ceiling: current,
                recovering: false,
            });
            self.out.events.push_back(Event::AdaptiveRate {
                provider_id: provider.id.clone(),
                rate: Some(slower),
            });
        }
    }

    pub(super) fn grow_adaptive_rate(&mut self, provider_index: u32) {
        let (now, rate, capacity) = (self.now, self.options.rate, self.options.capacity);
        let Some(provider) = self.providers.get(provider_index as usize) else {
            return;
        };
        let mut pacing = provider.pacing.borrow_mut();
        let Some(adaptive) = pacing.adaptive.as_mut().filter(|a| !a.recovering) else {
            return;
        };
        let current = adaptive.bucket.rate();
        let growth = if current < adaptive.ceiling * ADAPTIVE_SLOW_ZONE {
            ADAPTIVE_FAST_GROWTH
        } else {
            ADAPTIVE_SLOW_GROWTH
        };
        let next = current * growth;
        if next >= rate {
            // The full rate again, but not the full burst at once: the pacer's bucket
            // refills during a pause, and `capacity` calls started at one instant would
            // all meet a quota that counts per minute (a 429 for all but the first).
            let tokens = adaptive.bucket.tokens(now);
            *adaptive = Adaptive::recovering(rate, capacity, tokens, adaptive.ceiling, now);
            self.out.events.push_back(Event::AdaptiveRate {
                provider_id: provider.id.clone(),
                rate: None,
            });
        } else {
            adaptive.bucket.set_rate(now, next);
        }
    }

    pub(super) fn provider_id(&self, index: u32) -> Rc<str> {
        self.providers
            .get(index as usize)
            .map_or_else(|| Rc::from(""), |p| p.id.clone())
    }
}
