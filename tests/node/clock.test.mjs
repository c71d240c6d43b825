// The clock option: the default (performance.now and the global timers, faked here with
// FakeTimers.install) and a user clock object.

import { test, describe, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";

import init, { BatchPacer } from "batch-pacer";

await init();

const item = (text, extra = {}) => ({ text, sourceLang: "en", targetLang: "de", providerId: "p", ...extra });

describe("default clock: performance.now and the global timers", () => {
  let clock;
  beforeEach(() => {
    clock = FakeTimers.install({ now: 1_000_000, toFake: ["setTimeout", "clearTimeout", "performance", "Date", "setImmediate"] });
  });
  afterEach(() => clock.uninstall());

  test("batchDelayMs runs on the global timers", async (t) => {
    const calls = [];
    const pacer = new BatchPacer(async (r) => {
      calls.push({ at: clock.now, texts: r.texts });
      return r.texts.map((x) => x.toUpperCase());
    });
    t.after(() => pacer.dispose());
    const results = [pacer.translate(item("a")), pacer.translate(item("b"))];
    await clock.tickAsync(99);
    assert.equal(calls.length, 0, "the batch waits its 100 ms window");
    await clock.tickAsync(1);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a", "b"]);
    assert.deepEqual(await Promise.all(results), ["A", "B"]);
  });

  test("the token bucket refills with performance.now", async (t) => {
    const starts = [];
    const pacer = new BatchPacer(async (r) => {
      starts.push(clock.now);
      return r.text;
    }, { rate: 1, capacity: 1 });
    t.after(() => pacer.dispose());
    const all = [];
    for (let i = 0; i < 3; i++) all.push(pacer.translate(item(`x${i}`, { llm: false })));
    await clock.tickAsync(0);
    assert.equal(starts.length, 1);
    await clock.tickAsync(990);
    assert.equal(starts.length, 1);
    await clock.tickAsync(20);
    assert.equal(starts.length, 2);
    await clock.tickAsync(1000);
    assert.equal(starts.length, 3);
    await Promise.all(all);
  });

  test("dispose clears the pacer's timers", async () => {
    const pacer = new BatchPacer(async (r) => r.text, { batchDelayMs: 5000 });
    const pending = pacer.translate(item("later")).catch((e) => e);
    assert.ok(clock.countTimers() >= 1, "a batch window timer is armed");
    pacer.dispose();
    assert.equal(clock.countTimers(), 0);
    assert.equal((await pending).code, "disposed");
  });
});

describe("default clock never uses window", () => {
  test("timers and time come from the globals even when a window object exists", async (t) => {
    const clock = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout", "performance", "Date"] });
    const used = [];
    const trap = (name) => (...args) => {
      used.push(name);
      throw new Error(`window.${name} must not be used`);
    };
    globalThis.window = {
      setTimeout: trap("setTimeout"),
      clearTimeout: trap("clearTimeout"),
      performance: { now: trap("performance.now") },
    };
    t.after(() => {
      delete globalThis.window;
      clock.uninstall();
    });
    const pacer = new BatchPacer(async (r) => r.text + "!");
    const result = pacer.translate(item("w"));
    await clock.tickAsync(100);
    assert.equal(await result, "w!");
    pacer.dispose();
    assert.deepEqual(used, []);
  });
});

describe("user clock", () => {
  test("every timer goes through clock.setTimeout / clearTimeout, time through clock.now", async (t) => {
    let now = 5000;
    const timers = new Map();
    let nextId = 1;
    const log = [];
    const clock = {
      now: () => now,
      setTimeout(fn, ms) {
        const id = { id: nextId++ };
        log.push(["set", ms]);
        timers.set(id, { fn, at: now + ms });
        return id;
      },
      clearTimeout(handle) {
        log.push(["clear"]);
        timers.delete(handle);
      },
    };
    const advance = async (ms) => {
      const target = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, v]) => v.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
        await new Promise((r) => setImmediate(r));
      }
      now = target;
      await new Promise((r) => setImmediate(r));
    };
    const starts = [];
    const pacer = new BatchPacer(async (r) => {
      starts.push(now);
      return r.text;
    }, { clock, batchDelayMs: 250 });
    t.after(() => pacer.dispose());
    const result = pacer.translate(item("u"));
    assert.ok(log.some(([kind, ms]) => kind === "set" && ms <= 250 && ms > 0), JSON.stringify(log));
    await advance(249);
    assert.equal(starts.length, 0);
    await advance(1);
    assert.deepEqual(starts, [5250]);
    assert.equal(await result, "u");
  });

  test("a created fake-timers clock drives the pacer; real time plays no part", async (t) => {
    const clock = FakeTimers.createClock(0);
    const starts = [];
    const pacer = new BatchPacer(async (r) => {
      starts.push(clock.now);
      return r.text;
    }, {
      clock: { now: () => clock.now, setTimeout: clock.setTimeout.bind(clock), clearTimeout: clock.clearTimeout.bind(clock) },
      batchDelayMs: 60_000,
    });
    t.after(() => pacer.dispose());
    const result = pacer.translate(item("slow window"));
    await new Promise((r) => setTimeout(r, 20)); // real time: nothing happens
    assert.equal(starts.length, 0);
    await clock.tickAsync(60_000);
    assert.deepEqual(starts, [60_000]);
    assert.equal(await result, "slow window");
  });

  test("a fake-timers clock object can be passed as it is (now as a number property)", async (t) => {
    const clock = FakeTimers.createClock(0);
    const starts = [];
    const pacer = new BatchPacer(async (r) => {
      starts.push(clock.now);
      return r.text;
    }, { clock, batchDelayMs: 500 });
    t.after(() => pacer.dispose());
    const result = pacer.translate(item("prop"));
    await clock.tickAsync(499);
    assert.equal(starts.length, 0);
    await clock.tickAsync(1);
    assert.deepEqual(starts, [500]);
    assert.equal(await result, "prop");
  });
});
