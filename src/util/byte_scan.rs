//! The first byte of a class in a byte string, found sixteen bytes a step by a test on
//! two 64-bit words, then byte by byte in the sixteen that hold it.
//!
//! Every text of a batch and every reply is searched for `<` (markers) and for digits
//! (numbers that anchor segments to paragraphs), and most of their bytes are neither:
//! the word test skips them for a few instructions per word, where a byte loop or
//! `memchr` spends one or two per byte.

/// 0x01 in every byte of a word.
pub const ONES: u64 = u64::MAX / 255;

/// The index of the first byte of `bytes` that `is` accepts. `word_has` must tell of any
/// word (eight bytes, little-endian) whether one of its bytes is accepted, exactly.
pub fn first_byte(
    bytes: &[u8],
    word_has: impl Fn(u64) -> bool,
    is: impl Fn(u8) -> bool,
) -> Option<usize> {
    // Sixteen bytes a step: one loop branch for two words.
    let mut chunks = bytes.chunks_exact(16);
    let mut skipped = 0;
    for chunk in &mut chunks {
        let (low, high) = chunk.split_at(8);
        let low = u64::from_le_bytes(low.try_into().unwrap_or_default());
        let high = u64::from_le_bytes(high.try_into().unwrap_or_default());
        if word_has(low) | word_has(high) {
            break;
        }
        skipped += 16;
    }
    bytes[skipped..]
        .iter()
        .position(|&b| is(b))
        .map(|i| skipped + i)
}

/// Whether one of the eight bytes of `word` is `byte`: the "has a zero byte" test of the
/// bit-twiddling folklore on `word ^ byte…`. A borrow only runs up from a zero byte, so
/// the test is exact for whether there is one.
pub fn has_byte(word: u64, byte: u8) -> bool {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & (ONES * 0x80) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_test_finds_exactly_the_byte() {
        for byte in 0..=255u8 {
            for position in 0..8 {
                for other in [b'<' - 1, b'<' + 1, 0x00, 0x80, 0xBC, 0xFF, b'a'] {
                    let mut bytes = [other; 8];
                    bytes[position] = byte;
                    let word = u64::from_le_bytes(bytes);
                    assert_eq!(has_byte(word, b'<'), bytes.contains(&b'<'), "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn the_first_byte_is_found_at_every_offset() {
        let text = "no marker for a while, then <s21> and ünïcödé < 7 and more text after it";
        for start in 0..text.len() {
            let bytes = &text.as_bytes()[start..];
            assert_eq!(
                first_byte(bytes, |w| has_byte(w, b'<'), |b| b == b'<'),
                bytes.iter().position(|&b| b == b'<')
            );
        }
    }
}
