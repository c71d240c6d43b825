// indexedDBCache: the persistent store for the pacer's `cache` option. Its IndexedDB
// behaviour runs in a real headless Chromium (a page, and a module worker in that page),
// served over http from 127.0.0.1; the Node part checks validation and the fallback when
// there is no IndexedDB at all.
//
// The module under test is the installed package's js/indexeddb-cache.js when the package
// ships it, else $BATCH_PACER_REPO/js/indexeddb-cache.js (run from the repository with
// `BATCH_PACER_REPO=$PWD node --test tests/node/indexeddb-cache.test.mjs`).

import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { existsSync, readFileSync } from "node:fs";
import { launchChromium, playwright } from "./chromium.mjs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { skipIfMissing } from "./requirements.mjs";

function locateModule() {
  const tried = [];
  try {
    const entry = fileURLToPath(import.meta.resolve("batch-pacer"));
    const candidate = path.join(path.dirname(entry), "indexeddb-cache.js");
    if (existsSync(candidate)) return candidate;
    tried.push(candidate);
  } catch (error) {
    tried.push(`batch-pacer (${error.message})`);
  }
  const repo = process.env.BATCH_PACER_REPO;
  if (repo) {
    const candidate = path.join(path.resolve(repo), "js", "indexeddb-cache.js");
    if (existsSync(candidate)) return candidate;
    tried.push(candidate);
  } else {
    tried.push("$BATCH_PACER_REPO (not set)");
  }
  throw new Error(`js/indexeddb-cache.js not found; tried: ${tried.join(", ")}`);
}

const modulePath = locateModule();
const moduleSource = readFileSync(modulePath, "utf8");
const { indexedDBCache } = await import(pathToFileURL(modulePath).href);
// The store's option errors are the package's PacerError, from the module beside it.
const errorsPath = path.join(path.dirname(modulePath), "errors.js");
const { PacerError } = await import(pathToFileURL(errorsPath).href);
const hasChromium = existsSync("/usr/bin/chromium");
const browserSkip = skipIfMissing(
  !playwright
    ? "playwright-core is not installed here nor under $BATCH_PACER_REPO"
    : !hasChromium
      ? "/usr/bin/chromium is missing"
      : false,
);

const DAY = 24 * 3600 * 1000;

// ---------------------------------------------------------------------------------------
// Node: validation, defaults, and no IndexedDB.

describe("indexedDBCache in Node (no IndexedDB)", () => {
  test("Node has no globalThis.indexedDB", () => {
    assert.equal(globalThis.indexedDB, undefined);
  });

  test("creation does not throw; available is false; the defaults are exposed", () => {
    const store = indexedDBCache();
    assert.equal(store.available, false);
    assert.equal(store.name, "batch-pacer");
    assert.equal(store.maxEntries, 10000);
    assert.equal(store.ttlMs, 7 * DAY);
    const custom = indexedDBCache({ name: "x", maxEntries: 5, ttlMs: 0.5 });
    assert.deepEqual([custom.name, custom.maxEntries, custom.ttlMs], ["x", 5, 0.5]);
  });

  test("every get is a miss, set resolves, the extras are no-ops", async () => {
    const store = indexedDBCache({ name: "node" });
    const key = "a".repeat(64);
    assert.equal(await store.get(key), undefined);
    assert.equal(await store.set(key, "value"), undefined);
    assert.equal(await store.get(key), undefined);
    assert.equal(await store.size(), 0);
    assert.equal(await store.prune(), 0);
    assert.equal(await store.clear(), undefined);
    assert.equal(store.close(), undefined);
  });

  test("invalid options throw PacerError invalid_options naming the option and the value", () => {
    const cases = [
      [{ name: "" }, 'name must be a non-empty string (got "")'],
      [{ name: 5 }, "name must be a non-empty string (got 5)"],
      [{ name: null }, "name must be a non-empty string (got null)"],
      [{ maxEntries: 0 }, "maxEntries must be an integer >= 1 (got 0)"],
      [{ maxEntries: -3 }, "maxEntries must be an integer >= 1 (got -3)"],
      [{ maxEntries: 1.5 }, "maxEntries must be an integer >= 1 (got 1.5)"],
      [{ maxEntries: "10" }, 'maxEntries must be an integer >= 1 (got "10")'],
      [{ maxEntries: Infinity }, "maxEntries must be an integer >= 1 (got Infinity)"],
      [{ maxEntries: NaN }, "maxEntries must be an integer >= 1 (got NaN)"],
      [{ ttlMs: 0 }, "ttlMs must be a finite number > 0 (got 0)"],
      [{ ttlMs: -1 }, "ttlMs must be a finite number > 0 (got -1)"],
      [{ ttlMs: Infinity }, "ttlMs must be a finite number > 0 (got Infinity)"],
      [{ ttlMs: NaN }, "ttlMs must be a finite number > 0 (got NaN)"],
      [{ ttlMs: "1000" }, 'ttlMs must be a finite number > 0 (got "1000")'],
      [{ ttlMs: 10n }, "ttlMs must be a finite number > 0 (got 10n)"],
      [{ maxEntry: 10 }, 'unknown indexedDBCache option "maxEntry"'],
      [null, "indexedDBCache options must be an object (got null)"],
      ["name", 'indexedDBCache options must be an object (got "name")'],
    ];
    for (const [options, message] of cases) {
      assert.throws(() => indexedDBCache(options), (error) => {
        assert.ok(error instanceof PacerError, `${message}: ${error}`);
        assert.equal(error.code, "invalid_options");
        assert.equal(error.message, message);
        const named = options !== null && typeof options === "object" ? Object.keys(options)[0] : undefined;
        assert.equal(error.option, named);
        return true;
      });
    }
    // undefined options and undefined fields mean the defaults
    assert.equal(indexedDBCache(undefined).maxEntries, 10000);
    assert.equal(indexedDBCache({ maxEntries: undefined }).maxEntries, 10000);
  });

  test("a key that is not a non-empty string, or a value that is not a string, rejects", async () => {
    const store = indexedDBCache();
    await assert.rejects(store.get(""), TypeError);
    await assert.rejects(store.get(42), TypeError);
    await assert.rejects(store.set("a".repeat(64), 42), /value must be a string \(got 42\)/);
  });
});

