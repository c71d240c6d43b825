// openAIProvider({ stream: true }) in a real browser (Chromium): a page and a module
// service worker import the installed package, read a streamed completion from a
// chat-completions server on 127.0.0.1 (the same origin), written in small pieces that
// cut multi-byte characters, both directly and through BatchPacer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { existsSync, realpathSync } from "node:fs";
import { dirname, join, normalize, extname } from "node:path";
import { fileURLToPath } from "node:url";

import { completionStream } from "./chat-server.mjs";
import { launchChromium, playwright } from "./chromium.mjs";

const packageDir = dirname(dirname(fileURLToPath(import.meta.resolve("batch-pacer"))));

const skip = playwright && existsSync("/usr/bin/chromium") ? false : "needs playwright-core and /usr/bin/chromium";

const TEXTS = ["Grüße aus Köln", "東京の天気は晴れ", "Ein Fest 🎉 für alle"];
const translated = (text) => `«${text}» 🇩🇪 übersetzt`;
const USAGE = { prompt_tokens: 30, completion_tokens: 12 };

// The same scenario in every context: one request read directly, then three paragraphs
// through a pacer (one streamed batch).
const SCENARIO = `
import init, { BatchPacer, openAIProvider } from "/batch-pacer/js/index.js";
export async function run() {
  await init();
  const provider = openAIProvider({ baseUrl: self.location.origin + "/v1", model: "m", stream: true });
  const direct = [];
  const request = { texts: ["Hallo"], ids: ["1"], text: "Hallo", instructions: "", isBatch: false, sourceLang: "de",
    targetLang: "en", providerId: "openai", context: "", attempt: 0, signal: new AbortController().signal };
  for await (const value of await provider(request)) direct.push(value);
  const pacer = new BatchPacer(provider, { maxItemsPerBatch: 3 });
  const texts = ${JSON.stringify(TEXTS)};
  const out = await Promise.all(texts.map((text) =>
    pacer.translate({ text, sourceLang: "de", targetLang: "en", providerId: "openai" })));
  const stats = pacer.stats();
  pacer.dispose();
  return { direct, out, stats };
}`;

const FILES = {
  "/scenario.js": SCENARIO,
  "/index.html": `<!doctype html><meta charset="utf-8"><title>streamed openAIProvider in a page</title>
<script type="module">
import { run } from "/scenario.js";
window.pageResult = run().catch((e) => ({ error: String(e && e.stack || e) }));
</script>`,
  "/blank.html": `<!doctype html><meta charset="utf-8"><title>nothing loaded</title>`,
  "/sw.js": `import { run } from "/scenario.js";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("message", (event) => {
  event.waitUntil(run().then((r) => event.source.postMessage(r), (e) => event.source.postMessage({ error: String(e && e.stack || e) })));
});`,
};

const TYPES = { ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };

/** A faithful streamed answer to a chat-completions body: each segment translated. */
function answer(body) {
  const user = body.messages.at(-1).content;
  const segments = user.split("\n").map((line) => /^(<[^>]+>)([\s\S]*)(<\/[^>]+>)$/.exec(line));
  if (segments.some((s) => s === null)) return completionStream([translated(user)], USAGE);
  return completionStream(segments.map(([, open, text, close]) => `${open}${translated(text)}${close}\n`), USAGE);
}

/** Writes `text` three bytes at a time (cutting multi-byte characters), a turn of the event loop apart. */
async function writeSlowly(res, text) {
  const bytes = new TextEncoder().encode(text);
  res.socket?.setNoDelay(true);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (let at = 0; at < bytes.length && !res.destroyed; at += 3) {
    res.write(bytes.subarray(at, at + 3));
    await new Promise((resolve) => setImmediate(resolve));
  }
  res.end();
}

let server;
let base;
/** The chat-completions bodies the server received. */
const bodies = [];
before(async () => {
  if (skip) return;
  const root = realpathSync(packageDir);
  server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    try {
      if (path === "/v1/chat/completions" && req.method === "POST") {
        let raw = "";
        for await (const chunk of req) raw += chunk;
        const body = JSON.parse(raw);
        bodies.push(body);
        return await writeSlowly(res, answer(body));
      }
      if (FILES[path]) {
        res.writeHead(200, { "content-type": TYPES[extname(path)] ?? "text/html" });
        return res.end(FILES[path]);
      }
      if (path.startsWith("/batch-pacer/")) {
        const file = normalize(join(root, path.slice("/batch-pacer/".length)));
        if (!file.startsWith(root)) throw new Error("outside");
        const body = await readFile(file);
        res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
        return res.end(body);
      }
    } catch {
      // fall through to 404
    }
    if (!res.headersSent) res.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => server?.close());

async function withPage(t, path, fn) {
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

function assertScenario(result) {
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.direct.filter((v) => typeof v === "string").join(""), translated("Hallo"));
  assert.deepEqual(result.direct.at(-1), { usage: { inputTokens: 30, outputTokens: 12 } });
  assert.deepEqual(result.out, TEXTS.map(translated));
  assert.equal(result.stats.streamedCalls, 1, "the three paragraphs came in one streamed batch");
  assert.equal(result.stats.inputTokens, 30);
  assert.equal(result.stats.outputTokens, 12);
  const last = bodies.slice(-2);
  assert.ok(last.every((b) => b.stream === true && b.stream_options?.include_usage === true));
}

test("in a page", { skip }, (t) =>
  withPage(t, "/index.html", async (page) => {
    assertScenario(await page.evaluate(() => window.pageResult));
  }));

test("in a module service worker (static import, no window)", { skip }, (t) =>
  withPage(t, "/blank.html", async (page) => {
    const result = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.register("/sw.js", { type: "module" });
      const worker = registration.installing ?? registration.waiting ?? registration.active;
      await new Promise((resolve) => {
        if (worker.state === "activated") return resolve();
        worker.addEventListener("statechange", () => worker.state === "activated" && resolve());
      });
      return new Promise((resolve) => {
        navigator.serviceWorker.addEventListener("message", (e) => resolve(e.data), { once: true });
        worker.postMessage("run");
      });
    });
    assertScenario(result);
  }));
