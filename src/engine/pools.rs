//! Pools (`pools`): several providers (keys, deployments) used as one. A pool's items
//! are grouped, batched, deduplicated, cached and moved to a fallback under the pool's
//! id, as any provider's; a pool has no pacing state of its own. Its call goes to a
//! member chosen when the call starts (late binding, as rule 3 seals a batch): the
//! member that can start it soonest through the same gate as every call, and among those
//! that can start it at once, the one idle longest since its last call. Each member is
//! an ordinary provider (its pause, adaptive rate, reported limits, learned batch size
//! and blocks are its own, shared with the items submitted to it directly).
//!
//! A member that cannot serve a call's items (a daily block, a billing or settings
//! error, a pause longer than `fallbackAfterMs`, retries spent) hands them back to the
//! pool, for another member; only when no member can serve them does the pool's own
//! fallback take them. `Members` remembers what the pacing state does not: when each
//! member last started a call, members put aside after a billing or settings error (for
//! the items that had arrived by then: later ones try them again, as "Quotas" says of a
//! provider), and the members at which a batch spent its retries.

use std::rc::Rc;

use super::batches::Batch;
use super::calls::Running;
use super::Engine;
use crate::call::CompatInfo;
use crate::settle::{ErrorCode, PacerFailure};
use crate::slab::Id;
use crate::stats::RetryReason;
use crate::time::{Duration, Instant};

/// What the pool's choice of a member needs beyond the members' pacing state.
#[derive(Debug, Default)]
pub(super) struct Members {
    /// The number of each member's (by id) last call among the pools' calls: the
    /// lowest has been idle longest (instants tie within a burst).
    last_call: Vec<(Rc<str>, u64)>,
    /// The pools' calls so far.
    calls: u64,
    /// Members put aside after a billing or settings error: items that arrived before
    /// it (arrival numbers below the first) do not go to them; the error they end with
    /// when no member is left.
    aside: Vec<(Rc<str>, u64, String, Option<u16>)>,
    /// A batch and a member at which it spent its retries.
    spent: Vec<(Id<Batch>, Rc<str>)>,
}

impl Members {
    fn last_call(&self, member: &str) -> Option<u64> {
        (self.last_call.iter())
            .find(|(m, _)| &**m == member)
            .map(|(_, at)| *at)
    }

    fn note_call(&mut self, member: Rc<str>) {
        self.calls += 1;
        match self.last_call.iter_mut().find(|(m, _)| *m == member) {
            Some(entry) => entry.1 = self.calls,
            None => self.last_call.push((member, self.calls)),
        }
    }

    /// The error of `member` if it is put aside for a batch whose first item arrived as
    /// number `seq`.
    fn aside_for(&self, member: &str, seq: u64) -> Option<(&str, Option<u16>)> {
        (self.aside.iter())
            .find(|(m, since, _, _)| &**m == member && seq < *since)
            .map(|(_, _, message, status)| (message.as_str(), *status))
    }

    fn spent(&self, batch: Id<Batch>, member: &str) -> bool {
        (self.spent.iter()).any(|(b, m)| *b == batch && &**m == member)
    }
}

/// Where a due batch's call goes.
pub(super) enum Serving {
    /// To this provider (the batch's own, or the member of its pool chosen now).
    Provider(u32),
    /// Nowhere: its items moved to the pool's fallback, or ended.
    Gone,
}

impl<C: Clone> Engine<C> {
    /// The members of `provider` when it is a pool.
    pub(super) fn pool_members(&self, provider: u32) -> Option<&[String]> {
        if self.options.pools.is_empty() {
            return None;
        }
        self.options
            .pools
            .members(&self.pacer.provider_id(provider))
    }

    /// Whether `member` (its index if it has one) may take `batch`: not blocked for the
    /// day, not put aside for items as old as the batch's, and not spent for it.
    #[inline(never)]
    fn may_take(&self, member: &str, index: Option<u32>, batch: Id<Batch>) -> bool {
        let seq = self.batches.get(batch).map_or(u64::MAX, Batch::seq);
        // Any pause may still end: only a daily block keeps a member from the batch.
        let forever = Duration::from_micros(u64::MAX);
        index.is_none_or(|i| self.pacer.can_serve(i, self.now, forever))
            && self.members.aside_for(member, seq).is_none()
            && !self.members.spent(batch, member)
    }

