// Timeouts that fit the call, calls stopped when nobody needs them, and what the provider
// learns of each item (docs/guides/failures.md: "Timeouts that fit the call", the `meta` item field,
// `request.metas` and `request.format`), through the packed package on virtual time.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer, DEFAULTS } from "batch-pacer";
import { setup, item, deferred, thrown, assertPacerError } from "./helpers.mjs";

/** A provider answer that never comes; the request's signal is read, as fetch would. */
const hang = (request) => {
  void request.signal;
  return new Promise(() => {});
};

describe("timeoutPerCharacterMs", () => {
  test("defaults to 15, is listed in DEFAULTS and pacer.options, and setOptions changes it", (t) => {
    assert.equal(DEFAULTS.timeoutPerCharacterMs, 15);
    const pacer = new BatchPacer(async (r) => r.text);
    t.after(() => pacer.dispose());
    assert.equal(pacer.options.timeoutPerCharacterMs, 15);
    pacer.setOptions({ timeoutPerCharacterMs: 2.5 });
    assert.equal(pacer.options.timeoutPerCharacterMs, 2.5);
    pacer.setOptions({ timeoutPerCharacterMs: 0 });
    assert.equal(pacer.options.timeoutPerCharacterMs, 0);
  });

  test("a value that is not a finite number >= 0 is invalid_options naming it", (t) => {
    for (const value of [-1, NaN, Infinity, "15", null, true]) {
      const err = thrown(() => new BatchPacer(async (r) => r.text, { timeoutPerCharacterMs: value }), "invalid_options");
      assert.match(err.message, /^timeoutPerCharacterMs must be a finite number >= 0 \(got /);
      assert.equal(err.option, "timeoutPerCharacterMs");
    }
    const pacer = new BatchPacer(async (r) => r.text);
    t.after(() => pacer.dispose());
    const err = thrown(() => pacer.setOptions({ timeoutPerCharacterMs: -0.5 }), "invalid_options");
    assert.equal(err.message, "timeoutPerCharacterMs must be a finite number >= 0 (got -0.5)");
    assert.equal(pacer.options.timeoutPerCharacterMs, 15, "nothing changed");
  });

  test("a whole reply may take timeoutMs plus the per-character part of the text's String.length", async (t) => {
    // 98 letters and an emoji: 100 characters as String.length counts them.
    const text = "a".repeat(98) + "😀";
    assert.equal(text.length, 100);
    const { clock, calls, send } = setup(t, { timeoutMs: 1000, timeoutPerCharacterMs: 10, maxRetries: 0, answer: hang });
    const state = send(item(text, { llm: false }));
    await clock.tickAsync(1999);
    assert.equal(state.status, "pending", "1000 + 10 × 100 ms not yet over");
    assert.equal(calls[0].signal.aborted, false);
    await clock.tickAsync(1);
    assertPacerError(state.reason, "timeout");
    assert.match(state.reason.message, /after 2000 ms/);
    assert.equal(calls[0].signal.aborted, true, "the timed-out call's signal is aborted");
  });

  test("at the defaults a batch of 1,000 characters answered in 30 s succeeds at its first try", async (t) => {
    const texts = ["a", "b", "c", "d"].map((c) => c.repeat(250));
    const { clock, calls, send, pacer } = setup(t, {
      answer: (r) => new Promise((resolve) => setTimeoutOf(clock, () => resolve(r.texts.map((x) => x.toUpperCase())), 30_000)),
    });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100 + 30_000);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].texts.length, 4);
    assert.deepEqual(states.map((s) => s.value), texts.map((x) => x.toUpperCase()));
    assert.equal(pacer.stats().failed, 0);
  });

  test("a stream gets the per-character part for its first value, then timeoutMs between values", async (t) => {
    const text = "s".repeat(100);
    const stream = (clock, delays) =>
      (async function* () {
        for (const [i, delay] of delays.entries()) {
          await new Promise((resolve) => setTimeoutOf(clock, resolve, delay));
          yield i === 0 ? text.slice(0, 50).toUpperCase() : text.slice(50).toUpperCase();
        }
      })();
    // First value at 1999 ms (1000 + 10 × 100 allowed), the second 999 ms later.
    {
      const { clock, send } = setup(t, { timeoutMs: 1000, timeoutPerCharacterMs: 10, maxRetries: 0, answer: () => stream(clock, [1999, 999]) });
      const state = send(item(text, { llm: false }));
      await clock.tickAsync(5000);
      assert.equal(state.value, text.toUpperCase());
    }
    // The second value 1001 ms after the first: between values only timeoutMs counts.
    {
      const { clock, send } = setup(t, { timeoutMs: 1000, timeoutPerCharacterMs: 10, maxRetries: 0, answer: () => stream(clock, [1999, 1001]) });
      const state = send(item(text, { llm: false }));
      await clock.tickAsync(2998);
      assert.equal(state.status, "pending");
      await clock.tickAsync(1);
      assertPacerError(state.reason, "timeout");
      assert.match(state.reason.message, /no value for 1000 ms/);
    }
  });

  test("timeoutMs 0 is no timeout at all, whatever timeoutPerCharacterMs", async (t) => {
    const { clock, send, calls } = setup(t, {
      timeoutMs: 0,
      timeoutPerCharacterMs: 15,
      answer: (r) => new Promise((resolve) => setTimeoutOf(clock, () => resolve(r.text.toUpperCase()), 600_000)),
    });
    const state = send(item("slow model", { llm: false }));
    await clock.tickAsync(600_000);
    assert.equal(state.value, "SLOW MODEL");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].signal.aborted, false);
  });
});

