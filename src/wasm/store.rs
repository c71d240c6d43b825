//! The user's persistent store (`store`), as the driver serves the engine's lookups and
//! writes: `get` and `set` may return values or promises, and may throw; whatever they do,
//! the engine hears a hit, a miss or a failure, and a failure never stops the pacer.

use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::{spawn_local, JsFuture};

use super::convert;
use super::driver::Inner;
use crate::{Lookup, LookupId, LookupResult, StoreWrite};

impl Inner {
    /// `store.get(key)`; whatever it does, the engine hears a hit, a miss or a failure.
    pub(super) fn look_up(self: &Rc<Self>, lookup: Lookup) {
        let Some(store) = &self.store else {
            return;
        };
        let id = lookup.id;
        match convert::call_method(store, "get", &JsValue::from_str(&lookup.key), None) {
            Err(error) => self.found(id, LookupResult::Failed(convert::error_message(&error))),
            Ok(returned) => {
                let promise = Promise::resolve(&returned);
                let inner = Rc::downgrade(self);
                spawn_local(async move {
                    let result = match JsFuture::from(promise).await {
                        Ok(value) => convert::lookup_result(&value),
                        Err(error) => LookupResult::Failed(convert::error_message(&error)),
                    };
                    if let Some(inner) = inner.upgrade() {
                        inner.found(id, result);
                    }
                });
            }
        }
    }

    fn found(self: &Rc<Self>, id: LookupId, result: LookupResult) {
        let now = self.now();
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.engine.handle_lookup(now, id, result);
        }
        self.flush();
    }

    /// `store.set(key, value)`, fire and forget: a failure only becomes an event.
    pub(super) fn write(self: &Rc<Self>, write: StoreWrite) {
        let Some(store) = &self.store else {
            return;
        };
        let (key, value) = (
            JsValue::from_str(&write.key),
            JsValue::from_str(&write.value),
        );
        match convert::call_method(store, "set", &key, Some(&value)) {
            Err(error) => self.store_failed(&error),
            Ok(returned) => {
                let promise = Promise::resolve(&returned);
                let inner = Rc::downgrade(self);
                spawn_local(async move {
                    if let (Err(error), Some(inner)) =
                        (JsFuture::from(promise).await, inner.upgrade())
                    {
                        inner.store_failed(&error);
                    }
                });
            }
        }
    }

    fn store_failed(self: &Rc<Self>, error: &JsValue) {
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state
                .engine
                .handle_store_failure(convert::error_message(error));
        }
        self.flush();
    }
}
