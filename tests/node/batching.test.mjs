// Rules 2-4 of docs/reference.md: when a batch is due, what joins it, compatibility, batches of one, llm:false.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, deferred, assertPacerError } from "./helpers.mjs";

describe("a batch becomes due", () => {
  test("when it holds maxItemsPerBatch items (at once, no delay)", async (t) => {
    const { clock, calls, send } = setup(t, { maxItemsPerBatch: 3, batchDelayMs: 10_000 });
    const states = ["a", "b", "c"].map((x) => send(item(x)));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a", "b", "c"]);
    assert.equal(calls[0].isBatch, true);
    assert.deepEqual(states.map((s) => s.value), ["A", "B", "C"]);
  });

  test("the default maxItemsPerBatch is 4", async (t) => {
    const { clock, calls, send } = setup(t, { batchDelayMs: 10_000 });
    for (const x of ["a", "b", "c", "d", "e"]) send(item(x));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a", "b", "c", "d"]);
  });

  test("when its characters reach maxCharactersPerBatch", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 10, batchDelayMs: 10_000 });
    send(item("aaaa"));
    await clock.tickAsync(0);
    assert.equal(calls.length, 0, "4 of 10 characters: not due");
    send(item("bbbbbb"));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1, "10 of 10 characters: due");
    assert.deepEqual(calls[0].texts, ["aaaa", "bbbbbb"]);
  });

  test("characters are String.length (UTF-16 code units), not code points", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 4, batchDelayMs: 10_000 });
    send(item("😀"));
    send(item("é😀"));
    await clock.tickAsync(0);
    // "😀".length = 2 and "é😀".length = 3: 5 > 4, so the second starts a new batch;
    // counting code points (1 + 2 = 3) would keep both in one batch below the limit.
    await clock.tickAsync(10_000);
    assert.deepEqual(calls.map((c) => c.texts), [["😀"], ["é😀"]]);
  });

  test("two emoji (length 4) reach a limit of 4", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 4, batchDelayMs: 10_000 });
    send(item("😀"));
    send(item("😎"));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1, "2 + 2 = 4 code units reach the limit");
    assert.deepEqual(calls[0].texts, ["😀", "😎"]);
  });

  test("when batchDelayMs has passed since its first item", async (t) => {
    const { clock, calls, send } = setup(t, { batchDelayMs: 300 });
    send(item("a"));
    await clock.tickAsync(200);
    send(item("b"));
    await clock.tickAsync(99);
    assert.equal(calls.length, 0);
    await clock.tickAsync(1);
    assert.equal(calls.length, 1, "due 300 ms after the first item, not the last");
    assert.equal(calls[0].at, 300);
    assert.deepEqual(calls[0].texts, ["a", "b"]);
  });

  test("batchDelayMs 0: a lone item is sent at once", async (t) => {
    const { clock, calls, send } = setup(t, { batchDelayMs: 0 });
    send(item("now"));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].at, 0);
  });

  test("the default batchDelayMs is 100", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("a"));
    await clock.tickAsync(99);
    assert.equal(calls.length, 0);
    await clock.tickAsync(1);
    assert.equal(calls.length, 1);
  });
});

