// What both bench backgrounds share: each times its own cold start and keeps the figures
// in `self.coldStart`; a runtime message (which also wakes a stopped worker) answers
// with them once they are in.
import { BatchPacer } from "./batch-pacer/js/index.js";

/**
 * Registers the message listener (synchronously, as an MV3 worker must) and times
 * `initialise()` (awaited) and the constructor. `evaluatedMs`: time from the worker's
 * start (its time origin) to its module graph evaluated, the package's modules read from
 * the extension package and run.
 */
export function timeColdStart(evaluatedMs, initialise) {
  // Started here, synchronously, so the figures describe the worker's own start and not
  // the event that woke it.
  const coldStart = measure(evaluatedMs, initialise);
  chrome.runtime.onMessage.addListener((message, _sender, sendResponse) => {
    if (message?.type !== "coldStart") return false;
    coldStart.then(sendResponse);
    return true; // answers asynchronously
  });
}

async function measure(evaluatedMs, initialise) {
  try {
    const start = performance.now();
    await initialise();
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
