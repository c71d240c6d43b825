// A real model behind llama.cpp's own server: SmolLM2-135M-Instruct (a model too small to
// keep a batch's layout) translating a page of 10 short English paragraphs into French
// through the packed package's openAIProvider, whole replies and streamed. Checked against
// docs/guides/cannot-batch.md: every promise settles once, no paragraph shows
// another paragraph's translation, and batching costs at most about what one call per
// paragraph costs on the same server in the same run (calls and output tokens). Nothing
// is asserted about translation quality. The baseline (one call per paragraph, whole
// replies) runs once for the file and serves both tests: a single request is answered the
// same way whether it streams or not.
//
// What it costs: the model runs on past the bound on most single requests, and a single
// that stops at its bound is retried twice with the bound doubled each time (docs/guides/cannot-batch.md,
// "Truncated replies"), so on this two-core machine (nothing else running) the baseline
// takes about 3 minutes and a batched page from half a minute to six and a half, as the
// retries' raised temperatures fall: the file 6 to 15 minutes. Another process busy on
// one of the two cores slows llama-server's two threads several times over.
//
// Needs LLAMA_SERVER and LLAMA_MODEL (scripts/llama-setup.sh builds and prints them; npm
// test exports them). Run alone:
//   SKIP_BUILD=1 bash tests/node/run-package-tests.sh --test-name-pattern='real model'
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import init, { BatchPacer, openAIProvider } from "batch-pacer";

import { skipIfMissing } from "./requirements.mjs";
import { llamaMissing, startLlamaServer } from "./llama-server.mjs";
import { PAGE as REAL_MODEL_PAGE, REAL_MODEL_OPTIONS as OPTIONS, foreignNumbers as numbersOfOthers } from "./real-model-page.mjs";

await init();

const skip = skipIfMissing(llamaMissing());

/** The page: the first ten paragraphs of the shared real-model page. */
const PAGE = REAL_MODEL_PAGE.slice(0, 10);

/**
 * Calls: batching may cost at most 1.25× the calls of one call per paragraph (the issue's
 * target for 24 paragraphs) plus a slack of 2. The slack is what the rules cannot avoid on
 * a page this short: against a model that never proves a batch, the learned limit halves
 * only after two batch replies in a row that prove nothing, so it takes four such replies
 * (4 → 2 → 1) before every item goes alone; with 10 singles that is 14 calls, and 1.25 ×
 * 10 alone leaves 12.5. A third wasted pair of batch replies (15 or more) fails the bound.
 * Both sides count every call, retries of truncated replies included.
 */
const CALLS_FACTOR = 1.25;
const CALLS_SLACK = 2;
/**
 * Output tokens: the target is 1.0× the one-call-per-paragraph run, with 10% for the model
 * itself. At temperature 0 a single request is answered greedily, but llama.cpp's output
 * is not bit-for-bit reproducible between requests (prompt-cache reuse and the batch split
 * of prompt processing change the float sums, so a near tie between two tokens can go the
 * other way): two baselines of this page on one server differed by 5% (6,853 and 6,500
 * output tokens), most of it one paragraph that stopped after 90 tokens in one and ran on
 * to its third bound (624) in the other. The batched run's fallback singles are the same
 * requests, so the same drift reaches them; see the bound below.
 */
// Runs of this file on this machine measured the batched page at 0.68× and 0.92× of the
// baseline's output tokens with whole replies, 0.21× and 1.28× streamed (a batch retry at
// the raised temperature ran on to its bound); the rules this test guards against cost
// 2.3×. The
// bound is 1.5×: it fails on that loss, not on the model's own spread.
const OUTPUT_TARGET = 1.0;
const OUTPUT_DRIFT = 1.5;

/**
 * Per test: the batched page, and for the first test the baseline too. Measured here with
 * the machine otherwise idle: the baseline 176–186 s, a batched page 130–280 s (whole
 * replies) and 32–389 s (streamed). A slower or busier machine sets REAL_MODEL_TIMEOUT_MS.
 */
const TEST_TIMEOUT_MS = Number(process.env.REAL_MODEL_TIMEOUT_MS) || 1_200_000;

