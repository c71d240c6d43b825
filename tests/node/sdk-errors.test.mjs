// The AI SDK's errors, thrown by any provider, read as docs/guides/failures.md says:
// `statusCode`, `responseHeaders` (and the limits they state), `responseBody` (a wait,
// a quota), `isRetryable` and `RetryError.lastError`. The errors are real `APICallError` and
// `RetryError` instances of the `ai` package, both majors the package supports (ai 7
// and, under the alias ai-v6, ai 6), from the repository's devDependencies.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { setup, item, assertPacerError } from "./helpers.mjs";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const requireFromRepo = createRequire(join(repo, "package.json"));
const sdks = {
  "ai 7": await import(pathToFileURL(requireFromRepo.resolve("ai")).href),
  "ai 6": await import(pathToFileURL(requireFromRepo.resolve("ai-v6")).href),
};

/** An `APICallError` as the SDK's HTTP layer makes one: plain lower-case headers, the raw body. */
function apiCallError(sdk, statusCode, { headers = {}, body = "{}", ...rest } = {}) {
  return new sdk.APICallError({
    message: `HTTP ${statusCode}`,
    url: "https://api.example.test/v1/chat/completions",
    requestBodyValues: { model: "m" },
    statusCode,
    responseHeaders: headers,
    responseBody: body,
    ...rest,
  });
}

/** A `RetryError` as the SDK throws it when its own retries ran out. */
function retryError(sdk, errors) {
  return new sdk.RetryError({
    message: `Failed after ${errors.length} attempts. Last error: ${errors.at(-1).message}`,
    reason: "maxRetriesExceeded",
    errors,
  });
}

/** A pacer whose provider throws `errors` in turn, then answers upper-cased text. */
function failingThenOk(t, errors, options = {}) {
  const queue = [...errors];
  return setup(t, {
    adaptiveRate: false,
    answer: async (r) => {
      if (queue.length > 0) throw queue.shift();
      return r.text.toUpperCase();
    },
    ...options,
  });
}

