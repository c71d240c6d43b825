// Rule 1 of docs/reference.md (token bucket), maxInFlight, priority and FIFO order, on virtual time.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item, deferred, assertWindowBound } from "./helpers.mjs";

/** A provider whose calls stay open until the test settles them. */
function heldAnswers() {
  const open = [];
  const answer = (request) => {
    const d = deferred();
    open.push({ request, ...d });
    return d.promise;
  };
  return { open, answer };
}

describe("token bucket", () => {
  test("the bucket starts full: a burst of `capacity` calls at once, then no more", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 2, capacity: 5 });
    for (let i = 0; i < 20; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 5);
    await clock.tickAsync(499);
    assert.equal(calls.length, 5, "no token before 1/rate s");
  });

  test("a backlog drains at rate, not slower", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 2, capacity: 5 });
    for (let i = 0; i < 25; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 5);
    for (let k = 1; k <= 20; k++) {
      await clock.tickAsync(500);
      assert.equal(calls.length, 5 + k, `after ${k * 500} ms`);
    }
    // One call every 500 ms: the gaps between consecutive starts are 500 ms.
    for (let i = 6; i < calls.length; i++) {
      assert.ok(Math.abs(calls[i].at - calls[i - 1].at - 500) <= 1, `gap ${calls[i].at - calls[i - 1].at}`);
    }
  });

  test("decimal rate 0.25: one call every 4 s", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 0.25, capacity: 1 });
    for (let i = 0; i < 4; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    await clock.tickAsync(3990);
    assert.equal(calls.length, 1, "not before 4 s");
    await clock.tickAsync(20);
    assert.equal(calls.length, 2, "at 4 s");
    await clock.tickAsync(3980);
    assert.equal(calls.length, 2);
    await clock.tickAsync(20);
    assert.equal(calls.length, 3, "at 8 s");
  });

  test("tokens refill while idle, up to capacity only", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 10, capacity: 3 });
    send(item("first", { llm: false }));
    await clock.tickAsync(60_000);
    for (let i = 0; i < 10; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1 + 3, "a long idle time still gives only `capacity` tokens");
  });

  test("for every window w, calls started <= capacity + rate * w", async (t) => {
    const capacity = 4;
    const rate = 3;
    const { clock, calls, send } = setup(t, { rate, capacity, maxItemsPerBatch: 1 });
    // Waves of work at irregular moments, LLM and non-LLM, several providers.
    for (let wave = 0; wave < 6; wave++) {
      for (let i = 0; i < 7; i++) {
        send(item(`w${wave}-${i}`, { llm: i % 2 === 0, providerId: `p${i % 3}` }));
      }
      await clock.tickAsync(wave % 2 ? 450 : 1700);
    }
    await clock.tickAsync(30_000);
    assert.equal(calls.length, 42);
    assertWindowBound(calls.map((c) => c.at), capacity, rate);
  });

  test("the bound holds across providers: the bucket is shared", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 2 });
    for (const providerId of ["a", "b", "c"]) {
      for (let i = 0; i < 3; i++) send(item(`${providerId}${i}`, { providerId, llm: false }));
    }
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    await clock.tickAsync(20_000);
    assert.equal(calls.length, 9);
    assertWindowBound(calls.map((c) => c.at), 2, 1);
  });
});

describe("maxInFlight", () => {
  test("limits the calls running at once; the burst alone does not", async (t) => {
    const held = heldAnswers();
    const { clock, calls, send } = setup(t, { maxInFlight: 2, capacity: 10, answer: held.answer });
    const states = [];
    for (let i = 0; i < 5; i++) states.push(send(item(`t${i}`, { llm: false })));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 2);
    held.open[0].resolve("T0");
    await clock.tickAsync(0);
    assert.equal(calls.length, 3, "a finished call frees a slot");
    held.open[1].reject(Object.assign(new Error("bad request"), { status: 400 }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 4, "a failed call frees a slot too");
    for (const h of held.open.slice(2)) h.resolve("x");
    await clock.tickAsync(0);
    for (const h of held.open.slice(4)) h.resolve("x");
    await clock.tickAsync(0);
    assert.equal(calls.length, 5);
    assert.deepEqual(states.map((s) => s.status), ["fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled"]);
  });

  test("0 means no limit: all of a burst run at once", async (t) => {
    const held = heldAnswers();
    const { clock, calls, send } = setup(t, { maxInFlight: 0, capacity: 30, answer: held.answer });
    for (let i = 0; i < 30; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 30);
  });

  test("a batch call counts as one call in flight", async (t) => {
    const held = heldAnswers();
    const { clock, calls, send } = setup(t, { maxInFlight: 1, maxItemsPerBatch: 3, answer: held.answer });
    for (let i = 0; i < 6; i++) send(item(`t${i}`));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].texts.length, 3);
    held.open[0].resolve(["a", "b", "c"]);
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    assert.equal(calls[1].texts.length, 3);
  });
});

describe("priority and FIFO", () => {
  test("higher priority is dispatched first, FIFO among equals", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1 });
    send(item("first", { llm: false }));
    await clock.tickAsync(0);
    const queued = [
      ["a0", 0],
      ["b5", 5],
      ["c0", 0],
      ["d5", 5],
      ["e1", 1],
      ["f-2", -2],
      ["g1", 1],
      ["h0", 0],
    ];
    for (const [text, priority] of queued) send(item(text, { llm: false, priority }));
    await clock.tickAsync(10_000);
    assert.deepEqual(
      calls.map((c) => c.text),
      ["first", "b5", "d5", "e1", "g1", "a0", "c0", "h0", "f-2"],
    );
  });

  test("priority defaults to 0 and decimals order too", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1 });
    send(item("first", { llm: false }));
    await clock.tickAsync(0);
    send(item("none", { llm: false }));
    send(item("half", { llm: false, priority: 0.5 }));
    send(item("minus", { llm: false, priority: -0.5 }));
    send(item("zero", { llm: false, priority: 0 }));
    await clock.tickAsync(10_000);
    assert.deepEqual(calls.map((c) => c.text), ["first", "half", "none", "zero", "minus"]);
  });

  test("batched items go by priority, then arrival, whichever batch collected them", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1 });
    send(item("first", { llm: false }));
    await clock.tickAsync(150);
    // Collected as [A B C D] and [E]: both are due when the next token comes.
    for (const [text, priority] of [["A", 0], ["B", 1], ["C", 0], ["D", 0], ["E", 1]]) send(item(text, { priority }));
    await clock.tickAsync(5000);
    assert.deepEqual(calls.slice(1).map((c) => c.texts), [["B", "E", "A", "C"], ["D"]]);
  });

  test("a later high-priority item overtakes a waiting batch of other items", async (t) => {
    const { clock, calls, send } = setup(t, { rate: 1, capacity: 1, batchDelayMs: 0 });
    send(item("first", { llm: false }));
    await clock.tickAsync(0);
    send(item("low a", { context: "low" }));
    send(item("low b", { context: "low" }));
    await clock.tickAsync(100);
    send(item("urgent", { context: "high", priority: 10 }));
    await clock.tickAsync(1000);
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[1].texts, ["urgent"]);
    await clock.tickAsync(1000);
    assert.deepEqual(calls[2].texts, ["low a", "low b"]);
  });
});
