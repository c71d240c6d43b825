//! Which translation of a batch reply provably belongs to which item (segment identity).
//!
//! A reply is read into *entries*, in reply order: a pair (an id and the text between its
//! markers, or an object's key and value, or an array's element) or a broken pair (an
//! id whose markers do not close properly). A segment resolves its item only when the
//! reply proves it; otherwise it is *missing* and goes out again. The rule:
//!
//! 1. A segment is *damaged* when its pair is broken, duplicated or out of order, when it
//!    is empty, when it equals the text of another item of the batch, when it equals
//!    the segment of another item (a repeated translation is the trace of a shift), or
//!    when it holds another item's telling words and none of its own
//!    (`shift_evidence::holds_another`).
//! 2. Damaged segments are missing, and so are their neighbours in the reply: a merge or
//!    a split moves text across the boundary next to the damage. An id without any pair
//!    is missing, and so are the ids beside it.
//! 3. An unknown id (`<s5>` in a batch of four, a key that is not an id) means the model
//!    renumbered after a split: nothing is proven.
//! 4. A merge or a drop followed by renumbering shifts every later segment by one id and
//!    frees the last pair, which the model may leave out or fill with anything, of any
//!    length. So every segment is trusted only where the reply refutes every such shift
//!    that would have moved it (`shift_evidence`: words a segment keeps of its own source,
//!    lengths, a last pair that holds its own source). A last pair that is missing,
//!    damaged or does not fit its source (`fits_last`) is missing itself and vouches for
//!    nothing.
//! 5. Evidence that text moved across markers that are all in place (a split and a
//!    merge that keep the count) proves nothing at all (see `shifted`), and so does a
//!    segment about to be taken that holds another paragraph's number
//!    (`numbers_moved_into_taken`), moved or copied there.
//!
//! A false alarm costs one smaller call; a guess could put one paragraph's translation
//! under another, which this never does.

use crate::markers::{scan, Marker};
use crate::trim::trim;

/// One segment of a reply, in reply order. Ids are the batch's 1-based numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A well-formed pair; `id` is `None` when it is no number at all.
    Pair { id: Option<usize>, text: String },
    /// Markers of this id that do not form a pair (unclosed, stray, crossed).
    Broken { id: Option<usize> },
}

/// The entries of a string reply in the markers layout: text outside every pair is
/// ignored (a preamble, remarks, a code fence around the whole reply).
pub fn marked_entries(reply: &str, tag: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut open: Option<Marker> = None;
    for marker in scan(reply, tag) {
        match (open.take(), marker.close) {
            (None, false) => open = Some(marker),
            (None, true) => entries.push(Entry::Broken { id: marker.id }),
            (Some(first), false) => {
                entries.push(Entry::Broken { id: first.id });
                open = Some(marker);
            }
            (Some(first), true) if first.id == marker.id => entries.push(Entry::Pair {
                id: first.id,
                text: trim(reply.get(first.end..marker.start).unwrap_or("")).to_owned(),
            }),
            (Some(first), true) => {
                entries.push(Entry::Broken { id: first.id });
                entries.push(Entry::Broken { id: marker.id });
            }
        }
    }
    if let Some(first) = open {
        entries.push(Entry::Broken { id: first.id });
    }
    entries
}

/// Entries of marked pairs with their marker numbers read as segment ids (1-based): a
/// number the layout never gives is an unknown id.
pub fn by_index(entries: Vec<Entry>) -> Vec<Entry> {
    let id = |number: Option<usize>| number.and_then(crate::markers::index_of).map(|i| i + 1);
    entries
        .into_iter()
        .map(|entry| match entry {
            Entry::Pair { id: n, text } => Entry::Pair { id: id(n), text },
            Entry::Broken { id: n } => Entry::Broken { id: id(n) },
        })
        .collect()
}

/// The entries of an object reply keyed by id (structured outputs), in id order.
pub fn keyed_entries(pairs: Vec<(String, String)>) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::with_capacity(pairs.len());
    for (key, text) in pairs {
        let id = parse_id(&key);
        let text = text.trim().to_owned();
        // In id order, unknown keys last: an insertion, as a batch has a handful of ids
        // (a sort is much more code in the .wasm).
        let rank = |e: &Entry| match e {
            Entry::Pair { id, .. } | Entry::Broken { id } => id.unwrap_or(usize::MAX),
        };
        let entry = Entry::Pair { id, text };
        let at = entries.iter().position(|e| rank(e) > rank(&entry));
        entries.insert(at.unwrap_or(entries.len()), entry);
    }
    entries
}

