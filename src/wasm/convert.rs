//! Conversions between JS values and the core's types. Type checks live here (a JS value
//! has a type the core cannot see); every other rule is the core's.

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::display::js_string;
use crate::hash::IdMap;
use crate::{
    invalid_input, Compat, ErrorCode, Item, LookupResult, OptionValue, Options, PacerFailure,
    Ticket,
};

/// Reads a property; a throwing getter reads as `undefined`.
pub fn get(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

// The catching forms of two js_sys functions, for values a user made: a proxy's trap (or
// a revoked proxy) throws inside them, and a throw must never cross the core's frames.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn is_array_or_throw(value: &JsValue) -> Result<bool, JsValue>;
    /// `Object.keys(value)`: the own enumerable names, as a plain array.
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    fn own_keys(value: &JsValue) -> Result<Array, JsValue>;
}

/// Whether `value` is an array; a revoked proxy is not one.
pub fn is_array(value: &JsValue) -> bool {
    is_array_or_throw(value).unwrap_or(false)
}

/// An error's message, or the thrown value described.
pub fn error_message(error: &JsValue) -> String {
    get(error, "message")
        .as_string()
        .or_else(|| error.as_string())
        .unwrap_or_else(|| describe(error).to_string())
}

/// Where reading an object threw (the name, or `None` when the names themselves could
/// not be listed) and what it threw.
type Unreadable = (Option<String>, JsValue);

/// The own enumerable `(name, value)` pairs of an object, each value read by itself, so
/// that a getter or proxy that throws is named.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn own_entries(value: &JsValue) -> Result<Vec<(String, JsValue)>, Unreadable> {
    let keys = own_keys(value).map_err(|error| (None, error))?;
    let mut entries = Vec::with_capacity(keys.length() as usize);
    for key in keys.iter() {
        let name = key.as_string().unwrap_or_default();
        match Reflect::get(value, &key) {
            Ok(v) => entries.push((name, v)),
            Err(error) => return Err((Some(name), error)),
        }
    }
    Ok(entries)
}

/// An `invalid_options` error for a value that threw while it was read (`what`: where),
/// with what it threw as its cause.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn unreadable_option(option: Option<&str>, what: &str, error: JsValue) -> PacerFailure<JsValue> {
    let message = format!(
        "{what} could not be read: a getter or proxy threw ({})",
        error_message(&error)
    );
    let mut failure = match option {
        Some(option) => PacerFailure::invalid_option(option, message),
        None => PacerFailure::new(ErrorCode::InvalidOptions, message),
    };
    failure.cause = Some(error);
    failure
}

#[wasm_bindgen]
extern "C" {
    /// An object the binding has just made: it has no setter that could throw.
    type FreshObject;
    /// `target[key] = value`. Not `Reflect.set`, whose import catches (no need here);
    /// every object the binding builds (options, stats, snapshots, events) is filled
    /// through this one import.
    #[wasm_bindgen(method, structural, indexing_setter)]
    fn set_field(this: &FreshObject, key: &JsValue, value: &JsValue);
}

/// Sets a data property on a fresh object the binding made.
pub fn set(target: &Object, key: &str, value: &JsValue) {
    let target: &FreshObject = target.unchecked_ref();
    target.set_field(&JsValue::from_str(key), value);
}

/// A JS value as the core describes values in messages.
pub fn describe(value: &JsValue) -> OptionValue {
    if value.is_undefined() {
        OptionValue::Undefined
    } else if value.is_null() {
        OptionValue::Null
    } else if let Some(b) = value.as_bool() {
        OptionValue::Bool(b)
    } else if let Some(n) = value.as_f64() {
        OptionValue::Number(n)
    } else if let Some(s) = value.as_string() {
        OptionValue::Text(s)
    } else if is_array(value) {
        OptionValue::Other("an array".into())
    } else {
        OptionValue::Other(value.js_typeof().as_string().unwrap_or_default())
    }
}

/// How the values of an option that maps names (`entries_of`) are read.
#[derive(Clone, Copy)]
enum Entries {
    /// As plain values (`fallbackProviders`).
    Plain,
    /// As objects of their own (`providers`: each provider's settings).
    Objects,
    /// An array as its elements (`pools`: each pool's members).
    Lists,
}

/// A plain object's own entries as a map value (for the options that take one, `name`);
/// any other value described as `describe` does. A `Map` is described as one: its
/// entries are not properties, and read as an object it would map nothing. `shape` says
/// how each entry's value is read: `providers` maps to settings objects, `pools` to lists
/// of members.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn entries_of(
    name: &str,
    value: &JsValue,
    shape: Entries,
) -> Result<OptionValue, PacerFailure<JsValue>> {
    if !value.is_object() || is_array(value) || value.is_function() {
        return Ok(describe(value));
    }
    if value.is_instance_of::<js_sys::Map>() {
        return Ok(OptionValue::Other("a Map".into()));
    }
    let entries = own_entries(value).map_err(|(key, error)| {
        let at = key.map(|key| format!(" at {}", js_string(&key)));
        unreadable_option(
            Some(name),
            &format!("{name}{}", at.unwrap_or_default()),
            error,
        )
    })?;
    let mut map = Vec::with_capacity(entries.len());
    for (key, v) in &entries {
        let at = || format!("{name}.{key}");
        let v = match shape {
            Entries::Objects => entries_of(&at(), v, Entries::Plain)?,
            Entries::Lists if is_array(v) => {
                let at = at();
                let elements = own_entries(v)
                    .map_err(|(_, error)| unreadable_option(Some(&at), &at, error))?;
                OptionValue::List(elements.iter().map(|(_, e)| describe(e)).collect())
            }
            _ => describe(v),
        };
        map.push((key.clone(), v));
    }
    Ok(OptionValue::Map(map))
}

