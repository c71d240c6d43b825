//! The engine on virtual time, driven by a byte script of operations: translate (empty
//! fields, blank texts, duplicates, huge and NaN priorities, already-aborted items),
//! answer an outstanding call (correctly, with a reply the codec must reject, with
//! garbage, with a failure of any status and Retry-After, twice, or after it was
//! cancelled), abort tickets, `set_options` with any values, let time pass, dispose; and
//! `pacer.run`s (calls with no texts, any answer their success) among them, aborted too.
//!
//! Properties:
//! - nothing panics (debug assertions and overflow checks are on);
//! - `handle_translate` rejects exactly the invalid items;
//! - every accepted ticket settles at most once, and only accepted tickets settle;
//! - `items = succeeded + failed + aborted + disposed + pending` after every step, and
//!   every rule that spans the engine's parts (`Engine::check`, the `check` feature);
//! - while every reply is built from the call's own texts (correct, or malformed in a way
//!   the codec must reject), every translation is the one of the item's own text;
//! - at the end, with sane options and a provider that answers, the engine goes idle with
//!   everything settled exactly once and empty queues; a dispose then settles nothing more.
#![no_main]

mod common;

use std::collections::HashMap;

use batch_pacer::{
    is_blank, Call, CallId, Compat, Duration, Engine, ErrorCode, Failure, FailureKind, Instant,
    Item, OptionValue, Output, Reply, Settled, Ticket,
};
use common::Bytes;
use libfuzzer_sys::fuzz_target;

const MAX_OPS: usize = 400;

/// `FUZZ_TRACE=1` prints every operation (to read a reproducer).
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FUZZ_TRACE").is_some())
}

macro_rules! trace {
    ($($arg:tt)*) => {
        if tracing() {
            eprintln!($($arg)*);
        }
    };
}
const DRAIN_STEPS: usize = 200_000;

/// The provider's translation of a text. No CR: the codec normalizes line endings.
fn echo(text: &str) -> String {
    format!("T:{}", text.trim())
}

struct Accepted {
    text: String,
    /// A `pacer.run`'s ticket: it ends with an empty string on success.
    run: bool,
}

struct Run {
    engine: Engine<()>,
    now: Instant,
    outstanding: Vec<Call>,
    stale: Vec<CallId>,
    accepted: HashMap<Ticket, Accepted>,
    order: Vec<Ticket>,
    settles: HashMap<Ticket, u32>,
    /// A reply not built from the call's texts was given: translations may be anything.
    garbage: bool,
}

impl Run {
    fn drain(&mut self) {
        while let Some(output) = self.engine.poll_output() {
            match output {
                Output::Cancel(id) => self.on_cancel(id),
                Output::Call(call) => self.on_call(call),
                Output::Settled(settled) => self.on_settled(settled),
                Output::Preview(_)
                | Output::Lookup(_)
                | Output::StoreWrite(_)
                | Output::Event(_) => {}
            }
        }
        // Every rule that spans the engine's parts.
        self.engine.check();
        let s = self.engine.stats();
        assert_eq!(
            s.items,
            s.succeeded + s.failed + s.aborted + s.disposed + s.pending,
            "{s:?}"
        );
    }

    /// A cancelled call is no longer outstanding; its answer, if any comes, is stale.
    fn on_cancel(&mut self, id: CallId) {
        if let Some(i) = self.outstanding.iter().position(|c| c.id == id) {
            self.outstanding.swap_remove(i);
        }
        self.stale.push(id);
    }

    /// Checks a call's layout and keeps it outstanding until the script answers it.
    fn on_call(&mut self, call: Call) {
        if let Some(ticket) = call.run {
            assert!(call.texts.is_empty(), "a run's call carries texts");
            assert!(
                self.accepted.get(&ticket).is_some_and(|a| a.run),
                "a call for ticket {ticket}, which is no run"
            );
            trace!(
                "  run call {} for {ticket}, attempt {}",
                call.id,
                call.attempt
            );
            self.outstanding.push(call);
            return;
        }
        assert!(!call.texts.is_empty(), "a call without texts");
        assert_eq!(call.is_batch, call.texts.len() > 1);
        // A batch's separator, or each string of its markers, occurs in none of its
        // texts (docs/reference.md, Rule 12); a single request has neither.
        if call.is_batch {
            let markers = call.markers();
            if markers.is_empty() {
                let token = call.separator().trim();
                assert!(!token.is_empty(), "a batch without a layout");
                assert!(call.texts.iter().all(|t| !t.contains(token)));
            } else {
                assert_eq!(markers.len(), call.texts.len());
                for (open, close) in markers {
                    assert!(
                        call.texts
                            .iter()
                            .all(|t| !t.contains(open.as_str()) && !t.contains(close.as_str())),
                        "marker {open:?} or {close:?} occurs in {:?}",
                        call.texts
                    );
                }
            }
        }
        assert!(
            call.texts.iter().all(|t| !is_blank(t)),
            "a blank text was sent"
        );
        trace!(
            "  call {} {:?} attempt {}",
            call.id,
            call.texts,
            call.attempt
        );
        self.outstanding.push(call);
    }

