//! Soak: a long run of items through several pacers on virtual time, with every fault a
//! provider produces, checking that nothing is lost, doubled or misassigned, and that
//! memory returns to where it was.
//!
//! `cargo bench --bench soak` runs 1,000,000 items (`SOAK_ITEMS=2000` for a smoke run,
//! `SOAK_SEED` to change the seed, `SOAK_RANDOM_429` for the share of calls, per mille,
//! answered 429 whatever the rate: 5 by default, at most 30) through three pacers:
//! - `page`: two LLM providers, two target languages, pages of 1..200 paragraphs;
//! - `subtitles`: one LLM provider with context, few items at a time, `maxInFlight`;
//! - `doomed`: LLM and non-LLM items, disposed when half of the items have been sent.
//!
//! The seeded provider answers with every fault kind: wrong segment counts, empty
//! segments, HTTP errors with statuses (5xx, 408, 409, 4xx), 429 over each provider's
//! quota (with Retry-After) and at random (with and without Retry-After, rarely a daily
//! quota), hangs (ended by `timeoutMs`), replies of the wrong
//! type, network errors, answers after the timeout, and answers given twice. Items are
//! aborted at random (before and after they are sent, and already-aborted ones), and
//! `set_options` changes limits while everything runs. Pages wait while a pacer holds more
//! than 3,000 unsettled items (a reader does not open pages faster than they translate),
//! so the memory curve shows what the engine keeps, not an ever-growing backlog.
//!
//! Checks: every accepted ticket settles exactly once; every translation is the one of
//! the item's own text (the provider echoes texts, and every bad reply it gives is one the
//! codec must refuse); the counters agree with what the driver saw; at the end every
//! queue is empty. Reported: wall and virtual time, outcomes, per-pacer statistics, and
//! heap bytes (a counting allocator) at the start, at each 10% of the run, at the peak
//! and at the end.

// The allocation counter is a `GlobalAlloc`, which only unsafe code can implement.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant as Clock;

use batch_pacer::{
    Call, CallId, Compat, Duration, Engine, ErrorCode, Failure, Instant, Item, OptionValue,
    Options, Output, Reply, Settled, Ticket,
};

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// SplitMix64: a small seeded random source.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// `true` with probability `per_mille / 1000`.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

/// The text of item `id`: mostly ordinary paragraphs, some holding the default separator,
/// some blank, some longer than a batch.
fn text_of(id: u64) -> String {
    match id % 211 {
        0 => "   ".to_owned(),
        1 => format!("Paragraph {id}\n%%\nwith a separator line inside, and 50% off."),
        2 => format!("Paragraph {id}, a long one. ").repeat(60),
        _ => {
            let mut text = format!("Paragraph {id} of the article. ");
            let target = 40 + (id * 7919 % 260) as usize;
            while text.len() < target {
                text.push_str("Lorem ipsum dolor sit amet. ");
            }
            text
        }
    }
}

