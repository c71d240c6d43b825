//! Compatibility groups: items that may share a batch. A group lives while it has jobs,
//! found by a keyed hash of its fields.
//!
//! The `Groups` part keeps "a group is in the field index (unless another live group
//! holds its word) while it has jobs, and is gone once its last job ends": groups are
//! made by [`Groups::group_for`], counted by [`Groups::job_added`] and released by
//! [`Groups::job_ended`] (or [`Groups::release_if_idle`] for an item that never became a
//! job).
//!
//! It also keeps the registered combinations of fields (`register`): each with its
//! encoded fields, their word and a keyer primed with them, so that an item submitted
//! under one is grouped and keyed by hashing its text alone.

use std::rc::Rc;

use crate::call::CompatInfo;
use crate::id_index::IdIndex;
use crate::key::{Compat, Keyer, ShortKey};
use crate::slab::{Id, Slab};

/// A compatibility group: its shared fields and a keyer primed with them (its batch
/// still open to new items is the `Batches` part's).
#[derive(Debug)]
pub struct Group {
    fields: Rc<Fields>,
    provider: u32,
    jobs: u64,
    /// For a group of items moved to a fallback provider: the fields of the items' own
    /// group (its provider is theirs).
    origin: Option<Rc<Fields>>,
}

impl Group {
    /// Its fields, shared with its calls.
    pub(in crate::engine) fn info(&self) -> &Rc<CompatInfo> {
        &self.fields.info
    }

    /// The provider its calls go to.
    pub(in crate::engine) fn provider(&self) -> u32 {
        self.provider
    }

    /// Whether its items were moved here from their own provider's group.
    pub(in crate::engine) fn is_moved(&self) -> bool {
        self.origin.is_some()
    }
}

/// The groups, their field index, and the keyer of in-memory item keys.
#[derive(Debug)]
pub(in crate::engine) struct Groups {
    slab: Slab<Group>,
    /// Groups by a keyed hash of their encoded fields; the group's own fields confirm a
    /// match (an id map rather than one keyed by the bytes: its code is in the binary
    /// already).
    by_fields: IdIndex<Group>,
    /// In-memory item keys, under a secret derived from the seed.
    keyer: Keyer,
    /// The fields of the item being grouped, encoded.
    scratch: Vec<u8>,
    /// The registered combinations, by id minus one.
    entries: Vec<Rc<Fields>>,
    /// The live groups of moved items (not in the field index: found by their origin's
    /// fields and their provider).
    moved: Vec<Id<Group>>,
    /// The groups most recently found through the field index, compared field by field
    /// before anything is encoded or hashed: a page's items come in a few combinations.
    recent: [Id<Group>; RECENT],
    /// The slot of `recent` the next group found through the index takes.
    next_recent: usize,
    /// The fields of the own group released last, for the next group of the same
    /// fields: items that arrive and are answered a batch at a time make and release a
    /// group per batch, and its fields (owned strings, a keyer primed with them) are
    /// the same each time.
    released: Option<Rc<Fields>>,
}

/// How many groups `recent` holds: a page's target languages and flows.
const RECENT: usize = 8;

/// Whether a group's fields are `compat`'s (a moved group's are never an item's own).
fn same_fields(info: &CompatInfo, compat: &Compat<'_>) -> bool {
    info.llm == compat.llm
        && info.fallback_from.is_none()
        && info.provider_id == compat.provider_id
        && info.source_lang == compat.source_lang
        && info.target_lang == compat.target_lang
        && info.context == compat.context
        && info.scope == compat.scope
}

/// A combination of fields prepared for grouping and keying: kept per registered
/// combination and shared by its group.
#[derive(Debug)]
struct Fields {
    info: Rc<CompatInfo>,
    encoded: Box<[u8]>,
    /// Its entry in the field index.
    fields_word: u64,
    /// For in-memory keys, primed with the fields.
    keyer: Keyer,
}

impl Groups {
    pub(in crate::engine) fn new(keyer: Keyer) -> Groups {
        Groups {
            slab: Slab::default(),
            by_fields: IdIndex::default(),
            keyer,
            scratch: Vec::new(),
            entries: Vec::new(),
            moved: Vec::new(),
            recent: [Id::NONE; RECENT],
            next_recent: 0,
            released: None,
        }
    }

    /// Registers a combination of fields; returns its id (never 0).
    pub(in crate::engine) fn register(&mut self, compat: &Compat<'_>) -> u32 {
        let mut encoded = Vec::new();
        compat.encode(&mut encoded);
        let fields_word = self.keyer.fields_word(&encoded);
        let fields = fields_of(&self.keyer, compat, &encoded, fields_word);
        self.entries.push(fields);
        self.entries.len() as u32
    }

    /// The fields registered under `id`.
    pub(in crate::engine) fn registered(&self, id: u32) -> Option<&Rc<CompatInfo>> {
        registered_entry(&self.entries, id).map(|fields| &fields.info)
    }

    /// Forgets every registered combination (their groups live on while they have jobs).
    pub(in crate::engine) fn clear_registered(&mut self) {
        self.entries.clear();
    }

