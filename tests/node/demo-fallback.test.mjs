// The demo extension's fallback providers end to end, in real browsers: the first model
// (on the local mock) runs out of its daily quota part way through the demo page, the
// flow's items move to the fallback provider chosen on the options page (a second model
// with its own quota), and the statistics page shows how many paragraphs each served and
// each provider's batch limit. Chromium (playwright) and Firefox ESR (selenium).
//
// Run from the repository: `BATCH_PACER_REPO=$PWD node --test tests/node/demo-fallback.test.mjs`
// (needs the built demo: scripts/build-demo.sh).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { skipIfMissing } from "./requirements.mjs";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const load = (path) => import(pathToFileURL(join(repo, path)).href);
const harness = await load("extension-demo/harness.mjs");
const { startMockProvider, MODEL_ID, LITE_MODEL_ID } = await load("extension-demo/mock-provider.mjs");
const { startDemoServer } = await load("extension-demo/demo-server.mjs");
const { pseudoTranslate } = await load("extension-demo/demo-provider.js");
const { providerIdOf } = await load("extension-demo/protocol.js");

const EXTENSION_DIR = join(repo, "extension-demo");
const built = existsSync(join(EXTENSION_DIR, "vendor/batch-pacer/js/index.js"));
const skip = skipIfMissing(
  !existsSync("/usr/bin/chromium")
    ? "/usr/bin/chromium is missing"
    : !built
      ? "the demo extension is not built (run: bash scripts/build-demo.sh)"
      : false,
);

// No cues during tests that only look at the article.
const ARTICLE_ONLY = "?cueStart=600000";
const WITH_CUES = "?cueStart=100&cueInterval=50";
const DEFAULTS = { rate: 8, capacity: 60, maxInFlight: 0, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100 };
const TINY_MODEL = "mock-tiny";

let site;
// Set below with the Firefox requirements; the hook may run before that line has (the
// module awaits on its way there), and then serves the demo in any case.
let firefoxSkip;
before(async () => {
  if (!skip || !firefoxSkip) site = await startDemoServer({ port: 0 });
});
after(async () => {
  await site?.close();
});

async function withMock(t, options) {
  const mock = await startMockProvider({ port: 0, rpm: 0, latency: 20, ...options });
  t.after(() => mock.close());
  return mock;
}

/** The providerIds the extension gives the mock's models. */
function idsOf(mock, second) {
  const provider = { kind: "openai", baseUrl: mock.url };
  return { first: providerIdOf({ ...provider, model: MODEL_ID }), second: providerIdOf({ ...provider, model: second }) };
}

/** Every element shows exactly one translation, its own, and none failed. */
function assertAligned(shown) {
  assert.ok(shown.length > 50, `only ${shown.length} paragraphs found`);
  for (const item of shown) {
    assert.equal(item.shown, 1, `${item.id} shows ${item.shown} translations`);
    assert.equal(item.failed, false, `${item.id} failed: ${item.translation}`);
    assert.equal(item.translation, pseudoTranslate(item.text.trim(), "de"), `${item.id} shows another text's translation`);
  }
}

/** The statistics page's By provider rows of a flow: id -> { role, served, asked, batchLimit, learned }. */
function readProviderRows(flow) {
  const rows = {};
  for (const row of document.querySelectorAll(`#stats-${flow} tr[data-provider]`)) {
    const cell = (key) => row.querySelector(`[data-provider-stat="${key}"]`);
    const number = (key) => Number(cell(key).textContent.replaceAll(",", ""));
    rows[row.dataset.provider] = {
      role: row.dataset.role ?? null,
      served: number("served"),
      asked: number("paragraphs"),
      batchLimit: cell("batchLimit").textContent,
      learned: cell("batchLimit").dataset.learned === "1",
    };
  }
  return {
    rows,
    fallbackItems: Number(document.querySelector(`#stats-${flow} [data-stat="fallbackItems"]`).textContent.replaceAll(",", "")),
    current: document.querySelector(`#stats-${flow} .provider-id`).textContent,
  };
}

async function openStats(browser) {
  const page = await browser.context.newPage();
  await page.goto(browser.pageUrl("stats.html"));
  await page.waitForFunction(() => document.documentElement.dataset.statsLoaded === "1", null, { timeout: 10_000 });
  return page;
}

