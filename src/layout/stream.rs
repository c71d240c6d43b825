//! A reply's text as it arrives in pieces: reasoning (`<think>` … `</think>`) left out,
//! and a cap on what is kept.
//!
//! Thinking models write drafts before the answer, and a draft may hold the batch's
//! markers: it must never count as the reply. The filter works on pieces cut anywhere
//! (a tag may arrive split over two values), so it holds back a trailing piece that
//! could still become a tag. A `<think>` never closed hides the rest of the reply.
//!
//! The cap keeps a model that loops from growing memory: past it the reply is cut and
//! read as truncated (its unfinished segments are missing and go out again). Reasoning
//! is not kept, but it counts too: everything the stream delivers (reasoning, tags and
//! empty values included, each value at least one byte) is capped at
//! [`DELIVERED_PER_CAP`] times the cap, so a model that thinks forever, or a stream of
//! empty values, is cut as well.

use super::markers::find_lt;

/// Characters of text kept per character sent, and the room added for short calls.
pub const CAP_PER_CHARACTER_SENT: usize = 20;
/// See [`CAP_PER_CHARACTER_SENT`].
pub const CAP_EXTRA: usize = 4096;

/// Everything a stream may deliver, reasoning included, in caps: the visible reply takes
/// at most one cap, reasoning the rest. A thinking model's drafts are often several times
/// its answer, and none of them is kept in memory, only counted.
pub const DELIVERED_PER_CAP: usize = 5;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// The visible part of a reply received in pieces.
#[derive(Debug, Default)]
pub struct ReplyText {
    /// The reply so far, reasoning removed.
    text: String,
    /// A tail that may be the start of the tag looked for next.
    held: String,
    /// Inside `<think>` … `</think>`.
    thinking: bool,
    /// Most bytes of `text` kept; `None`: no cap.
    cap: Option<usize>,
    /// The cap was reached: later pieces are dropped.
    truncated: bool,
    /// A `<think>` was found.
    reasoned: bool,
    /// Bytes delivered so far, reasoning included, each value counting at least one.
    delivered: usize,
}

/// The length cap of a reply to `texts`: [`CAP_PER_CHARACTER_SENT`] times what was sent
/// (each text and 16 for its markers), plus [`CAP_EXTRA`].
pub fn reply_cap<T: AsRef<str>>(texts: &[T]) -> usize {
    let sent: usize = texts.iter().map(|t| t.as_ref().len() + 16).sum();
    sent.saturating_mul(CAP_PER_CHARACTER_SENT)
        .saturating_add(CAP_EXTRA)
}

impl ReplyText {
    /// An empty reply capped at `cap` bytes (see [`reply_cap`]).
    pub fn capped(cap: usize) -> Self {
        ReplyText {
            cap: Some(cap),
            ..ReplyText::default()
        }
    }

    /// The visible text of a whole string reply, `None` when it holds no reasoning tag
    /// (most replies: no copy is made then).
    pub fn visible(reply: &str) -> Option<String> {
        if !holds_think_tag(reply) {
            return None;
        }
        let mut text = ReplyText::default();
        text.push(reply);
        text.finish();
        Some(text.text)
    }

    /// Appends a piece of the reply. Returns whether it changed the visible text.
    pub fn push(&mut self, piece: &str) -> bool {
        if self.truncated {
            return false;
        }
        self.count_value(piece.len());
        if self.truncated {
            return false;
        }
        let before = self.text.len();
        let mut rest = core::mem::take(&mut self.held);
        rest.push_str(piece);
        let mut at = 0;
        loop {
            let tag = if self.thinking { CLOSE } else { OPEN };
            let tail = rest.get(at..).unwrap_or("");
            match find_ignore_case(tail, tag) {
                Some(found) => {
                    if !self.thinking {
                        self.keep(tail.get(..found).unwrap_or(""));
                        self.reasoned = true;
                    }
                    self.thinking = !self.thinking;
                    at += found + tag.len();
                }
                None => {
                    // Hold back what could still grow into the tag.
                    let hold = partial_tag_len(tail, tag);
                    // The held part is ASCII (a prefix of the tag), so the split is on a
                    // char boundary; `split_at` would compile in a panic path with char
                    // formatting.
                    let (visible, held) = tail
                        .split_at_checked(tail.len() - hold)
                        .unwrap_or((tail, ""));
                    if !self.thinking {
                        self.keep(visible);
                    }
                    self.held = held.to_owned();
                    break;
                }
            }
        }
        self.text.len() != before
    }

    /// The reply has ended: a held piece that never became a tag is text after all.
    pub fn finish(&mut self) {
        let held = core::mem::take(&mut self.held);
        if !self.thinking {
            self.keep(&held);
        }
    }

    /// Counts a value of `bytes` delivered (a report, or a piece of text) against the cap
    /// on everything delivered: past it the reply is cut where it stands.
    pub fn count_value(&mut self, bytes: usize) {
        self.delivered = self.delivered.saturating_add(bytes.max(1));
        let most = self.cap.map(|cap| cap.saturating_mul(DELIVERED_PER_CAP));
        if most.is_some_and(|most| self.delivered > most) {
            self.truncated = true;
        }
    }

