// batch-pacer in a Chromium module service worker, the runtime of an MV3 extension's
// background: a small page registers bench/sw/sw.js, which imports the built package
// statically. The package (js/, pkg/) and the shared bench modules are served over
// node:http on 127.0.0.1 without caching, so every fresh registration loads everything.

import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { CHROMIUM_ARGS } from "../tests/node/chromium.mjs";

const BENCH_DIR = resolve(fileURLToPath(new URL(".", import.meta.url)));
export const CHROMIUM = "/usr/bin/chromium";

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm" };

/** Maps a URL path to a file: the page and worker, bench modules, the package's js/ and pkg/. */
function resolvePath(packageDir, path) {
  if (path === "/" || path === "/index.html") return join(BENCH_DIR, "sw", "index.html");
  if (path === "/sw.js") return join(BENCH_DIR, "sw", "sw.js");
  for (const [prefix, root] of [["/bench/", BENCH_DIR], ["/js/", resolve(packageDir, "js")], ["/pkg/", resolve(packageDir, "pkg")]]) {
    if (!path.startsWith(prefix)) continue;
    const file = normalize(join(root, decodeURIComponent(path.slice(prefix.length))));
    return file.startsWith(root + sep) ? file : null;
  }
  return null;
}

function serve(packageDir) {
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://127.0.0.1").pathname;
    const file = resolvePath(packageDir, path);
    const type = file && TYPES[file.slice(file.lastIndexOf("."))];
    if (!type || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": type, "cache-control": "no-store" });
    res.end(await readFile(file));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/**
 * Starts the server and Chromium, opens the host page; returns `{ ask, register,
 * unregister, close }` where `ask(tag, message)` posts a request to the worker
 * registered under `tag` and resolves with its answer.
 */
export async function openServiceWorkerHost(packageDir) {
  const { chromium } = await import("playwright-core");
  const server = await serve(packageDir);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: false, // --headless=new below chooses the headless mode
    args: CHROMIUM_ARGS,
  });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => window.benchReady === true);
    return {
      version: browser.version(),
      register: (tag) => page.evaluate((t) => window.benchRegister(t), tag),
      unregister: (tag) => page.evaluate((t) => window.benchUnregister(t), tag),
      ask: (tag, message) => page.evaluate(([t, m]) => window.benchAsk(t, m), [tag, message]),
      async close() {
        await browser.close();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  } catch (error) {
    await browser.close();
    server.close();
    throw error;
  }
}

export const chromiumAvailable = () => existsSync(CHROMIUM);
