// Tests of deeplProvider, as exported by the installed package, against a local server
// that speaks DeepL's documented wire format (deepl-server.mjs), and through BatchPacer.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";

import init, { deeplProvider, BatchPacer, PacerError } from "batch-pacer";
import { startDeepLServer } from "./deepl-server.mjs";
import { virtualTime } from "./helpers.mjs";

const KEY = "0b3c0a5e-canary-DO-NOT-LEAK-7f1e";
const FREE_KEY = `${KEY}:fx`;

/** A provider request as the pacer builds it for `texts`: an array batch when several. */
function makeRequest(texts, overrides = {}) {
  const batch = texts.length > 1;
  return {
    texts,
    ids: texts.map((_, i) => String(i + 1)),
    text: batch ? texts.join("\n") : texts[0],
    instructions: "",
    isBatch: batch,
    format: batch ? "array" : "single",
    sourceLang: "en",
    targetLang: "de",
    providerId: "deepl",
    context: "",
    attempt: 0,
    metas: texts.map(() => undefined),
    signal: new AbortController().signal,
    ...overrides,
  };
}

/** An item as an extension submits it to a translation API. */
function item(text, overrides = {}) {
  return { text, sourceLang: "en", targetLang: "de", providerId: "deepl", llm: false, ...overrides };
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

/** Every text an error exposes: inspect(), message, stack, own properties, cause chain. */
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

function assertNoKey(err) {
  assert.ok(err instanceof Error, `expected an Error, got ${inspect(err)}`);
  for (const text of exposedTexts(err)) assert.ok(!text.includes(KEY), `the key leaked into the error: ${text}`);
}

/** A fetch that records each call and answers `{ translations }` for the texts sent. */
function recordingFetch() {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    const { text } = JSON.parse(init.body);
    const translations = text.map((x) => ({ detected_source_language: "EN", text: x.toUpperCase() }));
    return new Response(JSON.stringify({ translations }), { headers: { "Content-Type": "application/json" } });
  };
  return { fetch, calls };
}

