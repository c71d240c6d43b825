//! Batches: which items travel together, when a batch is due, and the providers' ready
//! sets of due batches.
//!
//! A batch collects compatible items until it is *due* (full by items or characters, or
//! `batchDelayMs` after its first item), then waits for a token. It stays open to
//! late-arriving compatible items until its call starts (late binding): at a slow rate
//! this gives fuller batches rather than more of them.
//!
//! The `Batches` part keeps, in its methods alone: "a batch is in its provider's ready set
//! ⇔ it is ready" (every state change goes through `set_state`), "a job's batch is the
//! one that lists it" (the job→batch map is this part's: `batch_of`), each group's open
//! batch, each batch's character and token sums (from `Member`s, which only `Jobs`
//! makes), and the count of items in batches whose call is not running
//! (`stats.queued`). It also owns the wake-ups its batches' states need (a collecting
//! batch's window end, a backoff's end), answered through `next_wakeup` and `wake` as
//! every part with a deadline does, so that no other part judges its states.
//!
//! Here: the part's state and a batch's moves along its life. `batch` is a batch itself,
//! `ready_sets` the providers' lines of due batches, `batch_wakeups` the part's
//! deadlines, `placement` which batch an item is in, `regrouping` batches made again
//! from their items.

use core::cmp::Reverse;
use std::collections::BinaryHeap;

use super::jobs::Job;
use super::limits::Limits;
use super::tries::Try;
use crate::engine::Group;
use crate::output_bound;
use crate::ready::ReadySet;
use crate::slab::{Id, Slab};
use crate::time::Instant;

mod batch;
mod batch_wakeups;
mod placement;
mod ready_sets;
mod regrouping;

use batch::is_running;
pub(in crate::engine) use batch::{Batch, State};
use batch_wakeups::Wakeup;
use ready_sets::ready_key;
pub(in crate::engine) use ready_sets::ReadyKey;

/// Where a new item goes: its group, the group's provider, and whether it may share a
/// call at all.
#[derive(Copy, Clone, Debug)]
pub(in crate::engine) struct Home {
    pub(in crate::engine) group: Id<Group>,
    pub(in crate::engine) provider: u32,
    pub(in crate::engine) llm: bool,
}

/// Every batch, the due ones of each provider in dispatch order, and each group's batch
/// still open to new items.
#[derive(Debug)]
pub(in crate::engine) struct Batches {
    slab: Slab<Batch>,
    /// Due batches, by provider index: exactly the batches whose state is `Ready`.
    ready: Vec<ReadySet<ReadyKey>>,
    /// The providers whose ready set is not empty, and maybe some whose set emptied
    /// since the last `drop_stale` (`listed` marks them, by provider index): dispatch
    /// walks these, not every provider ever met.
    due: Vec<u32>,
    listed: Vec<bool>,
    /// The batch open to each group's new items, by group slot (the batch's own group
    /// confirms it: slots are reused).
    open: Vec<Option<Id<Batch>>>,
    /// The batch of each job in one, by the job's slot (`Id::NONE` for a job in none):
    /// set when a job joins a batch, cleared when it leaves it, so a reused slot never
    /// finds its former job's batch.
    of_job: Vec<Id<Batch>>,
    /// Items in batches whose call is not running.
    unsent: u64,
    /// Wake-ups, soonest first; one whose batch moved on stays until it reaches the top,
    /// where `drop_stale` removes it.
    wakeups: BinaryHeap<Reverse<(Instant, Wakeup)>>,
    limits: Limits,
    /// A provider's own limits in place of `limits` (`providers`), by provider index.
    own: Vec<Option<Limits>>,
}

impl Batches {
    /// No batch yet, under these limits.
    pub(in crate::engine) fn new(limits: Limits) -> Self {
        Batches {
            slab: Slab::default(),
            ready: Vec::new(),
            due: Vec::new(),
            listed: Vec::new(),
            open: Vec::new(),
            of_job: Vec::new(),
            unsent: 0,
            wakeups: BinaryHeap::new(),
            limits,
            own: Vec::new(),
        }
    }

    /// The limits in force for `provider`'s batches: its own, else the pacer's.
    pub(in crate::engine) fn limits_for(&self, provider: u32) -> &Limits {
        match self.own.get(provider as usize) {
            Some(Some(own)) => own,
            _ => &self.limits,
        }
    }

