// The recipes for translation APIs that take arrays (docs/recipes/), run as written: each
// code block of the providers guide (docs/guides/providers.md) that shows one is the
// recipe file itself, and each recipe, importing
// the installed package, translates against a local server that speaks its API's
// documented format. Array batches arrive in one request each, in order.
// Run: bash tests/node/run-package-tests.sh

import { test, before } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import init, { PacerError } from "batch-pacer";
import { startMicrosoftTranslatorServer } from "./ms-translator-server.mjs";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const RECIPES = ["microsoft-translator.js", "fetch-array.js"];
const KEY = "ms-test-key-1234";

/** Each recipe copied beside this test, so its `import "batch-pacer"` finds the installed package. */
const recipes = {};
before(async () => {
  await init();
  const here = join(dirname(fileURLToPath(import.meta.url)), "recipes");
  await mkdir(here, { recursive: true });
  for (const name of RECIPES) {
    await copyFile(join(repo, "docs/recipes", name), join(here, name));
    recipes[name] = await import(pathToFileURL(join(here, name)).href);
  }
});

/** The providers guide's fenced code blocks, where the recipes are shown. */
const GUIDE = "docs/guides/providers.md";
async function guideBlocks() {
  const guide = await readFile(join(repo, GUIDE), "utf8");
  return [...guide.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

for (const name of RECIPES) {
  test(`the providers guide shows docs/recipes/${name} as it is`, async () => {
    const file = await readFile(join(repo, "docs/recipes", name), "utf8");
    assert.ok((await guideBlocks()).includes(file), `${GUIDE} has no js block equal to docs/recipes/${name}`);
  });
}

const paragraph = (i) => `Paragraph ${i} of the page, with its own words (${"x".repeat(i % 7)}).`;
const item = (text, providerId, extra = {}) => ({ text, sourceLang: "en", targetLang: "de", providerId, llm: false, ...extra });

test("Microsoft Translator recipe: 150 paragraphs go as two array requests of 100 and 50 { Text } in order, each paragraph gets its own translation", async (t) => {
  const server = await startMicrosoftTranslatorServer(t, { key: KEY });
  const pacer = recipes["microsoft-translator.js"].microsoftTranslatorPacer({ key: KEY, region: "westeurope", endpoint: server.url });
  t.after(() => pacer.dispose());
  const texts = Array.from({ length: 150 }, (_, i) => paragraph(i));
  const translations = await Promise.all(texts.map((text) => pacer.translate(item(text, "ms"))));
  assert.deepEqual(translations, texts.map((text) => `[de] ${text}`));
  assert.equal(server.requests.length, 2);
  const [first, second] = server.requests;
  assert.deepEqual(first.json, texts.slice(0, 100).map((text) => ({ Text: text })));
  assert.deepEqual(second.json, texts.slice(100).map((text) => ({ Text: text })));
  for (const request of server.requests) {
    assert.equal(request.url.searchParams.get("api-version"), "3.0");
    assert.equal(request.url.searchParams.get("to"), "de");
    assert.equal(request.url.searchParams.get("from"), "en");
    assert.equal(request.headers["ocp-apim-subscription-region"], "westeurope");
  }
  assert.equal(pacer.stats().providerCalls, 2);
});

test("Microsoft Translator recipe: a request never exceeds 50,000 characters; a longer page is split between requests", async (t) => {
  const server = await startMicrosoftTranslatorServer(t, { key: KEY });
  const pacer = recipes["microsoft-translator.js"].microsoftTranslatorPacer({ key: KEY, endpoint: server.url });
  t.after(() => pacer.dispose());
  const texts = ["a", "b", "c", "d", "e"].map((letter) => `${letter}.`.repeat(10000)); // 20,000 characters each
  const translations = await Promise.all(texts.map((text) => pacer.translate(item(text, "ms", { sourceLang: "auto" }))));
  // Compared one by one: a diff of 100,000 characters helps nobody.
  translations.forEach((translation, i) => assert.ok(translation === `[de] ${texts[i]}`, `paragraph ${i} got another translation`));
  assert.ok(server.requests.length >= 3, `${server.requests.length} requests for 100,000 characters`);
  const sent = server.requests.flatMap((request) => request.json.map((e) => e.Text));
  assert.ok(sent.length === texts.length && sent.every((text, i) => text === texts[i]), "every paragraph sent once, in order");
  for (const request of server.requests) {
    assert.ok(request.json.reduce((n, e) => n + e.Text.length, 0) <= 50000);
    assert.equal(request.url.searchParams.has("from"), false, "auto: the service detects the language");
  }
});

test("Microsoft Translator recipe: a wrong key fails the items with provider_error and status 401", async (t) => {
  const server = await startMicrosoftTranslatorServer(t, { key: KEY });
  const pacer = recipes["microsoft-translator.js"].microsoftTranslatorPacer({ key: "wrong", endpoint: server.url });
  t.after(() => pacer.dispose());
  const results = await Promise.allSettled(["One.", "Two."].map((text) => pacer.translate(item(text, "ms"))));
  for (const result of results) {
    assert.equal(result.status, "rejected");
    assert.ok(result.reason instanceof PacerError);
    assert.equal(result.reason.code, "provider_error");
    assert.equal(result.reason.status, 401);
  }
  assert.equal(server.requests.length, 1, "one call for the batch, no retry of a refused key");
});

/** A plain array API: POST { texts, source, target } -> { translations }, recorded. */
async function startArrayApi(t) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      const body = JSON.parse(raw);
      requests.push({ headers: req.headers, body });
      const text = JSON.stringify({ translations: body.texts.map((x) => `${body.target}: ${x.split("").reverse().join("")}`) });
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${server.address().port}/translate`, requests };
}

test("fetch array recipe: 40 paragraphs go in one request, in order, and each gets the translation at its own position", async (t) => {
  const api = await startArrayApi(t);
  const pacer = recipes["fetch-array.js"].arrayApiPacer({ url: api.url, headers: { Authorization: "Bearer k" } });
  t.after(() => pacer.dispose());
  const texts = Array.from({ length: 40 }, (_, i) => paragraph(i));
  const translations = await Promise.all(texts.map((text) => pacer.translate(item(text, "api"))));
  assert.deepEqual(translations, texts.map((text) => `de: ${text.split("").reverse().join("")}`));
  assert.equal(api.requests.length, 1);
  assert.deepEqual(api.requests[0].body, { texts, source: "en", target: "de" });
  assert.equal(api.requests[0].headers.authorization, "Bearer k");
});
