// The demo extension's offline provider (extension-demo/demo-provider.js): whole or
// streamed replies, with or without a reasoning draft first, and the packed BatchPacer
// reading them. Order and counts only; its latency is real but small.
// When this file is copied elsewhere (package tests), set BATCH_PACER_REPO.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const { demoProvider, pseudoTranslate } = await import(pathToFileURL(join(repo, "extension-demo/demo-provider.js")).href);

const FAST = { baseLatencyMs: 2, msPerChar: 0.5 };
const texts = [
  "The first paragraph is a short one.",
  "The second paragraph is longer: it goes on for a while, clause after clause, so that it spans several pieces.",
  "Third.",
];
const markers = [["<s21>", "</s21>"], ["<s58>", "</s58>"], ["<s95>", "</s95>"]];
const batch = {
  texts,
  markers,
  ids: ["21", "58", "95"],
  text: texts.map((t, i) => markers[i][0] + t + markers[i][1]).join("\n"),
  instructions: "Translate each segment between its own markers.",
  isBatch: true,
  sourceLang: "en",
  targetLang: "de",
  context: "",
};
const answer = texts.map((t, i) => markers[i][0] + pseudoTranslate(t, "de") + markers[i][1]).join("\n");

async function collect(stream) {
  const values = [];
  for await (const value of stream) values.push(value);
  return values;
}

test("a whole reply holds each translation between its own markers, with the tokens it used", async () => {
  const reply = await demoProvider(FAST)(batch);
  assert.equal(reply.translations, answer);
  assert.equal(reply.usage.outputTokens, Math.ceil(answer.length / 4));
});

test("stream: true gives the same reply in pieces of whole tokens, then its usage", async () => {
  const values = await collect(await demoProvider({ ...FAST, stream: true })(batch));
  const pieces = values.slice(0, -1);
  assert.ok(pieces.length > 1, `${pieces.length} piece(s)`);
  assert.ok(pieces.every((p) => typeof p === "string" && p.length > 0));
  assert.ok(pieces.slice(0, -1).every((p) => p.length % 4 === 0), "pieces of whole 4-character tokens");
  assert.equal(pieces.join(""), answer);
  const tokens = (text) => Math.ceil(text.length / 4);
  assert.deepEqual(values.at(-1), {
    usage: { inputTokens: tokens(batch.instructions) + tokens(batch.text), outputTokens: tokens(answer) },
  });
});

test("think: true writes a draft holding the batch's markers around the wrong texts, then the answer", async () => {
  for (const stream of [false, true]) {
    const reply = await demoProvider({ ...FAST, stream, think: true })(batch);
    const text = stream ? (await collect(reply)).filter((v) => typeof v === "string").join("") : reply.translations;
    const match = /^<think>\n([\s\S]*)\n<\/think>\n([\s\S]*)$/.exec(text);
    assert.ok(match, text.slice(0, 60));
    assert.equal(match[2], answer);
    const draft = [...match[1].matchAll(/<s(\d+)>([\s\S]*?)<\/s\1>/g)].map((m) => [`<s${m[1]}>`, m[2]]);
    assert.deepEqual(draft.map(([open]) => open), markers.map(([open]) => open), "every pair of the batch");
    draft.forEach(([open, inside]) => assert.notEqual(inside, texts[markers.findIndex(([o]) => o === open)]));
  }
});

test("an aborted call stops the stream with the abort's reason", async () => {
  const controller = new AbortController();
  const stream = await demoProvider({ baseLatencyMs: 1000, stream: true })({ ...batch, signal: controller.signal });
  const next = stream[Symbol.asyncIterator]().next();
  controller.abort(new Error("tab closed"));
  await assert.rejects(next, /tab closed/);
});

test("BatchPacer reads the streaming, thinking provider: every paragraph its own, some before the stream ended", async (t) => {
  const { default: init, BatchPacer } = await import("batch-pacer");
  await init();
  const pacer = new BatchPacer(demoProvider({ ...FAST, stream: true, think: true }), { batchDelayMs: 50, rate: 1000 });
  t.after(() => pacer.dispose());
  const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i}: ${"a clause that runs on, ".repeat(3 + (i % 4))}end.`);
  const previews = new Map();
  const out = await Promise.all(
    paragraphs.map((text) =>
      pacer.translate({
        text,
        sourceLang: "en",
        targetLang: "de",
        providerId: "demo",
        onPartial: (partial) => previews.set(text, [...(previews.get(text) ?? []), partial]),
      }),
    ),
  );
  assert.deepEqual(out, paragraphs.map((p) => pseudoTranslate(p, "de")));
  const stats = pacer.stats();
  // No retry: the drafts' markers never count as the reply.
  assert.equal(stats.retries, 0);
  assert.equal(stats.countMismatches, 0);
  assert.ok(stats.batchCalls > 0);
  assert.equal(stats.streamedCalls, stats.providerCalls, "every call was answered with a stream");
  assert.ok(stats.earlyResolved > 0, `earlyResolved ${stats.earlyResolved}`);
  // Previews are beginnings of the paragraph's own translation, never another's.
  for (const [text, list] of previews) {
    for (const partial of list) assert.ok(pseudoTranslate(text, "de").startsWith(partial), `${JSON.stringify(partial)} for ${text}`);
  }
  assert.ok(previews.size > 0, "previews were given");
});
