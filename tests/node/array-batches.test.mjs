// Array batches (docs/guides/providers.md, "Each provider its own limits"), through the installed package:
// a provider with `batch: "array"` gets its `llm: false` items as arrays (`format:
// "array"`), the reply is read by position, a wrong length or a non-string element is a
// count mismatch (the pacer never calls String() on an element), an empty string leaves
// its item alone missing; deeplProvider carries a page of 200 paragraphs in 4 requests.
// Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { deeplProvider } from "batch-pacer";
import { setup, item, flushMicrotasks, BatchPacer, disposeAfter } from "./helpers.mjs";
import { startDeepLServer } from "./deepl-server.mjs";

const plain = (text, providerId = "api") => item(text, { providerId, llm: false });

async function advance(clock, ms, step = 10) {
  for (let t = 0; t < ms; t += step) {
    await clock.tickAsync(step);
    await flushMicrotasks(2);
  }
}

const ARRAY = { providers: { api: { batch: "array", maxItemsPerBatch: 50 } } };

describe("array batches", () => {
  test("a batch request: isBatch, format array, texts and ids, no markers or separator", async (t) => {
    const { clock, calls, send } = setup(t, ARRAY);
    const sent = ["one", "two", "three"].map((x) => send(plain(x)));
    await advance(clock, 200);
    assert.deepEqual(sent.map((s) => s.value), ["ONE", "TWO", "THREE"]);
    assert.equal(calls.length, 1);
    const [request] = calls;
    assert.equal(request.isBatch, true);
    assert.equal(request.format, "array");
    assert.deepEqual(request.texts, ["one", "two", "three"]);
    assert.deepEqual(request.ids, ["1", "2", "3"]);
    assert.equal(request.text, "one\ntwo\nthree");
    assert.equal(request.instructions, "");
    assert.equal("markers" in request, false);
    assert.equal("separator" in request, false);
  });

  test("without batch: \"array\", llm: false items go one to a call", async (t) => {
    const { clock, calls, send } = setup(t);
    ["one", "two", "three"].map((x) => send(plain(x)));
    await advance(clock, 200);
    assert.equal(calls.length, 3);
    assert.ok(calls.every((c) => c.isBatch === false && c.format === "single"));
  });

  test("a reply as { translations, usage } is read the same way", async (t) => {
    const { pacer, clock, send } = setup(t, {
      ...ARRAY,
      answer: async (r) => ({ translations: r.texts.map((x) => `<${x}>`), usage: { inputTokens: 3, outputTokens: 4 } }),
    });
    const sent = ["a", "b"].map((x) => send(plain(x)));
    await advance(clock, 200);
    assert.deepEqual(sent.map((s) => s.value), ["<a>", "<b>"]);
    assert.equal(pacer.stats().outputTokens, 4);
  });

  test("an array of another length is a count mismatch for the whole batch", async (t) => {
    const { pacer, clock, calls, events, send } = setup(t, {
      ...ARRAY,
      baseRetryDelayMs: 10,
      answer: async (r, index) => (index === 0 ? r.texts.slice(1).map((x) => x.toUpperCase()) : r.texts.map((x) => x.toUpperCase())),
    });
    const sent = ["a", "b", "c"].map((x) => send(plain(x)));
    await advance(clock, 500);
    assert.deepEqual(sent.map((s) => s.value), ["A", "B", "C"]);
    assert.equal(pacer.stats().countMismatches, 1);
    assert.deepEqual(calls[1].texts, ["a", "b", "c"], "nothing resolved from the wrong array");
    assert.ok(events.some((e) => e.type === "countMismatch" && e.expected === 3 && e.got === 2));
  });

  test("a sparse array whose length is 2^32 - 1 is a count mismatch, its length never copied", async (t) => {
    const { pacer, clock, events, send } = setup(t, {
      ...ARRAY,
      baseRetryDelayMs: 10,
      answer: async (r, index) => {
        const texts = r.texts.map((x) => x.toUpperCase());
        if (index === 0) texts.length = 2 ** 32 - 1;
        return texts;
      },
    });
    const sent = ["a", "b", "c"].map((x) => send(plain(x)));
    await advance(clock, 500);
    assert.deepEqual(sent.map((s) => s.value), ["A", "B", "C"]);
    assert.equal(pacer.stats().countMismatches, 1);
    const mismatch = events.find((e) => e.type === "countMismatch");
    assert.ok(mismatch.expected === 3 && mismatch.got > 3, `a longer array is reported (${JSON.stringify(mismatch)})`);
  });

  test("a non-string element is a count mismatch, and the pacer never calls String() on it", async (t) => {
    let stringified = 0;
    const trap = {
      toString() {
        stringified++;
        return "TRAPPED";
      },
      valueOf() {
        stringified++;
        return 0;
      },
    };
    const { pacer, clock, send } = setup(t, {
      ...ARRAY,
      baseRetryDelayMs: 10,
      answer: async (r, index) => (index === 0 ? [r.texts[0].toUpperCase(), trap] : r.texts.map((x) => x.toUpperCase())),
    });
    const sent = ["a", "b"].map((x) => send(plain(x)));
    await advance(clock, 500);
    assert.deepEqual(sent.map((s) => s.value), ["A", "B"]);
    assert.equal(pacer.stats().countMismatches, 1);
    assert.equal(stringified, 0);
  });

  test("an empty string for a text that is not blank leaves that item alone missing", async (t) => {
    const { clock, calls, send } = setup(t, {
      ...ARRAY,
      baseRetryDelayMs: 10,
      answer: async (r, index) => r.texts.map((x, i) => (index === 0 && i === 1 ? "" : x.toUpperCase())),
    });
    const sent = ["a", "b", "c"].map((x) => send(plain(x)));
    await advance(clock, 150);
    assert.equal(sent[0].value, "A");
    assert.equal(sent[2].value, "C");
    await advance(clock, 500);
    assert.equal(sent[1].value, "B");
    assert.deepEqual(calls[1].texts, ["b"]);
  });

  test("after maxBatchRetries wrong arrays, items go one by one; without fallbackToIndividual they reject count_mismatch", async (t) => {
    const short = async (r) => (r.isBatch ? r.texts.slice(1) : r.text.toUpperCase());
    const { clock, calls, send } = setup(t, { ...ARRAY, baseRetryDelayMs: 10, answer: short });
    const sent = ["a", "b"].map((x) => send(plain(x)));
    await advance(clock, 1_000);
    assert.deepEqual(sent.map((s) => s.value), ["A", "B"]);
    assert.deepEqual(calls.filter((c) => !c.isBatch).map((c) => c.text), ["a", "b"]);

    const strict = setup(t, { ...ARRAY, baseRetryDelayMs: 10, fallbackToIndividual: false, answer: short });
    const failed = ["a", "b"].map((x) => strict.send(plain(x)));
    await advance(strict.clock, 1_000);
    assert.ok(failed.every((s) => s.status === "rejected" && s.reason.code === "count_mismatch"));
  });
});

describe("deeplProvider with batch: \"array\"", () => {
  test("200 paragraphs in at most 5 requests, each translation on its own paragraph", async (t) => {
    const key = "test-key:fx";
    const srv = await startDeepLServer(t, { key });
    const pacer = new BatchPacer(deeplProvider({ apiKey: key, baseUrl: srv.baseUrl }), {
      providers: { deepl: { batch: "array", maxItemsPerBatch: 50 } },
    });
    disposeAfter(t, pacer);
    const texts = Array.from({ length: 200 }, (_, i) => `Paragraph number ${i}.`);
    const results = await Promise.all(
      texts.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "deepl", llm: false })),
    );
    assert.deepEqual(results, texts.map((x) => `[DE] ${x}`));
    assert.ok(srv.requests.length <= 5, `${srv.requests.length} requests`);
    assert.ok(srv.requests.every((r) => r.json.text.length <= 50));
    assert.equal(pacer.stats().providerCalls, srv.requests.length);
  });
});
