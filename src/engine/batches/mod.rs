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

use core::cmp::Reverse;
use std::collections::BinaryHeap;

use super::jobs::{Estimated, Job, Jobs, Joined, Member};
use super::limits::{travels_alone, Limits, Try};

mod batch;
use super::priority::Priority;
use super::Group;
use crate::output_bound;
use crate::ready::ReadySet;
use crate::settle::Ticket;
use crate::slab::{Id, Slab};
use crate::time::Instant;
use batch::is_running;
pub(super) use batch::{Batch, State};

/// A due batch's place in its provider's line: highest priority first, then first
/// come, first served (the fields compare in this order).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ReadyKey {
    /// The highest priority of its items (reversed: the highest is the smallest key).
    pub(super) priority: Reverse<Priority>,
    /// The arrival order of its first item.
    pub(super) arrival: u64,
    /// The batch.
    pub(super) batch: Id<Batch>,
}

fn ready_key(key: Id<Batch>, batch: &Batch) -> ReadyKey {
    ReadyKey {
        priority: Reverse(batch.priority),
        arrival: batch.seq,
        batch: key,
    }
}

/// A batch's wake-up: its collection window ends, or its backoff does, or the budgets
/// that held back its dealt call hold it. At one instant, windows come first (the order
/// the engine's wake-ups have always had).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wakeup {
    Due(Id<Batch>),
    Backoff(Id<Batch>),
    Held(Id<Batch>),
}

/// Where a new item goes: its group, the group's provider, and whether it may share a
/// call at all.
#[derive(Copy, Clone, Debug)]
pub(super) struct Home {
    pub(super) group: Id<Group>,
    pub(super) provider: u32,
    pub(super) llm: bool,
}

/// Every batch, the due ones of each provider in dispatch order, and each group's batch
/// still open to new items.
#[derive(Debug)]
pub(super) struct Batches {
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
    pub(super) fn new(limits: Limits) -> Self {
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
    pub(super) fn limits_for(&self, provider: u32) -> &Limits {
        match self.own.get(provider as usize) {
            Some(Some(own)) => own,
            _ => &self.limits,
        }
    }

    /// Sets `provider`'s own limits (`None`: the pacer's); whether they changed.
    pub(super) fn set_own_limits(&mut self, provider: u32, limits: Option<Limits>) -> bool {
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
    pub(super) fn set_limits(&mut self, limits: Limits) -> bool {
        let changed = limits != self.limits;
        self.limits = limits;
        changed
    }

    pub(super) fn get(&self, key: Id<Batch>) -> Option<&Batch> {
        self.slab.get(key)
    }

    /// Every batch.
    #[cfg(any(test, feature = "check"))]
    pub(super) fn iter(&self) -> impl Iterator<Item = (Id<Batch>, &Batch)> {
        self.slab.iter()
    }

    /// How many items wait in batches whose call is not running.
    pub(super) fn unsent(&self) -> u64 {
        self.unsent
    }

    /// The due batches of `provider`, best first.
    pub(super) fn ready(&self, provider: u32) -> Option<&ReadySet<ReadyKey>> {
        self.ready.get(provider as usize)
    }

    /// The best due batch of `provider`.
    pub(super) fn first_ready(&self, provider: u32) -> Option<ReadyKey> {
        self.ready(provider)?.first().copied()
    }

    /// The providers with a due batch, each with its best one.
    pub(super) fn due_providers(&self) -> impl Iterator<Item = (u32, ReadyKey)> + '_ {
        (self.due.iter()).filter_map(|p| Some((*p, self.first_ready(*p)?)))
    }

    /// The providers of every batch.
    pub(super) fn providers(&self) -> impl Iterator<Item = u32> + '_ {
        self.slab.iter().map(|(_, batch)| batch.provider)
    }

