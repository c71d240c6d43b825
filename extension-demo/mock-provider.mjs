#!/usr/bin/env node
// A local OpenAI-compatible chat-completions server for demos and tests of batch-pacer.
// It pseudo-translates deterministically, enforces a requests-per-minute quota with a
// token bucket (429 + Retry-After), adds latency and injects faults on demand.
// No dependencies; Node >= 20. It listens on 127.0.0.1 only.
//
// CLI:
//   node extension-demo/mock-provider.mjs --port 8787 --rpm 60 --burst 1 --latency 300 --fault none
//   (run with --help for every flag). Prints one line
//   "mock provider listening on http://127.0.0.1:PORT/v1" and serves until SIGINT/SIGTERM.
//
// Library:
//   import { startMockProvider } from "./extension-demo/mock-provider.mjs";
//   const mock = await startMockProvider({ port: 0, rpm: 600, burst: 1 });
//   mock.url            // "http://127.0.0.1:PORT/v1", the baseUrl for openAIProvider
//   mock.stats()        // counters, see `stats()` below
//   mock.setOptions({ fault: "wrong-count" });
//   mock.reset();       // zero the counters, refill the bucket, reseed the PRNG
//   await mock.close(); // closes every socket, hanging requests included
//
// Endpoints:
//   POST    /v1/chat/completions   {model, messages:[{role, content}...], stream?, stream_options?}
//   GET     /v1/models             lists the single model "mock-translator"
//   OPTIONS *                      CORS preflight (Access-Control-Allow-Origin: *)
//   anything else                  404 JSON error (405 for a wrong method on a known path)
//
// Pseudo-translation: the content of the last user message becomes
//   "[<lang>] " + the text with the case of its ASCII letters swapped
// (`pseudoTranslate`, undone by `reversePseudoTranslation`). <lang> is the target language
// named in the system prompt ("... into German", "... from en to de") or "xx".
// A batch is translated segment by segment, in its own layout: in the markers layout
// (each text between its pair, `<s21>` … `</s21>`, as the pacer sends by default) each
// translation stands between its segment's pair, one per line; in the separator layout
// (texts joined by a separator line made only of 2+ "%") the translations are joined again
// with "\n\n" + separator + "\n\n".
//
// Writing time and streams: `latency` (+ `jitter`) is the time to the first token; with
// `tokensPerSecond` > 0 the model then writes one token (4 characters) every
// 1/tokensPerSecond s, so a whole reply comes when its last token is written. A request
// with `stream: true` gets the same reply as OpenAI-style server-sent events, token by
// token (see mock-stream.mjs), with a usage chunk when `stream_options.include_usage` is
// true. With `think` (or the header `x-mock-think: 1`) the model first writes a
// `<think>` … `</think>` draft that holds the batch's markers around the wrong texts, as
// reasoning models write drafts into their content.
//
// Quota: a token bucket refilled at rpm/60 tokens per second holding at most `burst`
// tokens (it starts full; rpm 0 = unlimited). Keys (option `keys`, by the request's
// `Authorization: Bearer <key>`): `{ [key]: { rpm, burst } }` gives each listed key a
// bucket of its own, used instead of the shared one, as each key of a provider (one per
// project or account) has its own quota; a key not listed, or no key, uses the shared
// bucket. A chat request finding no token is answered
// at once (no latency) with 429, `Retry-After` (whole seconds, at least 1) and
// `retry-after-ms`. Order of checks: API key (401), body (400), daily quota (429), quota
// (429), fault.
//
// One quota for every caller (option `quota`: `{ requests, tokens, windowMs }`, see
// window-quota.mjs): when set, it replaces the buckets above (keys included). Every chat
// request takes from one window of `requests` requests and `tokens` tokens (0: no token
// limit) per `windowMs`, refilled continuously and full at the start, as OpenAI states its
// per-minute limits; a request is charged at admission with the tokens its answer's usage
// reports (prompt and completion; faults aside). Every answer, 200 or 429, carries the
// quota's state in `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (the limit is
// the whole window; the reset, the time until the window is whole again); a request that
// does not fit gets 429 at once with `Retry-After` and `retry-after-ms` (the wait until it
// fits). stats().quotaTokens sums what the accepted requests took.
//
// Models (option `models`, by the request's `model`; any other name is served as
// "mock-translator" is): `{ [model]: { requestsPerDay, canBatch } }`.
//   requestsPerDay  accepted requests a day for that model alone (0 or absent: no limit),
//                   as free tiers give each model its own daily quota (e.g. 20 a day for
//                   one, 500 for a lighter one). The day is `dayMs` long (default 24 h)
//                   from the start or the last reset(). A request past it gets a 429 that
//                   clients read as a spent daily quota, not a per-minute one: with
//                   `dailyStyle` "openai" (default), OpenAI's and Groq's wording "... on
//                   requests per day (RPD): Limit N, Used N ..." and `Retry-After` until
//                   the day ends; with "gemini", Gemini's body: an array holding an error
//                   with status RESOURCE_EXHAUSTED, a google.rpc.QuotaFailure whose
//                   quotaId is "GenerateRequestsPerDayPerProjectPerModel-FreeTier" and a
//                   google.rpc.RetryInfo whose retryDelay is the time until the day ends.
//                   Such a 429 takes no token of the per-minute bucket (which all models
//                   share, like one key's or project's rate limit).
//   canBatch        false: the model cannot keep a batch's layout, as small models
//                   cannot; a request holding 2+ segments is answered with their
//                   translations as plain paragraphs (blank lines between them, no markers,
//                   no separator), which proves none of them.
//
// stats(): { requests (chat requests received), ok (200 answers), rateLimited,
//   dailyLimited (429s for a spent daily quota), unauthorized, badRequests, faults: { "wrong-count", "drop-separator", "extra-segment",
//   "http-500", "hang" }, segments (source segments of 200 answers), batches: { markers,
//   separator } (200 answers to batches by layout), startedAt (ms),
//   requestTimes (Date.now() of each accepted request), inFlight, maxConcurrent,
//   streamed (200 answers sent as a stream), thought (answers that began with a draft),
//   unbatched (batches a model that cannot batch answered as plain paragraphs),
//   byModel: { [model]: { requests, ok, segments, dailyLimited, rateLimited } } (chat
//   requests with a valid body, by the model they named), usedToday: { [model]: accepted
//   requests since the day began }, byKey: { [key]: { requests, ok, rateLimited } } (chat
//   requests that named a key listed in `keys`) }
//
// Faults (option `fault`, or per request the header `x-mock-fault`, with the optional
// header `x-mock-fault-rate`):
//   none            answer normally
//   wrong-count     a batch reply with its last segment missing (markers: its pair)
//   drop-separator  a batch reply whose segments are joined by a single space
//                   (markers: the first two segments merged into the first pair)
//   extra-segment   a batch reply with one segment too many (markers: a pair of an id
//                   the batch does not have)
//   http-500        a 500 JSON error
//   hang            no answer at all: the socket stays open until the client gives up
//                   or the server closes
//   mixed           per request, with probability `faultRate` (default 0.3), one of the
//                   faults above chosen by the seeded PRNG (`mixedFaults` narrows the list)
// Named modes apply with probability `faultRate` (default 1). The three batch faults
// only apply to requests holding more than one segment (otherwise the request is
// answered normally and no fault is counted).

