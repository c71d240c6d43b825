//! This pacer's share of a quota that other clients use too, read from the provider's
//! reports (see the reference's "A quota shared with other clients").
//!
//! A report of the whole window says how much room the quota had when the reporting call
//! was admitted. Between two such reports the room refills at the reported rate and
//! falls by what every client took: what it fell by beyond this pacer's own accepted
//! calls was taken by others. The share is this pacer's part of the recent consumption,
//! both counted with an exponential decay so that clients that leave stop counting
//! within a minute or so. A pacer alone keeps a share of 1.
//!
//! Measured in requests when the report gives the requests window whole (every call is
//! one, exactly as the provider counts it), else in tokens.

use crate::time::{Duration, Instant};

/// How long consumption is remembered: after this long, a client's past calls weigh
/// `1/e`. Short enough that a pacer takes the room back within a minute of another
/// client leaving; long enough to span several reports at a strict quota's pace.
const MEMORY: Duration = Duration::from_micros(20 * 1_000_000);
/// The smallest share, one of two hundred clients: a pacer that measured a tiny share
/// still calls often enough (at a quota of 60 a minute, every 200 s) to see the room
/// come back when the others leave; a share of 0 would never call again.
pub const MIN_SHARE: f64 = 0.005;
/// How much a share is raised above the measured one, at most (at an even split of two).
const FAIRNESS: f64 = 0.05;
/// How long accepted calls are remembered for the rate this pacer has been taking: a
/// hundred clients on a quota of fifty calls a minute take one call every two minutes
/// each, a rate that only minutes of calls can show.
const RATE_MEMORY: Duration = Duration::from_micros(5 * 60 * 1_000_000);

/// Which window the share is measured in.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Unit {
    Requests,
    Tokens,
}

/// One report of a whole window, as the share reads it.
#[derive(Copy, Clone, Debug)]
pub struct WholeWindow {
    pub unit: Unit,
    /// Room left when the reporting call was admitted.
    pub remaining: f64,
    pub whole: f64,
    /// The refill, per second.
    pub rate: f64,
}

/// The last report the share was measured from.
#[derive(Copy, Clone, Debug)]
struct Seen {
    window: WholeWindow,
    /// When the reporting call started (about when it was admitted).
    at: Instant,
}

/// This pacer's share of a provider's quota.
#[derive(Clone, Debug, Default)]
pub struct QuotaShare {
    last: Option<Seen>,
    /// Decayed sums of what this pacer and the others took, in the unit of `last`.
    own: f64,
    others: f64,
    updated: Instant,
    /// This pacer's accepted calls, decayed over [`RATE_MEMORY`] (the rate it has been
    /// taking), as of `calls_at`, counted since `first_call`.
    calls: f64,
    calls_at: Instant,
    first_call: Option<Instant>,
    /// Accepted since the last report was measured: calls and tokens.
    pending_calls: f64,
    pending_tokens: f64,
}

impl QuotaShare {
    /// A call of this pacer was accepted (answered, not 429) by `now`, costing `tokens`.
    pub fn accepted(&mut self, now: Instant, tokens: f64) {
        self.calls = self.calls_at(now) + 1.0;
        self.calls_at = self.calls_at.max(now);
        self.first_call.get_or_insert(now);
        self.pending_calls += 1.0;
        if tokens.is_finite() && tokens > 0.0 {
            self.pending_tokens += tokens;
        }
    }

