//! Conversions between JS values and the core's types. Type checks live here (a JS value
//! has a type the core cannot see); every other rule is the core's.

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::{invalid_input, Compat, Item, LookupResult, OptionValue, Options, PacerFailure};

/// Reads a property; a throwing getter reads as `undefined`.
pub fn get(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
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
    } else if Array::is_array(value) {
        OptionValue::Other("an array".into())
    } else {
        OptionValue::Other(value.js_typeof().as_string().unwrap_or_default())
    }
}

/// A plain object's own entries as a map value (for the options that take one); any
/// other value described as `describe` does.
fn entries_of(value: &JsValue) -> OptionValue {
    if !value.is_object() || Array::is_array(value) || value.is_function() {
        return describe(value);
    }
    let mut map = Vec::new();
    for entry in Object::entries(value.unchecked_ref()).iter() {
        let pair: Array = entry.unchecked_into();
        map.push((
            pair.get(0).as_string().unwrap_or_default(),
            describe(&pair.get(1)),
        ));
    }
    OptionValue::Map(map)
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
// boundary, which matters on the per-item and per-call paths.
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
/// (`clock`, `onEvent`, `cache`) split off.
pub struct OptionsInput {
    pub core: Vec<(String, OptionValue)>,
    pub clock: Option<JsValue>,
    pub on_event: Option<JsValue>,
    pub cache: Option<JsValue>,
    pub restore: Option<JsValue>,
    pub estimate_tokens: Option<JsValue>,
}

/// Reads an options object; `undefined` and `null` mean no options.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn options_input(value: &JsValue, what: &str) -> Result<OptionsInput, String> {
    let mut input = OptionsInput {
        core: Vec::new(),
        clock: None,
        on_event: None,
        cache: None,
        restore: None,
        estimate_tokens: None,
    };
    if value.is_undefined() || value.is_null() {
        return Ok(input);
    }
    if !value.is_object() || Array::is_array(value) || value.is_function() {
        return Err(format!(
            "{what} must be an object (got {})",
            describe(value)
        ));
    }
    let entries = Object::entries(value.unchecked_ref());
    for entry in entries.iter() {
        let pair: Array = entry.unchecked_into();
        let name = pair.get(0).as_string().unwrap_or_default();
        let v = pair.get(1);
        let present = !v.is_undefined();
        match name.as_str() {
            "clock" => input.clock = present.then_some(v),
            "onEvent" => input.on_event = present.then_some(v),
            "cache" => input.cache = present.then_some(v),
            // Settings storage yields null for "nothing saved": no restore, like undefined.
            "restore" => input.restore = (present && !v.is_null()).then_some(v),
            "estimateTokens" => input.estimate_tokens = present.then_some(v),
            "fallbackProviders" => input.core.push((name, entries_of(&v))),
            _ => input.core.push((name, describe(&v))),
        }
    }
    Ok(input)
}

/// Options as a plain object (for `pacer.options` and `DEFAULTS`).
pub fn options_object(options: &Options) -> JsValue {
    let object = Object::new();
    for (name, value) in options.entries() {
        let v = match value {
            OptionValue::Bool(b) => JsValue::from_bool(b),
            OptionValue::Number(n) => JsValue::from_f64(n),
            OptionValue::Text(t) => JsValue::from_str(&t),
            OptionValue::Map(entries) => {
                let map = Object::new();
                for (key, value) in entries {
                    if let OptionValue::Text(to) = value {
                        set(&map, &key, &JsValue::from_str(&to));
                    }
                }
                map.into()
            }
            _ => JsValue::UNDEFINED,
        };
        set(&object, name, &v);
    }
    object.into()
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
