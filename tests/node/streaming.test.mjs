// Streaming replies (docs/guides/streaming.md, the README's `timeoutMs` row, the `onPartial`
// item field) through the packed package: every stream form, early resolution, bad
// values, a `next()` that never settles, timeouts between values, previews, counters,
// reasoning, and streams that misbehave around their end.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, deferred, flushMicrotasks, assertPacerError } from "./helpers.mjs";

/** Paragraphs of unlike lengths. */
const UNLIKE = [
  "A short opening line.",
  "A much longer second paragraph, which goes on for quite a while with many more words than the others have.",
  "Brief third.",
  "And a fourth paragraph of a middling length, to close the batch.",
];

/** The fake model's translation of one text. */
const T = (x) => `«${x.toUpperCase()}»`;

/** Each segment of a faithful marked reply, with its markers. */
const segments = (r, f = T) => r.texts.map((x, i) => r.markers[i][0] + f(x) + r.markers[i][1] + "\n");

/** The settled values, or the error codes of the rejected ones. */
const outcomes = (states) => states.map((s) => (s.status === "fulfilled" ? s.value : s.status === "rejected" ? s.reason.code : "pending"));

/**
 * An async iterable whose values the test pushes. `returned` counts `return()` calls,
 * `pulls` the `next()` calls.
 */