let server;
before(async () => {
  if (skip) return;
  server = await startLlamaServer();
});
after(async () => {
  await server?.stop();
});

/**
 * The provider with a counter around it: every call, its batch flag, its paragraphs (their
 * numbers), its attempt and bound, and what the model answered (the text of a whole reply
 * or of a stream, its output tokens, whether it stopped at the bound).
 */
function counted(provider) {
  const calls = [];
  const numberOf = new Map(PAGE.map((p) => [p.text, p.number]));
  const wrapped = async (request) => {
    const call = {
      isBatch: request.isBatch,
      paragraphs: request.texts.map((text) => numberOf.get(text) ?? "?"),
      attempt: request.attempt,
      maxOutputTokens: request.maxOutputTokens,
      reply: "",
      outputTokens: undefined,
      truncated: false,
    };
    calls.push(call);
    const reply = await provider(request);
    if (reply && typeof reply[Symbol.asyncIterator] === "function") {
      return (async function* recorded() {
        for await (const value of reply) {
          if (typeof value === "string") call.reply += value;
          else if (value && typeof value === "object") {
            if (value.usage) call.outputTokens = value.usage.outputTokens;
            if (value.truncated === true) call.truncated = true;
          }
          yield value;
        }
      })();
    }
    const text = typeof reply === "string" ? reply : reply?.translations;
    call.reply = typeof text === "string" ? text : JSON.stringify(text);
    call.outputTokens = reply?.usage?.outputTokens;
    call.truncated = reply?.truncated === true;
    return reply;
  };
  return { provider: wrapped, calls };
}

/** Translates the page once; every figure of the run. */
async function translatePage({ stream, perCall, signal }) {
  const { provider, calls } = counted(openAIProvider({ baseUrl: server.baseUrl, model: "smollm2", stream }));
  const limits = [];
  const settled = PAGE.map(() => 0);
  const outcomes = new Array(PAGE.length);
  const started = performance.now();
  const pacer = new BatchPacer(provider, {
    ...OPTIONS,
    ...(perCall === undefined ? {} : { maxItemsPerBatch: perCall }),
    onEvent: (event) => {
      if (event.type === "batchLimit") limits.push(event.limit);
    },
  });
  // A test that times out stops its pacer (its items reject `disposed`): nothing keeps
  // calling the server after it. What the run had cost by then is printed.
  const stop = () => {
    const stats = pacer.stats();
    const settledSoFar = settled.filter((n) => n > 0).length;
    console.log(
      `stopped at the test's timeout (${perCall === 1 ? "one call per paragraph" : "defaults"}, stream ${stream}): ` +
        `${calls.length} calls (${calls.filter((c) => c.isBatch).length} batch) in ${((performance.now() - started) / 1000).toFixed(0)} s, ` +
        `${stats.outputTokens} output tokens, ${settledSoFar} of ${PAGE.length} paragraphs settled; ` +
        `maxOutputTokens of the calls: ${calls.map((c) => c.maxOutputTokens).join(", ")}`,
    );
    pacer.dispose();
  };
  signal.addEventListener("abort", stop, { once: true });
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
    const seconds = (performance.now() - started) / 1000;
    // A second settlement would run its handler later: give it the chance.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const stats = pacer.stats();
    const misplaced = outcomes.flatMap((o, i) =>
      o.ok && numbersOfOthers(PAGE, o.value, PAGE[i].number).length > 0
        ? [{ paragraph: i, shows: numbersOfOthers(PAGE, o.value, PAGE[i].number), translation: o.value }]
        : [],
    );
    return {
      aborted: signal.aborted,
      calls: calls.length,
      batchCalls: calls.filter((c) => c.isBatch).length,
      seconds,
      inputTokens: stats.inputTokens,
      outputTokens: stats.outputTokens,
      misplaced,
      settled,
      resolved: outcomes.filter((o) => o.ok).length,
      rejected: outcomes.filter((o) => !o.ok).map((o) => `${o.error?.code}: ${String(o.error?.message).slice(0, 120)}`),
      limits,
      log: calls,
    };
  } finally {
    signal.removeEventListener("abort", stop);
    pacer.dispose();
  }
}

