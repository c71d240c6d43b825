// The package's entry, `import ... from "batch-pacer"`: everything of js/index.js, with
// an `init()` whose default source fits the runtime. package.json's `imports` picks the
// file behind `#wasm-source` by condition: Node.js and Bun read the .wasm from disk, Deno
// takes it inline, and browsers' bundlers see only a URL of the .wasm beside the module.
import baseInit from "./index.js";
import { wasmSource } from "#wasm-source";

export * from "./index.js";

/**
 * Loads the WebAssembly module; see js/index.d.ts.
 * @param {RequestInfo | URL | Response | BufferSource | WebAssembly.Module} [source]
 */
export default function init(source) {
  return baseInit(source === undefined ? wasmSource : source);
}
