// The demo article (extension-demo/demo-page/), its server (extension-demo/demo-server.mjs)
// and the content script (extension-demo/content.js) in a real headless Chromium, without
// an extension: a fake `chrome.runtime.connect`, installed before the page's scripts run,
// plays the background. It answers every item with "«" + its text + "»" after a short
// random delay, records every message, and can fail items, answer twice, refuse
// connections and drop every port (a stopped service worker).
//
// Run: BATCH_PACER_REPO=$PWD node --test tests/node/demo-page.test.mjs
// (BATCH_PACER_REPO is optional when run from the repository.)

import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { launchChromium, playwright } from "./chromium.mjs";
import { skipIfMissing } from "./requirements.mjs";

const repo = path.resolve(process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url)));
const { startDemoServer } = await import(pathToFileURL(repo + "/extension-demo/demo-server.mjs").href);
const CONTENT_JS = readFileSync(path.join(repo, "extension-demo/content.js"), "utf8");

const browserSkip = skipIfMissing(
  !playwright
    ? "playwright-core is not installed here nor in the repository"
    : !existsSync("/usr/bin/chromium")
      ? "/usr/bin/chromium is missing"
      : false,
);

const CUE_COUNT = 40;
const PORT_NAME = "batch-pacer-translate";

/** GET (or another method) with the path sent verbatim (no URL normalisation). */
function rawRequest(port, requestPath, method = "GET") {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: requestPath, method }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------
// The server.

describe("demo server", () => {
  let server;
  before(async () => {
    server = await startDemoServer({ port: 0 });
  });
  after(() => server?.close());

  test("listens on 127.0.0.1 and reports its url and port", () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.equal(server.url, `http://127.0.0.1:${server.port}/`);
    assert.ok(server.port > 0);
  });

  test("serves index.html (also at /) and subtitles.js with their content types", async () => {
    const root = await rawRequest(server.port, "/");
    assert.equal(root.status, 200);
    assert.equal(root.headers["content-type"], "text/html; charset=utf-8");
    assert.match(root.body, /<div id="bp-subtitles"/);
    assert.match(root.body, /<script src="subtitles\.js"><\/script>/);
    const index = await rawRequest(server.port, "/index.html?x=1");
    assert.equal(index.status, 200);
    assert.equal(index.body, root.body);
    const script = await rawRequest(server.port, "/subtitles.js");
    assert.equal(script.status, 200);
    assert.equal(script.headers["content-type"], "text/javascript; charset=utf-8");
    assert.equal(script.headers["content-length"], String(Buffer.byteLength(script.body)));
    assert.match(script.body, /bp-subtitles/);
    const head = await rawRequest(server.port, "/index.html", "HEAD");
    assert.equal(head.status, 200);
    assert.equal(head.body, "");
  });

  test("refuses directory traversal and unknown files with 404, other methods with 405", async () => {
    for (const p of [
      "/../package.json",
      "/../../package.json",
      "/%2e%2e/package.json",
      "/..%2fdemo-server.mjs",
      "/%2E%2E%2F%2E%2E%2Fpackage.json",
      "/..\\demo-server.mjs",
      "/%00index.html",
      "/%E0%A4%A",
      "/missing.html",
      "/.hidden",
    ]) {
      const response = await rawRequest(server.port, p);
      assert.equal(response.status, 404, p);
      assert.doesNotMatch(response.body, /batch-pacer|startDemoServer/, p);
    }
    const post = await rawRequest(server.port, "/index.html", "POST");
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, "GET, HEAD");
  });
});

// ---------------------------------------------------------------------------------------
// The content script in Chromium.

/**
 * Runs in the page before its own scripts (page.addInitScript): the fake extension API
 * the content script finds as `chrome`, and a recorder of cue arrival times.
 * config: { hold, delayMs: [min, max], failIds, twiceIds, unknownAnswers, previews,
 *           disconnectAfterPageAnswers, refuseAfterDisconnect, invalidateAfterPageAnswers }
 * `previews`: before each answer, a "partial" message with the first half of the
 * translation (its element is recorded in log.previewSeen), and after it a late one.
 * "Invalidate" plays an extension reload in Chromium: every port drops, runtime.id
 * becomes undefined and connect throws, until revive().
 */
