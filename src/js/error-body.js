// What an API's error body says, where more than one part of the package reads it: the
// body itself as an object (OpenAI's `{ error }`, Gemini's `[{ error }]`), Google's
// `details`, and the wait a Google `RetryInfo` asks for. openAIProvider reads its error
// responses with them; the pacer reads the AI SDK's `responseBody` with `retryDelayFromBody`.

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
