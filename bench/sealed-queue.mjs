// A small scheduler that mirrors Read Frog's queues (wuchunfu/read-frog,
// src/utils/request), for workloads 4 and 7: a BatchQueue seals each batch when it becomes
// due (full, or batchDelayMs after its first item) and hands it to a RequestQueue, a
// lazily refilled token bucket that starts queued requests in order as tokens come. A
// sealed batch takes no more items, however long it then waits. Failures follow its
// default retry policy: a 429, 401, 403 or 404 rejects every queued and running request
// (the whole backlog); a network error, timeout, 408, 409 or 5xx is retried twice, after
// 1 s then 2 s; anything else rejects the batch.

import { request, splitReply } from "./providers.mjs";

export class SealedWhenDue {
  #provider;
  #options;
  #clock;
  #open = new Map(); // compatibility key -> { entries, chars, timer }
  #ready = []; // sealed batches waiting for a token, in order
  #tokens;
  #refilledAt;
  #wakeTimer = null;
  #running = new Set();
  calls = 0;

  /**
   * @param {(req: object) => Promise<string>} provider
   * @param {{ rate: number, capacity: number, maxItemsPerBatch: number,
   *   maxCharactersPerBatch: number, batchDelayMs: number,
   *   clock: { now: number, setTimeout: Function, clearTimeout: Function } }} options
   */
  constructor(provider, options) {
    this.#provider = provider;
    this.#options = options;
    this.#clock = options.clock;
    this.#tokens = options.capacity;
    this.#refilledAt = this.#clock.now;
  }

  translate(item) {
    return new Promise((resolve, reject) => {
      const { maxItemsPerBatch, maxCharactersPerBatch, batchDelayMs } = this.#options;
      const key = `${item.sourceLang}\u0000${item.targetLang}`;
      let batch = this.#open.get(key);
      if (batch && batch.chars + item.text.length > maxCharactersPerBatch) {
        this.#seal(key);
        batch = undefined;
      }
      if (!batch) {
        batch = { entries: [], chars: 0, item, timer: null };
        batch.timer = this.#clock.setTimeout(() => this.#seal(key), batchDelayMs);
        this.#open.set(key, batch);
      }
      batch.entries.push({ text: item.text, resolve, reject });
      batch.chars += item.text.length;
      if (batch.entries.length >= maxItemsPerBatch || batch.chars >= maxCharactersPerBatch) this.#seal(key);
    });
  }

  #seal(key) {
    const batch = this.#open.get(key);
    if (!batch) return;
    this.#open.delete(key);
    this.#clock.clearTimeout(batch.timer);
    batch.scheduleAt = this.#clock.now;
    batch.retries = 0;
    this.#ready.push(batch);
    this.#schedule();
  }

  #schedule() {
    const { rate, capacity } = this.#options;
    const now = this.#clock.now;
    this.#tokens = Math.min(capacity, this.#tokens + ((now - this.#refilledAt) * rate) / 1000);
    this.#refilledAt = now;
    while (this.#ready.length > 0 && this.#tokens >= 1 - 1e-9 && this.#ready[0].scheduleAt <= now) {
      this.#tokens -= 1;
      this.#start(this.#ready.shift());
    }
    if (this.#ready.length > 0 && this.#wakeTimer === null) {
      const untilToken = Math.ceil(((1 - this.#tokens) * 1000) / rate);
      const waitMs = Math.max(1, untilToken, this.#ready[0].scheduleAt - now);
      this.#wakeTimer = this.#clock.setTimeout(() => {
        this.#wakeTimer = null;
        this.#schedule();
      }, waitMs);
    }
  }

  async #start(batch) {
    this.calls++;
    this.#running.add(batch);
    const texts = batch.entries.map((e) => e.text);
    const { sourceLang, targetLang } = batch.item;
    try {
      const reply = await this.#provider(request(texts, sourceLang, targetLang));
      if (!this.#running.delete(batch)) return; // rejected with the backlog meanwhile
      const parts = splitReply(reply, texts.length);
      batch.entries.forEach((entry, i) => entry.resolve(parts[i]));
    } catch (error) {
      if (!this.#running.delete(batch)) return;
      const status = error?.status;
      if (status === 429 || status === 401 || status === 403 || status === 404) {
        for (const b of [batch, ...this.#ready, ...this.#running]) for (const entry of b.entries) entry.reject(error);
        this.#ready = [];
        this.#running.clear();
        return;
      }
      const transient = status === undefined || status === 408 || status === 409 || status >= 500;
      if (transient && batch.retries < 2) {
        batch.scheduleAt = this.#clock.now + 1000 * 2 ** batch.retries;
        batch.retries++;
        this.#ready.push(batch);
        this.#ready.sort((a, b) => a.scheduleAt - b.scheduleAt);
        this.#schedule();
        return;
      }
      for (const entry of batch.entries) entry.reject(error);
    }
  }
}
