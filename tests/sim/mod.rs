//! A virtual-time harness around the engine: a scripted provider, `drive()` that jumps
//! from one wake-up to the next, and records of every call and settlement.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

pub use batch_pacer::drive::StreamValue;
use batch_pacer::drive::VirtualTime;

use batch_pacer::options::SegmentFormat;
use batch_pacer::Layout;
use batch_pacer::{
    Call, CallId, Compat, Engine, Event, Failure, Instant, Item, OptionValue, Options, Output,
    PacerFailure, Reply, Ticket,
};
pub use batch_pacer::{Duration, ErrorCode};

/// What the scripted provider does with one call.
pub enum Answer {
    /// Answer after `after` with this outcome.
    After(Duration, Result<Reply, Failure<String>>),
    /// Answer after `after` with this outcome and what the provider reported.
    Reported(
        Duration,
        Result<Reply, Failure<String>>,
        batch_pacer::Report,
    ),
    /// Never answer.
    Hang,
    /// Answer with a stream: each value after its delay from the one before; a failure
    /// breaks the stream there.
    Stream(Vec<(Duration, Streamed)>),
}

/// A value of a scripted stream.
pub enum Streamed {
    Value(StreamValue),
    Fail(Failure<String>),
}

/// A stream of `text` cut into pieces of `size` characters, one every `every`, ended.
pub fn chunked(text: &str, size: usize, every: Duration) -> Vec<(Duration, Streamed)> {
    let chars: Vec<char> = text.chars().collect();
    let mut values: Vec<(Duration, Streamed)> = chars
        .chunks(size.max(1))
        .map(|piece| {
            (
                every,
                Streamed::Value(StreamValue::Text(piece.iter().collect())),
            )
        })
        .collect();
    values.push((Duration::ZERO, Streamed::Value(StreamValue::End)));
    values
}

/// A record of a started call.
#[derive(Clone, Debug)]
pub struct CallRecord {
    pub id: CallId,
    pub at: Instant,
    pub texts: Vec<String>,
    /// The item each text is for (after `Engine::want_call_items`).
    pub items: Vec<Ticket>,
    pub separator: String,
    pub is_batch: bool,
    pub attempt: u32,
    pub provider_id: String,
    pub max_output_tokens: u32,
    pub fallback_from: Option<String>,
    /// For a call a pool's member serves, the pool.
    pub pool_id: Option<String>,
    /// For a call of `pacer.run`, its ticket.
    pub run: Option<Ticket>,
}

type Script = Box<dyn FnMut(&Call, Instant) -> Answer>;
/// Answers a store lookup after a delay, or never (`None`).
pub type StoreScript =
    Box<dyn FnMut(&batch_pacer::Lookup) -> Option<(Duration, batch_pacer::LookupResult)>>;

/// An engine on virtual time with a scripted provider (and store), and the records of
/// everything it did (reached through `Deref`: `sim.calls`, `sim.results` ...).
pub struct Sim {
    pub engine: Engine<String>,
    pub now: Instant,
    provider: Script,
    /// The persistent store's behaviour, when one is configured with `with_store`.
    store: Option<StoreScript>,
    time: VirtualTime<String>,
    log: Log,
}

/// How far [`Sim::step`] goes: only the outputs there are now, or on in time.
enum Drive {
    Now,
    Until(Instant),
}

/// What a [`Sim`] saw.
#[derive(Default)]
pub struct Log {
    pub calls: Vec<CallRecord>,
    pub results: HashMap<Ticket, Result<String, PacerFailure<String>>>,
    pub settle_counts: HashMap<Ticket, u32>,
    pub events: Vec<(Instant, Event)>,
    pub cancelled: Vec<CallId>,
    pub lookups: Vec<batch_pacer::Lookup>,
    pub writes: Vec<batch_pacer::StoreWrite>,
    /// Calls running at once, sampled at each start.
    pub max_running: usize,
    /// Previews given, in order, with the instant.
    pub previews: Vec<(Instant, batch_pacer::Preview)>,
    /// When each item settled.
    pub settled_at: HashMap<Ticket, Instant>,
    /// Wake-ups: the instants the harness moved to for an answer or the engine's timeout.
    pub wakes: Vec<Instant>,
}

impl Deref for Sim {
    type Target = Log;
    fn deref(&self) -> &Log {
        &self.log
    }
}

impl DerefMut for Sim {
    fn deref_mut(&mut self) -> &mut Log {
        &mut self.log
    }
}

/// The reference translation of a text: the provider's reply for it.
pub fn echo(text: &str) -> String {
    format!("«{}»", text.trim())
}

/// A provider that answers every call correctly after `latency`.
pub fn echo_provider(latency_ms: f64) -> impl FnMut(&Call, Instant) -> Answer {
    move |call, _| Answer::After(Duration::from_millis(latency_ms), Ok(echo_reply(call)))
}

