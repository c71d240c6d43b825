// Workload 8: layouts under damaged replies. The demo's mock model (extension-demo/
// mock-provider.mjs, in process) damages the first try of every batch with one of its
// batch faults; each layout reads the replies: the markers layout (whole replies, and the
// same replies streamed in small pieces), the older separator layout, and a count-only
// parser as Read Frog's (the translations joined with "\n\n%%\n\n", taken in order
// whenever the count fits). Figures: paragraphs that ended under another paragraph's
// translation, texts sent again per damaged reply, characters sent per paragraph. Then
// the stream values the driver takes per second in Node, beside a bare `for await` loop
// reading the same streams.

import { article, item, UNLIMITED_BATCHED } from "./data.mjs";
import { sideBySide, table, fmt, ratio } from "./measure.mjs";
import { privateClock, runUntil } from "./virtual-time.mjs";
import { groups } from "./providers.mjs";
import { translateChat, pseudoTranslate } from "../extension-demo/mock-provider.mjs";

const FAULTS = ["none", "wrong-count", "drop-separator", "extra-segment"];
const PIECE = 12; // characters per stream value, about three tokens

/** The mock's reply to a request, with `fault` applied to a batch. */
function mockReply(request, fault) {
  const messages = [
    { role: "system", content: `Translate into German. ${request.instructions}` },
    { role: "user", content: request.text },
  ];
  return translateChat(messages, { fault: request.isBatch ? fault : "none" });
}

/** `text` as a stream of `PIECE`-character values. */
async function* pieces(text) {
  for (let at = 0; at < text.length; at += PIECE) yield text.slice(at, at + PIECE);
}

/** One run of a BatchPacer layout against the mock, in virtual time. */
async function pacerRun(BatchPacer, texts, fault, { segmentFormat, stream }) {
  const { clock, pacerClock } = privateClock();
  let sent = 0;
  let characters = 0;
  let damaged = 0;
  const pacer = new BatchPacer(
    (request) => {
      sent += request.texts.length;
      characters += request.text.length;
      const reply = mockReply(request, request.attempt === 0 ? fault : "none");
      if (reply.fault !== "none") damaged++;
      return stream ? pieces(reply.content) : Promise.resolve(reply.content);
    },
    { ...UNLIMITED_BATCHED, segmentFormat, clock: pacerClock, baseRetryDelayMs: 10 },
  );
  const results = new Array(texts.length);
  let settled = 0;
  texts.forEach((text, i) =>
    pacer.translate(item(text)).then(
      (t) => ((results[i] = t), settled++),
      () => settled++,
    ),
  );
  await runUntil(clock, () => settled === texts.length, { stepMs: 50 });
  const early = pacer.stats().earlyResolved;
  pacer.dispose();
  return outcome(texts, results, { sent, characters, damaged, early });
}

/** Read Frog's reading: the separator joins the batch, any reply of the right count is taken in order. */
async function countOnlyRun(texts, fault) {
  const SEPARATOR = "\n\n%%\n\n";
  const instructions = `Segments are separated by %% lines; answer with the translations separated the same way.`;
  let sent = 0;
  let characters = 0;
  let damaged = 0;
  const ask = (batch, attempt) => {
    const request = { text: batch.join(SEPARATOR), instructions, isBatch: batch.length > 1 };
    sent += batch.length;
    characters += request.text.length;
    const reply = mockReply(request, attempt === 0 ? fault : "none");
    if (reply.fault !== "none") damaged++;
    return reply.content.split(/\n*%%\n*/).map((s) => s.trim());
  };
  const results = new Array(texts.length);
  let start = 0;
  // The same batches as the pacer's defaults: 4 paragraphs, 1,000 characters.
  for (const batch of groups(texts, { maxItems: 4, maxChars: 1000 })) {
    let done = false;
    // Four tries of the batch, then one by one.
    for (let attempt = 0; attempt < 4 && !done; attempt++) {
      const segments = ask(batch, attempt);
      if (segments.length === batch.length) {
        segments.forEach((s, i) => (results[start + i] = s));
        done = true;
      }
    }
    if (!done) batch.forEach((text, i) => (results[start + i] = ask([text], 1)[0]));
    start += batch.length;
  }
  return outcome(texts, results, { sent, characters, damaged, early: 0 });
}

function outcome(texts, results, { sent, characters, damaged, early }) {
  let misplaced = 0;
  let failed = 0;
  texts.forEach((text, i) => {
    if (results[i] === undefined) failed++;
    else if (results[i] !== pseudoTranslate(text, "de")) misplaced++;
  });
  return {
    misplaced,
    failed,
    resentPerDamaged: damaged === 0 ? 0 : (sent - texts.length) / damaged,
    charactersPerParagraph: characters / texts.length,
    early,
  };
}

