// Tests of openAIProvider({ stream: true }) and extraBody against a real HTTP server on
// 127.0.0.1 that streams server-sent events in pieces cut at chosen or seeded random
// byte offsets; the provider's reads end exactly at those cuts (see `readCounter`).
// The provider is called directly and its stream iterated, as the pacer does; the last
// suite drives it through BatchPacer.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import init, { BatchPacer, openAIProvider, PacerError } from "batch-pacer";

import {
  completionStream,
  deltaChunk,
  randomCuts,
  readCounter,
  requestFields,
  singleRequest,
  sse,
  startServer,
  writePieces,
} from "./chat-server.mjs";
import { prng, rejection } from "./helpers.mjs";

const KEY = "sk-stream-canary-7f3a";

/** Every value of a stream, in order. */
async function collect(stream) {
  const values = [];
  for await (const value of stream) values.push(value);
  return values;
}

/** The strings of a stream's values joined: the reply's text. */
const textOf = (values) => values.filter((v) => typeof v === "string").join("");

/** The byte offsets inside every multi-byte UTF-8 character of `text`. */
function insideCharacters(text) {
  const offsets = [];
  let at = 0;
  for (const char of text) {
    const size = new TextEncoder().encode(char).length;
    for (let k = 1; k < size; k++) offsets.push(at + k);
    at += size;
  }
  return offsets;
}

/** A provider streaming from `srv` through a read counter. */
function streamingProvider(srv, counter, options = {}) {
  return openAIProvider({ baseUrl: srv.baseUrl, apiKey: KEY, model: "m", stream: true, fetch: counter.fetch, ...options });
}

// Text with one-, two-, three- and four-byte characters, a combining mark and a
// line break, in pieces that cut words.
const PIECES = ["Grüße aus Köln, ", "東京から ", "🎉🇩🇪 ", "café\u0301\n", "Zweite Zeile ✓"];
const USAGE = { prompt_tokens: 42, completion_tokens: 17, total_tokens: 59 };

