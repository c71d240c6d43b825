// Tests of openAIProvider's side of "Models that cannot batch" against a real HTTP server
// on 127.0.0.1: the raised temperature of a batch's retries, the output bound
// (`maxTokens`, `max_tokens`, and `max_completion_tokens` for endpoints that ask for it),
// truncated replies (`finish_reason: "length"`), and the whole windows of the rate
// limits (`x-ratelimit-limit-*`). The provider is called directly with requests built
// in the shape the pacer hands over (`maxOutputTokens` included), so these tests do not
// depend on the core's side of the bound.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { openAIProvider, PacerError } from "batch-pacer";

import { completionStream, deltaChunk, requestFields, singleRequest, sse, startServer, writePieces } from "./chat-server.mjs";
import { rejection } from "./helpers.mjs";

function sendJson(res, status, value, headers = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(typeof value === "string" ? value : JSON.stringify(value));
}

function completion(content, { finish = "stop", usage } = {}) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finish }],
    ...(usage === undefined ? {} : { usage }),
  };
}

/** A batch request in the markers layout, as the pacer builds it. */
function batchRequest(texts, overrides = {}) {
  const ids = texts.map((_, i) => String(i + 1));
  const markers = ids.map((id) => [`<s${id}>`, `</s${id}>`]);
  return {
    texts,
    ids,
    markers,
    text: texts.map((x, i) => `${markers[i][0]}${x}${markers[i][1]}`).join("\n"),
    instructions: "Answer each segment between its own markers.",
    isBatch: true,
    maxOutputTokens: 300,
    ...requestFields(),
    ...overrides,
  };
}

/** Every value of a stream, in order. */
async function collect(stream) {
  const values = [];
  for await (const value of stream) values.push(value);
  return values;
}

/** OpenAI's answer to `max_tokens` for its reasoning and newer models, word for word. */
const MAX_TOKENS_REFUSAL = {
  error: {
    message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
    type: "invalid_request_error",
    param: "max_tokens",
    code: "unsupported_parameter",
  },
};

/** A server that refuses `max_tokens` as OpenAI's newer models do, and answers otherwise. */
function refusingMaxTokens(answer = (r, res) => sendJson(res, 200, completion("Hallo"))) {
  return (r, res) => {
    if (r.json.max_tokens !== undefined) return sendJson(res, 400, MAX_TOKENS_REFUSAL);
    answer(r, res);
  };
}

describe("the temperature of a batch's retries", () => {
  test("a batch's retries go out 0.3 warmer per attempt, at most 1; its first try at the temperature", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("<s1>A</s1>\n<s2>B</s2>")));
    const cases = [
      // [temperature option, attempt, temperature sent]
      [0, 0, 0],
      [0, 1, 0.3],
      [0, 2, 0.6],
      [0, 3, 0.9],
      [0, 4, 1],
      [0, 9, 1],
      [0.5, 0, 0.5],
      [0.5, 1, 0.8],
      [0.5, 2, 1],
      [0.95, 1, 1],
    ];
    for (const [temperature, attempt, sent] of cases) {
      const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", temperature });
      await provider(batchRequest(["one", "two"], { attempt }));
      assert.equal(srv.requests.at(-1).json.temperature, sent, `temperature ${temperature}, attempt ${attempt}`);
    }
  });

  test("a temperature option above 1 is kept on retries: the cap never lowers it", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("<s1>A</s1>\n<s2>B</s2>")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", temperature: 1.3 });
    for (const attempt of [0, 1, 3]) await provider(batchRequest(["one", "two"], { attempt }));
    assert.deepEqual(srv.requests.map((r) => r.json.temperature), [1.3, 1.3, 1.3]);
  });

  test("a single request keeps the temperature on every attempt", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", temperature: 0.2 });
    for (const attempt of [0, 1, 2]) await provider(singleRequest("Hello", { attempt, maxOutputTokens: 40 }));
    assert.deepEqual(srv.requests.map((r) => r.json.temperature), [0.2, 0.2, 0.2]);
  });

  test("a streamed batch's retry is raised too, and extraBody.temperature still wins", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, completionStream(["<s1>A</s1>\n<s2>B</s2>"])));
    await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(batchRequest(["one", "two"], { attempt: 2 })));
    assert.equal(srv.requests.at(-1).json.temperature, 0.6);
    const fixed = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true, extraBody: { temperature: 0.1 } });
    await collect(await fixed(batchRequest(["one", "two"], { attempt: 2 })));
    assert.equal(srv.requests.at(-1).json.temperature, 0.1, "the user's explicit body field");
  });
});

