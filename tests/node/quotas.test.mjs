// Quotas (docs/guides/quotas.md; docs/reference.md, "Quotas", "The provider", "Failures"): the token budget
// (`tokensPerMinute`, `estimateTokens`), reported usage and limits, 413 splits, and one
// budget shared by two pacers, all on virtual time against the installed package.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { sharedBudget } from "batch-pacer";
import {
  BatchPacer,
  setup,
  item,
  httpError,
  assertPacerError,
  assertWindowBound,
  virtualTime,
  recordingProvider,
  track,
  thrown,
} from "./helpers.mjs";

/** `n` single (non-LLM) items for provider `providerId`, sent at once. */
function sendSingles(send, n, { providerId = "p1", text = (i) => `paragraph ${i}` } = {}) {
  return Array.from({ length: n }, (_, i) => send(item(text(i), { providerId, llm: false })));
}

const startTimes = (calls, providerId) =>
  calls.filter((c) => providerId === undefined || c.providerId === providerId).map((c) => c.at);

/** A Latin text of about `chars` characters (the built-in estimate: about 4 a token). */
const latin = (i, chars = 400) => `Paragraph ${i}: ` + "the quick brown fox jumps over the lazy dog ".repeat(chars / 44);

describe("tokensPerMinute", () => {
  // A fixed estimate makes every single call cost the same: 100 tokens in, as much again
  // out (the contract), plus the prompt's share docs/guides/quotas.md documents for a single (40).
  const EST = 100;
  const COST_AT_LEAST = 2 * EST;
  const COST = 2 * EST + 40;

  test("a 1,200 tokens/minute budget paces a long backlog by cost: every window within budget + refill", async (t) => {
    const { clock, calls, send, pacer } = setup(t, {
      rate: 100,
      capacity: 100,
      tokensPerMinute: 1200,
      estimateTokens: () => EST,
    });
    const states = sendSingles(send, 30);
    await clock.tickAsync(10 * 60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"), "the backlog drains");
    assert.equal(calls.length, 30);
    const times = startTimes(calls);
    // Tokens spent in any window [a, b] <= 1200 + 20 tokens/s * (b - a), with each call
    // costing at least its input and output estimate: in calls, capacity 1200 / cost and
    // rate 20 / cost per second.
    assertWindowBound(times, 1200 / COST_AT_LEAST, 20 / COST_AT_LEAST);
    // The bucket starts full (five calls of 240 tokens) and then drains at its refill rate,
    // not slower: one call per 240 / 20 = 12 s.
    assert.equal(times.filter((at) => at === 0).length, 1200 / COST);
    assert.ok(times.at(-1) <= ((30 - 1200 / COST) * COST * 1000) / 20 + 1000, `last call at ${times.at(-1)} ms`);
    assert.equal(pacer.options.tokensPerMinute, 1200);
  });

  test("the call dealt by priority from several due batches is the call checked against the budget", async (t) => {
    // Every text is estimated at 100 tokens: a call of n texts costs 200 n + 140 (a
    // batch's prompt) or 240 (a single). Batches collect in arrival order; each call
    // takes the best items of the due batches, so the call that starts may be larger
    // than the batch whose cost was first checked. Every window must stay within a
    // minute's worth plus what refilled.
    const { clock, calls, send } = setup(t, {
      tokensPerMinute: 6000,
      estimateTokens: () => 100,
      maxItemsPerBatch: 6,
      batchDelayMs: 50,
    });
    const states = [];
    for (let round = 0; round < 8; round++) {
      for (const [i, priority] of [0, 1, 1, 0, 2, 0, 1].entries()) {
        states.push(send(item(`r${round} p${priority} #${i} ${"x".repeat(20 + ((round * 7 + i) % 5) * 30)}`, { priority })));
      }
      await clock.tickAsync(30 + round * 40);
    }
    await clock.tickAsync(600_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    const cost = (c) => 200 * c.texts.length + (c.texts.length > 1 ? 140 : 40);
    for (let i = 0; i < calls.length; i++) {
      let spent = 0;
      for (let j = i; j < calls.length; j++) {
        spent += cost(calls[j]);
        const allowed = 6000 + ((calls[j].at - calls[i].at) / 1000) * 100;
        assert.ok(spent <= allowed + 1e-6, `${spent} tokens in calls ${i}..${j} ([${calls[i].at}, ${calls[j].at}] ms), at most ${allowed}`);
      }
    }
  });

  test("without a token budget the same backlog starts at once (only the request bucket applies)", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 100, capacity: 100, estimateTokens: () => EST });
    sendSingles(send, 30);
    await clock.tickAsync(0);
    assert.equal(calls.length, 30);
    assert.ok(startTimes(calls).every((at) => at === 0));
  });

  test("batches are paced by cost too, and never grow past what the budget can hold", async (t) => {
    // Each text costs 2 * 100 tokens plus the batch prompt: at most 4 texts fit in 1,000.
    const { clock, calls, send } = setup(t, {
      rate: 100,
      capacity: 100,
      maxItemsPerBatch: 8,
      tokensPerMinute: 1000,
      estimateTokens: () => EST,
    });
    const states = Array.from({ length: 24 }, (_, i) => send(item(`text ${i}`)));
    await clock.tickAsync(20 * 60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    for (const call of calls) {
      assert.ok(call.texts.length * COST_AT_LEAST <= 1000, `a call of ${call.texts.length} texts exceeds the budget`);
    }
    assert.ok(calls.some((c) => c.isBatch), "items are still batched");
  });
});

