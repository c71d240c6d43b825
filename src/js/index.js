// batch-pacer: the ESM entry point. It loads the WebAssembly core and wraps it in the
// BatchPacer class; every rule of the contract is decided inside the core.
import wasmInit, {
  initSync as wasmInitSync,
  PacerCore,
  PacerBudget,
  setup,
  cacheKey as coreCacheKey,
} from "../pkg/batch_pacer.js";
import { PacerError } from "./errors.js";
import { loadError, missingWasmError, noBaseUrlError } from "./load-errors.js";
import { limitsFromHeaders, retryAfterFromHeaders } from "./limits-from-headers.js";
import { quotaFromBody, retryDelayFromBody } from "./error-body.js";

export { PacerError } from "./errors.js";
export { openAIProvider } from "./openai.js";
export { routeProviders } from "./route-providers.js";
export { deeplProvider } from "./deepl-provider.js";
export { aiSdkProvider } from "./ai-sdk-provider.js";
export { limitsFromHeaders } from "./limits-from-headers.js";
export { indexedDBCache } from "./indexeddb-cache.js";

/** The default options (the same values the core applies when an option is omitted). */
export const DEFAULTS = Object.freeze({
  rate: 8,
  capacity: 60,
  maxInFlight: 0,
  maxCharactersPerBatch: 1000,
  maxItemsPerBatch: 4,
  batchDelayMs: 100,
  maxBatchRetries: 3,
  fallbackToIndividual: true,
  timeoutMs: 20000,
  timeoutPerCharacterMs: 15,
  maxRetries: 2,
  baseRetryDelayMs: 1000,
  maxRateLimitRetries: 10,
  adaptiveRate: true,
  cacheEntries: 1000,
  segmentFormat: "markers",
  adaptiveBatching: true,
  fallbackAfterMs: 10000,
  tokensPerMinute: 0,
});

let ready = false;
let loading = null;
/** Writes item texts into the core's input buffer (see `#enqueue`). */
let input = null;

function markReady() {
  input = setup(
    ({ code, message, status, cause, retryAt, option }) => new PacerError(code, message, { status, cause, retryAt, option }),
    // What failures are read with (the core's call-host.js): the same readers as exported.
    {
      limits: limitsFromHeaders,
      retryAfterMs: retryAfterFromHeaders,
      bodyRetryAfterMs: retryDelayFromBody,
      bodyQuota: quotaFromBody,
    },
  );
  ready = true;
}

/** The two 32-bit words of each new core's seed. */
const seedWords = new Uint32Array(2);

/**
 * 64 random bits for a new core: they seed its retry jitter and key its in-memory item
 * keys against crafted collisions. In a fresh Node process both the global crypto and
 * node:crypto take about 3 ms to load, and only code able to observe Math.random could
 * craft collisions (in Node, code of the same process): there, and wherever Web Crypto
 * is missing, Math.random fills them.
 */
function randomSeed() {
  if (!isNode() && typeof globalThis.crypto?.getRandomValues === "function") {
    globalThis.crypto.getRandomValues(seedWords);
  } else {
    seedWords[0] = Math.random() * 2 ** 32;
    seedWords[1] = Math.random() * 2 ** 32;
  }
  return seedWords;
}

function isNode() {
  return typeof process === "object" && typeof process.versions?.node === "string";
}

/**
 * Where `init()` finds the .wasm when this file is imported by its path, as the demo
 * extension and pages without a bundler do. The package's own entry (js/main.js, what
 * `import "batch-pacer"` resolves to) names the file to bundlers itself. The path is in a
 * variable on purpose: a bundler that saw `new URL("literal", import.meta.url)` here would
 * emit (or inline) the .wasm once more, and into `batch-pacer/inline` bundles too.
 */
const WASM_FILE = "../pkg/batch_pacer_bg.wasm";

function sourceByPath() {
  if (isNode()) {
    // Node 20.16+ only; the package's entry reads the file with a static node:fs import
    // from 20.0 on. A static import here would break browsers.
    if (typeof process.getBuiltinModule !== "function") {
      const cause = new Error(`process.getBuiltinModule is missing in Node.js ${process.version}`);
      throw new PacerError(
        "not_initialized",
        "batch-pacer: js/index.js, imported by its path, reads the .wasm only in Node.js 20.16 and later: " +
          'import "batch-pacer" by its package name (Node.js 20.0 and later), or call initSync(wasmBytes()) with ' +
          'wasmBytes from "batch-pacer/inline-wasm"',
        { cause },
      );
    }
    return process.getBuiltinModule("node:fs").readFileSync(new URL(WASM_FILE, import.meta.url));
  }
  try {
    return new URL(WASM_FILE, import.meta.url);
  } catch (error) {
    throw noBaseUrlError(error);
  }
}

