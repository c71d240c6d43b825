// The messages between the demo extension's parts. One module so that every part
// speaks the same names; it has no side effects and runs in every extension context.

/** The two translation flows; each has its own BatchPacer and settings. */
export const FLOWS = Object.freeze(["page", "subtitles"]);

/**
 * Content script -> background, over a long-lived port named PORT_NAME (one per tab
 * and flow). Closing the tab or navigating closes the port, which aborts the tab's
 * queued items. A background restart also closes it: the content script reconnects
 * and sends again every item that has no answer yet.
 *
 *   { type: "translate", flow, sourceLang, targetLang, context,
 *     items: [{ id: string, text: string, priority: number }] }
 *
 * Background -> content script, one final message per item:
 *
 *   { type: "translated", id, translation }
 *   { type: "failed", id, code, message }       // a PacerError code
 *
 * and before it, when the flow streams replies with previews on, any number of
 *
 *   { type: "partial", id, text }               // the translation received so far
 */
export const PORT_NAME = "batch-pacer-translate";

/**
 * Extension pages (options, statistics) -> background, with runtime.sendMessage.
 * The background answers only senders whose URL is one of the extension's own pages.
 *
 *   { type: "getSettings" }                    -> { ok: true, settings }
 *   { type: "setSettings", settings }          -> { ok: true, settings } | { ok: false, error: { flow?, field?, code, message } }
 *   { type: "getStats" }                       -> { ok: true, stats }
 *   { type: "resetStats" }                     -> { ok: true }
 *   { type: "getProviderStatus" }              -> { ok: true, blocked: Blocked | null }
 *
 * settings = {
 *   page:      { rate, capacity, maxInFlight, maxCharactersPerBatch, maxItemsPerBatch, batchDelayMs,
 *                stream, previews,                    // FLOW_FIELDS, then FLOW_SWITCHES
 *                fallback: { kind: "none" | "demo" | "openai", baseUrl, apiKey, model },
 *                pool: { keys: string[] },           // more keys of the provider, used as one
 *                keyLimits: { rpm, burst } },        // each key's own quota, rpm 0 = none
 *   subtitles: { ...same fields },
 *   provider:  { kind: "demo" | "openai", baseUrl, apiKey, model },
 *   sourceLang, targetLang,
 * }
 * A flow's `fallback` is the provider its items move to when the provider cannot serve
 * them (a spent daily quota, a long 429 pause, a billing or settings error, retries
 * spent): the pacer's `fallbackProviders`, { [providerIdOf(provider)]: providerIdOf(fallback) }.
 * For "openai", an empty baseUrl means the provider's own endpoint (another model on the
 * same account), and with no key of its own it uses the provider's key on that same
 * endpoint only (a key is never sent to another host than its own).
 * A flow's `pool` lists keys of the provider (one per project or account, each with its
 * own quota): its items then go to the pacer's pool `providerIdOf(provider)`, whose
 * members are `poolMembersOf(...)`, one per key, each routed to the provider with its
 * own key. `keyLimits` gives each key (each member, or the provider itself without a
 * pool) its own bucket in the pacer's `providers`: `{ rate: rpm / 60, capacity: burst }`.
 * In setSettings, `pool.keys` replaces the stored keys when it holds any, `pool.clear:
 * true` forgets them, and otherwise they are kept.
 * The apiKeys are never sent to a content script and never logged; getSettings returns
 * them only to extension pages, as `apiKeySet: boolean` plus `apiKey: ""` (the options
 * page leaves the field empty to keep the stored key); the pool's as `{ keys: [], keysSet:
 * <how many> }`.
 *
 * stats = {
 *   flows: { page: FlowStats, subtitles: FlowStats },
 *   startedAt: epoch ms,
 * }
 * FlowStats = {
 *   providerId,                                 // "demo" or "openai:<baseUrl>#<model>"
 *   fallbackProviderId,                         // the flow's fallback's id, or null
 *   maxItemsPerBatch,                           // the flow's setting: a batch limit not learned
 *   poolMembers,                                // the flow's pool members' ids ([] without a pool)
 *   pacer: <BatchPacer.stats()>,                // items, providerCalls, retries, fallbackItems,
 *                                               // byProvider: { [id]: { calls, items, rateLimited } }, ...
 *   byProvider: { [providerId]: { paragraphs,   // asked for under this providerId
 *                                 served,       // translated by this provider (see background.js)
 *                                 calls, rateLimited, inputTokens, outputTokens } },
 *   batchLimits: { [providerId]: limit },       // learned batch sizes (adaptiveBatching)
 *   cacheServed,                                // paragraphs answered without a call (cache)
 *   timing: { pages, firstMsSum, lastFirstMs,    // time to each page's first paragraph
 *             paragraphs, callMsSum },          // from a paragraph's call start to its translation
 *   series: [{ t: seconds since startedAt, paragraphs, calls }],   // cumulative, one point per second of activity
 * }
 */
export const MESSAGES = Object.freeze({
  translate: "translate",
  translated: "translated",
  failed: "failed",
  partial: "partial",
  getSettings: "getSettings",
  setSettings: "setSettings",
  getStats: "getStats",
  resetStats: "resetStats",
  getProviderStatus: "getProviderStatus",
});

