// The README's shared proxy, for real: LiteLLM's proxy (docs/recipes/shared-proxy.md) holds
// the company key and enforces one quota for every client, with the recipe's own config
// (docs/recipes/litellm-config.yaml; only its rpm and tpm are scaled down so that a test
// meets them), in front of an OpenAI-compatible upstream on 127.0.0.1 that translates
// faithfully. Three pacers (three users' extensions) call the proxy with the team's key
// through the packed package's openAIProvider. Checked: the proxy's 429s reach the pacers as
// 429s (stats().rateLimited, `rateLimited` events), its x-ratelimit-* headers reach them as
// limits (the provider's `limits`, the pacers' snapshots), the upstream never sees more
// than the quota nor any key but the company's, and every paragraph settles under its own
// translation.
//
// LiteLLM counts its quota per minute of the clock (UTC) and its 429s carry no
// Retry-After, so the paragraphs over the quota wait for the next minute: the test takes
// one to three minutes, the proxy's start (about 15 s) included.
//
// Needs the proxy: bash scripts/litellm-setup.sh (npm test runs it). Run alone:
//   SKIP_BUILD=1 bash tests/node/run-package-tests.sh --test-name-pattern='shared proxy'
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import init, { BatchPacer, openAIProvider } from "batch-pacer";

import { faithfulPieces, startServer } from "./chat-server.mjs";
import { litellmMissing, startLiteLLMProxy } from "./litellm-proxy.mjs";
import { skipIfMissing } from "./requirements.mjs";

await init();

const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const skip = skipIfMissing(litellmMissing());

/** The test's quota: 10 requests a minute binds; the tokens never do. */
const RPM = 10;
const TPM = 1_000_000;
const PACERS = 3;
/** Each paragraph fills a call alone (two exceed maxCharactersPerBatch): 18 calls for a quota of 10. */
const PARAGRAPHS = 6;
const COMPANY_KEY = "sk-company-key-only-the-proxy-holds";
const TEAM_KEY = "sk-team-key-0123456789abcdef0123456789abcdef";
const PROVIDER_ID = "team-proxy";

const translate = (text) => `[de] ${text}`;

/** The recipe's config with the test's quota: every other line as the recipe has it. */
async function recipeConfig(dir) {
  const recipe = await readFile(join(repo, "docs/recipes/litellm-config.yaml"), "utf8");
  for (const line of [
    "api_base: os.environ/UPSTREAM_BASE_URL",
    "api_key: os.environ/COMPANY_API_KEY",
    "- enforce_model_rate_limits",
    "num_retries: 0",
    "master_key: os.environ/LITELLM_MASTER_KEY",
    "model_name: translator",
  ]) {
    assert.ok(recipe.includes(line), `docs/recipes/litellm-config.yaml has no line "${line}"`);
  }
  assert.equal(recipe.match(/\brpm: \d+/g)?.length, 1, "one rpm in the recipe's config");
  assert.equal(recipe.match(/\btpm: \d+/g)?.length, 1, "one tpm in the recipe's config");
  const path = join(dir, "litellm-config.yaml");
  await writeFile(path, recipe.replace(/\brpm: \d+/, `rpm: ${RPM}`).replace(/\btpm: \d+/, `tpm: ${TPM}`));
  return path;
}

/** The text of a chat message's content, as a string or as parts. */
function contentText(content) {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((part) => part?.text ?? "").join("") : "";
}

/** Paragraph `i` of user `p`: about 600 characters, its own words. */
function paragraph(p, i) {
  let text = `User ${p + 1}, paragraph ${i + 1}:`;
  for (let n = 1; text.length < 600; n++) text += ` sentence ${n} of what user ${p + 1} reads on page ${i + 1}.`;
  return text;
}