    fn keep(&mut self, piece: &str) {
        if self.truncated || piece.is_empty() {
            return;
        }
        let room = self
            .cap
            .map_or(usize::MAX, |cap| cap.saturating_sub(self.text.len()));
        if piece.len() <= room {
            self.text.push_str(piece);
            return;
        }
        let mut end = room;
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(piece.get(..end).unwrap_or(""));
        self.truncated = true;
    }

    /// The visible text so far.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether reasoning was left out.
    pub fn hid_reasoning(&self) -> bool {
        self.reasoned
    }

    /// Whether the cap cut the reply.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The visible text, for the final reading.
    pub fn into_string(self) -> String {
        self.text
    }
}

/// The byte offset of `needle` (ASCII, starting with `<`) in `haystack`, ignoring ASCII
/// case.
fn find_ignore_case(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    let mut from = 0;
    while let Some(start) = find_lt(haystack, from) {
        if h.get(start..start + n.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(n))
        {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

/// Whether `reply` holds `<think` or `</think` (ASCII case ignored), in one pass over its
/// `<`s: every reply is asked, and a batch's has two markers per paragraph.
fn holds_think_tag(reply: &str) -> bool {
    let bytes = reply.as_bytes();
    let mut from = 0;
    while let Some(start) = find_lt(reply, from) {
        let after = bytes.get(start + 1..).unwrap_or_default();
        let after = after.strip_prefix(b"/").unwrap_or(after);
        if after
            .get(..5)
            .is_some_and(|word| word.eq_ignore_ascii_case(b"think"))
        {
            return true;
        }
        from = start + 1;
    }
    false
}

/// The length of the longest tail of `text` that is a proper prefix of `tag`.
fn partial_tag_len(text: &str, tag: &str) -> usize {
    let (t, g) = (text.as_bytes(), tag.as_bytes());
    (1..g.len().min(t.len() + 1))
        .rev()
        .find(|&k| t[t.len() - k..].eq_ignore_ascii_case(&g[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(pieces: &[&str]) -> String {
        let mut text = ReplyText::default();
        for piece in pieces {
            text.push(piece);
        }
        text.finish();
        text.into_string()
    }

    #[test]
    fn reasoning_is_left_out_in_any_case_and_cut_anywhere() {
        let visible = |reply: &str| ReplyText::visible(reply).unwrap_or_else(|| reply.to_owned());
        assert_eq!(visible("<think>draft <s1>x</s1></think>A"), "A");
        assert_eq!(visible("<THINK>d</Think>A<think>e</think>B"), "AB");
        assert_eq!(ReplyText::visible("no tag <b>here</b>"), None);
        assert_eq!(streamed(&["<th", "ink>dr", "aft</thi", "nk>", "A"]), "A");
        assert_eq!(streamed(&["a <", "b"]), "a <b");
        assert_eq!(streamed(&["A <thi"]), "A <thi");
    }

    #[test]
    fn tags_are_found_at_every_offset_of_the_word_scan() {
        for pad in 0..20 {
            let text = format!("{}</THINK>x", "a".repeat(pad));
            assert_eq!(find_ignore_case(&text, CLOSE), Some(pad), "{text}");
            assert_eq!(find_lt(&text, 0), Some(pad));
            assert_eq!(find_lt(&text, pad + 1), None);
            let plain = format!("{}<thin <b>é<", "b".repeat(pad));
            assert_eq!(find_lt(&plain, pad + 1), Some(pad + 6));
        }
        for holds in ["x<think", "<THINK>", "a </Think> b", "<t1>x</t1><think"] {
            assert!(holds_think_tag(holds), "{holds}");
        }
        for lacks in [
            "<",
            "</",
            "<thin",
            "< think",
            "<//think",
            "<t1>think</t1>",
            "",
        ] {
            assert!(!holds_think_tag(lacks), "{lacks}");
        }
    }

    #[test]
    fn an_unclosed_think_hides_the_rest() {
        assert_eq!(
            ReplyText::visible("A<think>never closed B").as_deref(),
            Some("A")
        );
        assert_eq!(streamed(&["A<think>", "B", "C"]), "A");
    }

    #[test]
    fn reasoning_and_empty_values_count_against_the_cap() {
        let mut text = ReplyText::capped(100);
        assert!(!text.push("<think>"));
        for _ in 0..(DELIVERED_PER_CAP * 100) / 10 {
            text.push("thinking..");
        }
        assert!(text.is_truncated(), "reasoning past five caps is cut");
        assert_eq!(text.as_str(), "");
        let mut empties = ReplyText::capped(100);
        for _ in 0..DELIVERED_PER_CAP * 100 {
            empties.push("");
        }
        assert!(!empties.is_truncated());
        empties.push("");
        assert!(
            empties.is_truncated(),
            "every value counts at least one byte"
        );
    }

    #[test]
    fn the_cap_cuts_the_reply_on_a_character_boundary() {
        let mut text = ReplyText::capped(CAP_EXTRA);
        text.push(&"é".repeat(CAP_EXTRA));
        assert!(text.is_truncated());
        assert!(text.as_str().len() <= CAP_EXTRA);
        assert!(!text.push("more"));
    }
}
