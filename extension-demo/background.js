// The demo's background: one BatchPacer per flow (page, subtitles), each with its own
// settings (streamed replies and previews included) and its own fallback provider, behind
// the content scripts' ports. It survives being stopped: bucket tokens, 429 pauses, daily
// blocks and learned batch sizes go to storage.session and come back through `restore`.
//
// A flow with a fallback provider has two provider functions, one per providerId; the
// pacer gets one callback, `routeProviders` of both, and `fallbackProviders` maps the
// provider's id to the fallback's, so the items move when the provider cannot serve them.
//
// A flow with a pool of keys submits its items to the pool (the provider's id), whose
// members, one per key, are routed the same way, each to the provider with its own key;
// each key's limits from the options page are that member's own bucket (`providers`).
//
// MV3 rules kept here: static imports only, no top-level await, every listener
// registered synchronously at start; work waits for `ready` inside the listeners. When
// the start fails (a manifest whose CSP forbids WebAssembly), every message is still
// answered, with that error: a tab never waits for an answer that cannot come.
import { initSync, BatchPacer, openAIProvider, indexedDBCache, routeProviders } from "./vendor/batch-pacer/js/index.js";
// The core inline: no fetch of the .wasm each time the browser restarts this worker.
import { wasmBytes } from "./vendor/batch-pacer/pkg/inline-wasm.js";
import {
  DEFAULT_SETTINGS,
  FALLBACK_FIELDS,
  FALLBACK_KINDS,
  FLOWS,
  FLOW_FIELDS,
  FLOW_SWITCHES,
  MESSAGES,
  NO_KEY_LIMITS,
  PORT_NAME,
  ext,
  poolMembersOf,
  providerIdOf,
  resolveFallback,
} from "./protocol.js";
import { demoProvider } from "./demo-provider.js";
import { senderScope } from "./sender-scope.js";

const SNAPSHOT_EVERY_MS = 250;
// A streamed segment grows with every token; a tab needs a new preview of it only about
// as often as a reader notices, not once per token (a message to the tab each time).
const PREVIEW_EVERY_MS = 100;
const SERIES_STEP_MS = 1000;

let settings = structuredClone(DEFAULT_SETTINGS);
/**
 * The provider each flow calls: streaming or not, as that flow's switch says; with a
 * fallback, routed by `request.providerId` to the provider or to the fallback.
 */
let callProvider = { page: demoProvider(), subtitles: demoProvider() };
const pacers = {};
/**
 * Per flow, the batch size each provider learned (`adaptiveBatching`): from the pacer's
 * `batchLimit` events, and for a restarted worker from its restored snapshot
 * (`providers[].batchLimit`). A provider without one batches up to `maxItemsPerBatch`.
 * Not statistics: a reset keeps them, as the pacer does.
 */
const batchLimits = Object.fromEntries(FLOWS.map((flow) => [flow, {}]));
const cache = indexedDBCache({ name: "batch-pacer-demo" });
/** Counters of earlier worker lifetimes, so statistics survive a restart. */
let history = { startedAt: Date.now(), flows: {} };

ext.runtime.onConnect.addListener(onConnect);
ext.runtime.onMessage.addListener(onMessage);

const ready = start();
// The listeners answer with the error; this makes it visible in the worker's console too.
ready.catch((error) => console.error("batch-pacer demo: the background cannot start:", error));

async function start() {
  initSync(wasmBytes());
  const [local, session] = await Promise.all([
    ext.storage.local.get("settings"),
    ext.storage.session.get(["snapshots", "history"]),
  ]);
  settings = mergeSettings(DEFAULT_SETTINGS, local.settings);
  if (session.history) history = session.history;
  callProvider = providersFor(settings);
  for (const flow of FLOWS) {
    history.flows[flow] ??= emptyFlowHistory();
    pacers[flow] = createPacer(flow, session.snapshots?.[flow]);
  }
}

function emptyFlowHistory() {
  return { totals: {}, byProvider: {}, series: [], timing: emptyTiming(), cacheServed: 0 };
}

/**
 * Time to each page's first paragraph (from the page's first item to its first
 * translation), and from the start of the call that carried a paragraph to its
 * translation (the wait a streamed reply shortens, without the queue before the call).
 */
function emptyTiming() {
  return { pages: 0, firstMsSum: 0, lastFirstMs: null, paragraphs: 0, callMsSum: 0 };
}

