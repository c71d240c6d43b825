// The demo extension's pages (extension-demo/options.html and stats.html) in a real
// headless Chromium. The folder is served over http from 127.0.0.1 with the extension's
// CSP, and a fake `chrome.runtime.sendMessage` stands in for the background: it answers
// getSettings, setSettings, getStats, resetStats and getProviderStatus from memory and
// records every message.
//
// Run from the repository: `BATCH_PACER_REPO=$PWD node --test tests/node/demo-pages.test.mjs`.

import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, playwright } from "./chromium.mjs";
import { skipIfMissing } from "./requirements.mjs";

const repo = path.resolve(process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url)));
const demoDir = path.join(repo, "extension-demo");

const browserSkip = skipIfMissing(
  !playwright
    ? `playwright-core is not installed here nor under ${repo}`
    : !existsSync("/usr/bin/chromium")
      ? "/usr/bin/chromium is missing"
      : !existsSync(path.join(demoDir, "options.html"))
        ? `${demoDir}/options.html is missing`
        : false,
);

// ---------------------------------------------------------------------------------------
// Fixtures

const SETTINGS = {
  page: { rate: 0.5, capacity: 2, maxInFlight: 3, maxCharactersPerBatch: 900, maxItemsPerBatch: 5, batchDelayMs: 150 },
  subtitles: { rate: 4, capacity: 8, maxInFlight: 0, maxCharactersPerBatch: 400, maxItemsPerBatch: 3, batchDelayMs: 50 },
  provider: { kind: "openai", baseUrl: "http://127.0.0.1:8787/v1", apiKey: "", apiKeySet: true, model: "mock-translator" },
  sourceLang: "en",
  targetLang: "fr",
};

function pacerStats(overrides = {}) {
  return {
    items: 0, cacheHits: 0, dedupHits: 0, providerCalls: 0, batchCalls: 0, retries: 0,
    countMismatches: 0, fallbacks: 0, rateLimited: 0, failed: 0, aborted: 0, succeeded: 0,
    disposed: 0, pending: 0, queued: 0, inFlight: 0, inputTokens: 0, outputTokens: 0,
    ...overrides,
  };
}

const OPENAI_ID = "openai:http://127.0.0.1:8787/v1";
const NO_FALLBACK = { kind: "none", baseUrl: "", apiKey: "", model: "" };
const NO_POOL = { keys: [], clear: false };
const NO_KEY_LIMITS = { rpm: 0, burst: 1 };

const STATS = {
  startedAt: Date.UTC(2025, 0, 1, 12, 0, 0),
  flows: {
    page: {
      providerId: OPENAI_ID,
      pacer: pacerStats({
        items: 40, providerCalls: 10, batchCalls: 8, retries: 2, countMismatches: 1, fallbacks: 1,
        rateLimited: 3, cacheHits: 6, dedupHits: 4, failed: 1, queued: 5, inFlight: 2,
        succeeded: 32, pending: 7, inputTokens: 12345, outputTokens: 6789, streamedCalls: 7, earlyResolved: 21,
      }),
      timing: { pages: 4, firstMsSum: 4200, lastFirstMs: 640, paragraphs: 30, callMsSum: 75000 },
      byProvider: {
        demo: { paragraphs: 30, calls: 6, rateLimited: 0, inputTokens: 9000, outputTokens: 5000 },
        [OPENAI_ID]: { paragraphs: 10, calls: 4, rateLimited: 3, inputTokens: 3345, outputTokens: 1789 },
      },
      // tokens: cumulative input + output; 1,000 tokens a second from t = 1 on.
      series: [
        { t: 1, paragraphs: 8, calls: 2, tokens: 1000 },
        { t: 2, paragraphs: 16, calls: 4, tokens: 2000 },
        { t: 3, paragraphs: 24, calls: 6, tokens: 3000 },
        { t: 5, paragraphs: 32, calls: 8, tokens: 5000 },
        { t: 8, paragraphs: 40, calls: 10, tokens: 8000 },
      ],
    },
    subtitles: {
      providerId: OPENAI_ID,
      pacer: pacerStats(),
      byProvider: {},
      series: [{ t: 4, paragraphs: 0, calls: 0 }],
    },
  },
};

/**
 * Runs in the page before its scripts: the background as far as the pages can see it.
 * `globalThis.__fake` holds the state and the recorded messages.
 */
function installFakeExtension({ settings, stats }) {
  const FIELDS = ["rate", "capacity", "maxInFlight", "maxCharactersPerBatch", "maxItemsPerBatch", "batchDelayMs"];
  const state = {
    calls: [],
    settings: structuredClone(settings),
    apiKey: "stored-key",
    stats: structuredClone(stats),
    // What getProviderStatus answers: the last `blocked` event, or null.
    blocked: null,
  };
  globalThis.__fake = state;

  // Keys of the flows' fallback providers, as the background stores them.
  state.fallbackKeys = { page: "", subtitles: "" };
  state.poolKeys = { page: [], subtitles: [] };
  const publicSettings = () => {
    const out = {
      ...structuredClone(state.settings),
      provider: { ...state.settings.provider, apiKey: "", apiKeySet: state.apiKey !== "" },
    };
    for (const flow of ["page", "subtitles"]) {
      if (out[flow].fallback) out[flow].fallback = { ...out[flow].fallback, apiKey: "", apiKeySet: state.fallbackKeys[flow] !== "" };
      if (out[flow].pool) out[flow].pool = { keys: [], keysSet: state.poolKeys[flow].length };
    }
    return out;
  };

  function answer(message) {
    switch (message?.type) {
      case "getSettings":
        return { ok: true, settings: publicSettings() };
      case "setSettings": {
        const next = message.settings;
        if (state.refuse) return { ok: false, error: state.refuse };
        if (next?.page?.rate === -1) {
          return {
            ok: false,
            error: { flow: "page", field: "rate", code: "invalid_options", message: "rate must be a finite number > 0 (got -1)" },
          };
        }
        for (const flow of ["page", "subtitles"]) {
          for (const field of FIELDS) {
            const value = next?.[flow]?.[field];
            if (typeof value !== "number") {
              return {
                ok: false,
                error: { flow, field, code: "invalid_options", message: `${field} must be a number (got ${JSON.stringify(value)})` },
              };
            }
          }
        }
        if (next.provider.kind === "openai" && !next.provider.baseUrl) {
          // As the background reports openAIProvider's own errors: no field, the name leads.
          return {
            ok: false,
            error: { flow: "provider", field: null, code: "invalid_options", message: 'baseUrl must be a non-empty http(s) URL string (got "")' },
          };
        }
        for (const flow of ["page", "subtitles"]) {
          const fallback = next[flow].fallback;
          if (fallback?.kind === "openai" && !fallback.model) {
            return { ok: false, error: { flow, field: "fallback.model", code: "invalid_options", message: "model must be a non-empty string (got \"\")" } };
          }
          if (fallback?.apiKey) state.fallbackKeys[flow] = fallback.apiKey;
          const pool = next[flow].pool;
          if (pool?.clear === true) state.poolKeys[flow] = [];
          else if (pool?.keys?.length > 0) state.poolKeys[flow] = pool.keys;
        }
        if (next.provider.apiKey !== "") state.apiKey = next.provider.apiKey;
        state.settings = { ...structuredClone(next), provider: { ...next.provider, apiKey: "" } };
        for (const flow of ["page", "subtitles"]) {
          if (state.settings[flow].fallback) state.settings[flow].fallback.apiKey = "";
        }
        return { ok: true, settings: publicSettings() };
      }
      case "getStats":
        return { ok: true, stats: state.stats };
      case "getProviderStatus":
        return { ok: true, blocked: state.blocked };
      case "resetStats":
        for (const flow of Object.values(state.stats.flows)) {
          for (const key of Object.keys(flow.pacer)) flow.pacer[key] = 0;
          flow.byProvider = {};
          flow.series = [];
        }
        state.stats.startedAt = Date.now();
        return { ok: true };
      default:
        return undefined;
    }
  }

  const runtime = {
    sendMessage(message) {
      state.calls.push(structuredClone(message));
      return new Promise((resolve) => setTimeout(() => resolve(structuredClone(answer(message))), 5));
    },
  };
  Object.defineProperty(globalThis, "chrome", { value: { runtime }, configurable: true, writable: true });
}

