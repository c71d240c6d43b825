import init, { BatchPacer, aiSdkProvider } from "batch-pacer";
import { generateText } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";

await init();
const anthropic = createAnthropic({ apiKey: process.env.ANTHROPIC_API_KEY });
const provider = aiSdkProvider({ model: anthropic("claude-haiku-4-5"), generateText });
const pacer = new BatchPacer(provider, { rate: 1, capacity: 1 });
const paragraphs = ["Ada Lovelace wrote the first program in 1843.", "Grace Hopper built the first compiler in 1952."];
const translations = await Promise.all(
  paragraphs.map((text) => pacer.translate({ text, sourceLang: "en", targetLang: "de", providerId: "claude" })),
);
console.log(translations.join("\n"));
// → Ada Lovelace schrieb 1843 das erste Programm.
// → Grace Hopper baute 1952 den ersten Compiler.
