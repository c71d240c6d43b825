//! Which segments of a streamed reply are proven by its beginning alone, whatever the
//! rest of it holds (early resolution).
//!
//! An early resolution can never be undone, so it may rest only on what the beginning
//! shows. The threat is a shift: a model that merged, dropped or split segment `j` moves
//! text across the boundaries after it. With markers numbered by counting (1, 2, 3 …), a
//! model that then numbered the rest anew would put every later segment under the wrong
//! id, and only the reply's end would show it (a missing or filler last pair, an unknown
//! id). The batch's marker numbers are labels in no counting order (`markers::number`:
//! 21, 58, 95, 43 …), which a model must copy from the segment it translates: a shift
//! then shows as a skipped, repeated or unknown number at the very next marker, and a
//! model counting on writes a number the batch does not have.
//!
//! So segment `i` (from the second on; the first, whose length has nothing to be
//! compared with yet, also needs the second pair written long enough to rule out a merge
//! of the first two, `first_merge_refuted`, or closed, or its own length to read as the
//! first translation alone at the length ratio the provider's earlier proven replies
//! showed for the language pair, `first_fits_alone`) resolves early when the reply so far opens
//! with the pairs of segments `0 … i`, each with its own number, found once and in order, none broken, and none
//! damaged by Rule 14 of docs/reference.md (empty, another text of the batch, the same text as another
//! segment), followed by the open marker of segment `i + 1` and the first characters of
//! its text, enough to show that it can no longer end as rule-1 damage (not blank, and
//! no longer the beginning of any text of the batch or of a closed segment): damage
//! there would make `i` missing (rule 15), and a merge of `i` and `i + 1` would have
//! skipped `i + 1`'s number, a split repeated `i`'s.
//! The last segment waits for the end of the reply, where rules 14–18 read what is left
//! as a whole reply: its pair is judged only there (damage at the last position). The
//! one before it resolves once the last has begun, unless it reads as holding the last
//! one's translation too (`proof::merged_before_last`, as the end would judge it): a
//! model that merged the last two segments and filled the freed last number with a
//! remark leaves that trace.
//!
//! One damage the numbers cannot show: a model that copies them in their order of
//! appearance after it merged two segments (renumbering by position). Its trace is the
//! merged pair's length, so early resolution also stops as soon as the closed segments
//! read better as holding a merge (`merge_reads_better`), one of them holds another
//! paragraph's number more times than its own paragraph does (`holding_another_number`),
//! or one of them has a length that fits no translation of its source (`misfit_length`:
//! a remark in the freed number hides the merge from the readings). A drop among like
//! lengths leaves none of these traces, so on top of all that a segment resolves early
//! only when the closed segments refute every drop and merge that would have moved it
//! (`shift_evidence`), as the whole reply's rule 17 asks: never looser than the whole.

use crate::alignment::holding_another_number;
use crate::markers::{index_of, scan};
use crate::proof::{char_len, far_off, median, merged_before_last, scatter, shifted_readings};
use crate::shift_evidence::{holds_another, source_words, unshifted};

/// The leading pairs of a reply so far: the text of each pair of segments `0 … m - 1`
/// found in order, and whether an anomaly (a broken, repeated, unknown or out-of-order
/// marker) stopped the run. An open marker at the end with no close yet is not an anomaly.
#[derive(Debug)]
pub struct LeadingPairs<'a> {
    /// The texts of the pairs of segments `0 … m - 1`, trimmed.
    pub closed: Vec<&'a str>,
    /// The text after the open marker of segment `m`, when it is open at the end.
    pub open: Option<&'a str>,
    /// Whether something out of order followed the run.
    pub broken: bool,
}

