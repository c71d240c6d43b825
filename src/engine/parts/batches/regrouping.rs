//! Batches made again from their items: a due batch split to the size a call may carry,
//! a group's due batches dealt again by priority, the batches that never started taken
//! out to regroup under new limits, and the token sums counted again. Apart because
//! each of these replaces batches rather than moving one along its life.

use core::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{is_running, Batch, Batches, State};
use crate::engine::groups::Group;
use crate::engine::jobs::{Estimated, Jobs, Member};
use crate::slab::Id;
use crate::time::Instant;

impl Batches {
    /// Keeps the first `keep` items in due batch `key` and puts the rest in a batch of
    /// their own behind it, both keeping its tries and place in line: a call may carry
    /// no more (the provider's learned batch size). The key of the batch to send.
    pub(in crate::engine) fn split_off(
        &mut self,
        key: Id<Batch>,
        keep: usize,
        jobs: &Jobs,
    ) -> Id<Batch> {
        if self.slab.get(key).is_none_or(|b| b.jobs.len() <= keep) {
            return key;
        }
        let Some(batch) = self.remove(key) else {
            return key;
        };
        let (first, rest) = batch.jobs.split_at(keep.max(1));
        let mut sent = key;
        if let Some(part) = Batch::resent(&batch, first, jobs, true) {
            sent = self.insert_due(part);
        }
        if let Some(part) = Batch::resent(&batch, rest, jobs, true) {
            self.insert_due(part);
        }
        sent
    }

    /// Deals the due batches `pool` of `group` again (see `Engine::deal`): the
    /// items of `call` become one due batch, those of `rest` (in arrival order) fill due
    /// batches behind it, and if the group's open batch was dealt, the last of these is
    /// open now. The call's batch.
    pub(in crate::engine) fn redeal(
        &mut self,
        pool: &[Id<Batch>],
        call: &[(Member, Instant)],
        rest: &[(Member, Instant)],
        (group, provider): (Id<Group>, u32),
    ) -> Option<Id<Batch>> {
        let open_dealt = self.open(group).is_some_and(|open| pool.contains(&open));
        for key in pool {
            self.remove(*key);
        }
        let mut sent: Option<Batch> = None;
        for (member, first_at) in call {
            match &mut sent {
                None => sent = Some(Batch::new(member, group, provider, *first_at)),
                Some(c) => c.push(member),
            }
        }
        let sent = sent.map(|c| self.insert_due(c));
        let limits = *self.limits_for(provider);
        let mut current: Option<Batch> = None;
        for (member, first_at) in rest {
            match &mut current {
                Some(c) if c.admits(member, &limits) => c.push(member),
                _ => {
                    if let Some(done) = current.take() {
                        self.insert_due(done);
                    }
                    current = Some(Batch::new(member, group, provider, *first_at));
                }
            }
        }
        let current = current.map(|done| self.insert_due(done));
        if open_dealt {
            self.set_open(group, current);
        }
        sent
    }

    /// Token estimates became known: every batch's token sum again.
    pub(in crate::engine) fn sum_tokens(&mut self, jobs: &Jobs, _estimated: Estimated) {
        for batch in self.slab.values_mut() {
            batch.tokens = batch
                .jobs
                .iter()
                .filter_map(|j| jobs.get(*j))
                .map(|j| f64::from(j.tokens()))
                .sum();
        }
    }

    /// The batches of `provider` whose call is not running.
    pub(in crate::engine) fn unsent_of(&self, provider: u32) -> Vec<Id<Batch>> {
        let mut unsent = Vec::new();
        for (key, batch) in self.slab.iter() {
            if batch.provider == provider && !is_running(batch.state) {
                unsent.push(key);
            }
        }
        unsent
    }

    /// Takes out every batch that never started (to regroup under new limits): their
    /// live jobs, each with its batch's group and collection start, in arrival order.
    pub(in crate::engine) fn take_unstarted(
        &mut self,
        jobs: &Jobs,
    ) -> Vec<(Member, Id<Group>, Instant)> {
        // Batches by their first item's arrival: a heap rather than a sort (less code in
        // the .wasm), filled by pushes (a collect would add the heap's bulk rebuild).
        let mut open: BinaryHeap<Reverse<(u64, Id<Batch>)>> = BinaryHeap::new();
        for (key, batch) in self.slab.iter() {
            if !batch.sealed && matches!(batch.state, State::Collecting | State::Ready) {
                open.push(Reverse((batch.seq, key)));
            }
        }
        // Batches and the jobs inside them are in arrival order: keep it.
        let mut members = Vec::new();
        while let Some(Reverse((_, key))) = open.pop() {
            let Some(batch) = self.remove(key) else {
                continue;
            };
            for job in batch.jobs {
                if let Some(member) = jobs.member(job) {
                    members.push((member, batch.compat, batch.first_at));
                }
            }
        }
        members
    }
}
