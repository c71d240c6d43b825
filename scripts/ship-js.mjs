// Writes the JS the package ships, minified: src/js/*.js into js/ (with the .d.ts files
// copied as written), and, in place, the glue wasm-bindgen writes into pkg/ with its copies
// of the binding's snippets (pkg/snippets/). Every entry loads these files; their comments
// and long local names were 40% of the gzipped size of what `import` + `init()` loads
// besides the .wasm. The commented sources are where they are read and edited: src/js/,
// src/wasm/*.js and the Rust code.
//
// src/js/ is written as it ships: its relative imports (`../pkg/batch_pacer.js`) resolve
// from js/, the package's folder, so the sources run only as built.
//
// Names are kept where code can see them: classes (`BatchPacer.name`, an error's
// constructor in a stack) and functions (`openAIProvider.name`). Exports, import paths and
// every `new URL(..., import.meta.url)` stay as written, so bundlers see the same graph.
//
//   node scripts/ship-js.mjs      (run by scripts/build.sh after patch-glue.mjs)
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { minify } from "terser";

const OPTIONS = {
  module: true,
  ecma: 2020,
  compress: { passes: 2 },
  mangle: true,
  keep_classnames: true,
  keep_fnames: true,
  format: { comments: false },
};

/** `source`, an ES module, minified; `name` says which file failed. */
export async function minifyModule(source, name) {
  try {
    const { code } = await minify(source, OPTIONS);
    if (typeof code !== "string" || code.length === 0) throw new Error("no output");
    return code;
  } catch (error) {
    throw new Error(`${name}: ${error.message}`);
  }
}

async function minifyFile(from, to, name) {
  writeFileSync(to, await minifyModule(readFileSync(from, "utf8"), name));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const repo = fileURLToPath(new URL("../", import.meta.url));
  const sources = join(repo, "src", "js");
  const shipped = join(repo, "js");
  const pkg = join(repo, "pkg");

  rmSync(shipped, { recursive: true, force: true });
  mkdirSync(shipped);
  for (const file of readdirSync(sources)) {
    if (file.endsWith(".d.ts")) copyFileSync(join(sources, file), join(shipped, file));
    else if (file.endsWith(".js")) await minifyFile(join(sources, file), join(shipped, file), `src/js/${file}`);
  }
  const generated = [
    "batch_pacer.js",
    ...readdirSync(join(pkg, "snippets"), { recursive: true })
      .filter((file) => file.endsWith(".js"))
      .map((file) => join("snippets", file)),
  ];
  for (const file of generated) await minifyFile(join(pkg, file), join(pkg, file), `pkg/${file}`);
}
