// The batch-pacer benchmark suite: eight workloads, each printed as one Markdown table
// (workload 5 as two), every table measured side by side in one run: implementations
// alternate run by run, and each figure is the median of its runs.
//
//   npm run bench                          # scripts/bench.sh: build, core bench, then this
//   node --expose-gc bench/run.mjs [--package DIR] [--engine-output FILE]
//   node bench/run.mjs --smoke             # tiny inputs, one run each, no Chromium, no files
//
// --package DIR      the installed batch-pacer to measure (default: this repository's js/
//                    and pkg/ after `npm run build`)
// --no-chromium      skip the service-worker rows (page-registered and extension)
// --only 1,4         run these workloads only (11: "Models that cannot batch", whose
//                    real-model rows need LLAMA_SERVER and LLAMA_MODEL from scripts/llama-setup.sh)
// --sizes 1000,5000  workload 1's paragraph counts
// --baseline DIR     another build's package root (its js/ and built pkg/: a worktree of an
//                    earlier commit after `npm run build`), measured beside this one in
//                    workloads 11 (the real model), 13 ("Adversarial replies"), 14
//                    ("Clients and timeouts", rows b and c), 15 ("Providers, pools
//                    and arrays") and 16 ("A quota shared with other clients")
// --skip-unbounded   workload 11 without its rows b (one call per paragraph without the
//                    output bound: about 20 minutes of CPU)
// --write           with --only: replace those workloads' sections of bench/results.md
//                    (each still measured side by side in its one run), noted in its header;
//                    0 (the core engine) takes its figures from --engine-output
// A full run writes bench/results.md and bench/quota.svg (--smoke and --only write nothing,
// but --only with --write).

import { execFile as execFileCb, execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, existsSync, readdirSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs, promisify } from "node:util";
import { gzipSync } from "node:zlib";

import { paragraphs, item, LANGS, UNLIMITED, UNLIMITED_BATCHED, article, subtitleCues } from "./data.mjs";
import { instantProvider, quotaProvider, packedCalls, packedCallsAnyOrder } from "./providers.mjs";
import { sideBySide, table, ratio, fmt, median } from "./measure.mjs";
import { privateClock, globalClock, follow, runUntil } from "./virtual-time.mjs";
import {
  overheadDirect,
  overheadPQueue,
  overheadBottleneck,
  overheadDataLoader,
  quotaBottleneck,
  quotaPQueue,
} from "./contenders.mjs";
import { SealedWhenDue } from "./sealed-queue.mjs";
import { openServiceWorkerHost, chromiumAvailable } from "./chromium.mjs";
import { extensionServiceWorkerColdStart } from "./extension-sw.mjs";
import { quotaChart } from "./chart.mjs";
import { sizeFloor } from "./size-floor.mjs";
import { timeToFirstParagraph } from "./workload-first-paragraph.mjs";
import { layoutsUnderDamagedReplies } from "./workload-damaged-replies.mjs";
import { requestsAndTokens } from "./workload-requests-tokens.mjs";
import { sporadic429s } from "./workload-sporadic-429s.mjs";
import { modelsThatCannotBatch } from "./workload-cannot-batch.mjs";
import { fallbackProviders } from "./workload-fallback-providers.mjs";
import { adversarialReplies } from "./workload-adversarial-replies.mjs";
import { clientsAndTimeouts } from "./workload-clients-timeouts.mjs";
import { providersPoolsArrays } from "./workload-providers-pools-arrays.mjs";
import { sharedQuota } from "./workload-shared-quota.mjs";

const execFile = promisify(execFileCb);
const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
const REPO = fileURLToPath(new URL("..", import.meta.url));

const { values: args } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    package: { type: "string", default: REPO },
    "engine-output": { type: "string" },
    "no-chromium": { type: "boolean", default: false },
    only: { type: "string" },
    write: { type: "boolean", default: false },
    sizes: { type: "string" },
    baseline: { type: "string" },
    "skip-unbounded": { type: "boolean", default: false },
  },
});
const SMOKE = args.smoke;
const PACKAGE_DIR = args.package;
const ENTRY_URL = pathToFileURL(join(PACKAGE_DIR, "js", "index.js")).href;

const CONFIG = SMOKE
  ? {
      runs: 1, warmup: 0, overheadSizes: [200], quotaParagraphs: 24, articleSections: 2, cues: 16,
      lateParagraphs: 16, coldStartRuns: 1, swColdStartRuns: 0, memoryItems: 2000, memoryRuns: 1,
      chromium: false,
    }
  : {
      runs: 5, warmup: 1, overheadSizes: [10_000, 100_000], quotaParagraphs: 1000, articleSections: 24,
      cues: 240, lateParagraphs: 200, coldStartRuns: 9, swColdStartRuns: 5, memoryItems: 100_000, memoryRuns: 5,
      chromium: !args["no-chromium"] && chromiumAvailable(),
    };

if (args.sizes) CONFIG.overheadSizes = args.sizes.split(",").map(Number);

const pacerModule = await import(ENTRY_URL);
await pacerModule.default();
const { BatchPacer } = pacerModule;

const LATENCY_MS = 300;
const BATCHING = { maxItems: 4, maxChars: 1000 }; // the defaults: 4 items / 1000 characters
const whole = (count) => fmt(Math.round(count)); // counts are medians: print them whole
const mean = (values) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);
const runsNote = (what = "runs") => `Each figure: median of ${CONFIG.runs} ${what}, implementations alternating run by run.`;

const sections = [];
function report(markdown) {
  console.log(markdown);
  sections.push(markdown);
}

// ---------------------------------------------------------------------------------------
// Virtual-time simulation shared by workloads 2, 3 and 4
// ---------------------------------------------------------------------------------------

/** A BatchPacer on the simulation's private clock. */
const pacerFlow = (options) => ({ pacerClock, provider }) => {
  const pacer = new BatchPacer(provider, { ...options, clock: pacerClock });
  return { submit: (text) => pacer.translate(item(text)), dispose: () => pacer.dispose() };
};

