// The demo extension end to end in headless Firefox ESR, driven by selenium-webdriver
// and geckodriver: the MV3 background (an event page in Firefox), the content script,
// the options page, and a real HTTP provider on 127.0.0.1 with a quota.
//
// Loading and reaching the add-on:
// - `driver.installAddon(extension-demo/, true)` installs the unpacked folder as a
//   temporary add-on (selenium zips the folder in memory).
// - The add-on's UUID is pinned with the pref `extensions.webextensions.uuids`, so its
//   pages have a known address: moz-extension://<UUID>/options.html.
// - Firefox refuses a WebDriver navigation to a moz-extension:// page ("not allowed in
//   this context") unless geckodriver runs with --allow-system-access (geckodriver
//   >= 0.36); with it, `driver.get()` opens the options page as a real extension page,
//   whose runtime.sendMessage the background accepts. A web page cannot open it instead:
//   window.open of a moz-extension:// address is denied to page scripts.
//
// Run: BATCH_PACER_REPO=$PWD node --test tests/node/e2e-firefox.test.mjs
// (BATCH_PACER_REPO is optional when run from the repository.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { skipIfMissing } from "./requirements.mjs";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const load = (path) => import(pathToFileURL(join(repo, path)).href);
const { startDemoServer } = await load("extension-demo/demo-server.mjs");
const { startMockProvider, pseudoTranslate: mockTranslate, reversePseudoTranslation } =
  await load("extension-demo/mock-provider.mjs");
const { pseudoTranslate } = await load("extension-demo/demo-provider.js");
const { readProgressInPage, readTranslationsInPage } = await load("extension-demo/harness.mjs");

const EXTENSION_DIR = join(repo, "extension-demo");
const FIREFOX = "/usr/bin/firefox-esr";
const ADDON_ID = "batch-pacer-demo@batch-pacer.dev";
const ADDON_UUID = "3b7c9e12-5a4d-4f8e-9c61-0d2e8a7b4f35";
const CUES = 40;

// selenium-manager must never download anything: the driver and browser are given.
process.env.SE_OFFLINE = "true";

/** geckodriver: $GECKODRIVER, ~/.cargo/bin/geckodriver, or the first on PATH. */
function findGeckodriver() {
  const candidates = [
    process.env.GECKODRIVER,
    join(homedir(), ".cargo/bin/geckodriver"),
    ...(process.env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, "geckodriver")),
  ];
  return candidates.find((path) => path && existsSync(path)) ?? null;
}

/** selenium-webdriver from here, else from the repository's node_modules; null if neither. */
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
const skip = skipIfMissing(
  !existsSync(FIREFOX)
    ? `${FIREFOX} is missing`
    : !geckodriver
      ? "geckodriver is missing (looked in $GECKODRIVER, ~/.cargo/bin and PATH)"
      : !selenium
        ? "selenium-webdriver is not installed here nor in the repository"
        : !existsSync(join(EXTENSION_DIR, "vendor/batch-pacer/js/index.js"))
          ? "the demo extension is not built (run: bash scripts/build-demo.sh)"
          : false,
);

