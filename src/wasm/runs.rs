//! `pacer.run` on the JS side: each run's function by its ticket, called for each try
//! instead of the provider, and the value of its successful try, which resolves the run's
//! promise as it is and never crosses into the core (the core learns only success or
//! failure).

use js_sys::Function;
use wasm_bindgen::prelude::*;

use super::convert::{describe, get};
use super::driver::{Inner, PacerCore};
use super::errors::js_error;
use crate::hash::IdMap;
use crate::{disposed_error, invalid_input, run_aborted, CallId, PacerFailure, Reply, Ticket};

/// The functions of the runs not yet settled, and the values of those that succeeded
/// (each held only from its answer to its settlement, in the same flush).
#[derive(Default)]
pub(super) struct RunFunctions {
    functions: IdMap<Function>,
    values: Vec<(Ticket, JsValue)>,
}

impl RunFunctions {
    /// The function of the run of `ticket`.
    pub(super) fn function(&self, ticket: Ticket) -> Option<Function> {
        self.functions.get(&ticket).cloned()
    }

    /// The run of `ticket` ends: `Some` with its value (`undefined` unless it succeeded)
    /// when `ticket` is a run's, `None` for an item's.
    pub(super) fn end(&mut self, ticket: Ticket) -> Option<JsValue> {
        self.functions.remove(&ticket)?;
        let Some(i) = self.values.iter().position(|(t, _)| *t == ticket) else {
            return Some(JsValue::UNDEFINED);
        };
        Some(self.values.swap_remove(i).1)
    }
}

/// A run's fields as the JS layer hands them: `(providerId, priority, aborted)`.
type RunFields = (String, f64, bool);

/// The field that is wrong, what it must be, and what it was.
type Wrong = (&'static str, &'static str, JsValue);

/// Checks the types of `pacer.run`'s arguments (the engine checks their values).
#[inline(never)]
fn run_fields(
    provider_id: &JsValue,
    function: &JsValue,
    options: &JsValue,
) -> Result<RunFields, PacerFailure<JsValue>> {
    // One error path for every field: each `invalid_input` call is formatting code.
    let checked = || -> Result<RunFields, Wrong> {
        let Some(provider) = provider_id.as_string() else {
            return Err(("providerId", "a non-empty string", provider_id.clone()));
        };
        if !function.is_function() {
            return Err(("fn", "a function", function.clone()));
        }
        if options.is_undefined() {
            return Ok((provider, 0.0, false));
        }
        if !options.is_object() {
            return Err(("options", "an object", options.clone()));
        }
        let priority = get(options, "priority");
        let priority = match priority.as_f64() {
            _ if priority.is_undefined() => 0.0,
            Some(number) => number,
            None => return Err(("priority", "a finite number", priority)),
        };
        let signal = get(options, "signal");
        if signal.is_undefined() || signal.is_null() {
            return Ok((provider, priority, false));
        }
        match get(&signal, "aborted").as_bool() {
            Some(aborted) if get(&signal, "addEventListener").is_function() => {
                Ok((provider, priority, aborted))
            }
            _ => Err(("signal", "an AbortSignal", signal)),
        }
    };
    checked().map_err(|(field, rule, got)| invalid_input(field, rule, &describe(&got)))
}

#[wasm_bindgen]
impl PacerCore {
    /// `pacer.run(providerId, fn, options)`, its promise settled through `resolve` /
    /// `reject`; `options` is undefined or a plain `{ priority, signal }` the JS layer
    /// read once. Returns the ticket for `abortRun` (0 when the run settled at once).
    pub fn run(
        &self,
        provider_id: JsValue,
        function: JsValue,
        options: JsValue,
        resolve: Function,
        reject: Function,
    ) -> f64 {
        let disposed = (self.inner.state.try_borrow()).is_ok_and(|s| s.engine.is_disposed());
        let failure = match run_fields(&provider_id, &function, &options) {
            Err(_) | Ok((_, _, true)) if disposed => Some(disposed_error()),
            Err(error) => Some(error),
            Ok((_, _, true)) => Some(run_aborted()),
            Ok((provider, priority, false)) => {
                let function: Function = function.unchecked_into();
                return self.admit_with(
                    resolve,
                    reject,
                    |state, ticket| {
                        state.runs.functions.insert(ticket, function);
                    },
                    |engine, now| engine.handle_run(now, &provider, priority),
                );
            }
        };
        if let Some(failure) = failure {
            let _ = reject.call1(&JsValue::UNDEFINED, &js_error(&failure));
        }
        0.0
    }

    /// The run of `ticket` was aborted by its signal.
    #[wasm_bindgen(js_name = abortRun)]
    pub fn abort_run(&self, ticket: f64) {
        let now = self.inner.now();
        if let Ok(mut state) = self.inner.state.try_borrow_mut() {
            state.engine.handle_run_abort(now, ticket as Ticket);
        }
        self.inner.flush();
    }

    /// Rejects a run whose options could not be read (a getter or proxy threw `error`):
    /// `invalid_input` with the error as `cause`, or `disposed` after `dispose`.
    #[wasm_bindgen(js_name = rejectRunOptions)]
    pub fn reject_run_options(&self, error: JsValue, reject: Function) {
        let message = format!(
            "options could not be read: a getter or proxy threw ({})",
            super::convert::error_message(&error)
        );
        self.reject_invalid(message, error, reject);
    }
}

impl Inner {
    /// A try of a run succeeded with `value`: kept for the run's promise, while the
    /// engine hears only that call `id` succeeded.
    pub(super) fn run_done(self: &std::rc::Rc<Self>, id: CallId, value: JsValue) {
        let now = self.now();
        if let Ok(mut state) = self.state.try_borrow_mut() {
            if let Some(ticket) = state.engine.run_ticket(id) {
                state.runs.values.push((ticket, value));
                state
                    .engine
                    .handle_response(now, id, Ok(Reply::Text(String::new())));
            }
        }
        self.flush();
    }
}
