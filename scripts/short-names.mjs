// Shortens the names the .wasm and its glue share: every import becomes module "a" with a
// name of one or two letters, and every export too. wasm-bindgen names imports after the
// JS they call plus a hash (`__wbg_clearTimeout_3629d6209dfcc46e`), exports after the Rust
// item (`pacercore_translate`); both the .wasm and the glue spell each of them, and the
// hashes do not compress. Shortened: the .wasm ~2 KB smaller gzipped, the glue smaller too.
//
// wasm-opt renames them (--minify-imports-and-exports-and-modules) in a last pass with the
// package's own flags (Cargo.toml), and prints the old and new names; this script rewrites
// the glue by that list. The glue's import object keeps its functions, under their new
// names; the snippets' functions (imported by the glue as modules) are referenced from it.
// The build fails if the glue is not shaped as expected, rather than ship a module whose
// imports or exports the glue does not find.
//
//   node scripts/short-names.mjs      (run by scripts/build.sh after patch-glue.mjs; the
//                                      size floor's build runs shortenNames too)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));

/** The package's wasm-opt flags, from Cargo.toml (wasm-pack's metadata). */
export function wasmOptFlags(repo = REPO) {
  const manifest = readFileSync(join(repo, "Cargo.toml"), "utf8");
  const line = manifest.match(/^wasm-opt\s*=\s*(\[.*\])\s*$/m);
  if (!line) throw new Error("no wasm-opt flags in Cargo.toml");
  return JSON.parse(line[1]);
}

/** Renames the imports and exports of `wasm` and rewrites `glue` (the file wasm-bindgen
 * wrote for it, module name `bgModule`) to match. Both files are rewritten in place. */
export function shortenNames({ wasm, glue, bgModule, repo = REPO }) {
  const wasmOpt = join(repo, "node_modules", ".bin", "wasm-opt");
  // The target features section is read here (it tells wasm-opt which instructions the
  // module may hold) and stripped: engines do not read it. The package's flags run once
  // more with the renaming: the short names let -Oz fold a little more (249 bytes gzipped
  // against the renaming alone, for ~6 s of build).
  const printed = execFileSync(
    wasmOpt,
    [wasm, ...wasmOptFlags(repo), "--minify-imports-and-exports-and-modules", "--strip-target-features", "-o", wasm],
    { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 16 << 20 },
  );
  // With --converge the pass may run, and print its list, more than once: each later list
  // renames the names of the one before.
  const renamed = lists(printed).reduce(compose);
  const module = onlyImportModule(readFileSync(wasm));
  writeFileSync(glue, rewriteGlue(readFileSync(glue, "utf8"), renamed, module, bgModule));
}

/** The JSON lists of renamed names that wasm-opt printed, in order. */
function lists(printed) {
  const found = [];
  for (let at = printed.indexOf("{\n"); at >= 0; at = printed.indexOf("{\n", at)) {
    const end = printed.indexOf("\n}", at) + 2;
    found.push(JSON.parse(printed.slice(at, end)));
    at = end;
  }
  if (found.length === 0) throw new Error("wasm-opt printed no list of renamed names");
  return found;
}

/** `first`'s renames followed by `then`'s: [module, name, short] and [name, short]. */
function compose(first, then) {
  const importAfter = new Map(then.imports.map(([module, name, short]) => [`${module}\0${name}`, short]));
  const exportAfter = new Map(then.exports.map(([name, short]) => [name, short]));
  // A second run sees one module: the first run's.
  const [module] = new Set(then.imports.map(([m]) => m));
  return {
    imports: first.imports.map(([from, name, short]) => [from, name, importAfter.get(`${module}\0${short}`) ?? short]),
    exports: first.exports.map(([name, short]) => [name, exportAfter.get(short) ?? short]),
  };
}

/** The one module every import of the renamed .wasm names. */
function onlyImportModule(bytes) {
  const modules = new Set(WebAssembly.Module.imports(new WebAssembly.Module(bytes)).map((i) => i.module));
  if (modules.size !== 1) throw new Error(`expected one import module after renaming, found ${[...modules].join(", ")}`);
  return [...modules][0];
}

function rewriteGlue(source, { imports, exports }, module, bgModule) {
  let glue = source;
  const fail = (what) => {
    throw new Error(`the glue: ${what}`);
  };
  // `return { __proto__: null, "<module>": importN, ... };` ends __wbg_get_imports.
  const table = glue.match(/return \{\s*__proto__: null,((?:\s*"[^"]+": import\d+,)+)\s*\};/);
  if (!table) fail("its table of import modules was not found");
  const objectOf = new Map([...table[1].matchAll(/"([^"]+)": (import\d+)/g)].map((m) => [m[1], m[2]]));
  const bgObject = objectOf.get(bgModule) ?? fail(`no import object for ${bgModule}`);
  // The glue's own imports: keys of `const import0 = { ... }`, renamed in place.
  const snippetEntries = [];
  for (const [from, name, short] of imports) {
    if (from === bgModule) {
      const key = new RegExp(`(\\n\\s+)${name}(: function\\()`, "g");
      const found = glue.match(key)?.length ?? 0;
      if (found !== 1) fail(`import ${name} is defined ${found} times, not once`);
      glue = glue.replace(key, (_, before, after) => `${before}${short}${after}`);
    } else {
      const object = objectOf.get(from) ?? fail(`no import object for ${from}`);
      snippetEntries.push(`${short}: ${object}.${name}`);
    }
  }
  const opening = `const ${bgObject} = {\n        __proto__: null,\n`;
  if (!glue.includes(opening)) fail(`the opening of ${bgObject} was not found`);
  glue = glue.replace(opening, () => `${opening}${snippetEntries.map((entry) => `        ${entry},\n`).join("")}`);
  glue = glue.replace(table[0], () => `return { __proto__: null, ${JSON.stringify(module)}: ${bgObject} };`);
  // Exports, read as `wasm.<name>`.
  const shortNames = new Set();
  for (const [name, short] of exports) {
    // A replacement function: a short name may hold `$`, which a replacement string reads.
    glue = glue.replace(new RegExp(`\\bwasm\\.${name}\\b`, "g"), () => `wasm.${short}`);
    shortNames.add(short);
  }
  for (const [, name] of glue.matchAll(/\bwasm\.([\w$]+)/g)) {
    if (!shortNames.has(name)) fail(`wasm.${name} is no export of the renamed module`);
  }
  return glue;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  shortenNames({
    wasm: join(REPO, "pkg", "batch_pacer_bg.wasm"),
    glue: join(REPO, "pkg", "batch_pacer.js"),
    bgModule: "./batch_pacer_bg.js",
  });
}
