//! A map from numbers to values in which most numbers name a slot of their own.

// Its one user is the wasm driver (the resolvers of unsettled promises, by ticket).
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use crate::hash::IdMap;

/// Values by `u64` key, where `slot_of` maps most keys to a small index: those values
/// are found by index, the rest in a hash map. With 100,000 entries a hash table's
/// probes miss the cache, while a table by index stays as dense as the slots are.
/// Several keys may name one slot (a slot reused while its former key is still kept):
/// the slot holds the newest, the others move to the map, so no value is ever lost.
#[derive(Debug)]
pub struct SlottedMap<V> {
    slot_of: fn(u64) -> Option<usize>,
    by_slot: Vec<Option<(u64, V)>>,
    others: IdMap<V>,
}

impl<V> SlottedMap<V> {
    /// An empty map whose keys name their slots through `slot_of`.
    pub fn new(slot_of: fn(u64) -> Option<usize>) -> Self {
        SlottedMap {
            slot_of,
            by_slot: Vec::new(),
            others: IdMap::default(),
        }
    }

    /// Keeps `value` under `key`, replacing only a value of the same key.
    pub fn insert(&mut self, key: u64, value: V) {
        let Some(slot) = (self.slot_of)(key) else {
            self.others.insert(key, value);
            return;
        };
        if slot >= self.by_slot.len() {
            self.by_slot.resize_with(slot + 1, || None);
        }
        // The key may have moved to the map while its slot held another.
        if !self.others.is_empty() {
            self.others.remove(&key);
        }
        if let Some((former, held)) = self.by_slot[slot].replace((key, value)) {
            if former != key {
                self.others.insert(former, held);
            }
        }
    }

    /// Whether a value is kept under `key`.
    pub fn contains(&self, key: u64) -> bool {
        self.in_slot(key).is_some() || self.others.contains_key(&key)
    }

    /// Takes the value under `key` out.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        match self.in_slot(key) {
            Some(slot) => self.by_slot[slot].take().map(|(_, value)| value),
            None => self.others.remove(&key),
        }
    }

    /// The slot holding `key`'s value, if it is in one.
    fn in_slot(&self, key: u64) -> Option<usize> {
        let slot = (self.slot_of)(key)?;
        let (held, _) = self.by_slot.get(slot)?.as_ref()?;
        (*held == key).then_some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::SlottedMap;
    use crate::hash::IdMap;

    /// Keys below 2^52 name slot `key % 2^32` (as job tickets do); the others none.
    fn slot_of(key: u64) -> Option<usize> {
        (key < 1 << 52).then_some((key & 0xFFFF_FFFF) as usize)
    }

    /// Keys of a few slots in several generations, and keys of no slot: the table
    /// answers as a map would, whatever the order of inserts and removals.
    #[test]
    fn behaves_as_a_map_when_slots_are_reused_before_their_keys_are_taken() {
        let mut ours = SlottedMap::new(slot_of);
        let mut model: IdMap<u64> = IdMap::default();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for step in 0..20_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = match state % 7 {
                0 => (1 << 52) + (state >> 40) % 16,
                _ => (((state >> 30) % 3) << 32) | ((state >> 20) % 6),
            };
            if (state >> 8) % 3 == 0 {
                assert_eq!(ours.remove(key), model.remove(&key));
            } else {
                ours.insert(key, step);
                model.insert(key, step);
            }
            assert_eq!(ours.contains(key), model.contains_key(&key));
        }
        for key in model.keys().copied().collect::<Vec<_>>() {
            assert_eq!(ours.remove(key), model.remove(&key));
        }
    }
}
