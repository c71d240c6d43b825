//! Evidence that no segment of a batch reply moved: which segments no drop or merge with
//! renumbering can have put under the wrong id.
//!
//! The threat is a shift. A model that drops segment `j`, or merges `j` and `j + 1` into
//! pair `j`, and then writes the rest under the markers in their order of appearance,
//! puts every later source's translation one pair early and frees the last pair, which it
//! may leave out or fill with anything (a closing remark, a filler of a paragraph's
//! length). Among paragraphs of like length without numbers, nothing in the lengths
//! shows it, and a filled last pair looks like a faithful one. So the pacer trusts a
//! segment only when the reply itself refutes every shift that would have moved it:
//!
//! - **Words.** A segment keeps words of its own source that the next source lacks, and
//!   none of the next source's own: names, numbers and words a translation keeps (or a
//!   label kept as it is, every word of it). A shifted segment holds the next source's
//!   translation, whose kept words are that source's. Words are runs of letters and
//!   digits, compared without ASCII case; a word *tells* when it holds a digit or has
//!   four characters or more (short words recur by chance across languages).
//! - **Lengths.** Read as it stands, every segment fits its source within 1.5× of the
//!   batch's median ratio, and read as shifted at `j` (by a drop, a merge or a split),
//!   the ratios scatter clearly more (their summed log deviation grows by more than ln 2).
//!
//! Each segment answers for itself (`unshifted`), so that a second damage that puts the
//! rest back in place (a split, then a drop: the count kept) cannot vouch for the
//! segments between: segment `i` is trusted when it holds its own source and not the
//! next one's (no drop or merge before it), nor the one before's (no split before it),
//! when it is not merged with the next (the next pair holds its own source, or segment
//! `i` keeps every word of its own and none of the next one's), and when the next pair
//! is not the rest of it (the next pair holds its own source and not this one's); or,
//! where the words say
//! nothing, when the lengths refute every shift at or before it. The last pair is
//! trusted when it holds its own source's words and not the one before's, or the lengths
//! refute every shift. The other way round, a segment that holds another source's
//! telling words and none of its own is another paragraph's text (`holds_another`):
//! rule-1 damage. Whatever no evidence decides is not trusted: it goes out again as a
//! smaller batch.

use crate::proof::{char_len, median, scatter, shifted_readings};

/// The words of a text: maximal runs of letters and digits.
pub(crate) fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect()
}

/// Whether `words` holds `word`, without ASCII case.
fn holds(words: &[&str], word: &str) -> bool {
    words.iter().any(|w| w.eq_ignore_ascii_case(word))
}

/// A word that rarely recurs by chance: one with a digit, or four characters or more.
fn telling(word: &str) -> bool {
    word.bytes().any(|b| b.is_ascii_digit()) || word.chars().nth(3).is_some()
}

/// Whether a segment (`segment`, its words) reads as the translation of the source whose
/// words are `own` rather than of the one whose words are `other`.
pub(crate) fn belongs(segment: &[&str], own: &[&str], other: &[&str]) -> bool {
    let only = |from: &'_ [&'_ str], not_in: &'_ [&'_ str], w: &str| {
        holds(from, w) && !holds(not_in, w) && holds(segment, w)
    };
    let foreign = other.iter().any(|w| telling(w) && only(other, own, w));
    if foreign {
        return false;
    }
    let telling_own = own.iter().any(|w| telling(w) && only(own, other, w));
    let every_own = !own.is_empty()
        && own.iter().all(|w| holds(segment, w))
        && !other.iter().all(|w| holds(segment, w));
    telling_own || every_own
}

/// The words of each source, for [`holds_another`] and [`unshifted`].
pub(crate) fn source_words<'a>(sources: &[&'a str]) -> Vec<Vec<&'a str>> {
    sources.iter().map(|s| words(s)).collect()
}

/// Whether the segment written for source `k` reads as another paragraph's text: it holds
/// a telling word of another source that source `k` lacks, and neither a telling word of
/// its own nor all of its own words (a translation swapped or moved under markers kept in
/// order). Rule-1 damage.
pub(crate) fn holds_another(segment: &str, sources: &[Vec<&str>], k: usize) -> bool {
    let Some(own) = sources.get(k) else {
        return false;
    };
    let segment = words(segment);
    let owns = own.iter().any(|w| telling(w) && holds(&segment, w))
        || (!own.is_empty() && own.iter().all(|w| holds(&segment, w)));
    !owns
        && sources.iter().enumerate().any(|(j, other)| {
            j != k
                && other
                    .iter()
                    .any(|w| telling(w) && !holds(own, w) && holds(&segment, w))
        })
}

