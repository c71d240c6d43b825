//! The engine: composes bucket, batches, codec, retries, dedup and cache.
//!
//! Inputs are `handle_*` calls that carry the current time; outputs are polled:
//! [`Engine::poll_call`] (start this provider call), [`Engine::poll_cancel`] (abort this
//! call's signal), [`Engine::poll_settled`] (an item ended), [`Engine::poll_event`] and
//! [`Engine::poll_timeout`] (call `handle_timeout` then). After every `handle_*`, drain
//! the outputs, then sleep until `poll_timeout`.

use core::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;

use crate::alignment;
use crate::batch::{travels_alone, utf16_len, Batch, Limits, Member, Priority, State};
use crate::bucket::TokenBucket;
use crate::cache::Lru;
use crate::call::{Call, CallId, CompatInfo, Failure, FailureKind, Layout, Quota, Reply, Report};
use crate::codec::{self, Mismatch};
use crate::display::js_number;
use crate::id_table::IdTable;
use crate::key::{item_key, Compat, Keyer, ShortKey};
use crate::key_index::KeyIndex;
use crate::markers;
use crate::options::{OptionValue, Options, SegmentFormat};
use crate::proof;
use crate::quota::{self, ProviderQuota, TokenBudget};
use crate::ready::ReadySet;
use crate::retry::{backoff, classify, FailureClass, Jitter, MAX_RETRY_AFTER};
use crate::settle::{ErrorCode, PacerFailure, Settled, Ticket};
use crate::slab::{Key, Slab};
use crate::snapshot::{ProviderSnapshot, SavedDailyBlock, Snapshot};
use crate::stats::{BlockReason, Event, RetryReason, Stats};
use crate::store::{Lookup, LookupId, LookupResult, PendingLookup, Store, StoreWrite};
use crate::time::{Duration, Instant};

/// One item to translate, borrowed from the caller.
#[derive(Copy, Clone, Debug)]
pub struct Item<'a> {
    /// The text.
    pub text: &'a str,
    /// Its compatibility fields.
    pub compat: Compat<'a>,
    /// Higher is dispatched first.
    pub priority: f64,
    /// Its input tokens by the user's `estimateTokens`; `None`: the built-in estimate.
    pub tokens: Option<f64>,
}

/// Rejects an item field, naming it and the value it got.
pub fn invalid_input<C>(field: &str, rule: &str, got: &OptionValue) -> PacerFailure<C> {
    PacerFailure::new(
        ErrorCode::InvalidInput,
        format!("{field} must be {rule} (got {got})"),
    )
}

/// A provider item: one distinct text of one compatibility group, shared by every
/// identical `translate` call while it is queued or running.
///
/// Kept small on purpose (it is most of the memory a queued item costs): the group
/// lives on the job's batch, and the character count is recomputed on the rare paths
/// that need it again. Priority and arrival stay on the job: a call takes items by them,
/// whichever batch collected them (see `first_call`).
#[derive(Debug)]
struct Job {
    key: ShortKey,
    text: Box<str>,
    waiters: Waiters,
    batch: Key,
    /// Its place in line: the highest priority of its waiters, then its arrival.
    priority: Priority,
    seq: u64,
    /// Its estimated input tokens (0 without a token budget).
    tokens: f32,
}

/// Tickets waiting on a job; one is the common case and needs no allocation.
#[derive(Debug, Default)]
struct Waiters {
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

    fn is_empty(&self) -> bool {
        self.first == 0
    }