function channel() {
  const queue = [];
  const waiting = [];
  const state = { returned: 0, pulls: 0 };
  const iterator = {
    next() {
      state.pulls++;
      if (queue.length > 0) return Promise.resolve(queue.shift());
      const d = deferred();
      waiting.push(d);
      return d.promise;
    },
    return() {
      state.returned++;
      return Promise.resolve({ done: true, value: undefined });
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  const deliver = (result) => {
    const w = waiting.shift();
    if (w) w.resolve(result);
    else queue.push(result);
  };
  return {
    stream: iterator,
    state,
    push: (value) => deliver({ done: false, value }),
    end: () => deliver({ done: true, value: undefined }),
    fail: (error) => waiting.shift().reject(error),
  };
}

/** A pacer on virtual time whose provider answers every call with a fresh channel. */
function streamingSetup(t, options = {}) {
  const channels = [];
  const env = setup(t, {
    maxItemsPerBatch: 4,
    ...options,
    answer: () => {
      const c = channel();
      channels.push(c);
      return c.stream;
    },
  });
  return { ...env, channels };
}

describe("stream forms", () => {
  test("an async generator, resolved a segment at a time: the first paragraph resolves before the last segment is written", async (t) => {
    const gate = [];
    const { clock, calls, send, pacer } = setup(t, {
      maxItemsPerBatch: 4,
      answer: async function* (r) {
        for (const [i, segment] of segments(r).entries()) {
          await new Promise((resolve) => gate.push(resolve));
          yield segment;
          if (i === 3) yield { usage: { inputTokens: 40, outputTokens: 60 } };
        }
      },
    });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    for (let i = 0; i < 3; i++) {
      await flushMicrotasks();
      gate.shift()();
      await flushMicrotasks();
    }
    // Three segments written, the fourth not yet.
    assert.equal(states[0].status, "fulfilled", "the first paragraph resolved early");
    assert.equal(states[0].value, T(UNLIKE[0]));
    assert.equal(states[3].status, "pending");
    gate.shift()();
    await flushMicrotasks(10);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
    const stats = pacer.stats();
    assert.equal(stats.streamedCalls, 1);
    // Every paragraph but the last resolved once the next one had closed.
    assert.equal(stats.earlyResolved, 3);
    assert.equal(stats.inputTokens, 40);
    assert.equal(stats.outputTokens, 60);
    assert.equal(stats.providerCalls, 1);
    assert.ok(states.every((s) => s.settlements === 1));
  });

  test("a ReadableStream of text cut at arbitrary places", async (t) => {
    const { clock, send, pacer } = setup(t, {
      maxItemsPerBatch: 4,
      answer: (r) => {
        const reply = segments(r).join("");
        return new ReadableStream({
          start(controller) {
            for (let i = 0; i < reply.length; i += 7) controller.enqueue(reply.slice(i, i + 7));
            controller.close();
          },
        });
      },
    });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    await flushMicrotasks(20);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
    assert.equal(pacer.stats().streamedCalls, 1);
  });

  test("a provider that is itself an async generator function, for a single request: the joined text", async (t) => {
    const { clock, send } = setup(t, {
      answer: async function* () {
        yield "Hal";
        yield "lo, ";
        yield "Welt";
      },
    });
    const state = send(item("Hello, world", { llm: false }));
    await clock.tickAsync(10);
    await flushMicrotasks(10);
    assert.equal(state.value, "Hallo, Welt");
  });

  test("paragraphs of like lengths resolve as the next one closes; the last one when the stream ends", async (t) => {
    const { clock, send, channels, calls, pacer } = streamingSetup(t);
    const texts = ["one cat", "two cats", "six cats", "ten cats"];
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100);
    const parts = segments(calls[0]);
    channels[0].push(parts[0]);
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), ["pending", "pending", "pending", "pending"]);
    channels[0].push(parts[1]);
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), [T(texts[0]), "pending", "pending", "pending"]);
    channels[0].push(parts[2] + parts[3]);
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), [...texts.slice(0, 3).map(T), "pending"]);
    channels[0].end();
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), texts.map(T));
    assert.equal(pacer.stats().earlyResolved, 3);
  });

  test("a model that counts on after a merge: nothing more resolves early", async (t) => {
    const { clock, send, channels, calls, pacer } = streamingSetup(t, { baseRetryDelayMs: 10 });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    const [m, x] = [calls[0].markers, calls[0].texts];
    const tag = m[0][0].replace(/[<>\d]/g, "");
    // Segments 1 and 2 merged under the first pair, the rest numbered 2, 3 by counting.
    channels[0].push(`${m[0][0]}${T(x[0])} ${T(x[1])}${m[0][1]}\n<${tag}2>${T(x[2])}</${tag}2>\n<${tag}3>${T(x[3])}</${tag}3>`);
    channels[0].end();
    await flushMicrotasks(5);
    assert.equal(pacer.stats().earlyResolved, 0);
    await clock.tickAsync(100);
    assert.equal(calls[1].texts.length, 4, "the reply proved nothing");
    for (const s of segments(calls[1])) channels[1].push(s);
    channels[1].end();
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
  });

  test("the separator layout resolves nothing before the end", async (t) => {
    const { clock, send, channels, calls } = streamingSetup(t, { segmentFormat: "separator" });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    channels[0].push(calls[0].texts.map(T).join(calls[0].separator));
    await flushMicrotasks(10);
    assert.ok(states.every((s) => s.status === "pending"));
    channels[0].end();
    await flushMicrotasks(10);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
  });
});