/// The correct reply to a call: each echo between its markers, or the echoes joined by
/// the separator.
pub fn echo_reply(call: &Call) -> Reply {
    let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
    if call.layout == Layout::Array {
        return Reply::Texts(echoes);
    }
    Reply::Text(layout_reply(call, &echoes))
}

/// `segments` laid out as the call's layout asks for a reply.
pub fn layout_reply(call: &Call, segments: &[String]) -> String {
    let markers = call.markers();
    if markers.is_empty() {
        return segments.join(call.separator());
    }
    let mut reply = String::new();
    for (segment, (open, close)) in segments.iter().zip(markers) {
        reply.push_str(&format!("{open}{segment}{close}\n"));
    }
    reply
}

/// A failure with an HTTP status and optional Retry-After in milliseconds.
pub fn http_error(status: u16, retry_after_ms: Option<f64>) -> Failure<String> {
    Failure::error(
        Some(status),
        retry_after_ms.map(Duration::from_millis),
        &format!("HTTP {status}"),
    )
    .with_cause(format!("cause {status}"))
}

pub fn item(text: &str) -> Item<'_> {
    item_for("p", text)
}

/// An item that is never batched (`llm: false`).
pub fn single(text: &str) -> Item<'_> {
    let mut it = item(text);
    it.compat.llm = false;
    it
}

pub fn item_for<'a>(provider: &'a str, text: &'a str) -> Item<'a> {
    Item {
        text,
        compat: Compat {
            provider_id: provider,
            source_lang: "en",
            target_lang: "de",
            context: "",
            llm: true,
            scope: "",
        },
        priority: 0.0,
        tokens: None,
    }
}

pub fn ms(value: f64) -> Instant {
    Instant::from_millis(value)
}

/// Options for the rule tests of the older separator layout (most of the suite): the
/// markers layout has its own tests (`segment_identity.rs`), with [`marker_options`].
pub fn options(patch: &[(&str, f64)]) -> Options {
    Options {
        segment_format: SegmentFormat::Separator,
        ..marker_options(patch)
    }
}

/// Options in the default markers layout.
pub fn marker_options(patch: &[(&str, f64)]) -> Options {
    let patch: Vec<(&str, OptionValue)> = patch
        .iter()
        .map(|(k, v)| (*k, OptionValue::Number(*v)))
        .collect();
    Options::default()
        .patched(&patch)
        .expect("valid test options")
}

impl Sim {
    pub fn new(options: Options, provider: impl FnMut(&Call, Instant) -> Answer + 'static) -> Sim {
        Sim {
            engine: Engine::new(options, Instant::ZERO, 42),
            now: Instant::ZERO,
            provider: Box::new(provider),
            store: None,
            time: VirtualTime::new(Instant::ZERO),
            log: Log::default(),
        }
    }

    /// Puts a scripted persistent store behind the engine's LRU.
    pub fn with_store(mut self, script: StoreScript) -> Sim {
        self.engine.enable_store();
        self.store = Some(script);
        self
    }

    pub fn translate(&mut self, item: &Item<'_>) -> Ticket {
        let ticket = self
            .engine
            .handle_translate(self.now, item)
            .expect("valid item");
        self.drain();
        ticket
    }

    /// A `pacer.run` for `provider` with `priority`: its calls reach the script with
    /// `call.run` set.
    pub fn run(&mut self, provider: &str, priority: f64) -> Ticket {
        let ticket = self
            .engine
            .handle_run(self.now, provider, priority)
            .expect("valid run");
        self.drain();
        ticket
    }

    /// Aborts the run of `ticket`.
    pub fn abort_run(&mut self, ticket: Ticket) {
        self.engine.handle_run_abort(self.now, ticket);
        self.drain();
    }

    pub fn abort(&mut self, ticket: Ticket) {
        self.engine.handle_abort(self.now, ticket);
        self.drain();
    }

    /// Collects every output of the engine and schedules the provider's answers.
    pub fn drain(&mut self) {
        self.step(Drive::Now);
    }

    /// Runs until nothing more can happen, or until `limit`.
    pub fn drive_until(&mut self, limit: Instant) {
        self.step(Drive::Until(limit));
    }

    fn step(&mut self, how: Drive) {
        self.time.now = self.now;
        let Sim {
            engine,
            time,
            provider,
            store,
            log,
            ..
        } = self;
        match how {
            Drive::Now => collect(engine, time, provider, store, log),
            Drive::Until(limit) => {
                let start = time.now;
                time.run_until(engine, limit, |time, engine| {
                    if time.now != start && log.wakes.last() != Some(&time.now) {
                        log.wakes.push(time.now);
                    }
                    collect(engine, time, provider, store, log)
                });
            }
        }
        self.now = self.time.now;
    }

    /// Runs until idle.
    pub fn drive(&mut self) {
        self.drive_until(Instant::from_millis(f64::INFINITY));
    }

