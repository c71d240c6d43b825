// Errors that no retry can help (docs/reference.md, "Failures", "Quotas"): settings errors (401,
// 403, 404), billing, and daily quotas reject the provider's whole queue in one step;
// other providers go on; a daily block holds until its reset, also across a snapshot.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer } from "batch-pacer";
import { setup, item, httpError, assertPacerError, virtualTime, track } from "./helpers.mjs";

const T = (x) => `«${x.toUpperCase()}»`;
const faithful = (r) =>
  r.isBatch ? r.texts.map((x, i) => r.markers[i][0] + T(x) + r.markers[i][1]).join("\n") : T(r.text);

/** 12 items for p1 (3 batches of 4) and 2 for p2, at 1 call per second. */
function queueUp(t, error, options = {}) {
  let broken = true;
  const ctx = setup(t, {
    rate: 1,
    capacity: 1,
    answer: async (r) => {
      if (r.providerId === "p1" && broken) throw error;
      return faithful(r);
    },
    ...options,
  });
  const p1 = Array.from({ length: 12 }, (_, i) => ctx.send(item(`text ${i}`)));
  const p2 = ["other a", "other b"].map((x) => ctx.send(item(x, { providerId: "p2" })));
  return { ...ctx, p1, p2, fix: () => (broken = false) };
}

describe("settings errors: 401, 403, 404", () => {
  const checks = { 401: /key/i, 403: /key|access|allowed/i, 404: /model|base URL|address/i };
  for (const status of [401, 403, 404]) {
    test(`${status}: the call's items and every queued item of the provider reject at once, in one call`, async (t) => {
      const original = httpError(status);
      const { clock, calls, p1, p2, events, pacer, fix } = queueUp(t, original);
      await clock.tickAsync(150);
      const p1Calls = () => calls.filter((c) => c.providerId === "p1").length;
      assert.equal(p1Calls(), 1, "one call failed");
      for (const s of p1) {
        assert.equal(s.status, "rejected", "rejected within that one call, not one failing call per batch");
        assertPacerError(s.reason, "provider_error", status);
        assert.match(s.reason.message, checks[status], s.reason.message);
      }
      const blocked = events.filter((e) => e.type === "blocked");
      assert.equal(blocked.length, 1);
      assert.equal(blocked[0].providerId, "p1");
      assert.equal(blocked[0].reason, "settings");
      assert.equal(blocked[0].status, status);
      assert.equal(blocked[0].message, p1[0].reason.message, "the event carries the message to show");
      assert.equal(pacer.stats().queued >= 0, true);
      assert.equal(pacer.stats().failed, 12);
      // The first call's items carry the provider's error as cause.
      assert.ok(p1.some((s) => s.reason.cause === original));

      // Other providers go on.
      await clock.tickAsync(5000);
      assert.deepEqual(p2.map((s) => s.value), ["other a", "other b"].map(T));
      assert.equal(p1Calls(), 1, "no call for the rejected items");

      // Items that arrive later are sent again: the user may have fixed the settings.
      fix();
      const later = track(pacer.translate(item("after the fix")));
      await clock.tickAsync(2000);
      assert.equal(p1Calls(), 2);
      assert.equal(later.value, T("after the fix"));
    });
  }

  test("no retry: maxRetries does not apply", async (t) => {
    const { clock, calls, p1 } = queueUp(t, httpError(401), { maxRetries: 5, baseRetryDelayMs: 10 });
    await clock.tickAsync(10_000);
    assert.equal(calls.filter((c) => c.providerId === "p1").length, 1);
    for (const s of p1) assertPacerError(s.reason, "provider_error", 401);
  });

  test("a 400 is no settings error: only that call's items reject, the queue goes on", async (t) => {
    let n = 0;
    const { clock, send, calls } = setup(t, {
      rate: 1,
      capacity: 1,
      answer: async (r) => {
        if (n++ === 0) throw httpError(400);
        return faithful(r);
      },
    });
    const states = Array.from({ length: 8 }, (_, i) => send(item(`t${i}`)));
    await clock.tickAsync(5000);
    assert.equal(calls.length, 2);
    for (const s of states.slice(0, 4)) assertPacerError(s.reason, "provider_error", 400);
    assert.deepEqual(states.slice(4).map((s) => s.value), [4, 5, 6, 7].map((i) => T(`t${i}`)));
  });
});