describe("broken streams and bad values", () => {
  for (const [name, value, shown] of [
    ["a number", 42, "42"],
    ["null", null, "null"],
    ["an object without usage or limits", { text: "x" }, "object"],
  ]) {
    test(`a stream that yields ${name} is a failed call whose message names it; what it proved stays`, async (t) => {
      const { clock, send, channels, calls, pacer } = streamingSetup(t, { maxRetries: 0 });
      const states = UNLIKE.map((x) => send(item(x)));
      await clock.tickAsync(100);
      const parts = segments(calls[0]);
      for (const s of parts.slice(0, 3)) channels[0].push(s);
      await flushMicrotasks(10);
      const early = pacer.stats().earlyResolved;
      assert.ok(early >= 1, "something resolved before the bad value");
      channels[0].push(value);
      await flushMicrotasks(10);
      assert.equal(channels[0].state.returned, 1, "the iterator is released");
      for (let i = 0; i < 4; i++) {
        if (i < early) {
          assert.equal(states[i].value, T(UNLIKE[i]));
        } else {
          assertPacerError(states[i].reason, "provider_error");
          assert.match(states[i].reason.message, /stream yielded/);
          assert.ok(states[i].reason.message.includes(shown), states[i].reason.message);
        }
      }
      assert.equal(pacer.stats().streamedCalls, 1);
    });
  }

  test("an iterator that throws: the open items are retried as a smaller batch", async (t) => {
    const { clock, send, channels, calls } = streamingSetup(t, { baseRetryDelayMs: 10 });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    for (const s of segments(calls[0]).slice(0, 3)) channels[0].push(s);
    await flushMicrotasks(10);
    channels[0].fail(Object.assign(new Error("socket hang up"), { status: 502 }));
    await flushMicrotasks(10);
    await clock.tickAsync(100);
    assert.equal(calls.length, 2);
    const open = calls[1].texts;
    assert.ok(open.length < 4 && open.length >= 1, `retried ${open.length}`);
    assert.ok(!open.includes(UNLIKE[0]), "a resolved paragraph is not sent again");
    for (const s of segments(calls[1])) channels[1].push(s);
    channels[1].end();
    await flushMicrotasks(10);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
    assert.ok(states.every((s) => s.settlements === 1));
  });

  test("a next() that never settles is a timeout, and the iterator is released", async (t) => {
    const { clock, send, channels } = streamingSetup(t, { timeoutMs: 1000, maxRetries: 0 });
    const state = send(item("Hello there", { llm: false }));
    await clock.tickAsync(10);
    channels[0].push("Hal");
    await flushMicrotasks(5);
    await clock.tickAsync(999);
    await flushMicrotasks(5);
    assert.equal(state.status, "pending", "999 ms after the last value");
    await clock.tickAsync(2);
    await flushMicrotasks(5);
    assertPacerError(state.reason, "timeout");
    assert.equal(channels[0].state.returned, 1);
  });

  test("timeoutMs runs between values: a slow stream that keeps coming is never cut", async (t) => {
    const { clock, send, channels, calls, pacer } = streamingSetup(t, { timeoutMs: 1000 });
    const states = UNLIKE.map((x) => send(item(x)));
    // A full batch starts at once (t = 0); each value comes 900 ms after the one before.
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    for (const s of segments(calls[0])) {
      await clock.tickAsync(900);
      channels[0].push(s);
      await flushMicrotasks(5);
    }
    await clock.tickAsync(900);
    channels[0].end();
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
    assert.equal(pacer.stats().providerCalls, 1);
  });

  test("a stream that resolves twice, throws after its end, or comes after a timeout leaks nothing", async (t) => {
    let late;
    const { clock, send, calls } = setup(t, {
      timeoutMs: 1000,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      answer: (r) => {
        if (r.texts[0] === "late") {
          late = deferred();
          return late.promise;
        }
        let reads = 0;
        const stream = {
          [Symbol.asyncIterator]: () => ({
            next: async () => {
              reads++;
              if (reads === 1) return { done: false, value: "Hallo" };
              if (reads === 2) return { done: true, value: "a return value, ignored" };
              throw new Error("read after the end");
            },
          }),
        };
        // A thenable that resolves twice.
        return { then: (resolve) => (resolve(stream), resolve("twice")) };
      },
    });
    const twice = send(item("Hello", { llm: false }));
    const afterTimeout = send(item("late", { llm: false }));
    await clock.tickAsync(10);
    await flushMicrotasks(10);
    // Read to its end and no further: the throw after the end is never reached.
    assert.equal(twice.value, "Hallo");
    await clock.tickAsync(1000);
    await flushMicrotasks(5);
    assertPacerError(afterTimeout.reason, "timeout");
    let returned = 0;
    late.resolve({
      [Symbol.asyncIterator]: () => ({
        next: () => assert.fail("a stream for a call given up is never read"),
        return: () => {
          returned++;
          return Promise.resolve({ done: true });
        },
      }),
    });
    await flushMicrotasks(5);
    assert.equal(returned, 1, "released at once");
    assert.ok([twice, afterTimeout].every((s) => s.settlements === 1));
    assert.equal(calls.length, 2);
  });

  test("a model that loops is cut at the length cap, released, and its batch sent again", async (t) => {
    let released = 0;
    let values = 0;
    const { clock, send, calls } = setup(t, {
      maxItemsPerBatch: 4,
      baseRetryDelayMs: 10,
      answer: (r) =>
        r.attempt > 0
          ? segments(r).join("")
          : (async function* () {
              try {
                yield segments(r)[0] + r.markers[1][0];
                for (;;) {
                  values++;
                  yield "la la la ";
                }
              } finally {
                released++;
              }
            })(),
    });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    await flushMicrotasks(50);
    // Cut after 20 × (the texts' bytes + 16 each) + 4096 bytes, at 9 bytes a value.
    const cap = 20 * UNLIKE.reduce((sum, x) => sum + Buffer.byteLength(x) + 16, 0) + 4096;
    assert.equal(released, 1, "the generator was returned");
    assert.ok(values <= Math.ceil(cap / 9) + 1, `${values} values read`);
    await clock.tickAsync(100);
    assert.equal(calls.length, 2);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
  });

  test("dispose() during a stream rejects its items and releases the iterator", async (t) => {
    const { clock, send, channels, pacer } = streamingSetup(t);
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    channels[0].push("<s1>");
    await flushMicrotasks(5);
    pacer.dispose();
    await flushMicrotasks(5);
    assert.deepEqual(outcomes(states), ["disposed", "disposed", "disposed", "disposed"]);
    assert.equal(channels[0].state.returned, 1);
  });
});

