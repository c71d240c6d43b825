// Workload "A quota shared with other clients": N pacers (N = 1, 5, 20, 100), each with its
// own page of 200 paragraphs, on one provider quota of 60 requests and 30,000 tokens a
// minute, in virtual time (bench/shared-quota-sim.mjs).
//
// (16)  the quota reports its whole window (requestsLimit / tokensLimit) on every reply and
//       every 429: pages at random within the first minute, and all at once; the package's
//       defaults beside the seeds' preset for the quota ({ rate: 1, capacity: 1 });
// (16b) the same without the whole window, and with nothing reported at all;
// (16c) one pacer at the defaults while another client (not a pacer) takes the whole
//       quota for its first 2 minutes: the pacer's share of the refill, minute by minute.
//
// Every row runs on every build given (this package, and the baseline of `--baseline
// DIR`), one run each: every run is deterministic (virtual time, seeded arrivals, the
// pacers' seeds drawn from a seeded Math.random).

import { table, fmt } from "./measure.mjs";
import { simulateSharedQuota, QUOTA, LATENCY_MS, SEEDS_PRESET, HERD_WINDOW_MS, LIMIT_MS } from "./shared-quota-sim.mjs";

const OTHER_CLIENT_MS = 120_000;
const ARRIVALS = { random: "random within the first minute", together: "all at once" };
const SETTINGS = { defaults: {}, preset: SEEDS_PRESET };
const SETTINGS_NAMES = { defaults: "defaults", preset: "seeds' preset (rate 1, capacity 1)" };
const REPORTS = { whole: "with the whole window", partial: "without the whole window", none: "nothing reported" };

const yes = (ok) => (ok ? "met" : "not met");
const seconds = (ms) => (Number.isFinite(ms) ? fmt(ms / 1000, 1) : "–");
const times = (value) => (Number.isFinite(value) ? `${value.toFixed(2)}x` : "–");
const two = (value) => (Number.isFinite(value) ? value.toFixed(2) : "–");
const percent = (share) => `${Math.round(share * 100)}%`;

/**
 * The contract's property for N pacers at their defaults, whole window reported, pages at
 * random within the first minute: every item settles and none fails; at most one 429 per
 * pacer per 10 minutes after its first reply; the last paragraph at most 1.2 times the
 * bound for N from 5 to 20 and 1.5 times at 100.
 */
function target(r) {
  const limit = r.pacers >= 5 && r.pacers <= 20 ? 1.2 : r.pacers === 100 ? 1.5 : undefined;
  return [
    `settles, 0 failed ${yes(r.unsettled === 0 && r.failed === 0)}`,
    `≤ 1 × 429/pacer/10 min ${yes(r.per10MinAfterFirstReply <= 1)}`,
    ...(limit ? [`≤ ${limit}x bound ${yes(r.timeOverBound <= limit)}`] : []),
  ].join("; ");
}

/** The cells of one run's row. */
function figures(r) {
  const failed = r.unsettled > 0 ? `${r.failed} (${r.unsettled} unsettled after ${LIMIT_MS / 3600_000} h)` : `${r.failed}`;
  return [
    failed,
    fmt(r.rateLimited),
    fmt(r.rateLimitedAfterFirstReply),
    `${two(r.per10MinAfterFirstReply)} (${two(r.worstPer10Min)})`,
    seconds(r.completedMs),
    `${times(r.timeOverBound)} (${seconds(r.boundMs)} s)`,
    two(r.jain),
    fmt(r.largestHerd),
  ];
}

const COLUMNS = [
  "pacers, arrival",
  "settings",
  "build",
  "failed",
  "429s",
  "429s after each pacer's first reply",
  "per pacer per 10 min after its first reply (worst pacer)",
  "last paragraph (s)",
  "÷ bound (bound)",
  "Jain",
  "largest herd",
];

