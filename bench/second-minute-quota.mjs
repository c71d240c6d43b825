// A second requests-and-tokens-per-minute provider, written apart from bench/minute-quota.mjs
// so that workload 9's figures do not rest on one mock alone (issue "Fallback providers").
// Where the first mock charges a call's whole cost when the request arrives, this one
// charges what a server can know at each moment:
//
// - two limits, requests and tokens, each a bucket holding a minute's worth, refilled
//   continuously, full at start;
// - a request is admitted when the request bucket holds one request and the token bucket
//   holds the request's input: o200k_base tokens of `text` plus `instructions` plus a
//   20-token system prompt; both are charged then;
// - the reply's tokens (o200k_base of the echoed answer) are charged when the reply is
//   sent, `latencyMs` later: the token bucket may go below zero then, a debt later
//   requests wait out;
// - every reply and every 429 carries `limits` as of the moment it is sent: what is left of
//   each bucket (floored, never below 0) and the time until that bucket is full again
//   (`requestsResetMs` / `tokensResetMs`, whole milliseconds, rounded up); with
//   `limitHeaders` also the whole windows (`requestsLimit` / `tokensLimit`), as the
//   `x-ratelimit-limit-*` headers give them;
// - a 429 carries `retryAfterMs`: the time from its sending until both buckets admit the
//   same request (whole milliseconds, rounded up, at least 1), as `retry-after-ms` gives it.

import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

/** The system prompt's share of every request's input, in tokens. */
export const SYSTEM_PROMPT_TOKENS = 20;

/** A continuously refilled bucket of `perMinute` units holding one minute's worth. */
class MinuteBucket {
  constructor(perMinute, now) {
    this.size = perMinute;
    this.perMs = perMinute / 60_000;
    this.level = perMinute;
    this.at = now;
  }

  /** The level at `now` (it may be negative: a debt). */
  levelAt(now) {
    if (now > this.at) {
      this.level = Math.min(this.size, this.level + (now - this.at) * this.perMs);
      this.at = now;
    }
    return this.level;
  }

  charge(amount, now) {
    this.levelAt(now);
    this.level -= amount;
  }

  /** Milliseconds from `now` until the bucket holds `amount` (0 when it does). */
  waitFor(amount, now) {
    const level = this.levelAt(now);
    return level >= amount - 1e-9 ? 0 : (amount - level) / this.perMs;
  }

  /** What is left, floored, as a header would give it. */
  remaining(now) {
    return Math.max(0, Math.floor(this.levelAt(now) + 1e-9));
  }

  /** Milliseconds until the bucket is full again, rounded up. */
  resetMs(now) {
    return Math.max(0, Math.ceil((this.size - this.levelAt(now)) / this.perMs - 1e-9));
  }
}

/** The tokens a request's input counts: its text, its instructions and the system prompt. */
export function inputTokens(request) {
  return countTokens(request.text) + (request.instructions ? countTokens(request.instructions) : 0) + SYSTEM_PROMPT_TOKENS;
}

/**
 * A provider on `clock` (fake timers) with `requestsPerMinute` and `tokensPerMinute`,
 * answering every call after `latencyMs`: the echo of `request.text` as
 * `{ translations, usage, limits }`, or a 429 error with `status`, `retryAfterMs` and
 * `limits`. `log` counts the calls, the accepted ones, their items and tokens (input and
 * output), the 429s, and the 429s of calls that arrived after the first reply was sent.
 */
export function secondMinuteQuotaProvider(clock, { requestsPerMinute, tokensPerMinute, limitHeaders = false, latencyMs = 300 }) {
  const requests = new MinuteBucket(requestsPerMinute, clock.now);
  const tokens = new MinuteBucket(tokensPerMinute, clock.now);
  const log = {
    calls: 0,
    accepted: 0,
    items: 0,
    inputTokens: 0,
    outputTokens: 0,
    lastOutputTokens: 0,
    rateLimited: 0,
    rateLimitedAfterFirstReply: 0,
    firstReplyAt: Infinity,
  };
  const limits = (now) => ({
    requestsRemaining: requests.remaining(now),
    requestsResetMs: requests.resetMs(now),
    tokensRemaining: tokens.remaining(now),
    tokensResetMs: tokens.resetMs(now),
    ...(limitHeaders ? { requestsLimit: requestsPerMinute, tokensLimit: tokensPerMinute } : {}),
  });
  const later = (fn) => new Promise((resolve, reject) => clock.setTimeout(() => fn(resolve, reject), latencyMs));

  const provider = (request) => {
    const arrived = clock.now;
    log.calls++;
    const input = inputTokens(request);
    const admitted = requests.waitFor(1, arrived) === 0 && tokens.waitFor(input, arrived) === 0;
    if (!admitted) {
      log.rateLimited++;
      if (arrived > log.firstReplyAt) log.rateLimitedAfterFirstReply++;
      return later((_, reject) => {
        const now = clock.now;
        const waitMs = Math.max(requests.waitFor(1, now), tokens.waitFor(input, now));
        reject(
          Object.assign(new Error("HTTP 429: rate limit reached for requests or tokens per minute"), {
            status: 429,
            retryAfterMs: Math.max(1, Math.ceil(waitMs)),
            limits: limits(now),
          }),
        );
      });
    }
    requests.charge(1, arrived);
    tokens.charge(input, arrived);
    log.accepted++;
    log.items += request.texts.length;
    log.inputTokens += input;
    return later((resolve) => {
      const now = clock.now;
      const answer = request.text;
      const output = countTokens(answer);
      tokens.charge(output, now);
      log.outputTokens += output;
      log.lastOutputTokens = output;
      log.firstReplyAt = Math.min(log.firstReplyAt, now);
      resolve({ translations: answer, usage: { inputTokens: input, outputTokens: output }, limits: limits(now) });
    });
  };
  return { provider, log };
}
