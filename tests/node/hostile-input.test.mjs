// Hostile values: replies, errors, streams, signals and options whose getters, proxies or
// methods throw. Whatever a reply is, it never throws out of the pacer and its call ends
// (a failed call, retried like a network error, finally `provider_error`); an item's
// promise always settles once; options that cannot be read are `invalid_options` naming
// the option, with what was thrown as `cause`.

import { test, describe, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";

import { BatchPacer, cacheKey } from "batch-pacer";
import { virtualTime, item, track, assertPacerError, thrown, flushMicrotasks, disposeAfter } from "./helpers.mjs";

/** Every exception or rejection that escaped to the process while the current test ran. */
const escaped = [];
const onEscape = (error) => escaped.push(error);
before(() => {
  process.on("uncaughtException", onEscape);
  process.on("unhandledRejection", onEscape);
});
after(() => {
  process.off("uncaughtException", onEscape);
  process.off("unhandledRejection", onEscape);
});
beforeEach(() => {
  escaped.length = 0;
});

/** Asserts that nothing escaped during this test, once pending tasks have run. */
async function assertNothingEscaped() {
  await flushMicrotasks();
  assert.deepEqual(escaped.map(String), [], "nothing escapes to the process");
}

/** The error each hostile value throws; a test finds it again as the item's `cause`. */
const boom = () => new Error("boom");

/** A proxy whose every trap throws a revoked-proxy TypeError. */
function revokedProxy() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** An async iterable over `iterator` (what a provider's stream hands the pacer). */
const streamOf = (iterator) => ({ [Symbol.asyncIterator]: () => iterator });

/** An iterator that yields `values` (any values), then ends. */
function iteratorOf(values) {
  let i = 0;
  return { next: async () => (i < values.length ? { done: false, value: values[i++] } : { done: true, value: undefined }) };
}

/**
 * Hostile provider answers, each made fresh from the error `e` it throws: `reply` is
 * what the provider resolves to (or `throws`: what it rejects with); `cause` is what the
 * item's final error must carry as cause (`TypeError`: a TypeError; absent: `e`).
 */
const hostile = {
  "a reply array whose element getter throws": (e) => ({
    reply: Object.defineProperty([], 0, { get() { throw e; }, enumerable: true }),
  }),
  "a reply object whose element getter throws": (e) => ({
    reply: Object.defineProperty({}, "1", { get() { throw e; }, enumerable: true }),
  }),
  "a reply whose translations getter throws": (e) => ({
    reply: { get translations() { throw e; } },
  }),
  "a reply whose usage getter throws": (e) => ({
    reply: { translations: "fine", get usage() { throw e; } },
  }),
  "a reply that is a proxy whose get trap throws (then excepted)": (e) => ({
    reply: new Proxy([], { get: (target, key) => { if (key === "then") return undefined; throw e; } }),
  }),
  "a reply whose translations are a revoked proxy": () => ({ reply: { translations: revokedProxy() }, cause: TypeError }),
  "a reply that is a revoked proxy": () => ({ reply: revokedProxy(), cause: TypeError }),
  "an error that is a revoked proxy": () => {
    const error = revokedProxy();
    return { throws: error, cause: error };
  },
  "an error whose status getter throws": (e) => {
    const error = Object.defineProperty(new Error("who knows"), "status", { get() { throw e; } });
    return { throws: error, cause: error };
  },
  // Headers are read as limitsFromHeaders reads them, which never throws: hostile ones
  // are left unread, and the error itself is read.
  "an error whose headers.get throws": (e) => ({
    throws: Object.assign(e, { headers: { get() { throw new Error("headers"); } } }),
  }),
  "an error whose responseHeaders are a proxy whose traps throw": (e) => ({
    throws: Object.assign(e, { responseHeaders: new Proxy({}, { ownKeys() { throw new Error("keys"); } }) }),
  }),
  "an async iterable whose Symbol.asyncIterator getter throws": (e) => ({
    reply: { get [Symbol.asyncIterator]() { throw e; } },
  }),
  "an async iterable whose Symbol.asyncIterator method throws": (e) => ({
    reply: { [Symbol.asyncIterator]() { throw e; } },
  }),
  "an iterator whose next throws": (e) => ({ reply: streamOf({ next() { throw e; } }) }),
  "an iterator whose next getter throws": (e) => ({ reply: streamOf({ get next() { throw e; } }) }),
  "an iterator whose next throws a revoked proxy": () => {
    const thrown = revokedProxy();
    return { reply: streamOf({ next() { throw thrown; } }), cause: thrown };
  },
  "an iterator whose result's done getter throws a revoked proxy": () => {
    const thrown = revokedProxy();
    return { reply: streamOf({ next: async () => ({ get done() { throw thrown; } }) }), cause: thrown };
  },
  "an iterator whose result's done getter throws": (e) => ({
    reply: streamOf({ next: async () => ({ get done() { throw e; }, value: "x" }) }),
  }),
  "an iterator whose result's value getter throws": (e) => ({
    reply: streamOf({ next: async () => ({ done: false, get value() { throw e; } }) }),
  }),
  "an iterator whose result is a revoked proxy": () => ({
    reply: streamOf({ next: () => Promise.resolve({ result: revokedProxy() }).then(({ result }) => result) }),
    cause: TypeError,
  }),
  "a stream value that is a proxy whose has trap throws": (e) => ({
    reply: streamOf(iteratorOf([new Proxy({}, { has() { throw e; } })])),
  }),
  "a stream value that is a proxy whose get trap throws": (e) => ({
    reply: streamOf(iteratorOf(["<s1>par", new Proxy({ usage: {} }, { get() { throw e; } })])),
  }),
  "a stream value whose usage getter throws": (e) => ({
    reply: streamOf(iteratorOf([{ get usage() { throw e; } }])),
  }),
};

describe("a reply, error or stream that throws while it is read", () => {
  for (const [name, make] of Object.entries(hostile)) {
    test(`${name}: a failed call, retried, then provider_error; the call ends and later items proceed`, async (t) => {
      const { clock, pacerClock } = virtualTime();
      const made = [];
      const provider = (request) => {
        if (request.text !== "bad") return request.text.toUpperCase();
        const answer = make(boom());
        made.push(answer);
        return "throws" in answer ? Promise.reject(answer.throws) : Promise.resolve().then(() => answer.reply);
      };
      // No timeout: only the pacer's own reading can end these calls. One call at a time:
      // a call that never ended would hold up the later item for good.
      const pacer = new BatchPacer(provider, {
        clock: pacerClock, timeoutMs: 0, maxInFlight: 1, maxRetries: 2, baseRetryDelayMs: 10,
      });
      disposeAfter(t, pacer);
      const bad = track(pacer.translate(item("bad", { llm: false })));
      const later = track(pacer.translate(item("later", { llm: false })));
      await clock.tickAsync(10_000);

      assert.equal(bad.settlements, 1);
      assert.equal(bad.status, "rejected");
      assertPacerError(bad.reason, "provider_error");
      assert.equal(made.length, 3, "retried like a network error: maxRetries 2, three calls");
      const { cause } = made.at(-1);
      if (cause === TypeError) {
        assert.ok(bad.reason.cause instanceof TypeError, `a TypeError as cause: ${bad.reason.cause}`);
      } else if (cause !== undefined) {
        assert.equal(bad.reason.cause, cause, "the cause is what the provider threw");
        assert.match(bad.reason.message, /could not be read/);
      } else {
        assert.equal(bad.reason.cause?.message, "boom", `cause: ${bad.reason.cause}`);
        assert.match(bad.reason.message, /boom/, "the message names what was thrown");
      }
      assert.equal(later.status, "fulfilled", later.reason?.message);
      assert.equal(later.value, "LATER");
      const stats = pacer.stats();
      assert.equal(stats.inFlight, 0, "every call ended");
      assert.equal(stats.pending, 0);
      await assertNothingEscaped();
    });
  }

  test("a batch whose reply element getter throws: every item of the batch fails, once, and the batch's call ends", async (t) => {
    const { clock, pacerClock } = virtualTime();
    let calls = 0;
    const pacer = new BatchPacer(
      (request) => {
        calls++;
        return Object.defineProperty([...request.texts], 1, { get() { throw boom(); } });
      },
      { clock: pacerClock, timeoutMs: 0, maxInFlight: 1, maxRetries: 1, baseRetryDelayMs: 10, fallbackToIndividual: false },
    );
    disposeAfter(t, pacer);
    const states = ["a", "b", "c"].map((text) => track(pacer.translate(item(text))));
    await clock.tickAsync(10_000);
    for (const state of states) {
      assert.equal(state.settlements, 1);
      assertPacerError(state.reason, "provider_error");
    }
    assert.equal(calls, 2, "one call and one retry");
    assert.equal(pacer.stats().inFlight, 0);
    await assertNothingEscaped();
  });
});

describe("an item's signal whose methods throw", () => {
  test("removeEventListener throws: the item still resolves, once, and its listener left behind aborts nothing", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const held = [];
    const pacer = new BatchPacer((r) => (r.text === "held" ? new Promise((resolve) => held.push(resolve)) : r.text.toUpperCase()), {
      clock: pacerClock,
      timeoutMs: 0,
    });
    disposeAfter(t, pacer);
    const listeners = [];
    const signal = {
      aborted: false,
      addEventListener: (type, listener) => listeners.push(listener),
      removeEventListener() { throw boom(); },
    };
    const state = track(pacer.translate(item("x", { llm: false, signal })));
    await clock.tickAsync(1000);
    assert.equal(state.status, "fulfilled", state.reason?.message);
    assert.equal(state.value, "X");
    assert.equal(state.settlements, 1);
    assert.equal(pacer.stats().succeeded, 1);

    // The signal aborts later, while another item runs: that item is not the first's.
    const later = track(pacer.translate(item("held", { llm: false })));
    await clock.tickAsync(1000);
    signal.aborted = true;
    for (const listener of listeners) listener();
    held.forEach((resolve) => resolve("GEHALTEN"));
    await clock.tickAsync(1000);
    assert.equal(later.status, "fulfilled", later.reason?.message);
    assert.equal(later.value, "GEHALTEN");
    await assertNothingEscaped();
  });

  test("removeEventListener throws on a failed item: it rejects with its own error", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const pacer = new BatchPacer(async () => { throw Object.assign(new Error("bad request"), { status: 400 }); }, {
      clock: pacerClock,
    });
    disposeAfter(t, pacer);
    const signal = { aborted: false, addEventListener() {}, removeEventListener() { throw boom(); } };
    const state = track(pacer.translate(item("x", { llm: false, signal })));
    await clock.tickAsync(1000);
    assert.equal(state.settlements, 1);
    assertPacerError(state.reason, "provider_error", 400);
    await assertNothingEscaped();
  });

  test("addEventListener throws: the item rejects invalid_input naming signal, and no provider is called", async (t) => {
    const { clock, pacerClock } = virtualTime();
    let calls = 0;
    const pacer = new BatchPacer(async (r) => { calls++; return r.text; }, { clock: pacerClock });
    disposeAfter(t, pacer);
    const error = boom();
    const signal = { aborted: false, addEventListener() { throw error; }, removeEventListener() {} };
    let promise;
    assert.doesNotThrow(() => { promise = pacer.translate(item("x", { llm: false, signal })); });
    const state = track(promise);
    await clock.tickAsync(1000);
    assert.equal(state.settlements, 1);
    assertPacerError(state.reason, "invalid_input");
    assert.match(state.reason.message, /signal/);
    assert.equal(state.reason.cause, error);
    assert.equal(calls, 0);
    assert.equal(pacer.stats().inFlight, 0);
    await assertNothingEscaped();
  });

  test("a look-alike signal (not an AbortSignal) still works: its abort rejects the item aborted", async (t) => {
    const { clock, pacerClock } = virtualTime();
    const pacer = new BatchPacer(() => new Promise(() => {}), { clock: pacerClock, timeoutMs: 0 });
    disposeAfter(t, pacer);
    const listeners = [];
    const signal = {
      aborted: false,
      addEventListener: (type, listener) => listeners.push(listener),
      removeEventListener() {},
    };
    const state = track(pacer.translate(item("x", { llm: false, signal })));
    await clock.tickAsync(1000);
    assert.equal(state.status, "pending");
    signal.aborted = true;
    for (const listener of listeners) listener();
    await clock.tickAsync(0);
    assert.equal(state.settlements, 1);
    assertPacerError(state.reason, "aborted");
    await assertNothingEscaped();
  });
});