    pub(in crate::engine) fn get(&self, group: Id<Group>) -> Option<&Group> {
        self.slab.get(group)
    }

    /// The providers of the live groups.
    pub(in crate::engine) fn providers(&self) -> impl Iterator<Item = u32> + '_ {
        self.slab.iter().map(|(_, g)| g.provider)
    }

    /// Every live group, with the count of its jobs.
    #[cfg(any(test, feature = "check"))]
    pub(in crate::engine) fn counts(&self) -> impl Iterator<Item = (Id<Group>, u64, bool)> + '_ {
        self.slab
            .iter()
            .map(|(key, g)| (key, g.jobs, g.origin.is_some()))
    }

    /// The group of these fields (created on first use, its provider's index given by
    /// `provider_of`) and the item key of `text` in it; under a registered combination
    /// (`entry`, whose fields `compat` are) nothing but `text` is hashed.
    pub(in crate::engine) fn group_for(
        &mut self,
        compat: &Compat<'_>,
        entry: Option<u32>,
        text: &str,
        provider_of: impl FnOnce(&str) -> u32,
    ) -> (Id<Group>, ShortKey) {
        let entry = entry.and_then(|id| registered_entry(&self.entries, id));
        if entry.is_none() {
            let recent = self
                .recent
                .iter()
                .filter_map(|key| Some((*key, self.slab.get(*key)?)));
            for (key, group) in recent {
                if same_fields(&group.fields.info, compat) {
                    return (key, group.fields.keyer.key(text));
                }
            }
        }
        let (encoded, fields_word) = match entry {
            Some(entry) => (&*entry.encoded, entry.fields_word),
            None => {
                self.scratch.clear();
                compat.encode(&mut self.scratch);
                (&*self.scratch, self.keyer.fields_word(&self.scratch))
            }
        };
        if let Some(key) = self.by_fields.get(fields_word) {
            if let Some(group) = self.slab.get(key) {
                if *group.fields.encoded == *encoded {
                    let item_key = group.fields.keyer.key(text);
                    if entry.is_none() {
                        self.remember(key);
                    }
                    return (key, item_key);
                }
            }
        }
        let fields = match entry {
            Some(entry) => Rc::clone(entry),
            None => match self.released.take() {
                Some(fields)
                    if fields.fields_word == fields_word && *fields.encoded == *encoded =>
                {
                    fields
                }
                _ => fields_of(&self.keyer, compat, encoded, fields_word),
            },
        };
        let item_key = fields.keyer.key(text);
        let key = self.slab.insert(Group {
            fields,
            provider: provider_of(compat.provider_id),
            jobs: 0,
            origin: None,
        });
        // On the (2^-64) chance that another live group shares the word, this one simply
        // goes unindexed: its items then start groups of their own.
        self.by_fields.insert_if_vacant(fields_word, key);
        if entry.is_none() {
            self.remember(key);
        }
        (key, item_key)
    }

    /// Puts `group` among the recent ones, in place of the oldest.
    fn remember(&mut self, group: Id<Group>) {
        self.recent[self.next_recent] = group;
        self.next_recent = (self.next_recent + 1) % RECENT;
    }

    /// The group of the items of `from` (their own group, or one they were moved to)
    /// moved to provider `to` (index `to_index`): batched only with items moved from the
    /// same own group. Created on first use.
    pub(in crate::engine) fn moved(
        &mut self,
        from: Id<Group>,
        to: &str,
        to_index: u32,
    ) -> Option<Id<Group>> {
        let from = self.slab.get(from)?;
        let origin = Rc::clone(from.origin.as_ref().unwrap_or(&from.fields));
        for key in &self.moved {
            let found = self.slab.get(*key).is_some_and(|g| {
                g.provider == to_index
                    && g.origin
                        .as_ref()
                        .is_some_and(|o| o.encoded == origin.encoded)
            });
            if found {
                return Some(*key);
            }
        }
        let info = CompatInfo {
            provider_id: to.to_owned(),
            fallback_from: Some(origin.info.provider_id.clone()),
            ..(*origin.info).clone()
        };
        let fields = Rc::new(Fields {
            info: Rc::new(info),
            encoded: origin.encoded.clone(),
            fields_word: origin.fields_word,
            keyer: origin.keyer.clone(),
        });
        let key = self.slab.insert(Group {
            fields,
            provider: to_index,
            jobs: 0,
            origin: Some(origin),
        });
        self.moved.push(key);
        Some(key)
    }

    /// A job of `group` was made.
    pub(in crate::engine) fn job_added(&mut self, group: Id<Group>) {
        if let Some(g) = self.slab.get_mut(group) {
            g.jobs += 1;
        }
    }

    /// A job of `group` ended: the group goes with its last job.
    pub(in crate::engine) fn job_ended(&mut self, group: Id<Group>) {
        if let Some(g) = self.slab.get_mut(group) {
            g.jobs -= 1;
        }
        self.release_if_idle(group);
    }

    /// Drops `group` if it has no job (an item settled without one).
    pub(in crate::engine) fn release_if_idle(&mut self, group: Id<Group>) {
        let idle = self.slab.get(group).is_some_and(|g| g.jobs == 0);
        if idle {
            if let Some(g) = self.slab.remove(group) {
                if g.origin.is_some() {
                    self.moved.retain(|key| *key != group);
                } else {
                    self.by_fields
                        .remove_if_leads_to(g.fields.fields_word, group);
                    self.released = Some(g.fields);
                }
            }
        }
    }

    /// Drops every group (dispose).
    pub(in crate::engine) fn clear(&mut self) {
        // A fresh slab rather than a drained one: nothing is created after dispose, so no
        // old key can meet a new entry.
        self.slab = Slab::default();
        self.by_fields.clear();
        self.moved.clear();
        self.recent = [Id::NONE; RECENT];
        self.released = None;
    }
}

