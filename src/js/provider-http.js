// What the package's HTTP providers (openAIProvider, deeplProvider) share: their option
// checks, the secrecy of their key, and the reading of responses and failures.
//
// Secrecy rule: an API key never ends up in an error a provider throws or rejects with
// (message, stack, own properties or cause), even when a server or a fetch
// implementation echoes it back. Every piece of foreign text that goes into a message
// passes through `redact`, and foreign errors are only attached as `cause` after
// `carriesSecret` found that they do not carry the key.

import { PacerError } from "./errors.js";

/** Longest excerpt of a server's error text placed into an error message. */
const MAX_DETAIL = 200;

/** Reason phrases for the statuses worth naming when `statusText` is empty (HTTP/2). */
export const REASONS = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  456: "Quota Exceeded",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/**
 * The texts to hide for the given keys, and `redact`, which hides them in a text: each
 * key as sent, and as a server may echo it back (URL-encoded or JSON-escaped).
 * @param {...unknown} keys the key as given and as sent (non-strings are ignored)
 * @returns {{ secrets: string[], redact: (text: unknown) => string }}
 */
export function keySecrets(...keys) {
  const forms = (s) => (typeof s === "string" ? [s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1)] : []);
  const secrets = [...new Set(keys.flatMap(forms))]
    .filter((s) => s.length > 0)
    // Longest first: a form that contains another is replaced whole.
    .sort((a, b) => b.length - a.length);
  const redact = (text) => secrets.reduce((out, secret) => out.split(secret).join("***"), String(text));
  return { secrets, redact };
}

/** Whether `value` mentions a secret in any text reachable from it (cause chain included). */
export function carriesSecret(value, secrets, seen = new Set(), depth = 0) {
  if (secrets.length === 0) return false;
  try {
    if (typeof value === "string") return secrets.some((s) => value.includes(s));
    if (value === null || (typeof value !== "object" && typeof value !== "function")) {
      return secrets.some((s) => String(value).includes(s));
    }
    if (seen.has(value)) return false;
    // Too deep to inspect is treated as carrying it: better to drop a cause than leak.
    if (depth > 4) return true;
    seen.add(value);
    if (carriesSecret(String(value), secrets, seen, depth + 1)) return true;
    for (const name of ["message", "stack", "cause"]) {
      if (carriesSecret(value[name], secrets, seen, depth + 1)) return true;
    }
    for (const name of Reflect.ownKeys(value)) {
      if (typeof name !== "string") continue;
      if (carriesSecret(value[name], secrets, seen, depth + 1)) return true;
    }
    return false;
  } catch {
    return true;
  }
}

/**
 * The error for a fetch that rejected: aborts as they are, anything else wrapped.
 * `service` names the API in the message (e.g. "OpenAI-compatible API").
 */
export function networkError(err, signal, url, redact, secrets, service) {
  // An abort propagates untouched (callers test its identity or name), unless it would
  // carry the key out: then it is wrapped like any other failure, keeping its name.
  if (isAbort(err, signal) && !carriesSecret(err, secrets)) return err;
  // Wrapped so that the error surely has no `status` (the pacer retries it as a network
  // error) and so that its text can be redacted: fetch errors may quote header values.
  let detail = describeFailure(err);
  const cause = err?.cause;
  if (cause !== undefined && cause !== null) {
    const inner = describeFailure(cause);
    if (inner && inner !== detail) detail += ` (${inner})`;
  }
  const wrapped = new Error(redact(`${service} request to ${url} failed: ${detail}`));
  if (isAbort(err, signal)) wrapped.name = "AbortError";
  else if (!carriesSecret(err, secrets)) wrapped.cause = err;
  return wrapped;
}

/**
 * A response's body text. A body that cannot be read is a network failure, except
 * under an error status, which is worth reporting without its body ("" then).
 */
export async function readBody(response, signal, url, redact, secrets, service) {
  try {
    return await response.text();
  } catch (err) {
    if (!isAbort(err, signal) && !response.ok) return "";
    throw networkError(err, signal, url, redact, secrets, service);
  }
}

/** Whether `err` is the abort of the call (the signal's reason, or any AbortError). */
export function isAbort(err, signal) {
  return (signal?.aborted === true && err === signal.reason) || err?.name === "AbortError";
}

export function describeFailure(err) {
  try {
    if (err && typeof err === "object") {
      const message = typeof err.message === "string" ? err.message : "";
      const code = typeof err.code === "string" ? err.code : "";
      if (message) return message;
      if (code) return code;
    }
    return String(err);
  } catch {
    return "unknown error";
  }
}

/** Redacted first MAX_DETAIL characters of `text`, white space collapsed. */
export function excerpt(text, redact) {
  // Redact before cutting, so that the cut cannot leave part of the key behind.
  const clean = redact(String(text)).replace(/\s+/g, " ").trim();
  return clean.length > MAX_DETAIL ? `${clean.slice(0, MAX_DETAIL)}…` : clean;
}

/** One header's trimmed text, "" when absent or unreadable. */
export function header(headers, name) {
  if (!headers || typeof headers.get !== "function") return "";
  try {
    const value = headers.get(name);
    return typeof value === "string" ? value.trim() : "";
  } catch {
    return "";
  }
}

/** An `invalid_options` error naming `option`, as every option error of the package is. */
export function invalid(option, message) {
  return new PacerError("invalid_options", message, option === undefined ? {} : { option });
}

export function isHttpUrl(text) {
  if (text.trim() === "") return false;
  try {
    const { protocol } = new URL(text);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

/** A short printable form of a value for validation messages. */
export function describe(value) {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  }
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  if (typeof value === "bigint") return `${value}n`;
  return String(value);
}

/**
 * POSTs `body` as JSON to `url` with `fetchOption` (or the global `fetch`, looked up at
 * call time so that one installed or replaced after the provider was made is used);
 * resolves with the response, whatever its status. A failed fetch is a `networkError`
 * (redacted); `service` names the API in messages.
 */
export async function postJson({ fetchOption, url, headers, body, signal, redact, secrets, service }) {
  const fetchImpl = fetchOption ?? globalThis.fetch;
  if (typeof fetchImpl !== "function") {
    throw new Error(`${service}: no fetch function is available in this environment`);
  }
  let response;
  try {
    // Browsers throw "Illegal invocation" when fetch is called with another `this`.
    response = await fetchImpl.call(globalThis, url, {
      method: "POST",
      headers: { ...headers },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    throw networkError(err, signal, url, redact, secrets, service);
  }
  if (response === null || typeof response !== "object") {
    throw new Error(`${service}: fetch resolved with something that is not a Response`);
  }
  return response;
}
