// The demo extension end to end in headless Chromium: the MV3 service worker, the
// content script, the options page, and a real HTTP provider on 127.0.0.1 with a quota.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { skipIfMissing } from "./requirements.mjs";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const load = (path) => import(pathToFileURL(join(repo, path)).href);
const harness = await load("extension-demo/harness.mjs");
const { startMockProvider } = await load("extension-demo/mock-provider.mjs");
const { startDemoServer } = await load("extension-demo/demo-server.mjs");
const { pseudoTranslate } = await load("extension-demo/demo-provider.js");

const ready = existsSync("/usr/bin/chromium") && existsSync(join(repo, "extension-demo/vendor/batch-pacer/js/index.js"));
const skip = skipIfMissing(
  ready ? false : "needs /usr/bin/chromium and the built demo (scripts/build-demo.sh)",
);

// The mock's server-sent events reach the pacer through the package's streaming
// openAIProvider; those tests run where the packed package has it. (Every test is
// registered before the first one runs: no await between them.)
let sseSkip = skip;
if (!sseSkip) {
  const { openAIProvider } = await load("extension-demo/vendor/batch-pacer/js/openai.js");
  try {
    openAIProvider({ baseUrl: "http://127.0.0.1:1/v1", model: "m", stream: true });
  } catch {
    sseSkip = "the packed openAIProvider has no stream option";
  }
}

// No cues during tests that only look at the article.
const ARTICLE_ONLY = "?cueStart=600000";
const STRICT = { rate: 1, capacity: 1, maxInFlight: 0, maxCharactersPerBatch: 800, maxItemsPerBatch: 4, batchDelayMs: 100 };
const DEFAULTS = { rate: 8, capacity: 60, maxInFlight: 0, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100 };

let site;
before(async () => {
  if (!skip) site = await startDemoServer({ port: 0 });
});
after(async () => {
  await site?.close();
});

/** One fresh browser (fresh profile, fresh worker state) per test. */
async function withBrowser(t, fn) {
  const browser = await harness.launchChromium();
  t.after(() => browser.close());
  return fn(browser);
}

async function withMock(t, options) {
  const mock = await startMockProvider({ port: 0, ...options });
  t.after(() => mock.close());
  return mock;
}

function useMock(mock, flows) {
  return {
    ...flows,
    provider: { kind: "openai", baseUrl: mock.url, apiKey: "", model: "mock-translator" },
  };
}

/** Every paragraph carries exactly one translation: its own. */
function assertAligned(shown, { allowFailed = false } = {}) {
  assert.ok(shown.length > 50, `only ${shown.length} paragraphs found`);
  for (const item of shown) {
    assert.equal(item.shown, 1, `${item.id} shows ${item.shown} translations`);
    if (item.failed) {
      assert.ok(allowFailed, `${item.id} failed: ${item.translation}`);
      assert.match(item.translation, /not translated/);
      continue;
    }
    const own = pseudoTranslate(item.text.trim(), "de");
    const why = item.translation.trim() === own ? "white space around its own translation" : "another paragraph's translation";
    assert.equal(item.translation, own, `${item.id} got ${why}`);
  }
}

/** Stops the extension's worker; a fresh one (another time origin) takes over. */
async function stopServiceWorker(browser) {
  const { before, after } = await harness.stopServiceWorker(browser);
  assert.notEqual(after, before, "the worker was not stopped");
}

async function openPage(browser, query = "") {
  const page = await browser.context.newPage();
  await page.goto(site.url + query);
  return page;
}