/// The registered combination `id` (ids count from 1).
fn registered_entry(entries: &[Rc<Fields>], id: u32) -> Option<&Rc<Fields>> {
    entries.get((id as usize).checked_sub(1)?)
}

/// `compat` prepared: `encoded` is its encoding, `fields_word` the word of that.
fn fields_of(keyer: &Keyer, compat: &Compat<'_>, encoded: &[u8], fields_word: u64) -> Rc<Fields> {
    Rc::new(Fields {
        info: Rc::new(CompatInfo {
            provider_id: compat.provider_id.to_owned(),
            source_lang: compat.source_lang.to_owned(),
            target_lang: compat.target_lang.to_owned(),
            context: compat.context.to_owned(),
            llm: compat.llm,
            scope: compat.scope.to_owned(),
            fallback_from: None,
            pool_id: None,
        }),
        encoded: encoded.into(),
        fields_word,
        keyer: keyer.primed_encoded(encoded),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_combination_finds_the_same_group_and_item_key() {
        let compat = Compat {
            provider_id: "openai",
            source_lang: "en",
            target_lang: "de",
            context: "title",
            llm: true,
            scope: "7",
        };
        let other = Compat {
            target_lang: "fr",
            ..compat
        };
        let mut groups = Groups::new(Keyer::new(7));
        let entry = groups.register(&compat);
        let other_entry = groups.register(&other);
        let expected = Keyer::new(7).primed(&compat).key("Hello");
        // First through the registered combination, then through the fields: one group.
        let (group, key) = groups.group_for(&compat, Some(entry), "Hello", |_| 0);
        assert_eq!(key, expected);
        groups.job_added(group);
        assert_eq!(
            groups.group_for(&compat, None, "Hello", |_| 0),
            (group, expected)
        );
        let (other_group, other_key) = groups.group_for(&other, Some(other_entry), "Hello", |_| 0);
        assert_ne!(other_group, group);
        assert_eq!(other_key, Keyer::new(7).primed(&other).key("Hello"));
        // The other way round, once the group is gone.
        groups.job_ended(group);
        let (group, key) = groups.group_for(&compat, None, "Hello", |_| 0);
        groups.job_added(group);
        assert_eq!(key, expected);
        assert_eq!(
            groups.group_for(&compat, Some(entry), "Hello", |_| 0),
            (group, expected)
        );
        assert_eq!(
            groups
                .registered(entry)
                .map(|info| info.target_lang.as_str()),
            Some("de")
        );
        groups.clear_registered();
        assert!(groups.registered(entry).is_none());
    }

    #[test]
    fn more_combinations_than_the_recent_ones_each_keep_their_group() {
        let langs = ["de", "fr", "es", "it", "pt", "nl", "pl", "sv", "fi", "da"];
        let compat = |target_lang| Compat {
            provider_id: "openai",
            source_lang: "en",
            target_lang,
            context: "",
            llm: true,
            scope: "",
        };
        let mut groups = Groups::new(Keyer::new(7));
        let mut first = Vec::new();
        for lang in langs {
            let (group, key) = groups.group_for(&compat(lang), None, "Hello", |_| 0);
            groups.job_added(group);
            assert_eq!(key, Keyer::new(7).primed(&compat(lang)).key("Hello"));
            first.push(group);
        }
        // Round after round, whether a combination is among the recent ones or not.
        for _ in 0..3 {
            for (lang, group) in langs.iter().zip(&first) {
                assert_eq!(groups.group_for(&compat(lang), None, "Hi", |_| 0).0, *group);
            }
        }
        // Another context or scope is another group, with other item keys, though the
        // group of the other fields is among the recent ones.
        let other = Compat {
            context: "title",
            ..compat("de")
        };
        assert!(!first.contains(&groups.group_for(&other, None, "Hi", |_| 0).0));
        let scoped = Compat {
            scope: "7",
            ..compat("de")
        };
        let (group, key) = groups.group_for(&scoped, None, "Hi", |_| 0);
        assert!(!first.contains(&group));
        assert_ne!(key, groups.group_for(&compat("de"), None, "Hi", |_| 0).1);
    }
}
