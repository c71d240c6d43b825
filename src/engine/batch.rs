//! Batch assembly: which items travel together, when a batch is due, and the retry
//! budgets it carries once sealed.
//!
//! A batch collects compatible items until it is *due* (full by items or characters, or
//! `batchDelayMs` after its first item), then waits for a token. It stays open to
//! late-arriving compatible items until its call starts (late binding): at a slow rate
//! this gives fuller batches rather than more of them.

use core::cmp::Ordering;

use super::{Group, Job};
use crate::slab::Id;
use crate::time::{Duration, Instant};

/// Dispatch priority: higher goes first. Always finite (validated at the boundary).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Priority(f64);

impl Priority {
    /// A priority from a finite number; -0 is folded into 0 so equal priorities compare equal.
    pub fn new(value: f64) -> Priority {
        Priority(value + 0.0)
    }
}

impl Eq for Priority {}

impl PartialOrd for Priority {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Priority {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The batch limits in force.
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    /// Most items in one LLM batch.
    pub max_items: usize,
    /// Most characters in one LLM batch.
    pub max_chars: u64,
    /// Collection window from a batch's first item.
    pub delay: Duration,
    /// Most estimated input tokens in one LLM batch (what the token budget can hold);
    /// infinite without a token budget.
    pub max_tokens: f64,
}

/// Where a batch is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Collecting items, not yet due.
    Collecting,
    /// Due: waiting for a token (and still taking items if not sealed).
    Ready,
    /// Waiting out a retry backoff until the given instant.
    Backoff(Instant),
    /// A provider call with this id is running.
    Running(u64),
}

/// What a batch needs to know of an item joining it.
#[derive(Copy, Clone, Debug)]
pub struct Member {
    /// The item's job.
    pub job: Id<Job>,
    /// Its characters.
    pub chars: u64,
    /// Its estimated input tokens (0 without a token budget).
    pub tokens: f32,
    /// Its priority.
    pub priority: Priority,
    /// Its arrival order.
    pub seq: u64,
}

/// A unit of dispatch: one provider call's worth of items.
#[derive(Debug)]
pub struct Batch {
    /// The items, in arrival order.
    pub jobs: Vec<Id<Job>>,
    /// Their total characters.
    pub chars: u64,
    /// Their total estimated input tokens.
    pub tokens: f64,
    /// Arrival of the first item (start of the collection window).
    pub first_at: Instant,
    /// Highest priority of its items.
    pub priority: Priority,
    /// Arrival order of its first item: FIFO among equal priorities.
    pub seq: u64,
    /// The compatibility group it belongs to.
    pub compat: Id<Group>,
    /// The provider it calls (index into the engine's providers).
    pub provider: u32,
    /// Sealed batches take no more items (their first call has started).
    pub sealed: bool,
    /// Life-cycle state.
    pub state: State,
    /// Calls started so far (the next call's `attempt`).
    pub attempts: u32,
    /// Replies with the wrong count so far.
    pub mismatches: u16,
    /// Transient failures so far.
    pub errors: u16,
    /// 429 answers so far.
    pub rate_limits: u16,
}

impl Batch {
    /// A batch holding one item.
    pub fn new(first: &Member, compat: Id<Group>, provider: u32, first_at: Instant) -> Self {
        Batch {
            jobs: vec![first.job],
            chars: first.chars,
            tokens: f64::from(first.tokens),
            first_at,
            priority: first.priority,
            seq: first.seq,
            compat,
            provider,
            sealed: false,
            state: State::Collecting,
            attempts: 0,
            mismatches: 0,
            errors: 0,
            rate_limits: 0,
        }
    }

    /// Whether an item of `chars` characters and `tokens` tokens may join without
    /// breaking a limit.
    pub fn accepts(&self, chars: u64, tokens: f32, limits: &Limits) -> bool {
        !self.sealed
            && self.jobs.len() < limits.max_items
            && self.chars.saturating_add(chars) <= limits.max_chars
            && self.tokens + f64::from(tokens) <= limits.max_tokens
    }

    /// Adds an item; the batch takes the highest priority of its items.
    pub fn push(&mut self, member: &Member) {
        self.jobs.push(member.job);
        self.chars = self.chars.saturating_add(member.chars);
        self.tokens += f64::from(member.tokens);
        self.priority = self.priority.max(member.priority);
        // An item may arrive out of line (after a store lookup, or regrouped): the key
        // stays ahead of every item.
        self.seq = self.seq.min(member.seq);
    }

    /// Due by size: it holds the most items, or its characters reached the limit.
    pub fn is_full(&self, limits: &Limits) -> bool {
        self.jobs.len() >= limits.max_items
            || self.chars >= limits.max_chars
            || self.tokens >= limits.max_tokens
    }

    /// When the collection window closes.
    pub fn due_at(&self, limits: &Limits) -> Instant {
        self.first_at + limits.delay
    }
}

/// Whether an item must travel alone: non-LLM items never batch, and an item longer than
/// the character limit, or costing more than the token budget can hold, cannot share.
pub fn travels_alone(llm: bool, chars: u64, tokens: f32, limits: &Limits) -> bool {
    !llm || chars > limits.max_chars || f64::from(tokens) > limits.max_tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_order_and_fold_negative_zero() {
        assert_eq!(Priority::new(-0.0), Priority::new(0.0));
        assert!(Priority::new(2.0) > Priority::new(1.5));
    }
}