/// For each of `sources`, whether its segment is unshifted (see the module's docs).
/// `segments`: the segments known so far, in id order (`None` for a missing or damaged
/// one); while a stream arrives, its closed pairs only. `last`: whether `segments` holds
/// the last pair as the reply's end left it and it fits (no suspect last pair vouches for
/// anything). `ratio`: the translation-to-source length ratio the provider's earlier
/// proven replies showed for the language pair, if any, which judges a merge where only
/// one segment is known. `open`: while a stream arrives, the text written so far of the
/// pair after the closed ones; a telling word of its own there counts (no later text
/// takes it back), a word still being written at its end does not.
pub(crate) fn unshifted(
    sources: &[&str],
    segments: &[Option<&str>],
    last: bool,
    ratio: Option<f64>,
    open: Option<&str>,
) -> Vec<bool> {
    let n = sources.len();
    let source_words = source_words(sources);
    // The words written so far, without a last one that may still go on ("1" of "12").
    let open_words = open.map(|open| {
        let mut written = words(open);
        if open.chars().last().is_some_and(char::is_alphanumeric) {
            written.pop();
        }
        written
    });
    let shows_own = |seg: &[&str], k: usize, other: usize| {
        let (own, other) = (&source_words[k], &source_words[other]);
        own.iter()
            .any(|w| telling(w) && !holds(other, w) && holds(seg, w))
    };
    // Whether segment `k` holds source `k` and not source `other`: a closed segment by
    // `belongs`; the one still being written (`open`, right after the closed ones) by a
    // telling word of its own that `other` lacks, which no later text takes back.
    let own_against = |k: usize, other: usize| match segments.get(k).copied().flatten() {
        Some(seg) => belongs(&words(seg), &source_words[k], &source_words[other]),
        None => {
            k == segments.len()
                && open_words
                    .as_deref()
                    .is_some_and(|seg| shows_own(seg, k, other))
        }
    };
    // Evidence at segment `k` that it holds its own source and not the next one's.
    let aligned = |k: usize| k + 1 < n && own_against(k, k + 1);
    // And not the one before's.
    let aligned_back = |k: usize| k >= 1 && k < n && own_against(k, k - 1);
    // A segment that keeps every word of its own source and none of the next one's own:
    // a translation that keeps words would keep the next one's too, had it merged them.
    let keeps_only_own = |i: usize| {
        let (own, next) = (&source_words[i], &source_words[i + 1]);
        let next_only: Vec<&&str> = next.iter().filter(|w| !holds(own, w)).collect();
        !own.is_empty()
            && !next_only.is_empty()
            && segments.get(i).copied().flatten().is_some_and(|seg| {
                let seg = words(seg);
                own.iter().all(|w| holds(&seg, w)) && !next_only.iter().any(|w| holds(&seg, w))
            })
    };
    let by_length = lengths_refute(sources, segments, last, ratio);
    let at = |evidence: &[bool], k: usize| evidence.get(k).copied().unwrap_or(false);
    // The lengths refute every single shift at `j <= i` (each reading scatters clearly
    // more), for `i` in order: a reply whose lengths vary enough needs no words.
    let mut by_lengths_up_to = Vec::with_capacity(n);
    let mut all = true;
    for j in 0..n {
        all &= at(&by_length.dropped, j) && at(&by_length.merged, j) && at(&by_length.whole, j);
        by_lengths_up_to.push(all);
    }
    let up_to = |i: usize| at(&by_lengths_up_to, i);
    (0..n)
        .map(|i| {
            if i + 1 == n {
                // The last: its own words and not the one before's, which holds its own
                // (no filler, nothing moved into it, no rest of a split), or lengths that
                // refute every shift before it. A lone segment has nothing to be shifted
                // from.
                return last && (i == 0 || (aligned_back(i) && aligned(i - 1)) || up_to(i - 1));
            }
            // Not the next paragraph's text (a drop or merge before it moved that here).
            let not_next = aligned(i) || up_to(i);
            // Not the one before's (a split before it moved that here), nor the rest of
            // its own translation (the pair before then holds its first part).
            let not_before = i == 0 || (aligned_back(i) && aligned(i - 1)) || up_to(i - 1);
            // Not merged with the next: the next pair holds its own paragraph.
            let next_own = if i + 2 < n {
                aligned(i + 1)
            } else {
                aligned_back(i + 1)
            };
            let not_merged = next_own || at(&by_length.merged, i) || keeps_only_own(i);
            // Not a part: the next pair is not the rest of it. (No word can show that a
            // segment is whole: a source's tail may hold no word at all.)
            let not_part = aligned_back(i + 1) || at(&by_length.whole, i);
            not_next && not_before && not_merged && not_part
        })
        .collect()
}