describe("character limit", () => {
  test("an item that would push a batch over the limit starts the next batch", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 10, batchDelayMs: 100 });
    const states = ["aaaa", "bbbbbbb", "cc"].map((x) => send(item(x)));
    await clock.tickAsync(1000);
    const batches = calls.map((c) => c.texts);
    assert.ok(!batches.some((b) => b.includes("aaaa") && b.includes("bbbbbbb")), JSON.stringify(batches));
    for (const c of calls) {
      const chars = c.texts.reduce((n, x) => n + x.length, 0);
      assert.ok(chars <= 10 || c.texts.length === 1, `batch over the limit: ${JSON.stringify(c.texts)}`);
    }
    assert.deepEqual(states.map((s) => s.value), ["AAAA", "BBBBBBB", "CC"]);
  });

  test("an item longer than the limit travels alone", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 5, batchDelayMs: 100 });
    const long = "this text is longer than five";
    const states = [send(item("ab")), send(item(long)), send(item("cd"))];
    await clock.tickAsync(1000);
    const alone = calls.filter((c) => c.texts.includes(long));
    assert.equal(alone.length, 1);
    assert.deepEqual(alone[0].texts, [long]);
    assert.equal(alone[0].isBatch, false);
    assert.equal(alone[0].text, long);
    assert.deepEqual(states.map((s) => s.value), ["AB", long.toUpperCase(), "CD"]);
  });

  test("no batch of several items ever exceeds the limits", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 20, maxItemsPerBatch: 3, batchDelayMs: 50 });
    const lengths = [3, 9, 12, 1, 1, 1, 19, 20, 21, 5, 5, 5, 5, 8, 13, 2];
    const states = lengths.map((n, i) => send(item(String.fromCharCode(97 + i).repeat(n))));
    await clock.tickAsync(5000);
    for (const c of calls) {
      assert.ok(c.texts.length <= 3);
      if (c.texts.length > 1) assert.ok(c.texts.join("").length <= 20, JSON.stringify(c.texts));
    }
    assert.equal(calls.reduce((n, c) => n + c.texts.length, 0), lengths.length);
    assert.ok(states.every((s) => s.status === "fulfilled"));
  });
});

describe("late binding (rule 3)", () => {
  test("a due batch waiting for a token takes in the items that arrive meanwhile", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1, batchDelayMs: 100, maxItemsPerBatch: 4 });
    send(item("first"));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1, "the first batch takes the only token");
    // Items arrive while no token is available; the batch becomes due at 300 but waits.
    for (const [at, text] of [[200, "b"], [400, "c"], [600, "d"], [800, "e"], [900, "f"]]) {
      await clock.tickAsync(at - clock.now);
      send(item(text));
    }
    await clock.tickAsync(1100 - clock.now);
    assert.equal(calls.length, 2, "one more call when the token comes, not one per item");
    assert.deepEqual(calls[1].texts, ["b", "c", "d", "e"], "sealed when the call starts, up to the limit");
    await clock.tickAsync(1000);
    assert.equal(calls.length, 3);
    assert.deepEqual(calls[2].texts, ["f"]);
  });

  test("a slow rate gives fuller batches, not more of them", async (t) => {
    const run = async (rate) => {
      const { clock, calls, send } = setup(t, { rate, capacity: 1, batchDelayMs: 50, maxItemsPerBatch: 8 });
      for (let i = 0; i < 32; i++) {
        send(item(`t${i}`));
        await clock.tickAsync(100);
      }
      await clock.tickAsync(60_000);
      assert.equal(calls.reduce((n, c) => n + c.texts.length, 0), 32);
      return calls.length;
    };
    const fast = await run(100);
    const slow = await run(1);
    assert.ok(slow < fast, `slow rate: ${slow} calls, fast rate: ${fast} calls`);
    assert.ok(slow <= 5, `at 1 call/s, 32 items arriving over 3.2 s fit in few batches (got ${slow})`);
  });

  test("items joining a waiting batch are limited by characters too", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1, batchDelayMs: 0, maxCharactersPerBatch: 6, maxItemsPerBatch: 10 });
    send(item("x"));
    await clock.tickAsync(0);
    for (const text of ["aa", "bb", "cc", "dd"]) send(item(text));
    await clock.tickAsync(1000);
    assert.deepEqual(calls[1].texts, ["aa", "bb", "cc"]);
    await clock.tickAsync(1000);
    assert.deepEqual(calls[2].texts, ["dd"]);
  });
});

