//! The providers this pacer remembers: the index of a provider id, each provider's own
//! limits (`providers`), and the idle providers forgotten. Apart because it is the
//! pacer's index of providers, which the budgets and pacing state hang from.

use std::rc::Rc;

use super::Pacer;
use crate::engine::provider_table::Entry;
use crate::options::Options;
use crate::provider_limits::ProviderLimits;
use crate::provider_settings::ProviderSettings;
use crate::time::Instant;

impl Pacer {
    /// The index of provider `id`, used at `now`: remembered on first use (again after
    /// it was forgotten, see [`Pacer::forget_idle`]), with its own limits if `options`
    /// give it some.
    pub(in crate::engine) fn provider_for(
        &mut self,
        id: &str,
        now: Instant,
        options: &Options,
    ) -> u32 {
        if let Some(index) = self.providers.find(id) {
            self.providers.touch(index, now);
            return index;
        }
        let settings = options.provider_settings(id);
        let id: Rc<str> = id.into();
        let pacing = match &self.shared {
            Some(budget) => budget.provider(&id),
            None => Rc::default(),
        };
        let index = self.providers.insert(id, pacing, now);
        if settings.is_some() || self.own.len() > index as usize {
            self.set_own(index, settings, options, now);
        }
        index
    }

    /// Provider `index`'s own limits become `settings` at `now` (kept where they exist).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn set_own(
        &mut self,
        index: u32,
        settings: Option<&ProviderSettings>,
        options: &Options,
        now: Instant,
    ) {
        let index = index as usize;
        if self.own.len() <= index {
            self.own.resize_with(index + 1, || None);
        }
        self.own[index] = match (self.own[index].take(), settings) {
            (Some(mut own), Some(settings)) => {
                own.update(settings, options, now);
                Some(own)
            }
            (None, Some(settings)) => Some(Box::new(ProviderLimits::new(settings, options, now))),
            (_, None) => None,
        };
        self.own_tokens = self.own.iter().flatten().any(|o| o.counts_tokens());
    }

    /// Provider `index`'s own limits, if it has some.
    pub(in crate::engine) fn own(&self, index: u32) -> Option<&ProviderLimits> {
        self.own.get(index as usize)?.as_deref()
    }

    /// Provider `index`'s own settings, if `providers` lists it.
    pub(in crate::engine) fn own_settings(&self, index: u32) -> Option<&ProviderSettings> {
        self.own(index).map(ProviderLimits::settings)
    }

    /// The index of provider `id`, if it is remembered (nothing changes).
    pub(in crate::engine) fn find_provider(&self, id: &str) -> Option<u32> {
        self.providers.find(id)
    }

    /// One more than the highest provider index given out.
    pub(in crate::engine) fn provider_bound(&self) -> usize {
        self.providers.bound()
    }

    /// How many providers are remembered.
    pub(in crate::engine) fn providers_remembered(&self) -> usize {
        self.providers.remembered()
    }

    /// The id of provider `index`.
    pub(in crate::engine) fn provider_id(&self, index: u32) -> Rc<str> {
        self.providers
            .get(index)
            .map_or_else(|| Rc::from(""), |p| p.id.clone())
    }

    /// Whether providers are to be swept at `now` (see [`Pacer::forget_idle`]).
    pub(in crate::engine) fn sweep_due(&self, now: Instant) -> bool {
        self.providers.sweep_due(now)
    }

    /// Forgets the providers that nothing uses (`in_use`, by index: no group, batch or
    /// call) and whose pacing state holds nothing back: no pause, daily block, adaptive
    /// rate, reported limits in force or learned batch size (`ProviderPacing::holds_nothing`).
    /// Their learned estimates (token scaling, length ratios) go with them. Their
    /// indexes, which the caller stops using.
    pub(in crate::engine) fn forget_idle(&mut self, now: Instant, in_use: &[bool]) -> Vec<u32> {
        let mut kept = in_use.to_vec();
        for (index, own) in self.own.iter().enumerate() {
            if own.is_some() {
                if kept.len() <= index {
                    kept.resize(index + 1, false);
                }
                kept[index] = true;
            }
        }
        let forgotten = self
            .providers
            .sweep(now, &kept, |p| p.state.borrow().holds_nothing(now));
        let mut indexes = Vec::with_capacity(forgotten.len());
        for (index, provider) in forgotten {
            indexes.push(index);
            if let Some(budget) = &self.shared {
                let Entry { id, state, .. } = provider;
                drop(state);
                budget.release(&id);
            }
        }
        indexes
    }
}