/// The entries of an array reply (one string per text, in order).
pub fn listed_entries(texts: Vec<String>) -> Vec<Entry> {
    texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| Entry::Pair {
            id: Some(i + 1),
            text: text.trim().to_owned(),
        })
        .collect()
}

/// The id an object reply's key names (digits, white space around them tolerated).
pub(crate) fn parse_id(key: &str) -> Option<usize> {
    let key = key.trim();
    let digits = !key.is_empty() && key.len() <= 9 && key.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| key.parse().ok()).flatten()
}

/// The proven translation of each of `texts` (in order), `None` for the missing ones.
pub fn prove(texts: &[&str], mut entries: Vec<Entry>) -> Vec<Option<String>> {
    let n = texts.len();
    let index_of = |id: Option<usize>| id.filter(|id| (1..=n).contains(id)).map(|id| id - 1);
    let mut proven: Vec<Option<String>> = vec![None; n];
    if entries.iter().any(|e| match e {
        Entry::Pair { id, .. } | Entry::Broken { id } => index_of(*id).is_none(),
    }) {
        return proven;
    }
    let mut seen = vec![0usize; n];
    for entry in &entries {
        let (Entry::Pair { id, .. } | Entry::Broken { id }) = entry;
        if let Some(i) = index_of(*id) {
            seen[i] += 1;
        }
    }
    let mut trimmed: Vec<&str> = Vec::with_capacity(n);
    for text in texts {
        trimmed.push(trim(text));
    }
    let source = |i: usize| trimmed[i];
    let words = crate::shift_evidence::source_words(&trimmed);
    // Rule 14 of docs/reference.md (as every rule number here), per entry in reply order.
    let mut damaged = vec![false; entries.len()];
    let mut highest: Option<usize> = None;
    for (p, entry) in entries.iter().enumerate() {
        let Entry::Pair { id, text } = entry else {
            damaged[p] = true;
            continue;
        };
        let Some(i) = index_of(*id) else {
            damaged[p] = true;
            continue;
        };
        let in_order = highest.is_none_or(|h| i > h);
        highest = Some(highest.map_or(i, |h| h.max(i)));
        // The rarer equality first: a segment seldom equals any source.
        let other_source = (0..n).any(|j| j != i && source(j) == text && source(j) != source(i));
        let repeated = entries.iter().enumerate().any(|(q, other)| {
            q != p
                && matches!(other, Entry::Pair { id: Some(k), text: t }
                    if t == text && index_of(Some(*k)).is_some_and(|k| source(k) != source(i)))
        });
        damaged[p] = seen[i] > 1
            || !in_order
            || (text.is_empty() && !source(i).is_empty())
            || other_source
            || repeated
            || crate::shift_evidence::holds_another(text, &words, i);
    }
    // Rule 15: the damage and its neighbours, by reply order and by id.
    let mut missing: Vec<bool> = seen.iter().map(|&count| count == 0).collect();
    let id_at = |p: usize| match &entries[p] {
        Entry::Pair { id, .. } | Entry::Broken { id } => index_of(*id),
    };
    for p in (0..entries.len()).filter(|&p| damaged[p]) {
        for q in [p.checked_sub(1), Some(p), Some(p + 1)]
            .into_iter()
            .flatten()
        {
            if let Some(i) = (q < entries.len()).then(|| id_at(q)).flatten() {
                missing[i] = true;
            }
        }
        // Beside it by id too: a pair written out of order may hold what its id's
        // neighbour lost (a merge whose freed id was filled later in the reply).
        if let Some(i) = id_at(p) {
            for j in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                if j < n {
                    missing[j] = true;
                }
            }
        }
    }
    for i in (0..n).filter(|&i| seen[i] == 0) {
        for j in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
            if j < n {
                missing[j] = true;
            }
        }
    }
    // The undamaged segment of each id (an id found twice is damaged: at most one is).
    let undamaged = |p: usize, i: usize| !damaged[p] && id_at(p) == Some(i);
    let mut segments: Vec<Option<&str>> = vec![None; n];
    for (p, entry) in entries.iter().enumerate() {
        if let (Entry::Pair { text, .. }, Some(i)) = (entry, id_at(p)) {
            if undamaged(p, i) {
                segments[i] = Some(text.as_str());
            }
        }
    }
    let lengths = Lengths::of_trimmed(&trimmed, &segments);
    // Rule 18.
    if shifted(texts, &segments, &lengths) {
        return proven;
    }
    // Damage at the last position: the model may have filled a freed last pair.
    let last_suspect = n > 1
        && (seen[n - 1] == 0
            || !fits_last(&lengths)
            || shift_reads_better(&segments, &lengths)
            || merges_before_last(&lengths));
    if last_suspect {
        missing[n - 1] = true;
    }
    // Rule 17: a segment is taken only where the reply refutes every shift that would
    // have moved it (a suspect last pair vouches for nothing).
    if last_suspect {
        segments[n - 1] = None;
    }
    let unshifted =
        crate::shift_evidence::unshifted(&trimmed, &segments, !last_suspect, None, None);
    // The flags of the missing become those of the taken, in place.
    let mut taken = missing;
    for (take, unshifted) in taken.iter_mut().zip(unshifted) {
        *take = !*take && unshifted;
    }
    if numbers_moved_into_taken(texts, &segments, &taken) {
        return proven;
    }
    drop(segments);
    for (p, entry) in entries.iter_mut().enumerate() {
        if let Entry::Pair { id, text } = entry {
            if let Some(i) = index_of(*id).filter(|&i| taken[i] && !damaged[p]) {
                proven[i] = Some(core::mem::take(text));
            }
        }
    }
    proven
}

