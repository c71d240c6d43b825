// Removes the wasm-bindgen glue's default source of the .wasm from pkg/batch_pacer.js.
// The glue defaults to `new URL('batch_pacer_bg.wasm', import.meta.url)`, a second
// reference to the .wasm beside js/wasm-source-web.js's: Vite and WXT then inline the
// module twice, and `batch-pacer/inline` bundles would carry a dead copy of it.
// js/index.js always passes a source, so the default can go. The build fails if the glue
// ever words it differently, rather than ship the duplicate again.
//
//   node scripts/patch-glue.mjs        (run by scripts/build.sh after wasm-pack)
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("../pkg/batch_pacer.js", import.meta.url);
const glue = readFileSync(file, "utf8");
const line = "module_or_path = new URL('batch_pacer_bg.wasm', import.meta.url);";
if (!glue.includes(line)) throw new Error("pkg/batch_pacer.js: the glue's default URL of the .wasm was not found");
const patched = glue.replace(line, 'throw new Error("batch-pacer: the glue was asked to load without a source");');
if (patched.includes("import.meta.url")) throw new Error("pkg/batch_pacer.js: another import.meta.url remains");
writeFileSync(file, patched);
