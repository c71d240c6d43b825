//! The first byte of a class in a byte string, found thirty-two bytes a step by a test
//! on four 64-bit words, then a word at a time in the thirty-two that hold it.
//!
//! Every text of a batch and every reply is searched for `<` (markers) and for digits
//! (numbers that anchor segments to paragraphs), and most of their bytes are neither:
//! the word test skips them for a few instructions per word, where a byte loop or
//! `memchr` spends one or two per byte.

/// 0x01 in every byte of a word.
pub const ONES: u64 = u64::MAX / 255;

/// The index of the first byte of `bytes` that `hits` marks. `hits(word)` gives, for a
/// word of eight bytes (little-endian), the high bit of each byte it accepts: exact up to
/// and including the first one (bits above it may be false alarms), 0 for a word with
/// none. The zero byte must not be accepted: the last word is padded with it.
pub fn first_byte(bytes: &[u8], hits: impl Fn(u64) -> u64) -> Option<usize> {
    let mut at = 0;
    // Thirty-two bytes a step: one branch for four words.
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        let any = block
            .chunks_exact(8)
            .fold(0, |any, word| any | hits(word_of(word)));
        if any != 0 {
            break;
        }
        at += 32;
    }
    // Then a word at a time: the first hit's bit is exact, so its byte is the one of the
    // lowest bit set.
    let mut words = bytes[at..].chunks_exact(8);
    for word in &mut words {
        let bits = hits(word_of(word));
        if bits != 0 {
            return Some(at + (bits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    // The last bytes as the low bytes of a word (a copy into a buffer would be a call).
    let tail = words.remainder();
    let padded = tail
        .iter()
        .rev()
        .fold(0, |word, &b| (word << 8) | u64::from(b));
    let bits = hits(padded);
    (bits != 0).then(|| at + (bits.trailing_zeros() / 8) as usize)
}

/// Eight bytes as a little-endian word.
fn word_of(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap_or_default())
}

/// The high bit of each byte of `word` that is `byte` (exact up to the first such byte):
/// the "has a zero byte" test of the bit-twiddling folklore on `word ^ byte…`. Below the
/// first zero byte no borrow runs, so no bit is set there.
pub fn byte_bits(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & (ONES * 0x80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_test_finds_the_first_byte_exactly() {
        for byte in 0..=255u8 {
            for position in 0..8 {
                for other in [b'<' - 1, b'<' + 1, 0x00, 0x80, 0xBC, 0xFF, b'a'] {
                    let mut bytes = [other; 8];
                    bytes[position] = byte;
                    let bits = byte_bits(u64::from_le_bytes(bytes), b'<');
                    let first = bytes.iter().position(|&b| b == b'<');
                    assert_eq!(bits != 0, first.is_some(), "{bytes:?}");
                    if let Some(first) = first {
                        assert_eq!(bits.trailing_zeros() / 8, first as u32, "{bytes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_first_byte_is_found_at_every_offset() {
        let text = "no marker for a while, then <s21> and ünïcödé < 7 and more text after it, \
                    much more text than a block of thirty-two bytes holds <";
        for start in 0..text.len() {
            let bytes = &text.as_bytes()[start..];
            assert_eq!(
                first_byte(bytes, |w| byte_bits(w, b'<')),
                bytes.iter().position(|&b| b == b'<')
            );
        }
    }
}
