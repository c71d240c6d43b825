//! A generational arena: stable small ids for jobs, batches and groups, slots reused
//! without letting a stale id (from a lazily cleaned timer) reach the new occupant.

use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::marker::PhantomData;

/// The id of a `T` in a [`Slab<T>`]: the slot index and the generation it was issued
/// for. Typed, so that a batch's id can never be used to look up a job.
pub struct Id<T> {
    index: u32,
    generation: u32,
    of: PhantomData<fn() -> T>,
}

// By hand: derives would require `T` itself to be `Copy`, `Eq` ... .
impl<T> Clone for Id<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Id<T> {}

impl<T> PartialEq for Id<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.index, self.generation) == (other.index, other.generation)
    }
}

impl<T> Eq for Id<T> {}

impl<T> PartialOrd for Id<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Id<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.index, self.generation).cmp(&(other.index, other.generation))
    }
}

impl<T> Hash for Id<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.index, self.generation).hash(state);
    }
}

impl<T> fmt::Debug for Id<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({}v{})", self.index, self.generation)
    }
}

const fn id<T>(index: u32, generation: u32) -> Id<T> {
    Id {
        index,
        generation,
        of: PhantomData,
    }
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

impl<T> Id<T> {
    /// An id no slab ever issues (it would need 2^32 slots): "no such entry".
    pub const NONE: Id<T> = id(u32::MAX, u32::MAX);

    /// Its slot: an index for tables kept beside the slab (the slot is reused, so such
    /// a table confirms the whole id of what it finds).
    pub fn slot(self) -> usize {
        self.index as usize
    }

    /// The key as one number below 2^52, so that it survives the trip through a JS
    /// number (tickets are): the index, and the generation's low 20 bits above it. A
    /// slot reused 2^20 times gives the same bits again: only for ids that are looked
    /// up while their entry is alive (a ticket settles when its job ends). Ids that may
    /// outlive their entry use [`Id::to_full_bits`].
    pub fn to_bits(self) -> u64 {
        (u64::from(self.generation & 0xF_FFFF) << 32) | u64::from(self.index)
    }

    /// The key as one number with the whole generation: unique for 2^32 reuses of a slot.
    pub fn to_full_bits(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// The id whose [`Id::to_full_bits`] is `bits`.
    pub fn from_full_bits(bits: u64) -> Id<T> {
        id(bits as u32, (bits >> 32) as u32)
    }
}

impl<T> Slab<T> {
    /// The key the next `insert` will return.
    pub fn next_id(&self) -> Id<T> {
        match self.free.last() {
            Some(&index) => id(index, self.slots[index as usize].generation),
            None => id(u32::try_from(self.slots.len()).unwrap_or(u32::MAX), 0),
        }
    }

    /// The live key whose [`Id::to_bits`] is `bits`.
    pub fn id_from_bits(&self, bits: u64) -> Option<Id<T>> {
        self.live_id(bits).filter(|key| key.to_bits() == bits)
    }

    /// The live key whose [`Id::to_full_bits`] is `bits`.
    pub fn id_from_full_bits(&self, bits: u64) -> Option<Id<T>> {
        self.live_id(bits).filter(|key| key.to_full_bits() == bits)
    }

    fn live_id(&self, bits: u64) -> Option<Id<T>> {
        let index = (bits & 0xFFFF_FFFF) as u32;
        let slot = self.slots.get(index as usize)?;
        slot.value.as_ref()?;
        Some(id(index, slot.generation))
    }

    /// Stores `value` and returns its key.
    pub fn insert(&mut self, value: T) -> Id<T> {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return id(index, slot.generation);
        }
        let index = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        id(index, 0)
    }

    /// The value under `key`, if it is still there.
    pub fn get(&self, key: Id<T>) -> Option<&T> {
        let slot = self.slots.get(key.index as usize)?;
        if slot.generation == key.generation {
            slot.value.as_ref()
        } else {
            None
        }
    }

    /// The value under `key`, mutably, if it is still there.
    pub fn get_mut(&mut self, key: Id<T>) -> Option<&mut T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation == key.generation {
            slot.value.as_mut()
        } else {
            None
        }
    }

    /// Removes and returns the value under `key`; the key is dead from now on.
    pub fn remove(&mut self, key: Id<T>) -> Option<T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation != key.generation {
            return None;
        }
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(key.index);
        Some(value)
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
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
    pub fn iter(&self) -> impl Iterator<Item = (Id<T>, &T)> {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            slot.value
                .as_ref()
                .map(|value| (id(index as u32, slot.generation), value))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_bits_while_live() {
        let mut slab = Slab::default();
        let predicted = slab.next_id();
        let a = slab.insert(1);
        assert_eq!(predicted, a);
        assert_eq!(slab.id_from_bits(a.to_bits()), Some(a));
        slab.remove(a);
        assert_eq!(slab.id_from_bits(a.to_bits()), None);
        let b = slab.insert(2);
        assert_eq!(slab.next_id().to_bits() >> 52, 0);
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
        assert_eq!(slab.id_from_full_bits(old_full), None);
        assert_eq!(slab.id_from_full_bits(key.to_full_bits()), Some(key));
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
