// Every input the pacer accepts can settle, through the packed package: a blank answer
// is no translation, a model that thinks forever is cut by the length cap, a restored
// snapshot is taken only as far as the pacer could have written it, token debt is
// bounded, a store that never answers costs a miss, and providers that nothing needs
// any more are forgotten.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer, openAIProvider } from "batch-pacer";

import { deltaChunk, singleRequest, sse } from "./chat-server.mjs";
import { assertPacerError, flushMicrotasks, item, rejection, setup, thrown } from "./helpers.mjs";

const MINUTE = 60_000;

/** An ok response streaming `body` as server-sent events, as fetch returns one. */
function eventStream(body) {
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

/** The bytes of a chat completion's event stream whose deltas are `deltas`, then its end. */
function completion(deltas) {
  let wire = sse(deltaChunk({ role: "assistant", content: "" }));
  for (const delta of deltas) wire += sse(deltaChunk(delta));
  return wire + sse(deltaChunk({}, { finish_reason: "stop" })) + sse("[DONE]");
}

describe("a blank answer is no translation", () => {
  const blanks = {
    "an empty string": async () => "",
    "white space and a line break": async () => "   \n",
    "{ translations: '' }": async () => ({ translations: "" }),
    "an empty stream": () => (async function* () {})(),
    "a stream of blank strings": () =>
      (async function* () {
        yield " ";
        yield "\n";
      })(),
  };
  for (const [name, answer] of Object.entries(blanks)) {
    test(`a single reply of ${name} is a failed call, retried, then provider_error`, async (t) => {
      const { clock, calls, send } = setup(t, { answer, maxRetries: 2, baseRetryDelayMs: 10 });
      const state = send(item("Good morning, everyone."));
      await clock.tickAsync(5_000);
      assert.equal(state.status, "rejected", `settled: ${state.status} ${JSON.stringify(state.value)}`);
      assertPacerError(state.reason, "provider_error");
      assert.match(state.reason.message, /blank answer/);
      assert.equal(calls.length, 3, "the first try and maxRetries retries");
    });
  }

  test("a good answer after a blank one resolves the item", async (t) => {
    const { clock, calls, send } = setup(t, { answer: async (r, i) => (i === 0 ? "" : `«${r.text}»`), baseRetryDelayMs: 10 });
    const state = send(item("Hello"));
    await clock.tickAsync(1_000);
    assert.equal(state.value, "«Hello»");
    assert.equal(calls.length, 2);
  });

  test("a blank text still resolves to itself without a call", async (t) => {
    const { clock, calls, send } = setup(t, { answer: async () => "" });
    const state = send(item("  \n"));
    await clock.tickAsync(1_000);
    assert.equal(state.value, "  \n");
    assert.equal(calls.length, 0);
  });

  test("openAIProvider's stream whose delta.content is a number ends blank: a failed call, never \"5\"", async (t) => {
    let requests = 0;
    const provider = openAIProvider({
      baseUrl: "http://127.0.0.1:9/v1",
      model: "m",
      stream: true,
      fetch: async () => {
        requests++;
        return eventStream(completion([{ content: 5 }, { content: { text: "x" } }]));
      },
    });
    const pacer = new BatchPacer(provider, { maxRetries: 1, baseRetryDelayMs: 0 });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate(item("Good morning.")));
    assertPacerError(err, "provider_error");
    assert.match(err.message, /blank answer/);
    assert.equal(requests, 2);
    // The provider itself hands on no text for such deltas.
    const values = [];
    for await (const value of await provider(singleRequest("x"))) values.push(value);
    assert.equal(values.filter((v) => typeof v === "string").join(""), "");
  });
});

