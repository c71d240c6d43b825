// How the mock provider writes a reply as a model does: a reasoning draft first when
// asked (`<think>` … `</think>`, holding markers, as Qwen3 on Ollama or DeepSeek-R1 write
// them into the content), then the answer token by token, as OpenAI-style server-sent
// events (`data: {chat.completion.chunk}` with `choices[0].delta.content`, a last chunk
// with `finish_reason`, the usage chunk when `stream_options.include_usage` asks for
// it, then `data: [DONE]`).

/** About 4 characters a token, as the mock counts usage. */
export const CHARS_PER_TOKEN = 4;

/** The text cut into tokens of `CHARS_PER_TOKEN` characters (code points kept whole). */
export function tokenize(text) {
  const chars = [...String(text)];
  const tokens = [];
  for (let at = 0; at < chars.length; at += CHARS_PER_TOKEN) tokens.push(chars.slice(at, at + CHARS_PER_TOKEN).join(""));
  return tokens;
}

/**
 * The draft a thinking model writes before its answer (`reply` is what translateChat
 * returns). In the markers layout it holds the batch's own markers around the wrong
 * texts (each pair around its neighbour's translation), so a reader that took the draft
 * for the reply would misplace every paragraph; otherwise it is plain prose.
 */
export function thinkingDraft({ segments, sourceSegments, markers, separator }) {
  const lines = ["Okay, the user wants a translation. Let me draft it first."];
  if (markers !== null && segments.length > 1) {
    segments.forEach((_, i) => {
      const other = segments[(i + 1) % segments.length];
      const number = sourceSegments.numbers[i];
      lines.push(`<${markers}${number}>${other}</${markers}${number}>`);
    });
    lines.push("Wait, the pairs are shifted. Let me write the answer properly.");
  } else if (separator !== null) {
    lines.push(`The segments are separated by ${separator}; I keep that layout.`);
  }
  return `<think>\n${lines.join("\n")}\n</think>\n`;
}

/**
 * Writes `content` as a streamed chat completion on `res` (an http.ServerResponse whose
 * status and headers are not sent yet): the first token now, then one token every
 * 1000 / `tokensPerSecond` ms (0 = no writing time: every token at once). `timers` (a
 * Set) holds the pending timer so that the server's close() can clear it; a closed
 * socket stops the stream quietly.
 */
export function writeStream(res, { content, id, created, model, usage, includeUsage, tokensPerSecond, headers, timers }) {
  const tokens = tokenize(content);
  const chunk = (choices, extra = {}) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`;
  const events = [
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]),
    ...tokens.map((token) => chunk([{ index: 0, delta: { content: token }, finish_reason: null }])),
  ];
  const tail = [chunk([{ index: 0, delta: {}, finish_reason: "stop" }])];
  if (includeUsage) tail.push(chunk([], { usage }));
  tail.push("data: [DONE]\n\n");

  res.writeHead(200, {
    ...headers,
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
  });
  const tokenMs = tokensPerSecond > 0 ? 1000 / tokensPerSecond : 0;
  // Token i is due at startedAt + i * tokenMs: each step writes every token due by now,
  // so timer lateness never adds up and the last token comes when a whole reply would.
  const startedAt = performance.now();
  let next = 0; // index of the next event; event 0 (the role chunk) goes with token 0
  let timer;
  const step = () => {
    timer = undefined;
    if (res.destroyed || res.writableEnded) return;
    const written = tokenMs === 0 ? events.length : Math.min(events.length, 2 + Math.floor((performance.now() - startedAt) / tokenMs));
    res.write(events.slice(next, written).join(""));
    next = written;
    if (next < events.length) {
      const dueIn = startedAt + (next - 1) * tokenMs - performance.now();
      timer = setTimeout(() => {
        timers.delete(timer);
        step();
      }, Math.max(0, dueIn));
      timers.add(timer);
      return;
    }
    res.end(tail.join(""));
  };
  step();
  res.on("close", () => {
    if (timer === undefined) return;
    clearTimeout(timer);
    timers.delete(timer);
    timer = undefined;
  });
}
