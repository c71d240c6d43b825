// A module service worker shaped like an MV3 background worker: batch-pacer is imported
// statically, listeners are registered synchronously, and initialisation is awaited
// inside the handler. It runs the benchmark's requests and posts the figures back.
import init, { BatchPacer } from "./js/index.js";
import { paragraphs, item, LANGS, UNLIMITED, UNLIMITED_BATCHED } from "./bench/data.mjs";
import { instantProvider, request } from "./bench/providers.mjs";

// Time from the worker's start to its module graph evaluated (imports fetched and run).
const evaluatedMs = performance.now();

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("message", (event) => {
  const port = event.ports[0];
  const reply = handle(event.data).then(
    (result) => port.postMessage({ ok: true, result }),
    (error) => port.postMessage({ ok: false, error: String(error?.stack ?? error) }),
  );
  event.waitUntil(reply);
});

let texts = [];

async function handle(message) {
  switch (message.type) {
    case "coldStart": {
      const start = performance.now();
      await init();
      const initialised = performance.now();
      const pacer = new BatchPacer(instantProvider);
      const constructed = performance.now();
      pacer.dispose();
      return { evaluatedMs, initMs: initialised - start, constructMs: constructed - initialised };
    }
    case "overhead": {
      await init();
      if (texts.length !== message.n) texts = paragraphs(message.n);
      const started = performance.now();
      const calls =
        message.impl === "direct"
          ? await direct(texts)
          : await paced(texts, message.impl === "batched" ? UNLIMITED_BATCHED : UNLIMITED);
      return { usPerItem: ((performance.now() - started) * 1000) / texts.length, calls };
    }
    default:
      throw new Error(`unknown request ${message.type}`);
  }
}

async function direct(list) {
  await Promise.all(list.map((text, i) => instantProvider(request([text], "en", LANGS[i % LANGS.length]))));
  return list.length;
}

async function paced(list, options) {
  const pacer = new BatchPacer(instantProvider, options);
  await Promise.all(list.map((text, i) => pacer.translate(item(text, LANGS[i % LANGS.length]))));
  const calls = pacer.stats().providerCalls;
  pacer.dispose();
  return calls;
}