test("Chromium: the first model's daily quota runs out part way; the fallback set on the options page serves the rest, nothing fails, and the statistics page shows who served what", { skip, timeout: 120_000 }, async (t) => {
  const QUOTA = 10; // the page alone needs about 17 calls of 4 paragraphs, the cues about 10 more
  const mock = await withMock(t, { models: { [MODEL_ID]: { requestsPerDay: QUOTA }, [LITE_MODEL_ID]: { requestsPerDay: 1000 } } });
  const ids = idsOf(mock, LITE_MODEL_ID);
  const browser = await harness.launchChromium();
  t.after(() => browser.close());
  await harness.applySettings(browser, {
    page: DEFAULTS,
    subtitles: DEFAULTS,
    provider: { kind: "openai", baseUrl: mock.url, apiKey: "", model: MODEL_ID },
  });

  // The fallback of each flow, chosen on the options page as a user does.
  const options = await browser.context.newPage();
  await options.goto(browser.pageUrl("options.html"));
  await options.waitForFunction(() => document.documentElement.dataset.settingsLoaded === "1");
  for (const flow of ["page", "subtitles"]) {
    await options.selectOption(`#${flow}-fallback-kind`, "openai");
    await options.fill(`#${flow}-fallback-model`, LITE_MODEL_ID);
  }
  await options.click("#apply");
  await options.waitForSelector("#status[data-state]");
  assert.equal(await options.getAttribute("#status", "data-state"), "ok", await options.textContent("#status"));
  await options.close();
  // Saved like the other settings: a restarted worker has it.
  await harness.stopServiceWorker(browser);
  const { settings } = await harness.extensionMessage(browser, { type: "getSettings" });
  for (const flow of ["page", "subtitles"]) {
    assert.deepEqual(settings[flow].fallback, { kind: "openai", baseUrl: "", apiKey: "", apiKeySet: false, model: LITE_MODEL_ID });
  }

  const page = await browser.context.newPage();
  await page.goto(site.url + WITH_CUES);
  const done = await harness.waitTranslated(page, { timeoutMs: 90_000 });
  assert.equal(done.failed, 0, "no paragraph failed");
  assertAligned(await harness.translations(page));

  const { flows } = await harness.getStats(browser);
  const byModel = mock.stats().byModel;
  assert.equal(byModel[MODEL_ID].ok, QUOTA, "the first model answered its whole daily quota");
  assert.ok(byModel[MODEL_ID].dailyLimited >= 1, "then refused with a daily 429");
  assert.ok(byModel[LITE_MODEL_ID].ok > 0, "the fallback model answered");
  const totals = { page: done.pageTotal, subtitles: done.subtitlesTotal };
  let first = 0;
  let second = 0;
  for (const flow of ["page", "subtitles"]) {
    const { byProvider, cacheServed, pacer, fallbackProviderId, providerId } = flows[flow];
    assert.equal(providerId, ids.first);
    assert.equal(fallbackProviderId, ids.second);
    const served = (id) => byProvider[id]?.served ?? 0;
    assert.equal(cacheServed, 0, "a fresh profile: nothing from the cache");
    assert.equal(served(ids.first) + served(ids.second), totals[flow], `${flow}: the providers' counts add up to its paragraphs`);
    assert.equal(byProvider[ids.first].paragraphs, totals[flow], `${flow}: every paragraph was asked of the first provider`);
    assert.ok(pacer.fallbackItems > 0, `${flow}: items moved to the fallback`);
    // Each moved item is served by the fallback (a shared paragraph counts once there).
    assert.ok(served(ids.second) >= pacer.fallbackItems && served(ids.second) <= pacer.fallbackItems + pacer.dedupHits, `${flow}: ${served(ids.second)} served by the fallback, ${pacer.fallbackItems} moved`);
    first += served(ids.first);
    second += served(ids.second);
  }
  assert.ok(flows.page.byProvider[ids.first].served > 0 && flows.page.byProvider[ids.second].served > 0, "the page ran out half way: both served it");
  // The mock translated each text once, under the model the counts name.
  const dedup = flows.page.pacer.dedupHits + flows.subtitles.pacer.dedupHits;
  assert.ok(first >= byModel[MODEL_ID].segments && first <= byModel[MODEL_ID].segments + dedup, `first: ${first} served, ${byModel[MODEL_ID].segments} translated by the mock`);
  assert.ok(second >= byModel[LITE_MODEL_ID].segments && second <= byModel[LITE_MODEL_ID].segments + dedup, `fallback: ${second} served, ${byModel[LITE_MODEL_ID].segments} translated by the mock`);

  // The statistics page shows the same.
  const statsPage = await openStats(browser);
  for (const flow of ["page", "subtitles"]) {
    const shown = await statsPage.evaluate(readProviderRows, flow);
    assert.deepEqual(Object.keys(shown.rows), [ids.first, ids.second], `${flow}: one row per provider, the first provider first`);
    assert.equal(shown.rows[ids.first].role, "provider");
    assert.equal(shown.rows[ids.second].role, "fallback");
    for (const id of [ids.first, ids.second]) {
      assert.equal(shown.rows[id].served, flows[flow].byProvider[id]?.served ?? 0, `${flow}: ${id} served`);
      // The mock keeps every batch's layout: nothing to learn, the flow's maximum.
      assert.equal(shown.rows[id].batchLimit, "4 (maximum)");
    }
    assert.equal(shown.rows[ids.first].served + shown.rows[ids.second].served, totals[flow]);
    assert.equal(shown.fallbackItems, flows[flow].pacer.fallbackItems);
    assert.ok(shown.current.includes(`fallback provider: ${ids.second}`), shown.current);
  }
});

