//! Wake-ups: one heap of timers (batch due, backoff over, call deadline, store lookup
//! deadline, pause end), each checked for liveness when it fires.

use core::cmp::Reverse;
use std::collections::BinaryHeap;

use super::batches::{Batch, State};
use super::calls::Running;
use super::{Engine, Job};
use crate::call::{CallId, Failure, FailureKind};
use crate::display::js_number;
use crate::slab::Id;
use crate::stats::Event;
use crate::store::LookupResult;
use crate::time::{Duration, Instant};

/// What a wake-up is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    /// A collecting batch's window closes.
    Due(Id<Batch>),
    /// A store lookup runs out of time.
    Lookup(Id<Job>),
    /// A batch's retry backoff is over.
    Backoff(Id<Batch>),
    /// A call runs out of time.
    Deadline(CallId),
    /// A provider's 429 pause that ends at this instant ends.
    PauseEnd(Instant),
}

/// Every pending wake-up, soonest first. A timer whose reason went away (the batch was
/// sent, the call answered) stays until it reaches the top, where `drop_dead` removes it
/// so that `poll_timeout` never wakes anyone for nothing.
#[derive(Debug, Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, Timer)>>,
}

impl Timers {
    /// Wakes the engine at `at` for `timer`.
    pub(super) fn push(&mut self, at: Instant, timer: Timer) {
        self.heap.push(Reverse((at, timer)));
    }

    /// The soonest wake-up.
    pub(super) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// Whether `timer` is pending.
    #[cfg(any(test, feature = "check"))]
    pub(super) fn contains(&self, timer: Timer) -> bool {
        self.heap.iter().any(|Reverse((_, t))| *t == timer)
    }

    /// The soonest timer if it is due at `now`, taken off the heap.
    fn pop_due(&mut self, now: Instant) -> Option<Timer> {
        let &Reverse((at, timer)) = self.heap.peek()?;
        (at <= now).then(|| {
            self.heap.pop();
            timer
        })
    }

    /// Removes timers from the top while `live` says they no longer matter.
    fn drop_dead(&mut self, live: impl Fn(Timer) -> bool) {
        while let Some(&Reverse((_, timer))) = self.heap.peek() {
            if live(timer) {
                break;
            }
            self.heap.pop();
        }
    }
}

impl<C: Clone> Engine<C> {
    /// Whether `timer` still has a reason to fire.
    fn timer_live(&self, timer: Timer) -> bool {
        match timer {
            Timer::Due(key) => self
                .batches
                .get(key)
                .is_some_and(|b| b.state() == State::Collecting),
            Timer::Backoff(key) => self
                .batches
                .get(key)
                .is_some_and(|b| matches!(b.state(), State::Backoff(_))),
            Timer::Deadline(id) => self.calls.contains(id),
            Timer::Lookup(job) => self
                .store
                .as_ref()
                .is_some_and(|s| s.pending(job).is_some()),
            // A pause made longer has a timer of its own: the shorter one's end is no
            // longer anyone's.
            Timer::PauseEnd(until) => self.pacer.pause_ends_at(until),
        }
    }

    /// Drops the timers at the top of the heap that no longer matter.
    pub(super) fn drop_dead_timers(&mut self) {
        let mut timers = core::mem::take(&mut self.timers);
        timers.drop_dead(|timer| self.timer_live(timer));
        self.timers = timers;
    }

    /// Lets time pass to `now`, firing every timer due by then.
    pub(super) fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        while let Some(timer) = self.timers.pop_due(self.now) {
            if !self.timer_live(timer) {
                continue;
            }
            match timer {
                Timer::Due(key) => self.batches.window_closed(key, self.now),
                Timer::Backoff(key) => self.batches.backoff_over(key, self.now),
                Timer::Deadline(id) => {
                    let deadline = self.calls.get(id).and_then(Running::deadline);
                    if let Some(later) = deadline.filter(|d| *d > self.now) {
                        // A stream value moved the deadline on since this timer was set.
                        self.timers.push(later, Timer::Deadline(id));
                        continue;
                    }
                    let expired = deadline.is_some();
                    if let Some(run) = expired.then(|| self.calls.remove(id)).flatten() {
                        self.out.cancel(id);
                        if (run.provider() as usize) < self.pacer.provider_count() {
                            self.out.event(Event::Timeout {
                                provider_id: self.pacer.provider_id(run.provider()),
                            });
                        }
                        // The call's own timeout: `setOptions` may have changed the option since.
                        let timeout_ms = js_number(run.timeout().map_or(0.0, Duration::as_millis));
                        let message = if run.stream().is_some() {
                            format!("provider stream sent no value for {timeout_ms} ms")
                        } else {
                            format!("provider call timed out after {timeout_ms} ms")
                        };
                        let failure = Failure {
                            kind: FailureKind::Timeout,
                            status: None,
                            retry_after: None,
                            message,
                            cause: None,
                            limits: Default::default(),
                            quota: None,
                            retryable: None,
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
                Timer::PauseEnd(_) => {}
            }
        }
    }

    pub(super) fn call_timeout(&self) -> Option<Duration> {
        (self.options.timeout_ms > 0.0).then(|| Duration::from_millis(self.options.timeout_ms))
    }
}