describe("streamed replies read through server-sent events", () => {
  test("the text arrives whole and in order whatever byte offsets the network cuts at (seeded random cuts)", async (t) => {
    const wire = completionStream(PIECES, USAGE);
    const bytes = new TextEncoder().encode(wire);
    const counter = readCounter();
    let cuts = [];
    const srv = await startServer(t, (r, res) =>
      writePieces(res, bytes, { cuts, counter, headers: { "x-ratelimit-remaining-requests": "99" } }),
    );
    const provider = streamingProvider(srv, counter);
    const random = prng(20260901);
    for (let run = 0; run < 40; run++) {
      cuts = randomCuts(random, bytes.length, 1 + Math.floor(random() * 40));
      const readsBefore = counter.reads.length;
      const values = await collect(await provider(singleRequest("Hello")));
      assert.equal(textOf(values), PIECES.join(""), `cuts ${cuts.join(",")}`);
      assert.ok(!textOf(values).includes("\uFFFD"), "no character was broken");
      assert.deepEqual(values.at(-1), { usage: { inputTokens: 42, outputTokens: 17 }, limits: { requestsRemaining: 99 } });
      assert.ok(counter.reads.length - readsBefore >= cuts.length + 1, "every cut reached the provider as a read of its own");
    }
  });

  test("a stream cut at every byte gives the same values as one cut nowhere", async (t) => {
    const bytes = new TextEncoder().encode(completionStream(PIECES, USAGE));
    const counter = readCounter();
    let cuts = [];
    const srv = await startServer(t, (r, res) => writePieces(res, bytes, { cuts, counter }));
    const provider = streamingProvider(srv, counter);
    const whole = await collect(await provider(singleRequest("Hello")));
    cuts = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    const perByte = await collect(await provider(singleRequest("Hello")));
    assert.equal(textOf(whole), PIECES.join(""));
    assert.equal(textOf(perByte), PIECES.join(""));
    assert.deepEqual(perByte.at(-1), whole.at(-1));
  });

  test("a multi-byte character split between two reads arrives whole", async (t) => {
    const wire = completionStream(["ä", "中", "😀", "naïve 🇯🇵"]);
    const bytes = new TextEncoder().encode(wire);
    const counter = readCounter();
    const cuts = insideCharacters(wire);
    const srv = await startServer(t, (r, res) => writePieces(res, bytes, { cuts, counter }));
    const values = await collect(await streamingProvider(srv, counter)(singleRequest("x")));
    assert.equal(textOf(values), "ä中😀naïve 🇯🇵");
    // The reads really ended inside characters: their boundaries are the cuts.
    const ends = counter.reads.reduce((out, n) => [...out, (out.at(-1) ?? 0) + n], []);
    for (const cut of cuts) assert.ok(ends.includes(cut), `a read ended at byte ${cut}, inside a character`);
  });

  test("CRLF, LF and lone CR line ends, comments, multi-line data and a BOM are read as the format says", async (t) => {
    const lines = [
      "\uFEFF: keep-alive",
      "",
      `data: ${JSON.stringify(deltaChunk({ role: "assistant", content: "" }))}`,
      "",
      ": OPENROUTER PROCESSING",
      "",
      // One JSON chunk written over two data: lines (joined with "\n", valid JSON).
      'data: {"id":"c","object":"chat.completion.chunk",',
      'data: "choices":[{"index":0,"delta":{"content":"eins "},"finish_reason":null}]}',
      "",
      "event: message",
      "id: 7",
      "retry: 1000",
      `data:${JSON.stringify(deltaChunk({ content: "zwei " }))}`,
      "",
      `data: ${JSON.stringify(deltaChunk({ content: "drei" }))}`,
      "",
      `data: ${JSON.stringify(deltaChunk({}, { finish_reason: "stop" }))}`,
      "",
      "data: [DONE]",
      "",
    ];
    for (const [name, end] of [["CRLF", "\r\n"], ["LF", "\n"], ["CR", "\r"]]) {
      await t.test(name, async (t) => {
        const bytes = new TextEncoder().encode(lines.join(end) + end);
        const counter = readCounter();
        // Cut between the CR and the LF of every CRLF, and inside every line start.
        const cuts = [];
        for (let i = 1; i < bytes.length; i++) if (bytes[i - 1] === 0x0d || bytes[i] === 0x3a) cuts.push(i);
        const srv = await startServer(t, (r, res) => writePieces(res, bytes, { cuts, counter }));
        const values = await collect(await streamingProvider(srv, counter)(singleRequest("x")));
        assert.equal(textOf(values), "eins zwei drei");
      });
    }
  });

  test("values come while the server is still writing: the first before the rest is sent", async (t) => {
    const first = sse(deltaChunk({ role: "assistant", content: "Erster Absatz. " }));
    const rest = completionStream(["Zweiter Absatz."]).slice(sse(deltaChunk({ role: "assistant", content: "" })).length);
    const counter = readCounter();
    const order = [];
    let seenFirst;
    const firstSeen = new Promise((resolve) => (seenFirst = resolve));
    const wire = first + rest;
    const srv = await startServer(t, (r, res) =>
      writePieces(res, wire, {
        cuts: [Buffer.byteLength(first)],
        counter,
        beforePiece: async (index) => {
          if (index === 1) {
            await firstSeen;
            order.push("server sends the rest");
          }
        },
      }),
    );
    const stream = await streamingProvider(srv, counter)(singleRequest("x"));
    const values = [];
    for await (const value of stream) {
      values.push(value);
      if (values.length === 1) {
        order.push(`provider yields ${JSON.stringify(value)}`);
        seenFirst();
      }
    }
    assert.deepEqual(order, ['provider yields "Erster Absatz. "', "server sends the rest"]);
    assert.equal(textOf(values), "Erster Absatz. Zweiter Absatz.");
  });
});

