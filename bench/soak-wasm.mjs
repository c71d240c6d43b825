// Soak of the built package in Node: items through several BatchPacers on a fake clock
// (@sinonjs/fake-timers), with a seeded provider that produces every fault kind.
//
//   node --expose-gc bench/soak-wasm.mjs [--items 100000] [--seed N] [--package DIR]
//
// The package must be built (`npm run build`): this imports DIR/js/index.js (default:
// this repository). Three pacers run at once (page, subtitles, and one disposed when half
// of the items have been sent); the provider answers correctly most of the time and
// otherwise with a wrong segment count, an empty segment, HTTP errors with statuses (5xx
// with and without Retry-After, 408, 409, 4xx), 429 over each provider's quota (with
// `retryAfter` in seconds or a `retry-after` header) and at random, hangs that never
// settle (ended by `timeoutMs`), values of the wrong type, network errors, synchronous
// throws, plain (non-promise) replies and answers after the timeout. Items are aborted
// through AbortSignals (before and after they are sent, and already aborted), and
// `setOptions` changes limits while everything runs. Pages wait while a pacer holds more
// than 3,000 unsettled items.
//
// Checks: every translate promise settles, and none is left pending; no item settles a
// second time (stats().duplicateSettlements); every translation is the one of the item's own text; rejections carry only
// the expected codes; stats() agrees with what settled; at the end every queue is empty.
// Reported: wall and virtual time, outcomes, and memory at the start, at each 10%, at the
// peak and at the end: heapUsed + arrayBuffers (JS), and `external`, where Node counts
// the WebAssembly memory that holds the engines' state. Exits 1 on any failed check.

import { pathToFileURL, fileURLToPath } from "node:url";
import { join } from "node:path";
import { parseArgs } from "node:util";
import FakeTimers from "@sinonjs/fake-timers";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const { values: args } = parseArgs({
  options: {
    items: { type: "string", default: "100000" },
    seed: { type: "string", default: "20240601" },
    package: { type: "string", default: REPO },
  },
});
const ITEMS = Number(args.items.replaceAll("_", ""));
const SEED = BigInt(args.seed);
if (!Number.isInteger(ITEMS) || ITEMS < 1) throw new Error(`--items must be a positive integer (got ${args.items})`);

const { default: init, BatchPacer, PacerError } = await import(
  pathToFileURL(join(args.package, "js", "index.js")).href
);
await init();

const BACKLOG = 3000;
const MAX_VIRTUAL_MS = 1000 * 3600_000;
const EXPECTED_CODES = new Set(["provider_error", "timeout", "count_mismatch", "aborted", "disposed"]);

// ----- small helpers -----

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${typeof message === "function" ? message() : message}`);
}

/** SplitMix64, as the native soak uses. */
function rng(seed) {
  let state = BigInt.asUintN(64, seed);
  const next = () => {
    state = BigInt.asUintN(64, state + 0x9e3779b97f4a7c15n);
    let z = state;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  };
  const below = (n) => Number(next() % BigInt(Math.max(1, n)));
  return {
    below,
    chance: (perMille) => below(1000) < perMille,
    pick: (from) => from[below(from.length)],
  };
}

function gc() {
  if (typeof globalThis.gc === "function") globalThis.gc();
}

/** heapUsed + arrayBuffers (JS objects and buffers). */
function memory() {
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** `external`: where Node counts the WebAssembly memory (the engines' state). */
function external() {
  return process.memoryUsage().external;
}

const mib = (bytes) => `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;

/** The text of item `id`: paragraphs, some holding the default separator, some blank, some long. */
function textOf(id) {
  switch (id % 211) {
    case 0:
      return "   ";
    case 1:
      return `Paragraph ${id}\n%%\nwith a separator line inside, and 50% off.`;
    case 2:
      return `Paragraph ${id}, a long one. `.repeat(60);
    default: {
      let text = `Paragraph ${id} of the article. `;
      const target = 40 + ((id * 7919) % 260);
      while (text.length < target) text += "Lorem ipsum dolor sit amet. ";
      return text;
    }
  }
}

