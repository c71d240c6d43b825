//! Millisecond-precision virtual time for the engine.
//!
//! The engine never reads a clock: every input carries an [`Instant`]. Both types hold whole
//! microseconds so that comparisons are exact and arithmetic saturates instead of overflowing
//! on hostile inputs (a `performance.now()` far in the future, a Retry-After of years).

use core::ops::{Add, Sub};

/// A point in time, in microseconds since an arbitrary origin chosen by the driver.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A length of time in microseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

/// Converts a float count of units to whole microseconds: NaN and negatives become 0,
/// huge values saturate.
fn micros_from(value: f64, micros_per_unit: f64) -> u64 {
    let micros = (value * micros_per_unit).round();
    if micros.is_nan() || micros <= 0.0 {
        0
    } else {
        // `as` saturates at u64::MAX for values beyond it.
        micros as u64
    }
}

impl Instant {
    /// The origin of time.
    pub const ZERO: Instant = Instant(0);

    /// An instant from milliseconds (as `performance.now()` returns them).
    pub fn from_millis(ms: f64) -> Instant {
        Instant(micros_from(ms, 1_000.0))
    }

    /// This instant in milliseconds.
    pub fn as_millis(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// Microseconds since the origin.
    pub fn as_micros(self) -> u64 {
        self.0
    }

    /// The time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// A duration from (possibly fractional) milliseconds.
    pub fn from_millis(ms: f64) -> Duration {
        Duration(micros_from(ms, 1_000.0))
    }

    /// A duration from (possibly fractional) seconds.
    pub fn from_secs(secs: f64) -> Duration {
        Duration(micros_from(secs, 1_000_000.0))
    }

    /// A duration from whole microseconds.
    pub const fn from_micros(micros: u64) -> Duration {
        Duration(micros)
    }

    /// This duration in milliseconds.
    pub fn as_millis(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// This duration in seconds.
    pub fn as_secs(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    /// Whole microseconds.
    pub fn as_micros(self) -> u64 {
        self.0
    }

    /// Multiplies by a non-negative factor, saturating.
    pub fn mul_f64(self, factor: f64) -> Duration {
        Duration(micros_from(self.0 as f64 * factor, 1.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(rhs.0))
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(rhs.0))
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_and_saturate() {
        assert_eq!(Instant::from_millis(1.2345).as_micros(), 1235);
        assert_eq!(Instant::from_millis(-5.0), Instant::ZERO);
        assert_eq!(Instant::from_millis(f64::NAN), Instant::ZERO);
        assert_eq!(Duration::from_secs(f64::INFINITY).as_micros(), u64::MAX);
        assert_eq!(
            Instant::from_millis(1e300) + Duration::from_secs(1.0),
            Instant(u64::MAX)
        );
        assert_eq!(
            Instant::ZERO.since(Instant::from_millis(3.0)),
            Duration::ZERO
        );
        assert_eq!(
            Duration::from_millis(1000.0).mul_f64(2.5).as_millis(),
            2500.0
        );
    }
}
