//! The public contract's types: options, items, how an item ends, the provider call
//! and its report, statistics and events, and the snapshot a restart resumes from.

pub mod call;
pub mod item;
pub mod options;
pub mod pools;
pub mod provider_settings;
pub mod settle;
pub mod snapshot;
pub mod stats;
