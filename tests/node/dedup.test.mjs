// Identical items share one provider item (dedupHits); successes are cached (cacheHits),
// failures are not; cacheEntries 0 turns the cache off.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, deferred, httpError, assertPacerError } from "./helpers.mjs";

describe("dedup", () => {
  test("identical queued items share one provider item", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    const states = [send(item("same")), send(item("other")), send(item("same")), send(item("same"))];
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["same", "other"], "the duplicate is not sent twice");
    assert.deepEqual(states.map((s) => s.value), ["SAME", "OTHER", "SAME", "SAME"]);
    assert.equal(pacer.stats().dedupHits, 2);
    assert.equal(pacer.stats().items, 4);
  });

  test("an item identical to one in flight shares its call", async (t) => {
    const hold = deferred();
    const { clock, calls, send, pacer } = setup(t, { answer: () => hold.promise });
    const first = send(item("running", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    const second = send(item("running", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1, "no second call");
    assert.equal(pacer.stats().dedupHits, 1);
    hold.resolve("läuft");
    await clock.tickAsync(0);
    assert.equal(first.value, "läuft");
    assert.equal(second.value, "läuft");
  });

  test("a duplicate of an item in a running batch shares the batch call", async (t) => {
    const hold = deferred();
    const { clock, calls, send, pacer } = setup(t, { answer: () => hold.promise });
    const a = send(item("a"));
    const b = send(item("b"));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const b2 = send(item("b"));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1);
    hold.resolve(["A!", "B!"]);
    await clock.tickAsync(0);
    assert.deepEqual([a.value, b.value, b2.value], ["A!", "B!", "B!"]);
    assert.equal(pacer.stats().dedupHits, 1);
  });

  const differences = {
    providerId: { providerId: "p2" },
    sourceLang: { sourceLang: "fr" },
    targetLang: { targetLang: "it" },
    context: { context: "other page" },
    llm: { llm: false },
  };
  for (const [field, change] of Object.entries(differences)) {
    test(`items with the same text but a different ${field} are not deduplicated`, async (t) => {
      const { clock, calls, send, pacer } = setup(t);
      send(item("text"));
      send(item("text", change));
      await clock.tickAsync(1000);
      assert.equal(calls.reduce((n, c) => n + c.texts.length, 0), 2);
      assert.equal(pacer.stats().dedupHits, 0);
    });
  }

  test("a different priority does not make an item different", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    const a = send(item("x", { priority: 0 }));
    const b = send(item("x", { priority: 9 }));
    await clock.tickAsync(1000);
    assert.equal(calls.reduce((n, c) => n + c.texts.length, 0), 1);
    assert.equal(pacer.stats().dedupHits, 1);
    assert.equal(a.value, "X");
    assert.equal(b.value, "X");
  });

  test("items that share a failed provider item all reject", async (t) => {
    const err = httpError(400);
    const { clock, send } = setup(t, { answer: async () => { throw err; } });
    const a = send(item("x"));
    const b = send(item("x"));
    await clock.tickAsync(1000);
    for (const s of [a, b]) {
      assertPacerError(s.reason, "provider_error", 400);
      assert.equal(s.reason.cause, err);
    }
  });
});

describe("cache", () => {
  test("a success is cached: an identical later item resolves without a call", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    const first = send(item("hello"));
    await clock.tickAsync(100);
    assert.equal(first.value, "HELLO");
    const again = send(item("hello"));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1);
    assert.equal(again.value, "HELLO");
    assert.equal(pacer.stats().cacheHits, 1);
    assert.equal(pacer.stats().items, 2);
  });

  test("a cache hit needs no token", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { rate: 0.01, capacity: 1 });
    send(item("once", { llm: false }));
    await clock.tickAsync(0);
    const hit = send(item("once", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(hit.value, "ONCE");
    assert.equal(calls.length, 1);
    assert.equal(pacer.stats().cacheHits, 1);
  });

  test("each item of a batch is cached on its own", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    send(item("a"));
    send(item("b"));
    await clock.tickAsync(100);
    const a = send(item("a"));
    const c = send(item("c"));
    await clock.tickAsync(100);
    assert.equal(a.value, "A");
    assert.equal(c.value, "C");
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[1].texts, ["c"]);
    assert.equal(pacer.stats().cacheHits, 1);
  });

  test("the cache is keyed on the compatibility fields too", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    send(item("hi"));
    await clock.tickAsync(100);
    send(item("hi", { targetLang: "fr" }));
    send(item("hi", { context: "ctx" }));
    await clock.tickAsync(100);
    assert.equal(calls.reduce((n, c) => n + c.texts.length, 0), 3);
    assert.equal(pacer.stats().cacheHits, 0);
  });

  test("a failure is not cached: the next identical item calls the provider again", async (t) => {
    let n = 0;
    const { clock, calls, send, pacer } = setup(t, {
      answer: async (r) => {
        if (n++ === 0) throw httpError(400);
        return "second time";
      },
    });
    const first = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assertPacerError(first.reason, "provider_error", 400);
    const second = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    assert.equal(second.value, "second time");
    assert.equal(pacer.stats().cacheHits, 0);
  });

  test("a timeout is not cached either", async (t) => {
    let n = 0;
    const { clock, calls, send } = setup(t, {
      timeoutMs: 50,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      answer: (r) => (n++ === 0 ? new Promise(() => {}) : Promise.resolve("fine")),
    });
    const first = send(item("x", { llm: false }));
    await clock.tickAsync(50);
    assertPacerError(first.reason, "timeout");
    const second = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    assert.equal(second.value, "fine");
  });

  test("cacheEntries 0 turns the cache off", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { cacheEntries: 0 });
    send(item("hello", { llm: false }));
    await clock.tickAsync(0);
    const again = send(item("hello", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    assert.equal(again.value, "HELLO");
    assert.equal(pacer.stats().cacheHits, 0);
  });

  test("cacheEntries 0 still deduplicates items in flight", async (t) => {
    const hold = deferred();
    const { clock, calls, send, pacer } = setup(t, { cacheEntries: 0, answer: () => hold.promise });
    const a = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    const b = send(item("x", { llm: false }));
    hold.resolve("y");
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.equal(a.value, "y");
    assert.equal(b.value, "y");
    assert.equal(pacer.stats().dedupHits, 1);
  });

  test("the in-memory cache is an LRU of cacheEntries successes", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { cacheEntries: 2 });
    for (const x of ["a", "b"]) send(item(x, { llm: false }));
    await clock.tickAsync(0);
    send(item("a", { llm: false })); // a is now the most recently used
    await clock.tickAsync(0);
    send(item("c", { llm: false })); // evicts b, the least recently used
    await clock.tickAsync(0);
    assert.equal(calls.length, 3);
    send(item("a", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 3, "a is still cached");
    send(item("b", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 4, "b was evicted");
    assert.equal(pacer.stats().cacheHits, 2);
  });
});
