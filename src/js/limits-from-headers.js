// What an API's response headers say of its quota, in the `limits` shape the pacer reads
// (`{ requestsRemaining, requestsResetMs, tokensRemaining, tokensResetMs, requestsLimit,
// tokensLimit }`), and how long a failed call's headers ask to wait. Three families:
// - OpenAI's and Groq's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as
//   Go durations ("6m0s", "1.5s", "20ms") or whole seconds;
// - Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
//   {limit,remaining,reset}`, resets as RFC 3339 times;
// - the IETF draft's `RateLimit` and `RateLimit-Policy` structured fields
//   (draft-ietf-httpapi-ratelimit-headers: `"name";r=…;t=…` and `"name";q=…;w=…;qu=…`).
//
// Headers come as the clients hand them: a `Headers` instance, a `Map` or a plain object
// (Node's, the AI SDK's `responseHeaders`), with names in any case. Reading them never
// throws: a value that cannot be read is left out rather than guessed.

import { parseMilliseconds, parseRetryAfter, toWholeMs } from "./retry-after.js";

/**
 * `limits` from response headers, or undefined when they say nothing readable.
 * @param {unknown} headers a `Headers` instance, a `Map` or a plain object
 * @returns {object | undefined}
 */
export function limitsFromHeaders(headers) {
  try {
    const get = headerReader(headers);
    if (get === undefined) return undefined;
    const now = Date.now();
    const found = [openAILimits, anthropicLimits, ietfLimits].map((read) => read(get, now));
    const out = {};
    // Each window (requests, tokens) as one family states it: a server sends one family,
    // and a remaining count of one beside a reset of another would describe no window.
    for (const fields of WINDOWS) {
      const family = found.find((limits) => fields.some((name) => limits[name] !== undefined));
      for (const name of fields) if (family?.[name] !== undefined) out[name] = family[name];
    }
    return Object.keys(out).length > 0 ? out : undefined;
  } catch {
    return undefined;
  }
}

/** The fields of each window, as one family states them together. */
const WINDOWS = [
  ["requestsLimit", "requestsRemaining", "requestsResetMs"],
  ["tokensLimit", "tokensRemaining", "tokensResetMs"],
];

/**
 * Milliseconds a failed call's headers ask to wait: `retry-after-ms` (OpenAI's, finer)
 * first, then `Retry-After` (seconds or an HTTP-date); undefined when neither is readable.
 * @param {unknown} headers as for `limitsFromHeaders`
 * @returns {number | undefined}
 */
export function retryAfterFromHeaders(headers) {
  try {
    const get = headerReader(headers);
    if (get === undefined) return undefined;
    return parseMilliseconds(get("retry-after-ms")) ?? parseRetryAfter(get("retry-after"));
  } catch {
    return undefined;
  }
}

/**
 * `name → trimmed value ("" when absent)` over any of the header forms, names in any case;
 * undefined for anything that is not headers.
 */
function headerReader(headers) {
  if (headers === null || typeof headers !== "object") return undefined;
  // A `Headers` instance answers in any case itself (and may hide its entries from
  // iteration in some polyfills): ask it directly.
  if (typeof Headers === "function" && headers instanceof Headers) {
    return (name) => text(headers.get(name));
  }
  const lower = new Map();
  const entries =
    headers instanceof Map || typeof headers[Symbol.iterator] === "function" ? headers : Object.entries(headers);
  for (const entry of entries) {
    if (!Array.isArray(entry) || typeof entry[0] !== "string") continue;
    const name = entry[0].toLowerCase();
    // Names spelled twice in two cases: the first readable one counts.
    if (!lower.has(name) || lower.get(name) === "") lower.set(name, text(entry[1]));
  }
  if (lower.size === 0 && typeof headers.get === "function") {
    // A Headers-like object that cannot be iterated.
    return (name) => text(headers.get(name));
  }
  return (name) => lower.get(name) ?? "";
}

