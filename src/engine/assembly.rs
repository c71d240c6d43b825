//! Batch assembly, the engine's side: where a new item goes (`place`: its group, or its
//! fallback's while its provider cannot serve; then the `Batches` part picks the batch),
//! and the rebuild of unsent batches when `setOptions` changes a limit.

use super::batches::Home;
use super::jobs::Member;
use super::limits::own_limits_of;
use super::{Engine, Group};
use crate::slab::Id;
use crate::time::Instant;

impl<C: Clone> Engine<C> {
    /// Puts a new job of `group` into a batch: its group's, or the group of items moved
    /// to its provider's fallback while that provider cannot serve.
    pub(super) fn place(&mut self, member: Member, group: Id<Group>, first_at: Instant) {
        let serving = self.groups.get(group).map(Group::provider);
        if let Some(dest) = serving
            .filter(|p| !self.can_serve(*p))
            .and_then(|_| self.fallback_group(group, 1))
        {
            return self.move_job(member, group, dest, first_at);
        }
        self.add_to_batch(member, group, first_at);
    }

    /// Puts a job into its group's open batch, or starts a new batch (`place` chose the
    /// group).
    pub(super) fn add_to_batch(&mut self, member: Member, group_key: Id<Group>, first_at: Instant) {
        let Some(group) = self.groups.get(group_key) else {
            return;
        };
        let home = Home {
            group: group_key,
            provider: group.provider(),
            llm: group.info().llm,
        };
        if let Some(settings) = self.pacer.own_settings(home.provider) {
            let limits = own_limits_of(&self.options, settings);
            self.batches.set_own_limits(home.provider, Some(limits));
        }
        self.batches.add(member, home, first_at, self.now);
    }

    /// Every remembered provider's own batch limits under the options now in force;
    /// whether any changed (the unsent batches are then to regroup).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn sync_own_limits(&mut self) -> bool {
        let mut changed = false;
        for index in 0..self.pacer.provider_bound() as u32 {
            let own = self.pacer.own_settings(index);
            let limits = own.map(|settings| own_limits_of(&self.options, settings));
            changed |= self.batches.set_own_limits(index, limits);
        }
        changed
    }

    /// Rebuilds every batch that has not started, under the limits now in force.
    pub(super) fn regroup_open_batches(&mut self) {
        for (member, group, first_at) in self.batches.take_unstarted(&self.jobs) {
            self.place(member, group, first_at);
        }
    }
}
