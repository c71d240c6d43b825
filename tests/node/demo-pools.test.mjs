// The demo extension's pool of keys end to end, in real browsers, as `npm start`'s pooled
// run does it: the options page gives the page flow a pool of API keys and each key its
// own limits; the local mock enforces a strict quota per key (429 + Retry-After above
// it); the article is translated with no 429, each paragraph under its own translation,
// the calls spread over the keys, and the statistics page shows each key's calls as the
// mock counted them. Chromium (playwright) and Firefox ESR (selenium).
//
// Run from the repository: `BATCH_PACER_REPO=$PWD node --test tests/node/demo-pools.test.mjs`
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
const { startMockProvider, MODEL_ID } = await load("extension-demo/mock-provider.mjs");
const { startDemoServer } = await load("extension-demo/demo-server.mjs");
const { pseudoTranslate } = await load("extension-demo/demo-provider.js");
const { poolMembersOf, providerIdOf } = await load("extension-demo/protocol.js");
const { KEY_QUOTA, POOL_KEYS, checkKeysRun, keysRun, readKeyRows } = await load("extension-demo/pool-run.mjs");

const EXTENSION_DIR = join(repo, "extension-demo");
const built = existsSync(join(EXTENSION_DIR, "vendor/batch-pacer/js/index.js"));
const skip = skipIfMissing(
  !existsSync("/usr/bin/chromium")
    ? "/usr/bin/chromium is missing"
    : !built
      ? "the demo extension is not built (run: bash scripts/build-demo.sh)"
      : false,
);
const ARTICLE_ONLY = "?cueStart=600000";

let site;
let firefoxSkip;
before(async () => {
  if (!skip || !firefoxSkip) site = await startDemoServer({ port: 0 });
});
after(async () => {
  await site?.close();
});

/** The mock as `npm start` runs it: each pool key with its own strict quota, the key-less bucket unlimited. */
async function withMock(t) {
  const keys = Object.fromEntries(POOL_KEYS.map((key) => [key, { ...KEY_QUOTA }]));
  const mock = await startMockProvider({ port: 0, rpm: 0, latency: 250, jitter: 100, keys });
  t.after(() => mock.close());
  return mock;
}

test("Chromium: npm start's pooled run: one key, then a pool of two, each key at its own strict quota; no 429, every paragraph its own, the calls spread over both keys and shown per key on the statistics page", { skip, timeout: 240_000 }, async (t) => {
  const mock = await withMock(t);
  const browser = await harness.launchChromium();
  t.after(() => browser.close());
  await harness.applySettings(browser, { provider: { kind: "openai", baseUrl: mock.url, apiKey: "", model: MODEL_ID } });

  const one = await keysRun(browser, site, mock, { keyCount: 1, targetLang: "nl" });
  const two = await keysRun(browser, site, mock, { keyCount: 2, targetLang: "pt" });
  for (const run of [one, two]) {
    assert.deepEqual(checkKeysRun(run), [], `${run.keys.length} key(s)`);
    assert.ok(run.shown.length > 50, `only ${run.shown.length} paragraphs`);
    assert.equal(run.done.pageDone, run.done.pageTotal);
  }
  // The pool's items are the pool's: asked under the provider's id, served by the keys.
  const poolId = providerIdOf({ kind: "openai", baseUrl: mock.url, model: MODEL_ID });
  assert.deepEqual(two.members, poolMembersOf(poolId, 2));
  assert.deepEqual(two.stats.flows.page.poolMembers, two.members);
  const { byProvider } = two.stats.flows.page;
  assert.equal(byProvider[poolId].paragraphs, two.done.pageTotal, "every paragraph asked of the pool");
  assert.equal(byProvider[poolId].calls, 0, "no call under the pool's own id");
  const served = two.members.reduce((n, id) => n + (byProvider[id]?.served ?? 0), 0);
  assert.equal(served + two.stats.flows.page.cacheServed, two.done.pageTotal, "the keys served every paragraph");
  // Each key made about half the calls: a pool of two at the same quota, used evenly.
  const [first, second] = two.members.map((id) => two.shownKeys[id].calls);
  assert.ok(Math.abs(first - second) <= 2, `key 1: ${first} calls, key 2: ${second}`);
  assert.ok(first + second >= one.shownKeys[one.members[0]].calls - 2, "the pool made as many calls as one key, spread over two");
  // The mock saw each key's requests and no other.
  assert.deepEqual(Object.keys(two.mockStats.byKey).sort(), [...POOL_KEYS].sort());
  assert.equal(two.mockStats.rateLimited, 0);
});

// ---------------------------------------------------------------------------------------
// Firefox (selenium-webdriver, geckodriver): the options page sets the pool there too.

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

test("Firefox: a pool of two keys and each key's limits typed on the options page: no 429 at the keys' strict quotas, every paragraph its own, the statistics page shows each key's calls", { skip: firefoxSkip, timeout: 150_000 }, async (t) => {
  const mock = await withMock(t);
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
  await type("page-pool-keys", POOL_KEYS.join("\n"));
  await type("page-keyLimits-rpm", String(KEY_QUOTA.rpm));
  await type("page-keyLimits-burst", String(KEY_QUOTA.burst));
  await driver.findElement(By.id("apply")).click();
  await driver.wait(until.elementLocated(By.css("#status[data-state]")), 10_000);
  const status = await driver.findElement(By.id("status"));
  assert.equal(await status.getAttribute("data-state"), "ok", await status.getText());
  // The keys are stored, never shown again.
  assert.equal(await driver.findElement(By.id("page-pool-keys")).getAttribute("value"), "");
  assert.match(await driver.findElement(By.id("page-pool-keys-hint")).getText(), /^2 keys stored/);

  await driver.get(site.url + ARTICLE_ONLY);
  const started = Date.now();
  let done;
  for (;;) {
    done = await driver.executeScript(harness.readProgressInPage);
    if (done.pageTotal > 0 && done.pageDone === done.pageTotal) break;
    if (Date.now() - started > 120_000) throw new Error(`not translated in time: ${JSON.stringify(done)}`);
    await sleep(150);
  }
  assert.equal(done.failed, 0, "no paragraph failed");
  const shown = (await driver.executeScript(harness.readTranslationsInPage)).filter((p) => p.id.startsWith("p"));
  assert.ok(shown.length > 50);
  for (const p of shown) assert.equal(p.translation, pseudoTranslate(p.text.trim(), "de"), `${p.id} shows another text's translation`);
  const { byKey, rateLimited } = mock.stats();
  assert.equal(rateLimited, 0, "no key met a 429");

  await driver.get(`moz-extension://${ADDON_UUID}/stats.html`);
  await driver.wait(until.elementLocated(By.css("html[data-stats-loaded='1']")), 10_000);
  const members = poolMembersOf(providerIdOf({ kind: "openai", baseUrl: mock.url, model: MODEL_ID }), 2);
  const rows = await driver.executeScript(readKeyRows, "page");
  POOL_KEYS.forEach((key, i) => {
    assert.ok(byKey[key]?.ok > 0, `${key} made calls`);
    assert.equal(rows[members[i]]?.calls, byKey[key].ok, `the statistics page shows ${key}'s calls as the mock counted them`);
    assert.equal(rows[members[i]].rateLimited, 0);
  });
  assert.ok(Math.abs(rows[members[0]].calls - rows[members[1]].calls) <= 2, `calls per key: ${JSON.stringify(rows)}`);
});
