//! One of a provider's reported windows (requests or tokens), as of its report: the room
//! it leaves, its refill when the whole window is reported, and its reset. Apart because
//! a window is read from one report alone; the provider's quota keeps two of them and
//! the calls started since.

use crate::bucket::TokenBucket;
use crate::call::ReportedLimits;
use crate::quota_share::{Unit, WholeWindow};
use crate::time::{Duration, Instant};

/// A provider that reports no room but not when its window resets is held this long:
/// then one call finds out, and if the window is still full, its 429's Retry-After
/// says how long to wait (a minute's hold would stall a quota that refills every
/// second).
const UNKNOWN_RESET: Duration = Duration::from_micros(1_000_000);

/// The longest reset a report is taken at: a reset further away (years, by mistake) is
/// read as this, so a contradictory report never stalls a provider longer.
pub const MAX_RESET: Duration = Duration::from_micros(10 * 60 * 1_000_000);
/// The refill of a window reported whole, per second: from what was left to the whole
/// window by the reset. With `others` (other clients share the quota), it is counted on
/// one unit less (on half the gap where that is less): what is left comes as a whole
/// number, rounded down (OpenAI's and Groq's headers), so up to one unit more was left,
/// and clients that each count the refill a little high together meet 429s. A pacer
/// alone counts it as reported. A window reported whole says nothing of its refill: a
/// window's worth per longest reset, until the next report says more.
fn refill_rate(whole: f64, remaining: f64, reset: Duration, others: bool) -> f64 {
    let gap = whole - remaining;
    let counted = if others {
        (gap - 1.0).max(gap / 2.0)
    } else {
        gap
    };
    (counted / reset.as_secs()).max(whole / MAX_RESET.as_secs())
}

/// The window a report gives whole, as the quota's share reads it: the requests window
/// if it is whole (counted exactly), else the tokens window.
pub(super) fn whole_window(limits: &ReportedLimits, cost: f64) -> Option<WholeWindow> {
    let short = |left: Option<f64>, need: f64| left.is_some_and(|left| left < need);
    let drained = short(limits.requests_remaining, 1.0) || short(limits.tokens_remaining, cost);
    let read = |unit, remaining: Option<f64>, whole: Option<f64>, reset: Option<Duration>| {
        let remaining = remaining.filter(|r| r.is_finite() && *r >= 0.0)?;
        let whole = whole.filter(|w| w.is_finite() && *w > 0.0)?.max(remaining);
        let reset = reset.filter(|r| *r > Duration::ZERO)?.min(MAX_RESET);
        Some(WholeWindow {
            unit,
            remaining,
            whole,
            rate: refill_rate(whole, remaining, reset, true),
            drained,
            in_flight: 0.0,
        })
    };
    let requests = (limits.requests_remaining, limits.requests_limit);
    let tokens = (limits.tokens_remaining, limits.tokens_limit);
    read(
        Unit::Requests,
        requests.0,
        requests.1,
        limits.requests_reset,
    )
    .or_else(|| read(Unit::Tokens, tokens.0, tokens.1, limits.tokens_reset))
}

/// One of a provider's reported windows (requests or tokens), as of its report.
///
/// Providers such as OpenAI and Groq refill continuously and report as reset the time
/// until the window is whole again. When a report also gives the whole window
/// (`requestsLimit` / `tokensLimit`), the window is read as a bucket that refills from
/// what was left to the whole window by the reset, and the room it has in the meantime
/// is used (in proportion), rather than stalling until the reset. Without the whole
/// window nothing is guessed (an earlier report's room says nothing of this one's
/// window): what is left is all the room until the reset, and then the window is whole
/// again. What is left is taken as of the report's arrival (the refill during the call
/// is not counted), and calls that started after the reporting call are counted against
/// it (the report could not know them): both err on the side of no 429.
#[derive(Clone, Debug)]
pub(super) struct Window {
    pub(super) room: Room,
    reported_at: Instant,
    /// The reset this pacer waits for: the reported one, lengthened (`lengthen`).
    pub(super) reset: Instant,
    /// The reset as reported, which a snapshot keeps.
    pub(super) reported_reset: Instant,
    /// The draw that lengthens a wait for this pacer's share of the refill, in [0, 1).
    lengthen: f64,
}

/// A window's room until its reset.
#[derive(Clone, Debug)]
pub(super) enum Room {
    /// The whole window is known: room refills in proportion until the reset. `room`
    /// is the window's room as reported; `share`, for a pacer that shares the quota
    /// with others, its part of that room and of its refill.
    Refilling {
        room: TokenBucket,
        share: Option<TokenBucket>,
        whole: f64,
    },
    /// Only what was left is known: no more until the reset. Then the window is whole
    /// again, and the report shows it holds at least what was left plus what the
    /// reporting call used (`after`): that much until the next report, however large
    /// the first call after the reset.
    UntilReset {
        left: f64,
        after: f64,
        taken_after: bool,
    },
}

