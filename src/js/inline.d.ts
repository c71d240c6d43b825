// Type definitions for `batch-pacer/inline` (file js/inline.js): everything `batch-pacer`
// exports, with the WebAssembly module inside the JavaScript, initialised on import.

/**
 * `batch-pacer/inline` exports the same names as `batch-pacer` (it is the same module
 * instance: a pacer built from either import is the same class). Importing it initialises
 * the core synchronously from the module inline, with no URL, no fetch and no `.wasm`
 * beside the bundle, so toolchains that cannot carry assets (esbuild, `bun build`, IIFE
 * output, WXT 0.20) need no configuration, and an MV3 service worker can build its pacers
 * at top level.
 *
 * Cost: the module travels as deflated base64 plus a small inflater, about as large as
 * the `.wasm` once gzipped (the store and servers gzip scripts), and decoding it takes a
 * few milliseconds at each start.
 *
 * A failure on import (a CSP without `'wasm-unsafe-eval'`) does not throw, since a throw
 * would stop a service worker before it registers its listeners: it is logged, `init()`
 * rejects with it, and `new BatchPacer()` throws a `PacerError` `not_initialized` that
 * says what to do.
 *
 * `init()` resolves at once when the import initialised the core, and tries again
 * otherwise (from `source` when given).
 *
 * @example
 * import { BatchPacer } from "batch-pacer/inline";
 * const pacer = new BatchPacer(provider); // at top level: already initialised
 */
export * from "./index.js";
export { default } from "./index.js";
