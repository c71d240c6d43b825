//! A batch: one provider call's worth of items, and where it is in its life. Its fields
//! are the `Batches` part's (this module is that part's own): no other part of the
//! engine can change a batch but through `Batches`.

use crate::engine::groups::Group;
use crate::engine::jobs::{Job, Jobs, Member};
use crate::engine::limits::{travels_alone, Limits};
use crate::engine::priority::Priority;
use crate::slab::Id;
use crate::time::Instant;

/// Where a batch is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(in crate::engine) enum State {
    /// Collecting items, not yet due.
    Collecting,
    /// Due: waiting for a token (and still taking items if not sealed).
    Ready,
    /// Waiting out a retry backoff until the given instant.
    Backoff(Instant),
    /// A provider call with this id is running.
    Running(u64),
}

/// A unit of dispatch: one provider call's worth of items.
#[derive(Debug)]
pub(in crate::engine) struct Batch {
    /// The items, in arrival order.
    pub(super) jobs: Vec<Id<Job>>,
    /// Their total characters.
    pub(super) chars: u64,
    /// Their total estimated input tokens.
    pub(super) tokens: f64,
    /// Arrival of the first item (start of the collection window).
    pub(super) first_at: Instant,
    /// Highest priority of its items.
    pub(super) priority: Priority,
    /// Arrival order of its first item: FIFO among equal priorities.
    pub(super) seq: u64,
    /// The compatibility group it belongs to.
    pub(super) compat: Id<Group>,
    /// The provider it calls (its index in the `Pacer` part).
    pub(super) provider: u32,
    /// Sealed batches take no more items (their first call has started).
    pub(super) sealed: bool,
    /// Life-cycle state.
    pub(super) state: State,
    /// Calls started so far (the next call's `attempt`).
    pub(super) attempts: u32,
    /// Replies with the wrong count so far.
    pub(super) mismatches: u16,
    /// Transient failures so far.
    pub(super) errors: u16,
    /// 429 answers so far.
    pub(super) rate_limits: u16,
    /// The last reply that did not prove every item, as its fingerprint and the number
    /// of items it answered (a sealed batch only loses items, so the same number is the
    /// same texts).
    pub(super) last_reply: Option<(u64, usize)>,
    /// The output bound's multiplier: doubled by each truncated reply.
    pub(super) bound_scale: u8,
}

impl Batch {
    /// A batch holding one item.
    pub(in crate::engine) fn new(
        first: &Member,
        compat: Id<Group>,
        provider: u32,
        first_at: Instant,
    ) -> Self {
        // Room for a default batch (4 items): most batches grow to their limit.
        let mut jobs = Vec::with_capacity(4);
        jobs.push(first.job());
        Batch {
            jobs,
            chars: first.chars(),
            tokens: f64::from(first.tokens()),
            first_at,
            priority: first.priority(),
            seq: first.seq(),
            compat,
            provider,
            sealed: false,
            state: State::Collecting,
            attempts: 0,
            mismatches: 0,
            errors: 0,
            rate_limits: 0,
            last_reply: None,
            bound_scale: 1,
        }
    }

    /// Adds an item; the batch takes the highest priority of its items.
    pub(in crate::engine) fn push(&mut self, member: &Member) {
        self.jobs.push(member.job());
        self.chars = self.chars.saturating_add(member.chars());
        self.tokens += f64::from(member.tokens());
        self.priority = self.priority.max(member.priority());
        // An item may arrive out of line (after a store lookup, or regrouped): the key
        // stays ahead of every item.
        self.seq = self.seq.min(member.seq());
    }

    /// Due by size: it holds the most items, or its characters reached the limit.
    pub(super) fn is_full(&self, limits: &Limits) -> bool {
        self.jobs.len() >= limits.max_items
            || self.chars >= limits.max_chars
            || self.tokens >= limits.max_tokens
    }

    /// When the collection window closes.
    pub(super) fn due_at(&self, limits: &Limits) -> Instant {
        self.first_at + limits.delay
    }

    /// A batch sent again (sealed, in its batch's place in line) with the live jobs of
    /// `part`, in this order; `keep_tries`: the same texts again, so it keeps the
    /// batch's tries.
    pub(in crate::engine) fn resent(
        from: &Batch,
        part: &[Id<Job>],
        jobs: &Jobs,
        keep_tries: bool,
    ) -> Option<Self> {
        let mut members = part.iter().filter_map(|j| jobs.member(*j));
        let first = members.next()?;
        let mut batch = Batch::new(&first, from.compat, from.provider, from.first_at);
        for member in members {
            batch.push(&member);
        }
        batch.sealed = true;
        batch.priority = from.priority;
        batch.seq = from.seq;
        // Its texts were sent with this bound before: a truncated reply's doubling holds.
        batch.bound_scale = from.bound_scale;
        if keep_tries {
            batch.attempts = from.attempts;
            batch.mismatches = from.mismatches;
            batch.errors = from.errors;
            batch.rate_limits = from.rate_limits;
        }
        Some(batch)
    }

    /// Whether `member` may join it (room under the item and character limits).
    pub(in crate::engine) fn admits(&self, member: &Member, limits: &Limits) -> bool {
        let (chars, tokens) = (member.chars(), member.tokens());
        !self.sealed
            && !travels_alone(true, chars, tokens, limits)
            && limits.room_for(self.jobs.len(), self.chars, self.tokens, (chars, tokens))
    }

    /// The items, in arrival order.
    pub(in crate::engine) fn jobs(&self) -> &[Id<Job>] {
        &self.jobs
    }

    /// The items, the batch gone.
    pub(in crate::engine) fn into_jobs(self) -> Vec<Id<Job>> {
        self.jobs
    }

    /// Their total estimated input tokens.
    pub(in crate::engine) fn tokens(&self) -> f64 {
        self.tokens
    }

    /// Arrival of the first item.
    pub(in crate::engine) fn first_at(&self) -> Instant {
        self.first_at
    }

    /// The compatibility group it belongs to.
    pub(in crate::engine) fn compat(&self) -> Id<Group> {
        self.compat
    }

    /// Arrival number of its first item.
    pub(in crate::engine) fn seq(&self) -> u64 {
        self.seq
    }

    /// The provider it calls.
    pub(in crate::engine) fn provider(&self) -> u32 {
        self.provider
    }

    /// Whether it takes no more items.
    pub(in crate::engine) fn sealed(&self) -> bool {
        self.sealed
    }

    /// Where it is in its life.
    pub(in crate::engine) fn state(&self) -> State {
        self.state
    }

    /// Calls started so far (the next call's `attempt`).
    pub(in crate::engine) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The output bound's multiplier (1, doubled by each truncated reply).
    pub(in crate::engine) fn bound_scale(&self) -> u8 {
        self.bound_scale
    }

    /// Their total characters.
    pub(in crate::engine) fn chars(&self) -> u64 {
        self.chars
    }
}

/// Whether a batch in `state` has its call running.
pub(super) fn is_running(state: State) -> bool {
    matches!(state, State::Running(_))
}