/** One line of figures, and the batch replies, for the test's output. */
function describeRun(t, name, r) {
  t.diagnostic(
    `${name}: ${r.calls} calls (${r.batchCalls} batch), ${r.seconds.toFixed(1)} s, ${r.inputTokens} input / ${r.outputTokens} output tokens, ` +
      `${r.misplaced.length} misplaced, ${r.resolved} resolved, ${r.rejected.length} rejected` +
      (r.limits.length ? `, batch limit ${r.limits.join(" → ")}` : ""),
  );
  for (const reason of r.rejected) t.diagnostic(`  rejected: ${reason}`);
  for (const m of r.misplaced) t.diagnostic(`  misplaced: paragraph ${m.paragraph} shows ${m.shows.join(", ")}: ${JSON.stringify(m.translation.slice(0, 160))}`);
  for (const c of r.log) {
    const what = `${c.isBatch ? "batch" : "single"} [${c.paragraphs.join(" ")}], attempt ${c.attempt}, bound ${c.maxOutputTokens}`;
    const answer = `${c.outputTokens ?? "?"} tokens${c.truncated ? ", truncated" : ""}`;
    const shown = c.isBatch ? `: ${JSON.stringify(c.reply.slice(0, 160))}${c.reply.length > 160 ? ` … (${c.reply.length} characters)` : ""}` : "";
    t.diagnostic(`  ${what} → ${answer}${shown}`);
  }
}

/** The baseline, run by the first test that needs it (again if that test was stopped). */
let baselineRun;
async function baselineOnce(signal) {
  baselineRun ??= translatePage({ stream: false, perCall: 1, signal });
  const run = await baselineRun;
  if (run.aborted) baselineRun = undefined;
  return run;
}

async function checkPage(t, { stream }) {
  const signal = t.signal;
  const baseline = await baselineOnce(signal);
  describeRun(t, "one call per paragraph (maxItemsPerBatch 1, whole replies; the file's baseline)", baseline);
  const batched = await translatePage({ stream, signal });
  describeRun(t, `defaults (batching, adaptiveBatching), ${stream ? "streamed" : "whole replies"}`, batched);
  const callsBound = CALLS_FACTOR * baseline.calls + CALLS_SLACK;
  const outputBound = OUTPUT_TARGET * baseline.outputTokens * OUTPUT_DRIFT;
  t.diagnostic(
    `ratios: calls ${(batched.calls / baseline.calls).toFixed(2)}x (bound ${callsBound}), output tokens ` +
      `${(batched.outputTokens / baseline.outputTokens).toFixed(2)}x (bound ${outputBound.toFixed(0)}), input tokens ` +
      `${(batched.inputTokens / baseline.inputTokens).toFixed(2)}x, time ${(batched.seconds / baseline.seconds).toFixed(2)}x`,
  );

  for (const [name, run] of [["baseline", baseline], ["batched", batched]]) {
    assert.deepEqual(run.settled, PAGE.map(() => 1), `${name}: every promise settles exactly once`);
    assert.deepEqual(run.misplaced, [], `${name}: no paragraph shows another paragraph's number`);
    assert.ok(run.outputTokens > 0, `${name}: the server reported usage`);
  }
  assert.equal(baseline.batchCalls, 0);
  assert.ok(
    batched.calls <= callsBound,
    `batching made ${batched.calls} calls, more than ${CALLS_FACTOR} × ${baseline.calls} + ${CALLS_SLACK} (one call per paragraph on the same server)`,
  );
  assert.ok(
    batched.outputTokens <= outputBound,
    `batching cost ${batched.outputTokens} output tokens, more than ${OUTPUT_TARGET} × ${baseline.outputTokens} × ${OUTPUT_DRIFT} (one call per paragraph)`,
  );
}

test("real model (llama-server, SmolLM2-135M): a page of 10 paragraphs, whole replies, costs no more than one call per paragraph", { skip, timeout: TEST_TIMEOUT_MS }, (t) =>
  checkPage(t, { stream: false }),
);

test("real model (llama-server, SmolLM2-135M): a page of 10 paragraphs, streamed replies, costs no more than one call per paragraph", { skip, timeout: TEST_TIMEOUT_MS }, (t) =>
  checkPage(t, { stream: true }),
);
