// A chat-completions server on 127.0.0.1 for the openAIProvider tests: it records every
// request and lets the test answer it.

import http from "node:http";

/**
 * Starts a chat-completions server. `handler(record, res)` answers each request;
 * `record` holds the method, url, headers and parsed JSON body the server received.
 */
export async function startServer(t, handler) {
  const requests = [];
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
      const record = { method: req.method, url: req.url, headers: req.headers, raw, json };
      requests.push(record);
      handler(record, res, req);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  const close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.after(close);
  return { baseUrl: `http://127.0.0.1:${port}/v1`, port, requests, close };
}

/** The fields every hand-built provider request shares: an item's compatibility
 * fields, a first try, and a live signal. */
export function requestFields() {
  return {
    sourceLang: "en",
    targetLang: "de",
    providerId: "openai",
    context: "",
    attempt: 0,
    signal: new AbortController().signal,
  };
}
