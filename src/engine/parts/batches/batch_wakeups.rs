//! The wake-ups a batch's state needs (its collection window's end, its backoff's end,
//! the budgets that held back its dealt call), which this part alone judges: apart
//! because they are the part's deadlines, answered through `next_wakeup` and `wake` as
//! every part with a deadline answers.

use core::cmp::Reverse;

use super::{Batch, Batches, State};
use crate::slab::Id;
use crate::time::Instant;

/// A batch's wake-up: its collection window ends, or its backoff does, or the budgets
/// that held back its dealt call hold it. At one instant, windows come first (the order
/// the engine's wake-ups have always had).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Wakeup {
    Due(Id<Batch>),
    Backoff(Id<Batch>),
    Held(Id<Batch>),
}

impl Batches {
    /// Whether `wakeup` still has a reason to fire: its batch is still in the state it
    /// was set for.
    fn wakeup_live(&self, wakeup: Wakeup) -> bool {
        match wakeup {
            Wakeup::Due(key) => self
                .slab
                .get(key)
                .is_some_and(|b| b.state == State::Collecting),
            Wakeup::Backoff(key) => self
                .slab
                .get(key)
                .is_some_and(|b| matches!(b.state, State::Backoff(_))),
            // Dealt again since (a new call), or started: the new call has its own.
            Wakeup::Held(key) => self.slab.get(key).is_some_and(|b| b.state == State::Ready),
        }
    }

    /// The soonest wake-up a batch needs.
    pub(in crate::engine) fn next_wakeup(&self) -> Option<Instant> {
        self.wakeups.peek().map(|Reverse((at, _))| *at)
    }

    /// Drops the wake-ups at the top whose batches moved on, so that `next_wakeup` never
    /// wakes anyone for nothing.
    pub(in crate::engine) fn drop_stale(&mut self) {
        while let Some(&Reverse((_, wakeup))) = self.wakeups.peek() {
            if self.wakeup_live(wakeup) {
                break;
            }
            self.wakeups.pop();
        }
        let (ready, listed) = (&self.ready, &mut self.listed);
        self.due.retain(|p| {
            let due = ready.get(*p as usize).is_some_and(|s| s.first().is_some());
            if !due {
                if let Some(flag) = listed.get_mut(*p as usize) {
                    *flag = false;
                }
            }
            due
        });
    }

    /// Fires the soonest wake-up if it is due at `now`; whether there was one.
    pub(in crate::engine) fn wake(&mut self, now: Instant) -> bool {
        let Some(&Reverse((_, wakeup))) = self.wakeups.peek().filter(|w| w.0 .0 <= now) else {
            return false;
        };
        self.wakeups.pop();
        match wakeup {
            Wakeup::Due(key) => self.window_closed(key, now),
            Wakeup::Backoff(key) => self.backoff_over(key, now),
            // It only wakes the engine, which tries the call again.
            Wakeup::Held(_) => {}
        }
        true
    }

    /// Whether collecting batch `key` has its wake-up (for `Engine::check`).
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn has_due_wakeup(&self, key: Id<Batch>) -> bool {
        let due = Wakeup::Due(key);
        self.wakeups.iter().any(|Reverse((_, w))| *w == due)
    }

    /// A collecting batch's window may have closed at `now`.
    fn window_closed(&mut self, key: Id<Batch>, now: Instant) {
        let due = self.slab.get(key).is_some_and(|b| {
            b.state == State::Collecting && b.due_at(self.limits_for(b.provider)) <= now
        });
        if due {
            self.make_ready(key);
        }
    }

    /// A batch's backoff may be over at `now`.
    fn backoff_over(&mut self, key: Id<Batch>, now: Instant) {
        let over = self
            .slab
            .get(key)
            .is_some_and(|b| matches!(b.state, State::Backoff(until) if until <= now));
        if over {
            self.make_ready(key);
        }
    }

    /// The call dealt from due batch `key` did not fit its budgets until `at`: the engine
    /// wakes then. The batch first in line, whose cost `poll_timeout` reads, may be
    /// another by then, or cheaper than the call dealt (a deal may add items).
    pub(in crate::engine) fn hold(&mut self, key: Id<Batch>, at: Instant) {
        self.wakeups.push(Reverse((at, Wakeup::Held(key))));
    }

    /// The batch waits out a retry backoff until `until`.
    pub(in crate::engine) fn back_off(&mut self, key: Id<Batch>, until: Instant) {
        self.set_state(key, State::Backoff(until));
        self.wakeups.push(Reverse((until, Wakeup::Backoff(key))));
    }
}