describe("stream_options.include_usage", () => {
  for (const status of [400, 422]) {
    test(`refused with ${status}: sent again without it, and not asked again by this provider`, async (t) => {
      const srv = await startServer(t, (r, res) => {
        if (r.json.stream_options !== undefined) {
          res.writeHead(status, { "Content-Type": "application/json" });
          return res.end(JSON.stringify({ error: { message: "Unrecognized request argument: stream_options" } }));
        }
        writePieces(res, completionStream(["Hallo"]));
      });
      const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
      assert.equal(textOf(await collect(await provider(singleRequest("Hello")))), "Hallo");
      assert.equal(textOf(await collect(await provider(singleRequest("Hello")))), "Hallo");
      assert.deepEqual(
        srv.requests.map((r) => r.json.stream_options ?? null),
        [{ include_usage: true }, null, null],
        "refused once, sent again without it, then never asked again",
      );
      assert.ok(srv.requests.every((r) => r.json.stream === true));

      // Another provider instance (another endpoint, perhaps) asks again.
      const other = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
      await collect(await other(singleRequest("Hello")));
      assert.deepEqual(srv.requests.at(-2).json.stream_options, { include_usage: true });
      assert.equal(srv.requests.length, 5);
    });
  }

  test("accepted: it is sent on every call and the usage comes last", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, completionStream(["Hallo"], USAGE)));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
    for (let i = 0; i < 2; i++) {
      const values = await collect(await provider(singleRequest("Hello")));
      assert.deepEqual(values.at(-1), { usage: { inputTokens: 42, outputTokens: 17 } });
    }
    assert.deepEqual(srv.requests.map((r) => r.json.stream_options), [{ include_usage: true }, { include_usage: true }]);
  });

  test("a 400 that the request without it meets too is the call's error, and is not remembered", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(400, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { message: "model does not exist in this region" } }));
    });
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
    for (let call = 1; call <= 2; call++) {
      const err = await rejection(provider(singleRequest("Hello")));
      assert.equal(err.status, 400);
      assert.match(err.message, /model does not exist in this region/);
      assert.equal(srv.requests.length, 2 * call);
      assert.deepEqual(srv.requests.at(-2).json.stream_options, { include_usage: true }, `call ${call} asked for usage first`);
    }
  });

  test("Groq's x_groq.usage in the last chunk is read as usage too", async (t) => {
    const wire =
      sse(deltaChunk({ content: "Hallo" })) +
      sse({ ...deltaChunk({}, { finish_reason: "stop" }), x_groq: { usage: { prompt_tokens: 5, completion_tokens: 2 } } }) +
      sse("[DONE]");
    const srv = await startServer(t, (r, res) => writePieces(res, wire));
    const values = await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x")));
    assert.deepEqual(values, ["Hallo", { usage: { inputTokens: 5, outputTokens: 2 } }]);
  });
});

describe("how a stream ends", () => {
  test('finish_reason "length" ends the text there; the usage after it is still read', async (t) => {
    const wire =
      sse(deltaChunk({ content: "<s1>Eins</s1>\n<s2>Zw" })) +
      sse(deltaChunk({ content: "ei" }, { finish_reason: "length" })) +
      // What a broken endpoint might send after the end: never part of the reply.
      sse(deltaChunk({ content: "</s2>\n<s3>Drei</s3>" })) +
      sse({ id: "c", object: "chat.completion.chunk", choices: [], usage: USAGE }) +
      sse("[DONE]");
    const srv = await startServer(t, (r, res) => writePieces(res, wire));
    const values = await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x")));
    assert.equal(textOf(values), "<s1>Eins</s1>\n<s2>Zwei");
    assert.deepEqual(values.at(-1), { usage: { inputTokens: 42, outputTokens: 17 } });
  });

  test("a body that ends after a finish_reason without [DONE] ends the stream normally", async (t) => {
    const wire = sse(deltaChunk({ content: "Hallo" })) + sse(deltaChunk({}, { finish_reason: "stop" }));
    const srv = await startServer(t, (r, res) => writePieces(res, wire));
    const values = await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x")));
    assert.deepEqual(values, ["Hallo"]);
  });

  test("a body cut off before any finish_reason or [DONE] is a failure without a status, after the text so far", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, sse(deltaChunk({ content: "Hal" }))));
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    const values = [];
    const err = await rejection((async () => {
      for await (const value of stream) values.push(value);
    })());
    assert.deepEqual(values, ["Hal"]);
    assert.equal(err.status, undefined, "retried like a lost connection");
    assert.match(err.message, /ended before the completion finished/);
  });

  test("a connection lost mid-answer is a failure without a status; lost after the finish_reason, only the usage is lost", async (t) => {
    const answers = [sse(deltaChunk({ content: "Hal" })), sse(deltaChunk({ content: "Hallo" }, { finish_reason: "stop" }))];
    const srv = await startServer(t, (r, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      // Written, then the socket is destroyed: no end of the chunked body, no usage chunk.
      res.write(answers[srv.requests.length - 1], () => setImmediate(() => res.socket.destroy()));
    });
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
    const values = [];
    const err = await rejection((async () => {
      for await (const value of await provider(singleRequest("x"))) values.push(value);
    })());
    assert.deepEqual(values, ["Hal"]);
    assert.equal(err.status, undefined, "retried like any lost connection");
    assert.match(err.message, /OpenAI-compatible API request to .* failed/);
    assert.deepEqual(await collect(await provider(singleRequest("x"))), ["Hallo"]);
  });

  test("a 200 that is not an event stream is a failure naming its content type", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ choices: [{ message: { content: "Hallo" } }] }));
    });
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    const err = await rejection(collect(stream));
    assert.match(err.message, /without a server-sent event stream \(content-type application\/json\)/);
  });

  test("an event that is not a JSON object is a failure quoting it", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, sse(deltaChunk({ content: "a" })) + sse("{not json")));
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    const err = await rejection(collect(stream));
    assert.match(err.message, /not a JSON object: \{not json/);
    assert.equal(err.status, undefined);
  });
});

