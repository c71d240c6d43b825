//! What the engine has for its driver: calls to start, calls to cancel, items that ended,
//! events, and the statistics. Settling an item goes through [`Outbox::settle`], which
//! keeps `items == succeeded + failed + aborted + disposed + pending` in one place.

use std::collections::VecDeque;

use super::streams::Preview;
use crate::call::{Call, CallId};
use crate::settle::{ErrorCode, PacerFailure, Settled, Ticket};
use crate::stats::{Event, Stats};

/// The engine's outputs and counters.
#[derive(Debug)]
pub(super) struct Outbox<C> {
    pub(super) calls: VecDeque<Call>,
    pub(super) cancels: VecDeque<CallId>,
    settled: VecDeque<Settled<C>>,
    pub(super) events: VecDeque<Event>,
    pub(super) stats: Stats,
    /// Previews of streamed translations; `None` until the driver asks for them.
    pub(super) previews: Option<VecDeque<Preview>>,
}

impl<C> Default for Outbox<C> {
    fn default() -> Self {
        Outbox {
            calls: VecDeque::new(),
            cancels: VecDeque::new(),
            settled: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            previews: None,
        }
    }
}

impl<C> Outbox<C> {
    /// A `translate` call was accepted: it counts as an item until it settles.
    pub(super) fn accept(&mut self) {
        self.stats.items += 1;
        self.stats.pending += 1;
    }

    /// An accepted item was given back (`queue_full`): it never counted.
    pub(super) fn unaccept(&mut self) {
        self.stats.items -= 1;
        self.stats.pending -= 1;
    }

    /// An accepted item ended; the counter of its outcome goes up.
    pub(super) fn settle(&mut self, ticket: Ticket, result: Result<String, PacerFailure<C>>) {
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
    pub(super) fn settle_unaccepted(&mut self, ticket: Ticket, error: PacerFailure<C>) {
        self.settled.push_back(Settled {
            ticket,
            result: Err(error),
        });
    }

    /// The next item that ended.
    pub(super) fn next_settled(&mut self) -> Option<Settled<C>> {
        self.settled.pop_front()
    }
}
