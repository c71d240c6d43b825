//! Least-recently-used cache of successful translations, keyed by item digest.

use crate::hash::{look_up, IdMap};
use crate::key::ShortKey;

const NIL: u32 = u32::MAX;

#[derive(Debug)]
struct Node {
    key: ShortKey,
    value: Box<str>,
    prev: u32,
    next: u32,
}

/// A fixed-capacity LRU; capacity 0 stores nothing.
///
/// Entries are found by the first word of their key (the core's one hash map type), the
/// node's whole key confirms a match. Two keys that share a first word (a 2^-64 chance
/// for a pair) cannot both be cached: the later one replaces the other.
#[derive(Debug)]
pub struct Lru {
    capacity: usize,
    /// Node index by the first word of its key.
    index: IdMap<u64>,
    nodes: Vec<Node>,
    /// Most recently used node.
    head: u32,
    /// Least recently used node (evicted first).
    tail: u32,
}

impl Lru {
    /// An empty cache holding at most `capacity` entries.
    pub fn new(capacity: usize) -> Lru {
        Lru {
            capacity,
            index: IdMap::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The cached value for `key`, marking it most recently used.
    pub fn get(&mut self, key: ShortKey) -> Option<&str> {
        let at = self.find(key.0[0])?;
        if self.nodes[at as usize].key != key {
            return None;
        }
        self.detach(at);
        self.push_front(at);
        Some(&self.nodes[at as usize].value)
    }

    /// Stores `value` under `key`, evicting the least recently used entry when full.
    pub fn put(&mut self, key: ShortKey, value: &str) {
        if self.capacity == 0 {
            return;
        }
        if let Some(at) = self.find(key.0[0]) {
            let node = &mut self.nodes[at as usize];
            node.key = key;
            node.value = value.into();
            self.detach(at);
            self.push_front(at);
            return;
        }
        if self.nodes.len() >= self.capacity {
            self.evict_tail();
        }
        let at = self.nodes.len() as u32;
        self.nodes.push(Node {
            key,
            value: value.into(),
            prev: NIL,
            next: NIL,
        });
        self.index.insert(key.0[0], u64::from(at));
        self.push_front(at);
    }

    /// Changes the capacity, evicting the least recently used entries beyond it.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        while self.nodes.len() > capacity {
            self.evict_tail();
        }
    }

    fn find(&self, first_word: u64) -> Option<u32> {
        look_up(&self.index, first_word).map(|at| at as u32)
    }

    fn detach(&mut self, at: u32) {
        let (prev, next) = {
            let node = &self.nodes[at as usize];
            (node.prev, node.next)
        };
        self.link(prev, next);
    }

    /// Makes `next` follow `prev` (either may be `NIL`: the list's ends).
    fn link(&mut self, prev: u32, next: u32) {
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_front(&mut self, at: u32) {
        let old_head = self.head;
        {
            let node = &mut self.nodes[at as usize];
            node.prev = NIL;
            node.next = old_head;
        }
        if old_head != NIL {
            self.nodes[old_head as usize].prev = at;
        }
        self.head = at;
        if self.tail == NIL {
            self.tail = at;
        }
    }

    /// Removes the tail, then moves the last node into its slot so `nodes` stays dense.
    fn evict_tail(&mut self) {
        let victim = self.tail;
        if victim == NIL {
            return;
        }
        self.detach(victim);
        let removed = self.nodes.swap_remove(victim as usize);
        self.index.remove(&removed.key.0[0]);
        let moved_from = self.nodes.len() as u32;
        if victim != moved_from {
            let (key, prev, next) = {
                let node = &self.nodes[victim as usize];
                (node.key, node.prev, node.next)
            };
            self.index.insert(key.0[0], u64::from(victim));
            // Its neighbours point at its new slot.
            self.link(prev, victim);
            self.link(victim, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> ShortKey {
        ShortKey([n, !n])
    }

    #[test]
    fn evicts_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.put(k(1), "one");
        lru.put(k(2), "two");
        assert_eq!(lru.get(k(1)), Some("one"));
        lru.put(k(3), "three");
        assert_eq!(lru.get(k(2)), None);
        assert_eq!(lru.get(k(1)), Some("one"));
        assert_eq!(lru.get(k(3)), Some("three"));
        lru.set_capacity(1);
        assert_eq!(lru.len(), 1);
        assert_eq!(lru.get(k(3)), Some("three"));
    }

    #[test]
    fn a_key_sharing_the_first_word_replaces_the_entry() {
        let mut lru = Lru::new(4);
        lru.put(ShortKey([5, 1]), "first");
        lru.put(k(6), "other");
        assert_eq!(lru.get(ShortKey([5, 2])), None);
        lru.put(ShortKey([5, 2]), "second");
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get(ShortKey([5, 1])), None);
        assert_eq!(lru.get(ShortKey([5, 2])), Some("second"));
        assert_eq!(lru.get(k(6)), Some("other"));
    }

    #[test]
    fn zero_capacity_stores_nothing() {
        let mut lru = Lru::new(0);
        lru.put(k(1), "one");
        assert!(lru.is_empty());
    }

    #[test]
    fn stays_consistent_under_churn() {
        let mut lru = Lru::new(7);
        let mut reference: Vec<u64> = Vec::new(); // most recent last
        for i in 0..2000u64 {
            let key = (i * 7919) % 23;
            if i % 3 == 0 {
                let hit = lru.get(k(key)).is_some();
                assert_eq!(hit, reference.contains(&key));
                if hit {
                    reference.retain(|k| *k != key);
                    reference.push(key);
                }
            } else {
                lru.put(k(key), "v");
                reference.retain(|k| *k != key);
                reference.push(key);
                if reference.len() > 7 {
                    reference.remove(0);
                }
            }
            assert_eq!(lru.len(), reference.len());
        }
    }
}
