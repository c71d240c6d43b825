// Fallback providers (docs/guides/fallbacks.md, Rule 35 of docs/reference.md), through the packed package on
// virtual time: each trigger, chains, coming back, request.fallbackFrom, the stats and
// events, validation and setOptions, routeProviders in front of a pacer, and a snapshot
// taken while a provider is blocked.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BatchPacer, DEFAULTS, routeProviders } from "batch-pacer";
import { setup, item, httpError, assertPacerError, thrown } from "./helpers.mjs";

/** A daily-quota 429 as a provider reports it. */
const daily = () => httpError(429, { quota: "daily", retryAfterMs: 6 * 3600_000 });

/**
 * Providers by id, each answering `fr(<id>): text` until `quota[id]` calls, then `spent(id)`.
 * The answer is a marked batch reply, or the text for a single.
 */
function models(quota = {}, spent = daily) {
  const calls = {};
  const answer = async (r) => {
    calls[r.providerId] = (calls[r.providerId] ?? 0) + 1;
    if (calls[r.providerId] > (quota[r.providerId] ?? Infinity)) throw spent(r.providerId);
    const t = (x) => `fr(${r.providerId}): ${x}`;
    if (!r.isBatch) return t(r.text);
    return r.markers.map(([o, c], i) => `${o}${t(r.texts[i])}${c}`).join("\n");
  };
  return { calls, answer };
}

const page = (n, prefix = "Paragraph") => Array.from({ length: n }, (_, i) => `${prefix} ${i} of the page.`);

