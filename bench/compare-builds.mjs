// Per-item cost of two builds of the package side by side, in one Node process: run
// by run they alternate, so the load of a shared machine weighs on both alike.
//
//   node --expose-gc bench/compare-builds.mjs <baseline dir> <candidate dir> [--items 10000] [--runs 11]
//
// Each dir is a package root holding js/ and a built pkg/ (this checkout after
// `npm run build`, or another commit's checkout: `git worktree add /tmp/base <rev>`,
// then `npm ci && npm run build` inside it). Workload 1 of bench/run.mjs: 200-character
// paragraphs over 5 target languages, instant provider, no pacing limit; once with one
// call per paragraph (batchDelayMs 0) and once with the default batching.

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { paragraphs, item, LANGS, UNLIMITED, UNLIMITED_BATCHED } from "./data.mjs";
import { instantProvider } from "./providers.mjs";
import { sideBySide, table, ratio, fmt } from "./measure.mjs";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { items: { type: "string", default: "10000" }, runs: { type: "string", default: "11" } },
});
if (positionals.length !== 2) {
  console.error("usage: node bench/compare-builds.mjs <baseline dir> <candidate dir> [--items N] [--runs N]");
  process.exit(2);
}
const items = Number(args.items);
const runs = Number(args.runs);

const builds = [];
for (const dir of positionals) {
  const module = await import(pathToFileURL(resolve(dir, "js", "index.js")).href);
  await module.default();
  builds.push({ dir, module });
}

const texts = paragraphs(items);

async function perItem(module, options) {
  const pacer = new module.BatchPacer(instantProvider, options);
  const started = performance.now();
  await Promise.all(texts.map((text, i) => pacer.translate(item(text, LANGS[i % LANGS.length]))));
  const us = ((performance.now() - started) * 1000) / items;
  pacer.dispose();
  globalThis.gc?.();
  return us;
}

const rows = [];
for (const [label, options] of [["one call per paragraph", UNLIMITED], ["default batching (4 per call)", UNLIMITED_BATCHED]]) {
  const results = await sideBySide(
    builds.map(({ dir, module }) => ({ name: dir, run: () => perItem(module, options) })),
    { runs, warmup: 1 },
  );
  const [baseline, candidate] = builds.map(({ dir }) => results.get(dir).value);
  rows.push([label, fmt(baseline, 2), fmt(candidate, 2), ratio(candidate, baseline)]);
}

console.log(
  table({
    title: `Per-item cost, ${items} paragraphs, Node ${process.version}`,
    columns: ["workload", "baseline µs/item", "candidate µs/item", "candidate / baseline"],
    rows,
    notes: [
      `baseline: ${positionals[0]}; candidate: ${positionals[1]}.`,
      `Median of ${runs} runs each, builds alternating run by run, one discarded warm-up round.`,
    ],
  }),
);
