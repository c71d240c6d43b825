//! What the engine asks of its driver, one kind per variant, in the order
//! [`Engine::poll_output`](crate::engine::Engine::poll_output) gives them. The order is decided
//! there alone: drivers `match` on the variant and never choose which queue to drain.

use crate::call::{Call, CallId};
use crate::settle::Settled;
use crate::stats::Event;
use crate::store::{Lookup, StoreWrite};

use crate::engine::Preview;

/// One output of the engine. `poll_output` gives them in the order of the variants:
/// - `Cancel` first, so that a call cancelled by a timeout is aborted before its retry
///   starts in the same step;
/// - `Settled` before `Preview`, so a driver that forgets an item's preview handler when
///   the item settles never shows a preview after the result (the engine itself makes
///   no preview for a settled item);
/// - the store's `Lookup` and `StoreWrite`, then `Event`s;
/// - `Call` last: every promise a step settles is settled, and every event told, before
///   the provider calls that step started (a call may answer synchronously).
#[derive(Debug)]
pub enum Output<C> {
    /// Abort this call's signal: it timed out, no item waits for it, or the pacer was
    /// disposed.
    Cancel(CallId),
    /// An item ended: resolve or reject its promise.
    Settled(Settled<C>),
    /// A preview of an item's translation (only after `want_previews`).
    Preview(Preview),
    /// Look this key up in the persistent store (only after `enable_store`).
    Lookup(Lookup),
    /// Write this translation to the persistent store.
    StoreWrite(StoreWrite),
    /// A notable event, for the user's `onEvent`.
    Event(Event),
    /// Start this provider call (or a `pacer.run`'s function, when `Call::run` names it).
    Call(Call),
}
