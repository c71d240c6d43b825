// Tests of the OpenAI-compatible provider against a real HTTP server on 127.0.0.1, as
// exported by the installed package. Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";

import FakeTimers from "@sinonjs/fake-timers";

import { requestFields, startServer } from "./chat-server.mjs";
import init, { openAIProvider, BatchPacer, PacerError } from "batch-pacer";

const CANARY = "sk-canary-DO-NOT-LEAK-123";
const SEP = "\n\n%%\n\n";

function sendJson(res, status, value, headers = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(value));
}

function completion(content, extra = {}) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", ...extra }],
  };
}

/** A provider request as the pacer builds it. */
function makeRequest(overrides = {}) {
  const texts = overrides.texts ?? ["Hello world"];
  const separator = overrides.separator ?? SEP;
  return {
    texts,
    text: texts.join(separator),
    separator,
    isBatch: texts.length > 1,
    ...requestFields(),
    ...overrides,
  };
}

/** Every text an error exposes: message, stack, String(), own properties, cause chain. */
function exposedTexts(err) {
  const out = [inspect(err, { depth: 10, showHidden: true })];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 10; e = e.cause, depth++) {
    out.push(String(e));
    if (typeof e === "object") {
      out.push(String(e.message), String(e.stack));
      const props = {};
      for (const name of Object.getOwnPropertyNames(e)) props[name] = String(e[name]);
      out.push(JSON.stringify(props));
    }
  }
  return out;
}

function assertNoCanary(err, secret = CANARY) {
  assert.ok(err instanceof Error, `expected an Error, got ${inspect(err)}`);
  for (const text of exposedTexts(err)) {
    assert.ok(!text.includes(secret), `the API key leaked into the error: ${text}`);
  }
}

/** Runs `promise`, expects it to reject, returns the rejection. */
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected the promise to reject");
}

