// A provider for any OpenAI-compatible chat-completions endpoint (OpenAI, Azure-style
// proxies, OpenRouter, Groq, Mistral, Ollama, LM Studio, llama.cpp server, vLLM ...).
//
// The module has no dependencies and no top-level await, and touches no `window`, so it
// loads unchanged in Node >= 20, pages, dedicated workers and MV3 extension service
// workers.
//
// Secrecy rule: the API key never ends up in an error this module throws or rejects
// with (message, stack, own properties or cause), even when a server or a fetch
// implementation echoes it back. Every piece of foreign text that goes into a message
// passes through `redact`, and foreign errors are only attached as `cause` after a
// check that they do not carry the key.

const DEFAULT_SEPARATOR = "\n\n%%\n\n";

/** Longest excerpt of a server's error text placed into an error message. */
const MAX_DETAIL = 200;

/** Reason phrases for the statuses worth naming when `statusText` is empty (HTTP/2). */
const REASONS = {
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
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/**
 * Builds the chat messages for one provider request: a system message with the
 * instructions and a user message holding `request.text` verbatim.
 *
 * @param {object} request the pacer's provider request (`texts`, `text`, `separator`,
 *   `isBatch`, `sourceLang`, `targetLang`, `context`)
 * @param {{ systemPrompt?: string }} [options] `systemPrompt` replaces the opening
 *   instruction ("{sourceLang}" and "{targetLang}" in it are filled in); the batch
 *   format rules and the context are still appended, because splitting depends on them.
 * @returns {{ role: "system" | "user", content: string }[]}
 */
export function buildMessages(request, options = {}) {
  const sourceLang = String(request.sourceLang ?? "");
  const targetLang = String(request.targetLang ?? "");
  const texts = Array.isArray(request.texts) ? request.texts : [];
  const separator =
    typeof request.separator === "string" && request.separator.trim() !== ""
      ? request.separator
      : DEFAULT_SEPARATOR;
  const text = typeof request.text === "string" ? request.text : texts.join(separator);
  const context = typeof request.context === "string" ? request.context.trim() : "";

  const parts = [];
  if (typeof options.systemPrompt === "string" && options.systemPrompt.trim() !== "") {
    parts.push(
      options.systemPrompt
        .replaceAll("{sourceLang}", sourceLang)
        .replaceAll("{targetLang}", targetLang),
    );
  } else {
    const from = /^auto$/i.test(sourceLang)
      ? "Detect the language of the user's text and translate it"
      : `Translate the user's text from ${sourceLang}`;
    parts.push(
      `You are a professional translator. ${from} to ${targetLang}.`,
      "Output only the translation: no explanations, notes, alternatives, quotation marks or code fences.",
      "Keep the formatting of the original: line breaks, paragraphs, Markdown, HTML tags, " +
        "placeholders, URLs, numbers and white space. Leave untranslatable parts (code, names, URLs) as they are.",
    );
  }

  if (request.isBatch) {
    const line = separator.trim();
    const n = texts.length;
    parts.push(
      `The user's text consists of ${n} segments separated by lines containing only ${line} ` +
        `(the separator line).`,
      `Translate each segment on its own. Your output must contain exactly ${n} translated segments, ` +
        `in the same order, separated by a line containing only ${line}.`,
      "Do not merge, split, omit or number the segments, do not translate or alter the separator line, " +
        "and add no extra commentary before, between or after the segments.",
    );
  }

  if (context !== "") {
    parts.push(
      "Background information about where the text comes from follows between <context> tags. " +
        "Use it only to choose the right meaning and terms; do not translate it and do not include it in your output.",
      `<context>\n${context}\n</context>`,
    );
  }

  return [
    { role: "system", content: parts.join("\n\n") },
    { role: "user", content: text },
  ];
}

/**
 * Creates a provider for `BatchPacer` that calls `${baseUrl}/chat/completions`.
 *
 * @param {object} options
 * @param {string} options.baseUrl e.g. "https://api.openai.com/v1" or "http://localhost:11434/v1"
 * @param {string} [options.apiKey] sent as `Authorization: Bearer <apiKey>` when non-empty
 * @param {string} options.model e.g. "gpt-4o-mini"
 * @param {typeof fetch} [options.fetch] default: `globalThis.fetch`, looked up at each call
 * @param {number} [options.temperature=0]
 * @param {string} [options.systemPrompt] see `buildMessages`
 * @param {Record<string, string>} [options.extraHeaders] added to every request
 *   (`Content-Type` and `Authorization` set by this provider win over them)
 * @returns {(request: object) => Promise<string>}
 */
export function openAIProvider(options) {
  if (options === null || typeof options !== "object") {
    throw new TypeError(`openAIProvider options must be an object (got ${describe(options)})`);
  }
  const { baseUrl, apiKey, model, fetch: fetchOption, temperature = 0, systemPrompt, extraHeaders } =
    options;

  if (typeof baseUrl !== "string" || !isHttpUrl(baseUrl)) {
    throw new TypeError(`baseUrl must be a non-empty http(s) URL string (got ${describe(baseUrl)})`);
  }
  if (typeof model !== "string" || model.trim() === "") {
    throw new TypeError(`model must be a non-empty string (got ${describe(model)})`);
  }
  // The key's value is never printed, not even when it has the wrong type. null counts
  // as "no key", like undefined, since settings storage often yields null.
  if (apiKey !== undefined && apiKey !== null && typeof apiKey !== "string") {
    throw new TypeError(`apiKey must be a string if given (got <redacted>)`);
  }
  // Keys pasted from a settings page often carry a trailing newline: trim it. Any other
  // control or non-ASCII character is refused now, because fetch would reject the header
  // later with an error message that quotes the key.
  const key = typeof apiKey === "string" ? apiKey.trim() : "";
  if (key !== "" && !/^[\x21-\x7e]+$/.test(key)) {
    throw new TypeError("apiKey must contain only visible ASCII characters (got <redacted>)");
  }
  if (fetchOption !== undefined && typeof fetchOption !== "function") {
    throw new TypeError(`fetch must be a function if given (got ${describe(fetchOption)})`);
  }
  if (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0) {
    throw new TypeError(`temperature must be a finite number >= 0 (got ${describe(temperature)})`);
  }
  if (systemPrompt !== undefined && typeof systemPrompt !== "string") {
    throw new TypeError(`systemPrompt must be a string if given (got ${describe(systemPrompt)})`);
  }
  const extra = validateExtraHeaders(extraHeaders);

  // Both the raw and the trimmed form are hidden in any text this provider reports.
  // The key as sent, and as a server may echo it back: URL-encoded or JSON-escaped.
  const forms = (s) => (typeof s === "string" ? [s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1)] : []);
  const secrets = [...new Set([apiKey, key].flatMap(forms))]
    .filter((s) => s.length > 0)
    // Longest first: a form that contains another is replaced whole.
    .sort((a, b) => b.length - a.length);
  const redact = (text) => secrets.reduce((out, secret) => out.split(secret).join("***"), String(text));

  const url = `${baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers = { ...extra };
  setHeader(headers, "Content-Type", "application/json");
  if (key !== "") setHeader(headers, "Authorization", `Bearer ${key}`);

  return async function openAIChatProvider(request) {
    const signal = request.signal;
    const body = JSON.stringify({
      model,
      messages: buildMessages(request, { systemPrompt }),
      temperature,
    });

    // Looked up at call time so a fetch installed (or replaced) after creation is used.
    const fetchImpl = fetchOption ?? globalThis.fetch;
    if (typeof fetchImpl !== "function") {
      throw new Error("OpenAI-compatible provider: no fetch function is available in this environment");
    }

    let response;
    try {
      // Browsers throw "Illegal invocation" when fetch is called with another `this`.
      response = await fetchImpl.call(globalThis, url, {
        method: "POST",
        headers: { ...headers },
        body,
        signal,
      });
    } catch (err) {
      throw networkError(err, signal, url, redact, secrets);
    }
    if (response === null || typeof response !== "object") {
      throw new Error("OpenAI-compatible provider: fetch resolved with something that is not a Response");
    }

    let raw;
    try {
      raw = await response.text();
    } catch (err) {
      if (isAbort(err, signal)) throw networkError(err, signal, url, redact, secrets);
      // An error status is still worth reporting when its body cannot be read.
      if (!response.ok) throw httpError(response, "", redact);
      throw networkError(err, signal, url, redact, secrets);
    }

    if (!response.ok) throw httpError(response, raw, redact);

    let data;
    try {
      data = JSON.parse(raw);
    } catch {
      const shown = excerpt(raw, redact) || "(empty)";
      throw new Error(`OpenAI-compatible API answered ${response.status} with a body that is not JSON: ${shown}`);
    }
    const choice = Array.isArray(data?.choices) ? data.choices[0] : undefined;
    const content = choice?.message?.content;
    // An empty reply is never a translation of the non-empty text the pacer sends; failing
    // the call lets the pacer retry it instead of caching "" as the translation.
    if (typeof content !== "string" || content.trim() === "") {
      const why = errorDetail(data);
      const finish = typeof choice?.finish_reason === "string" ? ` (finish_reason: ${choice.finish_reason})` : "";
      throw new Error(
        `OpenAI-compatible API answered ${response.status} without text in choices[0].message.content` +
          redact(finish) +
          (why ? `: ${excerpt(why, redact)}` : ""),
      );
    }
    return content;
  };
}

/** The error for a fetch that rejected: aborts as they are, anything else wrapped. */
function networkError(err, signal, url, redact, secrets) {
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
  const wrapped = new Error(redact(`OpenAI-compatible API request to ${url} failed: ${detail}`));
  if (isAbort(err, signal)) wrapped.name = "AbortError";
  else if (!carriesSecret(err, secrets)) wrapped.cause = err;
  return wrapped;
}

/** The error for an HTTP error status, shaped as the pacer reads it. */
function httpError(response, raw, redact) {
  const status = Number(response.status);
  const reason = String(response.statusText || REASONS[status] || "").trim();
  let detail = raw;
  try {
    detail = errorDetail(JSON.parse(raw)) || raw;
  } catch {
    // Not JSON: the raw text is the detail.
  }
  detail = excerpt(detail, redact);
  const error = new Error(
    `OpenAI-compatible API answered ${status}${reason ? ` ${redact(reason)}` : ""}${detail ? `: ${detail}` : ""}`,
  );
  error.status = status;
  const retryAfterMs = readRetryAfter(response.headers);
  if (retryAfterMs !== undefined) error.retryAfterMs = retryAfterMs;
  return error;
}

/**
 * Milliseconds to wait according to the response headers, or undefined. Reads
 * `retry-after-ms` (sent by OpenAI), then `Retry-After` as delta-seconds ("7", "1.5")
 * or as an HTTP-date (time from now, at least 0).
 */
function readRetryAfter(headers) {
  if (!headers || typeof headers.get !== "function") return undefined;
  const get = (name) => {
    try {
      const value = headers.get(name);
      return typeof value === "string" ? value.trim() : "";
    } catch {
      return "";
    }
  };
  const ms = get("retry-after-ms");
  if (/^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));

  const value = get("retry-after");
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  // Only text with letters is taken for a date: Date.parse("7") or ("-5") would read
  // a number as a year.
  if (/[a-z]/i.test(value)) {
    const at = Date.parse(value);
    if (Number.isFinite(at)) return Math.max(0, at - Date.now());
  }
  return undefined;
}

/** The human-readable message inside an OpenAI-style error body, if any. */
function errorDetail(data) {
  if (data === null || typeof data !== "object") return "";
  const { error } = data;
  if (typeof error === "string") return error;
  if (error && typeof error === "object" && typeof error.message === "string") return error.message;
  if (typeof data.message === "string") return data.message;
  return "";
}

/** Redacted first MAX_DETAIL characters of `text`, white space collapsed. */
function excerpt(text, redact) {
  // Redact before cutting, so that the cut cannot leave part of the key behind.
  const clean = redact(String(text)).replace(/\s+/g, " ").trim();
  return clean.length > MAX_DETAIL ? `${clean.slice(0, MAX_DETAIL)}…` : clean;
}

function describeFailure(err) {
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

/** Whether `err` is the abort of the call (the signal's reason, or any AbortError). */
function isAbort(err, signal) {
  return (signal?.aborted === true && err === signal.reason) || err?.name === "AbortError";
}

/** Whether `value` mentions a secret in any text reachable from it (cause chain included). */
function carriesSecret(value, secrets, seen = new Set(), depth = 0) {
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

function isHttpUrl(text) {
  if (text.trim() === "") return false;
  try {
    const { protocol } = new URL(text);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

function validateExtraHeaders(extraHeaders) {
  if (extraHeaders === undefined || extraHeaders === null) return {};
  if (typeof extraHeaders !== "object" || Array.isArray(extraHeaders)) {
    throw new TypeError(
      `extraHeaders must be an object of header names to strings (got ${describe(extraHeaders)})`,
    );
  }
  const out = {};
  for (const [name, value] of Object.entries(extraHeaders)) {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) {
      throw new TypeError(`extraHeaders has an invalid header name (got ${describe(name)})`);
    }
    if (typeof value !== "string") {
      throw new TypeError(`extraHeaders[${JSON.stringify(name)}] must be a string (got ${describe(value)})`);
    }
    out[name] = value;
  }
  return out;
}

/** Sets a header on a plain object, replacing any spelling of the same name. */
function setHeader(headers, name, value) {
  for (const existing of Object.keys(headers)) {
    if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
  }
  headers[name] = value;
}

/** A short printable form of a value for validation messages. */
function describe(value) {
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
