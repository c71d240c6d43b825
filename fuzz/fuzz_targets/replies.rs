//! Reading replies in the markers layout, whole and streamed in pieces.
//!
//! One batch of 2..=6 paragraphs goes out; the fuzzer plays a model that answers its first
//! call the ways models damage a batch: per segment it translates, drops, merges with the
//! next or splits; it labels what it writes by copying each segment's own markers, by
//! counting (`<s1>`, `<s2>` …) or by position (the call's markers in their order); it may
//! swap two segments, leave one empty, fill a freed last position with a remark, think
//! aloud first (a `<think>` draft holding markers) and add text around the pairs. The reply
//! arrives whole (a string, an array or an object by id) or streamed in pieces of fuzzed
//! sizes, and the stream may break; or the reply cannot be read at all (a failed call), or
//! the stream never ends (reasoning on and on after its text), which the length cap must
//! cut. Every later call is answered correctly.
//!
//! Properties: every item settles exactly once; an item that resolves gets its own
//! translation (or a remark the model wrote in its place), never another paragraph's
//! text; at rest nothing is pending, queued or in flight; and a streamed reply resolves
//! early, at any of its beginnings, only what the same reply read whole resolves to the
//! same text.
//!
//! Known limits (docs/reference.md, Rules 18 and 19), skipped with `FUZZ_SKIP_KNOWN`:
//! `count-preserving` (labels by position, or an array, that keep the count: a split plus
//! a merge or drop among paragraphs of like lengths leaves no trace), `positional-shift`
//! (a stream labelled by position after a drop, merge or split that the lengths do not
//! show resolves early what only the end shows), `two-segment-fill` (of two segments,
//! merged into the first pair with a remark of fitting length in the second: no other
//! segment's ratio tells the remark from a translation), `positional-swap` (two
//! translations swapped under markers kept in order: a wrong translation that no layout
//! can tell from a right one). The translations here keep their paragraph's number and
//! words, which the proof now reads as evidence (docs/reference.md, Rule 17): a 300-second run with
//! none of these skipped (`FUZZ_SKIP_KNOWN=none`) found none of them.
#![no_main]

mod common;

use std::collections::HashMap;

use batch_pacer::drive::{StreamValue, VirtualTime};
use batch_pacer::options::SegmentFormat;
use batch_pacer::{
    early, Call, Duration, Engine, Failure, Instant, OptionValue, Options, Output, Reply, Ticket,
};
use common::Bytes;
use libfuzzer_sys::fuzz_target;

/// A translation that shows whose it is.
fn echo(text: &str) -> String {
    format!("«{}»", text.trim())
}

/// What a model writes in a freed last position instead of a translation. Given to an
/// item whose length it fits, it is a wrong translation, not another paragraph's text:
/// no reading of the reply can tell it from a translation (docs/reference.md, Rules 14–19).
const FILLERS: [&str; 4] = ["", "I hope this helps!", "Done.", "«»"];

/// What the model does with one source segment.
#[derive(Clone, Copy, PartialEq)]
enum Act {
    Translate,
    Drop,
    MergeWithNext,
    Split,
}

/// How the model labels what it writes.
#[derive(Clone, Copy, PartialEq)]
enum Labels {
    /// Each piece under its own segment's markers.
    Copy,
    /// `<tag1>`, `<tag2>` … by count.
    Count,
    /// The call's markers in their order, whatever the piece holds.
    Position,
}

/// One piece the model writes: its text and the segment whose markers it copies.
struct Piece {
    text: String,
    source: usize,
}

fn tag_of(call: &Call) -> String {
    call.markers()[0]
        .0
        .trim_matches(['<', '>'])
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned()
}

