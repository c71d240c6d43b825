//! Which segments of a streamed reply are proven by its beginning alone, whatever the
//! rest of it holds (early resolution).
//!
//! An early resolution can never be undone, so it needs more than the whole-reply rule
//! (`proof`): there, a complete reply of the right count is evidence that no segment
//! moved, but a beginning has no count yet. The threat is a shift with renumbering: a
//! model that merged, dropped or split segment `j` and numbered the rest anew puts every
//! later segment under the wrong id, and only the reply's end shows it (a missing or
//! filler last pair, an unknown id). So segment `i` resolves early only when:
//!
//! 1. the reply so far opens with pairs `1 … m`, each found once and in sequence, with
//!    no broken marker among them and none damaged by rule 1 (empty, another text of the
//!    batch, the same text as another segment), where `m ≥ i + 2` and `m < count`: its
//!    right neighbour is closed too (damage there would make it missing, rule 2), and
//!    the last pair has not arrived (with it, the end is near and the whole-reply rule
//!    reads it);
//! 2. the lengths rule out every shift at or before it: each closed segment fits its
//!    source within 1.5× of their median translation-to-source ratio, and reading them
//!    as shifted by a merge or a drop at any `j ≤ i`, or a split at any `j < i` (the
//!    shifts that put another paragraph's text under segment `i`), scatters their ratios
//!    clearly more (by more than ln 2 in summed log deviation), as rule 4 asks of the
//!    segments before a missing last pair. A split at `i` itself would leave it the
//!    first part of its own translation, which the fit within 1.5× bounds.
//!
//! Paragraphs of like lengths give no such evidence: they wait for the end of the
//! reply, as without streaming. The rest of the reply is read as a whole when it ends.

use crate::markers::scan;
use crate::proof::{char_len, median, scatter, shifted_readings};

/// The leading pairs of a reply so far: the text of each pair `1 … m` found in sequence,
/// and whether an anomaly (a broken, repeated, unknown or out-of-sequence marker) stopped
/// the run. An open marker at the end with no close yet is not an anomaly.
#[derive(Debug)]
pub struct LeadingPairs<'a> {
    /// The texts of pairs `1 … m`, trimmed.
    pub closed: Vec<&'a str>,
    /// The text after the open marker of pair `m + 1`, when it is open at the end.
    pub open: Option<&'a str>,
    /// Whether something out of sequence followed the run.
    pub broken: bool,
}

