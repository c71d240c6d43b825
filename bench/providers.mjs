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
 * A provider that enforces a quota as a strict token bucket (`rate` calls per second,
 * burst `burst`, full at start) and answers after `latencyMs` on `clock` (a fake-timers
 * clock): the joined echo, or a 429 with `retryAfterMs` = the time until its next token,
 * rounded up to whole seconds as an HTTP Retry-After header carries it. The quota is
 * checked when the request arrives. `log` counts calls, 429s and items, and keeps each
 * successful call's start time and item count.
 */
export function quotaProvider(clock, { rate, burst = 1, latencyMs = 300 }) {
  const log = { calls: 0, rateLimited: 0, items: 0, succeeded: [] };
  let tokens = burst;
  let refilledAt = clock.now;
  const perMs = rate / 1000;
  const provider = (req) => {
    const now = clock.now;
    tokens = Math.min(burst, tokens + (now - refilledAt) * perMs);
    refilledAt = now;
    log.calls++;
    let outcome;
    if (tokens >= 1 - 1e-9) {
      tokens -= 1;
      log.items += req.texts.length;
      log.succeeded.push({ at: now, items: req.texts.length });
      outcome = { ok: true, value: req.text };
    } else {
      log.rateLimited++;
      const waitMs = (1 - tokens) / perMs;
      outcome = { ok: false, error: tooManyRequests(Math.max(1000, Math.ceil(waitMs / 1000) * 1000)) };
    }
    return new Promise((resolve, reject) => {
      clock.setTimeout(() => (outcome.ok ? resolve(outcome.value) : reject(outcome.error)), latencyMs);
    });
  };
  return { provider, log };
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