describe("batch of one (rule 4) and llm:false", () => {
  test("a batch of one item is sent as a single request", async (t) => {
    const { clock, calls, send } = setup(t);
    const state = send(item("solo"));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const [r] = calls;
    assert.equal(r.isBatch, false);
    assert.deepEqual(r.texts, ["solo"]);
    assert.equal(r.text, r.texts[0]);
    assert.equal(state.value, "SOLO");
  });

  test("llm:false items are never batched", async (t) => {
    const { clock, calls, send } = setup(t, { maxItemsPerBatch: 4 });
    const states = ["a", "b", "c", "d", "e"].map((x) => send(item(x, { llm: false })));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 5);
    for (const c of calls) {
      assert.equal(c.isBatch, false);
      assert.equal(c.texts.length, 1);
      assert.equal(c.text, c.texts[0]);
    }
    assert.deepEqual(states.map((s) => s.value), ["A", "B", "C", "D", "E"]);
  });

  test("llm:false items are still paced by the token bucket", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 2, capacity: 2 });
    for (let i = 0; i < 6; i++) send(item(`n${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    await clock.tickAsync(1001);
    assert.equal(calls.length, 4);
  });

  test("an llm:false item that is alone returns a plain string reply", async (t) => {
    const { clock, send } = setup(t, { answer: async (r) => `plain ${r.text}` });
    const state = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(state.value, "plain x");
  });
});

describe("compatibility", () => {
  const base = { providerId: "p1", sourceLang: "en", targetLang: "de", context: "", llm: true };
  const variants = {
    providerId: "p2",
    sourceLang: "fr",
    targetLang: "ja",
    context: "a page about cats",
    llm: false,
  };
  for (const [field, other] of Object.entries(variants)) {
    test(`items with a different ${field} never share a batch`, async (t) => {
      const { clock, calls, send } = setup(t, { maxItemsPerBatch: 4, batchDelayMs: 100 });
      const states = [
        send({ ...base, text: "one" }),
        send({ ...base, [field]: other, text: "two" }),
        send({ ...base, text: "three" }),
        send({ ...base, [field]: other, text: "four" }),
      ];
      await clock.tickAsync(1000);
      for (const c of calls) {
        const mixed = (c.texts.includes("one") || c.texts.includes("three")) && (c.texts.includes("two") || c.texts.includes("four"));
        assert.ok(!mixed, `incompatible items share a call: ${JSON.stringify(c.texts)}`);
      }
      assert.ok(calls.some((c) => c.texts.length === 2 && c.texts.includes("one") && c.texts.includes("three")));
      assert.deepEqual(states.map((s) => s.value), ["ONE", "TWO", "THREE", "FOUR"]);
    });
  }

  test("the request carries the batch's compatibility fields", async (t) => {
    const { clock, calls, send } = setup(t);
    send({ text: "a", providerId: "deepl", sourceLang: "auto", targetLang: "pt-BR", context: "Title: News" });
    send({ text: "b", providerId: "deepl", sourceLang: "auto", targetLang: "pt-BR", context: "Title: News" });
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const r = calls[0];
    assert.equal(r.providerId, "deepl");
    assert.equal(r.sourceLang, "auto");
    assert.equal(r.targetLang, "pt-BR");
    assert.equal(r.context, "Title: News");
  });

  test("context defaults to an empty string and equals an explicit empty context", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("a"));
    send(item("b", { context: "" }));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].context, "");
    assert.deepEqual(calls[0].texts, ["a", "b"]);
  });

  test("llm defaults to true (items are batched)", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("a"));
    send(item("b", { llm: true }));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].isBatch, true);
  });

  test("compatible items with different priorities may share a batch; each gets its own result", async (t) => {
    const { clock, send } = setup(t);
    const a = send(item("a", { priority: 1 }));
    const b = send(item("b", { priority: 2 }));
    await clock.tickAsync(100);
    assert.equal(a.value, "A");
    assert.equal(b.value, "B");
  });
});

describe("the request object", () => {
  test("has every contract field, texts in order, text laid out in markers", async (t) => {
    const hold = deferred();
    const { clock, calls, send } = setup(t, { answer: () => hold.promise });
    for (const x of ["one", "two", "three"]) send(item(x));
    await clock.tickAsync(100);
    const [r] = calls;
    assert.deepEqual(r.texts, ["one", "two", "three"]);
    assert.deepEqual(r.ids, ["1", "2", "3"]);
    assert.equal(r.markers.length, 3);
    assert.equal(r.text, r.texts.map((x, i) => r.markers[i][0] + x + r.markers[i][1]).join("\n"));
    assert.equal(typeof r.instructions, "string");
    assert.ok(r.instructions.length > 0);
    assert.equal("separator" in r, false, "the markers layout has no separator");
    assert.equal(r.isBatch, true);
    assert.equal(r.sourceLang, "en");
    assert.equal(r.targetLang, "de");
    assert.equal(r.providerId, "p1");
    assert.equal(r.context, "");
    assert.equal(r.attempt, 0);
    assert.ok(r.signal instanceof AbortSignal);
    assert.equal(r.signal.aborted, false);
    hold.resolve(["1", "2", "3"]);
  });

  test("in the separator layout: text joined with separator", async (t) => {
    const hold = deferred();
    const { clock, calls, send } = setup(t, { segmentFormat: "separator", answer: () => hold.promise });
    for (const x of ["one", "two", "three"]) send(item(x));
    await clock.tickAsync(100);
    const [r] = calls;
    assert.deepEqual(r.texts, ["one", "two", "three"]);
    assert.equal(typeof r.separator, "string");
    assert.ok(r.separator.length > 0);
    assert.equal(r.text, r.texts.join(r.separator));
    assert.equal("markers" in r, false);
    assert.equal(r.isBatch, true);
    hold.resolve(["1", "2", "3"]);
  });

  test("a single request has texts and ids too", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("only", { llm: false }));
    await clock.tickAsync(0);
    assert.deepEqual(calls[0].texts, ["only"]);
    assert.deepEqual(calls[0].ids, ["1"]);
    assert.equal(calls[0].text, "only");
    assert.equal(calls[0].instructions, "");
    assert.equal("markers" in calls[0], false, "a single text has no markers");
    assert.equal(calls[0].attempt, 0);
    assert.ok(calls[0].signal instanceof AbortSignal);
  });

  test("a single request in the separator layout has separator and texts too", async (t) => {
    const { clock, calls, send } = setup(t, { segmentFormat: "separator" });
    send(item("only", { llm: false }));
    await clock.tickAsync(0);
    assert.deepEqual(calls[0].texts, ["only"]);
    assert.equal(calls[0].text, "only");
    assert.equal(typeof calls[0].separator, "string");
    assert.equal(calls[0].attempt, 0);
    assert.ok(calls[0].signal instanceof AbortSignal);
  });
});

describe("the provider request", () => {
  test("its signal works through a proxy, an inherited read and a descriptor copy, and can be replaced", async (t) => {
    const seen = [];
    const { clock, send } = setup(t, {
      provider: (request) => {
        const viaProxy = new Proxy(request, {}).signal;
        const inherited = Object.create(request).signal;
        const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(request)).signal;
        seen.push(viaProxy === request.signal && inherited === request.signal && copy === request.signal);
        const own = new AbortController().signal;
        request.signal = own;
        seen.push(request.signal === own);
        return request.text;
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(s.value, "x");
    assert.deepEqual(seen, [true, true]);
  });

  test("an abort raised while translate() is still queueing the item is not missed", async (t) => {
    const controller = new AbortController();
    // The call starts inside translate(): the provider runs before translate() returns.
    const { clock, send, pacer } = setup(t, {
      provider: () => {
        controller.abort();
        return new Promise(() => {});
      },
    });
    const s = send(item("x", { llm: false, signal: controller.signal }));
    await clock.tickAsync(0);
    assert.equal(s.status, "rejected");
    assertPacerError(s.reason, "aborted");
    assert.equal(s.settlements, 1);
    assert.equal(pacer.stats().aborted, 1);
  });
});