/** The Read Frog emulation on the simulation's clock. */
const sealedFlow = (settings) => ({ clock, provider }) => {
  const queue = new SealedWhenDue(provider, { ...settings, clock });
  return { submit: (text) => queue.translate(item(text)) };
};

/**
 * Runs one flow against a provider with `quota` in virtual time. `texts` arrive at the
 * times `at` (ms; all at 0 when omitted). `setup({ clock, pacerClock, provider })`
 * returns `{ submit(text) }` or, for contenders given the whole list, `{ promises }`.
 * Libraries that read the global clock need `globalTimers`.
 */
async function simulate({ quota, texts, at, setup, globalTimers = false }) {
  const { clock, pacerClock, uninstall } = globalTimers ? globalClock() : privateClock();
  try {
    const server = quotaProvider(clock, { latencyMs: LATENCY_MS, ...quota });
    const flow = setup({ clock, pacerClock, provider: server.provider, texts });
    const arrive = (text, ms) =>
      new Promise((resolve, reject) => clock.setTimeout(() => flow.submit(text).then(resolve, reject), ms));
    const promises = flow.promises ?? texts.map((text, i) => (at ? arrive(text, at[i]) : flow.submit(text)));
    const state = follow(clock, promises, at);
    await runUntil(clock, () => state.pending === 0, { stepMs: 5000 });
    flow.dispose?.();
    return {
      completedMs: state.completedAt,
      failed: state.failed,
      calls: server.log.calls,
      rateLimited: server.log.rateLimited,
      itemsPerCall: mean(server.log.succeeded.map((s) => s.items)),
      meanWaitMs: mean(state.waits),
    };
  } finally {
    uninstall();
  }
}

// ---------------------------------------------------------------------------------------
// Workload 1: scheduling overhead
// ---------------------------------------------------------------------------------------

async function timed(count, run) {
  const started = performance.now();
  const calls = await run();
  return { usPerItem: ((performance.now() - started) * 1000) / count, calls };
}

async function paced(texts, options = UNLIMITED) {
  const pacer = new BatchPacer(instantProvider, options);
  await Promise.all(texts.map((text, i) => pacer.translate(item(text, LANGS[i % LANGS.length]))));
  const calls = pacer.stats().providerCalls;
  pacer.dispose();
  return calls;
}

async function schedulingOverhead() {
  const FLOOR = "direct provider calls (floor)";
  const SW_FLOOR = "direct provider calls (floor), Chromium service worker";
  const names = [
    FLOOR, "batch-pacer", "p-queue (pacing only)", "Bottleneck (pacing only)", "DataLoader (batching only, 4 per batch)",
    "batch-pacer, default batching (4 per call)",
  ];
  const bySize = new Map();
  for (const n of CONFIG.overheadSizes) {
    const texts = paragraphs(n);
    const run = (fn) => () => timed(n, fn);
    const results = await sideBySide(
      [
        { name: names[0], run: run(() => overheadDirect(texts, instantProvider)) },
        { name: names[1], run: run(() => paced(texts)) },
        { name: names[2], run: run(() => overheadPQueue(texts, instantProvider)) },
        // Bottleneck waits a timer turn per job, so a warm-up round would only cost minutes.
        { name: names[3], run: run(() => overheadBottleneck(texts, instantProvider)), warmup: false },
        { name: names[4], run: run(() => overheadDataLoader(texts, instantProvider)) },
        { name: names[5], run: run(() => paced(texts, UNLIMITED_BATCHED)) },
      ],
      CONFIG,
    );
    // Every run's figure, in the console only: the spread behind each median.
    for (const [name, { samples }] of results) {
      console.log(`${n} ${name}: ${samples.map((s) => fmt(s.usPerItem, 2)).join(" ")} µs/item`);
    }
    bySize.set(n, results);
  }

  let chromiumVersion;
  if (CONFIG.chromium) {
    names.push(SW_FLOOR, "batch-pacer, Chromium service worker", "batch-pacer, default batching, Chromium service worker");
    const host = await openServiceWorkerHost(PACKAGE_DIR);
    chromiumVersion = host.version;
    try {
      await host.register("overhead");
      for (const n of CONFIG.overheadSizes) {
        const ask = (impl) => () => host.ask("overhead", { type: "overhead", impl, n });
        const results = await sideBySide(
          [
            { name: names[6], run: ask("direct") },
            { name: names[7], run: ask("pacer") },
            { name: names[8], run: ask("batched") },
          ],
          CONFIG,
        );
        for (const [name, value] of results) bySize.get(n).set(name, value);
      }
      await host.unregister("overhead");
    } finally {
      await host.close();
    }
  }

  const sizes = CONFIG.overheadSizes;
  const label = (n) => (n >= 1000 ? `${n / 1000}k` : `${n}`);
  const rows = names.map((name) => {
    const floor = name.includes("Chromium") ? SW_FLOOR : FLOOR;
    return [
      name,
      ...sizes.flatMap((n) => {
        const r = bySize.get(n);
        return [fmt(r.get(name).usPerItem, 2), ratio(r.get(name).usPerItem, r.get(floor).usPerItem)];
      }),
      whole(bySize.get(sizes.at(-1)).get(name).calls),
    ];
  });
  report(
    table({
      title: "1. Scheduling overhead: µs per paragraph, instant provider, no limits",
      columns: ["implementation", ...sizes.flatMap((n) => [`µs/item, ${label(n)}`, "vs floor"]), `provider calls, ${label(sizes.at(-1))}`],
      rows,
      notes: [
        `${sizes.map(label).join(" and ")} paragraphs of 200 characters, 5 target languages (5 compatibility keys), all submitted at once; the provider answers the joined echo as an already resolved promise.`,
        `batch-pacer: rate 1e9, capacity 1e9, batchDelayMs 0, cacheEntries 0 (every batch is due at once, so it carries one item); "default batching": rate 1e9, capacity 1e9, cacheEntries 0 and the default 4 items / 1000 characters per call (the counts are multiples of 4 per language, so every batch fills by count at once). p-queue: concurrency Infinity, intervalCap 1e9 per 1000 ms. Bottleneck: no limits. DataLoader: one loader per target language, maxBatchSize 4, cache off.`,
        `Baseline ("vs floor"): direct provider calls in the same runtime (one awaited call per paragraph)${chromiumVersion ? `; the service-worker rows run in Chromium ${chromiumVersion}, in a module service worker that imports the built package statically` : ""}.`,
        `${runsNote()} One discarded warm-up round first (not for Bottleneck, whose cost is a timer turn per job, not cold code).`,
        `Every run, in run order (µs/item): ${sizes
          .flatMap((n) => [names[1], names[2]].map((name) => `${name} ${label(n)}: ${bySize.get(n).get(name).samples.map((s) => fmt(s.usPerItem, 2)).join(", ")}`))
          .join("; ")}.`,
        // The machine's speed drifts within a run of this table (up to 2x): a ratio taken
        // within each round cancels most of that drift, where a ratio of medians does not.
        `batch-pacer ÷ p-queue within each round: ${sizes
          .map((n) => {
            const [paced, queued] = [names[1], names[2]].map((name) => bySize.get(n).get(name).samples);
            const ratios = paced.map((s, i) => s.usPerItem / queued[i].usPerItem);
            return `${label(n)}: ${ratios.map((r) => r.toFixed(2)).join(", ")} (median ${median(ratios).toFixed(2)})`;
          })
          .join("; ")}.`,
      ],
    }),
  );
  return { chromiumVersion };
}

