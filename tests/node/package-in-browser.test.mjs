// The installed package in a real browser: a page, a dedicated worker and a module
// service worker each import it statically, initialise it from the .wasm shipped beside
// the module, and translate through a batching provider. A page and a module service
// worker also stream from a chat-completions server on the same origin through
// openAIProvider({ stream: true }), the events written a few bytes at a time so that the
// browser's reads cut multi-byte characters.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { launchChromium, playwright } from "./chromium.mjs";
import { servePackage, contentType } from "./package-server.mjs";
import { completionStream } from "./chat-server.mjs";
import { skipIfMissing } from "./requirements.mjs";

const skip = skipIfMissing(
  playwright && existsSync("/usr/bin/chromium") ? false : "needs playwright-core and /usr/bin/chromium",
);

// The same scenario in every context: 6 paragraphs, one with a %% line, batched by 4.
// `imports` and `initialise` choose how the core is loaded.
const scenario = ({ imports, initialise }) => `
import init, { initSync, BatchPacer, PacerError, cacheKey } from "/batch-pacer/js/index.js";
${imports}
export async function run() {
  ${initialise}
  const calls = [];
  const pacer = new BatchPacer(async (req) => {
    calls.push({ isBatch: req.isBatch, n: req.texts.length, texts: req.texts.join(" | "), at: performance.now(),
      layout: req.markers ? "markers" : "separator" in req ? "separator" : "single" });
    // The markers layout (the default): each translation between its segment's markers.
    return req.texts.map((t, i) => req.markers ? req.markers[i][0] + "<" + t + ">" + req.markers[i][1] : "<" + t + ">").join("\\n");
  }, { batchDelayMs: 200 });
  const texts = ["one", "two\\n%%\\nthree", "four", "five", "six", "seven"];
  const out = await Promise.all(texts.map((text) =>
    pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "p" })));
  let invalid = null;
  try { new BatchPacer(() => "", { rate: 0 }); } catch (e) { invalid = { code: e.code, message: e.message, isPacerError: e instanceof PacerError }; }
  return { ok: out.every((t, i) => t === "<" + texts[i] + ">"), out, calls, stats: pacer.stats(), invalid,
    key: cacheKey({ text: "Hello, world!", sourceLang: "en", targetLang: "de", providerId: "openai" }),
    hasWindow: typeof window !== "undefined" };
}`;

const FILES = {
  "/scenario.js": scenario({ imports: "", initialise: "await init();" }),
  // batch-pacer/inline-wasm: initialised at the module's top level, synchronously.
  "/scenario-inline.js": scenario({
    imports: `import { wasmBytes } from "/batch-pacer/pkg/inline-wasm.js";\ninitSync(wasmBytes());`,
    initialise: "",
  }),
  "/index.html": `<!doctype html><meta charset="utf-8"><title>batch-pacer in a page</title>
<script type="module">
import { run } from "/scenario.js";
window.pageResult = run().catch((e) => ({ error: String(e && e.stack || e) }));
</script>`,
  "/worker.js": `import { run } from "/scenario.js";
run().then((r) => postMessage(r), (e) => postMessage({ error: String(e && e.stack || e) }));`,
  "/sw.js": `import { run } from "/scenario.js";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("message", (event) => {
  event.waitUntil(run().then((r) => event.source.postMessage(r), (e) => event.source.postMessage({ error: String(e && e.stack || e) })));
});`,
};

FILES["/sw-inline.js"] = FILES["/sw.js"].replace("/scenario.js", "/scenario-inline.js");
FILES["/index-inline.html"] = FILES["/index.html"].replace("/scenario.js", "/scenario-inline.js");
FILES["/blank.html"] = `<!doctype html><meta charset="utf-8"><title>nothing loaded</title>`;

