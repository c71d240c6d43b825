// Each provider its own limits (docs/guides/providers.md, "Each provider its own limits"), through the
// installed package on virtual time: `providers` gives a provider a bucket, budgets and a
// cap of its own beside the pacer's, its own batch limits and timeouts, kept by
// setOptions (tokens) and snapshot(); malformed settings name their path.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import {
  BatchPacer,
  setup,
  item,
  thrown,
  assertWindowBound,
  flushMicrotasks,
  deferred,
  virtualTime,
  disposeAfter,
} from "./helpers.mjs";

/** An item for an ordinary translation API (one per call unless batched as arrays). */
const plain = (text, providerId) => item(text, { providerId, llm: false });

/** Advances virtual time in steps, letting the provider's promises settle in between. */
async function advance(clock, ms, step = 10) {
  for (let t = 0; t < ms; t += step) {
    await clock.tickAsync(step);
    await flushMicrotasks(2);
  }
}

const startsOf = (calls, providerId) => calls.filter((c) => c.providerId === providerId).map((c) => c.at);

describe("providers: invalid settings name their path", () => {
  const cases = [
    [{ gemini: { rate: 0 } }, "providers.gemini.rate", "providers.gemini.rate must be a finite number > 0 (got 0)"],
    [{ gemini: { rat: 1 } }, "providers.gemini.rat", 'unknown provider setting "providers.gemini.rat" (got 1)'],
    [{ d: { batch: "list" } }, "providers.d.batch", 'providers.d.batch must be "array" (got "list")'],
    [{ d: { capacity: 1.5 } }, "providers.d.capacity", "providers.d.capacity must be an integer >= 1 (got 1.5)"],
    [{ d: { charactersPerMinute: -1 } }, "providers.d.charactersPerMinute", "providers.d.charactersPerMinute must be a finite number >= 0 (got -1)"],
    [{ d: { maxInFlight: "1" } }, "providers.d.maxInFlight", 'providers.d.maxInFlight must be an integer >= 0 (got "1")'],
    [{ d: 5 }, "providers.d", "providers.d must be an object of provider settings (got 5)"],
    [["d"], "providers", "providers must be an object mapping a providerId to its own settings (got an array)"],
  ];
  for (const [providers, option, message] of cases) {
    test(`${JSON.stringify(providers)}: ${option}`, () => {
      const err = thrown(() => new BatchPacer(async () => "", { providers }), "invalid_options");
      assert.equal(err.option, option);
      assert.ok(err.message.startsWith(message), err.message);
    });
  }

  test("setOptions validates the whole map first: nothing changes on an error", (t) => {
    const { pacer } = setup(t, { providers: { slow: { rate: 1, capacity: 2 } } });
    const err = thrown(() => pacer.setOptions({ rate: 2, providers: { slow: { timeoutMs: -1 } } }), "invalid_options");
    assert.equal(err.option, "providers.slow.timeoutMs");
    assert.equal(pacer.options.rate, 8);
    assert.deepEqual(pacer.options.providers, { slow: { rate: 1, capacity: 2 } });
  });
});