// ---------------------------------------------------------------------------------------
// Workload 2: quota efficiency
// ---------------------------------------------------------------------------------------

// `window`: counted per fixed minute (60 calls, then 429s until the minute ends) rather
// than as a strict bucket.
const QUOTAS = [
  { label: "60/min, no burst", rate: 1, interval: 60_000, intervalCap: 60 },
  { label: "60 per minute window", rate: 1, interval: 60_000, intervalCap: 60, window: { ms: 60_000, cap: 60 } },
  { label: "15/min", rate: 0.25, interval: 60_000, intervalCap: 15 },
  { label: "1 per 10 s", rate: 0.1, interval: 10_000, intervalCap: 1 },
];

/**
 * The earliest the last of `calls` can be answered: a strict bucket admits one call per
 * 1/rate; a window admits `cap` calls at each window's start.
 */
function quotaLowerBoundMs(q, calls) {
  const lastStartMs = q.window
    ? Math.floor((calls - 1) / q.window.cap) * q.window.ms
    : ((calls - 1) / q.rate) * 1000;
  return lastStartMs + LATENCY_MS;
}

/** The contenders of workload 2 for quota `q` (the first one is the baseline). */
function quotaContenders(q) {
  const contender = (name, start) => ({
    name,
    globalTimers: true,
    setup: ({ provider, texts }) => ({ promises: start(texts, provider) }),
  });
  return [
    { name: "batch-pacer, seeds' preset", setup: pacerFlow({ rate: q.rate, capacity: 1 }) },
    { name: "batch-pacer, defaults (8/s, burst 60, adaptiveRate)", setup: pacerFlow({}) },
    contender("Bottleneck, 1 paragraph per call", (t, p) => quotaBottleneck(t, p, { rate: q.rate, batched: false })),
    contender("Bottleneck, groups of 4 by hand", (t, p) => quotaBottleneck(t, p, { rate: q.rate, batched: true })),
    contender("Bottleneck, groups of 4, minTime +2%", (t, p) => quotaBottleneck(t, p, { rate: q.rate, batched: true, margin: 1.02 })),
    contender("p-queue, 1 paragraph per call", (t, p) => quotaPQueue(t, p, { ...q, batched: false })),
    contender("p-queue, groups of 4 by hand", (t, p) => quotaPQueue(t, p, { ...q, batched: true })),
    contender("p-queue, groups of 4, 1 per interval", (t, p) =>
      quotaPQueue(t, p, { interval: Math.round(1000 / q.rate), intervalCap: 1, batched: true })),
  ];
}

