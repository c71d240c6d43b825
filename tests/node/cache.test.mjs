// The `cache` option (a persistent store behind the in-memory LRU) and `cacheKey(item)`:
// lookups before queueing, writes after successes, a misbehaving store only ever costs a
// miss (reported as a `cacheError` event), and keys are length-prefixed SHA-256.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";

import { cacheKey } from "batch-pacer";
import {
  setup,
  item,
  deferred,
  httpError,
  track,
  rejection,
  thrown,
  assertPacerError,
  BatchPacer,
  prng,
} from "./helpers.mjs";

/**
 * A Map-backed store whose methods answer with promises (or synchronously with
 * `sync: true`). `gets` lists the keys looked up, `sets` the `[key, value]` pairs written.
 * `get` / `set` override the behaviour of each method (after recording the call).
 */
function mapStore({ sync = false, get, set } = {}) {
  const map = new Map();
  const gets = [];
  const sets = [];
  const store = {
    get(key) {
      gets.push(key);
      if (get) return get(key, map);
      return sync ? map.get(key) : Promise.resolve(map.get(key));
    },
    set(key, value) {
      sets.push([key, value]);
      if (set) return set(key, value, map);
      map.set(key, value);
      return sync ? undefined : Promise.resolve();
    },
  };
  return { store, map, gets, sets };
}

const cacheErrors = (events) => events.filter((e) => e.type === "cacheError");

/** The key as docs/reference.md (Cache keys) describes it, computed without the package. */
function referenceKey({ providerId, sourceLang, targetLang, context = "", llm = true, text }) {
  const hash = createHash("sha256");
  const field = (bytes) => {
    const length = Buffer.alloc(8);
    length.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(length);
    hash.update(bytes);
  };
  for (const value of [providerId, sourceLang, targetLang, context]) field(Buffer.from(value, "utf8"));
  field(Buffer.from([llm ? 1 : 0]));
  field(Buffer.from(text, "utf8"));
  return hash.digest("hex");
}

const README_VECTOR = {
  item: { providerId: "openai", sourceLang: "en", targetLang: "de", context: "", llm: true, text: "Hello, world!" },
  key: "9b8ea9be5963e961c9631c9bfedf9b193acd9eb660007d3d18a59ae4fd1c8964",
};

