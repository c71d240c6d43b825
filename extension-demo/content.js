// batch-pacer demo extension: the content script. It runs on every page at document_idle.
//
// Page flow: collects the page's translatable blocks, gives each a stable id
// (`data-bp-id`: "p0", "p1", ...) and sends them to the background over a port, the
// blocks visible at start first (priority 1, the others 0). Each answer is shown
// directly under its own block, bilingual:
//
//   <div|span class="bp-translation" data-bp-for="p7" lang="de">…</div|span>
//
// inserted right after the block (p, headings, blockquote, figcaption), or appended
// inside it (li, td, th, dt, dd, subtitle cues). A failed item shows
// "⚠ not translated (CODE): message" in the same element, which then also has the
// class `bp-failed`. An item is shown once; a second answer for it is ignored.
//
// Streamed replies: each paragraph shows as soon as the background answers it, which
// with streaming is when the reply proves it, not when the whole batch is done. With
// previews on, "partial" messages show the translation received so far in the same
// element, lighter and italic, with the class `bp-preview`; the item's answer then
// replaces the preview (the element loses that class), and a preview that comes after
// the answer is ignored.
//
// Subtitle flow: when the page has `#bp-subtitles`, every `.cue` in it (present at
// start or added later) is sent at once over a second port (priority 2, ids "s0", ...).
//
// Resilience: when a port closes (the service worker was stopped, the extension
// reloaded), the script reconnects after 200 ms, doubling up to 2 s, and sends again
// every item of that flow that has no answer yet, with the same ids and priorities.
//
// Progress, on <html>, updated after each answer: data-bp-page-total,
// data-bp-page-done, data-bp-subtitles-total, data-bp-subtitles-done (done = translated
// or failed), data-bp-failed (both flows), data-bp-reconnects, data-bp-previews (preview
// updates shown, both flows). Timing of the page flow, in ms from the moment its items
// were first sent: data-bp-page-first-ms (the first translation shown) and
// data-bp-page-mean-ms (the mean over every translation shown).
//
// A classic script, not a module (MV3 content scripts cannot be ES modules), so it does
// not import protocol.js: PORT_NAME and the message types below are copies of the ones
// in extension-demo/protocol.js and must stay equal to them.
(() => {
  "use strict";

  // --- Copied from extension-demo/protocol.js (PORT_NAME, MESSAGES). ---------------
  const PORT_NAME = "batch-pacer-translate";
  const MESSAGES = { translate: "translate", translated: "translated", failed: "failed", partial: "partial" };
  // ---------------------------------------------------------------------------------

  const ext = globalThis.browser ?? globalThis.chrome;
  const root = document.documentElement;
  if (!ext?.runtime?.connect || !root || !document.body) return;
  // One instance per JS world (a second injection of the same script is a no-op).
  const GUARD = Symbol.for("batch-pacer.content-script");
  if (globalThis[GUARD]) return;
  globalThis[GUARD] = true;

  // The background replaces these with the configured languages when they differ.
  const SOURCE_LANG = "en";
  const TARGET_LANG = "de";

  const BLOCKS = "p,h1,h2,h3,h4,h5,h6,li,blockquote,figcaption,td,th,dt,dd";
  // Blocks whose translation goes inside them (a sibling would break the list/table).
  const INSIDE = new Set(["LI", "TD", "TH", "DT", "DD"]);
  const SKIP =
    "script,style,noscript,template,textarea,select,code,pre,svg,math," +
    "[contenteditable]:not([contenteditable='false']),[translate='no'],.notranslate," +
    ".bp-translation,#bp-subtitles";
  const SUBTITLES_ID = "bp-subtitles";
  const CUE = ".cue";
  const PRIORITY = { hidden: 0, visible: 1, subtitle: 2 };
  const RECONNECT_MIN_MS = 200;
  const RECONNECT_MAX_MS = 2000;
  const MAX_ITEMS_PER_MESSAGE = 100;
  const SNAPSHOT_TIMEOUT_MS = 500;

  // Another instance (e.g. injected again after the extension was reloaded) takes the
  // page over by writing its own token; an instance that sees a foreign token stops.
  const token = Math.random().toString(36).slice(2) + Date.now().toString(36);
  root.setAttribute("data-bp-instance", token);

  let stopped = false;
  let reconnects = 0;
  let previews = 0;

  /** One translation flow: its items, its port and its reconnect state. */
  function newFlow(name, prefix) {
    return {
      name,
      prefix,
      nextIndex: 0,
      items: new Map(), // id -> item, in insertion (document) order
      pending: new Map(), // id -> item without an answer yet
      failed: 0,
      port: null,
      timer: 0,
      delay: RECONNECT_MIN_MS,
      keepOpen: name === "subtitles", // the page port closes once everything is answered
      sentAt: null, // performance.now() when its first items were sent
      shownMs: [], // per translation shown: ms from sentAt
    };
  }
  const page = newFlow("page", "p");
  const subtitles = newFlow("subtitles", "s");
  const flows = [page, subtitles];

  // Translations already in the page (written by an earlier instance), by id.
  const existing = new Map();
  for (const node of document.querySelectorAll(".bp-translation[data-bp-for]")) {
    existing.set(node.getAttribute("data-bp-for"), node);
  }

  // New ids continue after every id an earlier instance gave.
  for (const el of document.querySelectorAll("[data-bp-id]")) {
    const id = el.getAttribute("data-bp-id");
    for (const flow of flows) {
      const n = id.startsWith(flow.prefix) ? Number(id.slice(flow.prefix.length)) : NaN;
      if (Number.isInteger(n) && n >= flow.nextIndex) flow.nextIndex = n + 1;
    }
  }

  // --- Items ---------------------------------------------------------------------

  /** The element's visible text, line breaks (<br>, blocks) kept as "\n". */
  function textOf(el) {
    return (el.innerText ?? el.textContent ?? "").trim();
  }

  function isRendered(el) {
    return el.getClientRects().length > 0;
  }

  /**
   * Registers `el` in `flow`: reuses an id given by an earlier instance (and its
   * translation, if it has one), else gives the next one. Returns the item, or null
   * when the element has no text to translate.
   */
  function addItem(flow, el, priority) {
    let id = el.getAttribute("data-bp-id");
    let out = null;
    if (id !== null && id.startsWith(flow.prefix) && !flow.items.has(id)) {
      out = existing.get(id) ?? null;
      if (out?.classList.contains("bp-failed") || out?.classList.contains("bp-preview")) {
        out.remove(); // failed, or only previewed, under an earlier instance: try again
        out = null;
      }
    } else {
      id = null;
    }
    const text = out ? "" : textOf(el);
    if (!out && !/\S/.test(text)) return null;
    if (id === null) {
      id = flow.prefix + flow.nextIndex++;
      el.setAttribute("data-bp-id", id);
    }
    const isCue = flow === subtitles;
    const item = { id, el, text, priority, isCue, inside: isCue || INSIDE.has(el.tagName), out };
    flow.items.set(id, item);
    if (!out) flow.pending.set(id, item);
    return item;
  }

  /** The page's leaf-ish translatable blocks, in document order. */
  function pageBlocks() {
    const blocks = [];
    for (const el of document.body.querySelectorAll(BLOCKS)) {
      if (el.closest(SKIP)) continue;
      if (el.querySelector(BLOCKS)) continue; // not a leaf: its inner blocks are items
      if (!isRendered(el)) continue;
      blocks.push(el);
    }
    return blocks;
  }

  // --- Output --------------------------------------------------------------------

  function style(node, failed, cue, preview) {
    const s = node.style;
    const set = (name, value) => s.setProperty(name, value, "important");
    set("display", "block");
    if (failed) set("color", "#a33");
    else if (cue) set("opacity", preview ? "0.45" : "0.75"); // players are often dark: keep the cue's colour
    else set("color", preview ? "#999" : "#555");
    set("border-left", failed ? "3px solid #d88" : "3px solid #9ab");
    set("padding-left", "0.6em");
    set("margin", "0.25em 0 0.75em");
    set("white-space", "pre-line");
    set("font-style", preview ? "italic" : "normal");
  }

  /** The item's output element, made on first use (a preview's element is reused). */
  function outputOf(item) {
    if (item.out) return item.out;
    const node = document.createElement(item.inside ? "span" : "div");
    node.setAttribute("data-bp-for", item.id);
    node.setAttribute("lang", TARGET_LANG);
    node.setAttribute("translate", "no");
    node.dir = "auto";
    if (item.inside) item.el.append(node);
    else item.el.after(node);
    item.out = node;
    return node;
  }

  /** Shows the answer under the item's element, in place of its preview; never twice for one item. */
  function show(item, text, failed) {
    if (item.out && !item.previewing) return;
    const node = outputOf(item);
    item.previewing = false;
    node.className = failed ? "bp-translation bp-failed" : "bp-translation";
    node.textContent = text;
    style(node, failed, item.isCue, false);
  }

  /** Shows the translation received so far, lighter, until the item's answer replaces it. */
  function preview(item, text) {
    if (item.out && !item.previewing) return;
    const node = outputOf(item);
    item.previewing = true;
    node.className = "bp-translation bp-preview";
    node.textContent = text;
    style(node, false, item.isCue, true);
    previews++;
  }

  const meanOf = (values) => values.reduce((a, b) => a + b, 0) / values.length;

  function publish() {
    const set = (name, value) => root.setAttribute(name, String(value));
    set("data-bp-page-total", page.items.size);
    set("data-bp-page-done", page.items.size - page.pending.size);
    set("data-bp-subtitles-total", subtitles.items.size);
    set("data-bp-subtitles-done", subtitles.items.size - subtitles.pending.size);
    set("data-bp-failed", page.failed + subtitles.failed);
    set("data-bp-reconnects", reconnects);
    set("data-bp-previews", previews);
    if (page.shownMs.length > 0) {
      set("data-bp-page-first-ms", Math.round(Math.min(...page.shownMs)));
      set("data-bp-page-mean-ms", Math.round(meanOf(page.shownMs)));
    }
  }

  // --- Ports ---------------------------------------------------------------------

  function byPriority(items) {
    // Stable: document (insertion) order among equal priorities.
    return items
      .map((item, index) => ({ item, index }))
      .sort((a, b) => b.item.priority - a.item.priority || a.index - b.index)
      .map(({ item }) => item);
  }

  /** Posts items, higher priorities in earlier messages. False if the port failed. */
  function post(flow, items) {
    const sorted = byPriority(items);
    let start = 0;
    while (start < sorted.length) {
      let end = start + 1;
      while (
        end < sorted.length &&
        end - start < MAX_ITEMS_PER_MESSAGE &&
        sorted[end].priority === sorted[start].priority
      ) {
        end++;
      }
      const message = {
        type: MESSAGES.translate,
        flow: flow.name,
        sourceLang: SOURCE_LANG,
        targetLang: TARGET_LANG,
        context: document.title,
        items: sorted.slice(start, end).map(({ id, text, priority }) => ({ id, text, priority })),
      };
      try {
        flow.port.postMessage(message);
      } catch {
        lost(flow, flow.port);
        return false;
      }
      flow.sentAt ??= performance.now();
      start = end;
    }
    return true;
  }

  /** Sends new items of a flow: on its open port, or on the next connection. */
  function send(flow, items) {
    if (stopped || items.length === 0) return;
    if (flow.port) post(flow, items);
    else if (!flow.timer) connect(flow);
    // else: a reconnect is scheduled; it sends every pending item
  }

  function connect(flow) {
    flow.timer = 0;
    if (stopped || flow.port || flow.pending.size === 0) return;
    let port;
    try {
      port = ext.runtime.connect({ name: PORT_NAME });
    } catch (error) {
      // No extension context any more (the extension was reloaded or removed): this
      // instance can never reach a background again.
      if (!ext.runtime?.id) return stop();
      console.error("batch-pacer: cannot connect to the background:", error);
      return reconnectLater(flow);
    }
    flow.port = port;
    port.onMessage.addListener((message) => answer(flow, message));
    port.onDisconnect.addListener(() => lost(flow, port));
    post(flow, [...flow.pending.values()]);
  }

  /** The port closed (or failed): reconnect if answers are missing. */
  function lost(flow, port) {
    void ext.runtime?.lastError; // read, so that Chromium does not report it as unchecked
    if (flow.port !== port) return;
    flow.port = null;
    try {
      port.disconnect();
    } catch {
      // already closed
    }
    if (flow.pending.size > 0) reconnectLater(flow);
  }

  function reconnectLater(flow) {
    if (stopped || flow.timer) return;
    const delay = flow.delay;
    flow.delay = Math.min(flow.delay * 2, RECONNECT_MAX_MS);
    flow.timer = setTimeout(() => {
      if (stopped) return;
      reconnects++;
      publish();
      connect(flow);
    }, delay);
  }

  function answer(flow, message) {
    if (stopped || !message || typeof message !== "object") return;
    if (root.getAttribute("data-bp-instance") !== token) return stop();
    const item = typeof message.id === "string" ? flow.pending.get(message.id) : undefined;
    if (!item) return; // unknown id, or answered already: shown once
    if (message.type === MESSAGES.partial) {
      if (typeof message.text === "string" && message.text !== "") preview(item, message.text);
      publish();
      return;
    }
    if (message.type === MESSAGES.translated) {
      if (typeof message.translation === "string") {
        show(item, message.translation, false);
        if (flow.sentAt !== null) flow.shownMs.push(performance.now() - flow.sentAt);
      } else {
        show(item, "⚠ not translated (invalid_answer): the answer holds no text", true);
        flow.failed++;
      }
    } else if (message.type === MESSAGES.failed) {
      const code = typeof message.code === "string" && message.code ? message.code : "unknown";
      const text = typeof message.message === "string" ? message.message : "";
      show(item, `⚠ not translated (${code}): ${text}`, true);
      flow.failed++;
    } else {
      return;
    }
    flow.pending.delete(item.id);
    flow.delay = RECONNECT_MIN_MS; // the background answers: a later loss starts over
    publish();
    if (flow.pending.size === 0 && !flow.keepOpen && flow.port) {
      const port = flow.port;
      flow.port = null;
      try {
        port.disconnect();
      } catch {
        // already closed
      }
    }
  }

  function stop() {
    if (stopped) return;
    stopped = true;
    for (const flow of flows) {
      clearTimeout(flow.timer);
      flow.timer = 0;
      const port = flow.port;
      flow.port = null;
      try {
        port?.disconnect();
      } catch {
        // already closed
      }
    }
    cueObserver?.disconnect();
  }

  // --- Visible first ---------------------------------------------------------------

  /** The elements intersecting the viewport now (one IntersectionObserver snapshot). */
  function visibleNow(elements) {
    return new Promise((resolve) => {
      const visible = new Set();
      if (elements.length === 0) return resolve(visible);
      const seen = new Set();
      let observer = null;
      let timer = 0;
      const finish = () => {
        if (!timer) return;
        clearTimeout(timer);
        timer = 0;
        observer?.disconnect();
        // Elements the observer did not report (a background tab renders no frame):
        // measure them directly.
        const width = window.innerWidth;
        const height = window.innerHeight;
        for (const el of elements) {
          if (seen.has(el)) continue;
          const r = el.getBoundingClientRect();
          if (r.bottom > 0 && r.right > 0 && r.top < height && r.left < width) visible.add(el);
        }
        resolve(visible);
      };
      timer = setTimeout(finish, SNAPSHOT_TIMEOUT_MS);
      try {
        observer = new IntersectionObserver((entries) => {
          for (const entry of entries) {
            seen.add(entry.target);
            if (entry.isIntersecting) visible.add(entry.target);
          }
          if (seen.size >= elements.length) finish();
        });
        for (const el of elements) observer.observe(el);
      } catch {
        finish();
      }
    });
  }

  // --- Subtitles -------------------------------------------------------------------

  let cueObserver = null;
  const box = document.getElementById(SUBTITLES_ID);

  function scanCues(selector) {
    if (stopped) return;
    const fresh = [];
    for (const cue of box.querySelectorAll(selector)) {
      if (cue.closest(".bp-translation")) continue;
      const item = addItem(subtitles, cue, PRIORITY.subtitle);
      if (item && !item.out) fresh.push(item);
    }
    if (fresh.length === 0) return;
    publish();
    send(subtitles, fresh);
  }

  // --- Start -----------------------------------------------------------------------

  const blocks = pageBlocks();
  for (const el of blocks) addItem(page, el, PRIORITY.hidden);
  if (box) {
    scanCues(CUE); // cues present at start (ids of an earlier instance are kept)
    cueObserver = new MutationObserver(() => scanCues(`${CUE}:not([data-bp-id])`));
    cueObserver.observe(box, { childList: true, subtree: true, characterData: true });
  }
  publish();

  const waiting = [...page.pending.values()];
  if (waiting.length > 0) {
    visibleNow(waiting.map((item) => item.el)).then((visible) => {
      for (const item of waiting) {
        item.priority = visible.has(item.el) ? PRIORITY.visible : PRIORITY.hidden;
      }
      send(page, [...page.pending.values()]);
    });
  }
})();
