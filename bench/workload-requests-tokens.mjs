// Workload 7: requests and tokens per minute. 1,000 paragraphs against a provider with a
// quota of 30 requests and 6,000 tokens a minute (bench/minute-quota.mjs), in virtual time:
// batch-pacer with the preset for that quota (rate 0.5, capacity 1, tokensPerMinute 6000)
// and on its defaults against the provider reporting its limits; Bottleneck, p-queue and
// Read Frog's queues beside them; then a daily quota of 20 requests. Last, batch-pacer
// against a second, independently written mock of the same quota (bench/second-minute-quota.mjs:
// reply tokens charged when the reply is sent, limits on every reply and 429, with and
// without the whole windows).

import { paragraphs, item } from "./data.mjs";
import { minuteQuotaProvider } from "./minute-quota.mjs";
import { secondMinuteQuotaProvider } from "./second-minute-quota.mjs";
import { sideBySide, table, fmt } from "./measure.mjs";
import { privateClock, globalClock, follow, runUntil } from "./virtual-time.mjs";
import { quotaBottleneck, quotaPQueue } from "./contenders.mjs";
import { SealedWhenDue } from "./sealed-queue.mjs";

const LATENCY_MS = 300;
const QUOTA = { requestsPerMinute: 30, tokensPerMinute: 6000 };
const PRESET = { rate: 0.5, capacity: 1, tokensPerMinute: 6000 };
const READ_FROG = { rate: 8, capacity: 60, maxItemsPerBatch: 4, maxCharactersPerBatch: 1000, batchDelayMs: 100 };

/** One flow against the quota in virtual time; the figures of the run. */
async function run({ texts, setup, globalTimers = false, quota, mock = minuteQuotaProvider }) {
  const { clock, pacerClock, uninstall } = globalTimers ? globalClock() : privateClock();
  try {
    const server = mock(clock, { ...QUOTA, latencyMs: LATENCY_MS, ...quota });
    const flow = setup({ clock, pacerClock, provider: server.provider, texts });
    const promises = flow.promises ?? texts.map((text) => flow.submit(text));
    const state = follow(clock, promises);
    await runUntil(clock, () => state.pending === 0, { stepMs: 5000 });
    flow.dispose?.();
    const { log } = server;
    // The bound for what was sent: the accepted calls and tokens, started as early as
    // the two buckets (full at start) admit them, + the latency. The second mock charges
    // a reply's tokens when it is sent: the last reply's are not needed before the last
    // start.
    const charged = log.tokens ?? log.inputTokens + log.outputTokens - log.lastOutputTokens;
    const boundMs =
      Math.max(((log.accepted - QUOTA.requestsPerMinute) * 60_000) / QUOTA.requestsPerMinute, ((charged - QUOTA.tokensPerMinute) * 60_000) / QUOTA.tokensPerMinute, 0) +
      LATENCY_MS;
    return {
      completedMs: state.completedAt,
      bound: state.completedAt / boundMs,
      rateLimited: log.rateLimited,
      afterFirstReply: log.rateLimitedAfterFirstReply,
      calls: log.calls,
      failed: state.failed,
      afterBlock: log.afterBlock,
    };
  } finally {
    uninstall();
  }
}

const pacer = (BatchPacer, options) => ({ pacerClock, provider }) => {
  const p = new BatchPacer(provider, { ...options, clock: pacerClock });
  return { submit: (text) => p.translate(item(text)), dispose: () => p.dispose() };
};

const readFrog = () => ({ clock, provider }) => {
  const queue = new SealedWhenDue(provider, { ...READ_FROG, clock });
  return { submit: (text) => queue.translate(item(text)) };
};

function contenders(BatchPacer) {
  return [
    { name: "batch-pacer, preset (rate 0.5, capacity 1, tokensPerMinute 6000)", setup: pacer(BatchPacer, PRESET) },
    { name: "batch-pacer, defaults, limits reported", setup: pacer(BatchPacer, {}), quota: { reportLimits: true } },
    { name: "Bottleneck, groups of 4, minTime 2000", setup: ({ provider, texts }) => ({ promises: quotaBottleneck(texts, provider, { rate: 0.5, batched: true }) }), globalTimers: true, quota: { plain: true } },
    { name: "p-queue, groups of 4, 30 per 60 s", setup: ({ provider, texts }) => ({ promises: quotaPQueue(texts, provider, { interval: 60_000, intervalCap: 30, batched: true }) }), globalTimers: true, quota: { plain: true } },
    { name: "Read Frog's queues (rate 8, capacity 60)", setup: readFrog(), quota: { plain: true } },
  ];
}

/** batch-pacer against the second mock (bench/second-minute-quota.mjs), with and without the whole windows. */
function secondMockRows(BatchPacer) {
  const second = (name, options, limitHeaders) => ({
    name: `${name}, second mock, ${limitHeaders ? "with" : "without"} limit headers`,
    setup: pacer(BatchPacer, options),
    mock: secondMinuteQuotaProvider,
    quota: { limitHeaders },
  });
  return [
    second("batch-pacer, preset (rate 0.5, capacity 1, tokensPerMinute 6000)", PRESET, true),
    second("batch-pacer, preset (rate 0.5, capacity 1, tokensPerMinute 6000)", PRESET, false),
    second("batch-pacer, defaults", {}, true),
    second("batch-pacer, defaults", {}, false),
  ];
}

