// Types of the package-internal `#wasm-source` (js/wasm-source-*.js, one per runtime):
// what `init()` loads when it is given no source.

/** A URL of the .wasm (browsers), or its bytes (Node.js, Bun, Deno). */
export function wasmSource(): URL | Uint8Array;
