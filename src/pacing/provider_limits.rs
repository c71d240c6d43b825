//! A provider's own limits (`providers`): its request bucket, its token and character
//! budgets and its cap, held in addition to the pacer's. A call to the provider starts
//! only when each of them has room, and is charged to each.
//!
//! `setOptions` changes them in place: a bucket or budget that already exists keeps
//! what it holds (a larger `capacity` does not refill it), as the pacer's own does.

use crate::bucket::TokenBucket;
use crate::options::Options;
use crate::provider_settings::ProviderSettings;
use crate::quota::TokenBudget;
use crate::time::{Duration, Instant};

/// One provider's own settings and the buckets they make.
#[derive(Clone, Debug)]
pub struct ProviderLimits {
    settings: ProviderSettings,
    /// Its request bucket (`rate` / `capacity`; a field left out is the pacer's).
    bucket: Option<TokenBucket>,
    /// Its token budget (`tokensPerMinute`).
    tokens: Option<TokenBudget>,
    /// Its character budget (`charactersPerMinute`), in the texts' UTF-16 code units.
    characters: Option<TokenBudget>,
    /// When these limits were made or last changed: every call to the provider that
    /// started later was charged to them.
    since: Instant,
}

/// The rate and capacity of a provider's own bucket, when it has one.
fn bucket_of(settings: &ProviderSettings, options: &Options) -> Option<(f64, f64)> {
    settings.has_bucket().then(|| {
        (
            settings.rate.unwrap_or(options.rate),
            settings.capacity.unwrap_or(options.capacity),
        )
    })
}

/// A budget of `per_minute` kept or made at `now`: an existing one keeps what it holds.
fn budget(kept: Option<TokenBudget>, per_minute: Option<f64>, now: Instant) -> Option<TokenBudget> {
    let per_minute = per_minute.unwrap_or(0.0);
    match kept {
        Some(mut budget) if per_minute > 0.0 => {
            budget.set_per_minute(now, per_minute);
            Some(budget)
        }
        _ => TokenBudget::new(per_minute, now),
    }
}

impl ProviderLimits {
    /// Full buckets and budgets for `settings` at `now` (the pacer's `options` fill the
    /// bucket's missing field).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn new(settings: &ProviderSettings, options: &Options, now: Instant) -> ProviderLimits {
        let bucket = bucket_of(settings, options);
        ProviderLimits {
            settings: settings.clone(),
            bucket: bucket.map(|(rate, capacity)| TokenBucket::full(rate, capacity, now)),
            tokens: TokenBudget::new(settings.tokens_per_minute.unwrap_or(0.0), now),
            characters: TokenBudget::new(settings.characters_per_minute.unwrap_or(0.0), now),
            since: now,
        }
    }

    /// New settings at `now`: what exists keeps its tokens, what is new starts full.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn update(&mut self, settings: &ProviderSettings, options: &Options, now: Instant) {
        self.bucket = match (self.bucket.take(), bucket_of(settings, options)) {
            (Some(mut bucket), Some((rate, capacity))) => {
                bucket.set_rate(now, rate);
                bucket.set_capacity(now, capacity);
                Some(bucket)
            }
            (None, Some((rate, capacity))) => Some(TokenBucket::full(rate, capacity, now)),
            (_, None) => None,
        };
        self.tokens = budget(self.tokens.take(), settings.tokens_per_minute, now);
        self.characters = budget(self.characters.take(), settings.characters_per_minute, now);
        self.settings = settings.clone();
        self.since = now;
    }

    /// Its settings.
    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    /// When it was made or last changed.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Most of its calls at once; 0: no cap of its own.
    pub fn max_in_flight(&self) -> u64 {
        self.settings.max_in_flight.unwrap_or(0)
    }

    /// Whether it counts tokens (a token budget of its own).
    pub fn counts_tokens(&self) -> bool {
        self.tokens.is_some()
    }

    /// When a call of `cost` tokens and `characters` may start by its own bucket and
    /// budgets (`now` if it may now).
    pub fn ready_at(&self, now: Instant, cost: f64, characters: u64) -> Instant {
        let mut at = now;
        if let Some(bucket) = &self.bucket {
            at = at.max(bucket.ready_at(now));
        }
        if let Some(tokens) = &self.tokens {
            at = at.max(tokens.ready_at(now, cost));
        }
        if let Some(budget) = &self.characters {
            at = at.max(budget.ready_at(now, characters as f64));
        }
        at
    }

    /// Charges a call of `cost` tokens and `characters` that starts now.
    pub fn take(&mut self, now: Instant, cost: f64, characters: u64) {
        if let Some(bucket) = &mut self.bucket {
            bucket.try_take(now);
        }
        if let Some(tokens) = &mut self.tokens {
            tokens.spend(now, cost);
        }
        if let Some(budget) = &mut self.characters {
            budget.spend(now, characters as f64);
        }
    }

    /// A call charged `estimated` tokens really cost `actual`.
    pub fn correct_tokens(&mut self, now: Instant, estimated: f64, actual: f64) {
        if let Some(tokens) = &mut self.tokens {
            tokens.correct(now, estimated, actual);
        }
    }

    /// The tokens in its own request bucket, when it has one (for `snapshot()`).
    pub fn bucket_tokens(&self, now: Instant) -> Option<f64> {
        self.bucket.as_ref().map(|b| b.tokens(now))
    }

    /// Resumes its bucket from `tokens` saved `elapsed` ago (earned meanwhile added, up
    /// to its capacity).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn restore_bucket(&mut self, tokens: f64, elapsed: Duration, now: Instant) {
        if let Some(bucket) = &mut self.bucket {
            let (rate, capacity) = (bucket.rate(), bucket.capacity());
            let earned = elapsed.as_secs() * rate;
            *bucket = TokenBucket::with_tokens(rate, capacity, tokens + earned, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn an_update_keeps_tokens_and_a_larger_capacity_does_not_refill() {
        let settings = ProviderSettings {
            rate: Some(1.0),
            capacity: Some(2.0),
            ..ProviderSettings::default()
        };
        let options = Options::default();
        let mut own = ProviderLimits::new(&settings, &options, at(0.0));
        own.take(at(0.0), 0.0, 0);
        own.take(at(0.0), 0.0, 0);
        assert_eq!(own.ready_at(at(0.0), 0.0, 0), at(1000.0));
        let larger = ProviderSettings {
            capacity: Some(10.0),
            ..settings
        };
        own.update(&larger, &options, at(0.0));
        assert_eq!(own.bucket_tokens(at(0.0)), Some(0.0));
        assert_eq!(own.ready_at(at(0.0), 0.0, 0), at(1000.0));
    }

    #[test]
    fn a_character_budget_holds_a_call_until_its_characters_are_back() {
        let settings = ProviderSettings {
            characters_per_minute: Some(600.0),
            ..ProviderSettings::default()
        };
        let mut own = ProviderLimits::new(&settings, &Options::default(), at(0.0));
        assert_eq!(own.ready_at(at(0.0), 0.0, 600), at(0.0));
        own.take(at(0.0), 0.0, 600);
        // 10 characters a second: 100 characters take 10 s.
        assert_eq!(own.ready_at(at(0.0), 0.0, 100), at(10_000.0));
        assert_eq!(own.bucket_tokens(at(0.0)), None, "no bucket of its own");
    }
}
