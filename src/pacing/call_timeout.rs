//! How long a provider call may take. A batch of 1,000 characters on a local model takes
//! far longer than one short paragraph on a hosted one, so a whole reply (and a stream's
//! first value) may take `timeoutMs` plus `timeoutPerCharacterMs` for each character the
//! call sends; once a stream has begun, its values are alive while they keep coming, so
//! between two of them only `timeoutMs` counts. `timeoutMs: 0` is no timeout at all.
//!
//! Every call's timeout is made here, from the options in force when it starts (a
//! provider's own `timeoutMs` and `timeoutPerCharacterMs` replace the pacer's).

use crate::options::Options;
use crate::provider_settings::ProviderSettings;
use crate::time::Duration;

/// The timeouts of one call, fixed when it starts (`setOptions` later changes none).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallTimeout {
    first: Option<Duration>,
    between_values: Option<Duration>,
}

impl CallTimeout {
    /// The timeouts of a call that sends `characters` (its texts' UTF-16 code units, as
    /// JS `String.length` counts them) under `options`, or the provider's `own`
    /// settings where they set a timeout.
    pub fn new(options: &Options, own: Option<&ProviderSettings>, characters: u64) -> CallTimeout {
        let timeout_ms = own.and_then(|s| s.timeout_ms).unwrap_or(options.timeout_ms);
        let per_character_ms = own
            .and_then(|s| s.timeout_per_character_ms)
            .unwrap_or(options.timeout_per_character_ms);
        if timeout_ms <= 0.0 {
            return CallTimeout {
                first: None,
                between_values: None,
            };
        }
        let per_characters = per_character_ms * characters as f64;
        CallTimeout {
            // Both parts are finite and >= 0 (validated); a huge sum saturates.
            first: Some(Duration::from_millis(timeout_ms + per_characters)),
            between_values: Some(Duration::from_millis(timeout_ms)),
        }
    }

    /// The longest wait for a whole reply, or for a stream's first value; `None`: no limit.
    pub fn first(&self) -> Option<Duration> {
        self.first
    }

    /// The longest wait between two values of a stream; `None`: no limit.
    pub fn between_values(&self) -> Option<Duration> {
        self.between_values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::OptionValue::Number;

    fn options(timeout_ms: f64, per_character_ms: f64) -> Options {
        Options::default()
            .patched(&[
                ("timeoutMs", Number(timeout_ms)),
                ("timeoutPerCharacterMs", Number(per_character_ms)),
            ])
            .unwrap()
    }

    #[test]
    fn the_defaults_give_a_batch_of_1000_characters_35_seconds() {
        let timeout = CallTimeout::new(&Options::default(), None, 1000);
        assert_eq!(timeout.first(), Some(Duration::from_millis(35_000.0)));
        assert_eq!(
            timeout.between_values(),
            Some(Duration::from_millis(20_000.0))
        );
    }

    #[test]
    fn no_timeout_means_none_whatever_the_per_character_part() {
        let timeout = CallTimeout::new(&options(0.0, 15.0), None, 1000);
        assert_eq!((timeout.first(), timeout.between_values()), (None, None));
    }

    #[test]
    fn a_per_character_part_of_0_is_the_fixed_timeout() {
        let timeout = CallTimeout::new(&options(500.0, 0.0), None, 1000);
        assert_eq!(timeout.first(), Some(Duration::from_millis(500.0)));
    }

    #[test]
    fn a_providers_own_timeouts_replace_the_pacers() {
        let own = ProviderSettings {
            timeout_ms: Some(120_000.0),
            ..ProviderSettings::default()
        };
        let timeout = CallTimeout::new(&Options::default(), Some(&own), 1000);
        assert_eq!(timeout.first(), Some(Duration::from_millis(135_000.0)));
        let none = ProviderSettings {
            timeout_ms: Some(0.0),
            ..ProviderSettings::default()
        };
        let timeout = CallTimeout::new(&Options::default(), Some(&none), 1000);
        assert_eq!(timeout.first(), None);
    }
}