describe("a model that thinks forever is cut by the length cap", () => {
  test("a stream that opens <think> and reasons on is cut, released, and the item rejects", async (t) => {
    let values = 0;
    let released = 0;
    const answer = () =>
      (async function* () {
        try {
          yield "<think>";
          for (;;) {
            values++;
            yield "and then I should consider the article once more, ";
          }
        } finally {
          released++;
        }
      })();
    const pacer = new BatchPacer(answer, { maxRetries: 1, baseRetryDelayMs: 0 });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate(item("Good morning.")));
    assertPacerError(err, "provider_error");
    assert.match(err.message, /did not end within its bound/);
    assert.equal(released, 2, "each try's stream was released");
    // Five times the cap of one short text, per try: thousands of values, not millions.
    assert.ok(values < 10_000, `${values} values were read`);
  });

  test("a stream of empty values is cut too", async () => {
    let released = false;
    const answer = () =>
      (async function* () {
        try {
          for (;;) yield "";
        } finally {
          released = true;
        }
      })();
    const pacer = new BatchPacer(answer, { maxRetries: 0 });
    const err = await rejection(pacer.translate(item("Good morning.")));
    pacer.dispose();
    assertPacerError(err, "provider_error");
    assert.ok(released);
  });

  test("openAIProvider's reasoning_content deltas without end count toward the cap", async (t) => {
    let reads = 0;
    let cancelled = 0;
    const encoder = new TextEncoder();
    const provider = openAIProvider({
      baseUrl: "http://127.0.0.1:9/v1",
      model: "m",
      stream: true,
      fetch: async () => {
        let first = true;
        const body = new ReadableStream({
          pull(controller) {
            reads++;
            const delta = first ? { role: "assistant", content: null } : { reasoning_content: "Let me think about this. <s1>Draft</s1> " };
            first = false;
            controller.enqueue(encoder.encode(sse(deltaChunk(delta))));
          },
          cancel() {
            cancelled++;
          },
        });
        return eventStream(body);
      },
    });
    const pacer = new BatchPacer(provider, { maxRetries: 1, baseRetryDelayMs: 0 });
    t.after(() => pacer.dispose());
    const err = await rejection(pacer.translate(item("Good morning.")));
    assertPacerError(err, "provider_error");
    assert.match(err.message, /did not end within its bound/);
    // The last try's connection closes as its stream is released, right after.
    await flushMicrotasks();
    assert.equal(cancelled, 2, "each try's connection was closed");
    assert.ok(reads < 10_000, `${reads} reads`);
  });

  test("openAIProvider forwards reasoning between <think> tags that no draft can close", async () => {
    const provider = openAIProvider({
      baseUrl: "http://127.0.0.1:9/v1",
      model: "m",
      stream: true,
      fetch: async () =>
        eventStream(
          completion([
            { reasoning_content: "A draft </think><s1>Entwurf</s1>" },
            { reasoning: " more" },
            { content: "Guten Morgen." },
          ]),
        ),
    });
    const pacer = new BatchPacer(provider);
    const translation = await pacer.translate(item("Good morning."));
    pacer.dispose();
    assert.equal(translation, "Guten Morgen.");
  });
});

/** A snapshot as `snapshot()` writes one, of provider p1 with `provider` fields. */
function snapshotOf(provider = {}) {
  return {
    version: 1,
    wallTime: Date.now(),
    tokens: 60,
    providers: [{ providerId: "p1", pausedForMs: 0, adaptiveRate: null, adaptiveCeiling: 0, ...provider }],
  };
}

describe("a restored snapshot is taken only as far as the pacer could have written it", () => {
  test("a pause of 1e12 ms holds at most 5 minutes", async (t) => {
    const { clock, calls, send } = setup(t, { restore: snapshotOf({ pausedForMs: 1e12 }) });
    const state = send(item("Hello", { llm: false }));
    await clock.tickAsync(5 * MINUTE + 1_000);
    assert.equal(state.value, "HELLO");
    assert.ok(calls[0].at >= 4 * MINUTE, `the pause held: first call at ${calls[0].at} ms`);
  });

  test("an adaptive rate of 1e-300 runs at its floor, one call a minute", async (t) => {
    const { clock, calls, send } = setup(t, { restore: snapshotOf({ adaptiveRate: 1e-300, adaptiveCeiling: 1e-300 }) });
    const states = ["a", "b", "c"].map((text) => send(item(text, { llm: false })));
    await clock.tickAsync(3 * MINUTE);
    assert.deepEqual(
      states.map((s) => s.value),
      ["A", "B", "C"],
    );
    assert.equal(calls.length, 3);
  });

  test("a daily block with a reset a year away holds at most a day", async (t) => {
    const block = { blockedForMs: 365 * 24 * 60 * MINUTE, resetKnown: true, message: "the daily quota is spent" };
    const { clock, send } = setup(t, { restore: snapshotOf({ dailyBlock: block }) });
    const during = send(item("Hello", { llm: false }));
    await clock.tickAsync(1_000);
    assertPacerError(during.reason, "provider_error", 429);
    await clock.tickAsync(24 * 60 * MINUTE);
    const after = send(item("Hello again", { llm: false }));
    await clock.tickAsync(1_000);
    assert.equal(after.value, "HELLO AGAIN");
  });

  const refused = {
    "an unknown field": [snapshotOf({ pausedForMS: 5 }), /restore\.providers\[\]\.pausedForMS is not a field of a snapshot/],
    "an unknown top-level field": [{ ...snapshotOf(), extra: true }, /restore\.extra is not a field of a snapshot/],
    "a NaN pause": [snapshotOf({ pausedForMs: NaN }), /restore\.providers\[\]\.pausedForMs must be a finite number >= 0 \(got NaN\)/],
    "an infinite pause": [snapshotOf({ pausedForMs: Infinity }), /pausedForMs must be a finite number >= 0 \(got Infinity\)/],
    "a negative pause": [snapshotOf({ pausedForMs: -1 }), /pausedForMs must be a finite number >= 0 \(got -1\)/],
    "a message that is not a string": [
      snapshotOf({ dailyBlock: { blockedForMs: 1000, resetKnown: true, message: 5 } }),
      /restore\.providers\[\]\.dailyBlock\.message must be a string \(got 5\)/,
    ],
    "a NaN reset": [
      snapshotOf({ limits: { requests: { remaining: 0, whole: 10, resetMs: NaN } } }),
      /restore\.providers\[\]\.limits\.requests\.resetMs must be a finite number >= 0 \(got NaN\)/,
    ],
  };
  for (const [name, [snapshot, message]] of Object.entries(refused)) {
    test(`a snapshot with ${name} is invalid_options naming the field`, () => {
      const err = thrown(() => new BatchPacer(async (r) => r.text, { restore: snapshot }), "invalid_options");
      assert.match(err.message, message);
      assert.equal(err.option, "restore");
    });
  }

  test("what snapshot() writes is still accepted, through JSON", async (t) => {
    const { clock, pacer, send } = setup(t, {
      answer: async (r, i) => {
        if (i === 0) throw Object.assign(new Error("HTTP 429"), { status: 429, retryAfterMs: 30_000 });
        return r.text;
      },
    });
    send(item("x", { llm: false }));
    await clock.tickAsync(100);
    const saved = JSON.parse(JSON.stringify(pacer.snapshot()));
    assert.ok(saved.providers[0].pausedForMs > 0);
    const restored = new BatchPacer(async (r) => r.text, { restore: saved });
    restored.dispose();
  });
});