    /// Checks an item that settled: once, with its own translation.
    fn on_settled(&mut self, settled: Settled<()>) {
        let ticket = settled.ticket;
        trace!(
            "  settled {ticket}: {:?}",
            settled.result.as_ref().map_err(|e| e.code)
        );
        let count = self.settles.entry(ticket).or_default();
        *count += 1;
        assert_eq!(*count, 1, "ticket {ticket} settled twice");
        let accepted = self
            .accepted
            .get(&ticket)
            .unwrap_or_else(|| panic!("unknown ticket {ticket} settled"));
        match settled.result {
            Ok(value) if accepted.run => assert_eq!(value, "", "a run's value is the driver's"),
            Ok(translation) if !self.garbage => {
                let want = if is_blank(&accepted.text) {
                    accepted.text.clone()
                } else {
                    echo(&accepted.text)
                };
                assert_eq!(
                    translation, want,
                    "ticket {ticket} got another item's translation"
                );
            }
            Ok(_) => {}
            Err(error) => assert!(
                !matches!(
                    error.code,
                    ErrorCode::InvalidInput | ErrorCode::InvalidOptions | ErrorCode::NotInitialized
                ),
                "ticket {ticket} failed with {error}"
            ),
        }
    }

    fn answer(&mut self, index: usize, outcome: Result<Reply, Failure<()>>) {
        if self.outstanding.is_empty() {
            return;
        }
        let call = self.outstanding.swap_remove(index % self.outstanding.len());
        trace!(
            "  answer call {} {:?} with {outcome:?}",
            call.id,
            call.texts
        );
        self.stale.push(call.id);
        self.engine.handle_response(self.now, call.id, outcome);
    }

    fn correct_reply(call: &Call, as_array: bool) -> Reply {
        let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        let markers = call.markers();
        if as_array {
            Reply::Texts(echoes)
        } else if markers.is_empty() {
            Reply::Text(echoes.join(call.separator()))
        } else {
            // The markers layout: each translation between its own pair, a line each.
            let marked: Vec<String> = echoes
                .iter()
                .zip(markers)
                .map(|(echo, (open, close))| format!("{open}{echo}{close}"))
                .collect();
            Reply::Text(marked.join("\n"))
        }
    }

    /// A reply built from the call's own texts that the codec must not accept.
    fn rejected_reply(call: &Call, form: u8) -> Reply {
        let mut echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
        let n = echoes.len();
        if n == 0 {
            // A run's call: any reply is its success.
            return Reply::Text(String::new());
        }
        if n == 1 {
            return Reply::Texts(if form & 1 == 0 {
                Vec::new()
            } else {
                vec![echoes[0].clone(), echoes[0].clone()]
            });
        }
        let sep = call.separator();
        let at = usize::from(form >> 3) % n;
        match form % 7 {
            0 => {
                echoes.remove(at);
                Reply::Text(echoes.join(sep))
            }
            1 => {
                echoes.insert(at, "T:extra".into());
                Reply::Text(echoes.join(sep))
            }
            2 => {
                echoes[at] = " ".into();
                Reply::Text(echoes.join(sep))
            }
            3 => Reply::Text(format!("{}{}", sep, echoes.join(sep))),
            4 => {
                let merged = format!("{}\n{}", echoes[at % (n - 1)], echoes[at % (n - 1) + 1]);
                echoes.splice(at % (n - 1)..at % (n - 1) + 2, [merged]);
                Reply::Text(echoes.join(sep))
            }
            5 => {
                echoes.pop();
                Reply::Texts(echoes)
            }
            _ => Reply::Text(echoes.join(" ")),
        }
    }
}