    fn take(&mut self) -> Vec<Ticket> {
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
const COUNTED_TICKET: Ticket = 1 << 52;

fn job_ticket(job: Key) -> Ticket {
    job.to_bits() + 1
}

/// A compatibility group: its shared fields, a keyer primed with them, and the
/// batch still open to new items.
#[derive(Debug)]
struct Group {
    info: Rc<CompatInfo>,
    encoded: Box<[u8]>,
    /// Its entry in `group_by_fields`.
    fields_word: u64,
    /// For in-memory keys.
    keyer: Keyer,
    provider: u32,
    open: Option<Key>,
    jobs: u64,
}

/// Slowing a provider down after a 429 (rule 6).
#[derive(Debug)]
struct Adaptive {
    bucket: TokenBucket,
    /// The rate that met the 429: growth slows down near it.
    ceiling: f64,
    /// Back at the full rate, with the burst still to earn back: the bucket has the
    /// pacer's rate and capacity, started from the tokens it held. It is lifted once
    /// full, when it can no longer hold the provider back more than the pacer's bucket.
    recovering: bool,
}

impl Adaptive {
    /// Back at `rate`, with the burst up to `capacity` still to earn back from `tokens`,
    /// earning from `from` on: a paused provider earns nothing until its pause ends.
    fn recovering(rate: f64, capacity: f64, tokens: f64, ceiling: f64, from: Instant) -> Adaptive {
        Adaptive {
            bucket: TokenBucket::with_tokens(rate, capacity, tokens, from),
            ceiling,
            recovering: true,
        }
    }
}

#[derive(Debug)]
struct Provider {
    id: Rc<str>,
    ready: ReadySet<ReadyKey>,
    paused_until: Instant,
    adaptive: Option<Adaptive>,
    /// Counts 429 episodes. A call remembers the count at its start; a 429 for a call
    /// that started before the current episode began belongs to that episode and does
    /// not slow the provider down again (a burst of 429s is one episode).
    episode: u32,
    /// A spent daily quota: until `until`, every item for the provider rejects without
    /// a call.
    daily_block: Option<DailyBlock>,
    /// Its cost model and the limits it reported.
    quota: ProviderQuota,
}

/// What items for a provider whose daily quota is spent reject with, and until when.
#[derive(Debug)]
struct DailyBlock {
    until: Instant,
    /// Whether the provider said when its quota resets.
    reset_known: bool,
    message: String,
}

/// How long a spent daily quota blocks its provider when the provider did not say when
/// it resets: long enough not to storm it, short enough to notice the reset soon.
const UNKNOWN_DAILY_RESET: Duration = Duration::from_micros(60 * 60 * 1_000_000);

/// Order of due batches: highest priority first, then first come, first served.
type ReadyKey = (Reverse<Priority>, u64, Key);

/// An item's place in line when a group's due items are dealt again (`first_call`):
/// priority, arrival, its job, and the start of its batch's collection window.
type InLine = (Reverse<Priority>, u64, Key, Instant);

#[derive(Debug)]
struct Running {
    batch: Key,
    provider: u32,
    /// The provider's 429 episode when the call started.
    episode: u32,
    /// The call's timeout (`timeoutMs` when it started) and when it runs out.
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    /// How to read the reply.
    reading: Reading,
    /// Its estimated cost before and after the provider's scaling (0 without estimates).
    raw_cost: f64,
    cost: f64,
}

/// How a call's reply is read back onto its items.
#[derive(Debug)]
enum Reading {
    /// Pairs of markers with this tag.
    Markers(String),
    /// Split on this separator; `strip_fence`: a code fence around the reply was added
    /// by the model (not the texts').
    Separator {
        separator: String,
        strip_fence: bool,
    },
}

/// A call's text, its layout and instructions for the provider, and how its reply will
/// be read.
fn lay_out(format: SegmentFormat, texts: &[String]) -> (String, Layout, String, Reading) {
    let count = texts.len();
    let single = count <= 1;
    match format {
        SegmentFormat::Markers => {
            let tag = markers::choose_tag(texts);
            if single {
                let text = texts.first().cloned().unwrap_or_default();
                return (text, Layout::Single, String::new(), Reading::Markers(tag));
            }
            let mut pairs = Vec::with_capacity(count);
            for id in 1..=count {
                pairs.push(markers::pair(&tag, id));
            }
            let text = markers::lay_out(texts, &pairs);
            let instructions = markers::instructions(&tag, count);
            (
                text,
                Layout::Markers(pairs),
                instructions,
                Reading::Markers(tag),
            )
        }
        SegmentFormat::Separator => {
            let separator = codec::choose_separator(texts);
            let (text, instructions) = if single {
                (texts.first().cloned().unwrap_or_default(), String::new())
            } else {
                let instructions = codec::instructions(&separator, count);
                (codec::join(texts, &separator), instructions)
            };
            let reading = Reading::Separator {
                separator: separator.clone(),
                strip_fence: codec::fence_is_added(texts),
            };
            (text, Layout::Separator(separator), instructions, reading)
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Due(Key),
    Lookup(Key),
    Backoff(Key),
    Deadline(CallId),
    PauseEnd,
}

/// Growth of an adaptive rate per success: quick back to 3/4 of the rate that met the
/// 429, then slow, so the provider converges just under its quota.
const ADAPTIVE_FAST_GROWTH: f64 = 1.05;
const ADAPTIVE_SLOW_GROWTH: f64 = 1.005;
const ADAPTIVE_SLOW_ZONE: f64 = 0.75;
/// The lowest adaptive rate, in calls per second.
const ADAPTIVE_FLOOR: f64 = 1.0 / 60.0;

/// The sans-IO pacer. `C` is the driver's error type, returned as `cause`.
#[derive(Debug)]
pub struct Engine<C> {
    options: Options,
    limits: Limits,
    now: Instant,
    bucket: TokenBucket,
    jitter: Jitter,
    /// In-memory item keys, under a secret derived from the seed.
    keyer: Keyer,
    jobs: Slab<Job>,
    /// Jobs by the first word of their key; the job's full key confirms a match.
    job_by_key: KeyIndex,
    job_by_ticket: KeyIndex,
    batches: Slab<Batch>,
    groups: Slab<Group>,
    /// Groups by a keyed hash of their encoded fields; the group's own fields confirm a
    /// match (an id map rather than one keyed by the bytes: its code is in the binary
    /// already).
    group_by_fields: KeyIndex,
    providers: Vec<Provider>,
    running: IdTable<Running>,
    timers: BinaryHeap<Reverse<(Instant, Timer)>>,
    cache: Lru,
    next_counted_ticket: Ticket,
    next_call: CallId,
    next_seq: u64,
    calls: VecDeque<Call>,
    cancels: VecDeque<CallId>,
    settled: VecDeque<Settled<C>>,
    events: VecDeque<Event>,
    stats: Stats,
    scratch: Vec<u8>,
    /// The persistent store's bookkeeping, when one is configured.
    store: Option<Store>,
    /// The token budget (`tokensPerMinute`), when one is set.
    budget: Option<TokenBudget>,
    /// Whether a provider has reported a token window: item token estimates are needed
    /// then, budget or not.
    token_windows: bool,
    disposed: bool,
}

fn limits_of(options: &Options) -> Limits {
    let max_tokens = if options.tokens_per_minute > 0.0 {
        quota::max_batch_input(options.tokens_per_minute)
    } else {
        f64::INFINITY
    };
    Limits {
        max_items: usize::try_from(options.max_items_per_batch).unwrap_or(usize::MAX),
        max_chars: options.max_characters_per_batch,
        delay: Duration::from_millis(options.batch_delay_ms),
        max_tokens,
    }
}

impl<C: Clone> Engine<C> {
    /// A pacer with these options at time `now`; `seed` drives backoff jitter.
    pub fn new(options: Options, now: Instant, seed: u64) -> Self {
        Engine {
            limits: limits_of(&options),
            bucket: TokenBucket::full(options.rate, options.capacity, now),
            budget: TokenBudget::new(options.tokens_per_minute, now),
            cache: Lru::new(usize::try_from(options.cache_entries).unwrap_or(usize::MAX)),
            options,
            now,
            jitter: Jitter::new(seed),
            keyer: Keyer::new(seed.rotate_left(32) ^ 0x6B65_7965_725F_7365),
            jobs: Slab::default(),
            job_by_key: KeyIndex::default(),
            job_by_ticket: KeyIndex::default(),
            batches: Slab::default(),
            groups: Slab::default(),
            group_by_fields: KeyIndex::default(),
            providers: Vec::new(),
            running: IdTable::default(),
            timers: BinaryHeap::new(),
            next_counted_ticket: COUNTED_TICKET,
            next_call: 1,
            next_seq: 0,
            calls: VecDeque::new(),
            cancels: VecDeque::new(),
            settled: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            scratch: Vec::new(),
            store: None,
            token_windows: false,
            disposed: false,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Counters and gauges.
    pub fn stats(&self) -> Stats {
        let mut stats = self.stats.clone();
        stats.in_flight = self.running.len() as u64;
        stats
    }

    /// Whether items need token estimates (a token budget, or a provider that reports
    /// its token window): the driver then passes the user's `estimateTokens`, if any.
    pub fn wants_token_estimates(&self) -> bool {
        self.budget.is_some() || self.token_windows
    }

    /// An item's estimated input tokens, when they are needed.
    fn input_tokens(&self, item: &Item<'_>) -> f32 {
        if !self.wants_token_estimates() {
            return 0.0;
        }
        let tokens = item
            .tokens
            .filter(|t| t.is_finite() && *t >= 0.0)
            .unwrap_or_else(|| quota::input_tokens(item.text));
        tokens as f32
    }

    /// Whether `handle_dispose` was called.
    pub fn is_disposed(&self) -> bool {
        self.disposed
    }

    // ----- inputs -----

    /// Accepts an item. Its result comes out of `poll_settled` under the returned ticket
    /// (at once for blank text, cache hits and a disposed pacer).
    pub fn handle_translate(
        &mut self,
        now: Instant,
        item: &Item<'_>,
    ) -> Result<Ticket, PacerFailure<C>> {
        self.validate_unless_disposed(item)?;
        self.advance(now);
        if self.disposed {
            let ticket = self.counted_ticket();
            self.settled.push_back(Settled {
                ticket,
                result: Err(disposed_error()),
            });
            return Ok(ticket);
        }
        self.stats.items += 1;
        self.stats.pending += 1;
        if is_blank(item.text) {
            let ticket = self.counted_ticket();
            self.resolve(ticket, item.text.to_owned());
            return Ok(ticket);
        }
        let (group, key) = self.group_for(&item.compat, item.text);
        if let Some(hit) = self.cache.get(key) {
            let hit = hit.to_owned();
            let ticket = self.counted_ticket();
            self.stats.cache_hits += 1;
            self.resolve(ticket, hit);
            self.release_group_if_idle(group);
            return Ok(ticket);
        }
        let provider = self.groups.get(group).map_or(0, |g| g.provider);
        if let Some(error) = self.daily_blocked(provider) {
            let ticket = self.counted_ticket();
            self.stats.failed += 1;
            self.stats.pending -= 1;
            self.settled.push_back(Settled {
                ticket,
                result: Err(error),
            });
            self.release_group_if_idle(group);
            return Ok(ticket);
        }
        let priority = Priority::new(item.priority);
        let twin = self
            .job_by_key
            .get(key.0[0])
            .filter(|j| self.jobs.get(*j).is_some_and(|job| job.key == key));
        if let Some(job) = twin {
            let ticket = self.counted_ticket();
            self.stats.dedup_hits += 1;
            self.job_by_ticket.insert(ticket, job);
            if let Some(j) = self.jobs.get_mut(job) {
                j.waiters.push(ticket);
                j.priority = j.priority.max(priority);
                let batch = j.batch;
                self.raise_priority(batch, priority);
            }
            self.after_input();
            return Ok(ticket);
        }
        if self.options.max_queued > 0 && self.job_by_key.len() as u64 >= self.options.max_queued {
            // Not accepted after all: it never counted as an item.
            self.stats.items -= 1;
            self.stats.pending -= 1;
            self.release_group_if_idle(group);
            return Err(PacerFailure::new(
                ErrorCode::QueueFull,
                format!(
                    "the queue is full: maxQueued is {} provider items",
                    self.options.max_queued
                ),
            ));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let ticket = job_ticket(self.jobs.next_key());
        let tokens = self.input_tokens(item);
        let job = self.jobs.insert(Job {
            key,
            text: item.text.into(),
            waiters: Waiters::one(ticket),
            batch: group,
            priority,
            seq,
            tokens,
        });
        // On the (2^-64) chance that another job shares the first word, this one simply
        // goes without dedup.
        self.job_by_key.insert_if_vacant(key.0[0], job);
        if let Some(g) = self.groups.get_mut(group) {
            g.jobs += 1;
        }
        let member = Member {
            job,
            chars: utf16_len(item.text),
            tokens,
            priority,
            seq,
        };
        let deadline = self.call_timeout().map(|t| self.now + t);
        match &mut self.store {
            Some(store) => {
                // The job waits for its store lookup, outside any batch.
                if let Some(j) = self.jobs.get_mut(job) {
                    j.batch = Key::NONE;
                }
                let digest = item_key(&item.compat, item.text);
                store.begin(
                    job,
                    &digest,
                    PendingLookup {
                        member,
                        group,
                        deadline,
                    },
                );
                if let Some(deadline) = deadline {
                    self.timers.push(Reverse((deadline, Timer::Lookup(job))));
                }
            }
            None => {
                self.stats.queued += 1;
                self.place(member, group, now);
            }
        }
        self.after_input();
        Ok(ticket)
    }

    /// Reports the end of call `id`. Unknown ids (a call that timed out, a second
    /// answer, a call from before `dispose`) are ignored.
    pub fn handle_response(
        &mut self,
        now: Instant,
        id: CallId,
        outcome: Result<Reply, Failure<C>>,
    ) {
        self.handle_response_reported(now, id, outcome, Report::default());
    }

    /// `handle_response` with what the provider reported beside its answer (usage,
    /// limits).
    pub fn handle_response_reported(
        &mut self,
        now: Instant,
        id: CallId,
        outcome: Result<Reply, Failure<C>>,
        report: Report,
    ) {
        self.advance(now);
        if let Some(run) = self.running.remove(id) {
            self.take_report(&run, &report, outcome.as_ref().err());
            match outcome {
                Ok(reply) => self.on_reply(run, reply),
                Err(failure) => self.on_failure(run, failure),
            }
        }
        self.after_input();
    }

    /// Lets time pass: due batches, ended backoffs and pauses, call timeouts.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
        self.after_input();
    }

    /// After `dispose`, every call rejects `disposed`, a malformed item too.
    fn validate_unless_disposed(&self, item: &Item<'_>) -> Result<(), PacerFailure<C>> {
        if self.disposed {
            Ok(())
        } else {
            validate(item)
        }
    }

    /// Accepts an item whose signal was already aborted: it is never queued and rejects
    /// with `aborted` at once (it still counts in `items` and `aborted`).
    pub fn handle_translate_aborted(
        &mut self,
        now: Instant,
        item: &Item<'_>,
    ) -> Result<Ticket, PacerFailure<C>> {
        self.validate_unless_disposed(item)?;
        self.advance(now);
        let ticket = self.counted_ticket();
        let result = if self.disposed {
            Err(disposed_error())
        } else {
            self.stats.items += 1;
            self.stats.aborted += 1;
            Err(aborted_error())
        };
        self.settled.push_back(Settled { ticket, result });
        Ok(ticket)
    }

    /// Withdraws the item of `ticket` (its signal was aborted): it rejects with `aborted`
    /// now, and leaves its batch unless its call is already running.
    pub fn handle_abort(&mut self, now: Instant, ticket: Ticket) {
        self.advance(now);
        let job_key = if ticket & COUNTED_TICKET == 0 {
            let bits = ticket.checked_sub(1).unwrap_or(u64::MAX);
            self.jobs.key_from_bits(bits).filter(|k| {
                self.jobs
                    .get(*k)
                    .is_some_and(|j| j.waiters.contains(ticket))
            })
        } else {
            self.job_by_ticket.remove(ticket)
        };
        let Some(job_key) = job_key else {
            return;
        };
        self.stats.aborted += 1;
        self.stats.pending -= 1;
        self.settled.push_back(Settled {
            ticket,
            result: Err(PacerFailure::new(
                ErrorCode::Aborted,
                "the item was aborted",
            )),
        });
        let Some(job) = self.jobs.get_mut(job_key) else {
            return;
        };
        job.waiters.remove(ticket);
        if !job.waiters.is_empty() {
            return;
        }
        let batch_key = job.batch;
        let running = self
            .batches
            .get(batch_key)
            .is_some_and(|b| matches!(b.state, State::Running(_)));
        if !running {
            self.withdraw(job_key);
        }
        self.after_input();
    }

    /// Validates the whole patch, then applies it to queued work at once.
    pub fn set_options<N: AsRef<str>>(
        &mut self,
        now: Instant,
        patch: &[(N, OptionValue)],
    ) -> Result<(), PacerFailure<C>> {
        let next = self
            .options
            .patched(patch)
            .map_err(|e| PacerFailure::new(ErrorCode::InvalidOptions, e.message))?;
        self.advance(now);
        self.bucket.set_rate(self.now, next.rate);
        self.bucket.set_capacity(self.now, next.capacity);
        for provider in &mut self.providers {
            if let Some(adaptive) = &mut provider.adaptive {
                if !next.adaptive_rate {
                    provider.adaptive = None;
                } else if adaptive.recovering || adaptive.bucket.rate() >= next.rate {
                    // At the new rate already: its burst is still earned back, not given.
                    *adaptive = Adaptive::recovering(
                        next.rate,
                        next.capacity,
                        adaptive.bucket.tokens(self.now),
                        adaptive.ceiling,
                        self.now.max(provider.paused_until),
                    );
                } else {
                    adaptive.ceiling = adaptive.ceiling.min(next.rate);
                }
            }
        }
        self.cache
            .set_capacity(usize::try_from(next.cache_entries).unwrap_or(usize::MAX));
        let limits = limits_of(&next);
        let regroup = limits.max_items != self.limits.max_items
            || limits.max_chars != self.limits.max_chars
            || limits.delay != self.limits.delay
            || limits.max_tokens != self.limits.max_tokens;
        let per_minute = next.tokens_per_minute;
        self.options = next;
        self.limits = limits;
        match &mut self.budget {
            Some(budget) if per_minute > 0.0 => budget.set_per_minute(self.now, per_minute),
            _ => {
                let had_estimates = self.wants_token_estimates();
                self.budget = TokenBudget::new(per_minute, self.now);
                if self.budget.is_some() && !had_estimates {
                    self.estimate_queued_tokens();
                }
            }
        }
        if regroup {
            self.regroup_open_batches();
        }
        self.after_input();
        Ok(())
    }

    /// Rejects every unsettled item with `disposed`, cancels running calls, and makes
    /// later items reject with `disposed`.
    pub fn handle_dispose(&mut self) {
        if self.disposed {
            return;
        }
        self.disposed = true;
        for id in self.running.ids() {
            self.cancels.push_back(id);
        }
        self.running.clear();
        for job in self.jobs.drain() {
            let mut waiters = job.waiters;
            for ticket in waiters.take() {
                self.stats.disposed += 1;
                self.stats.pending -= 1;
                self.settled.push_back(Settled {
                    ticket,
                    result: Err(disposed_error()),
                });
            }
        }
        // Fresh slabs rather than drained ones: nothing is created after dispose, so no
        // old key can meet a new entry (and no per-type drain code is needed).
        self.batches = Slab::default();
        self.groups = Slab::default();
        self.group_by_fields.clear();
        self.job_by_key.clear();
        self.job_by_ticket.clear();
        self.providers.iter_mut().for_each(|p| p.ready.clear());
        // Replaced rather than cleared, as the slabs above: `clear` is code of its own per
        // element type, dropping the old one is not.
        self.timers = BinaryHeap::new();
        self.calls = VecDeque::new();
        if let Some(store) = &mut self.store {
            store.clear();
        }
        self.stats.queued = 0;
    }

    /// Puts a persistent store behind the LRU: new items are looked up before they are
    /// queued (`poll_lookup`), and every success is written (`poll_store_write`).
    pub fn enable_store(&mut self) {
        self.store.get_or_insert_with(Store::default);
    }

    /// Reports what a lookup found. A failure is a miss, reported as an event.
    pub fn handle_lookup(&mut self, now: Instant, id: LookupId, result: LookupResult) {
        self.advance(now);
        // Full bits: a lookup's answer may arrive long after its job ended.
        if let Some(job) = self.jobs.key_from_full_bits(id) {
            self.end_lookup(job, result);
        }
        self.after_input();
    }

    /// Reports a failed `store.set`; it changes nothing but the events.
    pub fn handle_store_failure(&mut self, message: String) {
        self.events.push_back(Event::CacheError {
            operation: "set",
            message,
        });
    }

    /// The state a restarted pacer needs (see [`Engine::restore`]), at wall time `wall_ms`.
    pub fn snapshot(&self, wall_ms: f64) -> Snapshot {
        // Pushes rather than a filtered `collect` (as for the texts of a batch): the
        // collect of an iterator of unknown length is much more code in the .wasm.
        let mut providers = Vec::new();
        for p in &self.providers {
            // A recovering provider is saved too, at the full rate (see `restore`).
            let adaptive = p.adaptive.as_ref();
            let daily_block = p
                .daily_block
                .as_ref()
                .filter(|b| b.until > self.now)
                .map(|b| SavedDailyBlock {
                    blocked_for: b.until.since(self.now),
                    reset_known: b.reset_known,
                    message: b.message.clone(),
                });
            if p.paused_until > self.now || adaptive.is_some() || daily_block.is_some() {
                providers.push(ProviderSnapshot {
                    provider_id: p.id.to_string(),
                    paused_for: p.paused_until.since(self.now),
                    adaptive_rate: adaptive.map(|a| a.bucket.rate()),
                    adaptive_ceiling: adaptive.map_or(0.0, |a| a.ceiling),
                    daily_block,
                });
            }
        }
        Snapshot {
            wall_time_ms: wall_ms,
            tokens: self.bucket.tokens(self.now),
            providers,
        }
    }

    /// Resumes from a snapshot taken `elapsed` ago: tokens earned meanwhile are added (up
    /// to `capacity`), what is left of each pause still holds, adaptive rates return.
    pub fn restore(&mut self, snapshot: &Snapshot, elapsed: Duration) {
        let (rate, capacity) = (self.options.rate, self.options.capacity);
        let earned = elapsed.as_secs() * rate;
        self.bucket = TokenBucket::with_tokens(rate, capacity, snapshot.tokens + earned, self.now);
        for saved in &snapshot.providers {
            let index = self.provider_for(&saved.provider_id);
            let now = self.now;
            let Some(provider) = self.providers.get_mut(index as usize) else {
                continue;
            };
            if let Some(block) = saved
                .daily_block
                .as_ref()
                .filter(|b| b.blocked_for > elapsed)
            {
                provider.daily_block = Some(DailyBlock {
                    until: now
                        + Duration::from_micros(
                            block.blocked_for.as_micros() - elapsed.as_micros(),
                        ),
                    reset_known: block.reset_known,
                    message: block.message.clone(),
                });
            }
            if saved.paused_for > elapsed {
                let until =
                    now + Duration::from_micros(saved.paused_for.as_micros() - elapsed.as_micros());
                provider.paused_until = until;
                provider.episode = provider.episode.wrapping_add(1);
                self.timers.push(Reverse((until, Timer::PauseEnd)));
            }
            let Some(adaptive_rate) = saved.adaptive_rate else {
                continue;
            };
            let ceiling = saved.adaptive_ceiling;
            provider.adaptive = Some(if adaptive_rate < rate {
                let tokens = (elapsed.as_secs() * adaptive_rate).min(1.0);
                Adaptive {
                    bucket: TokenBucket::with_tokens(adaptive_rate, 1.0, tokens, now),
                    ceiling,
                    recovering: false,
                }
            } else {
                // Back at the full rate: the burst it earned before the restart is not
                // known, so it counts from an empty bucket, earning nothing while paused.
                let earning = elapsed
                    .as_micros()
                    .saturating_sub(saved.paused_for.as_micros());
                let tokens = Duration::from_micros(earning).as_secs() * rate;
                Adaptive::recovering(
                    rate,
                    capacity,
                    tokens,
                    ceiling,
                    now.max(provider.paused_until),
                )
            });
        }
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

    /// The next provider call to start.
    pub fn poll_call(&mut self) -> Option<Call> {
        self.calls.pop_front()
    }

    /// The next call whose signal must be aborted (timed out, or the pacer was disposed).
    pub fn poll_cancel(&mut self) -> Option<CallId> {
        self.cancels.pop_front()
    }

    /// The next item that ended.
    pub fn poll_settled(&mut self) -> Option<Settled<C>> {
        self.settled.pop_front()
    }

    /// The next notable event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call `handle_timeout` next; `None` when only a response or a new item
    /// can move anything.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut next = self.timers.peek().map(|Reverse((at, _))| *at);
        if self.disposed || self.at_call_limit() {
            return next;
        }
        for provider in &self.providers {
            if provider.ready.is_empty() || provider.paused_until > self.now {
                continue;
            }
            let mut at = self.bucket.ready_at(self.now);
            if let Some(adaptive) = &provider.adaptive {
                at = at.max(adaptive.bucket.ready_at(self.now));
            }
            if let Some(quota_at) = provider
                .ready
                .first()
                .and_then(|first| self.quota_ready_at(provider, first.2))
            {
                at = at.max(quota_at);
            }
            if at > self.now {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next
    }

    // ----- internals -----

    fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        while let Some(&Reverse((at, timer))) = self.timers.peek() {
            if at > self.now {
                break;
            }
            self.timers.pop();
            match timer {
                Timer::Due(key) => {
                    let due = self.batches.get(key).is_some_and(|b| {
                        b.state == State::Collecting && b.due_at(&self.limits) <= self.now
                    });
                    if due {
                        self.make_ready(key);
                    }
                }
                Timer::Backoff(key) => {
                    let over = self.batches.get(key).is_some_and(
                        |b| matches!(b.state, State::Backoff(until) if until <= self.now),
                    );
                    if over {
                        self.make_ready(key);
                    }
                }
                Timer::Deadline(id) => {
                    let expired = self
                        .running
                        .get(id)
                        .is_some_and(|r| r.deadline.is_some_and(|d| d <= self.now));
                    if let Some(run) = expired.then(|| self.running.remove(id)).flatten() {
                        self.cancels.push_back(id);
                        if let Some(p) = self.providers.get(run.provider as usize) {
                            self.events.push_back(Event::Timeout {
                                provider_id: p.id.clone(),
                            });
                        }
                        // The call's own timeout: `setOptions` may have changed the option since.
                        let timeout_ms = run.timeout.map_or(0.0, Duration::as_millis);
                        let failure = Failure {
                            kind: FailureKind::Timeout,
                            status: None,
                            retry_after: None,
                            message: format!(
                                "provider call timed out after {} ms",
                                js_number(timeout_ms)
                            ),
                            cause: None,
                            limits: Default::default(),
                            quota: None,
                        };
                        self.on_failure(run, failure);
                    }
                }
                Timer::Lookup(job) => {
                    let expired = self
                        .store
                        .as_ref()
                        .and_then(|s| s.pending(job))
                        .is_some_and(|p| p.deadline.is_some_and(|d| d <= self.now));
                    if expired {
                        let message = "the store did not answer within timeoutMs".to_owned();
                        self.end_lookup(job, LookupResult::Failed(message));
                    }
                }
                Timer::PauseEnd => {}
            }
        }
    }

    fn counted_ticket(&mut self) -> Ticket {
        self.next_counted_ticket += 1;
        self.next_counted_ticket
    }

    fn call_timeout(&self) -> Option<Duration> {
        (self.options.timeout_ms > 0.0).then(|| Duration::from_millis(self.options.timeout_ms))
    }

    /// A lookup ended: a hit settles the job, anything else queues it.
    fn end_lookup(&mut self, job_key: Key, result: LookupResult) {
        let Some(pending) = self.store.as_mut().and_then(|s| s.finish_lookup(job_key)) else {
            return;
        };
        match result {
            LookupResult::Hit(translation) => {
                self.stats.cache_hits += 1;
                if let Some(mut job) = self.jobs.remove(job_key) {
                    self.forget_job_key(job_key, job.key);
                    self.cache.put(job.key, &translation);
                    if let Some(store) = &mut self.store {
                        store.forget(job_key);
                    }
                    self.after_job_removed(pending.group);
                    for ticket in job.waiters.take() {
                        self.job_by_ticket.remove(ticket);
                        self.resolve(ticket, translation.clone());
                    }
                }
            }
            LookupResult::Miss | LookupResult::Failed(_) => {
                if let LookupResult::Failed(message) = result {
                    self.events.push_back(Event::CacheError {
                        operation: "get",
                        message,
                    });
                }
                self.stats.queued += 1;
                // A twin may have raised the job's priority during the lookup.
                let mut member = pending.member;
                if let Some(j) = self.jobs.get(job_key) {
                    member.priority = j.priority;
                }
                self.place(member, pending.group, self.now);
            }
        }
    }

    fn at_call_limit(&self) -> bool {
        self.options.max_in_flight > 0 && self.running.len() as u64 >= self.options.max_in_flight
    }

    /// The group of these fields (created on first use) and the item key of `text` in it.
    fn group_for(&mut self, compat: &Compat<'_>, text: &str) -> (Key, ShortKey) {
        self.scratch.clear();
        compat.encode(&mut self.scratch);
        let fields_word = self.keyer.fields_word(&self.scratch);
        if let Some(key) = self.group_by_fields.get(fields_word) {
            if let Some(group) = self.groups.get(key) {
                if *group.encoded == *self.scratch {
                    return (key, group.keyer.key(text));
                }
            }
        }
        let provider = self.provider_for(compat.provider_id);
        let encoded: Box<[u8]> = self.scratch.as_slice().into();
        let keyer = self.keyer.primed(compat);
        let item_key = keyer.key(text);
        let key = self.groups.insert(Group {
            info: Rc::new(CompatInfo {
                provider_id: compat.provider_id.to_owned(),
                source_lang: compat.source_lang.to_owned(),
                target_lang: compat.target_lang.to_owned(),
                context: compat.context.to_owned(),
                llm: compat.llm,
            }),
            keyer,
            encoded,
            fields_word,
            provider,
            open: None,
            jobs: 0,
        });
        // On the (2^-64) chance that another live group shares the word, this one simply
        // goes unindexed: its items then start groups of their own.
        self.group_by_fields.insert_if_vacant(fields_word, key);
        (key, item_key)
    }

    fn release_group_if_idle(&mut self, group: Key) {
        let idle = self.groups.get(group).is_some_and(|g| g.jobs == 0);
        if idle {
            if let Some(g) = self.groups.remove(group) {
                self.group_by_fields
                    .remove_if_leads_to(g.fields_word, group);
            }
        }
    }

    /// The index of provider `id`, added on first use. A scan rather than a map: there are
    /// a handful of providers, every dispatch already walks them all, and this runs only
    /// when a compatibility group is created.
    fn provider_for(&mut self, id: &str) -> u32 {
        if let Some(index) = self.providers.iter().position(|p| &*p.id == id) {
            return index as u32;
        }
        let index = self.providers.len() as u32;
        self.providers.push(Provider {
            id: id.into(),
            ready: ReadySet::default(),
            paused_until: Instant::ZERO,
            adaptive: None,
            episode: 0,
            daily_block: None,
            quota: ProviderQuota::default(),
        });
        index
    }

    /// Puts a new job into its group's open batch, or starts a new batch (rule 2).
    fn place(&mut self, member: Member, group_key: Key, first_at: Instant) {
        let Some(group) = self.groups.get(group_key) else {
            return;
        };
        let (llm, provider, open) = (group.info.llm, group.provider, group.open);
        if travels_alone(llm, member.chars, member.tokens, &self.limits) {
            // Rule 2: an item longer than the limit makes the open batch due at once too,
            // so the earlier items are not left behind it for their whole window.
            if let Some(open_key) = open.filter(|_| llm) {
                let collecting = self
                    .batches
                    .get(open_key)
                    .is_some_and(|b| b.state == State::Collecting);
                if collecting {
                    self.make_ready(open_key);
                }
            }
            let batch = self.new_batch(&member, group_key, provider, first_at);
            self.make_ready(batch);
            return;
        }
        if let Some(open_key) = open {
            let fits = self
                .batches
                .get(open_key)
                .is_some_and(|b| b.accepts(member.chars, member.tokens, &self.limits));
            if fits {
                self.join(open_key, &member);
                return;
            }
            // The item would break a limit: the open batch is due now, the item starts the next.
            let collecting = self
                .batches
                .get(open_key)
                .is_some_and(|b| b.state == State::Collecting);
            if collecting {
                self.make_ready(open_key);
            }
        }
        let batch = self.new_batch(&member, group_key, provider, first_at);
        if let Some(g) = self.groups.get_mut(group_key) {
            g.open = Some(batch);
        }
        let due_at = self
            .batches
            .get(batch)
            .map(|b| (b.is_full(&self.limits), b.due_at(&self.limits)));
        match due_at {
            Some((true, _)) => self.make_ready(batch),
            Some((false, at)) if at <= self.now => self.make_ready(batch),
            Some((false, at)) => self.timers.push(Reverse((at, Timer::Due(batch)))),
            None => {}
        }
    }

    fn new_batch(&mut self, member: &Member, group: Key, provider: u32, first_at: Instant) -> Key {
        let batch = self
            .batches
            .insert(Batch::new(member, group, provider, first_at));
        if let Some(job) = self.jobs.get_mut(member.job) {
            job.batch = batch;
        }
        batch
    }

    fn join(&mut self, batch_key: Key, member: &Member) {
        if let Some(job) = self.jobs.get_mut(member.job) {
            job.batch = batch_key;
        }
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        let before = ready_key(batch_key, batch);
        batch.push(member);
        let after = ready_key(batch_key, batch);
        let (state, full, provider) = (batch.state, batch.is_full(&self.limits), batch.provider);
        match state {
            State::Collecting if full => self.make_ready(batch_key),
            State::Ready if before != after => {
                if let Some(p) = self.providers.get_mut(provider as usize) {
                    p.ready.remove(&before);
                    p.ready.insert(after);
                }
            }
            _ => {}
        }
    }

    fn raise_priority(&mut self, batch_key: Key, priority: Priority) {
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        if priority <= batch.priority {
            return;
        }
        let before = ready_key(batch_key, batch);
        batch.priority = priority;
        let after = ready_key(batch_key, batch);
        if batch.state == State::Ready {
            if let Some(p) = self.providers.get_mut(batch.provider as usize) {
                p.ready.remove(&before);
                p.ready.insert(after);
            }
        }
    }

    fn make_ready(&mut self, batch_key: Key) {
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        batch.state = State::Ready;
        let key = ready_key(batch_key, batch);
        if let Some(p) = self.providers.get_mut(batch.provider as usize) {
            p.ready.insert(key);
        }
    }

    /// Every input ends here: start what may start, then drop timers that no longer
    /// matter from the top of the heap so `poll_timeout` does not wake anyone for nothing.
    fn after_input(&mut self) {
        self.pump();
        while let Some(&Reverse((_, timer))) = self.timers.peek() {
            let live = match timer {
                Timer::Due(key) => self
                    .batches
                    .get(key)
                    .is_some_and(|b| b.state == State::Collecting),
                Timer::Backoff(key) => self
                    .batches
                    .get(key)
                    .is_some_and(|b| matches!(b.state, State::Backoff(_))),
                Timer::Deadline(id) => self.running.contains(id),
                Timer::Lookup(job) => self
                    .store
                    .as_ref()
                    .is_some_and(|s| s.pending(job).is_some()),
                Timer::PauseEnd => self.providers.iter().any(|p| p.paused_until > self.now),
            };
            if live {
                break;
            }
            self.timers.pop();
        }
    }

    /// Starts as many calls as tokens, pauses and `maxInFlight` allow, best batch first.
    fn pump(&mut self) {
        while !self.disposed && !self.at_call_limit() && self.bucket.has_token(self.now) {
            let now = self.now;
            let best = self
                .providers
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    p.paused_until <= now
                        && p.adaptive.as_ref().is_none_or(|a| a.bucket.has_token(now))
                })
                .filter_map(|(i, p)| p.ready.first().map(|k| (*k, i)))
                .filter(|(k, i)| {
                    self.quota_ready_at(&self.providers[*i], k.2)
                        .is_none_or(|at| at <= now)
                })
                .min();
            let Some((ready, index)) = best else {
                self.announce_holds();
                break;
            };
            // Items that reached a batch while the daily block held (after a store
            // lookup) reject without a call, like every other item for the provider.
            if let Some(error) = self.daily_blocked(index as u32) {
                self.fail_queued(ready.2, error);
                continue;
            }
            let capacity = self.options.capacity;
            let provider = &mut self.providers[index];
            provider.ready.remove(&ready);
            if let Some(adaptive) = &mut provider.adaptive {
                if adaptive.recovering && adaptive.bucket.tokens(now) >= capacity {
                    provider.adaptive = None;
                } else {
                    adaptive.bucket.try_take(now);
                }
            }
            self.bucket.try_take(now);
            self.start(ready.2);
        }
    }

    /// The raw estimate and the provider's cost of sending `batch` (0 when no estimates
    /// are needed).
    fn batch_cost(&self, provider: &Provider, batch: &Batch) -> (f64, f64) {
        if !self.wants_token_estimates() {
            return (0.0, 0.0);
        }
        let context = self
            .groups
            .get(batch.compat)
            .map_or(0.0, |g| quota::input_tokens(&g.info.context));
        let raw = quota::raw_cost(batch.tokens, context, batch.jobs.len() > 1);
        (raw, provider.quota.cost(raw))
    }

    /// When the token budget and the provider's reported limits let `batch` start, if
    /// not now.
    fn quota_ready_at(&self, provider: &Provider, batch: Key) -> Option<Instant> {
        if !self.wants_token_estimates() && provider.quota.held(self.now, 0.0).is_none() {
            return None;
        }
        let batch = self.batches.get(batch)?;
        let (_, cost) = self.batch_cost(provider, batch);
        let held = provider.quota.held(self.now, cost).map(|(at, _)| at);
        let budget = self
            .budget
            .as_ref()
            .map(|b| b.ready_at(self.now, cost))
            .filter(|at| *at > self.now);
        match (held, budget) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// A `limited` event for each provider whose reported limits hold its due work, once
    /// per hold.
    fn announce_holds(&mut self) {
        let now = self.now;
        for index in 0..self.providers.len() {
            let provider = &self.providers[index];
            let Some(first) = provider.ready.first() else {
                continue;
            };
            let Some(batch) = self.batches.get(first.2) else {
                continue;
            };
            let (_, cost) = self.batch_cost(provider, batch);
            let Some((until, why)) = provider.quota.held(now, cost) else {
                continue;
            };
            let provider = &mut self.providers[index];
            if provider.quota.announce(until) {
                self.events.push_back(Event::Limited {
                    provider_id: provider.id.clone(),
                    reason: why,
                    wait: until.since(now),
                });
            }
        }
    }

    fn start(&mut self, batch_key: Key) {
        let batch_key = self.first_call(batch_key);
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        let id = self.next_call;
        self.next_call += 1;
        batch.sealed = true;
        batch.state = State::Running(id);
        let attempt = batch.attempts;
        batch.attempts += 1;
        let (group_key, provider) = (batch.compat, batch.provider);
        let mut texts: Vec<String> = Vec::with_capacity(batch.jobs.len());
        for job in batch.jobs.iter().filter_map(|j| self.jobs.get(*j)) {
            texts.push(job.text.to_string());
        }
        let Some(group) = self.groups.get_mut(group_key) else {
            return;
        };
        if group.open == Some(batch_key) {
            group.open = None;
        }
        let compat = group.info.clone();
        let is_batch = texts.len() > 1;
        let (raw_cost, cost) = match (
            self.batches.get(batch_key),
            self.providers.get(provider as usize),
        ) {
            (Some(batch), Some(p)) => self.batch_cost(p, batch),
            _ => (0.0, 0.0),
        };
        if let Some(budget) = &mut self.budget {
            budget.spend(self.now, cost);
        }
        if let Some(p) = self.providers.get_mut(provider as usize) {
            p.quota.spend(self.now, cost);
        }
        let (text, layout, instructions, reading) = lay_out(self.options.segment_format, &texts);
        self.stats.provider_calls += 1;
        self.stats.batch_calls += u64::from(is_batch);
        self.stats.retries += u64::from(attempt > 0);
        self.stats.queued -= texts.len() as u64;
        let timeout =
            (self.options.timeout_ms > 0.0).then(|| Duration::from_millis(self.options.timeout_ms));
        let deadline = timeout.map(|t| self.now + t);
        if let Some(deadline) = deadline {
            self.timers.push(Reverse((deadline, Timer::Deadline(id))));
        }
        self.running.insert(
            id,
            Running {
                batch: batch_key,
                provider,
                episode: self
                    .providers
                    .get(provider as usize)
                    .map_or(0, |p| p.episode),
                timeout,
                deadline,
                reading,
                raw_cost,
                cost,
            },
        );
        self.calls.push_back(Call {
            id,
            ids: markers::ids(texts.len()),
            texts,
            text,
            layout,
            instructions,
            is_batch,
            compat,
            attempt,
            timeout,
        });
    }

    /// The batch to send for `chosen`, the best due batch. Batches collect items in
    /// arrival order, but a call takes the best items of its group's due batches:
    /// highest priority first, first come first served among equals. When no other due
    /// batch of the group may hold an item ahead of `chosen`'s last, `chosen` is sent as
    /// it is (the common case, at no cost). Else the call is filled item by item from a
    /// merge of the due batches in line, and the items of the batches it looked at and
    /// did not take go back into due batches in arrival order. A batch still collecting,
    /// and a batch being retried, keep their items.
    fn first_call(&mut self, chosen: Key) -> Key {
        let Some(batch) = self.batches.get(chosen).filter(|b| !b.sealed) else {
            return chosen;
        };
        let (group_key, provider) = (batch.compat, batch.provider);
        // Items that never share a call (llm: false) have nothing to deal.
        if !self.groups.get(group_key).is_some_and(|g| g.info.llm) {
            return chosen;
        }
        let Some(ready) = self.providers.get(provider as usize).map(|p| &p.ready) else {
            return chosen;
        };
        // A batch's ready key (its best priority, its first arrival) is never behind any
        // of its items, and the provider's due batches are in that order.
        let last_in_chosen = batch
            .jobs
            .iter()
            .filter_map(|j| self.jobs.get(*j))
            .map(|j| (Reverse(j.priority), j.seq))
            .max();
        let dealable = |key: &Key| {
            self.batches
                .get(*key)
                .is_some_and(|b| b.compat == group_key && !b.sealed)
        };
        let any_ahead = ready
            .iter()
            .take_while(|(p, s, _)| Some((*p, *s)) < last_in_chosen)
            .any(|(_, _, key)| dealable(key));
        if !any_ahead {
            return chosen;
        }
        // The call, item by item: the best of the items seen so far, once no due batch
        // not yet seen may hold a better one.
        let mut line: BinaryHeap<Reverse<InLine>> = BinaryHeap::new();
        self.line_up(batch, &mut line);
        let mut pool = vec![chosen];
        let mut seen = 0;
        let mut taken: Vec<(Key, Instant)> = Vec::new();
        let (mut count, mut chars, mut tokens) = (0usize, 0u64, 0f64);
        while let Some(&Reverse((priority, seq, _, _))) = line.peek() {
            let next = ready.get(seen).copied();
            if let Some((_, _, key)) = next.filter(|(p, s, _)| (*p, *s) < (priority, seq)) {
                seen += 1;
                if let Some(b) = self.batches.get(key).filter(|_| dealable(&key)) {
                    pool.push(key);
                    self.line_up(b, &mut line);
                }
                continue;
            }
            let Some(&Reverse((_, _, job, first_at))) = line.peek() else {
                break;
            };
            let (c, t) = self
                .jobs
                .get(job)
                .map_or((0, 0.0), |j| (utf16_len(&j.text), j.tokens));
            // Rule 2: the first item that does not fit ends the call (a long one alone).
            let fits = count == 0
                || (!travels_alone(true, c, t, &self.limits)
                    && !travels_alone(true, chars, tokens as f32, &self.limits)
                    && count < self.limits.max_items
                    && chars.saturating_add(c) <= self.limits.max_chars
                    && tokens + f64::from(t) <= self.limits.max_tokens);
            if !fits {
                break;
            }
            line.pop();
            taken.push((job, first_at));
            count += 1;
            chars = chars.saturating_add(c);
            tokens += f64::from(t);
        }
        if pool.len() == 1 {
            return chosen;
        }
        let open_dealt = self
            .groups
            .get(group_key)
            .is_some_and(|g| g.open.is_some_and(|open| pool.contains(&open)));
        for key in &pool {
            if let Some(batch) = self.batches.remove(*key) {
                if *key != chosen {
                    if let Some(p) = self.providers.get_mut(batch.provider as usize) {
                        p.ready.remove(&ready_key(*key, &batch));
                    }
                }
            }
        }
        let mut call: Option<Key> = None;
        for (job, first_at) in taken {
            let Some(member) = self.member(job) else {
                continue;
            };
            match call {
                None => call = Some(self.new_due_batch(&member, group_key, provider, first_at)),
                Some(c) => self.join_unsent(c, &member),
            }
        }
        let mut rest: BinaryHeap<Reverse<(u64, Key, Instant)>> = BinaryHeap::new();
        while let Some(Reverse((_, seq, job, first_at))) = line.pop() {
            rest.push(Reverse((seq, job, first_at)));
        }
        let mut current: Option<Key> = None;
        while let Some(Reverse((_, job, first_at))) = rest.pop() {
            let Some(member) = self.member(job) else {
                continue;
            };
            match current {
                Some(c) if self.may_join(c, &member) => self.join_unsent(c, &member),
                _ => {
                    if let Some(done) = current {
                        self.make_ready(done);
                    }
                    current = Some(self.new_due_batch(&member, group_key, provider, first_at));
                }
            }
        }
        if let Some(done) = current {
            self.make_ready(done);
        }
        if open_dealt {
            if let Some(group) = self.groups.get_mut(group_key) {
                group.open = current;
            }
        }
        call.unwrap_or(chosen)
    }

    /// Puts the items of `batch` in `line`, by priority then arrival.
    fn line_up(&self, batch: &Batch, line: &mut BinaryHeap<Reverse<InLine>>) {
        for key in &batch.jobs {
            if let Some(job) = self.jobs.get(*key) {
                line.push(Reverse((
                    Reverse(job.priority),
                    job.seq,
                    *key,
                    batch.first_at,
                )));
            }
        }
    }

    /// A job's place in a batch: its characters, priority and arrival.
    fn member(&self, job: Key) -> Option<Member> {
        self.jobs.get(job).map(|j| Member {
            job,
            chars: utf16_len(&j.text),
            tokens: j.tokens,
            priority: j.priority,
            seq: j.seq,
        })
    }

    /// Whether `member` may join batch `key` (rule 2).
    fn may_join(&self, key: Key, member: &Member) -> bool {
        !travels_alone(true, member.chars, member.tokens, &self.limits)
            && self
                .batches
                .get(key)
                .is_some_and(|b| b.accepts(member.chars, member.tokens, &self.limits))
    }

    /// A batch for an item that was due already.
    fn new_due_batch(
        &mut self,
        member: &Member,
        group: Key,
        provider: u32,
        first_at: Instant,
    ) -> Key {
        let key = self.new_batch(member, group, provider, first_at);
        if let Some(batch) = self.batches.get_mut(key) {
            batch.state = State::Ready;
        }
        key
    }

    /// Adds a job to a batch being composed (not in any ready set yet).
    fn join_unsent(&mut self, batch_key: Key, member: &Member) {
        if let Some(job) = self.jobs.get_mut(member.job) {
            job.batch = batch_key;
        }
        if let Some(batch) = self.batches.get_mut(batch_key) {
            batch.push(member);
        }
    }

    fn on_reply(&mut self, run: Running, reply: Reply) {
        let Some(batch) = self.batches.get(run.batch) else {
            return;
        };
        let expected = batch.jobs.len();
        let mut texts: Vec<&str> = Vec::with_capacity(expected);
        for job in batch.jobs.iter().filter_map(|j| self.jobs.get(*j)) {
            texts.push(&job.text);
        }
        let read = read_reply(&run.reading, &texts, reply);
        match read {
            Ok(translations) if translations.iter().all(Option::is_some) => {
                self.succeed(run, translations.into_iter().flatten().collect())
            }
            Ok(translations) if translations.iter().any(Option::is_some) => {
                self.accept_proven(run, translations)
            }
            Ok(_) => self.on_mismatch(run, expected, 0),
            Err(mismatch) => {
                let got = match mismatch {
                    Mismatch::Count { got, .. } => got,
                    Mismatch::EmptySegment { .. } | Mismatch::Misaligned { .. } => expected,
                };
                self.on_mismatch(run, expected, got)
            }
        }
    }

    fn succeed(&mut self, run: Running, translations: Vec<String>) {
        self.grow_adaptive_rate(run.provider);
        let Some(batch) = self.batches.remove(run.batch) else {
            return;
        };
        for (job_key, translation) in batch.jobs.into_iter().zip(translations) {
            self.resolve_job(job_key, batch.compat, translation);
        }
    }

    /// Partial acceptance: the proven segments resolve their items now; the batch goes
    /// out again with the missing ones only, as a count mismatch.
    fn accept_proven(&mut self, run: Running, translations: Vec<Option<String>>) {
        self.grow_adaptive_rate(run.provider);
        let Some(batch) = self.batches.get_mut(run.batch) else {
            return;
        };
        let expected = batch.jobs.len();
        let mut proven = Vec::new();
        let mut kept = Vec::with_capacity(expected);
        for (job_key, translation) in batch.jobs.iter().zip(translations) {
            match translation {
                Some(t) => proven.push((*job_key, t)),
                None => kept.push(*job_key),
            }
        }
        let got = proven.len();
        batch.jobs = kept;
        let group = batch.compat;
        for (job_key, translation) in proven {
            if let Some(job) = self.jobs.get(job_key) {
                let (chars, tokens) = (utf16_len(&job.text), f64::from(job.tokens));
                if let Some(batch) = self.batches.get_mut(run.batch) {
                    batch.chars = batch.chars.saturating_sub(chars);
                    batch.tokens -= tokens;
                }
            }
            self.resolve_job(job_key, group, translation);
        }
        self.on_mismatch(run, expected, got);
    }

    /// A job's translation is known: every waiter resolves, the cache and store learn it.
    fn resolve_job(&mut self, job_key: Key, group: Key, translation: String) {
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

    /// The reply did not prove every item of the batch (`got` of `expected`, the proven
    /// ones already resolved): the rest are retried, then sent one by one.
    fn on_mismatch(&mut self, run: Running, expected: usize, got: usize) {
        self.stats.count_mismatches += 1;
        let provider_id = self.provider_id(run.provider);
        let Some(batch) = self.batches.get_mut(run.batch) else {
            return;
        };
        self.events.push_back(Event::CountMismatch {
            provider_id: provider_id.clone(),
            expected,
            got,
        });
        let missing = batch.jobs.len();
        batch.mismatches = batch.mismatches.saturating_add(1);
        let tries = batch.mismatches;
        if u64::from(tries) <= self.options.max_batch_retries {
            let delay = backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter);
            self.retry_after(run.batch, delay, RetryReason::CountMismatch);
        } else if missing > 1 && self.options.fallback_to_individual {
            self.fall_back(run.batch);
        } else {
            let message = format!(
                "the provider's reply did not prove the translation of {missing} of {expected} texts, on {tries} tries"
            );
            self.fail(
                run.batch,
                PacerFailure::new(ErrorCode::CountMismatch, message),
            );
        }
    }

    fn on_failure(&mut self, run: Running, failure: Failure<C>) {
        let class = match failure.kind {
            FailureKind::Error => classify(failure.status),
            FailureKind::BadReply | FailureKind::Timeout => FailureClass::Transient,
        };
        let too_long = failure.retry_after.is_some_and(|r| r > MAX_RETRY_AFTER);
        if failure.status == Some(413) && self.split_in_halves(run.batch) {
            return;
        }
        if failure.kind == FailureKind::Error {
            let reason = match (failure.quota, failure.status) {
                (Some(Quota::Billing), _) => Some(BlockReason::Billing),
                (_, Some(401 | 403 | 404)) => Some(BlockReason::Settings),
                (Some(Quota::Daily), _) => Some(BlockReason::Daily),
                (_, Some(429)) if too_long => Some(BlockReason::Daily),
                _ => None,
            };
            if let Some(reason) = reason {
                if class == FailureClass::RateLimited {
                    self.stats.rate_limited += 1;
                }
                self.block_provider(run, failure, reason);
                return;
            }
        }
        let Some(batch) = self.batches.get_mut(run.batch) else {
            return;
        };
        match class {
            FailureClass::RateLimited => {
                self.stats.rate_limited += 1;
                batch.rate_limits = batch.rate_limits.saturating_add(1);
                let tries = batch.rate_limits;
                if too_long {
                    // A daily quota: pausing every queued item for hours would only hide it.
                    self.fail(run.batch, final_error(failure, true));
                    return;
                }
                let delay = failure.retry_after.unwrap_or_else(|| {
                    backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter)
                });
                // The provider is over its quota whether or not this call may retry.
                self.pause_provider(&run, delay, failure.retry_after);
                if u64::from(tries) > self.options.max_rate_limit_retries {
                    self.fail(run.batch, final_error(failure, false));
                } else {
                    self.retry_after(run.batch, Duration::ZERO, RetryReason::RateLimited);
                }
            }
            FailureClass::Transient => {
                batch.errors = batch.errors.saturating_add(1);
                let tries = batch.errors;
                if too_long || u64::from(tries) > self.options.max_retries {
                    self.fail(run.batch, final_error(failure, too_long));
                    return;
                }
                let delay = failure.retry_after.unwrap_or_else(|| {
                    backoff(self.base_delay(), u32::from(tries) - 1, &mut self.jitter)
                });
                self.retry_after(run.batch, delay, RetryReason::Error);
            }
            FailureClass::Final => self.fail(run.batch, final_error(failure, false)),
        }
    }

    /// Takes in what a provider reported with an answer or an error: usage corrects the
    /// budget and the provider's estimates, limits hold its later calls.
    fn take_report(&mut self, run: &Running, report: &Report, failure: Option<&Failure<C>>) {
        let now = self.now;
        let Some(provider) = self.providers.get_mut(run.provider as usize) else {
            return;
        };
        if let Some(usage) = report.usage {
            self.stats.input_tokens += usage.input_tokens as u64;
            self.stats.output_tokens += usage.output_tokens as u64;
            if let Some(budget) = &mut self.budget {
                let actual = usage.input_tokens + usage.output_tokens;
                budget.correct(now, run.cost, actual);
            }
            provider.quota.learn(run.raw_cost, &usage);
        }
        let limits = failure.map_or(&report.limits, |f| &f.limits);
        provider.quota.report(now, limits);
        if limits.tokens_remaining.is_some() && !self.token_windows {
            self.token_windows = true;
            self.estimate_queued_tokens();
        }
    }

    /// Token estimates became needed (a budget was set, or a provider reported its token
    /// window): the queued items get theirs, and the batches are rebuilt under the token
    /// limit.
    fn estimate_queued_tokens(&mut self) {
        let mut changed = false;
        for job in self.jobs.values_mut() {
            if job.tokens == 0.0 {
                job.tokens = quota::input_tokens(&job.text) as f32;
                changed = true;
            }
        }
        if changed {
            let mut sums: Vec<(Key, f64)> = Vec::new();
            for (key, batch) in self.batches.iter() {
                let sum = batch
                    .jobs
                    .iter()
                    .filter_map(|j| self.jobs.get(*j))
                    .map(|j| f64::from(j.tokens))
                    .sum();
                sums.push((key, sum));
            }
            for (key, sum) in sums {
                if let Some(batch) = self.batches.get_mut(key) {
                    batch.tokens = sum;
                }
            }
        }
    }

    /// No call to the provider can succeed until the user acts or a daily quota resets:
    /// the call's items and every item queued for the provider reject at once, in one
    /// step, instead of one failing call per batch at the pace of the bucket.
    fn block_provider(&mut self, run: Running, failure: Failure<C>, reason: BlockReason) {
        let now = self.now;
        let until = match reason {
            BlockReason::Daily => Some(failure.retry_after.filter(|r| *r > Duration::ZERO)),
            BlockReason::Settings | BlockReason::Billing => None,
        };
        let mut error = final_error(failure, false);
        error.message = match reason {
            BlockReason::Settings => settings_message(error.status, &error.message),
            BlockReason::Billing => format!(
                "the provider's account is out of credit or at its spending cap; top it up or raise the cap, then translate again ({})",
                error.message
            ),
            BlockReason::Daily => format!(
                "the provider's daily quota is spent; items for it reject until it resets ({})",
                error.message
            ),
        };
        error.retry_in = until.flatten();
        if let (Some(retry_after), Some(provider)) =
            (until, self.providers.get_mut(run.provider as usize))
        {
            provider.daily_block = Some(DailyBlock {
                until: now + retry_after.unwrap_or(UNKNOWN_DAILY_RESET),
                reset_known: retry_after.is_some(),
                message: error.message.clone(),
            });
        }
        self.events.push_back(Event::Blocked {
            provider_id: self.provider_id(run.provider),
            reason,
            status: error.status,
            message: error.message.clone(),
            until: error.retry_in,
        });
        let mut queued: Vec<Key> = Vec::new();
        for (key, batch) in self.batches.iter() {
            if batch.provider == run.provider && !matches!(batch.state, State::Running(_)) {
                queued.push(key);
            }
        }
        self.fail(run.batch, error.clone());
        for key in queued {
            self.fail_queued(key, error.clone());
        }
    }

    /// The daily block's error for items of provider `index`, while it holds.
    fn daily_blocked(&self, index: u32) -> Option<PacerFailure<C>> {
        let block = self
            .providers
            .get(index as usize)?
            .daily_block
            .as_ref()
            .filter(|b| b.until > self.now)?;
        let mut error = PacerFailure::new(ErrorCode::ProviderError, block.message.clone());
        error.status = Some(429);
        error.retry_in = block.reset_known.then(|| block.until.since(self.now));
        Some(error)
    }

    /// Rejects a batch that has not started (see `fail` for a running one).
    fn fail_queued(&mut self, batch_key: Key, error: PacerFailure<C>) {
        let Some(batch) = self.batches.get(batch_key) else {
            return;
        };
        let (state, provider, group) = (batch.state, batch.provider, batch.compat);
        self.stats.queued -= batch.jobs.len() as u64;
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

    fn base_delay(&self) -> Duration {
        Duration::from_millis(self.options.base_retry_delay_ms)
    }

    fn provider_id(&self, index: u32) -> Rc<str> {
        self.providers
            .get(index as usize)
            .map_or_else(|| Rc::from(""), |p| p.id.clone())
    }

    /// Rule 6: pause every call to the provider, and slow it down once per 429 episode.
    fn pause_provider(&mut self, run: &Running, pause: Duration, retry_after: Option<Duration>) {
        let now = self.now;
        let adaptive_on = self.options.adaptive_rate;
        let rate = self.options.rate;
        let Some(provider) = self.providers.get_mut(run.provider as usize) else {
            return;
        };
        let until = now + pause;
        if until > provider.paused_until {
            provider.paused_until = until;
            self.timers.push(Reverse((until, Timer::PauseEnd)));
        }
        self.events.push_back(Event::RateLimited {
            provider_id: provider.id.clone(),
            retry_after,
            paused_for: pause,
        });
        if let Some(adaptive) = provider.adaptive.as_mut().filter(|a| a.recovering) {
            // A burst is not earned while the provider is paused.
            let tokens = adaptive.bucket.tokens(now);
            let (rate, capacity) = (adaptive.bucket.rate(), self.options.capacity);
            *adaptive = Adaptive::recovering(
                rate,
                capacity,
                tokens,
                adaptive.ceiling,
                provider.paused_until,
            );
        }
        if run.episode != provider.episode {
            return;
        }
        provider.episode = provider.episode.wrapping_add(1);
        if adaptive_on {
            let current = provider.adaptive.as_ref().map_or(rate, |a| a.bucket.rate());
            // A floor of one call a minute: 429s that come whatever the rate (a flaky
            // gateway) must not halve it towards zero; Retry-After pauses cover the rest.
            let slower = (current / 2.0).max(ADAPTIVE_FLOOR.min(rate));
            provider.adaptive = Some(Adaptive {
                bucket: TokenBucket::empty(slower, 1.0, now),
                ceiling: current,
                recovering: false,
            });
            self.events.push_back(Event::AdaptiveRate {
                provider_id: provider.id.clone(),
                rate: Some(slower),
            });
        }
    }

    fn grow_adaptive_rate(&mut self, provider_index: u32) {
        let (now, rate) = (self.now, self.options.rate);
        let Some(provider) = self.providers.get_mut(provider_index as usize) else {
            return;
        };
        let Some(adaptive) = provider.adaptive.as_mut().filter(|a| !a.recovering) else {
            return;
        };
        let current = adaptive.bucket.rate();
        let growth = if current < adaptive.ceiling * ADAPTIVE_SLOW_ZONE {
            ADAPTIVE_FAST_GROWTH
        } else {
            ADAPTIVE_SLOW_GROWTH
        };
        let next = current * growth;
        if next >= rate {
            // The full rate again, but not the full burst at once: the pacer's bucket
            // refills during a pause, and `capacity` calls started at one instant would
            // all meet a quota that counts per minute (a 429 for all but the first).
            let tokens = adaptive.bucket.tokens(now);
            *adaptive =
                Adaptive::recovering(rate, self.options.capacity, tokens, adaptive.ceiling, now);
            self.events.push_back(Event::AdaptiveRate {
                provider_id: provider.id.clone(),
                rate: None,
            });
        } else {
            adaptive.bucket.set_rate(now, next);
        }
    }

    /// Sends the batch again after `delay` (and a token: rule 5).
    fn retry_after(&mut self, batch_key: Key, delay: Duration, reason: RetryReason) {
        let now = self.now;
        let Some(batch) = self.batches.get_mut(batch_key) else {
            return;
        };
        self.stats.queued += batch.jobs.len() as u64;
        let attempt = batch.attempts;
        let provider = batch.provider;
        if delay == Duration::ZERO {
            self.make_ready(batch_key);
        } else {
            let until = now + delay;
            batch.state = State::Backoff(until);
            self.timers
                .push(Reverse((until, Timer::Backoff(batch_key))));
        }
        let provider_id = self.provider_id(provider);
        self.events.push_back(Event::Retry {
            provider_id,
            reason,
            attempt,
            delay,
        });
    }

    /// A 413 (the request is too large for the model or the quota): the batch goes out
    /// again as two halves, each taking a token; a single item cannot be split.
    fn split_in_halves(&mut self, batch_key: Key) -> bool {
        if self.batches.get(batch_key).is_none_or(|b| b.jobs.len() < 2) {
            return false;
        }
        let Some(batch) = self.batches.remove(batch_key) else {
            return false;
        };
        self.stats.queued += batch.jobs.len() as u64;
        let half = batch.jobs.len().div_ceil(2);
        for part in batch.jobs.chunks(half) {
            let mut members = part.iter().filter_map(|j| self.member(*j));
            let Some(first) = members.next() else {
                continue;
            };
            let rest: Vec<Member> = members.collect();
            let key = self.new_batch(&first, batch.compat, batch.provider, batch.first_at);
            for member in &rest {
                self.join_unsent(key, member);
            }
            if let Some(b) = self.batches.get_mut(key) {
                // Still the same texts: the halves keep the batch's tries and place in line.
                b.sealed = true;
                b.attempts = batch.attempts;
                b.mismatches = batch.mismatches;
                b.errors = batch.errors;
                b.rate_limits = batch.rate_limits;
                b.priority = batch.priority;
                b.seq = batch.seq;
            }
            self.make_ready(key);
        }
        true
    }

    /// Sends each item of a batch alone.
    fn fall_back(&mut self, batch_key: Key) {
        let Some(batch) = self.batches.remove(batch_key) else {
            return;
        };
        self.stats.fallbacks += 1;
        self.stats.queued += batch.jobs.len() as u64;
        self.events.push_back(Event::Fallback {
            provider_id: self.provider_id(batch.provider),
            items: batch.jobs.len(),
        });
        for job_key in batch.jobs {
            let Some(job) = self.jobs.get(job_key) else {
                continue;
            };
            // Each item keeps its batch's place in line.
            let member = Member {
                job: job_key,
                chars: utf16_len(&job.text),
                tokens: job.tokens,
                priority: batch.priority,
                seq: batch.seq,
            };
            let single = self.new_batch(&member, batch.compat, batch.provider, batch.first_at);
            if let Some(b) = self.batches.get_mut(single) {
                b.sealed = true;
            }
            self.make_ready(single);
        }
    }

    /// Rejects every waiter of every item of a running batch.
    fn fail(&mut self, batch_key: Key, error: PacerFailure<C>) {
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
                self.stats.failed += 1;
                self.stats.pending -= 1;
                self.settled.push_back(Settled {
                    ticket,
                    result: Err(error.clone()),
                });
            }
        }
    }

    /// Removes a job nobody waits for from its (not running) batch.
    fn withdraw(&mut self, job_key: Key) {
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
        self.stats.queued -= 1;
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

    fn forget_job_key(&mut self, job: Key, key: ShortKey) {
        self.job_by_key.remove_if_leads_to(key.0[0], job);
    }

    fn after_job_removed(&mut self, group: Key) {
        if let Some(g) = self.groups.get_mut(group) {
            g.jobs -= 1;
        }
        self.release_group_if_idle(group);
    }

    /// Rebuilds every batch that has not started, under the limits now in force.
    fn regroup_open_batches(&mut self) {
        // Batches by their first item's arrival: a heap rather than a sort (less code in
        // the .wasm), filled by pushes (a collect would add the heap's bulk rebuild).
        let mut open: BinaryHeap<Reverse<(u64, Key)>> = BinaryHeap::new();
        for (key, batch) in self.batches.iter() {
            if !batch.sealed && matches!(batch.state, State::Collecting | State::Ready) {
                open.push(Reverse((batch.seq, key)));
            }
        }
        // Batches and the jobs inside them are in arrival order: keep it.
        let mut members: Vec<(Member, Key, Instant)> = Vec::new();
        while let Some(Reverse((_, batch_key))) = open.pop() {
            let Some(batch) = self.batches.remove(batch_key) else {
                continue;
            };
            if batch.state == State::Ready {
                if let Some(p) = self.providers.get_mut(batch.provider as usize) {
                    p.ready.remove(&ready_key(batch_key, &batch));
                }
            }
            if let Some(g) = self.groups.get_mut(batch.compat) {
                g.open = None;
            }
            for job_key in batch.jobs {
                if let Some(job) = self.jobs.get(job_key) {
                    let member = Member {
                        job: job_key,
                        chars: utf16_len(&job.text),
                        tokens: job.tokens,
                        priority: job.priority,
                        seq: job.seq,
                    };
                    members.push((member, batch.compat, batch.first_at));
                }
            }
        }
        for (member, group, first_at) in members {
            self.place(member, group, first_at);
        }
    }

    fn resolve(&mut self, ticket: Ticket, translation: String) {
        self.stats.succeeded += 1;
        self.stats.pending -= 1;
        self.settled.push_back(Settled {
            ticket,
            result: Ok(translation),
        });
    }
}

/// The translation of each text that the reply proves (`None` for the missing ones), or
/// why the whole reply cannot be mapped onto the texts.
fn read_reply(
    reading: &Reading,
    texts: &[&str],
    reply: Reply,
) -> Result<Vec<Option<String>>, Mismatch> {
    let expected = texts.len();
    let all = |segments: Vec<String>| segments.into_iter().map(Some).collect();
    match (reading, reply) {
        (_, Reply::Text(text)) if expected == 1 => Ok(vec![Some(text)]),
        (_, Reply::Keyed(pairs)) => Ok(proof::prove(texts, &proof::keyed_entries(pairs))),
        (Reading::Markers(tag), Reply::Text(text)) => {
            Ok(proof::prove(texts, &proof::marked_entries(&text, tag)))
        }
        (Reading::Markers(_), Reply::Texts(segments)) if segments.len() == expected => {
            Ok(proof::prove(texts, &proof::listed_entries(segments)))
        }
        (Reading::Markers(_), Reply::Texts(segments)) => Err(Mismatch::Count {
            expected,
            got: segments.len(),
        }),
        (Reading::Separator { .. }, Reply::Texts(segments)) => {
            check_aligned(texts, codec::check_segments(segments, expected)?).map(all)
        }
        (
            Reading::Separator {
                separator,
                strip_fence,
            },
            Reply::Text(text),
        ) => check_aligned(
            texts,
            codec::split(&text, separator, expected, *strip_fence)?,
        )
        .map(all),
    }
}

/// The separator layout's evidence of a shift (see the `alignment` module).
fn check_aligned(texts: &[&str], segments: Vec<String>) -> Result<Vec<String>, Mismatch> {
    if texts.len() > 1 {
        alignment::check(texts, &segments)?;
    }
    Ok(segments)
}

/// Whether `text` is empty or only white space as JS's `trim()` defines it (which differs
/// from Rust's: U+FEFF is white space there, U+0085 is not). Such text resolves to itself.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| {
        matches!(
            c,
            '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    })
}

fn ready_key(key: Key, batch: &Batch) -> ReadyKey {
    (Reverse(batch.priority), batch.seq, key)
}

fn aborted_error<C>() -> PacerFailure<C> {
    PacerFailure::new(ErrorCode::Aborted, "the item was aborted")
}

/// The failure of every item after `dispose`.
pub fn disposed_error<C>() -> PacerFailure<C> {
    PacerFailure::new(ErrorCode::Disposed, "the pacer was disposed")
}

/// What a settings error (401, 403, 404) tells the user to check.
fn settings_message(status: Option<u16>, detail: &str) -> String {
    let check = match status {
        Some(401) => "the provider rejected the API key: check the key in the provider settings",
        Some(403) => "the provider refused access: check the API key and what it is allowed to use",
        _ => "the provider does not know the model or the address: check the model name and the base URL",
    };
    format!("{check} ({detail})")
}

/// The error an item ends with when its call failed for good.
fn final_error<C>(failure: Failure<C>, retry_after_too_long: bool) -> PacerFailure<C> {
    let code = if failure.kind == FailureKind::Timeout {
        ErrorCode::Timeout
    } else {
        ErrorCode::ProviderError
    };
    let mut message = match failure.status {
        Some(status) => format!("provider failed with status {status}"),
        None => String::from("provider failed"),
    };
    if retry_after_too_long {
        message.push_str(" and asked to wait more than 5 minutes (a daily quota?)");
    }
    if !failure.message.is_empty() {
        message.push_str(": ");
        message.push_str(&failure.message);
    }
    if code == ErrorCode::Timeout {
        message = failure.message;
    }
    PacerFailure {
        code,
        message,
        status: failure.status,
        cause: failure.cause,
        retry_in: None,
    }
}

pub(crate) fn validate<C>(item: &Item<'_>) -> Result<(), PacerFailure<C>> {
    let names = [
        ("providerId", item.compat.provider_id),
        ("sourceLang", item.compat.source_lang),
        ("targetLang", item.compat.target_lang),
    ];
    for (field, value) in names {
        if value.is_empty() {
            return Err(invalid_input(
                field,
                "a non-empty string",
                &OptionValue::Text(value.to_owned()),
            ));
        }
    }
    if !item.priority.is_finite() {
        return Err(invalid_input(
            "priority",
            "a finite number",
            &OptionValue::Number(item.priority),
        ));
    }
    Ok(())
}
