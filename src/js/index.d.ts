// Type definitions for batch-pacer (the ESM entry `batch-pacer`, file js/index.js).
//
// The package paces and batches translation requests for browser extensions: a token
// bucket, a batch queue and a tolerant reply parser live in a WebAssembly core; this
// entry wraps them in one class, `BatchPacer`, driven by your own provider callback.

// ---------------------------------------------------------------------------------------
// BatchPacer
// ---------------------------------------------------------------------------------------

/**
 * Paces and batches translation requests to one provider callback.
 *
 * @example
 * import init, { BatchPacer, openAIProvider } from "batch-pacer";
 * await init();
 * const pacer = new BatchPacer(openAIProvider({ baseUrl, apiKey, model: "gpt-4o-mini" }), { rate: 2 });
 * const de = await pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "openai" });
 */
export class BatchPacer {
  /**
   * @param provider performs the provider calls; see {@link Provider}.
   * @param options see {@link BatchPacerOptions}; omitted options take their `DEFAULTS`.
   * @throws {PacerError} `not_initialized` before `init()`; `invalid_options` when the
   *   provider is not a function, an option is unknown or invalid, or `restore` is
   *   malformed or from the future.
   */
  constructor(provider: Provider, options?: BatchPacerOptions);

  /**
   * Queues an item and resolves with its translation. Never throws synchronously: it
   * rejects with a {@link PacerError} coded `invalid_input`, `provider_error` (with
   * `status` and `cause` where known), `timeout`, `count_mismatch`, `aborted` or
   * `disposed`. The promise settles exactly once, whatever the provider does.
   */
  translate(item: TranslateItem): Promise<string>;

  /**
   * Paces a provider call that is not a translation (a page summary for `context`, a
   * glossary lookup) under the same rules as `providerId`'s translation calls: it waits
   * for a token of the request bucket, room in the token budget (it counts as one request
   * and 0 estimated tokens: the pacer never sees what it sends) and `maxInFlight`,
   * respects the provider's 429 pause, adaptive rate, reported limits and daily block,
   * and counts in `stats().providerCalls` (not in `items`). It never moves to a fallback
   * provider.
   *
   * `fn` is called once per try with `{ signal, attempt }` (`attempt` 0 first). Its value,
   * whatever it is (`""` and `undefined` too), resolves the returned promise as it is; the
   * pacer never reads it. What it throws is read as a provider's error ("Failures" in
   * docs/reference.md): a 429 pauses the provider for every call and is retried under
   * `maxRateLimitRetries`, network errors, timeouts (`timeoutMs`), 408, 409 and 5xx are
   * retried with backoff under `maxRetries`, a 401, 403, 404 or billing error blocks the
   * provider as a translation call's does; other errors reject `provider_error` with
   * `status` and the error as `cause`.
   *
   * Never throws synchronously: it rejects with a {@link PacerError} coded
   * `invalid_input` (naming `providerId`, `fn`, `options`, `priority` or `signal`),
   * `provider_error`, `timeout`, `aborted` or `disposed`. The promise settles exactly once.
   *
   * @param providerId the provider whose limits and pauses the call shares (non-empty; a
   *   pool's member, not a pool: `fn` calls one key, so the run names it).
   * @param fn performs one try of the call.
   * @param options `priority` (default 0; higher first among the provider's queued work,
   *   first come first served among equals); `signal`: aborted before the call starts, the
   *   run is removed; while it runs, the promise rejects `aborted` at once and `fn`'s
   *   `signal` is aborted.
   */
  run<T>(
    providerId: string,
    fn: (request: RunRequest) => T | PromiseLike<T>,
    options?: RunOptions,
  ): Promise<T>;

  /**
   * Changes options of a running pacer. The whole patch is validated first (all or
   * nothing; an invalid patch throws `invalid_options` and changes nothing), then
   * applied to queued work at once. `clock`, `cache` and `restore` cannot be changed.
   */
  setOptions(patch: PacerOptionsPatch): void;

  /**
   * The settings in force (a fresh plain object, without `clock`, `onEvent`, `cache` and
   * `restore`).
   */
  readonly options: PacerSettings;

  /**
   * The pacing state now (tokens, 429 pauses, adaptive rates) with the wall-clock time,
   * as a fresh plain JSON object: persist it and pass it as `restore` to the pacer of a
   * restarted service worker. See {@link PacerSnapshot}.
   */
  snapshot(): PacerSnapshot;

  /** Counters since construction and current gauges, as a fresh plain object. */
  stats(): PacerStats;

  /**
   * Rejects every unsettled item with code `disposed`, aborts running calls and clears
   * all timers. Later `translate` calls reject with `disposed`. The pacer's memory in the
   * module is given back at once (after the current call stack), not when the garbage
   * collector reaches it; `stats()`, `options` and `snapshot()` then answer as they did
   * at dispose.
   */
  dispose(): void;
}

// ---------------------------------------------------------------------------------------
// Initialisation
// ---------------------------------------------------------------------------------------

/**
 * The bytes of a WebAssembly module: an `ArrayBuffer` or a view on one (what the DOM
 * library calls `BufferSource`).
 */
export type WasmBytes = ArrayBuffer | ArrayBufferView;

/**
 * A compiled `WebAssembly.Module`. Spelled this way so that the declarations also compile
 * in projects whose libraries declare no `WebAssembly` (Node-only `lib` settings), where
 * it falls back to `object`.
 */
export type WasmModule = typeof globalThis extends {
  WebAssembly: { Module: abstract new (...args: any[]) => infer M };
}
  ? M
  : object;

/**
 * Where `init()` may load the WebAssembly module from: a URL (string, `URL`, `Request`),
 * a fetched `Response` (or a promise of one), the module's bytes, or a compiled module.
 */
export type InitInput =
  | string
  | URL
  | Request
  | Response
  | PromiseLike<Response>
  | WasmBytes
  | WasmModule;

/**
 * Loads the WebAssembly core. Call it (and wait for it) before using `BatchPacer` or
 * `cacheKey`; using them earlier throws a `PacerError` with code `not_initialized`.
 *
 * - In a page, a dedicated worker or an extension service worker, it fetches the `.wasm`
 *   file shipped beside the module (the extension's CSP needs `'wasm-unsafe-eval'`). A
 *   bundler that leaves the file behind: copy `batch-pacer/batch_pacer_bg.wasm` and pass
 *   its URL, or import from `batch-pacer/inline` instead.
 * - In Node.js (20.0 and later) and Bun it reads that file from disk; in Deno it takes the
 *   module inline (no `-R` needed).
 * - `source` overrides where the module comes from.
 *
 * Idempotent: once the module is loaded, further calls resolve at once and do nothing.
 * Concurrent calls share one load. A failed load rejects with a `PacerError` with code
 * `not_initialized` whose message says what to do (a CSP without `'wasm-unsafe-eval'`:
 * the manifest line to add; a `.wasm` not found: the file to copy, or the inline entry),
 * the original error as `cause`; a later call tries again.
 *
 * @example
 * import init, { BatchPacer } from "batch-pacer";
 * // In an MV3 service worker: no top-level await; wait inside the listener.
 * const ready = init();
 * chrome.runtime.onMessage.addListener((message, sender, reply) => {
 *   ready.then(() => translate(message)).then(reply);
 *   return true;
 * });
 */
export default function init(source?: InitInput): Promise<void>;

/**
 * Synchronous variant of `init()`: initialises the core from the module's bytes
 * (`BufferSource`) or from an already compiled `WebAssembly.Module`. A no-op once the
 * core is initialised.
 * Workers and extension service workers compile synchronously without limit. On a
 * page's main thread, current Chromium accepts modules up to 8 MB (this one is 0.15 MB),
 * but older versions refuse anything over 4 KB: prefer `init()` in pages that must
 * support them.
 *
 * With `wasmBytes()` from `batch-pacer/inline-wasm` it needs no fetch at all (see there).
 *
 * Throws a `PacerError` with code `not_initialized` while an `init()` is still loading
 * the module: await that instead (the load would replace the module instance when it
 * ends). A module that does not compile (a CSP without `'wasm-unsafe-eval'`, wrong bytes)
 * throws `not_initialized` too, saying what to do, the original error as `cause`: call it
 * inside a `try` or a listener, not bare at a service worker's top level, where a throw
 * stops the worker before it registers its listeners.
 */
export function initSync(bytes: WasmBytes | WasmModule): void;

// ---------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------

/**
 * The pacer's settings: every option except `clock`, `onEvent`, `cache` and `restore`.
 * `DEFAULTS` holds their default values and `pacer.options` the values in force.
 *
 * An invalid value makes the constructor or `setOptions` throw a `PacerError` with code
 * `invalid_options`, whose message names the option and the value it got (for example
 * `rate must be a finite number > 0 (got -1)`). Unknown option names are rejected too.
 * An option set to `undefined` counts as not given.
 */
export interface PacerSettings {
  /**
   * Average number of provider calls (batches and single requests, retries included)
   * started per second, per pacer. Decimals are allowed: `0.25` is one call every 4 s.
   * A backlog drains at this rate.
   *
   * Valid range: a finite number > 0.
   * @default 8
   */
  rate: number;

  /**
   * Token bucket size: the largest burst of calls started at once. The bucket starts full
   * and refills continuously at `rate`; in any window of `w` seconds at most
   * `capacity + rate * w` calls start. Raising it with `setOptions` does not refill the
   * bucket.
   *
   * Valid range: an integer >= 1.
   * @default 60
   */
  capacity: number;

  /**
   * Most provider calls running at the same time; `0` means no limit. (`capacity` limits
   * how many calls *start* in a burst, not how many run at once.)
   *
   * Valid range: an integer >= 0.
   * @default 0
   */
  maxInFlight: number;

  /**
   * Character limit of a batch (LLM items only). Characters are counted as JavaScript
   * `String.length` of the item texts. An item that would push a batch over the limit
   * starts the next batch; an item longer than the limit travels alone.
   *
   * Valid range: an integer >= 1.
   * @default 1000
   */
  maxCharactersPerBatch: number;

  /**
   * Most items in one batch (LLM items only). A batch of one item is sent as a single
   * request (`isBatch: false`).
   *
   * Valid range: an integer >= 1.
   * @default 4
   */
  maxItemsPerBatch: number;

  /**
   * Collection window of a batch, in milliseconds, counted from its first item. A batch
   * is due when it is full (`maxItemsPerBatch` or `maxCharactersPerBatch`) or this much
   * time has passed; a due batch still waiting for a token keeps taking compatible items
   * up to the limits.
   *
   * Valid range: a finite number >= 0.
   * @default 100
   */
  batchDelayMs: number;

