// The bench extension's background, shaped like a translation extension's MV3 worker:
// batch-pacer imported statically from the extension's own files, no top-level await,
// listeners registered synchronously. It times its own cold start and keeps the figures
// in `self.coldStart`; a runtime message (which also wakes a stopped worker) answers
// with them once they are in. This one loads the core with `init()`, which fetches the
// .wasm; background-inline.js takes it from batch-pacer/inline-wasm.
import init, { BatchPacer } from "./batch-pacer/js/index.js";

// Time from the worker's start (its time origin) to its module graph evaluated: the
// package's modules read from the extension package and run.
const evaluatedMs = performance.now();

// Started here, synchronously, so the figures describe the worker's own start and not
// the event that woke it.
const coldStart = timeColdStart();

chrome.runtime.onMessage.addListener((message, _sender, sendResponse) => {
  if (message?.type !== "coldStart") return false;
  coldStart.then(sendResponse);
  return true; // answers asynchronously
});

async function timeColdStart() {
  try {
    const start = performance.now();
    await init();
    const initialised = performance.now();
    const pacer = new BatchPacer((request) => Promise.resolve(request.text));
    const constructed = performance.now();
    pacer.dispose();
    self.coldStart = {
      timeOrigin: performance.timeOrigin,
      evaluatedMs,
      initMs: initialised - start,
      constructMs: constructed - initialised,
    };
  } catch (error) {
    self.coldStart = { timeOrigin: performance.timeOrigin, error: String(error?.stack ?? error) };
  }
  return self.coldStart;
}
