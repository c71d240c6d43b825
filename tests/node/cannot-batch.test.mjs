// Models that cannot batch (docs/guides/cannot-batch.md), through the packed
// package on virtual time: a repeated reply ends a batch's retries, the learned batch
// size per provider goes down and back up (batchLimit events, probes), the snapshot keeps
// it, every request carries maxOutputTokens, truncated replies of singles and batches,
// whole replies past the length cap, and the options' validation.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BatchPacer } from "batch-pacer";
import { setup, item, assertPacerError, thrown } from "./helpers.mjs";

/** Each text between its markers, as a faithful model answers a batch. */
function faithful(request) {
  if (!request.isBatch) return `fr: ${request.text}`;
  return request.markers.map(([open, close], i) => `${open}fr: ${request.texts[i]}${close}`).join("\n");
}

/** A model that answers every batch with the same plain text and every single well. */
function plainText(request) {
  return request.isBatch ? `Voici la traduction : ${request.texts.join(" ")}` : `fr: ${request.text}`;
}

const texts = (n, prefix = "Paragraph") => Array.from({ length: n }, (_, i) => `${prefix} number ${i}.`);

describe("a repeated reply ends the batch retries", () => {
  test("the same reply twice: no third try, the items go one by one", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { adaptiveBatching: false, answer: async (r) => plainText(r) });
    const states = texts(4).map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    assert.equal(calls.filter((c) => c.isBatch).length, 2, "the first try and one retry");
    assert.deepEqual(states.map((s) => s.value), texts(4).map((x) => `fr: ${x}`));
    assert.equal(pacer.stats().fallbacks, 1);
    for (const s of states) assert.equal(s.settlements, 1);
  });

  test("an equal array is a repeated reply too; without the fallback the items reject count_mismatch", async (t) => {
    const { clock, calls, send } = setup(t, {
      adaptiveBatching: false,
      fallbackToIndividual: false,
      answer: async (r) => (r.isBatch ? ["only one"] : r.text),
    });
    const states = texts(3).map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    assert.equal(calls.length, 2);
    for (const s of states) {
      assert.equal(s.status, "rejected");
      assertPacerError(s.reason, "count_mismatch");
      assert.match(s.reason.message, /the same as the one before/);
    }
  });

  test("different wrong replies are retried up to maxBatchRetries", async (t) => {
    const { clock, calls, send } = setup(t, {
      adaptiveBatching: false,
      answer: async (r) => (r.isBatch ? `wrong, try ${r.attempt}` : r.text),
    });
    texts(4).map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    assert.deepEqual(calls.filter((c) => c.isBatch).map((c) => c.attempt), [0, 1, 2, 3]);
  });
});

