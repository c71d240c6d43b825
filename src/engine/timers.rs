//! Wake-ups: one heap of timers (batch due, backoff over, call deadline, store lookup
//! deadline, pause end), each checked for liveness when it fires.

use super::*;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    Due(Key),
    Lookup(Key),
    Backoff(Key),
    Deadline(CallId),
    PauseEnd,
}

impl<C: Clone> Engine<C> {
    // ----- internals -----

    pub(super) fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        while let Some(&Reverse((at, timer))) = self.timers.peek() {
            if at > self.now {
                break;
            }
            self.timers.pop();
            match timer {
                Timer::Due(key) => {
                    let due = self.batches.get(key).is_some_and(|b| {
                        b.state == State::Collecting && b.due_at(&self.limits) <= self.now
                    });
                    if due {
                        self.make_ready(key);
                    }
                }
                Timer::Backoff(key) => {
                    let over = self.batches.get(key).is_some_and(
                        |b| matches!(b.state, State::Backoff(until) if until <= self.now),
                    );
                    if over {
                        self.make_ready(key);
                    }
                }
                Timer::Deadline(id) => {
                    let expired = self
                        .running
                        .get(id)
                        .is_some_and(|r| r.deadline.is_some_and(|d| d <= self.now));
                    if let Some(run) = expired.then(|| self.running.remove(id)).flatten() {
                        self.cancels.push_back(id);
                        if let Some(p) = self.providers.get(run.provider as usize) {
                            self.events.push_back(Event::Timeout {
                                provider_id: p.id.clone(),
                            });
                        }
                        // The call's own timeout: `setOptions` may have changed the option since.
                        let timeout_ms = run.timeout.map_or(0.0, Duration::as_millis);
                        let failure = Failure {
                            kind: FailureKind::Timeout,
                            status: None,
                            retry_after: None,
                            message: format!(
                                "provider call timed out after {} ms",
                                js_number(timeout_ms)
                            ),
                            cause: None,
                            limits: Default::default(),
                            quota: None,
                        };
                        self.on_failure(run, failure);
                    }
                }
                Timer::Lookup(job) => {
                    let expired = self
                        .store
                        .as_ref()
                        .and_then(|s| s.pending(job))
                        .is_some_and(|p| p.deadline.is_some_and(|d| d <= self.now));
                    if expired {
                        let message = "the store did not answer within timeoutMs".to_owned();
                        self.end_lookup(job, LookupResult::Failed(message));
                    }
                }
                Timer::PauseEnd => {}
            }
        }
    }

    pub(super) fn call_timeout(&self) -> Option<Duration> {
        (self.options.timeout_ms > 0.0).then(|| Duration::from_millis(self.options.timeout_ms))
    }
}
