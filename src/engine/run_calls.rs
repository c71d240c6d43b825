//! `pacer.run`: a provider call that is not a translation (a page summary, a glossary
//! lookup), paced under the rules of its provider's translation calls. It waits in the
//! provider's line by priority and arrival (`Runs`), starts through the `Pacer`'s one gate
//! (a request token, the provider's pause, adaptive rate and reported limits, the
//! budgets, `maxInFlight`), and its failures are read as a call's: a 429 pauses the
//! provider for every call, network errors and timeouts are retried with backoff, a
//! settings, billing or daily-quota error blocks the provider. It never moves to a
//! fallback provider: its function is the caller's, written for that provider.
//!
//! Its cost in tokens is 0: the pacer never sees what it sends, and its value, which the
//! driver keeps, is never read. So it waits for the token budgets only while they are
//! in debt, and for the provider's reported token room only when that is spent.

use crate::call_timeout::CallTimeout;
use std::rc::Rc;

use super::calls::Running;
use super::outbox::Counter;
use super::priority::Priority;
use super::retries::final_error;
use super::runs::{Run, RunState};
use super::tries::Try;
use super::Engine;
use crate::call::{Call, CallId, CompatInfo, Failure, FailureKind, Layout, Quota};
use crate::item::{disposed_error, invalid_input};
use crate::options::OptionValue;
use crate::retry::{backoff, classify, FailureClass, MAX_RETRY_AFTER};
use crate::settle::{ErrorCode, PacerFailure, Ticket};
use crate::slab::Id;
use crate::stats::{BlockReason, Event, RetryReason};
use crate::time::{Duration, Instant};

/// The error of a run aborted by its signal.
pub fn run_aborted<C>() -> PacerFailure<C> {
    PacerFailure::new(ErrorCode::Aborted, "the run was aborted")
}

impl<C: Clone> Engine<C> {
    /// Accepts a run for `provider_id` (see [`Engine::handle_run`]).
    pub(super) fn accept_run(
        &mut self,
        now: Instant,
        provider_id: &str,
        priority: f64,
    ) -> Result<Ticket, PacerFailure<C>> {
        if !self.disposed {
            if provider_id.is_empty() {
                let got = OptionValue::Text(String::new());
                return Err(invalid_input("providerId", "a non-empty string", &got));
            }
            // A pool's calls go to the member chosen when each starts, and `fn` would not
            // know which key to use: a run names the member it calls.
            if self.options.pools.members(provider_id).is_some() {
                let got = OptionValue::Text(provider_id.to_string());
                let rule = "a provider, not a pool (a run calls one of its members by name)";
                return Err(invalid_input("providerId", rule, &got));
            }
            if !priority.is_finite() {
                let got = OptionValue::Number(priority);
                return Err(invalid_input("priority", "a finite number", &got));
            }
        }
        self.advance(now);
        let ticket = self.jobs.counted_ticket();
        if self.disposed {
            self.out.settle_run(ticket, Err(disposed_error()));
            return Ok(ticket);
        }
        let provider = self
            .pacer
            .provider_for(provider_id, self.now, &self.options);
        if let Some(error) = self.pacer.daily_blocked(provider, self.now) {
            self.out.settle_run(ticket, Err(error));
            return Ok(ticket);
        }
        let seq = self.jobs.next_seq();
        self.runs
            .add(ticket, provider, Priority::new(priority), seq);
        self.after_input();
        Ok(ticket)
    }

    /// The best queued run whose provider's gate is open now, with its place in line
    /// and its provider (`held`: providers not to try again in this round).
    pub(super) fn best_ready_run(&self, held: &[u32]) -> Option<(super::runs::RunKey, u32)> {
        let now = self.now;
        (self.runs.queued())
            .filter(|(provider, _)| !held.contains(provider))
            .filter(|(provider, _)| !self.provider_at_cap(*provider))
            .filter(|(provider, _)| self.pacer.ready_at(*provider, (0.0, 0), now) <= now)
            .map(|(provider, key)| (key, provider))
            .min()
    }

