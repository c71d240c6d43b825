// The main job (`npm start`): the demo extension translating the demo article and its
// subtitle stream in a real Chromium, against the local OpenAI-compatible mock provider
// with a quota (or a real provider: OPENAI_BASE_URL, OPENAI_API_KEY, MODEL). The page is
// translated twice, first with whole replies, then with streamed ones, and the report
// sets their times to the first paragraph and to each paragraph side by side, then gives
// the streamed run's details. A third run (on the mock) gives the first model a daily
// quota that runs out halfway through the page: the flows' items move to their fallback
// provider, a second model with its own quota, and the report says how many paragraphs
// each served. Before it, a pooled run (on the mock) translates the article with one API
// key and then with a pool of two, each key with a strict quota of its own, and reports
// both times and the calls each key made as the statistics page shows them (see
// pool-run.mjs). Last, a shared-quota run (on the mock, in Node): five tabs' page flows,
// each its own pacer on one key, against one strict quota for every caller, once with the
// pacers at their defaults and once with `sharedQuota: false`, reporting each run's 429s,
// failed items and time ÷ bound (see shared-quota-run.mjs). Writes screenshots of the
// translated page and of the statistics page (after the streamed run, and after the
// fallback run).
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { LITE_MODEL_ID, MODEL_ID, startMockProvider } from "./mock-provider.mjs";
import { startDemoServer } from "./demo-server.mjs";
import { EXTENSION_DIR, applySettings, extensionMessage, getStats, launchChromium, translations, waitTranslated } from "./harness.mjs";
import { pseudoTranslate } from "./demo-provider.js";
import { clearKeys, keysRun, poolReport } from "./pool-run.mjs";
import { sharedQuotaReport, sharedQuotaRun } from "./shared-quota-run.mjs";
import { providerIdOf } from "./protocol.js";

const OUTPUT_DIR = join(EXTENSION_DIR, "..", "demo-output");

// The mock's quota: 180 requests per minute with a burst of 3. The flows split it:
// page 2/s with burst 2, subtitles 1/s with burst 1, so together they never exceed it.
const QUOTA = { rpm: 180, burst: 3 };
// The mock writes like a hosted model: its first token after 250–350 ms, then this speed.
const MOCK_TOKENS_PER_SECOND = 80;
const FLOW_SETTINGS = {
  page: { rate: 2, capacity: 2, maxInFlight: 0, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100 },
  subtitles: { rate: 1, capacity: 1, maxInFlight: 0, maxCharactersPerBatch: 400, maxItemsPerBatch: 3, batchDelayMs: 150 },
};

function realProvider() {
  const { OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: apiKey, MODEL: model } = process.env;
  // Local servers (Ollama, LM Studio) need no key.
  return baseUrl && model ? { kind: "openai", baseUrl, apiKey: apiKey ?? "", model } : null;
}

function percent(part, whole) {
  return whole > 0 ? `${((1 - part / whole) * 100).toFixed(1)}%` : "—";
}

/** The page's timing as the content script measured it (ms from its first items sent). */
function pageTiming(page) {
  return page.evaluate(() => ({
    firstMs: Number(document.documentElement.dataset.bpPageFirstMs),
    meanMs: Number(document.documentElement.dataset.bpPageMeanMs),
    previews: Number(document.documentElement.dataset.bpPreviews ?? 0),
  }));
}

/**
 * Translates the demo page once, replies streamed or whole, into `targetLang` (each run
 * its own language, so the second finds nothing in the first's cache). Returns the
 * page, what it showed, its timing and the flows' statistics of this run alone.
 */
async function translatePage(browser, site, { stream, targetLang, real, fallback }) {
  await extensionMessage(browser, { type: "resetStats" });
  const fallbackSetting = fallback ?? { kind: "none" };
  await applySettings(browser, {
    page: { ...FLOW_SETTINGS.page, stream, previews: true, fallback: fallbackSetting },
    subtitles: { ...FLOW_SETTINGS.subtitles, stream, previews: true, fallback: fallbackSetting },
    targetLang,
  });
  const page = await browser.context.newPage();
  const opened = Date.now();
  await page.goto(site.url);
  const done = await waitTranslated(page, { timeoutMs: 300_000 });
  const wallSeconds = (Date.now() - opened) / 1000;
  const shown = await translations(page);
  const wrong = real ? [] : shown.filter((t) => t.translation !== pseudoTranslate(t.text.trim(), targetLang) && !t.failed);
  const stats = await getStats(browser);
  const { paragraphs, callMsSum } = stats.flows.page.timing;
  const callMs = paragraphs > 0 ? callMsSum / paragraphs : NaN;
  return { stream, targetLang, page, done, wallSeconds, wrong, timing: await pageTiming(page), callMs, stats };
}