    /// Sets `provider`'s own limits (`None`: the pacer's); whether they changed.
    pub(in crate::engine) fn set_own_limits(
        &mut self,
        provider: u32,
        limits: Option<Limits>,
    ) -> bool {
        let index = provider as usize;
        if limits.is_none() && self.own.len() <= index {
            return false;
        }
        if self.own.len() <= index {
            self.own.resize(index + 1, None);
        }
        let changed = self.own[index] != limits;
        self.own[index] = limits;
        changed
    }

    /// Sets the limits; whether they changed (the unsent batches are then to regroup).
    pub(in crate::engine) fn set_limits(&mut self, limits: Limits) -> bool {
        let changed = limits != self.limits;
        self.limits = limits;
        changed
    }

    pub(in crate::engine) fn get(&self, key: Id<Batch>) -> Option<&Batch> {
        self.slab.get(key)
    }

    /// Every batch.
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn iter(&self) -> impl Iterator<Item = (Id<Batch>, &Batch)> {
        self.slab.iter()
    }

    /// How many items wait in batches whose call is not running.
    pub(in crate::engine) fn unsent(&self) -> u64 {
        self.unsent
    }

    /// The providers of every batch.
    pub(in crate::engine) fn providers(&self) -> impl Iterator<Item = u32> + '_ {
        self.slab.iter().map(|(_, batch)| batch.provider)
    }

    /// The batch open to `group`'s new items.
    pub(in crate::engine) fn open(&self, group: Id<Group>) -> Option<Id<Batch>> {
        let open = (*self.open.get(group.slot())?)?;
        self.slab
            .get(open)
            .is_some_and(|b| b.compat == group)
            .then_some(open)
    }

    /// The batch `job` is in (`Id::NONE` while in none: its store lookup is under way).
    pub(in crate::engine) fn batch_of(&self, job: Id<Job>) -> Id<Batch> {
        self.of_job.get(job.slot()).copied().unwrap_or(Id::NONE)
    }

    /// `job` is in `batch` now (or in none).
    fn set_batch_of(&mut self, job: Id<Job>, batch: Id<Batch>) {
        let slot = job.slot();
        if self.of_job.len() <= slot {
            self.of_job.resize(slot + 1, Id::NONE);
        }
        self.of_job[slot] = batch;
    }

    /// The job→batch map's entries: (job slot, batch), for `Engine::check`.
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn job_entries(&self) -> impl Iterator<Item = (usize, Id<Batch>)> + '_ {
        let set = self
            .of_job
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != Id::NONE);
        set.map(|(slot, batch)| (slot, *batch))
    }

    /// `batch` is the one open to `group`'s new items (or none is).
    fn set_open(&mut self, group: Id<Group>, batch: Option<Id<Batch>>) {
        let slot = group.slot();
        while self.open.len() <= slot {
            self.open.push(None);
        }
        self.open[slot] = batch;
    }

    /// `batch` takes no more items: if it was `group`'s open batch, none is.
    fn close(&mut self, group: Id<Group>, batch: Id<Batch>) {
        if let Some(open) = self.open.get_mut(group.slot()) {
            if *open == Some(batch) {
                *open = None;
            }
        }
    }

    /// Adds `batch`, its items now in it.
    fn insert(&mut self, batch: Batch) -> Id<Batch> {
        let state = batch.state;
        let key = self.slab.next_id();
        for job in &batch.jobs {
            self.set_batch_of(*job, key);
        }
        let key = self.slab.insert(batch);
        let Some(batch) = self.slab.get(key) else {
            return key;
        };
        if !is_running(state) {
            self.unsent += batch.jobs.len() as u64;
        }
        if state == State::Ready {
            let entry = ready_key(key, batch);
            self.ready_set(batch.provider).insert(entry);
        }
        key
    }

    /// Adds `batch` as due (an item that travels alone, or a batch made by dealing, a
    /// split or a fall-back).
    pub(in crate::engine) fn insert_due(&mut self, mut batch: Batch) -> Id<Batch> {
        batch.state = State::Ready;
        self.insert(batch)
    }

    /// Moves a batch to `state`: in its provider's ready set while `Ready`, its items
    /// counted as unsent while not `Running`.
    fn set_state(&mut self, key: Id<Batch>, state: State) {
        let Some(batch) = self.slab.get_mut(key) else {
            return;
        };
        let was = batch.state;
        if was == state {
            return;
        }
        batch.state = state;
        let (entry, provider, items) = (ready_key(key, batch), batch.provider, batch.jobs.len());
        if was == State::Ready {
            if let Some(set) = self.ready.get_mut(provider as usize) {
                set.remove(&entry);
            }
        }
        match (is_running(was), is_running(state)) {
            (true, false) => self.unsent += items as u64,
            (false, true) => self.unsent -= items as u64,
            _ => {}
        }
        if state == State::Ready {
            self.ready_set(provider).insert(entry);
        }
    }

    /// The batch is due: it waits for a token in its provider's ready set.
    pub(in crate::engine) fn make_ready(&mut self, key: Id<Batch>) {
        self.set_state(key, State::Ready);
    }

    /// Makes a batch that is still collecting due at once (an item that would break a
    /// limit, or travels alone, makes the open batch due).
    fn make_due_now(&mut self, key: Id<Batch>) {
        if self
            .slab
            .get(key)
            .is_some_and(|b| b.state == State::Collecting)
        {
            self.make_ready(key);
        }
    }

    /// Call `call` starts with the batch: out of its ready set, sealed, no longer open,
    /// one more attempt counted.
    pub(in crate::engine) fn start(&mut self, key: Id<Batch>, call: u64) {
        self.set_state(key, State::Running(call));
        let Some(batch) = self.slab.get_mut(key) else {
            return;
        };
        batch.sealed = true;
        batch.attempts += 1;
        let group = batch.compat;
        self.close(group, key);
    }

    /// Removes a batch, whatever its state: out of its provider's ready set, and no
    /// longer its group's open batch.
    pub(in crate::engine) fn remove(&mut self, key: Id<Batch>) -> Option<Batch> {
        let batch = self.slab.remove(key)?;
        if batch.state == State::Ready {
            if let Some(set) = self.ready.get_mut(batch.provider as usize) {
                set.remove(&ready_key(key, &batch));
            }
        }
        if !is_running(batch.state) {
            self.unsent -= batch.jobs.len() as u64;
        }
        for job in &batch.jobs {
            if let Some(entry) = self.of_job.get_mut(job.slot()).filter(|b| **b == key) {
                *entry = Id::NONE;
            }
        }
        self.close(batch.compat, key);
        Some(batch)
    }

    /// Drops everything (dispose), memory included: a disposed pacer may stay reachable
    /// for a while, and a page of 100,000 items left it tens of megabytes.
    pub(in crate::engine) fn clear(&mut self) {
        // A fresh slab rather than a drained one: nothing is created after dispose, so no
        // old key can meet a new entry (and no per-type drain code is needed).
        self.slab = Slab::default();
        self.ready = Vec::new();
        self.due = Vec::new();
        self.listed = Vec::new();
        self.open = Vec::new();
        self.of_job = Vec::new();
        self.unsent = 0;
        self.wakeups = BinaryHeap::new();
    }

    /// Counts one more try of this kind for the batch; the count so far.
    pub(in crate::engine) fn count_try(&mut self, key: Id<Batch>, kind: Try) -> Option<u16> {
        let batch = self.slab.get_mut(key)?;
        let count = match kind {
            Try::Mismatch => &mut batch.mismatches,
            Try::Error => &mut batch.errors,
            Try::RateLimit => &mut batch.rate_limits,
        };
        *count = count.saturating_add(1);
        Some(*count)
    }

    /// Forgets the batch's transient failures (its items go on to another provider).
    pub(in crate::engine) fn forget_errors(&mut self, key: Id<Batch>) {
        if let Some(batch) = self.slab.get_mut(key) {
            batch.errors = 0;
        }
    }

    /// A reply with `fingerprint` did not prove every item of batch `key`: whether it
    /// repeats the last such reply to the same texts (a retry cannot help then).
    pub(in crate::engine) fn repeats_last_reply(
        &mut self,
        key: Id<Batch>,
        fingerprint: u64,
    ) -> bool {
        let Some(batch) = self.slab.get_mut(key) else {
            return false;
        };
        let this = (fingerprint, batch.jobs.len());
        batch.last_reply.replace(this) == Some(this)
    }

    /// A reply to batch `key` stopped at its bound: its texts go out with twice the bound.
    pub(in crate::engine) fn double_bound(&mut self, key: Id<Batch>) {
        if let Some(batch) = self.slab.get_mut(key) {
            batch.bound_scale = output_bound::doubled(batch.bound_scale);
        }
    }
}

#[cfg(test)]
mod tests;