test("Chromium: a fallback model that cannot batch learns a smaller batch limit, shown on the statistics page, and a restarted worker still shows it", { skip, timeout: 120_000 }, async (t) => {
  const mock = await withMock(t, { models: { [MODEL_ID]: { requestsPerDay: 2 }, [TINY_MODEL]: { canBatch: false } } });
  const ids = idsOf(mock, TINY_MODEL);
  const browser = await harness.launchChromium();
  t.after(() => browser.close());
  await harness.applySettings(browser, {
    page: { ...DEFAULTS, fallback: { kind: "openai", baseUrl: "", apiKey: "", model: TINY_MODEL } },
    provider: { kind: "openai", baseUrl: mock.url, apiKey: "", model: MODEL_ID },
  });
  const page = await browser.context.newPage();
  await page.goto(site.url + ARTICLE_ONLY);
  const done = await harness.waitTranslated(page, { cues: false, timeoutMs: 90_000 });
  assert.equal(done.failed, 0, "no paragraph failed: the fallback's batches are sent again one by one");
  assertAligned((await harness.translations(page)).filter((p) => p.id.startsWith("p")));
  assert.ok(mock.stats().unbatched > 0, "the tiny model got batches and answered them in plain text");

  const { flows } = await harness.getStats(browser);
  const learned = flows.page.batchLimits[ids.second];
  assert.ok(Number.isInteger(learned) && learned < DEFAULTS.maxItemsPerBatch, `learned ${learned}`);
  assert.equal(flows.page.batchLimits[ids.first], undefined, "the first model kept its batches whole");
  const { byProvider } = flows.page;
  assert.equal(byProvider[ids.first].served + byProvider[ids.second].served, done.pageTotal);
  assert.ok(byProvider[ids.first].served > 0 && byProvider[ids.second].served > 0);

  const check = async () => {
    const statsPage = await openStats(browser);
    const shown = await statsPage.evaluate(readProviderRows, "page");
    await statsPage.close();
    assert.equal(shown.rows[ids.second].batchLimit, `${learned} (learned)`);
    assert.equal(shown.rows[ids.second].learned, true);
    assert.equal(shown.rows[ids.first].batchLimit, "4 (maximum)");
    assert.equal(shown.rows[ids.second].served, byProvider[ids.second].served);
  };
  await check();

  // A stopped worker hears no more events: the restarted one has the limit from the
  // pacer's snapshot (saved a moment after the last call).
  await new Promise((resolve) => setTimeout(resolve, 600));
  const { before: stoppedOrigin, after: freshOrigin } = await harness.stopServiceWorker(browser);
  assert.notEqual(freshOrigin, stoppedOrigin, "the worker was restarted");
  const again = await harness.getStats(browser);
  assert.equal(again.flows.page.batchLimits[ids.second], learned, "restored from the snapshot");
  await check();
});

// ---------------------------------------------------------------------------------------
// Firefox (selenium-webdriver, geckodriver): the options page sets the fallback there too.

const FIREFOX = "/usr/bin/firefox-esr";
const ADDON_ID = "batch-pacer-demo@batch-pacer.dev";
const ADDON_UUID = "3b7c9e12-5a4d-4f8e-9c61-0d2e8a7b4f35";
process.env.SE_OFFLINE = "true"; // selenium-manager must never download anything

function findGeckodriver() {
  const candidates = [
    process.env.GECKODRIVER,
    join(homedir(), ".cargo/bin/geckodriver"),
    ...(process.env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, "geckodriver")),
  ];
  return candidates.find((path) => path && existsSync(path)) ?? null;
}

function loadSelenium() {
  for (const base of [import.meta.url, pathToFileURL(join(repo, "package.json")).href]) {
    try {
      const require = createRequire(base);
      return { webdriver: require("selenium-webdriver"), firefox: require("selenium-webdriver/firefox") };
    } catch {
      // not installed there
    }
  }
  return null;
}