describe("maxTokens and max_tokens", () => {
  test('"auto" (the default) sends the request\'s maxOutputTokens as max_tokens, and none without one', async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    await provider(singleRequest("Hello", { maxOutputTokens: 300 }));
    await provider(batchRequest(["one", "two"], { maxOutputTokens: 96 }));
    await provider(singleRequest("Hello"));
    await provider(singleRequest("Hello", { maxOutputTokens: 0 }));
    assert.deepEqual(
      srv.requests.map((r) => r.json.max_tokens ?? null),
      [300, 96, null, null],
    );
    assert.ok(!("max_tokens" in srv.requests[2].json), "absent, not null, without a bound");
    assert.ok(srv.requests.every((r) => !("max_completion_tokens" in r.json)));

    const explicit = openAIProvider({ baseUrl: srv.baseUrl, model: "m", maxTokens: "auto" });
    await explicit(singleRequest("Hello", { maxOutputTokens: 120 }));
    assert.equal(srv.requests.at(-1).json.max_tokens, 120);
  });

  test("a positive integer is sent as it is, whatever the request's bound; null sends none", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo")));
    const fixed = openAIProvider({ baseUrl: srv.baseUrl, model: "m", maxTokens: 2048 });
    await fixed(singleRequest("Hello", { maxOutputTokens: 300 }));
    await fixed(singleRequest("Hello"));
    assert.deepEqual(srv.requests.map((r) => r.json.max_tokens), [2048, 2048]);

    const none = openAIProvider({ baseUrl: srv.baseUrl, model: "m", maxTokens: null });
    await none(singleRequest("Hello", { maxOutputTokens: 300 }));
    assert.ok(!("max_tokens" in srv.requests.at(-1).json));
    assert.ok(!("max_completion_tokens" in srv.requests.at(-1).json));
  });

  test("extraBody.max_tokens wins over the bound; extraBody.max_completion_tokens alone replaces it", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo")));
    for (const maxTokens of ["auto", 64, null]) {
      const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", maxTokens, extraBody: { max_tokens: 4096 } });
      await provider(singleRequest("Hello", { maxOutputTokens: 300 }));
      assert.equal(srv.requests.at(-1).json.max_tokens, 4096, `maxTokens ${maxTokens}`);
    }
    const newer = openAIProvider({ baseUrl: srv.baseUrl, model: "m", extraBody: { max_completion_tokens: 5000 } });
    await newer(singleRequest("Hello", { maxOutputTokens: 300 }));
    const body = srv.requests.at(-1).json;
    assert.equal(body.max_completion_tokens, 5000);
    assert.ok(!("max_tokens" in body), "not both fields: OpenAI refuses a request that sets both");
  });

  test("maxTokens that is not \"auto\", a positive integer or null is invalid_options naming it and the value", () => {
    const base = { baseUrl: "http://127.0.0.1:9/v1", model: "m" };
    const cases = [
      [0, "0"],
      [-5, "-5"],
      [1.5, "1.5"],
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      ["none", '"none"'],
      ["AUTO", '"AUTO"'],
      ["512", '"512"'],
      [true, "true"],
      [{}, "an object"],
    ];
    for (const [maxTokens, shown] of cases) {
      assert.throws(
        () => openAIProvider({ ...base, maxTokens }),
        (err) => {
          assert.ok(err instanceof PacerError, String(err));
          assert.equal(err.code, "invalid_options");
          assert.equal(err.option, "maxTokens");
          assert.equal(err.message, `maxTokens must be "auto", an integer >= 1 or null (got ${shown})`);
          return true;
        },
        `maxTokens ${shown}`,
      );
    }
    for (const maxTokens of ["auto", 1, 8192, null, undefined]) {
      assert.equal(typeof openAIProvider({ ...base, maxTokens }), "function", `maxTokens ${String(maxTokens)} is valid`);
    }
    assert.throws(() => openAIProvider({ ...base, max_tokens: 10 }), /no option "max_tokens" \(options: .*maxTokens/);
  });
});

