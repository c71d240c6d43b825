// A provider for any OpenAI-compatible chat-completions endpoint (OpenAI, Azure-style
// proxies, OpenRouter, Groq, Mistral, Ollama, LM Studio, llama.cpp server, vLLM ...).
//
// The module imports only the package's own small modules, has no top-level await, and
// touches no `window`, so it loads unchanged in Node >= 20, pages, dedicated workers and MV3 extension service
// workers.
//
// Secrecy rule: the API key never ends up in an error this module throws or rejects
// with (message, stack, own properties or cause), even when a server or a fetch
// implementation echoes it back. Every piece of foreign text that goes into a message
// passes through `redact`, and foreign errors are only attached as `cause` after a
// check that they do not carry the key (see provider-http.js).

import { readChatCompletionStream } from "./openai-stream.js";
import {
  REASONS,
  describe,
  describeFailure,
  excerpt,
  header,
  invalid,
  isHttpUrl,
  keySecrets,
  networkError,
  postJson,
  readBody,
} from "./provider-http.js";
import { bodyRetryDelay, errorBody, errorDetail, errorFields, quotaOf } from "./error-body.js";
import { limitsFromHeaders, retryAfterFromHeaders } from "./limits-from-headers.js";
import { temperatureFor } from "./retry-temperature.js";
import { contextParagraphs, translatorOpening } from "./translator-prompt.js";

const DEFAULT_SEPARATOR = "\n\n%%\n\n";

/** How this provider names the API in the errors it reports. */
const SERVICE = "OpenAI-compatible API";

/** Every option `openAIProvider` takes: any other name is a typo, refused. */
const OPTION_NAMES = [
  "baseUrl",
  "apiKey",
  "model",
  "fetch",
  "temperature",
  "maxTokens",
  "systemPrompt",
  "extraHeaders",
  "structuredOutput",
  "stream",
  "extraBody",
];

/**
 * Request fields the provider itself must set, because it reads the reply by them:
 * `extraBody` may not replace them.
 */
const OWN_BODY_FIELDS = ["model", "messages", "stream", "stream_options"];

/**
 * Statuses with which endpoints refuse a request field (servers and proxies that reject
 * fields they do not know, models that want another name for one): see `REFUSABLE`.
 */
const FIELD_REFUSED = [400, 422];

/**
 * Request fields that some endpoints refuse, and what is sent instead: when an error
 * response refuses a field the body holds, the request is sent again at once with
 * `instead(body)`, and the provider remembers it, so that its later requests are sent
 * that way from the start. Each field is tried at most once per call, in this order
 * (the one recognised by the server's words first). Remembered:
 * - `max_tokens`, when an endpoint refuses it and asks for `max_completion_tokens`
 *   (OpenAI's reasoning and newer models answer 400 "Unsupported parameter: 'max_tokens'
 *   ... Use 'max_completion_tokens' instead."): at the refusal itself, whose words say
 *   what to send; the same value goes under `max_completion_tokens`;
 * - `stream_options`, refused with any 400 or 422: only once a request without it went
 *   through, since a 400 for another reason says nothing about it.
 */
const REFUSABLE = [
  {
    name: "max_tokens",
    sent: (body) => Object.hasOwn(body, "max_tokens") && !Object.hasOwn(body, "max_completion_tokens"),
    refused: (status, raw) => FIELD_REFUSED.includes(status) && raw.includes("max_completion_tokens"),
    instead: ({ max_tokens: bound, ...rest }) => ({ ...rest, max_completion_tokens: bound }),
    rememberedAtRefusal: true,
  },
  {
    name: "stream_options",
    sent: (body) => Object.hasOwn(body, "stream_options"),
    refused: (status) => FIELD_REFUSED.includes(status),
    instead: ({ stream_options: _ignored, ...rest }) => rest,
    rememberedAtRefusal: false,
  },
];

/** Name of the JSON schema sent with `structuredOutput` (OpenAI: [a-zA-Z0-9_-], ≤ 64). */
const SCHEMA_NAME = "translations";

