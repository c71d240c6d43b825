//! How a batch travels in one LLM call: separator choice, joining, tolerant splitting.
//!
//! The separator is a line holding only a run of `%` (`\n\n%%\n\n` by default) that is
//! longer than any run of `%` in the batch's texts, so it occurs in none of them. Replies
//! are split on *lines* equal to that run, which tolerates the white space, CRLF, trailing
//! separator and code fence that models add, while a paragraph that merely contains `%%`
//! never splits. Anything the splitter is unsure about is reported as a mismatch, so the
//! engine retries instead of guessing.

/// The separator placed between texts, chosen so that it occurs in none of them.
pub fn choose_separator<S: AsRef<str>>(texts: &[S]) -> String {
    let longest_run = texts
        .iter()
        .map(|t| longest_percent_run(t.as_ref()))
        .max()
        .unwrap_or(0);
    let token_len = longest_run.max(1) + 1;
    let mut separator = String::with_capacity(token_len + 4);
    separator.push_str("\n\n");
    // A loop of pushes: `extend` with a repeated char is a function of its own in the
    // .wasm, with a UTF-8 encoder.
    for _ in 0..token_len {
        separator.push('%');
    }
    separator.push_str("\n\n");
    separator
}

/// The paragraph that tells a model how to answer a batch of `count` texts joined with
/// `separator`.
pub fn instructions(separator: &str, count: usize) -> String {
    let line = separator.trim();
    format!(
        "The text holds {count} segments separated by lines that hold only {line}. \
         Translate every segment on its own and answer with the {count} translations in the \
         same order, separated by the same {line} lines. Never merge, split, drop or add \
         segments, and write nothing else."
    )
}

fn longest_percent_run(text: &str) -> usize {
    // Most texts hold no '%' at all: find the first one with memchr before scanning.
    let Some(first) = text.find('%') else {
        return 0;
    };
    let (mut best, mut run) = (0, 0);
    for &b in text.as_bytes().iter().skip(first) {
        run = if b == b'%' { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// The texts joined with `separator`.
pub fn join<S: AsRef<str>>(texts: &[S], separator: &str) -> String {
    let total: usize = texts.iter().map(|t| t.as_ref().len()).sum::<usize>()
        + separator.len() * texts.len().saturating_sub(1);
    let mut joined = String::with_capacity(total);
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            joined.push_str(separator);
        }
        joined.push_str(text.as_ref());
    }
    joined
}

/// Why a reply could not be mapped back onto the batch's texts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The reply holds this many segments instead of one per text.
    Count { expected: usize, got: usize },
    /// Segment `index` is empty although its text was not.
    EmptySegment { index: usize },
    /// The count is right but segment `index` shows signs of another paragraph's
    /// translation (see the `alignment` module).
    Misaligned { index: usize },
}

/// Whether a reply's wrapping code fence may be stripped: not when the batch itself
/// begins or ends with a fence (the reply's fence is then the paragraphs' own).
pub fn fence_is_added<S: AsRef<str>>(texts: &[S]) -> bool {
    let first = texts.first().map_or("", |t| t.as_ref().trim_start());
    let last = texts.last().map_or("", |t| t.as_ref().trim_end());
    !first.starts_with("```") && !last.ends_with("```")
}

/// Splits a batch reply on `separator` into exactly `expected` segments; a code fence
/// wrapping the whole reply is removed first when `strip_fence` (see [`fence_is_added`]).
pub fn split(
    reply: &str,
    separator: &str,
    expected: usize,
    strip_fence: bool,
) -> Result<Vec<String>, Mismatch> {
    let token = separator.trim();
    let body = if strip_fence {
        strip_code_fence(reply.trim())
    } else {
        reply.trim()
    };
    // Segments are cut out of the reply as it is, so the line ends inside a translation
    // (CRLF included) stay as the model wrote them; LF, CRLF and a lone CR all end a line.
    let mut segments = Vec::with_capacity(expected);
    let mut segment_start = 0;
    let mut line_start = 0;
    loop {
        let line_end = line_break(body, line_start);
        let line = body.get(line_start..line_end.unwrap_or(body.len()));
        let next_line = line_end.map(|end| end + line_break_len(body, end));
        if line.is_some_and(|line| line.trim() == token) {
            segments.push(segment(body, segment_start, line_start));
            segment_start = next_line.unwrap_or(body.len());
        }
        match next_line {
            Some(next) => line_start = next,
            None => break,
        }
    }
    segments.push(segment(body, segment_start, body.len()));
    // A trailing separator is tolerated; a leading one is not (it shifts every segment).
    if segments.len() > 1 && segments.last().is_some_and(|s| s.is_empty()) {
        segments.pop();
    }
    check_segments(segments, expected)
}

/// The offset of the first line break (LF or CR) in `text` from `from` on.
fn line_break(text: &str, from: usize) -> Option<usize> {
    let rest = text.as_bytes().get(from..)?;
    rest.iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|i| from + i)
}

/// The length of the line break at `at`: 2 for CRLF, else 1.
fn line_break_len(text: &str, at: usize) -> usize {
    match text.as_bytes().get(at..at + 2) {
        Some(b"\r\n") => 2,
        _ => 1,
    }
}

/// `text[start..end]` without the white space around it (line breaks included).
fn segment(text: &str, start: usize, end: usize) -> String {
    // `get` rather than indexing: indexing compiles in a panic path (with char
    // formatting) that is large in the .wasm. The offsets are at ASCII line breaks.
    text.get(start..end).unwrap_or("").trim().to_owned()
}

