//! Bad batch replies in the forms real models produce, each driven through the engine on
//! virtual time: the provider answers the first call (a batch of 3 or 4 paragraphs) with
//! the bad reply and every later call correctly.
//!
//! Every form must end in one of two ways, never in a wrong paragraph:
//! - refused: the codec reports a mismatch (count or empty segment), the same batch is
//!   sent again, and each item gets exactly its own translation;
//! - accepted: the reply is mapped one to one and each item gets its own translation
//!   (exactly, or, for the `Decorated` forms, its own translation with the model's
//!   decoration left around it or its own untranslated text: the codec cannot tell those
//!   from a translation, but they stay under the right paragraph).
//!
//! Each form records what the codec does today (printed with `--nocapture`); a codec that
//! learns to parse a `Refused` form exactly, or to refuse a `Decorated` one, still passes.
//! The `Tolerated` forms are the ones the contract promises to accept.
//!
//! Forms with the right count that do not map one to one (a preamble plus a merged
//! pair, a repeated or swapped segment) are refused by the alignment checks when they
//! leave evidence: their tests demand that no item ever gets another item's paragraph.
//! The forms that leave none are the separator layout's known limit: their tests pin
//! the misassignment they cause today (see "the separator layout's limit" below).
#![cfg(not(target_arch = "wasm32"))]

mod sim;

use std::cell::Cell;
use std::rc::Rc;

use batch_pacer::{Call, Instant, Reply};
use sim::*;

const FOUR: [&str; 4] = [
    "The committee met on Tuesday to discuss the budget.",
    "Prices rose by 50% over the last year.",
    "Contact the support team if the problem persists.",
    "Thank you for reading this article.",
];

const THREE: [&str; 3] = [
    "Click the button to start the download.",
    "The file is about 20 MB in size.",
    "Restart the application when it is done.",
];

/// What the codec does with a form today, and so what the test allows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Refused and retried (or, if the codec learns the form, parsed exactly).
    Refused,
    /// Accepted exactly: the contract tolerates the form.
    Tolerated,
    /// Accepted with the model's decoration kept around each item's own translation (or
    /// the item's own text left untranslated); or refused and retried.
    Decorated,
}

/// The segments of the correct reply.
fn translations(call: &Call) -> Vec<String> {
    call.texts.iter().map(|t| echo(t)).collect()
}

/// One bad reply form: a name, what it must lead to, and the reply built from the call.
struct Form {
    name: &'static str,
    texts: &'static [&'static str],
    expect: Expect,
    reply: fn(&Call) -> Reply,
}

fn text(s: String) -> Reply {
    Reply::Text(s)
}

fn sep_line(call: &Call) -> &str {
    call.separator().trim()
}