describe("options, patches and cacheKey items that throw while they are read", () => {
  const provider = async (r) => r.text;

  /** Asserts `err` is invalid_options about `option`, caused by `cause` (or a TypeError). */
  function assertUnreadableOption(err, option, cause) {
    assert.equal(err.option, option, err.message);
    assert.match(err.message, new RegExp(option));
    assert.match(err.message, /could not be read/);
    if (cause === TypeError) assert.ok(err.cause instanceof TypeError, `cause ${err.cause}`);
    else assert.equal(err.cause, cause);
  }

  const cases = {
    "an option getter": (e) => [{ get rate() { throw e; } }, "rate"],
    "a proxy's get trap": (e) => [new Proxy({ capacity: 2 }, { get() { throw e; } }), "capacity"],
    "a fallbackProviders entry getter": (e) => [{ fallbackProviders: { get a() { throw e; } } }, "fallbackProviders"],
    "a fallbackProviders proxy": (e) => [{ fallbackProviders: new Proxy({}, { ownKeys() { throw e; } }) }, "fallbackProviders"],
    "a revoked fallbackProviders proxy": () => [{ fallbackProviders: revokedProxy() }, "fallbackProviders", TypeError],
    "a budget getter": (e) => [{ get budget() { throw e; } }, "budget"],
  };
  for (const [name, make] of Object.entries(cases)) {
    test(`${name} that throws: new BatchPacer and setOptions throw invalid_options naming it`, async (t) => {
      const error = boom();
      const [options, option, cause = error] = make(error);
      assertUnreadableOption(thrown(() => new BatchPacer(provider, options), "invalid_options"), option, cause);
      const pacer = new BatchPacer(provider);
      t.after(() => pacer.dispose());
      assertUnreadableOption(thrown(() => pacer.setOptions(options), "invalid_options"), option, cause);
      assert.equal(pacer.options.rate, 8, "nothing of the patch applied");
      await assertNothingEscaped();
    });
  }

  test("an options object or patch whose keys cannot be listed (a revoked proxy) throws invalid_options", async (t) => {
    const err = thrown(() => new BatchPacer(provider, revokedProxy()), "invalid_options");
    assert.match(err.message, /^options could not be read/);
    assert.ok(err.cause instanceof TypeError);
    const pacer = new BatchPacer(provider);
    t.after(() => pacer.dispose());
    const patchErr = thrown(() => pacer.setOptions(revokedProxy()), "invalid_options");
    assert.match(patchErr.message, /^the options patch could not be read/);
    await assertNothingEscaped();
  });

  test("unknown option names stay errors, through a proxy too", () => {
    const err = thrown(() => new BatchPacer(provider, new Proxy({ rtae: 1 }, {})), "invalid_options");
    assert.equal(err.option, "rtae");
  });

  test("a cacheKey() item whose getter throws: invalid_input naming the field, the error as cause", async () => {
    const error = boom();
    const fields = { text: "x", sourceLang: "en", targetLang: "de", providerId: "p" };
    for (const field of Object.keys(fields)) {
      const hostileItem = Object.defineProperty({ ...fields }, field, { get() { throw error; }, enumerable: true });
      const err = thrown(() => cacheKey(hostileItem), "invalid_input");
      assert.match(err.message, new RegExp(`${field} could not be read`));
      assert.equal(err.cause, error);
    }
    const err = thrown(() => cacheKey(revokedProxy()), "invalid_input");
    assert.ok(err.cause instanceof TypeError);
    await assertNothingEscaped();
  });

  test("fallbackProviders given as a Map is invalid_options (its entries are not properties)", (t) => {
    const map = new Map([["a", "b"]]);
    const err = thrown(() => new BatchPacer(provider, { fallbackProviders: map }), "invalid_options");
    assert.equal(err.option, "fallbackProviders");
    assert.match(err.message, /got a Map/);
    const pacer = new BatchPacer(provider);
    t.after(() => pacer.dispose());
    assert.equal(thrown(() => pacer.setOptions({ fallbackProviders: map }), "invalid_options").option, "fallbackProviders");
  });

  test("a value of a megabyte is cut in its message, which gives its length", () => {
    const long = "a".repeat(2 ** 20);
    const err = thrown(() => new BatchPacer(provider, { segmentFormat: long }), "invalid_options");
    assert.ok(err.message.length < 300, `a message of ${err.message.length} characters`);
    assert.ok(err.message.includes(`"${"a".repeat(100)}…" (1048576 characters)`), err.message);
    const named = thrown(() => new BatchPacer(provider, { [long]: 1 }), "invalid_options");
    assert.ok(named.message.length < 300, `a message of ${named.message.length} characters`);
  });

  test("a fallbackProviders chain of 20,000 providers is accepted, and one that loops is not", (t) => {
    const chain = {};
    for (let i = 0; i < 20_000; i++) chain[`p${i}`] = `p${i + 1}`;
    const pacer = new BatchPacer(provider, { fallbackProviders: chain });
    t.after(() => pacer.dispose());
    assert.equal(Object.keys(pacer.options.fallbackProviders).length, 20_000);
    chain.p19999 = "p0";
    const err = thrown(() => pacer.setOptions({ fallbackProviders: chain }), "invalid_options");
    assert.match(err.message, /cycle/);
    assert.ok(err.message.length < 300, `a message of ${err.message.length} characters`);
  });
});