const echo = (text) => `«${text.trim()}»`;
const expected = (id) => {
  const text = textOf(id);
  return text.trim() === "" ? text : echo(text);
};

const QUOTA = { alpha: 12, beta: 12, subs: 6, gamma: 8 };

// ----- the run -----

const random = rng(SEED);
// The pacers seed their backoff jitter with Math.random(): seed it too, so a run replays.
const jitter = rng(SEED ^ 0x5eedn);
Math.random = () => jitter.below(2 ** 30) / 2 ** 30;
const clock = FakeTimers.createClock(0);
const pacerClock = {
  now: () => clock.now,
  setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
  clearTimeout: (handle) => clock.clearTimeout(handle),
};
const windows = new Map(); // provider -> start times of the calls served in the last second
const faults = new Map();
const count = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
let calls = 0;

function after(ms, fn) {
  clock.setTimeout(fn, ms);
}

function httpError(status, extra = {}) {
  return Object.assign(new Error(`HTTP ${status}`), { status }, extra);
}

function makeProvider(pacerName) {
  return (request) => {
    calls++;
    const timeoutMs = pacers.get(pacerName).pacer.options.timeoutMs;
    const echoes = request.texts.map(echo);
    const correct = random.chance(300) ? echoes : request.isBatch ? echoes.join(request.separator) : echoes[0];
    const latency = 20 + random.below(400);
    const later = (ms, settle) => new Promise((resolve, reject) => after(ms, () => settle(resolve, reject)));
    const resolveAfter = (ms, value) => later(ms, (resolve) => resolve(value));
    const rejectAfter = (ms, error) => later(ms, (_, reject) => reject(error));

    // The provider's quota: over it, 429 with a Retry-After in whole seconds.
    const window = windows.get(request.providerId) ?? [];
    windows.set(request.providerId, window);
    while (window.length > 0 && window[0] + 1000 <= clock.now) window.shift();
    if (window.length >= QUOTA[request.providerId]) {
      count(faults, "429 over quota");
      const seconds = Math.ceil((window[0] + 1000 - clock.now) / 1000);
      const extra = random.chance(500) ? { retryAfter: seconds } : { headers: { "retry-after": String(seconds) } };
      return rejectAfter(latency, httpError(429, extra));
    }
    window.push(clock.now);

    const roll = random.below(1000);
    if (roll < 790) {
      count(faults, "correct");
      return resolveAfter(latency, correct);
    }
    if (roll < 820) {
      count(faults, "wrong count");
      const wrong = [...echoes];
      if (random.chance(500) || wrong.length === 1) wrong.push("«extra»");
      else wrong.pop();
      return resolveAfter(latency, request.isBatch ? wrong.join(request.separator) : wrong);
    }
    if (roll < 835) {
      count(faults, "empty segment");
      const empty = [...echoes];
      empty[random.below(empty.length)] = " ";
      return resolveAfter(latency, request.isBatch ? empty.join(request.separator) : []);
    }
    if (roll < 875) {
      count(faults, "5xx");
      const extra = random.chance(100) ? { retryAfterMs: random.below(3000) } : {};
      return rejectAfter(latency, httpError(random.pick([500, 502, 503, 504]), extra));
    }
    if (roll < 885) {
      count(faults, "408/409");
      return rejectAfter(latency, httpError(random.pick([408, 409])));
    }
    if (roll < 895) {
      count(faults, "4xx");
      return rejectAfter(latency, httpError(random.pick([400, 401, 403, 404, 422])));
    }
    if (roll < 900) {
      count(faults, "429 at random");
      const extra = random.chance(5) ? { retryAfter: 600 } : random.chance(300) ? {} : { retryAfterMs: 100 + random.below(5000) };
      return rejectAfter(latency, httpError(429, extra));
    }
    if (roll < 920) {
      count(faults, "hang");
      return new Promise(() => {});
    }
    if (roll < 930) {
      count(faults, "wrong type");
      return resolveAfter(latency, random.chance(500) ? 42 : { translations: echoes });
    }
    if (roll < 940) {
      count(faults, "network error");
      return rejectAfter(latency, new TypeError("fetch failed"));
    }
    if (roll < 950) {
      count(faults, "synchronous throw");
      throw new Error("provider bug");
    }
    if (roll < 960) {
      count(faults, "plain value");
      return correct;
    }
    if (roll < 975) {
      count(faults, "aborted by the signal");
      // A fetch that honours the signal: it rejects once the pacer aborts it.
      return new Promise((_, reject) => {
        request.signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")), { once: true });
      });
    }
    count(faults, "after the timeout");
    return resolveAfter(timeoutMs + 500, correct);
  };
}

