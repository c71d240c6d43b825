//! The persistent store's flow: a new item is looked up before it is queued (no token
//! held); a hit settles it, a miss or a failure queues it, every success is written.

use super::endings::Ending;
use super::jobs::Member;
use super::outbox::Counter;
use super::{Engine, Group, Job};
use crate::slab::Id;
use crate::stats::Event;
use crate::store::{Lookup, LookupId, LookupResult, Store, StoreWrite};
use crate::time::Instant;

/// A job waiting for its lookup: what it needs to be queued on a miss.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingLookup {
    pub(super) member: Member,
    pub(super) group: Id<Group>,
    pub(super) deadline: Option<Instant>,
}

impl<C: Clone> Engine<C> {
    /// Puts a persistent store behind the LRU: new items are looked up before they are
    /// queued (`poll_lookup`), and every success is written (`poll_store_write`).
    pub fn enable_store(&mut self) {
        self.store.get_or_insert_with(Store::default);
    }

    /// Reports what a lookup found. A failure is a miss, reported as an event.
    pub fn handle_lookup(&mut self, now: Instant, id: LookupId, result: LookupResult) {
        self.advance(now);
        // Full bits: a lookup's answer may arrive long after its job ended.
        if let Some(job) = self.jobs.id_from_full_bits(id) {
            self.end_lookup(job, result);
        }
        self.after_input();
    }

    /// Reports a failed `store.set`; it changes nothing but the events.
    pub fn handle_store_failure(&mut self, message: String) {
        self.out.event(Event::CacheError {
            operation: "set",
            message,
        });
    }

    // ----- outputs -----

    /// The next store lookup to perform.
    pub fn poll_lookup(&mut self) -> Option<Lookup> {
        self.store.as_mut()?.poll_lookup()
    }

    /// The next store write to perform.
    pub fn poll_store_write(&mut self) -> Option<StoreWrite> {
        self.store.as_mut()?.poll_write()
    }

    /// A lookup ended: a hit settles the job, anything else queues it.
    pub(super) fn end_lookup(&mut self, job_key: Id<Job>, result: LookupResult) {
        let Some(pending) = self.store.as_mut().and_then(|s| s.finish_lookup(job_key)) else {
            return;
        };
        match result {
            LookupResult::Hit(translation) => {
                self.out.count(Counter::CacheHits, 1);
                self.end_job(job_key, pending.group, &Ending::Stored(translation));
            }
            LookupResult::Miss | LookupResult::Failed(_) => {
                if let LookupResult::Failed(message) = result {
                    self.out.event(Event::CacheError {
                        operation: "get",
                        message,
                    });
                }
                // A twin may have raised the job's priority during the lookup, and a
                // token budget set meanwhile given it an estimate.
                let member = self.jobs.member(job_key).unwrap_or(pending.member);
                self.place(member, pending.group, self.now);
            }
        }
    }
}
