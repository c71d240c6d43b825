// Options: DEFAULTS, pacer.options, validation of every option, unknown names, and
// setOptions (all or nothing, applied to queued work at once).

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import { BatchPacer, DEFAULTS, PacerError } from "batch-pacer";
import { setup, item, thrown, virtualTime, track } from "./helpers.mjs";

const provider = async (r) => r.text;

const EXPECTED_DEFAULTS = {
  rate: 8,
  capacity: 60,
  maxInFlight: 0,
  maxCharactersPerBatch: 1000,
  maxItemsPerBatch: 4,
  batchDelayMs: 100,
  maxBatchRetries: 3,
  fallbackToIndividual: true,
  timeoutMs: 20000,
  timeoutPerCharacterMs: 15,
  maxRetries: 2,
  baseRetryDelayMs: 1000,
  maxRateLimitRetries: 10,
  adaptiveRate: true,
  cacheEntries: 1000,
  segmentFormat: "markers",
  adaptiveBatching: true,
  fallbackAfterMs: 10000,
  tokensPerMinute: 0,
};

/** How a message may show a value: numbers and booleans as JS prints them, strings quoted or not. */
function shownForms(value) {
  if (typeof value === "string") return [JSON.stringify(value), value];
  return [String(value)];
}

function assertNamesOptionAndValue(err, name, value) {
  assert.equal(err.code, "invalid_options");
  assert.ok(err.message.includes(name), `message names ${name}: ${err.message}`);
  const forms = shownForms(value);
  assert.ok(
    forms.some((f) => err.message.includes(f)),
    `message shows the value ${forms[0]}: ${err.message}`,
  );
}