    /// The soonest instant after now when a queued run may start.
    pub(super) fn next_run_start(&self) -> Option<Instant> {
        let now = self.now;
        (self.runs.queued())
            .filter(|(provider, _)| !self.provider_at_cap(*provider))
            .map(|(provider, _)| self.pacer.ready_at(provider, (0.0, 0), now))
            .filter(|at| *at > now)
            .min()
    }

    /// Starts the call of run `id` to `provider` if the gate lets it (whether it did, or
    /// the run ended at once on a daily block).
    pub(super) fn start_run(&mut self, id: Id<Run>, provider: u32) -> bool {
        let now = self.now;
        if let Some(error) = self.pacer.daily_blocked(provider, now) {
            self.end_run(id, Err(error));
            return true;
        }
        let Ok(charge) = self
            .pacer
            .try_take(provider, (0.0, 0.0, 0), now, &self.options)
        else {
            return false;
        };
        let Some(ticket) = self.runs.get(id).map(Run::ticket) else {
            return true;
        };
        // A run sends no text the pacer can count: its timeout is `timeoutMs` alone.
        let own = self.pacer.own_settings(provider);
        let timeout = CallTimeout::new(&self.options, own, 0);
        let call_id = self
            .calls
            .insert_new(Running::for_run(id, provider, charge, timeout, now));
        let attempt = self.runs.start(id, call_id);
        self.out.count(Counter::ProviderCalls, 1);
        (self.out)
            .provider_stats(provider, self.pacer.provider_id(provider))
            .calls += 1;
        self.out.count(Counter::Retries, u64::from(attempt > 0));
        let compat = Rc::new(CompatInfo {
            provider_id: self.pacer.provider_id(provider).to_string(),
            source_lang: String::new(),
            target_lang: String::new(),
            context: String::new(),
            llm: false,
            scope: String::new(),
            fallback_from: None,
            pool_id: None,
        });
        let (ids, instructions) = (self.calls.strings().ids(0), self.calls.strings().none());
        self.out.call(Call {
            id: call_id,
            texts: Vec::new(),
            items: Vec::new(),
            text: String::new(),
            ids,
            layout: Layout::Single,
            instructions,
            is_batch: false,
            compat,
            attempt,
            timeout: timeout.first(),
            max_output_tokens: 0,
            reply_cap: 0,
            run: Some(ticket),
        });
        true
    }

    /// The ticket of the run whose call `id` is running.
    pub(super) fn run_ticket_of_call(&self, id: CallId) -> Option<Ticket> {
        let run = self.calls.get(id)?.serves_run()?;
        self.runs.get(run).map(Run::ticket)
    }

    /// Run `id` ends with `result`.
    fn end_run(&mut self, id: Id<Run>, result: Result<String, PacerFailure<C>>) {
        if let Some(run) = self.runs.remove(id) {
            self.out.settle_run(run.ticket(), result);
        }
    }

    /// The call of run `id` answered: whatever its value (which the driver keeps), the
    /// run succeeded.
    pub(super) fn run_succeeded(&mut self, call: Running, id: Id<Run>) {
        self.grow_adaptive_rate(&call);
        self.end_run(id, Ok(String::new()));
    }