/** Per flow: text -> when the latest provider call carrying it started. */
const callStarts = Object.fromEntries(FLOWS.map((flow) => [flow, new Map()]));

/*
 * Which provider served each paragraph ("Served" on the statistics page), counted
 * exactly, per `translate` call that resolved:
 *
 * - The provider wrapper below notes, for each text of a call that returned a reply
 *   (resolved, or returned a stream) rather than failing, the call's `request.providerId`
 *   (the fallback's id when the call carries moved items). Only texts of items still
 *   waiting are noted (`waiting`), so a late reply for an aborted item leaves nothing.
 * - A paragraph resolves only from a reply that proved it, and an item is in at most one
 *   call at a time: a text whose reply did not prove it is sent again, and that call's
 *   reply notes its provider again before the paragraph can resolve. So when `translate`
 *   resolves, the note is the provider whose reply carried its translation.
 * - Identical paragraphs (dedup) resolve together from the same note; a paragraph
 *   answered from the cache had no call and no note: it counts as `cacheServed`.
 * - Notes are keyed by what makes items compatible besides the provider (languages,
 *   context, text) and dropped once no item with that key waits. The scope is not on
 *   the request, so identical paragraphs of two tabs in flight at once share a note.
 *
 * Counting texts per successful call instead would count a batch's unproven texts twice
 * (once for the call that did not prove them, again for the one that did) and a shared
 * paragraph once.
 */
const servedBy = Object.fromEntries(FLOWS.map((flow) => [flow, new Map()]));
const waiting = Object.fromEntries(FLOWS.map((flow) => [flow, new Map()]));
const itemKey = (sourceLang, targetLang, context, text) => JSON.stringify([sourceLang, targetLang, context, text]);

function noteServed(flow, request) {
  for (const text of request.texts) {
    const key = itemKey(request.sourceLang, request.targetLang, request.context ?? "", text);
    if ((waiting[flow].get(key) ?? 0) > 0) servedBy[flow].set(key, request.providerId);
  }
}

function mergeSettings(base, stored) {
  const merged = structuredClone(base);
  if (!stored || typeof stored !== "object") return merged;
  for (const flow of FLOWS) {
    Object.assign(merged[flow], pick(stored[flow], [...FLOW_FIELDS, ...FLOW_SWITCHES]));
    Object.assign(merged[flow].fallback, pick(stored[flow]?.fallback, FALLBACK_FIELDS));
    // Settings saved by an older version of the demo have no pool and no key limits.
    const keys = stored[flow]?.pool?.keys;
    if (Array.isArray(keys) && keys.every((key) => typeof key === "string" && key !== "")) merged[flow].pool = { keys: [...keys] };
    Object.assign(merged[flow].keyLimits, pick(stored[flow]?.keyLimits, ["rpm", "burst"]));
  }
  Object.assign(merged.provider, pick(stored.provider, ["kind", "baseUrl", "apiKey", "model"]));
  for (const key of ["sourceLang", "targetLang"]) {
    if (typeof stored[key] === "string" && stored[key]) merged[key] = stored[key];
  }
  return merged;
}

function pick(object, keys) {
  const out = {};
  for (const key of keys) if (object && object[key] !== undefined) out[key] = object[key];
  return out;
}

function providerFor(provider, stream) {
  if (provider.kind === "openai") {
    const { baseUrl, apiKey, model } = provider;
    return openAIProvider({ baseUrl, apiKey, model, ...(stream ? { stream: true } : {}) });
  }
  return demoProvider({ stream });
}

/**
 * Each flow's provider callback. With a fallback, one provider function per providerId,
 * routed by `routeProviders` (the pacer sends moved items under the fallback's id).
 * Throws with `where` ("provider" or "<flow>.fallback") on a setting openAIProvider refuses.
 */
function providersFor(next) {
  return Object.fromEntries(
    FLOWS.map((flow) => {
      const stream = next[flow].stream === true;
      const main = withWhere("provider", () => providerFor(next.provider, stream));
      const fallback = resolveFallback(next[flow].fallback, next.provider);
      const keys = next[flow].pool.keys;
      if (!fallback && keys.length === 0) return [flow, main];
      const routes = { [providerIdOf(next.provider)]: main };
      poolMembersOf(providerIdOf(next.provider), keys.length).forEach((member, i) => {
        routes[member] = withWhere("provider", () => providerFor({ ...next.provider, apiKey: keys[i] }, stream));
      });
      // The same id for the fallback and the provider is refused by the pacer's options
      // ("maps ... to itself").
      if (fallback) routes[providerIdOf(fallback)] = withWhere(`${flow}.fallback`, () => providerFor(fallback, stream));
      return [flow, routeProviders(routes)];
    }),
  );
}