describe("DEFAULTS and pacer.options", () => {
  test("DEFAULTS holds the contract's default values", () => {
    for (const [name, value] of Object.entries(EXPECTED_DEFAULTS)) {
      assert.equal(DEFAULTS[name], value, name);
    }
  });

  test("the installed index.d.ts documents, with @default, exactly the values DEFAULTS holds", async () => {
    const manifestUrl = new URL(import.meta.resolve("batch-pacer/package.json"));
    const manifest = JSON.parse(await readFile(manifestUrl, "utf8"));
    const types = await readFile(new URL(manifest.types, manifestUrl), "utf8");
    const start = types.indexOf("export interface PacerSettings {");
    assert.ok(start >= 0, "index.d.ts declares PacerSettings");
    const body = types.slice(start, types.indexOf("\n}", start));
    // Each property: the @default tag of its doc comment, its name, and whether it is optional.
    const documented = new Map();
    for (const [, doc, name, optional] of body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(\w+)(\??):/g)) {
      const tag = /@default\s+("[^"]*"|[^\s(]+)/.exec(doc);
      assert.ok(tag, `${name} has a @default tag`);
      documented.set(name, { value: JSON.parse(tag[1]), optional: optional === "?" });
    }
    assert.ok(documented.size >= Object.keys(DEFAULTS).length, "every property of PacerSettings was read");
    for (const [name, { value, optional }] of documented) {
      if (optional) {
        // An addition to the contract (maxQueued): documented, never in DEFAULTS.
        assert.equal(name in DEFAULTS, false, `${name} is optional and not in DEFAULTS`);
      } else {
        assert.equal(value, DEFAULTS[name], `@default of ${name}`);
      }
    }
    for (const name of Object.keys(DEFAULTS)) {
      assert.equal(documented.get(name)?.optional, false, `DEFAULTS.${name} is a documented setting`);
    }
  });

  test("DEFAULTS holds no value for options without a default (cache, clock, onEvent)", () => {
    for (const name of ["cache", "clock", "onEvent"]) assert.equal(DEFAULTS[name], undefined, name);
  });

  test("new BatchPacer(p).options deep-equals DEFAULTS", (t) => {
    const pacer = new BatchPacer(provider);
    t.after(() => pacer.dispose());
    assert.deepEqual({ ...pacer.options }, { ...DEFAULTS });
  });

  test("new BatchPacer(p, {}) and new BatchPacer(p, undefined) use the defaults", (t) => {
    for (const options of [{}, undefined]) {
      const pacer = new BatchPacer(provider, options);
      t.after(() => pacer.dispose());
      assert.deepEqual({ ...pacer.options }, { ...DEFAULTS });
    }
  });

  test("given options show in pacer.options, the others keep their defaults", (t) => {
    const given = { rate: 0.25, capacity: 3, maxItemsPerBatch: 7, fallbackToIndividual: false, cacheEntries: 0 };
    const pacer = new BatchPacer(provider, given);
    t.after(() => pacer.dispose());
    assert.deepEqual({ ...pacer.options }, { ...DEFAULTS, ...given });
  });

  test("pacer.options leaves out clock, onEvent and cache", (t) => {
    const { pacerClock } = virtualTime();
    const store = { get: () => undefined, set: () => {} };
    const pacer = new BatchPacer(provider, { clock: pacerClock, onEvent: () => {}, cache: store });
    t.after(() => pacer.dispose());
    const options = pacer.options;
    for (const name of ["clock", "onEvent", "cache"]) assert.equal(name in options, false, name);
    assert.deepEqual({ ...options }, { ...DEFAULTS });
  });

  test("changing the object returned by pacer.options changes nothing", (t) => {
    const pacer = new BatchPacer(provider);
    t.after(() => pacer.dispose());
    const options = pacer.options;
    try {
      options.rate = 1000;
    } catch {
      // a frozen object is fine too
    }
    assert.equal(pacer.options.rate, 8);
  });

  test("the smallest valid values are accepted", (t) => {
    const smallest = {
      rate: 0.001,
      capacity: 1,
      maxInFlight: 0,
      maxCharactersPerBatch: 1,
      maxItemsPerBatch: 1,
      batchDelayMs: 0,
      maxBatchRetries: 0,
      fallbackToIndividual: false,
      timeoutMs: 0,
      timeoutPerCharacterMs: 0,
      maxRetries: 0,
      baseRetryDelayMs: 0,
      maxRateLimitRetries: 0,
      adaptiveRate: false,
      cacheEntries: 0,
      // Not a number: the other of its two values.
      segmentFormat: "separator",
      adaptiveBatching: false,
      fallbackAfterMs: 0,
      tokensPerMinute: 0,
    };
    const pacer = new BatchPacer(provider, smallest);
    t.after(() => pacer.dispose());
    assert.deepEqual({ ...pacer.options }, smallest);
  });

  test("decimal values where numbers are allowed", (t) => {
    const pacer = new BatchPacer(provider, { rate: 2.5, batchDelayMs: 12.5, timeoutMs: 1500.5, baseRetryDelayMs: 0.5 });
    t.after(() => pacer.dispose());
    assert.equal(pacer.options.rate, 2.5);
    assert.equal(pacer.options.batchDelayMs, 12.5);
    assert.equal(pacer.options.timeoutMs, 1500.5);
    assert.equal(pacer.options.baseRetryDelayMs, 0.5);
  });
});

