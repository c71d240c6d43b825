// pacer.run(providerId, fn, { priority, signal }): a provider call that is not a
// translation, paced under the rules of that provider's translation calls (docs/guides/ai-sdk.md,
// "Calls that are not translations"). Against the packed package, on virtual time.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer } from "batch-pacer";
import {
  setup, item, deferred, httpError, assertPacerError, assertWindowBound, track, rejection, virtualTime,
} from "./helpers.mjs";

/** A run function that records each try (`at`, `attempt`, `signal`) and answers through `answer`. */
function recordingRun(clock, answer = () => "done") {
  const tries = [];
  const fn = (request) => {
    tries.push({ at: clock.now, attempt: request.attempt, signal: request.signal, keys: Object.keys(request) });
    return answer(request, tries.length - 1);
  };
  return { fn, tries };
}

describe("pacer.run", () => {
  test("its value resolves the promise as it is: a string, an empty string, undefined, an object", async (t) => {
    const { pacer, clock } = setup(t);
    const object = { summary: "a page about cats", usage: { inputTokens: 5 } };
    const values = ["a summary", "", undefined, object, 0, null];
    const runs = values.map((value) => track(pacer.run("p1", async () => value)));
    await clock.tickAsync(0);
    for (const [i, run] of runs.entries()) {
      assert.equal(run.status, "fulfilled", `run ${i}`);
      assert.equal(run.value, values[i]);
    }
    assert.equal(runs[3].value, object, "the very object fn returned, not a copy");
    const stats = pacer.stats();
    assert.equal(stats.providerCalls, values.length, "each try counts in providerCalls");
    assert.equal(stats.items, 0, "a run is not an item");
    assert.equal(stats.succeeded, 0);
  });

  test("fn is called once per try with { signal, attempt }, never the provider", async (t) => {
    const { pacer, clock, calls } = setup(t);
    const { fn, tries } = recordingRun(clock);
    assert.equal(await pacer.run("p1", fn), "done");
    assert.equal(tries.length, 1);
    assert.equal(tries[0].attempt, 0);
    assert.ok(tries[0].signal instanceof AbortSignal);
    assert.equal(tries[0].signal.aborted, false);
    assert.deepEqual(tries[0].keys.sort(), ["attempt", "signal"]);
    assert.equal(calls.length, 0, "the provider was not called");
  });

  test("runs and translation calls share the request bucket (rule 1 across both)", async (t) => {
    const rate = 2;
    const capacity = 2;
    const { pacer, clock, calls, send } = setup(t, { rate, capacity, batchDelayMs: 0 });
    const { fn, tries } = recordingRun(clock);
    const items = [];
    const runs = [];
    for (let i = 0; i < 5; i++) {
      items.push(send(item(`text ${i}`, { llm: false })));
      runs.push(track(pacer.run("p1", fn)));
    }
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 5);
    assert.equal(tries.length, 5);
    assertWindowBound([...calls.map((c) => c.at), ...tries.map((r) => r.at)], capacity, rate);
    for (const run of runs) assert.equal(run.value, "done");
    for (const [i, entry] of items.entries()) assert.equal(entry.value, `TEXT ${i}`);
    assert.equal(pacer.stats().providerCalls, 10);
  });

  test("a 429 thrown by fn pauses the provider's translation calls, and the run is retried after it", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { batchDelayMs: 0 });
    const { fn, tries } = recordingRun(clock, (request) => {
      if (request.attempt === 0) throw httpError(429, { retryAfterMs: 2000 });
      return "summary";
    });
    const run = track(pacer.run("p1", fn));
    await clock.tickAsync(10);
    const translated = send(item("hello", { llm: false }));
    const elsewhere = send(item("other", { llm: false, providerId: "p2" }));
    await clock.tickAsync(5000);
    assert.equal(calls.find((c) => c.text === "other").at, 10, "another provider is not paused");
    assert.ok(calls.find((c) => c.text === "hello").at >= 2000, "the translation waited out the run's 429 pause");
    assert.deepEqual(tries.map((r) => r.attempt), [0, 1]);
    assert.ok(tries[1].at >= 2000);
    assert.equal(run.value, "summary");
    assert.equal(translated.value, "HELLO");
    assert.equal(elsewhere.value, "OTHER");
    assert.equal(pacer.stats().rateLimited, 1);
  });

  test("a run waits out the 429 pause that a translation call met", async (t) => {
    let first = true;
    const { pacer, clock } = setup(t, {
      batchDelayMs: 0,
      answer: async (request) => {
        if (first) {
          first = false;
          throw httpError(429, { retryAfterMs: 3000 });
        }
        return request.text.toUpperCase();
      },
    });
    const { fn, tries } = recordingRun(clock);
    track(pacer.translate(item("hello", { llm: false })));
    await clock.tickAsync(10);
    const run = track(pacer.run("p1", fn));
    await clock.tickAsync(10_000);
    assert.equal(tries.length, 1);
    assert.ok(tries[0].at >= 3000, `the run started at ${tries[0].at}, inside the pause`);
    assert.equal(run.value, "done");
  });

  test("an error that is not retried rejects provider_error with its status and the error as cause", async (t) => {
    const { pacer, clock } = setup(t);
    const error = httpError(400);
    const { fn, tries } = recordingRun(clock, () => Promise.reject(error));
    const reason = await rejection(pacer.run("p1", fn));
    assertPacerError(reason, "provider_error", 400);
    assert.equal(reason.cause, error);
    assert.equal(tries.length, 1);
  });

  test("network errors are retried under maxRetries, then reject provider_error", async (t) => {
    const { pacer, clock } = setup(t, { maxRetries: 1, baseRetryDelayMs: 100 });
    const { fn, tries } = recordingRun(clock, () => {
      throw new TypeError("fetch failed");
    });
    const run = track(pacer.run("p1", fn));
    await clock.tickAsync(1000);
    assert.deepEqual(tries.map((r) => r.attempt), [0, 1]);
    assertPacerError(run.reason, "provider_error");
    assert.equal(pacer.stats().retries, 1);
  });

  test("timeoutMs applies: the try's signal is aborted, it is retried, then rejects timeout", async (t) => {
    const { pacer, clock } = setup(t, { timeoutMs: 1000, maxRetries: 1, baseRetryDelayMs: 10 });
    const { fn, tries } = recordingRun(clock, () => new Promise(() => {}));
    const run = track(pacer.run("p1", fn));
    await clock.tickAsync(5000);
    assert.equal(tries.length, 2);
    assert.ok(tries.every((r) => r.signal.aborted), "each timed-out try's signal is aborted");
    assertPacerError(run.reason, "timeout");
  });

  test("priority orders a run among its provider's queued work", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { rate: 1, capacity: 1, batchDelayMs: 0 });
    const order = [];
    const named = (name) => () => {
      order.push(name);
      return name;
    };
    send(item("takes the token", { llm: false }));
    await clock.tickAsync(0);
    send(item("low item", { llm: false }));
    track(pacer.run("p1", named("low run")));
    track(pacer.run("p1", named("high run"), { priority: 5 }));
    await clock.tickAsync(10_000);
    assert.deepEqual(order, ["high run", "low run"]);
    const lowItem = calls.find((c) => c.text === "low item").at;
    assert.equal(lowItem, 2000, "the item that came before the low run goes before it");
  });

  test("abort before it starts: removed, rejects aborted, fn never called", async (t) => {
    const { pacer, clock, send } = setup(t, { rate: 1, capacity: 1, batchDelayMs: 0 });
    send(item("takes the token", { llm: false }));
    await clock.tickAsync(0);
    const controller = new AbortController();
    const { fn, tries } = recordingRun(clock);
    const run = track(pacer.run("p1", fn, { signal: controller.signal }));
    await clock.tickAsync(100);
    controller.abort();
    await clock.tickAsync(0);
    assertPacerError(run.reason, "aborted");
    await clock.tickAsync(10_000);
    assert.equal(tries.length, 0);
  });

  test("abort while it runs: rejects aborted at once and fn's signal is aborted", async (t) => {
    const { pacer, clock } = setup(t);
    const controller = new AbortController();
    const late = deferred();
    const { fn, tries } = recordingRun(clock, () => late.promise);
    const run = track(pacer.run("p1", fn, { signal: controller.signal }));
    await clock.tickAsync(10);
    assert.equal(tries.length, 1);
    controller.abort();
    await clock.tickAsync(0);
    assertPacerError(run.reason, "aborted");
    assert.equal(tries[0].signal.aborted, true);
    assert.equal(pacer.stats().inFlight, 0);
    late.resolve("too late");
    await clock.tickAsync(0);
    assert.equal(run.settlements, 1);
    assert.equal(run.status, "rejected");
  });

  test("an already aborted signal rejects aborted without a try", async (t) => {
    const { pacer } = setup(t);
    let called = false;
    const reason = await rejection(pacer.run("p1", () => (called = true), { signal: AbortSignal.abort() }));
    assertPacerError(reason, "aborted");
    assert.equal(called, false);
  });

  test("bad input rejects invalid_input naming the field", async (t) => {
    const { pacer } = setup(t);
    const fn = () => "x";
    const cases = [
      [() => pacer.run("", fn), "providerId"],
      [() => pacer.run(5, fn), "providerId"],
      [() => pacer.run(undefined, fn), "providerId"],
      [() => pacer.run("p1", "not a function"), "fn"],
      [() => pacer.run("p1", fn, 5), "options"],
      [() => pacer.run("p1", fn, null), "options"],
      [() => pacer.run("p1", fn, { priority: "high" }), "priority"],
      [() => pacer.run("p1", fn, { priority: NaN }), "priority"],
      [() => pacer.run("p1", fn, { signal: {} }), "signal"],
      [() => pacer.run("p1", fn, { get priority() { throw new Error("boom"); } }), "options"],
    ];
    for (const [call, field] of cases) {
      const reason = await rejection(call());
      assertPacerError(reason, "invalid_input");
      assert.ok(reason.message.startsWith(field), `${reason.message} names ${field}`);
    }
    assert.equal(pacer.stats().providerCalls, 0);
  });

  test("dispose rejects pending runs disposed, and later runs reject disposed", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const pacer = new BatchPacer(async () => "x", { clock: pacerClock, rate: 1, capacity: 1 });
    const running = track(pacer.run("p1", () => new Promise(() => {})));
    const queued = track(pacer.run("p1", () => "never"));
    await clock.tickAsync(10);
    pacer.dispose();
    await clock.tickAsync(0);
    assertPacerError(running.reason, "disposed");
    assertPacerError(queued.reason, "disposed");
    assertPacerError(await rejection(pacer.run("p1", () => "x")), "disposed");
    assertPacerError(await rejection(pacer.run("", "bad input too")), "disposed");
    assert.equal(running.settlements + queued.settlements, 2);
  });
});
