// Runs the per-item workload of bench/compare-builds.mjs (200-character paragraphs over 5
// target languages, instant provider, one call per paragraph) through one build, three
// times, for an instruction count: wall time on a shared machine varies by more than the
// difference between two builds' code, the count under callgrind by about 2%.
//
//   valgrind --tool=callgrind node --single-threaded --no-liftoff bench/instructions.mjs <package dir> 20000
//   valgrind --tool=callgrind node --single-threaded --no-liftoff bench/instructions.mjs <package dir> 1
//
// Per item: (the first run's total - the second's) / (3 x 20,000). --no-liftoff counts the
// optimised wasm code from the start; --single-threaded keeps compilation and GC in the
// counted thread. The package dir holds js/ and a built pkg/, as for compare-builds.

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { paragraphs, item, LANGS, UNLIMITED } from "./data.mjs";
import { instantProvider } from "./providers.mjs";

const [dir, count = "20000"] = process.argv.slice(2);
if (dir === undefined) {
  console.error("usage: node bench/instructions.mjs <package dir> [items]");
  process.exit(2);
}
const module = await import(pathToFileURL(resolve(dir, "js", "index.js")).href);
await module.default();
const texts = paragraphs(Number(count));
for (let run = 0; run < 3; run++) {
  const pacer = new module.BatchPacer(instantProvider, UNLIMITED);
  await Promise.all(texts.map((text, i) => pacer.translate(item(text, LANGS[i % LANGS.length]))));
  pacer.dispose();
}
