//! Values found by a `u64` id.

use crate::id_index::IdIndex;
use crate::slab::Slab;

/// A map from ids to values: the values in a slab, found through a [`IdIndex`]. For a
/// value type that would otherwise need a hash map of its own, this shares the one id
/// map's code in the .wasm (only the slab's few small methods are per type).
#[derive(Debug)]
pub struct IdTable<T> {
    index: IdIndex<T>,
    values: Slab<T>,
}

impl<T> Default for IdTable<T> {
    fn default() -> Self {
        IdTable {
            index: IdIndex::default(),
            values: Slab::default(),
        }
    }
}

impl<T> IdTable<T> {
    /// Puts `value` under `id`, replacing what was there.
    pub fn insert(&mut self, id: u64, value: T) {
        let key = self.values.insert(value);
        if let Some(replaced) = self.index.insert(id, key) {
            self.values.remove(replaced);
        }
    }

    /// The value under `id`.
    pub fn get(&self, id: u64) -> Option<&T> {
        self.values.get(self.index.get(id)?)
    }

    /// The value under `id`, mutably.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        self.values.get_mut(self.index.get(id)?)
    }

    /// Whether `id` is there.
    #[cfg(test)]
    pub fn contains(&self, id: u64) -> bool {
        self.index.contains(id)
    }

    /// Removes and returns the value under `id`.
    pub fn remove(&mut self, id: u64) -> Option<T> {
        self.values.remove(self.index.remove(id)?)
    }

    /// Number of values.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// The ids, in the same order as a `HashMap` with the same hasher would give them.
    #[cfg(test)]
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.index.ids()
    }

    /// Removes every value.
    #[cfg(test)]
    pub fn clear(&mut self) {
        // A fresh slab is enough: the index that held its keys is gone with it.
        *self = IdTable::default();
    }
}

#[cfg(test)]
mod tests {
    use super::IdTable;
    use crate::hash::IdMap;

    #[test]
    fn behaves_as_a_hash_map() {
        let mut ours = IdTable::default();
        let mut model: IdMap<u64> = IdMap::default();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..5_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let id = (state >> 8) % 48;
            match state % 5 {
                0 | 1 => {
                    ours.insert(id, step);
                    model.insert(id, step);
                }
                2 => assert_eq!(ours.remove(id), model.remove(&id)),
                3 => {
                    if let Some(value) = ours.get_mut(id) {
                        *value += 1;
                    }
                    if let Some(value) = model.get_mut(&id) {
                        *value += 1;
                    }
                }
                _ if step % 1000 == 999 => {
                    ours.clear();
                    model.clear();
                }
                _ => {}
            }
            assert_eq!(ours.get(id), model.get(&id));
            assert_eq!(ours.contains(id), model.contains_key(&id));
            assert_eq!(ours.len(), model.len());
            let ids: Vec<u64> = ours.ids().collect();
            let model_ids: Vec<u64> = model.keys().copied().collect();
            assert_eq!(ids, model_ids);
        }
    }
}
