// Tests of routeProviders(map), the provider that sends each call to the provider of its
// `request.providerId`: called directly, and driven by a BatchPacer whose items go to
// two providers. Run: bash tests/node/run-package-tests.sh

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import init, { BatchPacer, PacerError, routeProviders } from "batch-pacer";

import { requestFields, singleRequest } from "./chat-server.mjs";
import { rejection } from "./helpers.mjs";

/** A provider that answers every text with `tag` before it, and records its requests. */
function tagging(tag) {
  const requests = [];
  const provider = async (request) => {
    requests.push(request);
    return request.isBatch
      ? Object.fromEntries(request.ids.map((id, i) => [id, `${tag}${request.texts[i]}`]))
      : `${tag}${request.text}`;
  };
  return { provider, requests };
}

const request = (providerId, text = "Hello") => singleRequest(text, { providerId });

describe("routeProviders called directly", () => {
  test("each call goes to the provider of its providerId, with the request as it came", async () => {
    const a = tagging("a:");
    const b = tagging("b:");
    const route = routeProviders({ a: a.provider, b: b.provider });
    assert.equal(typeof route, "function");

    const toA = request("a", "one");
    const toB = request("b", "two");
    assert.equal(await route(toA), "a:one");
    assert.equal(await route(toB), "b:two");
    assert.equal(await route(request("a", "three")), "a:three");
    assert.equal(a.requests.length, 2);
    assert.equal(b.requests.length, 1);
    assert.equal(a.requests[0], toA, "the same request object, signal and all");
    assert.equal(b.requests[0], toB);
  });

  test("what the provider returns comes back unchanged: a stream, an object, a synchronous value", async () => {
    const stream = (async function* pieces() {
      yield "Hal";
      yield "lo";
    })();
    const reply = { translations: "Hallo", usage: { inputTokens: 3 }, truncated: true };
    const route = routeProviders({ streaming: async () => stream, object: async () => reply, sync: () => "now" });
    assert.equal(await route(request("streaming")), stream);
    assert.equal(await route(request("object")), reply);
    assert.equal(route(request("sync")), "now", "not wrapped in a promise");
  });

  test("a providerId the map does not hold rejects with retryable: false, naming the id and the known ones", async () => {
    const a = tagging("a:");
    const route = routeProviders({ a: a.provider, b: tagging("b:").provider });
    const err = await rejection(route(request("x")));
    assert.ok(err instanceof Error);
    assert.equal(err.retryable, false);
    assert.equal(err.message, 'routeProviders has no provider for providerId "x" (it has: "a", "b")');
    assert.equal(err.status, undefined, "no HTTP status: it is not the API's answer");
    assert.equal(a.requests.length, 0);
  });

  test("ids that Object.prototype holds never reach it", async () => {
    const route = routeProviders({ a: tagging("a:").provider });
    for (const id of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
      const err = await rejection(route(request(id)));
      assert.equal(err.retryable, false, id);
      assert.match(err.message, new RegExp(`no provider for providerId "${id}" \\(it has: "a"\\)`));
    }
  });

  test("own keys named like Object.prototype's route as any other, in a map with or without a prototype", async () => {
    const map = { constructor: tagging("c:").provider };
    Object.defineProperty(map, "__proto__", { value: tagging("p:").provider, enumerable: true });
    const route = routeProviders(map);
    assert.equal(await route(request("constructor")), "c:Hello");
    assert.equal(await route(request("__proto__")), "p:Hello");

    const bare = Object.create(null);
    bare.only = tagging("o:").provider;
    const fromBare = routeProviders(bare);
    assert.equal(await fromBare(request("only")), "o:Hello");
    assert.equal((await rejection(fromBare(request("toString")))).retryable, false);
  });

  test("the map is copied when the router is made", async () => {
    const map = { a: tagging("a:").provider };
    const route = routeProviders(map);
    map.a = tagging("changed:").provider;
    map.b = tagging("b:").provider;
    assert.equal(await route(request("a")), "a:Hello");
    assert.equal((await rejection(route(request("b")))).retryable, false);
  });

  test("a map that is not a plain object of functions is invalid_options saying what was wrong", () => {
    const fn = async () => "x";
    class Providers {
      constructor() {
        this.a = fn;
      }
    }
    const cases = [
      [undefined, /^routeProviders takes a plain object .*\(got undefined\)$/],
      [null, /^routeProviders takes a plain object .*\(got null\)$/],
      ["a", /^routeProviders takes a plain object .*\(got "a"\)$/],
      [[fn], /^routeProviders takes a plain object .*\(got an array\)$/],
      [new Map([["a", fn]]), /^routeProviders takes a plain object .*\(got a Map\)$/],
      [new Providers(), /^routeProviders takes a plain object .*\(got a Providers\)$/],
      [fn, /^routeProviders takes a plain object .*\(got a function\)$/],
      [{ a: fn, b: "https://api.openai.com/v1" }, /^routeProviders: the provider for providerId "b" must be a function \(got "https:\/\/api\.openai\.com\/v1"\)$/],
      [{ a: null }, /^routeProviders: the provider for providerId "a" must be a function \(got null\)$/],
      [{ a: { provider: fn } }, /^routeProviders: the provider for providerId "a" must be a function \(got an object\)$/],
    ];
    for (const [map, message] of cases) {
      assert.throws(
        () => routeProviders(map),
        (err) => {
          assert.ok(err instanceof PacerError, String(err));
          assert.equal(err.code, "invalid_options");
          assert.match(err.message, message);
          return true;
        },
      );
    }
    assert.equal(typeof routeProviders({}), "function", "an empty map is a router that has no provider");
  });

  test("a request without a providerId string is a failed call too", async () => {
    const route = routeProviders({ a: tagging("a:").provider });
    const err = await rejection(route({ ...requestFields(), providerId: undefined, texts: ["x"], text: "x" }));
    assert.equal(err.retryable, false);
    assert.match(err.message, /providerId undefined/);
  });
});

