//! Compatibility groups (items that may share a batch) and the provider index behind
//! them: a group lives while it has jobs, found by a keyed hash of its fields.

use super::*;

/// A compatibility group: its shared fields, a keyer primed with them, and the
/// batch still open to new items.
#[derive(Debug)]
pub struct Group {
    pub(super) info: Rc<CompatInfo>,
    pub(super) encoded: Box<[u8]>,
    /// Its entry in `group_by_fields`.
    pub(super) fields_word: u64,
    /// For in-memory keys.
    pub(super) keyer: Keyer,
    pub(super) provider: u32,
    pub(super) open: Option<Id<Batch>>,
    pub(super) jobs: u64,
}

impl<C: Clone> Engine<C> {
    /// The group of these fields (created on first use) and the item key of `text` in it.
    pub(super) fn group_for(&mut self, compat: &Compat<'_>, text: &str) -> (Id<Group>, ShortKey) {
        self.scratch.clear();
        compat.encode(&mut self.scratch);
        let fields_word = self.keyer.fields_word(&self.scratch);
        if let Some(key) = self.group_by_fields.get(fields_word) {
            if let Some(group) = self.groups.get(key) {
                if *group.encoded == *self.scratch {
                    return (key, group.keyer.key(text));
                }
            }
        }
        let provider = self.provider_for(compat.provider_id);
        let encoded: Box<[u8]> = self.scratch.as_slice().into();
        let keyer = self.keyer.primed(compat);
        let item_key = keyer.key(text);
        let key = self.groups.insert(Group {
            info: Rc::new(CompatInfo {
                provider_id: compat.provider_id.to_owned(),
                source_lang: compat.source_lang.to_owned(),
                target_lang: compat.target_lang.to_owned(),
                context: compat.context.to_owned(),
                llm: compat.llm,
            }),
            keyer,
            encoded,
            fields_word,
            provider,
            open: None,
            jobs: 0,
        });
        // On the (2^-64) chance that another live group shares the word, this one simply
        // goes unindexed: its items then start groups of their own.
        self.group_by_fields.insert_if_vacant(fields_word, key);
        (key, item_key)
    }

    pub(super) fn release_group_if_idle(&mut self, group: Id<Group>) {
        let idle = self.groups.get(group).is_some_and(|g| g.jobs == 0);
        if idle {
            if let Some(g) = self.groups.remove(group) {
                self.group_by_fields
                    .remove_if_leads_to(g.fields_word, group);
            }
        }
    }

    /// The index of provider `id`, added on first use. A scan rather than a map: there are
    /// a handful of providers, every dispatch already walks them all, and this runs only
    /// when a compatibility group is created.
    pub(super) fn provider_for(&mut self, id: &str) -> u32 {
        if let Some(index) = self.providers.iter().position(|p| &*p.id == id) {
            return index as u32;
        }
        let index = self.providers.len() as u32;
        let id: Rc<str> = id.into();
        let pacing = match &self.shared {
            Some(budget) => budget.provider(&id),
            None => Rc::default(),
        };
        self.providers.push(Provider {
            id,
            ready: ReadySet::default(),
            pacing,
        });
        index
    }
}
