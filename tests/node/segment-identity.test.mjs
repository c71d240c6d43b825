// Segment identity (docs/reference.md: "The provider", "Segment identity", Rule 21 the separator layout,
// "Replies with usage and limits"): the request in both layouts, every reply form,
// partial acceptance, and replies that would put one paragraph's translation under
// another if the pacer guessed.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer } from "batch-pacer";
import { setup, item, deferred, thrown, assertPacerError } from "./helpers.mjs";

/** The fake model's translation of one text. */
const T = (x) => `«${x.toUpperCase()}»`;

/** A faithful answer in the markers layout: each translation between its own markers. */
const marked = (r, f = T) => r.texts.map((x, i) => r.markers[i][0] + f(x) + r.markers[i][1]).join("\n");

/** A faithful answer in whichever layout the request is. */
const faithful = (r) => (r.isBatch ? (r.markers ? marked(r) : r.texts.map(T).join(r.separator)) : T(r.text));

/** The settled values, or the error codes of the rejected ones. */
const outcomes = (states) => states.map((s) => (s.status === "fulfilled" ? s.value : s.status === "rejected" ? s.reason.code : "pending"));

describe("the request in the markers layout (the default)", () => {
  test("a batch has texts, unique ids, a pair of markers per text, text laid out one segment per line, instructions, no separator", async (t) => {
    const hold = deferred();
    const { clock, calls, send } = setup(t, { answer: () => hold.promise });
    const texts = ["one", "two\nlines", "three"];
    for (const x of texts) send(item(x));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const [r] = calls;
    assert.equal(r.isBatch, true);
    assert.deepEqual(r.texts, texts);
    assert.deepEqual(r.ids, ["1", "2", "3"]);
    assert.equal(new Set(r.ids).size, r.ids.length, "ids are unique within the call");
    assert.equal(r.markers.length, 3);
    for (const pair of r.markers) {
      assert.equal(pair.length, 2);
      assert.ok(pair.every((m) => typeof m === "string" && m.length > 0), JSON.stringify(pair));
    }
    assert.equal(new Set(r.markers.flat()).size, 6, "every marker string is distinct");
    assert.equal(r.text, "" + r.markers[0][0] + "one" + r.markers[0][1] + "\n" + r.markers[1][0] + "two\nlines" + r.markers[1][1] + "\n" + r.markers[2][0] + "three" + r.markers[2][1]);
    assert.equal(typeof r.instructions, "string");
    assert.ok(r.instructions.trim().length > 0);
    assert.ok(!r.instructions.includes("\n\n"), "one paragraph");
    assert.ok(r.instructions.includes(r.markers[0][0]), `the instructions name the markers: ${r.instructions}`);
    assert.equal("separator" in r, false);
    hold.resolve(r.ids.map((id) => `x${id}`));
  });

  test("markers are tag-like, e.g. <s1> … </s1>", async (t) => {
    const { clock, calls, send } = setup(t, { answer: async (r) => marked(r) });
    send(item("a"));
    send(item("b"));
    await clock.tickAsync(100);
    for (const [open, close] of calls[0].markers) {
      assert.match(open, /^<[^<>/]+>$/);
      assert.match(close, /^<\/[^<>]+>$/);
    }
  });

  test("a single request: texts [text], ids [\"1\"], no markers, empty instructions, text as given", async (t) => {
    const { clock, calls, send } = setup(t);
    send(item("alone <s1> here", { llm: false }));
    await clock.tickAsync(0);
    const [r] = calls;
    assert.equal(r.isBatch, false);
    assert.deepEqual(r.texts, ["alone <s1> here"]);
    assert.deepEqual(r.ids, ["1"]);
    assert.equal(r.text, "alone <s1> here");
    assert.equal(r.instructions, "");
    assert.equal("markers" in r, false);
    assert.equal("separator" in r, false);
  });

  test("a text containing <s1> gets other markers; no marker occurs in any text", async (t) => {
    const texts = ["see <s1> and </s1>", "<S2>upper</S2>", "< s3 > spaced", "plain"];
    const { clock, calls, send } = setup(t, { answer: async (r) => marked(r) });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100);
    const [r] = calls;
    assert.notEqual(r.markers[0][0], "<s1>");
    for (const marker of r.markers.flat()) {
      for (const x of texts) assert.ok(!x.toLowerCase().includes(marker.toLowerCase()), `${marker} occurs in ${JSON.stringify(x)}`);
    }
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("texts holding the markers of many tags still get markers of their own", async (t) => {
    const texts = ["s t u v", "w x y z"].map((letters) =>
      letters.split(" ").map((l) => `<${l}1></${l}1><${l}2></${l}2><${l}3>`).join(" "),
    );
    const { clock, calls, send } = setup(t, { answer: async (r) => marked(r) });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100);
    const [r] = calls;
    for (const marker of r.markers.flat()) {
      for (const x of texts) assert.ok(!x.includes(marker), `${marker} occurs in ${x}`);
    }
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("markers are chosen per batch: another batch's markers in a text are harmless", async (t) => {
    const { clock, calls, send } = setup(t, { answer: async (r) => marked(r) });
    const first = [send(item("a")), send(item("b"))];
    await clock.tickAsync(100);
    const [open, close] = calls[0].markers[1];
    const tricky = `copy of ${open}b${close}`;
    const second = [send(item(tricky)), send(item("c"))];
    await clock.tickAsync(100);
    assert.equal(calls.length, 2);
    assert.ok(!calls[1].markers.flat().includes(open));
    assert.deepEqual(outcomes([...first, ...second]), ["a", "b", tricky, "c"].map(T));
  });
});

describe("the request in the separator layout", () => {
  test("a batch: separator set, no markers, text joined with it, instructions a paragraph", async (t) => {
    const hold = deferred();
    const { clock, calls, send } = setup(t, { segmentFormat: "separator", answer: () => hold.promise });
    for (const x of ["one", "two"]) send(item(x));
    await clock.tickAsync(100);
    const [r] = calls;
    assert.equal(typeof r.separator, "string");
    assert.equal("markers" in r, false);
    assert.equal(r.text, `one${r.separator}two`);
    assert.deepEqual(r.ids, ["1", "2"]);
    assert.ok(r.instructions.trim().length > 0);
    hold.resolve(["1", "2"]);
  });

  test("a single request has the separator too, and empty instructions", async (t) => {
    const { clock, calls, send } = setup(t, { segmentFormat: "separator" });
    send(item("only", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(typeof calls[0].separator, "string");
    assert.equal("markers" in calls[0], false);
    assert.equal(calls[0].instructions, "");
  });

  test("a marked reply is no reply form of the separator layout", async (t) => {
    // The older layout reads the separator only; a markers-layout reply there is one
    // segment for a batch of two, a count mismatch, then one by one.
    const { clock, calls, send, pacer } = setup(t, {
      segmentFormat: "separator",
      maxBatchRetries: 0,
      answer: async (r) => (r.isBatch ? r.texts.map((x, i) => `<s${i + 1}>${T(x)}</s${i + 1}>`).join("\n") : T(r.text)),
    });
    const states = ["a", "b"].map((x) => send(item(x)));
    await clock.tickAsync(5000);
    assert.deepEqual(outcomes(states), ["a", "b"].map(T));
    assert.equal(pacer.stats().countMismatches, 1);
    assert.equal(calls.filter((c) => !c.isBatch).length, 2);
  });
});

describe("reply forms of a batch", () => {
  const texts = ["one", "two", "three"];

  /** Sends `texts` as one batch answered by `answer`; returns the states after the first call. */
  async function firstReply(t, answer, options = {}) {
    const ctx = setup(t, { maxBatchRetries: 0, fallbackToIndividual: false, answer, ...options });
    const states = texts.map((x) => ctx.send(item(x)));
    await ctx.clock.tickAsync(100);
    assert.equal(ctx.calls.length, 1, "one call");
    return { ...ctx, states };
  }

  test("a marked string resolves every item from one call", async (t) => {
    const { states, pacer } = await firstReply(t, async (r) => marked(r));
    assert.deepEqual(outcomes(states), texts.map(T));
    assert.equal(pacer.stats().countMismatches, 0);
  });

  test("text outside every pair is ignored: a preamble, a remark, a code fence around the whole", async (t) => {
    const { states } = await firstReply(t, async (r) =>
      `Sure! Here are the translations:\n\`\`\`text\n${marked(r)}\n\`\`\`\nLet me know if you need more.`,
    );
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("white space and CRLF just inside a pair are trimmed", async (t) => {
    const { states } = await firstReply(t, async (r) =>
      r.texts.map((x, i) => `${r.markers[i][0]}\r\n  ${T(x)} \r\n${r.markers[i][1]}`).join("\r\n"),
    );
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("line breaks inside a translation stay as written, CRLF included", async (t) => {
    const ctx = setup(t, {
      // Each translation keeps its paragraph's numbers: the evidence that nothing shifted.
      answer: async (r) => `${r.markers[0][0]}Zeile 1\r\nZeile 2${r.markers[0][1]}\n${r.markers[1][0]}Absatz 3\n\nzwei${r.markers[1][1]}`,
    });
    const a = ctx.send(item("line 1\r\nline 2"));
    const b = ctx.send(item("paragraph 3\n\ntwo"));
    await ctx.clock.tickAsync(100);
    assert.equal(a.value, "Zeile 1\r\nZeile 2");
    assert.equal(b.value, "Absatz 3\n\nzwei");
  });

  test("marker case is tolerated (<S1> for <s1>)", async (t) => {
    const { states, calls } = await firstReply(t, async (r) =>
      r.texts.map((x, i) => r.markers[i][0].toUpperCase() + T(x) + r.markers[i][1].toUpperCase()).join("\n"),
    );
    assert.notEqual(calls[0].markers[0][0], calls[0].markers[0][0].toUpperCase(), "the markers have letters to change");
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("an object keyed by id, in any key order", async (t) => {
    const { states } = await firstReply(t, async (r) =>
      Object.fromEntries([...r.ids].reverse().map((id) => [id, T(r.texts[r.ids.indexOf(id)])])),
    );
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("an array, one string per text, in order", async (t) => {
    const { states } = await firstReply(t, async (r) => r.texts.map(T));
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("an array of the wrong length is a count mismatch for the whole batch", async (t) => {
    const { states, pacer } = await firstReply(t, async (r) => r.texts.slice(0, 2).map(T));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(outcomes(states), ["count_mismatch", "count_mismatch", "count_mismatch"]);
    assert.equal(pacer.stats().countMismatches, 1);
  });

  test("a string without any pair proves nothing: a count mismatch for the whole batch", async (t) => {
    const { states, pacer, events } = await firstReply(t, async (r) => r.texts.map(T).join("\n"));
    assert.deepEqual(outcomes(states), ["count_mismatch", "count_mismatch", "count_mismatch"]);
    assert.equal(pacer.stats().countMismatches, 1);
    const mismatch = events.find((e) => e.type === "countMismatch");
    assert.deepEqual({ expected: mismatch.expected, got: mismatch.got }, { expected: 3, got: 0 });
  });

  test("an object whose keys are not the ids proves nothing", async (t) => {
    const { states } = await firstReply(t, async (r) => ({ first: "a", second: "b", third: "c" }));
    assert.deepEqual(outcomes(states), ["count_mismatch", "count_mismatch", "count_mismatch"]);
  });

  test("{ translations, usage } in each form: the translations resolve, usage adds up in stats()", async (t) => {
    const forms = [(r) => marked(r), (r) => Object.fromEntries(r.ids.map((id, i) => [id, T(r.texts[i])])), (r) => r.texts.map(T)];
    let n = 0;
    const ctx = setup(t, {
      answer: async (r) => ({ translations: forms[n++ % 3](r), usage: { inputTokens: 100 + n, outputTokens: 10 * n } }),
    });
    const states = [];
    for (let batch = 0; batch < 3; batch++) {
      states.push(ctx.send(item(`a${batch}`)), ctx.send(item(`b${batch}`)));
      await ctx.clock.tickAsync(200);
    }
    assert.equal(ctx.calls.length, 3);
    assert.deepEqual(outcomes(states), ["a0", "b0", "a1", "b1", "a2", "b2"].map(T));
    const stats = ctx.pacer.stats();
    assert.equal(stats.inputTokens, 101 + 102 + 103);
    assert.equal(stats.outputTokens, 10 + 20 + 30);
  });

  test("a wrapper with limits and no usage leaves the token counts at 0", async (t) => {
    const ctx = setup(t, { answer: async (r) => ({ translations: faithful(r), limits: { requestsRemaining: 100 } }) });
    const s = ctx.send(item("x", { llm: false }));
    await ctx.clock.tickAsync(0);
    assert.equal(s.value, T("x"));
    assert.equal(ctx.pacer.stats().inputTokens, 0);
    assert.equal(ctx.pacer.stats().outputTokens, 0);
  });
});

describe("partial acceptance", () => {
  const texts = ["first paragraph", "second one", "the third paragraph", "fourth"];

  /** Drops the pair of the text `dropped` from a faithful marked reply. */
  const without = (dropped) => async (r) =>
    r.isBatch
      ? r.texts.map((x, i) => (x === dropped ? "" : r.markers[i][0] + T(x) + r.markers[i][1])).filter(Boolean).join("\n")
      : T(r.text);

  test("one pair missing in a batch of 4: the proven ones resolve from the first call, the rest go out again as a smaller batch", async (t) => {
    let attempt0 = true;
    const { clock, calls, send, pacer, events } = setup(t, {
      baseRetryDelayMs: 1000,
      answer: async (r) => {
        if (attempt0) {
          attempt0 = false;
          return without(texts[1])(r);
        }
        return marked(r);
      },
    });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const proven = states.filter((s) => s.status === "fulfilled");
    assert.ok(proven.length >= 1, "at least the segment away from the gap is proven");
    // The pair of "second one" is missing, so it and its neighbours are not proven.
    assert.equal(states[1].status, "pending");
    assert.equal(states[0].status, "pending");
    assert.equal(states[2].status, "pending");
    assert.equal(states[3].value, T(texts[3]));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 2);
    assert.equal(calls[1].isBatch, true);
    assert.equal(calls[1].attempt, 1);
    assert.deepEqual(calls[1].texts, texts.slice(0, 3), "only the missing ones, in order");
    assert.ok(calls[1].texts.length <= 3);
    assert.deepEqual(calls[1].ids, ["1", "2", "3"], "the smaller batch is numbered afresh");
    assert.deepEqual(outcomes(states), texts.map(T));
    const stats = pacer.stats();
    assert.equal(stats.countMismatches, 1);
    assert.equal(stats.retries, 1);
    assert.equal(stats.providerCalls, 2);
    assert.equal(stats.fallbacks, 0);
    const mismatch = events.find((e) => e.type === "countMismatch");
    assert.deepEqual({ expected: mismatch.expected, got: mismatch.got }, { expected: 4, got: 1 });
  });

  test("the first pair missing: only it and its neighbour go out again", async (t) => {
    const { clock, calls, send } = setup(t, {
      baseRetryDelayMs: 10,
      answer: async (r) => (r.attempt === 0 ? without(texts[0])(r) : marked(r)),
    });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(100);
    assert.deepEqual(outcomes(states).slice(2), texts.slice(2).map(T));
    await clock.tickAsync(100);
    assert.deepEqual(calls[1].texts, texts.slice(0, 2));
    assert.deepEqual(outcomes(states), texts.map(T));
  });

  test("each retry is a provider call, waits its backoff and a token; then the missing ones go one by one", async (t) => {
    const { clock, calls, send, pacer } = setup(t, {
      rate: 1,
      capacity: 1,
      maxBatchRetries: 2,
      baseRetryDelayMs: 100,
      answer: async (r) => (r.isBatch ? without(r.texts[1])(r) : T(r.text)),
    });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(30_000);
    assert.deepEqual(outcomes(states), texts.map(T));
    const batches = calls.filter((c) => c.isBatch);
    assert.equal(batches.length, 3, "the first try and maxBatchRetries retries");
    for (let i = 1; i < calls.length; i++) assert.ok(calls[i].at - calls[i - 1].at >= 999, `a token per call: ${calls.map((c) => c.at)}`);
    for (let i = 1; i < batches.length; i++) assert.ok(batches[i].texts.length < batches[i - 1].texts.length || batches[i].texts.length <= 3);
    const stats = pacer.stats();
    assert.equal(stats.countMismatches, 3);
    assert.equal(stats.fallbacks, 1);
    assert.equal(stats.providerCalls, calls.length);
    // Every text is sent in a later call only while it is unproven.
    const singles = calls.filter((c) => !c.isBatch).map((c) => c.text);
    assert.ok(!singles.includes(texts[3]), "a proven item is never sent again");
  });

  test("without fallbackToIndividual only the missing ones reject with count_mismatch", async (t) => {
    const { clock, send } = setup(t, {
      maxBatchRetries: 1,
      fallbackToIndividual: false,
      baseRetryDelayMs: 10,
      answer: async (r) => without(r.texts[1])(r),
    });
    const states = texts.map((x) => send(item(x)));
    await clock.tickAsync(5000);
    assert.equal(states[3].value, T(texts[3]));
    for (const s of states.slice(0, 3)) assertPacerError(s.reason, "count_mismatch");
  });
});

describe("adversarial replies never put another paragraph's text under a paragraph", () => {
  // Texts of unlike lengths, so that a length check alone cannot be what saves them.
  const texts = ["Hello", "a somewhat longer second paragraph", "third", "and the fourth paragraph of this batch"];
  const pair = (r, id, body) => `${r.markers[id - 1][0]}${body}${r.markers[id - 1][1]}`;
  const tr = (r, id) => T(r.texts[id - 1]);

  /** Bad replies to a batch of four (as given, to the first call only). */
  const bad = {
    "swapped pairs (each translation under its own id, out of order)": (r) =>
      [pair(r, 1, tr(r, 1)), pair(r, 3, tr(r, 3)), pair(r, 2, tr(r, 2)), pair(r, 4, tr(r, 4))].join("\n"),
    "1 and 2 merged, then renumbered": (r) =>
      [pair(r, 1, `${tr(r, 1)} ${tr(r, 2)}`), pair(r, 2, tr(r, 3)), pair(r, 3, tr(r, 4))].join("\n"),
    "2 and 3 merged, then renumbered, with a remark": (r) =>
      [pair(r, 1, tr(r, 1)), pair(r, 2, `${tr(r, 2)} ${tr(r, 3)}`), pair(r, 3, tr(r, 4)), "(I merged two short lines.)"].join("\n"),
    "3 and 4 merged into pair 3": (r) => [pair(r, 1, tr(r, 1)), pair(r, 2, tr(r, 2)), pair(r, 3, `${tr(r, 3)} ${tr(r, 4)}`)].join("\n"),
    "2 dropped, then renumbered": (r) => [pair(r, 1, tr(r, 1)), pair(r, 2, tr(r, 3)), pair(r, 3, tr(r, 4))].join("\n"),
    "1 split in two, then renumbered": (r) =>
      [pair(r, 1, "«HEL»"), pair(r, 2, "«LO»"), pair(r, 3, tr(r, 2)), pair(r, 4, tr(r, 3)), `<${r.markers[0][0].slice(1, -2)}5>${tr(r, 4)}</${r.markers[0][0].slice(1, -2)}5>`].join("\n"),
    // Count-preserving shifts: every pair is there, in order, once; only the text moved
    // across the markers. A model told "the text holds 4 segments" does this when it
    // splits one and then keeps to the count.
    "1 split in two, renumbered, the last dropped to keep the count": (r) =>
      [pair(r, 1, "«HEL"), pair(r, 2, "LO»"), pair(r, 3, tr(r, 2)), pair(r, 4, tr(r, 3))].join("\n"),
    "1 split in two and 3 and 4 merged: the count kept, the ids between shifted": (r) =>
      [pair(r, 1, "«HEL"), pair(r, 2, "LO»"), pair(r, 3, tr(r, 2)), pair(r, 4, `${tr(r, 3)} ${tr(r, 4)}`)].join("\n"),
    "a duplicated pair": (r) =>
      [pair(r, 1, tr(r, 1)), pair(r, 2, tr(r, 2)), pair(r, 2, tr(r, 3)), pair(r, 3, tr(r, 3)), pair(r, 4, tr(r, 4))].join("\n"),
    "a repeated translation under the next id": (r) =>
      [pair(r, 1, tr(r, 1)), pair(r, 2, tr(r, 2)), pair(r, 3, tr(r, 2)), pair(r, 4, tr(r, 4))].join("\n"),
    "another paragraph's source in place of a translation": (r) =>
      [pair(r, 1, tr(r, 1)), pair(r, 2, r.texts[2]), pair(r, 3, tr(r, 3)), pair(r, 4, tr(r, 4))].join("\n"),
    "an empty segment": (r) => [pair(r, 1, tr(r, 1)), pair(r, 2, "  "), pair(r, 3, tr(r, 3)), pair(r, 4, tr(r, 4))].join("\n"),
    "an unclosed pair": (r) => [pair(r, 1, tr(r, 1)), r.markers[1][0] + tr(r, 2), pair(r, 3, tr(r, 3)), pair(r, 4, tr(r, 4))].join("\n"),
    "a nested pair": (r) => [pair(r, 1, `${tr(r, 1)} ${pair(r, 2, tr(r, 2))}`), pair(r, 3, tr(r, 3)), pair(r, 4, tr(r, 4))].join("\n"),
    "truncated mid-pair (max_tokens)": (r) => [pair(r, 1, tr(r, 1)), pair(r, 2, tr(r, 2)), r.markers[2][0] + tr(r, 3).slice(0, 3)].join("\n"),
    "the last pair dropped": (r) => [pair(r, 1, tr(r, 1)), pair(r, 2, tr(r, 2)), pair(r, 3, tr(r, 3))].join("\n"),
    "an object with the values shifted by one key": (r) => ({ 1: `${tr(r, 1)} ${tr(r, 2)}`, 2: tr(r, 3), 3: tr(r, 4) }),
    "an object with an unknown key": (r) => ({ 1: tr(r, 1), 2: tr(r, 2), 3: tr(r, 3), 4: tr(r, 4), 5: "extra" }),
    "an array with two elements merged": (r) => [`${tr(r, 1)} ${tr(r, 2)}`, tr(r, 3), tr(r, 4)],
  };
  // (Content swapped under markers kept in order is a wrong translation, not a layout
  // fault: no reply form can tell it apart from a right one.)

  for (const [name, reply] of Object.entries(bad)) {
    test(`${name}: every paragraph ends with its own translation`, async (t) => {
      let first = true;
      const { clock, calls, send } = setup(t, {
        baseRetryDelayMs: 10,
        answer: async (r) => {
          if (r.isBatch && first) {
            first = false;
            assert.equal(r.texts.length, 4);
            return reply(r);
          }
          return faithful(r);
        },
      });
      const states = texts.map((x) => send(item(x)));
      await clock.tickAsync(100);
      // Whatever resolved from the bad reply must already be right: a resolved item
      // never changes.
      for (const [i, s] of states.entries()) if (s.status === "fulfilled") assert.equal(s.value, T(texts[i]), `after the bad reply, item ${i + 1}`);
      await clock.tickAsync(10_000);
      assert.deepEqual(outcomes(states), texts.map(T));
      assert.ok(calls.length >= 2, "the damaged ones were sent again");
    });
  }
});

describe("segmentFormat option", () => {
  test("invalid values throw invalid_options naming segmentFormat and the value", () => {
    for (const value of ["marker", "Separator", "json", "", 1, null, true]) {
      const err = thrown(() => new BatchPacer(async () => "", { segmentFormat: value }), "invalid_options");
      assert.match(err.message, /segmentFormat/, err.message);
      if (typeof value === "string" && value !== "") assert.ok(err.message.includes(value), err.message);
    }
  });

  test("setOptions validates it (all or nothing) and the next batch uses the new layout", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { answer: async (r) => faithful(r) });
    const err = thrown(() => pacer.setOptions({ rate: 2, segmentFormat: "xml" }), "invalid_options");
    assert.match(err.message, /segmentFormat/);
    assert.equal(pacer.options.rate, 8, "nothing of the patch was applied");
    assert.equal(pacer.options.segmentFormat, "markers");
    const a = [send(item("a")), send(item("b"))];
    await clock.tickAsync(100);
    pacer.setOptions({ segmentFormat: "separator" });
    assert.equal(pacer.options.segmentFormat, "separator");
    const b = [send(item("c")), send(item("d"))];
    await clock.tickAsync(100);
    assert.ok(Array.isArray(calls[0].markers) && !("separator" in calls[0]));
    assert.ok(typeof calls[1].separator === "string" && !("markers" in calls[1]));
    assert.deepEqual(outcomes([...a, ...b]), ["a", "b", "c", "d"].map(T));
  });
});

describe("rule 2: an item longer than maxCharactersPerBatch", () => {
  test("makes the open batch due at once; the earlier batch goes first, the long item alone after it", async (t) => {
    const { clock, calls, send } = setup(t, { maxCharactersPerBatch: 20, batchDelayMs: 500, answer: async (r) => faithful(r) });
    const short = [send(item("short one")), send(item("short two"))];
    await clock.tickAsync(10);
    const long = send(item("a paragraph far longer than twenty characters"));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2, "both sent without waiting for the 500 ms window");
    assert.deepEqual(calls[0].texts, ["short one", "short two"]);
    assert.equal(calls[0].at, 10, "the open batch became due when the long item came");
    assert.deepEqual(calls[1].texts, ["a paragraph far longer than twenty characters"]);
    assert.equal(calls[1].isBatch, false);
    assert.deepEqual(outcomes([...short, long]), ["short one", "short two", "a paragraph far longer than twenty characters"].map(T));
  });

  test("the order holds when tokens are scarce", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1, maxCharactersPerBatch: 20, batchDelayMs: 500, answer: async (r) => faithful(r) });
    send(item("tiny", { llm: false }));
    await clock.tickAsync(0);
    send(item("short one"));
    await clock.tickAsync(10);
    send(item("a paragraph far longer than twenty characters"));
    await clock.tickAsync(5000);
    assert.deepEqual(calls.map((c) => c.texts), [["tiny"], ["short one"], ["a paragraph far longer than twenty characters"]]);
    assert.ok(calls[1].at < 1100, `the short item went with the first token, at ${calls[1].at}`);
  });
});
