// N pacers sharing one provider quota, on one private virtual clock: the simulation behind
// the workload "A quota shared with other clients" (bench/workload-shared-quota.mjs) and
// the package test tests/node/shared-quota.test.mjs. It takes the `BatchPacer` class, so
// the bench can run a baseline build and the tests the installed package.
//
// The quota, one object every pacer's provider calls: 60 requests and 30,000 tokens a
// minute, each a bucket holding a minute's worth (1 request and 500 tokens a second),
// refilled continuously, full at the start. A call is admitted when the requests bucket
// holds 1 and the tokens bucket holds the call's tokens, and charged then; else it is a
// 429 whose retryAfterMs is the exact wait until both hold it. A call's tokens:
// ceil((text + instructions characters) / 4) in, ceil(texts' characters / 4) out.
// Every answer (reply or 429) comes LATENCY_MS after the call reached the quota and
// carries the quota's state as of its sending.

import { prng } from "./data.mjs";
import { privateClock } from "./virtual-time.mjs";

export const QUOTA = Object.freeze({ requestsPerMinute: 60, tokensPerMinute: 30_000 });
/** One call's latency, replies and 429s alike. */
export const LATENCY_MS = 1500;
/** "The seeds' preset" for a quota of 60 requests a minute. */
export const SEEDS_PRESET = Object.freeze({ rate: 1, capacity: 1 });
/** Retries that start within one window of this length make one herd. */
export const HERD_WINDOW_MS = 100;
/** Virtual time a run may take before the pages still unsettled count as stalled. */
export const LIMIT_MS = 6 * 3600_000;

const TEN_MINUTES_MS = 600_000;
const WORDS = (
  "the of and to in is that for it as was with be by on not this are or from at which but have an they " +
  "you were she there been one all we their has would when if so no will more other its into only time " +
  "could new them about than may first any like these some two translation browser extension paragraph " +
  "quota request model provider language reader page window share client key team"
).split(" ");

/**
 * Pacer `index`'s page: `count` distinct paragraphs of 280–320 characters (about 300),
 * different from every other pacer's, the same on every run.
 */
export function page(index, count) {
  const random = prng(9_001 + index);
  const out = new Array(count);
  for (let i = 0; i < count; i++) {
    const length = 280 + Math.floor(random() * 41);
    let text = `Page ${index}, paragraph ${i}:`;
    while (text.length < length) text += ` ${WORDS[Math.floor(random() * WORDS.length)]}`;
    out[i] = `${text.slice(0, length - 1).trimEnd()}.`;
  }
  return out;
}

/** A call's tokens as the quota charges them (the text as sent, its instructions, the answer). */
export function callTokens(request) {
  const prompt = request.text.length + (request.instructions ?? "").length;
  const answer = request.texts.reduce((sum, text) => sum + text.length, 0);
  const inputTokens = Math.ceil(prompt / 4);
  const outputTokens = Math.ceil(answer / 4);
  return { inputTokens, outputTokens, total: inputTokens + outputTokens };
}

/** A bucket holding a minute's worth of `perMinute`, refilled continuously, full at `now`. */
class MinuteBucket {
  #size;
  #perMs;
  #level;
  #at;

  constructor(perMinute, now) {
    this.#size = perMinute;
    this.#perMs = perMinute / 60_000;
    this.#level = perMinute;
    this.#at = now;
  }

  level(now) {
    this.#level = Math.min(this.#size, this.#level + (now - this.#at) * this.#perMs);
    this.#at = now;
    return this.#level;
  }

  /** Milliseconds from `now` until the bucket holds `amount` (0 when it does). */
  waitFor(amount, now) {
    // A millionth of slack: a call started on the very millisecond its room is due is
    // admitted whatever the float rounding.
    const missing = amount - this.level(now);
    return missing <= 1e-6 ? 0 : missing / this.#perMs;
  }

  take(amount, now) {
    this.#level = this.level(now) - amount;
  }

  /** What is left, floored, as a header gives it. */
  remaining(now) {
    return Math.max(0, Math.floor(this.level(now) + 1e-9));
  }

