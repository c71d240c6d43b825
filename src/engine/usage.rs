//! Token usage as providers count it: item token estimates for the token budget, the
//! usage and limits a provider reports about itself (held calls, `limited`).

use super::calls::Running;
use super::outbox::Counter;
use super::Engine;
use crate::call::{Failure, Report};
use crate::item::Item;
use crate::quota;
use crate::stats::Event;

impl<C: Clone> Engine<C> {
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
        let due: Vec<_> = self.batches.due_providers().collect();
        for (index, first) in due {
            if self.batches.get(first.batch).is_none() {
                continue;
            }
            let (_, cost, _) = self.call_cost(index, first.batch);
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
        // A draw only for a report that names a reset: replies that report nothing keep
        // the jitter's sequence (and the backoffs it draws) as it was.
        let resets = limits.requests_reset.is_some() || limits.tokens_reset.is_some();
        let lengthen = if resets { self.lengthen_draw() } else { 0.0 };
        let Some(first_window) = self.pacer.take_report(
            run.provider(),
            run.charge(),
            (usage, run.estimated_input(), failure.is_none()),
            (limits, lengthen),
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
}
