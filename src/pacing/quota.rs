//! Quotas as providers count them: a token budget beside the request bucket, call costs
//! estimated and corrected from reported usage, and the limits a provider reports about
//! itself, which hold its calls before any 429.
//!
//! A call's cost before it starts is an estimate: its texts' input tokens, as much again
//! for the output (a translation is about as long as its source), plus the prompt's
//! share (system prompt, instructions, context). When the reply reports `usage`, the
//! real figure replaces the estimate in the budget (a refund or an extra charge), and
//! that provider's estimates are scaled towards the figures it reports.

use crate::bucket::TokenBucket;
use crate::call::{ReportedLimits, Usage};
use crate::estimate::estimate_tokens;
use crate::quota_share::{QuotaShare, Unit, WholeWindow};
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// Tokens of the prompt around a batch's texts: the system prompt and the layout's
/// instructions (about 110 tokens in the markers layout).
const BATCH_PROMPT_TOKENS: f64 = 140.0;
/// Tokens of the prompt around a single text.
const SINGLE_PROMPT_TOKENS: f64 = 40.0;
/// A provider that reports no room but not when its window resets is held this long:
/// then one call finds out, and if the window is still full, its 429's Retry-After
/// says how long to wait (a minute's hold would stall a quota that refills every
/// second).
const UNKNOWN_RESET: Duration = Duration::from_micros(1_000_000);
/// How far one reply moves a provider's cost ratio towards what it reported.
const LEARNING: f64 = 0.3;

/// The estimated input tokens of a text.
pub fn input_tokens(text: &str) -> f64 {
    estimate_tokens(text)
}

/// A call's cost before provider scaling: input, as much again for output, and the
/// prompt's share (`context_tokens` of the items' shared context included).
pub fn raw_cost(input: f64, context_tokens: f64, is_batch: bool) -> f64 {
    let prompt = if is_batch {
        BATCH_PROMPT_TOKENS
    } else {
        SINGLE_PROMPT_TOKENS
    };
    2.0 * input + context_tokens + prompt
}

/// A call's estimated input: its texts, the items' shared context and the prompt's
/// share, as the provider counts its input tokens.
pub fn prompt_input(input: f64, context_tokens: f64, is_batch: bool) -> f64 {
    let prompt = if is_batch {
        BATCH_PROMPT_TOKENS
    } else {
        SINGLE_PROMPT_TOKENS
    };
    input + context_tokens + prompt
}

/// The largest input a batch may carry so that its cost fits a budget of `capacity`
/// tokens (a batch never grows past what the token bucket can ever hold).
pub fn max_batch_input(capacity: f64) -> f64 {
    ((capacity - BATCH_PROMPT_TOKENS) / 2.0).max(0.0)
}

/// The pacer's token budget (`tokensPerMinute`): a bucket refilled at a minute's worth
/// per minute, holding at most a minute's worth, starting full.
#[derive(Clone, Debug)]
pub struct TokenBudget {
    bucket: TokenBucket,
}

impl TokenBudget {
    /// A full budget of `per_minute` tokens, or `None` for no token limit (0).
    pub fn new(per_minute: f64, now: Instant) -> Option<TokenBudget> {
        (per_minute > 0.0).then(|| TokenBudget {
            bucket: TokenBucket::full(per_minute / 60.0, per_minute, now),
        })
    }

    /// A new `tokensPerMinute`: like a larger `capacity`, it does not refill the budget.
    pub fn set_per_minute(&mut self, now: Instant, per_minute: f64) {
        self.bucket.set_rate(now, per_minute / 60.0);
        self.bucket.set_capacity(now, per_minute);
    }

    /// The most it ever holds.
    pub fn capacity(&self) -> f64 {
        self.bucket.rate() * 60.0
    }

    /// Whether a call of `cost` may start now.
    pub fn holds(&self, now: Instant, cost: f64) -> bool {
        self.bucket.holds(now, cost)
    }

    /// When a call of `cost` may start.
    pub fn ready_at(&self, now: Instant, cost: f64) -> Instant {
        self.bucket.ready_at_amount(now, cost)
    }

    /// A call of `cost` started.
    pub fn spend(&mut self, now: Instant, cost: f64) {
        self.bucket.take_amount(now, cost);
    }

    /// The call that was charged `estimated` really cost `actual`.
    pub fn correct(&mut self, now: Instant, estimated: f64, actual: f64) {
        self.bucket.give(now, estimated - actual);
    }
}

