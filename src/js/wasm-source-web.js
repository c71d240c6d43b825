// Where `init()` finds the .wasm in browsers, workers and extension service workers (the
// "browser", "worker" and "default" conditions of `#wasm-source` in package.json): beside
// this file. Written as `new URL("literal", import.meta.url)`, which Vite, WXT, webpack,
// Rollup plugins and Parcel recognise: they emit the .wasm with the bundle (or inline
// it) and rewrite the URL. This is the package's only such reference to the .wasm.
import { noBaseUrlError } from "./load-errors.js";

export function wasmSource() {
  try {
    return new URL("../pkg/batch_pacer_bg.wasm", import.meta.url);
  } catch (error) {
    // An IIFE or classic-script bundle has no import.meta.url to resolve against.
    throw noBaseUrlError(error);
  }
}
