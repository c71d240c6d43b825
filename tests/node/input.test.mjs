// translate(item): invalid items reject (never throw) with invalid_input naming the
// field; blank text resolves to itself without a provider call.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, assertPacerError, track } from "./helpers.mjs";

/** Calls translate and checks it did not throw and returned a promise. */
function translateNoThrow(pacer, value) {
  let result;
  assert.doesNotThrow(() => {
    result = pacer.translate(value);
  });
  assert.ok(result instanceof Promise, "translate returns a promise");
  return result;
}

describe("invalid items", () => {
  const valid = { text: "hi", sourceLang: "en", targetLang: "de", providerId: "p" };
  const cases = [
    ["text", { ...valid, text: undefined }],
    ["text", { sourceLang: "en", targetLang: "de", providerId: "p" }],
    ["text", { ...valid, text: 42 }],
    ["text", { ...valid, text: null }],
    ["text", { ...valid, text: ["a"] }],
    ["sourceLang", { ...valid, sourceLang: "" }],
    ["sourceLang", { ...valid, sourceLang: undefined }],
    ["sourceLang", { ...valid, sourceLang: 1 }],
    ["targetLang", { ...valid, targetLang: "" }],
    ["targetLang", { ...valid, targetLang: null }],
    ["providerId", { ...valid, providerId: "" }],
    ["providerId", { ...valid, providerId: undefined }],
    ["providerId", { ...valid, providerId: 7 }],
    ["llm", { ...valid, llm: "yes" }],
    ["llm", { ...valid, llm: 1 }],
    ["context", { ...valid, context: 5 }],
    ["context", { ...valid, context: null }],
    ["priority", { ...valid, priority: "high" }],
    ["priority", { ...valid, priority: NaN }],
    ["priority", { ...valid, priority: Infinity }],
    ["signal", { ...valid, signal: {} }],
    ["signal", { ...valid, signal: "abort" }],
  ];
  for (const [field, value] of cases) {
    const shown = JSON.stringify(value, (k, v) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v === undefined ? "undefined" : v));
    test(`${field} invalid in ${shown}: rejects invalid_input naming ${field}`, async (t) => {
      const { pacer, clock, calls } = setup(t);
      const err = await translateNoThrow(pacer, value).then(
        () => assert.fail("expected a rejection"),
        (e) => e,
      );
      assertPacerError(err, "invalid_input");
      assert.ok(err.message.includes(field), `message names ${field}: ${err.message}`);
      await clock.tickAsync(1000);
      assert.equal(calls.length, 0);
    });
  }

  for (const value of [undefined, null, "text", 42, true]) {
    test(`a non-object item (${String(value)}) rejects invalid_input`, async (t) => {
      const { pacer } = setup(t);
      const err = await translateNoThrow(pacer, value).then(() => assert.fail("resolved"), (e) => e);
      assertPacerError(err, "invalid_input");
    });
  }

  test("a signal whose aborted getter throws rejects invalid_input naming signal", async (t) => {
    const { pacer } = setup(t);
    const signal = { get aborted() { throw new Error("boom"); }, addEventListener() {} };
    const err = await translateNoThrow(pacer, { ...item("x"), signal }).then(() => assert.fail("resolved"), (e) => e);
    assertPacerError(err, "invalid_input");
    assert.ok(err.message.includes("signal"), err.message);
  });

  test("an item whose getter or proxy throws rejects invalid_input, with the error as cause", async (t) => {
    const { pacer } = setup(t);
    const boom = new Error("boom");
    const getter = { ...item("x"), get targetLang() { throw boom; } };
    const proxy = new Proxy(item("x"), { get() { throw boom; } });
    for (const unreadable of [getter, proxy]) {
      const err = await translateNoThrow(pacer, unreadable).then(() => assert.fail("resolved"), (e) => e);
      assertPacerError(err, "invalid_input");
      assert.equal(err.cause, boom);
    }
  });

  test("each field of an item is read once, valid or not", async (t) => {
    const { pacer, clock } = setup(t);
    const counting = (target) => {
      const reads = new Map();
      const proxy = new Proxy(target, {
        get(object, key, receiver) {
          reads.set(key, (reads.get(key) ?? 0) + 1);
          return Reflect.get(object, key, receiver);
        },
      });
      return { proxy, reads };
    };
    const valid = counting(item("counted"));
    const invalid = counting({ ...item("counted"), llm: "yes" });
    const ok = track(pacer.translate(valid.proxy));
    const bad = track(pacer.translate(invalid.proxy));
    await clock.tickAsync(1000);
    assert.equal(ok.value, "COUNTED");
    assertPacerError(bad.reason, "invalid_input");
    for (const { reads } of [valid, invalid]) {
      assert.ok(reads.size > 0);
      for (const [key, count] of reads) assert.equal(count, 1, `${String(key)} read ${count} times`);
    }
  });

  test("an invalid item leaves the valid ones alone", async (t) => {
    const { pacer, clock, send } = setup(t);
    const good = send(item("good"));
    const bad = track(pacer.translate({ ...item("bad"), targetLang: "" }));
    await clock.tickAsync(100);
    assert.equal(good.value, "GOOD");
    assertPacerError(bad.reason, "invalid_input");
  });

  test("optional fields may be omitted: llm, context, priority, signal", async (t) => {
    const { clock, send } = setup(t);
    const s = send({ text: "min", sourceLang: "en", targetLang: "de", providerId: "p" });
    await clock.tickAsync(100);
    assert.equal(s.value, "MIN");
  });
});

