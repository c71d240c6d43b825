#!/usr/bin/env node
// Serves the demo article (extension-demo/demo-page/) on 127.0.0.1, for trying the demo
// extension and for tests. No dependencies; Node >= 20.
//
// CLI:
//   node extension-demo/demo-server.mjs --port 8080
//   prints "demo page at http://127.0.0.1:PORT/" and serves until SIGINT/SIGTERM
//   (--port 0 or no --port: any free port).
//
// Library:
//   import { startDemoServer } from "./extension-demo/demo-server.mjs";
//   const demo = await startDemoServer({ port: 0 });
//   demo.url    // "http://127.0.0.1:PORT/"
//   demo.port
//   await demo.close();   // closes every socket
//
// GET and HEAD only (405 otherwise); "/" and directories serve their index.html. Paths
// are confined to demo-page/: any ".." segment, NUL byte, bad escape or file outside it
// (symbolic links included) is 404.

import http from "node:http";
import { createReadStream, realpathSync } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { closeOnSignals, isMainModule } from "./cli.mjs";

export const DEMO_PAGE_DIR = fileURLToPath(new URL("./demo-page/", import.meta.url));

const CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".vtt": "text/vtt; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
};

/** The content type of a file name, by extension. */
export function contentTypeOf(name) {
  return CONTENT_TYPES[path.extname(name).toLowerCase()] ?? "application/octet-stream";
}

/**
 * The file a request path names inside `root`, or null when the path is not acceptable
 * (bad escape, NUL, a ".." segment, a hidden name).
 */
function resolveRequestPath(root, rawUrl) {
  const rawPath = String(rawUrl ?? "/").split(/[?#]/, 1)[0];
  let decoded;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  if (!decoded.startsWith("/") || decoded.includes("\0") || decoded.includes("\\")) return null;
  const segments = decoded.split("/");
  if (segments.some((segment) => segment === ".." || segment.startsWith("."))) return null;
  const relative = segments.filter(Boolean).join("/");
  const file = path.resolve(root, relative);
  if (file !== root && !file.startsWith(root + path.sep)) return null;
  return file;
}

function sendError(res, status, message, extraHeaders = {}) {
  const body = `${status} ${message}\n`;
  res.writeHead(status, {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    ...extraHeaders,
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

async function handle(root, req, res) {
  if (req.method !== "GET" && req.method !== "HEAD") {
    return sendError(res, 405, "Method Not Allowed", { Allow: "GET, HEAD" });
  }
  let file = resolveRequestPath(root, req.url);
  if (!file) return sendError(res, 404, "Not Found");
  let info;
  try {
    info = await stat(file);
    if (info.isDirectory()) {
      file = path.join(file, "index.html");
      info = await stat(file);
    }
    if (!info.isFile()) return sendError(res, 404, "Not Found");
    // Symbolic links must not lead out of the root either.
    const real = await realpath(file);
    if (!real.startsWith(root + path.sep)) return sendError(res, 404, "Not Found");
  } catch {
    return sendError(res, 404, "Not Found");
  }
  res.writeHead(200, {
    "Content-Type": contentTypeOf(file),
    "Content-Length": info.size,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
  });
  if (req.method === "HEAD") return res.end();
  const stream = createReadStream(file);
  stream.on("error", () => res.destroy());
  stream.pipe(res);
}

/**
 * Starts the server on 127.0.0.1. `port` 0 picks a free port.
 * Resolves with { url, port, close() }; close() resolves once every socket is closed.
 */
export async function startDemoServer({ port = 0, root = DEMO_PAGE_DIR } = {}) {
  const rootDir = realpathSync(path.resolve(root));
  const server = http.createServer((req, res) => {
    handle(rootDir, req, res).catch(() => {
      if (!res.headersSent) sendError(res, 500, "Internal Server Error");
      else res.destroy();
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const actualPort = server.address().port;
  let closing = null;
  return {
    url: `http://127.0.0.1:${actualPort}/`,
    port: actualPort,
    close() {
      closing ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

const HELP = `Serves the batch-pacer demo article on 127.0.0.1.

usage: node extension-demo/demo-server.mjs [--port N]

  --port N   port to listen on (default 0: any free port)
  --help     this text
`;

function parseArgs(argv) {
  const out = { port: 0 };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (arg === "--help" || arg === "-h") {
      out.help = true;
    } else if (arg === "--port") {
      if (value === undefined) {
        if (i + 1 >= argv.length) throw new Error("option --port needs a value");
        value = argv[++i];
      }
      if (!/^\d+$/.test(value) || Number(value) > 65535) {
        throw new Error(`--port must be an integer from 0 to 65535 (got ${value})`);
      }
      out.port = Number(value);
    } else {
      throw new Error(`unknown argument ${arg}`);
    }
  }
  return out;
}

async function main(argv) {
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`demo server: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return;
  }
  let demo;
  try {
    demo = await startDemoServer({ port: args.port });
  } catch (err) {
    process.stderr.write(`demo server: ${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`demo page at ${demo.url}\n`);
  closeOnSignals(demo);
}

if (isMainModule(import.meta.url)) main(process.argv.slice(2));
