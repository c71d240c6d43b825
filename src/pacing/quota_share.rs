//! This pacer's share of a quota that other clients use too, read from the provider's
//! reports (docs/reference.md, "A quota shared with other clients").
//!
//! A report of the whole window says how much room the quota had when the reporting call
//! was admitted. Between two such reports the room refills at the reported rate and
//! falls by what every client took: what it fell by beyond this pacer's own accepted
//! calls, others took. Both are counted with an exponential decay, so that clients that
//! leave stop counting within a minute or so.
//!
//! - Alone (others took next to nothing lately), the share is 1: all the room is its own.
//! - On meeting others, the share starts at its part of what was taken lately (one call
//!   of its own counted in): a crowd that met the same drained quota learns at once
//!   about how many others there are.
//! - Then every pacer reads the same room: the part of the time it is drained shrinks
//!   each share in proportion to its own size (larger shares shrink faster, so the
//!   shares meet), the part with room grows every share at one pace, and a 429 cuts it.
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
/// Others' part of the consumption seen lately below which a pacer counts as alone
/// (the reports' rounding of what is left to whole units).
const ALONE: f64 = 0.05;
/// While reports show the room drained and others use it, a share `s` shrinks by
/// `e^(−SHRINK·s)` per second: from 1 to a hundredth in about a minute, from 0.2 by a
/// third a second.
const SHRINK: f64 = 2.0;
/// While reports show room, a share grows by `e^GROWTH` per second: from a hundredth to
/// all of it in a minute.
const GROWTH: f64 = 0.08;
/// How long the part of the time the room was drained is remembered.
const DRAINED_MEMORY: Duration = Duration::from_micros(10 * 1_000_000);
/// What a 429 leaves of a share, when others use the quota too.
const CUT: f64 = 0.7;
/// The most one report moves a share: by `e^±MAX_STEP`.
const MAX_STEP: f64 = 0.3;
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
    /// Whether the report left no room for another call like the reporting one, in
    /// requests or in tokens.
    pub drained: bool,
    /// What this pacer's calls that started after the reporting call take: the report
    /// may count them already.
    pub in_flight: f64,
}

/// The last report the share was measured from.
#[derive(Copy, Clone, Debug)]
struct Seen {
    window: WholeWindow,
    /// When the reporting call started (about when it was admitted).
    at: Instant,
}

/// This pacer's share of a provider's quota.
#[derive(Clone, Debug)]
pub struct QuotaShare {
    /// The share: the part of the reported room and refill this pacer takes.
    share: f64,
    /// The part of the time lately that reports showed the room drained.
    drained: f64,
    /// When the share was last cut for a 429.
    cut_at: Instant,
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

impl Default for QuotaShare {
    fn default() -> Self {
        QuotaShare {
            share: 1.0,
            drained: 0.0,
            cut_at: Instant::ZERO,
            last: None,
            own: 0.0,
            others: 0.0,
            updated: Instant::ZERO,
            calls: 0.0,
            calls_at: Instant::ZERO,
            first_call: None,
            pending_calls: 0.0,
            pending_tokens: 0.0,
        }
    }
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

    /// Reads a report of `window`, come at `now` for a call that started at `started`
    /// and was answered 429 (`rejected`) or accepted. Whether the pacer has just met
    /// others (its share was all of the quota until this report).
    pub fn observe(
        &mut self,
        now: Instant,
        started: Instant,
        window: WholeWindow,
        rejected: bool,
    ) -> bool {
        let own = match window.unit {
            Unit::Requests => self.pending_calls,
            Unit::Tokens => self.pending_tokens,
        };
        self.decay(started);
        let Some(last) = self.last.filter(|l| l.window.unit == window.unit) else {
            // The first report of a window says nothing of what it held before: no one
            // is counted until a second report shows how the room moved.
            self.own = 0.0;
            self.others = 0.0;
            self.pending_calls = 0.0;
            self.pending_tokens = 0.0;
            self.last = Some(Seen {
                window,
                at: started,
            });
            return false;
        };
        // The room before the reporting call's lot: refilled since the last report.
        let elapsed = started.since(last.at).as_secs();
        let before = (last.window.remaining + elapsed * last.window.rate).min(window.whole);
        self.own += own;
        self.others += (before - window.remaining - own - window.in_flight).max(0.0);
        self.pending_calls = 0.0;
        self.pending_tokens = 0.0;
        self.last = Some(Seen {
            window,
            at: started,
        });
        let was_alone = self.share >= 1.0;
        self.adjust(elapsed, window);
        // A 429 with others about: together the pacers asked for more than the quota
        // holds. Once per lot of calls (a 429 for a call that started before the last
        // cut belongs to it).
        if rejected && self.share < 1.0 && started >= self.cut_at {
            self.share = (self.share * CUT).max(MIN_SHARE);
            self.cut_at = now;
        }
        was_alone && self.share < 1.0
    }