/// For each `j`, whether the lengths refute a drop, and a merge, at `j`. Judged on the
/// leading known segments short of the last, each within 1.5× of their median
/// translation-to-source ratio as they stand, at least two (one, for a merge, with
/// `ratio`):
/// - a drop: read as shifted at `j` (each segment from `j` on against the next source),
///   they scatter clearly more (by more than ln 2 in summed log deviation);
/// - a merge: read so, they scatter clearly more too, or segment `j` fits its own
///   source within 1.25× of the others' median ratio (or of `ratio`, the provider's
///   learned one, where `j` is the only segment known),
///   and is more than 1.5× shorter than the two sources it would hold merged predict
///   (a merge doubles a segment among like lengths, which the scatter of the whole
///   reading dilutes);
/// - a split (segment `j` a part of its translation, each later one the one before's):
///   read so (each later segment against the source before its own) they scatter
///   clearly more; or, where `j` is the only segment known, it fits its own source
///   within 1.25× of `ratio`, a whole translation.
fn lengths_refute(
    sources: &[&str],
    segments: &[Option<&str>],
    last: bool,
    ratio: Option<f64>,
) -> ByLength {
    let n = sources.len();
    let known = segments
        .iter()
        .take(n.saturating_sub(1))
        .take_while(|s| s.is_some())
        .count();
    let mut refuted = ByLength {
        dropped: vec![false; known],
        merged: vec![false; known],
        whole: vec![false; known],
    };
    let source: Vec<f64> = sources[..=known]
        .iter()
        .map(|s| char_len(s).max(1.0))
        .collect();
    let segment: Vec<f64> = segments[..known]
        .iter()
        .map(|s| char_len(s.unwrap_or_default()).max(1.0))
        .collect();
    // Within 1.25× of `ratio` (a log ratio) as its own source's whole translation.
    let whole =
        |j: usize, ratio: f64| ((segment[j] / source[j]).ln() - ratio).abs() <= 1.25f64.ln();
    // Whole, and not the two sources merged.
    let fits_alone = |j: usize, ratio: f64| {
        let as_merged = (segment[j] / (source[j] + source[j + 1])).ln() - ratio;
        whole(j, ratio) && as_merged < -(1.5f64.ln())
    };
    if known < 2 {
        if let (1, Some(ratio)) = (known, ratio.filter(|r| *r > 0.0)) {
            refuted.merged[0] = fits_alone(0, ratio.ln());
            refuted.whole[0] = whole(0, ratio.ln());
        }
        return refuted;
    }
    let as_read: Vec<f64> = (0..known).map(|k| (segment[k] / source[k]).ln()).collect();
    let centre = median(&as_read);
    if as_read.iter().any(|r| (r - centre).abs() > 1.5f64.ln()) {
        return refuted;
    }
    let base = scatter(&as_read);
    let mut others: Vec<f64> = Vec::with_capacity(known);
    // The last segment, when it may vouch and every one before it is known.
    let tail = (last && known + 1 == n)
        .then(|| segments.get(known).copied().flatten())
        .flatten()
        .map(|s| char_len(s).max(1.0));
    let mut with_tail: Vec<f64> = Vec::with_capacity(known + 1);
    for j in 0..known {
        let [as_merged, as_dropped] = shifted_readings(&source, &segment, j);
        refuted.dropped[j] = scatter(&as_dropped) > base + 2f64.ln();
        others.clear();
        others.extend((0..known).filter(|&k| k != j).map(|k| as_read[k]));
        let ratio = median(&others);
        refuted.merged[j] = scatter(&as_merged) > base + 2f64.ln() || fits_alone(j, ratio);
        // Read as split at `j`: each later segment against the source before its own,
        // the last one too when it may vouch (a split before it moves it as well).
        let mut as_split: Vec<f64> = (0..known)
            .map(|k| {
                if k > j {
                    (segment[k] / source[k - 1]).ln()
                } else {
                    as_read[k]
                }
            })
            .collect();
        let mut straight = base;
        if let Some(tail) = tail {
            as_split.push((tail / source[known - 1]).ln());
            with_tail.clear();
            with_tail.extend_from_slice(&as_read);
            with_tail.push((tail / source[known]).ln());
            straight = scatter(&with_tail);
        }
        // Not `whole` against the others' ratio: when every segment is a part (splits
        // under markers written by position), the parts agree with each other.
        refuted.whole[j] = scatter(&as_split) > straight + 2f64.ln();
    }
    refuted
}

