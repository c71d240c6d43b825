//! The providers a pacer remembers, by index: found by id through a keyed hash, their
//! slots reused once forgotten.
//!
//! It keeps "an index names one provider from the moment it is given out until the
//! provider is forgotten, and a provider is forgotten only when the caller says nothing
//! uses its index and its state holds nothing": extensions route each site, model or key
//! to a `providerId` of its own, so a long-lived worker meets ever new ids, and a
//! provider whose items have all settled must not stay for good (its state, its ready set,
//! and a share of every scan over providers).
//!
//! A provider is forgotten at a sweep, once it has not been used (given out, a call
//! started or answered) for [`IDLE`], or at once when more than [`REMEMBERED`]
//! providers are remembered: the idle ones go first, whatever their age. Sweeps run at
//! most once a minute of the pacer's clock, or when the count of providers has doubled
//! since the last one, so their cost is spread over the providers met.

use std::rc::Rc;

use crate::hash::{look_up, IdMap};
use crate::key::Keyer;
use crate::time::{Duration, Instant};

/// How long a provider that holds nothing is remembered after its last use.
pub(in crate::engine) const IDLE: Duration = Duration::from_micros(10 * 60 * 1_000_000);
/// How many providers are remembered before the idle ones are forgotten, however
/// recently used.
pub(in crate::engine) const REMEMBERED: usize = 1024;
/// The most time between two sweeps.
const SWEEP_EVERY: Duration = Duration::from_micros(60 * 1_000_000);

/// A remembered provider: its id, its state, and when it was last used.
#[derive(Debug)]
pub(in crate::engine) struct Entry<P> {
    pub(in crate::engine) id: Rc<str>,
    pub(in crate::engine) state: P,
    used: Instant,
}

/// The providers by index.
#[derive(Debug)]
pub(in crate::engine) struct ProviderTable<P> {
    slots: Vec<Option<Entry<P>>>,
    /// Slots of forgotten providers, to reuse.
    free: Vec<u32>,
    /// Index by a keyed hash of the id (the entry's own id confirms a match).
    by_id: IdMap<u64>,
    keyer: Keyer,
    /// Providers not in `by_id` (another id held their word, a 2^-64 chance): found by
    /// a scan while there are any.
    unindexed: usize,
    /// Providers remembered.
    remembered: usize,
    /// When the next sweep is due by time, and by count.
    next_sweep: Instant,
    sweep_at: usize,
}

impl<P> ProviderTable<P> {
    /// No provider yet; ids are hashed under a secret derived from `seed`.
    pub(in crate::engine) fn new(seed: u64, now: Instant) -> Self {
        ProviderTable {
            slots: Vec::new(),
            free: Vec::new(),
            by_id: IdMap::default(),
            keyer: Keyer::new(seed),
            unindexed: 0,
            remembered: 0,
            next_sweep: now + SWEEP_EVERY,
            sweep_at: REMEMBERED,
        }
    }

    fn word(&self, id: &str) -> u64 {
        self.keyer.fields_word(id.as_bytes())
    }

    /// The index of provider `id`, if remembered.
    pub(in crate::engine) fn find(&self, id: &str) -> Option<u32> {
        let index = look_up(&self.by_id, self.word(id)).map(|i| i as u32);
        if let Some(index) = index.filter(|i| self.get(*i).is_some_and(|e| &*e.id == id)) {
            return Some(index);
        }
        if self.unindexed == 0 {
            return None;
        }
        self.iter().find(|(_, e)| &*e.id == id).map(|(i, _)| i)
    }

    /// Remembers provider `id` with `state`, used at `now`; its index.
    pub(in crate::engine) fn insert(&mut self, id: Rc<str>, state: P, now: Instant) -> u32 {
        let word = self.word(&id);
        let entry = Entry {
            id,
            state,
            used: now,
        };
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = Some(entry);
                index
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        if look_up(&self.by_id, word).is_none() {
            self.by_id.insert(word, u64::from(index));
        } else {
            self.unindexed += 1;
        }
        self.remembered += 1;
        index
    }

    /// The provider at `index`.
    pub(in crate::engine) fn get(&self, index: u32) -> Option<&Entry<P>> {
        self.slots.get(index as usize)?.as_ref()
    }

    /// The provider at `index` was used at `now`.
    pub(in crate::engine) fn touch(&mut self, index: u32, now: Instant) {
        if let Some(Some(entry)) = self.slots.get_mut(index as usize) {
            entry.used = entry.used.max(now);
        }
    }