describe("no input waits for ever", () => {
  test("an estimateTokens of 1e12 under tokensPerMinute leaves one budget of debt, not a debt for ever", async (t) => {
    const { clock, calls, send } = setup(t, { tokensPerMinute: 6000, estimateTokens: () => 1e12 });
    const states = ["a", "b", "c"].map((text) => send(item(text, { llm: false })));
    await clock.tickAsync(5 * MINUTE);
    assert.deepEqual(
      states.map((s) => s.value),
      ["A", "B", "C"],
    );
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i].at);
    assert.ok(gaps.every((gap) => gap <= 2 * MINUTE + 100), `gaps ${gaps}`);
  });

  test("a cache store whose get never settles is a miss after 5 s with timeoutMs: 0", async (t) => {
    const cache = { get: () => new Promise(() => {}), set: () => {} };
    const { clock, calls, events, send } = setup(t, { cache, timeoutMs: 0 });
    const state = send(item("Hello"));
    await clock.tickAsync(4_900);
    assert.equal(state.status, "pending");
    await clock.tickAsync(1_000);
    assert.equal(state.value, "HELLO");
    assert.equal(calls.length, 1);
    const failure = events.find((e) => e.type === "cacheError");
    assert.equal(failure?.operation, "get");
    assert.match(failure.message, /5000 ms/);
  });
});

describe("providers that nothing needs any more are forgotten", () => {
  /** Module memory after `count` items, each for a providerId of its own, all settled. */
  async function round(pacer, clock, from, count) {
    const states = [];
    for (let i = from; i < from + count; i++) {
      states.push(pacer.translate(item(`text ${i}`, { providerId: `site-${i}`, llm: false })));
    }
    await clock.tickAsync(1_000);
    const values = await Promise.all(states);
    assert.equal(values.length, count);
    return process.memoryUsage().external;
  }

  test("rounds of 5,000 new providerIds do not grow the module's memory round after round", async (t) => {
    const { clock, pacer } = setup(t, { rate: 1e9, capacity: 1e9, batchDelayMs: 0 });
    await round(pacer, clock, 0, 5_000);
    const afterFirst = await round(pacer, clock, 5_000, 5_000);
    let last = afterFirst;
    for (let r = 2; r < 6; r++) last = await round(pacer, clock, r * 5_000, 5_000);
    // Kept for good, 20,000 providers at about 0.5 KB each grew it by about 10 MB.
    assert.ok(last - afterFirst < 2 ** 20, `four more rounds grew memory by ${((last - afterFirst) / 2 ** 20).toFixed(1)} MiB`);
    // Nothing a provider needed was lost: a provider met before is served again.
    assert.equal(await pacer.translate(item("again", { providerId: "site-3", llm: false })), "AGAIN");
  });
});