import http from "node:http";
import { timingSafeEqual } from "node:crypto";

import { closeOnSignals, isMainModule } from "./cli.mjs";
import { prng } from "./prng.mjs";
import { thinkingDraft, tokenize, writeStream } from "./mock-stream.mjs";
import { WindowQuota } from "./window-quota.mjs";

export const MODEL_ID = "mock-translator";
/** A second model of the mock, for a fallback with its own daily quota (see `models`). */
export const LITE_MODEL_ID = "mock-translator-lite";

/** The quota id Gemini names in the QuotaFailure of a spent per-day request quota. */
export const GEMINI_DAILY_QUOTA_ID = "GenerateRequestsPerDayPerProjectPerModel-FreeTier";

const DAY_MS = 24 * 60 * 60 * 1000;

export const FAULT_MODES = Object.freeze([
  "none",
  "wrong-count",
  "drop-separator",
  "extra-segment",
  "http-500",
  "hang",
  "mixed",
]);

/** The faults that `mixed` may choose from (every mode except none and mixed). */
export const FAULTS = Object.freeze(FAULT_MODES.filter((m) => m !== "none" && m !== "mixed"));

const BATCH_FAULTS = new Set(["wrong-count", "drop-separator", "extra-segment"]);

export const DEFAULT_OPTIONS = Object.freeze({
  port: 0,
  rpm: 60,
  burst: 1,
  latency: 0,
  jitter: 0,
  fault: "none",
  faultRate: undefined, // 1 for a named mode, 0.3 for "mixed"
  mixedFaults: FAULTS,
  seed: 1,
  apiKey: undefined,
  split: "auto",
  tokensPerSecond: 0, // 0 = no writing time: the reply comes whole after the latency
  think: false,
  models: {}, // { [model]: { requestsPerDay?, canBatch? } }, see the header
  keys: {}, // { [apiKey]: { rpm, burst? } }: a quota of its own per key, see the header
  quota: undefined, // { requests, tokens, windowMs }: one quota for every caller, see the header
  dayMs: DAY_MS,
  dailyStyle: "openai", // "openai" | "gemini": how a spent daily quota is told
  log: undefined, // (line: string) => void, one line per chat request
});

const MAX_BODY_BYTES = 16 * 1024 * 1024;

// ---------------------------------------------------------------------------------------
// Pseudo-translation

/** Swaps the case of ASCII letters; every other character is kept. Its own inverse. */
export function swapAsciiCase(text) {
  return String(text).replace(/[A-Za-z]/g, (c) => {
    const code = c.charCodeAt(0);
    return String.fromCharCode(code ^ 0x20);
  });
}

/** The mock's translation of one text: "[lang] " + the text with ASCII case swapped. */
export function pseudoTranslate(text, lang = "xx") {
  return `[${lang}] ${swapAsciiCase(text)}`;
}

/** The original text of a `pseudoTranslate` output (the "[lang] " prefix is removed). */
export function reversePseudoTranslation(translated) {
  return swapAsciiCase(String(translated).replace(/^\[[^\]\s]*\] /, ""));
}

const LANGUAGE_NAMES = {
  arabic: "ar",
  bulgarian: "bg",
  catalan: "ca",
  chinese: "zh",
  czech: "cs",
  danish: "da",
  dutch: "nl",
  english: "en",
  estonian: "et",
  finnish: "fi",
  french: "fr",
  german: "de",
  greek: "el",
  hebrew: "he",
  hindi: "hi",
  hungarian: "hu",
  indonesian: "id",
  italian: "it",
  japanese: "ja",
  korean: "ko",
  latvian: "lv",
  lithuanian: "lt",
  norwegian: "no",
  persian: "fa",
  polish: "pl",
  portuguese: "pt",
  romanian: "ro",
  russian: "ru",
  slovak: "sk",
  slovenian: "sl",
  spanish: "es",
  swedish: "sv",
  thai: "th",
  turkish: "tr",
  ukrainian: "uk",
  vietnamese: "vi",
};

// Short English words that may follow "to"/"into" and are no language codes.
const NOT_CODES = new Set(
  (
    "a an the be do go it is as at by in of on or so up us we me my no if " +
    "and any all are ask but can did end for get got had has her him his how its " +
    "let may not now off one our out own put run say see set she too try two use " +
    "was way who why yes you"
  ).split(" "),
);

/**
 * The target language code named in a system prompt: the word after "into" (preferred)
 * or "to", when it is a language name (German → de) or looks like a code (de, pt-BR,
 * zh_TW); "xx" when none is found.
 */
