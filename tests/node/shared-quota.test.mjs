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

const without = { sharedQuota: false };

describe("N pacers at their defaults against one quota that reports its whole window on every reply and every 429, pages arriving at random within the first minute", () => {
  for (const pacers of [5, 20]) {
    const run = () => scenario(`whole ${pacers}`, { pacers, arrival: "random", reports: "whole" });

    test(`${pacers} pacers: every item settles and none fails`, { timeout: 120_000 }, async () => {
      const r = await run();
      assert.equal(r.unsettled, 0, figures(r));
      assert.equal(r.failed, 0, figures(r));
    });

    test(`${pacers} pacers: the last paragraph at most 1.2 times the quota's bound`, { timeout: 120_000 }, async () => {
      const r = await run();
      assert.equal(r.unsettled, 0, figures(r));
      assert.ok(r.timeOverBound <= 1.2, `${r.timeOverBound.toFixed(2)}x the bound; ${figures(r)}`);
    });
  }

  test("100 pacers: every item settles, the last paragraph within 1.5 times the bound, and at most a quarter as many items fail as when each counts the whole refill as its own", { timeout: 240_000 }, async () => {
    const r = await scenario("whole 100", { pacers: 100, arrival: "random", reports: "whole" });
    const before = await scenario("whole 100 without", { pacers: 100, arrival: "random", reports: "whole", options: without });
    assert.equal(r.unsettled, 0, figures(r));
    assert.ok(r.timeOverBound <= 1.5, `${r.timeOverBound.toFixed(2)}x the bound; ${figures(r)}`);
    assert.ok(before.failed > 0, `the run fails items without the rules: ${figures(before)}`);
    assert.ok(r.failed * 4 <= before.failed, `${r.failed} failed, ${before.failed} without the rules; ${figures(r)}`);
  });
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

  test("without the rules the adaptive rate's guess held it below the reported refill", async () => {
    const r = await scenario("after another client without", { pacers: 1, paragraphs: 1000, arrival: "together", reports: "whole", otherClientMs: 120_000, options: without });
    const { shares } = r.otherClient;
    assert.ok(shares.some((s) => s < 0.9), shares.map((s) => `${Math.round(s * 100)}%`).join(", "));
  });
});

describe("a pacer whose provider reports nothing", () => {
  test("behaves as with sharedQuota: false: every item settles, as many calls, the last paragraph within 10% (a wait for a Retry-After may grow by up to 10%)", async () => {
    const settings = { pacers: 1, paragraphs: 1000, arrival: "together", reports: "none" };
    const r = await scenario("nothing reported", settings);
    const before = await scenario("nothing reported without", { ...settings, options: without });
    assert.equal(r.failed + r.unsettled, 0, figures(r));
    assert.ok(Math.abs(r.calls - before.calls) <= before.calls * 0.1, `${r.calls} calls, ${before.calls} without the rules`);
    assert.ok(r.completedMs <= before.completedMs * 1.1, `${figures(r)}; without the rules ${(before.completedMs / 1000).toFixed(1)} s`);
  });
});

describe("no herds", () => {
  test("a wait for a Retry-After is lengthened by 0–10% (at least 0–250 ms), never shortened, differently for each pacer", async () => {
    // Twenty pacers (twenty tabs) meet the same 429 at once.
    const pauses = await Promise.all(
      Array.from({ length: 20 }, async () => {
        let n = 0;
        const events = [];
        const provider = async (request) => {
          if (n++ === 0) throw Object.assign(new Error("HTTP 429"), { status: 429, retryAfterMs: 2000 });
          return request.text;
        };
        const pacer = new BatchPacer(provider, { onEvent: (e) => events.push(e) });
        await pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "p" });
        pacer.dispose();
        const e = events.find((x) => x.type === "rateLimited");
        assert.equal(e.retryAfterMs, 2000);
        return e.pausedForMs;
      }),
    );
    assert.ok(pauses.every((p) => p >= 2000 && p <= 2250), pauses.join(", "));
    assert.ok(new Set(pauses).size > 10, `twenty pacers, ${new Set(pauses).size} different pauses`);
  });

  test("with sharedQuota: false the pause is the Retry-After exactly, and pacer.options shows the option only then", async () => {
    let n = 0;
    const events = [];
    const provider = async (request) => {
      if (n++ === 0) throw Object.assign(new Error("HTTP 429"), { status: 429, retryAfterMs: 300 });
      return request.text;
    };
    const pacer = new BatchPacer(provider, { sharedQuota: false, onEvent: (e) => events.push(e) });
    assert.equal(pacer.options.sharedQuota, false);
    await pacer.translate({ text: "Hello", sourceLang: "en", targetLang: "de", providerId: "p" });
    pacer.dispose();
    assert.equal(events.find((x) => x.type === "rateLimited").pausedForMs, 300);
    assert.equal("sharedQuota" in new BatchPacer(provider).options, false);
    assert.throws(() => new BatchPacer(provider, { sharedQuota: "yes" }), /sharedQuota must be a boolean \(got "yes"\)/);
  });
});
