//! Text measured as JavaScript measures it.

/// Length in UTF-16 code units, the unit of JS `String.length` and of the character limit.
pub fn utf16_len(text: &str) -> u64 {
    if text.is_ascii() {
        return text.len() as u64;
    }
    // One unit per code point (every non-continuation byte), two for 4-byte sequences.
    let units: usize = text
        .bytes()
        .map(|b| usize::from((b & 0xC0) != 0x80) + usize::from(b >= 0xF0))
        .sum();
    units as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_length_matches_js() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("héllo"), 5);
        assert_eq!(utf16_len("日本"), 2);
        assert_eq!(utf16_len("😀a"), 3);
        for s in ["", "x😀y日", "\u{10FFFF}"] {
            assert_eq!(utf16_len(s), s.encode_utf16().count() as u64);
        }
    }
}
