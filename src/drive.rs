//! Virtual time for the sans-IO engine: answers scheduled at instants, and the jump from
//! one wake-up to the next until nothing more can happen. The one drive loop of the
//! Rust tests (`tests/sim`), the benches and the fuzz targets; the package's own driver
//! (`wasm::driver`) runs on real time instead.

use std::collections::BTreeMap;

use crate::call::{CallId, Failure, Reply, Report};
use crate::engine::Engine;
use crate::store::{LookupId, LookupResult};
use crate::time::{Duration, Instant};

/// An answer waiting for its instant.
#[derive(Debug)]
enum Pending<C> {
    Response(CallId, Result<Reply, Failure<C>>, Report),
    Lookup(LookupId, LookupResult),
    Stream(CallId, StreamValue),
}

/// One event of a streamed reply.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamValue {
    /// A piece of the reply's text.
    Text(String),
    /// A `{ usage, limits }` value.
    Report(Report),
    /// The end of the stream.
    End,
}

/// A virtual clock and the answers it will deliver.
#[derive(Debug)]
pub struct VirtualTime<C> {
    /// The current virtual time.
    pub now: Instant,
    pending: BTreeMap<(Instant, u64), Pending<C>>,
    seq: u64,
}

impl<C: Clone> VirtualTime<C> {
    /// A clock at `now` with nothing scheduled.
    pub fn new(now: Instant) -> Self {
        VirtualTime {
            now,
            pending: BTreeMap::new(),
            seq: 0,
        }
    }

    /// Delivers `outcome` for call `id`, `after` from now.
    pub fn answer(&mut self, id: CallId, after: Duration, outcome: Result<Reply, Failure<C>>) {
        self.schedule(after, Pending::Response(id, outcome, Report::default()));
    }

    /// Delivers `outcome` for call `id` with what the provider reported (usage, limits),
    /// `after` from now.
    pub fn answer_reported(
        &mut self,
        id: CallId,
        after: Duration,
        outcome: Result<Reply, Failure<C>>,
        report: Report,
    ) {
        self.schedule(after, Pending::Response(id, outcome, report));
    }

    /// Delivers a value of call `id`'s streamed reply, `after` from now (values at the
    /// same instant arrive in the order given).
    pub fn stream(&mut self, id: CallId, after: Duration, value: StreamValue) {
        self.schedule(after, Pending::Stream(id, value));
    }

    /// Delivers `result` for store lookup `id`, `after` from now.
    pub fn answer_lookup(&mut self, id: LookupId, after: Duration, result: LookupResult) {
        self.schedule(after, Pending::Lookup(id, result));
    }

    fn schedule(&mut self, after: Duration, answer: Pending<C>) {
        self.seq += 1;
        self.pending.insert((self.now + after, self.seq), answer);
    }

    /// The next instant something happens: the soonest answer, or the engine's wake-up.
    pub fn next_wake(&self, engine: &Engine<C>) -> Option<Instant> {
        let answer = self.pending.keys().next().map(|(at, _)| *at);
        match (engine.poll_timeout(), answer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs `engine` until nothing more can happen, or until `limit` (then the clock
    /// stands at `limit`). `drain` is called after every input: it takes the engine's
    /// outputs, starting calls by scheduling their answers with [`VirtualTime::answer`].
    /// Returns the number of wake-ups.
    pub fn run_until(
        &mut self,
        engine: &mut Engine<C>,
        limit: Instant,
        mut drain: impl FnMut(&mut Self, &mut Engine<C>),
    ) -> u64 {
        drain(self, engine);
        let mut steps = 0u64;
        while let Some(at) = self.next_wake(engine) {
            if at > limit {
                break;
            }
            steps += 1;
            assert!(steps < 10_000_000, "the engine does not come to rest");
            assert!(at >= self.now, "time went backwards");
            self.now = at;
            while let Some(entry) = self.pending.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                match entry.remove() {
                    Pending::Response(id, outcome, report) => {
                        engine.handle_response_reported(self.now, id, outcome, report)
                    }
                    Pending::Lookup(id, result) => engine.handle_lookup(self.now, id, result),
                    Pending::Stream(id, StreamValue::Text(text)) => {
                        engine.handle_chunk(self.now, id, &text)
                    }
                    Pending::Stream(id, StreamValue::Report(report)) => {
                        engine.handle_stream_report(self.now, id, report)
                    }
                    Pending::Stream(id, StreamValue::End) => engine.handle_stream_end(self.now, id),
                }
                drain(self, engine);
            }
            engine.handle_timeout(self.now);
            drain(self, engine);
        }
        if limit != Instant::from_millis(f64::INFINITY) && self.now < limit {
            self.now = limit;
            engine.handle_timeout(self.now);
            drain(self, engine);
        }
        steps
    }

    /// Runs until nothing more can happen.
    pub fn run(
        &mut self,
        engine: &mut Engine<C>,
        drain: impl FnMut(&mut Self, &mut Engine<C>),
    ) -> u64 {
        self.run_until(engine, Instant::from_millis(f64::INFINITY), drain)
    }
}
