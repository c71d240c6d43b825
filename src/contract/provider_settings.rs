//! `providers`: a provider's own settings, and their validation. Every message names the
//! path of what was wrong (`providers.<id>.<field>`), and each field is valid exactly
//! as the option of the same name is.
//!
//! A field left out is the pacer's option of that name: a provider given only `rate`
//! has a bucket of its own at that rate and the pacer's `capacity`.

use crate::display::js_string;
use crate::options::{
    finite_above_zero, finite_at_least_zero, integer_at_least, reject, OptionValue, OptionsError,
};

/// One provider's own settings; `None` where the pacer's option applies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProviderSettings {
    /// Its own request bucket's rate (calls a second), beside the pacer's.
    pub rate: Option<f64>,
    /// Its own request bucket's size.
    pub capacity: Option<f64>,
    /// Most of its calls at once (0: no cap of its own).
    pub max_in_flight: Option<u64>,
    /// Its own token budget a minute (0: none).
    pub tokens_per_minute: Option<f64>,
    /// Its own character budget a minute, the texts' `String.length` (0: none).
    pub characters_per_minute: Option<f64>,
    /// Replaces `maxItemsPerBatch` for its items.
    pub max_items_per_batch: Option<u64>,
    /// Replaces `maxCharactersPerBatch` for its items.
    pub max_characters_per_batch: Option<u64>,
    /// Replaces `batchDelayMs` for its items.
    pub batch_delay_ms: Option<f64>,
    /// Replaces `timeoutMs` for its calls.
    pub timeout_ms: Option<f64>,
    /// Replaces `timeoutPerCharacterMs` for its calls.
    pub timeout_per_character_ms: Option<f64>,
    /// `batch: "array"`: its `llm: false` items share calls as arrays.
    pub array: bool,
}

/// The fields, in the contract's order.
const FIELDS: [&str; 11] = [
    "rate",
    "capacity",
    "maxInFlight",
    "tokensPerMinute",
    "charactersPerMinute",
    "maxItemsPerBatch",
    "maxCharactersPerBatch",
    "batchDelayMs",
    "timeoutMs",
    "timeoutPerCharacterMs",
    "batch",
];

impl ProviderSettings {
    /// Whether a bucket of its own is asked for (`rate` or `capacity`).
    pub fn has_bucket(&self) -> bool {
        self.rate.is_some() || self.capacity.is_some()
    }

    /// The settings as `(field, value)` pairs in the contract's order, the fields given
    /// only (for `pacer.options`).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn entries(&self) -> Vec<(String, OptionValue)> {
        let number = |v: Option<f64>| v.map(OptionValue::Number);
        let count = |v: Option<u64>| v.map(|n| OptionValue::Number(n as f64));
        let values = [
            number(self.rate),
            number(self.capacity),
            count(self.max_in_flight),
            number(self.tokens_per_minute),
            number(self.characters_per_minute),
            count(self.max_items_per_batch),
            count(self.max_characters_per_batch),
            number(self.batch_delay_ms),
            number(self.timeout_ms),
            number(self.timeout_per_character_ms),
            self.array.then(|| OptionValue::Text("array".into())),
        ];
        let mut entries = Vec::new();
        for (field, value) in FIELDS.iter().zip(values) {
            if let Some(value) = value {
                entries.push(((*field).to_owned(), value));
            }
        }
        entries
    }

    /// The settings of `value`, the entry of provider `id`.
    fn parse(id: &str, value: &OptionValue) -> Result<ProviderSettings, OptionsError> {
        let path = format!("providers.{id}");
        let OptionValue::Map(fields) = value else {
            return Err(reject(&path, "an object of provider settings", value));
        };
        let mut settings = ProviderSettings::default();
        for (field, value) in fields {
            let name = format!("{path}.{field}");
            if *value == OptionValue::Undefined {
                continue;
            }
            let s = &mut settings;
            match field.as_str() {
                "rate" => s.rate = Some(finite_above_zero(&name, value)?),
                "capacity" => s.capacity = Some(integer_at_least(&name, 1, value)? as f64),
                "maxInFlight" => s.max_in_flight = Some(integer_at_least(&name, 0, value)?),
                "tokensPerMinute" => {
                    s.tokens_per_minute = Some(finite_at_least_zero(&name, value)?)
                }
                "charactersPerMinute" => {
                    s.characters_per_minute = Some(finite_at_least_zero(&name, value)?)
                }
                "maxItemsPerBatch" => {
                    s.max_items_per_batch = Some(integer_at_least(&name, 1, value)?)
                }
                "maxCharactersPerBatch" => {
                    s.max_characters_per_batch = Some(integer_at_least(&name, 1, value)?)
                }
                "batchDelayMs" => s.batch_delay_ms = Some(finite_at_least_zero(&name, value)?),
                "timeoutMs" => s.timeout_ms = Some(finite_at_least_zero(&name, value)?),
                "timeoutPerCharacterMs" => {
                    s.timeout_per_character_ms = Some(finite_at_least_zero(&name, value)?)
                }
                "batch" => match value {
                    OptionValue::Text(t) if t == "array" => s.array = true,
                    _ => return Err(reject(&name, "\"array\"", value)),
                },
                _ => {
                    return Err(OptionsError {
                        option: name.clone(),
                        message: format!(
                            "unknown provider setting {} (got {value}): the fields are {}",
                            js_string(&name),
                            FIELDS.join(", ")
                        ),
                    })
                }
            }
        }
        Ok(settings)
    }
}

