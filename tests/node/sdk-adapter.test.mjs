// aiSdkProvider with stand-ins for the AI SDK's generateText and streamText that record
// what they were called with and answer in the SDK's result shapes (docs/guides/ai-sdk.md: "The AI SDK
// and other clients"). The real SDK against wire-format servers is tested elsewhere.

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { aiSdkProvider, BatchPacer } from "batch-pacer";
import { virtualTime, disposeAfter, track, item, thrown } from "./helpers.mjs";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const { APICallError } = await import(pathToFileURL(createRequire(join(repo, "package.json")).resolve("ai")).href);

/** The system prompt each SDK major reads from the options it is given. */
const readsSystem = {
  "ai 6": (options) => options.system,
  "ai 7": (options) => options.instructions ?? options.system,
};

/** A generateText stand-in: records its options, answers `reply(options)` in the SDK's result shape. */
function fakeGenerateText(reply) {
  const calls = [];
  const generateText = async (options) => {
    calls.push(options);
    return {
      text: "",
      finishReason: "stop",
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      response: { headers: {} },
      ...reply(options),
    };
  };
  return { generateText, calls };
}

/** A request as the pacer builds one, for calling a provider directly. */
function request(fields = {}) {
  return {
    texts: ["Hello"],
    ids: ["1"],
    text: "Hello",
    instructions: "",
    isBatch: false,
    sourceLang: "en",
    targetLang: "de",
    providerId: "p1",
    context: "",
    attempt: 0,
    maxOutputTokens: 40.5,
    metas: [undefined],
    format: "single",
    signal: new AbortController().signal,
    ...fields,
  };
}

/** A pacer on a virtual clock around `provider`. */
function pacerWith(t, provider, options = {}) {
  const { clock, pacerClock } = virtualTime();
  const events = [];
  const pacer = new BatchPacer(provider, { clock: pacerClock, onEvent: (e) => events.push(e), ...options });
  disposeAfter(t, pacer);
  return { pacer, clock, events, send: (entry) => track(pacer.translate(entry)) };
}

describe("aiSdkProvider: built without what it needs", () => {
  test("without a model: invalid_options naming model", () => {
    const err = thrown(() => aiSdkProvider({ generateText: async () => ({}) }), "invalid_options");
    assert.equal(err.option, "model");
    assert.match(err.message, /model/);
  });

  test("without generateText (stream false) or streamText (stream true): invalid_options naming it", () => {
    let err = thrown(() => aiSdkProvider({ model: "m", streamText: () => ({}) }), "invalid_options");
    assert.equal(err.option, "generateText");
    assert.match(err.message, /generateText/);
    err = thrown(() => aiSdkProvider({ model: "m", stream: true, generateText: async () => ({}) }), "invalid_options");
    assert.equal(err.option, "streamText");
    assert.match(err.message, /streamText/);
  });

  test("an unknown option, or a prompt that is not a function: invalid_options naming it", () => {
    const generateText = async () => ({});
    assert.equal(thrown(() => aiSdkProvider({ model: "m", generateText, sytem: "x" }), "invalid_options").option, "sytem");
    assert.equal(thrown(() => aiSdkProvider({ model: "m", generateText, prompt: "Translate" }), "invalid_options").option, "prompt");
    assert.equal(thrown(() => aiSdkProvider({ model: "m", generateText, temperature: -1 }), "invalid_options").option, "temperature");
  });
});

describe("aiSdkProvider: what each call passes", () => {
  for (const [major, systemOf] of Object.entries(readsSystem)) {
    test(`${major}: model, system with the batch's instructions appended, prompt, maxOutputTokens, abortSignal, maxRetries 0`, async () => {
      const { generateText, calls } = fakeGenerateText(() => ({ text: "Hallo" }));
      const provider = aiSdkProvider({ model: "the-model", generateText, system: "Translate to {{lang}}." });
      const batch = request({
        texts: ["a", "b"],
        isBatch: true,
        text: "<s1>a</s1>\n<s2>b</s2>",
        instructions: "Answer each segment between its markers.",
        format: "markers",
      });
      await provider(batch);
      const [options] = calls;
      assert.equal(options.model, "the-model");
      assert.equal(systemOf(options), "Translate to {{lang}}.\n\nAnswer each segment between its markers.");
      assert.equal(options.prompt, batch.text);
      assert.equal(options.maxOutputTokens, 41, "rounded up: the SDK takes whole numbers");
      assert.equal(options.abortSignal, batch.signal);
      assert.equal(options.maxRetries, 0);
      assert.equal(options.temperature, 0, "0 by default, as openAIProvider's");
    });

    test(`${major}: without a system, a translator prompt for the request's languages and context`, async () => {
      const { generateText, calls } = fakeGenerateText(() => ({ text: "Hallo" }));
      await aiSdkProvider({ model: "m", generateText })(request({ context: "A cooking blog." }));
      const system = systemOf(calls[0]);
      assert.match(system, /from en to de/);
      assert.match(system, /<context>\nA cooking blog\.\n<\/context>/);
    });
  }

  test("model, system and prompt may be functions of the request", async () => {
    const { generateText, calls } = fakeGenerateText(() => ({ text: "Hallo" }));
    const models = { fast: { modelId: "fast-model" }, good: { modelId: "good-model" } };
    const provider = aiSdkProvider({
      model: (r) => models[r.providerId],
      system: async (r) => `You translate into ${r.targetLang}.`,
      prompt: (r) => `Translate:\n{{input}}`.replace("{{input}}", r.text),
      generateText,
    });
    await provider(request({ providerId: "good", targetLang: "fr" }));
    assert.equal(calls[0].model, models.good);
    assert.equal(calls[0].instructions, "You translate into fr.");
    assert.equal(calls[0].system, "You translate into fr.");
    assert.equal(calls[0].prompt, "Translate:\nHello");
  });

  test("temperature, providerOptions and headers pass; a batch's retries raise the temperature", async () => {
    const { generateText, calls } = fakeGenerateText(() => ({ text: "x" }));
    const providerOptions = { openai: { reasoningEffort: "low" } };
    const headers = { "x-app": "reader" };
    const provider = aiSdkProvider({ model: "m", generateText, temperature: 0.2, providerOptions, headers });
    await provider(request());
    await provider(request({ isBatch: true, texts: ["a", "b"], attempt: 2 }));
    await provider(request({ attempt: 2 }));
    assert.deepEqual(
      calls.map((c) => c.temperature),
      [0.2, 0.8, 0.2],
    );
    assert.equal(calls[0].providerOptions, providerOptions);
    assert.equal(calls[0].headers, headers);
  });
});

