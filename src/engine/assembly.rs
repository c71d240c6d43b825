//! Batch assembly, the engine's side: where a new item goes (the `Batches` part decides,
//! given the item's group; `fallbacks` decides the group), and the rebuild of unsent batches when `setOptions` changes a
//! limit.

use super::batches::Home;
use super::jobs::Member;
use super::{Engine, Group};
use crate::slab::Id;
use crate::time::Instant;

impl<C: Clone> Engine<C> {
    /// Puts a job into its group's open batch, or starts a new batch.
    pub(super) fn place_in(&mut self, member: Member, group_key: Id<Group>, first_at: Instant) {
        let Some(group) = self.groups.get(group_key) else {
            return;
        };
        let home = Home {
            group: group_key,
            provider: group.provider(),
            llm: group.info().llm,
        };
        self.batches.place(member, home, first_at, self.now);
    }

    /// Rebuilds every batch that has not started, under the limits now in force.
    pub(super) fn regroup_open_batches(&mut self) {
        for (member, group, first_at) in self.batches.take_unstarted(&self.jobs) {
            self.place(member, group, first_at);
        }
    }
}
