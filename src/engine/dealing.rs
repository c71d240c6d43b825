//! Dealing by priority: a call takes the best items of its group's due batches (highest
//! priority first, first come first served among equals), not just the batch that
//! happened to be first in line.

use core::cmp::Reverse;
use std::collections::BinaryHeap;

use super::batches::{Batch, ReadyKey};
use super::limits::travels_alone;
use super::priority::Priority;
use super::{Engine, Job};
use crate::slab::Id;
use crate::text::utf16_len;
use crate::time::Instant;

/// An item's place in line when a group's due items are dealt again (`deal`):
/// priority, arrival, its job, and the start of its batch's collection window.
pub(super) type InLine = (Reverse<Priority>, u64, Id<Job>, Instant);

impl<C: Clone> Engine<C> {
    /// The batch to send for `chosen`, the best due batch. Batches collect items in
    /// arrival order, but a call takes the best items of its group's due batches:
    /// highest priority first, first come first served among equals. When no other due
    /// batch of the group may hold an item ahead of `chosen`'s last, `chosen` is sent as
    /// it is (the common case, at no cost). Else the call is filled item by item from a
    /// merge of the due batches in line, and the items of the batches it looked at and
    /// did not take go back into due batches in arrival order. A batch still collecting,
    /// and a batch being retried, keep their items.
    pub(super) fn deal(&mut self, chosen: Id<Batch>) -> Id<Batch> {
        let Some(batch) = self.batches.get(chosen).filter(|b| !b.sealed()) else {
            return chosen;
        };
        let (group_key, provider) = (batch.compat(), batch.provider());
        let limits = *self.batches.limits_for(provider);
        // Items that never share a call (llm: false, unless in arrays) have nothing to deal.
        if !self
            .groups
            .get(group_key)
            .is_some_and(|g| g.info().llm || limits.array)
        {
            return chosen;
        }
        let Some(ready) = self.batches.ready(provider) else {
            return chosen;
        };
        // A batch's ready key (its best priority, its first arrival) is never behind any
        // of its items, and the provider's due batches are in that order.
        let last_in_chosen = batch
            .jobs()
            .iter()
            .filter_map(|j| self.jobs.get(*j))
            .map(|j| (Reverse(j.priority()), j.seq()))
            .max();
        // `chosen` is still in the ready set (first in line): it is not one of the others.
        let dealable = |key: &Id<Batch>| {
            *key != chosen
                && self
                    .batches
                    .get(*key)
                    .is_some_and(|b| b.compat() == group_key && !b.sealed())
        };
        let any_ahead = ready
            .iter()
            .take_while(|k| Some((k.priority, k.arrival)) < last_in_chosen)
            .any(|k| dealable(&k.batch));
        if !any_ahead {
            return chosen;
        }
        // The call, item by item: the best of the items seen so far, once no due batch
        // not yet seen may hold a better one.
        let mut line: BinaryHeap<Reverse<InLine>> = BinaryHeap::new();
        self.line_up(batch, &mut line);
        let mut pool = vec![chosen];
        let mut seen = 0;
        let mut taken: Vec<(Id<Job>, Instant)> = Vec::new();
        let (mut count, mut chars, mut tokens) = (0usize, 0u64, 0f64);
        while let Some(&Reverse((priority, seq, _, _))) = line.peek() {
            let next = ready.get(seen).copied();
            let ahead = |k: &ReadyKey| (k.priority, k.arrival) < (priority, seq);
            if let Some(ReadyKey { batch: key, .. }) = next.filter(ahead) {
                seen += 1;
                if let Some(b) = self.batches.get(key).filter(|_| dealable(&key)) {
                    pool.push(key);
                    self.line_up(b, &mut line);
                }
                continue;
            }
            let Some(&Reverse((_, _, job, first_at))) = line.peek() else {
                break;
            };
            let (c, t) = self
                .jobs
                .get(job)
                .map_or((0, 0.0), |j| (utf16_len(j.text()), j.tokens()));
            // The first item that does not fit ends the call (a long one travels alone).
            let fits = count == 0
                || (!travels_alone(true, c, t, &limits)
                    && !travels_alone(true, chars, tokens as f32, &limits)
                    && limits.room_for(count, chars, tokens, (c, t)));
            if !fits {
                break;
            }
            line.pop();
            taken.push((job, first_at));
            count += 1;
            chars = chars.saturating_add(c);
            tokens += f64::from(t);
        }
        if pool.len() == 1 {
            return chosen;
        }
        let members = |list: &mut dyn Iterator<Item = (Id<Job>, Instant)>| {
            let list = list.filter_map(|(job, at)| Some((self.jobs.member(job)?, at)));
            list.collect::<Vec<_>>()
        };
        let call = members(&mut taken.into_iter());
        // What the call did not take goes back in arrival order.
        let mut rest: BinaryHeap<Reverse<(u64, Id<Job>, Instant)>> = BinaryHeap::new();
        while let Some(Reverse((_, seq, job, first_at))) = line.pop() {
            rest.push(Reverse((seq, job, first_at)));
        }
        let rest = members(&mut core::iter::from_fn(|| {
            rest.pop()
                .map(|Reverse((_, job, first_at))| (job, first_at))
        }));
        let home = (group_key, provider);
        let call = self.batches.redeal(&pool, &call, &rest, home);
        call.unwrap_or(chosen)
    }

    /// Puts the items of `batch` in `line`, by priority then arrival.
    pub(super) fn line_up(&self, batch: &Batch, line: &mut BinaryHeap<Reverse<InLine>>) {
        for key in batch.jobs() {
            if let Some(job) = self.jobs.get(*key) {
                line.push(Reverse((
                    Reverse(job.priority()),
                    job.seq(),
                    *key,
                    batch.first_at(),
                )));
            }
        }
    }
}
