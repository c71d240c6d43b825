// The shared-quota run of `npm start`, also driven by the demo tests: five tabs' page
// flows, each its own pacer (as five users' extensions would have) on one key, translate
// the demo article against the mock provider over HTTP on 127.0.0.1, with one strict quota
// for every caller that the mock enforces (429 + Retry-After above it) and reports whole in
// its x-ratelimit-* headers (mock-provider.mjs, option `quota`). The quota is a minute's
// quota scaled down in time (30 requests and 15,000 tokens per 10 s), so that the run takes
// seconds; each page arrives at a random time within the first window. Five pages need
// about 95 calls and 46,000 tokens: three windows of this quota (twice this quota would
// admit them all within the pages' arrival, and nothing would wait). The run is made
// twice: with the pacers at their defaults (the rules of a quota shared with other
// clients), and built with `sharedQuota: false` (each pacer counts all the reported room as
// its own, the behaviour before those rules). The report gives each run's 429s, failed
// items and its time ÷ the bound: the later of the last page's arrival and the time the
// quota needs to admit the calls and tokens it accepted beyond its first full window (at
// its refill rate), plus one call's latency.
import { readFileSync } from "node:fs";

import { MODEL_ID, pseudoTranslate, startMockProvider } from "./mock-provider.mjs";
import { prng } from "./prng.mjs";

/** The quota every tab shares: a minute's 30 requests and 15,000 tokens, per 10 s. */
export const SHARED_QUOTA = Object.freeze({ requests: 30, tokens: 15_000, windowMs: 10_000 });
/** Five tabs, each reading the article into its own language. */
export const TAB_LANGUAGES = Object.freeze(["de", "fr", "es", "pt", "nl"]);
/** The mock's time to answer: 250 ms plus up to 100 ms. */
const LATENCY = Object.freeze({ latency: 250, jitter: 100 });
const PROVIDER_ID = "team-key";

/** The demo article's text blocks (headings, paragraphs, list items, cells …), in order. */
export function articleBlocks() {
  const html = readFileSync(new URL("./demo-page/index.html", import.meta.url), "utf8");
  const body = html.slice(html.indexOf("<body"));
  const blocks = [];
  const block = /<(h1|h2|h3|h4|p|li|figcaption|blockquote|th|td|dt|dd)\b[^>]*>([\s\S]*?)<\/\1>/g;
  for (const [, , inner] of body.matchAll(block)) {
    const text = inner
      .replace(/<[^>]+>/g, "")
      .replace(/&amp;/g, "&")
      .replace(/&nbsp;/g, " ")
      .replace(/\s+/g, " ")
      .trim();
    if (text !== "") blocks.push(text);
  }
  return blocks;
}

/**
 * One run: a pacer per tab, built by `BatchPacer` from the package (`pkg`: `{ BatchPacer,
 * openAIProvider }`, loaded), at its defaults or with `sharedQuota: false`, each tab's page
 * arriving at a seeded-random time within the quota's first window. Resolves with what the
 * report gives and what the tests check.
 */
