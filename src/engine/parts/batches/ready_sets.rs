//! The providers' ready sets of due batches, and the key that orders them: a batch is
//! in its provider's set exactly while it is `Ready` (`set_state` keeps it so). Apart
//! because these lines are what dispatch and dealing read of the part.

use core::cmp::Reverse;

use super::{Batch, Batches};
use crate::engine::priority::Priority;
use crate::ready::ReadySet;
use crate::slab::Id;

/// A due batch's place in its provider's line: highest priority first, then first
/// come, first served (the fields compare in this order).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(in crate::engine) struct ReadyKey {
    /// The highest priority of its items (reversed: the highest is the smallest key).
    pub(in crate::engine) priority: Reverse<Priority>,
    /// The arrival order of its first item.
    pub(in crate::engine) arrival: u64,
    /// The batch.
    pub(in crate::engine) batch: Id<Batch>,
}

/// Batch `key`'s place in its provider's line.
pub(super) fn ready_key(key: Id<Batch>, batch: &Batch) -> ReadyKey {
    ReadyKey {
        priority: Reverse(batch.priority),
        arrival: batch.seq,
        batch: key,
    }
}

impl Batches {
    /// The due batches of `provider`, best first.
    pub(in crate::engine) fn ready(&self, provider: u32) -> Option<&ReadySet<ReadyKey>> {
        self.ready.get(provider as usize)
    }

    /// The best due batch of `provider`.
    pub(in crate::engine) fn first_ready(&self, provider: u32) -> Option<ReadyKey> {
        self.ready(provider)?.first().copied()
    }

    /// The providers with a due batch, each with its best one.
    pub(in crate::engine) fn due_providers(&self) -> impl Iterator<Item = (u32, ReadyKey)> + '_ {
        (self.due.iter()).filter_map(|p| Some((*p, self.first_ready(*p)?)))
    }

    /// The providers of `indexes` were forgotten (none has a batch), and no index from
    /// `bound` on is given out: their ready sets go. Called after `drop_stale`, when
    /// only providers with a due batch are listed.
    pub(in crate::engine) fn forget_providers(&mut self, indexes: &[u32], bound: usize) {
        for index in indexes {
            if let Some(set) = self.ready.get_mut(*index as usize) {
                *set = ReadySet::default();
            }
            if let Some(own) = self.own.get_mut(*index as usize) {
                *own = None;
            }
        }
        if bound == 0 {
            self.ready = Vec::new();
            self.listed = Vec::new();
        } else {
            self.ready.truncate(bound);
            self.listed.truncate(bound);
        }
    }

    /// The ready set of `provider`, to insert into: the provider is listed as due.
    pub(super) fn ready_set(&mut self, provider: u32) -> &mut ReadySet<ReadyKey> {
        let index = provider as usize;
        while self.ready.len() <= index {
            self.ready.push(ReadySet::default());
        }
        if self.listed.len() <= index {
            self.listed.resize(index + 1, false);
        }
        if !self.listed[index] {
            self.listed[index] = true;
            self.due.push(provider);
        }
        &mut self.ready[index]
    }

    /// A due batch's place in line changed.
    pub(super) fn rekey(&mut self, provider: u32, before: &ReadyKey, after: ReadyKey) {
        if let Some(set) = self.ready.get_mut(provider as usize) {
            set.remove(before);
            set.insert(after);
        }
    }
}