describe("the learned batch size (adaptiveBatching)", () => {
  test("is on by default", () => {
    const pacer = new BatchPacer(async (r) => r.text);
    assert.equal(pacer.options.adaptiveBatching, true);
    pacer.dispose();
  });

  test("halves after two batch replies in a row that prove nothing, down to one item a call", async (t) => {
    const { clock, calls, send, events } = setup(t, { maxInFlight: 1, answer: async (r) => plainText(r) });
    const states = texts(40).map((x) => send(item(x)));
    await clock.tickAsync(600_000);
    const limits = events.filter((e) => e.type === "batchLimit");
    assert.deepEqual(limits.map((e) => [e.providerId, e.limit]), [["p1", 2], ["p1", 1]]);
    assert.deepEqual(states.map((s) => s.value), texts(40).map((x) => `fr: ${x}`));
    // Calls started after the limit reached 1 carry one item (a probe of two at most).
    const atOne = limits[1].at;
    for (const c of calls.filter((c) => c.at > atOne)) assert.ok(c.texts.length <= 2, `${c.texts.length} texts`);
    assert.ok(calls.length <= 46, `${calls.length} calls for 40 paragraphs`);
  });

  test("comes back by one per batch reply that proves every segment, after a probe of two", async (t) => {
    let broken = true;
    const { clock, calls, send, events } = setup(t, {
      maxInFlight: 1,
      answer: async (r) => (broken ? plainText(r) : faithful(r)),
    });
    texts(8).map((x) => send(item(x)));
    await clock.tickAsync(600_000);
    broken = false;
    const before = calls.length;
    const states = texts(60, "Later").map((x) => send(item(x)));
    await clock.tickAsync(600_000);
    assert.deepEqual(events.filter((e) => e.type === "batchLimit").map((e) => e.limit), [2, 1, 2, 3, 4]);
    const probe = calls.findIndex((c, i) => i >= before && c.isBatch);
    const lastBatch = calls.slice(0, probe).findLastIndex((c) => c.isBatch);
    assert.equal(probe - lastBatch - 1, 20, "a batch of two after 20 single calls");
    assert.equal(calls[probe].texts.length, 2);
    for (const s of states) assert.equal(s.status, "fulfilled");
  });

  test("false keeps every batch at maxItemsPerBatch", async (t) => {
    const { clock, calls, send, events } = setup(t, {
      maxInFlight: 1,
      adaptiveBatching: false,
      answer: async (r) => plainText(r),
    });
    texts(12).map((x) => send(item(x)));
    await clock.tickAsync(600_000);
    assert.equal(events.filter((e) => e.type === "batchLimit").length, 0);
    for (const c of calls.filter((c) => c.isBatch)) assert.equal(c.texts.length, 4);
  });

  test("snapshot() keeps it and a restored pacer starts from it", async (t) => {
    const first = setup(t, { maxInFlight: 1, answer: async (r) => plainText(r) });
    texts(8).map((x) => first.send(item(x)));
    await first.clock.tickAsync(600_000);
    const snapshot = JSON.parse(JSON.stringify(first.pacer.snapshot()));
    assert.deepEqual(snapshot.providers.map((p) => [p.providerId, p.batchLimit]), [["p1", 1]]);
    const restored = setup(t, { maxInFlight: 1, restore: snapshot, answer: async (r) => plainText(r) });
    texts(4, "After").map((x) => restored.send(item(x)));
    await restored.clock.tickAsync(60_000);
    assert.equal(restored.calls.length, 4);
    assert.ok(restored.calls.every((c) => !c.isBatch));
  });

  test("a snapshot with a batchLimit that is not an integer >= 1 is refused, naming it", () => {
    const snapshot = {
      version: 1,
      wallTime: Date.now(),
      tokens: 1,
      providers: [{ providerId: "p1", pausedForMs: 0, adaptiveRate: null, adaptiveCeiling: 0, batchLimit: 0.5 }],
    };
    const err = thrown(() => new BatchPacer(async (r) => r.text, { restore: snapshot }), "invalid_options");
    assert.match(err.message, /batchLimit/);
  });

  for (const bad of [1, "yes", null, {}]) {
    test(`adaptiveBatching ${JSON.stringify(bad)} is invalid_options naming it`, () => {
      const err = thrown(() => new BatchPacer(async (r) => r.text, { adaptiveBatching: bad }), "invalid_options");
      assert.match(err.message, /adaptiveBatching must be a boolean/);
    });
  }
});

