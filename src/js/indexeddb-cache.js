// batch-pacer: a persistent translation store on IndexedDB, for the pacer's `cache` option.
// No dependencies, no `window`, no top-level await, no dynamic import(): it runs in a page,
// a dedicated worker, an MV3 extension service worker and a Firefox background page.

import { PacerError } from "./errors.js";

const STORE = "entries";
const AT_INDEX = "at";
const VERSION = 1;
// A cache may lose its last writes in a crash; that is worth the much faster commits.
const RELAXED = Object.freeze({ durability: "relaxed" });
const OPTION_NAMES = ["name", "maxEntries", "ttlMs"];

/**
 * @typedef {object} IndexedDBCacheOptions
 * @property {string} [name="batch-pacer"] The database name (one database per name).
 * @property {number} [maxEntries=10000] Entries kept; the oldest beyond it are evicted.
 *   Integer >= 1.
 * @property {number} [ttlMs=604800000] Age in milliseconds after which an entry is never
 *   returned (7 days). Finite number > 0.
 */

/**
 * @typedef {object} IndexedDBCache
 * @property {boolean} available `false` when the context has no IndexedDB
 *   (`globalThis.indexedDB` missing or unreadable): every `get` then resolves `undefined`,
 *   every `set` resolves without storing anything, so a pacer sees misses only.
 * @property {string} name The database name.
 * @property {number} maxEntries
 * @property {number} ttlMs
 * @property {(key: string) => Promise<string | undefined>} get The value stored under
 *   `key`, or `undefined` when absent or older than `ttlMs` (an expired entry is then
 *   deleted in the background). One keyed read in a read-only transaction; the gets made
 *   in the same turn share that transaction. Rejects on failure (e.g. the database cannot
 *   be opened); a key that is not a non-empty string rejects with a TypeError.
 * @property {(key: string, value: string) => Promise<void>} set Stores `value` under `key`
 *   with a fresh write time (re-setting a key refreshes it); resolves when the write
 *   transaction has committed, rejects on failure (quota, closed database ...). The sets
 *   made in the same turn share one transaction and succeed or fail together.
 * @property {() => Promise<number>} size The number of stored entries (expired ones not
 *   yet deleted included); 0 when unavailable.
 * @property {() => Promise<number>} prune Deletes the expired entries and the oldest
 *   beyond `maxEntries` now; resolves with the number deleted.
 * @property {() => Promise<void>} clear Deletes every entry.
 * @property {() => void} close Closes the connection; the next call opens it again.
 */

/**
 * A persistent store for `new BatchPacer(provider, { cache })`, kept in IndexedDB so that
 * translations outlive an extension service worker that the browser stops when idle.
 *
 * Layout: database `name` (version 1), object store `"entries"` with key path `"key"`,
 * records `{ key, value, at }` where `at` is `Date.now()` at the write, and an index `"at"`.
 * The connection is opened on first use and reused; when another context upgrades or
 * deletes the database (`versionchange`) or the browser closes it, it is closed and opened
 * again on the next call. An open that stays blocked rejects the waiting calls (misses).
 *
 * Eviction: the store keeps an approximate entry count (counted once when the connection
 * opens, then +1 per new key written through this store). Only when it exceeds
 * `maxEntries + floor(maxEntries / 10)` does a separate transaction delete the oldest
 * entries down to `maxEntries` (and every expired one) through the `"at"` index, so a
 * `set` costs one small transaction and the database briefly holds up to 10% more than
 * `maxEntries`. Writes from other contexts sharing the database are not counted by this
 * instance, so the bound is approximate there; each instance still evicts in time.
 * Entries written in the same millisecond are ordered by key for eviction.
 *
 * Without IndexedDB (Node, some privacy modes) creation does not throw: `available` is
 * `false`, `get` resolves `undefined` and `set` resolves.
 *
 * @param {IndexedDBCacheOptions} [options]
 * @returns {IndexedDBCache}
 * @throws {PacerError} code `invalid_options` (with `option`) for an option with an invalid
 *   value, or an unknown option name, e.g.
 *   `maxEntries must be an integer >= 1 (got 0)`.
 */
