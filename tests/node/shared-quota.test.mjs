// The README's "A quota shared with other clients": N pacers, each with its own page, on
// one provider quota of 60 requests and 30,000 tokens a minute, on one virtual clock. The
// simulation is the benchmark's (bench/shared-quota-sim.mjs, found through
// BATCH_PACER_REPO); the pacers are the installed package's.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import init, { BatchPacer } from "batch-pacer";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const { simulateSharedQuota } = await import(pathToFileURL(join(repo, "bench", "shared-quota-sim.mjs")).href);
await init();

/** Each scenario runs once (it is deterministic); the tests read its figures. */
const runs = new Map();
function scenario(name, settings) {
  if (!runs.has(name)) runs.set(name, simulateSharedQuota({ BatchPacer, ...settings }));
  return runs.get(name);
}

const figures = (r) =>
  `${r.pacers} pacers: ${r.failed} failed, ${r.unsettled} unsettled, ${r.rateLimited} 429s (${r.rateLimitedAfterFirstReply} after first replies), ` +
  `last paragraph ${(r.completedMs / 1000).toFixed(1)} s for a bound of ${(r.boundMs / 1000).toFixed(1)} s`;

describe("N pacers at their defaults against one quota that reports its whole window on every reply and every 429, pages arriving at random within the first minute", () => {
  const cases = [
    { pacers: 5, bound: 1.2 },
    { pacers: 20, bound: 1.2 },
    { pacers: 100, bound: 1.5 },
  ];
  for (const { pacers, bound } of cases) {
    const run = () => scenario(`whole ${pacers}`, { pacers, arrival: "random", reports: "whole" });

    test(`${pacers} pacers: every item settles and none fails`, { timeout: 120_000 }, async () => {
      const r = await run();
      assert.equal(r.unsettled, 0, figures(r));
      assert.equal(r.failed, 0, figures(r));
    });

    test(`${pacers} pacers: after each pacer's first reply, at most one 429 per pacer per 10 minutes`, { timeout: 120_000 }, async () => {
      const r = await run();
      assert.ok(
        r.per10MinAfterFirstReply <= 1,
        `${r.per10MinAfterFirstReply.toFixed(2)} per pacer per 10 minutes (worst pacer ${r.worstPer10Min.toFixed(2)}); ${figures(r)}`,
      );
    });

    test(`${pacers} pacers: the last paragraph at most ${bound} times the quota's bound`, { timeout: 120_000 }, async () => {
      const r = await run();
      assert.equal(r.unsettled, 0, figures(r));
      assert.ok(r.timeOverBound <= bound, `${r.timeOverBound.toFixed(2)}x the bound; ${figures(r)}`);
    });
  }
});

describe("one pacer whose provider's room was taken by another client for a while", () => {
  test("uses, from a minute after the reports show room again, at least 90% of the reported refill", async () => {
    // Another client takes everything the quota holds for its first 2 minutes; the page
    // of 1,000 paragraphs keeps the pacer busy for minutes after that.
    const r = await scenario("after another client", { pacers: 1, paragraphs: 1000, arrival: "together", reports: "whole", otherClientMs: 120_000 });
    const { shares, roomAt } = r.otherClient;
    const shown = shares.map((s) => `${Math.round(s * 100)}%`).join(", ");
    assert.equal(r.failed + r.unsettled, 0, figures(r));
    assert.ok(Number.isFinite(roomAt), "a report showed room again");
    assert.ok(shares.length >= 3, `at least 3 whole minutes of work after the first: ${shown}`);
    assert.ok(shares.every((s) => s >= 0.9), `its share of the refill, minute by minute: ${shown}`);
  });
});

describe("a pacer whose provider reports nothing", () => {
  // What this run gave before the package read shared quotas (commit 4627b56): 448 calls
  // (114 of them 429s), the last paragraph at 326.5 s, 1.005 times the quota's bound.
  // With nothing reported the new rules have nothing to act on; a wait that ends at a
  // Retry-After may only grow by up to 10% ("No herds").
  const BEFORE = { calls: 448 };

  test("behaves as before: every item settles, none fails, as many calls (±10%), the last paragraph within 1.1 times the quota's bound", async () => {
    const r = await scenario("nothing reported", { pacers: 1, paragraphs: 1000, arrival: "together", reports: "none" });
    assert.equal(r.failed + r.unsettled, 0, figures(r));
    assert.ok(Math.abs(r.calls - BEFORE.calls) <= BEFORE.calls * 0.1, `${r.calls} calls, ${BEFORE.calls} before; ${figures(r)}`);
    assert.ok(r.timeOverBound <= 1.1, `${r.timeOverBound.toFixed(3)}x the bound; ${figures(r)}`);
  });
});