/// The longest reset a report is taken at: a reset further away (years, by mistake) is
/// read as this, so a contradictory report never stalls a provider longer.
pub const MAX_RESET: Duration = Duration::from_micros(10 * 60 * 1_000_000);
/// The refill of a window reported whole, per second: from what was left to the whole
/// window by the reset. What is left comes as a whole number, rounded down (OpenAI's and
/// Groq's headers): up to one unit more was left, so the refill is counted on one unit
/// less (on half the gap where that is less), never more than it is. A window reported
/// whole says nothing of its refill: a window's worth per longest reset, until the next
/// report says more.
fn refill_rate(whole: f64, remaining: f64, reset: Duration) -> f64 {
    let gap = whole - remaining;
    ((gap - 1.0).max(gap / 2.0) / reset.as_secs()).max(whole / MAX_RESET.as_secs())
}

/// The window a report gives whole, as the quota's share reads it: the requests window
/// if it is whole (counted exactly), else the tokens window.
fn whole_window(limits: &ReportedLimits, cost: f64) -> Option<WholeWindow> {
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
            rate: refill_rate(whole, remaining, reset),
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

/// Most calls remembered as started since a provider's last report.
const LEDGER_LIMIT: usize = 4096;

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
struct Window {
    room: Room,
    reported_at: Instant,
    reset: Instant,
    /// The draw that lengthens a wait for this pacer's share of the refill, in [0, 1).
    lengthen: f64,
}

/// A window's room until its reset.
#[derive(Clone, Debug)]
enum Room {
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
    fn from(
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
                let rate = refill_rate(whole, remaining, reset);
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
            lengthen,
        })
    }

    /// The whole window, when it was reported.
    fn whole(&self) -> Option<f64> {
        match &self.room {
            Room::Refilling { whole, .. } => Some(*whole),
            Room::UntilReset { .. } => None,
        }
    }

    /// The room left at `now`.
    fn left(&self, now: Instant) -> f64 {
        match &self.room {
            Room::Refilling { room, .. } => room.tokens(now),
            Room::UntilReset { left, .. } if now < self.reset => *left,
            Room::UntilReset { after, .. } => *after,
        }
    }

    /// A call started at `now` takes `used` of the room.
    fn take(&mut self, now: Instant, used: f64) {
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
    fn ready_at(&self, now: Instant, need: f64) -> Option<Instant> {
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
    fn live(&self, now: Instant) -> bool {
        now < self.expires()
    }

    /// When the report is no longer kept.
    fn expires(&self) -> Instant {
        self.reset + self.reset.since(self.reported_at)
    }
}

/// How a report is read.
#[derive(Copy, Clone, Debug, Default)]
pub struct Reading {
    /// When the reporting call started (about when the provider admitted it).
    pub started: Instant,
    /// Whether the provider accepted the call (an answer, not a 429), and what it cost.
    pub admitted: bool,
    pub tokens: f64,
    /// Whether the quota is read as shared with other clients (`sharedQuota`).
    pub shared: bool,
    /// Draws how much a wait for the reported reset is lengthened, in [0, 1).
    pub lengthen: f64,
}

/// One provider's cost model, the limits it reported, and the calls started since.
#[derive(Clone, Debug)]
pub struct ProviderQuota {
    /// Reported tokens over estimated tokens, learned from `usage`.
    ratio: f64,
    /// The ratio costs are estimated with: the highest seen lately (it jumps to a
    /// higher one at once and eases back towards `ratio`), so that a call the provider
    /// counts a little more than the average is not underestimated into a 429.
    high: f64,
    requests: Option<Window>,
    tokens: Option<Window>,
    /// The ticket of the call whose report is held (later reports replace it, older
    /// ones arriving late do not).
    reported: u64,
    /// Tickets handed to calls as they start.
    next_ticket: u64,
    /// Calls started after the reporting call: their ticket and estimated tokens.
    since_report: VecDeque<(u64, f64)>,
    /// The reset of the hold last announced as a `limited` event.
    announced: Option<Instant>,
    /// This pacer's share of the quota, when others use it too.
    share: QuotaShare,
}

impl Default for ProviderQuota {
    fn default() -> Self {
        ProviderQuota {
            ratio: 1.0,
            high: 1.0,
            requests: None,
            tokens: None,
            reported: 0,
            next_ticket: 1,
            since_report: VecDeque::new(),
            announced: None,
            share: QuotaShare::default(),
        }
    }
}

/// Why a provider's calls are held.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// It reported no room for another request.
    Requests,
    /// It reported fewer tokens left than the next call costs.
    Tokens,
}

