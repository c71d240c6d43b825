// Request Control: the options page. Edits the settings of both flows (each with its own
// fallback provider, pool of keys and limits per key) and the provider, and lets the background validate them with the
// package's own rules and messages.

import { FLOWS, FLOW_FIELDS, FLOW_SWITCHES, FALLBACK_KINDS, PRESETS, DEFAULT_SETTINGS, MESSAGES, NO_KEY_LIMITS, describeFailure, send } from "./protocol.js";
import { element } from "./dom.js";

const FLOW_TITLES = { page: "Page translation", subtitles: "Video subtitles" };

/** Label, explanation and input hints of each flow field. */
const FIELD_INFO = {
  rate: {
    label: "Average requests per second",
    hint: "Decimals are fine: 0.25 is one request every 4 seconds.",
    min: "0",
    step: "any",
    inputMode: "decimal",
  },
  capacity: {
    label: "Maximum burst (bucket size)",
    hint: "Requests that may start back to back after a quiet spell. 1 = no burst.",
    min: "1",
    step: "1",
    inputMode: "numeric",
  },
  maxInFlight: {
    label: "Most calls at once (0 = no limit)",
    hint: "Requests waiting for an answer at the same time.",
    min: "0",
    step: "1",
    inputMode: "numeric",
  },
  maxCharactersPerBatch: {
    label: "Most characters per batch",
    hint: "Paragraphs sharing one request stay under this length; a longer one travels alone.",
    min: "1",
    step: "1",
    inputMode: "numeric",
  },
  maxItemsPerBatch: {
    label: "Most paragraphs per batch",
    hint: "How many paragraphs one request may carry. 1 = no batching.",
    min: "1",
    step: "1",
    inputMode: "numeric",
  },
  batchDelayMs: {
    label: "Batch collection window (ms)",
    hint: "How long a batch waits for more paragraphs after its first one.",
    min: "0",
    step: "any",
    inputMode: "decimal",
  },
};

/** Label and explanation of each flow switch. */
const SWITCH_INFO = {
  stream: {
    label: "Stream replies",
    hint: "Ask the provider to stream its reply: each paragraph shows as soon as the reply proves it, not when the whole batch is done.",
  },
  previews: {
    label: "Show previews while a reply streams",
    hint: "Paragraphs show their translation as it arrives, lighter and in italics, until the checked translation replaces it.",
  },
};

/** Label and hint of each part of a flow's fallback provider. */
const FALLBACK_INFO = {
  kind: {
    label: "Fallback provider",
    hint: "Where this flow's paragraphs go when the provider cannot serve them: its daily quota is spent, it asks to wait longer than 10 s, it refuses the key or the account, or it keeps failing.",
  },
  model: { label: "Fallback model", hint: "Another model, e.g. a lighter one with its own quota." },
  baseUrl: { label: "Fallback base URL", hint: "Empty: the provider settings' base URL." },
  apiKey: { label: "Fallback API key", hint: "" },
};
/** Label and hint of each part of a flow's keys: its pool, and each key's own limits. */
const KEY_INFO = {
  "pool.keys": {
    label: "Pool of API keys (one per line)",
    hint: "Several keys of the provider (one per project or account), used as one: each call goes to the key that can take it soonest.",
  },
  "pool.clear": { label: "Use the provider settings' key alone (forget the pool)", hint: "" },
  "keyLimits.rpm": {
    label: "Requests per minute per key (0 = none of its own)",
    hint: "Each key's own quota, paced apart from the others (the flow's rate above still holds for all of them).",
  },
  "keyLimits.burst": { label: "Burst per key", hint: "Requests one key may start back to back. 1 = no burst." },
};
const KEY_ID = (flow, part) => `${flow}-${part.replace(".", "-")}`;

const FALLBACK_KIND_LABELS = { none: "None", demo: "Demo provider (offline)", openai: "OpenAI-compatible" };

