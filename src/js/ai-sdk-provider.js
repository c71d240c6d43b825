// A provider that calls the Vercel AI SDK (`ai`, with any `@ai-sdk/*` model) through the
// `generateText` or `streamText` function the user passes in: the package never imports
// `ai`, so it is no dependency and any version from 5 on works.
//
// The SDK names the system prompt `instructions` from ai 7 on and `system` before; ai 7
// still reads `system` when `instructions` is absent, and ai 5 and 6 ignore
// `instructions`. Each call sends the same text under both names, so that no version has
// to be detected (the `ai` module has no version marker on its functions, and a model
// object of one specification version is accepted by several `ai` majors).

import { limitsFromHeaders } from "./limits-from-headers.js";
import { describe, invalid } from "./provider-http.js";
import { temperatureFor } from "./retry-temperature.js";
import { contextParagraphs, translatorOpening } from "./translator-prompt.js";

/** Every option `aiSdkProvider` takes: any other name is a typo, refused. */
const OPTION_NAMES = [
  "model",
  "generateText",
  "streamText",
  "stream",
  "system",
  "temperature",
  "providerOptions",
  "headers",
  "prompt",
];

/**
 * A provider that calls `generateText` (or, with `stream: true`, `streamText`) of the AI
 * SDK for each call; see js/index.d.ts.
 * @param {object} options
 */
export function aiSdkProvider(options) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw invalid(undefined, `aiSdkProvider options must be an object (got ${describe(options)})`);
  }
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) {
      throw invalid(name, `aiSdkProvider has no option ${JSON.stringify(name)} (options: ${OPTION_NAMES.join(", ")})`);
    }
  }
  const { model, generateText, streamText, stream = false, system, temperature = 0, providerOptions, headers, prompt } =
    options;
  if (typeof stream !== "boolean") {
    throw invalid("stream", `stream must be a boolean (got ${describe(stream)})`);
  }
  if (model === undefined || model === null || model === "") {
    throw invalid(
      "model",
      `aiSdkProvider needs a model: a model of an @ai-sdk provider (or an id the SDK resolves), or a function of the request that returns one (got ${describe(model)})`,
    );
  }
  const call = stream ? streamText : generateText;
  const callName = stream ? "streamText" : "generateText";
  if (typeof call !== "function") {
    throw invalid(
      callName,
      `aiSdkProvider${stream ? " with stream: true" : ""} needs ${callName}: pass the function imported from "ai" (got ${describe(call)})`,
    );
  }
  if (system !== undefined && typeof system !== "string" && typeof system !== "function") {
    throw invalid("system", `system must be a string or a function of the request if given (got ${describe(system)})`);
  }
  if (prompt !== undefined && typeof prompt !== "function") {
    throw invalid(
      "prompt",
      `prompt must be a function of the request that returns the user prompt, if given (got ${describe(prompt)}); without it the prompt is request.text`,
    );
  }
  if (temperature !== undefined && !(typeof temperature === "number" && Number.isFinite(temperature) && temperature >= 0)) {
    throw invalid("temperature", `temperature must be a finite number >= 0 (got ${describe(temperature)})`);
  }
  for (const [name, value] of [
    ["providerOptions", providerOptions],
    ["headers", headers],
  ]) {
    if (value !== undefined && (value === null || typeof value !== "object" || Array.isArray(value))) {
      throw invalid(name, `${name} must be an object if given (got ${describe(value)})`);
    }
  }

  return async function aiSdkCallProvider(request) {
    const settings = {
      model: typeof model === "function" ? await model(request) : model,
      prompt: prompt === undefined ? request.text : await prompt(request),
      abortSignal: request.signal,
      // The pacer retries, with its pauses and smaller batches: the SDK's own retries
      // would hide 429s from it and spend the quota twice.
      maxRetries: 0,
    };
    if (settings.model === undefined || settings.model === null) {
      throw configurationError("model(request) returned no model");
    }
    if (typeof settings.prompt !== "string") {
      throw configurationError(`prompt(request) returned ${describe(settings.prompt)}, not a string`);
    }
    const instructions = systemFor(typeof system === "function" ? await system(request) : system, request);
    if (instructions !== "") {
      settings.instructions = instructions;
      settings.system = instructions;
    }
    const bound = request.maxOutputTokens;
    // The SDK takes whole numbers only.
    if (typeof bound === "number" && Number.isFinite(bound) && bound > 0) settings.maxOutputTokens = Math.ceil(bound);
    // 0, as openAIProvider's: the same page gets the same answer, and a batch's retries
    // are raised from there (a model the SDK knows takes none drops it with a warning).
    settings.temperature = temperatureFor(temperature, request);
    if (providerOptions !== undefined) settings.providerOptions = providerOptions;
    if (headers !== undefined) settings.headers = headers;
    if (stream) {
      // The stream reports its errors as parts (read below): the SDK's default handler
      // would also print each one, which the pacer already reports.
      settings.onError = ignore;
      return streamedReply(await streamText(settings));
    }
    return wholeReply(await generateText(settings));
  };
}

