// Any translation API that takes an array of texts and answers an array of translations
// in the same order: POST { texts, source, target } -> { translations: [...] }.
import { BatchPacer } from "batch-pacer";

export function arrayApi({ url, headers = {}, fetch = globalThis.fetch }) {
  return async (request) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify({ texts: request.texts, source: request.sourceLang, target: request.targetLang }),
      signal: request.signal,
    });
    if (!response.ok) {
      throw Object.assign(new Error(`${url} answered ${response.status}`), { status: response.status, headers: response.headers });
    }
    const { translations } = await response.json();
    return translations;
  };
}

export function arrayApiPacer(settings) {
  return new BatchPacer(arrayApi(settings), {
    // Your API's limits per request.
    providers: { api: { batch: "array", maxItemsPerBatch: 100, maxCharactersPerBatch: 50000 } },
  });
}
// pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "api", llm: false })