/**
 * Builds the chat messages for one provider request: a system message with the
 * instructions and a user message holding the text to translate.
 *
 * For a batch, the layout follows the request: with `markers` (the default layout) the
 * system message ends with `request.instructions`, the core's own description of how to
 * answer, and the user message is `request.text`; with only a `separator` (the older
 * layout) too, and the system message describes the separator itself only for a request
 * without instructions. With `structuredOutput`, the model
 * is asked for a JSON object keyed by id instead, so the marked-string instructions are
 * left out: they would contradict the schema.
 *
 * @param {object} request the pacer's provider request (`texts`, `ids`, `markers`,
 *   `text`, `instructions`, `separator`, `isBatch`, `sourceLang`, `targetLang`, `context`)
 * @param {{ systemPrompt?: string, structuredOutput?: boolean }} [options]
 *   `systemPrompt` replaces the opening instruction ("{sourceLang}" and "{targetLang}"
 *   in it are filled in); the batch format rules and the context are still appended,
 *   because reading the reply depends on them.
 * @returns {{ role: "system" | "user", content: string }[]}
 */
export function buildMessages(request, options = {}) {
  const sourceLang = String(request.sourceLang ?? "");
  const targetLang = String(request.targetLang ?? "");
  const texts = Array.isArray(request.texts) ? request.texts.map(String) : [];
  const context = typeof request.context === "string" ? request.context.trim() : "";

  const parts = [];
  if (typeof options.systemPrompt === "string" && options.systemPrompt.trim() !== "") {
    parts.push(
      options.systemPrompt
        .replaceAll("{sourceLang}", sourceLang)
        .replaceAll("{targetLang}", targetLang),
    );
  } else {
    parts.push(...translatorOpening(sourceLang, targetLang));
  }

  let user = typeof request.text === "string" ? request.text : (texts[0] ?? "");
  if (request.isBatch) {
    const markers = readMarkers(request, texts.length);
    const ids = options.structuredOutput ? readIds(request, texts.length) : undefined;
    if (ids !== undefined) {
      const batch = structuredBatch(texts, ids, markers, request.text);
      parts.push(batch.rules);
      user = batch.user;
    } else {
      // Either layout: the core's instructions when it gave them (they describe the
      // layout of this very call), otherwise a description of the layout in the same
      // spirit.
      const instructions = typeof request.instructions === "string" ? request.instructions.trim() : "";
      const separated = markers === undefined && typeof request.separator === "string";
      const separator = separated && request.separator.trim() !== "" ? request.separator : DEFAULT_SEPARATOR;
      if (instructions !== "") parts.push(instructions);
      else if (markers !== undefined) parts.push(markerRules(markers));
      else if (separated) parts.push(separatorRules(separator, texts.length));
      if (typeof request.text !== "string") {
        if (markers !== undefined) user = texts.map((t, i) => `${markers[i][0]}${t}${markers[i][1]}`).join("\n");
        else if (separated) user = texts.join(separator);
      }
    }
  }

  parts.push(...contextParagraphs(context));

  return [
    { role: "system", content: parts.join("\n\n") },
    { role: "user", content: user },
  ];
}

/** The request's `[open, close]` pairs when there is one pair of strings per text. */
function readMarkers(request, count) {
  const { markers } = request;
  if (!Array.isArray(markers) || markers.length !== count) return undefined;
  const ok = markers.every(
    (pair) => Array.isArray(pair) && typeof pair[0] === "string" && typeof pair[1] === "string" && pair[0] !== "",
  );
  return ok ? markers : undefined;
}

/** The request's ids when they are one unique non-empty string per text. */
function readIds(request, count) {
  const { ids } = request;
  if (!Array.isArray(ids) || ids.length !== count || count === 0) return undefined;
  if (!ids.every((id) => typeof id === "string" && id !== "")) return undefined;
  return new Set(ids).size === ids.length ? ids : undefined;
}

/** The older layout's rules: segments between lines holding only the separator. */
function separatorRules(separator, n) {
  const line = separator.trim();
  return [
    `The user's text consists of ${n} segments separated by lines containing only ${line} ` +
      `(the separator line).`,
    `Translate each segment on its own. Your output must contain exactly ${n} translated segments, ` +
      `in the same order, separated by a line containing only ${line}.`,
    "Do not merge, split, omit or number the segments, do not translate or alter the separator line, " +
      "and add no extra commentary before, between or after the segments.",
  ].join("\n\n");
}

