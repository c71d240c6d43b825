// Loaded with `node --import` before each code block of the documentation that
// docs-examples.test.mjs runs. It gives a block what it would have in its real place and
// Node.js lacks, and nothing else:
//
// - `fetch` of any URL whose origin is not the test's server (`DOCS_SERVER`) goes to that
//   server, the original host (and port) as the first path segment:
//   `https://api.openai.com/v1/chat/completions` becomes
//   `http://127.0.0.1:PORT/api.openai.com/v1/chat/completions`. A block keeps the real
//   API's URL, and the request still crosses HTTP to a server that speaks that API.
// - `chrome` and `browser` (an extension's APIs, for background scripts): `runtime.onMessage`
//   delivers one message to the listeners a block registered, as the browser does
//   (`listener(message, sender, sendResponse)`; a listener that returns `true` answers
//   through `sendResponse`, one that returns a promise answers with its value), and writes
//   each answer to standard error as `docs-harness reply: <JSON>`; `runtime.getURL`;
//   `storage.local` and `storage.session` keep values in memory (`get` and `set`, promise
//   based).
// - `defineBackground(main)`, as WXT defines it for an entrypoint, runs `main`.

const server = new URL(process.env.DOCS_SERVER);
const realFetch = globalThis.fetch;

/** The URL on the test's server that stands for `url`. */
function onServer(url) {
  const target = new URL(url);
  if (target.origin === server.origin) return target;
  return new URL(`/${target.host}${target.pathname}${target.search}`, server);
}

globalThis.fetch = (input, init) => {
  if (input instanceof Request) return realFetch(new Request(onServer(input.url), input), init);
  return realFetch(onServer(String(input)), init);
};

/** The message a background's listeners receive, from a tab of a page. */
const MESSAGE = { text: "Hello, world.", sourceLang: "en", targetLang: "de", providerId: "openai" };
const SENDER = { id: "docs-extension", tab: { id: 7 }, origin: "https://example.com", url: "https://example.com/article" };

const listeners = [];
let delivery;

function deliver() {
  for (const listener of listeners) {
    new Promise((sendResponse) => {
      const answer = listener(MESSAGE, SENDER, sendResponse);
      if (answer === true) return; // it answers through sendResponse
      if (answer && typeof answer.then === "function") answer.then(sendResponse, (error) => sendResponse({ thrown: String(error) }));
    }).then((reply) => process.stderr.write(`docs-harness reply: ${JSON.stringify(reply)}\n`));
  }
}

/** An extension storage area, in memory: `get(keys)` and `set(items)` as the browser has them. */
function storageArea() {
  const data = new Map();
  return {
    async get(keys) {
      const names = keys === null || keys === undefined ? [...data.keys()] : typeof keys === "string" ? [keys] : Array.isArray(keys) ? keys : Object.keys(keys);
      const out = {};
      for (const name of names) {
        if (data.has(name)) out[name] = structuredClone(data.get(name));
        else if (keys && typeof keys === "object" && !Array.isArray(keys)) out[name] = keys[name];
      }
      return out;
    },
    async set(items) {
      for (const [name, value] of Object.entries(items)) data.set(name, structuredClone(value));
    },
  };
}

const extension = {
  runtime: {
    id: SENDER.id,
    onMessage: {
      addListener(listener) {
        listeners.push(listener);
        // After the block's top-level code, as a message arrives after the worker started.
        delivery ??= setTimeout(deliver, 50);
      },
      removeListener(listener) {
        const i = listeners.indexOf(listener);
        if (i >= 0) listeners.splice(i, 1);
      },
    },
    getURL: (path) => `chrome-extension://${SENDER.id}/${String(path).replace(/^\//, "")}`,
  },
  storage: { local: storageArea(), session: storageArea() },
};

globalThis.chrome = extension;
globalThis.browser = extension;
globalThis.defineBackground = (main) => {
  main();
  return { main };
};
