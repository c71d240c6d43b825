//! Does a reply with the right segment count really map one to one?
//!
//! The count alone cannot tell: a model that puts a preamble in front, merges two
//! paragraphs and keeps the total, repeats one translation in place of the next, or
//! swaps two, gives the right number of segments with the wrong paragraph under each.
//! These checks look for evidence of such a shift and report it as a mismatch, so the
//! batch is retried (then sent one item at a time) rather than guessed at:
//! - a segment that ends with ':' where its paragraph does not (a preamble such as
//!   "Here are the translations:");
//! - two identical segments for two different paragraphs;
//! - a number of one paragraph that is missing from its own segment but appears in
//!   another segment (numbers survive translation, so they anchor segments to paragraphs;
//!   a number that vanished everywhere, e.g. written out in words, proves nothing);
//! - a segment that holds a number of another paragraph more times than its own
//!   paragraph does, even when that number is in its own segment too (a small model
//!   blending two paragraphs writes both numbers into both segments).
//!
//! A false alarm costs a retry, never a wrong paragraph.

use crate::byte_scan::{first_byte, ONES};
use crate::codec::Mismatch;
use crate::trim::{trim, trim_end};

/// Checks `segments` (one per text, already counted) against `texts`.
pub fn check(texts: &[&str], segments: &[&str]) -> Result<(), Mismatch> {
    check_in(texts, segments.len(), |k| segments[k])
}

/// [`check`] on the `count` segments `segment` gives: the proof holds its segments as
/// options, and checks them once it knows all are there.
pub(crate) fn check_in<'a>(
    texts: &[&'a str],
    count: usize,
    segment: impl Fn(usize) -> &'a str,
) -> Result<(), Mismatch> {
    for (index, text) in texts.iter().enumerate().take(count) {
        let text = trim_end(text);
        if trim_end(segment(index)).ends_with(':') && !text.ends_with(':') && !text.ends_with('：')
        {
            return Err(Mismatch::Misaligned { index });
        }
    }
    for i in 0..count {
        for j in i + 1..count {
            if trim(segment(i)) == trim(segment(j)) && trim(texts[i]) != trim(texts[j]) {
                return Err(Mismatch::Misaligned { index: j });
            }
        }
    }
    match numbers_moved_in(texts, count, |k| Some(segment(k))) {
        Some(index) => Err(Mismatch::Misaligned { index }),
        None => Ok(()),
    }
}

/// The first paragraph (by index) one of whose numbers is missing from its own segment
/// (or its segment is missing) but appears in another segment whose paragraph does not
/// have it: text moved across segments. `None` stands for a segment the reply did not
/// give; it holds no number.
pub fn numbers_moved(texts: &[&str], segments: &[Option<&str>]) -> Option<usize> {
    numbers_moved_in(texts, segments.len(), |k| segments[k])
}

/// [`numbers_moved`] on the `count` segments `segment` gives, so that a caller whose
/// segments are all there need not collect them as options first.
fn numbers_moved_in<'a>(
    texts: &[&'a str],
    count: usize,
    segment: impl Fn(usize) -> Option<&'a str>,
) -> Option<usize> {
    // A segment identical to its paragraph (an untranslatable name, a number, code)
    // holds exactly the paragraph's numbers: none is missing from it, and it holds none
    // its paragraph lacks, so it can neither lose a number nor be where one moved. Its
    // runs are not read; a reply of nothing else needs no runs at all. (Trimming keeps
    // every run: white space is no digit.)
    let echoed = |k: usize| segment(k).is_some_and(|s| texts.get(k).is_some_and(|t| s == trim(t)));
    if count == texts.len() && (0..count).all(echoed) {
        return None;
    }
    // A number is a whole run of digits: the `1` inside another number's `12` is not that
    // number, and taking it for one would let a merge next to a `12` go unseen. So each
    // text and segment is read once into its (few, short) runs, and runs are compared.
    let text_runs = DigitRuns::of(texts.iter().map(|t| Some(*t)));
    let segment_runs = DigitRuns::of((0..count).map(|k| segment(k).filter(|_| !echoed(k))));
    for index in (0..texts.len()).filter(|&i| !echoed(i)) {
        for number in text_runs.of_text(index) {
            // The common case, a number kept in its own segment, needs no further search.
            if segment_runs.of_text(index).contains(number) {
                continue;
            }
            let elsewhere = (0..count).any(|k| {
                k != index
                    && segment_runs.of_text(k).contains(number)
                    && !text_runs.of_text(k).contains(number)
            });
            if elsewhere {
                return Some(index);
            }
        }
    }
    // A number may also have stayed in its own segment and been copied into another: a
    // small model that blends two paragraphs writes both numbers into both segments.
    (0..count).find(|&k| holds_another(&text_runs, k, segment_runs.of_text(k)))
}

