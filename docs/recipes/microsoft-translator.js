// Microsoft Translator (Azure AI Translator, v3) as an array provider: one request
// carries up to 100 texts (50,000 characters), answered one translation per text, in order.
import { BatchPacer } from "batch-pacer";

export function microsoftTranslator({ key, region, endpoint = "https://api.cognitive.microsofttranslator.com", fetch = globalThis.fetch }) {
  return async (request) => {
    const url = new URL("translate", endpoint.endsWith("/") ? endpoint : `${endpoint}/`);
    url.searchParams.set("api-version", "3.0");
    url.searchParams.set("to", request.targetLang);
    if (request.sourceLang && request.sourceLang !== "auto") url.searchParams.set("from", request.sourceLang);
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "Ocp-Apim-Subscription-Key": key,
        ...(region ? { "Ocp-Apim-Subscription-Region": region } : {}),
        "Content-Type": "application/json",
      },
      body: JSON.stringify(request.texts.map((text) => ({ Text: text }))),
      signal: request.signal,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      // The pacer reads status and Retry-After from these: a 429 pauses, a 401 blocks.
      throw Object.assign(new Error(`Microsoft Translator answered ${response.status}: ${body?.error?.message ?? ""}`), {
        status: response.status,
        headers: response.headers,
      });
    }
    const results = await response.json();
    // A missing or malformed element stays undefined: the pacer counts the batch as a mismatch.
    return results.map((result) => result?.translations?.[0]?.text);
  };
}

export function microsoftTranslatorPacer(settings) {
  return new BatchPacer(microsoftTranslator(settings), {
    providers: { ms: { batch: "array", maxItemsPerBatch: 100, maxCharactersPerBatch: 50000 } },
  });
}
// pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "ms", llm: false })