test("the offline demo provider translates the whole page and its subtitles, each under its own paragraph", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const page = await openPage(browser, "?cueStart=100&cueInterval=50");
    const done = await harness.waitTranslated(page, { timeoutMs: 60_000 });
    assert.equal(done.failed, 0);
    assert.equal(done.subtitlesDone, 40);
    assertAligned(await harness.translations(page));
    const stats = await harness.getStats(browser);
    assert.equal(stats.flows.page.pacer.items, done.pageTotal);
    assert.ok(stats.flows.page.pacer.providerCalls * 3 < done.pageTotal, "batching saves calls");
    assert.equal(stats.flows.page.pacer.dedupHits >= 1, true, "the duplicated paragraph shares a call");
    assert.equal(stats.flows.page.pacer.streamedCalls, 0, "with Stream replies off (the default) no reply is streamed");
    // The offline provider reports usage like a real API: the statistics page shows it,
    // for the flow (the pacer's stats) and for the provider (the demo's own bookkeeping).
    for (const flow of ["page", "subtitles"]) {
      assert.ok(stats.flows[flow].pacer.inputTokens > 0 && stats.flows[flow].pacer.outputTokens > 0, `${flow} tokens`);
      assert.ok(stats.flows[flow].byProvider.demo.inputTokens > 0, `${flow} tokens of the demo provider`);
    }
    const statsPage = await browser.context.newPage();
    await statsPage.goto(browser.pageUrl("stats.html"));
    await statsPage.waitForFunction(() => document.documentElement.dataset.statsLoaded === "1");
    const figure = async (selector) => Number((await statsPage.locator(selector).textContent()).replaceAll(",", ""));
    for (const key of ["inputTokens", "outputTokens"]) {
      assert.ok((await figure(`#stats-page [data-stat="${key}"]`)) > 0, `the page flow's ${key} shown`);
      assert.ok((await figure(`#stats-page tr[data-provider="demo"] [data-provider-stat="${key}"]`)) > 0, `the demo provider's ${key} shown`);
    }
    assert.equal(
      await figure(`#stats-page tr[data-provider="demo"] [data-provider-stat="inputTokens"]`),
      stats.flows.page.byProvider.demo.inputTokens,
    );
    const tokenLine = await statsPage.locator("#tokens-page polyline").getAttribute("points");
    assert.ok(tokenLine.trim().split(/\s+/).length >= 2, "the tokens-per-minute chart has a line");
    assert.ok((await statsPage.locator("#tokens-page text").allTextContents()).some((t) => /^Tokens per minute \([1-9][\d,]*\)$/.test(t)));
  }));

test("the strict preset against a 60-per-minute quota with no burst meets no 429", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const mock = await withMock(t, { rpm: 60, burst: 1, latency: 50 });
    await harness.applySettings(browser, useMock(mock, { page: STRICT }));
    const page = await openPage(browser, ARTICLE_ONLY);
    await harness.waitTranslated(page, { cues: false, timeoutMs: 120_000 });
    // The mock's own bucket (60 a minute, burst 1) measures the pacing on its clock: a
    // call closer than the quota allows would have met a 429.
    const stats = mock.stats();
    assert.equal(stats.rateLimited, 0);
    assert.equal(stats.ok, stats.requests, "every call was answered");
    assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")));
  }));

test("the defaults against the same quota absorb the 429s: paused, retried, nothing lost", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const mock = await withMock(t, { rpm: 60, burst: 1, latency: 50 });
    await harness.applySettings(browser, useMock(mock, { page: DEFAULTS }));
    const page = await openPage(browser, ARTICLE_ONLY);
    const done = await harness.waitTranslated(page, { cues: false, timeoutMs: 150_000 });
    assert.equal(done.failed, 0, "no paragraph rejected");
    assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")));
    const stats = await harness.getStats(browser);
    assert.ok(stats.flows.page.pacer.rateLimited > 0, "the burst met 429s");
    assert.ok(stats.flows.page.pacer.retries >= stats.flows.page.pacer.rateLimited, "each 429 was retried");
    // Converged: after the first burst and its pause, 429s are rare.
    const times = mock.stats().requestTimes;
    assert.ok(times.length >= 15);
  }));

test("a settings change on the options page changes the pacing live", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    // Until the change, the mock's own bucket holds the calls to 40 a minute (room above
    // the 30 a minute of rate 0.5 for arrival jitter): a 429 would show a faster pace.
    const mock = await withMock(t, { rpm: 40, burst: 1, latency: 20 });
    await harness.applySettings(browser, useMock(mock, { page: { ...STRICT, rate: 0.5 } }));
    const page = await openPage(browser, ARTICLE_ONLY);
    while (mock.stats().ok < 3) await page.waitForTimeout(100);
    const options = await browser.context.newPage();
    await options.goto(browser.pageUrl("options.html"));
    await options.fill("#page-rate", "10");
    await options.fill("#page-capacity", "5");
    // The new rate is live as soon as the background applies it, before the page shows
    // it: calls before the click were surely paced at the old rate.
    mock.setOptions({ rpm: 0 });
    const changedAt = Date.now();
    await options.click("#apply");
    await options.waitForSelector("#status[data-state=ok]");
    await harness.waitTranslated(page, { cues: false, timeoutMs: 60_000 });
    const times = mock.stats().requestTimes;
    const slow = times.filter((at) => at < changedAt);
    const fast = times.filter((at) => at >= changedAt);
    assert.equal(mock.stats().rateLimited, 0, "at most 40 calls a minute before the change");
    assert.ok(fast.length >= 5, "most of the page went after the change");
    // On the mock's clock, relative to the pace it measured before the change (so a slow
    // machine stretches both): calls after it come at least four times closer together.
    const gapsOf = (times) => times.slice(1).map((at, i) => at - times[i]).sort((a, b) => a - b);
    const slowGaps = gapsOf(slow);
    const fastGaps = gapsOf(fast);
    const medianFast = fastGaps[fastGaps.length >> 1];
    assert.ok(medianFast * 4 < slowGaps[0], `the new rate is live: gaps ${fastGaps} after, ${slowGaps} before`);
  }));

