// Every code block of README.md and docs/guides/*.md, run against the installed package.
//
// The convention, by the fence's language (its info string's first word):
//
// - ```js: a program for Node.js 20+, run as an ES module from a file in this project (so
//   its `import "batch-pacer"` finds the installed package, and the AI SDK packages the
//   tests install), with `node --import ./docs-harness.mjs` (what the harness gives a
//   block: its header). It must exit with 0 within a minute, and what it prints must be,
//   line by line, the block's `// → ` comments in order (a block without one prints
//   nothing). A block that registers a `runtime.onMessage` listener must answer the
//   harness's message ("Hello, world." into German) with a reply that holds its
//   translation, "Hallo, Welt.".
//   One kind of js block is checked another way, because only a build tool loads it: a
//   build tool's configuration, whose first line names the file (`// wxt.config.js`,
//   `// vite.config.js`). It must parse (`node --check`), and a CSP it sets must be the
//   manifest line the package's load error quotes; the toolchain matrix
//   (tests/toolchains/run.mjs) builds with the same settings.
// - ```json, ```sh, ```text: a manifest or data, a shell command, a layout: never run.
// Any other language, or a fence without one, fails the test: no block is skipped silently.
//
// Calls to an API (`fetch` to any host, which the harness sends here) are answered by this
// test's server on 127.0.0.1, which speaks each API's wire format: OpenAI's chat
// completions (whole, and streamed as server-sent events), Anthropic's Messages, Gemini's
// generateContent, DeepL's /v2/translate. Its model translates the documentation's sample
// sentences from the table below into German, and anything else as `[de] ` + the text. Of
// a prompt, it translates each segment between a pair of markers (`<s21>` … `</s21>`),
// answering one pair per line; a prompt without markers from its last blank line on (an
// instruction may stand before it).
//
// Also checked: each file of examples/ is shown, as it is, by a block (so it runs here),
// and every relative link of these pages leads to a file and heading that exist.
//
// Run: bash tests/node/run-package-tests.sh

import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { completionStream } from "./chat-server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = process.env.BATCH_PACER_REPO ?? fileURLToPath(new URL("../../", import.meta.url));
const HARNESS = join(here, "docs-harness.mjs");
const RUN = new Set(["js"]);
const NOT_RUN = { json: "a manifest or data", sh: "a shell command", text: "a layout" };
const CSP = "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'";

/** The model's German for the documentation's sample sentences. */
const GERMAN = {
  "Hello, world.": "Hallo, Welt.",
  Hello: "Hallo",
  "Ada Lovelace wrote the first program in 1843.": "Ada Lovelace schrieb 1843 das erste Programm.",
  "Grace Hopper built the first compiler in 1952.": "Grace Hopper baute 1952 den ersten Compiler.",
  "Alan Turing described his machine in 1936.": "Alan Turing beschrieb seine Maschine 1936.",
  "The Rhine flows through Basel.": "Der Rhein fließt durch Basel.",
};
const translate = (text) => GERMAN[text.trim()] ?? `[de] ${text}`;

/** What the model answers to a prompt: see the header. */
function answer(prompt) {
  const pairs = [...prompt.matchAll(/<([a-z]+\d+)>([\s\S]*?)<\/\1>/g)];
  if (pairs.length > 0) return pairs.map(([, tag, text]) => `<${tag}>${translate(text)}</${tag}>`).join("\n");
  return translate(prompt.slice(prompt.lastIndexOf("\n\n") + 1).trim());
}

const tokens = (text) => Math.max(1, Math.ceil(text.length / 4));
/** The text of a message's content: a string, or an array of parts (`{ type: "text", text }`). */
const textOf = (content) => (typeof content === "string" ? content : (content ?? []).map((part) => part.text ?? "").join(""));

// --- the server ------------------------------------------------------------------------

const requests = [];

function send(res, status, body, headers = {}) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": typeof body === "string" ? "text/event-stream" : "application/json", ...headers });
  res.end(text);
}

/** OpenAI's chat completions, whole or streamed. */
function chatCompletion(body, res) {
  const prompt = textOf(body.messages?.filter((m) => m.role === "user").at(-1)?.content);
  const content = answer(prompt);
  const usage = { prompt_tokens: tokens(prompt), completion_tokens: tokens(content), total_tokens: tokens(prompt) + tokens(content) };
  if (body.stream === true) {
    const pieces = content.match(/[\s\S]{1,6}/g) ?? [];
    return send(res, 200, completionStream(pieces, body.stream_options?.include_usage ? usage : undefined));
  }
  send(res, 200, {
    id: "chatcmpl-docs",
    object: "chat.completion",
    created: 1,
    model: body.model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage,
  });
}