describe("fallbackProviders", () => {
  test("is absent from DEFAULTS and pacer.options until set; fallbackAfterMs defaults to 10000", (t) => {
    assert.equal("fallbackProviders" in DEFAULTS, false);
    assert.equal(DEFAULTS.fallbackAfterMs, 10000);
    const pacer = new BatchPacer(async (r) => r.text);
    t.after(() => pacer.dispose());
    assert.equal(pacer.options.fallbackAfterMs, 10000);
    assert.equal("fallbackProviders" in pacer.options, false);
    pacer.setOptions({ fallbackProviders: { a: "b" } });
    assert.deepEqual(pacer.options.fallbackProviders, { a: "b" });
  });

  test("a spent daily quota: the page goes on with the fallback, nothing fails", async (t) => {
    const { calls, answer } = models({ a: 5 });
    const { clock, send, pacer, events, calls: requests } = setup(t, {
      fallbackProviders: { a: "b" },
      maxInFlight: 1,
      answer,
    });
    const texts = page(60);
    const states = texts.map((x) => send(item(x, { providerId: "a" })));
    await clock.tickAsync(600_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    assert.equal(pacer.stats().failed, 0);
    assert.equal(calls.a, 6, "5 answered, then the daily 429");
    assert.ok(calls.b > 0);
    const served = states.filter((s) => s.value.startsWith("fr(b)")).length;
    assert.equal(pacer.stats().fallbackItems, served);
    assert.ok(served > 30);
    for (const r of requests) {
      if (r.providerId === "b") assert.equal(r.fallbackFrom, "a");
      else assert.equal("fallbackFrom" in r, false, "absent on the first provider's calls");
    }
    const moves = events.filter((e) => e.type === "providerFallback");
    assert.ok(moves.length > 0);
    assert.ok(moves.every((e) => e.from === "a" && e.to === "b" && e.items >= 1));
    // A later item for a goes straight to b.
    const later = send(item("Later.", { providerId: "a" }));
    await clock.tickAsync(10_000);
    assert.equal(later.value, "fr(b): Later.");
    assert.equal(calls.a, 6);
  });

  test("without it the same page rejects after the daily quota", async (t) => {
    const { answer } = models({ a: 5 });
    const { clock, send } = setup(t, { maxInFlight: 1, answer });
    const states = page(60).map((x) => send(item(x, { providerId: "a" })));
    await clock.tickAsync(600_000);
    const failed = states.filter((s) => s.status === "rejected");
    assert.ok(failed.length > 30);
    assertPacerError(failed[0].reason, "provider_error", 429);
  });

  test("a 429 pause longer than fallbackAfterMs moves the queue; a shorter one is waited out", async (t) => {
    for (const [retryAfterMs, moves] of [[120_000, true], [3_000, false]]) {
      let hit = false;
      const { clock, send, calls } = setup(t, {
        fallbackProviders: { a: "b" },
        maxInFlight: 1,
        answer: async (r) => {
          if (r.providerId === "a" && !hit) {
            hit = true;
            throw httpError(429, { retryAfterMs });
          }
          return r.isBatch ? r.markers.map(([o, c], i) => `${o}${r.providerId}:${r.texts[i]}${c}`).join("\n") : `${r.providerId}:${r.text}`;
        },
      });
      const states = page(12).map((x) => send(item(x, { providerId: "a" })));
      await clock.tickAsync(10_000);
      const done = states.filter((s) => s.status === "fulfilled").length;
      assert.equal(calls.some((c) => c.providerId === "b"), moves, `Retry-After ${retryAfterMs}`);
      if (moves) assert.equal(done, 12, "finished on b long before the pause ends");
      await clock.tickAsync(200_000);
      assert.ok(states.every((s) => s.status === "fulfilled"));
    }
  });

  test("fallbackAfterMs decides what a long pause is", async (t) => {
    let hit = false;
    const { clock, send, calls } = setup(t, {
      fallbackProviders: { a: "b" },
      fallbackAfterMs: 1000,
      answer: async (r) => {
        if (r.providerId === "a" && !hit) {
          hit = true;
          throw httpError(429, { retryAfterMs: 3000 });
        }
        return r.text;
      },
    });
    send(item("x", { providerId: "a", llm: false }));
    await clock.tickAsync(500);
    assert.ok(calls.some((c) => c.providerId === "b"));
  });

  test("a settings error moves the queue, and a later item tries the provider again", async (t) => {
    const { calls, answer } = models({ a: 0 }, () => httpError(401));
    const { clock, send } = setup(t, { fallbackProviders: { a: "b" }, answer });
    const states = page(8).map((x) => send(item(x, { providerId: "a" })));
    await clock.tickAsync(30_000);
    assert.ok(states.every((s) => s.value.startsWith("fr(b)")));
    const before = calls.a;
    send(item("Later.", { providerId: "a" }));
    await clock.tickAsync(30_000);
    assert.equal(calls.a, before + 1);
  });

  test("retries spent move only that call's items", async (t) => {
    const { clock, send, calls, pacer } = setup(t, {
      fallbackProviders: { a: "b" },
      maxRetries: 1,
      baseRetryDelayMs: 10,
      answer: async (r) => {
        if (r.providerId === "a" && r.text === "broken") throw httpError(503);
        return `${r.providerId}:${r.text}`;
      },
    });
    const broken = send(item("broken", { providerId: "a", llm: false }));
    const fine = send(item("fine", { providerId: "a", llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(broken.value, "b:broken");
    assert.equal(fine.value, "a:fine");
    assert.deepEqual(calls.filter((c) => c.providerId === "b").map((c) => c.text), ["broken"]);
    assert.equal(pacer.stats().fallbackItems, 1);
  });

  test("a chain goes on to the fallback's fallback, counted once per item", async (t) => {
    const { calls, answer } = models({ a: 0, b: 0 });
    const { clock, send, pacer, calls: requests } = setup(t, { fallbackProviders: { a: "b", b: "c" }, answer });
    const states = page(6).map((x) => send(item(x, { providerId: "a" })));
    await clock.tickAsync(60_000);
    assert.ok(states.every((s) => s.value.startsWith("fr(c)")));
    assert.equal(pacer.stats().fallbackItems, 6);
    for (const r of requests.filter((r) => r.providerId === "c")) assert.equal(r.fallbackFrom, "a");
    assert.ok(calls.c > 0);
  });

  test("back to the first provider once its pause is over", async (t) => {
    let hit = false;
    const { clock, send } = setup(t, {
      fallbackProviders: { a: "b" },
      answer: async (r) => {
        if (r.providerId === "a" && !hit) {
          hit = true;
          throw httpError(429, { retryAfterMs: 60_000 });
        }
        return `${r.providerId}:${r.text}`;
      },
    });
    send(item("first", { providerId: "a", llm: false }));
    await clock.tickAsync(1000);
    const during = send(item("during", { providerId: "a", llm: false }));
    await clock.tickAsync(1000);
    assert.equal(during.value, "b:during");
    // The pause ends at its Retry-After, lengthened by up to 10% (6 s) so that clients do
    // not herd (Rule 47).
    await clock.tickAsync(66_000);
    const after = send(item("after", { providerId: "a", llm: false }));
    await clock.tickAsync(1000);
    assert.equal(after.value, "a:after");
  });

  test("a snapshot taken while blocked sends a restarted pacer's items to the fallback", async (t) => {
    const first = models({ a: 0 });
    const before = setup(t, { fallbackProviders: { a: "b" }, answer: first.answer });
    before.send(item("spend", { providerId: "a", llm: false }));
    await before.clock.tickAsync(10_000);
    const snapshot = JSON.parse(JSON.stringify(before.pacer.snapshot()));
    const second = models();
    const after = setup(t, { fallbackProviders: { a: "b" }, restore: snapshot, answer: second.answer });
    const state = after.send(item("after the restart", { providerId: "a", llm: false }));
    await after.clock.tickAsync(10_000);
    assert.equal(state.value, "fr(b): after the restart");
    assert.equal(second.calls.a, undefined);
  });

  for (const [what, value, pattern] of [
    ["a cycle", { a: "b", b: "a" }, /fallbackProviders must not have a cycle \(got "a" -> "b" -> "a"\)/],
    ["a self-map", { a: "a" }, /fallbackProviders must not map a provider to itself \(got "a" -> "a"\)/],
    ["a number", { a: 1 }, /fallbackProviders must map each providerId to a non-empty providerId string \(got "a": 1\)/],
    ["an empty string", { a: "" }, /fallbackProviders must map each providerId .*\(got "a": ""\)/],
    ["a string", "b", /fallbackProviders must be an object/],
  ]) {
    test(`${what} is invalid_options naming what was wrong`, () => {
      const err = thrown(() => new BatchPacer(async (r) => r.text, { fallbackProviders: value }), "invalid_options");
      assert.match(err.message, pattern);
      const pacer = new BatchPacer(async (r) => r.text);
      thrown(() => pacer.setOptions({ fallbackProviders: value }), "invalid_options");
      pacer.dispose();
    });
  }

  for (const bad of [-1, Infinity, NaN, "10"]) {
    test(`fallbackAfterMs ${String(bad)} is invalid_options`, () => {
      const err = thrown(() => new BatchPacer(async (r) => r.text, { fallbackAfterMs: bad }), "invalid_options");
      assert.match(err.message, /fallbackAfterMs must be a finite number >= 0/);
    });
  }

  test("routeProviders sends each call to its provider's callback, behind a pacer with a fallback", async (t) => {
    const seen = [];
    const route = routeProviders({
      a: async (r) => {
        seen.push(["a", r.text]);
        throw daily();
      },
      b: async (r) => {
        seen.push(["b", r.text, r.fallbackFrom]);
        return `b:${r.text}`;
      },
    });
    const { clock, send } = setup(t, { provider: route, fallbackProviders: { a: "b" } });
    const state = send(item("hello", { providerId: "a", llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(state.value, "b:hello");
    assert.deepEqual(seen, [["a", "hello"], ["b", "hello", "a"]]);
  });
});