test("an invalid setting is refused with the package's own message and changes nothing", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const options = await browser.context.newPage();
    await options.goto(browser.pageUrl("options.html"));
    await options.fill("#page-rate", "-1");
    await options.click("#apply");
    await options.waitForSelector("#status[data-state=error]");
    assert.match(await options.textContent("#page-rate-error"), /rate must be a finite number > 0 \(got -1\)/);
    const answer = await harness.extensionMessage(browser, { type: "getSettings" });
    assert.equal(answer.settings.page.rate, 8);
  }));

test("stopping the service worker mid-page loses nothing and causes no second burst", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    // The quota mirrors the settings (1/s, burst 3): a second burst would meet 429s.
    const mock = await withMock(t, { rpm: 60, burst: 3, latency: 50 });
    await harness.applySettings(browser, useMock(mock, { page: { ...STRICT, capacity: 3 } }));
    const page = await openPage(browser, ARTICLE_ONLY);
    while (mock.stats().ok < 6) await page.waitForTimeout(100);
    const before = await harness.progress(page);
    await stopServiceWorker(browser);
    const done = await harness.waitTranslated(page, { cues: false, timeoutMs: 120_000 });
    assert.ok(before.pageDone < done.pageTotal, "the worker stopped mid-page");
    assert.equal(done.failed, 0);
    assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")));
    assert.equal(mock.stats().rateLimited, 0, "the restarted worker did not burst again");
  }));

test("translations come back from indexedDBCache after the worker restarts", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const mock = await withMock(t, { rpm: 0, latency: 20 });
    await harness.applySettings(browser, useMock(mock, { page: { ...DEFAULTS } }));
    const first = await openPage(browser, ARTICLE_ONLY);
    await harness.waitTranslated(first, { cues: false, timeoutMs: 60_000 });
    // The page again in the same tab: the demo scopes items by tab and origin, so another
    // tab would not share these entries.
    await first.goto("about:blank");
    const callsBefore = mock.stats().ok;
    await stopServiceWorker(browser);
    const again = first;
    await again.goto(site.url + ARTICLE_ONLY);
    const done = await harness.waitTranslated(again, { cues: false, timeoutMs: 60_000 });
    assertAligned((await harness.translations(again)).filter((p) => p.id.startsWith("p")));
    assert.equal(mock.stats().ok, callsBefore, "no provider call: every paragraph came from the cache");
    const stats = await harness.getStats(browser);
    assert.ok(stats.flows.page.pacer.cacheHits >= done.pageTotal - 1, `cache hits ${stats.flows.page.pacer.cacheHits}`);
  }));

test("a second tab of the same page shares no provider item or cache entry with the first: the background scopes items by tab", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const mock = await withMock(t, { rpm: 0, latency: 20 });
    await harness.applySettings(browser, useMock(mock, { page: { ...DEFAULTS } }));
    const first = await openPage(browser, ARTICLE_ONLY);
    await harness.waitTranslated(first, { cues: false, timeoutMs: 60_000 });
    const sentByFirst = mock.stats().segments;
    assert.ok(sentByFirst > 50, `${sentByFirst} paragraphs sent`);
    // The same page, title and paragraphs in another tab, the first one still open.
    const second = await openPage(browser, ARTICLE_ONLY);
    await harness.waitTranslated(second, { cues: false, timeoutMs: 60_000 });
    assertAligned((await harness.translations(second)).filter((p) => p.id.startsWith("p")));
    assert.equal(mock.stats().segments, 2 * sentByFirst, "every paragraph of the second tab went to the provider itself");
  }));

