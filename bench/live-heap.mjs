// Section 1's pair (batch-pacer one call per paragraph, p-queue) measured in a lean
// process and in one that holds what `bench/run.mjs` holds besides: the o200k tokenizer
// of workload 11, tens of MB of live JS heap. The GC of a queue that allocates per
// paragraph (p-queue) depends on the heap around it; work in the module's memory does
// not. This shows how far the bench process's own heap moves section 1's ratio.
//
//   node bench/live-heap.mjs [--package DIR] [--items 100000] [--runs 5]
//
// Each run is a fresh child process per mode, the modes alternating; in a child, one
// warm-up round, then batch-pacer and p-queue once each (order alternating by run).
// Figures: the median of the runs, µs per paragraph.
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { paragraphs, item, LANGS, UNLIMITED } from "./data.mjs";
import { instantProvider } from "./providers.mjs";
import { overheadPQueue } from "./contenders.mjs";
import { median, fmt } from "./measure.mjs";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const { values: args } = parseArgs({
  options: {
    package: { type: "string", default: REPO },
    items: { type: "string", default: "100000" },
    runs: { type: "string", default: "5" },
    child: { type: "string" },
    first: { type: "string" },
  },
});
const n = Number(args.items);

async function child(mode, first) {
  if (mode === "heap") await import("gpt-tokenizer/encoding/o200k_base");
  const pacerModule = await import(pathToFileURL(join(args.package, "js", "index.js")).href);
  await pacerModule.default();
  const texts = paragraphs(n);
  const impls = {
    "batch-pacer": async () => {
      const pacer = new pacerModule.BatchPacer(instantProvider, UNLIMITED);
      await Promise.all(texts.map((text, i) => pacer.translate(item(text, LANGS[i % LANGS.length]))));
      pacer.dispose();
    },
    "p-queue": () => overheadPQueue(texts, instantProvider),
  };
  const order = first === "p-queue" ? ["p-queue", "batch-pacer"] : ["batch-pacer", "p-queue"];
  const result = {};
  for (const round of [0, 1]) {
    for (const name of order) {
      globalThis.gc();
      const started = performance.now();
      await impls[name]();
      if (round === 1) result[name] = ((performance.now() - started) * 1000) / n;
    }
  }
  globalThis.gc();
  result.heapMB = process.memoryUsage().heapUsed / 2 ** 20;
  process.stdout.write(JSON.stringify(result));
}

function parent() {
  const modes = ["lean", "heap"];
  const samples = Object.fromEntries(modes.map((m) => [m, []]));
  for (let run = 0; run < Number(args.runs); run++) {
    for (const mode of run % 2 ? [...modes].reverse() : modes) {
      const first = run % 2 ? "p-queue" : "batch-pacer";
      const out = spawnSync(
        process.execPath,
        ["--expose-gc", fileURLToPath(import.meta.url), "--child", mode, "--first", first, "--items", String(n), "--package", args.package],
        { encoding: "utf8", maxBuffer: 1 << 20 },
      );
      if (out.status !== 0) throw new Error(`child ${mode} failed: ${out.stderr}`);
      samples[mode].push(JSON.parse(out.stdout));
    }
  }
  console.log(`section 1's pair at ${n} paragraphs, median of ${args.runs} runs (a fresh process per run and mode)`);
  console.log("process                                 | heap held, MB | batch-pacer µs | p-queue µs | batch-pacer / p-queue");
  for (const mode of modes) {
    const s = samples[mode];
    const m = (key) => median(s.map((x) => x[key]));
    const label = mode === "lean" ? "lean (the package and p-queue only)" : "holding the o200k tokenizer (as run.mjs)";
    console.log(
      `${label.padEnd(39)} | ${fmt(m("heapMB"), 1).padStart(13)} | ${fmt(m("batch-pacer"), 2).padStart(14)} | ${fmt(m("p-queue"), 2).padStart(10)} | ${(m("batch-pacer") / m("p-queue")).toFixed(2)}x`,
    );
    console.log(`  runs: batch-pacer ${s.map((x) => fmt(x["batch-pacer"], 2)).join(", ")}; p-queue ${s.map((x) => fmt(x["p-queue"], 2)).join(", ")}`);
  }
}

if (args.child) await child(args.child, args.first);
else parent();
