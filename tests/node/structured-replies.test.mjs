// A structured answer as a model writes it, read by the pacer for every provider (docs/guides/proof.md
// section "Segment identity: the proof rule", and "Replies"): a JSON object of one string per id that comes
// as text, maybe in a code fence, and values a model wrapped in their own markers. A
// custom provider that returns the model's text as it came gets the same clean-up as
// openAIProvider, and the clean-up never moves text from one paragraph to another.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { setup, item } from "./helpers.mjs";

/** The fake model's translation of one text. */
const T = (x) => `«${x.toUpperCase()}»`;

/** Each item's translation, or its error code, or "pending" (`states` from `send`). */
const outcomes = (states) =>
  states.map((s) => (s.status === "fulfilled" ? s.value : s.status === "rejected" ? s.reason.code : "pending"));

/** An object of one value per id, each made by `value(text, index)`. */
const keyedBy = (r, value) => Object.fromEntries(r.ids.map((id, i) => [id, value(r.texts[i], i)]));

/** A faithful answer in the markers layout, or the translation of a single text. */
const faithful = (r) => (r.isBatch ? r.texts.map((x, i) => r.markers[i][0] + T(x) + r.markers[i][1]).join("\n") : T(r.text));

/** The translation wrapped in its own pair of markers, as a model copies them. */
const ownMarkers = (r) => (x, i) => r.markers[i][0] + T(x) + r.markers[i][1];

const TEXTS = ["one", 'two "quoted"', "three\nlines"];

async function run(t, answer, { wait = 200, ...options } = {}) {
  const { clock, calls, send, pacer } = setup(t, { answer, ...options });
  const states = TEXTS.map((x) => send(item(x)));
  await clock.tickAsync(wait);
  const results = outcomes(states);
  return { results, calls, stats: pacer.stats() };
}

describe("a JSON object answer given as text", () => {
  test("in a code fence, with values wrapped in their own markers: every item gets its clean translation", async (t) => {
    const answer = async (r) => "```json\n" + JSON.stringify(keyedBy(r, ownMarkers(r)), null, 2) + "\n```";
    const { results, calls, stats } = await run(t, answer);
    assert.deepEqual(results, TEXTS.map(T));
    assert.equal(calls.length, 1, "one call, nothing sent again");
    assert.equal(stats.countMismatches, 0);
  });

  test("without a fence: escapes (quotes, line breaks, \\u) are decoded", async (t) => {
    const answer = async (r) => JSON.stringify(keyedBy(r, (x) => T(x))).replaceAll("«", "\\u00ab");
    const { results, calls } = await run(t, answer);
    assert.deepEqual(results, TEXTS.map(T));
    assert.equal(calls.length, 1);
  });

  test("in the separator layout too", async (t) => {
    const answer = async (r) => (r.isBatch ? "```\n" + JSON.stringify(keyedBy(r, (x) => T(x))) + "\n```" : T(r.text));
    const { results, calls, stats } = await run(t, answer, { segmentFormat: "separator" });
    assert.deepEqual(results, TEXTS.map(T));
    assert.equal(calls.length, 1);
    assert.equal(stats.countMismatches, 0);
  });

  test("an object whose keys are not all the call's ids is read as a marked string, as before", async (t) => {
    // The pairs inside the JSON prove every segment, so the object is no structured answer.
    const plain = (x) => T(x).replace(/\s+/g, " ").replace(/[^\w ]/g, "");
    const answer = async (r) =>
      JSON.stringify({ translation: r.texts.map((x, i) => r.markers[i][0] + plain(x) + r.markers[i][1]).join(" ") });
    const { results, calls } = await run(t, answer);
    assert.deepEqual(results, TEXTS.map(plain));
    assert.equal(calls.length, 1);
  });
});

describe("values wrapped in their own markers", () => {
  test("an object reply loses them", async (t) => {
    const { results, calls } = await run(t, async (r) => keyedBy(r, ownMarkers(r)));
    assert.deepEqual(results, TEXTS.map(T));
    assert.equal(calls.length, 1);
  });

  test("an array reply loses them, each by its position", async (t) => {
    const { results, calls } = await run(t, async (r) => r.texts.map((x, i) => ownMarkers(r)(x, i)));
    assert.deepEqual(results, TEXTS.map(T));
    assert.equal(calls.length, 1);
  });

  test("a value wrapped in another segment's markers is not unwrapped into this paragraph", async (t) => {
    // The model put segment 2's pair (and translation) under id 1 and the other way round.
    const swapped = (r) => (x, i) => {
      const j = i === 0 ? 1 : i === 1 ? 0 : i;
      return r.markers[j][0] + T(r.texts[j]) + r.markers[j][1];
    };
    const { results, calls } = await run(t, async (r) => (r.isBatch && r.texts.length === 3 ? keyedBy(r, swapped(r)) : faithful(r)), {
      wait: 60_000,
    });
    // The swapped pair proves nothing; the items go out again and each gets its own.
    assert.deepEqual(results, TEXTS.map(T));
    assert.ok(calls.length > 1, "the swapped items were sent again");
  });
});
