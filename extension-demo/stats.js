// Statistics: polls the background once a second and shows, per flow, how many original
// paragraphs became how many provider calls, how long a page waited for its first
// paragraph (streamed replies shorten it), the pacer's counters (items moved to the
// fallback provider included), the counts per provider (paragraphs it served, its
// learned batch size, tokens from its reported usage), the calls each provider and each
// key of a pool made as the pacer counts them (`stats().byProvider`), a chart of both
// totals over time and one of the tokens used per minute.

import { FLOWS, MESSAGES, describeFailure, send } from "./protocol.js";
import { element } from "./dom.js";

const POLL_MS = 1000;

/**
 * The rows of each flow's table: [pacer.stats() key, label]; "saved" and the times are
 * computed (see `cellText`).
 */
const ROWS = [
  ["items", "Original paragraphs"],
  ["providerCalls", "Provider calls"],
  ["saved", "Saved"],
  ["firstParagraph", "Time to first paragraph (last page)"],
  ["firstParagraphMean", "Time to first paragraph (mean over pages)"],
  ["callToParagraph", "Request to paragraph (mean)"],
  ["streamedCalls", "Streamed calls"],
  ["earlyResolved", "Paragraphs shown before their stream ended"],
  ["batchCalls", "Batch calls"],
  ["retries", "Retries"],
  ["countMismatches", "Count mismatches"],
  ["fallbacks", "Fallbacks (one by one)"],
  ["fallbackItems", "Moved to the fallback provider"],
  ["rateLimited", "429s (rate limited)"],
  ["cacheHits", "Cache hits"],
  ["dedupHits", "Dedup hits"],
  ["failed", "Failed"],
  ["inputTokens", "Input tokens"],
  ["outputTokens", "Output tokens"],
  ["queued", "Queued"],
  ["inFlight", "In flight"],
];

/**
 * The By provider table. "Served": paragraphs this provider translated (its reply carried
 * them), whoever asked; "Asked": paragraphs asked for under its id (moved ones included);
 * "Batch limit": the most paragraphs its batches carry now, learned from its replies or,
 * when nothing was learned, the flow's "Most paragraphs per batch".
 */
const PROVIDER_COLUMNS = [
  ["served", "Served"],
  ["paragraphs", "Asked"],
  ["calls", "Calls"],
  ["saved", "Saved"],
  ["batchLimit", "Batch limit"],
  ["rateLimited", "429s"],
  ["inputTokens", "Input tokens"],
  ["outputTokens", "Output tokens"],
];

/**
 * The Calls per key table: the pacer's own counts per provider (`stats().byProvider`),
 * each member of a pool apart, so the spread over the keys shows.
 */
const KEY_COLUMNS = [
  ["calls", "Calls"],
  ["items", "Paragraphs"],
  ["rateLimited", "429s"],
];

/** The window the tokens-per-minute chart averages over, in seconds. */
const RATE_WINDOW_S = 60;

const SVG_NS = "http://www.w3.org/2000/svg";
const CHART = { width: 560, height: 240, left: 46, right: 14, top: 34, bottom: 34 };

const $ = (id) => document.getElementById(id);
const numberFormat = new Intl.NumberFormat("en");
// Axis ticks fit the chart's left margin: 600,000 tokens a minute is "600K".
const axisFormat = new Intl.NumberFormat("en", { notation: "compact" });

let loadedOnce = false;
let timer;
let running = false;
let rerun = false;

function setStatus(text, state) {
  const line = $("stats-status");
  line.textContent = text;
  if (state) line.dataset.state = state;
  else delete line.dataset.state;
}

// ---------------------------------------------------------------------------------------
// Formatting

const isCount = (value) => typeof value === "number" && Number.isFinite(value);

function count(value) {
  return isCount(value) ? numberFormat.format(value) : "—";
}

/** 1 - calls / paragraphs as a percentage; "—" without paragraphs. */
function saved(paragraphs, calls) {
  if (!isCount(paragraphs) || paragraphs <= 0 || !isCount(calls)) return "—";
  return `${Number(((1 - calls / paragraphs) * 100).toFixed(1))}%`;
}

