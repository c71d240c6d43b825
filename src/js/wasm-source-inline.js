// Where `init()` finds the .wasm in Deno (the "deno" condition of `#wasm-source` in
// package.json): inline, so that a script runs without -R (--allow-read), which reading
// the file from node_modules would need.
import { wasmBytes } from "../pkg/inline-wasm.js";

export function wasmSource() {
  return wasmBytes();
}
