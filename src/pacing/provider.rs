//! What holds one provider back, whichever pacer calls it: its 429 pause, its adaptive
//! rate, its spent daily quota, the limits it reported and its learned batch size. A leaf of the engine, so that
//! a budget shared by several pacers can hold it without knowing the engine.

use crate::adaptive::AdaptiveRate;
use crate::batch_limit::BatchLimit;
use crate::length_ratio::LengthRatios;
use crate::output_bound::InputRatio;
use crate::quota::ProviderQuota;
use crate::time::{Duration, Instant};

/// What holds a provider back: its 429 pause, its adaptive rate, its spent daily quota
/// and the limits it reported. One per provider and budget: pacers that share a budget
/// (see [`SharedBudget`](crate::budget::SharedBudget)) share this too.
#[derive(Debug, Default)]
pub struct ProviderPacing {
    pub(crate) paused_until: Instant,
    pub(crate) adaptive: Option<AdaptiveRate>,
    /// Counts 429 episodes. A call remembers the count at its start; a 429 for a call
    /// that started before the current episode began belongs to that episode and does
    /// not slow the provider down again (a burst of 429s is one episode).
    pub(crate) episode: u32,
    /// A spent daily quota: until `until`, every item for the provider rejects without
    /// a call.
    pub(crate) daily_block: Option<DailyBlock>,
    /// Its cost model and the limits it reported.
    pub(crate) quota: ProviderQuota,
    /// Calls accepted in a row at the full rate (before any 429 slowed it down).
    pub(crate) accepted: u32,
    /// The batch size its replies have shown it can carry (`adaptiveBatching`).
    pub(crate) batch_limit: BatchLimit,
    /// Its reported input tokens over the estimate, for the output bound.
    pub(crate) input_ratio: InputRatio,
    /// How long its proven translations were against their sources, per language pair.
    pub(crate) length_ratios: LengthRatios,
}

impl ProviderPacing {
    /// Whether nothing of it holds the provider back at `now`: no pause, daily block,
    /// adaptive rate, reported limits in force or learned batch size. Such a state can be
    /// forgotten with its provider and made anew: only learned estimates (token scaling,
    /// length ratios), which calls learn again, are lost.
    pub fn holds_nothing(&self, now: Instant) -> bool {
        self.paused_until <= now
            && self.adaptive.is_none()
            && self.daily_block.as_ref().is_none_or(|b| b.until <= now)
            && !self.quota.reports_in_force(now)
            && self.batch_limit.learned().is_none()
    }
}

/// How long a spent daily quota blocks its provider when the provider did not say when
/// it resets: long enough not to storm it, short enough to notice the reset soon.
pub const UNKNOWN_DAILY_RESET: Duration = Duration::from_micros(60 * 60 * 1_000_000);
/// The longest a daily block holds, whatever the provider said of its reset: a daily
/// quota resets within a day, and a reset further away (a typo, a monthly quota) is
/// found out by one call a day.
pub const MAX_DAILY_BLOCK: Duration = Duration::from_micros(24 * 60 * 60 * 1_000_000);

/// What items for a provider whose daily quota is spent reject with, and until when.
#[derive(Debug)]
pub(crate) struct DailyBlock {
    pub(crate) until: Instant,
    /// Whether the provider said when its quota resets.
    pub(crate) reset_known: bool,
    pub(crate) message: String,
}
