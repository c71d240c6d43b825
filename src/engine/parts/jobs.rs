//! Jobs: one per distinct provider item, shared by identical `translate` calls (dedup)
//! while queued or running, with the tickets waiting on it.
//!
//! The `Jobs` part keeps "a live job is in the key index (unless another live job holds
//! its first word) and each of its counted tickets is in the ticket index; an ended job
//! is found by neither" (its key index entry may stay behind, found stale on lookup):
//! every way a job ends goes through [`Jobs::end`] (or [`Jobs::end_all`] on dispose),
//! which returns the job so the engine settles its tickets.

use super::priority::Priority;
use crate::id_index::IdIndex;
use crate::key::ShortKey;
use crate::settle::Ticket;
use crate::slab::{Id, Slab};
use crate::text::utf16_len;

/// A provider item: one distinct text of one compatibility group, shared by every
/// identical `translate` call while it is queued or running.
///
/// Kept small on purpose (it is most of the memory a queued item costs): the batch it
/// is in is the `Batches` part's to know, the group lives on that batch, and the
/// character count is recomputed on the rare paths that need it again. Priority and arrival stay on the job: a call takes items by them,
/// whichever batch collected them (see `deal`).
#[derive(Debug)]
pub struct Job {
    key: ShortKey,
    text: Box<str>,
    waiters: Waiters,
    /// Its place in line: the highest priority of its waiters, then its arrival.
    priority: Priority,
    seq: u64,
    /// Its estimated input tokens (0 without a token budget).
    tokens: f32,
    /// Whether the key index leads to it (not when another live job has the first word
    /// of its key).
    indexed: bool,
}

/// Tickets waiting on a job; one is the common case and needs no allocation.
#[derive(Debug, Default)]
pub(in crate::engine) struct Waiters {
    /// 0 when empty.
    first: Ticket,
    // A boxed Vec is 8 bytes on every job instead of 24; extra waiters are rare.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Ticket>>>,
}

impl Waiters {
    fn one(ticket: Ticket) -> Waiters {
        Waiters {
            first: ticket,
            more: None,
        }
    }

    fn push(&mut self, ticket: Ticket) {
        if self.first == 0 {
            self.first = ticket;
        } else {
            self.more.get_or_insert_with(Default::default).push(ticket);
        }
    }

    fn contains(&self, ticket: Ticket) -> bool {
        self.first == ticket || self.more.as_ref().is_some_and(|m| m.contains(&ticket))
    }

    fn remove(&mut self, ticket: Ticket) {
        if self.first == ticket {
            self.first = self.more.as_mut().and_then(|m| m.pop()).unwrap_or(0);
        } else if let Some(more) = &mut self.more {
            more.retain(|t| *t != ticket);
        }
    }

    pub(in crate::engine) fn is_empty(&self) -> bool {
        self.first == 0
    }

    /// The tickets, first one first.
    pub(in crate::engine) fn iter(&self) -> impl Iterator<Item = Ticket> + '_ {
        let first = (self.first != 0).then_some(self.first);
        first
            .into_iter()
            .chain(self.more.iter().flat_map(|m| m.iter().copied()))
    }

    pub(in crate::engine) fn len(&self) -> usize {
        self.iter().count()
    }

    fn take(&mut self) -> Tickets {
        Tickets {
            more: self.more.take().map_or_else(Vec::new, |m| *m).into_iter(),
            first: (self.first != 0).then(|| core::mem::take(&mut self.first)),
        }
    }
}

/// The tickets of an ended job, in the order they settle: the later waiters, then the
/// first. Taken without collecting them: nearly every job has only its first.
#[derive(Debug)]
pub(in crate::engine) struct Tickets {
    more: std::vec::IntoIter<Ticket>,
    first: Option<Ticket>,
}

impl Iterator for Tickets {
    type Item = Ticket;

    fn next(&mut self) -> Option<Ticket> {
        self.more.next().or_else(|| self.first.take())
    }
}

/// Tickets with this bit come from a counter (immediate answers, dedup joiners); the
/// others are the bits of the job they wait on, plus one, so finding a job needs no map
/// and no ticket is 0. Every ticket stays below 2^53: JS holds tickets as numbers.
const COUNTED_TICKET: Ticket = 1 << 52;

