// Workload "Time to the first paragraph": how long a reader waits for each paragraph when
// the model writes its batch token by token. The same model (a fixed time to the first
// token, then a steady token rate) answers three ways: streaming its batch's marked reply
// (paragraphs resolve as the stream proves them), the whole batch at once (the reply
// waits for its last token), and one call per paragraph (no batching). All in virtual
// time: the pacer runs on a fake clock through its `clock` option, the model sleeps on
// the same clock, so the figures are exact and the same on every machine.

import { privateClock, follow, runUntil } from "./virtual-time.mjs";
import { item, prng } from "./data.mjs";
import { table, fmt, median } from "./measure.mjs";
import { pseudoTranslate } from "../extension-demo/demo-provider.js";

/** The model and the page, as the issue fixes them. */
export const FIRST_PARAGRAPH = Object.freeze({
  paragraphs: 200,
  minChars: 100,
  maxChars: 600,
  perCall: 4,
  rate: 2,
  firstTokenMs: 500,
  tokensPerSecond: 50,
  charsPerToken: 4,
  seed: 23,
});

/** `n` distinct paragraphs of uniformly drawn lengths in [min, max] characters (seeded). */
export function pageParagraphs({ paragraphs: n, minChars, maxChars, seed }) {
  const random = prng(seed);
  const words = ["river", "lantern", "quiet", "harbour", "signal", "meadow", "copper", "window", "orbit", "thread"];
  const out = [];
  for (let i = 0; i < n; i++) {
    const length = minChars + Math.floor(random() * (maxChars - minChars + 1));
    let text = `Paragraph ${i}.`;
    while (text.length < length) text += ` ${words[Math.floor(random() * words.length)]}`;
    // A paragraph ends in a full stop, never in white space (which the reply's pairs trim).
    const body = text.slice(0, length - 1);
    out.push(`${body.endsWith(" ") ? `${body.slice(0, -1)}s` : body}.`);
  }
  return out;
}

/** The model's translation of one text: as long as its source, plus a language tag. */
const translate = (text) => pseudoTranslate(text, "de");

/** The reply a faithful model writes for a request: each translation between its own markers. */
function replyOf(request) {
  const out = request.texts.map(translate);
  if (!request.isBatch) return out[0];
  return out.map((t, i) => request.markers[i][0] + t + request.markers[i][1]).join("\n");
}

/**
 * The model on `clock`: nothing for `firstTokenMs`, then one token (`charsPerToken`
 * characters) every 1/`tokensPerSecond` s. `stream: true` yields each token as a stream
 * value; otherwise the whole reply comes with its last token. `onStart(request)` is
 * called as each call starts, `onClosed(text)` as a streamed segment's closing marker is
 * written.
 */
function model(clock, { firstTokenMs, tokensPerSecond, charsPerToken }, { stream, onStart, onClosed }) {
  const sleep = (ms) => new Promise((resolve) => clock.setTimeout(resolve, ms));
  const tokenMs = 1000 / tokensPerSecond;
  return (request) => {
    onStart(request);
    const reply = replyOf(request);
    const tokens = [];
    for (let at = 0; at < reply.length; at += charsPerToken) tokens.push(reply.slice(at, at + charsPerToken));
    if (!stream) return sleep(firstTokenMs + (tokens.length - 1) * tokenMs).then(() => reply);
    // Where each segment's closing marker ends in the reply, in order.
    let from = 0;
    const closes = (request.markers ?? []).map(([, close], i) => {
      from = reply.indexOf(close, from) + close.length;
      return { end: from, text: request.texts[i] };
    });
    return (async function* written() {
      await sleep(firstTokenMs);
      let sent = 0;
      for (let i = 0; i < tokens.length; i++) {
        if (i > 0) await sleep(tokenMs);
        sent += tokens[i].length;
        while (closes.length > 0 && closes[0].end <= sent) onClosed(closes.shift().text);
        yield tokens[i];
      }
    })();
  };
}

/**
 * One page through a BatchPacer in virtual time. Returns, per paragraph, the time from
 * the start of the call that carried it (its last call, should it be retried) to its
 * resolution, the time from the page's start to its first resolved paragraph, the calls
 * made and the pacer's counters.
 */