function installFakeExtension(config) {
  const [minDelay, maxDelay] = config.delayMs ?? [1, 12];
  const log = {
    messages: [], // { port, at, msg }
    ports: [], // { name, at, refused, closedBy }
    answered: [], // ids answered, in order
    atDisconnect: null, // { port: first port index after the drop, answered: [...] }
    atInvalidate: null, // { port: first port index after it, answered: [...] }
    connectsWhileInvalid: 0,
    cueAt: {}, // data-cue -> time it appeared
    cueTranslatedAt: {}, // data-cue -> time its translation appeared
    previewSeen: {}, // id -> the item's translation element right after its preview
  };
  const open = new Set();
  const held = [];
  const fake = {
    log,
    hold: Boolean(config.hold),
    refuseNext: 0,
    release() {
      fake.hold = false;
      for (const run of held.splice(0)) run();
    },
    dropAll() {
      for (const port of [...open]) port.dropByBackground();
    },
    invalid: false,
    revive() {
      fake.invalid = false;
      globalThis.chrome.runtime.id = "fake-extension-id";
    },
  };
  globalThis.__fakeExt = fake;

  function event() {
    const listeners = [];
    return {
      addListener: (fn) => listeners.push(fn),
      removeListener: (fn) => listeners.includes(fn) && listeners.splice(listeners.indexOf(fn), 1),
      hasListener: (fn) => listeners.includes(fn),
      fire: (...args) => listeners.slice().forEach((fn) => fn(...args)),
    };
  }

  let pageAnswers = 0;
  function schedule(port, flow, item) {
    const translation = `«${item.text}»`;
    const partial = translation.slice(0, Math.ceil(translation.length / 2));
    const preview = () => {
      if (!port.connected) return;
      port.onMessage.fire({ type: "partial", id: item.id, text: partial }, port);
      const out = document.querySelector(`.bp-translation[data-bp-for="${item.id}"]`);
      log.previewSeen[item.id] = out && {
        className: out.className,
        text: out.textContent,
        fontStyle: getComputedStyle(out).fontStyle,
        sent: partial,
      };
    };
    const deliver = () => {
      if (!port.connected) return; // the background was stopped: the answer is lost
      if (config.previews) preview();
      const failed = config.failIds?.includes(item.id);
      port.onMessage.fire(
        failed
          ? { type: "failed", id: item.id, code: "provider_error", message: "HTTP 400" }
          : { type: "translated", id: item.id, translation },
        port,
      );
      log.answered.push(item.id);
      // A preview that comes after the answer (a late stream value) changes nothing.
      if (config.previews) port.onMessage.fire({ type: "partial", id: item.id, text: "a late preview" }, port);
      if (config.twiceIds?.includes(item.id)) {
        port.onMessage.fire({ type: "translated", id: item.id, translation: "a second answer" }, port);
        port.onMessage.fire({ type: "failed", id: item.id, code: "timeout", message: "late" }, port);
      }
      if (config.unknownAnswers) {
        port.onMessage.fire({ type: "translated", id: `${item.id}-unknown`, translation: "stray" }, port);
        port.onMessage.fire({ type: "progress", id: item.id }, port);
        port.onMessage.fire(null, port);
      }
      if (flow === "page" && ++pageAnswers === config.disconnectAfterPageAnswers) {
        log.atDisconnect = { port: log.ports.length, answered: log.answered.slice() };
        fake.refuseNext = config.refuseAfterDisconnect ?? 0;
        fake.dropAll();
      }
      if (flow === "page" && pageAnswers === config.invalidateAfterPageAnswers) {
        log.atInvalidate = { port: log.ports.length, answered: log.answered.slice() };
        fake.invalid = true;
        globalThis.chrome.runtime.id = undefined;
        fake.dropAll();
      }
    };
    const run = () => setTimeout(deliver, minDelay + Math.random() * (maxDelay - minDelay));
    if (fake.hold) held.push(run);
    else run();
  }

  globalThis.chrome = {
    runtime: {
      id: "fake-extension-id",
      lastError: undefined,
      connect(info = {}) {
        if (fake.invalid) {
          log.connectsWhileInvalid++;
          throw new Error("Extension context invalidated.");
        }
        const index = log.ports.length;
        const record = { name: info.name, at: performance.now(), refused: false, closedBy: null };
        log.ports.push(record);
        const port = {
          name: info.name,
          connected: true,
          onMessage: event(),
          onDisconnect: event(),
          postMessage(message) {
            if (!port.connected) throw new Error("Attempting to use a disconnected port object");
            const msg = JSON.parse(JSON.stringify(message));
            log.messages.push({ port: index, at: performance.now(), msg });
            for (const item of msg.items ?? []) schedule(port, msg.flow, item);
          },
          disconnect() {
            if (!port.connected) return;
            port.connected = false;
            open.delete(port);
            record.closedBy = "content";
          },
          dropByBackground() {
            if (!port.connected) return;
            port.connected = false;
            open.delete(port);
            record.closedBy = "background";
            setTimeout(() => port.onDisconnect.fire(port), 0);
          },
        };
        open.add(port);
        if (fake.refuseNext > 0) {
          fake.refuseNext--;
          record.refused = true;
          port.dropByBackground(); // no background listening yet
        }
        return port;
      },
    },
  };

  // Cue arrival and translation times, observed by the page itself.
  document.addEventListener("DOMContentLoaded", () => {
    const box = document.getElementById("bp-subtitles");
    if (!box) return;
    new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node.nodeType !== 1) continue;
          if (node.matches(".cue")) log.cueAt[node.dataset.cue] = performance.now();
          if (node.matches(".bp-translation")) {
            const cue = node.closest(".cue");
            if (cue) log.cueTranslatedAt[cue.dataset.cue] = performance.now();
          }
        }
      }
    }).observe(box, { childList: true, subtree: true });
  });
}

