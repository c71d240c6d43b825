//! The codec: separator choice, join and tolerant split.
//!
//! Input layout: byte 0 is the byte the rest is split on (into 1..=8 texts), byte 1 picks
//! how the reply is dressed up (the forms the splitter is documented to tolerate), byte 2
//! the expected count for the raw-reply check. Properties:
//! - the separator occurs in no text;
//! - `split(join(texts))` gives back exactly the texts (trimmed, line ends kept), and
//!   when it does not accept, it reports a mismatch rather than other texts;
//! - an "echo translation" of each text joined with the separator, in any tolerated
//!   dress (CRLF, code fence with a language tag, trailing separator, compact or padded
//!   separator lines), splits back aligned;
//! - `split` never panics on any reply with any separator, and what it accepts has the
//!   expected count and no blank segment.
#![no_main]

mod common;

use batch_pacer::codec::{check_segments, choose_separator, fence_is_added, join, split};
use libfuzzer_sys::fuzz_target;

/// What `split` does to a segment: trims it. Line ends inside a segment stay as the
/// reply has them (docs/reference.md, Rule 21, tolerates CRLF *around* the separator; a translation's own line
/// breaks are its text).
fn normalized(text: &str) -> String {
    text.trim().to_owned()
}

/// A translation that keeps every separator out: ASCII uppercased, prefixed.
fn translate(text: &str) -> String {
    format!("T:{}", text.to_ascii_uppercase())
}

/// Dresses a correct reply the way models do; `None` when the dress would change what
/// the texts mean (CRLF conversion of texts that already hold a CR).
fn dress(reply: &str, separator: &str, style: u8, has_cr: bool) -> Option<String> {
    let token = separator.trim();
    let mut out = reply.to_owned();
    if style & 1 != 0 {
        // Compact separator lines, possibly padded with spaces.
        let padded = if style & 2 != 0 {
            format!("\n  {token} \t\n")
        } else {
            format!("\n{token}\n")
        };
        out = out.replace(separator, &padded);
    }
    if style & 4 != 0 {
        out.push_str(separator);
    }
    if style & 8 != 0 {
        let tag = ["", "text", "markdown", "json"][usize::from(style >> 6)];
        out = format!("```{tag}\n{out}\n```");
    }
    if style & 16 != 0 {
        if has_cr {
            return None;
        }
        out = out.replace('\n', "\r\n");
    }
    if style & 32 != 0 {
        out = format!("  \n{out}\n\n ");
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (split_on, style, expected_raw) = (data[0], data[1], usize::from(data[2] % 10));
    let body = &data[3..];

    // Raw replies: never a panic, and anything accepted is well formed.
    let sep_len = usize::from(style % 12).min(body.len());
    let raw_separator = String::from_utf8_lossy(&body[..sep_len]);
    let raw_reply = String::from_utf8_lossy(&body[sep_len..]);
    if let Ok(segments) = split(&raw_reply, &raw_separator, expected_raw, style & 1 == 0) {
        assert_eq!(segments.len(), expected_raw);
        assert!(segments.iter().all(|s| !s.trim().is_empty()));
    }
    let pieces: Vec<String> = raw_reply.split('\n').map(str::to_owned).collect();
    if let Ok(segments) = check_segments(pieces.clone(), expected_raw) {
        assert_eq!(segments, pieces);
    }

    // Round trips.
    let texts: Vec<String> = body
        .split(|b| *b == split_on)
        .take(8)
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect();
    let separator = choose_separator(&texts);
    let token = separator.trim();
    assert!(
        token.len() >= 2 && token.bytes().all(|b| b == b'%'),
        "separator {separator:?}"
    );
    assert_eq!(separator, format!("\n\n{token}\n\n"));
    for text in &texts {
        assert!(
            !text.contains(token),
            "separator {token:?} occurs in {text:?}"
        );
    }
    if texts.len() < 2 {
        // A single request's reply is used verbatim: split is never asked.
        return;
    }

    let want: Vec<String> = texts.iter().map(|t| normalized(t)).collect();
    let joined = join(&texts, &separator);
    // A batch that opens or closes with a code fence of its own keeps it (the reply's
    // fence is then the paragraphs'), so every batch round-trips exactly.
    match split(&joined, &separator, texts.len(), fence_is_added(&texts)) {
        Ok(got) => assert_eq!(got, want, "joined {joined:?}"),
        Err(mismatch) => assert!(
            want.iter().any(String::is_empty),
            "join then split of non-blank texts failed with {mismatch:?}: {texts:?}"
        ),
    }

    let translations: Vec<String> = texts.iter().map(|t| translate(t)).collect();
    let want: Vec<String> = translations.iter().map(|t| normalized(t)).collect();
    let has_cr = texts.iter().any(|t| t.contains('\r'));
    let reply = join(&translations, &separator);
    for style in [0, style] {
        let Some(dressed) = dress(&reply, &separator, style, has_cr) else {
            continue;
        };
        let strip = fence_is_added(&translations);
        let got = split(&dressed, &separator, texts.len(), strip);
        // A reply turned into CRLF throughout carries CRLF inside its segments too.
        let want: Vec<String> = if style & 16 != 0 {
            translations
                .iter()
                .map(|t| normalized(&t.replace('\n', "\r\n")))
                .collect()
        } else {
            want.clone()
        };
        if style & 8 != 0 && !strip && common::skip_known("fence-wrap") {
            // Known: when the last translation ends with a fence of its own, a fence the
            // model wraps around the whole reply is kept: the first and last items get
            // its lines, or (with a trailing separator) its closing line is one segment
            // too many and the reply is refused. Then check the alignment only.
            if let Ok(got) = got {
                assert_eq!(got.len(), want.len());
                for (segment, own) in got.iter().zip(&want) {
                    assert!(segment.contains(own.as_str()), "{segment:?} lacks {own:?}");
                }
            }
            continue;
        }
        assert_eq!(
            got.as_ref(),
            Ok(&want),
            "style {style:#x}, reply {dressed:?}"
        );
    }
});
