//! The `Runs` part: the calls of `pacer.run` (a page summary, a glossary lookup: a
//! provider call that is not a translation) while they wait, back off or run. A run has
//! no items and no batch; it waits in its provider's line by priority and arrival, like
//! a due batch, and goes through the same gate, pause and retries as a batch's call.
//!
//! Runs are few (a summary per page, not a call per paragraph), so the part is a slab
//! and each question is one pass over it: no index to keep in step, and no code of its
//! own per index type in the `.wasm`.

use core::cmp::Reverse;

use super::priority::Priority;
use super::tries::Try;
use crate::call::CallId;
use crate::settle::Ticket;
use crate::slab::{Id, Slab};
use crate::time::Instant;

/// A run's place in its provider's line: highest priority first, then arrival (the
/// arrival sequence of items, so that runs and batches of equal priority go in the
/// order they came). The fields compare in this order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(in crate::engine) struct RunKey {
    /// Its priority (reversed: the highest is the smallest key).
    pub(in crate::engine) priority: Reverse<Priority>,
    /// Its place in the arrival order of items and runs.
    pub(in crate::engine) arrival: u64,
    /// The run.
    pub(in crate::engine) run: Id<Run>,
}

/// Where a run is.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(in crate::engine) enum RunState {
    /// In its provider's line.
    Queued,
    /// Waiting for its backoff to end, then back in line.
    Backoff(Instant),
    /// Its call runs under this id.
    Running(CallId),
}

/// One `pacer.run` that has not ended.
#[derive(Debug)]
pub(in crate::engine) struct Run {
    ticket: Ticket,
    provider: u32,
    priority: Priority,
    seq: u64,
    state: RunState,
    /// Calls started, and failed tries counted apart by kind.
    attempts: u32,
    errors: u16,
    rate_limits: u16,
}

impl Run {
    /// The ticket its promise waits on.
    pub(in crate::engine) fn ticket(&self) -> Ticket {
        self.ticket
    }

    /// The provider it calls.
    pub(in crate::engine) fn provider(&self) -> u32 {
        self.provider
    }

    /// Where it is.
    pub(in crate::engine) fn state(&self) -> RunState {
        self.state
    }

    /// How many calls of it started.
    pub(in crate::engine) fn attempts(&self) -> u32 {
        self.attempts
    }
}

/// The runs that have not ended.
#[derive(Debug, Default)]
pub(in crate::engine) struct Runs {
    slab: Slab<Run>,
}

impl Runs {
    /// A new run for `provider`, queued at once; `seq` is its place in arrival order.
    pub(in crate::engine) fn add(
        &mut self,
        ticket: Ticket,
        provider: u32,
        priority: Priority,
        seq: u64,
    ) {
        self.slab.insert(Run {
            ticket,
            provider,
            priority,
            seq,
            state: RunState::Queued,
            attempts: 0,
            errors: 0,
            rate_limits: 0,
        });
    }

    pub(in crate::engine) fn get(&self, id: Id<Run>) -> Option<&Run> {
        self.slab.get(id)
    }

    /// The live run of `ticket`.
    pub(in crate::engine) fn of_ticket(&self, ticket: Ticket) -> Option<Id<Run>> {
        let mut runs = self.slab.iter();
        runs.find(|(_, run)| run.ticket == ticket).map(|(id, _)| id)
    }

    /// The queued runs, each with its provider and its place in line.
    pub(in crate::engine) fn queued(&self) -> impl Iterator<Item = (u32, RunKey)> + '_ {
        (self.slab.iter())
            .filter(|(_, run)| run.state == RunState::Queued)
            .map(|(id, run)| {
                let key = RunKey {
                    priority: Reverse(run.priority),
                    arrival: run.seq,
                    run: id,
                };
                (run.provider, key)
            })
    }

    /// Its call starts under `call`; the try's number (0 for the first).
    pub(in crate::engine) fn start(&mut self, id: Id<Run>, call: CallId) -> u32 {
        let Some(run) = self.slab.get_mut(id) else {
            return 0;
        };
        run.state = RunState::Running(call);
        run.attempts += 1;
        run.attempts - 1
    }

    /// Counts one more failed try of this kind; the count so far.
    pub(in crate::engine) fn count_try(&mut self, id: Id<Run>, kind: Try) -> u16 {
        let Some(run) = self.slab.get_mut(id) else {
            return 0;
        };
        let count = match kind {
            Try::RateLimit => &mut run.rate_limits,
            Try::Error | Try::Mismatch => &mut run.errors,
        };
        *count = count.saturating_add(1);
        *count
    }

    /// Back in its provider's line (a retry with no wait of its own), or waiting until
    /// `until` first.
    pub(in crate::engine) fn retry(&mut self, id: Id<Run>, until: Option<Instant>) {
        if let Some(run) = self.slab.get_mut(id) {
            run.state = until.map_or(RunState::Queued, RunState::Backoff);
        }
    }

    /// The soonest backoff end.
    pub(in crate::engine) fn next_wakeup(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for (_, run) in self.slab.iter() {
            if let RunState::Backoff(at) = run.state {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next
    }

    /// Puts the runs whose backoff ended by `now` back in line.
    pub(in crate::engine) fn wake(&mut self, now: Instant) {
        for run in self.slab.values_mut() {
            if matches!(run.state, RunState::Backoff(at) if at <= now) {
                run.state = RunState::Queued;
            }
        }
    }

    /// The run ended.
    pub(in crate::engine) fn remove(&mut self, id: Id<Run>) -> Option<Run> {
        self.slab.remove(id)
    }

    /// The runs of `provider` that wait (queued or backing off), not those running.
    pub(in crate::engine) fn waiting_for(&self, provider: u32) -> Vec<Id<Run>> {
        let mut waiting = Vec::new();
        for (id, run) in self.slab.iter() {
            if run.provider == provider && !matches!(run.state, RunState::Running(_)) {
                waiting.push(id);
            }
        }
        waiting
    }

    /// Every run.
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn iter(&self) -> impl Iterator<Item = (Id<Run>, &Run)> {
        self.slab.iter()
    }

    /// The providers of every run.
    pub(in crate::engine) fn providers(&self) -> impl Iterator<Item = u32> + '_ {
        self.slab.iter().map(|(_, run)| run.provider)
    }

    /// Ends every run (dispose); their tickets.
    pub(in crate::engine) fn clear(&mut self) -> Vec<Ticket> {
        let mut tickets = Vec::new();
        for run in self.slab.drain() {
            tickets.push(run.ticket);
        }
        self.slab = Slab::default();
        tickets
    }
}