export function detectTargetLang(systemPrompt) {
  const text = String(systemPrompt ?? "");
  let viaTo;
  for (const match of text.matchAll(/\b(into|to)\s+([A-Za-z][A-Za-z0-9_-]*)/gi)) {
    const word = match[2].replace(/[-_]+$/, "");
    let code;
    const named = LANGUAGE_NAMES[word.toLowerCase()];
    if (named) code = named;
    else if (/^[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*$/i.test(word) && !NOT_CODES.has(word.toLowerCase())) {
      const [primary, ...rest] = word.split(/[-_]/);
      code = [primary.toLowerCase(), ...rest].join("-");
    }
    if (code === undefined) continue;
    if (match[1].toLowerCase() === "into") return code;
    viaTo ??= code;
  }
  return viaTo ?? "xx";
}

/**
 * The separator token (a run of 2+ "%") that splits `userText` into segments, or null.
 *
 * mode "auto": when there is a system prompt, the longest %-run it mentions that is also
 *   a whole line of the user text (a prompt naming none means a single text, so a lone
 *   paragraph that contains a "%%" line is not split); without a system prompt, as "text".
 * mode "text": the longest %-run that is a whole line of the user text.
 * mode "none": never split.
 */
export function detectSeparator(systemPrompt, userText, mode = "auto") {
  if (mode === "none") return null;
  const lineRuns = new Set();
  for (const line of String(userText).split(/\r?\n/)) {
    const trimmed = line.trim();
    if (/^%{2,}$/.test(trimmed)) lineRuns.add(trimmed);
  }
  if (lineRuns.size === 0) return null;
  const system = String(systemPrompt ?? "");
  if (mode === "auto" && system.trim() !== "") {
    const named = [...new Set(system.match(/%{2,}/g) ?? [])].sort((a, b) => b.length - a.length);
    return named.find((run) => lineRuns.has(run)) ?? null;
  }
  return [...lineRuns].sort((a, b) => b.length - a.length)[0];
}

/** The segments of `userText` split on lines equal to `token` (each trimmed). */
export function splitSegments(userText, token) {
  if (token === null || token === undefined) return [String(userText)];
  const segments = [];
  let current = [];
  for (const line of String(userText).split(/\r?\n/)) {
    if (line.trim() === token) {
      segments.push(current.join("\n").trim());
      current = [];
    } else {
      current.push(line);
    }
  }
  segments.push(current.join("\n").trim());
  // A trailing separator does not open another segment.
  if (segments.length > 1 && segments[segments.length - 1] === "") segments.pop();
  return segments;
}

/**
 * The marker tag (`s` of `<s21>` … `</s21>`) of a batch in the markers layout, or null.
 *
 * The user text must hold pairs `<tagN>…</tagN>`, each number once (the pacer's numbers
 * are labels in no counting order: 21, 58, 95 …). mode "auto": with a system prompt, only
 * when the prompt names the first marker (the pacer's instructions do; a single text's
 * prompt names none, so a lone paragraph that contains `<s1>` is not split); without
 * one, as "text". mode "text": the user text alone. mode "none": never.
 */
export function detectMarkers(systemPrompt, userText, mode = "auto") {
  if (mode === "none") return null;
  const first = /<([A-Za-z]{1,4})(\d+)>/.exec(String(userText));
  if (first === null) return null;
  const tag = first[1];
  const system = String(systemPrompt ?? "");
  if (mode === "auto" && system.trim() !== "" && !system.includes(`<${tag}${first[2]}>`)) return null;
  return markedSegments(userText, tag) === null ? null : tag;
}

/**
 * The texts between the pairs of `tag`, in order, each number once, or null when they
 * are not so; `numbers` holds each pair's number.
 */
export function markedSegments(userText, tag) {
  const segments = [];
  const numbers = [];
  const pairs = new RegExp(`<${tag}(\\d+)>([\\s\\S]*?)</${tag}\\1>`, "g");
  for (const match of String(userText).matchAll(pairs)) {
    const number = Number(match[1]);
    if (numbers.includes(number)) return null;
    numbers.push(number);
    segments.push(match[2].trim());
  }
  return segments.length > 0 ? Object.assign(segments, { numbers }) : null;
}

/**
 * The mock's reply for a chat: `{ content, segments, separator, markers, lang }`, where
 * `segments` are the translated segments, `separator` the separator token or null and
 * `markers` the marker tag or null. `fault` is one of the batch faults (or "none") and is
 * applied only when there are 2+ segments. In the markers layout each fault is what a
 * model does to pairs: wrong-count drops the last pair, drop-separator merges the first
 * two segments into the first pair, extra-segment adds a pair of an id the batch lacks.
 */
export function translateChat(messages, { split = "auto", fault = "none" } = {}) {
  const list = Array.isArray(messages) ? messages : [];
  const system = list
    .filter((m) => m && (m.role === "system" || m.role === "developer"))
    .map((m) => contentText(m.content))
    .join("\n\n");
  const lastUser = [...list].reverse().find((m) => m && m.role === "user");
  const user = lastUser ? contentText(lastUser.content) : "";
  const lang = detectTargetLang(system);
  const tag = detectMarkers(system, user, split);
  if (tag !== null) return translateMarked(user, tag, lang, fault);
  const token = detectSeparator(system, user, split);
  const source = splitSegments(user, token);
  const translated = source.map((segment) => pseudoTranslate(segment, lang));
  let out = translated;
  let joiner = token === null ? "" : `\n\n${token}\n\n`;
  let applied = "none";
  if (translated.length > 1 && BATCH_FAULTS.has(fault)) {
    applied = fault;
    if (fault === "wrong-count") out = translated.slice(0, -1);
    else if (fault === "extra-segment") out = [...translated, pseudoTranslate("(extra segment)", lang)];
    else if (fault === "drop-separator") joiner = " ";
  }
  return {
    content: out.join(joiner),
    segments: out,
    sourceSegments: source,
    separator: token,
    markers: null,
    lang,
    fault: applied,
  };
}

/** A marked batch: each segment translated between its own pair (markers kept as sent). */
function translateMarked(user, tag, lang, fault) {
  const source = markedSegments(user, tag);
  const translated = source.map((segment) => pseudoTranslate(segment, lang));
  // [number, text] pairs of the reply: each segment under the number it came with.
  let out = translated.map((text, i) => [source.numbers[i], text]);
  let applied = "none";
  if (translated.length > 1 && BATCH_FAULTS.has(fault)) {
    applied = fault;
    if (fault === "wrong-count") out = out.slice(0, -1);
    else if (fault === "extra-segment") out = [...out, [Math.max(...source.numbers) + 1, pseudoTranslate("(extra segment)", lang)]];
    else if (fault === "drop-separator") out = [[source.numbers[0], `${translated[0]} ${translated[1]}`], ...out.slice(2)];
  }
  return {
    content: out.map(([number, text]) => `<${tag}${number}>${text}</${tag}${number}>`).join("\n"),
    segments: out.map(([, text]) => text),
    sourceSegments: source,
    separator: null,
    markers: tag,
    lang,
    fault: applied,
  };
}

function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : typeof part?.text === "string" ? part.text : ""))
      .join("");
  }
  return "";
}

// ---------------------------------------------------------------------------------------
// Helpers