// ---------------------------------------------------------------------------------------
// Server and browser

const TYPES = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

// The CSP of an MV3 extension page: no inline scripts, no remote code.
const CSP = "script-src 'self'; object-src 'self'";

describe("demo extension pages in Chromium", { skip: browserSkip }, () => {
  let server;
  let origin;
  let browser;
  const problems = [];

  before(async () => {
    server = http.createServer(async (request, response) => {
      const url = new URL(request.url, "http://127.0.0.1");
      if (url.pathname === "/favicon.ico") {
        response.writeHead(204).end(); // the browser's own request; an extension has its icon
        return;
      }
      const file = path.join(demoDir, path.normalize(decodeURIComponent(url.pathname)));
      if (!file.startsWith(demoDir + path.sep)) {
        response.writeHead(403).end();
        return;
      }
      try {
        const body = await readFile(file);
        const type = TYPES[path.extname(file)] ?? "application/octet-stream";
        response.writeHead(200, {
          "content-type": `${type}; charset=utf-8`,
          "cache-control": "no-store",
          "content-security-policy": CSP,
        });
        response.end(body);
      } catch {
        response.writeHead(404).end();
      }
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${server.address().port}`;
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
    assert.deepEqual(problems, [], "no page errors, console errors, failed or foreign requests");
  });

  /** A fresh page on `file` with the fake background; waits for `readyFlag` on <html>. */
  async function open(file, readyFlag, { settings = SETTINGS, stats = STATS } = {}) {
    const context = await browser.newContext();
    context.setDefaultTimeout(5000);
    const page = await context.newPage();
    page.on("pageerror", (error) => problems.push(`${file}: page error: ${error}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`${file}: console error: ${message.text()}`);
    });
    page.on("request", (request) => {
      if (!request.url().startsWith(origin)) problems.push(`${file}: foreign request ${request.url()}`);
    });
    page.on("requestfailed", (request) => problems.push(`${file}: failed request ${request.url()}`));
    page.on("response", (response) => {
      if (response.status() >= 400) problems.push(`${file}: ${response.status()} for ${response.url()}`);
    });
    await page.addInitScript(installFakeExtension, { settings, stats });
    await page.goto(`${origin}/${file}`);
    await page.waitForFunction((flag) => document.documentElement.dataset[flag] === "1", readyFlag);
    return { page, close: () => context.close() };
  }

  const calls = (page, type) =>
    page.evaluate((t) => globalThis.__fake.calls.filter((m) => t === undefined || m.type === t), type);

  const values = (page, ids) =>
    page.evaluate((list) => Object.fromEntries(list.map((id) => [id, document.getElementById(id).value])), ids);

  // -------------------------------------------------------------------------------------
  // Options page

  describe("options.html (Request Control)", () => {
    test("a blocked provider's message shows next to the provider settings, and goes when the block ends", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        assert.equal(await page.textContent("#provider-blocked"), "");
        await page.evaluate(() => {
          globalThis.__fake.blocked = {
            flow: "page",
            providerId: "openai:http://x/v1",
            reason: "settings",
            status: 401,
            message: "the provider rejected the API key: check the key in the provider settings (provider failed with status 401)",
            at: Date.now(),
          };
        });
        await page.waitForFunction(() => document.getElementById("provider-blocked").textContent !== "", null, { timeout: 5000 });
        const shown = await page.textContent("#provider-blocked");
        assert.match(shown, /HTTP 401/);
        assert.match(shown, /check the key in the provider settings/);
        // Inside the provider settings, not elsewhere on the page.
        assert.equal(await page.evaluate(() => document.getElementById("provider-blocked").closest("#section-provider") !== null), true);
        await page.evaluate(() => {
          globalThis.__fake.blocked = null;
        });
        await page.waitForFunction(() => document.getElementById("provider-blocked").textContent === "", null, { timeout: 5000 });
      } finally {
        await close();
      }
    });

    test("the fields are filled from getSettings", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        assert.equal(await page.title(), "Request Control — batch-pacer demo");
        // The provider's status is polled beside it (see the blocked-message test).
        assert.deepEqual((await calls(page)).filter((m) => m.type !== "getProviderStatus"), [{ type: "getSettings" }]);
        assert.deepEqual(
          await values(page, [
            "page-rate", "page-capacity", "page-maxInFlight", "page-maxCharactersPerBatch",
            "page-maxItemsPerBatch", "page-batchDelayMs", "page-rpm", "page-preset",
          ]),
          {
            "page-rate": "0.5", "page-capacity": "2", "page-maxInFlight": "3",
            "page-maxCharactersPerBatch": "900", "page-maxItemsPerBatch": "5",
            "page-batchDelayMs": "150", "page-rpm": "30", "page-preset": "",
          },
        );
        assert.deepEqual(
          await values(page, [
            "subtitles-rate", "subtitles-capacity", "subtitles-maxInFlight",
            "subtitles-maxCharactersPerBatch", "subtitles-maxItemsPerBatch",
            "subtitles-batchDelayMs", "subtitles-rpm",
          ]),
          {
            "subtitles-rate": "4", "subtitles-capacity": "8", "subtitles-maxInFlight": "0",
            "subtitles-maxCharactersPerBatch": "400", "subtitles-maxItemsPerBatch": "3",
            "subtitles-batchDelayMs": "50", "subtitles-rpm": "240",
          },
        );
        assert.deepEqual(
          await values(page, ["provider-kind", "provider-baseUrl", "provider-apiKey", "provider-model", "sourceLang", "targetLang"]),
          {
            "provider-kind": "openai", "provider-baseUrl": "http://127.0.0.1:8787/v1", "provider-apiKey": "",
            "provider-model": "mock-translator", sourceLang: "en", targetLang: "fr",
          },
        );
        const key = page.locator("#provider-apiKey");
        assert.equal(await key.getAttribute("type"), "password");
        assert.equal(await key.getAttribute("autocomplete"), "off");
        assert.match(await page.locator("#provider-apiKey-hint").textContent(), /a key is stored/i);
        assert.match(await page.locator("#page-rpm-result").textContent(), /0\.5 requests per second.*one every 2 s/);
        assert.equal(await page.locator("#page-rate").getAttribute("type"), "number");
        assert.match(await page.locator('label[for="page-rate"]').textContent(), /Average requests per second/);
        assert.match(await page.locator('label[for="page-capacity"]').textContent(), /Maximum burst \(bucket size\)/);
        assert.match(await page.locator('label[for="page-maxInFlight"]').textContent(), /0 = no limit/);
        assert.deepEqual(
          await page.locator("#provider-kind option").evaluateAll((options) => options.map((o) => [o.value, o.textContent])),
          [["demo", "Demo provider (offline)"], ["openai", "OpenAI-compatible"]],
        );
        assert.deepEqual(
          await page.locator("h2").allTextContents(),
          ["Page translation", "Video subtitles", "Provider settings"],
        );
        assert.equal(await page.locator("#apply").isEnabled(), true);
      } finally {
        await close();
      }
    });

    test("requests per minute and rate follow each other", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        await page.fill("#page-rpm", "60");
        assert.equal(await page.inputValue("#page-rate"), "1");
        assert.match(await page.locator("#page-rpm-result").textContent(), /= 1 request per second/);

        await page.fill("#page-rate", "0.25");
        assert.equal(await page.inputValue("#page-rpm"), "15");
        assert.match(await page.locator("#page-rpm-result").textContent(), /one every 4 s/);

        await page.fill("#subtitles-rpm", "90");
        assert.equal(await page.inputValue("#subtitles-rate"), "1.5");
        assert.equal(await page.inputValue("#page-rate"), "0.25", "the other flow is untouched");

        await page.fill("#subtitles-rate", "0.1");
        assert.equal(await page.inputValue("#subtitles-rpm"), "6");
        assert.doesNotMatch(await page.locator("#status").textContent(), /Applied/);
        assert.equal(await page.locator("#status").getAttribute("data-state"), null);
      } finally {
        await close();
      }
    });

    test("presets fill the fields; rate: null keeps the current rate", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        const presetValues = await page.locator("#page-preset option").evaluateAll((o) => o.map((x) => x.value));
        assert.deepEqual(presetValues, ["", "strictFreeTier", "fragileStructuredOutput", "fastLocalModel"]);

        await page.selectOption("#page-preset", "strictFreeTier");
        assert.deepEqual(
          await values(page, [
            "page-rate", "page-capacity", "page-maxInFlight", "page-maxCharactersPerBatch",
            "page-maxItemsPerBatch", "page-batchDelayMs", "page-rpm",
          ]),
          {
            "page-rate": "1", "page-capacity": "1", "page-maxInFlight": "0",
            "page-maxCharactersPerBatch": "800", "page-maxItemsPerBatch": "4",
            "page-batchDelayMs": "100", "page-rpm": "60",
          },
        );
        assert.equal(await page.inputValue("#page-preset"), "strictFreeTier");

        await page.selectOption("#subtitles-preset", "fragileStructuredOutput");
        assert.deepEqual(
          await values(page, [
            "subtitles-rate", "subtitles-capacity", "subtitles-maxInFlight",
            "subtitles-maxCharactersPerBatch", "subtitles-maxItemsPerBatch",
            "subtitles-batchDelayMs", "subtitles-rpm",
          ]),
          {
            "subtitles-rate": "4", "subtitles-capacity": "1", "subtitles-maxInFlight": "0",
            "subtitles-maxCharactersPerBatch": "600", "subtitles-maxItemsPerBatch": "2",
            "subtitles-batchDelayMs": "100", "subtitles-rpm": "240",
          },
        );
        assert.equal(await page.inputValue("#page-rate"), "1", "the page flow is untouched");

        await page.selectOption("#page-preset", "fastLocalModel");
        assert.equal(await page.inputValue("#page-rate"), "8");
        assert.equal(await page.inputValue("#page-capacity"), "60");
        assert.equal(await page.inputValue("#page-maxInFlight"), "4");

        // Editing a field away from the preset shows "Custom".
        await page.fill("#page-capacity", "61");
        assert.equal(await page.inputValue("#page-preset"), "");
        assert.match(await page.locator("#status").textContent(), /not applied yet/i);
        assert.equal((await calls(page, "setSettings")).length, 0, "a preset is not applied by itself");
      } finally {
        await close();
      }
    });

    test("Apply sends numbers in the protocol's shape and shows success", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        await page.fill("#page-rpm", "60");
        await page.fill("#page-capacity", "1");
        await page.fill("#subtitles-maxItemsPerBatch", "6");
        await page.fill("#subtitles-batchDelayMs", "12.5");
        await page.fill("#provider-apiKey", "sk-new");
        await page.fill("#targetLang", "ja");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="ok"]');
        assert.equal(await page.locator("#status").textContent(), "Applied — new settings are live");

        const sent = await calls(page, "setSettings");
        assert.equal(sent.length, 1);
        assert.deepEqual(sent[0], {
          type: "setSettings",
          settings: {
            // The switches, the fallback and the keys the fixture leaves out come from the
            // defaults: no streaming, previews on, no fallback provider, no pool (an empty
            // field keeps the stored keys), no limits of each key's own.
            page: { rate: 1, capacity: 1, maxInFlight: 3, maxCharactersPerBatch: 900, maxItemsPerBatch: 5, batchDelayMs: 150, stream: false, previews: true, fallback: NO_FALLBACK, pool: NO_POOL, keyLimits: NO_KEY_LIMITS },
            subtitles: { rate: 4, capacity: 8, maxInFlight: 0, maxCharactersPerBatch: 400, maxItemsPerBatch: 6, batchDelayMs: 12.5, stream: false, previews: true, fallback: NO_FALLBACK, pool: NO_POOL, keyLimits: NO_KEY_LIMITS },
            provider: { kind: "openai", baseUrl: "http://127.0.0.1:8787/v1", apiKey: "sk-new", model: "mock-translator" },
            sourceLang: "en",
            targetLang: "ja",
          },
        });
        for (const flow of ["page", "subtitles"]) {
          for (const [field, value] of Object.entries(sent[0].settings[flow])) {
            if (field === "fallback" || field === "pool") continue;
            if (field === "keyLimits") {
              assert.deepEqual(Object.values(value).map((v) => typeof v), ["number", "number"]);
              continue;
            }
            const type = field === "stream" || field === "previews" ? "boolean" : "number";
            assert.equal(typeof value, type, `${flow}.${field} is sent as a ${type}`);
          }
        }

        // Re-rendered from the answer: the key field is empty again, the key is stored.
        assert.equal(await page.inputValue("#provider-apiKey"), "");
        assert.match(await page.locator("#provider-apiKey-hint").textContent(), /a key is stored/i);
        assert.equal(await page.inputValue("#page-rate"), "1");
        assert.equal(await page.inputValue("#targetLang"), "ja");

        // An empty key keeps the stored one; switching to the demo provider.
        await page.selectOption("#provider-kind", "demo");
        await page.click("#apply");
        await page.waitForFunction(() => globalThis.__fake.calls.filter((m) => m.type === "setSettings").length === 2);
        await page.waitForSelector('#status[data-state="ok"]');
        const second = (await calls(page, "setSettings"))[1];
        assert.equal(second.settings.provider.kind, "demo");
        assert.equal(second.settings.provider.apiKey, "");
        assert.equal(await page.evaluate(() => globalThis.__fake.apiKey), "sk-new");
      } finally {
        await close();
      }
    });

    test("each flow has its own Stream replies switch; previews can be chosen only while it is on", async () => {
      const settings = structuredClone(SETTINGS);
      settings.page.stream = true;
      settings.page.previews = false;
      const { page, close } = await open("options.html", "settingsLoaded", { settings });
      try {
        const state = (id) => page.evaluate((x) => {
          const input = document.getElementById(x);
          return { type: input.type, checked: input.checked, disabled: input.disabled };
        }, id);
        assert.deepEqual(await state("page-stream"), { type: "checkbox", checked: true, disabled: false });
        assert.deepEqual(await state("page-previews"), { type: "checkbox", checked: false, disabled: false });
        assert.deepEqual(await state("subtitles-stream"), { type: "checkbox", checked: false, disabled: false });
        // Previews need a stream: with streaming off the switch keeps its value, disabled.
        assert.deepEqual(await state("subtitles-previews"), { type: "checkbox", checked: true, disabled: true });
        assert.match(await page.locator('label[for="page-stream"]').textContent(), /Stream replies/);
        assert.match(await page.locator('label[for="page-previews"]').textContent(), /previews/i);
        // Each switch sits in its own flow's card.
        assert.equal(await page.evaluate(() => document.getElementById("subtitles-stream").closest("#section-subtitles") !== null), true);

        await page.check("#subtitles-stream");
        assert.equal((await state("subtitles-previews")).disabled, false);
        await page.check("#page-previews");
        await page.uncheck("#page-stream");
        assert.equal((await state("page-previews")).disabled, true);
        assert.match(await page.locator("#status").textContent(), /not applied yet/i);
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="ok"]');
        const [sent] = await calls(page, "setSettings");
        assert.deepEqual(
          { page: [sent.settings.page.stream, sent.settings.page.previews], subtitles: [sent.settings.subtitles.stream, sent.settings.subtitles.previews] },
          { page: [false, true], subtitles: [true, true] },
        );
        // Re-rendered from the answer, the switches keep what was applied.
        assert.deepEqual(await state("subtitles-stream"), { type: "checkbox", checked: true, disabled: false });
        assert.deepEqual(await state("page-stream"), { type: "checkbox", checked: false, disabled: false });
      } finally {
        await close();
      }
    });

    test("a validation error is shown next to the offending field and in the status", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        await page.fill("#page-rate", "-1");
        assert.equal(await page.inputValue("#page-rpm"), "-60");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="error"]');

        const message = "rate must be a finite number > 0 (got -1)";
        const error = page.locator("#page-rate-error");
        assert.equal(await error.textContent(), message);
        assert.equal(await error.getAttribute("role"), "alert");
        assert.equal(await error.isVisible(), true);
        assert.equal(
          await page.evaluate(() =>
            document.getElementById("page-rate-error").parentElement === document.getElementById("page-rate").parentElement,
          ),
          true,
          "the message sits beside the field",
        );
        assert.equal(await page.locator("#page-rate").getAttribute("aria-invalid"), "true");
        assert.ok((await page.locator("#status").textContent()).includes(message));
        assert.equal(await page.locator("#subtitles-rate-error").textContent(), "");
        const sent = await calls(page, "setSettings");
        assert.equal(sent.at(-1).settings.page.rate, -1);

        // Fixed and applied again: the error goes away.
        await page.fill("#page-rate", "2");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="ok"]');
        assert.equal(await error.textContent(), "");
        assert.equal(await error.isVisible(), false);
        assert.equal(await page.locator("#page-rate").getAttribute("aria-invalid"), null);
      } finally {
        await close();
      }
    });

    test("an empty number field is sent as its raw text for the background to report", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        await page.fill("#subtitles-capacity", "");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="error"]');
        const sent = (await calls(page, "setSettings")).at(-1);
        assert.equal(sent.settings.subtitles.capacity, "");
        assert.equal(sent.settings.page.capacity, 2);
        assert.equal(await page.locator("#subtitles-capacity-error").textContent(), 'capacity must be a number (got "")');
        assert.match(await page.locator("#status").textContent(), /capacity must be a number/);
      } finally {
        await close();
      }
    });

    test("a provider error is shown at the provider field it names", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        await page.fill("#provider-baseUrl", "");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="error"]');
        const message = 'baseUrl must be a non-empty http(s) URL string (got "")';
        assert.equal(await page.locator("#provider-baseUrl-error").textContent(), message);
        assert.equal(await page.locator("#provider-baseUrl").getAttribute("aria-invalid"), "true");
        assert.match(await page.locator("#status").textContent(), /baseUrl must be a non-empty/);
        assert.equal(await page.locator("#page-rate-error").textContent(), "");
      } finally {
        await close();
      }
    });

    test("each flow's fallback provider: shown from getSettings, sent on Apply in the protocol's shape, its key kept, its errors at its fields", async () => {
      const settings = structuredClone(SETTINGS);
      settings.page.fallback = { kind: "openai", baseUrl: "", apiKey: "", apiKeySet: false, model: "mock-translator-lite" };
      const { page, close } = await open("options.html", "settingsLoaded", { settings });
      try {
        assert.deepEqual(
          await values(page, ["page-fallback-kind", "page-fallback-model", "page-fallback-baseUrl", "page-fallback-apiKey", "subtitles-fallback-kind"]),
          { "page-fallback-kind": "openai", "page-fallback-model": "mock-translator-lite", "page-fallback-baseUrl": "", "page-fallback-apiKey": "", "subtitles-fallback-kind": "none" },
        );
        assert.deepEqual(
          await page.locator("#page-fallback-kind option").evaluateAll((options) => options.map((o) => [o.value, o.textContent])),
          [["none", "None"], ["demo", "Demo provider (offline)"], ["openai", "OpenAI-compatible"]],
        );
        // Each flow's fallback sits in its own card; the key field hides what is typed.
        assert.equal(await page.evaluate(() => document.getElementById("subtitles-fallback-kind").closest("#section-subtitles") !== null), true);
        assert.equal(await page.locator("#page-fallback-apiKey").getAttribute("type"), "password");
        assert.match(await page.locator("#page-fallback-apiKey-hint").textContent(), /provider settings' key/);
        // The endpoint fields count for an OpenAI-compatible fallback only.
        assert.equal(await page.locator("#subtitles-fallback-openai").getAttribute("class"), "field-grid inactive");
        assert.equal(await page.locator("#page-fallback-openai").getAttribute("class"), "field-grid");

        await page.selectOption("#subtitles-fallback-kind", "openai");
        await page.fill("#subtitles-fallback-model", "other-model");
        await page.fill("#subtitles-fallback-baseUrl", "https://api.groq.example/openai/v1");
        await page.fill("#subtitles-fallback-apiKey", "gsk-fallback");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="ok"]');
        const [sent] = await calls(page, "setSettings");
        assert.deepEqual(sent.settings.page.fallback, { kind: "openai", baseUrl: "", apiKey: "", model: "mock-translator-lite" });
        assert.deepEqual(sent.settings.subtitles.fallback, {
          kind: "openai", baseUrl: "https://api.groq.example/openai/v1", apiKey: "gsk-fallback", model: "other-model",
        });
        // Re-rendered from the answer: the key field is empty again, the key is stored.
        assert.equal(await page.inputValue("#subtitles-fallback-apiKey"), "");
        assert.match(await page.locator("#subtitles-fallback-apiKey-hint").textContent(), /key of its own is stored/i);
        assert.equal(await page.inputValue("#subtitles-fallback-model"), "other-model");

        // An empty key keeps it; a refused fallback is shown at its own field.
        await page.fill("#page-fallback-model", "");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="error"]');
        const second = (await calls(page, "setSettings"))[1];
        assert.equal(second.settings.subtitles.fallback.apiKey, "");
        assert.equal(await page.evaluate(() => globalThis.__fake.fallbackKeys.subtitles), "gsk-fallback");
        assert.equal(await page.locator("#page-fallback-model-error").textContent(), 'model must be a non-empty string (got "")');
        assert.equal(await page.locator("#page-fallback-model").getAttribute("aria-invalid"), "true");
        assert.match(await page.locator("#status").textContent(), /Page translation › Fallback model/);
        assert.equal(await page.locator("#subtitles-fallback-model-error").textContent(), "");
      } finally {
        await close();
      }
    });

    test("each flow's pool of keys and each key's limits: sent on Apply in the protocol's shape, the keys never shown again, an error at its field", async () => {
      const settings = structuredClone(SETTINGS);
      settings.page.pool = { keys: [], keysSet: 0 };
      settings.page.keyLimits = { rpm: 0, burst: 1 };
      const { page, close } = await open("options.html", "settingsLoaded", { settings });
      try {
        assert.deepEqual(await values(page, ["page-pool-keys", "page-keyLimits-rpm", "page-keyLimits-burst"]), {
          "page-pool-keys": "", "page-keyLimits-rpm": "0", "page-keyLimits-burst": "1",
        });
        // Each flow has its own, in its own card.
        assert.equal(await page.evaluate(() => document.getElementById("subtitles-pool-keys").closest("#section-subtitles") !== null), true);
        await page.fill("#page-pool-keys", " key-one \n\nkey-two\n");
        await page.fill("#page-keyLimits-rpm", "15");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="ok"]');
        const [sent] = await calls(page, "setSettings");
        assert.deepEqual(sent.settings.page.pool, { keys: ["key-one", "key-two"], clear: false });
        assert.deepEqual(sent.settings.page.keyLimits, { rpm: 15, burst: 1 });
        assert.deepEqual(sent.settings.subtitles.pool, { keys: [], clear: false }, "an empty field keeps the stored keys");

        // Re-rendered from the answer, which says how many keys are stored, not which.
        assert.equal(await page.inputValue("#page-pool-keys"), "");
        assert.match(await page.locator("#page-pool-keys-hint").textContent(), /^2 keys stored\. Leave the field empty to keep them/);
        assert.equal(await page.inputValue("#page-keyLimits-rpm"), "15");

        // Forgetting the pool is a box to tick.
        await page.check("#page-pool-clear");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="ok"]');
        assert.deepEqual((await calls(page, "setSettings")).at(-1).settings.page.pool, { keys: [], clear: true });

        // The background's error about a key's limit is shown at that field.
        await page.evaluate(() => {
          globalThis.__fake.refuse = { flow: "page", field: "keyLimits.rpm", code: "invalid_options", message: "providers.x/key1.rate must be a finite number > 0 (got -0.5)" };
        });
        await page.fill("#page-keyLimits-rpm", "-30");
        await page.click("#apply");
        await page.waitForSelector('#status[data-state="error"]');
        assert.equal(await page.locator("#page-keyLimits-rpm-error").textContent(), "providers.x/key1.rate must be a finite number > 0 (got -0.5)");
        assert.equal(await page.locator("#page-keyLimits-rpm").getAttribute("aria-invalid"), "true");
        assert.match(await page.locator("#status").textContent(), /Page translation › Requests per minute per key/);
      } finally {
        await close();
      }
    });

    test("a daily block with a fallback says where the flow's items go meanwhile", async () => {
      const { page, close } = await open("options.html", "settingsLoaded");
      try {
        await page.evaluate(() => {
          globalThis.__fake.blocked = {
            flow: "page",
            providerId: "openai:http://x/v1#flash",
            reason: "daily",
            status: 429,
            message: "the provider's daily quota is spent; items for it reject until it resets",
            retryAt: Date.now() + 3_600_000,
            fallbackTo: "openai:http://x/v1#flash-lite",
            at: Date.now(),
          };
        });
        await page.waitForFunction(() => document.getElementById("provider-blocked").textContent !== "", null, { timeout: 5000 });
        const shown = await page.textContent("#provider-blocked");
        assert.match(shown, /daily quota is spent \(HTTP 429\)/);
        assert.match(shown, /Page translation: its items go to the fallback provider openai:http:\/\/x\/v1#flash-lite until /);
        assert.doesNotMatch(shown, /Items for it fail/);
      } finally {
        await close();
      }
    });
  });

  // -------------------------------------------------------------------------------------
  // Statistics page

  describe("stats.html (Statistics)", () => {
    const cell = (page, flow, stat) => page.locator(`#stats-${flow} [data-stat="${stat}"]`).textContent();
    const providerCell = (page, flow, id, stat) =>
      page.locator(`#stats-${flow} tr[data-provider="${id}"] [data-provider-stat="${stat}"]`).textContent();

    /** The vertices of the chart's polylines, by data-series. */
    const polylines = (page, flow, chart = "chart") =>
      page.evaluate((id) => {
        const lines = [...document.querySelectorAll(`#${id} polyline`)];
        return lines.map((line) => ({
          series: line.dataset.series,
          points: line
            .getAttribute("points")
            .trim()
            .split(/\s+/)
            .filter(Boolean)
            .map((pair) => pair.split(",").map(Number)),
        }));
      }, `${chart}-${flow}`);

    test("the tables show the counters, saved % and the providers", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        const expected = {
          items: "40", providerCalls: "10", saved: "75%", batchCalls: "8", retries: "2",
          countMismatches: "1", fallbacks: "1", rateLimited: "3", cacheHits: "6", dedupHits: "4",
          failed: "1", queued: "5", inFlight: "2",
        };
        for (const [stat, text] of Object.entries(expected)) {
          assert.equal(await cell(page, "page", stat), text, `page ${stat}`);
        }
        assert.equal(await cell(page, "subtitles", "items"), "0");
        assert.equal(await cell(page, "subtitles", "providerCalls"), "0");
        assert.equal(await cell(page, "subtitles", "saved"), "—", "no paragraphs: no saved share");

        assert.equal(await providerCell(page, "page", "demo", "paragraphs"), "30");
        assert.equal(await providerCell(page, "page", "demo", "calls"), "6");
        assert.equal(await providerCell(page, "page", "demo", "saved"), "80%");
        assert.equal(await providerCell(page, "page", OPENAI_ID, "saved"), "60%");
        assert.equal(await providerCell(page, "page", OPENAI_ID, "rateLimited"), "3");
        assert.equal(await page.locator("#stats-subtitles tr[data-provider]").count(), 0);
        assert.match(await page.locator("#stats-subtitles").textContent(), /No provider calls yet/);
        assert.match(await page.locator("#stats-page").textContent(), /Current provider: openai:http:\/\/127\.0\.0\.1:8787\/v1/);
        assert.equal(await page.title(), "Statistics — batch-pacer demo");
      } finally {
        await close();
      }
    });

    test("fallback providers: paragraphs each provider served, its batch limit (learned or the maximum), items moved", async () => {
      const FIRST = "openai:http://127.0.0.1:8787/v1#flash";
      const SECOND = "openai:http://127.0.0.1:8787/v1#flash-lite";
      const stats = structuredClone(STATS);
      Object.assign(stats.flows.page, {
        providerId: FIRST,
        fallbackProviderId: SECOND,
        maxItemsPerBatch: 4,
        cacheServed: 3,
        batchLimits: { [SECOND]: 1 },
        byProvider: {
          // The fallback first: the table puts the flow's provider first all the same.
          [SECOND]: { paragraphs: 0, served: 15, calls: 15, rateLimited: 0, inputTokens: 10, outputTokens: 5 },
          [FIRST]: { paragraphs: 40, served: 22, calls: 6, rateLimited: 2, inputTokens: 20, outputTokens: 9 },
        },
      });
      stats.flows.page.pacer.fallbackItems = 15;
      const { page, close } = await open("stats.html", "statsLoaded", { stats });
      try {
        assert.match(await page.locator("#stats-page .provider-id").textContent(), /Current provider: openai:http:\/\/127\.0\.0\.1:8787\/v1#flash · fallback provider: openai:http:\/\/127\.0\.0\.1:8787\/v1#flash-lite$/);
        assert.equal(await page.locator("#stats-subtitles [data-field=fallback]").isVisible(), false, "no fallback: not mentioned");
        assert.deepEqual(
          await page.locator("#stats-page tr[data-provider]").evaluateAll((rows) => rows.map((r) => [r.dataset.provider, r.dataset.role])),
          [[FIRST, "provider"], [SECOND, "fallback"]],
        );
        assert.match(await page.locator(`#stats-page tr[data-provider="${SECOND}"] th`).textContent(), /\(fallback\)$/);
        assert.equal(await providerCell(page, "page", FIRST, "served"), "22");
        assert.equal(await providerCell(page, "page", SECOND, "served"), "15");
        assert.equal(await providerCell(page, "page", FIRST, "paragraphs"), "40");
        assert.equal(await providerCell(page, "page", SECOND, "paragraphs"), "0");
        // Saved per paragraph served: 15 singles saved nothing.
        assert.equal(await providerCell(page, "page", SECOND, "saved"), "0%");
        assert.equal(await providerCell(page, "page", FIRST, "saved"), "72.7%");
        assert.equal(await providerCell(page, "page", SECOND, "batchLimit"), "1 (learned)");
        assert.equal(await providerCell(page, "page", FIRST, "batchLimit"), "4 (maximum)");
        assert.equal(await cell(page, "page", "fallbackItems"), "15");
        assert.match(await page.locator("#stats-page [data-field=cacheServed]").textContent(), /from the cache, with no provider call: 3\./);
        const headers = await page.locator("#stats-page .provider-table thead th").allTextContents();
        assert.deepEqual(headers.slice(0, 3), ["Provider", "Served", "Asked"]);
        assert.ok(headers.includes("Batch limit"));

        // A limit learned again and a maximum lowered below it: the table follows both.
        await page.evaluate((id) => {
          const flow = globalThis.__fake.stats.flows.page;
          flow.batchLimits[id] = 3;
          flow.maxItemsPerBatch = 2;
        }, SECOND);
        await page.waitForFunction(
          (id) => document.querySelector(`#stats-page tr[data-provider="${id}"] [data-provider-stat="batchLimit"]`).textContent === "2 (maximum)",
          SECOND,
          { timeout: 3000 },
        );
      } finally {
        await close();
      }
    });

    test("Calls per provider and key: the pacer's byProvider counts, the pool's keys first and named as such, providers without calls left out", async () => {
      const POOL = "openai:http://127.0.0.1:8787/v1#flash";
      const stats = structuredClone(STATS);
      Object.assign(stats.flows.page, {
        providerId: POOL,
        poolMembers: [`${POOL}/key1`, `${POOL}/key2`],
      });
      stats.flows.page.pacer.byProvider = {
        "openai:http://127.0.0.1:8787/v1#lite": { calls: 3, items: 9, rateLimited: 0 },
        [`${POOL}/key2`]: { calls: 1204, items: 4790, rateLimited: 0 },
        [`${POOL}/key1`]: { calls: 1205, items: 4801, rateLimited: 1 },
        "openai:http://127.0.0.1:8787/v1#old": { calls: 0, items: 0, rateLimited: 0 },
      };
      const { page, close } = await open("stats.html", "statsLoaded", { stats });
      try {
        const rows = await page.evaluate(() =>
          [...document.querySelectorAll("#stats-page tr[data-key-provider]")].map((row) => [
            row.dataset.keyProvider,
            row.dataset.role ?? null,
            row.querySelector("th").textContent,
            ...[...row.querySelectorAll("[data-key-stat]")].map((td) => `${td.dataset.keyStat}=${td.textContent}`),
          ]),
        );
        assert.deepEqual(rows, [
          [`${POOL}/key1`, "key", `${POOL}/key1 (key 1 of 2)`, "calls=1,205", "items=4,801", "rateLimited=1"],
          [`${POOL}/key2`, "key", `${POOL}/key2 (key 2 of 2)`, "calls=1,204", "items=4,790", "rateLimited=0"],
          ["openai:http://127.0.0.1:8787/v1#lite", null, "openai:http://127.0.0.1:8787/v1#lite", "calls=3", "items=9", "rateLimited=0"],
        ]);
        // A package that does not count per provider: the table says so.
        assert.match(await page.locator("#stats-subtitles [data-keys]").textContent(), /does not count calls per provider/);
      } finally {
        await close();
      }
    });

    test("time to the first paragraph (last page and mean) and the streaming counters", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        assert.equal(await cell(page, "page", "firstParagraph"), "640 ms");
        assert.equal(await cell(page, "page", "firstParagraphMean"), "1.1 s (4 pages)");
        assert.equal(await cell(page, "page", "callToParagraph"), "2.5 s");
        assert.equal(await page.locator('#stats-page [data-headline="firstParagraph"]').textContent(), "640 ms");
        assert.equal(await cell(page, "page", "streamedCalls"), "7");
        assert.equal(await cell(page, "page", "earlyResolved"), "21");
        // No page translated yet: nothing to show, not a zero.
        assert.equal(await cell(page, "subtitles", "firstParagraph"), "—");
        assert.equal(await cell(page, "subtitles", "firstParagraphMean"), "—");
        assert.equal(await cell(page, "subtitles", "callToParagraph"), "—");
      } finally {
        await close();
      }
    });

    test("at 1,280 px the By provider table stays inside its card, even with a long provider id", async () => {
      const stats = structuredClone(STATS);
      const longId = `openai:https://gateway.example-translation-provider.com/v1/projects/${"x".repeat(40)}/chat`;
      stats.flows.page.byProvider[longId] = { paragraphs: 123456, calls: 98765, rateLimited: 4321, inputTokens: 123456789, outputTokens: 98765432 };
      const { page, close } = await open("stats.html", "statsLoaded", { stats });
      try {
        await page.setViewportSize({ width: 1280, height: 900 });
        const boxes = await page.evaluate(() => {
          const card = document.getElementById("stats-page").getBoundingClientRect();
          const table = document.querySelector("#stats-page .provider-table").getBoundingClientRect();
          const cells = [...document.querySelectorAll("#stats-page .provider-table th, #stats-page .provider-table td")];
          return {
            card: { left: card.left, right: card.right },
            table: { left: table.left, right: table.right },
            widestCellRight: Math.max(...cells.map((c) => c.getBoundingClientRect().right)),
            pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
          };
        });
        assert.ok(boxes.table.left >= boxes.card.left && boxes.table.right <= boxes.card.right, JSON.stringify(boxes));
        assert.ok(boxes.widestCellRight <= boxes.card.right, JSON.stringify(boxes));
        assert.equal(boxes.pageScrolls, false, "no horizontal scrolling");
      } finally {
        await close();
      }
    });

    test("token figures: the flow's input and output tokens, and per provider", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        assert.equal(await cell(page, "page", "inputTokens"), "12,345");
        assert.equal(await cell(page, "page", "outputTokens"), "6,789");
        assert.equal(await cell(page, "subtitles", "inputTokens"), "0");
        assert.equal(await providerCell(page, "page", "demo", "inputTokens"), "9,000");
        assert.equal(await providerCell(page, "page", "demo", "outputTokens"), "5,000");
        assert.equal(await providerCell(page, "page", OPENAI_ID, "inputTokens"), "3,345");
        assert.equal(await providerCell(page, "page", OPENAI_ID, "outputTokens"), "1,789");
        const headers = await page.locator("#stats-page .provider-table thead th").allTextContents();
        assert.deepEqual(headers.slice(-2), ["Input tokens", "Output tokens"]);
      } finally {
        await close();
      }
    });

    test("a tokens-per-minute chart beside the counts chart, one vertex per series point", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        const lines = await polylines(page, "page", "tokens");
        assert.deepEqual(lines.map((l) => l.series), ["tokensPerMinute"]);
        assert.equal(lines[0].points.length, 5);
        // 1,000 tokens a second is 60,000 a minute from the second point on; the first
        // point has no span yet.
        const legend = await page.locator("#tokens-page text").allTextContents();
        assert.ok(legend.includes("Tokens per minute (60,000)"), `legend: ${legend}`);
        const ys = lines[0].points.map(([, y]) => y);
        assert.ok(ys[0] > ys[1], "0 at the first point, higher after");
        assert.ok(ys.slice(1).every((y) => y === ys[1]), `a steady rate is a flat line (${ys})`);
        // Side by side with the counts chart, in the same container.
        const sameRow = await page.evaluate(() => {
          const a = document.getElementById("chart-page").getBoundingClientRect();
          const b = document.getElementById("tokens-page").getBoundingClientRect();
          return Math.abs(a.top - b.top) < 1 && b.left > a.left;
        });
        assert.ok(sameRow, "the two charts sit side by side");
        assert.match(await page.locator("#tokens-subtitles title").first().textContent(), /0 tokens per minute/);
      } finally {
        await close();
      }
    });

    test("each chart has two polylines with one vertex per series point", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        const pageLines = await polylines(page, "page");
        assert.deepEqual(pageLines.map((l) => l.series), ["paragraphs", "calls"]);
        for (const line of pageLines) {
          assert.equal(line.points.length, 5, `${line.series} has 5 vertices`);
          for (const [x, y] of line.points) {
            assert.ok(Number.isFinite(x) && Number.isFinite(y) && x >= 0 && x <= 560 && y >= 0 && y <= 240);
          }
          const xs = line.points.map(([x]) => x);
          assert.deepEqual(xs, [...xs].sort((a, b) => a - b), "time runs left to right");
        }
        // More paragraphs than calls: the paragraphs line ends higher (smaller y).
        assert.ok(pageLines[0].points.at(-1)[1] < pageLines[1].points.at(-1)[1]);

        const subtitleLines = await polylines(page, "subtitles");
        assert.deepEqual(subtitleLines.map((l) => l.points.length), [1, 1], "a single point is drawn");

        const legend = await page.locator("#chart-page text").allTextContents();
        assert.ok(legend.includes("Original paragraphs (40)"));
        assert.ok(legend.includes("Provider calls (10)"));
        assert.ok(legend.filter((t) => /^\d+ s$/.test(t)).length >= 2, "time tick labels");
        assert.ok(legend.filter((t) => /^\d+$/.test(t)).length >= 2, "count tick labels");
      } finally {
        await close();
      }
    });

    test("polls every second", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        await page.evaluate(() => {
          const flow = globalThis.__fake.stats.flows.page;
          flow.pacer.items = 50;
          flow.pacer.providerCalls = 11;
          flow.series.push({ t: 9, paragraphs: 50, calls: 11 });
        });
        await page.waitForFunction(
          () => document.querySelector('#stats-page [data-stat="items"]').textContent === "50",
          null,
          { timeout: 3000 },
        );
        assert.equal(await cell(page, "page", "saved"), "78%");
        assert.equal((await polylines(page, "page"))[0].points.length, 6);
        assert.ok((await calls(page, "getStats")).length >= 2);
      } finally {
        await close();
      }
    });

    test("Reset statistics sends resetStats and shows the empty state", async () => {
      const { page, close } = await open("stats.html", "statsLoaded");
      try {
        await page.click("#reset");
        await page.waitForFunction(
          () => document.querySelector('#stats-page [data-stat="items"]').textContent === "0",
        );
        assert.equal((await calls(page, "resetStats")).length, 1);
        assert.deepEqual((await calls(page, "resetStats"))[0], { type: "resetStats" });
        assert.equal(await cell(page, "page", "saved"), "—");
        assert.equal(await page.locator("#stats-page tr[data-provider]").count(), 0);
        const lines = await polylines(page, "page");
        assert.deepEqual(lines.map((l) => [l.series, l.points.length]), [["paragraphs", 0], ["calls", 0]]);
        assert.ok((await page.locator("#chart-page text").allTextContents()).includes("No activity yet"));
        assert.equal(await page.locator("#stats-status").textContent(), "Statistics reset.");
      } finally {
        await close();
      }
    });
  });
});

// ---------------------------------------------------------------------------------------
// Static checks: what the extension CSP forbids, and no remote resources.

describe("demo pages follow the extension CSP", { skip: existsSync(path.join(demoDir, "options.html")) ? false : "no pages" }, () => {
  for (const file of ["options.html", "stats.html"]) {
    test(`${file}: no inline scripts, no inline handlers, no remote resources`, () => {
      const html = readFileSync(path.join(demoDir, file), "utf8");
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
      assert.ok(scripts.length > 0);
      for (const [, attributes, body] of scripts) {
        assert.match(attributes, /\bsrc="[^":]+\.js"/, "scripts come from the extension");
        assert.equal(body.trim(), "", "no inline script");
      }
      assert.doesNotMatch(html, /\son[a-z]+\s*=/i, "no inline event handlers");
      assert.doesNotMatch(html, /\b(?:src|href)\s*=\s*"(?:https?:)?\/\//i, "no remote resources");
    });
  }
});