/// Rule 18: evidence that text moved across the markers although every pair is in place
/// (a model that split one segment and merged or dropped another to keep the count,
/// numbering the rest anew). Two kinds:
/// - a segment whose length is far from what the batch's median translation-to-source
///   ratio predicts for its source (more than 3× off, and by at least 16 characters, so
///   that short labels translated longer are no evidence), while it fits the source of
///   the item before or after it, or its own and the next one's together, within 1.5×;
/// - when every segment is there, the separator layout's own evidence (`alignment`): a
///   number of one paragraph found only in another's segment, two paragraphs with the
///   same segment.
///
/// Either proves nothing: the whole batch goes out again. Among paragraphs of like
/// lengths without numbers such a shift leaves no trace in any reply form.
fn shifted(texts: &[&str], segments: &[Option<&str>], lengths: &Lengths) -> bool {
    let n = texts.len();
    let source = &lengths.source;
    let ratios = lengths.ratios(n);
    if ratios.len() >= 3 {
        let m = median(ratios);
        let fits = |len: f64, src: f64| (1.0 / 1.5..=1.5).contains(&(len / src / m));
        for (i, length) in lengths.segment.iter().enumerate() {
            let Some(len) = *length else { continue };
            if !far_off(len, m * source[i]) {
                continue;
            }
            let before = i.checked_sub(1).map(|j| source[j]);
            let after = source.get(i + 1).copied();
            let merged = after.map(|a| a + source[i]);
            if [before, after, merged]
                .into_iter()
                .flatten()
                .any(|src| fits(len, src))
            {
                return true;
            }
        }
    }
    if segments.iter().any(Option::is_none) {
        return false;
    }
    let complete = |k: usize| segments[k].unwrap_or_default();
    n > 1 && crate::alignment::check_in(texts, n, complete).is_err()
}

/// Whether a segment of `len` characters is far from the `predicted` length of its
/// source's translation: more than 3 times off either way, and by at least 16 characters,
/// so that short labels translated longer are no evidence.
pub(crate) fn far_off(len: f64, predicted: f64) -> bool {
    !(1.0 / 3.0..=3.0).contains(&(len / predicted)) && (len - predicted).abs() >= 16.0
}

/// Rule 18's number evidence, wherever segments are missing: a segment about to be taken,
/// or any segment there, holds a number of another paragraph that its own paragraph
/// lacks, while that paragraph's segment lacks it or is missing, or more times than its
/// own paragraph does (`alignment::numbers_moved`). Lengths cannot see a
/// short paragraph merged into a long one, nor a drop, a merge and a split together that
/// leave every length near its source's; the number can. A number moved into a segment
/// that is not taken counts too: the text before it moved with it (a first translation
/// split in two, its second half under the next id, looks like a faithful first segment).
fn numbers_moved_into_taken(texts: &[&str], segments: &[Option<&str>], taken: &[bool]) -> bool {
    if taken.iter().all(|&take| take) && segments.iter().all(Option::is_some) {
        // Every segment there and taken: `shifted` has read their numbers already.
        return false;
    }
    let mut kept: Vec<Option<&str>> = Vec::with_capacity(segments.len());
    for (segment, &take) in segments.iter().zip(taken) {
        kept.push(if take { *segment } else { None });
    }
    crate::alignment::numbers_moved(texts, &kept).is_some()
        || crate::alignment::numbers_moved(texts, segments).is_some()
}