describe("endpoints that ask for max_completion_tokens", () => {
  test("a refused max_tokens is sent again at once as max_completion_tokens, and so from then on", async (t) => {
    const srv = await startServer(t, refusingMaxTokens());
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "o4-mini" });
    assert.equal(await provider(singleRequest("Hello", { maxOutputTokens: 300 })), "Hallo");
    assert.equal(srv.requests.length, 2, "the refused request, then the same one with the other field");
    assert.equal(srv.requests[0].json.max_tokens, 300);
    const second = srv.requests[1].json;
    assert.equal(second.max_completion_tokens, 300, "the same value");
    assert.ok(!("max_tokens" in second));
    const { max_tokens: _a, ...first } = srv.requests[0].json;
    const { max_completion_tokens: _b, ...again } = second;
    assert.deepEqual(again, first, "nothing else changed");

    // Later calls of this provider send the newer field from the start, their own bound.
    assert.equal(await provider(singleRequest("Hello", { maxOutputTokens: 80 })), "Hallo");
    assert.equal(srv.requests.length, 3);
    assert.equal(srv.requests[2].json.max_completion_tokens, 80);
    assert.ok(!("max_tokens" in srv.requests[2].json));

    // Another provider (another endpoint or model, perhaps) asks with max_tokens first.
    const other = openAIProvider({ baseUrl: srv.baseUrl, model: "o4-mini" });
    assert.equal(await other(singleRequest("Hello", { maxOutputTokens: 50 })), "Hallo");
    assert.deepEqual(srv.requests.slice(3).map((r) => Object.keys(r.json).filter((k) => k.startsWith("max_"))), [
      ["max_tokens"],
      ["max_completion_tokens"],
    ]);
  });

  test("an integer maxTokens and extraBody.max_tokens move to max_completion_tokens the same way", async (t) => {
    const srv = await startServer(t, refusingMaxTokens());
    const fixed = openAIProvider({ baseUrl: srv.baseUrl, model: "m", maxTokens: 1000 });
    assert.equal(await fixed(singleRequest("Hello", { maxOutputTokens: 300 })), "Hallo");
    assert.equal(srv.requests.at(-1).json.max_completion_tokens, 1000);
    const extra = openAIProvider({ baseUrl: srv.baseUrl, model: "m", extraBody: { max_tokens: 777 } });
    assert.equal(await extra(singleRequest("Hello", { maxOutputTokens: 300 })), "Hallo");
    assert.equal(srv.requests.at(-1).json.max_completion_tokens, 777);
    assert.equal(srv.requests.length, 4);
  });

  test("streamed: the refusal is handled before stream_options, which stays asked for", async (t) => {
    const usage = { prompt_tokens: 9, completion_tokens: 3 };
    const srv = await startServer(t, refusingMaxTokens((r, res) => writePieces(res, completionStream(["Hallo"], usage))));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
    const values = await collect(await provider(singleRequest("Hello", { maxOutputTokens: 300 })));
    assert.deepEqual(values, ["Hallo", { usage: { inputTokens: 9, outputTokens: 3 } }]);
    assert.equal(srv.requests.length, 2);
    assert.deepEqual(srv.requests[1].json.stream_options, { include_usage: true }, "a max_tokens refusal is no stream_options refusal");
    assert.equal(srv.requests[1].json.max_completion_tokens, 300);

    await collect(await provider(singleRequest("Hello", { maxOutputTokens: 300 })));
    assert.equal(srv.requests.length, 3, "remembered for streams too");
    assert.equal(srv.requests[2].json.max_completion_tokens, 300);
    assert.deepEqual(srv.requests[2].json.stream_options, { include_usage: true });
  });

  test("streamed: an endpoint that refuses both fields gets each dropped once, and both are remembered", async (t) => {
    const srv = await startServer(t, (r, res) => {
      if (r.json.max_tokens !== undefined) return sendJson(res, 400, MAX_TOKENS_REFUSAL);
      if (r.json.stream_options !== undefined) return sendJson(res, 400, { error: { message: "Unrecognized request argument: stream_options" } });
      writePieces(res, completionStream(["Hallo"]));
    });
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true });
    assert.deepEqual(await collect(await provider(singleRequest("Hello", { maxOutputTokens: 300 }))), ["Hallo"]);
    assert.equal(srv.requests.length, 3);
    await collect(await provider(singleRequest("Hello", { maxOutputTokens: 300 })));
    assert.equal(srv.requests.length, 4, "the next call goes through at once");
    const last = srv.requests[3].json;
    assert.equal(last.max_completion_tokens, 300);
    assert.ok(!("max_tokens" in last) && !("stream_options" in last));
  });

  test("a 400 that does not ask for max_completion_tokens is the call's error: nothing is renamed or remembered", async (t) => {
    const srv = await startServer(t, (r, res) =>
      sendJson(res, 400, { error: { message: "max_tokens is too large: 999999. This model supports at most 4096 tokens.", type: "invalid_request_error" } }),
    );
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    for (let call = 1; call <= 2; call++) {
      const err = await rejection(provider(singleRequest("Hello", { maxOutputTokens: 999999 })));
      assert.equal(err.status, 400);
      assert.match(err.message, /max_tokens is too large/);
      assert.equal(srv.requests.length, call, "one request per call");
      assert.equal(srv.requests.at(-1).json.max_tokens, 999999);
    }
  });

  test("when the request with max_completion_tokens fails too, its error is the call's; the field is still remembered", async (t) => {
    const srv = await startServer(t, (r, res) => {
      if (r.json.max_tokens !== undefined) return sendJson(res, 400, MAX_TOKENS_REFUSAL);
      sendJson(res, 429, { error: { message: "Rate limit reached", type: "requests" } }, { "retry-after": "2" });
    });
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const err = await rejection(provider(singleRequest("Hello", { maxOutputTokens: 300 })));
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 2000);
    assert.equal(srv.requests.length, 2);
    // The refusal said which field to send: the retry after the 429 costs one request, not two.
    await rejection(provider(singleRequest("Hello", { maxOutputTokens: 300 })));
    assert.equal(srv.requests.length, 3);
    assert.equal(srv.requests[2].json.max_completion_tokens, 300);
  });
});