    /// The providers of `indexes` were forgotten (none has a batch), and no index from
    /// `bound` on is given out: their ready sets go. Called after `drop_stale`, when
    /// only providers with a due batch are listed.
    pub(super) fn forget_providers(&mut self, indexes: &[u32], bound: usize) {
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

    /// The batch open to `group`'s new items.
    pub(super) fn open(&self, group: Id<Group>) -> Option<Id<Batch>> {
        let open = (*self.open.get(group.slot())?)?;
        self.slab
            .get(open)
            .is_some_and(|b| b.compat == group)
            .then_some(open)
    }

    /// The batch `job` is in (`Id::NONE` while in none: its store lookup is under way).
    pub(super) fn batch_of(&self, job: Id<Job>) -> Id<Batch> {
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
    pub(super) fn job_entries(&self) -> impl Iterator<Item = (usize, Id<Batch>)> + '_ {
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
    pub(super) fn insert_due(&mut self, mut batch: Batch) -> Id<Batch> {
        batch.state = State::Ready;
        self.insert(batch)
    }

    /// The ready set of `provider`, to insert into: the provider is listed as due.
    fn ready_set(&mut self, provider: u32) -> &mut ReadySet<ReadyKey> {
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
    pub(super) fn make_ready(&mut self, key: Id<Batch>) {
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

    /// Whether `wakeup` still has a reason to fire: its batch is still in the state it
    /// was set for.
    fn wakeup_live(&self, wakeup: Wakeup) -> bool {
        match wakeup {
            Wakeup::Due(key) => self
                .slab
                .get(key)
                .is_some_and(|b| b.state == State::Collecting),
            Wakeup::Backoff(key) => self
                .slab
                .get(key)
                .is_some_and(|b| matches!(b.state, State::Backoff(_))),
            // Dealt again since (a new call), or started: the new call has its own.
            Wakeup::Held(key) => self.slab.get(key).is_some_and(|b| b.state == State::Ready),
        }
    }

    /// The soonest wake-up a batch needs.
    pub(super) fn next_wakeup(&self) -> Option<Instant> {
        self.wakeups.peek().map(|Reverse((at, _))| *at)
    }

    /// Drops the wake-ups at the top whose batches moved on, so that `next_wakeup` never
    /// wakes anyone for nothing.
    pub(super) fn drop_stale(&mut self) {
        while let Some(&Reverse((_, wakeup))) = self.wakeups.peek() {
            if self.wakeup_live(wakeup) {
                break;
            }
            self.wakeups.pop();
        }
        let (ready, listed) = (&self.ready, &mut self.listed);
        self.due.retain(|p| {
            let due = ready.get(*p as usize).is_some_and(|s| s.first().is_some());
            if !due {
                if let Some(flag) = listed.get_mut(*p as usize) {
                    *flag = false;
                }
            }
            due
        });
    }

    /// Fires the soonest wake-up if it is due at `now`; whether there was one.
    pub(super) fn wake(&mut self, now: Instant) -> bool {
        let Some(&Reverse((_, wakeup))) = self.wakeups.peek().filter(|w| w.0 .0 <= now) else {
            return false;
        };
        self.wakeups.pop();
        match wakeup {
            Wakeup::Due(key) => self.window_closed(key, now),
            Wakeup::Backoff(key) => self.backoff_over(key, now),
            // It only wakes the engine, which tries the call again.
            Wakeup::Held(_) => {}
        }
        true
    }

    /// Whether collecting batch `key` has its wake-up (for `Engine::check`).
    #[cfg(any(test, feature = "check"))]
    pub(super) fn has_due_wakeup(&self, key: Id<Batch>) -> bool {
        let due = Wakeup::Due(key);
        self.wakeups.iter().any(|Reverse((_, w))| *w == due)
    }

    /// A collecting batch's window may have closed at `now`.
    fn window_closed(&mut self, key: Id<Batch>, now: Instant) {
        let due = self.slab.get(key).is_some_and(|b| {
            b.state == State::Collecting && b.due_at(self.limits_for(b.provider)) <= now
        });
        if due {
            self.make_ready(key);
        }
    }

    /// A batch's backoff may be over at `now`.
    fn backoff_over(&mut self, key: Id<Batch>, now: Instant) {
        let over = self
            .slab
            .get(key)
            .is_some_and(|b| matches!(b.state, State::Backoff(until) if until <= now));
        if over {
            self.make_ready(key);
        }
    }

    /// The call dealt from due batch `key` did not fit its budgets until `at`: the engine
    /// wakes then. The batch first in line, whose cost `poll_timeout` reads, may be
    /// another by then, or cheaper than the call dealt (a deal may add items).
    pub(super) fn hold(&mut self, key: Id<Batch>, at: Instant) {
        self.wakeups.push(Reverse((at, Wakeup::Held(key))));
    }

    /// The batch waits out a retry backoff until `until`.
    pub(super) fn back_off(&mut self, key: Id<Batch>, until: Instant) {
        self.set_state(key, State::Backoff(until));
        self.wakeups.push(Reverse((until, Wakeup::Backoff(key))));
    }

    /// Call `call` starts with the batch: out of its ready set, sealed, no longer open,
    /// one more attempt counted.
    pub(super) fn start(&mut self, key: Id<Batch>, call: u64) {
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
    pub(super) fn remove(&mut self, key: Id<Batch>) -> Option<Batch> {
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
    pub(super) fn clear(&mut self) {
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

    /// Puts a new job into its group's open batch, or starts a new batch (a batch is
    /// due when full by items or characters, or when its window closes: its wake-up).
    pub(super) fn place(&mut self, member: Member, home: Home, first_at: Instant, now: Instant) {
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

    /// A due batch's place in line changed.
    fn rekey(&mut self, provider: u32, before: &ReadyKey, after: ReadyKey) {
        if let Some(set) = self.ready.get_mut(provider as usize) {
            set.remove(before);
            set.insert(after);
        }
    }

    /// A new ticket joined a twin (dedup): the twin's batch takes its priority if
    /// higher. The ticket.
    pub(super) fn joined(&mut self, joined: Joined) -> Ticket {
        self.raise_priority(self.batch_of(joined.job()), joined.priority());
        joined.into_ticket()
    }

    /// A twin of one of its items came with a higher priority.
    fn raise_priority(&mut self, key: Id<Batch>, priority: Priority) {
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
    pub(super) fn leave(&mut self, member: &Member) -> Option<(Id<Batch>, bool)> {
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

    /// Counts one more try of this kind for the batch; the count so far.
    pub(super) fn count_try(&mut self, key: Id<Batch>, kind: Try) -> Option<u16> {
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
    pub(super) fn forget_errors(&mut self, key: Id<Batch>) {
        if let Some(batch) = self.slab.get_mut(key) {
            batch.errors = 0;
        }
    }

    /// A reply with `fingerprint` did not prove every item of batch `key`: whether it
    /// repeats the last such reply to the same texts (a retry cannot help then).
    pub(super) fn repeats_last_reply(&mut self, key: Id<Batch>, fingerprint: u64) -> bool {
        let Some(batch) = self.slab.get_mut(key) else {
            return false;
        };
        let this = (fingerprint, batch.jobs.len());
        batch.last_reply.replace(this) == Some(this)
    }

    /// A reply to batch `key` stopped at its bound: its texts go out with twice the bound.
    pub(super) fn double_bound(&mut self, key: Id<Batch>) {
        if let Some(batch) = self.slab.get_mut(key) {
            batch.bound_scale = output_bound::doubled(batch.bound_scale);
        }
    }

    /// Keeps the first `keep` items in due batch `key` and puts the rest in a batch of
    /// their own behind it, both keeping its tries and place in line: a call may carry
    /// no more (the provider's learned batch size). The key of the batch to send.
    pub(super) fn split_off(&mut self, key: Id<Batch>, keep: usize, jobs: &Jobs) -> Id<Batch> {
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

    /// Deals the due batches `pool` of `group` again (see `Engine::first_call`): the
    /// items of `call` become one due batch, those of `rest` (in arrival order) fill due
    /// batches behind it, and if the group's open batch was dealt, the last of these is
    /// open now. The call's batch.
    pub(super) fn redeal(
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
    pub(super) fn sum_tokens(&mut self, jobs: &Jobs, _estimated: Estimated) {
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
    pub(super) fn unsent_of(&self, provider: u32) -> Vec<Id<Batch>> {
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
    pub(super) fn take_unstarted(&mut self, jobs: &Jobs) -> Vec<(Member, Id<Group>, Instant)> {
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

#[cfg(test)]
mod tests;