export async function sharedQuotaRun(pkg, { sharedQuota, seed = 7, quota = SHARED_QUOTA, languages = TAB_LANGUAGES } = {}) {
  const mock = await startMockProvider({ port: 0, rpm: 0, quota, ...LATENCY, seed });
  const texts = articleBlocks();
  const arrivals = prng(seed);
  const tabs = languages.map((lang) => ({
    lang,
    arrivalMs: Math.floor(arrivals() * quota.windowMs),
    firstReplyMs: Infinity,
    rateLimitedAfterFirstReply: 0,
  }));
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  const pacers = tabs.map((tab) => {
    const viaMock = pkg.openAIProvider({ baseUrl: mock.url, apiKey: "", model: MODEL_ID });
    const provider = async (request) => {
      const reply = await viaMock(request);
      tab.firstReplyMs = Math.min(tab.firstReplyMs, elapsed());
      return reply;
    };
    const onEvent = (event) => {
      if (event.type === "rateLimited" && elapsed() > tab.firstReplyMs) tab.rateLimitedAfterFirstReply += 1;
    };
    return new pkg.BatchPacer(provider, sharedQuota ? { onEvent } : { sharedQuota: false, onEvent });
  });
  let lastSettledMs = 0;
  const outcomes = [];
  try {
    await Promise.all(
      tabs.map(async (tab, i) => {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, tab.arrivalMs - elapsed())));
        const settled = await Promise.allSettled(
          texts.map((text) =>
            pacers[i].translate({ text, sourceLang: "en", targetLang: tab.lang, providerId: PROVIDER_ID }).finally(() => {
              lastSettledMs = Math.max(lastSettledMs, elapsed());
            }),
          ),
        );
        settled.forEach((outcome, k) => outcomes.push({ outcome, wanted: pseudoTranslate(texts[k], tab.lang) }));
      }),
    );
  } finally {
    for (const pacer of pacers) pacer.dispose();
    await mock.close();
  }
  const stats = mock.stats();
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  const latencyMs = LATENCY.latency + LATENCY.jitter / 2;
  const beyondFirstWindow = Math.max(
    (stats.ok - quota.requests) / quota.requests,
    quota.tokens > 0 ? (stats.quotaTokens - quota.tokens) / quota.tokens : 0,
  );
  const lastArrivalMs = Math.max(...tabs.map((tab) => tab.arrivalMs));
  const boundMs = Math.max(lastArrivalMs, beyondFirstWindow * quota.windowMs) + latencyMs;
  return {
    sharedQuota,
    quota,
    tabs: tabs.length,
    items: outcomes.length,
    failed: outcomes.filter(({ outcome }) => outcome.status === "rejected").length,
    misplaced: outcomes.filter(({ outcome, wanted }) => outcome.status === "fulfilled" && outcome.value !== wanted).length,
    rateLimited: sum(pacers.map((pacer) => pacer.stats().rateLimited)),
    mockRateLimited: stats.rateLimited,
    rateLimitedAfterFirstReply: Math.max(...tabs.map((tab) => tab.rateLimitedAfterFirstReply)),
    accepted: stats.ok,
    acceptedTokens: stats.quotaTokens,
    lastArrivalMs,
    latencyMs,
    seconds: lastSettledMs / 1000,
    boundSeconds: boundMs / 1000,
    timeOverBound: lastSettledMs / boundMs,
  };
}

/** The report's lines for the two runs, and whether the run with the rules kept its promise. */
export function sharedQuotaReport(withRules, without) {
  const { requests, tokens, windowMs } = withRules.quota;
  const row = (label, pick) => `${label.padEnd(20)}${String(pick(withRules)).padEnd(40)}${pick(without)}`;
  const problems = [];
  if (withRules.failed > 0) problems.push(`${withRules.failed} items failed with the rules`);
  if (withRules.misplaced > 0 || without.misplaced > 0) problems.push(`${withRules.misplaced + without.misplaced} items under another item's translation`);
  const lines = [
    "",
    `The shared-quota run (the article in ${withRules.tabs} tabs, each tab's page flow its own pacer on one key): one quota for every caller, ${requests} requests and ${tokens.toLocaleString("en")} tokens per ${windowMs / 1000} s (a minute's quota, scaled down in time), enforced by the mock (429 + Retry-After) and reported whole in its x-ratelimit-* headers; the pages arrive at random within the first ${windowMs / 1000} s`,
    `${"".padEnd(20)}${"pacers at their defaults".padEnd(40)}sharedQuota: false (before)`,
    row("paragraphs", (r) => `${r.items - r.failed} of ${r.items} (${r.failed} failed, ${r.misplaced} misplaced)`),
    row("429s", (r) => `${r.rateLimited} (the mock counted ${r.mockRateLimited})`),
    row("429s after a reply", (r) => `at most ${r.rateLimitedAfterFirstReply} per tab`),
    row("accepted", (r) => `${r.accepted} calls, ${r.acceptedTokens.toLocaleString("en")} tokens`),
    row("last paragraph", (r) => `${r.seconds.toFixed(1)} s`),
    row("time ÷ bound", (r) => `${r.timeOverBound.toFixed(2)}x (bound ${r.boundSeconds.toFixed(1)} s)`),
    `(bound: the later of the last page's arrival (${(withRules.lastArrivalMs / 1000).toFixed(1)} s) and the time the quota needs to admit the calls and tokens each run accepted beyond its first full window, at its refill rate, plus one call's latency (${withRules.latencyMs} ms))`,
    ...problems.map((p) => `NOT KEPT            ${p}`),
  ];
  return { lines, ok: problems.length === 0 };
}
