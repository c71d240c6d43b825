// A provider for DeepL's text translation API (`POST /v2/translate`), the Free and the
// Pro plans alike. DeepL takes an array of texts in one request and answers them in
// order, so the provider sends every text of `request.texts` and returns one string per
// text: a single request and an array batch (`format: "array"`) are sent the same way.
//
// Like openAIProvider, the module imports only the package's own small modules, has no
// top-level await and touches no `window`, and the key follows the secrecy rule of
// provider-http.js: it appears in no error this provider throws.

import {
  REASONS,
  describe,
  excerpt,
  invalid,
  isHttpUrl,
  keySecrets,
  postJson,
  readBody,
} from "./provider-http.js";
import { retryAfterFromHeaders } from "./limits-from-headers.js";

/** Every option `deeplProvider` takes: any other name is a typo, refused. */
const OPTION_NAMES = ["apiKey", "fetch", "baseUrl"];

/** The hosts of DeepL's two plans; a Free plan's keys end in ":fx". */
const FREE_HOST = "https://api-free.deepl.com";
const PRO_HOST = "https://api.deepl.com";

/** How this provider names the API in the errors it reports. */
const SERVICE = "DeepL API";

/** DeepL's status for a spent character quota (Free plan) or Cost Control limit (Pro). */
const QUOTA_EXCEEDED = 456;

/**
 * DeepL's codes for Chinese by script, for the region codes that pages and browsers
 * use for Chinese ("zh-CN", "zh_TW"): DeepL knows only the scripts.
 */
const CHINESE_SCRIPTS = {
  "ZH-CN": "ZH-HANS",
  "ZH-SG": "ZH-HANS",
  "ZH-TW": "ZH-HANT",
  "ZH-HK": "ZH-HANT",
  "ZH-MO": "ZH-HANT",
};

/**
 * Creates a provider for `BatchPacer` that translates with DeepL.
 *
 * @param {object} options
 * @param {string} options.apiKey the DeepL authentication key, sent as
 *   `Authorization: DeepL-Auth-Key <apiKey>`
 * @param {typeof fetch} [options.fetch] default: `globalThis.fetch`, looked up at each call
 * @param {string} [options.baseUrl] default: `https://api-free.deepl.com` for a key that
 *   ends in ":fx" (the Free plan's keys), else `https://api.deepl.com`
 * @returns {(request: object) => Promise<string[]>} one translation per text, in order
 * @throws {PacerError} code `invalid_options` when an option is invalid or unknown
 */