// ---------------------------------------------------------------------------------------
// Chromium: the real IndexedDB.

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>indexeddb-cache</title>
<script type="module">
import * as cacheModule from "/indexeddb-cache.js";

const hexKey = (i) => i.toString(16).padStart(64, "0");

// Raw IndexedDB access to the same database, to look behind the store's back.
function rawOpen(name, version = 1) {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, version);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains("entries")) {
        db.createObjectStore("entries", { keyPath: "key" }).createIndex("at", "at");
      }
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error("raw open blocked"));
  });
}
async function rawRun(name, mode, work) {
  const db = await rawOpen(name);
  try {
    const tx = db.transaction("entries", mode);
    const request = work(tx.objectStore("entries"));
    await new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onabort = () => reject(tx.error);
    });
    return request?.result;
  } finally {
    db.close();
  }
}
const raw = {
  put: (name, record) => rawRun(name, "readwrite", (s) => s.put(record)),
  get: (name, key) => rawRun(name, "readonly", (s) => s.get(key)),
  count: (name) => rawRun(name, "readonly", (s) => s.count()),
  indexNames: async (name) => {
    const db = await rawOpen(name);
    try {
      const store = db.transaction("entries").objectStore("entries");
      return { keyPath: store.keyPath, indexes: [...store.indexNames], version: db.version };
    } finally {
      db.close();
    }
  },
  deleteDatabase: (name) => new Promise((resolve, reject) => {
    let blocked = false;
    const request = indexedDB.deleteDatabase(name);
    request.onblocked = () => { blocked = true; };
    request.onsuccess = () => resolve({ blocked });
    request.onerror = () => reject(request.error);
  }),
};

