//! The `Calls` part: the calls running now, the next call id, their deadlines, and the
//! strings every call of a size or layout repeats. It keeps "a call id is given once, and
//! a running call is in the table until its answer, its timeout, the abort of all its
//! items or dispose takes it out",
//! and owns the deadlines (`next_deadline`, `expired`), which only it can judge.

use std::rc::Rc;

use super::batches::{Batch, Batches};
use super::pacer::Charge;
use super::runs::Run;
use super::streamed::Streamed;
use crate::call::{CallId, Report};
use crate::call_timeout::CallTimeout;
use crate::deadlines::Deadlines;
use crate::markers;
use crate::slab::{Id, Slab};
use crate::time::Instant;

/// How a call's reply is read back onto its items.
#[derive(Debug)]
pub(in crate::engine) enum Reading {
    /// Pairs of markers with this tag.
    Markers(String),
    /// Split on this separator; `strip_fence`: a code fence around the reply was added
    /// by the model (not the texts').
    Separator {
        separator: String,
        strip_fence: bool,
    },
    /// One string per text, by position (an array batch): no other proof applies.
    Array,
}

/// A call on its way: what its answer needs to be read and charged.
#[derive(Debug)]
pub(in crate::engine) struct Running {
    batch: Id<Batch>,
    provider: u32,
    /// What it was charged (its estimated cost, its place among the provider's calls,
    /// the provider's 429 episode when it started).
    charge: Charge,
    /// The call's timeouts (made from the options when it started) and when it runs out.
    timeout: CallTimeout,
    deadline: Option<Instant>,
    /// How to read the reply.
    reading: Reading,
    /// The reply received so far, once it streams.
    stream: Option<Box<Streamed>>,
    /// Its estimated input tokens (texts, context, prompt), to correct later estimates
    /// by what it reports.
    estimated_input: f64,
    /// The longest reply read (bytes): a longer one is cut there and read as truncated.
    reply_cap: usize,
    /// Its place in the order calls started: deadlines of one instant run out in it.
    started: u64,
    /// The `pacer.run` it serves (a call with no batch), if any.
    serves: Option<Id<Run>>,
}

impl Running {
    /// A call of `batch` to `provider` that started at `now`, charged `charge`, out of
    /// time `timeout` later, its reply to read as `reading` says.
    pub(in crate::engine) fn new(
        batch: Id<Batch>,
        provider: u32,
        charge: Charge,
        reading: Reading,
        timeout: CallTimeout,
        now: Instant,
    ) -> Self {
        Running {
            batch,
            provider,
            charge,
            timeout,
            deadline: timeout.first().map(|t| now + t),
            reading,
            stream: None,
            estimated_input: 0.0,
            reply_cap: usize::MAX,
            started: 0,
            serves: None,
        }
    }

    /// A call of run `run` (no batch, no texts) to `provider` that started at `now`.
    pub(in crate::engine) fn for_run(
        run: Id<Run>,
        provider: u32,
        charge: Charge,
        timeout: CallTimeout,
        now: Instant,
    ) -> Self {
        let reading = Reading::Markers(String::new());
        let mut call = Running::new(Id::NONE, provider, charge, reading, timeout, now);
        call.serves = Some(run);
        call
    }

    /// The `pacer.run` it serves, if it is such a call.
    pub(in crate::engine) fn serves_run(&self) -> Option<Id<Run>> {
        self.serves
    }

    /// The call, its input estimated at `tokens`, its reply capped at `reply_cap` bytes.
    pub(in crate::engine) fn with_bounds(mut self, tokens: f64, reply_cap: usize) -> Self {
        self.estimated_input = tokens;
        self.reply_cap = reply_cap;
        self
    }

    /// The longest reply read, in bytes.
    pub(in crate::engine) fn reply_cap(&self) -> usize {
        self.reply_cap
    }

    /// Its estimated input tokens.
    pub(in crate::engine) fn estimated_input(&self) -> f64 {
        self.estimated_input
    }

    /// The batch it sends.
    pub(in crate::engine) fn batch(&self) -> Id<Batch> {
        self.batch
    }

    /// The provider it calls.
    pub(in crate::engine) fn provider(&self) -> u32 {
        self.provider
    }

    /// What it was charged.
    pub(in crate::engine) fn charge(&self) -> &Charge {
        &self.charge
    }

    /// Its timeouts (made when it started).
    pub(in crate::engine) fn timeout(&self) -> CallTimeout {
        self.timeout
    }

