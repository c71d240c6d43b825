//! Whether a reply cut at its bound was looping, rather than still writing new text.
//!
//! A reply that stops at its output bound (`request.maxOutputTokens`) or at the length
//! cap goes out again. When it was still writing new text (a verbose target language, a
//! tokenizer that counts more tokens than the estimate), it needed more room, and the
//! retry carries twice the bound. A small model at a low temperature that repeats itself
//! would run into every doubled bound as well, and cost up to eight times the output of
//! its first try: a loop gets the same bound again (and a batch, a warmer retry, as the
//! providers raise its temperature with `attempt`). A cut reply loops when:
//! - its tail repeats itself: the last [`TAIL`] characters (or the last half, when the
//!   reply is shorter) equal the characters one period before them, for a period of at
//!   most a third of that window (a word, a sentence or a segment written again and
//!   again); or
//! - it is longer than any translation of its texts could be: more than
//!   [`MOST_PER_SOURCE`] characters per source character, and [`SLACK`] more.

/// How many characters at the end of a cut reply are compared one period back.
const TAIL: usize = 240;
/// The shortest tail that can show a loop.
const LEAST_TAIL: usize = 24;
/// Characters of reply per source character that no translation needs.
const MOST_PER_SOURCE: usize = 4;
/// Room for markers, a preamble and a code fence.
const SLACK: usize = 400;

/// Whether `reply`, cut at its bound, was looping; `source_chars`: the characters of the
/// texts it answers.
pub fn looping(reply: &str, source_chars: usize) -> bool {
    let chars: Vec<char> = reply.trim_end().chars().collect();
    if chars.len()
        > source_chars
            .saturating_mul(MOST_PER_SOURCE)
            .saturating_add(SLACK)
    {
        return true;
    }
    let window = TAIL.min(chars.len() / 2);
    if window < LEAST_TAIL {
        return false;
    }
    let tail = &chars[chars.len() - window..];
    let before = &chars[..chars.len() - window];
    (1..=window / 3).any(|period| {
        let shifted = before.len() >= period;
        shifted
            && tail.iter().enumerate().all(|(i, c)| {
                let back = i + before.len() - period;
                chars[back] == *c
            })
    })
}

#[cfg(test)]
mod tests {
    use super::looping;

    #[test]
    fn a_repeated_sentence_or_word_is_a_loop() {
        let sentence = "Le chat est assis sur le tapis. ".repeat(12);
        assert!(looping(&sentence, 200));
        let cut_mid_word = format!("Bonjour! {}la la l", "la ".repeat(40));
        assert!(looping(&cut_mid_word, 200));
        let segments = format!(
            "<s21>Un</s21>\n{}<s58>Deux et",
            "<s58>Deux et trois</s58>\n".repeat(10)
        );
        assert!(looping(&segments, 200));
    }

    #[test]
    fn new_text_is_no_loop() {
        let long = "Le chat s'est assis sur le tapis chaud, puis le chien a traversé le grand parc vert pendant que l'oiseau chantait dans le vieil arbre et que mon ami lisait un gros livre près de la mer, sous un ciel";
        assert!(!looping(long, 200));
        assert!(!looping("court", 10));
    }

    #[test]
    fn a_reply_far_longer_than_any_translation_is_a_loop() {
        let mut state = 7u32;
        let text: String = (0..3000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect();
        assert!(looping(&text, 100));
        assert!(!looping(&text, 1000));
    }
}