const PROVIDER_FIELDS = ["kind", "baseUrl", "apiKey", "model"];
const PROVIDER_LABELS = { kind: "Provider", baseUrl: "Base URL", apiKey: "API key", model: "Model" };
const LANGUAGE_LABELS = { sourceLang: "Source language", targetLang: "Target language" };

const $ = (id) => document.getElementById(id);

const form = $("settings-form");
const applyButton = $("apply");
const statusLine = $("status");

let loaded = false;
let busy = false;
let apiKeySet = false;
/** Per flow: whether its fallback provider has a key of its own stored. */
const fallbackKeySet = Object.fromEntries(FLOWS.map((flow) => [flow, false]));
/** Per flow: how many keys its pool has stored. */
const poolKeysSet = Object.fromEntries(FLOWS.map((flow) => [flow, 0]));

// ---------------------------------------------------------------------------------------
// Building the flow sections

function buildFlow(container) {
  const flow = container.dataset.flow;

  const presetSelect = element("select", { id: `${flow}-preset`, name: `${flow}-preset` }, [
    element("option", { value: "", text: "Custom (your own values)" }),
    ...Object.entries(PRESETS).map(([key, preset]) =>
      element("option", { value: key, text: preset.label }),
    ),
  ]);
  const presetField = element("div", { class: "field" }, [
    element("label", { for: `${flow}-preset`, text: "Preset" }),
    presetSelect,
    element("p", { class: "hint", text: "Fills in the fields below; nothing changes until you press Apply." }),
  ]);

  const rpmInput = element("input", {
    id: `${flow}-rpm`,
    name: `${flow}-rpm`,
    type: "number",
    min: "0",
    step: "any",
    inputmode: "decimal",
    "aria-describedby": `${flow}-rpm-result`,
  });
  const rpmField = element("div", { class: "field" }, [
    element("label", { for: `${flow}-rpm`, text: "Requests per minute" }),
    rpmInput,
    element("output", {
      id: `${flow}-rpm-result`,
      class: "rate-result",
      for: `${flow}-rpm`,
      "aria-live": "polite",
    }),
  ]);

  const toolbar = element("div", { class: "toolbar" }, [presetField, rpmField]);

  const grid = element("div", { class: "field-grid" });
  for (const field of FLOW_FIELDS) {
    const info = FIELD_INFO[field];
    const id = `${flow}-${field}`;
    grid.append(
      element("div", { class: "field" }, [
        element("label", { for: id, text: info.label }),
        element("input", {
          id,
          name: id,
          type: "number",
          min: info.min,
          step: info.step,
          inputmode: info.inputMode,
          "data-flow": flow,
          "data-field": field,
          "aria-describedby": `${id}-hint ${id}-error`,
        }),
        element("p", { class: "hint", id: `${id}-hint`, text: info.hint }),
        element("p", { class: "field-error", id: `${id}-error`, role: "alert" }),
      ]),
    );
  }

  const switches = element(
    "div",
    { class: "switches" },
    FLOW_SWITCHES.map((name) => {
      const id = `${flow}-${name}`;
      return element("div", { class: "field switch" }, [
        element("label", { for: id }, [
          element("input", {
            id,
            name: id,
            type: "checkbox",
            "data-flow": flow,
            "data-switch": name,
            "aria-describedby": `${id}-hint ${id}-error`,
          }),
          ` ${SWITCH_INFO[name].label}`,
        ]),
        element("p", { class: "hint", id: `${id}-hint`, text: SWITCH_INFO[name].hint }),
        element("p", { class: "field-error", id: `${id}-error`, role: "alert" }),
      ]);
    }),
  );

  container.append(toolbar, grid, switches, buildFallback(flow), buildKeys(flow));

  presetSelect.addEventListener("change", () => applyPreset(flow, presetSelect.value));
  rpmInput.addEventListener("input", () => {
    syncRateFromRpm(flow);
    updatePresetMatch(flow);
  });
  $(`${flow}-rate`).addEventListener("input", () => syncRpmFromRate(flow));
  for (const field of FLOW_FIELDS) {
    $(`${flow}-${field}`).addEventListener("input", () => updatePresetMatch(flow));
  }
  $(`${flow}-stream`).addEventListener("change", () => updateSwitches(flow));
}

