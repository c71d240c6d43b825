//! Each dependency used once, as batch-pacer uses it: a JS class whose options are read
//! through js-sys and whose stats leave as a plain object set through js-sys, a provider promise
//! awaited through wasm-bindgen-futures after a gloo-timers delay, a SHA-256 hex key, a
//! keyed SipHash-1-3 of 128 bits (the in-memory key) and a number written by the host's
//! `Number.prototype.toString`.

use core::hash::Hasher;

use sha2::{Digest, Sha256};
use siphasher::sip128::{Hasher128, SipHasher13};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Floor {
    provider: js_sys::Function,
    items: u32,
    calls: u32,
}

#[wasm_bindgen]
impl Floor {
    #[wasm_bindgen(constructor)]
    pub fn new(provider: js_sys::Function, options: JsValue) -> Result<Floor, JsValue> {
        let rate = js_sys::Reflect::get(&options, &JsValue::from_str("rate"))?;
        let calls = rate.as_f64().unwrap_or(8.0) as u32;
        Ok(Floor {
            provider,
            items: 0,
            calls,
        })
    }

    pub fn stats(&self) -> Result<JsValue, JsValue> {
        let stats = js_sys::Object::new();
        js_sys::Reflect::set(&stats, &"items".into(), &self.items.into())?;
        js_sys::Reflect::set(&stats, &"providerCalls".into(), &self.calls.into())?;
        Ok(stats.into())
    }

    pub fn translate(&mut self, text: String) -> js_sys::Promise {
        self.items += 1;
        let provider = self.provider.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            gloo_timers::future::TimeoutFuture::new(0).await;
            let returned = provider.call1(&JsValue::NULL, &JsValue::from_str(&text))?;
            wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(returned)).await
        })
    }
}

#[wasm_bindgen(js_name = cacheKey)]
pub fn cache_key(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    Sha256::digest(text.as_bytes())
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// The in-memory key: 128 bits of SipHash-1-3 under a key, as two words.
#[wasm_bindgen(js_name = shortKey)]
pub fn short_key(k0: u64, k1: u64, text: &str) -> Vec<u64> {
    let mut hasher = SipHasher13::new_with_keys(k0, k1);
    hasher.write(text.as_bytes());
    let hash = hasher.finish128();
    vec![hash.h1, hash.h2]
}

/// A number written by the host, as the package writes numbers into messages.
#[wasm_bindgen(js_name = formatNumber)]
pub fn format_number(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .map(String::from)
        .unwrap_or_default()
}
