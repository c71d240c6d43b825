//! `sharedBudget(options)`: the handle of a budget that several pacers share.

use wasm_bindgen::prelude::*;

use super::convert::{self, describe};
use super::errors::js_error;
use crate::budget::SharedBudget;
use crate::{Options, PacerFailure};

/// The options a shared budget takes.
const BUDGET_OPTIONS: [&str; 3] = ["rate", "capacity", "tokensPerMinute"];

/// A budget shared by pacers (see `crate::budget`).
#[wasm_bindgen]
#[derive(Debug)]
pub struct PacerBudget {
    pub(super) budget: SharedBudget,
}

#[wasm_bindgen]
impl PacerBudget {
    /// `new PacerBudget({ rate, capacity, tokensPerMinute })`, each as for a pacer (and
    /// its default); throws `invalid_options`.
    #[wasm_bindgen(constructor)]
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn new(options: JsValue) -> Result<PacerBudget, JsValue> {
        let input =
            convert::options_input(&options, "sharedBudget options").map_err(|e| js_error(&e))?;
        let extra = input
            .clock
            .as_ref()
            .map(|v| ("clock", v))
            .or(input.on_event.as_ref().map(|v| ("onEvent", v)))
            .or(input.cache.as_ref().map(|v| ("cache", v)))
            .or(input.restore.as_ref().map(|v| ("restore", v)))
            .or(input.budget.as_ref().map(|v| ("budget", v)))
            .or(input
                .estimate_tokens
                .as_ref()
                .map(|v| ("estimateTokens", v)));
        if let Some((name, value)) = extra {
            let message = format!(
                "sharedBudget takes rate, capacity and tokensPerMinute, not {name} (got {})",
                describe(value)
            );
            return Err(js_error(&PacerFailure::invalid_option(name, message)));
        }
        if let Some((name, value)) = input
            .core
            .iter()
            .find(|(name, _)| !BUDGET_OPTIONS.contains(&name.as_str()))
        {
            let message = format!(
                "sharedBudget takes rate, capacity and tokensPerMinute, not {name} (got {value})"
            );
            return Err(js_error(&PacerFailure::invalid_option(
                name.as_str(),
                message,
            )));
        }
        let options = Options::default()
            .patched(&input.core)
            .map_err(|e| js_error(&PacerFailure::invalid_option(e.option, e.message)))?;
        Ok(PacerBudget {
            budget: SharedBudget::new(options.rate, options.capacity, options.tokens_per_minute),
        })
    }
}
