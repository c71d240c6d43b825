//! Turns core failures into the JS layer's `PacerError` objects.

use std::cell::RefCell;

use js_sys::{Function, Object};
use wasm_bindgen::prelude::*;

use super::convert::set;
use crate::{ErrorCode, PacerFailure};

thread_local! {
    /// Registered once by the JS layer at initialisation, so every error is an instance
    /// of the one `PacerError` class users import.
    static FACTORY: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers `factory({ code, message, status, cause })`, which returns a `PacerError`.
pub fn set_error_factory(factory: Function) {
    FACTORY.with(|f| *f.borrow_mut() = Some(factory));
}

/// A JS error for a core failure.
pub fn js_error(failure: &PacerFailure<JsValue>) -> JsValue {
    let fields = Object::new();
    let put = |key: &str, value: &JsValue| set(&fields, key, value);
    put("code", &JsValue::from_str(failure.code.as_str()));
    put("message", &JsValue::from_str(&failure.message));
    if let Some(status) = failure.status {
        put("status", &JsValue::from_f64(f64::from(status)));
    }
    if let Some(cause) = &failure.cause {
        put("cause", cause);
    }
    if let Some(option) = &failure.option {
        put("option", &JsValue::from_str(option));
    }
    if let Some(retry_in) = failure.retry_in {
        put(
            "retryAt",
            &JsValue::from_f64(super::views::wall_time_in(retry_in)),
        );
    }
    let made = FACTORY.with(|f| {
        f.borrow()
            .as_ref()
            .and_then(|factory| factory.call1(&JsValue::UNDEFINED, &fields).ok())
    });
    made.unwrap_or_else(|| {
        // Without the JS layer (raw wasm use), a plain Error with the same fields.
        let error = js_sys::Error::new(&failure.message);
        set(&error, "code", &failure.code.as_str().into());
        error.into()
    })
}

/// A JS error with this code and message.
pub fn js_error_of(code: ErrorCode, message: impl Into<String>) -> JsValue {
    js_error(&PacerFailure::new(code, message))
}