const FORMS: &[Form] = &[
    Form {
        name: "one separator missing (blank line instead)",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let t = translations(c);
            text(format!(
                "{}\n\n{}{}{}{}{}",
                t[0],
                t[1],
                c.separator(),
                t[2],
                c.separator(),
                t[3]
            ))
        },
    },
    Form {
        name: "every separator missing",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| text(translations(c).join("\n\n")),
    },
    Form {
        name: "an extra separator splitting one translation in two",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let mut t = translations(c);
            let second = t[1].clone();
            let (a, b) = second.split_at(second.len() / 2);
            t.splice(1..2, [a.to_owned(), b.to_owned()]);
            text(t.join(c.separator()))
        },
    },
    Form {
        name: "a doubled separator (empty segment between)",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let t = translations(c);
            let s = c.separator();
            text(format!("{}{s}{s}{}{s}{}{s}{}", t[0], t[1], t[2], t[3]))
        },
    },
    Form {
        name: "numbered list instead of separators",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let lines: Vec<String> = translations(c)
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{}. {t}", i + 1))
                .collect();
            text(lines.join("\n"))
        },
    },
    Form {
        name: "numbered list with the separators kept",
        texts: &FOUR,
        expect: Expect::Decorated,
        reply: |c| {
            let lines: Vec<String> = translations(c)
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{}. {t}", i + 1))
                .collect();
            text(lines.join(c.separator()))
        },
    },
    Form {
        name: "chatter before, on its own lines",
        texts: &FOUR,
        expect: Expect::Decorated,
        reply: |c| {
            text(format!(
                "Sure! Here are the translations:\n\n{}",
                translations(c).join(c.separator())
            ))
        },
    },
    Form {
        name: "chatter before, followed by a separator",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            text(format!(
                "Sure! Here are the translations:{}{}",
                c.separator(),
                translations(c).join(c.separator())
            ))
        },
    },
    Form {
        name: "chatter after, on its own lines",
        texts: &FOUR,
        expect: Expect::Decorated,
        reply: |c| {
            text(format!(
                "{}\n\nLet me know if you need anything else!",
                translations(c).join(c.separator())
            ))
        },
    },
    Form {
        name: "chatter after, behind a separator",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            text(format!(
                "{}{}I hope this helps!",
                translations(c).join(c.separator()),
                c.separator()
            ))
        },
    },
    Form {
        name: "chatter before and after a code fence",
        texts: &THREE,
        expect: Expect::Decorated,
        reply: |c| {
            text(format!(
                "Here you go:\n```text\n{}\n```\nAnything else?",
                translations(c).join(c.separator())
            ))
        },
    },
    Form {
        name: "code fence without a language tag",
        texts: &FOUR,
        expect: Expect::Tolerated,
        reply: |c| text(format!("```\n{}\n```", translations(c).join(c.separator()))),
    },
    Form {
        name: "code fence with a language tag",
        texts: &FOUR,
        expect: Expect::Tolerated,
        reply: |c| {
            text(format!(
                "```markdown\n{}\n```\n",
                translations(c).join(c.separator())
            ))
        },
    },
    Form {
        name: "every segment in its own code fence",
        texts: &THREE,
        expect: Expect::Decorated,
        reply: |c| {
            let fenced: Vec<String> = translations(c)
                .iter()
                .map(|t| format!("```text\n{t}\n```"))
                .collect();
            text(fenced.join(c.separator()))
        },
    },
    Form {
        name: "an empty segment",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let mut t = translations(c);
            t[2] = String::new();
            text(t.join(c.separator()))
        },
    },
    Form {
        name: "a segment of white space only",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| {
            let mut t = translations(c);
            t[1] = " \t ".into();
            text(t.join(c.separator()))
        },
    },
    Form {
        name: "a segment left untranslated",
        texts: &FOUR,
        expect: Expect::Decorated,
        reply: |c| {
            let mut t = translations(c);
            t[1] = c.texts[1].clone();
            text(t.join(c.separator()))
        },
    },
    Form {
        name: "the whole batch left untranslated",
        texts: &THREE,
        expect: Expect::Decorated,
        reply: |c| text(c.text.clone()),
    },
    Form {
        name: "two segments merged into one",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let t = translations(c);
            text(format!(
                "{}{}{} {}{}{}",
                t[0],
                c.separator(),
                t[1],
                t[2],
                c.separator(),
                t[3]
            ))
        },
    },
    Form {
        name: "all segments merged into one paragraph",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| text(translations(c).join(" ")),
    },
    Form {
        name: "separators with one % more",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let longer = format!("\n\n%{}\n\n", sep_line(c));
            text(translations(c).join(&longer))
        },
    },
    Form {
        name: "separators with one % less",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let shorter = format!("\n\n{}\n\n", &sep_line(c)[1..]);
            text(translations(c).join(&shorter))
        },
    },
    Form {
        name: "one separator of a different length",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let t = translations(c);
            let odd = format!("\n\n{}%\n\n", sep_line(c));
            text(format!(
                "{}{}{}{odd}{}{}{}",
                t[0],
                c.separator(),
                t[1],
                t[2],
                c.separator(),
                t[3]
            ))
        },
    },
    Form {
        name: "separators inline",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let inline = format!(" {} ", sep_line(c));
            text(translations(c).join(&inline))
        },
    },
    Form {
        name: "separators at the start of the next line",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| {
            let glued = format!("\n{} ", sep_line(c));
            text(translations(c).join(&glued))
        },
    },
    Form {
        name: "separators in bold",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| {
            let bold = format!("\n\n**{}**\n\n", sep_line(c));
            text(translations(c).join(&bold))
        },
    },
    Form {
        name: "markdown bullet list instead of separators",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let bullets: Vec<String> = translations(c).iter().map(|t| format!("- {t}")).collect();
            text(bullets.join("\n"))
        },
    },
    Form {
        name: "markdown bullets with the separators kept",
        texts: &THREE,
        expect: Expect::Decorated,
        reply: |c| {
            let bullets: Vec<String> = translations(c).iter().map(|t| format!("* {t}")).collect();
            text(bullets.join(c.separator()))
        },
    },
    Form {
        name: "a JSON array as a string",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let quoted: Vec<String> = translations(c)
                .iter()
                .map(|t| format!("\"{}\"", t.replace('"', "\\\"")))
                .collect();
            text(format!("[{}]", quoted.join(", ")))
        },
    },
    Form {
        name: "a JSON array in a json code fence",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| {
            let quoted: Vec<String> = translations(c)
                .iter()
                .map(|t| format!("  \"{t}\""))
                .collect();
            text(format!("```json\n[\n{}\n]\n```", quoted.join(",\n")))
        },
    },
    Form {
        name: "a JSON object keyed by number",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| {
            let pairs: Vec<String> = translations(c)
                .iter()
                .enumerate()
                .map(|(i, t)| format!("\"{}\": \"{t}\"", i + 1))
                .collect();
            text(format!("{{{}}}", pairs.join(", ")))
        },
    },
    Form {
        name: "a leading separator",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            text(format!(
                "{}{}",
                c.separator(),
                translations(c).join(c.separator())
            ))
        },
    },
    Form {
        name: "a trailing separator",
        texts: &FOUR,
        expect: Expect::Tolerated,
        reply: |c| {
            text(format!(
                "{}{}",
                translations(c).join(c.separator()),
                c.separator()
            ))
        },
    },
    Form {
        name: "CRLF line endings and padded separator lines",
        texts: &FOUR,
        expect: Expect::Tolerated,
        reply: |c| {
            let padded = format!("\r\n   {}  \r\n", sep_line(c));
            text(translations(c).join(&padded))
        },
    },
    Form {
        name: "array reply one short",
        texts: &FOUR,
        expect: Expect::Refused,
        reply: |c| {
            let mut t = translations(c);
            t.pop();
            Reply::Texts(t)
        },
    },
    Form {
        name: "array reply with the whole joined reply in one element",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| Reply::Texts(vec![translations(c).join(c.separator())]),
    },
    Form {
        name: "array reply with an empty element",
        texts: &THREE,
        expect: Expect::Refused,
        reply: |c| {
            let mut t = translations(c);
            t[0] = String::new();
            Reply::Texts(t)
        },
    },
];