function seedNumber(seed) {
  if (typeof seed === "number" && Number.isFinite(seed)) return Math.trunc(seed) >>> 0;
  // Strings are hashed (FNV-1a) so that "--seed demo" works too.
  let h = 0x811c9dc5;
  for (const ch of String(seed)) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

function validateOptions(options) {
  const check = (name, ok, what) => {
    if (options[name] !== undefined && !ok(options[name])) {
      throw new TypeError(`mock provider option ${name} must be ${what} (got ${JSON.stringify(options[name])})`);
    }
  };
  const nonNegative = (v) => typeof v === "number" && Number.isFinite(v) && v >= 0;
  check("port", (v) => Number.isInteger(v) && v >= 0 && v <= 65535, "an integer port 0..65535");
  check("rpm", nonNegative, "a number >= 0 (0 = unlimited)");
  check("burst", (v) => typeof v === "number" && Number.isFinite(v) && v >= 1, "a number >= 1");
  check("latency", nonNegative, "a number of milliseconds >= 0");
  check("jitter", nonNegative, "a number of milliseconds >= 0");
  check("fault", (v) => FAULT_MODES.includes(v), `one of ${FAULT_MODES.join(", ")}`);
  check("faultRate", (v) => typeof v === "number" && v >= 0 && v <= 1, "a probability 0..1");
  check(
    "mixedFaults",
    (v) => Array.isArray(v) && v.length > 0 && v.every((f) => FAULTS.includes(f) || f === "none"),
    `a non-empty array of ${FAULTS.join(", ")}`,
  );
  check("seed", (v) => typeof v === "number" || typeof v === "string", "a number or string");
  if (options.apiKey !== undefined && options.apiKey !== null && typeof options.apiKey !== "string") {
    throw new TypeError("mock provider option apiKey must be a string (got <redacted>)");
  }
  check("split", (v) => ["auto", "text", "none"].includes(v), 'one of "auto", "text", "none"');
  check("tokensPerSecond", nonNegative, "a number of tokens per second >= 0 (0 = no writing time)");
  check("think", (v) => typeof v === "boolean", "a boolean");
  check("models", validModels, "an object of model ids to { requestsPerDay: number >= 0, canBatch: boolean }");
  check("keys", validKeys, "an object of API keys to { rpm: number > 0, burst: number >= 1 }");
  check("quota", validQuota, "null or { requests: number > 0, tokens: number >= 0, windowMs: number > 0 }");
  check("dayMs", (v) => typeof v === "number" && Number.isFinite(v) && v > 0, "a number of milliseconds > 0");
  check("dailyStyle", (v) => v === "openai" || v === "gemini", '"openai" or "gemini"');
  check("log", (v) => typeof v === "function", "a function");
}

function validModels(models) {
  if (models === null || typeof models !== "object" || Array.isArray(models)) return false;
  return Object.values(models).every(
    (m) =>
      m !== null &&
      typeof m === "object" &&
      Object.keys(m).every((k) => k === "requestsPerDay" || k === "canBatch") &&
      (m.requestsPerDay === undefined || (typeof m.requestsPerDay === "number" && Number.isFinite(m.requestsPerDay) && m.requestsPerDay >= 0)) &&
      (m.canBatch === undefined || typeof m.canBatch === "boolean"),
  );
}

function validKeys(keys) {
  if (keys === null || typeof keys !== "object" || Array.isArray(keys)) return false;
  return Object.values(keys).every(
    (k) =>
      k !== null &&
      typeof k === "object" &&
      Object.keys(k).every((name) => name === "rpm" || name === "burst") &&
      typeof k.rpm === "number" && Number.isFinite(k.rpm) && k.rpm > 0 &&
      (k.burst === undefined || (typeof k.burst === "number" && Number.isFinite(k.burst) && k.burst >= 1)),
  );
}

function validQuota(quota) {
  if (quota === null) return true;
  if (typeof quota !== "object" || Array.isArray(quota)) return false;
  const number = (v) => typeof v === "number" && Number.isFinite(v);
  return (
    Object.keys(quota).every((k) => k === "requests" || k === "tokens" || k === "windowMs") &&
    number(quota.requests) && quota.requests > 0 &&
    number(quota.tokens) && quota.tokens >= 0 &&
    number(quota.windowMs) && quota.windowMs > 0
  );
}

/** "7h59m3s" for a wait in ms, as Groq writes its "Please try again in ..." (at least 1s). */
function spokenDuration(ms) {
  let rest = Math.max(1, Math.ceil(ms / 1000));
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  const sec = rest - m * 60;
  return `${h ? `${h}h` : ""}${h || m ? `${m}m` : ""}${sec}s`;
}

function emptyStats() {
  return {
    requests: 0,
    ok: 0,
    rateLimited: 0,
    unauthorized: 0,
    badRequests: 0,
    faults: Object.fromEntries(FAULTS.map((f) => [f, 0])),
    segments: 0,
    // 200 answers to batches (2+ segments), by the layout they came in.
    batches: { markers: 0, separator: 0 },
    startedAt: Date.now(),
    requestTimes: [],
    maxConcurrent: 0,
    streamed: 0,
    thought: 0,
    dailyLimited: 0,
    unbatched: 0,
    quotaTokens: 0,
    byModel: {},
    byKey: {},
  };
}

function sameSecret(given, expected) {
  const a = Buffer.from(String(given));
  const b = Buffer.from(String(expected));
  if (a.length !== b.length) {
    timingSafeEqual(b, b);
    return false;
  }
  return timingSafeEqual(a, b);
}

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers":
    "retry-after, retry-after-ms, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, " +
    "x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, " +
    "x-ratelimit-reset-tokens, x-mock-fault",
};

// ---------------------------------------------------------------------------------------
// Server

/**
 * Starts the mock provider on 127.0.0.1.
 *
 * @param {object} [options]
 * @param {number} [options.port=0] 0 picks a free port
 * @param {number} [options.rpm=60] requests per minute; 0 = unlimited
 * @param {number} [options.burst=1] bucket capacity (the bucket starts full)
 * @param {number} [options.latency=0] ms before each answer
 * @param {number} [options.jitter=0] up to this many ms added (uniform, seeded)
 * @param {string} [options.fault="none"] one of FAULT_MODES
 * @param {number} [options.faultRate] probability of the fault (1 for named modes, 0.3 for mixed)
 * @param {string[]} [options.mixedFaults] faults "mixed" chooses from (default: all)
 * @param {number|string} [options.seed=1] seed of the jitter and fault PRNGs
 * @param {string} [options.apiKey] when set, `Authorization: Bearer <apiKey>` is required
 * @param {"auto"|"text"|"none"} [options.split="auto"] how batches are recognised (see detectSeparator)
 * @param {(line: string) => void} [options.log] called with one line per chat request
 * @returns {Promise<{ url: string, port: number, stats: () => object,
 *   setOptions: (partial: object) => void, reset: () => void, close: () => Promise<void> }>}
 */