/** One flow: a pacer, its unsettled items, and what settled. */
function flow(name, options) {
  const state = {
    name,
    pacer: null,
    pending: 0,
    maxPending: 0,
    ok: 0,
    failed: 0,
    failedBy: new Map(),
    aborted: 0,
    disposed: 0,
    disposedAfter: 0,
    events: new Map(),
  };
  state.pacer = new BatchPacer(makeProvider(name), {
    ...options,
    clock: pacerClock,
    onEvent: (event) => count(state.events, event.type),
  });
  return state;
}

const pacers = new Map();
for (const [name, options] of [
  ["page", { rate: 20, capacity: 20, maxItemsPerBatch: 8 }],
  ["subtitles", { rate: 10, capacity: 5, maxInFlight: 4 }],
  ["doomed", { rate: 10, timeoutMs: 3000 }],
]) {
  pacers.set(name, flow(name, options));
}

let sent = 0;
let settledCount = 0;
let nextId = 0;
let disposed = false;
let changes = 1;
let tenth = 1;
let failure = null;
const startedMemory = (gc(), memory());
const startedExternal = external();
let peak = startedMemory;
let peakExternal = startedExternal;
const curve = [{ percent: 0, bytes: startedMemory, external: startedExternal, pending: 0, virtualS: 0 }];
const started = performance.now();

function submit(state) {
  const id = nextId > 1000 && random.chance(150) ? nextId - 1 - random.below(1000) : ++nextId;
  const text = textOf(id);
  const item =
    state.name === "page"
      ? { providerId: random.pick(["alpha", "beta"]), targetLang: random.pick(["de", "fr"]) }
      : state.name === "subtitles"
        ? { providerId: "subs", targetLang: "de", context: "A film about the sea" }
        : { providerId: "gamma", targetLang: "es", llm: id % 2 === 0 };
  let signal;
  if (random.chance(1)) {
    signal = AbortSignal.abort();
  } else if (random.chance(10)) {
    const controller = new AbortController();
    after(random.below(4000), () => controller.abort());
    signal = controller.signal;
  }
  const afterDispose = disposed && state.name === "doomed";
  state.pending++;
  sent++;
  state.maxPending = Math.max(state.maxPending, state.pending);
  state.pacer
    .translate({ text, sourceLang: "en", priority: random.below(3), signal, ...item })
    .then(
      (translation) => {
        if (translation !== expected(id)) {
          failure ??= new Error(`${state.name}: item ${id} got ${JSON.stringify(translation).slice(0, 80)}, not its own translation`);
        }
        state.ok++;
      },
      (error) => {
        if (!(error instanceof PacerError) || !EXPECTED_CODES.has(error.code)) {
          failure ??= new Error(`${state.name}: item ${id} failed with ${error?.code ?? error}: ${error?.message}`);
        } else if (error.code === "aborted") state.aborted++;
        else if (error.code === "disposed") afterDispose ? state.disposedAfter++ : state.disposed++;
        else {
          state.failed++;
          count(state.failedBy, error.code);
        }
      },
    )
    .finally(() => {
      state.pending--;
      settledCount++;
    });
}