/// What the provider answers for a text, and so what the item must resolve to.
fn echo(text: &str) -> String {
    format!("«{}»", text.trim())
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn expected(id: u64) -> String {
    let text = text_of(id);
    if is_blank(&text) {
        text
    } else {
        echo(&text)
    }
}

type Outcome = Result<Reply, Failure<()>>;

enum Event {
    /// The provider answers call `id` of pacer `pacer`.
    Answer {
        pacer: usize,
        id: CallId,
        outcome: Outcome,
    },
    /// The item's signal is aborted.
    Abort { pacer: usize, ticket: Ticket },
    /// A page of items arrives for `pacer`.
    Page { pacer: usize },
}

#[derive(Default, Debug)]
struct Tally {
    ok: u64,
    aborted: u64,
    failed: u64,
    disposed: u64,
    disposed_after: u64,
    calls: u64,
    faults: BTreeMap<&'static str, u64>,
    events: BTreeMap<&'static str, u64>,
    /// Failed items by error code.
    failed_by: BTreeMap<&'static str, u64>,
    /// The lowest adaptive rate each provider was slowed down to.
    slowest: BTreeMap<String, f64>,
}

struct Pacer {
    name: &'static str,
    engine: Engine<()>,
    /// Unsettled tickets: the id of their text, and whether they came after the dispose.
    pending: HashMap<Ticket, (u64, bool)>,
    max_pending: usize,
    tally: Tally,
}

struct Soak {
    rng: Rng,
    now: Instant,
    seq: u64,
    schedule: BTreeMap<(Instant, u64), Event>,
    pacers: Vec<Pacer>,
    items: u64,
    sent: u64,
    next_id: u64,
    /// Per provider: start times of the calls it served in the last second (its quota).
    quota_window: HashMap<String, VecDeque<Instant>>,
    /// Share of calls answered 429 whatever the rate, per mille.
    random_429: u64,
}

/// Calls per second each provider serves; more are answered 429 with a Retry-After.
fn quota(provider_id: &str) -> usize {
    match provider_id {
        "alpha" | "beta" => 12,
        "subs" => 6,
        _ => 8,
    }
}

const BACKLOG: usize = 3_000;

/// A run that needs more virtual time than this has stalled (1,000,000 items need about
/// 5 hours with the defaults).
const MAX_VIRTUAL_HOURS: f64 = 1000.0;

impl Pacer {
    /// Checks an item that settled: once, with its own translation or an allowed error.
    fn on_settled(&mut self, settled: Settled<()>) {
        let Some((id, after_dispose)) = self.pending.remove(&settled.ticket) else {
            panic!(
                "{}: ticket {} settled twice or was never issued",
                self.name, settled.ticket
            );
        };
        match settled.result {
            Ok(translation) => {
                assert_eq!(
                    translation,
                    expected(id),
                    "{}: item {id} got another item's translation",
                    self.name
                );
                self.tally.ok += 1;
            }
            Err(e) => match e.code {
                ErrorCode::Aborted => self.tally.aborted += 1,
                ErrorCode::Disposed if after_dispose => self.tally.disposed_after += 1,
                ErrorCode::Disposed => self.tally.disposed += 1,
                code @ (ErrorCode::ProviderError
                | ErrorCode::Timeout
                | ErrorCode::CountMismatch) => {
                    self.tally.failed += 1;
                    *self.tally.failed_by.entry(code.as_str()).or_default() += 1;
                }
                code => panic!("{}: item {id} failed with {code:?}: {e}", self.name),
            },
        }
    }

    /// Counts an event, and the slowest adaptive rate per provider.
    fn on_event(&mut self, event: batch_pacer::Event) {
        if let batch_pacer::Event::AdaptiveRate {
            provider_id,
            rate: Some(rate),
        } = &event
        {
            let slowest = self
                .tally
                .slowest
                .entry(provider_id.to_string())
                .or_insert(f64::INFINITY);
            *slowest = slowest.min(*rate);
        }
        let name = match event {
            batch_pacer::Event::RateLimited { .. } => "rateLimited",
            batch_pacer::Event::AdaptiveRate { .. } => "adaptiveRate",
            batch_pacer::Event::Retry { .. } => "retry",
            batch_pacer::Event::CountMismatch { .. } => "countMismatch",
            batch_pacer::Event::Fallback { .. } => "fallback",
            batch_pacer::Event::Timeout { .. } => "timeout",
            batch_pacer::Event::CacheError { .. } => "cacheError",
            batch_pacer::Event::Blocked { .. } => "blocked",
            batch_pacer::Event::Limited { .. } => "limited",
            batch_pacer::Event::BatchLimit { .. } => "batchLimit",
            batch_pacer::Event::ProviderFallback { .. } => "providerFallback",
        };
        *self.tally.events.entry(name).or_default() += 1;
    }
}

impl Soak {
    fn at(&mut self, at: Instant, event: Event) {
        self.seq += 1;
        self.schedule.insert((at, self.seq), event);
    }

    fn after_ms(&mut self, ms: u64, event: Event) {
        let at = self.now + Duration::from_millis(ms as f64);
        self.at(at, event);
    }

    /// Collects the outputs of pacer `p`: starts its calls, checks what settled.
    fn drain(&mut self, p: usize) {
        while let Some(output) = self.pacers[p].engine.poll_output() {
            match output {
                Output::Call(call) => {
                    self.pacers[p].tally.calls += 1;
                    self.provider(p, call);
                }
                Output::Settled(settled) => self.pacers[p].on_settled(settled),
                Output::Event(event) => self.pacers[p].on_event(event),
                _ => {}
            }
        }
        let pacer = &mut self.pacers[p];
        pacer.max_pending = pacer.max_pending.max(pacer.pending.len());
    }

    /// The seeded provider: decides what happens to a call and schedules its answer.
    fn provider(&mut self, pacer: usize, call: Call) {
        let latency = 20 + self.rng.below(400);
        // The call's own timeout: `timeoutMs` plus its per-character part.
        let timeout_ms = call.timeout.map_or(0.0, |t| t.as_millis()) as u64;
        let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        let correct = if self.rng.chance(300) {
            Reply::Texts(echoes.clone())
        } else {
            Reply::Text(echoes.join(call.separator()))
        };
        // The provider's quota: over it, a 429 whose Retry-After (whole seconds, as HTTP
        // sends it) is when the oldest call of the window leaves it.
        let now = self.now;
        let window = self
            .quota_window
            .entry(call.compat.provider_id.clone())
            .or_default();
        let second = Duration::from_millis(1000.0);
        while window.front().is_some_and(|t| *t + second <= now) {
            window.pop_front();
        }
        if window.len() >= quota(&call.compat.provider_id) {
            let wait = (window[0] + second).since(now).as_secs().ceil();
            let failure = Failure::error(Some(429), Some(Duration::from_secs(wait)), "quota");
            *self.pacers[pacer]
                .tally
                .faults
                .entry("429 over quota")
                .or_default() += 1;
            let outcome = Err(failure);
            self.after_ms(
                latency,
                Event::Answer {
                    pacer,
                    id: call.id,
                    outcome,
                },
            );
            return;
        }
        window.push_back(now);
        let roll = self.rng.below(1000);
        // Rolls 905..935 are the 429s that come whatever the rate (a quota shared with
        // other clients, an overloaded provider): `random_429` per mille of them.
        let roll = match roll {
            905..=934 if roll - 905 >= self.random_429 => 0,
            r => r,
        };
        let (kind, outcome, twice) = match roll {
            0..=799 => ("correct", Some(Ok(correct)), false),
            800..=829 => {
                // One segment missing or one too many.
                let mut wrong = echoes.clone();
                if self.rng.chance(500) || wrong.len() == 1 {
                    wrong.push("«extra»".into());
                } else {
                    wrong.pop();
                }
                // A single request's text reply is used verbatim: give it an array.
                let reply = if call.is_batch {
                    Reply::Text(wrong.join(call.separator()))
                } else {
                    Reply::Texts(wrong)
                };
                ("wrong count", Some(Ok(reply)), false)
            }
            830..=844 => {
                let mut empty = echoes.clone();
                let at = self.rng.below(empty.len() as u64) as usize;
                empty[at] = " ".into();
                let reply = if call.is_batch {
                    Reply::Text(empty.join(call.separator()))
                } else {
                    Reply::Texts(Vec::new())
                };
                ("empty segment", Some(Ok(reply)), false)
            }
            845..=884 => {
                let status = self.rng.pick(&[500, 502, 503, 504]);
                let retry_after = self
                    .rng
                    .chance(100)
                    .then(|| Duration::from_millis(self.rng.below(3000) as f64));
                let failure = Failure::error(Some(status), retry_after, "server error");
                ("5xx", Some(Err(failure)), false)
            }
            885..=894 => {
                let status = self.rng.pick(&[408, 409]);
                (
                    "408/409",
                    Some(Err(Failure::error(Some(status), None, "retry"))),
                    false,
                )
            }
            895..=904 => {
                let status = self.rng.pick(&[400, 401, 403, 404, 422]);
                (
                    "4xx",
                    Some(Err(Failure::error(Some(status), None, "final"))),
                    false,
                )
            }
            905..=934 => {
                let retry_after = match self.rng.below(1000) {
                    0..=4 => Some(Duration::from_millis(600_000.0)),
                    5..=299 => None,
                    _ => Some(Duration::from_millis((100 + self.rng.below(5000)) as f64)),
                };
                let failure = Failure::error(Some(429), retry_after, "too many requests");
                ("429 at random", Some(Err(failure)), false)
            }
            935..=954 => ("hang", None, false),
            955..=964 => (
                "wrong type",
                Some(Err(Failure::bad_reply("a number"))),
                false,
            ),
            965..=974 => (
                "network error",
                Some(Err(Failure::error(None, None, "fetch failed"))),
                false,
            ),
            975..=984 => ("answered twice", Some(Ok(correct)), true),
            _ => ("after the timeout", Some(Ok(correct)), false),
        };
        *self.pacers[pacer].tally.faults.entry(kind).or_default() += 1;
        let Some(outcome) = outcome else {
            return;
        };
        let delay = if kind == "after the timeout" {
            timeout_ms + 500
        } else {
            latency
        };
        if twice {
            let again = Reply::Text(self.rng.below(u64::MAX).to_string());
            self.after_ms(
                delay + 1000,
                Event::Answer {
                    pacer,
                    id: call.id,
                    outcome: Ok(again),
                },
            );
        }
        self.after_ms(
            delay,
            Event::Answer {
                pacer,
                id: call.id,
                outcome,
            },
        );
    }

    /// A page of items for pacer `p`, unless it is behind.
    fn page(&mut self, p: usize) {
        if self.sent >= self.items {
            return;
        }
        if self.pacers[p].pending.len() > BACKLOG {
            self.after_ms(500, Event::Page { pacer: p });
            return;
        }
        let size = match p {
            0 => 1 + self.rng.below(200),
            1 => 1 + self.rng.below(4),
            _ => 1 + self.rng.below(50),
        }
        .min(self.items - self.sent);
        for _ in 0..size {
            self.submit(p);
        }
        self.drain(p);
        let gap = match p {
            0 => 400 + self.rng.below(1600),
            1 => 100 + self.rng.below(400),
            _ => 200 + self.rng.below(800),
        };
        self.after_ms(gap, Event::Page { pacer: p });
    }

    fn submit(&mut self, p: usize) {
        // Repeats of recent texts exercise dedup (queued or running) and the cache.
        let id = if self.next_id > 1000 && self.rng.chance(150) {
            self.next_id - 1 - self.rng.below(1000)
        } else {
            self.next_id += 1;
            self.next_id
        };
        let text = text_of(id);
        let (provider_id, target_lang, context, llm) = match p {
            0 => (
                self.rng.pick(&["alpha", "beta"]),
                self.rng.pick(&["de", "fr"]),
                "",
                true,
            ),
            1 => ("subs", "de", "A film about the sea", true),
            _ => ("gamma", "es", "", id % 2 == 0),
        };
        let item = Item {
            text: &text,
            compat: Compat {
                provider_id,
                source_lang: "en",
                target_lang,
                context,
                llm,
                scope: "",
            },
            priority: self.rng.below(3) as f64,
            tokens: None,
        };
        let now = self.now;
        let already_aborted = self.rng.chance(1);
        let engine = &mut self.pacers[p].engine;
        let ticket = if already_aborted {
            engine.handle_translate_aborted(now, &item)
        } else {
            engine.handle_translate(now, &item)
        }
        .expect("a valid item");
        let after_dispose = engine.is_disposed();
        let fresh = self.pacers[p].pending.insert(ticket, (id, after_dispose));
        assert!(fresh.is_none(), "ticket {ticket} issued twice");
        self.sent += 1;
        if self.rng.chance(10) {
            let after = self.rng.below(4000);
            self.after_ms(after, Event::Abort { pacer: p, ticket });
        }
    }

    /// Changes a few options of a random live pacer.
    fn change_options(&mut self, live: &[usize]) {
        let p = self.rng.pick(live);
        let choices: [(&str, &[f64]); 12] = [
            ("rate", &[2.0, 5.0, 10.0, 20.0, 40.0]),
            ("capacity", &[1.0, 5.0, 20.0, 60.0]),
            ("maxItemsPerBatch", &[1.0, 2.0, 4.0, 8.0, 16.0]),
            ("maxCharactersPerBatch", &[200.0, 1000.0, 4000.0]),
            ("batchDelayMs", &[0.0, 20.0, 100.0, 300.0]),
            ("maxInFlight", &[0.0, 2.0, 8.0]),
            ("cacheEntries", &[0.0, 100.0, 1000.0]),
            ("timeoutMs", &[1000.0, 3000.0, 10_000.0]),
            ("maxRetries", &[0.0, 2.0, 5.0]),
            ("maxBatchRetries", &[0.0, 1.0, 3.0]),
            ("baseRetryDelayMs", &[50.0, 250.0, 1000.0]),
            ("maxRateLimitRetries", &[2.0, 10.0]),
        ];
        let mut patch: Vec<(&str, OptionValue)> = Vec::new();
        for _ in 0..1 + self.rng.below(4) {
            let (name, values) = self.rng.pick(&choices);
            patch.push((name, OptionValue::Number(self.rng.pick(values))));
        }
        for name in ["fallbackToIndividual", "adaptiveRate"] {
            if self.rng.chance(150) {
                patch.push((name, OptionValue::Bool(self.rng.chance(700))));
            }
        }
        let now = self.now;
        self.pacers[p]
            .engine
            .set_options(now, &patch)
            .expect("valid options");
        self.drain(p);
    }

    fn next_wake(&self) -> Option<Instant> {
        let scheduled = self.schedule.keys().next().map(|k| k.0);
        self.pacers
            .iter()
            .filter_map(|p| p.engine.poll_timeout())
            .chain(scheduled)
            .min()
    }
}

fn options(pairs: &[(&str, f64)]) -> Options {
    let patch: Vec<(&str, OptionValue)> = pairs
        .iter()
        .map(|(k, v)| (*k, OptionValue::Number(*v)))
        .collect();
    Options::default().patched(&patch).expect("valid")
}

fn main() {
    let items: u64 = std::env::var("SOAK_ITEMS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000);
    let seed: u64 = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_240_601);
    let random_429: u64 = std::env::var("SOAK_RANDOM_429")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .min(30);
    println!(
        "batch-pacer soak: {items} items, seed {seed}, {random_429}\u{2030} of calls answered 429 whatever the rate"
    );
    let start_bytes = live();
    PEAK.store(start_bytes, Ordering::Relaxed);
    let started = Clock::now();

    let pacer = |name, opts: Options, seed| Pacer {
        name,
        engine: Engine::new(opts, Instant::ZERO, seed),
        pending: HashMap::new(),
        max_pending: 0,
        tally: Tally::default(),
    };
    let mut soak = Soak {
        rng: Rng(seed),
        now: Instant::ZERO,
        seq: 0,
        schedule: BTreeMap::new(),
        pacers: vec![
            pacer(
                "page",
                options(&[
                    ("rate", 20.0),
                    ("capacity", 20.0),
                    ("maxItemsPerBatch", 8.0),
                ]),
                seed ^ 1,
            ),
            pacer(
                "subtitles",
                options(&[("rate", 10.0), ("capacity", 5.0), ("maxInFlight", 4.0)]),
                seed ^ 2,
            ),
            pacer(
                "doomed",
                options(&[("rate", 10.0), ("timeoutMs", 3000.0)]),
                seed ^ 3,
            ),
        ],
        items,
        sent: 0,
        next_id: 0,
        quota_window: HashMap::new(),
        random_429,
    };
    for p in 0..soak.pacers.len() {
        soak.at(Instant::ZERO, Event::Page { pacer: p });
    }

    let mut curve = vec![(0u64, start_bytes, 0usize, 0.0f64)];
    let mut next_tenth = 1;
    let mut next_change = 1;
    let mut disposed = false;
    let mut late_pages = 0;
    let mut steps = 0u64;
    let mut still = 0u64;
    while let Some(at) = soak.next_wake() {
        steps += 1;
        still = if at > soak.now { 0 } else { still + 1 };
        assert!(still < 1_000_000, "no progress at {:?}", soak.now);
        if at.as_millis() > MAX_VIRTUAL_HOURS * 3_600_000.0 {
            let slowest: Vec<String> = soak
                .pacers
                .iter()
                .flat_map(|p| p.tally.slowest.iter())
                .map(|(provider, rate)| format!("{provider} {rate:.5}/s"))
                .collect();
            panic!(
                "after {MAX_VIRTUAL_HOURS} virtual hours {} of {} items are sent and {} \
                 unsettled: the pacers stall (slowest adaptive rates: {})",
                soak.sent,
                soak.items,
                soak.pacers.iter().map(|p| p.pending.len()).sum::<usize>(),
                slowest.join(", ")
            );
        }
        soak.now = soak.now.max(at);
        let now = soak.now;
        while let Some(entry) = soak.schedule.first_entry() {
            if entry.key().0 > now {
                break;
            }
            match entry.remove() {
                Event::Answer { pacer, id, outcome } => {
                    soak.pacers[pacer].engine.handle_response(now, id, outcome);
                    soak.drain(pacer);
                }
                Event::Abort { pacer, ticket } => {
                    soak.pacers[pacer].engine.handle_abort(now, ticket);
                    soak.drain(pacer);
                }
                Event::Page { pacer: 2 } if disposed => {
                    // After the dispose a few items still reach the disposed pacer and
                    // must reject at once; then its flow stops.
                    if late_pages < 3 && soak.sent < soak.items {
                        late_pages += 1;
                        soak.submit(2);
                        soak.drain(2);
                        soak.after_ms(500, Event::Page { pacer: 2 });
                    }
                }
                Event::Page { pacer } => soak.page(pacer),
            }
        }
        for p in 0..soak.pacers.len() {
            if soak.pacers[p]
                .engine
                .poll_timeout()
                .is_some_and(|t| t <= now)
            {
                soak.pacers[p].engine.handle_timeout(now);
                soak.drain(p);
            }
        }
        // Checkpoints on the share of items sent.
        while next_change < 20 && soak.sent * 20 >= soak.items * next_change {
            next_change += 1;
            let live_pacers: Vec<usize> = if disposed { vec![0, 1] } else { vec![0, 1, 2] };
            soak.change_options(&live_pacers);
        }
        if !disposed && soak.sent * 2 >= soak.items {
            disposed = true;
            soak.pacers[2].engine.handle_dispose();
            soak.drain(2);
            assert!(
                soak.pacers[2].pending.is_empty(),
                "dispose left {} items unsettled",
                soak.pacers[2].pending.len()
            );
        }
        while next_tenth <= 10 && soak.sent * 10 >= soak.items * next_tenth {
            let pending = soak.pacers.iter().map(|p| p.pending.len()).sum();
            curve.push((
                next_tenth * 10,
                live(),
                pending,
                soak.now.as_millis() / 1000.0,
            ));
            next_tenth += 1;
        }
    }
    let elapsed = started.elapsed();

    // Everything settled exactly once, every queue is empty, the counters agree.
    let mut totals = Tally::default();
    println!();
    println!(
        "{:<10} {:>9} {:>9} {:>8} {:>8} {:>7} {:>7} {:>8} {:>7} {:>9} {:>8} {:>8}",
        "pacer",
        "items",
        "ok",
        "failed",
        "aborted",
        "dispos.",
        "calls",
        "retries",
        "mism.",
        "fallbacks",
        "429s",
        "max pend"
    );
    for p in &soak.pacers {
        let s = p.engine.stats();
        assert!(
            p.pending.is_empty(),
            "{}: {} items never settled",
            p.name,
            p.pending.len()
        );
        assert_eq!(
            (s.pending, s.queued, s.in_flight),
            (0, 0, 0),
            "{}: {s:?}",
            p.name
        );
        assert_eq!(
            s.items,
            s.succeeded + s.failed + s.aborted + s.disposed,
            "{}",
            p.name
        );
        assert_eq!(
            (s.succeeded, s.failed, s.aborted, s.disposed),
            (
                p.tally.ok,
                p.tally.failed,
                p.tally.aborted,
                p.tally.disposed
            ),
            "{}: the counters disagree with what settled",
            p.name
        );
        assert_eq!(s.provider_calls, p.tally.calls, "{}", p.name);
        println!(
            "{:<10} {:>9} {:>9} {:>8} {:>8} {:>7} {:>7} {:>8} {:>7} {:>9} {:>8} {:>8}",
            p.name,
            s.items,
            s.succeeded,
            s.failed,
            s.aborted,
            s.disposed + p.tally.disposed_after,
            s.provider_calls,
            s.retries,
            s.count_mismatches,
            s.fallbacks,
            s.rate_limited,
            p.max_pending
        );
        totals.ok += p.tally.ok;
        totals.failed += p.tally.failed;
        totals.aborted += p.tally.aborted;
        totals.disposed += p.tally.disposed + p.tally.disposed_after;
        totals.calls += p.tally.calls;
        for (k, v) in &p.tally.faults {
            *totals.faults.entry(k).or_default() += v;
        }
        for (k, v) in &p.tally.events {
            *totals.events.entry(k).or_default() += v;
        }
        for (k, v) in &p.tally.failed_by {
            *totals.failed_by.entry(k).or_default() += v;
        }
    }
    let settled = totals.ok + totals.failed + totals.aborted + totals.disposed;
    assert_eq!(settled, soak.sent, "every item sent settled once");
    assert_eq!(soak.sent, items);
    assert!(soak.schedule.is_empty());

    let dedup: u64 = soak
        .pacers
        .iter()
        .map(|p| p.engine.stats().dedup_hits)
        .sum();
    let cache: u64 = soak
        .pacers
        .iter()
        .map(|p| p.engine.stats().cache_hits)
        .sum();
    println!();
    println!(
        "settled exactly once: {settled} of {} items (ok {}, failed {}, aborted {}, disposed {}); \
         dedup hits {dedup}, cache hits {cache}; no translation misassigned",
        soak.sent, totals.ok, totals.failed, totals.aborted, totals.disposed
    );
    let failed: Vec<String> = totals
        .failed_by
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("failed items by code: {}", failed.join(", "));
    let faults: Vec<String> = totals
        .faults
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("provider calls {}: {}", totals.calls, faults.join(", "));
    let events: Vec<String> = totals
        .events
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("events: {}", events.join(", "));
    let slowest: Vec<String> = soak
        .pacers
        .iter()
        .flat_map(|p| p.tally.slowest.iter())
        .map(|(provider, rate)| format!("{provider} {rate:.5}/s"))
        .collect();
    println!("slowest adaptive rates: {}", slowest.join(", "));
    println!(
        "time: {:.2} s wall ({:.0} items/s), {:.0} s virtual, {steps} steps",
        elapsed.as_secs_f64(),
        soak.sent as f64 / elapsed.as_secs_f64(),
        soak.now.as_millis() / 1000.0
    );

    // The driver's maps are empty; give their capacity back so `end` shows the engines.
    for p in &mut soak.pacers {
        p.pending.shrink_to_fit();
    }
    soak.quota_window.clear();
    soak.quota_window.shrink_to_fit();
    let end_bytes = live();
    for p in &mut soak.pacers {
        let now = soak.now;
        if !p.engine.is_disposed() {
            let off = [("cacheEntries", OptionValue::Number(0.0))];
            p.engine.set_options(now, &off).expect("valid");
        }
    }
    let end_without_cache = live();
    let peak = PEAK.load(Ordering::Relaxed);
    println!();
    println!("memory curve (heap of the whole process: engines and this driver):");
    println!(
        "{:>6} {:>12} {:>10} {:>12}",
        "sent", "live", "unsettled", "virtual s"
    );
    for (percent, bytes, pending, secs) in &curve {
        println!(
            "{:>5}% {:>12} {:>10} {:>12.0}",
            percent,
            mib(*bytes),
            pending,
            secs
        );
    }
    let engines_idle = end_bytes;
    drop(soak);
    let after_drop = live();
    drop(curve);
    println!(
        "memory: start {}, peak {}, end {} (engines idle, alive; {} once their caches are \
         emptied), {} after dropping them",
        mib(start_bytes),
        mib(peak),
        mib(engines_idle),
        mib(end_without_cache),
        mib(after_drop)
    );
    // What is left is this function's own bookkeeping (the curve, the totals).
    assert!(
        after_drop < start_bytes + 256 * 1024,
        "heap bytes left behind after dropping every engine: {}",
        after_drop - start_bytes
    );
}
