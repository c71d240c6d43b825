// llama.cpp's own `llama-server` on 127.0.0.1 for the tests and benchmarks that depend on
// what a real model does. scripts/llama-setup.sh builds it and fetches the model; its last
// line, `LLAMA_SERVER=… LLAMA_MODEL=…`, is what scripts/test.sh and scripts/bench.sh export.
// This module needs nothing but Node: the package tests copy it into their project, the
// benchmarks import it from the repository.

import { spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { createServer } from "node:net";
import { dirname } from "node:path";

/** Why the real-model tests cannot run here (a sentence), or false when they can. */
export function llamaMissing(env = process.env) {
  const { LLAMA_SERVER: server, LLAMA_MODEL: model } = env;
  if (!server || !model) return "LLAMA_SERVER and LLAMA_MODEL are not set (scripts/llama-setup.sh prints them)";
  try {
    accessSync(server, constants.X_OK);
  } catch {
    return `LLAMA_SERVER=${server} is not an executable file (scripts/llama-setup.sh builds it)`;
  }
  if (!existsSync(model)) return `LLAMA_MODEL=${model} does not exist (scripts/llama-setup.sh fetches it)`;
  return false;
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Child processes still running, stopped if this process exits without stopping them. */
const running = new Set();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Starts `llama-server -m MODEL --host 127.0.0.1 --port P -c 8192 -np 1 -t 2 --jinja
 * --no-repack` (plus `args`) on a free port and resolves once `GET /health` answers 200. Resolves with
 * `{ port, baseUrl, origin, stop(), output() }`: `baseUrl` is the OpenAI-compatible root
 * (`http://127.0.0.1:P/v1`), `stop()` ends the server (SIGTERM, then SIGKILL after 5 s) and
 * resolves when it has exited, `output()` is the tail of what it printed.
 *
 * @param {{ server?: string, model?: string, args?: string[], readyTimeoutMs?: number }} [options]
 */
export async function startLlamaServer(options = {}) {
  const {
    server = process.env.LLAMA_SERVER,
    model = process.env.LLAMA_MODEL,
    args = [],
    readyTimeoutMs = 120_000,
  } = options;
  const missing = llamaMissing({ LLAMA_SERVER: server, LLAMA_MODEL: model });
  if (missing) throw new Error(missing);
  let lastError;
  // A port found free can be taken before the server binds it: try another one then.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      return await launch(server, model, port, args, readyTimeoutMs);
    } catch (err) {
      lastError = err;
      if (!err.portTaken) break;
    }
  }
  throw lastError;
}

async function launch(server, model, port, args, readyTimeoutMs) {
  // --no-repack: on CPUs with AMX (this machine's Xeon has amx_int8), llama.cpp repacks the
  // Q4_1 weights into its AMX buffer type, and its AMX matrix product then crashes
  // (SIGSEGV in ggml_backend_amx_mul_mat) on the first decode. Repacking only speeds up
  // the matrix products; answers are the same without it.
  const argv = [
    "-m", model, "--host", "127.0.0.1", "--port", String(port), "-c", "8192", "-np", "1", "-t", "2", "--jinja",
    "--no-repack", ...args,
  ];
  const libs = dirname(server);
  const child = spawn(server, argv, {
    stdio: ["ignore", "pipe", "pipe"],
    // The build's shared libraries (if any) live beside the binary.
    env: { ...process.env, LD_LIBRARY_PATH: [libs, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":") },
  });
  running.add(child);
  let tail = "";
  const keep = (chunk) => {
    tail = (tail + chunk.toString("utf8")).slice(-8000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = null;
  const exit = new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      exited = { code, signal };
      running.delete(child);
      resolve(exited);
    });
  });
  child.once("error", (err) => {
    keep(`spawn error: ${err.message}\n`);
    if (!exited) {
      exited = { code: null, signal: null, error: err };
      running.delete(child);
    }
  });

  const stop = async () => {
    if (exited) return exited;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    try {
      return await exit;
    } finally {
      clearTimeout(timer);
    }
  };

  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  while (true) {
    if (exited) {
      const err = new Error(`llama-server exited before it was ready (${JSON.stringify(exited)}):\n${tail}`);
      err.portTaken = /bind|address already in use/i.test(tail);
      throw err;
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`llama-server did not answer GET /health with 200 within ${readyTimeoutMs} ms:\n${tail}`);
    }
    try {
      const response = await fetch(`${origin}/health`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  return { port, origin, baseUrl: `${origin}/v1`, stop, output: () => tail };
}
