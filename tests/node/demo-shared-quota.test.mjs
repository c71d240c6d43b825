// `npm start`'s shared-quota run (extension-demo/shared-quota-run.mjs) with the packed
// package: five tabs' page flows, each its own pacer on one key, translate the demo article
// against the mock provider over HTTP on 127.0.0.1 with one strict quota for every caller
// (reported whole in x-ratelimit-*, 429 + Retry-After above it), once with the pacers at
// their defaults and once built with `sharedQuota: false`. Checked: with the rules every
// paragraph settles under its own translation and none fails; each run counts the 429s the
// mock sent; the report prints each run's 429s, failed items and time ÷ bound as measured.
//
// Run from the repository: SKIP_BUILD=1 bash tests/node/run-package-tests.sh
// --test-name-pattern='shared-quota run'
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import init, { BatchPacer, openAIProvider } from "batch-pacer";

await init();

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const { SHARED_QUOTA, TAB_LANGUAGES, articleBlocks, sharedQuotaReport, sharedQuotaRun } = await import(
  pathToFileURL(join(repo, "extension-demo/shared-quota-run.mjs")).href
);

test("npm start's shared-quota run: five tabs' pacers on one strict quota; with the rules no paragraph fails or shows another's translation, and the report prints each run's 429s, failed items and time ÷ bound", { timeout: 300_000 }, async () => {
  const pkg = { BatchPacer, openAIProvider };
  const withRules = await sharedQuotaRun(pkg, { sharedQuota: true });
  const before = await sharedQuotaRun(pkg, { sharedQuota: false });
  const items = TAB_LANGUAGES.length * articleBlocks().length;

  assert.equal(withRules.items, items);
  assert.equal(withRules.failed, 0, "no paragraph fails with the rules");
  assert.equal(withRules.misplaced, 0);
  // The run without the rules settles every paragraph too, each under its own translation
  // (a 429 costs time, never a paragraph's place); failures it may have.
  assert.equal(before.items, items);
  assert.equal(before.misplaced, 0);
  for (const run of [withRules, before]) {
    assert.equal(run.rateLimited, run.mockRateLimited, "the pacers counted every 429 the mock sent");
    // The quota was met: five pages need more than its first window.
    assert.ok(run.accepted > SHARED_QUOTA.requests || run.acceptedTokens > SHARED_QUOTA.tokens);
    assert.ok(Number.isFinite(run.timeOverBound) && run.timeOverBound > 0);
  }

  const { lines, ok } = sharedQuotaReport(withRules, before);
  assert.equal(ok, true, lines.join("\n"));
  const line = (label) => lines.find((l) => l.startsWith(label)) ?? "";
  assert.match(line("paragraphs"), new RegExp(`^paragraphs +${items} of ${items} \\(0 failed, 0 misplaced\\) +${items - before.failed} of ${items} \\(${before.failed} failed`));
  assert.match(line("429s "), new RegExp(`^429s +${withRules.rateLimited} \\(the mock counted ${withRules.mockRateLimited}\\) +${before.rateLimited} `));
  assert.match(line("time ÷ bound"), new RegExp(`^time ÷ bound +${withRules.timeOverBound.toFixed(2)}x \\(bound ${withRules.boundSeconds.toFixed(1)} s\\) +${before.timeOverBound.toFixed(2)}x`));
  assert.ok(lines.some((l) => l.includes(`${SHARED_QUOTA.requests} requests and ${SHARED_QUOTA.tokens.toLocaleString("en")} tokens per ${SHARED_QUOTA.windowMs / 1000} s`)));
});
