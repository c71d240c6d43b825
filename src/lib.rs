pub mod bucket;
pub mod codec;
pub mod key;
pub mod options;
pub mod time;
