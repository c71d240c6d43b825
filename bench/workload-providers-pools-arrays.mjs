// Workload "Providers, pools and arrays": each provider its own limits, several keys used
// as one, array batches for translation APIs and a character budget, in virtual time.
//
// (a) A fallback chain A → B → C whose providers allow 10, 15 and 30 requests a minute,
//     A's daily quota spent halfway through a page of 300 paragraphs: `providers` giving
//     each its own quota, beside one flow `rate` set to the slowest (and to the fastest).
// (b) A pool of 3 keys, each 15 requests a minute, 600 paragraphs, beside one key.
// (c) The same pool with one key's daily quota spent from the start.
// (d) 200 `llm: false` paragraphs to DeepL (the package's `deeplProvider` over a fetch that
//     speaks DeepL's wire format, 5 requests a second, 50 texts and 30,000 characters a
//     request): array batches beside one paragraph per call.
// (e) `charactersPerMinute` 20,000 against a service that answers 429 above 20,000
//     characters a minute, 100,000 characters, beside the defaults.
//
// Every row runs on every build given (this package, and the baseline of `--baseline
// DIR`); a build whose options refuse `providers` or `pools` (invalid_options) prints "not
// available in this build" in that row. Each run is deterministic: virtual time, and the
// pacer's random seed drawn from a seeded Math.random.

import { paragraphs, item, prng } from "./data.mjs";
import { table, fmt } from "./measure.mjs";
import { privateClock, follow, runUntil } from "./virtual-time.mjs";

const LATENCY_MS = 300;
const DAILY_RESET_MS = 6 * 3600_000;
const ITEMS_PER_CALL = 4; // the default batch: 4 paragraphs of 200 characters (800 ≤ 1,000)
const LIMIT_MS = 4 * 3600_000; // virtual time a run may take before it counts as stalled
const SEED = 44;

const yes = (ok) => (ok ? "met" : "not met");
const seconds = (ms) => (Number.isFinite(ms) ? fmt(ms / 1000, 1) : "–");
const times = (value) => (Number.isFinite(value) ? `${value.toFixed(2)}x` : "–");

/** An error as a provider's fetch wrapper throws it for an HTTP 429. */
const tooMany = (message, fields) => Object.assign(new Error(`HTTP 429: ${message}`), { status: 429, ...fields });

/** Settles `outcome` (`{ value } | { error }`) after `latencyMs` on `clock`. */
const answer = (clock, outcome, latencyMs = LATENCY_MS) =>
  new Promise((resolve, reject) =>
    clock.setTimeout(() => ("error" in outcome ? reject(outcome.error) : resolve(outcome.value)), latencyMs),
  );

/**
 * A continuously refilled budget holding `size` units, full at the start, refilled at
 * `size` per `periodMs`: `take(n)` takes n units and returns 0, or returns the exact wait
 * (ms) until n units are there and takes nothing.
 */
function budget(clock, size, periodMs) {
  let level = size;
  let at = clock.now;
  const perMs = size / periodMs;
  return (n) => {
    level = Math.min(size, level + (clock.now - at) * perMs);
    at = clock.now;
    // A millionth of a unit of slack: a call the pacer starts on the very millisecond the
    // unit is due is admitted whatever the float rounding.
    if (level >= n - 1e-6) {
      level -= n;
      return 0;
    }
    return (n - level) / perMs;
  };
}

/**
 * One key of an LLM provider: a strict quota of `perMinute` requests a minute (one every
 * 60/perMinute s, no burst: past it a 429 with the exact wait as `retryAfterMs`), and a
 * daily quota of `daily` answered requests (past it every call is a 429 with `quota:
 * "daily"` and a reset 6 h away; `daily: 0` is a key whose day is spent from the start).
 * A refused call counts against neither quota. It answers the echo of the call's text (a
 * faithful batch reply) after 300 ms.
 */
function keyMock(clock, { perMinute, daily = Infinity }) {
  const log = { calls: 0, answered: 0, items: 0, minute429: 0, daily429: 0 };
  const perMinuteBudget = budget(clock, 1, 60_000 / perMinute);
  const provider = (request) => {
    log.calls++;
    if (log.answered >= daily) {
      log.daily429++;
      return answer(clock, { error: tooMany("requests per day exhausted", { quota: "daily", retryAfterMs: DAILY_RESET_MS }) });
    }
    const waitMs = perMinuteBudget(1);
    if (waitMs > 0) {
      log.minute429++;
      return answer(clock, { error: tooMany("requests per minute", { retryAfterMs: Math.ceil(waitMs) }) });
    }
    log.answered++;
    log.items += request.texts.length;
    return answer(clock, { value: request.text });
  };
  return { provider, log };
}