describe("requests and replies", () => {
  test("the texts of an array batch go out in one POST /v2/translate and their translations come back in order", async (t) => {
    const srv = await startDeepLServer(t, { key: KEY });
    const provider = deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl });
    const texts = ["First paragraph.", "Second, with a line\nbreak.", "Third «quoted» one."];
    const result = await provider(makeRequest(texts));
    assert.deepEqual(result, texts.map((x) => `[DE] ${x}`));
    assert.equal(srv.requests.length, 1);
    const [sent] = srv.requests;
    assert.equal(sent.method, "POST");
    assert.equal(sent.url, "/v2/translate");
    assert.equal(sent.headers.authorization, `DeepL-Auth-Key ${KEY}`);
    assert.match(sent.headers["content-type"], /^application\/json/);
    assert.deepEqual(sent.json, { text: texts, target_lang: "DE", source_lang: "EN" });
  });

  test("each text gets its own translation, even when two texts are the same or one is empty", async (t) => {
    let n = 0;
    const srv = await startDeepLServer(t, { key: KEY, translate: (x) => `${++n}:${x}` });
    const provider = deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl });
    assert.deepEqual(await provider(makeRequest(["a", "b", "a", "c"])), ["1:a", "2:b", "3:a", "4:c"]);
    assert.deepEqual(await provider(makeRequest(["single"])), ["5:single"]);
  });

  test("item languages become DeepL's codes: target upper case with its variant, source without one, auto left out", async (t) => {
    const srv = await startDeepLServer(t, { key: KEY });
    const provider = deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl });
    const cases = [
      [{ sourceLang: "en-GB", targetLang: "pt-br" }, { target_lang: "PT-BR", source_lang: "EN" }],
      [{ sourceLang: "de", targetLang: "en_US" }, { target_lang: "EN-US", source_lang: "DE" }],
      [{ sourceLang: "auto", targetLang: "zh-CN" }, { target_lang: "ZH-HANS" }],
      [{ sourceLang: "zh-Hant", targetLang: "zh-TW" }, { target_lang: "ZH-HANT", source_lang: "ZH" }],
      [{ sourceLang: "", targetLang: "ja" }, { target_lang: "JA" }],
    ];
    for (const [langs, expected] of cases) {
      const result = await provider(makeRequest(["Hello"], langs));
      const sent = srv.requests.at(-1).json;
      assert.deepEqual({ target_lang: sent.target_lang, source_lang: sent.source_lang }, { source_lang: undefined, ...expected }, inspect(langs));
      assert.deepEqual(result, [`[${expected.target_lang}] Hello`]);
    }
  });

  test("the host follows the key: api-free.deepl.com for a key ending in :fx, api.deepl.com otherwise, baseUrl when given", async () => {
    const cases = [
      [{ apiKey: FREE_KEY }, "https://api-free.deepl.com/v2/translate"],
      [{ apiKey: `  ${FREE_KEY}\n` }, "https://api-free.deepl.com/v2/translate"],
      [{ apiKey: KEY }, "https://api.deepl.com/v2/translate"],
      [{ apiKey: `${KEY}:fxx` }, "https://api.deepl.com/v2/translate"],
      [{ apiKey: FREE_KEY, baseUrl: "https://proxy.example/deepl/" }, "https://proxy.example/deepl/v2/translate"],
    ];
    for (const [options, url] of cases) {
      const { fetch, calls } = recordingFetch();
      const provider = deeplProvider({ ...options, fetch });
      assert.deepEqual(await provider(makeRequest(["Hello"])), ["HELLO"]);
      assert.equal(calls.length, 1);
      assert.equal(calls[0].url, url, inspect(options));
      assert.equal(calls[0].init.headers.Authorization, `DeepL-Auth-Key ${options.apiKey.trim()}`);
    }
  });

  test("the request's signal is given to fetch, and aborting it rejects the call with an AbortError", async (t) => {
    const { fetch, calls } = recordingFetch();
    const request = makeRequest(["Hello"]);
    await deeplProvider({ apiKey: KEY, fetch })(request);
    assert.equal(calls[0].init.signal, request.signal);

    const srv = await startDeepLServer(t, { key: KEY });
    const controller = new AbortController();
    controller.abort();
    const err = await rejection(
      deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl })(makeRequest(["Hello"], { signal: controller.signal })),
    );
    assert.equal(err.name, "AbortError");
    assert.equal(srv.requests.length, 0, "an aborted call sends nothing");
  });
});

describe("HTTP errors, shaped as the pacer reads them", () => {
  test("429 has its status and Retry-After; 456 is quota billing; 403 and 413 keep their status", async (t) => {
    const srv = await startDeepLServer(t, { key: KEY });
    const provider = deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl });
    srv.fail(429, { retryAfter: "2" });
    const limited = await rejection(provider(makeRequest(["Hello"])));
    assert.equal(limited.status, 429);
    assert.equal(limited.retryAfterMs, 2000);
    assert.notEqual(limited.quota, "billing");
    assert.match(limited.message, /^DeepL API answered 429 Too Many Requests: Too many requests$/);

    srv.fail(456);
    const spent = await rejection(provider(makeRequest(["Hello"])));
    assert.equal(spent.status, 456);
    assert.equal(spent.quota, "billing");
    assert.match(spent.message, /456.*Quota exceeded/);

    srv.fail(413);
    const large = await rejection(provider(makeRequest(["Hello"])));
    assert.equal(large.status, 413);
    assert.equal(large.quota, undefined);

    const wrongKey = await rejection(deeplProvider({ apiKey: "wrong-key:fx", baseUrl: srv.baseUrl })(makeRequest(["Hello"])));
    assert.equal(wrongKey.status, 403);
    assert.equal(wrongKey.quota, undefined);
    assert.match(wrongKey.message, /403 Forbidden: Authorization failure/);
  });

  test("an HTML error page fails the call with its status and a message that holds no key", async (t) => {
    const srv = await startDeepLServer(t, { key: KEY });
    const provider = deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl });
    srv.fail(502, {
      contentType: "text/html",
      body: `<html><body><h1>502 Bad Gateway</h1><p>upstream refused DeepL-Auth-Key ${KEY}</p></body></html>`,
    });
    const err = await rejection(provider(makeRequest(["Hello"])));
    assert.equal(err.status, 502);
    assert.match(err.message, /^DeepL API answered 502 Bad Gateway: <html>.*\*\*\*/);
    assertNoKey(err);
  });

  test("a 200 whose body is not DeepL's reply fails without a status (retried like a lost connection)", async () => {
    const answers = ["<html>maintenance</html>", JSON.stringify({ translations: [{ text: 7 }] }), JSON.stringify({})];
    for (const body of answers) {
      const provider = deeplProvider({ apiKey: KEY, fetch: async () => new Response(body) });
      const err = await rejection(provider(makeRequest(["Hello"])));
      assert.equal(err.status, undefined, body);
      assert.match(err.message, /^DeepL API answered 200 /);
    }
  });
});