async function quotaEfficiency() {
  const texts = paragraphs(CONFIG.quotaParagraphs);
  const minCalls = packedCalls(texts, BATCHING);
  const rows = [];
  const groups = [];
  for (const q of QUOTAS) {
    const lowerBoundMs = quotaLowerBoundMs(q, minCalls);
    const contenders = quotaContenders(q);
    const results = await sideBySide(
      contenders.map((c) => ({
        name: c.name,
        run: () => simulate({
          quota: q.window ? { window: q.window } : { rate: q.rate, burst: 1 },
          texts,
          setup: c.setup,
          globalTimers: c.globalTimers,
        }),
      })),
      CONFIG,
    );
    const baseline = results.get(contenders[0].name);
    const group = { quota: q.label, rows: [] };
    for (const c of contenders) {
      const r = results.get(c.name);
      const name = c.name === contenders[0].name ? `${c.name} (rate ${q.rate}, capacity 1)` : c.name;
      rows.push([
        q.label, name, fmt(r.completedMs / 60_000, 1), fmt(r.completedMs / lowerBoundMs, 2),
        ratio(r.completedMs, baseline.completedMs), whole(r.rateLimited), whole(r.calls), whole(r.failed),
      ]);
      group.rows.push({ name: c.name, ratio: r.completedMs / lowerBoundMs, rateLimited: r.rateLimited, failed: r.failed });
    }
    groups.push(group);
  }
  report(
    table({
      title: `2. Quota efficiency: ${texts.length} paragraphs against strict quotas (virtual time)`,
      columns: ["quota", "implementation", "completion (min)", "÷ lower bound", "vs baseline", "429s", "provider calls", "failed"],
      textColumns: 2,
      rows,
      notes: [
        `The provider enforces the quota as a strict token bucket (burst 1, full at start) or, for "60 per minute window", as a count per fixed minute (60 calls, then 429s until the minute ends); it is checked when a request arrives, and the provider answers after ${LATENCY_MS} ms: the echo, or a 429 whose retryAfterMs is the wait for its next token (or the next minute) rounded up to whole seconds. Paragraphs: 200 characters, one compatibility key, all submitted at once.`,
        `Lower bound: the last of ${minCalls} calls starts at (${minCalls} − 1) / rate (for the window: at the start of minute ⌊(${minCalls} − 1) / 60⌋), + ${LATENCY_MS} ms; ${minCalls} = the fewest calls at 4 items / 1000 characters (the preset's batching). Baseline ("vs baseline", completion time): batch-pacer with the seeds' preset for that quota.`,
        `Bottleneck: maxConcurrent 1, minTime 1000/rate ms (+2% in the row that says so), a 429 retried from its 'failed' event after retryAfterMs (at most 10 times). Its first call starts 2 ms after scheduling and minTime counts from its own clock reading, so its second call reaches the server 1 ms before the next token: against a strict bucket that is a 429.`,
        `p-queue: interval/intervalCap as the quota reads (60 per 60 s, 15 per 60 s, 1 per 10 s) or, in the "1 per interval" row, 1 per 1000/rate ms; a 429 waits retryAfterMs and is queued again (at most 10 times, then the paragraphs fail). "Groups of 4 by hand": the caller joins 4 paragraphs per call and splits the reply.`,
        `All on @sinonjs/fake-timers: batch-pacer through its clock option (FakeTimers.createClock), Bottleneck and p-queue with the global timers and Date faked (FakeTimers.install). Runs differ only by retry jitter. ${runsNote()}`,
      ],
    }),
  );
  return groups;
}

// ---------------------------------------------------------------------------------------
// Workload 3: request savings
// ---------------------------------------------------------------------------------------

const DEFAULT_SETTINGS = { rate: 8, capacity: 60, maxItemsPerBatch: 4, maxCharactersPerBatch: 1000, batchDelayMs: 100 };
const NO_QUOTA = { rate: 1e9, burst: 1e9 };

async function requestSavings() {
  const blocks = article(1, CONFIG.articleSections);
  const articleTexts = blocks.map((b) => b.text);
  const cues = subtitleCues(CONFIG.cues, 250);
  const cueTexts = cues.map((c) => c.text);
  const cueTimes = cues.map((c) => c.at);

  const flows = [
    { flow: "article", texts: articleTexts, impls: [
      { name: "batch-pacer, defaults", setup: pacerFlow({}) },
      { name: "sealed when due (Read Frog's behaviour), defaults", setup: sealedFlow(DEFAULT_SETTINGS) },
    ] },
    { flow: "subtitles", texts: cueTexts, at: cueTimes, impls: [
      { name: "batch-pacer, defaults", setup: pacerFlow({}) },
      { name: "sealed when due (Read Frog's behaviour), defaults", setup: sealedFlow(DEFAULT_SETTINGS) },
      { name: "batch-pacer, 60/min preset (rate 1, capacity 1)", setup: pacerFlow({ rate: 1, capacity: 1 }) },
    ] },
  ];
  const rows = [];
  let articleRatio;
  for (const f of flows) {
    const results = await sideBySide(
      f.impls.map((impl) => ({ name: impl.name, run: () => simulate({ quota: NO_QUOTA, texts: f.texts, at: f.at, setup: impl.setup }) })),
      CONFIG,
    );
    const n = f.texts.length;
    rows.push([f.flow, "one call per paragraph (baseline)", n, n, "1.00x", "–"]);
    for (const impl of f.impls) {
      const r = results.get(impl.name);
      if (f.flow === "article" && impl.name === "batch-pacer, defaults") articleRatio = n / r.calls;
      rows.push([f.flow, impl.name, n, whole(r.calls), ratio(n, r.calls), fmt(r.meanWaitMs / 1000, 2)]);
    }
    const bound = packedCalls(f.texts, BATCHING);
    rows.push([f.flow, "bound: packing in document order", n, bound, ratio(n, bound), "–"]);
    const anyOrder = packedCallsAnyOrder(f.texts, BATCHING);
    rows.push([f.flow, "bound: packing in any order (first-fit decreasing)", n, anyOrder, ratio(n, anyOrder), "–"]);
  }
  const lengths = articleTexts.map((t) => t.length);
  const count = (kind) => blocks.filter((b) => b.kind === kind).length;
  const target = 3.9;
  report(
    table({
      title: "3. Request savings: provider calls at the defaults (virtual time)",
      columns: ["flow", "implementation", "paragraphs", "provider calls", "paragraphs per call", "mean wait (s)"],
      textColumns: 2,
      rows,
      notes: [
        `Article (generated, seed 1): ${blocks.length} blocks in document order, ${count("h1") + count("h2")} headings, ${count("p")} body paragraphs, ${count("li")} list items, ${count("figcaption")} captions; ${Math.min(...lengths)}–${Math.max(...lengths)} characters, median ${median(lengths)}, mean ${Math.round(mean(lengths))}; all submitted at once. Subtitles: ${cues.length} cues of 15–86 characters, one every 250 ms.`,
        `Defaults: rate 8, capacity 60, 4 items / 1000 characters per batch, batchDelayMs 100; provider latency ${LATENCY_MS} ms, no quota. "paragraphs per call" is the saving against the baseline. Bounds (computed, not run): the fewest calls for these texts at 4 items / 1000 characters per call, keeping document order, or in any order (what a batcher free to reorder the whole page could reach).`,
        `Target for articles: at least ${target}x fewer calls than paragraphs; measured ${fmt(articleRatio, 2)}x (${articleRatio >= target ? "met" : "not met"}). Mean wait: from a paragraph's arrival to its translation.`,
        runsNote(),
      ],
    }),
  );
}