/// What became of a batch whose first reply was bad.
struct Outcome {
    calls: Vec<CallRecord>,
    mismatches: u64,
    results: Vec<Result<String, String>>,
}

/// Sends `texts` as one batch; call number 1 is answered with `bad`, every other call
/// correctly, or with `bad` too for every batch call when `persistent`.
fn run(texts: &[&str], bad: fn(&Call) -> Reply, persistent: bool) -> Outcome {
    let count = Rc::new(Cell::new(0u32));
    let seen = count.clone();
    let provider = move |call: &Call, _now: Instant| {
        seen.set(seen.get() + 1);
        let first = seen.get() == 1;
        let reply = if first || (persistent && call.is_batch) {
            bad(call)
        } else {
            echo_reply(call)
        };
        Answer::After(Duration::from_millis(50.0), Ok(reply))
    };
    let mut sim = Sim::new(options(&[]), provider);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    let results = tickets
        .iter()
        .map(|t| sim.result(*t).clone().map_err(|e| e.to_string()))
        .collect();
    assert!(
        sim.calls[0].is_batch && sim.calls[0].texts.len() == texts.len(),
        "the first call carries the whole batch"
    );
    Outcome {
        mismatches: sim.engine.stats().count_mismatches,
        calls: std::mem::take(&mut sim.calls),
        results,
    }
}