/**
 * A translation service billed by character: at most `perMinute` characters (the texts'
 * String.length) a minute, a budget refilled continuously and full at the start; a call
 * past it is a 429 with the exact wait. It answers each text unchanged.
 */
function characterMock(clock, { perMinute }) {
  const log = { calls: 0, answered: 0, items: 0, minute429: 0, daily429: 0 };
  const characters = budget(clock, perMinute, 60_000);
  const provider = (request) => {
    log.calls++;
    const waitMs = characters(request.texts.reduce((sum, text) => sum + text.length, 0));
    if (waitMs > 0) {
      log.minute429++;
      return answer(clock, { error: tooMany("characters per minute", { retryAfterMs: Math.ceil(waitMs) }) });
    }
    log.answered++;
    log.items += request.texts.length;
    return answer(clock, { value: request.isBatch ? request.texts : request.text });
  };
  return { provider, log };
}

const DEEPL = { perSecond: 5, maxTexts: 50, maxCharacters: 30_000 };
const DEEPL_KEY = "00000000-0000-0000-0000-000000000000:fx";

/**
 * DeepL's `POST /v2/translate` as a `fetch` on virtual time, in DeepL's documented wire
 * format: JSON `{ text: [...], target_lang, source_lang? }` with `Authorization: DeepL-Auth-Key
 * <key>`, answered `{ translations: [{ detected_source_language, text }] }`. At most
 * `perSecond` requests a second (past it a 429 with Retry-After in whole seconds, as
 * HTTP carries it), `maxTexts` texts and `maxCharacters` characters a request (past them
 * a 413). A translation is the text prefixed with "[<target_lang>] ".
 */
function deeplFetch(clock) {
  const log = { calls: 0, answered: 0, items: 0, minute429: 0, daily429: 0, tooLarge: 0, malformed: 0 };
  const requests = budget(clock, 1, 1000 / DEEPL.perSecond);
  const reply = (status, body, headers = {}) =>
    answer(clock, {
      value: new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } }),
    });
  const fetch = (url, init) => {
    log.calls++;
    let body;
    try {
      body = JSON.parse(init.body);
    } catch {
      body = undefined;
    }
    const headers = new Headers(init.headers);
    const wellFormed =
      url === "https://api-free.deepl.com/v2/translate" &&
      init.method === "POST" &&
      headers.get("authorization") === `DeepL-Auth-Key ${DEEPL_KEY}` &&
      Array.isArray(body?.text) &&
      body.text.every((t) => typeof t === "string") &&
      typeof body.target_lang === "string";
    if (!wellFormed) {
      log.malformed++;
      return reply(400, { message: "Bad request" });
    }
    const characters = body.text.reduce((sum, text) => sum + text.length, 0);
    if (body.text.length > DEEPL.maxTexts || characters > DEEPL.maxCharacters) {
      log.tooLarge++;
      return reply(413, { message: "Request Entity Too Large" });
    }
    const waitMs = requests(1);
    if (waitMs > 0) {
      log.minute429++;
      return reply(429, { message: "Too many requests" }, { "retry-after": String(Math.ceil(waitMs / 1000)) });
    }
    log.answered++;
    log.items += body.text.length;
    const translations = body.text.map((text) => ({ detected_source_language: "EN", text: `[${body.target_lang}] ${text}` }));
    return reply(200, { translations });
  };
  return { fetch, log };
}

/**
 * One run: `setup(clock)` returns `{ provider, logs }` (logs: the mocks' logs by provider
 * id); `items` are submitted at once; `expected(text)` is the right translation of a
 * paragraph. A build that refuses `options` (invalid_options) gives `{ available: false }`.
 */