describe("reasoning", () => {
  test("<think> drafts holding markers are not the reply, in a stream and in a string reply", async (t) => {
    const { clock, send, calls } = setup(t, {
      maxItemsPerBatch: 4,
      answer: async function* (r) {
        const draft = r.texts.map((x, i) => r.markers[i][0] + "draft" + r.markers[i][1]).join("\n");
        const reply = `<Think>${draft}</THINK>${segments(r).join("")}`;
        for (let i = 0; i < reply.length; i += 5) yield reply.slice(i, i + 5);
      },
    });
    const states = UNLIKE.map((x) => send(item(x)));
    await clock.tickAsync(100);
    await flushMicrotasks(40);
    assert.deepEqual(outcomes(states), UNLIKE.map(T));
    assert.equal(calls.length, 1);
  });

  test("a single reply left empty by reasoning is a failed call, retried", async (t) => {
    const { clock, send, calls } = setup(t, {
      baseRetryDelayMs: 10,
      answer: (r) => (r.attempt === 0 ? "<think>Let me think about this and never stop" : "Hallo"),
    });
    const state = send(item("Hello", { llm: false }));
    await clock.tickAsync(100);
    await flushMicrotasks(5);
    assert.equal(state.value, "Hallo");
    assert.equal(calls.length, 2);
  });
});

