// A local HTTP server for the browser tests: the installed package under /batch-pacer/,
// and whatever else a test serves through its own handler.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { realpathSync } from "node:fs";
import { dirname, join, normalize, extname } from "node:path";
import { fileURLToPath } from "node:url";

/** The installed package's directory. */
export const packageDir = dirname(dirname(fileURLToPath(import.meta.resolve("batch-pacer"))));

const TYPES = { ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html", ".json": "application/json" };

/** The content type of a served path. */
export const contentType = (path) => TYPES[extname(path)] ?? "application/octet-stream";

/**
 * Starts a server on 127.0.0.1. `handle(req, res, path)` answers first and returns true
 * when it did; otherwise a path under /batch-pacer/ is a file of the package, anything
 * else a 404. Resolves with `{ server, base }`.
 */
export async function servePackage(handle) {
  const root = realpathSync(packageDir);
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    try {
      if (await handle(req, res, path)) return;
      if (path.startsWith("/batch-pacer/")) {
        const file = normalize(join(root, path.slice("/batch-pacer/".length)));
        if (!file.startsWith(root)) throw new Error("outside");
        const body = await readFile(file);
        res.writeHead(200, { "content-type": contentType(file) });
        return res.end(body);
      }
    } catch {
      // fall through to 404
    }
    res.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}