describe("providers: each its own limits", () => {
  test("pacer.options shows the map; a pacer without it shows none", (t) => {
    const { pacer } = setup(t, { providers: { deepl: { batch: "array", maxItemsPerBatch: 50, charactersPerMinute: 20000 } } });
    assert.deepEqual(pacer.options.providers, { deepl: { charactersPerMinute: 20000, maxItemsPerBatch: 50, batch: "array" } });
    const { pacer: bare } = setup(t);
    assert.equal("providers" in bare.options, false);
  });

  test("a provider's own bucket bounds its calls; the pacer's still bounds the flow", async (t) => {
    const { pacer, clock, calls, send } = setup(t, {
      rate: 10,
      capacity: 10,
      providers: { slow: { rate: 1, capacity: 2 } },
    });
    const slow = Array.from({ length: 12 }, (_, i) => send(plain(`slow ${i}`, "slow")));
    const fast = Array.from({ length: 30 }, (_, i) => send(plain(`fast ${i}`, "fast")));
    await advance(clock, 11_000, 50);
    assert.ok([...slow, ...fast].every((s) => s.status === "fulfilled"));
    assert.equal(slow[3].value, "SLOW 3");
    const slowStarts = startsOf(calls, "slow");
    assertWindowBound(slowStarts, 2, 1);
    assertWindowBound(calls.map((c) => c.at), 10, 10);
    assert.ok(slowStarts[11] >= 10_000, `the slow backlog drains at its own rate: ${slowStarts}`);
    assert.ok(Math.max(...startsOf(calls, "fast")) <= 3_000, "the other provider is not held by it");
    assert.equal(pacer.stats().providerCalls, 42);
  });

  test("its own maxInFlight caps its calls at once", async (t) => {
    const open = [];
    const { clock, calls, send } = setup(t, {
      providers: { ollama: { maxInFlight: 1 } },
      answer: (request) => {
        const d = deferred();
        open.push({ request, d });
        return d.promise;
      },
    });
    const items = ["a", "b", "c"].map((x) => send(plain(x, "ollama")));
    const hosted = ["a", "b"].map((x) => send(plain(x, "hosted")));
    await advance(clock, 100);
    assert.deepEqual(calls.map((c) => c.providerId).sort(), ["hosted", "hosted", "ollama"]);
    for (let round = 0; round < 3; round++) {
      const local = open.filter((o) => o.request.providerId === "ollama" && !o.done);
      assert.equal(local.length, 1, "one call to it at a time");
      local[0].done = true;
      local[0].d.resolve(local[0].request.text);
      for (const o of open.filter((o) => o.request.providerId === "hosted" && !o.done)) {
        o.done = true;
        o.d.resolve(o.request.text);
      }
      await advance(clock, 20);
    }
    assert.deepEqual(items.map((s) => s.value), ["a", "b", "c"]);
    assert.ok(hosted.every((s) => s.status === "fulfilled"));
  });

  test("charactersPerMinute counts the texts' String.length and starts full", async (t) => {
    const { clock, calls, send } = setup(t, { providers: { ms: { charactersPerMinute: 600 } } });
    // 100 UTF-16 code units each: "😀" counts two.
    const text = (i) => `${String(i).padStart(2, "0")}😀${"é".repeat(48)}${"x".repeat(48)}`;
    assert.equal(text(0).length, 100);
    const sent = Array.from({ length: 8 }, (_, i) => send(plain(text(i), "ms")));
    await advance(clock, 21_000, 100);
    assert.ok(sent.every((s) => s.status === "fulfilled"));
    const starts = startsOf(calls, "ms");
    assert.equal(starts.filter((at) => at === 0).length, 6, "a full minute's worth at once");
    assertWindowBound(starts, 6, 0.1); // 600 characters, 10 a second: 6 calls and 0.1/s
    assert.ok(starts[7] >= 20_000, `${starts}`);
  });

  test("its own timeouts replace the pacer's", async (t) => {
    const signals = [];
    const { clock, send } = setup(t, {
      timeoutMs: 20_000,
      maxRetries: 0,
      providers: { local: { timeoutMs: 50, timeoutPerCharacterMs: 0 } },
      answer: (request) => {
        signals.push([request.providerId, request.signal]);
        return new Promise(() => {});
      },
    });
    const local = send(plain("slow model", "local"));
    const hosted = send(plain("hosted model", "hosted"));
    await advance(clock, 200);
    assert.equal(local.status, "rejected");
    assert.equal(local.reason.code, "timeout");
    assert.equal(hosted.status, "pending", "the pacer's 20 s still hold for the others");
    assert.equal(signals.find(([p]) => p === "local")[1].aborted, true);
  });

  test("setOptions keeps an existing bucket's tokens: a larger capacity does not refill it", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { providers: { slow: { rate: 0.1, capacity: 2 } } });
    send(plain("a", "slow"));
    send(plain("b", "slow"));
    await advance(clock, 50);
    pacer.setOptions({ providers: { slow: { rate: 0.1, capacity: 10 } } });
    const third = send(plain("c", "slow"));
    await advance(clock, 5_000, 100);
    assert.equal(third.status, "pending", "no token yet");
    await advance(clock, 6_000, 100);
    assert.equal(third.status, "fulfilled");
    assert.ok(startsOf(calls, "slow")[2] >= 9_900);
    // The map is replaced as a whole: without its entry, the provider has no bucket.
    pacer.setOptions({ providers: {} });
    const free = Array.from({ length: 4 }, (_, i) => send(plain(`f${i}`, "slow")));
    await advance(clock, 50);
    assert.ok(free.every((s) => s.status === "fulfilled"));
  });

  test("snapshot() keeps each provider's own bucket, and restore resumes from it", async (t) => {
    const providers = { slow: { rate: 0.1, capacity: 3 } };
    const first = setup(t, { providers });
    for (const x of ["a", "b", "c"]) first.send(plain(x, "slow"));
    await advance(first.clock, 50);
    const snapshot = JSON.parse(JSON.stringify(first.pacer.snapshot()));
    const saved = snapshot.providers.find((p) => p.providerId === "slow");
    assert.ok(saved.tokens < 0.01, `its own bucket is saved spent: ${saved.tokens}`);

    const { clock, pacerClock } = virtualTime(first.clock.now);
    const calls = [];
    const restored = new BatchPacer(
      async (r) => {
        calls.push(clock.now);
        return r.text;
      },
      { clock: pacerClock, providers, restore: snapshot },
    );
    disposeAfter(t, restored);
    const next = restored.translate(plain("d", "slow"));
    await advance(clock, 5_000, 100);
    assert.equal(calls.length, 0, "no new burst after a restart");
    await advance(clock, 6_000, 100);
    assert.equal(await next, "d");
    const err = thrown(
      () => new BatchPacer(async () => "", { restore: { ...snapshot, providers: [{ ...saved, tokens: "3" }] } }),
      "invalid_options",
    );
    assert.match(err.message, /restore\.providers\[\]\.tokens/);
  });

  test("pacer.run goes through the provider's own bucket", async (t) => {
    const { pacer, clock } = setup(t, { providers: { p: { rate: 1, capacity: 1 } } });
    const starts = [];
    const runs = [0, 1, 2].map(() => pacer.run("p", () => starts.push(clock.now)));
    await advance(clock, 2_500, 50);
    await Promise.all(runs);
    assert.deepEqual(starts, [0, 1000, 2000]);
  });
});