/** The sections (Markdown), in order. `builds`: this package first, then the baseline if any. */
export async function sharedQuota({ builds, smoke = false, number = 16, command }) {
  const sizes = smoke
    ? { pacers: [1, 5], paragraphs: 60, otherClientParagraphs: 300 }
    : { pacers: [1, 5, 20, 100], paragraphs: 200, otherClientParagraphs: 1000 };
  const run = (build, settings, reports, pacers, arrival) =>
    simulateSharedQuota({ BatchPacer: build.BatchPacer, pacers, paragraphs: sizes.paragraphs, options: SETTINGS[settings], arrival, reports });

  // Runs in which a call found as a 429's retry said attempt 0 (the herd's definition assumes none).
  let unmarkedRetries = 0;
  // Paragraphs that resolved with a text other than their own, over every run.
  let misplaced = 0;

  /** Rows for each N × arrival × settings (and `reports` each), one per build. */
  async function rows(reportsList, withTarget) {
    const out = [];
    for (const reports of reportsList) {
      for (const pacers of sizes.pacers) {
        for (const arrival of Object.keys(ARRIVALS)) {
          for (const settings of Object.keys(SETTINGS)) {
            for (const build of builds) {
              const r = await run(build, settings, reports, pacers, arrival);
              if (r.retriesWithoutAttempt > 0) unmarkedRetries++;
              misplaced += r.misplaced;
              const label = `${pacers} × ${sizes.paragraphs}, ${ARRIVALS[arrival]}`;
              const settingsName = reportsList.length > 1 ? `${SETTINGS_NAMES[settings]}, ${REPORTS[reports]}` : SETTINGS_NAMES[settings];
              const goal = withTarget ? [settings === "defaults" && arrival === "random" ? target(r) : "–"] : [];
              out.push([label, settingsName, build.name, ...figures(r), ...goal, fmt(r.wallMs / 1000, 1)]);
            }
          }
        }
      }
    }
    return out;
  }

  const whole = await rows(["whole"], true);
  const partial = await rows(["partial", "none"], false);

  const otherRows = [];
  for (const reports of ["whole", "partial"]) {
    for (const build of builds) {
      const r = await simulateSharedQuota({
        BatchPacer: build.BatchPacer,
        pacers: 1,
        paragraphs: sizes.otherClientParagraphs,
        arrival: "together",
        reports,
        otherClientMs: OTHER_CLIENT_MS,
      });
      misplaced += r.misplaced;
      const { shares, roomAt } = r.otherClient;
      const lowest = shares.length ? Math.min(...shares) : NaN;
      otherRows.push([
        REPORTS[reports],
        build.name,
        r.unsettled > 0 ? `${r.failed} (${r.unsettled} unsettled)` : `${r.failed}`,
        fmt(r.rateLimited),
        seconds(roomAt),
        shares.length ? shares.map(percent).join(", ") : "–",
        Number.isFinite(lowest) ? percent(lowest) : "–",
        seconds(r.completedMs),
        reports === "whole" ? `each minute ≥ 90% ${shares.length ? yes(lowest >= 0.9) : "– (no whole minute)"}` : "–",
        fmt(r.wallMs / 1000, 1),
      ]);
    }
  }

  const quotaNote =
    `The quota: one object every pacer's provider calls, ${QUOTA.requestsPerMinute} requests and ${fmt(QUOTA.tokensPerMinute)} tokens a minute, each a bucket holding a minute's worth (1 request and 500 tokens a second), refilled continuously, full at the start. A call is admitted when the requests bucket holds 1 and the tokens bucket holds the call's tokens, and charged then: ceil(characters of the text as sent plus its instructions ÷ 4) input + ceil(characters of its texts ÷ 4) output (the echo), reported as usage. Otherwise it is a 429 whose retryAfterMs is the exact wait (ms, rounded up) until both buckets hold the call. Every answer, reply or 429, comes ${fmt(LATENCY_MS)} ms after the call reached the quota (one call's latency, fixed) and, where reported, carries limits as of its sending: requestsRemaining and tokensRemaining (floored), requestsResetMs and tokensResetMs (ms until that bucket is whole again), and "with the whole window" requestsLimit ${QUOTA.requestsPerMinute} and tokensLimit ${fmt(QUOTA.tokensPerMinute)}. A reply is the echo of the request's text (the markers layout as sent, every segment proven).`;
  const pagesNote = `Pacers: one BatchPacer each with its own provider function over the one quota, created at t = 0, at the defaults or at the seeds' preset for a quota of 60 a minute ({ rate: 1, capacity: 1 }); each with its own page of ${sizes.paragraphs} distinct paragraphs of 280–320 characters (no text shared between pages; 3 fit a batch of 1,000 characters), all for one providerId. "random within the first minute": each page arrives at a seeded-random time in [0, 60 s) and all its paragraphs are translated at that instant; "all at once": every page at t = 0.`;
  const definitions = [
    `"failed": paragraphs whose promise rejected; every run is stepped 1 s at a time up to ${LIMIT_MS / 3600_000} h of virtual time, and a paragraph still unsettled then is reported as such. "429s": every call answered 429. "429s after each pacer's first reply": the 429s of calls that reached the quota after their own pacer's first successful reply had been sent, summed over the pacers; "per pacer per 10 min": that sum ÷ the sum over the pacers of the time from each one's first reply to its last settlement, in 10-minute units; in brackets the worst pacer's own figure.`,
    `"÷ bound": the time the last paragraph settles ÷ the bound, max(the last page's arrival, the time the quota needs to admit, at its refill rate, the calls and tokens it accepted in that run beyond its first full window: max((accepted calls − ${QUOTA.requestsPerMinute}) ÷ 1/s, (accepted tokens − ${fmt(QUOTA.tokensPerMinute)}) ÷ 500/s)) + ${fmt(LATENCY_MS)} ms. "Jain": Jain's fairness index (Σx)² ÷ (n·Σx²) of the pacers' throughputs x = paragraphs ÷ (its last settlement − its page's arrival) (1: all equal). "largest herd": a 429-answered call's retry is the next call of the same pacer that carries any of its texts (the pages share no text; such a call says attempt ≥ 1); the retries' start times are put in fixed windows of ${HERD_WINDOW_MS} ms ([0, 100), [100, 200) … ms of virtual time), across all pacers, and the figure is the most retries in one window. "wall (s)": the run's wall-clock time on this machine.`,
  ];
  const closing = () => `Paragraphs that resolved with a text other than their own: ${fmt(misplaced)} in all the runs of ${number}–${number}c. One run per row and build (deterministic: arrivals from a seeded PRNG, the pacers' seeds drawn from a Math.random seeded for the run). Command: \`${command}\`.`;

  return [
    table({
      title: `${number}. A quota shared with other clients: N pacers, each with a page of ${sizes.paragraphs} paragraphs, on one quota of 60 requests and 30,000 tokens a minute that reports its whole window (virtual time)`,
      columns: [...COLUMNS, "contract (defaults, random arrival)", "wall (s)"],
      rows: whole,
      textColumns: 3,
      notes: [
        quotaNote,
        pagesNote,
        ...definitions,
        ...(unmarkedRetries ? [`In ${unmarkedRetries} runs a call found as a 429's retry said attempt 0: its herd figure counts it all the same.`] : []),
        `"contract": for N pacers at their defaults against one quota that reports its whole window on every reply and every 429, pages at random within the first minute: every item settles and none fails; after each pacer's first reply, at most one 429 per pacer per 10 minutes (the summed figure); the last paragraph at most 1.2 times the bound for N from 5 to 20 and 1.5 times at 100.`,
        closing(),
      ],
    }),
    table({
      title: `${number}b. A quota shared with other clients: the same quota without the whole window, and with nothing reported (virtual time)`,
      columns: [...COLUMNS, "wall (s)"],
      rows: partial,
      textColumns: 3,
      notes: [
        `As ${number}, but the reports leave out requestsLimit and tokensLimit ("without the whole window": the pacer may not count room as refilling before the reset), or there are none at all ("nothing reported": plain string replies without usage, 429s with retryAfterMs only, as before providers reported their limits).`,
        closing(),
      ],
    }),
    table({
      title: `${number}c. A quota shared with other clients: one pacer after another client took the whole quota for ${OTHER_CLIENT_MS / 60_000} minutes (virtual time)`,
      columns: ["reports", "build", "failed", "429s", "first report with room (s)", "share of the refill, per minute from a minute later", "lowest", "last paragraph (s)", "target", "wall (s)"],
      rows: otherRows,
      textColumns: 2,
      notes: [
        `The quota of ${number}. One pacer at the defaults with a page of ${fmt(sizes.otherClientParagraphs)} paragraphs (280–320 characters) at t = 0; another client, a plain loop on the same quota and not a pacer, takes everything the quota holds at t = 0 and then every second (each whole request and all the tokens that refilled) until ${OTHER_CLIENT_MS / 1000} s, and then stops. "first report with room": the first reply or 429 sent to the pacer from ${OTHER_CLIENT_MS / 1000} s on whose limits show room for the call it answered (requestsRemaining ≥ 1 and tokensRemaining ≥ that call's tokens). From one minute after it, minute by minute, the pacer's share of the refill it used: max(its admitted calls ÷ ${QUOTA.requestsPerMinute}, their tokens ÷ ${fmt(QUOTA.tokensPerMinute)}) in that minute (the quota refills that much a minute; a minute after a long wait may show more, the bucket having filled), over the whole minutes before its last admitted call (while it still had paragraphs to send). Target ("with the whole window"): at least 90% in every such minute.`,
        closing(),
      ],
    }),
  ];
}
