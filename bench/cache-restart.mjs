// Re-translating the demo article after the extension's service worker was stopped:
// the first load (empty cache) against a reload served by indexedDBCache. Real Chromium,
// the demo extension, the mock provider at 300 ms latency. Median of 3 rounds, each in a
// fresh browser profile. Run: node bench/cache-restart.mjs (after scripts/build-demo.sh).
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const load = (path) => import(pathToFileURL(join(repo, path)).href);
const harness = await load("extension-demo/harness.mjs");
const { startMockProvider } = await load("extension-demo/mock-provider.mjs");
const { startDemoServer } = await load("extension-demo/demo-server.mjs");

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function round(site) {
  const mock = await startMockProvider({ port: 0, rpm: 0, latency: 300 });
  const browser = await harness.launchChromium();
  try {
    await harness.applySettings(browser, {
      provider: { kind: "openai", baseUrl: mock.url, apiKey: "", model: "mock-translator" },
    });
    const timed = async () => {
      const page = await browser.context.newPage();
      const started = Date.now();
      await page.goto(`${site.url}?cueStart=600000`);
      const done = await harness.waitTranslated(page, { cues: false });
      const ms = Date.now() - started;
      await page.close();
      return { ms, paragraphs: done.pageTotal };
    };
    const cold = await timed();
    const callsCold = mock.stats().ok;
    await harness.stopServiceWorker(browser);
    const warm = await timed();
    return { cold: cold.ms, warm: warm.ms, paragraphs: cold.paragraphs, callsCold, callsWarm: mock.stats().ok - callsCold };
  } finally {
    await browser.close();
    await mock.close();
  }
}

const site = await startDemoServer({ port: 0 });
const rounds = [];
for (let i = 0; i < 3; i++) rounds.push(await round(site));
await site.close();
const cold = median(rounds.map((r) => r.cold));
const warm = median(rounds.map((r) => r.warm));
console.log(`| page load (${rounds[0].paragraphs} paragraphs) | time to fully translated (ms) | provider calls | vs cold |`);
console.log("|---|---:|---:|---:|");
console.log(`| cold: empty cache | ${cold} | ${rounds[0].callsCold} | 1.00x |`);
console.log(`| after a worker restart: indexedDBCache | ${warm} | ${rounds[0].callsWarm} | ${(warm / cold).toFixed(2)}x |`);