const geckodriver = findGeckodriver();
const selenium = loadSelenium();
firefoxSkip = skipIfMissing(
  !existsSync(FIREFOX)
    ? `${FIREFOX} is missing`
    : !geckodriver
      ? "geckodriver is missing (looked in $GECKODRIVER, ~/.cargo/bin and PATH)"
      : !selenium
        ? "selenium-webdriver is not installed here nor in the repository"
        : !built
          ? "the demo extension is not built (run: bash scripts/build-demo.sh)"
          : false,
);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("Firefox: the fallback chosen on the options page takes over when the first model's daily quota is spent; the statistics page shows both providers' paragraphs", { skip: firefoxSkip, timeout: 120_000 }, async (t) => {
  const QUOTA = 8;
  const mock = await withMock(t, { models: { [MODEL_ID]: { requestsPerDay: QUOTA } }, dailyStyle: "gemini" });
  const ids = idsOf(mock, LITE_MODEL_ID);
  const { webdriver, firefox } = selenium;
  const { By, Select, until } = webdriver;
  let help = "";
  try {
    help = execFileSync(geckodriver, ["--help"], { encoding: "utf8", timeout: 10_000 });
  } catch {
    // an old geckodriver: no extra argument
  }
  const options = new firefox.Options()
    .setBinary(FIREFOX)
    .addArguments("-headless", "--width=1280", "--height=900")
    .setPreference("extensions.webextensions.uuids", JSON.stringify({ [ADDON_ID]: ADDON_UUID }));
  const service = new firefox.ServiceBuilder(geckodriver).addArguments(...(help.includes("--allow-system-access") ? ["--allow-system-access"] : []));
  const driver = await new webdriver.Builder().forBrowser(webdriver.Browser.FIREFOX).setFirefoxOptions(options).setFirefoxService(service).build();
  t.after(() => driver.quit().catch(() => {}));
  assert.equal(await driver.installAddon(EXTENSION_DIR, true), ADDON_ID);

  await driver.get(`moz-extension://${ADDON_UUID}/options.html`);
  await driver.wait(until.elementLocated(By.css("html[data-settings-loaded='1']")), 10_000);
  const type = async (id, value) => {
    const input = await driver.findElement(By.id(id));
    await input.clear();
    await input.sendKeys(value);
  };
  await new Select(await driver.findElement(By.id("provider-kind"))).selectByValue("openai");
  await type("provider-baseUrl", mock.url);
  await type("provider-model", MODEL_ID);
  await new Select(await driver.findElement(By.id("page-fallback-kind"))).selectByValue("openai");
  await type("page-fallback-model", LITE_MODEL_ID);
  await driver.findElement(By.id("apply")).click();
  await driver.wait(until.elementLocated(By.css("#status[data-state]")), 10_000);
  const status = await driver.findElement(By.id("status"));
  assert.equal(await status.getAttribute("data-state"), "ok", await status.getText());

  await driver.get(site.url + ARTICLE_ONLY);
  const started = Date.now();
  let done;
  for (;;) {
    done = await driver.executeScript(harness.readProgressInPage);
    if (done.pageTotal > 0 && done.pageDone === done.pageTotal) break;
    if (Date.now() - started > 90_000) throw new Error(`not translated in time: ${JSON.stringify(done)}`);
    await sleep(150);
  }
  assert.equal(done.failed, 0, "no paragraph failed");
  assertAligned((await driver.executeScript(harness.readTranslationsInPage)).filter((p) => p.id.startsWith("p")));
  assert.equal(mock.stats().byModel[MODEL_ID].ok, QUOTA);
  assert.ok(mock.stats().byModel[MODEL_ID].dailyLimited >= 1, "Gemini's per-day QuotaFailure was met");

  await driver.get(`moz-extension://${ADDON_UUID}/stats.html`);
  await driver.wait(until.elementLocated(By.css("html[data-stats-loaded='1']")), 10_000);
  const shown = await driver.executeScript(readProviderRows, "page");
  assert.deepEqual(Object.keys(shown.rows), [ids.first, ids.second]);
  const { first, second } = { first: shown.rows[ids.first], second: shown.rows[ids.second] };
  assert.ok(first.served > 0 && second.served > 0, `served ${first.served} and ${second.served}`);
  assert.equal(first.served + second.served, done.pageTotal, "the counts add up to the page's paragraphs");
  assert.equal(first.asked, done.pageTotal);
  assert.ok(shown.fallbackItems > 0 && shown.fallbackItems <= second.served);
  assert.equal(first.batchLimit, "4 (maximum)");
  assert.equal(second.batchLimit, "4 (maximum)");
});
