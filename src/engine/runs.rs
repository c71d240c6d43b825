//! The `Runs` part: the calls of `pacer.run` (a page summary, a glossary lookup: a
//! provider call that is not a translation) while they wait, back off or run. A run has
//! no items and no batch; it waits in its provider's line by priority and arrival, like
//! a due batch, and goes through the same gate, pause and retries as a batch's call.
//!
//! It keeps "a run is in its provider's line exactly while it is queued, its backoff
//! deadline is listed while it backs off, and its ticket finds it until it ends".

use core::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use super::limits::Try;
use super::priority::Priority;
use crate::call::CallId;
use crate::hash::IdMap;
use crate::settle::Ticket;
use crate::slab::{Id, Slab};
use crate::time::Instant;

/// A run's place in its provider's line: highest priority first, then arrival (the
/// arrival sequence of items, so that runs and batches of equal priority go in the
/// order they came).
pub(super) type RunKey = (Reverse<Priority>, u64, Id<Run>);

/// Where a run is.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum RunState {
    /// In its provider's line.
    Queued,
    /// Waiting for its backoff to end, then back in line.
    Backoff(Instant),
    /// Its call runs under this id.
    Running(CallId),
}

/// One `pacer.run` that has not ended.
#[derive(Debug)]
pub(super) struct Run {
    ticket: Ticket,
    provider: u32,
    priority: Priority,
    seq: u64,
    state: RunState,
    /// Tries so far: calls started, failed tries counted apart by kind.
    attempts: u32,
    errors: u16,
    rate_limits: u16,
}

impl Run {
    /// The ticket its promise waits on.
    pub(super) fn ticket(&self) -> Ticket {
        self.ticket
    }

    /// The provider it calls.
    pub(super) fn provider(&self) -> u32 {
        self.provider
    }

    /// Where it is.
    pub(super) fn state(&self) -> RunState {
        self.state
    }

    /// How many calls of it started.
    pub(super) fn attempts(&self) -> u32 {
        self.attempts
    }

    fn key(&self, id: Id<Run>) -> RunKey {
        (Reverse(self.priority), self.seq, id)
    }
}

/// The runs, each provider's line of queued runs, and the backoff deadlines.
#[derive(Debug, Default)]
pub(super) struct Runs {
    slab: Slab<Run>,
    by_ticket: IdMap<Id<Run>>,
    /// Queued runs by provider, best first; a provider with none has no entry.
    lines: BTreeMap<u32, BTreeSet<RunKey>>,
    /// Backoff ends, soonest first; an entry whose run no longer backs off until then
    /// stays until it reaches the top (`drop_stale`).
    backoffs: BinaryHeap<Reverse<(Instant, Id<Run>)>>,
}

impl Runs {
    /// A new run for `provider`, queued at once; `seq` is its place in arrival order.
    pub(super) fn add(&mut self, ticket: Ticket, provider: u32, priority: Priority, seq: u64) {
        let run = Run {
            ticket,
            provider,
            priority,
            seq,
            state: RunState::Queued,
            attempts: 0,
            errors: 0,
            rate_limits: 0,
        };
        let key = run.key(self.slab.next_id());
        let id = self.slab.insert(run);
        self.by_ticket.insert(ticket, id);
        self.lines.entry(provider).or_default().insert(key);
    }

    pub(super) fn get(&self, id: Id<Run>) -> Option<&Run> {
        self.slab.get(id)
    }

    /// The live run of `ticket`.
    pub(super) fn of_ticket(&self, ticket: Ticket) -> Option<Id<Run>> {
        self.by_ticket.get(&ticket).copied()
    }

