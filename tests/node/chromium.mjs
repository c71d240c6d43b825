// Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by
// playwright-core (never a browser download). playwright-core is taken from beside the
// test, else from the repository's node_modules; `playwright` is null if neither has it.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const CHROMIUM_PATH = "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

const repo = path.resolve(process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url)));

async function loadPlaywright() {
  try {
    return await import("playwright-core");
  } catch {
    // not installed beside the test (the packed-package project); try the repository
  }
  try {
    return createRequire(path.join(repo, "package.json"))("playwright-core");
  } catch {
    return null;
  }
}

export const playwright = await loadPlaywright();

/** A fresh headless Chromium. */
export function launchChromium() {
  return playwright.chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}
