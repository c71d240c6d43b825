//! Random seeds for new engines; a seed also keys the engine's in-memory item keys.

use std::cell::RefCell;

use js_sys::Function;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues, catch)]
    fn get_random_values(buffer: &mut [u8]) -> Result<JsValue, JsValue>;
}

thread_local! {
    static SOURCE: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers `source(bytes)`, which fills a `Uint8Array` with random bytes: the JS layer
/// passes one in Node, where loading Web Crypto costs milliseconds.
pub fn set_random_source(source: Function) {
    SOURCE.with(|s| *s.borrow_mut() = Some(source));
}

/// 64 random bits: from the registered source, else `crypto.getRandomValues`, else
/// `Math.random` (53 bits).
pub fn random_seed() -> u64 {
    let bytes = js_sys::Uint8Array::new_with_length(8);
    let filled = SOURCE.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|source| source.call1(&JsValue::UNDEFINED, &bytes).is_ok())
    });
    let mut seed = [0u8; 8];
    if filled {
        bytes.copy_to(&mut seed);
    } else if get_random_values(&mut seed).is_err() {
        return (js_sys::Math::random() * 9_007_199_254_740_992.0) as u64;
    }
    u64::from_le_bytes(seed)
}
