// LiteLLM's proxy (PyPI `litellm[proxy]`) on 127.0.0.1 for the shared-proxy test: the
// `litellm` command that scripts/litellm-setup.sh installs into
// ~/.cache/batch-pacer/litellm/venv (LITELLM names another one), started with a config file
// and no database. This module needs nothing but Node: the package tests copy it into their
// project.

import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { freePort, sleep } from "./llama-server.mjs";

/** The `litellm` command: LITELLM, else where scripts/litellm-setup.sh installs it. */
export function litellmCommand(env = process.env) {
  if (env.LITELLM) return env.LITELLM;
  const cache = env.BATCH_PACER_CACHE ?? join(homedir(), ".cache", "batch-pacer");
  return join(cache, "litellm", "venv", "bin", "litellm");
}

/** Why the proxy cannot run here (a sentence), or false when it can. */
export function litellmMissing(env = process.env) {
  const command = litellmCommand(env);
  try {
    accessSync(command, constants.X_OK);
    return false;
  } catch {
    return `LiteLLM's proxy is not installed at ${command} (bash scripts/litellm-setup.sh installs it)`;
  }
}


/** Proxies still running, stopped if this process exits without stopping them. */
const running = new Set();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Starts `litellm --config CONFIG --host 127.0.0.1 --port P` with `env` added to this
 * process's environment, and resolves once `GET /health/liveliness` answers 200 (it takes
 * about 15 s here). Resolves with `{ baseUrl, stop(), output() }`: `baseUrl` is the
 * OpenAI-compatible root (`http://127.0.0.1:P/v1`), `stop()` ends the proxy (SIGTERM, then
 * SIGKILL after 5 s) and resolves when it has exited, `output()` is the tail of what it
 * printed.
 *
 * @param {{ config: string, env?: Record<string, string>, readyTimeoutMs?: number }} options
 */
export async function startLiteLLMProxy({ config, env = {}, readyTimeoutMs = 120_000 }) {
  const missing = litellmMissing();
  if (missing) throw new Error(missing);
  const port = await freePort();
  const child = spawn(litellmCommand(), ["--config", config, "--host", "127.0.0.1", "--port", String(port)], {
    stdio: ["ignore", "pipe", "pipe"],
    // The local copy of the model price list: without it the proxy tries to fetch one at
    // start, and this machine reaches no such host.
    env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: "true", ...env },
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
    exited ??= { code: null, signal: null, error: err.message };
    running.delete(child);
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
    if (exited) throw new Error(`the LiteLLM proxy exited before it was ready (${JSON.stringify(exited)}):\n${tail}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the LiteLLM proxy did not answer GET /health/liveliness with 200 within ${readyTimeoutMs} ms:\n${tail}`);
    }
    try {
      const response = await fetch(`${origin}/health/liveliness`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // Not listening yet.
    }
    await sleep(250);
  }
  return { baseUrl: `${origin}/v1`, stop, output: () => tail };
}
