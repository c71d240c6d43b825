// Whether a missing browser, driver or built demo may skip the tests that need it.
// Locally it may, with the reason shown. Under CI=true, and in `npm test` (whose setup
// installs every one of them, and which sets BATCH_PACER_REQUIRE_ALL=1), it may not: a
// skipped suite would let CI pass without running it.

export const everythingRequired = process.env.CI === "true" || process.env.BATCH_PACER_REQUIRE_ALL === "1";

/**
 * `reason` (what is missing) as a `skip` option, false when nothing is missing; when
 * everything is required, the test file fails at load, naming what is missing.
 */
export function skipIfMissing(reason) {
  if (!reason) return false;
  if (everythingRequired) {
    throw new Error(`${reason}: these tests must run here (CI=true or BATCH_PACER_REQUIRE_ALL=1); scripts/setup.sh installs it`);
  }
  return reason;
}