for (const [name, sdk] of Object.entries(sdks)) {
  describe(`${name}: APICallError and RetryError`, () => {
    test("a 429 with retry-after 2 pauses and retries after 2 s, counted as rate limited, not under maxRetries", async (t) => {
      const error = apiCallError(sdk, 429, { headers: { "retry-after": "2" } });
      const { clock, calls, send, pacer, events } = failingThenOk(t, [error], { maxRetries: 0, baseRetryDelayMs: 500 });
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(1999);
      assert.equal(calls.length, 1, "no retry before the Retry-After");
      // The wait is lengthened by up to 10% (at least up to 250 ms): no herds.
      await clock.tickAsync(1);
      await clock.tickAsync(300);
      assert.equal(calls.length, 2);
      assert.ok(calls[1].at >= 2000, `retried at ${calls[1].at} ms`);
      assert.equal(result.value, "HELLO");
      assert.equal(pacer.stats().rateLimited, 1);
      const limited = events.find((e) => e.type === "rateLimited");
      assert.equal(limited?.retryAfterMs, 2000);
    });

    test("the response headers' rate limits are read from responseHeaders (a Headers instance too)", async (t) => {
      const headers = new Headers({ "Retry-After-Ms": "1500", "x-ratelimit-remaining-requests": "0" });
      const error = apiCallError(sdk, 429, { headers });
      const { clock, calls, send, events } = failingThenOk(t, [error]);
      send(item("hello", { llm: false }));
      await clock.tickAsync(1499);
      assert.equal(calls.length, 1, "retry-after-ms is read from a Headers instance");
      const limited = events.find((e) => e.type === "rateLimited");
      assert.equal(limited?.retryAfterMs, 1500);
    });

    test("a 401 is called once and rejects with provider_error, status 401, the error as cause", async (t) => {
      const error = apiCallError(sdk, 401, { body: '{"error":{"message":"bad key"}}' });
      assert.equal(error.isRetryable, false);
      const { clock, calls, send } = failingThenOk(t, [error, error, error]);
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1);
      assert.equal(result.status, "rejected");
      assertPacerError(result.reason, "provider_error", 401);
      assert.equal(result.reason.cause, error);
    });

    test("isRetryable: false on a 400 is not retried: one call, provider_error with status 400", async (t) => {
      const error = apiCallError(sdk, 400, { isRetryable: false });
      const { clock, calls, send } = failingThenOk(t, [error, error, error]);
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1);
      assertPacerError(result.reason, "provider_error", 400);
    });

    test("isRetryable: false without a status is not retried, where a network error would be", async (t) => {
      const error = apiCallError(sdk, undefined, { isRetryable: false });
      const { clock, calls, send } = failingThenOk(t, [error, error, error], { maxRetries: 2 });
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1);
      assertPacerError(result.reason, "provider_error");
      assert.equal(result.reason.status, undefined);
    });

    test("isRetryable: false on a 400 in a batch: sent once each alone, never the batch again", async (t) => {
      const error = apiCallError(sdk, 400, { isRetryable: false });
      let failed = false;
      const { clock, calls, send } = setup(t, {
        answer: async (r) => {
          if (r.isBatch && !failed) {
            failed = true;
            throw error;
          }
          return r.isBatch ? r.texts.map((x) => x.toUpperCase()) : r.text.toUpperCase();
        },
      });
      const results = [send(item("one")), send(item("two"))];
      await clock.tickAsync(60_000);
      assert.equal(calls.filter((c) => c.isBatch).length, 1, "the batch is not sent again");
      assert.deepEqual(
        results.map((r) => r.value),
        ["ONE", "TWO"],
      );
    });

    test("isRetryable: false on a 503 is still retried: the pacer owns 5xx", async (t) => {
      const error = apiCallError(sdk, 503, { isRetryable: false });
      const { clock, calls, send } = failingThenOk(t, [error], { baseRetryDelayMs: 1000 });
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 2);
      assert.equal(result.value, "HELLO");
    });

    test("isRetryable: false on a 429 still pauses and retries", async (t) => {
      const error = apiCallError(sdk, 429, { isRetryable: false, headers: { "retry-after": "3" } });
      const { clock, calls, send, pacer } = failingThenOk(t, [error]);
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(2999);
      assert.equal(calls.length, 1);
      await clock.tickAsync(1000);
      assert.equal(result.value, "HELLO");
      assert.equal(pacer.stats().rateLimited, 1);
    });

    test("a RetryError wrapping a 429 is read as that 429, with its Retry-After", async (t) => {
      const last = apiCallError(sdk, 429, { headers: { "retry-after": "2" } });
      const error = retryError(sdk, [apiCallError(sdk, 500), last]);
      assert.equal(error.lastError, last);
      const { clock, calls, send, pacer } = failingThenOk(t, [error], { maxRetries: 0 });
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(1999);
      assert.equal(calls.length, 1);
      // Lengthened by up to 250 ms so that clients do not herd (Rule 47).
      await clock.tickAsync(300);
      assert.equal(result.value, "HELLO");
      assert.equal(pacer.stats().rateLimited, 1);
    });

    test("a RetryError wrapping a 401 rejects with status 401 and the RetryError as cause", async (t) => {
      const error = retryError(sdk, [apiCallError(sdk, 401)]);
      const { clock, calls, send } = failingThenOk(t, [error, error]);
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1);
      assertPacerError(result.reason, "provider_error", 401);
      assert.equal(result.reason.cause, error);
    });

    test("a string statusCode is left out: the error is read as a network error, its headers still read", async (t) => {
      // As an error copied across a message boundary may carry it. (The SDK's own default
      // isRetryable, computed from a number, would be false for a string: given here.)
      const error = apiCallError(sdk, "429", { headers: { "retry-after": "4" }, isRetryable: true });
      const { clock, calls, send, pacer, events } = failingThenOk(t, [error, error, error], {
        maxRetries: 1,
        baseRetryDelayMs: 100,
      });
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(3999);
      assert.equal(calls.length, 1, "the wait its headers ask for is kept");
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 2, "retried under maxRetries (1), as a network error");
      assert.equal(pacer.stats().rateLimited, 0, "not read as a 429");
      assert.ok(events.some((e) => e.type === "retry" && e.reason === "error"));
      assertPacerError(result.reason, "provider_error");
      assert.equal(result.reason.status, undefined);
    });

    test("the limits of an APICallError's headers reach the pacer: remaining 0 holds the next call until the reset", async (t) => {
      const error = apiCallError(sdk, 500, {
        headers: { "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "5s" },
      });
      const { clock, calls, send } = failingThenOk(t, [error], { baseRetryDelayMs: 100 });
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(4999);
      assert.equal(calls.length, 1, "no call while the API says none is left");
      await clock.tickAsync(1000);
      assert.equal(result.value, "HELLO");
    });

    test("OpenAI's insufficient_quota in the responseBody is a billing error: one call, the queue rejects", async (t) => {
      const body = JSON.stringify({ error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } });
      const error = apiCallError(sdk, 429, { body });
      const { clock, calls, send, events } = failingThenOk(t, [error, error, error]);
      // Two paragraphs in one batch: one call, and no retry can help.
      const results = [send(item("one")), send(item("two"))];
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1);
      for (const result of results) assertPacerError(result.reason, "provider_error", 429);
      assert.equal(events.find((e) => e.type === "blocked")?.reason, "billing");
    });

    test("Gemini's PerDay QuotaFailure in the responseBody is a daily quota", async (t) => {
      const body = JSON.stringify({
        error: {
          code: 429,
          status: "RESOURCE_EXHAUSTED",
          details: [
            {
              "@type": "type.googleapis.com/google.rpc.QuotaFailure",
              violations: [{ quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier" }],
            },
          ],
        },
      });
      const error = apiCallError(sdk, 429, { body });
      const { clock, calls, send, events } = failingThenOk(t, [error, error]);
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(60_000);
      assert.equal(calls.length, 1);
      assertPacerError(result.reason, "provider_error", 429);
      assert.equal(events.find((e) => e.type === "blocked")?.reason, "daily");
    });

    test("Gemini's RetryInfo retryDelay in the responseBody is the wait", async (t) => {
      const body = JSON.stringify({
        error: {
          code: 429,
          status: "RESOURCE_EXHAUSTED",
          details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }],
        },
      });
      const error = apiCallError(sdk, 429, { body });
      const { clock, calls, send, events } = failingThenOk(t, [error]);
      const result = send(item("hello", { llm: false }));
      await clock.tickAsync(6999);
      assert.equal(calls.length, 1);
      await clock.tickAsync(1000);
      assert.equal(result.value, "HELLO");
      assert.equal(events.find((e) => e.type === "rateLimited")?.retryAfterMs, 7000);
    });
  });
}
