// Workload "Fallback providers" (docs/guides/fallbacks.md), in virtual time, one
// pacer over two providers joined by the package's routeProviders:
//
// (a) A daily quota spent: 300 paragraphs for provider A, which allows 20 requests a day
//     (past them: a 429 with `quota: "daily"` and a reset 6 h away, as workload 9's daily
//     rows), beside provider B, which allows 500; with `fallbackProviders: { A: "B" }` and
//     without, at the defaults and at a slow pace (rate 0.25, capacity 1).
// (b) A long 429 pause halfway through a page: 200 paragraphs for A at a pace both
//     providers allow (rate 0.5, capacity 1 against 30 requests a minute each); once A has
//     answered half the page it pauses with a 429, Retry-After 120 s (`fallbackAfterMs` at
//     its default, 10 s). The page's completion time ÷ the same page without the pause.

import { paragraphs, item } from "./data.mjs";
import { sideBySide, table, fmt } from "./measure.mjs";
import { privateClock, follow, runUntil } from "./virtual-time.mjs";

const LATENCY_MS = 300;
const DAILY_RESET_MS = 6 * 3600_000;
const PAUSE_MS = 120_000;
const TARGET_PAUSE_RATIO = 1.2;

/**
 * A provider on `clock` answering the echo of each call after `latencyMs`, with
 * optionally a daily request quota (`daily`: past it a 429 with `quota: "daily"` and a
 * reset 6 h away), a per-minute request quota (`perMinute`: a bucket holding a minute's
 * worth, refilled continuously; past it a 429 with the wait until it admits a request)
 * and a pause (`pauseAfterItems`: once that many items were answered, every call for
 * `pauseMs` gets a 429 with the Retry-After left of the pause). Refused calls do not
 * count against the quotas. `log` counts calls, answered calls and items, and 429s by kind.
 */
function quotaProvider(clock, { daily = Infinity, perMinute = Infinity, pauseAfterItems = Infinity, pauseMs = PAUSE_MS, latencyMs = LATENCY_MS }) {
  const log = { calls: 0, answered: 0, items: 0, daily429: 0, pause429: 0, minute429: 0, fallbackCalls: 0 };
  let used = 0;
  let level = perMinute;
  let levelAt = clock.now;
  let pausedUntil = -Infinity;
  const later = (fn) => new Promise((resolve, reject) => clock.setTimeout(() => fn(resolve, reject), latencyMs));
  const refuse = (message, fields) => later((_, reject) => reject(Object.assign(new Error(message), { status: 429, ...fields })));
  const provider = (request) => {
    const now = clock.now;
    log.calls++;
    if (request.fallbackFrom !== undefined) log.fallbackCalls++;
    if (used >= daily) {
      log.daily429++;
      return refuse("HTTP 429: requests per day exhausted", { quota: "daily", retryAfterMs: DAILY_RESET_MS });
    }
    if (now < pausedUntil) {
      log.pause429++;
      return refuse("HTTP 429: paused", { retryAfterMs: Math.ceil(pausedUntil - now) });
    }
    if (log.items >= pauseAfterItems && pausedUntil === -Infinity) {
      pausedUntil = now + pauseMs;
      log.pause429++;
      return refuse("HTTP 429: paused", { retryAfterMs: pauseMs });
    }
    if (Number.isFinite(perMinute)) {
      level = Math.min(perMinute, level + ((now - levelAt) * perMinute) / 60_000);
      levelAt = now;
      if (level < 1 - 1e-9) {
        log.minute429++;
        return refuse("HTTP 429: requests per minute", { retryAfterMs: Math.ceil(((1 - level) * 60_000) / perMinute) });
      }
      level -= 1;
    }
    used++;
    log.answered++;
    log.items += request.texts.length;
    return later((resolve) => resolve(request.text));
  };
  return { provider, log };
}

/** One page for provider A on a pacer over A and B (routeProviders); the run's figures. */
async function run({ BatchPacer, routeProviders, texts, options, a, b }) {
  const { clock, pacerClock } = privateClock();
  const A = quotaProvider(clock, a);
  const B = quotaProvider(clock, b);
  const pacer = new BatchPacer(routeProviders({ A: A.provider, B: B.provider }), { ...options, clock: pacerClock });
  let lastTranslatedAt = NaN;
  const promises = texts.map((text) =>
    pacer.translate(item(text, "de", { providerId: "A" })).then((translation) => {
      lastTranslatedAt = clock.now;
      return translation;
    }),
  );
  const state = follow(clock, promises);
  await runUntil(clock, () => state.pending === 0, { stepMs: 1000 });
  const stats = pacer.stats();
  pacer.dispose();
  return {
    completedMs: state.completedAt,
    lastTranslatedMs: lastTranslatedAt,
    translated: texts.length - state.failed,
    failed: state.failed,
    callsA: A.log.calls,
    refusedA: A.log.daily429 + A.log.pause429 + A.log.minute429,
    callsB: B.log.calls,
    refusedB: B.log.daily429 + B.log.pause429 + B.log.minute429,
    fallbackCallsB: B.log.fallbackCalls,
    fallbackItems: stats.fallbackItems ?? NaN,
  };
}

const seconds = (ms) => fmt(ms / 1000, 1);

