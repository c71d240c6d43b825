//! Runs 100,000 paragraphs (or the count given) through the engine as section 1 of the
//! package benchmarks does through the JS API: one call per paragraph (`batchDelayMs` 0),
//! every paragraph submitted before any reply, 200-byte texts over four target
//! languages, echo replies. For a profiler:
//! `valgrind --tool=callgrind target/release/examples/profile_single 100000`.
use batch_pacer::{Compat, Engine, Instant, Item, Options, Output, Reply};

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let mut engine: Engine<()> = Engine::new(
        Options {
            rate: 1e9,
            capacity: 1e9,
            batch_delay_ms: 0.0,
            cache_entries: 0,
            ..Options::default()
        },
        Instant::ZERO,
        1,
    );
    let filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(5);
    let texts: Vec<String> = (0..count)
        .map(|i| {
            let mut text = format!("Paragraph {i} of the article. {filler}");
            text.truncate(200);
            text
        })
        .collect();
    let languages = ["de", "fr", "es", "ja"];
    let mut calls = Vec::with_capacity(count);
    for (i, text) in texts.iter().enumerate() {
        let item = Item {
            text,
            compat: Compat {
                provider_id: "bench",
                source_lang: "en",
                target_lang: languages[i % languages.len()],
                context: "",
                llm: true,
                scope: "",
            },
            priority: 0.0,
            tokens: None,
        };
        let _ = engine.handle_translate(Instant::ZERO, &item);
        while let Some(output) = engine.poll_output() {
            if let Output::Call(call) = output {
                calls.push((call.id, call.text));
            }
        }
    }
    assert_eq!(calls.len(), count, "one call per paragraph");
    let mut settled = 0;
    for (id, text) in calls {
        engine.handle_response(Instant::ZERO, id, Ok(Reply::Text(text)));
        while let Some(output) = engine.poll_output() {
            settled += usize::from(matches!(output, Output::Settled(_)));
        }
    }
    assert_eq!(settled, count);
}
