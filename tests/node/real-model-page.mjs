// The real model's page and how its translations are checked, shared by
// tests/node/real-model.test.mjs (its first ten paragraphs) and the bench's workload 11
// (bench/workload-cannot-batch.mjs, all of them).

/**
 * Short paragraphs, each with a number of its own that no other paragraph holds (nor any
 * other number's digits), so that a translation showing another paragraph's number is one
 * that ended under the wrong paragraph.
 */
export const PAGE = [
  ["1874", "The museum opened in 1874 and still keeps its first guest book in a glass case near the door."],
  ["2360", "Our bakery sells 2360 loaves of bread every week, most of them before nine in the morning."],
  ["5129", "The bridge is 5129 metres long and crosses the bay in one straight line."],
  ["1931", "In 1931 a storm tore the roof off the old train station, and the repairs took two years."],
  ["4780", "The library lends 4780 books a month to readers of every age."],
  ["3652", "The mountain rises 3652 metres above the sea and keeps its snow for most of the year."],
  ["8415", "The festival drew 8415 visitors last summer, twice as many as the year before."],
  ["1907", "Our school was founded in 1907 by a teacher who had come down from the hills."],
  ["6293", "The ferry carries 6293 passengers a day between the island and the mainland."],
  ["7546", "The garden has 7546 roses, planted in long rows by a team of volunteers."],
  ["2718", "The choir has sung 2718 concerts since its first evening in the town hall."],
  ["9064", "The lighthouse keeper counted 9064 ships passing the cape in a single year."],
  ["3381", "Our village is home to 3381 people, and most of them know each other by name."],
  ["1768", "The first map of the valley was drawn in 1768 by a priest who walked every path."],
  ["5902", "The factory made 5902 bicycles last month and sent most of them abroad."],
  ["8837", "The old forest covers 8837 hectares of hills to the north of the river."],
  ["4153", "The stadium has 4153 seats, and every one of them was taken at the final."],
  ["6620", "The orchard sold 6620 kilos of apples at the market this autumn."],
  ["1849", "The railway reached the coast in 1849, and the town grew quickly after that."],
  ["7290", "The hospital treated 7290 patients last winter, more than ever before."],
  ["3047", "The tunnel under the pass is 3047 metres long and was dug by hand."],
  ["9518", "The observatory has photographed 9518 stars that no one had named."],
  ["2495", "The market hall holds 2495 stalls, each with a number painted above it."],
  ["5736", "The canal lifts boats 5736 centimetres through a chain of eleven locks."],
].map(([number, text]) => ({ number, text }));

/**
 * The numbers of the other paragraphs of `page` that a translation shows. Digit runs are
 * read after joining thousands separators ("2 360", "2.360", "2,360" → "2360"); a run that
 * holds another paragraph's number anywhere in its digits counts. Digits of the
 * paragraph's own number `own` (or of any number of no paragraph) are fine.
 */
export function foreignNumbers(page, translation, own) {
  const joined = translation.replace(/(\d)[\s\u00a0\u202f.,'’](?=\d{3}(?!\d))/g, "$1");
  const runs = joined.match(/\d+/g) ?? [];
  return page.filter((p) => p.number !== own && runs.some((run) => run.includes(p.number))).map((p) => p.number);
}

/**
 * The pacer options of every real-model run: one server slot, a local server has no
 * quota, a CPU model is slow, and no cache (every run asks the model). Everything else at
 * its default.
 */
export const REAL_MODEL_OPTIONS = { maxInFlight: 1, rate: 1000, capacity: 1000, timeoutMs: 300_000, cacheEntries: 0 };
