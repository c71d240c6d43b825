// mulberry32: a small seeded PRNG returning floats in [0, 1), the same sequence on every
// machine. Shared by the mock provider's fault injection and the tests' random cases.
// (bench/data.mjs keeps its own copy: the benchmark's service worker loads that module
// from a server that serves bench/, js/ and pkg/ only.)

/** A generator of floats in [0, 1) seeded with `seed`. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
