// `batch-pacer/inline-wasm` (an addition to the contract): the module's bytes inline, for
// a start-up without a fetch. Each case that initialises runs in a fresh child process,
// since initialisation is global to a module instance.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { wasmBytes } from "batch-pacer/inline-wasm";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const packageJsonPath = require.resolve("batch-pacer/package.json");
const packageDir = path.dirname(packageJsonPath);
const packageJson = JSON.parse(readFileSync(packageJsonPath, "utf8"));
const shippedWasm = readFileSync(path.join(packageDir, "pkg", "batch_pacer_bg.wasm"));

/** Runs an ES module source in a fresh Node process and parses the JSON it prints last. */
function childJson(source) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", source], { cwd: here }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`child failed:\n${stderr}`));
      const lines = stdout.trim().split("\n");
      resolve(JSON.parse(lines[lines.length - 1]));
    });
  });
}

/** A child that hides the faster decoders first, then checks the bytes and translates. */
const decodeAndTranslate = (hide) => `
  ${hide}
  const { wasmBytes } = await import("batch-pacer/inline-wasm");
  const { initSync, BatchPacer } = await import("batch-pacer");
  const { readFileSync } = await import("node:fs");
  const { createRequire } = await import("node:module");
  const require = createRequire(process.cwd() + "/x.js");
  const { dirname, join } = await import("node:path");
  const packageDir = dirname(require.resolve("batch-pacer/package.json"));
  const shipped = readFileSync(join(packageDir, "pkg", "batch_pacer_bg.wasm"));
  const bytes = wasmBytes();
  const same = bytes instanceof Uint8Array && bytes.length === shipped.length &&
    bytes.every((b, i) => b === shipped[i]);
  initSync(bytes);
  const pacer = new BatchPacer(async (r) => r.texts.map((t, i) => r.markers ? r.markers[i][0] + t.toUpperCase() + r.markers[i][1] : t.toUpperCase()).join("\\n"), { batchDelayMs: 0 });
  const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "p" });
  const out = await Promise.all([pacer.translate(item("one")), pacer.translate(item("two"))]);
  pacer.dispose();
  console.log(JSON.stringify({ same, out }));
`;

test("exports['./inline-wasm'] names its types first and a shipped module", () => {
  const entry = packageJson.exports?.["./inline-wasm"];
  assert.equal(typeof entry, "object");
  assert.equal(Object.keys(entry)[0], "types");
  for (const file of [entry.types, entry.default]) {
    assert.ok(existsSync(path.join(packageDir, file)), `${file} is in the package`);
  }
  assert.equal(fileURLToPath(import.meta.resolve("batch-pacer/inline-wasm")), path.join(packageDir, entry.default));
  assert.match(readFileSync(path.join(packageDir, entry.types), "utf8"), /export function wasmBytes\(\): Uint8Array;/);
});

test("wasmBytes() is the shipped .wasm, byte for byte, and a fresh copy on each call", () => {
  const first = wasmBytes();
  assert.ok(first instanceof Uint8Array);
  assert.equal(first.length, shippedWasm.length);
  assert.ok(Buffer.from(first.buffer, first.byteOffset, first.length).equals(shippedWasm), "same bytes as the .wasm");
  first[0] = 0xff;
  assert.equal(wasmBytes()[0], shippedWasm[0], "a caller's change does not reach the next call");
});

test("initSync(wasmBytes()) initialises the core, and a batch translates", async () => {
  assert.deepEqual(await childJson(decodeAndTranslate("")), { same: true, out: ["ONE", "TWO"] });
});

test("without Uint8Array.fromBase64 and Buffer, it decodes with atob to the same bytes", async () => {
  const hide = "delete Uint8Array.fromBase64; delete globalThis.Buffer;";
  const out = await childJson(decodeAndTranslate(hide));
  assert.deepEqual(out, { same: true, out: ["ONE", "TWO"] });
});

test("with Uint8Array.fromBase64 it uses it", async () => {
  // Node 20 has no fromBase64: a stand-in built on Buffer proves the branch is taken.
  const hide = `
    const realBuffer = globalThis.Buffer;
    let used = 0;
    Uint8Array.fromBase64 = (text) => { used++; return new Uint8Array(realBuffer.from(text, "base64")); };
    process.on("exit", () => { if (used !== 1) process.exitCode = 3; });
    delete globalThis.Buffer;`;
  const out = await childJson(decodeAndTranslate(hide));
  assert.deepEqual(out, { same: true, out: ["ONE", "TWO"] });
});