/// How many stale entries the key index keeps beyond as many as it has live ones: the
/// index is rebuilt, at a cost of one insert per live job, only after at least as many
/// jobs ended.
const STALE_KEYS_KEPT: usize = 1024;

fn job_ticket(job: Id<Job>) -> Ticket {
    job.to_bits() + 1
}

/// The job slot a ticket names, when it is a job's own ticket (not a counted one). A
/// slot is reused: the ticket tells the jobs of one slot apart.
pub fn ticket_slot(ticket: Ticket) -> Option<usize> {
    job_bits(ticket).map(|bits| (bits & 0xFFFF_FFFF) as usize)
}

/// The bits of the job whose own ticket `ticket` is (`None` for a counted ticket or 0).
fn job_bits(ticket: Ticket) -> Option<u64> {
    if ticket & COUNTED_TICKET != 0 {
        return None;
    }
    ticket.checked_sub(1)
}

impl Job {
    /// Its key in its compatibility group.
    pub(in crate::engine) fn key(&self) -> ShortKey {
        self.key
    }

    /// Its text.
    pub(in crate::engine) fn text(&self) -> &str {
        &self.text
    }

    /// Its priority: the highest of its waiters'.
    pub(in crate::engine) fn priority(&self) -> Priority {
        self.priority
    }

    /// Its arrival order.
    pub(in crate::engine) fn seq(&self) -> u64 {
        self.seq
    }

    /// Its estimated input tokens (0 until estimates are needed).
    pub(in crate::engine) fn tokens(&self) -> f32 {
        self.tokens
    }

    /// The tickets waiting on it.
    pub(in crate::engine) fn waiters(&self) -> &Waiters {
        &self.waiters
    }

    /// Takes the tickets waiting on an ended job, to settle.
    pub(in crate::engine) fn take_tickets(&mut self) -> Tickets {
        self.waiters.take()
    }
}

/// What a batch needs to know of an item joining it. Only `Jobs`, which knows the item,
/// makes one, so a batch's sums are always its items' own sizes.
#[derive(Copy, Clone, Debug)]
pub(in crate::engine) struct Member {
    job: Id<Job>,
    chars: u64,
    tokens: f32,
    priority: Priority,
    seq: u64,
}

impl Member {
    /// The item's job.
    pub(in crate::engine) fn job(&self) -> Id<Job> {
        self.job
    }

    /// Its characters.
    pub(in crate::engine) fn chars(&self) -> u64 {
        self.chars
    }

    /// Its estimated input tokens (0 without a token budget).
    pub(in crate::engine) fn tokens(&self) -> f32 {
        self.tokens
    }

    /// Its priority.
    pub(in crate::engine) fn priority(&self) -> Priority {
        self.priority
    }

    /// Its arrival order.
    pub(in crate::engine) fn seq(&self) -> u64 {
        self.seq
    }
}

/// A waiter withdrew from a job (`Jobs::leave`).
pub(in crate::engine) struct Left {
    /// The job it waited on.
    pub(in crate::engine) job: Id<Job>,
    /// Whether nobody waits for the job any more.
    pub(in crate::engine) last: bool,
}

/// A new ticket joined a live twin (`Jobs::join_twin`), whose priority may have risen:
/// the ticket is handed out by `Batches::joined`, which moves the twin's batch up in
/// line with it, so the batch cannot be left behind its own item.
#[must_use]
#[derive(Debug)]
pub(in crate::engine) struct Joined {
    ticket: Ticket,
    job: Id<Job>,
    priority: Priority,
}

impl Joined {
    /// The twin.
    pub(in crate::engine) fn job(&self) -> Id<Job> {
        self.job
    }

    /// The twin's priority now.
    pub(in crate::engine) fn priority(&self) -> Priority {
        self.priority
    }

    /// The new ticket.
    pub(in crate::engine) fn into_ticket(self) -> Ticket {
        self.ticket
    }
}

/// Jobs got token estimates (`Jobs::estimate_tokens`): the batches' token sums are stale
/// until `Batches::sum_tokens` takes this.
#[must_use]
#[derive(Debug)]
pub(in crate::engine) struct Estimated(());