/** A header value as trimmed text: strings and finite numbers; lists joined as HTTP does. */
function text(value) {
  if (typeof value === "string") return value.trim();
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return value.map(text).join(", ");
  return "";
}

/** A count as sent: digits with an optional fraction, never negative, never infinite. */
function count(value) {
  const number = /^\d+(?:\.\d+)?$/.test(value) ? Number(value) : undefined;
  // 309 digits and more are Infinity as a Number: no count, and not JSON either.
  return Number.isFinite(number) ? number : undefined;
}

function openAILimits(get) {
  return {
    requestsLimit: count(get("x-ratelimit-limit-requests")),
    requestsRemaining: count(get("x-ratelimit-remaining-requests")),
    requestsResetMs: parseDuration(get("x-ratelimit-reset-requests")),
    tokensLimit: count(get("x-ratelimit-limit-tokens")),
    tokensRemaining: count(get("x-ratelimit-remaining-tokens")),
    tokensResetMs: parseDuration(get("x-ratelimit-reset-tokens")),
  };
}

/** Anthropic's token kinds: the combined one, then input and output, as limited apart. */
const ANTHROPIC_TOKEN_KINDS = ["tokens", "input-tokens", "output-tokens"];

function anthropicLimits(get, now) {
  const window = (kind) => ({
    limit: count(get(`anthropic-ratelimit-${kind}-limit`)),
    remaining: count(get(`anthropic-ratelimit-${kind}-remaining`)),
    resetMs: untilTime(get(`anthropic-ratelimit-${kind}-reset`), now),
  });
  const requests = window("requests");
  // The pacer keeps one token window: the kind with the fewest tokens left runs out
  // first, so it is the one that counts (and its limit and reset with it).
  const kinds = ANTHROPIC_TOKEN_KINDS.map(window).filter(
    (w) => w.limit !== undefined || w.remaining !== undefined || w.resetMs !== undefined,
  );
  const known = kinds.filter((w) => w.remaining !== undefined);
  const tokens = known.length > 0 ? known.reduce((a, b) => (b.remaining < a.remaining ? b : a)) : (kinds[0] ?? {});
  return {
    requestsLimit: requests.limit,
    requestsRemaining: requests.remaining,
    requestsResetMs: requests.resetMs,
    tokensLimit: tokens.limit,
    tokensRemaining: tokens.remaining,
    tokensResetMs: tokens.resetMs,
  };
}

/** An RFC 3339 time as milliseconds from `now` (0 once passed); undefined otherwise. */
function untilTime(value, now) {
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/.test(value)) return undefined;
  const at = Date.parse(value.replace(" ", "T"));
  return Number.isFinite(at) ? Math.max(0, Math.ceil(at - now)) : undefined;
}

/**
 * The IETF fields: `RateLimit-Policy` names each policy's quota `q`, window `w` (seconds)
 * and unit `qu` ("request" when absent); `RateLimit` gives each policy's remaining `r` and
 * seconds to its reset `t`. Policies in requests fill the request fields, policies whose
 * unit names tokens the token fields; other units (bytes, concurrent requests) are not
 * the pacer's. Of several policies of one unit, the one with the least left counts.
 */
