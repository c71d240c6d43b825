// The benchmark suite still runs: `bench/run.mjs --smoke` (tiny inputs, one run per
// figure, no Chromium, no results file) exits 0 and prints every workload's table.
// The benchmarks themselves never run in the test command; only this smoke does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));

/** The installed package beside this test (the packed tarball), if there is one. */
function installedPackage() {
  try {
    return dirname(createRequire(import.meta.url).resolve("batch-pacer/package.json"));
  } catch {
    return undefined;
  }
}

const HEADERS = [
  "### 1. Scheduling overhead",
  "### 2. Quota efficiency",
  "### 3. Request savings",
  "### 4. Late binding",
  "### 5a. Size",
  "### 5b. Cold start",
  "### 6. Memory",
  "### 7. Time to the first paragraph",
  "### 8. Layouts under damaged replies",
  "### 9. Requests and tokens per minute",
  "### 10. Sporadic 429s",
  "### 11. Models that cannot batch",
  "### 12. Fallback providers",
  "### 13. Adversarial replies",
  "### 13b. Adversarial replies",
  "### 14. Clients and timeouts",
  "### 15. Providers, pools and arrays",
  "### 16. A quota shared with other clients",
  "### 16b. A quota shared with other clients",
  "### 16c. A quota shared with other clients",
];

test("bench/run.mjs --smoke exits 0 and prints each workload's table", { timeout: 120_000 }, async () => {
  const pkg = installedPackage();
  const args = [join(repo, "bench", "run.mjs"), "--smoke", ...(pkg ? ["--package", pkg] : [])];
  const { code, stdout, stderr } = await new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: repo, timeout: 115_000, maxBuffer: 16 << 20 }, (error, out, err) =>
      resolve({ code: error ? (error.code ?? error.signal) : 0, stdout: out, stderr: err }),
    );
  });
  assert.equal(code, 0, `bench/run.mjs --smoke failed:\n${stderr}\n${stdout}`);
  for (const header of HEADERS) assert.ok(stdout.includes(header), `no table "${header}" in:\n${stdout}`);
  // Every table has a header row and at least one row of figures.
  const tables = stdout.split("### ").slice(1);
  assert.equal(tables.length, HEADERS.length);
  for (const t of tables) assert.ok(t.split("\n").filter((line) => line.startsWith("| ")).length >= 2, t);
});

test("bench/compare-builds.mjs compares two builds and prints a ratio per workload", { timeout: 60_000 }, async () => {
  const pkg = installedPackage() ?? repo;
  const args = [join(repo, "bench", "compare-builds.mjs"), pkg, pkg, "--items", "40", "--runs", "1"];
  const { code, stdout, stderr } = await new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: repo, timeout: 55_000 }, (error, out, err) =>
      resolve({ code: error ? (error.code ?? error.signal) : 0, stdout: out, stderr: err }),
    );
  });
  assert.equal(code, 0, `compare-builds failed:\n${stderr}\n${stdout}`);
  const rows = stdout.split("\n").filter((line) => /^\| (one call|default batching)/.test(line));
  assert.equal(rows.length, 2, stdout);
  for (const row of rows) assert.match(row, /\d+\.\d\dx \|$/, row);
});
