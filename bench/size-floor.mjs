// Workload 5a's floor: builds bench/size-floor (the package's dependencies, each used
// once, no pacing logic) the way the package is built, and returns its files' sizes.

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { minifyModule } from "../scripts/ship-js.mjs";
import { shortenNames, wasmOptFlags } from "../scripts/short-names.mjs";

/**
 * Builds the floor module with cargo, wasm-bindgen and wasm-opt (all installed by the
 * README's setup), minifies its glue as the package's, and returns `[{ file, raw, gzip }]`
 * for its .wasm and JS glue.
 */
export async function sizeFloor(repo) {
  const target = join(repo, "target", "size-floor");
  const out = join(target, "pkg");
  const run = (command, args, env = process.env) =>
    execFileSync(command, args, { cwd: repo, env, stdio: ["ignore", "ignore", "pipe"] });
  // The package's release configuration (scripts/release-wasm.toml, unstable settings).
  run("cargo", [
    "build", "--release", "--target", "wasm32-unknown-unknown",
    "--manifest-path", join(repo, "bench", "size-floor", "Cargo.toml"), "--target-dir", target,
    "--config", join(repo, "scripts", "release-wasm.toml"),
  ], { ...process.env, RUSTC_BOOTSTRAP: "1" });
  run("wasm-bindgen", [
    "--target", "web", "--no-typescript", "--out-dir", out,
    join(target, "wasm32-unknown-unknown", "release", "size_floor.wasm"),
  ]);
  const wasm = join(out, "size_floor_bg.wasm");
  run(join(repo, "node_modules", ".bin", "wasm-opt"), [...wasmOptFlags(repo), wasm, "-o", wasm]);
  // Its names shortened as the package's are (scripts/short-names.mjs).
  const glue = join(out, "size_floor.js");
  shortenNames({ wasm, glue, bgModule: "./size_floor_bg.js", repo });
  // Its glue minified as the package's is (scripts/ship-js.mjs).
  writeFileSync(glue, await minifyModule(readFileSync(glue, "utf8"), "size_floor.js"));
  return ["size_floor_bg.wasm", "size_floor.js"].map((file) => {
    const bytes = readFileSync(join(out, file));
    return { file, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
}
