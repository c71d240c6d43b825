//! Failed calls: which are retried and after how long (backoff, Retry-After, 429s on
//! their own budget), a 413 split in halves, a batch sent one by one, final errors.

use super::batches::Batch;
use super::calls::Running;
use super::outbox::Counter;
use super::tries::Try;
use super::Engine;
use crate::call::{Failure, FailureKind, Quota};
use crate::retry::{backoff, classify, lengthening, FailureClass, MAX_RETRY_AFTER};
use crate::settle::{ErrorCode, PacerFailure};
use crate::slab::Id;
use crate::stats::{BlockReason, Event, RetryReason};
use crate::time::Duration;

/// The error an item ends with when its call failed for good.
pub(super) fn final_error<C>(failure: Failure<C>, retry_after_too_long: bool) -> PacerFailure<C> {
    let code = if failure.kind == FailureKind::Timeout {
        ErrorCode::Timeout
    } else {
        ErrorCode::ProviderError
    };
    let mut message = match failure.status {
        Some(status) => format!("provider failed with status {status}"),
        None => String::from("provider failed"),
    };
    if retry_after_too_long {
        message.push_str(" and asked to wait more than 5 minutes (a daily quota?)");
    }
    if !failure.message.is_empty() {
        message.push_str(": ");
        message.push_str(&failure.message);
    }
    if code == ErrorCode::Timeout {
        message = failure.message;
    }
    PacerFailure {
        code,
        message,
        status: failure.status,
        cause: failure.cause,
        retry_in: None,
        option: None,
    }
}