/** Everything the assertions need, read from the page. */
function readPage() {
  const BLOCKS = "p,h1,h2,h3,h4,h5,h6,li,blockquote,figcaption,td,th,dt,dd";
  const INSIDE = ["LI", "TD", "TH", "DT", "DD"];
  const root = document.documentElement;
  const attrs = {};
  for (const name of [
    "data-bp-page-total",
    "data-bp-page-done",
    "data-bp-subtitles-total",
    "data-bp-subtitles-done",
    "data-bp-failed",
    "data-bp-reconnects",
    "data-bp-previews",
    "data-bp-page-first-ms",
    "data-bp-page-mean-ms",
  ]) {
    attrs[name] = root.getAttribute(name);
  }
  const expectedBlocks = [...document.body.querySelectorAll(BLOCKS)]
    .filter((el) => !el.closest("pre,code,script,style,#bp-subtitles,.bp-translation"))
    .filter((el) => !el.querySelector(BLOCKS))
    .filter((el) => /\S/.test(el.textContent));
  const describeOut = (el, id) => {
    const outs = [...document.querySelectorAll(".bp-translation")].filter((n) => n.getAttribute("data-bp-for") === id);
    const out = outs[0];
    const inside = el.classList.contains("cue") || INSIDE.includes(el.tagName);
    return {
      count: outs.length,
      text: out?.textContent,
      className: out?.className,
      tag: out?.tagName,
      lang: out?.getAttribute("lang"),
      display: out ? getComputedStyle(out).display : null,
      placedRight: Boolean(out) && (inside ? el.lastElementChild === out : el.nextElementSibling === out),
    };
  };
  const items = [...document.querySelectorAll("[data-bp-id]")].map((el) => ({
    id: el.getAttribute("data-bp-id"),
    tag: el.tagName,
    isCue: el.classList.contains("cue"),
    cue: el.dataset.cue ?? null,
    cueText: el.classList.contains("cue") ? el.firstChild?.nodeValue : null,
    expected: expectedBlocks.includes(el),
    out: describeOut(el, el.getAttribute("data-bp-id")),
  }));
  return {
    attrs,
    items,
    expectedCount: expectedBlocks.length,
    translationNodes: document.querySelectorAll(".bp-translation").length,
    cueCount: document.querySelectorAll("#bp-subtitles .cue").length,
    cuesDone: root.dataset.cuesDone ?? null,
    insideSkipped: document.querySelectorAll("pre [data-bp-id], code [data-bp-id], pre[data-bp-id], code[data-bp-id]").length,
    log: globalThis.__fakeExt.log,
    title: document.title,
  };
}

