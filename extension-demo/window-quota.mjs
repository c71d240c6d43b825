// One provider quota shared by every caller, as OpenAI states its own: `requests` and
// `tokens` per window of `windowMs`, each a bucket that holds one window's worth, refills
// continuously (a window's worth per window) and starts full. A call is admitted when the
// requests bucket holds one request and the tokens bucket the call's tokens, and is charged
// then; a call costing more than a whole window is admitted when the bucket is full, and
// leaves it in debt. `headers` gives the state as OpenAI's `x-ratelimit-*` headers do,
// the whole windows (`x-ratelimit-limit-*`) included. Used by the mock provider's `quota`
// option (mock-provider.mjs).

/** A call arriving up to this early is admitted (clocks and timers are not exact); it owes what it borrowed. */
const EARLY_MS = 5;

export class WindowQuota {
  #requests;
  #tokens;

  /**
   * @param {{ requests: number, tokens: number, windowMs: number }} limits `tokens` 0: no token limit
   * @param {number} now ms on the caller's monotonic clock
   */
  constructor({ requests, tokens, windowMs }, now) {
    this.limits = Object.freeze({ requests, tokens, windowMs });
    this.#requests = bucket(requests, windowMs, now);
    this.#tokens = tokens > 0 ? bucket(tokens, windowMs, now) : null;
  }

  /** Milliseconds from `now` until a call of `cost` tokens fits (0 when it does). */
  waitFor(cost, now) {
    const tokens = this.#tokens === null ? 0 : this.#tokens.waitFor(Math.min(cost, this.#tokens.size), now);
    return Math.max(this.#requests.waitFor(1, now), tokens);
  }

  /** Admits and charges a call of `cost` tokens at `now`: 0, or the ms to wait (nothing charged). */
  admit(cost, now) {
    const wait = this.waitFor(cost, now);
    if (wait > EARLY_MS) return wait;
    this.#requests.take(1, now);
    this.#tokens?.take(cost, now);
    return 0;
  }

  /** The quota's state at `now` as `x-ratelimit-*` headers. */
  headers(now) {
    const out = {};
    for (const [name, b] of [["requests", this.#requests], ["tokens", this.#tokens]]) {
      if (b === null) continue;
      out[`x-ratelimit-limit-${name}`] = String(b.size);
      out[`x-ratelimit-remaining-${name}`] = String(b.remaining(now));
      // As OpenAI gives it: the time until the bucket is whole again.
      out[`x-ratelimit-reset-${name}`] = `${(b.untilFull(now) / 1000).toFixed(3)}s`;
    }
    return out;
  }
}

/** A bucket of `size`, refilled by `size` per `windowMs`, full at `now`. */
function bucket(size, windowMs, now) {
  const perMs = size / windowMs;
  let level = size;
  let at = now;
  const refill = (t) => {
    level = Math.min(size, level + Math.max(0, t - at) * perMs);
    at = Math.max(at, t);
    return level;
  };
  return {
    size,
    waitFor: (amount, t) => Math.max(0, (amount - refill(t)) / perMs),
    take(amount, t) {
      level = refill(t) - amount;
    },
    remaining: (t) => Math.max(0, Math.floor(refill(t) + 1e-9)),
    untilFull: (t) => Math.max(0, (size - refill(t)) / perMs),
  };
}