globalThis.t = { ...cacheModule, hexKey, raw, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };
</script>
`;

const WORKER = `
import { indexedDBCache } from "/indexeddb-cache.js";
self.onmessage = async ({ data }) => {
  try {
    const store = indexedDBCache({ name: data.name });
    const before = await store.get(data.key);
    await store.set(data.key, data.value);
    const after = await store.get(data.key);
    const size = await store.size();
    store.close();
    const again = await indexedDBCache({ name: data.name }).get(data.key);
    self.postMessage({
      ok: true,
      available: store.available,
      hasWindow: typeof window !== "undefined",
      before: before === undefined ? "undefined" : before,
      after,
      size,
      again,
    });
  } catch (error) {
    self.postMessage({ ok: false, error: String(error) });
  }
};
`;

const WORKER_PAGE = `<!doctype html><meta charset="utf-8"><title>worker</title>`;

describe("indexedDBCache in Chromium", { skip: browserSkip }, () => {
  let server;
  let origin;
  let browser;
  let context;
  const pageErrors = [];
  let dbCounter = 0;
  const freshName = (label) => `test-${label}-${++dbCounter}-${Date.now()}`;

  before(async () => {
    server = http.createServer((request, response) => {
      const url = new URL(request.url, "http://127.0.0.1");
      const routes = {
        "/": ["text/html", PAGE],
        "/worker-page": ["text/html", WORKER_PAGE],
        "/indexeddb-cache.js": ["text/javascript", moduleSource],
        "/errors.js": ["text/javascript", readFileSync(errorsPath, "utf8")],
        "/worker.js": ["text/javascript", WORKER],
      };
      const route = routes[url.pathname];
      if (!route) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": `${route[0]}; charset=utf-8`, "cache-control": "no-store" });
      response.end(route[1]);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${server.address().port}`;
    browser = await launchChromium();
    context = await browser.newContext();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
    assert.deepEqual(pageErrors, [], "no uncaught errors in the pages");
  });

  async function openPage() {
    const page = await context.newPage();
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => globalThis.t !== undefined);
    return page;
  }

  /** Runs `fn(arg)` in a fresh page, closing the page afterwards. */
  async function inPage(fn, arg) {
    const page = await openPage();
    try {
      return await page.evaluate(fn, arg);
    } finally {
      await page.close();
    }
  }

  test("a miss is undefined; set then get returns the value; a second set overwrites", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey, raw } = globalThis.t;
      const store = indexedDBCache({ name });
      const key = hexKey(1);
      const miss = await store.get(key);
      const setResult = await store.set(key, "Hallo, Welt!");
      const hit = await store.get(key);
      await store.set(key, "Servus");
      const overwritten = await store.get(key);
      const otherMiss = await store.get(hexKey(2));
      const unicode = "Grüße — 你好 🙂\n\t";
      await store.set(hexKey(3), unicode);
      const size = await store.size();
      store.close();
      return {
        available: store.available,
        miss: miss === undefined,
        setResult: setResult === undefined,
        hit,
        overwritten,
        otherMiss: otherMiss === undefined,
        unicodeBack: (await indexedDBCache({ name }).get(hexKey(3))) === unicode,
        size,
        layout: await raw.indexNames(name),
        record: await raw.get(name, key),
        now: Date.now(),
      };
    }, freshName("basic"));
    assert.equal(result.available, true);
    assert.equal(result.miss, true);
    assert.equal(result.setResult, true, "set resolves undefined");
    assert.equal(result.hit, "Hallo, Welt!");
    assert.equal(result.overwritten, "Servus");
    assert.equal(result.otherMiss, true);
    assert.equal(result.unicodeBack, true);
    assert.equal(result.size, 2);
    assert.deepEqual(result.layout, { keyPath: "key", indexes: ["at"], version: 1 });
    assert.deepEqual(Object.keys(result.record).sort(), ["at", "key", "value"]);
    assert.equal(result.record.value, "Servus");
    assert.ok(Number.isInteger(result.record.at) && result.now - result.record.at < 60_000, `at ${result.record.at}`);
  });

  test("entries persist: a fresh store in a new page of the same origin sees them", async () => {
    const name = freshName("persist");
    await inPage(async (name) => {
      const { indexedDBCache, hexKey } = globalThis.t;
      const store = indexedDBCache({ name });
      for (let i = 0; i < 5; i++) await store.set(hexKey(i), `value ${i}`);
    }, name);
    const page = await openPage();
    try {
      const seen = await page.evaluate(async (name) => {
        const { indexedDBCache, hexKey } = globalThis.t;
        const store = indexedDBCache({ name });
        const values = [];
        for (let i = 0; i < 5; i++) values.push(await store.get(hexKey(i)));
        return values;
      }, name);
      assert.deepEqual(seen, [0, 1, 2, 3, 4].map((i) => `value ${i}`));
      // and after a reload of that page (a new module instance again)
      await page.reload();
      await page.waitForFunction(() => globalThis.t !== undefined);
      const afterReload = await page.evaluate(async (name) => {
        const { indexedDBCache, hexKey } = globalThis.t;
        const a = indexedDBCache({ name });
        const b = indexedDBCache({ name }); // two instances share the database
        await b.set(hexKey(9), "from b");
        return { four: await a.get(hexKey(4)), fromB: await a.get(hexKey(9)), size: await a.size() };
      }, name);
      assert.deepEqual(afterReload, { four: "value 4", fromB: "from b", size: 6 });
    } finally {
      await page.close();
    }
  });

  test("TTL: an entry older than ttlMs is never returned and is deleted; a re-set refreshes it", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey, raw, sleep } = globalThis.t;
      const ttlMs = 60_000;
      const store = indexedDBCache({ name, ttlMs });
      await store.set(hexKey(0), "fresh");
      // Records written behind the store's back with chosen ages.
      const now = Date.now();
      await raw.put(name, { key: hexKey(1), value: "old", at: now - ttlMs - 1000 });
      await raw.put(name, { key: hexKey(2), value: "young", at: now - ttlMs + 30_000 });
      await raw.put(name, { key: hexKey(3), value: "refresh me", at: now - ttlMs - 1000 });
      const old = await store.get(hexKey(1));
      const young = await store.get(hexKey(2));
      // The deletion of the expired entry happens in the background.
      let oldRecord = await raw.get(name, hexKey(1));
      for (let i = 0; i < 50 && oldRecord !== undefined; i++) {
        await sleep(10);
        oldRecord = await raw.get(name, hexKey(1));
      }
      // A store with a longer ttl reading the same database does not see it either now.
      const longer = await indexedDBCache({ name, ttlMs: 365 * 24 * 3600 * 1000 }).get(hexKey(1));
      // A longer ttl does see an entry that a shorter one considers expired.
      const seenByLonger = await indexedDBCache({ name, ttlMs: 365 * 24 * 3600 * 1000 }).get(hexKey(3));
      await store.set(hexKey(3), "refreshed");
      const refreshed = await store.get(hexKey(3));

      // Real time, with a tiny ttl.
      const quick = indexedDBCache({ name: name + "-quick", ttlMs: 200 });
      await quick.set(hexKey(7), "short-lived");
      const before = await quick.get(hexKey(7));
      await sleep(350);
      const afterwards = await quick.get(hexKey(7));
      return {
        fresh: await store.get(hexKey(0)),
        old: old === undefined,
        young,
        oldDeleted: oldRecord === undefined,
        longer: longer === undefined,
        seenByLonger,
        refreshed,
        before,
        afterwards: afterwards === undefined,
      };
    }, freshName("ttl"));
    assert.deepEqual(result, {
      fresh: "fresh",
      old: true,
      young: "young",
      oldDeleted: true,
      longer: true,
      seenByLonger: "refresh me",
      refreshed: "refreshed",
      before: "short-lived",
      afterwards: true,
    });
  });

  test("maxEntries: the oldest are evicted in steps past a 10% margin; the newest stay", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey } = globalThis.t;
      const store = indexedDBCache({ name, maxEntries: 50 });
      const sizes = {};
      let last = 0;
      for (let i = 0; i < 80; i++) {
        // one write per millisecond at least, so that "oldest" is unambiguous
        while (Date.now() <= last) await new Promise((r) => setTimeout(r, 0));
        last = Date.now();
        await store.set(hexKey(i), `v${i}`);
        if (i === 54 || i === 55) sizes[i + 1] = await store.size();
      }
      const finalSize = await store.size();
      const present = [];
      for (let i = 0; i < 80; i++) if ((await store.get(hexKey(i))) === `v${i}`) present.push(i);
      // a rewrite of an existing key is not a new entry and evicts nothing
      await store.set(hexKey(79), "again");
      const afterRewrite = await store.size();
      return { sizes, finalSize, present, afterRewrite };
    }, freshName("evict"));
    assert.equal(result.sizes[55], 55, "no eviction up to maxEntries + 10%");
    assert.equal(result.sizes[56], 50, "one eviction down to maxEntries once past it");
    assert.ok(result.finalSize <= 55 && result.finalSize >= 50, `size ${result.finalSize}`);
    for (let i = 30; i < 80; i++) assert.ok(result.present.includes(i), `newest entry ${i} kept`);
    for (let i = 0; i < 25; i++) assert.ok(!result.present.includes(i), `oldest entry ${i} evicted`);
    assert.equal(result.present.length, result.finalSize);
    assert.equal(result.afterRewrite, result.finalSize);
  });

  test("maxEntries 1 keeps only the last key; prune drops expired entries and the excess", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey, raw } = globalThis.t;
      const one = indexedDBCache({ name: name + "-one", maxEntries: 1 });
      let last = 0;
      const sizes = [];
      for (let i = 0; i < 4; i++) {
        while (Date.now() <= last) await new Promise((r) => setTimeout(r, 0));
        last = Date.now();
        await one.set(hexKey(i), `v${i}`);
        sizes.push(await one.size());
      }
      const lastKept = await one.get(hexKey(3));

      const store = indexedDBCache({ name, maxEntries: 100, ttlMs: 60_000 });
      for (let i = 0; i < 10; i++) await store.set(hexKey(i), `v${i}`);
      for (let i = 10; i < 13; i++) {
        await raw.put(name, { key: hexKey(i), value: "stale", at: Date.now() - 120_000 });
      }
      const before = await store.size();
      const removed = await store.prune();
      const after = await store.size();
      const removedAgain = await store.prune();
      await store.clear();
      const cleared = await store.size();
      await store.set(hexKey(1), "after clear");
      return { sizes, lastKept, before, removed, after, removedAgain, cleared, back: await store.get(hexKey(1)) };
    }, freshName("prune"));
    assert.deepEqual(result.sizes, [1, 1, 1, 1]);
    assert.equal(result.lastKept, "v3");
    assert.deepEqual(
      [result.before, result.removed, result.after, result.removedAgain, result.cleared, result.back],
      [13, 3, 10, 0, 0, "after clear"],
    );
  });

  test("calls made in the same turn share one transaction; the last write of a key wins", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey } = globalThis.t;
      const opened = { readonly: 0, readwrite: 0 };
      const original = IDBDatabase.prototype.transaction;
      IDBDatabase.prototype.transaction = function (stores, mode = "readonly", ...rest) {
        opened[mode]++;
        return original.call(this, stores, mode, ...rest);
      };
      try {
        const store = indexedDBCache({ name, maxEntries: 50 });
        await store.size(); // opens the connection (and its one count) first
        const base = { ...opened };
        const keys = Array.from({ length: 20 }, (_, i) => hexKey(i));
        await Promise.all(keys.map((key, i) => store.set(key, `v${i}`)));
        const afterSets = { ...opened };
        const values = await Promise.all(keys.map((key) => store.get(key)));
        const afterGets = { ...opened };
        // same key twice in one turn: one entry, the later value
        await Promise.all([store.set(hexKey(100), "first"), store.set(hexKey(100), "second")]);
        const twice = await store.get(hexKey(100));
        // an invalid key rejects alone; the other gets of the turn are answered
        const mixed = await Promise.allSettled([store.get(hexKey(1)), store.get(""), store.get(hexKey(2))]);
        // 80 new keys in one turn: past maxEntries + 10% at once, evicted back to maxEntries
        await store.clear();
        await Promise.all(Array.from({ length: 80 }, (_, i) => store.set(hexKey(1000 + i), "x")));
        const sizeAfterBurst = await store.size();
        return {
          sets: afterSets.readwrite - base.readwrite,
          gets: afterGets.readonly - afterSets.readonly,
          values,
          twice,
          mixed: mixed.map((r) => (r.status === "fulfilled" ? r.value : r.reason.name)),
          sizeAfterBurst,
        };
      } finally {
        IDBDatabase.prototype.transaction = original;
      }
    }, freshName("turn"));
    assert.equal(result.sets, 1, "20 concurrent sets: one read-write transaction");
    assert.equal(result.gets, 1, "20 concurrent gets: one read-only transaction");
    assert.deepEqual(result.values, Array.from({ length: 20 }, (_, i) => `v${i}`));
    assert.equal(result.twice, "second");
    assert.deepEqual(result.mixed, ["v1", "TypeError", "v2"]);
    assert.equal(result.sizeAfterBurst, 50);
  });

  test("10,000 entries: written, then 200 keyed gets (timings printed, not asserted)", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey } = globalThis.t;
      const store = indexedDBCache({ name });
      const total = 10_000;
      let t0 = performance.now();
      for (let start = 0; start < total; start += 500) {
        const writes = [];
        for (let i = start; i < start + 500; i++) writes.push(store.set(hexKey(i), `translation number ${i}`));
        await Promise.all(writes);
      }
      const writeMs = performance.now() - t0;
      const size = await store.size();
      const picks = Array.from({ length: 200 }, (_, j) => (j * 7919) % total);
      t0 = performance.now();
      let correct = 0;
      for (const i of picks) if ((await store.get(hexKey(i))) === `translation number ${i}`) correct++;
      const getMs = performance.now() - t0;
      t0 = performance.now();
      let misses = 0;
      for (let j = 0; j < 200; j++) if ((await store.get(hexKey(total + j))) === undefined) misses++;
      const missMs = performance.now() - t0;
      t0 = performance.now();
      const parallel = await Promise.all(picks.map((i) => store.get(hexKey(i))));
      const parallelMs = performance.now() - t0;
      return {
        size,
        correct,
        misses,
        parallelCorrect: parallel.every((v, j) => v === `translation number ${picks[j]}`),
        writeMs,
        getMs,
        missMs,
        parallelMs,
      };
    }, freshName("big"));
    console.log(
      `# indexedDBCache with 10,000 entries: writing them ${result.writeMs.toFixed(0)} ms; ` +
        `200 sequential hits ${result.getMs.toFixed(1)} ms (${(result.getMs / 200).toFixed(3)} ms each); ` +
        `200 sequential misses ${result.missMs.toFixed(1)} ms; 200 concurrent hits ${result.parallelMs.toFixed(1)} ms`,
    );
    assert.equal(result.size, 10_000, "the default maxEntries keeps all of them");
    assert.equal(result.correct, 200);
    assert.equal(result.misses, 200);
    assert.equal(result.parallelCorrect, true);
  });

  test("deleting the database from elsewhere is not blocked; the store reopens on next use", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey, raw } = globalThis.t;
      const store = indexedDBCache({ name });
      await store.set(hexKey(1), "before delete");
      const deletion = await raw.deleteDatabase(name); // versionchange on the store's connection
      const afterDelete = await store.get(hexKey(1));
      await store.set(hexKey(2), "after delete");
      const back = await store.get(hexKey(2));
      store.close();
      const afterClose = await store.get(hexKey(2)); // close() then use: reopens
      return { deletion, afterDelete: afterDelete === undefined, back, afterClose, size: await store.size() };
    }, freshName("versionchange"));
    assert.deepEqual(result, {
      deletion: { blocked: false },
      afterDelete: true,
      back: "after delete",
      afterClose: "after delete",
      size: 1,
    });
  });

  test("store failures reject: a database at a newer version cannot be opened", async () => {
    const result = await inPage(async (name) => {
      const { indexedDBCache, hexKey } = globalThis.t;
      const db = await new Promise((resolve, reject) => {
        const request = indexedDB.open(name, 3);
        request.onupgradeneeded = () => request.result.createObjectStore("other");
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      db.close();
      const store = indexedDBCache({ name });
      const outcome = async (promise) => promise.then(
        (value) => ({ resolved: value === undefined ? "undefined" : value }),
        (error) => ({ rejected: error?.name ?? String(error) }),
      );
      const get = await outcome(store.get(hexKey(1)));
      const set = await outcome(store.set(hexKey(1), "x"));
      const badValue = await outcome(store.set(hexKey(1), 42));
      return { get, set, badValue, available: store.available };
    }, freshName("version"));
    assert.equal(result.available, true);
    assert.deepEqual(result.get, { rejected: "VersionError" });
    assert.deepEqual(result.set, { rejected: "VersionError" });
    assert.deepEqual(result.badValue, { rejected: "TypeError" });
  });

  test("works in a dedicated module worker", async () => {
    const name = freshName("worker");
    const page = await context.newPage();
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    try {
      await page.goto(`${origin}/worker-page`);
      const fromWorker = await page.evaluate(
        (data) =>
          new Promise((resolve, reject) => {
            const worker = new Worker("/worker.js", { type: "module" });
            worker.onmessage = ({ data }) => {
              worker.terminate();
              resolve(data);
            };
            worker.onerror = (event) => reject(new Error(event.message || "worker error"));
            worker.postMessage(data);
          }),
        { name, key: "f".repeat(64), value: "aus dem Worker" },
      );
      assert.deepEqual(fromWorker, {
        ok: true,
        available: true,
        hasWindow: false,
        before: "undefined",
        after: "aus dem Worker",
        size: 1,
        again: "aus dem Worker",
      });
      // the page's origin shares the worker's database
      await page.goto(`${origin}/`);
      await page.waitForFunction(() => globalThis.t !== undefined);
      const inPageValue = await page.evaluate(
        (name) => globalThis.t.indexedDBCache({ name }).get("f".repeat(64)),
        name,
      );
      assert.equal(inPageValue, "aus dem Worker");
    } finally {
      await page.close();
    }
  });
});