function withWhere(where, make) {
  try {
    return make();
  } catch (error) {
    throw Object.assign(error, { where });
  }
}

/** The flow's fallback provider's id, or null. */
function fallbackIdOf(next, flow) {
  const fallback = resolveFallback(next[flow].fallback, next.provider);
  return fallback ? providerIdOf(fallback) : null;
}

/** The ids of the flow's pool members, one per key of its pool ([] without a pool). */
function poolMembers(next, flow) {
  return poolMembersOf(providerIdOf(next.provider), next[flow].pool.keys.length);
}

/**
 * The pacer's `providers` and `pools` of a flow: each key's limits for each member of its
 * pool (or for the provider, without a pool), and the pool itself. Empty maps when the
 * flow has neither.
 */
function keyOptions(next, flow) {
  const { rpm, burst } = next[flow].keyLimits;
  const members = poolMembers(next, flow);
  const keyIds = members.length > 0 ? members : [providerIdOf(next.provider)];
  // An empty field or 0: no limits of its own. Anything else goes to the pacer, which
  // names what is wrong with it.
  const limits = rpm === 0 || rpm === "" ? null : { rate: typeof rpm === "number" ? rpm / 60 : rpm, capacity: burst };
  return {
    providers: limits === null ? {} : Object.fromEntries(keyIds.map((id) => [id, { ...limits }])),
    pools: members.length > 0 ? { [providerIdOf(next.provider)]: members } : {},
  };
}

/**
 * The BatchPacer options of a flow's settings (the switches are the demo's own), with
 * `fallbackProviders` from its fallback setting (an empty map clears it in setOptions),
 * and `providers` and `pools` from its keys when it has any, or when `previous` settings
 * had them (empty maps clear them).
 */
function pacerOptions(next, flow, previous = null) {
  const fallbackId = fallbackIdOf(next, flow);
  const keyed = keyOptions(next, flow);
  const before = previous === null ? { providers: {}, pools: {} } : keyOptions(previous, flow);
  const options = {
    ...pick(next[flow], FLOW_FIELDS),
    fallbackProviders: fallbackId === null ? {} : { [providerIdOf(next.provider)]: fallbackId },
  };
  for (const name of ["providers", "pools"]) {
    if (Object.keys(keyed[name]).length > 0 || Object.keys(before[name]).length > 0) options[name] = keyed[name];
  }
  return options;
}

function providerId() {
  return providerIdOf(settings.provider);
}

function createPacer(flow, snapshot) {
  // The provider is looked up per call, so a provider change needs no new pacer. The
  // pacing state is saved before the request leaves: a worker stopped at any moment
  // restarts knowing about every call that reached the network (no second burst).
  const provider = async (request) => {
    countCall(flow, request);
    for (const text of request.texts) callStarts[flow].set(text, performance.now());
    await saveState().catch(() => {});
    const reply = await callProvider[flow](request);
    noteServed(flow, request);
    // The pacer sums usage per pacer only; the statistics page shows it per provider.
    if (isStream(reply)) return countedStream(reply, (usage) => countUsage(flow, request.providerId, { usage }));
    countUsage(flow, request.providerId, reply);
    return reply;
  };
  const options = { ...pacerOptions(settings, flow), cache, onEvent: (event) => onPacerEvent(flow, event) };
  if (snapshot) {
    try {
      const pacer = new BatchPacer(provider, { ...options, restore: snapshot });
      // A restarted worker heard none of the batchLimit events: the snapshot has the limits.
      for (const entry of snapshot.providers ?? []) {
        if (Number.isInteger(entry?.batchLimit)) batchLimits[flow][entry.providerId] = entry.batchLimit;
      }
      return pacer;
    } catch {
      // A snapshot the package rejects (from the future, malformed): start afresh.
    }
  }
  return new BatchPacer(provider, options);
}

function isStream(reply) {
  return reply !== null && typeof reply === "object" && typeof reply[Symbol.asyncIterator] === "function";
}

/** The stream's values unchanged; each `{ usage }` among them is counted on the way. */
async function* countedStream(stream, onUsage) {
  for await (const value of stream) {
    if (value !== null && typeof value === "object" && value.usage) onUsage(value.usage);
    yield value;
  }
}