describe("the key never leaks", () => {
  test("when a fetch implementation quotes the key in its error and its cause", async () => {
    const provider = deeplProvider({
      apiKey: KEY,
      async fetch(url, init) {
        const inner = new Error(`socket closed while sending ${init.headers.Authorization}`);
        throw new TypeError(`invalid header ${init.headers.Authorization}`, { cause: inner });
      },
    });
    const err = await rejection(provider(makeRequest(["Hello"])));
    assert.equal(err.status, undefined);
    assert.match(err.message, /^DeepL API request to https:\/\/api\.deepl\.com\/v2\/translate failed: invalid header DeepL-Auth-Key \*\*\*/);
    assert.equal(err.cause, undefined, "a cause carrying the key is dropped");
    assertNoKey(err);
  });

  test("in no message, event, stats, snapshot or option of a pacer, even when the server echoes it", async (t) => {
    await init();
    const srv = await startDeepLServer(t, { key: KEY });
    const echo = (status, extra = {}) =>
      srv.fail(status, { body: JSON.stringify({ message: `refused for DeepL-Auth-Key ${KEY}` }), ...extra });
    echo(429, { retryAfter: "0" });
    echo(500);
    echo(456);
    const events = [];
    const pacer = new BatchPacer(deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl }), {
      batchDelayMs: 0,
      baseRetryDelayMs: 0,
      onEvent: (e) => events.push(e),
    });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate(item("Hello")));
    assert.equal(err.status, 456);
    assertNoKey(err);
    assert.ok(events.some((e) => e.type === "rateLimited") && events.some((e) => e.type === "retry"));
    assert.ok(events.some((e) => e.type === "blocked"));
    const seen = [["events", events], ["stats", pacer.stats()], ["snapshot", pacer.snapshot()], ["options", pacer.options]];
    for (const [what, value] of seen) {
      assert.ok(!JSON.stringify(value).includes(KEY), `the key leaked into ${what}`);
    }
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

  test("llm: false items resolve to their own translations, one text a call", async (t) => {
    await init();
    const srv = await startDeepLServer(t, { key: KEY });
    const pacer = new BatchPacer(deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl }), { batchDelayMs: 0 });
    t.after(() => pacer.dispose());
    const texts = ["One.", "Two.", "Three.", "Four."];
    const results = await Promise.all(texts.map((x, i) => pacer.translate(item(x, { targetLang: i % 2 ? "fr" : "en-GB" }))));
    assert.deepEqual(results, ["[EN-GB] One.", "[FR] Two.", "[EN-GB] Three.", "[FR] Four."]);
    assert.equal(srv.requests.length, texts.length);
    for (const r of srv.requests) assert.equal(r.json.text.length, 1);
  });

  test("a 429 with Retry-After pauses the pacer for that long (counted in rateLimited), then the retry succeeds", async (t) => {
    await init();
    const srv = await startDeepLServer(t, { key: KEY });
    srv.fail(429, { retryAfter: "3" });
    const { clock, pacerClock } = virtualTime();
    const events = [];
    const pacer = new BatchPacer(deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl }), {
      clock: pacerClock,
      onEvent: (e) => events.push(e),
      timeoutMs: 0,
    });
    t.after(() => pacer.dispose());
    const result = pacer.translate(item("Hello"));
    await until(() => events.some((e) => e.type === "rateLimited"), "the 429");
    const limited = events.find((e) => e.type === "rateLimited");
    assert.equal(limited.retryAfterMs, 3000);
    assert.equal(limited.providerId, "deepl");
    assert.equal(pacer.stats().rateLimited, 1);
    await clock.tickAsync(2990);
    assert.equal(srv.requests.length, 1, "no retry before the Retry-After");
    // The wait is lengthened by up to 10% (300 ms) so that clients do not herd.
    await clock.tickAsync(320);
    assert.equal(await result, "[DE] Hello");
    assert.equal(srv.requests.length, 2);
  });

  test("a 456 rejects the call's items and the queued ones as billing, at once and without retries", async (t) => {
    await init();
    const srv = await startDeepLServer(t, { key: KEY });
    srv.fail(456);
    const events = [];
    const pacer = new BatchPacer(deeplProvider({ apiKey: KEY, baseUrl: srv.baseUrl }), {
      maxInFlight: 1,
      batchDelayMs: 0,
      onEvent: (e) => events.push(e),
    });
    t.after(() => pacer.dispose());
    const errors = await Promise.all(["One.", "Two.", "Three."].map((x) => rejection(pacer.translate(item(x)))));
    assert.equal(srv.requests.length, 1, "one call: the queued items are not sent");
    for (const err of errors) {
      assert.ok(err instanceof PacerError);
      assert.equal(err.code, "provider_error");
      assert.equal(err.status, 456);
      assert.match(err.message, /out of credit|spending cap/);
    }
    const blocked = events.filter((e) => e.type === "blocked");
    assert.equal(blocked.length, 1);
    assert.equal(blocked[0].reason, "billing");
    // Items that come later are sent again: the user may have raised the limit.
    assert.equal(await pacer.translate(item("Later.")), "[DE] Later.");
  });

  test("a 403 (a wrong key) rejects at once with provider_error and status 403", async (t) => {
    await init();
    const srv = await startDeepLServer(t, { key: KEY });
    const events = [];
    const pacer = new BatchPacer(deeplProvider({ apiKey: "another-key", baseUrl: srv.baseUrl }), {
      batchDelayMs: 0,
      onEvent: (e) => events.push(e),
    });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate(item("Hello")));
    assert.ok(err instanceof PacerError);
    assert.equal(err.code, "provider_error");
    assert.equal(err.status, 403);
    assert.equal(srv.requests.length, 1, "not retried");
    assert.equal(events.find((e) => e.type === "blocked")?.reason, "settings");
  });
});