// ---------------------------------------------------------------------------------------
// Workload 4: late binding
// ---------------------------------------------------------------------------------------

async function lateBinding() {
  const settings = { rate: 0.25, capacity: 1, maxItemsPerBatch: 4, maxCharactersPerBatch: 1000, batchDelayMs: 100 };
  const texts = paragraphs(CONFIG.lateParagraphs);
  const at = texts.map((_, i) => i * 300);
  const SEALED = "sealed when due (Read Frog's behaviour)";
  const LATE = "batch-pacer (sealed when its call starts)";
  const results = await sideBySide(
    [
      { name: SEALED, run: () => simulate({ quota: { rate: 0.25, burst: 1 }, texts, at, setup: sealedFlow(settings) }) },
      { name: LATE, run: () => simulate({ quota: { rate: 0.25, burst: 1 }, texts, at, setup: pacerFlow(settings) }) },
    ],
    CONFIG,
  );
  const base = results.get(SEALED);
  const rows = [SEALED, LATE].map((name) => {
    const r = results.get(name);
    return [
      name, whole(r.calls), ratio(r.calls, base.calls), fmt(r.itemsPerCall, 2),
      `${fmt((r.itemsPerCall / settings.maxItemsPerBatch) * 100, 0)}%`,
      fmt(r.completedMs / 60_000, 1), ratio(r.completedMs, base.completedMs), fmt(r.meanWaitMs / 1000, 1), whole(r.rateLimited),
    ];
  });
  report(
    table({
      title: "4. Late binding: one paragraph every 300 ms at rate 0.25 (virtual time)",
      columns: ["implementation", "provider calls", "vs baseline", "items per call", "batch fullness", "completion (min)", "vs baseline", "mean wait (s)", "429s"],
      rows,
      notes: [
        `${texts.length} paragraphs of 200 characters, one every 300 ms; rate 0.25, capacity 1, 4 items / 1000 characters, batchDelayMs 100, against a provider with the same quota (strict bucket, burst 1, ${LATENCY_MS} ms latency).`,
        `Baseline: a scheduler in this benchmark (bench/sealed-queue.mjs) that mirrors Read Frog's queues: a batch is sealed when it becomes due (full, or 100 ms after its first item) and then waits in a lazily refilled token bucket. batch-pacer's due batches keep taking paragraphs until their call starts. Batch fullness: mean items per call ÷ 4.`,
        runsNote(),
      ],
    }),
  );
}

// ---------------------------------------------------------------------------------------
// Workload 5: size and cold start
// ---------------------------------------------------------------------------------------