/** Own texts of the page blocks, read before any translation is in the page. */
function readOwnTexts() {
  const texts = {};
  for (const el of document.querySelectorAll("[data-bp-id]")) texts[el.getAttribute("data-bp-id")] = el.innerText.trim();
  return texts;
}

/** The same, once translations are in: those inside a block are hidden while reading. */
function readOwnTextsAfter() {
  const texts = {};
  for (const el of document.querySelectorAll("[data-bp-id^='p']")) {
    const out = [...el.querySelectorAll(".bp-translation")];
    for (const node of out) node.style.setProperty("display", "none", "important");
    texts[el.getAttribute("data-bp-id")] = el.innerText.trim();
    for (const node of out) node.style.setProperty("display", "block", "important");
  }
  return texts;
}

/** Ids of the tagged page blocks intersecting the viewport now. */
function visibleIds() {
  return [...document.querySelectorAll("[data-bp-id^='p']")]
    .filter((el) => {
      const r = el.getBoundingClientRect();
      return r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
    })
    .map((el) => el.getAttribute("data-bp-id"));
}

const allDone = () => {
  const root = document.documentElement;
  const get = (name) => root.getAttribute(name);
  return (
    root.dataset.cuesDone === "40" &&
    get("data-bp-page-total") !== null &&
    Number(get("data-bp-page-total")) > 0 &&
    get("data-bp-page-done") === get("data-bp-page-total") &&
    get("data-bp-subtitles-total") === "40" &&
    get("data-bp-subtitles-done") === "40"
  );
};

/** Page translate messages, flattened to their items, with the message's port index. */
function sentItems(log, flow) {
  return log.messages
    .filter((m) => m.msg.flow === flow)
    .flatMap((m, messageIndex) => m.msg.items.map((item) => ({ ...item, port: m.port, at: m.at, messageIndex })));
}

/** Every item answered once, with its own text, placed under its own element. */
function assertEveryItemTranslatedOnce(state, ownTexts, { failIds = [] } = {}) {
  const pageItems = state.items.filter((i) => !i.isCue);
  const cues = state.items.filter((i) => i.isCue);
  assert.equal(pageItems.length, state.expectedCount, "every translatable block is an item");
  assert.ok(pageItems.every((i) => i.expected), "no item outside the translatable blocks");
  assert.equal(state.insideSkipped, 0, "nothing in pre/code is an item");
  assert.equal(cues.length, CUE_COUNT);
  assert.equal(state.translationNodes, pageItems.length + cues.length, "one translation node per item, no more");
  const firstText = new Map();
  for (const m of state.log.messages) for (const item of m.msg.items) if (!firstText.has(item.id)) firstText.set(item.id, item.text);
  for (const item of state.items) {
    const own = item.isCue ? item.cueText : ownTexts[item.id];
    assert.equal(typeof own, "string", `${item.id} has its own text`);
    assert.equal(firstText.get(item.id), own, `${item.id} was sent with its own text`);
    assert.equal(item.out.count, 1, `${item.id} is shown once`);
    assert.ok(item.out.placedRight, `${item.id}'s translation sits right under it`);
    assert.equal(item.out.lang, "de");
    assert.equal(item.out.display, "block");
    assert.equal(item.out.tag, item.isCue || ["LI", "TD", "TH", "DT", "DD"].includes(item.tag) ? "SPAN" : "DIV");
    if (failIds.includes(item.id)) {
      assert.equal(item.out.className, "bp-translation bp-failed");
      assert.equal(item.out.text, "⚠ not translated (provider_error): HTTP 400");
    } else {
      assert.equal(item.out.className, "bp-translation");
      assert.equal(item.out.text, `«${own}»`, `${item.id} shows its own translation`);
    }
  }
}