/// The first call's reply as the model writes it, and whether it holds a known limit.
fn damaged(
    call: &Call,
    bytes: &mut Bytes,
    streamed: bool,
    listed: bool,
) -> (String, Vec<String>, bool) {
    let n = call.texts.len();
    let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
    let labels = match bytes.u8() % 3 {
        0 => Labels::Copy,
        1 => Labels::Count,
        _ => Labels::Position,
    };
    let mut pieces: Vec<Piece> = Vec::new();
    // A drop, merge or split: under numbers copied by position, only the end of a stream
    // shows it where lengths do not.
    let mut shifted = false;
    let mut i = 0;
    while i < n {
        let act = match bytes.u8() % 8 {
            5 => Act::Drop,
            6 => Act::MergeWithNext,
            7 => Act::Split,
            _ => Act::Translate,
        };
        match act {
            Act::Translate => pieces.push(Piece {
                text: echoes[i].clone(),
                source: i,
            }),
            Act::Drop => shifted = true,
            Act::MergeWithNext if i + 1 < n => {
                shifted = true;
                pieces.push(Piece {
                    text: format!("{} {}", echoes[i], echoes[i + 1]),
                    source: i,
                });
                i += 1;
            }
            Act::MergeWithNext => pieces.push(Piece {
                text: echoes[i].clone(),
                source: i,
            }),
            Act::Split => {
                shifted = true;
                let chars: Vec<char> = echoes[i].chars().collect();
                let mid = chars.len() / 2;
                for half in [&chars[..mid], &chars[mid..]] {
                    pieces.push(Piece {
                        text: half.iter().collect(),
                        source: i,
                    });
                }
            }
        }
        i += 1;
    }
    // Two neighbours in each other's place, each under its own markers. Not the halves
    // of a split: a segment written in two parts with another between them shows only
    // when its second part comes (docs/reference.md, Rule 19), after its first may have resolved.
    let split = pieces.windows(2).any(|w| w[0].source == w[1].source);
    let mut swapped = false;
    if bytes.u8() % 6 == 0 && pieces.len() >= 2 && !split {
        swapped = true;
        let at = usize::from(bytes.u8()) % (pieces.len() - 1);
        pieces.swap(at, at + 1);
    }
    if bytes.u8() % 6 == 0 && !pieces.is_empty() {
        let at = usize::from(bytes.u8()) % pieces.len();
        pieces[at].text.clear();
    }
    // A freed last position filled with something that is not a translation.
    let mut filled = false;
    if bytes.u8() % 4 == 0 && pieces.len() < n {
        filled = true;
        let fill = FILLERS[usize::from(bytes.u8()) % FILLERS.len()];
        pieces.push(Piece {
            text: fill.to_owned(),
            source: pieces.len(),
        });
    }

    // An array (or an object keyed by the call's ids in order) is positional whatever
    // the model meant.
    let positional = labels == Labels::Position || listed;
    let known = positional
        && ((pieces.len() == n && common::skip_known("count-preserving"))
            || (streamed && shifted && common::skip_known("positional-shift")))
        || (n == 2 && filled && common::skip_known("two-segment-fill"))
        || (positional && swapped && common::skip_known("positional-swap"));

    let tag = tag_of(call);
    let label = |position: usize, piece: &Piece| -> (String, String) {
        match labels {
            Labels::Copy => call
                .markers()
                .get(piece.source)
                .cloned()
                .unwrap_or_else(|| (format!("<{tag}999>"), format!("</{tag}999>"))),
            Labels::Count => (
                format!("<{tag}{}>", position + 1),
                format!("</{tag}{}>", position + 1),
            ),
            Labels::Position => call
                .markers()
                .get(position)
                .cloned()
                .unwrap_or_else(|| (format!("<{tag}998>"), format!("</{tag}998>"))),
        }
    };
    let mut reply = String::new();
    if bytes.u8() % 5 == 0 {
        // A draft that holds markers, thought aloud before the answer.
        reply.push_str("<think>");
        for (k, piece) in pieces.iter().enumerate().rev() {
            let (open, close) = label(k, piece);
            reply.push_str(&format!("{open}draft {}{close}\n", piece.text));
        }
        reply.push_str("</think>\n");
    }
    if bytes.bool() {
        reply.push_str("Here are the translations:\n");
    }
    for (k, piece) in pieces.iter().enumerate() {
        let (open, close) = label(k, piece);
        reply.push_str(&format!("{open}{}{close}\n", piece.text));
    }
    if bytes.bool() {
        reply.push_str(&common::Bytes::new(bytes.take(24)).string(24));
    }
    let listed = pieces.into_iter().map(|p| p.text).collect();
    (reply, listed, known)
}