    /// When it runs out of time.
    pub(in crate::engine) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// A value of its stream came at `now`: the wait for the next one starts.
    pub(in crate::engine) fn restart_deadline(&mut self, now: Instant) {
        self.deadline = self.timeout.between_values().map(|t| now + t);
    }

    /// How to read its reply.
    pub(in crate::engine) fn reading(&self) -> &Reading {
        &self.reading
    }

    /// Its reply so far, once it streams.
    pub(in crate::engine) fn stream(&self) -> Option<&Streamed> {
        self.stream.as_deref()
    }

    /// Takes its stream state out (to add a value to it, or to read it at the end).
    pub(in crate::engine) fn take_stream(&mut self) -> Option<Box<Streamed>> {
        self.stream.take()
    }

    /// Puts its stream state back.
    pub(in crate::engine) fn put_stream(&mut self, stream: Box<Streamed>) {
        self.stream = Some(stream);
    }

    /// What the call's stream reported so far, if it streamed.
    pub(in crate::engine) fn stream_report(&self) -> Option<&Report> {
        self.stream().map(Streamed::report)
    }

    /// How many items the call's batch still holds.
    pub(in crate::engine) fn batch_len(&self, batches: &Batches) -> usize {
        batches.get(self.batch).map_or(0, |b| b.jobs().len())
    }
}

/// The running calls, their ids, their deadlines, and the strings made once for all
/// calls.
///
/// A call's id is its slot's bits plus one (no id is 0), so finding a call needs no map.
/// A slot reused 2^20 times gives an id again, while the JS host drops any answer whose
/// call is no longer the one it started under that id: an answer reaches the core only
/// for a call that is still running.
#[derive(Debug, Default)]
pub(in crate::engine) struct Calls {
    running: Slab<Running>,
    /// How many calls started: the next one's place in the order of starts.
    started: u64,
    /// Each call's deadline as it was set. A call that ended, or whose stream moved its
    /// deadline on, keeps its entry until the entry reaches the top.
    deadlines: Deadlines<CallId>,
    strings: CallStrings,
    /// How many calls run per provider index (for a provider's own `maxInFlight`).
    per_provider: Vec<u32>,
}

impl Calls {
    /// Adds a call that starts now, under an id no running call has: its slot in
    /// `running` (the low 32 bits) and the slot's generation, plus one. No two running
    /// calls share a slot, which the JS side of calls relies on (it keys them by slot).
    pub(in crate::engine) fn insert_new(&mut self, mut run: Running) -> CallId {
        self.started += 1;
        run.started = self.started;
        let provider = run.provider as usize;
        if self.per_provider.len() <= provider {
            self.per_provider.resize(provider + 1, 0);
        }
        self.per_provider[provider] += 1;
        let deadline = run.deadline;
        let id = self.running.insert(run).to_bits() + 1;
        if let Some(deadline) = deadline {
            self.deadlines.push(deadline, self.started, id);
        }
        id
    }

    /// The slot of call `id`, if it is running.
    fn slot(&self, id: CallId) -> Option<Id<Running>> {
        self.running.id_from_bits(id.checked_sub(1)?)
    }

