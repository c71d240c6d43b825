// The provider's replies: separator choice and tolerant split (the older layout,
// `segmentFormat: "separator"`), arrays, count mismatches with retries and fallback,
// replies of the wrong type. The markers layout's own rules are in
// segment-identity.test.mjs.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, assertPacerError } from "./helpers.mjs";

/** Answers a batch with one joined string of translations: "T:" + text. */
const joinedAnswer = async (r) => r.texts.map((x) => `T:${x}`).join(r.separator);

/** These tests are about the separator layout, which is no longer the default. */
const SEPARATOR = { segmentFormat: "separator" };

/** Answers each text with f(text), in whichever layout the request is. */
const marked = (r, f) =>
  r.texts.map((x, i) => (r.markers ? r.markers[i][0] + f(x) + r.markers[i][1] : f(x))).join("\n");

describe("separator", () => {
  test("is chosen per batch so that it occurs in none of the texts", async (t) => {
    const tricky = [
      "a\n\n%%\n\nb",
      "%%",
      "x\n%%\ny",
      "\n\n%%%%\n\n",
      "50%% off",
      "%%%%%%",
      "line\n\n%%%\n\nline",
    ];
    const { clock, calls, send } = setup(t, { ...SEPARATOR, maxItemsPerBatch: tricky.length, answer: joinedAnswer });
    const states = tricky.map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const [r] = calls;
    assert.deepEqual(r.texts, tricky);
    for (const x of r.texts) assert.ok(!x.includes(r.separator), `separator ${JSON.stringify(r.separator)} occurs in ${JSON.stringify(x)}`);
    assert.equal(r.text, r.texts.join(r.separator));
    // White space around a segment may be trimmed, its content may not change.
    assert.deepEqual(states.map((s) => s.value.trim()), tricky.map((x) => `T:${x}`.trim()));
  });

  test("a paragraph holding the default separator still gets its own translation back", async (t) => {
    const { clock, calls, send } = setup(t, { ...SEPARATOR, answer: joinedAnswer });
    const first = send(item("before\n\n%%\n\nafter"));
    const second = send(item("plain"));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.equal(first.value, "T:before\n\n%%\n\nafter");
    assert.equal(second.value, "T:plain");
  });

  test("texts made only of separator-like lines are each translated on their own", async (t) => {
    const texts = ["%%", "%%%", "%%%%", "%%%%%", "a"];
    const { clock, send, calls } = setup(t, { ...SEPARATOR, maxItemsPerBatch: 5, answer: joinedAnswer });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(states.map((s) => s.value), texts.map((x) => `T:${x}`));
  });

  test("the separator of a single request is a string, and text is texts[0]", async (t) => {
    const { clock, calls, send } = setup(t, SEPARATOR);
    send(item("%% alone %%"));
    await clock.tickAsync(100);
    assert.equal(calls[0].isBatch, false);
    assert.equal(typeof calls[0].separator, "string");
    assert.equal(calls[0].text, "%% alone %%");
  });
});

describe("tolerant split of a string reply", () => {
  // The separator's core (the non-space part) is placed with various white space.
  const shapes = {
    "the exact separator": (parts, sep) => parts.join(sep),
    "CRLF around it": (parts, sep) => parts.join(`\r\n${sep.trim()}\r\n`),
    "CRLF blank lines around it": (parts, sep) => parts.join(`\r\n\r\n${sep.trim()}\r\n\r\n`),
    "single newlines around it": (parts, sep) => parts.join(`\n${sep.trim()}\n`),
    "spaces and tabs around it": (parts, sep) => parts.join(` \t\n  ${sep.trim()}  \n\t `),
    "a trailing separator": (parts, sep) => parts.join(sep) + sep,
    "a trailing separator without newline": (parts, sep) => parts.join(sep) + `\n${sep.trim()}`,
    "a wrapping code fence": (parts, sep) => "```\n" + parts.join(sep) + "\n```",
    "a wrapping code fence with a language": (parts, sep) => "```text\n" + parts.join(sep) + "\n```\n",
    "a code fence and CRLF": (parts, sep) => "```\r\n" + parts.join(`\r\n${sep.trim()}\r\n`) + "\r\n```",
    "leading and trailing white space": (parts, sep) => "\n\n  " + parts.join(sep) + "  \n\n",
  };
  for (const [name, shape] of Object.entries(shapes)) {
    test(name, async (t) => {
      const { clock, calls, send } = setup(t, {
        ...SEPARATOR,
        maxItemsPerBatch: 3,
        maxBatchRetries: 0,
        fallbackToIndividual: false,
        answer: async (r) => shape(["Eins", "Zwei", "Drei"], r.separator),
      });
      const states = ["one", "two", "three"].map((x) => send(item(x)));
      await clock.tickAsync(100);
      assert.equal(calls.length, 1, "split on the first reply: no retry");
      assert.deepEqual(
        states.map((s) => (s.status === "fulfilled" ? s.value.trim() : s.reason.code)),
        ["Eins", "Zwei", "Drei"],
      );
    });
  }

  test("segments keep their inner line breaks", async (t) => {
    const { clock, send } = setup(t, {
      ...SEPARATOR,
      answer: async (r) => ["Zeile 1\nZeile 2", "Absatz\n\nzwei"].join(r.separator),
    });
    const a = send(item("line 1\nline 2"));
    const b = send(item("paragraph\n\ntwo"));
    await clock.tickAsync(100);
    assert.equal(a.value, "Zeile 1\nZeile 2");
    assert.equal(b.value, "Absatz\n\nzwei");
  });

  test("line breaks inside a segment stay as the model wrote them, CRLF included", async (t) => {
    const { clock, send } = setup(t, {
      ...SEPARATOR,
      answer: async (r) => ["Zeile 1\r\nZeile 2", "Absatz\r\n\r\nzwei\rdrei"].join(`\r\n${r.separator.trim()}\r\n`),
    });
    const a = send(item("line 1\r\nline 2"));
    const b = send(item("paragraph\r\n\r\ntwo\rthree"));
    await clock.tickAsync(100);
    assert.equal(a.value, "Zeile 1\r\nZeile 2");
    assert.equal(b.value, "Absatz\r\n\r\nzwei\rdrei");
  });
});

