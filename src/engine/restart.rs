//! What a restarted service worker resumes from: tokens, pauses, adaptive rates, reported
//! limits and daily blocks, taken with the wall-clock time and restored with the time since.

use super::*;

impl<C: Clone> Engine<C> {
    /// The state a restarted pacer needs (see [`Engine::restore`]), at wall time `wall_ms`.
    pub fn snapshot(&self, wall_ms: f64) -> Snapshot {
        // Pushes rather than a filtered `collect` (as for the texts of a batch): the
        // collect of an iterator of unknown length is much more code in the .wasm.
        let mut providers = Vec::new();
        for provider in &self.providers {
            let p = provider.pacing.borrow();
            // A recovering provider is saved too, at the full rate (see `restore`).
            let adaptive = p.adaptive.as_ref();
            let daily_block = p
                .daily_block
                .as_ref()
                .filter(|b| b.until > self.now)
                .map(|b| SavedDailyBlock {
                    blocked_for: b.until.since(self.now),
                    reset_known: b.reset_known,
                    message: b.message.clone(),
                });
            let limits = p.quota.saved(self.now);
            if p.paused_until > self.now
                || adaptive.is_some()
                || daily_block.is_some()
                || limits.is_some()
            {
                providers.push(ProviderSnapshot {
                    provider_id: provider.id.to_string(),
                    paused_for: p.paused_until.since(self.now),
                    adaptive_rate: adaptive.map(AdaptiveRate::rate),
                    adaptive_ceiling: adaptive.map_or(0.0, AdaptiveRate::ceiling),
                    daily_block,
                    limits,
                });
            }
        }
        Snapshot {
            wall_time_ms: wall_ms,
            tokens: self.bucket.tokens(self.now),
            providers,
        }
    }

    /// Resumes from a snapshot taken `elapsed` ago: tokens earned meanwhile are added (up
    /// to `capacity`), what is left of each pause still holds, adaptive rates return.
    pub fn restore(&mut self, snapshot: &Snapshot, elapsed: Duration) {
        let (rate, capacity) = (self.options.rate, self.options.capacity);
        let earned = elapsed.as_secs() * rate;
        self.bucket = TokenBucket::with_tokens(rate, capacity, snapshot.tokens + earned, self.now);
        for saved in &snapshot.providers {
            let index = self.provider_for(&saved.provider_id);
            let now = self.now;
            let Some(provider) = self.providers.get(index as usize) else {
                continue;
            };
            let mut provider = provider.pacing.borrow_mut();
            if let Some(block) = saved
                .daily_block
                .as_ref()
                .filter(|b| b.blocked_for > elapsed)
            {
                provider.daily_block = Some(DailyBlock {
                    until: now
                        + Duration::from_micros(
                            block.blocked_for.as_micros() - elapsed.as_micros(),
                        ),
                    reset_known: block.reset_known,
                    message: block.message.clone(),
                });
            }
            if saved.paused_for > elapsed {
                let until =
                    now + Duration::from_micros(saved.paused_for.as_micros() - elapsed.as_micros());
                provider.paused_until = until;
                provider.episode = provider.episode.wrapping_add(1);
                self.timers.push(until, Timer::PauseEnd(until));
            }
            if let Some(limits) = &saved.limits {
                // A restarted worker's first burst respects what the provider reported.
                provider.quota.restore(now, limits, elapsed);
            }
            let Some(adaptive_rate) = saved.adaptive_rate else {
                continue;
            };
            let ceiling = saved.adaptive_ceiling;
            provider.adaptive = Some(if adaptive_rate < rate {
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
                let earning = elapsed
                    .as_micros()
                    .saturating_sub(saved.paused_for.as_micros());
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