// ----- translation ports -----

function onConnect(port) {
  if (port.name !== PORT_NAME || port.sender?.id !== ext.runtime.id) return;
  // Closing the tab or navigating away closes the port: the tab's queued items go.
  const controller = new AbortController();
  port.onDisconnect.addListener(() => controller.abort());
  // The page's clock for "time to the first paragraph": from its first item on this port.
  // Its scope comes from the browser's word on the sender, never from the page's
  // messages: a page chooses its title (the context), not its tab or origin.
  const page = { startedAt: null, answered: false, scope: senderScope(port.sender) };
  port.onMessage.addListener(async (message) => {
    const receivedAt = performance.now();
    if (message?.type !== MESSAGES.translate || !FLOWS.includes(message.flow)) return;
    if (!Array.isArray(message.items)) return;
    try {
      await ready;
    } catch (error) {
      // The load error (a PacerError not_initialized that names the manifest line to add).
      for (const item of message.items) post(port, failure(item?.id, error));
      return;
    }
    page.startedAt ??= receivedAt;
    for (const item of message.items) translateItem(port, controller.signal, message, item, page);
  });
}

/** A paragraph translated: the first of its page, and its wait since its call started, join the flow's timing. */
function timeParagraph(flow, page, text) {
  // Counters saved by an older version of the demo lack some fields.
  const timing = Object.assign(emptyTiming(), flowHistory(flow).timing);
  flowHistory(flow).timing = timing;
  const now = performance.now();
  const startedAt = callStarts[flow].get(text);
  if (startedAt !== undefined) {
    // A cached paragraph had no call: it does not count.
    timing.paragraphs += 1;
    timing.callMsSum += now - startedAt;
  }
  if (page.answered) return;
  page.answered = true;
  timing.pages += 1;
  timing.firstMsSum += now - page.startedAt;
  timing.lastFirstMs = now - page.startedAt;
}

async function translateItem(port, signal, message, item, page) {
  const flow = message.flow;
  const id = providerId();
  const { stream, previews } = settings[flow];
  // Previews go to the tab, at most one per PREVIEW_EVERY_MS (the answer follows anyway);
  // the pacer never gives one for a settled item.
  let previewedAt = -Infinity;
  const onPartial = stream && previews
    ? (text) => {
        const now = performance.now();
        if (now - previewedAt < PREVIEW_EVERY_MS) return;
        previewedAt = now;
        post(port, { type: MESSAGES.partial, id: item.id, text });
      }
    : undefined;
  countParagraph(flow, id);
  const text = String(item?.text ?? "");
  const { sourceLang, targetLang } = settings;
  const context = typeof message.context === "string" ? message.context : "";
  const key = itemKey(sourceLang, targetLang, context, text);
  waiting[flow].set(key, (waiting[flow].get(key) ?? 0) + 1);
  try {
    const translation = await pacers[flow].translate({
      text,
      sourceLang,
      targetLang,
      providerId: id,
      context,
      scope: page.scope,
      priority: Number.isFinite(item?.priority) ? item.priority : 0,
      signal,
      ...(onPartial ? { onPartial } : {}),
    });
    countServed(flow, key, text);
    timeParagraph(flow, page, text);
    post(port, { type: MESSAGES.translated, id: item.id, translation });
  } catch (error) {
    if (error?.code === "aborted") return;
    post(port, failure(item.id, error));
  } finally {
    // Items sharing a text (dedup) settle together; the map holds only texts in flight.
    queueMicrotask(() => callStarts[flow].delete(text));
    const left = (waiting[flow].get(key) ?? 1) - 1;
    if (left > 0) waiting[flow].set(key, left);
    else {
      waiting[flow].delete(key);
      servedBy[flow].delete(key);
    }
    scheduleSave();
  }
}

/** A paragraph resolved: it counts for the provider that served it (see `servedBy`). */
function countServed(flow, key, text) {
  if (!/\S/.test(text)) return; // resolved to itself, no provider involved
  const served = servedBy[flow].get(key);
  if (served === undefined) flowHistory(flow).cacheServed = (flowHistory(flow).cacheServed ?? 0) + 1;
  else providerCounters(flow, served).served += 1;
}

function failure(id, error) {
  return { type: MESSAGES.failed, id, code: error?.code ?? "provider_error", message: String(error?.message ?? error) };
}

