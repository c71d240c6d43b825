// Load failures (an addition to the contract's "a failed load rejects PacerError
// not_initialized"): each cause gives a message that says what to do, with the original
// error as `cause`, and later uses say why the core is missing. Also the package layout
// that keeps bundlers from shipping the .wasm twice. Each case that initialises runs in a
// fresh child process, since initialisation is global to a module instance.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { constants, deflateRawSync, gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const packageDir = path.dirname(require.resolve("batch-pacer/package.json"));
const packageJson = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8"));
const CSP_LINE = `"content_security_policy": {"extension_pages": "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"}`;
// Chromium's words when an extension's CSP lacks 'wasm-unsafe-eval'.
const CHROMIUM_CSP_MESSAGE =
  "WebAssembly.instantiate(): Refused to compile or instantiate WebAssembly module because 'unsafe-eval' is not an " +
  "allowed source of script in the following Content Security Policy directive: \"script-src 'self'\"";

// Refuses batch-pacer's module (recognised by its imports, as the shipped .wasm names its
// first one) the way such a CSP does, and leaves every other module alone (Node compiles
// its own, e.g. for fetch).
const refuseOurModule = `
  const [ourImport] = WebAssembly.Module.imports(new WebAssembly.Module(
    (await import("node:fs")).readFileSync(new URL(import.meta.resolve("batch-pacer/batch_pacer_bg.wasm")))));
  const refuse = (imports) => {
    if (imports?.[ourImport.module]?.[ourImport.name]) throw new WebAssembly.CompileError(${JSON.stringify(CHROMIUM_CSP_MESSAGE)});
  };
  const { instantiate, Instance } = WebAssembly;
  WebAssembly.instantiate = async (source, imports) => { refuse(imports); return instantiate(source, imports); };
  WebAssembly.Instance = function (module, imports) { refuse(imports); return new Instance(module, imports); };`;

function childJson(source, { cwd = here } = {}) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", source], { cwd }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`child failed:\n${stderr}`));
      const lines = stdout.trim().split("\n");
      resolve({ ...JSON.parse(lines[lines.length - 1]), stderr });
    });
  });
}

const describe = `
  const describe = (e) => e && ({ name: e.name, code: e.code, message: e.message, isPacerError: e instanceof PacerError,
    causeName: e.cause?.name, causeMessage: e.cause?.message, causeIsPacerError: e.cause instanceof PacerError });`;

function assertSaysWhatToDo(error, pattern) {
  assert.equal(error.isPacerError, true, JSON.stringify(error));
  assert.equal(error.code, "not_initialized");
  assert.match(error.message, pattern);
  assert.ok(error.causeName, "the original error is the cause");
}

test("a .wasm that cannot be fetched names the export to copy and the inline entry; the cause is fetch's error", async () => {
  const out = await childJson(`
    import init, { BatchPacer, PacerError } from "batch-pacer";
    ${describe}
    const failed = await init("http://127.0.0.1:9/batch_pacer_bg.wasm").then(() => null, describe);
    let later = null;
    try { new BatchPacer(async () => ""); } catch (e) { later = describe(e); }
    await init(); // a failed load may be retried
    console.log(JSON.stringify({ failed, later, works: typeof new BatchPacer(async () => "").translate }));
  `);
  assertSaysWhatToDo(out.failed, /not found at http:\/\/127\.0\.0\.1:9\/batch_pacer_bg\.wasm/);
  assert.match(out.failed.message, /"batch-pacer\/batch_pacer_bg\.wasm"/);
  assert.match(out.failed.message, /"batch-pacer\/inline"/);
  assert.match(out.failed.message, /initSync\(wasmBytes\(\)\) with wasmBytes from "batch-pacer\/inline-wasm"/);
  assert.equal(out.failed.causeName, "TypeError");
  // Until it loads, every use says why the core is missing.
  assertSaysWhatToDo(out.later, /new BatchPacer\(\) needs the module, which failed to load: .*batch-pacer\/inline/);
  assert.equal(out.later.causeIsPacerError, true);
  assert.equal(out.works, "function");
});