function seconds(t) {
  const total = Math.round(t);
  if (total < 60) return `${total} s`;
  const minutes = Math.floor(total / 60);
  const rest = String(total % 60).padStart(2, "0");
  if (minutes < 60) return `${minutes}:${rest}`;
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, "0")}:${rest}`;
}

/** A duration in ms as "850 ms" or "2.4 s"; "—" when unknown. */
function duration(ms) {
  if (!isCount(ms)) return "—";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}

/** The text of a counter cell: a pacer counter, or one of the computed rows. */
function cellText(key, flowStats) {
  const pacer = flowStats?.pacer ?? {};
  const timing = flowStats?.timing;
  if (key === "saved") return saved(pacer.items, pacer.providerCalls);
  if (key === "firstParagraph") return duration(timing?.lastFirstMs);
  if (key === "callToParagraph") return timing?.paragraphs > 0 ? duration(timing.callMsSum / timing.paragraphs) : "—";
  if (key === "firstParagraphMean") {
    if (!(timing?.pages > 0)) return "—";
    return `${duration(timing.firstMsSum / timing.pages)} (${count(timing.pages)} page${timing.pages === 1 ? "" : "s"})`;
  }
  return count(pacer[key]);
}

function clockTime(epochMs) {
  return new Date(epochMs).toLocaleTimeString();
}

// ---------------------------------------------------------------------------------------
// DOM helpers

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---------------------------------------------------------------------------------------
// The flow sections

/** Builds the parts of a flow section that stay; render() fills them in. */
function buildFlow(flow) {
  const section = $(`stats-${flow}`);
  const title = section.querySelector("h2")?.textContent ?? flow;

  const provider = element("p", { class: "provider-id" }, [
    "Current provider: ",
    element("code", { "data-field": "providerId", text: "—" }),
    element("span", { "data-field": "fallback", hidden: "" }, [
      " · fallback provider: ",
      element("code", { "data-field": "fallbackProviderId", text: "—" }),
    ]),
  ]);

  const headline = element("div", { class: "headline" }, [
    element("div", {}, [
      element("span", { class: "big", "data-headline": "items", text: "—" }),
      element("span", { class: "small", text: "original paragraphs" }),
    ]),
    element("div", {}, [
      element("span", { class: "big", "data-headline": "providerCalls", text: "—" }),
      element("span", { class: "small", text: "provider calls" }),
    ]),
    element("div", {}, [
      element("span", { class: "big", "data-headline": "saved", text: "—" }),
      element("span", { class: "small", text: "calls saved" }),
    ]),
    element("div", {}, [
      element("span", { class: "big", "data-headline": "firstParagraph", text: "—" }),
      element("span", { class: "small", text: "to the first paragraph (last page)" }),
    ]),
  ]);

  const body = element(
    "tbody",
    {},
    ROWS.map(([key, label]) =>
      element("tr", {}, [
        element("th", { scope: "row", text: label }),
        element("td", { class: "num", "data-stat": key, text: "—" }),
      ]),
    ),
  );
  const table = element("table", { class: "flow-table" }, [
    element("caption", { text: "Paragraphs and requests" }),
    body,
  ]);

  const chart = svg("svg", {
    id: `chart-${flow}`,
    class: "chart",
    viewBox: `0 0 ${CHART.width} ${CHART.height}`,
    role: "img",
    "aria-labelledby": `chart-${flow}-title`,
  });
  const figure = element("figure", { class: "chart-figure" }, [chart]);
  const tokenChart = svg("svg", {
    id: `tokens-${flow}`,
    class: "chart",
    viewBox: `0 0 ${CHART.width} ${CHART.height}`,
    role: "img",
    "aria-labelledby": `tokens-${flow}-title`,
  });
  const tokenFigure = element("figure", { class: "chart-figure" }, [tokenChart]);

  const providers = element("table", { class: "provider-table" }, [
    element("caption", { text: "By provider" }),
    element("thead", {}, [
      element("tr", {}, [
        element("th", { scope: "col", text: "Provider" }),
        ...PROVIDER_COLUMNS.map(([, label]) => element("th", { scope: "col", class: "num", text: label })),
      ]),
    ]),
    element("tbody", { "data-providers": flow }),
  ]);
  const fromCache = element("p", { class: "hint", "data-field": "cacheServed" });
  const keys = element("table", { class: "key-table table-gap" }, [
    element("caption", { text: "Calls per provider and key" }),
    element("thead", {}, [
      element("tr", {}, [
        element("th", { scope: "col", text: "Provider or key" }),
        ...KEY_COLUMNS.map(([, label]) => element("th", { scope: "col", class: "num", text: label })),
      ]),
    ]),
    element("tbody", { "data-keys": flow }),
  ]);

  section.append(
    provider,
    headline,
    // The two charts side by side across the card, above the tables.
    element("div", { class: "charts" }, [figure, tokenFigure]),
    element("div", { class: "flow-stats" }, [table, element("div", {}, [providers, fromCache, keys])]),
  );
  drawChart(chart, flow, title, []);
  drawTokenChart(tokenChart, flow, title, []);
}

function renderFlow(flow, flowStats) {
  const section = $(`stats-${flow}`);
  const title = section.querySelector("h2")?.textContent ?? flow;

  section.querySelector('[data-field="providerId"]').textContent = flowStats?.providerId || "—";
  const fallbackId = typeof flowStats?.fallbackProviderId === "string" ? flowStats.fallbackProviderId : null;
  section.querySelector('[data-field="fallback"]').hidden = fallbackId === null;
  section.querySelector('[data-field="fallbackProviderId"]').textContent = fallbackId ?? "—";
  const cacheServed = flowStats?.cacheServed;
  section.querySelector('[data-field="cacheServed"]').textContent = isCount(cacheServed)
    ? `Paragraphs answered from the cache, with no provider call: ${count(cacheServed)}.`
    : "";

  for (const cell of section.querySelectorAll("[data-stat]")) cell.textContent = cellText(cell.dataset.stat, flowStats);
  for (const cell of section.querySelectorAll("[data-headline]")) cell.textContent = cellText(cell.dataset.headline, flowStats);

  const body = section.querySelector("[data-providers]");
  const rows = providerRows(flowStats).map(({ id, role, stats, limit }) =>
    element("tr", { "data-provider": id, ...(role ? { "data-role": role } : {}) }, [
      element("th", { scope: "row" }, [
        element("code", { text: id }),
        ...(role === "fallback" ? [element("span", { class: "role", text: " (fallback)" })] : []),
      ]),
      ...PROVIDER_COLUMNS.map(([key]) => {
        if (key === "batchLimit") {
          return element("td", { class: "num", "data-provider-stat": key, "data-learned": limit.learned ? "1" : "0", text: limit.text });
        }
        // Saved is per paragraph the provider served; counters of older versions have no
        // served figure, and then it is per paragraph asked for.
        const text = key === "saved" ? saved(isCount(stats?.served) ? stats.served : stats?.paragraphs, stats?.calls) : count(stats?.[key]);
        return element("td", { class: "num", "data-provider-stat": key, text });
      }),
    ]),
  );
  if (rows.length === 0) {
    rows.push(
      element("tr", {}, [
        element("td", { colspan: String(PROVIDER_COLUMNS.length + 1), text: "No provider calls yet." }),
      ]),
    );
  }
  body.replaceChildren(...rows);
  section.querySelector("[data-keys]").replaceChildren(...keyRows(flowStats));

  const series = Array.isArray(flowStats?.series) ? flowStats.series : [];
  drawChart($(`chart-${flow}`), flow, title, series);
  drawTokenChart($(`tokens-${flow}`), flow, title, series);
}

/**
 * The By provider rows: every provider with counters or a learned batch size, the flow's
 * provider first, then its fallback, its pool's keys, then the others (earlier settings).
 */
function providerRows(flowStats) {
  const byProvider = flowStats?.byProvider ?? {};
  const limits = flowStats?.batchLimits ?? {};
  const main = flowStats?.providerId;
  const fallback = flowStats?.fallbackProviderId;
  const ids = [...new Set([...Object.keys(byProvider), ...Object.keys(limits)])];
  // The pool's keys after the provider and its fallback, in their order, then the others.
  const members = Array.isArray(flowStats?.poolMembers) ? flowStats.poolMembers : [];
  const rank = (id) => (id === main ? 0 : id === fallback ? 1 : members.includes(id) ? 2 + members.indexOf(id) / (members.length + 1) : 3);
  ids.sort((a, b) => rank(a) - rank(b));
  return ids.map((id) => ({
    id,
    role: id === main ? "provider" : id === fallback ? "fallback" : null,
    stats: byProvider[id],
    limit: batchLimitOf(limits[id], flowStats?.maxItemsPerBatch),
  }));
}

/**
 * The Calls per key rows: each provider the pacer counted calls or paragraphs for since
 * the statistics started, the pool's keys first, in their order.
 */
function keyRows(flowStats) {
  const byProvider = flowStats?.pacer?.byProvider;
  if (byProvider === null || typeof byProvider !== "object") {
    return [element("tr", {}, [element("td", { colspan: String(KEY_COLUMNS.length + 1), text: "This version of the package does not count calls per provider." })])];
  }
  const members = Array.isArray(flowStats.poolMembers) ? flowStats.poolMembers : [];
  const ids = Object.keys(byProvider).filter((id) => byProvider[id]?.calls > 0 || byProvider[id]?.items > 0);
  const rank = (id) => (members.includes(id) ? members.indexOf(id) : members.length);
  ids.sort((a, b) => rank(a) - rank(b));
  if (ids.length === 0) {
    return [element("tr", {}, [element("td", { colspan: String(KEY_COLUMNS.length + 1), text: "No provider calls yet." })])];
  }
  return ids.map((id) => {
    const place = members.indexOf(id);
    return element("tr", { "data-key-provider": id, ...(place >= 0 ? { "data-role": "key" } : {}) }, [
      element("th", { scope: "row" }, [
        element("code", { text: id }),
        ...(place >= 0 ? [element("span", { class: "role", text: ` (key ${place + 1} of ${members.length})` })] : []),
      ]),
      ...KEY_COLUMNS.map(([key]) => element("td", { class: "num", "data-key-stat": key, text: count(byProvider[id]?.[key]) })),
    ]);
  });
}

/**
 * A provider's batch limit as the pacer applies it: the size it learned (never above the
 * flow's maximum), or the flow's "Most paragraphs per batch" when it learned none.
 */
function batchLimitOf(learned, maximum) {
  const max = isCount(maximum) ? maximum : Infinity;
  if (isCount(learned) && learned < max) return { text: `${count(learned)} (learned)`, learned: true };
  return { text: Number.isFinite(max) ? `${count(max)} (maximum)` : "—", learned: false };
}

// ---------------------------------------------------------------------------------------
// The chart

/** A round step (1, 2 or 5 times a power of ten) that cuts `span` into about `parts`. */
function niceStep(span, parts) {
  const raw = span / parts;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const normalized = raw / magnitude;
  const factor = normalized <= 1 ? 1 : normalized <= 2 ? 2 : normalized <= 5 ? 5 : 10;
  return factor * magnitude;
}

/**
 * Draws cumulative paragraphs and calls as two polylines with one vertex per series
 * point, axes with a few tick labels and a legend.
 */
function drawChart(chart, flow, title, series) {
  const points = series.filter((p) => p && isCount(p.t));
  const latest = points.at(-1);
  plot(chart, {
    titleId: `chart-${flow}-title`,
    title:
      points.length === 0
        ? `${title}: no activity yet`
        : `${title}: ${count(latest.paragraphs)} paragraphs and ${count(latest.calls)} provider calls after ${seconds(latest.t)}`,
    points,
    lines: [
      ["paragraphs", "Original paragraphs"],
      ["calls", "Provider calls"],
    ],
  });
}

/**
 * Tokens per minute at each series point: the tokens (input and output, cumulative in
 * the series) used over the last minute, or since the first point when younger, scaled
 * to a minute.
 */
function tokenRates(series) {
  const points = series.filter((p) => p && isCount(p.t));
  return points.map((p, i) => {
    let base = points[0];
    for (let j = i; j >= 0; j--) {
      if (points[j].t <= p.t - RATE_WINDOW_S) {
        base = points[j];
        break;
      }
    }
    const span = p.t - base.t;
    const used = (p.tokens || 0) - (base.tokens || 0);
    return { t: p.t, tokensPerMinute: span > 0 ? Math.max(0, Math.round((used * 60) / span)) : 0 };
  });
}

/** Draws the tokens used per minute, one vertex per series point. */
function drawTokenChart(chart, flow, title, series) {
  const points = tokenRates(series);
  const latest = points.at(-1);
  plot(chart, {
    titleId: `tokens-${flow}-title`,
    title:
      points.length === 0
        ? `${title}: no tokens used yet`
        : `${title}: ${count(latest.tokensPerMinute)} tokens per minute after ${seconds(latest.t)}`,
    points,
    lines: [["tokensPerMinute", "Tokens per minute"]],
  });
}

/** One chart: a polyline per `[key, label]` of `lines` over `points` ({ t, [key] }). */
function plot(chart, { titleId, title, points, lines }) {
  const { width, height, left, right, top, bottom } = CHART;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;

  const first = points[0]?.t ?? 0;
  const last = points.at(-1)?.t ?? 0;
  const t0 = first;
  const t1 = Math.max(last, first + 10);
  const highest = Math.max(1, ...points.map((p) => Math.max(...lines.map(([key]) => p[key] || 0))));
  const yStep = Math.max(1, niceStep(highest, 4));
  const yMax = Math.ceil(highest / yStep) * yStep;

  const x = (t) => left + ((t - t0) / (t1 - t0)) * plotWidth;
  const y = (v) => top + plotHeight - (Math.max(0, v || 0) / yMax) * plotHeight;
  const round = (v) => Math.round(v * 10) / 10;

  const latest = points.at(-1);
  const nodes = [svg("title", { id: titleId }, title)];

  // Horizontal grid lines with the y tick labels.
  for (let v = 0; v <= yMax + yStep / 2; v += yStep) {
    const yy = round(y(v));
    nodes.push(svg("line", { class: v === 0 ? "axis" : "gridline", x1: left, x2: width - right, y1: yy, y2: yy }));
    nodes.push(svg("text", { x: left - 6, y: yy + 4, "text-anchor": "end" }, axisFormat.format(v)));
  }

  // The time axis with its tick labels.
  nodes.push(svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: top + plotHeight }));
  const tStep = Math.max(1, niceStep(t1 - t0, 5));
  for (let t = Math.ceil(t0 / tStep) * tStep; t <= t1 + 1e-9; t += tStep) {
    const xx = round(x(t));
    nodes.push(svg("line", { class: "axis", x1: xx, x2: xx, y1: top + plotHeight, y2: top + plotHeight + 4 }));
    nodes.push(svg("text", { x: xx, y: top + plotHeight + 16, "text-anchor": "middle" }, seconds(t)));
  }
  nodes.push(
    svg(
      "text",
      { x: width - right, y: height - 3, "text-anchor": "end" },
      "time since the statistics started",
    ),
  );

  // The series: one vertex per point, a dot on the latest value.
  for (const [key, label] of lines) {
    const line = svg("polyline", {
      class: `series series-${key}`,
      "data-series": key,
      points: points.map((p) => `${round(x(p.t))},${round(y(p[key]))}`).join(" "),
    });
    const name = svg("title", {}, label);
    line.append(name);
    nodes.push(line);
    if (latest) {
      nodes.push(svg("circle", { class: `dot-${key}`, cx: round(x(latest.t)), cy: round(y(latest[key])), r: 3 }));
    }
  }

  if (points.length === 0) {
    nodes.push(
      svg(
        "text",
        { class: "empty-note", x: left + plotWidth / 2, y: top + plotHeight / 2, "text-anchor": "middle" },
        "No activity yet",
      ),
    );
  }

  // Legend above the plot.
  const legend = lines.map(([key, label]) => [key, `${label} (${count(latest?.[key] ?? 0)})`]);
  let legendX = left;
  for (const [key, label] of legend) {
    nodes.push(svg("line", { class: `swatch swatch-${key}`, x1: legendX, x2: legendX + 18, y1: 14, y2: 14 }));
    nodes.push(svg("text", { class: "legend-text", x: legendX + 24, y: 18 }, label));
    legendX += 30 + label.length * 6.6;
  }

  chart.replaceChildren(...nodes);
}

// ---------------------------------------------------------------------------------------
// Polling

function render(stats) {
  for (const flow of FLOWS) renderFlow(flow, stats?.flows?.[flow]);
  const since = isCount(stats?.startedAt) ? ` · counting since ${clockTime(stats.startedAt)}` : "";
  $("updated").textContent = `Updated ${clockTime(Date.now())}${since}`;
}

async function poll() {
  if (running) {
    rerun = true;
    return;
  }
  running = true;
  clearTimeout(timer);
  try {
    if (loadedOnce && document.hidden) return; // nobody is looking; resume when visible
    const response = await send({ type: MESSAGES.getStats });
    if (!response?.ok) throw new Error(response?.error?.message ?? "the extension's background gave no answer");
    render(response.stats);
    if (!loadedOnce) {
      loadedOnce = true;
      document.documentElement.dataset.statsLoaded = "1";
    }
    if ($("stats-status").dataset.state === "error") setStatus("", null);
  } catch (error) {
    setStatus(`Could not load the statistics: ${describeFailure(error)}`, "error");
  } finally {
    running = false;
    if (rerun) {
      rerun = false;
      queueMicrotask(poll);
    } else {
      timer = setTimeout(poll, POLL_MS);
    }
  }
}

async function reset() {
  const button = $("reset");
  button.disabled = true;
  try {
    const response = await send({ type: MESSAGES.resetStats });
    if (!response?.ok) throw new Error(response?.error?.message ?? "the extension's background gave no answer");
    setStatus("Statistics reset.", "ok");
  } catch (error) {
    setStatus(`Could not reset the statistics: ${describeFailure(error)}`, "error");
  } finally {
    button.disabled = false;
  }
  poll();
}

for (const flow of FLOWS) buildFlow(flow);
$("reset").addEventListener("click", reset);
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) poll();
});
poll();
