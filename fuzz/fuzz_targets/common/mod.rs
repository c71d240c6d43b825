//! Helpers shared by the fuzz targets: a byte reader that never fails (it reads zeros once
//! the input is exhausted) and generators of hostile option values.
#![allow(dead_code)]

use batch_pacer::options::OPTION_NAMES;
use batch_pacer::{Compat, Item, OptionValue};

/// An item of the targets' one compatibility group ("p", en → de, an LLM).
pub fn item(text: &str, priority: f64) -> Item<'_> {
    Item {
        text,
        compat: Compat {
            provider_id: "p",
            source_lang: "en",
            target_lang: "de",
            context: "",
            llm: true,
            scope: "",
        },
        priority,
        tokens: None,
    }
}

/// Whether the known issue `name` is to be skipped: `FUZZ_SKIP_KNOWN` holds a comma
/// separated list of names (or `all`). By default every property is checked, so a known
/// issue fails the run until it is fixed; skipping it lets a long run explore the rest.
pub fn skip_known(name: &str) -> bool {
    static SKIP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let skip = SKIP.get_or_init(|| std::env::var("FUZZ_SKIP_KNOWN").unwrap_or_default());
    skip.split(',')
        .any(|s| s.trim() == name || s.trim() == "all")
}

/// Reads structured values from the fuzzer's bytes.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((first, rest)) => {
                self.data = rest;
                *first
            }
            None => 0,
        }
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        for b in &mut bytes {
            *b = self.u8();
        }
        u64::from_le_bytes(bytes)
    }

    /// Up to `max` raw bytes.
    pub fn take(&mut self, max: usize) -> &'a [u8] {
        let n = usize::from(self.u8()).min(max).min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// A string of up to `max` bytes (invalid UTF-8 is replaced).
    pub fn string(&mut self, max: usize) -> String {
        String::from_utf8_lossy(self.take(max)).into_owned()
    }

    /// A number from a list of hostile values, or any bit pattern.
    pub fn number(&mut self) -> f64 {
        const SPECIAL: [f64; 24] = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.25,
            0.5,
            1.5,
            2.0,
            4.0,
            100.0,
            1000.0,
            1e6,
            1e12,
            9_007_199_254_740_993.0,
            18_446_744_073_709_551_616.0,
            1e300,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1e300,
        ];
        let pick = self.u8();
        match SPECIAL.get(usize::from(pick) % 32) {
            Some(value) => *value,
            None if pick & 0x80 == 0 => f64::from(self.u16()),
            None => f64::from_bits(self.u64()),
        }
    }

    /// Any option value, hostile ones included.
    pub fn option_value(&mut self) -> OptionValue {
        match self.u8() % 9 {
            0 => OptionValue::Undefined,
            1 => OptionValue::Null,
            2 => OptionValue::Bool(self.bool()),
            3 => OptionValue::Text(self.string(16)),
            4 => OptionValue::Other(self.string(8)),
            5 => self.provider_map(),
            _ => OptionValue::Number(self.number()),
        }
    }

    /// A providerId as the targets use them ("p", "q"), one no item uses, an empty one or
    /// any string.
    fn provider_id(&mut self) -> String {
        match self.u8() % 6 {
            0 | 1 => "p".to_owned(),
            2 => "q".to_owned(),
            3 => "r".to_owned(),
            4 => String::new(),
            _ => self.string(6),
        }
    }

    /// An object, as `fallbackProviders` takes: mostly providerId → providerId (valid,
    /// mapped to itself, with a cycle), sometimes with a value of another type.
    fn provider_map(&mut self) -> OptionValue {
        let n = usize::from(self.u8() % 4);
        let entries = (0..n)
            .map(|_| {
                let from = self.provider_id();
                let to = match self.u8() % 8 {
                    0 => OptionValue::Null,
                    1 => OptionValue::Number(self.number()),
                    2 => OptionValue::Other(self.string(8)),
                    _ => OptionValue::Text(self.provider_id()),
                };
                (from, to)
            })
            .collect();
        OptionValue::Map(entries)
    }

    /// An option name: a real one most of the time, else a near miss or garbage.
    pub fn option_name(&mut self) -> String {
        let pick = usize::from(self.u8());
        if let Some(name) = OPTION_NAMES.get(pick % (OPTION_NAMES.len() + 4)) {
            return (*name).to_owned();
        }
        match pick % 4 {
            0 => OPTION_NAMES[pick % OPTION_NAMES.len()].to_uppercase(),
            1 => format!("{} ", OPTION_NAMES[pick % OPTION_NAMES.len()]),
            2 => String::new(),
            _ => self.string(12),
        }
    }

    /// A patch of up to `max` entries.
    pub fn patch(&mut self, max: usize) -> Vec<(String, OptionValue)> {
        let n = usize::from(self.u8()) % (max + 1);
        (0..n)
            .map(|_| (self.option_name(), self.option_value()))
            .collect()
    }
}
