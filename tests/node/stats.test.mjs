// pacer.stats() and onEvent.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer } from "batch-pacer";
import { setup, item, deferred, httpError, virtualTime, track } from "./helpers.mjs";

const COUNTERS = [
  "items",
  "cacheHits",
  "dedupHits",
  "providerCalls",
  "batchCalls",
  "retries",
  "countMismatches",
  "fallbacks",
  "rateLimited",
  "failed",
  "aborted",
];
const GAUGES = ["queued", "inFlight"];
const ADDITIONS = ["succeeded", "disposed", "pending"];

function assertInvariant(stats) {
  assert.equal(
    stats.items,
    stats.succeeded + stats.failed + stats.aborted + stats.disposed + stats.pending,
    `items = succeeded + failed + aborted + disposed + pending: ${JSON.stringify(stats)}`,
  );
}

describe("stats()", () => {
  test("a plain object with every counter and gauge, all 0 at first", (t) => {
    const { pacer } = setup(t);
    const stats = pacer.stats();
    assert.equal(Object.getPrototypeOf(stats), Object.prototype);
    for (const name of [...COUNTERS, ...GAUGES, ...ADDITIONS]) {
      assert.equal(stats[name], 0, name);
    }
  });

  test("returns a snapshot, not a live view", async (t) => {
    const { pacer, clock, send } = setup(t);
    const before = pacer.stats();
    send(item("x"));
    await clock.tickAsync(100);
    assert.equal(before.items, 0);
    assert.equal(pacer.stats().items, 1);
  });

  test("items counts accepted translate calls (cache hits, dedups and blank text included)", async (t) => {
    const { pacer, clock, send } = setup(t);
    send(item("a"));
    send(item("a"));
    send(item(" "));
    await clock.tickAsync(100);
    send(item("a"));
    await clock.tickAsync(100);
    const stats = pacer.stats();
    assert.equal(stats.items, 4);
    assert.equal(stats.dedupHits, 1);
    assert.equal(stats.cacheHits, 1);
    assert.equal(stats.succeeded, 4);
    assertInvariant(stats);
  });

  test("a retry is not a new item; providerCalls includes retries", async (t) => {
    let n = 0;
    const { pacer, clock, send } = setup(t, {
      baseRetryDelayMs: 10,
      answer: async (r) => {
        if (n++ < 2) throw httpError(503);
        return r.texts.map((x) => x);
      },
    });
    send(item("a"));
    send(item("b"));
    await clock.tickAsync(5000);
    const stats = pacer.stats();
    assert.equal(stats.items, 2);
    assert.equal(stats.providerCalls, 3);
    assert.equal(stats.retries, 2);
    assert.equal(stats.batchCalls, 3, "the retries of a batch are batch calls");
    assert.equal(stats.failed, 0);
    assert.equal(stats.succeeded, 2);
    assertInvariant(stats);
  });

  test("batchCalls counts calls carrying more than one text", async (t) => {
    const { pacer, clock, send } = setup(t);
    send(item("a"));
    send(item("b"));
    send(item("c", { llm: false }));
    send(item("d", { context: "alone" }));
    await clock.tickAsync(1000);
    const stats = pacer.stats();
    assert.equal(stats.providerCalls, 3);
    assert.equal(stats.batchCalls, 1);
  });

  test("gauges: queued items and calls in flight", async (t) => {
    const holds = [];
    const { pacer, clock, send } = setup(t, {
      rate: 1,
      capacity: 2,
      answer: () => {
        const d = deferred();
        holds.push(d);
        return d.promise;
      },
    });
    for (let i = 0; i < 5; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    let stats = pacer.stats();
    assert.equal(stats.inFlight, 2);
    assert.equal(stats.queued, 3);
    assert.equal(stats.pending, 5);
    holds[0].resolve("x");
    await clock.tickAsync(0);
    stats = pacer.stats();
    assert.equal(stats.inFlight, 1);
    assert.equal(stats.queued, 3);
    await clock.tickAsync(1000);
    stats = pacer.stats();
    assert.equal(stats.inFlight, 2);
    assert.equal(stats.queued, 2);
    for (const d of holds) d.resolve("x");
    await clock.tickAsync(0);
    await clock.tickAsync(5000);
    for (const d of holds) d.resolve("x");
    await clock.tickAsync(0);
    stats = pacer.stats();
    assert.equal(stats.inFlight, 0);
    assert.equal(stats.queued, 0);
    assert.equal(stats.pending, 0);
    assert.equal(stats.succeeded, 5);
  });

  test("a batch in flight is one call; its items are no longer queued", async (t) => {
    const hold = deferred();
    const { pacer, clock, send } = setup(t, { answer: () => hold.promise });
    for (const x of ["a", "b", "c", "d", "e"]) send(item(x));
    await clock.tickAsync(0);
    const stats = pacer.stats();
    assert.equal(stats.inFlight, 1);
    assert.equal(stats.queued, 1);
    hold.resolve(["1", "2", "3", "4"]);
  });

  test("failed, aborted, rateLimited, countMismatches and fallbacks", async (t) => {
    const { pacer, clock, send } = setup(t, {
      maxRetries: 0,
      maxBatchRetries: 0,
      adaptiveRate: false,
      answer: async (r, i) => {
        if (r.text === "bad") throw httpError(400);
        if (r.text === "limited" && r.attempt === 0) throw httpError(429, { retryAfterMs: 10 });
        if (r.isBatch) return "no segment markers at all";
        return r.text;
      },
    });
    const controller = new AbortController();
    send(item("bad", { llm: false }));
    send(item("limited", { llm: false }));
    send(item("x", { context: "pair" }));
    send(item("y", { context: "pair" }));
    send(item("gone", { context: "abort", signal: controller.signal }));
    controller.abort();
    await clock.tickAsync(5000);
    const stats = pacer.stats();
    assert.equal(stats.failed, 1);
    assert.equal(stats.aborted, 1);
    assert.equal(stats.rateLimited, 1);
    assert.equal(stats.countMismatches, 1);
    assert.equal(stats.fallbacks, 1, "one batch sent again one item at a time");
    assert.equal(stats.items, 5);
    assert.equal(stats.succeeded, 3);
    assertInvariant(stats);
  });

  test("invalid items are not counted as items", async (t) => {
    const { pacer, clock } = setup(t);
    track(pacer.translate({ text: 1 }));
    await clock.tickAsync(0);
    assert.equal(pacer.stats().items, 0);
  });
});

describe("onEvent", () => {
  test("receives plain objects with a string type", async (t) => {
    let n = 0;
    const { clock, send, events } = setup(t, {
      baseRetryDelayMs: 10,
      timeoutMs: 100,
      answer: (r) => {
        n++;
        if (n === 1) return Promise.reject(httpError(429, { retryAfterMs: 50 }));
        if (n === 2) return new Promise(() => {});
        if (n === 3) return Promise.resolve("one only");
        return Promise.resolve(r.isBatch ? r.texts : r.text);
      },
    });
    send(item("a"));
    send(item("b"));
    await clock.tickAsync(60_000);
    assert.ok(events.length > 0);
    const types = new Set(events.map((e) => e.type));
    for (const type of ["rateLimited", "adaptiveRate", "retry", "timeout", "countMismatch"]) {
      assert.ok(types.has(type), `a ${type} event in ${[...types]}`);
    }
    for (const e of events) {
      assert.equal(typeof e.type, "string");
      assert.equal(e.providerId, "p1");
    }
  });

  test("the objects given to onEvent are plain and own their fields", async (t) => {
    const raw = [];
    const { clock, pacerClock } = virtualTime();
    const pacer = new BatchPacer(async () => { throw httpError(503); }, {
      clock: pacerClock,
      maxRetries: 1,
      baseRetryDelayMs: 10,
      onEvent: (e) => raw.push(e),
    });
    t.after(() => pacer.dispose());
    track(pacer.translate(item("x", { llm: false })));
    await clock.tickAsync(1000);
    assert.ok(raw.length >= 1);
    for (const e of raw) {
      assert.equal(Object.getPrototypeOf(e), Object.prototype, "a plain object");
      assert.ok(Object.hasOwn(e, "type"));
      assert.doesNotThrow(() => JSON.stringify(e));
    }
    const retry = raw.find((e) => e.type === "retry");
    assert.deepEqual(Object.keys(retry).sort(), ["attempt", "delayMs", "providerId", "reason", "type"]);
    assert.equal(retry.reason, "error");
    assert.equal(retry.attempt, 1);
  });

  test("a retry event for a 429 says rate_limited", async (t) => {
    let n = 0;
    const { clock, send, events } = setup(t, {
      adaptiveRate: false,
      answer: async (r) => {
        if (n++ === 0) throw httpError(429, { retryAfterMs: 100 });
        return r.text;
      },
    });
    send(item("x", { llm: false }));
    await clock.tickAsync(1000);
    const retry = events.find((e) => e.type === "retry");
    assert.equal(retry.reason, "rate_limited");
    assert.equal(retry.attempt, 1);
  });

  test("a throwing onEvent breaks nothing", async (t) => {
    const { clock, pacerClock } = virtualTime();
    let thrown = 0;
    let n = 0;
    const pacer = new BatchPacer(async (r) => {
      if (n++ === 0) throw httpError(503);
      return r.isBatch ? r.texts.map((x) => `ok ${x}`) : `ok ${r.text}`;
    }, {
      clock: pacerClock,
      baseRetryDelayMs: 10,
      onEvent: () => {
        thrown++;
        throw new Error("handler bug");
      },
    });
    t.after(() => pacer.dispose());
    const a = track(pacer.translate(item("a")));
    const b = track(pacer.translate(item("b")));
    await clock.tickAsync(5000);
    assert.ok(thrown >= 1, "the handler was called");
    assert.equal(a.value, "ok a");
    assert.equal(b.value, "ok b");
    const c = track(pacer.translate(item("c", { llm: false })));
    await clock.tickAsync(0);
    assert.equal(c.value, "ok c");
  });

  test("a throwing onEvent during a 429 pause and a timeout breaks nothing", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const seen = [];
    let n = 0;
    const pacer = new BatchPacer((r) => {
      n++;
      if (n === 1) return Promise.reject(httpError(429, { retryAfterMs: 100 }));
      if (n === 2) return new Promise(() => {});
      return Promise.resolve(`done ${r.text}`);
    }, {
      clock: pacerClock,
      timeoutMs: 100,
      baseRetryDelayMs: 10,
      onEvent: (event) => {
        seen.push(event.type);
        throw new TypeError("boom");
      },
    });
    t.after(() => pacer.dispose());
    const s = track(pacer.translate(item("x", { llm: false })));
    await clock.tickAsync(10_000);
    assert.equal(s.value, "done x");
    assert.equal(n, 3);
    assert.ok(seen.includes("rateLimited"), `the handler threw on the 429: ${seen}`);
    assert.ok(seen.includes("timeout"), `the handler threw on the timeout: ${seen}`);
  });

  test("a throwing onEvent does not throw out of translate or setOptions", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const seen = [];
    const pacer = new BatchPacer(async () => { throw httpError(500); }, {
      clock: pacerClock,
      maxRetries: 3,
      baseRetryDelayMs: 0,
      onEvent: (event) => {
        seen.push(event.type);
        throw new Error("always");
      },
    });
    t.after(() => pacer.dispose());
    let s;
    assert.doesNotThrow(() => {
      s = track(pacer.translate(item("x", { llm: false })));
    });
    assert.doesNotThrow(() => pacer.setOptions({ rate: 4 }));
    await clock.tickAsync(1000);
    assert.equal(s.status, "rejected");
    assert.equal(s.reason.code, "provider_error");
    assert.deepEqual(seen, ["retry", "retry", "retry"], "the handler threw on every retry");
  });
});
