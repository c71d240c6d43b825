// PacerError's shape, and exactly-once settlement whatever the provider does.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer, PacerError } from "batch-pacer";
import {
  setup,
  item,
  httpError,
  assertPacerError,
  thrown,
  virtualTime,
  track,
  disposeAfter,
  assertNoSecondSettlement,
} from "./helpers.mjs";

const CODES = [
  "not_initialized",
  "invalid_options",
  "invalid_input",
  "provider_error",
  "timeout",
  "count_mismatch",
  "aborted",
  "disposed",
];

describe("PacerError", () => {
  test("extends Error, name PacerError", () => {
    assert.equal(typeof PacerError, "function");
    assert.ok(PacerError.prototype instanceof Error);
    const err = thrown(() => new BatchPacer(async () => "", { rate: 0 }));
    assert.ok(err instanceof PacerError);
    assert.ok(err instanceof Error);
    assert.equal(err.name, "PacerError");
    assert.equal(typeof err.message, "string");
    assert.ok(err.message.length > 0);
    assert.equal(typeof err.stack, "string");
    assert.match(String(err), /^PacerError: /);
  });

  test("PacerError.codes lists the contract's codes", () => {
    assert.ok(Array.isArray(PacerError.codes));
    for (const code of CODES) assert.ok(PacerError.codes.includes(code), code);
  });

  test("provider_error carries status and the original error as cause", async (t) => {
    const original = httpError(401, { retryAfterMs: undefined });
    const { clock, send } = setup(t, { answer: async () => { throw original; } });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    const err = s.reason;
    assertPacerError(err, "provider_error", 401);
    assert.equal(err.cause, original);
    assert.equal(typeof err.message, "string");
  });

  test("provider_error without an HTTP status has no status", async (t) => {
    const original = new TypeError("fetch failed");
    const { clock, send } = setup(t, { maxRetries: 0, answer: async () => { throw original; } });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assertPacerError(s.reason, "provider_error");
    assert.equal(s.reason.status, undefined);
    assert.equal(s.reason.cause, original);
  });

  test("every code a test can provoke is a PacerError with that code", async (t) => {
    const seen = new Set();
    const note = (err) => {
      assert.ok(err instanceof PacerError);
      assert.equal(err.name, "PacerError");
      assert.ok(CODES.includes(err.code), err.code);
      seen.add(err.code);
    };
    note(thrown(() => new BatchPacer(async () => "", { nope: 1 })));
    const { clock, pacerClock } = virtualTime();
    const pacer = new BatchPacer(
      (r) => {
        if (r.text === "hang") return new Promise(() => {});
        // 400, not a settings error (401/403/404): those reject the provider's whole
        // queue, and the items below must each end their own way.
        if (r.text === "fail") return Promise.reject(httpError(400));
        return Promise.resolve("one");
      },
      { clock: pacerClock, timeoutMs: 10, timeoutPerCharacterMs: 0, maxRetries: 0, maxBatchRetries: 0, fallbackToIndividual: false, maxItemsPerBatch: 2 },
    );
    const states = [
      track(pacer.translate({ text: 1 })),
      track(pacer.translate(item("hang", { llm: false }))),
      track(pacer.translate(item("fail", { llm: false }))),
      track(pacer.translate(item("m1"))),
      track(pacer.translate(item("m2"))),
      track(pacer.translate(item("ab", { signal: AbortSignal.abort() }))),
    ];
    const last = track(pacer.translate(item("never", { context: "x" })));
    await clock.tickAsync(50);
    pacer.dispose();
    await clock.tickAsync(0);
    for (const s of [...states, last]) note(s.reason);
    assert.deepEqual(
      [...seen].sort(),
      ["aborted", "count_mismatch", "disposed", "invalid_input", "invalid_options", "provider_error", "timeout"],
    );
  });
});

/** A 5-million-character reply: the module's input buffer grows for it, then shrinks. */
const HUGE = "y".repeat(5_000_000);