/** Rules for a marked batch when the request brings no `instructions` of its own. */
function markerRules(markers) {
  const [open, close] = markers[0];
  return (
    `The user's text consists of ${markers.length} segments, each between its own pair of markers ` +
    `(the first between ${open} and ${close}). Answer with each segment's translation between the same ` +
    "pair of markers as its source, in the same order: copy every marker exactly, do not merge, split " +
    "or omit segments, and write nothing outside the markers."
  );
}

/**
 * The rules and user message of a batch answered as a JSON object keyed by id. With
 * markers, the user message stays the marked text and the rules name each pair's id (a
 * marker need not spell its id); without them, the user message is itself a JSON object
 * of id to text, the same shape as the answer.
 */
function structuredBatch(texts, ids, markers, text) {
  const n = texts.length;
  const shape =
    "Answer with a JSON object that has one property per segment: the segment's id as the key and its " +
    "translation as the value. Translate each segment on its own: do not merge, split or omit segments, " +
    "and never move text from one segment into another.";
  if (markers !== undefined) {
    const list = ids.map((id, i) => `${JSON.stringify(id)} for the segment between ${markers[i][0]} and ${markers[i][1]}`);
    return {
      rules:
        `The user's text consists of ${n} segments, each between its own pair of markers. ` +
        `Their ids: ${list.join("; ")}. ${shape} Leave the markers out of the translations.`,
      user: typeof text === "string" ? text : texts.map((t, i) => `${markers[i][0]}${t}${markers[i][1]}`).join("\n"),
    };
  }
  return {
    rules: `The user's text is a JSON object of ${n} segments: each key is a segment's id, each value its text. ${shape}`,
    user: JSON.stringify(Object.fromEntries(ids.map((id, i) => [id, texts[i]])), null, 2),
  };
}

/** The JSON schema of a structured batch answer: one required string per id, nothing else. */
function translationSchema(ids) {
  return {
    type: "json_schema",
    json_schema: {
      name: SCHEMA_NAME,
      strict: true,
      schema: {
        type: "object",
        properties: Object.fromEntries(ids.map((id) => [id, { type: "string" }])),
        required: [...ids],
        additionalProperties: false,
      },
    },
  };
}

/**
 * A structured batch answer: the parsed object keyed by id. Text that is not a JSON
 * object as it stands (an endpoint that ignored `response_format`, a model that wrapped
 * the JSON in a code fence) is returned as it came: the pacer reads every reply, so a
 * fenced object, values wrapped in their own markers and a model that fell back to the
 * markers are cleaned up and proven there, for every provider alike.
 */
function readStructured(content) {
  let parsed;
  try {
    parsed = JSON.parse(content);
  } catch {
    return content;
  }
  return parsed === null || typeof parsed !== "object" || Array.isArray(parsed) ? content : parsed;
}

/**
 * Creates a provider for `BatchPacer` that calls `${baseUrl}/chat/completions`.
 *
 * @param {object} options
 * @param {string} options.baseUrl e.g. "https://api.openai.com/v1" or "http://localhost:11434/v1"
 * @param {string} [options.apiKey] sent as `Authorization: Bearer <apiKey>` when non-empty
 * @param {string} options.model e.g. "gpt-4o-mini"
 * @param {typeof fetch} [options.fetch] default: `globalThis.fetch`, looked up at each call
 * @param {number} [options.temperature=0] the temperature of first tries and single
 *   requests; a batch's retries (`request.attempt` >= 1) go out at
 *   `max(temperature, min(1, temperature + 0.3 * attempt))`, so that a model that
 *   answered a batch wrongly can answer differently
 * @param {"auto" | number | null} [options.maxTokens="auto"] the `max_tokens` of each
 *   request: `"auto"` sends `request.maxOutputTokens` (the pacer's bound on what a
 *   faithful answer needs), a positive integer is sent as it is, `null` sends none.
 *   `extraBody.max_tokens` wins. An endpoint that refuses `max_tokens` and asks for
 *   `max_completion_tokens` is asked again at once with that field, and this provider
 *   sends it from then on
 * @param {string} [options.systemPrompt] see `buildMessages`
 * @param {Record<string, string>} [options.extraHeaders] added to every request
 *   (`Content-Type` and `Authorization` set by this provider win over them)
 * @param {boolean} [options.structuredOutput=false] batches ask for a JSON object keyed
 *   by id through `response_format: json_schema`
 * @param {boolean} [options.stream=false] ask for a streamed completion and return the
 *   stream (see `readChatCompletionStream`)
 * @param {Record<string, unknown>} [options.extraBody] fields merged into every request
 *   body, such as `reasoning_effort` or `think`
 * @returns {(request: object) => Promise<unknown>} the translations, or
 *   `{ translations, usage, limits, truncated }` when the reply reports usage or rate
 *   limits or ended at its token limit (`finish_reason: "length"`: `truncated: true`);
 *   with `stream`, an async iterable of the reply's text pieces (`{ truncated: true }`
 *   where it ended at its token limit), then `{ usage, limits }`
 * @throws {PacerError} code `invalid_options` when an option is invalid or unknown
 */