describe("billing", () => {
  for (const [name, error] of [
    ["a 429 with quota billing", httpError(429, { quota: "billing" })],
    ["a 402 with quota billing", httpError(402, { quota: "billing" })],
  ]) {
    test(`${name}: every queued item of the provider rejects at once, no retry, and later items are sent again`, async (t) => {
      const { clock, calls, p1, p2, events, pacer, fix } = queueUp(t, error, { maxRateLimitRetries: 10 });
      await clock.tickAsync(150);
      assert.equal(calls.filter((c) => c.providerId === "p1").length, 1);
      for (const s of p1) {
        assertPacerError(s.reason, "provider_error");
        assert.match(s.reason.message, /credit|spending cap/i, s.reason.message);
      }
      const blocked = events.find((e) => e.type === "blocked");
      assert.equal(blocked.reason, "billing");
      assert.equal(blocked.providerId, "p1");
      await clock.tickAsync(5000);
      assert.deepEqual(p2.map((s) => s.value), ["other a", "other b"].map(T));
      assert.equal(calls.filter((c) => c.providerId === "p1").length, 1, "no retry can help");
      fix();
      const later = track(pacer.translate(item("topped up")));
      await clock.tickAsync(2000);
      assert.equal(later.value, T("topped up"));
    });
  }
});

describe("daily quotas", () => {
  const HOUR = 3_600_000;

  test("quota daily with a Retry-After: provider_error 429 with retryAt, then no call until the reset", async (t) => {
    const before = Date.now();
    const { clock, calls, p1, p2, events, pacer, fix } = queueUp(t, httpError(429, { quota: "daily", retryAfterMs: HOUR }));
    await clock.tickAsync(150);
    const p1Calls = () => calls.filter((c) => c.providerId === "p1").length;
    assert.equal(p1Calls(), 1);
    for (const s of p1) {
      assertPacerError(s.reason, "provider_error", 429);
      assert.equal(typeof s.reason.retryAt, "number", "the reset is known");
      // Epoch milliseconds (wall time), about an hour from now.
      assert.ok(s.reason.retryAt >= before + HOUR - 1000 && s.reason.retryAt <= Date.now() + HOUR + 1000, `${s.reason.retryAt}`);
    }
    const blocked = events.find((e) => e.type === "blocked");
    assert.equal(blocked.reason, "daily");
    assert.equal(blocked.status, 429);
    assert.equal(typeof blocked.retryAt, "number");
    assert.ok(Math.abs(blocked.retryAt - p1[0].reason.retryAt) < 1000);
    await clock.tickAsync(5000);
    assert.deepEqual(p2.map((s) => s.value), ["other a", "other b"].map(T));

    // Until the reset, new items for the provider reject the same way without a call.
    fix();
    await clock.tickAsync(HOUR / 2);
    const askedAt = clock.now;
    const during = track(pacer.translate(item("still blocked")));
    await clock.tickAsync(0);
    assertPacerError(during.reason, "provider_error", 429);
    assert.equal(typeof during.reason.retryAt, "number");
    // The same reset: retryAt is wall time (Date.now()) plus what is left of the block
    // on the pacer's clock, which is virtual here.
    const blockedAt = calls.find((c) => c.providerId === "p1").at;
    const left = HOUR - (askedAt - blockedAt);
    assert.ok(Math.abs(during.reason.retryAt - Date.now() - left) < 2000, `${during.reason.retryAt - Date.now()} vs ${left}`);
    assert.equal(p1Calls(), 1);
    const other = track(pacer.translate(item("p2 still works", { providerId: "p2" })));
    await clock.tickAsync(2000);
    assert.equal(other.value, T("p2 still works"));

    // After the reset the provider is called again.
    await clock.tickAsync(HOUR / 2 - 2000);
    const after = track(pacer.translate(item("after the reset")));
    await clock.tickAsync(2000);
    assert.equal(after.value, T("after the reset"));
    assert.equal(p1Calls(), 2);
  });

  test("a 429 whose Retry-After is over 5 minutes is a daily quota too", async (t) => {
    const { clock, calls, p1, events, pacer } = queueUp(t, httpError(429, { retryAfter: 600 }));
    await clock.tickAsync(150);
    assert.equal(calls.filter((c) => c.providerId === "p1").length, 1);
    for (const s of p1) {
      assertPacerError(s.reason, "provider_error", 429);
      assert.equal(typeof s.reason.retryAt, "number");
    }
    assert.equal(events.find((e) => e.type === "blocked")?.reason, "daily");
    assert.equal(pacer.stats().rateLimited, 1);
    const during = track(pacer.translate(item("x")));
    await clock.tickAsync(0);
    assertPacerError(during.reason, "provider_error", 429);
  });

  test("a 429 with a short Retry-After only pauses: nothing rejects", async (t) => {
    let n = 0;
    const { clock, send } = setup(t, {
      answer: async (r) => {
        if (n++ === 0) throw httpError(429, { retryAfter: 2 });
        return faithful(r);
      },
    });
    const states = Array.from({ length: 8 }, (_, i) => send(item(`t${i}`)));
    await clock.tickAsync(10_000);
    assert.deepEqual(states.map((s) => s.value), states.map((_, i) => T(`t${i}`)));
  });

  test("quota daily without a reset time still blocks, with no retryAt", async (t) => {
    const { clock, calls, p1, pacer, fix } = queueUp(t, httpError(429, { quota: "daily" }));
    await clock.tickAsync(150);
    for (const s of p1) {
      assertPacerError(s.reason, "provider_error", 429);
      assert.equal(s.reason.retryAt, undefined, "no reset was reported");
    }
    fix();
    const during = track(pacer.translate(item("x")));
    await clock.tickAsync(60_000);
    assertPacerError(during.reason, "provider_error", 429);
    assert.equal(calls.filter((c) => c.providerId === "p1").length, 1);
  });

  test("snapshot() keeps the block: a pacer restored from it rejects without a call", async (t) => {
    const { clock, p1, pacer } = queueUp(t, httpError(429, { quota: "daily", retryAfterMs: HOUR }));
    await clock.tickAsync(150);
    assertPacerError(p1[0].reason, "provider_error", 429);
    const snapshot = JSON.parse(JSON.stringify(pacer.snapshot()));
    const entry = snapshot.providers.find((p) => p.providerId === "p1" || p.id === "p1");
    assert.ok(entry, JSON.stringify(snapshot));
    assert.ok(entry.dailyBlock, `providers[].dailyBlock: ${JSON.stringify(entry)}`);

    const { clock: clock2, pacerClock } = virtualTime();
    let called = 0;
    const restored = new BatchPacer(
      async (r) => {
        called++;
        return faithful(r);
      },
      { clock: pacerClock, restore: snapshot },
    );
    t.after(() => restored.dispose());
    const s = track(restored.translate(item("after a restart")));
    const other = track(restored.translate(item("other provider", { providerId: "p2", llm: false })));
    await clock2.tickAsync(1000);
    assertPacerError(s.reason, "provider_error", 429);
    assert.equal(typeof s.reason.retryAt, "number");
    assert.equal(other.value, T("other provider"));
    assert.equal(called, 1, "only the other provider was called");
  });
});

