//! Jobs: one per distinct provider item, shared by identical `translate` calls (dedup)
//! while queued or running, with the tickets waiting on it. Every way a job ends
//! (resolved, failed, withdrawn) removes it from both key indexes and its group here.

use super::*;

/// A provider item: one distinct text of one compatibility group, shared by every
/// identical `translate` call while it is queued or running.
///
/// Kept small on purpose (it is most of the memory a queued item costs): the group
/// lives on the job's batch, and the character count is recomputed on the rare paths
/// that need it again. Priority and arrival stay on the job: a call takes items by them,
/// whichever batch collected them (see `first_call`).
#[derive(Debug)]
pub struct Job {
    pub(super) key: ShortKey,
    pub(super) text: Box<str>,
    pub(super) waiters: Waiters,
    pub(super) batch: Id<Batch>,
    /// Its place in line: the highest priority of its waiters, then its arrival.
    pub(super) priority: Priority,
    pub(super) seq: u64,
    /// Its estimated input tokens (0 without a token budget).
    pub(super) tokens: f32,
}

/// Tickets waiting on a job; one is the common case and needs no allocation.
#[derive(Debug, Default)]
pub(super) struct Waiters {
    /// 0 when empty.
    pub(super) first: Ticket,
    // A boxed Vec is 8 bytes on every job instead of 24; extra waiters are rare.
    #[allow(clippy::box_collection)]
    pub(super) more: Option<Box<Vec<Ticket>>>,
}

impl Waiters {
    pub(super) fn one(ticket: Ticket) -> Waiters {
        Waiters {
            first: ticket,
            more: None,
        }
    }

    pub(super) fn push(&mut self, ticket: Ticket) {
        if self.first == 0 {
            self.first = ticket;
        } else {
            self.more.get_or_insert_with(Default::default).push(ticket);
        }
    }

    pub(super) fn contains(&self, ticket: Ticket) -> bool {
        self.first == ticket || self.more.as_ref().is_some_and(|m| m.contains(&ticket))
    }

    pub(super) fn remove(&mut self, ticket: Ticket) {
        if self.first == ticket {
            self.first = self.more.as_mut().and_then(|m| m.pop()).unwrap_or(0);
        } else if let Some(more) = &mut self.more {
            more.retain(|t| *t != ticket);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first == 0
    }

    /// The tickets, first one first.
    pub(super) fn iter(&self) -> impl Iterator<Item = Ticket> + '_ {
        let first = (self.first != 0).then_some(self.first);
        first
            .into_iter()
            .chain(self.more.iter().flat_map(|m| m.iter().copied()))
    }

    pub(super) fn len(&self) -> usize {
        self.iter().count()
    }

    pub(super) fn take(&mut self) -> Vec<Ticket> {
        let mut all = self.more.take().map_or_else(Vec::new, |m| *m);
        if self.first != 0 {
            all.push(core::mem::take(&mut self.first));
        }
        all
    }
}

/// Tickets with this bit come from a counter (immediate answers, dedup joiners); the
/// others are the bits of the job they wait on, plus one, so finding a job needs no map
/// and no ticket is 0. Every ticket stays below 2^53: JS holds tickets as numbers.
pub(super) const COUNTED_TICKET: Ticket = 1 << 52;

pub(super) fn job_ticket(job: Id<Job>) -> Ticket {
    job.to_bits() + 1
}

impl<C: Clone> Engine<C> {
    pub(super) fn counted_ticket(&mut self) -> Ticket {
        self.next_counted_ticket += 1;
        self.next_counted_ticket
    }

    pub(super) fn resolve(&mut self, ticket: Ticket, translation: String) {
        self.out.settle(ticket, Ok(translation));
    }