    /// Moves the share after `elapsed` seconds that ended with a report of `window`.
    /// Alone (the room fell by no more than this pacer's calls explain), the quota is
    /// all its own. A pacer that meets others takes no more than its part of what was
    /// taken lately. From there on, every pacer reads the same room: the part of the
    /// time it is drained (no room for another call) shrinks each share in proportion
    /// to its own size, so that larger shares shrink faster and the pacers' shares
    /// meet; the part with room grows every share at one pace. A report moves the share
    /// by a third at most: a pacer that calls seldom reads few reports.
    fn adjust(&mut self, elapsed: f64, window: WholeWindow) {
        let total = self.own + self.others;
        if total <= 0.0 || self.others <= ALONE * total {
            self.share = 1.0;
            self.drained = 0.0;
            return;
        }
        if self.share >= 1.0 {
            // One call of its own counted in, so that a pacer that took none yet keeps
            // a small share rather than none: a crowd of new pacers that all met the
            // same drained quota learns at once about how many others there are.
            let one_call = match window.unit {
                Unit::Requests => 1.0,
                Unit::Tokens => window.whole / 60.0,
            };
            self.share = ((self.own + one_call) / (total + one_call)).clamp(MIN_SHARE, 1.0);
            self.drained = 1.0;
            return;
        }
        let weight = 1.0 - (-elapsed / DRAINED_MEMORY.as_secs()).exp();
        let now_drained = if window.drained { 1.0 } else { 0.0 };
        self.drained += (now_drained - self.drained) * weight;
        let rate = GROWTH * (1.0 - self.drained) - SHRINK * self.share * self.drained;
        let step = (rate * elapsed).clamp(-MAX_STEP, MAX_STEP);
        let share = self.share * step.exp();
        self.share = share.clamp(MIN_SHARE, 1.0);
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
        self.share
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
            drained: remaining < 1.0,
            in_flight: 0.0,
        }
    }

    #[test]
    fn a_pacer_alone_keeps_the_whole_quota() {
        let mut share = QuotaShare::default();
        // The quota as the provider counts it: a bucket of 60 refilled one a second,
        // which this pacer alone drains with a call a second after its burst.
        let mut quota: f64 = 60.0;
        for second in 0..200 {
            let t = f64::from(second);
            let calls = if second < 60 { 2 } else { 1 };
            quota = (quota + 1.0).min(60.0) - f64::from(calls);
            for _ in 0..calls {
                share.accepted(at(t), 500.0);
            }
            assert!(!share.observe(at(t), at(t), requests(quota.max(0.0)), false));
        }
        assert_eq!(share.share(), 1.0);
    }

    /// Reports of a quota that others drain: each call of this pacer meets a room of 0
    /// that refilled `others` calls' worth since its last call and lost them to others.
    fn drained_by_others(share: &mut QuotaShare, from: f64, every: f64, calls: u32) -> f64 {
        let mut t = from;
        for _ in 0..calls {
            t += every;
            share.accepted(at(t), 500.0);
            share.observe(at(t), at(t), requests(0.0), false);
        }
        t
    }

    #[test]
    fn room_that_falls_faster_than_own_calls_is_others_share() {
        let mut share = QuotaShare::default();
        share.observe(at(0.0), at(0.0), requests(30.0), false);
        // Others took 30 and the refill while this pacer took 1: it meets them with its
        // part of what was taken.
        share.accepted(at(4.0), 500.0);
        assert!(share.observe(at(4.0), at(4.0), requests(0.0), false));
        assert!(
            (share.share() - 2.0 / 35.0).abs() < 1e-9,
            "{}",
            share.share()
        );
        // While the room stays drained by others, the share shrinks; a larger one faster.
        let mut small = share.clone();
        let mut large = share.clone();
        large.share = 0.5;
        drained_by_others(&mut small, 4.0, 4.0, 5);
        drained_by_others(&mut large, 4.0, 4.0, 5);
        assert!(small.share() < 2.0 / 35.0);
        assert!(large.share() / 0.5 < small.share() / (2.0 / 35.0));
        // A 429 cuts it, once per lot of calls (against the same reports answered).
        let mut answered = small.clone();
        small.observe(at(30.0), at(29.0), requests(0.0), true);
        small.observe(at(30.0), at(29.5), requests(0.0), true);
        answered.observe(at(30.0), at(29.0), requests(0.0), false);
        answered.observe(at(30.0), at(29.5), requests(0.0), false);
        let cut = small.share() / answered.share();
        assert!((cut - CUT).abs() < 0.01, "{cut}");
        // Room that is not drained grows it.
        let before = small.share();
        small.accepted(at(40.0), 500.0);
        small.observe(at(40.0), at(40.0), requests(5.0), false);
        assert!(small.share() > before);
    }

    #[test]
    fn when_the_others_leave_the_quota_is_all_its_own_again() {
        let mut share = QuotaShare::default();
        share.observe(at(0.0), at(0.0), requests(30.0), false);
        let t = drained_by_others(&mut share, 0.0, 4.0, 30);
        assert!(share.share() < 0.2, "{}", share.share());
        // Alone: the room falls by its own calls only. Within a minute it is all its own.
        let mut quota: f64 = 0.0;
        for call in 1..=60 {
            let now = t + f64::from(call);
            quota = (quota + 1.0).min(60.0) - 1.0;
            share.accepted(at(now), 500.0);
            share.observe(at(now), at(now), requests(quota), false);
        }
        assert_eq!(share.share(), 1.0);
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