describe("validation", () => {
  test("the contract's example message, to the letter", () => {
    const err = thrown(() => new BatchPacer(provider, { rate: -1 }), "invalid_options");
    assert.equal(err.message, "rate must be a finite number > 0 (got -1)");
    assert.ok(err instanceof PacerError);
  });

  const invalid = {
    rate: [0, -1, -0.5, NaN, Infinity, -Infinity, "8", null, true, {}],
    capacity: [0, -1, 1.5, NaN, Infinity, "60", null, false],
    maxInFlight: [-1, 0.5, NaN, Infinity, "0", null, true],
    maxCharactersPerBatch: [0, -5, 2.5, NaN, Infinity, "1000", null],
    maxItemsPerBatch: [0, -1, 1.5, NaN, Infinity, "4", null],
    batchDelayMs: [-1, -0.001, NaN, Infinity, "100", null, true],
    maxBatchRetries: [-1, 0.5, NaN, Infinity, "3", null],
    fallbackToIndividual: [0, 1, "true", "false", null, {}],
    timeoutMs: [-1, NaN, Infinity, "20000", null, false],
    timeoutPerCharacterMs: [-1, -0.001, NaN, Infinity, "15", null, true],
    maxRetries: [-1, 1.5, NaN, Infinity, "2", null],
    baseRetryDelayMs: [-1, NaN, Infinity, "1000", null],
    maxRateLimitRetries: [-1, 2.5, NaN, Infinity, "10", null],
    adaptiveRate: [0, 1, "yes", null, []],
    cacheEntries: [-1, 1.5, NaN, Infinity, "1000", null],
    segmentFormat: ["marker", "Markers", "separators", "", 0, null, true, {}],
    tokensPerMinute: [-1, NaN, Infinity, "1000", null, true],
  };

  for (const [name, values] of Object.entries(invalid)) {
    test(`${name}: invalid values throw invalid_options naming ${name} and the value`, () => {
      for (const value of values) {
        const err = thrown(() => new BatchPacer(provider, { [name]: value }), "invalid_options");
        if (typeof value === "object" && value !== null) {
          assert.ok(err.message.includes(name), `message names ${name}: ${err.message}`);
        } else {
          assertNamesOptionAndValue(err, name, value);
        }
      }
    });
  }

  test("numbers in messages are printed as JavaScript prints them", () => {
    const cases = [
      [{ capacity: 1.5 }, "capacity", "1.5"],
      [{ maxItemsPerBatch: 0 }, "maxItemsPerBatch", "0"],
      [{ batchDelayMs: -1 }, "batchDelayMs", "-1"],
      [{ timeoutMs: NaN }, "timeoutMs", "NaN"],
      [{ rate: Infinity }, "rate", "Infinity"],
    ];
    for (const [options, name, shown] of cases) {
      const err = thrown(() => new BatchPacer(provider, options), "invalid_options");
      assert.match(err.message, new RegExp(`^${name}\\b.*\\(got ${shown}\\)$`), err.message);
    }
  });

  test("unknown option names are an error that names them", () => {
    for (const name of ["rat", "maxRetry", "batchDelay", "max_retries", "Rate", "timeout"]) {
      const err = thrown(() => new BatchPacer(provider, { [name]: 1 }), "invalid_options");
      assert.ok(err.message.includes(name), `message names ${name}: ${err.message}`);
    }
  });

  test("an unknown name is rejected even next to valid options", () => {
    const err = thrown(() => new BatchPacer(provider, { rate: 2, capacity: 4, maxInflight: 1 }), "invalid_options");
    assert.ok(err.message.includes("maxInflight"), err.message);
  });

  test("onEvent must be a function", () => {
    for (const value of ["log", 5, {}]) {
      const err = thrown(() => new BatchPacer(provider, { onEvent: value }), "invalid_options");
      assert.ok(err.message.includes("onEvent"), err.message);
    }
  });

  test("clock must have now, setTimeout and clearTimeout functions", () => {
    const ok = virtualTime().pacerClock;
    const bad = [
      "performance",
      5,
      {},
      { ...ok, now: undefined },
      { ...ok, setTimeout: 1 },
      { now: ok.now, setTimeout: ok.setTimeout },
    ];
    for (const clock of bad) {
      const err = thrown(() => new BatchPacer(provider, { clock }), "invalid_options");
      assert.ok(err.message.includes("clock"), err.message);
    }
  });

  test("an invalid option is a PacerError, thrown synchronously by the constructor", () => {
    let err;
    try {
      new BatchPacer(provider, { maxRetries: -1 });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof PacerError);
    assert.ok(err instanceof Error);
    assert.equal(err.name, "PacerError");
    assert.equal(err.code, "invalid_options");
  });
});