/** A load's error, remembered so that later uses say why the core is missing. */
let loadFailure = null;

const isUrlLike = (source) =>
  typeof source === "string" || source instanceof URL ||
  (typeof Request === "function" && source instanceof Request);

/**
 * Loads the WebAssembly module. In a browser, worker or extension service worker it
 * fetches the .wasm shipped beside the module; in Node it reads it from disk.
 * A second call is a no-op. A failed load rejects with a PacerError `not_initialized`
 * that says what to do, the original error as `cause`; it may be retried.
 * `source` may also be a function returning the source, called inside the load so that
 * its errors are reported alike (the package's entries pass their default this way).
 * @param {RequestInfo | URL | Response | BufferSource | WebAssembly.Module | (() => unknown)} [source]
 */
export default function init(source) {
  if (ready) return Promise.resolve();
  if (!loading) {
    loading = (async () => {
      let where;
      try {
        let from = source === undefined ? sourceByPath() : typeof source === "function" ? source() : source;
        // The package's own bytes (Node, Deno, Bun read them from disk or carry them):
        // compiled synchronously, before anything reads the global Response, whose first
        // read makes Node load its whole fetch implementation (measured: init 4.6 ms
        // instead of 26 ms). Bytes passed to init(bytes) load asynchronously, as asked.
        if (source === undefined && (from instanceof ArrayBuffer || ArrayBuffer.isView(from))) {
          wasmInitSync({ module: from });
          markReady();
          loadFailure = null;
          return;
        }
        if (isUrlLike(from)) {
          where = String(from.url ?? from);
          from = await fetch(from);
        } else if (typeof from?.then === "function") {
          from = await from; // a fetch() the caller started
        }
        if (typeof Response === "function" && from instanceof Response) {
          where ??= from.url || undefined;
          if (!from.ok) {
            const status = `HTTP ${from.status} ${from.statusText}`.trim();
            throw missingWasmError(where, status, new Error(`${status} fetching ${where ?? "the .wasm"}`));
          }
        }
        await wasmInit({ module_or_path: from });
      } catch (error) {
        throw (loadFailure = loadError(error, where));
      }
      markReady();
      loadFailure = null;
    })();
    // A failed load (offline, wrong path) may be retried.
    loading.catch(() => { loading = null; });
  }
  return loading;
}

/**
 * Synchronous initialisation from the module's bytes or a compiled module.
 * @param {BufferSource | WebAssembly.Module} bytes
 */
export function initSync(bytes) {
  if (ready) return;
  if (loading) {
    // The load in flight would replace this module instance when it ends, and every
    // pacer built on this one would then call into a module that does not hold it.
    throw new PacerError("not_initialized", "initSync() was called while init() loads the module: await init() instead");
  }
  try {
    wasmInitSync({ module: bytes });
  } catch (error) {
    throw (loadFailure = loadError(error));
  }
  markReady();
  loadFailure = null;
}

function requireReady(what) {
  if (!ready) {
    if (loadFailure) {
      throw new PacerError("not_initialized", `${what} needs the module, which failed to load: ${loadFailure.message}`, {
        cause: loadFailure,
      });
    }
    throw new PacerError("not_initialized", `${what} needs the module: await init() (or call initSync) first`);
  }
}

/**
 * The cache key of an item: lowercase hex SHA-256 over its length-prefixed fields
 * (providerId, sourceLang, targetLang, context, llm, text, and scope when not empty).
 */
export function cacheKey(item) {
  requireReady("cacheKey()");
  return coreCacheKey(item !== null && typeof item === "object" ? plainItem(item) : item);
}

/** The fields the core checks in an item. */
const ITEM_FIELDS = ["text", "sourceLang", "targetLang", "providerId", "context", "llm", "scope", "priority", "signal", "onPartial"];

/**
 * An item's fields, each read once, into a plain object: a getter or proxy that throws is
 * `invalid_input` naming the field, with what it threw as `cause`.
 */
function plainItem(item) {
  const fields = {};
  for (const field of ITEM_FIELDS) {
    try {
      fields[field] = item[field];
    } catch (error) {
      throw new PacerError("invalid_input", `${field} could not be read: a getter or proxy threw (${messageOf(error)})`, {
        cause: error,
      });
    }
  }
  return fields;
}