/** The flow's fallback provider: a kind, and for "openai" a model, base URL and key. */
function buildFallback(flow) {
  const id = (part) => `${flow}-fallback-${part}`;
  const describedBy = (part) => `${id(part)}-hint ${id(part)}-error`;
  const field = (part, control) =>
    element("div", { class: "field" }, [
      element("label", { for: id(part), text: FALLBACK_INFO[part].label }),
      control,
      element("p", { class: "hint", id: `${id(part)}-hint`, text: FALLBACK_INFO[part].hint }),
      element("p", { class: "field-error", id: `${id(part)}-error`, role: "alert" }),
    ]);
  const kind = element(
    "select",
    { id: id("kind"), name: id("kind"), "data-flow": flow, "aria-describedby": describedBy("kind") },
    FALLBACK_KINDS.map((value) => element("option", { value, text: FALLBACK_KIND_LABELS[value] })),
  );
  const text = (part, attributes = {}) =>
    element("input", {
      id: id(part),
      name: id(part),
      type: "text",
      spellcheck: "false",
      autocomplete: "off",
      "aria-describedby": describedBy(part),
      ...attributes,
    });
  const endpoint = element("div", { class: "field-grid", id: id("openai") }, [
    field("model", text("model", { placeholder: "gemini-2.5-flash-lite" })),
    field("baseUrl", text("baseUrl", { type: "url", placeholder: "same as the provider settings" })),
    field("apiKey", text("apiKey", { type: "password" })),
  ]);
  const fieldset = element("fieldset", { class: "fallback table-gap", id: id("settings") }, [
    element("legend", { text: "When the provider cannot serve this flow" }),
    element("div", { class: "field-grid" }, [field("kind", kind)]),
    endpoint,
  ]);
  kind.addEventListener("change", () => updateFallbackState(flow));
  return fieldset;
}

/** The flow's pool of keys and each key's own limits (the pacer's `pools` and `providers`). */
function buildKeys(flow) {
  const field = (part, control, extra = []) =>
    element("div", { class: "field" }, [
      element("label", { for: KEY_ID(flow, part), text: KEY_INFO[part].label }),
      control,
      ...extra,
      element("p", { class: "hint", id: `${KEY_ID(flow, part)}-hint`, text: KEY_INFO[part].hint }),
      element("p", { class: "field-error", id: `${KEY_ID(flow, part)}-error`, role: "alert" }),
    ]);
  const describedBy = (part) => `${KEY_ID(flow, part)}-hint ${KEY_ID(flow, part)}-error`;
  const keys = element("textarea", {
    id: KEY_ID(flow, "pool.keys"),
    name: KEY_ID(flow, "pool.keys"),
    rows: "3",
    spellcheck: "false",
    autocomplete: "off",
    "aria-describedby": describedBy("pool.keys"),
  });
  const clear = element("label", { for: KEY_ID(flow, "pool.clear"), class: "switch" }, [
    element("input", { id: KEY_ID(flow, "pool.clear"), name: KEY_ID(flow, "pool.clear"), type: "checkbox" }),
    ` ${KEY_INFO["pool.clear"].label}`,
  ]);
  const number = (part, min, step) =>
    element("input", {
      id: KEY_ID(flow, part),
      name: KEY_ID(flow, part),
      type: "number",
      min,
      step,
      inputmode: "decimal",
      "aria-describedby": describedBy(part),
    });
  return element("fieldset", { class: "keys table-gap", id: `${flow}-keys` }, [
    element("legend", { text: "Keys and their own limits" }),
    element("div", { class: "field-grid" }, [
      field("pool.keys", keys, [clear]),
      field("keyLimits.rpm", number("keyLimits.rpm", "0", "any")),
      field("keyLimits.burst", number("keyLimits.burst", "1", "1")),
    ]),
  ]);
}

