// Where `init()` finds the .wasm in browsers, workers and extension service workers (the
// "browser", "worker" and "default" conditions of `#wasm-source` in package.json): beside
// this file. Written as `new URL("literal", import.meta.url)`, which Vite, WXT, webpack,
// Rollup plugins and Parcel recognise: they emit the .wasm with the bundle and rewrite
// the URL. This is the package's only such reference to the .wasm.
//
// `?no-inline` is Vite's word for "emit this as a file": WXT builds a background in
// Vite's library mode, which otherwise inlines every asset, here the whole .wasm as
// base64 (1.3x its gzip size, in the JavaScript). Servers, extension URLs and other
// bundlers ignore the query.
import { noBaseUrlError } from "./load-errors.js";

export function wasmSource() {
  try {
    return new URL("../pkg/batch_pacer_bg.wasm?no-inline", import.meta.url);
  } catch (error) {
    // An IIFE or classic-script bundle has no import.meta.url to resolve against.
    throw noBaseUrlError(error);
  }
}
