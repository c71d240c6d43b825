// The implementations compared with batch-pacer, each set up as its documentation
// suggests for the job: p-queue and Bottleneck pace calls (one paragraph per call, or
// groups of 4 that the caller batches itself), DataLoader batches.

import PQueue from "p-queue";
import Bottleneck from "bottleneck";
import DataLoader from "dataloader";

import { LANGS } from "./data.mjs";
import { request, splitReply, groups } from "./providers.mjs";

// ---------------------------------------------------------------------------------------
// Workload 1: the same paragraphs through each scheduler, instant provider, no limits.
// Each function runs the whole workload once and returns the provider calls made.
// ---------------------------------------------------------------------------------------

const lang = (i) => LANGS[i % LANGS.length];

/** The floor: one awaited provider call per item, nothing in between. */
export async function overheadDirect(texts, provider) {
  let calls = 0;
  await Promise.all(texts.map((text, i) => (calls++, provider(request([text], "en", lang(i))))));
  return calls;
}

/** p-queue, concurrency unlimited, an interval cap it never reaches: pacing only. */
export async function overheadPQueue(texts, provider) {
  let calls = 0;
  const queue = new PQueue({ concurrency: Infinity, interval: 1000, intervalCap: 1e9 });
  await Promise.all(texts.map((text, i) => queue.add(() => (calls++, provider(request([text], "en", lang(i)))))));
  return calls;
}

/** Bottleneck with no limits: pacing only. */
export async function overheadBottleneck(texts, provider) {
  let calls = 0;
  const limiter = new Bottleneck();
  await Promise.all(texts.map((text, i) => limiter.schedule(() => (calls++, provider(request([text], "en", lang(i)))))));
  await limiter.disconnect();
  return calls;
}

/** DataLoader, one loader per target language, batches of 4: batching only. */
export async function overheadDataLoader(texts, provider) {
  let calls = 0;
  const loaders = LANGS.map(
    (targetLang) =>
      new DataLoader(
        async (keys) => {
          calls++;
          return splitReply(await provider(request(keys, "en", targetLang)), keys.length);
        },
        { maxBatchSize: 4, cache: false },
      ),
  );
  await Promise.all(texts.map((text, i) => loaders[i % LANGS.length].load(text)));
  return calls;
}

// ---------------------------------------------------------------------------------------
// Workload 2: a quota. Each function starts translating `texts` against `provider` and
// returns one promise per paragraph. These libraries read the global clock, so they run
// with fake timers installed on the globals.
// ---------------------------------------------------------------------------------------

const MAX_429_RETRIES = 10; // batch-pacer's maxRateLimitRetries default

/** The batches a caller makes by hand: groups of 4 (at most 1000 characters), or singles. */
function units(texts, batched) {
  return batched ? groups(texts, { maxItems: 4, maxChars: 1000 }) : texts.map((t) => [t]);
}

/** Settles each paragraph of `unit` from the promise of its call. */
function fanOut(unitPromise, count) {
  const parts = unitPromise.then((reply) => splitReply(reply, count));
  return Array.from({ length: count }, (_, i) => parts.then((p) => p[i]));
}

/**
 * Bottleneck as its README shows for "N requests per period": one call at a time, at
 * least 1000/rate ms (times `margin`) between starts; a 429 is retried from the `failed`
 * event after the server's Retry-After (up to 10 times).
 */
export function quotaBottleneck(texts, provider, { rate, batched, margin = 1 }) {
  const limiter = new Bottleneck({ maxConcurrent: 1, minTime: Math.ceil((1000 / rate) * margin) });
  limiter.on("failed", (error, jobInfo) => {
    if (error.status === 429 && jobInfo.retryCount < MAX_429_RETRIES) return error.retryAfterMs;
    return undefined;
  });
  return units(texts, batched).flatMap((unit) =>
    fanOut(limiter.schedule(() => provider(request(unit))), unit.length),
  );
}

/**
 * p-queue as its README shows for "N requests per interval" (60 per 60 s, 15 per 60 s,
 * 1 per 10 s), with a retry wrapper: a call answered 429 waits Retry-After and is queued
 * again (up to 10 times).
 */
export function quotaPQueue(texts, provider, { interval, intervalCap, batched }) {
  const queue = new PQueue({ interval, intervalCap });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const withRetry = async (req) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await queue.add(() => provider(req));
      } catch (error) {
        if (error.status !== 429 || attempt >= MAX_429_RETRIES) throw error;
        await sleep(error.retryAfterMs);
      }
    }
  };
  return units(texts, batched).flatMap((unit) => fanOut(withRetry(request(unit)), unit.length));
}