/// The jobs, both key indexes, the ticket counter and the arrival sequence.
#[derive(Debug)]
pub(in crate::engine) struct Jobs {
    slab: Slab<Job>,
    /// Jobs by the first word of their key; the job's full key confirms a match. An
    /// ended job's entry is left in place (taking it out would cost a cache miss per job
    /// with many in flight) and found stale when looked up; the stale entries are
    /// dropped all at once when they outnumber the live jobs.
    by_key: IdIndex<Job>,
    /// How many entries of `by_key` lead to ended jobs.
    stale_keys: usize,
    /// How many live jobs `by_key` leads to: the distinct keys queued or running.
    indexed: usize,
    /// Jobs by their counted tickets (dedup joiners); a job's own ticket is its id.
    by_ticket: IdIndex<Job>,
    next_counted_ticket: Ticket,
    next_seq: u64,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs {
            slab: Slab::default(),
            by_key: IdIndex::default(),
            stale_keys: 0,
            indexed: 0,
            by_ticket: IdIndex::default(),
            next_counted_ticket: COUNTED_TICKET,
            next_seq: 0,
        }
    }
}

impl Jobs {
    /// A place in the items' arrival order for work that is not a job (a `pacer.run`),
    /// so that it and the items of equal priority go in the order they came.
    /// The arrival number the next item gets: every item so far has a lower one.
    pub(in crate::engine) fn arrivals(&self) -> u64 {
        self.next_seq
    }

    pub(in crate::engine) fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// A ticket that names no job (an item answered at once).
    pub(in crate::engine) fn counted_ticket(&mut self) -> Ticket {
        self.next_counted_ticket += 1;
        self.next_counted_ticket
    }

    pub(in crate::engine) fn get(&self, job: Id<Job>) -> Option<&Job> {
        self.slab.get(job)
    }

    /// Every live job.
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn iter(&self) -> impl Iterator<Item = (Id<Job>, &Job)> {
        self.slab.iter()
    }

    /// Panics unless the key index leads to every indexed live job and `distinct`
    /// counts them.
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn check(&self) {
        let mut indexed = 0;
        for (job, entry) in self.slab.iter().filter(|(_, entry)| entry.indexed) {
            indexed += 1;
            let found = self.by_key.get(entry.key.0[0]);
            assert_eq!(found, Some(job), "job {job:?}: the key index leads to it");
        }
        assert_eq!(
            indexed, self.indexed,
            "distinct keys: the indexed live jobs"
        );
    }

    /// The job of a store lookup id (a job's full bits), if it is still live.
    pub(in crate::engine) fn id_from_full_bits(&self, bits: u64) -> Option<Id<Job>> {
        self.slab.id_from_full_bits(bits)
    }

    /// How many distinct keys are queued or running (what `maxQueued` bounds).
    pub(in crate::engine) fn distinct(&self) -> usize {
        self.indexed
    }

    /// The live job the key index holds under `word`.
    fn indexed_job(&self, word: u64) -> Option<Id<Job>> {
        self.by_key
            .get(word)
            .filter(|job| self.slab.get(*job).is_some())
    }

    /// A new ticket waits on the live job of `key`, if there is one (dedup): the job
    /// takes its priority if higher.
    pub(in crate::engine) fn join_twin(
        &mut self,
        key: ShortKey,
        priority: Priority,
    ) -> Option<Joined> {
        let job = self.indexed_job(key.0[0])?;
        let twin = self.slab.get_mut(job).filter(|j| j.key == key)?;
        twin.priority = twin.priority.max(priority);
        self.next_counted_ticket += 1;
        let ticket = self.next_counted_ticket;
        twin.waiters.push(ticket);
        let priority = twin.priority;
        self.by_ticket.insert(ticket, job);
        Some(Joined {
            ticket,
            job,
            priority,
        })
    }

