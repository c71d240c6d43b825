// AbortSignal (before send, already aborted) and dispose().

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer } from "batch-pacer";
import { setup, item, deferred, assertPacerError, virtualTime, track, rejection } from "./helpers.mjs";

describe("AbortSignal", () => {
  test("abort before the item is sent: it rejects aborted and is never sent", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { rate: 1, capacity: 1 });
    send(item("takes the token", { llm: false }));
    await clock.tickAsync(0);
    const controller = new AbortController();
    const s = send(item("to abort", { llm: false, signal: controller.signal }));
    const keep = send(item("kept", { llm: false }));
    await clock.tickAsync(500);
    controller.abort();
    await clock.tickAsync(0);
    assert.equal(s.status, "rejected");
    assertPacerError(s.reason, "aborted");
    await clock.tickAsync(10_000);
    assert.ok(!calls.some((c) => c.texts.includes("to abort")), "the aborted item was never sent");
    assert.equal(keep.value, "KEPT");
    assert.equal(calls[1].text, "kept", "the next token went to the next item");
    assert.equal(pacer.stats().aborted, 1);
  });

  test("an item aborted while its batch collects leaves the batch", async (t) => {
    const { clock, calls, send } = setup(t, { batchDelayMs: 100 });
    const controller = new AbortController();
    const a = send(item("a"));
    const b = send(item("b", { signal: controller.signal }));
    const c = send(item("c"));
    await clock.tickAsync(50);
    controller.abort();
    await clock.tickAsync(50);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a", "c"]);
    assertPacerError(b.reason, "aborted");
    assert.equal(a.value, "A");
    assert.equal(c.value, "C");
  });

  test("when an abort leaves one item in a batch, it is sent as a single request", async (t) => {
    const { clock, calls, send } = setup(t, { batchDelayMs: 100 });
    const controller = new AbortController();
    const a = send(item("a"));
    send(item("b", { signal: controller.signal }));
    controller.abort();
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a"]);
    assert.equal(calls[0].isBatch, false);
    assert.equal(calls[0].text, "a");
    assert.equal(a.value, "A");
  });

  test("an already-aborted signal rejects aborted without a call", async (t) => {
    const { clock, calls, send, pacer } = setup(t);
    const s = send(item("x", { signal: AbortSignal.abort() }));
    await clock.tickAsync(1000);
    assertPacerError(s.reason, "aborted");
    assert.equal(calls.length, 0);
    assert.equal(pacer.stats().aborted, 1);
  });

  test("an already-aborted signal on blank text still settles once", async (t) => {
    const { clock, send } = setup(t);
    const s = send(item("  ", { signal: AbortSignal.abort() }));
    await clock.tickAsync(0);
    assert.notEqual(s.status, "pending");
    assert.equal(s.settlements, 1);
  });

  test("an abort with a reason still rejects with PacerError aborted", async (t) => {
    const { clock, send } = setup(t, { batchDelayMs: 1000 });
    const controller = new AbortController();
    const s = send(item("x", { signal: controller.signal }));
    controller.abort(new Error("tab closed"));
    await clock.tickAsync(0);
    assertPacerError(s.reason, "aborted");
  });

  test("aborting one of two identical items keeps the other", async (t) => {
    const { clock, calls, send } = setup(t, { batchDelayMs: 100 });
    const controller = new AbortController();
    const a = send(item("same", { signal: controller.signal }));
    const b = send(item("same"));
    controller.abort();
    await clock.tickAsync(100);
    assertPacerError(a.reason, "aborted");
    assert.equal(b.value, "SAME");
    assert.equal(calls.length, 1);
  });

  test("aborting a later one of identical items aborts that item, not another", async (t) => {
    const { clock, calls, send, pacer } = setup(t, { batchDelayMs: 100 });
    const controllers = [0, 1, 2, 3].map(() => new AbortController());
    const sent = controllers.map((c) => send(item("same", { signal: c.signal })));
    controllers[2].abort();
    await clock.tickAsync(0);
    assertPacerError(sent[2].reason, "aborted");
    for (const i of [0, 1, 3]) assert.equal(sent[i].status, "pending", `item ${i} is still waiting`);
    controllers[3].abort();
    await clock.tickAsync(100);
    assertPacerError(sent[3].reason, "aborted");
    assert.equal(sent[0].value, "SAME");
    assert.equal(sent[1].value, "SAME");
    assert.equal(calls.length, 1);
    assert.equal(pacer.stats().aborted, 2);
  });

  test("aborting after the item settled changes nothing", async (t) => {
    const { clock, send, pacer } = setup(t);
    const controller = new AbortController();
    const s = send(item("done", { signal: controller.signal, llm: false }));
    await clock.tickAsync(0);
    assert.equal(s.value, "DONE");
    controller.abort();
    await clock.tickAsync(0);
    assert.equal(s.settlements, 1);
    assert.equal(s.status, "fulfilled");
    assert.equal(pacer.stats().aborted, 0);
  });

  test("aborting an item whose call is running settles it exactly once", async (t) => {
    const hold = deferred();
    const { clock, send } = setup(t, { answer: () => hold.promise });
    const controller = new AbortController();
    const s = send(item("running", { llm: false, signal: controller.signal }));
    await clock.tickAsync(0);
    controller.abort();
    await clock.tickAsync(0);
    assertPacerError(s.reason, "aborted");
    hold.resolve("late");
    await clock.tickAsync(0);
    assert.equal(s.settlements, 1);
    assertPacerError(s.reason, "aborted");
  });

  test("aborting a running item lets the call go on for identical items and caches the result", async (t) => {
    const hold = deferred();
    const { clock, calls, send, pacer } = setup(t, { answer: () => hold.promise });
    const controller = new AbortController();
    const aborted = send(item("same", { llm: false, signal: controller.signal }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1, "the call is running");
    const sharer = send(item("same", { llm: false }));
    controller.abort();
    await clock.tickAsync(0);
    assertPacerError(aborted.reason, "aborted");
    assert.equal(sharer.status, "pending", "the identical item still waits for the call");
    assert.equal(calls[0].signal.aborted, false, "the call goes on");
    hold.resolve("translated");
    await clock.tickAsync(0);
    assert.equal(sharer.value, "translated");
    const later = send(item("same", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(later.value, "translated");
    assert.equal(calls.length, 1, "the later item was answered from the cache");
    const stats = pacer.stats();
    assert.equal(stats.cacheHits, 1);
    assert.equal(stats.dedupHits, 1);
    assert.equal(stats.aborted, 1);
  });
});

describe("dispose", () => {
  test("rejects every unsettled item with disposed: queued, collecting and in flight", async (t) => {
    const hold = deferred();
    const { clock, calls, send, pacer } = setup(t, { rate: 1, capacity: 1, answer: () => hold.promise });
    const inFlight = send(item("running", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    const queued = send(item("queued", { llm: false }));
    const collecting = send(item("collecting"));
    await clock.tickAsync(10);
    pacer.dispose();
    await clock.tickAsync(0);
    for (const s of [inFlight, queued, collecting]) {
      assert.equal(s.status, "rejected");
      assertPacerError(s.reason, "disposed");
    }
    hold.resolve("too late");
    await clock.tickAsync(10_000);
    assert.equal(inFlight.settlements, 1);
    assert.equal(calls.length, 1, "nothing is sent after dispose");
  });

  test("settled items stay settled", async (t) => {
    const { clock, send, pacer } = setup(t);
    const s = send(item("done", { llm: false }));
    await clock.tickAsync(0);
    pacer.dispose();
    await clock.tickAsync(0);
    assert.equal(s.value, "DONE");
    assert.equal(s.settlements, 1);
  });

  test("later translate calls reject disposed (they do not throw)", async (t) => {
    const { clock, calls, pacer } = setup(t);
    pacer.dispose();
    let promise;
    assert.doesNotThrow(() => {
      promise = pacer.translate(item("after"));
    });
    assertPacerError(await rejection(promise), "disposed");
    await clock.tickAsync(1000);
    assert.equal(calls.length, 0);
  });

  test("later translate of a malformed item rejects disposed too", async (t) => {
    const { pacer } = setup(t);
    pacer.dispose();
    const unreadable = new Proxy({}, { get() { throw new Error("boom"); } });
    const aborted = { ...item("x"), sourceLang: "", signal: AbortSignal.abort() };
    for (const bad of [{ ...item("x"), providerId: "" }, { ...item("x"), text: 42 }, null, "text", unreadable, aborted]) {
      assertPacerError(await rejection(pacer.translate(bad)), "disposed");
    }
  });

  test("later translate of blank text or a cached text rejects disposed too", async (t) => {
    const { clock, pacer, send } = setup(t);
    send(item("cached", { llm: false }));
    await clock.tickAsync(0);
    pacer.dispose();
    assertPacerError(await rejection(pacer.translate(item("cached", { llm: false }))), "disposed");
    assertPacerError(await rejection(pacer.translate(item("   "))), "disposed");
  });

  test("clears its timers", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const pacer = new BatchPacer(async (r) => r.text, { clock: pacerClock, rate: 0.1, capacity: 1, timeoutMs: 5000 });
    const states = [];
    states.push(track(pacer.translate(item("a", { llm: false }))));
    states.push(track(pacer.translate(item("b", { llm: false }))));
    states.push(track(pacer.translate(item("c"))));
    await clock.tickAsync(0);
    assert.ok(clock.countTimers() > 0);
    pacer.dispose();
    assert.equal(clock.countTimers(), 0, "no timer left armed");
    await clock.tickAsync(0);
    assert.deepEqual(states.map((s) => s.status), ["fulfilled", "rejected", "rejected"]);
  });

  test("dispose twice is harmless", async (t) => {
    const { clock, send, pacer } = setup(t);
    const s = send(item("x"));
    pacer.dispose();
    pacer.dispose();
    await clock.tickAsync(0);
    assert.equal(s.settlements, 1);
    assertPacerError(s.reason, "disposed");
  });

  test("a call that fails after dispose changes nothing", async (t) => {
    const hold = deferred();
    const { clock, calls, send, pacer } = setup(t, { answer: () => hold.promise });
    const s = send(item("x", { llm: false }));
    await clock.tickAsync(0);
    pacer.dispose();
    hold.reject(new Error("aborted by dispose"));
    await clock.tickAsync(0);
    assert.equal(s.settlements, 1);
    assertPacerError(s.reason, "disposed");
    assert.equal(calls.length, 1);
  });

  test("stats after dispose: disposed items counted, gauges zero", async (t) => {
    const { clock, send, pacer } = setup(t, { batchDelayMs: 1000 });
    send(item("a"));
    send(item("b"));
    await clock.tickAsync(0);
    pacer.dispose();
    const stats = pacer.stats();
    assert.equal(stats.disposed, 2);
    assert.equal(stats.pending, 0);
    assert.equal(stats.queued, 0);
    assert.equal(stats.inFlight, 0);
  });
});