/** The statistics page, loaded and rendered, and a full-page screenshot of it at `path`. */
async function statsScreenshot(browser, path) {
  const statsPage = await browser.context.newPage();
  await statsPage.goto(browser.pageUrl("stats.html"));
  await statsPage.waitForFunction(() => document.documentElement.dataset.statsLoaded === "1", null, { timeout: 10_000 });
  await statsPage.waitForTimeout(1200);
  await statsPage.screenshot({ path, fullPage: true });
  return statsPage;
}

/** What the statistics page shows in its By provider tables: flow -> id -> { served, batchLimit }. */
function shownByProvider(statsPage) {
  return statsPage.evaluate(() => {
    const out = {};
    for (const section of document.querySelectorAll("section[data-flow]")) {
      const rows = {};
      for (const row of section.querySelectorAll("tr[data-provider]")) {
        const cell = (key) => row.querySelector(`[data-provider-stat="${key}"]`)?.textContent ?? "";
        rows[row.dataset.provider] = { served: Number(cell("served").replaceAll(",", "")), batchLimit: cell("batchLimit") };
      }
      out[section.dataset.flow] = rows;
    }
    return out;
  });
}

/**
 * The fallback run: the first model (MODEL_ID) may answer `quota` requests today, about
 * half of what the page and its subtitles need; each flow's fallback is LITE_MODEL_ID on
 * the same endpoint and key, a model with its own daily quota. Returns the run, the
 * counts the statistics page shows, and the mock's own counts per model.
 */
async function fallbackRun(browser, site, mock, { quota, wholeCalls }) {
  mock.setOptions({ models: { [MODEL_ID]: { requestsPerDay: quota }, [LITE_MODEL_ID]: { requestsPerDay: LITE_QUOTA } } });
  mock.reset(); // counters zeroed, a new day: the first model has its whole quota
  const run = await translatePage(browser, site, {
    stream: false,
    targetLang: "es",
    real: null,
    fallback: { kind: "openai", baseUrl: "", apiKey: "", model: LITE_MODEL_ID },
  });
  const path = join(OUTPUT_DIR, "statistics-fallback.png");
  const statsPage = await statsScreenshot(browser, path);
  const shown = await shownByProvider(statsPage);
  await statsPage.close();
  return { ...run, quota, wholeCalls, mockStats: mock.stats(), shown, screenshot: path };
}

/** The fallback run's lines of the report, and whether it kept its promise. */
function fallbackReport(run, ids) {
  const { done, stats, mockStats, shown, quota, wholeCalls, wrong } = run;
  const flows = stats.flows;
  const served = (id) => FLOWS_OF_RUN.reduce((n, flow) => n + (flows[flow].byProvider[id]?.served ?? 0), 0);
  const servedIn = (flow, id) => flows[flow].byProvider[id]?.served ?? 0;
  const items = done.pageTotal + done.subtitlesTotal;
  const first = served(ids.first);
  const second = served(ids.second);
  const cached = FLOWS_OF_RUN.reduce((n, flow) => n + (flows[flow].cacheServed ?? 0), 0);
  const moved = FLOWS_OF_RUN.map((flow) => flows[flow].pacer.fallbackItems ?? 0);
  const width = Math.max(ids.first.length, ids.second.length);
  const limits = (flow) =>
    [ids.first, ids.second].map((id) => `${id.split("#")[1]} ${shown[flow]?.[id]?.batchLimit ?? "—"}`).join(", ");
  // The statistics page must show what the background counted.
  const pageAgrees = FLOWS_OF_RUN.every((flow) =>
    [ids.first, ids.second].every((id) => (shown[flow]?.[id]?.served ?? 0) === servedIn(flow, id)));
  const firstModel = mockStats.byModel[MODEL_ID] ?? { ok: 0, dailyLimited: 0 };
  const liteModel = mockStats.byModel[LITE_MODEL_ID] ?? { ok: 0, dailyLimited: 0 };
  const ok = done.failed === 0 && wrong.length === 0 && first > 0 && second > 0 && first + second + cached === items && pageAgrees;
  const lines = [
    "",
    `The fallback run (es, whole replies): ${MODEL_ID} may answer ${quota} requests today, about half of the ${wholeCalls} calls the whole-reply run made; each flow's fallback provider is ${LITE_MODEL_ID}, on the same endpoint and key, with its own daily quota (${LITE_QUOTA})`,
    `paragraphs          ${done.pageDone} on the page + ${done.subtitlesDone} subtitle cues = ${items} items (${done.failed} failed, ${wrong.length} misplaced)`,
    `served by           ${ids.first.padEnd(width)}  ${String(first).padStart(4)}  (page ${servedIn("page", ids.first)}, subtitles ${servedIn("subtitles", ids.first)})`,
    `                    ${ids.second.padEnd(width)}  ${String(second).padStart(4)}  (page ${servedIn("page", ids.second)}, subtitles ${servedIn("subtitles", ids.second)})`,
    `                    ${first} + ${second}${cached ? ` + ${cached} from the cache` : ""} = ${first + second + cached} of ${items} items${pageAgrees ? ", as the statistics page shows them" : "; THE STATISTICS PAGE SHOWS OTHER COUNTS"}`,
    `moved               ${moved[0] + moved[1]} items to the fallback (stats().fallbackItems: page ${moved[0]}, subtitles ${moved[1]})`,
    `batch limits        page: ${limits("page")}; subtitles: ${limits("subtitles")}`,
    `the mock counted    ${MODEL_ID}: ${firstModel.ok} answered, then ${firstModel.dailyLimited} daily 429s; ${LITE_MODEL_ID}: ${liteModel.ok} answered, ${liteModel.dailyLimited} daily 429s`,
    `wall time           ${run.wallSeconds.toFixed(1)} s`,
    `screenshot          ${run.screenshot}`,
  ];
  return { lines, ok };
}