/// Every item's result is its own translation (or its own text), never another item's.
fn assert_own(form: &str, texts: &[&str], outcome: &Outcome, exact: bool) {
    for (i, result) in outcome.results.iter().enumerate() {
        let got = match result {
            Ok(got) => got,
            Err(e) => panic!("{form}: item {i} failed: {e}"),
        };
        let own = echo(texts[i]);
        if exact {
            assert_eq!(got, &own, "{form}: item {i}");
            continue;
        }
        assert!(
            got.contains(&own) || got.contains(texts[i]),
            "{form}: item {i} got {got:?}, which holds neither {own:?} nor its source"
        );
        for (j, other) in texts.iter().enumerate().filter(|(j, _)| *j != i) {
            assert!(
                !got.contains(&echo(other)) && !got.contains(other),
                "{form}: item {i} got {got:?}, which holds item {j}'s paragraph"
            );
        }
    }
}

#[test]
fn bad_replies_are_refused_or_mapped_one_to_one() {
    let mut report = Vec::new();
    for form in FORMS {
        let outcome = run(form.texts, form.reply, false);
        let retried = outcome.calls.len() > 1 || outcome.mismatches > 0;
        if retried {
            assert!(
                form.expect != Expect::Tolerated,
                "{}: the contract tolerates this form, yet it was retried",
                form.name
            );
            // One mismatch, then the same batch again, not a guess at part of it.
            assert_eq!(outcome.mismatches, 1, "{}", form.name);
            assert_eq!(outcome.calls.len(), 2, "{}", form.name);
            assert_eq!(outcome.calls[1].attempt, 1, "{}", form.name);
            assert_eq!(
                outcome.calls[1].texts, outcome.calls[0].texts,
                "{}",
                form.name
            );
        }
        let exact = retried || form.expect != Expect::Decorated;
        assert_own(form.name, form.texts, &outcome, exact);
        let now = if retried { "retried" } else { "accepted" };
        let was = match form.expect {
            Expect::Refused => "retried",
            Expect::Tolerated | Expect::Decorated => "accepted",
        };
        let note = if now == was { "" } else { " (changed)" };
        report.push(format!("{:<55} {now}{note}", form.name));
    }
    println!("{}", report.join("\n"));
}

#[test]
fn bad_replies_that_persist_end_in_the_one_by_one_fallback() {
    for form in FORMS.iter().filter(|f| f.expect == Expect::Refused) {
        let outcome = run(form.texts, form.reply, true);
        if outcome.mismatches == 0 {
            // The codec has learned to parse this form: then it must parse it exactly.
            assert_own(form.name, form.texts, &outcome, true);
            continue;
        }
        let singles = outcome.calls.iter().filter(|c| !c.is_batch).count();
        // One try and one retry of the batch: the retry's reply repeats the first, which
        // ends the retries (maxBatchRetries is at most); then each item alone.
        assert_eq!(outcome.mismatches, 2, "{}", form.name);
        assert_eq!(singles, form.texts.len(), "{}", form.name);
        assert_own(form.name, form.texts, &outcome, true);
    }
}

// ----- accepted and misaligned: the codec cannot tell, so it guesses -----

/// Runs one reply form that has the right segment count but does not map one to one,
/// and asserts that no item gets another item's paragraph.
fn assert_never_misaligned(name: &str, texts: &[&str], bad: fn(&Call) -> Reply) {
    let outcome = run(texts, bad, false);
    assert_own(name, texts, &outcome, false);
}

#[test]
fn chatter_segment_plus_merged_pair_is_not_accepted() {
    assert_never_misaligned("chatter segment + merged pair", &FOUR, |c| {
        let t = translations(c);
        let s = c.separator();
        text(format!(
            "Here are the translations:{s}{}{s}{}\n{}{s}{}",
            t[0], t[1], t[2], t[3]
        ))
    });
}

#[test]
fn chatter_segment_plus_missing_paragraph_is_not_accepted() {
    // A reply cut short (the output token limit) after a preamble the model set apart.
    assert_never_misaligned("chatter segment + truncated reply", &FOUR, |c| {
        let t = translations(c);
        let s = c.separator();
        text(format!(
            "Sure! Here you go:{s}{}{s}{}{s}{}",
            t[0], t[1], t[2]
        ))
    });
}

