// The package: its exports, package.json, and initialisation (init / initSync).
// Initialisation is global to a module instance, so the "before init" cases run in a
// fresh child process that imports the installed package.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as pkg from "batch-pacer";
import init, { initSync, BatchPacer, PacerError, DEFAULTS, openAIProvider, cacheKey } from "batch-pacer";

await init();

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const packageJsonPath = require.resolve("batch-pacer/package.json");
const packageDir = path.dirname(packageJsonPath);
const packageJson = JSON.parse(readFileSync(packageJsonPath, "utf8"));
const wasmPath = path.join(packageDir, "pkg", "batch_pacer_bg.wasm");

/** Runs an ES module source in a fresh Node process next to the installed package. */
function runChild(source, nodeArgs = []) {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeArgs, "--input-type=module", "-e", source],
      { cwd: here, env: { ...process.env, WASM_PATH: wasmPath } },
      (error, stdout, stderr) => resolve({ code: error ? error.code ?? 1 : 0, stdout, stderr }),
    );
  });
}

/** Runs `source` in a child and parses the JSON it prints last. */
async function childJson(source, nodeArgs) {
  const { code, stdout, stderr } = await runChild(source, nodeArgs);
  assert.equal(code, 0, `child failed:\n${stderr}`);
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1]);
}

const describeError = `
  const describeError = (e) => ({ name: e?.name, code: e?.code, isPacerError: e instanceof PacerError,
    isError: e instanceof Error, message: e?.message });`;