/** The table of workload 7 (Markdown). */
export async function requestsAndTokens({ BatchPacer, runs, smoke }) {
  const texts = paragraphs(smoke ? 24 : 1000);
  const impls = contenders(BatchPacer);
  const seconds = secondMockRows(BatchPacer);
  const results = await sideBySide(
    [...impls, ...seconds].map((c) => ({ name: c.name, run: () => run({ texts, ...c }) })),
    { runs },
  );
  const daily = [impls[0], impls[1], impls[4]].map((c) => ({
    name: `${c.name}, daily quota of 20 requests`,
    run: () => run({ texts, ...c, quota: { ...c.quota, dailyRequests: 20 } }),
  }));
  const dailyResults = await sideBySide(daily, { runs: 1 });
  const rows = [...impls, ...seconds].map((c) => {
    const r = results.get(c.name);
    return [c.name, fmt(r.completedMs / 60_000, 1), fmt(r.bound, 2), fmt(Math.round(r.rateLimited)), fmt(Math.round(r.afterFirstReply)), fmt(Math.round(r.calls)), fmt(Math.round(r.failed)), "–"];
  });
  for (const d of daily) {
    const r = dailyResults.get(d.name);
    rows.push([d.name, fmt(r.completedMs / 60_000, 1), "–", fmt(Math.round(r.rateLimited)), "–", fmt(Math.round(r.calls)), fmt(Math.round(r.failed)), fmt(Math.round(r.afterBlock))]);
  }
  // The daily rows stay right under the first mock's rows: the second mock's go last.
  rows.push(...rows.splice(impls.length, seconds.length));
  return table({
    title: `9. Requests and tokens per minute: ${texts.length} paragraphs against 30 requests and 6,000 tokens a minute (virtual time)`,
    columns: ["implementation", "completion (min)", "÷ bound", "429s", "429s after the first reply", "provider calls", "failed", "calls after the daily block"],
    rows,
    notes: [
      `The provider counts requests and tokens (o200k_base over its system prompt, the request's instructions and text, and the echoed answer) in two buckets, each holding a minute's worth, refilled continuously, full at start, checked and charged when a request arrives; it answers after ${LATENCY_MS} ms: the echo with its usage, or a 429 whose retryAfterMs is the wait until both buckets admit the call, in whole seconds. "limits reported": every reply and 429 carries { requestsRemaining, requestsResetMs, tokensRemaining, tokensResetMs } as openAIProvider reads them from x-ratelimit-* (reset: until the window is whole again). Paragraphs: 200 characters, one compatibility key, all submitted at once.`,
      `Bound ("÷ bound"): the calls and tokens the provider accepted in that run, started as early as the two buckets admit them, + ${LATENCY_MS} ms: so completion times compare only through it, since batch-pacer's calls carry the markers layout's instructions (about 110 tokens a batch) and the hand-joined batches of Bottleneck and p-queue none. "429s after the first reply": 429s of calls that reached the provider after the first reply was back (the defaults' first burst, up to capacity 60 calls at once, is counted apart).`,
      `Bottleneck and p-queue as in workload 2 (groups of 4 by hand, a 429 retried after retryAfterMs up to 10 times; they do not count tokens). Read Frog's queues: its BatchQueue and RequestQueue (wuchunfu/read-frog src/utils/request) at its defaults, modelled in bench/sealed-queue.mjs: a 429 (or 401/403/404) rejects every queued and running request, other failures retry twice with backoff.`,
      `"second mock" rows: bench/second-minute-quota.mjs, written apart from the first mock: the same two buckets (a minute's worth each, refilled continuously, full at start), but a request is admitted and charged when the request bucket holds one request and the token bucket holds its input (o200k_base of text + instructions, + a 20-token system prompt); the reply's tokens (o200k_base of the echo) are charged when the reply is sent ${LATENCY_MS} ms later, so the token bucket may run into debt. Every reply and every 429 carries limits as of its sending: { requestsRemaining, tokensRemaining } (floored, never below 0) and { requestsResetMs, tokensResetMs } (until that bucket is full again); "with limit headers" adds { requestsLimit: 30, tokensLimit: 6000 } (the whole windows, as x-ratelimit-limit-* give them), "without" leaves them out, so the pacer may not count room as refilling before the reset. A 429 (also after ${LATENCY_MS} ms) carries retryAfterMs, the wait until both buckets admit the same request. Its bound leaves out the last reply's tokens (charged after the last start). Reproduce: \`node bench/run.mjs --only 9\`.`,
      `Daily rows: the same provider also allows 20 requests a day; past them it answers 429 with quota "daily" and a reset 6 h away. "calls after the daily block": calls that reached the provider after its first daily 429 was answered (one run each). Each other figure: median of ${runs} runs, implementations alternating run by run.`,
    ],
  });
}