/** The pool field shows how many keys are stored, never the keys. */
function updatePoolHint(flow) {
  const stored = poolKeysSet[flow];
  $(`${KEY_ID(flow, "pool.keys")}-hint`).textContent = stored > 0
    ? `${stored} key${stored === 1 ? "" : "s"} stored. Leave the field empty to keep them, or type keys to replace them.`
    : KEY_INFO["pool.keys"].hint;
}

/** The endpoint fields count only for an OpenAI-compatible fallback. */
function updateFallbackState(flow) {
  const openai = $(`${flow}-fallback-kind`).value === "openai";
  $(`${flow}-fallback-openai`).classList.toggle("inactive", !openai);
  $(`${flow}-fallback-apiKey-hint`).textContent = fallbackKeySet[flow]
    ? "A key of its own is stored. Leave the field empty to keep it, or type a new key to replace it."
    : "Empty: the provider settings' key, on their base URL only.";
}

/** Previews need a streamed reply: their switch is off-limits while streaming is off. */
function updateSwitches(flow) {
  $(`${flow}-previews`).disabled = !$(`${flow}-stream`).checked;
}

// ---------------------------------------------------------------------------------------
// Values

/** Removes floating-point noise such as 0.30000000000000004. */
const tidy = (x) => Number(x.toPrecision(12));

/** Short display form of a number. */
const short = (x) => String(Number(x.toPrecision(4)));

/**
 * A number when the field holds a valid number; otherwise its raw text (usually ""),
 * which the background's validation reports with the package's own message.
 */
function readNumber(input) {
  const raw = input.value.trim();
  if (raw !== "") {
    const value = Number(raw);
    if (Number.isFinite(value)) return value;
  }
  return input.value;
}

function writeValue(input, value) {
  input.value = value === undefined || value === null ? "" : String(value);
}

function describeRate(rate) {
  if (typeof rate !== "number" || !(rate > 0)) return "Enter a number above 0.";
  const perSecond = `${short(rate)} request${rate === 1 ? "" : "s"} per second`;
  if (rate < 1) return `= ${perSecond} (one every ${short(1 / rate)} s)`;
  return `= ${perSecond}`;
}

function syncRpmFromRate(flow) {
  const rate = readNumber($(`${flow}-rate`));
  writeValue($(`${flow}-rpm`), typeof rate === "number" ? tidy(rate * 60) : "");
  $(`${flow}-rpm-result`).textContent = describeRate(rate);
}

function syncRateFromRpm(flow) {
  const rpm = readNumber($(`${flow}-rpm`));
  if (typeof rpm !== "number") {
    $(`${flow}-rpm-result`).textContent = "Enter the number of requests per minute.";
    return;
  }
  const rate = tidy(rpm / 60);
  writeValue($(`${flow}-rate`), rate);
  $(`${flow}-rpm-result`).textContent = describeRate(rate);
}

function applyPreset(flow, key) {
  const preset = Object.hasOwn(PRESETS, key) ? PRESETS[key] : null;
  if (!preset) return;
  for (const field of FLOW_FIELDS) {
    const value = preset.values[field];
    if (value === null || value === undefined) continue; // `rate: null` keeps the current rate
    writeValue($(`${flow}-${field}`), value);
  }
  syncRpmFromRate(flow);
  markDirty(`“${preset.label}” filled in for ${FLOW_TITLES[flow]} — press Apply to make it live.`);
}

/** Shows the preset the fields match, or "Custom". */
function updatePresetMatch(flow) {
  const values = Object.fromEntries(FLOW_FIELDS.map((f) => [f, readNumber($(`${flow}-${f}`))]));
  const match = Object.entries(PRESETS).find(([, preset]) =>
    FLOW_FIELDS.every((f) => preset.values[f] === null || preset.values[f] === values[f]),
  );
  $(`${flow}-preset`).value = match ? match[0] : "";
}