export async function startMockProvider(options = {}) {
  if (options === null || typeof options !== "object") {
    throw new TypeError("startMockProvider options must be an object");
  }
  validateOptions(options);
  const opts = { ...DEFAULT_OPTIONS };
  for (const [k, v] of Object.entries(options)) if (v !== undefined) opts[k] = v;

  let stats = emptyStats();
  let inFlight = 0; // accepted requests whose response has not ended yet
  let faultRandom;
  let jitterRandom;
  const reseed = () => {
    const s = seedNumber(opts.seed);
    faultRandom = prng(s ^ 0x9e3779b9);
    jitterRandom = prng(s ^ 0x85ebca6b);
  };
  reseed();

  // Token buckets (monotonic clock): the shared one, and one per key listed in `keys`.
  const now = () => performance.now();
  const shared = bucket(() => opts);
  let keyBuckets = new Map();
  const bucketOf = (key) => {
    if (key === null || !Object.hasOwn(opts.keys, key)) return shared;
    if (!keyBuckets.has(key)) keyBuckets.set(key, bucket(() => ({ burst: 1, ...opts.keys[key] })));
    return keyBuckets.get(key);
  };
  // A request may arrive up to a fifth of an interval early: network and event-loop
  // jitter move a perfectly paced client's requests by some ms. The share of a token it
  // borrows is owed (the bucket goes below 0), so the long-run rate stays exact.
  const JITTER_ALLOWANCE = 0.2;
  /** A bucket whose `{ rpm, burst }` are read at each use (setOptions may change them). */
  function bucket(limits) {
    const state = { tokens: limits().burst, refilledAt: now() };
    const rate = () => limits().rpm / 60000; // tokens per ms
    const refill = () => {
      const t = now();
      if (limits().rpm > 0) state.tokens = Math.min(limits().burst, state.tokens + (t - state.refilledAt) * rate());
      state.refilledAt = t;
    };
    return {
      refill,
      rate,
      limits,
      get tokens() {
        return state.tokens;
      },
      /** Takes a token: 0 when granted, else the ms until the next token. */
      take() {
        if (limits().rpm === 0) return 0;
        refill();
        if (state.tokens >= 1 - JITTER_ALLOWANCE) {
          state.tokens -= 1;
          return 0;
        }
        return (1 - state.tokens) / rate();
      },
      /** Full again, as at the start. */
      fill() {
        state.tokens = limits().burst;
        state.refilledAt = now();
      },
      /** At most `burst` tokens (after a smaller burst was set). */
      cap() {
        if (limits().rpm > 0) state.tokens = Math.min(state.tokens, limits().burst);
      },
    };
  }

  // The one quota for every caller, when `quota` is set.
  const newWindowQuota = () => (opts.quota ? new WindowQuota(opts.quota, now()) : null);
  let windowQuota = newWindowQuota();

  // Daily quotas: accepted requests per model since the day began.
  let dayStartedAt = Date.now();
  let usedToday = new Map();
  const modelSettings = (model) => (Object.hasOwn(opts.models, model) ? opts.models[model] : {});
  /** Starts a new day when the current one has ended; returns the ms left of it. */
  const dayLeftMs = () => {
    const elapsed = Date.now() - dayStartedAt;
    if (elapsed >= opts.dayMs) {
      dayStartedAt += Math.floor(elapsed / opts.dayMs) * opts.dayMs;
      usedToday = new Map();
    }
    return dayStartedAt + opts.dayMs - Date.now();
  };
  const modelStats = (model) =>
    (stats.byModel[model] ??= { requests: 0, ok: 0, segments: 0, dailyLimited: 0, rateLimited: 0 });

  const timers = new Set();
  const sockets = new Set();
  let closed = false;

  const log = (line) => {
    if (typeof opts.log === "function") {
      try {
        opts.log(line);
      } catch {
        // A failing logger never breaks the server.
      }
    }
  };

  function send(res, status, body, headers = {}) {
    if (res.writableEnded || res.destroyed) return;
    const text = body === undefined ? "" : JSON.stringify(body);
    res.writeHead(status, {
      ...CORS_HEADERS,
      ...(body === undefined ? {} : { "Content-Type": "application/json; charset=utf-8" }),
      "Content-Length": Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  }

  function sendError(res, status, message, type, code, headers) {
    send(res, status, { error: { message, type, param: null, code } }, headers);
  }

  /** The 429 of a spent daily quota, in the words of `opts.dailyStyle` (see the header). */
  function sendDailyLimit(res, model, requestsPerDay, dayLeft) {
    const seconds = Math.max(1, Math.ceil(dayLeft / 1000));
    if (opts.dailyStyle === "gemini") {
      const message =
        "You exceeded your current quota, please check your plan and billing details. " +
        `* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: ${requestsPerDay}, model: ${model}`;
      const details = [
        {
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [
            {
              quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
              quotaId: GEMINI_DAILY_QUOTA_ID,
              quotaDimensions: { location: "global", model },
              quotaValue: String(requestsPerDay),
            },
          ],
        },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${seconds}s` },
      ];
      return send(res, 429, [{ error: { code: 429, message, status: "RESOURCE_EXHAUSTED", details } }]);
    }
    return sendError(
      res,
      429,
      `Rate limit reached for model \`${model}\` on requests per day (RPD): Limit ${requestsPerDay}, ` +
        `Used ${requestsPerDay}, Requested 1. Please try again in ${spokenDuration(dayLeft)}.`,
      "requests",
      "rate_limit_exceeded",
      { "Retry-After": String(seconds) },
    );
  }

  function readBody(req) {
    return new Promise((resolve, reject) => {
      const chunks = [];
      let size = 0;
      req.on("data", (chunk) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) {
          reject(Object.assign(new Error("request body too large"), { status: 413 }));
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      req.on("error", reject);
    });
  }

  /** The fault mode and rate of a request (the x-mock-fault headers win over the options). */
  function faultSetting(req) {
    const header = req.headers["x-mock-fault"];
    const headerMode = typeof header === "string" ? header.trim().toLowerCase() : "";
    if (headerMode === "") return { mode: opts.fault, rate: opts.faultRate };
    if (!FAULT_MODES.includes(headerMode)) {
      return { error: `Unknown x-mock-fault "${headerMode.slice(0, 40)}"; use one of ${FAULT_MODES.join(", ")}.` };
    }
    const rawRate = req.headers["x-mock-fault-rate"];
    if (rawRate === undefined) return { mode: headerMode, rate: undefined };
    const rate = Number(rawRate);
    if (String(rawRate).trim() === "" || !(rate >= 0 && rate <= 1)) {
      return { error: "x-mock-fault-rate must be a probability 0..1." };
    }
    return { mode: headerMode, rate };
  }

  /** Draws the fault of an accepted request. */
  function chooseFault({ mode, rate: rateValue }) {
    if (mode === "none") return { fault: "none" };
    const probability = rateValue ?? (mode === "mixed" ? 0.3 : 1);
    // The PRNG is drawn for every faulty-mode request, so a run is reproducible.
    const hit = faultRandom() < probability;
    if (!hit) return { fault: "none" };
    if (mode !== "mixed") return { fault: mode };
    const pool = opts.mixedFaults;
    return { fault: pool[Math.min(pool.length - 1, Math.floor(faultRandom() * pool.length))] };
  }

  async function handleChat(req, res) {
    stats.requests += 1;
    const started = Date.now();

    if (opts.apiKey !== undefined && opts.apiKey !== null && opts.apiKey !== "") {
      const auth = req.headers.authorization;
      const match = typeof auth === "string" ? /^Bearer\s+(.+)$/i.exec(auth.trim()) : null;
      if (!match || !sameSecret(match[1], opts.apiKey)) {
        stats.unauthorized += 1;
        log(`401 POST /v1/chat/completions (bad or missing API key)`);
        req.resume();
        return sendError(
          res,
          401,
          "Incorrect API key provided. Send it as Authorization: Bearer <key>.",
          "invalid_request_error",
          "invalid_api_key",
        );
      }
    }

    let body;
    try {
      const raw = await readBody(req);
      body = JSON.parse(raw);
    } catch (err) {
      stats.badRequests += 1;
      if (err?.status === 413) {
        return sendError(res, 413, "Request body too large.", "invalid_request_error", "payload_too_large");
      }
      return sendError(res, 400, "The request body is not valid JSON.", "invalid_request_error", "invalid_json");
    }
    if (body === null || typeof body !== "object" || !Array.isArray(body.messages) || body.messages.length === 0) {
      stats.badRequests += 1;
      return sendError(res, 400, "'messages' must be a non-empty array.", "invalid_request_error", "invalid_messages");
    }
    if (!body.messages.some((m) => m && m.role === "user")) {
      stats.badRequests += 1;
      return sendError(res, 400, "'messages' holds no user message.", "invalid_request_error", "invalid_messages");
    }
    if (body.stream !== undefined && typeof body.stream !== "boolean") {
      stats.badRequests += 1;
      return sendError(res, 400, "'stream' must be a boolean.", "invalid_request_error", "invalid_stream");
    }
    const streamed = body.stream === true;

    const setting = faultSetting(req);
    if (setting.error) {
      stats.badRequests += 1;
      return sendError(res, 400, setting.error, "invalid_request_error", "invalid_fault");
    }

    const bearer = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? "").trim())?.[1] ?? null;
    const quota = bucketOf(bearer);
    const keyStats = quota === shared ? null : (stats.byKey[bearer] ??= { requests: 0, ok: 0, rateLimited: 0 });
    if (keyStats) keyStats.requests += 1;
    const model = typeof body.model === "string" && body.model !== "" ? body.model : MODEL_ID;
    const perModel = modelStats(model);
    perModel.requests += 1;
    const { requestsPerDay = 0, canBatch = true } = modelSettings(model);
    const dayLeft = dayLeftMs();
    if (requestsPerDay > 0 && (usedToday.get(model) ?? 0) >= requestsPerDay) {
      stats.dailyLimited += 1;
      perModel.dailyLimited += 1;
      log(`429 POST /v1/chat/completions (${model}: daily quota of ${requestsPerDay} spent, resets in ${spokenDuration(dayLeft)})`);
      return sendDailyLimit(res, model, requestsPerDay, dayLeft);
    }

    if (windowQuota !== null) {
      // What the answer's usage will report: the prompt and the faithful reply.
      const cost =
        Math.ceil(body.messages.reduce((n, m) => n + contentText(m?.content).length, 0) / 4) +
        Math.ceil(translateChat(body.messages, { split: opts.split }).content.length / 4);
      const waitMs = Math.ceil(windowQuota.admit(cost, now()));
      if (waitMs > 0) {
        stats.rateLimited += 1;
        perModel.rateLimited += 1;
        if (keyStats) keyStats.rateLimited += 1;
        log(`429 POST /v1/chat/completions (quota: retry after ${waitMs} ms)`);
        const { requests, tokens, windowMs } = windowQuota.limits;
        return sendError(
          res,
          429,
          `Rate limit reached for ${MODEL_ID}: limit ${requests} requests${tokens > 0 ? ` and ${tokens} tokens` : ""} ` +
            `per ${windowMs} ms, requested 1 request and ${cost} tokens. Please try again in ${(waitMs / 1000).toFixed(3)}s.`,
          "requests",
          "rate_limit_exceeded",
          { "Retry-After": String(Math.max(1, Math.ceil(waitMs / 1000))), "retry-after-ms": String(waitMs), ...windowQuota.headers(now()) },
        );
      }
      stats.quotaTokens += cost;
    }
    const wait = windowQuota === null ? quota.take() : 0;
    const { rpm, burst } = quota.limits();
    if (wait > 0) {
      stats.rateLimited += 1;
      perModel.rateLimited += 1;
      if (keyStats) keyStats.rateLimited += 1;
      const waitMs = Math.max(1, Math.ceil(wait));
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      log(`429 POST /v1/chat/completions (retry after ${waitMs} ms)`);
      return sendError(
        res,
        429,
        `Rate limit reached for requests on ${MODEL_ID}: limit ${rpm} / min, burst ${burst}. ` +
          `Please try again in ${(waitMs / 1000).toFixed(3)}s.`,
        "requests",
        "rate_limit_exceeded",
        {
          "Retry-After": String(seconds),
          "retry-after-ms": String(waitMs),
          "x-ratelimit-limit-requests": String(burst),
          "x-ratelimit-remaining-requests": "0",
          "x-ratelimit-reset-requests": `${(waitMs / 1000).toFixed(3)}s`,
        },
      );
    }

    // Accepted: it counts for concurrency until its response ends or its socket closes,
    // and against its model's daily quota.
    usedToday.set(model, (usedToday.get(model) ?? 0) + 1);
    stats.requestTimes.push(started);
    inFlight += 1;
    stats.maxConcurrent = Math.max(stats.maxConcurrent, inFlight);
    let done = false;
    let timer;
    const currentStats = stats;
    res.on("close", () => {
      if (done) return;
      done = true;
      inFlight -= 1;
      if (timer !== undefined) {
        clearTimeout(timer);
        timers.delete(timer);
      }
    });

    let { fault } = chooseFault(setting);

    if (fault === "hang") {
      stats.faults.hang += 1;
      log(`--- POST /v1/chat/completions (hang)`);
      return; // never answered; close() or the client ends it
    }

    const result = translateChat(body.messages, {
      split: opts.split,
      fault: BATCH_FAULTS.has(fault) ? fault : "none",
    });
    if (BATCH_FAULTS.has(fault) && result.fault === "none") fault = "none";

    // A model that cannot batch writes the batch's translations as plain paragraphs.
    const unbatched = !canBatch && result.sourceSegments.length > 1;
    const answerText = unbatched
      ? result.sourceSegments.map((segment) => pseudoTranslate(segment, result.lang)).join("\n\n")
      : result.content;
    const thinks = opts.think || req.headers["x-mock-think"] === "1";
    const content = (thinks ? thinkingDraft(result) : "") + answerText;
    const firstTokenMs = opts.latency + (opts.jitter > 0 ? jitterRandom() * opts.jitter : 0);
    const writingMs = opts.tokensPerSecond > 0 ? (Math.max(1, tokenize(content).length) - 1) * (1000 / opts.tokensPerSecond) : 0;
    // A stream starts with its first token; a whole reply waits for its last one.
    const delay = streamed ? firstTokenMs : firstTokenMs + writingMs;
    const answer = () => {
      if (res.destroyed || res.writableEnded) return;
      if (fault === "http-500") {
        currentStats.faults["http-500"] += 1;
        log(`500 POST /v1/chat/completions (fault http-500)`);
        return sendError(res, 500, "The mock provider failed on purpose (fault http-500).", "server_error", "server_error", {
          "x-mock-fault": "http-500",
        });
      }
      if (fault !== "none") currentStats.faults[fault] += 1;
      currentStats.ok += 1;
      currentStats.segments += result.sourceSegments.length;
      const answeredModel = (currentStats.byModel[model] ??= { requests: 0, ok: 0, segments: 0, dailyLimited: 0, rateLimited: 0 });
      answeredModel.ok += 1;
      answeredModel.segments += result.sourceSegments.length;
      if (keyStats) keyStats.ok += 1;
      if (unbatched) currentStats.unbatched += 1;
      if (result.sourceSegments.length > 1) currentStats.batches[result.markers !== null ? "markers" : "separator"] += 1;
      const promptChars = body.messages.reduce((n, m) => n + contentText(m?.content).length, 0);
      const prompt = Math.ceil(promptChars / 4);
      const completion = Math.ceil(content.length / 4);
      if (thinks) currentStats.thought += 1;
      log(
        `200 POST /v1/chat/completions (${result.sourceSegments.length} segment(s)` +
          `${fault !== "none" ? `, fault ${fault}` : ""}${unbatched ? ", unbatched" : ""}${streamed ? ", streamed" : ""}${thinks ? ", thinking" : ""})`,
      );
      const id = `chatcmpl-mock-${currentStats.requestTimes.length}-${started.toString(36)}`;
      const created = Math.floor(started / 1000);
      const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
      const headers = {
        ...CORS_HEADERS,
        "x-mock-fault": fault,
        // Remaining and its reset together, as OpenAI sends them: a client that is
        // told "0 remaining" must also learn when that ends. The limit is the bucket's
        // capacity (`burst`), as OpenAI's limit is the most requests its window permits
        // before it is exhausted, and the reset the time until the bucket is full again:
        // a limit of `rpm` beside a bucket of `burst` would tell a client that all but
        // `burst` of the window had been taken by others.
        ...(windowQuota !== null
          ? windowQuota.headers(now())
          : rpm > 0
          ? {
              "x-ratelimit-limit-requests": String(burst),
              "x-ratelimit-remaining-requests": String(Math.max(0, Math.floor(quota.tokens))),
              "x-ratelimit-reset-requests": `${(Math.max(0, 1 - quota.tokens) / quota.rate() / 1000).toFixed(3)}s`,
            }
          : {}),
      };
      if (streamed) {
        currentStats.streamed += 1;
        const tokensPerSecond = opts.tokensPerSecond;
        const includeUsage = body.stream_options?.include_usage === true;
        writeStream(res, { content, id, created, model, usage, includeUsage, tokensPerSecond, headers, timers });
        return;
      }
      send(
        res,
        200,
        {
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage,
        },
        headers,
      );
    };
    if (delay > 0) {
      timer = setTimeout(() => {
        timers.delete(timer);
        timer = undefined;
        answer();
      }, delay);
      timers.add(timer);
    } else {
      answer();
    }
  }

  function handle(req, res) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.replace(/\/+$/, "") || "/";

    if (req.method === "OPTIONS") {
      req.resume();
      const headers = {
        "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
        "Access-Control-Allow-Headers": "authorization, content-type, x-mock-fault, x-mock-fault-rate, x-mock-think",
        "Access-Control-Max-Age": "600",
      };
      if (req.headers["access-control-request-private-network"] === "true") {
        headers["Access-Control-Allow-Private-Network"] = "true";
      }
      return send(res, 204, undefined, headers);
    }

    if (path === "/v1/chat/completions") {
      if (req.method !== "POST") {
        req.resume();
        return sendError(res, 405, "Use POST for /v1/chat/completions.", "invalid_request_error", "method_not_allowed", {
          Allow: "POST, OPTIONS",
        });
      }
      return handleChat(req, res).catch(() => {
        if (!res.headersSent) sendError(res, 500, "Internal error of the mock provider.", "server_error", "server_error");
        else res.destroy();
      });
    }

    if (path === "/v1/models") {
      req.resume();
      if (req.method !== "GET" && req.method !== "HEAD") {
        return sendError(res, 405, "Use GET for /v1/models.", "invalid_request_error", "method_not_allowed", {
          Allow: "GET, OPTIONS",
        });
      }
      return send(res, 200, {
        object: "list",
        data: [...new Set([MODEL_ID, ...Object.keys(opts.models)])].map((id) => ({
          id,
          object: "model",
          created: 0,
          owned_by: "batch-pacer-mock",
        })),
      });
    }

    req.resume();
    return sendError(res, 404, `Unknown path ${path.slice(0, 100)}`, "invalid_request_error", "not_found");
  }

  const server = http.createServer(handle);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    else socket.destroy();
  });

  await new Promise((resolve, reject) => {
    const onError = (err) => reject(err);
    server.once("error", onError);
    server.listen(opts.port, "127.0.0.1", () => {
      server.off("error", onError);
      resolve();
    });
  });
  const { port } = server.address();

  let closing;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    /** A snapshot of the counters (requestTimes are Date.now() ms of accepted requests). */
    stats() {
      return {
        ...stats,
        inFlight,
        faults: { ...stats.faults },
        requestTimes: [...stats.requestTimes],
        byModel: Object.fromEntries(Object.entries(stats.byModel).map(([model, counts]) => [model, { ...counts }])),
        byKey: Object.fromEntries(Object.entries(stats.byKey).map(([key, counts]) => [key, { ...counts }])),
        usedToday: Object.fromEntries(usedToday),
      };
    },
    /** Changes options while running (port excepted). The bucket keeps its tokens, capped at burst. */
    setOptions(partial = {}) {
      if (partial === null || typeof partial !== "object") throw new TypeError("setOptions expects an object");
      validateOptions(partial);
      if (partial.port !== undefined && partial.port !== port) {
        throw new TypeError("the port of a running mock provider cannot change");
      }
      shared.refill();
      for (const bucketOfKey of keyBuckets.values()) bucketOfKey.refill();
      for (const [k, v] of Object.entries(partial)) {
        if (k === "port") continue;
        // faultRate and apiKey may be cleared with undefined/null; others keep their value.
        if (v === undefined && k !== "faultRate" && k !== "apiKey") continue;
        opts[k] = v;
      }
      shared.cap();
      // A key no longer listed (or listed anew) starts with a full bucket of its own.
      if ("keys" in partial) keyBuckets = new Map([...keyBuckets].filter(([key]) => Object.hasOwn(opts.keys, key)));
      for (const bucketOfKey of keyBuckets.values()) bucketOfKey.cap();
      if ("seed" in partial && partial.seed !== undefined) reseed();
      if ("quota" in partial) windowQuota = newWindowQuota();
    },
    /** Zeroes the counters, refills the bucket, starts a new day and reseeds the PRNGs. */
    reset() {
      stats = emptyStats();
      dayStartedAt = Date.now();
      usedToday = new Map();
      stats.maxConcurrent = inFlight;
      shared.fill();
      keyBuckets = new Map();
      windowQuota = newWindowQuota();
      reseed();
    },
    /** Stops listening and destroys every socket, hanging requests included. */
    close() {
      if (closing) return closing;
      closed = true;
      closing = new Promise((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections?.();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
    get closed() {
      return closed;
    },
  };
}

// ---------------------------------------------------------------------------------------
// CLI

const HELP = `Usage: node extension-demo/mock-provider.mjs [options]

A local OpenAI-compatible chat-completions server that pseudo-translates.

  --port N          port on 127.0.0.1 (default 8787; 0 = any free port)
  --rpm N           requests per minute, 0 = unlimited (default 60)
  --burst N         token bucket capacity (default 1)
  --latency MS      delay before each answer (default 0)
  --jitter MS       up to MS added to the delay, uniformly (default 0)
  --fault MODE      ${FAULT_MODES.join(" | ")} (default none)
  --fault-rate P    probability of the fault, 0..1 (default 1; 0.3 for mixed)
  --seed N          seed of the jitter and fault choices (default 1)
  --api-key KEY     require Authorization: Bearer KEY (or env MOCK_PROVIDER_API_KEY)
  --split MODE      auto | text | none: how batches are recognised (default auto)
  --tokens-per-second N
                    writing speed after the first token, 4 characters a token
                    (default 0: the whole reply at once after the latency)
  --think           write a <think> draft holding markers before each answer
  --requests-per-day MODEL=N
                    a daily quota of N accepted requests for MODEL alone (repeatable)
  --cannot-batch MODEL
                    MODEL answers batches as plain paragraphs, no markers (repeatable)
  --key-quota KEY=RPM[/BURST]
                    requests from Authorization: Bearer KEY take a bucket of their
                    own, RPM a minute with a burst of BURST (default 1) (repeatable)
  --quota R/T/MS    one quota for every caller instead of the buckets above: R requests
                    and T tokens (0: no token limit) per window of MS milliseconds,
                    reported whole in x-ratelimit-* headers (e.g. 60/30000/60000)
  --day-ms MS       length of the mock's day for the daily quotas (default 86400000)
  --daily-style S   openai | gemini: how a spent daily quota is told (default openai)
  --log             print one line per chat request to stderr
  --help            show this help
`;

function parseArgs(argv) {
  const out = { port: 8787 };
  const numeric = {
    "--port": "port",
    "--rpm": "rpm",
    "--burst": "burst",
    "--latency": "latency",
    "--jitter": "jitter",
    "--fault-rate": "faultRate",
    "--tokens-per-second": "tokensPerSecond",
    "--day-ms": "dayMs",
  };
  const strings = {
    "--fault": "fault",
    "--seed": "seed",
    "--api-key": "apiKey",
    "--split": "split",
    "--daily-style": "dailyStyle",
    "--requests-per-day": "requestsPerDay",
    "--cannot-batch": "cannotBatch",
    "--key-quota": "keyQuota",
    "--quota": "quota",
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (arg === "--help" || arg === "-h") return { help: true };
    if (arg === "--log") {
      out.log = true;
      continue;
    }
    if (arg === "--think") {
      out.think = true;
      continue;
    }
    const key = numeric[arg] ?? strings[arg];
    if (key === undefined) throw new Error(`unknown option ${arg} (see --help)`);
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new Error(`option ${arg} needs a value`);
      value = argv[++i];
    }
    if (numeric[arg]) {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n)) throw new Error(`option ${arg} needs a number (got ${value})`);
      out[key] = n;
    } else if (key === "seed") {
      out.seed = /^\d+$/.test(value) ? Number(value) : value;
    } else if (key === "requestsPerDay") {
      const match = /^(.+)=(\d+)$/.exec(value);
      if (!match) throw new Error(`option ${arg} needs MODEL=N (got ${value})`);
      out.models ??= {};
      out.models[match[1]] = { ...out.models[match[1]], requestsPerDay: Number(match[2]) };
    } else if (key === "keyQuota") {
      const match = /^(.+)=(\d+(?:\.\d+)?)(?:\/(\d+))?$/.exec(value);
      if (!match) throw new Error(`option ${arg} needs KEY=RPM or KEY=RPM/BURST (got ${value.replace(/=.*/, "=...")})`);
      out.keys ??= {};
      out.keys[match[1]] = { rpm: Number(match[2]), ...(match[3] ? { burst: Number(match[3]) } : {}) };
    } else if (key === "quota") {
      const match = /^(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(value);
      if (!match) throw new Error(`option ${arg} needs REQUESTS/TOKENS/WINDOW_MS (got ${value})`);
      out.quota = { requests: Number(match[1]), tokens: Number(match[2]), windowMs: Number(match[3]) };
    } else if (key === "cannotBatch") {
      out.models ??= {};
      out.models[value] = { ...out.models[value], canBatch: false };
    } else {
      out[key] = value;
    }
  }
  return out;
}

async function main(argv) {
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`mock provider: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return;
  }
  if (args.apiKey === undefined && process.env.MOCK_PROVIDER_API_KEY) {
    args.apiKey = process.env.MOCK_PROVIDER_API_KEY;
  }
  const wantLog = args.log === true;
  delete args.log;
  if (wantLog) args.log = (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);

  let mock;
  try {
    mock = await startMockProvider(args);
  } catch (err) {
    process.stderr.write(`mock provider: ${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`mock provider listening on ${mock.url}\n`);

  closeOnSignals(mock);
}

if (isMainModule(import.meta.url)) main(process.argv.slice(2));
