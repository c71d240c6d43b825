//! Settling `translate` promises with a translation (see `settle.js`).

use js_sys::Function;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/settle.js")]
extern "C" {
    /// `resolve(text)`, with `text` decoded from wasm memory in the same crossing.
    #[wasm_bindgen(js_name = resolveWith)]
    pub fn resolve_with(resolve: &Function, text: &str);
}