for (const fault of ["wrong-count", "drop-separator", "extra-segment", "http-500"]) {
  test(`fault mode ${fault}: every paragraph ends correctly translated or clearly marked failed`, { skip }, (t) =>
    withBrowser(t, async (browser) => {
      const mock = await withMock(t, { rpm: 0, latency: 10, fault, faultRate: 0.5, seed: 3 });
      await harness.applySettings(browser, useMock(mock, { page: { ...DEFAULTS, rate: 20 } }));
      const page = await openPage(browser, ARTICLE_ONLY);
      await harness.waitTranslated(page, { cues: false, timeoutMs: 120_000 });
      assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")), { allowFailed: true });
      const stats = await harness.getStats(browser);
      const faults = Object.values(mock.stats().faults).reduce((a, b) => a + b, 0);
      assert.ok(faults > 0, "the mock injected faults");
      const handled = stats.flows.page.pacer.countMismatches + stats.flows.page.pacer.retries;
      assert.ok(handled > 0, "the pacer noticed and retried");
    }));
}

test("a wrong API key fails the page's queue at once, and the options page shows why next to the provider settings", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    const mock = await withMock(t, { rpm: 0, apiKey: "sk-right" });
    await harness.applySettings(browser, {
      page: STRICT,
      provider: { kind: "openai", baseUrl: mock.url, apiKey: "sk-wrong", model: "mock-translator" },
    });
    const page = await openPage(browser, ARTICLE_ONLY);
    const done = await harness.waitTranslated(page, { cues: false, timeoutMs: 30_000 });
    assert.equal(done.failed, done.pageTotal, "every paragraph is marked failed");
    // At 1 call per second a page of batches would take many seconds; one 401 ends it.
    assert.ok(mock.stats().unauthorized <= 2, `${mock.stats().unauthorized} calls met the 401`);

    const options = await browser.context.newPage();
    await options.goto(browser.pageUrl("options.html"));
    await options.waitForFunction(() => document.getElementById("provider-blocked").textContent !== "", null, { timeout: 10_000 });
    const shown = await options.textContent("#provider-blocked");
    assert.match(shown, /401/);
    assert.match(shown, /API key/i);
    // Fixing the key clears it: items are sent again.
    await options.fill("#provider-apiKey", "sk-right");
    await options.click("#apply");
    await options.waitForSelector("#status[data-state=ok]");
    await options.waitForFunction(() => document.getElementById("provider-blocked").textContent === "", null, { timeout: 10_000 });
  }));

// ----- streamed replies -----

test("Stream replies, switched on for the page only: its paragraphs come from streams, previews give way to answers, each under its own", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    // The offline demo provider: with its flow's switch on it returns the reply as a stream.
    await harness.applySettings(browser, {
      page: { ...DEFAULTS, stream: true, previews: true },
      subtitles: { ...DEFAULTS, stream: false },
    });
    const page = await openPage(browser, "?cueStart=100&cueInterval=50");
    const done = await harness.waitTranslated(page, { timeoutMs: 60_000 });
    assert.equal(done.failed, 0);
    assertAligned(await harness.translations(page));
    const { flows } = await harness.getStats(browser);
    assert.ok(flows.page.pacer.providerCalls > 0);
    assert.equal(flows.page.pacer.streamedCalls, flows.page.pacer.providerCalls, "every page call was streamed");
    assert.ok(flows.page.pacer.earlyResolved > 0, "some paragraphs showed before their batch's stream ended");
    assert.equal(flows.subtitles.pacer.streamedCalls, 0, "the subtitles flow keeps whole replies");
    assert.ok(flows.subtitles.pacer.providerCalls > 0);
    // Previews were shown while the replies streamed; every one gave way to its answer.
    assert.ok(Number(await page.getAttribute("html", "data-bp-previews")) > 0, "previews were shown");
    assert.equal(await page.locator(".bp-preview").count(), 0);
    // The statistics page has the page's time to its first paragraph.
    assert.equal(flows.page.timing.pages, 1);
    const statsPage = await browser.context.newPage();
    await statsPage.goto(browser.pageUrl("stats.html"));
    await statsPage.waitForFunction(() => document.documentElement.dataset.statsLoaded === "1");
    assert.match(await statsPage.textContent('#stats-page [data-stat="firstParagraph"]'), /^\d[\d.,]* (ms|s)$/);
    assert.match(await statsPage.textContent('#stats-page [data-stat="firstParagraphMean"]'), /\(1 page\)$/);
    // Every page paragraph came from a call (no cache yet; a duplicate shares its twin's):
    // each one's wait since its call started is counted.
    assert.equal(flows.page.timing.paragraphs, done.pageTotal);
    assert.match(await statsPage.textContent('#stats-page [data-stat="callToParagraph"]'), /^\d[\d.,]* (ms|s)$/);
  }));

