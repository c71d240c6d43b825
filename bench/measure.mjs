// Measurement and reporting helpers: side-by-side runs, medians, Markdown tables.

/** The median of numbers (the lower middle one for an even count). */
export function median(values) {
  const sorted = values.filter((v) => v !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[(sorted.length - 1) >> 1];
}

/** Field by field median of objects of numbers (or the median of plain numbers). */
function medianOf(samples) {
  if (typeof samples[0] === "number") return median(samples);
  const out = {};
  for (const key of Object.keys(samples[0])) {
    const values = samples.map((s) => s[key]);
    out[key] = typeof values[0] === "number" ? median(values) : values[0];
  }
  return out;
}

/**
 * Measures implementations side by side: run r runs every implementation once, in an
 * order rotated by r, so that no implementation always runs first (warm caches) or last
 * (a fuller heap). `warmup` rounds are run and discarded (except for an implementation with
 * `warmup: false`, whose cost is not about warm code). Each `run()` returns a number or
 * an object of numbers; the result maps each name to the median of its runs, with
 * `samples` the raw values.
 * @param {{ name: string, run: () => Promise<number | object>, warmup?: boolean }[]} impls
 */
export async function sideBySide(impls, { runs, warmup = 0 }) {
  const samples = new Map(impls.map((impl) => [impl.name, []]));
  for (let round = -warmup; round < runs; round++) {
    const shift = ((round % impls.length) + impls.length) % impls.length;
    const order = [...impls.slice(shift), ...impls.slice(0, shift)];
    for (const impl of order) {
      if (round < 0 && impl.warmup === false) continue;
      globalThis.gc?.();
      const value = await impl.run();
      if (round >= 0) samples.get(impl.name).push(value);
    }
  }
  const result = new Map();
  for (const [name, values] of samples) result.set(name, { ...wrap(medianOf(values)), samples: values });
  return result;
}

const wrap = (value) => (typeof value === "number" ? { value } : value);

/** A ratio as "1.00x", or "–" when it means nothing. */
export function ratio(value, baseline) {
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || baseline === 0) return "–";
  const r = value / baseline;
  return `${r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2)}x`;
}

/** A number with a sensible count of digits. */
export function fmt(value, digits) {
  if (value === undefined || value === null) return "–";
  if (typeof value === "string") return value;
  if (!Number.isFinite(value)) return "–";
  if (digits !== undefined) return value.toFixed(digits);
  const abs = Math.abs(value);
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  if (abs >= 100) return Math.round(value).toLocaleString("en-US");
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/**
 * A Markdown table with a "### title" heading and notes below it; the first `textColumns`
 * columns are left-aligned, the figures right-aligned.
 * @param {{ title: string, columns: string[], rows: (string|number)[][], notes?: string[],
 *   textColumns?: number }} t
 */
export function table({ title, columns, rows, notes = [], textColumns = 1 }) {
  const cells = rows.map((row) => row.map((cell) => (typeof cell === "number" ? fmt(cell) : String(cell))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (row, align) =>
    "| " + row.map((cell, i) => (i < textColumns || !align ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(" | ") + " |";
  const rule = "|" + widths.map((w, i) => (i < textColumns ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|";
  return [`### ${title}`, "", line(columns, false), rule, ...cells.map((row) => line(row, true)), "", ...notes.map((n) => `${n}  `), ""]
    .join("\n")
    .replace(/ {2}\n$/, "\n");
}

/** Lets pending promise reactions and I/O callbacks run. */
export const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));
