//! Invariants over random arrivals, options and provider behaviours.
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use batch_pacer::codec;
use batch_pacer::key::{item_key, to_hex};
use batch_pacer::options::SegmentFormat;
use batch_pacer::{Call, CallId, Compat, Failure, Item, LookupResult, OptionValue, Options, Reply};
use proptest::prelude::*;
use sim::*;

/// Texts chosen to stress the codec: separators inside, white space, non-BMP characters.
const VARIANTS: [&str; 8] = [
    "plain words",
    "a\n%%\nb",
    "%%",
    "  padded  ",
    "50%%%% off",
    "😀 emoji",
    "line one\r\nline two",
    "a somewhat longer paragraph that will not fit in a tight character budget at all",
];

fn text_for(k: usize) -> String {
    format!("#{k}# {}", VARIANTS[k % VARIANTS.len()])
}

/// True when `translation` comes from `text` alone: it carries the text's tag and no other.
fn derived_only_from(translation: &str, text: &str) -> bool {
    if translation == echo(text) {
        return true;
    }
    let own = text.split(' ').next().unwrap_or("");
    let tags = translation.matches('#').count();
    translation.contains(own) && tags == 2 * translation.matches(own).count()
}

#[derive(Clone, Debug)]
struct Arrival {
    after_ms: f64,
    text: usize,
    provider: usize,
    llm: bool,
    priority: f64,
    abort_after_ms: Option<f64>,
}

fn arrival() -> impl Strategy<Value = Arrival> {
    (
        0.0..800.0f64,
        0..24usize,
        0..2usize,
        prop::bool::weighted(0.8),
        prop::sample::select(vec![0.0, 0.0, 1.0, -1.0]),
        prop::option::weighted(0.1, 0.0..3000.0f64),
    )
        .prop_map(
            |(after_ms, text, provider, llm, priority, abort_after_ms)| Arrival {
                after_ms,
                text,
                provider,
                llm,
                priority,
                abort_after_ms,
            },
        )
}

fn random_options(layout: SegmentFormat) -> impl Strategy<Value = Options> {
    (
        prop::sample::select(vec![0.25, 1.0, 3.0, 8.0, 40.0]),
        1..8u32,
        0..4u32,
        1..6u32,
        prop::sample::select(vec![10.0, 60.0, 1000.0]),
        prop::sample::select(vec![0.0, 100.0, 400.0]),
        0..3u32,
        any::<bool>(),
        prop::sample::select(vec![0.0, 300.0, 2000.0]),
        0..3u32,
        prop::sample::select(vec![0.0, 50.0, 1000.0]),
        (
            0..4u32,
            any::<bool>(),
            prop::sample::select(vec![0.0, 3.0, 100.0]),
        ),
    )
        .prop_map(
            move |(
                rate,
                cap,
                inflight,
                items,
                chars,
                delay,
                batch_retries,
                fallback,
                timeout,
                retries,
                base,
                rest,
            )| {
                let (rl_retries, adaptive, cache) = rest;
                let n = OptionValue::Number;
                let patch = [
                    ("rate", n(rate)),
                    ("capacity", n(cap.into())),
                    ("maxInFlight", n(inflight.into())),
                    ("maxItemsPerBatch", n(items.into())),
                    ("maxCharactersPerBatch", n(chars)),
                    ("batchDelayMs", n(delay)),
                    ("maxBatchRetries", n(batch_retries.into())),
                    ("fallbackToIndividual", OptionValue::Bool(fallback)),
                    ("timeoutMs", n(timeout)),
                    ("maxRetries", n(retries.into())),
                    ("baseRetryDelayMs", n(base)),
                    ("maxRateLimitRetries", n(rl_retries.into())),
                    ("adaptiveRate", OptionValue::Bool(adaptive)),
                    ("cacheEntries", n(cache)),
                ];
                Options {
                    segment_format: layout,
                    ..Options::default()
                }
                .patched(&patch)
                .expect("valid")
            },
        )
}

/// Provider behaviours, picked per call from a random script.
#[derive(Clone, Copy, Debug)]
enum Behaviour {
    Correct,
    CorrectArray,
    WrongCount,
    SeparatorInsideTranslation,
    /// The translations in reverse order under markers kept in order: only the numbers
    /// the texts carry (`#k#`) show the shift. The separator layout cannot refuse it
    /// among texts without numbers, so only the markers layout's runs use it.
    Swapped,
    /// The marked segments in reverse order, each between its own markers.
    Reordered,
    Network,
    Status(u16),
    RateLimited(Option<f64>),
    BadReply,
    Hang,
}