impl Window {
    /// The window a report describes, if it names what is left: `used` is what the
    /// reporting call took of it, `whole` the whole window when reported, `since` what
    /// the calls started after the reporting call take. `share` is this pacer's share
    /// of the quota; `lengthen` (in [0, 1)) draws how much a wait for the reset is
    /// lengthened, so that clients that read the same reset do not call at one instant.
    pub(super) fn from(
        now: Instant,
        remaining: Option<f64>,
        reset: Option<Duration>,
        (used, whole, since): (f64, Option<f64>, f64),
        (share, lengthen, phase): (f64, f64, Option<f64>),
    ) -> Option<Window> {
        let remaining = remaining.filter(|r| r.is_finite() && *r >= 0.0)?;
        let reset = reset
            .filter(|r| *r > Duration::ZERO)
            .unwrap_or(UNKNOWN_RESET)
            .min(MAX_RESET);
        let whole = whole.filter(|w| w.is_finite() && *w > 0.0);
        let room = match whole {
            Some(whole) => {
                let whole = whole.max(remaining + used);
                let rate = refill_rate(whole, remaining, reset, share < 1.0);
                let mut room = TokenBucket::with_tokens(rate, whole, remaining, now);
                room.take_amount(now, since);
                let share = (share < 1.0).then(|| {
                    // This pacer's part, never smaller than the reporting call: a call
                    // larger than its bucket would leave a debt capped at one bucket,
                    // and go faster than its share.
                    let part = (whole * share).max(used).min(whole);
                    let tokens = phase.map_or(remaining * share, |u| u * used);
                    let mut own = TokenBucket::with_tokens(rate * share, part, tokens, now);
                    own.take_amount(now, since);
                    own
                });
                Room::Refilling { room, share, whole }
            }
            None => Room::UntilReset {
                left: remaining - since,
                after: remaining + used,
                taken_after: false,
            },
        };
        Some(Window {
            room,
            reported_at: now,
            reset: now + reset + crate::retry::lengthening(reset, lengthen),
            reported_reset: now + reset,
            lengthen,
        })
    }

    /// The whole window, when it was reported.
    pub(super) fn whole(&self) -> Option<f64> {
        match &self.room {
            Room::Refilling { whole, .. } => Some(*whole),
            Room::UntilReset { .. } => None,
        }
    }

    /// The room left at `now`.
    pub(super) fn left(&self, now: Instant) -> f64 {
        match &self.room {
            Room::Refilling { room, .. } => room.tokens(now),
            Room::UntilReset { left, .. } if now < self.reset => *left,
            Room::UntilReset { after, .. } => *after,
        }
    }

    /// A call started at `now` takes `used` of the room.
    pub(super) fn take(&mut self, now: Instant, used: f64) {
        let reset = self.reset;
        match &mut self.room {
            Room::Refilling { room, share, .. } => {
                room.take_amount(now, used);
                if let Some(own) = share {
                    own.take_amount(now, used);
                }
            }
            Room::UntilReset { left, .. } if now < reset => *left -= used,
            Room::UntilReset {
                after, taken_after, ..
            } => {
                *after -= used;
                *taken_after = true;
            }
        }
    }

    /// When the room reaches `need`, if not now. A call larger than the window as far
    /// as it is known waits for the reset, when the window is whole, however large.
    pub(super) fn ready_at(&self, now: Instant, need: f64) -> Option<Instant> {
        let at = match &self.room {
            Room::Refilling { room, share, whole } => {
                let mut at = room.ready_at_amount(now, need);
                if let Some(own) = share {
                    let mine = own.ready_at_amount(now, need);
                    if mine > now {
                        // Pacers that share the quota read reports alike: their waits
                        // for their shares of the refill are spread, as a reset's are.
                        let wait = mine.since(self.reported_at);
                        at = at.max(mine + crate::retry::lengthening(wait, self.lengthen));
                    }
                }
                if need > *whole {
                    at.max(self.reset)
                } else {
                    at
                }
            }
            Room::UntilReset { left, .. } if now < self.reset => {
                if *left >= need {
                    now
                } else {
                    self.reset
                }
            }
            // After the reset: the first call goes however large; then what the report
            // showed the window holds, until a new report (or this one expires).
            Room::UntilReset {
                after, taken_after, ..
            } if *after >= need || !*taken_after => now,
            Room::UntilReset { .. } => self.expires(),
        };
        (at > now).then_some(at)
    }

    /// Until when the report is kept: one more window after its reset, by which a
    /// quota that refills has been whole at least once. A provider that stops
    /// reporting is then paced by the pacer's own limits again.
    pub(super) fn live(&self, now: Instant) -> bool {
        now < self.expires()
    }

    /// When the report is no longer kept.
    fn expires(&self) -> Instant {
        self.reset + self.reset.since(self.reported_at)
    }
}