describe("the installed package", () => {
  test("resolves from node_modules, not from the sources", () => {
    assert.ok(packageDir.split(path.sep).includes("node_modules"), packageDir);
    const entry = fileURLToPath(import.meta.resolve("batch-pacer"));
    assert.ok(entry.startsWith(packageDir + path.sep), entry);
  });

  test("package.json: name, ESM only, exports with types first, a files whitelist", () => {
    assert.equal(packageJson.name, "batch-pacer");
    assert.equal(packageJson.type, "module");
    const dot = packageJson.exports?.["."];
    assert.equal(typeof dot, "object", 'exports["."] is a conditions object');
    const conditions = Object.keys(dot);
    assert.equal(conditions[0], "types", `types must be the first condition, got ${conditions}`);
    assert.ok(conditions.length > 1, "a runtime condition follows types");
    assert.ok(Array.isArray(packageJson.files) && packageJson.files.length > 0, "files whitelist");
  });

  test("the exports' runtime target exists and is the module we imported", () => {
    const dot = packageJson.exports["."];
    const target = dot.import ?? dot.default;
    assert.equal(typeof target, "string");
    const file = path.join(packageDir, target);
    assert.ok(existsSync(file), `${target} is in the package`);
    assert.equal(fileURLToPath(import.meta.resolve("batch-pacer")), file);
  });

  test("the .d.ts named by exports.types is shipped", () => {
    const types = packageJson.exports["."].types;
    assert.match(types, /\.d\.ts$/);
    const file = path.join(packageDir, types);
    assert.ok(existsSync(file), `${types} is in the package`);
    const text = readFileSync(file, "utf8");
    for (const name of ["BatchPacer", "PacerError", "DEFAULTS", "initSync", "openAIProvider"]) {
      assert.ok(text.includes(name), `the types declare ${name}`);
    }
  });

  test("the wasm is shipped beside the module", () => {
    assert.ok(existsSync(wasmPath));
    const bytes = readFileSync(wasmPath);
    assert.ok(WebAssembly.validate(bytes), "a valid WebAssembly module");
  });

  test("exports every name of the contract", () => {
    assert.equal(typeof init, "function");
    assert.equal(pkg.default, init);
    assert.equal(typeof initSync, "function");
    assert.equal(typeof BatchPacer, "function");
    assert.equal(typeof PacerError, "function");
    assert.equal(typeof DEFAULTS, "object");
    assert.equal(typeof openAIProvider, "function");
    assert.equal(typeof cacheKey, "function");
  });

  test("the module graph has no top-level await (it loads through require())", async () => {
    const out = await childJson(
      `import { createRequire } from "node:module";
       const require = createRequire(process.cwd() + "/x.js");
       const m = require("batch-pacer");
       console.log(JSON.stringify({ keys: Object.keys(m).sort() }));`,
      ["--experimental-require-module", "--no-warnings"],
    );
    assert.ok(out.keys.includes("BatchPacer"), String(out.keys));
  });

  test("the shipped JavaScript uses no dynamic import()", () => {
    const files = [];
    for (const dir of ["js", "pkg"]) {
      const full = path.join(packageDir, dir);
      if (!existsSync(full)) continue;
      for (const name of require("node:fs").readdirSync(full)) {
        if (name.endsWith(".js") || name.endsWith(".mjs")) files.push(path.join(full, name));
      }
    }
    assert.ok(files.length > 0);
    for (const file of files) {
      // Comments may talk about import(); code may not call it.
      const code = readFileSync(file, "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
      assert.doesNotMatch(code, /\bimport\s*\(/, `${path.basename(file)} calls import()`);
    }
  });
});

describe("initialisation", () => {
  test("initSync while init() is loading throws not_initialized; the load then ends and pacers work", async () => {
    const out = await childJson(`
      import { readFileSync } from "node:fs";
      import init, { initSync, BatchPacer, PacerError } from "batch-pacer";
      const bytes = readFileSync(process.env.WASM_PATH);
      const loading = init(bytes);
      let error = null;
      try { initSync(bytes); } catch (e) { error = e; }
      await loading;
      initSync(bytes);
      const pacer = new BatchPacer(async (r) => (r.isBatch ? r.texts.map((t) => t.toUpperCase()) : r.text.toUpperCase()));
      const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "p" });
      const texts = await Promise.all([pacer.translate(item("one")), pacer.translate(item("two"))]);
      console.log(JSON.stringify({ isPacerError: error instanceof PacerError, code: error?.code, texts }));
    `);
    assert.deepEqual(out, { isPacerError: true, code: "not_initialized", texts: ["ONE", "TWO"] });
  });

  test("in a Node before 20.16 (no process.getBuiltinModule), init() still reads the .wasm from disk", async () => {
    // The package reads the file through a static node:fs import that only the "node"
    // condition resolves to, so the Node 20 releases before process.getBuiltinModule work.
    const out = await childJson(`
      delete process.getBuiltinModule;
      globalThis.fetch = () => { throw new Error("fetch must not be used in Node"); };
      const { default: init, BatchPacer } = await import("batch-pacer");
      await init();
      const pacer = new BatchPacer(async (r) => (r.isBatch ? r.texts.map((t) => t.toUpperCase()) : r.text.toUpperCase()));
      const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "p" });
      const texts = await Promise.all([pacer.translate(item("one")), pacer.translate(item("two"))]);
      console.log(JSON.stringify({ texts }));
    `);
    assert.deepEqual(out.texts, ["ONE", "TWO"]);
  });

  test("BatchPacer before init throws PacerError not_initialized", async () => {
    const out = await childJson(`
      import { BatchPacer, PacerError } from "batch-pacer";
      ${describeError}
      let result = "no throw";
      try { new BatchPacer(async () => "x"); } catch (e) { result = describeError(e); }
      console.log(JSON.stringify(result));
    `);
    assert.equal(out.name, "PacerError");
    assert.equal(out.code, "not_initialized");
    assert.equal(out.isPacerError, true);
    assert.equal(out.isError, true);
  });

  test("init() loads the wasm from disk in Node (no fetch needed), then BatchPacer works", async () => {
    const out = await childJson(`
      import init, { BatchPacer } from "batch-pacer";
      globalThis.fetch = () => { throw new Error("fetch must not be used in Node"); };
      const first = init();
      const isPromise = first instanceof Promise;
      await first;
      const p = new BatchPacer(async (r) => r.text + "!", { batchDelayMs: 0 });
      const v = await p.translate({ text: "hi", sourceLang: "en", targetLang: "de", providerId: "a" });
      p.dispose();
      console.log(JSON.stringify({ isPromise, v }));
    `);
    assert.deepEqual(out, { isPromise: true, v: "hi!" });
  });

  test("init() is idempotent: a second call is a no-op", async () => {
    const out = await childJson(`
      import init, { BatchPacer } from "batch-pacer";
      await init();
      const before = new BatchPacer(async (r) => "a:" + r.text, { batchDelayMs: 0 });
      const second = init();
      await second;
      await init();
      // A pacer made before the second call keeps working: the module was not reloaded.
      const v1 = await before.translate({ text: "x", sourceLang: "en", targetLang: "de", providerId: "a" });
      const after = new BatchPacer(async (r) => "b:" + r.text, { batchDelayMs: 0 });
      const v2 = await after.translate({ text: "y", sourceLang: "en", targetLang: "de", providerId: "a" });
      before.dispose(); after.dispose();
      console.log(JSON.stringify({ secondIsThenable: typeof second?.then === "function", v1, v2 }));
    `);
    assert.deepEqual(out, { secondIsThenable: true, v1: "a:x", v2: "b:y" });
  });

  test("init() reads the .wasm once in Node: later calls load nothing", async () => {
    // Node reads the file through node:fs (fetch is never used there), so the reads are
    // counted on fs.readFileSync, synced into the ES module bindings the package imports.
    const out = await childJson(`
      import fs from "node:fs";
      import { syncBuiltinESMExports } from "node:module";
      const read = fs.readFileSync;
      let wasmReads = 0;
      fs.readFileSync = (file, ...rest) => {
        if (String(file).endsWith("batch_pacer_bg.wasm")) wasmReads++;
        return read(file, ...rest);
      };
      syncBuiltinESMExports();
      const { default: init, BatchPacer } = await import("batch-pacer");
      await init();
      const afterFirst = wasmReads;
      await init();
      await Promise.all([init(), init()]);
      const p = new BatchPacer(async (r) => r.text + "!", { batchDelayMs: 0 });
      const v = await p.translate({ text: "hi", sourceLang: "en", targetLang: "de", providerId: "a" });
      p.dispose();
      console.log(JSON.stringify({ afterFirst, total: wasmReads, v }));
    `);
    assert.deepEqual(out, { afterFirst: 1, total: 1, v: "hi!" });
  });

  test("concurrent init() calls both resolve", async () => {
    const out = await childJson(`
      import init, { BatchPacer } from "batch-pacer";
      await Promise.all([init(), init()]);
      const p = new BatchPacer(async () => "ok");
      p.dispose();
      console.log(JSON.stringify({ ok: true }));
    `);
    assert.deepEqual(out, { ok: true });
  });

  test("initSync(bytes) with the installed package's .wasm bytes", async () => {
    const out = await childJson(`
      import { readFileSync } from "node:fs";
      import { initSync, BatchPacer } from "batch-pacer";
      const bytes = readFileSync(process.env.WASM_PATH);
      const ret = initSync(bytes);
      const p = new BatchPacer(async (r) => r.text.toUpperCase(), { batchDelayMs: 0 });
      const v = await p.translate({ text: "sync", sourceLang: "en", targetLang: "de", providerId: "a" });
      p.dispose();
      console.log(JSON.stringify({ v, returnedPromise: ret instanceof Promise }));
    `);
    assert.deepEqual(out, { v: "SYNC", returnedPromise: false });
  });

  test("initSync with an ArrayBuffer, then init() is a no-op", async () => {
    const out = await childJson(`
      import { readFileSync } from "node:fs";
      import init, { initSync, BatchPacer } from "batch-pacer";
      const buf = readFileSync(process.env.WASM_PATH);
      const arrayBuffer = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
      initSync(arrayBuffer);
      globalThis.fetch = () => { throw new Error("no second load"); };
      await init();
      initSync(new Uint8Array(0)); // already initialised: ignored
      const p = new BatchPacer(async (r) => "[" + r.text + "]", { batchDelayMs: 0 });
      const v = await p.translate({ text: "b", sourceLang: "en", targetLang: "de", providerId: "a" });
      p.dispose();
      console.log(JSON.stringify({ v }));
    `);
    assert.deepEqual(out, { v: "[b]" });
  });

  test("initSync(WebAssembly.Module)", async () => {
    const out = await childJson(`
      import { readFileSync } from "node:fs";
      import { initSync, BatchPacer } from "batch-pacer";
      const module = new WebAssembly.Module(readFileSync(process.env.WASM_PATH));
      initSync(module);
      const p = new BatchPacer(async (r) => r.text + r.text, { batchDelayMs: 0 });
      const v = await p.translate({ text: "m", sourceLang: "en", targetLang: "de", providerId: "a" });
      p.dispose();
      console.log(JSON.stringify({ v }));
    `);
    assert.deepEqual(out, { v: "mm" });
  });

  test("this process is initialised: a pacer can be made", () => {
    const p = new BatchPacer(async () => "x");
    assert.ok(p instanceof BatchPacer);
    p.dispose();
  });
});
