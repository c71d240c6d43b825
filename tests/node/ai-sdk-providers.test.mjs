// aiSdkProvider end to end: the real Vercel AI SDK (`generateText` / `streamText` of ai 7
// and of ai 6) with the real `@ai-sdk/anthropic` and `@ai-sdk/google` of each major,
// calling local servers that speak Anthropic's Messages API and the Gemini API
// (anthropic-server.mjs, gemini-server.mjs), driven by the packed package's BatchPacer.
// What a user relies on (docs/guides/ai-sdk.md: `aiSdkProvider`, and docs/guides/quotas.md):
// replies and their usage reach the pacer, the batch instructions reach the model as its
// system prompt under the name each SDK major reads, the finish reason at the token limit
// is a truncated reply, a 429 is a 429 (whole or streamed) with its wait, a daily quota
// and a wrong key fail without retries, and the limits a reply reports hold the next call back.
//
// Run alone:
//   SKIP_BUILD=1 bash tests/node/run-package-tests.sh --test-name-pattern='aiSdkProvider'
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import init, { BatchPacer, aiSdkProvider } from "batch-pacer";

import { virtualTime, track, flushMicrotasks, assertPacerError, disposeAfter } from "./helpers.mjs";
import { skipIfMissing } from "./requirements.mjs";
import { SDKS, sdkMissing } from "./ai-sdk-modules.mjs";
import { promptTexts, faithfulPieces } from "./chat-server.mjs";
import * as anthropic from "./anthropic-server.mjs";
import * as gemini from "./gemini-server.mjs";

await init();

const skip = skipIfMissing(sdkMissing());
const { translated } = anthropic;

/** The user's own system prompt; the pacer's batch instructions are appended to it. */
const SYSTEM = "You translate web pages for a browser extension.";

/** Each API: its server, its model through the SDK, and its documented answers. */
const APIS = [
  {
    name: "Anthropic",
    start: anthropic.startAnthropicServer,
    model: (sdk, srv) => sdk.createAnthropic({ baseURL: srv.baseURL, apiKey: "test-key" })("claude-haiku-4-5"),
    /** `pieces` as the model's answer; `truncated`: it stopped at its token limit. */
    answer: (record, pieces, { truncated = false } = {}) => {
      const stopReason = truncated ? "max_tokens" : "end_turn";
      return record.stream
        ? anthropic.messageStream(record, pieces, { stopReason })
        : anthropic.message(record, pieces.join(""), { stopReason });
    },
    /** A 429 asking to wait `seconds`: `retry-after`, and the request window spent. */
    rateLimited: (seconds) =>
      anthropic.rateLimited(
        seconds,
        anthropic.rateLimitHeaders({ requests: { limit: 50, remaining: 0, reset: anthropic.resetIn(seconds * 1000) } }),
      ),
    /** A wrong key, the status the API gives it, and the calls a batch of two costs. */
    wrongKey: () => anthropic.apiError(401, "authentication_error", "invalid x-api-key"),
    wrongKeyStatus: 401,
    // A settings error: the call's items (and the provider's queued ones) reject at once.
    wrongKeyCalls: 1,
  },
  {
    name: "Gemini",
    start: gemini.startGeminiServer,
    model: (sdk, srv) => sdk.createGoogleGenerativeAI({ baseURL: srv.baseURL, apiKey: "test-key" })("gemini-2.5-flash"),
    answer: (record, pieces, { truncated = false } = {}) => {
      const finishReason = truncated ? "MAX_TOKENS" : "STOP";
      return record.stream
        ? gemini.contentStream(record, pieces, { finishReason })
        : gemini.content(record, pieces.join(""), { finishReason });
    },
    // Gemini says how long to wait in the body only (RetryInfo), never in a header.
    rateLimited: (seconds) => gemini.quotaExceeded(gemini.PER_MINUTE, `${seconds}s`),
    // The Gemini API answers a key it does not know with 400 INVALID_ARGUMENT.
    wrongKey: () =>
      gemini.apiError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "API_KEY_INVALID",
          domain: "googleapis.com",
          metadata: { service: "generativelanguage.googleapis.com" },
        },
      ]),
    wrongKeyStatus: 400,
    // A 400 that the SDK marks `isRetryable: false`: never retried, but a batch's items are
    // each worth one call alone (one paragraph may be what the API refuses), then reject.
    wrongKeyCalls: 3,
  },
];

/** Paragraphs of a page, each with a number of its own and a length of its own. */
const PAGE = [
  "The museum opened in 1874.",
  "Our bakery sells 2360 loaves of bread every week, most of them before nine.",
  "The bridge is 5129 metres long and crosses the bay in one straight line from the harbour to the lighthouse.",
  "In 1931 a storm tore the roof off the old train station, and the repairs took two years; the town held its markets in the open air.",
];

