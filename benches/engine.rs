//! Core benchmark: cost per item through the engine and bytes held per queued item.
//!
//! `cargo bench --bench engine` prints, for 10,000 and 100,000 paragraphs (200 chars,
//! 5 compatibility keys, an instant provider, unlimited rate), the median of 5 runs of the
//! engine side by side with a floor that does only the unavoidable work (the in-memory key
//! of each item, and joining and splitting its batch), then the heap bytes held per
//! queued item with 100,000 queued.

// The allocation counter is a `GlobalAlloc`, which only unsafe code can implement.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant as Clock;

use batch_pacer::codec::{choose_separator, join, split};
use batch_pacer::drive::VirtualTime;
use batch_pacer::key::Keyer;
use batch_pacer::{Compat, Duration, Engine, Instant, Item, OptionValue, Options, Output, Reply};

/// Counts live heap bytes, to measure what the engine holds per queued item.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const KEYS: [&str; 5] = ["de", "fr", "es", "ja", "zh"];

fn paragraphs(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut text = format!("Paragraph {i} of the article. ");
            while text.len() < 200 {
                text.push_str("Lorem ipsum dolor sit amet. ");
            }
            text.truncate(200);
            text
        })
        .collect()
}

fn item<'a>(text: &'a str, i: usize) -> Item<'a> {
    Item {
        text,
        compat: Compat {
            provider_id: "bench",
            source_lang: "en",
            target_lang: KEYS[i % KEYS.len()],
            context: "",
            llm: true,
            scope: "",
        },
        priority: 0.0,
        tokens: None,
    }
}

fn options(pairs: &[(&str, f64)]) -> Options {
    let patch: Vec<(&str, OptionValue)> = pairs
        .iter()
        .map(|(k, v)| (*k, OptionValue::Number(*v)))
        .collect();
    Options::default().patched(&patch).expect("valid")
}

/// Every item through the engine; the provider answers each call at once.
fn engine_run(texts: &[String]) -> usize {
    let opts = options(&[("rate", 1e12), ("capacity", 1e12), ("cacheEntries", 0.0)]);
    let mut engine: Engine<()> = Engine::new(opts, Instant::ZERO, 1);
    let now = Instant::ZERO;
    let mut settled = 0;
    let mut drain = |engine: &mut Engine<()>| {
        while let Some(output) = engine.poll_output() {
            match output {
                Output::Call(call) => {
                    let reply = Reply::Text(call.text.clone());
                    engine.handle_response(now, call.id, Ok(reply));
                }
                Output::Settled(_) => settled += 1,
                _ => {}
            }
        }
    };
    for (i, text) in texts.iter().enumerate() {
        let _ = engine.handle_translate(now, &item(text, i));
        drain(&mut engine);
    }
    engine.handle_timeout(Instant::from_millis(1000.0));
    drain(&mut engine);
    assert_eq!(settled, texts.len());
    settled
}

/// A backlog queued at once and drained at a rate limit (1,000 calls a second, burst 1)
/// on virtual time, one compatibility group; with `mixed`, about 2 items in 7 have
/// priority 1, so most calls take items from several due batches.
fn backlog_run(texts: &[String], mixed: bool) -> usize {
    let opts = options(&[("rate", 1000.0), ("capacity", 1.0), ("cacheEntries", 0.0)]);
    let mut engine: Engine<()> = Engine::new(opts, Instant::ZERO, 1);
    for (i, text) in texts.iter().enumerate() {
        let mut it = item(text, 0);
        it.priority = if mixed && (i * 2_654_435_761) % 7 < 2 {
            1.0
        } else {
            0.0
        };
        let _ = engine.handle_translate(Instant::ZERO, &it);
    }
    let mut settled = 0;
    VirtualTime::new(Instant::ZERO).run(&mut engine, |time, engine| {
        while let Some(output) = engine.poll_output() {
            match output {
                Output::Call(call) => {
                    let reply = Reply::Texts(call.texts.clone());
                    time.answer(call.id, Duration::ZERO, Ok(reply));
                }
                Output::Settled(_) => settled += 1,
                _ => {}
            }
        }
    });
    assert_eq!(settled, texts.len());
    settled
}

fn backlog_equal(texts: &[String]) -> usize {
    backlog_run(texts, false)
}

fn backlog_mixed(texts: &[String]) -> usize {
    backlog_run(texts, true)
}

/// The unavoidable work: key every item (as the engine does, with a keyer primed once
/// per compatibility group), join and split every batch of 4.
fn floor_run(texts: &[String]) -> usize {
    let keyer = Keyer::new(1);
    let primed: Vec<Keyer> = (0..KEYS.len())
        .map(|k| keyer.primed(&item("", k).compat))
        .collect();
    let mut out = 0;
    for (i, chunk) in texts.chunks(4).enumerate() {
        for (j, text) in chunk.iter().enumerate() {
            black_box(primed[(i * 4 + j) % KEYS.len()].key(text));
        }
        let separator = choose_separator(chunk);
        let joined = join(chunk, &separator);
        out += split(&joined, &separator, chunk.len(), true).map_or(0, |s| s.len());
    }
    out
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn per_item_ns(run: fn(&[String]) -> usize, texts: &[String]) -> f64 {
    let started = Clock::now();
    black_box(run(black_box(texts)));
    started.elapsed().as_nanos() as f64 / texts.len() as f64
}

fn bytes_per_queued_item(texts: &[String]) -> f64 {
    // A bucket that never refills: everything after the first call stays queued.
    let opts = options(&[("rate", 1e-9), ("capacity", 1.0), ("batchDelayMs", 1e9)]);
    let before = LIVE.load(Ordering::Relaxed);
    let mut engine: Engine<()> = Engine::new(opts, Instant::ZERO, 1);
    for (i, text) in texts.iter().enumerate() {
        let _ = engine.handle_translate(Instant::ZERO, &item(text, i));
    }
    while engine.poll_output().is_some() {}
    let held = LIVE.load(Ordering::Relaxed) - before;
    let queued = engine.stats().queued as f64;
    drop(engine);
    held as f64 / queued
}

fn main() {
    println!("batch-pacer core benchmark (median of 5 runs, engine and floor alternating)");
    println!(
        "{:>8} | {:>14} | {:>14} | {:>12}",
        "items", "engine ns/item", "floor ns/item", "engine/floor"
    );
    let mut per_item = Vec::new();
    for n in [10_000usize, 100_000] {
        let texts = paragraphs(n);
        let (mut engine, mut floor) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            engine.push(per_item_ns(engine_run, &texts));
            floor.push(per_item_ns(floor_run, &texts));
        }
        let (e, f) = (median(engine), median(floor));
        per_item.push(e);
        println!("{n:>8} | {e:>14.0} | {f:>14.0} | {:>11.2}x", e / f);
    }
    println!(
        "linearity: per-item cost at 100k / at 10k = {:.2}",
        per_item[1] / per_item[0]
    );
    for n in [4_000usize, 16_000] {
        let texts = paragraphs(n);
        let (mut equal, mut mixed) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            equal.push(per_item_ns(backlog_equal, &texts));
            mixed.push(per_item_ns(backlog_mixed, &texts));
        }
        let (e, m) = (median(equal), median(mixed));
        println!(
            "backlog of {n} drained at a rate limit: {e:.0} ns/item with equal priorities, {m:.0} with mixed ({:.2}x)",
            m / e
        );
    }
    let texts = paragraphs(100_000);
    let bytes = bytes_per_queued_item(&texts);
    println!("memory: {bytes:.0} bytes held per queued item with 100,000 queued (200-byte texts)");
}
