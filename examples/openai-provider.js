import init, { BatchPacer, openAIProvider } from "batch-pacer";

await init();
const provider = openAIProvider({
  baseUrl: "https://api.openai.com/v1",
  apiKey: process.env.OPENAI_API_KEY,
  model: "gpt-4o-mini",
});
const pacer = new BatchPacer(provider, { rate: 1, capacity: 1 });
const paragraphs = ["Ada Lovelace wrote the first program in 1843.", "Grace Hopper built the first compiler in 1952."];
const translations = await Promise.all(
  paragraphs.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "openai" })),
);
console.log(translations.join("\n"));
// → Ada Lovelace schrieb 1843 das erste Programm.
// → Grace Hopper baute 1952 den ersten Compiler.
