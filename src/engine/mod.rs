//! The engine: the sans-IO pacer, composed of parts that each own one concern.
//!
//! Inputs are `handle_*` calls that carry the current time. Outputs come out of one
//! stream, [`Engine::poll_output`], whose [`Output`] variants say what to do (abort a
//! call's signal, settle an item, show a preview, serve the store, tell an event, start
//! a call) in the one order the engine keeps; then [`Engine::poll_timeout`] says when to
//! call `handle_timeout`. After every `handle_*`, the driver takes outputs until none is
//! left, then sleeps until `poll_timeout` (docs/ARCHITECTURE.md, "The poll order").
//!
//! Every input that can start or end work ends in `after_input`: start what may start
//! (`dispatch`), then let each part drop its deadlines that no longer matter (`wakeups`);
//! `handle_dispose` ends everything itself and `handle_store_failure` only reports.
//!
//! Parts (src/engine/parts/): types that own their state (private fields, so the
//! compiler keeps the boundary) and the invariant each keeps; the engine hands a part
//! the others it needs as arguments (disjoint borrows of its fields), never itself:
//! - `batches::Batches`: the batch slab (and each batch's fields), the ready set per
//!   provider, the job→batch map, each group's open batch, the unsent count, the limits
//!   and the batches' wake-ups (window and backoff ends). A batch is in its provider's
//!   ready set exactly while `Ready` (every state change goes through one method,
//!   dealing included: the call's batch stays due until `Batches::start` marks it
//!   running), a job's batch is the one that lists it, a batch's sums are those of its
//!   items (changed only by `Member`s, which only `Jobs` makes), and `stats.queued` is
//!   its count. A provider with its own batch limits (`providers`) has them in place of
//!   the pacer's (`Batches::limits_for`).
//! - `pacer::Pacer`: the request bucket, the token budget, the shared budget, each
//!   provider's own bucket, budgets and cap (`providers`, `ProviderLimits`) and each
//!   provider's id and pacing state (`ProviderPacing`, shared through an `Rc<RefCell<…>>`
//!   with the other pacers of a shared budget; no borrow leaves the part). One gate,
//!   `Pacer::ready_at(provider, cost, now)`, asked by `poll_timeout`; one charge,
//!   `Pacer::try_take`, which asks that gate itself and charges everything a call costs.
//! - `jobs::Jobs`: the job slab, both key indexes, tickets and arrival order; a live job
//!   is in the indexes, an ended one in neither, and every way a job ends goes through
//!   `Jobs::end` (the engine's side of it is the one `end_job`, in `endings`).
//! - `groups::Groups`: the group slab, its field index, the keyer and the registered
//!   combinations of fields; a group lives while it has jobs and is found by its fields,
//!   and a registered combination's item keys equal those made from its fields.
//! - `calls::Calls`: the running calls, call ids, their deadlines and the strings calls
//!   repeat; a call id is given once (`Calls::insert_new` makes it with its record), and
//!   a call is running until its answer, its timeout, the abort of all its items or
//!   dispose.
//! - `outbox::Outbox`: the outputs in order and the statistics; every settlement goes
//!   through `Outbox::settle`, so the item counters add up.
//! - `runs::Runs`: the calls of `pacer.run` (no items, no batch) while they wait, back
//!   off or run; a run's state says where it is (queued, backing off until an instant,
//!   running under a call), and nothing else does.
//! - smaller parts and leaf types there: `streamed::Streamed` (a streamed reply so far),
//!   `provider_table::ProviderTable` (the `Pacer`'s provider indexes), `limits::Limits`,
//!   `priority::Priority`, `tries::Try`, `output::Output`; and from outside the engine
//!   `Store` (with its lookups' deadlines), `Lru`, `TokenBucket`, `TokenBudget`,
//!   `ReadySet`: each its own state.
//!
//! Each part with deadlines answers for them itself (`next_*`, `drop_stale`, and `wake`
//! or `expired`), as str0m's parts answer `poll_timeout` / `handle_timeout`: no part
//! judges another's state to know whether a wake-up still matters.
//!
//! `Engine` keeps the options, the time, the jitter and the parts; every `pub fn` of
//! the engine is in this file. Flows (src/engine/*.rs, each an `impl Engine` that
//! composes the parts), in the order an item meets them:
//! - `assembly`: where a new item goes (`place`), the rebuild under new limits.
//! - `lookups`: the persistent store (look up before queueing, write every success).
//! - `dispatch`: the gate asked per provider, `maxInFlight`, a 429's pause and rate.
//! - `usage`: token estimates, the usage and limits a provider reports.
//! - `dealing`: a call takes the best items of its group's due batches, by priority.
//! - `sending`: a due batch, dealt and charged, composed into a call and started.
//! - `idle_providers`: providers nothing needs are forgotten (`provider_table`).
//! - `replies`: a call's reply read back onto its items, what it teaches of batch size.
//! - `streams`: a streamed reply's values, resolved as they are proven.
//! - `retries`: failed calls retried, split or sent one by one, or failed for good.
//! - `blocks`: settings, billing and daily-quota blocks of a provider.
//! - `run_calls`: `pacer.run`, its place in line, its call through the same gate.
//! - `fallbacks`: where a provider's items go when it cannot serve them.
//! - `pools`: which member of a pool serves a call, and where its items go if none can.
//! - `endings`: how a job ends, in one place (`end_job`).
//! - `wakeups`: the parts' deadlines merged, soonest first.
//! - `check`: asserts the rules that span parts (tests and fuzzing only).