describe("every translate promise settles exactly once", () => {
  /** A provider behaviour, and whether the item should resolve with a value. */
  const behaviours = {
    "throws synchronously": { provider: () => { throw new Error("sync"); }, expect: "provider_error" },
    "throws a non-Error": { provider: () => { throw 42; }, expect: "provider_error" },
    "returns a plain string (not a promise)": { provider: (r) => `plain ${r.text}`, expect: "plain x" },
    "resolves a number": { provider: async () => 7, expect: "provider_error" },
    "resolves an object of no reply form": { provider: async () => ({ translation: ["x"] }), expect: "provider_error" },
    // An object of strings is a reply keyed by id: one without the item's id proves nothing.
    "resolves an object without the item's id": { provider: async () => ({ translation: "x" }), expect: "count_mismatch" },
    "resolves null": { provider: async () => null, expect: "provider_error" },
    "resolves undefined": { provider: async () => undefined, expect: "provider_error" },
    "returns nothing (undefined, synchronously)": { provider: () => undefined, expect: "provider_error" },
    "never settles (with timeoutMs)": { provider: () => new Promise(() => {}), expect: "timeout" },
    "returns a thenable": {
      provider: (r) => ({ then: (resolve) => resolve(`thenable ${r.text}`) }),
      expect: "thenable x",
    },
    "returns a thenable that resolves twice and then rejects": {
      provider: (r) => ({
        then(resolve, reject) {
          resolve(`first ${r.text}`);
          resolve("second");
          reject(new Error("third"));
        },
      }),
      expect: "first x",
    },
    "returns a thenable whose then throws": {
      provider: () => ({ then() { throw new Error("then exploded"); } }),
      expect: "provider_error",
    },
    "returns a promise whose constructor getter throws": {
      provider: () => {
        const promise = new Promise(() => {});
        Object.defineProperty(promise, "constructor", { get() { throw new Error("constructor exploded"); } });
        return promise;
      },
      expect: "provider_error",
    },
    // Far past the length cap of a reply to "x": read as far as the cap, as truncated,
    // which for a single text is a failed call (the answer did not end within its bound).
    "returns a huge string": { provider: () => HUGE, expect: "provider_error" },
    "rejects with null": { provider: () => Promise.reject(null), expect: "provider_error" },
    "rejects with undefined": { provider: () => Promise.reject(undefined), expect: "provider_error" },
  };

  for (const [name, { provider, expect }] of Object.entries(behaviours)) {
    test(`a provider that ${name}`, async (t) => {
      const { clock, pacerClock } = virtualTime();
      let calls = 0;
      const pacer = new BatchPacer((r) => {
        calls++;
        return provider(r);
      }, { clock: pacerClock, timeoutMs: 1000, maxRetries: 1, baseRetryDelayMs: 10 });
      disposeAfter(t, pacer);
      const states = [track(pacer.translate(item("x", { llm: false })))];
      await clock.tickAsync(30_000);
      for (const s of states) {
        assert.equal(s.settlements, 1, "settled once");
        if (expect === "provider_error" || expect === "timeout" || expect === "count_mismatch") {
          assert.equal(s.status, "rejected", `expected ${expect}, got ${s.value}`);
          assertPacerError(s.reason, expect);
        } else {
          assert.equal(s.status, "fulfilled", s.reason && s.reason.message);
          assert.equal(s.value, expect);
        }
      }
      assert.ok(calls >= 1);
      const stats = pacer.stats();
      assert.equal(stats.pending, 0);
      assert.equal(stats.inFlight, 0);
      assertNoSecondSettlement(pacer);
    });

    test(`a batch whose provider ${name} settles each item once`, async (t) => {
      const { clock, pacerClock } = virtualTime();
      const pacer = new BatchPacer(provider, {
        clock: pacerClock,
        timeoutMs: 1000,
        maxRetries: 1,
        maxBatchRetries: 1,
        baseRetryDelayMs: 10,
      });
      disposeAfter(t, pacer);
      const states = ["a", "b", "c"].map((x) => track(pacer.translate(item(x))));
      await clock.tickAsync(60_000);
      for (const s of states) {
        assert.equal(s.settlements, 1);
        assert.notEqual(s.status, "pending");
        if (s.status === "rejected") assert.ok(s.reason instanceof PacerError);
        else assert.equal(typeof s.value, "string");
      }
      assertNoSecondSettlement(pacer);
    });
  }

  test("a provider that resolves after it was timed out and retried: the first good answer wins once", async (t) => {
    const resolvers = [];
    const { clock, send } = setup(t, {
      timeoutMs: 100,
      maxRetries: 1,
      baseRetryDelayMs: 10,
      answer: () => new Promise((resolve) => resolvers.push(resolve)),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(150);
    assert.equal(resolvers.length, 2, "timed out once, retried");
    resolvers[1]("from the retry");
    await clock.tickAsync(0);
    resolvers[0]("from the first try, too late");
    await clock.tickAsync(1000);
    assert.equal(s.settlements, 1);
    assert.equal(s.value, "from the retry");
  });

  test("a provider that re-enters the pacer from inside its call", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const inner = [];
    let pacer;
    pacer = new BatchPacer((r) => {
      if (r.text === "outer") {
        inner.push(track(pacer.translate(item("inner", { llm: false }))));
        pacer.stats();
      }
      return Promise.resolve(`t:${r.text}`);
    }, { clock: pacerClock });
    disposeAfter(t, pacer);
    const outer = track(pacer.translate(item("outer", { llm: false })));
    await clock.tickAsync(1000);
    assert.equal(outer.value, "t:outer");
    assert.equal(inner.length, 1);
    assert.equal(inner[0].settlements, 1);
    assert.notEqual(inner[0].status, "pending");
  });

  test("an onEvent that disposes the pacer settles everything once", async (t) => {
    const { clock, pacerClock } = virtualTime();
    let pacer;
    pacer = new BatchPacer(async () => { throw httpError(503); }, {
      clock: pacerClock,
      baseRetryDelayMs: 10,
      onEvent: () => pacer.dispose(),
    });
    disposeAfter(t, pacer);
    const states = ["a", "b"].map((x) => track(pacer.translate(item(x, { llm: false }))));
    await clock.tickAsync(5000);
    for (const s of states) {
      assert.equal(s.settlements, 1);
      assert.equal(s.status, "rejected");
      assert.ok(s.reason instanceof PacerError);
    }
  });
});
