// Tests of the local mock provider (extension-demo/mock-provider.mjs) over real HTTP.
// Run: node --test tests/node/mock-provider.test.mjs
// When this file is copied elsewhere (package tests), set BATCH_PACER_REPO to the
// repository's absolute path.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const { startMockProvider, pseudoTranslate, reversePseudoTranslation, detectTargetLang, FAULTS } = await import(
  pathToFileURL(join(repo, "extension-demo/mock-provider.mjs")).href
);

const SYSTEM_SINGLE = "You are a professional translator. Translate the user's text from en to de.";
const batchSystem = (n, token) =>
  `${SYSTEM_SINGLE}\n\nThe user's text consists of ${n} segments separated by lines containing only ${token} ` +
  `(the separator line).`;

/** Starts a mock for one test and closes it when the test ends. */
async function start(t, options = {}) {
  const mock = await startMockProvider({ port: 0, rpm: 0, ...options });
  t.after(() => mock.close());
  return mock;
}

/** POSTs one chat; resolves with { status, headers, json, content }. */
async function chat(mock, { system, user, headers = {}, signal, model = "mock-translator" } = {}) {
  const messages = [];
  if (system !== undefined) messages.push({ role: "system", content: system });
  messages.push({ role: "user", content: user });
  const response = await fetch(`${mock.url}/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify({ model, messages }),
    signal,
  });
  const json = await response.json();
  return {
    status: response.status,
    headers: response.headers,
    json,
    content: json?.choices?.[0]?.message?.content,
  };
}

const join2 = (texts, token) => texts.join(`\n\n${token}\n\n`);
const splitOn = (content, token) => content.split(`\n\n${token}\n\n`);

describe("translation", () => {
  test("a single text is pseudo-translated into the target language of the prompt", async (t) => {
    const mock = await start(t);
    const r = await chat(mock, { system: SYSTEM_SINGLE, user: "Hello, World! 42 ünïcode" });
    assert.equal(r.status, 200);
    assert.equal(r.content, "[de] hELLO, wORLD! 42 üNïCODE");
    assert.equal(r.json.object, "chat.completion");
    assert.equal(r.json.model, "mock-translator");
    assert.equal(r.json.choices[0].finish_reason, "stop");
    assert.equal(r.json.choices[0].message.role, "assistant");
    assert.equal(typeof r.json.id, "string");
    assert.equal(typeof r.json.created, "number");
    assert.equal(r.json.usage.total_tokens, r.json.usage.prompt_tokens + r.json.usage.completion_tokens);
    assert.equal(reversePseudoTranslation(r.content), "Hello, World! 42 ünïcode");

    assert.equal((await chat(mock, { user: "abc" })).content, "[xx] ABC");
    assert.equal((await chat(mock, { system: "Translate everything into French.", user: "Oui" })).content, "[fr] oUI");
  });

  test("the target language is read from common prompt phrasings", () => {
    assert.equal(detectTargetLang("Translate the user's text from en to de."), "de");
    assert.equal(detectTargetLang("Detect the language and translate it to pt-BR. Use it only to choose"), "pt-BR");
    assert.equal(detectTargetLang("Please translate into German. Keep it to the point."), "de");
    assert.equal(detectTargetLang("Translate to the target: ja"), "xx");
    assert.equal(detectTargetLang(""), "xx");
  });

  test("a batch keeps its segment count and order", async (t) => {
    const mock = await start(t);
    const texts = ["First paragraph.", "Second\nwith two lines.", "Third one"];
    const r = await chat(mock, { system: batchSystem(3, "%%"), user: join2(texts, "%%") });
    assert.equal(r.status, 200);
    assert.deepEqual(
      splitOn(r.content, "%%"),
      texts.map((x) => pseudoTranslate(x, "de")),
    );
  });

  test("texts containing %% lines travel with a %%% separator and are not split on %%", async (t) => {
    const mock = await start(t);
    const texts = ["Sale:\n%%\n50% off", "plain", "x\n%%\ny\n%%\nz"];
    const r = await chat(mock, { system: batchSystem(3, "%%%"), user: join2(texts, "%%%") });
    const segments = splitOn(r.content, "%%%");
    assert.equal(segments.length, 3);
    assert.deepEqual(segments, texts.map((x) => pseudoTranslate(x, "de")));
    assert.match(segments[0], /\n%%\n/);
    assert.equal(mock.stats().segments, 3);
  });

  test("without a system prompt the longest whole-line %-run of the text is the separator", async (t) => {
    const mock = await start(t);
    const user = "a\n%%\nb\n\n%%%%\n\nc\n\n%%%%\n\n50%%% d";
    const r = await chat(mock, { user });
    assert.deepEqual(splitOn(r.content, "%%%%"), ["[xx] A\n%%\nB", "[xx] C", "[xx] 50%%% D"]);
  });

  test("a single text with a %% line is not split when the prompt names no separator", async (t) => {
    const mock = await start(t);
    const user = "top\n\n%%\n\nbottom";
    const r = await chat(mock, { system: SYSTEM_SINGLE, user });
    assert.equal(r.content, pseudoTranslate(user, "de"));
  });

  test("replies are deterministic", async (t) => {
    const a = await start(t);
    const b = await start(t);
    const request = { system: batchSystem(2, "%%"), user: join2(["One", "Two"], "%%") };
    const first = await chat(a, request);
    const second = await chat(a, request);
    const other = await chat(b, request);
    assert.equal(first.content, second.content);
    assert.equal(first.content, other.content);
  });

  test("models, unknown paths and wrong methods answer JSON", async (t) => {
    const mock = await start(t);
    const models = await fetch(`${mock.url}/models`);
    assert.equal(models.status, 200);
    const list = await models.json();
    assert.deepEqual(
      list.data.map((m) => m.id),
      ["mock-translator"],
    );
    const missing = await fetch(`${mock.url}/nothing-here`);
    assert.equal(missing.status, 404);
    assert.equal(typeof (await missing.json()).error.message, "string");
    const wrong = await fetch(`${mock.url}/chat/completions`);
    assert.equal(wrong.status, 405);
    await wrong.json();
    const bad = await fetch(`${mock.url}/chat/completions`, { method: "POST", body: "{not json" });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, "invalid_json");
  });

  test("the repository's openAIProvider round-trips a batch through the mock", async (t) => {
    const { openAIProvider } = await import(pathToFileURL(join(repo, "js/openai.js")).href);
    const mock = await start(t, { apiKey: "sk-test" });
    const provider = openAIProvider({ baseUrl: mock.url, apiKey: "sk-test", model: "mock-translator" });
    const texts = ["Good morning", "a\n%%\nb"];
    const separator = "\n\n%%%\n\n";
    const reply = await provider({
      texts,
      text: texts.join(separator),
      separator,
      isBatch: true,
      sourceLang: "en",
      targetLang: "fr",
      context: "",
      attempt: 0,
    });
    // The mock reports usage and x-ratelimit-* headers, so the reply carries them.
    assert.equal(typeof reply.usage?.inputTokens, "number");
    assert.deepEqual(reply.translations.split(separator), texts.map((x) => pseudoTranslate(x, "fr")));
  });
});

describe("quota", () => {
  test("a request beyond the burst gets 429 with Retry-After, and succeeds after the wait", async (t) => {
    const mock = await start(t, { rpm: 600, burst: 1 });
    assert.equal((await chat(mock, { user: "one" })).status, 200);
    const limited = await chat(mock, { user: "two" });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get("retry-after"), "1");
    const waitMs = Number(limited.headers.get("retry-after-ms"));
    assert.ok(waitMs >= 1 && waitMs <= 100, `retry-after-ms ${waitMs}`);
    assert.equal(limited.json.error.code, "rate_limit_exceeded");
    assert.equal(limited.json.error.type, "requests");
    assert.match(limited.json.error.message, /^Rate limit reached/);

    await new Promise((resolve) => setTimeout(resolve, waitMs + 5));
    assert.equal((await chat(mock, { user: "two" })).status, 200);
    const stats = mock.stats();
    assert.equal(stats.requests, 3);
    assert.equal(stats.ok, 2);
    assert.equal(stats.rateLimited, 1);
    assert.equal(stats.requestTimes.length, 2);
    assert.ok(stats.requestTimes[1] - stats.requestTimes[0] >= 90);
  });

  test("a burst lets that many requests through at once; rpm 0 is unlimited", async (t) => {
    const mock = await start(t, { rpm: 60, burst: 3 });
    const statuses = await Promise.all([1, 2, 3, 4].map((i) => chat(mock, { user: `t${i}` }).then((r) => r.status)));
    assert.deepEqual(statuses.sort(), [200, 200, 200, 429]);

    mock.setOptions({ rpm: 0 });
    const more = await Promise.all([1, 2, 3, 4, 5].map((i) => chat(mock, { user: `u${i}` }).then((r) => r.status)));
    assert.deepEqual(more, [200, 200, 200, 200, 200]);
  });

  test("reset refills the bucket and zeroes the counters", async (t) => {
    const mock = await start(t, { rpm: 1, burst: 1 });
    assert.equal((await chat(mock, { user: "a" })).status, 200);
    const limited = await chat(mock, { user: "b" });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get("retry-after")) >= 59);
    mock.reset();
    assert.equal(mock.stats().requests, 0);
    assert.equal((await chat(mock, { user: "c" })).status, 200);
  });

  test("each key listed in `keys` has a quota of its own; other keys and no key share the main one", async (t) => {
    const mock = await start(t, { rpm: 1, burst: 1, keys: { k1: { rpm: 1 }, k2: { rpm: 1, burst: 2 } } });
    const as = (key) => ({ Authorization: `Bearer ${key}` });
    assert.equal((await chat(mock, { user: "a", headers: as("k1") })).status, 200);
    const limited = await chat(mock, { user: "b", headers: as("k1") });
    assert.equal(limited.status, 429, "k1's own quota is spent");
    assert.ok(Number(limited.headers.get("retry-after")) >= 59);
    assert.equal(limited.headers.get("x-ratelimit-limit-requests"), "1");
    // k2 is another project: its burst of 2 is untouched by k1's calls.
    assert.equal((await chat(mock, { user: "c", headers: as("k2") })).status, 200);
    assert.equal((await chat(mock, { user: "d", headers: as("k2") })).status, 200);
    assert.equal((await chat(mock, { user: "e", headers: as("k2") })).status, 429);
    // The shared bucket is still full: the keys never took from it.
    assert.equal((await chat(mock, { user: "f", headers: as("unlisted") })).status, 200);
    assert.equal((await chat(mock, { user: "g" })).status, 429);
    assert.deepEqual(mock.stats().byKey, {
      k1: { requests: 2, ok: 1, rateLimited: 1 },
      k2: { requests: 3, ok: 2, rateLimited: 1 },
    });
    mock.reset();
    assert.deepEqual(mock.stats().byKey, {});
    assert.equal((await chat(mock, { user: "h", headers: as("k1") })).status, 200, "reset refills each key's bucket");
    assert.throws(() => mock.setOptions({ keys: { k1: { rpm: 0 } } }), /keys must be/);
  });

  test("`quota`: one window of requests and tokens for every caller, keys included, reported whole in x-ratelimit-*; past it, 429 with Retry-After", async (t) => {
    // A window of a minute: nothing refills measurably while the test runs.
    const mock = await start(t, { quota: { requests: 3, tokens: 1000, windowMs: 60_000 }, keys: { k1: { rpm: 600, burst: 10 } } });
    const user = "x".repeat(40);
    const first = await chat(mock, { system: SYSTEM_SINGLE, user, headers: { Authorization: "Bearer k1" } });
    assert.equal(first.status, 200);
    const cost = first.json.usage.prompt_tokens + first.json.usage.completion_tokens;
    const header = (r, name) => r.headers.get(`x-ratelimit-${name}`);
    assert.equal(header(first, "limit-requests"), "3");
    assert.equal(header(first, "remaining-requests"), "2");
    assert.equal(header(first, "limit-tokens"), "1000");
    assert.equal(header(first, "remaining-tokens"), String(1000 - cost), "charged what the usage reports");
    // The reset: the time until the window is whole again (1 request of 3 a minute: 20 s).
    assert.match(header(first, "reset-requests"), /^(19\.9\d\d|20\.000)s$/);
    // Another key and no key take from the same window (k1's own bucket is not used).
    assert.equal((await chat(mock, { system: SYSTEM_SINGLE, user, headers: { Authorization: "Bearer other" } })).status, 200);
    const third = await chat(mock, { system: SYSTEM_SINGLE, user });
    assert.equal(third.status, 200);
    assert.equal(header(third, "remaining-requests"), "0");
    const limited = await chat(mock, { system: SYSTEM_SINGLE, user, headers: { Authorization: "Bearer k1" } });
    assert.equal(limited.status, 429);
    assert.equal(limited.json.error.code, "rate_limit_exceeded");
    const waitMs = Number(limited.headers.get("retry-after-ms"));
    assert.ok(waitMs > 19_000 && waitMs <= 20_000, `retry-after-ms ${waitMs}`);
    assert.equal(limited.headers.get("retry-after"), String(Math.ceil(waitMs / 1000)));
    assert.equal(header(limited, "limit-requests"), "3");
    assert.equal(header(limited, "remaining-requests"), "0");
    assert.equal(header(limited, "limit-tokens"), "1000");
    const stats = mock.stats();
    assert.equal(stats.ok, 3);
    assert.equal(stats.rateLimited, 1);
    assert.equal(stats.quotaTokens, 3 * cost);

    // A call that needs more tokens than are left waits for them, though a request is free.
    assert.ok(cost > 30 && cost < 60, `a call costs ${cost} tokens`);
    mock.setOptions({ quota: { requests: 10, tokens: 60, windowMs: 60_000 } });
    assert.equal((await chat(mock, { system: SYSTEM_SINGLE, user })).status, 200);
    const short = await chat(mock, { system: SYSTEM_SINGLE, user });
    assert.equal(short.status, 429, `${header(short, "remaining-tokens")} tokens left`);
    assert.equal(header(short, "remaining-requests"), "9");
    mock.reset();
    assert.equal((await chat(mock, { system: SYSTEM_SINGLE, user })).status, 200, "reset makes the window whole");
    assert.throws(() => mock.setOptions({ quota: { requests: 0, tokens: 10, windowMs: 1000 } }), /quota must be/);
    mock.setOptions({ quota: null });
    assert.equal(mock.stats().quotaTokens, cost);
  });
});

describe("latency", () => {
  test("answers wait for latency, and concurrent requests are counted", async (t) => {
    const mock = await start(t, { latency: 80, jitter: 20, seed: 7 });
    const begin = performance.now();
    const replies = await Promise.all([1, 2, 3].map((i) => chat(mock, { user: `p${i}` })));
    // A lower bound only: a loaded machine makes answers later, never earlier.
    const elapsed = performance.now() - begin;
    assert.ok(elapsed >= 75, `elapsed ${elapsed}`);
    assert.deepEqual(
      replies.map((r) => r.content),
      ["[xx] P1", "[xx] P2", "[xx] P3"],
    );
    const stats = mock.stats();
    assert.equal(stats.maxConcurrent, 3);
    assert.equal(stats.inFlight, 0);
  });
});

describe("faults", () => {
  const texts = ["Alpha", "Beta", "Gamma"];
  const batch = { system: batchSystem(3, "%%"), user: join2(texts, "%%") };
  const expected = texts.map((x) => pseudoTranslate(x, "de"));

  test("wrong-count drops the last segment", async (t) => {
    const mock = await start(t, { fault: "wrong-count" });
    const r = await chat(mock, batch);
    assert.deepEqual(splitOn(r.content, "%%"), expected.slice(0, 2));
    assert.equal(r.headers.get("x-mock-fault"), "wrong-count");
    assert.equal(mock.stats().faults["wrong-count"], 1);
  });

  test("drop-separator joins the segments with a space", async (t) => {
    const mock = await start(t, { fault: "drop-separator" });
    const r = await chat(mock, batch);
    assert.equal(r.content, expected.join(" "));
    assert.doesNotMatch(r.content, /%%/);
  });

  test("extra-segment appends one segment", async (t) => {
    const mock = await start(t, { fault: "extra-segment" });
    const r = await chat(mock, batch);
    const segments = splitOn(r.content, "%%");
    assert.equal(segments.length, 4);
    assert.deepEqual(segments.slice(0, 3), expected);
  });

  test("batch faults leave single texts alone", async (t) => {
    const mock = await start(t, { fault: "wrong-count" });
    const r = await chat(mock, { system: SYSTEM_SINGLE, user: "Solo" });
    assert.equal(r.content, "[de] sOLO");
    assert.equal(mock.stats().faults["wrong-count"], 0);
  });

  test("http-500 answers a JSON server error", async (t) => {
    const mock = await start(t, { fault: "http-500" });
    const r = await chat(mock, { user: "x" });
    assert.equal(r.status, 500);
    assert.equal(typeof r.json.error.message, "string");
    assert.equal(mock.stats().faults["http-500"], 1);
    assert.equal(mock.stats().ok, 0);
  });

  test("the x-mock-fault header overrides the configured mode per request", async (t) => {
    const mock = await start(t);
    const faulty = await chat(mock, { ...batch, headers: { "x-mock-fault": "wrong-count" } });
    assert.equal(splitOn(faulty.content, "%%").length, 2);
    const clean = await chat(mock, batch);
    assert.deepEqual(splitOn(clean.content, "%%"), expected);
    const unknown = await chat(mock, { ...batch, headers: { "x-mock-fault": "meteor" } });
    assert.equal(unknown.status, 400);
  });

  test("faultRate 0 never faults; mixed draws reproducibly from the seed", async (t) => {
    const never = await start(t, { fault: "http-500", faultRate: 0 });
    for (let i = 0; i < 5; i++) assert.equal((await chat(never, batch)).status, 200);

    const mixedFaults = FAULTS.filter((f) => f !== "hang");
    const run = async (mock) => {
      const seen = [];
      for (let i = 0; i < 12; i++) {
        const r = await chat(mock, batch);
        seen.push(r.status === 500 ? "http-500" : r.headers.get("x-mock-fault"));
      }
      return seen;
    };
    const mixed = await start(t, { fault: "mixed", faultRate: 0.5, seed: 42, mixedFaults });
    const first = await run(mixed);
    mixed.reset();
    assert.deepEqual(await run(mixed), first);
    assert.ok(first.includes("none"), first.join());
    assert.ok(first.some((f) => f !== "none"), first.join());
    const counted = Object.values(mixed.stats().faults).reduce((a, b) => a + b, 0);
    assert.equal(counted, first.filter((f) => f !== "none").length);
  });

  test("hang never answers until the client aborts", async (t) => {
    const mock = await start(t, { fault: "hang" });
    const controller = new AbortController();
    const pending = chat(mock, { user: "x", signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, { name: "AbortError" });
    assert.equal(mock.stats().faults.hang, 1);
    // The server notices the closed socket.
    for (let i = 0; i < 50 && mock.stats().inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(mock.stats().inFlight, 0);
  });

  test("close ends hanging requests promptly", async () => {
    const mock = await startMockProvider({ port: 0, rpm: 0, fault: "hang" });
    const pending = chat(mock, { user: "x" });
    await new Promise((r) => setTimeout(r, 30));
    // The request hangs for ever: close() resolving at all shows it did not wait for it.
    await mock.close();
    await assert.rejects(pending);
  });
});

describe("browser access", () => {
  test("CORS preflight is answered and responses allow any origin", async (t) => {
    const mock = await start(t);
    const preflight = await fetch(`${mock.url}/chat/completions`, {
      method: "OPTIONS",
      headers: {
        Origin: "chrome-extension://abcdef",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
      },
    });
    assert.ok(preflight.status === 204 || preflight.status === 200);
    assert.equal(preflight.headers.get("access-control-allow-origin"), "*");
    const allowed = preflight.headers.get("access-control-allow-headers").toLowerCase();
    assert.match(allowed, /authorization/);
    assert.match(allowed, /content-type/);
    assert.match(preflight.headers.get("access-control-allow-methods"), /POST/);

    const r = await chat(mock, { user: "x", headers: { Origin: "chrome-extension://abcdef" } });
    assert.equal(r.headers.get("access-control-allow-origin"), "*");
    assert.match(r.headers.get("access-control-expose-headers"), /retry-after/);
  });

  test("an API key, when set, is required and never echoed", async (t) => {
    const key = "sk-mock-secret-123";
    const mock = await start(t, { apiKey: key });
    const missing = await chat(mock, { user: "x" });
    assert.equal(missing.status, 401);
    const wrong = await chat(mock, { user: "x", headers: { Authorization: "Bearer sk-other" } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json.error.code, "invalid_api_key");
    assert.ok(!JSON.stringify(wrong.json).includes(key));
    assert.ok(!JSON.stringify(wrong.json).includes("sk-other"));
    const right = await chat(mock, { user: "x", headers: { Authorization: `Bearer ${key}` } });
    assert.equal(right.status, 200);
    const stats = mock.stats();
    assert.equal(stats.unauthorized, 2);
    assert.equal(stats.ok, 1);
  });
});

describe("stats", () => {
  test("stats count requests, outcomes, segments and accepted request times", async (t) => {
    const before = Date.now();
    const mock = await start(t, { rpm: 600, burst: 2 });
    await chat(mock, { system: batchSystem(2, "%%"), user: join2(["a", "b"], "%%") });
    await chat(mock, { user: "c" });
    assert.equal((await chat(mock, { user: "d" })).status, 429);
    const stats = mock.stats();
    assert.equal(stats.requests, 3);
    assert.equal(stats.ok, 2);
    assert.equal(stats.rateLimited, 1);
    assert.equal(stats.segments, 3);
    assert.deepEqual(stats.batches, { markers: 0, separator: 1 });
    assert.equal(stats.requestTimes.length, 2);
    assert.ok(stats.requestTimes.every((ms) => ms >= before && ms <= Date.now()));
    assert.ok(stats.startedAt >= before);
    assert.equal(stats.maxConcurrent, 1);
    assert.deepEqual(Object.keys(stats.faults).sort(), [...FAULTS].sort());
    // A snapshot, not a live view.
    stats.requestTimes.push(0);
    assert.equal(mock.stats().requestTimes.length, 2);
  });

  test("startMockProvider rejects invalid options", async () => {
    await assert.rejects(startMockProvider({ fault: "sometimes" }), TypeError);
    await assert.rejects(startMockProvider({ burst: 0 }), TypeError);
    await assert.rejects(startMockProvider({ rpm: -1 }), TypeError);
  });
});

describe("markers layout", () => {
  const texts = ["Alpha", "Beta\nline two", "Gamma <t1> x", "Delta"];
  const pairs = texts.map((_, i) => [`<s${i + 1}>`, `</s${i + 1}>`]);
  const marked = (list) => list.map((x, i) => `<s${i + 1}>${x}</s${i + 1}>`).join("\n");
  // As the pacer's instructions do, the prompt names the first and the last marker.
  const system = `${SYSTEM_SINGLE}\n\nThe text holds 4 segments, each between its own pair of markers, from <s1>…</s1> to <s4>…</s4>.`;
  const batch = { system, user: marked(texts) };
  const expected = texts.map((x) => pseudoTranslate(x, "de"));
  /** The reply's pairs as { id: text }, in reply order. */
  const pairsOf = (content) => [...content.matchAll(/<s(\d+)>([\s\S]*?)<\/s\1>/g)].map((m) => [Number(m[1]), m[2]]);

  test("each translation stands between its own segment's markers, kept as sent", async (t) => {
    const mock = await start(t);
    const r = await chat(mock, batch);
    assert.equal(r.content, marked(expected));
    assert.equal(mock.stats().segments, 4);
    assert.deepEqual(mock.stats().batches, { markers: 1, separator: 0 });
  });

  test("a single text holding <s1> is not split when the prompt names no marker", async (t) => {
    const mock = await start(t);
    const r = await chat(mock, { system: SYSTEM_SINGLE, user: "see <s1>x</s1> here" });
    assert.equal(r.content, pseudoTranslate("see <s1>x</s1> here", "de"));
  });

  test("wrong-count drops the last pair", async (t) => {
    const mock = await start(t, { fault: "wrong-count" });
    const r = await chat(mock, batch);
    assert.deepEqual(pairsOf(r.content), expected.slice(0, 3).map((x, i) => [i + 1, x]));
    assert.equal(mock.stats().faults["wrong-count"], 1);
  });

  test("drop-separator merges the first two segments into the first pair", async (t) => {
    const mock = await start(t, { fault: "drop-separator" });
    const r = await chat(mock, batch);
    assert.deepEqual(pairsOf(r.content), [[1, `${expected[0]} ${expected[1]}`], [3, expected[2]], [4, expected[3]]]);
  });

  test("extra-segment adds a pair of an id the batch lacks", async (t) => {
    const mock = await start(t, { fault: "extra-segment" });
    const r = await chat(mock, batch);
    const got = pairsOf(r.content);
    assert.equal(got.length, 5);
    assert.deepEqual(got.slice(0, 4), expected.map((x, i) => [i + 1, x]));
    assert.equal(got[4][0], 5);
  });

  test("the repository's openAIProvider round-trips a marked batch through the mock", async (t) => {
    const { openAIProvider } = await import(pathToFileURL(join(repo, "js/openai.js")).href);
    const mock = await start(t);
    const provider = openAIProvider({ baseUrl: mock.url, apiKey: "", model: "mock-translator" });
    const reply = await provider({
      texts,
      ids: ["1", "2", "3", "4"],
      markers: pairs,
      text: marked(texts),
      instructions: "The text holds 4 segments, each between its own pair of markers, from <s1>…</s1> to <s4>…</s4>.",
      isBatch: true,
      sourceLang: "en",
      targetLang: "fr",
      context: "",
      attempt: 0,
    });
    const translations = typeof reply === "string" ? reply : reply.translations;
    assert.equal(translations, marked(texts.map((x) => pseudoTranslate(x, "fr"))));
  });

  // The pacer against the mock over HTTP: whatever the batch fault, every paragraph
  // ends with its own translation (proven segments at once, the rest sent again).
  for (const fault of ["none", "wrong-count", "drop-separator", "extra-segment"]) {
    test(`BatchPacer + openAIProvider against fault ${fault}: every paragraph gets its own translation`, async (t) => {
      const { default: init, BatchPacer, openAIProvider } = await import("batch-pacer");
      await init();
      // Half the batch calls fault, so retries and fallbacks get answered.
      const mock = await start(t, { fault, faultRate: fault === "none" ? undefined : 0.5, seed: 3 });
      const pacer = new BatchPacer(openAIProvider({ baseUrl: mock.url, apiKey: "", model: "mock-translator" }), {
        batchDelayMs: 5,
        baseRetryDelayMs: 1,
        rate: 1000,
      });
      t.after(() => pacer.dispose());
      const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${"word ".repeat(i % 5)}end`);
      const out = await Promise.all(
        paragraphs.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "mock" })),
      );
      assert.deepEqual(out, paragraphs.map((x) => pseudoTranslate(x, "de")));
      if (fault !== "none") assert.ok(pacer.stats().countMismatches > 0, "the fault was met");
    });
  }
});

