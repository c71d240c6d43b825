//! Settling `translate` promises with a translation (see `settle.js`).

use js_sys::Function;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/settle.js")]
extern "C" {
    /// `resolve(text)`, with `text` decoded from wasm memory in the same crossing.
    #[wasm_bindgen(js_name = resolveWith)]
    fn resolve_with(resolve: &Function, text: &str);
}

/// `resolve(text)`, with the JS string the text came from when there is one.
pub fn resolve(resolve: &Function, text: &str) {
    if !super::input::resolve_if_last(resolve, text) {
        resolve_with(resolve, text);
    }
}