  /** Milliseconds until the bucket is whole again, rounded up. */
  resetMs(now) {
    return Math.max(0, Math.ceil((this.#size - this.level(now)) / this.#perMs - 1e-9));
  }
}

/** The one quota every client calls. `wholeWindow`: its reports carry the whole windows. */
class SharedQuota {
  #clock;
  #requests;
  #tokens;
  #wholeWindow;

  constructor(clock, wholeWindow) {
    this.#clock = clock;
    this.#requests = new MinuteBucket(QUOTA.requestsPerMinute, clock.now);
    this.#tokens = new MinuteBucket(QUOTA.tokensPerMinute, clock.now);
    this.#wholeWindow = wholeWindow;
    this.accepted = 0;
    this.acceptedTokens = 0;
  }

  /** Milliseconds until both buckets hold a call of `tokens` (0 when they do). */
  waitFor(tokens) {
    const now = this.#clock.now;
    return Math.max(this.#requests.waitFor(1, now), this.#tokens.waitFor(tokens, now));
  }

  /** Admits and charges a call of `tokens` now, or refuses it (false). */
  admit(tokens) {
    if (this.waitFor(tokens) > 0) return false;
    this.#requests.take(1, this.#clock.now);
    this.#tokens.take(tokens, this.#clock.now);
    this.accepted++;
    this.acceptedTokens += tokens;
    return true;
  }

  /** Everything the buckets hold now (another client's calls): what it took. */
  takeAll() {
    const now = this.#clock.now;
    const requests = this.#requests.remaining(now);
    const tokens = requests > 0 ? this.#tokens.level(now) : 0;
    this.#requests.take(requests, now);
    this.#tokens.take(tokens, now);
    return { requests, tokens };
  }

  /** The quota's state now, as `x-ratelimit-*` headers give it. */
  limits() {
    const now = this.#clock.now;
    return {
      requestsRemaining: this.#requests.remaining(now),
      requestsResetMs: this.#requests.resetMs(now),
      tokensRemaining: this.#tokens.remaining(now),
      tokensResetMs: this.#tokens.resetMs(now),
      ...(this.#wholeWindow ? { requestsLimit: QUOTA.requestsPerMinute, tokensLimit: QUOTA.tokensPerMinute } : {}),
    };
  }
}

/**
 * The retries that 429s set off: a 429-answered call's retry is the next call of the same
 * pacer carrying any of its texts (the pages' texts are distinct, so no other call can).
 * `largest()` is the most retries that started within one window of HERD_WINDOW_MS
 * (windows fixed on the clock: [0, 100), [100, 200) ms …).
 */
class HerdCounter {
  #waiting = new Map(); // `${pacer}\u0000${text}` → the 429 awaiting its retry
  #byWindow = new Map(); // window index → retries started in it
  retries = 0;
  firstTries = 0; // retries whose request said attempt 0 (a pacer that does not count them)

  answered429(pacer, request) {
    const refused = { retried: false };
    for (const text of request.texts) this.#waiting.set(`${pacer}\u0000${text}`, refused);
  }

  started(pacer, request, now) {
    for (const text of request.texts) {
      const key = `${pacer}\u0000${text}`;
      const refused = this.#waiting.get(key);
      if (!refused) continue;
      this.#waiting.delete(key);
      if (refused.retried) continue;
      refused.retried = true;
      this.retries++;
      if (!(request.attempt >= 1)) this.firstTries++;
      const window = Math.floor(now / HERD_WINDOW_MS);
      this.#byWindow.set(window, (this.#byWindow.get(window) ?? 0) + 1);
    }
  }

  largest() {
    let most = 0;
    for (const count of this.#byWindow.values()) most = Math.max(most, count);
    return most;
  }
}

/** Jain's fairness index of `values`: 1 when all are equal, 1/n when one has everything. */
export function jain(values) {
  const sum = values.reduce((a, b) => a + b, 0);
  const squares = values.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? NaN : (sum * sum) / (values.length * squares);
}

/**
 * One run. `pacers` pacers, each with its own page of `paragraphs` paragraphs and its own
 * provider function over the one quota, built with `options` (plus the clock).
 * `arrival`: "random" (each page at a seeded-random time within the first minute, all
 * its paragraphs translated at that instant) or "together" (all at t = 0). `reports`:
 * "whole" (usage, and limits with the whole windows, on every reply and 429), "partial"
 * (the same without requestsLimit / tokensLimit) or "none" (plain replies, 429s with
 * retryAfterMs only). `otherClientMs` > 0: another client (not a pacer) takes everything
 * the quota holds at t = 0 and then every second, until that time.
 */
export async function simulateSharedQuota({
  BatchPacer,
  pacers: count,
  paragraphs = 200,
  options = {},
  arrival = "random",
  reports = "whole",
  otherClientMs = 0,
  seed = 1,
  stepMs = 1000,
  limitMs = LIMIT_MS,
}) {
  const wallStart = performance.now();
  const random = Math.random;
  Math.random = prng(seed); // every pacer draws its own seed (backoff jitter) from it
  const { clock, pacerClock } = privateClock();
  const quota = new SharedQuota(clock, reports === "whole");
  const herds = new HerdCounter();
  const arrivals = prng(seed + 7_919);
  const runs = Array.from({ length: count }, (_, index) => ({
    index,
    texts: page(index, paragraphs),
    arrivalAt: arrival === "random" ? Math.floor(arrivals() * 60_000) : 0,
    firstReplyAt: Infinity,
    lastSettledAt: NaN,
    failed: 0,
    misplaced: 0,
    calls: 0,
    rateLimited: 0,
    rateLimitedAfterFirstReply: 0,
    accepted: [], // { at, tokens } of each admitted call
    roomAt: NaN, // the first report after the other client stopped that shows room
  }));
  const other = { calls: 0, tokens: 0 };

  const answer = (outcome) =>
    new Promise((resolve, reject) =>
      clock.setTimeout(() => {
        try {
          resolve(outcome());
        } catch (error) {
          reject(error);
        }
      }, LATENCY_MS),
    );
  const providerOf = (run) => (request) => {
    const at = clock.now;
    run.calls++;
    herds.started(run.index, request, at);
    const tokens = callTokens(request);
    const noteRoom = (limits) => {
      if (otherClientMs > 0 && Number.isNaN(run.roomAt) && clock.now >= otherClientMs && limits.requestsRemaining >= 1 && limits.tokensRemaining >= tokens.total) {
        run.roomAt = clock.now;
      }
    };
    if (quota.admit(tokens.total)) {
      run.accepted.push({ at, tokens: tokens.total });
      return answer(() => {
        run.firstReplyAt = Math.min(run.firstReplyAt, clock.now);
        if (reports === "none") return request.text;
        const limits = quota.limits();
        noteRoom(limits);
        return { translations: request.text, usage: { inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens }, limits };
      });
    }
    run.rateLimited++;
    if (at > run.firstReplyAt) run.rateLimitedAfterFirstReply++;
    return answer(() => {
      herds.answered429(run.index, request);
      const error = Object.assign(new Error("HTTP 429: rate limit reached for requests or tokens per minute"), {
        status: 429,
        retryAfterMs: Math.max(1, Math.ceil(quota.waitFor(tokens.total))),
      });
      if (reports !== "none") {
        error.limits = quota.limits();
        noteRoom(error.limits);
      }
      throw error;
    });
  };

  let pending = count * paragraphs;
  const settle = (run, ok) => {
    pending--;
    if (!ok) run.failed++;
    run.lastSettledAt = clock.now;
  };
  let lastPage = 0;
  let unsettled;
  const instances = [];
  try {
    if (otherClientMs > 0) {
      const takeAll = () => {
        const taken = quota.takeAll();
        other.calls += taken.requests;
        other.tokens += taken.tokens;
        if (clock.now + 1000 < otherClientMs) clock.setTimeout(takeAll, 1000);
      };
      takeAll();
    }
    for (const run of runs) {
      const pacer = new BatchPacer(providerOf(run), { ...options, clock: pacerClock });
      instances.push(pacer);
      lastPage = Math.max(lastPage, run.arrivalAt);
      clock.setTimeout(() => {
        for (const text of run.texts) {
          pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "shared" }).then(
            (translation) => {
              if (translation.trim() !== text.trim()) run.misplaced++;
              settle(run, true);
            },
            () => settle(run, false),
          );
        }
      }, run.arrivalAt);
    }
    while (pending > 0 && clock.now < limitMs) await clock.tickAsync(stepMs);
    unsettled = pending;
  } finally {
    Math.random = random;
    for (const pacer of instances) pacer.dispose();
  }

  const items = count * paragraphs;
  const completedMs = unsettled > 0 ? NaN : Math.max(...runs.map((r) => r.lastSettledAt));
  const boundMs =
    Math.max(
      lastPage,
      ((quota.accepted - QUOTA.requestsPerMinute) * 60_000) / QUOTA.requestsPerMinute,
      ((quota.acceptedTokens - QUOTA.tokensPerMinute) * 60_000) / QUOTA.tokensPerMinute,
    ) + LATENCY_MS;
  // 429s per pacer per 10 minutes after its first reply: over the pacers that had one.
  const replied = runs.filter((r) => Number.isFinite(r.firstReplyAt) && r.lastSettledAt > r.firstReplyAt);
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  const afterFirstReply = sum(runs.map((r) => r.rateLimitedAfterFirstReply));
  const spanMs = sum(replied.map((r) => r.lastSettledAt - r.firstReplyAt));
  const ownRate = (r) => r.rateLimitedAfterFirstReply / ((r.lastSettledAt - r.firstReplyAt) / TEN_MINUTES_MS);
  return {
    pacers: count,
    items,
    failed: sum(runs.map((r) => r.failed)),
    unsettled,
    misplaced: sum(runs.map((r) => r.misplaced)),
    calls: sum(runs.map((r) => r.calls)),
    accepted: quota.accepted,
    acceptedTokens: quota.acceptedTokens,
    rateLimited: sum(runs.map((r) => r.rateLimited)),
    rateLimitedAfterFirstReply: afterFirstReply,
    per10MinAfterFirstReply: spanMs > 0 ? afterFirstReply / (spanMs / TEN_MINUTES_MS) : afterFirstReply > 0 ? Infinity : 0,
    worstPer10Min: replied.length ? Math.max(...replied.map(ownRate)) : NaN,
    neverReplied: runs.length - replied.length,
    completedMs,
    lastPageMs: lastPage,
    boundMs,
    timeOverBound: completedMs / boundMs,
    jain: unsettled > 0 ? NaN : jain(runs.map((r) => paragraphs / Math.max(1, r.lastSettledAt - r.arrivalAt))),
    largestHerd: herds.largest(),
    retries: herds.retries,
    retriesWithoutAttempt: herds.firstTries,
    otherClient: otherClientMs > 0 ? { ...other, ...sharesPerMinute(runs[0]) } : undefined,
    wallMs: performance.now() - wallStart,
  };
}

/**
 * The pacer's share of the quota's refill, minute by minute, from one minute after the
 * first report that showed room again, over the whole minutes before its last admitted
 * call (while it still had paragraphs to send): max(calls / 60, tokens / 30,000).
 */
function sharesPerMinute(run) {
  const shares = [];
  if (Number.isNaN(run.roomAt)) return { roomAt: NaN, shares };
  const lastCallAt = run.accepted.at(-1)?.at ?? -Infinity;
  for (let from = run.roomAt + 60_000; from + 60_000 <= lastCallAt; from += 60_000) {
    const inMinute = run.accepted.filter((c) => c.at >= from && c.at < from + 60_000);
    const tokens = inMinute.reduce((total, c) => total + c.tokens, 0);
    shares.push(Math.max(inMinute.length / QUOTA.requestsPerMinute, tokens / QUOTA.tokensPerMinute));
  }
  return { roomAt: run.roomAt, shares };
}