    /// The soonest deadline of a running call (as of the last `drop_stale`).
    pub(in crate::engine) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.peek().map(|(at, _, _)| at)
    }

    /// Brings the top of the deadlines up to date: entries of calls that ended go, an
    /// entry whose call's stream moved its deadline on goes back in at the new one.
    pub(in crate::engine) fn drop_stale(&mut self) {
        while let Some((at, started, id)) = self.deadlines.peek() {
            // The call under the id must be the one that set the deadline: a reused slot
            // gives a later call the same id.
            let deadline = self
                .get(id)
                .filter(|run| run.started == started)
                .and_then(Running::deadline);
            match deadline {
                Some(d) if d == at => break,
                Some(later) => {
                    self.deadlines.pop();
                    self.deadlines.push(later, started, id);
                }
                None => {
                    self.deadlines.pop();
                }
            }
        }
    }

    /// The next call out of time at `now`, taken out.
    pub(in crate::engine) fn expired(&mut self, now: Instant) -> Option<(CallId, Running)> {
        self.drop_stale();
        let (_, _, id) = self.deadlines.peek().filter(|(at, _, _)| *at <= now)?;
        self.deadlines.pop();
        self.remove(id).map(|run| (id, run))
    }

    /// Ids and instructions made once for all calls.
    pub(in crate::engine) fn strings(&mut self) -> &mut CallStrings {
        &mut self.strings
    }

    pub(in crate::engine) fn get(&self, id: CallId) -> Option<&Running> {
        self.running.get(self.slot(id)?)
    }

    pub(in crate::engine) fn get_mut(&mut self, id: CallId) -> Option<&mut Running> {
        let slot = self.slot(id)?;
        self.running.get_mut(slot)
    }

    /// The call ended (answered, timed out): it is no longer running.
    pub(in crate::engine) fn remove(&mut self, id: CallId) -> Option<Running> {
        let slot = self.slot(id)?;
        let run = self.running.remove(slot)?;
        if let Some(count) = self.per_provider.get_mut(run.provider as usize) {
            *count -= 1;
        }
        Some(run)
    }

    /// How many calls to `provider` are running.
    pub(in crate::engine) fn running_for(&self, provider: u32) -> u64 {
        self.per_provider
            .get(provider as usize)
            .map_or(0, |n| u64::from(*n))
    }

    /// How many calls are running.
    pub(in crate::engine) fn len(&self) -> usize {
        self.running.len()
    }

    /// The ids of the running calls.
    pub(in crate::engine) fn ids(&self) -> impl Iterator<Item = CallId> + '_ {
        self.running.iter().map(|(slot, _)| slot.to_bits() + 1)
    }

    /// The providers of the running calls.
    pub(in crate::engine) fn providers(&self) -> impl Iterator<Item = u32> + '_ {
        self.running.iter().map(|(_, run)| run.provider())
    }

    /// Ends every running call (dispose).
    pub(in crate::engine) fn clear(&mut self) {
        // A fresh slab, its memory given back: no call starts after dispose, so no id
        // is issued again.
        self.running = Slab::default();
        self.deadlines = Deadlines::default();
        self.per_provider = Vec::new();
    }
}

/// The strings every call of a size or layout repeats, made once: ids, marker pairs and
/// instructions.
#[derive(Debug, Default)]
pub(in crate::engine) struct CallStrings {
    /// `ids[n]`: the ids of a call of `n` texts.
    ids: Vec<Rc<[String]>>,
    /// The last instructions made, with the tag or separator and the count they are for.
    instructions: Option<(String, usize, Rc<str>)>,
    /// A single text's (empty) instructions.
    none: Option<Rc<str>>,
    /// The marker pairs of the last tag: `.1[n]` those of a call of `n` texts.
    pairs: Option<(String, PairsBySize)>,
}

/// `[n]`: the marker pairs of a call of `n` texts.
type PairsBySize = Vec<Rc<[(String, String)]>>;

impl CallStrings {
    /// The ids of a call of `count` texts.
    pub(in crate::engine) fn ids(&mut self, count: usize) -> Rc<[String]> {
        while self.ids.len() <= count {
            let n = self.ids.len();
            self.ids.push(markers::ids(n).into());
        }
        self.ids[count].clone()
    }

    /// The instructions for `count` texts laid out with `key` (a tag or a separator),
    /// made by `make` only when the last ones were for another layout.
    pub(in crate::engine) fn instructions(
        &mut self,
        key: &str,
        count: usize,
        make: impl FnOnce() -> String,
    ) -> Rc<str> {
        match &self.instructions {
            Some((k, c, last)) if k == key && *c == count => last.clone(),
            _ => {
                let made: Rc<str> = make().into();
                self.instructions = Some((key.to_owned(), count, made.clone()));
                made
            }
        }
    }

    /// The `[open, close]` marker pairs of a call of `count` texts under `tag`: every
    /// batch of a page has the same tag and one of a few sizes.
    pub(in crate::engine) fn pairs(&mut self, tag: &str, count: usize) -> Rc<[(String, String)]> {
        let (_, by_count) = match &mut self.pairs {
            Some(made) if made.0 == tag => made,
            slot => slot.insert((tag.to_owned(), Vec::new())),
        };
        while by_count.len() <= count {
            let n = by_count.len();
            let mut pairs = Vec::with_capacity(n);
            for index in 0..n {
                pairs.push(markers::pair(tag, markers::number(index)));
            }
            by_count.push(pairs.into());
        }
        by_count[count].clone()
    }

    /// A single text's instructions: none.
    pub(in crate::engine) fn none(&mut self) -> Rc<str> {
        self.none.get_or_insert_with(|| Rc::from("")).clone()
    }
}
