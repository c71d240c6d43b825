//! Unambiguous item keys over length-prefixed fields: SHA-256 for the persistent store
//! (stable, documented) and keyed SipHash in memory.
//!
//! Byte layout (stable across versions): for each field in the order `providerId`,
//! `sourceLang`, `targetLang`, `context`, `llm`, `text`, and `scope` when it is not
//! empty, the field's UTF-8 byte length as an 8-byte big-endian integer, then its bytes;
//! `llm` is the single byte `0x01` or `0x00`. An item without a scope keeps the key it
//! had before scopes existed.
//! Length prefixes make every field boundary explicit, so no choice of field contents
//! (separators, `|`, NUL bytes) can make two different items share a key.

use core::hash::Hasher;

use sha2::{Digest, Sha256};
use siphasher::sip128::{Hasher128, SipHasher13};

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
    /// Whom the item belongs to (a tab, an origin): items of different scopes never
    /// share a batch, a provider item or a cache entry. Never sent to the provider.
    pub scope: &'a str,
}

fn push_field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

impl Compat<'_> {
    /// Appends the length-prefixed encoding of these fields to `out`: every field that
    /// groups, dedup and the in-memory keys tell apart, the scope included.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_shared(out);
        self.encode_scope(out);
    }

    /// The fields every key has held since the first version.
    fn encode_shared(&self, out: &mut Vec<u8>) {
        push_field(out, self.provider_id.as_bytes());
        push_field(out, self.source_lang.as_bytes());
        push_field(out, self.target_lang.as_bytes());
        push_field(out, self.context.as_bytes());
        push_field(out, &[u8::from(self.llm)]);
    }

    /// The scope, as one more field when it is not empty: fields are self-delimiting, so
    /// an encoding with it never equals one without it, and an item without a scope
    /// keeps the encoding (and the persistent key) it always had.
    fn encode_scope(&self, out: &mut Vec<u8>) {
        if !self.scope.is_empty() {
            push_field(out, self.scope.as_bytes());
        }
    }
}

/// The persistent key of an item: SHA-256 over its length-prefixed fields. The scope
/// comes after the text (the documented layout), where the in-memory encoding has it
/// before: each is unambiguous on its own.
pub fn item_key(compat: &Compat<'_>, text: &str) -> [u8; 32] {
    let mut encoded =
        Vec::with_capacity(88 + compat.context.len() + text.len() + compat.scope.len());
    compat.encode_shared(&mut encoded);
    push_field(&mut encoded, text.as_bytes());
    compat.encode_scope(&mut encoded);
    Sha256::digest(&encoded).into()
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

/// The in-memory identity of an item (dedup and the LRU): 128 bits of SipHash-1-3 over
/// the same length-prefixed fields, under a random key per pacer. Without the key, no
/// one can make two items collide on purpose; by chance it takes about 2^64 distinct
/// items, far beyond any queue or cache this library holds. SHA-256, the slower hash,
/// is computed only for the persistent store's keys.
/// Two words rather than a `u128`, whose 16-byte alignment would pad every job.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ShortKey(pub [u64; 2]);

impl core::hash::Hash for ShortKey {
    // Word by word: the derived impl hashes an array as a length-prefixed byte slice,
    // which goes through the hasher's byte loop.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0[0]);
        state.write_u64(self.0[1]);
    }
}

/// Makes [`ShortKey`]s under one secret key.
#[derive(Clone, Debug)]
pub struct Keyer(SipHasher13);

