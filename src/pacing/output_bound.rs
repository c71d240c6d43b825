//! The bound on a call's output (`request.maxOutputTokens`): how many tokens a faithful
//! answer to its texts can need.
//!
//! Small models repeat themselves until the token limit they are given; without a bound
//! one runaway reply costs hundreds of tokens more than the translation it replaces. A
//! faithful translation is about as long as its source, so the bound is three times the
//! texts' estimated tokens, plus room for each segment's markers and a little for the
//! reply's frame. The estimate is corrected per provider: its reported input tokens
//! over the estimated input of the same calls (never below the estimate: a tokenizer
//! that counts fewer tokens only makes the bound looser). A reply that stops at the
//! bound sends its texts again with twice the bound, up to [`MAX_SCALE`] times the first.

/// Output tokens allowed per estimated token of the texts.
pub const PER_TEXT_TOKEN: f64 = 3.0;
/// Output tokens allowed per segment (its markers, the line between two).
pub const PER_SEGMENT: u32 = 16;
/// Output tokens allowed per call (a code fence, a short preamble).
pub const PER_CALL: u32 = 16;
/// The most a truncated reply's texts can have their bound multiplied by.
pub const MAX_SCALE: u8 = 8;
/// How far one reply moves the correction towards what it reported.
const LEARNING: f64 = 0.3;
/// The largest correction learned (a tokenizer four times less efficient than the
/// estimate's).
const MAX_RATIO: f64 = 4.0;

/// The bound for texts of `text_tokens` estimated tokens in `segments` segments,
/// multiplied by `scale` (1, then doubled after each truncated reply).
pub fn output_bound(text_tokens: f64, segments: usize, ratio: f64, scale: u8) -> u32 {
    let segments = u32::try_from(segments).unwrap_or(u32::MAX);
    let texts = (text_tokens.max(0.0) * ratio * PER_TEXT_TOKEN).ceil();
    let base = texts + f64::from(PER_SEGMENT.saturating_mul(segments)) + f64::from(PER_CALL);
    (base * f64::from(scale.max(1))).min(f64::from(u32::MAX)) as u32
}

/// The next scale after a truncated reply.
pub fn doubled(scale: u8) -> u8 {
    scale.max(1).saturating_mul(2).min(MAX_SCALE)
}

/// A provider's correction of the token estimate: its reported input tokens over the
/// estimated input of the same calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputRatio(f64);

impl Default for InputRatio {
    fn default() -> Self {
        InputRatio(1.0)
    }
}

impl InputRatio {
    /// The ratio (1 until a provider reported its input tokens).
    pub fn get(self) -> f64 {
        self.0
    }

    /// A call whose input was estimated at `estimated` tokens reported `reported`.
    pub fn learn(&mut self, estimated: f64, reported: f64) {
        if estimated > 0.0 && reported > 0.0 {
            let seen = (reported / estimated).clamp(1.0, MAX_RATIO);
            self.0 += (seen - self.0) * LEARNING;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_two_to_four_times_the_texts_plus_room_per_segment() {
        // 100 estimated tokens in 4 segments: 300 + 64 + 16.
        assert_eq!(output_bound(100.0, 4, 1.0, 1), 380);
        assert_eq!(output_bound(100.0, 4, 1.0, 2), 760);
        assert_eq!(output_bound(10.0, 1, 1.0, 1), 62);
        let bound = f64::from(output_bound(100.0, 1, 1.0, 1) - PER_SEGMENT - PER_CALL);
        assert!((200.0..=400.0).contains(&bound));
    }

    #[test]
    fn the_scale_doubles_up_to_eight() {
        assert_eq!(doubled(1), 2);
        assert_eq!(doubled(4), 8);
        assert_eq!(doubled(8), 8);
    }

    #[test]
    fn the_correction_follows_reports_but_never_tightens_the_estimate() {
        let mut ratio = InputRatio::default();
        ratio.learn(100.0, 50.0);
        assert_eq!(ratio.get(), 1.0);
        for _ in 0..30 {
            ratio.learn(100.0, 200.0);
        }
        assert!((ratio.get() - 2.0).abs() < 0.01);
        ratio.learn(100.0, 10_000.0);
        assert!(ratio.get() <= MAX_RATIO);
    }
}