    /// Every remembered provider with its index.
    pub(in crate::engine) fn iter(&self) -> impl Iterator<Item = (u32, &Entry<P>)> {
        let slots = self.slots.iter().enumerate();
        slots.filter_map(|(i, e)| Some((i as u32, e.as_ref()?)))
    }

    /// One more than the highest index given out.
    pub(in crate::engine) fn bound(&self) -> usize {
        self.slots.len()
    }

    /// How many providers are remembered.
    pub(in crate::engine) fn remembered(&self) -> usize {
        self.remembered
    }

    /// Whether a sweep is due at `now`.
    pub(in crate::engine) fn sweep_due(&self, now: Instant) -> bool {
        now >= self.next_sweep || self.remembered >= self.sweep_at
    }

    /// Forgets every provider that `in_use` (by index) does not mark, whose state
    /// `holds_nothing`, and that is either unused for [`IDLE`] or beyond the
    /// [`REMEMBERED`] bound; returns their indexes and states (the caller drops what it
    /// keeps of them).
    pub(in crate::engine) fn sweep(
        &mut self,
        now: Instant,
        in_use: &[bool],
        holds_nothing: impl Fn(&Entry<P>) -> bool,
    ) -> Vec<(u32, Entry<P>)> {
        let crowded = self.remembered > REMEMBERED;
        let mut forgotten = Vec::new();
        for index in 0..self.slots.len() {
            let Some(entry) = &self.slots[index] else {
                continue;
            };
            let used = in_use.get(index).copied().unwrap_or(false);
            let idle = crowded || now.since(entry.used) >= IDLE;
            if used || !idle || !holds_nothing(entry) {
                continue;
            }
            let Some(entry) = self.slots[index].take() else {
                continue;
            };
            let word = self.word(&entry.id);
            if look_up(&self.by_id, word) == Some(index as u64) {
                self.by_id.remove(&word);
            } else {
                self.unindexed -= 1;
            }
            self.free.push(index as u32);
            self.remembered -= 1;
            forgotten.push((index as u32, entry));
        }
        // Trailing free slots go: the tables kept per index shrink with them.
        while matches!(self.slots.last(), Some(None)) {
            self.slots.pop();
        }
        let bound = self.slots.len() as u32;
        self.free.retain(|i| *i < bound);
        if self.remembered == 0 {
            self.slots = Vec::new();
            self.free = Vec::new();
            self.by_id = IdMap::default();
        }
        self.next_sweep = now + SWEEP_EVERY;
        self.sweep_at = (2 * self.remembered).max(REMEMBERED);
        forgotten
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> Instant {
        Instant::from_millis(secs * 1000.0)
    }

    #[test]
    fn ids_are_found_and_slots_reused_once_forgotten() {
        let mut table: ProviderTable<u32> = ProviderTable::new(7, at(0.0));
        let a = table.insert("a".into(), 1, at(0.0));
        let b = table.insert("b".into(), 2, at(0.0));
        assert_eq!(
            (table.find("a"), table.find("b"), table.find("c")),
            (Some(a), Some(b), None)
        );
        // Not idle long enough, then in use, then holding something: kept.
        assert!(table.sweep(at(60.0), &[], |_| true).is_empty());
        let in_use = [true, false];
        let forgotten = table.sweep(at(700.0), &in_use, |e| e.state != 2);
        assert!(forgotten.is_empty());
        let forgotten = table.sweep(at(700.0), &in_use, |_| true);
        assert_eq!(forgotten.len(), 1);
        assert_eq!((forgotten[0].0, &*forgotten[0].1.id), (b, "b"));
        assert_eq!(table.find("b"), None);
        assert_eq!(table.remembered(), 1);
        let c = table.insert("c".into(), 3, at(700.0));
        assert_eq!(table.find("c"), Some(c));
        assert_eq!(table.get(a).map(|e| e.state), Some(1));
    }

    #[test]
    fn past_the_bound_idle_providers_go_whatever_their_age() {
        let mut table: ProviderTable<()> = ProviderTable::new(7, at(0.0));
        for i in 0..=REMEMBERED {
            table.insert(i.to_string().into(), (), at(0.0));
        }
        assert!(table.sweep_due(at(0.0)));
        let forgotten = table.sweep(at(0.0), &[], |_| true);
        assert_eq!(forgotten.len(), REMEMBERED + 1);
        assert_eq!((table.remembered(), table.bound()), (0, 0));
        assert!(!table.sweep_due(at(1.0)));
    }
}
