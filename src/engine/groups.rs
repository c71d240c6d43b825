//! Compatibility groups: items that may share a batch. A group lives while it has jobs,
//! found by a keyed hash of its fields.
//!
//! The `Groups` part keeps "a group is in the field index (unless another live group
//! holds its word) while it has jobs, and is gone once its last job ends": groups are
//! made by [`Groups::group_for`], counted by [`Groups::job_added`] and released by
//! [`Groups::job_ended`] (or [`Groups::release_if_idle`] for an item that never became a
//! job).

use std::rc::Rc;

use crate::call::CompatInfo;
use crate::id_index::IdIndex;
use crate::key::{Compat, Keyer, ShortKey};
use crate::slab::{Id, Slab};

/// A compatibility group: its shared fields and a keyer primed with them (its batch
/// still open to new items is the `Batches` part's).
#[derive(Debug)]
pub struct Group {
    info: Rc<CompatInfo>,
    encoded: Box<[u8]>,
    /// Its entry in the field index.
    fields_word: u64,
    /// For in-memory keys.
    keyer: Keyer,
    provider: u32,
    jobs: u64,
}

impl Group {
    /// Its fields, shared with its calls.
    pub(super) fn info(&self) -> &Rc<CompatInfo> {
        &self.info
    }

    /// The provider its calls go to.
    pub(super) fn provider(&self) -> u32 {
        self.provider
    }
}

/// The groups, their field index, and the keyer of in-memory item keys.
#[derive(Debug)]
pub(super) struct Groups {
    slab: Slab<Group>,
    /// Groups by a keyed hash of their encoded fields; the group's own fields confirm a
    /// match (an id map rather than one keyed by the bytes: its code is in the binary
    /// already).
    by_fields: IdIndex<Group>,
    /// In-memory item keys, under a secret derived from the seed.
    keyer: Keyer,
    /// The fields of the item being grouped, encoded.
    scratch: Vec<u8>,
}

impl Groups {
    pub(super) fn new(keyer: Keyer) -> Groups {
        Groups {
            slab: Slab::default(),
            by_fields: IdIndex::default(),
            keyer,
            scratch: Vec::new(),
        }
    }

    pub(super) fn get(&self, group: Id<Group>) -> Option<&Group> {
        self.slab.get(group)
    }

    /// The group of these fields (created on first use, its provider's index given by
    /// `provider_of`) and the item key of `text` in it.
    pub(super) fn group_for(
        &mut self,
        compat: &Compat<'_>,
        text: &str,
        provider_of: impl FnOnce(&str) -> u32,
    ) -> (Id<Group>, ShortKey) {
        self.scratch.clear();
        compat.encode(&mut self.scratch);
        let fields_word = self.keyer.fields_word(&self.scratch);
        if let Some(key) = self.by_fields.get(fields_word) {
            if let Some(group) = self.slab.get(key) {
                if *group.encoded == *self.scratch {
                    return (key, group.keyer.key(text));
                }
            }
        }
        let provider = provider_of(compat.provider_id);
        let encoded: Box<[u8]> = self.scratch.as_slice().into();
        let keyer = self.keyer.primed(compat);
        let item_key = keyer.key(text);
        let key = self.slab.insert(Group {
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
            jobs: 0,
        });
        // On the (2^-64) chance that another live group shares the word, this one simply
        // goes unindexed: its items then start groups of their own.
        self.by_fields.insert_if_vacant(fields_word, key);
        (key, item_key)
    }

    /// A job of `group` was made.
    pub(super) fn job_added(&mut self, group: Id<Group>) {
        if let Some(g) = self.slab.get_mut(group) {
            g.jobs += 1;
        }
    }

    /// A job of `group` ended: the group goes with its last job.
    pub(super) fn job_ended(&mut self, group: Id<Group>) {
        if let Some(g) = self.slab.get_mut(group) {
            g.jobs -= 1;
        }
        self.release_if_idle(group);
    }

    /// Drops `group` if it has no job (an item settled without one).
    pub(super) fn release_if_idle(&mut self, group: Id<Group>) {
        let idle = self.slab.get(group).is_some_and(|g| g.jobs == 0);
        if idle {
            if let Some(g) = self.slab.remove(group) {
                self.by_fields.remove_if_leads_to(g.fields_word, group);
            }
        }
    }

    /// Drops every group (dispose).
    pub(super) fn clear(&mut self) {
        // A fresh slab rather than a drained one: nothing is created after dispose, so no
        // old key can meet a new entry.
        self.slab = Slab::default();
        self.by_fields.clear();
    }
}