describe("request shape", () => {
  test("POSTs JSON with model, messages and temperature 0 to /chat/completions", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("Hallo Welt")));
    const provider = openAIProvider({ baseUrl: `${srv.baseUrl}/`, apiKey: CANARY, model: "gpt-test" });

    const result = await provider(makeRequest({ texts: ["Hello world"] }));
    assert.equal(result, "Hallo Welt");

    assert.equal(srv.requests.length, 1);
    const [r] = srv.requests;
    assert.equal(r.method, "POST");
    assert.equal(r.url, "/v1/chat/completions", "trailing slash of baseUrl is not doubled");
    assert.equal(r.headers["content-type"], "application/json");
    assert.equal(r.headers.authorization, `Bearer ${CANARY}`);
    assert.deepEqual(Object.keys(r.json).sort(), ["messages", "model", "temperature"]);
    assert.equal(r.json.model, "gpt-test");
    assert.equal(r.json.temperature, 0);
    assert.equal(r.json.messages.length, 2);
    assert.deepEqual(
      r.json.messages.map((m) => m.role),
      ["system", "user"],
    );
    assert.equal(r.json.messages[1].content, "Hello world");
    const system = r.json.messages[0].content;
    assert.match(system, /\ben\b/);
    assert.match(system, /\bde\b/);
    assert.match(system, /only the translation/i);
    assert.doesNotMatch(system, /%%/, "a single request names no separator");
    assert.doesNotMatch(system, /segment/i, "a single request mentions no segments");
  });

  test("a batch prompt names the exact separator line and the segment count", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("A\n\n%%%\n\nB\n\n%%%\n\nC")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" });
    const texts = ["One", "Two has 50%% off", "Three"];
    const request = makeRequest({ texts, separator: "\n\n%%%\n\n" });

    const result = await provider(request);
    assert.equal(result, "A\n\n%%%\n\nB\n\n%%%\n\nC", "the batch reply is returned unsplit");

    const { messages } = srv.requests[0].json;
    assert.equal(messages[1].content, "One\n\n%%%\n\nTwo has 50%% off\n\n%%%\n\nThree");
    const system = messages[0].content;
    assert.match(system, /\b3 segments\b/);
    assert.match(system, /exactly 3 translated segments/);
    assert.match(system, /line containing only %%%(?!%)/);
    assert.match(system, /same order/);
    assert.match(system, /number/i);
    assert.match(system, /commentary/i);
  });

  test("the context is sent as background information, and only when non-empty", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });

    await provider(makeRequest({ context: "Page title: Rust release notes" }));
    await provider(makeRequest({ context: "" }));

    const withContext = srv.requests[0].json.messages[0].content;
    assert.match(withContext, /Page title: Rust release notes/);
    assert.match(withContext, /do not translate it/i);
    assert.equal(srv.requests[0].json.messages[1].content, "Hello world", "context is not in the user text");
    const without = srv.requests[1].json.messages[0].content;
    assert.doesNotMatch(without, /context/i);
  });

  test("temperature, systemPrompt and extraHeaders are applied", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    const provider = openAIProvider({
      baseUrl: srv.baseUrl,
      apiKey: CANARY,
      model: "m",
      temperature: 0.3,
      systemPrompt: "Translate {sourceLang} into {targetLang} like a pirate.",
      // The provider's own Content-Type and Authorization win over these.
      extraHeaders: { "X-Title": "demo", "content-type": "text/plain", authorization: "Bearer other" },
    });
    await provider(makeRequest({ texts: ["a", "b"] }));

    const [r] = srv.requests;
    assert.equal(r.json.temperature, 0.3);
    assert.equal(r.headers["x-title"], "demo");
    assert.equal(r.headers["content-type"], "application/json");
    assert.equal(r.headers.authorization, `Bearer ${CANARY}`);
    const system = r.json.messages[0].content;
    assert.match(system, /^Translate en into de like a pirate\./);
    assert.match(system, /exactly 2 translated segments/, "batch rules still follow a custom prompt");
  });

  test("no Authorization header when the apiKey is empty or omitted", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    await openAIProvider({ baseUrl: srv.baseUrl, apiKey: "", model: "llama3" })(makeRequest());
    await openAIProvider({ baseUrl: srv.baseUrl, model: "llama3" })(makeRequest());
    await openAIProvider({ baseUrl: srv.baseUrl, apiKey: "  ", model: "llama3" })(makeRequest());
    assert.equal(srv.requests.length, 3);
    for (const r of srv.requests) assert.equal(r.headers.authorization, undefined);
  });

  test("a key pasted with a trailing newline is sent trimmed", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    await openAIProvider({ baseUrl: srv.baseUrl, apiKey: `${CANARY}\n`, model: "m" })(makeRequest());
    assert.equal(srv.requests[0].headers.authorization, `Bearer ${CANARY}`);
  });

  test("globalThis.fetch is looked up at call time and called with globalThis as this", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("via global")));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const realFetch = globalThis.fetch;
    const thisValues = [];
    globalThis.fetch = function (...args) {
      thisValues.push(this);
      return realFetch(...args);
    };
    try {
      assert.equal(await provider(makeRequest()), "via global");
    } finally {
      globalThis.fetch = realFetch;
    }
    assert.equal(thisValues.length, 1, "the fetch installed after creation was used");
    assert.equal(thisValues[0], globalThis);
  });

  test("options.fetch is used, called with globalThis as this and given the signal", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("via option")));
    const calls = [];
    const provider = openAIProvider({
      baseUrl: srv.baseUrl,
      model: "m",
      fetch(url, init) {
        calls.push({ self: this, url, init });
        return fetch(url, init);
      },
    });
    const request = makeRequest();
    assert.equal(await provider(request), "via option");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].self, globalThis);
    assert.equal(calls[0].url, `${srv.baseUrl}/chat/completions`);
    assert.equal(calls[0].init.method, "POST");
    assert.equal(calls[0].init.signal, request.signal);
  });
});