    /// Each provider with queued runs, and its best one's place in line.
    pub(super) fn first_in_lines(&self) -> impl Iterator<Item = (u32, RunKey)> + '_ {
        (self.lines.iter()).filter_map(|(provider, line)| Some((*provider, *line.first()?)))
    }

    fn leave_line(&mut self, id: Id<Run>) {
        let Some(run) = self.slab.get(id) else {
            return;
        };
        if run.state != RunState::Queued {
            return;
        }
        let (provider, key) = (run.provider, run.key(id));
        if let Some(line) = self.lines.get_mut(&provider) {
            line.remove(&key);
            if line.is_empty() {
                self.lines.remove(&provider);
            }
        }
    }

    /// Its call starts under `call`: out of line; the try's number (0 for the first).
    pub(super) fn start(&mut self, id: Id<Run>, call: CallId) -> u32 {
        self.leave_line(id);
        let Some(run) = self.slab.get_mut(id) else {
            return 0;
        };
        run.state = RunState::Running(call);
        run.attempts += 1;
        run.attempts - 1
    }

    /// Counts one more failed try of this kind; the count so far.
    pub(super) fn count_try(&mut self, id: Id<Run>, kind: Try) -> u16 {
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

    /// Back in its provider's line (a retry with no wait of its own).
    pub(super) fn make_ready(&mut self, id: Id<Run>) {
        self.leave_line(id);
        let Some(run) = self.slab.get_mut(id) else {
            return;
        };
        run.state = RunState::Queued;
        let (provider, key) = (run.provider, run.key(id));
        self.lines.entry(provider).or_default().insert(key);
    }

    /// Waits until `until`, then back in line.
    pub(super) fn back_off(&mut self, id: Id<Run>, until: Instant) {
        self.leave_line(id);
        if let Some(run) = self.slab.get_mut(id) {
            run.state = RunState::Backoff(until);
            self.backoffs.push(Reverse((until, id)));
        }
    }

    /// The soonest backoff end (as of the last `drop_stale`).
    pub(super) fn next_wakeup(&self) -> Option<Instant> {
        self.backoffs.peek().map(|Reverse((at, _))| *at)
    }

    /// Drops the top backoff entries whose run no longer backs off until then.
    pub(super) fn drop_stale(&mut self) {
        while let Some(Reverse((at, id))) = self.backoffs.peek().copied() {
            let live = self
                .slab
                .get(id)
                .is_some_and(|r| r.state == RunState::Backoff(at));
            if live {
                break;
            }
            self.backoffs.pop();
        }
    }

    /// Puts the runs whose backoff ended by `now` back in line.
    pub(super) fn wake(&mut self, now: Instant) {
        self.drop_stale();
        while let Some(Reverse((at, id))) = self.backoffs.peek().copied() {
            if at > now {
                break;
            }
            self.backoffs.pop();
            if self.slab.get(id).map(Run::state) == Some(RunState::Backoff(at)) {
                self.make_ready(id);
            }
            self.drop_stale();
        }
    }

    /// The run ended: out of every index.
    pub(super) fn remove(&mut self, id: Id<Run>) -> Option<Run> {
        self.leave_line(id);
        let run = self.slab.remove(id)?;
        self.by_ticket.remove(&run.ticket);
        Some(run)
    }

    /// The runs of `provider` that wait (queued or backing off), not those running.
    pub(super) fn waiting_for(&self, provider: u32) -> Vec<Id<Run>> {
        (self.slab.iter())
            .filter(|(_, r)| r.provider == provider && !matches!(r.state, RunState::Running(_)))
            .map(|(id, _)| id)
            .collect()
    }

    /// Every run.
    #[cfg(any(test, feature = "check"))]
    pub(super) fn iter(&self) -> impl Iterator<Item = (Id<Run>, &Run)> {
        self.slab.iter()
    }

    /// The providers of every run.
    pub(super) fn providers(&self) -> impl Iterator<Item = u32> + '_ {
        self.slab.iter().map(|(_, run)| run.provider)
    }

    /// Ends every run (dispose); their tickets.
    pub(super) fn clear(&mut self) -> Vec<Ticket> {
        let tickets = self.slab.drain().into_iter().map(|r| r.ticket).collect();
        *self = Runs::default();
        tickets
    }

    /// Panics, naming the rule, if the lines or the ticket index disagree with the runs.
    #[cfg(any(test, feature = "check"))]
    pub(super) fn check(&self) {
        let mut queued = 0;
        for (id, run) in self.slab.iter() {
            assert_eq!(
                self.by_ticket.get(&run.ticket),
                Some(&id),
                "run {id:?}: its ticket finds it"
            );
            let listed = self
                .lines
                .get(&run.provider)
                .is_some_and(|line| line.contains(&run.key(id)));
            assert_eq!(
                listed,
                run.state == RunState::Queued,
                "run {id:?} is in line exactly while queued"
            );
            queued += usize::from(listed);
        }
        let lined: usize = self.lines.values().map(BTreeSet::len).sum();
        assert_eq!(lined, queued, "every run in line is live");
        assert_eq!(
            self.by_ticket.len(),
            self.slab.len(),
            "the ticket index holds only live runs"
        );
    }
}