/// The correct reply to a later call.
fn correct(call: &Call) -> Reply {
    let echoes: Vec<String> = call.texts.iter().map(|t| echo(t)).collect();
    if !call.is_batch {
        return Reply::Text(echoes[0].clone());
    }
    let mut reply = String::new();
    for (text, (open, close)) in echoes.iter().zip(call.markers()) {
        reply.push_str(&format!("{open}{text}{close}\n"));
    }
    Reply::Text(reply)
}

/// A stream of `reply` is never looser than the reply received whole: at every beginning
/// (every character boundary), what the early rule resolves, the whole reading of the
/// complete reply resolves to the same text.
fn assert_never_looser(texts: &[String], reply: &str, tag: &str) {
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let whole = early::whole_reading(&texts, reply, tag, None);
    for end in (0..=reply.len()).filter(|&end| reply.is_char_boundary(end)) {
        let run = early::leading_pairs(&reply[..end], tag);
        let count = early::proven_count(&texts, &run, None).min(run.closed.len());
        for (i, closed) in run.closed.iter().enumerate().take(count) {
            assert_eq!(
                whole[i].as_deref(),
                Some(*closed),
                "segment {i} resolved early at byte {end} of {reply:?}, not so whole"
            );
        }
    }
}

/// Splits `reply` into pieces of fuzzed sizes (at character boundaries).
fn pieces_of(reply: &str, bytes: &mut Bytes) -> Vec<String> {
    let chars: Vec<char> = reply.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let len = 1 + usize::from(bytes.u8() % 24);
        let end = (at + len).min(chars.len());
        out.push(chars[at..end].iter().collect());
        at = end;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes::new(data);
    let words = [
        "Hello",
        "World wide",
        "A longer paragraph of words",
        "12 apples",
        "Hi",
        "The end.",
        "x",
        "Überall & <s1> tags",
    ];
    let n = 2 + usize::from(bytes.u8() % 5);
    let mut texts: Vec<String> = Vec::new();
    for k in 0..n {
        let text = if bytes.u8() % 4 == 0 {
            bytes.string(40)
        } else {
            words[usize::from(bytes.u8()) % words.len()].to_owned()
        };
        // Distinct paragraphs of a dozen characters or more, one batch of `n` items:
        // length evidence cannot judge a paragraph of a character or two (docs/reference.md, Rules
        // 17 and 18), and pages rarely send one alone.
        texts.push(format!("{k} paragraph {text}"));
    }
    let patch = [
        ("maxItemsPerBatch", OptionValue::Number(n as f64)),
        ("maxCharactersPerBatch", OptionValue::Number(100_000.0)),
        ("baseRetryDelayMs", OptionValue::Number(10.0)),
        ("timeoutMs", OptionValue::Number(1000.0)),
    ];
    let options = Options {
        segment_format: SegmentFormat::Markers,
        ..Options::default()
    }
    .patched(&patch)
    .expect("valid options");
    let mut engine: Engine<()> = Engine::new(options, Instant::ZERO, bytes.u64());
    let mut own: HashMap<Ticket, String> = HashMap::new();
    for text in &texts {
        let ticket = engine
            .handle_translate(Instant::ZERO, &common::item(text, 0.0))
            .expect("a valid item");
        own.insert(ticket, echo(text));
    }

    // 0, 1: streamed (1 breaks); 2: a whole string; 3: an array or object; 4: a reply
    // that cannot be read (a failed call); 5: a stream that never ends (reasoning on and
    // on after its text), which the length cap must cut. The last two come from the
    // byte's high bits, so that the committed corpus reads as it did.
    let raw = bytes.u8();
    let form = match raw >> 4 {
        15 => 4,
        14 => 5,
        _ => raw % 4,
    };
    let streamed = form == 0 || form == 1;
    let break_at = (form == 1).then(|| usize::from(bytes.u8()));
    let mut first = true;
    let mut known = false;
    let mut settles: HashMap<Ticket, u32> = HashMap::new();
    let mut misplaced: Vec<String> = Vec::new();
    // The endless stream: its call, when the cap cut it (a cancel), and its last value.
    let mut endless: Option<(batch_pacer::CallId, Option<Instant>, Instant)> = None;
    let mut clock: VirtualTime<()> = VirtualTime::new(Instant::ZERO);
    let step = Duration::from_millis(5.0);
    clock.run(&mut engine, |clock, engine| {
        while let Some(output) = engine.poll_output() {
            match output {
                Output::Cancel(id) => {
                    if let Some((call, cut @ None, _)) = &mut endless {
                        if *call == id {
                            *cut = Some(clock.now);
                        }
                    }
                }
                Output::Call(call) => {
                    if !(first && call.is_batch) {
                        clock.answer(call.id, step, Ok(correct(&call)));
                        continue;
                    }
                    first = false;
                    let (reply, listed, limit) = damaged(&call, &mut bytes, streamed, form == 3);
                    if std::env::var_os("FUZZ_TRACE").is_some() {
                        eprintln!(
                            "texts {:?}\nform {form}, reply {reply:?}, listed {listed:?}",
                            call.texts
                        );
                    }
                    known = limit;
                    if streamed && !reply.contains("<think>") {
                        assert_never_looser(&call.texts, &reply, &tag_of(&call));
                    }
                    match form {
                        0 | 1 => {
                            let pieces = pieces_of(&reply, &mut bytes);
                            let cut = break_at.map_or(pieces.len(), |at| at.min(pieces.len()));
                            for (k, piece) in pieces.into_iter().take(cut).enumerate() {
                                let after = Duration::from_millis(1.0 + k as f64);
                                clock.stream(call.id, after, StreamValue::Text(piece));
                            }
                            let after = Duration::from_millis(2.0 + cut as f64);
                            if break_at.is_some() {
                                let reset = Failure::error(None, None, "connection reset");
                                clock.answer(call.id, after, Err(reset));
                            } else {
                                clock.stream(call.id, after, StreamValue::End);
                            }
                        }
                        2 => clock.answer(call.id, step, Ok(Reply::Text(reply))),
                        4 => {
                            let unreadable = Failure::bad_reply("its reply could not be read");
                            clock.answer(call.id, step, Err(unreadable));
                        }
                        5 => {
                            // Far more than any cap allows (reasoning included), 1 ms apart.
                            let cap = engine.reply_cap(call.id).unwrap_or(usize::MAX);
                            let draft =
                                "<think>".to_owned() + &"a thought that goes on ".repeat(40);
                            let values = (cap.saturating_mul(6) / draft.len()).clamp(1, 200_000);
                            let mut last = clock.now;
                            for k in 0..values {
                                let after = Duration::from_millis(1.0 + k as f64);
                                let value = if k == 0 {
                                    format!("{reply}{draft}")
                                } else {
                                    draft.clone()
                                };
                                clock.stream(call.id, after, StreamValue::Text(value));
                                last = clock.now + after;
                            }
                            endless = Some((call.id, None, last));
                        }
                        _ => {
                            let keyed = bytes.bool();
                            let reply = if keyed {
                                // Keyed by position: entries past the batch get ids it lacks.
                                let pairs = listed
                                    .into_iter()
                                    .enumerate()
                                    .map(|(k, text)| {
                                        let id = call.ids.get(k).cloned();
                                        (id.unwrap_or_else(|| (k + 1).to_string()), text)
                                    })
                                    .collect();
                                Reply::Keyed(pairs)
                            } else {
                                Reply::Texts(listed)
                            };
                            clock.answer(call.id, step, Ok(reply));
                        }
                    }
                }
                Output::Settled(settled) => {
                    let count = settles.entry(settled.ticket).or_default();
                    *count += 1;
                    assert_eq!(*count, 1, "ticket {} settled twice", settled.ticket);
                    if let Ok(text) = &settled.result {
                        let want = &own[&settled.ticket];
                        if text != want && !FILLERS.contains(&text.as_str()) {
                            misplaced.push(format!("{text:?} instead of {want:?}"));
                        }
                    }
                }
                _ => {}
            }
        }
    });
    assert!(
        misplaced.is_empty() || known,
        "items got another paragraph's translation: {misplaced:?}"
    );
    for ticket in own.keys() {
        assert_eq!(
            settles.get(ticket),
            Some(&1),
            "ticket {ticket} never settled"
        );
    }
    let stats = engine.stats();
    assert_eq!((stats.pending, stats.queued, stats.in_flight), (0, 0, 0));
    if let Some((_, cut, last)) = endless {
        // Cut at the cap, not left to run until its values ran out (then a timeout).
        assert!(
            cut.is_some_and(|at| at < last),
            "a stream that never ends was not cut by its length cap"
        );
    }
});
