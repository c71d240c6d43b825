//! The markers layout (`segmentFormat: "markers"`): every text of a batch between its own
//! tag-like pair, `<s21>` … `</s21>` (the numbers are labels, see [`number`]), and the scan
//! that finds those pairs in a reply.
//!
//! The tag is chosen per batch so that no text of the batch holds anything the scan
//! would read as a marker of it (`<s`, `< s`, `</s`, `< / S` … followed by a digit): a
//! paragraph may contain any text, other batches' markers included, and a translation
//! that copies its paragraph's text cannot forge a pair. Which segment of a reply proves
//! which item is decided by the `proof` module.

use crate::byte_scan::{byte_bits, first_byte};

/// Tags tried in turn; beyond them, two-letter tags (`sa`, `sb`, …) are tried.
const TAGS: [&str; 8] = ["s", "t", "u", "v", "w", "x", "y", "z"];

/// The tag of a batch's markers: the first whose markers occur in none of `texts`.
pub fn choose_tag<S: AsRef<str>>(texts: &[S]) -> String {
    let free = |tag: &str| !texts.iter().any(|t| holds_marker(t.as_ref(), tag));
    if let Some(tag) = TAGS.iter().find(|tag| free(tag)) {
        return (*tag).to_owned();
    }
    // Texts finite, tags unbounded: the search ends.
    let mut n: u64 = 0;
    loop {
        let mut tag = String::from("s");
        let mut k = n;
        loop {
            tag.push(char::from(b'a' + (k % 26) as u8));
            k /= 26;
            if k == 0 {
                break;
            }
        }
        if free(&tag) {
            return tag;
        }
        n += 1;
    }
}

/// Marker numbers of the first segments: two-digit labels in no counting order.
const SHUFFLED: usize = 89;
/// `number(i) = 10 + (STEP · i + 11) mod 89` for the first 89 segments: 37 is prime to
/// 89, so the numbers are distinct; `INVERSE` is 37's inverse modulo 89 (37 · 77 = 32 · 89
/// + 1).
const STEP: usize = 37;
const INVERSE: usize = 77;

/// The number in the markers of segment `index` (0-based): a label the model must copy,
/// not a count it could continue (21, 58, 95, 43, …; past the 89th segment, 100 + index).
/// A model that merges, drops or splits a segment and then numbers the rest by counting
/// writes a number the batch does not have at its very next marker.
pub fn number(index: usize) -> usize {
    if index < SHUFFLED {
        10 + (STEP * index + 11) % SHUFFLED
    } else {
        100 + index
    }
}

/// The segment index of marker number `number`, if it is one [`number`] gives.
pub fn index_of(number: usize) -> Option<usize> {
    match number {
        10..=98 => Some(((number - 10 + SHUFFLED - 11) * INVERSE) % SHUFFLED),
        n if n >= 100 + SHUFFLED => Some(n - 100),
        _ => None,
    }
}

/// The `[open, close]` pair of marker number `id`.
pub fn pair(tag: &str, id: usize) -> (String, String) {
    let mut open = String::with_capacity(tag.len() + 12);
    open.push('<');
    open.push_str(tag);
    push_number(&mut open, id);
    open.push('>');
    let mut close = String::with_capacity(open.len() + 1);
    close.push_str("</");
    close.push_str(open.get(1..).unwrap_or(""));
    (open, close)
}

/// The ids of a call of `count` texts: "1", "2", ... (the numbers of their markers).
pub fn ids(count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    for id in 1..=count {
        let mut text = String::with_capacity(4);
        push_number(&mut text, id);
        ids.push(text);
    }
    ids
}

/// Appends `n` in decimal, without the formatting machinery (every call makes its ids).
fn push_number(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in digits.get(at..).unwrap_or(&[]) {
        out.push(char::from(d));
    }
}

/// What the model is sent: each text between its markers, one segment per line.
pub fn lay_out<S: AsRef<str>>(texts: &[S], pairs: &[(String, String)]) -> String {
    let mut length = texts.len();
    for (t, (open, close)) in texts.iter().zip(pairs) {
        length += t.as_ref().len() + open.len() + close.len();
    }
    let mut text = String::with_capacity(length);
    for (i, (t, (open, close))) in texts.iter().zip(pairs).enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(open);
        text.push_str(t.as_ref());
        text.push_str(close);
    }
    text
}

/// The paragraph that tells a model how to answer a batch of `count` segments.
pub fn instructions(tag: &str, count: usize) -> String {
    let (first_open, first_close) = pair(tag, number(0));
    let (last_open, last_close) = pair(tag, number(count.saturating_sub(1)));
    format!(
        "The text holds {count} segments, each between its own pair of markers, from \
         {first_open}…{first_close} to {last_open}…{last_close}. Translate every segment on its \
         own and answer with each translation between the same pair of markers as its \
         segment, in the same order, one segment per line. The numbers in the markers are \
         labels, not a count: copy each marker exactly as given; never merge, split, drop, \
         add or renumber segments; do not translate or change the markers; write nothing \
         outside them."
    )
}

/// A marker found in a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// Its number (`<s3>` → 3); `None` when too long to be one of the batch's.
    pub id: Option<usize>,
    /// A closing marker (`</s3>`).
    pub close: bool,
    /// Byte offsets of the whole marker in the reply.
    pub start: usize,
    pub end: usize,
}