impl Held {
    /// Name for JS.
    pub fn as_str(self) -> &'static str {
        match self {
            Held::Requests => "requests",
            Held::Tokens => "tokens",
        }
    }
}

impl ProviderQuota {
    /// A call's cost for this provider, from its raw estimate.
    pub fn cost(&self, raw: f64) -> f64 {
        raw * self.high
    }

    /// Takes in what a reply or an error reported for the call holding `ticket`, which
    /// was charged `cost`, as `reading` says. A report older than the one held is ignored.
    pub fn report(
        &mut self,
        now: Instant,
        (ticket, cost): (u64, f64),
        limits: &ReportedLimits,
        reading: &Reading,
    ) {
        if reading.admitted {
            self.share.accepted(now, reading.tokens);
        }
        if ticket < self.reported {
            return;
        }
        let later = |t: &&(u64, f64)| t.0 > ticket;
        let started = self.since_report.iter().filter(later).count() as f64;
        let spent: f64 = self.since_report.iter().filter(later).map(|(_, c)| c).sum();
        let mut met_others = false;
        if reading.shared {
            if let Some(mut window) = whole_window(limits, cost) {
                // Own calls that started after the reporting call may be in what the
                // report shows (a provider may tell the room as of its answer): they
                // are not counted as others'.
                window.in_flight = match window.unit {
                    Unit::Requests => started,
                    Unit::Tokens => spent,
                };
                let rejected = !reading.admitted;
                met_others = self.share.observe(now, reading.started, window, rejected);
            }
        }
        let share = if reading.shared {
            self.share.share()
        } else {
            1.0
        };
        // A pacer that has just met others starts its share's refill at a random
        // phase: a crowd that met the same drained quota at once spreads its next calls
        // over the refill, instead of calling together when each share has refilled.
        let phase = met_others.then_some(reading.lengthen);
        let how = (share, reading.lengthen, phase);
        let requests = Window::from(
            now,
            limits.requests_remaining,
            limits.requests_reset,
            (1.0, limits.requests_limit, started),
            how,
        );
        let tokens = Window::from(
            now,
            limits.tokens_remaining,
            limits.tokens_reset,
            (cost, limits.tokens_limit, spent),
            how,
        );
        if requests.is_none() && tokens.is_none() {
            return;
        }
        if requests.is_some() {
            self.requests = requests;
        }
        if tokens.is_some() {
            self.tokens = tokens;
        }
        self.reported = ticket;
        while self.since_report.front().is_some_and(|(t, _)| *t <= ticket) {
            self.since_report.pop_front();
        }
    }

    /// Scales later estimates towards what the provider reported for a call whose raw
    /// estimate was `raw`.
    pub fn learn(&mut self, raw: f64, usage: &Usage) {
        let actual = usage.input_tokens + usage.output_tokens;
        if raw > 0.0 && actual > 0.0 {
            let seen = (actual / raw).clamp(0.25, 4.0);
            self.ratio += (seen - self.ratio) * LEARNING;
            self.high = seen.max(self.high + (self.ratio - self.high) * LEARNING);
        }
    }

    /// Until when, and why, a call of `cost` must wait for the provider's own windows.
    pub fn held(&self, now: Instant, cost: f64) -> Option<(Instant, Held)> {
        let live = |w: &Option<Window>| w.as_ref().filter(|w| w.live(now)).cloned();
        let requests = live(&self.requests)
            .and_then(|w| w.ready_at(now, 1.0))
            .map(|at| (at, Held::Requests));
        let tokens = live(&self.tokens)
            .and_then(|w| w.ready_at(now, cost))
            .map(|at| (at, Held::Tokens));
        match (requests, tokens) {
            (Some(r), Some(t)) => Some(if r.0 >= t.0 { r } else { t }),
            (r, t) => r.or(t),
        }
    }

    /// Whether a live report gives a whole window: its room then decides when calls
    /// start, not the adaptive rate's guess.
    pub fn reports_whole(&self, now: Instant) -> bool {
        let whole = |w: &Option<Window>| {
            w.as_ref()
                .is_some_and(|w| w.live(now) && w.whole().is_some())
        };
        whole(&self.requests) || whole(&self.tokens)
    }