fn behaviour(layout: SegmentFormat) -> BoxedStrategy<Behaviour> {
    match layout {
        SegmentFormat::Markers => prop_oneof![
            1 => Just(Behaviour::Swapped),
            1 => Just(Behaviour::Reordered),
            16 => any_layout_behaviour(),
        ]
        .boxed(),
        SegmentFormat::Separator => any_layout_behaviour().boxed(),
    }
}

fn any_layout_behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        6 => Just(Behaviour::Correct),
        2 => Just(Behaviour::CorrectArray),
        2 => Just(Behaviour::WrongCount),
        1 => Just(Behaviour::SeparatorInsideTranslation),
        1 => Just(Behaviour::Network),
        1 => prop::sample::select(vec![500u16, 503, 400, 408]).prop_map(Behaviour::Status),
        1 => prop::option::of(prop::sample::select(vec![0.0, 900.0, 4000.0])).prop_map(Behaviour::RateLimited),
        1 => Just(Behaviour::BadReply),
        1 => Just(Behaviour::Hang),
    ]
}

fn respond(call: &Call, behaviour: Behaviour, latency: Duration) -> Answer {
    let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
    let outcome = match behaviour {
        Behaviour::Correct => Ok(echo_reply(call)),
        Behaviour::CorrectArray => Ok(Reply::Texts(echoes)),
        Behaviour::WrongCount => Ok(Reply::Text(echoes.concat())),
        Behaviour::SeparatorInsideTranslation => {
            let sep = call.separator();
            let doubled: Vec<String> = echoes.iter().map(|e| format!("{e}{sep}{e}")).collect();
            Ok(Reply::Text(doubled.join(sep)))
        }
        Behaviour::Swapped => {
            let reversed: Vec<String> = echoes.iter().rev().cloned().collect();
            Ok(Reply::Text(layout_reply(call, &reversed)))
        }
        Behaviour::Reordered if call.markers().is_empty() => Ok(echo_reply(call)),
        Behaviour::Reordered => {
            let pairs: Vec<String> = echoes
                .iter()
                .zip(call.markers())
                .rev()
                .map(|(echo, (open, close))| format!("{open}{echo}{close}\n"))
                .collect();
            Ok(Reply::Text(pairs.concat()))
        }
        Behaviour::Network => Err(Failure::error(None, None, "fetch failed")),
        Behaviour::Status(status) => Err(http_error(status, None)),
        Behaviour::RateLimited(retry_after) => Err(http_error(429, retry_after)),
        Behaviour::BadReply => Err(Failure::bad_reply("a number")),
        Behaviour::Hang => return Answer::Hang,
    };
    Answer::After(latency, outcome)
}

struct Run {
    sim: Sim,
    tickets: Vec<(u64, String)>,
    /// Calls that never answered (and that only a timeout, the abort of all their items
    /// or `dispose` ends).
    hung: Vec<CallId>,
    /// Whether a store lookup never answered.
    store_hung: bool,
}

/// A persistent store's behaviours: a stored translation is trusted, so a hit returns
/// the item's own echo (the store is keyed by the item's full key).
#[derive(Clone, Copy, Debug)]
enum StoreBehaviour {
    Hit,
    Miss,
    Fail,
    Hang,
}

fn store_behaviour() -> impl Strategy<Value = Option<Vec<StoreBehaviour>>> {
    prop::option::of(prop::collection::vec(
        prop::sample::select(vec![
            StoreBehaviour::Hit,
            StoreBehaviour::Miss,
            StoreBehaviour::Miss,
            StoreBehaviour::Fail,
            StoreBehaviour::Hang,
        ]),
        1..8,
    ))
}

