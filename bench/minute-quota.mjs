// A provider with a per-minute quota of requests and of tokens, as Groq's free tier counts
// them: each a bucket holding a minute's worth, refilled continuously, full at start,
// checked and charged when a request arrives, tokens counted by a real tokenizer
// (o200k_base, from the gpt-tokenizer devDependency). Optionally it reports its limits
// on every reply and 429 as openAIProvider reads them from `x-ratelimit-*` (remaining,
// and the time until the window is whole again), and it may have a daily request quota
// (Gemini-like: past it, a 429 with `quota: "daily"` and a reset hours away).

import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

/** The system prompt a chat-completions provider sends around the request. */
const SYSTEM_PROMPT = "You are a translation engine. Translate the user's text and answer with the translation only.";

/** What the provider counts for a request: its prompt (system, instructions, text) and its answer. */
export function requestTokens(req) {
  const prompt = countTokens(`${SYSTEM_PROMPT}\n${req.instructions ?? ""}\n${req.text}`);
  return { input: prompt, output: countTokens(req.text) };
}

function bucket(perMinute, start) {
  return { level: perMinute, at: start, perMs: perMinute / 60_000, whole: perMinute };
}

function refill(b, now) {
  b.level = Math.min(b.whole, b.level + (now - b.at) * b.perMs);
  b.at = now;
}

/** The time until `b` is whole again, as OpenAI's and Groq's reset headers give it. */
const resetMs = (b) => Math.ceil((b.whole - b.level) / b.perMs);

/**
 * A provider on `clock` (fake timers) answering after `latencyMs`: the echo of the request
 * (with `usage` and, with `reportLimits`, `limits`), or a 429 whose `retryAfterMs` is the
 * wait until both buckets admit the call, in whole seconds. `plain`: the reply is the
 * bare text (for libraries that take only strings). `log` counts calls, 429s, items, the
 * accepted calls' tokens, and (with `dailyRequests`) the calls made after the daily block
 * was first answered.
 */
export function minuteQuotaProvider(
  clock,
  { requestsPerMinute, tokensPerMinute, reportLimits = false, dailyRequests = Infinity, plain = false, latencyMs = 300 },
) {
  const requests = bucket(requestsPerMinute, clock.now);
  const tokens = bucket(tokensPerMinute, clock.now);
  const log = { calls: 0, rateLimited: 0, items: 0, tokens: 0, accepted: 0, afterBlock: 0, firstReplyAt: Infinity, rateLimitedAfterFirstReply: 0 };
  let daily = 0;
  let blockedAt = Infinity;
  const limits = () => ({
    requestsRemaining: Math.floor(requests.level),
    requestsResetMs: resetMs(requests),
    tokensRemaining: Math.floor(tokens.level),
    tokensResetMs: resetMs(tokens),
  });
  const answer = (settle) => new Promise((resolve, reject) => clock.setTimeout(() => settle(resolve, reject), latencyMs));
  const provider = (req) => {
    const now = clock.now;
    log.calls++;
    if (now > blockedAt) log.afterBlock++;
    if (daily >= dailyRequests) {
      const error = Object.assign(new Error("HTTP 429: requests per day exhausted"), {
        status: 429, quota: "daily", retryAfterMs: 6 * 3600_000,
      });
      return answer((_, reject) => {
        blockedAt = Math.min(blockedAt, clock.now);
        reject(error);
      });
    }
    refill(requests, now);
    refill(tokens, now);
    const cost = requestTokens(req);
    const need = cost.input + cost.output;
    if (requests.level >= 1 - 1e-9 && tokens.level >= need) {
      requests.level -= 1;
      tokens.level -= need;
      daily++;
      log.accepted++;
      log.items += req.texts.length;
      log.tokens += need;
      const reported = limits();
      const reply = plain
        ? req.text
        : { translations: req.text, usage: { inputTokens: cost.input, outputTokens: cost.output }, ...(reportLimits ? { limits: reported } : {}) };
      return answer((resolve) => {
        log.firstReplyAt = Math.min(log.firstReplyAt, clock.now);
        resolve(reply);
      });
    }
    log.rateLimited++;
    if (now > log.firstReplyAt) log.rateLimitedAfterFirstReply++;
    const waitMs = Math.max((1 - requests.level) / requests.perMs, (need - tokens.level) / tokens.perMs, 0);
    const error = Object.assign(new Error("HTTP 429"), { status: 429, retryAfterMs: Math.max(1000, Math.ceil(waitMs / 1000) * 1000) });
    if (reportLimits) error.limits = limits();
    return answer((_, reject) => reject(error));
  };
  return { provider, log };
}