describe("array replies", () => {
  test("one string per text, in order", async (t) => {
    const { clock, send, calls } = setup(t, { answer: async (r) => r.texts.map((x, i) => `${i}:${x}`) });
    const states = ["a", "b", "c"].map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(states.map((s) => s.value), ["0:a", "1:b", "2:c"]);
  });

  test("array elements are used as they are, even when they contain the separator", async (t) => {
    const { clock, send } = setup(t, { ...SEPARATOR, answer: async (r) => [`x${r.separator}y`, "z"] });
    const a = send(item("a"));
    const b = send(item("b"));
    await clock.tickAsync(100);
    assert.equal(b.value, "z");
    assert.ok(a.value.startsWith("x") && a.value.endsWith("y"));
  });
});

describe("count mismatch", () => {
  test("retried maxBatchRetries times with exponential backoff, then one by one", async (t) => {
    const { clock, calls, send, pacer, events } = setup(t, {
      maxBatchRetries: 2,
      baseRetryDelayMs: 1000,
      // The batch keeps its size (this is about one batch's retries; see
      // cannot-batch.test.mjs for the learned batch size).
      adaptiveBatching: false,
      // A different wrong reply on each try: a repeated one would end the retries.
      answer: async (r) => (r.isBatch ? `only one segment (try ${r.attempt})` : `single ${r.text}`),
    });
    const states = ["a", "b", "c"].map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    await clock.tickAsync(20_000);
    const batchCalls = calls.filter((c) => c.isBatch);
    assert.equal(batchCalls.length, 3, "the first try and 2 retries");
    assert.deepEqual(batchCalls.map((c) => c.attempt), [0, 1, 2]);
    for (const c of batchCalls) assert.deepEqual(c.texts, ["a", "b", "c"]);
    // Backoff: retry n waits between 0.5x and 1x of base * 2^n after the failed call.
    for (let n = 0; n < 2; n++) {
      const gap = batchCalls[n + 1].at - batchCalls[n].at;
      const full = 1000 * 2 ** n;
      assert.ok(gap >= full / 2 - 1 && gap <= full + 1, `retry ${n} waited ${gap} ms (expected ${full / 2}..${full})`);
    }
    const singles = calls.filter((c) => !c.isBatch);
    assert.deepEqual(singles.map((c) => c.text).sort(), ["a", "b", "c"]);
    for (const c of singles) assert.ok(c.at >= batchCalls[2].at);
    assert.deepEqual(states.map((s) => s.value), ["single a", "single b", "single c"]);
    const stats = pacer.stats();
    assert.equal(stats.countMismatches, 3);
    assert.equal(stats.fallbacks, 1, "one batch sent again one item at a time");
    assert.equal(stats.providerCalls, 6);
    assert.equal(stats.batchCalls, 3);
    assert.equal(stats.items, 3);
    const mismatchEvents = events.filter((e) => e.type === "countMismatch");
    assert.equal(mismatchEvents.length, 3);
    assert.deepEqual(
      { providerId: mismatchEvents[0].providerId, expected: mismatchEvents[0].expected, got: mismatchEvents[0].got },
      // A string without any pair proves none of the three translations.
      { providerId: "p1", expected: 3, got: 0 },
    );
    const fallback = events.find((e) => e.type === "fallback");
    assert.ok(fallback, "a fallback event");
    assert.equal(fallback.providerId, "p1");
    assert.equal(fallback.items, 3);
    const retries = events.filter((e) => e.type === "retry");
    assert.equal(retries.length, 2);
    for (const e of retries) assert.equal(e.reason, "count_mismatch");
  });

  test("without fallbackToIndividual the items reject with count_mismatch", async (t) => {
    const { clock, calls, send, pacer } = setup(t, {
      maxBatchRetries: 1,
      fallbackToIndividual: false,
      baseRetryDelayMs: 10,
      answer: async (r) => (r.isBatch ? ["just one"] : "single"),
    });
    const states = ["a", "b"].map((x) => send(item(x)));
    await clock.tickAsync(5000);
    assert.equal(calls.length, 2, "the first try and one retry, no singles");
    assert.ok(calls.every((c) => c.isBatch));
    for (const s of states) {
      assert.equal(s.status, "rejected");
      assertPacerError(s.reason, "count_mismatch");
    }
    assert.equal(pacer.stats().countMismatches, 2);
    assert.equal(pacer.stats().fallbacks, 0);
  });

  test("the fallback's single calls are paced by the token bucket", async (t) => {
    const { clock, calls, send } = setup(t, {
      rate: 1,
      capacity: 1,
      maxBatchRetries: 0,
      answer: async (r) => (r.isBatch ? "merged" : `s:${r.text}`),
    });
    const states = ["a", "b", "c"].map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 4);
    const times = calls.map((c) => c.at);
    for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 999, `calls at ${times}`);
    assert.deepEqual(states.map((s) => s.value), ["s:a", "s:b", "s:c"]);
  });

  test("maxBatchRetries 0: straight to the fallback", async (t) => {
    const { clock, calls, send } = setup(t, {
      maxBatchRetries: 0,
      answer: async (r) => (r.isBatch ? ["1", "2", "3"] : `s:${r.text}`),
    });
    const states = ["a", "b"].map((x) => send(item(x)));
    await clock.tickAsync(5000);
    assert.equal(calls.filter((c) => c.isBatch).length, 1);
    assert.equal(calls.filter((c) => !c.isBatch).length, 2);
    assert.deepEqual(states.map((s) => s.value), ["s:a", "s:b"]);
  });

  test("too many segments is a mismatch too", async (t) => {
    const { clock, send, pacer } = setup(t, {
      ...SEPARATOR,
      maxBatchRetries: 0,
      fallbackToIndividual: false,
      answer: async (r) => ["a", "b", "c"].join(r.separator),
    });
    const states = ["x", "y"].map((x) => send(item(x)));
    await clock.tickAsync(1000);
    for (const s of states) assertPacerError(s.reason, "count_mismatch");
    assert.equal(pacer.stats().countMismatches, 1);
  });

  test("a retry that gets the right count resolves the batch", async (t) => {
    const { clock, calls, send, pacer } = setup(t, {
      baseRetryDelayMs: 100,
      answer: async (r) => (r.attempt === 0 ? "merged" : r.texts.map((x) => x.toUpperCase())),
    });
    const states = ["a", "b"].map((x) => send(item(x)));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 2);
    assert.deepEqual(calls.map((c) => c.attempt), [0, 1]);
    assert.deepEqual(states.map((s) => s.value), ["A", "B"]);
    assert.equal(pacer.stats().retries, 1);
    assert.equal(pacer.stats().fallbacks, 0);
  });

  test("each count-mismatch retry waits for a token too", async (t) => {
    const { clock, calls, send } = setup(t, {
      rate: 0.5,
      capacity: 1,
      baseRetryDelayMs: 10,
      maxBatchRetries: 1,
      fallbackToIndividual: false,
      answer: async () => "one",
    });
    ["a", "b"].map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    await clock.tickAsync(1800);
    assert.equal(calls.length, 1, "backoff is over, but the next token comes 2 s after the first call");
    await clock.tickAsync(300);
    assert.equal(calls.length, 2);
  });
});

