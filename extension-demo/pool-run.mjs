// The pooled run of `npm start`, also driven by the demo tests: the page flow's items go
// to a pool of API keys on the mock, each key with a strict quota of its own that the
// mock enforces per key (429 + Retry-After above it) and that the options page gives
// each key as its own limits. The same article is translated with one key, then with two
// pooled keys; the report sets their times side by side and gives the calls each key
// made as the statistics page shows them (the pacer's `stats().byProvider`) beside the
// mock's own counts.
import { applySettings, extensionMessage, getStats, translations, waitTranslated } from "./harness.mjs";
import { pseudoTranslate } from "./demo-provider.js";
import { poolMembersOf, providerIdOf } from "./protocol.js";

/** The keys the mock serves, each with its own quota: 60 requests a minute, no burst. */
export const POOL_KEYS = Object.freeze(["demo-key-1", "demo-key-2"]);
export const KEY_QUOTA = Object.freeze({ rpm: 60, burst: 1 });
/** The article alone: no cues, so the page flow is the only one calling the keys. */
const ARTICLE_ONLY = "?cueStart=600000";
/** The flow's own bucket leaves room for both keys: the keys' limits are what bind. */
const PAGE_SETTINGS = Object.freeze({ rate: 8, capacity: 60, maxInFlight: 0, maxCharactersPerBatch: 1000, maxItemsPerBatch: 4, batchDelayMs: 100, stream: false, previews: true });

/** What the statistics page shows in a flow's Calls per key table: id -> { calls, items, rateLimited }. */
export function readKeyRows(flow) {
  const rows = {};
  for (const row of document.querySelectorAll(`#stats-${flow} tr[data-key-provider]`)) {
    const number = (key) => Number(row.querySelector(`[data-key-stat="${key}"]`).textContent.replaceAll(",", ""));
    rows[row.dataset.keyProvider] = { calls: number("calls"), items: number("items"), rateLimited: number("rateLimited") };
  }
  return rows;
}

/**
 * Translates the article with the page flow on the first `keyCount` of POOL_KEYS, each
 * limited to KEY_QUOTA, into `targetLang` (each run its own, so none reads another's
 * cache). Returns what the page showed, the run's time, the background's statistics,
 * the statistics page's Calls per key rows and the mock's counts per key.
 */
export async function keysRun(browser, site, mock, { keyCount, targetLang }) {
  const keys = POOL_KEYS.slice(0, keyCount);
  // No daily quotas from an earlier run; each key's bucket full again.
  mock.setOptions({ models: {}, keys: Object.fromEntries(POOL_KEYS.map((key) => [key, { ...KEY_QUOTA }])) });
  mock.reset();
  await extensionMessage(browser, { type: "resetStats" });
  const settings = await applySettings(browser, {
    page: { ...PAGE_SETTINGS, fallback: { kind: "none" }, pool: { keys }, keyLimits: { ...KEY_QUOTA } },
    targetLang,
  });
  const members = poolMembersOf(providerIdOf(settings.provider), keys.length);
  const page = await browser.context.newPage();
  const opened = Date.now();
  await page.goto(site.url + ARTICLE_ONLY);
  const done = await waitTranslated(page, { cues: false, timeoutMs: 180_000 });
  const seconds = (Date.now() - opened) / 1000;
  const shown = (await translations(page)).filter((p) => p.id.startsWith("p"));
  const wrong = shown.filter((p) => p.translation !== pseudoTranslate(p.text.trim(), targetLang) || p.shown !== 1);
  await page.close();
  const stats = await getStats(browser);
  const statsPage = await browser.context.newPage();
  await statsPage.goto(browser.pageUrl("stats.html"));
  await statsPage.waitForFunction(() => document.documentElement.dataset.statsLoaded === "1", null, { timeout: 10_000 });
  // One poll after the last paragraph: the page shows the counts the background has now.
  await statsPage.waitForTimeout(1200);
  const shownKeys = await statsPage.evaluate(readKeyRows, "page");
  await statsPage.close();
  return { keys, members, targetLang, done, shown, wrong, seconds, stats, shownKeys, mockStats: mock.stats() };
}

/** Forgets the page flow's pool and key limits (the runs after this one use the provider's key). */
export async function clearKeys(browser, mock) {
  await applySettings(browser, { page: { pool: { clear: true }, keyLimits: { rpm: 0, burst: 1 } } });
  mock.setOptions({ keys: {} });
}

/**
 * Whether a run kept the pool's promises, with the reasons it did not: every paragraph
 * under its own translation, no 429 from any key, each key used, and the statistics page
 * showing for each key the calls the mock answered for it.
 */
export function checkKeysRun(run) {
  const problems = [];
  const byProvider = run.stats.flows.page.pacer.byProvider ?? {};
  if (run.done.failed > 0) problems.push(`${run.done.failed} paragraphs failed`);
  if (run.wrong.length > 0) problems.push(`${run.wrong.length} paragraphs show another translation than their own`);
  const limited = run.keys.reduce((n, key) => n + (run.mockStats.byKey[key]?.rateLimited ?? 0), 0);
  if (limited > 0) problems.push(`the keys met ${limited} 429s`);
  if ((run.stats.flows.page.pacer.rateLimited ?? 0) > 0) problems.push(`the pacer saw ${run.stats.flows.page.pacer.rateLimited} 429s`);
  run.keys.forEach((key, i) => {
    const member = run.members[i];
    const answered = run.mockStats.byKey[key]?.ok ?? 0;
    if (answered === 0) problems.push(`${key} made no call`);
    if (byProvider[member]?.calls !== answered) problems.push(`the pacer counts ${byProvider[member]?.calls} calls for ${member}, the mock answered ${answered}`);
    if (run.shownKeys[member]?.calls !== answered) problems.push(`the statistics page shows ${run.shownKeys[member]?.calls} calls for ${member}, the mock answered ${answered}`);
  });
  return problems;
}

/** The report's lines for the one-key and two-key runs, and whether both kept their promises. */
export function poolReport(one, two) {
  const problems = [...checkKeysRun(one).map((p) => `one key: ${p}`), ...checkKeysRun(two).map((p) => `two keys: ${p}`)];
  const perKey = (run) => run.members.map((member, i) => `key ${i + 1}: ${run.shownKeys[member]?.calls ?? 0}`).join(", ");
  const limited = (run) => run.keys.reduce((n, key) => n + (run.mockStats.byKey[key]?.rateLimited ?? 0), 0);
  const paragraphs = (run) => `${run.done.pageDone} of ${run.done.pageTotal} (${run.done.failed} failed, ${run.wrong.length} misplaced)`;
  const lines = [
    "",
    `The pooled run (the article, whole replies written at once after the first token): each key may make ${KEY_QUOTA.rpm} requests a minute with no burst, enforced per key by the mock, and has that as its own limit on the options page; the page flow uses one key, then a pool of two`,
    `${"".padEnd(20)}${`one key (${one.targetLang})`.padEnd(38)}two pooled keys (${two.targetLang})`,
    `page translated     ${`${one.seconds.toFixed(1)} s`.padEnd(38)}${two.seconds.toFixed(1)} s   ${(one.seconds / two.seconds).toFixed(2)}x as fast`,
    `paragraphs          ${paragraphs(one).padEnd(38)}${paragraphs(two)}`,
    `calls per key       ${perKey(one).padEnd(38)}${perKey(two)}   (as the statistics page shows them)`,
    `429s                ${String(limited(one)).padEnd(38)}${limited(two)}`,
    ...problems.map((p) => `NOT KEPT            ${p}`),
  ];
  return { lines, ok: problems.length === 0 };
}
