// Tests of openAIProvider against a real HTTP server on 127.0.0.1: the markers-layout
// prompt, structured output, usage and rate-limit headers in replies, and the shape of
// its errors (Retry-After forms, Gemini's retryDelay, billing and per-day quotas, wrong
// settings). Requests are built by hand in the shape the pacer hands to providers.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { openAIProvider } from "batch-pacer";

import { requestFields, startServer } from "./chat-server.mjs";

function sendJson(res, status, value, headers = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(typeof value === "string" ? value : JSON.stringify(value));
}

function completion(content, extra = {}) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    ...extra,
  };
}

/** Markers of the tag-like form the pacer uses, on purpose not spelling "<s1>" exactly. */
const pair = (id) => [`<t${id}>`, `</t${id}>`];

/**
 * A batch request in the markers layout, built by hand. The instructions are a stand-in
 * paragraph with a unique word, so that a test can find it in the prompt.
 */
function markedRequest(texts, overrides = {}) {
  const ids = texts.map((_, i) => String(i + 1));
  const markers = ids.map(pair);
  return {
    texts,
    ids,
    markers,
    text: texts.map((x, i) => `${markers[i][0]}${x}${markers[i][1]}`).join("\n"),
    instructions:
      "Answer each segment between its own markers (zebracorn rule): keep every marker as it is and write nothing outside them.",
    isBatch: true,
    ...requestFields(),
    ...overrides,
  };
}

function singleRequest(text, overrides = {}) {
  return {
    texts: [text],
    ids: ["1"],
    text,
    instructions: "",
    isBatch: false,
    ...requestFields(),
    ...overrides,
  };
}

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected the promise to reject");
}

/** Answers every request with `status`, `body` and `headers`; returns the provider's error. */
async function errorFor(t, status, body, headers = {}, options = {}) {
  const srv = await startServer(t, (r, res) => sendJson(res, status, body, headers));
  const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", ...options });
  const err = await rejection(provider(singleRequest("Hello")));
  assert.ok(err instanceof Error, "an Error");
  return err;
}

/** Gemini's 429 body: RESOURCE_EXHAUSTED with a QuotaFailure and a RetryInfo. */
function geminiBody(quotaId, retryDelay) {
  return {
    error: {
      code: 429,
      message:
        "You exceeded your current quota, please check your plan and billing details. " +
        "* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 20",
      status: "RESOURCE_EXHAUSTED",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [
            {
              quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
              quotaId,
              quotaDimensions: { location: "global", model: "gemini-2.0-flash" },
              quotaValue: "20",
            },
          ],
        },
        { "@type": "type.googleapis.com/google.rpc.Help", links: [{ description: "Learn more", url: "https://ai.google.dev/" }] },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay },
      ],
    },
  };
}

describe("the markers layout prompt", () => {
  test("the system message ends with request.instructions and the user message is request.text", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("<t1>Eins</t1>\n<t2>Zwei</t2>")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const request = markedRequest(["One", "Two"]);

    const reply = await provider(request);
    assert.equal(reply, "<t1>Eins</t1>\n<t2>Zwei</t2>", "the marked reply is returned as it came");

    const { json } = srv.requests[0];
    assert.equal(json.response_format, undefined, "no schema without structuredOutput");
    const [system, user] = json.messages;
    assert.equal(user.content, request.text);
    assert.ok(system.content.endsWith(`\n\n${request.instructions}`), system.content);
    assert.match(system.content, /^You are a professional translator\. Translate the user's text from en to de\./);
    assert.doesNotMatch(system.content, /separator/i, "no separator rules in the markers layout");
  });

  test("a custom systemPrompt and a context keep the instructions, the context last", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", systemPrompt: "Render {sourceLang} as {targetLang}." });
    await provider(markedRequest(["a", "b", "c"], { context: "A recipe site" }));
    const system = srv.requests[0].json.messages[0].content;
    assert.match(system, /^Render en as de\./);
    const rule = system.indexOf("zebracorn rule");
    const context = system.indexOf("<context>\nA recipe site\n</context>");
    assert.ok(rule > 0 && context > rule, system);
  });

  test("a marked batch without instructions still gets rules naming its markers", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const request = markedRequest(["a", "b"], { instructions: "" });
    await provider(request);
    const [system, user] = srv.requests[0].json.messages;
    assert.match(system.content, /2 segments, each between its own pair of markers \(the first between <t1> and <\/t1>\)/);
    assert.equal(user.content, "<t1>a</t1>\n<t2>b</t2>");
  });

  test("a single request carries no instructions and no segment rules", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    assert.equal(await provider(singleRequest("Hello")), "Hallo");
    const { json } = srv.requests[0];
    assert.equal(json.response_format, undefined, "structured output is for batches only");
    assert.doesNotMatch(json.messages[0].content, /segment|marker|JSON/i);
    assert.equal(json.messages[1].content, "Hello");
  });
});

