//! The `Batches` part keeps its rules through every method: a batch is in its provider's
//! ready set exactly while `Ready` (under its current key), the unsent count is the
//! number of items in batches whose call is not running, a batch's sums are those of its
//! items, the job→batch map names each job's batch and no other, and a group's open batch is live, its own and still taking items.

use super::*;
use crate::engine::jobs::{Jobs, Member};
use crate::engine::priority::Priority;
use crate::key::ShortKey;
use crate::slab::Slab;
use crate::text::utf16_len;
use crate::time::Duration;

impl Batches {
    /// Panics if a rule of the part does not hold.
    fn check(&self, jobs: &Jobs) {
        let mut unsent = 0;
        for (key, batch) in self.slab.iter() {
            let entry = ready_key(key, batch);
            let listed = self
                .ready(batch.provider)
                .is_some_and(|set| set.iter().any(|e| *e == entry));
            assert_eq!(
                listed,
                batch.state == State::Ready,
                "{key:?} in {:?}",
                batch.state
            );
            if !is_running(batch.state) {
                unsent += batch.jobs.len() as u64;
            }
            let items = batch.jobs.iter().filter_map(|j| jobs.get(*j));
            let chars: u64 = items.clone().map(|j| utf16_len(j.text())).sum();
            let tokens: f64 = items.map(|j| f64::from(j.tokens())).sum();
            assert_eq!(
                (batch.chars, batch.tokens),
                (chars, tokens),
                "sums of {key:?}"
            );
        }
        let listed: usize = self.ready.iter().map(|set| set.iter().count()).sum();
        let ready = self.slab.iter().filter(|(_, b)| b.state == State::Ready);
        assert_eq!(
            listed,
            ready.count(),
            "a ready set lists a batch that is gone"
        );
        assert_eq!(self.unsent, unsent, "unsent count");
        for (slot, of) in self.job_entries() {
            let listed = self
                .slab
                .get(of)
                .is_some_and(|b| b.jobs.iter().any(|j| j.slot() == slot));
            assert!(listed, "job slot {slot}: its batch {of:?} lists it");
        }
        for (key, batch) in self.slab.iter() {
            for job in &batch.jobs {
                assert_eq!(self.batch_of(*job), key, "{job:?} is in {key:?}");
            }
        }
        for open in self.open.iter().flatten() {
            if let Some(batch) = self.slab.get(*open) {
                assert!(!batch.sealed && matches!(batch.state, State::Collecting | State::Ready));
            }
        }
    }
}

fn limits(max_items: usize) -> Limits {
    Limits {
        max_items,
        max_chars: 1000,
        delay: Duration::from_millis(10.0),
        max_tokens: f64::INFINITY,
        array: false,
    }
}

fn job(jobs: &mut Jobs, n: u64, text: &str, priority: f64) -> Member {
    jobs.add(ShortKey([n, n]), text, Priority::new(priority), 2.5)
        .1
}

#[test]
fn every_method_keeps_the_ready_sets_the_sums_and_the_unsent_count() {
    let mut jobs = Jobs::default();
    let mut batches = Batches::new(limits(2));
    let group = Slab::<Group>::default().next_id();
    let home = Home {
        group,
        provider: 1,
        llm: true,
    };
    let now = Instant::ZERO;
    // The last item comes with a higher priority than its batch's so far.
    let texts = [("un", 0.0), ("deux", 0.0), ("trois", 0.0), ("quatre", 9.0)];
    let members: Vec<Member> = (0..4)
        .map(|i| job(&mut jobs, i, texts[i as usize].0, texts[i as usize].1))
        .collect();
    for member in &members[..3] {
        batches.add(*member, home, now, now);
        batches.check(&jobs);
    }
    // Two items fill a batch (due at once), the third opens the next.
    let full = batches.batch_of(members[0].job());
    let open = batches.open(group).unwrap();
    assert_eq!(batches.get(full).map(Batch::state), Some(State::Ready));
    assert_eq!(batches.get(open).map(Batch::state), Some(State::Collecting));
    // Each batch opened collecting set its wake-up at the end of its window (the first
    // filled up since: its wake-up is stale, and dropped once at the top).
    let window = now + Duration::from_millis(10.0);
    assert_eq!(batches.wakeups.len(), 2);
    assert!(batches.has_due_wakeup(full) && batches.has_due_wakeup(open));
    assert_eq!(batches.next_wakeup(), Some(window));
    assert_eq!(batches.first_ready(1).map(|k| k.batch), Some(full));
    assert_eq!(batches.unsent(), 3);

    batches.raise_priority(open, Priority::new(5.0));
    assert!(!batches.wake(window - Duration::from_millis(1.0)));
    while batches.wake(window) {}
    assert_eq!(batches.next_wakeup(), None);
    batches.check(&jobs);
    assert_eq!(batches.first_ready(1).map(|k| k.batch), Some(open));

    assert_eq!(batches.get(full).map(Batch::attempts), Some(0));
    batches.start(full, 7);
    assert_eq!(batches.get(full).map(Batch::attempts), Some(1));
    batches.check(&jobs);
    assert_eq!(batches.unsent(), 1);
    let until = now + Duration::from_millis(50.0);
    batches.back_off(full, until);
    batches.check(&jobs);
    assert_eq!(batches.unsent(), 3);
    assert_eq!(batches.next_wakeup(), Some(until));
    assert!(batches.wake(until));
    assert_eq!(batches.get(full).map(Batch::state), Some(State::Ready));
    batches.check(&jobs);

    let gone = jobs
        .get(members[1].job())
        .map(|j| (j.text().to_owned(), j.tokens()));
    assert_eq!(gone, Some(("deux".to_owned(), 2.5)));
    assert_eq!(batches.leave(&members[1]), Some((full, false)));
    assert_eq!(batches.batch_of(members[1].job()), Id::NONE);
    batches.check(&jobs);
    assert_eq!(batches.unsent(), 2);

    // Joining a due batch moves it in its ready set.
    // A join opens no batch: no window to wake up for.
    batches.add(members[3], home, now, now);
    assert_eq!(batches.next_wakeup(), None);
    batches.check(&jobs);
    assert_eq!(batches.get(open).map(|b| b.jobs().len()), Some(2));
    let dealt = Batch::resent(
        batches.get(open).unwrap(),
        &[members[3].job()],
        &jobs,
        false,
    );
    batches.remove(open);
    batches.check(&jobs);
    let alone = batches.insert_due(dealt.unwrap());
    batches.check(&jobs);
    assert_eq!(batches.get(alone).map(Batch::sealed), Some(true));

    assert!(batches.remove(full).is_some());
    batches.check(&jobs);
    batches.clear();
    batches.check(&jobs);
    assert_eq!(batches.unsent(), 0);
}
