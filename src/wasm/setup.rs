//! What the JS layer registers once the module is loaded, in one call: in a fresh
//! runtime each first call into the module pays for compiling what it reaches, so
//! start-up makes one call instead of two.

use js_sys::Function;
use wasm_bindgen::prelude::*;

use super::{errors, host, input};

/// Registers `errorFactory({ code, message, status, cause })`, which returns a
/// `PacerError`, and the readers of rate-limit headers and error bodies that failures are
/// read with (`useReaders` in call-host.js). Returns the input writer
/// `{ write(text) -> bytes }` that `submit` reads texts through.
#[wasm_bindgen]
pub fn setup(error_factory: Function, readers: JsValue) -> JsValue {
    errors::set_error_factory(error_factory);
    host::use_readers(&readers);
    input::input_writer()
}
