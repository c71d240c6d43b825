// Workload "Clients and timeouts": the AI SDK as a provider, and calls that time out or
// are stopped as the call needs.
//
// (a) A real model (SmolLM2-135M behind llama.cpp's `llama-server`, as in workload 11):
//     24 paragraphs through `aiSdkProvider` with the real `ai` and
//     `@ai-sdk/openai-compatible`, and through `openAIProvider`, side by side in one run.
// (b) A page closed halfway: every item aborted while its calls run, on virtual time,
//     against a model that writes 50 output tokens a second and stops when its call's
//     signal is aborted: output tokens written after the abort.
// (c) One batch of 1,000 characters on a model that answers in 30 s, at the defaults:
//     failed calls (timeouts) and failed paragraphs.
// (d) A 429 with Retry-After 2 s, as the AI SDK throws it (`APICallError` from the real
//     `ai` and `@ai-sdk/openai-compatible`) and as `openAIProvider` throws it, both from
//     one fake endpoint that speaks the chat-completions wire format: 20 paragraphs,
//     virtual time.
// Rows (b) and (c) also run on the baseline build (`--baseline DIR`) where one is given.

import { generateText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

import { paragraphs, item } from "./data.mjs";
import { table, fmt, ratio, median } from "./measure.mjs";
import { privateClock, runUntil } from "./virtual-time.mjs";
import { llamaMissing, startLlamaServer } from "../tests/node/llama-server.mjs";
import { PAGE, REAL_MODEL_OPTIONS, foreignNumbers } from "../tests/node/real-model-page.mjs";

const MODEL = "smollm2";
const REAL_RUNS = 3;

/** Field by field, the median of runs (the middle one of three). */
function medianRun(runs) {
  return Object.fromEntries(Object.keys(runs[0]).map((key) => [key, median(runs.map((r) => r[key]))]));
}
const TOKENS_PER_SECOND = 50;
const CHARS_PER_TOKEN = 4;

/** Settles each promise into `{ ok, value | error }`. */
const outcomes = (promises) =>
  Promise.all(promises.map((p) => p.then((value) => ({ ok: true, value }), (error) => ({ ok: false, error }))));

/** A faithful reply to a request: its marked text as it came (an echo keeps every marker). */
const echo = (request) => request.text;

/** Rejects with the abort reason when `signal` fires; `onAbort` runs first. */
function onSignal(signal, reject, onAbort) {
  if (!signal) return;
  signal.addEventListener("abort", () => {
    onAbort();
    reject(signal.reason ?? new DOMException("aborted", "AbortError"));
  });
}

/** (a): one page through a BatchPacer and `provider` against the real server. */
async function realRun(BatchPacer, provider) {
  let calls = 0;
  const pacer = new BatchPacer((request) => {
    calls++;
    return provider(request);
  }, REAL_MODEL_OPTIONS);
  const started = performance.now();
  const results = await outcomes(
    PAGE.map((p) => pacer.translate(item(p.text, "French", { sourceLang: "English", providerId: "llama" }))),
  );
  const seconds = (performance.now() - started) / 1000;
  const stats = pacer.stats();
  pacer.dispose();
  return {
    calls,
    seconds,
    inputTokens: stats.inputTokens,
    outputTokens: stats.outputTokens,
    misplaced: results.filter((o, i) => o.ok && foreignNumbers(PAGE, o.value, PAGE[i].number).length > 0).length,
    failed: results.filter((o) => !o.ok).length,
  };
}

/**
 * (b): 24 paragraphs of about 300 characters at the defaults; the model writes a batch's
 * reply (a token per 4 characters) at 50 tokens/s and stops when its signal fires. At
 * `closeAtMs`, while the first calls run, every item is aborted.
 */
async function pageClosed(BatchPacer, closeAtMs = 2000) {
  const { clock, pacerClock } = privateClock();
  const calls = [];
  const provider = (request) =>
    new Promise((resolve, reject) => {
      const tokens = Math.ceil(request.text.length / CHARS_PER_TOKEN);
      const call = { start: clock.now, end: clock.now + (tokens * 1000) / TOKENS_PER_SECOND, stoppedAt: undefined };
      calls.push(call);
      const timer = clock.setTimeout(() => resolve(echo(request)), call.end - call.start);
      onSignal(request.signal, reject, () => {
        clock.clearTimeout(timer);
        call.stoppedAt ??= clock.now;
      });
    });
  const pacer = new BatchPacer(provider, { clock: pacerClock, cacheEntries: 0 });
  const controllers = [];
  const settled = outcomes(
    paragraphs(24, 300).map((text) => {
      const controller = new AbortController();
      controllers.push(controller);
      return pacer.translate(item(text, "de", { signal: controller.signal }));
    }),
  );
  await clock.tickAsync(closeAtMs);
  for (const controller of controllers) controller.abort();
  const results = await settled;
  await runUntil(clock, () => calls.every((c) => (c.stoppedAt ?? c.end) <= clock.now), { stepMs: 100 });
  pacer.dispose();
  const writtenAfter = (c) => Math.max(0, (c.stoppedAt ?? c.end) - Math.max(c.start, closeAtMs));
  const running = calls.filter((c) => c.start <= closeAtMs && c.end > closeAtMs);
  return {
    calls: calls.length,
    running: running.length,
    tokensAfter: Math.round(calls.reduce((sum, c) => sum + (writtenAfter(c) * TOKENS_PER_SECOND) / 1000, 0)),
    tokensLeft: Math.round(running.reduce((sum, c) => sum + ((c.end - closeAtMs) * TOKENS_PER_SECOND) / 1000, 0)),
    aborted: results.filter((o) => !o.ok && o.error?.code === "aborted").length,
  };
}

/** (c): 4 paragraphs of 250 characters (one batch of 1,000) on a model that answers in 30 s. */
async function slowModel(BatchPacer, answerMs = 30_000) {
  const { clock, pacerClock } = privateClock();
  let calls = 0;
  let timedOut = 0;
  const provider = (request) =>
    new Promise((resolve, reject) => {
      calls++;
      const timer = clock.setTimeout(() => resolve(echo(request)), answerMs);
      onSignal(request.signal, reject, () => {
        clock.clearTimeout(timer);
        timedOut++;
      });
    });
  const pacer = new BatchPacer(provider, { clock: pacerClock, cacheEntries: 0 });
  const settled = outcomes(paragraphs(4, 250).map((text) => pacer.translate(item(text))));
  let done = false;
  settled.then(() => (done = true));
  await runUntil(clock, () => done, { stepMs: 500 });
  const results = await settled;
  pacer.dispose();
  return {
    calls,
    failedCalls: timedOut,
    failed: results.filter((o) => !o.ok).length,
    seconds: clock.now / 1000,
  };
}

/**
 * (d): a fake chat-completions endpoint on `clock`: the first request is answered 429 with
 * `retry-after: 2` and OpenAI's error body, every later one with the echo of its user
 * message after 300 ms.
 */
function rateLimitedEndpoint(clock) {
  let requests = 0;
  const fetch = (url, init) =>
    new Promise((resolve) => {
      const body = JSON.parse(init.body);
      const first = requests++ === 0;
      clock.setTimeout(() => {
        if (first) {
          const error = { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } };
          resolve(new Response(JSON.stringify(error), { status: 429, headers: { "content-type": "application/json", "retry-after": "2" } }));
          return;
        }
        const content = body.messages.at(-1).content;
        const text = typeof content === "string" ? content : content.map((part) => part.text ?? "").join("");
        const completion = {
          id: `c${requests}`,
          object: "chat.completion",
          created: 0,
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
          usage: { prompt_tokens: 100, completion_tokens: 100, total_tokens: 200 },
        };
        resolve(new Response(JSON.stringify(completion), { status: 200, headers: { "content-type": "application/json" } }));
      }, 300);
    });
  return fetch;
}

