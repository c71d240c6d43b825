//! The providers met so far, by index: each one's id and pacing state.

use std::rc::Rc;

use super::pacing::Provider;
use super::{Engine, Group};
use crate::budget::SharedBudget;
use crate::key::{Compat, ShortKey};
use crate::slab::Id;

impl<C: Clone> Engine<C> {
    /// The group of these fields (created on first use) and the item key of `text` in it.
    pub(super) fn group_for(&mut self, compat: &Compat<'_>, text: &str) -> (Id<Group>, ShortKey) {
        let (providers, shared) = (&mut self.providers, &self.shared);
        self.groups.group_for(compat, text, |id| {
            provider_index(providers, shared.as_ref(), id)
        })
    }

    /// The index of provider `id`, added on first use.
    pub(super) fn provider_for(&mut self, id: &str) -> u32 {
        provider_index(&mut self.providers, self.shared.as_ref(), id)
    }
}

/// The index of provider `id`, added on first use. A scan rather than a map: there are
/// a handful of providers, every dispatch already walks them all, and this runs only
/// when a compatibility group is created.
fn provider_index(providers: &mut Vec<Provider>, shared: Option<&SharedBudget>, id: &str) -> u32 {
    if let Some(index) = providers.iter().position(|p| &*p.id == id) {
        return index as u32;
    }
    let index = providers.len() as u32;
    let id: Rc<str> = id.into();
    let pacing = match shared {
        Some(budget) => budget.provider(&id),
        None => Rc::default(),
    };
    providers.push(Provider { id, pacing });
    index
}
