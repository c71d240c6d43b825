// Mixed provider behaviour on virtual time: whatever the provider answers, rule 1 holds
// and every item settles exactly once.

import { test } from "node:test";
import assert from "node:assert/strict";

import { setup, item, httpError, assertWindowBound, assertNoSecondSettlement, prng } from "./helpers.mjs";

for (const seed of [1, 2, 3, 4, 5, 6]) {
  test(`seed ${seed}: window bound and exactly-once under mixed failures`, async (t) => {
    const random = prng(seed);
    const capacity = 1 + Math.floor(random() * 5);
    const rate = [0.5, 1, 2.5, 8][Math.floor(random() * 4)];
    const { clock, calls, send, pacer } = setup(t, {
      rate,
      capacity,
      maxInFlight: Math.floor(random() * 3),
      maxItemsPerBatch: 1 + Math.floor(random() * 4),
      batchDelayMs: Math.floor(random() * 200),
      baseRetryDelayMs: 50,
      timeoutMs: 2000,
      answer: (r) => {
        const roll = random();
        if (roll < 0.1) return Promise.reject(httpError(503));
        if (roll < 0.15) return Promise.reject(httpError(429, { retryAfterMs: 300 }));
        if (roll < 0.2) return Promise.reject(httpError(400));
        if (roll < 0.25) return new Promise(() => {});
        if (roll < 0.3 && r.isBatch) return Promise.resolve("not split");
        if (roll < 0.33) return Promise.resolve(42);
        return Promise.resolve(r.isBatch ? r.texts.map((x) => `T${x}`) : `T${r.text}`);
      },
    });
    const states = [];
    const texts = [];
    for (let i = 0; i < 60; i++) {
      const text = `t${Math.floor(random() * 45)}`;
      texts.push(text);
      states.push(
        send(item(text, {
          llm: random() < 0.8,
          providerId: random() < 0.5 ? "a" : "b",
          priority: Math.floor(random() * 3),
        })),
      );
      if (random() < 0.3) await clock.tickAsync(Math.floor(random() * 400));
    }
    await clock.tickAsync(3_600_000);
    states.forEach((s, i) => {
      assert.equal(s.settlements, 1);
      assert.notEqual(s.status, "pending");
      if (s.status === "fulfilled") assert.equal(s.value, `T${texts[i]}`, `item ${i}'s own translation`);
      else assert.ok(["provider_error", "timeout", "count_mismatch"].includes(s.reason.code), s.reason.code);
    });
    assertNoSecondSettlement(pacer);
    assertWindowBound(calls.map((c) => c.at), capacity, rate);
    const stats = pacer.stats();
    assert.equal(stats.items, 60);
    assert.equal(stats.pending, 0);
    assert.equal(stats.queued, 0);
    assert.equal(stats.inFlight, 0);
    assert.equal(stats.providerCalls, calls.length);
    assert.equal(stats.items, stats.succeeded + stats.failed + stats.aborted + stats.disposed + stats.pending);
  });
}
