//! The due batches of one provider, in dispatch order.

use core::cmp::Ordering;
use std::collections::VecDeque;

/// A sorted set kept in a ring buffer: the best entry is at the front.
///
/// A `BTreeSet` would do, but its node code is large in the .wasm. Here the common cases
/// are cheap anyway: new batches of the usual priority arrive last (a push at the back)
/// and the best one leaves first (a pop at the front); anything else moves the shorter
/// side of the buffer.
#[derive(Debug)]
pub struct ReadySet<T> {
    sorted: VecDeque<T>,
}

impl<T> Default for ReadySet<T> {
    fn default() -> Self {
        ReadySet {
            sorted: VecDeque::new(),
        }
    }
}

impl<T: Ord> ReadySet<T> {
    /// Adds `entry`; an entry already there stays once.
    pub fn insert(&mut self, entry: T) {
        if let Err(at) = self.search(&entry) {
            self.sorted.insert(at, entry);
        }
    }

    /// Removes `entry` if it is there.
    pub fn remove(&mut self, entry: &T) {
        if let Ok(at) = self.search(entry) {
            self.sorted.remove(at);
        }
    }

    /// Where `entry` is (`Ok`) or would go (`Err`). By hand: `VecDeque::binary_search`
    /// searches its two halves separately, twice the code in the .wasm.
    fn search(&self, entry: &T) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.sorted.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.sorted[middle].cmp(entry) {
                Ordering::Less => low = middle + 1,
                Ordering::Greater => high = middle,
                Ordering::Equal => return Ok(middle),
            }
        }
        Err(low)
    }

    /// The entries, smallest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.sorted.iter()
    }

    /// The entry at `i`.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.sorted.get(i)
    }

    /// The smallest entry.
    pub fn first(&self) -> Option<&T> {
        self.sorted.front()
    }

    /// Whether there is no entry (the tests' model check; the engine asks `first`).
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::ReadySet;
    use std::collections::BTreeSet;

    #[test]
    fn behaves_as_a_btree_set() {
        let mut ours = ReadySet::default();
        let mut model = BTreeSet::new();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..5_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = (state >> 8) % 64;
            match state % 4 {
                0 | 1 => {
                    ours.insert(value);
                    model.insert(value);
                }
                2 => {
                    ours.remove(&value);
                    model.remove(&value);
                }
                _ => {
                    if let Some(first) = model.first().copied() {
                        ours.remove(&first);
                        model.remove(&first);
                    }
                }
            }
            assert_eq!(ours.first(), model.first());
            assert_eq!(ours.is_empty(), model.is_empty());
        }
    }
}
