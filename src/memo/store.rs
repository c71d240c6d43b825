//! The persistent store behind the in-memory LRU (the `cache` option): a lookup before an
//! item is queued (it holds no token), a write after every success. The driver performs
//! both against the user's `{ get, set }`; a store that fails or hangs only ever costs a
//! miss.

use core::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::id_table::IdTable;
use crate::key::to_hex;
use crate::slab::Id;
use crate::time::{Duration, Instant};

/// How long a lookup may take when calls have no timeout (`timeoutMs: 0`): a store that
/// never answers must still cost no more than a miss.
pub const LOOKUP_BOUND_WITHOUT_TIMEOUT: Duration = Duration::from_micros(5_000_000);

/// Identifies a lookup between `poll_lookup` and `handle_lookup`.
pub type LookupId = u64;

/// A `store.get(key)` to perform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// Pass back to `handle_lookup`.
    pub id: LookupId,
    /// The item's cache key (lowercase hex SHA-256, as `cacheKey` returns).
    pub key: String,
}

/// What a lookup found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupResult {
    /// A stored translation.
    Hit(String),
    /// Nothing stored.
    Miss,
    /// The store threw, rejected or returned something that is not a string: a miss,
    /// reported as an event.
    Failed(String),
}

/// A `store.set(key, value)` to perform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreWrite {
    /// The item's cache key.
    pub key: String,
    /// Its translation.
    pub value: String,
}

/// What is kept for one job: its lookup while under way (`P`, what the job needs to be
/// queued on a miss), its full key until its write.
#[derive(Debug)]
struct JobEntry<P> {
    pending: Option<P>,
    digest: Option<[u8; 32]>,
}

impl<P> JobEntry<P> {
    fn is_spent(&self) -> bool {
        self.pending.is_none() && self.digest.is_none()
    }
}

/// Lookups under way with their deadlines, full keys of jobs (for their write), and the
/// driver's work. Jobs are slab entries of type `J`; `P` is what a job keeps while its
/// lookup is under way.
#[derive(Debug)]
pub struct Store<J, P> {
    jobs: IdTable<JobEntry<P>>,
    /// When each lookup runs out of time, soonest first; one that ended keeps its entry
    /// until the entry reaches the top.
    deadlines: BinaryHeap<Reverse<(Instant, Id<J>)>>,
    lookups: std::collections::VecDeque<Lookup>,
    writes: std::collections::VecDeque<StoreWrite>,
    job_type: core::marker::PhantomData<fn(Id<J>)>,
}

impl<J, P> Default for Store<J, P> {
    fn default() -> Self {
        Store {
            jobs: IdTable::default(),
            deadlines: BinaryHeap::new(),
            lookups: Default::default(),
            writes: Default::default(),
            job_type: core::marker::PhantomData,
        }
    }
}

impl<J, P> Store<J, P> {
    /// Starts the lookup of a new job, out of time at `deadline`.
    pub fn begin(&mut self, job: Id<J>, digest: &[u8; 32], pending: P, deadline: Option<Instant>) {
        let id = job.to_full_bits();
        if let Some(deadline) = deadline {
            self.deadlines.push(Reverse((deadline, job)));
        }
        self.jobs.insert(
            id,
            JobEntry {
                pending: Some(pending),
                digest: Some(*digest),
            },
        );
        self.lookups.push_back(Lookup {
            id,
            key: to_hex(digest),
        });
    }

    /// Ends the lookup of `job`, if it is still under way.
    pub fn finish_lookup(&mut self, job: Id<J>) -> Option<P> {
        self.take(job, |entry| entry.pending.take())
    }

    /// The lookup of `job`, if under way.
    pub fn pending(&self, job: Id<J>) -> Option<&P> {
        self.jobs.get(job.to_full_bits())?.pending.as_ref()
    }

    /// The soonest deadline of a lookup (as of the last `drop_stale`).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.peek().map(|Reverse((at, _))| *at)
    }

    /// Drops the deadlines at the top whose lookups ended.
    pub fn drop_stale(&mut self) {
        while let Some(&Reverse((_, job))) = self.deadlines.peek() {
            if self.pending(job).is_some() {
                break;
            }
            self.deadlines.pop();
        }
    }

    /// The job of the next lookup out of time at `now` (still under way: the caller
    /// ends it).
    pub fn expired(&mut self, now: Instant) -> Option<Id<J>> {
        self.drop_stale();
        let &Reverse((_, job)) = self.deadlines.peek().filter(|d| d.0 .0 <= now)?;
        self.deadlines.pop();
        Some(job)
    }

    /// Queues the write of a success.
    pub fn written(&mut self, job: Id<J>, translation: &str) {
        if let Some(digest) = self.take(job, |entry| entry.digest.take()) {
            self.writes.push_back(StoreWrite {
                key: to_hex(&digest),
                value: translation.to_owned(),
            });
        }
    }

    /// Drops what is kept for `job` (it failed or left).
    pub fn forget(&mut self, job: Id<J>) {
        self.jobs.remove(job.to_full_bits());
    }

    /// Takes one part of the entry of `job`, dropping the entry once nothing is left.
    fn take<T>(
        &mut self,
        job: Id<J>,
        part: impl FnOnce(&mut JobEntry<P>) -> Option<T>,
    ) -> Option<T> {
        let id = job.to_full_bits();
        let entry = self.jobs.get_mut(id)?;
        let taken = part(entry);
        if entry.is_spent() {
            self.jobs.remove(id);
        }
        taken
    }

    /// Drops everything (dispose).
    pub fn clear(&mut self) {
        *self = Store::default();
    }

    /// The next lookup to perform.
    pub fn poll_lookup(&mut self) -> Option<Lookup> {
        self.lookups.pop_front()
    }

    /// The next write to perform.
    pub fn poll_write(&mut self) -> Option<StoreWrite> {
        self.writes.pop_front()
    }
}
