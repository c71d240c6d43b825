//! What the JS layer registers once the module is loaded, in one call: in a fresh
//! runtime each first call into the module pays for compiling what it reaches, so
//! start-up makes one call instead of three.

use js_sys::Function;
use wasm_bindgen::prelude::*;

use super::{errors, input, seed};

/// Registers `errorFactory({ code, message, status, cause })`, which returns a
/// `PacerError`, and `randomSource(bytes)` when given (it fills a `Uint8Array` with
/// random bytes; without it seeds come from `crypto.getRandomValues`). Returns the
/// input writer `{ write(text) -> bytes }` that `submit` reads texts through.
#[wasm_bindgen]
pub fn setup(error_factory: Function, random_source: Option<Function>) -> JsValue {
    errors::set_error_factory(error_factory);
    if let Some(source) = random_source {
        seed::set_random_source(source);
    }
    input::input_writer()
}