/// Whether `held` (the runs of the segment written for paragraph `index`) holds a number
/// of another paragraph more times than paragraph `index` does (at all, when it lacks
/// it). Counting, not only looking, sees a short paragraph's `1` merged into a segment
/// whose own paragraph holds a `1` too.
fn holds_another(text_runs: &DigitRuns<'_>, index: usize, held: &[&[u8]]) -> bool {
    let times = |runs: &[&[u8]], number: &[u8]| runs.iter().filter(|r| **r == number).count();
    let own = text_runs.of_text(index);
    // From the segment's side: a faithful translation holds its own numbers as often as
    // its paragraph, so the other paragraphs are searched only for a number held more.
    held.iter().any(|number| {
        times(held, number) > times(own, number)
            && (0..text_runs.ends.len())
                .any(|j| j != index && text_runs.of_text(j).contains(number))
    })
}

/// The first of `segments` (segment `i` written for paragraph `i`) that holds a number
/// of another paragraph more times than its own paragraph does (`holds_another`): text of
/// that paragraph moved into it (a merge), whatever the rest of the reply turns out to be.
pub fn holding_another_number(texts: &[&str], segments: &[&str]) -> Option<usize> {
    // Each text's runs once, not once per segment: a stream asks on every value.
    let text_runs = DigitRuns::of(texts.iter().map(|t| Some(*t)));
    if text_runs.runs.is_empty() {
        return None;
    }
    let mut segment_runs = DigitRuns::default();
    (0..segments.len().min(texts.len())).find(|&index| {
        segment_runs.clear();
        segment_runs.push(Some(segments[index]));
        holds_another(&text_runs, index, segment_runs.of_text(0))
    })
}

/// The runs of ASCII digits of several texts, in one vector (two allocations for a
/// whole batch rather than one per text): text `i`'s runs are `runs[ends[i - 1]..ends[i]]`.
#[derive(Default)]
struct DigitRuns<'a> {
    runs: Vec<&'a [u8]>,
    ends: Vec<usize>,
}

impl<'a> DigitRuns<'a> {
    /// The runs of each of `texts`; `None` stands for a text that is not there, which has
    /// none.
    fn of(texts: impl ExactSizeIterator<Item = Option<&'a str>>) -> DigitRuns<'a> {
        let mut runs = DigitRuns {
            runs: Vec::new(),
            ends: Vec::with_capacity(texts.len()),
        };
        for text in texts {
            runs.push(text);
        }
        runs
    }

    fn push(&mut self, text: Option<&'a str>) {
        if let Some(text) = text {
            push_digit_runs(text, &mut self.runs);
        }
        self.ends.push(self.runs.len());
    }

    fn clear(&mut self) {
        self.runs.clear();
        self.ends.clear();
    }

    /// The runs of the `index`th text.
    fn of_text(&self, index: usize) -> &[&'a [u8]] {
        let start = index.checked_sub(1).map_or(0, |i| self.ends[i]);
        &self.runs[start..self.ends[index]]
    }
}

/// Appends the runs of ASCII digits in `text` to `runs`. Every byte of every text and
/// segment passes through here, and most bytes are not digits: those are skipped a block at
/// a time.
fn push_digit_runs<'a>(text: &'a str, runs: &mut Vec<&'a [u8]>) {
    let mut rest = text.as_bytes();
    while let Some(start) = first_digit(rest) {
        let digits = &rest[start..];
        let len = digits
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(digits.len());
        let (run, after) = digits.split_at(len);
        runs.push(run);
        rest = after;
    }
}

/// The index of the first ASCII digit in `bytes`.
fn first_digit(bytes: &[u8]) -> Option<usize> {
    first_byte(bytes, digit_bits)
}

