// Where `init()` finds the .wasm in Node.js and Bun (the "node" and "bun" conditions of
// `#wasm-source` in package.json): read from disk beside this file. A static node:fs
// import works from Node.js 20.0 on (process.getBuiltinModule only from 20.16), and no
// browser bundler ever sees it, since they resolve `#wasm-source` to wasm-source-web.js.
import { readFileSync } from "node:fs";
import { missingWasmError, nodeTooOldError, readPermissionError } from "./load-errors.js";

export function wasmSource() {
  const file = new URL("../pkg/batch_pacer_bg.wasm", import.meta.url);
  try {
    return readFileSync(file);
  } catch (error) {
    const major = Number(process.versions?.node?.split(".")[0]);
    if (major < 20) throw nodeTooOldError(`Node.js ${process.version}`, error);
    if (error?.code === "ENOENT") throw missingWasmError(file.href, error.message, error);
    if (error?.code === "EACCES" || /NotCapable|PermissionDenied/.test(error?.name)) throw readPermissionError(error);
    throw error;
  }
}