describe("structuredOutput", () => {
  test("a batch sends a strict schema with one required string per id and returns the object", async (t) => {
    const answer = { 1: "Eins", 2: "Zwei", 3: "Drei" };
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion(JSON.stringify(answer))));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    const request = markedRequest(["One", "Two", "Three"]);

    assert.deepEqual(await provider(request), answer);

    const { json } = srv.requests[0];
    assert.deepEqual(json.response_format, {
      type: "json_schema",
      json_schema: {
        name: "translations",
        strict: true,
        schema: {
          type: "object",
          properties: { 1: { type: "string" }, 2: { type: "string" }, 3: { type: "string" } },
          required: ["1", "2", "3"],
          additionalProperties: false,
        },
      },
    });
    const [system, user] = json.messages;
    assert.equal(user.content, request.text, "the marked text is what the model reads");
    // The marked-string instructions would contradict the schema: they are replaced by
    // rules that tie each id to its pair of markers.
    assert.doesNotMatch(system.content, /zebracorn/);
    assert.match(system.content, /"1" for the segment between <t1> and <\/t1>; "2" for the segment between <t2> and <\/t2>; "3"/);
    assert.match(system.content, /JSON object/);
  });

  test("ids that are not 1..n are keyed as given", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion('{"b7":"X","a2":"Y"}')));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    const request = markedRequest(["x", "y"], { ids: ["b7", "a2"], markers: [pair("b7"), pair("a2")] });
    request.text = "<tb7>x</tb7>\n<ta2>y</ta2>";
    assert.deepEqual(await provider(request), { b7: "X", a2: "Y" });
    const { schema } = srv.requests[0].json.response_format.json_schema;
    assert.deepEqual(schema.required, ["b7", "a2"]);
    assert.deepEqual(Object.keys(schema.properties), ["b7", "a2"]);
  });

  test("a reply that is not a JSON object is returned as the raw string", async (t) => {
    const replies = ["<t1>Eins</t1>\n<t2>Zwei</t2>", '["Eins","Zwei"]', "{ broken json", "null"];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion(replies[i++])));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    for (const expected of replies) {
      assert.equal(await provider(markedRequest(["One", "Two"])), expected);
    }
  });

  test("a JSON object in a code fence, or with markers in its values, is handed on as the model wrote it", async (t) => {
    // The pacer reads both for every provider (docs/guides/proof.md, "What a reply may be"): the provider does not.
    const fenced = '```json\n{"1": "<t1>Eins</t1>", "2": "Zwei"}\n```';
    const marked = '{"1": "<t1>Eins</t1>", "2": " Zwei "}';
    const replies = [fenced, marked];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion(replies[i++])));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    assert.equal(await provider(markedRequest(["One", "Two"])), fenced);
    assert.deepEqual(await provider(markedRequest(["One", "Two"])), { 1: "<t1>Eins</t1>", 2: " Zwei " });
  });

  test("in the separator layout the user message is a JSON object of id to text", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion('{"1":"A","2":"B"}')));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    const texts = ["first\nline", 'with "quotes"'];
    const request = {
      ...markedRequest(texts),
      markers: undefined,
      instructions: "",
      separator: "\n\n%%\n\n",
      text: texts.join("\n\n%%\n\n"),
    };
    assert.deepEqual(await provider(request), { 1: "A", 2: "B" });
    const [system, user] = srv.requests[0].json.messages;
    assert.deepEqual(JSON.parse(user.content), { 1: texts[0], 2: texts[1] });
    assert.doesNotMatch(system.content, /%%/);
    assert.equal(srv.requests[0].json.response_format.json_schema.schema.required.length, 2);
  });

  test("with usage the object comes as translations beside it", async (t) => {
    const usage = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 };
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion('{"1":"A","2":"B"}', { usage })));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    assert.deepEqual(await provider(markedRequest(["a", "b"])), {
      translations: { 1: "A", 2: "B" },
      usage: { inputTokens: 120, outputTokens: 30 },
    });
  });

  test("a refusal instead of content fails the call and says why", async (t) => {
    const body = {
      choices: [{ index: 0, message: { role: "assistant", content: null, refusal: "I cannot help with that." }, finish_reason: "stop" }],
    };
    const srv = await startServer(t, (r, res) => sendJson(res, 200, body));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true });
    const err = await rejection(provider(markedRequest(["a", "b"])));
    assert.equal(err.status, undefined);
    assert.match(err.message, /I cannot help with that\./);
  });
});