    /// The member of pool `pool` that takes `batch` (its place in the pool's list) and
    /// when it can start it: the soonest, and among those that can start it at once the
    /// one idle longest since its last call (never called first), then the first listed.
    /// `None` when no member may take it.
    #[inline(never)]
    fn member_for(&self, pool: u32, batch: Id<Batch>) -> Option<(usize, Instant)> {
        let members = self.pool_members(pool)?;
        let mut best: Option<((Instant, Option<u64>), usize)> = None;
        for (place, member) in members.iter().enumerate() {
            let index = self.pacer.find_provider(member);
            if !self.may_take(member, index, batch) {
                continue;
            }
            let at = match index {
                // A member at its own `maxInFlight` starts nothing until a call of its
                // own ends (which pumps again): never ready by time.
                Some(index) if self.provider_at_cap(index) => {
                    self.now + Duration::from_micros(u64::MAX)
                }
                Some(index) => self.ready_at(index, batch),
                // A member never called yet has no state to hold it back: the pool's
                // cost, against the pacer's own budgets.
                None => {
                    let (_, cost, characters) = self.call_cost(pool, batch);
                    self.pacer.ready_at(u32::MAX, (cost, characters), self.now)
                }
            };
            let key = (at.max(self.now), self.members.last_call(member));
            if best.is_none_or(|(b, _)| key < b) {
                best = Some((key, place));
            }
        }
        best.map(|((at, _), place)| (place, at))
    }

    /// Whether some member of pool `pool` can serve (no daily block, no pause longer
    /// than `fallbackAfterMs`), `batch`'s items if given; `None` when `pool` is no pool.
    #[inline(never)]
    pub(super) fn pool_can_serve(&self, pool: u32, batch: Option<Id<Batch>>) -> Option<bool> {
        let members = self.pool_members(pool)?;
        let wait = Duration::from_millis(self.options.fallback_after_ms);
        Some(members.iter().any(|member| {
            let index = self.pacer.find_provider(member);
            batch.is_none_or(|b| self.may_take(member, index, b))
                && index.is_none_or(|i| self.pacer.can_serve(i, self.now, wait))
        }))
    }

    /// When `batch`, due for pool `pool`, may be dealt with: when its member can start
    /// it, or when dispatch next runs (a request token) if its items are to move to the
    /// pool's fallback or to end (no member can take them); `None` when `pool` is no
    /// pool.
    #[inline(never)]
    pub(super) fn pool_ready_at(&self, pool: u32, batch: Id<Batch>) -> Option<Instant> {
        let can_serve = self.pool_can_serve(pool, Some(batch))?;
        let moves = !can_serve
            && self
                .options
                .fallback_of(&self.pacer.provider_id(pool))
                .is_some();
        Some(match self.member_for(pool, batch) {
            Some((_, at)) if !moves => at,
            _ => self.pacer.ready_at(u32::MAX, (0.0, 0), self.now),
        })
    }

    /// Where the call of `batch`, due for `provider` and first in line, goes: `provider`
    /// itself, or for a pool the member chosen now. When no member of the pool can serve
    /// the batch's items they move to the pool's fallback, and when no member may take
    /// them at all (and no fallback does) they end with a member's error.
    #[inline(never)]
    pub(super) fn serving(&mut self, provider: u32, batch: Id<Batch>) -> Serving {
        let Some(can_serve) = self.pool_can_serve(provider, Some(batch)) else {
            return Serving::Provider(provider);
        };
        if !can_serve && self.move_to_fallback(batch) {
            return Serving::Gone;
        }
        if let Some((place, _)) = self.member_for(provider, batch) {
            let members = self.pool_members(provider).unwrap_or_default();
            let member = members.get(place).cloned().unwrap_or_default();
            return Serving::Provider(self.pacer.provider_for(&member, self.now, &self.options));
        }
        let error = self.no_member_error(provider, batch);
        self.fail(batch, error);
        Serving::Gone
    }

