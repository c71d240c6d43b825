// Shared helpers of the package tests. Every test file imports "batch-pacer", which
// resolves to the packed and installed package, never to the sources.

import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import init, { BatchPacer, PacerError } from "batch-pacer";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

await init();

/**
 * A virtual clock for one pacer: `clock` is the fake-timers clock the test drives,
 * `pacerClock` the `{ now, setTimeout, clearTimeout }` object given to the pacer.
 */
export function virtualTime(start = 0) {
  const clock = FakeTimers.createClock(start);
  const pacerClock = {
    now: () => clock.now,
    setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    clearTimeout: (handle) => clock.clearTimeout(handle),
  };
  return { clock, pacerClock };
}

/** Lets pending promise reactions run (real timers: setImmediate is never faked here). */
export async function flushMicrotasks(rounds = 5) {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A promise with its resolve and reject functions. */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** An error as a provider would throw it. */
export function httpError(status, extra = {}) {
  return Object.assign(new Error(`HTTP ${status}`), { status }, extra);
}

/**
 * A provider that records every request (with the virtual time it arrived at) and
 * answers through `answer(request, index)`; by default it upper-cases each text.
 */
export function recordingProvider(clock, answer = echoUpper) {
  const calls = [];
  const provider = (request) => {
    const index = calls.length;
    calls.push({ at: clock ? clock.now : undefined, ...request });
    return answer(request, index);
  };
  return { provider, calls };
}

/** The default answer: each text upper-cased (an array for a batch). */
export async function echoUpper(request) {
  return request.isBatch ? request.texts.map((t) => t.toUpperCase()) : request.text.toUpperCase();
}

/** A translate item with the required fields filled in. */
export function item(text, extra = {}) {
  return { text, sourceLang: "en", targetLang: "de", providerId: "p1", ...extra };
}

/**
 * Follows a promise: `state.status` is "pending", "fulfilled" or "rejected", with
 * `value` / `reason`, and `settlements` counts how often a handler ran.
 */
export function track(promise) {
  const state = { status: "pending", value: undefined, reason: undefined, settlements: 0 };
  promise.then(
    (value) => {
      state.settlements++;
      state.status = "fulfilled";
      state.value = value;
    },
    (reason) => {
      state.settlements++;
      state.status = "rejected";
      state.reason = reason;
    },
  );
  return state;
}

/** Awaits a promise that must reject and returns its reason. */
export async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected the promise to reject");
}

/** Asserts that `err` is a PacerError with `code` (and, if given, `status`). */
export function assertPacerError(err, code, status) {
  assert.ok(err instanceof PacerError, `expected a PacerError, got ${err && err.stack ? err.stack : err}`);
  assert.ok(err instanceof Error);
  assert.equal(err.name, "PacerError");
  assert.equal(err.code, code, `code of ${err.message}`);
  if (status !== undefined) assert.equal(err.status, status);
}

/** Calls `fn`, expects a PacerError with `code`, returns it. */
export function thrown(fn, code) {
  let err;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err !== undefined, "expected a throw");
  if (code !== undefined) assertPacerError(err, code);
  return err;
}

/**
 * Asserts that `pacer` never settled an item twice. A promise shows only its first
 * settlement (`track` cannot see a second one); the pacer counts the ones it dropped.
 */
export function assertNoSecondSettlement(pacer) {
  assert.equal(pacer.stats().duplicateSettlements, 0, "an item was settled twice");
}

/**
 * Disposes `pacer` when the test ends, then asserts that no item was settled twice,
 * disposal included.
 */
export function disposeAfter(t, pacer) {
  t.after(() => {
    pacer.dispose();
    assertNoSecondSettlement(pacer);
  });
}

/**
 * A pacer on virtual time; disposed when the test ends, which then fails if an item was
 * settled twice. Returns `{ pacer, clock, calls, events, send }`; `answer` is the
 * recording provider's answer function.
 */
export function setup(t, { answer, provider, ...options } = {}) {
  const { clock, pacerClock } = virtualTime();
  const recorder = recordingProvider(clock, answer);
  const events = [];
  const pacer = new BatchPacer(provider ?? recorder.provider, {
    clock: pacerClock,
    onEvent: (event) => events.push({ at: clock.now, ...event }),
    ...options,
  });
  disposeAfter(t, pacer);
  /** translate(item), followed with track() so that no rejection goes unhandled. */
  const send = (entry) => track(pacer.translate(entry));
  return { pacer, clock, calls: recorder.calls, events, send };
}

/**
 * Checks rule 1 on recorded call start times: for every window [a, b] holding calls
 * i..j, the calls started are at most capacity + rate * (b - a) seconds.
 */
export function assertWindowBound(times, capacity, rate) {
  const sorted = [...times].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      const started = j - i + 1;
      const allowed = capacity + (rate * (sorted[j] - sorted[i])) / 1000;
      assert.ok(
        started <= allowed + 1e-6,
        `${started} calls started in [${sorted[i]}, ${sorted[j]}] ms, at most ${allowed} allowed`,
      );
    }
  }
}

export { BatchPacer, PacerError, FakeTimers };

// The seeded PRNG of the mock provider, from the repository (like the end-to-end tests'
// demo modules), so that a seed means the same sequence in both.
const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
export const { prng } = await import(pathToFileURL(join(repo, "extension-demo/prng.mjs")).href);