/**
 * The system prompt of one call: the user's `system` (or, without one, or when its
 * function returns undefined, a translator's opening and the context), with
 * `request.instructions` appended; "" when all are empty.
 */
function systemFor(system, request) {
  let base = system;
  if (system === undefined) {
    const context = typeof request.context === "string" ? request.context.trim() : "";
    base = [
      ...translatorOpening(String(request.sourceLang ?? ""), String(request.targetLang ?? "")),
      ...contextParagraphs(context),
    ].join("\n\n");
  }
  if (base === null) base = "";
  if (typeof base !== "string") throw configurationError(`system(request) returned ${describe(base)}, not a string`);
  const instructions = typeof request.instructions === "string" ? request.instructions.trim() : "";
  return [base.trim(), instructions].filter((part) => part !== "").join("\n\n");
}

/** `generateText`'s result as a reply: the text, with usage, limits and truncation. */
function wholeReply(result) {
  const text = result?.text;
  if (typeof text !== "string") {
    throw new Error(`aiSdkProvider: generateText resolved without a text (got ${describe(text)})`);
  }
  const report = reportOf(result.usage, result.response?.headers, result.finishReason);
  return Object.keys(report).length === 0 ? text : { translations: text, ...report };
}

/**
 * `streamText`'s result as a stream of the reply: the text pieces of its full stream, then
 * one `{ usage, limits, truncated }` report. An error part is thrown, so that a 429 met
 * after the stream opened is read as a 429; reasoning parts are no text.
 */
async function* streamedReply(result) {
  let usage;
  let finishReason;
  for await (const part of result.fullStream) {
    switch (part?.type) {
      case "text-delta": {
        // `text` from ai 5 on; `textDelta` before.
        const piece = part.text ?? part.textDelta;
        if (typeof piece === "string" && piece !== "") yield piece;
        break;
      }
      case "error":
        throw part.error;
      case "abort":
        throw abortError();
      case "finish":
        usage = part.totalUsage ?? part.usage;
        finishReason = part.finishReason;
        break;
      default:
        break;
    }
  }
  let headers;
  try {
    headers = (await result.response)?.headers;
  } catch {
    // The reply is complete without them: only the limits are missing then.
  }
  const report = reportOf(usage, headers, finishReason);
  if (Object.keys(report).length > 0) yield report;
}

/** `{ usage, limits, truncated }`, each only when known. */
function reportOf(sdkUsage, headers, finishReason) {
  const report = {};
  const usage = usageOf(sdkUsage);
  if (usage !== undefined) report.usage = usage;
  const limits = limitsFromHeaders(headers);
  if (limits !== undefined) report.limits = limits;
  // The model stopped at its output limit: the pacer keeps the segments the text proves.
  if (finishReason === "length") report.truncated = true;
  return report;
}

/** The SDK's usage as the pacer reads it; undefined when it counted nothing. */
function usageOf(usage) {
  if (usage === null || typeof usage !== "object") return undefined;
  const out = {};
  const count = (value) => typeof value === "number" && Number.isFinite(value) && value >= 0;
  if (count(usage.inputTokens)) out.inputTokens = usage.inputTokens;
  if (count(usage.outputTokens)) out.outputTokens = usage.outputTokens;
  return Object.keys(out).length > 0 ? out : undefined;
}

function ignore() {}

/** The error of a stream the SDK reports as aborted. */
function abortError() {
  const error = new Error("aiSdkProvider: the stream was aborted");
  error.name = "AbortError";
  return error;
}

/** A call that the same settings would fail again: never retried. */
function configurationError(what) {
  const error = new Error(`aiSdkProvider: ${what}`);
  error.retryable = false;
  return error;
}