describe("replies", () => {
  test("returns choices[0].message.content verbatim", async (t) => {
    const content = "  Erste Zeile\nZweite Zeile  \n";
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion(content)));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    assert.equal(await provider(makeRequest()), content);
  });

  test("a body that is not JSON fails without a status", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<html>captive portal</html>");
    });
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const err = await rejection(provider(makeRequest()));
    assert.ok(err instanceof Error);
    assert.equal(err.status, undefined);
    assert.match(err.message, /not JSON/);
    assert.match(err.message, /captive portal/);
  });

  test("missing, null or empty content fails without a status", async (t) => {
    const bodies = [
      { choices: [] },
      completion(null, { finish_reason: "content_filter" }),
      completion(""),
      completion(42),
      { error: { message: "model overloaded" } },
    ];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 200, bodies[i++]));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const errors = [];
    for (const _ of bodies) errors.push(await rejection(provider(makeRequest())));
    assert.equal(srv.requests.length, bodies.length);
    for (const err of errors) {
      assert.ok(err instanceof Error);
      assert.equal(err.status, undefined);
      assert.match(err.message, /choices\[0\]\.message\.content/);
    }
    assert.match(errors[1].message, /content_filter/);
    assert.match(errors[4].message, /model overloaded/);
  });
});

describe("HTTP errors", () => {
  test("429 with Retry-After seconds gives status 429 and retryAfterMs 7000", async (t) => {
    const srv = await startServer(t, (r, res) =>
      sendJson(res, 429, { error: { message: "Rate limit reached for requests", type: "requests" } }, { "Retry-After": "7" }),
    );
    const provider = openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" });
    const err = await rejection(provider(makeRequest()));
    assert.ok(err instanceof Error);
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 7000);
    assert.equal(
      err.message,
      "OpenAI-compatible API answered 429 Too Many Requests: Rate limit reached for requests",
    );
  });

  test("fractional Retry-After seconds", async (t) => {
    const srv = await startServer(t, (r, res) => sendJson(res, 429, {}, { "Retry-After": "1.5" }));
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(makeRequest()));
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 1500);
  });

  test("Retry-After as an HTTP-date gives the time from now", async (t) => {
    const future = new Date(Date.now() + 30_000).toUTCString();
    const past = new Date(Date.now() - 60_000).toUTCString();
    const dates = [future, past];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 429, {}, { "Retry-After": dates[i++] }));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });

    const first = await rejection(provider(makeRequest()));
    assert.equal(first.status, 429);
    // HTTP-dates have whole seconds, so up to one second is lost.
    assert.ok(first.retryAfterMs > 28_000 && first.retryAfterMs <= 30_000, `got ${first.retryAfterMs}`);

    const second = await rejection(provider(makeRequest()));
    assert.equal(second.retryAfterMs, 0, "a date in the past means no wait");
  });

  test("retry-after-ms wins over Retry-After; an unreadable Retry-After is left out", async (t) => {
    const headers = [{ "retry-after-ms": "250", "Retry-After": "1" }, { "Retry-After": "soon-ish" }];
    let i = 0;
    const srv = await startServer(t, (r, res) => sendJson(res, 429, {}, headers[i++]));
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });
    const first = await rejection(provider(makeRequest()));
    assert.equal(first.retryAfterMs, 250);
    const second = await rejection(provider(makeRequest()));
    assert.equal(second.status, 429);
    assert.equal(Object.hasOwn(second, "retryAfterMs"), false);
  });

  test("500 gives status 500 with the text body in the message", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(`upstream exploded ${"x".repeat(500)}`);
    });
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(makeRequest()));
    assert.ok(err instanceof Error);
    assert.equal(err.status, 500);
    assert.equal(Object.hasOwn(err, "retryAfterMs"), false);
    assert.match(err.message, /^OpenAI-compatible API answered 500 Internal Server Error: upstream exploded x+/);
    const detail = err.message.slice(err.message.indexOf(": ") + 2);
    assert.ok(detail.length <= 201, `detail is cut to 200 characters, got ${detail.length}`);
  });

  test("400 with an empty body still reports its status", async (t) => {
    const srv = await startServer(t, (r, res) => {
      res.writeHead(400);
      res.end();
    });
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(makeRequest()));
    assert.equal(err.status, 400);
    assert.equal(err.message, "OpenAI-compatible API answered 400 Bad Request");
  });
});

