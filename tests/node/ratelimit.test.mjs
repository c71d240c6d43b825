// Rule 6 of docs/reference.md: a 429 pauses that provider only, keeps the queue, has its own retry budget,
// a Retry-After over 5 minutes fails at once, and adaptiveRate slows the provider.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, httpError, assertPacerError, assertWindowBound } from "./helpers.mjs";

const tooMany = (extra = {}) => httpError(429, extra);

describe("429 pause", () => {
  test("pauses only that provider until its Retry-After; others continue; the queue is kept", async (t) => {
    let limitedOnce = false;
    const { clock, calls, send, pacer } = setup(t, {
      rate: 10,
      capacity: 10,
      adaptiveRate: false,
      answer: async (r) => {
        if (r.providerId === "a" && !limitedOnce) {
          limitedOnce = true;
          throw tooMany({ retryAfterMs: 10_000 });
        }
        return `${r.providerId}:${r.text}`;
      },
    });
    const first = send(item("a0", { providerId: "a", llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    // While "a" is paused, queue work for both providers, spread over time.
    const aStates = [];
    const bStates = [];
    for (let i = 1; i <= 5; i++) {
      aStates.push(send(item(`a${i}`, { providerId: "a", llm: false })));
      bStates.push(send(item(`b${i}`, { providerId: "b", llm: false })));
      await clock.tickAsync(1000);
    }
    const aCallsDuringPause = calls.filter((c) => c.providerId === "a" && c.at < 10_000);
    assert.equal(aCallsDuringPause.length, 1, "no call to the paused provider before its Retry-After");
    assert.ok(bStates.every((s) => s.status === "fulfilled"), "the other provider keeps going");
    assert.ok(aStates.every((s) => s.status === "pending"), "the paused provider's items wait in the queue");
    await clock.tickAsync(10_000 - clock.now - 1);
    assert.equal(calls.filter((c) => c.providerId === "a").length, 1);
    await clock.tickAsync(2000);
    assert.equal(first.value, "a:a0");
    assert.deepEqual(aStates.map((s) => s.value), ["a:a1", "a:a2", "a:a3", "a:a4", "a:a5"]);
    assert.ok(calls.filter((c) => c.providerId === "a" && c.at >= 10_000).length >= 6);
    assert.equal(pacer.stats().rateLimited, 1);
  });

  test("without Retry-After the pause lasts the backoff", async (t) => {
    let n = 0;
    const { clock, calls, send, events } = setup(t, {
      baseRetryDelayMs: 4000,
      adaptiveRate: false,
      answer: async (r) => {
        if (n++ === 0) throw tooMany();
        return r.text;
      },
    });
    send(item("x", { providerId: "a", llm: false }));
    await clock.tickAsync(0);
    send(item("y", { providerId: "a", llm: false }));
    await clock.tickAsync(1999);
    assert.equal(calls.length, 1, "paused for at least half the first backoff");
    await clock.tickAsync(2002);
    assert.equal(calls.length, 3, "both calls go after the backoff");
    const limited = events.find((e) => e.type === "rateLimited");
    assert.ok(limited);
    assert.equal(limited.providerId, "a");
    assert.equal(limited.retryAfterMs, null);
    assert.ok(limited.pausedForMs >= 2000 && limited.pausedForMs <= 4000, `pausedForMs ${limited.pausedForMs}`);
  });

  test("items of the paused provider that arrive later wait too", async (t) => {
    let n = 0;
    const { clock, calls, send } = setup(t, {
      adaptiveRate: false,
      answer: async (r) => {
        if (n++ === 0) throw tooMany({ retryAfter: 3 });
        return r.text;
      },
    });
    send(item("first", { providerId: "q" }));
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    const later = send(item("later", { providerId: "q" }));
    await clock.tickAsync(2500);
    assert.equal(calls.length, 1);
    assert.equal(later.status, "pending");
    await clock.tickAsync(1000);
    assert.equal(later.value, "later");
  });

  test("a 429 retry waits for a token too (rule 5)", async (t) => {
    let n = 0;
    const { clock, calls, send } = setup(t, {
      rate: 1,
      capacity: 1,
      adaptiveRate: false,
      answer: async (r) => {
        if (n++ === 0) throw tooMany({ retryAfterMs: 10 });
        return r.text;
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(500);
    assert.equal(calls.length, 1, "the Retry-After is over, the token is not there yet");
    await clock.tickAsync(501);
    assert.equal(calls.length, 2);
    assert.equal(s.value, "x");
  });

  test("the rateLimited event: a plain object with providerId, retryAfterMs, pausedForMs", async (t) => {
    let n = 0;
    const { clock, send, events } = setup(t, {
      adaptiveRate: false,
      answer: async (r) => {
        if (n++ === 0) throw tooMany({ retryAfterMs: 7000 });
        return r.text;
      },
    });
    send(item("x", { providerId: "deepl", llm: false }));
    await clock.tickAsync(0);
    const e = events.find((x) => x.type === "rateLimited");
    assert.ok(e);
    assert.equal(e.providerId, "deepl");
    assert.equal(e.retryAfterMs, 7000);
    // The pause is the Retry-After lengthened by 0–10% ("No herds"), never shortened.
    assert.ok(e.pausedForMs >= 7000 && e.pausedForMs <= 7700, `pausedForMs ${e.pausedForMs}`);
  });
});

describe("429 retry budget", () => {
  test("429 retries use maxRateLimitRetries, not maxRetries", async (t) => {
    let n = 0;
    const { clock, calls, send, pacer } = setup(t, {
      maxRetries: 0,
      maxRateLimitRetries: 3,
      baseRetryDelayMs: 10,
      adaptiveRate: false,
      answer: async (r) => {
        if (n++ < 3) throw tooMany({ retryAfterMs: 100 });
        return `ok:${r.text}`;
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(5000);
    assert.equal(calls.length, 4);
    assert.equal(s.value, "ok:x");
    assert.equal(pacer.stats().rateLimited, 3);
    assert.equal(pacer.stats().retries, 3);
  });

  test("past maxRateLimitRetries the items reject provider_error with status 429", async (t) => {
    const errors = [];
    const { clock, calls, send } = setup(t, {
      maxRetries: 5,
      maxRateLimitRetries: 2,
      adaptiveRate: false,
      answer: async () => {
        const e = tooMany({ retryAfterMs: 50 });
        errors.push(e);
        throw e;
      },
    });
    const states = [send(item("a")), send(item("b"))];
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 3, "the first try and 2 rate-limit retries; maxRetries does not add more");
    for (const s of states) {
      assertPacerError(s.reason, "provider_error", 429);
      assert.equal(s.reason.cause, errors[2]);
    }
  });

  test("the two budgets are counted apart", async (t) => {
    const script = [tooMany({ retryAfterMs: 10 }), httpError(503), tooMany({ retryAfterMs: 10 }), httpError(500)];
    let n = 0;
    const { clock, calls, send } = setup(t, {
      maxRetries: 2,
      maxRateLimitRetries: 2,
      baseRetryDelayMs: 10,
      adaptiveRate: false,
      answer: async (r) => {
        const e = script[n++];
        if (e) throw e;
        return `ok:${r.text}`;
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 5, "two 429s and two 5xx all fit their own budgets");
    assert.equal(s.value, "ok:x");
  });

  test("5xx failures do not use up the 429 budget", async (t) => {
    const script = [httpError(503), httpError(503), tooMany({ retryAfterMs: 10 })];
    let n = 0;
    const { clock, calls, send } = setup(t, {
      maxRetries: 2,
      maxRateLimitRetries: 1,
      baseRetryDelayMs: 10,
      adaptiveRate: false,
      answer: async (r) => {
        const e = script[n++];
        if (e) throw e;
        return "done";
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 4);
    assert.equal(s.value, "done");
  });

  test("the default maxRateLimitRetries is 10", async (t) => {
    const { clock, calls, send } = setup(t, {
      maxRetries: 0,
      adaptiveRate: false,
      answer: async () => { throw tooMany({ retryAfterMs: 10 }); },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(60_000);
    assert.equal(calls.length, 11);
    assertPacerError(s.reason, "provider_error", 429);
  });
});

describe("Retry-After longer than 5 minutes", () => {
  for (const [name, extra] of Object.entries({
    retryAfterMs: { retryAfterMs: 300_001 },
    "retryAfter seconds": { retryAfter: 3600 },
    "a Headers instance": { headers: new Headers({ "Retry-After": "86400" }) },
  })) {
    test(`fails the call at once with provider_error, status 429 (${name})`, async (t) => {
      const err = tooMany(extra);
      const { clock, calls, send } = setup(t, { maxRateLimitRetries: 10, answer: async () => { throw err; } });
      const states = [send(item("a")), send(item("b"))];
      await clock.tickAsync(100);
      assert.equal(calls.length, 1);
      for (const s of states) {
        assert.equal(s.status, "rejected", "failed at once, not after the wait");
        assertPacerError(s.reason, "provider_error", 429);
        assert.equal(s.reason.cause, err);
      }
      await clock.tickAsync(24 * 3600 * 1000);
      assert.equal(calls.length, 1, "never retried");
    });
  }

  test("exactly 5 minutes is still waited for", async (t) => {
    let n = 0;
    const { clock, calls, send } = setup(t, {
      adaptiveRate: false,
      // The wait ends at the Retry-After itself (with sharedQuota it is lengthened by up
      // to 10%: see shared-quota.test.mjs), so the test can name the second it ends.
      sharedQuota: false,
      answer: async (r) => {
        if (n++ === 0) throw tooMany({ retryAfterMs: 300_000 });
        return r.text;
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(299_000);
    assert.equal(s.status, "pending");
    assert.equal(calls.length, 1);
    await clock.tickAsync(2000);
    assert.equal(calls.length, 2);
    assert.equal(s.value, "x");
  });
});

describe("adaptiveRate", () => {
  /**
   * Provider "a" answers its first call with 429 (Retry-After 1 s); everything else
   * succeeds. 20 items for "a" are queued before the first answer.
   */
  async function afterOne429(t, adaptiveRate) {
    let limited = false;
    const ctx = setup(t, {
      rate: 10,
      capacity: 10,
      adaptiveRate,
      // The pause ends at the Retry-After itself (with sharedQuota it is lengthened by up
      // to 10%, at least 250 ms: see shared-quota.test.mjs), so the tests can count the
      // calls of the second after it.
      sharedQuota: false,
      answer: async (r) => {
        if (r.providerId === "a" && !limited) {
          limited = true;
          throw tooMany({ retryAfterMs: 1000 });
        }
        return r.text;
      },
    });
    ctx.send(item("first", { providerId: "a", llm: false }));
    await ctx.clock.tickAsync(0);
    assert.equal(ctx.calls.length, 1);
    ctx.states = [];
    for (let i = 0; i < 20; i++) ctx.states.push(ctx.send(item(`a${i}`, { providerId: "a", llm: false })));
    await ctx.clock.tickAsync(0);
    return ctx;
  }

  test("true: after a 429 the provider gets burst 1 and a lower rate, never above `rate`", async (t) => {
    const { clock, calls, events } = await afterOne429(t, true);
    await clock.tickAsync(1000);
    assert.equal(calls.length, 2, "burst 1 after the pause: only the retry starts at once");
    await clock.tickAsync(1000);
    const after = calls.filter((c) => c.at >= 1000).map((c) => c.at);
    // Half of 10/s with burst 1 gives 1 + 5 calls in the first second; the rate rises
    // 15% with each success up to 3/4 of the ceiling (7.5/s), then 0.5%: 8 calls. The
    // full rate would give 11 (see the next test).
    const firstSecond = after.filter((at) => at < 2000).length;
    assert.ok(firstSecond <= 8, `${firstSecond} calls in the first second after the pause`);
    assert.ok(after[1] - after[0] > 150, `second call ${after[1] - after[0]} ms after the first: slower than 10/s`);
    await clock.tickAsync(60_000);
    const all = calls.filter((c) => c.at >= 1000).map((c) => c.at);
    assert.equal(all.length, 21);
    assertWindowBound(all, 1, 10);
    const adaptive = events.filter((e) => e.type === "adaptiveRate");
    assert.ok(adaptive.length >= 1, "an adaptiveRate event");
    assert.equal(adaptive[0].providerId, "a");
    assert.equal(adaptive[0].rate, 5, "halved from 10");
  });

  test("false: after the pause the provider runs at the full rate and burst", async (t) => {
    const { clock, calls, events } = await afterOne429(t, false);
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1 + 10, "the retry and the queued items use the full bucket at once");
    assert.equal(events.filter((e) => e.type === "adaptiveRate").length, 0);
  });

  test("the slowdown applies to that provider only", async (t) => {
    const { clock, calls, send } = await afterOne429(t, true);
    await clock.tickAsync(1000);
    const bStates = [];
    for (let i = 0; i < 5; i++) bStates.push(send(item(`b${i}`, { providerId: "b", llm: false })));
    await clock.tickAsync(0);
    const bCalls = calls.filter((c) => c.providerId === "b");
    assert.ok(bCalls.length >= 3, `provider b is not limited to burst 1 (got ${bCalls.length} calls at once)`);
  });

  test("the rate is halved at each 429 episode, from the rate in force", async (t) => {
    // Episodes one at a time: one call in flight, a 429 on calls 1 and 3.
    let n = 0;
    const { clock, send, events } = setup(t, {
      rate: 8,
      capacity: 8,
      maxInFlight: 1,
      answer: async (r) => {
        n++;
        if (n === 1 || n === 3) throw tooMany({ retryAfterMs: 500 });
        return r.text;
      },
    });
    for (let i = 0; i < 4; i++) send(item(`x${i}`, { providerId: "a", llm: false }));
    await clock.tickAsync(60_000);
    const rates = events.filter((e) => e.type === "adaptiveRate").map((e) => e.rate);
    assert.ok(rates.length >= 2, JSON.stringify(rates));
    assert.equal(rates[0], 4, "8 halved");
    assert.ok(rates[1] <= 4 / 2 * 1.2 && rates[1] >= 1, `the second episode halves the current rate: ${rates[1]}`);
    for (const r of rates) assert.ok(r === null || (r > 0 && r <= 8), `rate ${r}`);
  });

  test(
    "one burst of 429s is one episode: the rate is halved once",
    async (t) => {
      const { clock, send, events } = setup(t, {
        rate: 8,
        capacity: 8,
        answer: async () => { throw tooMany({ retryAfterMs: 1000 }); },
      });
      for (let i = 0; i < 5; i++) send(item(`x${i}`, { providerId: "a", llm: false }));
      await clock.tickAsync(0);
      const rates = events.filter((e) => e.type === "adaptiveRate").map((e) => e.rate);
      assert.deepEqual(rates, [4], "five 429s of calls that all started before the first 429 are one episode");
    },
  );

  test("after successes the rate rises back gradually, 15% a call then 0.5%, to null = full rate", async (t) => {
    // One 429 at rate 4 halves the rate to 2 (ceiling 4, nothing proven yet); then every
    // call is accepted. Rule 7 of docs/reference.md: +15% per accepted call up to 3/4 of the
    // ceiling (3/s), then +0.5% near the ceiling, back at rate 4 well within the bound.
    let n = 0;
    const { clock, calls, send, events } = setup(t, {
      rate: 4,
      capacity: 4,
      answer: async (r) => {
        if (n++ === 0) throw tooMany({ retryAfterMs: 100 });
        return r.text;
      },
    });
    send(item("x", { providerId: "a", llm: false }));
    await clock.tickAsync(0);
    for (let i = 0; i < 400; i++) send(item(`y${i}`, { providerId: "a", llm: false }));
    await clock.tickAsync(600_000);
    const rates = events.filter((e) => e.type === "adaptiveRate");
    assert.deepEqual(rates.map((e) => e.rate), [2, null], "halved once, then back at the full rate");
    const backAt = rates[1].at;
    assert.ok(backAt <= 100 + 60_000, `back at full rate after ${backAt} ms`);
    // The gaps between calls while slowed: each accepted call shortens the next gap.
    const starts = calls.map((c) => c.at).filter((at) => at >= 100 && at <= backAt);
    const gaps = starts.slice(1).map((at, i) => at - starts[i]);
    assert.ok(gaps.length > 40, `${gaps.length} gaps`);
    assert.ok(Math.abs(starts[0] - 500) <= 2, `first call after the 429 at rate 2 (empty bucket): ${starts[0]} ms`);
    assert.ok(Math.abs(gaps[0] - 1000 / 2.3) <= 2, `then at 2 × 1.15: ${gaps[0]} ms`);
    let fast = 0;
    let slow = 0;
    for (let i = 1; i < gaps.length; i++) {
      const growth = gaps[i - 1] / gaps[i];
      const rate = 1000 / gaps[i - 1];
      // Gaps are whole microseconds of virtual time, rounded up: a little tolerance.
      if (rate < 3 - 0.01) {
        assert.ok(Math.abs(growth - 1.15) < 0.01, `call ${i} at ${rate.toFixed(3)}/s grew ${growth.toFixed(4)}x, not 1.15x`);
        fast++;
      } else if (rate > 3 + 0.02) {
        assert.ok(growth > 1.001 && growth < 1.01, `call ${i} at ${rate.toFixed(3)}/s grew ${growth.toFixed(4)}x, not 1.005x`);
        slow++;
      }
    }
    assert.ok(fast >= 2 && slow >= 20, `${fast} fast and ${slow} slow steps checked`);
  });

  test(
    "a strict quota on the defaults converges instead of storming",
    async (t) => {
      // A quota of 1 request per second: a call within 1 s of the previous accepted one
      // is answered 429 with Retry-After 1.
      let lastAccepted = -Infinity;
      const refused = [];
      const { clock, calls, send } = setup(t, {
        answer: async (r) => {
          if (clock.now - lastAccepted < 1000) {
            refused.push(clock.now);
            throw tooMany({ retryAfter: 1 });
          }
          lastAccepted = clock.now;
          return r.text;
        },
      });
      const states = [];
      for (let i = 0; i < 100; i++) states.push(send(item(`t${i}`, { llm: false })));
      await clock.tickAsync(3_600_000);
      const done = states.filter((s) => s.status === "fulfilled").length;
      assert.equal(done, 100, `${done} of 100 items got through in an hour against a quota of 1/s`);
      // The first burst meets the quota; after the first minute the pacer has converged:
      // few of its calls are refused.
      const lateCalls = calls.filter((c) => c.at >= 60_000).length;
      const lateRefused = refused.filter((at) => at >= 60_000).length;
      assert.ok(lateRefused <= lateCalls / 4, `${lateRefused} of ${lateCalls} calls refused after the first minute`);
      assert.ok(calls.length < 300, `${calls.length} calls for 100 items`);
    },
  );

  test("a quota counted per minute on the defaults meets at most one 429 a minute after the first", async (t) => {
    // 60 requests per calendar minute: the 61st is answered 429 until the next minute.
    // Back at the full rate, the provider must not get the whole bucket that refilled
    // during the pause at once: 59 calls started at one instant would all be refused.
    const used = new Map();
    const refusedPerMinute = new Map();
    const { clock, send, events } = setup(t, {
      answer: async (r) => {
        const minute = Math.floor(clock.now / 60_000);
        used.set(minute, (used.get(minute) ?? 0) + 1);
        if (used.get(minute) > 60) {
          refusedPerMinute.set(minute, (refusedPerMinute.get(minute) ?? 0) + 1);
          throw tooMany({ retryAfter: Math.ceil(((minute + 1) * 60_000 - clock.now) / 1000) });
        }
        return r.text;
      },
    });
    const states = [];
    for (let i = 0; i < 600; i++) states.push(send(item(`t${i}`, { llm: false })));
    await clock.tickAsync(15 * 60_000);
    assert.ok(states.every((s, i) => s.status === "fulfilled" && s.value === `t${i}`), "nothing lost, nothing misplaced");
    assert.ok(events.some((e) => e.type === "adaptiveRate" && e.rate === null), "the provider got back to full rate");
    const later = [...refusedPerMinute].filter(([minute]) => minute >= 1);
    assert.ok(later.length >= 5, `the backlog met the quota in later minutes too: ${JSON.stringify(later)}`);
    assert.ok(later.every(([, refused]) => refused <= 1), `429s per minute: ${JSON.stringify([...refusedPerMinute])}`);
  });
});