    /// The call of run `id` failed: read as a batch's call failure is (see
    /// `Engine::on_failure`), with the run's own tries; a run is never split nor moved.
    pub(super) fn run_failed(&mut self, call: Running, id: Id<Run>, failure: Failure<C>) {
        let class = match failure.kind {
            FailureKind::Error => classify(failure.status),
            FailureKind::BadReply | FailureKind::Timeout => FailureClass::Transient,
        };
        let too_long = failure.retry_after.is_some_and(|r| r > MAX_RETRY_AFTER);
        if failure.kind == FailureKind::Error {
            let reason = match (failure.quota, failure.status) {
                (Some(Quota::Billing), _) => Some(BlockReason::Billing),
                (_, Some(401 | 403 | 404)) => Some(BlockReason::Settings),
                (Some(Quota::Daily), _) => Some(BlockReason::Daily),
                (_, Some(429)) if too_long => Some(BlockReason::Daily),
                _ => None,
            };
            if let Some(reason) = reason {
                if class == FailureClass::RateLimited {
                    self.out.count(Counter::RateLimited, 1);
                }
                // Ends this run too, with the block's error.
                self.block_provider(call, failure, reason);
                return;
            }
        }
        if failure.retryable == Some(false) {
            if class == FailureClass::RateLimited {
                self.out.count(Counter::RateLimited, 1);
                let pause = self
                    .retry_after_wait(&failure)
                    .unwrap_or_else(|| self.base_delay());
                self.pause_provider(&call, pause.min(MAX_RETRY_AFTER), failure.retry_after);
            }
            return self.end_run(id, Err(final_error(failure, false)));
        }
        match class {
            FailureClass::RateLimited => {
                self.out.count(Counter::RateLimited, 1);
                let tries = self.runs.count_try(id, Try::RateLimit);
                let delay = self.retry_after_wait(&failure).unwrap_or_else(|| {
                    backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter)
                });
                // The provider is over its quota whether or not this run may retry.
                self.pause_provider(&call, delay, failure.retry_after);
                if u64::from(tries) > self.options.max_rate_limit_retries {
                    self.end_run(id, Err(final_error(failure, false)));
                } else {
                    self.retry_run(id, Duration::ZERO, RetryReason::RateLimited);
                }
            }
            FailureClass::Transient => {
                let tries = self.runs.count_try(id, Try::Error);
                if too_long || u64::from(tries) > self.options.max_retries {
                    return self.end_run(id, Err(final_error(failure, too_long)));
                }
                let delay = self.retry_after_wait(&failure).unwrap_or_else(|| {
                    backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter)
                });
                self.retry_run(id, delay, RetryReason::Error);
            }
            FailureClass::Final => self.end_run(id, Err(final_error(failure, false))),
        }
    }

    /// Run `id` goes out again after `delay` (and a token, as every call).
    fn retry_run(&mut self, id: Id<Run>, delay: Duration, reason: RetryReason) {
        let Some(run) = self.runs.get(id) else {
            return;
        };
        let (attempt, provider) = (run.attempts(), run.provider());
        let until = (delay > Duration::ZERO).then(|| self.now + delay);
        self.runs.retry(id, until);
        self.out.event(Event::Retry {
            provider_id: self.pacer.provider_id(provider),
            reason,
            attempt,
            delay,
        });
    }

    /// A block of `provider` (settings, billing, a daily quota): the run of the call that
    /// met it (`own`), and every run waiting for the provider, end with its error.
    pub(super) fn fail_runs_of(
        &mut self,
        provider: u32,
        own: Option<Id<Run>>,
        error: &PacerFailure<C>,
    ) {
        let waiting = self.runs.waiting_for(provider);
        for id in own.into_iter().chain(waiting) {
            self.end_run(id, Err(error.clone()));
        }
    }

    /// The run of `ticket` was aborted by its signal: it rejects `aborted` now; a running
    /// call of it is cancelled (its signal aborted, its answer ignored).
    pub(super) fn abort_run(&mut self, ticket: Ticket) {
        let Some(id) = self.runs.of_ticket(ticket) else {
            return;
        };
        if let Some(RunState::Running(call)) = self.runs.get(id).map(Run::state) {
            self.calls.remove(call);
            self.out.cancel(call);
        }
        self.end_run(id, Err(run_aborted()));
    }

    /// Dispose: every run rejects `disposed`.
    pub(super) fn dispose_runs(&mut self) {
        for ticket in self.runs.clear() {
            self.out.settle_run(ticket, Err(disposed_error()));
        }
    }
}