/** Anthropic's Messages API (not streamed). */
function anthropicMessage(body, res) {
  const prompt = textOf(body.messages?.filter((m) => m.role === "user").at(-1)?.content);
  const text = answer(prompt);
  send(res, 200, {
    id: "msg_docs",
    type: "message",
    role: "assistant",
    model: body.model,
    content: [{ type: "text", text }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: tokens(prompt), output_tokens: tokens(text) },
  });
}

/** Gemini's generateContent (not streamed). */
function geminiContent(body, res) {
  const prompt = textOf(body.contents?.filter((c) => c.role === "user").at(-1)?.parts);
  const text = answer(prompt);
  send(res, 200, {
    candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: tokens(prompt), candidatesTokenCount: tokens(text), totalTokenCount: tokens(prompt) + tokens(text) },
  });
}

/** DeepL's /v2/translate. */
function deeplTranslate(body, res) {
  const texts = Array.isArray(body.text) ? body.text : [];
  send(res, 200, { translations: texts.map((text) => ({ detected_source_language: "EN", text: translate(text) })) });
}

function route(record, res) {
  const path = record.url.split("?")[0];
  if (record.method !== "POST" || record.json === undefined) return send(res, 400, { error: { message: "expected a POST with a JSON body" } });
  if (path.endsWith("/chat/completions")) return chatCompletion(record.json, res);
  if (path === "/api.anthropic.com/v1/messages") return anthropicMessage(record.json, res);
  if (/^\/generativelanguage\.googleapis\.com\/v1beta\/models\/[^/]+:generateContent$/.test(path)) return geminiContent(record.json, res);
  if (/^\/api(-free)?\.deepl\.com\/v2\/translate$/.test(path)) return deeplTranslate(record.json, res);
  send(res, 404, { error: { message: `no such API on the docs test server: ${record.method} ${record.url}` } });
}

let server;
let serverUrl;
before(async () => {
  server = http.createServer((req, res) => {
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
      route(record, res);
    });
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  serverUrl = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((done) => (server.closeAllConnections(), server.close(done))));

// --- the pages and their blocks --------------------------------------------------------

const guides = (await readdir(join(repo, "docs/guides"))).filter((name) => name.endsWith(".md")).sort();
const PAGES = ["README.md", ...guides.map((name) => `docs/guides/${name}`)];

/** The fenced blocks of a page: `{ page, line, lang, code }`. */
function blocksOf(page, markdown) {
  const blocks = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(.*)$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith(open[1]) && line.trim() === open[1]);
    assert.ok(end > i, `${page}:${i + 1}: a fence that never closes`);
    blocks.push({ page, line: i + 1, lang: open[2].trim().split(/\s+/)[0], code: lines.slice(i + 1, end).join("\n") + "\n" });
    i = end;
  }
  return blocks;
}

const pages = Object.fromEntries(await Promise.all(PAGES.map(async (page) => [page, await readFile(join(repo, page), "utf8")])));
const blocks = PAGES.flatMap((page) => blocksOf(page, pages[page]));

/** A build tool's configuration: its first line names the file. */
const configFile = (code) => /^\/\/ ([\w.-]+\.config\.[cm]?js)\n/.exec(code)?.[1];
/** The lines a block says it prints. */
const expectedOutput = (code) => [...code.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1]);

const dir = join(here, "docs-examples");
const fileOf = (block) => join(dir, `${block.page.replace(/[/.]/g, "_")}_${block.line}.mjs`);