fn run(
    options: Options,
    arrivals: &[Arrival],
    script: Vec<(Behaviour, f64)>,
    store: Option<Vec<StoreBehaviour>>,
) -> Run {
    let counter = Rc::new(Cell::new(0usize));
    let hung = Rc::new(RefCell::new(Vec::new()));
    let store_hung = Rc::new(Cell::new(false));
    let (c, h) = (counter.clone(), hung.clone());
    let mut sim = Sim::new(options, move |call: &Call, _| {
        let (behaviour, latency) = script[c.get() % script.len()];
        c.set(c.get() + 1);
        let answer = respond(call, behaviour, Duration::from_millis(latency));
        if matches!(answer, Answer::Hang) {
            h.borrow_mut().push(call.id);
        }
        answer
    });
    if let Some(store) = store {
        let store_hung = store_hung.clone();
        // Keys are opaque hex: map them back to texts through the known arrivals.
        let known: Vec<(String, String)> = arrivals
            .iter()
            .map(|a| {
                let text = text_for(a.text);
                let compat = Compat {
                    provider_id: ["p0", "p1"][a.provider],
                    source_lang: "en",
                    target_lang: "de",
                    context: "",
                    llm: a.llm,
                    scope: "",
                };
                (to_hex(&item_key(&compat, &text)), text)
            })
            .collect();
        let mut n = 0usize;
        sim = sim.with_store(Box::new(move |lookup: &batch_pacer::Lookup| {
            let behaviour = store[n % store.len()];
            n += 1;
            let later = Duration::from_millis(30.0 * (n % 4) as f64);
            let text = known
                .iter()
                .find(|(k, _)| *k == lookup.key)
                .map(|(_, t)| t.clone());
            match (behaviour, text) {
                (StoreBehaviour::Hit, Some(text)) => Some((later, LookupResult::Hit(echo(&text)))),
                (StoreBehaviour::Fail, _) => {
                    Some((later, LookupResult::Failed("store down".into())))
                }
                (StoreBehaviour::Hang, _) => {
                    store_hung.set(true);
                    None
                }
                _ => Some((later, LookupResult::Miss)),
            }
        }));
    }
    let providers = ["p0", "p1"];
    let texts: Vec<String> = arrivals.iter().map(|a| text_for(a.text)).collect();
    let mut tickets = Vec::new();
    let mut aborts: Vec<(f64, u64)> = Vec::new();
    let mut at = 0.0;
    for (a, text) in arrivals.iter().zip(&texts) {
        at += a.after_ms;
        // Aborts due before this arrival happen first.
        aborts.sort_by(|x, y| x.0.total_cmp(&y.0));
        while let Some(&(when, ticket)) = aborts.first() {
            if when > at {
                break;
            }
            sim.drive_until(ms(when));
            sim.abort(ticket);
            aborts.remove(0);
        }
        sim.drive_until(ms(at));
        let it = Item {
            text,
            compat: Compat {
                provider_id: providers[a.provider],
                source_lang: "en",
                target_lang: "de",
                context: "",
                llm: a.llm,
                scope: "",
            },
            priority: a.priority,
            tokens: None,
        };
        let ticket = sim.translate(&it);
        tickets.push((ticket, text.clone()));
        if let Some(after) = a.abort_after_ms {
            aborts.push((at + after, ticket));
        }
    }
    aborts.sort_by(|x, y| x.0.total_cmp(&y.0));
    for (when, ticket) in aborts {
        sim.drive_until(ms(when));
        sim.abort(ticket);
    }
    sim.drive();
    Run {
        sim,
        tickets,
        hung: hung.take(),
        store_hung: store_hung.get(),
    }
}

fn script(layout: SegmentFormat) -> impl Strategy<Value = Vec<(Behaviour, f64)>> {
    prop::collection::vec(
        (
            behaviour(layout),
            prop::sample::select(vec![0.0, 20.0, 400.0, 2500.0]),
        ),
        1..40,
    )
}