describe("usage and limits in replies", () => {
  test("usage becomes inputTokens and outputTokens", async (t) => {
    const usage = { prompt_tokens: 57, completion_tokens: 17, total_tokens: 74 };
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo", { usage })));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    assert.deepEqual(await provider(singleRequest("Hello")), {
      translations: "Hallo",
      usage: { inputTokens: 57, outputTokens: 17 },
    });
  });

  test("usage fields that are not counts are left out, and no usage at all is no usage", async (t) => {
    const bodies = [
      completion("A", { usage: { prompt_tokens: -1, completion_tokens: 4 } }),
      completion("B", { usage: { prompt_tokens: "9", completion_tokens: null } }),
      completion("C", { usage: null }),
    ];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 200, bodies[i++]));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    assert.deepEqual(await provider(singleRequest("x")), { translations: "A", usage: { outputTokens: 4 } });
    assert.equal(await provider(singleRequest("x")), "B");
    assert.equal(await provider(singleRequest("x")), "C");
  });

  test("the six x-ratelimit-* headers become limits, the whole windows (-limit-) included", async (t) => {
    const headers = {
      "x-ratelimit-limit-requests": "30",
      "x-ratelimit-remaining-requests": "29",
      "x-ratelimit-reset-requests": "2s",
      "x-ratelimit-limit-tokens": "6000",
      "x-ratelimit-remaining-tokens": "5871",
      "x-ratelimit-reset-tokens": "1.29s",
    };
    const usage = { prompt_tokens: 100, completion_tokens: 29 };
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo", { usage }), headers));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    assert.deepEqual(await provider(singleRequest("Hello")), {
      translations: "Hallo",
      usage: { inputTokens: 100, outputTokens: 29 },
      limits: {
        requestsLimit: 30,
        requestsRemaining: 29,
        requestsResetMs: 2000,
        tokensLimit: 6000,
        tokensRemaining: 5871,
        tokensResetMs: 1290,
      },
    });
  });

  // OpenAI's and Groq's reset values (Go's time.Duration strings) and whole seconds.
  const resets = [
    ["6m0s", 360_000],
    ["1.5s", 1500],
    ["20ms", 20],
    ["23h47m12.5s", 85_632_500],
    ["2m59.56s", 179_560],
    ["7", 7000],
    ["0s", 0],
    ["1h", 3_600_000],
    ["1m30s", 90_000],
    ["999us", 1], // rounded up: a wait never ends before the reset
    ["45.8s", 45_800],
  ];
  for (const [value, ms] of resets) {
    test(`a reset of ${JSON.stringify(value)} is ${ms} ms`, async (t) => {
      const srv = await startServer(t, (r, res) =>
        sendJson(res, 200, completion("ok"), { "x-ratelimit-reset-requests": value, "x-ratelimit-reset-tokens": value }),
      );
      const reply = await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(singleRequest("x"));
      assert.deepEqual(reply, { translations: "ok", limits: { requestsResetMs: ms, tokensResetMs: ms } });
    });
  }

  test("unreadable limit headers are left out, the readable ones kept", async (t) => {
    const cases = [
      [{ "x-ratelimit-reset-requests": "-1s", "x-ratelimit-remaining-requests": "4" }, { requestsRemaining: 4 }],
      [{ "x-ratelimit-reset-tokens": "1x", "x-ratelimit-remaining-tokens": "lots" }, undefined],
      [{ "x-ratelimit-reset-tokens": "1m 5s", "x-ratelimit-remaining-requests": "-3" }, undefined],
      [{ "x-ratelimit-reset-requests": "s", "x-ratelimit-remaining-tokens": "0" }, { tokensRemaining: 0 }],
      [{ "x-ratelimit-reset-requests": "", "x-ratelimit-reset-tokens": "1.2.3s" }, undefined],
    ];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok"), cases[i++][0]));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    for (const [headers, limits] of cases) {
      const reply = await provider(singleRequest("x"));
      if (limits === undefined) assert.equal(reply, "ok", JSON.stringify(headers));
      else assert.deepEqual(reply, { translations: "ok", limits }, JSON.stringify(headers));
    }
  });
});

