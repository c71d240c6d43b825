//! The length of a provider's translations against their sources, per language pair, as
//! its proven replies showed it: what lets a streamed reply's first segment rule out a
//! merge as soon as it closes (see `early`), instead of when the second one is long.

/// Proven translations seen before a pair's ratio is trusted.
pub const TRUSTED_AFTER: u32 = 4;
/// How far one translation moves the ratio (in log space) towards its own.
const LEARNING: f64 = 0.2;
/// Language pairs kept per provider (the most recently seen).
const PAIRS: usize = 8;

/// A language pair's ratio: characters of translation per character of source.
#[derive(Clone, Debug, PartialEq)]
pub struct PairRatio {
    /// Source language.
    pub source_lang: String,
    /// Target language.
    pub target_lang: String,
    /// The ratio (its logarithm is what is averaged).
    pub ratio: f64,
    /// Proven translations it was learned from (up to [`TRUSTED_AFTER`]).
    pub seen: u32,
}

/// A provider's ratios, by language pair.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LengthRatios {
    pairs: Vec<PairRatio>,
}

impl LengthRatios {
    /// The ratio of `source → target`, once enough proven translations showed it.
    pub fn trusted(&self, source: &str, target: &str) -> Option<f64> {
        self.find(source, target)
            .filter(|p| p.seen >= TRUSTED_AFTER)
            .map(|p| p.ratio)
    }

    /// A proven translation of `translated` characters for a source of `source_len`.
    pub fn learn(&mut self, source: &str, target: &str, source_len: f64, translated: f64) {
        if source_len < 1.0 || translated < 1.0 {
            return;
        }
        let seen = translated / source_len;
        let at = self
            .pairs
            .iter()
            .position(|p| p.source_lang == source && p.target_lang == target);
        let mut pair = match at {
            Some(i) => self.pairs.remove(i),
            None => PairRatio {
                source_lang: source.to_owned(),
                target_lang: target.to_owned(),
                ratio: seen,
                seen: 0,
            },
        };
        pair.ratio = (pair.ratio.ln() + (seen.ln() - pair.ratio.ln()) * LEARNING).exp();
        pair.seen = (pair.seen + 1).min(TRUSTED_AFTER);
        if self.pairs.len() == PAIRS {
            self.pairs.remove(0);
        }
        self.pairs.push(pair);
    }

    /// The ratios trusted, for a snapshot.
    pub fn saved(&self) -> Vec<PairRatio> {
        let trusted = self.pairs.iter().filter(|p| p.seen >= TRUSTED_AFTER);
        trusted.cloned().collect()
    }

    /// Ratios restored from a snapshot (finite and positive ones only).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn restored(pairs: &[PairRatio]) -> Self {
        let valid = pairs
            .iter()
            .filter(|p| p.ratio.is_finite() && p.ratio > 0.0);
        let mut pairs: Vec<PairRatio> = valid
            .map(|p| PairRatio {
                seen: TRUSTED_AFTER,
                ..p.clone()
            })
            .collect();
        let excess = pairs.len().saturating_sub(PAIRS);
        pairs.drain(..excess);
        LengthRatios { pairs }
    }

    fn find(&self, source: &str, target: &str) -> Option<&PairRatio> {
        self.pairs
            .iter()
            .find(|p| p.source_lang == source && p.target_lang == target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_trusted_after_a_few_translations_and_follows_them() {
        let mut r = LengthRatios::default();
        for _ in 0..TRUSTED_AFTER - 1 {
            r.learn("en", "de", 100.0, 120.0);
        }
        assert_eq!(r.trusted("en", "de"), None);
        r.learn("en", "de", 100.0, 120.0);
        assert!((r.trusted("en", "de").unwrap() - 1.2).abs() < 1e-9);
        assert_eq!(r.trusted("en", "fr"), None);
        for _ in 0..40 {
            r.learn("en", "de", 100.0, 150.0);
        }
        assert!((r.trusted("en", "de").unwrap() - 1.5).abs() < 0.01);
        let restored = LengthRatios::restored(&r.saved());
        assert!((restored.trusted("en", "de").unwrap() - 1.5).abs() < 0.01);
    }
}