#[test]
fn array_with_preamble_and_missing_element_is_not_accepted() {
    assert_never_misaligned("array: preamble + one missing", &THREE, |c| {
        let mut t = translations(c);
        t.pop();
        t.insert(0, "Translations:".into());
        Reply::Texts(t)
    });
}

#[test]
fn a_repeated_segment_in_place_of_another_is_not_accepted() {
    assert_never_misaligned("repeated segment", &FOUR, |c| {
        let mut t = translations(c);
        t[2] = t[1].clone();
        text(t.join(c.separator()))
    });
}

#[test]
fn reordered_segments_are_not_accepted() {
    assert_never_misaligned("two segments swapped", &THREE, |c| {
        let mut t = translations(c);
        t.swap(0, 1);
        text(t.join(c.separator()))
    });
}

// ----- the separator layout's limit: shifts the alignment checks cannot see -----
//
// The checks need evidence: a segment ending in ':', two identical segments, or a number
// that moved. Paragraphs without digits, a preamble that ends in '.' or '!', and a
// translation moved rather than repeated leave none. These forms are accepted from the
// one call and misassign paragraphs: the limit docs/guides/proof.md states ("The separator layout's limits")
// and the `.d.ts` state. Each test pins today's outcome, so a codec that learns to
// refuse a form fails here, and its test then moves to `assert_never_misaligned`.

/// Paragraphs without digits or colons: nothing anchors a segment to its paragraph.
const PLAIN: [&str; 4] = [
    "The committee met on Tuesday to discuss the budget.",
    "Most members agreed that the proposal was too expensive.",
    "Contact the support team if the problem persists.",
    "Thank you for reading this article.",
];

/// Runs a reply form the separator layout cannot see through, and asserts its known
/// outcome: accepted from the one call with no mismatch, each item resolved with
/// `expected(translations)[i]`, and at least one item given another item's paragraph.
fn assert_known_misassignment(
    name: &str,
    texts: &[&str],
    bad: fn(&Call) -> Reply,
    expected: fn(&[String]) -> Vec<String>,
) {
    let outcome = run(texts, bad, false);
    assert_eq!(outcome.calls.len(), 1, "{name}: accepted from the one call");
    assert_eq!(outcome.mismatches, 0, "{name}");
    let own: Vec<String> = texts.iter().map(|t| echo(t)).collect();
    let want: Vec<Result<String, String>> = expected(&own).into_iter().map(Ok).collect();
    assert_eq!(outcome.results, want, "{name}");
    let misassigned = (0..texts.len()).any(|i| {
        (0..texts.len()).any(|j| j != i && want[i].as_ref().is_ok_and(|got| got.contains(&own[j])))
    });
    assert!(misassigned, "{name}: no item holds another's paragraph");
}

#[test]
fn a_preamble_without_colon_plus_merged_pair_is_accepted_misaligned() {
    assert_known_misassignment(
        "preamble without colon + merged pair",
        &PLAIN,
        |c| {
            let t = translations(c);
            let s = c.separator();
            text(format!(
                "Sure, here are the translations!{s}{}{s}{}\n{}{s}{}",
                t[0], t[1], t[2], t[3]
            ))
        },
        |t| {
            vec![
                "Sure, here are the translations!".into(),
                t[0].clone(),
                format!("{}\n{}", t[1], t[2]),
                t[3].clone(),
            ]
        },
    );
}

#[test]
fn a_preamble_without_colon_plus_truncated_reply_is_accepted_misaligned() {
    // The output token limit cuts the last paragraph off.
    assert_known_misassignment(
        "preamble without colon + truncated reply",
        &PLAIN,
        |c| {
            let t = translations(c);
            let s = c.separator();
            text(format!("Here you go.{s}{}{s}{}{s}{}", t[0], t[1], t[2]))
        },
        |t| {
            vec![
                "Here you go.".into(),
                t[0].clone(),
                t[1].clone(),
                t[2].clone(),
            ]
        },
    );
}

