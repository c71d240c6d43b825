// Anthropic's Messages API (`POST /v1/messages`) on 127.0.0.1, for the tests that drive
// `@ai-sdk/anthropic` against it. It speaks the documented wire format: a message with
// `content` blocks, `stop_reason` ("end_turn", "max_tokens" at the token limit) and
// `usage` { input_tokens, output_tokens }; with `"stream": true`, server-sent events
// `message_start`, `content_block_start`, `content_block_delta` (`text_delta`),
// `content_block_stop`, `message_delta` (stop reason and output tokens), `message_stop`;
// errors as `{ type: "error", error: { type, message } }`, a 429 with `retry-after` and
// the `anthropic-ratelimit-*` headers (resets as RFC 3339 times).
//
// Each test scripts the answers: `answer(record, index)` returns one of the replies built
// below (or a promise of one); the default answers every request as a faithful model.

import { startServer, faithfulPieces, sse } from "./chat-server.mjs";

/** What the default model writes for a text: the text, marked as translated. */
export const translated = (text) => `[de] ${text}`;

/**
 * Starts the server. Every request is recorded with what the test needs to check:
 * `json` (the body), `stream`, `prompt` (the last user message's text), `system` (the
 * system prompt's text), `maxTokens`, `temperature`, and `reply` (what was answered:
 * `{ status, usage }`). Resolves with `{ baseURL, requests, close }`; `baseURL` is what
 * `createAnthropic({ baseURL })` takes.
 */
export async function startAnthropicServer(t, answer = faithfully()) {
  let count = 0;
  const srv = await startServer(t, async (record, res) => {
    const body = record.json ?? {};
    record.index = count;
    record.stream = body.stream === true;
    record.prompt = textOf(body.messages?.at(-1)?.content);
    record.system = textOf(body.system);
    record.maxTokens = body.max_tokens;
    record.temperature = body.temperature;
    const reply = await answer(record, count++);
    record.reply = { status: reply.status, usage: reply.usage };
    send(res, reply);
  });
  return { baseURL: srv.baseUrl, requests: srv.requests, close: srv.close };
}

/** The text of a message's content or of a system prompt: a string, or text blocks. */
function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  return content.map((block) => (block?.type === "text" ? block.text : "")).join("");
}

function send(res, reply) {
  if (res.destroyed) return;
  if (reply.events !== undefined) {
    res.writeHead(reply.status, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
    res.end(reply.events);
    return;
  }
  res.writeHead(reply.status, { "content-type": "application/json", "request-id": "req_test", ...reply.headers });
  res.end(JSON.stringify(reply.json));
}

/** Tokens as this server counts them: one per four characters, at least one. */
export const tokens = (text) => Math.max(1, Math.ceil(text.length / 4));

/** The usage of an answer `text` to the request `record`. */
function usageFor(record, text) {
  return { input_tokens: tokens(`${record.system ?? ""}${record.prompt ?? ""}`), output_tokens: tokens(text) };
}

/** A whole message answering `text`. */
export function message(record, text, { stopReason = "end_turn", headers = {} } = {}) {
  const usage = usageFor(record, text);
  return {
    status: 200,
    headers,
    usage,
    json: {
      id: `msg_${record.index}`,
      type: "message",
      role: "assistant",
      model: record.json?.model ?? "claude-test",
      content: [{ type: "text", text }],
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    },
  };
}

/** One server-sent event as the Messages API writes it: its name, then its data. */
function event(name, data) {
  return `event: ${name}\n${sse({ type: name, ...data })}`;
}

/**
 * A streamed message answering `pieces`, one `text_delta` each. With `error` (`{ type,
 * message }`), the stream breaks after the pieces with an `error` event, as the API reports
 * an error (`overloaded_error`, say) once the 200 has been sent.
 */
export function messageStream(record, pieces, { stopReason = "end_turn", headers = {}, error } = {}) {
  const usage = usageFor(record, pieces.join(""));
  const opening =
    event("message_start", {
      message: {
        id: "msg_stream",
        type: "message",
        role: "assistant",
        model: record.json?.model ?? "claude-test",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
      },
    }) +
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
    event("ping", {}) +
    pieces.map((text) => event("content_block_delta", { index: 0, delta: { type: "text_delta", text } })).join("");
  if (error !== undefined) return { status: 200, headers, events: opening + event("error", { error }) };
  const events =
    opening +
    event("content_block_stop", { index: 0 }) +
    event("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }) +
    event("message_stop", {});
  return { status: 200, headers, usage, events };
}

/** An error answer: `status` with the Messages API's error body. */
export function apiError(status, type, text, headers = {}) {
  return { status, headers, json: { type: "error", error: { type, message: text } } };
}

/**
 * The `anthropic-ratelimit-*` headers: for each of `requests`, `tokens`, `input-tokens`,
 * `output-tokens` given as `{ limit, remaining, reset }` (`reset` a Date), its three
 * headers, the reset as RFC 3339 in whole seconds as the API sends it.
 */
export function rateLimitHeaders(kinds) {
  const headers = {};
  for (const [kind, { limit, remaining, reset }] of Object.entries(kinds)) {
    headers[`anthropic-ratelimit-${kind}-limit`] = String(limit);
    headers[`anthropic-ratelimit-${kind}-remaining`] = String(remaining);
    headers[`anthropic-ratelimit-${kind}-reset`] = reset.toISOString().replace(/\.\d{3}Z$/, "Z");
  }
  return headers;
}

/** A 429 as the API sends it: `retry-after` in seconds, a `rate_limit_error` body. */
export function rateLimited(retryAfterSeconds, headers = {}) {
  return apiError(
    429,
    "rate_limit_error",
    "Number of request tokens has exceeded your per-minute rate limit.",
    { "retry-after": String(retryAfterSeconds), ...headers },
  );
}

/** The next whole second at least `ms` from now, as a Date (resets are whole seconds). */
export function resetIn(ms) {
  return new Date(Math.ceil((Date.now() + ms) / 1000) * 1000);
}

/**
 * The answer of a faithful model (see `faithfulPieces`): a whole message, or a stream of
 * one segment per delta when the request asks for a stream.
 */
export function faithfully(translate = translated) {
  return (record) => {
    const pieces = faithfulPieces(record.prompt, translate);
    return record.stream ? messageStream(record, pieces) : message(record, pieces.join(""));
  };
}