function updateProviderState() {
  const demo = $("provider-kind").value !== "openai";
  $("openai-settings").classList.toggle("inactive", demo);
  $("openai-settings-note").textContent = demo
    ? "Used only with the OpenAI-compatible provider."
    : "Any endpoint that speaks the OpenAI chat-completions API.";
}

function updateKeyHint() {
  $("provider-apiKey-hint").textContent = apiKeySet
    ? "A key is stored. Leave the field empty to keep it, or type a new key to replace it."
    : "No key stored yet.";
}

/** The settings as the form holds them, in the shape of the protocol. */
function collect() {
  const settings = {};
  for (const flow of FLOWS) {
    settings[flow] = Object.fromEntries(
      FLOW_FIELDS.map((field) => [field, readNumber($(`${flow}-${field}`))]),
    );
    for (const name of FLOW_SWITCHES) settings[flow][name] = $(`${flow}-${name}`).checked;
    settings[flow].fallback = {
      kind: $(`${flow}-fallback-kind`).value,
      baseUrl: $(`${flow}-fallback-baseUrl`).value.trim(),
      apiKey: $(`${flow}-fallback-apiKey`).value, // empty keeps the stored key
      model: $(`${flow}-fallback-model`).value.trim(),
    };
    settings[flow].pool = {
      // Empty keeps the stored keys.
      keys: $(KEY_ID(flow, "pool.keys")).value.split("\n").map((key) => key.trim()).filter((key) => key !== ""),
      clear: $(KEY_ID(flow, "pool.clear")).checked,
    };
    settings[flow].keyLimits = {
      rpm: readNumber($(KEY_ID(flow, "keyLimits.rpm"))),
      burst: readNumber($(KEY_ID(flow, "keyLimits.burst"))),
    };
  }
  settings.provider = {
    kind: $("provider-kind").value,
    baseUrl: $("provider-baseUrl").value.trim(),
    apiKey: $("provider-apiKey").value, // empty keeps the stored key
    model: $("provider-model").value.trim(),
  };
  settings.sourceLang = $("sourceLang").value.trim();
  settings.targetLang = $("targetLang").value.trim();
  return settings;
}

function render(settings) {
  for (const flow of FLOWS) {
    const values = { ...DEFAULT_SETTINGS[flow], ...(settings?.[flow] ?? {}) };
    for (const field of FLOW_FIELDS) writeValue($(`${flow}-${field}`), values[field]);
    for (const name of FLOW_SWITCHES) $(`${flow}-${name}`).checked = values[name] === true;
    const fallback = { ...DEFAULT_SETTINGS[flow].fallback, ...(settings?.[flow]?.fallback ?? {}) };
    $(`${flow}-fallback-kind`).value = FALLBACK_KINDS.includes(fallback.kind) ? fallback.kind : "none";
    writeValue($(`${flow}-fallback-model`), fallback.model);
    writeValue($(`${flow}-fallback-baseUrl`), fallback.baseUrl);
    $(`${flow}-fallback-apiKey`).value = "";
    fallbackKeySet[flow] = Boolean(fallback.apiKeySet);
    updateFallbackState(flow);
    $(KEY_ID(flow, "pool.keys")).value = "";
    $(KEY_ID(flow, "pool.clear")).checked = false;
    poolKeysSet[flow] = Number(settings?.[flow]?.pool?.keysSet) || 0;
    updatePoolHint(flow);
    const keyLimits = { ...NO_KEY_LIMITS, ...(settings?.[flow]?.keyLimits ?? {}) };
    writeValue($(KEY_ID(flow, "keyLimits.rpm")), keyLimits.rpm);
    writeValue($(KEY_ID(flow, "keyLimits.burst")), keyLimits.burst);
    updateSwitches(flow);
    syncRpmFromRate(flow);
    updatePresetMatch(flow);
  }
  const provider = { ...DEFAULT_SETTINGS.provider, ...(settings?.provider ?? {}) };
  $("provider-kind").value = provider.kind === "openai" ? "openai" : "demo";
  writeValue($("provider-baseUrl"), provider.baseUrl);
  writeValue($("provider-model"), provider.model);
  $("provider-apiKey").value = "";
  apiKeySet = Boolean(provider.apiKeySet ?? settings?.apiKeySet);
  updateKeyHint();
  updateProviderState();
  writeValue($("sourceLang"), settings?.sourceLang ?? DEFAULT_SETTINGS.sourceLang);
  writeValue($("targetLang"), settings?.targetLang ?? DEFAULT_SETTINGS.targetLang);
}

