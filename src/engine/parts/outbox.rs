//! What the engine has for its driver: calls to start, calls to cancel, items that ended,
//! events, and the statistics. Settling an item goes through [`Outbox::settle`], which
//! keeps `items == succeeded + failed + aborted + disposed + pending` in one place: the
//! other counters are counted through [`Counter`], which names none of the item counters.

use std::collections::VecDeque;
use std::rc::Rc;

use super::streamed::Preview;
use crate::call::{Call, CallId};
use crate::settle::{ErrorCode, PacerFailure, Settled, Ticket};
use crate::stats::{Event, ProviderStats, Stats};

/// The counters the engine's flows count (calls, retries, hits, tokens): every counter
/// of `Stats` but the item counters, which only settling moves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(in crate::engine) enum Counter {
    BatchCalls,
    CacheHits,
    CountMismatches,
    DedupHits,
    DuplicateSettlements,
    EarlyResolved,
    FallbackItems,
    Fallbacks,
    InputTokens,
    OutputTokens,
    ProviderCalls,
    RateLimited,
    Retries,
    StreamedCalls,
}

/// The engine's outputs and counters.
#[derive(Debug)]
pub(in crate::engine) struct Outbox<C> {
    calls: VecDeque<Call>,
    cancels: VecDeque<CallId>,
    settled: VecDeque<Settled<C>>,
    events: VecDeque<Event>,
    stats: Stats,
    /// Each provider's calls, items and 429s, by provider index.
    by_provider: crate::hash::IdMap<(Rc<str>, ProviderStats)>,
    /// Previews of streamed translations; `None` until the driver asks for them.
    previews: Option<VecDeque<Preview>>,
    /// Whether each call names the item of each of its texts (`Call::items`).
    call_items: bool,
}

impl<C> Default for Outbox<C> {
    fn default() -> Self {
        Outbox {
            calls: VecDeque::new(),
            cancels: VecDeque::new(),
            settled: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            by_provider: crate::hash::IdMap::default(),
            previews: None,
            call_items: false,
        }
    }
}

impl<C> Outbox<C> {
    /// A call to start.
    pub(in crate::engine) fn call(&mut self, call: Call) {
        self.calls.push_back(call);
    }

    /// The next call to start.
    pub(in crate::engine) fn next_call(&mut self) -> Option<Call> {
        self.calls.pop_front()
    }

    /// Drops the calls not yet started (dispose).
    pub(in crate::engine) fn drop_calls(&mut self) {
        // Replaced rather than cleared: `clear` is code of its own per element type.
        self.calls = VecDeque::new();
    }

    /// A call whose signal is to abort.
    pub(in crate::engine) fn cancel(&mut self, id: CallId) {
        self.cancels.push_back(id);
    }

    /// Call `id` is no longer wanted: taken back if the driver has not started it yet,
    /// else cancelled.
    pub(in crate::engine) fn withdraw_call(&mut self, id: CallId) {
        match self.calls.iter().position(|call| call.id == id) {
            Some(queued) => drop(self.calls.remove(queued)),
            None => self.cancel(id),
        }
    }

    /// The next call whose signal is to abort.
    pub(in crate::engine) fn next_cancel(&mut self) -> Option<CallId> {
        self.cancels.pop_front()
    }

    /// A notable event.
    pub(in crate::engine) fn event(&mut self, event: Event) {
        self.events.push_back(event);
    }

    /// The next notable event.
    pub(in crate::engine) fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The statistics so far.
    pub(in crate::engine) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The counts of provider `id`, whose index is `index` (`stats().byProvider`). An
    /// index given to another provider since (the first was forgotten) starts again.
    pub(in crate::engine) fn provider_stats(
        &mut self,
        index: u32,
        id: Rc<str>,
    ) -> &mut ProviderStats {
        let slot = self
            .by_provider
            .entry(u64::from(index))
            .or_insert_with(|| (Rc::clone(&id), ProviderStats::default()));
        if slot.0 != id {
            *slot = (id, ProviderStats::default());
        }
        &mut slot.1
    }

    /// Drops the counts of forgotten providers (their indices are free for others): a
    /// pacer that meets ever new ids keeps no count, nor name, of each for good.
    pub(in crate::engine) fn forget_provider_stats(&mut self, forgotten: &[u32]) {
        for index in forgotten {
            self.by_provider.remove(&u64::from(*index));
        }
    }