impl<C: Clone> Engine<C> {
    pub(super) fn on_failure(&mut self, run: Running, failure: Failure<C>) {
        if let Some(id) = run.serves_run() {
            return self.run_failed(run, id, failure);
        }
        if self.resolved_before_failure(&run) {
            return;
        }
        let class = match failure.kind {
            FailureKind::Error => classify(failure.status),
            FailureKind::BadReply | FailureKind::Timeout => FailureClass::Transient,
        };
        let too_long = failure.retry_after.is_some_and(|r| r > MAX_RETRY_AFTER);
        let final_by_provider = failure.retryable == Some(false);
        if failure.status == Some(413) && !final_by_provider && self.split_in_halves(run.batch()) {
            return;
        }
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
                self.block_provider(run, failure, reason);
                return;
            }
        }
        if final_by_provider {
            self.not_retryable(run, failure, class);
            return;
        }
        if self.batches.get(run.batch()).is_none() {
            return;
        }
        match class {
            FailureClass::RateLimited => {
                self.out.count(Counter::RateLimited, 1);
                let tries = self
                    .batches
                    .count_try(run.batch(), Try::RateLimit)
                    .unwrap_or(1);
                if too_long {
                    // A daily quota: pausing every queued item for hours would only hide it.
                    self.fail(run.batch(), final_error(failure, true));
                    return;
                }
                let delay = self.retry_after_wait(&failure).unwrap_or_else(|| {
                    backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter)
                });
                // The provider is over its quota whether or not this call may retry.
                self.pause_provider(&run, delay, failure.retry_after);
                // A long pause: its items, and the provider's queued ones, go on with
                // its fallback provider (new ones too, while the pause lasts).
                let long = delay > Duration::from_millis(self.options.fallback_after_ms);
                // A pool's items retry with another member instead (`pools`).
                let pooled = self.elsewhere_in_pool(&run);
                if long && !pooled {
                    self.pool_held(&run);
                }
                if long && !pooled && self.move_provider_items(run.batch(), run.provider()) {
                    return;
                }
                if u64::from(tries) > self.options.max_rate_limit_retries {
                    self.fail(run.batch(), final_error(failure, false));
                } else {
                    self.retry_after(run.batch(), Duration::ZERO, RetryReason::RateLimited);
                }
            }
            FailureClass::Transient => {
                let tries = self.batches.count_try(run.batch(), Try::Error).unwrap_or(1);
                if too_long || u64::from(tries) > self.options.max_retries {
                    // Failed for good here: its items may still be served elsewhere, by
                    // another member of their pool first.
                    if !too_long && self.retries_spent_in_pool(&run) {
                        return;
                    }
                    if !too_long && self.move_to_fallback(run.batch()) {
                        return;
                    }
                    self.fail(run.batch(), final_error(failure, too_long));
                    return;
                }
                let delay = self.retry_after_wait(&failure).unwrap_or_else(|| {
                    backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter)
                });
                self.retry_after(run.batch(), delay, RetryReason::Error);
            }
            FailureClass::Final => self.fail(run.batch(), final_error(failure, false)),
        }
    }

    /// The provider said the same request will fail again (`retryable: false`): it is
    /// not retried. A batch's items are worth one call each alone (one paragraph may be
    /// what the provider refuses), with `fallbackToIndividual`; a single item rejects.
    /// A 429 still pauses and slows the provider down: it is over its quota all the same.
    fn not_retryable(&mut self, run: Running, failure: Failure<C>, class: FailureClass) {
        if class == FailureClass::RateLimited {
            self.out.count(Counter::RateLimited, 1);
            let pause = self
                .retry_after_wait(&failure)
                .unwrap_or_else(|| self.base_delay());
            self.pause_provider(&run, pause.min(MAX_RETRY_AFTER), failure.retry_after);
        }
        let items = self.batches.get(run.batch()).map_or(0, |b| b.jobs().len());
        if items > 1 && self.options.fallback_to_individual {
            self.fall_back(run.batch());
        } else {
            self.fail(run.batch(), final_error(failure, false));
        }
    }

    /// The provider's Retry-After, lengthened by a random 0–10% (at least 0–250 ms) with
    /// `sharedQuota`: clients that met the same 429 then do not all call again at one
    /// instant. Never shortened.
    pub(super) fn retry_after_wait(&mut self, failure: &Failure<C>) -> Option<Duration> {
        let wait = failure.retry_after?;
        Some(wait + lengthening(wait, self.lengthen_draw()))
    }

    /// A draw in [0, 1) for lengthening a wait that ends at a Retry-After or a reported
    /// reset; 0 (no lengthening) without `sharedQuota`.
    pub(super) fn lengthen_draw(&mut self) -> f64 {
        if self.options.shared_quota {
            self.jitter.next_unit()
        } else {
            0.0
        }
    }

    pub(super) fn base_delay(&self) -> Duration {
        Duration::from_millis(self.options.base_retry_delay_ms)
    }

    /// Sends the batch again after `delay` (and a token: a retry's delay never lets it
    /// past the bucket).
    pub(super) fn retry_after(
        &mut self,
        batch_key: Id<Batch>,
        delay: Duration,
        reason: RetryReason,
    ) {
        let now = self.now;
        if !self.drop_unwaited(batch_key) {
            return;
        }
        let Some(batch) = self.batches.get(batch_key) else {
            return;
        };
        let (attempt, provider) = (batch.attempts(), batch.provider());
        if delay == Duration::ZERO {
            self.batches.make_ready(batch_key);
        } else {
            let until = now + delay;
            self.batches.back_off(batch_key, until);
        }
        let provider_id = self.pacer.provider_id(provider);
        self.out.event(Event::Retry {
            provider_id,
            reason,
            attempt,
            delay,
        });
    }

    /// A 413 (the request is too large for the model or the quota): the batch goes out
    /// again as two halves, each taking a token; a single item cannot be split.
    pub(super) fn split_in_halves(&mut self, batch_key: Id<Batch>) -> bool {
        if !self.drop_unwaited(batch_key) {
            return true;
        }
        if self
            .batches
            .get(batch_key)
            .is_none_or(|b| b.jobs().len() < 2)
        {
            return false;
        }
        let Some(batch) = self.batches.remove(batch_key) else {
            return false;
        };
        let half = batch.jobs().len().div_ceil(2);
        for part in batch.jobs().chunks(half) {
            // Still the same texts: the halves keep the batch's tries and place in line.
            if let Some(half) = Batch::resent(&batch, part, &self.jobs, true) {
                self.batches.insert_due(half);
            }
        }
        true
    }

    /// Sends each item of a batch alone.
    pub(super) fn fall_back(&mut self, batch_key: Id<Batch>) {
        if !self.drop_unwaited(batch_key) {
            return;
        }
        let Some(batch) = self.batches.remove(batch_key) else {
            return;
        };
        self.out.count(Counter::Fallbacks, 1);
        self.out.event(Event::Fallback {
            provider_id: self.pacer.provider_id(batch.provider()),
            items: batch.jobs().len(),
        });
        for job_key in batch.jobs() {
            // Each item keeps its batch's place in line.
            let alone = core::slice::from_ref(job_key);
            if let Some(single) = Batch::resent(&batch, alone, &self.jobs, false) {
                self.batches.insert_due(single);
            }
        }
    }
}