/// Checks an array reply (one string per text).
pub fn check_segments(segments: Vec<String>, expected: usize) -> Result<Vec<String>, Mismatch> {
    if segments.len() != expected {
        return Err(Mismatch::Count {
            expected,
            got: segments.len(),
        });
    }
    match segments.iter().position(|s| s.trim().is_empty()) {
        Some(index) => Err(Mismatch::EmptySegment { index }),
        None => Ok(segments),
    }
}

/// Removes one code fence wrapping the whole reply (```` ```lang … ``` ````).
pub fn strip_code_fence(reply: &str) -> &str {
    // Slicing by index would compile in a panic path (with char formatting) that the
    // pattern methods avoid.
    let Some(inner) = reply
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return reply;
    };
    // The opening fence line may carry a language tag; the body starts after it.
    match line_break(inner, 0).and_then(|end| inner.get(end..)) {
        Some(body) => body.trim(),
        None => reply,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEP: &str = "\n\n%%\n\n";

    #[test]
    fn default_separator_unless_it_collides() {
        assert_eq!(choose_separator(&["a", "b"]), SEP);
        assert_eq!(choose_separator(&["50% off", "b"]), SEP);
        assert_eq!(choose_separator(&["a\n%%\nb", "c"]), "\n\n%%%\n\n");
        assert_eq!(choose_separator(&["x%%%%y"]), "\n\n%%%%%\n\n");
        let texts = ["%%", "%%%", "a"];
        let sep = choose_separator(&texts);
        assert!(texts.iter().all(|t| !t.contains(sep.trim())));
    }

    #[test]
    fn join_then_split_round_trips() {
        let texts = ["one", "two\nlines", "three %% inline"];
        let sep = choose_separator(&texts);
        assert_eq!(split(&join(&texts, &sep), &sep, 3, true).unwrap(), texts);
    }

    #[test]
    fn split_tolerates_what_models_add() {
        let want = vec!["A".to_string(), "B".to_string()];
        for reply in [
            "A\n\n%%\n\nB",
            "A\r\n\r\n%%\r\n\r\nB",
            "A\n%%\nB",
            "  A \n  %%  \n B  ",
            "A\n\n%%\n\nB\n\n%%\n\n",
            "A\n%%\nB\n%%",
            "```\nA\n%%\nB\n```",
            "```text\nA\n\n%%\n\nB\n```\n",
        ] {
            assert_eq!(
                split(reply, SEP, 2, true).as_ref(),
                Ok(&want),
                "reply {reply:?}"
            );
        }
    }

    #[test]
    fn line_ends_inside_a_translation_are_kept() {
        for (reply, want) in [
            ("L1\r\nL2\r\n%%\r\nM1\r\nM2", ["L1\r\nL2", "M1\r\nM2"]),
            ("L1\rL2\r%%\rM1\rM2\r", ["L1\rL2", "M1\rM2"]),
            ("L1\n\nL2\n%%\r\nM1\r\n\r\nM2", ["L1\n\nL2", "M1\r\n\r\nM2"]),
            ("```\r\nL1\r\nL2\r\n%%\r\nM\r\n```\r\n", ["L1\r\nL2", "M"]),
            ("```\rL\r%%\rM\r```", ["L", "M"]),
        ] {
            assert_eq!(split(reply, SEP, 2, true).unwrap(), want, "reply {reply:?}");
        }
    }

    #[test]
    fn split_reports_what_it_cannot_trust() {
        assert_eq!(
            split("A B", SEP, 2, true),
            Err(Mismatch::Count {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            split("A %% B", SEP, 2, true),
            Err(Mismatch::Count {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            split("A\n%%\nB\n%%\nC", SEP, 2, true),
            Err(Mismatch::Count {
                expected: 2,
                got: 3
            })
        );
        assert_eq!(
            split("A\n%%\n\n%%\nC", SEP, 3, true),
            Err(Mismatch::EmptySegment { index: 1 })
        );
        assert_eq!(
            split("%%\nA\n%%\nB", SEP, 2, true),
            Err(Mismatch::Count {
                expected: 2,
                got: 3
            })
        );
    }

    #[test]
    fn a_fence_belonging_to_the_paragraphs_is_kept() {
        let texts = ["```\ncode", "middle", "more\n```"];
        assert!(!fence_is_added(&texts));
        assert!(fence_is_added(&["plain", "text"]));
        let joined = join(&texts, SEP);
        assert_eq!(split(&joined, SEP, 3, false).unwrap(), texts);
        assert_ne!(
            split(&joined, SEP, 3, true).ok().as_deref(),
            Some(&texts.map(String::from)[..])
        );
    }

    #[test]
    fn a_longer_separator_ignores_shorter_runs_in_the_reply() {
        let sep = "\n\n%%%\n\n";
        assert_eq!(
            split("x\n%%\ny\n%%%\nz", sep, 2, true).unwrap(),
            vec!["x\n%%\ny".to_string(), "z".to_string()]
        );
    }

    #[test]
    fn array_replies_are_checked() {
        assert!(check_segments(vec!["a".into(), "b".into()], 2).is_ok());
        assert_eq!(
            check_segments(vec!["a".into()], 2),
            Err(Mismatch::Count {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            check_segments(vec!["a".into(), " ".into()], 2),
            Err(Mismatch::EmptySegment { index: 1 })
        );
    }
}