mod assembly;
mod blocks;
#[cfg(any(test, feature = "check"))]
mod check;
mod dealing;
mod dispatch;
mod endings;
mod fallbacks;
mod idle_providers;
mod lookups;
mod parts;
mod pools;
mod replies;
mod retries;
mod run_calls;
mod sending;
mod streams;
mod usage;
mod wakeups;

use parts::{
    batches, calls, groups, jobs, limits, outbox, output, pacer, priority, provider_table, runs,
    streamed, tries,
};

use batches::{Batch, Batches, State};
use calls::{Calls, Running};
use groups::Groups;
use jobs::{Jobs, Left};
use limits::limits_of;
use lookups::PendingLookup;
use outbox::{Counter, Outbox};
use pacer::Pacer;
use priority::Priority;
use runs::Runs;

use crate::budget::SharedBudget;
use crate::cache::Lru;
use crate::call::{CallId, Failure, Reply, Report};
use crate::item::{aborted_error, validate};
use crate::key::{item_key, Compat, Keyer};
use crate::options::{OptionValue, Options};
use crate::retry::Jitter;
use crate::settle::{ErrorCode, PacerFailure, Ticket};
use crate::snapshot::Snapshot;
use crate::stats::{Event, ProviderStats, Stats};
use crate::store::{LookupId, LookupResult, Store};
use crate::time::{Duration, Instant};

pub use crate::item::{disposed_error, invalid_input, is_blank, Item};
pub use crate::provider::ProviderPacing;
pub use groups::Group;
pub use jobs::{ticket_slot, Job};
pub use output::Output;
pub use run_calls::run_aborted;
pub use streamed::Preview;

/// The sans-IO pacer. `C` is the driver's error type, returned as `cause`.
#[derive(Debug)]
pub struct Engine<C> {
    options: Options,
    now: Instant,
    jitter: Jitter,
    /// The request bucket, the token budgets and each provider's pacing state.
    pacer: Pacer,
    jobs: Jobs,
    /// The batches, the providers' ready sets, each group's open batch.
    batches: Batches,
    groups: Groups,
    /// The running calls, their ids and strings.
    calls: Calls,
    cache: Lru,
    /// Calls, cancels, settled items, events and statistics for the driver.
    out: Outbox<C>,
    /// The persistent store's bookkeeping, when one is configured.
    store: Option<Store<Job, PendingLookup>>,
    /// The calls of `pacer.run` that have not ended.
    runs: Runs,
    /// What the choice of a pool's member remembers (`pools`).
    members: pools::Members,
    disposed: bool,
}

