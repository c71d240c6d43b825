import init, { BatchPacer } from "batch-pacer";

await init();
const apiKey = process.env.OPENAI_API_KEY;

// A batch's texts travel in request.text, each between its own markers, and
// request.instructions tells the model to answer in the same layout.
async function provider(request) {
  const response = await fetch("https://api.openai.com/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: `Translate from ${request.sourceLang} to ${request.targetLang}. ${request.instructions}` },
        { role: "user", content: request.text },
      ],
    }),
    signal: request.signal, // aborted on a timeout, or when every item of the call was aborted
  });
  // With the status and headers the pacer pauses on a 429 (Retry-After) and stops on a 401.
  if (!response.ok) throw Object.assign(new Error(`HTTP ${response.status}`), { status: response.status, headers: response.headers });
  return (await response.json()).choices[0].message.content;
}

const pacer = new BatchPacer(provider, { rate: 1, capacity: 1 }); // 60 calls a minute, no burst
const paragraphs = ["Ada Lovelace wrote the first program in 1843.", "Grace Hopper built the first compiler in 1952."];
const translations = await Promise.all(
  paragraphs.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "openai" })),
);
console.log(translations.join("\n"));
// → Ada Lovelace schrieb 1843 das erste Programm.
// → Grace Hopper baute 1952 den ersten Compiler.
console.log(pacer.stats().providerCalls); // → 1