/// An item's fields, owned, read from a JS object.
pub struct ItemFields {
    pub text: String,
    pub source_lang: String,
    pub target_lang: String,
    pub provider_id: String,
    pub context: String,
    pub llm: bool,
    pub scope: String,
    pub priority: f64,
    pub aborted: bool,
}

impl ItemFields {
    /// The core's view of these fields.
    pub fn item(&self) -> Item<'_> {
        Item {
            text: &self.text,
            compat: Compat {
                provider_id: &self.provider_id,
                source_lang: &self.source_lang,
                target_lang: &self.target_lang,
                context: &self.context,
                llm: self.llm,
                scope: &self.scope,
            },
            priority: self.priority,
            tokens: None,
        }
    }
}

type InputResult<T> = Result<T, PacerFailure<JsValue>>;

// Direct property access from the generated JS glue: no key strings cross the
// boundary, which matters on the per-item and per-call paths. The JS layer hands plain
// items (a getter or proxy of the caller's would throw through these).
#[wasm_bindgen]
extern "C" {
    /// A `translate` item as JS passed it.
    pub type ItemJs;
    #[wasm_bindgen(method, getter, structural)]
    fn text(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = sourceLang)]
    fn source_lang(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = targetLang)]
    fn target_lang(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = providerId)]
    fn provider_id(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn context(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn llm(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn scope(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn priority(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural)]
    fn signal(this: &ItemJs) -> JsValue;
    #[wasm_bindgen(method, getter, structural, js_name = onPartial)]
    fn on_partial(this: &ItemJs) -> JsValue;
}

fn string_field(
    value: JsValue,
    field: &str,
    rule: &str,
    default: Option<&str>,
) -> InputResult<String> {
    match (value.as_string(), default) {
        (Some(s), _) => Ok(s),
        (None, Some(d)) if value.is_undefined() => Ok(d.to_owned()),
        _ => Err(invalid_input(field, rule, &describe(&value))),
    }
}

/// Reads and type-checks an item.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn item_fields(value: &JsValue) -> InputResult<ItemFields> {
    if !value.is_object() {
        return Err(invalid_input("item", "an object", &describe(value)));
    }
    let item: &ItemJs = value.unchecked_ref();
    let name = "a non-empty string";
    let text = string_field(item.text(), "text", "a string", None)?;
    let source_lang = string_field(item.source_lang(), "sourceLang", name, None)?;
    let target_lang = string_field(item.target_lang(), "targetLang", name, None)?;
    let provider_id = string_field(item.provider_id(), "providerId", name, None)?;
    let context = string_field(item.context(), "context", "a string", Some(""))?;
    let llm = match item.llm() {
        v if v.is_undefined() => true,
        v => v
            .as_bool()
            .ok_or_else(|| invalid_input("llm", "a boolean", &describe(&v)))?,
    };
    let scope = string_field(item.scope(), "scope", "a string", Some(""))?;
    let priority = match item.priority() {
        v if v.is_undefined() => 0.0,
        v => v
            .as_f64()
            .ok_or_else(|| invalid_input("priority", "a finite number", &describe(&v)))?,
    };
    let on_partial = item.on_partial();
    if !on_partial.is_undefined() && !on_partial.is_function() {
        return Err(invalid_input(
            "onPartial",
            "a function",
            &describe(&on_partial),
        ));
    }
    let signal = item.signal();
    let aborted = if signal.is_undefined() || signal.is_null() {
        false
    } else {
        let aborted = get(&signal, "aborted").as_bool();
        match aborted {
            Some(a) if get(&signal, "addEventListener").is_function() => a,
            _ => {
                return Err(invalid_input(
                    "signal",
                    "an AbortSignal",
                    &describe(&signal),
                ))
            }
        }
    };
    Ok(ItemFields {
        text,
        source_lang,
        target_lang,
        provider_id,
        context,
        llm,
        scope,
        priority,
        aborted,
    })
}

/// The `(name, value)` pairs of an options object, with the binding's own options
/// (`clock`, `onEvent`, `cache`, `restore`, `estimateTokens`, `budget`) split off.
pub struct OptionsInput {
    pub core: Vec<(String, OptionValue)>,
    pub clock: Option<JsValue>,
    pub on_event: Option<JsValue>,
    pub cache: Option<JsValue>,
    pub restore: Option<JsValue>,
    pub estimate_tokens: Option<JsValue>,
    /// Checked and applied by the JS layer, which holds the budgets.
    pub budget: Option<JsValue>,
}

/// Reads an options object (`what` names it in messages); `undefined` and `null` mean no
/// options. Each option is read once, by itself: one whose getter (or a proxy) throws is
/// `invalid_options` naming it, with what it threw as the cause.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn options_input(value: &JsValue, what: &str) -> Result<OptionsInput, PacerFailure<JsValue>> {
    let mut input = OptionsInput {
        core: Vec::new(),
        clock: None,
        on_event: None,
        cache: None,
        restore: None,
        estimate_tokens: None,
        budget: None,
    };
    if value.is_undefined() || value.is_null() {
        return Ok(input);
    }
    if !value.is_object() || is_array(value) || value.is_function() {
        let message = format!("{what} must be an object (got {})", describe(value));
        return Err(PacerFailure::new(ErrorCode::InvalidOptions, message));
    }
    let entries = own_entries(value).map_err(|(name, error)| match name {
        Some(name) => {
            unreadable_option(Some(&name), &format!("option {}", js_string(&name)), error)
        }
        None => unreadable_option(None, what, error),
    })?;
    for (name, v) in entries {
        let present = !v.is_undefined();
        match name.as_str() {
            "clock" => input.clock = present.then_some(v),
            "onEvent" => input.on_event = present.then_some(v),
            "cache" => input.cache = present.then_some(v),
            // Settings storage yields null for "nothing saved": no restore, like undefined.
            "restore" => input.restore = (present && !v.is_null()).then_some(v),
            "estimateTokens" => input.estimate_tokens = present.then_some(v),
            "budget" => input.budget = present.then_some(v),
            "fallbackProviders" | "providers" | "pools" => {
                let shape = match name.as_str() {
                    "providers" => Entries::Objects,
                    "pools" => Entries::Lists,
                    _ => Entries::Plain,
                };
                let map = entries_of(&name, &v, shape)?;
                input.core.push((name, map));
            }
            _ => input.core.push((name, describe(&v))),
        }
    }
    Ok(input)
}

