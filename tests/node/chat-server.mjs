// A chat-completions server on 127.0.0.1 for the openAIProvider tests: it records every
// request and lets the test answer it.

import http from "node:http";

/**
 * Starts a chat-completions server. `handler(record, res)` answers each request;
 * `record` holds the method, url, headers and parsed JSON body the server received.
 */
export async function startServer(t, handler) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      let json;
      try {
        json = JSON.parse(raw);
      } catch {
        json = undefined;
      }
      const record = { method: req.method, url: req.url, headers: req.headers, raw, json };
      requests.push(record);
      handler(record, res, req);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  const close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.after(close);
  return { baseUrl: `http://127.0.0.1:${port}/v1`, port, requests, close };
}

/** The fields every hand-built provider request shares: an item's compatibility
 * fields, a first try, and a live signal. */
export function requestFields() {
  return {
    sourceLang: "en",
    targetLang: "de",
    providerId: "openai",
    context: "",
    attempt: 0,
    signal: new AbortController().signal,
  };
}

/** A single request (one text) as the pacer builds it. */
export function singleRequest(text, overrides = {}) {
  return { texts: [text], ids: ["1"], text, instructions: "", isBatch: false, ...requestFields(), ...overrides };
}

// ---------------------------------------------------------------------------------------
// Streamed completions (server-sent events)
// ---------------------------------------------------------------------------------------

/** A chunk of a streamed chat completion whose choice 0 carries `delta`. */
export function deltaChunk(delta, choice = {}) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: null, ...choice }],
  };
}

/** One event of the stream: `data: <json>` and the blank line that ends it. */
export function sse(value) {
  return `data: ${typeof value === "string" ? value : JSON.stringify(value)}\n\n`;
}

/**
 * The event stream of a faithful completion that answers `pieces` one delta each, then
 * `finish_reason: "stop"`, a usage chunk (when `usage` is given) and `[DONE]`.
 */
export function completionStream(pieces, usage) {
  let out = sse(deltaChunk({ role: "assistant", content: "" }));
  for (const piece of pieces) out += sse(deltaChunk({ content: piece }));
  out += sse(deltaChunk({}, { finish_reason: "stop" }));
  if (usage !== undefined) out += sse({ id: "chatcmpl-test", object: "chat.completion.chunk", choices: [], usage });
  return out + sse("[DONE]");
}

/** `count` distinct byte offsets inside `length` bytes, ascending, drawn from `random`. */
export function randomCuts(random, length, count) {
  const cuts = new Set();
  while (cuts.size < Math.min(count, length - 1)) cuts.add(1 + Math.floor(random() * (length - 1)));
  return [...cuts].sort((a, b) => a - b);
}

/**
 * A fetch for the provider that counts the body bytes its reader has taken of the
 * latest response, one network read at a time (the body is handed on only when the reader asks), so that a server
 * writing with `writePieces` can wait for each piece to be read before it sends the
 * next: the reader then sees reads that end exactly at the cuts. `reads` lists the
 * byte length of every read.
 */
export function readCounter() {
  let total = 0;
  const reads = [];
  const waiting = [];
  const wake = () => {
    for (const w of waiting.splice(0)) {
      if (total >= w.bytes) w.resolve();
      else waiting.push(w);
    }
  };
  return {
    reads,
    fetch: async (url, init) => {
      // Counted per response, from before the request leaves (calls run one at a time).
      total = 0;
      const response = await globalThis.fetch(url, init);
      if (response.body === null) return response;
      const reader = response.body.getReader();
      const counted = new ReadableStream(
        {
          async pull(controller) {
            const { done, value } = await reader.read();
            if (done) return controller.close();
            total += value.byteLength;
            reads.push(value.byteLength);
            controller.enqueue(value);
            wake();
          },
          cancel: (reason) => reader.cancel(reason),
        },
        { highWaterMark: 0 },
      );
      return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
    },
    /** Resolves when `bytes` bytes of the latest body have been read, or `res` has closed. */
    until(bytes, res) {
      if (total >= bytes || res.destroyed) return Promise.resolve();
      return new Promise((resolve) => {
        waiting.push({ bytes, resolve });
        res.once("close", resolve);
      });
    },
  };
}

/**
 * Answers 200 with the event stream `text`, written in pieces that end at the byte
 * offsets `cuts`. With a `counter` (see `readCounter`), each piece waits until the
 * client has read everything before it; without one, for the next turn of the event
 * loop. `beforePiece(index)` may delay a piece (e.g. until the test has seen a value).
 * Stops writing when the client goes away.
 */
export async function writePieces(res, text, { cuts = [], counter, headers = {}, beforePiece } = {}) {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  res.socket?.setNoDelay(true);
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", ...headers });
  res.flushHeaders();
  let at = 0;
  let index = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut <= at) continue;
    if (beforePiece) await beforePiece(index);
    if (res.destroyed) return;
    res.write(bytes.subarray(at, cut));
    at = cut;
    index += 1;
    if (counter) await counter.until(at, res);
    else await new Promise((resolve) => setImmediate(resolve));
  }
  if (!res.destroyed) res.end();
}

// ---------------------------------------------------------------------------------------
// A faithful model, whatever the API around it
// ---------------------------------------------------------------------------------------

/** A marked segment line of a batch: its open marker, its text, its close marker. */
const SEGMENT_LINE = /^(<[^>\s]+>)([\s\S]*)(<\/[^>\s]+>)$/;

/**
 * The answer of a model that keeps a batch's layout: for a marked batch (`prompt` as the
 * pacer lays it out), each segment's text through `translate` between its own markers,
 * and any other line copied as it is; for a single text, `translate(prompt)`. One piece per
 * line (a stream can send one segment per value); `.join("")` is the whole answer.
 */
export function faithfulPieces(prompt, translate) {
  const lines = prompt.split("\n");
  if (!SEGMENT_LINE.test(lines[0])) return [translate(prompt)];
  return lines.map((line, i) => {
    const match = SEGMENT_LINE.exec(line);
    const answered = match ? `${match[1]}${translate(match[2])}${match[3]}` : line;
    return i < lines.length - 1 ? `${answered}\n` : answered;
  });
}

/** The texts of a marked batch's segments (the texts of the items), or `[prompt]` when single. */
export function promptTexts(prompt) {
  const lines = prompt.split("\n");
  if (!SEGMENT_LINE.test(lines[0])) return [prompt];
  return lines.flatMap((line) => {
    const match = SEGMENT_LINE.exec(line);
    return match ? [match[2]] : [];
  });
}