describe("estimateTokens", () => {
  test("the pacer asks the user's estimator, and a big estimate holds calls", async (t) => {
    const asked = [];
    const big = setup(t, {
      tokensPerMinute: 1200,
      estimateTokens: (text) => {
        asked.push(text);
        return 5000;
      },
    });
    const small = setup(t, { tokensPerMinute: 1200, estimateTokens: () => 1 });
    const bigStates = sendSingles(big.send, 3);
    sendSingles(small.send, 3);
    await big.clock.tickAsync(60_000);
    await small.clock.tickAsync(60_000);
    assert.ok(asked.includes("paragraph 0") && asked.includes("paragraph 2"), `asked for ${JSON.stringify(asked)}`);
    assert.deepEqual(startTimes(small.calls), [0, 0, 0], "small estimates: all start at once");
    // 5,000 tokens in and out is more than the whole budget: the call travels alone and
    // starts when the budget is full; the next waits for the budget to refill.
    assert.deepEqual(startTimes(big.calls), [0], "big estimates: one call in the first minute");
    await big.clock.tickAsync(30 * 60_000);
    assert.equal(big.calls.length, 3, "held, never stuck");
    assert.ok(bigStates.every((s) => s.status === "fulfilled"));
  });

  // Each run: 6 texts of about 100 tokens by the built-in estimate, at 600 tokens/minute,
  // so the built-in estimate alone decides when each call starts.
  async function callTimes(t, estimateTokens) {
    const options = { tokensPerMinute: 600, rate: 100, capacity: 100 };
    if (estimateTokens !== undefined) options.estimateTokens = estimateTokens;
    const { clock, calls, send } = setup(t, options);
    const states = sendSingles(send, 6, { text: (i) => latin(i) });
    await clock.tickAsync(30 * 60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"), "no stuck queue");
    return startTimes(calls);
  }

  test("an estimator that throws, or returns NaN, a negative or a non-number, falls back to the built-in one", async (t) => {
    const builtIn = await callTimes(t);
    assert.ok(builtIn.some((at) => at > 0), `the built-in estimate paces this workload (${builtIn})`);
    const faulty = {
      throws: () => {
        throw new Error("estimator broke");
      },
      NaN: () => NaN,
      negative: () => -5,
      "a string": () => "12",
      undefined: () => undefined,
      Infinity: () => Infinity,
    };
    for (const [name, estimateTokens] of Object.entries(faulty)) {
      assert.deepEqual(await callTimes(t, estimateTokens), builtIn, `an estimator returning ${name}`);
    }
  });

  test("not a function: invalid_options naming estimateTokens; setOptions rejects it", (t) => {
    for (const value of [5, "tokens", {}, null]) {
      const err = thrown(() => new BatchPacer(() => "", { estimateTokens: value }), "invalid_options");
      assert.equal(err.option, "estimateTokens");
      assert.match(err.message, /estimateTokens/);
    }
    const pacer = new BatchPacer(() => "", { estimateTokens: () => 1 });
    t.after(() => pacer.dispose());
    const err = thrown(() => pacer.setOptions({ estimateTokens: () => 2 }), "invalid_options");
    assert.equal(err.option, "estimateTokens");
    assert.equal("estimateTokens" in pacer.options, false, "pacer.options leaves it out");
  });
});

describe("reported usage", () => {
  test("usage is summed into stats().inputTokens and outputTokens", async (t) => {
    const { clock, send, pacer } = setup(t, {
      answer: async (r) => ({ translations: r.text.toUpperCase(), usage: { inputTokens: 30, outputTokens: 12 } }),
    });
    const states = sendSingles(send, 3);
    await clock.tickAsync(1000);
    assert.deepEqual(states.map((s) => s.value), ["PARAGRAPH 0", "PARAGRAPH 1", "PARAGRAPH 2"]);
    const stats = pacer.stats();
    assert.equal(stats.inputTokens, 90);
    assert.equal(stats.outputTokens, 36);
  });

  test("usage of a batch reply in any reply form counts once per call", async (t) => {
    const { clock, send, pacer, calls } = setup(t, {
      answer: async (r) => ({
        translations: Object.fromEntries(r.ids.map((id, i) => [id, r.texts[i].toUpperCase()])),
        usage: { inputTokens: 100, outputTokens: 40 },
      }),
    });
    const states = ["a", "b", "c", "d"].map((x) => send(item(x)));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1);
    assert.deepEqual(states.map((s) => s.value), ["A", "B", "C", "D"]);
    assert.deepEqual([pacer.stats().inputTokens, pacer.stats().outputTokens], [100, 40]);
  });

  test("a reply without usage leaves the token counters at 0", async (t) => {
    const { clock, send, pacer } = setup(t);
    sendSingles(send, 2);
    await clock.tickAsync(1000);
    assert.deepEqual([pacer.stats().inputTokens, pacer.stats().outputTokens], [0, 0]);
  });

  /** The start time of each call for 8 singles costing 240 tokens by estimate. */
  async function withUsage(t, usage) {
    const { clock, calls, send } = setup(t, {
      rate: 100,
      capacity: 100,
      tokensPerMinute: 1200,
      estimateTokens: () => 100,
      answer: async (r) => (usage ? { translations: r.text, usage } : r.text),
    });
    const states = sendSingles(send, 8);
    await clock.tickAsync(30 * 60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    return startTimes(calls);
  }

  test("usage below the estimate refunds the budget: the next calls start sooner; above it, later", async (t) => {
    const estimated = await withUsage(t, null);
    const less = await withUsage(t, { inputTokens: 10, outputTokens: 10 });
    const more = await withUsage(t, { inputTokens: 500, outputTokens: 500 });
    assert.equal(estimated[5], 12_000, `without usage the 6th call waits for the refill (${estimated})`);
    assert.ok(less[5] < estimated[5], `a refund lets the 6th call start sooner (${less} vs ${estimated})`);
    assert.ok(more.at(-1) > estimated.at(-1), `an extra charge holds the last call longer (${more} vs ${estimated})`);
  });
});

describe("reported limits", () => {
  // The tests that time the instant of a reported reset run with `sharedQuota: false`: by
  // default, a wait that ends at a reported reset is lengthened by a random 0-10% so that
  // clients do not herd (docs/reference.md, Rule 47; tests/node/shared-quota.test.mjs).
  const exactSetup = (t, options) => setup(t, { sharedQuota: false, ...options });
  const limitedReply = (limits) => {
    let first = true;
    return async (r) => {
      if (r.providerId === "a" && first) {
        first = false;
        return { translations: r.text, limits };
      }
      return r.text;
    };
  };

  test("requestsRemaining 0 holds that provider's calls until the window has room again; other providers go on; a limited event", async (t) => {
    // Nothing left, whole again in 5 s, and one request is all the window is known to
    // hold (the one just made): room for one more comes back by the reset, one by one
    // after it, until the report is forgotten one window after its reset.
    const { clock, calls, send, events } = exactSetup(t, {
      answer: limitedReply({ requestsRemaining: 0, requestsResetMs: 5000 }),
    });
    const first = send(item("a0", { providerId: "a", llm: false }));
    await clock.tickAsync(10);
    assert.equal(first.value, "a0");
    const a = sendSingles(send, 3, { providerId: "a" });
    const b = sendSingles(send, 3, { providerId: "b" });
    const wallBefore = Date.now();
    await clock.tickAsync(4900);
    assert.deepEqual(startTimes(calls, "a"), [0], "no call to a before its window has room");
    assert.ok(b.every((s) => s.status === "fulfilled"), "b goes on");
    assert.ok(a.every((s) => s.status === "pending"), "a's items wait, none rejects");
    await clock.tickAsync(200);
    assert.deepEqual(startTimes(calls, "a"), [0, 5000], "room for one request by the reset");
    await clock.tickAsync(5000);
    assert.ok(a.every((s) => s.status === "fulfilled"));
    assert.deepEqual(startTimes(calls, "a").slice(2), [10_000, 10_000], "the report is forgotten a window after its reset");

    const limited = events.filter((e) => e.type === "limited");
    assert.equal(limited[0].providerId, "a");
    assert.equal(limited[0].reason, "requests");
    assert.ok(limited[0].resetMs > 4900 && limited[0].resetMs <= 5000, `resetMs ${limited[0].resetMs}`);
    // retryAt is wall-clock time (epoch ms): now plus what is left of the window.
    assert.ok(Math.abs(limited[0].retryAt - (wallBefore + limited[0].resetMs)) < 2000, `retryAt ${limited[0].retryAt}`);
    assert.equal(new Set(limited.map((e) => e.resetMs + e.at)).size, limited.length, "each hold is announced once");
  });

  test("requestsRemaining counts down with each call started meanwhile, then comes back in proportion", async (t) => {
    // 2 left of a window of 3 (reported whole, as x-ratelimit-limit-requests gives it),
    // whole again in 5 s: a request's room every 5 s.
    const { clock, calls, send } = setup(t, {
      answer: limitedReply({ requestsRemaining: 2, requestsResetMs: 5000, requestsLimit: 3 }),
    });
    send(item("a0", { providerId: "a", llm: false }));
    await clock.tickAsync(10);
    sendSingles(send, 4, { providerId: "a" });
    await clock.tickAsync(4000);
    assert.equal(startTimes(calls, "a").length, 3, "the two requests left, then nothing until there is room");
    await clock.tickAsync(2000);
    assert.equal(startTimes(calls, "a").length, 4, "room for one more 5 s after the report");
    await clock.tickAsync(5000);
    assert.equal(startTimes(calls, "a").length, 5);
  });

  test("tokensRemaining below a call's cost holds it until the token window resets (reason tokens)", async (t) => {
    // A single text estimated at 100 tokens costs 240 (as much again for the output, 40
    // of prompt). The window is known only as the 100 tokens left (the reporting call
    // was sent before any estimate was needed): a call larger than that waits until the
    // window is whole again.
    const { clock, calls, send, events } = exactSetup(t, {
      estimateTokens: () => 100,
      answer: limitedReply({ tokensRemaining: 100, tokensResetMs: 7000 }),
    });
    send(item("a0", { providerId: "a", llm: false }));
    await clock.tickAsync(10);
    const next = send(item("a1", { providerId: "a", llm: false }));
    await clock.tickAsync(6900);
    assert.equal(next.status, "pending");
    assert.deepEqual(startTimes(calls, "a"), [0]);
    await clock.tickAsync(200);
    assert.equal(next.value, "a1");
    const limited = events.filter((e) => e.type === "limited");
    assert.equal(limited.length, 1);
    assert.equal(limited[0].reason, "tokens");
  });

  test("a token window refills in proportion: a call waits only for the tokens it lacks", async (t) => {
    // 100 left of a window of 340 reported whole, whole again in 7 s, so the 140 tokens
    // the next call (240) lacks come back in 7 s × 140 / 240.
    const { clock, calls, send } = setup(t, {
      estimateTokens: () => 100,
      tokensPerMinute: 1_000_000,
      answer: limitedReply({ tokensRemaining: 100, tokensResetMs: 7000, tokensLimit: 340 }),
    });
    send(item("a0", { providerId: "a", llm: false }));
    await clock.tickAsync(10);
    const next = send(item("a1", { providerId: "a", llm: false }));
    const expected = (7000 * 140) / 240;
    await clock.tickAsync(expected - 50);
    assert.equal(next.status, "pending");
    await clock.tickAsync(100);
    assert.equal(next.value, "a1");
    assert.ok(Math.abs(startTimes(calls, "a")[1] - expected) < 5, `started at ${startTimes(calls, "a")[1]} ms`);
  });

  test("without the whole window nothing is guessed: 100 tokens left after a report of 900,000 hold a 4,000-token call until the reset", async (t) => {
    let n = 0;
    const { clock, calls, send } = exactSetup(t, {
      estimateTokens: () => 2000,
      answer: async (r) => {
        n += 1;
        if (n === 1) return { translations: r.text, limits: { tokensRemaining: 900_000, tokensResetMs: 1000 } };
        if (n === 2) return { translations: r.text, limits: { tokensRemaining: 100, tokensResetMs: 5000 } };
        return r.text;
      },
    });
    send(item("a0", { providerId: "a", llm: false }));
    await clock.tickAsync(10);
    send(item("a1", { providerId: "a", llm: false }));
    await clock.tickAsync(10);
    const next = send(item("a2", { providerId: "a", llm: false }));
    await clock.tickAsync(4900);
    assert.equal(next.status, "pending", "no call before the reset: the window is not guessed");
    assert.equal(calls.length, 2);
    await clock.tickAsync(200);
    assert.equal(next.value, "a2");
  });

  test("a snapshot keeps the reported limits: a restarted pacer's first burst respects them", async (t) => {
    // 29 left of a window of 30 after the first call, then 1 left, whole again in 58 s:
    // one request's room comes back every 2 s.
    let n = 0;
    const before = setup(t, {
      rate: 100,
      capacity: 100,
      answer: async (r) => ({
        translations: r.text,
        limits: { requestsRemaining: n++ === 0 ? 29 : 1, requestsResetMs: 58_000, requestsLimit: 30 },
      }),
    });
    before.send(item("first", { providerId: "a", llm: false }));
    await before.clock.tickAsync(10);
    before.send(item("second", { providerId: "a", llm: false }));
    await before.clock.tickAsync(10);
    const snapshot = before.pacer.snapshot();
    const saved = snapshot.providers.find((p) => p.providerId === "a");
    assert.equal(saved.limits.requests.whole, 30);
    assert.ok(Math.abs(saved.limits.requests.remaining - 1) < 0.1, JSON.stringify(saved.limits));
    assert.ok(saved.limits.requests.resetMs > 57_000 && saved.limits.requests.resetMs <= 58_000);

    const after = setup(t, { rate: 100, capacity: 100, restore: JSON.parse(JSON.stringify(snapshot)) });
    const states = sendSingles(after.send, 20, { providerId: "a" });
    await after.clock.tickAsync(100);
    assert.equal(after.calls.length, 1, "one request's room, not a burst of 20");
    await after.clock.tickAsync(60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    assert.ok(after.calls[1].at >= 1500, `the next one as the window refills: ${after.calls[1].at} ms`);
  });

  test("a provider reporting on every reply and 429 meets no 429 after its first reply, on the defaults", async (t) => {
    // 10 requests a minute, a bucket holding a minute's worth, charged on arrival,
    // reported as x-ratelimit-* say it: what is left, and the time until it is whole.
    let level = 10;
    let at = 0;
    let firstReply = Infinity;
    const refused = [];
    const { clock, send } = setup(t, {
      maxRateLimitRetries: 100,
      answer: async (r) => {
        const now = clock.now;
        level = Math.min(10, level + ((now - at) * 10) / 60_000);
        at = now;
        const ok = level >= 1;
        if (ok) level -= 1;
        const limits = { requestsRemaining: Math.floor(level), requestsResetMs: Math.ceil(((10 - level) * 60_000) / 10) };
        await new Promise((resolve) => clock.setTimeout(resolve, 300));
        if (!ok) {
          if (now >= firstReply) refused.push(now);
          throw httpError(429, { retryAfterMs: 6000, limits });
        }
        firstReply = Math.min(firstReply, now + 300);
        return { translations: r.text, limits };
      },
    });
    const states = sendSingles(send, 40, { providerId: "a" });
    await clock.tickAsync(600_000);
    assert.ok(states.every((s) => s.status === "fulfilled"), "nothing lost");
    assert.deepEqual(refused, [], "no 429 once the provider has spoken");
  });

  test("limits on a thrown error hold the retry until the reset, not just the backoff", async (t) => {
    let first = true;
    const { clock, calls, send, events } = exactSetup(t, {
      baseRetryDelayMs: 500,
      answer: async (r) => {
        if (first) {
          first = false;
          throw httpError(503, { limits: { requestsRemaining: 0, requestsResetMs: 5000 } });
        }
        return r.text;
      },
    });
    const state = send(item("x", { providerId: "a", llm: false }));
    await clock.tickAsync(4900);
    assert.equal(calls.length, 1, "the backoff alone would have retried by now");
    await clock.tickAsync(200);
    assert.equal(state.value, "x");
    assert.equal(calls.length, 2);
    assert.ok(calls[1].at >= 5000);
    assert.ok(events.some((e) => e.type === "limited" && e.providerId === "a" && e.reason === "requests"));
  });
});

describe("413: the request is too large", () => {
  const upper = (r) => (r.isBatch ? r.texts.map((x) => x.toUpperCase()) : r.text.toUpperCase());

  test("a batch of 4 answered 413 is split into 2 + 2, then 1 + 1", async (t) => {
    const { clock, calls, send, pacer } = setup(t, {
      answer: async (r) => {
        if (r.texts.length > 1) throw httpError(413);
        return upper(r);
      },
    });
    const states = ["a", "b", "c", "d"].map((x) => send(item(x)));
    await clock.tickAsync(30_000);
    assert.deepEqual(
      calls.map((c) => c.texts),
      [["a", "b", "c", "d"], ["a", "b"], ["c", "d"], ["a"], ["b"], ["c"], ["d"]],
    );
    assert.deepEqual(states.map((s) => s.value), ["A", "B", "C", "D"]);
    assert.equal(pacer.stats().failed, 0);
  });

  test("halves that fit are answered: 4 -> 2 + 2, no further split", async (t) => {
    const { clock, calls, send } = setup(t, {
      answer: async (r) => {
        if (r.texts.length > 2) throw httpError(413);
        return upper(r);
      },
    });
    const states = ["a", "b", "c", "d"].map((x) => send(item(x)));
    await clock.tickAsync(30_000);
    assert.deepEqual(calls.map((c) => c.texts), [["a", "b", "c", "d"], ["a", "b"], ["c", "d"]]);
    assert.deepEqual(states.map((s) => s.value), ["A", "B", "C", "D"]);
  });

  test("a single item answered 413 fails with provider_error, status 413", async (t) => {
    const original = httpError(413);
    const { clock, calls, send } = setup(t, {
      answer: async () => {
        throw original;
      },
    });
    const state = send(item("alone"));
    await clock.tickAsync(30_000);
    assert.equal(calls.length, 1);
    assertPacerError(state.reason, "provider_error", 413);
    assert.equal(state.reason.cause, original);
  });
});

describe("sharedBudget", () => {
  /** Two pacers on one virtual clock, each with its own recording provider. */
  function twoPacers(t, { budget, answer, ...options } = {}) {
    const { clock, pacerClock } = virtualTime();
    const first = recordingProvider(clock, answer);
    const second = recordingProvider(clock, answer);
    const events = [];
    const make = (recorder) =>
      new BatchPacer(recorder.provider, {
        clock: pacerClock,
        onEvent: (e) => events.push({ at: clock.now, ...e }),
        ...(budget ? { budget } : {}),
        ...options,
      });
    const pacers = [make(first), make(second)];
    t.after(() => pacers.forEach((p) => p.dispose()));
    return { clock, pacers, calls: [first.calls, second.calls], events };
  }

  const sendTo = (pacer, n, prefix, extra = {}) =>
    Array.from({ length: n }, (_, i) => track(pacer.translate(item(`${prefix}${i}`, { llm: false, ...extra }))));

  test("two pacers on sharedBudget({ rate: 2, capacity: 2 }) together stay within it", async (t) => {
    const { clock, pacers, calls } = twoPacers(t, { budget: sharedBudget({ rate: 2, capacity: 2 }) });
    const states = [...sendTo(pacers[0], 10, "page "), ...sendTo(pacers[1], 10, "cue ")];
    await clock.tickAsync(30_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    const times = [...startTimes(calls[0]), ...startTimes(calls[1])];
    assert.equal(times.length, 20);
    assertWindowBound(times, 2, 2);
    // The backlog drains at the budget's rate, not slower: 18 calls after the burst at 2/s.
    assert.ok(Math.max(...times) <= 9000 + 50, `last call at ${Math.max(...times)} ms`);
    assert.equal(pacers[0].stats().providerCalls + pacers[1].stats().providerCalls, 20);
  });

  test("without the shared budget the same two pacers start everything at once", async (t) => {
    const { clock, pacers, calls } = twoPacers(t);
    sendTo(pacers[0], 10, "page ");
    sendTo(pacers[1], 10, "cue ");
    await clock.tickAsync(0);
    assert.equal(calls[0].length + calls[1].length, 20);
  });

  test("each pacer's own rate still caps its flow", async (t) => {
    const { clock, pacers, calls } = twoPacers(t, { budget: sharedBudget({ rate: 100, capacity: 100 }), rate: 1, capacity: 1 });
    sendTo(pacers[0], 5, "page ");
    await clock.tickAsync(2500);
    assertWindowBound(startTimes(calls[0]), 1, 1);
    assert.equal(calls[0].length, 3);
  });

  test("a 429 with Retry-After met by one pacer pauses that provider for the other", async (t) => {
    let limitedOnce = false;
    const { clock, pacers, calls } = twoPacers(t, {
      budget: sharedBudget({ rate: 10, capacity: 10 }),
      adaptiveRate: false,
      answer: async (r) => {
        if (r.providerId === "p1" && !limitedOnce) {
          limitedOnce = true;
          throw httpError(429, { retryAfterMs: 10_000 });
        }
        return r.text;
      },
    });
    const first = sendTo(pacers[0], 1, "page ");
    await clock.tickAsync(10);
    assert.equal(calls[0].length, 1);
    const other = sendTo(pacers[1], 3, "cue ");
    const elsewhere = sendTo(pacers[1], 2, "elsewhere ", { providerId: "p2" });
    await clock.tickAsync(9000);
    assert.equal(calls[1].filter((c) => c.providerId === "p1").length, 0, "the other pacer waits for the Retry-After");
    assert.ok(elsewhere.every((s) => s.status === "fulfilled"), "another provider goes on");
    assert.ok(other.every((s) => s.status === "pending"));
    await clock.tickAsync(2000);
    assert.ok(other.every((s) => s.status === "fulfilled"));
    assert.equal(first[0].value, "page 0");
    assert.ok(calls[1].filter((c) => c.providerId === "p1").every((c) => c.at >= 10_000));
  });

  test("tokensPerMinute of a shared budget paces both pacers by cost", async (t) => {
    // 240 tokens a single call (2 * 100 + 40): 1,200 a minute = 5 calls, then one per 12 s.
    const { clock, pacers, calls } = twoPacers(t, {
      budget: sharedBudget({ rate: 100, capacity: 100, tokensPerMinute: 1200 }),
      estimateTokens: () => 100,
    });
    sendTo(pacers[0], 4, "page ");
    sendTo(pacers[1], 4, "cue ");
    await clock.tickAsync(60_000);
    const times = [...startTimes(calls[0]), ...startTimes(calls[1])];
    assert.equal(times.filter((at) => at === 0).length, 5, `call times ${times}`);
    assertWindowBound(times, 1200 / 200, 20 / 200);
  });

  describe("validation", () => {
    // [label, options, the option the error must name]
    const cases = [
      ["{ rate: -1 }", { rate: -1 }, "rate"],
      ["{ rate: 0 }", { rate: 0 }, "rate"],
      ["{ capacity: 1.5 }", { capacity: 1.5 }, "capacity"],
      ["{ capacity: 0 }", { capacity: 0 }, "capacity"],
      ["{ tokensPerMinute: -1 }", { tokensPerMinute: -1 }, "tokensPerMinute"],
      ["{ tokensPerMinute: NaN }", { tokensPerMinute: NaN }, "tokensPerMinute"],
      ['{ tokensPerMinute: "6000" }', { tokensPerMinute: "6000" }, "tokensPerMinute"],
      ["{ rat: 1 } (a misspelt option)", { rat: 1 }, "rat"],
      ["{ maxItemsPerBatch: 4 } (a pacer's option)", { maxItemsPerBatch: 4 }, "maxItemsPerBatch"],
      ["{ clock: {} }", { clock: {} }, "clock"],
      ["{ estimateTokens }", { estimateTokens: () => 1 }, "estimateTokens"],
    ];
    for (const [label, options, option] of cases) {
      test(`sharedBudget(${label}) throws invalid_options with option ${option}`, () => {
        const err = thrown(() => sharedBudget(options), "invalid_options");
        assert.equal(err.option, option, err.message);
        assert.match(err.message, new RegExp(option));
      });
    }

    test("sharedBudget() and sharedBudget({}) take the defaults; undefined values count as not given", () => {
      for (const options of [undefined, {}, { rate: undefined }, null]) sharedBudget(options);
      assert.equal(String(sharedBudget()), "[object SharedBudget]");
    });

    test("a budget not from sharedBudget() is invalid_options naming budget", () => {
      const lookalike = Object.create(Object.getPrototypeOf(sharedBudget()));
      for (const budget of [{}, null, "shared", 5, lookalike, { ...sharedBudget() }]) {
        const err = thrown(() => new BatchPacer(() => "", { budget }), "invalid_options");
        assert.equal(err.option, "budget");
      }
    });

    test("setOptions({ budget }) rejects: the budget is set at construction only", (t) => {
      const budget = sharedBudget({ rate: 1 });
      const pacer = new BatchPacer(() => "", { budget });
      t.after(() => pacer.dispose());
      const err = thrown(() => pacer.setOptions({ budget }), "invalid_options");
      assert.equal(err.option, "budget");
      const other = new BatchPacer(() => "");
      t.after(() => other.dispose());
      assert.equal(thrown(() => other.setOptions({ budget, rate: 2 }), "invalid_options").option, "budget");
      assert.equal(other.options.rate, 8, "all or nothing: the rate in the same patch is not applied");
    });
  });
});

describe("option errors", () => {
  test("restore: null works like no restore", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { restore: null, rate: 1, capacity: 3 });
    const states = sendSingles(send, 3);
    await clock.tickAsync(0);
    assert.equal(calls.length, 3, "the bucket starts full, as without restore");
    await clock.tickAsync(10);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    assert.ok(pacer.snapshot().tokens < 1);
  });

  test("every option error names its option in error.option", (t) => {
    const provider = () => "";
    const invalid = {
      rate: -1,
      capacity: 0,
      maxInFlight: -1,
      maxCharactersPerBatch: 0,
      maxItemsPerBatch: 0,
      batchDelayMs: -1,
      maxBatchRetries: 1.5,
      fallbackToIndividual: "yes",
      timeoutMs: NaN,
      maxRetries: -1,
      baseRetryDelayMs: -1,
      maxRateLimitRetries: -1,
      adaptiveRate: 1,
      cacheEntries: -1,
      segmentFormat: "json",
      tokensPerMinute: -1,
      maxQueued: -1,
      estimateTokens: 5,
      cache: {},
      clock: {},
      onEvent: "log",
      restore: 5,
      budget: {},
      notAnOption: 1,
    };
    for (const [option, value] of Object.entries(invalid)) {
      const err = thrown(() => new BatchPacer(provider, { [option]: value }), "invalid_options");
      assert.equal(err.option, option, `new BatchPacer: ${err.message}`);
    }
    const pacer = new BatchPacer(provider);
    t.after(() => pacer.dispose());
    const patchable = Object.keys(invalid).filter((k) => !["cache", "clock", "restore", "estimateTokens", "budget"].includes(k));
    for (const option of [...patchable, "cache", "clock", "restore", "estimateTokens", "budget"]) {
      const err = thrown(() => pacer.setOptions({ [option]: invalid[option] }), "invalid_options");
      assert.equal(err.option, option, `setOptions: ${err.message}`);
    }
    assert.equal(thrown(() => new BatchPacer(5), "invalid_options").option, "provider");
  });
});

describe("reported limits through openAIProvider and a real server", () => {
  test("x-ratelimit-remaining-tokens 0 with a reset of 1.5 s and no limit header: the next call waits for the reset", async (t) => {
    const { startServer } = await import("./chat-server.mjs");
    const { openAIProvider } = await import("batch-pacer");
    let n = 0;
    const arrivals = [];
    const server = await startServer(t, (record, res) => {
      arrivals.push(performance.now());
      n += 1;
      const headers = { "content-type": "application/json" };
      if (n === 1) Object.assign(headers, { "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1.5s" });
      res.writeHead(200, headers);
      const content = record.json.messages.at(-1).content;
      res.end(JSON.stringify({ choices: [{ message: { content }, finish_reason: "stop" }] }));
    });
    const pacer = new BatchPacer(openAIProvider({ baseUrl: server.baseUrl, model: "m" }));
    t.after(() => pacer.dispose());
    const first = item("one", { providerId: "a", llm: false });
    assert.equal(await pacer.translate(first), "one");
    const replied = performance.now();
    assert.equal(await pacer.translate(item("two", { providerId: "a", llm: false })), "two");
    // The reset counts from the reply's arrival: about 1.5 s, not at once.
    const waited = arrivals[1] - replied;
    assert.ok(waited >= 1400, `the second call came ${Math.round(waited)} ms after the report`);
  });
});