async function simulate(build, { options, setup, items, expected }) {
  const random = Math.random;
  Math.random = prng(SEED); // the pacer draws its seed (backoff jitter) from it
  const { clock, pacerClock } = privateClock();
  try {
    const { provider, logs } = setup(clock);
    let pacer;
    try {
      pacer = new build.BatchPacer(provider, { ...options, clock: pacerClock });
    } catch (error) {
      if (error?.code === "invalid_options") return { available: false, message: error.message };
      throw error;
    }
    let misplaced = 0;
    const promises = items.map((it) =>
      pacer.translate(it).then((translation) => {
        // The pacer trims a translation's outer white space (a paragraph of 200 characters
        // may end in a space): only a text other than its own counts.
        if (translation.trim() !== expected(it.text).trim()) misplaced++;
      }),
    );
    const state = follow(clock, promises);
    let stalled = false;
    try {
      await runUntil(clock, () => state.pending === 0, { stepMs: 1000, limitMs: LIMIT_MS });
    } catch {
      stalled = true;
    }
    pacer.dispose();
    await Promise.allSettled(promises);
    const all = Object.values(logs);
    const sum = (key) => all.reduce((total, log) => total + log[key], 0);
    return {
      available: true,
      completedMs: stalled ? NaN : state.completedAt,
      stalled,
      failed: state.failed,
      misplaced,
      calls: sum("calls"),
      minute429: sum("minute429"),
      daily429: sum("daily429"),
      byProvider: Object.fromEntries(Object.entries(logs).map(([id, log]) => [id, log.calls])),
    };
  } finally {
    Math.random = random;
  }
}

/** A pacer over the mocks `mocks` (id → { provider, log }), joined by routeProviders. */
const routed = (routeProviders, mocks) => ({
  provider: routeProviders(Object.fromEntries(Object.entries(mocks).map(([id, m]) => [id, m.provider]))),
  logs: Object.fromEntries(Object.entries(mocks).map(([id, m]) => [id, m.log])),
});

const perMinuteSettings = (perMinute) => ({ rate: perMinute / 60, capacity: 1 });

