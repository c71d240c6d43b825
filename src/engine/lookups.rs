//! The persistent store's flow: a new item is looked up before it is queued (no token
//! held); a hit settles it, a miss or a failure queues it, every success is written.

use super::endings::Ending;
use super::jobs::Member;
use super::outbox::Counter;
use super::{Engine, Group, Job};
use crate::slab::Id;
use crate::stats::Event;
use crate::store::LookupResult;

/// A job waiting for its lookup: what it needs to be queued on a miss.
#[derive(Clone, Copy, Debug)]
pub(super) struct PendingLookup {
    pub(super) member: Member,
    pub(super) group: Id<Group>,
}

impl<C: Clone> Engine<C> {
    /// A lookup ended: a hit settles the job, anything else queues it.
    pub(super) fn end_lookup(&mut self, job_key: Id<Job>, result: LookupResult) {
        let Some(pending) = self.store.as_mut().and_then(|s| s.finish_lookup(job_key)) else {
            return;
        };
        match result {
            LookupResult::Hit(translation) => {
                self.out.count(Counter::CacheHits, 1);
                self.end_job(job_key, pending.group, Ending::Stored(translation));
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
