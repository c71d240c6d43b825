// The one reading of an HTTP Retry-After value, shared by every part of the package that
// meets one, so that a provider's error and the pacer agree on what "-5" or "1.2.3" mean.
//
// Rules (RFC 9110 §10.2.3, with the fractions some servers send):
// - delay-seconds: digits with an optional fraction ("7", "1.5"), never negative;
// - otherwise an HTTP-date, read as the time from now (0 when it has passed);
// - otherwise undefined: no signs, no exponents, no "1.2.3", no bare numbers read as years.

/** Delay-seconds as sent: digits with an optional fraction. */
const SECONDS = /^\d+(?:\.\d+)?$/;

/**
 * A Retry-After value as milliseconds from `now`, or undefined when it is neither
 * delay-seconds nor an HTTP-date.
 * @param {unknown} value the header's text (anything else is undefined)
 * @param {number} [now] epoch milliseconds, for HTTP-dates
 * @returns {number | undefined} a whole number of milliseconds >= 0
 */
export function parseRetryAfter(value, now = Date.now()) {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text === "") return undefined;
  if (SECONDS.test(text)) return toWholeMs(Number(text) * 1000);
  // Every HTTP-date form (IMF-fixdate, RFC 850, asctime) names a month and a day in
  // letters. Requiring a letter keeps Date.parse from reading "-5" or "2024" as a year.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (!Number.isFinite(at)) return undefined;
  return Math.max(0, Math.ceil(at - now));
}

/**
 * A millisecond count such as `retry-after-ms` sends ("250", "1.5"), rounded up to a
 * whole millisecond, or undefined.
 * @param {unknown} value
 * @returns {number | undefined}
 */
export function parseMilliseconds(value) {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  return SECONDS.test(text) ? toWholeMs(Number(text)) : undefined;
}

/**
 * Rounds up to a whole millisecond, so that a wait never ends before the server said,
 * after dropping the binary floating-point noise of the multiplication (1.1 * 1000 is
 * 1100.0000000000002, which is 1100 ms, not 1101).
 */
export function toWholeMs(ms) {
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  return Math.ceil(Math.round(ms * 1000) / 1000);
}