/** The core budget behind each `sharedBudget()` handle. */
const budgetCores = new WeakMap();

/**
 * One request-and-token budget for several pacers that send to the same account (a page
 * pacer and a subtitle pacer): pass it as the `budget` option of each. Every call then
 * also takes from this budget, and the pacers share each provider's 429 pause, adaptive
 * rate, reported limits and daily block.
 * @param {{ rate?: number, capacity?: number, tokensPerMinute?: number }} [options]
 */
export function sharedBudget(options) {
  requireReady("sharedBudget()");
  const handle = Object.freeze(Object.create(SharedBudgetPrototype));
  budgetCores.set(handle, new PacerBudget(options));
  return handle;
}

/** What `sharedBudget()` returns: an opaque handle. */
const SharedBudgetPrototype = Object.freeze({ [Symbol.toStringTag]: "SharedBudget" });

/** A thrown value's message, for another message: never throws. */
function messageOf(error) {
  try {
    return String(error?.message ?? error);
  } catch {
    return typeof error;
  }
}

/**
 * The core budget of the `budget` option, read once (the core reads every other option
 * and leaves this one to this layer, which holds the budgets).
 */
function budgetOf(options) {
  if (options === null || typeof options !== "object") return undefined;
  let own;
  try {
    own = Object.hasOwn(options, "budget");
  } catch {
    // Options that cannot be read at all: the core says so, reading them.
    return undefined;
  }
  if (!own) return undefined;
  let budget;
  try {
    budget = options.budget;
  } catch (error) {
    throw new PacerError(
      "invalid_options",
      `option "budget" could not be read: a getter or proxy threw (${messageOf(error)})`,
      { option: "budget", cause: error },
    );
  }
  if (budget === undefined) return undefined;
  const core = budgetCores.get(budget);
  if (core === undefined) {
    const got = budget === null ? "null" : typeof budget;
    throw new PacerError("invalid_options", `budget must be a value returned by sharedBudget() (got ${got})`, {
      option: "budget",
    });
  }
  return core;
}

/** Registered compatibility combinations kept per pacer before they are forgotten. */
const MAX_COMPATS = 4096;

/**
 * Contexts (and scopes) longer than this take the full path: a context that changes with
 * every item (say, the previous paragraph) would only churn the table of combinations.
 */
const MAX_REGISTERED_CONTEXT = 256;

/** The map under `key` in `map`, made on first use. */
function childMap(map, key) {
  let child = map.get(key);
  if (child === undefined) map.set(key, (child = new Map()));
  return child;
}

/** Whether `signal.aborted` is true; a getter that throws counts as not aborted. */
function isAborted(signal) {
  try {
    return signal.aborted === true;
  } catch {
    return false;
  }
}

/** Whether `signal` is a not yet aborted `AbortSignal` (or look-alike). */
function isLiveSignal(signal) {
  try {
    return signal.aborted === false && typeof signal.addEventListener === "function";
  } catch {
    // A throwing getter: the core's own check names the field.
    return false;
  }
}

/** Paces and batches translation requests to one provider callback. */
export class BatchPacer {
  #core;
  /** providerId → sourceLang → targetLang → context → [id when llm, id when not]. */
  #compats = new Map();
  /** scope → the same, for items with a scope: unscoped items look up one map less. */
  #scopedCompats = new Map();
  #compatCount = 0;

  constructor(provider, options) {
    requireReady("new BatchPacer()");
    // Indexed, not destructured: destructuring a typed array runs its iterator.
    const seed = randomSeed();
    const budget = budgetOf(options);
    this.#core = new PacerCore(provider, options, seed[0], seed[1]);
    if (budget !== undefined) this.#core.shareBudget(budget);
  }