/// The `providers` option: each provider's own settings, in the order given.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn providers_map(
    name: &str,
    value: &OptionValue,
) -> Result<Vec<(String, ProviderSettings)>, OptionsError> {
    let OptionValue::Map(entries) = value else {
        return Err(reject(
            name,
            "an object mapping a providerId to its own settings",
            value,
        ));
    };
    let mut map = Vec::with_capacity(entries.len());
    for (id, settings) in entries {
        if id.is_empty() {
            return Err(reject(
                name,
                "keyed by non-empty providerIds",
                &OptionValue::Text(String::new()),
            ));
        }
        if *settings == OptionValue::Undefined {
            continue;
        }
        map.push((id.clone(), ProviderSettings::parse(id, settings)?));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::OptionValue::*;
    use super::*;

    fn map(entries: &[(&str, OptionValue)]) -> OptionValue {
        Map(entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect())
    }

    fn err(value: OptionValue) -> OptionsError {
        providers_map("providers", &value).unwrap_err()
    }

    #[test]
    fn every_field_is_read() {
        let deepl = map(&[
            ("rate", Number(5.0)),
            ("capacity", Number(2.0)),
            ("maxInFlight", Number(1.0)),
            ("tokensPerMinute", Number(1000.0)),
            ("charactersPerMinute", Number(20000.0)),
            ("maxItemsPerBatch", Number(50.0)),
            ("maxCharactersPerBatch", Number(30000.0)),
            ("batchDelayMs", Number(0.0)),
            ("timeoutMs", Number(120000.0)),
            ("timeoutPerCharacterMs", Number(1.0)),
            ("batch", Text("array".into())),
        ]);
        let parsed = providers_map("providers", &map(&[("deepl", deepl.clone())])).unwrap();
        let s = &parsed[0].1;
        assert_eq!(parsed[0].0, "deepl");
        assert_eq!(
            (s.rate, s.capacity, s.max_in_flight),
            (Some(5.0), Some(2.0), Some(1))
        );
        assert_eq!(
            (s.max_items_per_batch, s.max_characters_per_batch),
            (Some(50), Some(30000))
        );
        assert!(s.array && s.has_bucket());
        assert_eq!(Map(s.entries()), deepl, "entries give back what was set");
        assert!(!ProviderSettings::default().has_bucket());
    }

    #[test]
    fn messages_name_the_path() {
        let e = err(map(&[("gemini", map(&[("rate", Number(0.0))]))]));
        assert_eq!(e.option, "providers.gemini.rate");
        assert_eq!(
            e.message,
            "providers.gemini.rate must be a finite number > 0 (got 0)"
        );
        let e = err(map(&[("g", map(&[("rat", Number(1.0))]))]));
        assert_eq!(e.option, "providers.g.rat");
        assert!(e
            .message
            .starts_with("unknown provider setting \"providers.g.rat\" (got 1)"));
        let e = err(map(&[("g", map(&[("batch", Text("list".into()))]))]));
        assert_eq!(
            e.message,
            "providers.g.batch must be \"array\" (got \"list\")"
        );
        let e = err(map(&[("g", map(&[("capacity", Number(1.5))]))]));
        assert_eq!(
            e.message,
            "providers.g.capacity must be an integer >= 1 (got 1.5)"
        );
        let e = err(map(&[("g", map(&[("charactersPerMinute", Number(-1.0))]))]));
        assert_eq!(
            e.message,
            "providers.g.charactersPerMinute must be a finite number >= 0 (got -1)"
        );
        let e = err(map(&[("g", Number(3.0))]));
        assert_eq!(
            (e.option.as_str(), e.message.as_str()),
            (
                "providers.g",
                "providers.g must be an object of provider settings (got 3)"
            )
        );
        let e = err(Text("x".into()));
        assert_eq!(
            e.message,
            "providers must be an object mapping a providerId to its own settings (got \"x\")"
        );
    }
}