test("Stream replies with previews off: answers only, no preview ever shown", { skip }, (t) =>
  withBrowser(t, async (browser) => {
    await harness.applySettings(browser, { page: { ...DEFAULTS, stream: true, previews: false } });
    const page = await openPage(browser, ARTICLE_ONLY);
    await harness.waitTranslated(page, { cues: false, timeoutMs: 60_000 });
    assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")));
    const { flows } = await harness.getStats(browser);
    assert.equal(flows.page.pacer.streamedCalls, flows.page.pacer.providerCalls);
    assert.equal(await page.getAttribute("html", "data-bp-previews"), "0");
  }));

for (const think of [false, true]) {
  test(`Stream replies through the mock's server-sent events${think ? " from a thinking model" : ""}: each paragraph under its own`, { skip: sseSkip }, (t) =>
    withBrowser(t, async (browser) => {
      const mock = await withMock(t, { rpm: 0, latency: 50, tokensPerSecond: 400, think });
      await harness.applySettings(browser, useMock(mock, { page: { ...DEFAULTS, stream: true, previews: true } }));
      const page = await openPage(browser, ARTICLE_ONLY);
      const done = await harness.waitTranslated(page, { cues: false, timeoutMs: 120_000 });
      assert.equal(done.failed, 0);
      assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")));
      const { flows } = await harness.getStats(browser);
      const m = mock.stats();
      assert.equal(m.streamed, m.ok, "every answer of the mock was a stream");
      assert.equal(m.thought, think ? m.ok : 0);
      assert.equal(flows.page.pacer.streamedCalls, flows.page.pacer.providerCalls);
      // The drafts' markers never count: no batch had to be sent again.
      assert.equal(flows.page.pacer.countMismatches, 0);
      assert.ok(flows.page.pacer.earlyResolved > 0, "paragraphs showed before their stream ended");
    }));
}

// The manifest line the package's load error quotes (docs/guides/install.md, "The CSP, per browser and
// manifest version").
const CSP_LINE = `"content_security_policy": {"extension_pages": "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"}`;

test("without 'wasm-unsafe-eval' in the manifest, every paragraph and every page message gets the load error, never silence", { skip }, async (t) => {
  // The demo as an extension that forgot the CSP line: a copy, its manifest without it.
  const dir = await mkdtemp(join(tmpdir(), "batch-pacer-no-csp-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await cp(harness.EXTENSION_DIR, dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));
  assert.ok(manifest.content_security_policy, "the demo's manifest allows WebAssembly");
  delete manifest.content_security_policy;
  await writeFile(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2));

  const browser = await harness.launchChromium({ extensionDir: dir });
  t.after(() => browser.close());
  // The worker registered its listeners although the module could not load.
  const answer = await harness.extensionMessage(browser, { type: "getStats" });
  assert.equal(answer?.ok, false);
  assert.equal(answer.error.code, "not_initialized");
  assert.ok(answer.error.message.includes(CSP_LINE), answer.error.message);

  const page = await openPage(browser, "?cueStart=100&cueInterval=50");
  const done = await harness.waitTranslated(page, { timeoutMs: 60_000 });
  assert.equal(done.failed, done.pageTotal + done.subtitlesTotal, "every paragraph and cue was answered, as failed");
  const shown = await harness.translations(page);
  assert.ok(shown.length > 50, `only ${shown.length} paragraphs found`);
  for (const item of shown) {
    assert.equal(item.shown, 1, `${item.id} shows ${item.shown} answers`);
    assert.ok(item.failed, `${item.id}: ${item.translation}`);
    assert.ok(item.translation.startsWith("⚠ not translated (not_initialized): "), item.translation);
    assert.ok(item.translation.includes(CSP_LINE), item.translation);
  }
});
