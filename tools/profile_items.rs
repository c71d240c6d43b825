//! Runs 20,000 paragraphs through the engine in the default (markers) layout with an
//! echoing provider, for a profiler: `valgrind --tool=callgrind target/release/examples/profile_items`.
//! With the argument `translated`, each reply differs from its call's text inside every
//! segment ("ipsum" becomes "ipsvm"), as a translation does: no segment equals its
//! paragraph, so none takes the shortcut for text the model left as it was.
use batch_pacer::{Compat, Engine, Instant, Item, Options, Output, Reply};

fn main() {
    let mut engine: Engine<()> = Engine::new(
        Options {
            rate: 1e12,
            capacity: 1e12,
            cache_entries: 0,
            ..Options::default()
        },
        Instant::ZERO,
        1,
    );
    let texts: Vec<String> = (0..20_000)
        .map(|i| format!("Paragraph {i}: {}", "lorem ipsum dolor sit amet ".repeat(7)))
        .collect();
    let translated = std::env::args().nth(1).as_deref() == Some("translated");
    let reply = |text: &str| {
        Reply::Text(if translated {
            text.replace("ipsum", "ipsvm")
        } else {
            text.to_owned()
        })
    };
    let mut settled = 0;
    for text in &texts {
        let item = Item {
            text,
            compat: Compat {
                provider_id: "p",
                source_lang: "en",
                target_lang: "de",
                context: "",
                llm: true,
                scope: "",
            },
            priority: 0.0,
            tokens: None,
        };
        let _ = engine.handle_translate(Instant::ZERO, &item);
        settled += answer_all(&mut engine, Instant::ZERO, &reply);
    }
    engine.handle_timeout(Instant::from_millis(1000.0));
    settled += answer_all(&mut engine, Instant::from_millis(1000.0), &reply);
    assert_eq!(settled, texts.len());
}

/// Answers every call the engine starts at once; the number of items that settled.
fn answer_all(engine: &mut Engine<()>, now: Instant, reply: &dyn Fn(&str) -> Reply) -> usize {
    let mut settled = 0;
    while let Some(output) = engine.poll_output() {
        match output {
            Output::Call(call) => engine.handle_response(now, call.id, Ok(reply(&call.text))),
            Output::Settled(_) => settled += 1,
            _ => {}
        }
    }
    settled
}