/** The section (Markdown). `builds`: this package first, then the baseline if any. */
export async function providersPoolsArrays({ builds, smoke = false, number = 15, command }) {
  const [own] = builds;
  // Rows by name, each with one line per build in build order (a run's builds side by side).
  const rowsByName = new Map();
  const add = (cells) => rowsByName.set(cells[0], [...(rowsByName.get(cells[0]) ?? []), cells]);
  const refused = new Map(); // build name → the invalid_options messages it gave
  // A build older than an export gets this package's: the provider is a function of the
  // request, and the pacer is what each row measures.
  const borrowed = builds.slice(1).flatMap((build) =>
    ["routeProviders", "deeplProvider"].filter((name) => typeof build[name] !== "function").map((name) => `${build.name} exports no ${name}: its rows use this package's.`),
  );
  const sizes = smoke
    ? { chain: 40, pool: 48, deepl: 60, characters: 150 }
    : { chain: 300, pool: 600, deepl: 200, characters: 500 };

  /** A row for `result`, or the row that says the build lacks the option. */
  const row = (name, build, result, columns) => {
    if (!result.available) {
      refused.set(build.name, new Set([...(refused.get(build.name) ?? []), result.message]));
      return [name, build.name, "–", "–", "–", "–", "–", "–", "–", "not available in this build"];
    }
    const failed = result.stalled ? `${result.failed} (stalled: unsettled after ${LIMIT_MS / 3600_000} h)` : result.failed;
    return [name, build.name, failed, result.misplaced, result.calls, `${result.minute429} / ${result.daily429}`, ...columns(result)];
  };
  const perProvider = (result) => Object.entries(result.byProvider).map(([id, calls]) => `${id} ${calls}`).join(", ");

  // (a) the chain A → B → C.
  const chainTexts = paragraphs(sizes.chain);
  const quotas = { A: 10, B: 15, C: 30 };
  const halfway = Math.ceil(sizes.chain / 2 / ITEMS_PER_CALL); // A's daily quota, in requests
  const callsB = Math.ceil((sizes.chain - halfway * ITEMS_PER_CALL) / ITEMS_PER_CALL);
  // A serves `halfway` calls at its quota (the first at 0); the next call, at A's next
  // slot, meets the daily 429 (answered after one latency); from then on B serves the rest
  // at its quota (its bucket full), the last answered one latency after it starts. C is
  // reached only when B cannot serve, which it always can here.
  const chainBoundMs =
    halfway * (60_000 / quotas.A) + LATENCY_MS + (callsB - 1) * (60_000 / quotas.B) + LATENCY_MS;
  const chain = { fallbackProviders: { A: "B", B: "C" } };
  const chainRuns = [
    { name: "a1. chain A → B → C, providers: each its own quota", options: { ...chain, providers: { A: perMinuteSettings(quotas.A), B: perMinuteSettings(quotas.B), C: perMinuteSettings(quotas.C) } }, target: true },
    { name: `a2. chain A → B → C, one flow rate, the slowest (${quotas.A}/min)`, options: { ...chain, ...perMinuteSettings(quotas.A) } },
    { name: `a3. chain A → B → C, one flow rate, the fastest (${quotas.C}/min)`, options: { ...chain, ...perMinuteSettings(quotas.C) } },
  ];
  for (const run of chainRuns) {
    for (const build of builds) {
      const routeProviders = build.routeProviders ?? own.routeProviders;
      const result = await simulate(build, {
        options: run.options,
        setup: (clock) =>
          routed(routeProviders, {
            A: keyMock(clock, { perMinute: quotas.A, daily: halfway }),
            B: keyMock(clock, { perMinute: quotas.B }),
            C: keyMock(clock, { perMinute: quotas.C }),
          }),
        items: chainTexts.map((text) => item(text, "de", { providerId: "A" })),
        expected: (text) => text,
      });
      add(
        row(run.name, build, result, (r) => {
          const vs = r.completedMs / chainBoundMs;
          const target = run.target
            ? `0 failed ${yes(r.failed === 0 && !r.stalled)}; no 429 but A's daily ${yes(r.minute429 === 0)}; ≤ 1.1x the bound ${yes(vs <= 1.1)}`
            : "– (beside a1)";
          return [perProvider(r), seconds(r.completedMs), `${times(vs)} the bound (${seconds(chainBoundMs)} s)`, target];
        }),
      );
    }
  }

  // (b), (c) a pool of 3 keys beside one key.
  const poolTexts = paragraphs(sizes.pool);
  const KEY_QUOTA = 15;
  const members = ["k1", "k2", "k3"];
  const poolOptions = {
    pools: { gemini: members },
    providers: Object.fromEntries(members.map((id) => [id, perMinuteSettings(KEY_QUOTA)])),
  };
  const poolItems = (providerId) => poolTexts.map((text) => item(text, "de", { providerId }));
  const keyMocks = (clock, blockedFirst) =>
    Object.fromEntries(members.map((id, i) => [id, keyMock(clock, { perMinute: KEY_QUOTA, daily: blockedFirst && i === 0 ? 0 : Infinity })]));
  for (const build of builds) {
    const routeProviders = build.routeProviders ?? own.routeProviders;
    const oneKey = await simulate(build, {
      options: perMinuteSettings(KEY_QUOTA),
      setup: (clock) => routed(routeProviders, { k1: keyMock(clock, { perMinute: KEY_QUOTA }) }),
      items: poolItems("k1"),
      expected: (text) => text,
    });
    add(row(`b0. one key, ${KEY_QUOTA}/min (flow rate ${KEY_QUOTA}/min, capacity 1)`, build, oneKey, (r) => [perProvider(r), seconds(r.completedMs), "1.00x (baseline of b, c)", "–"]));
    const faster = (r) => oneKey.completedMs / r.completedMs;
    const pool = await simulate(build, {
      options: poolOptions,
      setup: (clock) => routed(routeProviders, keyMocks(clock, false)),
      items: poolItems("gemini"),
      expected: (text) => text,
    });
    add(
      row(`b. pool of 3 keys, ${KEY_QUOTA}/min each`, build, pool, (r) => {
        const calls = members.map((id) => r.byProvider[id]);
        const even = Math.max(...calls) <= 1.1 * Math.min(...calls);
        return [
          perProvider(r), seconds(r.completedMs), `${times(faster(r))} faster than b0`,
          `≥ 2.8x faster ${yes(faster(r) >= 2.8)}; 0 × 429 ${yes(r.minute429 + r.daily429 === 0)}; calls per key within 10% ${yes(even)}`,
        ];
      }),
    );
    const blocked = await simulate(build, {
      options: poolOptions,
      setup: (clock) => routed(routeProviders, keyMocks(clock, true)),
      items: poolItems("gemini"),
      expected: (text) => text,
    });
    add(
      row("c. the same pool, k1's daily quota spent at the start", build, blocked, (r) => [
        perProvider(r), seconds(r.completedMs), `${times(faster(r))} faster than b0`,
        `0 failed ${yes(r.failed === 0 && !r.stalled)}; ≥ 1.9x faster ${yes(faster(r) >= 1.9)}`,
      ]),
    );
  }

  // (d) DeepL: array batches beside one paragraph per call.
  const deeplTexts = paragraphs(sizes.deepl);
  const deeplRuns = [
    { name: "d0. DeepL, one paragraph per call (flow rate 5/s, capacity 1)", options: { rate: DEEPL.perSecond, capacity: 1 } },
    {
      name: "d. DeepL, array batches (providers.deepl batch \"array\", 50 texts, 30,000 characters)",
      options: {
        rate: DEEPL.perSecond,
        capacity: 1,
        providers: { deepl: { batch: "array", maxItemsPerBatch: DEEPL.maxTexts, maxCharactersPerBatch: DEEPL.maxCharacters } },
      },
    },
  ];
  for (const build of builds) {
    const deeplProvider = build.deeplProvider ?? own.deeplProvider;
    const results = [];
    for (const run of deeplRuns) {
      results.push(
        await simulate(build, {
          options: run.options,
          setup: (clock) => {
            const server = deeplFetch(clock);
            return { provider: deeplProvider({ apiKey: DEEPL_KEY, fetch: server.fetch }), logs: { deepl: server.log } };
          },
          items: deeplTexts.map((text) => item(text, "de", { providerId: "deepl", llm: false })),
          expected: (text) => `[DE] ${text}`,
        }),
      );
    }
    const [perCall, array] = results;
    add(row(deeplRuns[0].name, build, perCall, (r) => [perProvider(r), seconds(r.completedMs), "1.00x (baseline of d)", "–"]));
    add(
      row(deeplRuns[1].name, build, array, (r) => {
        const share = r.completedMs / perCall.completedMs;
        return [
          perProvider(r), seconds(r.completedMs), `${times(share)} the time of d0 (1/${fmt(1 / share, 0)})`,
          `calls ≤ 5 ${yes(r.calls <= 5)}; time ≤ 1/20 of d0 ${yes(share <= 1 / 20)}`,
        ];
      }),
    );
  }

  // (e) a character budget.
  const CHARACTERS_PER_MINUTE = 20_000;
  const characterTexts = paragraphs(sizes.characters);
  const totalCharacters = characterTexts.reduce((sum, text) => sum + text.length, 0);
  // The service admits its first minute's worth at once, then refills at its rate: the
  // last call can start once the refill covers the rest, and is answered one latency later.
  const characterBoundMs = (Math.max(0, totalCharacters - CHARACTERS_PER_MINUTE) / CHARACTERS_PER_MINUTE) * 60_000 + LATENCY_MS;
  const characterRuns = [
    { name: "e0. translation API billed by character, the defaults", options: {} },
    { name: `e. the same, providers.translator charactersPerMinute ${fmt(CHARACTERS_PER_MINUTE)}`, options: { providers: { translator: { charactersPerMinute: CHARACTERS_PER_MINUTE } } }, target: true },
  ];
  for (const run of characterRuns) {
    for (const build of builds) {
      const result = await simulate(build, {
        options: run.options,
        setup: (clock) => {
          const server = characterMock(clock, { perMinute: CHARACTERS_PER_MINUTE });
          return { provider: server.provider, logs: { translator: server.log } };
        },
        items: characterTexts.map((text) => item(text, "de", { providerId: "translator", llm: false })),
        expected: (text) => text,
      });
      add(
        row(run.name, build, result, (r) => {
          const vs = r.completedMs / characterBoundMs;
          const target = run.target ? `0 × 429 ${yes(r.minute429 === 0)}; ≤ 1.05x the bound ${yes(vs <= 1.05)}` : "– (beside e)";
          return [perProvider(r), seconds(r.completedMs), `${times(vs)} the bound (${seconds(characterBoundMs)} s)`, target];
        }),
      );
    }
  }

  const notes = [
    `Virtual time; every paragraph (200 characters, distinct) is submitted at once; each mock answers ${LATENCY_MS} ms after the call reaches it, and a refused call counts against none of its quotas. "429s": per-minute (or per-second) ones / daily ones, as the mocks counted them. "misplaced": paragraphs that resolved with a text other than their own translation. "calls per provider": every call that reached each provider, refused ones included. "last paragraph": the virtual time at which the last paragraph settled. Rows that a build refuses (invalid_options: it lacks \`providers\` or \`pools\`) say "not available in this build".`,
    `a: ${sizes.chain} paragraphs for providerId "A", fallbackProviders { A: "B", B: "C" }, default batching (4 paragraphs a call). A, B and C allow ${quotas.A}, ${quotas.B} and ${quotas.C} requests a minute (strict: one every ${60 / quotas.A}, ${60 / quotas.B} and ${60 / quotas.C} s, no burst; past it a 429 with the exact wait as retryAfterMs); A also allows ${halfway} requests a day (half the page), past them a 429 with quota "daily" and retryAfterMs 6 h. a1: providers { A, B, C: rate = the quota, capacity 1 }, the flow at its defaults; a2, a3: one flow rate (capacity 1), no providers. The chain's combined bound: A's ${halfway} calls at its quota from 0, the call at A's next slot (${seconds(halfway * (60_000 / quotas.A))} s) meets the daily 429 (+${LATENCY_MS} ms), then B's ${callsB} calls for the rest at B's quota (its bucket full) and one latency: ${halfway} × ${60 / quotas.A} s + ${LATENCY_MS / 1000} s + (${callsB} − 1) × ${60 / quotas.B} s + ${LATENCY_MS / 1000} s = ${seconds(chainBoundMs)} s. Under "Fallback providers" items move only when A cannot serve, so nothing reaches B earlier; C is reached only when B cannot serve. Target (a1): 0 failed, no 429 but A's daily ones, last paragraph ≤ 1.1x the bound.`,
    `b, c: ${sizes.pool} paragraphs; each key allows ${KEY_QUOTA} requests a minute (strict, as in a). b0: one key, flow rate ${KEY_QUOTA}/min, capacity 1. b: pools { gemini: [k1, k2, k3] }, providers { k1, k2, k3: rate ${KEY_QUOTA}/min, capacity 1 }, items for "gemini", routeProviders({ k1, k2, k3 }). c: the same with k1 answering every call 429 quota "daily" (retryAfterMs 6 h) from the start. Targets: b ≥ 2.8x faster than b0, 0 × 429, calls per key within 10% of each other (most ≤ 1.1 × fewest); c 0 failed and ≥ 1.9x faster than b0.`,
    `d: ${sizes.deepl} paragraphs with llm: false for providerId "deepl" through the package's deeplProvider({ apiKey, fetch }) (the key's ":fx" suffix: the free host); the fetch plays DeepL's POST /v2/translate on virtual time: it checks the URL, the method, the Authorization header and the JSON body ({ text: [...], target_lang }), allows ${DEEPL.perSecond} requests a second (past it a 429 with Retry-After in whole seconds), ${DEEPL.maxTexts} texts and ${fmt(DEEPL.maxCharacters)} characters a request (past them a 413), and answers { translations: [{ detected_source_language, text }] }. Both runs: flow rate ${DEEPL.perSecond}/s, capacity 1. Targets (d): calls ≤ 5 (d0 makes one per paragraph), time ≤ 1/20 of d0's.`,
    `e: ${sizes.characters} paragraphs (${fmt(totalCharacters)} characters) with llm: false for providerId "translator" (one per call, no array batches); the service allows ${fmt(CHARACTERS_PER_MINUTE)} characters (the texts' String.length) a minute, a budget full at the start and refilled continuously, past it a 429 with the exact wait. The bound: the first minute's worth at once, the rest at the refill rate, + one latency: (${fmt(totalCharacters)} − ${fmt(CHARACTERS_PER_MINUTE)}) ÷ ${fmt(CHARACTERS_PER_MINUTE)} × 60 s + ${LATENCY_MS / 1000} s = ${seconds(characterBoundMs)} s. e0: the defaults (no character budget; the 429s and their retries as they come). Target (e): 0 × 429, ≤ 1.05x the bound.`,
    ...borrowed,
    ...[...refused].map(([name, messages]) => `${name} refused the options of the rows marked "not available": ${[...messages].map((m) => `\`${m}\``).join("; ")}.`),
    `One run each (deterministic: virtual time, the pacer's seed drawn from a Math.random seeded with ${SEED}); a run still unsettled after ${LIMIT_MS / 3600_000} h of virtual time counts as stalled. Command: \`${command}\`.`,
  ];
  return table({
    title: `${number}. Providers, pools and arrays: per-provider limits on a fallback chain, a pool of keys, DeepL array batches, a character budget (virtual time)`,
    columns: ["row", "build", "failed", "misplaced", "calls", "429s (minute / daily)", "calls per provider", "last paragraph (s)", "vs", "target"],
    rows: [...rowsByName.values()].flat(),
    textColumns: 2,
    notes,
  });
}