/// The high bit of each of the eight bytes of `word` that is an ASCII digit
/// (0x30..=0x39): the "bytes between m and n" test of the bit-twiddling folklore with
/// m = 0x2F and n = 0x3A. Exact for every byte: bytes of 0x80 and above are excluded by
/// `!word`.
fn digit_bits(word: u64) -> u64 {
    const LOW7: u64 = ONES * 127;
    let low = word & LOW7;
    let below_n = (ONES * (127 + 0x3A)).wrapping_sub(low);
    let above_m = low.wrapping_add(ONES * (127 - 0x2F));
    below_n & !word & above_m & (ONES * 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `super::check` on any strings: the tests write their replies as owned ones.
    fn check<S: AsRef<str>, T: AsRef<str>>(texts: &[S], segments: &[T]) -> Result<(), Mismatch> {
        let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        let segments: Vec<&str> = segments.iter().map(AsRef::as_ref).collect();
        super::check(&texts, &segments)
    }

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_faithful_reply_passes() {
        let texts = ["Prices rose by 50% in 2024.", "Ingredients:", "Thanks."];
        let reply = owned(&["Die Preise stiegen 2024 um 50 %.", "Zutaten:", "Danke."]);
        assert_eq!(check(&texts, &reply), Ok(()));
        // Numbers written out in words prove nothing.
        let words = owned(&[
            "Die Preise stiegen um fünfzig Prozent.",
            "Zutaten:",
            "Danke.",
        ]);
        assert_eq!(check(&texts, &words), Ok(()));
    }

    #[test]
    fn digit_runs_are_maximal() {
        let runs = |t| {
            let mut runs = Vec::new();
            push_digit_runs(t, &mut runs);
            runs.iter().map(|r| r.to_vec()).collect::<Vec<_>>()
        };
        assert_eq!(
            runs("a1b22c333"),
            vec![b"1".to_vec(), b"22".to_vec(), b"333".to_vec()]
        );
        assert_eq!(runs("2024 and ½ 7"), vec![b"2024".to_vec(), b"7".to_vec()]);
        assert_eq!(runs("123"), vec![b"123".to_vec()]);
        assert!(runs("").is_empty() && runs("no digits").is_empty());
    }

    #[test]
    fn the_word_test_finds_exactly_the_digits() {
        for byte in 0..=255u8 {
            for position in 0..8 {
                let mut bytes = [b'a'; 8];
                bytes[position] = byte;
                assert_eq!(
                    digit_bits(u64::from_le_bytes(bytes)) != 0,
                    byte.is_ascii_digit(),
                    "byte {byte} at {position}"
                );
                // Every other byte a non-digit neighbour of the range, or a high byte.
                for other in [0x2F, 0x3A, 0x80, 0xB0, 0xFF, 0x00] {
                    let mut mixed = [other; 8];
                    mixed[position] = byte;
                    assert_eq!(
                        digit_bits(u64::from_le_bytes(mixed)) != 0,
                        byte.is_ascii_digit(),
                        "byte {byte} at {position} among {other}"
                    );
                }
            }
        }
        // Random words, with bytes drawn near the range often.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let word = state ^ (state >> 29) & 0x3F3F_3F3F_3F3F_3F3F;
            let naive = word.to_le_bytes().iter().any(u8::is_ascii_digit);
            assert_eq!(digit_bits(word) != 0, naive, "word {word:#018x}");
        }
        let text = "no digits for a while, then 42 and ünïcödé 7";
        for start in 0..text.len() {
            let bytes = &text.as_bytes()[start..];
            assert_eq!(
                first_digit(bytes),
                bytes.iter().position(u8::is_ascii_digit)
            );
        }
    }

    #[test]
    fn a_number_inside_a_longer_number_is_not_that_number() {
        let texts = ["Item 12.", "Year 2012."];
        assert_eq!(check(&texts, &owned(&["Punkt 12.", "Jahr 2012."])), Ok(()));
        assert_eq!(
            check(&texts, &owned(&["Punkt.", "Jahr 2012 und 12."])),
            Err(Mismatch::Misaligned { index: 0 }),
            "the first paragraph's 12 moved under the second, whose 2012 is another number"
        );
        assert_eq!(
            check(
                &["No 7 here.", "Nothing."],
                &owned(&["Nichts.", "Nr 7 hier."])
            ),
            Err(Mismatch::Misaligned { index: 0 })
        );
        // The fuzzer's case: paragraph 1's text merged into segment 0, whose own
        // paragraph has a 12 but no 1.
        let texts = [
            "0 paragraph 12 apples",
            "1 paragraph pears",
            "2 paragraph plums",
        ];
        let merged = owned(&["0 Absatz 12 Äpfel 1 Absatz Birnen", "x", "2 Absatz"]);
        assert_eq!(
            check(&texts, &merged),
            Err(Mismatch::Misaligned { index: 1 })
        );
        assert_eq!(
            holding_another_number(&texts, &["0 Absatz 12 Äpfel 1 Absatz Birnen"]),
            Some(0)
        );
    }

    #[test]
    fn evidence_of_a_shift_is_a_mismatch() {
        let texts = ["Click to start.", "The file is 20 MB.", "Restart it."];
        let preamble = owned(&[
            "Here are the translations:",
            "Klicken.",
            "Die Datei hat 20 MB.",
        ]);
        assert_eq!(
            check(&texts, &preamble),
            Err(Mismatch::Misaligned { index: 0 })
        );
        let repeated = owned(&["Klicken.", "Die Datei hat 20 MB.", "Die Datei hat 20 MB."]);
        assert_eq!(
            check(&texts, &repeated),
            Err(Mismatch::Misaligned { index: 2 })
        );
        let swapped = owned(&["Die Datei hat 20 MB.", "Klicken.", "Neu starten."]);
        assert_eq!(
            check(&texts, &swapped),
            Err(Mismatch::Misaligned { index: 1 })
        );
    }
}