describe("blank text", () => {
  for (const text of ["", " ", "   ", "\n", "\t\n  \r\n"]) {
    test(`${JSON.stringify(text)} resolves to itself without a provider call`, async (t) => {
      const { clock, calls, send } = setup(t);
      const s = send(item(text));
      await clock.tickAsync(1000);
      assert.equal(s.status, "fulfilled");
      assert.equal(s.value, text);
      assert.equal(calls.length, 0);
    });
  }

  test("blank text needs no token and does not wait for the batch window", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 0.001, capacity: 1 });
    send(item("uses the token", { llm: false }));
    await clock.tickAsync(0);
    const s = send(item("  "));
    await clock.tickAsync(0);
    assert.equal(s.value, "  ");
    assert.equal(calls.length, 1);
  });

  test("blank text is not part of a batch's texts", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("a"));
    send(item(" \n "));
    send(item("b"));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a", "b"]);
  });
});

describe("texts of every size and script cross intact", () => {
  test("each item reaches the provider and comes back as its own text", async (t) => {
    const { clock, calls, send } = setup(t, {
      answer: (request) => (request.isBatch ? request.texts.map((x) => `<${x}>`) : `<${request.text}>`),
    });
    const texts = [
      "plain", "héllo wörld", "日本語のテキスト", "😀 emoji 👩‍👩‍👧", "mixed ascii then ü at the end ü",
      "x".repeat(5000), "ä".repeat(3000), `${"%".repeat(40)} percent runs`, "tab\tand\r\nnewlines",
    ];
    // Enough long texts that the module's memory grows between writes.
    for (let i = 0; i < 300; i++) texts.push(`${i} ${"long paragraph ".repeat(400)}`);
    const sent = texts.map((text) => send(item(text)));
    await clock.tickAsync(60_000);
    sent.forEach((s, i) => assert.equal(s.value, `<${texts[i]}>`, `item ${i} got its own text`));
    const seen = calls.flatMap((c) => c.texts);
    assert.deepEqual([...seen].sort(), [...texts].sort(), "the provider saw each text exactly");
  });

  test("translations cut out of one string reply keep every script intact", async (t) => {
    // The echo of a batch: each translation is a piece of the reply string, found after
    // multi-byte characters, surrogate pairs and the markers before it.
    const { clock, calls, send } = setup(t, { answer: (request) => request.text });
    const texts = ["héllo wörld", "😀 emoji 👩‍👩‍👧 then ascii", "日本語のテキスト", "plain ascii"];
    const sent = texts.map((text) => send(item(text)));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1, "one batch call");
    assert.equal(calls[0].isBatch, true);
    sent.forEach((s, i) => assert.equal(s.value, texts[i], `item ${i} got its own text`));
  });

  test("a string reply with a lone surrogate gives U+FFFD in its translations", async (t) => {
    const { clock, calls, send } = setup(t, { answer: (request) => request.text.replace("x", "\uD800x") });
    const sent = ["one x", "two", "three", "four"].map((text) => send(item(text)));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1, "one batch call");
    assert.deepEqual(sent.map((s) => s.value), ["one \uFFFDx", "two", "three", "four"]);
  });

  test("a lone surrogate arrives as U+FFFD, like any UTF-8 conversion", async (t) => {
    const { clock, calls, send } = setup(t);
    const s = send(item("a\uD800b", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(calls[0].text, "a\uFFFDb");
    assert.equal(s.value, "A\uFFFDB");
  });
});