async function child(args, nodeFlags = []) {
  const { stdout } = await execFile(process.execPath, [...nodeFlags, join(BENCH_DIR, "child.mjs"), ...args], {
    cwd: REPO,
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split("\n").at(-1));
}

function shippedFiles() {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8"));
  const expand = (entry) =>
    existsSync(join(PACKAGE_DIR, entry)) && statSync(join(PACKAGE_DIR, entry)).isDirectory()
      ? readdirSync(join(PACKAGE_DIR, entry), { recursive: true }).map((f) => join(entry, f))
      : [entry];
  return manifest.files.flatMap(expand).filter((f) => /\.(js|wasm)$/.test(f) && existsSync(join(PACKAGE_DIR, f)));
}

/** The optional helpers: a bundler drops them when only BatchPacer is imported. */
const OPTIONAL_MODULES = ["js/openai.js", "js/deepl-provider.js", "js/indexeddb-cache.js"];

/**
 * What `import "batch-pacer"` + `init()` loads in a browser: the static import graph of
 * the package's entry (with `#wasm-source` resolved as browsers' bundlers resolve it),
 * then the .wasm that init() fetches. Without `skip`'s modules and what only they import
 * when `skip` is given.
 */
function entryFiles(skip = []) {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8"));
  const resolve = (from, specifier) =>
    specifier.startsWith("#")
      ? manifest.imports[specifier].browser.replace(/^\.\//, "")
      : join(dirname(from), specifier);
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file) || skip.includes(file)) return;
    seen.add(file);
    const source = readFileSync(join(PACKAGE_DIR, file), "utf8");
    // Statements start a line or follow `;` or `}`: the shipped files are minified.
    for (const [, specifier] of source.matchAll(/(?:^|[;}])\s*(?:import|export)\b(?:[^;'"`]*?\bfrom)?\s*["']([^"']+)["']/gm)) {
      if (specifier) visit(resolve(file, specifier));
    }
  };
  visit(manifest.exports["."].default.replace(/^\.\//, ""));
  return [...seen, "pkg/batch_pacer_bg.wasm"];
}

async function sizeAndColdStart() {
  const files = shippedFiles();
  const loaded = entryFiles();
  const core = entryFiles(OPTIONAL_MODULES);
  const sizeRows = [];
  const sizes = new Map();
  for (const file of files) {
    const bytes = readFileSync(join(PACKAGE_DIR, file));
    const zipped = gzipSync(bytes, { level: 9 }).length;
    sizes.set(file, [bytes.length, zipped]);
    const note = loaded.includes(file) ? "" : " (not loaded by import + init(): another entry's)";
    sizeRows.push([file + note, bytes.length, zipped, ratio(zipped, bytes.length)]);
  }
  const missing = loaded.filter((file) => !sizes.has(file));
  if (missing.length > 0) throw new Error(`the entry loads files the package does not ship: ${missing.join(", ")}`);
  const sizeOf = (group) => [0, 1].map((column) => group.reduce((sum, file) => sum + sizes.get(file)[column], 0));
  const [raw, gz] = sizeOf(loaded);
  sizeRows.push([`total: import "batch-pacer" + init() in a browser (${loaded.length - 1} JS files + the .wasm, each once)`, raw, gz, ratio(gz, raw)]);
  const [coreRaw, coreGzip] = sizeOf(core);
  sizeRows.push(["core: that without openai.js, deepl-provider.js, indexeddb-cache.js and what only they import", coreRaw, coreGzip, ratio(coreGzip, coreRaw)]);
  // The floor takes a cargo build (half a minute from cold): full runs only.
  const floor = SMOKE ? [] : await sizeFloor(REPO);
  if (floor.length > 0) {
    const [floorRaw, floorGzip] = [floor.reduce((t, f) => t + f.raw, 0), floor.reduce((t, f) => t + f.gzip, 0)];
    sizeRows.push([
      `floor: the dependencies alone, no pacing logic (bench/size-floor: ${floor.map((f) => f.file).join(" + ")})`,
      floorRaw, floorGzip, ratio(floorGzip, floorRaw),
    ]);
    sizeRows.push(["core ÷ floor", ratio(coreRaw, floorRaw), ratio(coreGzip, floorGzip), "–"]);
  }
  report(
    table({
      title: "5a. Size: the files the package ships (bytes)",
      columns: ["file", "raw", "gzip -9", "gzip / raw"],
      rows: sizeRows,
      notes: [
        `From the package measured (${PACKAGE_DIR === REPO ? "this repository after the build" : "the packed and installed tarball"}); the .d.ts and README are left out; the JavaScript as shipped, minified by scripts/ship-js.mjs. Sizes are exact (no runs).`,
        floor.length > 0
          ? "Floor: bench/size-floor, the package's dependencies (wasm-bindgen, js-sys, wasm-bindgen-futures, gloo-timers, sha2, siphasher) each used once as the package uses them, built with the same profile, cfg, release configuration (scripts/release-wasm.toml) and wasm-opt flags, its glue minified as the package's; baseline of the \"core ÷ floor\" row."
          : "Floor: not built in --smoke.",
        "The totals count what one entry loads, each file once: the other entries' files (batch-pacer/inline and its deflated module, batch-pacer/inline-wasm, the Node and Deno loaders) are listed but not counted.",
      ],
    }),
  );

  const impls = ["batch-pacer", "p-queue", "bottleneck"];
  const node = await sideBySide(
    impls.map((impl) => ({ name: impl, run: () => child(["cold-start", impl, ENTRY_URL]) })),
    { runs: CONFIG.coldStartRuns },
  );
  let worker;
  if (CONFIG.chromium) {
    const host = await openServiceWorkerHost(PACKAGE_DIR);
    try {
      const samples = [];
      for (let i = 0; i < CONFIG.swColdStartRuns; i++) {
        const tag = `cold-${i}`;
        await host.register(tag);
        samples.push(await host.ask(tag, { type: "coldStart" }));
        await host.unregister(tag);
      }
      worker = { version: host.version, ...Object.fromEntries(["evaluatedMs", "initMs", "constructMs"].map((k) => [k, median(samples.map((s) => s[k]))])) };
    } finally {
      await host.close();
    }
  }
  const EXTENSION_FETCH = "init(): the .wasm fetched from the extension's files";
  const EXTENSION_INLINE = "initSync(wasmBytes()): batch-pacer/inline-wasm";
  const extension = CONFIG.chromium
    ? await extensionServiceWorkerColdStart({
        packageDir: PACKAGE_DIR,
        files,
        runs: CONFIG.swColdStartRuns,
        variants: [
          { name: EXTENSION_FETCH, background: "background.js" },
          { name: EXTENSION_INLINE, background: "background-inline.js" },
        ],
      })
    : undefined;
  const base = node.get("p-queue");
  const total = (r) => r.importMs + r.initMs + r.constructMs;
  const rows = impls.map((impl) => {
    const r = node.get(impl);
    return [
      `${impl}, Node (fresh process)`, fmt(r.importMs, 2), impl === "batch-pacer" ? fmt(r.initMs, 2) : "–",
      fmt(r.constructMs, 2), fmt(r.initMs + r.constructMs, 2), fmt(total(r), 2), ratio(total(r), total(base)),
      fmt(r.sinceProcessStartMs, 1),
    ];
  });
  if (worker) {
    rows.push([
      "batch-pacer, Chromium service worker (fresh registration)", "–", fmt(worker.initMs, 2), fmt(worker.constructMs, 2),
      fmt(worker.initMs + worker.constructMs, 2), "–", "–", fmt(worker.evaluatedMs + worker.initMs + worker.constructMs, 1),
    ]);
  }
  if (extension) {
    for (const name of [EXTENSION_FETCH, EXTENSION_INLINE]) {
      const r = extension[name];
      rows.push([
        `batch-pacer, Chromium extension service worker (fresh worker), ${name}`, "–", fmt(r.initMs, 2), fmt(r.constructMs, 2),
        fmt(r.initMs + r.constructMs, 2), "–", "–", fmt(r.readyMs, 1),
      ]);
    }
  }
  report(
    table({
      title: "5b. Cold start: import, init() and new BatchPacer() in a fresh runtime (ms)",
      columns: ["implementation", "import", "init()", "construct", "init + construct", "import + init + construct", "vs baseline", "ready, from process/worker start"],
      rows,
      notes: [
        `Node: one fresh child process per run (bench/child.mjs), ${CONFIG.coldStartRuns} runs each, implementations alternating; init() reads and compiles the .wasm. Baseline ("vs baseline", import + init + construct): p-queue, a pure-JS queue.`,
        worker
          ? `Chromium ${worker.version}: median of ${CONFIG.swColdStartRuns} fresh registrations of a module service worker that imports the package statically (served without caching); "ready" counts from the worker's start: module graph evaluated (${fmt(worker.evaluatedMs, 1)} ms), then init() (fetch + compile of the .wasm) and the constructor, timed inside the worker (its clock has 0.1 ms resolution).`
          : "Chromium: not measured in this run.",
        extension
          ? `Chromium extension: median of ${CONFIG.swColdStartRuns} fresh workers per variant of a bench MV3 extension (bench/extension-sw, chrome-extension:// origin) that imports the package statically from its own files; both variants are installed in one browser and take turns. Before each sample the workers are stopped (CDP ServiceWorker.stopAllWorkers, as Chrome stops an idle one) and a runtime message starts a new one (the workers started at install are not counted). Timed inside the worker: module graph evaluated (${fmt(extension[EXTENSION_FETCH].evaluatedMs, 1)} ms with init(), ${fmt(extension[EXTENSION_INLINE].evaluatedMs, 1)} ms with the inline module, which the graph loads), then init() (the .wasm fetched from the extension's files, then compiled) or initSync(wasmBytes()) (decoded and compiled), and the constructor; "ready" is the median of their per-worker sums.`
          : "",
      ].filter(Boolean),
    }),
  );
  return worker?.version ?? extension?.version;
}

// ---------------------------------------------------------------------------------------
// Workload 6: memory
// ---------------------------------------------------------------------------------------

async function memory() {
  const n = CONFIG.memoryItems;
  const impls = [
    { name: "floor: item + pending promise in a JS array", id: "floor" },
    { name: "batch-pacer", id: "batch-pacer" },
    { name: "p-queue (not started)", id: "p-queue" },
    { name: "Bottleneck (reservoir 0)", id: "bottleneck" },
  ];
  const results = await sideBySide(
    impls.map((impl) => ({ name: impl.name, run: () => child(["memory", impl.id, String(n), ENTRY_URL], ["--expose-gc"]) })),
    { runs: CONFIG.memoryRuns },
  );
  const floor = results.get(impls[0].name).bytesPerItem;
  report(
    table({
      title: `6. Memory: bytes per queued paragraph, ${n.toLocaleString("en-US")} queued in Node`,
      columns: ["implementation", "bytes per queued item", "vs floor"],
      rows: impls.map((impl) => {
        const b = results.get(impl.name).bytesPerItem;
        return [impl.name, fmt(Math.round(b)), ratio(b, floor)];
      }),
      notes: [
        `Paragraphs of 200 characters (their strings exist before the first reading), each queued with translate()/add()/schedule() and its promise kept; nothing dispatched (batch-pacer: rate 1e-6, capacity 1, batchDelayMs 1e9; its one first call never answers). Held = heapUsed + external (external includes ArrayBuffers and the wasm linear memory, which process.memoryUsage().arrayBuffers leaves out), after gc() with --expose-gc, minus the same reading before queueing.`,
        `One fresh process per run, median of ${CONFIG.memoryRuns} runs, implementations alternating. Baseline: the floor any JS queue pays (the item object and a pending promise with its resolve/reject).`,
      ],
    }),
  );
}

// ---------------------------------------------------------------------------------------

function machine() {
  const cpu = cpus();
  let uname = "";
  try {
    uname = execFileSync("uname", ["-a"], { encoding: "utf8" }).trim();
  } catch {
    uname = `${process.platform} ${process.arch}`;
  }
  const load = loadavg().map((l) => l.toFixed(2)).join(", ");
  return { uname, cpu: `${cpu[0]?.model ?? "unknown"} (${cpu.length} logical CPUs)`, node: process.version, load };
}

/** Section 0: the output of `cargo bench --bench engine`, when `--engine-output` names it. */
function engineSection() {
  if (!args["engine-output"] || !existsSync(args["engine-output"])) return "";
  return ["### 0. Core engine (`cargo bench --bench engine`)", "", "```", readFileSync(args["engine-output"], "utf8").trim(), "```", ""].join("\n");
}

function writeResults({ chromiumVersion, groups, started }) {
  const m = machine();
  const command = process.env.BENCH_COMMAND ?? `node bench/run.mjs ${process.argv.slice(2).join(" ")}`.trim();
  const engine = engineSection();
  const header = [
    "# batch-pacer benchmark results",
    "",
    `- command: \`${command}\``,
    `- date: ${started.toISOString()}`,
    `- machine: \`${m.uname}\``,
    `- CPU: ${m.cpu}; load average (1, 5, 15 min) when the run ended: ${m.load}`,
    `- Node: ${m.node}${chromiumVersion ? `; Chromium ${chromiumVersion} (headless, /usr/bin/chromium)` : ""}`,
    `- package measured: ${PACKAGE_DIR === REPO ? "this repository's js/ and pkg/ after the build" : "the packed tarball, installed into a temporary project"}`,
    "",
    "Every table is measured side by side in one run: implementations alternate run by run and each figure is the median of its runs (counts in the notes). Workloads 2–4 run in virtual time (@sinonjs/fake-timers). The chart of workload 2 is [quota.svg](quota.svg).",
    "",
  ].join("\n");
  writeFileSync(join(BENCH_DIR, "results.md"), [header, engine, ...sections].join("\n"));
  const lowerBound = `completion ÷ lower bound (the fewest calls, started as early as the quota admits, + ${LATENCY_MS} ms)`;
  writeFileSync(
    join(BENCH_DIR, "quota.svg"),
    quotaChart(groups, {
      title: `Workload 2: ${CONFIG.quotaParagraphs} paragraphs against strict quotas (virtual time, median of ${CONFIG.runs} runs)`,
      subtitle: `${lowerBound}; teal: batch-pacer, orange: Bottleneck and p-queue; "failed": paragraphs given up after 10 retries. Node ${m.node}, ${started.toISOString().slice(0, 10)}`,
    }),
  );
  console.log(`wrote ${join("bench", "results.md")} and ${join("bench", "quota.svg")}`);
}

/**
 * Replaces the sections of bench/results.md of the workloads in `only` with this run's
 * (a workload's sections are the headings `### <n>.` or `### <n><letter>.`), keeps the
 * others, in workload order, and notes in the header which run measured which sections.
 */
function updateResults(only, started) {
  const path = join(BENCH_DIR, "results.md");
  const [head, ...old] = readFileSync(path, "utf8").split(/\n(?=### )/);
  const workload = (section) => /^### (\d+)/.exec(section)?.[1];
  const kept = old.filter((section) => !only.has(workload(section)));
  // Workload 0 is the core engine's own benchmark, run before this script.
  const engine = only.has("0") ? engineSection() : "";
  const fresh = [engine, ...sections].filter(Boolean).map((section) => section.trimEnd() + "\n");
  const ordered = [...kept, ...fresh].sort((a, b) => Number(workload(a)) - Number(workload(b)));
  const m = machine();
  const command =
    process.env.BENCH_COMMAND ??
    `node --expose-gc bench/run.mjs ${process.argv.slice(2).join(" ")}`.replace(/--package \S+/, "--package <the packed tarball, installed>").trim();
  const note = `- sections ${[...only].join(", ")} measured by \`${command}\` on ${started.toISOString()} (load average when it ended: ${m.load}); the others by the run above`;
  const header = head.trimEnd().split("\n");
  // The header's bullet list ends before its first blank line.
  const at = header.indexOf("", 2);
  header.splice(at === -1 ? header.length : at, 0, note);
  writeFileSync(path, [header.join("\n") + "\n", ...ordered].join("\n"));
  console.log(`updated the sections of workloads ${[...only].join(", ")} in ${join("bench", "results.md")}`);
}

/** Another build of the package (its root: js/ and a built pkg/), measured beside this one. */
async function loadBaseline(dir) {
  const module = await import(pathToFileURL(join(dir, "js", "index.js")).href);
  await module.default();
  const commit = execFileSync("git", ["-C", dir, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  const { BatchPacer, openAIProvider, aiSdkProvider, routeProviders, deeplProvider } = module;
  return { name: `baseline ${commit}`, BatchPacer, openAIProvider, aiSdkProvider, routeProviders, deeplProvider };
}

async function main() {
  const started = new Date();
  const only = args.only ? new Set(args.only.split(",").map((s) => s.trim())) : null;
  const wanted = (n) => !only || only.has(String(n));
  if (only?.has("0") && !engineSection()) {
    throw new Error("--only 0 needs --engine-output FILE, the output of `cargo bench --bench engine`");
  }
  console.log(`batch-pacer benchmarks${SMOKE ? " (smoke: tiny inputs, one run each)" : ""}; package: ${PACKAGE_DIR}\n`);
  const baseline = args.baseline ? await loadBaseline(args.baseline) : undefined;
  const { chromiumVersion } = wanted(1) ? await schedulingOverhead() : {};
  const groups = wanted(2) ? await quotaEfficiency() : [];
  if (wanted(3)) await requestSavings();
  if (wanted(4)) await lateBinding();
  const workerVersion = wanted(5) ? await sizeAndColdStart() : undefined;
  if (wanted(6)) await memory();
  if (wanted(7)) report(await timeToFirstParagraph({ BatchPacer, smoke: SMOKE }));
  if (wanted(8)) await layoutsUnderDamagedReplies({ BatchPacer, report, smoke: SMOKE, runs: CONFIG.runs });
  if (wanted(9)) report(await requestsAndTokens({ BatchPacer, runs: CONFIG.runs, smoke: SMOKE }));
  if (wanted(10)) report(await sporadic429s({ BatchPacer, runs: CONFIG.runs, smoke: SMOKE }));
  if (wanted(11)) {
    report(
      await modelsThatCannotBatch({
        BatchPacer,
        openAIProvider: pacerModule.openAIProvider,
        smoke: SMOKE,
        baseline,
        skipUnbounded: args["skip-unbounded"],
      }),
    );
  }
  if (wanted(12)) report(await fallbackProviders({ BatchPacer, routeProviders: pacerModule.routeProviders, runs: CONFIG.runs, smoke: SMOKE }));
  if (wanted(13)) {
    const builds = [{ name: "this package", BatchPacer }];
    if (baseline) builds.push(baseline);
    report(await adversarialReplies({ builds, smoke: SMOKE }));
  }
  if (wanted(14)) {
    const { BatchPacer: own, openAIProvider, aiSdkProvider } = pacerModule;
    const builds = [{ name: "this package", BatchPacer: own, openAIProvider, aiSdkProvider }];
    if (baseline) builds.push(baseline);
    const command = process.env.BENCH_COMMAND ?? `node --expose-gc bench/run.mjs --only 14${args.baseline ? " --baseline DIR" : ""}`;
    report(await clientsAndTimeouts({ builds, smoke: SMOKE, command }));
  }
  if (wanted(15)) {
    const { BatchPacer: own, routeProviders, deeplProvider } = pacerModule;
    const builds = [{ name: "this package", BatchPacer: own, routeProviders, deeplProvider }];
    if (baseline) builds.push(baseline);
    const command = process.env.BENCH_COMMAND ?? `node --expose-gc bench/run.mjs --only 15${args.baseline ? " --baseline DIR" : ""}`;
    report(await providersPoolsArrays({ builds, smoke: SMOKE, command }));
  }
  if (wanted(16)) {
    const builds = [{ name: "this package", BatchPacer }];
    if (baseline) builds.push(baseline);
    const command = process.env.BENCH_COMMAND ?? `node --expose-gc bench/run.mjs --only 16${args.baseline ? " --baseline DIR" : ""}`;
    for (const section of await sharedQuota({ builds, smoke: SMOKE, command })) report(section);
  }
  if (!SMOKE && !only) writeResults({ chromiumVersion: chromiumVersion ?? workerVersion, groups, started });
  if (!SMOKE && only && args.write) updateResults(only, started);
}

await main();
