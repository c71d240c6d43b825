// The bench extension's background, shaped like a translation extension's MV3 worker:
// batch-pacer imported statically from the extension's own files, no top-level await,
// listeners registered synchronously. This one loads the core with `init()`, which
// fetches the .wasm; background-inline.js takes it from batch-pacer/inline-wasm.
import init from "./batch-pacer/js/index.js";
import { timeColdStart } from "./cold-start.js";

timeColdStart(performance.now(), () => init());