/// The run of in-order pairs at the start of `reply` (markers of `tag`).
pub fn leading_pairs<'a>(reply: &'a str, tag: &str) -> LeadingPairs<'a> {
    let mut run = LeadingPairs {
        closed: Vec::new(),
        open: None,
        broken: false,
    };
    let mut opened: Option<usize> = None;
    for marker in scan(reply, tag) {
        let expected = run.closed.len();
        let own = marker.id.and_then(index_of) == Some(expected);
        match (opened, marker.close) {
            (None, false) if own => opened = Some(marker.end),
            (Some(from), true) if own => {
                run.closed
                    .push(reply.get(from..marker.start).unwrap_or("").trim());
                opened = None;
            }
            _ => {
                run.broken = true;
                return run;
            }
        }
    }
    run.open = opened.map(|from| reply.get(from..).unwrap_or(""));
    run
}

/// How many of the leading segments of a batch of `texts` the reply so far (`run`)
/// proves, whatever follows; `ratio`: the provider's translation-to-source length ratio
/// for the language pair, when its earlier proven replies showed one.
pub fn proven_count(texts: &[&str], run: &LeadingPairs<'_>, ratio: Option<f64>) -> usize {
    let closed = &run.closed[..];
    let n = texts.len();
    let m = closed.len().min(n);
    let sources: Vec<&str> = texts.iter().map(|t| t.trim()).collect();
    // Rule 14 on the run: damage stops it.
    let words = source_words(&sources);
    let clean = (0..m)
        .take_while(|&i| {
            let text = closed[i];
            let empty = text.is_empty() && !sources[i].is_empty();
            let other_source = (0..n).any(|j| sources[j] != sources[i] && sources[j] == text);
            let repeated = (0..m).any(|k| k != i && closed[k] == text && sources[k] != sources[i]);
            !(empty || other_source || repeated || holds_another(text, &words, i))
        })
        .count();
    // On every beginning of the run: a later segment that fits no reading (a remark in
    // a freed number) must not hide the merge the segments before it show.
    let checked = clean.min(n.saturating_sub(1));
    if (2..=checked).any(|k| merge_reads_better(&sources, &closed[..k])) {
        return 0;
    }
    // A closed segment holding another paragraph's number (more times than its own
    // paragraph does) holds text moved across the markers (a short paragraph merged into
    // a long one leaves the lengths fitting).
    if holding_another_number(&sources, &closed[..clean]).is_some() {
        return 0;
    }
    // A closed segment whose length fits no translation of its source (a remark or an
    // empty pair in a freed number) leaves no reading to judge a merge before it by.
    if misfit_length(&sources, &closed[..clean]) {
        return 0;
    }
    // Each needs its right neighbour begun past any rule-1 damage (or closed cleanly),
    // and not the last one: the last two segments wait for the end.
    let next_begun = clean == m
        && clean >= 1
        && !run.broken
        && run
            .open
            .is_some_and(|open| begun_past_damage(open, &sources, closed));
    let vouched = if next_begun {
        clean
    } else {
        clean.saturating_sub(1)
    };
    // The segment before the last once the last has begun, unless it reads as holding
    // the last one's translation too (a merge whose freed last number a remark fills,
    // judged at the median ratio of the segments before it, as the end would judge it);
    // the last one waits for the end.
    let before_last_clear = n >= 3 && vouched + 1 >= n && {
        let mut segments: Vec<Option<&str>> = closed[..n - 1].iter().map(|c| Some(*c)).collect();
        segments.push(None);
        !merged_before_last(texts, &segments)
    };
    let vouched = vouched.min(if before_last_clear {
        n - 1
    } else {
        n.saturating_sub(2)
    });
    // No looser than the whole reply: each needs every shift that would have moved it
    // refuted by the closed segments (a drop among like lengths leaves no other trace).
    let known: Vec<Option<&str>> = closed[..clean].iter().map(|c| Some(*c)).collect();
    // The segment being written right after the clean run may already show its own words.
    let open = (clean == m && !run.broken).then_some(run.open).flatten();
    // A closing marker begun after the text ends its last word (the evidence counts
    // only whole words: "1" may still become "12").
    let open = open.map(|open| {
        let written = before_marker_start(open);
        if written.len() < open.len() {
            format!("{written} ")
        } else {
            written.to_owned()
        }
    });
    let unshifted = unshifted(&sources, &known, false, ratio, open.as_deref());
    vouched.min(unshifted.iter().take_while(|u| **u).count())
}

