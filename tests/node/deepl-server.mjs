// A local server on 127.0.0.1 that speaks DeepL's documented text translation API, for
// the deeplProvider tests: `POST /v2/translate` with a JSON body `{ text: [...],
// target_lang, source_lang? }` and the header `Authorization: DeepL-Auth-Key <key>`,
// answered with `{ translations: [{ detected_source_language, text }] }` in the order of
// `text`. Its errors are DeepL's: 403 for a missing or wrong key, 400 for a malformed
// request, 429 (with Retry-After when the test gives one) and 456 (the character quota
// of the billing period is spent), each with a JSON body `{ message }`.

import http from "node:http";

/**
 * Starts the server for the key `key`. `translate(text, targetLang, sourceLang)` gives
 * each translation (by default `[<TARGET>] <text>`). `fail(status, { retryAfter, body,
 * contentType })` makes the next request answer that error instead; `requests` records
 * the method, url, headers and parsed JSON body of every request.
 */
export async function startDeepLServer(t, { key, translate = (text, target) => `[${target}] ${text}` }) {
  const requests = [];
  const failures = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      let json;
      try {
        json = JSON.parse(raw);
      } catch {
        json = undefined;
      }
      const record = { method: req.method, url: req.url, headers: req.headers, json };
      requests.push(record);
      answer(record, res);
    });
  });

  function answer(record, res) {
    if (record.method !== "POST" || record.url !== "/v2/translate") {
      return sendJson(res, 404, { message: "Not found" });
    }
    if (record.headers.authorization !== `DeepL-Auth-Key ${key}`) {
      return sendJson(res, 403, { message: "Authorization failure, check auth_key" });
    }
    const failure = failures.shift();
    if (failure !== undefined) {
      const headers = failure.retryAfter === undefined ? {} : { "Retry-After": failure.retryAfter };
      res.writeHead(failure.status, { "Content-Type": failure.contentType ?? "application/json", ...headers });
      return res.end(failure.body ?? JSON.stringify({ message: MESSAGES[failure.status] ?? "Error" }));
    }
    if (!String(record.headers["content-type"]).startsWith("application/json")) {
      return sendJson(res, 400, { message: "Bad request", detail: "Content-Type must be application/json" });
    }
    const { text, target_lang: target, source_lang: source } = record.json ?? {};
    if (!Array.isArray(text) || text.length === 0 || !text.every((x) => typeof x === "string")) {
      return sendJson(res, 400, { message: "Bad request", detail: "Parameter 'text' must be an array of strings" });
    }
    if (text.length > 50) {
      return sendJson(res, 413, { message: "Request Entity Too Large", detail: "At most 50 texts per request" });
    }
    if (typeof target !== "string" || !/^[A-Z]{2,3}(-[A-Z0-9]+)?$/.test(target)) {
      return sendJson(res, 400, { message: "Value for 'target_lang' not supported." });
    }
    if (source !== undefined && (typeof source !== "string" || !/^[A-Z]{2,3}$/.test(source))) {
      return sendJson(res, 400, { message: "Value for 'source_lang' not supported." });
    }
    sendJson(res, 200, {
      translations: text.map((x) => ({ detected_source_language: source ?? "EN", text: translate(x, target, source) })),
    });
  }

  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  t.after(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    fail: (status, options = {}) => failures.push({ status, ...options }),
  };
}

const MESSAGES = {
  413: "Request Entity Too Large",
  429: "Too many requests",
  456: "Quota exceeded",
  500: "Internal server error",
};

function sendJson(res, status, value) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(value));
}
