//! Batch assembly: where a new item goes (its group's open batch, or a new one), when a
//! batch is due (rule 2), and the providers' ready sets of due batches, kept in step
//! with each batch's state ("in a ready set ⇔ ready"). Also the rebuild of unsent
//! batches when `setOptions` changes a limit.

use super::*;

/// Order of due batches: highest priority first, then first come, first served.
pub(super) type ReadyKey = (Reverse<Priority>, u64, Id<Batch>);

pub(super) fn ready_key(key: Id<Batch>, batch: &Batch) -> ReadyKey {
    (Reverse(batch.priority), batch.seq, key)
}

pub(super) fn limits_of(options: &Options) -> Limits {
    let max_tokens = if options.tokens_per_minute > 0.0 {
        quota::max_batch_input(options.tokens_per_minute)
    } else {
        f64::INFINITY
    };
    Limits {
        max_items: usize::try_from(options.max_items_per_batch).unwrap_or(usize::MAX),
        max_chars: options.max_characters_per_batch,
        delay: Duration::from_millis(options.batch_delay_ms),
        max_tokens,
    }
}

impl<C: Clone> Engine<C> {
    /// Puts a new job into its group's open batch, or starts a new batch (rule 2).
    pub(super) fn place(&mut self, member: Member, group_key: Id<Group>, first_at: Instant) {
        let Some(group) = self.groups.get(group_key) else {
            return;
        };
        let (llm, provider, open) = (group.info().llm, group.provider(), group.open());
        if travels_alone(llm, member.chars, member.tokens, &self.limits) {
            // Rule 2: an item longer than the limit makes the open batch due at once too,
            // so the earlier items are not left behind it for their whole window.
            if let Some(open_key) = open.filter(|_| llm) {
                self.make_due_now(open_key);
            }
            let batch = self.new_batch(&member, group_key, provider, first_at);
            self.make_ready(batch);
            return;
        }
        if let Some(open_key) = open {
            let fits = self
                .batches
                .get(open_key)
                .is_some_and(|b| b.accepts(member.chars, member.tokens, &self.limits));
            if fits {
                self.join(open_key, &member);
                return;
            }
            // The item would break a limit: the open batch is due now, the item starts the next.
            self.make_due_now(open_key);
        }
        let batch = self.new_batch(&member, group_key, provider, first_at);
        self.groups.set_open(group_key, Some(batch));
        let due_at = self
            .batches
            .get(batch)
            .map(|b| (b.is_full(&self.limits), b.due_at(&self.limits)));
        match due_at {
            Some((true, _)) => self.make_ready(batch),
            Some((false, at)) if at <= self.now => self.make_ready(batch),
            Some((false, at)) => self.timers.push(at, Timer::Due(batch)),
            None => {}
        }
    }

    pub(super) fn new_batch(
        &mut self,
        member: &Member,
        group: Id<Group>,
        provider: u32,
        first_at: Instant,
    ) -> Id<Batch> {
        let batch = self
            .batches
            .insert(Batch::new(member, group, provider, first_at));
        self.jobs.set_batch(member.job, batch);
        batch
    }

    pub(super) fn join(&mut self, batch_key: Id<Batch>, member: &Member) {
        self.jobs.set_batch(member.job, batch_key);
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        let before = ready_key(batch_key, batch);
        batch.push(member);
        let after = ready_key(batch_key, batch);
        let (state, full, provider) = (batch.state, batch.is_full(&self.limits), batch.provider);
        match state {
            State::Collecting if full => self.make_ready(batch_key),
            State::Ready if before != after => {
                if let Some(p) = self.providers.get_mut(provider as usize) {
                    p.ready.remove(&before);
                    p.ready.insert(after);
                }
            }
            _ => {}
        }
    }

    pub(super) fn raise_priority(&mut self, batch_key: Id<Batch>, priority: Priority) {
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        if priority <= batch.priority {
            return;
        }
        let before = ready_key(batch_key, batch);
        batch.priority = priority;
        let after = ready_key(batch_key, batch);
        if batch.state == State::Ready {
            if let Some(p) = self.providers.get_mut(batch.provider as usize) {
                p.ready.remove(&before);
                p.ready.insert(after);
            }
        }
    }

    /// Makes a batch that is still collecting due at once (rule 2).
    fn make_due_now(&mut self, batch_key: Id<Batch>) {
        let collecting = self
            .batches
            .get(batch_key)
            .is_some_and(|b| b.state == State::Collecting);
        if collecting {
            self.make_ready(batch_key);
        }
    }

    pub(super) fn make_ready(&mut self, batch_key: Id<Batch>) {
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        batch.state = State::Ready;
        let key = ready_key(batch_key, batch);
        if let Some(p) = self.providers.get_mut(batch.provider as usize) {
            p.ready.insert(key);
        }
    }

    /// Whether `member` may join batch `key` (rule 2).
    pub(super) fn may_join(&self, key: Id<Batch>, member: &Member) -> bool {
        !travels_alone(true, member.chars, member.tokens, &self.limits)
            && self
                .batches
                .get(key)
                .is_some_and(|b| b.accepts(member.chars, member.tokens, &self.limits))
    }

    /// A batch for an item that was due already.
    pub(super) fn new_due_batch(
        &mut self,
        member: &Member,
        group: Id<Group>,
        provider: u32,
        first_at: Instant,
    ) -> Id<Batch> {
        let key = self.new_batch(member, group, provider, first_at);
        if let Some(batch) = self.batches.get_mut(key) {
            batch.state = State::Ready;
        }
        key
    }

    /// Adds a job to a batch being composed (not in any ready set yet).
    pub(super) fn join_unsent(&mut self, batch_key: Id<Batch>, member: &Member) {
        self.jobs.set_batch(member.job, batch_key);
        if let Some(batch) = self.batches.get_mut(batch_key) {
            batch.push(member);
        }
    }

    /// Rebuilds every batch that has not started, under the limits now in force.
    pub(super) fn regroup_open_batches(&mut self) {
        // Batches by their first item's arrival: a heap rather than a sort (less code in
        // the .wasm), filled by pushes (a collect would add the heap's bulk rebuild).
        let mut open: BinaryHeap<Reverse<(u64, Id<Batch>)>> = BinaryHeap::new();
        for (key, batch) in self.batches.iter() {
            if !batch.sealed && matches!(batch.state, State::Collecting | State::Ready) {
                open.push(Reverse((batch.seq, key)));
            }
        }
        // Batches and the jobs inside them are in arrival order: keep it.
        let mut members: Vec<(Member, Id<Group>, Instant)> = Vec::new();
        while let Some(Reverse((_, batch_key))) = open.pop() {
            let Some(batch) = self.drop_unsent(batch_key) else {
                continue;
            };
            for job_key in batch.jobs {
                if let Some(member) = self.jobs.member(job_key) {
                    members.push((member, batch.compat, batch.first_at));
                }
            }
        }
        for (member, group, first_at) in members {
            self.place(member, group, first_at);
        }
    }

    /// Removes a batch whose call has not started: out of its provider's ready set, and
    /// no longer its group's open batch.
    pub(super) fn drop_unsent(&mut self, batch_key: Id<Batch>) -> Option<Batch> {
        let batch = self.batches.remove(batch_key)?;
        if batch.state == State::Ready {
            if let Some(p) = self.providers.get_mut(batch.provider as usize) {
                p.ready.remove(&ready_key(batch_key, &batch));
            }
        }
        self.groups.close(batch.compat, batch_key);
        Some(batch)
    }
}
