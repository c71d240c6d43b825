// dispose() gives back the memory a page's items took, at once: an extension that makes a
// pacer per page (or per tab) and disposes it must not grow the module's memory page after
// page until the disposed pacers happen to be collected. The module's memory is counted in
// `process.memoryUsage().external`; this file runs in a process of its own.

import { test } from "node:test";
import assert from "node:assert/strict";

import init, { BatchPacer } from "batch-pacer";

await init();

const PARAGRAPHS = 20_000;
const texts = Array.from({ length: PARAGRAPHS }, (_, i) => `Paragraph ${i} of the page. ${"Lorem ipsum ".repeat(12)}`);
const external = () => process.memoryUsage().external;

/** One page: every paragraph in flight at once (one call each), all settled, then dispose. */
async function page() {
  const pacer = new BatchPacer((request) => Promise.resolve(request.text), {
    rate: 1e9,
    capacity: 1e9,
    batchDelayMs: 0,
    cacheEntries: 0,
  });
  const results = await Promise.all(
    texts.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "p" })),
  );
  assert.deepEqual(results, texts);
  pacer.dispose();
}

test("pages of 20,000 paragraphs, each pacer disposed: memory grows for the first page, not for every page", async () => {
  const before = external();
  await page();
  const afterFirst = external();
  for (let i = 0; i < 5; i++) await page();
  const afterSixth = external();
  const firstPage = afterFirst - before;
  const fiveMore = afterSixth - afterFirst;
  // Keeping each disposed pacer's tables (about a first page's worth each) until it is
  // collected grew five more pages by about twice the first page.
  assert.ok(firstPage > 0, `the first page took no memory (${firstPage} bytes): nothing was measured`);
  assert.ok(
    fiveMore < firstPage / 2,
    `five more pages grew memory by ${(fiveMore / 2 ** 20).toFixed(1)} MiB, the first by ${(firstPage / 2 ** 20).toFixed(1)} MiB`,
  );
});

test("20,000 pacers, each made, used for one item and disposed, without a collection: memory does not grow", async () => {
  /** One pacer, as a page or a tab makes one: one paragraph, then dispose. */
  async function pacerForOnePage(i) {
    const pacer = new BatchPacer((request) => Promise.resolve(`«${request.text}»`), { batchDelayMs: 0 });
    const translation = await pacer.translate({ text: `Paragraph ${i}`, sourceLang: "en", targetLang: "de", providerId: "p" });
    assert.equal(translation, `«Paragraph ${i}»`);
    pacer.dispose();
    assert.equal(pacer.stats().succeeded, 1, "a disposed pacer still answers stats()");
  }
  // The first pacers size the module's shared buffers; then measure.
  for (let i = 0; i < 100; i++) await pacerForOnePage(i);
  const before = external();
  for (let i = 0; i < 20_000; i++) await pacerForOnePage(i);
  const grown = external() - before;
  // Each disposed pacer left to the garbage collector kept about 3 KB of the module's
  // memory (60 MiB for 20,000 measured, nothing collected meanwhile). Freed at dispose,
  // the module reuses that memory for the next pacer: measured, no growth at all. The
  // bound leaves room for the noise of other external buffers, below 100 bytes a pacer.
  assert.ok(grown < 2 * 2 ** 20, `20,000 disposed pacers grew memory by ${(grown / 2 ** 20).toFixed(1)} MiB`);
});
