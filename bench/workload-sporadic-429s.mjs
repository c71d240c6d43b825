// Workload 8: sporadic 429s. An hour against a provider with no quota of its own that
// answers a share of calls 429 at random (an overloaded service, Retry-After 1 s), at
// rate 2/s with the backlog kept full: how much of its rate the pacer keeps, ten minutes
// at a time. Side by side in one run: no 429s (the baseline), 1% and 5%, and 5% with
// `adaptiveRate: false`.

import { item, prng } from "./data.mjs";
import { sideBySide, table, fmt } from "./measure.mjs";
import { privateClock } from "./virtual-time.mjs";

const LATENCY_MS = 300;
const RATE = 2;
const WINDOW_MS = 10 * 60_000;

/** Calls started in each window of an `hours`-long run, as a share of `RATE`. */
async function run({ BatchPacer, share, options, seed, durationMs }) {
  const { clock, pacerClock } = privateClock();
  const random = prng(seed);
  const starts = [];
  const provider = (req) => {
    starts.push(clock.now);
    const refused = random() < share;
    return new Promise((resolve, reject) =>
      clock.setTimeout(
        () => (refused ? reject(Object.assign(new Error("HTTP 429"), { status: 429, retryAfterMs: 1000 })) : resolve(req.text)),
        LATENCY_MS,
      ),
    );
  };
  const pacer = new BatchPacer(provider, { rate: RATE, maxRateLimitRetries: 1000, ...options, clock: pacerClock });
  // Single items (llm: false): one call each, so calls are counted, not batches. The
  // backlog is topped up every ten seconds to hold more than a minute of calls.
  let next = 0;
  const topUp = () => {
    while (pacer.stats().queued < RATE * 120) pacer.translate(item(`paragraph ${next++}`, "de", { llm: false })).catch(() => {});
  };
  topUp();
  for (let t = 0; t < durationMs; t += 10_000) {
    await clock.tickAsync(10_000);
    topUp();
  }
  pacer.dispose();
  const windows = Math.ceil(durationMs / WINDOW_MS);
  const counts = new Array(windows).fill(0);
  for (const at of starts) if (at < durationMs) counts[Math.floor(at / WINDOW_MS)]++;
  const spanMs = Math.min(WINDOW_MS, durationMs);
  return Object.fromEntries(counts.map((c, i) => [`w${i}`, c / (RATE * (spanMs / 1000))]));
}

/** The table of workload 8 (Markdown). */
export async function sporadic429s({ BatchPacer, runs, smoke }) {
  const durationMs = smoke ? 60_000 : 3600_000;
  const rows = [
    { name: "no 429s (baseline)", share: 0, options: {} },
    { name: "1% 429s at random", share: 0.01, options: {} },
    { name: "5% 429s at random", share: 0.05, options: {} },
    { name: "5% 429s, adaptiveRate: false", share: 0.05, options: { adaptiveRate: false } },
  ];
  let seed = 1;
  const results = await sideBySide(
    rows.map((r) => ({ name: r.name, run: () => run({ BatchPacer, ...r, seed: seed++, durationMs }) })),
    { runs },
  );
  const windows = Math.ceil(durationMs / WINDOW_MS);
  const minutes = Math.min(10, durationMs / 60_000);
  return table({
    title: `10. Sporadic 429s: calls started per ${minutes}-minute window as a share of rate ${RATE}/s, ${durationMs / 60_000} minutes, backlog kept full (virtual time)`,
    columns: ["provider", ...Array.from({ length: windows }, (_, i) => `${i * minutes}–${(i + 1) * minutes} min`)],
    rows: rows.map((r) => {
      const result = results.get(r.name);
      return [r.name, ...Array.from({ length: windows }, (_, i) => fmt(result[`w${i}`], 2))];
    }),
    notes: [
      `batch-pacer at rate ${RATE}, the other options at their defaults (maxRateLimitRetries raised to 1000 so that no item gives up), single items (llm: false, one call each), the backlog topped up every 10 s to at least ${RATE * 120} queued items. The provider has no quota of its own: it answers after ${LATENCY_MS} ms, refusing each call with the given probability (seeded PRNG) with a 429 and Retry-After 1 s. A figure of 1.00 is every call the rate allows.`,
      `Each figure: median of ${runs} runs (each run its own seed), rows alternating run by run.`,
    ],
  });
}
