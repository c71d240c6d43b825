// A model that drops or merges a segment, writes the rest one pair early under the
// markers in their order, and fills the freed last pair with a remark of a paragraph's
// length: among paragraphs of like lengths without numbers, no paragraph may resolve
// with another paragraph's text, whole or streamed, in string, object and array replies.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BatchPacer } from "batch-pacer";
import { flushMicrotasks, item, track, virtualTime } from "./helpers.mjs";

const PAGE = [
  "The cat sat on the warm mat today.",
  "A dog ran across the big green park.",
  "The bird sang in the tall old tree.",
  "My friend read a long book by the sea.",
];
// Translations that keep no word of their sources (like lengths, no numbers, no names).
const FRENCH = new Map([
  [PAGE[0], "Le chat s'est assis sur le tapis chaud."],
  [PAGE[1], "Un chien a traversé le grand parc vert."],
  [PAGE[2], "L'oiseau chantait dans le vieil arbre."],
  [PAGE[3], "Mon ami lisait un gros livre près de la mer."],
]);
const FILLER = "Let me know if you need more help.";

/** Pieces of `size` characters, as a streaming model sends them. */
async function* pieces(text, size = 5) {
  for (let at = 0; at < text.length; at += size) yield text.slice(at, at + size);
}

/** The translations the damaged first reply writes, in order. */
function shifted(texts, damage) {
  const out = texts.map((t) => FRENCH.get(t));
  if (damage.drop !== undefined) out.splice(damage.drop, 1);
  if (damage.merge !== undefined) out.splice(damage.merge, 2, `${out[damage.merge]} ${out[damage.merge + 1]}`);
  if (damage.filler) out.push(FILLER);
  return out;
}

/** The reply in `form`, each translation under the request's markers (or ids) in order. */
function render(request, translations, form) {
  if (form === "array") return translations;
  if (form === "object") return Object.fromEntries(translations.map((t, i) => [request.ids[i], t]));
  return translations.map((t, i) => request.markers[i][0] + t + request.markers[i][1]).join("\n");
}

/** Runs the page against a model whose first batch reply has `damage`; faithful afterwards. */
async function run({ damage, form, stream }) {
  // Virtual time: the page's four items are in one batch whatever the machine's speed.
  const { clock, pacerClock } = virtualTime();
  const calls = [];
  const pacer = new BatchPacer(
    (request) => {
      calls.push({ texts: [...request.texts], isBatch: request.isBatch });
      if (!request.isBatch) return FRENCH.get(request.text);
      const first = calls.filter((c) => c.isBatch).length === 1;
      const translations = first ? shifted(request.texts, damage) : request.texts.map((t) => FRENCH.get(t));
      const reply = render(request, translations, form);
      return stream && typeof reply === "string" ? pieces(reply) : reply;
    },
    { baseRetryDelayMs: 1, clock: pacerClock },
  );
  const all = Promise.all(PAGE.map((text) => pacer.translate(item(text, { targetLang: "fr" }))));
  await clock.runAllAsync();
  const results = await all;
  const stats = pacer.stats();
  pacer.dispose();
  return { results, calls, stats };
}

const DAMAGES = {
  "the second segment dropped, the rest one pair early, the last pair left out": { drop: 1 },
  "the first segment dropped, the rest one pair early, a remark in the freed last pair": { drop: 0, filler: true },
  "the first two merged into one pair, the rest one pair early, a remark in the freed last pair": { merge: 0, filler: true },
};

for (const [name, damage] of Object.entries(DAMAGES)) {
  for (const [form, stream] of [["string", false], ["string", true], ["object", false], ["array", false]]) {
    test(`${name}: no paragraph under another's text (${form}${stream ? ", streamed in 5-character pieces" : ""})`, async () => {
      const { results, calls } = await run({ damage, form, stream });
      // The damaged reply was the first batch of the four.
      assert.equal(calls[0].isBatch, true);
      assert.deepEqual(calls[0].texts, PAGE);
      results.forEach((translation, i) => assert.equal(translation, FRENCH.get(PAGE[i]), `paragraph ${i}`));
    });
  }
}

