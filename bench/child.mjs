// Measurements that need a fresh Node process, one per run; prints one JSON line.
//
//   node bench/child.mjs cold-start <impl> <package entry URL>
//   node --expose-gc bench/child.mjs memory <impl> <items> <package entry URL>
//
// <impl> is batch-pacer, p-queue, bottleneck or (memory only) floor.

import { paragraphs, item } from "./data.mjs";

const [mode, impl, ...rest] = process.argv.slice(2);

/** Imports the implementation and builds one instance; `hold` queues items on it. */
async function load(name, entryUrl) {
  switch (name) {
    case "batch-pacer": {
      const module = await import(entryUrl);
      return {
        init: () => module.default(),
        // Memory: nothing is ever dispatched (no token after the first call, no batch due).
        create: () => new module.BatchPacer(() => new Promise(() => {}), { rate: 1e-6, capacity: 1, batchDelayMs: 1e9 }),
        hold: (pacer, text) => pacer.translate(item(text)),
      };
    }
    case "p-queue": {
      const { default: PQueue } = await import("p-queue");
      return {
        init: async () => {},
        create: () => new PQueue({ concurrency: 1, autoStart: false }),
        hold: (queue, text) => queue.add(() => Promise.resolve(text)),
      };
    }
    case "bottleneck": {
      const { default: Bottleneck } = await import("bottleneck");
      return {
        init: async () => {},
        create: () => new Bottleneck({ maxConcurrent: 1, reservoir: 0 }),
        hold: (limiter, text) => limiter.schedule(() => Promise.resolve(text)),
      };
    }
    case "floor": {
      // The least any JS queue holds: the item and a pending promise with its settlers.
      return {
        init: async () => {},
        create: () => [],
        hold: (queue, text) =>
          new Promise((resolve, reject) => queue.push({ item: item(text), resolve, reject })),
      };
    }
    default:
      throw new Error(`unknown implementation ${name}`);
  }
}

async function coldStart(entryUrl) {
  const started = performance.now();
  const lib = await load(impl, entryUrl);
  const imported = performance.now();
  await lib.init();
  const initialised = performance.now();
  lib.create();
  const constructed = performance.now();
  return {
    importMs: imported - started,
    initMs: initialised - imported,
    constructMs: constructed - initialised,
    // performance.now() counts from the process's start.
    sinceProcessStartMs: constructed,
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Heap + external (ArrayBuffers and the wasm linear memory) after a full collection. */
async function held() {
  await settle();
  for (let i = 0; i < 3; i++) globalThis.gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

async function memory(count, entryUrl) {
  if (typeof globalThis.gc !== "function") throw new Error("run with --expose-gc");
  const texts = paragraphs(count);
  const lib = await load(impl, entryUrl);
  await lib.init();
  const before = await held();
  const queue = lib.create();
  const pending = texts.map((text) => lib.hold(queue, text));
  const after = await held();
  // Both stay reachable until here, so the collection above could free neither.
  if (pending.length !== count || !queue) throw new Error("not every item was queued");
  return { bytesPerItem: (after - before) / count };
}

const result = mode === "cold-start" ? await coldStart(rest[0]) : await memory(Number(rest[0]), rest[1]);
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