  /**
   * Retries of a batch whose reply does not prove every item's translation (a count
   * mismatch), with exponential backoff, at most: a reply that repeats the last one to
   * the same texts (the same string, or an equal object or array) ends them at once,
   * since a model at temperature 0 answers the same prompt the same way.
   *
   * Valid range: an integer >= 0.
   * @default 3
   */
  maxBatchRetries: number;

  /**
   * After `maxBatchRetries` count mismatches, send the batch's items one at a time.
   * When `false`, the items reject with code `count_mismatch` instead.
   *
   * Valid range: a boolean.
   * @default true
   */
  fallbackToIndividual: boolean;

  /**
   * Timeout of each provider call, in milliseconds, plus `timeoutPerCharacterMs` per
   * character the call sends; `0` means none at all (whatever `timeoutPerCharacterMs`
   * is). On timeout the call's `signal` is aborted and the call counts as failed
   * (retried like a network error; the items finally reject with code `timeout`). For a
   * streamed reply, the longest wait from the call's start to the first value (with the
   * per-character part), then between two values (without it); the whole stream has no
   * other limit.
   *
   * Valid range: a finite number >= 0.
   * @default 20000
   */
  timeoutMs: number;

  /**
   * Added to `timeoutMs` per character a call sends (its texts' `String.length`), for a
   * whole reply and for a stream's first value, not between two stream values: a batch
   * of 1,000 characters may take 35 s at the defaults, one short paragraph about 20 s.
   *
   * Valid range: a finite number >= 0.
   * @default 15
   */
  timeoutPerCharacterMs: number;

  /**
   * Retries of a failed provider call: network error, timeout, a reply of the wrong
   * type, HTTP 408, 409 or 5xx. Other failures reject the items at once with code
   * `provider_error`.
   *
   * Valid range: an integer >= 0.
   * @default 2
   */
  maxRetries: number;

  /**
   * Base of the exponential backoff between retries, in milliseconds (jitter applied).
   * A Retry-After given by the provider takes precedence. A retry also waits for a token.
   *
   * Valid range: a finite number >= 0.
   * @default 1000
   */
  baseRetryDelayMs: number;

  /**
   * Retries of a call answered 429, counted apart from `maxRetries`. A 429 pauses every
   * call to that provider until its Retry-After (or the backoff) has passed. A
   * Retry-After longer than 5 minutes fails the call at once (`provider_error`,
   * status 429).
   *
   * Valid range: an integer >= 0.
   * @default 10
   */
  maxRateLimitRetries: number;

  /**
   * After a 429, slow that provider down by itself: burst 1 and a lower rate, halved at
   * each 429 episode and raised gradually after successes, never above `rate`. Back at
   * `rate`, the burst is earned back gradually too (as if from an empty bucket).
   * Reported through `onEvent` as `adaptiveRate` events.
   *
   * Valid range: a boolean.
   * @default true
   */
  adaptiveRate: boolean;

  /**
   * Size of the in-memory LRU cache of successful translations, in entries; `0` turns it
   * off. Failures are never cached. The `cache` option adds a persistent store behind it
   * (see {@link BatchPacerOptions.cache}).
   *
   * Valid range: an integer >= 0.
   * @default 1000
   */
  cacheEntries: number;

  /**
   * Bounds memory: the most provider items held at once (queued, being looked up in the
   * `cache` store, or in a running call); `0` means no limit. When it is reached, new
   * items reject at once with code `queue_full` (identical items that share a held one
   * are still accepted). Each queued item costs about its text's UTF-8 size + 170 bytes in
   * the core. An addition to the contract: it is not in `DEFAULTS`, and
   * `pacer.options` shows it only once set.
   *
   * Valid range: an integer >= 0.
   * @default 0 (no limit)
   */
  maxQueued?: number;

  /**
   * How a batch is laid out for the model. `"markers"`: each text between its own pair
   * of markers (`<s21>` … `</s21>`), so the reply proves which translation belongs to which
   * item, and proven items resolve at once while the rest are sent again (see
   * {@link ProviderRequest}). `"separator"`: the older layout, the texts joined with an
   * anonymous separator line; any count but the right one is a count mismatch. Its
   * limit: a reply cannot say which segment is whose, so one that keeps the count and
   * shows no shift (a preamble ending in `.` or `!` set apart plus a merged or cut-off
   * segment, two segments swapped, among paragraphs without numbers) is accepted and
   * gives paragraphs other paragraphs' translations (docs/guides/proof.md, "The separator layout's
   * limits"). Use `"markers"` where a wrong paragraph matters.
   *
   * Valid values: `"markers"` or `"separator"`.
   * @default "markers"
   */
  segmentFormat: "markers" | "separator";

  /**
   * Learn, per provider, how many items its batch replies can carry (small and local
   * models often cannot keep a batch's layout). Two batch replies in a row from one
   * provider that prove none of their segments halve its limit (rounded down, 1 at
   * least: its items then go one to a call); a batch reply that proves every segment
   * raises it by one, up to `maxItemsPerBatch`. At a limit of 1, one batch of two items
   * is tried after every 20 single calls. Calls dealt after a change respect the new
   * limit, retries included. Kept by `snapshot()`; reported by `batchLimit` events.
   *
   * Valid range: a boolean.
   * @default true
   */
  adaptiveBatching: boolean;

  /**
   * Where a provider's items go when it cannot serve them, by `providerId`:
   * `{ "gemini-flash": "gemini-flash-lite", "gemini-flash-lite": "groq" }`. A provider
   * cannot serve while a daily quota blocks it or a 429 pause has more than
   * `fallbackAfterMs` left (that call's items, its queued items and the items that
   * arrive meanwhile move), on a billing or settings error (the call's and the queued
   * items move; later items try it again), and for the items of a call that failed for
   * good after its retries (network error, timeout, 408, 409, 5xx). Moved items go to the
   * first provider of the chain that can serve (else its last), batched only with items
   * moved from the same provider; their calls carry `fallbackFrom`. New items go back to
   * their own provider once it can serve. A moved item's translation is cached under its
   * own key (its `providerId`). Reported by `providerFallback` events and
   * `stats().fallbackItems`. Absent from `pacer.options` until set.
   *
   * Valid values: an object of non-empty `providerId` strings, no provider mapped to
   * itself, no cycle. A `Map` is `invalid_options` (pass `Object.fromEntries(map)`).
   * @default {} (no fallback)
   */
  fallbackProviders?: Readonly<Record<string, string>>;

  /**
   * A 429 pause with more than this left (its Retry-After or backoff, in milliseconds)
   * moves its provider's items to its fallback (`fallbackProviders`).
   *
   * Valid range: a finite number >= 0.
   * @default 10000
   */
  fallbackAfterMs: number;

  /**
   * Each provider its own limits, by `providerId`: `{ "gemini-flash": { rate: 10 / 60,
   * capacity: 1 }, ollama: { maxInFlight: 1, timeoutMs: 120000 }, deepl: { batch: "array",
   * maxItemsPerBatch: 50 } }`. A provider's bucket, budgets and cap hold in addition to
   * the pacer's (a call starts only when every one that covers it has room, and takes
   * from all); its batch limits, `batchDelayMs` and timeouts replace the pacer's. See
   * {@link ProviderSettings}. `setOptions({ providers })` replaces the whole map; a bucket
   * that already exists keeps its tokens. Absent from `pacer.options` until set.
   *
   * Valid values: an object of {@link ProviderSettings} objects; a malformed one is
   * `invalid_options` naming `providers.<id>.<field>`.
   * @default {} (no provider has limits of its own)
   */
  providers?: Readonly<Record<string, ProviderSettings>>;

  /**
   * Pools of providers used as one, by pool id: `{ gemini: ["gemini-k1", "gemini-k2"] }`
   * (several keys of one model, or deployments). An item whose `providerId` is a pool id
   * is served by a member chosen when its call starts: the one that can start it soonest
   * (its own pause, limits and blocks), and among those that can start at once the one
   * idle longest. A member that cannot serve a call's items (a daily block, a billing or
   * settings error, a pause past `fallbackAfterMs`, retries spent) hands them to another
   * member; only when none can serve does the pool's fallback (`fallbackProviders`) take
   * them. The pool id is the items' `providerId` for compatibility, dedup and the cache;
   * calls carry the member as `providerId` and the pool as `poolId`. Absent from
   * `pacer.options` until set; `setOptions` replaces the map.
   *
   * Valid values: an object of arrays of non-empty `providerId` strings, each pool with at
   * least one member, no member listed twice or in two pools, no pool id that is also a
   * member; an error names the pool (`pools.<id>`).
   * @default {} (no pool)
   */
  pools?: Readonly<Record<string, readonly string[]>>;

  /**
   * Reads a provider's reports (`limits`) as the state of a quota that other clients
   * may share (a team's key, a family's free tier, several tabs): while the reports give
   * the whole window, their room decides when calls start, not the adaptive rate's guess
   * (a report with room after 429s ends its slow zone); when the room falls faster than
   * this pacer's own calls explain, it takes only its share of the refill (its share of
   * the consumption it observed lately); a wait that ends at a Retry-After or a reported
   * reset is lengthened by a random 0–10% of the wait (at least 0–250 ms), never
   * shortened; the adaptive rate's floor is one call a minute or the rate this pacer has
   * been taking of a reported quota, whichever is lower. A pacer alone keeps the whole
   * quota. `false` turns these off: every report's room is this pacer's own and those
   * waits end exactly (a pacer that has a quota to itself, or a comparison). An addition
   * to the contract: it is not in `DEFAULTS`, and `pacer.options` shows it only when
   * `false`.
   *
   * Valid values: a boolean.
   * @default true
   */
  sharedQuota?: boolean;

  /**
   * Token budget of this pacer's calls, beside the request bucket: refilled continuously
   * at `tokensPerMinute / 60` a second, holding at most a minute's worth, starting full.
   * A call starts only when it holds the call's estimated cost (the input's estimate,
   * as much again for the output, plus the prompt's share); reported `usage` then
   * replaces the estimate. A batch never grows past what the budget can hold. A call
   * that costs more than the whole budget (an `estimateTokens` that answers 1e12, a
   * reported usage beyond it) starts once the budget is full and leaves at most one
   * budget of debt: the next call waits at most two minutes' refill.
   *
   * Valid range: a finite number >= 0; `0` means no token limit.
   * @default 0
   */
  tokensPerMinute: number;
}

/**
 * A time source. Every time the pacer reads or waits goes through it, which makes fake
 * timers (for tests) possible.
 */
