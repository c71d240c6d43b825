// Workload 13: adversarial replies among paragraphs of like lengths without numbers (the
// shape of subtitle cues). Every batch's first reply is damaged the way that leaves no
// trace in the lengths: a segment dropped, or two merged, the rest written one pair early
// under the markers in their order of appearance, and the freed last pair filled with a
// remark of a paragraph's length, or left out. Later tries are faithful. Two models: one
// whose translations keep the source's words (the demo's pseudo-translation, as names,
// numbers and cognates are kept), one whose translations keep none (every letter
// changed, a language without cognates). Whole replies and the same replies streamed in
// 5-character pieces. Figures: paragraphs under another paragraph's text (misplaced),
// paragraphs resolved from their first reply, texts sent again per paragraph. Then the
// time to the first paragraph, streamed ÷ whole, on workload 7's page and on a page of
// like-length paragraphs. Each figure for this package and, with `--baseline DIR`, for
// a baseline build beside it, in one run.

import { item, prng } from "./data.mjs";
import { table, fmt } from "./measure.mjs";
import { privateClock, runUntil } from "./virtual-time.mjs";
import { pseudoTranslate } from "../extension-demo/mock-provider.mjs";
import { FIRST_PARAGRAPH, pageParagraphs, runPage } from "./workload-first-paragraph.mjs";

const FILLER = "Let me know if you need more help.";
const PIECE = 5;
const FAULTS = ["none", "drop + filler", "merge + filler", "drop, last pair left out"];

/** Letters moved one on (a translation that keeps none of its source's words). */
const rotate = (text) =>
  text.replace(/[a-z]/gi, (c) => (c === "z" ? "a" : c === "Z" ? "A" : String.fromCharCode(c.charCodeAt(0) + 1)));

const MODELS = [
  { name: "keeps words", translate: (text) => pseudoTranslate(text, "de") },
  { name: "keeps none", translate: (text) => `«${rotate(text)}»` },
];

const VOCABULARY = (
  "cat dog bird fish horse cow sheep goat mouse owl fox bear wolf deer frog crow duck " +
  "sat ran sang read sold made found lost kept saw heard took gave held left met told " +
  "warm cold tall old new big small green red blue dark bright quiet loud soft round " +
  "mat park tree book car road house river field bridge garden window door table hill " +
  "today again later early slowly gently softly twice alone together outside inside"
).split(" ");

/** `n` distinct sentences of 34–40 characters without numbers, like subtitle cues. */
export function likeLengthParagraphs(n, seed = 41) {
  const random = prng(seed);
  const out = new Set();
  while (out.size < n) {
    let text = "The";
    while (text.length < 33) text += ` ${VOCABULARY[Math.floor(random() * VOCABULARY.length)]}`;
    if (text.length <= 39) out.add(`${text}.`);
  }
  return [...out];
}

/** A batch's reply: each piece under the markers in their order of appearance. */
function reply(request, pieces) {
  return pieces.map((piece, k) => request.markers[k][0] + piece + request.markers[k][1]).join("\n");
}

/** The model's reply, damaged by `fault` when it is a batch's first try. */
function answer(request, fault, translate, random) {
  if (!request.isBatch) return translate(request.text);
  const pieces = request.texts.map(translate);
  if (request.attempt > 0 || fault === "none") return reply(request, pieces);
  const j = Math.floor(random() * (pieces.length - 1));
  if (fault === "merge + filler") pieces.splice(j, 2, `${pieces[j]} ${pieces[j + 1]}`);
  else pieces.splice(j, 1);
  if (fault !== "drop, last pair left out") pieces.push(FILLER);
  return reply(request, pieces);
}

async function* pieces(text) {
  for (let at = 0; at < text.length; at += PIECE) yield text.slice(at, at + PIECE);
}