/// The run of in-sequence pairs at the start of `reply` (markers of `tag`).
pub fn leading_pairs<'a>(reply: &'a str, tag: &str) -> LeadingPairs<'a> {
    let mut run = LeadingPairs {
        closed: Vec::new(),
        open: None,
        broken: false,
    };
    let mut opened: Option<usize> = None;
    for marker in scan(reply, tag) {
        let expected = run.closed.len() + 1;
        match (opened, marker.close) {
            (None, false) if marker.id == Some(expected) => opened = Some(marker.end),
            (Some(from), true) if marker.id == Some(expected) => {
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

/// How many of the leading segments (`closed`, in order) of a batch of `texts` the reply
/// so far proves, whatever follows.
pub fn proven_count<S: AsRef<str>>(texts: &[S], closed: &[&str]) -> usize {
    let n = texts.len();
    let m = closed.len().min(n.saturating_sub(1));
    if m < 2 {
        return 0;
    }
    let sources: Vec<&str> = texts.iter().map(|t| t.as_ref().trim()).collect();
    // Rule 1 on the run: damage stops it.
    let clean = (0..m)
        .take_while(|&i| {
            let text = closed[i];
            let empty = text.is_empty() && !sources[i].is_empty();
            let other_source = (0..n).any(|j| sources[j] != sources[i] && sources[j] == text);
            let repeated = (0..m).any(|k| k != i && closed[k] == text && sources[k] != sources[i]);
            !(empty || other_source || repeated)
        })
        .count();
    if clean < 2 {
        return 0;
    }
    let source: Vec<f64> = sources.iter().map(|s| char_len(s).max(1.0)).collect();
    let segment: Vec<f64> = closed[..clean]
        .iter()
        .map(|s| char_len(s).max(1.0))
        .collect();
    unshifted_count(&source, &segment)
}

/// The count of leading segments whose lengths rule out every renumbering shift (merge,
/// drop, split) at or before them. `segment` holds fewer lengths than `source`.
fn unshifted_count(source: &[f64], segment: &[f64]) -> usize {
    let m = segment.len();
    let straight: Vec<f64> = (0..m).map(|k| (segment[k] / source[k]).ln()).collect();
    let centre = median(&straight);
    if straight.iter().any(|r| (r - centre).abs() > 1.5f64.ln()) {
        return 0;
    }
    let base = scatter(&straight);
    let clearly_worse = |reading: &[f64], base: f64| scatter(reading) > base + 2f64.ln();
    // Shifts that would put another paragraph's text under segment i: a merge or a
    // drop at j <= i (its pair then holds the next source's translation, whole or in
    // part), or a split at j < i (it holds the previous source's). A split at i itself
    // leaves it the first part of its own translation, which the fit above bounds.
    let merge_or_drop_ruled_out = |j: usize| {
        shifted_readings(source, segment, j)
            .iter()
            .all(|reading| clearly_worse(reading, base))
    };
    // A split of j: pairs j and j + 1 hold its two parts, each later pair the source
    // before its own. Compared with the straight reading of the same two pairs joined.
    let split_ruled_out = |j: usize| {
        let joined = |sources: &dyn Fn(usize) -> f64| -> Vec<f64> {
            let mut ratios = Vec::with_capacity(m - 1);
            for k in (0..m).filter(|&k| k != j + 1) {
                let len = if k == j {
                    segment[j] + segment[j + 1]
                } else {
                    segment[k]
                };
                ratios.push((len / sources(k)).ln());
            }
            ratios
        };
        let split = joined(&|k| if k <= j { source[k] } else { source[k - 1] });
        let straight = joined(&|k| {
            if k == j {
                source[j] + source[j + 1]
            } else {
                source[k]
            }
        });
        clearly_worse(&split, scatter(&straight))
    };
    // Segment i needs its right neighbour's length as evidence: i < m - 1.
    let mut count = 0;
    for i in 0..m - 1 {
        let ruled_out = merge_or_drop_ruled_out(i) && (i == 0 || split_ruled_out(i - 1));
        if !ruled_out {
            break;
        }
        count = i + 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_run_stops_at_the_first_anomaly() {
        let run = leading_pairs("x <s1>A</s1>\n<s2> B </s2><s3>C", "s");
        assert_eq!(run.closed, ["A", "B"]);
        assert_eq!(run.open, Some("C"));
        assert!(!run.broken);
        let run = leading_pairs("<s1>A</s1><s3>C</s3>", "s");
        assert_eq!(run.closed, ["A"]);
        assert!(run.broken);
    }

    #[test]
    fn unlike_lengths_prove_the_first_segments_before_the_end() {
        let texts = [
            "a short one",
            "a much much longer paragraph of text that goes on and on for quite a while",
            "a tiny one",
            "last",
        ];
        let closed = [
            "ein kurzer",
            "ein viel viel längerer Absatz mit Text, der immer weiter geht, eine Weile",
            "ein winziger",
        ];
        assert_eq!(proven_count(&texts, &closed[..2]), 1);
        assert_eq!(proven_count(&texts, &closed), 2);
        // The same lengths after a merge of the first two: nothing.
        let merged = [
            "ein kurzer ein viel viel längerer Absatz mit Text, der immer weiter geht, eine Weile",
            "ein winziger",
            "letzter",
        ];
        assert_eq!(proven_count(&texts, &merged), 0);
    }

    #[test]
    fn like_lengths_prove_nothing_early() {
        let texts = ["one", "two", "six", "ten"];
        assert_eq!(proven_count(&texts, &["eins", "zwei", "sechs"]), 0);
    }
}
