// Accuracy of the built-in token estimate (src/pacing/estimate.rs) against a real tokenizer:
// o200k_base (GPT-4o's encoding, from the gpt-tokenizer devDependency) on the
// multilingual sample bench/estimate/sample.json, side by side with characters / 4.
// The Rust estimate runs natively through `cargo run --release --example
// estimate_tokens` (no wasm build needed).
//
//   node bench/estimate-tokens.mjs               # the table
//   node bench/estimate-tokens.mjs --rust-table  # the subset table for src/pacing/estimate.rs's tests
//
// Columns: ratio = median of estimate / true over the language's paragraphs (above 1 is
// an overestimate), error = median of |estimate / true - 1|, total = sum of estimates /
// sum of true counts (what a token budget sees over many calls).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { paragraphs } = JSON.parse(readFileSync(join(root, 'bench/estimate/sample.json'), 'utf8'));

function rustEstimates(texts) {
  const run = spawnSync('cargo', ['run', '--quiet', '--release', '--example', 'estimate_tokens'], {
    cwd: root,
    input: texts.map((t) => JSON.stringify(t)).join('\n') + '\n',
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'inherit'],
    maxBuffer: 1 << 26,
  });
  if (run.status !== 0) throw new Error(`estimate_tokens example exited with ${run.status ?? run.signal}`);
  const values = run.stdout.trim().split('\n').map(Number);
  if (values.length !== texts.length || values.some((v) => !Number.isFinite(v))) {
    throw new Error(`estimate_tokens printed ${values.length} numbers for ${texts.length} texts`);
  }
  return values;
}

// Map.groupBy is Node 21+; the package supports Node 20.
const groupBy = (items, key) => {
  const groups = new Map();
  for (const item of items) {
    const k = key(item);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(item);
  }
  return groups;
};

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
};

// Code points, not UTF-16 units, so that an emoji counts as one character here as it
// does in the Rust test's chars / 4.
const charsOver4 = (text) => [...text].length / 4;

const estimates = rustEstimates(paragraphs.map((p) => p.text));
const rows = paragraphs.map((p, i) => ({ ...p, truth: countTokens(p.text), ours: estimates[i], naive: charsOver4(p.text) }));

if (process.argv.includes('--rust-table')) {
  // The first and the last paragraph of each language, as the unit test embeds them.
  const byLang = groupBy(rows, (r) => r.lang);
  for (const group of byLang.values()) {
    for (const r of new Set([group[0], group.at(-1)])) {
      console.log(`        (${JSON.stringify(r.lang)}, ${JSON.stringify(r.text)}, ${r.truth}),`);
    }
  }
  process.exit(0);
}

function figures(group) {
  const f = (key) => ({
    ratio: median(group.map((r) => r[key] / r.truth)),
    error: median(group.map((r) => Math.abs(r[key] / r.truth - 1))),
    total: group.reduce((s, r) => s + r[key], 0) / group.reduce((s, r) => s + r.truth, 0),
  });
  return { n: group.length, tokens: group.reduce((s, r) => s + r.truth, 0), ours: f('ours'), naive: f('naive') };
}

const pct = (x) => `${Math.round(x * 100)}%`;
const line = (name, g) =>
  `| ${name} | ${g.n} | ${g.tokens} | ${g.ours.ratio.toFixed(2)} | ${pct(g.ours.error)} | ${g.ours.total.toFixed(2)} | ${g.naive.ratio.toFixed(2)} | ${pct(g.naive.error)} | ${g.naive.total.toFixed(2)} |`;

console.log('Token estimate vs o200k_base (gpt-tokenizer), bench/estimate/sample.json');
console.log('');
console.log('| language | paragraphs | tokens | estimate ratio | estimate error | estimate total | chars/4 ratio | chars/4 error | chars/4 total |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const [lang, group] of groupBy(rows, (r) => r.lang)) console.log(line(lang, figures(group)));
console.log(line('**all**', figures(rows)));