// The streaming tests of the package's openAIProvider run where it has `stream`.
const { openAIProvider: repoProvider } = await import(pathToFileURL(join(repo, "js/openai.js")).href);
let streamingProvider = "openAIProvider has no stream option in this build";
try {
  repoProvider({ baseUrl: "http://127.0.0.1:1/v1", model: "m", stream: true });
  streamingProvider = false;
} catch {
  // left skipped: the reason above says why
}

describe("streams and thinking", () => {
  const texts = ["Alpha one", "Beta two", "Gamma three"];
  // Marker numbers as the pacer gives them: labels to copy, not a count.
  const numbers = [21, 58, 95];
  const marked = (list) => list.map((x, i) => `<s${numbers[i]}>${x}</s${numbers[i]}>`).join("\n");
  const system = `${SYSTEM_SINGLE}\n\nThe text holds 3 segments, each between its own pair of markers, from <s21>…</s21> to <s95>…</s95>.`;
  const answer = marked(texts.map((x) => pseudoTranslate(x, "de")));

  /**
   * POSTs one chat with `stream: true` and reads the server-sent events as they come:
   * `{ status, type, events (parsed data values, "[DONE]" as is), reads (the events each
   * network read completed) }`.
   */
  async function streamChat(mock, { user, streamOptions, headers = {} }) {
    const response = await fetch(`${mock.url}/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify({
        model: "mock-translator",
        stream: true,
        ...(streamOptions ? { stream_options: streamOptions } : {}),
        messages: [{ role: "system", content: system }, { role: "user", content: user }],
      }),
    });
    const events = [];
    const reads = [];
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const bytes of response.body) {
      buffer += decoder.decode(bytes, { stream: true });
      const blocks = buffer.split("\n\n");
      buffer = blocks.pop();
      const got = blocks.map((block) => {
        assert.match(block, /^data: /, "every event is one data line");
        const data = block.slice("data: ".length);
        return data === "[DONE]" ? data : JSON.parse(data);
      });
      events.push(...got);
      if (got.length > 0) reads.push(got);
    }
    assert.equal(buffer, "", "the stream ends after a whole event");
    return { status: response.status, type: response.headers.get("content-type"), events, reads };
  }

  const contentOf = (events) => events.filter((e) => e !== "[DONE]").map((e) => e.choices[0]?.delta?.content ?? "").join("");

  test("stream: true answers OpenAI-style events, token by token, then finish_reason and [DONE]", async (t) => {
    const mock = await start(t);
    const { status, type, events } = await streamChat(mock, { user: marked(texts) });
    assert.equal(status, 200);
    assert.match(type, /^text\/event-stream/);
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1);
    for (const chunk of chunks) assert.equal(chunk.object, "chat.completion.chunk");
    assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
    const last = chunks.at(-1);
    assert.deepEqual(last.choices[0], { index: 0, delta: {}, finish_reason: "stop" });
    const tokens = chunks.slice(1, -1).map((c) => c.choices[0].delta.content);
    assert.ok(tokens.every((tok) => tok.length >= 1 && tok.length <= 4), "about 4 characters a token");
    assert.equal(tokens.length, Math.ceil(answer.length / 4));
    assert.equal(tokens.join(""), answer, "joined, the tokens are the whole reply");
    assert.ok(chunks.every((c) => c.usage === undefined), "no usage chunk unless asked");
    assert.equal(mock.stats().streamed, 1);
    assert.equal(mock.stats().ok, 1);
    assert.equal(mock.stats().inFlight, 0);
  });

  test("stream_options.include_usage adds a usage chunk before [DONE]", async (t) => {
    const mock = await start(t);
    const { events } = await streamChat(mock, { user: marked(texts), streamOptions: { include_usage: true } });
    const usage = events.at(-2);
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.usage.completion_tokens, Math.ceil(answer.length / 4));
    assert.equal(usage.usage.total_tokens, usage.usage.prompt_tokens + usage.usage.completion_tokens);
    assert.equal(events.at(-3).choices[0].finish_reason, "stop", "the usage chunk comes after the last choice");
  });

  test("with a writing speed the tokens leave one by one: the first arrives before the last is written", async (t) => {
    const mock = await start(t, { tokensPerSecond: 200 });
    const { events, reads } = await streamChat(mock, { user: marked(texts) });
    assert.equal(contentOf(events), answer);
    assert.ok(reads.length > 1, `the reply came in ${reads.length} network reads`);
    assert.ok(reads[0].every((e) => e !== "[DONE]"), "the first read holds no end");
    // A stream and a whole reply carry the same text.
    assert.equal((await chat(mock, { system, user: marked(texts) })).content, answer);
  });

  test("think writes a <think> draft holding the batch's markers around the wrong texts, then the answer", async (t) => {
    const mock = await start(t, { think: true });
    const whole = (await chat(mock, { system, user: marked(texts) })).content;
    const { events } = await streamChat(mock, { user: marked(texts) });
    for (const content of [whole, contentOf(events)]) {
      const match = /^<think>\n([\s\S]*?)\n<\/think>\n([\s\S]*)$/.exec(content);
      assert.ok(match, `a draft, then the answer: ${JSON.stringify(content.slice(0, 80))}`);
      const [, draft, after] = match;
      assert.equal(after, answer);
      const draftPairs = [...draft.matchAll(/<s(\d+)>([\s\S]*?)<\/s\1>/g)].map((m) => [Number(m[1]), m[2]]);
      assert.deepEqual(draftPairs.map(([number]) => number), numbers, "the draft holds every pair of the batch");
      // Each draft pair holds another segment's translation: read as the reply, it would misplace them all.
      draftPairs.forEach(([number, text]) => {
        const own = texts[numbers.indexOf(number)];
        assert.notEqual(reversePseudoTranslation(text), own);
        assert.ok(texts.includes(reversePseudoTranslation(text)), "a translation of the batch, only under the wrong number");
      });
    }
    assert.equal(mock.stats().thought, 2);
  });

  test("the x-mock-think header asks for a draft per request; a single text's draft holds no markers", async (t) => {
    const mock = await start(t);
    const plain = await chat(mock, { system: SYSTEM_SINGLE, user: "Hello" });
    assert.equal(plain.content, "[de] hELLO");
    const thought = await chat(mock, { system: SYSTEM_SINGLE, user: "Hello", headers: { "x-mock-think": "1" } });
    assert.match(thought.content, /^<think>\n[^<]*\n<\/think>\n\[de\] hELLO$/);
    assert.equal(mock.stats().thought, 1);
  });

  test("a stream that the client drops is stopped and counted out of flight", async (t) => {
    const mock = await start(t, { tokensPerSecond: 50 });
    const controller = new AbortController();
    const response = await fetch(`${mock.url}/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "system", content: system }, { role: "user", content: marked(texts) }] }),
      signal: controller.signal,
    });
    const reader = response.body.getReader();
    await reader.read(); // the first token is there
    controller.abort();
    await assert.rejects(reader.read());
    for (let i = 0; i < 100 && mock.stats().inFlight > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(mock.stats().inFlight, 0);
  });

  // The package's streaming openAIProvider against the mock's events, a thinking model
  // included: the drafts' markers never place a paragraph, and paragraphs resolve from
  // the stream before it ends.
  for (const think of [false, true]) {
    test(`BatchPacer + openAIProvider({ stream: true })${think ? ", a thinking model" : ""}: every paragraph its own, some before the stream ends`, { skip: streamingProvider }, async (t) => {
      const { default: init, BatchPacer, openAIProvider } = await import("batch-pacer");
      await init();
      const mock = await start(t, { think, tokensPerSecond: 400 });
      const pacer = new BatchPacer(openAIProvider({ baseUrl: mock.url, apiKey: "", model: "mock-translator", stream: true }), {
        batchDelayMs: 5,
        rate: 1000,
      });
      t.after(() => pacer.dispose());
      const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${"word ".repeat(4 + (i % 5))}end`);
      const out = await Promise.all(
        paragraphs.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "mock" })),
      );
      assert.deepEqual(out, paragraphs.map((x) => pseudoTranslate(x, "de")));
      const stats = pacer.stats();
      // No retry: a thinking model's draft never counts as the reply.
      assert.equal(stats.retries, 0);
      assert.equal(stats.countMismatches, 0);
      assert.ok(stats.batchCalls > 0);
      assert.equal(stats.streamedCalls, stats.providerCalls);
      assert.ok(stats.earlyResolved > 0, `earlyResolved ${stats.earlyResolved}`);
      assert.equal(mock.stats().streamed, stats.providerCalls);
      assert.equal(mock.stats().thought, think ? stats.providerCalls : 0);
    });
  }

  test("stream must be a boolean; tokensPerSecond and think are checked", async (t) => {
    const mock = await start(t);
    const response = await fetch(`${mock.url}/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ model: "m", stream: "yes", messages: [{ role: "user", content: "x" }] }),
    });
    assert.equal(response.status, 400);
    assert.equal((await response.json()).error.code, "invalid_stream");
    await assert.rejects(startMockProvider({ tokensPerSecond: -1 }), /tokensPerSecond/);
    await assert.rejects(startMockProvider({ think: "yes" }), /think/);
  });
});

