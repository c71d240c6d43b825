//! Providers that nothing needs any more are forgotten: an extension that gives each
//! site, model or key a `providerId` of its own meets ever new ids, and each would
//! otherwise keep its state and its share of the pacer's memory for good.
//!
//! A provider is forgotten when no group, batch or running call uses its index and its
//! pacing state holds nothing back (`ProviderPacing::holds_nothing`: no pause, daily
//! block, adaptive rate, reported limits in force or learned batch size), once unused
//! for 10 minutes of the pacer's clock, or at once while more than 1,024 providers are
//! remembered (`provider_table`). Its index is then free for another provider.

use super::Engine;

impl<C: Clone> Engine<C> {
    /// Forgets idle providers when a sweep is due (at most once a minute, or when the
    /// count of providers has doubled). Called at the end of an input, when no index is
    /// held anywhere but in the parts.
    pub(super) fn forget_idle_providers(&mut self) {
        if !self.pacer.sweep_due(self.now) {
            return;
        }
        let mut in_use = vec![false; self.pacer.provider_bound()];
        let used = (self.groups.providers())
            .chain(self.batches.providers())
            .chain(self.calls.providers())
            .chain(self.runs.providers());
        for index in used {
            if let Some(flag) = in_use.get_mut(index as usize) {
                *flag = true;
            }
        }
        let forgotten = self.pacer.forget_idle(self.now, &in_use);
        if !forgotten.is_empty() {
            self.batches
                .forget_providers(&forgotten, self.pacer.provider_bound());
            self.out.forget_provider_stats(&forgotten);
        }
    }
}
