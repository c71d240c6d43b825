// `batch-pacer/inline`: everything of `batch-pacer`, initialised on import from the module
// inline (pkg/inline-wasm-deflated.js, about the .wasm's size once gzipped). No URL, no
// fetch, no file beside the bundle: it suits the toolchains that cannot carry assets
// (esbuild, `bun build`, Rollup, IIFE bundles, WXT 0.20) and lets an MV3 service worker
// build its pacers at top level.
//
// A failure at import must not throw: a top-level throw would stop the whole service
// worker before it registers its listeners. It is kept instead (every later use throws a
// PacerError `not_initialized` that says why, `init()` rejects with it) and logged once.
import baseInit, { initSync } from "./index.js";
import { wasmBytes } from "../pkg/inline-wasm-deflated.js";

export * from "./index.js";

try {
  initSync(wasmBytes());
} catch (error) {
  if (error?.cause?.name === "RangeError") {
    // A page's main thread that refuses to compile this size synchronously: compile
    // asynchronously instead; `await init()` waits for it.
    baseInit(wasmBytes).catch(() => {});
  } else {
    console.error(error);
  }
}

/**
 * Resolves once the module is ready: at once after the initialisation on import, else
 * after one more try (from `source` when given), rejecting with a PacerError
 * `not_initialized` that says what to do.
 * @param {RequestInfo | URL | Response | BufferSource | WebAssembly.Module} [source]
 */
export default function init(source) {
  return baseInit(source === undefined ? wasmBytes : source);
}