fn pick<'a>(bytes: &mut Bytes, from: &[&'a str]) -> &'a str {
    from[usize::from(bytes.u8()) % from.len()]
}

fn failure(bytes: &mut Bytes) -> Failure<()> {
    let statuses = [
        None,
        Some(400),
        Some(401),
        Some(404),
        Some(408),
        Some(409),
        Some(429),
        Some(429),
        Some(500),
        Some(502),
        Some(503),
        Some(0),
        Some(200),
        Some(999),
        Some(u16::MAX),
    ];
    let status = statuses[usize::from(bytes.u8()) % statuses.len()];
    let retry_after = match bytes.u8() % 8 {
        0 | 1 => None,
        2 => Some(Duration::ZERO),
        3 => Some(Duration::from_millis(1500.0)),
        4 => Some(Duration::from_millis(299_999.0)),
        5 => Some(Duration::from_millis(300_001.0)),
        _ => Some(Duration::from_millis(bytes.number())),
    };
    match bytes.u8() % 7 {
        0 => Failure::bad_reply("a number"),
        1 => Failure {
            kind: FailureKind::Timeout,
            status: None,
            retry_after: None,
            message: "timed out".into(),
            cause: None,
            limits: Default::default(),
            quota: None,
            retryable: None,
        },
        2 => {
            // The provider knows the same request fails again: never retried as it is.
            let mut refused = Failure::error(status, retry_after, "refused for good");
            refused.retryable = Some(false);
            refused.with_cause(())
        }
        _ => Failure::error(status, retry_after, "HTTP error").with_cause(()),
    }
}