  /** Resolves with the item's translation; rejects with a PacerError. */
  translate(item) {
    return new Promise((resolve, reject) => {
      if (item === null || typeof item !== "object") {
        this.#core.translate(item, resolve, reject);
        return;
      }
      // Each field is read once, here: getters and proxies see one read. Read into
      // locals, not an object: most items never need one (see `#submit`).
      let text, sourceLang, targetLang, providerId, context, llm, scope, priority, signal, onPartial, meta;
      try {
        ({ text, sourceLang, targetLang, providerId, context, llm, scope, priority, signal, onPartial, meta } = item);
      } catch (error) {
        this.#core.rejectUnreadable(error, reject);
        return;
      }
      if (signal === undefined || signal === null) {
        this.#submit(text, sourceLang, targetLang, providerId, context, llm, scope, priority, signal, onPartial, meta, resolve, reject);
        return;
      }
      // Forward the signal's abort to the core, and stop listening once settled. The
      // signal's methods are the caller's code: the listener is added before the item is
      // queued (one that throws rejects the item, and no provider sees it), and a
      // removeEventListener that throws leaves the outcome as it is.
      let settled = false;
      let ticket = 0;
      let listening = false;
      const onAbort = () => {
        if (ticket !== 0 && !settled) this.#core.abort(ticket);
      };
      const finish = (settle) => (value) => {
        if (settled) return;
        settled = true;
        if (listening) {
          try {
            signal.removeEventListener("abort", onAbort);
          } catch {
            // The listener stays; once the item has settled it does nothing.
          }
        }
        settle(value);
      };
      if (isLiveSignal(signal)) {
        try {
          signal.addEventListener("abort", onAbort, { once: true });
          listening = true;
        } catch (error) {
          this.#core.rejectSignal(error, reject);
          return;
        }
      }
      ticket = this.#submit(
        text, sourceLang, targetLang, providerId, context, llm, scope, priority, signal, onPartial, meta, finish(resolve),
        finish(reject),
      );
      // Code run by the core while it queued the item (onEvent, a provider) may have
      // aborted the signal before the ticket existed.
      if (ticket && !settled && listening && isAborted(signal)) onAbort();
    });
  }

  /**
   * Hands an item's fields to the core and returns its ticket (0 when it settled at
   * once). Fields of the expected types cross as the text and the id of the registered
   * compatibility fields; any others go through the core's full check, which names the
   * field that is wrong. Previews of a streamed reply go to the item's onPartial until it
   * settles; `meta` goes to the provider as it is.
   */
  #submit(text, sourceLang, targetLang, providerId, context, llm, scope, priority, signal, onPartial, meta, resolve, reject) {
    if (
      typeof text === "string" && typeof sourceLang === "string" && typeof targetLang === "string" &&
      typeof providerId === "string" && (context === undefined || (typeof context === "string" &&
      context.length <= MAX_REGISTERED_CONTEXT)) && (llm === undefined || typeof llm === "boolean") &&
      (scope === undefined || (typeof scope === "string" && scope.length <= MAX_REGISTERED_CONTEXT)) &&
      (priority === undefined || typeof priority === "number") &&
      (signal === undefined || signal === null || isLiveSignal(signal)) &&
      (onPartial === undefined || typeof onPartial === "function")
    ) {
      const compat = this.#compatId(providerId, sourceLang, targetLang, context ?? "", llm ?? true, scope ?? "");
      if (compat !== 0) {
        const ticket = this.#core.submit(input.write(text), compat, priority ?? 0, meta, resolve, reject);
        if (ticket && onPartial !== undefined) this.#core.watch(ticket, onPartial);
        return ticket;
      }
    }
    const fields = { text, sourceLang, targetLang, providerId, context, llm, scope, priority, signal, onPartial, meta };
    const ticket = this.#core.translate(fields, resolve, reject);
    if (ticket && typeof onPartial === "function") this.#core.watch(ticket, onPartial);
    return ticket;
  }

  #compatId(providerId, sourceLang, targetLang, context, llm, scope) {
    const byProvider = scope === "" ? this.#compats : childMap(this.#scopedCompats, scope);
    const byContext = childMap(childMap(childMap(byProvider, providerId), sourceLang), targetLang);
    let ids = byContext.get(context);
    if (ids === undefined) byContext.set(context, (ids = [0, 0]));
    const slot = llm ? 0 : 1;
    if (ids[slot] === 0) {
      if (this.#compatCount >= MAX_COMPATS) {
        // Pages with ever-new contexts must not grow the table without bound.
        this.#core.clearCompats();
        this.#compats.clear();
        this.#scopedCompats.clear();
        this.#compatCount = 0;
        return this.#compatId(providerId, sourceLang, targetLang, context, llm, scope);
      }
      // 0: the core is busy (a re-entrant call it cannot serve); the full path answers.
      ids[slot] = this.#core.registerCompat(providerId, sourceLang, targetLang, context, llm, scope);
      if (ids[slot] !== 0) this.#compatCount++;
    }
    return ids[slot];
  }

  /**
   * Paces a provider call that is not a translation (a page summary, a glossary lookup)
   * under the rules of `providerId`'s translation calls: `fn({ signal, attempt })` is
   * called once per try, and its value, whatever it is, resolves the returned promise.
   */
  run(providerId, fn, options) {
    return new Promise((resolve, reject) => {
      let priority, signal;
      if (options !== null && typeof options === "object") {
        try {
          ({ priority, signal } = options);
        } catch (error) {
          this.#core.rejectRunOptions(error, reject);
          return;
        }
      }
      // Read once, here: the core checks the plain copy.
      const plain = options !== null && typeof options === "object" ? { priority, signal } : options;
      // The signal's abort goes to the core until the run settles, as in `translate`.
      let settled = false;
      let ticket = 0;
      let listening = false;
      const onAbort = () => {
        if (ticket !== 0 && !settled) this.#core.abortRun(ticket);
      };
      const finish = (settle) => (value) => {
        if (settled) return;
        settled = true;
        if (listening) {
          try {
            signal.removeEventListener("abort", onAbort);
          } catch {
            // The listener stays; once the run has settled it does nothing.
          }
        }
        settle(value);
      };
      if (signal !== undefined && signal !== null && typeof fn === "function" && isLiveSignal(signal)) {
        try {
          signal.addEventListener("abort", onAbort, { once: true });
          listening = true;
        } catch (error) {
          this.#core.rejectSignal(error, reject);
          return;
        }
      }
      ticket = this.#core.run(providerId, fn, plain, finish(resolve), finish(reject));
      if (ticket && !settled && listening && isAborted(signal)) onAbort();
    });
  }

  /** Validates the whole patch, then applies it to queued work at once. */
  setOptions(patch) {
    // The core rejects a `budget` in the patch: it is set at construction only.
    this.#core.setOptions(patch);
  }

  /** The options in force (without clock, onEvent and cache). */
  get options() {
    return this.#core.options;
  }

  /**
   * Tokens, 429 pauses and adaptive rates with the wall-clock time, as plain JSON: pass it
   * as `restore` to a new BatchPacer in a restarted service worker.
   */
  snapshot() {
    return this.#core.snapshot();
  }

  /** Counters since construction and current gauges. */
  stats() {
    return this.#core.stats();
  }

  /**
   * Rejects every unsettled item with `disposed` and stops all timers. The core's memory
   * is given back at once (freed after the current call stack, which may be the core's
   * own callback), not when the garbage collector reaches the pacer: what a disposed
   * pacer still answers (stats, options, snapshot, `disposed` rejections) is kept here.
   */
  dispose() {
    const core = this.#core;
    if (core instanceof DisposedCore) return;
    core.dispose();
    let disposed;
    try {
      disposed = new DisposedCore(core);
    } catch {
      // Called from inside the core in a way it cannot serve: it stays until collected.
      return;
    }
    this.#core = disposed;
    queueMicrotask(() => core.free());
  }
}