describe("setOptions", () => {
  test("applies a valid patch; the other options stay", (t) => {
    const { pacer } = setup(t);
    pacer.setOptions({ rate: 2, maxItemsPerBatch: 2, adaptiveRate: false });
    assert.deepEqual({ ...pacer.options }, { ...DEFAULTS, rate: 2, maxItemsPerBatch: 2, adaptiveRate: false });
    pacer.setOptions({ capacity: 5 });
    assert.deepEqual({ ...pacer.options }, { ...DEFAULTS, rate: 2, maxItemsPerBatch: 2, adaptiveRate: false, capacity: 5 });
  });

  test("is all or nothing: one invalid entry changes nothing", (t) => {
    const { pacer } = setup(t, { rate: 3 });
    const before = { ...pacer.options };
    const err = thrown(() => pacer.setOptions({ rate: 100, maxRetries: 7, capacity: 0 }), "invalid_options");
    assert.ok(err.message.includes("capacity"), err.message);
    assert.deepEqual({ ...pacer.options }, before);
  });

  test("an unknown name in a patch is rejected and changes nothing", (t) => {
    const { pacer } = setup(t);
    const before = { ...pacer.options };
    const err = thrown(() => pacer.setOptions({ rate: 1, maxRetry: 5 }), "invalid_options");
    assert.ok(err.message.includes("maxRetry"), err.message);
    assert.deepEqual({ ...pacer.options }, before);
  });

  test("every option's validation also applies to a patch", (t) => {
    const { pacer } = setup(t);
    const before = { ...pacer.options };
    const err = thrown(() => pacer.setOptions({ rate: -1 }), "invalid_options");
    assert.equal(err.message, "rate must be a finite number > 0 (got -1)");
    for (const patch of [{ capacity: 1.5 }, { batchDelayMs: NaN }, { fallbackToIndividual: "no" }, { cacheEntries: -1 }]) {
      thrown(() => pacer.setOptions(patch), "invalid_options");
    }
    assert.deepEqual({ ...pacer.options }, before);
  });

  test("applies to queued work at once: a higher rate drains the backlog sooner", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { rate: 0.1, capacity: 1 });
    for (let i = 0; i < 4; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 1, "one token at first");
    await clock.tickAsync(1000);
    assert.equal(calls.length, 1, "at 0.1/s the next token is 10 s away");
    pacer.setOptions({ rate: 10 });
    await clock.tickAsync(301);
    assert.equal(calls.length, 4, "at 10/s the three queued items start within ~300 ms");
  });

  test("applies to a collecting batch at once: a lower maxItemsPerBatch makes it due", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { batchDelayMs: 10_000 });
    send(item("a"));
    send(item("b"));
    await clock.tickAsync(10);
    assert.equal(calls.length, 0);
    pacer.setOptions({ maxItemsPerBatch: 2 });
    await clock.tickAsync(0);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].texts, ["a", "b"]);
  });

  test("a larger capacity does not refill the bucket", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { rate: 1, capacity: 2 });
    for (let i = 0; i < 10; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 2, "the initial burst is the capacity");
    pacer.setOptions({ capacity: 50 });
    await clock.tickAsync(0);
    assert.equal(calls.length, 2, "no new tokens from a larger capacity");
    await clock.tickAsync(999);
    assert.equal(calls.length, 2);
    await clock.tickAsync(2);
    assert.equal(calls.length, 3, "tokens keep refilling at rate");
  });

  test("a larger capacity lets tokens accumulate beyond the old size later", async (t) => {
    const { pacer, clock, calls, send } = setup(t, { rate: 1, capacity: 1 });
    pacer.setOptions({ capacity: 5 });
    await clock.tickAsync(10_000); // the bucket, started full at 1, fills up to 5
    for (let i = 0; i < 8; i++) send(item(`t${i}`, { llm: false }));
    await clock.tickAsync(0);
    assert.equal(calls.length, 5);
  });

  test("an invalid onEvent in a patch is rejected", (t) => {
    const { pacer } = setup(t);
    const err = thrown(() => pacer.setOptions({ onEvent: "nope" }), "invalid_options");
    assert.ok(err.message.includes("onEvent"), err.message);
  });

  test("queued work is not lost when a patch is rejected", async (t) => {
    const { pacer, clock, send } = setup(t, { batchDelayMs: 0 });
    const state = send(item("keep"));
    thrown(() => pacer.setOptions({ rate: 0 }), "invalid_options");
    await clock.tickAsync(0);
    assert.equal(state.status, "fulfilled");
    assert.equal(state.value, "KEEP");
  });
});
