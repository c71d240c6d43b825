// batch-pacer's cold start in a real Chromium extension service worker (chrome-extension://
// origin), where an MV3 translation extension runs it: the bench extension
// (bench/extension-sw) gets the measured package's shipped files beside it, and each
// sample is a new worker woken after the previous one was stopped, as Chrome stops an
// idle background worker and starts another on its next event.

import { cp, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CHROMIUM_ARGS } from "../tests/node/chromium.mjs";
import { CHROMIUM } from "./chromium.mjs";
import { median } from "./measure.mjs";

const EXTENSION_SOURCE = fileURLToPath(new URL("./extension-sw/", import.meta.url));
const TIMEOUT_MS = 30_000;

/** The bench extension with `files` (paths relative to `packageDir`) under batch-pacer/. */
async function assembleExtension(packageDir, files) {
  const dir = await mkdtemp(join(tmpdir(), "batch-pacer-extension-"));
  await cp(EXTENSION_SOURCE, dir, { recursive: true });
  for (const file of files) {
    const target = join(dir, "batch-pacer", file);
    await mkdir(dirname(target), { recursive: true });
    await cp(join(packageDir, file), target);
  }
  return dir;
}

/** Resolves once a worker of `scriptURL` reports `status` on the DevTools session. */
function runningStatus(cdp, scriptURL, status) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service worker not ${status} in ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
    const onUpdate = ({ versions }) => {
      if (!versions.some((v) => v.scriptURL === scriptURL && v.runningStatus === status)) return;
      clearTimeout(timer);
      cdp.off("ServiceWorker.workerVersionUpdated", onUpdate);
      resolve();
    };
    cdp.on("ServiceWorker.workerVersionUpdated", onUpdate);
  });
}

/**
 * Median cold start of `runs` fresh extension workers: `{ version, evaluatedMs, initMs,
 * constructMs, samples }`, each sample `{ timeOrigin, evaluatedMs, initMs, constructMs }`
 * as the worker timed itself.
 */
export async function extensionServiceWorkerColdStart({ packageDir, files, runs }) {
  const { chromium } = await import("playwright-core");
  const extensionDir = await assembleExtension(packageDir, files);
  const profile = await mkdtemp(join(tmpdir(), "batch-pacer-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: false, // --headless=new in CHROMIUM_ARGS chooses the mode (extensions need it)
    args: [...CHROMIUM_ARGS, `--disable-extensions-except=${extensionDir}`, `--load-extension=${extensionDir}`],
  });
  try {
    const installed = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker", { timeout: TIMEOUT_MS }));
    const scriptURL = installed.url();
    const page = await context.newPage();
    await page.goto(new URL("messenger.html", scriptURL).href);
    const cdp = await context.newCDPSession(page);
    await cdp.send("ServiceWorker.enable");
    // The message wakes the worker if it is stopped, and its answer waits for the figures.
    const ask = async () => {
      const answer = await page.evaluate(() => chrome.runtime.sendMessage({ type: "coldStart" }));
      if (!answer || answer.error) throw new Error(`extension worker: ${answer?.error ?? "no answer"}`);
      return answer;
    };

    // The worker started at install (during browser start-up) is not counted: the samples
    // are the restarts an installed extension goes through.
    let previous = await ask();
    const samples = [];
    for (let i = 0; i < runs; i++) {
      const stopped = runningStatus(cdp, scriptURL, "stopped");
      await cdp.send("ServiceWorker.stopAllWorkers");
      await stopped;
      const sample = await ask();
      if (sample.timeOrigin === previous.timeOrigin) throw new Error("the extension worker was not restarted");
      samples.push(sample);
      previous = sample;
    }
    const mid = (key) => median(samples.map((s) => s[key]));
    return {
      version: context.browser().version(),
      evaluatedMs: mid("evaluatedMs"),
      initMs: mid("initMs"),
      constructMs: mid("constructMs"),
      samples,
    };
  } finally {
    await context.close().catch(() => {});
    await rm(profile, { recursive: true, force: true });
    await rm(extensionDir, { recursive: true, force: true });
  }
}
