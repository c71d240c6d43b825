//! batch-pacer's core: paces and batches translation requests for browser extensions.
//!
//! The core is sans-IO. It never reads a clock and never calls a provider; the driver
//! (the wasm binding, or a test harness on virtual time) does both:
//!
//! 1. Feed inputs with the current time: [`Engine::handle_translate`] for a new item,
//!    [`Engine::handle_response`] when a provider call ends, [`Engine::handle_timeout`]
//!    when the wake-up time has come, [`Engine::handle_abort`], [`Engine::set_options`],
//!    [`Engine::handle_dispose`].
//! 2. Drain outputs: [`Engine::poll_call`] (start these provider calls),
//!    [`Engine::poll_cancel`] (abort these calls' signals), [`Engine::poll_settled`]
//!    (resolve or reject these items), [`Engine::poll_event`].
//! 3. Sleep until [`Engine::poll_timeout`], or until a response or a new item arrives.
//!
//! The modules, bottom up: `time` (virtual instants), `options` (defaults, validation),
//! `bucket` (token bucket), `batch` (assembly and due times), `codec` (separator, join,
//! tolerant split), `alignment` (evidence that a reply is shifted), `retry` (classification, backoff), `key` (unambiguous SHA-256 keys),
//! `cache` (LRU), `estimate` (script-aware token estimate), `store` (the persistent store's lookups and writes), `engine`
//! (composition). `wasm` exists only on `wasm32`.

pub mod alignment;
pub mod batch;
pub mod bucket;
pub mod budget;
pub mod cache;
pub mod call;
pub mod codec;
mod display;
pub mod engine;
pub mod estimate;
mod hash;
mod id_table;
pub mod item;
pub mod key;
mod key_index;
pub mod markers;
pub mod options;
pub mod proof;
pub mod quota;
mod ready;
pub mod retry;
pub mod settle;
mod slab;
pub mod snapshot;
pub mod stats;
pub mod store;
pub mod time;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use call::{
    Call, CallId, CompatInfo, Failure, FailureKind, Layout, Quota, Reply, Report, ReportedLimits,
    Usage,
};
pub use engine::{disposed_error, invalid_input, is_blank, Engine, Item};
pub use key::Compat;
pub use options::{OptionValue, Options, OptionsError};
pub use settle::{ErrorCode, PacerFailure, Settled, Ticket};
pub use snapshot::{ProviderSnapshot, SavedDailyBlock, Snapshot};
pub use stats::{BlockReason, Event, RetryReason, Stats};
pub use store::{Lookup, LookupId, LookupResult, StoreWrite};
pub use time::{Duration, Instant};