describe("reasoning in the stream", () => {
  test("reasoning_content and reasoning deltas come between <think> tags, never as markers of the reply", async (t) => {
    const wire =
      sse(deltaChunk({ role: "assistant", content: null, reasoning_content: "Draft: <s1>Entwurf</s1>" })) +
      sse(deltaChunk({ reasoning: "<s2>draft two</s2> hmm" })) +
      sse(deltaChunk({ reasoning_details: [{ type: "reasoning.text", text: "<s1>x</s1>" }] })) +
      sse(deltaChunk({ content: "<s1>Eins</s1>\n" })) +
      sse(deltaChunk({ content: "<s2>Zwei</s2>", reasoning_content: "late thought" })) +
      sse(deltaChunk({}, { finish_reason: "stop" })) +
      sse("[DONE]");
    const bytes = new TextEncoder().encode(wire);
    const counter = readCounter();
    // One read per event, so that each reasoning-only event is a read of its own.
    const cuts = [];
    for (let i = wire.indexOf("\n\n"); i !== -1; i = wire.indexOf("\n\n", i + 2)) cuts.push(Buffer.byteLength(wire.slice(0, i + 2)));
    const srv = await startServer(t, (r, res) => writePieces(res, bytes, { cuts, counter }));
    const values = await collect(await streamingProvider(srv, counter)(singleRequest("x")));
    // Reasoning is forwarded between <think> tags (which the pacer leaves out of the
    // reply and counts against its length cap), its "<" sent as spaces: no draft holds a
    // marker or a tag.
    const text = textOf(values);
    const thoughts = [...text.matchAll(/<think>(.*?)<\/think>/gs)].map((m) => m[1]);
    assert.deepEqual(thoughts, ["Draft:  s1>Entwurf /s1> s2>draft two /s2> hmm", "late thought"]);
    assert.equal(text.replace(/<think>.*?<\/think>/gs, ""), "<s1>Eins</s1>\n<s2>Zwei</s2>");
    // A read that brought only reasoning_details gives "": the model is alive, the reply unchanged.
    assert.equal(values[2], "");
  });
});

