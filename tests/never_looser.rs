//! A streamed reply is never looser than the same reply received whole, and neither puts
//! a paragraph under another paragraph's translation.
//!
//! Replies are generated the ways models damage a batch (a segment dropped or merged
//! with the next, the rest written under the markers in their order of appearance, the
//! freed last pair left out or filled with a remark of any length, text around the
//! pairs, two neighbours swapped), over paragraphs of like lengths without numbers, with
//! numbers, and labels.
//! For every beginning of each reply (every character boundary), the segments the early
//! rule resolves there must be resolved to the same text by the whole-reply reading of
//! the complete reply; and every segment either reading resolves holds its own
//! paragraph's translation.
#![cfg(not(target_arch = "wasm32"))]

use batch_pacer::early::{leading_pairs, proven_count, whole_reading};
use batch_pacer::markers::{number, pair};
use proptest::prelude::*;

const LIKE: [&str; 6] = [
    "The cat sat on the warm mat today.",
    "A dog ran across the big green park.",
    "The bird sang in the tall old tree.",
    "My friend read a long book by the sea.",
    "Her uncle sold an old red car again.",
    "We walked home under the bright moon.",
];

const NUMBERED: [&str; 6] = [
    "Room 12 is on the second floor.",
    "The train leaves at 7 each morning.",
    "She bought 3 apples at the market.",
    "Chapter 40 ends with a long storm.",
    "Bus 9 stops right outside the school.",
    "He read 250 pages over the weekend.",
];

const LABELS: [&str; 6] = ["Save", "Cancel", "Open file", "Close", "Settings", "Help"];

/// What a model writes in a freed last pair: remarks, and one of a translation's length.
const FILLERS: [&str; 4] = [
    "Let me know if you need more help.",
    "Done.",
    "Ich hoffe, das hilft dir bei der Arbeit weiter.",
    "",
];

/// A translation that keeps the words of its source (upper-cased), one that keeps
/// none (letters rotated: like lengths, no shared word), or the source's numbers only.
#[derive(Clone, Copy, Debug)]
enum Style {
    Kept,
    Unrelated,
    NumbersOnly,
}

fn translate(text: &str, style: Style) -> String {
    let rotate = |c: char| match c {
        'a'..='y' | 'A'..='Y' => char::from(c as u8 + 1),
        'z' => 'a',
        'Z' => 'A',
        other => other,
    };
    match style {
        Style::Kept => format!("«{}»", text.to_uppercase()),
        Style::Unrelated => format!("«{}»", text.chars().map(rotate).collect::<String>()),
        Style::NumbersOnly => text
            .chars()
            .map(|c| if c.is_ascii_digit() { c } else { rotate(c) })
            .collect(),
    }
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    None,
    Drop(usize),
    Merge(usize),
    /// Two neighbours' translations in each other's place, markers kept in order.
    Swap(usize),
}

#[derive(Debug)]
struct Case {
    texts: Vec<&'static str>,
    style: Style,
    fault: Fault,
    filler: Option<&'static str>,
    remark_after: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let pools = prop_oneof![Just(&LIKE), Just(&NUMBERED), Just(&LABELS)];
    (
        pools,
        2usize..=6,
        0usize..6,
        prop_oneof![
            Just(Style::Kept),
            Just(Style::Unrelated),
            Just(Style::NumbersOnly)
        ],
        0usize..4,
        0usize..6,
        prop::option::of(0usize..FILLERS.len()),
        any::<bool>(),
    )
        .prop_map(|(pool, n, start, style, fault, at, filler, remark_after)| {
            let texts: Vec<&'static str> = (0..n).map(|i| pool[(start + i) % 6]).collect();
            let at = at % n.saturating_sub(1).max(1);
            let fault = match fault {
                0 => Fault::None,
                1 => Fault::Drop(at),
                2 => Fault::Merge(at),
                _ => Fault::Swap(at),
            };
            Case {
                texts,
                style,
                fault,
                filler: filler.map(|f| FILLERS[f]),
                remark_after,
            }
        })
}

