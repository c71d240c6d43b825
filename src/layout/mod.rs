//! How texts travel in one call and come back: the markers layout and the proof of
//! which translation belongs to which item, streamed replies, and the older separator
//! layout with its alignment checks.

pub mod alignment;
pub mod codec;
pub mod copied_markers;
pub mod early;
pub mod markers;
pub mod proof;
pub mod runaway;
pub mod shift_evidence;
pub mod stream;
pub mod structured;
