// The reply of a streamed chat completion (`stream: true`) as the pacer reads streams:
// the text of `choices[0].delta.content` piece by piece, then `{ usage, limits }`.
//
// What the stream may carry besides the answer, and how it is read:
// - reasoning (`delta.reasoning_content`, or else `delta.reasoning`) is no part of the
//   answer, but it is forwarded between `<think>` and `</think>`, which the pacer leaves
//   out of the reply and counts against its length cap: a model that thinks forever is
//   cut there, like one that answers forever. Its `<` characters are sent as spaces, so
//   that nothing in a draft can close the tag early;
// - a `delta.content` that is not a string (a number, an object) is no text: it is
//   ignored, like an empty delta, so a reply made only of such deltas ends blank (a
//   failed call for a single text, a count mismatch for a batch), never "5";
// - a read that brought no text (only `reasoning_details`, empty deltas, a role) yields
//   "", so the stream still counts as alive between two values; each such value counts
//   against the length cap as well;
// - `finish_reason` (`"stop"`, `"length"` …) ends the answer: text after it is ignored,
//   and the stream is read on only for the usage chunk that follows it. `"length"` (the
//   model stopped at its token limit) is said with a value `{ truncated: true }` right
//   after the answer's last text, so that the pacer reads the answer as cut off;
// - `data: [DONE]` ends the stream; so does the body's end after a `finish_reason`. A
//   body that ends before either was cut off: a failure, so that a truncated answer is
//   never taken for a whole one;
// - an `error` event, or a chunk with an `error` object, is a failure with the status
//   the error names (read by `hooks.errorEvent`).

import { readServerSentEvents } from "./sse.js";

/**
 * Reads an ok response to a streamed chat-completions request.
 *
 * @param {Response} response the response; its body is read (and cancelled when the
 *   consumer stops early)
 * @param {object} hooks how the provider reads what the stream reports
 * @param {(raw: string) => Error} hooks.errorEvent the error for an error reported
 *   inside the stream, from the event's data
 * @param {(err: unknown) => Error} hooks.readFailure the error for a body that could not
 *   be read (an abort included)
 * @param {(usage: unknown) => object | undefined} hooks.usage `usage` as the pacer reads it
 * @param {(text: string) => string} hooks.excerpt a short, redacted form of foreign text
 * @param {object | undefined} hooks.limits the response's rate-limit headers, as read
 * @param {AbortSignal | undefined} hooks.signal the call's signal
 * @returns {AsyncGenerator<string | { truncated: true } | { usage?: object, limits?: object }>}
 */
export async function* readChatCompletionStream(response, hooks) {
  const events = readServerSentEvents(bodyOf(response));
  let finishReason;
  let done = false;
  let received = false;
  // Inside a `<think>` that this reader opened for reasoning deltas.
  let thinking = false;
  let usage;
  try {
    while (!done) {
      let step;
      try {
        step = await events.next();
      } catch (err) {
        // A connection lost after the answer ended loses only the usage.
        if (finishReason !== undefined && hooks.signal?.aborted !== true) break;
        throw hooks.readFailure(err);
      }
      if (step.done) break;
      let text = "";
      let alive = false;
      // Whether the answer ended at its token limit in this read.
      let truncated = false;
      // A failure that came in the same read as some text ends the stream after it.
      let failure;
      for (const { event, data } of step.value) {
        received = true;
        if (data.trim() === "[DONE]") {
          done = true;
          break;
        }
        if (event === "error") {
          failure = hooks.errorEvent(data);
          break;
        }
        // Other named events (pings, vendor extensions) carry no completion chunk.
        if (event !== "" && event !== "message") continue;
        const chunk = parseChunk(data, hooks);
        if (chunk instanceof Error || (chunk.error !== undefined && chunk.error !== null)) {
          failure = chunk instanceof Error ? chunk : hooks.errorEvent(data);
          break;
        }
        // Usage comes in the last chunk (OpenAI's include_usage) or in Groq's x_groq.
        usage = hooks.usage(chunk.usage) ?? hooks.usage(chunk.x_groq?.usage) ?? usage;
        const choice = firstChoice(chunk);
        if (choice === undefined || finishReason !== undefined) continue;
        const delta = choice.delta;
        const reasoning = reasoningOf(delta);
        if (reasoning !== "") {
          if (!thinking) text += "<think>";
          thinking = true;
          text += reasoning.replaceAll("<", " ");
        }
        const content = delta?.content;
        if (typeof content === "string" && content !== "") {
          if (thinking) text += "</think>";
          thinking = false;
          text += content;
        } else if (reasoning === "") {
          alive = true;
        }
        if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
          finishReason = choice.finish_reason;
          truncated = finishReason === "length";
        }
      }
      if (text !== "") yield text;
      else if (alive) yield "";
      if (truncated) yield { truncated: true };
      if (failure !== undefined) throw failure;
    }
  } finally {
    // Stopped early, or [DONE] read: the rest of the body is not needed.
    await events.return();
  }
  if (!done && finishReason === undefined) {
    if (!received) {
      const type = response.headers?.get?.("content-type") ?? "";
      throw new Error(
        `OpenAI-compatible API answered ${response.status} without a server-sent event stream` +
          (type ? ` (content-type ${hooks.excerpt(type)})` : ""),
      );
    }
    throw new Error("OpenAI-compatible API stream ended before the completion finished (no finish_reason, no [DONE])");
  }
  const end = {};
  if (usage !== undefined) end.usage = usage;
  if (hooks.limits !== undefined) end.limits = hooks.limits;
  if (Object.keys(end).length > 0) yield end;
}

/** A delta's reasoning text (`reasoning_content`, else `reasoning`), or "". */
function reasoningOf(delta) {
  if (delta === null || typeof delta !== "object") return "";
  const { reasoning_content: content, reasoning } = delta;
  if (typeof content === "string" && content !== "") return content;
  if (typeof reasoning === "string") return reasoning;
  return "";
}

/** The body to read: the stream, or for a fetch without streams, the whole text. */
function bodyOf(response) {
  if (response.body !== null && typeof response.body === "object") return response.body;
  return (async function* wholeText() {
    yield await response.text();
  })();
}

/** One chunk's JSON object; anything else is a broken stream, whose error is returned. */
function parseChunk(data, hooks) {
  let chunk;
  try {
    chunk = JSON.parse(data);
  } catch {
    chunk = undefined;
  }
  if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) {
    return new Error(`OpenAI-compatible API sent a stream event that is not a JSON object: ${hooks.excerpt(data)}`);
  }
  return chunk;
}

/** The chunk's choice 0 (endpoints asked for one choice may still number it). */
function firstChoice(chunk) {
  if (!Array.isArray(chunk.choices)) return undefined;
  return chunk.choices.find((c) => c !== null && typeof c === "object" && (c.index ?? 0) === 0);
}