/// The translation of each text that a marked string reply proves, read whole: by the
/// whole-reply rules (`proof::prove`), and whatever its beginning proves, as a stream of
/// it would have shown (`proven_by_beginnings`), so that streamed and whole replies read
/// alike. `ratio`: the provider's learned length ratio for the language pair.
pub fn whole_reading(
    texts: &[&str],
    reply: &str,
    tag: &str,
    ratio: Option<f64>,
) -> Vec<Option<String>> {
    let entries = crate::proof::by_index(crate::proof::marked_entries(reply, tag));
    let mut proven = crate::proof::prove(texts, entries);
    for (slot, early) in proven
        .iter_mut()
        .zip(proven_by_beginnings(texts, reply, tag, ratio))
    {
        if slot.is_none() {
            *slot = early;
        }
    }
    proven
}

/// The segments a stream of `reply` would have resolved early at some point as it
/// arrived (the most `proven_count` gives over its beginnings), with their translations:
/// the whole reply's reading keeps them, so that a stream is never looser than the same
/// reply received whole, nor the whole reply than a stream of it. Each beginning that
/// ends inside segment `k` is judged at its fullest: the segment's whole text written,
/// its closing marker not yet.
pub fn proven_by_beginnings(
    texts: &[&str],
    reply: &str,
    tag: &str,
    ratio: Option<f64>,
) -> Vec<Option<String>> {
    let full = leading_pairs(reply, tag);
    let mut best = 0;
    for k in 0..=full.closed.len() {
        let open;
        let run = if k < full.closed.len() {
            // A trailing `<` is the start of a marker: the written text is the whole segment.
            open = format!("{}<", full.closed[k]);
            LeadingPairs {
                closed: full.closed[..k].to_vec(),
                open: Some(&open),
                broken: false,
            }
        } else {
            LeadingPairs {
                closed: full.closed.clone(),
                open: full.open,
                broken: full.broken,
            }
        };
        best = best.max(proven_count(texts, &run, ratio).min(run.closed.len()));
    }
    let mut proven = vec![None; texts.len()];
    for (slot, text) in proven.iter_mut().zip(&full.closed[..best]) {
        *slot = Some((*text).to_owned());
    }
    proven
}

/// Whether one of the closed segments is far from the length the run's median
/// translation-to-source ratio predicts for its source (`far_off`, as rule 18 judges a
/// whole reply). Such a segment fits no reading: next to a
/// merge (the freed number filled with a remark or nothing) it hides the merge from
/// `merge_reads_better`, whose readings must all fit.
fn misfit_length(sources: &[&str], closed: &[&str]) -> bool {
    if closed.len() < 2 {
        return false;
    }
    let length = |text: &str| char_len(text).max(1.0);
    let mut ratios = Vec::with_capacity(closed.len());
    for (segment, source) in closed.iter().zip(sources) {
        ratios.push(length(segment) / length(source));
    }
    let centre = median(&ratios);
    closed
        .iter()
        .zip(sources)
        .any(|(segment, source)| far_off(length(segment), centre * length(source)))
}

/// The text of an open segment so far, trimmed, without a trailing `<…` that may be the
/// start of its closing marker.
fn written_so_far(open: &str) -> &str {
    before_marker_start(open).trim()
}

/// The text of an open segment so far without a trailing `<…` that may be the start of
/// its closing marker, untrimmed (a word at its very end may still go on).
fn before_marker_start(open: &str) -> &str {
    match open.rfind('<') {
        Some(at) if !open.get(at..).unwrap_or("").contains('>') => open.get(..at).unwrap_or(""),
        _ => open,
    }
}

