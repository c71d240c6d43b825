// A local server on 127.0.0.1 that speaks Microsoft Translator's documented v3 text
// translation API, for the recipes' test (docs/guides/providers.md): `POST /translate?api-version=3.0&to=<lang>
// [&from=<lang>]` with the header `Ocp-Apim-Subscription-Key: <key>` and a JSON body that is
// an array of `{ Text }` (at most 1,000 elements and 50,000 characters), answered with one
// `{ translations: [{ text, to }] }` per element, in order (`detectedLanguage` too when
// `from` is absent). Errors are Microsoft's: `{ error: { code, message } }` with the HTTP
// status the code starts with.

import http from "node:http";

const MAX_ELEMENTS = 1000;
const MAX_CHARACTERS = 50000;

/**
 * Starts the server for the key `key`; `translate(text, to)` gives each translation
 * (by default `[<to>] <text>`). `requests` records the url, headers and parsed body of
 * every request.
 */
export async function startMicrosoftTranslatorServer(t, { key, translate = (text, to) => `[${to}] ${text}` }) {
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
      const url = new URL(req.url, "http://127.0.0.1");
      const record = { method: req.method, url, headers: req.headers, json };
      requests.push(record);
      answer(record, res);
    });
  });

  function answer({ method, url, headers, json }, res) {
    if (method !== "POST" || url.pathname !== "/translate") return error(res, 404000, "The requested resource was not found.");
    if (headers["ocp-apim-subscription-key"] !== key) {
      return error(res, 401000, "The request is not authorized because credentials are missing or invalid.");
    }
    if (url.searchParams.get("api-version") !== "3.0") return error(res, 400021, "The API version parameter is missing or invalid.");
    const to = url.searchParams.getAll("to");
    if (to.length !== 1 || !/^[a-z]{2,3}(-[A-Za-z]+)?$/.test(to[0])) return error(res, 400036, "The target language (\"To\" field) is missing or invalid.");
    const from = url.searchParams.get("from");
    if (!String(headers["content-type"]).startsWith("application/json")) return error(res, 415000, "The Content-Type header is missing or invalid.");
    if (!Array.isArray(json) || json.length === 0 || !json.every((e) => e !== null && typeof e === "object" && typeof e.Text === "string")) {
      return error(res, 400074, "The body of the request is not valid JSON.");
    }
    if (json.length > MAX_ELEMENTS) return error(res, 400077, "The maximum request size has been exceeded.");
    if (json.reduce((n, e) => n + e.Text.length, 0) > MAX_CHARACTERS) return error(res, 400050, "The input text is too long.");
    const body = json.map((e) => ({
      ...(from ? {} : { detectedLanguage: { language: "en", score: 1.0 } }),
      translations: [{ text: translate(e.Text, to[0]), to: to[0] }],
    }));
    send(res, 200, body);
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
  return { url: `http://127.0.0.1:${port}`, requests };
}

function error(res, code, message) {
  send(res, Math.floor(code / 1000), { error: { code, message } });
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}