export async function runPage(BatchPacer, texts, spec, { stream, perCall, earlierPage }) {
  const { clock, pacerClock } = privateClock();
  const callStart = new Map(); // text -> virtual ms its latest call started
  const closedAt = new Map(); // text -> virtual ms its segment's closing marker was written
  const provider = model(clock, spec, {
    stream,
    onStart: (request) => {
      for (const text of request.texts) callStart.set(text, clock.now);
    },
    onClosed: (text) => closedAt.set(text, clock.now),
  });
  const pacer = new BatchPacer(provider, {
    clock: pacerClock,
    rate: spec.rate,
    capacity: 1,
    maxItemsPerBatch: perCall,
    maxCharactersPerBatch: perCall * spec.maxChars,
    cacheEntries: 0,
  });
  if (earlierPage) {
    // A page read before on the same pacer: what its replies showed of the provider (its
    // translations' length against their sources) is known when this page starts.
    const earlier = follow(clock, earlierPage.map((text) => pacer.translate(item(text))));
    await runUntil(clock, () => earlier.pending === 0, { stepMs: 1000 });
    // The earlier page's calls are no part of this page's figures.
    callStart.clear();
    closedAt.clear();
  }
  const begin = clock.now;
  const { providerCalls: callsBefore, earlyResolved: earlyBefore } = pacer.stats();
  const resolvedAt = new Array(texts.length);
  const promises = texts.map((text, i) =>
    pacer.translate(item(text)).then((translation) => {
      if (translation !== translate(text)) throw new Error(`paragraph ${i} received another text`);
      resolvedAt[i] = clock.now;
    }),
  );
  const state = follow(clock, promises);
  await runUntil(clock, () => state.pending === 0, { stepMs: 1000 });
  const stats = { ...pacer.stats() };
  stats.providerCalls -= callsBefore;
  stats.earlyResolved -= earlyBefore;
  pacer.dispose();
  if (state.failed > 0) throw new Error(`${state.failed} paragraphs failed (streaming ${stream})`);
  const toParagraph = texts.map((text, i) => resolvedAt[i] - callStart.get(text));
  const closed = stream ? texts.map((text) => closedAt.get(text)) : [];
  const toClose = closed.map((at, i) => at - callStart.get(texts[i]));
  return { toParagraph, firstMs: Math.min(...resolvedAt) - begin, toClose, firstCloseMs: Math.min(...closed) - begin, stats };
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * Runs the workload and returns its Markdown section. `smoke` shrinks the page to 24
 * paragraphs.
 */
export async function timeToFirstParagraph({ BatchPacer, smoke = false, number = 7 }) {
  const spec = { ...FIRST_PARAGRAPH, ...(smoke ? { paragraphs: 24 } : {}) };
  const texts = pageParagraphs(spec);
  const modes = [
    { name: "whole batch (baseline): the reply when its last token is written", stream: false, perCall: spec.perCall },
    { name: "streaming: each paragraph as the stream proves it", stream: true, perCall: spec.perCall },
    {
      name: "streaming, a later page: the same pacer read an earlier page first (the provider's length ratio known)",
      stream: true,
      perCall: spec.perCall,
      earlierPage: pageParagraphs({ ...spec, paragraphs: 8, seed: spec.seed + 1 }).map((t) => `Earlier: ${t}`),
    },
    { name: "one call per paragraph (no batching)", stream: false, perCall: 1 },
  ];
  const results = [];
  for (const mode of modes) results.push({ mode, ...(await runPage(BatchPacer, texts, spec, mode)) });
  // The bound no proof can beat: each paragraph the moment its closing marker is written,
  // trusting the id it carries (what an unchecked reader does), from the streaming run.
  const streamed = results[1];
  results.splice(3, 0, {
    mode: { name: "bound, unproven: each paragraph at its closing marker (the streaming run's timeline)" },
    toParagraph: streamed.toClose,
    firstMs: streamed.firstCloseMs,
    stats: { providerCalls: streamed.stats.providerCalls, earlyResolved: undefined },
  });
  const baseline = results[0];
  const baseMean = mean(baseline.toParagraph);
  const rows = results.map(({ mode, toParagraph, firstMs, stats }) => [
    mode.name,
    fmt(stats.providerCalls),
    fmt(Math.round(median(toParagraph))),
    fmt(Math.round(mean(toParagraph))),
    `${(mean(toParagraph) / baseMean).toFixed(2)}x`,
    fmt(Math.round(firstMs)),
    `${(firstMs / baseline.firstMs).toFixed(2)}x`,
    stats.earlyResolved === undefined ? "–" : fmt(stats.earlyResolved),
  ]);
  return table({
    title: `${number}. Time to the first paragraph: ${texts.length} paragraphs, a model streaming its reply (virtual time)`,
    columns: [
      "mode",
      "provider calls",
      "call start → paragraph, median (ms)",
      "mean (ms)",
      "mean vs baseline",
      "page start → first paragraph (ms)",
      "first vs baseline",
      "earlyResolved",
    ],
    rows,
    notes: [
      `${texts.length} distinct paragraphs of ${spec.minChars}–${spec.maxChars} characters (uniform, seed ${spec.seed}), all submitted at once; BatchPacer with rate ${spec.rate}/s, capacity 1, ${spec.perCall} paragraphs per call (maxCharactersPerBatch ${spec.perCall * spec.maxChars}, so every call carries ${spec.perCall}), cacheEntries 0, the other options at their defaults (markers layout).`,
      `The model: ${spec.firstTokenMs} ms to its first token, then ${spec.tokensPerSecond} tokens/s at ${spec.charsPerToken} characters a token; it writes the batch's marked reply (each translation between its own markers, one segment per line) as it would stream it. Streaming: an async generator yielding each token as a stream value. Whole batch: the same reply, returned when its last token is written. One call per paragraph: the same model, one single request per paragraph. "A later page": the same streaming run on a pacer that first translated an earlier page of 8 other paragraphs (its figures count from this page's start): the ratio of the provider's translations to their sources, learned from that page's proven segments (per provider and language pair, kept by snapshot()), lets a call's first segment resolve once it has closed, when its length reads as the first translation alone. The "bound" row is not a run of its own: it reads the streaming run's timeline, when each segment's closing marker was written, the earliest any reader could show a paragraph (by trusting the id it finds, with no proof).`,
      `"call start → paragraph": for each paragraph, from the start of the provider call that carried it to its promise's resolution; the page's queueing behind the rate is left out, so the figures are the model's latency as each layout gives it. "page start → first paragraph": from submitting the page to the first resolved paragraph. Baseline ("vs baseline"): the whole-batch row; targets for streaming: mean ≤ 0.75× and first paragraph ≤ 0.4× the baseline. Virtual time on @sinonjs/fake-timers (the pacer through its clock option, the model on the same clock): one run is exact, no median needed. Every translation is checked against its own paragraph.`,
    ],
  });
}