describe("previews", () => {
  test("onPartial gets the segment so far, trimmed, without markers, at most once per value, never after settling", async (t) => {
    const { clock, pacer, channels, calls } = streamingSetup(t);
    const seen = UNLIKE.map(() => []);
    const settledAt = UNLIKE.map(() => null);
    const promises = UNLIKE.map((x, i) =>
      pacer.translate(item(x, { onPartial: (text) => seen[i].push({ text, settled: settledAt[i] !== null }) })),
    );
    promises.forEach((p, i) => p.then(() => (settledAt[i] = seen[i].length)));
    await clock.tickAsync(100);
    const reply = segments(calls[0]).join("");
    let values = 0;
    for (let i = 0; i < reply.length; i += 4) {
      channels[0].push(reply.slice(i, i + 4));
      values++;
      await flushMicrotasks(3);
    }
    channels[0].end();
    const out = await Promise.all(promises);
    assert.deepEqual(out, UNLIKE.map(T));
    for (let i = 0; i < UNLIKE.length; i++) {
      assert.ok(seen[i].length >= 2, `previews of ${i}: ${JSON.stringify(seen[i])}`);
      assert.ok(seen[i].length <= values);
      for (const { text, settled } of seen[i]) {
        assert.equal(settled, false, "no preview after the promise settled");
        assert.ok(T(UNLIKE[i]).startsWith(text), text);
        assert.equal(text, text.trim());
        assert.ok(!text.includes("<"), text);
      }
    }
  });

  test("an onPartial that throws is ignored; onPartial that is not a function is invalid_input", async (t) => {
    const { clock, pacer, channels } = streamingSetup(t);
    const p = pacer.translate(item("Hello", { llm: false, onPartial: () => { throw new Error("boom"); } }));
    await clock.tickAsync(10);
    channels[0].push("Hal");
    await flushMicrotasks(3);
    channels[0].push("lo");
    channels[0].end();
    assert.equal(await p, "Hallo");
    const bad = await pacer.translate(item("x", { onPartial: "yes" })).catch((e) => e);
    assertPacerError(bad, "invalid_input");
    assert.match(bad.message, /onPartial/);
  });

  test("no previews after the reply is out of order", async (t) => {
    const { clock, pacer, channels, calls } = streamingSetup(t, { baseRetryDelayMs: 10 });
    const seen = [];
    const promises = UNLIKE.map((x) => pacer.translate(item(x, { onPartial: (text) => seen.push(text) })));
    await clock.tickAsync(100);
    const [first, second] = segments(calls[0]);
    const swapped = second + first;
    for (let i = 0; i < swapped.length; i += 5) {
      channels[0].push(swapped.slice(i, i + 5));
      await flushMicrotasks(2);
    }
    channels[0].end();
    await flushMicrotasks(5);
    assert.deepEqual(seen, []);
    await clock.tickAsync(100);
    for (const s of segments(calls[1])) channels[1].push(s);
    channels[1].end();
    assert.deepEqual(await Promise.all(promises), UNLIKE.map(T));
  });
});

describe("damage at the last position after a merge and renumbering", () => {
  const LIKE = [
    "First paragraph of medium size here.",
    "Second paragraph, also of a medium size.",
    "Third paragraph of similar length too.",
    "Fourth paragraph with the same size.",
  ];
  /** Segments 2 and 3 merged under id 2, the rest numbered anew, the freed id filled. */
  const mergedAndFilled = (r, last) => [T(r.texts[0]), `${T(r.texts[1])} ${T(r.texts[2])}`, T(r.texts[3]), last];

  for (const [form, reply] of [
    ["an empty last pair", (r) => mergedAndFilled(r, "").map((x, i) => r.markers[i][0] + x + r.markers[i][1]).join("\n")],
    ["a closing remark inside the last pair", (r) => mergedAndFilled(r, "I hope this helps!").map((x, i) => r.markers[i][0] + x + r.markers[i][1]).join("\n")],
    ["an array of the right length whose last element is a remark", (r) => mergedAndFilled(r, "Let me know if you need more.")],
  ]) {
    test(`${form}: no paragraph receives another paragraph's translation`, async (t) => {
      const { clock, send, calls } = setup(t, {
        maxItemsPerBatch: 4,
        baseRetryDelayMs: 10,
        answer: async (r) => (r.attempt === 0 && r.isBatch ? reply(r) : r.isBatch ? r.texts.map(T) : T(r.text)),
      });
      const states = LIKE.map((x) => send(item(x)));
      await clock.tickAsync(5000);
      assert.deepEqual(outcomes(states), LIKE.map(T));
      assert.ok(calls.length >= 2, "the damaged reply was not taken as it stands");
    });
  }
});