    /// The error `batch`'s items end with when no member of pool `pool` may take them:
    /// the first member's block, or the error it was put aside for.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    fn no_member_error(&self, pool: u32, batch: Id<Batch>) -> PacerFailure<C> {
        let seq = self.batches.get(batch).map_or(u64::MAX, Batch::seq);
        let members = self.pool_members(pool).unwrap_or_default();
        for member in members {
            let index = self.pacer.find_provider(member);
            if let Some(error) = index.and_then(|i| self.pacer.daily_blocked(i, self.now)) {
                return error;
            }
            if let Some((message, status)) = self.members.aside_for(member, seq) {
                let mut error = PacerFailure::new(ErrorCode::ProviderError, message.to_owned());
                error.status = status;
                return error;
            }
        }
        PacerFailure::new(
            ErrorCode::ProviderError,
            format!(
                "no member of pool {} could serve the items",
                crate::display::js_string(&self.pacer.provider_id(pool))
            ),
        )
    }

    /// The fields a call of `group_info`'s items sends when `serving` serves them: for a
    /// pool's member, its id as `providerId` and the pool's as `poolId`.
    #[inline(never)]
    pub(super) fn call_compat(
        &mut self,
        info: &Rc<CompatInfo>,
        batch_provider: u32,
        serving: u32,
    ) -> Rc<CompatInfo> {
        if serving == batch_provider {
            return Rc::clone(info);
        }
        let member = self.pacer.provider_id(serving);
        self.members.note_call(Rc::clone(&member));
        Rc::new(CompatInfo {
            provider_id: member.to_string(),
            pool_id: Some(self.pacer.provider_id(batch_provider).to_string()),
            ..(**info).clone()
        })
    }

    /// Whether the items of `run`'s call, a pool's, can go to another member: when the
    /// member that served it cannot serve them, they go back to the pool rather than to
    /// the pool's fallback.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn elsewhere_in_pool(&self, run: &Running) -> bool {
        let Some(batch) = self.batches.get(run.batch()) else {
            return false;
        };
        batch.provider() != run.provider()
            && self
                .pool_can_serve(batch.provider(), Some(run.batch()))
                .unwrap_or(false)
    }

    /// The member that served `run`'s call, a pool's, failed with a billing or settings
    /// `error`: it is put aside for the items that arrived by now.
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn put_aside(&mut self, run: &Running, error: &PacerFailure<C>) {
        let is_pool_call = self
            .batches
            .get(run.batch())
            .is_some_and(|b| b.provider() != run.provider());
        if !is_pool_call {
            return;
        }
        let member = self.pacer.provider_id(run.provider());
        let since = self.jobs.arrivals();
        self.members.aside.retain(|(m, ..)| *m != member);
        let entry = (member, since, error.message.clone(), error.status);
        self.members.aside.push(entry);
    }

    /// `run`'s call, a pool's, found no other member to serve its items: when no member
    /// of the pool can serve at all, the pool's queued items move to its fallback at
    /// once, as a provider's do (those the fallback cannot take wait, or end, in
    /// dispatch).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn pool_held(&mut self, run: &Running) {
        let Some(pool) = self.batches.get(run.batch()).map(Batch::provider) else {
            return;
        };
        if pool == run.provider() || self.pool_can_serve(pool, None) != Some(false) {
            return;
        }
        for key in self.batches.unsent_of(pool) {
            self.move_to_fallback(key);
        }
    }

    /// The call of `run`, a pool's, cannot be served by its member: its items go back to
    /// the pool, for another member, when one can serve them (whether they went).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn back_to_pool(&mut self, run: &Running) -> bool {
        if !self.elsewhere_in_pool(run) {
            return false;
        }
        self.batches.make_ready(run.batch());
        true
    }

    /// The call of `run` failed for good after its retries: for a pool's call, its
    /// items go back to the pool with fresh retries, for a member they have not spent
    /// them at (whether they went).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub(super) fn retries_spent_in_pool(&mut self, run: &Running) -> bool {
        let batch = run.batch();
        let Some(own) = self.batches.get(batch).map(Batch::provider) else {
            return false;
        };
        if own == run.provider() {
            return false;
        }
        let member = self.pacer.provider_id(run.provider());
        let batches = &self.batches;
        self.members
            .spent
            .retain(|(b, _)| batches.get(*b).is_some());
        self.members.spent.push((batch, member));
        if !self.elsewhere_in_pool(run) {
            return false;
        }
        self.batches.forget_errors(batch);
        self.retry_after(batch, Duration::ZERO, RetryReason::Error);
        true
    }
}