/// Every marker of `tag` in `text`, in order. Case and white space inside a marker are
/// tolerated (`<S1>`, `< s1 >`, `</ s1>`): models write them so, and they cannot move
/// text from one segment to another.
pub fn scan(text: &str, tag: &str) -> Vec<Marker> {
    let bytes = text.as_bytes();
    // Room for the markers of a default batch (4 pairs) without growing.
    let mut found = Vec::with_capacity(8);
    let mut at = 0;
    // Every `at` is a character boundary: it follows a '<' or a '>'.
    while let Some(start) = find_lt(text, at) {
        match marker_at(bytes, start, tag.as_bytes()) {
            Some(marker) => {
                at = marker.end;
                found.push(marker);
            }
            None => at = start + 1,
        }
    }
    found
}

/// The offset of the first `<` in `text` at or after `from` (a character boundary).
/// Skipped to thirty-two bytes a step: a byte loop was 10% of the core's per-item time in
/// batches of four, and `str::find` (memchr) still about 8%.
pub(crate) fn find_lt(text: &str, from: usize) -> Option<usize> {
    let rest = text.get(from..)?.as_bytes();
    first_byte(rest, |word| byte_bits(word, b'<')).map(|at| from + at)
}

/// Whether `text` holds something `scan` would read as a marker of `tag`.
fn holds_marker(text: &str, tag: &str) -> bool {
    let bytes = text.as_bytes();
    let tag = tag.as_bytes();
    // Most texts hold no '<' at all: `find_lt` skips to each one (a byte loop is slower).
    let mut from = 0;
    while let Some(i) = find_lt(text, from) {
        let mut p = skip_spaces(bytes, i + 1);
        if bytes.get(p) == Some(&b'/') {
            p = skip_spaces(bytes, p + 1);
        }
        if starts_with_tag(bytes, p, tag)
            && bytes.get(p + tag.len()).is_some_and(u8::is_ascii_digit)
        {
            return true;
        }
        from = i + 1;
    }
    false
}

fn marker_at(bytes: &[u8], start: usize, tag: &[u8]) -> Option<Marker> {
    let mut p = skip_spaces(bytes, start + 1);
    let close = bytes.get(p) == Some(&b'/');
    if close {
        p = skip_spaces(bytes, p + 1);
    }
    if !starts_with_tag(bytes, p, tag) {
        return None;
    }
    p += tag.len();
    let digits_start = p;
    while bytes.get(p).is_some_and(u8::is_ascii_digit) {
        p += 1;
    }
    if p == digits_start {
        return None;
    }
    let digits = bytes.get(digits_start..p)?;
    let id = if digits.len() > 9 {
        None
    } else {
        Some(
            digits
                .iter()
                .fold(0usize, |n, d| n * 10 + usize::from(d - b'0')),
        )
    };
    p = skip_spaces(bytes, p);
    (bytes.get(p) == Some(&b'>')).then_some(Marker {
        id,
        close,
        start,
        end: p + 1,
    })
}

fn skip_spaces(bytes: &[u8], mut p: usize) -> usize {
    while bytes.get(p).is_some_and(|b| *b == b' ' || *b == b'\t') {
        p += 1;
    }
    p
}

fn starts_with_tag(bytes: &[u8], p: usize, tag: &[u8]) -> bool {
    bytes
        .get(p..p + tag.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tag_unless_a_text_holds_its_markers() {
        assert_eq!(choose_tag(&["plain", "text"]), "s");
        assert_eq!(choose_tag(&["a <s1> b"]), "t");
        assert_eq!(choose_tag(&["a < / S12 >"]), "t");
        assert_eq!(choose_tag(&["S1 and s2 without brackets"]), "s");
        let all: Vec<String> = TAGS.iter().map(|t| format!("<{t}1>")).collect();
        assert_eq!(choose_tag(&all), "sa");
    }

    #[test]
    fn chosen_markers_occur_in_no_text() {
        let texts = [
            "<s1>x</s1>",
            "<t2>",
            "</u3>",
            "<v1",
            "<w9>",
            "<x1>",
            "<y1>",
            "<z1>",
            "<sa1>",
        ];
        let tag = choose_tag(&texts);
        for id in 1..=texts.len() {
            let (open, close) = pair(&tag, id);
            assert!(texts
                .iter()
                .all(|t| !t.contains(&open) && !t.contains(&close)));
        }
    }

    #[test]
    fn marker_numbers_are_distinct_labels_in_no_counting_order() {
        let numbers: Vec<usize> = (0..200).map(number).collect();
        assert_eq!(numbers[..4], [21, 58, 95, 43]);
        for (i, n) in numbers.iter().enumerate() {
            assert_eq!(index_of(*n), Some(i));
        }
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), numbers.len());
        // Counting from the first marker hits no other segment's number soon.
        assert!((1..=9).all(|k| index_of(k).is_none()));
        assert_eq!(index_of(99), None);
    }

    #[test]
    fn ids_are_decimal_numbers_from_one() {
        assert_eq!(
            ids(12)[..],
            ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"]
        );
        assert_eq!(ids(105)[104], "105");
    }

    #[test]
    fn layout_is_one_marked_segment_per_line() {
        let pairs = [pair("s", 1), pair("s", 2)];
        assert_eq!(lay_out(&["a", "b\nc"], &pairs), "<s1>a</s1>\n<s2>b\nc</s2>");
    }

    #[test]
    fn instructions_name_the_batch_markers() {
        let text = instructions("t", 3);
        assert!(text.contains("<t21>…</t21>") && text.contains("<t95>…</t95>"));
        assert!(text.contains("3 segments"));
    }

    #[test]
    fn scan_tolerates_case_and_inner_spaces() {
        let found = scan("x <S1 >a</ s1> <s2>b< /s2 > <sx> <s>", "s");
        let ids: Vec<(Option<usize>, bool)> = found.iter().map(|m| (m.id, m.close)).collect();
        assert_eq!(
            ids,
            [
                (Some(1), false),
                (Some(1), true),
                (Some(2), false),
                (Some(2), true)
            ]
        );
    }
}