describe("errors inside the stream", () => {
  test("an error event after some text fails the iteration with the status it names", async (t) => {
    const wire =
      sse(deltaChunk({ content: "<s1>Eins</s1>" })) +
      `event: error\ndata: ${JSON.stringify({ error: { message: "upstream overloaded", type: "server_error", code: 502 } })}\n\n`;
    const srv = await startServer(t, (r, res) => writePieces(res, wire));
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    const values = [];
    const err = await rejection((async () => {
      for await (const value of stream) values.push(value);
    })());
    assert.deepEqual(values, ["<s1>Eins</s1>"]);
    assert.equal(err.status, 502);
    assert.match(err.message, /error in the stream \(status 502\): upstream overloaded/);
  });

  test("a chunk with an error object (OpenRouter's form) fails with its code as the status", async (t) => {
    const wire =
      sse(deltaChunk({ content: "Hal" })) +
      sse({ ...deltaChunk({ content: "" }, { finish_reason: "error" }), error: { code: 429, message: "Rate limit exceeded upstream" } });
    const srv = await startServer(t, (r, res) => writePieces(res, wire));
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    const err = await rejection(collect(stream));
    assert.equal(err.status, 429);
    assert.equal(err.quota, "rate");
  });

  test("an error's type gives the status when it names no number; insufficient_quota is billing", async (t) => {
    const cases = [
      [{ error: { type: "overloaded_error", message: "Overloaded" } }, 529, undefined],
      [{ error: { type: "invalid_request_error", message: "bad" } }, 400, undefined],
      [{ error: { code: "insufficient_quota", message: "You exceeded your current quota" } }, 429, "billing"],
      [{ error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "Quota exceeded" } }, 429, "rate"],
      [{ error: { message: "something broke" } }, undefined, undefined],
    ];
    for (const [body, status, quota] of cases) {
      const srv = await startServer(t, (r, res) => writePieces(res, `event: error\ndata: ${JSON.stringify(body)}\n\n`));
      const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
      const err = await rejection(collect(stream));
      assert.equal(err.status, status, JSON.stringify(body));
      assert.equal(err.quota, quota, JSON.stringify(body));
      assert.ok(err.message.includes(body.error.message));
    }
  });

  test("an error event whose data is text over several data: lines reads as one message", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, "event: error\ndata: upstream\r\ndata: connection reset\n\n"));
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    const err = await rejection(collect(stream));
    assert.equal(err.status, undefined, "no status named: retried like a lost connection");
    assert.match(err.message, /error in the stream: upstream connection reset$/);
  });

  test("the API key never appears in an error the stream reports", async (t) => {
    const srv = await startServer(t, (r, res) =>
      writePieces(res, `event: error\ndata: ${JSON.stringify({ error: { message: `bad key ${r.headers.authorization}`, code: 401 } })}\n\n`),
    );
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, apiKey: KEY, model: "m", stream: true })(singleRequest("x"));
    const err = await rejection(collect(stream));
    assert.equal(err.status, 401);
    assert.ok(!err.message.includes(KEY) && err.message.includes("***"), err.message);
  });

  test("an HTTP error before the stream rejects the call itself, as without streaming", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(429, { "Content-Type": "application/json", "Retry-After": "7", "x-ratelimit-remaining-requests": "0" });
      res.end(JSON.stringify({ error: { message: "Rate limit reached" } }));
    });
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x")));
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 7000);
    assert.equal(err.quota, "rate");
    assert.deepEqual(err.limits, { requestsRemaining: 0 });
    assert.equal(srv.requests.length, 1, "a 429 is not a refusal of stream_options");
  });
});

describe("cancelling a stream", () => {
  /** A server whose model writes "Hal" and then nothing more; `closed` settles when the connection closes. */
  async function stuckModel(t) {
    let close;
    const closed = new Promise((resolve) => (close = resolve));
    const srv = await startServer(t, (r, res) => {
      res.on("close", close);
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(sse(deltaChunk({ content: "Hal" })));
    });
    return { srv, closed };
  }

  test("aborting the signal mid-stream ends the iteration with the AbortError and closes the connection", async (t) => {
    const { srv, closed } = await stuckModel(t);
    const controller = new AbortController();
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(
      singleRequest("x", { signal: controller.signal }),
    );
    const values = [];
    const err = await rejection((async () => {
      for await (const value of stream) {
        values.push(value);
        controller.abort();
      }
    })());
    assert.deepEqual(values, ["Hal"]);
    assert.equal(err.name, "AbortError");
    await closed;
  });

  test("a consumer that stops iterating closes the connection", async (t) => {
    const { srv, closed } = await stuckModel(t);
    const stream = await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x"));
    for await (const value of stream) {
      assert.equal(value, "Hal");
      break;
    }
    await closed;
  });

  test("a signal aborted before the call sends nothing", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, completionStream(["x"])));
    const controller = new AbortController();
    controller.abort();
    const err = await rejection(
      openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("x", { signal: controller.signal })),
    );
    assert.equal(err.name, "AbortError");
    assert.equal(srv.requests.length, 0);
  });
});

