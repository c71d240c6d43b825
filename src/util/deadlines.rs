//! Deadlines, soonest first, for a part whose deadlines mostly come in the order they
//! run out.

use core::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use crate::time::Instant;

/// One deadline: when, its place among deadlines of the same instant, and whose.
#[derive(Debug, Clone, Copy)]
struct Entry<K> {
    at: Instant,
    order: u64,
    key: K,
}

impl<K> Entry<K> {
    fn rank(&self) -> (Instant, u64) {
        (self.at, self.order)
    }
}

// By (at, order) alone: the key only says whose deadline it is.
impl<K> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl<K> Eq for Entry<K> {}
impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Entry<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
    }
}

/// Deadlines of `K`s, soonest first, ties by their `order` numbers (lowest first), as a
/// heap of `(at, order, key)` would give them. Most deadlines are "now plus the one
/// timeout", set in the order they run out: those queue at the back in O(1) and leave
/// from the front in O(1), with no heap of 100,000 entries to sift through. Only one set
/// before the last queued (a shorter timeout, a clock set back) goes to a heap.
#[derive(Debug)]
pub struct Deadlines<K> {
    in_order: VecDeque<Entry<K>>,
    out_of_order: BinaryHeap<Reverse<Entry<K>>>,
}

impl<K> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            in_order: VecDeque::new(),
            out_of_order: BinaryHeap::new(),
        }
    }
}

impl<K: Copy> Deadlines<K> {
    /// Adds `key`'s deadline `at`, placed by `order` among those of the same instant.
    pub fn push(&mut self, at: Instant, order: u64, key: K) {
        let entry = Entry { at, order, key };
        match self.in_order.back() {
            Some(last) if entry < *last => self.out_of_order.push(Reverse(entry)),
            _ => self.in_order.push_back(entry),
        }
    }

    /// Whether the soonest is the queue's front (else the heap's top).
    fn soonest_in_order(&self) -> Option<bool> {
        match (self.in_order.front(), self.out_of_order.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(front), Some(Reverse(top))) => Some(front <= top),
        }
    }

    /// The soonest deadline, its order and whose it is.
    pub fn peek(&self) -> Option<(Instant, u64, K)> {
        let entry = if self.soonest_in_order()? {
            self.in_order.front()?
        } else {
            &self.out_of_order.peek()?.0
        };
        Some((entry.at, entry.order, entry.key))
    }

    /// Takes the soonest deadline out.
    pub fn pop(&mut self) -> Option<(Instant, u64, K)> {
        let entry = if self.soonest_in_order()? {
            self.in_order.pop_front()?
        } else {
            self.out_of_order.pop()?.0
        };
        Some((entry.at, entry.order, entry.key))
    }
}

#[cfg(test)]
mod tests {
    use super::Deadlines;
    use crate::time::{Duration, Instant};

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms as f64)
    }

    /// Any order of pushes comes out as a sorted list of `(at, order)` would.
    #[test]
    fn leave_soonest_first_ties_by_order_whatever_the_order_they_came_in() {
        let pushes = [
            (5, 1),
            (5, 2),
            (9, 3),
            (3, 4),
            (9, 0),
            (7, 5),
            (5, 6),
            (1, 7),
        ];
        let mut deadlines = Deadlines::default();
        for (i, (ms, order)) in pushes.iter().enumerate() {
            deadlines.push(at(*ms), *order, i);
        }
        let mut expected: Vec<_> = pushes
            .iter()
            .enumerate()
            .map(|(i, (ms, order))| (at(*ms), *order, i))
            .collect();
        expected.sort_by_key(|(at, order, _)| (*at, *order));
        assert_eq!(deadlines.peek(), Some(expected[0]));
        let mut taken = Vec::new();
        while let Some(entry) = deadlines.pop() {
            taken.push(entry);
        }
        assert_eq!(taken, expected);
        assert_eq!(deadlines.peek(), None);
    }
}