/// Whether the last pair, when found, holds what a translation of its source would: it
/// is undamaged (rule 14: not empty, not another text, not repeated, found once and in
/// order), and its length is within 1.5× (or 8 characters) of what the batch's median
/// translation-to-source ratio predicts. A model that merged two segments and numbered
/// the rest anew has a free last id, and fills it with a closing remark, an empty pair
/// or an array element of its own: read so, the last position is as suspect as a
/// missing last pair (rule 17). The median is over every segment of the batch, the last
/// included, so that short labels translated longer move it no more than one vote; of
/// two segments, the other one's ratio.
fn fits_last(lengths: &Lengths) -> bool {
    let n = lengths.source.len();
    let Some(&Some(len)) = lengths.segment.last() else {
        return false;
    };
    let source = |i: usize| lengths.source[i];
    let ratios = lengths.ratios(n - 1);
    if ratios.is_empty() {
        return true;
    }
    let fits = |ratio: f64| {
        let predicted = ratio * source(n - 1);
        (1.0 / 1.5..=1.5).contains(&(len / predicted)) || (len - predicted).abs() < 8.0
    };
    // Beside fewer than three others the median is no estimate (scripts translate at
    // ratios far apart: Japanese to German at 2.75, German to German at 2): the last
    // segment fits when it fits any of them. Beside three or more its own ratio joins
    // the median, so that short labels translated much longer do not make a fitting
    // last segment look foreign, and the suspect still cannot set the median alone.
    if ratios.len() < 3 {
        return ratios.iter().any(|r| fits(*r));
    }
    fits(median_with(ratios, Some(len / source(n - 1))))
}

/// Whether the segment before the last reads closer to its own source and the last one's
/// together than to its own, at the median ratio of the segments before it: the trace of
/// a model that merged the last two segments under the first one's markers and filled
/// the last pair with something of a translation's length (a closing remark). A single
/// merged segment may be too little for `shift_reads_better`'s margin; a false alarm
/// costs the two segments a call, never a paragraph.
pub(crate) fn merged_before_last(texts: &[&str], segments: &[Option<&str>]) -> bool {
    merges_before_last(&Lengths::of(texts, segments))
}

/// `merged_before_last` on lengths counted already.
fn merges_before_last(lengths: &Lengths) -> bool {
    let n = lengths.source.len();
    if n < 3 {
        return false;
    }
    let Some(len) = lengths.segment[n - 2] else {
        return false;
    };
    let source = |i: usize| lengths.source[i];
    let ratios = lengths.ratios(n - 2);
    if ratios.is_empty() {
        return false;
    }
    let ratio = median(ratios);
    let straight = (len / (ratio * source(n - 2))).ln().abs();
    let merged = (len / (ratio * (source(n - 2) + source(n - 1)))).ln().abs();
    merged < straight
}

/// Whether the segments before the last read clearly better as shifted by a merge or a
/// drop with renumbering (the freed last id then filled with anything) than as they
/// stand: read so, every ratio fits within 1.5× of their median, and their summed log
/// deviation is smaller by more than ln 2. A filler of a paragraph's length in the last
/// pair passes `fits_last`; the segment holding two translations does not pass this.
fn shift_reads_better(segments: &[Option<&str>], lengths: &Lengths) -> bool {
    let n = lengths.source.len();
    if n < 3 {
        return false;
    }
    let source = &lengths.source;
    // The segments before the last that are there: a missing one (damaged elsewhere)
    // must not hide the evidence of the others.
    let known = &lengths.segment[..n - 1];
    let count = known.iter().flatten().count();
    if count < 2 {
        return false;
    }
    // One buffer for every reading: a batch reply tries 2 (n - 1) of them.
    let mut buffer: Vec<f64> = Vec::with_capacity(count);
    fn read<'a>(
        into: &'a mut Vec<f64>,
        known: &[Option<f64>],
        source_of: &dyn Fn(usize) -> f64,
    ) -> &'a [f64] {
        into.clear();
        for (k, len) in known.iter().enumerate() {
            if let Some(len) = len {
                into.push((len / source_of(k)).ln());
            }
        }
        into
    }
    let base = scatter(read(&mut buffer, known, &|k| source[k]));
    // A reading must scatter less than `base` by more than ln 2, and no scatter is
    // negative: segments that scatter no more than ln 2 as they stand (every faithful
    // reply's) leave no reading to try.
    if base <= 2f64.ln() {
        return false;
    }
    let fits_well = |reading: &[f64]| {
        let centre = median(reading);
        reading.iter().all(|r| (r - centre).abs() <= 1.5f64.ln())
            && scatter(reading) + 2f64.ln() < base
    };
    // Shifts after the last gap: one before it is the gap's own business (rule 15 already
    // takes its neighbours), and trusting what precedes it stays with rule 17.
    let after_gap = (0..n - 1)
        .rev()
        .find(|&k| segments[k].is_none())
        .map_or(0, |k| k + 1);
    (after_gap..n - 1).any(|j| {
        let merged = |k: usize| match k.cmp(&j) {
            core::cmp::Ordering::Less => source[k],
            core::cmp::Ordering::Equal => source[k] + source[k + 1],
            core::cmp::Ordering::Greater => source[k + 1],
        };
        let dropped = |k: usize| source[if k < j { k } else { k + 1 }];
        fits_well(read(&mut buffer, known, &merged))
            || fits_well(read(&mut buffer, known, &dropped))
    })
}