/** One page through `BatchPacer` against the damaging model, in virtual time. */
async function run(BatchPacer, texts, { fault, model, stream }) {
  const { clock, pacerClock } = privateClock();
  const random = prng(97);
  const sends = new Map();
  let sent = 0;
  const pacer = new BatchPacer(
    (request) => {
      for (const text of request.texts) sends.set(text, (sends.get(text) ?? 0) + 1);
      sent += request.texts.length;
      const text = answer(request, fault, model.translate, random);
      return stream ? pieces(text) : Promise.resolve(text);
    },
    { rate: 1e9, capacity: 1e9, cacheEntries: 0, baseRetryDelayMs: 10, clock: pacerClock },
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
  const { providerCalls } = pacer.stats();
  pacer.dispose();
  let misplaced = 0;
  let failed = 0;
  let firstReply = 0;
  texts.forEach((text, i) => {
    if (results[i] === undefined) failed++;
    else if (results[i] !== model.translate(text)) misplaced++;
    else if (sends.get(text) === 1) firstReply++;
  });
  return { misplaced, failed, firstReply, resent: (sent - texts.length) / texts.length, providerCalls };
}

/** Time to the first paragraph, streamed ÷ whole, on `texts`. */
async function firstParagraph(BatchPacer, texts) {
  const spec = { ...FIRST_PARAGRAPH, maxChars: Math.max(...texts.map((t) => t.length)) };
  const whole = await runPage(BatchPacer, texts, spec, { stream: false, perCall: spec.perCall });
  const streamed = await runPage(BatchPacer, texts, spec, { stream: true, perCall: spec.perCall });
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  return {
    first: streamed.firstMs / whole.firstMs,
    mean: mean(streamed.toParagraph) / mean(whole.toParagraph),
    early: streamed.stats.earlyResolved,
    calls: [whole.stats.providerCalls, streamed.stats.providerCalls],
  };
}

/**
 * @param {{ builds: { name: string, BatchPacer: Function }[], smoke: boolean, number?: number }} env
 */
export async function adversarialReplies({ builds, smoke, number = 13 }) {
  const texts = likeLengthParagraphs(smoke ? 24 : 120);
  const rows = [];
  for (const model of MODELS) {
    for (const fault of FAULTS) {
      for (const stream of [false, true]) {
        for (const build of builds) {
          // Counts do not vary run to run (the damage is seeded): one run each.
          const r = await run(build.BatchPacer, texts, { fault, model, stream });
          rows.push([
            model.name,
            fault,
            stream ? "streamed" : "whole",
            build.name,
            r.misplaced,
            r.failed,
            `${r.firstReply} of ${texts.length}`,
            fmt(r.resent, 2),
            fmt(r.providerCalls),
          ]);
        }
      }
    }
  }
  const pages = [
    { name: `workload 7's page (${smoke ? 24 : FIRST_PARAGRAPH.paragraphs} paragraphs of 100–600 characters, each numbered)`, texts: pageParagraphs({ ...FIRST_PARAGRAPH, ...(smoke ? { paragraphs: 24 } : {}) }) },
    { name: `like lengths (${smoke ? 24 : FIRST_PARAGRAPH.paragraphs} paragraphs of 34–40 characters, no numbers)`, texts: likeLengthParagraphs(smoke ? 24 : FIRST_PARAGRAPH.paragraphs, 43) },
  ];
  const firstRows = [];
  for (const page of pages) {
    for (const build of builds) {
      const f = await firstParagraph(build.BatchPacer, page.texts);
      firstRows.push([page.name, build.name, `${f.first.toFixed(2)}x`, `${f.mean.toFixed(2)}x`, fmt(f.early), `${f.calls[0]} / ${f.calls[1]}`]);
    }
  }
  const names = builds.map((b) => b.name).join(", ");
  return [
    table({
      title: `${number}. Adversarial replies: ${texts.length} paragraphs of like lengths without numbers, every batch's first reply shifted (virtual time)`,
      columns: ["model", "first reply", "reply", "build", "misplaced", "failed", "resolved from the first reply", "texts re-sent per paragraph", "provider calls"],
      rows,
      textColumns: 4,
      notes: [
        `${texts.length} distinct sentences of 34–40 characters without numbers (bench/workload-adversarial-replies.mjs, seed 41), batched at the defaults (4 per call), markers layout, rate unlimited, cacheEntries 0, baseRetryDelayMs 10, on a virtual clock. Every batch's first try is answered with the fault, later tries and single calls faithfully. drop + filler: one segment (seeded choice) dropped, the rest written one pair early under the markers in their order, "${FILLER}" (34 characters, a paragraph's length) in the freed last pair; merge + filler: two segments merged into one pair, then the same; last pair left out: the drop without the filler. "keeps words": the demo's pseudo-translation (\`[de] \` and the source's case swapped: its words kept, as names, numbers and cognates are); "keeps none": every letter moved one on (like lengths, no word in common with the source). Streamed: the same replies in ${PIECE}-character values. Misplaced: a paragraph that resolved with anything but its own translation. Resolved from the first reply: paragraphs sent once. Builds side by side in one run: ${names}.`,
        `Command: \`node bench/run.mjs --only 13 [--baseline DIR]\` (DIR: another build's package root, its js/ and built pkg/).`,
      ],
    }),
    table({
      title: `${number}b. Adversarial replies: time to the first paragraph, streamed ÷ whole batch (virtual time)`,
      columns: ["page", "build", "first paragraph, streamed ÷ whole", "mean, streamed ÷ whole", "earlyResolved (streamed)", "provider calls (whole / streamed)"],
      rows: firstRows,
      textColumns: 2,
      notes: [
        `Workload 7's model (${FIRST_PARAGRAPH.firstTokenMs} ms to the first token, ${FIRST_PARAGRAPH.tokensPerSecond} tokens/s, 4 characters a token, the demo's pseudo-translation), rate ${FIRST_PARAGRAPH.rate}/s, 4 paragraphs per call, on workload 7's page and on a page of like-length sentences without numbers (seed 43). Every translation is checked against its own paragraph.`,
      ],
    }),
  ].join("\n\n");
}