// ---------------------------------------------------------------------------------------
// Status and errors

function setStatus(text, state) {
  statusLine.textContent = text;
  if (state) statusLine.dataset.state = state;
  else delete statusLine.dataset.state;
}

function markDirty(text = "Changes not applied yet — press Apply to make them live.") {
  if (loaded && !busy) setStatus(text, null);
}

function clearErrors() {
  for (const node of document.querySelectorAll(".field-error")) node.textContent = "";
  for (const node of document.querySelectorAll('[aria-invalid="true"]')) {
    node.removeAttribute("aria-invalid");
  }
}

/** The id of the input an error is about, and a readable name for it; null if none. */
function errorTarget(error) {
  const { flow, field } = error ?? {};
  if (FLOWS.includes(flow) && FLOW_FIELDS.includes(field)) {
    return { id: `${flow}-${field}`, name: `${FLOW_TITLES[flow]} › ${FIELD_INFO[field].label}` };
  }
  if (FLOWS.includes(flow) && FLOW_SWITCHES.includes(field)) {
    return { id: `${flow}-${field}`, name: `${FLOW_TITLES[flow]} › ${SWITCH_INFO[field].label}` };
  }
  const fallbackPart = typeof field === "string" && field.startsWith("fallback.") ? field.slice("fallback.".length) : null;
  if (FLOWS.includes(flow) && Object.hasOwn(FALLBACK_INFO, fallbackPart)) {
    return { id: `${flow}-fallback-${fallbackPart}`, name: `${FLOW_TITLES[flow]} › ${FALLBACK_INFO[fallbackPart].label}` };
  }
  if (FLOWS.includes(flow) && Object.hasOwn(KEY_INFO, field)) {
    return { id: KEY_ID(flow, field), name: `${FLOW_TITLES[flow]} › ${KEY_INFO[field].label}` };
  }
  if (Object.hasOwn(LANGUAGE_LABELS, field)) {
    return { id: field, name: LANGUAGE_LABELS[field] };
  }
  let providerField = typeof field === "string" ? field.replace(/^provider\./, "") : field;
  if (flow === "provider" && !providerField && typeof error.message === "string") {
    // The package's messages start with the option's name: "baseUrl must be ...".
    providerField = PROVIDER_FIELDS.find((name) => error.message.startsWith(`${name} `));
  }
  if ((flow === undefined || flow === null || flow === "provider") && PROVIDER_FIELDS.includes(providerField)) {
    return { id: `provider-${providerField}`, name: `Provider › ${PROVIDER_LABELS[providerField]}` };
  }
  return null;
}

function showError(error) {
  const message =
    typeof error?.message === "string" && error.message !== ""
      ? error.message
      : `the settings were refused (${error?.code ?? "unknown error"})`;
  const target = errorTarget(error);
  if (target) {
    const input = $(target.id);
    const slot = $(`${target.id}-error`);
    if (slot) slot.textContent = message;
    if (input) {
      input.setAttribute("aria-invalid", "true");
      if (target.id.endsWith("-rate")) $(target.id.replace(/-rate$/, "-rpm"))?.setAttribute("aria-invalid", "true");
      input.focus({ preventScroll: true });
      input.scrollIntoView({ block: "center", behavior: "smooth" });
    }
    setStatus(`Not applied: ${message} (${target.name})`, "error");
  } else {
    setStatus(`Not applied: ${message}`, "error");
  }
}

