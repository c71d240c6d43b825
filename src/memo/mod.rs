//! What is remembered of translations: item keys, the in-memory LRU, and the
//! persistent store's lookups and writes.

pub mod cache;
pub mod key;
pub mod store;