// The streamed openAIProvider scenario: one request read directly, then three paragraphs
// through a pacer (one streamed batch).
const STREAM_TEXTS = ["Grüße aus Köln", "東京の天気は晴れ", "Ein Fest 🎉 für alle"];
const streamTranslation = (text) => `«${text}» 🇩🇪 übersetzt`;
const STREAM_USAGE = { prompt_tokens: 30, completion_tokens: 12 };
FILES["/openai-stream.js"] = `
import init, { BatchPacer, openAIProvider } from "/batch-pacer/js/index.js";
export async function run() {
  await init();
  const provider = openAIProvider({ baseUrl: self.location.origin + "/v1", model: "m", stream: true });
  const direct = [];
  const request = { texts: ["Hallo"], ids: ["1"], text: "Hallo", instructions: "", isBatch: false, sourceLang: "de",
    targetLang: "en", providerId: "openai", context: "", attempt: 0, signal: new AbortController().signal };
  for await (const value of await provider(request)) direct.push(value);
  const pacer = new BatchPacer(provider, { maxItemsPerBatch: 3 });
  const texts = ${JSON.stringify(STREAM_TEXTS)};
  const out = await Promise.all(texts.map((text) =>
    pacer.translate({ text, sourceLang: "de", targetLang: "en", providerId: "openai" })));
  const stats = pacer.stats();
  pacer.dispose();
  return { direct, out, stats };
}`;
FILES["/openai-stream.html"] = FILES["/index.html"].replace("/scenario.js", "/openai-stream.js");
FILES["/sw-openai-stream.js"] = FILES["/sw.js"].replace("/scenario.js", "/openai-stream.js");

/** A faithful streamed answer to a chat-completions body: each segment translated. */
function streamedAnswer(body) {
  const user = body.messages.at(-1).content;
  const segments = user.split("\n").map((line) => /^(<[^>]+>)([\s\S]*)(<\/[^>]+>)$/.exec(line));
  if (segments.some((s) => s === null)) return completionStream([streamTranslation(user)], STREAM_USAGE);
  return completionStream(segments.map(([, open, text, close]) => `${open}${streamTranslation(text)}${close}\n`), STREAM_USAGE);
}

/**
 * Writes `text` three bytes at a time (cutting multi-byte characters), 2 ms apart so that
 * the browser reads the pieces apart rather than together.
 */
