// The Gemini API (`POST /v1beta/models/{model}:generateContent`, and
// `:streamGenerateContent?alt=sse`) on 127.0.0.1, for the tests that drive
// `@ai-sdk/google` against it. It speaks the documented wire format: `candidates[]` whose
// `content.parts[]` hold the text, a `finishReason` ("STOP", "MAX_TOKENS" at the token
// limit) and `usageMetadata` { promptTokenCount, candidatesTokenCount, totalTokenCount };
// streamed, one `GenerateContentResponse` per server-sent event; errors as a
// `google.rpc.Status` `{ error: { code, message, status, details } }`, a spent quota as
// 429 RESOURCE_EXHAUSTED whose details carry a `google.rpc.QuotaFailure` (its `quotaId`
// says per minute or per day) and a `google.rpc.RetryInfo` `retryDelay`. Gemini sends no
// Retry-After header: the wait is in the body only.
//
// Each test scripts the answers: `answer(record, index)` returns one of the replies built
// below (or a promise of one); the default answers every request as a faithful model.

import { startServer, faithfulPieces, sse } from "./chat-server.mjs";
import { translated, tokens } from "./anthropic-server.mjs";

export { translated, tokens };

/**
 * Starts the server. Every request is recorded with `json` (the body), `model`, `stream`,
 * `prompt` (the last user turn's text), `system` (the system instruction's text),
 * `maxTokens` (`generationConfig.maxOutputTokens`), `temperature`, and `reply` (what was
 * answered: `{ status, usage }`). Resolves with `{ baseURL, requests, close }`; `baseURL`
 * is what `createGoogleGenerativeAI({ baseURL })` takes.
 */
export async function startGeminiServer(t, answer = faithfully()) {
  let count = 0;
  const srv = await startServer(t, async (record, res) => {
    const route = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)(\?alt=sse)?$/.exec(record.url);
    if (record.method !== "POST" || route === null) {
      return send(res, apiError(404, "NOT_FOUND", `no route ${record.method} ${record.url}`));
    }
    const body = record.json ?? {};
    record.index = count;
    record.model = route[1];
    record.stream = route[2] === "streamGenerateContent";
    record.prompt = textOf(body.contents?.findLast((turn) => turn?.role === "user"));
    record.system = textOf(body.systemInstruction);
    record.maxTokens = body.generationConfig?.maxOutputTokens;
    record.temperature = body.generationConfig?.temperature;
    const reply = await answer(record, count++);
    record.reply = { status: reply.status, usage: reply.usage };
    send(res, reply);
  });
  return { baseURL: `http://127.0.0.1:${srv.port}/v1beta`, requests: srv.requests, close: srv.close };
}

/** The text of a `Content`: its text parts joined. */
function textOf(content) {
  const parts = content?.parts;
  return Array.isArray(parts) ? parts.map((part) => (typeof part?.text === "string" ? part.text : "")).join("") : undefined;
}

function send(res, reply) {
  if (res.destroyed) return;
  if (reply.events !== undefined) {
    res.writeHead(reply.status, { "content-type": "text/event-stream", ...reply.headers });
    res.end(reply.events);
    return;
  }
  res.writeHead(reply.status, { "content-type": "application/json; charset=UTF-8", ...reply.headers });
  res.end(JSON.stringify(reply.json));
}

/** The `usageMetadata` of an answer `text` to the request `record`. */
function usageFor(record, text) {
  const promptTokenCount = tokens(`${record.system ?? ""}${record.prompt ?? ""}`);
  const candidatesTokenCount = tokens(text);
  return { promptTokenCount, candidatesTokenCount, totalTokenCount: promptTokenCount + candidatesTokenCount };
}

/** A `GenerateContentResponse` with one candidate. */
function response(record, text, finishReason, usageMetadata) {
  return {
    candidates: [
      {
        content: { parts: [{ text }], role: "model" },
        ...(finishReason === undefined ? {} : { finishReason }),
        index: 0,
      },
    ],
    usageMetadata,
    modelVersion: record.model,
    responseId: `resp-${record.index}`,
  };
}

/** A whole answer `text`. */
export function content(record, text, { finishReason = "STOP", headers = {} } = {}) {
  const usage = usageFor(record, text);
  return { status: 200, headers, usage, json: response(record, text, finishReason, usage) };
}

/**
 * A streamed answer of `pieces`, one response per event: the prompt's count on each, the
 * finish reason and the whole count on the last.
 */
export function contentStream(record, pieces, { finishReason = "STOP", headers = {} } = {}) {
  const usage = usageFor(record, pieces.join(""));
  const events = pieces
    .map((piece, i) =>
      i < pieces.length - 1
        ? sse(response(record, piece, undefined, { promptTokenCount: usage.promptTokenCount }))
        : sse(response(record, piece, finishReason, usage)),
    )
    .join("");
  return { status: 200, headers, usage, events };
}

/** An error answer: `code` with a `google.rpc.Status` body. */
export function apiError(code, status, message, details = []) {
  return { status: code, headers: {}, json: { error: { code, message, status, details } } };
}

/** A `google.rpc.QuotaFailure` for the quota `quotaId` (e.g. "…PerDayPerProjectPerModel-FreeTier"). */
export function quotaFailure(quotaId, quotaValue = "20") {
  return {
    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
    violations: [
      {
        quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
        quotaId,
        quotaDimensions: { location: "global", model: "gemini-2.5-flash" },
        quotaValue,
      },
    ],
  };
}

/** A `google.rpc.RetryInfo` with `retryDelay` as the API writes it ("2s", "37s"). */
export function retryInfo(retryDelay) {
  return { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay };
}

/** The per-minute quota a free key runs into. */
export const PER_MINUTE = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier";
/** The per-day quota a free key runs into. */
export const PER_DAY = "GenerateRequestsPerDayPerProjectPerModel-FreeTier";

/** A 429 RESOURCE_EXHAUSTED for `quotaId`, asking to retry after `retryDelay`. */
export function quotaExceeded(quotaId, retryDelay) {
  return apiError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.", [
    quotaFailure(quotaId),
    {
      "@type": "type.googleapis.com/google.rpc.Help",
      links: [{ description: "Learn more about Gemini API quotas", url: "https://ai.google.dev/gemini-api/docs/rate-limits" }],
    },
    retryInfo(retryDelay),
  ]);
}

/**
 * The answer of a faithful model (see `faithfulPieces`): whole, or streamed one segment
 * per event when the request asks for a stream.
 */
export function faithfully(translate = translated) {
  return (record) => {
    const pieces = faithfulPieces(record.prompt, translate);
    return record.stream ? contentStream(record, pieces) : content(record, pieces.join(""));
  };
}