export interface PacerClock {
  /**
   * The current time in milliseconds, from any fixed origin (monotonic): a function, or
   * a number property read at each use (as on `@sinonjs/fake-timers` clocks).
   */
  now: (() => number) | number;
  /** Calls `fn` once after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer created by this clock's `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/**
 * Every property of `T` optional, `undefined` included: the pacer treats an option set
 * to `undefined` as not given (so `{ onEvent: undefined }` type-checks under
 * `exactOptionalPropertyTypes`).
 */
export type Optional<T> = { [K in keyof T]?: T[K] | undefined };

/** Receives one plain object per notable event; see {@link PacerEvent}. */
export type PacerEventHandler = (event: PacerEvent) => void;

/**
 * Options of `new BatchPacer(provider, options)`: every {@link PacerSettings} field
 * (each optional, defaulting to its `DEFAULTS` value) plus `clock`, `onEvent`, `cache`
 * and `restore`.
 */
export interface BatchPacerOptions extends Optional<PacerSettings> {
  /**
   * Time source: `now()`, `setTimeout(fn, ms)` and `clearTimeout(handle)`. Set at
   * construction only (`setOptions` rejects it).
   *
   * Valid values: an object with those three functions.
   * @default `performance.now()` and the global `setTimeout` / `clearTimeout` (never `window`)
   */
  clock?: PacerClock | undefined;

  /**
   * Called with one plain `{ type, ... }` object per notable event
   * (429s, adaptive rate changes, retries, count mismatches, fallbacks, timeouts,
   * failures of the `cache` store). An error thrown by the handler is ignored.
   *
   * Valid values: a function.
   * @default none
   */
  onEvent?: PacerEventHandler | undefined;

  /**
   * A persistent store of translations behind the in-memory LRU (`cacheEntries`), so that
   * they outlive an MV3 service worker that the browser stops when idle. See
   * {@link CacheStore}; {@link indexedDBCache} returns one on IndexedDB.
   *
   * - An item that misses the in-memory LRU is looked up with `cache.get(cacheKey(item))`
   *   before it is queued; the lookup holds no token. A string found resolves the item
   *   (`cacheHits`) without a provider call; `undefined` or `null` is a miss and the item
   *   is queued.
   * - Identical items (see {@link TranslateItem}) share one lookup.
   * - Every success is written with `cache.set(key, translation)`, without waiting for it.
   * - A `get` that throws, rejects, returns something other than a string, `undefined` or
   *   `null`, or is still pending after `timeoutMs` (5,000 ms when `timeoutMs` is 0)
   *   counts as a miss; a `set` that throws or rejects is ignored. Either is reported through
   *   `onEvent` as a {@link CacheErrorEvent} (`operation` `"get"` or `"set"`). A store
   *   never fails an item, nor delays it beyond that.
   *
   * Set at construction only (`setOptions` rejects it).
   *
   * Valid values: an object with `get` and `set` functions.
   * @default none (in-memory LRU only)
   */
  cache?: CacheStore | undefined;

  /**
   * The pacing state of an earlier pacer, as returned by its `snapshot()` (possibly
   * after a JSON round trip through storage): a restarted MV3 service worker that passes
   * it neither bursts again nor forgets a 429 pause. See {@link PacerSnapshot}.
   *
   * Tokens earned since `wallTime` at the new pacer's `rate` are added, up to its
   * `capacity`; what is left of each provider's pause still holds; adaptive rates
   * return. A snapshot that is malformed, has an unknown `version` or field, a number
   * that is not finite (a NaN pause), a `dailyBlock.message` that is not a string, or
   * whose `wallTime` lies in the future (beyond a 1 s tolerance) makes the constructor
   * throw `invalid_options` naming the field. Its values are taken only as far as the
   * pacer itself could have written them: a pause of at most 5 minutes, a daily block of
   * at most 24 hours (1 hour without a known reset), an adaptive rate within its floor
   * (one call a minute) and `rate`, tokens within `capacity`, a reported reset at most
   * 10 minutes away.
   *
   * Set at construction only (`setOptions` rejects it).
   *
   * Valid values: a {@link PacerSnapshot}.
   * @default none (the bucket starts full, no provider is paused)
   */
  // `unknown`: what storage returns goes in unchecked; the pacer validates it (a
  // malformed value throws `invalid_options`), and `null` means no restore.
  restore?: PacerSnapshot | null | unknown;

  /**
   * The estimate of a text's tokens, used before a call's usage is known (with
   * `tokensPerMinute`, a shared budget that counts tokens, or a provider that reports its
   * token window). A throw or a value that is not a finite number >= 0 falls back to the
   * built-in estimate, which is script-aware (Latin about 4 characters a token, CJK
   * about 1). Set at construction only.
   *
   * Valid values: a function.
   * @default the built-in estimate
   */
  // Parenthesised: `undefined` is the option's (not given), not the function's result.
  estimateTokens?: ((text: string) => number) | undefined;