test("a 404 names the status and what to do", async () => {
  const out = await childJson(`
    import init, { PacerError } from "batch-pacer";
    ${describe}
    const response = () => new Response("missing", { status: 404, statusText: "Not Found" });
    const failed = await init(response()).then(() => null, describe);
    const promised = await init(Promise.resolve(response())).then(() => null, describe);
    console.log(JSON.stringify({ failed, promised }));
  `);
  for (const error of [out.failed, out.promised]) {
    assertSaysWhatToDo(error, /not found \(HTTP 404 Not Found\).*"batch-pacer\/batch_pacer_bg\.wasm".*"batch-pacer\/inline"/);
  }
});

test("a CSP that forbids WebAssembly gives the exact manifest line, from init() and from initSync()", async () => {
  const out = await childJson(`
    import { readFileSync } from "node:fs";
    import init, { initSync, PacerError } from "batch-pacer";
    ${describe}
    ${refuseOurModule}
    const asynchronous = await init().then(() => null, describe);
    let synchronous = null;
    try { initSync(readFileSync(new URL(import.meta.resolve("batch-pacer/batch_pacer_bg.wasm")))); } catch (e) { synchronous = describe(e); }
    console.log(JSON.stringify({ asynchronous, synchronous }));
  `);
  for (const error of [out.asynchronous, out.synchronous]) {
    assertSaysWhatToDo(error, /Content Security Policy forbids compiling WebAssembly/);
    assert.ok(error.message.includes(CSP_LINE), error.message);
    assert.match(error.message, /'wasm-unsafe-eval' to the manifest's content_security_policy\.extension_pages/);
    assert.equal(error.causeName, "CompileError");
    assert.ok(error.causeMessage.includes("Refused to compile"));
  }
});

test("bytes that are not WebAssembly say so", async () => {
  const out = await childJson(`
    import { initSync, PacerError } from "batch-pacer";
    ${describe}
    let failed = null;
    try { initSync(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])); } catch (e) { failed = describe(e); }
    console.log(JSON.stringify({ failed }));
  `);
  assertSaysWhatToDo(out.failed, /not a WebAssembly module/);
  assert.equal(out.failed.causeName, "CompileError");
});

/** A copy of the installed package, in a project of its own. */
function packageCopy(t) {
  const project = mkdtempSync(path.join(tmpdir(), "batch-pacer-copy-"));
  t.after(() => rmSync(project, { recursive: true, force: true }));
  cpSync(packageDir, path.join(project, "node_modules", "batch-pacer"), { recursive: true });
  return project;
}

/** A copy of the installed package without its .wasm, in a project of its own. */
function packageWithoutWasm(t) {
  const project = packageCopy(t);
  rmSync(path.join(project, "node_modules", "batch-pacer", "pkg", "batch_pacer_bg.wasm"));
  return project;
}

test("in Node, a .wasm missing from disk names the file and what to do", async (t) => {
  const cwd = packageWithoutWasm(t);
  const out = await childJson(`
    import init, { PacerError } from "batch-pacer";
    ${describe}
    console.log(JSON.stringify({ failed: await init().then(() => null, describe) }));
  `, { cwd });
  assertSaysWhatToDo(out.failed, /not found at file:.*batch_pacer_bg\.wasm.*"batch-pacer\/batch_pacer_bg\.wasm"/);
  assert.match(out.failed.causeMessage, /ENOENT/);
});

/** What init() rejects with in a child that reports Node.js v18.20.0, in project `cwd`. */
async function loadInNode18(cwd) {
  const out = await childJson(`
    Object.defineProperty(process, "version", { value: "v18.20.0" });
    Object.defineProperty(process, "versions", { value: { ...process.versions, node: "18.20.0" } });
    const { default: init, PacerError } = await import("batch-pacer");
    ${describe}
    console.log(JSON.stringify({ failed: await init().then(() => null, describe) }));
  `, { cwd });
  return out.failed;
}

test("in a Node older than 20, a failed load says which Node is needed", async (t) => {
  const failed = await loadInNode18(packageWithoutWasm(t));
  assertSaysWhatToDo(failed, /needs Node\.js 20 or later; this is Node\.js v18\.20\.0/);
});

test("in a Node older than 20, a load that fails with the .wasm on disk says which Node is needed", async (t) => {
  // The file is there and read; what an old engine then fails on (here: bytes it cannot
  // compile) is reported with the version to fix first.
  const cwd = packageCopy(t);
  writeFileSync(path.join(cwd, "node_modules", "batch-pacer", "pkg", "batch_pacer_bg.wasm"), randomBytes(64));
  const failed = await loadInNode18(cwd);
  assertSaysWhatToDo(failed, /needs Node\.js 20 or later; this is Node\.js v18\.20\.0/);
  assert.equal(failed.causeName, "CompileError", "the engine's own error is the cause");
});

test("batch-pacer/inline initialises on import: no init() call, no fetch, no read of the .wasm", async (t) => {
  const cwd = packageWithoutWasm(t);
  const out = await childJson(`
    globalThis.fetch = () => { throw new Error("no fetch"); };
    const { BatchPacer, default: init } = await import("batch-pacer/inline");
    const main = await import("batch-pacer");
    const pacer = new BatchPacer(async (r) => r.texts.map((s) => s.toUpperCase()), { batchDelayMs: 0 });
    const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "p" });
    const texts = await Promise.all([pacer.translate(item("one")), pacer.translate(item("two"))]);
    await init();
    console.log(JSON.stringify({ texts, sameClass: main.BatchPacer === BatchPacer }));
  `, { cwd });
  assert.deepEqual(out.texts, ["ONE", "TWO"]);
  assert.equal(out.sameClass, true, "one module instance behind both entries");
});

test("batch-pacer/inline under a CSP that forbids WebAssembly: the import survives, uses say why", async () => {
  const out = await childJson(`
    ${refuseOurModule}
    const logged = [];
    console.error = (e) => logged.push(e?.code);
    const { BatchPacer, PacerError, default: init } = await import("batch-pacer/inline");
    ${describe}
    let use = null;
    try { new BatchPacer(async () => ""); } catch (e) { use = describe(e); }
    const retried = await init().then(() => null, describe);
    console.log(JSON.stringify({ use, retried, logged }));
  `);
  assertSaysWhatToDo(out.use, /needs the module, which failed to load: .*Content Security Policy/);
  assert.ok(out.use.message.includes(CSP_LINE));
  assertSaysWhatToDo(out.retried, /Content Security Policy/);
  assert.deepEqual(out.logged, ["not_initialized"], "the failure on import is logged once, not thrown");
});

test("every conditions object names its types first; the .wasm and the inline entry are exported", () => {
  for (const [field, map] of [["exports", packageJson.exports], ["imports", packageJson.imports]]) {
    for (const [key, target] of Object.entries(map)) {
      if (typeof target === "object") assert.equal(Object.keys(target)[0], "types", `${field}["${key}"]`);
    }
  }
  assert.equal(fileURLToPath(import.meta.resolve("batch-pacer/batch_pacer_bg.wasm")), path.join(packageDir, "pkg", "batch_pacer_bg.wasm"));
  assert.equal(fileURLToPath(import.meta.resolve("batch-pacer/inline")), path.join(packageDir, "js", "inline.js"));
  assert.ok(packageJson.sideEffects.includes("./js/inline.js"), "bundlers keep the initialisation on import");
});

test("browsers' bundlers see one reference to the .wasm, and no Node-only code", () => {
  const read = (file) => readFileSync(path.join(packageDir, file), "utf8");
  const browserSource = packageJson.imports["#wasm-source"].browser;
  assert.equal(packageJson.imports["#wasm-source"].default, browserSource);
  const literal = /new URL\(\s*["'`][^"'`]*batch_pacer_bg\.wasm(\?[^"'`]*)?["'`]\s*,\s*import\.meta\.url/g;
  // Every module the package ships (its "files" list), so that a new module is covered too.
  const shipped = packageJson.files.filter((file) => file.startsWith("js/") && file.endsWith(".js"));
  const graph = [...new Set([...shipped, "pkg/batch_pacer.js", "pkg/inline-wasm.js", "pkg/inline-wasm-deflated.js", browserSource.replace(/^\.\//, "")])]
    .filter((file) => file !== "js/wasm-source-node.js"); // Node-only by design (the "node" condition)
  const found = graph.flatMap((file) => (read(file).match(literal) ?? []).map(() => file));
  assert.deepEqual(found, [browserSource.replace(/^\.\//, "")], "the only URL of the .wasm a bundler can see");
  for (const file of graph) assert.doesNotMatch(read(file), /from\s*["']node:/, `${file} imports a Node built-in`);
  assert.doesNotMatch(read("pkg/batch_pacer.js"), /import\.meta\.url/, "the glue's own default URL is gone");
});

test("batch-pacer/inline's module gzips to about the .wasm's gzip size (not plain base64's 1.3x)", () => {
  const gz = (file) => gzipSync(readFileSync(path.join(packageDir, file)), { level: 9 }).length;
  const wasm = gz("pkg/batch_pacer_bg.wasm");
  const inline = gz("pkg/inline-wasm-deflated.js");
  assert.ok(inline <= wasm * 1.05 + 2048, `inline ${inline} B gzip against the .wasm's ${wasm} B`);
});

test("batch-pacer/inline's inflater decodes stored, fixed and dynamic blocks as zlib writes them", async (t) => {
  // The shipped module, with other deflated data in place of the .wasm's.
  const source = readFileSync(path.join(packageDir, "pkg", "inline-wasm-deflated.js"), "utf8");
  const dir = mkdtempSync(path.join(tmpdir(), "batch-pacer-inflate-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const inputs = {
    random: randomBytes(70_000),
    repetitive: Buffer.from("paragraph ".repeat(9000) + "end"),
    empty: Buffer.alloc(0),
    oneByte: Buffer.from([42]),
    zeros: Buffer.alloc(100_000),
  };
  let n = 0;
  for (const [name, data] of Object.entries(inputs)) {
    for (const strategy of [constants.Z_DEFAULT_STRATEGY, constants.Z_FIXED, constants.Z_HUFFMAN_ONLY, constants.Z_RLE]) {
      for (const level of [0, 1, 9]) {
        const packed = deflateRawSync(data, { level, strategy });
        const replaced = source
          .replace(/const SIZE = \d+;/, `const SIZE = ${data.length};`)
          .replace(/"[A-Za-z0-9+/=]{64,}"/, JSON.stringify(packed.toString("base64")));
        const file = path.join(dir, `case-${n++}.mjs`);
        writeFileSync(file, replaced);
        const { wasmBytes } = await import(pathToFileURL(file).href);
        assert.ok(Buffer.from(wasmBytes()).equals(data), `${name}, strategy ${strategy}, level ${level}`);
      }
    }
  }
  // Corrupt data fails loudly instead of returning wrong bytes.
  const bad = source.replace(/"[A-Za-z0-9+/=]{64,}"/, JSON.stringify(Buffer.from([0xff, 0xff, 0xff, 0xff]).toString("base64")));
  writeFileSync(path.join(dir, "bad.mjs"), bad);
  const { wasmBytes } = await import(pathToFileURL(path.join(dir, "bad.mjs")).href);
  assert.throws(() => wasmBytes(), /inline module is (corrupt|truncated)/);
});
