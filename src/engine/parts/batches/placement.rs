//! Which batch an item is in: a new item placed in its group's open batch or a new one,
//! a twin's higher priority taken by its batch, an item leaving its batch. Apart from
//! the batches' states because these are the item's side of the part.

use core::cmp::Reverse;

use super::batch_wakeups::Wakeup;
use super::{is_running, ready_key, Batch, Batches, Home, State};
use crate::engine::jobs::{Joined, Member};
use crate::engine::limits::travels_alone;
use crate::engine::priority::Priority;
use crate::settle::Ticket;
use crate::slab::Id;
use crate::time::Instant;

impl Batches {
    /// Puts a new job into its group's open batch, or starts a new batch (a batch is
    /// due when full by items or characters, or when its window closes: its wake-up).
    pub(in crate::engine) fn add(
        &mut self,
        member: Member,
        home: Home,
        first_at: Instant,
        now: Instant,
    ) {
        let Home {
            group,
            provider,
            llm,
        } = home;
        let open = self.open(group);
        let limits = *self.limits_for(provider);
        if travels_alone(llm, member.chars(), member.tokens(), &limits) {
            // An item longer than the limit travels alone, and makes the open batch due at
            // once too, so the earlier items are not left behind it for their whole window.
            if let Some(open_key) = open.filter(|_| llm) {
                self.make_due_now(open_key);
            }
            self.insert_due(Batch::new(&member, group, provider, first_at));
            return;
        }
        if let Some(open_key) = open {
            let fits = self
                .slab
                .get(open_key)
                .is_some_and(|b| b.admits(&member, &limits));
            if fits {
                self.join(open_key, &member);
                return;
            }
            // The item would break a limit: the open batch is due now, the item starts the next.
            self.make_due_now(open_key);
        }
        let batch = self.insert(Batch::new(&member, group, provider, first_at));
        self.set_open(group, Some(batch));
        let due_at = self
            .slab
            .get(batch)
            .map(|b| (b.is_full(&limits), b.due_at(&limits)));
        match due_at {
            Some((false, at)) if at > now => {
                self.wakeups.push(Reverse((at, Wakeup::Due(batch))));
            }
            Some(_) => self.make_ready(batch),
            None => {}
        }
    }

    fn join(&mut self, key: Id<Batch>, member: &Member) {
        if self.slab.get(key).is_none() {
            return;
        }
        self.set_batch_of(member.job(), key);
        let Some(batch) = self.slab.get_mut(key) else {
            return;
        };
        let before = ready_key(key, batch);
        batch.push(member);
        if !is_running(batch.state) {
            self.unsent += 1;
        }
        let after = ready_key(key, batch);
        let full = batch.is_full(match self.own.get(batch.provider as usize) {
            Some(Some(own)) => own,
            _ => &self.limits,
        });
        let (state, provider) = (batch.state, batch.provider);
        match state {
            State::Collecting if full => self.make_ready(key),
            State::Ready if before != after => self.rekey(provider, &before, after),
            _ => {}
        }
    }

    /// A new ticket joined a twin (dedup): the twin's batch takes its priority if
    /// higher. The ticket.
    pub(in crate::engine) fn joined(&mut self, joined: Joined) -> Ticket {
        self.raise_priority(self.batch_of(joined.job()), joined.priority());
        joined.into_ticket()
    }

    /// A twin of one of its items came with a higher priority.
    pub(super) fn raise_priority(&mut self, key: Id<Batch>, priority: Priority) {
        let Some(batch) = self.slab.get_mut(key) else {
            return;
        };
        if priority <= batch.priority {
            return;
        }
        let before = ready_key(key, batch);
        batch.priority = priority;
        let after = ready_key(key, batch);
        if batch.state == State::Ready {
            let provider = batch.provider;
            self.rekey(provider, &before, after);
        }
    }

    /// `member` leaves its batch (withdrawn, or resolved before its call's end): the
    /// batch, and whether it is left empty. `None` when the job is in no batch.
    pub(in crate::engine) fn leave(&mut self, member: &Member) -> Option<(Id<Batch>, bool)> {
        let key = self.batch_of(member.job());
        let batch = self.slab.get_mut(key)?;
        let before = batch.jobs.len();
        batch.jobs.retain(|j| *j != member.job());
        let left = before - batch.jobs.len();
        if left > 0 {
            batch.chars = batch.chars.saturating_sub(member.chars());
            batch.tokens -= f64::from(member.tokens());
        }
        if !is_running(batch.state) {
            self.unsent -= left as u64;
        }
        let empty = batch.jobs.is_empty();
        self.set_batch_of(member.job(), Id::NONE);
        Some((key, empty))
    }
}
