// "Demo provider (offline)": a deterministic pseudo-translator with simulated latency.
// It needs no network and no key, and it answers batches the way a well-behaved LLM
// does (each translation between its segment's markers, or in the older layout one
// segment per text joined by the separator), so the whole pipeline runs. Like a model
// it takes a while to its first token, then writes at a steady speed; asked to stream,
// it returns the reply as it writes it, and asked to think, it writes a `<think>` draft
// (holding the batch's markers around the wrong texts) before the answer.

/** The pseudo-translation of one text: the target language, then the text with ASCII case swapped. */
export function pseudoTranslate(text, targetLang) {
  const swapped = text.replace(/[A-Za-z]/g, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()));
  return `[${targetLang}] ${swapped}`;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    };
    // A stream sleeps once per piece on the same signal: each sleep takes its listener away.
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Tokens as a model would count them, roughly: about 4 characters a token. */
const CHARS_PER_TOKEN = 4;
const tokensOf = (text) => Math.ceil(text.length / CHARS_PER_TOKEN);

/** A timer callback sooner than this is not worth one: the pieces written meanwhile travel together. */
const MIN_PIECE_MS = 16;

/** The reply text a well-behaved model writes for `request`. */
function answerOf(request) {
  const out = request.texts.map((t) => pseudoTranslate(t, request.targetLang));
  if (!request.isBatch) return out[0];
  if (request.markers) return out.map((t, i) => request.markers[i][0] + t + request.markers[i][1]).join("\n");
  return out.join(request.separator);
}

/** A reasoning draft; in the markers layout each pair holds its neighbour's text. */
function draftOf(request) {
  const lines = ["Let me draft the translation first."];
  const { texts, markers } = request;
  if (request.isBatch && markers && texts.length > 1) {
    texts.forEach((_, i) => lines.push(markers[i][0] + texts[(i + 1) % texts.length] + markers[i][1]));
    lines.push("No, the pairs are shifted; the answer follows.");
  }
  return `<think>\n${lines.join("\n")}\n</think>\n`;
}

/**
 * A provider for BatchPacer: `baseLatencyMs` to the first token, then `msPerChar` per
 * character written. Like a real API it reports the tokens each call used (`usage`), so
 * the statistics page has token figures to show offline too: the prompt (instructions,
 * context and text) in, the reply out.
 *
 * `stream: true` returns the reply as an async iterable of text pieces as they are
 * written (then `{ usage }`), the way a streaming API does; `think: true` writes a
 * reasoning draft first.
 */
export function demoProvider({ baseLatencyMs = 120, msPerChar = 0.2, stream = false, think = false } = {}) {
  return async (request) => {
    const translations = (think ? draftOf(request) : "") + answerOf(request);
    const usage = {
      inputTokens: tokensOf(request.instructions) + tokensOf(request.context) + tokensOf(request.text),
      outputTokens: tokensOf(translations),
    };
    if (stream) return written(translations, usage, { baseLatencyMs, msPerChar, signal: request.signal });
    await sleep(baseLatencyMs + msPerChar * translations.length, request.signal);
    return { translations, usage };
  };
}

/** The reply as it is written: pieces of whole tokens, at most one per MIN_PIECE_MS, then its usage. */
async function* written(reply, usage, { baseLatencyMs, msPerChar, signal }) {
  await sleep(baseLatencyMs, signal);
  const perPiece = Math.max(CHARS_PER_TOKEN, Math.ceil(MIN_PIECE_MS / Math.max(msPerChar, 1e-9) / CHARS_PER_TOKEN) * CHARS_PER_TOKEN);
  for (let at = 0; at < reply.length; at += perPiece) {
    const piece = reply.slice(at, at + perPiece);
    if (at > 0) await sleep(msPerChar * piece.length, signal);
    yield piece;
  }
  yield { usage };
}