    /// The counts of each provider that made calls and is remembered.
    pub(in crate::engine) fn by_provider(&self) -> impl Iterator<Item = &(Rc<str>, ProviderStats)> {
        self.by_provider.values()
    }

    /// Counts `n` more of `counter`. The item counters (`items`, `pending` and the
    /// outcomes) are not among them: only `accept`, `unaccept` and `settle` move those, so
    /// `items == succeeded + failed + aborted + disposed + pending` is kept here alone.
    pub(in crate::engine) fn count(&mut self, counter: Counter, n: u64) {
        let field = match counter {
            Counter::BatchCalls => &mut self.stats.batch_calls,
            Counter::CacheHits => &mut self.stats.cache_hits,
            Counter::CountMismatches => &mut self.stats.count_mismatches,
            Counter::DedupHits => &mut self.stats.dedup_hits,
            Counter::DuplicateSettlements => &mut self.stats.duplicate_settlements,
            Counter::EarlyResolved => &mut self.stats.early_resolved,
            Counter::FallbackItems => &mut self.stats.fallback_items,
            Counter::Fallbacks => &mut self.stats.fallbacks,
            Counter::InputTokens => &mut self.stats.input_tokens,
            Counter::OutputTokens => &mut self.stats.output_tokens,
            Counter::ProviderCalls => &mut self.stats.provider_calls,
            Counter::RateLimited => &mut self.stats.rate_limited,
            Counter::Retries => &mut self.stats.retries,
            Counter::StreamedCalls => &mut self.stats.streamed_calls,
        };
        *field += n;
    }

    /// Calls name the item of each of their texts from now on.
    pub(in crate::engine) fn want_call_items(&mut self) {
        self.call_items = true;
    }

    /// Whether calls name the item of each of their texts.
    pub(in crate::engine) fn wants_call_items(&self) -> bool {
        self.call_items
    }

    /// Previews are wanted from now on.
    pub(in crate::engine) fn want_previews(&mut self) {
        self.previews.get_or_insert_with(VecDeque::new);
    }

    /// Whether previews are wanted.
    pub(in crate::engine) fn wants_previews(&self) -> bool {
        self.previews.is_some()
    }

    /// A preview, if previews are wanted.
    pub(in crate::engine) fn preview(&mut self, preview: Preview) {
        if let Some(previews) = &mut self.previews {
            previews.push_back(preview);
        }
    }

    /// The next preview.
    pub(in crate::engine) fn next_preview(&mut self) -> Option<Preview> {
        self.previews.as_mut()?.pop_front()
    }

    /// Drops the previews not yet taken (their items settle now).
    pub(in crate::engine) fn clear_previews(&mut self) {
        if let Some(previews) = &mut self.previews {
            previews.clear();
        }
    }

    /// A `translate` call was accepted: it counts as an item until it settles.
    pub(in crate::engine) fn accept(&mut self) {
        self.stats.items += 1;
        self.stats.pending += 1;
    }

    /// An accepted item was given back (`queue_full`): it never counted.
    pub(in crate::engine) fn unaccept(&mut self) {
        self.stats.items -= 1;
        self.stats.pending -= 1;
    }

    /// An accepted item ended; the counter of its outcome goes up.
    pub(in crate::engine) fn settle(
        &mut self,
        ticket: Ticket,
        result: Result<String, PacerFailure<C>>,
    ) {
        self.stats.pending -= 1;
        let counter = match &result {
            Ok(_) => &mut self.stats.succeeded,
            Err(e) if e.code == ErrorCode::Aborted => &mut self.stats.aborted,
            Err(e) if e.code == ErrorCode::Disposed => &mut self.stats.disposed,
            Err(_) => &mut self.stats.failed,
        };
        *counter += 1;
        self.settled.push_back(Settled { ticket, result });
    }

    /// A call that was never accepted as an item (after `dispose`) ends.
    pub(in crate::engine) fn settle_unaccepted(&mut self, ticket: Ticket, error: PacerFailure<C>) {
        self.settled.push_back(Settled {
            ticket,
            result: Err(error),
        });
    }

    /// A `pacer.run` ended: not an item, so no item counter moves.
    pub(in crate::engine) fn settle_run(
        &mut self,
        ticket: Ticket,
        result: Result<String, PacerFailure<C>>,
    ) {
        self.settled.push_back(Settled { ticket, result });
    }

    /// The next item that ended.
    pub(in crate::engine) fn next_settled(&mut self) -> Option<Settled<C>> {
        self.settled.pop_front()
    }
}
