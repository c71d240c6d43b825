// batch-pacer's cold start in a real Chromium extension service worker (chrome-extension://
// origin), where an MV3 translation extension runs it: the bench extension
// (bench/extension-sw) gets the measured package's shipped files beside it, and each
// sample is a new worker woken after the previous one was stopped, as Chrome stops an
// idle background worker and starts another on its next event.

import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CHROMIUM_ARGS } from "../tests/node/chromium.mjs";
import { CHROMIUM } from "./chromium.mjs";
import { median } from "./measure.mjs";

const EXTENSION_SOURCE = fileURLToPath(new URL("./extension-sw/", import.meta.url));
const TIMEOUT_MS = 30_000;

/**
 * The bench extension with `background` as its worker and `files` (paths relative to
 * `packageDir`) under batch-pacer/.
 */
async function assembleExtension(packageDir, files, background) {
  const dir = await mkdtemp(join(tmpdir(), "batch-pacer-extension-"));
  await cp(EXTENSION_SOURCE, dir, { recursive: true });
  const manifestPath = join(dir, "manifest.json");
  const manifest = JSON.parse(await readFile(manifestPath, "utf8"));
  manifest.background.service_worker = background;
  await writeFile(manifestPath, JSON.stringify(manifest, null, 2));
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
 * Median cold start of `runs` fresh extension workers per variant, the variants taking
 * turns sample by sample in one browser. `variants` is `[{ name, background }]`, each
 * background a worker script of bench/extension-sw; the result maps each name to
 * `{ evaluatedMs, initMs, constructMs, readyMs, samples }`, each sample `{ timeOrigin,
 * evaluatedMs, initMs, constructMs }` as the worker timed itself, plus `version`.
 */
export async function extensionServiceWorkerColdStart({ packageDir, files, runs, variants }) {
  const { chromium } = await import("playwright-core");
  const extensionDirs = [];
  for (const { background } of variants) extensionDirs.push(await assembleExtension(packageDir, files, background));
  const profile = await mkdtemp(join(tmpdir(), "batch-pacer-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: false, // --headless=new in CHROMIUM_ARGS chooses the mode (extensions need it)
    args: [
      ...CHROMIUM_ARGS,
      `--disable-extensions-except=${extensionDirs.join(",")}`,
      `--load-extension=${extensionDirs.join(",")}`,
    ],
  });
  try {
    const workerOf = async ({ background }) => {
      const find = () => context.serviceWorkers().find((w) => w.url().endsWith(`/${background}`));
      while (!find()) await context.waitForEvent("serviceworker", { timeout: TIMEOUT_MS });
      return find().url();
    };
    const cdpPage = await context.newPage();
    const cdp = await context.newCDPSession(cdpPage);
    await cdp.send("ServiceWorker.enable");
    const extensions = [];
    for (const variant of variants) {
      const scriptURL = await workerOf(variant);
      // An extension page of its own: the message wakes that extension's worker.
      const page = await context.newPage();
      await page.goto(new URL("messenger.html", scriptURL).href);
      const ask = async () => {
        const answer = await page.evaluate(() => chrome.runtime.sendMessage({ type: "coldStart" }));
        if (!answer || answer.error) throw new Error(`extension worker ${variant.background}: ${answer?.error ?? "no answer"}`);
        return answer;
      };
      extensions.push({ ...variant, scriptURL, ask, previous: await ask(), samples: [] });
    }
    /** Stops every worker (as Chrome stops idle ones) and waits for those of `running`. */
    const stopAll = async (running) => {
      const stopped = Promise.all(running.map((e) => runningStatus(cdp, e.scriptURL, "stopped")));
      await cdp.send("ServiceWorker.stopAllWorkers");
      await stopped;
    };

    // The workers started at install are not counted: the samples are the restarts an
    // installed extension goes through. Each sample wakes one stopped worker.
    await stopAll(extensions);
    for (let i = 0; i < runs; i++) {
      const order = i % 2 === 0 ? extensions : [...extensions].reverse();
      for (const extension of order) {
        const sample = await extension.ask();
        if (sample.timeOrigin === extension.previous.timeOrigin) {
          throw new Error(`the extension worker ${extension.background} was not restarted`);
        }
        extension.samples.push(sample);
        extension.previous = sample;
        await stopAll([extension]);
      }
    }
    const result = { version: context.browser().version() };
    for (const { name, samples } of extensions) {
      const mid = (pick) => median(samples.map(pick));
      result[name] = {
        evaluatedMs: mid((s) => s.evaluatedMs),
        initMs: mid((s) => s.initMs),
        constructMs: mid((s) => s.constructMs),
        readyMs: mid((s) => s.evaluatedMs + s.initMs + s.constructMs),
        samples,
      };
    }
    return result;
  } finally {
    await context.close().catch(() => {});
    await rm(profile, { recursive: true, force: true });
    for (const dir of extensionDirs) await rm(dir, { recursive: true, force: true });
  }
}
