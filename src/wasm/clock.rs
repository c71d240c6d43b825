//! Time for the driver: the global clock (`performance.now` and the global `setTimeout`,
//! reached without `window`, so it works in service workers), or the user's `clock`.

use gloo_timers::callback::Timeout;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{describe, get};

#[wasm_bindgen]
extern "C" {
    // A direct import: the clock is read several times per item.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// A time source and timer factory.
pub enum Clock {
    /// `performance.now()` (or `Date.now()` where there is no `performance`) and the
    /// global timers via gloo-timers.
    Global { has_performance: bool },
    /// The user's `{ now(), setTimeout(fn, ms), clearTimeout(handle) }`.
    User {
        target: JsValue,
        now: JsValue,
        set_timeout: Function,
        clear_timeout: Function,
    },
}

/// An armed timer; dropping it cancels it.
pub enum TimerHandle {
    Global(#[allow(dead_code)] Timeout),
    User {
        clear: Function,
        target: JsValue,
        handle: JsValue,
        // Kept alive until the timer fires or is cleared.
        _callback: Closure<dyn FnMut()>,
    },
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        if let TimerHandle::User {
            clear,
            target,
            handle,
            ..
        } = self
        {
            // A clock that throws on clear cannot be helped; the callback is dropped anyway.
            let _ = clear.call1(target, handle);
        }
    }
}

impl Clock {
    /// The global clock.
    pub fn global() -> Clock {
        let has_performance = Reflect::get(&js_sys::global(), &"performance".into())
            .is_ok_and(|p| p.is_object() && get(&p, "now").is_function());
        Clock::Global { has_performance }
    }

    /// The user's clock, checked for shape.
    pub fn user(value: &JsValue) -> Result<Clock, String> {
        let invalid = || {
            format!(
                "clock must be an object with now(), setTimeout(fn, ms) and clearTimeout(handle) (got {})",
                describe(value)
            )
        };
        if !value.is_object() {
            return Err(invalid());
        }
        let now = get(value, "now");
        let set_timeout = get(value, "setTimeout").dyn_into::<Function>();
        let clear_timeout = get(value, "clearTimeout").dyn_into::<Function>();
        match (set_timeout, clear_timeout) {
            (Ok(set_timeout), Ok(clear_timeout)) if now.is_function() || now.as_f64().is_some() => {
                Ok(Clock::User {
                    target: value.clone(),
                    now,
                    set_timeout,
                    clear_timeout,
                })
            }
            _ => Err(invalid()),
        }
    }

    /// Milliseconds from the clock's origin.
    pub fn now_ms(&self) -> f64 {
        match self {
            Clock::Global { has_performance } => {
                if *has_performance {
                    performance_now()
                } else {
                    js_sys::Date::now()
                }
            }
            Clock::User { target, now, .. } => match now.dyn_ref::<Function>() {
                Some(f) => f.call0(target).ok().and_then(|v| v.as_f64()).unwrap_or(0.0),
                // fake-timers style clocks expose `now` as a number property.
                None => get(target, "now").as_f64().unwrap_or(0.0),
            },
        }
    }

    /// Calls `callback` after `ms` milliseconds.
    pub fn set_timeout(&self, ms: f64, callback: impl FnOnce() + 'static) -> Option<TimerHandle> {
        match self {
            Clock::Global { .. } => {
                // setTimeout takes a 32-bit delay; longer waits re-arm on wake-up.
                let millis = ms.ceil().max(0.0).min(f64::from(i32::MAX)) as u32;
                Some(TimerHandle::Global(Timeout::new(millis, callback)))
            }
            Clock::User {
                target,
                set_timeout,
                clear_timeout,
                ..
            } => {
                let mut once = Some(callback);
                let closure = Closure::<dyn FnMut()>::new(move || {
                    if let Some(f) = once.take() {
                        f();
                    }
                });
                let millis = JsValue::from_f64(ms.ceil().max(0.0).min(f64::from(i32::MAX)));
                let handle = set_timeout
                    .call2(target, closure.as_ref().unchecked_ref(), &millis)
                    .ok()?;
                Some(TimerHandle::User {
                    clear: clear_timeout.clone(),
                    target: target.clone(),
                    handle,
                    _callback: closure,
                })
            }
        }
    }
}
