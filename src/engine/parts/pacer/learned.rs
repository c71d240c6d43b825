//! What the pacer learns of each provider besides its rate: the batch size its replies
//! carry, its token count against the estimates, and the length of its translations.
//! Apart because none of it holds a call back: it shapes the calls.

use super::Pacer;
use crate::batch_limit::Proved;
use crate::options::Options;

impl Pacer {
    /// Most items the next call to `provider` may carry under `max` (its learned batch
    /// size, a probe of two included; `max` itself without `adaptiveBatching`).
    pub(in crate::engine) fn call_limit(&self, provider: u32, max: u32, options: &Options) -> u32 {
        if !options.adaptive_batching {
            return max;
        }
        self.providers
            .get(provider)
            .map_or(max, |p| p.state.borrow().batch_limit.next_call_limit(max))
    }

    /// The correction of `provider`'s token estimates for its output bound.
    pub(in crate::engine) fn input_ratio(&self, provider: u32) -> f64 {
        self.providers
            .get(provider)
            .map_or(1.0, |p| p.state.borrow().input_ratio.get())
    }

    /// The length of `provider`'s translations from `source` to `target` against their
    /// sources, once its proven replies showed it.
    pub(in crate::engine) fn length_ratio(
        &self,
        provider: u32,
        source: &str,
        target: &str,
    ) -> Option<f64> {
        let p = self.providers.get(provider)?;
        let ratio = p.state.borrow().length_ratios.trusted(source, target);
        ratio
    }

    /// A proven translation by `provider` of `translated` characters for a source of
    /// `source_len`, from `source` to `target`.
    pub(in crate::engine) fn learn_length(
        &self,
        provider: u32,
        (source, target): (&str, &str),
        source_len: f64,
        translated: f64,
    ) {
        if let Some(p) = self.providers.get(provider) {
            let mut pacing = p.state.borrow_mut();
            pacing
                .length_ratios
                .learn(source, target, source_len, translated);
        }
    }

    /// A call of `items` items to `provider` started (a probe at a limit of 1 is taken).
    pub(in crate::engine) fn note_call(&self, provider: u32, items: usize) {
        if let Some(p) = self.providers.get(provider) {
            let mut pacing = p.state.borrow_mut();
            if items > 1 {
                pacing.batch_limit.on_batch();
            } else {
                pacing.batch_limit.on_single();
            }
        }
    }

    /// A batch reply from `provider` proved `proved` of its segments: its learned batch
    /// size under `max`, when that changed.
    pub(in crate::engine) fn note_batch_reply(
        &self,
        provider: u32,
        proved: Proved,
        max: u32,
        options: &Options,
    ) -> Option<u32> {
        if !options.adaptive_batching {
            return None;
        }
        let p = self.providers.get(provider)?;
        let changed = p.state.borrow_mut().batch_limit.on_batch_reply(proved, max);
        changed
    }
}