describe("retryable: false", () => {
  test("a call the provider marks retryable: false is never retried, whatever its status", async (t) => {
    for (const status of [undefined, 500, 503, 413]) {
      const refusal = Object.assign(httpError(status ?? 500), { retryable: false });
      if (status === undefined) delete refusal.status;
      const { clock, calls, send } = setup(t, {
        answer: async () => {
          throw refusal;
        },
      });
      const state = send(item("x", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1, `status ${status}: one call`);
      assertPacerError(state.reason, "provider_error");
      assert.equal(state.reason.status, status);
      assert.equal(state.reason.cause, refusal);
    }
  });

  test("a batch's items are then sent once each alone; a retryable that is not a boolean is ignored", async (t) => {
    const { clock, calls, send } = setup(t, {
      answer: async (r) => {
        if (r.texts.includes("bad")) throw Object.assign(httpError(503), { retryable: false });
        return faithful(r);
      },
    });
    const states = ["one", "bad", "three"].map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    assert.deepEqual(calls.map((c) => c.texts.length), [3, 1, 1, 1], "the batch, then each item once");
    assert.equal(states[0].value, T("one"));
    assertPacerError(states[1].reason, "provider_error");
    assert.equal(states[2].value, T("three"));

    const loose = setup(t, {
      answer: async () => {
        throw Object.assign(httpError(503), { retryable: "no" });
      },
    });
    loose.send(item("x", { llm: false }));
    await loose.clock.tickAsync(60_000);
    assert.equal(loose.calls.length, 3, "retried like any 503 (maxRetries 2)");
  });
});
