//! White space trimmed exactly as `str::trim` trims it, without decoding a character when
//! a text's ends are plain ASCII that is not white space.
//!
//! The proof and alignment rules compare trimmed sources and segments several times per
//! batch reply, and nearly every one of them starts and ends with a visible ASCII
//! character: `str::trim` decodes characters from both ends to find that out.

/// `text.trim()`.
pub fn trim(text: &str) -> &str {
    match text.as_bytes() {
        [first, .., last] if visible_ascii(*first) && visible_ascii(*last) => text,
        [only] if visible_ascii(*only) => text,
        _ => text.trim(),
    }
}

/// `text.trim_end()`.
pub fn trim_end(text: &str) -> &str {
    match text.as_bytes().last() {
        Some(&last) if visible_ascii(last) => text,
        _ => text.trim_end(),
    }
}

/// An ASCII byte that is a whole character `str::trim` keeps. A byte of a longer UTF-8
/// sequence is not one: the character it belongs to may be white space (U+3000).
fn visible_ascii(byte: u8) -> bool {
    byte.is_ascii() && !char::from(byte).is_whitespace()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_as_str_trim_does() {
        let texts = [
            "",
            "a",
            " ",
            "\u{b}",
            "\u{b}x\u{b}",
            " a ",
            "a b",
            "\ta\n",
            "é",
            " é ",
            "xé",
            "éx",
            "\u{3000}x\u{3000}",
            "x\u{a0}",
            "\u{85}x",
            "<s21>a</s21>",
            "a\r\n",
            "\u{c}",
        ];
        for text in texts {
            assert_eq!(trim(text), text.trim(), "{text:?}");
            assert_eq!(trim_end(text), text.trim_end(), "{text:?}");
        }
        // Every ASCII byte at either end.
        for byte in 0u8..128 {
            let c = char::from(byte);
            for text in [
                format!("{c}"),
                format!("{c}a"),
                format!("a{c}"),
                format!("{c}a{c}"),
            ] {
                assert_eq!(trim(&text), text.trim(), "{text:?}");
                assert_eq!(trim_end(&text), text.trim_end(), "{text:?}");
            }
        }
    }
}