/** Whether this geckodriver knows --allow-system-access (needed to open moz-extension:// pages). */
function geckodriverArgs() {
  try {
    const help = execFileSync(geckodriver, ["--help"], { encoding: "utf8", timeout: 10_000 });
    return help.includes("--allow-system-access") ? ["--allow-system-access"] : [];
  } catch {
    return [];
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let site;
before(async () => {
  if (!skip) site = await startDemoServer({ port: 0 });
});
after(async () => {
  await site?.close();
});

/** A fresh headless Firefox (fresh profile) with the demo extension (or a changed copy, `extensionDir`) installed. */
async function withFirefox(t, fn, extensionDir = EXTENSION_DIR) {
  const { webdriver, firefox } = selenium;
  const options = new firefox.Options()
    .setBinary(FIREFOX)
    .addArguments("-headless", "--width=1280", "--height=900")
    .setPreference("extensions.webextensions.uuids", JSON.stringify({ [ADDON_ID]: ADDON_UUID }));
  const service = new firefox.ServiceBuilder(geckodriver).addArguments(...geckodriverArgs());
  const driver = await new webdriver.Builder()
    .forBrowser(webdriver.Browser.FIREFOX)
    .setFirefoxOptions(options)
    .setFirefoxService(service)
    .build();
  t.after(() => driver.quit().catch(() => {}));
  const id = await driver.installAddon(extensionDir, true);
  assert.equal(id, ADDON_ID);
  return fn(driver);
}

async function withMock(t, options) {
  const mock = await startMockProvider({ port: 0, ...options });
  t.after(() => mock.close());
  return mock;
}

/** Progress the content script publishes, read by the harness's in-page function. */
function progress(driver) {
  return driver.executeScript(readProgressInPage);
}

/** Polls until every paragraph (and, when `cues`, all 40 cues) has its answer. */
async function waitTranslated(driver, { cues = true, timeoutMs = 60_000 } = {}) {
  const started = Date.now();
  for (;;) {
    const p = await progress(driver);
    const pageDone = p.pageTotal > 0 && p.pageDone === p.pageTotal;
    const cuesDone = !cues || (p.cuesDone === CUES && p.subtitlesTotal === CUES && p.subtitlesDone === CUES);
    if (pageDone && cuesDone) return p;
    if (Date.now() - started > timeoutMs) throw new Error(`not translated in time: ${JSON.stringify(p)}`);
    await sleep(150);
  }
}

/** Every paragraph and cue with its translation, read by the harness's in-page function. */
function translations(driver) {
  return driver.executeScript(readTranslationsInPage);
}

/** Opens the options page as an extension page and waits for its settings. */
async function openOptions(driver) {
  const { By, until } = selenium.webdriver;
  const optionsUrl = `moz-extension://${ADDON_UUID}/options.html`;
  await driver.get(optionsUrl);
  assert.equal(await driver.getCurrentUrl(), optionsUrl);
  await driver.wait(until.elementLocated(By.css("html[data-settings-loaded='1']")), 10_000);
}

/** Presses Apply on the options page and expects the background to accept. */
async function applyOptions(driver) {
  const { By, until } = selenium.webdriver;
  await driver.findElement(By.id("apply")).click();
  await driver.wait(until.elementLocated(By.css("#status[data-state]")), 10_000);
  const status = await driver.findElement(By.id("status"));
  assert.equal(await status.getAttribute("data-state"), "ok", await status.getText());
}

/** Every item shows exactly one translation, its own, and none failed. */
function assertAligned(shown, translate) {
  for (const item of shown) {
    assert.equal(item.shown, 1, `${item.id} shows ${item.shown} translations`);
    assert.equal(item.failed, false, `${item.id} failed: ${item.translation}`);
    assert.equal(item.translation, translate(item.text.trim()), `${item.id} shows another text's translation`);
  }
}

test("Firefox: the offline demo provider translates the whole page and its 40 subtitles, each under its own element", { skip, timeout: 60_000 }, (t) =>
  withFirefox(t, async (driver) => {
    await driver.get(`${site.url}?cueStart=100&cueInterval=50`);
    const done = await waitTranslated(driver, { timeoutMs: 40_000 });
    assert.equal(done.failed, 0);
    assert.equal(done.subtitlesDone, CUES);
    const shown = await translations(driver);
    const paragraphs = shown.filter((item) => item.id.startsWith("p"));
    const cues = shown.filter((item) => item.id.startsWith("s"));
    assert.equal(paragraphs.length, done.pageTotal);
    assert.ok(paragraphs.length > 50, `only ${paragraphs.length} paragraphs found`);
    assert.equal(cues.length, CUES);
    assertAligned(shown, (text) => pseudoTranslate(text, "de"));
    assert.equal(await driver.executeScript(() => document.querySelectorAll(".bp-failed").length), 0);
  }));

test("Firefox: set up on the options page, the strict preset meets a 60-per-minute quota with no burst without a 429", { skip, timeout: 75_000 }, (t) =>
  withFirefox(t, async (driver) => {
    const { By, Select } = selenium.webdriver;
    const mock = await withMock(t, { rpm: 60, burst: 1 });

    // The options page, opened as an extension page: its messages are the ones the
    // background accepts for settings.
    await openOptions(driver);
    await new Select(await driver.findElement(By.id("provider-kind"))).selectByValue("openai");
    for (const [id, value] of [["provider-baseUrl", mock.url], ["provider-model", "mock-translator"]]) {
      const input = await driver.findElement(By.id(id));
      await input.clear();
      await input.sendKeys(value);
    }
    await new Select(await driver.findElement(By.id("page-preset"))).selectByValue("strictFreeTier");
    assert.equal(await driver.findElement(By.id("page-rate")).getAttribute("value"), "1");
    assert.equal(await driver.findElement(By.id("page-capacity")).getAttribute("value"), "1");
    await applyOptions(driver);

    await driver.get(`${site.url}?cueStart=600000`);
    const done = await waitTranslated(driver, { cues: false, timeoutMs: 50_000 });
    assert.equal(done.failed, 0);
    assert.equal(done.subtitlesTotal, 0, "no cue arrived during the test");

    // The mock's own bucket (60 a minute, burst 1) measures the pacing on its clock: a
    // request closer than the quota allows would have met a 429.
    const stats = mock.stats();
    assert.equal(stats.rateLimited, 0, "the pacer met 429s");
    assert.ok(stats.ok >= 2, `the mock answered ${stats.ok} requests`);
    assert.equal(stats.ok, stats.requests, "every request was answered");

    const paragraphs = (await translations(driver)).filter((item) => item.id.startsWith("p"));
    assert.equal(paragraphs.length, done.pageTotal);
    assert.ok(paragraphs.length > 50, `only ${paragraphs.length} paragraphs found`);
    // The mock's pseudo-translation is the demo provider's, so check it really came from the mock:
    // it received every distinct text (a shared text is sent once).
    const distinct = new Set(paragraphs.map((item) => item.text.trim()));
    assert.ok(stats.segments >= distinct.size, `the mock translated ${stats.segments} of ${distinct.size} texts`);
    assertAligned(paragraphs, (text) => mockTranslate(text, "de"));
    for (const item of paragraphs) {
      assert.equal(item.translation, pseudoTranslate(item.text.trim(), "de"));
      assert.equal(reversePseudoTranslation(item.translation), item.text.trim());
    }
  }));

test("Firefox: Stream replies ticked on the options page: the page's paragraphs come from streamed replies, previews give way to answers", { skip, timeout: 75_000 }, (t) =>
  withFirefox(t, async (driver) => {
    const { By } = selenium.webdriver;
    await openOptions(driver);
    const stream = await driver.findElement(By.id("page-stream"));
    const previews = await driver.findElement(By.id("page-previews"));
    assert.equal(await stream.isSelected(), false, "off by default");
    assert.equal(await previews.isEnabled(), false, "previews wait for streaming");
    await stream.click();
    assert.equal(await previews.isEnabled(), true);
    assert.equal(await previews.isSelected(), true, "previews on by default");
    await applyOptions(driver);

    // The offline demo provider streams its reply when the flow's switch is on.
    await driver.get(`${site.url}?cueStart=600000`);
    const done = await waitTranslated(driver, { cues: false, timeoutMs: 50_000 });
    assert.equal(done.failed, 0);
    const paragraphs = (await translations(driver)).filter((item) => item.id.startsWith("p"));
    assert.ok(paragraphs.length > 50, `only ${paragraphs.length} paragraphs found`);
    assertAligned(paragraphs, (text) => pseudoTranslate(text, "de"));
    const shownPreviews = await driver.executeScript(() => Number(document.documentElement.dataset.bpPreviews));
    assert.ok(shownPreviews > 0, "previews were shown while the replies streamed");
    assert.equal(await driver.executeScript(() => document.querySelectorAll(".bp-preview").length), 0);
  }));

// The manifest line the package's load error quotes (docs/guides/install.md, "The CSP, per browser and
// manifest version").
const CSP_LINE = `"content_security_policy": {"extension_pages": "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"}`;

test("Firefox: without 'wasm-unsafe-eval' in the manifest, every paragraph and cue gets the load error, never silence", { skip, timeout: 60_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "batch-pacer-no-csp-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await cp(EXTENSION_DIR, dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));
  assert.ok(manifest.content_security_policy, "the demo's manifest allows WebAssembly");
  delete manifest.content_security_policy;
  await writeFile(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2));
  await withFirefox(t, async (driver) => {
    await driver.get(`${site.url}?cueStart=100&cueInterval=50`);
    const done = await waitTranslated(driver, { timeoutMs: 40_000 });
    assert.equal(done.failed, done.pageTotal + CUES, "every paragraph and cue was answered, as failed");
    const shown = await translations(driver);
    assert.ok(shown.length > 50, `only ${shown.length} paragraphs found`);
    for (const item of shown) {
      assert.equal(item.shown, 1, `${item.id} shows ${item.shown} answers`);
      assert.ok(item.translation.startsWith("⚠ not translated (not_initialized): "), item.translation);
      assert.ok(item.translation.includes(CSP_LINE), item.translation);
    }
  }, dir);
});