describe("extraBody", () => {
  test("its fields are merged into every request body, streamed or not, and win over temperature", async (t) => {
    const srv = await startServer(t, (r, res) => {
      if (r.json.stream) return writePieces(res, completionStream(["Hallo"]));
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ choices: [{ message: { content: "Hallo" }, finish_reason: "stop" }] }));
    });
    const extraBody = { reasoning_effort: "low", think: false, temperature: 0.3, options: { num_ctx: 8192 } };
    for (const stream of [false, true]) {
      const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream, extraBody });
      const reply = await provider(singleRequest("Hello"));
      assert.equal(stream ? textOf(await collect(reply)) : reply, "Hallo");
      const body = srv.requests.at(-1).json;
      assert.equal(body.reasoning_effort, "low");
      assert.equal(body.think, false);
      assert.equal(body.temperature, 0.3);
      assert.deepEqual(body.options, { num_ctx: 8192 });
      assert.equal(body.model, "m");
      assert.equal(body.messages.at(-1).content, "Hello");
    }
  });

  test("it is copied when the provider is made: later changes to the object do not leak into requests", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, completionStream(["Hallo"])));
    const extraBody = { reasoning_effort: "low" };
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true, extraBody });
    extraBody.reasoning_effort = "high";
    await collect(await provider(singleRequest("Hello")));
    assert.equal(srv.requests[0].json.reasoning_effort, "low");
  });

  test("a value that is not an object, or that sets a field the provider owns, is invalid_options naming extraBody", () => {
    const base = { baseUrl: "http://127.0.0.1:9/v1", model: "m" };
    const cases = [
      ["low", /extraBody must be an object of request body fields \(got "low"\)/],
      [["think"], /extraBody must be an object .*\(got an array\)/],
      [42, /\(got 42\)/],
      [{ messages: [] }, /extraBody must not set "messages"/],
      [{ stream: false }, /extraBody must not set "stream"/],
      [{ stream_options: {} }, /extraBody must not set "stream_options"/],
      [{ model: "other" }, /extraBody must not set "model"/],
      [{ n: 1n }, /extraBody must be serialisable as JSON/],
    ];
    for (const [extraBody, message] of cases) {
      assert.throws(
        () => openAIProvider({ ...base, extraBody }),
        (err) => err instanceof PacerError && err.code === "invalid_options" && err.option === "extraBody" && message.test(err.message),
        `extraBody ${String(extraBody)}`,
      );
    }
    assert.equal(typeof openAIProvider({ ...base, extraBody: null }), "function", "null counts as none");
  });

  test("stream must be a boolean, and cannot be combined with structuredOutput", () => {
    const base = { baseUrl: "http://127.0.0.1:9/v1", model: "m" };
    assert.throws(
      () => openAIProvider({ ...base, stream: "yes" }),
      (err) => err instanceof PacerError && err.code === "invalid_options" && err.option === "stream" && /stream must be a boolean \(got "yes"\)/.test(err.message),
    );
    assert.throws(
      () => openAIProvider({ ...base, stream: true, structuredOutput: true }),
      (err) => err instanceof PacerError && err.option === "stream" && /cannot be combined with structuredOutput/.test(err.message),
    );
  });

  test("without stream, requests carry neither stream nor stream_options", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ choices: [{ message: { content: "Hallo" } }] }));
    });
    await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })({ ...requestFields(), ...singleRequest("Hello") });
    assert.equal(srv.requests[0].json.stream, undefined);
    assert.equal(srv.requests[0].json.stream_options, undefined);
  });
});