#[test]
fn a_skipped_paragraph_plus_closing_remark_is_accepted_misaligned() {
    assert_known_misassignment(
        "first skipped + closing remark",
        &PLAIN,
        |c| {
            let t = translations(c);
            let s = c.separator();
            text(format!(
                "{}{s}{}{s}{}{s}I hope this helps!",
                t[1], t[2], t[3]
            ))
        },
        |t| {
            vec![
                t[1].clone(),
                t[2].clone(),
                t[3].clone(),
                "I hope this helps!".into(),
            ]
        },
    );
}

#[test]
fn swapped_segments_without_numbers_are_accepted_misaligned() {
    assert_known_misassignment(
        "two segments swapped, no numbers",
        &PLAIN,
        |c| {
            let mut t = translations(c);
            t.swap(1, 2);
            text(t.join(c.separator()))
        },
        |t| vec![t[0].clone(), t[2].clone(), t[1].clone(), t[3].clone()],
    );
}

#[test]
fn array_with_preamble_without_colon_is_accepted_misaligned() {
    assert_known_misassignment(
        "array: preamble without colon + one missing",
        &PLAIN,
        |c| {
            let mut t = translations(c);
            t.pop();
            t.insert(0, "Here are the translations.".into());
            Reply::Texts(t)
        },
        |t| {
            vec![
                "Here are the translations.".into(),
                t[0].clone(),
                t[1].clone(),
                t[2].clone(),
            ]
        },
    );
}

// ----- the separator layout's limit: a wrapping fence kept -----

#[test]
fn a_wrapping_fence_is_kept_when_the_last_paragraph_ends_with_one() {
    let texts = [
        "Install the package first.",
        "Then run it as below.",
        "```sh\nnpm start\n```",
    ];
    let provider = |call: &Call, _now: Instant| {
        let segments: Vec<String> = call
            .texts
            .iter()
            .map(|t| {
                if t.starts_with("```") {
                    t.clone()
                } else {
                    echo(t)
                }
            })
            .collect();
        let wrapped = format!("```markdown\n{}\n```", segments.join(call.separator()));
        Answer::After(Duration::from_millis(50.0), Ok(Reply::Text(wrapped)))
    };
    let mut sim = Sim::new(options(&[]), provider);
    let tickets: Vec<_> = texts.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    assert_eq!(sim.calls.len(), 1, "accepted from the one call");
    // The known outcome: the model's fence lines stay in the first and last items; no
    // item holds another's paragraph.
    assert_eq!(
        sim.ok(tickets[0]),
        format!("```markdown\n{}", echo(texts[0]))
    );
    assert_eq!(sim.ok(tickets[1]), echo(texts[1]));
    assert_eq!(sim.ok(tickets[2]), format!("{}\n```", texts[2]));
}

// ----- accepted and altered: a correct reply that looks like a fenced one -----

const CODE_PAGE: [&str; 3] = [
    "```js\nconst total = 1;\n```",
    "Run the snippet above in the console.",
    "```sh\nnpm start\n```",
];

#[test]
fn code_blocks_left_as_they_are_keep_their_fences() {
    // Models leave code untranslated: the correct reply starts and ends with a fence,
    // which the splitter takes for a fence wrapping the whole reply.
    let provider = |call: &Call, _now: Instant| {
        let segments: Vec<String> = call
            .texts
            .iter()
            .map(|t| {
                if t.starts_with("```") {
                    t.clone()
                } else {
                    echo(t)
                }
            })
            .collect();
        Answer::After(
            Duration::from_millis(50.0),
            Ok(Reply::Text(segments.join(call.separator()))),
        )
    };
    let mut sim = Sim::new(options(&[]), provider);
    let tickets: Vec<_> = CODE_PAGE.iter().map(|t| sim.translate(&item(t))).collect();
    sim.drive();
    sim.assert_settled_once(&tickets);
    assert_eq!(sim.calls.len(), 1);
    assert_eq!(sim.ok(tickets[1]), echo(CODE_PAGE[1]));
    assert_eq!(sim.ok(tickets[0]), CODE_PAGE[0]);
    assert_eq!(sim.ok(tickets[2]), CODE_PAGE[2]);
}