const FLOWS_OF_RUN = ["page", "subtitles"];
/** The fallback model's own daily quota: far more than one page needs. */
const LITE_QUOTA = 1000;

const ms = (value) => (Number.isFinite(value) ? `${Math.round(value)} ms` : "—");
const times = (value, baseline) => (Number.isFinite(value) && baseline > 0 ? `${(value / baseline).toFixed(2)}x` : "—");

async function main() {
  const real = realProvider();
  const mock = real
    ? null
    : await startMockProvider({ port: 0, rpm: QUOTA.rpm, burst: QUOTA.burst, latency: 250, jitter: 100, tokensPerSecond: MOCK_TOKENS_PER_SECOND, seed: 7 });
  const site = await startDemoServer({ port: 0 });
  const browser = await launchChromium();
  const started = Date.now();
  try {
    await applySettings(browser, {
      provider: real ?? { kind: "openai", baseUrl: mock.url, apiKey: "", model: "mock-translator" },
      sourceLang: "en",
    });
    const whole = await translatePage(browser, site, { stream: false, targetLang: "de", real });
    await whole.page.close();
    const mockWhole = mock?.stats();
    mock?.reset();
    const streamed = await translatePage(browser, site, { stream: true, targetLang: "fr", real });
    const { page, done, wallSeconds, wrong, stats } = streamed;

    await mkdir(OUTPUT_DIR, { recursive: true });
    const pageShot = join(OUTPUT_DIR, "translated-page.png");
    await page.screenshot({ path: pageShot, fullPage: true });
    const statsShot = join(OUTPUT_DIR, "statistics-page.png");
    await (await statsScreenshot(browser, statsShot)).close();

    const flows = stats.flows;
    const paragraphs = flows.page.pacer.items + flows.subtitles.pacer.items;
    const calls = flows.page.pacer.providerCalls + flows.subtitles.pacer.providerCalls;
    const rateLimited = flows.page.pacer.rateLimited + flows.subtitles.pacer.rateLimited;
    const retries = flows.page.pacer.retries + flows.subtitles.pacer.retries;
    const mockStats = mock?.stats();
    const lines = [
      "",
      "batch-pacer demo: bilingual page and subtitles in Chromium (MV3 service worker)",
      `provider            ${real ? `${real.baseUrl} (${real.model})` : `local mock ${mock.url}, quota ${QUOTA.rpm}/min, burst ${QUOTA.burst}, ${MOCK_TOKENS_PER_SECOND} tokens/s after its first token`}`,
      "",
      `                    whole replies (de)   streamed replies (fr)`,
      `first paragraph     ${ms(whole.timing.firstMs).padEnd(20)} ${ms(streamed.timing.firstMs).padEnd(9)} ${times(streamed.timing.firstMs, whole.timing.firstMs)}`,
      `mean per paragraph  ${ms(whole.timing.meanMs).padEnd(20)} ${ms(streamed.timing.meanMs).padEnd(9)} ${times(streamed.timing.meanMs, whole.timing.meanMs)}`,
      `request → paragraph ${ms(whole.callMs).padEnd(20)} ${ms(streamed.callMs).padEnd(9)} ${times(streamed.callMs, whole.callMs)}`,
      `wall time           ${`${whole.wallSeconds.toFixed(1)} s`.padEnd(20)} ${wallSeconds.toFixed(1)} s`,
      `misplaced           ${String(whole.wrong.length).padEnd(20)} ${wrong.length}`,
      `(page flow: "first paragraph" and "mean per paragraph" are timed in the content script from its first items sent, so they include the wait behind the rate and any 429 pause; "request → paragraph" is the background's mean from the start of the call that carried a paragraph to its translation; streamed: ${flows.page.pacer.streamedCalls ?? 0} streamed calls, ${flows.page.pacer.earlyResolved ?? 0} paragraphs shown before their stream ended, ${streamed.timing.previews} preview updates)`,
      "",
      "The streamed run in detail:",
      `paragraphs          ${done.pageDone} on the page + ${done.subtitlesDone} subtitle cues = ${paragraphs} items (${done.failed} failed)`,
      `provider calls      ${calls} (page ${flows.page.pacer.providerCalls}, subtitles ${flows.subtitles.pacer.providerCalls}; batches ${flows.page.pacer.batchCalls + flows.subtitles.pacer.batchCalls})`,
      `saved               ${percent(calls, paragraphs)} of the calls one request per paragraph would make`,
      `429s                ${rateLimited}${mockStats ? ` (mock counted ${mockStats.rateLimited})` : ""}`,
      `retries             ${retries}`,
      `misplaced           ${wrong.length} translations not matching their own paragraph`,
    ];
    if (mockStats) {
      const { markers, separator } = mockStats.batches;
      lines.push(`batch layout        ${markers > 0 && separator === 0 ? "markers" : separator > 0 && markers === 0 ? "separator" : "mixed"} (the mock answered ${markers} marked and ${separator} separator batches, ${mockStats.streamed} of its answers streamed)`);
      const accepted = mockStats.ok;
      const rate = QUOTA.rpm / 60;
      const lowerBound = Math.max(0, (accepted - QUOTA.burst) / rate);
      lines.push(
        `wall time           ${wallSeconds.toFixed(1)} s for ${accepted} accepted calls; the quota's lower bound is ${lowerBound.toFixed(1)} s (${(wallSeconds / Math.max(lowerBound, 0.001)).toFixed(2)}x, cue arrival and writing time included)`,
        `whole-reply run     ${mockWhole.ok} accepted calls, ${mockWhole.rateLimited} 429s`,
      );
    } else {
      lines.push(`wall time           ${wallSeconds.toFixed(1)} s`);
    }
    lines.push(`screenshots         ${pageShot}`, `                    ${statsShot}`);
    const runs = [whole, streamed];
    let fallbackOk = true;
    let poolOk = true;
    let sharedOk = true;
    if (mock) {
      await page.close();
      // Replies come whole after the first token here, so a page's time is its keys' quotas' time.
      mock.setOptions({ tokensPerSecond: 0 });
      const oneKey = await keysRun(browser, site, mock, { keyCount: 1, targetLang: "nl" });
      const twoKeys = await keysRun(browser, site, mock, { keyCount: 2, targetLang: "pt" });
      await clearKeys(browser, mock);
      mock.setOptions({ tokensPerSecond: MOCK_TOKENS_PER_SECOND });
      runs.push(oneKey, twoKeys);
      const pooled = poolReport(oneKey, twoKeys);
      lines.push(...pooled.lines);
      poolOk = pooled.ok;
      const quota = Math.max(1, Math.round(mockWhole.ok / 2));
      const fallback = await fallbackRun(browser, site, mock, { quota, wholeCalls: mockWhole.ok });
      runs.push(fallback);
      const provider = { kind: "openai", baseUrl: mock.url };
      const ids = { first: providerIdOf({ ...provider, model: MODEL_ID }), second: providerIdOf({ ...provider, model: LITE_MODEL_ID }) };
      const report = fallbackReport(fallback, ids);
      lines.push(...report.lines);
      fallbackOk = report.ok;
      // The package the extension loads, in Node: five pacers, as five tabs' extensions.
      const pkg = await import(pathToFileURL(join(EXTENSION_DIR, "vendor/batch-pacer/js/main.js")).href);
      await pkg.default();
      const withRules = await sharedQuotaRun(pkg, { sharedQuota: true });
      const before = await sharedQuotaRun(pkg, { sharedQuota: false });
      const shared = sharedQuotaReport(withRules, before);
      lines.push(...shared.lines);
      sharedOk = shared.ok;
    } else {
      lines.push("", "The pooled, fallback and shared-quota runs need the local mock (a real provider's quotas are not spent for a demo): skipped.");
    }
    lines.push("", `total run           ${((Date.now() - started) / 1000).toFixed(1)} s`, "");
    console.log(lines.join("\n"));
    for (const run of runs) {
      for (const w of run.wrong) console.log(`misplaced (${run.targetLang}) ${w.id}: ${JSON.stringify(w.text)} -> ${JSON.stringify(w.translation)}`);
    }
    if (!fallbackOk || !poolOk || !sharedOk || runs.some((run) => run.wrong.length > 0 || run.done.failed > 0)) process.exitCode = 1;
  } finally {
    await browser.close();
    await site.close();
    await mock?.close();
  }
}

main().catch((error) => {
  console.error(error?.stack ?? error);
  process.exitCode = 1;
});
