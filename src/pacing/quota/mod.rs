//! Quotas as providers count them: a token budget beside the request bucket, call costs
//! estimated and corrected from reported usage, and the limits a provider reports about
//! itself, which hold its calls before any 429.
//!
//! A call's cost before it starts is an estimate: its texts' input tokens, as much again
//! for the output (a translation is about as long as its source), plus the prompt's
//! share (system prompt, instructions, context). When the reply reports `usage`, the
//! real figure replaces the estimate in the budget (a refund or an extra charge), and
//! that provider's estimates are scaled towards the figures it reports.
//!
//! Here: a provider's quota (`ProviderQuota`: its cost model, the windows it reported
//! and the calls started since) and its snapshot. `cost` is a call's estimated cost,
//! `token_budget` the pacer's own token budget, `window` one reported window.

use std::collections::VecDeque;

use crate::call::{ReportedLimits, Usage};
use crate::quota_share::{QuotaShare, Unit};
use crate::time::{Duration, Instant};

mod cost;
mod token_budget;
mod window;

pub use cost::{input_tokens, max_batch_input, prompt_input, raw_cost};
pub use token_budget::TokenBudget;
pub use window::MAX_RESET;
use window::{whole_window, Room, Window};

/// How far one reply moves a provider's cost ratio towards what it reported.
const LEARNING: f64 = 0.3;
/// Most calls remembered as started since a provider's last report.
const LEDGER_LIMIT: usize = 4096;

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
                reset_in: w.reported_reset.since(now),
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
            restored.reported_reset = restored.reset;
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
mod tests;