/// The invariants of one run: at rest every item settled once with its own translation
/// (unless a call or lookup hangs with no timeout), the statistics add up, and rule 1
/// and `maxInFlight` held; after `dispose`, every item settled once.
fn check_run(
    options: Options,
    arrivals: &[Arrival],
    script: Vec<(Behaviour, f64)>,
    store: Option<Vec<StoreBehaviour>>,
) -> Result<(), TestCaseError> {
    let Run {
        mut sim,
        tickets,
        hung,
        store_hung,
    } = run(options.clone(), arrivals, script, store);
    let at_rest = sim.engine.stats();
    if options.timeout_ms > 0.0 || (hung.is_empty() && !store_hung) {
        // Nothing can wait forever: everything ended before any dispose.
        prop_assert_eq!(
            (at_rest.pending, at_rest.queued, at_rest.in_flight),
            (0, 0, 0)
        );
        sim.assert_settled_once(&tickets.iter().map(|(t, _)| *t).collect::<Vec<_>>());
    } else if !store_hung {
        // With no timeout, exactly the calls that never answered are still running, but
        // those cancelled because every item of theirs was aborted.
        let running = hung.iter().filter(|id| !sim.cancelled.contains(id)).count();
        prop_assert_eq!(at_rest.in_flight, running as u64);
    }
    // Whatever still waits (a hung call or lookup with no timeout), dispose settles it.
    sim.engine.handle_dispose();
    sim.drain();
    for (ticket, text) in &tickets {
        prop_assert_eq!(
            sim.settle_counts.get(ticket),
            Some(&1),
            "ticket {} settled wrongly",
            ticket
        );
        if let Ok(translation) = sim.result(*ticket) {
            prop_assert!(
                derived_only_from(translation, text),
                "{:?} got {:?}",
                text,
                translation
            );
        }
    }
    let s = sim.engine.stats();
    prop_assert_eq!(s.items, tickets.len() as u64);
    prop_assert_eq!(
        s.items,
        s.succeeded + s.failed + s.aborted + s.disposed + s.pending
    );
    prop_assert_eq!((s.pending, s.queued, s.in_flight), (0, 0, 0));
    prop_assert_eq!(
        s.disposed,
        at_rest.pending,
        "dispose settled exactly what was pending"
    );
    prop_assert_eq!(s.provider_calls, sim.calls.len() as u64);
    prop_assert_eq!(
        s.batch_calls,
        sim.calls.iter().filter(|c| c.is_batch).count() as u64
    );
    prop_assert_eq!(
        s.retries,
        sim.calls.iter().filter(|c| c.attempt > 0).count() as u64
    );
    prop_assert!(s.cache_hits + s.dedup_hits <= s.items);
    prop_assert!(s.fallbacks <= s.count_mismatches);
    // Rule 1: in every window, starts <= capacity + rate * window length.
    let starts: Vec<f64> = sim.starts_ms();
    for i in 0..starts.len() {
        for j in i..starts.len() {
            let allowed = options.capacity + options.rate * (starts[j] - starts[i]) / 1000.0;
            prop_assert!(
                ((j - i + 1) as f64) <= allowed + 1e-6,
                "{} starts in [{}, {}] ms exceed {}",
                j - i + 1,
                starts[i],
                starts[j],
                allowed
            );
        }
    }
    if options.max_in_flight > 0 {
        prop_assert!(sim.max_running as u64 <= options.max_in_flight);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_item_settles_once_with_its_own_translation_and_stats_add_up(
        options in random_options(SegmentFormat::Separator),
        arrivals in prop::collection::vec(arrival(), 1..60),
        script in script(SegmentFormat::Separator),
        store in store_behaviour(),
    ) {
        check_run(options, &arrivals, script, store)?;
    }

    /// The same in the markers layout, whose replies may also come back reordered.
    #[test]
    fn in_the_markers_layout_every_item_settles_once_with_its_own_translation(
        options in random_options(SegmentFormat::Markers),
        arrivals in prop::collection::vec(arrival(), 1..60),
        script in script(SegmentFormat::Markers),
        store in store_behaviour(),
    ) {
        check_run(options, &arrivals, script, store)?;
    }

    #[test]
    fn a_backlog_drains_at_exactly_rate(
        rate in prop::sample::select(vec![0.1, 0.25, 1.0, 3.0, 7.0, 8.0, 60.0]),
        capacity in 1..10u32,
        n in 1..80usize,
    ) {
        let opts = options(&[("rate", rate), ("capacity", capacity.into())]);
        let mut sim = Sim::new(opts, echo_provider(1.0));
        let texts: Vec<String> = (0..n).map(text_for).collect();
        for t in &texts {
            let mut it = item(t);
            it.compat.llm = false;
            sim.translate(&it);
        }
        sim.drive();
        for (k, start) in sim.starts_ms().iter().enumerate() {
            let owed = (k + 1).saturating_sub(capacity as usize) as f64;
            let ideal = owed / rate * 1000.0;
            // Wake-ups are rounded up to the microsecond; a full bucket cannot bank that
            // sliver, so each call may start up to 1 µs late (3 ppm at 3 calls/s).
            let slack = 0.001 * (k as f64 + 1.0);
            prop_assert!(*start >= ideal - 1e-9 && *start <= ideal + slack,
                "call {} at {} ms, ideal {} ms", k, start, ideal);
        }
    }

    /// The JS side of calls rebuilds `request.texts` as `text.split(separator)`: that is
    /// only right if the separator occurs in the joined text exactly at the joins, for
    /// any texts, including ones full of `%`, newlines and partial separators.
    #[test]
    fn splitting_the_joined_text_on_the_separator_gives_the_texts_back(
        texts in prop::collection::vec("[a%\\n \\r]{1,12}", 1..6),
    ) {
        let separator = codec::choose_separator(&texts);
        let joined = codec::join(&texts, &separator);
        let back: Vec<&str> = joined.split(separator.as_str()).collect();
        prop_assert_eq!(back, texts.iter().map(String::as_str).collect::<Vec<_>>());
    }
}