/// Characters of each source (trimmed) and of each segment there, at least 1 each: the
/// length evidence's inputs, counted once per reply rather than once per rule.
struct Lengths {
    source: Vec<f64>,
    segment: Vec<Option<f64>>,
    /// The translation-to-source ratio of each segment there, in order.
    ratio: Vec<f64>,
}

impl Lengths {
    fn of(texts: &[&str], segments: &[Option<&str>]) -> Lengths {
        let trimmed: Vec<&str> = texts.iter().map(|t| t.trim()).collect();
        Lengths::of_trimmed(&trimmed, segments)
    }

    /// [`Lengths::of`] for sources trimmed already.
    fn of_trimmed(sources: &[&str], segments: &[Option<&str>]) -> Lengths {
        let source: Vec<f64> = sources.iter().map(|t| char_len(t).max(1.0)).collect();
        let segment: Vec<Option<f64>> = segments
            .iter()
            .map(|s| s.map(|s| char_len(s).max(1.0)))
            .collect();
        let mut ratio = Vec::with_capacity(segment.len());
        for (segment, source) in segment.iter().zip(&source) {
            if let Some(len) = segment {
                ratio.push(len / source);
            }
        }
        Lengths {
            source,
            segment,
            ratio,
        }
    }

    /// The translation-to-source length ratio of each segment there among the first
    /// `count`: a prefix of `ratio`, as the rules ask for the first n, n - 1 or n - 2.
    fn ratios(&self, count: usize) -> &[f64] {
        let there = self.segment.iter().take(count).filter(|s| s.is_some());
        &self.ratio[..there.count()]
    }
}

/// The log ratios of `segment` read as shifted at `j` with renumbering: by a merge of
/// sources `j` and `j + 1` into pair `j`, and by a drop of source `j` (each later pair
/// then holds the next source's translation). `source` is one longer than `segment`.
pub(crate) fn shifted_readings(source: &[f64], segment: &[f64], j: usize) -> [Vec<f64>; 2] {
    let merged = (0..segment.len())
        .map(|k| {
            let s = match k.cmp(&j) {
                core::cmp::Ordering::Less => source[k],
                core::cmp::Ordering::Equal => source[k] + source[k + 1],
                core::cmp::Ordering::Greater => source[k + 1],
            };
            (segment[k] / s).ln()
        })
        .collect();
    let dropped = (0..segment.len())
        .map(|k| (segment[k] / source[if k < j { k } else { k + 1 }]).ln())
        .collect();
    [merged, dropped]
}

/// Characters of `text` (one pass over the bytes when it is ASCII, as most are).
pub(crate) fn char_len(text: &str) -> f64 {
    if text.is_ascii() {
        text.len() as f64
    } else {
        text.chars().count() as f64
    }
}

/// The median (the upper one of an even count); an insertion sort, as for the ids. The
/// rules take many medians of a handful of values per reply: up to 16 are sorted on the
/// stack.
pub(crate) fn median(values: &[f64]) -> f64 {
    median_with(values, None)
}

/// The median of `values` and `extra`, when there is one.
fn median_with(values: &[f64], extra: Option<f64>) -> f64 {
    let mut small = [0.0f64; 16];
    let mut large;
    let count = values.len() + usize::from(extra.is_some());
    let sorted: &mut [f64] = match small.get_mut(..count) {
        Some(small) => {
            small[..values.len()].copy_from_slice(values);
            if let Some(extra) = extra {
                small[count - 1] = extra;
            }
            small
        }
        None => {
            large = values.to_vec();
            large.extend(extra);
            &mut large
        }
    };
    for i in 1..sorted.len() {
        let v = sorted[i];
        let mut at = i;
        while at > 0 && sorted[at - 1] > v {
            sorted[at] = sorted[at - 1];
            at -= 1;
        }
        sorted[at] = v;
    }
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// Summed distance of the values from their median.
pub(crate) fn scatter(values: &[f64]) -> f64 {
    let centre = median(values);
    values.iter().map(|v| (v - centre).abs()).sum()
}

#[cfg(test)]
mod tests;
