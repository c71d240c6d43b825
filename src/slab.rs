//! A generational arena: stable small keys for jobs and batches, slots reused without
//! letting a stale key (from a lazily cleaned timer) reach the new occupant.

/// A key into a [`Slab`]: the slot index and the generation it was issued for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    index: u32,
    generation: u32,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// The arena.
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl Key {
    /// A key no slab ever issues (it would need 2^32 slots): "no such entry".
    pub const NONE: Key = Key {
        index: u32::MAX,
        generation: u32::MAX,
    };

    /// The key as one number below 2^52, so that it survives the trip through a JS
    /// number (tickets are): the index, and the generation's low 20 bits above it. A
    /// slot reused 2^20 times gives the same bits again: only for ids that are looked
    /// up while their entry is alive (a ticket settles when its job ends). Ids that may
    /// outlive their entry use [`Key::to_full_bits`].
    pub fn to_bits(self) -> u64 {
        (u64::from(self.generation & 0xF_FFFF) << 32) | u64::from(self.index)
    }

    /// The key as one number with the whole generation: unique for 2^32 reuses of a slot.
    pub fn to_full_bits(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// The key whose [`Key::to_full_bits`] is `bits`.
    pub fn from_full_bits(bits: u64) -> Key {
        Key {
            index: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

impl<T> Slab<T> {
    /// The key the next `insert` will return.
    pub fn next_key(&self) -> Key {
        match self.free.last() {
            Some(&index) => Key {
                index,
                generation: self.slots[index as usize].generation,
            },
            None => Key {
                index: u32::try_from(self.slots.len()).unwrap_or(u32::MAX),
                generation: 0,
            },
        }
    }

    /// The live key whose [`Key::to_bits`] is `bits`.
    pub fn key_from_bits(&self, bits: u64) -> Option<Key> {
        self.live_key(bits).filter(|key| key.to_bits() == bits)
    }

    /// The live key whose [`Key::to_full_bits`] is `bits`.
    pub fn key_from_full_bits(&self, bits: u64) -> Option<Key> {
        self.live_key(bits).filter(|key| key.to_full_bits() == bits)
    }

    fn live_key(&self, bits: u64) -> Option<Key> {
        let index = (bits & 0xFFFF_FFFF) as u32;
        let slot = self.slots.get(index as usize)?;
        slot.value.as_ref()?;
        Some(Key {
            index,
            generation: slot.generation,
        })
    }

    /// Stores `value` and returns its key.
    pub fn insert(&mut self, value: T) -> Key {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Key {
                index,
                generation: slot.generation,
            };
        }
        let index = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        Key {
            index,
            generation: 0,
        }
    }

    /// The value under `key`, if it is still there.
    pub fn get(&self, key: Key) -> Option<&T> {
        let slot = self.slots.get(key.index as usize)?;
        if slot.generation == key.generation {
            slot.value.as_ref()
        } else {
            None
        }
    }

    /// The value under `key`, mutably, if it is still there.
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation == key.generation {
            slot.value.as_mut()
        } else {
            None
        }
    }

    /// Removes and returns the value under `key`; the key is dead from now on.
    pub fn remove(&mut self, key: Key) -> Option<T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation != key.generation {
            return None;
        }
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(key.index);
        Some(value)
    }

    /// Removes every value; old keys stay dead.
    pub fn drain(&mut self) -> Vec<T> {
        let mut values = Vec::new();
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if let Some(value) = slot.value.take() {
                slot.generation = slot.generation.wrapping_add(1);
                self.free.push(index as u32);
                values.push(value);
            }
        }
        values
    }

    /// Live values, mutably.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().filter_map(|slot| slot.value.as_mut())
    }

    /// Live values with their keys.
    pub fn iter(&self) -> impl Iterator<Item = (Key, &T)> {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            slot.value.as_ref().map(|value| {
                (
                    Key {
                        index: index as u32,
                        generation: slot.generation,
                    },
                    value,
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_bits_while_live() {
        let mut slab = Slab::default();
        let predicted = slab.next_key();
        let a = slab.insert(1);
        assert_eq!(predicted, a);
        assert_eq!(slab.key_from_bits(a.to_bits()), Some(a));
        slab.remove(a);
        assert_eq!(slab.key_from_bits(a.to_bits()), None);
        let b = slab.insert(2);
        assert_eq!(slab.next_key().to_bits() >> 52, 0);
        assert_ne!(a.to_bits(), b.to_bits());
    }

    #[test]
    fn full_bits_tell_apart_keys_whose_short_bits_wrapped() {
        let mut slab = Slab::default();
        let old = slab.insert(0u8);
        let old_full = old.to_full_bits();
        slab.remove(old);
        let mut key = slab.insert(1);
        for _ in 1..(1u32 << 20) {
            slab.remove(key);
            key = slab.insert(1);
        }
        assert_eq!(key.to_bits(), old.to_bits(), "the short bits wrapped");
        assert_eq!(slab.key_from_full_bits(old_full), None);
        assert_eq!(slab.key_from_full_bits(key.to_full_bits()), Some(key));
    }

    #[test]
    fn stale_keys_miss_reused_slots() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        assert_eq!(slab.remove(a), Some("a"));
        let b = slab.insert("b");
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get(b), Some(&"b"));
    }
}
