// The demo's background: one BatchPacer per flow (page, subtitles), each with its own
// settings (streamed replies and previews included), behind the content scripts' ports. It survives being stopped: bucket tokens
// and 429 pauses go to storage.session and come back through `restore`.
//
// MV3 rules kept here: static imports only, no top-level await, every listener
// registered synchronously at start; work waits for `ready` inside the listeners.
import { initSync, BatchPacer, openAIProvider, indexedDBCache } from "./vendor/batch-pacer/js/index.js";
// The core inline: no fetch of the .wasm each time the browser restarts this worker.
import { wasmBytes } from "./vendor/batch-pacer/pkg/inline-wasm.js";
import { DEFAULT_SETTINGS, FLOWS, FLOW_FIELDS, FLOW_SWITCHES, MESSAGES, PORT_NAME, ext } from "./protocol.js";
import { demoProvider } from "./demo-provider.js";

const SNAPSHOT_EVERY_MS = 250;
// A streamed segment grows with every token; a tab needs a new preview of it only about
// as often as a reader notices, not once per token (a message to the tab each time).
const PREVIEW_EVERY_MS = 100;
const SERIES_STEP_MS = 1000;

let settings = structuredClone(DEFAULT_SETTINGS);
/** The provider each flow calls: streaming or not, as that flow's switch says. */
let callProvider = { page: demoProvider(), subtitles: demoProvider() };
const pacers = {};
const cache = indexedDBCache({ name: "batch-pacer-demo" });
/** Counters of earlier worker lifetimes, so statistics survive a restart. */
let history = { startedAt: Date.now(), flows: {} };

const ready = start();

ext.runtime.onConnect.addListener(onConnect);
ext.runtime.onMessage.addListener(onMessage);

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
  return { totals: {}, byProvider: {}, series: [], timing: emptyTiming() };
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