function page(state) {
  if (sent >= ITEMS) return;
  if (state.name === "doomed" && disposed) {
    // A few items still reach the disposed pacer and must reject at once.
    if (state.late === undefined) state.late = 0;
    if (state.late++ < 3) {
      submit(state);
      after(500, () => page(state));
    }
    return;
  }
  if (state.pending > BACKLOG) {
    after(500, () => page(state));
    return;
  }
  const size = Math.min(
    ITEMS - sent,
    state.name === "page" ? 1 + random.below(200) : state.name === "subtitles" ? 1 + random.below(4) : 1 + random.below(50),
  );
  for (let i = 0; i < size; i++) submit(state);
  checkpoints();
  const gap = state.name === "page" ? 400 + random.below(1600) : state.name === "subtitles" ? 100 + random.below(400) : 200 + random.below(800);
  after(gap, () => page(state));
}

function changeOptions() {
  const live = [...pacers.values()].filter((s) => !(disposed && s.name === "doomed"));
  const state = random.pick(live);
  const choices = [
    ["rate", [2, 5, 10, 20, 40]],
    ["capacity", [1, 5, 20, 60]],
    ["maxItemsPerBatch", [1, 2, 4, 8, 16]],
    ["maxCharactersPerBatch", [200, 1000, 4000]],
    ["batchDelayMs", [0, 20, 100, 300]],
    ["maxInFlight", [0, 2, 8]],
    ["cacheEntries", [0, 100, 1000]],
    ["timeoutMs", [1000, 3000, 10000]],
    ["maxRetries", [0, 2, 5]],
    ["maxBatchRetries", [0, 1, 3]],
    ["baseRetryDelayMs", [50, 250, 1000]],
    ["maxRateLimitRetries", [2, 10]],
  ];
  const patch = {};
  for (let i = 1 + random.below(4); i > 0; i--) {
    const [name, values] = random.pick(choices);
    patch[name] = random.pick(values);
  }
  for (const name of ["fallbackToIndividual", "adaptiveRate"]) {
    if (random.chance(150)) patch[name] = random.chance(700);
  }
  state.pacer.setOptions(patch);
}

function checkpoints() {
  while (changes < 20 && sent * 20 >= ITEMS * changes) {
    changes++;
    changeOptions();
  }
  if (!disposed && sent * 2 >= ITEMS) {
    disposed = true;
    pacers.get("doomed").pacer.dispose();
  }
  const bytes = memory();
  peak = Math.max(peak, bytes);
  while (tenth <= 10 && sent * 10 >= ITEMS * tenth) {
    const pending = [...pacers.values()].reduce((sum, s) => sum + s.pending, 0);
    // After a gc when there is one, so the curve shows what is kept, not garbage.
    curve.push({ percent: tenth * 10, bytes: (gc(), memory()), external: external(), pending, virtualS: clock.now / 1000 });
    tenth++;
  }
}

for (const state of pacers.values()) after(0, () => page(state));

// Drive the fake clock one timer at a time; setImmediate lets every promise reaction of
// that timer run before the next one fires.
let steps = 0;
while (clock.countTimers() > 0) {
  clock.next();
  steps++;
  if (steps % 256 === 0) {
    peak = Math.max(peak, memory());
    peakExternal = Math.max(peakExternal, external());
  }
  await new Promise((resolve) => setImmediate(resolve));
  if (failure) break;
  if (clock.now > MAX_VIRTUAL_MS) {
    failure = new Error(`after ${MAX_VIRTUAL_MS / 3600_000} virtual hours ${sent} of ${ITEMS} items are sent: the pacers stall`);
  }
}
await new Promise((resolve) => setImmediate(resolve));
const wall = (performance.now() - started) / 1000;

// ----- checks and report -----

