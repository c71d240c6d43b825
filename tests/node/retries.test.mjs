// Failed provider calls: which are retried, backoff, Retry-After, timeouts, Rule 5 of docs/reference.md.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, httpError, assertPacerError } from "./helpers.mjs";

/** An answer that fails with `errors[attempt]` (when defined) and succeeds otherwise. */
function failThen(errors, success = (r) => `ok:${r.text}`) {
  return async (r, index) => {
    const error = errors[index];
    if (error !== undefined) throw error;
    return success(r);
  };
}

describe("retried failures", () => {
  const retried = {
    "a network error (no status)": () => new TypeError("fetch failed"),
    "a plain rejected string": () => "socket hang up",
    408: () => httpError(408),
    409: () => httpError(409),
    500: () => httpError(500),
    502: () => httpError(502),
    503: () => httpError(503),
    504: () => httpError(504),
    599: () => httpError(599),
  };
  for (const [name, make] of Object.entries(retried)) {
    test(`${name} is retried, and a later success resolves the item`, async (t) => {
      const { clock, calls, send, pacer } = setup(t, {
        maxRetries: 1,
        baseRetryDelayMs: 100,
        answer: failThen([make()]),
      });
      const s = send(item("x", { llm: false }));
      await clock.tickAsync(1000);
      assert.equal(calls.length, 2);
      assert.deepEqual(calls.map((c) => c.attempt), [0, 1]);
      assert.equal(s.value, "ok:x");
      assert.equal(pacer.stats().retries, 1);
    });
  }

  test("429 is retried (with its own budget)", async (t) => {
    const { clock, calls, send } = setup(t, {
      maxRetries: 0,
      baseRetryDelayMs: 100,
      answer: failThen([httpError(429)]),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(5000);
    assert.equal(calls.length, 2);
    assert.equal(s.value, "ok:x");
  });

  test("after maxRetries retries the items reject with provider_error, status and cause", async (t) => {
    const errors = [httpError(503), httpError(502), httpError(500)];
    const { clock, calls, send, pacer } = setup(t, { maxRetries: 2, baseRetryDelayMs: 10, answer: failThen(errors) });
    const states = [send(item("a")), send(item("b"))];
    await clock.tickAsync(5000);
    assert.equal(calls.length, 3);
    for (const s of states) {
      assertPacerError(s.reason, "provider_error", 500);
      assert.equal(s.reason.cause, errors[2], "the last original error is the cause");
    }
    assert.equal(pacer.stats().failed, 2);
  });

  test("a provider that throws synchronously is treated like a rejection", async (t) => {
    let n = 0;
    const { clock, send } = setup(t, {
      baseRetryDelayMs: 10,
      provider: (r) => {
        if (n++ === 0) throw httpError(503);
        return Promise.resolve(`ok:${r.text}`);
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(n, 2);
    assert.equal(s.value, "ok:x");
  });

  test("maxRetries 0: the first failure is final", async (t) => {
    const err = httpError(503);
    const { clock, calls, send } = setup(t, { maxRetries: 0, answer: failThen([err]) });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 1);
    assertPacerError(s.reason, "provider_error", 503);
    assert.equal(s.reason.cause, err);
  });

  test("the default maxRetries is 2", async (t) => {
    const { clock, calls, send } = setup(t, { baseRetryDelayMs: 10, answer: async () => Promise.reject(httpError(500)) });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(60_000);
    assert.equal(calls.length, 3);
    assertPacerError(s.reason, "provider_error", 500);
  });
});

describe("failures that are not retried", () => {
  // 413 is not here: it splits the batch instead (below).
  for (const status of [400, 401, 403, 404, 422]) {
    test(`${status} rejects at once with provider_error, status and the original error as cause`, async (t) => {
      const err = httpError(status, { body: "details" });
      const { clock, calls, send, pacer } = setup(t, { maxRetries: 5, answer: async () => { throw err; } });
      const states = [send(item("a")), send(item("b"))];
      await clock.tickAsync(100);
      assert.equal(calls.length, 1);
      for (const s of states) {
        assert.equal(s.status, "rejected");
        assertPacerError(s.reason, "provider_error", status);
        assert.equal(s.reason.cause, err);
      }
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1, "never retried");
      assert.equal(pacer.stats().retries, 0);
    });
  }

  test("413 splits the batch in halves, down to single items, which then reject with status and cause", async (t) => {
    const err = httpError(413, { body: "too large" });
    const { clock, calls, send } = setup(t, { maxRetries: 5, answer: async () => { throw err; } });
    const states = ["a", "b", "c", "d"].map((x) => send(item(x)));
    await clock.tickAsync(60_000);
    assert.deepEqual(calls.map((c) => c.texts.length), [4, 2, 2, 1, 1, 1, 1]);
    for (const s of states) {
      assertPacerError(s.reason, "provider_error", 413);
      assert.equal(s.reason.cause, err);
    }
  });
});

describe("backoff", () => {
  test("the n-th retry waits between 0.5x and 1x of baseRetryDelayMs * 2^n", async (t) => {
    const base = 400;
    const { clock, calls, send, events } = setup(t, {
      maxRetries: 4,
      baseRetryDelayMs: base,
      capacity: 60,
      answer: async () => { throw httpError(503); },
    });
    const states = [];
    for (let i = 0; i < 12; i++) states.push(send(item(`t${i}`, { llm: false })));
    await clock.tickAsync(60_000);
    assert.equal(calls.length, 12 * 5);
    for (let i = 0; i < 12; i++) {
      const mine = calls.filter((c) => c.text === `t${i}`);
      assert.deepEqual(mine.map((c) => c.attempt), [0, 1, 2, 3, 4]);
      for (let n = 0; n < 4; n++) {
        const gap = mine[n + 1].at - mine[n].at;
        const full = base * 2 ** n;
        assert.ok(gap >= full / 2 - 1 && gap <= full + 1, `t${i} retry ${n} waited ${gap} (expected ${full / 2}..${full})`);
      }
    }
    for (const s of states) assertPacerError(s.reason, "provider_error", 503);
    const retryEvents = events.filter((e) => e.type === "retry");
    assert.equal(retryEvents.length, 12 * 4);
    for (const e of retryEvents) {
      assert.equal(e.providerId, "p1");
      assert.equal(e.reason, "error");
      const full = base * 2 ** (e.attempt - 1);
      assert.ok(
        e.delayMs >= full / 2 - 1 && e.delayMs <= full + 1,
        `retry event for attempt ${e.attempt}: delay ${e.delayMs}`,
      );
    }
  });

  test("baseRetryDelayMs 0 retries at once (given a token)", async (t) => {
    const { clock, calls, send } = setup(t, { baseRetryDelayMs: 0, maxRetries: 2, answer: failThen([httpError(500), httpError(500)]) });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 3);
    assert.equal(s.value, "ok:x");
  });

  test("a retry waits for its backoff and a token (rule 5)", async (t) => {
    const { clock, calls, send } = setup(t, {
      rate: 1,
      capacity: 1,
      baseRetryDelayMs: 10,
      answer: failThen([httpError(503)]),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    await clock.tickAsync(900);
    assert.equal(calls.length, 1, "the backoff is over, the token is not there yet");
    await clock.tickAsync(101);
    assert.equal(calls.length, 2);
    assert.ok(calls[1].at >= 1000 - 1);
    assert.equal(s.value, "ok:x");
  });

  test("retries never break the window bound", async (t) => {
    const { clock, calls, send } = setup(t, {
      rate: 2,
      capacity: 3,
      baseRetryDelayMs: 1,
      maxRetries: 3,
      answer: async (r, i) => {
        if (i % 3 !== 2) throw httpError(500);
        return r.text;
      },
    });
    for (let i = 0; i < 10; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(120_000);
    const times = calls.map((c) => c.at).sort((a, b) => a - b);
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        assert.ok(j - i + 1 <= 3 + (2 * (times[j] - times[i])) / 1000 + 1e-6, `window [${times[i]}, ${times[j]}]`);
      }
    }
  });
});

describe("Retry-After on a failed call", () => {
  const forms = {
    "retryAfterMs": { retryAfterMs: 5000 },
    "retryAfter in seconds": { retryAfter: 5 },
    "headers as a plain object": { headers: { "retry-after": "5" } },
    "a Headers instance": { headers: new Headers({ "Retry-After": "5" }) },
    "retryAfter as text": { retryAfter: "5" },
    "a header with spaces and a fraction": { headers: { "retry-after": " 5.000 " } },
  };
  for (const [name, extra] of Object.entries(forms)) {
    test(`${name} is read and wins over the backoff (503)`, async (t) => {
      const { clock, calls, send } = setup(t, {
        baseRetryDelayMs: 10,
        adaptiveRate: false,
        answer: failThen([httpError(503, extra)]),
      });
      const s = send(item("x", { llm: false }));
      await clock.tickAsync(4990);
      assert.equal(calls.length, 1, "the retry waits the 5 s the provider asked for");
      // Lengthened by up to 10% (500 ms) so that clients do not herd (Rule 47).
      await clock.tickAsync(520);
      assert.equal(calls.length, 2, "and not much longer");
      assert.equal(s.value, "ok:x");
    });

    test(`${name} is read on a 429 too`, async (t) => {
      const { clock, calls, send, events } = setup(t, {
        baseRetryDelayMs: 10,
        adaptiveRate: false,
        answer: failThen([httpError(429, extra)]),
      });
      const s = send(item("x", { llm: false }));
      await clock.tickAsync(4990);
      assert.equal(calls.length, 1);
      // Lengthened by up to 10% (500 ms) so that clients do not herd (Rule 47).
      await clock.tickAsync(520);
      assert.equal(calls.length, 2);
      assert.equal(s.value, "ok:x");
      const limited = events.find((e) => e.type === "rateLimited");
      assert.ok(limited);
      assert.equal(limited.retryAfterMs, 5000);
    });
  }

  test("a short Retry-After wins over a long backoff", async (t) => {
    const { clock, calls, send } = setup(t, {
      baseRetryDelayMs: 10_000,
      adaptiveRate: false,
      answer: failThen([httpError(503, { retryAfterMs: 50 })]),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(49);
    assert.equal(calls.length, 1);
    // Lengthened by up to 250 ms so that clients do not herd (Rule 47): still far below
    // the 10 s backoff.
    await clock.tickAsync(260);
    assert.equal(calls.length, 2);
    assert.equal(s.value, "ok:x");
  });

  for (const unreadable of ["soon", "", "-5", "5s"]) {
    test(`an unreadable Retry-After (${JSON.stringify(unreadable)}) leaves the wait to the backoff`, async (t) => {
      const { clock, calls, send } = setup(t, {
        baseRetryDelayMs: 10,
        adaptiveRate: false,
        answer: failThen([httpError(503, { headers: { "retry-after": unreadable } })]),
      });
      const s = send(item("x", { llm: false }));
      await clock.tickAsync(1000);
      assert.equal(calls.length, 2, "retried after the 10 ms backoff, not after a wait read from the text");
      assert.equal(s.value, "ok:x");
    });
  }

  test("Retry-After given as an HTTP-date in a Headers instance", async (t) => {
    // The date is read against the real clock (HTTP-dates are wall-clock times);
    // allow a second for its whole-second resolution and for the test's own run time.
    const when = new Date(Date.now() + 10_000).toUTCString();
    const { clock, calls, send } = setup(t, {
      baseRetryDelayMs: 10,
      adaptiveRate: false,
      answer: failThen([httpError(503, { headers: new Headers({ "Retry-After": when }) })]),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(7_000);
    assert.equal(calls.length, 1);
    await clock.tickAsync(4_000);
    assert.equal(calls.length, 2);
    assert.equal(s.value, "ok:x");
  });
});

describe("timeoutMs", () => {
  test("aborts the call's signal on timeout; the final code is timeout", async (t) => {
    const { clock, calls, send, pacer, events } = setup(t, {
      timeoutMs: 1000,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      answer: () => new Promise(() => {}),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(999);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].signal.aborted, false);
    assert.equal(s.status, "pending");
    await clock.tickAsync(1);
    assert.equal(calls[0].signal.aborted, true, "the signal is aborted at timeoutMs");
    assert.equal(s.status, "rejected");
    assertPacerError(s.reason, "timeout");
    assert.equal(pacer.stats().failed, 1);
    assert.ok(events.some((e) => e.type === "timeout" && e.providerId === "p1"));
  });

  test("a provider that reads the signal only after the timeout finds it aborted", async (t) => {
    const requests = [];
    const { clock, send } = setup(t, {
      timeoutMs: 1000,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      provider: (request) => {
        requests.push(request);
        return new Promise(() => {});
      },
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(1000);
    assertPacerError(s.reason, "timeout");
    const { signal } = requests[0];
    assert.ok(signal instanceof AbortSignal);
    assert.equal(signal.aborted, true);
    assert.equal(requests[0].signal, signal, "the same signal on every read");
  });

  test("a timed-out call is retried like a network error", async (t) => {
    const { clock, calls, send } = setup(t, {
      timeoutMs: 500,
      maxRetries: 2,
      baseRetryDelayMs: 100,
      answer: (r) => (r.attempt < 2 ? new Promise(() => {}) : Promise.resolve(`late ${r.text}`)),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(5000);
    assert.equal(calls.length, 3);
    assert.ok(calls[0].signal.aborted && calls[1].signal.aborted);
    assert.equal(calls[2].signal.aborted, false);
    assert.equal(s.value, "late x");
  });

  test("after the retries, timeouts reject every item of the batch with timeout", async (t) => {
    const { clock, calls, send } = setup(t, {
      timeoutMs: 200,
      maxRetries: 1,
      baseRetryDelayMs: 10,
      answer: () => new Promise(() => {}),
    });
    const states = [send(item("a")), send(item("b"))];
    await clock.tickAsync(5000);
    assert.equal(calls.length, 2);
    for (const s of states) assertPacerError(s.reason, "timeout");
  });

  test("a provider that answers after its timeout changes nothing", async (t) => {
    let late;
    const { clock, send } = setup(t, {
      timeoutMs: 100,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      answer: () => new Promise((resolve) => (late = resolve)),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(100);
    assertPacerError(s.reason, "timeout");
    late("too late");
    await clock.tickAsync(10);
    assert.equal(s.settlements, 1);
    assert.equal(s.status, "rejected");
  });

  test("a late answer of a timed-out call lands on no call started after it", async (t) => {
    const held = [];
    const { clock, send } = setup(t, {
      timeoutMs: 100,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      answer: (r) => new Promise((resolve) => held.push({ text: r.text, resolve })),
    });
    const x = send(item("x", { llm: false }));
    await clock.tickAsync(100);
    assertPacerError(x.reason, "timeout");
    const y = send(item("y", { llm: false }));
    await clock.tickAsync(10);
    assert.deepEqual(held.map((h) => h.text), ["x", "y"]);
    held[0].resolve("the answer for x");
    await clock.tickAsync(10);
    assert.equal(y.status, "pending", "x's answer did not settle y");
    held[1].resolve("the answer for y");
    await clock.tickAsync(10);
    assert.equal(y.value, "the answer for y");
    assert.equal(x.settlements, 1);
  });

  test("timeoutMs 0 means no timeout", async (t) => {
    let resolveLater;
    const { clock, calls, send } = setup(t, {
      timeoutMs: 0,
      answer: () => new Promise((resolve) => (resolveLater = resolve)),
    });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(24 * 3600 * 1000);
    assert.equal(calls[0].signal.aborted, false);
    assert.equal(s.status, "pending");
    resolveLater("finally");
    await clock.tickAsync(0);
    assert.equal(s.value, "finally");
  });

  test("the default timeout is 20000 ms plus 15 ms per character sent", async (t) => {
    const { clock, calls, send } = setup(t, { maxRetries: 0, answer: () => new Promise(() => {}) });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(20_014);
    assert.equal(s.status, "pending");
    await clock.tickAsync(1);
    assert.equal(calls[0].signal.aborted, true);
    assertPacerError(s.reason, "timeout");
  });
});