/// Whether the text of an open segment so far can no longer end as rule-1 damage: it
/// holds more than white space (so it cannot end empty), and it is no longer the
/// beginning of any text of the batch or of any closed segment (so it cannot end equal
/// to one). A trailing `<…` that may be the start of its closing marker is left out.
fn begun_past_damage(open: &str, sources: &[&str], closed: &[&str]) -> bool {
    let sure = written_so_far(open);
    !sure.is_empty()
        && !sources.iter().any(|s| s.starts_with(sure))
        && !closed.iter().any(|c| c.starts_with(sure))
}

/// Whether the closed segments read better as holding a merge at some position, the
/// numbers then copied in their order of appearance (every later pair one source on):
/// read so, every ratio fits within 1.5× of their median and they scatter less than as
/// they stand, by more than ln 1.25 in summed log deviation (short words vary that much
/// by themselves). A false alarm only delays the rest of the batch to the end of the
/// reply.
fn merge_reads_better(sources: &[&str], closed: &[&str]) -> bool {
    let m = closed.len();
    if m < 2 {
        return false;
    }
    let source: Vec<f64> = sources[..=m].iter().map(|s| char_len(s).max(1.0)).collect();
    let segment: Vec<f64> = closed.iter().map(|s| char_len(s).max(1.0)).collect();
    let straight: Vec<f64> = (0..m).map(|k| (segment[k] / source[k]).ln()).collect();
    let base = scatter(&straight);
    (0..m).any(|j| {
        let [merged, _] = shifted_readings(&source, &segment, j);
        let centre = median(&merged);
        merged.iter().all(|r| (r - centre).abs() <= 1.5f64.ln())
            && scatter(&merged) + 1.25f64.ln() < base
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markers::{number, pair};

    /// Segments between the markers of segment indexes `order`.
    fn reply(order: &[usize], texts: &[&str]) -> String {
        order
            .iter()
            .zip(texts)
            .map(|(&i, text)| {
                let (open, close) = pair("s", number(i));
                format!("{open}{text}{close}\n")
            })
            .collect()
    }

    #[test]
    fn the_leading_run_stops_at_the_first_anomaly() {
        let text = format!(
            "x {}{} C",
            reply(&[0, 1], &["A", " B "]),
            pair("s", number(2)).0
        );
        let run = leading_pairs(&text, "s");
        assert_eq!(run.closed, ["A", "B"]);
        assert_eq!(run.open, Some(" C"));
        assert!(!run.broken);
        let text = reply(&[0, 2], &["A", "C"]);
        let skipped = leading_pairs(&text, "s");
        assert_eq!(skipped.closed, ["A"]);
        assert!(skipped.broken);
        // Counting on from a merge: <s22> is no number of the batch.
        let counted = format!("{}<s22>C</s22>", reply(&[0], &["A B"]));
        assert!(leading_pairs(&counted, "s").broken);
    }

    /// The run of a reply that closed `closed` in order and then opened the next pair
    /// with `open`, if any.
    fn run<'a>(closed: &[&'a str], open: Option<&'a str>) -> LeadingPairs<'a> {
        LeadingPairs {
            closed: closed.to_vec(),
            open,
            broken: false,
        }
    }

    fn proven_count(texts: &[&str], closed: &[&str]) -> usize {
        super::proven_count(texts, &run(closed, None), None)
    }

    /// Like lengths, each translation keeping its paragraph's number: the evidence
    /// against a shift that `shift_evidence` asks for.
    const NUMBERED: [&str; 5] = ["one 1", "two 2", "six 3", "ten 4", "for 5"];

    #[test]
    fn a_known_length_ratio_lets_the_first_segment_resolve_once_it_closed() {
        let at = |ratio, closed: &[&str], open| {
            super::proven_count(&NUMBERED, &run(closed, Some(open)), ratio)
        };
        // Without a ratio the second pair must close first: a merge of the first two
        // shows only in lengths, and one segment has nothing to be compared with.
        assert_eq!(at(None, &["EINS 1"], "ZW"), 0);
        // At the provider's ratio (1.2 here) the first pair reads as the first alone,
        // and its number refutes a drop.
        assert_eq!(at(Some(1.2), &["EINS 1"], "ZW"), 1);
        // A merge of the first two reads as one, not as the first alone.
        assert_eq!(at(Some(1.2), &["EINS 1 ZWEI"], "DREI"), 0);
        // Nor does a pair without the number of its own paragraph.
        assert_eq!(at(Some(1.2), &["EINS !"], "ZWEI"), 0);
        // The next pair must still have begun past any damage.
        assert_eq!(at(Some(1.2), &["EINS 1"], ""), 0);
    }

    #[test]
    fn a_segment_resolves_once_the_next_one_has_begun_past_any_damage() {
        let proven =
            |closed: &[&str], open| super::proven_count(&NUMBERED, &run(closed, Some(open)), None);
        // Nothing yet, white space, or the start of the marker that would close it empty.
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], ""), 1);
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], "  \n"), 1);
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], " </s"), 1);
        // The beginning of another text of the batch, or of a closed segment: it could
        // still end as rule-1 damage.
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], "ten"), 1);
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], "EIN"), 1);
        // The first one needs the next to show its own paragraph (a merge or a split
        // of the first would put other text there), closed or as it is being written.
        assert_eq!(proven(&["EINS 1"], "ZW"), 0);
        assert_eq!(proven(&["EINS 1"], "ZWEI 2 and more"), 1);
        assert_eq!(proven(&["EINS 1 ZWEI 2"], "DREI!!!"), 0);
        // A word still being written is no evidence yet: "1" may become "12".
        assert_eq!(proven(&["EINS 1"], "ZWEI 2"), 0);
        // The next pair shows its own paragraph's number: the one before it resolves.
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], "DR"), 1);
        assert_eq!(proven(&["EINS 1", "ZWEI 2"], "DREI 3 "), 2);
        // The one before the last once the last has begun, the last one never.
        assert_eq!(proven(&["EINS 1", "ZWEI 2", "DREI 3"], "VIER"), 2);
        assert_eq!(proven(&["EINS 1", "ZWEI 2", "DREI 3"], "VIER 4 "), 3);
        assert_eq!(proven(&["EINS 1", "ZWEI 2", "DREI 3", "VIER 4"], "FÜNF"), 3);
        assert_eq!(
            proven(&["EINS 1", "ZWEI 2", "DREI 3", "VIER 4"], "FÜNF 5."),
            4
        );
        // Not when one holds the last one's translation too.
        let merged = ["EINS 1", "ZWEI 2", "DREI 3", "VIER 4 FÜNF 5"];
        assert_eq!(proven(&merged, "Done."), 0);
        // Nor without the evidence: like lengths, no word kept, a drop would read alike.
        let texts = ["one", "two", "six", "ten", "for"];
        let plain = run(&["eins", "zwei", "drei"], Some("vier"));
        assert_eq!(super::proven_count(&texts, &plain, None), 0);
        // A broken run vouches for nothing after it.
        let broken = LeadingPairs {
            closed: vec!["EINS 1"],
            open: Some("ZWEI 2"),
            broken: true,
        };
        assert_eq!(super::proven_count(&NUMBERED, &broken, None), 0);
    }

    #[test]
    fn a_segment_resolves_once_its_right_neighbour_closed_cleanly() {
        let texts = &NUMBERED[..4];
        assert_eq!(proven_count(texts, &["EINS 1"]), 0);
        assert_eq!(proven_count(texts, &["EINS 1", "ZWEI 2"]), 1);
        assert_eq!(proven_count(texts, &["EINS 1", "ZWEI 2", "DREI 3"]), 2);
        // The last one waits for the end of the reply.
        assert_eq!(
            proven_count(texts, &["EINS 1", "ZWEI 2", "DREI 3", "VIER 4"]),
            3
        );
        // Two segments: nothing before the end (a merge filled with a remark would look
        // clean until then).
        assert_eq!(
            proven_count(&["one", "two"], &["eins und zwei", "Done."]),
            0
        );
        // Damage stops the run, and takes its left neighbour with it.
        assert_eq!(proven_count(texts, &["EINS 1", "", "DREI 3"]), 0);
        assert_eq!(proven_count(texts, &["EINS 1", "ZWEI 2", "ten 4"]), 1);
    }

    #[test]
    fn a_merge_under_numbers_copied_in_order_stops_early_resolution_when_lengths_show_it() {
        let texts = [
            "the first paragraph",
            "the second one here",
            "a third paragraph!!",
            "the fourth and last",
        ];
        let merged = "der erste Absatz der zweite hier";
        assert_eq!(proven_count(&texts, &[merged, "ein dritter Absatz!"]), 0);
        // A remark written after it does not hide it.
        let remark = [merged, "ein dritter Absatz!", "Done."];
        assert_eq!(proven_count(&texts, &remark), 0);
        // A faithful beginning proves the first segment once it and the next keep words
        // of their own sources ("paragraph", "here"); without any, a drop reads the same.
        let faithful = ["der erste paragraph", "der zweite one here"];
        assert_eq!(proven_count(&texts, &faithful), 1);
        assert_eq!(
            proven_count(&texts, &["der erste Absatz", "der zweite hier"]),
            0
        );
    }

    #[test]
    fn a_merge_followed_by_an_empty_pair_stops_early_resolution() {
        // Found by the `replies` fuzz target: the first two merged into the first pair and
        // the freed number filled with nothing but quotes. Read as it stands the second
        // pair fits no source, read as a merge neither; every paragraph holds a `1`.
        let texts = [
            "0 paragraph Überall & <s1> tags",
            "1 paragraph Überall & <s1> tags",
            "2 paragraph \t\u{1}<\t!\u{2}3333333 <]\\ \u{5}",
        ];
        let merged = "«0 paragraph Überall & <s1> tags» «1 paragraph Überall & <s1> tags»";
        assert_eq!(proven_count(&texts, &[merged, "«»"]), 0);
        let faithful = [
            "«0 paragraph Überall & <s1> tags»",
            "«1 paragraph Überall & <s1> tags»",
        ];
        assert_eq!(proven_count(&texts, &faithful), 1);
    }

    #[test]
    fn a_short_paragraph_merged_into_a_long_one_whose_source_holds_its_number_too_stops_early_resolution(
    ) {
        // Found by the `replies` fuzz target: the lengths fit (a remark fills the freed
        // number), and the first paragraph holds a `1` of its own.
        let texts = [
            "0 paragraph Überall & <s1> tags",
            "1 paragraph ",
            "2 paragraph ",
        ];
        let merged = [
            "«0 paragraph Überall & <s1> tags» «1 paragraph»",
            "I hope this helps!",
        ];
        assert_eq!(proven_count(&texts, &merged), 0);
        let faithful = ["«0 paragraph Überall & <s1> tags»", "«1 paragraph»"];
        assert_eq!(proven_count(&texts, &faithful), 1);
    }

    #[test]
    fn a_short_paragraph_merged_into_a_long_one_stops_early_resolution_by_its_number() {
        // Found by the `replies` fuzz target: the lengths fit, the number does not.
        let texts = [
            "0 paragraph Hello",
            "1 paragraph with a much longer text than the others",
            "2 paragraph ",
            "3 paragraph and more",
        ];
        let merged = [
            "«0 paragraph Hello»",
            "«1 paragraph with a much longer text than the others» «2 paragraph»",
            "I hope this helps!",
        ];
        assert_eq!(proven_count(&texts, &merged), 0);
        let faithful = [
            "«0 paragraph Hello»",
            "«1 paragraph with a much longer text than the others»",
            "«2 paragraph»",
        ];
        assert_eq!(proven_count(&texts, &faithful), 2);
    }
}
