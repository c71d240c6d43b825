//! Building blocks with no knowledge of pacing: time, text measures, JavaScript's
//! number formatting, and the containers the engine is built from.

pub(crate) mod byte_scan;
pub(crate) mod deadlines;
pub(crate) mod display;
pub(crate) mod hash;
pub(crate) mod id_index;
pub(crate) mod id_table;
pub(crate) mod ready;
pub(crate) mod slab;
pub(crate) mod slotted_map;
pub(crate) mod text;
pub mod time;
pub(crate) mod trim;
