// The Vercel AI SDK as the tests use it: `ai` 7 with its provider packages, and `ai` 6
// with the provider packages of its major (installed under npm aliases). They are the
// repository's pinned devDependencies, not dependencies of the package: each is taken from
// beside the test when installed there, else from the repository's node_modules
// ($BATCH_PACER_REPO when the tests run as the packed package's project).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = path.resolve(process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url)));

/** The ESM entry of `name` as the repository's node_modules holds it. */
function repositoryEntry(name) {
  const folder = path.join(repo, "node_modules", name);
  const manifest = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8"));
  const root = manifest.exports?.["."] ?? manifest.exports;
  const entry = (typeof root === "string" ? root : (root?.import ?? root?.default)) ?? manifest.module ?? manifest.main;
  return pathToFileURL(path.join(folder, entry)).href;
}

/** `import(name)` from beside the test, else from the repository; null when neither has it. */
async function load(name) {
  try {
    return await import(name);
  } catch (err) {
    if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
  }
  try {
    return await import(repositoryEntry(name));
  } catch {
    return null;
  }
}

/** One major of the SDK: its name, its `ai` module and its provider modules. */
async function major(name, packages) {
  const modules = await Promise.all(Object.values(packages).map(load));
  const missing = Object.values(packages).filter((_, i) => modules[i] === null);
  const [ai, anthropic, google, openaiCompatible] = modules;
  return {
    name,
    missing,
    ai,
    createAnthropic: anthropic?.createAnthropic,
    createGoogleGenerativeAI: google?.createGoogleGenerativeAI,
    createOpenAICompatible: openaiCompatible?.createOpenAICompatible,
  };
}

/** Both majors the package supports and tests, newest first. */
export const SDKS = [
  await major("ai 7", {
    ai: "ai",
    anthropic: "@ai-sdk/anthropic",
    google: "@ai-sdk/google",
    openaiCompatible: "@ai-sdk/openai-compatible",
  }),
  await major("ai 6", {
    ai: "ai-v6",
    anthropic: "ai-sdk-anthropic-v6",
    google: "ai-sdk-google-v6",
    openaiCompatible: "ai-sdk-openai-compatible-v6",
  }),
];

/** Why the AI SDK tests cannot run here (a sentence), or false when they can. */
export function sdkMissing() {
  const missing = SDKS.flatMap((sdk) => sdk.missing);
  return missing.length === 0 ? false : `${missing.join(", ")} not installed (the repository's devDependencies: npm install)`;
}
