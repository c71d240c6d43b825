// Pools (docs/guides/providers.md, "Pools"), through the packed package on virtual time: the pool's calls
// spread over its members, each with request.providerId = the member and request.poolId
// = the pool; routeProviders in front sends each member's calls to its own key; a member
// whose daily quota is spent leaves the page to the others; stats().byProvider; the
// option in pacer.options and setOptions; bad input naming the pool.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BatchPacer, DEFAULTS, routeProviders } from "batch-pacer";
import { setup, item, httpError, thrown } from "./helpers.mjs";

const page = (n) => Array.from({ length: n }, (_, i) => `Paragraph ${i} of the page.`);

/** A key's provider: answers `<key>: text` and records what it was asked. */
function key(name, { failAfter = Infinity, failure } = {}) {
  const requests = [];
  const provider = async (request) => {
    requests.push(request);
    if (requests.length > failAfter) throw failure();
    return `${name}: ${request.text}`;
  };
  return { provider, requests };
}

describe("pools", () => {
  test("is absent from DEFAULTS and pacer.options until set; setOptions replaces the map", (t) => {
    assert.equal("pools" in DEFAULTS, false);
    const pacer = new BatchPacer(async (r) => r.text, { pools: { gemini: ["k1", "k2"] } });
    t.after(() => pacer.dispose());
    assert.deepEqual(pacer.options.pools, { gemini: ["k1", "k2"] });
    pacer.setOptions({ pools: { groq: ["g1"] } });
    assert.deepEqual(pacer.options.pools, { groq: ["g1"] });
    // Validated first: a bad map changes nothing.
    thrown(() => pacer.setOptions({ pools: { groq: [] } }), "invalid_options");
    assert.deepEqual(pacer.options.pools, { groq: ["g1"] });
  });

  test("routeProviders sends each member's calls to its own key; each call names its member and its pool", async (t) => {
    const keys = { k1: key("k1"), k2: key("k2"), k3: key("k3") };
    const route = routeProviders(Object.fromEntries(Object.entries(keys).map(([id, k]) => [id, k.provider])));
    const { clock, send, pacer } = setup(t, {
      provider: route,
      pools: { gemini: ["k1", "k2", "k3"] },
      rate: 5,
      capacity: 1,
    });
    const texts = page(90);
    const states = texts.map((x) => send(item(x, { providerId: "gemini", llm: false })));
    await clock.tickAsync(60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"));
    for (const [i, state] of states.entries()) {
      assert.match(state.value, new RegExp(`^k[123]: ${texts[i]}$`));
    }
    for (const [id, k] of Object.entries(keys)) {
      assert.equal(k.requests.length, 30, `an even share for ${id}`);
      for (const r of k.requests) {
        assert.equal(r.providerId, id);
        assert.equal(r.poolId, "gemini");
        assert.equal("fallbackFrom" in r, false);
      }
    }
    const { byProvider, providerCalls } = pacer.stats();
    assert.equal(providerCalls, 90);
    assert.deepEqual(byProvider, {
      k1: { calls: 30, items: 30, rateLimited: 0 },
      k2: { calls: 30, items: 30, rateLimited: 0 },
      k3: { calls: 30, items: 30, rateLimited: 0 },
    });
  });

  test("a member whose daily quota is spent leaves the page to the others; a direct item has no poolId", async (t) => {
    const daily = () => httpError(429, { quota: "daily", retryAfterMs: 6 * 3600_000 });
    const k1 = key("k1", { failAfter: 3, failure: daily });
    const k2 = key("k2");
    const { clock, send, pacer } = setup(t, {
      provider: routeProviders({ k1: k1.provider, k2: k2.provider }),
      pools: { pool: ["k1", "k2"] },
      rate: 10,
      capacity: 1,
    });
    const states = page(40).map((x) => send(item(x, { providerId: "pool", llm: false })));
    const direct = send(item("Direct.", { providerId: "k2", llm: false }));
    await clock.tickAsync(60_000);
    assert.ok(states.every((s) => s.status === "fulfilled"), "nothing failed");
    assert.equal(k1.requests.length, 4, "3 answered, then the daily 429: no call after it");
    assert.equal(pacer.stats().failed, 0);
    assert.equal(pacer.stats().byProvider.k1.rateLimited, 1);
    assert.equal(direct.value, "k2: Direct.");
    const directCall = k2.requests.find((r) => r.text === "Direct.");
    assert.equal("poolId" in directCall, false, "absent on a call that serves no pool");
  });

  const bad = [
    [{ gemini: [] }, "pools.gemini", /^pools\.gemini must have at least one member \(got \[\]\)$/],
    [{ gemini: ["k1", "k1"] }, "pools.gemini", /must not list a member twice \(got "k1" twice\)/],
    [{ a: ["k1"], b: ["k1"] }, "pools.b", /^pools\.b must not list "k1", a member of pools\.a already$/],
    [{ a: ["b"], b: ["k1"] }, "pools.b", /^pools\.b must not be a pool id: it is a member of pools\.a$/],
    [{ gemini: "k1" }, "pools.gemini", /must be an array of non-empty providerId strings \(got "k1"\)/],
    [{ gemini: ["k1", ""] }, "pools.gemini", /must be an array of non-empty providerId strings \(got "" in it\)/],
    [{ gemini: ["k1", 2] }, "pools.gemini", /\(got 2 in it\)/],
    [["k1"], "pools", /^pools must be an object mapping a pool id to an array of providerIds/],
  ];
  for (const [pools, option, message] of bad) {
    test(`invalid: ${JSON.stringify(pools)} names ${option}`, () => {
      const err = thrown(() => new BatchPacer(async (r) => r.text, { pools }), "invalid_options");
      assert.match(err.message, message);
      assert.equal(err.option, option);
    });
  }
});