function ietfLimits(get) {
  const policies = new Map();
  for (const { name, params } of structuredList(get("ratelimit-policy"))) {
    if (!policies.has(name)) policies.set(name, params);
  }
  const unitOf = (params) => {
    const unit = params?.qu;
    if (unit === undefined) return "requests";
    if (typeof unit !== "string") return undefined;
    if (/^requests?$/i.test(unit)) return "requests";
    return /tokens?$/i.test(unit) ? "tokens" : undefined;
  };
  const best = { requests: undefined, tokens: undefined };
  for (const { name, params } of structuredList(get("ratelimit"))) {
    const policy = policies.get(name);
    const unit = unitOf(policy);
    const remaining = wholeNumber(params.r);
    if (unit === undefined || remaining === undefined) continue;
    if (best[unit] !== undefined && best[unit].remaining <= remaining) continue;
    const reset = wholeNumber(params.t);
    best[unit] = {
      remaining,
      resetMs: reset === undefined ? undefined : toWholeMs(reset * 1000),
      limit: wholeNumber(policy?.q),
    };
  }
  // Policies without a `RateLimit` member still give the window's size.
  for (const params of policies.values()) {
    const unit = unitOf(params);
    const limit = wholeNumber(params.q);
    if (unit === undefined || limit === undefined || best[unit] !== undefined) continue;
    best[unit] = { limit };
  }
  return {
    requestsLimit: best.requests?.limit,
    requestsRemaining: best.requests?.remaining,
    requestsResetMs: best.requests?.resetMs,
    tokensLimit: best.tokens?.limit,
    tokensRemaining: best.tokens?.remaining,
    tokensResetMs: best.tokens?.resetMs,
  };
}

/** A structured-field integer (RFC 9651) that is a count: 0 or more. */
function wholeNumber(value) {
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * The members of a structured-field List (RFC 9651) as `{ name, params }`: the member's
 * string or token, and its parameters (integers and decimals as numbers, strings and
 * tokens as strings, booleans as booleans). A member that does not parse is skipped.
 */
function structuredList(value) {
  const members = [];
  for (const raw of splitOutsideQuotes(value, ",")) {
    const [head, ...rest] = splitOutsideQuotes(raw, ";");
    const name = bareItem(head);
    if (typeof name !== "string") continue;
    const params = {};
    for (const param of rest) {
      const at = param.indexOf("=");
      const key = (at < 0 ? param : param.slice(0, at)).trim();
      if (!/^[a-z*][a-z0-9_\-.*]*$/.test(key)) continue;
      params[key] = at < 0 ? true : bareItem(param.slice(at + 1));
    }
    members.push({ name, params });
  }
  return members;
}

/** `text` split at each `separator` outside a quoted string, parts trimmed, empty ones out. */
function splitOutsideQuotes(text, separator) {
  const parts = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === "\\") i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === separator) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts.filter((part) => part !== "");
}

/** One structured-field bare item; undefined when it is none this reader knows. */
function bareItem(raw) {
  const item = raw.trim();
  if (/^-?\d{1,15}$/.test(item)) return Number(item);
  if (/^-?\d{1,12}\.\d{1,3}$/.test(item)) return Number(item);
  if (/^"(?:[^"\\]|\\["\\])*"$/.test(item)) return item.slice(1, -1).replace(/\\(["\\])/g, "$1");
  if (/^[A-Za-z*][\w:/!#$%&'*+\-.^`|~]*$/.test(item)) return item;
  if (item === "?1" || item === "?0") return item === "?1";
  return undefined;
}

/** Milliseconds in each unit of a Go duration (`time.Duration.String()`). */
const DURATION_UNITS = { ns: 1e-6, us: 1e-3, "\u00b5s": 1e-3, "\u03bcs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A reset time as OpenAI and Groq send it, in milliseconds rounded up: a Go duration
 * ("6m0s", "1.5s", "20ms", "23h47m12.5s", "2m59.56s"; also protobuf's "45.8s") or whole
 * seconds ("7"). Undefined for anything else (signs, empty parts, unknown units).
 * @param {unknown} text
 * @returns {number | undefined}
 */
export function parseDuration(text) {
  if (typeof text !== "string") return undefined;
  const value = text.trim();
  if (value === "") return undefined;
  if (/^\d+(?:\.\d+)?$/.test(value)) return toWholeMs(Number(value) * 1000);
  // Longer units first, so that "ms" is not read as "m" followed by garbage.
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/y;
  let total = 0;
  let at = 0;
  while (at < value.length) {
    part.lastIndex = at;
    const match = part.exec(value);
    if (match === null) return undefined;
    total += Number(match[1]) * DURATION_UNITS[match[2]];
    at = part.lastIndex;
  }
  return toWholeMs(total);
}