// ---------------------------------------------------------------------------------------
// Loading and applying

async function apply() {
  if (busy || !loaded) return;
  busy = true;
  applyButton.disabled = true;
  clearErrors();
  setStatus("Applying…", null);
  const settings = collect();
  try {
    let response;
    try {
      response = await send({ type: MESSAGES.setSettings, settings });
    } catch (error) {
      setStatus(`Not applied: could not reach the extension's background (${describeFailure(error)}).`, "error");
      return;
    }
    if (response?.ok) {
      const fallback = {
        ...settings,
        provider: { ...settings.provider, apiKey: "", apiKeySet: apiKeySet || settings.provider.apiKey !== "" },
      };
      render(response.settings ?? fallback);
      setStatus("Applied — new settings are live", "ok");
      refreshBlock();
    } else if (response && response.ok === false) {
      showError(response.error);
    } else {
      setStatus("Not applied: the extension's background gave no answer.", "error");
    }
  } finally {
    busy = false;
    applyButton.disabled = false;
  }
}

async function load() {
  let response;
  let failure;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      response = await send({ type: MESSAGES.getSettings });
      if (response?.ok) break;
      failure = response?.error?.message ?? "no answer";
    } catch (error) {
      failure = describeFailure(error);
    }
    // A background that is just starting may miss the first message: try once more.
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (!response?.ok) {
    setStatus(`Could not load the settings: ${failure}. Reload the page to try again.`, "error");
    return;
  }
  render(response.settings);
  loaded = true;
  applyButton.disabled = false;
  setStatus("Showing the settings in use.", null);
  document.documentElement.dataset.settingsLoaded = "1";
}

// The provider's block (a wrong key, model or address; no credit; a spent daily quota),
// from the pacers' `blocked` events: shown next to the provider settings until it ends.
const BLOCK_POLL_MS = 2000;
const BLOCK_TITLES = {
  settings: "The provider refused the settings",
  billing: "The provider's account is out of credit",
  daily: "The provider's daily quota is spent",
};

function showBlock(blocked) {
  const slot = $("provider-blocked");
  if (!blocked) {
    slot.textContent = "";
    delete slot.dataset.reason;
    return;
  }
  const title = BLOCK_TITLES[blocked.reason] ?? "The provider is blocked";
  const status = typeof blocked.status === "number" ? ` (HTTP ${blocked.status})` : "";
  const when = typeof blocked.retryAt === "number" ? new Date(blocked.retryAt).toLocaleString() : null;
  const flowTitle = FLOW_TITLES[blocked.flow] ?? blocked.flow;
  const until = blocked.fallbackTo
    ? ` ${flowTitle}: its items go to the fallback provider ${blocked.fallbackTo}${when ? ` until ${when}` : ""}.`
    : when
      ? ` Items for it fail until ${when}.`
      : "";
  slot.textContent = `${title}${status}: ${blocked.message}${until}`;
  slot.dataset.reason = blocked.reason;
}

async function refreshBlock() {
  try {
    const response = await send({ type: MESSAGES.getProviderStatus });
    if (response?.ok) showBlock(response.blocked);
  } catch {
    // The background is restarting: the next poll asks again.
  }
}

for (const container of document.querySelectorAll(".flow-fields")) buildFlow(container);
updateProviderState();
updateKeyHint();

$("provider-kind").addEventListener("change", updateProviderState);
// Selects fire "input" too; a preset then replaces this note with its own.
form.addEventListener("input", () => markDirty());
form.addEventListener("submit", (event) => {
  event.preventDefault();
  apply();
});

load();
refreshBlock();
setInterval(refreshBlock, BLOCK_POLL_MS);