describe("replies of the wrong type", () => {
  const wrong = {
    number: 42,
    null: null,
    undefined: undefined,
    // An object of strings is a reply keyed by id; one holding a number is of no form.
    "object with a number": { 1: "ok", 2: 7 },
    boolean: true,
    "array with a number": ["ok", 7],
  };
  for (const [name, value] of Object.entries(wrong)) {
    test(`a batch answered with ${name} fails, is retried like a network error, then provider_error`, async (t) => {
      const { clock, calls, send, pacer } = setup(t, {
        maxRetries: 2,
        baseRetryDelayMs: 10,
        answer: async () => value,
      });
      const states = ["a", "b"].map((x) => send(item(x)));
      await clock.tickAsync(10_000);
      assert.equal(calls.length, 3, "the first try and maxRetries retries");
      assert.deepEqual(calls.map((c) => c.attempt), [0, 1, 2]);
      for (const s of states) {
        assert.equal(s.status, "rejected");
        assertPacerError(s.reason, "provider_error");
      }
      assert.equal(pacer.stats().retries, 2);
      assert.equal(pacer.stats().countMismatches, 0, "a wrong type is not a count mismatch");
    });
  }

  test("a single request answered with a number fails with provider_error", async (t) => {
    const { clock, calls, send } = setup(t, { maxRetries: 1, baseRetryDelayMs: 10, answer: async () => 123 });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(5000);
    assert.equal(calls.length, 2);
    assertPacerError(s.reason, "provider_error");
  });

  test("a wrong type followed by a good reply resolves", async (t) => {
    const { clock, send } = setup(t, {
      baseRetryDelayMs: 10,
      answer: async (r) => (r.attempt === 0 ? { choices: [] } : "gut"),
    });
    const s = send(item("good", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(s.value, "gut");
  });
});
