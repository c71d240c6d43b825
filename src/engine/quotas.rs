//! Quotas as providers count them: item token estimates, the token budget, limits a
//! provider reported about itself (held calls, `limited`), and the blocks that reject a
//! provider's queue at once (settings and billing errors, a spent daily quota).

use super::calls::Running;
use super::outbox::Counter;
use super::retries::final_error;
use super::Engine;
use crate::call::{Failure, Report};
use crate::item::Item;
use crate::provider::DailyBlock;
use crate::quota;
use crate::stats::{BlockReason, Event};
use crate::time::Duration;

/// How long a spent daily quota blocks its provider when the provider did not say when
/// it resets: long enough not to storm it, short enough to notice the reset soon.
pub(super) const UNKNOWN_DAILY_RESET: Duration = Duration::from_micros(60 * 60 * 1_000_000);

/// What a settings error (401, 403, 404) tells the user to check.
pub(super) fn settings_message(status: Option<u16>, detail: &str) -> String {
    let check = match status {
        Some(401) => "the provider rejected the API key: check the key in the provider settings",
        Some(403) => "the provider refused access: check the API key and what it is allowed to use",
        _ => "the provider does not know the model or the address: check the model name and the base URL",
    };
    format!("{check} ({detail})")
}

impl<C: Clone> Engine<C> {
    /// Whether items need token estimates (a token budget, or a provider that reports
    /// its token window): the driver then passes the user's `estimateTokens`, if any.
    pub fn wants_token_estimates(&self) -> bool {
        self.pacer.wants_token_estimates()
    }

    /// An item's estimated input tokens: the caller's when given, else the built-in
    /// estimate when the budgets need one (0 otherwise: a call's output bound estimates
    /// its texts when it starts).
    pub(super) fn input_tokens(&self, item: &Item<'_>) -> f32 {
        let given = item.tokens.filter(|t| t.is_finite() && *t >= 0.0);
        let tokens = match given {
            Some(tokens) => tokens,
            None if self.wants_token_estimates() => quota::input_tokens(item.text),
            None => 0.0,
        };
        tokens as f32
    }

    /// A `limited` event for each provider whose reported limits hold its due work, once
    /// per hold.
    pub(super) fn announce_holds(&mut self) {
        let now = self.now;
        for index in 0..self.pacer.provider_count() as u32 {
            let Some(first) = self.batches.first_ready(index) else {
                continue;
            };
            if self.batches.get(first.2).is_none() {
                continue;
            }
            let (_, cost) = self.call_cost(index, first.2);
            if let Some((until, why)) = self.pacer.new_hold(index, cost, now) {
                self.out.event(Event::Limited {
                    provider_id: self.pacer.provider_id(index),
                    reason: why,
                    wait: until.since(now),
                });
            }
        }
    }

    /// Takes in what a provider reported with an answer or an error: usage corrects the
    /// budget and the provider's estimates, limits hold its later calls.
    pub(super) fn take_report(
        &mut self,
        run: &Running,
        report: &Report,
        failure: Option<&Failure<C>>,
    ) {
        let limits = failure.map_or(&report.limits, |f| &f.limits);
        let usage = report.usage.as_ref();
        let Some(first_window) = self.pacer.take_report(
            run.provider(),
            run.charge(),
            (usage, run.estimated_input()),
            limits,
            self.now,
        ) else {
            return;
        };
        if let Some(usage) = usage {
            self.out
                .count(Counter::InputTokens, usage.input_tokens as u64);
            self.out
                .count(Counter::OutputTokens, usage.output_tokens as u64);
        }
        if first_window {
            self.estimate_queued_tokens();
        }
    }

    /// Token estimates became needed (a budget was set, or a provider reported its token
    /// window): the queued items get theirs, and the batches are rebuilt under the token
    /// limit.
    pub(super) fn estimate_queued_tokens(&mut self) {
        let estimated = self
            .jobs
            .estimate_tokens(|text| quota::input_tokens(text) as f32);
        if let Some(estimated) = estimated {
            self.batches.sum_tokens(&self.jobs, estimated);
        }
    }

    /// No call to the provider can succeed until the user acts or a daily quota resets:
    /// the call's items and every item queued for the provider reject at once, in one
    /// step, instead of one failing call per batch at the pace of the bucket.
    pub(super) fn block_provider(
        &mut self,
        run: Running,
        failure: Failure<C>,
        reason: BlockReason,
    ) {
        let now = self.now;
        let until = match reason {
            BlockReason::Daily => Some(failure.retry_after.filter(|r| *r > Duration::ZERO)),
            BlockReason::Settings | BlockReason::Billing => None,
        };
        let mut error = final_error(failure, false);
        error.message = match reason {
            BlockReason::Settings => settings_message(error.status, &error.message),
            BlockReason::Billing => format!(
                "the provider's account is out of credit or at its spending cap; top it up or raise the cap, then translate again ({})",
                error.message
            ),
            BlockReason::Daily => format!(
                "the provider's daily quota is spent; items for it reject until it resets ({})",
                error.message
            ),
        };
        error.retry_in = until.flatten();
        if let Some(retry_after) = until {
            let block = DailyBlock {
                until: now + retry_after.unwrap_or(UNKNOWN_DAILY_RESET),
                reset_known: retry_after.is_some(),
                message: error.message.clone(),
            };
            self.pacer.block_daily(run.provider(), block);
        }
        self.out.event(Event::Blocked {
            provider_id: self.pacer.provider_id(run.provider()),
            reason,
            status: error.status,
            message: error.message.clone(),
            until: error.retry_in,
        });
        // With a fallback provider, the call's items and the queued ones go on there.
        if self.move_provider_items(run.batch(), run.provider()) {
            return;
        }
        let queued = self.batches.unsent_of(run.provider());
        self.fail(run.batch(), error.clone());
        for key in queued {
            self.fail(key, error.clone());
        }
    }
}
