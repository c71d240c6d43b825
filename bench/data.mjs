// Deterministic inputs of the benchmarks. No Node imports: the Chromium service worker
// loads this module too.

/** The five target languages of workload 1: five compatibility keys. */
export const LANGS = ["de", "fr", "es", "ja", "zh"];

const FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ";

/** `n` distinct paragraphs of exactly `length` characters. */
export function paragraphs(n, length = 200) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    let text = `Paragraph ${i} of the article. `;
    while (text.length < length) text += FILLER;
    out[i] = text.slice(0, length);
  }
  return out;
}

/** A translate item as an extension's content script would send it. */
export function item(text, targetLang = "de", extra) {
  return { text, sourceLang: "en", targetLang, providerId: "bench", ...extra };
}

/**
 * A small seeded PRNG (mulberry32): the same sequence on every machine. A copy of
 * extension-demo/prng.mjs: this module must load in the benchmark's service worker,
 * whose server serves bench/, js/ and pkg/ only.
 */
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

const WORDS = (
  "the of and to in is that for it as was with be by on not he this are or his from at which " +
  "but have an they you were her she there been one all we their has would when if so no will " +
  "more other its into only time could new them about than may first any like these some two " +
  "translation browser extension paragraph quota request model provider language reader page"
).split(" ");

function sentenceText(random, length) {
  let text = "";
  let capital = true;
  while (text.length < length) {
    let word = WORDS[Math.floor(random() * WORDS.length)];
    if (capital) word = word[0].toUpperCase() + word.slice(1);
    capital = random() < 0.12;
    text += (text ? " " : "") + word + (capital ? "." : "");
  }
  text = text.slice(0, length).trimEnd();
  return /[.!?]$/.test(text) ? text : text.replace(/.$/, ".");
}

/**
 * A long-form web article in document order: an h1, sections of an h2 followed by body
 * paragraphs (mostly 120–600 characters, some up to 900), a bulleted list now and then
 * (items of 20–160 characters), a few captions and quotes. Lengths span 20–900.
 * @returns {{ kind: string, text: string }[]}
 */
export function article(seed = 1, sections = 24) {
  const random = prng(seed);
  const between = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
  const blocks = [{ kind: "h1", text: sentenceText(random, between(40, 80)) }];
  for (let s = 0; s < sections; s++) {
    blocks.push({ kind: "h2", text: sentenceText(random, between(20, 60)) });
    const body = between(3, 6);
    for (let p = 0; p < body; p++) {
      const long = random() < 0.18;
      blocks.push({ kind: "p", text: sentenceText(random, long ? between(600, 900) : between(120, 420)) });
    }
    if (random() < 0.45) {
      const items = between(3, 7);
      for (let i = 0; i < items; i++) blocks.push({ kind: "li", text: sentenceText(random, between(20, 160)) });
    }
    if (random() < 0.3) blocks.push({ kind: "figcaption", text: sentenceText(random, between(30, 140)) });
  }
  return blocks;
}

/** Subtitle cues of 15–80 characters, one every `everyMs` milliseconds. */
export function subtitleCues(n, everyMs = 250, seed = 7) {
  const random = prng(seed);
  const cues = [];
  for (let i = 0; i < n; i++) {
    const length = 15 + Math.floor(random() * 66);
    cues.push({ at: i * everyMs, text: `${i}: ${sentenceText(random, length)}` });
  }
  return cues;
}

/** Workload 1's pacer settings: no pacing limit, no batching window, no cache. */
export const UNLIMITED = Object.freeze({ rate: 1e9, capacity: 1e9, batchDelayMs: 0, cacheEntries: 0 });

/**
 * Workload 1 with the default batching (4 items / 1000 characters per call): every batch
 * fills by count at once, since the paragraph counts are multiples of 4 per language.
 */
export const UNLIMITED_BATCHED = Object.freeze({ rate: 1e9, capacity: 1e9, cacheEntries: 0 });
