//! Blocks: a provider whose calls cannot succeed until the user acts (settings and
//! billing errors) or a daily quota resets rejects its queue at once (or moves it to its
//! fallback), instead of one failing call per batch at the pace of the bucket.

use super::calls::Running;
use super::retries::final_error;
use super::Engine;
use crate::call::Failure;
use crate::provider::{DailyBlock, MAX_DAILY_BLOCK, UNKNOWN_DAILY_RESET};
use crate::stats::{BlockReason, Event};
use crate::time::Duration;

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
                until: now + retry_after.map_or(UNKNOWN_DAILY_RESET, |r| r.min(MAX_DAILY_BLOCK)),
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
        // Runs never move: their function was written for this provider.
        self.fail_runs_of(run.provider(), run.serves_run(), &error);
        if reason != BlockReason::Daily {
            self.put_aside(&run, &error);
        }
        // A pool's items go on with another member; the member's own queue as below.
        if self.back_to_pool(&run) {
            for key in self.batches.unsent_of(run.provider()) {
                if !self.move_to_fallback(key) {
                    self.fail(key, error.clone());
                }
            }
            return;
        }
        self.pool_held(&run);
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