function run(file, env = {}) {
  return new Promise((done) => {
    const child = spawn(process.execPath, ["--import", pathToFileURL(HARNESS).href, file], {
      cwd: here,
      env: {
        ...process.env,
        DOCS_SERVER: serverUrl,
        OPENAI_API_KEY: "sk-docs-test",
        ANTHROPIC_API_KEY: "sk-ant-docs-test",
        GEMINI_API_KEY: "docs-test-gemini",
        GROQ_API_KEY: "gsk-docs-test",
        DEEPL_API_KEY: "docs-test-key:fx",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    });
  });
}

test("the pages have code blocks, and every fence names a language the test knows", () => {
  assert.ok(blocks.filter((b) => b.lang === "js").length >= 10, "the js blocks were found");
  for (const block of blocks) {
    assert.ok(RUN.has(block.lang) || block.lang in NOT_RUN, `${block.page}:${block.line}: fence language "${block.lang}" is neither run (js) nor one of ${Object.keys(NOT_RUN).join(", ")}`);
  }
});

describe("js blocks, run against the installed package", () => {
  before(() => mkdir(dir, { recursive: true }));
  for (const block of blocks.filter((b) => b.lang === "js")) {
    const config = configFile(block.code);
    const name = `${block.page}:${block.line}${config ? ` (${config}: parses, CSP)` : ""}`;
    test(name, async () => {
      const file = fileOf(block);
      await writeFile(file, block.code);
      if (config) {
        const checked = await new Promise((done) => {
          const child = spawn(process.execPath, ["--check", file], { stdio: ["ignore", "ignore", "pipe"] });
          let stderr = "";
          child.stderr.on("data", (chunk) => (stderr += chunk));
          child.on("close", (code) => done({ code, stderr }));
        });
        assert.equal(checked.code, 0, `${config} does not parse:\n${checked.stderr}`);
        if (/content_security_policy/.test(block.code)) {
          assert.ok(block.code.includes(CSP), `${config} sets a CSP other than ${CSP}`);
          const matrix = await readFile(join(repo, "tests/toolchains/run.mjs"), "utf8");
          assert.ok(matrix.includes(CSP), "the toolchain matrix builds with the same CSP");
        }
        return;
      }
      const before = requests.length;
      const { code, signal, stdout, stderr } = await run(file);
      assert.equal(signal, null, `killed (${signal}) after a minute:\n${stderr}`);
      assert.equal(code, 0, `exited with ${code}:\n${stderr}`);
      const printed = stdout.split("\n");
      if (printed.at(-1) === "") printed.pop();
      assert.deepEqual(printed, expectedOutput(block.code), "what the block prints is what its // → comments say");
      if (/runtime\.onMessage\.addListener/.test(block.code)) {
        const replies = [...stderr.matchAll(/^docs-harness reply: (.*)$/gm)].map((m) => m[1]);
        assert.ok(replies.length > 0, `the listener never answered:\n${stderr}`);
        for (const reply of replies) assert.ok(reply.includes("Hallo, Welt."), `a reply without the translation: ${reply}`);
      }
      // A block that names an API's URL reaches that API (here, this server).
      if (/https:\/\/(api|generativelanguage)[\w.-]*\//.test(block.code)) {
        assert.ok(requests.length > before, "the block's API calls reached the server");
      }
    });
  }
});

test("each example in examples/ is shown as it is by a js block, so it runs above", async () => {
  const examples = (await readdir(join(repo, "examples"))).filter((name) => /\.m?js$/.test(name));
  assert.ok(examples.length >= 1, "examples/ holds at least one example");
  const shown = new Set(blocks.filter((b) => b.lang === "js").map((b) => b.code));
  for (const name of examples) {
    const code = await readFile(join(repo, "examples", name), "utf8");
    assert.ok(shown.has(code), `no js block of ${PAGES.join(", ")} equals examples/${name}`);
  }
});

/** GitHub's anchor for a heading. */
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

async function anchorsOf(file) {
  const text = await readFile(file, "utf8");
  const withoutCode = text.replace(/^```[\s\S]*?^```$/gm, "");
  return new Set([...withoutCode.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1])));
}

test("every relative link of README.md, the guides and docs/reference.md leads to a file and heading that exist", async () => {
  const linked = [...PAGES, "docs/reference.md", "CONTRIBUTING.md"];
  for (const page of linked) {
    const text = (pages[page] ?? (await readFile(join(repo, page), "utf8"))).replace(/^```[\s\S]*?^```$/gm, "");
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split("#");
      const file = path === "" ? join(repo, page) : resolve(join(repo, dirname(page)), path);
      assert.ok(file.startsWith(resolve(repo)) && existsSync(file), `${page}: the link ${target} leads nowhere (${relative(repo, file)})`);
      if (anchor !== undefined) {
        assert.ok((await anchorsOf(file)).has(anchor), `${page}: the link ${target} names no heading of ${relative(repo, file)}`);
      }
    }
  }
});