describe("driven by BatchPacer", () => {
  const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "openai" });
  const translated = (text) => `[de] ${text}`;
  const TEXTS = ["The first paragraph of the page.", "A second paragraph, a little longer than the first.", "And the third one."];

  /** The `[open, text, close]` segments of a marked batch as the user message holds it. */
  function markedSegments(userText) {
    return userText.split("\n").map((line) => {
      const match = /^(<[^>]+>)([\s\S]*)(<\/[^>]+>)$/.exec(line);
      assert.ok(match, `a marked segment: ${line}`);
      return match.slice(1);
    });
  }

  /** The deltas of a faithful answer to `segments`, one segment each. */
  const faithfulDeltas = (segments) =>
    segments.map(([open, text, close]) => sse(deltaChunk({ content: `${open}${translated(text)}${close}\n` }))).join("");

  /** The event stream of a faithful answer to `record` (batch or single), one segment a delta. */
  function faithfulStream(record) {
    const user = record.json.messages.at(-1).content;
    if (!/^<[^>]+>/.test(user)) return completionStream([translated(user)], USAGE);
    return completionStream(markedSegments(user).map(([open, text, close]) => `${open}${translated(text)}${close}\n`), USAGE);
  }

  test("paragraphs resolve while the stream is still running, and its usage is counted", { timeout: 20_000 }, async (t) => {
    await init();
    let release;
    const released = new Promise((resolve) => (release = resolve));
    const order = [];
    const srv = await startServer(t, (r, res) => {
      const segments = markedSegments(r.json.messages.at(-1).content);
      const [open3, text3, close3] = segments[2];
      // Two segments and the opening marker of the last, then a pause until the test has
      // seen the first paragraph resolve; only then the last paragraph's text.
      const head =
        sse(deltaChunk({ role: "assistant", content: "" })) +
        faithfulDeltas(segments.slice(0, 2)) +
        sse(deltaChunk({ content: open3 }));
      const tail =
        sse(deltaChunk({ content: `${translated(text3)}${close3}` })) +
        sse(deltaChunk({}, { finish_reason: "stop" })) +
        sse({ id: "c", object: "chat.completion.chunk", choices: [], usage: USAGE }) +
        sse("[DONE]");
      writePieces(res, head + tail, {
        cuts: [Buffer.byteLength(head)],
        beforePiece: async (index) => {
          if (index !== 1) return;
          await released;
          order.push("the server writes the last paragraph");
        },
      });
    });
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true }), { maxItemsPerBatch: 3 });
    t.after(() => pacer.dispose());
    const results = TEXTS.map((text) => pacer.translate(item(text)));
    assert.equal(await results[0], translated(TEXTS[0]));
    order.push("the first paragraph resolves");
    release();
    assert.deepEqual(await Promise.all(results), TEXTS.map(translated));
    assert.deepEqual(order, ["the first paragraph resolves", "the server writes the last paragraph"]);
    assert.equal(srv.requests.length, 1, "one streamed call for the batch");
    const stats = pacer.stats();
    assert.equal(stats.inputTokens, 42);
    assert.equal(stats.outputTokens, 17);
    assert.equal(stats.streamedCalls, 1);
    assert.ok(stats.earlyResolved >= 1, `earlyResolved ${stats.earlyResolved}`);
  });

  /**
   * Translates TEXTS through a pacer whose server answers the first call with the first
   * two segments, then the start of the third and `ending` (the first piece written
   * apart), and later calls faithfully. Returns the pacer's stats, the number of calls
   * and the user message of the second call.
   */
  async function afterBrokenFirstAnswer(t, ending) {
    const srv = await startServer(t, (r, res) => {
      if (srv.requests.length > 1) return writePieces(res, faithfulStream(r));
      const segments = markedSegments(r.json.messages.at(-1).content);
      const proven = faithfulDeltas(segments.slice(0, 2));
      writePieces(res, proven + ending(segments[2][0]), { cuts: [Buffer.byteLength(proven)] });
    });
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true }), { maxItemsPerBatch: 3, baseRetryDelayMs: 0 });
    t.after(() => pacer.dispose());
    assert.deepEqual(await Promise.all(TEXTS.map((text) => pacer.translate(item(text)))), TEXTS.map(translated));
    return { stats: pacer.stats(), calls: srv.requests.length, resent: srv.requests[1]?.json.messages.at(-1).content };
  }

  test("an error inside the stream keeps what was proven and sends only the rest again", { timeout: 20_000 }, async (t) => {
    await init();
    const { calls, resent } = await afterBrokenFirstAnswer(
      t,
      (open) =>
        sse(deltaChunk({ content: `${open}[de] And` })) +
        `event: error\ndata: ${JSON.stringify({ error: { message: "upstream unavailable", code: 503 } })}\n\n`,
    );
    assert.equal(calls, 2, "the stream's failure is retried once");
    assert.ok(resent.includes(TEXTS[2]), "the unfinished paragraph is sent again");
    assert.ok(!resent.includes(TEXTS[0]), "the proven first paragraph is not");
  });

  test('finish_reason "length": the finished segments resolve, the cut one is sent again', { timeout: 20_000 }, async (t) => {
    await init();
    const { calls, resent, stats } = await afterBrokenFirstAnswer(
      t,
      (open) => sse(deltaChunk({ content: `${open}[de] And th` }, { finish_reason: "length" })) + sse("[DONE]"),
    );
    assert.equal(calls, 2);
    assert.ok(resent.includes(TEXTS[2]) && !resent.includes(TEXTS[0]));
    assert.equal(stats.countMismatches, 1);
  });
});
