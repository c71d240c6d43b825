// What an API's error body says, where more than one part of the package reads it: the
// body itself as an object (OpenAI's `{ error }`, Gemini's `[{ error }]`), Google's
// `details`, the wait a Google `RetryInfo` asks for, and the quota the error is about.
// openAIProvider reads its error responses with them; the pacer reads the AI SDK's
// `responseBody` with `retryDelayFromBody` and `quotaFromBody`.

import { parseDuration } from "./limits-from-headers.js";
import { toWholeMs } from "./retry-after.js";

/** An error body as a plain object: OpenAI's `{ error }`, or Gemini's `[{ error }]`. */
export function errorBody(raw) {
  let data;
  try {
    data = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (Array.isArray(data)) data = data.find((entry) => entry !== null && typeof entry === "object");
  return data !== null && typeof data === "object" ? data : undefined;
}

/** The `details` of a Google-style error (`google.rpc.Status`), or []. */
export function errorDetails(body) {
  const details = body?.error?.details;
  return Array.isArray(details) ? details.filter((d) => d !== null && typeof d === "object") : [];
}

/** Gemini's wait: the `retryDelay` of a `google.rpc.RetryInfo` in the error body. */
export function bodyRetryDelay(body) {
  for (const detail of errorDetails(body)) {
    if (!String(detail["@type"] ?? "").endsWith("google.rpc.RetryInfo")) continue;
    const delay = detail.retryDelay;
    if (typeof delay === "string") {
      const ms = parseDuration(delay);
      if (ms !== undefined) return ms;
    } else if (delay !== null && typeof delay === "object") {
      // The protobuf message itself, as some clients and proxies re-encode it.
      const seconds = Number(delay.seconds ?? 0);
      const nanos = Number(delay.nanos ?? 0);
      const ms = toWholeMs(seconds * 1000 + nanos / 1e6);
      if (ms !== undefined) return ms;
    }
  }
  return undefined;
}

/**
 * Which quota an error reports: "billing" for OpenAI's `insufficient_quota` (by code or
 * type, never by message: Gemini's per-minute messages also say "check your plan and
 * billing details") and for 402 (OpenRouter's and DeepSeek's "insufficient credits");
 * "daily" for a Gemini QuotaFailure whose quotaId counts per day, or an OpenAI or Groq
 * 429 "on requests per day (RPD)" / "tokens per day (TPD)"; "rate" for any other 429.
 */
export function quotaOf(status, body) {
  const fields = errorFields(body);
  if (status === 402 || fields.includes("insufficient_quota")) return "billing";
  if (status !== 429) return undefined;
  for (const detail of errorDetails(body)) {
    if (!String(detail["@type"] ?? "").endsWith("google.rpc.QuotaFailure")) continue;
    const violations = Array.isArray(detail.violations) ? detail.violations : [];
    if (violations.some((v) => /PerDay/.test(String(v?.quotaId ?? "")))) return "daily";
  }
  if (/\b(?:requests|tokens) per day\b/i.test(errorDetail(body))) return "daily";
  return "rate";
}

/** A body's error `code` and `type`, where it has them. */
export function errorFields(body) {
  const error = body?.error;
  return error !== null && typeof error === "object" ? [error.code, error.type] : [];
}

/** The human-readable message inside an OpenAI-style error body, if any. */
export function errorDetail(data) {
  if (data === null || typeof data !== "object") return "";
  const { error } = data;
  if (typeof error === "string") return error;
  if (error && typeof error === "object" && typeof error.message === "string") return error.message;
  if (typeof data.message === "string") return data.message;
  return "";
}

/**
 * The wait in an error body's text (Gemini's `RetryInfo`), in milliseconds, or undefined.
 * Never throws.
 * @param {unknown} raw the body as the server sent it
 */
export function retryDelayFromBody(raw) {
  if (typeof raw !== "string" || raw === "") return undefined;
  try {
    return bodyRetryDelay(errorBody(raw));
  } catch {
    return undefined;
  }
}

/**
 * The quota an error body reports for `status` (see `quotaOf`), from the body's text, or
 * undefined. Never throws.
 * @param {unknown} status
 * @param {unknown} raw the body as the server sent it
 */
export function quotaFromBody(status, raw) {
  if (typeof status !== "number" || typeof raw !== "string" || raw === "") return undefined;
  try {
    return quotaOf(status, errorBody(raw));
  } catch {
    return undefined;
  }
}