/** Stream values per second through the pacer, and through a bare loop, real time. */
async function streamThroughput(BatchPacer, texts) {
  const replyOf = (request) =>
    request.isBatch
      ? request.texts.map((t, i) => request.markers[i][0] + pseudoTranslate(t, "de") + request.markers[i][1]).join("\n")
      : pseudoTranslate(request.text, "de");
  // One character per value: the worst case a provider could send.
  async function* values(text, count) {
    for (let at = 0; at < text.length; at++) {
      count.values++;
      yield text[at];
    }
  }
  const paced = async () => {
    const count = { values: 0 };
    const pacer = new BatchPacer((request) => values(replyOf(request), count), { ...UNLIMITED_BATCHED, batchDelayMs: 0 });
    const started = performance.now();
    await Promise.all(texts.map((text) => pacer.translate(item(text))));
    const ms = performance.now() - started;
    pacer.dispose();
    return { perSecond: (count.values / ms) * 1000, values: count.values };
  };
  const bare = async () => {
    const count = { values: 0 };
    const started = performance.now();
    for (const batch of groups(texts, { maxItems: 4, maxChars: 1000 })) {
      const markers = batch.map((_, i) => [`<s${i + 1}>`, `</s${i + 1}>`]);
      let reply = "";
      for await (const value of values(replyOf({ isBatch: true, texts: batch, markers }), count)) reply += value;
      if (reply.length === 0) throw new Error("empty");
    }
    const ms = performance.now() - started;
    return { perSecond: (count.values / ms) * 1000, values: count.values };
  };
  return { paced, bare };
}

/**
 * @param {{ BatchPacer: Function, report: (markdown: string) => void, smoke: boolean, runs: number }} env
 */
export async function layoutsUnderDamagedReplies({ BatchPacer, report, smoke, runs }) {
  const texts = article(1, smoke ? 2 : 24).map((block) => block.text);
  const layouts = [
    { name: "markers, whole replies", run: (f) => pacerRun(BatchPacer, texts, f, { segmentFormat: "markers", stream: false }) },
    { name: "markers, streamed", run: (f) => pacerRun(BatchPacer, texts, f, { segmentFormat: "markers", stream: true }) },
    { name: "separator", run: (f) => pacerRun(BatchPacer, texts, f, { segmentFormat: "separator", stream: false }) },
    { name: "count-only (Read Frog)", run: (f) => countOnlyRun(texts, f) },
  ];
  const rows = [];
  for (const fault of FAULTS) {
    // Counts do not vary run to run (no randomness reaches them): one run each.
    for (const layout of layouts) {
      const r = await layout.run(fault);
      rows.push([fault, layout.name, r.misplaced, r.failed, fmt(r.resentPerDamaged, 2), fmt(r.charactersPerParagraph, 0), r.early]);
    }
  }
  const { paced, bare } = await streamThroughput(BatchPacer, texts);
  const measured = await sideBySide(
    [
      { name: "bare for-await loop", run: bare },
      { name: "batch-pacer", run: paced },
    ],
    { runs: smoke ? 1 : runs, warmup: smoke ? 0 : 1 },
  );
  const floor = measured.get("bare for-await loop").perSecond;
  const pacerRate = measured.get("batch-pacer").perSecond;
  report(
    table({
      title: `8. Layouts under damaged replies: ${texts.length} paragraphs, every batch's first reply damaged (virtual time)`,
      columns: ["mock fault", "layout", "misplaced", "failed", "texts re-sent per damaged reply", "characters sent per paragraph", "resolved before the stream ended"],
      rows,
      textColumns: 2,
      notes: [
        `The paragraphs of bench/data.mjs's article (${texts.length} blocks of 20–900 characters), batched at the defaults (4 paragraphs, 1,000 characters), every batch's first try answered by the demo's mock model with the fault, later tries faithfully ("none": every reply faithful). wrong-count drops the last pair (markers) or segment; drop-separator merges the first two segments (into the first pair, or with a space); extra-segment adds a segment (a pair of an id the batch lacks). "Streamed": the same replies as async generators of ${PIECE}-character values. Count-only: the translations joined with "\\n\\n%%\\n\\n" and taken in order whenever the count fits, four tries then one by one (Read Frog's queue). Misplaced: a paragraph that ended with anything but its own translation.`,
        "",
        `Stream values the driver takes per second in Node (one character per value, ${texts.length} paragraphs batched at the defaults, no pacing limits), beside a bare \`for await\` loop concatenating the same streams: batch-pacer ${fmt(Math.round(pacerRate))} values/s, bare loop ${fmt(Math.round(floor))} values/s (${ratio(floor, pacerRate)} the pacer's rate); median of ${smoke ? 1 : runs} runs, alternating.`,
      ],
    }),
  );
}