describe("content script on the demo page", { skip: browserSkip }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startDemoServer({ port: 0 });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A fresh page of the demo with the fake extension; content.js not yet injected. */
  async function open(t, { query = "", fake = {} } = {}) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    t.after(() => context.close());
    const page = await context.newPage();
    const console = [];
    page.on("console", (message) => console.push(`${message.type()}: ${message.text()}`));
    page.on("pageerror", (error) => console.push(`pageerror: ${error}`));
    await page.addInitScript(installFakeExtension, fake);
    await page.goto(`${server.url}index.html${query}`, { waitUntil: "load" });
    const inject = () => page.addScriptTag({ content: CONTENT_JS });
    return { page, console, inject };
  }

  test("translates every block and cue once, visible blocks first, with progress on <html>", async (t) => {
    const { page, console, inject } = await open(t, { query: "?cueInterval=80", fake: { hold: true } });
    await inject();
    await page.waitForFunction(() => globalThis.__fakeExt.log.messages.some((m) => m.msg.flow === "page"));
    // Nothing answered yet: the layout is still the one the script measured.
    const ownTexts = await page.evaluate(readOwnTexts);
    const visible = await page.evaluate(visibleIds);
    const early = await page.evaluate(() => ({
      total: document.documentElement.getAttribute("data-bp-page-total"),
      done: document.documentElement.getAttribute("data-bp-page-done"),
      failed: document.documentElement.getAttribute("data-bp-failed"),
    }));
    await page.evaluate(() => globalThis.__fakeExt.release());
    await page.waitForFunction(allDone, null, { timeout: 15_000, polling: 50 });
    const state = await page.evaluate(readPage);

    // Progress.
    const pageIds = state.items.filter((i) => !i.isCue).map((i) => i.id);
    assert.ok(pageIds.length >= 55 && pageIds.length <= 75, `about 60 blocks (got ${pageIds.length})`);
    assert.deepEqual(early, { total: String(pageIds.length), done: "0", failed: "0" });
    assert.equal(state.attrs["data-bp-page-total"], String(pageIds.length));
    assert.equal(state.attrs["data-bp-page-done"], String(pageIds.length));
    assert.equal(state.attrs["data-bp-subtitles-total"], "40");
    assert.equal(state.attrs["data-bp-subtitles-done"], "40");
    assert.equal(state.attrs["data-bp-failed"], "0");
    assert.equal(state.attrs["data-bp-reconnects"], "0");
    assert.deepEqual(pageIds, pageIds.map((_, i) => `p${i}`), "ids p0, p1, ... in document order");

    assertEveryItemTranslatedOnce(state, ownTexts);

    // The tricky texts.
    const byText = (pattern) => Object.entries(ownTexts).filter(([, text]) => pattern.test(text));
    const [percentBlock] = byText(/^Inventory export/);
    assert.equal(percentBlock[1], "Inventory export, raw totals follow.\n%%\nend of table");
    const percentOut = state.items.find((i) => i.id === percentBlock[0]).out.text;
    assert.equal(percentOut, "«Inventory export, raw totals follow.\n%%\nend of table»");
    assert.equal(byText(/50%% off couchettes/).length, 1);
    const duplicates = byText(/^Book early, pack light, and bring earplugs\.$/);
    assert.equal(duplicates.length, 2, "the duplicated paragraph is two items");
    assert.notEqual(duplicates[0][0], duplicates[1][0]);
    assert.ok(byText(/🚆/).length >= 1 && byText(/☕🥐/).length === 1, "emoji paragraphs");
    assert.ok(Object.values(ownTexts).some((text) => text.length > 1000), "a paragraph over 1000 characters");
    for (const tag of ["H1", "H2", "H3", "LI", "BLOCKQUOTE", "FIGCAPTION", "TH", "TD", "DT", "DD"]) {
      assert.ok(state.items.some((i) => i.tag === tag), `a ${tag} is translated`);
    }

    // Messages: shape, then visible blocks first with priority 1.
    const messages = state.log.messages.map((m) => m.msg);
    for (const msg of messages) {
      assert.deepEqual(Object.keys(msg).sort(), ["context", "flow", "items", "sourceLang", "targetLang", "type"]);
      assert.equal(msg.type, "translate");
      assert.equal(msg.sourceLang, "en");
      assert.equal(msg.targetLang, "de");
      assert.equal(msg.context, state.title);
      for (const item of msg.items) assert.deepEqual(Object.keys(item).sort(), ["id", "priority", "text"]);
    }
    const page0 = messages.filter((m) => m.flow === "page");
    assert.ok(visible.length > 0 && visible.length < pageIds.length, "some blocks start in view, some not");
    assert.deepEqual(page0[0].items.map((i) => i.id), visible, "the first message holds exactly the visible blocks");
    assert.ok(page0[0].items.every((i) => i.priority === 1));
    const rest = page0.slice(1).flatMap((m) => m.items);
    assert.ok(rest.length > 0 && rest.every((i) => i.priority === 0), "the others follow with priority 0");
    assert.deepEqual([...visible, ...rest.map((i) => i.id)].sort(), [...pageIds].sort(), "each block sent once");

    // Ports: one per flow, the page port closed by the script once all was answered.
    assert.deepEqual(state.log.ports.map((p) => p.name), [PORT_NAME, PORT_NAME]);
    const portOf = (flow) => state.log.messages.find((m) => m.msg.flow === flow).port;
    assert.notEqual(portOf("page"), portOf("subtitles"));
    assert.equal(state.log.ports[portOf("page")].closedBy, "content");
    assert.equal(state.log.ports[portOf("subtitles")].closedBy, null);

    // Cues: sent one by one as they appear (priority 2), translated at once.
    const cueItems = sentItems(state.log, "subtitles");
    assert.equal(cueItems.length, CUE_COUNT);
    assert.ok(cueItems.every((i) => i.priority === 2));
    assert.ok(messages.filter((m) => m.flow === "subtitles").length >= 20, "cues are sent as they arrive");
    const cueIdToNumber = new Map(state.items.filter((i) => i.isCue).map((i) => [i.id, i.cue]));
    for (const item of cueItems) {
      const n = cueIdToNumber.get(item.id);
      const appeared = state.log.cueAt[n];
      assert.ok(appeared !== undefined, `cue ${n} was seen`);
      // The script's MutationObserver runs right after the page's task: same moment.
      assert.ok(item.at - appeared < 100, `cue ${n} sent ${item.at - appeared} ms after it appeared`);
    }
    const lastCueAt = state.log.cueAt[String(CUE_COUNT)];
    const translatedEarly = Object.values(state.log.cueTranslatedAt).filter((at) => at < lastCueAt).length;
    assert.ok(translatedEarly >= CUE_COUNT / 2, `cues are translated while the others keep coming (${translatedEarly})`);

    assert.deepEqual(console, [], "no console output");
  });

  test("a dropped port is reconnected with backoff and every unanswered item is sent again", async (t) => {
    const { page, console, inject } = await open(t, {
      query: "?cueStart=0&cueInterval=25",
      fake: { delayMs: [5, 60], disconnectAfterPageAnswers: 10, refuseAfterDisconnect: 1 },
    });
    // Some cues are in the page before the script starts.
    await page.waitForSelector('#bp-subtitles .cue[data-cue="5"]');
    await inject();
    await page.waitForFunction(allDone, null, { timeout: 15_000, polling: 50 });
    const state = await page.evaluate(readPage);
    const ownTexts = await page.evaluate(readOwnTextsAfter);

    assertEveryItemTranslatedOnce(state, ownTexts);
    assert.equal(state.attrs["data-bp-failed"], "0");

    const drop = state.log.atDisconnect;
    assert.ok(drop, "the background was stopped mid-way");
    const refused = state.log.ports.filter((p) => p.refused);
    assert.equal(refused.length, 1, "one reconnect attempt found no background");
    assert.ok(Number(state.attrs["data-bp-reconnects"]) >= 2, "reconnected after the refusal");
    const droppedAt = Math.min(...state.log.ports.filter((p) => p.closedBy === "background" && !p.refused).map((p) => p.at));
    assert.ok(refused[0].at - droppedAt >= 150, "the first reconnect waits about 200 ms");

    const page1 = sentItems(state.log, "page");
    const before = page1.filter((i) => i.port < drop.port);
    const after = page1.filter((i) => i.port >= drop.port);
    const pageIds = state.items.filter((i) => !i.isCue).map((i) => i.id);
    assert.deepEqual(before.map((i) => i.id).sort(), [...pageIds].sort(), "all blocks were sent before the drop");
    const answeredBefore = new Set(drop.answered);
    const unanswered = pageIds.filter((id) => !answeredBefore.has(id));
    assert.ok(unanswered.length >= 30, `many blocks were unanswered at the drop (${unanswered.length})`);
    assert.deepEqual(after.map((i) => i.id).sort(), [...unanswered].sort(), "exactly the unanswered blocks are sent again");
    const original = new Map(before.map((i) => [i.id, i]));
    for (const item of after) {
      assert.equal(item.priority, original.get(item.id).priority, `${item.id} keeps its priority`);
      assert.equal(item.text, original.get(item.id).text);
    }
    const priorities = after.map((i) => i.priority);
    assert.deepEqual(priorities, [...priorities].sort((a, b) => b - a), "visible blocks first again");

    // Subtitles: the cues present at start, those that came while the port was down,
    // and those after: each sent, none answered twice.
    const cueItems = sentItems(state.log, "subtitles");
    const cueIds = state.items.filter((i) => i.isCue).map((i) => i.id);
    assert.deepEqual([...new Set(cueItems.map((i) => i.id))].sort(), [...cueIds].sort());
    const firstCueMessage = state.log.messages.find((m) => m.msg.flow === "subtitles").msg;
    assert.ok(firstCueMessage.items.length >= 5, "cues already present at start go in the first message");
    assert.equal(new Set(state.log.answered).size, state.log.answered.length, "no item answered twice");

    assert.deepEqual(console, [], "no console output");
  });

  test("previews show each paragraph's translation so far, lighter, in the element its answer then takes over", async (t) => {
    const failIds = ["p2"];
    const { page, console, inject } = await open(t, { query: "?cueStart=0&cueInterval=15", fake: { previews: true, failIds } });
    await inject();
    await page.waitForFunction(allDone, null, { timeout: 15_000, polling: 50 });
    const state = await page.evaluate(readPage);
    const ownTexts = await page.evaluate(readOwnTextsAfter);

    // The answers replaced every preview, in place: one element per item, no preview left.
    assertEveryItemTranslatedOnce(state, ownTexts, { failIds });
    for (const item of state.items) {
      const seen = state.log.previewSeen[item.id];
      assert.ok(seen, `${item.id} had a preview`);
      assert.equal(seen.className, "bp-translation bp-preview", `${item.id}'s preview is marked as one`);
      assert.equal(seen.text, seen.sent, `${item.id}'s preview shows the text received so far`);
      assert.equal(seen.fontStyle, "italic", `${item.id}'s preview is set apart`);
    }
    assert.equal(await page.locator(".bp-preview").count(), 0);
    assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector(".bp-translation:not(.bp-failed)")).fontStyle), "normal");
    // One preview per item counted: the late ones after each answer were ignored.
    assert.equal(Number(state.attrs["data-bp-previews"]), state.items.length);
    // Timing of the page flow: the first translation shown comes no later than the mean.
    const first = Number(state.attrs["data-bp-page-first-ms"]);
    const mean = Number(state.attrs["data-bp-page-mean-ms"]);
    assert.ok(Number.isFinite(first) && Number.isFinite(mean) && first >= 0 && first <= mean, `first ${first}, mean ${mean}`);
    assert.deepEqual(console, [], "no console output");
  });

  test("failures, second answers, stray messages and a second injection", async (t) => {
    const failIds = ["p3", "s2"];
    const { page, console, inject } = await open(t, {
      query: "?cueStart=0&cueInterval=15",
      fake: { failIds, twiceIds: ["p0", "p5", "s0", "s3", "p3"], unknownAnswers: true },
    });
    await inject();
    await inject(); // a second copy in the same world does nothing
    await page.waitForFunction(allDone, null, { timeout: 15_000, polling: 50 });
    const state = await page.evaluate(readPage);
    const ownTexts = await page.evaluate(readOwnTextsAfter);

    assertEveryItemTranslatedOnce(state, ownTexts, { failIds });
    assert.equal(state.attrs["data-bp-failed"], "2");
    assert.equal(state.attrs["data-bp-page-done"], state.attrs["data-bp-page-total"]);
    assert.equal(state.log.ports.length, 2, "one port per flow, one script instance");
    const pageSent = sentItems(state.log, "page").map((i) => i.id);
    assert.equal(new Set(pageSent).size, pageSent.length, "each block sent once");
    assert.deepEqual(console, [], "no console output");
  });
  test("after an extension reload the old script stops quietly and a new one finishes the page", async (t) => {
    const { page, console, inject } = await open(t, {
      query: "?cueStart=0&cueInterval=15",
      fake: { delayMs: [5, 60], invalidateAfterPageAnswers: 10 },
    });
    await inject();
    // The old instance tries to reconnect once per flow, finds no extension and stops.
    await page.waitForFunction(() => globalThis.__fakeExt.log.connectsWhileInvalid >= 1);
    await page.waitForTimeout(600);
    const stopped = await page.evaluate(() => ({
      attempts: globalThis.__fakeExt.log.connectsWhileInvalid,
      done: document.documentElement.getAttribute("data-bp-page-done"),
      total: document.documentElement.getAttribute("data-bp-page-total"),
      ids: [...document.querySelectorAll("[data-bp-id^='p']")].map((el) => el.getAttribute("data-bp-id")),
    }));
    assert.ok(stopped.attempts <= 2, `no retry loop without an extension (${stopped.attempts} attempts)`);
    assert.equal(stopped.done, "10");
    await page.waitForTimeout(300);
    assert.ok((await page.evaluate(() => globalThis.__fakeExt.log.connectsWhileInvalid)) <= 2, "it stays stopped");

    // The new version injects its content script again (a new world in a real browser),
    // into a page that got one more paragraph meanwhile, at its top.
    await page.evaluate(() => {
      const added = document.createElement("p");
      added.textContent = "Update: the Vienna service now runs every night.";
      document.querySelector("article h1").before(added);
      globalThis.__fakeExt.revive();
      delete globalThis[Symbol.for("batch-pacer.content-script")];
    });
    await inject();
    await page.waitForFunction(allDone, null, { timeout: 15_000, polling: 50 });
    const state = await page.evaluate(readPage);
    const ownTexts = await page.evaluate(readOwnTextsAfter);
    assertEveryItemTranslatedOnce(state, ownTexts);
    const newId = `p${stopped.ids.length}`;
    assert.equal(state.attrs["data-bp-page-total"], String(Number(stopped.total) + 1), "the same blocks and the new one");
    assert.deepEqual(state.items.filter((i) => !i.isCue).map((i) => i.id), [newId, ...stopped.ids], "ids kept; the new block gets the next one");
    assert.equal(ownTexts[newId], "Update: the Vienna service now runs every night.");
    const resent = sentItems(state.log, "page").filter((i) => i.port >= state.log.atInvalidate.port);
    const answered = new Set(state.log.atInvalidate.answered);
    assert.deepEqual(
      resent.map((i) => i.id).sort(),
      [newId, ...stopped.ids.filter((id) => !answered.has(id))].sort(),
      "the new script sends only the blocks without a translation",
    );
    assert.equal(new Set(state.log.answered).size, state.log.answered.length, "no item answered twice");
    assert.deepEqual(console, [], "no console output");
  });

  test("the page adds its 40 cues on its own schedule: from 500 ms after load, every 250 ms", async (t) => {
    const { page } = await open(t);
    await page.waitForSelector('#bp-subtitles .cue[data-cue="4"]');
    const times = await page.evaluate(() => ({
      load: performance.getEntriesByType("navigation")[0].loadEventStart,
      cues: globalThis.__fakeExt.log.cueAt,
      texts: [...document.querySelectorAll("#bp-subtitles .cue")].map((c) => c.textContent),
    }));
    assert.ok(times.cues[1] - times.load >= 450, `first cue ${times.cues[1] - times.load} ms after load`);
    // Timers never fire early; a busy machine may make them late.
    for (const n of [2, 3, 4]) {
      const gap = times.cues[n] - times.cues[n - 1];
      assert.ok(gap >= 240 && gap < 5000, `gap before cue ${n}: ${gap} ms`);
    }
    assert.ok(times.texts.every((text) => /\S/.test(text)));
    assert.equal(await page.evaluate(() => document.documentElement.dataset.cuesDone ?? null), null);
  });
});