/*
 * Blocked = the last `blocked` event of either pacer, while it may still hold:
 *   { flow, providerId, reason: "settings" | "billing" | "daily", status?, message,
 *     retryAt?: epoch ms, fallbackTo: providerId | null, at: epoch ms }
 * (`fallbackTo`: the flow's fallback provider, where its items go meanwhile.)
 * A settings or billing block is cleared when the settings are applied again (the user
 * acted); a daily block when its retryAt has passed.
 */

/** Settings the options page edits per flow, in display order. */
export const FLOW_FIELDS = Object.freeze([
  "rate",
  "capacity",
  "maxInFlight",
  "maxCharactersPerBatch",
  "maxItemsPerBatch",
  "batchDelayMs",
]);

/**
 * Switches the options page edits per flow; they are the demo's, not BatchPacer options.
 * `stream`: the provider is asked for a streamed reply, so each paragraph shows as soon
 * as the reply proves it. `previews`: while a reply streams, a paragraph shows its
 * translation as it arrives, in a lighter style, until its own answer replaces it.
 */
export const FLOW_SWITCHES = Object.freeze(["stream", "previews"]);

/** The presets of the Request Control guide. `rate: null` keeps the current rate. */
export const PRESETS = Object.freeze({
  strictFreeTier: Object.freeze({
    label: "Strict free tier (60 requests/minute, no burst)",
    values: { rate: 1, capacity: 1, maxInFlight: 0, maxCharactersPerBatch: 800, maxItemsPerBatch: 4, batchDelayMs: 100 },
  }),
  fragileStructuredOutput: Object.freeze({
    label: "Fragile structured-output model",
    values: { rate: null, capacity: 1, maxInFlight: 0, maxCharactersPerBatch: 600, maxItemsPerBatch: 2, batchDelayMs: 100 },
  }),
  fastLocalModel: Object.freeze({
    label: "Fast local model",
    values: { rate: 8, capacity: 60, maxInFlight: 4, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100 },
  }),
});

/** The parts of a flow's fallback provider, and its kinds ("none": no fallback). */
export const FALLBACK_FIELDS = Object.freeze(["kind", "baseUrl", "apiKey", "model"]);
export const FALLBACK_KINDS = Object.freeze(["none", "demo", "openai"]);

const NO_FALLBACK = Object.freeze({ kind: "none", baseUrl: "", apiKey: "", model: "" });
/** Each key's own limits: none until the user gives a rate (requests per minute). */
export const NO_KEY_LIMITS = Object.freeze({ rpm: 0, burst: 1 });

/** Settings of a fresh install: the package defaults, the offline demo provider. */
export const DEFAULT_SETTINGS = Object.freeze({
  page: { rate: 8, capacity: 60, maxInFlight: 0, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100, stream: false, previews: true, fallback: { ...NO_FALLBACK }, pool: { keys: [] }, keyLimits: { ...NO_KEY_LIMITS } },
  subtitles: { rate: 8, capacity: 60, maxInFlight: 0, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100, stream: false, previews: true, fallback: { ...NO_FALLBACK }, pool: { keys: [] }, keyLimits: { ...NO_KEY_LIMITS } },
  provider: { kind: "demo", baseUrl: "", apiKey: "", model: "" },
  sourceLang: "en",
  targetLang: "de",
});

/**
 * The `providerId` of a provider setting: "demo", or "openai:<baseUrl>#<model>" (each
 * model its own id: free tiers give each model its own quota, and the pacer keeps 429
 * pauses, daily blocks and learned batch sizes per id).
 */
export function providerIdOf(provider) {
  if (provider?.kind !== "openai") return "demo";
  return `openai:${provider.baseUrl ?? ""}#${provider.model ?? ""}`;
}

/**
 * The ids of a pool's members, one per key: the pool's id and the key's place, never the
 * key itself (ids show on the statistics page and in events).
 */
export function poolMembersOf(poolId, keyCount) {
  return Array.from({ length: keyCount }, (_, i) => `${poolId}/key${i + 1}`);
}

/**
 * The provider a flow's `fallback` setting names, with the provider's endpoint and key
 * filled in where it has none of its own (see `settings` above), or null for "none".
 */
export function resolveFallback(fallback, provider) {
  if (!fallback || !FALLBACK_KINDS.includes(fallback.kind) || fallback.kind === "none") return null;
  if (fallback.kind === "demo") return { kind: "demo", baseUrl: "", apiKey: "", model: "" };
  const mainUrl = provider?.kind === "openai" ? provider.baseUrl ?? "" : "";
  const baseUrl = fallback.baseUrl || mainUrl;
  const apiKey = fallback.apiKey || (baseUrl === mainUrl && provider?.kind === "openai" ? provider.apiKey ?? "" : "");
  return { kind: "openai", baseUrl, apiKey, model: fallback.model ?? "" };
}

/** The browser's extension API: `browser` in Firefox, `chrome` in Chromium. */
export const ext = globalThis.browser ?? globalThis.chrome;

/**
 * Sends one message from an extension page to the background. The API is looked up at
 * call time, so a page works wherever the extension API appears before its first message.
 */
export async function send(message) {
  const api = globalThis.browser ?? globalThis.chrome;
  if (!api?.runtime?.sendMessage) throw new Error("the extension messaging API is not available");
  return api.runtime.sendMessage(message);
}

/** An error's message for the pages' status lines. */
export function describeFailure(error) {
  return error instanceof Error ? error.message : String(error);
}