/** The table of the workload (Markdown). */
export async function fallbackProviders({ BatchPacer, routeProviders, runs, smoke }) {
  if (typeof routeProviders !== "function") throw new Error("the package measured exports no routeProviders");
  const FALLBACK = { fallbackProviders: { A: "B" } };

  // (a) A's daily quota spent.
  const dailyTexts = paragraphs(smoke ? 40 : 300);
  const dailyA = smoke ? 3 : 20;
  const dailyB = smoke ? 50 : 500;
  const paces = [
    { label: "defaults (rate 8, capacity 60)", options: {} },
    { label: "rate 0.25, capacity 1", options: { rate: 0.25, capacity: 1 } },
  ];
  const dailyRows = paces.flatMap((pace) => [
    { name: `(a) A: ${dailyA} requests a day, B: ${dailyB}; ${pace.label}, fallbackProviders { A: "B" }`, options: { ...pace.options, ...FALLBACK } },
    { name: `(a) A: ${dailyA} requests a day, B: ${dailyB}; ${pace.label}, no fallbackProviders`, options: pace.options },
  ]);
  const daily = await sideBySide(
    dailyRows.map((r) => ({
      name: r.name,
      run: () => run({ BatchPacer, routeProviders, texts: dailyTexts, options: r.options, a: { daily: dailyA }, b: { daily: dailyB } }),
    })),
    { runs },
  );

  // (b) A paused by a 429 with Retry-After 120 s halfway through the page.
  const pageTexts = paragraphs(smoke ? 40 : 200);
  const half = pageTexts.length / 2;
  const PACE = { rate: 0.5, capacity: 1 };
  const perMinute = { perMinute: 30 };
  const pauseRows = [
    { name: "(b) no pause (baseline), fallbackProviders { A: \"B\" }", options: { ...PACE, ...FALLBACK }, a: perMinute },
    { name: "(b) A paused 120 s halfway, fallbackProviders { A: \"B\" }, fallbackAfterMs default (10 s)", options: { ...PACE, ...FALLBACK }, a: { ...perMinute, pauseAfterItems: half } },
    { name: "(b) A paused 120 s halfway, no fallbackProviders", options: PACE, a: { ...perMinute, pauseAfterItems: half } },
  ];
  const pause = await sideBySide(
    pauseRows.map((r) => ({
      name: r.name,
      run: () => run({ BatchPacer, routeProviders, texts: pageTexts, options: r.options, a: r.a, b: perMinute }),
    })),
    { runs },
  );
  const baseline = pause.get(pauseRows[0].name).completedMs;

  const row = (name, r, vsBaseline) => [
    name,
    fmt(Math.round(r.translated)),
    fmt(Math.round(r.failed)),
    `${fmt(Math.round(r.callsA))} (${fmt(Math.round(r.refusedA))})`,
    `${fmt(Math.round(r.callsB))} (${fmt(Math.round(r.refusedB))})`,
    fmt(Math.round(r.fallbackItems)),
    seconds(r.completedMs),
    Number.isFinite(r.lastTranslatedMs) ? seconds(r.lastTranslatedMs) : "–",
    vsBaseline,
  ];
  const rows = [
    ...dailyRows.map((r) => row(r.name, daily.get(r.name), "–")),
    ...pauseRows.map((r, i) => {
      const result = pause.get(r.name);
      return row(r.name, result, i === 0 ? "1.00 (baseline)" : fmt(result.completedMs / baseline, 2));
    }),
  ];
  return table({
    title: `12. Fallback providers: a daily quota spent and a long 429 pause, provider A with B as its fallback (virtual time)`,
    columns: [
      "run", "translated", "failed", "calls to A (429s)", "calls to B (429s)", "fallbackItems",
      "last paragraph settled (s)", "last paragraph translated (s)", "completion ÷ no pause",
    ],
    rows,
    notes: [
      `One BatchPacer over two simulated providers joined by the package's routeProviders({ A, B }); every paragraph is submitted at once for providerId "A" (200 characters each, one compatibility key, the default batching: 4 per call). Each provider answers the echo of the call after ${LATENCY_MS} ms; a refused call is a 429 after the same ${LATENCY_MS} ms and does not count against its quotas. "calls to A (429s)": every call that reached A, of them refused in brackets; likewise B. fallbackItems: the pacer's stats().fallbackItems. "last paragraph settled": the virtual time at which the last paragraph's promise resolved or rejected; "last paragraph translated": the last one that resolved.`,
      `(a) ${dailyTexts.length} paragraphs. A allows ${dailyA} requests a day, B ${dailyB}; past its quota a provider answers 429 with quota "daily" and retryAfterMs 6 h (as workload 9's daily rows). No per-minute quota. "defaults": the pacer's defaults (a first burst of up to 60 calls at once); "rate 0.25, capacity 1": one call every 4 s. Target: with fallbackProviders, 0 failed.`,
      `(b) ${pageTexts.length} paragraphs. A and B each allow 30 requests a minute (a bucket holding a minute's worth, refilled continuously; past it a 429 with the wait until it admits one), and the pacer runs at rate 0.5, capacity 1 (a pace both allow: no such 429 is expected). Once A has answered ${half} paragraphs (half the page), its next call is a 429 with Retry-After 120 s, and so is every call in the 120 s after it (with the Retry-After left). fallbackAfterMs stays at its default (10 s). "completion ÷ no pause": the row's last paragraph settled ÷ the no-pause row's. Target: ≤ ${TARGET_PAUSE_RATIO}x with fallbackProviders; the row without is the pause as it costs without the option.`,
      `Reproduce: \`node bench/run.mjs --only 12\`. Each figure: median of ${runs} runs (deterministic in virtual time), rows alternating run by run within (a) and within (b).`,
    ],
  });
}
