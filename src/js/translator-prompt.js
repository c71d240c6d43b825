// The words a provider of the package sends a model when the user gives none of their own:
// who it is and what to do, and the items' context. openAIProvider and aiSdkProvider
// both build their system prompts from them.

/**
 * The opening of a translation system prompt, as paragraphs: the languages, "the
 * translation only", and the formatting to keep.
 * @param {string} sourceLang `"auto"` (any case) asks the model to detect it
 * @param {string} targetLang
 * @returns {string[]}
 */
export function translatorOpening(sourceLang, targetLang) {
  const from = /^auto$/i.test(sourceLang)
    ? "Detect the language of the user's text and translate it"
    : `Translate the user's text from ${sourceLang}`;
  return [
    `You are a professional translator. ${from} to ${targetLang}.`,
    "Output only the translation: no explanations, notes, alternatives, quotation marks or code fences.",
    "Keep the formatting of the original: line breaks, paragraphs, Markdown, HTML tags, " +
      "placeholders, URLs, numbers and white space. Leave untranslatable parts (code, names, URLs) as they are.",
  ];
}

/**
 * The paragraphs that hand a model the items' `context` (trimmed), or none for an empty one.
 * @param {string} context
 * @returns {string[]}
 */
export function contextParagraphs(context) {
  if (context === "") return [];
  return [
    "Background information about where the text comes from follows between <context> tags. " +
      "Use it only to choose the right meaning and terms; do not translate it and do not include it in your output.",
    `<context>\n${context}\n</context>`,
  ];
}