const item = (text) => ({ text, sourceLang: "en", targetLang: "de", providerId: "ai" });

/** The provider with every request the pacer made of it, and the virtual time it came. */
function recorded(provider, clock) {
  const requests = [];
  const wrapped = (request) => {
    requests.push({ at: clock?.now, ...request });
    return provider(request);
  };
  return { provider: wrapped, requests };
}

/** The sum of one usage field over the server's answers. */
const reported = (srv, field) => srv.requests.reduce((sum, r) => sum + (r.reply?.usage?.[field] ?? 0), 0);

/** Waits, in real time, until `predicate()` holds (the SDK's HTTP calls take real time). */
async function until(predicate, what) {
  for (let i = 0; i < 2000; i++) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** Advances virtual time 50 ms at a time (letting real I/O run) until `predicate()` holds. */
async function advanceUntil(clock, predicate, what, limitMs = 20_000) {
  const start = clock.now;
  while (!predicate()) {
    if (clock.now - start > limitMs) assert.fail(`${what} did not happen within ${limitMs} ms of virtual time`);
    clock.tick(50);
    await flushMicrotasks();
  }
}

/** The stream and the SDK call each API major and mode uses. */
function providerFor(sdk, api, srv, stream) {
  return aiSdkProvider({
    model: api.model(sdk, srv),
    generateText: sdk.ai.generateText,
    streamText: sdk.ai.streamText,
    stream,
    system: SYSTEM,
  });
}

for (const sdk of SDKS) {
  for (const api of APIS) {
    for (const stream of [false, true]) {
      const mode = stream ? "streamText" : "generateText";
      describe(`aiSdkProvider with ${sdk.name}'s ${mode} and the ${api.name} API`, { skip }, () => {
        test("a page's paragraphs go out as one batch and each resolves to its own translation; usage reaches stats()", async (t) => {
          const srv = await api.start(t, (record) => api.answer(record, faithfulPieces(record.prompt, translated)));
          const { provider, requests } = recorded(providerFor(sdk, api, srv, stream));
          const pacer = new BatchPacer(provider, { batchDelayMs: 20 });
          disposeAfter(t, pacer);

          const results = await Promise.all(PAGE.map((text) => pacer.translate(item(text))));

          assert.deepEqual(results, PAGE.map(translated));
          assert.equal(srv.requests.length, 1, "one call for the page, not retried");
          const [sent] = srv.requests;
          const [request] = requests;
          assert.equal(request.isBatch, true);
          assert.deepEqual(promptTexts(sent.prompt), PAGE, "the prompt is the batch's marked text");
          assert.equal(sent.prompt, request.text);
          // The system prompt reaches the model under the name this SDK major reads
          // (ai 7: `instructions`; ai 6 reads only `system`).
          assert.ok(sent.system?.startsWith(SYSTEM), `the user's system prompt is sent: ${JSON.stringify(sent.system)}`);
          assert.ok(sent.system.includes(request.instructions), "the batch instructions are appended to it");
          assert.equal(sent.maxTokens, request.maxOutputTokens, "maxOutputTokens reaches the API");
          assert.equal(sent.stream, stream);
          const stats = pacer.stats();
          assert.equal(stats.inputTokens, reported(srv, api.name === "Gemini" ? "promptTokenCount" : "input_tokens"));
          assert.equal(stats.outputTokens, reported(srv, api.name === "Gemini" ? "candidatesTokenCount" : "output_tokens"));
          assert.ok(stats.inputTokens > 0 && stats.outputTokens > 0);
          assert.equal(stats.streamedCalls, stream ? 1 : 0);
          assert.equal(stats.failed, 0);
        });

        test("an answer stopped at its token limit: the segments it finished resolve, the rest go out again", async (t) => {
          const srv = await api.start(t, (record, index) => {
            const pieces = faithfulPieces(record.prompt, translated);
            if (index > 0) return api.answer(record, pieces);
            // Three segments whole, then the fourth's opening and half of its text.
            const fourth = pieces[3];
            return api.answer(record, [...pieces.slice(0, 3), fourth.slice(0, Math.ceil(fourth.length / 2))], { truncated: true });
          });
          const { provider } = recorded(providerFor(sdk, api, srv, stream));
          const pacer = new BatchPacer(provider, { batchDelayMs: 20, baseRetryDelayMs: 0 });
          disposeAfter(t, pacer);

          const results = await Promise.all(PAGE.map((text) => pacer.translate(item(text))));

          assert.deepEqual(results, PAGE.map(translated), "every paragraph ends with its own translation");
          const later = srv.requests.slice(1).flatMap((r) => promptTexts(r.prompt));
          assert.ok(srv.requests.length >= 2, "what the answer did not finish went out again");
          assert.ok(later.includes(PAGE[3]), "the paragraph cut off is sent again");
          assert.ok(!later.includes(PAGE[0]), "the first paragraph, finished and proven, is not sent again");
          assert.ok(pacer.stats().countMismatches >= 1);
        });

        test("a single paragraph whose answers stop at the token limit fails after its retries, each retry with a doubled bound", async (t) => {
          const text = PAGE[2];
          const srv = await api.start(t, (record) => api.answer(record, [translated(text).slice(0, 30)], { truncated: true }));
          const pacer = new BatchPacer(providerFor(sdk, api, srv, stream), { maxRetries: 1, baseRetryDelayMs: 0 });
          disposeAfter(t, pacer);

          const state = track(pacer.translate(item(text)));
          await until(() => state.status !== "pending", "the item to settle");

          assert.equal(state.status, "rejected", "a cut-off single answer is never a translation");
          assertPacerError(state.reason, "provider_error");
          assert.match(state.reason.message, /bound/, "the message says the answer did not end within its bound");
          assert.equal(srv.requests.length, 2, "the first try and maxRetries (1) retry");
          assert.equal(srv.requests[1].maxTokens, 2 * srv.requests[0].maxTokens, "the retry carries twice the bound");
        });

        test("a 429 pauses the provider for the wait the API gave, counts in rateLimited, then the retry succeeds", async (t) => {
          const srv = await api.start(t, (record, index) =>
            index === 0 ? api.rateLimited(2) : api.answer(record, faithfulPieces(record.prompt, translated)),
          );
          const { clock, pacerClock } = virtualTime();
          const { provider, requests } = recorded(providerFor(sdk, api, srv, stream), clock);
          const pacer = new BatchPacer(provider, { clock: pacerClock, batchDelayMs: 20 });
          disposeAfter(t, pacer);

          const states = PAGE.slice(0, 2).map((text) => track(pacer.translate(item(text))));
          clock.tick(20);
          await until(() => pacer.stats().rateLimited === 1, "the 429 to reach the pacer");
          const pausedAt = clock.now;
          assert.equal(requests.length, 1);
          await advanceUntil(clock, () => requests.length === 2, "the retry");
          assert.ok(
            requests[1].at - pausedAt >= 2000,
            `the retry waits the 2 s the API asked for (it came after ${requests[1].at - pausedAt} ms; the default backoff is 1 s)`,
          );
          await until(() => states.every((s) => s.status !== "pending"), "the items to settle");

          assert.deepEqual(states.map((s) => s.value), PAGE.slice(0, 2).map(translated));
          const stats = pacer.stats();
          assert.equal(stats.rateLimited, 1, "one 429 seen");
          assert.equal(stats.failed, 0);
          assert.equal(srv.requests.length, 2, "the SDK did not retry on its own");
          assert.equal(srv.requests[0].reply.status, 429);
        });

        test(`a wrong key (${api.wrongKeyStatus}) fails with its status, never retried`, async (t) => {
          const srv = await api.start(t, () => api.wrongKey());
          const pacer = new BatchPacer(providerFor(sdk, api, srv, stream), { batchDelayMs: 20, baseRetryDelayMs: 0 });
          disposeAfter(t, pacer);

          const states = PAGE.slice(0, 2).map((text) => track(pacer.translate(item(text))));
          await until(() => states.every((s) => s.status !== "pending"), "the items to settle");

          for (const s of states) {
            assert.equal(s.status, "rejected");
            assertPacerError(s.reason, "provider_error", api.wrongKeyStatus);
          }
          assert.equal(srv.requests.length, api.wrongKeyCalls, "no call is retried, by the pacer nor by the SDK");
          if (api.wrongKeyCalls > 1) {
            assert.deepEqual(srv.requests.slice(1).map((r) => r.prompt), PAGE.slice(0, 2), "after the batch, each item once alone");
          }
        });
      });
    }
  }

  describe(`aiSdkProvider with ${sdk.name} and the Gemini API: a quota per day`, { skip }, () => {
    for (const stream of [false, true]) {
      test(`(${stream ? "streamText" : "generateText"}) a 429 whose QuotaFailure counts per day fails at once with status 429, and later items fail without a call`, async (t) => {
        const srv = await gemini.startGeminiServer(t, () => gemini.quotaExceeded(gemini.PER_DAY, "37s"));
        const pacer = new BatchPacer(providerFor(sdk, APIS[1], srv, stream), { batchDelayMs: 20 });
        disposeAfter(t, pacer);

        const first = track(pacer.translate(item(PAGE[0])));
        await until(() => first.status !== "pending", "the first item to settle");
        assert.equal(first.status, "rejected");
        assertPacerError(first.reason, "provider_error", 429);
        assert.equal(srv.requests.length, 1, "a spent daily quota is not retried");

        const later = track(pacer.translate(item(PAGE[1])));
        await until(() => later.status !== "pending", "the later item to settle");
        assert.equal(later.status, "rejected");
        assertPacerError(later.reason, "provider_error", 429);
        assert.equal(srv.requests.length, 1, "no call while the day's quota is spent");
        assert.equal(pacer.stats().rateLimited, 1);
      });
    }
  });

  describe(`aiSdkProvider with ${sdk.name} and the Anthropic API: the limits a reply reports`, { skip }, () => {
    for (const stream of [false, true]) {
      test(`(${stream ? "streamText" : "generateText"}) anthropic-ratelimit-* headers saying the request window is spent hold the next call until its reset`, async (t) => {
        let reset;
        const srv = await anthropic.startAnthropicServer(t, (record, index) => {
          const pieces = faithfulPieces(record.prompt, translated);
          if (index > 0) return APIS[0].answer(record, pieces);
          reset = anthropic.resetIn(5000);
          const headers = anthropic.rateLimitHeaders({
            // A window of one request (with a larger one, room refills in proportion
            // before the reset: docs/reference.md, Rule 34).
            requests: { limit: 1, remaining: 0, reset },
            tokens: { limit: 80_000, remaining: 79_000, reset },
          });
          return stream
            ? anthropic.messageStream(record, pieces, { headers })
            : anthropic.message(record, pieces.join(""), { headers });
        });
        const { clock, pacerClock } = virtualTime();
        const { provider, requests } = recorded(providerFor(sdk, APIS[0], srv, stream), clock);
        const pacer = new BatchPacer(provider, { clock: pacerClock, batchDelayMs: 20 });
        disposeAfter(t, pacer);

        const first = track(pacer.translate(item(PAGE[0])));
        clock.tick(20);
        await until(() => first.status !== "pending", "the first item");
        assert.equal(first.value, translated(PAGE[0]));
        const answeredAt = clock.now;
        // What is left of the window, by the wall clock, when the reply was read.
        const leftMs = reset.getTime() - Date.now();

        const second = track(pacer.translate(item(PAGE[1])));
        await advanceUntil(clock, () => requests.length === 2, "the second call");
        assert.ok(
          requests[1].at - answeredAt >= leftMs - 1000,
          `the second call waits for the reset (${requests[1].at - answeredAt} ms of virtual time; about ${leftMs} ms were left)`,
        );
        await until(() => second.status !== "pending", "the second item");
        assert.equal(second.value, translated(PAGE[1]));
        assert.equal(pacer.stats().rateLimited, 0, "held back before any 429");
      });
    }
  });

  describe(`aiSdkProvider with ${sdk.name}'s streamText and the Anthropic API: an error inside the stream`, { skip }, () => {
    test("an overloaded_error event after three segments: what the stream proved stays, the rest go out again", async (t) => {
      const srv = await anthropic.startAnthropicServer(t, (record, index) => {
        const pieces = faithfulPieces(record.prompt, translated);
        if (index > 0) return anthropic.messageStream(record, pieces);
        return anthropic.messageStream(record, pieces.slice(0, 3), { error: { type: "overloaded_error", message: "Overloaded" } });
      });
      const pacer = new BatchPacer(providerFor(sdk, APIS[0], srv, true), { batchDelayMs: 20, baseRetryDelayMs: 0 });
      disposeAfter(t, pacer);

      const results = await Promise.all(PAGE.map((text) => pacer.translate(item(text))));

      assert.deepEqual(results, PAGE.map(translated), "every paragraph ends with its own translation");
      assert.equal(srv.requests.length, 2, "the broken call is retried once");
      const again = promptTexts(srv.requests[1].prompt);
      assert.ok(again.includes(PAGE[3]), "the paragraph the stream never reached goes out again");
      assert.ok(!again.includes(PAGE[0]), "the first paragraph, proven before the error, does not");
      const stats = pacer.stats();
      assert.equal(stats.streamedCalls, 2);
      assert.equal(stats.rateLimited, 0, "an overloaded API is not a 429");
      assert.equal(stats.failed, 0);
    });
  });
}