impl<C: Clone> Engine<C> {
    /// A pacer with these options at time `now`; `seed` drives backoff jitter.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn new(options: Options, now: Instant, seed: u64) -> Self {
        Engine {
            batches: Batches::new(limits_of(&options)),
            pacer: Pacer::new(&options, now, seed.rotate_left(16) ^ 0x7072_6F76_6964_6572),
            cache: Lru::new(usize::try_from(options.cache_entries).unwrap_or(usize::MAX)),
            options,
            now,
            jitter: Jitter::new(seed),
            jobs: Jobs::default(),
            // In-memory item keys, under a secret derived from the seed.
            groups: Groups::new(Keyer::new(seed.rotate_left(32) ^ 0x6B65_7965_725F_7365)),
            calls: Calls::default(),
            out: Outbox::default(),
            store: None,
            runs: Runs::default(),
            members: pools::Members::default(),
            disposed: false,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Counters and gauges.
    pub fn stats(&self) -> Stats {
        let mut stats = self.out.stats().clone();
        stats.in_flight = self.calls.len() as u64;
        stats.queued = self.batches.unsent();
        stats
    }

    /// Each provider that made calls (each member of a pool too) with its calls, items
    /// and 429s (`stats().byProvider`): those the pacer remembers, and those forgotten
    /// whose index no other provider has taken since.
    pub fn stats_by_provider(&self) -> Vec<(std::rc::Rc<str>, ProviderStats)> {
        self.out.by_provider().cloned().collect()
    }

    /// Shares `budget` with the other pacers given it. Call it before the first item:
    /// providers met before keep their own pacing state.
    pub fn share_budget(&mut self, budget: SharedBudget) {
        self.pacer.share(budget);
    }

    /// How many providers the pacer remembers: those met and not forgotten since
    /// (`idle_providers`).
    pub fn providers_remembered(&self) -> usize {
        self.pacer.providers_remembered()
    }

    /// Whether `handle_dispose` was called.
    pub fn is_disposed(&self) -> bool {
        self.disposed
    }

    // ----- inputs -----

    /// Accepts an item. Its result comes out of `poll_output` (`Output::Settled`) under the returned ticket
    /// (at once for blank text, cache hits and a disposed pacer).
    pub fn handle_translate(
        &mut self,
        now: Instant,
        item: &Item<'_>,
    ) -> Result<Ticket, PacerFailure<C>> {
        self.accept_item(now, item, None)
    }

    /// Registers a combination of compatibility fields for [`Engine::handle_submit`];
    /// returns its id (never 0). The fields are checked when an item uses them, like
    /// those of `handle_translate`.
    pub fn register_compat(&mut self, compat: &Compat<'_>) -> u32 {
        self.groups.register(compat)
    }

    /// Forgets every combination registered by [`Engine::register_compat`].
    pub fn clear_compats(&mut self) {
        self.groups.clear_registered();
    }

    /// `handle_translate` for an item of `text` whose other fields are those registered
    /// under `compat`: its fields are neither encoded nor hashed again.
    pub fn handle_submit(
        &mut self,
        now: Instant,
        compat: u32,
        text: &str,
        priority: f64,
        tokens: Option<f64>,
    ) -> Result<Ticket, PacerFailure<C>> {
        let info = self.groups.registered(compat).cloned().ok_or_else(|| {
            let got = OptionValue::Number(f64::from(compat));
            invalid_input("compat", "an id returned by registerCompat", &got)
        })?;
        let item = Item {
            text,
            compat: Compat {
                provider_id: &info.provider_id,
                source_lang: &info.source_lang,
                target_lang: &info.target_lang,
                context: &info.context,
                llm: info.llm,
                scope: &info.scope,
            },
            priority,
            tokens,
        };
        self.accept_item(now, &item, Some(compat))
    }

    /// Accepts `item`, registered under `entry` if given.
    fn accept_item(
        &mut self,
        now: Instant,
        item: &Item<'_>,
        entry: Option<u32>,
    ) -> Result<Ticket, PacerFailure<C>> {
        self.validate_unless_disposed(item)?;
        self.advance(now);
        if self.disposed {
            let ticket = self.jobs.counted_ticket();
            self.out.settle_unaccepted(ticket, disposed_error());
            return Ok(ticket);
        }
        self.out.accept();
        if is_blank(item.text) {
            let ticket = self.jobs.counted_ticket();
            self.resolve(ticket, item.text.to_owned());
            return Ok(ticket);
        }
        let (pacer, at, options) = (&mut self.pacer, self.now, &self.options);
        let (group, key) = self.groups.group_for(&item.compat, entry, item.text, |id| {
            pacer.provider_for(id, at, options)
        });
        if let Some(hit) = self.cache.get(key) {
            let hit = hit.to_owned();
            let ticket = self.jobs.counted_ticket();
            self.out.count(Counter::CacheHits, 1);
            self.resolve(ticket, hit);
            self.groups.release_if_idle(group);
            return Ok(ticket);
        }
        let provider = self.groups.get(group).map_or(0, Group::provider);
        let has_fallback = self
            .groups
            .get(group)
            .is_some_and(|g| self.options.fallback_of(&g.info().provider_id).is_some());
        // With a fallback, a blocked provider's item is moved instead (`place`).
        let blocked = self.pacer.daily_blocked(provider, self.now);
        if let Some(error) = blocked.filter(|_| !has_fallback) {
            let ticket = self.jobs.counted_ticket();
            self.out.settle(ticket, Err(error));
            self.groups.release_if_idle(group);
            return Ok(ticket);
        }
        let priority = Priority::new(item.priority);
        if let Some(joined) = self.jobs.join_twin(key, priority) {
            self.out.count(Counter::DedupHits, 1);
            let ticket = self.batches.joined(joined);
            self.after_input();
            return Ok(ticket);
        }
        if self.options.max_queued > 0 && self.jobs.distinct() as u64 >= self.options.max_queued {
            // Not accepted after all: it never counted as an item.
            self.out.unaccept();
            self.groups.release_if_idle(group);
            return Err(PacerFailure::new(
                ErrorCode::QueueFull,
                format!(
                    "the queue is full: maxQueued is {} provider items",
                    self.options.max_queued
                ),
            ));
        }
        let tokens = self.input_tokens(item);
        let (ticket, member) = self.jobs.add(key, item.text, priority, tokens);
        let job = member.job();
        self.groups.job_added(group);
        let deadline = self.now + self.lookup_timeout();
        match &mut self.store {
            Some(store) => {
                // The job waits for its store lookup, outside any batch.
                let digest = item_key(&item.compat, item.text);
                store.begin(
                    job,
                    &digest,
                    PendingLookup { member, group },
                    Some(deadline),
                );
            }
            None => self.place(member, group, now),
        }
        self.after_input();
        Ok(ticket)
    }

    /// Accepts a `pacer.run` for `provider_id` with `priority`: a provider call that is
    /// not a translation, paced as that provider's calls are. Its calls come out of
    /// `Output::Call` with `run` set to the returned ticket, and it ends as
    /// `Output::Settled` under that ticket (`Ok` with an empty string on success: its value
    /// is the driver's). A provider id that is empty or a priority that is not finite is
    /// `invalid_input`; after dispose it ends `disposed`, and during a daily block with
    /// that block's error.
    pub fn handle_run(
        &mut self,
        now: Instant,
        provider_id: &str,
        priority: f64,
    ) -> Result<Ticket, PacerFailure<C>> {
        self.accept_run(now, provider_id, priority)
    }

    /// Withdraws the run of `ticket` (its signal was aborted): it ends `aborted` now; if
    /// its call runs, the call is cancelled (`Output::Cancel`) and its answer ignored.
    pub fn handle_run_abort(&mut self, now: Instant, ticket: Ticket) {
        self.advance(now);
        self.abort_run(ticket);
        self.after_input();
    }

    /// The ticket of the run whose call `id` is running (`None` for a translation call,
    /// or a call no longer running): its answer's value belongs to that run.
    pub fn run_ticket(&self, id: CallId) -> Option<Ticket> {
        self.run_ticket_of_call(id)
    }

    /// Reports the end of call `id`. Unknown ids (a call that timed out, a second
    /// answer, a call from before `dispose`) are ignored. For a run's call, any reply is
    /// its success.
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
        if let Some(run) = self.calls.remove(id) {
            // A broken stream: what it reported before breaking.
            let report = match run.stream_report() {
                Some(streamed) if report == Report::default() => streamed.clone(),
                _ => report,
            };
            self.take_report(&run, &report, outcome.as_ref().err());
            if let Err(failure) = &outcome {
                let rate_limited =
                    failure.kind == crate::call::FailureKind::Error && failure.status == Some(429);
                let id = self.pacer.provider_id(run.provider());
                let own = self.out.provider_stats(run.provider(), id);
                own.rate_limited += u64::from(rate_limited);
            }
            match outcome {
                Ok(reply) => self.on_reply(run, reply, report.truncated),
                Err(failure) => self.on_failure(run, failure),
            }
        }
        self.after_input();
    }