/** `setTimeout` on the test's virtual clock. */
function setTimeoutOf(clock, fn, ms) {
  return clock.setTimeout(fn, ms);
}

describe("a running call that nobody needs any more", () => {
  test("is aborted when every item of it was aborted; its reply is neither used nor cached", async (t) => {
    const reply = deferred();
    const sets = [];
    const cache = { get: () => undefined, set: (key, value) => void sets.push([key, value]) };
    const { clock, calls, send, pacer } = setup(t, {
      cache,
      answer: (r) => (r.signal, calls.length === 1 ? reply.promise : Promise.resolve(r.texts.map((x) => `new ${x}`))),
    });
    const tab = [new AbortController(), new AbortController()];
    const states = ["first", "second"].map((x, i) => send(item(x, { signal: tab[i].signal })));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1, "the batch is running");
    const { signal } = calls[0];
    tab[0].abort();
    await clock.tickAsync(0);
    assert.equal(signal.aborted, false, "the second item still needs the call");
    tab[1].abort();
    await clock.tickAsync(0);
    assert.equal(signal.aborted, true);
    for (const state of states) assertPacerError(state.reason, "aborted");
    assert.equal(pacer.stats().aborted, 2);
    assert.equal(pacer.stats().inFlight, 0);

    // The reply still comes: nobody reads it, nothing is cached, nothing is retried.
    reply.resolve(["FIRST", "SECOND"]);
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 1);
    assert.deepEqual(sets, []);
    const again = send(item("first"));
    await clock.tickAsync(100);
    assert.equal(again.value, "new first", "translated anew, not from the cache");
    assert.equal(pacer.stats().cacheHits, 0);
    for (const state of states) assert.equal(state.settlements, 1);
  });

  test("keeps running while an identical item shares it", async (t) => {
    const reply = deferred();
    const { clock, calls, send } = setup(t, { answer: (r) => (r.signal, reply.promise) });
    const tab = new AbortController();
    const first = send(item("shared", { llm: false, signal: tab.signal }));
    await clock.tickAsync(0);
    const twin = send(item("shared", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    tab.abort();
    await clock.tickAsync(0);
    assert.equal(calls[0].signal.aborted, false);
    assertPacerError(first.reason, "aborted");
    reply.resolve("GETEILT");
    await clock.tickAsync(0);
    assert.equal(twin.value, "GETEILT");
  });
});

describe("meta and request.metas", () => {
  test("each text's request.metas entry is its item's meta, undefined without one", async (t) => {
    const settings = { model: "m1" };
    const { clock, calls, send } = setup(t);
    const states = [
      send(item("one", { meta: settings })),
      send(item("two")),
      send(item("three", { meta: 3 })),
    ];
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["one", "two", "three"]);
    assert.equal(calls[0].metas.length, 3);
    assert.equal(calls[0].metas[0], settings, "the same object, never copied");
    assert.equal(calls[0].metas[1], undefined);
    assert.ok(1 in calls[0].metas, "an entry for every text");
    assert.equal(calls[0].metas[2], 3);
    assert.deepEqual(states.map((s) => s.value), ["ONE", "TWO", "THREE"]);
  });

  test("without any meta, request.metas holds undefined for every text", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("a"));
    send(item("b"));
    send(item("c", { llm: false }));
    await clock.tickAsync(100);
    const batch = calls.find((c) => c.isBatch);
    const single = calls.find((c) => !c.isBatch);
    assert.deepEqual(batch.metas, [undefined, undefined]);
    assert.deepEqual(single.metas, [undefined]);
  });

  test("meta is not part of dedup or the cache key: identical items share the first one's", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    const a = send(item("same", { meta: "first" }));
    const b = send(item("same", { meta: "second" }));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].metas, ["first"]);
    assert.equal(pacer.stats().dedupHits, 1);
    assert.deepEqual([a.value, b.value], ["SAME", "SAME"]);
    const c = send(item("same", { meta: "third" }));
    await clock.tickAsync(100);
    assert.equal(c.value, "SAME");
    assert.equal(calls.length, 1, "served from the cache");
    assert.equal(pacer.stats().cacheHits, 1);
  });
});

describe("request.format", () => {
  test('"markers" for a batch, "single" for one text, "separator" in the older layout', async (t) => {
    const markers = setup(t);
    markers.send(item("a"));
    markers.send(item("b"));
    markers.send(item("c", { llm: false }));
    await markers.clock.tickAsync(100);
    assert.deepEqual(
      markers.calls.map((c) => [c.isBatch, c.format]),
      [
        [false, "single"],
        [true, "markers"],
      ],
    );
    const separator = setup(t, { segmentFormat: "separator" });
    separator.send(item("a"));
    separator.send(item("b"));
    await separator.clock.tickAsync(100);
    separator.send(item("c"));
    await separator.clock.tickAsync(100);
    assert.deepEqual(
      separator.calls.map((c) => c.format),
      ["separator", "single"],
    );
  });
});
