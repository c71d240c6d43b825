//! Unambiguous item keys: SHA-256 over length-prefixed fields.
//!
//! Byte layout (stable across versions): for each field in the order `providerId`,
//! `sourceLang`, `targetLang`, `context`, `llm`, `text`, the field's UTF-8 byte length as
//! an 8-byte big-endian integer, then its bytes; `llm` is the single byte `0x01` or `0x00`.
//! Length prefixes make every field boundary explicit, so no choice of field contents
//! (separators, `|`, NUL bytes) can make two different items share a key.

use sha2::{Digest, Sha256};

/// The fields that decide whether two items may share a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Compat<'a> {
    /// The provider; a 429 pauses every call to it.
    pub provider_id: &'a str,
    /// Source language code.
    pub source_lang: &'a str,
    /// Target language code.
    pub target_lang: &'a str,
    /// Context given to the provider (page title, summary ...).
    pub context: &'a str,
    /// Whether the provider is an LLM (only LLM items are batched).
    pub llm: bool,
}

fn push_field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

impl Compat<'_> {
    /// Appends the length-prefixed encoding of these fields to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        push_field(out, self.provider_id.as_bytes());
        push_field(out, self.source_lang.as_bytes());
        push_field(out, self.target_lang.as_bytes());
        push_field(out, self.context.as_bytes());
        push_field(out, &[u8::from(self.llm)]);
    }

    /// A hasher that has absorbed these fields; clone it and finish with [`finish_key`].
    pub fn hasher(&self) -> Sha256 {
        let mut encoded = Vec::with_capacity(64 + self.context.len());
        self.encode(&mut encoded);
        Sha256::new_with_prefix(&encoded)
    }
}

/// Completes an item key from a hasher returned by [`Compat::hasher`].
pub fn finish_key(mut compat_hasher: Sha256, text: &str) -> [u8; 32] {
    compat_hasher.update((text.len() as u64).to_be_bytes());
    compat_hasher.update(text.as_bytes());
    compat_hasher.finalize().into()
}

/// The full key of an item.
pub fn item_key(compat: &Compat<'_>, text: &str) -> [u8; 32] {
    finish_key(compat.hasher(), text)
}

/// Lowercase hex of a digest.
pub fn to_hex(digest: &[u8; 32]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

/// The first 128 bits of a digest: the in-memory identity of an item. Collisions need
/// about 2^64 distinct items, far beyond any queue or cache this library holds.
/// Two words rather than a `u128`, whose 16-byte alignment would pad every job.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShortKey(pub [u64; 2]);

/// The [`ShortKey`] of a digest.
pub fn short(digest: &[u8; 32]) -> ShortKey {
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[at..at + 8]);
        u64::from_be_bytes(bytes)
    };
    ShortKey([word(0), word(8)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compat<'a>(p: &'a str, s: &'a str, t: &'a str, c: &'a str, llm: bool) -> Compat<'a> {
        Compat {
            provider_id: p,
            source_lang: s,
            target_lang: t,
            context: c,
            llm,
        }
    }

    #[test]
    fn test_vector_is_stable() {
        // The README documents this vector; changing it breaks every persisted cache.
        let key = item_key(&compat("openai", "en", "de", "", true), "Hello, world!");
        let mut manual = Vec::new();
        for field in [&b"openai"[..], b"en", b"de", b"", &[1u8], b"Hello, world!"] {
            manual.extend_from_slice(&(field.len() as u64).to_be_bytes());
            manual.extend_from_slice(field);
        }
        let expected: [u8; 32] = Sha256::digest(&manual).into();
        assert_eq!(key, expected);
        assert_eq!(
            to_hex(&key),
            "9b8ea9be5963e961c9631c9bfedf9b193acd9eb660007d3d18a59ae4fd1c8964"
        );
    }

    #[test]
    fn fields_never_bleed_into_each_other() {
        let keys = [
            item_key(&compat("a", "b", "c", "d", true), "e"),
            item_key(&compat("a|b", "", "c", "d", true), "e"),
            item_key(&compat("a", "bc", "", "d", true), "e"),
            item_key(&compat("a", "b", "c", "", true), "de"),
            item_key(&compat("a", "b", "c", "d", false), "e"),
            item_key(&compat("a", "b", "c", "d\0\0\0\0\0\0\0\u{1}e", true), ""),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
