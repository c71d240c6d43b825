// Virtual time with @sinonjs/fake-timers. batch-pacer takes its clock as an option, so it
// runs on a private clock (FakeTimers.createClock). Bottleneck and p-queue read the global
// Date.now and timers, so they run with fake timers installed on the globals for the
// duration of one simulation. setImmediate stays real: tickAsync yields through it.

import FakeTimers from "@sinonjs/fake-timers";

/** A private fake clock and the `{ now, setTimeout, clearTimeout }` a BatchPacer takes. */
export function privateClock() {
  const clock = FakeTimers.createClock(0);
  const pacerClock = {
    now: () => clock.now,
    setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimeout: (handle) => clock.clearTimeout(handle),
  };
  return { clock, pacerClock, uninstall() {} };
}

/** Fake timers installed on the globals (Date, performance, timers); call uninstall(). */
export function globalClock() {
  const clock = FakeTimers.install({
    now: 0,
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"],
  });
  return { clock, pacerClock: undefined, uninstall: () => clock.uninstall() };
}

/**
 * Follows a set of promises on `clock`: `state.completedAt` is the virtual time at which
 * the last one settled, `state.failed` how many rejected, `state.waits` each one's
 * time from `startedAt[i]` (default: the start) to its settlement.
 */
export function follow(clock, promises, startedAt) {
  const state = { pending: promises.length, failed: 0, completedAt: NaN, waits: new Array(promises.length) };
  const begin = clock.now;
  promises.forEach((promise, i) => {
    const settle = (ok) => {
      state.pending--;
      if (!ok) state.failed++;
      state.waits[i] = clock.now - (startedAt ? startedAt[i] : begin);
      if (state.pending === 0) state.completedAt = clock.now;
    };
    promise.then(() => settle(true), () => settle(false));
  });
  if (promises.length === 0) state.completedAt = clock.now;
  return state;
}

/**
 * Advances `clock` in steps of `stepMs` until `isDone()` holds; throws past `limitMs` of
 * virtual time (a stalled implementation must not hang the benchmark).
 */
export async function runUntil(clock, isDone, { stepMs = 1000, limitMs = 48 * 3600_000 } = {}) {
  while (!isDone()) {
    if (clock.now > limitMs) throw new Error(`not done after ${limitMs / 3600_000} h of virtual time`);
    await clock.tickAsync(stepMs);
  }
}