    /// Whether the last report showed room for a call now (after a 429 episode, it
    /// ends the adaptive rate's slow zone).
    pub fn shows_room(&self, now: Instant, cost: f64) -> bool {
        self.reports_whole(now) && self.held(now, cost).is_none()
    }

    /// The rate of calls this pacer has been taking of the quota lately, per second,
    /// while reports of the quota are in force.
    pub fn taking_rate(&self, now: Instant) -> Option<f64> {
        self.reports_in_force(now)
            .then(|| self.share.taking_rate(now))
            .flatten()
    }

    /// This pacer's share of the quota (1 alone), as its reports show it.
    pub fn share(&self) -> f64 {
        self.share.share()
    }

    /// Whether a report still bounds the provider's calls at `now`.
    pub fn reports_in_force(&self, now: Instant) -> bool {
        let live = |w: &Option<Window>| w.as_ref().is_some_and(|w| w.live(now));
        live(&self.requests) || live(&self.tokens)
    }

    /// Whether a hold until `until` is new (to be announced once).
    pub fn announce(&mut self, until: Instant) -> bool {
        let new = self.announced != Some(until);
        self.announced = Some(until);
        new
    }

    /// A call of `cost` started: it takes its share of the windows reported so far.
    /// Its ticket says, when its own report comes, which calls that report knew of.
    pub fn spend(&mut self, now: Instant, cost: f64) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        for (window, used) in [(&mut self.requests, 1.0), (&mut self.tokens, cost)] {
            match window {
                Some(w) if w.live(now) => w.take(now, used),
                _ => *window = None,
            }
        }
        if self.requests.is_none() && self.tokens.is_none() {
            self.since_report.clear();
            return ticket;
        }
        if self.since_report.len() == LEDGER_LIMIT {
            self.since_report.pop_front();
        }
        self.since_report.push_back((ticket, cost));
        ticket
    }

    /// The last report, for a snapshot: each window's room now, whole window and time
    /// to its reset.
    pub fn saved(&self, now: Instant) -> Option<SavedLimits> {
        let save = |w: &Option<Window>| {
            w.as_ref().filter(|w| w.live(now)).map(|w| SavedWindow {
                remaining: w.left(now).max(0.0),
                whole: w.whole().unwrap_or(0.0),
                reset_in: w.reset.since(now),
            })
        };
        let (requests, tokens) = (save(&self.requests), save(&self.tokens));
        (requests.is_some() || tokens.is_some()).then_some(SavedLimits { requests, tokens })
    }

    /// Resumes from a saved report, `elapsed` after it was taken: as a report that
    /// arrived then, refilled since.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn restore(&mut self, now: Instant, saved: &SavedLimits, elapsed: Duration) {
        let window = |w: &Option<SavedWindow>| {
            let w = w.as_ref()?;
            // 0: the whole window was not reported.
            let whole = (w.whole.is_finite() && w.whole > 0.0).then_some(w.whole);
            let remaining = Some(whole.map_or(w.remaining, |whole| w.remaining.min(whole)));
            let mut restored = Window::from(
                now,
                remaining,
                Some(w.reset_in),
                (0.0, whole, 0.0),
                (1.0, 0.0, None),
            )?;
            if let Room::Refilling { room, .. } = &mut restored.room {
                let refill = elapsed.as_secs() * room.rate();
                room.give(now, refill);
            }
            // A stored reset further away than any report is read (an edited snapshot)
            // holds no longer than a report could.
            let reset_in = w.reset_in.min(MAX_RESET);
            let left = reset_in.as_micros().saturating_sub(elapsed.as_micros());
            restored.reset = now + Duration::from_micros(left);
            Some(restored)
        };
        self.requests = window(&saved.requests);
        self.tokens = window(&saved.tokens);
        self.since_report.clear();
        self.reported = self.next_ticket;
    }
}

/// A provider's reported window as a snapshot keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedWindow {
    /// Room left at the snapshot.
    pub remaining: f64,
    /// The whole window, as the provider reported it (0: not reported).
    pub whole: f64,
    /// Time from the snapshot to its reset.
    pub reset_in: Duration,
}