impl Keyer {
    /// A keyer whose key is derived from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut state = seed;
        Keyer(SipHasher13::new_with_keys(
            splitmix64(&mut state),
            splitmix64(&mut state),
        ))
    }

    /// This keyer with `compat` absorbed; finish it with [`Keyer::key`].
    pub fn primed(&self, compat: &Compat<'_>) -> Keyer {
        let mut encoded = Vec::with_capacity(64 + compat.context.len());
        compat.encode(&mut encoded);
        self.primed_encoded(&encoded)
    }

    /// [`Keyer::primed`] for fields already encoded (see [`Compat::encode`]).
    pub fn primed_encoded(&self, encoded: &[u8]) -> Keyer {
        let mut sip = self.0;
        sip.write(encoded);
        Keyer(sip)
    }

    /// A keyed 64-bit hash of encoded compatibility fields (see [`Compat::encode`]), to
    /// find a group by its fields in an id map.
    pub fn fields_word(&self, encoded: &[u8]) -> u64 {
        let mut sip = self.0;
        sip.write(encoded);
        sip.finish128().h1
    }

    /// The key of `text` under a keyer primed with its compatibility fields.
    pub fn key(&self, text: &str) -> ShortKey {
        let mut sip = self.0;
        sip.write(&(text.len() as u64).to_be_bytes());
        sip.write(text.as_bytes());
        let hash = sip.finish128();
        ShortKey([hash.h1, hash.h2])
    }
}

/// Spreads a seed over 64-bit words (Steele, Lea and Flood's SplitMix64).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
            scope: "",
        }
    }

    fn scoped<'a>(scope: &'a str) -> Compat<'a> {
        Compat {
            scope,
            ..compat("openai", "en", "de", "", true)
        }
    }

    #[test]
    fn test_vector_is_stable() {
        // docs/reference.md (Cache keys) documents this vector; changing it breaks every persisted cache.
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
    fn a_scope_is_a_seventh_field_after_the_text() {
        // docs/reference.md documents this vector too.
        let key = item_key(&scoped("7"), "Hello, world!");
        let mut manual = Vec::new();
        let fields = [
            &b"openai"[..],
            b"en",
            b"de",
            b"",
            &[1u8],
            b"Hello, world!",
            b"7",
        ];
        for field in fields {
            manual.extend_from_slice(&(field.len() as u64).to_be_bytes());
            manual.extend_from_slice(field);
        }
        let expected: [u8; 32] = Sha256::digest(&manual).into();
        assert_eq!(key, expected);
        assert_eq!(
            to_hex(&key),
            "a4c990f76ff643229968f3385bf760d5bf2c3ef0c7e4fffc971516781a440d1d"
        );
        // An empty scope is no scope: the key of the first vector.
        assert_eq!(
            item_key(&scoped(""), "Hello, world!"),
            item_key(&compat("openai", "en", "de", "", true), "Hello, world!")
        );
    }

    #[test]
    fn scopes_separate_in_memory_keys_and_encodings() {
        let keyer = Keyer::new(7);
        let key = |c: Compat<'_>, text: &str| keyer.primed(&c).key(text);
        let keys = [
            key(scoped(""), "Hello"),
            key(scoped("1"), "Hello"),
            key(scoped("2"), "Hello"),
            // The scope's bytes cannot pass for the text's, nor the other way round.
            key(scoped("Hello"), ""),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let encoded = |c: Compat<'_>| {
            let mut out = Vec::new();
            c.encode(&mut out);
            out
        };
        assert_ne!(encoded(scoped("1")), encoded(scoped("2")));
        assert_ne!(encoded(scoped("1")), encoded(scoped("")));
    }

    #[test]
    fn short_keys_separate_fields_and_depend_on_the_secret() {
        let keyer = Keyer::new(7);
        let key = |c: Compat<'_>, text: &str| keyer.primed(&c).key(text);
        let keys = [
            key(compat("a", "b", "c", "d", true), "e"),
            key(compat("a|b", "", "c", "d", true), "e"),
            key(compat("a", "bc", "", "d", true), "e"),
            key(compat("a", "b", "c", "", true), "de"),
            key(compat("a", "b", "c", "d", false), "e"),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(keys[0], key(compat("a", "b", "c", "d", true), "e"));
        let other = Keyer::new(8)
            .primed(&compat("a", "b", "c", "d", true))
            .key("e");
        assert_ne!(keys[0], other);
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