export function deeplProvider(options) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw invalid(undefined, `deeplProvider options must be an object (got ${describe(options)})`);
  }
  // The names only: a misspelt `apikey` holds a key, whose value must not be printed.
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) {
      throw invalid(name, `deeplProvider has no option ${JSON.stringify(name)} (options: ${OPTION_NAMES.join(", ")})`);
    }
  }
  const { apiKey, fetch: fetchOption, baseUrl } = options;

  // The key's value is never printed, not even when it has the wrong type.
  if (typeof apiKey !== "string" || apiKey.trim() === "") {
    throw invalid("apiKey", "apiKey must be a non-empty string: the DeepL authentication key (got <redacted>)");
  }
  // Keys pasted from a settings page often carry a trailing newline: trim it. Any other
  // control or non-ASCII character is refused now, because fetch would reject the header
  // later with an error message that quotes the key.
  const key = apiKey.trim();
  if (!/^[\x21-\x7e]+$/.test(key)) {
    throw invalid("apiKey", "apiKey must contain only visible ASCII characters (got <redacted>)");
  }
  if (fetchOption !== undefined && typeof fetchOption !== "function") {
    throw invalid("fetch", `fetch must be a function if given (got ${describe(fetchOption)})`);
  }
  if (baseUrl !== undefined && (typeof baseUrl !== "string" || !isHttpUrl(baseUrl))) {
    throw invalid("baseUrl", `baseUrl must be an http(s) URL string if given (got ${describe(baseUrl)})`);
  }

  const { secrets, redact } = keySecrets(apiKey, key);
  const host = baseUrl ?? (key.endsWith(":fx") ? FREE_HOST : PRO_HOST);
  const url = `${host.replace(/\/+$/, "")}/v2/translate`;
  const headers = { "Content-Type": "application/json", Authorization: `DeepL-Auth-Key ${key}` };

  return async function deeplTranslate(request) {
    const signal = request.signal;
    const body = { text: Array.isArray(request.texts) ? request.texts : [], target_lang: targetLang(request.targetLang) };
    const source = sourceLang(request.sourceLang);
    if (source !== undefined) body.source_lang = source;

    const response = await postJson({ fetchOption, url, headers, body, signal, redact, secrets, service: SERVICE });
    const raw = await readBody(response, signal, url, redact, secrets, SERVICE);
    if (!response.ok) throw httpError(response, raw, redact);

    let data;
    try {
      data = JSON.parse(raw);
    } catch {
      const shown = excerpt(raw, redact) || "(empty)";
      throw new Error(`${SERVICE} answered ${response.status} with a body that is not JSON: ${shown}`);
    }
    const translations = data?.translations;
    if (!Array.isArray(translations) || !translations.every((t) => typeof t?.text === "string")) {
      throw new Error(`${SERVICE} answered ${response.status} without a text in each of translations[]`);
    }
    // One per text as DeepL answered them: an answer of another length is the pacer's
    // count mismatch, not something to guess around here.
    return translations.map((t) => t.text);
  };
}

/**
 * DeepL's `target_lang` for an item's `targetLang`: upper case, "_" read as "-" ("en-us"
 * and "en_US" are "EN-US", "pt-BR" is "PT-BR"), and Chinese by region as Chinese by
 * script ("zh-CN" is "ZH-HANS", "zh-TW" is "ZH-HANT"). Other codes go as written, so an
 * item names DeepL's own variants where DeepL has them ("en-GB", "en-US").
 */
function targetLang(lang) {
  const code = String(lang ?? "").trim().replaceAll("_", "-").toUpperCase();
  return CHINESE_SCRIPTS[code] ?? code;
}

/**
 * DeepL's `source_lang` for an item's `sourceLang`: the language without its region or
 * script, upper case ("en-US" is "EN", "zh-Hant" is "ZH"), since DeepL's source languages
 * have no variants; undefined (DeepL detects the language) for "auto" or no language.
 */
function sourceLang(lang) {
  const code = String(lang ?? "").trim();
  if (code === "" || /^auto$/i.test(code)) return undefined;
  return code.split(/[-_]/)[0].toUpperCase();
}

/**
 * The error for an HTTP error status, shaped as the pacer reads it: `status` always;
 * `retryAfterMs` from `Retry-After`; `quota: "billing"` for 456; a message with the
 * status and DeepL's own words (its `message` and `detail`, or the body as text).
 */
function httpError(response, raw, redact) {
  const status = Number(response.status);
  const reason = String(response.statusText || REASONS[status] || "").trim();
  const words = errorWords(raw) || raw;
  const detail = excerpt(words, redact);
  const error = new Error(
    `${SERVICE} answered ${status}${reason ? ` ${redact(reason)}` : ""}${detail ? `: ${detail}` : ""}`,
  );
  error.status = status;
  const retryAfterMs = retryAfterFromHeaders(response.headers);
  if (retryAfterMs !== undefined) error.retryAfterMs = retryAfterMs;
  if (status === QUOTA_EXCEEDED) error.quota = "billing";
  return error;
}

/** The `message` and `detail` of DeepL's JSON error body, "" for any other body. */
function errorWords(raw) {
  let data;
  try {
    data = JSON.parse(raw);
  } catch {
    return "";
  }
  if (data === null || typeof data !== "object") return "";
  return [data.message, data.detail].filter((part) => typeof part === "string" && part.trim() !== "").join(": ");
}