export function indexedDBCache(options = {}) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new PacerError("invalid_options", `indexedDBCache options must be an object (got ${show(options)})`);
  }
  for (const option of Object.keys(options)) {
    if (!OPTION_NAMES.includes(option)) {
      throw new PacerError("invalid_options", `unknown indexedDBCache option ${JSON.stringify(option)}`, { option });
    }
  }
  const {
    name = "batch-pacer",
    maxEntries = 10000,
    ttlMs = 7 * 24 * 3600 * 1000,
  } = options;
  if (typeof name !== "string" || name.length === 0) {
    throw new PacerError("invalid_options", `name must be a non-empty string (got ${show(name)})`, { option: "name" });
  }
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new PacerError("invalid_options", `maxEntries must be an integer >= 1 (got ${show(maxEntries)})`, { option: "maxEntries" });
  }
  if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new PacerError("invalid_options", `ttlMs must be a finite number > 0 (got ${show(ttlMs)})`, { option: "ttlMs" });
  }

  let factory;
  try {
    factory = globalThis.indexedDB;
  } catch {
    factory = undefined; // some sandboxed contexts throw on access
  }
  const available = factory != null && typeof factory.open === "function";
  const slack = Math.floor(maxEntries / 10);

  if (!available) {
    return Object.freeze({
      available: false,
      name,
      maxEntries,
      ttlMs,
      get: async (key) => {
        checkKey(key);
        return undefined;
      },
      set: async (key, value) => {
        checkKey(key);
        checkValue(value);
      },
      size: async () => 0,
      prune: async () => 0,
      clear: async () => {},
      close: () => {},
    });
  }

  /**
   * The open connection with its bookkeeping: `base` is the entry count read at open (null
   * until known), `added` the new keys written since.
   * @type {{ db: IDBDatabase, base: number | null, added: number, counting: boolean } | null}
   */
  let current = null;
  /** @type {Promise<object> | null} */
  let opening = null;
  /** @type {Promise<number> | null} */
  let evicting = null;

  function adopt(db) {
    const conn = { db, base: null, added: 0, counting: false };
    current = conn;
    db.onversionchange = () => {
      // Another context upgrades or deletes the database: step aside, reopen later.
      db.close();
      drop(conn);
    };
    db.onclose = () => drop(conn); // closed by the browser (storage cleared, disk error)
    countEntries(conn);
    return conn;
  }

  function drop(conn) {
    if (current === conn) current = null;
  }

  function connect() {
    if (current) return Promise.resolve(current);
    if (opening) return opening;
    opening = new Promise((resolve, reject) => {
      let settled = false;
      const fail = (error) => {
        if (settled) return;
        settled = true;
        opening = null;
        reject(error);
      };
      let request;
      try {
        request = factory.open(name, VERSION);
      } catch (error) {
        fail(error); // e.g. SecurityError on an opaque origin
        return;
      }
      request.onupgradeneeded = () => {
        const db = request.result;
        if (!db.objectStoreNames.contains(STORE)) {
          const store = db.createObjectStore(STORE, { keyPath: "key" });
          store.createIndex(AT_INDEX, "at");
        }
      };
      request.onsuccess = () => {
        const db = request.result;
        if (settled) {
          // The open was reported blocked and its callers have had their miss; keep the
          // late connection if nothing else is open or opening, else let it go.
          if (!current && !opening) adopt(db);
          else db.close();
          return;
        }
        settled = true;
        opening = null;
        resolve(adopt(db));
      };
      request.onerror = (event) => {
        event?.preventDefault?.();
        fail(request.error ?? new Error(`IndexedDB: cannot open database ${JSON.stringify(name)}`));
      };
      request.onblocked = () => {
        fail(new Error(`IndexedDB: opening database ${JSON.stringify(name)} is blocked by another connection`));
      };
    });
    return opening;
  }

  /** A transaction on the store; retried once on a connection that was closing. */
  async function transaction(mode) {
    for (let attempt = 0; ; attempt++) {
      const conn = await connect();
      try {
        const tx = mode === "readwrite"
          ? conn.db.transaction(STORE, mode, RELAXED)
          : conn.db.transaction(STORE, mode);
        return { tx, conn };
      } catch (error) {
        drop(conn);
        conn.db.close();
        if (attempt >= 1 || error?.name !== "InvalidStateError") throw error;
      }
    }
  }

  /** Resolves with `read()` when the transaction commits; rejects when it aborts. */
  function committed(tx, read = () => undefined) {
    return new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve(read());
      tx.onabort = () => reject(tx.error ?? new Error("IndexedDB: transaction aborted"));
    });
  }

  function countEntries(conn) {
    if (conn.counting || conn.base !== null) return;
    conn.counting = true;
    let tx;
    try {
      tx = conn.db.transaction(STORE, "readonly");
    } catch {
      conn.counting = false;
      return;
    }
    const request = tx.objectStore(STORE).count();
    committed(tx).then(
      () => {
        conn.counting = false;
        conn.base = request.result;
      },
      () => {
        conn.counting = false; // counted again after the next write
      },
    );
  }

  function isExpired(record, now) {
    return !(typeof record.at === "number" && now - record.at <= ttlMs);
  }

  function maybeEvict(conn) {
    if (conn !== current) return;
    if (conn.base === null) {
      countEntries(conn);
      return;
    }
    if (!evicting && conn.base + conn.added > maxEntries + slack) {
      evicting = evict(conn).finally(() => {
        evicting = null;
      });
      evicting.catch(() => {}); // a failed eviction is retried after a later write
    }
  }

  /**
   * Deletes the expired entries and the oldest beyond `maxEntries`, oldest first, in one
   * transaction; resets the approximate count to the exact result.
   */
  function evict(conn) {
    let tx;
    try {
      tx = conn.db.transaction(STORE, "readwrite", RELAXED);
    } catch (error) {
      drop(conn);
      return Promise.reject(error);
    }
    return evictIn(tx, conn);
  }

  function evictIn(tx, conn) {
    const store = tx.objectStore(STORE);
    const cutoff = Date.now() - ttlMs;
    let total = 0;
    let removed = 0;
    const counting = store.count();
    counting.onsuccess = () => {
      total = counting.result;
      let excess = total - maxEntries;
      const cursorRequest = store.index(AT_INDEX).openKeyCursor();
      cursorRequest.onsuccess = () => {
        const cursor = cursorRequest.result;
        if (!cursor) return;
        if (excess > 0 || !(cursor.key >= cutoff)) {
          store.delete(cursor.primaryKey);
          excess--;
          removed++;
          cursor.continue();
        }
      };
    };
    return committed(tx, () => {
      conn.base = total - removed;
      conn.added = 0;
      return removed;
    });
  }

  /** Deletes `key` if it is still expired (a concurrent `set` may have refreshed it). */
  async function deleteIfExpired(key) {
    const { tx, conn } = await transaction("readwrite");
    const store = tx.objectStore(STORE);
    const request = store.get(key);
    let deleted = false;
    request.onsuccess = () => {
      const record = request.result;
      if (record && isExpired(record, Date.now())) {
        store.delete(key);
        deleted = true;
      }
    };
    await committed(tx);
    if (deleted && conn.base !== null) conn.added--;
  }

  // Calls made in the same turn share one transaction: a pacer looking up the paragraphs
  // of a page, or storing the translations of a batch, costs one transaction, not one each.
  /** @type {{ key: string, resolve: Function, reject: Function }[] | null} */
  let reads = null;
  /** @type {{ key: string, value: string, resolve: Function, reject: Function }[] | null} */
  let writes = null;

  function get(key) {
    return new Promise((resolve, reject) => {
      checkKey(key);
      if (!reads) {
        reads = [];
        runReads();
      }
      reads.push({ key, resolve, reject });
    });
  }

  function set(key, value) {
    return new Promise((resolve, reject) => {
      checkKey(key);
      checkValue(value);
      if (!writes) {
        writes = [];
        runWrites();
      }
      writes.push({ key, value, resolve, reject });
    });
  }

  /** One read-only transaction, one keyed `get` per queued call, answered as each arrives. */
  async function runReads() {
    let tx;
    try {
      ({ tx } = await transaction("readonly"));
    } catch (error) {
      const failed = reads;
      reads = null;
      for (const call of failed) call.reject(error);
      return;
    }
    const calls = reads;
    reads = null; // later calls start the next transaction
    const store = tx.objectStore(STORE);
    tx.onabort = () => {
      const error = tx.error ?? new Error("IndexedDB: transaction aborted");
      for (const call of calls) call.reject(error); // no effect on those already answered
    };
    for (const call of calls) {
      const request = store.get(call.key);
      request.onsuccess = () => call.resolve(answer(call.key, request.result));
      request.onerror = (event) => {
        event.preventDefault(); // the other reads of the transaction go on
        call.reject(request.error);
      };
    }
  }

  function answer(key, record) {
    if (record === undefined || record === null) return undefined;
    if (isExpired(record, Date.now())) {
      deleteIfExpired(key).catch(() => {}); // opportunistic; the answer does not wait
      return undefined;
    }
    return typeof record.value === "string" ? record.value : undefined;
  }

  /**
   * One read-write transaction for the queued writes; they resolve together when it
   * commits and reject together when it aborts.
   */
  async function runWrites() {
    let tx;
    let conn;
    try {
      ({ tx, conn } = await transaction("readwrite"));
    } catch (error) {
      const failed = writes;
      writes = null;
      for (const call of failed) call.reject(error);
      return;
    }
    const calls = writes;
    writes = null;
    const store = tx.objectStore(STORE);
    const at = Date.now();
    // Requests run in order: each count sees the puts before it and tells a new key apart.
    const existing = calls.map((call) => {
      const count = store.count(call.key);
      store.put({ key: call.key, value: call.value, at });
      return count;
    });
    try {
      await committed(tx);
    } catch (error) {
      for (const call of calls) call.reject(error);
      return;
    }
    for (const count of existing) if (count.result === 0) conn.added++;
    // Created before the writes resolve, so the caller's next write queues behind it.
    maybeEvict(conn);
    for (const call of calls) call.resolve();
  }

  async function size() {
    const { tx } = await transaction("readonly");
    const request = tx.objectStore(STORE).count();
    return committed(tx, () => request.result);
  }

  async function prune() {
    if (evicting) await evicting.catch(() => {});
    const { tx, conn } = await transaction("readwrite");
    return evictIn(tx, conn);
  }

  async function clear() {
    const { tx, conn } = await transaction("readwrite");
    tx.objectStore(STORE).clear();
    await committed(tx);
    conn.base = 0;
    conn.added = 0;
  }

  function close() {
    const conn = current;
    if (!conn) return;
    drop(conn);
    conn.db.close(); // transactions already started still complete
  }

  return Object.freeze({ available: true, name, maxEntries, ttlMs, get, set, size, prune, clear, close });
}

function checkKey(key) {
  if (typeof key !== "string" || key.length === 0) {
    throw new TypeError(`key must be a non-empty string (got ${show(key)})`);
  }
}

function checkValue(value) {
  if (typeof value !== "string") {
    throw new TypeError(`value must be a string (got ${show(value)})`);
  }
}

function show(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  return String(value);
}