async function sdk429(BatchPacer, makeProvider) {
  const { clock, pacerClock } = privateClock();
  const fetch = rateLimitedEndpoint(clock);
  let calls = 0;
  const provider = makeProvider(fetch);
  const pacer = new BatchPacer(
    (request) => {
      calls++;
      return provider(request);
    },
    { clock: pacerClock, cacheEntries: 0 },
  );
  const settled = outcomes(paragraphs(20, 200).map((text) => pacer.translate(item(text))));
  let done = false;
  settled.then(() => (done = true));
  await runUntil(clock, () => done, { stepMs: 100 });
  const results = await settled;
  const stats = pacer.stats();
  pacer.dispose();
  return { calls, rateLimited: stats.rateLimited, failed: results.filter((o) => !o.ok).length, seconds: clock.now / 1000 };
}

/** The section (Markdown). `builds`: this package first, then the baseline if any. */
export async function clientsAndTimeouts({ builds, smoke = false, number = 14, command }) {
  const [own] = builds;
  const rows = [];
  const notes = [];

  // (a) the real model
  const missing = smoke ? "smoke run" : llamaMissing();
  if (missing) {
    notes.push(`Rows a: skipped (${missing}).`);
  } else {
    const server = await startLlamaServer();
    try {
      const baseUrl = server.baseUrl;
      const openai = own.openAIProvider({ baseUrl, model: MODEL });
      const compatible = createOpenAICompatible({ name: "llama", baseURL: baseUrl, includeUsage: true });
      const sdk = own.aiSdkProvider({ model: compatible.chatModel(MODEL), generateText });
      // Three runs each, alternating which goes first (the server's prompt cache favours
      // the second of two alike requests); each figure the median of its three.
      const runs = { openai: [], sdk: [] };
      for (let round = 0; round < REAL_RUNS; round++) {
        const order = round % 2 === 0 ? ["openai", "sdk"] : ["sdk", "openai"];
        for (const name of order) runs[name].push(await realRun(own.BatchPacer, name === "openai" ? openai : sdk));
      }
      const viaOpenAI = medianRun(runs.openai);
      const viaSdk = medianRun(runs.sdk);
      const real = (name, r) => [
        name, "this package", r.calls, fmt(r.seconds, 0), r.inputTokens, r.outputTokens,
        ratio(r.calls, viaOpenAI.calls), ratio(r.outputTokens, viaOpenAI.outputTokens), r.misplaced, r.failed,
      ];
      rows.push(real("a1. real model, openAIProvider (baseline of a)", viaOpenAI));
      rows.push(real("a2. real model, aiSdkProvider + @ai-sdk/openai-compatible", viaSdk));
    } finally {
      await server.stop();
    }
  }

  // (b), (c) on every build
  for (const build of builds) {
    const closed = await pageClosed(build.BatchPacer);
    rows.push([
      "b. page closed at 2 s, 24 paragraphs, model at 50 tokens/s", build.name, closed.calls, "–", "–",
      `${closed.tokensAfter} written after the abort (${closed.tokensLeft} left in the ${closed.running} running calls)`,
      "–", "–", "–", `${closed.aborted} aborted`,
    ]);
  }
  for (const build of builds) {
    const slow = await slowModel(build.BatchPacer);
    rows.push([
      "c. one batch of 1,000 characters, model answers in 30 s", build.name, slow.calls, fmt(slow.seconds, 0), "–",
      "–", "–", "–", "–", `${slow.failedCalls} calls timed out, ${slow.failed} paragraphs failed`,
    ]);
  }

  // (d) the same 429 from both clients
  if (own.aiSdkProvider) {
    const base = "http://127.0.0.1:9/v1"; // never reached: the endpoint is the fake fetch
    const viaOpenAI = await sdk429(own.BatchPacer, (fetch) => own.openAIProvider({ baseUrl: base, model: "m", fetch }));
    const viaSdk = await sdk429(own.BatchPacer, (fetch) =>
      own.aiSdkProvider({ model: createOpenAICompatible({ name: "m", baseURL: base, fetch }).chatModel("m"), generateText }),
    );
    const d = [["d1. 429 (Retry-After 2 s) from openAIProvider", own.name, viaOpenAI], ["d2. the same 429 as the AI SDK's APICallError", own.name, viaSdk]];
    // The baseline has no adapter: a provider that calls generateText and lets its error
    // through, as an extension wrote one before.
    for (const build of builds.slice(1)) {
      const plain = await sdk429(build.BatchPacer, (fetch) => {
        const model = createOpenAICompatible({ name: "m", baseURL: base, fetch }).chatModel("m");
        return async (request) => (await generateText({ model, prompt: request.text, maxRetries: 0 })).text;
      });
      d.push(["d3. the same APICallError, thrown by a plain generateText provider", build.name, plain]);
    }
    for (const [name, build, r] of d) {
      rows.push([name, build, r.calls, fmt(r.seconds, 1), "–", "–", ratio(r.calls, viaOpenAI.calls), "–", "–", `${r.rateLimited} × 429, ${r.failed} failed`]);
    }
  }

  return table({
    title: `${number}. Clients and timeouts: the AI SDK as a provider, a page closed halfway, a slow model, an AI SDK 429`,
    columns: ["row", "build", "calls", "time (s)", "input tokens", "output tokens", "calls ÷ a1/d1", "output ÷ a1", "misplaced", "outcome"],
    rows,
    textColumns: 2,
    notes: [
      ...notes,
      `a: SmolLM2-135M-Instruct behind llama-server as in workload 11 (the same 24 paragraphs into French, options ${JSON.stringify(REAL_MODEL_OPTIONS)}, the defaults otherwise), ${REAL_RUNS} runs each, alternating which goes first, each figure the median of its runs; a2 calls the real \`generateText\` of \`ai\` with \`@ai-sdk/openai-compatible\` (\`includeUsage: true\`). Target: a2 within 10% of a1 on calls and tokens, 0 misplaced.`,
      `b: virtual time; defaults (rate 8, capacity 60, 4 items / 1,000 characters), 24 paragraphs of 300 characters; the model writes a token per ${CHARS_PER_TOKEN} characters of its reply at ${TOKENS_PER_SECOND} tokens/s and stops when its call's signal fires; every item's signal is aborted at 2 s. Target: 0 tokens written after the abort.`,
      `c: virtual time; defaults; 4 paragraphs of 250 characters (one batch of 1,000); the model answers after 30 s unless its signal fires first. Target: 0 failed calls.`,
      `d: virtual time; defaults; 20 paragraphs of 200 characters; one fake chat-completions endpoint (the wire format, as \`fetch\`) answers the first request 429 with \`retry-after: 2\` and the rest after 300 ms; d1 through openAIProvider, d2 through aiSdkProvider + the real \`ai\` and \`@ai-sdk/openai-compatible\`. Target: d2 the same as d1.`,
      `Command: \`${command}\`.`,
    ],
  });
}