    /// A new job for `text` under `key`: its ticket, and its place in a batch.
    pub(in crate::engine) fn add(
        &mut self,
        key: ShortKey,
        text: &str,
        priority: Priority,
        tokens: f32,
    ) -> (Ticket, Member) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let ticket = job_ticket(self.slab.next_id());
        // On the (2^-64) chance that another live job shares the first word, this one
        // simply goes without dedup.
        let indexed = self.indexed_job(key.0[0]).is_none();
        let job = self.slab.insert(Job {
            key,
            text: text.into(),
            waiters: Waiters::one(ticket),
            priority,
            seq,
            tokens,
            indexed,
        });
        if indexed {
            if self.by_key.insert(key.0[0], job).is_some() {
                self.stale_keys -= 1;
            }
            self.indexed += 1;
        }
        let member = Member {
            job,
            chars: utf16_len(text),
            tokens,
            priority,
            seq,
        };
        (ticket, member)
    }

    /// Gives every job without an estimate its estimate; `Some` when any changed.
    pub(in crate::engine) fn estimate_tokens(
        &mut self,
        estimate: impl Fn(&str) -> f32,
    ) -> Option<Estimated> {
        let mut changed = false;
        for job in self.slab.values_mut() {
            if job.tokens == 0.0 {
                job.tokens = estimate(&job.text);
                changed = true;
            }
        }
        changed.then_some(Estimated(()))
    }

    /// The waiter of `ticket` leaves its job (its signal was aborted); `None` when the
    /// ticket waits on no live job.
    pub(in crate::engine) fn leave(&mut self, ticket: Ticket) -> Option<Left> {
        let job = if ticket & COUNTED_TICKET == 0 {
            let bits = job_bits(ticket)?;
            self.slab.id_from_bits(bits).filter(|k| {
                self.slab
                    .get(*k)
                    .is_some_and(|j| j.waiters.contains(ticket))
            })
        } else {
            self.by_ticket.remove(ticket)
        }?;
        let j = self.slab.get_mut(job)?;
        j.waiters.remove(ticket);
        Some(Left {
            job,
            last: j.waiters.is_empty(),
        })
    }

    /// Ends `job`, however it ends: it leaves both indexes and is returned with its
    /// tickets, to settle.
    pub(in crate::engine) fn end(&mut self, job: Id<Job>) -> Option<(Job, Tickets)> {
        let mut ended = self.slab.remove(job)?;
        if ended.indexed {
            self.indexed -= 1;
            self.stale_keys += 1;
            if self.stale_keys > self.indexed + STALE_KEYS_KEPT {
                self.drop_stale_keys();
            }
        }
        for ticket in ended.waiters.iter() {
            self.by_ticket.remove(ticket);
        }
        let tickets = ended.waiters.take();
        Some((ended, tickets))
    }

    /// Builds the key index anew from the live jobs it leads to.
    fn drop_stale_keys(&mut self) {
        self.by_key.clear();
        for (job, entry) in self.slab.iter() {
            if entry.indexed {
                self.by_key.insert(entry.key.0[0], job);
            }
        }
        self.stale_keys = 0;
    }

    /// Ends every job (dispose): the jobs, whose tickets are to settle.
    pub(in crate::engine) fn end_all(&mut self) -> Vec<Job> {
        // Fresh tables, their memory given back: nothing is queued after dispose.
        self.by_key = IdIndex::default();
        self.stale_keys = 0;
        self.indexed = 0;
        self.by_ticket = IdIndex::default();
        std::mem::take(&mut self.slab).drain()
    }

    /// A job's place in a batch: its characters, priority and arrival.
    pub(in crate::engine) fn member(&self, job: Id<Job>) -> Option<Member> {
        self.slab.get(job).map(|j| Member {
            job,
            chars: utf16_len(&j.text),
            tokens: j.tokens,
            priority: j.priority,
            seq: j.seq,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Jobs, STALE_KEYS_KEPT};
    use crate::engine::priority::Priority;
    use crate::key::ShortKey;

    fn key(n: u64) -> ShortKey {
        ShortKey([n, !n])
    }

    /// Ended jobs leave their key index entries behind: however many ended, a key is
    /// found only while its job lives, and the distinct count is the live jobs'.
    #[test]
    fn a_key_leads_to_its_live_job_only_however_many_jobs_ended() {
        let mut jobs = Jobs::default();
        let keep = jobs.add(key(0), "kept", Priority::new(0.0), 0.0).1.job();
        for round in 1..=3 * STALE_KEYS_KEPT as u64 {
            let job = jobs
                .add(key(round % 700 + 1), "text", Priority::new(0.0), 0.0)
                .1
                .job();
            assert!(jobs
                .join_twin(key(round % 700 + 1), Priority::new(0.0))
                .is_some());
            assert!(jobs.end(job).is_some());
            assert!(jobs
                .join_twin(key(round % 700 + 1), Priority::new(0.0))
                .is_none());
            assert_eq!(jobs.distinct(), 1);
            jobs.check();
        }
        let joined = jobs.join_twin(key(0), Priority::new(1.0)).map(|j| j.job);
        assert_eq!(joined, Some(keep));
    }
}