function post(port, message) {
  try {
    port.postMessage(message);
  } catch {
    // The tab went away; its content script will not need the answer.
  }
}

// ----- statistics -----

function flowHistory(flow) {
  return (history.flows[flow] ??= emptyFlowHistory());
}

function providerCounters(flow, id) {
  const counters = (flowHistory(flow).byProvider[id] ??= { paragraphs: 0, calls: 0, rateLimited: 0 });
  // Counters saved by an older version of the demo have no token or served fields yet.
  counters.inputTokens ??= 0;
  counters.outputTokens ??= 0;
  counters.served ??= 0;
  return counters;
}

function countParagraph(flow, id) {
  providerCounters(flow, id).paragraphs += 1;
}

function countCall(flow, request) {
  providerCounters(flow, request.providerId).calls += 1;
  sample(flow);
}

/** Adds the `usage` of a `{ translations, usage }` reply to that provider's counters. */
function countUsage(flow, id, reply) {
  const usage = reply !== null && typeof reply === "object" && !Array.isArray(reply) ? reply.usage : undefined;
  if (usage === null || typeof usage !== "object") return;
  const counters = providerCounters(flow, id);
  for (const key of ["inputTokens", "outputTokens"]) {
    const value = usage[key];
    if (Number.isFinite(value) && value >= 0) counters[key] += value;
  }
  sample(flow);
}

function onPacerEvent(flow, event) {
  if (event.type === "rateLimited") providerCounters(flow, event.providerId).rateLimited += 1;
  if (event.type === "batchLimit") batchLimits[flow][event.providerId] = event.limit;
  if (event.type === "blocked") {
    // No call to this provider can succeed until the user acts (or a daily quota
    // resets): the options page shows why, next to the provider settings, and where the
    // flow's items go meanwhile when it has a fallback.
    const { providerId, reason, status, message, retryAt } = event;
    const fallbackTo = providerId === providerIdOf(settings.provider) ? fallbackIdOf(settings, flow) : null;
    history.blocked = { flow, providerId, reason, status, message, retryAt, fallbackTo, at: Date.now() };
  }
  scheduleSave();
}

/** The block to show, or null once it no longer holds. */
function currentBlock() {
  const block = history.blocked;
  if (!block) return null;
  if (block.reason === "daily" && typeof block.retryAt === "number" && block.retryAt <= Date.now()) return null;
  return block;
}

/** Cumulative totals: earlier lifetimes plus this pacer's counters. */
function totals(flow) {
  const now = pacers[flow]?.stats() ?? {};
  const before = { ...flowHistory(flow).totals };
  for (const gauge of ["queued", "inFlight", "pending"]) delete before[gauge];
  return addCounters(now, before);
}

/** `a` + `b`, counter by counter, into nested objects (`byProvider`) too. */
function addCounters(a, b) {
  const sum = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (typeof value === "number") sum[key] = (typeof sum[key] === "number" ? sum[key] : 0) + value;
    else if (value !== null && typeof value === "object") sum[key] = addCounters(sum[key] ?? {}, value);
  }
  return sum;
}

function sample(flow) {
  const series = flowHistory(flow).series;
  const t = Math.round((Date.now() - history.startedAt) / SERIES_STEP_MS);
  const stats = totals(flow);
  const point = {
    t,
    paragraphs: stats.items ?? 0,
    calls: stats.providerCalls ?? 0,
    // Cumulative like the others: the page turns it into tokens per minute.
    tokens: (stats.inputTokens ?? 0) + (stats.outputTokens ?? 0),
  };
  if (series.length && series[series.length - 1].t === t) series[series.length - 1] = point;
  else series.push(point);
  if (series.length > 3600) series.shift();
}

function statsView() {
  const flows = {};
  for (const flow of FLOWS) {
    sample(flow);
    flows[flow] = {
      providerId: providerId(),
      fallbackProviderId: fallbackIdOf(settings, flow),
      poolMembers: poolMembers(settings, flow),
      maxItemsPerBatch: settings[flow].maxItemsPerBatch,
      pacer: totals(flow),
      byProvider: flowHistory(flow).byProvider,
      batchLimits: { ...batchLimits[flow] },
      cacheServed: flowHistory(flow).cacheServed ?? 0,
      series: flowHistory(flow).series,
      timing: { ...emptyTiming(), ...flowHistory(flow).timing },
    };
  }
  return { flows, startedAt: history.startedAt };
}