describe("aiSdkProvider: what it returns", () => {
  test("the text, usage, the limits of the response headers, and truncated for finishReason length", async () => {
    const { generateText } = fakeGenerateText(() => ({
      text: "<s1>A</s1>",
      finishReason: "length",
      usage: { inputTokens: 120, outputTokens: 40, totalTokens: 160 },
      response: { headers: { "x-ratelimit-remaining-tokens": "900", "anthropic-ratelimit-requests-remaining": "7" } },
    }));
    const reply = await aiSdkProvider({ model: "m", generateText })(request());
    assert.deepEqual(reply, {
      translations: "<s1>A</s1>",
      usage: { inputTokens: 120, outputTokens: 40 },
      limits: { requestsRemaining: 7, tokensRemaining: 900 },
      truncated: true,
    });
  });

  test("through a pacer: the translation resolves and the usage reaches stats()", async (t) => {
    const { generateText } = fakeGenerateText((options) => ({ text: options.prompt.toUpperCase() }));
    const { pacer, clock, send } = pacerWith(t, aiSdkProvider({ model: "m", generateText }));
    const result = send(item("hello", { llm: false }));
    await clock.tickAsync(1000);
    assert.equal(result.value, "HELLO");
    assert.equal(pacer.stats().inputTokens, 10);
    assert.equal(pacer.stats().outputTokens, 5);
  });
});

/** A streamText stand-in whose fullStream yields `parts` (a part may be a function: it throws). */
function fakeStreamText(parts, headers = {}) {
  const calls = [];
  const streamText = (options) => {
    calls.push(options);
    return {
      fullStream: (async function* () {
        for (const part of parts) yield part;
      })(),
      response: Promise.resolve({ headers }),
    };
  };
  return { streamText, calls };
}

async function collect(stream) {
  const values = [];
  for await (const value of stream) values.push(value);
  return values;
}

describe("aiSdkProvider with stream: true", () => {
  test("the text parts in order, no reasoning, then one report with usage, limits and truncated", async () => {
    const { streamText, calls } = fakeStreamText(
      [
        { type: "start" },
        { type: "reasoning-delta", id: "r", text: "<s1>draft</s1>" },
        { type: "text-delta", id: "t", text: "<s1>Hal" },
        { type: "text-delta", id: "t", text: "lo</s1>" },
        { type: "finish", finishReason: "length", totalUsage: { inputTokens: 30, outputTokens: 8 } },
      ],
      { "x-ratelimit-remaining-requests": "3" },
    );
    const values = await collect(await aiSdkProvider({ model: "m", stream: true, streamText })(request()));
    assert.deepEqual(values, [
      "<s1>Hal",
      "lo</s1>",
      { usage: { inputTokens: 30, outputTokens: 8 }, limits: { requestsRemaining: 3 }, truncated: true },
    ]);
    assert.equal(calls[0].maxRetries, 0);
    assert.equal(calls[0].prompt, "Hello");
  });

  test("an error part is thrown as that error: a streamed 429 pauses and is retried after its Retry-After", async (t) => {
    const tooMany = new APICallError({
      message: "Too Many Requests",
      url: "https://api.example.test/v1/messages",
      requestBodyValues: {},
      statusCode: 429,
      responseHeaders: { "retry-after": "2" },
      responseBody: "{}",
    });
    let calls = 0;
    const streamText = () => {
      calls++;
      const parts = calls === 1 ? [{ type: "start" }, { type: "error", error: tooMany }] : [{ type: "text-delta", text: "HELLO" }];
      return {
        fullStream: (async function* () {
          yield* parts;
        })(),
        response: Promise.resolve({ headers: {} }),
      };
    };
    const { pacer, clock, send, events } = pacerWith(t, aiSdkProvider({ model: "m", stream: true, streamText }), {
      maxRetries: 0,
      adaptiveRate: false,
    });
    const result = send(item("hello", { llm: false }));
    await clock.tickAsync(1999);
    assert.equal(calls, 1);
    await clock.tickAsync(500);
    assert.equal(calls, 2);
    assert.equal(result.value, "HELLO");
    assert.equal(pacer.stats().rateLimited, 1);
    assert.equal(events.find((e) => e.type === "rateLimited")?.retryAfterMs, 2000);
  });
});
