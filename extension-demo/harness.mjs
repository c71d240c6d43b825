// Drives the demo extension in a real Chromium: launch with the extension loaded, reach
// its service worker and pages, apply settings through the options page's own message,
// translate a page, read the statistics. Used by `npm start` and the end-to-end tests.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

export const EXTENSION_DIR = dirname(fileURLToPath(import.meta.url));

function loadPlaywright() {
  // From the repository's node_modules, wherever the caller runs from.
  const require = createRequire(join(EXTENSION_DIR, "..", "package.json"));
  return require("playwright-core");
}

/**
 * Chromium with the demo extension (or a changed copy of it, `extensionDir`); headless
 * unless a display is there and wanted.
 */
export async function launchChromium({ headless = !process.env.DISPLAY, executablePath = "/usr/bin/chromium", extensionDir = EXTENSION_DIR } = {}) {
  const { chromium } = loadPlaywright();
  const profile = await mkdtemp(join(tmpdir(), "batch-pacer-chromium-"));
  const args = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    `--disable-extensions-except=${extensionDir}`,
    `--load-extension=${extensionDir}`,
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ];
  if (headless) args.unshift("--headless=new");
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: false, // headless mode is chosen by --headless=new above (extensions need it)
    args,
    viewport: { width: 1280, height: 900 },
  });
  let worker = context.serviceWorkers()[0];
  if (!worker) worker = await context.waitForEvent("serviceworker", { timeout: 30_000 });
  const extensionId = new URL(worker.url()).host;
  return {
    context,
    extensionId,
    /** The extension's current service worker (a new one after a restart). */
    async serviceWorker() {
      const live = context.serviceWorkers().find((w) => w.url().includes(extensionId));
      return live ?? context.waitForEvent("serviceworker", { timeout: 30_000 });
    },
    pageUrl(path) {
      return `chrome-extension://${extensionId}/${path}`;
    },
    async close() {
      await context.close().catch(() => {});
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Stops every service worker of the extension's origin, as Chrome does when idle, and
 * wakes a fresh one; returns the stopped and the new worker's time origins.
 */
export async function stopServiceWorker(browser) {
  const worker = await browser.serviceWorker();
  const before = await worker.evaluate(() => performance.timeOrigin);
  const extensionPage = await browser.context.newPage();
  await extensionPage.goto(browser.pageUrl("stats.html"));
  const cdp = await browser.context.newCDPSession(extensionPage);
  await cdp.send("ServiceWorker.enable");
  await cdp.send("ServiceWorker.stopAllWorkers");
  await extensionPage.close();
  await extensionMessage(browser, { type: "getSettings" });
  const after = await (await browser.serviceWorker()).evaluate(() => performance.timeOrigin);
  return { before, after };
}

/** Sends one message as an extension page (the options page) and returns the answer. */
export async function extensionMessage(browser, message) {
  const page = await browser.context.newPage();
  try {
    await page.goto(browser.pageUrl("options.html"));
    return await page.evaluate((m) => chrome.runtime.sendMessage(m), message);
  } finally {
    await page.close();
  }
}

/** Applies settings the way the options page does; throws with the package's message. */
export async function applySettings(browser, settings) {
  const current = await extensionMessage(browser, { type: "getSettings" });
  const merged = { ...current.settings, ...settings };
  for (const key of ["page", "subtitles", "provider"]) merged[key] = { ...current.settings[key], ...settings[key] };
  const answer = await extensionMessage(browser, { type: "setSettings", settings: merged });
  if (!answer?.ok) throw new Error(`settings refused: ${JSON.stringify(answer?.error)}`);
  return answer.settings;
}

export async function getStats(browser) {
  const answer = await extensionMessage(browser, { type: "getStats" });
  if (!answer?.ok) throw new Error(`stats refused: ${JSON.stringify(answer?.error)}`);
  return answer.stats;
}

/**
 * Progress the content script publishes on the page's root element. Runs inside the page
 * (page.evaluate, or WebDriver's executeScript).
 */
export function readProgressInPage() {
  const d = document.documentElement.dataset;
  const n = (v) => (v === undefined ? null : Number(v));
  return {
    pageTotal: n(d.bpPageTotal),
    pageDone: n(d.bpPageDone),
    subtitlesTotal: n(d.bpSubtitlesTotal),
    subtitlesDone: n(d.bpSubtitlesDone),
    failed: n(d.bpFailed) ?? 0,
    cuesDone: n(d.cuesDone),
  };
}

/** Progress of a playwright page. */
export function progress(page) {
  return page.evaluate(readProgressInPage);
}

/** Waits until every paragraph and every cue (if the page has cues) is answered. */
export async function waitTranslated(page, { timeoutMs = 180_000, cues = true } = {}) {
  const started = Date.now();
  for (;;) {
    const p = await progress(page);
    const pageDone = p.pageTotal !== null && p.pageTotal > 0 && p.pageDone >= p.pageTotal;
    const cuesDone = !cues || (p.cuesDone !== null && p.subtitlesTotal >= p.cuesDone && p.subtitlesDone >= p.subtitlesTotal);
    if (pageDone && cuesDone) return p;
    if (Date.now() - started > timeoutMs) throw new Error(`not translated in time: ${JSON.stringify(p)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Every paragraph and cue with its translation as shown under it. Runs inside the page
 * (pass it to page.evaluate, or to WebDriver's executeScript). The text is innerText read
 * in place, which turns <br> into line breaks: translations shown inside the element are
 * lifted out for the reading, then put back.
 */
export function readTranslationsInPage() {
  return [...document.querySelectorAll("[data-bp-id]")].map((el) => {
    const id = el.getAttribute("data-bp-id");
    const shown = document.querySelectorAll(`[data-bp-for="${CSS.escape(id)}"]`);
    const inside = [...el.querySelectorAll(".bp-translation")].map((t) => [t, t.parentNode, t.nextSibling]);
    inside.forEach(([t]) => t.remove());
    const text = el.innerText;
    inside.forEach(([t, parent, next]) => parent.insertBefore(t, next));
    return {
      id,
      text,
      shown: shown.length,
      translation: shown[0]?.textContent ?? null,
      failed: shown[0]?.classList.contains("bp-failed") ?? false,
    };
  });
}

/** Every paragraph and cue of a playwright page, with its translation. */
export function translations(page) {
  return page.evaluate(readTranslationsInPage);
}