// ----- surviving a stopped worker -----

let saveTimer = null;

function scheduleSave() {
  if (saveTimer !== null) return;
  saveTimer = setTimeout(() => {
    saveTimer = null;
    saveState();
  }, SNAPSHOT_EVERY_MS);
}

/** Pacing state and statistics to storage.session (kept across worker restarts). */
async function saveState() {
  const snapshots = {};
  const saved = { startedAt: history.startedAt, flows: {}, blocked: history.blocked ?? null };
  for (const flow of FLOWS) {
    if (!pacers[flow]) continue;
    snapshots[flow] = pacers[flow].snapshot();
    saved.flows[flow] = { ...flowHistory(flow), totals: totals(flow) };
  }
  await ext.storage.session.set({ snapshots, history: saved });
}

// ----- options and statistics pages -----

function fromExtensionPage(sender) {
  return sender?.id === ext.runtime.id && typeof sender.url === "string" &&
    sender.url.startsWith(ext.runtime.getURL("")) && !sender.tab?.url?.startsWith("http");
}

function onMessage(message, sender, sendResponse) {
  // Content scripts may only translate (through their port): settings, the key and
  // the statistics are for the extension's own pages.
  if (!fromExtensionPage(sender)) {
    sendResponse({ ok: false, error: { code: "forbidden", message: "only extension pages may do this" } });
    return false;
  }
  // A failed start rejects here too: the page gets its PacerError code (not_initialized).
  handlePageMessage(message).then(sendResponse, (error) =>
    sendResponse({ ok: false, error: { code: error?.code ?? "internal", message: String(error?.message ?? error) } }));
  return true;
}

async function handlePageMessage(message) {
  await ready;
  switch (message?.type) {
    case MESSAGES.getSettings:
      return { ok: true, settings: publicSettings() };
    case MESSAGES.setSettings:
      return applySettings(message.settings);
    case MESSAGES.getStats:
      return { ok: true, stats: statsView() };
    case MESSAGES.getProviderStatus:
      return { ok: true, blocked: currentBlock() };
    case MESSAGES.resetStats:
      history = { startedAt: Date.now(), flows: {}, blocked: history.blocked ?? null };
      for (const flow of FLOWS) {
        history.flows[flow] = emptyFlowHistory();
        history.flows[flow].totals = negate(pacers[flow].stats());
      }
      await saveState();
      return { ok: true };
    default:
      return { ok: false, error: { code: "unknown_message", message: `unknown message type ${JSON.stringify(message?.type)}` } };
  }
}

/** Counters that cancel the current pacer's (`byProvider`'s too), so a reset starts from zero. */
function negate(stats) {
  const out = {};
  for (const [key, value] of Object.entries(stats)) {
    if (typeof value === "number") out[key] = -value;
    else if (value !== null && typeof value === "object") out[key] = negate(value);
  }
  return out;
}

/**
 * The options page's field of a package message about `providers` or `pools` (which
 * name `providers.<id>.<field>` and the pool), or null.
 */
function keyField(message) {
  if (/^providers\.[^ ]*\.rate\b/.test(message)) return "keyLimits.rpm";
  if (/^providers\.[^ ]*\.capacity\b/.test(message)) return "keyLimits.burst";
  if (message.startsWith("pools")) return "pool.keys";
  return null;
}

function publicSettings() {
  const { apiKey, ...provider } = settings.provider;
  const out = { ...structuredClone(settings), provider: { ...provider, apiKey: "", apiKeySet: Boolean(apiKey) } };
  for (const flow of FLOWS) {
    out[flow].fallback = { ...out[flow].fallback, apiKey: "", apiKeySet: Boolean(settings[flow].fallback.apiKey) };
    out[flow].pool = { keys: [], keysSet: settings[flow].pool.keys.length };
  }
  return out;
}

