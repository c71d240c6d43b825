// A streamed reply in a real browser: a page imports the installed package, its provider
// fetches from a real HTTP server on 127.0.0.1 that writes the marked reply in small
// chunks (multi-byte characters cut across them), and returns the response body as a
// ReadableStream of text. Paragraphs resolve before the reply ends, previews arrive, and
// every paragraph ends with its own translation.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { launchChromium, playwright } from "./chromium.mjs";
import { servePackage } from "./package-server.mjs";
import { skipIfMissing } from "./requirements.mjs";

// Like every browser suite: under CI=true (and in npm test) a missing browser fails here
// instead of letting the suite pass without running.
const skip = skipIfMissing(playwright && existsSync("/usr/bin/chromium") ? false : "needs playwright-core and /usr/bin/chromium");

const TEXTS = [
  "Short one.",
  "A much longer second paragraph — it goes on for quite a while, with many more words than the others.",
  "Third, brief.",
  "And a fourth paragraph of middling length to close the batch.",
];

const PAGE = `<!doctype html><meta charset="utf-8"><title>streaming</title>
<script type="module">
import init, { BatchPacer } from "/batch-pacer/js/index.js";
async function run() {
  await init();
  const texts = ${JSON.stringify(TEXTS)};
  const order = [];
  const previews = texts.map(() => []);
  const pacer = new BatchPacer(async (req) => {
    const res = await fetch("/stream", { method: "POST", body: JSON.stringify({ texts: req.texts, markers: req.markers }), signal: req.signal });
    order.push("response");
    // A ReadableStream of text; "end" is noted when its last byte has come in.
    return res.body.pipeThrough(new TextDecoderStream())
      .pipeThrough(new TransformStream({ flush: () => { order.push("end"); } }));
  }, { maxItemsPerBatch: 4 });
  const out = await Promise.all(texts.map((text, i) =>
    pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "p", onPartial: (p) => previews[i].push(p) })
      .then((t) => (order.push("resolved " + i), t))));
  return { out, order, previews, stats: pacer.stats() };
}
window.result = run().catch((e) => ({ error: String(e && e.stack || e) }));
</script>`;

/** The server's translation: upper case and a multi-byte mark on each side. */
const translate = (x) => `«${x.toUpperCase()}» ✓`;

let server;
let base;
before(async () => {
  if (skip) return;
  ({ server, base } = await servePackage(async (req, res, path) => {
    if (path === "/index.html") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(PAGE);
      return true;
    }
    if (path !== "/stream") return false;
    let body = "";
    for await (const chunk of req) body += chunk;
    const { texts, markers } = JSON.parse(body);
    const reply = Buffer.from(texts.map((x, i) => markers[i][0] + translate(x) + markers[i][1] + "\n").join(""));
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    // 7-byte chunks: « » and ✓ are cut across chunks.
    for (let at = 0; at < reply.length; at += 7) {
      res.write(reply.subarray(at, at + 7));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    res.end();
    return true;
  }));
});
after(() => server?.close());

test("a streamed reply in Chromium: a ReadableStream body, early resolution, previews", { skip }, async (t) => {
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${base}/index.html`);
  const result = await page.evaluate(() => window.result);
  assert.equal(result.error, undefined, result.error);
  assert.deepEqual(errors, []);
  assert.deepEqual(result.out, TEXTS.map(translate));
  assert.equal(result.stats.streamedCalls, 1);
  assert.equal(result.stats.providerCalls, 1);
  assert.ok(result.stats.earlyResolved >= 1, JSON.stringify(result.stats));
  // The first paragraph resolved before the reply's last byte came in.
  assert.ok(result.order.indexOf("end") > 0, result.order.join(", "));
  assert.ok(result.order.indexOf("resolved 0") < result.order.indexOf("end"), result.order.join(", "));
  for (const [i, shown] of result.previews.entries()) {
    for (const p of shown) assert.ok(translate(TEXTS[i]).startsWith(p), `${i}: ${p}`);
  }
  assert.ok(result.previews[1].length >= 2, JSON.stringify(result.previews[1]));
});
