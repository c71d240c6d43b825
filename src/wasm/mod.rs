//! The JS binding (wasm32 only): converts values and drives the engine. No rule of the
//! contract is decided here.

mod answers;
mod budget;
mod clock;
mod convert;
mod driver;
mod errors;
mod host;
mod input;
mod replies;
mod runs;
mod setup;
mod store;
mod views;

use wasm_bindgen::prelude::*;

pub use budget::PacerBudget;
pub use driver::PacerCore;

use crate::key::{item_key, to_hex};

/// `cacheKey(item)`: lowercase hex SHA-256 over the item's length-prefixed fields.
#[wasm_bindgen(js_name = cacheKey)]
pub fn cache_key(item: JsValue) -> Result<String, JsValue> {
    let fields = convert::item_fields(&item).map_err(|e| errors::js_error(&e))?;
    let item = fields.item();
    crate::item::validate(&item).map_err(|e| errors::js_error(&e))?;
    Ok(to_hex(&item_key(&item.compat, item.text)))
}
