//! `Engine::check`: every rule that spans two parts, asserted at once (tests and fuzzing
//! only: the `check` feature). Each part keeps its own fields' rules by itself; what it
//! cannot see is how its state agrees with another part's:
//! - every live job is listed by its batch (or waits for its store lookup), and the
//!   job→batch map names no batch for a job slot that batch does not list;
//! - a group's job count equals its live jobs (in batches and in lookups);
//! - a batch's character and token sums equal its jobs' sizes;
//! - every collecting batch has its due timer;
//! - every running call's batch (or `pacer.run`) is running under that call, and every
//!   running run's call serves it; a call goes to its batch's provider, or for a pool's
//!   batch to one of the pool's members;
//! - the item counters add up (`items = succeeded + failed + aborted + disposed +
//!   pending`) and `queued` is the items of batches not running;
//! - every running call was charged to its provider's own limits (`providers`) when
//!   they were there before it started, and each provider's count of running calls is
//!   its calls;
//! - each provider's (with items) learned batch limit is within 1 and its `maxItemsPerBatch`, no group of
//!   moved items is served by its items' own provider, and no more items were moved than
//!   accepted;
//! - each provider's share of a shared quota is within its least share and 1, and its
//!   adaptive rate is no lower than the scaled floor (a tenth of a call a minute) or the
//!   options' rate allow (`Pacer::check_shared_quota`).

use std::collections::HashMap;

use super::batches::State;
use super::runs::RunState;
use super::{Engine, Group};
use crate::slab::Id;
use crate::text::utf16_len;

impl<C: Clone> Engine<C> {
    /// Panics, naming the rule, if a rule that spans the engine's parts does not hold.
    pub(super) fn check_rules(&self) {
        if self.disposed {
            return;
        }
        self.jobs.check();
        let mut group_jobs: HashMap<Id<Group>, u64> = HashMap::new();
        for (key, _) in self.jobs.iter() {
            let pending = self.store.as_ref().and_then(|s| s.pending(key));
            let group = match pending {
                Some(lookup) => lookup.group,
                None => {
                    let of = self.batches.batch_of(key);
                    let batch = self.batches.get(of);
                    let listed = batch.is_some_and(|b| b.jobs().contains(&key));
                    assert!(listed, "job {key:?}: its batch {of:?} lists it");
                    batch.map_or(Id::NONE, |b| b.compat())
                }
            };
            *group_jobs.entry(group).or_default() += 1;
        }
        for (slot, of) in self.batches.job_entries() {
            let listed = self.batches.get(of).is_some_and(|b| {
                b.jobs()
                    .iter()
                    .any(|j| j.slot() == slot && self.jobs.get(*j).is_some())
            });
            assert!(
                listed,
                "job slot {slot}: its batch {of:?} lists its live job"
            );
        }
        for (group, count, _) in self.groups.counts() {
            let live = group_jobs.remove(&group).unwrap_or(0);
            assert_eq!(count, live, "group {group:?}: its count is its live jobs");
        }
        assert!(
            group_jobs.is_empty(),
            "every job's group is live: {group_jobs:?}"
        );
        let mut unsent = 0;
        for (key, batch) in self.batches.iter() {
            let jobs = batch.jobs().iter().filter_map(|j| self.jobs.get(*j));
            let chars: u64 = jobs.clone().map(|j| utf16_len(j.text())).sum();
            let tokens: f64 = jobs.map(|j| f64::from(j.tokens())).sum();
            assert_eq!(batch.chars(), chars, "batch {key:?}: its character sum");
            assert!(
                (batch.tokens() - tokens).abs() <= 1e-3 * tokens.max(1.0),
                "batch {key:?}: its token sum {} is its jobs' {tokens}",
                batch.tokens()
            );
            match batch.state() {
                State::Collecting => assert!(
                    self.batches.has_due_wakeup(key),
                    "collecting batch {key:?} has its due timer"
                ),
                State::Running(call) => assert!(
                    self.calls.get(call).is_some_and(|run| run.batch() == key),
                    "running batch {key:?}: call {call} runs it"
                ),
                State::Ready | State::Backoff(_) => {}
            }
            if !matches!(batch.state(), State::Running(_)) {
                unsent += batch.jobs().len() as u64;
            }
        }
        let mut per_provider: HashMap<u32, u64> = HashMap::new();
        for id in self.calls.ids() {
            let Some(run) = self.calls.get(id) else {
                continue;
            };
            *per_provider.entry(run.provider()).or_default() += 1;
            let charge = run.charge();
            if let Some(own) = self.pacer.own(run.provider()) {
                assert!(
                    charge.own || own.since() >= charge.at,
                    "call {id}: every bucket, budget and cap that covers it was charged for it"
                );
            }
            if let Some(served) = run.serves_run() {
                let state = self.runs.get(served).map(|r| r.state());
                assert_eq!(
                    state,
                    Some(RunState::Running(id)),
                    "call {id}: its run runs under it"
                );
                continue;
            }
            let state = self.batches.get(run.batch()).map(|b| b.state());
            assert_eq!(
                state,
                Some(State::Running(id)),
                "call {id}: its batch runs under it"
            );
            let own = self.batches.get(run.batch()).map(|b| b.provider());
            let to = self.pacer.provider_id(run.provider());
            let pool = own.and_then(|p| self.pool_members(p));
            assert!(
                own == Some(run.provider()) || pool.is_some_and(|m| m.iter().any(|x| **x == *to)),
                "call {id}: it goes to its batch's provider, or to a member of its batch's pool"
            );
        }
        for (provider, count) in per_provider {
            assert_eq!(
                self.calls.running_for(provider),
                count,
                "provider {provider}: its count of running calls"
            );
        }
        for (key, run) in self.runs.iter() {
            if let RunState::Running(call) = run.state() {
                assert!(
                    self.calls.get(call).and_then(|c| c.serves_run()) == Some(key),
                    "running run {key:?}: call {call} serves it"
                );
            }
        }
        let s = self.stats();
        assert_eq!(
            s.items,
            s.succeeded + s.failed + s.aborted + s.disposed + s.pending,
            "the item counters add up: {s:?}"
        );
        assert_eq!(
            s.queued, unsent,
            "queued is the items of batches not running"
        );
        assert!(s.fallback_items <= s.items, "moved items were accepted");
        // The providers with items: the limit is read when their calls are dealt.
        for provider in self.groups.providers() {
            let max = self.batches.limits_for(provider).max_items;
            let max = u32::try_from(max).unwrap_or(u32::MAX);
            let limit = self.pacer.call_limit(provider, max, &self.options);
            assert!(
                (1..=max).contains(&limit),
                "provider {provider}: its batch limit {limit} is within 1 and {max}"
            );
        }
        for (group, _, moved) in self.groups.counts() {
            let Some(g) = self.groups.get(group) else {
                continue;
            };
            if moved {
                let own = g.info().fallback_from.as_deref();
                assert!(
                    own.is_some_and(|own| own != g.info().provider_id),
                    "moved group {group:?} is served by another provider than its items' own"
                );
            } else {
                assert!(g.info().fallback_from.is_none(), "own group {group:?}");
            }
        }
        self.pacer.check_shared_quota(&self.options);
    }
}