    /// Reads a report of `window` for a call that started at `started`.
    pub fn observe(&mut self, started: Instant, window: WholeWindow) {
        let own = match window.unit {
            Unit::Requests => self.pending_calls,
            Unit::Tokens => self.pending_tokens,
        };
        self.decay(started);
        match self.last.filter(|l| l.window.unit == window.unit) {
            Some(last) => {
                let refill = started.since(last.at).as_secs() * last.window.rate;
                let before = (last.window.remaining + refill).min(window.whole);
                self.own += own;
                self.others += (before - window.remaining - own).max(0.0);
            }
            // The first report of a window says nothing of what it held before: no
            // one is counted until a second report shows how the room moved.
            None => {
                self.own = 0.0;
                self.others = 0.0;
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        if std::env::var_os("BP_DEBUG").is_some() {
            eprintln!("DBG t={:.1} own={own} R={:.0} sums own={:.2} others={:.2} share={:.3}", started.as_millis()/1000.0, window.remaining, self.own, self.others, self.share());
        }
        self.pending_calls = 0.0;
        self.pending_tokens = 0.0;
        self.last = Some(Seen {
            window,
            at: started,
        });
    }

    fn decay(&mut self, now: Instant) {
        if now > self.updated {
            let kept = (-(now.since(self.updated).as_secs()) / MEMORY.as_secs()).exp();
            self.own *= kept;
            self.others *= kept;
            self.updated = now;
        }
    }

    /// This pacer's share of the quota: its part of the consumption seen lately.
    pub fn share(&self) -> f64 {
        let total = self.own + self.others;
        if self.others <= 0.0 || total <= 0.0 {
            return 1.0;
        }
        let measured = self.own / total;
        // A little more than measured, the more so the more even the split: pacers whose
        // shares began uneven (who won the first calls of a scramble) drift to equal
        // shares, at the cost of asking for a few percent more than the quota.
        let fair = FAIRNESS * measured * (1.0 - measured);
        (measured + fair).clamp(MIN_SHARE, 1.0)
    }

    /// The decayed count of accepted calls at `now`.
    fn calls_at(&self, now: Instant) -> f64 {
        let elapsed = now.since(self.calls_at).as_secs();
        self.calls * (-elapsed / RATE_MEMORY.as_secs()).exp()
    }

    /// The rate of accepted calls this pacer has been taking lately, per second: none
    /// before its first accepted call.
    pub fn taking_rate(&self, now: Instant) -> Option<f64> {
        let first = self.first_call?;
        // What a steady rate r since `first` sums to, decayed: r × memory × (1 − e^(−t/memory)).
        let memory = RATE_MEMORY.as_secs();
        let span = memory * (1.0 - (-(now.since(first).as_secs()) / memory).exp());
        Some(self.calls_at(now) / span.max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: f64) -> Instant {
        Instant::from_millis(s * 1000.0)
    }

    fn requests(remaining: f64) -> WholeWindow {
        WholeWindow {
            unit: Unit::Requests,
            remaining,
            whole: 60.0,
            rate: 1.0,
        }
    }

    #[test]
    fn a_pacer_alone_keeps_the_whole_quota() {
        let mut share = QuotaShare::default();
        // The quota as the provider counts it: a bucket of 60 refilled one a second.
        let mut quota: f64 = 60.0;
        for call in 0..200 {
            let t = f64::from(call) * 2.0;
            quota = (quota + 2.0).min(60.0) - 1.0;
            share.accepted(at(t), 500.0);
            share.observe(at(t), requests(quota));
        }
        assert_eq!(share.share(), 1.0);
    }

    #[test]
    fn room_that_falls_faster_than_own_calls_is_others_share() {
        let mut share = QuotaShare::default();
        // Four clients take the refill equally (the room stays at 0); this one sees
        // its own quarter of what the room fell by.
        for call in 0..100 {
            let t = f64::from(call) * 4.0;
            share.accepted(at(t), 500.0);
            share.observe(at(t), requests(0.0));
        }
        assert!((share.share() - 0.25).abs() < 0.01, "{}", share.share());
        // The others leave: within a minute the share is back near all of it.
        for call in 0..60 {
            let t = 400.0 + f64::from(call);
            share.accepted(at(t), 500.0);
            share.observe(at(t), requests(0.0));
        }
        assert!(share.share() > 0.9, "{}", share.share());
    }

    #[test]
    fn the_rate_taken_is_the_rate_of_accepted_calls() {
        let mut share = QuotaShare::default();
        assert_eq!(share.taking_rate(at(0.0)), None);
        // One call every two minutes for 40 minutes.
        for call in 0..20 {
            share.accepted(at(f64::from(call) * 120.0), 500.0);
        }
        let per_minute = share.taking_rate(at(2400.0)).unwrap() * 60.0;
        assert!((per_minute - 0.5).abs() < 0.1, "{per_minute}");
        // A pacer that has just begun has no slow rate to keep to.
        let mut new = QuotaShare::default();
        new.accepted(at(10.0), 500.0);
        assert!(new.taking_rate(at(10.0)).unwrap() >= 1.0 / 60.0);
    }
}