describe("the output bound (request.maxOutputTokens)", () => {
  test("every request carries one: 2 to 4 times its texts' estimated tokens, plus 16 a segment, plus at most 256", async (t) => {
    // An estimate the test knows: 10 tokens a text.
    const { clock, calls, send } = setup(t, { estimateTokens: () => 10, answer: async (r) => faithful(r) });
    send(item("alone", { llm: false }));
    texts(4).map((x) => send(item(x)));
    await clock.tickAsync(10_000);
    assert.ok(calls.length >= 2);
    for (const c of calls) {
      const tokens = 10 * c.texts.length;
      assert.ok(Number.isInteger(c.maxOutputTokens) && c.maxOutputTokens > 0);
      assert.ok(c.maxOutputTokens >= 2 * tokens, `${c.maxOutputTokens} for ${tokens} tokens`);
      assert.ok(c.maxOutputTokens <= 4 * tokens + 16 * c.texts.length + 256, `${c.maxOutputTokens} for ${tokens} tokens`);
    }
  });

  test("a truncated single is retried with twice the bound, then rejects provider_error", async (t) => {
    const { clock, calls, send } = setup(t, {
      maxRetries: 2,
      baseRetryDelayMs: 10,
      answer: async (r) => ({ translations: `${r.text} ${r.text} ${r.text}`, truncated: true }),
    });
    const state = send(item("Hello there.", { llm: false }));
    await clock.tickAsync(10_000);
    const bounds = calls.map((c) => c.maxOutputTokens);
    assert.deepEqual(bounds, [bounds[0], 2 * bounds[0], 4 * bounds[0]]);
    assert.equal(state.status, "rejected");
    assertPacerError(state.reason, "provider_error");
    assert.match(state.reason.message, /did not end within its bound/);
  });

  test("a truncated batch keeps what it proved and sends the rest again with twice their bound", async (t) => {
    const unlike = [
      "A short opening line.",
      "A much longer second paragraph, which goes on for quite a while with many more words.",
      "Brief third.",
      "And a fourth paragraph of a middling length, to close the batch.",
    ];
    const { clock, calls, send } = setup(t, {
      estimateTokens: () => 10,
      answer: async (r) => {
        if (r.attempt > 0 || !r.isBatch) return faithful(r);
        const last = r.texts.length - 1;
        const done = r.markers.slice(0, last).map(([o, c], i) => `${o}fr: ${r.texts[i]}${c}`);
        return { translations: `${done.join("\n")}\n${r.markers[last][0]}fr: ${r.texts[last]} et enc`, truncated: true };
      },
    });
    const states = unlike.map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    assert.deepEqual(states.map((s) => s.value), unlike.map((x) => `fr: ${x}`));
    assert.equal(calls.length, 2);
    assert.ok(calls[1].texts.length < 4);
    // The bound of docs/reference.md, Rule 31: 3 x the texts' tokens + 16 a segment + 16, doubled once.
    const bound = (n) => 3 * 10 * n + 16 * n + 16;
    assert.equal(calls[0].maxOutputTokens, bound(4));
    assert.equal(calls[1].maxOutputTokens, 2 * bound(calls[1].texts.length));
  });

  test("a truncated: true stream value is a truncated reply; a non-boolean truncated is ignored", async (t) => {
    const { clock, calls, send } = setup(t, {
      baseRetryDelayMs: 10,
      answer: async (r) =>
        (async function* () {
          yield `fr: ${r.text}`;
          if (r.attempt === 0) yield { truncated: true };
          else yield { truncated: "yes", usage: { inputTokens: 1, outputTokens: 1 } };
        })(),
    });
    const state = send(item("Hello.", { llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 2);
    assert.equal(state.value, "fr: Hello.");
  });

  test("a whole reply far past the length cap is cut there and read as truncated", async (t) => {
    const { clock, calls, send } = setup(t, {
      baseRetryDelayMs: 10,
      answer: async (r) => (r.attempt === 0 ? `fr: ${r.text}` + " encore".repeat(200_000) : `fr: ${r.text}`),
    });
    const state = send(item("Hi.", { llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 2, "the runaway reply failed its call");
    assert.equal(state.value, "fr: Hi.");
  });

  test("an array reply past the cap is cut too: the batch's proven items resolve, none gets runaway text", async (t) => {
    const { clock, send } = setup(t, {
      answer: async (r) => (r.isBatch && r.attempt === 0 ? r.texts.map((x, i) => (i === 0 ? `fr: ${x}` + " encore".repeat(200_000) : `fr: ${x}`)) : faithful(r)),
    });
    const states = texts(3).map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    for (const [i, s] of states.entries()) {
      assert.equal(s.status, "fulfilled");
      assert.ok(s.value.length < 10_000, `item ${i} got ${s.value.length} characters`);
    }
  });
});