  /**
   * A budget shared with other pacers that send to the same account (see
   * {@link sharedBudget}). Every call of this pacer also takes from it, and the pacers
   * share each provider's 429 pause, adaptive rate, reported limits and daily block.
   * This pacer's own `rate`, `capacity` and `tokensPerMinute` still apply, as a cap of
   * its own flow. Pacers sharing a budget must use the same clock. Set at construction
   * only.
   *
   * Valid values: a value returned by {@link sharedBudget}.
   * @default none
   */
  budget?: SharedBudget | undefined;
}

/** What {@link sharedBudget} returns: an opaque handle for the `budget` option. */
export interface SharedBudget {
  readonly [Symbol.toStringTag]: "SharedBudget";
}

/**
 * One request-and-token budget for several pacers that send to the same account, such
 * as a page pacer and a subtitle pacer: together they never exceed it.
 *
 * @example
 * const budget = sharedBudget({ rate: 0.5, capacity: 1, tokensPerMinute: 6000 });
 * const page = new BatchPacer(provider, { budget, maxItemsPerBatch: 4 });
 * const subtitles = new BatchPacer(provider, { budget, maxItemsPerBatch: 8, batchDelayMs: 300 });
 * @throws {PacerError} `not_initialized` before `init()`; `invalid_options` for an
 *   unknown or invalid option (the same rules as a pacer's).
 */
export function sharedBudget(options?: {
  /** Requests per second, on average. @default 8 */
  rate?: number | undefined;
  /** The largest burst of requests. @default 60 */
  capacity?: number | undefined;
  /** Tokens per minute; `0` means no token limit. @default 0 */
  tokensPerMinute?: number | undefined;
}): SharedBudget;

/**
 * A patch for `pacer.setOptions`: any settings, and `onEvent` to replace the handler.
 * `clock`, `cache` and `restore` cannot be changed after construction.
 */
export type PacerOptionsPatch = Optional<PacerSettings> & {
  /** Replaces the event handler (a function; `undefined` leaves the current one). */
  onEvent?: PacerEventHandler | undefined;
};

/**
 * One provider's own settings (the `providers` option). Every field is optional and has
 * the validity of the option of the same name; a field left out is the pacer's value.
 */
export interface ProviderSettings {
  /**
   * Its own request bucket's rate (calls a second), beside the pacer's: with `rate` or
   * `capacity` the provider gets a bucket of its own (the field left out is the pacer's).
   * Valid range: a finite number > 0. @default the pacer's `rate`
   */
  rate?: number;
  /**
   * Its own bucket's size (the largest burst); the bucket starts full.
   * Valid range: an integer >= 1. @default the pacer's `capacity`
   */
  capacity?: number;
  /**
   * Most of its calls at once, beside the pacer's `maxInFlight`.
   * Valid range: an integer >= 0; `0`: no cap of its own. @default 0
   */
  maxInFlight?: number;
  /**
   * Its own token budget a minute, like the pacer's `tokensPerMinute` (starts full;
   * reported usage corrects it). Valid range: a finite number >= 0; `0`: none. @default 0
   */
  tokensPerMinute?: number;
  /**
   * Its own character budget a minute: each call takes its texts' `String.length`;
   * refilled continuously, holding at most a minute's worth, starting full. A batch never
   * grows past it. Valid range: a finite number >= 0; `0`: none. @default 0
   */
  charactersPerMinute?: number;
  /**
   * Replaces `maxItemsPerBatch` for its items (a learned batch size stays at most this).
   * Valid range: an integer >= 1. @default the pacer's `maxItemsPerBatch`
   */
  maxItemsPerBatch?: number;
  /**
   * Replaces `maxCharactersPerBatch` for its items.
   * Valid range: an integer >= 1. @default the pacer's `maxCharactersPerBatch`
   */
  maxCharactersPerBatch?: number;
  /**
   * Replaces `batchDelayMs` for its items.
   * Valid range: a finite number >= 0. @default the pacer's `batchDelayMs`
   */
  batchDelayMs?: number;
  /**
   * Replaces `timeoutMs` for its calls. Valid range: a finite number >= 0; `0`: no
   * timeout. @default the pacer's `timeoutMs`
   */
  timeoutMs?: number;
  /**
   * Replaces `timeoutPerCharacterMs` for its calls.
   * Valid range: a finite number >= 0. @default the pacer's `timeoutPerCharacterMs`
   */
  timeoutPerCharacterMs?: number;
  /**
   * `"array"`: its `llm: false` items share batches as arrays (`format: "array"`,
   * `texts` and `ids`, no markers, `instructions: ""`, `text` the texts joined with
   * `"\n"`). The reply must be an array with one string per text, in order (alone or
   * as `translations`): another length or a non-string element is a count mismatch for
   * the whole batch; an empty string for a text that is not blank leaves that item
   * missing. Without it, `llm: false` items go one to a call.
   * @default undefined (one call per `llm: false` item)
   */
  batch?: "array";
}

/** The default value of every setting (a frozen object). */
export const DEFAULTS: Readonly<PacerSettings>;

// ---------------------------------------------------------------------------------------
// Items
// ---------------------------------------------------------------------------------------

/**
 * One text to translate, for `pacer.translate(item)` and `cacheKey(item)`.
 *
 * Items are *compatible* when `providerId`, `sourceLang`, `targetLang`, `context`,
 * `llm` and `scope` are equal; only compatible LLM items share a batch. Identical items (compatible
 * with the same `text`) share one provider item while it is queued or running, and one
 * `cache` store lookup.
 */
export interface TranslateItem {
  /**
   * The text to translate. Text that is empty or only white space resolves to itself
   * without a provider call.
   */
  text: string;
  /** Source language, as your provider names it (e.g. `"en"` or `"auto"`). Non-empty. */
  sourceLang: string;
  /** Target language, as your provider names it (e.g. `"de"`). Non-empty. */
  targetLang: string;
  /**
   * Identifies the provider (service and account) the item goes to; non-empty. A 429
   * pauses, and adaptive rate slows down, only the calls of this provider.
   */
  providerId: string;
  /**
   * `true` for LLM providers, whose items are batched; `false` for ordinary translation
   * APIs: never batched, still paced.
   * @default true
   */
  llm?: boolean | undefined;
  /**
   * Extra text handed to the provider with the request (page title, summary ...).
   * @default ""
   */
  context?: string | undefined;
  /**
   * Whom the item belongs to: a tab (`String(sender.tab.id)`), else a frame's origin.
   * Items of different scopes never share a batch, a provider item or a cache entry (in
   * memory or in the `cache` store), so a page whose text tells the model "in the first
   * segment write …" cannot put its words under another page's paragraphs, even with
   * the same `context`. Set it in the background from the message's sender, which a page
   * cannot forge, never from page content. Never sent to the provider.
   * @default ""
   */
  scope?: string | undefined;
  /**
   * Higher priorities are dispatched first; first in, first out among equals. A finite
   * number.
   * @default 0
   */
  priority?: number | undefined;
  /**
   * Aborting it rejects the item with code `aborted` at once. An item not sent yet is
   * removed from its batch. A running call is cancelled (its `signal` aborted, its reply
   * neither used nor cached) once every item of it has been aborted, identical items
   * that share it included; while one still waits, it runs on. A look-alike
   * with `aborted` and `addEventListener` works too; one whose `addEventListener` throws
   * rejects the item `invalid_input` naming `signal`, before any provider call.
   */
  signal?: AbortSignal | undefined;
  /**
   * Previews of the item's translation while a streamed reply arrives: called with the
   * text of its segment received so far (trimmed, with no marker nor a trailing piece
   * that could start one), at most once per stream value, only while everything before
   * that segment in the reply is in order. A preview is not a result: the promise's
   * value is the translation, and after a retry previews start again. Never called once
   * the promise has settled; a throwing `onPartial` is ignored.
   */
  onPartial?: ((text: string) => void) | undefined;
  /**
   * Anything the provider needs about the item (its settings object, a glossary id),
   * handed over as `request.metas[i]`. Never read by the pacer, and not part of
   * compatibility, dedup or the cache key: identical items share one provider item and
   * its translation, and the provider gets the first one's `meta`. What changes the
   * translation belongs in `context` or `providerId`, not here.
   */
  meta?: unknown;
}

// ---------------------------------------------------------------------------------------
// Provider
// ---------------------------------------------------------------------------------------

/** How a request's texts are laid out: see `ProviderRequest.format`. */
export type RequestFormat = "markers" | "separator" | "array" | "single";

/** What the pacer hands to the provider for one call (a batch or a single text). */
export interface ProviderRequest {
  /** The texts of this call, in order (one for a single request). */
  readonly texts: string[];
  /** One id per text, unique within the call: `"1"`, `"2"` … (the keys of an object reply). */
  readonly ids: string[];
  /**
   * In the markers layout (the default), for a batch: one `[open, close]` pair per
   * text, such as `["<s21>", "</s21>"]` (the numbers are labels a model must copy, in no
   * counting order: 21, 58, 95, 43 …), chosen so that neither string occurs in any text
   * of the batch. Absent for a single request and in the separator layout.
   */
  readonly markers?: [string, string][];
  /**
   * What to send to the model. For a batch in the markers layout: each text between its
   * markers, one segment per line, joined with `"\n"`; in the separator layout: the texts
   * joined with `separator`. For a single request: `texts[0]`.
   */
  readonly text: string;
  /**
   * For a batch, one English paragraph that tells a model how to answer in this layout,
   * ready to append to a system prompt; `""` for a single request.
   */
  readonly instructions: string;
  /**
   * In the separator layout only: the separator of this call, chosen so that it occurs
   * in none of its texts.
   */
  readonly separator?: string;
  /** `true` when the call carries more than one text. */
  readonly isBatch: boolean;
  /** The items' `sourceLang`. */
  readonly sourceLang: string;
  /** The items' `targetLang`. */
  readonly targetLang: string;
  /**
   * The `providerId` this call goes to: the items' own, or, when a fallback provider
   * serves them (`fallbackProviders`), the fallback's (then `fallbackFrom` names theirs).
   */
  readonly providerId: string;
  /**
   * When a fallback provider serves these items (see `fallbackProviders`): the items' own
   * `providerId`, whose items they were. Absent when the items' own provider serves them.
   *
   * Valid values: a non-empty string, or absent.
   * @default undefined (absent)
   */
  readonly fallbackFrom?: string;
  /**
   * When a pool's member serves this call (see `pools`): the pool's id (the items'
   * `providerId`); `providerId` is then the member's. Absent otherwise.
   *
   * Valid values: a non-empty string, or absent.
   * @default undefined (absent)
   */
  readonly poolId?: string;
  /** The items' `context` (`""` when none was given). */
  readonly context: string;
  /**
   * `0` for the first try of these texts, then 1, 2 ... for each retry (count mismatch,
   * error or 429).
   */
  readonly attempt: number;
  /**
   * A bound on the output tokens a faithful answer to this call needs: at least twice
   * and at most four times the estimated tokens of its texts (`estimateTokens`, corrected
   * by reported usage), plus 16 per segment, plus at most 256. A call that sends texts
   * again after a truncated reply carries twice the bound they had, up to 8 times their
   * first. Send it as the API's output limit (`max_tokens`), so that a model that
   * repeats itself stops there instead of at its own limit; `openAIProvider` does (its
   * option `maxTokens`). A reply that stops at the bound says so with `truncated: true`.
   *
   * Valid range: a finite number > 0, on every request.
   * @default computed per call, as above
   */
  readonly maxOutputTokens: number;
  /**
   * One per text: the `meta` of the item it is for (the first one's, for identical
   * items sharing it), or `undefined` when that item has none.
   */
  readonly metas: unknown[];
  /**
   * How the texts are laid out in `text`: `"markers"` or `"separator"` for a batch (see
   * `segmentFormat`), `"single"` for one text, `"array"` for an array batch of `llm: false`
   * items (a provider with `batch: "array"` in `providers`).
   */
  readonly format: RequestFormat;
  /**
   * Aborted when the call times out (`timeoutMs`), when every item of it was aborted, or
   * when the pacer is disposed; pass it to
   * `fetch`. An own enumerable accessor (a spread copy of the request has it too) whose
   * `AbortController` is made on first read, so providers that never read it do not pay
   * for one; read after the call was cancelled, it is already aborted. Assigning to it
   * replaces it, as on a plain object.
   */
  readonly signal: AbortSignal;
}

/**
 * The callback that performs one provider call.
 *
 * **Result.** For a single request, the translation. For a batch, either one string
 * holding the translations separated by `request.separator` (white space and CRLF
 * around separators and a trailing separator are tolerated; so is a code fence wrapping
 * the whole reply, except when the last text itself ends with a fence: then the fence
 * lines stay in the first and last translations) or an array with one string per text.
 * The separator layout checks the count, not which segment is whose: see
 * `segmentFormat`. Any other count is a count mismatch (see
 * `maxBatchRetries` and `fallbackToIndividual`). A value of any other type is a failed
 * call, retried like a network error; the items finally reject with `provider_error`.
 * At run time a string or array returned synchronously (not in a promise) is accepted
 * too, and a synchronous throw counts as a rejection.
 *
 * **Failures.** Throw or reject. The pacer reads these properties of the error:
 * - `status`: the HTTP status. Network errors (no status), timeouts, 408, 409, 429 and
 *   5xx are retried; any other status rejects the items at once with code
 *   `provider_error`, that `status`, and your error as `cause`.
 * - `status`, or `statusCode` as the AI SDK's `APICallError` names it (read when `status`
 *   is no number; a field of the wrong type, such as a string, is ignored, and an error
 *   without a status is a network error).
 * - `retryAfterMs` (milliseconds), or `retryAfter` (seconds, or an HTTP Retry-After
 *   string), or `headers` or the AI SDK's `responseHeaders` (a `Headers` object, a `Map`
 *   or a plain object, names in any case) with `retry-after-ms` or `retry-after`, or a
 *   Google `RetryInfo` `retryDelay` in the AI SDK's `responseBody`: how long to wait
 *   before the next call to this provider. It overrides the backoff.
 * - `limits` ({@link ProviderLimits}), else what those headers say of the quota, as
 *   {@link limitsFromHeaders} reads them.
 * - `quota` (`"rate"`, `"daily"`, `"billing"`), else what the AI SDK's `responseBody`
 *   names, as {@link openAIProvider} reads an error body.
 * - `retryable: false`: you know the same request will fail again (a content-policy
 *   refusal, an invalid request): it is never retried, whatever its status. A single
 *   item rejects with `provider_error`; a batch's items are sent once each alone (with
 *   `fallbackToIndividual`, else they reject), since one paragraph may be what was
 *   refused. A 429 marked so still pauses the provider. Any other value is ignored.
 *   The AI SDK's `isRetryable: false` counts the same, except on 408, 409, 413, 429 and
 *   5xx, whose handling the pacer owns.
 * - An error that wraps the failures of its own retries (the AI SDK's `RetryError`, with
 *   `lastError`) is read as its last error; the rejection's `cause` is the error thrown.
 *
 * @example
 * const provider: Provider = async ({ text, sourceLang, targetLang, signal }) => {
 *   const res = await fetch(url, { method: "POST", body: JSON.stringify({ text, sourceLang, targetLang }), signal });
 *   if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status}`), { status: res.status, headers: res.headers });
 *   return (await res.json()).translation;
 * };
 */
export type Provider = (
  request: ProviderRequest,
) => ProviderResult | ProviderStream | Promise<ProviderResult | ProviderStream>;

/**
 * A streamed reply: any async iterable (an async generator, a `ReadableStream` where it
 * is async-iterable, an SDK's stream mapped to text) of the reply's text in order, and
 * of `{ usage, limits }` values (usually last). The strings joined are the reply, read as
 * a marked string (in the separator layout, as the joined string).
 *
 * In the markers layout an item resolves as soon as the reply so far proves its segment
 * (see docs/guides/streaming.md); what is left when the stream ends is read as a
 * whole reply. A stream that throws, yields any other value, or sends no value within
 * `timeoutMs` is a failed call: items resolved so far stay resolved, the others are
 * retried as a smaller batch. A stream longer than 20 times the text sent plus 4,096
 * bytes is cut there and read as truncated. `<think>` … `</think>` is not part of the
 * reply, but it counts: everything a stream delivers (reasoning included, each value at
 * least one byte) is cut at five times that cap. A single text's reply that ends blank
 * (empty or only white space, an empty stream too) is a failed call, retried like a
 * network error. The pacer calls the iterator's `return()` when it stops reading early.
 */
export type ProviderStream = AsyncIterable<string | ProviderStreamReport | ProviderStreamTruncated>;

/**
 * A stream value saying that the reply stopped at its token limit (the model was cut
 * off, not done): what the text so far proves resolves, the rest of a batch is sent
 * again (a count mismatch), and a single request is a failed call, retried up to
 * `maxRetries` times. A call that sends texts again after it carries twice their bound
 * (`maxOutputTokens`). `openAIProvider` yields it for `finish_reason: "length"`.
 *
 * Valid values: exactly `{ truncated: true }`.
 * @default not sent (the reply ended by itself)
 */
export interface ProviderStreamTruncated {
  truncated: true;
}

/** A stream value with what the API reported (see {@link ProviderResult}). */
export interface ProviderStreamReport {
  /** Tokens the call used, as the API reported them. */
  usage?: { inputTokens?: number | undefined; outputTokens?: number | undefined } | undefined;
  /** What the API said of its quota. */
  limits?: ProviderLimits | undefined;
}

/**
 * What a provider returns: the translations in any form the layout accepts, or
 * `{ translations, usage, limits }` with what the API reported.
 *
 * - a string: for a single request the translation; for a batch in the markers layout,
 *   each translation between its own markers (text outside every pair is ignored); in
 *   the separator layout, the translations separated by `separator`;
 * - an array with one string per text, in order (a wrong length is a count mismatch);
 * - an object with one string per id (`{ "1": "…", "2": "…" }`), as structured outputs give.
 *
 * The pacer cleans up a structured answer handed on as the model wrote it: a batch's
 * string that is a JSON object, not empty, each of whose keys is one of the call's ids and
 * whose values are all strings (an id left out is a missing segment), alone or in a code
 * fence, is read as such an object; a value of an object or array wrapped whole in the
 * markers of its own id or position (`"<s21>Hola</s21>"`) loses them. A value holding
 * any other marker is left for the proof to judge.
 *
 * A translation resolves its item only when the reply proves it belongs there; the
 * missing ones are sent again as a smaller batch (see docs/guides/proof.md).
 */
export type ProviderTranslations = string | string[] | Record<string, string>;

/** A provider's result: translations, or translations with usage and limits. */
export type ProviderResult =
  | ProviderTranslations
  | {
      translations: ProviderTranslations;
      /** Tokens the call used, as the API reported them. */
      usage?: { inputTokens?: number | undefined; outputTokens?: number | undefined } | undefined;
      /** What the API said of its quota: the pacer holds later calls it has no room for. */
      limits?: ProviderLimits | undefined;
      /**
       * `true` when the reply stopped at its token limit (OpenAI's
       * `finish_reason: "length"`): for a batch, what the reply proves resolves and the
       * rest is sent again (a count mismatch); for a single request it is a failed call,
       * retried up to `maxRetries` times, then the item rejects `provider_error` saying
       * that the answer did not end within its bound. A call that sends texts again after
       * it carries twice their bound (`maxOutputTokens`), up to 8 times their first.
       *
       * Valid values: a boolean.
       * @default false
       */
      truncated?: boolean | undefined;
    };

/** A provider's own account of its quota (any subset). */
export interface ProviderLimits {
  requestsRemaining?: number | undefined;
  requestsResetMs?: number | undefined;
  tokensRemaining?: number | undefined;
  tokensResetMs?: number | undefined;
  /**
   * The whole requests window (as `x-ratelimit-limit-requests` gives it). Only with it
   * in the same report may the pacer count room as refilling, in proportion, before
   * `requestsResetMs`; without it the calls wait for the reset.
   *
   * Valid range: a finite number >= 0.
   * @default unknown (not guessed from earlier reports)
   */
  requestsLimit?: number | undefined;
  /**
   * The whole tokens window (as `x-ratelimit-limit-tokens` gives it). Only with it in
   * the same report may the pacer count room as refilling, in proportion, before
   * `tokensResetMs`; without it the calls wait for the reset.
   *
   * Valid range: a finite number >= 0.
   * @default unknown (not guessed from earlier reports)
   */
  tokensLimit?: number | undefined;
}

/** Configuration of {@link openAIProvider}. */
export interface OpenAIProviderConfig {
  /**
   * The API base URL, an http(s) URL; requests go to `${baseUrl}/chat/completions`.
   * For example `"https://api.openai.com/v1"` or `"http://localhost:11434/v1"`.
   */
  baseUrl: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` when non-empty (surrounding white space is
   * trimmed). Visible ASCII only. It never appears in the errors the provider throws.
   * `null` counts as no key.
   */
  apiKey?: string | null | undefined;
  /** The model name, e.g. `"gpt-4o-mini"`. Non-empty. */
  model: string;
  /**
   * The fetch implementation.
   * @default `globalThis.fetch`, looked up at each call
   */
  fetch?: typeof fetch | undefined;
  /**
   * Sampling temperature of first tries and single requests. A batch's retries
   * (`request.attempt` >= 1 with `request.isBatch`) go out at
   * `max(temperature, min(1, temperature + 0.3 * attempt))` (0.3, 0.6, 0.9, 1 from the
   * default), so that a model that answered a batch wrongly can answer differently
   * instead of repeating itself; a temperature above 1 is kept as it is.
   *
   * Valid range: a finite number >= 0.
   * @default 0
   */
  temperature?: number | undefined;
  /**
   * The `max_tokens` of each request. `"auto"`: `request.maxOutputTokens`, the pacer's
   * bound on what a faithful answer needs (not sent for a request without one); a
   * positive integer: sent as it is on every request; `null`: no `max_tokens`.
   * `extraBody.max_tokens` wins over it (and `extraBody.max_completion_tokens` alone
   * replaces it). An endpoint that refuses `max_tokens` and asks for
   * `max_completion_tokens` (OpenAI's reasoning and newer models, HTTP 400) is asked
   * again at once with the same value under `max_completion_tokens`, and this provider
   * sends that field from then on. A reply that stops there (`finish_reason: "length"`)
   * comes back with `truncated: true`. Reasoning models count their reasoning against
   * the bound on some endpoints: give them a larger integer, or `null`.
   *
   * Valid values: `"auto"`, an integer >= 1, or `null`.
   * @default "auto"
   */
  maxTokens?: "auto" | number | null | undefined;
  /**
   * Replaces the opening instruction of the system message; `{sourceLang}` and
   * `{targetLang}` in it are filled in. The batch format rules and the context are
   * still appended, because splitting the reply depends on them.
   * @default a translator prompt asking for the translation only, formatting kept
   */
  systemPrompt?: string | undefined;
  /**
   * Headers added to every request. `Content-Type` and `Authorization` set by the
   * provider win over them.
   */
  extraHeaders?: Record<string, string> | null | undefined;
  /**
   * For batches, ask for a JSON object keyed by id through
   * `response_format: { type: "json_schema", json_schema: { name: "translations", strict: true,
   * schema } }`, where `schema` has one required string property per id of the call and
   * `additionalProperties: false`. Use it with endpoints that support JSON-schema
   * structured outputs (OpenAI, Gemini's OpenAI-compatible endpoint, recent Ollama and
   * vLLM). The prompt then asks for that object instead of the marked layout of
   * `request.instructions`; the user message stays `request.text` (with the older
   * separator layout, a JSON object of id to text). The provider returns the parsed
   * object; a reply that is not a JSON object as it stands is returned as the raw
   * string, which the pacer reads like any provider's (see {@link ProviderTranslations}):
   * a fenced JSON object by id, anything else as a marked string (proven segments are
   * kept, the rest is a count mismatch); markers copied into the values are removed by
   * the pacer. Single requests are sent without a schema. Cannot be combined with `stream`.
   * @default false
   */
  structuredOutput?: boolean | undefined;
  /**
   * Ask for a streamed completion (`stream: true`, server-sent events) and return the
   * reply as a stream ({@link OpenAIProviderStream}): the pacer resolves each paragraph
   * of a batch as soon as the text received proves it, instead of when the whole reply
   * is written. `stream_options: { include_usage: true }` is sent so that the usage
   * arrives in the last chunk; an endpoint that refuses it with 400 or 422 is asked again
   * without it, and this provider no longer sends it once a request without it went
   * through. HTTP errors reject the call as without streaming; an error reported inside
   * the stream (an `error` event, or a chunk with an `error` object) is thrown from the
   * iterator, with the status it names (`error.code` or `error.status` from 400 to 599,
   * else the status of its `type`, e.g. 529 for `overloaded_error`; none when it names
   * nothing, so it is retried like a lost connection). A body that ends before a
   * `finish_reason` or `data: [DONE]` is a failure without a status. Cannot be combined
   * with `structuredOutput`.
   * @default false
   */
  stream?: boolean | undefined;
  /**
   * Fields merged (shallowly) into every request body, for settings that some endpoints
   * have and others refuse: `{ reasoning_effort: "low" }` (reasoning models),
   * `{ think: false }` (Ollama's switch for thinking models), `{ max_tokens: 4096 }`. Its fields win over the
   * provider's own (`temperature`, `response_format`, `max_tokens`: see `maxTokens`), except `model`, `messages`,
   * `stream` and `stream_options`, which the provider reads the reply by: setting them
   * is an `invalid_options` error. Copied when the provider is made; it must be a
   * JSON-serialisable object.
   * @default none
   */
  extraBody?: Record<string, unknown> | null | undefined;
}

/** `usage` as {@link openAIProvider} reports it, from the reply's `usage`. */
export interface OpenAIProviderUsage {
  /** `usage.prompt_tokens`. */
  inputTokens?: number;
  /** `usage.completion_tokens`. */
  outputTokens?: number;
}

/**
 * `limits` as {@link openAIProvider} reports them, from OpenAI's and Groq's headers (and
 * any other family {@link limitsFromHeaders} reads, which it uses).
 * Reset times are read in Go's duration form (`6m0s`, `1.5s`, `20ms`, `23h47m12.5s`) or
 * as whole seconds (`7`) and rounded up to whole milliseconds. A header that is absent
 * or unreadable leaves its field out.
 */
export interface OpenAIProviderLimits {
  /** `x-ratelimit-remaining-requests`. */
  requestsRemaining?: number;
  /** `x-ratelimit-reset-requests`, in milliseconds from the reply. */
  requestsResetMs?: number;
  /** `x-ratelimit-remaining-tokens`. */
  tokensRemaining?: number;
  /** `x-ratelimit-reset-tokens`, in milliseconds from the reply. */
  tokensResetMs?: number;
  /**
   * `x-ratelimit-limit-requests`: the whole requests window.
   *
   * Valid range: a finite number >= 0.
   * @default absent when the header is absent or unreadable
   */
  requestsLimit?: number;
  /**
   * `x-ratelimit-limit-tokens`: the whole tokens window.
   *
   * Valid range: a finite number >= 0.
   * @default absent when the header is absent or unreadable
   */
  tokensLimit?: number;
}

/** What {@link openAIProvider}'s provider resolves with. */
export type OpenAIProviderReply =
  | string
  | Record<string, string>
  | {
      /** `choices[0].message.content`, or the parsed object with `structuredOutput`. */
      translations: string | Record<string, string>;
      /** Present when the reply has `usage`. */
      usage?: OpenAIProviderUsage;
      /** Present when the reply has readable `x-ratelimit-*` headers. */
      limits?: OpenAIProviderLimits;
      /**
       * `true` when the completion stopped at its token limit (`finish_reason:
       * "length"`, e.g. at `maxTokens`); the reply then always comes in this form.
       *
       * Valid values: `true`, or absent.
       * @default absent (the completion ended by itself)
       */
      truncated?: true;
    };

/**
 * The last value of an {@link OpenAIProviderStream}, when the endpoint reported usage
 * (in the chunk after the last text, or in Groq's `x_groq.usage`) or sent
 * `x-ratelimit-*` headers.
 */
export interface OpenAIProviderStreamEnd {
  usage?: OpenAIProviderUsage;
  limits?: OpenAIProviderLimits;
}

/**
 * What the provider of `openAIProvider({ stream: true })` resolves with: the text of
 * `choices[0].delta.content` in order, one string per network read (so a read may hold
 * several deltas, and `""` stands for a read that brought no text: an empty delta,
 * `reasoning_details` only, or a `content` that is not a string, which is ignored), then
 * at most one {@link OpenAIProviderStreamEnd}. Reasoning (`reasoning_content`, else
 * `reasoning`) comes between `<think>` and `</think>` (its `<` sent as spaces), which
 * the pacer leaves out of the reply and counts against the stream's length cap; text
 * after a `finish_reason`
 * (`"length"` included: the reply ends where the model was cut off) is ignored. For
 * `finish_reason: "length"`, a value `{ truncated: true }` ({@link ProviderStreamTruncated})
 * follows the last text, before the end value. Aborting the request's `signal` ends the
 * iteration with the abort error; leaving the loop early closes the connection.
 */
export type OpenAIProviderStream = AsyncIterable<string | ProviderStreamTruncated | OpenAIProviderStreamEnd>;

/**
 * The error {@link openAIProvider}'s provider rejects with for an HTTP error status. Its
 * message holds facts only (`OpenAI-compatible API answered <status> <reason>: <the
 * server's error text>`); what to do about a settings, billing or daily error is said
 * once, by the pacer, in the `provider_error` and the {@link BlockedEvent}.
 */
export interface OpenAIProviderError extends Error {
  /** The HTTP status, on every HTTP error (network errors and aborts have none). */
  status: number;
  /**
   * From `retry-after-ms`, else `Retry-After` (delay-seconds: digits with an optional
   * fraction; or an HTTP-date), else the `retryDelay` of a `google.rpc.RetryInfo` in the
   * error body (Gemini; the body may also be wrapped in a JSON array).
   */
  retryAfterMs?: number;
  /** The `x-ratelimit-*` headers of the error response, as in replies. */
  limits?: OpenAIProviderLimits;
  /**
   * `"billing"`: `insufficient_quota` as `error.code` or `error.type` (OpenAI), or a 402
   * (OpenRouter, DeepSeek). `"daily"`: a 429 for a per-day quota (a Gemini QuotaFailure whose
   * `quotaId` contains `PerDay`; OpenAI's and Groq's "requests per day" or "tokens per
   * day"). `"rate"`: any other 429.
   */
  quota?: "rate" | "daily" | "billing";
  /**
   * `false` where the API says the same request will never succeed: a content-policy
   * refusal (`content_policy_violation`, `content_filter`) or an `invalid_request_error`
   * other than a context-length one (that one has `status` 413, so the batch is split).
   */
  retryable?: false;
}

/**
 * A streaming provider for any OpenAI-compatible chat-completions endpoint: see
 * {@link OpenAIProviderConfig.stream}. Its calls resolve with an
 * {@link OpenAIProviderStream}.
 */
export function openAIProvider(
  config: OpenAIProviderConfig & { stream: true },
): ((request: ProviderRequest) => Promise<OpenAIProviderStream>) & Provider;
/**
 * A provider for any OpenAI-compatible chat-completions endpoint (OpenAI, Groq,
 * OpenRouter, DeepSeek, Mistral, Gemini's and Anthropic's OpenAI-compatible endpoints,
 * Ollama, LM Studio, llama.cpp server, vLLM ...).
 *
 * For a batch, the system message is the translation instruction followed by
 * `request.instructions` (in either layout; a request without them gets rules of its own),
 * and the user message is `request.text`. The reply is the model's text (or, with
 * `structuredOutput`, the parsed object keyed by id), wrapped as
 * `{ translations, usage, limits, truncated }` when the response reports usage or
 * `x-ratelimit-*` headers or stopped at its token limit (`finish_reason: "length"`:
 * `truncated: true`). A batch's retries go out at a raised temperature (see
 * `temperature`), and each request carries `max_tokens` (see `maxTokens`). HTTP errors reject with an {@link OpenAIProviderError}: `status` always,
 * `retryAfterMs`, `limits` and `quota` when the response says them; 401, 403 and 404
 * name the setting to check. An empty or malformed reply is a failed call without a
 * status. The API key never appears in an error.
 *
 * @throws {PacerError} synchronously, code `invalid_options`, when an option is invalid
 * or unknown; the message names it and the value it got (`<redacted>` for the key).
 */
export function openAIProvider(config: OpenAIProviderConfig): Provider;

/**
 * `limits` ({@link ProviderLimits}) from an API's response headers, or `undefined` when
 * they say nothing readable. Never throws. Reads:
 * - OpenAI's and Groq's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (resets
 *   as Go durations such as `6m0s`, `1.5s`, `20ms`, or whole seconds);
 * - Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
 *   {limit,remaining,reset}` (resets as RFC 3339 times, read as milliseconds from now);
 *   of the token kinds, the one with the fewest tokens remaining counts, with its limit
 *   and reset;
 * - the IETF `RateLimit` / `RateLimit-Policy` fields (`"name";r=…;t=…` and
 *   `"name";q=…;w=…;qu=…`): a policy counts requests unless its `qu` names another unit
 *   (a unit naming tokens fills the token fields; bytes and concurrency are left out);
 *   of several policies of one unit, the one with the least remaining counts.
 *
 * Each window (requests, tokens) is taken whole from the first family that states it, in
 * that order. A value that cannot be read (a reset of `"soon"`, a negative count) leaves
 * its field out.
 *
 * @param headers a `Headers` instance, a `Map`, or a plain object (names in any case),
 *   such as the AI SDK's `response.headers` or an `APICallError`'s `responseHeaders`
 */
export function limitsFromHeaders(headers: unknown): ProviderLimits | undefined;

/**
 * A value of {@link AiSdkProviderConfig} that may be given as such or as a function of
 * the request (which may return a promise).
 */
export type PerRequest<T> = T | ((request: ProviderRequest) => T | Promise<T>);

/**
 * Configuration of {@link aiSdkProvider}. Pass the SDK's own functions: the package never
 * imports `ai`.
 */
export interface AiSdkProviderConfig {
  /**
   * The model: an `@ai-sdk/*` provider's model (`openai("gpt-4o-mini")`), an id the SDK
   * resolves, or a function of the request that returns one (for instance by
   * `request.providerId`).
   */
  model: PerRequest<unknown>;
  /** `generateText` from `"ai"`; required unless `stream` is `true`. */
  generateText?: ((options: any) => PromiseLike<any>) | undefined;
  /** `streamText` from `"ai"`; required with `stream: true`. */
  streamText?: ((options: any) => any) | undefined;
  /**
   * Stream the reply (`streamText`): paragraphs resolve as the model writes them.
   * @default false
   */
  stream?: boolean | undefined;
  /**
   * The system prompt, or a function of the request that returns it (returning
   * `undefined` asks for the default); `request.instructions` is appended for a batch.
   * Sent as `instructions` (ai 7) and as `system` (ai 5 and 6; ai 7 reads it when
   * `instructions` is absent), so no SDK version needs to be named.
   * @default a translator prompt from `request.sourceLang` to `request.targetLang`
   *   ("the translation only, formatting kept"), with `request.context` when non-empty
   */
  system?: PerRequest<string | undefined> | undefined;
  /**
   * Sampling temperature. A batch's retries go out at
   * `max(temperature, min(1, temperature + 0.3 * attempt))`, as with `openAIProvider`.
   * @default 0, as `openAIProvider` (a model the SDK knows takes no temperature drops it
   *   with a warning)
   */
  temperature?: number | undefined;
  /**
   * The SDK's `providerOptions`, passed as they are.
   * @default none
   */
  providerOptions?: Record<string, unknown> | undefined;
  /**
   * Extra HTTP headers, passed to the SDK as they are.
   * @default none
   */
  headers?: Record<string, string | undefined> | undefined;
  /**
   * The user prompt as a function of the request, for prompt templates of your own:
   * `(request) => template.replace("{{input}}", request.text)`.
   * @default `request.text`
   */
  prompt?: ((request: ProviderRequest) => string | Promise<string>) | undefined;
}

/**
 * A provider that calls the Vercel AI SDK. Each call passes `model`, the system prompt
 * (see {@link AiSdkProviderConfig.system}), `prompt: request.text` (or the `prompt`
 * option's), `maxOutputTokens: request.maxOutputTokens` (rounded up), `abortSignal:
 * request.signal`, `maxRetries: 0` (the pacer retries), `temperature`, `providerOptions`
 * and `headers`. It resolves with the result's text, as `{ translations, usage, limits,
 * truncated }` when the SDK reports usage (`inputTokens`, `outputTokens`), the response
 * headers state limits ({@link limitsFromHeaders}), or the finish reason is `"length"`
 * (`truncated: true`).
 *
 * With `stream: true` it resolves with a stream: the text pieces of `fullStream`
 * (reasoning is no text), then one `{ usage, limits, truncated }` value when any is
 * known. An `error` part of the stream is thrown, so that a 429 that `streamText`
 * reports in its stream is read as a 429. Errors are read as {@link Provider} says, the
 * AI SDK's fields included.
 *
 * @throws {PacerError} synchronously, code `invalid_options`, without `model`, without
 * the function its `stream` setting needs, or with an option that is invalid or unknown;
 * the message and `option` name it.
 *
 * @example
 * import { generateText } from "ai";
 * import { createOpenAI } from "@ai-sdk/openai";
 * const openai = createOpenAI({ apiKey });
 * const pacer = new BatchPacer(aiSdkProvider({ model: openai("gpt-4o-mini"), generateText }));
 */
export function aiSdkProvider(config: AiSdkProviderConfig): Provider;

/**
 * One provider for several: each call goes to `map[request.providerId]`, what that
 * provider returns (a promise, a value or a stream) coming back unchanged. Use it with
 * `fallbackProviders`, whose calls carry the fallback's `providerId` (and `fallbackFrom`).
 *
 * The map is copied when the router is made, and read by own properties only (a
 * `providerId` such as `"constructor"` or `"__proto__"` never reaches
 * `Object.prototype`). A call whose `providerId` the map does not hold is a failed call:
 * it rejects with an `Error` with `retryable: false` whose message names the id and the
 * ids the map holds (`routeProviders has no provider for providerId "x" (it has: "a",
 * "b")`).
 *
 * Valid values: a plain object whose every value is a provider function.
 * @default none (the argument is required)
 * @throws {PacerError} code `invalid_options` when `map` is not a plain object (a `Map`,
 *   an array, `null` ...) or one of its values is not a function; the message names the
 *   key (also in `option`) or what it got.
 *
 * @example
 * const pacer = new BatchPacer(
 *   routeProviders({
 *     "gemini-flash": openAIProvider({ baseUrl: GEMINI, apiKey, model: "gemini-2.5-flash" }),
 *     groq: openAIProvider({ baseUrl: "https://api.groq.com/openai/v1", apiKey: groqKey, model: "llama-3.1-8b-instant" }),
 *   }),
 *   { fallbackProviders: { "gemini-flash": "groq" } },
 * );
 */
export function routeProviders(map: Readonly<Record<string, Provider>>): Provider;

/** Configuration of {@link deeplProvider}. */
export interface DeepLProviderConfig {
  /**
   * The DeepL authentication key, sent as `Authorization: DeepL-Auth-Key <apiKey>`
   * (surrounding white space is trimmed). It chooses the host when `baseUrl` is not
   * given: a key ending in `:fx` is a DeepL API Free key. It never appears in the errors
   * the provider throws.
   *
   * Valid values: a non-empty string of visible ASCII characters.
   * @default none (required)
   */
  apiKey: string;
  /**
   * The fetch implementation.
   * @default `globalThis.fetch`, looked up at each call
   */
  fetch?: typeof fetch | undefined;
  /**
   * The API's origin (and path prefix, e.g. a proxy's); requests go to
   * `${baseUrl}/v2/translate`.
   *
   * Valid values: an http(s) URL.
   * @default `"https://api-free.deepl.com"` for a key ending in `:fx`, else `"https://api.deepl.com"`
   */
  baseUrl?: string | undefined;
}

/**
 * The error {@link deeplProvider}'s provider rejects with for an HTTP error status. Its
 * message holds facts only: `DeepL API answered <status> <reason>: <DeepL's message and
 * detail, or the body's first 200 characters>`, the key redacted.
 */
export interface DeepLProviderError extends Error {
  /** The HTTP status, on every HTTP error (network errors and aborts have none). */
  status: number;
  /** From `Retry-After` (delay-seconds, or an HTTP-date). */
  retryAfterMs?: number;
  /**
   * `"billing"` for 456: the character quota of the billing period (DeepL API Free) or
   * the Cost Control limit (Pro) is spent, so no retry can help until the user acts.
   */
  quota?: "billing";
}

/**
 * A provider for DeepL's text translation API: `POST {baseUrl}/v2/translate` with the
 * JSON body `{ text: request.texts, target_lang, source_lang? }`. It sends every text of
 * the request in one call (a single request has one, an array batch several) and
 * resolves with one translation per text, in order (`translations[i].text`).
 *
 * Languages: `target_lang` is `request.targetLang` in upper case with `_` read as `-`
 * (`"en-us"` → `"EN-US"`), Chinese by region mapped to DeepL's scripts (`"zh-CN"`,
 * `"zh-SG"` → `"ZH-HANS"`; `"zh-TW"`, `"zh-HK"`, `"zh-MO"` → `"ZH-HANT"`), other codes
 * as written; `source_lang` is `request.sourceLang` without its region or script
 * (`"en-GB"` → `"EN"`), left out for `"auto"` or `""` so that DeepL detects it.
 *
 * HTTP errors reject with a {@link DeepLProviderError}: 429 is retried after its
 * `Retry-After`, 456 is `quota: "billing"`, 403 (a wrong key) a settings error, 413 splits
 * a batch. A 200 whose body is not DeepL's reply fails without a status. `request.signal`
 * is given to fetch. The key never appears in an error, an event, `stats()` or `snapshot()`.
 *
 * @throws {PacerError} synchronously, code `invalid_options`, when an option is invalid
 * or unknown (`apiKey` missing, empty or not a string; `baseUrl` not an http(s) URL;
 * `fetch` not a function); `option` and the message name it (`<redacted>` for the key).
 *
 * @example
 * const pacer = new BatchPacer(deeplProvider({ apiKey: settings.deeplKey }));
 * await pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "deepl", llm: false });
 */
export function deeplProvider(config: DeepLProviderConfig): Provider;

/**
 * The cache key of an item: lowercase hex SHA-256 over the length-prefixed fields
 * `providerId`, `sourceLang`, `targetLang`, `context`, `llm` and `text` (defaults
 * applied), and `scope` as a seventh field when it is not empty (an item without a scope
 * keeps the key it always had). The format is stable across versions.
 *
 * @throws {PacerError} `not_initialized` before `init()`, `invalid_input` for an invalid item.
 */
export function cacheKey(item: TranslateItem): string;

// ---------------------------------------------------------------------------------------
// Persistent cache
// ---------------------------------------------------------------------------------------

/**
 * A persistent store for the `cache` option (see {@link BatchPacerOptions.cache}), keyed
 * by {@link cacheKey}. Either method may answer synchronously or with a promise.
 *
 * @example
 * const map = new Map<string, string>();
 * const store: CacheStore = {
 *   async get(key) { return map.get(key); },
 *   async set(key, value) { map.set(key, value); },
 * };
 */
export interface CacheStore {
  /**
   * The translation stored under `key`, or `undefined` / `null` when there is none. Any
   * other value, a throw, a rejection or no answer within `timeoutMs` (5,000 ms when
   * `timeoutMs` is 0) counts as a miss and is reported as a `cacheError` event.
   */
  get(key: string): string | undefined | null | Promise<string | undefined | null>;
  /**
   * Stores a successful translation under `key`. Not awaited by the pacer; a throw or a
   * rejection is reported as a `cacheError` event.
   */
  set(key: string, value: string): unknown;
}

/** Options of {@link indexedDBCache}. An option set to `undefined` counts as not given. */
export interface IndexedDBCacheOptions {
  /**
   * The database name (one database per name). A non-empty string.
   * @default "batch-pacer"
   */
  name?: string | undefined;
  /**
   * Entries kept; the oldest beyond it are evicted. An integer >= 1.
   * @default 10000
   */
  maxEntries?: number | undefined;
  /**
   * Age in milliseconds after which an entry is never returned. A finite number > 0.
   * @default 604800000 (7 days)
   */
  ttlMs?: number | undefined;
}

/**
 * The store returned by {@link indexedDBCache}: a {@link CacheStore} with promise-based
 * `get` and `set`, plus its settings and maintenance methods. A frozen object.
 */
export interface IndexedDBCache extends CacheStore {
  /**
   * `false` when the context has no IndexedDB (`globalThis.indexedDB` missing or
   * unreadable): every `get` then resolves `undefined` and every `set` resolves without
   * storing anything, so a pacer sees misses only.
   */
  readonly available: boolean;
  /** The database name. */
  readonly name: string;
  /** Entries kept; the oldest beyond it are evicted. */
  readonly maxEntries: number;
  /** Age in milliseconds after which an entry is never returned. */
  readonly ttlMs: number;
  /**
   * The value stored under `key`, or `undefined` when absent or older than `ttlMs` (an
   * expired entry is then deleted in the background). The gets made in the same turn
   * share one read-only transaction. Rejects on failure (e.g. the database cannot be
   * opened); a key that is not a non-empty string rejects with a `TypeError`.
   */
  get(key: string): Promise<string | undefined>;
  /**
   * Stores `value` under `key` with a fresh write time (re-setting a key refreshes it);
   * resolves when the write transaction has committed, rejects on failure (quota, closed
   * database ...). The sets made in the same turn share one transaction and succeed or
   * fail together.
   */
  set(key: string, value: string): Promise<void>;
  /** The number of stored entries (expired ones not yet deleted included); `0` when unavailable. */
  size(): Promise<number>;
  /** Deletes the expired entries and the oldest beyond `maxEntries` now; resolves with the number deleted. */
  prune(): Promise<number>;
  /** Deletes every entry. */
  clear(): Promise<void>;
  /** Closes the connection; the next call opens it again. */
  close(): void;
}

/**
 * A persistent store for `new BatchPacer(provider, { cache })`, kept in IndexedDB so that
 * translations outlive an extension service worker that the browser stops when idle.
 * Works in a page, a dedicated worker, an MV3 service worker and a Firefox background
 * page.
 *
 * It evicts the oldest entries past `maxEntries` (the database may briefly hold up to
 * 10% more) and never returns an entry older than `ttlMs`. The connection is opened on
 * first use and reused. Without IndexedDB (Node, some privacy modes) creation does not
 * throw: `available` is `false` and the store only misses.
 *
 * @param options `name` (default `"batch-pacer"`), `maxEntries` (default `10000`),
 *   `ttlMs` (default 7 days).
 * @throws {PacerError} code `invalid_options` (with `option`): an option with an invalid
 *   value, or an unknown option name, e.g. `maxEntries must be an integer >= 1 (got 0)`.
 *
 * @example
 * const pacer = new BatchPacer(provider, { cache: indexedDBCache({ ttlMs: 24 * 3600 * 1000 }) });
 */
export function indexedDBCache(options?: IndexedDBCacheOptions): IndexedDBCache;

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

/** A call was answered 429 and will be retried: every call to the provider pauses. */
export interface RateLimitedEvent {
  type: "rateLimited";
  providerId: string;
  /** The Retry-After the provider gave, in milliseconds; `null` when it gave none. */
  retryAfterMs: number | null;
  /** How long calls to this provider are paused, in milliseconds. */
  pausedForMs: number;
}

/** The provider's own rate changed (only with `adaptiveRate`). */
export interface AdaptiveRateEvent {
  type: "adaptiveRate";
  providerId: string;
  /**
   * The provider's new rate in calls per second; `null` when it is back to full `rate`
   * (its burst, up to `capacity`, is then earned back at that rate).
   */
  rate: number | null;
}

/** A call will be tried again. */
export interface RetryEvent {
  type: "retry";
  providerId: string;
  /**
   * Why: `"count_mismatch"` (wrong segment count), `"error"` (network error, timeout,
   * bad reply, 408, 409, 5xx) or `"rate_limited"` (429).
   */
  reason: "count_mismatch" | "error" | "rate_limited";
  /** The `attempt` number the retry will carry in its request. */
  attempt: number;
  /**
   * Backoff in milliseconds before the retry may start (it also needs a token). `0` for
   * 429 retries, which wait for the provider's pause instead.
   */
  delayMs: number;
}

/** A batch reply did not map onto the texts sent. */
export interface CountMismatchEvent {
  type: "countMismatch";
  providerId: string;
  /** Texts sent. */
  expected: number;
  /** Segments found (`expected` when the count was right but a segment was empty). */
  got: number;
}

/** A provider's learned batch size changed (`adaptiveBatching`). */
export interface BatchLimitEvent {
  type: "batchLimit";
  providerId: string;
  /** Most items in its batches from now on. */
  limit: number;
}

/** Items moved from a provider that cannot serve them to its fallback (`fallbackProviders`). */
export interface ProviderFallbackEvent {
  type: "providerFallback";
  /** The provider that could not serve them. */
  from: string;
  /** The provider that takes them. */
  to: string;
  /** How many items moved. */
  items: number;
}

/** A batch is sent again one item at a time (`fallbackToIndividual`). */
export interface FallbackEvent {
  type: "fallback";
  providerId: string;
  /** Items in the batch. */
  items: number;
}

/** A call took longer than its timeout (`timeoutMs`, plus `timeoutPerCharacterMs` per character before a first value) and was aborted. */
export interface TimeoutEvent {
  type: "timeout";
  providerId: string;
}

/**
 * The `cache` store failed: a `get` threw, rejected, returned a value that is not a
 * string, `undefined` or `null`, or timed out (the item was treated as a miss), or a
 * `set` threw or rejected (the translation was not stored).
 */
export interface CacheErrorEvent {
  type: "cacheError";
  /** Which store method failed. */
  operation: "get" | "set";
  /** The error's message, or a description of what went wrong. */
  message: string;
}

/** What `onEvent` receives; switch on `type`. */
export type PacerEvent =
  | RateLimitedEvent
  | AdaptiveRateEvent
  | RetryEvent
  | CountMismatchEvent
  | FallbackEvent
  | BatchLimitEvent
  | ProviderFallbackEvent
  | TimeoutEvent
  | CacheErrorEvent
  | LimitedEvent
  | BlockedEvent;

/** A provider's due calls wait because it reported no room for them (`limits`). */
export interface LimitedEvent {
  type: "limited";
  providerId: string;
  /** Which of its windows is spent. */
  reason: "requests" | "tokens";
  /** Until the window resets, in milliseconds. */
  resetMs: number;
  /** When it resets, in milliseconds since the epoch. */
  retryAt: number;
}

/**
 * Every item queued for a provider was rejected at once: a settings error (401, 403,
 * 404: check the key, the model, the base URL), a billing error (out of credit or at a
 * spending cap), or a spent daily quota (items reject until `retryAt`).
 */
export interface BlockedEvent {
  type: "blocked";
  providerId: string;
  reason: "settings" | "billing" | "daily";
  /** The HTTP status of the failure. */
  status?: number;
  /** What the items were rejected with. */
  message: string;
  /** For a daily quota: its reset, in milliseconds since the epoch, when known. */
  retryAt?: number;
}

// ---------------------------------------------------------------------------------------
// Stats
// ---------------------------------------------------------------------------------------

/**
 * Counters since construction and current gauges, as returned by `pacer.stats()`.
 *
 * Invariant: `items === succeeded + failed + aborted + disposed + pending`.
 */
export interface PacerStats {
  /** Accepted `translate` calls (invalid items that rejected `invalid_input` are not counted). */
  items: number;
  /** Items answered from the in-memory cache or the `cache` store. */
  cacheHits: number;
  /** Items that shared an identical queued or running item instead of a provider item of their own. */
  dedupHits: number;
  /** Provider calls started, every one: first tries, retries, fallback single calls and `run` tries. */
  providerCalls: number;
  /** Provider calls that carried more than one text. */
  batchCalls: number;
  /**
   * Provider calls that repeated an earlier call of the same texts: count-mismatch,
   * error and 429 retries. The single calls of a fallback are not retries.
   */
  retries: number;
  /** Replies whose segment count did not fit the batch (or that had an empty segment). */
  countMismatches: number;
  /** Batches sent again one item at a time. */
  fallbacks: number;
  /** 429 answers received. */
  rateLimited: number;
  /** Items rejected with `provider_error`, `timeout` or `count_mismatch`. */
  failed: number;
  /** Items rejected with `aborted`. */
  aborted: number;
  /** Items resolved with a translation (empty-text, cached and deduplicated items included). */
  succeeded: number;
  /** Items rejected with `disposed`. */
  disposed: number;
  /**
   * Settlements of an item that had settled already; the pacer drops them, so a promise
   * still settles once. Always 0: a nonzero count is a bug in the pacer, worth a report.
   */
  duplicateSettlements: number;
  /** Gauge: accepted items not settled yet. */
  pending: number;
  /** Gauge: provider items waiting to be sent (identical items shared by dedup count once). */
  queued: number;
  /** Gauge: provider calls running. */
  inFlight: number;
  /** Prompt tokens the provider reported (`usage`), summed. */
  inputTokens: number;
  /** Completion tokens the provider reported (`usage`), summed. */
  outputTokens: number;
  /** Provider calls answered with a stream, broken ones too. */
  streamedCalls: number;
  /** Accepted `translate` calls resolved before their call's stream ended. */
  earlyResolved: number;
  /**
   * Items moved to a fallback provider (`fallbackProviders`), each once however far along
   * the chain it went.
   */
  fallbackItems: number;
  /**
   * Each provider that made calls (each member of a pool too, never a pool itself), by
   * `providerId`: its calls (retries and `pacer.run` calls included), the texts they
   * carried and the 429 answers among them, while the pacer remembers it (a provider
   * forgotten as idle, Rule 42 of docs/reference.md, takes its counts with it).
   */
  byProvider: Record<string, { calls: number; items: number; rateLimited: number }>;
}

// ---------------------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------------------

/** One provider's pacing state in a {@link PacerSnapshot}. */
export interface PacerProviderSnapshot {
  /** The provider (`TranslateItem.providerId`). */
  providerId: string;
  /** What was left of its 429 pause, in milliseconds (`0` when not paused). */
  pausedForMs: number;
  /** Its own rate after 429s, in calls per second; `null` when it ran at the pacer's `rate`. */
  adaptiveRate: number | null;
  /** The rate that met its last 429 (`0` when none). */
  adaptiveCeiling: number;
  /** A spent daily quota that still holds. */
  dailyBlock?: { blockedForMs: number; resetKnown: boolean; message: string };
  /**
   * The limits the provider last reported, while they still bound its calls: per window,
   * the room left at the snapshot (calls started since the report counted), the whole
   * window as far as seen, and the time to its reset. A restarted worker's first calls
   * respect them.
   */
  limits?: {
    requests?: { remaining: number; whole: number; resetMs: number };
    tokens?: { remaining: number; whole: number; resetMs: number };
  };
  /** The batch size it learned (`adaptiveBatching`), when it learned one. */
  batchLimit?: number;
  /** The tokens in its own request bucket (`providers`), when it has one. */
  tokens?: number;
  /**
   * How long its proven streamed translations were against their sources (characters
   * of translation per character of source), per language pair, once a few showed it: a
   * streamed reply's first segment resolves as soon as it closes when its length reads
   * as the first translation alone at that ratio.
   */
  lengthRatios?: { sourceLang: string; targetLang: string; ratio: number }[];
}

/**
 * The pacing state of a pacer, as returned by `pacer.snapshot()` and accepted by the
 * `restore` option: plain JSON. Persist it (e.g. in `chrome.storage.session`) so that a
 * restarted MV3 service worker neither bursts again nor forgets a 429 pause. Treat it as
 * opaque; unknown fields are rejected.
 *
 * @example
 * await chrome.storage.session.set({ pacer: pacer.snapshot() });
 * // later, in the restarted worker:
 * const { pacer: saved } = await chrome.storage.session.get("pacer");
 * const pacer = new BatchPacer(provider, { restore: saved });
 */
export interface PacerSnapshot {
  /** The format version. */
  version: 1;
  /** When the snapshot was taken, in milliseconds since the Unix epoch (`Date.now()`). */
  wallTime: number;
  /** Tokens in the bucket at `wallTime`. */
  tokens: number;
  /** The providers that were paused or had an adaptive rate. */
  providers: PacerProviderSnapshot[];
}

// ---------------------------------------------------------------------------------------
// BatchPacer.run
// ---------------------------------------------------------------------------------------

/** What a {@link BatchPacer.run} function gets for one try. */
export interface RunRequest {
  /** Aborted when this try times out, when the run's own signal aborts, or on dispose. */
  signal: AbortSignal;
  /** 0 for the first try, then 1, 2, ... */
  attempt: number;
}

/** The options of {@link BatchPacer.run}. */
export interface RunOptions {
  /**
   * Higher is dispatched first among the provider's queued work; FIFO among equals.
   * @default 0
   */
  priority?: number;
  /** Aborts the run: removed before it starts, rejected `aborted` at once while it runs. */
  signal?: AbortSignal;
}


// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/**
 * The code of a {@link PacerError}:
 * - `not_initialized`: the core was used before `init()` / `initSync()`.
 * - `invalid_options`: an unknown option, or an option with an invalid value.
 * - `invalid_input`: an invalid item passed to `translate` or `cacheKey`.
 * - `provider_error`: the provider failed for good (see `status` and `cause`).
 * - `timeout`: the provider calls timed out for good (`timeoutMs`).
 * - `count_mismatch`: a batch reply kept the wrong segment count and fallback is off.
 * - `aborted`: the item's `signal` was aborted.
 * - `disposed`: the pacer was disposed.
 * - `queue_full`: `maxQueued` provider items are held already (an addition).
 */
export type PacerErrorCode =
  | "not_initialized"
  | "invalid_options"
  | "invalid_input"
  | "provider_error"
  | "timeout"
  | "count_mismatch"
  | "aborted"
  | "disposed"
  | "queue_full";

/** The one error type of batch-pacer: `code` is stable, `message` says what went wrong. */
export class PacerError extends Error {
  constructor(
    code: PacerErrorCode,
    message: string,
    details?: {
      status?: number | undefined;
      cause?: unknown;
      retryAt?: number | undefined;
      option?: string | undefined;
    },
  );
  /** Always `"PacerError"`. */
  name: "PacerError";
  /** Why the operation failed. */
  code: PacerErrorCode;
  /** The provider's HTTP status, when known (`provider_error`). */
  status?: number;
  /** The error the provider threw or rejected with (`provider_error`), when there was one. */
  cause?: unknown;
  /**
   * For a spent daily quota (`provider_error`, status 429): when it resets, in
   * milliseconds since the epoch, when the provider said.
   */
  retryAt?: number;
  /**
   * For `invalid_options`: the option the error is about (`"rate"`, `"budget"`, a
   * misspelt name ...), so callers such as a settings page need not read the message.
   */
  option?: string;
  /** Every code a `PacerError` can carry. */
  static readonly codes: readonly PacerErrorCode[];
}