describe("cache option: store hits", () => {
  test("a stored string resolves the item with no provider call and no token; the LRU answers repeats", async (t) => {
    const { store, map, gets } = mapStore();
    const { clock, calls, send, pacer } = setup(t, { rate: 0.001, capacity: 1, cache: store });

    // The only token goes to a first call.
    const spend = send(item("spend", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1, "the first item took the only token");
    assert.equal(spend.value, "SPEND");

    const stored = item("stored", { llm: false });
    map.set(cacheKey(stored), "gespeichert");
    const getsBefore = gets.length;
    const hit = send(stored);
    await clock.tickAsync(0);
    assert.equal(hit.status, "fulfilled", "resolved at once although no token is left");
    assert.equal(hit.value, "gespeichert");
    assert.equal(calls.length, 1, "no provider call");
    assert.deepEqual(gets.slice(getsBefore), [cacheKey(stored)], "looked up under cacheKey(item)");
    assert.equal(pacer.stats().cacheHits, 1);
    assert.equal(pacer.stats().providerCalls, 1);

    // A repeat is answered by the in-memory LRU: the store is not asked again.
    const repeat = send(item("stored", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(repeat.value, "gespeichert");
    assert.equal(gets.length, getsBefore + 1, "store.get not called for the repeat");
    assert.equal(pacer.stats().cacheHits, 2);
    assert.equal(calls.length, 1);
  });

  test("a store hit uses no token: the next miss is still sent at once with capacity 1", async (t) => {
    const { store, map } = mapStore();
    const { clock, calls, send, pacer } = setup(t, { rate: 0.001, capacity: 1, cache: store });
    map.set(cacheKey(item("cached", { llm: false })), "im Cache");
    const hit = send(item("cached", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(hit.value, "im Cache");
    const miss = send(item("fresh", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1, "the token was still there for the miss");
    assert.deepEqual(calls[0].texts, ["fresh"]);
    assert.equal(miss.value, "FRESH");
    // And it really was the only token: a further miss waits for the refill.
    const later = send(item("later", { llm: false }));
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 1, "no second token within 10 s at rate 0.001");
    assert.equal(later.status, "pending");
    assert.equal(pacer.stats().cacheHits, 1);
  });

  test("undefined and null from the store are plain misses, not errors", async (t) => {
    const answers = [undefined, null];
    const { store } = mapStore({ get: () => Promise.resolve(answers.shift()) });
    const { clock, calls, send, events } = setup(t, { cache: store });
    const a = send(item("a", { llm: false }));
    const b = send(item("b", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2);
    assert.deepEqual([a.value, b.value], ["A", "B"]);
    assert.deepEqual(cacheErrors(events), []);
  });

  test("with cacheEntries 0 every repeat asks the store again", async (t) => {
    const { store, map, gets } = mapStore();
    const { clock, calls, send, pacer } = setup(t, { cacheEntries: 0, cache: store });
    const it = item("x", { llm: false });
    map.set(cacheKey(it), "iks");
    const first = send(it);
    await clock.tickAsync(0);
    const second = send(it);
    await clock.tickAsync(0);
    assert.deepEqual([first.value, second.value], ["iks", "iks"]);
    assert.equal(gets.length, 2, "no LRU in front of the store");
    assert.equal(calls.length, 0);
    assert.equal(pacer.stats().cacheHits, 2);
  });
});

describe("cache option: misses and writes", () => {
  test("a miss is queued and translated, then written under exactly cacheKey(item)", async (t) => {
    const { store, map, gets, sets } = mapStore();
    const { clock, calls, send, pacer } = setup(t, { cache: store });
    const entry = item("Guten Tag", { context: "page title", providerId: "prov-7" });
    const state = send(entry);
    await clock.tickAsync(0);
    assert.deepEqual(gets, [cacheKey(entry)]);
    assert.deepEqual(sets, [], "nothing written before the translation exists");
    assert.equal(state.status, "pending", "queued (batchDelayMs not over)");
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["Guten Tag"]);
    assert.equal(state.value, "GUTEN TAG");
    await clock.tickAsync(0);
    assert.deepEqual(sets, [[cacheKey(entry), "GUTEN TAG"]]);
    assert.equal(map.get(cacheKey(entry)), "GUTEN TAG");
    assert.equal(pacer.stats().cacheHits, 0);
  });

  test("each item of a batch is written under its own key", async (t) => {
    const { store, sets } = mapStore();
    const { clock, calls, send } = setup(t, { cache: store });
    const a = item("one");
    const b = item("two");
    send(a);
    send(b);
    await clock.tickAsync(100);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].isBatch, true);
    await clock.tickAsync(0);
    assert.deepEqual(
      [...sets].sort(),
      [[cacheKey(a), "ONE"], [cacheKey(b), "TWO"]].sort(),
    );
  });

  test("a failure is not written", async (t) => {
    const { store, sets } = mapStore();
    const { clock, send } = setup(t, {
      cache: store,
      answer: () => Promise.reject(httpError(400)),
    });
    const state = send(item("bad", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(state.status, "rejected");
    assertPacerError(state.reason, "provider_error", 400);
    assert.deepEqual(sets, []);
  });

  test("a timed-out call is not written either", async (t) => {
    const { store, sets } = mapStore();
    const { clock, send } = setup(t, {
      cache: store,
      timeoutMs: 300,
      maxRetries: 0,
      answer: () => new Promise(() => {}),
    });
    const state = send(item("slow", { llm: false }));
    await clock.tickAsync(5000);
    assert.equal(state.status, "rejected");
    assertPacerError(state.reason, "timeout");
    assert.deepEqual(sets, []);
  });

  test("blank text is neither looked up nor written", async (t) => {
    const { store, gets, sets } = mapStore();
    const { clock, calls, send } = setup(t, { cache: store });
    const states = ["", "   ", "\n\t"].map((text) => send(item(text)));
    await clock.tickAsync(1000);
    assert.deepEqual(states.map((s) => s.value), ["", "   ", "\n\t"]);
    assert.deepEqual(gets, []);
    assert.deepEqual(sets, []);
    assert.equal(calls.length, 0);
  });
});

describe("cache option: a misbehaving store is a miss", () => {
  const badGets = {
    "get throws synchronously": { get: () => { throw new Error("boom-sync"); }, message: "boom-sync" },
    "get rejects": { get: () => Promise.reject(new Error("boom-async")), message: "boom-async" },
    "get returns a number": { get: () => 42 },
    "get resolves a number": { get: () => Promise.resolve(7) },
    "get resolves an object": { get: () => Promise.resolve({ translation: "nope" }) },
    "get returns an array": { get: () => ["nope"] },
    "get throws a plain string": { get: () => { throw "plain-thrown"; }, message: "plain-thrown" },
    "get rejects without a reason": { get: () => Promise.reject(undefined) },
  };
  for (const [name, { get, message }] of Object.entries(badGets)) {
    test(`${name}: the item is translated and a cacheError get event is reported`, async (t) => {
      const { store, sets } = mapStore({ get });
      const { clock, calls, send, events, pacer } = setup(t, { cache: store });
      const entry = item("hallo", { llm: false });
      const state = send(entry);
      await clock.tickAsync(0);
      assert.equal(calls.length, 1, "queued and sent as a miss");
      assert.equal(state.status, "fulfilled");
      assert.equal(state.value, "HALLO");
      const errors = cacheErrors(events);
      assert.equal(errors.length, 1);
      assert.deepEqual(Object.keys(errors[0]).sort(), ["at", "message", "operation", "type"]);
      assert.equal(errors[0].operation, "get");
      assert.equal(typeof errors[0].message, "string");
      assert.ok(errors[0].message.length > 0);
      if (message) assert.match(errors[0].message, new RegExp(message));
      assert.equal(pacer.stats().failed, 0);
      assert.equal(pacer.stats().cacheHits, 0);
      await clock.tickAsync(0);
      assert.deepEqual(sets, [[cacheKey(entry), "HALLO"]], "the success is still written");
    });
  }

  test("a get that never settles is a miss after timeoutMs of virtual time", async (t) => {
    const { store, sets } = mapStore({ get: () => new Promise(() => {}) });
    const { clock, calls, send, events } = setup(t, { cache: store, timeoutMs: 500 });
    const entry = item("hängt", { llm: false });
    const state = send(entry);
    await clock.tickAsync(499);
    assert.equal(calls.length, 0, "still waiting for the store");
    assert.equal(state.status, "pending");
    assert.deepEqual(cacheErrors(events), []);
    await clock.tickAsync(1);
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].at, 500, "sent as soon as the lookup timed out");
    assert.equal(state.value, "HÄNGT");
    const errors = cacheErrors(events);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].operation, "get");
    assert.equal(errors[0].at, 500);
    assert.ok(typeof errors[0].message === "string" && errors[0].message.length > 0);
    assert.deepEqual(sets, [[cacheKey(entry), "HÄNGT"]]);
  });

  test("with timeoutMs 0 a lookup is still given up, after 5,000 ms", async (t) => {
    const hold = deferred();
    const { store } = mapStore({ get: () => hold.promise });
    const { clock, calls, send, events } = setup(t, { cache: store, timeoutMs: 0 });
    const state = send(item("geduldig", { llm: false }));
    await clock.tickAsync(4_999);
    assert.equal(calls.length, 0);
    assert.equal(state.status, "pending");
    assert.deepEqual(cacheErrors(events), []);
    await clock.tickAsync(1);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].at, 5_000, "sent as soon as the lookup ran out of time");
    assert.equal(cacheErrors(events)[0]?.operation, "get");
    hold.resolve("endlich");
    await clock.tickAsync(0);
    assert.equal(state.value, "GEDULDIG", "the late answer is not used");
  });

  test("a store answer arriving after the lookup timed out is ignored", async (t) => {
    const late = deferred();
    const { store } = mapStore({ get: () => late.promise });
    const { clock, calls, send, pacer } = setup(t, { cache: store, timeoutMs: 500 });
    const state = send(item("spät", { llm: false }));
    await clock.tickAsync(500);
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.equal(state.value, "SPÄT");
    late.resolve("too late");
    await clock.tickAsync(1000);
    assert.equal(state.value, "SPÄT");
    assert.equal(state.settlements, 1);
    assert.equal(pacer.stats().cacheHits, 0);
    assert.equal(pacer.stats().succeeded, 1);
  });

  const badSets = {
    "set throws synchronously": () => { throw new Error("set-sync-broken"); },
    "set rejects": () => Promise.reject(new Error("set-async-broken")),
  };
  for (const [name, set] of Object.entries(badSets)) {
    test(`${name}: reported as a cacheError set event and changes nothing else`, async (t) => {
      // The same scenario against a healthy store and a failing one.
      const run = async (storeOptions) => {
        const { store, sets } = mapStore(storeOptions);
        const { clock, calls, send, events, pacer } = setup(t, { cache: store });
        const first = [send(item("a")), send(item("b"))];
        await clock.tickAsync(100);
        await clock.tickAsync(0);
        const repeat = send(item("a"));
        await clock.tickAsync(1000);
        return {
          values: [...first, repeat].map((s) => [s.status, s.value]),
          calls: calls.map((c) => [c.at, c.texts]),
          stats: pacer.stats(),
          otherEvents: events.filter((e) => e.type !== "cacheError"),
          errors: cacheErrors(events),
          sets,
        };
      };
      const healthy = await run({});
      const broken = await run({ set });
      assert.deepEqual(healthy.errors, []);
      assert.equal(broken.sets.length, 2, "set was tried for both successes");
      assert.equal(broken.errors.length, 2);
      for (const e of broken.errors) {
        assert.deepEqual(Object.keys(e).sort(), ["at", "message", "operation", "type"]);
        assert.equal(e.operation, "set");
        assert.match(e.message, /set-(a)?sync-broken/);
      }
      assert.deepEqual(broken.values, [["fulfilled", "A"], ["fulfilled", "B"], ["fulfilled", "A"]]);
      assert.deepEqual(broken.values, healthy.values);
      assert.deepEqual(broken.calls, healthy.calls);
      assert.deepEqual(broken.stats, healthy.stats);
      assert.equal(broken.stats.cacheHits, 1, "the LRU still holds the translation");
      assert.deepEqual(broken.otherEvents, healthy.otherEvents);
    });
  }

  test("a throwing onEvent handler does not disturb a cacheError report", async (t) => {
    const { store } = mapStore({ get: () => Promise.reject(new Error("x")) });
    const seen = [];
    const { clock, calls, send } = setup(t, {
      cache: store,
      onEvent: (event) => {
        seen.push(event.type);
        throw new Error("handler broke");
      },
    });
    const state = send(item("robust", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.equal(state.value, "ROBUST");
    assert.ok(seen.includes("cacheError"), `the handler threw on the cacheError report: ${seen}`);
  });
});

describe("cache option: sharing and sync stores", () => {
  test("identical items waiting on one lookup share it (hit)", async (t) => {
    const hold = deferred();
    const { store, gets } = mapStore({ get: () => hold.promise });
    const { clock, calls, send, pacer } = setup(t, { cache: store });
    const a = send(item("same"));
    const b = send(item("same"));
    await clock.tickAsync(0);
    assert.equal(gets.length, 1, "store.get called once");
    assert.equal(a.status, "pending");
    hold.resolve("dasselbe");
    await clock.tickAsync(0);
    assert.deepEqual([a.value, b.value], ["dasselbe", "dasselbe"]);
    assert.equal(calls.length, 0);
    assert.equal(pacer.stats().dedupHits, 1);
    assert.equal(pacer.stats().succeeded, 2);
  });

  test("identical items waiting on one lookup share it (miss): one provider item", async (t) => {
    const hold = deferred();
    const { store, gets, sets } = mapStore({ get: () => hold.promise });
    const { clock, calls, send, pacer } = setup(t, { cache: store });
    const a = send(item("same"));
    const b = send(item("same"));
    await clock.tickAsync(0);
    assert.equal(gets.length, 1);
    hold.resolve(undefined);
    await clock.tickAsync(100);
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["same"]);
    assert.deepEqual([a.value, b.value], ["SAME", "SAME"]);
    assert.equal(pacer.stats().dedupHits, 1);
    assert.equal(sets.length, 1, "written once");
  });

  test("a sync store (get returns the string itself) works too", async (t) => {
    const { store, map, gets, sets } = mapStore({ sync: true });
    const { clock, calls, send, pacer } = setup(t, { cache: store });
    const known = item("bekannt", { llm: false });
    map.set(cacheKey(known), "known");
    const hit = send(known);
    const miss = send(item("neu", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(hit.value, "known");
    assert.equal(miss.value, "NEU");
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["neu"]);
    assert.equal(gets.length, 2);
    assert.deepEqual(sets, [[cacheKey(item("neu", { llm: false })), "NEU"]]);
    assert.equal(pacer.stats().cacheHits, 1);
  });
});

describe("cache option: maxQueued", () => {
  test("an item being looked up counts toward maxQueued; an identical one is still accepted", async (t) => {
    const hold = deferred();
    const { store, gets } = mapStore({ get: () => hold.promise });
    const { clock, send } = setup(t, { cache: store, maxQueued: 1 });
    const first = send(item("eins", { llm: false }));
    await clock.tickAsync(0);
    const other = send(item("zwei", { llm: false }));
    const same = send(item("eins", { llm: false }));
    await clock.tickAsync(0);
    assert.equal(other.status, "rejected");
    assertPacerError(other.reason, "queue_full");
    hold.resolve("one");
    await clock.tickAsync(0);
    assert.deepEqual([first.value, same.value], ["one", "one"]);
    assert.equal(gets.length, 1);
  });
});

describe("cache option: validation", () => {
  test("cache in setOptions is rejected with invalid_options", (t) => {
    const { store } = mapStore();
    const { pacer } = setup(t, { cache: store });
    const err = thrown(() => pacer.setOptions({ cache: mapStore().store }), "invalid_options");
    assert.match(err.message, /cache/);
    const err2 = thrown(() => pacer.setOptions({ rate: 2, cache: store }), "invalid_options");
    assert.match(err2.message, /cache/);
    assert.equal(pacer.options.rate, 8, "a rejected patch changes nothing");
  });

  test("cache in setOptions is rejected on a pacer built without one, too", (t) => {
    const { pacer } = setup(t);
    assert.match(thrown(() => pacer.setOptions({ cache: mapStore().store }), "invalid_options").message, /cache/);
  });

  const badCaches = {
    "an empty object": {},
    "get only": { get() {} },
    "set only": { set() {} },
    "get not a function": { get: "x", set() {} },
    "set not a function": { get() {}, set: 1 },
    "a string": "store",
    "a number": 42,
    "null": null,
    "a function": () => {},
  };
  for (const [name, cache] of Object.entries(badCaches)) {
    test(`a cache that is ${name} is rejected at construction naming cache`, () => {
      const err = thrown(() => new BatchPacer(async () => "x", { cache }), "invalid_options");
      assert.match(err.message, /cache/);
    });
  }

  test("a store whose methods live on its prototype is accepted", async (t) => {
    class Store {
      constructor() { this.map = new Map(); }
      get(key) { return this.map.get(key); }
      set(key, value) { this.map.set(key, value); }
    }
    const store = new Store();
    const { clock, send } = setup(t, { cache: store });
    const entry = item("proto", { llm: false });
    send(entry);
    await clock.tickAsync(0);
    assert.equal(store.map.get(cacheKey(entry)), "PROTO", "set called with the store as this");
  });
});

describe("cache option: abort and dispose during a lookup", () => {
  test("abort during a lookup rejects with aborted and nothing is sent", async (t) => {
    const hold = deferred();
    const { store, gets, sets } = mapStore({ get: () => hold.promise });
    const { clock, calls, send, pacer } = setup(t, { cache: store });
    const controller = new AbortController();
    const state = send(item("abbrechen", { llm: false, signal: controller.signal }));
    await clock.tickAsync(0);
    assert.equal(gets.length, 1);
    controller.abort();
    await clock.tickAsync(0);
    assert.equal(state.status, "rejected");
    assertPacerError(state.reason, "aborted");
    hold.resolve(undefined);
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 0, "nothing sent after the lookup missed");
    assert.deepEqual(sets, []);
    const stats = pacer.stats();
    assert.equal(stats.aborted, 1);
    assert.equal(stats.pending, 0);
    assert.equal(stats.queued, 0);
  });

  test("abort of one sharer during a lookup leaves the other waiting for it", async (t) => {
    const hold = deferred();
    const { store, gets } = mapStore({ get: () => hold.promise });
    const { clock, calls, send } = setup(t, { cache: store });
    const controller = new AbortController();
    const gone = send(item("geteilt", { llm: false, signal: controller.signal }));
    const stays = send(item("geteilt", { llm: false }));
    await clock.tickAsync(0);
    controller.abort();
    await clock.tickAsync(0);
    assertPacerError(gone.reason, "aborted");
    hold.resolve(undefined);
    await clock.tickAsync(0);
    assert.equal(gets.length, 1);
    assert.equal(calls.length, 1);
    assert.equal(stays.value, "GETEILT");
  });

  test("dispose during a lookup rejects with disposed and nothing is sent", async (t) => {
    const hold = deferred();
    const { store, sets } = mapStore({ get: () => hold.promise });
    const { clock, calls, pacer } = setup(t, { cache: store });
    const pending = pacer.translate(item("weg", { llm: false }));
    await clock.tickAsync(0);
    pacer.dispose();
    assertPacerError(await rejection(pending), "disposed");
    hold.resolve("zu spät");
    await clock.tickAsync(10_000);
    assert.equal(calls.length, 0);
    assert.deepEqual(sets, []);
    assert.equal(pacer.stats().disposed, 1);
    assert.equal(pacer.stats().cacheHits, 0);
  });
});