export function openAIProvider(options) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw invalid(undefined, `openAIProvider options must be an object (got ${describe(options)})`);
  }
  // The names only: a misspelt `apikey` holds a key, whose value must not be printed.
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) {
      throw invalid(name, `openAIProvider has no option ${JSON.stringify(name)} (options: ${OPTION_NAMES.join(", ")})`);
    }
  }
  const {
    baseUrl,
    apiKey,
    model,
    fetch: fetchOption,
    temperature = 0,
    maxTokens = "auto",
    systemPrompt,
    extraHeaders,
    structuredOutput = false,
    stream = false,
    extraBody,
  } = options;

  if (typeof baseUrl !== "string" || !isHttpUrl(baseUrl)) {
    throw invalid("baseUrl", `baseUrl must be a non-empty http(s) URL string (got ${describe(baseUrl)})`);
  }
  if (typeof model !== "string" || model.trim() === "") {
    throw invalid("model", `model must be a non-empty string (got ${describe(model)})`);
  }
  // The key's value is never printed, not even when it has the wrong type. null counts
  // as "no key", like undefined, since settings storage often yields null.
  if (apiKey !== undefined && apiKey !== null && typeof apiKey !== "string") {
    throw invalid("apiKey", `apiKey must be a string if given (got <redacted>)`);
  }
  // Keys pasted from a settings page often carry a trailing newline: trim it. Any other
  // control or non-ASCII character is refused now, because fetch would reject the header
  // later with an error message that quotes the key.
  const key = typeof apiKey === "string" ? apiKey.trim() : "";
  if (key !== "" && !/^[\x21-\x7e]+$/.test(key)) {
    throw invalid("apiKey", "apiKey must contain only visible ASCII characters (got <redacted>)");
  }
  if (fetchOption !== undefined && typeof fetchOption !== "function") {
    throw invalid("fetch", `fetch must be a function if given (got ${describe(fetchOption)})`);
  }
  if (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0) {
    throw invalid("temperature", `temperature must be a finite number >= 0 (got ${describe(temperature)})`);
  }
  if (maxTokens !== "auto" && maxTokens !== null && !(Number.isSafeInteger(maxTokens) && maxTokens >= 1)) {
    throw invalid("maxTokens", `maxTokens must be "auto", an integer >= 1 or null (got ${describe(maxTokens)})`);
  }
  if (systemPrompt !== undefined && typeof systemPrompt !== "string") {
    throw invalid("systemPrompt", `systemPrompt must be a string if given (got ${describe(systemPrompt)})`);
  }
  if (typeof structuredOutput !== "boolean") {
    throw invalid("structuredOutput", `structuredOutput must be a boolean (got ${describe(structuredOutput)})`);
  }
  if (typeof stream !== "boolean") {
    throw invalid("stream", `stream must be a boolean (got ${describe(stream)})`);
  }
  if (stream && structuredOutput) {
    throw invalid(
      "stream",
      "stream cannot be combined with structuredOutput: a streamed reply is read as marked text, not as a JSON object",
    );
  }
  const extra = validateExtraHeaders(extraHeaders);
  const bodyFields = validateExtraBody(extraBody);

  // Both the raw and the trimmed form are hidden in any text this provider reports.
  // The key as sent, and as a server may echo it back: URL-encoded or JSON-escaped.
  const { secrets, redact } = keySecrets(apiKey, key);

  const url = `${baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers = { ...extra };
  setHeader(headers, "Content-Type", "application/json");
  if (key !== "") setHeader(headers, "Authorization", `Bearer ${key}`);

  /** Sends one request body; resolves with the response, whatever its status. */
  const post = (body, signal) =>
    postJson({ fetchOption, url, headers, body, signal, redact, secrets, service: SERVICE });

  // The names of the `REFUSABLE` fields this endpoint refused: its requests are sent
  // without them (or with what it asked for instead) from the start. The model is fixed
  // per provider, so this is remembered per endpoint and model.
  const refused = new Set();

  /**
   * Sends one request body with the fields this endpoint refused replaced, and sends it
   * again at once when the answer refuses another one (see `REFUSABLE`). Resolves with an
   * ok response; an error status rejects with the error it stands for.
   */
  const send = async (payload, signal) => {
    let body = payload;
    for (const field of REFUSABLE) if (refused.has(field.name) && field.sent(body)) body = field.instead(body);
    const replaced = [];
    for (;;) {
      const response = await post(body, signal);
      if (response.ok) {
        for (const field of replaced) refused.add(field.name);
        return response;
      }
      const raw = await readBody(response, signal, url, redact, secrets, SERVICE);
      const status = Number(response.status);
      const field = REFUSABLE.find((f) => !replaced.includes(f) && f.sent(body) && f.refused(status, raw));
      if (field === undefined) throw httpError(response, raw, redact);
      if (field.rememberedAtRefusal) refused.add(field.name);
      replaced.push(field);
      body = field.instead(body);
    }
  };

  /** A streamed completion: HTTP errors reject here, the reply is read as it comes. */
  const openStream = async (payload, signal) => {
    const response = await send({ ...payload, stream: true, stream_options: { include_usage: true } }, signal);
    return readChatCompletionStream(response, {
      errorEvent: (raw) => streamError(raw, response.headers, redact),
      readFailure: (err) => networkError(err, signal, url, redact, secrets, SERVICE),
      usage: readUsage,
      excerpt: (text) => excerpt(text, redact),
      limits: limitsFromHeaders(response.headers),
      signal,
    });
  };

  return async function openAIChatProvider(request) {
    const signal = request.signal;
    const texts = Array.isArray(request.texts) ? request.texts : [];
    // Structured output only where it has something to key: a batch with one id a text.
    const ids = structuredOutput && request.isBatch ? readIds(request, texts.length) : undefined;
    const payload = {
      model,
      messages: buildMessages(request, { systemPrompt, structuredOutput: ids !== undefined }),
      temperature: temperatureFor(temperature, request),
    };
    const bound = outputBound(maxTokens, request);
    if (bound !== undefined) payload.max_tokens = bound;
    if (ids !== undefined) payload.response_format = translationSchema(ids);
    // extraBody wins: its `max_tokens` replaces the bound; its `max_completion_tokens`
    // alone is the bound under the newer name, so the provider's own is not sent beside it.
    Object.assign(payload, bodyFields);
    if (Object.hasOwn(bodyFields, "max_completion_tokens") && !Object.hasOwn(bodyFields, "max_tokens")) {
      delete payload.max_tokens;
    }
    if (stream) return openStream(payload, signal);

    const response = await send(payload, signal);
    const raw = await readBody(response, signal, url, redact, secrets, SERVICE);

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
      // A model refusing a structured answer says why in `refusal`, not in `content`.
      const refusal = typeof choice?.message?.refusal === "string" ? choice.message.refusal : "";
      const why = refusal || errorDetail(data);
      const finish = typeof choice?.finish_reason === "string" ? ` (finish_reason: ${choice.finish_reason})` : "";
      throw new Error(
        `OpenAI-compatible API answered ${response.status} without text in choices[0].message.content` +
          redact(finish) +
          (why ? `: ${excerpt(why, redact)}` : ""),
      );
    }

    const translations =
      ids !== undefined ? readStructured(content) : content;
    const usage = readUsage(data?.usage);
    const limits = limitsFromHeaders(response.headers);
    // The model stopped at its token limit: the pacer keeps what the text proves and
    // sends the rest again (a single request is a failed call).
    const truncated = choice?.finish_reason === "length";
    if (usage === undefined && limits === undefined && !truncated) return translations;
    const reply = { translations };
    if (usage !== undefined) reply.usage = usage;
    if (limits !== undefined) reply.limits = limits;
    if (truncated) reply.truncated = true;
    return reply;
  };
}

/**
 * The `max_tokens` of one request, undefined for none: the option's integer; with
 * `"auto"`, `request.maxOutputTokens` when it is a positive finite number (rounded up to
 * an integer, the only form endpoints take).
 */
function outputBound(maxTokens, request) {
  if (maxTokens === null) return undefined;
  if (maxTokens !== "auto") return maxTokens;
  const bound = request.maxOutputTokens;
  return typeof bound === "number" && Number.isFinite(bound) && bound > 0 ? Math.ceil(bound) : undefined;
}

/** `usage` as the pacer reads it, from the chat-completions names; undefined if none. */
function readUsage(usage) {
  if (usage === null || typeof usage !== "object") return undefined;
  const out = {};
  const count = (value) => typeof value === "number" && Number.isFinite(value) && value >= 0;
  if (count(usage.prompt_tokens)) out.inputTokens = usage.prompt_tokens;
  if (count(usage.completion_tokens)) out.outputTokens = usage.completion_tokens;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Whether the request was too long for the model's context (`context_length_exceeded`,
 * or an `invalid_request_error` saying so): a 413 by meaning, so the batch is split.
 */
function contextTooLong(body) {
  const fields = errorFields(body);
  if (fields.includes("context_length_exceeded")) return true;
  return fields.includes("invalid_request_error") && /context.length|context window|too many tokens/i.test(errorDetail(body));
}

/**
 * Whether the API says the same request will never succeed: a content-policy refusal
 * (`content_policy_violation`, `content_filter`), or an `invalid_request_error` other
 * than a context-length one. Such an error is not retried (`retryable: false`).
 */
function neverSucceeds(status, body) {
  if (status === 429 || contextTooLong(body)) return false;
  const fields = errorFields(body);
  return ["content_policy_violation", "content_filter", "invalid_request_error"].some((f) => fields.includes(f));
}

/**
 * The error for an HTTP error status, shaped as the pacer reads it: always `status`;
 * `retryAfterMs`, `limits` and `quota` when the response says them; a message with the
 * status and the server's own words.
 */
function httpError(response, raw, redact) {
  const status = Number(response.status);
  const reason = String(response.statusText || REASONS[status] || "").trim();
  const head = `OpenAI-compatible API answered ${status}${reason ? ` ${redact(reason)}` : ""}`;
  return apiError(head, status, raw, response.headers, redact);
}

/**
 * The error for an error that a stream reports after its 200 (an `error` event, or a
 * chunk with an `error` object), read like an HTTP error's body. Its status is the one
 * the error names, when it names one (see `streamErrorStatus`); without it, the failure
 * is retried like a lost connection.
 */
function streamError(raw, headers, redact) {
  const status = streamErrorStatus(errorBody(raw));
  const head = `OpenAI-compatible API reported an error in the stream${status === undefined ? "" : ` (status ${status})`}`;
  return apiError(head, status, raw, headers, redact);
}

/** The error for a failure `head` with `status` (or none) and the error body `raw`. */
function apiError(head, status, raw, headers, redact) {
  const body = errorBody(raw);
  const detail = excerpt((body && errorDetail(body)) || raw, redact);
  const quota = quotaOf(status, body);
  // Facts only (status, quota, the server's own words): what the user should do about a
  // settings, billing or daily error is written by the pacer, once, in the message it
  // rejects with, so it is not said twice.
  const error = new Error(`${head}${detail ? `: ${detail}` : ""}`);
  // A context-length refusal is a 413 by meaning: the pacer splits the batch.
  const meant = contextTooLong(body) ? 413 : status;
  if (meant !== undefined) error.status = meant;
  if (neverSucceeds(status, body)) error.retryable = false;
  const retryAfterMs = retryAfterFromHeaders(headers) ?? bodyRetryDelay(body);
  if (retryAfterMs !== undefined) error.retryAfterMs = retryAfterMs;
  const limits = limitsFromHeaders(headers);
  if (limits !== undefined) error.limits = limits;
  if (quota !== undefined) error.quota = quota;
  return error;
}

/**
 * HTTP statuses for the error types that streams report without a number: OpenAI's and
 * Anthropic's `type`s and Google's `status` names.
 */
const STREAM_ERROR_STATUSES = {
  invalid_request_error: 400,
  INVALID_ARGUMENT: 400,
  authentication_error: 401,
  UNAUTHENTICATED: 401,
  permission_error: 403,
  PERMISSION_DENIED: 403,
  not_found_error: 404,
  NOT_FOUND: 404,
  request_too_large: 413,
  insufficient_quota: 429,
  rate_limit_exceeded: 429,
  rate_limit_error: 429,
  RESOURCE_EXHAUSTED: 429,
  server_error: 500,
  api_error: 500,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
  overloaded_error: 529,
};

/**
 * The status an error inside a stream names: a number from 400 to 599 in `error.code`
 * or `error.status` (OpenRouter and Gemini send the HTTP status there), else the status
 * of its type; undefined when it names none.
 */
function streamErrorStatus(body) {
  const error = body?.error !== null && typeof body?.error === "object" ? body.error : body;
  for (const value of [error?.code, error?.status, body?.code, body?.status]) {
    const number = typeof value === "string" && /^\d{3}$/.test(value) ? Number(value) : value;
    if (Number.isInteger(number) && number >= 400 && number <= 599) return number;
  }
  for (const value of [error?.type, error?.code, error?.status]) {
    if (typeof value === "string" && Object.hasOwn(STREAM_ERROR_STATUSES, value)) return STREAM_ERROR_STATUSES[value];
  }
  return undefined;
}

function validateExtraHeaders(extraHeaders) {
  if (extraHeaders === undefined || extraHeaders === null) return {};
  if (typeof extraHeaders !== "object" || Array.isArray(extraHeaders)) {
    throw invalid(
      "extraHeaders",
      `extraHeaders must be an object of header names to strings (got ${describe(extraHeaders)})`,
    );
  }
  const out = {};
  for (const [name, value] of Object.entries(extraHeaders)) {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) {
      throw invalid("extraHeaders", `extraHeaders has an invalid header name (got ${describe(name)})`);
    }
    if (typeof value !== "string") {
      throw invalid("extraHeaders", `extraHeaders[${JSON.stringify(name)}] must be a string (got ${describe(value)})`);
    }
    out[name] = value;
  }
  return out;
}

/**
 * `extraBody` as sent: a copy of a plain object, JSON-serialisable, that does not set a
 * field the provider reads the reply by.
 */
function validateExtraBody(extraBody) {
  if (extraBody === undefined || extraBody === null) return {};
  if (typeof extraBody !== "object" || Array.isArray(extraBody)) {
    throw invalid("extraBody", `extraBody must be an object of request body fields (got ${describe(extraBody)})`);
  }
  for (const name of OWN_BODY_FIELDS) {
    if (Object.hasOwn(extraBody, name)) {
      throw invalid(
        "extraBody",
        `extraBody must not set ${JSON.stringify(name)}: the provider sets it (got extraBody.${name} = ${describe(extraBody[name])})`,
      );
    }
  }
  let copy;
  try {
    // A copy: later changes to the caller's object do not change requests silently.
    copy = JSON.parse(JSON.stringify(extraBody));
  } catch (err) {
    throw invalid("extraBody", `extraBody must be serialisable as JSON (got an object that is not: ${describeFailure(err)})`);
  }
  return copy;
}

/** Sets a header on a plain object, replacing any spelling of the same name. */
function setHeader(headers, name, value) {
  for (const existing of Object.keys(headers)) {
    if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
  }
  headers[name] = value;
}