/// A provider's last report as a snapshot keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedLimits {
    /// Its requests window.
    pub requests: Option<SavedWindow>,
    /// Its tokens window.
    pub tokens: Option<SavedWindow>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64) -> Instant {
        Instant::from_millis(ms)
    }

    /// A report read as by a pacer alone, for a call that was not admitted.
    fn report(
        quota: &mut ProviderQuota,
        now: Instant,
        ticket: u64,
        cost: f64,
        limits: &ReportedLimits,
    ) {
        quota.report(now, (ticket, cost), limits, &Reading::default());
    }

    #[test]
    fn a_budget_starts_full_and_refills_a_minutes_worth_per_minute() {
        let mut budget = TokenBudget::new(6000.0, at(0.0)).unwrap();
        assert!(budget.holds(at(0.0), 6000.0));
        budget.spend(at(0.0), 6000.0);
        assert!(!budget.holds(at(0.0), 100.0));
        assert_eq!(budget.ready_at(at(0.0), 100.0), at(1000.0));
        // Reported usage below the estimate is given back.
        budget.correct(at(0.0), 6000.0, 3000.0);
        assert!(budget.holds(at(0.0), 3000.0));
        assert!(TokenBudget::new(0.0, at(0.0)).is_none());
    }

    #[test]
    fn a_call_larger_than_the_budget_waits_for_a_full_bucket() {
        let mut budget = TokenBudget::new(600.0, at(0.0)).unwrap();
        assert!(budget.holds(at(0.0), 5000.0));
        budget.spend(at(0.0), 5000.0);
        // In debt, of one bucket at most: a full bucket again after two buckets' refill.
        assert_eq!(budget.ready_at(at(0.0), 600.0), at(120_000.0));
    }

    fn limits(requests: Option<(f64, f64)>, tokens: Option<(f64, f64)>) -> ReportedLimits {
        ReportedLimits {
            requests_remaining: requests.map(|r| r.0),
            requests_reset: requests.map(|r| Duration::from_millis(r.1)),
            tokens_remaining: tokens.map(|t| t.0),
            tokens_reset: tokens.map(|t| Duration::from_millis(t.1)),
            requests_limit: None,
            tokens_limit: None,
        }
    }

    #[test]
    fn reported_limits_hold_calls_until_there_is_room() {
        let mut quota = ProviderQuota::default();
        let ticket = quota.spend(at(0.0), 100.0);
        let reported = limits(Some((1.0, 2000.0)), Some((500.0, 1000.0)));
        report(&mut quota, at(0.0), ticket, 100.0, &reported);
        assert_eq!(quota.held(at(0.0), 400.0), None);
        assert_eq!(quota.held(at(0.0), 600.0), Some((at(1000.0), Held::Tokens)));
        quota.spend(at(0.0), 400.0);
        assert_eq!(
            quota.held(at(10.0), 10.0),
            Some((at(2000.0), Held::Requests))
        );
        assert_eq!(quota.held(at(2000.0), 10.0), None);
    }

    #[test]
    fn a_window_reported_whole_refills_in_proportion_until_its_reset() {
        // 30 a minute, reported whole: none is left for 60 s.
        let mut quota = ProviderQuota::default();
        let first = quota.spend(at(0.0), 0.0);
        let whole = ReportedLimits {
            requests_limit: Some(30.0),
            ..limits(Some((0.0, 60_000.0)), None)
        };
        report(&mut quota, at(300.0), first, 0.0, &whole);
        // Not the whole minute: one request's room comes back every 2 s (counted on 29
        // of the 30 that refill, as what was left may have been up to one more).
        let back = 300.0 + 60_000.0 / 29.0;
        let (until, why) = quota.held(at(300.0), 0.0).unwrap();
        assert_eq!(why, Held::Requests);
        assert!((until.as_millis() - back).abs() < 0.01, "{until:?}");
        assert_eq!(quota.held(at(back + 0.01), 0.0), None);
    }

    #[test]
    fn without_the_whole_window_calls_wait_for_the_reset_and_nothing_is_guessed() {
        // An earlier report left 900,000 tokens; this one leaves 100 for 5 s.
        let mut quota = ProviderQuota::default();
        let first = quota.spend(at(0.0), 0.0);
        report(
            &mut quota,
            at(0.0),
            first,
            0.0,
            &limits(None, Some((900_000.0, 1000.0))),
        );
        let second = quota.spend(at(0.0), 0.0);
        report(
            &mut quota,
            at(100.0),
            second,
            0.0,
            &limits(None, Some((100.0, 5000.0))),
        );
        assert_eq!(
            quota.held(at(100.0), 4000.0),
            Some((at(5100.0), Held::Tokens))
        );
        assert_eq!(quota.held(at(5100.0), 4000.0), None);
        // No room left, no window: the next call waits the reset out (1.5 s).
        let mut quota = ProviderQuota::default();
        let first = quota.spend(at(0.0), 0.0);
        report(
            &mut quota,
            at(0.0),
            first,
            0.0,
            &limits(None, Some((0.0, 1500.0))),
        );
        assert_eq!(quota.held(at(0.0), 10.0), Some((at(1500.0), Held::Tokens)));
    }

    #[test]
    fn calls_started_after_the_reporting_call_count_against_its_report() {
        let mut quota = ProviderQuota::default();
        let first = quota.spend(at(0.0), 0.0);
        report(
            &mut quota,
            at(0.0),
            first,
            0.0,
            &limits(Some((9.0, 10_000.0)), None),
        );
        let reporting = quota.spend(at(0.0), 0.0);
        let later: Vec<u64> = (0..3).map(|_| quota.spend(at(0.0), 0.0)).collect();
        // The report of `reporting` knew nothing of the three calls after it.
        report(
            &mut quota,
            at(100.0),
            reporting,
            0.0,
            &limits(Some((3.0, 10_000.0)), None),
        );
        assert_eq!(
            quota.held(at(100.0), 0.0).map(|h| h.1),
            Some(Held::Requests)
        );
        // A report older than the one held changes nothing.
        report(
            &mut quota,
            at(200.0),
            first,
            0.0,
            &limits(Some((9.0, 10_000.0)), None),
        );
        assert_eq!(
            quota.held(at(200.0), 0.0).map(|h| h.1),
            Some(Held::Requests)
        );
        // The latest call's report knows them all.
        let last = *later.last().unwrap();
        report(
            &mut quota,
            at(300.0),
            last,
            0.0,
            &limits(Some((2.0, 10_000.0)), None),
        );
        assert_eq!(quota.held(at(300.0), 0.0), None);
    }

    #[test]
    fn contradictory_reports_are_clamped_or_ignored() {
        let mut quota = ProviderQuota::default();
        let ticket = quota.spend(at(0.0), 0.0);
        // Remaining that is not a count is ignored.
        report(
            &mut quota,
            at(0.0),
            ticket,
            0.0,
            &limits(Some((f64::NAN, 1000.0)), None),
        );
        report(
            &mut quota,
            at(0.0),
            ticket,
            0.0,
            &limits(Some((-3.0, 1000.0)), None),
        );
        assert_eq!(quota.held(at(0.0), 0.0), None);
        // A reset years away holds no longer than the longest reset.
        let years = 3.0e11;
        report(
            &mut quota,
            at(0.0),
            ticket,
            0.0,
            &limits(Some((0.0, years)), None),
        );
        let (until, _) = quota.held(at(0.0), 0.0).unwrap();
        assert!(until <= at(0.0) + MAX_RESET, "{until:?}");
        // A reset in the past (0) reads as an unknown one: a second, not a stall.
        let mut quota = ProviderQuota::default();
        let ticket = quota.spend(at(0.0), 0.0);
        report(
            &mut quota,
            at(0.0),
            ticket,
            0.0,
            &limits(Some((0.0, 0.0)), None),
        );
        assert_eq!(quota.held(at(0.0), 0.0), Some((at(1000.0), Held::Requests)));
    }

    #[test]
    fn usage_scales_the_estimates() {
        let mut quota = ProviderQuota::default();
        for _ in 0..20 {
            quota.learn(
                100.0,
                &Usage {
                    input_tokens: 150.0,
                    output_tokens: 50.0,
                },
            );
        }
        assert!((quota.cost(100.0) - 200.0).abs() < 1.0);
        // A call counted higher than the average raises the estimate at once, then it
        // eases back: an estimate below what the provider counts would be a 429.
        let usage = |total: f64| Usage {
            input_tokens: total,
            output_tokens: 0.0,
        };
        quota.learn(100.0, &usage(210.0));
        assert!((quota.cost(100.0) - 210.0).abs() < 1e-9);
        for _ in 0..20 {
            quota.learn(100.0, &usage(200.0));
        }
        assert!((quota.cost(100.0) - 200.0).abs() < 1.0);
    }
}
