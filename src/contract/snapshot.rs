//! What must outlive an MV3 service worker: the bucket's tokens, each provider's 429
//! pause, adaptive rate and last reported limits, and the wall-clock time they were
//! taken at. A restarted
//! worker that restores them neither bursts again nor forgets a pause.

use crate::display::js_number;
use crate::options::OptionsError;
use crate::quota::SavedLimits;
use crate::time::Duration;

/// A provider's pacing state.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderSnapshot {
    /// The provider.
    pub provider_id: String,
    /// How much of its 429 pause was left.
    pub paused_for: Duration,
    /// Its own rate after 429s (`None`: it runs at the pacer's rate).
    pub adaptive_rate: Option<f64>,
    /// The rate that met the last 429.
    pub adaptive_ceiling: f64,
    /// A spent daily quota that still holds.
    pub daily_block: Option<SavedDailyBlock>,
    /// The limits it last reported, while they hold its calls.
    pub limits: Option<SavedLimits>,
    /// The batch size it learned (`adaptiveBatching`), when one was.
    pub batch_limit: Option<u32>,
    /// How long its translations were against their sources, per language pair.
    pub length_ratios: Vec<crate::length_ratio::PairRatio>,
    /// The tokens in its own request bucket (`providers`), when it has one.
    pub tokens: Option<f64>,
}

/// A daily block as saved: how long it still holds, and what items reject with.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedDailyBlock {
    /// Until its reset, from the snapshot's time.
    pub blocked_for: Duration,
    /// Whether the provider said when its quota resets.
    pub reset_known: bool,
    /// The rejection message.
    pub message: String,
}

/// The pacer's state at `wall_time_ms` (milliseconds since the Unix epoch).
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Wall-clock time of the snapshot.
    pub wall_time_ms: f64,
    /// Tokens in the bucket.
    pub tokens: f64,
    /// Providers with a pause or an adaptive rate.
    pub providers: Vec<ProviderSnapshot>,
}

/// Slack for clocks that disagree a little (a snapshot taken by another context).
const FUTURE_TOLERANCE_MS: f64 = 1000.0;

fn reject(field: &str, rule: &str, got: f64) -> OptionsError {
    OptionsError {
        option: "restore".into(),
        message: format!("restore.{field} must be {rule} (got {})", js_number(got)),
    }
}

impl Snapshot {
    /// Checks the snapshot and returns the time elapsed since it was taken.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn elapsed(&self, now_wall_ms: f64) -> Result<Duration, OptionsError> {
        if !self.wall_time_ms.is_finite() || self.wall_time_ms < 0.0 {
            return Err(reject(
                "wallTime",
                "a time in ms since the epoch",
                self.wall_time_ms,
            ));
        }
        if self.wall_time_ms > now_wall_ms + FUTURE_TOLERANCE_MS {
            return Err(OptionsError {
                option: "restore".into(),
                message: format!(
                    "restore.wallTime is in the future (got {}, now {})",
                    js_number(self.wall_time_ms),
                    js_number(now_wall_ms.floor())
                ),
            });
        }
        if !self.tokens.is_finite() || self.tokens < 0.0 {
            return Err(reject("tokens", "a finite number >= 0", self.tokens));
        }
        for p in &self.providers {
            if p.provider_id.is_empty() {
                return Err(OptionsError {
                    option: "restore".into(),
                    message: "restore.providers[].providerId must be a non-empty string (got \"\")"
                        .into(),
                });
            }
            if let Some(tokens) = p.tokens.filter(|t| !t.is_finite() || *t < 0.0) {
                return Err(reject("providers[].tokens", "a finite number >= 0", tokens));
            }
            if let Some(rate) = p.adaptive_rate {
                if !rate.is_finite() || rate <= 0.0 {
                    return Err(reject(
                        "providers[].adaptiveRate",
                        "a finite number > 0 or null",
                        rate,
                    ));
                }
            }
            let windows = p.limits.iter().flat_map(|l| [&l.requests, &l.tokens]);
            for window in windows.flatten() {
                for (field, value) in [("remaining", window.remaining), ("whole", window.whole)] {
                    if !value.is_finite() || value < 0.0 {
                        return Err(reject(
                            &format!("providers[].limits.{field}"),
                            "a finite number >= 0",
                            value,
                        ));
                    }
                }
            }
            if !p.adaptive_ceiling.is_finite() || p.adaptive_ceiling < 0.0 {
                return Err(reject(
                    "providers[].adaptiveCeiling",
                    "a finite number >= 0",
                    p.adaptive_ceiling,
                ));
            }
        }
        Ok(Duration::from_millis(
            (now_wall_ms - self.wall_time_ms).max(0.0),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(wall: f64, tokens: f64) -> Snapshot {
        Snapshot {
            wall_time_ms: wall,
            tokens,
            providers: vec![],
        }
    }

    #[test]
    fn rejects_the_future_and_nonsense_with_named_fields() {
        assert_eq!(
            snapshot(1000.0, 2.0).elapsed(3500.0),
            Ok(Duration::from_millis(2500.0))
        );
        let future = snapshot(10_000.0, 2.0).elapsed(3500.0).unwrap_err();
        assert_eq!(
            future.message,
            "restore.wallTime is in the future (got 10000, now 3500)"
        );
        let tokens = snapshot(1000.0, -1.0).elapsed(3500.0).unwrap_err();
        assert_eq!(
            tokens.message,
            "restore.tokens must be a finite number >= 0 (got -1)"
        );
        assert!(snapshot(f64::NAN, 1.0).elapsed(3500.0).is_err());
    }
}