fn elapse(bytes: &mut Bytes) -> Duration {
    match bytes.u8() % 8 {
        0 => Duration::ZERO,
        1 => Duration::from_millis(1.0),
        2 => Duration::from_millis(100.0),
        3 => Duration::from_millis(1000.0),
        4 => Duration::from_millis(20_000.0),
        5 => Duration::from_millis(300_000.0),
        _ => Duration::from_millis(f64::from(bytes.u16())),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes::new(data);
    // Either layout (the fuzzed patch may also choose one): correct replies are built for
    // the call's own layout, damaged ones from the separator layout's forms.
    let segment_format = if bytes.bool() {
        batch_pacer::options::SegmentFormat::Separator
    } else {
        batch_pacer::options::SegmentFormat::Markers
    };
    let options = batch_pacer::Options {
        segment_format,
        ..batch_pacer::Options::default()
    }
    .patched(&bytes.patch(4))
    .unwrap_or_default();
    trace!("options {options:?}");
    let mut run = Run {
        engine: Engine::new(options, Instant::ZERO, bytes.u64()),
        now: Instant::ZERO,
        outstanding: Vec::new(),
        stale: Vec::new(),
        accepted: HashMap::new(),
        order: Vec::new(),
        settles: HashMap::new(),
        garbage: false,
    };
    let long_text = "Long paragraph. ".repeat(80);
    let mut ops = 0;
    while !bytes.is_empty() && ops < MAX_OPS {
        ops += 1;
        match bytes.u8() % 14 {
            0..=3 => {
                let fuzzed: String;
                let text = match bytes.u8() % 12 {
                    0 => "",
                    1 => "  \n ",
                    2 => "\u{feff}",
                    3 => "50% off",
                    4 => "a\n\n%%\n\nb",
                    5 => "%%%",
                    6 => "```js\nlet x = 1;\n```",
                    7 => &long_text,
                    8 | 9 => pick(&mut bytes, &["Hello", "World", "Hi", "\u{85}"]),
                    _ => {
                        fuzzed = bytes.string(24).replace('\r', "");
                        &fuzzed
                    }
                };
                let provider_id = pick(&mut bytes, &["p", "p", "q", ""]);
                if bytes.u8().is_multiple_of(6) {
                    let priority = if bytes.bool() { 0.0 } else { bytes.number() };
                    let valid = !provider_id.is_empty() && priority.is_finite();
                    trace!("{:?} run {provider_id:?} priority {priority}", run.now);
                    match run.engine.handle_run(run.now, provider_id, priority) {
                        Ok(ticket) => {
                            assert!(valid || run.engine.is_disposed(), "accepted an invalid run");
                            let fresh = run.accepted.insert(
                                ticket,
                                Accepted {
                                    text: String::new(),
                                    run: true,
                                },
                            );
                            assert!(fresh.is_none(), "ticket {ticket} handed out twice");
                            run.order.push(ticket);
                        }
                        Err(error) => {
                            assert!(!valid, "rejected a valid run: {error}");
                            assert_eq!(error.code, ErrorCode::InvalidInput);
                        }
                    }
                    run.drain();
                    continue;
                }
                let source_lang = pick(&mut bytes, &["en", "en", "en", ""]);
                let target_lang = pick(&mut bytes, &["de", "fr", "de", ""]);
                let context = pick(&mut bytes, &["", "", "page"]);
                let scope = pick(&mut bytes, &["", "", "7"]);
                let llm = !bytes.u8().is_multiple_of(4);
                let priority = if bytes.bool() { 0.0 } else { bytes.number() };
                let item = Item {
                    text,
                    compat: Compat {
                        provider_id,
                        source_lang,
                        target_lang,
                        context,
                        llm,
                        scope,
                    },
                    priority,
                    tokens: None,
                };
                let valid = !provider_id.is_empty()
                    && !source_lang.is_empty()
                    && !target_lang.is_empty()
                    && priority.is_finite();
                let already_aborted = bytes.u8().is_multiple_of(8);
                trace!(
                    "{:?} translate{} {item:?}",
                    run.now,
                    if already_aborted { " aborted" } else { "" }
                );
                let outcome = if already_aborted {
                    run.engine.handle_translate_aborted(run.now, &item)
                } else {
                    run.engine.handle_translate(run.now, &item)
                };
                match outcome {
                    Ok(ticket) => {
                        // After dispose every item is taken and rejects `disposed`,
                        // malformed ones too (docs/reference.md, Rule 41: later calls reject `disposed`).
                        assert!(
                            valid || run.engine.is_disposed(),
                            "accepted an invalid item {item:?}"
                        );
                        let fresh = run.accepted.insert(
                            ticket,
                            Accepted {
                                text: text.to_owned(),
                                run: false,
                            },
                        );
                        assert!(fresh.is_none(), "ticket {ticket} handed out twice");
                        run.order.push(ticket);
                    }
                    Err(error) if error.code == ErrorCode::QueueFull => {
                        assert!(valid && !already_aborted, "{error} for {item:?}");
                        assert!(run.engine.options().max_queued > 0, "{error}");
                    }
                    Err(error) => {
                        assert!(!valid, "rejected a valid item: {error}");
                        assert_eq!(error.code, ErrorCode::InvalidInput);
                    }
                }
            }
            4 | 5 => {
                let (index, as_array) = (usize::from(bytes.u8()), bytes.bool());
                if let Some(call) = run.outstanding.get(index % run.outstanding.len().max(1)) {
                    let reply = Run::correct_reply(call, as_array);
                    run.answer(index, Ok(reply));
                }
            }
            6 => {
                let (index, form) = (usize::from(bytes.u8()), bytes.u8());
                if let Some(call) = run.outstanding.get(index % run.outstanding.len().max(1)) {
                    let reply = Run::rejected_reply(call, form);
                    run.answer(index, Ok(reply));
                }
            }
            7 => {
                run.garbage = true;
                let index = usize::from(bytes.u8());
                let reply = if bytes.bool() {
                    Reply::Text(bytes.string(64))
                } else {
                    let n = usize::from(bytes.u8() % 6);
                    Reply::Texts((0..n).map(|_| bytes.string(16)).collect())
                };
                run.answer(index, Ok(reply));
            }
            8 => {
                let index = usize::from(bytes.u8());
                let failure = failure(&mut bytes);
                run.answer(index, Err(failure));
            }
            9 => {
                // A second answer, an answer to a cancelled call, or to no call at all.
                let id = match run.stale.len() {
                    0 => bytes.u64(),
                    n => run.stale[usize::from(bytes.u8()) % n],
                };
                if run.outstanding.iter().all(|c| c.id != id) {
                    let reply = Reply::Text(bytes.string(16));
                    run.engine.handle_response(run.now, id, Ok(reply));
                }
            }
            10 => {
                let ticket = match (bytes.u8() % 4, run.order.len()) {
                    (0, _) | (_, 0) => bytes.u64(),
                    (_, n) => run.order[usize::from(bytes.u8()) % n],
                };
                trace!("{:?} abort {ticket}", run.now);
                if run.accepted.get(&ticket).is_some_and(|a| a.run) {
                    run.engine.handle_run_abort(run.now, ticket);
                } else {
                    run.engine.handle_abort(run.now, ticket);
                }
            }
            11 => {
                let patch = bytes.patch(3);
                let before = run.engine.options().clone();
                trace!("{:?} set_options {patch:?}", run.now);
                if run.engine.set_options(run.now, &patch).is_err() {
                    assert_eq!(run.engine.options(), &before);
                }
            }
            12 => {
                if bytes.u8().is_multiple_of(16) {
                    trace!("{:?} dispose", run.now);
                    run.engine.handle_dispose();
                } else {
                    let at = run.engine.poll_timeout().unwrap_or(run.now);
                    run.now = run.now.max(at);
                    trace!("{:?} timeout (woken)", run.now);
                    run.engine.handle_timeout(run.now);
                }
            }
            _ => {
                run.now = run.now + elapse(&mut bytes);
                trace!("{:?} timeout", run.now);
                run.engine.handle_timeout(run.now);
            }
        }
        run.drain();
    }

    trace!("final drain; stats {:?}", run.engine.stats());
    // Sane options and a provider that answers everything: the engine must go idle.
    if !run.engine.is_disposed() {
        // No timeout either: hostile delays may have pushed virtual time to its saturated
        // end, where a deadline (now + timeout) is now, so every call would time out.
        let sane = [
            ("rate", OptionValue::Number(1000.0)),
            ("capacity", OptionValue::Number(1000.0)),
            ("maxInFlight", OptionValue::Number(0.0)),
            ("timeoutMs", OptionValue::Number(0.0)),
            // Bounded budgets: a correct reply the alignment checks refuse (a false alarm,
            // e.g. a translation ending in ':') must end in the one-by-one fallback.
            ("maxBatchRetries", OptionValue::Number(3.0)),
            ("fallbackToIndividual", OptionValue::Bool(true)),
            ("maxRetries", OptionValue::Number(2.0)),
            ("maxRateLimitRetries", OptionValue::Number(10.0)),
        ];
        run.engine.set_options(run.now, &sane).expect("valid");
        run.drain();
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < DRAIN_STEPS, "the engine does not go idle");
            while !run.outstanding.is_empty() {
                steps += 1;
                assert!(steps < DRAIN_STEPS, "the engine does not go idle");
                let reply = Run::correct_reply(&run.outstanding[0], false);
                run.answer(0, Ok(reply));
                run.drain();
            }
            match run.engine.poll_timeout() {
                Some(at) => {
                    run.now = run.now.max(at);
                    run.engine.handle_timeout(run.now);
                    run.drain();
                }
                None => break,
            }
        }
        assert!(run.outstanding.is_empty());
        // At the saturated end of virtual time no bucket refills any more: a provider
        // slowed down to a hostile rate (its adaptive rate outlives `set_options`) may
        // then hold work for ever, as configured. Only the dispose below must settle it.
        let end_of_time = run.now >= Instant::from_millis(f64::INFINITY);
        let s = run.engine.stats();
        if !end_of_time {
            assert_eq!((s.pending, s.queued, s.in_flight), (0, 0, 0), "{s:?}");
        }
        for ticket in run.order.iter().filter(|_| !end_of_time) {
            assert_eq!(
                run.settles.get(ticket),
                Some(&1),
                "ticket {ticket} never settled"
            );
        }
    }
    run.engine.handle_dispose();
    run.drain();
    let s = run.engine.stats();
    assert_eq!((s.pending, s.queued, s.in_flight), (0, 0, 0), "{s:?}");
    for ticket in &run.order {
        assert_eq!(
            run.settles.get(ticket),
            Some(&1),
            "ticket {ticket} settled wrongly"
        );
    }
    // Later items settle at once with `disposed`.
    let ticket = run
        .engine
        .handle_translate(run.now, &common::item("after", 0.0))
        .expect("valid");
    let Some(Output::Settled(settled)) = run.engine.poll_output() else {
        panic!("an item after dispose settles at once");
    };
    assert_eq!(settled.ticket, ticket);
    assert_eq!(settled.result.map_err(|e| e.code), Err(ErrorCode::Disposed));
});