try {
  if (failure) throw failure;
  check(sent === ITEMS, `${sent} of ${ITEMS} items were sent`);
  check(settledCount === ITEMS, `${ITEMS - settledCount} translate promises never settled`);
  console.log(`batch-pacer wasm soak: ${ITEMS} items, seed ${SEED}`);
  console.log();
  console.log("| pacer | items | ok | failed | aborted | disposed | calls | retries | mismatches | fallbacks | 429s | max unsettled |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  const totals = { ok: 0, failed: 0, aborted: 0, disposed: 0 };
  for (const state of pacers.values()) {
    const s = state.pacer.stats();
    check(state.pending === 0, `${state.name}: ${state.pending} items unsettled`);
    check(s.pending === 0 && s.queued === 0 && s.inFlight === 0, () => `${state.name}: gauges not empty: ${JSON.stringify(s)}`);
    check(s.items === s.succeeded + s.failed + s.aborted + s.disposed, `${state.name}: items do not add up`);
    // A promise shows only its first settlement; the pacer counts any later one it dropped.
    check(s.duplicateSettlements === 0, `${state.name}: ${s.duplicateSettlements} items settled a second time`);
    check(
      s.succeeded === state.ok && s.failed === state.failed && s.aborted === state.aborted && s.disposed === state.disposed,
      () => `${state.name}: stats ${JSON.stringify(s)} disagree with what settled ${JSON.stringify({ ...state, pacer: undefined, events: undefined })}`,
    );
    totals.ok += state.ok;
    totals.failed += state.failed;
    totals.aborted += state.aborted;
    totals.disposed += state.disposed + state.disposedAfter;
    console.log(
      `| ${state.name} | ${s.items} | ${s.succeeded} | ${s.failed} | ${s.aborted} | ${s.disposed + state.disposedAfter} | ${s.providerCalls} | ${s.retries} | ${s.countMismatches} | ${s.fallbacks} | ${s.rateLimited} | ${state.maxPending} |`,
    );
  }
  const dedup = [...pacers.values()].reduce((sum, s) => sum + s.pacer.stats().dedupHits, 0);
  const cache = [...pacers.values()].reduce((sum, s) => sum + s.pacer.stats().cacheHits, 0);
  console.log();
  console.log(
    `settled exactly once: ${settledCount} of ${sent} items (ok ${totals.ok}, failed ${totals.failed}, aborted ${totals.aborted}, disposed ${totals.disposed}); dedup hits ${dedup}, cache hits ${cache}; no translation misassigned`,
  );
  const failedBy = new Map();
  for (const state of pacers.values()) for (const [k, v] of state.failedBy) failedBy.set(k, (failedBy.get(k) ?? 0) + v);
  console.log(`failed items by code: ${[...failedBy].sort().map(([k, v]) => `${k} ${v}`).join(", ")}`);
  console.log(`provider calls ${calls}: ${[...faults].sort().map(([k, v]) => `${k} ${v}`).join(", ")}`);
  const events = new Map();
  for (const state of pacers.values()) for (const [k, v] of state.events) events.set(k, (events.get(k) ?? 0) + v);
  console.log(`events: ${[...events].sort().map(([k, v]) => `${k} ${v}`).join(", ")}`);
  console.log(`time: ${wall.toFixed(2)} s wall (${Math.round(ITEMS / wall)} items/s), ${Math.round(clock.now / 1000)} s virtual, ${steps} timers`);

  const endBytes = (gc(), memory());
  const endExternal = external();
  for (const state of pacers.values()) state.pacer.dispose();
  pacers.clear();
  const afterDispose = (gc(), memory());
  const afterDisposeExternal = external();
  console.log();
  console.log(
    `memory: JS = heapUsed + arrayBuffers${typeof globalThis.gc === "function" ? " after gc" : " (run with --expose-gc for steadier figures)"}; external holds the wasm memory`,
  );
  console.log("| sent | JS | external | unsettled | virtual s |");
  console.log("|---:|---:|---:|---:|---:|");
  for (const point of curve) {
    console.log(`| ${point.percent}% | ${mib(point.bytes)} | ${mib(point.external)} | ${point.pending} | ${Math.round(point.virtualS)} |`);
  }
  console.log(
    `memory: start ${mib(startedMemory)}, peak ${mib(peak)} (sampled between timers, garbage included), end ${mib(endBytes)} (pacers idle, alive), ${mib(afterDispose)} after disposing and dropping them`,
  );
  console.log(
    `external (wasm memory): start ${mib(startedExternal)}, peak ${mib(peakExternal)}, end ${mib(endExternal)}, ${mib(afterDisposeExternal)} after disposing (a wasm memory never shrinks)`,
  );
} catch (error) {
  console.error(error.stack ?? String(error));
  process.exit(1);
}
