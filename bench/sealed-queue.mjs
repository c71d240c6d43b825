// A small scheduler that mirrors Read Frog's queues, for workload 4: a BatchQueue seals
// each batch when it becomes due (full, or batchDelayMs after its first item) and hands
// it to a RequestQueue, a lazily refilled token bucket that starts queued requests in
// order as tokens come. A sealed batch takes no more items, however long it then waits.

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
    this.#ready.push(batch);
    this.#schedule();
  }

  #schedule() {
    const { rate, capacity } = this.#options;
    const now = this.#clock.now;
    this.#tokens = Math.min(capacity, this.#tokens + ((now - this.#refilledAt) * rate) / 1000);
    this.#refilledAt = now;
    while (this.#ready.length > 0 && this.#tokens >= 1 - 1e-9) {
      this.#tokens -= 1;
      this.#start(this.#ready.shift());
    }
    if (this.#ready.length > 0 && this.#wakeTimer === null) {
      const waitMs = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / rate));
      this.#wakeTimer = this.#clock.setTimeout(() => {
        this.#wakeTimer = null;
        this.#schedule();
      }, waitMs);
    }
  }

  async #start(batch) {
    this.calls++;
    const texts = batch.entries.map((e) => e.text);
    const { sourceLang, targetLang } = batch.item;
    try {
      const reply = await this.#provider(request(texts, sourceLang, targetLang));
      const parts = splitReply(reply, texts.length);
      batch.entries.forEach((entry, i) => entry.resolve(parts[i]));
    } catch (error) {
      for (const entry of batch.entries) entry.reject(error);
    }
  }
}