test("a faithful reply whose translations keep words of their paragraphs resolves the batch from its one call", async () => {
  const page = [
    "Anna met Boris at the station at noon.",
    "Clara wrote to David about the garden.",
    "Emil painted the fence with his sister.",
    "Greta found the keys under the old mat.",
  ];
  // Names kept, as translations keep them.
  const german = (text) => text.replace("met", "traf").replace("wrote to", "schrieb").replace("painted", "strich").replace("found", "fand");
  const pacer = new BatchPacer((request) =>
    request.isBatch
      ? request.texts.map((t, i) => request.markers[i][0] + german(t) + request.markers[i][1]).join("\n")
      : german(request.text),
  );
  const results = await Promise.all(page.map((text) => pacer.translate(item(text))));
  assert.deepEqual(results, page.map(german));
  assert.equal(pacer.stats().providerCalls, 1);
  pacer.dispose();
});

// A reply that breaks off inside the third segment (at its token limit, or just ended),
// among paragraphs of like lengths each holding a number of its own that its translation
// keeps: a shift by one would put the next paragraph's number under a segment, so the
// numbers prove the first two, and only the last two go out again.
const NUMBERED = [0, 1, 2, 3].map((k) => `The report on page ${k} was read out loud today.`);
const numberedGerman = (text) =>
  text.replace("The report on page", "Der Bericht zu Seite").replace("was read out loud today.", "wurde heute vorgelesen.");
// Kept numbers spelled out instead: nothing left of the paragraphs in their translations.
const SPELLED = ["null", "eins", "zwei", "drei"];
const spelledGerman = (text) => numberedGerman(text).replace(/\d/, (k) => SPELLED[Number(k)]);

/**
 * Runs the numbered page against a model whose first batch reply writes `order`'s
 * translations (by `translate`) under the markers in their order, the last one cut in
 * half after its opening marker; faithful afterwards. Streamed replies come in 3-character
 * pieces.
 */
async function breakOff({ order, translate = numberedGerman, truncated, stream }) {
  const { clock, pacerClock } = virtualTime();
  const calls = [];
  const pacer = new BatchPacer(
    (request) => {
      calls.push({ texts: [...request.texts], isBatch: request.isBatch });
      if (!request.isBatch) return numberedGerman(request.text);
      if (calls.filter((c) => c.isBatch).length > 1) {
        return request.texts.map((t, i) => request.markers[i][0] + numberedGerman(t) + request.markers[i][1]).join("\n");
      }
      const written = order.map((k) => translate(request.texts[k]));
      const cut = written.pop();
      const closed = written.map((t, i) => request.markers[i][0] + t + request.markers[i][1]);
      const reply = [...closed, request.markers[written.length][0] + cut.slice(0, cut.length / 2)].join("\n");
      if (!stream) return truncated ? { translations: reply, truncated: true } : reply;
      return (async function* () {
        yield* pieces(reply, 3);
        if (truncated) yield { truncated: true };
      })();
    },
    { baseRetryDelayMs: 1, clock: pacerClock },
  );
  const states = NUMBERED.map((text) => track(pacer.translate(item(text))));
  await clock.runAllAsync();
  await flushMicrotasks();
  const stats = pacer.stats();
  pacer.dispose();
  return { states, calls, stats };
}

for (const truncated of [false, true]) {
  for (const stream of [false, true]) {
    const how = `${stream ? "streamed in 3-character pieces" : "whole"}${truncated ? ", truncated: true" : ""}`;

    test(`a reply that breaks off in the third segment resolves the first two by their numbers; only the last two go out again (${how})`, async () => {
      const { states, calls, stats } = await breakOff({ order: [0, 1, 2], truncated, stream });
      assert.deepEqual(
        calls.map((c) => c.texts),
        [NUMBERED, NUMBERED.slice(2)],
      );
      assert.deepEqual(states.map((s) => s.value), NUMBERED.map(numberedGerman));
      assert.ok(states.every((s) => s.settlements === 1));
      assert.equal(stats.countMismatches, 1);
      // Streamed, the first two resolve before the reply ends (the third pair's number has
      // shown): early resolution proves what the whole reply proves.
      assert.equal(stats.earlyResolved, stream ? 2 : 0);
    });

    test(`a reply that breaks off proves nothing when its numbers are shifted, swapped or spelled out; every paragraph goes out again and ends with its own translation (${how})`, async () => {
      for (const damage of [{ order: [1, 2, 3] }, { order: [1, 0, 2] }, { order: [0, 1, 2], translate: spelledGerman }]) {
        const { states, calls } = await breakOff({ ...damage, truncated, stream });
        assert.deepEqual(calls[1].texts, NUMBERED, JSON.stringify(damage.order));
        assert.deepEqual(states.map((s) => s.value), NUMBERED.map(numberedGerman));
        assert.ok(states.every((s) => s.settlements === 1));
      }
    });
  }
}
