// "Demo provider (offline)": a deterministic pseudo-translator with simulated latency.
// It needs no network and no key, and it answers batches the way a well-behaved LLM
// does (each translation between its segment's markers, or in the older layout one
// segment per text joined by the separator), so the whole pipeline runs.

/** The pseudo-translation of one text: the target language, then the text with ASCII case swapped. */
export function pseudoTranslate(text, targetLang) {
  const swapped = text.replace(/[A-Za-z]/g, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()));
  return `[${targetLang}] ${swapped}`;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    }, { once: true });
  });
}

/** Tokens as a model would count them, roughly: about 4 characters a token. */
const tokensOf = (text) => Math.ceil(text.length / 4);

/**
 * A provider for BatchPacer: about 120 ms per call plus 0.2 ms per character. Like a real
 * API it reports the tokens each call used (`usage`), so the statistics page has token
 * figures to show offline too: the prompt (instructions, context and text) in, the reply out.
 */
export function demoProvider({ baseLatencyMs = 120, msPerChar = 0.2 } = {}) {
  return async (request) => {
    await sleep(baseLatencyMs + msPerChar * request.text.length, request.signal);
    const out = request.texts.map((t) => pseudoTranslate(t, request.targetLang));
    let translations;
    if (!request.isBatch) translations = out[0];
    else if (request.markers) translations = out.map((t, i) => request.markers[i][0] + t + request.markers[i][1]).join("\n");
    else translations = out.join(request.separator);
    const usage = {
      inputTokens: tokensOf(request.instructions) + tokensOf(request.context) + tokensOf(request.text),
      outputTokens: tokensOf(translations),
    };
    return { translations, usage };
  };
}