describe("cacheKey", () => {
  test("matches the test vector of docs/reference.md", () => {
    assert.equal(cacheKey(README_VECTOR.item), README_VECTOR.key);
    assert.equal(referenceKey(README_VECTOR.item), README_VECTOR.key, "the reference encoding agrees");
  });

  test("is lowercase hex SHA-256", () => {
    assert.match(cacheKey(item("abc")), /^[0-9a-f]{64}$/);
  });

  test("agrees with an independent computation for random items, non-ASCII included", () => {
    const random = prng(0xc0ffee);
    const alphabet = ["a", "Z", "0", " ", "|", "\0", "\n", "ä", "ß", "é", "日本", "語", "🙂", "👩‍💻", "\u0001", "\u00ff", "\u{10ffff}"];
    const str = (min, max) => {
      const n = min + Math.floor(random() * (max - min + 1));
      let s = "";
      for (let i = 0; i < n; i++) s += alphabet[Math.floor(random() * alphabet.length)];
      return s;
    };
    for (let i = 0; i < 50; i++) {
      const entry = {
        providerId: str(1, 6),
        sourceLang: str(1, 4),
        targetLang: str(1, 4),
        text: str(0, 40),
      };
      if (random() < 0.7) entry.context = str(0, 12);
      if (random() < 0.7) entry.llm = random() < 0.5;
      assert.equal(cacheKey(entry), referenceKey(entry), JSON.stringify(entry));
    }
    // A long text, past a one-byte length.
    const long = item("ü".repeat(70_000));
    assert.equal(cacheKey(long), referenceKey(long));
  });

  test("llm defaults to true and context to \"\"", () => {
    const bare = { providerId: "openai", sourceLang: "en", targetLang: "de", text: "Hello, world!" };
    assert.equal(cacheKey(bare), README_VECTOR.key);
    assert.equal(cacheKey({ ...bare, llm: undefined, context: undefined }), README_VECTOR.key);
    assert.notEqual(cacheKey({ ...bare, llm: false }), README_VECTOR.key);
  });

  test("changes with every single field", () => {
    const base = README_VECTOR.item;
    const changes = {
      providerId: "openai2",
      sourceLang: "fr",
      targetLang: "it",
      context: "title",
      llm: false,
      text: "Hello, world?",
    };
    const keys = new Set([cacheKey(base)]);
    for (const [field, value] of Object.entries(changes)) {
      const changed = { ...base, [field]: value };
      const key = cacheKey(changed);
      assert.notEqual(key, README_VECTOR.key, field);
      assert.equal(key, referenceKey(changed), field);
      keys.add(key);
    }
    assert.equal(keys.size, 1 + Object.keys(changes).length, "all keys distinct");
  });

  test("fields are not joined naively: crafted boundary shifts give different keys", () => {
    const base = { providerId: "p", sourceLang: "en", targetLang: "de", context: "", text: "t" };
    const lengthBytes = (n) => {
      const b = Buffer.alloc(8);
      b.writeBigUInt64BE(BigInt(n));
      return b.toString("latin1");
    };
    const pairs = [
      // "|" as a naive separator
      [{ providerId: "a|b", sourceLang: "c" }, { providerId: "a", sourceLang: "b|c" }],
      // NUL as a naive separator
      [{ providerId: "a\0b", sourceLang: "c" }, { providerId: "a", sourceLang: "b\0c" }],
      [{ targetLang: "de\0", context: "x" }, { targetLang: "de", context: "\0x" }],
      // plain concatenation
      [{ context: "ab", text: "c" }, { context: "a", text: "bc" }],
      [{ sourceLang: "en", targetLang: "de" }, { sourceLang: "end", targetLang: "e" }],
      // a field carrying what would be the next field's length prefix
      [
        { context: "ctx", text: "x" },
        { context: "ctx" + lengthBytes(1) + "\u0001" + lengthBytes(1) + "x", text: "" },
      ],
      [
        { providerId: "p", sourceLang: "en" },
        { providerId: "p" + lengthBytes(2) + "en", sourceLang: "en" },
      ],
      // the llm byte forged in the context
      [{ context: "", llm: true, text: "\u0001" }, { context: "\u0001", llm: false, text: "" }],
    ];
    for (const [left, right] of pairs) {
      const a = { ...base, ...left };
      const b = { ...base, ...right };
      assert.notEqual(cacheKey(a), cacheKey(b), `${JSON.stringify(left)} vs ${JSON.stringify(right)}`);
      assert.equal(cacheKey(a), referenceKey(a));
      assert.equal(cacheKey(b), referenceKey(b));
    }
  });

  test("takes only the item fields: an API key, priority or signal do not change it", () => {
    const base = README_VECTOR.item;
    const withExtras = {
      ...base,
      apiKey: "sk-canary",
      priority: 9,
      signal: new AbortController().signal,
      headers: { authorization: "Bearer sk-canary" },
    };
    assert.equal(cacheKey(withExtras), README_VECTOR.key);
    assert.equal(cacheKey({ ...base, apiKey: "sk-other" }), README_VECTOR.key);
    assert.ok(!cacheKey(withExtras).includes("canary"));
  });

  test("is the same for an item with or without a store lookup (the key store.get receives)", async (t) => {
    const { store, gets } = mapStore();
    const { clock, send } = setup(t, { cache: store });
    const items = [
      item("plain"),
      item("kontext", { context: "Überschrift" }),
      item("nicht llm", { llm: false }),
      item("日本語", { providerId: "p|2", sourceLang: "ja" }),
    ];
    for (const entry of items) send(entry);
    await clock.tickAsync(0);
    assert.deepEqual(gets, items.map((entry) => referenceKey(entry)));
  });

  const invalid = {
    "null": null,
    "a string": "Hello",
    "no text": { providerId: "p", sourceLang: "en", targetLang: "de" },
    "a numeric text": { providerId: "p", sourceLang: "en", targetLang: "de", text: 5 },
    "an empty sourceLang": { providerId: "p", sourceLang: "", targetLang: "de", text: "x" },
    "no targetLang": { providerId: "p", sourceLang: "en", text: "x" },
    "an empty providerId": { providerId: "", sourceLang: "en", targetLang: "de", text: "x" },
    "a string llm": { providerId: "p", sourceLang: "en", targetLang: "de", text: "x", llm: "yes" },
    "a numeric context": { providerId: "p", sourceLang: "en", targetLang: "de", text: "x", context: 5 },
  };
  for (const [name, value] of Object.entries(invalid)) {
    test(`an item with ${name} throws invalid_input`, () => {
      thrown(() => cacheKey(value), "invalid_input");
    });
  }
});
