//! The `Calls` part: the calls running now, the next call id, and the strings every call
//! of a size or layout repeats. It keeps "a call id is given once, and a running call is
//! in the table until its answer, its timeout or dispose takes it out".

use std::rc::Rc;

use super::pacer::Charge;
use super::replies::Reading;
use super::streams::Streamed;
use super::Batch;
use crate::call::CallId;
use crate::id_table::IdTable;
use crate::markers;
use crate::slab::Id;
use crate::time::{Duration, Instant};

/// A call on its way: what its answer needs to be read and charged.
#[derive(Debug)]
pub(super) struct Running {
    batch: Id<Batch>,
    provider: u32,
    /// What it was charged (its estimated cost, its place among the provider's calls,
    /// the provider's 429 episode when it started).
    charge: Charge,
    /// The call's timeout (`timeoutMs` when it started) and when it runs out.
    timeout: Option<Duration>,
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
}

impl Running {
    /// A call of `batch` to `provider` that started at `now`, charged `charge`, out of
    /// time `timeout` later, its reply to read as `reading` says.
    pub(super) fn new(
        batch: Id<Batch>,
        provider: u32,
        charge: Charge,
        reading: Reading,
        timeout: Option<Duration>,
        now: Instant,
    ) -> Self {
        Running {
            batch,
            provider,
            charge,
            timeout,
            deadline: timeout.map(|t| now + t),
            reading,
            stream: None,
            estimated_input: 0.0,
            reply_cap: usize::MAX,
        }
    }

    /// The call, its input estimated at `tokens`, its reply capped at `reply_cap` bytes.
    pub(super) fn with_bounds(mut self, tokens: f64, reply_cap: usize) -> Self {
        self.estimated_input = tokens;
        self.reply_cap = reply_cap;
        self
    }

    /// The longest reply read, in bytes.
    pub(super) fn reply_cap(&self) -> usize {
        self.reply_cap
    }

    /// Its estimated input tokens.
    pub(super) fn estimated_input(&self) -> f64 {
        self.estimated_input
    }

    /// The batch it sends.
    pub(super) fn batch(&self) -> Id<Batch> {
        self.batch
    }

    /// The provider it calls.
    pub(super) fn provider(&self) -> u32 {
        self.provider
    }

    /// What it was charged.
    pub(super) fn charge(&self) -> &Charge {
        &self.charge
    }

    /// Its timeout (`timeoutMs` when it started).
    pub(super) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// When it runs out of time.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// A value of its stream came at `now`: its timeout starts again.
    pub(super) fn restart_deadline(&mut self, now: Instant) {
        self.deadline = self.timeout.map(|t| now + t);
    }

    /// How to read its reply.
    pub(super) fn reading(&self) -> &Reading {
        &self.reading
    }

    /// Its reply so far, once it streams.
    pub(super) fn stream(&self) -> Option<&Streamed> {
        self.stream.as_deref()
    }

    /// Takes its stream state out (to add a value to it, or to read it at the end).
    pub(super) fn take_stream(&mut self) -> Option<Box<Streamed>> {
        self.stream.take()
    }

    /// Puts its stream state back.
    pub(super) fn put_stream(&mut self, stream: Box<Streamed>) {
        self.stream = Some(stream);
    }
}

/// The running calls, their ids, and the strings made once for all calls.
#[derive(Debug)]
pub(super) struct Calls {
    running: IdTable<Running>,
    next: CallId,
    strings: CallStrings,
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            running: IdTable::default(),
            next: 1,
            strings: CallStrings::default(),
        }
    }
}

impl Calls {
    /// Adds a call that starts now, under an id of its own (never one given before).
    pub(super) fn insert_new(&mut self, run: Running) -> CallId {
        let id = self.next;
        self.next += 1;
        self.running.insert(id, run);
        id
    }

    /// Ids and instructions made once for all calls.
    pub(super) fn strings(&mut self) -> &mut CallStrings {
        &mut self.strings
    }

    pub(super) fn get(&self, id: CallId) -> Option<&Running> {
        self.running.get(id)
    }

    pub(super) fn get_mut(&mut self, id: CallId) -> Option<&mut Running> {
        self.running.get_mut(id)
    }

    pub(super) fn contains(&self, id: CallId) -> bool {
        self.running.contains(id)
    }

    /// The call ended (answered, timed out): it is no longer running.
    pub(super) fn remove(&mut self, id: CallId) -> Option<Running> {
        self.running.remove(id)
    }

    /// How many calls are running.
    pub(super) fn len(&self) -> usize {
        self.running.len()
    }

    /// The ids of the running calls.
    pub(super) fn ids(&self) -> impl Iterator<Item = CallId> + '_ {
        self.running.ids()
    }

    /// Ends every running call (dispose).
    pub(super) fn clear(&mut self) {
        self.running.clear();
    }
}

/// The strings every call of a size or layout repeats, made once: ids and instructions.
#[derive(Debug, Default)]
pub(super) struct CallStrings {
    /// `ids[n]`: the ids of a call of `n` texts.
    ids: Vec<Rc<[String]>>,
    /// The last instructions made, with the tag or separator and the count they are for.
    instructions: Option<(String, usize, Rc<str>)>,
    /// A single text's (empty) instructions.
    none: Option<Rc<str>>,
}

impl CallStrings {
    /// The ids of a call of `count` texts.
    pub(super) fn ids(&mut self, count: usize) -> Rc<[String]> {
        while self.ids.len() <= count {
            let n = self.ids.len();
            self.ids.push(markers::ids(n).into());
        }
        self.ids[count].clone()
    }

    /// The instructions for `count` texts laid out with `key` (a tag or a separator),
    /// made by `make` only when the last ones were for another layout.
    pub(super) fn instructions(
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

    /// A single text's instructions: none.
    pub(super) fn none(&mut self) -> Rc<str> {
        self.none.get_or_insert_with(|| Rc::from("")).clone()
    }
}
