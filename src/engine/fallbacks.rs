//! Fallback providers (`fallbackProviders`): where a provider's items go when it cannot
//! serve them. A provider cannot serve while a daily quota blocks it or a 429 pause has
//! more than `fallbackAfterMs` left: its new items go to its fallback (the first of the
//! chain that can serve, else the chain's last), and so do the queued items when the
//! block or the pause begins. A billing or settings error moves the call's items and the
//! queued ones; a call that failed for good after its retries moves its own items.
//!
//! A moved item keeps its job, key and tickets: it only changes group, to the group of
//! items moved from the same own group to that provider (so it is batched only with
//! those), whose calls carry `fallbackFrom`. Each provider keeps its own pacing state; the
//! pacer's bucket covers them all.

use super::jobs::Member;
use super::outbox::Counter;
use super::{Batch, Engine, Group};
use crate::slab::Id;
use crate::stats::Event;
use crate::time::{Duration, Instant};

impl<C: Clone> Engine<C> {
    /// Whether `provider` can serve items now (no daily block, no long 429 pause).
    pub(super) fn can_serve(&self, provider: u32) -> bool {
        if let Some(pool) = self.pool_can_serve(provider, None) {
            return pool;
        }
        let wait = Duration::from_millis(self.options.fallback_after_ms);
        self.pacer.can_serve(provider, self.now, wait)
    }

    /// The provider that takes `provider`'s items: the first of its chain of fallbacks
    /// that can serve, else the chain's last; `None` without a fallback.
    fn fallback_target(&mut self, provider: u32) -> Option<u32> {
        let mut id = self.pacer.provider_id(provider);
        let mut target = None;
        // The chain has no cycle (the options' check): it ends within as many steps as
        // there are mappings.
        for _ in 0..self.options.fallback_providers.len() {
            let Some(next) = self.options.fallback_of(&id).map(str::to_owned) else {
                break;
            };
            let index = self.pacer.provider_for(&next, self.now, &self.options);
            target = Some(index);
            if self.can_serve(index) {
                break;
            }
            id = self.pacer.provider_id(index);
        }
        target
    }

    /// The group that `items` items of `group`, whose provider cannot serve them, move
    /// to (reported as a `providerFallback` event); `None` without a fallback.
    pub(super) fn fallback_group(&mut self, group: Id<Group>, items: usize) -> Option<Id<Group>> {
        let provider = self.groups.get(group)?.provider();
        let target = self.fallback_target(provider)?;
        let to = self.pacer.provider_id(target);
        let dest = self.groups.moved(group, &to, target)?;
        self.out.event(Event::ProviderFallback {
            from: self.pacer.provider_id(provider),
            to,
            items,
        });
        Some(dest)
    }

    /// Moves job `member` from `group` to `dest`, counting it the first time it leaves
    /// its own provider.
    pub(super) fn move_job(
        &mut self,
        member: Member,
        group: Id<Group>,
        dest: Id<Group>,
        first_at: Instant,
    ) {
        if !self.groups.get(group).is_some_and(Group::is_moved) {
            let waiters = self.jobs.get(member.job()).map_or(0, |j| j.waiters().len());
            self.out.count(Counter::FallbackItems, waiters as u64);
        }
        self.groups.job_added(dest);
        self.groups.job_ended(group);
        self.add_to_batch(member, dest, first_at);
    }

    /// Moves the items of `batch_key` (whatever its state) to its provider's fallback;
    /// whether it had one.
    pub(super) fn move_to_fallback(&mut self, batch_key: Id<Batch>) -> bool {
        let Some(batch) = self.batches.get(batch_key) else {
            return false;
        };
        let (group, items) = (batch.compat(), batch.jobs().len());
        let Some(dest) = self.fallback_group(group, items) else {
            return false;
        };
        let Some(batch) = self.batches.remove(batch_key) else {
            return false;
        };
        let now = self.now;
        for job in batch.into_jobs() {
            if let Some(member) = self.jobs.member(job) {
                self.move_job(member, group, dest, now);
            }
        }
        true
    }

    /// Moves the items of `batch_key` and every unsent item of `provider` to the
    /// provider's fallback; whether it had one.
    pub(super) fn move_provider_items(&mut self, batch_key: Id<Batch>, provider: u32) -> bool {
        let queued = self.batches.unsent_of(provider);
        if !self.move_to_fallback(batch_key) {
            return false;
        }
        for key in queued {
            self.move_to_fallback(key);
        }
        true
    }
}