describe("errors", () => {
  test("Retry-After forms: seconds, fractions and dates are read, anything else left out", async (t) => {
    const now = Date.now();
    const cases = [
      ["7", 7000],
      ["0", 0],
      ["1.5", 1500],
      ["1.1", 1100],
      [" 12 ", 12_000],
      ["-5", undefined],
      ["1.2.3", undefined],
      ["1e3", undefined],
      ["+3", undefined],
      ["2024", 2_024_000], // digits are always seconds, never a year
      ["2030-01-01", undefined], // a date, but not in an HTTP-date form
      ["soon", undefined],
      [new Date(now - 60_000).toUTCString(), 0],
    ];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 429, {}, { "Retry-After": cases[i++][0] }));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    for (const [value, ms] of cases) {
      const err = await rejection(provider(singleRequest("x")));
      assert.equal(err.status, 429);
      assert.equal(err.retryAfterMs, ms, `Retry-After ${JSON.stringify(value)}`);
      assert.equal(Object.hasOwn(err, "retryAfterMs"), ms !== undefined);
    }
  });

  test("retry-after-ms is read, fractions rounded up, and wins over Retry-After", async (t) => {
    const err = await errorFor(t, 429, {}, { "retry-after-ms": "20.2", "Retry-After": "5" });
    assert.equal(err.retryAfterMs, 21);
    assert.equal(err.quota, "rate");
  });

  test("Gemini's retryDelay in the error body, plain", async (t) => {
    const body = geminiBody("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "45.8s");
    const err = await errorFor(t, 429, body);
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 45_800);
    assert.equal(err.quota, "rate", "a per-minute quota is a rate limit, whatever the message says of billing");
    assert.match(err.message, /^OpenAI-compatible API answered 429 Too Many Requests: You exceeded your current quota/);
  });

  test("Gemini's retryDelay in the error body wrapped in a JSON array", async (t) => {
    const body = [geminiBody("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "7s")];
    const err = await errorFor(t, 429, body);
    assert.equal(err.retryAfterMs, 7000);
    assert.equal(err.quota, "rate");
    assert.match(err.message, /You exceeded your current quota/, "the message is found inside the array");
  });

  test("a Retry-After header wins over the body's retryDelay", async (t) => {
    const err = await errorFor(t, 429, geminiBody("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "45s"), {
      "Retry-After": "3",
    });
    assert.equal(err.retryAfterMs, 3000);
  });

  test("Gemini's per-day quota is quota daily, plain and wrapped", async (t) => {
    const quotaId = "GenerateRequestsPerDayPerProjectPerModel-FreeTier";
    for (const body of [geminiBody(quotaId, "31s"), [geminiBody(quotaId, "31s")]]) {
      const err = await errorFor(t, 429, body);
      assert.equal(err.status, 429);
      assert.equal(err.quota, "daily");
      assert.equal(err.retryAfterMs, 31_000, "the body's delay is still reported");
      // Facts only: the pacer says what a spent daily quota means, once.
      assert.equal(err.message, `OpenAI-compatible API answered 429 Too Many Requests: ${body.error?.message ?? body[0].error.message}`);
    }
  });

  test("OpenAI's and Groq's 'requests per day' and 'tokens per day' 429s are quota daily", async (t) => {
    const messages = [
      "Rate limit reached for model `llama-3.1-8b-instant` in organization `org_x` service tier `on_demand` on requests per day (RPD): Limit 14400, Used 14400, Requested 1.",
      "Rate limit reached for gpt-4o-mini in organization org-x on tokens per day (TPD): Limit 200000, Used 199990, Requested 300.",
    ];
    for (const message of messages) {
      const err = await errorFor(t, 429, { error: { message, type: "tokens", code: "rate_limit_exceeded" } });
      assert.equal(err.quota, "daily", message);
    }
    const perMinute = await errorFor(t, 429, {
      error: { message: "Rate limit reached on tokens per min (TPM): Limit 6000, Used 5990", code: "rate_limit_exceeded" },
    });
    assert.equal(perMinute.quota, "rate");
  });

  test("insufficient_quota, by code or by type, is quota billing; the message holds the server's words alone", async (t) => {
    const bodies = [
      {
        error: {
          message: "You exceeded your current quota, please check your plan and billing details.",
          type: "insufficient_quota",
          param: null,
          code: "insufficient_quota",
        },
      },
      { error: { message: "Quota exceeded.", type: "insufficient_quota" } },
      { error: { message: "Quota exceeded.", code: "insufficient_quota", type: "requests" } },
    ];
    for (const body of bodies) {
      const err = await errorFor(t, 429, body, { "Retry-After": "20" });
      assert.equal(err.status, 429);
      assert.equal(err.quota, "billing");
      assert.equal(err.message, `OpenAI-compatible API answered 429 Too Many Requests: ${body.error.message}`);
    }
  });

  test("402 is quota billing too", async (t) => {
    const err = await errorFor(t, 402, { error: { message: "Insufficient credits", code: 402 } });
    assert.equal(err.status, 402);
    assert.equal(err.quota, "billing");
    assert.equal(err.message, "OpenAI-compatible API answered 402 Payment Required: Insufficient credits");
  });

  test("a refusal the API says is final is retryable: false; a context-length error is a 413", async (t) => {
    const final = [
      [400, { error: { message: "Your request was rejected as a result of our safety system.", type: "invalid_request_error", code: "content_policy_violation" } }],
      [400, { error: { message: "The response was filtered due to the prompt triggering content management policy.", type: null, code: "content_filter" } }],
      [400, { error: { message: "Invalid value for 'messages[1].role'.", type: "invalid_request_error", code: null } }],
      [500, { error: { message: "The request was refused.", code: "content_filter" } }],
    ];
    for (const [status, body] of final) {
      const err = await errorFor(t, status, body);
      assert.equal(err.status, status);
      assert.equal(err.retryable, false, body.error.message);
    }
    const tooLong = await errorFor(t, 400, {
      error: { message: "This model's maximum context length is 8192 tokens.", type: "invalid_request_error", code: "context_length_exceeded" },
    });
    assert.equal(tooLong.status, 413, "split, not refused");
    assert.equal(tooLong.retryable, undefined);
    for (const [status, body] of [
      [500, { error: { message: "The server had an error.", type: "server_error" } }],
      [429, { error: { message: "Rate limit reached for requests", type: "requests" } }],
      [400, { error: { message: "Bad request" } }],
    ]) {
      const err = await errorFor(t, status, body);
      assert.equal(err.retryable, undefined, `${status}: no claim either way`);
    }
  });

  test("a 429 carries the x-ratelimit-* headers as limits", async (t) => {
    const err = await errorFor(
      t,
      429,
      { error: { message: "Rate limit reached for requests", type: "requests" } },
      {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "39820",
        "x-ratelimit-reset-tokens": "20ms",
        "retry-after-ms": "360000",
      },
    );
    assert.equal(err.quota, "rate");
    assert.equal(err.retryAfterMs, 360_000);
    assert.deepEqual(err.limits, { requestsRemaining: 0, requestsResetMs: 360_000, tokensRemaining: 39820, tokensResetMs: 20 });
  });

  test("401, 403 and 404 carry the status and the server's words, no advice (the pacer writes it)", async (t) => {
    const cases = [
      [401, "OpenAI-compatible API answered 401 Unauthorized: Incorrect API key provided"],
      [403, "OpenAI-compatible API answered 403 Forbidden: Project does not have access"],
      [404, "OpenAI-compatible API answered 404 Not Found: The model `gpt-9` does not exist"],
    ];
    const detail = { 401: "Incorrect API key provided", 403: "Project does not have access", 404: "The model `gpt-9` does not exist" };
    for (const [status, expected] of cases) {
      const err = await errorFor(t, status, { error: { message: detail[status] } });
      assert.equal(err.status, status);
      assert.equal(err.message, expected);
      assert.equal(Object.hasOwn(err, "quota"), false);
    }
    const bare = await errorFor(t, 404, "");
    assert.equal(bare.message, "OpenAI-compatible API answered 404 Not Found");
  });

  test("every HTTP error keeps its status; only 429 and billing carry a quota", async (t) => {
    for (const status of [400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503]) {
      const err = await errorFor(t, status, { error: { message: "nope" } });
      assert.equal(err.status, status);
      assert.equal(err.quota, status === 429 ? "rate" : undefined, `status ${status}`);
    }
  });
});