/** A no-op provider, for the core that checks an options patch after dispose. */
const noProvider = () => "";

/**
 * What a disposed pacer answers once its core is freed: every item rejects `disposed`,
 * `stats()`, `options` and `snapshot()` are those at dispose (a snapshot carries its
 * wall time, so restoring it later counts the time since), and `setOptions` still checks
 * its patch as before.
 */
class DisposedCore {
  #stats;
  #options;
  #snapshot;
  #message;

  /** @param {PacerCore} core the disposed core, read before it is freed */
  constructor(core) {
    this.#stats = core.stats();
    this.#options = core.options;
    this.#snapshot = core.snapshot();
    core.rejectUnreadable(undefined, (error) => {
      this.#message = error.message;
    });
  }

  #reject(reject) {
    reject(new PacerError("disposed", this.#message));
    return 0;
  }

  translate(item, resolve, reject) {
    return this.#reject(reject);
  }

  submit(bytes, compat, priority, meta, resolve, reject) {
    return this.#reject(reject);
  }

  run(providerId, fn, options, resolve, reject) {
    return this.#reject(reject);
  }

  rejectRunOptions(error, reject) {
    this.#reject(reject);
  }

  rejectSignal(error, reject) {
    this.#reject(reject);
  }

  abortRun() {}

  rejectUnreadable(error, reject) {
    this.#reject(reject);
  }

  registerCompat() {
    return 0;
  }

  clearCompats() {}

  watch() {}

  abort() {}

  setOptions(patch) {
    // The same checks and messages as a live pacer's, on a core made for the purpose.
    const probe = new PacerCore(noProvider, this.#options, 0, 0);
    try {
      probe.setOptions(patch);
      this.#options = probe.options;
    } finally {
      probe.free();
    }
  }

  get options() {
    return structuredClone(this.#options);
  }

  snapshot() {
    return structuredClone(this.#snapshot);
  }

  stats() {
    return structuredClone(this.#stats);
  }

  dispose() {}
}