describe("option validation", () => {
  const cases = [
    [undefined, undefined],
    [{}, "apiKey"],
    [{ apiKey: "" }, "apiKey"],
    [{ apiKey: "   " }, "apiKey"],
    [{ apiKey: 42 }, "apiKey"],
    [{ apiKey: null }, "apiKey"],
    [{ apiKey: `${KEY}\nDO-NOT-LEAK` }, "apiKey"],
    [{ apiKey: KEY, baseUrl: "not a url" }, "baseUrl"],
    [{ apiKey: KEY, baseUrl: "ftp://example.org" }, "baseUrl"],
    [{ apiKey: KEY, baseUrl: 7 }, "baseUrl"],
    [{ apiKey: KEY, fetch: "fetch" }, "fetch"],
    [{ apiKey: KEY, fetch: null }, "fetch"],
    [{ apiKey: KEY, apikey: KEY }, "apikey"],
  ];
  for (const [options, option] of cases) {
    test(`rejects ${inspect(options, { breakLength: Infinity }).replaceAll(KEY, "<key>")}`, () => {
      let err;
      try {
        deeplProvider(options);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof PacerError, "throws a PacerError");
      assert.equal(err.code, "invalid_options");
      assert.equal(err.option, option);
      if (option !== undefined) assert.ok(err.message.includes(option), `the message names ${option}: ${err.message}`);
      assertNoKey(err);
    });
  }

  test("valid options create a provider function", () => {
    assert.equal(typeof deeplProvider({ apiKey: KEY }), "function");
    assert.equal(typeof deeplProvider({ apiKey: FREE_KEY, baseUrl: "http://127.0.0.1:1", fetch: async () => {} }), "function");
  });
});