describe("routeProviders driven by BatchPacer", () => {
  const item = (text, providerId) => ({ text, sourceLang: "en", targetLang: "de", providerId });

  test("items of two providerIds go to their own providers, batched apart", async (t) => {
    await init();
    const a = tagging("a:");
    const b = tagging("b:");
    const pacer = new BatchPacer(routeProviders({ gemini: a.provider, groq: b.provider }), { batchDelayMs: 20, maxItemsPerBatch: 4 });
    t.after(() => pacer.dispose());
    const results = await Promise.all([
      pacer.translate(item("one", "gemini")),
      pacer.translate(item("two", "groq")),
      pacer.translate(item("three", "gemini")),
      pacer.translate(item("four", "groq")),
      pacer.translate(item("five", "groq")),
    ]);
    assert.deepEqual(results, ["a:one", "b:two", "a:three", "b:four", "b:five"]);
    assert.ok(a.requests.every((r) => r.providerId === "gemini"));
    assert.ok(b.requests.every((r) => r.providerId === "groq"));
    assert.deepEqual(a.requests.flatMap((r) => r.texts).sort(), ["one", "three"]);
    assert.deepEqual(b.requests.flatMap((r) => r.texts).sort(), ["five", "four", "two"]);
    assert.equal(pacer.stats().providerCalls, 2, "one batch per provider");
  });

  test("an item for a providerId the map lacks rejects provider_error naming it, without retries", async (t) => {
    await init();
    const a = tagging("a:");
    const pacer = new BatchPacer(routeProviders({ gemini: a.provider }), { batchDelayMs: 0, baseRetryDelayMs: 0 });
    t.after(() => pacer.dispose());
    const [known, unknown] = await Promise.allSettled([
      pacer.translate(item("one", "gemini")),
      pacer.translate({ ...item("two", "openrouter"), llm: false }),
    ]);
    assert.deepEqual(known, { status: "fulfilled", value: "a:one" });
    assert.equal(unknown.status, "rejected");
    assert.ok(unknown.reason instanceof PacerError);
    assert.equal(unknown.reason.code, "provider_error");
    assert.match(unknown.reason.message, /openrouter/);
    assert.match(unknown.reason.cause?.message ?? "", /no provider for providerId "openrouter" \(it has: "gemini"\)/);
    const stats = pacer.stats();
    assert.equal(stats.retries, 0, "retryable: false is never retried");
    assert.equal(stats.providerCalls, 2);
  });
});
