//! Time passing, the engine's side: each part owns the deadlines of its own state (a
//! batch's window and backoff in `Batches`, a run's backoff in `Runs`, a call's timeout in `Calls`, a store lookup's
//! in `Store`, a 429 pause's end in `Pacer`) and answers `next_*` and `wake`/`expired`
//! itself; here they are merged, soonest first, and the engine acts on what ran out.

use super::calls::Running;
use super::Engine;
use crate::call::{CallId, Failure, FailureKind};
use crate::display::js_number;
use crate::stats::Event;
use crate::store::{LookupResult, LOOKUP_BOUND_WITHOUT_TIMEOUT};
use crate::time::{Duration, Instant};

/// The part whose deadline is soonest. At one instant, batches come first, then runs'
/// backoffs, then store lookups, then calls: the order these wake-ups have always fired in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Batch,
    Run,
    Lookup,
    Call,
}

impl<C: Clone> Engine<C> {
    /// The soonest deadline of a part (a pause's end aside: it only wakes the engine).
    fn next_deadline(&self) -> Option<(Instant, Due)> {
        let batch = self.batches.next_wakeup().map(|at| (at, Due::Batch));
        let store = self.store.as_ref().and_then(|s| s.next_deadline());
        let lookup = store.map(|at| (at, Due::Lookup));
        let call = self.calls.next_deadline().map(|at| (at, Due::Call));
        let run = self.runs.next_wakeup().map(|at| (at, Due::Run));
        [batch, run, lookup, call].into_iter().flatten().min()
    }

    /// The soonest instant the engine must wake at for a part's deadline.
    pub(super) fn next_wakeup(&self) -> Option<Instant> {
        let deadline = self.next_deadline().map(|(at, _)| at);
        let pause_end = self.pacer.next_pause_end(self.now);
        deadline.into_iter().chain(pause_end).min()
    }

    /// Drops the deadlines at the top of each part that no longer matter, so that
    /// `poll_timeout` never wakes anyone for nothing.
    pub(super) fn drop_stale_deadlines(&mut self) {
        self.batches.drop_stale();
        self.pacer.drop_stale(self.now);
        self.calls.drop_stale();
        if let Some(store) = &mut self.store {
            store.drop_stale();
        }
    }

    /// Lets time pass to `now`, acting on every deadline due by then, soonest first.
    pub(super) fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        loop {
            self.drop_stale_deadlines();
            let Some((_, due)) = self.next_deadline().filter(|(at, _)| *at <= self.now) else {
                break;
            };
            match due {
                Due::Batch => {
                    self.batches.wake(self.now);
                }
                Due::Run => self.runs.wake(self.now),
                Due::Lookup => {
                    if let Some(job) = self.store.as_mut().and_then(|s| s.expired(self.now)) {
                        let message = format!(
                            "the store did not answer within {} ms",
                            js_number(self.lookup_timeout().as_millis())
                        );
                        self.end_lookup(job, LookupResult::Failed(message));
                    }
                }
                Due::Call => {
                    if let Some((id, run)) = self.calls.expired(self.now) {
                        self.timed_out(id, run);
                    }
                }
            }
        }
    }

    /// Call `id` ran out of time: a failure of kind `timeout`.
    fn timed_out(&mut self, id: CallId, run: Running) {
        self.out.cancel(id);
        if (run.provider() as usize) < self.pacer.provider_bound() {
            self.out.event(Event::Timeout {
                provider_id: self.pacer.provider_id(run.provider()),
            });
        }
        // The call's own timeout: `setOptions` may have changed the options since.
        let timeout = run.timeout();
        let message = if run.stream().is_some() {
            let ms = js_number(timeout.between_values().map_or(0.0, Duration::as_millis));
            format!("provider stream sent no value for {ms} ms")
        } else {
            let ms = js_number(timeout.first().map_or(0.0, Duration::as_millis));
            format!("provider call timed out after {ms} ms")
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

    /// How long a store lookup may take: `timeoutMs`, or without one
    /// [`LOOKUP_BOUND_WITHOUT_TIMEOUT`]; then it is a miss.
    pub(super) fn lookup_timeout(&self) -> Duration {
        let timeout_ms = self.options.timeout_ms;
        if timeout_ms > 0.0 {
            Duration::from_millis(timeout_ms)
        } else {
            LOOKUP_BOUND_WITHOUT_TIMEOUT
        }
    }
}
