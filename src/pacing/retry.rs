//! Which failures are retried, how long to wait before a retry, and the jitter source.

use crate::time::Duration;

/// A Retry-After longer than this is a daily quota, not a pause: the call fails at once.
pub const MAX_RETRY_AFTER: Duration = Duration::from_micros(5 * 60 * 1_000_000);

/// Longest computed backoff; a provider's own Retry-After may be longer (up to
/// [`MAX_RETRY_AFTER`]).
pub const MAX_BACKOFF: Duration = Duration::from_micros(60 * 1_000_000);

/// What a failed provider call means for the items in it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailureClass {
    /// Network error, timeout, bad reply, 408, 409 or 5xx: retry within `maxRetries`.
    Transient,
    /// 429: pause the provider and retry within `maxRateLimitRetries`.
    RateLimited,
    /// Any other status: reject the items now.
    Final,
}

/// Classifies a failure by its HTTP status; no status means a network-level error.
pub fn classify(status: Option<u16>) -> FailureClass {
    match status {
        None | Some(408) | Some(409) | Some(500..=599) => FailureClass::Transient,
        Some(429) => FailureClass::RateLimited,
        Some(_) => FailureClass::Final,
    }
}

/// Exponential backoff with "equal jitter": the `retry`-th retry (0-based) waits between
/// half and all of `base · 2^retry`, capped at [`MAX_BACKOFF`]. Jitter keeps many tabs
/// that failed together from retrying together.
pub fn backoff(base: Duration, retry: u32, jitter: &mut Jitter) -> Duration {
    let full = base
        .mul_f64(2f64.powi(retry.min(60) as i32))
        .min(MAX_BACKOFF);
    let half = full.mul_f64(0.5);
    half + half.mul_f64(jitter.next_unit())
}

/// The least spread of a lengthened wait: clients whose waits are short (a Retry-After
/// of 1 s) still spread over a quarter of a second.
const LEAST_SPREAD: Duration = Duration::from_micros(250_000);

/// How much a wait that ends at a Retry-After or at a reported reset is lengthened, for
/// a draw `unit` in [0, 1): up to 10% of the wait, at least up to 250 ms, never less
/// than nothing. Clients that met the same 429 or read the same reset then do not all
/// call at one instant.
pub fn lengthening(wait: Duration, unit: f64) -> Duration {
    let spread = wait.mul_f64(0.1).max(LEAST_SPREAD);
    spread.mul_f64(unit.clamp(0.0, 1.0))
}

/// A small deterministic random source (SplitMix64), seeded by the driver, so that
/// virtual-time tests replay exactly.
#[derive(Clone, Debug)]
pub struct Jitter(u64);

impl Jitter {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Jitter {
        Jitter(seed)
    }

    /// A float in [0, 1).
    pub fn next_unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_the_contract() {
        for status in [None, Some(408), Some(409), Some(500), Some(503), Some(599)] {
            assert_eq!(classify(status), FailureClass::Transient, "{status:?}");
        }
        assert_eq!(classify(Some(429)), FailureClass::RateLimited);
        for status in [400, 401, 403, 404, 422, 600] {
            assert_eq!(classify(Some(status)), FailureClass::Final, "{status}");
        }
    }

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let mut jitter = Jitter::new(7);
        let base = Duration::from_millis(1000.0);
        for retry in 0..5 {
            let full = 1000.0 * 2f64.powi(retry as i32);
            for _ in 0..100 {
                let d = backoff(base, retry, &mut jitter).as_millis();
                assert!(d >= full / 2.0 && d <= full, "retry {retry}: {d}");
            }
        }
        assert!(backoff(base, 40, &mut jitter) <= MAX_BACKOFF);
        assert_eq!(backoff(Duration::ZERO, 3, &mut jitter), Duration::ZERO);
    }

    #[test]
    fn a_wait_is_lengthened_by_up_to_a_tenth_at_least_a_quarter_second() {
        let ms = Duration::from_millis;
        assert_eq!(lengthening(ms(60_000.0), 0.0), Duration::ZERO);
        assert_eq!(lengthening(ms(60_000.0), 0.5), ms(3000.0));
        assert_eq!(lengthening(ms(1000.0), 0.5), ms(125.0));
        assert_eq!(lengthening(Duration::ZERO, 0.999), ms(249.75));
        // A draw out of range never shortens a wait nor lengthens it past the spread.
        assert_eq!(lengthening(ms(1000.0), -1.0), Duration::ZERO);
        assert_eq!(lengthening(ms(1000.0), 7.0), ms(250.0));
    }
}