/** Validates everything with the package's own rules first; applies only if all is valid. */
async function applySettings(incoming) {
  if (!incoming || typeof incoming !== "object") {
    return { ok: false, error: { code: "invalid_options", message: "settings must be an object" } };
  }
  const next = structuredClone(settings);
  for (const flow of FLOWS) Object.assign(next[flow], pick(incoming[flow], [...FLOW_FIELDS, ...FLOW_SWITCHES]));
  const provider = { ...next.provider, ...pick(incoming.provider, ["kind", "baseUrl", "model"]) };
  if (typeof incoming.provider?.apiKey === "string" && incoming.provider.apiKey !== "") provider.apiKey = incoming.provider.apiKey;
  next.provider = provider;
  for (const flow of FLOWS) {
    const given = incoming[flow]?.fallback;
    const fallback = { ...next[flow].fallback, ...pick(given, ["kind", "baseUrl", "model"]) };
    // An empty key field keeps the stored key, as for the provider.
    if (typeof given?.apiKey === "string" && given.apiKey !== "") fallback.apiKey = given.apiKey;
    if (!FALLBACK_KINDS.includes(fallback.kind)) {
      const message = `the fallback provider must be one of ${FALLBACK_KINDS.join(", ")} (got ${JSON.stringify(fallback.kind)})`;
      return { ok: false, error: { flow, field: "fallback.kind", code: "invalid_options", message } };
    }
    for (const name of ["baseUrl", "model"]) {
      if (typeof fallback[name] !== "string") {
        const message = `${name} must be a string (got ${JSON.stringify(fallback[name])})`;
        return { ok: false, error: { flow, field: `fallback.${name}`, code: "invalid_options", message } };
      }
      fallback[name] = fallback[name].trim();
    }
    next[flow].fallback = fallback;
    const pool = incoming[flow]?.pool;
    if (pool?.clear === true) next[flow].pool = { keys: [] };
    else if (Array.isArray(pool?.keys) && pool.keys.length > 0) {
      const keys = pool.keys.map((key) => (typeof key === "string" ? key.trim() : key));
      if (!keys.every((key) => typeof key === "string" && key !== "")) {
        return { ok: false, error: { flow, field: "pool.keys", code: "invalid_options", message: "each key of the pool must be a non-empty string, one per line" } };
      }
      if (new Set(keys).size !== keys.length) {
        // Two members on one key would share its quota while counting as two.
        return { ok: false, error: { flow, field: "pool.keys", code: "invalid_options", message: "the pool lists the same key twice" } };
      }
      next[flow].pool = { keys };
    }
    next[flow].keyLimits = { ...NO_KEY_LIMITS, ...next[flow].keyLimits, ...pick(incoming[flow]?.keyLimits, ["rpm", "burst"]) };
  }
  for (const flow of FLOWS) {
    const field = FLOW_SWITCHES.find((name) => typeof next[flow][name] !== "boolean");
    if (field !== undefined) {
      const message = `${field} must be true or false (got ${JSON.stringify(next[flow][field])})`;
      return { ok: false, error: { flow, field, code: "invalid_options", message } };
    }
    try {
      new BatchPacer(() => "", pacerOptions(next, flow, settings)).dispose();
    } catch (error) {
      const text = String(error.message);
      if (text.startsWith("fallbackProviders ")) {
        // The only way the demo's map can be refused: the fallback is the provider itself.
        const message = `the fallback must be another provider or model than the provider settings' (${text})`;
        return { ok: false, error: { flow, field: "fallback.kind", code: error.code ?? "invalid_options", message } };
      }
      const field = FLOW_FIELDS.find((f) => text.startsWith(`${f} `)) ?? keyField(text);
      return { ok: false, error: { flow, field, code: error.code ?? "invalid_options", message: error.message } };
    }
  }
  let nextProvider;
  try {
    nextProvider = providersFor(next);
  } catch (error) {
    const message = String(error?.message ?? error);
    if (typeof error?.where === "string" && error.where.endsWith(".fallback")) {
      // openAIProvider's messages start with the option's name: "baseUrl must be ...".
      const flow = error.where.slice(0, -".fallback".length);
      const name = ["baseUrl", "model", "apiKey"].find((f) => message.startsWith(`${f} `));
      return { ok: false, error: { flow, field: name ? `fallback.${name}` : "fallback.kind", code: "invalid_options", message } };
    }
    return { ok: false, error: { flow: "provider", field: null, code: "invalid_options", message } };
  }
  for (const key of ["sourceLang", "targetLang"]) {
    if (typeof incoming[key] === "string" && incoming[key].trim()) next[key] = incoming[key].trim();
  }
  for (const flow of FLOWS) pacers[flow].setOptions(pacerOptions(next, flow, settings));
  settings = next;
  callProvider = nextProvider;
  // The user acted: items are sent again, so an old settings or billing message would mislead.
  if (history.blocked && history.blocked.reason !== "daily") history.blocked = null;
  await ext.storage.local.set({ settings });
  return { ok: true, settings: publicSettings() };
}