// ---------------------------------------------------------------------------------------
// Models with their own daily quotas, models that cannot batch, and the package's
// fallback providers against them.

describe("models: daily quotas and batching", () => {
  const mod = () => import(pathToFileURL(join(repo, "extension-demo/mock-provider.mjs")).href);

  test("a model's daily quota is its own: past it, a 429 in OpenAI's words with Retry-After until the day ends; other models go on", async (t) => {
    const mock = await start(t, { models: { "mock-translator": { requestsPerDay: 2 } } });
    for (const user of ["one", "two"]) assert.equal((await chat(mock, { user })).status, 200);
    const spent = await chat(mock, { user: "three" });
    assert.equal(spent.status, 429);
    assert.match(spent.json.error.message, /^Rate limit reached for model `mock-translator` on requests per day \(RPD\): Limit 2, Used 2, Requested 1\. Please try again in 2[34]h/);
    assert.equal(spent.json.error.code, "rate_limit_exceeded");
    const retryAfter = Number(spent.headers.get("retry-after"));
    assert.ok(retryAfter > 23 * 3600 && retryAfter <= 24 * 3600, `Retry-After ${retryAfter}`);
    // Another model's quota is separate: unlimited here.
    for (const user of ["a", "b", "c"]) assert.equal((await chat(mock, { user, model: "mock-translator-lite" })).status, 200);
    assert.equal((await chat(mock, { user: "four" })).status, 429, "still spent");
    const stats = mock.stats();
    assert.equal(stats.dailyLimited, 2);
    assert.equal(stats.rateLimited, 0, "a daily 429 is not a per-minute one");
    assert.deepEqual(stats.usedToday, { "mock-translator": 2, "mock-translator-lite": 3 });
    assert.deepEqual(stats.byModel["mock-translator"], { requests: 4, ok: 2, segments: 2, dailyLimited: 2, rateLimited: 0 });
    assert.deepEqual(stats.byModel["mock-translator-lite"], { requests: 3, ok: 3, segments: 3, dailyLimited: 0, rateLimited: 0 });
  });

  test("a spent daily quota takes no token of the per-minute bucket the models share", async (t) => {
    const mock = await start(t, { rpm: 1, burst: 2, models: { "mock-translator": { requestsPerDay: 1 } } });
    assert.equal((await chat(mock, { user: "one" })).status, 200);
    assert.equal((await chat(mock, { user: "two" })).status, 429);
    assert.equal((await chat(mock, { user: "three" })).status, 429);
    // The bucket's second token is still there, for the other model.
    assert.equal((await chat(mock, { user: "x", model: "mock-translator-lite" })).status, 200);
    const perMinute = await chat(mock, { user: "y", model: "mock-translator-lite" });
    assert.equal(perMinute.status, 429);
    assert.match(perMinute.json.error.message, /limit 1 \/ min/);
    assert.deepEqual([mock.stats().dailyLimited, mock.stats().rateLimited], [2, 1]);
  });

  test("the day ends after dayMs, and reset() starts a new one", async (t) => {
    const mock = await start(t, { dayMs: 300, models: { "mock-translator": { requestsPerDay: 1 } } });
    assert.equal((await chat(mock, { user: "one" })).status, 200);
    const spent = await chat(mock, { user: "two" });
    assert.equal(spent.status, 429);
    assert.equal(spent.headers.get("retry-after"), "1", "whole seconds, at least 1");
    await new Promise((resolve) => setTimeout(resolve, 320));
    assert.equal((await chat(mock, { user: "three" })).status, 200, "a new day");
    assert.equal((await chat(mock, { user: "four" })).status, 429);
    mock.reset();
    assert.equal((await chat(mock, { user: "five" })).status, 200, "reset starts a new day");
    assert.deepEqual(mock.stats().usedToday, { "mock-translator": 1 });
  });

  for (const dailyStyle of ["openai", "gemini"]) {
    test(`the package's openAIProvider reads the mock's spent daily quota (${dailyStyle} style) as quota "daily", with the wait until the day ends`, async (t) => {
      const { openAIProvider } = await import("batch-pacer");
      const mock = await start(t, { dailyStyle, models: { flash: { requestsPerDay: 1 } } });
      const provider = openAIProvider({ baseUrl: mock.url, apiKey: "", model: "flash" });
      const request = { texts: ["Hello"], text: "Hello", isBatch: false, sourceLang: "en", targetLang: "de", context: "", attempt: 0, instructions: "Translate from en into de." };
      const first = await provider(request);
      assert.equal(typeof first === "string" ? first : first.translations, "[de] hELLO");
      const error = await provider(request).then(() => null, (e) => e);
      assert.ok(error, "the second request fails");
      assert.equal(error.status, 429);
      assert.equal(error.quota, "daily");
      assert.ok(error.retryAfterMs > 23 * 3600_000 && error.retryAfterMs <= 24 * 3600_000, `retryAfterMs ${error.retryAfterMs}`);
      if (dailyStyle === "gemini") assert.match(error.message, /You exceeded your current quota/);
    });
  }

  test("the Gemini style is Gemini's body: an array, RESOURCE_EXHAUSTED, a per-day QuotaFailure and a RetryInfo", async (t) => {
    const { GEMINI_DAILY_QUOTA_ID: quotaId } = await mod();
    const mock = await start(t, { dailyStyle: "gemini", models: { flash: { requestsPerDay: 1 } } });
    await chat(mock, { user: "one", model: "flash" });
    const spent = await chat(mock, { user: "two", model: "flash" });
    assert.equal(spent.status, 429);
    assert.ok(Array.isArray(spent.json));
    const { error } = spent.json[0];
    assert.equal(error.status, "RESOURCE_EXHAUSTED");
    const failure = error.details.find((d) => d["@type"].endsWith("google.rpc.QuotaFailure"));
    assert.equal(failure.violations[0].quotaId, quotaId);
    assert.match(quotaId, /PerDay/);
    assert.equal(failure.violations[0].quotaDimensions.model, "flash");
    const retry = error.details.find((d) => d["@type"].endsWith("google.rpc.RetryInfo"));
    assert.match(retry.retryDelay, /^\d+s$/);
  });

  test("a model that cannot batch answers a batch as plain paragraphs, without markers; single texts as usual", async (t) => {
    const mock = await start(t, { models: { tiny: { canBatch: false } } });
    const system = `${SYSTEM_SINGLE}\n\nThe text holds 2 segments, each between its own pair of markers, from <s21>…</s21> to <s58>…</s58>.`;
    const user = "<s21>Alpha one</s21>\n<s58>Beta two</s58>";
    const plain = await chat(mock, { system, user, model: "tiny" });
    assert.equal(plain.content, "[de] aLPHA ONE\n\n[de] bETA TWO");
    const able = await chat(mock, { system, user });
    assert.equal(able.content, "<s21>[de] aLPHA ONE</s21>\n<s58>[de] bETA TWO</s58>");
    assert.equal((await chat(mock, { system: SYSTEM_SINGLE, user: "Gamma", model: "tiny" })).content, "[de] gAMMA");
    assert.equal(mock.stats().unbatched, 1);
  });

  test("/v1/models lists the configured models; invalid model settings are refused", async (t) => {
    const mock = await start(t, { models: { "mock-translator-lite": { requestsPerDay: 5 } } });
    const list = await (await fetch(`${mock.url}/models`)).json();
    assert.deepEqual(list.data.map((m) => m.id), ["mock-translator", "mock-translator-lite"]);
    await assert.rejects(startMockProvider({ models: { a: { requestsPerDay: -1 } } }), /models/);
    await assert.rejects(startMockProvider({ models: { a: { canBatch: "no" } } }), /models/);
    await assert.rejects(startMockProvider({ models: { a: { perDay: 3 } } }), /models/);
    await assert.rejects(startMockProvider({ dailyStyle: "anthropic" }), /dailyStyle/);
    assert.throws(() => mock.setOptions({ dayMs: 0 }), /dayMs/);
  });

  test("the command line sets a model's daily quota and a model that cannot batch", async (t) => {
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, [
      join(repo, "extension-demo/mock-provider.mjs"),
      "--port", "0", "--rpm", "0", "--requests-per-day", "flash=1", "--cannot-batch", "tiny", "--daily-style", "gemini",
    ]);
    t.after(() => child.kill());
    const url = await new Promise((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk) => {
        out += chunk;
        const match = /listening on (\S+)/.exec(out);
        if (match) resolve(match[1]);
      });
      child.on("exit", (code) => reject(new Error(`the mock exited with ${code}`)));
    });
    const mock = { url };
    assert.equal((await chat(mock, { user: "one", model: "flash" })).status, 200);
    const spent = await chat(mock, { user: "two", model: "flash" });
    assert.equal(spent.status, 429);
    assert.equal(spent.json[0].error.status, "RESOURCE_EXHAUSTED");
    const system = `${SYSTEM_SINGLE}\n\nMarkers from <s1>…</s1> to <s2>…</s2>.`;
    assert.equal((await chat(mock, { system, user: "<s1>A</s1>\n<s2>B</s2>", model: "tiny" })).content, "[de] a\n\n[de] b");
  });

  // The package's fallback providers over HTTP: one pacer, two models behind one
  // endpoint, each its own providerId, routed by routeProviders.
  async function fallbackPacer(t, mock, { second = "mock-translator-lite", onEvent } = {}) {
    const { default: init, BatchPacer, openAIProvider, routeProviders } = await import("batch-pacer");
    await init();
    const route = routeProviders({
      first: openAIProvider({ baseUrl: mock.url, apiKey: "", model: "mock-translator" }),
      second: openAIProvider({ baseUrl: mock.url, apiKey: "", model: second }),
    });
    const pacer = new BatchPacer(route, {
      rate: 1000,
      capacity: 1000,
      batchDelayMs: 5,
      baseRetryDelayMs: 1,
      maxItemsPerBatch: 4,
      fallbackProviders: { first: "second" },
      ...(onEvent ? { onEvent } : {}),
    });
    t.after(() => pacer.dispose());
    return { pacer };
  }

  test("BatchPacer with fallbackProviders: the first model's daily quota runs out halfway, every paragraph is translated, the rest by the second model", async (t) => {
    const mock = await start(t, { models: { "mock-translator": { requestsPerDay: 3 } } });
    const moves = [];
    const { pacer } = await fallbackPacer(t, mock, { onEvent: (e) => e.type === "providerFallback" && moves.push(e) });
    const paragraphs = Array.from({ length: 24 }, (_, i) => `Paragraph ${i} of the page`);
    const translate = (text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "first" });
    // The first half while the quota lasts, then the second half.
    const firstHalf = await Promise.all(paragraphs.slice(0, 12).map(translate));
    const secondHalf = await Promise.all(paragraphs.slice(12).map(translate));
    assert.deepEqual([...firstHalf, ...secondHalf], paragraphs.map((x) => pseudoTranslate(x, "de")));
    const byModel = mock.stats().byModel;
    assert.equal(byModel["mock-translator"].ok, 3, "the first model answered its whole quota");
    assert.ok(byModel["mock-translator"].dailyLimited >= 1);
    assert.equal(byModel["mock-translator"].segments + byModel["mock-translator-lite"].segments, paragraphs.length, "each paragraph translated once");
    assert.ok(byModel["mock-translator-lite"].segments >= 12, "the second half by the second model");
    assert.equal(pacer.stats().fallbackItems, byModel["mock-translator-lite"].segments);
    assert.ok(moves.length > 0 && moves.every((m) => m.from === "first" && m.to === "second"));
    assert.equal(pacer.stats().failed, 0);
  });

  test("BatchPacer with a fallback model that cannot batch: its learned batch limit drops, the first model's stays, no paragraph fails", async (t) => {
    const mock = await start(t, { models: { "mock-translator": { requestsPerDay: 1 }, tiny: { canBatch: false } } });
    const limits = [];
    const { pacer } = await fallbackPacer(t, mock, { second: "tiny", onEvent: (e) => e.type === "batchLimit" && limits.push(e) });
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Sentence number ${i}`);
    const out = await Promise.all(paragraphs.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "first" })));
    assert.deepEqual(out, paragraphs.map((x) => pseudoTranslate(x, "de")));
    assert.ok(limits.length > 0 && limits.every((e) => e.providerId === "second"), JSON.stringify(limits));
    const learned = pacer.snapshot().providers.find((p) => p.providerId === "second")?.batchLimit;
    assert.ok(learned < 4, `learned ${learned}`);
    assert.equal(learned, limits.at(-1).limit, "the snapshot keeps the last limit announced");
    assert.equal(pacer.snapshot().providers.find((p) => p.providerId === "first")?.batchLimit, undefined);
    assert.ok(mock.stats().unbatched > 0);
  });
});