/// Options as a plain object (for `pacer.options` and `DEFAULTS`).
pub fn options_object(options: &Options) -> JsValue {
    let object = Object::new();
    for (name, value) in options.entries() {
        set(&object, name, &option_js(&value));
    }
    object.into()
}

/// An option's value as JS: a map (`fallbackProviders`, `providers` and its settings) as
/// a plain object.
fn option_js(value: &OptionValue) -> JsValue {
    match value {
        OptionValue::Bool(b) => JsValue::from_bool(*b),
        OptionValue::Number(n) => JsValue::from_f64(*n),
        OptionValue::Text(t) => JsValue::from_str(t),
        OptionValue::Map(entries) => {
            let map = Object::new();
            for (key, value) in entries {
                set(&map, key, &option_js(value));
            }
            map.into()
        }
        OptionValue::List(values) => values.iter().map(option_js).collect::<Array>().into(),
        _ => JsValue::UNDEFINED,
    }
}

/// Checks the `cache` option's shape: `{ get(key), set(key, value) }`.
pub fn store(value: &JsValue) -> Result<JsValue, String> {
    if value.is_object() && get(value, "get").is_function() && get(value, "set").is_function() {
        Ok(value.clone())
    } else {
        Err(format!(
            "cache must be an object with get(key) and set(key, value) (got {})",
            describe(value)
        ))
    }
}

/// Calls `target[name](first)`, or `target[name](first, second)`; a throw is returned as
/// the error. (Not `apply` with an array: the two calls' imports are there already.)
pub fn call_method(
    target: &JsValue,
    name: &str,
    first: &JsValue,
    second: Option<&JsValue>,
) -> Result<JsValue, JsValue> {
    let method: Function = get(target, name).dyn_into()?;
    match second {
        None => method.call1(target, first),
        Some(second) => method.call2(target, first, second),
    }
}

/// A store's answer: a string is a hit, `undefined` or `null` a miss, anything else a
/// failure (a store must never put garbage under a paragraph).
pub fn lookup_result(value: &JsValue) -> LookupResult {
    match value.as_string() {
        Some(text) => LookupResult::Hit(text),
        None if value.is_undefined() || value.is_null() => LookupResult::Miss,
        None => LookupResult::Failed(format!(
            "the store returned {}, not a string",
            describe(value)
        )),
    }
}

/// `request.metas` of a call whose texts are for the items of `items` (their tickets):
/// each item's `meta`, or undefined. Undefined as a whole when no item has one (the JS
/// side then gives the request an array of undefined).
pub fn metas(items: &[Ticket], metas: &IdMap<JsValue>) -> JsValue {
    if items.is_empty() || metas.is_empty() {
        return JsValue::UNDEFINED;
    }
    let array = Array::new();
    for ticket in items {
        // Pushed, not set by index: an array with holes would skip them in `forEach`.
        array.push(metas.get(ticket).unwrap_or(&JsValue::UNDEFINED));
    }
    array.into()
}
