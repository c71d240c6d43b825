//! Slab ids found by a `u64` number (a hash word, a ticket).

use core::marker::PhantomData;

use crate::hash::{look_up, IdMap};
use crate::slab::Id;

/// Maps numbers to the ids of `T`s. The ids are held as their bits so that every index
/// in the core is the same `IdMap<u64>`, whose code the .wasm then holds once (the typed
/// methods are thin and inlined).
#[derive(Debug)]
pub struct IdIndex<T>(IdMap<u64>, PhantomData<fn() -> T>);

impl<T> Default for IdIndex<T> {
    fn default() -> Self {
        IdIndex(IdMap::default(), PhantomData)
    }
}

impl<T> IdIndex<T> {
    /// The key under `id`.
    #[inline]
    pub fn get(&self, id: u64) -> Option<Id<T>> {
        look_up(&self.0, id).map(Id::from_full_bits)
    }

    /// Whether `id` is there.
    #[inline]
    #[cfg(test)]
    pub fn contains(&self, id: u64) -> bool {
        // Through `get`, whose code is in the .wasm already (`contains_key` is another copy).
        self.get(id).is_some()
    }

    /// Puts `key` under `id`; returns the key it replaces.
    #[inline]
    pub fn insert(&mut self, id: u64, key: Id<T>) -> Option<Id<T>> {
        self.0
            .insert(id, key.to_full_bits())
            .map(Id::from_full_bits)
    }

    /// Puts `key` under `id` unless `id` is taken already.
    #[inline]
    pub fn insert_if_vacant(&mut self, id: u64, key: Id<T>) {
        // A lookup then an insert: both are in the .wasm already, an `entry` would be
        // another copy of the table code.
        if look_up(&self.0, id).is_none() {
            self.0.insert(id, key.to_full_bits());
        }
    }

    /// Removes and returns the key under `id`.
    #[inline]
    pub fn remove(&mut self, id: u64) -> Option<Id<T>> {
        self.0.remove(&id).map(Id::from_full_bits)
    }

    /// Removes `id` if it still leads to `key`.
    #[inline]
    pub fn remove_if_leads_to(&mut self, id: u64, key: Id<T>) {
        if self.get(id) == Some(key) {
            self.0.remove(&id);
        }
    }

    /// Number of ids.
    #[inline]
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The ids, in the map's order.
    #[inline]
    #[cfg(test)]
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.keys().copied()
    }

    /// Removes every id.
    #[inline]
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::IdIndex;
    use crate::slab::Slab;

    #[test]
    fn keys_come_back_whole() {
        let mut slab = Slab::default();
        let mut index = IdIndex::default();
        let first = slab.insert(());
        slab.remove(first);
        let reused = slab.insert(());
        assert_ne!(first, reused);
        index.insert(7, reused);
        assert_eq!(index.get(7), Some(reused));
        index.insert_if_vacant(7, first);
        assert_eq!(index.get(7), Some(reused));
        index.remove_if_leads_to(7, first);
        assert!(index.contains(7));
        index.remove_if_leads_to(7, reused);
        assert!(!index.contains(7));
        index.insert_if_vacant(8, first);
        assert_eq!(index.ids().collect::<Vec<_>>(), vec![8]);
        assert_eq!(index.remove(8), Some(first));
        assert_eq!(index.len(), 0);
    }
}