    /// The length cap of running call `id`'s reply, in bytes: a longer one is read as far
    /// as the cap, as truncated.
    pub fn reply_cap(&self, id: CallId) -> Option<usize> {
        self.calls.get(id).map(Running::reply_cap)
    }

    /// Lets time pass: due batches, ended backoffs and pauses, call timeouts.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
        self.after_input();
    }

    /// A piece of call `id`'s streamed reply. Unknown ids are ignored.
    pub fn handle_chunk(&mut self, now: Instant, id: CallId, piece: &str) {
        self.advance(now);
        self.on_chunk(id, piece);
        self.after_input();
    }

    /// A `{ usage, limits }` value of call `id`'s stream.
    pub fn handle_stream_report(&mut self, now: Instant, id: CallId, report: Report) {
        self.advance(now);
        self.on_stream_report(id, report);
        self.after_input();
    }

    /// Call `id`'s stream ended: what is left is read as a whole reply.
    pub fn handle_stream_end(&mut self, now: Instant, id: CallId) {
        self.advance(now);
        self.on_stream_end(id);
        self.after_input();
    }

    /// Asks calls to name the item of each of their texts (`Call::items`, for the driver's
    /// per-item data); without this call they name none.
    pub fn want_call_items(&mut self) {
        self.out.want_call_items();
    }

    /// Asks for previews (`Output::Preview`); without this call none are made.
    pub fn want_previews(&mut self) {
        self.out.want_previews();
    }

    /// Puts a persistent store behind the LRU: new items are looked up before they are
    /// queued (`Output::Lookup`), and every success is written (`Output::StoreWrite`).
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

    /// Whether items need token estimates (a token budget, or a provider that reports
    /// its token window): the driver then passes the user's `estimateTokens`, if any.
    pub fn wants_token_estimates(&self) -> bool {
        self.pacer.wants_token_estimates()
    }

    /// The state a restarted pacer needs (see [`Engine::restore`]), at wall time
    /// `wall_ms`: tokens, pauses, adaptive rates, reported limits, daily blocks, learned
    /// batch sizes and length ratios (the `Pacer` part's state).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn snapshot(&self, wall_ms: f64) -> Snapshot {
        self.pacer.snapshot(self.now, wall_ms)
    }

    /// Resumes from a snapshot taken `elapsed` ago: tokens earned meanwhile are added (up
    /// to `capacity`), what is left of each pause still holds, adaptive rates return.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn restore(&mut self, snapshot: &Snapshot, elapsed: Duration) {
        self.pacer
            .restore(snapshot, elapsed, self.now, &self.options);
    }

    /// Panics, naming the rule, if a rule that spans the engine's parts does not hold
    /// (`engine/check.rs`).
    #[cfg(any(test, feature = "check"))]
    pub fn check(&self) {
        self.check_rules();
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
        let ticket = self.jobs.counted_ticket();
        if self.disposed {
            self.out.settle_unaccepted(ticket, disposed_error());
        } else {
            self.out.accept();
            self.out.settle(ticket, Err(aborted_error()));
        }
        Ok(ticket)
    }

    /// Withdraws the item of `ticket` (its signal was aborted): it rejects with `aborted`
    /// now, and leaves its batch unless its call is already running; a running call that
    /// no item waits for any more is cancelled.
    pub fn handle_abort(&mut self, now: Instant, ticket: Ticket) {
        self.advance(now);
        let Some(Left { job: job_key, last }) = self.jobs.leave(ticket) else {
            return;
        };
        let batch_key = self.batches.batch_of(job_key);
        self.out.settle(ticket, Err(aborted_error()));
        if !last {
            return;
        }
        match self.batches.get(batch_key).map(Batch::state) {
            Some(State::Running(call)) => self.abandon_if_unneeded(call, batch_key),
            _ => self.withdraw(job_key),
        }
        self.after_input();
    }

    /// Validates the whole patch, then applies it to queued work at once.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn set_options<N: AsRef<str>>(
        &mut self,
        now: Instant,
        patch: &[(N, OptionValue)],
    ) -> Result<(), PacerFailure<C>> {
        let next = self
            .options
            .patched(patch)
            .map_err(|e| PacerFailure::invalid_option(e.option, e.message))?;
        self.advance(now);
        let estimates_needed = self.pacer.set_options(self.now, &next);
        self.cache
            .set_capacity(usize::try_from(next.cache_entries).unwrap_or(usize::MAX));
        let mut regroup = self.batches.set_limits(limits_of(&next));
        self.options = next;
        regroup |= self.sync_own_limits();
        if estimates_needed {
            self.estimate_queued_tokens();
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
        for id in self.calls.ids() {
            self.out.cancel(id);
        }
        self.calls.clear();
        for mut job in self.jobs.end_all() {
            for ticket in job.take_tickets() {
                self.out.settle(ticket, Err(disposed_error()));
            }
        }
        self.batches.clear();
        self.groups.clear();
        self.dispose_runs();
        // Replaced rather than cleared, as the slabs above: `clear` is code of its own per
        // element type, dropping the old one is not.
        self.out.drop_calls();
        if let Some(store) = &mut self.store {
            store.clear();
        }
    }

    /// The driver found no unsettled promise for a settlement: its item had settled
    /// before. The settlement is dropped; `stats().duplicate_settlements` counts it.
    pub fn note_duplicate_settlement(&mut self) {
        self.out.count(Counter::DuplicateSettlements, 1);
    }

    /// The next output, in the one order the engine keeps (see [`Output`]): cancels,
    /// settlements, previews, the store's lookups and writes, events, then calls. After
    /// every `handle_*`, the driver takes outputs until this gives `None`.
    pub fn poll_output(&mut self) -> Option<Output<C>> {
        if let Some(id) = self.out.next_cancel() {
            return Some(Output::Cancel(id));
        }
        if let Some(settled) = self.out.next_settled() {
            return Some(Output::Settled(settled));
        }
        if let Some(preview) = self.out.next_preview() {
            return Some(Output::Preview(preview));
        }
        if let Some(store) = &mut self.store {
            if let Some(lookup) = store.poll_lookup() {
                return Some(Output::Lookup(lookup));
            }
            if let Some(write) = store.poll_write() {
                return Some(Output::StoreWrite(write));
            }
        }
        if let Some(event) = self.out.next_event() {
            return Some(Output::Event(event));
        }
        self.out.next_call().map(Output::Call)
    }

    /// When to call `handle_timeout` next; `None` when only a response or a new item
    /// can move anything.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.disposed {
            return None;
        }
        let mut next = self.next_wakeup();
        if self.at_call_limit() {
            return next;
        }
        for (index, first) in self.batches.due_providers() {
            if self.provider_at_cap(index) {
                continue;
            }
            let at = self.ready_at(index, first.batch);
            if at > self.now {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next.into_iter().chain(self.next_run_start()).min()
    }

    /// Every input ends here: start what may start, then let each part drop the
    /// deadlines that no longer matter, so `poll_timeout` does not wake anyone for nothing.
    fn after_input(&mut self) {
        self.pump();
        self.drop_stale_deadlines();
        self.forget_idle_providers();
    }
}
