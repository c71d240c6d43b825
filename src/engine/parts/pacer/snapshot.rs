//! The pacer's part of a snapshot, and the restore from one: what a restarted pacer
//! resumes from, taken only as far as this pacer could have written it. Apart because
//! it runs once per save or start, never per call.

use core::cmp::Reverse;

use super::Pacer;
use crate::adaptive::{AdaptiveRate, FLOOR};
use crate::batch_limit::BatchLimit;
use crate::bucket::TokenBucket;
use crate::length_ratio::LengthRatios;
use crate::options::Options;
use crate::provider::{DailyBlock, MAX_DAILY_BLOCK, UNKNOWN_DAILY_RESET};
use crate::retry::MAX_RETRY_AFTER;
use crate::snapshot::{ProviderSnapshot, SavedDailyBlock, Snapshot};
use crate::time::{Duration, Instant};

impl Pacer {
    /// What a restarted pacer resumes from (see [`Pacer::restore`]).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(in crate::engine) fn snapshot(&self, now: Instant, wall_ms: f64) -> Snapshot {
        // Pushes rather than a filtered `collect` (as for the texts of a batch): the
        // collect of an iterator of unknown length is much more code in the .wasm.
        let mut providers = Vec::new();
        for (index, provider) in self.providers.iter() {
            let p = provider.state.borrow();
            // A recovering provider is saved too, at the full rate (see `restore`).
            let adaptive = p.adaptive.as_ref();
            let daily_block =
                p.daily_block
                    .as_ref()
                    .filter(|b| b.until > now)
                    .map(|b| SavedDailyBlock {
                        blocked_for: b.until.since(now),
                        reset_known: b.reset_known,
                        message: b.message.clone(),
                    });
            let limits = p.quota.saved(now);
            let batch_limit = p.batch_limit.learned();
            let length_ratios = p.length_ratios.saved();
            let tokens = self.own(index).and_then(|o| o.bucket_tokens(now));
            if p.paused_until > now
                || tokens.is_some()
                || adaptive.is_some()
                || daily_block.is_some()
                || limits.is_some()
                || batch_limit.is_some()
                || !length_ratios.is_empty()
            {
                providers.push(ProviderSnapshot {
                    provider_id: provider.id.to_string(),
                    paused_for: p.paused_until.since(now),
                    adaptive_rate: adaptive.map(AdaptiveRate::rate),
                    adaptive_ceiling: adaptive.map_or(0.0, AdaptiveRate::ceiling),
                    daily_block,
                    limits,
                    batch_limit,
                    length_ratios,
                    tokens,
                });
            }
        }
        Snapshot {
            wall_time_ms: wall_ms,
            tokens: self.bucket.tokens(now),
            providers,
        }
    }

    /// Resumes from a snapshot taken `elapsed` ago: tokens earned meanwhile are added (up
    /// to `capacity`), what is left of each pause still holds, adaptive rates return.
    /// What the snapshot says is taken only as far as this pacer could have written it
    /// (a snapshot is stored data, and storage can be edited): a pause of at most
    /// [`MAX_RETRY_AFTER`] from the snapshot's time, a daily block of at most
    /// [`MAX_DAILY_BLOCK`] ([`UNKNOWN_DAILY_RESET`] without a known reset), an adaptive
    /// rate within its floor and `rate`, a ceiling of at most `rate`.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(in crate::engine) fn restore(
        &mut self,
        snapshot: &Snapshot,
        elapsed: Duration,
        now: Instant,
        options: &Options,
    ) {
        let (rate, capacity) = (options.rate, options.capacity);
        let earned = elapsed.as_secs() * rate;
        self.bucket = TokenBucket::with_tokens(rate, capacity, snapshot.tokens + earned, now);
        for saved in &snapshot.providers {
            let index = self.provider_for(&saved.provider_id, now, options);
            if let (Some(tokens), Some(Some(own))) =
                (saved.tokens, self.own.get_mut(index as usize))
            {
                own.restore_bucket(tokens, elapsed, now);
            }
            let Some(provider) = self.providers.get(index) else {
                continue;
            };
            let mut provider = provider.state.borrow_mut();
            if let Some(block) = &saved.daily_block {
                let longest = match block.reset_known {
                    true => MAX_DAILY_BLOCK,
                    false => UNKNOWN_DAILY_RESET,
                };
                let blocked_for = block.blocked_for.min(longest);
                if blocked_for > elapsed {
                    provider.daily_block = Some(DailyBlock {
                        until: now + left_after(blocked_for, elapsed),
                        reset_known: block.reset_known,
                        message: block.message.clone(),
                    });
                }
            }
            let paused_for = saved.paused_for.min(MAX_RETRY_AFTER);
            if paused_for > elapsed {
                let until = now + left_after(paused_for, elapsed);
                provider.paused_until = until;
                provider.episode = provider.episode.wrapping_add(1);
                self.pauses.push(Reverse((until, index)));
            }
            if let Some(limits) = &saved.limits {
                // A restarted worker's first burst respects what the provider reported.
                provider.quota.restore(now, limits, elapsed);
            }
            if let Some(limit) = saved.batch_limit {
                provider.batch_limit = BatchLimit::restored(limit);
            }
            if !saved.length_ratios.is_empty() {
                provider.length_ratios = LengthRatios::restored(&saved.length_ratios);
            }
            let Some(adaptive_rate) = saved.adaptive_rate else {
                continue;
            };
            let ceiling = saved.adaptive_ceiling.min(rate);
            provider.adaptive = Some(if adaptive_rate < rate {
                // Never below the floor the pacer slows a provider to.
                let adaptive_rate = adaptive_rate.max(FLOOR.min(rate));
                let tokens = (elapsed.as_secs() * adaptive_rate).min(1.0);
                AdaptiveRate::restored(
                    adaptive_rate,
                    tokens,
                    ceiling,
                    now,
                    now.max(provider.paused_until),
                )
            } else {
                // Back at the full rate: the burst it earned before the restart is not
                // known, so it counts from an empty bucket, earning nothing while paused.
                let earning = elapsed.as_micros().saturating_sub(paused_for.as_micros());
                let tokens = Duration::from_micros(earning).as_secs() * rate;
                AdaptiveRate::recovering(
                    rate,
                    capacity,
                    tokens,
                    ceiling,
                    now.max(provider.paused_until),
                )
            });
        }
    }
}

/// What is left of a saved `span` once `elapsed` has passed (`span` is the longer).
fn left_after(span: Duration, elapsed: Duration) -> Duration {
    Duration::from_micros(span.as_micros() - elapsed.as_micros())
}
