//! batch-pacer's core: paces and batches translation requests for browser extensions.
//!
//! The core is sans-IO. It never reads a clock and never calls a provider; the driver
//! (the wasm binding, or a test harness on virtual time) does both:
//!
//! 1. Feed inputs with the current time: [`Engine::handle_translate`] for a new item,
//!    [`Engine::handle_response`] when a provider call ends ([`Engine::handle_chunk`],
//!    [`Engine::handle_stream_report`] and [`Engine::handle_stream_end`] when it answers
//!    with a stream; a broken stream is a failed response), [`Engine::handle_timeout`]
//!    when the wake-up time has come, [`Engine::handle_abort`], [`Engine::set_options`],
//!    [`Engine::handle_dispose`]; [`Engine::handle_run`] and [`Engine::handle_run_abort`]
//!    for a `pacer.run` (a provider call that is not a translation).
//! 2. Take outputs from [`Engine::poll_output`] until it gives `None`: each [`Output`]
//!    says what to do (abort a call's signal, settle an item, show a preview, serve the
//!    store, tell an event, start a provider call), in the one order the engine keeps.
//! 3. Sleep until [`Engine::poll_timeout`], or until a response or a new item arrives.
//!
//! The modules, bottom up, grouped by layer in folders (the crate's public paths stay
//! flat: `batch_pacer::codec`, `batch_pacer::options`, ...):
//! - `util/`: building blocks with no knowledge of pacing:
//!   - `time`: virtual instants and durations in microseconds, saturating arithmetic.
//!   - `text`: text measured as JavaScript measures it (UTF-16 code units).
//!   - `trim`: `str::trim` without a pass when a text's ends are visible ASCII.
//!   - `byte_scan`: the first byte of a class, found thirty-two bytes a step.
//!   - `display`: numbers and strings written as JavaScript writes them, for messages.
//!   - `hash`: a fast hasher for keys that are already uniformly distributed.
//!   - `slab`: generational slabs: ids that never meet a later entry.
//!   - `id_table`: tables by numeric id.
//!   - `deadlines`: deadlines soonest first, O(1) for those that come in order.
//!   - `slotted_map`: values by number, found by index when the number names a slot.
//!   - `id_index`: indexes from a key word to a slab id.
//!   - `ready`: ordered sets of due batches.
//! - `contract/`: the public contract's types:
//!   - `options`: the options, their defaults and their validation.
//!   - `provider_settings`: a provider's own settings (`providers`) and their checks.
//!   - `pools`: pools of providers used as one, and their checks.
//!   - `settle`: how an item ends (a translation, or an error with a stable code).
//!   - `item`: an item as the caller gives it, its checks and errors.
//!   - `call`: the provider call asked of the driver, and what the driver reports back.
//!   - `stats`: counters, gauges and events.
//!   - `snapshot`: what a restarted pacer resumes from.
//! - `memo/`: what is remembered of translations:
//!   - `key`: item keys (SHA-256 for the store, keyed SipHash in memory).
//!   - `cache`: the in-memory LRU of translations.
//!   - `store`: the persistent store's lookups and writes.
//! - `pacing/`: the rules of how fast calls may go:
//!   - `bucket`: the token bucket ("not until T", never a sleep).
//!   - `adaptive`: a provider's own rate after 429s, and how it recovers.
//!   - `estimate`: the script-aware token estimate of a text.
//!   - `quota`: the token budget, call costs corrected from usage, reported limits.
//!   - `provider`: what holds one provider back (pause, adaptive rate, daily block,
//!     reported limits), shared by the pacers of one budget.
//!   - `provider_limits`: a provider's own bucket, budgets and cap (`providers`).
//!   - `budget`: one budget (and provider pacing state) shared by several pacers.
//!   - `retry`: which failures are retried, backoff, jitter.
//!   - `call_timeout`: how long a call may take, by the characters it sends.
//!   - `batch_limit`: the batch size a provider's replies have shown it can carry.
//!   - `output_bound`: how many output tokens a faithful answer to a call can need.
//!   - `length_ratio`: how long a provider's translations are against their sources.
//! - `layout/`: how texts travel in one call and come back:
//!   - `markers`: the markers layout (tag choice, layout, instructions, the marker scan).
//!   - `proof`: which translation of a reply provably belongs to which item.
//!   - `copied_markers`: a value of an object or array reply unwrapped from its own pair.
//!   - `structured`: a JSON object answer that came as text (maybe in a code fence).
//!   - `stream`: a reply received in pieces: reasoning left out, a cap on its length.
//!   - `runaway`: whether a reply cut at its bound was looping or still writing.
//!   - `shift_evidence`: which segments no drop or merge with renumbering can have moved.
//!   - `early`: which segments the beginning of a streamed reply proves, whatever follows.
//!   - `codec`: the older separator layout (choice, join, tolerant split).
//!   - `alignment`: the separator layout's evidence that a reply is shifted.
//! - `drive`: virtual time for the engine (scheduled answers, the jump to the next
//!   wake-up), the drive loop of the Rust tests, benches and fuzz targets.
//! - `engine/`: the sans-IO pacer: its flows, composing its parts (`engine/parts/`; see
//!   its own docs).
//! - `wasm/` (wasm32 only): the JS binding, which converts and drives.

// The release .wasm is built for speed (opt-level 2) with `--cfg cold_for_size`
// (scripts/release-wasm.toml): then the entry points that run once or rarely (construction,
// options, snapshot and restore, the checks of a malformed item) are built for size, each
// `#[cfg_attr(cold_for_size, optimize(size), inline(never))]` (not inlined: an inlined body
// is built as its caller is). Other builds ignore the attributes.
#![cfg_attr(cold_for_size, feature(optimize_attribute))]

mod util;
#[cfg(target_arch = "wasm32")]
use util::slotted_map;
pub use util::time;
use util::{byte_scan, deadlines, display, hash, id_index, id_table, ready, slab, text, trim};
mod contract;
pub use contract::{call, item, options, pools, provider_settings, settle, snapshot, stats};
mod memo;
pub use memo::{cache, key, store};
mod pacing;
pub use pacing::{
    adaptive, batch_limit, bucket, budget, call_timeout, estimate, length_ratio, output_bound,
    provider, provider_limits, quota, quota_share, retry,
};
mod layout;
pub use layout::{
    alignment, codec, copied_markers, early, markers, proof, runaway, shift_evidence, stream,
    structured,
};

pub mod drive;
pub mod engine;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use call::{
    Call, CallId, CompatInfo, Failure, FailureKind, Layout, Quota, Reply, Report, ReportedLimits,
    Usage,
};
pub use engine::{
    disposed_error, invalid_input, is_blank, run_aborted, ticket_slot, Engine, Item, Output,
    Preview,
};
pub use key::Compat;
pub use options::{OptionValue, Options, OptionsError};
pub use settle::{ErrorCode, PacerFailure, Settled, Ticket};
pub use snapshot::{ProviderSnapshot, SavedDailyBlock, Snapshot};
pub use stats::{BlockReason, Event, RetryReason, Stats};
pub use store::{Lookup, LookupId, LookupResult, StoreWrite};
pub use time::{Duration, Instant};
