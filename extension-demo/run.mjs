// The main job (`npm start`): the demo extension translating the demo article and its
// subtitle stream in a real Chromium, against the local OpenAI-compatible mock provider
// with a quota (or a real provider: OPENAI_BASE_URL, OPENAI_API_KEY, MODEL). Prints a
// report and writes screenshots of the translated page and of the statistics page.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { startMockProvider } from "./mock-provider.mjs";
import { startDemoServer } from "./demo-server.mjs";
import { EXTENSION_DIR, applySettings, getStats, launchChromium, progress, translations, waitTranslated } from "./harness.mjs";
import { pseudoTranslate } from "./demo-provider.js";

const OUTPUT_DIR = join(EXTENSION_DIR, "..", "demo-output");

// The mock's quota: 180 requests per minute with a burst of 3. The flows split it:
// page 2/s with burst 2, subtitles 1/s with burst 1, so together they never exceed it.
const QUOTA = { rpm: 180, burst: 3 };
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

async function main() {
  const real = realProvider();
  const mock = real ? null : await startMockProvider({ port: 0, rpm: QUOTA.rpm, burst: QUOTA.burst, latency: 250, jitter: 100, seed: 7 });
  const site = await startDemoServer({ port: 0 });
  const browser = await launchChromium();
  const started = Date.now();
  try {
    await applySettings(browser, {
      ...FLOW_SETTINGS,
      provider: real ?? { kind: "openai", baseUrl: mock.url, apiKey: "", model: "mock-translator" },
      sourceLang: "en",
      targetLang: "de",
    });
    const page = await browser.context.newPage();
    const pageOpened = Date.now();
    await page.goto(site.url);
    const done = await waitTranslated(page, { timeoutMs: 300_000 });
    const wallSeconds = (Date.now() - pageOpened) / 1000;

    const shown = await translations(page);
    const wrong = real ? [] : shown.filter((t) => t.translation !== pseudoTranslate(t.text.trim(), "de") && !t.failed);
    const stats = await getStats(browser);

    await mkdir(OUTPUT_DIR, { recursive: true });
    const pageShot = join(OUTPUT_DIR, "translated-page.png");
    await page.screenshot({ path: pageShot, fullPage: true });
    const statsPage = await browser.context.newPage();
    await statsPage.goto(browser.pageUrl("stats.html"));
    await statsPage.waitForFunction(() => document.documentElement.dataset.statsLoaded === "1", null, { timeout: 10_000 });
    await statsPage.waitForTimeout(1200);
    const statsShot = join(OUTPUT_DIR, "statistics-page.png");
    await statsPage.screenshot({ path: statsShot, fullPage: true });

    const flows = stats.flows;
    const paragraphs = flows.page.pacer.items + flows.subtitles.pacer.items;
    const calls = flows.page.pacer.providerCalls + flows.subtitles.pacer.providerCalls;
    const rateLimited = flows.page.pacer.rateLimited + flows.subtitles.pacer.rateLimited;
    const retries = flows.page.pacer.retries + flows.subtitles.pacer.retries;
    const mockStats = mock?.stats();
    const lines = [
      "",
      "batch-pacer demo: bilingual page and subtitles in Chromium (MV3 service worker)",
      `provider            ${real ? `${real.baseUrl} (${real.model})` : `local mock ${mock.url}, quota ${QUOTA.rpm}/min, burst ${QUOTA.burst}`}`,
      `paragraphs          ${done.pageDone} on the page + ${done.subtitlesDone} subtitle cues = ${paragraphs} items (${done.failed} failed)`,
      `provider calls      ${calls} (page ${flows.page.pacer.providerCalls}, subtitles ${flows.subtitles.pacer.providerCalls}; batches ${flows.page.pacer.batchCalls + flows.subtitles.pacer.batchCalls})`,
      `saved               ${percent(calls, paragraphs)} of the calls one request per paragraph would make`,
      `429s                ${rateLimited}${mockStats ? ` (mock counted ${mockStats.rateLimited})` : ""}`,
      `retries             ${retries}`,
      `misplaced           ${wrong.length} translations not matching their own paragraph`,
    ];
    if (mockStats) {
      const { markers, separator } = mockStats.batches;
      lines.push(`batch layout        ${markers > 0 && separator === 0 ? "markers" : separator > 0 && markers === 0 ? "separator" : "mixed"} (the mock answered ${markers} marked and ${separator} separator batches)`);
    }
    if (mockStats) {
      const accepted = mockStats.ok;
      const rate = QUOTA.rpm / 60;
      const lowerBound = Math.max(0, (accepted - QUOTA.burst) / rate);
      lines.push(
        `wall time           ${wallSeconds.toFixed(1)} s for ${accepted} accepted calls; the quota's lower bound is ${lowerBound.toFixed(1)} s (${(wallSeconds / Math.max(lowerBound, 0.001)).toFixed(2)}x, cue arrival included)`,
      );
    } else {
      lines.push(`wall time           ${wallSeconds.toFixed(1)} s`);
    }
    lines.push(`screenshots         ${pageShot}`, `                    ${statsShot}`, `total run           ${((Date.now() - started) / 1000).toFixed(1)} s`, "");
    console.log(lines.join("\n"));
    for (const w of wrong) console.log(`misplaced ${w.id}: ${JSON.stringify(w.text)} -> ${JSON.stringify(w.translation)}`);
    if (wrong.length > 0 || done.failed > 0) process.exitCode = 1;
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