describe("network failures and aborts", () => {
  test("connection refused rejects without a status", async (t) => {
    const srv = await startServer(t, () => {});
    await srv.close();
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" })(makeRequest()));
    assert.ok(err instanceof Error);
    assert.equal(err.status, undefined);
    assert.match(err.message, /request to http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions failed/);
    assert.match(err.message, /ECONNREFUSED/);
    assert.ok(err.cause instanceof Error, "the original fetch error is kept as cause");
    assertNoCanary(err);
  });

  test("a connection closed by the server rejects without a status", async (t) => {
    const srv = await startServer(t, (r, res, req) => req.socket.destroy());
    const err = await rejection(openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(makeRequest()));
    assert.equal(srv.requests.length, 1);
    assert.ok(err instanceof Error);
    assert.equal(err.status, undefined);
    assert.match(err.message, /failed/);
  });

  test("aborting the signal rejects a call in flight with an AbortError", async (t) => {
    let arrived;
    const seen = new Promise((resolve) => (arrived = resolve));
    const srv = await startServer(t, () => arrived()); // never answers
    const controller = new AbortController();
    const pending = openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(
      makeRequest({ signal: controller.signal }),
    );
    await seen;
    controller.abort();
    const err = await rejection(pending);
    assert.equal(err.name, "AbortError");
    assert.equal(err.status, undefined);
  });

  test("an abort reason propagates as-is, and an aborted signal sends nothing", async (t) => {
    let arrived;
    const seen = new Promise((resolve) => (arrived = resolve));
    const srv = await startServer(t, () => arrived());
    const provider = openAIProvider({ baseUrl: srv.baseUrl, model: "m" });

    const controller = new AbortController();
    const pending = provider(makeRequest({ signal: controller.signal }));
    await seen;
    const reason = new Error("pacer timeout");
    controller.abort(reason);
    assert.equal(await rejection(pending), reason);

    const before = srv.requests.length;
    const err = await rejection(provider(makeRequest({ signal: AbortSignal.abort() })));
    assert.equal(err.name, "AbortError");
    assert.equal(srv.requests.length, before, "no request left with an aborted signal");
  });
});

