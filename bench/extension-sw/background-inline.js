// background.js with the core inline (batch-pacer/inline-wasm): its bytes arrive with the
// worker's scripts and `initSync` compiles them, so no .wasm is fetched. Timed the same way.
import { initSync, BatchPacer } from "./batch-pacer/js/index.js";
import { wasmBytes } from "./batch-pacer/pkg/inline-wasm.js";

const evaluatedMs = performance.now();

const start = performance.now();
let coldStart;
try {
  initSync(wasmBytes());
  const initialised = performance.now();
  const pacer = new BatchPacer((request) => Promise.resolve(request.text));
  const constructed = performance.now();
  pacer.dispose();
  coldStart = {
    timeOrigin: performance.timeOrigin,
    evaluatedMs,
    initMs: initialised - start,
    constructMs: constructed - initialised,
  };
} catch (error) {
  coldStart = { timeOrigin: performance.timeOrigin, error: String(error?.stack ?? error) };
}
self.coldStart = coldStart;

chrome.runtime.onMessage.addListener((message, _sender, sendResponse) => {
  if (message?.type !== "coldStart") return false;
  sendResponse(coldStart);
  return false;
});
