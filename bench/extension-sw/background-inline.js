// background.js with the core inline (batch-pacer/inline-wasm): its bytes arrive with the
// worker's scripts and `initSync` compiles them, so no .wasm is fetched.
import { initSync } from "./batch-pacer/js/index.js";
import { wasmBytes } from "./batch-pacer/pkg/inline-wasm.js";
import { timeColdStart } from "./cold-start.js";

timeColdStart(performance.now(), () => initSync(wasmBytes()));