describe('finish_reason "length"', () => {
  test("a whole reply comes back with truncated: true, with its usage and limits", async (t) => {
    const usage = { prompt_tokens: 50, completion_tokens: 300 };
    const headers = { "x-ratelimit-remaining-requests": "9", "x-ratelimit-limit-requests": "10" };
    const srv = await startServer(t, (r, res) =>
      sendJson(res, 200, completion("<s1>Eins</s1>\n<s2>Zw", { finish: "length", usage }), headers),
    );
    const reply = await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(batchRequest(["One", "Two"]));
    assert.deepEqual(reply, {
      translations: "<s1>Eins</s1>\n<s2>Zw",
      usage: { inputTokens: 50, outputTokens: 300 },
      limits: { requestsLimit: 10, requestsRemaining: 9 },
      truncated: true,
    });
  });

  test("without usage or limits the reply is still the object form, so that truncated is said", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hal", { finish: "length" })));
    const reply = await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(singleRequest("Hello", { maxOutputTokens: 1 }));
    assert.deepEqual(reply, { translations: "Hal", truncated: true });
  });

  test("a reply that ended by itself carries no truncated field", async (t) => {
    const usage = { prompt_tokens: 5, completion_tokens: 2 };
    const answers = [completion("Hallo"), completion("Hallo", { usage }), completion("Hallo", { finish: "content_filter" })];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 200, answers[i++]));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    assert.equal(await provider(singleRequest("Hello")), "Hallo");
    assert.deepEqual(await provider(singleRequest("Hello")), { translations: "Hallo", usage: { inputTokens: 5, outputTokens: 2 } });
    assert.equal(await provider(singleRequest("Hello")), "Hallo");
  });

  test("a streamed reply yields { truncated: true } after its last text, before the usage", async (t) => {
    const wire =
      sse(deltaChunk({ role: "assistant", content: "" })) +
      sse(deltaChunk({ content: "<s1>Eins</s1>\n<s2>Zw" })) +
      sse(deltaChunk({ content: "ei" }, { finish_reason: "length" })) +
      sse(deltaChunk({ content: "</s2>" })) +
      sse({ id: "c", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 7, completion_tokens: 4 } }) +
      sse("[DONE]");
    const srv = await startServer(t, (r, res) => {
      // One piece per event, so that each event is its own network read.
      const cuts = [];
      let at = 0;
      for (const event of wire.split(/(?<=\n\n)/)) cuts.push((at += Buffer.byteLength(event)));
      writePieces(res, wire, { cuts: cuts.slice(0, -1) });
    });
    const values = await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(batchRequest(["One", "Two"])));
    const at = values.findIndex((v) => v !== null && typeof v === "object" && v.truncated === true);
    assert.ok(at > 0, `a truncated value: ${JSON.stringify(values)}`);
    assert.deepEqual(values[at], { truncated: true });
    assert.equal(values.slice(0, at).join(""), "<s1>Eins</s1>\n<s2>Zwei", "every text before it, nothing after the end");
    assert.deepEqual(values.slice(at + 1), [{ usage: { inputTokens: 7, outputTokens: 4 } }]);
    assert.equal(values.filter((v) => v?.truncated === true).length, 1);
  });

  test("a streamed reply that ends with stop yields no truncated value", async (t) => {
    const srv = await startServer(t, (r, res) => writePieces(res, completionStream(["<s1>Eins</s1>", "\n<s2>Zwei</s2>"])));
    const values = await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(batchRequest(["One", "Two"])));
    assert.ok(values.every((v) => typeof v === "string"), JSON.stringify(values));
    assert.equal(values.join(""), "<s1>Eins</s1>\n<s2>Zwei</s2>");
  });
});

