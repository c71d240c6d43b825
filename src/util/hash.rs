//! Hashing for maps keyed by values that are already uniformly distributed
//! (SHA-256 digests, sequential ids): no need to pay for SipHash on every lookup.

use core::hash::{BuildHasherDefault, Hasher};
use std::collections::HashMap;

/// A hasher that folds its input with a multiply: enough for keys that are either
/// cryptographic digests or small sequential integers.
#[derive(Default, Clone, Copy)]
pub struct FoldHasher(u64);

impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.write_u64(u64::from_le_bytes(word.try_into().unwrap_or_default()));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut word = [0u8; 8];
            word[..tail.len()].copy_from_slice(tail);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by `u64` ids (sequential ids, or the first word of a digest).
///
/// The core only ever uses `IdMap<u64>`, whose values are slab keys' bits or indices:
/// each other key or value type would add its own copy of the table code to the .wasm.
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<FoldHasher>>;

/// The value under `id`. Not inlined: every index in the core looks up through this one
/// copy of the probe code.
#[inline(never)]
pub fn look_up(map: &IdMap<u64>, id: u64) -> Option<u64> {
    map.get(&id).copied()
}