test("shared proxy: LiteLLM enforces one quota for three pacers; its 429s are read as 429s and its x-ratelimit-* headers as limits; every paragraph gets its own translation", { skip, timeout: 300_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "batch-pacer-litellm-"));
  t.after(() => rm(dir, { recursive: true, force: true }));

  // The upstream: the provider behind the company key, which reports no limits of its own.
  const upstreamCalls = [];
  const upstream = await startServer(t, (record, res) => {
    // The proxy asks for the model list once at start: not a call of the quota.
    if (record.method === "GET") return res.writeHead(200, { "Content-Type": "application/json" }).end('{"object":"list","data":[]}');
    const messages = record.json?.messages ?? [];
    const user = contentText(messages.findLast((m) => m?.role === "user")?.content);
    const answer = faithfulPieces(user, translate).join("");
    upstreamCalls.push({ at: new Date(), key: record.headers.authorization });
    const prompt = Math.ceil(messages.reduce((n, m) => n + contentText(m?.content).length, 0) / 4);
    const completion = Math.ceil(answer.length / 4);
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({
      id: `chatcmpl-${upstreamCalls.length}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: record.json?.model,
      choices: [{ index: 0, message: { role: "assistant", content: answer }, finish_reason: "stop" }],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    }));
  });

  const proxy = await startLiteLLMProxy({
    config: await recipeConfig(dir),
    env: { UPSTREAM_BASE_URL: upstream.baseUrl, COMPANY_API_KEY: COMPANY_KEY, LITELLM_MASTER_KEY: TEAM_KEY },
  });
  t.after(() => proxy.stop());

  // What crossed the wire between the pacers and the proxy, and what openAIProvider made of it.
  const responses = [];
  const replyLimits = [];
  const failures = [];
  const events = [];
  const pacers = Array.from({ length: PACERS }, (_, p) => {
    const viaProxy = openAIProvider({
      baseUrl: proxy.baseUrl,
      apiKey: TEAM_KEY,
      model: "translator",
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        responses.push({ status: response.status, key: new Headers(init.headers).get("authorization") });
        return response;
      },
    });
    const provider = async (request) => {
      try {
        const reply = await viaProxy(request);
        replyLimits.push(reply.limits);
        return reply;
      } catch (err) {
        failures.push(err);
        throw err;
      }
    };
    return new BatchPacer(provider, { onEvent: (event) => events.push({ pacer: p, ...event }) });
  });
  t.after(() => pacers.forEach((pacer) => pacer.dispose()));

  // What each pacer holds of the proxy's reports while the run goes on.
  const heldLimits = [];
  const watch = setInterval(() => {
    for (const pacer of pacers) {
      const limits = pacer.snapshot().providers.find((entry) => entry.providerId === PROVIDER_ID)?.limits;
      if (limits) heldLimits.push(limits);
    }
  }, 100);
  t.after(() => clearInterval(watch));

  const texts = pacers.map((_, p) => Array.from({ length: PARAGRAPHS }, (_, i) => paragraph(p, i)));
  const results = await Promise.allSettled(
    pacers.flatMap((pacer, p) =>
      texts[p].map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: PROVIDER_ID })),
    ),
  );
  clearInterval(watch);

  const output = () => `\n--- the proxy's output (tail) ---\n${proxy.output().slice(-3000)}`;
  // Every paragraph under its own translation, none failed.
  const wanted = texts.flat().map(translate);
  assert.deepEqual(
    results.map((r) => (r.status === "fulfilled" ? r.value : `rejected: ${r.reason?.code} ${r.reason?.message}`)),
    wanted,
    output(),
  );
  for (const pacer of pacers) {
    assert.equal(pacer.stats().failed, 0);
    assert.equal(pacer.stats().duplicateSettlements, 0);
  }

  // The proxy enforced one quota for all three: at most RPM calls reached the upstream in
  // any minute, each with the company key, which no pacer ever sent.
  const perMinute = new Map();
  for (const call of upstreamCalls) {
    const minute = call.at.toISOString().slice(0, 16);
    perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
  }
  assert.ok([...perMinute.values()].every((n) => n <= RPM), `upstream calls per minute: ${JSON.stringify([...perMinute])}`);
  assert.ok(upstreamCalls.every((call) => call.key === `Bearer ${COMPANY_KEY}`), "the upstream saw only the company key");
  assert.ok(responses.every((r) => r.key === `Bearer ${TEAM_KEY}`), "the pacers sent only the team's key");
  const answered = responses.filter((r) => r.status === 200).length;
  assert.equal(answered, upstreamCalls.length, "each answer the pacers got came from one upstream call");

  // Its 429s are read as 429s: each one a provider error with status 429, counted by the
  // pacer that met it and announced as a `rateLimited` event.
  const limited = responses.filter((r) => r.status === 429).length;
  t.diagnostic(`${answered} calls answered, ${limited} answered 429, upstream calls per minute ${JSON.stringify([...perMinute.values()])}`);
  assert.ok(limited > 0, `the quota of ${RPM} a minute was never met: ${responses.length} calls`);
  assert.equal(responses.length, answered + limited, `statuses: ${JSON.stringify(responses.map((r) => r.status))}`);
  assert.deepEqual(failures.map((err) => err.status), Array(limited).fill(429));
  assert.equal(pacers.reduce((n, pacer) => n + pacer.stats().rateLimited, 0), limited);
  assert.equal(events.filter((e) => e.type === "rateLimited" && e.providerId === PROVIDER_ID).length, limited);

  // Its headers are read as limits: every answer reports the whole windows (rpm and tpm)
  // and what is left of them, down to no request left once the quota was met.
  assert.equal(replyLimits.length, answered);
  for (const limits of replyLimits) {
    assert.equal(limits?.requestsLimit, RPM, JSON.stringify(limits));
    assert.equal(limits.tokensLimit, TPM, JSON.stringify(limits));
    assert.ok(limits.requestsRemaining >= 0 && limits.requestsRemaining < RPM, JSON.stringify(limits));
    assert.ok(limits.tokensRemaining > 0 && limits.tokensRemaining < TPM, JSON.stringify(limits));
  }
  assert.ok(replyLimits.some((limits) => limits.requestsRemaining === 0), "no answer reported the quota spent");
  // And the pacers hold them as the provider's windows.
  assert.ok(
    heldLimits.some((limits) => limits.requests?.whole === RPM && limits.tokens?.whole === TPM),
    `the pacers' snapshots never held the proxy's windows: ${JSON.stringify(heldLimits.slice(0, 5))}`,
  );
});
