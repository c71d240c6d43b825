// What a failed load of the WebAssembly module becomes: a PacerError `not_initialized`
// whose message says what to do, with the original error as `cause`. Browsers, bundlers
// and runtimes fail in their own words (a CSP CompileError, "Failed to fetch", a 404,
// "Invalid URL", a missing read permission), and none of those words names the fix.
import { PacerError } from "./errors.js";

/** The manifest line (Manifest V3) that lets extension pages compile WebAssembly. */
export const CSP_MANIFEST_LINE =
  `"content_security_policy": {"extension_pages": "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"}`;

const CSP_MANIFEST_V2_LINE = `"content_security_policy": "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"`;

export const WASM_EXPORT = "batch-pacer/batch_pacer_bg.wasm";

const INLINE_HINT =
  'or import from "batch-pacer/inline" instead, which carries the module inside the JavaScript and initialises on import, ' +
  'or call initSync(wasmBytes()) with wasmBytes from "batch-pacer/inline-wasm"';

const fail = (message, cause) => new PacerError("not_initialized", `batch-pacer: ${message}`, { cause });

const messageOf = (error) => {
  try {
    return String(error?.message ?? error);
  } catch {
    return "";
  }
};

export function cspError(cause) {
  return fail(
    "the Content Security Policy forbids compiling WebAssembly. In an extension, add 'wasm-unsafe-eval' to the manifest's " +
      `content_security_policy.extension_pages: ${CSP_MANIFEST_LINE} (Manifest V2: ${CSP_MANIFEST_V2_LINE}); ` +
      "in a web page, allow 'wasm-unsafe-eval' in script-src " +
      `(${messageOf(cause)})`,
    cause,
  );
}

export function missingWasmError(where, detail, cause) {
  return fail(
    `the WebAssembly module was not found${where ? ` at ${where}` : ""} (${detail}): the bundle left batch_pacer_bg.wasm behind. ` +
      `Copy the file the package exports as "${WASM_EXPORT}" next to the bundle (or pass its URL to init(url)), ${INLINE_HINT}`,
    cause,
  );
}

export function noBaseUrlError(cause) {
  return fail(
    "init() cannot tell where batch_pacer_bg.wasm is: this bundle has no import.meta.url (an IIFE or classic script). " +
      `Copy the file the package exports as "${WASM_EXPORT}" into the extension and pass its URL to init(url), ` +
      `e.g. init(chrome.runtime.getURL("batch_pacer_bg.wasm")), ${INLINE_HINT} (${messageOf(cause)})`,
    cause,
  );
}

/** `Node.js vX` in a Node.js older than 20, else null. */
function unsupportedNode() {
  const version = globalThis.process?.versions?.node;
  if (typeof version !== "string" || Number(version.split(".")[0]) >= 20) return null;
  return `Node.js ${globalThis.process.version}`;
}

export function nodeTooOldError(version, cause) {
  return fail(`this package needs Node.js 20 or later; this is ${version} (${messageOf(cause)})`, cause);
}

export function readPermissionError(cause) {
  return fail(
    "the runtime refused to read batch_pacer_bg.wasm: run Deno with -R (--allow-read), " +
      `${INLINE_HINT} (${messageOf(cause)})`,
    cause,
  );
}

/**
 * The PacerError for any error of a load. `where` is the URL fetched, when one was.
 */
export function loadError(cause, where) {
  if (cause instanceof PacerError) return cause;
  // Whatever failed, in a Node.js the package does not support the version is the cause
  // to fix first (the file may well be there: the read is not what fails).
  const oldNode = unsupportedNode();
  if (oldNode) return nodeTooOldError(oldNode, cause);
  const message = messageOf(cause);
  const name = cause?.name;
  if (/content.security.policy|unsafe-eval|wasm-eval|\bCSP\b/i.test(message)) return cspError(cause);
  if (/Requires read access|allow-read|NotCapable|PermissionDenied/i.test(`${name} ${message}`)) {
    return readPermissionError(cause);
  }
  if (name === "TypeError" && /fetch|network|load failed/i.test(message)) {
    return missingWasmError(where, message, cause);
  }
  if (/Invalid URL|not a valid URL|URL constructor/i.test(message)) return noBaseUrlError(cause);
  if (/magic|00 61 73 6d/i.test(message)) {
    if (where) return missingWasmError(where, `what came back is not WebAssembly: ${message}`, cause);
    return fail(`the bytes given are not a WebAssembly module (${message}): pass the bytes of batch_pacer_bg.wasm`, cause);
  }
  if (name === "RangeError" && /main thread|over the limit|4KB|too large/i.test(message)) {
    return fail(
      `this page refuses to compile the module synchronously on its main thread (${message}): await init() instead of initSync(), ` +
        "or call initSync() in a worker",
      cause,
    );
  }
  if (name === "CompileError" || name === "LinkError") {
    return fail(
      `the module does not compile here (${message}): pass the bytes of the .wasm shipped in this same package version, ` +
        "in an engine with WebAssembly reference types and bulk memory (Node.js 20+, Chrome/Edge 96+, Firefox 91+, Safari 15+)",
      cause,
    );
  }
  return fail(`the WebAssembly module could not be loaded (${message})`, cause);
}
