// Removes the comments from the JS that wasm-bindgen writes into pkg/: the glue
// (pkg/batch_pacer.js, whose comments are the Rust doc comments of the exports and notes
// on its own casts) and its copies of the binding's snippets (pkg/snippets/). Every entry
// loads these files, and their comments were half of their gzipped size (3.9 KB). The
// commented sources stay where they are read and edited: src/wasm/*.js, js/ and the Rust
// code; the package's own js/ files ship as written.
//
// Only whole-line comments go: a line that is a `//` comment, and a `/* ... */` block
// from the start of a line to the end of a line. A comment after code on the same line
// stays. The files have no multi-line template literal, where such a line would be text;
// the script fails rather than guess if one ever appears, or if a block comment ends
// before code on its last line.
//
//   node scripts/strip-comments.mjs      (run by scripts/build.sh after patch-glue.mjs)
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("../pkg/", import.meta.url));

/** `source` without its whole-line comments; throws where a line's role is unclear. */
export function stripComments(source, name) {
  const kept = [];
  let inBlock = false;
  for (const [index, line] of source.split("\n").entries()) {
    const where = `${name}:${index + 1}`;
    const trimmed = line.trim();
    if (inBlock) {
      if (trimmed.includes("*/")) {
        if (!trimmed.endsWith("*/")) throw new Error(`${where}: code after the end of a block comment`);
        inBlock = false;
      }
      continue;
    }
    if (trimmed.startsWith("//")) continue;
    if (trimmed.startsWith("/*")) {
      const end = trimmed.indexOf("*/", 2);
      if (end === -1) inBlock = true;
      else if (end + 2 !== trimmed.length) throw new Error(`${where}: code after a block comment`);
      continue;
    }
    if ((line.match(/`/g) ?? []).length % 2 === 1) throw new Error(`${where}: a template literal spans lines`);
    kept.push(line);
  }
  if (inBlock) throw new Error(`${name}: a block comment does not end`);
  return kept.join("\n");
}

const files = [
  "batch_pacer.js",
  ...readdirSync(join(pkg, "snippets"), { recursive: true })
    .filter((file) => file.endsWith(".js"))
    .map((file) => join("snippets", file)),
];
for (const file of files) {
  const path = join(pkg, file);
  writeFileSync(path, stripComments(readFileSync(path, "utf8"), `pkg/${file}`));
}