/// What the lengths refute at each position (see [`lengths_refute`]).
struct ByLength {
    /// A drop there.
    dropped: Vec<bool>,
    /// A merge of it with the next.
    merged: Vec<bool>,
    /// A split of it: it is as long as its source's whole translation.
    whole: Vec<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIKE: [&str; 4] = [
        "The cat sat on the warm mat today.",
        "A dog ran across the big green park.",
        "The bird sang in the tall old tree.",
        "My friend read a long book by the sea.",
    ];

    fn all<'a>(segments: &[&'a str]) -> Vec<Option<&'a str>> {
        segments.iter().map(|s| Some(*s)).collect()
    }

    #[test]
    fn like_lengths_without_kept_words_prove_nothing() {
        let faithful = [
            "Le chat s'est assis sur le tapis chaud.",
            "Un chien a traversé le grand parc vert.",
            "L'oiseau chantait dans le vieil arbre.",
            "Mon ami lisait un gros livre près de la mer.",
        ];
        assert_eq!(
            unshifted(&LIKE, &all(&faithful), true, None, None),
            [false, false, false, false]
        );
    }

    #[test]
    fn kept_words_prove_each_segment_and_show_a_shift() {
        let upper: Vec<String> = LIKE.iter().map(|s| s.to_uppercase()).collect();
        let faithful: Vec<&str> = upper.iter().map(String::as_str).collect();
        assert_eq!(
            unshifted(&LIKE, &all(&faithful), true, None, None),
            [true, true, true, true]
        );
        // The first dropped, the rest one pair early, a remark in the last pair.
        let shifted = [
            faithful[1],
            faithful[2],
            faithful[3],
            "Let me know if you need more help.",
        ];
        assert_eq!(
            unshifted(&LIKE, &all(&shifted), true, None, None),
            [false, false, false, false]
        );
        // The second dropped: the first holds its own words, but the next pair no longer
        // shows that the first is whole (a split's rest would stand there).
        let shifted = [faithful[0], faithful[2], faithful[3], "Anything else?"];
        assert_eq!(
            unshifted(&LIKE, &all(&shifted), true, None, None),
            [false, false, false, false]
        );
    }

    #[test]
    fn short_labels_kept_whole_are_evidence() {
        let sources = ["a", "b", "c"];
        assert_eq!(
            unshifted(&sources, &all(&["A", "B", "C"]), true, None, None),
            [true, true, true]
        );
        assert_eq!(
            unshifted(&sources, &all(&["B", "C", "Done."]), true, None, None),
            [false, false, false]
        );
    }

    #[test]
    fn numbers_of_each_paragraph_prove_it() {
        let sources = ["Chapter 1 begins", "Chapter 2 follows", "Chapter 3 ends"];
        let faithful = ["Kapitel 1 beginnt", "Kapitel 2 folgt", "Kapitel 3 endet"];
        assert_eq!(
            unshifted(&sources, &all(&faithful), true, None, None),
            [true, true, true]
        );
        let shifted = ["Kapitel 2 folgt", "Kapitel 3 endet", "Gern geschehen!"];
        assert_eq!(
            unshifted(&sources, &all(&shifted), true, None, None),
            [false, false, false]
        );
    }

    #[test]
    fn unlike_lengths_prove_what_they_always_proved() {
        let sources = [
            "Short one.",
            "A much longer paragraph follows the first, with many more words in it.",
            "Tiny.",
            "And a fourth one.",
        ];
        let faithful = [
            "Kurz eins.",
            "Ein viel längerer Absatz folgt dem ersten, mit vielen Wörtern darin.",
            "Winzig",
            "Und ein vierter.",
        ];
        assert_eq!(
            unshifted(&sources, &all(&faithful), true, None, None),
            [true, true, true, true]
        );
    }

    #[test]
    fn a_stream_so_far_is_judged_on_its_closed_segments() {
        let upper: Vec<String> = LIKE.iter().map(|s| s.to_uppercase()).collect();
        let closed = [Some(upper[0].as_str()), Some(upper[2].as_str())];
        assert_eq!(
            unshifted(&LIKE, &closed, false, None, None),
            [false, false, false, false]
        );
        let closed = [Some(upper[0].as_str()), Some(upper[1].as_str())];
        assert_eq!(
            unshifted(&LIKE, &closed, false, None, None),
            [true, false, false, false]
        );
        // The pair being written shows its own words already: the one before resolves.
        let open = Some("A DOG RAN ACROSS ");
        assert_eq!(
            unshifted(&LIKE, &closed[..1], false, None, open),
            [true, false, false, false]
        );
    }
}