describe("the API key never leaks", () => {
  /** A server that echoes the Authorization header back in every kind of reply. */
  async function echoServer(t, kind) {
    return startServer(t, (r, res) => {
      const auth = String(r.headers.authorization);
      switch (kind) {
        case "401":
          return sendJson(res, 401, { error: { message: `Incorrect API key provided: ${auth}` } });
        case "429":
          return sendJson(res, 429, { error: { message: `Quota of ${auth} exceeded` } }, { "Retry-After": "3" });
        case "500-text":
          res.writeHead(500, { "Content-Type": "text/plain" });
          // The key straddles the 200-character cut, so cutting first would leak a part.
          return res.end(`${"y".repeat(190)}${auth} more`);
        case "200-text":
          res.writeHead(200, { "Content-Type": "text/plain" });
          return res.end(`not json, your header was ${auth}`);
        case "200-empty":
          return sendJson(res, 200, { error: { message: `bad key ${auth}` }, choices: [] });
        case "status-text":
          res.writeHead(403, `Forbidden for ${auth}`, { "Content-Type": "text/plain" });
          return res.end(auth);
      }
    });
  }

  for (const kind of ["401", "429", "500-text", "200-text", "200-empty", "status-text"]) {
    test(`when the server echoes the key (${kind})`, async (t) => {
      const srv = await echoServer(t, kind);
      const provider = openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" });
      const err = await rejection(provider(makeRequest()));
      assert.equal(srv.requests[0].headers.authorization, `Bearer ${CANARY}`, "the server did get the key");
      assertNoCanary(err);
      if (kind !== "500-text") assert.match(err.message, /\*\*\*/, "the echoed key was replaced by ***");
    });
  }

  test("when the server echoes the key URL-encoded or JSON-escaped", async (t) => {
    const key = 'sk-"odd"\\key/+=&?';
    for (const form of [encodeURIComponent(key), JSON.stringify(key).slice(1, -1)]) {
      const srv = await startServer(t, (r, res) => {
        res.writeHead(400, { "Content-Type": "text/plain" });
        res.end(`bad key=${form}`);
      });
      const provider = openAIProvider({ baseUrl: srv.baseUrl, apiKey: key, model: "m" });
      const err = await rejection(provider(makeRequest()));
      assert.notEqual(form, key);
      assertNoCanary(err, form);
      assertNoCanary(err, key);
      assert.match(err.message, /\*\*\*/, "the echoed key was replaced by ***");
    }
  });

  test("when a fetch implementation quotes the key in its error and its cause", async () => {
    const provider = openAIProvider({
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: CANARY,
      model: "m",
      async fetch(url, init) {
        const inner = new Error(`socket closed while sending ${init.headers.Authorization}`);
        inner.header = init.headers.Authorization;
        throw new TypeError(`invalid header ${init.headers.Authorization}`, { cause: inner });
      },
    });
    const err = await rejection(provider(makeRequest()));
    assert.equal(err.status, undefined);
    assert.match(err.message, /invalid header Bearer \*\*\*/);
    assert.equal(err.cause, undefined, "a cause carrying the key is dropped");
    assertNoCanary(err);
  });

  test("when an AbortError quotes the key", async () => {
    const provider = openAIProvider({
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: CANARY,
      model: "m",
      async fetch(url, init) {
        throw new DOMException(`aborted request with ${init.headers.Authorization}`, "AbortError");
      },
    });
    const err = await rejection(provider(makeRequest()));
    assert.equal(err.name, "AbortError");
    assertNoCanary(err);
  });

  test("when the key has a character fetch would quote in a header error", () => {
    const broken = `sk-canary\nDO-NOT-LEAK-123`;
    const err = (() => {
      try {
        openAIProvider({ baseUrl: "http://127.0.0.1:9/v1", apiKey: broken, model: "m" });
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof PacerError);
    assert.equal(err.code, "invalid_options");
    assert.match(err.message, /^apiKey .*\(got <redacted>\)$/);
    assertNoCanary(err, "DO-NOT-LEAK-123");
  });
});

describe("argument validation", () => {
  const base = { baseUrl: "http://127.0.0.1:9/v1", model: "m" };
  const cases = [
    [undefined, /^openAIProvider options must be an object \(got undefined\)$/],
    [{ ...base, baseUrl: "" }, /^baseUrl must be .* \(got ""\)$/],
    [{ ...base, baseUrl: undefined }, /^baseUrl must be .* \(got undefined\)$/],
    [{ ...base, baseUrl: "not a url" }, /^baseUrl must be .* \(got "not a url"\)$/],
    [{ ...base, baseUrl: "ftp://example.com/v1" }, /^baseUrl must be .* \(got "ftp:\/\/example\.com\/v1"\)$/],
    [{ ...base, baseUrl: 42 }, /^baseUrl must be .* \(got 42\)$/],
    [{ ...base, model: "" }, /^model must be a non-empty string \(got ""\)$/],
    [{ ...base, model: null }, /^model must be a non-empty string \(got null\)$/],
    [{ ...base, fetch: "fetch" }, /^fetch must be a function if given \(got "fetch"\)$/],
    [{ ...base, temperature: -1 }, /^temperature must be a finite number >= 0 \(got -1\)$/],
    [{ ...base, temperature: NaN }, /^temperature must be a finite number >= 0 \(got NaN\)$/],
    [{ ...base, systemPrompt: 5 }, /^systemPrompt must be a string if given \(got 5\)$/],
    [{ ...base, extraHeaders: ["x"] }, /^extraHeaders must be .* \(got an array\)$/],
    [{ ...base, extraHeaders: { "X-A": 1 } }, /^extraHeaders\["X-A"\] must be a string \(got 1\)$/],
    [{ ...base, extraHeaders: { "bad name": "v" } }, /^extraHeaders has an invalid header name \(got "bad name"\)$/],
    [{ ...base, structuredOutput: "yes" }, /^structuredOutput must be a boolean \(got "yes"\)$/],
    [{ ...base, structuredOutput: 1 }, /^structuredOutput must be a boolean \(got 1\)$/],
    [{ ...base, structuredOutputs: true }, /^openAIProvider has no option "structuredOutputs" \(options: baseUrl, .*structuredOutput, stream, extraBody\)$/],
    [[], /^openAIProvider options must be an object \(got an array\)$/],
  ];
  for (const [options, expected] of cases) {
    test(`rejects ${inspect(options, { breakLength: Infinity })}`, () => {
      assert.throws(() => openAIProvider(options), (err) => {
        assert.ok(err instanceof PacerError);
        assert.equal(err.code, "invalid_options");
        assert.match(err.message, expected);
        return true;
      });
    });
  }

  test("a non-string apiKey is named but its value is never printed", () => {
    for (const apiKey of [12345, { key: CANARY }, [CANARY]]) {
      assert.throws(() => openAIProvider({ ...base, apiKey }), (err) => {
        assert.ok(err instanceof PacerError);
        assert.equal(err.code, "invalid_options");
        assert.equal(err.message, "apiKey must be a string if given (got <redacted>)");
        assertNoCanary(err);
        return true;
      });
    }
  });

  test("a misspelt option is named but its value is never printed", () => {
    assert.throws(() => openAIProvider({ ...base, apikey: CANARY }), (err) => {
      assert.ok(err instanceof PacerError);
      assert.equal(err.code, "invalid_options");
      assert.match(err.message, /no option "apikey"/);
      assertNoCanary(err);
      return true;
    });
  });

  test("valid options create a provider function", () => {
    assert.equal(typeof openAIProvider({ ...base }), "function");
    assert.equal(typeof openAIProvider({ ...base, apiKey: CANARY, temperature: 1, extraHeaders: {} }), "function");
    assert.equal(typeof openAIProvider({ ...base, structuredOutput: true }), "function");
    assert.equal(typeof openAIProvider({ ...base, structuredOutput: false }), "function");
  });
});

describe("the prompt, as the server receives it", () => {
  /** Sends `request` through a provider and returns the messages the server got. */
  async function messagesFor(t, request) {
    const srv = await startServer(t, (r, res) => sendJson(res, 200, completion("ok")));
    await openAIProvider({ baseUrl: srv.baseUrl, model: "m" })(request);
    assert.equal(srv.requests.length, 1);
    return srv.requests[0].json.messages;
  }

  test("single request: translation instructions, user text verbatim, no batch rules", async (t) => {
    const messages = await messagesFor(t, makeRequest({ texts: ["50%% off\n\nnow"], sourceLang: "fr", targetLang: "ja" }));
    assert.equal(messages.length, 2);
    assert.equal(messages[0].role, "system");
    assert.match(messages[0].content, /from fr to ja\./);
    assert.match(messages[0].content, /formatting/i);
    assert.doesNotMatch(messages[0].content, /%|segment/);
    assert.deepEqual(messages[1], { role: "user", content: "50%% off\n\nnow" });
  });

  test("batch request in the separator layout: the core's instructions, not the provider's own wording", async (t) => {
    const texts = ["a", "b", "c"];
    const instructions = "The text holds 3 segments separated by lines that hold only %%%. Answer in kind.";
    const request = makeRequest({ texts, separator: "\n\n%%%\n\n", instructions });
    const [system, user] = await messagesFor(t, request);
    assert.ok(system.content.includes(instructions), system.content);
    assert.doesNotMatch(system.content, /consists of 3 segments|exactly 3 translated segments/);
    assert.equal(user.content, "a\n\n%%%\n\nb\n\n%%%\n\nc");
  });

  test("batch request: separator and count follow the request", async (t) => {
    const texts = ["a", "b", "c", "d"];
    const request = makeRequest({ texts, separator: "\n\n%%%%\n\n" });
    const [system, user] = await messagesFor(t, request);
    assert.match(system.content, /consists of 4 segments separated by lines containing only %%%%(?!%)/);
    assert.match(system.content, /exactly 4 translated segments/);
    assert.equal(user.content, "a\n\n%%%%\n\nb\n\n%%%%\n\nc\n\n%%%%\n\nd");
  });

  test("auto source language asks to detect it", async (t) => {
    const [system] = await messagesFor(t, makeRequest({ sourceLang: "auto" }));
    assert.match(system.content, /Detect the language/);
    assert.doesNotMatch(system.content, /from auto/);
  });

  test("context goes into the system message, tagged", async (t) => {
    const [system, user] = await messagesFor(t, makeRequest({ context: "A cooking blog" }));
    assert.match(system.content, /<context>\nA cooking blog\n<\/context>/);
    assert.doesNotMatch(user.content, /cooking/);
  });
});

describe("driven by BatchPacer", () => {
  /** Waits, in real time, until `predicate()` holds. */
  async function until(predicate, what) {
    for (let i = 0; i < 500; i++) {
      if (predicate()) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.fail(`timed out waiting for ${what}`);
  }

  function virtualClock() {
    const clock = FakeTimers.createClock(0);
    return {
      clock,
      pacerClock: { now: () => clock.now, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout },
    };
  }

  test("a batch goes out as one chat completion and its reply is split per item", async (t) => {
    await init();
    const texts = ["one", "two %% two", "three"];
    // The server "translates" by wrapping each source text where it stands and keeps
    // everything else (markers or separator lines) as sent: a faithful model, whichever
    // layout the pacer chose for the batch.
    const pattern = new RegExp(texts.map((x) => x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g");
    const srv = await startServer(t, (r, res) =>
      sendJson(res, 200, completion(r.json.messages[1].content.replace(pattern, (x) => `<${x}>`))),
    );
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, model: "m" }), { batchDelayMs: 50, maxItemsPerBatch: 3 });
    t.after(() => pacer.dispose());
    const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "openai" });
    const results = await Promise.all(texts.map((x) => pacer.translate(item(x))));
    assert.deepEqual(results, ["<one>", "<two %% two>", "<three>"]);
    assert.equal(srv.requests.length, 1);
    const user = srv.requests[0].json.messages[1].content;
    for (const x of texts) assert.ok(user.includes(x), `the batch's text holds ${JSON.stringify(x)}`);
  });

  test("structuredOutput: a fenced JSON answer with markers copied into its values resolves each item to its clean translation", async (t) => {
    await init();
    const texts = ["one", 'two "quoted"', "three"];
    const srv = await startServer(t, (r, res) => {
      // The model copies each segment's markers into its value and fences the JSON.
      const answer = {};
      let id = 0;
      for (const [, open, text, close] of r.json.messages[1].content.matchAll(/(<s\d+>)([\s\S]*?)(<\/s\d+>)/g)) {
        answer[String(++id)] = `${open}${text.toUpperCase()}${close}`;
      }
      sendJson(res, 200, completion("```json\n" + JSON.stringify(answer, null, 2) + "\n```"));
    });
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, model: "m", structuredOutput: true }), {
      batchDelayMs: 50,
      maxItemsPerBatch: 3,
    });
    t.after(() => pacer.dispose());
    const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "openai" });
    const results = await Promise.all(texts.map((x) => pacer.translate(item(x))));
    assert.deepEqual(results, ["ONE", 'TWO "QUOTED"', "THREE"]);
    assert.equal(srv.requests.length, 1, "one call: every segment proven");
    assert.ok(srv.requests[0].json.response_format, "a structured answer was asked for");
  });

  test("a 429 with Retry-After pauses the pacer for that long, then the retry succeeds", async (t) => {
    await init();
    let n = 0;
    const srv = await startServer(t, (r, res) => {
      if (n++ === 0) return sendJson(res, 429, { error: { message: "slow down" } }, { "Retry-After": "3" });
      sendJson(res, 200, completion("Hallo"));
    });
    const { clock, pacerClock } = virtualClock();
    const events = [];
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, model: "m" }), {
      clock: pacerClock,
      onEvent: (e) => events.push(e),
      timeoutMs: 0,
    });
    t.after(() => pacer.dispose());
    const result = pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "openai", llm: false });
    await until(() => events.some((e) => e.type === "rateLimited"), "the 429");
    const limited = events.find((e) => e.type === "rateLimited");
    assert.equal(limited.retryAfterMs, 3000);
    assert.equal(limited.providerId, "openai");
    await clock.tickAsync(2990);
    assert.equal(srv.requests.length, 1, "no retry before the Retry-After");
    // The wait is lengthened by up to 10% (300 ms) so that clients do not herd.
    await clock.tickAsync(320);
    assert.equal(await result, "Hallo");
    assert.equal(srv.requests.length, 2);
  });

  test("a 401 rejects at once with provider_error, status 401 and the provider's error as cause", async (t) => {
    await init();
    const srv = await startServer(t, (r, res) => sendJson(res, 401, { error: { message: "Incorrect API key" } }));
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" }), { batchDelayMs: 0 });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "openai" }));
    assert.ok(err instanceof PacerError);
    assert.equal(err.code, "provider_error");
    assert.equal(err.status, 401);
    assert.ok(err.cause instanceof Error);
    assert.equal(err.cause.status, 401);
    assert.equal(srv.requests.length, 1);
    assertNoCanary(err);
  });

  test("what to do about a settings, billing or daily error is said once, in the rejection and in the blocked event", async (t) => {
    await init();
    const rpd = "Rate limit reached for gpt-4o-mini in organization org-x on requests per day (RPD): Limit 200, Used 200, Requested 1.";
    const cases = [
      [401, { error: { message: "Incorrect API key provided" } }, "settings",
        "the provider rejected the API key: check the key in the provider settings (provider failed with status 401: OpenAI-compatible API answered 401 Unauthorized: Incorrect API key provided)"],
      [403, { error: { message: "Project does not have access" } }, "settings",
        "the provider refused access: check the API key and what it is allowed to use (provider failed with status 403: OpenAI-compatible API answered 403 Forbidden: Project does not have access)"],
      [404, { error: { message: "The model `gpt-9` does not exist" } }, "settings",
        "the provider does not know the model or the address: check the model name and the base URL (provider failed with status 404: OpenAI-compatible API answered 404 Not Found: The model `gpt-9` does not exist)"],
      [429, { error: { message: "Quota exceeded.", code: "insufficient_quota" } }, "billing",
        "the provider's account is out of credit or at its spending cap; top it up or raise the cap, then translate again (provider failed with status 429: OpenAI-compatible API answered 429 Too Many Requests: Quota exceeded.)"],
      [402, { error: { message: "Insufficient credits" } }, "billing",
        "the provider's account is out of credit or at its spending cap; top it up or raise the cap, then translate again (provider failed with status 402: OpenAI-compatible API answered 402 Payment Required: Insufficient credits)"],
      [429, { error: { message: rpd, code: "rate_limit_exceeded" } }, "daily",
        `the provider's daily quota is spent; items for it reject until it resets (provider failed with status 429: OpenAI-compatible API answered 429 Too Many Requests: ${rpd})`],
    ];
    for (const [status, body, reason, expected] of cases) {
      const srv = await startServer(t, (r, res) => sendJson(res, status, body));
      const events = [];
      const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" }), {
        batchDelayMs: 0,
        onEvent: (e) => events.push(e),
      });
      t.after(() => pacer.dispose());
      const err = await rejection(pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "openai" }));
      assert.ok(err instanceof PacerError);
      assert.equal(err.code, "provider_error");
      // The whole message: a hint written by both the provider and the pacer would not match.
      assert.equal(err.message, expected, `${status} ${reason}`);
      const blocked = events.filter((e) => e.type === "blocked");
      assert.equal(blocked.length, 1, `${status} ${reason}: one blocked event`);
      assert.equal(blocked[0].reason, reason);
      assert.equal(blocked[0].message, expected, `${status} ${reason}: the event says it once too`);
      assert.equal(srv.requests.length, 1);
    }
  });

  test("the key never reaches events, stats, snapshots or errors, even when the server echoes it", async (t) => {
    await init();
    let n = 0;
    const srv = await startServer(t, (r, res) => {
      n += 1;
      const echo = { error: { message: `bad request from ${r.headers.authorization}` } };
      if (n === 1) return sendJson(res, 429, echo, { "retry-after": "0" });
      if (n === 2) return sendJson(res, 500, echo);
      return sendJson(res, 403, echo);
    });
    const events = [];
    const pacer = new BatchPacer(openAIProvider({ baseUrl: srv.baseUrl, apiKey: CANARY, model: "m" }), {
      batchDelayMs: 0,
      baseRetryDelayMs: 0,
      onEvent: (e) => events.push(e),
    });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "openai" }));
    assert.equal(err.status, 403);
    assertNoCanary(err);
    assert.ok(events.some((e) => e.type === "rateLimited") && events.some((e) => e.type === "retry"));
    for (const [what, value] of [["events", events], ["stats", pacer.stats()], ["snapshot", pacer.snapshot()], ["options", pacer.options]]) {
      assert.ok(!JSON.stringify(value).includes(CANARY), `the API key leaked into ${what}`);
    }
  });
});