    /// A job's translation is known: every waiter resolves, the cache and store learn it.
    pub(super) fn resolve_job(&mut self, job_key: Id<Job>, group: Id<Group>, translation: String) {
        let Some(mut job) = self.jobs.remove(job_key) else {
            return;
        };
        self.forget_job_key(job_key, job.key);
        self.cache.put(job.key, &translation);
        if let Some(store) = &mut self.store {
            store.written(job_key, &translation);
        }
        self.after_job_removed(group);
        for ticket in job.waiters.take() {
            self.job_by_ticket.remove(ticket);
            self.resolve(ticket, translation.clone());
        }
    }

    pub(super) fn forget_job_key(&mut self, job: Id<Job>, key: ShortKey) {
        self.job_by_key.remove_if_leads_to(key.0[0], job);
    }

    pub(super) fn after_job_removed(&mut self, group: Id<Group>) {
        if let Some(g) = self.groups.get_mut(group) {
            g.jobs -= 1;
        }
        self.release_group_if_idle(group);
    }

    /// Removes a job nobody waits for from its (not running) batch.
    pub(super) fn withdraw(&mut self, job_key: Id<Job>) {
        let Some(job) = self.jobs.remove(job_key) else {
            return;
        };
        self.forget_job_key(job_key, job.key);
        if let Some(pending) = self.store.as_mut().and_then(|s| s.finish_lookup(job_key)) {
            // Left while its lookup was under way: it never reached a batch.
            if let Some(store) = &mut self.store {
                store.forget(job_key);
            }
            self.after_job_removed(pending.group);
            return;
        }
        if let Some(store) = &mut self.store {
            store.forget(job_key);
        }
        self.out.stats.queued -= 1;
        let batch_key = job.batch;
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        let group = batch.compat;
        {
            let before = ready_key(batch_key, batch);
            batch.jobs.retain(|j| *j != job_key);
            batch.chars = batch.chars.saturating_sub(utf16_len(&job.text));
            batch.tokens -= f64::from(job.tokens);
            if batch.jobs.is_empty() {
                let (state, provider) = (batch.state, batch.provider);
                self.batches.remove(batch_key);
                if state == State::Ready {
                    if let Some(p) = self.providers.get_mut(provider as usize) {
                        p.ready.remove(&before);
                    }
                }
                if let Some(g) = self.groups.get_mut(group) {
                    if g.open == Some(batch_key) {
                        g.open = None;
                    }
                }
            }
        }
        self.after_job_removed(group);
    }

    /// Rejects every waiter of every item of a running batch.
    pub(super) fn fail(&mut self, batch_key: Id<Batch>, error: PacerFailure<C>) {
        let Some(batch) = self.batches.remove(batch_key) else {
            return;
        };
        for job_key in batch.jobs {
            let Some(mut job) = self.jobs.remove(job_key) else {
                continue;
            };
            self.forget_job_key(job_key, job.key);
            if let Some(store) = &mut self.store {
                store.forget(job_key);
            }
            self.after_job_removed(batch.compat);
            for ticket in job.waiters.take() {
                self.job_by_ticket.remove(ticket);
                self.out.settle(ticket, Err(error.clone()));
            }
        }
    }

    /// Rejects a batch that has not started (see `fail` for a running one).
    pub(super) fn fail_queued(&mut self, batch_key: Id<Batch>, error: PacerFailure<C>) {
        let Some(batch) = self.batches.get(batch_key) else {
            return;
        };
        let (state, provider, group) = (batch.state, batch.provider, batch.compat);
        self.out.stats.queued -= batch.jobs.len() as u64;
        if state == State::Ready {
            let key = ready_key(batch_key, batch);
            if let Some(p) = self.providers.get_mut(provider as usize) {
                p.ready.remove(&key);
            }
        }
        if let Some(g) = self.groups.get_mut(group) {
            if g.open == Some(batch_key) {
                g.open = None;
            }
        }
        self.fail(batch_key, error);
    }

    /// A job's place in a batch: its characters, priority and arrival.
    pub(super) fn member(&self, job: Id<Job>) -> Option<Member> {
        self.jobs.get(job).map(|j| Member {
            job,
            chars: utf16_len(&j.text),
            tokens: j.tokens,
            priority: j.priority,
            seq: j.seq,
        })
    }
}
