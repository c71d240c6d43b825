// A real model through the real AI SDK: SmolLM2-135M-Instruct behind llama.cpp's own
// server, called by `ai` 7's generateText and streamText with `@ai-sdk/openai-compatible`,
// through the packed package's aiSdkProvider, translating a short page of 4 paragraphs
// into French, whole replies and streamed. Checked as docs/guides/ai-sdk.md promises for
// `aiSdkProvider`: every promise settles exactly once, no paragraph shows another
// paragraph's translation (each paragraph holds a number of its own: see
// real-model-page.mjs), and the usage the server reports reaches stats(). Nothing is
// asserted about translation quality or cost (real-model.test.mjs measures cost).
//
// What it costs: this model cannot keep a batch's layout, so most paragraphs end up sent
// alone after a few batch tries (measured on the first 8: 16 and 17 calls, 4 of them batches; 6 of the 8
// paragraphs resolved, 2 rejected because the model ran on past its bound). With other
// builds busy on both cores the page took 19 minutes whole and 13 streamed; an idle
// machine takes a fraction of that (see real-model.test.mjs).
//
// Needs LLAMA_SERVER and LLAMA_MODEL (scripts/llama-setup.sh builds and prints them; npm
// test exports them). Run alone:
//   SKIP_BUILD=1 bash tests/node/run-package-tests.sh --test-name-pattern='real AI SDK'
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import init, { BatchPacer, aiSdkProvider } from "batch-pacer";

import { skipIfMissing } from "./requirements.mjs";
import { llamaMissing, startLlamaServer } from "./llama-server.mjs";
import { SDKS, sdkMissing } from "./ai-sdk-modules.mjs";
import { PAGE as REAL_MODEL_PAGE, REAL_MODEL_OPTIONS, foreignNumbers } from "./real-model-page.mjs";

await init();

const skip = skipIfMissing(llamaMissing() || sdkMissing());

/** The page: the first four paragraphs of the shared real-model page (a CPU model takes minutes a page). */
const PAGE = REAL_MODEL_PAGE.slice(0, 4);

/** Per test; a slower or busier machine sets REAL_MODEL_TIMEOUT_MS. */
const TEST_TIMEOUT_MS = Number(process.env.REAL_MODEL_TIMEOUT_MS) || 1_200_000;

const [ai7] = SDKS;

let server;
before(async () => {
  if (skip) return;
  server = await startLlamaServer();
});
after(async () => {
  await server?.stop();
});

/** Translates the page once through the AI SDK; every figure the checks need. */
async function translatePage(t, { stream }) {
  const llama = ai7.createOpenAICompatible({
    name: "llama",
    baseURL: server.baseUrl,
    // Asks for the usage chunk at the end of a stream (`stream_options.include_usage`);
    // without it a streamed reply reports no usage.
    includeUsage: true,
  });
  let calls = 0;
  const provider = aiSdkProvider({
    model: llama("smollm2"),
    generateText: ai7.ai.generateText,
    streamText: ai7.ai.streamText,
    stream,
    temperature: 0,
  });
  const pacer = new BatchPacer(
    (request) => {
      calls++;
      return provider(request);
    },
    REAL_MODEL_OPTIONS,
  );
  // A test that times out stops its pacer: nothing keeps calling the server after it.
  t.signal.addEventListener("abort", () => pacer.dispose(), { once: true });
  const settled = PAGE.map(() => 0);
  const outcomes = new Array(PAGE.length);
  try {
    await Promise.all(
      PAGE.map((p, i) =>
        pacer.translate({ text: p.text, sourceLang: "English", targetLang: "French", providerId: "llama" }).then(
          (value) => {
            settled[i]++;
            outcomes[i] = { ok: true, value };
          },
          (error) => {
            settled[i]++;
            outcomes[i] = { ok: false, error };
          },
        ),
      ),
    );
    // A second settlement would run its handler later: give it the chance.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const stats = pacer.stats();
    const misplaced = outcomes.flatMap((o, i) => {
      const shows = o.ok ? foreignNumbers(PAGE, o.value, PAGE[i].number) : [];
      return shows.length > 0 ? [{ paragraph: i, shows, translation: o.value }] : [];
    });
    const rejected = outcomes.filter((o) => !o.ok).map((o) => `${o.error?.code}: ${String(o.error?.message).slice(0, 160)}`);
    t.diagnostic(
      `${stream ? "streamText" : "generateText"}: ${calls} calls (${stats.batchCalls} batch), ${stats.inputTokens} input / ` +
        `${stats.outputTokens} output tokens, ${misplaced.length} misplaced, ${PAGE.length - rejected.length} resolved, ` +
        `${rejected.length} rejected, ${stats.streamedCalls} streamed`,
    );
    for (const reason of rejected) t.diagnostic(`  rejected: ${reason}`);
    for (const m of misplaced) t.diagnostic(`  misplaced: paragraph ${m.paragraph} shows ${m.shows.join(", ")}: ${JSON.stringify(m.translation.slice(0, 160))}`);
    return { settled, misplaced, rejected, stats, calls };
  } finally {
    pacer.dispose();
  }
}

function check(run, { stream }) {
  assert.deepEqual(run.settled, PAGE.map(() => 1), "every promise settles exactly once");
  assert.deepEqual(run.misplaced, [], "no paragraph shows another paragraph's number");
  assert.ok(run.rejected.length < PAGE.length, `at least one paragraph resolved (rejected: ${run.rejected.join("; ")})`);
  assert.ok(run.stats.providerCalls >= 1 && run.calls === run.stats.providerCalls);
  assert.ok(run.stats.inputTokens > 0, "the input tokens the server reported reach stats()");
  assert.ok(run.stats.outputTokens > 0, "the output tokens the server reported reach stats()");
  assert.equal(run.stats.streamedCalls, stream ? run.calls : 0, stream ? "every call streamed" : "no call streamed");
}

test("real AI SDK (ai 7, @ai-sdk/openai-compatible, llama-server): a page of 4 paragraphs, generateText", { skip, timeout: TEST_TIMEOUT_MS }, async (t) => {
  check(await translatePage(t, { stream: false }), { stream: false });
});

test("real AI SDK (ai 7, @ai-sdk/openai-compatible, llama-server): a page of 4 paragraphs, streamText", { skip, timeout: TEST_TIMEOUT_MS }, async (t) => {
  check(await translatePage(t, { stream: true }), { stream: true });
});
