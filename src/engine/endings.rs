//! How a job ends, in one place: translated by a call, found in the persistent store,
//! failed, or withdrawn by its last waiter (with its running call, when no item of that
//! call is waited for any more). Each way leaves the `Jobs` part through
//! `Jobs::end`, tells the cache and the store what they must learn, drops the job from
//! its group's count, and settles its tickets.

use super::{Batch, Engine, Group, Job};
use crate::call::CallId;
use crate::settle::{PacerFailure, Ticket};
use crate::slab::Id;

/// How a job ends.
pub(super) enum Ending<C> {
    /// A call translated it: the cache and the store learn the translation.
    Translated(String),
    /// The persistent store had it: the cache learns it, the store has it already.
    Stored(String),
    /// It rejects with this error.
    Failed(PacerFailure<C>),
    /// Nobody waits for it any more (its tickets settled when they left).
    Withdrawn,
}

impl<C: Clone> Engine<C> {
    /// Ends `job_key` of `group` as `ending` says; the ended job, if it was live.
    pub(super) fn end_job(
        &mut self,
        job_key: Id<Job>,
        group: Id<Group>,
        ending: Ending<C>,
    ) -> Option<Job> {
        let (job, tickets) = self.jobs.end(job_key)?;
        if let Ending::Translated(translation) | Ending::Stored(translation) = &ending {
            self.cache.put(job.key(), translation);
        }
        if let Some(store) = &mut self.store {
            match &ending {
                Ending::Translated(translation) => store.written(job_key, translation),
                _ => store.forget(job_key),
            }
        }
        self.groups.job_ended(group);
        let outcome = match ending {
            Ending::Translated(translation) | Ending::Stored(translation) => Ok(translation),
            Ending::Failed(error) => Err(error),
            // A withdrawn job has no ticket left.
            Ending::Withdrawn => return Some(job),
        };
        // Every ticket but the last settles with a copy; the last takes the outcome.
        let mut tickets = tickets.peekable();
        while let Some(ticket) = tickets.next() {
            if tickets.peek().is_none() {
                self.out.settle(ticket, outcome);
                break;
            }
            self.out.settle(ticket, outcome.clone());
        }
        Some(job)
    }

    pub(super) fn resolve(&mut self, ticket: Ticket, translation: String) {
        self.out.settle(ticket, Ok(translation));
    }

    /// A job's translation is known: every waiter resolves, the cache and store learn it.
    pub(super) fn resolve_job(&mut self, job_key: Id<Job>, group: Id<Group>, translation: String) {
        self.end_job(job_key, group, Ending::Translated(translation));
    }

    /// Removes a job nobody waits for from its (not running) batch.
    pub(super) fn withdraw(&mut self, job_key: Id<Job>) {
        let Some(member) = self.jobs.member(job_key) else {
            return;
        };
        if let Some(pending) = self.store.as_mut().and_then(|s| s.finish_lookup(job_key)) {
            // Left while its lookup was under way: it never reached a batch.
            self.end_job(job_key, pending.group, Ending::Withdrawn);
            return;
        }
        // A live job outside a lookup is in a batch (`Engine::check`).
        let left = self.batches.leave(&member);
        let group = left.and_then(|(batch, _)| self.batches.get(batch));
        let group = group.map_or(Id::NONE, Batch::compat);
        if let Some((batch_key, true)) = left {
            self.batches.remove(batch_key);
        }
        self.end_job(job_key, group, Ending::Withdrawn);
    }

    /// Ends the jobs of `batch_key` that nobody waits for any more (aborted while their
    /// call ran, beside items still waited for), so that a retry, a split or the individual
    /// fallback never sends them again. False when no job is left: the batch is gone.
    pub(super) fn drop_unwaited(&mut self, batch_key: Id<Batch>) -> bool {
        let Some(batch) = self.batches.get(batch_key) else {
            return false;
        };
        let unwaited = |job: &Id<Job>| self.jobs.get(*job).is_some_and(|j| j.waiters().is_empty());
        if !batch.jobs().iter().any(unwaited) {
            return true;
        }
        let group = batch.compat();
        let gone: Vec<Id<Job>> = batch.jobs().iter().copied().filter(unwaited).collect();
        for job_key in gone {
            if let Some(member) = self.jobs.member(job_key) {
                if let Some((emptied, true)) = self.batches.leave(&member) {
                    self.batches.remove(emptied);
                }
            }
            self.end_job(job_key, group, Ending::Withdrawn);
        }
        self.batches.get(batch_key).is_some()
    }

    /// Cancels running call `id` of `batch_key` when none of its items has a waiter left
    /// (each was aborted, its dedup twins too): its jobs end withdrawn, so nothing of
    /// its reply is used, cached or retried, and an answer that comes finds no call.
    pub(super) fn abandon_if_unneeded(&mut self, id: CallId, batch_key: Id<Batch>) {
        let Some(batch) = self.batches.get(batch_key) else {
            return;
        };
        let mut jobs = batch.jobs().iter().filter_map(|j| self.jobs.get(*j));
        if jobs.any(|job| !job.waiters().is_empty()) {
            return;
        }
        if self.calls.remove(id).is_none() {
            return;
        }
        self.out.withdraw_call(id);
        if let Some(batch) = self.batches.remove(batch_key) {
            let group = batch.compat();
            for job_key in batch.into_jobs() {
                self.end_job(job_key, group, Ending::Withdrawn);
            }
        }
    }

    /// Rejects every waiter of every item of a batch, running or not.
    pub(super) fn fail(&mut self, batch_key: Id<Batch>, error: PacerFailure<C>) {
        let Some(batch) = self.batches.remove(batch_key) else {
            return;
        };
        let group = batch.compat();
        for job_key in batch.into_jobs() {
            self.end_job(job_key, group, Ending::Failed(error.clone()));
        }
    }
}
