// The wasm soak still runs on the packed and installed package: `bench/soak-wasm.mjs
// --items 2000 --package <installed package>` (every provider fault, aborts, setOptions
// and a dispose while running, on a fake clock) exits 0, which means every item settled
// once, none got another's translation and every queue ended empty.
// The full soak (100,000 items) never runs in the test command; only this smoke does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
// The package "batch-pacer" resolves to here: the installed one, never the sources.
const packageDir = dirname(createRequire(import.meta.url).resolve("batch-pacer/package.json"));

test("bench/soak-wasm.mjs --items 2000 exits 0 on the installed package", { timeout: 120_000 }, async () => {
  const args = [join(repo, "bench", "soak-wasm.mjs"), "--items", "2000", "--package", packageDir];
  const { code, stdout, stderr } = await new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: repo, timeout: 115_000, maxBuffer: 16 << 20 }, (error, out, err) =>
      resolve({ code: error ? (error.code ?? error.signal) : 0, stdout: out, stderr: err }),
    );
  });
  assert.equal(code, 0, `bench/soak-wasm.mjs failed:\n${stderr}\n${stdout}`);
  assert.match(stdout, /settled exactly once: 2000 of 2000 items/);
  assert.match(stdout, /no translation misassigned/);
  assert.match(stdout, /memory: start .*, peak .*, end /);
});