/// The reply: the pieces the model wrote, in order, under the batch's markers in their
/// order of appearance (a shift renumbers by position).
fn reply(case: &Case) -> String {
    let n = case.texts.len();
    let t = |i: usize| translate(case.texts[i], case.style);
    let mut pieces: Vec<String> = Vec::new();
    let mut i = 0;
    while i < n {
        match case.fault {
            Fault::Drop(j) if j == i => {}
            Fault::Merge(j) if j == i && i + 1 < n => {
                pieces.push(format!("{} {}", t(i), t(i + 1)));
                i += 1;
            }
            _ => pieces.push(t(i)),
        }
        i += 1;
    }
    if let Fault::Swap(j) = case.fault {
        if j + 1 < pieces.len() {
            pieces.swap(j, j + 1);
        }
    }
    if pieces.len() < n {
        if let Some(filler) = case.filler {
            pieces.push(filler.to_owned());
        }
    }
    let mut out = String::from("Here are the translations:\n");
    for (k, piece) in pieces.iter().enumerate() {
        let (open, close) = pair("s", number(k));
        out.push_str(&format!("{open}{piece}{close}\n"));
    }
    if case.remark_after {
        out.push_str("I hope this helps!");
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_stream_resolves_nothing_the_whole_reply_would_not_and_nothing_misplaced(case in case()) {
        let texts = case.texts.clone();
        let reply = reply(&case);
        let whole = whole_reading(&texts, &reply, "s", None);
        let own: Vec<String> = texts.iter().map(|t| translate(t, case.style)).collect();
        if matches!((case.fault, case.style), (Fault::None, Style::Kept)) {
            // Faithful, each keeping its source's words: every paragraph is proven.
            prop_assert!(whole.iter().all(Option::is_some), "{:?} of {}", whole, reply);
        }
        // A swap whose translations keep no word is a wrong translation that no layout
        // can tell from a right one; every other damage must misplace nothing.
        let keeps_nothing = match case.style {
            Style::Kept => false,
            Style::Unrelated => true,
            Style::NumbersOnly => !texts.iter().any(|t| t.bytes().any(|b| b.is_ascii_digit())),
        };
        let undecidable = matches!(case.fault, Fault::Swap(_)) && keeps_nothing;
        for (i, translation) in whole.iter().enumerate() {
            if let (Some(translation), false) = (translation, undecidable) {
                prop_assert_eq!(translation, &own[i], "whole reply, paragraph {}: {}", i, reply);
            }
        }
        for end in (0..=reply.len()).filter(|&end| reply.is_char_boundary(end)) {
            let run = leading_pairs(&reply[..end], "s");
            let count = proven_count(&texts, &run, None).min(run.closed.len());
            for (i, closed) in run.closed.iter().enumerate().take(count) {
                prop_assert_eq!(
                    whole[i].as_deref(),
                    Some(*closed),
                    "paragraph {} resolved early at {} of {:?}", i, end, reply
                );
            }
        }
    }
}

#[test]
fn a_faithful_stream_that_keeps_words_resolves_paragraphs_before_its_end() {
    let texts = &LIKE[..4];
    let case = Case {
        texts: texts.to_vec(),
        style: Style::Kept,
        fault: Fault::None,
        filler: None,
        remark_after: false,
    };
    let reply = reply(&case);
    // Up to the opening of the last pair: the first paragraphs are proven already.
    let last_open = reply.find(&pair("s", number(3)).0).unwrap();
    let run = leading_pairs(&reply[..last_open + 8], "s");
    assert!(proven_count(texts, &run, None) >= 2, "{run:?}");
}

#[test]
fn the_hostile_hours_four_paragraphs_stream_no_misplaced_paragraph() {
    // Like lengths, no numbers: the second dropped, the others under the first three
    // markers, streamed in 5-character pieces; then with a remark in the freed pair.
    let texts = &LIKE[..4];
    for filler in [None, Some("Let me know if you need more help.")] {
        let case = Case {
            texts: texts.to_vec(),
            style: Style::Unrelated,
            fault: Fault::Drop(1),
            filler,
            remark_after: false,
        };
        let reply = reply(&case);
        let mut end = 0;
        while end < reply.len() {
            end = (end + 5).min(reply.len());
            while !reply.is_char_boundary(end) {
                end += 1;
            }
            let run = leading_pairs(&reply[..end], "s");
            let count = proven_count(texts, &run, None).min(run.closed.len());
            for (closed, text) in run.closed.iter().zip(texts).take(count) {
                assert_eq!(*closed, translate(text, Style::Unrelated));
            }
        }
        let whole = whole_reading(texts, &reply, "s", None);
        assert!(whole.iter().all(Option::is_none), "{whole:?}");
    }
}