function mergeSettings(base, stored) {
  const merged = structuredClone(base);
  if (!stored || typeof stored !== "object") return merged;
  for (const flow of FLOWS) Object.assign(merged[flow], pick(stored[flow], [...FLOW_FIELDS, ...FLOW_SWITCHES]));
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

function providersFor(next) {
  return Object.fromEntries(FLOWS.map((flow) => [flow, providerFor(next.provider, next[flow].stream === true)]));
}

/** The BatchPacer options of a flow's settings (the switches are the demo's own). */
function pacerOptions(flowSettings) {
  return pick(flowSettings, FLOW_FIELDS);
}

function providerId() {
  return settings.provider.kind === "openai" ? `openai:${settings.provider.baseUrl}` : "demo";
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
    // The pacer sums usage per pacer only; the statistics page shows it per provider.
    if (isStream(reply)) return countedStream(reply, (usage) => countUsage(flow, request.providerId, { usage }));
    countUsage(flow, request.providerId, reply);
    return reply;
  };
  const options = { ...pacerOptions(settings[flow]), cache, onEvent: (event) => onPacerEvent(flow, event) };
  if (snapshot) {
    try {
      return new BatchPacer(provider, { ...options, restore: snapshot });
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
  const page = { startedAt: null, answered: false };
  port.onMessage.addListener(async (message) => {
    const receivedAt = performance.now();
    await ready;
    if (message?.type !== MESSAGES.translate || !FLOWS.includes(message.flow)) return;
    if (!Array.isArray(message.items)) return;
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
  try {
    const translation = await pacers[flow].translate({
      text,
      sourceLang: settings.sourceLang,
      targetLang: settings.targetLang,
      providerId: id,
      context: typeof message.context === "string" ? message.context : "",
      priority: Number.isFinite(item?.priority) ? item.priority : 0,
      signal,
      ...(onPartial ? { onPartial } : {}),
    });
    timeParagraph(flow, page, text);
    post(port, { type: MESSAGES.translated, id: item.id, translation });
  } catch (error) {
    if (error?.code === "aborted") return;
    post(port, { type: MESSAGES.failed, id: item.id, code: error?.code ?? "provider_error", message: String(error?.message ?? error) });
  } finally {
    // Items sharing a text (dedup) settle together; the map holds only texts in flight.
    queueMicrotask(() => callStarts[flow].delete(text));
    scheduleSave();
  }
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
  // Counters saved by an older version of the demo have no token fields yet.
  counters.inputTokens ??= 0;
  counters.outputTokens ??= 0;
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
  if (event.type === "blocked") {
    // No call to this provider can succeed until the user acts (or a daily quota
    // resets): the options page shows why, next to the provider settings.
    const { providerId, reason, status, message, retryAt } = event;
    history.blocked = { flow, providerId, reason, status, message, retryAt, at: Date.now() };
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
  const before = flowHistory(flow).totals;
  const sum = { ...now };
  for (const [key, value] of Object.entries(before)) {
    if (key !== "queued" && key !== "inFlight" && key !== "pending") sum[key] = (sum[key] ?? 0) + value;
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
      pacer: totals(flow),
      byProvider: flowHistory(flow).byProvider,
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
  handlePageMessage(message).then(sendResponse, (error) =>
    sendResponse({ ok: false, error: { code: "internal", message: String(error?.message ?? error) } }));
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

/** Counters that cancel the current pacer's, so a reset starts from zero. */
function negate(stats) {
  const out = {};
  for (const [key, value] of Object.entries(stats)) out[key] = -value;
  return out;
}

function publicSettings() {
  const { apiKey, ...provider } = settings.provider;
  return { ...structuredClone(settings), provider: { ...provider, apiKey: "", apiKeySet: Boolean(apiKey) } };
}

/** Validates everything with the package's own rules first; applies only if all is valid. */
async function applySettings(incoming) {
  if (!incoming || typeof incoming !== "object") {
    return { ok: false, error: { code: "invalid_options", message: "settings must be an object" } };
  }
  const next = structuredClone(settings);
  for (const flow of FLOWS) Object.assign(next[flow], pick(incoming[flow], [...FLOW_FIELDS, ...FLOW_SWITCHES]));
  for (const flow of FLOWS) {
    const field = FLOW_SWITCHES.find((name) => typeof next[flow][name] !== "boolean");
    if (field !== undefined) {
      const message = `${field} must be true or false (got ${JSON.stringify(next[flow][field])})`;
      return { ok: false, error: { flow, field, code: "invalid_options", message } };
    }
    try {
      new BatchPacer(() => "", pacerOptions(next[flow])).dispose();
    } catch (error) {
      const field = FLOW_FIELDS.find((f) => String(error.message).startsWith(`${f} `)) ?? null;
      return { ok: false, error: { flow, field, code: error.code ?? "invalid_options", message: error.message } };
    }
  }
  const provider = { ...next.provider, ...pick(incoming.provider, ["kind", "baseUrl", "model"]) };
  if (typeof incoming.provider?.apiKey === "string" && incoming.provider.apiKey !== "") provider.apiKey = incoming.provider.apiKey;
  let nextProvider;
  try {
    nextProvider = providersFor({ ...next, provider });
  } catch (error) {
    return { ok: false, error: { flow: "provider", field: null, code: "invalid_options", message: error.message } };
  }
  for (const key of ["sourceLang", "targetLang"]) {
    if (typeof incoming[key] === "string" && incoming[key].trim()) next[key] = incoming[key].trim();
  }
  next.provider = provider;
  for (const flow of FLOWS) pacers[flow].setOptions(pacerOptions(next[flow]));
  settings = next;
  callProvider = nextProvider;
  // The user acted: items are sent again, so an old settings or billing message would mislead.
  if (history.blocked && history.blocked.reason !== "daily") history.blocked = null;
  await ext.storage.local.set({ settings });
  return { ok: true, settings: publicSettings() };
}