    pub fn result(&self, ticket: Ticket) -> &Result<String, PacerFailure<String>> {
        self.results.get(&ticket).expect("settled")
    }

    pub fn ok(&self, ticket: Ticket) -> &str {
        match self.result(ticket) {
            Ok(s) => s,
            Err(e) => panic!("ticket {ticket} failed: {e}"),
        }
    }

    pub fn code(&self, ticket: Ticket) -> ErrorCode {
        match self.result(ticket) {
            Ok(s) => panic!("ticket {ticket} succeeded with {s:?}"),
            Err(e) => e.code,
        }
    }

    /// Start times of calls, in ms.
    pub fn starts_ms(&self) -> Vec<f64> {
        self.calls.iter().map(|c| c.at.as_millis()).collect()
    }

    pub fn assert_settled_once(&self, tickets: &[Ticket]) {
        for t in tickets {
            assert_eq!(
                self.settle_counts.get(t),
                Some(&1),
                "ticket {t} settled wrongly"
            );
        }
    }
}

/// Takes every output of the engine: records it, and schedules the provider's and the
/// store's answers on `time`.
fn collect(
    engine: &mut Engine<String>,
    time: &mut VirtualTime<String>,
    provider: &mut Script,
    store: &mut Option<StoreScript>,
    log: &mut Log,
) {
    // After every input: the rules that span the engine's parts (`Engine::check`).
    engine.check();
    let now = time.now;
    while let Some(output) = engine.poll_output() {
        match output {
            Output::Cancel(id) => log.cancelled.push(id),
            Output::Call(call) => start_call(engine, time, provider, log, call),
            Output::Settled(settled) => {
                *log.settle_counts.entry(settled.ticket).or_default() += 1;
                log.settled_at.entry(settled.ticket).or_insert(now);
                log.results.insert(settled.ticket, settled.result);
            }
            Output::Lookup(lookup) => {
                if let Some((after, result)) = store.as_mut().and_then(|script| script(&lookup)) {
                    time.answer_lookup(lookup.id, after, result);
                }
                log.lookups.push(lookup);
            }
            Output::StoreWrite(write) => log.writes.push(write),
            Output::Event(event) => log.events.push((now, event)),
            Output::Preview(preview) => {
                assert!(
                    !log.settle_counts.contains_key(&preview.ticket),
                    "a preview for a settled item"
                );
                log.previews.push((now, preview));
            }
        }
    }
}

/// Records a call the engine started and schedules the provider's answer on `time`.
fn start_call(
    engine: &Engine<String>,
    time: &mut VirtualTime<String>,
    provider: &mut Script,
    log: &mut Log,
    call: Call,
) {
    let now = time.now;
    log.max_running = log.max_running.max(engine.stats().in_flight as usize);
    log.calls.push(CallRecord {
        id: call.id,
        at: now,
        texts: call.texts.clone(),
        items: call.items.clone(),
        separator: call.separator().to_owned(),
        is_batch: call.is_batch,
        attempt: call.attempt,
        provider_id: call.compat.provider_id.clone(),
        max_output_tokens: call.max_output_tokens,
        fallback_from: call.compat.fallback_from.clone(),
        pool_id: call.compat.pool_id.clone(),
        run: call.run,
    });
    if call.run.is_none() {
        check_layout(&call);
    }
    match provider(&call, now) {
        Answer::After(after, outcome) => time.answer(call.id, after, outcome),
        Answer::Reported(after, outcome, report) => {
            time.answer_reported(call.id, after, outcome, report)
        }
        Answer::Hang => {}
        Answer::Stream(values) => {
            let mut at = Duration::ZERO;
            for (after, value) in values {
                at = at + after;
                match value {
                    Streamed::Value(value) => time.stream(call.id, at, value),
                    Streamed::Fail(failure) => time.answer(call.id, at, Err(failure)),
                }
            }
        }
    }
}

/// What every call must be: its markers or separator in none of its texts, a single
/// text sent as it is.
fn check_layout(call: &Call) {
    let separator = call.separator().trim();
    assert!(
        call.texts.iter().all(|t| {
            (separator.is_empty() || !t.contains(separator))
                && call
                    .markers()
                    .iter()
                    .all(|(open, close)| !t.contains(open) && !t.contains(close))
        }),
        "a marker or the separator {separator:?} occurs in a text"
    );
    match &call.layout {
        Layout::Separator(s) => assert!(!s.trim().is_empty()),
        Layout::Markers(pairs) => assert_eq!(pairs.len(), call.texts.len()),
        Layout::Single => assert!(!call.is_batch),
        Layout::Array => {
            assert!(call.is_batch && call.markers().is_empty() && call.instructions.is_empty());
            assert_eq!(call.text, call.texts.join("\n"));
        }
    }
    if !call.is_batch {
        assert_eq!(call.text, call.texts[0]);
    }
}