async function writeSlowly(res, text) {
  const bytes = new TextEncoder().encode(text);
  res.socket?.setNoDelay(true);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (let at = 0; at < bytes.length && !res.destroyed; at += 3) {
    res.write(bytes.subarray(at, at + 3));
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  res.end();
}

/** The chat-completions bodies the server received. */
const chatBodies = [];

let server;
let base;
/** Every path the server was asked for, in order. */
const served = [];
before(async () => {
  if (skip) return;
  ({ server, base } = await servePackage(async (req, res, path) => {
    served.push(path);
    if (path === "/v1/chat/completions" && req.method === "POST") {
      let raw = "";
      for await (const chunk of req) raw += chunk;
      const body = JSON.parse(raw);
      chatBodies.push(body);
      await writeSlowly(res, streamedAnswer(body));
      return true;
    }
    if (!FILES[path]) return false;
    res.writeHead(200, { "content-type": contentType(path) });
    res.end(FILES[path]);
    return true;
  }));
});
after(() => server?.close());

async function withPage(t, fn, path = "/index.html") {
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${base}${path}`);
  const result = await fn(page);
  assert.deepEqual(errors, []);
  return result;
}

function assertScenario(result, { hasWindow }) {
  assert.equal(result.error, undefined, result.error);
  assert.ok(result.ok, JSON.stringify(result.out));
  const shape = result.calls.map(({ isBatch, n, layout }) => ({ isBatch, n, layout }));
  assert.deepEqual(shape, [{ isBatch: true, n: 4, layout: "markers" }, { isBatch: true, n: 2, layout: "markers" }], JSON.stringify(result.calls));
  assert.equal(result.stats.items, 6);
  assert.equal(result.stats.providerCalls, 2);
  assert.deepEqual(result.invalid, { code: "invalid_options", message: "rate must be a finite number > 0 (got 0)", isPacerError: true });
  assert.equal(result.key, "9b8ea9be5963e961c9631c9bfedf9b193acd9eb660007d3d18a59ae4fd1c8964");
  assert.equal(result.hasWindow, hasWindow);
}

test("in a page", { skip }, (t) =>
  withPage(t, async (page) => {
    assertScenario(await page.evaluate(() => window.pageResult), { hasWindow: true });
  }));

test("in a dedicated module worker", { skip }, (t) =>
  withPage(t, async (page) => {
    const result = await page.evaluate(() => new Promise((resolve) => {
      const worker = new Worker("/worker.js", { type: "module" });
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => resolve({ error: String(e.message) });
    }));
    assertScenario(result, { hasWindow: false });
  }));

/** Registers the module service worker `script`, asks it to run, and returns its answer. */
function inServiceWorker(page, script) {
  return page.evaluate(async (script) => {
    const registration = await navigator.serviceWorker.register(script, { type: "module" });
    const worker = registration.installing ?? registration.waiting ?? registration.active;
    await new Promise((resolve) => {
      if (worker.state === "activated") return resolve();
      worker.addEventListener("statechange", () => worker.state === "activated" && resolve());
    });
    return new Promise((resolve) => {
      navigator.serviceWorker.addEventListener("message", (e) => resolve(e.data), { once: true });
      worker.postMessage("run");
    });
  }, script);
}

test("in a module service worker (static import, no window)", { skip }, (t) =>
  withPage(t, async (page) => {
    assertScenario(await inServiceWorker(page, "/sw.js"), { hasWindow: false });
  }));

/** Runs `fn` and checks that batch-pacer/inline-wasm was loaded and the .wasm never was. */
async function withoutWasmFetch(fn) {
  const from = served.length;
  await fn();
  const paths = served.slice(from);
  assert.ok(paths.includes("/batch-pacer/pkg/inline-wasm.js"), paths.join(", "));
  assert.ok(!paths.some((p) => p.endsWith(".wasm")), paths.join(", "));
}

test("in a page initialised inline at top level: the .wasm is never fetched", { skip }, (t) =>
  withoutWasmFetch(() =>
    withPage(t, async (page) => {
      assertScenario(await page.evaluate(() => window.pageResult), { hasWindow: true });
    }, "/index-inline.html")));

test("in a module service worker initialised inline at top level: the .wasm is never fetched", { skip }, (t) =>
  withoutWasmFetch(() =>
    withPage(t, async (page) => {
      assertScenario(await inServiceWorker(page, "/sw-inline.js"), { hasWindow: false });
    }, "/blank.html")));

function assertStreamScenario(result) {
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.direct.filter((v) => typeof v === "string").join(""), streamTranslation("Hallo"));
  assert.deepEqual(result.direct.at(-1), { usage: { inputTokens: 30, outputTokens: 12 } });
  assert.deepEqual(result.out, STREAM_TEXTS.map(streamTranslation));
  assert.equal(result.stats.streamedCalls, 1, "the three paragraphs came in one streamed batch");
  assert.equal(result.stats.inputTokens, 30);
  assert.equal(result.stats.outputTokens, 12);
  assert.ok(chatBodies.slice(-2).every((b) => b.stream === true && b.stream_options?.include_usage === true));
}

test("openAIProvider streaming in a page: events cut inside characters, read directly and through a pacer", { skip }, (t) =>
  withPage(t, async (page) => {
    assertStreamScenario(await page.evaluate(() => window.pageResult));
  }, "/openai-stream.html"));

test("openAIProvider streaming in a module service worker", { skip }, (t) =>
  withPage(t, async (page) => {
    assertStreamScenario(await inServiceWorker(page, "/sw-openai-stream.js"));
  }, "/blank.html"));
