// The installed package in a real browser: a page, a dedicated worker and a module
// service worker each import it statically, initialise it from the .wasm shipped beside
// the module, and translate through a batching provider.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { launchChromium, playwright } from "./chromium.mjs";
import { servePackage, contentType } from "./package-server.mjs";

const skip = playwright && existsSync("/usr/bin/chromium") ? false : "needs playwright-core and /usr/bin/chromium";

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

let server;
let base;
/** Every path the server was asked for, in order. */
const served = [];
before(async () => {
  if (skip) return;
  ({ server, base } = await servePackage(async (req, res, path) => {
    served.push(path);
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
