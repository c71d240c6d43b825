// Providers of the benchmarks and the request shape the other libraries are given, so
// that every implementation pays for the same provider work.

/** Read Frog's batch separator; the baselines join and split with it. */
export const SEPARATOR = "\n\n%%\n\n";

/** A provider request for `texts` (a batch when there are several). */
export function request(texts, sourceLang = "en", targetLang = "de") {
  return {
    texts,
    text: texts.join(SEPARATOR),
    separator: SEPARATOR,
    isBatch: texts.length > 1,
    sourceLang,
    targetLang,
    providerId: "bench",
    context: "",
    attempt: 0,
  };
}

/** Splits a batch reply made of `count` segments (what a baseline does with it). */
export function splitReply(reply, count) {
  const parts = typeof reply === "string" ? reply.split(SEPARATOR) : reply;
  if (parts.length !== count) throw new Error(`count mismatch: ${parts.length} for ${count}`);
  return parts;
}

/** Answers at once with the joined echo of the request, as an already resolved promise. */
export const instantProvider = (req) => Promise.resolve(req.text);

/** An HTTP 429 as a provider's fetch wrapper would throw it. */
function tooManyRequests(retryAfterMs) {
  return Object.assign(new Error("HTTP 429"), { status: 429, retryAfterMs, retryAfter: retryAfterMs / 1000 });
}

/**
 * A provider that enforces a quota and answers after `latencyMs` on `clock` (a
 * fake-timers clock): the joined echo, or a 429 with `retryAfterMs` = the time until the
 * quota admits a call again, rounded up to whole seconds as an HTTP Retry-After header
 * carries it. The quota is checked when the request arrives. It is either a strict token
 * bucket (`rate` calls per second, burst `burst`, full at start) or, with `window`, a
 * count per fixed window (`window.cap` calls per `window.ms`, the counter reset at each
 * window's start, as many free tiers count per calendar minute). `log` counts calls,
 * 429s and items, and keeps each successful call's start time and item count.
 */
export function quotaProvider(clock, { rate, burst = 1, window, latencyMs = 300 }) {
  const log = { calls: 0, rateLimited: 0, items: 0, succeeded: [] };
  const admit = window ? windowAdmission(clock, window) : bucketAdmission(clock, rate, burst);
  const provider = (req) => {
    const now = clock.now;
    log.calls++;
    const waitMs = admit(now);
    let outcome;
    if (waitMs === 0) {
      log.items += req.texts.length;
      log.succeeded.push({ at: now, items: req.texts.length });
      outcome = { ok: true, value: req.text };
    } else {
      log.rateLimited++;
      outcome = { ok: false, error: tooManyRequests(Math.max(1000, Math.ceil(waitMs / 1000) * 1000)) };
    }
    return new Promise((resolve, reject) => {
      clock.setTimeout(() => (outcome.ok ? resolve(outcome.value) : reject(outcome.error)), latencyMs);
    });
  };
  return { provider, log };
}

/** Admits a call at `now` (returns 0) or returns the wait until its next token. */
function bucketAdmission(clock, rate, burst) {
  let tokens = burst;
  let refilledAt = clock.now;
  const perMs = rate / 1000;
  return (now) => {
    tokens = Math.min(burst, tokens + (now - refilledAt) * perMs);
    refilledAt = now;
    if (tokens >= 1 - 1e-9) {
      tokens -= 1;
      return 0;
    }
    return (1 - tokens) / perMs;
  };
}

/** Admits a call at `now` (returns 0) or returns the wait until the next window. */
function windowAdmission(clock, { ms, cap }) {
  const start = clock.now;
  let current = -1;
  let used = 0;
  return (now) => {
    const index = Math.floor((now - start) / ms);
    if (index !== current) [current, used] = [index, 0];
    if (used < cap) {
      used++;
      return 0;
    }
    return start + (index + 1) * ms - now;
  };
}

/** Groups texts, in order, into batches of at most `maxItems` and `maxChars`. */
export function groups(texts, { maxItems = 4, maxChars = 1000 } = {}) {
  const out = [];
  let current = [];
  let chars = 0;
  for (const text of texts) {
    if (current.length > 0 && (current.length === maxItems || chars + text.length > maxChars)) {
      out.push(current);
      current = [];
      chars = 0;
    }
    current.push(text);
    chars += text.length;
  }
  if (current.length) out.push(current);
  return out;
}

/** The fewest calls that carry `texts`, in order, at `maxItems` / `maxChars` per batch. */
export const packedCalls = (texts, limits) => groups(texts, limits).length;

/**
 * The fewest calls found when order does not matter (first-fit decreasing bin packing at
 * `maxItems` / `maxChars`): what a batcher free to reorder a whole page could reach.
 */
export function packedCallsAnyOrder(texts, { maxItems = 4, maxChars = 1000 } = {}) {
  const bins = [];
  for (const length of texts.map((t) => t.length).sort((a, b) => b - a)) {
    const bin = bins.find((b) => b.items < maxItems && b.chars + length <= maxChars);
    if (bin) {
      bin.items++;
      bin.chars += length;
    } else {
      bins.push({ items: 1, chars: length });
    }
  }
  return bins.length;
}