describe("the whole windows of the rate limits", () => {
  test("x-ratelimit-limit-requests and -tokens are read on replies, streams and 429s", async (t) => {
    const headers = {
      "x-ratelimit-limit-requests": "500",
      "x-ratelimit-limit-tokens": "200000",
      "x-ratelimit-remaining-tokens": "199000",
    };
    const limits = { requestsLimit: 500, tokensLimit: 200000, tokensRemaining: 199000 };
    let status = 200;
    const srv = await startServer(t, (r, res) => {
      if (status === 429) return sendJson(res, 429, { error: { message: "slow down" } }, headers);
      if (r.json.stream) return writePieces(res, completionStream(["Hallo"]), { headers });
      sendJson(res, 200, completion("Hallo"), headers);
    });
    assert.deepEqual(await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(singleRequest("Hello")), { translations: "Hallo", limits });
    const values = await collect(await openAIProvider({ baseUrl: srv.baseUrl, model: "m", stream: true })(singleRequest("Hello")));
    assert.deepEqual(values.at(-1), { limits });
    status = 429;
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(singleRequest("Hello")));
    assert.equal(err.status, 429);
    assert.deepEqual(err.limits, limits);
  });

  test("an unreadable whole window is left out, the readable fields kept", async (t) => {
    const headers = { "x-ratelimit-limit-requests": "lots", "x-ratelimit-limit-tokens": "-1", "x-ratelimit-remaining-requests": "3" };
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo"), headers));
    assert.deepEqual(await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(singleRequest("Hello")), {
      translations: "Hallo",
      limits: { requestsRemaining: 3 },
    });
  });
});
