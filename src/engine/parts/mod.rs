//! The engine's parts: each type here owns its state behind private fields (so the
//! compiler keeps the boundary) and keeps its own invariant through its methods. A part
//! is handed the other parts it needs as arguments (disjoint borrows of the engine's
//! fields), never the engine: no file here has an `impl Engine`. The flows that compose
//! the parts are the files of `src/engine/` (`src/engine/mod.rs` lists both).
//!
//! What a part shows the engine is `pub(in crate::engine)`; in a part kept in a module
//! directory (`batches/`, `pacer/`), what only that part sees is `pub(super)`.

pub(in crate::engine) mod batches;
pub(in crate::engine) mod calls;
pub(in crate::engine) mod groups;
pub(in crate::engine) mod jobs;
pub(in crate::engine) mod limits;
pub(in crate::engine) mod outbox;
pub(in crate::engine) mod output;
pub(in crate::engine) mod pacer;
pub(in crate::engine) mod priority;
pub(in crate::engine) mod provider_table;
pub(in crate::engine) mod runs;
pub(in crate::engine) mod streamed;
pub(in crate::engine) mod tries;
